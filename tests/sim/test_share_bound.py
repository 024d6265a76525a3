#!/usr/bin/env python3
"""tools/share_bound.py against hand-made traces whose answer is known.

One 8-GPU node, two queues (A, B) deserving 4 GPUs each.  B holds eight
1-GPU jobs for 100 h from time 0, so in every hour up to 100 h B's fair
share is at least half the cluster whatever A asks.  A's 8-GPU job of 2 h,
with no checkpoints, must run 2 h without a break: some hour then has A
holding at least 8 GPUs x 3600 s, all the cluster, against a fair share of
at most one half: one forced queue-hour, of at most 200 with demand.  With
checkpoints every 30 min a schedule can run it in slices of 30 min, 15 of
them in an hour (a quarter of the cluster's GPU-time, below A's half): no
forced hour.  Four such gangs in A over 10 h of B: at least 4 forced
queue-hours of at most 20, more than 5%: share_error_p95 <= 0.05 is
impossible for any schedule ending by 10 h."""
import json
import os
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]
HDR = "job_id,submit_time_s,duration_s,num_gpus,num_cpus,user,queue,status\n"


def run(rows, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(HDR + "".join(rows))
    try:
        out = subprocess.run(
            [sys.executable, TOOL, "--trace", f.name, "--nodes", "1",
             "--gpus-per-node", "8", "--json", *args],
            check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)


def b_rows(hours):
    return ["b%d,0,%d,1,,,B,\n" % (k, hours * 3600) for k in range(8)]


fails = 0


def check(name, got, want):
    global fails
    ok = got == want
    print("%s %s: got %r, want %r" % ("ok" if ok else "FAIL", name, got, want))
    fails += not ok


r = run(b_rows(100) + ["a0,0,7200,8,,,A,\n"], "--checkpoint-interval", "0")
check("no checkpoints: forced", r["forced_queue_hours"], 1)
check("no checkpoints: max hours", r["max_queue_hours"], 200)
check("no checkpoints: verdict", r["p95_within_tol_impossible"], False)
r = run(b_rows(100) + ["a0,0,7200,8,,,A,\n"])
check("30-min checkpoints: forced", r["forced_queue_hours"], 0)
four = ["a%d,0,7200,8,,,A,\n" % k for k in range(4)]
r = run(b_rows(10) + four, "--checkpoint-interval", "0")
check("four gangs: forced", r["forced_queue_hours"], 4)
check("four gangs: max hours", r["max_queue_hours"], 20)
check("four gangs: verdict", r["p95_within_tol_impossible"], True)
# A later horizon gives the gangs hours in which B has no certain demand.
r = run(b_rows(10) + four, "--checkpoint-interval", "0", "--horizon-h", "12")
check("four gangs, horizon 12 h: forced", r["forced_queue_hours"], 0)
sys.exit(1 if fails else 0)
