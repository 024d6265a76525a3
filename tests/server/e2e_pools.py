#!/usr/bin/env python3
"""End-to-end tests of node pools, labels, topology and the placement
strategy per pool, driven as a user would: a real `allot server`, agents
with emulated GPUs on loopback declaring their pool and labels, the
`allot` command.  Runs on e2e.py's harness (its Cluster, checks and
runner).

Usage: e2e_pools.py [pg:]SCENARIO PATH/TO/allot
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402


def nodes_of(c, jid):
    """The node of each task of a running job, in task order."""
    return [t["node"] for t in c.job(jid)["placement"]]


def scenario_topology(c):
    """Rack labels named by --topology: a 4-node gang goes inside the one
    rack that holds it, though bin-packing alone would take the first four
    nodes across two racks; allot nodes shows pool, rack and labels."""
    c.start_server("--topology", "rack")
    racks = {"a1": "r1", "a2": "r1", "b1": "r2", "b2": "r2", "b3": "r2",
             "b4": "r2", "c1": "r3"}
    for n in ("a1", "a2", "b1", "b2", "b3", "b4", "c1"):
        c.start_agent(n, "4xH100-80GB",
                      extra=["--pool", "train", "--label",
                             "rack=%s,ib=yes" % racks[n]])
    p = c.cli("nodes")
    print(p.stdout)
    rows = {ln.split()[0]: ln.split() for ln in p.stdout.splitlines()[1:]}
    check(rows["b3"][-3:] == ["train", "r2", "ib=yes,rack=r2"],
          "allot nodes shows pool, rack and labels: %s" % rows["b3"])
    n = next(x for x in c.api("GET", "/v1/nodes")[1]["nodes"]
             if x["name"] == "a1")
    check(n["pool"] == "train" and n["labels"] == {"rack": "r1", "ib": "yes"}
          and n["topology"] == {"rack": "r1"}, "GET /v1/nodes: %s" % n)
    g = c.submit("--tasks", "4", "--gpus", "4", "--", "sleep", "30")
    c.wait_state(g, "running")
    got = nodes_of(c, g)
    check(sorted(got) == ["b1", "b2", "b3", "b4"],
          "the gang runs inside rack r2: %s" % got)
    # Five nodes fit no rack: a preference, not a must; it spans racks.
    c.cli("cancel", str(g))
    c.wait_state(g, "cancelled")
    big = c.submit("--tasks", "5", "--gpus", "4", "--", "sleep", "30")
    c.wait_state(big, "running")
    check(len({racks[x] for x in nodes_of(c, big)}) > 1,
          "a gang no rack holds spans racks: %s" % nodes_of(c, big))
    print("  4-node gang in rack r2: %s" % ",".join(sorted(got)))


def scenario_pools(c):
    """An agent's pool and labels; jobs select a pool and require labels
    (--constraint); what no node offers waits, and says why; the fields
    survive a restart of the controller; bad input is refused (exit 2,
    400)."""
    c.start_server()
    c.start_agent("t1", "2xH100-80GB",
                  extra=["--pool", "train", "--label", "ib=yes,rack=r1"])
    c.start_agent("t2", "2xH100-80GB",
                  extra=["--pool", "train", "--label", "ib=no,rack=r2"])
    c.start_agent("d1", "2xH100-80GB")
    ib = c.submit("--pool", "train", "--constraint", "ib", "--gpus", "1",
                  "--", "sleep", "30")
    noib = c.submit("--constraint", "ib=no", "--gpus", "1", "--", "sleep",
                    "30")
    anyp = c.submit("--pool", "train", "--gpus", "1", "--", "sleep", "30")
    free = c.submit("--gpus", "2", "--", "sleep", "30")
    for j in (ib, noib, anyp, free):
        c.wait_state(j, "running")
    check(nodes_of(c, ib) == ["t1"], "--constraint ib: %s" % nodes_of(c, ib))
    check(nodes_of(c, noib) == ["t2"],
          "--constraint ib=no: %s" % nodes_of(c, noib))
    check(nodes_of(c, anyp)[0] in ("t1", "t2"),
          "--pool train: %s" % nodes_of(c, anyp))
    check(nodes_of(c, free) == ["d1"],
          "no pool asked, the node left: %s" % nodes_of(c, free))
    nowhere = c.submit("--pool", "infer", "--", "true")
    wrong = c.submit("--pool", "train", "--constraint", "nvme", "--", "true")
    for j in (nowhere, wrong):
        r = wait_for(lambda: c.job(j).get("reason"), 10, "a reason")
        check(c.job(j)["state"] == "pending" and "pool or labels" in r,
              "job %d waits for a node that matches: %r" % (j, r))
    show = c.cli("show", str(ib)).stdout
    check("pool       train" in show and "constraint ib" in show,
          "allot show: %s" % show)
    print(c.cli("show", str(wrong)).stdout)
    # Kept in the store: a restart reads them back.
    c.kill_server()
    c.start_server()
    j = c.job(wrong)
    check(j.get("pool") == "train" and j.get("constraint") == "nvme",
          "after a restart: %s" % j)
    wait_for(lambda: next((x for x in c.api("GET", "/v1/nodes")[1]["nodes"]
                           if x["name"] == "t1" and x["state"] == "ready"),
                          None), 15, "t1 back")
    n = next(x for x in c.api("GET", "/v1/nodes")[1]["nodes"]
             if x["name"] == "t2")
    check(n["pool"] == "train" and n["labels"]["ib"] == "no",
          "the node's pool and labels after a restart: %s" % n)
    # Bad input.
    for args, what in ((["--pool", "a/b"], "--pool"),
                       (["--constraint", "ib,,x"], "--constraint"),
                       (["--constraint", "a=b=c"], "--constraint"),
                       (["--constraint", "a,a"], "--constraint")):
        p = c.cli("submit", *args, "--", "true", ok=False)
        check(p.returncode == 2 and what in p.stderr,
              "submit %s: exit %d %r" % (args, p.returncode, p.stderr))
    # An option whose value is missing before "--" is refused, not given
    # the value "--" (a job in a pool named "--" would wait for ever).
    before = len(c.api("GET", "/v1/jobs")[1]["jobs"])
    for opt in ("--pool", "--constraint", "--queue", "--gpu-model"):
        p = c.cli("submit", opt, "--", "true", ok=False)
        check(p.returncode == 2 and "%s needs a value" % opt in p.stderr,
              "submit %s --: exit %d %r" % (opt, p.returncode, p.stderr))
    check(len(c.api("GET", "/v1/jobs")[1]["jobs"]) == before,
          "no job from a refused submit")
    for body, what in (({"pool": 5}, "pool"), ({"pool": ""}, "pool"),
                       ({"constraint": "x y"}, "constraint"),
                       ({"constraint": ["ib"]}, "constraint")):
        body = dict(body, command=["true"])
        s, r = c.api("POST", "/v1/jobs", body)
        check(s == 400 and what in r.get("message", ""),
              "POST %s: %s %s" % (body, s, r))
    s, r = c.api("POST", "/v1/agent/register",
                 {"name": "x1", "labels": {"rack": 3}}, token=c.join)
    check(s == 400 and "label" in r.get("message", ""),
          "a register with a bad label: %s %s" % (s, r))
    s, r = c.api("POST", "/v1/agent/register",
                 {"name": "x1", "pool": "a b"}, token=c.join)
    check(s == 400 and "pool" in r.get("message", ""),
          "a register with a bad pool: %s %s" % (s, r))
    check(all(n["name"] != "x1"
              for n in c.api("GET", "/v1/nodes")[1]["nodes"]),
          "a refused register adds no node")
    for extra, what in ((["--label", "rack"], "--label"),
                        (["--pool", "x/y"], "--pool")):
        rc, err = c.refused("agent", "--server", c.url, "--join-token",
                            c.join, "--name", "bad", "--fake-gpus",
                            "1xH100-80GB", "--state",
                            os.path.join(c.root, "agent-bad"), *extra)
        check(rc == 2 and what in err, "agent %s: %d %r" % (extra, rc, err))
    for extra, what in ((["--pool-placement", "train=best"],
                         "--pool-placement"),
                        (["--pool-placement", "train=frag,train=bin"],
                         "--pool-placement"),
                        (["--topology", "rack=r1"], "--topology"),
                        (["--topology", "rack,rack"], "--topology: bad list"),
                        (["--topology", ",rack"], "--topology: bad list"),
                        (["--topology", "a,b,c,d,e"], "--topology")):
        rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                            os.path.join(c.root, "bad-server"), *extra)
        check(rc == 2 and what in err, "server %s: %d %r" % (extra, rc, err))


def scenario_frag(c):
    """A pool placed fragmentation-aware keeps a whole node for an 8-GPU
    gang where bin-packing, in a pool beside it, breaks the node up.

    Each pool: x (2 GPUs, 32 cores), y (3 GPUs, 8 cores), z (8 GPUs, 64
    cores).  Once a dependency ends, three jobs become eligible in one
    cycle: 1 GPU with 4 cores, 2 GPUs with 24 cores, 8 GPUs.  Bin-packing
    puts the first on x (the fullest), so the second fits only on z and
    the 8-GPU job waits; frag puts the first on y (whose cores strand a
    GPU anyway), the second on x, and the 8-GPU job gets z whole."""
    c.start_server("--pool-placement", "fragpool=frag,binpool=bin")
    for pool in ("fragpool", "binpool"):
        p = pool[0]
        c.start_agent(p + "x", "2xH100-80GB",
                      extra=["--pool", pool, "--cpus", "32"])
        c.start_agent(p + "y", "3xH100-80GB",
                      extra=["--pool", pool, "--cpus", "8"])
        c.start_agent(p + "z", "8xH100-80GB",
                      extra=["--pool", pool, "--cpus", "64"])
    gate = c.submit("--gpus", "0", "--cpus", "0", "--", "sleep", "2")
    jobs = {}
    for pool in ("fragpool", "binpool"):
        after = ["--pool", pool, "--after", str(gate)]
        jobs[pool] = (
            c.submit(*after, "--gpus", "1", "--cpus", "4", "--", "sleep",
                     "60"),
            c.submit(*after, "--gpus", "2", "--cpus", "24", "--", "sleep",
                     "60"),
            c.submit(*after, "--gpus", "8", "--", "sleep", "60"))
    c.wait_state(gate, "completed")
    f1, f2, f8 = jobs["fragpool"]
    b1, b2, b8 = jobs["binpool"]
    for j in (f1, f2, f8, b1, b2):
        c.wait_state(j, "running")
    check((nodes_of(c, f1), nodes_of(c, f2), nodes_of(c, f8)) ==
          (["fy"], ["fx"], ["fz"]),
          "frag: %s %s %s" % (nodes_of(c, f1), nodes_of(c, f2),
                              nodes_of(c, f8)))
    check((nodes_of(c, b1), nodes_of(c, b2)) == (["bx"], ["bz"]),
          "bin: %s %s" % (nodes_of(c, b1), nodes_of(c, b2)))
    j = c.job(b8)
    check(j["state"] == "pending", "bin-packing left no whole node: %s" % j)
    print("  frag: 1 GPU on fy, 2 on fx, 8 on fz; bin: 1 on bx, 2 on bz, "
          "8 waits (%s)" % j.get("reason"))


def scenario_elastic(c):
    """An elastic gang (--tasks 2..8) starts at 2 while 6 GPUs are busy,
    grows to 8 once they are idle, shrinks back to 2 when another queue
    reclaims its deserved 6; each size is a restart of the gang, and its
    tasks see WORLD_SIZE and ALLOT_RESTART_COUNT; the history says why."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB", extra=["--cpus", "64"])
    for q, d in (("qa", 2), ("qb", 6)):
        s, b = c.api("POST", "/v1/queues", {
            "name": q, "quota": {"gpu": {"deserved": d, "weight": 1}}})
        check(s == 201, "queue %s: %s" % (q, b))
    busy = c.submit("--queue", "qa", "--gpus", "6", "--", "sleep", "3")
    c.wait_state(busy, "running")
    seen = os.path.join(c.root, "seen")
    e = c.submit("--queue", "qa", "--tasks", "2..8", "--gpus", "1", "--",
                 "sh", "-c", "echo $WORLD_SIZE $ALLOT_RESTART_COUNT $RANK "
                 ">> %s; sleep 120" % seen)
    j = c.wait_state(e, "running")
    check(j["tasks"] == 2 and j["min_tasks"] == 2 and j["max_tasks"] == 8,
          "starts at 2: %s" % j)
    c.wait_state(busy, "completed")
    wait_for(lambda: c.job(e)["state"] == "running" and
             c.job(e)["tasks"] == 8, 20, "the gang to grow to 8")
    show = c.cli("show", str(e)).stdout
    check("2..8 (elastic; 8 now)" in show, "allot show: %s" % show)

    def ranks(restart):
        rows = [ln.split() for ln in open(seen).read().splitlines()] \
            if os.path.exists(seen) else []
        return sorted(int(r[2]) for r in rows if r[1] == str(restart))
    wait_for(lambda: ranks(1) == list(range(8)), 10,
             "the eight tasks of size 8 to start")
    rb = c.submit("--queue", "qb", "--gpus", "6", "--", "sleep", "120")
    c.wait_state(rb, "running", timeout=20)
    wait_for(lambda: c.job(e)["state"] == "running" and
             c.job(e)["tasks"] == 2, 20, "the gang to shrink to 2")

    def sizes():
        rows = [ln.split() for ln in open(seen).read().splitlines()] \
            if os.path.exists(seen) else []
        return sorted({(int(r[1]), int(r[0])) for r in rows})
    wait_for(lambda: sizes() == [(0, 2), (1, 8), (2, 2)], 10,
             "the tasks to see each size (have %s)" % sizes())
    wait_for(lambda: ranks(2) == [0, 1], 10, "the two tasks of size 2")
    h = [(x["event"], x["detail"]) for x in c.job(e)["history"]]
    resized = [d for ev, d in h if ev == "resized"]
    check(len(resized) == 2 and "growing from 2 to 8" in resized[0] and
          "shrinking from 8 to 2" in resized[1] and
          "for job %d" % rb in resized[1], "the history: %s" % h)
    check(c.job(rb)["restart_count"] == 0 and c.job(busy)["state"] ==
          "completed", "no whole job was evicted")
    print(c.cli("show", str(e)).stdout)
    # A suspended elastic job does not grow (it would hold idle GPUs doing
    # nothing); resumed, it does.
    c.cli("cancel", str(e), str(rb))
    busy = c.submit("--queue", "qa", "--gpus", "6", "--", "sleep", "120")
    c.wait_state(busy, "running")
    e = c.submit("--queue", "qa", "--tasks", "1..4", "--gpus", "1", "--",
                 "sleep", "120")
    j = c.wait_state(e, "running")
    check(j["tasks"] == 2, "starts at 2 of 1..4: %s" % j)
    c.cli("suspend", str(e))
    c.cli("cancel", str(busy))
    time.sleep(4)  # cycles with idle GPUs, past a grow attempt's interval
    j = c.job(e)
    check(j["tasks"] == 2 and j["suspended"] and j["restart_count"] == 0,
          "a suspended job stays as it is: %s" % j)
    c.cli("resume", str(e))
    wait_for(lambda: c.job(e)["state"] == "running" and
             c.job(e)["tasks"] == 4, 20, "the resumed gang to grow to 4")
    c.cli("cancel", str(e))
    # Bad sizes.
    for t in ("8..2", "0..4", "2..", "..4", "2..5000", "a..b"):
        p = c.cli("submit", "--tasks", t, "--", "true", ok=False)
        check(p.returncode == 2 and "--tasks" in p.stderr,
              "--tasks %s: %d %r" % (t, p.returncode, p.stderr))
    for body in ({"tasks": 4, "max_tasks": 2}, {"max_tasks": "8"},
                 {"tasks": 2, "max_tasks": 5000}):
        s, r = c.api("POST", "/v1/jobs", dict(body, command=["true"]))
        check(s == 400 and "max_tasks" in r.get("message", ""),
              "POST %s: %s %s" % (body, s, r))


