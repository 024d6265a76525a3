#!/usr/bin/env python3
"""End-to-end tests of pipelines (`allot pipeline`), driven as a user
would: a real `allot server`, agents with emulated GPUs on loopback, the
`allot` command.  Runs on e2e.py's harness (its Cluster, checks and
runner).

Usage: e2e_pipelines.py [pg:]SCENARIO PATH/TO/allot
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

# prep (CPU) -> train (2 GPUs) -> inference fanned out over three shards
# (an array of 1-GPU elements) -> report (CPU): each stage appends its name
# to ORDER and hands its output to the next through the pipeline's
# directory.
FOUR_STAGES = """\
name: mini
params:
  epochs: "1"
env:
  ORDER: %(order)s
stages:
  - name: prep
    cpus: 1
    script: |
      echo prep >> "$ORDER"
      echo "data for $ALLOT_PIPELINE_ID" > "$ALLOT_PIPELINE_DIR/data"
  - name: train
    needs: [prep]
    gpus: 2
    time: 10m
    script: |
      sleep 0.3
      echo train >> "$ORDER"
      test "$ALLOT_STAGE" = train
      cat "$ALLOT_PIPELINE_DIR/data" > "$ALLOT_PIPELINE_DIR/model"
      echo "epochs ${epochs}" >> "$ALLOT_PIPELINE_DIR/model"
  - name: infer
    needs: [train]
    gpus: 1
    array: 0-2
    command: [sh, -c, 'echo infer-$ALLOT_ARRAY_INDEX >> "$ORDER"; cp "$ALLOT_PIPELINE_DIR/model" "$ALLOT_PIPELINE_DIR/out-$ALLOT_ARRAY_INDEX"']
  - name: report
    needs: [infer]
    mem: 64M
    script: |
      echo report >> "$ORDER"
      cat "$ALLOT_PIPELINE_DIR"/out-* > "$ALLOT_PIPELINE_DIR/report"
