#!/usr/bin/env python3
"""share_bound.py -- a lower bound, valid for every schedule, on the
queue-hours in which a queue's share of the allocated GPU-time must miss its
fair share by more than a tolerance (5% by default), as `allot sim`'s
`share_error_p95` measures it (docs/simulation.md, "Shares, precisely", and
"What cannot be met, and why").

    tools/share_bound.py --trace data/traces/elasticflow-itp/common.csv \\
        --trace-filter-queue cluster01 --nodes 8 --gpus-per-node 8 \\
        --queues 8 [--checkpoint-interval 1800] [--horizon-h H] [--json]

The argument.  The metric compares, per hour h and queue q with demand in
it, a_q = A_q / A (q's share of the GPU-seconds allocated in the hour) with
phi_q = F_q / F (its share of the integrated max-min fair share, weighted by
deserved GPUs and capped by the queue's demand: running plus pending GPUs).
Both are hourly integrals, so a schedule that preempts can time-slice a gang
within the hour and give its queue any average between 0 and its demand: the
GPU sizes of the jobs that could be present do not force any hour to err.
What every schedule must do is run each job, at least once, without a break
for min(duration, checkpoint interval) seconds: the simulator keeps a run's
work only at whole checkpoint intervals (a shorter run saves nothing unless
it finishes the job), and the restart overhead only lengthens runs.  Such a
run of L seconds overlaps some hour by at least o = min(L / 2, 3600) s, and
in that hour
    a_q >= g x o / A_max(h),   A_max(h) = 3600 x min(C, the GPUs of all
                                          jobs submitted before the hour ends)
    phi_q <= x / (x + y)       x, y: q's and the other queues' water-filled
                               fair shares with q at its largest possible
                               demand (every job of q submitted before the
                               hour ends) and every other queue at its
                               smallest (the jobs that are certainly present
                               the whole hour: submitted by its start, and
                               not able to finish before its end even if
                               started at submission).
(Water-filling is monotone: more demand for q raises q's fair share and
lowers the others' total; more demand for another queue does the opposite.)
If a_q > (1 + tol) phi_q holds for every hour into which the run could fall
(from the job's submission to the horizon), the job forces one queue-hour of
q to err by more than tol.  Forced runs of one queue may share an hour, but an
hour holds at most C x 3600 GPU-seconds: queue q has at least
ceil(sum of its forced runs' g x o / (C x 3600)) such hours.

The count of queue-hours with demand depends on the schedule; every one of
them lies between the hour of the queue's first submission and the horizon,
so N_max (their number, summed over queues) bounds it.  With nearest-rank
p95, share_error_p95 <= tol needs at most N - ceil(0.95 N) <= 0.05 N_max
queue-hours above tol: when the forced ones exceed 0.05 x N_max, no schedule
that ends by the horizon meets it.  The horizon defaults to the earliest end
any schedule could have (the latest submission + duration); a run that ends
later has more hours to hide forced runs in, so pass `--horizon-h` (hours
from the first submission, e.g. a policy's makespan) to bound such runs.

Jobs that no node can hold (more GPUs than the cluster, or more CPUs per task
than a node) and jobs without GPUs are left out, as the simulator leaves them
out of the demand.  Queues: `--queues N` assigns a job to queue
hash(job_id) mod N with the simulator's hash, each deserving C/N GPUs;
without it, one queue per value of the trace's `queue` column, as
`allot sim`'s default.

Standard library only.  Prints a summary, or with --json one object.
"""
import argparse
import csv
import json
import math
import sys

HOUR = 3600


def sim_hash(s):
    """allot sim's queue hash (src/sim/parse.c al__hash)."""
    h = 1469598103934665603
    for b in s.encode():
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def waterfill(w, d, cap):
    """Weighted max-min fair shares: f_k = min(d_k, level x w_k)."""
    n = len(w)
    f = [0.0] * n
    open_ = [k for k in range(n) if w[k] > 0 and d[k] > 0]
    while open_ and cap > 1e-12:
        sw = sum(w[k] for k in open_)
        level = cap / sw
        met = [k for k in open_ if d[k] - f[k] <= level * w[k]]
        if not met:
            for k in open_:
                f[k] += level * w[k]
            cap = 0
            break
        for k in met:
            cap -= d[k] - f[k]
            f[k] = d[k]
        open_ = [k for k in open_ if k not in met]
    return f


def load(a):
    jobs = []
    with open(a.trace, newline="", encoding="utf-8-sig") as fh:
        for row in csv.DictReader(fh):
            if a.trace_filter_queue and row.get("queue") != a.trace_filter_queue:
                continue
            g = float(row["num_gpus"])
            cpus = float(row["num_cpus"]) if row.get("num_cpus") else 0.0
            jobs.append((row["job_id"], int(row["submit_time_s"]),
                         int(row["duration_s"]), g, cpus,
                         row.get("queue") or "default"))
    return jobs


def ntasks(g, gpn):
    if g <= gpn:
        return 1
    d = max(x for x in range(1, gpn + 1) if int(g) % x == 0)
    return int(g) // d


