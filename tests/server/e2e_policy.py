#!/usr/bin/env python3
"""End-to-end tests of who may use a queue (members, groups, default
queues), the fair-share usage kept across restarts, per-model quotas,
minimum runtimes and the job lifecycle's retries, driven as a user would:
a real `allot server`, agents with emulated GPUs on loopback, the `allot`
command with each user's own token.  Runs on e2e.py's harness (its
Cluster, checks and runner).

Usage: e2e_policy.py [pg:]SCENARIO PATH/TO/allot
"""
import json
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402


def token(c, user):
    return c.cli("token", "create", "--user", user).stdout.strip()


def queue(c, name):
    s, q = c.api("GET", "/v1/queues/" + name)
    check(s == 200, "GET queue %s: %s %s" % (name, s, q))
    return q


def scenario_members(c):
    """Two users and three queues: a queue with members takes only their
    jobs (and those of its groups' users); anyone else gets a 403 that
    says why; --add-member lets one more in without touching the quota;
    a user's default queue takes the jobs that name none; users see the
    queues, their members and usage, and only their own jobs; all of it
    survives a kill -9 of the controller; bad input is refused."""
    c.start_server()
    c.start_agent("n1", "4xH100-80GB")
    alice, bob, carol = token(c, "alice"), token(c, "bob"), token(c, "carol")
    c.cli("group", "set", "vision", "--users", "carol,dave")
    c.cli("queue", "set", "research", "--deserved", "gpu=2", "--members",
          "alice")
    c.cli("queue", "set", "vision", "--deserved", "gpu=1", "--members",
          "@vision")
    c.cli("queue", "set", "shared", "--deserved", "gpu=1")
    q = queue(c, "research")
    check(q["members"] == ["alice"] and q["quota"]["gpu"]["deserved"] == 2,
          "research: %s" % q)
    # Membership enforced, with the reason.
    p = c.cli("submit", "--queue", "research", "--", "true", token=bob,
              ok=False)
    check(p.returncode == 1 and "not a member of queue 'research'" in p.stderr,
          "bob into research: exit %d %r" % (p.returncode, p.stderr))
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"],
                                      "queue": "vision"}, token=bob)
    check(s == 403 and b["error"] == "forbidden" and
          "not a member of queue 'vision'" in b["message"],
          "bob into vision: %s %s" % (s, b))
    # A pipeline's stages are jobs like any other: the same 403.
    pf = os.path.join(c.root, "stage.yaml")
    with open(pf, "w") as f:
        f.write("stages:\n  - name: st\n    command: ['true']\n"
                "    queue: vision\n")
    before = len(c.api("GET", "/v1/jobs?limit=1000")[1]["jobs"])
    p = c.cli("pipeline", "submit", pf, token=bob, ok=False)
    check(p.returncode == 1 and "403" in p.stderr and
          "not a member of queue 'vision'" in p.stderr,
          "bob's pipeline into vision: exit %d %r" % (p.returncode, p.stderr))
    check(len(c.api("GET", "/v1/jobs?limit=1000")[1]["jobs"]) == before,
          "no stage job from a refused pipeline")
    mine = c.submit("--queue", "research", "--", "sleep", "30", token=alice)
    theirs = c.submit("--queue", "vision", "--", "true", token=carol)
    open_ = c.submit("--queue", "shared", "--", "true", token=bob)
    for j, u, qn in ((mine, "alice", "research"), (theirs, "carol", "vision"),
                     (open_, "bob", "shared")):
        got = c.job(j)
        check(got["user"] == u and got["queue"] == qn, "job %d: %s" % (j, got))
    # --add-member: bob is in, and research keeps its quota.
    c.cli("queue", "set", "research", "--add-member", "bob")
    q = queue(c, "research")
    check(q["members"] == ["alice", "bob"] and
          q["quota"]["gpu"]["deserved"] == 2,
          "research after --add-member: %s" % q)
    c.submit("--queue", "research", "--", "true", token=bob)
    # Changing the quota keeps the members.
    c.cli("queue", "set", "research", "--deserved", "gpu=3")
    check(queue(c, "research")["members"] == ["alice", "bob"],
          "members kept by a quota change")
    # Default queues.
    c.cli("user", "set", "alice", "--default-queue", "research")
    j = c.submit("--", "true", token=alice)
    check(c.job(j)["queue"] == "research", "alice's default queue")
    with open(pf, "w") as f:
        f.write("stages:\n  - name: st\n    command: ['true']\n")
    c.cli("pipeline", "submit", pf, token=alice)
    st = max((x for x in c.api("GET", "/v1/jobs?limit=1000",
                               token=alice)[1]["jobs"] if x["name"] == "st"),
             key=lambda x: x["id"])
    check(st["queue"] == "research", "a stage goes to alice's default "
          "queue: %s" % st)
    j = c.submit("--", "true", token=bob)
    check(c.job(j)["queue"] == "default", "bob's default queue: default")
    # A default queue the user may not use is refused (her jobs would
    # all get a 403), and so is deleting a queue that is someone's
    # default; admins may use every queue.
    p = c.cli("user", "set", "carol", "--default-queue", "research", ok=False)
    check(p.returncode == 1 and "409" in p.stderr and
          "carol is not a member of queue 'research'" in p.stderr,
          "carol's default queue research: %r" % p.stderr)
    s, b = c.api("GET", "/v1/users/carol")
    check(s == 200 and b["queue"] == "default", "carol unchanged: %s" % b)
    c.cli("queue", "set", "tmp")
    c.cli("user", "set", "bob", "--default-queue", "tmp")
    s, b = c.api("DELETE", "/v1/queues/tmp")
    check(s == 409 and "default queue of user bob" in b["message"],
          "deleting bob's default queue: %s %s" % (s, b))
    j = c.submit("--", "true", token=bob)
    check(c.job(j)["queue"] == "tmp", "bob's default queue kept")
    c.wait_state(j, "completed")
    # Jobs go only to leaf queues: a default queue is one and stays one.
    s, b = c.api("POST", "/v1/queues", {"name": "sub", "parent": "tmp"})
    check(s == 409 and "default queue" in b["message"],
          "a sub-queue under bob's default queue: %s %s" % (s, b))
    c.cli("user", "set", "bob", "--default-queue", "")
    c.cli("queue", "set", "sub", "--parent", "tmp")
    p = c.cli("user", "set", "bob", "--default-queue", "tmp", ok=False)
    check(p.returncode == 1 and "has sub-queues" in p.stderr,
          "an inner queue as a default queue: %r" % p.stderr)
    c.cli("queue", "delete", "sub")
    c.cli("queue", "delete", "tmp")
    s, b = c.api("GET", "/v1/users/admin")
    check(s == 200 and {"research", "vision"} <= set(b["queues"]),
          "the admin may use every queue: %s" % b)
    out = c.cli("user", "show", token=alice).stdout
    print(out)
    row = out.splitlines()[1].split()
    check(row[:2] == ["alice", "research"] and "research" in row[2] and
          "vision" not in row[2], "allot user show: %r" % row)
    p = c.cli("user", "set", "alice", "--default-queue", "nope", ok=False)
    check(p.returncode == 1 and "no queue 'nope'" in p.stderr,
          "a default queue that does not exist: %r" % p.stderr)
    p = c.cli("user", "set", "alice", "--default-queue", "shared",
              token=alice, ok=False)
    check(p.returncode == 1 and "403" in p.stderr,
          "a user cannot set settings: %r" % p.stderr)
    s, b = c.api("GET", "/v1/users/alice", token=bob)
    check(s == 403, "bob cannot see alice's settings: %s" % s)
    # Users see the queues with their members and usage, and only their
    # own jobs.
    table = c.cli("queues", token=bob).stdout
    print(table)
    check("alice,bob" in table and "@vision" in table and
          "USAGE-GPU-H" in table, "allot queues as bob: %s" % table)
    # The second table's columns line up under their headings.
    lines = table.splitlines()
    head = next(i for i, ln in enumerate(lines) if "MEMBERS" in ln)
    col = lines[head].index("MEMBERS")
    for ln in lines[head + 1:]:
        check(ln[col - 1] == " " and ln[col] != " " and
              ln[col:].split()[0] in ("alice,bob", "@vision", "everyone"),
              "MEMBERS column: %r" % ln)
    ids = [j["id"] for j in c.api("GET", "/v1/jobs", token=bob)[1]["jobs"]]
    check(mine not in ids and open_ in ids, "bob sees his own jobs: %s" % ids)
    # Kept in the store: a kill -9 and restart keeps members, groups and
    # default queues.
    c.kill_server()
    c.start_server()
    check(queue(c, "vision")["members"] == ["@vision"], "members kept")
    j = c.submit("--", "true", token=alice)
    check(c.job(j)["queue"] == "research", "default queue kept")
    dave = token(c, "dave")
    c.submit("--queue", "vision", "--", "true", token=dave)
    p = c.cli("submit", "--queue", "vision", "--", "true", token=bob,
              ok=False)
    check(p.returncode == 1 and "not a member" in p.stderr,
          "still refused after a restart: %r" % p.stderr)
    # Bad input: 400 with the reason, the queue as it was.
    for body, what in (({"members": "alice"}, "members"),
                       ({"members": ["a b"]}, "members[0]"),
                       ({"members": ["x", "x"]}, "once"),
                       ({"members": ["@nogroup"]}, "no group 'nogroup'")):
        s, b = c.api("PUT", "/v1/queues/vision", body)
        check(s == 400 and what in b.get("message", ""),
              "PUT %s: %s %s" % (body, s, b))
    check(queue(c, "vision")["members"] == ["@vision"], "vision unchanged")
    s, b = c.api("DELETE", "/v1/groups/vision")
    check(s == 409 and "vision" in b["message"],
          "a group a queue names stays: %s %s" % (s, b))
    for body in ({"users": "carol"}, {"users": [5]}, {"color": "red"}):
        s, b = c.api("PUT", "/v1/groups/g2", body)
        check(s == 400, "PUT group %s: %s %s" % (body, s, b))
    s, b = c.api("PUT", "/v1/users/alice", {"default_queue": 5})
    check(s == 400, "default_queue 5: %s %s" % (s, b))
    p = c.cli("user", "set", "alice", ok=False)
    check(p.returncode == 2, "allot user set without a setting: exit 2")
    groups = c.cli("group", "list").stdout
    check("vision" in groups and "carol,dave" in groups, "groups: %s" % groups)