"""


def write(c, name, text):
    path = os.path.join(c.root, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def show(c, pid):
    return json.loads(c.cli("pipeline", "show", "--json", str(pid)).stdout)


def wait_pipeline(c, pid, states, timeout=40):
    states = (states,) if isinstance(states, str) else states
    return wait_for(lambda: (lambda p: p if p["state"] in states else None)(
        show(c, pid)), timeout, "pipeline %d to be %s" % (pid, "/".join(states)))


def stage(p, name):
    return [s for s in p["stage_list"] if s["name"] == name][0]


def scenario_pipeline_run(c):
    """A four-stage pipeline with a fan-out (an array stage), through the
    CLI: one submission creates every stage; they run in the graph's
    order, each after what it needs, handing artefacts along through
    ALLOT_PIPELINE_DIR; show draws the graph, ls lists it."""
    c.start_server()
    c.start_agent("n1", "4xH100-80GB")
    order = os.path.join(c.root, "order")
    f = write(c, "mini.yaml", FOUR_STAGES % {"order": order})
    before = c.api("GET", "/v1/jobs?limit=1000")[1]["jobs"]
    pid = int(c.cli("pipeline", "submit", f, "--set", "epochs=3").stdout)
    jobs = c.api("GET", "/v1/jobs?limit=1000")[1]["jobs"]
    check(len(jobs) == len(before) + 4, "one submission, four stage jobs: "
          "%d" % (len(jobs) - len(before)))
    p = wait_pipeline(c, pid, ("completed", "failed"))
    check(p["state"] == "completed" and p["completed"] == 4 and
          p["stages"] == 4, "pipeline completed: %s" % p)
    ran = open(order).read().split()
    check(ran[0] == "prep" and ran[1] == "train" and
          sorted(ran[2:5]) == ["infer-0", "infer-1", "infer-2"] and
          ran[5:] == ["report"], "stages ran in the graph's order: %s" % ran)
    for s in p["stage_list"]:
        check(s["state"] == "completed", "stage %s: %s" % (s["name"], s))
    t, r = stage(p, "train"), stage(p, "report")
    check(t["needs"] == ["prep"] and r["needs"] == ["infer"] and
          t["gpus"] == 2, "needs: %s" % p)
    check(t["start_ms"] >= stage(p, "prep")["end_ms"] and
          r["start_ms"] >= stage(p, "infer")["end_ms"],
          "a stage starts after what it needs ended: %s" % p)
    # The artefacts went along: the report holds both shards' copies of
    # the model, which holds prep's data and the parameter --set gave.
    dirs = os.listdir(os.path.join(c.root, ".allot-pipelines"))
    check(len(dirs) == 1, "one directory for the pipeline: %s" % dirs)
    rep = open(os.path.join(c.root, ".allot-pipelines", dirs[0],
                            "report")).read()
    want = "data for %d\nepochs 3\n" % pid
    check(rep == want * 3, "the report: %r" % rep)
    out = c.cli("pipeline", "show", str(pid)).stdout
    check("pipeline %d mini" % pid in out and "[prep ok]" in out and
          "-> [train ok]\n  -> [infer ok]\n  -> [report ok]" in out,
          "show draws the graph:\n%s" % out)
    ls = c.cli("pipeline", "ls").stdout
    check(("%d" % pid) in ls and "completed" in ls and "4/4" in ls,
          "ls: %s" % ls)
    # A second pipeline after it: ids after the array's elements.
    q = int(c.cli("pipeline", "submit", f).stdout)
    check(q > stage(p, "report")["job"], "next pipeline's id: %d" % q)
    p2 = wait_pipeline(c, q, ("completed", "failed"))
    check(p2["state"] == "completed" and p2["stages"] == 4, "%s" % p2)
    print("  4 stages (one fanned out over 3 GPUs) in order, artefacts "
          "handed along")


FAILING = """\
name: flaky
stages:
  - name: a
    command: ["true"]
  - name: b
    needs: a
    gpus: 1
    command: [sh, -c, 'test -e %(fixed)s']
  - name: c
    needs: [b]
    command: [sh, -c, 'echo c >> %(marks)s']
  - name: cleanup
    needs: [b]
    when: failure
    command: [sh, -c, 'echo cleanup >> %(marks)s']
  - name: final
    needs: [b]
    when: always
    command: [sh, -c, 'echo final >> %(marks)s']