def scenario_consolidate(c):
    """Consolidation: two checkpointing jobs left on two nodes keep an
    8-GPU job waiting; the pass moves one (a requeue and restart) so that
    a node is whole, the gang starts, the moved job runs elsewhere, and its
    history says why.  A job that does not checkpoint is never moved."""
    c.start_server("--consolidate", "1", "--consolidate-moves", "2")
    c.start_agent("n1", "8xH100-80GB", extra=["--cpus", "64"])
    c.start_agent("n2", "8xH100-80GB", extra=["--cpus", "64"])
    a = c.submit("--checkpointing", "--gpus", "4", "--", "sh", "-c",
                 "echo $ALLOT_RESTART_COUNT >> %s/a; sleep 120" % c.root)
    c.wait_state(a, "running")
    x = c.submit("--gpus", "6", "--", "sleep", "3")
    c.wait_state(x, "running")
    b = c.submit("--checkpointing", "--gpus", "2", "--", "sleep", "120")
    c.wait_state(b, "running")
    check(c.job(a)["placement"][0]["node"] !=
          c.job(b)["placement"][0]["node"], "a and b on two nodes")
    check(c.job(a)["checkpointing"] is True, "checkpointing in the job")
    c.wait_state(x, "completed")
    g = c.submit("--gpus", "8", "--", "sleep", "120")
    c.wait_state(g, "running", timeout=20)
    moved = [j for j in (c.job(a), c.job(b)) if j["restart_count"] == 1]
    check(len(moved) == 1, "one job moved: %s" %
          [(j["id"], j["restart_count"]) for j in (c.job(a), c.job(b))])
    m = c.wait_state(moved[0]["id"], "running")
    ev = [x for x in m["history"] if x["event"] == "moved"]
    check(len(ev) == 1 and "consolidation: moved off node" in
          ev[0]["detail"] and "for job %d" % g in ev[0]["detail"],
          "the move's reason: %s" % m["history"])
    nodes = {c.job(j)["placement"][0]["node"] for j in (a, b)}
    check(len(nodes) == 1 and c.job(g)["placement"][0]["node"] not in nodes,
          "the gang has a node to itself")
    print(c.cli("show", str(moved[0]["id"])).stdout)
    # The same story with jobs that do not checkpoint: nothing moves.
    for j in (a, b, g):
        c.cli("cancel", str(j))
        c.wait_state(j, "cancelled")
    a2 = c.submit("--gpus", "4", "--", "sleep", "120")
    c.wait_state(a2, "running")
    x2 = c.submit("--gpus", "6", "--", "sleep", "2")
    c.wait_state(x2, "running")
    b2 = c.submit("--gpus", "2", "--", "sleep", "120")
    c.wait_state(b2, "running")
    c.wait_state(x2, "completed")
    g2 = c.submit("--gpus", "8", "--", "sleep", "120")
    wait_for(lambda: c.job(g2).get("reason"), 10, "a reason")
    import time
    time.sleep(3)
    check(c.job(g2)["state"] == "pending" and
          c.job(a2)["restart_count"] == 0 and
          c.job(b2)["restart_count"] == 0,
          "jobs that do not checkpoint stay where they are")
    s, r = c.api("POST", "/v1/jobs", {"command": ["true"],
                                      "checkpointing": "yes"})
    check(s == 400 and "checkpointing" in r.get("message", ""),
          "checkpointing must be a boolean: %s %s" % (s, r))
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                        os.path.join(c.root, "bad"), "--consolidate", "-1")
    check(rc == 2 and "--consolidate" in err, "--consolidate -1: %r" % err)