def scenario_fairshare(c):
    """The decayed usage behind fair share survives a kill -9 of the
    controller: each queue's usage (allot queues) and the fair shares it
    bends are the same before and after; the half-life is a controller
    setting."""
    c.start_server("--fair-share-half-life", "3600")
    c.start_agent("n1", "4xH100-80GB")
    for q in ("a", "b"):
        c.cli("queue", "set", q, "--weight", "gpu=1")
    ran = c.submit("--queue", "a", "--gpus", "4", "--", "sleep", "4")
    c.wait_state(ran, "completed", timeout=30)
    # Work neither queue can start (no such GPU model): fair share splits
    # the GPUs by weight bent by past usage.
    for q in ("a", "b"):
        c.submit("--queue", q, "--gpus", "4", "--gpu-model", "B200", "--",
                 "true")
    time.sleep(3)  # a cycle with both pending, and a write of the usage

    def shares():
        qs = {q["name"]: q for q in
              json.loads(c.cli("queues", "--json").stdout)}
        return ({n: qs[n]["usage_gpu_hours"] for n in ("a", "b")},
                {n: qs[n]["fair_share"]["gpu"] for n in ("a", "b")})
    use0, fair0 = shares()
    print("before: usage %s, fair share %s" % (use0, fair0))
    check(use0["a"] > 0.003 and use0["b"] == 0, "usage: %s" % use0)
    check(fair0["a"] < fair0["b"], "a used more: a smaller share: %s" % fair0)
    table = c.cli("queues").stdout
    check("USAGE-GPU-H" in table, "allot queues shows usage: %s" % table)
    c.kill_server()
    c.start_server("--fair-share-half-life", "3600")
    time.sleep(2)  # a cycle
    use1, fair1 = shares()
    print("after:  usage %s, fair share %s" % (use1, fair1))
    check(abs(use1["a"] - use0["a"]) <= 0.01 * use0["a"] and use1["b"] == 0,
          "usage after a kill -9: %s, before %s" % (use1, use0))
    check(all(abs(fair1[q] - fair0[q]) < 0.01 for q in fair0),
          "fair share after a kill -9: %s, before %s" % (fair1, fair0))
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                        os.path.join(c.root, "bad"),
                        "--fair-share-half-life", "0")
    check(rc == 2 and "--fair-share-half-life" in err, "half-life 0: %r" % err)


