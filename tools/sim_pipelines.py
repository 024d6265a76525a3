#!/usr/bin/env python3
"""The pipelines table of docs/simulation.md: generate ML pipeline traces
(tools/gen_pipelines.py) and replay them through `allot sim` with the graph
known (--dag on, and hold), ignored (off), and the dependency-blind
baseline (blind: each stage submitted when its input ends), under allot's
policy, plus fifo and backfill with the blind baseline.

    tools/sim_pipelines.py [--allot build/src/cli/allot] [--nodes 8,32,128]
                           [--load 0.9] [--hours 24] [--seed 1]

Prints a Markdown table: pipelines completed, their mean makespan, pipelines
completed per hour (first submission to last pipeline's end), mean JCT of
the stages, wastage ratio (share of time a GPU is idle while a pending job
would fit) and preemptions.  Deterministic for the same arguments.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

RUNS = [("allot", "on"), ("allot", "hold"), ("allot", "off"),
        ("allot", "blind"), ("backfill", "on"), ("backfill", "blind"),
        ("fifo", "on"), ("fifo", "blind")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--allot", default="build/src/cli/allot")
    ap.add_argument("--nodes", default="8,32,128")
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    print("| nodes | policy | dag | pipelines done | mean makespan (h) | "
          "pipelines/h | x blind | avg JCT (h) | wastage | preemptions |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in a.nodes.split(",")]:
            trace = os.path.join(tmp, "p%d.csv" % n)
            with open(trace, "w") as f:
                subprocess.run([sys.executable,
                                os.path.join(here, "gen_pipelines.py"),
                                "--nodes", str(n), "--load", str(a.load),
                                "--hours", str(a.hours), "--seed",
                                str(a.seed)], stdout=f, check=True)
            rows = []
            for pol, dag in RUNS:
                out = subprocess.run([a.allot, "sim", "--trace", trace,
                                      "--nodes", str(n), "--policy", pol,
                                      "--dag", dag, "--json", "--no-timing",
                                      "--quiet"],
                                     capture_output=True, text=True, check=True)
                rows.append((pol, dag, json.loads(out.stdout.splitlines()[0])))
            blind = {pol: r["pipelines_per_hour"] for pol, dag, r in rows
                     if dag == "blind"}
            for pol, dag, r in rows:
                print("| %d | %s | %s | %d/%d | %.2f | %.2f | %.3f | %.2f | "
                      "%.4f | %d |" % (
                          n, pol, dag, r["pipelines_done"], r["pipelines"],
                          r["pipeline_makespan_avg_s"] / 3600,
                          r["pipelines_per_hour"],
                          r["pipelines_per_hour"] / blind[pol],
                          r["avg_jct_s"] / 3600, r["wastage_ratio"],
                          r["preemptions"]))


if __name__ == "__main__":
    main()
