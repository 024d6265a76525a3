#!/usr/bin/env python3
"""End-to-end tests of the node: tasks confined in real cgroups (CPU,
memory, processes, devices; OOM kills reported as the job's reason; every
process of a task killed with it; cgroups removed after a task and after an
agent's crash), GPU health from the fake NVML (drain, requeue, resume), and
MPS for fractional GPUs with a stand-in nvidia-cuda-mps-control.  The
harness is e2e.py's (real server, agents, the CLI).

Each scenario confines its agent's tasks under a cgroup root of its own,
below the test's own cgroup, and removes it at the end: other agents on the
machine are never touched.  The cgroup scenarios need root and a memory
controller; without them they say so and pass as skipped (exit 77).

Usage: e2e_node.py SCENARIO PATH/TO/allot
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

SKIP = 77


def probe(c, root, extra=()):
    p = subprocess.run([c.allot, "agent", "--probe", "--cgroup-root", root,
                        "--fake-gpus", "1xT4"] + list(extra), capture_output=True,
                       text=True, timeout=30, env=c.env)
    check(p.returncode == 0, "agent --probe: %s" % p.stderr)
    return json.loads(p.stdout)["cgroups"]


def cg_setup(c):
    """A private cgroup root for this test; returns (root, {controller:
    directory}) or None when cgroups cannot be used here."""
    if os.geteuid() != 0:
        return None
    root = "allot-e2e-%d" % os.getpid()
    cg = probe(c, root)
    if not cg.get("enabled"):
        print("skipped: %s" % cg.get("error"), file=sys.stderr)
        return None
    dirs = cg["roots"] if cg["version"] == 1 else {
        k: cg["root"] for k in ("cpu", "cpuacct", "memory", "pids")}
    c.cg_dirs = dirs
    c.cg_version = cg["version"]
    return root, dirs


def cg_cleanup(c):
    """Removes what the test's root holds (tasks killed first) and the
    root itself."""
    for d in set(getattr(c, "cg_dirs", {}).values()):
        if not os.path.isdir(d):
            continue
        for sub in os.listdir(d):
            p = os.path.join(d, sub)
            if not os.path.isdir(p):
                continue
            try:
                for pid in open(os.path.join(p, "cgroup.procs")).read().split():
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
            for _ in range(50):
                try:
                    os.rmdir(p)
                    break
                except OSError:
                    time.sleep(0.1)
        try:
            os.rmdir(d)
        except OSError:
            pass


def task_cgroups(c):
    """The task cgroups under the root, per controller directory."""
    out = set()
    for d in set(c.cg_dirs.values()):
        if os.path.isdir(d):
            out |= {x for x in os.listdir(d) if x.startswith("t") and
                    os.path.isdir(os.path.join(d, x))}
    return out


def read(path):
    with open(path) as f:
        return f.read().strip()


def alive(pid):
    try:
        st = read("/proc/%d/stat" % pid)
        return st.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def with_cgroups(fn):
    def run(c):
        if cg_setup(c) is None:
            raise SystemExit(SKIP)
        try:
            fn(c)
        finally:
            c.stop()
            cg_cleanup(c)
    run.__doc__ = fn.__doc__
    return run


@with_cgroups
def scenario_cgroup_limits(c):
    """A task runs in a cgroup of its own with its job's --cpus as its CPU
    quota, its --mem as its memory limit (swap included) and the agent's
    --cgroup-pids-max; a CPU-bound task at --cpus 0.5 gets about half a
    core; the cgroup goes when the task ends."""
    root, dirs = cg_setup(c)
    c.start_server()
    c.start_agent("n1", "2xH100-80GB",
                  extra=["--cgroup-root", root, "--cgroup-pids-max", "64",
                         "--telemetry-ms", "300"])
    marker = os.path.join(c.root, "started")
    j = c.submit("--cpus", "0.5", "--mem", "96M", "--", "sh", "-c",
                 "cat /proc/self/cgroup; touch %s; "
                 "while :; do :; done" % marker)
    c.wait_state(j, "running")
    wait_for(lambda: os.path.exists(marker), 15, "the task to start")
    name = wait_for(lambda: (lambda s: sorted(s)[0] if s else None)(
        task_cgroups(c)), 10, "the task's cgroup")
    check(name == "t%d.0.0" % j, "the cgroup is named for the task: %s" % name)
    if c.cg_version == 1:
        cpu = os.path.join(dirs["cpu"], name)
        check(read(cpu + "/cpu.cfs_quota_us") == "50000" and
              read(cpu + "/cpu.cfs_period_us") == "100000",
              "cpu quota 0.5 of a core: %s" % read(cpu + "/cpu.cfs_quota_us"))
        mem = os.path.join(dirs["memory"], name)
        check(read(mem + "/memory.limit_in_bytes") == str(96 << 20),
              "memory limit: %s" % read(mem + "/memory.limit_in_bytes"))
        if os.path.exists(mem + "/memory.memsw.limit_in_bytes"):
            check(read(mem + "/memory.memsw.limit_in_bytes") == str(96 << 20),
                  "no swap beyond the limit")
        check(read(os.path.join(dirs["pids"], name, "pids.max")) == "64",
              "pids.max")
        acct = os.path.join(dirs.get("cpuacct", dirs["cpu"]), name,
                            "cpuacct.usage")
        usage = lambda: int(read(acct)) / 1e9  # noqa: E731
    else:
        d = os.path.join(dirs["cpu"], name)
        check(read(d + "/cpu.max") == "50000 100000", "cpu.max: %s" %
              read(d + "/cpu.max"))
        check(read(d + "/memory.max") == str(96 << 20), "memory.max")
        check(read(d + "/pids.max") == "64", "pids.max")
        usage = lambda: int(  # noqa: E731
            read(d + "/cpu.stat").split()[1]) / 1e6
    # The task's processes are in it, the agent is not.
    procs = read(os.path.join(dirs["memory"], name, "cgroup.procs")).split()
    check(len(procs) >= 1 and str(c.agents["n1"].pid) not in procs,
          "the task's processes only: %s" % procs)
    # About half a core: CPU time over elapsed time, never much above 0.5
    # (on a busy machine it may get less).
    u0, t0 = usage(), time.monotonic()
    time.sleep(3)
    ratio = (usage() - u0) / (time.monotonic() - t0)
    print("cpu share at --cpus 0.5: %.2f of a core" % ratio)
    check(0.05 < ratio < 0.65, "about half a core: %.2f" % ratio)
    # Its use, from its cgroup, in the job and in `allot show`.
    pl = wait_for(lambda: (lambda p: p if p.get("cpu_usec", 0) > 300000
                           else None)(c.job(j)["placement"][0]), 10,
                  "the task's CPU time in the job")
    check(pl.get("mem_used", -1) > 0, "its memory in use: %s" % pl)
    show = c.cli("show", str(j)).stdout
    check(", CPU " in show and "memory peak" in show,
          "allot show says what it used: %r" % show)
    # A command `allot exec` starts in the job joins the task's cgroups:
    # the same limits, and it ends with the task.
    ex = c.cli("exec", str(j), "--", "cat", "/proc/self/cgroup").stdout
    check("/%s/%s" % (root, name) in ex,
          "allot exec runs in the task's cgroup: %r" % ex)
    c.cli("cancel", str(j))
    c.wait_state(j, "cancelled")
    wait_for(lambda: not task_cgroups(c), 15, "the cgroup to be removed")
    # Without --cpus and --mem: no limits, still its own cgroup.
    k = c.submit("--", "sh", "-c", "cat /proc/self/cgroup")
    c.wait_state(k, "completed")
    log = c.cli("logs", str(k)).stdout
    check("/%s/t%d.0.0" % (root, k) in log, "in its own cgroup: %r" % log)


ENDED = ("failed", "completed", "cancelled", "out_of_memory")
HOG = "b = b'x' * (400 << 20); print('survived', len(b))"


@with_cgroups
def scenario_cgroup_oom(c):
    """A task that allocates past its job's --mem is killed by the kernel
    and the job ends OUT_OF_MEMORY, with that reason; a task within its
    limit on the same node is unaffected.  The state as every door shows
    it (allot ls/show/history/report, sacct and squeue, the events, the
    metrics), an afternotok dependant that runs and an afterok one that
    never does, --retry that runs it again, an array whose element ran out
    of memory, a gang one of whose tasks did, a pipeline whose stage
    did."""
    root, dirs = cg_setup(c)
    c.start_server("--retry-backoff", "0")
    c.start_agent("n1", "2xH100-80GB", extra=["--cgroup-root", root])
    ok = c.submit("--mem", "64M", "--", "python3", "-c",
                  "b = b'x' * (16 << 20); print('fine', len(b))")
    gate = os.path.join(c.root, "gate")
    big = c.submit("--mem", "64M", "--", "sh", "-c",
                   "while [ ! -e %s ]; do sleep 0.1; done; "
                   "exec python3 -c \"%s\"" % (gate, HOG))
    notok = c.submit("--dependency", "afternotok:%d" % big, "--", "true")
    okdep = c.submit("--dependency", "afterok:%d" % big, "--", "true")
    open(gate, "w").close()
    jj = c.wait_state(big, ENDED, timeout=60)
    check(jj["state"] == "out_of_memory",
          "the job past its memory ended out_of_memory: %s" % jj)
    check(jj.get("reason", "").startswith("OUT_OF_MEMORY"),
          "the reason says OUT_OF_MEMORY: %r" % jj.get("reason"))
    check("64 MiB" in jj["reason"], "and the limit: %r" % jj["reason"])
    check("survived" not in c.cli("logs", str(big)).stdout,
          "the allocation did not succeed")
    show = c.cli("show", str(big)).stdout
    check("OUT_OF_MEMORY" in show, "allot show says why: %r" % show)
    check("killed by signal 9" in show and "out_of_memory" in show,
          "allot show: the state and the kill: %r" % show)
    okj = c.wait_state(ok, ENDED)
    check(okj["state"] == "completed", "the job within its limit completed")
    check(okj["placement"][0].get("mem_peak", 0) >= 16 << 20,
          "its memory peak, at least what it allocated: %s"
          % okj["placement"][0])
    # Slurm's dependencies take it for a failure.
    check(c.wait_state(notok, ENDED)["state"] == "completed",
          "the afternotok dependant ran")
    od = c.wait_state(okdep, ENDED)
    check(od["state"] == "failed" and
          "DependencyNeverSatisfied" in od.get("reason", ""),
          "the afterok dependant never runs: %s" % od)
    # --retry runs it again, as after a failure by exit code.
    rj = c.submit("--mem", "64M", "--retry", "1", "--", "python3", "-c", HOG)
    rr = c.wait_state(rj, ENDED, timeout=60)
    check(rr["state"] == "out_of_memory" and rr["restart_count"] == 1,
          "retried once, then out of memory: %s" % rr)
    hist = [e["event"] for e in c.job(rj).get("history", [])]
    check(hist.count("retry") == 1 and hist[-1] == "out_of_memory",
          "its history: %s" % hist)
    # An array whose element 1 runs out of memory ends so.
    arr = c.submit("--mem", "64M", "--array", "0-1", "--", "sh", "-c",
                   "[ \"$ALLOT_ARRAY_INDEX\" = 1 ] && exec python3 -c "
                   "\"%s\"; true" % HOG)
    aj = c.wait_state(arr, ENDED, timeout=60)
    check(aj["state"] == "out_of_memory" and
          aj["array"]["states"]["out_of_memory"] == 1 and
          aj["array"]["states"]["completed"] == 1,
          "the array ended out_of_memory: %s" % aj)
    # A gang ends out of memory when any of its tasks does: task 1 here,
    # while task 0 would sleep on (it is stopped with the job).
    gang = c.submit("--mem", "64M", "--tasks", "2", "--", "sh", "-c",
                    "[ \"$ALLOT_TASK_INDEX\" = 1 ] && exec python3 -c "
                    "\"%s\"; sleep 60" % HOG)
    gj = c.wait_state(gang, ENDED, timeout=30)
    check(gj["state"] == "out_of_memory" and
          gj["reason"].startswith("OUT_OF_MEMORY: task 1 "),
          "the gang ended out_of_memory by its task 1: %s" % gj)
    # allot ls and history name the state; ls filters by it.
    ls = c.cli("ls", "--state", "out_of_memory").stdout
    ids = [ln.split()[0] for ln in ls.splitlines()[1:]]
    check(str(big) in ids and str(rj) in ids and str(ok) not in ids,
          "allot ls --state out_of_memory: %r" % ls)
    row = [ln for ln in ls.splitlines() if ln.split()[0] == str(big)][0]
    check(row.split()[5] == "out_of_memory", "its STATE column: %r" % row)
    hi = c.cli("history", "--since", "-1h").stdout
    row = [ln for ln in hi.splitlines() if ln.split()[0] == str(big)]
    check(row and row[0].split()[4] == "out_of_memory" and
          row[0].split()[14] == "sig9", "allot history: %r" % hi)
    # allot report: among the failed, and counted apart.
    rep = json.loads(c.cli("report", "--since", "-1h", "--json").stdout)
    tot = rep["total"]
    check(tot["out_of_memory"] == 4 and tot["failed"] >= 4,
          "the report counts them failed, and apart: %s" % tot)
    # The events and the metrics.
    s_, body = c.api("GET", "/v1/events?follow=false&last=50&job=%d" % big)
    check(s_ == 200 and "event: job" in body and
          '"event":"out_of_memory"' in body.replace(" ", ""),
          "GET /v1/events has its end: %s %.600s" % (s_, body))
    s_, text = c.api("GET", "/metrics")
    check('allot_jobs_ended_total{state="out_of_memory"} 4' in text,
          "the metrics count them: %s" %
          [ln for ln in text.splitlines() if "ended_total" in ln])
    # Slurm's commands: OUT_OF_MEMORY, OOM for short; the job and its
    # one step (a job of no script is srun's: ID.0).
    bindir = os.path.join(c.root, "bin")
    os.makedirs(bindir, exist_ok=True)
    c.cli("slurm-commands", bindir)
    env = dict(c.env, PATH=bindir + ":" + c.env.get("PATH", "/usr/bin:/bin"))
    p = subprocess.run(["sacct", "-P", "-n", "--format=JobIdRaw,State",
                        "-j", str(big)], capture_output=True, text=True,
                       env=env, timeout=30)
    lines = p.stdout.split()
    check(p.returncode == 0 and "%d|OUT_OF_MEMORY" % big in lines and
          "%d.0|OUT_OF_MEMORY" % big in lines, "sacct: %r %r" %
          (p.stdout, p.stderr))
    p = subprocess.run(["sacct", "-P", "-n", "-X", "--format=JobIdRaw",
                        "-s", "OOM"], capture_output=True, text=True,
                       env=env, timeout=30)
    got = p.stdout.split()
    check(str(big) in got and str(ok) not in got, "sacct -s OOM: %r" % got)
    p = subprocess.run(["squeue", "-h", "-t", "OOM", "-o", "%i %t"],
                       capture_output=True, text=True, env=env, timeout=30)
    check("%d OOM" % big in p.stdout.splitlines(),
          "squeue -t OOM: %r %r" % (p.stdout, p.stderr))
    # A pipeline whose stage ran out of memory failed: what needs the stage
    # never runs, its cleanup for a failure does.
    pf = os.path.join(c.root, "p.yaml")
    with open(pf, "w") as f:
        f.write("name: oom\nstages:\n"
                "  - name: hog\n    mem: 64M\n"
                "    command: [python3, -c, \"%s\"]\n"
                "  - name: next\n    needs: [hog]\n    command: [\"true\"]\n"
                "  - name: cleanup\n    needs: [hog]\n    when: failure\n"
                "    command: [\"true\"]\n" % HOG)
    pid = int(c.cli("pipeline", "submit", pf).stdout)
    pl = wait_for(lambda: (lambda v: v if v["state"] not in
                           ("pending", "running") else None)(json.loads(
                               c.cli("pipeline", "show", "--json",
                                     str(pid)).stdout)), 60, "the pipeline")
    st = {x["name"]: x["state"] for x in pl["stage_list"]}
    check(pl["state"] == "failed" and st == {
        "hog": "out_of_memory", "next": "failed", "cleanup": "completed"},
        "the pipeline failed by its stage out of memory: %s" % pl)
    # The store keeps the state: after a kill -9 the controller reads it
    # back, and what depends on it stands.
    c.kill_server()
    c.start_server("--retry-backoff", "0")
    for jid, want in ((big, "out_of_memory"), (gang, "out_of_memory"),
                      (arr, "out_of_memory"), (notok, "completed")):
        got = c.job(jid)["state"]
        check(got == want, "job %d after a restart: %s, not %s" %
              (jid, got, want))
    check(json.loads(c.cli("pipeline", "show", "--json",
                           str(pid)).stdout)["state"] == "failed",
          "the pipeline after a restart")
    wait_for(lambda: not task_cgroups(c), 15, "the cgroups to be removed")


@with_cgroups
def scenario_cgroup_escape(c):
    """Every process of a task dies with it: a grandchild that daemonises
    (a session of its own, reparented) dies when the task ends, and when
    the job is cancelled."""
    root, dirs = cg_setup(c)
    c.start_server()
    c.start_agent("n1", "2xH100-80GB", extra=["--cgroup-root", root])
    pidfile = os.path.join(c.root, "daemon1.pid")
    j = c.submit("--", "sh", "-c",
                 "setsid sh -c 'sleep 300 & echo $! > %s' </dev/null "
                 ">/dev/null 2>&1; sleep 1; exit 0" % pidfile)
    c.wait_state(j, "completed")
    pid = int(read(pidfile))
    wait_for(lambda: not alive(pid), 15,
             "the daemonised grandchild %d to die with its task" % pid)
    pidfile2 = os.path.join(c.root, "daemon2.pid")
    k = c.submit("--", "sh", "-c",
                 "setsid sh -c 'trap \"\" TERM; sleep 300 & echo $! > %s; "
                 "wait' </dev/null >/dev/null 2>&1 & sleep 300" % pidfile2)
    c.wait_state(k, "running")
    wait_for(lambda: os.path.exists(pidfile2) and read(pidfile2), 15,
             "the daemon to start")
    pid2 = int(read(pidfile2))
    check(alive(pid2), "the daemon runs")
    c.cli("cancel", str(k))
    c.wait_state(k, "cancelled")
    wait_for(lambda: not alive(pid2), 20,
             "the daemon %d to die with the cancelled job" % pid2)
    wait_for(lambda: not task_cgroups(c), 15, "the cgroups to be removed")


@with_cgroups
def scenario_cgroup_evict(c):
    """A job evicted for another queue's quota (reclaim) takes its whole
    cgroup with it: a daemon it started in a session of its own, which
    ignores SIGTERM, dies; the job on the other GPU and its daemon run
    on."""
    root, dirs = cg_setup(c)
    c.start_server("--grace", "1000")
    c.start_agent("n1", "2xH100-80GB", extra=["--cgroup-root", root])
    for q in ("susan", "joe"):
        s, b = c.api("POST", "/v1/queues", {
            "name": q, "quota": {"gpu": {"deserved": 1, "weight": 1}}})
        check(s == 201, "queue %s: %s %s" % (q, s, b))
    daemons = {}
    for i in range(2):
        pidfile = os.path.join(c.root, "daemon%d.pid" % i)
        j = c.submit("--queue", "susan", "--gpus", "1", "--", "sh", "-c",
                     "setsid sh -c 'trap \"\" TERM; sleep 300 & echo $! > "
                     "%s; wait' </dev/null >/dev/null 2>&1 & sleep 300"
                     % pidfile)
        c.wait_state(j, "running")
        wait_for(lambda: os.path.exists(pidfile) and read(pidfile), 15,
                 "the daemon to start")
        daemons[j] = int(read(pidfile))
    k = c.submit("--queue", "joe", "--gpus", "1", "--", "sleep", "300")
    c.wait_state(k, "running", timeout=30)
    evicted = [j for j in daemons if c.job(j)["restart_count"] == 1]
    check(len(evicted) == 1, "one of susan's jobs evicted: %s" % evicted)
    kept = [j for j in daemons if j not in evicted][0]
    wait_for(lambda: not alive(daemons[evicted[0]]), 20,
             "the evicted job's daemon to die")
    check(alive(daemons[kept]), "the other job's daemon runs on")
    for j in list(daemons) + [k]:
        c.cli("cancel", str(j), ok=False)


def scenario_cgroup_probe(c):
    """`allot agent --probe --cgroup-root` says what the agent would use
    and leaves the node as it found it: the root directories it made are
    gone, one that was there before stays."""
    if os.geteuid() != 0:
        raise SystemExit(SKIP)
    root = "allot-e2e-probe-%d" % os.getpid()
    cg = probe(c, root)
    if not cg.get("enabled"):
        print("skipped: %s" % cg.get("error"), file=sys.stderr)
        raise SystemExit(SKIP)
    dirs = sorted(set(cg["roots"].values()) if cg["version"] == 1
                  else [cg["root"]])
    left = [d for d in dirs if os.path.isdir(d)]
    keep = dirs[0]
    try:
        check(not left, "the probe removed the root it made: %s" % left)
        os.mkdir(keep)
        cg = probe(c, root)
        check(os.path.isdir(keep), "a root that was there stays: %s" % keep)
        left = [d for d in dirs if d != keep and os.path.isdir(d)]
        check(not left, "the others are removed again: %s" % left)
    finally:
        for d in dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass


@with_cgroups
def scenario_cgroup_devices(c):
    """A task opens its own GPU's device node, not another task's (the
    nodes are made here with mknod: major 195 as NVIDIA's; with no driver
    the own one fails with ENXIO, the other with EPERM from the cgroup)."""
    root, dirs = cg_setup(c)
    if "devices" not in dirs:
        print("skipped: no devices controller (cgroup v2 needs a BPF "
              "program for device rules)", file=sys.stderr)
        raise SystemExit(SKIP)
    dev = os.path.join(c.root, "dev")
    os.mkdir(dev)
    for i in range(2):
        os.mknod(os.path.join(dev, "nvidia%d" % i), 0o666 | 0o020000,
                 os.makedev(195, i))
    c.start_server()
    c.start_agent("n1", "2xH100-80GB",
                  extra=["--cgroup-root", root, "--gpu-dev-dir", dev])
    script = ("for i in 0 1; do if (exec 3<%s/nvidia$i) 2>/tmp/x$$; then "
              "echo dev$i=opened; else echo dev$i=$(cat /tmp/x$$); fi; done; "
              "rm -f /tmp/x$$; echo CVD=$CUDA_VISIBLE_DEVICES" % dev)
    j = c.submit("--gpus", "1", "--", "sh", "-c", script)
    c.wait_state(j, "completed")
    log = c.cli("logs", str(j)).stdout
    mine = int(log.split("CVD=")[1].split()[0])
    other = 1 - mine
    lines = {l.split("=", 1)[0]: l for l in log.splitlines() if "=" in l}
    check("not permitted" in lines["dev%d" % other],
          "another task's GPU cannot be opened: %r" % log)
    check("not permitted" not in lines["dev%d" % mine],
          "its own GPU's node is not refused by the cgroup: %r" % log)


# bpf(2) from Python, for what the kernel holds: the device programs
# attached to a cgroup (BPF_PROG_QUERY) and whether a program still exists
# (BPF_PROG_GET_FD_BY_ID).  Numbers from <linux/bpf.h>.
BPF_PROG_GET_FD_BY_ID, BPF_PROG_QUERY, BPF_CGROUP_DEVICE = 13, 16, 6


def bpf(cmd, attr):
    import ctypes
    import platform
    nr = {"x86_64": 321, "aarch64": 280}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(bytes(attr), 64)
    r = libc.syscall(nr, cmd, buf, 64)
    return r, ctypes.get_errno(), buf


def bpf_attached(cgdir):
    """The ids of the device programs attached to the cgroup directory."""
    import ctypes
    import struct
    ids = (ctypes.c_uint32 * 16)()
    fd = os.open(cgdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        attr = struct.pack("=IIIIQI", fd, BPF_CGROUP_DEVICE, 0, 0,
                           ctypes.addressof(ids), 16)
        r, err, buf = bpf(BPF_PROG_QUERY, attr)
    finally:
        os.close(fd)
    check(r == 0, "BPF_PROG_QUERY %s: %s" % (cgdir, os.strerror(err)))
    n = struct.unpack_from("=I", buf.raw, 24)[0]
    return list(ids[:n])


def bpf_prog_exists(pid):
    import struct
    r, err, _ = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("=I", pid))
    if r >= 0:
        os.close(r)
        return True
    check(err == 2, "BPF_PROG_GET_FD_BY_ID: %s" % os.strerror(err))
    return False


def fds_of(pid):
    """What the process's descriptors point at."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return out


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and int(read("/proc/%s/stat" % p).rsplit(
                    ")", 1)[1].split()[1]) == pid:
                out.append(int(p))
        except OSError:
            pass
    return out