def scenario_dev_queue(c):
    """`allot dev` gives the admin a default queue with a real quota: a
    build session submitted without --queue starts at once (in a queue that
    deserves nothing it would wait for ever)."""
    import subprocess
    env = dict(c.env)
    env.pop("ALLOT_SERVER", None)
    env.pop("ALLOT_TOKEN", None)
    log = open(os.path.join(c.root, "dev.log"), "wb")
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=log, env=env,
                         start_new_session=True)
    c.procs.append(p)
    line = p.stdout.readline().decode()
    check(line.startswith("allot dev: ready"), "dev: %r" % line)

    def allot(*args):
        r = subprocess.run([c.allot] + list(args), env=env,
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "allot %s: %s" % (args, r.stderr))
        return r.stdout
    jid = allot("submit", "--class", "build", "--gpus", "1", "--", "sleep",
                "30").strip()
    j = wait_for(lambda: (lambda j: j if j["state"] == "running" else None)(
        json.loads(allot("show", "--json", jid))), 15,
        "the build session to start")
    check(j["queue"] == "default", "in the admin's default queue: %s" % j)
    me = allot("user", "show").splitlines()[1].split()
    check(me[:2] == ["admin", "default"], "allot user show: %r" % me)
    q = json.loads(allot("queues", "--json"))
    d = [x for x in q if x["name"] == "default"][0]
    check(d["quota"]["gpu"]["deserved"] == 8, "default deserves: %s" % d)
    allot("cancel", jid)
    p.send_signal(15)
    check(p.wait(10) == 0, "dev exits cleanly")


