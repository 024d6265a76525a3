#!/usr/bin/env python3
"""How much a DAG-aware scheduler could gain on a pipeline trace, and how
much it did: the bounds behind docs/simulation.md's "Why the gain is
small".

    tools/pipeline_bounds.py --trace pipelines.csv --gpus 256
                             [--window-h 24] [JOBS_CSV ...]

From the trace (tools/gen_pipelines.py's columns): the pipelines' mean
critical path (the longest chain of stage durations, a lower bound on a
pipeline's makespan whatever the scheduler), and the GPU-seconds they use
against what they would hold if each pipeline ran as one allocation of
its largest stage for the length of its critical path (the baseline that
keeps GPUs idle between stages; its ratio bounds the gain of stage-level
allocation at saturation).  From each `allot sim --jobs-csv` file: the
pipelines completed within the first --window-h hours and the share of
the cluster's GPU-time busy in that window (first start to end of each
job: a preempted job's gap counts as busy, which makes the share a little
high where there were preemptions); 1 / busy share is about the most any
schedule could do more in that window, as only idle GPU-time can be
turned into more completed work.
"""
import argparse
import collections
import csv


def trace_bounds(path):
    st = collections.defaultdict(dict)
    for r in csv.DictReader(open(path)):
        needs = r["needs"].split(";") if r.get("needs") else []
        st[r["pipeline_id"]][r["stage"]] = (
            int(r["duration_s"]), int(r["num_gpus"] or 0), needs)
    used = held = cp_sum = 0
    for stages in st.values():
        memo = {}

        def finish(s, stages=stages, memo=memo):
            if s not in memo:
                d, _, needs = stages[s]
                memo[s] = d + max([finish(x) for x in needs] or [0])
            return memo[s]
        cp = max(finish(s) for s in stages)
        cp_sum += cp
        used += sum(d * g for d, g, _ in stages.values())
        held += max(g for _, g, _ in stages.values()) * cp
    return len(st), cp_sum / max(1, len(st)), used, held


def run_figures(path, gpus, window):
    ends = collections.defaultdict(int)
    busy = 0
    for r in csv.DictReader(open(path)):
        p = r["job_id"].split(".")[0]
        a, b, g = int(r["first_start_s"]), int(r["end_s"]), int(r["gpus"])
        ends[p] = max(ends[p], b)
        if g > 0 and a >= 0:
            busy += g * max(0, min(b, window) - min(a, window))
    done = sum(1 for e in ends.values() if 0 < e <= window)
    return done, busy / (gpus * window)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--window-h", type=float, default=24)
    ap.add_argument("runs", nargs="*")
    a = ap.parse_args()
    n, cp, used, held = trace_bounds(a.trace)
    print("pipelines %d, mean critical path %.0f s, GPU-s used %d, held as "
          "one allocation %d (x%.2f)" % (n, cp, used, held, held / used))
    w = int(a.window_h * 3600)
    for path in a.runs:
        done, busy = run_figures(path, a.gpus, w)
        print("%s: %d pipelines completed in the first %g h, GPU busy "
              "share %.3f (at most x%.2f more)" % (path, done, a.window_h,
                                                   busy, 1 / busy))


if __name__ == "__main__":
    main()
