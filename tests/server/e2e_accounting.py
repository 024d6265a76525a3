#!/usr/bin/env python3
"""End-to-end checks of the usage history, the accounting report and the
metrics exposition as a user meets them (on e2e.py's harness): the usage
history's coarse rows across a controller restart, the report's every
grouping and output form, its used GPU-hours by user, class and node
from the jobs' own GPUs' telemetry (across a kill -9 too), and `promtool check metrics` on a cluster with
every kind of series present.

Usage: e2e_accounting.py [pg:]SCENARIO PATH/TO/allot
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402
import e2e_serve  # noqa: E402


def scenario_usage_rollup_restart(c):
    """A controller killed before it wrote its first coarse row of the
    usage history and started again in a later coarse step: the coarse
    step it sampled in still gets its coarse row (from the fine rows the
    store kept), so a query at the coarse step shows it."""
    coarse = 10
    args = ("--usage-interval", "1", "--usage-rollup", str(coarse))
    # Start just after a coarse step begins: the first samples and the
    # kill fall in that one step.
    while not 0.2 <= time.time() % coarse <= 0.6:
        time.sleep(0.05)
    w0 = int(time.time()) // coarse * coarse
    c.start_server(*args)
    s, b = c.api("POST", "/v1/queues", {
        "name": "team", "quota": {"gpu": {"deserved": 2, "weight": 1}}})
    check(s == 201, "queue team: %s %s" % (s, b))

    def fine():
        s, u = c.api("GET", "/v1/usage?by=queue&from=%d&step=1" %
                     (w0 - coarse))
        check(s == 200, "usage: %s %s" % (s, u))
        q = {x["queue"]: x for x in u["series"]}.get("team")
        return q if q and len(q["t"]) >= 2 else None
    wait_for(fine, 8, "two fine samples of team")
    c.kill_server(signal.SIGKILL)
    if int(time.time()) // coarse * coarse != w0:
        print("skip: the first samples crossed a coarse step (slow start)")
        return
    # Down until the next coarse step is under way.
    while int(time.time()) // coarse * coarse == w0 or \
            time.time() % coarse < 1:
        time.sleep(0.1)
    c.start_server(*args)
    w1 = int(time.time()) // coarse * coarse

    def coarse_steps():
        s, u = c.api("GET", "/v1/usage?by=queue&from=%d&step=%d" %
                     (w0 - coarse, coarse))
        check(s == 200 and u["step"] == coarse, "coarse: %s %s" % (s, u))
        q = {x["queue"]: x for x in u["series"]}.get("team")
        return q["t"] if q else []
    ts = wait_for(lambda: coarse_steps() or None, 8, "a coarse series")
    check(w0 in ts, "the step sampled before the restart (%d) at step %d: "
          "%s" % (w0, coarse, ts))
    # Once the restart's step has ended, both have their coarse rows.
    ts = wait_for(lambda: (lambda t: t if w1 in t else None)(coarse_steps()),
                  coarse + 8, "the restart's step rolled up")
    check(w0 in ts and w1 in ts, "both coarse steps: %s" % ts)


def scrape(c):
    s, text = c.api("GET", "/metrics")
    check(s == 200, "GET /metrics: %s" % s)
    return text if isinstance(text, str) else text.decode()


def promtool(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, (p.stdout + p.stderr).strip()


def scenario_metrics_services(c):
    """GET /metrics with an inference service, running and pending jobs:
    `promtool check metrics` finds nothing to say, the services' series
    included."""
    e2e_serve.start(c)
    c.cli("serve", "create", "m", "--gpus", "1", "--queue", "inf", "--min",
          "1", "--max", "1", "--ready-path", "/health", "--public", "--",
          "python3", e2e_serve.REPLICA)
    wait_for(lambda: e2e_serve.ready_count(c, "m") == 1, 40, "a replica")
    for _ in range(3):
        st, v = e2e_serve.request(c, "m")
        check(st == 200, "a request: %s %s" % (st, v))
    c.submit("--queue", "inf", "--gpus", "2", "--", "sleep", "600")
    c.submit("--queue", "inf", "--gpus", "8", "--", "sleep", "600")
    text = scrape(c)
    check('allot_service_requests_total{service="m"} 3' in text,
          "the service's series: %s" % [
              x for x in text.splitlines() if "service" in x])
    rc, out = promtool(text)
    check(rc == 0 and out == "", "promtool check metrics: %d %s" % (rc, out))


def scenario_report_rows(c):
    """`allot report` by every grouping, as a table, JSON and CSV: an
    admin sees every queue's, user's, class's, model's and node's row; a
    user sees the rows of their own jobs only, also once the usage
    history has samples of every queue."""
    c.start_server("--usage-interval", "1")
    c.start_agent("n1", "4xH100-80GB", extra=("--no-run-as-user",))
    for q in ("qa", "qb"):
        s, b = c.api("POST", "/v1/queues", {
            "name": q, "quota": {"gpu": {"deserved": 2, "weight": 1}}})
        check(s == 201, "queue %s: %s %s" % (q, s, b))
    alice = c.cli("token", "create", "--user", "alice").stdout.strip()
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    a = c.submit("--queue", "qa", "--gpus", "1", "--", "true", token=alice)
    b_ = c.submit("--queue", "qb", "--gpus", "1", "--", "true", token=bob)
    for j in (a, b_):
        c.wait_state(j, "completed", timeout=30)

    def samples():
        s, u = c.api("GET", "/v1/usage?by=queue&from=%d" %
                     (int(time.time()) - 60))
        return {x["queue"] for x in u.get("series", [])} >= {"qa", "qb"}
    wait_for(samples, 15, "usage samples of both queues")
    want = {"queue": (["default", "qa", "qb"], ["qa"]),
            "user": (["alice", "bob"], ["alice"]),
            "class": (["train"], ["train"]),
            "model": (["H100-80GB"], ["H100-80GB"]),
            "node": (["n1"], ["n1"])}
    for by, (admin_rows, alice_rows) in want.items():
        for who, tok, rows in (("admin", None, admin_rows),
                               ("alice", alice, alice_rows)):
            rep = json.loads(c.cli("report", "--since", "-5m", "--by", by,
                                   "--json", token=tok).stdout)
            keys = [r["key"] for r in rep["rows"]]
            check(rep["by"] == by and keys == rows,
                  "%s's report by %s: %s, want %s" % (who, by, keys, rows))
            csv = c.cli("report", "--since", "-5m", "--by", by, "--csv",
                        token=tok).stdout.splitlines()
            check(csv[0].startswith(by + ",gpu_hours,") and
                  [x.split(",")[0] for x in csv[1:]] == rows + ["total"],
                  "%s's CSV by %s: %s" % (who, by, csv))
            out = c.cli("report", "--since", "-5m", "--by", by,
                        token=tok).stdout.splitlines()
            check(out[0].startswith(by.upper()) and
                  [x.split()[0] for x in out[1:]] == rows + ["total"],
                  "%s's table by %s: %s" % (who, by, out))


def run_gpu_hours(job):
    """GPU-hours of a job's runs from its history: each `started` event's
    placement (a task per " on ") to the next event that is not one of a
    running job's own, times the GPUs of a task."""
    stay = {"submitted", "task_exit", "idle_warning", "held", "released",
            "suspended", "resumed"}
    total, start, tasks = 0.0, None, 0
    for e in job["history"]:
        if e["event"] == "started":
            start, tasks = e["time_ms"], (e["detail"] or "").count(" on ")
        elif start is not None and e["event"] not in stay:
            total += (e["time_ms"] - start) * tasks * job["gpus"]
            start = None
    return total / 3.6e6