def nodes_of(c, jid):
    return [t["node"] for t in c.job(jid)["placement"]]


def scenario_model_quota(c):
    """A per-model quota keeps a queue off H100s past its share while
    A100s are free: with --limit gpu.H100-80GB=2, four one-GPU jobs that
    bin-packing would put three on the H100 node (the fullest) run two
    there and two on the A100 node; a job that asks for H100s waits with
    the reason; allot queues shows the quota per model; it survives a
    restart; bad quotas are refused."""
    c.start_server()
    c.start_agent("h1", "4xH100-80GB")
    c.start_agent("a1", "4xA100-80GB")
    c.cli("queue", "set", "other", "--deserved", "gpu=1")
    c.cli("queue", "set", "q", "--deserved", "gpu=6,gpu.H100-80GB=1",
          "--limit", "gpu.H100-80GB=2")
    # A model no node has is taken (nodes may join later) with a warning:
    # 'H100' does not count the H100-80GB GPUs.
    p = c.cli("queue", "set", "other2", "--limit", "gpu.H100=1")
    check(p.returncode == 0 and "no node has GPU model 'H100'" in p.stderr and
          "H100-80GB" in p.stderr, "a model no node has: %r" % p.stderr)
    p = c.cli("queue", "set", "other2", "--limit", "gpu.A100-80GB=1")
    check("warning" not in p.stderr, "a model a node has: %r" % p.stderr)
    q = queue(c, "q")
    check(q["model_quotas"] == {"H100-80GB": {"deserved": 1, "limit": 2}} and
          q["quota"]["gpu"]["deserved"] == 6, "q: %s" % q)
    o = c.submit("--queue", "other", "--gpus", "1", "--gpu-model", "H100-80GB",
                 "--", "sleep", "60")
    c.wait_state(o, "running")
    js = [c.submit("--queue", "q", "--gpus", "1", "--", "sleep", "60")
          for _ in range(4)]
    for j in js:
        c.wait_state(j, "running")
    where = [nodes_of(c, j)[0] for j in js]
    check(where.count("h1") == 2 and where.count("a1") == 2,
          "two on the H100 node, two on the A100 node: %s" % where)
    h = c.submit("--queue", "q", "--gpus", "1", "--gpu-model", "H100-80GB",
                 "--", "true")
    r = wait_for(lambda: c.job(h).get("reason"), 10, "a reason")
    check(c.job(h)["state"] == "pending" and "GPU-model limit" in r,
          "an H100 job past the limit waits: %r" % r)
    table = c.cli("queues").stdout
    print(table)
    row = [ln for ln in table.splitlines() if ln.startswith("q ")][-1]
    check("H100-80GB=1/2" in row, "allot queues per model: %r" % row)
    c.kill_server()
    c.start_server()
    check(queue(c, "q")["model_quotas"]["H100-80GB"]["limit"] == 2,
          "kept across a restart")
    for args in (("--limit", "gpu.=2"), ("--limit", "gpu.H100-80GB=x"),
                 ("--weight", "gpu.H100-80GB=2"),
                 ("--deserved", "gpu.H100-80GB=-1")):
        p = c.cli("queue", "set", "q", *args, ok=False)
        check(p.returncode == 2 and "gpu.MODEL" in p.stderr,
              "queue set %s: exit %d %r" % (args, p.returncode, p.stderr))
    for mq in ({"H100": 3}, {"H100": {"deserved": -2}},
               {"H100": {"lim": 2}}, {"a b": {"limit": 1}}, [1]):
        s, b = c.api("PUT", "/v1/queues/q", {"model_quotas": mq})
        check(s == 400 and "model_quotas" in b.get("message", ""),
              "PUT model_quotas %s: %s %s" % (mq, s, b))
    check(queue(c, "q")["model_quotas"]["H100-80GB"]["limit"] == 2,
          "q unchanged by refused bodies")