"""


def scenario_pipeline_retry(c):
    """A failing stage: its `when: failure` cleanup runs, `when: always`
    runs, what needed it never runs (shown with the reason), the pipeline
    is failed; `retry` runs the failed stage again and the pipeline
    resumes from there to completion."""
    c.start_server()
    c.start_agent("n1", "2xH100-80GB")
    fixed = os.path.join(c.root, "fixed")
    marks = os.path.join(c.root, "marks")
    f = write(c, "flaky.yaml", FAILING % {"fixed": fixed, "marks": marks})
    pid = int(c.cli("pipeline", "submit", f).stdout)
    wait_for(lambda: stage(show(c, pid), "cleanup")["state"] == "completed" and
             stage(show(c, pid), "final")["state"] == "completed", 30,
             "cleanup and final to run")
    p = wait_pipeline(c, pid, "failed")
    # What needed b fails at once with Slurm's reason (it would otherwise
    # pend for ever).
    check(stage(p, "b")["state"] == "failed" and
          stage(p, "c")["state"] == "failed" and
          "DependencyNeverSatisfied" in stage(p, "c").get("reason", ""),
          "b failed, c marked: %s" % p)
    check(stage(p, "cleanup")["when"] == "failure" and
          stage(p, "final")["when"] == "always", "when: %s" % p)
    got = sorted(open(marks).read().split())
    check(got == ["cleanup", "final"], "cleanup and final ran: %s" % got)
    out = c.cli("pipeline", "show", str(pid)).stdout
    check("[b FAILED]" in out and "[c FAILED]" in out and
          "DependencyNeverSatisfied" in out, "show: %s" % out)
    # Nothing to retry in a pipeline that did not fail: 409.
    open(fixed, "w").close()
    check(c.cli("pipeline", "retry", str(pid)).returncode == 0, "retry")
    p = wait_pipeline(c, pid, ("completed", "failed"))
    check(p["state"] == "completed" and stage(p, "b")["restarts"] == 1,
          "retried: b ran again and the pipeline completed: %s" % p)
    got = sorted(open(marks).read().split())
    check(got == ["c", "cleanup", "final"],
          "c ran once after the retry, cleanup not again: %s" % got)
    r = c.cli("pipeline", "retry", str(pid), ok=False)
    check(r.returncode == 1 and "no failed or cancelled stage" in r.stderr,
          "retry of a completed pipeline: %r" % r.stderr)
    # cancel: every stage not ended.
    slow = write(c, "slow.yaml", "stages:\n  - name: s\n    command: "
                 "[sleep, '30']\n  - name: t\n    needs: [s]\n    command: "
                 "['true']\n")
    sid = int(c.cli("pipeline", "submit", slow).stdout)
    wait_for(lambda: stage(show(c, sid), "s")["state"] == "running", 20,
             "s to run")
    c.cli("pipeline", "cancel", str(sid))
    p = show(c, sid)
    check(p["state"] == "cancelled" and all(
        s["state"] == "cancelled" for s in p["stage_list"]),
        "cancelled: %s" % p)
    print("  failure cleanup, retry to completion, cancel")


def scenario_pipeline_errors(c):
    """Invalid files are refused as a whole, with the line and the reason;
    no job is created."""
    c.start_server()
    cases = [
        ("stages:\n  - name: a\n    needs: [b]\n    command: [x]\n"
         "  - name: b\n    needs: [a]\n    command: [x]\n",
         "line 2: stage 'a' is on a cycle of needs"),
        ("stages:\n  - name: a\n    command: [x]\n  - name: b\n"
         "    needs: [zz]\n    command: [x]\n",
         "line 4: stage 'b': needs 'zz', no such stage"),
        ("stages:\n  - name: a\n    command: [x]\n    gpuz: 2\n",
         "line 2: stage 'a': unknown field 'gpuz'"),
        ("stages:\n  - name: a\n    command: [x]\n    mem: lots\n",
         "line 2: stage 'a': mem must be a size"),
        ("stages:\n  - name: a\n    command: [x]\n  - name: a\n"
         "    command: [y]\n", "line 4: stage 'a' named twice"),
        ("stages:\n  - name: a\n    command: [x\n", "line 4: YAML"),
        ("stages:\n  - name: a\n    command: [x]\n    when: later\n",
         "when must be success, failure or always"),
        ("stages:\n  - name: a\n    command: [x]\n    queue: nope\n",
         "stage 'a': queue 'nope'"),
        ('{"stages": [{"name": "a", "script": "true", "gpus": -1}]}',
         "stage 'a': gpus must be a whole number"),
        ("stages:\n  - name: a\n    command: ['${nope}']\n",
         "line 2: stage 'a': no parameter 'nope'"),
    ]
    n0 = len(c.api("GET", "/v1/jobs?limit=1000")[1]["jobs"])
    for i, (text, want) in enumerate(cases):
        f = write(c, "bad%d.yaml" % i, text)
        p = c.cli("pipeline", "submit", f, ok=False)
        check(p.returncode == 1 and want in p.stderr,
              "case %d: exit %d, %r should say %r" % (i, p.returncode,
                                                     p.stderr, want))
    # Two problems at once are both reported.
    f = write(c, "two.yaml", "stages:\n  - name: a\n    command: [x]\n"
              "    gpuz: 1\n  - name: b\n    command: [x]\n    cpus: -1\n")
    p = c.cli("pipeline", "submit", f, ok=False)
    check("gpuz" in p.stderr and "cpus must be" in p.stderr,
          "every problem reported: %r" % p.stderr)
    ok = write(c, "ok.yaml", "params:\n  x: 1\nstages:\n  - name: a\n"
               "    command: [echo, '${x}']\n")
    p = c.cli("pipeline", "submit", ok, "--set", "y=2", ok=False)
    check(p.returncode == 1 and "--set y: the file has no such parameter" in
          p.stderr, "--set of an unknown parameter: %r" % p.stderr)
    p = c.cli("pipeline", "submit", ok, "--set", "novalue", ok=False)
    check(p.returncode == 2, "--set without '=': %d" % p.returncode)
    s, r = c.api("POST", "/v1/pipelines", {"file": 7})
    check(s == 400, "a body without the file's text: %s %s" % (s, r))
    n1 = len(c.api("GET", "/v1/jobs?limit=1000")[1]["jobs"])
    check(n1 == n0, "refused files created no job (%d, %d)" % (n0, n1))
    s, r = c.api("GET", "/v1/pipelines/12345")
    check(s == 404, "no such pipeline: %s" % s)
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    pid = int(c.cli("pipeline", "submit", ok).stdout)
    p = c.cli("pipeline", "cancel", str(pid), token=bob, ok=False)
    check(p.returncode == 1 and "not yours" in p.stderr,
          "another user's pipeline: %r" % p.stderr)
    check(str(pid) not in c.cli("pipeline", "ls", token=bob).stdout,
          "ls shows only one's own")
    print("  %d invalid files refused with their line" % len(cases))


def scenario_pipeline_crash(c):
    """kill -9 of the controller mid-pipeline loses nothing: the pipeline
    and its stages come back, and each stage runs exactly once."""
    c.start_server()
    c.start_agent("n1", "2xH100-80GB")
    marks = os.path.join(c.root, "marks")
    text = "stages:\n"
    prev = None
    for k in range(6):
        text += ("  - name: s%d\n    gpus: 1\n    command: [sh, -c, "
                 "'echo s%d >> %s; sleep 0.4']\n" % (k, k, marks))
        if prev:
            text += "    needs: [%s]\n" % prev
        prev = "s%d" % k
    pid = int(c.cli("pipeline", "submit", write(c, "chain.yaml", text)).stdout)
    wait_for(lambda: os.path.exists(marks) and
             len(open(marks).read().split()) >= 2, 30, "two stages to run")
    c.kill_server(signal.SIGKILL)
    c.start_server()
    p = wait_pipeline(c, pid, ("completed", "failed"), timeout=60)
    check(p["state"] == "completed" and len(p["stage_list"]) == 6,
          "the pipeline survived: %s" % p)
    got = open(marks).read().split()
    check(got == ["s%d" % k for k in range(6)],
          "each stage ran once, in order: %s" % got)
    print("  kill -9 mid-pipeline: 6 stages, each once")


LOOKAHEAD = """\
name: la
queue: la
stages:
  - name: a
    class: inference
    gpus: 1
    time: 10m
    command: [sh, -c, 'sleep 8']
  - name: b
    needs: [a]
    class: inference
    gpus: 2
    time: 10m
    command: ["true"]