@with_cgroups
def scenario_cgroup_devices_bpf(c):
    """The device rule as a BPF device program on the cgroup v2 tree
    (--cgroup-devices bpf; on a node with v1 controllers, the v2 tree
    mounted beside them): two tasks, one GPU each, each opens its own
    (mknod'ed) GPU node and the control device, not the other task's nor
    a GPU the agent does not manage (EPERM).  One program is attached to
    each task's cgroup; the agent keeps no descriptor of it, and it is
    freed with the cgroup."""
    root, dirs = cg_setup(c)
    cg = probe(c, root, ["--cgroup-devices", "bpf"])
    if not cg.get("enabled"):
        print("skipped: %s" % cg.get("error"), file=sys.stderr)
        raise SystemExit(SKIP)
    check(cg["device_rule"] == "bpf" and cg["devices"],
          "--probe says the rule is a BPF program: %s" % cg)
    v2dir = cg["roots"]["unified"] if cg["version"] == 1 else cg["root"]
    c.cg_dirs = dict(c.cg_dirs, unified=v2dir)
    # Without the rule --probe says that devices are not enforced, and
    # why; "bpf" without the capabilities to load a program is refused.
    off = probe(c, root, ["--cgroup-devices", "none"])
    check(not off["devices"] and off["device_rule"] == "none" and
          "not enforced" in off["devices_note"],
          "--probe says devices are not enforced: %s" % off)
    p = subprocess.run([c.allot, "agent", "--probe", "--cgroup-root", root,
                        "--cgroup-devices", "maybe"], capture_output=True,
                       text=True, timeout=30, env=c.env)
    check(p.returncode == 2 and "auto, bpf or none" in p.stderr,
          "an unknown --cgroup-devices is a usage error: %d %r"
          % (p.returncode, p.stderr[:200]))
    import shutil
    if shutil.which("capsh"):
        p = subprocess.run(
            ["capsh", "--drop=cap_sys_admin,cap_bpf", "--", "-c",
             '"$0" agent --probe --cgroup-root "$1" --cgroup-devices bpf',
             c.allot, root], capture_output=True, text=True, timeout=30,
            env=c.env)
        err = json.loads(p.stdout)["cgroups"].get("error", "")
        check("CAP_BPF" in err, "--probe without CAP_BPF says why: %r" % err)
    dev = os.path.join(c.root, "dev")
    os.mkdir(dev)
    for name, minor in (("nvidia0", 0), ("nvidia1", 1), ("nvidia7", 7),
                        ("nvidiactl", 255)):
        os.mknod(os.path.join(dev, name), 0o666 | 0o020000,
                 os.makedev(195, minor))
    c.start_server()
    c.start_agent("n1", "2xH100-80GB",
                  extra=["--cgroup-root", root, "--gpu-dev-dir", dev,
                         "--cgroup-devices", "bpf"])
    go = os.path.join(c.root, "go")
    script = ("for n in nvidia0 nvidia1 nvidia7 nvidiactl; do "
              "if (exec 3<%s/$n) 2>/tmp/x$$; then echo $n=opened; "
              "else echo $n=$(cat /tmp/x$$); fi; done; rm -f /tmp/x$$; "
              "echo CVD=$CUDA_VISIBLE_DEVICES; cat /proc/self/cgroup; "
              "touch %s/started.$CUDA_VISIBLE_DEVICES; "
              "while [ ! -e %s ]; do sleep 0.1; done" % (dev, c.root, go))
    jobs = [c.submit("--gpus", "1", "--", "sh", "-c", script)
            for _ in range(2)]
    for j in jobs:
        c.wait_state(j, "running")
    wait_for(lambda: all(os.path.exists(os.path.join(c.root, "started.%d"
                                                     % g)) for g in (0, 1)),
             15, "both tasks to try the nodes")
    # One program on each task's cgroup in the v2 tree.
    progs = []
    for j in jobs:
        ids = bpf_attached(os.path.join(v2dir, "t%d.0.0" % j))
        check(len(ids) == 1, "one device program on task %d: %s" % (j, ids))
        progs += ids
    check(len(set(progs)) == 2, "a program per task: %s" % progs)
    # None of it stays in the agent or its spawner.
    agent = c.agents["n1"].pid
    for pid in [agent] + children(agent):
        held = [f for f in fds_of(pid) if f.startswith("anon_inode:bpf") or
                any(f.startswith(d) for d in c.cg_dirs.values())]
        check(not held, "process %d holds no BPF program or cgroup: %s"
              % (pid, held))
    open(go, "w").close()
    for j in jobs:
        c.wait_state(j, "completed")
    mine = []
    for j in jobs:
        log = c.cli("logs", str(j)).stdout
        own = int(log.split("CVD=")[1].split()[0])
        mine.append(own)
        lines = {l.split("=", 1)[0]: l for l in log.splitlines() if "=" in l}
        check("not permitted" in lines["nvidia%d" % (1 - own)],
              "another task's GPU cannot be opened: %r" % log)
        check("not permitted" in lines["nvidia7"],
              "nor a GPU the agent does not manage: %r" % log)
        check("not permitted" not in lines["nvidia%d" % own],
              "its own GPU's node is not refused: %r" % log)
        check("not permitted" not in lines["nvidiactl"],
              "nor the control device: %r" % log)
        if cg["version"] == 1:
            check(any(l.startswith("0::") and
                      l.endswith("/%s/t%d.0.0" % (root, j))
                      for l in log.splitlines()),
                  "the task joined its cgroup in the v2 tree: %r" % log)
    check(sorted(mine) == [0, 1], "a GPU each: %s" % mine)
    wait_for(lambda: not task_cgroups(c), 15, "the cgroups to be removed")
    wait_for(lambda: not any(bpf_prog_exists(p) for p in progs), 30,
             "the programs to be freed with their cgroups")