def evicted_after(c, jid):
    """Seconds from a job's start to its first eviction (its history)."""
    h = c.job(jid)["history"]
    start = next(e["time_ms"] for e in h if e["event"] == "started")
    ev = next(e for e in h if e["event"] in ("preempted", "reclaimed",
                                             "requeued", "evicted"))
    return (ev["time_ms"] - start) / 1000.0, ev


def scenario_min_runtime(c):
    """A queue's min_runtime holds a victim back until it passes: a train
    job borrowing the node is reclaimed by a queue within its quota only
    once it has run 6 s; the job shows its minimum; the class's setting
    (--min-runtime) counts too; the lost run counts as attained service;
    bad values are refused."""
    c.start_server("--min-runtime", "inference=30")
    c.start_agent("n1", "4xH100-80GB")
    c.cli("queue", "set", "borrow", "--min-runtime", "6")
    c.cli("queue", "set", "owner", "--deserved", "gpu=4")
    v = c.submit("--queue", "borrow", "--gpus", "4", "--", "sleep", "120")
    c.wait_state(v, "running")
    show = c.cli("show", str(v)).stdout
    check("min runtime 6 s" in show, "allot show: %s" % show)
    check(c.job(v)["min_runtime"] == 6, "the job's min_runtime")
    o = c.submit("--queue", "owner", "--gpus", "4", "--", "sleep", "60")
    c.wait_state(o, "running", timeout=30)
    after, ev = evicted_after(c, v)
    print("  reclaimed after %.1f s (%s)" % (after, ev))
    check(after >= 6, "the victim ran its minimum first: %.1f s" % after)
    # The run it lost counts as service it had (least attained service
    # first): 4 GPUs for at least 6 s.
    att = c.job(v).get("attained_gpu_s", 0)
    check(24 <= att < 4 * 120, "attained service of the victim: %r" % att)
    check(queue(c, "borrow")["min_runtime"] == 6, "queue shows min_runtime")
    row = [ln for ln in c.cli("queues").stdout.splitlines()
           if ln.startswith("borrow ")][-1]
    check("6s" in row.split(), "allot queues: %r" % row)
    i = c.submit("--queue", "borrow", "--class", "inference", "--", "true")
    check(c.job(i)["min_runtime"] == 30, "the class's minimum is larger")
    p = c.cli("queue", "set", "borrow", "--min-runtime", "soon", ok=False)
    check(p.returncode == 2, "--min-runtime soon: exit %d" % p.returncode)
    s, b = c.api("PUT", "/v1/queues/borrow", {"min_runtime": -1})
    check(s == 400 and "min_runtime" in b["message"], "%s %s" % (s, b))
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                        os.path.join(c.root, "bad"), "--min-runtime",
                        "gold=5")
    check(rc == 2 and "--min-runtime" in err, "--min-runtime gold=5: %r" % err)


