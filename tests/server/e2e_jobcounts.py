#!/usr/bin/env python3
"""End-to-end test of the job counts GET /metrics and GET /v1/summary
show, which the controller keeps as jobs change instead of counting every
job at each scrape.  The controller runs with ALLOT_DEBUG_JOBCOUNTS=1: it
recounts from scratch after every commit and aborts on a difference, so a
path that changes a job's state, queue, class or reason without updating
the counts ends it.  A busy workload goes through every kind of change
(submissions, arrays with a limit, holds, cancels, requeues, reclaim and
preemption, retries, a node lost, updates, a controller restart) while
the test scrapes, and at quiet points the counts must equal the jobs'
states as `GET /v1/jobs` lists them.

Usage: e2e_jobcounts.py [pg:]SCENARIO PATH/TO/allot
"""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

LINE = re.compile(r'^allot_jobs\{queue="([^"]*)",state="(\w+)",'
                  r'class="(\w+)"\} (\d+)$')


def metric_counts(c):
    """allot_jobs summed by state, and the pending reasons' sum."""
    s, text = c.api("GET", "/metrics")
    check(s == 200, "GET /metrics: %s" % s)
    by = {"pending": 0, "held": 0, "running": 0}
    why = 0
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            by[m.group(2)] += int(m.group(4))
        elif line.startswith("allot_pending_jobs{"):
            why += int(line.rsplit(" ", 1)[1])
    return by, why


def counter(c, name):
    """The sum of a family's samples in GET /metrics."""
    s, text = c.api("GET", "/metrics")
    check(s == 200, "GET /metrics: %s" % s)
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + "{") or
               line.startswith(name + " "))


def summary_counts(c):
    s, b = c.api("GET", "/v1/summary")
    check(s == 200, "GET /v1/summary: %s %s" % (s, b))
    # Every job here is the admin's own.
    check(b["my_jobs"] == b["jobs"], "my_jobs %s, jobs %s" % (b["my_jobs"],
                                                             b["jobs"]))
    return {k: b["jobs"].get(k, 0) for k in ("pending", "held", "running")}


def listed_counts(c):
    """Active jobs by state from GET /v1/jobs, an array as a row per
    element (expand=1: those without a job yet too)."""
    s, b = c.api("GET", "/v1/jobs?state=active&expand=1&limit=1000")
    check(s == 200, "GET /v1/jobs: %s %s" % (s, b))
    check(b["next"] is None, "one page of jobs")
    by = {"pending": 0, "held": 0, "running": 0}
    for j in b["jobs"]:
        by[j["state"]] += 1
    return by


def alive(c):
    check(c.server.poll() is None,
          "the controller ended (exit %s): see server.log for "
          "'job counts differ'" % c.server.returncode)
    log = open(os.path.join(c.root, "server.log"), errors="replace").read()
    check("job counts differ" not in log, "the kept counts differ from a "
          "recount: %s" % [ln for ln in log.splitlines()
                            if "job counts differ" in ln][:1])


def settle(c, what):
    """The counts of /metrics and /v1/summary equal a recount of what the
    job list says, once the cluster is quiet."""
    def same():
        alive(c)
        m, why = metric_counts(c)
        listed = listed_counts(c)
        summ = summary_counts(c)
        return (m, why, summ, listed) if (
            m == listed and summ == listed and
            why == m["pending"] + m["held"]) else None
    try:
        wait_for(same, 20, what)
    except e2e.Fail:
        m, why = metric_counts(c)
        raise e2e.Fail("%s: /metrics %s (reasons %d), /v1/summary %s, job "
                       "list %s" % (what, m, why, summary_counts(c),
                                    listed_counts(c)))