@with_cgroups
def scenario_cgroup_devices_minor(c):
    """Real GPUs (the fake NVML) whose device minors are not NVML's order
    (GPU 0 is /dev/nvidia1, GPU 1 is /dev/nvidia0): a task opens the node
    of the GPU it was given, by its minor, and not the other's, with the
    v1 devices rule and with the BPF program where the kernel has it."""
    root, dirs = cg_setup(c)
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    check(lib and os.path.exists(lib), "ALLOT_TEST_FAKE_NVML names the fake")
    modes = []
    if "devices" in dirs:
        modes.append("auto")
    if probe(c, root, ["--cgroup-devices", "bpf"]).get("enabled"):
        modes.append("bpf")
    if not modes:
        print("skipped: no device rule on this machine", file=sys.stderr)
        raise SystemExit(SKIP)
    dev = os.path.join(c.root, "dev")
    os.mkdir(dev)
    for i in range(2):
        os.mknod(os.path.join(dev, "nvidia%d" % i), 0o666 | 0o020000,
                 os.makedev(195, i))
    c.start_server()
    script = ("for i in 0 1; do if (exec 3<%s/nvidia$i) 2>/tmp/x$$; then "
              "echo dev$i=opened; else echo dev$i=$(cat /tmp/x$$); fi; done; "
              "rm -f /tmp/x$$; echo CVD=$CUDA_VISIBLE_DEVICES" % dev)
    for mode in modes:
        name = "m" + mode
        c.start_agent(name, None, {"ALLOT_NVML_LIB": lib,
                                   "FAKE_NVML_GPUS": "2",
                                   "FAKE_NVML_MINORS": "1,0"},
                      extra=["--cgroup-root", root, "--gpu-dev-dir", dev,
                             "--cgroup-devices", mode])
        go = os.path.join(c.root, "go-" + mode)
        wait = "; while [ ! -e %s ]; do sleep 0.1; done" % go
        jobs = [c.submit("--gpus", "1", "--", "sh", "-c", script + wait)
                for _ in range(2)]
        for j in jobs:
            c.wait_state(j, "running")
        open(go, "w").close()
        seen = set()
        for j in jobs:
            c.wait_state(j, "completed")
            log = c.cli("logs", str(j)).stdout
            gpu = int(log.split("CVD=")[1].split()[0].rsplit("-", 1)[1])
            seen.add(gpu)
            lines = {l.split("=", 1)[0]: l for l in log.splitlines()
                     if "=" in l}
            check("not permitted" not in lines["dev%d" % (1 - gpu)],
                  "%s: GPU %d's node is nvidia%d, and it opens: %r"
                  % (mode, gpu, 1 - gpu, log))
            check("not permitted" in lines["dev%d" % gpu],
                  "%s: nvidia%d is the other GPU's: %r" % (mode, gpu, log))
        check(seen == {0, 1}, "%s: both GPUs were tried: %s" % (mode, seen))
        c.agents[name].kill()  # the next mode's node alone takes jobs
        c.agents[name].wait(10)


