#!/usr/bin/env python3
"""Replay the Microsoft ITP clusters 01-05 through `allot sim` under every
policy, at the paper's size and the contended size (offered load about 0.8), and print the
results as Markdown tables (the ones in docs/simulation.md).

    tools/sim_itp.py [--allot build-rel/src/cli/allot] [--traces DIR]
                     [--clusters 01,02,...] [--sizes paper,contended]
                     [--policies all] [--out DIR]

Each row comes from exactly this command (printed above each table):

    allot sim --trace TRACES/elasticflow-itp/common.csv \
        --trace-filter-queue clusterNN --nodes N --gpus-per-node 8 \
        --queues 8 --policy P --json

(with --jobs-csv DIR/clusterNN-SIZE-jobs.csv, one file per policy). The
JSON of every run is kept in --out (default build-rel/itp/).

A policy that leaves jobs unschedulable (static: a job larger than its
queue's share) averages its JCT over fewer, smaller jobs.  After each table
a second one compares allot with such a policy on the same jobs: those the
other policy completed.

Standard library only.
"""
import csv
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {  # nodes of 8 GPUs: (paper, contended)
    "01": (64, 8), "02": (64, 13), "03": (64, 22), "04": (128, 77),
    "05": (64, 2),
}
POLICIES = ["allot", "fifo", "static", "backfill", "tiresias", "sjf-oracle"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--allot", default=os.path.join(
        HERE, "..", "build-rel", "src", "cli", "allot"))
    ap.add_argument("--traces", default=os.path.join(
        HERE, "..", "data", "traces"))
    ap.add_argument("--clusters", default="01,02,03,04,05")
    ap.add_argument("--sizes", default="contended,paper")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "build-rel",
                                                  "itp"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    trace = os.path.join(a.traces, "elasticflow-itp", "common.csv")
    same = []
    for size in a.sizes.split(","):
        print(f"\n### ITP, {size} size, --queues 8\n")
        print("| cluster | nodes x 8 | policy | done | unsched. | avg JCT (h) "
              "| p95 queueing (h) | worst-queue avg queueing (h) "
              "| gpu_alloc_ratio | wastage_ratio | preemptions | sim s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for c in a.clusters.split(","):
            nodes = SIZES[c][0 if size == "paper" else 1]
            main_jobs = None
            for pols, extra, tag in variants(a.policies, size):
                jobs = os.path.join(a.out, f"cluster{c}-{size}{tag}-jobs.csv")
                cmd = [a.allot, "sim", "--trace", trace,
                       "--trace-filter-queue", f"cluster{c}", "--nodes",
                       str(nodes), "--gpus-per-node", "8", "--queues", "8",
                       "--policy", pols, "--json", "--quiet", "--jobs-csv",
                       jobs] + extra
                out = subprocess.run(cmd, check=True, capture_output=True,
                                     text=True).stdout
                path = os.path.join(a.out, f"cluster{c}-{size}{tag}.jsonl")
                with open(path, "w") as f:
                    f.write(out)
                runs = [json.loads(line) for line in out.splitlines()]
                several = len(runs) > 1
                if main_jobs is None:
                    main_jobs = policy_csv(jobs, "allot", several)
                for s in runs:
                    name = " ".join([s["policy"]] + extra)
                    if (s["unschedulable"] > 0 and
                            "allot" in a.policies.split(",")):
                        same.append((c, nodes, name, same_jobs(
                            policy_csv(jobs, s["policy"], several),
                            main_jobs)))
                    print(f"| {c} | {nodes} | {name} | {s['completed']} "
                          f"| {s['unschedulable']} "
                          f"| {s['avg_jct_s'] / 3600:.2f} "
                          f"| {s['p95_queue_s'] / 3600:.2f} "
                          f"| {s['worst_queue_avg_queue_s'] / 3600:.2f} "
                          f"| {s['gpu_alloc_ratio']:.3f} "
                          f"| {s['wastage_ratio']:.4f} | {s['preemptions']} "
                          f"| {s['sim_wall_s']:.2f} |")
            sys.stdout.flush()
        if same:
            print(f"\nOn the same jobs ({size} size): avg JCT (h) over the "
                  "jobs the other policy completed\n")
            print("| cluster | nodes x 8 | policy | its jobs | its avg JCT "
                  "| allot's avg JCT on them | allot's avg JCT on the jobs it "
                  "left unschedulable |")
            print("|---|---|---|---|---|---|---|")
            for c, nodes, pol, (n, theirs, ours, rest) in same:
                print(f"| {c} | {nodes} | {pol} | {n} | {theirs / 3600:.2f} "
                      f"| {ours / 3600:.2f} | {rest / 3600:.2f} |")
        same.clear()


def variants(policies, size):
    """(policies, extra arguments, file tag) of each run per cluster: every
    policy as it is and, at the contended size, static once more with
    allot's order inside each queue (shortest expected runtime first), to
    show how much of allot's lead over static is that order."""
    v = [(policies, [], "")]
    if size == "contended" and "static" in policies.split(","):
        v.append(("static", ["--order", "short"], "-static-short"))
    return v


def policy_csv(path, policy, several):
    """Where allot sim --jobs-csv wrote policy's rows (its name before the
    extension when several policies ran)."""
    if not several:
        return path
    base, ext = os.path.splitext(path)
    return f"{base}.{policy}{ext}"


def same_jobs(theirs_csv, allot_csv):
    """(jobs the other policy completed, its avg JCT on them, allot's avg
    JCT on them, allot's avg JCT on the jobs it left unschedulable)."""
    def rows(p):
        with open(p, newline="") as f:
            return {r["job_id"]: r for r in csv.DictReader(f)}
    theirs, ours = rows(theirs_csv), rows(allot_csv)
    done = [k for k, r in theirs.items() if r["jct_s"] != ""]
    left = [k for k, r in theirs.items() if r["unschedulable"] == "1"
            and ours[k]["jct_s"] != ""]

    def avg(xs):
        return sum(xs) / len(xs) if xs else 0.0
    return (len(done), avg([float(theirs[k]["jct_s"]) for k in done]),
            avg([float(ours[k]["jct_s"]) for k in done if ours[k]["jct_s"]]),
            avg([float(ours[k]["jct_s"]) for k in left]))


if __name__ == "__main__":
    main()