def scenario_lifecycle(c):
    """--retry 2 runs a failing job three times, each attempt in the
    history, and one that succeeds on its second run completes; a dependant
    of a failed job fails at once with DependencyNeverSatisfied; allot
    suspend stops a counter job (its GPU kept, shown as suspended) and
    allot resume continues it, for its owner and admins only."""
    c.start_server("--retry-backoff", "1")
    c.start_agent("n1", "4xH100-80GB")
    runs = os.path.join(c.root, "runs")
    bad = c.submit("--retry", "2", "--", "sh", "-c",
                   "echo run >> %s; exit 3" % runs)
    c.wait_state(bad, "failed", timeout=40)
    j = c.job(bad)
    n = len(open(runs).read().split())
    ev = [e for e in j["history"] if e["event"] == "retry"]
    print("\n".join("  %s %s" % (e["event"], e.get("detail", ""))
                    for e in j["history"]))
    check(n == 3 and len(ev) == 2 and j["restart_count"] == 2 and
          j["exit_code"] == 3, "three runs, two retries: %d runs, %s" %
          (n, [e["detail"] for e in ev]))
    check("attempt 2 of 3 in 1 s" in ev[0]["detail"] and
          "attempt 3 of 3 in 2 s" in ev[1]["detail"],
          "back-off doubles: %s" % [e["detail"] for e in ev])
    show = c.cli("show", str(bad)).stdout
    check("retried    2 of 2" in show, "allot show: %s" % show)
    once = os.path.join(c.root, "once")
    good = c.submit("--retry", "2", "--", "sh", "-c",
                    "test -e %s && exit 0; touch %s; exit 1" % (once, once))
    c.wait_state(good, "completed", timeout=30)
    check(c.job(good)["restart_count"] == 1, "completed on its second run")
    # An array's elements each run again on their own.
    arr = c.submit("--array", "0-1", "--retry", "1", "--", "sh", "-c",
                   "exit 2")
    c.wait_state(arr, "failed", timeout=30)
    for k in (0, 1):
        s, e = c.api("GET", "/v1/jobs/%d_%d" % (arr, k))
        check(s == 200 and e["state"] == "failed" and
              e["restart_count"] == 1, "element %d: %s" % (k, e))
    # A dependant of a failed job fails at once, and says why.
    after = c.submit("--after", str(bad), "--", "true")
    dep = c.submit("--dependency", "afterok:%d" % bad, "--", "true")
    for d, which in ((after, "after %d: job %d failed" % (bad, bad)),
                     (dep, "afterok:%d: job %d failed" % (bad, bad))):
        j = c.wait_state(d, "failed")
        check("DependencyNeverSatisfied" in j.get("reason", "") and
              which in j["reason"], "job %d: %s" % (d, j.get("reason")))
        show = c.cli("show", str(d)).stdout
        check("exit code" not in show and which in show,
              "a job that never ran shows no exit code: %s" % show)
    check("dependency afterok:%d\n" % bad in c.cli("show", str(dep)).stdout,
          "allot show shows the dependency")
    # Suspend and resume a counter.
    cnt = os.path.join(c.root, "count")
    stop = os.path.join(c.root, "stop")
    # The counting runs in a session of its own (setsid): out of the
    # task's process group, reached through the process tree; it ends
    # when the file `stop` appears, so that it never outlives the test.
    loop = ("i=0; while [ ! -e %s ]; do i=$((i+1)); echo $i > %s.t; "
            "mv %s.t %s; sleep 0.05; done" % (stop, cnt, cnt, cnt))
    ctr = c.submit("--gpus", "1", "--", "sh", "-c",
                   "setsid -w sh -c %s" % shlex.quote(loop))
    c.wait_state(ctr, "running")

    def count():
        try:
            return int(open(cnt).read())
        except (OSError, ValueError):
            return 0
    wait_for(lambda: count() > 5, 10, "the counter to count")
    alice = c.cli("token", "create", "--user", "alice").stdout.strip()
    p = c.cli("suspend", str(ctr), token=alice, ok=False)
    check(p.returncode == 1 and "403" in p.stderr, "alice: %r" % p.stderr)
    c.cli("suspend", str(ctr))
    ls = c.cli("ls").stdout
    row = [ln for ln in ls.splitlines() if ln.startswith("%d " % ctr)][0]
    check("suspended" in row.split(), "allot ls: %r" % row)
    j = c.job(ctr)
    check(j["state"] == "running" and j["suspended"] and
          len(j["placement"][0]["gpus"]) == 1, "GPU kept: %s" % j)

    def still():
        x = count()
        time.sleep(0.3)
        return x if count() == x else None
    a = wait_for(still, 10, "the counter to stop")  # the agent's next sync
    time.sleep(1)
    b = count()
    check(a == b, "the counter stands while suspended: %d then %d" % (a, b))
    p = c.cli("suspend", str(ctr), ok=False)
    check(p.returncode == 1 and "already suspended" in p.stderr,
          "twice: %r" % p.stderr)
    c.cli("resume", str(ctr))
    wait_for(lambda: count() > b + 5, 10, "the counter to count again")
    hist = [e["event"] for e in c.job(ctr)["history"]]
    check("suspended" in hist and "resumed" in hist, "history: %s" % hist)
    pend = c.submit("--hold", "--", "true")
    p = c.cli("suspend", str(pend), ok=False)
    check(p.returncode == 1 and "only a running job" in p.stderr,
          "a held job: %r" % p.stderr)
    p = c.cli("submit", "--retry", "x", "--", "true", ok=False)
    check(p.returncode == 2 and "--retry" in p.stderr, "--retry x")
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"], "retries": 101})
    check(s == 400 and "retries" in b["message"], "retries 101: %s" % b)
    open(stop, "w").close()
    c.wait_state(ctr, "completed")


