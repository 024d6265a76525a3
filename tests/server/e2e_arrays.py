#!/usr/bin/env python3
"""End-to-end tests of job arrays and sweeps, driven as a user would: a
real `allot server`, agents with emulated GPUs on loopback, the `allot`
command.  Runs on e2e.py's harness (its Cluster, checks and runner).

Usage: e2e_arrays.py [pg:]SCENARIO PATH/TO/allot
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402


def ls_json(c, *args):
    return json.loads(c.cli("ls", "--all", "--json", *args).stdout)


def marks(c, name):
    path = os.path.join(c.root, name)
    return [line.split() for line in open(path).read().splitlines()] \
        if os.path.exists(path) else []


def scenario_array_10k(c):
    """A 10,000-element array through the CLI, in one call: each index
    runs exactly once; ls shows one row with its counts."""
    c.start_server()
    for n in ("n1", "n2"):
        c.start_agent(n, "8xH100-80GB", extra=["--cpus", "64"])
    out = os.path.join(c.root, "ran")
    a = c.submit("--array", "0-9999", "--cpus", "0.05", "--", "sh", "-c",
                 "echo $ALLOT_ARRAY_INDEX $SLURM_ARRAY_TASK_ID "
                 "$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_COUNT >> " + out)
    rows = ls_json(c)
    check(len(rows) == 1 and rows[0]["id"] == a and
          rows[0]["array"]["count"] == 10000,
          "ls shows the array as one row: %s" % rows[:2])
    p = c.cli("ls")
    check("%d_[0-9999]" % a in p.stdout, "ls names it ID_[SPEC]: %s" % p.stdout)
    j = c.wait_state(a, "completed", timeout=170)
    check(j["array"]["states"]["completed"] == 10000,
          "every element completed: %s" % j["array"])
    lines = marks(c, "ran")
    idx = sorted(int(x[0]) for x in lines)
    check(idx == list(range(10000)),
          "each index ran exactly once (%d runs, %d distinct)" %
          (len(idx), len(set(idx))))
    check(all(x[0] == x[1] and x[2] == str(a) and x[3] == "10000"
              for x in lines), "ALLOT_ARRAY_*/SLURM_ARRAY_* of every element")
    el = ls_json(c, "--expand")
    check(len(el) == 10000 and
          sorted(e["array_index"] for e in el) == list(range(10000)) and
          all(e["array_job_id"] == a and e["state"] == "completed"
              for e in el), "ls --expand: one row per element")
    print("  10000 elements, each index once")


def scenario_array_limit(c):
    """%2 never runs more than two elements at once; show, hold, release
    and cancel take ID and ID_INDEX."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    c.start_agent("n2", "8xH100-80GB")
    out = os.path.join(c.root, "spans")
    a = c.submit("--array", "0-11%2", "--gpus", "1", "--", "sh", "-c",
                 "s=$(date +%s.%N); sleep 0.3; "
                 "echo $ALLOT_ARRAY_INDEX $s $(date +%s.%N) >> " + out)
    seen, listed = 0, False

    def done():
        nonlocal seen, listed
        if a in [r["id"] for r in ls_json(c, "--state", "running")]:
            listed = True
        j = c.job(a)
        seen = max(seen, j["array"]["states"]["running"])
        check(j["array"]["states"]["running"] <= 2,
              "at most 2 running: %s" % j["array"]["states"])
        return j["state"] == "completed"
    wait_for(done, 60, "the array to complete")
    spans = [(float(s), float(e)) for _, s, e in marks(c, "spans")]
    check(len(spans) == 12, "12 elements ran: %d" % len(spans))
    most = max(sum(1 for s2, e2 in spans if s2 <= s < e2) for s, _ in spans)
    check(most <= 2, "at most 2 elements ran at once on the nodes: %d" % most)
    check(seen >= 1 and listed, "the array was seen running, and listed "
          "by ls --state running")

    # hold, release, cancel: the whole array and single elements.
    h = c.submit("--array", "1,3,7-9", "--hold", "--", "true")
    p = c.cli("show", "%d_7" % h).stdout
    check("id         %d_7" % h in p and "state      held" in p,
          "show ID_INDEX of an element not started: %r" % p)
    c.cli("cancel", "%d_3" % h)
    s, j = c.api("GET", "/v1/jobs/%d_3" % h)
    check(s == 200 and j["state"] == "cancelled" and j["array_index"] == 3,
          "cancel ID_INDEX: %s %s" % (s, j))
    c.cli("release", str(h))
    j = c.wait_state(h, "cancelled", timeout=30)
    check(j["array"]["states"] == dict(j["array"]["states"], completed=4,
                                       cancelled=1),
          "released, the other four ran: %s" % j["array"])
    p = c.cli("show", "%d_4" % h, ok=False)
    check(p.returncode != 0 and "no element 4" in p.stderr,
          "an index not in the array: %r" % p.stderr)
    g = c.submit("--array", "0-99", "--hold", "--", "true")
    c.cli("cancel", str(g))
    j = c.job(g)
    check(j["state"] == "cancelled" and
          j["array"]["states"]["cancelled"] == 100, "cancel ID: %s" % j)
    p = c.cli("logs", "%d_0" % a)
    check(p.stdout == "", "logs ID_INDEX: %r" % p.stdout)

    # Another user sees none of it.
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    for verb in ("show", "cancel", "hold"):
        p = c.cli(verb, "%d_1" % h, token=bob, ok=False)
        check(p.returncode != 0 and "not yours" in p.stderr,
              "%s of another user's element: %r" % (verb, p.stderr))


