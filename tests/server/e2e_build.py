#!/usr/bin/env python3
"""End-to-end tests of build sessions' rules: deserved quota only, a
queue's cap on build GPUs, never a reclaim victim, and idle reclaim.  The
harness is e2e.py's (real server, agents with emulated GPUs, the CLI).

Usage: e2e_build.py [pg:]SCENARIO PATH/TO/allot
"""
import json
import os
import re
import subprocess
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402


def ls_row(c, jid, *extra):
    """The row of job jid in `allot ls` (with extra options)."""
    for line in c.cli("ls", *extra).stdout.splitlines():
        if line.split()[:1] == [str(jid)]:
            return line
    raise e2e.Fail("job %d not in allot ls: %s" % (jid, extra))


def show_field(c, jid, field):
    for line in c.cli("show", str(jid)).stdout.splitlines():
        if line.startswith(field + " "):
            return line[len(field):].strip()
    return None


def queue(c, name):
    return [q for q in c.api("GET", "/v1/queues")[1]["queues"]
            if q["name"] == name][0]


def scenario_build_quota(c):
    """A build job runs only within its queue's deserved quota and waits
    saying so; a queue's build cap holds it back with a reason of its own;
    a train job of another queue that needs GPUs back reclaims the train
    job that borrowed them, never the build job; the cap survives a
    restart (SQLite here, PostgreSQL under pg:)."""
    c.start_server()
    c.start_agent("n1", "4xH100-80GB")
    c.cli("queue", "set", "dev", "--deserved", "gpu=2")
    c.cli("queue", "set", "ops", "--deserved", "gpu=2")
    b1 = c.submit("--queue", "dev", "--class", "build", "--gpus", "2", "--",
                  "sleep", "120")
    c.wait_state(b1, "running")
    b2 = c.submit("--queue", "dev", "--class", "build", "--gpus", "1", "--",
                  "sleep", "120")
    want = ("build and inference jobs run only within their queue's "
            "deserved quota, never borrowing: queue dev would exceed its 2 "
            "deserved GPUs")
    wait_for(lambda: c.job(b2).get("reason") == want, 10,
             "b2's deserved reason, not %r" % c.job(b2).get("reason"))
    check(c.job(b2)["state"] == "pending", "b2 pending")
    check(ls_row(c, b2).endswith(want), "allot ls shows the reason: %r" %
          ls_row(c, b2))
    check(show_field(c, b2, "reason") == want, "allot show: %r" %
          show_field(c, b2, "reason"))
    # A train job of the same queue borrows the idle GPUs freely.
    t1 = c.submit("--queue", "dev", "--gpus", "2", "--", "sleep", "120")
    c.wait_state(t1, "running")

    # The cap: deserved 3 would let b2 in, a cap of 2 build GPUs does not.
    c.cli("queue", "set", "dev", "--deserved", "gpu=3", "--max-build-gpus",
          "2")
    cap = "queue dev at its cap of 2 GPUs for build jobs"
    wait_for(lambda: c.job(b2).get("reason") == cap, 10,
             "b2's cap reason, not %r" % c.job(b2).get("reason"))
    check(ls_row(c, b2).endswith(cap), "allot ls: %r" % ls_row(c, b2))
    q = queue(c, "dev")
    check(q["max_build_gpus"] == 2 and q["idle_timeout"] == 0 and
          q["idle_util"] == 5, "dev's settings: %s" % q)
    table = c.cli("queues").stdout.splitlines()
    check(table[0].split()[-2:] == ["BUILD", "IDLE"] and
          table[1].split()[-2:] == ["CAP", "RECLAIM"], "heads: %r" % table[:2])
    row = [r for r in table if r.startswith("dev ")][0].split()
    check(row[-2:] == ["2.0", "-"], "dev's row: %r" % row)
    # Bad settings: a clear error, exit 2 from the CLI, 400 from the API,
    # and the queue as it was.
    for args in (("--max-build-gpus", "-3"), ("--max-build-gpus", "x"),
                 ("--idle-timeout", "soon"), ("--idle-util", "101")):
        p = c.cli("queue", "set", "dev", "--deserved", "gpu=3", *args,
                  ok=False)
        check(p.returncode == 2 and p.stderr.strip(),
              "queue set %s: exit %d %r" % (args, p.returncode, p.stderr))
    for bad in ({"max_build_gpus": "2"}, {"idle_timeout": -1},
                {"idle_timeout": 1.5}, {"idle_util": 200}):
        s, b = c.api("PUT", "/v1/queues/dev", dict({"quota": {}}, **bad))
        check(s == 400 and "must be" in b.get("message", ""),
              "PUT %s: %s %s" % (bad, s, b))
    check(queue(c, "dev")["max_build_gpus"] == 2, "dev unchanged")

    # ops wants its deserved 2 GPUs back: dev (deserved 2 again) holds 4,
    # b1's 2 within its deserved quota and t1's 2 borrowed.  Reclaim takes
    # t1, never b1.
    c.cli("queue", "set", "dev", "--deserved", "gpu=2", "--max-build-gpus",
          "2")
    o1 = c.submit("--queue", "ops", "--gpus", "2", "--", "sleep", "120")
    c.wait_state(o1, "running", timeout=15)
    j = c.job(t1)
    check(j["state"] == "pending" and j["restart_count"] == 1,
          "t1 reclaimed and requeued: %s %s" % (j["state"],
                                                 j["restart_count"]))
    # And ops asks for more than is free: b1 still stays.
    o2 = c.submit("--queue", "ops", "--gpus", "2", "--", "sleep", "120")
    wait_for(lambda: c.job(o2).get("reason"), 10, "o2's reason")
    j = c.job(b1)
    check(j["state"] == "running" and j["restart_count"] == 0 and
          not any(e["event"] == "preempted" for e in j["history"]),
          "b1 never evicted: %s" % j)

    # The settings survive a restart of the controller.
    c.kill_server(signal.SIGTERM)
    c.start_server()
    q = queue(c, "dev")
    check(q["max_build_gpus"] == 2 and q["quota"]["gpu"]["deserved"] == 2,
          "after a restart: %s" % q)
    wait_for(lambda: c.job(b2).get("reason") == want, 10,
             "b2's reason after the restart")
    for jid in (b1, b2, t1, o1, o2):
        c.cli("cancel", str(jid), ok=False)


