#!/usr/bin/env python3
"""End-to-end tests of how the controller drains a queue of short jobs,
on e2e.py's harness (its Cluster, checks and runner): a real `allot
server`, an agent with emulated GPUs on loopback, the `allot` command.

Usage: e2e_drain.py [pg:]SCENARIO PATH/TO/allot
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check  # noqa: E402


def counters(c):
    s, text = c.api("GET", "/metrics")
    check(s == 200, "GET /metrics: %s" % s)

    def one(name):
        m = re.search(r"^%s (\S+)$" % name, text, re.M)
        check(m is not None, "/metrics lacks %s" % name)
        return float(m.group(1))
    return (one("allot_store_commit_duration_seconds_count"),
            one("allot_scheduling_cycles_total"))


def scenario_ends_one_commit(c):
    """A node that reports a task's end is answered with the task taking
    its place after one commit, the cycle's: the ends are not committed
    in a pass of their own first.  Counted from /metrics over a chain of
    jobs through one GPU: the controller's passes (one commit each)
    beyond its cycles, per job, are about 2 when each end costs a pass
    of its own and its cycle another, under 1 when they share one."""
    k = 40
    c.start_server()
    c.start_agent("n1", gpus="1xH100-80GB")
    blocker = c.submit("--gpus", "1", "--", "sleep", "600")
    c.wait_state(blocker, ["running"])
    ids = [c.submit("--gpus", "1", "--", "true") for _ in range(k)]
    commits0, cycles0 = counters(c)
    c.cli("cancel", str(blocker))
    # Few requests of our own while it drains: each is a pass.
    for _ in range(120):
        time.sleep(1)
        if c.job(ids[-1])["state"] in ("completed", "failed"):
            break
    commits1, cycles1 = counters(c)
    for j in ids:
        check(c.job(j)["state"] == "completed", "job %d did not complete" % j)
    extra = ((commits1 - commits0) - (cycles1 - cycles0)) / k
    print("commits beyond the cycles per job: %.2f" % extra)
    check(extra < 1.2, "%.2f commits beyond the cycles per job (%d commits,"
          " %d cycles for %d jobs)" % (extra, commits1 - commits0,
                                       cycles1 - cycles0, k))


SCENARIOS = {
    "ends_one_commit": scenario_ends_one_commit,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