def scenario_array_sbatch(c):
    """A Slurm script with #SBATCH --array=1-8:2 gets Slurm's task ids."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    sb = os.path.join(c.root, "job.sbatch")
    with open(sb, "w") as f:
        f.write("#!/bin/bash\n#SBATCH --array=1-8:2\n#SBATCH --gres=gpu:1\n"
                "echo id=$SLURM_ARRAY_TASK_ID job=$SLURM_ARRAY_JOB_ID "
                "count=$SLURM_ARRAY_TASK_COUNT min=$SLURM_ARRAY_TASK_MIN "
                "max=$SLURM_ARRAY_TASK_MAX step=$SLURM_ARRAY_TASK_STEP "
                "gpus=$CUDA_VISIBLE_DEVICES\n")
    a = c.submit(sb)
    j = c.wait_state(a, "completed", timeout=30)
    check(j["array"]["count"] == 4, "four elements: %s" % j["array"])
    for i in (1, 3, 5, 7):
        out = c.cli("logs", "%d_%d" % (a, i)).stdout
        want = "id=%d job=%d count=4 min=1 max=7 step=2 gpus=" % (i, a)
        check(out.startswith(want), "element %d: %r" % (i, out))
    s, _ = c.api("GET", "/v1/jobs/%d_2" % a)
    check(s == 404, "index 2 is not an element: %s" % s)
    # #ALLOT --array, and bad specs in a script.
    al = os.path.join(c.root, "job.sh")
    with open(al, "w") as f:
        f.write("#!/bin/sh\n#ALLOT --array 0-2\necho $ALLOT_ARRAY_INDEX\n")
    b = c.submit(al)
    c.wait_state(b, "completed", timeout=30)
    check(c.cli("logs", "%d_2" % b).stdout == "2\n", "#ALLOT --array")
    with open(sb, "w") as f:
        f.write("#!/bin/bash\n#SBATCH --array=5-1\ntrue\n")
    p = c.cli("submit", sb, ok=False)
    check(p.returncode == 2 and "ends before it starts" in p.stderr,
          "#SBATCH --array=5-1: %r" % p.stderr)


def scenario_array_errors(c):
    """Bad specs and sweeps: a clear error, exit 2 (CLI) or 400 (API),
    nothing created."""
    c.start_server()
    for args, what in (
            (("--array", "5-1"), "the range 5-1 ends before it starts"),
            (("--array", "0-10000000"), "an array has at most 1000000"),
            (("--array", "%0"), "the limit is at least 1"),
            (("--array", "0-9%0"), "the limit is at least 1"),
            (("--array", "3,1"), "increasing order"),
            (("--array", "1-x"), "expected the end of the range"),
            (("--sweep", "lr=1,2"), "placeholder {bs} names no --sweep"),
            (("--sweep", "lr="), "an empty value"),
            (("--sweep", "9x=1"), "wants NAME=V1,V2"),
            (("--sweep", "lr=1", "--sweep", "bs=2", "--sweep", "lr=3"),
             "--sweep lr is given twice"),
            (("--sweep", "lr=1", "--sweep", "bs=2,3", "--array", "0-2"),
             "--array 0-2 has 3 elements but the sweep 2 combinations"),
            # Both would be ALLOT_SWEEP_LR, one value lost.
            (("--sweep", "lr=1", "--sweep", "bs=2", "--sweep", "LR=3"),
             "--sweep lr and LR differ only in case")):
        p = c.cli("submit", *args, "--", "echo", "{lr}", "{bs}", ok=False)
        check(p.returncode == 2 and what in p.stderr,
              "submit %s: exit %d %r" % (" ".join(args), p.returncode,
                                         p.stderr))
    # The other commands of arrays and sessions: bad input is a usage
    # error (exit 2) with what is wrong, before anything is sent.
    for args, what in (
            (("run", "--array", "0-3", "--", "true"), "a session is one job"),
            (("run", "--sweep", "lr=1,2", "--", "echo", "{lr}"),
             "a session is one job"),
            (("run", "--array", "5-1", "--", "true"), "ends before it starts"),
            (("attach",), "which job?"),
            (("attach", "x"), "'x' is not a job id"),
            (("attach", "0"), "'0' is not a job id"),
            (("attach", "3", "4"), "too many arguments"),
            (("exec", "x", "--", "true"), "'x' is not a job id"),
            (("exec", "3_"), "'3_' is not a job id"),
            (("exec", "3"), "no command given"),
            (("exec", "--", "true"), "which job?"),
            (("port-forward", "x", "80"), "'x' is not a job id"),
            (("port-forward", "3"), "which port?"),
            (("port-forward", "3", "0"), "REMOTE must be a port"),
            (("port-forward", "3", "70000:80"), "LOCAL must be a port"),
            (("ls", "--state", "bogus"), "unknown state 'bogus'"),
            (("ls", "--state", "pending,"), "unknown state ''")):
        p = c.cli(*args, ok=False)
        check(p.returncode == 2 and what in p.stderr,
              "%s: exit %d %r" % (" ".join(args), p.returncode, p.stderr))
    for body, what in (
            ({"array": "5-1"}, "ends before it starts"),
            ({"array": "0-10000000"}, "at most 1000000"),
            ({"array": "0-3%0"}, "the limit is at least 1"),
            ({"array": 7}, "array must be a string"),
            ({"sweep": [{"name": "lr", "values": ["1"]}]},
             "placeholder {bs} names no sweep axis"),
            ({"sweep": [{"name": "lr", "values": []}]}, "sweep entry 0"),
            ({"array": "0-2", "sweep": [{"name": "lr", "values": ["1"]},
                                        {"name": "bs", "values": ["2"]}]},
             "3 elements but the sweep 1"),
            ({"sweep": [{"name": "lr", "values": ["1"]},
                        {"name": "bs", "values": ["2"]},
                        {"name": "Lr", "values": ["3"]}]},
             "sweep names lr and Lr differ only in case")):
        b = dict(body, command=["echo", "{lr}", "{bs}"])
        s, r = c.api("POST", "/v1/jobs", b)
        check(s == 400 and what in r.get("message", ""),
              "POST %s: %s %s" % (body, s, r))
    check(ls_json(c) == [], "nothing was created")


def scenario_sweep(c):
    """--sweep lr=..,.. --sweep bs=..,..: one element per combination, the
    values in the command and in ALLOT_SWEEP_*."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    a = c.submit("--sweep", "lr=1e-3,1e-4", "--sweep", "bs=32,64", "--array",
                 "%1", "--", "sh", "-c",
                 "echo lr={lr} bs={bs} $ALLOT_SWEEP_LR $ALLOT_SWEEP_BS ${HOME}")
    j = c.wait_state(a, "completed", timeout=30)
    check(j["array"]["spec"] == "0-3%1" and j["array"]["count"] == 4,
          "four elements, %%1: %s" % j["array"])
    got = [c.cli("logs", "%d_%d" % (a, i)).stdout.split()[:4]
           for i in range(4)]
    want = [["lr=%s" % lr, "bs=%s" % bs, lr, bs]
            for lr in ("1e-3", "1e-4") for bs in ("32", "64")]
    check(got == want, "the combinations: %s" % got)