"""


def scenario_pipeline_lookahead(c):
    """The look-ahead is set on the controller (--lookahead-depth,
    --lookahead-horizon, --lookahead-hold) and shown by GET /v1/config.
    With --lookahead-hold, stage b (2 GPUs) after a (1 GPU, 10 minutes
    expected) on a 2-GPU node: the GPU a leaves free is held for b, lent
    to a job that ends before a is expected to, refused to one that does
    not; b starts when a ends, before that long job."""
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                        os.path.join(c.root, "bad"), "--lookahead-depth", "-1")
    check(rc == 2 and "--lookahead-depth" in err,
          "--lookahead-depth -1 refused: %d %r" % (rc, err))
    c.start_server("--lookahead-hold", "--lookahead-horizon", "3600",
                   "--lookahead-depth", "4")
    s, cfg = c.api("GET", "/v1/config")
    check(s == 200, "GET /v1/config: %s %s" % (s, cfg))
    sch = cfg["scheduler"]
    check(sch["lookahead_hold"] is True and sch["lookahead_depth"] == 4 and
          sch["lookahead_horizon"] == 3600 and sch["ignore_deps"] is False,
          "the look-ahead as set: %s" % sch)
    s, cfg = c.api("GET", "/v1/config", token=None)
    check(s == 401, "GET /v1/config needs a token: %s" % s)
    c.start_agent("n1", "2xH100-80GB")
    # Inference work is not preemptible (nothing borrows the held GPU)
    # and runs within its queue's deserved GPUs.
    s, r = c.api("POST", "/v1/queues", {"name": "la",
                                         "quota": {"gpu": {"deserved": 2}}})
    check(s == 201, "queue la: %s %s" % (s, r))
    pid = int(c.cli("pipeline", "submit", write(c, "la.yaml", LOOKAHEAD))
              .stdout)
    p = show(c, pid)
    a, b = stage(p, "a")["job"], stage(p, "b")["job"]
    c.wait_state(a, "running")
    long_job = c.submit("--queue", "la", "--class", "inference", "--gpus",
                        "1", "--time", "2h", "--", "sleep", "30")
    short = c.submit("--queue", "la", "--class", "inference", "--gpus", "1",
                     "--time", "5m", "--", "sleep", "1")
    c.wait_state(short, "completed")
    check(c.job(long_job)["state"] == "pending" and
          c.job(a)["state"] == "running",
          "the held GPU is not given to a job that ends after a: %s" %
          c.job(long_job))
    jb = c.wait_state(b, ("running", "completed"), timeout=30)
    lj = c.job(long_job)
    check(lj["state"] == "pending" or lj["start_ms"] >= jb["start_ms"],
          "b started before the long job: %s %s" % (jb, lj))
    check(c.job(a)["end_ms"] <= jb["start_ms"], "b after a")
    c.wait_state(long_job, "running", timeout=30)
    print("  look-ahead set on the controller: a GPU held for the next "
          "stage, lent to a short job, refused to a long one")


SWEEP = """\
name: grid
env:
  OUT: %(out)s