@with_cgroups
def scenario_cgroup_restart(c):
    """After an agent's crash: a task that ended while no agent ran has its
    cgroup removed by the next one, with its OOM reason; a stale cgroup of
    this agent's form goes; a cgroup that is not the agent's stays."""
    root, dirs = cg_setup(c)
    c.start_server()
    extra = ["--cgroup-root", root]
    c.start_agent("n1", "2xH100-80GB", extra=extra)
    go = os.path.join(c.root, "go")
    j = c.submit("--mem", "48M", "--", "sh", "-c",
                 "while [ ! -e %s ]; do sleep 0.1; done; "
                 "python3 -c \"b = b'x' * (300 << 20)\"" % go)
    c.wait_state(j, "running")
    wait_for(lambda: task_cgroups(c), 10, "the task's cgroup")
    c.agents["n1"].kill()
    c.agents["n1"].wait(10)
    for d in set(dirs.values()):
        os.mkdir(os.path.join(d, "t999.0.0"))
        os.makedirs(os.path.join(d, "other"), exist_ok=True)
    open(go, "w").close()
    # The task runs out of memory while no agent watches.
    time.sleep(2)
    c.start_agent("n1", "2xH100-80GB", extra=extra)
    jj = c.wait_state(j, ENDED, timeout=30)
    check(jj["state"] == "out_of_memory" and
          jj.get("reason", "").startswith("OUT_OF_MEMORY"),
          "the adopted task's OOM is the job's reason: %s" % jj)
    wait_for(lambda: not task_cgroups(c), 15,
             "the adopted task's and the stale cgroups to be removed")
    for d in set(dirs.values()):
        check(os.path.isdir(os.path.join(d, "other")),
              "a cgroup not of the agent's form stays: %s" % d)