def scenario_array_restart(c):
    """kill -9 of the controller while an array drains: the elements not
    started yet survive, and each index still runs exactly once."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    out = os.path.join(c.root, "ran")
    a = c.submit("--array", "0-39%4", "--", "sh", "-c",
                 "sleep 0.2; echo $SLURM_ARRAY_TASK_ID >> " + out)
    wait_for(lambda: len(marks(c, "ran")) >= 6, 30, "six elements done")
    c.kill_server(signal.SIGKILL)
    c.start_server()
    j = c.job(a)
    check(j["array"]["count"] == 40, "the array is back: %s" % j)
    c.wait_state(a, "completed", timeout=60)
    idx = sorted(int(x[0]) for x in marks(c, "ran"))
    check(idx == list(range(40)), "each index once after the restart: %s" %
          idx)


def scenario_dependency(c):
    """Slurm's dependencies on jobs and whole arrays: afterok, afterany,
    afternotok, aftercorr, singleton; the reasons while waiting and when
    never satisfied; only jobs the user can see."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    log = os.path.join(c.root, "spans")
    span = "s=$(date +%%s.%%N); %s; echo %s $s $(date +%%s.%%N) >> " + log
    bad = c.submit("--hold", "--", "sh", "-c", "exit 3")
    ok = c.submit("--dependency", "afterok:%d" % bad, "--", "true")
    notok = c.submit("--dependency", "afternotok:%d" % bad, "--", "true")
    anyj = c.submit("--dependency", "afterany:%d" % bad, "--", "true")
    j = wait_for(lambda: (lambda j: j if "reason" in j else None)(c.job(ok)),
                 10, "a reason")
    check(j["state"] == "pending" and "(Dependency)" in j["reason"],
          "waiting: %s" % j.get("reason"))
    c.cli("release", str(bad))
    c.wait_state(bad, "failed")
    c.wait_state(notok, "completed")
    c.wait_state(anyj, "completed")
    j = wait_for(lambda: (lambda j: j if "NeverSatisfied" in
                          j.get("reason", "") else None)(c.job(ok)),
                 10, "DependencyNeverSatisfied")
    check(j["state"] == "failed", "afterok of a failed job fails at once")

    # aftercorr: element i of b after element i of a; afterok on all of a.
    a = c.submit("--array", "0-3", "--", "sh", "-c",
                 span % ("sleep 0.$((4 - ALLOT_ARRAY_INDEX))",
                         "a$ALLOT_ARRAY_INDEX"))
    b = c.submit("--array", "0-3", "--dependency", "aftercorr:%d" % a, "--",
                 "sh", "-c", span % ("true", "b$ALLOT_ARRAY_INDEX"))
    w = c.submit("--dependency", "afterok:%d" % a, "--", "sh", "-c",
                 span % ("true", "whole"))
    # singleton: two jobs of one name never overlap.
    s1 = c.submit("--name", "solo", "--dependency", "singleton", "--", "sh",
                  "-c", span % ("sleep 0.3", "solo1"))
    s2 = c.submit("--name", "solo", "--dependency", "singleton", "--", "sh",
                  "-c", span % ("sleep 0.3", "solo2"))
    for x in (b, w, s1, s2):
        c.wait_state(x, "completed", timeout=30)
    spans = {k: (float(t0), float(t1))
             for k, t0, t1 in (line.split() for line in
                               open(log).read().splitlines())}
    for i in range(4):
        check(spans["b%d" % i][0] >= spans["a%d" % i][1],
              "b_%d started after a_%d ended: %s" % (i, i, spans))
    check(spans["whole"][0] >= max(spans["a%d" % i][1] for i in range(4)),
          "afterok on an array waits for all its elements: %s" % spans)
    check(spans["solo2"][0] >= spans["solo1"][1], "singleton: %s" % spans)

    # Errors: syntax (exit 2), unknown job (400), another user's (403).
    p = c.cli("submit", "--dependency", "afterok:1?afterany:2", "--", "true",
              ok=False)
    check(p.returncode == 2 and "'?' (any one of) is not supported" in
          p.stderr, "dependency syntax: %r" % p.stderr)
    s, r = c.api("POST", "/v1/jobs", {"command": ["true"],
                                      "dependency": "afterany:99999"})
    check(s == 400 and "no job 99999" in r["message"], "%s %s" % (s, r))
    s, r = c.api("POST", "/v1/jobs", {"command": ["true"],
                                      "dependency": "aftercorr:%d" % a})
    check(s == 400 and "aftercorr" in r["message"], "%s %s" % (s, r))
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    p = c.cli("submit", "--dependency", "afterany:%d" % a, "--", "true",
              token=bob, ok=False)
    check(p.returncode == 1 and "you may depend only on jobs you can see" in
          p.stderr, "depending on another user's job: %r" % p.stderr)
    for args in (("--after", str(a)), ("--dependency", "afterok:%d" % a)):
        p = c.cli("submit", *args, "--", "true", token=bob, ok=False)
        check(p.returncode == 1 and "you may depend only on jobs you can "
              "see" in p.stderr, "%s on another user's job: %r" %
              (" ".join(args), p.stderr))
    bindir = os.path.join(c.root, "bin")
    os.mkdir(bindir)
    c.cli("slurm-commands", bindir)
    p = subprocess.run([os.path.join(bindir, "sbatch"),
                        "--dependency=afterok:%d" % a,
                        "--wrap", "true"], capture_output=True, text=True,
                       env=dict(c.env, ALLOT_TOKEN=bob), cwd=c.root)
    check(p.returncode != 0 and "you may depend only on jobs you can see"
          in p.stderr, "sbatch afterok on another user's job: %r" %
          p.stderr)
    check(c.api("GET", "/v1/jobs?user=bob")[1]["jobs"] == [],
          "bob has no job")
    # #SBATCH --dependency with the other kinds.
    sb = os.path.join(c.root, "dep.sbatch")
    with open(sb, "w") as f:
        f.write("#!/bin/bash\n#SBATCH --dependency=afterany:%d,singleton\n"
                "true\n" % bad)
    d = c.submit(sb)
    check(c.job(d)["dependency"] == "afterany:%d,singleton" % bad,
          "#SBATCH --dependency: %s" % c.job(d))
    c.wait_state(d, "completed")