def set_util(c, node, gpu, pct):
    d = os.path.join(c.root, "agent-" + node, "gpu-util")
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ".%d" % gpu)
    with open(tmp, "w") as f:
        f.write("%d\n" % pct)
    os.rename(tmp, os.path.join(d, str(gpu)))


def scenario_idle(c):
    """Idle reclaim: a build session whose GPU stays under the queue's
    idle_util is warned in its log with the time left, then ended with the
    reason IdleTimeout, and its GPU goes to the next pending job; a busy
    session (over the threshold) and a train job on idle GPUs run on."""
    c.start_server()
    for g in range(4):
        set_util(c, "n1", g, 0)
    c.start_agent("n1", "4xH100-80GB", extra=["--telemetry-ms", "200"])
    c.cli("queue", "set", "dev", "--deserved", "gpu=4", "--idle-timeout",
          "4", "--idle-util", "10")
    q = queue(c, "dev")
    check(q["idle_timeout"] == 4 and q["idle_util"] == 10, "dev: %s" % q)
    row = [r for r in c.cli("queues").stdout.splitlines()
           if r.startswith("dev ")][0].split()
    check(row[-2:] == ["-", "4s<10%"], "dev's row: %r" % row)
    busy = c.submit("--queue", "dev", "--class", "build", "--gpus", "1",
                    "--", "sleep", "120")
    c.wait_state(busy, "running")
    set_util(c, "n1", c.job(busy)["placement"][0]["gpus"][0], 60)
    idle = c.submit("--queue", "dev", "--class", "build", "--gpus", "1",
                    "--", "sh", "-c", "echo session up; sleep 120")
    train = c.submit("--queue", "dev", "--gpus", "1", "--", "sleep", "120")
    c.wait_state(idle, "running")
    c.wait_state(train, "running")
    # One GPU left: a job of two waits for the idle session's.
    big = c.submit("--queue", "dev", "--gpus", "2", "--", "echo", "next")
    wait_for(lambda: c.job(big).get("reason"), 10, "big's reason")
    check(c.job(big)["state"] == "pending", "big waits")

    j = c.wait_state(idle, ("failed", "completed", "cancelled"), timeout=30)
    check(j["state"] == "failed" and
          j.get("reason", "").startswith("IdleTimeout: its GPUs stayed "
                                         "under 10% utilisation for 4 s"),
          "ended by idle reclaim: %s %r" % (j["state"], j.get("reason")))
    events = [e["event"] for e in j["history"]]
    check("idle_warning" in events and "idle_timeout" in events and
          events.index("idle_warning") < events.index("idle_timeout"),
          "warning, then the end: %s" % events)
    # The log: the session's output, then the warning with the time left.
    log = wait_for(lambda: (lambda t: t if "allot:" in t else None)(
        c.cli("logs", str(idle)).stdout), 10, "the warning in the log")
    check(re.search(r"session up\n(.|\n)*allot: .* UTC: the GPUs of this "
                    r"build session have been idle \(under 10%\) for \d+ s; "
                    r"it ends in 1 s \(IdleTimeout\) unless they are used",
                    log), "the log: %r" % log)
    check(show_field(c, idle, "reason") == j["reason"], "allot show reason")
    check("IdleTimeout" in ls_row(c, idle, "--all"), "allot ls reason")
    # Its GPU went back: the pending job starts.
    c.wait_state(big, "completed", timeout=15)
    # The busy session and the train job on an idle GPU are untouched.
    for jid in (busy, train):
        j = c.job(jid)
        check(j["state"] == "running" and j["restart_count"] == 0 and
              "idle_warning" not in [e["event"] for e in j["history"]],
              "job %d untouched: %s" % (jid, j))
    s, text = c.api("GET", "/metrics")
    check(s == 200 and 'allot_evictions_total{cause="idle",outcome="failed"} 1'
          in text, "metrics count the idle reclaim")
    # A session warned, then used again, is not ended: the warning stands
    # withdrawn and its idleness is counted again from the start.  (A
    # queue of its own with a longer timeout: 3 s from warning to end.)
    c.cli("queue", "set", "lab", "--deserved", "gpu=1", "--idle-timeout",
          "12", "--idle-util", "10")
    w = c.submit("--queue", "lab", "--class", "build", "--gpus", "1", "--",
                 "sleep", "120")
    c.wait_state(w, "running")
    wait_for(lambda: "idle_warning" in [e["event"] for e in
                                        c.job(w)["history"]], 20,
             "the second session's warning")
    set_util(c, "n1", c.job(w)["placement"][0]["gpus"][0], 90)
    time.sleep(6)
    j = c.job(w)
    check(j["state"] == "running" and "idle_timeout" not in
          [e["event"] for e in j["history"]], "a used session runs on: %s" %
          j)
    for jid in (busy, train, w):
        c.cli("cancel", str(jid), ok=False)