def nodes(c):
    return {n["name"]: n for n in c.api("GET", "/v1/nodes")[1]["nodes"]}


def scenario_gpu_health(c):
    """The agent watches NVML (the fake, told what to inject through a
    file): a critical XID on a GPU drains its node with the reason, the job
    on that GPU is requeued (its restart count shows it), the job on
    another GPU runs on, no new job starts there; `allot node resume`
    clears it and the jobs run again; a fault that persists drains the
    node again after a resume; each kind of fault is found."""
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    check(lib and os.path.exists(lib), "ALLOT_TEST_FAKE_NVML names the fake")
    health = os.path.join(c.root, "health")
    many = os.path.join(c.root, "health-many")
    open(health, "w").close()
    open(many, "w").close()
    c.start_server()
    c.start_agent("g1", None, {"ALLOT_NVML_LIB": lib, "FAKE_NVML_GPUS": "3",
                               "FAKE_NVML_HEALTH": health},
                  extra=["--telemetry-ms", "200"])
    a = c.submit("--gpus", "1", "--", "sleep", "300")
    b = c.submit("--gpus", "1", "--", "sleep", "300")
    ja, jb = c.wait_state(a, "running"), c.wait_state(b, "running")
    da = ja["placement"][0]["gpus"][0]
    check(jb["placement"][0]["gpus"][0] != da, "one GPU each")
    with open(health, "w") as f:
        f.write("%d xid 79\n" % da)
    n = wait_for(lambda: (lambda n: n if n["state"] == "draining" else None)(
        nodes(c)["g1"]), 15, "the node to be drained")
    check("XID 79" in n.get("drain_reason", "") and
          "GPU %d" % da in n["drain_reason"],
          "the drain says why: %s" % n.get("drain_reason"))
    check("fallen off the bus" in n["gpus"][da].get("unhealthy", ""),
          "the GPU is marked unhealthy: %s" % n["gpus"][da])
    check(all("unhealthy" not in g for i, g in enumerate(n["gpus"])
              if i != da), "the other GPUs are healthy")
    ja = wait_for(lambda: (lambda j: j if j["restart_count"] == 1 else None)(
        c.job(a)), 15, "the job on the faulty GPU to be requeued")
    check(ja["state"] == "pending", "requeued, waiting: %s" % ja["state"])
    jb = c.job(b)
    check(jb["state"] == "running" and jb["restart_count"] == 0,
          "the job on the healthy GPU runs on: %s" % jb)
    out = c.cli("nodes").stdout
    check("g1: GPU %d unhealthy: XID 79" % da in out,
          "allot nodes says why: %r" % out)
    show = c.cli("show", str(a)).stdout
    check("unhealthy" in show, "allot show says why it was requeued: %r"
          % show)
    k = c.submit("--gpus", "1", "--", "true")
    time.sleep(1.5)
    check(c.job(k)["state"] == "pending",
          "no new work on a drained node, a free GPU there or not")
    check("larger than" not in c.job(k).get("reason", ""),
          "a job waiting for the drained node is not called too big: %s"
          % c.job(k).get("reason"))
    # The admin has dealt with it.
    open(health, "w").close()
    c.cli("node", "resume", "g1")
    c.wait_state(k, "completed")
    c.wait_state(a, "running")
    time.sleep(1.5)  # several health looks: the old fault stays cleared
    n = nodes(c)["g1"]
    check(n["state"] == "ready" and "drain_reason" not in n and
          "unhealthy" not in n["gpus"][da], "resumed: %s" % n)
    check(c.job(a)["restart_count"] == 1, "the requeued job runs again")
    # A fault that persists (off the bus) comes back after a resume.
    c.cli("cancel", str(a))
    c.cli("cancel", str(b))
    with open(health, "w") as f:
        f.write("1 lost\n")
    wait_for(lambda: "bus" in nodes(c)["g1"].get("drain_reason", ""), 15,
             "the node drained for a GPU off the bus")
    c.cli("node", "resume", "g1")
    wait_for(lambda: "bus" in nodes(c)["g1"].get("drain_reason", ""), 15,
             "drained again: the fault persists")
    # Every kind of fault, one per GPU; XID 13 is not a critical one.
    c.start_agent("g8", None, {"ALLOT_NVML_LIB": lib, "FAKE_NVML_GPUS": "8",
                               "FAKE_NVML_HEALTH": many},
                  extra=["--telemetry-ms", "200"])
    with open(many, "w") as f:
        f.write("0 ecc 2\n1 pending\n2 remap\n3 temp 95\n4 power 500\n"
                "5 lost\n6 xid 48\n7 xid 13\n")
    want = ["double-bit ECC", "retired pages pending", "remapped rows pending",
            "temperature 95 C", "power 500 W", "off the bus", "XID 48"]
    g = wait_for(lambda: (lambda n: n if all("unhealthy" in n["gpus"][i]
                                             for i in range(7)) else None)(
        nodes(c)["g8"]), 15, "every fault to be reported")
    for i, w in enumerate(want):
        check(w in g["gpus"][i]["unhealthy"], "GPU %d: %r in %r" % (
            i, w, g["gpus"][i]["unhealthy"]))
    check("unhealthy" not in g["gpus"][7], "XID 13 is not critical: %s"
          % g["gpus"][7])
    check(g["state"] == "draining", "drained")
    out = c.cli("nodes").stdout
    check(all("g8: GPU %d unhealthy: " % i in out for i in range(7)) and
          "g8: GPU 7 " not in out,
          "allot nodes names every unhealthy GPU, not only the first: %r"
          % out)