def scenario_array_limit_hold(c):
    """%2 holds however the elements are named: hold then release of
    elements not started yet gives them jobs, yet no more than two run;
    those left out say they wait for their turn."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    a = c.submit("--array", "0-9%2", "--", "sleep", "60")
    wait_for(lambda: c.job(a)["array"]["states"]["running"] == 2, 20,
             "two elements running")
    for i in (5, 6, 7):
        c.cli("hold", "%d_%d" % (a, i))
        c.cli("release", "%d_%d" % (a, i))
    # Several cycles (one a second at most): none may start a third.
    t_end = time.monotonic() + 4
    while time.monotonic() < t_end:
        st = c.job(a)["array"]["states"]
        check(st["running"] <= 2, "at most 2 running after hold and "
              "release of elements: %s" % st)
        time.sleep(0.2)
    j = wait_for(lambda: (lambda j: j if j.get("reason") else None)(
        c.job(a + 1 + 5)), 10, "element 5's reason")
    check(j["state"] == "pending" and
          j["reason"] == "waiting for its turn in array %d (at most 2 "
          "elements at once)" % a, "element 5: %s %r" % (j["state"],
                                                       j.get("reason")))
    # exec and port-forward into a running element by ID_INDEX; the array
    # itself runs nothing.
    p = c.cli("exec", "%d_0" % a, "--", "sh", "-c", "echo $ALLOT_ARRAY_INDEX")
    check(p.stdout == "0\n", "exec ID_INDEX: %r" % p.stdout)
    for args in (("exec", str(a), "--", "true"),
                 ("port-forward", str(a), "8000")):
        p = c.cli(*args, ok=False)
        check(p.returncode == 1 and "job %d is an array: name one of its "
              "elements, %d_INDEX" % (a, a) in p.stderr,
              "%s of an array: %d %r" % (args[0], p.returncode, p.stderr))
    c.cli("cancel", str(a))


def scenario_array_never(c):
    """Elements that can never start (aftercorr on elements that failed)
    fail with the reason, and hold up neither the %N limit nor the rest of
    the array; %N counts what runs; singleton waits for a held array of
    its name and user."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    a = c.submit("--array", "0-5", "--", "sh", "-c",
                 "exit $((ALLOT_ARRAY_INDEX < 2))")
    c.wait_state(a, "failed", timeout=30)
    b = c.submit("--array", "0-5%2", "--dependency", "aftercorr:%d" % a,
                 "--", "true")
    j = c.wait_state(b, ("completed", "failed", "cancelled"), timeout=30)
    check(j["state"] == "failed" and j["array"]["states"]["completed"] == 4
          and j["array"]["states"]["failed"] == 2, "%s" % j["array"])
    for i in (0, 1):
        e = c.job(b + 1 + i)
        check(e["state"] == "failed" and "NeverSatisfied" in
              e.get("reason", ""), "element %d: %s %r" %
              (i, e["state"], e.get("reason")))
    # %N counts what runs: elements waiting on their aftercorr do not keep
    # the next ones from running (a_0 and a_1 wait for a file; b_2 and
    # b_3 run, and end, meanwhile).
    go = os.path.join(c.root, "go")
    a = c.submit("--array", "0-3", "--", "sh", "-c",
                 "[ $ALLOT_ARRAY_INDEX -ge 2 ] || while [ ! -e %s ]; do "
                 "sleep 0.1; done" % go)
    b = c.submit("--array", "0-3%2", "--dependency", "aftercorr:%d" % a,
                 "--", "true")
    wait_for(lambda: c.job(b)["array"]["states"]["completed"] == 2, 30,
             "b_2 and b_3 while b_0 and b_1 wait")
    check(c.job(a + 1)["state"] == "running", "a_0 still runs")
    open(go, "w").close()
    c.wait_state(b, "completed", timeout=30)

    # singleton against a held array of the same name and user.
    h = c.submit("--name", "solo", "--array", "0-2", "--hold", "--", "true")
    s = c.submit("--name", "solo", "--dependency", "singleton", "--", "true")
    other = c.submit("--name", "other", "--dependency", "singleton", "--",
                     "true")
    c.wait_state(other, "completed")
    j = wait_for(lambda: (lambda j: j if j.get("reason") else None)(
        c.job(s)), 10, "the singleton's reason")
    check(j["state"] == "pending" and "(Dependency)" in j["reason"],
          "singleton behind a held array: %s %r" % (j["state"], j["reason"]))
    c.cli("release", str(h))
    c.wait_state(h, "completed", timeout=30)
    j = c.wait_state(s, "completed", timeout=30)
    check(j["start_ms"] >= c.job(h)["end_ms"],
          "the singleton started after the array ended")
    # An element of an array with singleton is not held up by its own
    # array's parent.
    e = c.submit("--name", "solo2", "--array", "0-1", "--dependency",
                 "singleton", "--", "true")
    c.wait_state(e, "completed", timeout=30)