def scenario_jobcounts(c):
    c.env["ALLOT_DEBUG_JOBCOUNTS"] = "1"
    c.start_server("--node-timeout", "2500")
    c.start_agent("n1", "8xH100-80GB")
    c.start_agent("n2", "4xH100-80GB")
    for q in ("a", "b"):
        s, b = c.api("POST", "/v1/queues", {
            "name": q, "quota": {"gpu": {"deserved": 4, "weight": 1}}})
        check(s == 201, "queue %s: %s %s" % (q, s, b))
    # Queue a takes every GPU, and more waits.
    a = [c.submit("--queue", "a", "--gpus", "2", "--", "sleep", "300")
         for _ in range(8)]
    held = c.submit("--queue", "a", "--gpus", "1", "--hold", "--", "true")
    build = c.submit("--queue", "a", "--class", "build", "--gpus", "1",
                     "--", "sleep", "300")
    # An array with a limit: elements wait for their turn, the rest have
    # no job yet.
    arr = c.submit("--queue", "b", "--array", "0-29%2", "--gpus", "1", "--",
                   "sleep", "300")
    fail = c.submit("--queue", "b", "--gpus", "1", "--retry", "2", "--",
                    "false")
    wait_for(lambda: sum(1 for j in a if c.job(j)["state"] == "running")
             >= 4, 20, "queue a's jobs to run")
    alive(c)
    metric_counts(c)
    # Hold, release, cancel (pending and running), requeue.
    c.cli("release", str(held))
    c.cli("hold", str(a[7]), ok=False)
    c.cli("cancel", str(a[6]))
    running = [j for j in a if c.job(j)["state"] == "running"]
    c.cli("cancel", str(running[0]))
    s, b = c.api("POST", "/v1/jobs/%d/requeue" % running[1])
    check(s in (200, 202), "requeue: %s %s" % (s, b))
    s, b = c.api("POST", "/v1/jobs/%d/update" % a[5], {"name": "renamed"})
    check(s == 200, "update: %s %s" % (s, b))
    # Queue b reclaims its deserved GPUs from a (evictions, requeues).
    b_jobs = [c.submit("--queue", "b", "--gpus", "2", "--", "sleep", "300")
              for _ in range(2)]
    # A higher-priority job of a's preempts a's own training.
    inf = c.submit("--queue", "a", "--class", "inference", "--gpus", "2",
                   "--", "sleep", "300")
    for _ in range(5):
        metric_counts(c)
        time.sleep(0.3)
    c.cli("hold", str(arr), ok=False)
    c.cli("release", str(arr), ok=False)
    wait_for(lambda: c.job(fail)["state"] == "failed", 30,
             "the failing job to use its retries")
    settle(c, "after holds, cancels, requeues and reclaims")
    check(counter(c, "allot_evictions_total") > 0,
          "the scheduler evicted something (reclaim or preemption)")

    # A node lost: its jobs are requeued.
    c.agents["n2"].send_signal(signal.SIGKILL)
    c.agents["n2"].wait(10)
    wait_for(lambda: any(n["name"] == "n2" and n["state"] == "down"
                         for n in c.api("GET", "/v1/nodes")[1]["nodes"]),
             15, "n2 to be marked down")
    settle(c, "after a node was lost")
    check(counter(c, "allot_node_down_requeues_total") > 0,
          "the lost node's jobs were requeued")

    # The controller restarts (kill -9): the counts are rebuilt from the
    # store and kept from there on.
    c.kill_server()
    c.start_server("--node-timeout", "60000")
    c.start_agent("n2", "4xH100-80GB")
    settle(c, "after a controller restart")
    more = [c.submit("--queue", "b", "--gpus", "1", "--", "sleep", "300")
            for _ in range(3)]
    c.cli("cancel", str(arr), ok=False)
    c.cli("cancel", str(more[0]))
    c.cli("cancel", str(inf), ok=False)
    c.cli("cancel", str(build), ok=False)
    for j in b_jobs:
        c.cli("cancel", str(j), ok=False)
    settle(c, "after the restart's cancels")
    for j in a + more:
        c.cli("cancel", str(j), ok=False)
    settle(c, "after cancelling everything")
    alive(c)


SCENARIOS = {
    "jobcounts": scenario_jobcounts,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
