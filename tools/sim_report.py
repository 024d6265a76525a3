#!/usr/bin/env python3
"""Scheduling quality with noisy estimates and honest preemption costs:
every policy of `allot sim` on the five ITP clusters at their contended
sizes and on the Alibaba openb trace, at several `--estimate-noise` levels,
printed as the Markdown tables of docs/simulation.md ("Policies under
noisy estimates").

    tools/sim_report.py [--allot build-rel/src/cli/allot] [--traces DIR]
                        [--traces-set itp01,...,openb] [--noise 0,1,2]
                        [--seed 1] [--restart-overhead 60]
                        [--checkpoint-interval 1800] [--reclaim-time 60]
                        [--out DIR]

Each table row comes from one run of exactly this command (one per trace
and noise level; `--policy all` runs the six policies in turn):

    allot sim --trace TRACE [--trace-filter-queue clusterNN] \\
        --nodes N --gpus-per-node 8 --queues 8 --policy all \\
        --estimate-noise S --estimate-seed 1 --restart-overhead 60 \\
        --checkpoint-interval 1800 --json --quiet --no-timing

The JSON lines of every run are kept in --out (default build-rel/report/).
After the tables comes the check of the targets at noise 1 (or the middle
level given).

Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ITP = "elasticflow-itp/common.csv"
OPENB = "alibaba-openb-2023/common.csv"
# name: (trace, queue filter, nodes of 8 GPUs).  The ITP sizes are those of
# tools/sim_itp.py's contended size (offered load about 0.8); openb's pods
# ask 16.6 GPUs and 194 cores on average over its 149 days: 3 nodes of 8
# GPUs and 96 cores (its commonest node, G2) give an offered load of 0.69
# GPUs and 0.67 CPU.
TRACES = {
    "itp01": (ITP, "cluster01", 8),
    "itp02": (ITP, "cluster02", 13),
    "itp03": (ITP, "cluster03", 22),
    "itp04": (ITP, "cluster04", 77),
    "itp05": (ITP, "cluster05", 2),
    "openb": (OPENB, None, 3),
}
POLICIES = ["allot", "fifo", "static", "backfill", "tiresias", "sjf-oracle"]
RIVALS = ["tiresias", "sjf-oracle", "backfill", "fifo"]


def command(a, name, noise):
    trace, filt, nodes = TRACES[name]
    cmd = [a.allot, "sim", "--trace", os.path.join(a.traces, trace)]
    if filt:
        cmd += ["--trace-filter-queue", filt]
    cmd += ["--nodes", str(nodes), "--gpus-per-node", "8", "--queues", "8",
            "--policy", "all", "--estimate-noise", str(noise),
            "--estimate-seed", str(a.seed), "--restart-overhead",
            str(a.restart_overhead), "--checkpoint-interval",
            str(a.checkpoint_interval), "--json", "--quiet", "--no-timing"]
    return cmd


def h(s):
    return f"{s / 3600:.2f}"


def wait(s):
    return f"{s:.0f} s" if s < 3600 else f"{s / 3600:.2f} h"


def table(name, runs, noises):
    trace, filt, nodes = TRACES[name]
    print(f"\n#### {name} ({filt or 'all pods'}, {nodes} x 8 GPUs)\n")
    print("| policy | noise | done | avg JCT (h) | p95 JCT (h) "
          "| worst-queue wait (h) | share_error_p95 | preemptions/job "
          "| GPU-h lost to preemption | longest guarantee wait (h) "
          "| wastage |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for pol in POLICIES:
        for s in noises:
            r = runs[(name, s)].get(pol)
            if r is None:
                continue
            done = f"{r['completed']}/{r['jobs']}"
            print(f"| {pol} | {s} | {done} | {h(r['avg_jct_s'])} "
                  f"| {h(r['p95_jct_s'])} "
                  f"| {h(r['worst_queue_avg_queue_s'])} "
                  f"| {r['share_error_p95']:.3f} "
                  f"| {r['preemptions_per_job']:.3f} "
                  f"| {r['gpu_hours_lost_to_preemption']:.1f} "
                  f"| {h(r['max_guarantee_wait_s'])} "
                  f"| {r['wastage_ratio']:.4f} |")


def targets(names, runs, s, reclaim):
    print(f"\n#### Targets at noise {s}\n")
    print("| trace | allot avg JCT (h) | best rival (h) | avg JCT <= best "
          "| every job done | wastage <= 0.01 | longest guarantee wait "
          f"<= {reclaim} s "
          "| lowest worst-queue wait | share_error_p95 <= 0.05 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        rs = runs[(name, s)]
        al = rs.get("allot")
        if al is None:
            continue
        rivals = [(rs[p]["avg_jct_s"], p) for p in RIVALS if p in rs]
        best, who = min(rivals)
        worst = min((rs[p]["worst_queue_avg_queue_s"], p) for p in rs)
        yes = lambda ok: "yes" if ok else "**no**"
        print(f"| {name} | {h(al['avg_jct_s'])} | {h(best)} ({who}) "
              f"| {yes(al['avg_jct_s'] <= best)} "
              f"| {yes(al['completed'] == al['jobs'])} "
              f"({al['completed']}/{al['jobs']}) "
              f"| {yes(al['wastage_ratio'] <= 0.01)} "
              f"({al['wastage_ratio']:.4f}) "
              f"| {yes(al['max_guarantee_wait_s'] <= reclaim)} "
              f"({wait(al['max_guarantee_wait_s'])}) "
              f"| {yes(worst[1] == 'allot' or worst[0] == al['worst_queue_avg_queue_s'])} "
              f"({h(al['worst_queue_avg_queue_s'])}; best {worst[1]} "
              f"{h(worst[0])}) "
              f"| {yes(al['share_error_p95'] <= 0.05)} "
              f"({al['share_error_p95']:.3f}) |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    rel = os.path.join(HERE, "..", "build-rel", "src", "cli", "allot")
    ap.add_argument("--allot", default=rel if os.path.exists(rel) else
                    os.path.join(HERE, "..", "build", "src", "cli", "allot"))
    ap.add_argument("--traces", default=os.path.join(HERE, "..", "data",
                                                     "traces"))
    ap.add_argument("--traces-set", default=",".join(TRACES))
    ap.add_argument("--noise", default="0,1,2")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--restart-overhead", type=int, default=60)
    ap.add_argument("--checkpoint-interval", type=int, default=1800)
    # The target for a queue's wait for its guarantee: how long the live
    # controller takes to reclaim (a victim's stop grace, 10 s by default,
    # and a cycle), rounded up to a minute.
    ap.add_argument("--reclaim-time", type=int, default=60)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "build-rel",
                                                  "report"))
    a = ap.parse_args()
    names = a.traces_set.split(",")
    for n in names:
        if n not in TRACES:
            sys.exit(f"sim_report: unknown trace {n!r} "
                     f"(known: {', '.join(TRACES)})")
    noises = a.noise.split(",")
    os.makedirs(a.out, exist_ok=True)
    runs = {}
    t0 = time.monotonic()
    print("Every row: `" + " ".join(
        ["allot" if x == a.allot else x for x in command(a, "itp01", "S")])
        .replace(a.traces + "/", "data/traces/") + "`"
        " (per trace: its file, filter and nodes below; S the noise).")
    for n in names:
        for s in noises:
            t = time.monotonic()
            out = subprocess.run(command(a, n, s), check=True,
                                 capture_output=True, text=True).stdout
            with open(os.path.join(a.out, f"{n}-noise{s}.jsonl"), "w") as f:
                f.write(out)
            runs[(n, s)] = {r["policy"]: r for r in
                            (json.loads(x) for x in out.splitlines())}
            print(f"{n} noise {s}: {time.monotonic() - t:.0f} s",
                  file=sys.stderr)
    for n in names:
        table(n, runs, noises)
    mid = "1" if "1" in noises else noises[len(noises) // 2]
    targets(names, runs, mid, a.reclaim_time)
    print(f"\n(The whole sweep took {time.monotonic() - t0:.0f} s of wall "
          "time.)")


if __name__ == "__main__":
    main()