def scenario_array_counts(c):
    """/metrics counts an array's elements, those without a job yet
    included, by state and reason, and its cancelled ones when it ends; a
    queue's demand includes them; `allot history` lists the elements that
    ended, by ID_INDEX."""
    c.start_server("--usage-interval", "1")
    c.start_agent("n1", "8xH100-80GB")
    a = c.submit("--array", "0-2999", "--gpus", "1", "--", "sleep", "60")
    h = c.submit("--array", "0-9", "--hold", "--", "true")
    wait_for(lambda: c.job(a)["array"]["states"]["running"] == 8, 20,
             "eight elements running")

    def metric(text, line):
        for x in text.splitlines():
            if x.startswith(line + " "):
                return float(x.split()[-1])
        return None

    s, text = c.api("GET", "/metrics")
    want = {'allot_jobs{queue="default",state="pending",class="train"}': 2992,
            'allot_jobs{queue="default",state="held",class="train"}': 10,
            'allot_jobs{queue="default",state="running",class="train"}': 8,
            'allot_pending_jobs{reason="held"}': 10}
    for k, v in want.items():
        check(metric(text, k) == v, "%s: %s, not %s" % (k, metric(text, k),
                                                       v))
    pend = sum(float(x.split()[-1]) for x in text.splitlines()
               if x.startswith("allot_pending_jobs{") and "held" not in x)
    check(pend == 2992 and metric(text, 'allot_pending_jobs{reason='
                                  '"array"}') > 0,
          "pending by reason: %s" % [x for x in text.splitlines()
                                     if x.startswith("allot_pending_jobs")])
    q = [x for x in c.api("GET", "/v1/queues")[1]["queues"]
         if x["name"] == "default"][0]
    check(q["demand"]["gpu"] == 3000, "the queue's demand: %s" % q["demand"])
    c.cli("cancel", str(a))
    c.cli("cancel", str(h))
    s, text = c.api("GET", "/metrics")
    n = metric(text, 'allot_jobs_ended_total{state="cancelled"}')
    check(n == 3010, "3010 elements cancelled, the parents not counted: %s"
          % n)

    # The usage history's pending demand: elements without jobs, and not
    # those named (cancelled) before their turn.
    s, r = c.api("POST", "/v1/queues", {
        "name": "capped", "quota": {"gpu": {"deserved": 0, "limit": 0}}})
    check(s == 201, "queue capped: %s %s" % (s, r))
    k = c.submit("--queue", "capped", "--gpus", "1", "--array", "0-9%1",
                 "--", "true")
    c.cli("cancel", "%d_7" % k)
    c.cli("cancel", "%d_8" % k)
    t0 = int(time.time()) + 1  # a step begun after the cancels

    def pending():
        u = c.api("GET", "/v1/usage?by=queue&queue=capped&from=%d" % t0)[1]
        p = u["series"][0]["pending"] if u.get("series") else []
        return p[-1] if p else None
    got = wait_for(pending, 15, "a usage sample of queue capped")
    check(got == 8.0, "8 elements pending, not %s" % got)
    c.cli("cancel", str(k))

    b = c.submit("--array", "0-2", "--", "true")
    c.wait_state(b, "completed", timeout=30)
    rows = [r.split() for r in c.cli("history").stdout.splitlines()[1:]]
    ids = [r[0] for r in rows]
    for i in range(3):
        check("%d_%d" % (b, i) in ids and "%d_%d" % (h, i) in ids,
              "history lists the elements: %s" % ids)
    check(str(b) not in ids and str(a) not in ids,
          "and not the arrays' parents: %s" % ids)
    hist = json.loads(c.cli("history", "--json", "--state",
                            "completed").stdout)
    check(sorted(x["array_index"] for x in hist
                 if x.get("array_job_id") == b) == [0, 1, 2],
          "history --json: %s" % [(x["id"], x.get("array_index"))
                                  for x in hist])


