#!/usr/bin/env python3
"""Generate a trace of ML pipelines for `allot sim` (the common trace CSV
with the columns pipeline_id,stage,needs).

    tools/gen_pipelines.py --nodes 32 [--gpus-per-node 8] [--load 0.9]
                           [--hours 24] [--seed 1] > pipelines.csv

Each pipeline is one workflow of the kind ML teams run, its stages submitted
together at the pipeline's arrival:

  prep     CPU only (8 cores), data preparation, median 15 min
  train    a gang of 1, 2, 4, 8, 16 or 32 GPUs (probabilities 0.25, 0.2,
           0.2, 0.2, 0.1, 0.05; never more than half the cluster), after
           prep, median 2 h
  eval     1 GPU after train, median 15 min
  infer-K  fan-out: 2 to 8 batch-inference shards of 1 GPU each after
           eval, median 20 min
  report   CPU only (2 cores) after every shard, median 5 min

Durations are log-normal (sigma 0.6 for the short stages, 0.9 for
training, cut at 8x the median) so a few run long, as real jobs do.  These
shapes are illustrative, not fitted to a published trace: the GPU counts
follow the skew reported for shared training clusters (Philly, Helios,
Alibaba PAI: most jobs use 1-8 GPUs, a few use 16 or more), and the stages
are the prep/train/eval/fan-out-inference chain such workflows have.

Arrivals are Poisson with the rate that makes the offered load (requested
GPU-seconds per second over the cluster's GPUs) equal --load over the
--hours of arrivals; the mean GPU-seconds of a pipeline is estimated from
100,000 draws of a generator with a different seed.  The output is the same
for the same arguments on every machine (Python's random with --seed).
"""
import argparse
import math
import random
import sys

TRAIN_GPUS = [(1, 0.25), (2, 0.2), (4, 0.2), (8, 0.2), (16, 0.1), (32, 0.05)]


def lognormal(rng, median, sigma):
    return max(30, int(min(median * 8, median * math.exp(sigma * rng.gauss(0, 1)))))


def draw(rng, max_gpus):
    """One pipeline: a list of (stage, duration_s, gpus, cpus, needs)."""
    x, acc, gpus = rng.random(), 0.0, 1
    for g, p in TRAIN_GPUS:
        acc += p
        if x <= acc:
            gpus = g
            break
    gpus = min(gpus, max_gpus)
    stages = [
        ("prep", lognormal(rng, 900, 0.6), 0, 8, []),
        ("train", lognormal(rng, 7200, 0.9), gpus, 0, ["prep"]),
        ("eval", lognormal(rng, 900, 0.6), 1, 0, ["train"]),
    ]
    shards = rng.randint(2, 8)
    for k in range(shards):
        stages.append(("infer-%d" % k, lognormal(rng, 1200, 0.6), 1, 0, ["eval"]))
    stages.append(("report", lognormal(rng, 300, 0.6), 0, 2,
                   ["infer-%d" % k for k in range(shards)]))
    return stages


def gpu_seconds(stages):
    return sum(d * g for _, d, g, _, _ in stages)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.nodes < 1 or a.gpus_per_node < 1 or a.load <= 0 or a.hours <= 0:
        ap.error("--nodes, --gpus-per-node, --load and --hours must be > 0")
    cap = a.nodes * a.gpus_per_node
    max_gpus = max(1, cap // 2)
    est = random.Random(a.seed + 1000003)
    mean = sum(gpu_seconds(draw(est, max_gpus)) for _ in range(100000)) / 100000
    rate = a.load * cap / mean  # pipelines per second
    rng = random.Random(a.seed)
    out = sys.stdout
    out.write("job_id,submit_time_s,duration_s,num_gpus,num_cpus,user,queue,"
              "status,pipeline_id,stage,needs\n")
    t, n = 0.0, 0
    while True:
        t += rng.expovariate(rate)
        if t >= a.hours * 3600:
            break
        n += 1
        pid = "p%d" % n
        for name, dur, gpus, cpus, needs in draw(rng, max_gpus):
            out.write("%s.%s,%d,%d,%d,%s,u%d,,,%s,%s,%s\n" % (
                pid, name, int(t), dur, gpus, cpus if cpus else "",
                n % 16, pid, name, ";".join(needs)))
    sys.stderr.write("gen_pipelines: %d pipelines, mean %.0f GPU-s each, "
                     "%.2f per hour on %d GPUs (load %.2f)\n"
                     % (n, mean, rate * 3600, cap, a.load))


if __name__ == "__main__":
    main()