stages:
  - name: tune
    gpus: 1
    sweep:
      lr: [0.1, "1e-3"]
      bs: [32, 64]
    array: "%%2"
    command: [sh, -c, 'echo "{lr} {bs} $ALLOT_ARRAY_INDEX" >> "$OUT"']
  - name: pick
    needs: [tune]
    command: [sh, -c, 'echo picked >> "$OUT"']
"""


def scenario_pipeline_sweep(c):
    """A stage with a sweep: every combination of its axes is one element
    of the stage's array (at most 2 at a time), {NAME} in its command the
    element's value; the stage after it runs once every combination has.
    A placeholder no axis names and a sweep that is not a mapping are
    refused with the stage's line."""
    c.start_server()
    c.start_agent("n1", "2xH100-80GB")
    out = os.path.join(c.root, "out")
    pid = int(c.cli("pipeline", "submit",
                    write(c, "grid.yaml", SWEEP % {"out": out})).stdout)
    p = wait_pipeline(c, pid, ("completed", "failed"))
    check(p["state"] == "completed", "the sweep pipeline completed: %s" % p)
    lines = open(out).read().splitlines()
    check(lines[-1] == "picked" and len(lines) == 5,
          "four combinations, then pick: %s" % lines)
    got = sorted(tuple(x.split()[:2]) for x in lines[:4])
    check(got == [("0.1", "32"), ("0.1", "64"), ("1e-3", "32"),
                  ("1e-3", "64")], "every combination once: %s" % got)
    tune = c.job(stage(p, "tune")["job"])
    check(tune["array"]["spec"] == "0-3%2" and
          len(tune["array"]["sweep"]) == 2, "tune is an array of 4, "
          "2 at a time: %s" % tune["array"])
    bad = SWEEP.replace('{lr} {bs}', '{lr} {oops}') % {"out": out}
    r = c.cli("pipeline", "submit", write(c, "bad.yaml", bad), ok=False)
    check(r.returncode != 0 and "{oops}" in r.stderr and
          "line" in r.stderr, "an unknown placeholder: %s" % r.stderr)
    bad = SWEEP.replace("      lr: [0.1, \"1e-3\"]\n      bs: [32, 64]\n",
                        "      - 1\n") % {"out": out}
    r = c.cli("pipeline", "submit", write(c, "bad2.yaml", bad), ok=False)
    check(r.returncode != 0 and "sweep must be a mapping" in r.stderr and
          "line 5" in r.stderr, "a sweep that is a list: %s" % r.stderr)
    # An empty sweep, and one of more than 16 names: said in the file's
    # terms, not the API's.
    for k, axes in ((4, "{}"), (5, "{%s}" % ", ".join(
            "a%d: [1]" % i for i in range(17)))):
        bad = SWEEP.replace("\n      lr: [0.1, \"1e-3\"]\n      bs: [32, 64]\n",
                            " %s\n" % axes).replace("{lr} {bs}", "x")
        r = c.cli("pipeline", "submit",
                  write(c, "bad%d.yaml" % k, bad % {"out": out}), ok=False)
        check(r.returncode != 0 and "sweep must have 1 to 16 names" in
              r.stderr and "line 5" in r.stderr and "{" not in r.stderr,
              "sweep: %s: %s" % (axes, r.stderr))
    # lr and LR would both be ALLOT_SWEEP_LR: one value lost.
    bad = SWEEP.replace("      bs: [32, 64]\n", "      bs: [32, 64]\n"
                        "      LR: [1, 2]\n") % {"out": out}
    r = c.cli("pipeline", "submit", write(c, "bad3.yaml", bad), ok=False)
    check(r.returncode != 0 and "differ only in case" in r.stderr and
          "line" in r.stderr, "axes lr and LR: %s" % r.stderr)
    print("  a sweep stage: 4 combinations, 2 at a time, then the next "
          "stage")