def scenario_sweep_script(c):
    """#ALLOT --sweep in a job script makes the array: the values in the
    script's text and in ALLOT_SWEEP_*; the command line's --sweep of a
    name replaces the script's; a name twice is a usage error."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    sh = os.path.join(c.root, "sweep.sh")
    with open(sh, "w") as f:
        f.write("#!/bin/sh\n#ALLOT --sweep lr=1e-3,1e-4 --cpus 0.5\n"
                "#ALLOT --sweep bs=32,64\n"
                "echo lr={lr} bs={bs} $ALLOT_SWEEP_LR $ALLOT_SWEEP_BS\n")
    a = c.submit(sh)
    j = c.wait_state(a, "completed", timeout=30)
    check(j["array"]["count"] == 4 and j["cpu_milli"] == 500,
          "four elements: %s" % j)
    got = [c.cli("logs", "%d_%d" % (a, i)).stdout.split() for i in range(4)]
    want = [["lr=%s" % lr, "bs=%s" % bs, lr, bs]
            for lr in ("1e-3", "1e-4") for bs in ("32", "64")]
    check(got == want, "the combinations: %s" % got)
    b = c.submit("--sweep", "bs=8", "--array", "%1", sh)
    j = c.wait_state(b, "completed", timeout=30)
    check(j["array"]["spec"] == "0-1%1", "the command line's bs: %s" %
          j["array"])
    got = [c.cli("logs", "%d_%d" % (b, i)).stdout.split() for i in range(2)]
    check(got == [["lr=1e-3", "bs=8", "1e-3", "8"],
                  ["lr=1e-4", "bs=8", "1e-4", "8"]], "%s" % got)
    with open(sh, "w") as f:
        f.write("#!/bin/sh\n#ALLOT --sweep lr=1\n#ALLOT --sweep lr=2\n"
                "echo {lr}\n")
    p = c.cli("submit", sh, ok=False)
    check(p.returncode == 2 and "--sweep lr is given twice" in p.stderr,
          "a name twice: %d %r" % (p.returncode, p.stderr))
    with open(sh, "w") as f:
        f.write("#!/bin/sh\n#ALLOT --sweep lr=\necho {lr}\n")
    p = c.cli("submit", sh, ok=False)
    check(p.returncode == 2 and "sweep.sh:2: --sweep" in p.stderr and
          "an empty value" in p.stderr, "a bad line: %d %r" %
          (p.returncode, p.stderr))


SCENARIOS = {
    "dependency": scenario_dependency,
    "array_10k": scenario_array_10k,
    "array_limit": scenario_array_limit,
    "array_sbatch": scenario_array_sbatch,
    "array_errors": scenario_array_errors,
    "sweep": scenario_sweep,
    "array_restart": scenario_array_restart,
    "array_limit_hold": scenario_array_limit_hold,
    "array_never": scenario_array_never,
    "array_counts": scenario_array_counts,
    "sweep_script": scenario_sweep_script,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
