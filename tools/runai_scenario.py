#!/usr/bin/env python3
"""Generate the Run:ai case-study scenario for `allot sim`.

    tools/runai_scenario.py OUT_DIR [--seed 7] [--days 28]

Writes OUT_DIR/trace.csv (common trace CSV, the `user` column names the
engineer), OUT_DIR/cluster.txt (heterogeneous: 4 nodes x 8 A100 + 7 nodes x
4 V100 = 60 GPUs) and OUT_DIR/queues.txt (30 queues, one per engineer, each
deserving 2 GPUs with equal over-quota weight).  Then:

    allot sim --trace OUT_DIR/trace.csv --cluster OUT_DIR/cluster.txt \
        --queues-file OUT_DIR/queues.txt --policy static,allot

`static` is the "before" picture of the Run:ai white paper (each engineer
owns 2 GPUs); `allot` pools the same GPUs with a guaranteed quota of 2 each.

Assumptions (the white paper gives none of these; see docs/simulation.md):
* 30 engineers; 6 run hyper-parameter sweeps ("heavy"), 24 mostly debug and
  run single experiments ("light").  Workloads are bursty: work arrives
  during working hours (09:00-19:00), every day.
* light: about 1.6 jobs a day (Poisson), 1 GPU, run time log-normal with a
  median of 3 h (clipped to 10 min .. 24 h): on average 0.2 GPUs each.
* heavy: about 2 sweeps a day (Poisson), each of 6-14 jobs of 1 GPU, run
  time log-normal with a median of 6 h: on average about 5-6 GPUs each.
* Every job asks for at most 2 GPUs, so each can run inside its engineer's
  static share: nothing is unschedulable under either policy and both
  complete the same work; the difference is how long it takes.
Standard library only; the output depends only on --seed and --days.
"""
import argparse
import math
import os
import random

ENGINEERS = 30
HEAVY = 6


def lognormal(rng, median, sigma, lo, hi):
    v = median * math.exp(rng.gauss(0, sigma))
    return int(min(max(v, lo), hi))


def poisson(rng, lam):
    # Knuth's method; lam is small here.
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--days", type=int, default=28)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for e in range(ENGINEERS):
        user = f"eng{e:02d}"
        heavy = e < HEAVY
        for day in range(a.days):
            base = day * 86400 + 9 * 3600
            if heavy:
                for s in range(poisson(rng, 2.0)):
                    t = base + int(rng.random() * 10 * 3600)
                    for k in range(rng.randint(6, 14)):
                        rows.append((t + k, lognormal(rng, 6 * 3600, 0.8, 600,
                                                      48 * 3600), 1, user))
            else:
                for s in range(poisson(rng, 1.6)):
                    t = base + int(rng.random() * 10 * 3600)
                    rows.append((t, lognormal(rng, 3 * 3600, 1.0, 600,
                                              24 * 3600),
                                 1 if rng.random() < 0.8 else 2, user))
    rows.sort()
    with open(os.path.join(a.out, "trace.csv"), "w") as f:
        f.write("job_id,submit_time_s,duration_s,num_gpus,num_cpus,user,"
                "queue,status\n")
        for i, (t, d, g, u) in enumerate(rows):
            f.write(f"job{i:05d},{t},{d},{g},,{u},{u},\n")
    with open(os.path.join(a.out, "cluster.txt"), "w") as f:
        f.write("# Run:ai scenario: 60 heterogeneous GPUs\n"
                "group name=a100 count=4 gpus=8 model=A100-80GB "
                "gpu_mem_gib=80 cpus=128 mem_gib=1024 nvlink=8\n"
                "group name=v100 count=7 gpus=4 model=V100-32GB "
                "gpu_mem_gib=32 cpus=48 mem_gib=384\n")
    with open(os.path.join(a.out, "queues.txt"), "w") as f:
        f.write("# Run:ai scenario: one queue per engineer, 2 GPUs each\n")
        for e in range(ENGINEERS):
            f.write(f"queue name=eng{e:02d} deserved=2 weight=1\n")
    gpu_h = sum(d * g for _, d, g, _ in rows) / 3600
    print(f"{a.out}: {len(rows)} jobs, {gpu_h:.0f} GPU-hours over "
          f"{a.days} days (offered {gpu_h / (60 * 24 * a.days):.0%} of 60 "
          f"GPUs)")


if __name__ == "__main__":
    main()