def scenario_report_elastic(c):
    """An elastic gang that started at 2 tasks and grew to 8: `allot
    report` counts each run at the size it ran at, as its history says,
    not every run at its last size."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB", extra=["--cpus", "64"])
    s, b = c.api("POST", "/v1/queues", {
        "name": "qa", "quota": {"gpu": {"deserved": 8, "weight": 1}}})
    check(s == 201, "queue qa: %s" % b)
    alice = c.cli("token", "create", "--user", "alice").stdout.strip()
    busy = c.submit("--queue", "qa", "--gpus", "6", "--", "sleep", "3")
    c.wait_state(busy, "running")
    e = c.submit("--queue", "qa", "--tasks", "2..8", "--gpus", "1", "--",
                 "sleep", "120", token=alice)
    c.wait_state(e, "running")
    c.wait_state(busy, "completed")
    wait_for(lambda: c.job(e)["state"] == "running" and
             c.job(e)["tasks"] == 8, 20, "the gang to grow to 8")
    time.sleep(1)
    c.cli("cancel", str(e))
    j = c.wait_state(e, "cancelled")
    check([x["event"] for x in j["history"]].count("started") == 2,
          "two runs: %s" % j["history"])
    want = run_gpu_hours(j)
    rep = json.loads(c.cli("report", "--since", "-5m", "--by", "user",
                           "--json").stdout)
    got = {r["key"]: r["gpu_hours"] for r in rep["rows"]}.get("alice")
    check(got is not None and abs(got - want) < 1e-6,
          "alice's GPU-hours %s, want %.6f from the history %s" %
          (got, want, j["history"]))


def scenario_report_restart(c):
    """A job running while the controller is killed and started again:
    its GPU-hours in `allot report` are its one run's, counted once, and
    the usage history has no step twice."""
    args = ("--usage-interval", "1")
    c.start_server(*args)
    c.start_agent("n1", "4xH100-80GB", extra=("--no-run-as-user",))
    s, b = c.api("POST", "/v1/queues", {
        "name": "team", "quota": {"gpu": {"deserved": 2, "weight": 1}}})
    check(s == 201, "queue team: %s %s" % (s, b))
    t0 = int(time.time())
    j = c.submit("--queue", "team", "--gpus", "2", "--", "sleep", "5")
    c.wait_state(j, "running")
    time.sleep(1)
    c.kill_server(signal.SIGKILL)
    time.sleep(1)
    c.start_server(*args)
    job = c.wait_state(j, "completed", timeout=30)
    want = run_gpu_hours(job)
    check(abs(want - 2 * (job["end_ms"] - job["start_ms"]) / 3.6e6) < 1e-6,
          "one run: %s" % job["history"])
    rep = json.loads(c.cli("report", "--since", "-5m", "--json").stdout)
    rows = {r["key"]: r for r in rep["rows"]}
    check(abs(rows["team"]["gpu_hours"] - want) < 1e-6 and
          rows["team"]["started"] == 1 and rows["team"]["completed"] == 1,
          "the report across a restart: %s, want %.6f GPU-h" %
          (rows["team"], want))
    s, u = c.api("GET", "/v1/usage?by=queue&queue=team&from=%d&step=1" %
                 (t0 - 5))
    ts = u["series"][0]["t"]
    check(len(ts) == len(set(ts)), "no step twice: %s" % ts)


def scenario_usage_retention(c):
    """The usage history's minutes kept for --usage-keep-minutes (a day
    here) are trimmed at a coarse step's start: a report over the edge of
    what is kept reads the coarse rows up to it and the fine rows from it,
    with no part of a coarse step in neither.  The store holds a model's
    fine rows of two coarse steps a day ago (2 GPUs used of 4 allocated,
    every second); the report's used GPU-hours there are all of them."""
    coarse = 100
    args = ("--usage-interval", "1", "--usage-rollup", str(coarse),
            "--usage-keep-minutes", "1")
    c.start_server(*args)
    c.kill_server(signal.SIGTERM)
    # The trim's edge (a day ago) well inside a coarse step.
    while not 20 <= time.time() % coarse <= 70:
        time.sleep(0.2)
    f = int(time.time() - 86400) // coarse * coarse
    db = sqlite3.connect(os.path.join(c.state, "allot.db"))
    db.executemany(
        "INSERT INTO usage(step, t, queue, model, gpus, alloc, used, "
        "deserved, fair, pending, idle, wasted) VALUES(1, ?, '', 'X', "
        "4000, 4000, 2000, NULL, NULL, NULL, 0, 0)",
        [(t,) for t in range(f, f + 2 * coarse)])
    db.commit()
    db.close()
    c.start_server(*args)
    s, u = c.api("GET", "/v1/usage?by=model&model=X&from=%d&to=%d&step=%d"
                 % (f, f + 2 * coarse, coarse))
    check(s == 200 and u["series"] and u["series"][0]["t"] ==
          [f, f + coarse], "both coarse steps rolled up: %s %s" % (s, u))
    rep = json.loads(c.cli("report", "--since", "@%d" % f, "--until",
                           "@%d" % (f + 2 * coarse), "--by", "model",
                           "--json").stdout)
    used = {r["key"]: r["used_gpu_hours"] for r in rep["rows"]}.get("X")
    want = 2 * 2 * coarse / 3600
    check(used is not None and abs(used - want) < 1e-3,
          "used GPU-hours over the edge of the kept minutes: %s, want %.4f"
          % (used, want))