def scenario_gpu_fence(c):
    """`allot server --gpu-fault fence`: a GPU with a critical fault takes
    no new work, whole or shared, while the node stays ready and its other
    GPUs do; the job on it is requeued and runs again on a healthy GPU;
    `allot nodes` names the GPU and why; `allot node resume` lets the GPU
    take work again.  A bad --gpu-fault is refused."""
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    check(lib and os.path.exists(lib), "ALLOT_TEST_FAKE_NVML names the fake")
    p = subprocess.run([c.allot, "server", "--gpu-fault", "half", "--state",
                        os.path.join(c.root, "bad-state"), "--listen",
                        "127.0.0.1:0"], capture_output=True, text=True,
                       timeout=30, env=c.env)
    check(p.returncode != 0 and "--gpu-fault" in p.stderr,
          "--gpu-fault half is refused: %d %r" % (p.returncode, p.stderr))
    health = os.path.join(c.root, "health")
    open(health, "w").close()
    c.start_server("--gpu-fault", "fence")
    c.start_agent("g1", None, {"ALLOT_NVML_LIB": lib, "FAKE_NVML_GPUS": "3",
                               "FAKE_NVML_HEALTH": health},
                  extra=["--telemetry-ms", "200"])
    a = c.submit("--gpus", "1", "--", "sleep", "300")
    b = c.submit("--gpus", "1", "--", "sleep", "300")
    ja, jb = c.wait_state(a, "running"), c.wait_state(b, "running")
    da = ja["placement"][0]["gpus"][0]
    db = jb["placement"][0]["gpus"][0]
    with open(health, "w") as f:
        f.write("%d xid 79\n" % da)
    n = wait_for(lambda: (lambda n: n if "unhealthy" in n["gpus"][da]
                          else None)(nodes(c)["g1"]), 15,
                 "GPU %d to be marked unhealthy" % da)
    check(n["state"] == "ready" and "drain_reason" not in n,
          "the node is not drained, only its GPU fenced: %s" % n)
    ja = wait_for(lambda: (lambda j: j if j["restart_count"] == 1 and
                           j["state"] == "running" else None)(c.job(a)), 15,
                  "the job on the faulty GPU to run again elsewhere")
    check(ja["placement"][0]["gpus"][0] not in (da, db),
          "it runs on the healthy free GPU: %s" % ja["placement"])
    check(c.job(b)["state"] == "running" and
          c.job(b)["restart_count"] == 0, "the other job runs on")
    out = c.cli("nodes").stdout
    check("g1: GPU %d unhealthy: XID 79" % da in out,
          "allot nodes says which GPU and why: %r" % out)
    show = c.cli("show", str(a)).stdout
    check("GPU %d of node g1 unhealthy" % da in show,
          "allot show says why it was requeued: %r" % show)
    # Only the fenced GPU is free: nothing is placed on it.
    k = c.submit("--gpus", "1", "--", "true")
    f = c.submit("--gpu-fraction", "0.5", "--", "true")
    time.sleep(1.5)
    check(c.job(k)["state"] == "pending" and c.job(f)["state"] == "pending",
          "no new work on the fenced GPU: %s %s" % (c.job(k)["state"],
                                                    c.job(f)["state"]))
    c.cli("node", "resume", "g1")
    c.wait_state(k, "completed")
    c.wait_state(f, "completed")
    n = nodes(c)["g1"]
    check("unhealthy" not in n["gpus"][da], "resumed: %s" % n)
    c.cli("cancel", str(a))
    c.cli("cancel", str(b))


MPS_STANDIN = r"""#!/bin/sh
# A stand-in for nvidia-cuda-mps-control: records how it is run.
if [ "$1" = "-f" ]; then
    echo "start pid=$$ dev=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY" >> "$MPS_STANDIN_LOG"
    echo $$ > "$CUDA_MPS_PIPE_DIRECTORY/standin.pid"
    touch "$CUDA_MPS_PIPE_DIRECTORY/control"
    trap 'echo "exit pid=$$" >> "$MPS_STANDIN_LOG"; rm -f "$CUDA_MPS_PIPE_DIRECTORY/control"; exit 0' TERM
    while :; do sleep 0.2; done
fi
read cmd
echo "command $cmd dev=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY" >> "$MPS_STANDIN_LOG"
if [ "$cmd" = quit ]; then
    kill -TERM "$(cat "$CUDA_MPS_PIPE_DIRECTORY/standin.pid")"
fi
"""