def scenario_consolidate_budget(c):
    """The budget of moves (--consolidate-moves 1 an hour) outlives a kill
    -9 of the controller: one move frees a node for an 8-GPU job; after
    the restart the same story again moves nothing, and the waiting job
    stays pending."""
    opts = ("--consolidate", "1", "--consolidate-moves", "1")
    c.start_server(*opts)
    c.start_agent("n1", "8xH100-80GB", extra=["--cpus", "64"])
    c.start_agent("n2", "8xH100-80GB", extra=["--cpus", "64"])

    def spread(first):
        """first (4 GPUs) on one node, a checkpointing 2-GPU job on the
        other: neither node is whole."""
        x = c.submit("--gpus", "6", "--", "sleep", "3")
        c.wait_state(x, "running")
        b = c.submit("--checkpointing", "--gpus", "2", "--", "sleep", "120")
        c.wait_state(b, "running")
        check(c.job(first)["placement"][0]["node"] !=
              c.job(b)["placement"][0]["node"], "two jobs on two nodes")
        c.wait_state(x, "completed")
        return b

    a = c.submit("--checkpointing", "--gpus", "4", "--", "sleep", "120")
    c.wait_state(a, "running")
    b = spread(a)
    g = c.submit("--gpus", "8", "--", "sleep", "120")
    c.wait_state(g, "running", timeout=20)
    check(sorted([c.job(a)["restart_count"], c.job(b)["restart_count"]]) ==
          [0, 1], "one job moved")
    c.kill_server()
    c.start_server(*opts)
    for j in (g, b):
        c.cli("cancel", str(j))
        c.wait_state(j, "cancelled")
    ra = c.wait_state(a, "running")["restart_count"]
    b2 = spread(a)
    g2 = c.submit("--gpus", "8", "--", "sleep", "120")
    wait_for(lambda: c.job(g2).get("reason"), 10, "a reason")
    time.sleep(5)
    check(c.job(g2)["state"] == "pending" and
          c.job(b2)["restart_count"] == 0 and
          c.job(a)["restart_count"] == ra,
          "the spent budget kept across the restart: nothing moved: %s %s"
          % (c.job(g2)["state"], c.job(b2)["restart_count"]))
    hist = [e for e in c.job(a)["history"] + c.job(b2)["history"]
            if e["event"] == "moved"]
    check(len(hist) <= 1, "no second move: %s" % hist)