def scenario_quota_check(c):
    """Quotas checked against each other on allot queue set and the API: a
    deserved over the limit, models' deserved over the queue's, a model's
    limit over the queue's, sub-queues' deserved over their parent's (set
    on a child or on the parent), a negative limit: each a 400 that names
    the amounts, the queue as it was; consistent quotas are taken."""
    c.start_server()
    c.cli("queue", "set", "org", "--deserved", "gpu=8")
    c.cli("queue", "set", "team-a", "--parent", "org", "--deserved", "gpu=5")
    c.cli("queue", "set", "team-b", "--parent", "org", "--deserved", "gpu=3",
          "--limit", "gpu=6")
    # allot queue set replaces the queue: each line gives all of it.
    tb = ("team-b", "--parent", "org")
    for args, want in (
            (tb + ("--deserved", "gpu=7", "--limit", "gpu=6"),
             "queue team-b: gpu deserved 7 is over its limit 6"),
            (tb + ("--deserved", "gpu=4", "--limit", "gpu=6"),
             "queue team-b: the sub-queues of org would deserve 9 gpu "
             "together, over org's deserved 8"),
            (("org", "--deserved", "gpu=6"),
             "queue org: gpu deserved 6 is under what its sub-queues "
             "deserve together (8)"),
            (("team-c", "--parent", "org", "--deserved", "gpu=1"),
             "the sub-queues of org would deserve 9 gpu together"),
            (tb + ("--deserved", "gpu=3,gpu.H100-80GB=2,gpu.A100=2",
                  "--limit", "gpu=6"),
             "queue team-b: the GPU models' deserved quotas together (4) "
             "are over the queue's gpu deserved 3"),
            (tb + ("--deserved", "gpu=3", "--limit",
                  "gpu=6,gpu.H100-80GB=7"),
             "queue team-b: gpu.H100-80GB limit 7 is over the queue's gpu "
             "limit 6"),
            (tb + ("--deserved", "gpu=3,gpu.H100-80GB=2", "--limit",
                  "gpu=6,gpu.H100-80GB=1"),
             "queue team-b: gpu.H100-80GB deserved 2 is over its limit 1")):
        p = c.cli("queue", "set", *args, ok=False)
        check(p.returncode != 0 and want in p.stderr,
              "queue set %s: exit %d %r" % (args, p.returncode, p.stderr))
    s, b = c.api("PUT", "/v1/queues/team-b",
                 {"parent": "org", "quota": {"gpu": {"deserved": 1,
                                                     "limit": -3}}})
    check(s == 400 and "limit a number >= 0 (-1: none)" in b["message"],
          "a negative limit: %s %s" % (s, b))
    s, b = c.api("POST", "/v1/queues",
                 {"name": "x", "quota": {"cpu": {"deserved": 4,
                                                 "limit": 2}}})
    check(s == 400 and "queue x: cpu deserved 4 is over its limit 2" in
          b["message"], "cpu deserved over limit: %s %s" % (s, b))
    q = queue(c, "team-b")
    check(q["quota"]["gpu"]["deserved"] == 3 and
          q["quota"]["gpu"]["limit"] == 6 and not q.get("model_quotas"),
          "team-b as it was: %s" % q)
    check(queue(c, "org")["quota"]["gpu"]["deserved"] == 8, "org as it was")
    check(c.api("GET", "/v1/queues/team-c")[0] == 404, "no team-c")
    # Consistent changes pass: the parent grows, then a child.
    c.cli("queue", "set", "org", "--deserved", "gpu=10")
    c.cli("queue", "set", *tb, "--deserved", "gpu=5,gpu.H100-80GB=2",
          "--limit", "gpu=6,gpu.H100-80GB=4")
    check(queue(c, "team-b")["quota"]["gpu"]["deserved"] == 5,
          "team-b grown")