def scenario_mps(c):
    """With --mps, fractional tasks run under one MPS control daemon per
    GPU (a stand-in for nvidia-cuda-mps-control records how it is run):
    started with the GPU and its pipe directory, each task given that pipe
    directory, its share of the SMs and of the GPU's memory; restarted when
    it dies while tasks need it; told to quit after the last one.  A whole
    GPU's task gets none of it.  A node without --mps shares GPUs as
    before, and `allot nodes` says fractions are not enforced there."""
    bindir = os.path.join(c.root, "bin")
    os.mkdir(bindir)
    control = os.path.join(bindir, "nvidia-cuda-mps-control")
    with open(control, "w") as f:
        f.write(MPS_STANDIN)
    os.chmod(control, 0o755)
    log = os.path.join(c.root, "mps.log")
    open(log, "w").close()
    c.start_server()
    c.start_agent("m", "2xH100-80GB", env={"MPS_STANDIN_LOG": log},
                  extra=["--mps", "--mps-control", control,
                         "--label", "mps=yes"])
    c.start_agent("plain", "1xH100-80GB", extra=["--label", "mps=no"])
    go = os.path.join(c.root, "go")
    script = ("env | grep ^CUDA_ | sort; "
              "while [ ! -e %s ]; do sleep 0.1; done" % go)
    ids = [c.submit("--gpu-fraction", "0.5", "--constraint", "mps=yes", "--",
                    "sh", "-c", script) for _ in range(2)]
    jobs = [c.wait_state(i, "running") for i in ids]
    gpu = jobs[0]["placement"][0]["gpus"][0]
    check(jobs[1]["placement"][0]["gpus"][0] == gpu, "both on one GPU")
    pipe = os.path.join(c.root, "agent-m", "mps", "gpu%d" % gpu, "pipe")

    def starts(gpu_pipe=None):
        return [l for l in open(log).read().splitlines()
                if l.startswith("start") and
                (gpu_pipe is None or "pipe=%s " % gpu_pipe in l)]
    wait_for(lambda: starts(), 10, "the MPS control daemon to start")
    st = starts()
    check(len(st) == 1 and "dev=%d " % gpu in st[0] and
          "pipe=%s " % pipe in st[0],
          "one daemon for the GPU, with its pipe directory: %s" % st)
    for i in ids:
        out = wait_for(lambda: (lambda o: o if "CUDA_MPS" in o else None)(
            c.cli("logs", str(i)).stdout), 10, "the task's output")
        check("CUDA_MPS_PIPE_DIRECTORY=%s\n" % pipe in out and
              "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50\n" in out and
              "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=40960M\n" in out,
              "the task's MPS variables: %r" % out)
    # GPU memory instead of a fraction: 20 GiB of an 80 GiB GPU is a
    # quarter of it, and its memory limit is what it asked for.
    g = c.submit("--gpu-mem", "20G", "--constraint", "mps=yes", "--", "sh",
                 "-c", "env | grep ^CUDA_MPS | sort")
    c.wait_state(g, "completed")
    out = c.cli("logs", str(g)).stdout
    check("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480M\n" in out and
          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n" in out,
          "--gpu-mem 20G: %r" % out)
    check("20.0 GiB of a GPU" in c.cli("show", str(g)).stdout,
          "allot show says the GPU memory asked for")
    bad = c.cli("submit", "--gpu-mem", "1G", "--gpus", "1", "--", "true",
                ok=False)
    check(bad.returncode != 0 and "--gpu-mem" in bad.stderr,
          "--gpu-mem with --gpus is refused: %r" % bad.stderr)
    # Supervised: a daemon that dies while tasks need it is started again.
    pid = int(read(os.path.join(pipe, "standin.pid")))
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: len(starts(pipe)) == 2, 15,
             "the daemon to be restarted")
    # A restarted agent keeps the daemon its predecessor left.
    c.agents["m"].kill()
    c.agents["m"].wait(10)
    c.start_agent("m", "2xH100-80GB", env={"MPS_STANDIN_LOG": log},
                  extra=["--mps", "--mps-control", control,
                         "--label", "mps=yes"])
    time.sleep(1.5)
    check(len(starts(pipe)) == 2, "no second daemon after the agent's "
          "restart: %s" % starts(pipe))
    check("found running" in open(os.path.join(c.root, "agent-m.log")).read(),
          "the restarted agent found the daemon")
    # A whole GPU: no MPS.
    w = c.submit("--gpus", "1", "--constraint", "mps=yes", "--", "sh", "-c",
                 "env | grep ^CUDA_ | sort")
    c.wait_state(w, "completed")
    out = c.cli("logs", str(w)).stdout
    check("CUDA_VISIBLE_DEVICES" in out and "CUDA_MPS" not in out,
          "a whole GPU's task has no MPS variables: %r" % out)
    # Without --mps: shared as before, and said so.
    p = c.submit("--gpu-fraction", "0.5", "--constraint", "mps=no", "--",
                 "sh", "-c", script)
    c.wait_state(p, "running")
    out = c.cli("nodes").stdout
    check("plain: GPU fractions are not enforced" in out and
          "m: GPU fractions" not in out, "allot nodes says so: %r" % out)
    check("CUDA_MPS" not in c.cli("logs", str(p)).stdout,
          "no MPS variables without --mps")
    open(go, "w").close()
    for i in ids + [p]:
        c.wait_state(i, "completed")
    wait_for(lambda: "exit pid=" in open(log).read(), 15,
             "the daemon to be told to quit, and quit")
    text = open(log).read()
    check("command quit dev=%d pipe=%s" % (gpu, pipe) in text and
          "exit pid=" in text, "it quit: %r" % text)
    last = int(read(os.path.join(pipe, "standin.pid")))
    wait_for(lambda: not alive(last), 10, "the daemon to be gone")


def make_image(c, name):
    """An image built here from a root file system of this machine's own
    programs (sh, cat, id... and their libraries) with a marker file,
    imported into podman: no registry is needed."""
    import shutil
    rootfs = os.path.join(c.root, "rootfs")
    for d in ("bin", "etc", "tmp"):
        os.makedirs(os.path.join(rootfs, d))
    for prog in ("sh", "cat", "echo", "id", "sleep", "env"):
        path = shutil.which(prog)
        shutil.copy(path, os.path.join(rootfs, "bin", prog))
        libs = subprocess.run(["ldd", path], capture_output=True,
                              text=True).stdout
        for word in libs.split():
            if word.startswith("/") and os.path.exists(word):
                dst = rootfs + word
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if not os.path.exists(dst):
                    shutil.copy(word, dst)
    with open(os.path.join(rootfs, "etc", "allot-image"), "w") as f:
        f.write("inside-the-image\n")
    tar = os.path.join(c.root, "rootfs.tar")
    subprocess.run(["tar", "-C", rootfs, "-cf", tar, "."], check=True)
    p = subprocess.run(["podman", "import", tar, name], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, "podman import: %s" % p.stderr)


def podman_args(image):
    """The extra `podman run` arguments this machine needs, or None when
    podman cannot run a container here at all.  Plain first; then runc with
    rlimits no higher than ours (a sandbox without CAP_SYS_RESOURCE, where
    podman's defaults cannot be set)."""
    for extra in ([], ["--runtime", "runc", "--ulimit", "nofile=1024:1024",
                       "--ulimit", "nproc=4096:4096"]):
        p = subprocess.run(["podman", "run", "--rm", "--network=host"] +
                           extra + [image, "/bin/sh", "-c", "true"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode == 0:
            return extra
        print("podman run %s: %s" % (" ".join(extra), p.stderr.strip()),
              file=sys.stderr)
    return None


def scenario_container(c):
    """--image runs a gang of two tasks in a container of an image built
    here (podman import): the image's files, the task's variables, the
    working directory mounted, the exit code as the job's; a pull that
    fails is the job's reason; #SBATCH --container-image works as
    pyxis's; a bad image name is refused."""
    import shutil
    if shutil.which("podman") is None or os.geteuid() != 0:
        print("skipped: needs podman and root", file=sys.stderr)
        raise SystemExit(SKIP)
    image = "localhost/allot-e2e-%d:1" % os.getpid()
    try:
        make_image(c, image)
        extra = podman_args(image)
        if extra is None:
            print("skipped: podman cannot run a container here",
                  file=sys.stderr)
            raise SystemExit(SKIP)
        c.start_server()
        c.start_agent("n1", "2xH100-80GB",
                      extra=["--container-args", " ".join(extra)])
        j = c.submit("--image", image, "--tasks", "2", "--", "sh", "-c",
                     "cat /etc/allot-image; echo rank=$RANK ws=$WORLD_SIZE "
                     "uid=$(id -u); echo from-$RANK > out-$RANK")
        jj = c.wait_state(j, ("completed", "failed"), timeout=120)
        check(jj["state"] == "completed", "the gang completed: %s" % jj)
        for r in range(2):
            log = c.cli("logs", str(j), "--task", str(r)).stdout
            check("inside-the-image" in log and "rank=%d ws=2 uid=0" % r in log,
                  "task %d ran in the image with its variables: %r" % (r, log))
            check(read(os.path.join(c.root, "out-%d" % r)) == "from-%d" % r,
                  "the working directory is mounted")
        k = c.submit("--image", image, "--", "sh", "-c", "exit 3")
        kk = c.wait_state(k, ("completed", "failed"), timeout=120)
        check(kk["state"] == "failed" and kk.get("exit_code") == 3,
              "the container's exit code is the job's: %s" % kk)
        missing = "localhost/allot-missing-%d:1" % os.getpid()
        m = c.submit("--image", missing, "--", "true")
        mm = c.wait_state(m, ("completed", "failed"), timeout=120)
        check(mm["state"] == "failed" and
              "container did not start" in mm.get("reason", "") and
              "allot-missing" in mm["reason"],
              "a pull that fails is the reason: %r" % mm.get("reason"))
        script = os.path.join(c.root, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#SBATCH --container-image=%s\n"
                    "cat /etc/allot-image\n" % image)
        s = int(c.cli("submit", script).stdout.strip())
        c.wait_state(s, "completed", timeout=120)
        check("inside-the-image" in c.cli("logs", str(s)).stdout,
              "#SBATCH --container-image runs the script in the image")
        p = c.cli("submit", "--image", "-x", "--", "true", ok=False)
        check(p.returncode != 0 and "--image" in p.stderr,
              "a bad image name is refused: %r" % p.stderr)
        s_, b = c.api("POST", "/v1/jobs", {"command": ["true"],
                                          "image": "a b"})
        check(s_ == 400 and "image" in b.get("message", ""),
              "the API refuses it too: %s %s" % (s_, b))
    finally:
        subprocess.run(["podman", "rmi", "-f", image], capture_output=True)


def procs_with(word):
    """Pids of this machine's processes whose command line has word."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if word.encode() in f.read().split(b"\0"):
                        out.append(int(d))
            except OSError:
                pass
    return out


def scenario_container_cancel(c):
    """A cancelled container job whose command ignores SIGTERM is gone
    after the grace period, container and processes: SIGKILL to the podman
    client alone would leave the container running under conmon."""
    import shutil
    if shutil.which("podman") is None or os.geteuid() != 0:
        print("skipped: needs podman and root", file=sys.stderr)
        raise SystemExit(SKIP)
    image = "localhost/allot-e2e-cancel-%d:1" % os.getpid()
    marker = str(3000 + os.getpid() % 1000)  # a sleep no one else runs
    name = None
    try:
        make_image(c, image)
        extra = podman_args(image)
        if extra is None:
            print("skipped: podman cannot run a container here",
                  file=sys.stderr)
            raise SystemExit(SKIP)
        c.start_server("--grace", "1000")
        c.start_agent("n1", "2xH100-80GB",
                      extra=["--container-args", " ".join(extra)])
        j = c.submit("--image", image, "--", "sh", "-c",
                     "trap '' TERM; sleep %s & echo up > up; "
                     "while :; do sleep 1; done" % marker)
        c.wait_state(j, "running", timeout=120)
        name = "allot-n1-%d.0.0" % j
        wait_for(lambda: os.path.exists(os.path.join(c.root, "up")) and
                 procs_with(marker), 60, "the container to run")

        def listed():
            return name in subprocess.run(
                ["podman", "ps", "-a", "--format", "{{.Names}}"],
                capture_output=True, text=True, timeout=60).stdout.split()
        check(listed(), "podman lists the container")
        c.cli("cancel", str(j))
        c.wait_state(j, "cancelled", timeout=30)
        wait_for(lambda: not procs_with(marker) and not listed(), 30,
                 "the container and its processes to be gone")
    finally:
        if name is not None:
            subprocess.run(["podman", "rm", "-f", "-i", name],
                           capture_output=True)
        subprocess.run(["podman", "rmi", "-f", image], capture_output=True)


APPTAINER_STANDIN = r"""#!/usr/bin/env python3
# A stand-in for apptainer (not packaged for Debian 12): it records how it
# was called, then does what `apptainer exec` does for the test's purpose:
# options, an image that must exist (else apptainer's FATAL line and 255),
# the command run in the working directory --pwd names.
import json, os, sys
with open(%r, "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(),
                        "cvd": os.environ.get("CUDA_VISIBLE_DEVICES")})
            + "\n")