def scenario_consolidate_domain(c):
    """Consolidation inside a node: on n1 (two NVLink domains of 2 GPUs,
    a fake NVML's pairs) a job that does not checkpoint holds one domain
    and a checkpointing 1-GPU job the other; n2 has 1 GPU free.  No node
    can be freed, but moving the checkpointing job to n2 frees n1's second
    domain for a waiting 2-GPU job, which then runs inside it; the moved
    job's history says from which domain and for which job."""
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    check(lib and os.path.exists(lib), "ALLOT_TEST_FAKE_NVML names the fake")
    c.start_server("--consolidate", "1", "--consolidate-moves", "2")
    for name, slot in (("n1", "a"), ("n2", "b")):
        c.start_agent(name, None, {"ALLOT_NVML_LIB": lib,
                                   "FAKE_NVML_GPUS": "4",
                                   "FAKE_NVML_NVLINK": "pairs"},
                      extra=["--cpus", "16", "--label", "slot=" + slot])
    x = c.submit("--constraint", "slot=a", "--gpus", "2", "--",
                 "sleep", "120")
    c.wait_state(x, "running")
    k = c.submit("--checkpointing", "--gpus", "1", "--", "sleep", "120")
    c.wait_state(k, "running")
    y = c.submit("--constraint", "slot=b", "--gpus", "3", "--",
                 "sleep", "120")
    c.wait_state(y, "running")
    px, pk = c.job(x)["placement"][0], c.job(k)["placement"][0]
    check(px["node"] == "n1" and pk["node"] == "n1" and
          sorted(px["gpus"] + pk["gpus"]) in ([0, 1, 2], [0, 1, 3]),
          "x holds one domain of n1, k the other: %s %s" % (px, pk))
    g = c.submit("--gpus", "2", "--", "sleep", "120")
    c.wait_state(g, "running", timeout=20)
    pg = c.job(g)["placement"][0]
    check(pg["node"] == "n1" and sorted(pg["gpus"]) == [2, 3],
          "the 2-GPU job runs in n1's freed domain: %s" % pg)
    m = c.wait_state(k, "running")
    check(m["restart_count"] == 1 and m["placement"][0]["node"] == "n2",
          "k moved to n2: %s" % m)
    check(c.job(x)["restart_count"] == 0 and c.job(y)["restart_count"] == 0,
          "x and y stay where they are")
    ev = [e for e in m["history"] if e["event"] == "moved"]
    check(len(ev) == 1 and "consolidation: moved out of NVLink domain 1 on "
          "node n1" in ev[0]["detail"] and "for job %d" % g in ev[0]["detail"],
          "the move's reason: %s" % m["history"])
    print(c.cli("show", str(k)).stdout)