def bound(jobs, nodes, gpn, cpn, nq_arg, ci, tol, horizon_h=None):
    cap = nodes * gpn
    if not jobs:
        return None
    t0 = min(j[1] for j in jobs)
    if nq_arg:
        names = ["q%d" % k for k in range(nq_arg)]
        qof = {j[0]: sim_hash(j[0]) % nq_arg for j in jobs}
    else:
        names = sorted({j[5] for j in jobs})
        idx = {n: k for k, n in enumerate(names)}
        qof = {j[0]: idx[j[5]] for j in jobs}
    nq = len(names)
    milli = cap * 1000
    w = [(milli // nq + (1 if k < milli % nq else 0)) / 1000 for k in range(nq)]
    kept = []
    for jid, s, dur, g, cpus, _ in jobs:
        if g <= 0 or g > cap or cpus / ntasks(g, gpn) > cpn:
            continue
        kept.append((qof[jid], s - t0, dur, g))
    if not kept:
        return None
    earliest_end = max(s + d for _, s, d, _ in kept)
    horizon = int(horizon_h * HOUR) if horizon_h else earliest_end
    horizon = max(horizon, earliest_end)
    nh = -(-horizon // HOUR)  # hours, the last one maybe partial
    # Certain demand (present the whole hour) and largest possible demand
    # (submitted before the hour ends), per queue and hour.
    cert = [[0.0] * (nh + 1) for _ in range(nq)]
    subm = [[0.0] * (nh + 1) for _ in range(nq)]
    first = [nh] * nq
    cert_hours = [set() for _ in range(nq)]
    for q, s, dur, g in kept:
        h_sub = s // HOUR
        first[q] = min(first[q], h_sub)
        subm[q][h_sub] += g
        lo = -(-s // HOUR)  # first hour starting at or after s
        hi = (s + dur) // HOUR  # hours ending at or before s + dur
        if hi > lo:
            cert[q][lo] += g
            cert[q][min(hi, nh)] -= g
        # Some demand in every hour the job must overlap: [s, s + dur).
        if dur > 0:
            for h in range(h_sub, min(nh, -(-(s + dur) // HOUR))):
                cert_hours[q].add(h)
    for q in range(nq):
        acc_c = acc_s = 0.0
        for h in range(nh + 1):
            acc_c += cert[q][h]
            acc_s += subm[q][h]
            cert[q][h] = acc_c
            subm[q][h] = acc_s
    # Upper bounds on phi_q and on A, per hour.
    phi = [[1.0] * nh for _ in range(nq)]
    amax = [0.0] * nh
    for h in range(nh):
        amax[h] = HOUR * min(cap, sum(subm[q][h] for q in range(nq)))
        for q in range(nq):
            d = [cert[r][h] for r in range(nq)]
            d[q] = min(cap, subm[q][h])
            f = waterfill(w, d, float(cap))
            x = f[q]
            y = sum(f) - x
            phi[q][h] = x / (x + y) if x + y > 0 else 1.0
    forced_gs = [0.0] * nq
    forced_jobs = [0] * nq
    for q, s, dur, g in kept:
        run = min(dur, ci) if ci > 0 else dur
        o = min(run / 2, HOUR)
        if o <= 0:
            continue
        # Every hour the run could fall into: from the hour of submission
        # to the last (maybe partial) hour before the horizon.  A partial
        # hour allocates less than amax: the bound on a_q stays a bound.
        ok = True
        for h in range(s // HOUR, nh):
            if not g * o / amax[h] > (1 + tol) * phi[q][h]:
                ok = False
                break
        if ok:
            forced_gs[q] += g * o
            forced_jobs[q] += 1
    forced = sum(math.ceil(x / (cap * HOUR) - 1e-12) for x in forced_gs)
    nmax = sum(max(0, nh - first[q]) for q in range(nq))
    ncert = sum(len(c) for c in cert_hours)
    impossible = forced > 0.05 * nmax
    return {
        "capacity_gpus": cap, "queues": nq, "jobs": len(kept),
        "checkpoint_interval_s": ci, "tolerance": tol,
        "horizon_h": horizon / HOUR,
        "earliest_end_h": earliest_end / HOUR,
        "forced_jobs": sum(forced_jobs),
        "forced_queue_hours": forced,
        "certain_queue_hours": ncert,
        "max_queue_hours": nmax,
        "forced_fraction": forced / nmax if nmax else 0.0,
        "forced_fraction_of_certain": forced / ncert if ncert else 0.0,
        "p95_within_tol_impossible": impossible,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--trace-filter-queue")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--cpus-per-node", type=float, default=96)
    ap.add_argument("--queues", type=int, default=0,
                    help="N hash queues (default: the trace's queue column)")
    ap.add_argument("--checkpoint-interval", type=int, default=1800,
                    help="seconds; 0: no checkpoints (default 1800)")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--horizon-h", type=float,
                    help="hours from the first submission by which the "
                    "schedules end (default: the earliest possible end)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.nodes <= 0 or a.gpus_per_node <= 0 or a.queues < 0 \
            or a.checkpoint_interval < 0 or a.tolerance < 0:
        ap.error("sizes, the interval and the tolerance must be positive")
    try:
        jobs = load(a)
    except (OSError, KeyError, ValueError) as e:
        print("share_bound.py: cannot read %s: %s" % (a.trace, e),
              file=sys.stderr)
        return 2
    r = bound(jobs, a.nodes, a.gpus_per_node, a.cpus_per_node, a.queues,
              a.checkpoint_interval, a.tolerance,
              a.horizon_h)
    if r is None:
        print("share_bound.py: no job with GPUs that the cluster can hold",
              file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, sort_keys=True))
    else:
        print("forced queue-hours %d (%d jobs) of at most %d with demand "
              "(%.4f; %.4f of the %d certain) by %.1f h; share_error_p95 "
              "<= %.2f %s" % (
                  r["forced_queue_hours"], r["forced_jobs"],
                  r["max_queue_hours"], r["forced_fraction"],
                  r["forced_fraction_of_certain"], r["certain_queue_hours"],
                  r["horizon_h"], a.tolerance,
                  "impossible" if r["p95_within_tol_impossible"]
                  else "not excluded by this bound"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