args = sys.argv[1:]
if not args or args[0] != "exec":
    sys.exit("FATAL:   unknown command %%r" %% args[:1])
i = 1
while i < len(args) and args[i].startswith("--"):
    if args[i] in ("--bind", "--pwd"):
        if args[i] == "--pwd":
            os.chdir(args[i + 1])
        i += 1
    i += 1
image = args[i]
if not os.path.isfile(image):
    print("FATAL:   could not open image %%s: failed to retrieve path for "
          "%%s: lstat %%s: no such file or directory" %% (image, image, image))
    sys.exit(255)
os.execvp(args[i + 1], args[i + 1:])
"""


def scenario_container_sif(c):
    """--image FILE.sif runs through Apptainer (a stand-in here: Debian 12
    has no apptainer package) as `apptainer exec --nv --bind CWD --pwd CWD
    IMAGE COMMAND`: a gang of two on real (fake-NVML) GPUs, each with its
    own GPU and rank, the working directory its own, the exit code the
    job's; an image Apptainer cannot open is the job's reason (its FATAL
    line); #SBATCH --container-image=FILE.sif goes the same way."""
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    check(lib and os.path.exists(lib), "ALLOT_TEST_FAKE_NVML names the fake")
    calls = os.path.join(c.root, "apptainer-calls")
    standin = os.path.join(c.root, "apptainer")
    with open(standin, "w") as f:
        f.write(APPTAINER_STANDIN % calls)
    os.chmod(standin, 0o755)
    image = os.path.join(c.root, "model.sif")
    open(image, "w").close()
    c.start_server()
    c.start_agent("n1", None, {"ALLOT_NVML_LIB": lib, "FAKE_NVML_GPUS": "2"},
                  extra=["--apptainer", standin])

    def called():
        return [json.loads(l) for l in read(calls).splitlines()]

    j = c.submit("--image", image, "--tasks", "2", "--gpus", "1", "--",
                 "sh", "-c", "echo rank=$RANK ws=$WORLD_SIZE "
                 "cvd=$CUDA_VISIBLE_DEVICES; echo from-$RANK > out-$RANK")
    jj = c.wait_state(j, ("completed", "failed"), timeout=60)
    check(jj["state"] == "completed", "the gang completed: %s" % jj)
    gpus = set()
    for r in range(2):
        log = c.cli("logs", str(j), "--task", str(r)).stdout
        check("rank=%d ws=2 cvd=GPU-" % r in log,
              "task %d ran with its variables: %r" % (r, log))
        gpus.add(log.split("cvd=")[1].split()[0])
        check(read(os.path.join(c.root, "out-%d" % r)) == "from-%d" % r,
              "the working directory is the task's")
    check(len(gpus) == 2, "a GPU each: %s" % gpus)
    for call in called():
        a = call["argv"]
        check(a[:6] == ["exec", "--nv", "--bind", c.root, "--pwd", c.root]
              and a[6] == image and a[7:9] == ["sh", "-c"],
              "apptainer exec --nv --bind CWD --pwd CWD IMAGE CMD: %s" % a)
    check(len(called()) == 2, "one apptainer per task: %s" % called())
    k = c.submit("--image", image, "--", "sh", "-c", "exit 3")
    kk = c.wait_state(k, ("completed", "failed"), timeout=60)
    check(kk["state"] == "failed" and kk.get("exit_code") == 3,
          "the container's exit code is the job's: %s" % kk)
    check(called()[-1]["argv"][1] != "--nv",
          "no --nv for a job without GPUs: %s" % called()[-1])
    missing = os.path.join(c.root, "missing.sif")
    m = c.submit("--image", missing, "--", "true")
    mm = c.wait_state(m, ("completed", "failed"), timeout=60)
    check(mm["state"] == "failed" and "could not open image" in
          mm.get("reason", "") and "missing.sif" in mm["reason"],
          "an image that cannot be opened is the reason: %r"
          % mm.get("reason"))
    script = os.path.join(c.root, "job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n#SBATCH --container-image=%s\necho in-sif\n"
                % image)
    s = int(c.cli("submit", script).stdout.strip())
    c.wait_state(s, "completed", timeout=60)
    check("in-sif" in c.cli("logs", str(s)).stdout and
          image in called()[-1]["argv"],
          "#SBATCH --container-image runs the script through apptainer: %s"
          % called()[-1])


def scenario_mps_clean(c):
    """scenario_mps, with the stand-in daemons it started killed whatever
    happened (they are no task of any agent: nothing else stops them)."""
    try:
        scenario_mps(c)
    finally:
        import glob
        for f in glob.glob(os.path.join(c.root, "agent-m", "mps", "gpu*",
                                        "pipe", "standin.pid")):
            try:
                os.kill(int(read(f)), signal.SIGKILL)
            except (OSError, ValueError):
                pass


SCENARIOS = {
    "cgroup_limits": scenario_cgroup_limits,
    "cgroup_oom": scenario_cgroup_oom,
    "cgroup_escape": scenario_cgroup_escape,
    "cgroup_evict": scenario_cgroup_evict,
    "cgroup_probe": scenario_cgroup_probe,
    "cgroup_devices": scenario_cgroup_devices,
    "cgroup_devices_bpf": scenario_cgroup_devices_bpf,
    "cgroup_devices_minor": scenario_cgroup_devices_minor,
    "cgroup_restart": scenario_cgroup_restart,
    "gpu_health": scenario_gpu_health,
    "gpu_fence": scenario_gpu_fence,
    "mps": scenario_mps_clean,
    "container": scenario_container,
    "container_sif": scenario_container_sif,
    "container_cancel": scenario_container_cancel,
}

if __name__ == "__main__":
    e2e.SCENARIOS = SCENARIOS
    sys.exit(e2e.main())