def scenario_consolidate_fewest(c):
    """Consolidation moves the fewest jobs that free room: n1 (two NVLink
    domains of 2 GPUs) runs three checkpointing jobs, k2 and k3 (1 GPU
    each) in its first domain, k1 (2 GPUs) in its second; n2 has 2 GPUs
    free.  A 2-GPU job that must run on n1 waits; freeing the node would
    move three jobs, the first domain two (as many GPUs), the second
    domain one: only k1 moves."""
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    check(lib and os.path.exists(lib), "ALLOT_TEST_FAKE_NVML names the fake")
    c.start_server("--consolidate", "1", "--consolidate-moves", "5")
    c.start_agent("n1", None, {"ALLOT_NVML_LIB": lib, "FAKE_NVML_GPUS": "4",
                               "FAKE_NVML_NVLINK": "pairs"},
                  extra=["--cpus", "16", "--label", "slot=a"])
    k2 = c.submit("--checkpointing", "--gpus", "1", "--", "sleep", "120")
    c.wait_state(k2, "running")
    k3 = c.submit("--checkpointing", "--gpus", "1", "--", "sleep", "120")
    c.wait_state(k3, "running")
    k1 = c.submit("--checkpointing", "--gpus", "2", "--", "sleep", "120")
    c.wait_state(k1, "running")
    check(sorted(c.job(k1)["placement"][0]["gpus"]) == [2, 3],
          "k1 holds n1's second domain: %s" % c.job(k1)["placement"])
    # n2 joins only now, so that bin-packing put all three on n1.
    c.start_agent("n2", "2xH100-80GB", extra=["--cpus", "16",
                                              "--label", "slot=b"])
    g = c.submit("--constraint", "slot=a", "--gpus", "2", "--",
                 "sleep", "120")
    c.wait_state(g, "running", timeout=20)
    m = c.wait_state(k1, "running")
    check(m["restart_count"] == 1 and m["placement"][0]["node"] == "n2",
          "k1 moved to n2: %s" % m)
    check(c.job(k2)["restart_count"] == 0 and
          c.job(k3)["restart_count"] == 0, "k2 and k3 stay where they are")
    check(sorted(c.job(g)["placement"][0]["gpus"]) == [2, 3],
          "g runs in k1's old domain: %s" % c.job(g)["placement"])
    ev = [e for e in m["history"] if e["event"] == "moved"]
    check(len(ev) == 1 and "out of NVLink domain 1 on node n1" in
          ev[0]["detail"], "the move's reason: %s" % m["history"])