def set_util(c, node, gpu, pct):
    """The emulated GPU's utilisation its agent reports."""
    d = os.path.join(c.root, "agent-" + node, "gpu-util")
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ".%d" % gpu)
    with open(tmp, "w") as f:
        f.write("%d\n" % pct)
    os.rename(tmp, os.path.join(d, str(gpu)))


def used_cluster(c):
    """Two nodes of 2 emulated GPUs, n1's 80% busy and n2's 20%; queues
    qa and qb; alice's 2-GPU job in qa and bob's in qb, a node each."""
    for g in range(2):
        set_util(c, "n1", g, 80)
        set_util(c, "n2", g, 20)
    for n in ("n1", "n2"):
        c.start_agent(n, "2xH100-80GB", extra=("--telemetry-ms", "200"))
    for q in ("qa", "qb"):
        s, b = c.api("POST", "/v1/queues", {
            "name": q, "quota": {"gpu": {"deserved": 2, "weight": 1}}})
        check(s == 201, "queue %s: %s %s" % (q, s, b))
    alice = c.cli("token", "create", "--user", "alice").stdout.strip()
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    a = c.submit("--queue", "qa", "--gpus", "2", "--", "sleep", "600",
                 token=alice)
    b = c.submit("--queue", "qb", "--gpus", "2", "--", "sleep", "600",
                 token=bob)
    for j in (a, b):
        c.wait_state(j, "running")
    return alice, a, b


