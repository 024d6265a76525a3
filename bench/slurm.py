#!/usr/bin/env python3
"""Slurm's commands on allot against a real Slurm, side by side.

Usage: bench/slurm.py PATH/TO/allot [N]

Starts an `allot server` with one agent (8 emulated GPUs) on loopback,
twice: with `--sync full` (the default: each commit is on disk before its
effects leave the controller) and with `--sync normal` (a commit survives
a crash of the controller but may be lost with the machine's power, which
is still more than Slurm keeps: slurmctld answers before it saves, and
saves its job state from a thread at most every 5 s).  When the private
Slurm of ../shared/slurm-peer is up (its env.sh exists and `sinfo`
answers; start it with ./start.sh), it measures it too, in the same run:

  sbatch_per_s   a shell loop of N `sbatch --wrap true` (default 300)
  drain_s        N one-GPU jobs (`--gres=gpu:1 --wrap true`) queued behind
                 a job holding all 8 GPUs: from `scancel` of that job
                 until squeue shows no job
  latency_ms     submit-to-running on an idle cluster: from just before
                 `sbatch --wrap 'date +%s.%N > F'` to the time in F
                 (median of 10)
  srun_ms        `srun true` from start to exit: allocation, start,
                 attach, the exit status back (median of 10)
  salloc_srun_ms `salloc srun true`: an allocation, a step in it, its
                 release (median of 10)

and, for allot, the drain's timeline from its job history:
drain_max_running (jobs at once at most), drain_start_to_end_ms (median,
a job's placement to its end as the controller learnt it: the commit,
the agent's start of the task, the task, the report back) and
drain_end_to_start_ms (median, an end to the next start after it: the
controller's part between two waves),

and the disk's own time for a flush (`fdatasync_ms`, median of 50 after a
4 KiB write beside the server's state: what each of `--sync full`'s
commits waits for), and prints one JSON line with each figure for each (`allot`,
`allot_sync_normal`, `slurm`) and allot/slurm ratios for both of allot's
settings (`ratio`, `ratio_sync_normal`; for time, slurm/allot: above 1
means allot is faster).  Without the peer, the allot figures alone.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "slurm"))
import conformance  # noqa: E402
import e2e  # noqa: E402


def shell_loop(side, n):
    """n sbatch calls from one shell loop, as users' scripts do."""
    t0 = time.monotonic()
    p = subprocess.run(["sh", "-c", "i=0; while [ $i -lt %d ]; do sbatch "
                        "--wrap true >/dev/null || exit 1; i=$((i+1)); done"
                        % n], env=side.env, cwd=side.cwd)
    e2e.check(p.returncode == 0, "%s: the sbatch loop failed" % side.name)
    return time.monotonic() - t0


def drain(side, timeout=600):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        p = side.run("squeue", "-h", "-o", "%i")
        if p.returncode == 0 and p.stdout.strip() == "":
            return time.monotonic() - t0
        time.sleep(0.05)
    raise e2e.Fail("%s: jobs still queued after %d s" % (side.name, timeout))


def latency(side, reps=10):
    out = []
    for k in range(reps):
        f = os.path.join(side.cwd, "lat-%d" % k)
        t0 = time.time()
        side.sbatch("--wrap", "date +%%s.%%N > %s" % f)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                text = open(f).read().strip()
                if text:
                    out.append((float(text) - t0) * 1000)
                    break
            except OSError:
                pass
            time.sleep(0.005)
        drain(side)
    return statistics.median(out)


def blocked_drain(side, n):
    blocker = side.sbatch("--gres=gpu:8", "--wrap", "sleep 600")
    side.running(blocker)
    ids = [side.sbatch("--gres=gpu:1", "--wrap", "true") for _ in range(n)]
    t0 = time.monotonic()
    p = side.run("scancel", blocker)
    e2e.check(p.returncode == 0, "%s: scancel: %s" % (side.name, p.stderr))
    drain(side)
    return time.monotonic() - t0, ids