def scenario_idle_session(c):
    """The idle warning reaches the terminal of a session attached to the
    job (`allot run` prints the controller's notices on stderr), and the
    session ends with the job: `allot run` exits non-zero."""
    c.start_server()
    set_util(c, "n1", 0, 0)
    c.start_agent("n1", "1xH100-80GB", extra=["--telemetry-ms", "200"])
    c.cli("queue", "set", "dev", "--deserved", "gpu=1", "--idle-timeout",
          "4", "--idle-util", "10")
    p = subprocess.Popen([c.allot, "run", "-i", "--queue", "dev", "--class",
                          "build", "--gpus", "1", "--", "sleep", "120"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=c.env)
    try:
        out, err = p.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise e2e.Fail("allot run still running after its job's idle "
                       "timeout: %r" % err)
    check(re.search(r"the GPUs of this build session have been idle "
                    r"\(under 10%\) for \d+ s; it ends in \d+ s "
                    r"\(IdleTimeout\)", err),
          "the warning on the session's stderr: %r" % err)
    # The task was stopped (SIGTERM): 128 + 15, as a shell says.
    check(p.returncode == 143, "allot run's status after IdleTimeout: %d %r" %
          (p.returncode, err))
    # The report ends the run at the idle reclaim and counts a failure:
    # its GPU-hours stay put afterwards.
    def dev():
        rep = json.loads(c.cli("report", "--since", "-5m", "--json").stdout)
        return [r for r in rep["rows"] if r["key"] == "dev"][0]
    a = wait_for(lambda: (lambda r: r if r["failed"] == 1 else None)(dev()),
                 10, "the idle reclaim in the report")
    time.sleep(2)
    b = dev()
    check(a["failed"] == 1 and a["gpu_hours"] > 0 and
          a["gpu_hours"] == b["gpu_hours"],
          "the report after IdleTimeout: %s then %s" % (a, b))


def scenario_idle_stale(c):
    """A session whose GPU telemetry stopped is not reclaimed on its last
    (idle) samples: what is not known counts as busy."""
    c.start_server()
    set_util(c, "n1", 0, 0)
    c.start_agent("n1", "1xH100-80GB", extra=["--telemetry-ms", "200"])
    c.cli("queue", "set", "dev", "--deserved", "gpu=1", "--idle-timeout",
          "20", "--idle-util", "10")
    j = c.submit("--queue", "dev", "--class", "build", "--gpus", "1", "--",
                 "sleep", "120")
    c.wait_state(j, "running")
    # Idle samples reach the controller, then the agent sends none (its
    # emulated GPUs' knob is gone, as a failing driver would say nothing).
    time.sleep(2)
    d = os.path.join(c.root, "agent-n1", "gpu-util")
    os.unlink(os.path.join(d, "0"))
    os.rmdir(d)
    # Past the timeout: the session runs on, never warned.
    t_end = time.monotonic() + 24
    while time.monotonic() < t_end:
        x = c.job(j)
        events = [e["event"] for e in x["history"]]
        check(x["state"] == "running" and "idle_timeout" not in events,
              "a session without telemetry reclaimed: %s %s" %
              (x["state"], events))
        time.sleep(0.5)
    check("idle_warning" not in [e["event"] for e in c.job(j)["history"]],
          "no warning on stale telemetry")
    c.cli("cancel", str(j))


SCENARIOS = {
    "build_quota": scenario_build_quota,
    "idle": scenario_idle,
    "idle_session": scenario_idle_session,
    "idle_stale": scenario_idle_stale,
}

if __name__ == "__main__":
    e2e.SCENARIOS = SCENARIOS
    sys.exit(e2e.main())