CHAIN_B = """\
name: b
stages:
  - name: q
    gpus: 1
    time: 1m
    command: ["true"]
  - name: r
    needs: [q]
    gpus: 1
    time: 30m
    command: ["true"]
"""

CHAIN_A_ARRAY = """\
name: a
stages:
  - name: p
    gpus: 1
    time: 1m
    command: ["true"]
  - name: fan
    needs: [p]
    gpus: 1
    time: 5m
    array: 0-7%1
    command: ["true"]
"""

CHAIN_A_FAILURE = """\
name: a
stages:
  - name: p
    gpus: 1
    time: 1m
    command: ["true"]
  - name: recover
    needs: [p]
    when: failure
    gpus: 1
    time: 4h
    command: ["true"]
"""


def scenario_pipeline_critical_path(c):
    """The controller gives the core array stages and failure edges: on a
    1-GPU node busy with a blocker, stage q (pipeline b, older; 30 min
    after it) and stage p (pipeline a) wait with the same size and time.
    p goes first when an array of 8 elements of 5 min, one at a time (40
    min), waits on it, and when a 4-hour cleanup hangs on its failure (a
    quarter: 1 h); q goes first when p has nothing after it."""
    c.start_server()
    c.start_agent("n1", "1xH100-80GB")
    for name, text in (("array", CHAIN_A_ARRAY),
                       ("failure", CHAIN_A_FAILURE), ("none", None)):
        blocker = c.submit("--gpus", "1", "--", "sleep", "2")
        c.wait_state(blocker, "running")
        b = int(c.cli("pipeline", "submit", write(c, "b.yaml", CHAIN_B))
                .stdout)
        if text is not None:
            a = int(c.cli("pipeline", "submit",
                          write(c, "a-%s.yaml" % name, text)).stdout)
        else:
            a = c.submit("--gpus", "1", "--time", "1m", "--", "true")
        q = stage(show(c, b), "q")["job"]
        p = stage(show(c, a), "p")["job"] if text is not None else a
        jp = c.wait_state(p, "completed", timeout=30)
        jq = c.wait_state(q, "completed", timeout=30)
        first = "p" if jp["start_ms"] < jq["start_ms"] else "q"
        want = "q" if text is None else "p"
        check(first == want, "%s: %s started first, want %s: p %s q %s" %
              (name, first, want, jp["start_ms"], jq["start_ms"]))
        wait_pipeline(c, b, ("completed", "failed"))
        if text is not None:
            wait_pipeline(c, a, ("completed", "failed"))
    print("  an array stage's rounds and a failure edge's quarter order "
          "the stages that wait on the same GPU")