def timeline(cluster, ids):
    """The drain's timeline from allot's job history (each job's start_ms
    and end_ms, both the controller's clock): how many ran at once at
    most, the median time from a job's start (its placement by a cycle)
    to its end as the controller learnt it, and from an end to the next
    start after it (the controller's part between two waves)."""
    want = set(int(i) for i in ids)
    rows, after = [], 0
    while True:
        s, page = cluster.api("GET", "/v1/jobs?state=completed&spec=0"
                              "&limit=1000&after=%d" % after)
        e2e.check(s == 200, "GET /v1/jobs: %s" % s)
        jobs = page["jobs"]
        rows += [j for j in jobs if j["id"] in want]
        if len(jobs) < 1000:
            break
        after = jobs[-1]["id"]
    ends = sorted(j["end_ms"] for j in rows)
    edges = sorted([(j["start_ms"], 1) for j in rows] +
                   [(j["end_ms"], -1) for j in rows])
    at_once = most = 0
    for _, step in edges:
        at_once += step
        most = max(most, at_once)
    gaps = []
    for j in rows:
        before = [e for e in ends if e <= j["start_ms"]]
        if before:
            gaps.append(j["start_ms"] - before[-1])
    return {"drain_max_running": most,
            "drain_start_to_end_ms": statistics.median(
                j["end_ms"] - j["start_ms"] for j in rows),
            "drain_end_to_start_ms": statistics.median(gaps) if gaps
            else None}


def interactive(side, *cmd, reps=10):
    """An interactive command's round trip, e.g. `srun true`: allocation,
    start, the task's end, the exit status back (median of reps)."""
    out = []
    for _ in range(reps):
        t0 = time.monotonic()
        p = side.run(*cmd)
        e2e.check(p.returncode == 0, "%s: %s: %s" % (side.name, cmd,
                                                     p.stderr))
        out.append((time.monotonic() - t0) * 1000)
    return statistics.median(out)


def measure(side, n, cluster=None):
    loop = shell_loop(side, n)
    drain(side)
    d, ids = blocked_drain(side, n)
    extra = timeline(cluster, ids) if cluster is not None else {}
    return dict(extra, **{
            "sbatch_per_s": round(n / loop, 1), "drain_s": round(d, 2),
            "drain_jobs_per_s": round(n / d, 1) if d > 0 else None,
            "latency_ms": round(latency(side), 1),
            "srun_ms": round(interactive(side, "srun", "true"), 1),
            "salloc_srun_ms": round(interactive(
                side, "salloc", "srun", "true"), 1)})


def flush_ms(where, reps=50):
    """The disk's own time for one durable commit, measured in the same
    run: median of reps fdatasync() calls after a 4 KiB write in the
    directory where the server keeps its state."""
    path = os.path.join(where, "flush-probe")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        out = []
        for k in range(reps):
            os.pwrite(fd, b"x" * 4096, 4096 * (k % 8))
            t0 = time.perf_counter()
            os.fdatasync(fd)
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    return statistics.median(out)


def allot_side(allot, root, sync):
    """A server (`--sync SYNC`) with one agent of 8 emulated GPUs, and
    Slurm's command names linked to allot: the cluster and its side."""
    os.makedirs(root)
    c = e2e.Cluster(allot, root)
    c.start_server("--sync", sync)
    c.start_agent("node1", gpus="8xH100-80GB")
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    c.cli("slurm-commands", bindir)
    env = dict(c.env, PATH=bindir + ":" + os.environ.get("PATH", ""))
    cwd = os.path.join(root, "allot")
    os.makedirs(cwd)
    return c, conformance.Side("allot", env, cwd)


def ratios(a, s):
    return {"sbatch": round(a["sbatch_per_s"] / s["sbatch_per_s"], 2),
            "drain": round(s["drain_s"] / a["drain_s"], 2),
            "latency": round(s["latency_ms"] / a["latency_ms"], 2),
            "srun": round(s["srun_ms"] / a["srun_ms"], 2),
            "salloc_srun": round(s["salloc_srun_ms"] / a["salloc_srun_ms"],
                                 2)}


def main():
    allot = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    root = tempfile.mkdtemp(prefix="allot-bench-slurm-")
    res = {"bench": "slurm", "n": n, "cpus": os.cpu_count(),
           "fdatasync_ms": round(flush_ms(root), 2)}
    # allot as it starts by default (--sync full: each commit on disk
    # before anything leaves the controller), and at --sync normal (a
    # commit survives a crash of the controller, not of the machine),
    # which is still more than slurmctld keeps: it acknowledges before it
    # saves, and saves its job state at most every few seconds.
    for sync, key in (("full", "allot"), ("normal", "allot_sync_normal")):
        c, side = allot_side(allot, os.path.join(root, sync), sync)
        try:
            res[key] = measure(side, n, c)
        finally:
            c.stop()
    peer = conformance.peer_side(root)
    if peer is not None:
        res["slurm"] = measure(peer, n)
        res["ratio"] = ratios(res["allot"], res["slurm"])
        res["ratio_sync_normal"] = ratios(res["allot_sync_normal"],
                                          res["slurm"])
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