def node_of(job):
    started = [e for e in job["history"] if e["event"] == "started"]
    return started[-1]["detail"].split(" on ")[1].split()[0]


def report(c, by, token=None):
    rep = json.loads(c.cli("report", "--since", "-5m", "--by", by, "--json",
                           token=token).stdout)
    return {r["key"]: r for r in rep["rows"]}, rep["total"]


def near(x, want, tol):
    return x is not None and abs(x - want) <= tol * abs(want)


def finish(c, jobs):
    """Cancels the jobs and waits for a usage sample after they ended."""
    for j in jobs:
        c.cli("cancel", str(j))
    for j in jobs:
        c.wait_state(j, "cancelled")
    time.sleep(2.5)


def check_agree(c):
    """By queue (the usage history) and by user (the jobs' own figures,
    one user a queue) say the same used GPU-hours."""
    q, _ = report(c, "queue")
    u, _ = report(c, "user")
    for user, queue in (("alice", "qa"), ("bob", "qb")):
        x, y = u[user]["used_gpu_hours"], q[queue]["used_gpu_hours"]
        check(x is not None and near(x, y, 0.03),
              "%s's used GPU-hours %s, the usage history's of %s %s" %
              (user, x, queue, y))


def scenario_report_used(c):
    """`allot report --by user|class|node --json` shows used GPU-hours
    and efficiency from the GPUs' telemetry of each job's own GPUs: 0.8
    on the node whose GPUs are 80% busy, 0.2 on the other; a user sees
    their own; by queue (the usage history) agrees with by user."""
    c.start_server("--usage-interval", "1")
    alice, a, b = used_cluster(c)
    time.sleep(12)
    finish(c, (a, b))
    eff = {"n1": 0.8, "n2": 0.2}
    na, nb = node_of(c.job(a)), node_of(c.job(b))
    check({na, nb} == {"n1", "n2"}, "a node each: %s %s" % (na, nb))
    tol = 0.2  # a sample a second over a run of some 12 s
    for by, want in (("user", {"alice": eff[na], "bob": eff[nb]}),
                     ("node", eff),
                     ("class", {"train": 0.5})):
        rows, _ = report(c, by)
        for key, e in want.items():
            r = rows.get(key, {})
            check(near(r.get("efficiency"), e, tol) and near(
                r.get("used_gpu_hours"), e * r["gpu_hours"], tol),
                "by %s, %s: %s, want efficiency %.2f" % (by, key, r, e))
    rows, total = report(c, "user", token=alice)
    check(list(rows) == ["alice"] and
          near(rows["alice"]["efficiency"], eff[na], tol) and
          near(total["used_gpu_hours"], rows["alice"]["used_gpu_hours"],
               1e-6),
          "alice's own report: %s %s" % (rows, total))
    check_agree(c)


def scenario_report_used_restart(c):
    """A controller killed (-9) and started again while jobs run: each
    job's used GPU-hours count every sample once, as the usage history's
    (which has the gap the controller was down for) do, and stay under
    their GPUs' 80% / 20% of the allocated GPU-hours."""
    args = ("--usage-interval", "1")
    c.start_server(*args)
    _, a, b = used_cluster(c)
    time.sleep(5)
    c.kill_server(signal.SIGKILL)
    time.sleep(1)
    c.start_server(*args)
    time.sleep(5)
    finish(c, (a, b))
    eff = {"n1": 0.8, "n2": 0.2}
    rows, _ = report(c, "node")
    for n, e in eff.items():
        r = rows.get(n, {})
        x = r.get("efficiency")
        check(x is not None and e * 0.5 <= x <= e * 1.1,
              "by node across a restart, %s: %s, want about %.2f" %
              (n, r, e))
    check_agree(c)


SCENARIOS = {
    "report_used": scenario_report_used,
    "report_used_restart": scenario_report_used_restart,
    "usage_retention": scenario_usage_retention,
    "report_restart": scenario_report_restart,
    "report_elastic": scenario_report_elastic,
    "report_rows": scenario_report_rows,
    "metrics_services": scenario_metrics_services,
    "usage_rollup_restart": scenario_usage_rollup_restart,
}


if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