def scenario_nvlink(c):
    """Emulated GPUs in two NVLink domains of 4 (--fake-gpus
    8xH100-80GB/nvl4); a job that requires one domain (--nvlink required,
    or an #ALLOT line) waits with the reason rather than span the two, and
    runs inside one once a domain frees up; one larger than any domain
    never fits and says so; a job that only prefers one (the default)
    spans them.  The setting survives a kill -9 of the controller; bad
    values exit 2 (CLI, agent) or answer 400."""
    p = c.cli("agent", "--probe", "--fake-gpus", "8xH100-80GB/nvl4")
    doms = [g["nvlink"] for g in json.loads(p.stdout)["gpus"]]
    check(doms == [0, 0, 0, 0, 1, 1, 1, 1], "--probe's domains: %s" % doms)
    for bad in ("8xH100/nvl0", "8xH100/nvl", "8xH100-80GB/nv4", "8x/nvl2"):
        p = c.cli("agent", "--probe", "--fake-gpus", bad, ok=False)
        check(p.returncode == 2 and "/nvlK" in p.stderr,
              "--fake-gpus %s refused: %d %s" % (bad, p.returncode, p.stderr))
    c.start_server()
    c.start_agent("n1", "8xH100-80GB/nvl4", extra=["--cpus", "16"])
    n = c.api("GET", "/v1/nodes")[1]["nodes"][0]
    check([g["nvlink"] for g in n["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1],
          "the node reports two domains: %s" % n["gpus"])
    # Three GPUs busy in each domain: 3 and 7 are free, one in each.
    x = c.submit("--gpus", "3", "--", "sleep", "300")
    c.wait_state(x, "running")
    y = c.submit("--gpus", "3", "--", "sleep", "300")
    c.wait_state(y, "running")
    gx = c.job(x)["placement"][0]["gpus"]
    gy = c.job(y)["placement"][0]["gpus"]
    check({g // 4 for g in gx} != {g // 4 for g in gy} and
          len({g // 4 for g in gx}) == 1, "x and y in one domain each: "
          "%s %s" % (gx, gy))
    script = os.path.join(c.root, "req.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n#ALLOT --nvlink required\n#ALLOT --gpus 2\n"
                "sleep 300\n")
    r = c.submit(script)
    big = c.submit("--nvlink", "required", "--gpus", "5", "--", "true")
    why = "no NVLink domain of a node has 2 free GPUs now"
    wait_for(lambda: why in (c.job(r).get("reason") or ""), 10,
             "the required job's reason: %s" % c.job(r))
    check(c.job(r)["state"] == "pending" and
          c.job(r).get("nvlink") == "required", "r waits: %s" % c.job(r))
    wait_for(lambda: "no node has an NVLink domain of 5 GPUs" in
             (c.job(big).get("reason") or ""), 10,
             "the 5-GPU job's reason: %s" % c.job(big))
    out = c.cli("show", str(r)).stdout
    check("nvlink     required" in out and why in out, "show: %s" % out)
    # The controller restarts: the requirement is kept.
    c.kill_server()
    c.start_server()
    wait_for(lambda: why in (c.job(r).get("reason") or ""), 15,
             "the reason after a restart: %s" % c.job(r))
    # Preferred (the default): a 2-GPU job spans the domains.
    p2 = c.submit("--nvlink", "preferred", "--gpus", "2", "--", "sleep",
                  "300")
    pl = c.wait_state(p2, "running")["placement"][0]["gpus"]
    check(sorted(pl) == [3, 7], "the preferring job spans: %s" % pl)
    check(c.job(r)["state"] == "pending", "r still waits")
    # A domain frees up: r runs inside it.
    c.cli("cancel", str(p2), str(x))
    pr = c.wait_state(r, "running")["placement"][0]["gpus"]
    check(len({g // 4 for g in pr}) == 1, "r inside one domain: %s" % pr)
    print("  required: waited, then ran on GPUs %s; preferred spanned %s"
          % (pr, pl))
    p = c.cli("submit", "--nvlink", "maybe", "--", "true", ok=False)
    check(p.returncode == 2 and "--nvlink wants required or preferred" in
          p.stderr, "--nvlink maybe: %d %s" % (p.returncode, p.stderr))
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"], "nvlink": "yes"})
    check(s == 400 and "nvlink must be" in b.get("message", ""),
          "body nvlink yes: %s %s" % (s, b))


def scenario_consolidate_nvlink(c):
    """Consolidation frees an NVLink domain for a job that requires one:
    on n1 (two emulated domains of 4) a job that does not checkpoint holds
    three GPUs of domain 0 and a checkpointing 1-GPU job one of domain 1,
    so a 4-GPU job with --nvlink required waits though four GPUs are free;
    the pass moves the checkpointing job to domain 0's free GPU and the
    waiting job runs inside domain 1; the move's reason names both."""
    c.start_server("--consolidate", "1", "--consolidate-moves", "2")
    c.start_agent("n1", "8xH100-80GB/nvl4", extra=["--cpus", "16"])

    def run(*args):
        j = c.submit(*args)
        return j, c.wait_state(j, "running")["placement"][0]["gpus"]

    def cancel(j):
        c.cli("cancel", str(j))
        c.wait_state(j, "cancelled")
    # Fillers steer the placements (each task takes the tightest domain).
    f1, _ = run("--gpus", "4", "--", "sleep", "300")
    k, pk = run("--checkpointing", "--gpus", "1", "--", "sleep", "300")
    f2, _ = run("--gpus", "3", "--", "sleep", "300")
    cancel(f1)
    x, px = run("--gpus", "3", "--", "sleep", "300")
    cancel(f2)
    check({g // 4 for g in px} == {0} and pk[0] // 4 == 1,
          "x in domain 0, k in domain 1: %s %s" % (px, pk))
    r = c.submit("--nvlink", "required", "--gpus", "4", "--", "sleep", "300")
    pr = c.wait_state(r, "running", timeout=20)["placement"][0]
    check(pr["node"] == "n1" and sorted(pr["gpus"]) == [4, 5, 6, 7],
          "r runs in n1's domain 1: %s" % pr)
    m = c.wait_state(k, "running")
    check(m["restart_count"] == 1 and m["placement"][0]["gpus"] == [3],
          "k moved to GPU 3: %s" % m["placement"])
    ev = [e for e in m["history"] if e["event"] == "moved"]
    check(len(ev) == 1 and "out of NVLink domain 1 on node n1" in
          ev[0]["detail"] and "for job %d" % r in ev[0]["detail"],
          "the move's reason: %s" % m["history"])


def scenario_dev_nvlink(c):
    """allot dev --fake-gpus 8xH100-80GB/nvl4: its node reports two NVLink
    domains, and a job that requires one domain of 5 GPUs says it never
    fits while a 4-GPU one runs inside one domain."""
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0",
                          "--fake-gpus", "8xH100-80GB/nvl4"],
                         stdout=subprocess.PIPE,
                         stderr=open(os.path.join(c.root, "dev.log"), "wb"),
                         env=c.env, start_new_session=True)
    c.procs.append(p)
    line = p.stdout.readline().decode()
    check(line.startswith("allot dev: ready at "), "dev is up: %r" % line)
    nodes = json.loads(c.cli("nodes", "--json").stdout)
    nodes = nodes["nodes"] if isinstance(nodes, dict) else nodes
    doms = [g["nvlink"] for g in nodes[0]["gpus"]]
    check(doms == [0, 0, 0, 0, 1, 1, 1, 1], "allot dev's domains: %s" % doms)
    big = c.submit("--nvlink", "required", "--gpus", "5", "--", "true")
    four = c.submit("--nvlink", "required", "--gpus", "4", "--", "sleep",
                    "300")
    wait_for(lambda: "no node has an NVLink domain of 5 GPUs" in
             (json.loads(c.cli("show", "--json", str(big)).stdout)
              .get("reason") or ""), 15, "the 5-GPU job's reason")
    wait_for(lambda: json.loads(c.cli("show", "--json", str(four)).stdout)
             ["state"] == "running", 15, "the 4-GPU job to run")
    got = json.loads(c.cli("show", "--json", str(four)).stdout)
    gpus = got["placement"][0]["gpus"]
    check(len({g // 4 for g in gpus}) == 1, "inside one domain: %s" % gpus)
    c.cli("cancel", str(four), str(big))


def scenario_topology_required(c):
    """--topology required: a gang that no rack holds waits with the
    reason rather than span racks (preferred, it spans them), and runs
    inside one rack once one is free."""
    c.start_server("--topology", "rack")
    for n, rack in (("a1", "r1"), ("a2", "r1"), ("b1", "r2")):
        c.start_agent(n, "4xH100-80GB",
                      extra=["--label", "rack=%s,in=%s" % (rack, rack)])
    hold = c.submit("--constraint", "in=r1", "--gpus", "1", "--",
                    "sleep", "300")
    c.wait_state(hold, "running")
    g = c.submit("--topology", "required", "--tasks", "2", "--gpus", "4",
                 "--", "sleep", "300")
    why = "topology required: it waits rather than span"
    wait_for(lambda: why in (c.job(g).get("reason") or ""), 10,
             "the gang's reason: %s" % c.job(g))
    check(c.job(g).get("topology") == "required", "the job's field")
    c.cli("cancel", str(hold))
    got = nodes_of(c, c.wait_state(g, "running")["id"])
    check(sorted(got) == ["a1", "a2"], "the gang inside r1: %s" % got)
    c.cli("cancel", str(g))
    c.wait_state(g, "cancelled")
    hold = c.submit("--constraint", "in=r1", "--gpus", "1", "--",
                    "sleep", "300")
    c.wait_state(hold, "running")
    pref = c.submit("--tasks", "2", "--gpus", "4", "--", "sleep", "300")
    got = nodes_of(c, c.wait_state(pref, "running")["id"])
    check(len({n[0] for n in got}) == 2, "preferred spans racks: %s" % got)


SCENARIOS = {
    "nvlink": scenario_nvlink,
    "topology_required": scenario_topology_required,
    "dev_nvlink": scenario_dev_nvlink,
    "consolidate_nvlink": scenario_consolidate_nvlink,
    "consolidate": scenario_consolidate,
    "consolidate_domain": scenario_consolidate_domain,
    "consolidate_budget": scenario_consolidate_budget,
    "consolidate_fewest": scenario_consolidate_fewest,
    "elastic": scenario_elastic,
    "topology": scenario_topology,
    "pools": scenario_pools,
    "frag": scenario_frag,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