CLEANUP = """\
name: ok
stages:
  - name: train
    command: ["true"]
  - name: cleanup
    needs: [train]
    when: failure
    command: ["true"]
  - name: eval
    needs: [train]
    command: ["true"]
"""


def scenario_pipeline_cleanup_unrun(c):
    """A pipeline whose stages all succeed completes, though its cleanup
    for a failure (when: failure) did not run: that stage is marked as
    never able to run, but it is no failure of the pipeline's."""
    c.start_server()
    c.start_agent("n1", "1xH100-80GB")
    pid = int(c.cli("pipeline", "submit", write(c, "ok.yaml", CLEANUP))
              .stdout)
    p = wait_pipeline(c, pid, ("completed", "failed"))
    check(p["state"] == "completed" and
          stage(p, "train")["state"] == "completed" and
          stage(p, "eval")["state"] == "completed",
          "a pipeline whose cleanup did not run completed: %s" % p)
    check(stage(p, "cleanup")["state"] == "failed" and
          "DependencyNeverSatisfied" in stage(p, "cleanup")["reason"],
          "the cleanup is marked as never run: %s" % stage(p, "cleanup"))
    ls = c.cli("pipeline", "ls").stdout
    check("completed" in ls and "failed" not in ls, "ls: %s" % ls)
    # Nothing to run again: the cleanup would only be marked again.
    r = c.cli("pipeline", "retry", str(pid), ok=False)
    check(r.returncode == 1 and "no failed or cancelled stage" in r.stderr,
          "retry of a completed pipeline: %d %s" % (r.returncode, r.stderr))
    # The same with array stages: a fan-out, and a cleanup of 2 elements.
    text = CLEANUP.replace('    command: ["true"]\n  - name: cleanup',
                           '    array: 0-2\n    command: ["true"]\n'
                           '  - name: cleanup').replace(
        "    when: failure\n", "    when: failure\n    array: 0-1\n")
    pid = int(c.cli("pipeline", "submit", write(c, "arr.yaml", text)).stdout)
    p = wait_pipeline(c, pid, ("completed", "failed"))
    check(p["state"] == "completed" and
          stage(p, "cleanup")["state"] == "failed" and
          c.job(stage(p, "train")["job"]).get("array") is not None,
          "an array cleanup that did not run: %s" % p)


SCENARIOS = {
    "pipeline_cleanup_unrun": scenario_pipeline_cleanup_unrun,
    "pipeline_run": scenario_pipeline_run,
    "pipeline_retry": scenario_pipeline_retry,
    "pipeline_errors": scenario_pipeline_errors,
    "pipeline_crash": scenario_pipeline_crash,
    "pipeline_lookahead": scenario_pipeline_lookahead,
    "pipeline_sweep": scenario_pipeline_sweep,
    "pipeline_critical_path": scenario_pipeline_critical_path,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