def scenario_reclaim_stop(c):
    """A reclaimed job that takes its time to stop (it traps SIGTERM and
    saves for a second and a half) keeps its GPU until it has: the job
    that reclaimed it starts only once it ended, and so does its own next
    run, though a GPU of another node frees meanwhile (never two runs of
    one job at once)."""
    c.start_server()
    c.start_agent("n1", "1xH100-80GB")
    c.start_agent("n2", "1xH100-80GB")
    c.cli("queue", "set", "default", "--deserved", "gpu=1")
    c.cli("queue", "set", "team", "--deserved", "gpu=1")
    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)
    # Each run writes JOB.RESTART: its start, and its end once it stopped.
    run = ("f=%s/$ALLOT_JOB_ID.$ALLOT_RESTART_COUNT; "
           "trap 'sleep 1.5; echo E $(date +%%s.%%N) >> $f; exit 143' TERM; "
           "echo S $(date +%%s.%%N) $ALLOT_NODE >> $f; sleep %s & wait; "
           "echo E $(date +%%s.%%N) >> $f")
    # A build session (never evicted) that ends in a moment, and the
    # borrower: of the default queue's two GPUs, one is team's.
    borrower = c.submit("--gpus", "1", "--", "sh", "-c", run % (marks, 60))
    c.wait_state(borrower, "running")
    build = c.submit("--class", "build", "--gpus", "1", "--", "sh", "-c",
                     run % (marks, 0.5))
    c.wait_state(build, "running")
    wait_for(lambda: os.path.exists(os.path.join(marks, "%d.0" % borrower)),
             10, "the borrower's run")
    owner = c.submit("--queue", "team", "--gpus", "1", "--", "sh", "-c",
                     run % (marks, 0.2))
    c.wait_state(owner, "completed", timeout=30)

    def times(f):
        """A run's start, end (None before it) and node."""
        w = open(os.path.join(marks, f)).read().split()
        return (float(w[1]), float(w[w.index("E") + 1]) if "E" in w
                else None, w[2])

    _, stopped, node = wait_for(lambda: (lambda t: t if t[1] else None)(
        times("%d.0" % borrower)), 10, "the borrower to stop")
    # The owner takes the borrower's GPU once it is free, or the build
    # session's on the other node, which ends first.
    started, _, where = times("%d.0" % owner)
    check(where != node or started >= stopped, "the owner started on %s "
          "%.3f s before the borrower it reclaimed from had stopped there" %
          (node, stopped - started))
    again = os.path.join(marks, "%d.1" % borrower)
    wait_for(lambda: os.path.exists(again), 30, "the borrower's next run")
    started = times("%d.1" % borrower)[0]
    check(started >= stopped, "the borrower's next run started %.3f s "
          "before its previous one ended" % (stopped - started))
    c.cli("cancel", str(borrower))


SCENARIOS = {
    "reclaim_stop": scenario_reclaim_stop,
    "quota_check": scenario_quota_check,
    "lifecycle": scenario_lifecycle,
    "model_quota": scenario_model_quota,
    "min_runtime": scenario_min_runtime,
    "dev_queue": scenario_dev_queue,
    "members": scenario_members,
    "fairshare": scenario_fairshare,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
