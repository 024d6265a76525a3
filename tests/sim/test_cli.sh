#!/bin/sh
# test_cli.sh ALLOT DATA_DIR -- drives the `allot sim` binary: malformed
# input is refused with exit status 1 and a message naming file, line and
# field; usage errors exit 2; the same inputs give identical output (JSON,
# time series and report) byte for byte.
set -u
ALLOT=$1
DATA=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
pass=0
check() { # name, condition result
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); echo "ok   $1"
    else fail=$((fail + 1)); echo "FAIL $1"; fi
}

"$ALLOT" sim --trace "$DATA/bad.csv" --nodes 1 >"$TMP/out" 2>"$TMP/err"
rc=$?
check "malformed trace exits 1" $([ $rc -eq 1 ]; echo $?)
grep -q "bad.csv:3: field 'duration_s'" "$TMP/err"
check "message names line 3 and duration_s" $?
grep -q "bad.csv:4: field 'num_gpus'" "$TMP/err"
check "message names line 4 and num_gpus" $?
check "nothing printed on stdout" $([ ! -s "$TMP/out" ]; echo $?)

"$ALLOT" sim --trace "$TMP/missing.csv" --nodes 1 2>"$TMP/err"
check "missing trace exits 1" $([ $? -eq 1 ]; echo $?)

"$ALLOT" sim --nodes 1 2>/dev/null
check "no --trace exits 2" $([ $? -eq 2 ]; echo $?)
"$ALLOT" sim --trace "$DATA/small.csv" --nodes 1 --policy nope 2>/dev/null
check "unknown policy exits 2" $([ $? -eq 2 ]; echo $?)
"$ALLOT" sim --trace "$DATA/small.csv" --nodes 0 2>/dev/null
check "zero nodes exits 2" $([ $? -eq 2 ]; echo $?)
"$ALLOT" sim --trace "$DATA/small.csv" --nodes 1 --order lifo 2>"$TMP/err"
check "unknown order exits 2" $([ $? -eq 2 ]; echo $?)
grep -q "\-\-order: expected short or fifo, got 'lifo'" "$TMP/err"
check "order message names the value" $?

printf 'group name=x count=two gpus=8\n' >"$TMP/c.txt"
"$ALLOT" sim --trace "$DATA/small.csv" --cluster "$TMP/c.txt" 2>"$TMP/err"
rc=$?
check "malformed cluster file exits 1" $([ $rc -eq 1 ]; echo $?)
grep -q "c.txt:1: field 'count'" "$TMP/err"
check "cluster message names line and field" $?

run() { # out-prefix, extra args
    p=$1; shift
    "$ALLOT" sim --trace "$DATA/small.csv" --no-timing --quiet --json \
        --policy all --timeseries "$TMP/$p.csv" --report "$TMP/$p.html" \
        "$@" >"$TMP/$p.json"
}
run a --nodes 4 --gpus-per-node 8 --queues 3
check "run succeeds" $?
run b --nodes 4 --gpus-per-node 8 --queues 3
cmp -s "$TMP/a.json" "$TMP/b.json"
check "identical JSON on the same inputs" $?
cmp -s "$TMP/a.allot.csv" "$TMP/b.allot.csv"
check "identical time series" $?
cmp -s "$TMP/a.html" "$TMP/b.html"
check "identical report" $?
check "one JSON line per policy" $([ "$(wc -l <"$TMP/a.json")" -eq 6 ]; echo $?)
grep -q '"completed":12' "$TMP/a.json"
check "all jobs complete" $?
for f in jobs completed unschedulable avg_jct_s p50_jct_s p95_jct_s p99_jct_s \
    avg_queue_s p95_queue_s worst_queue_avg_queue_s makespan_s \
    gpu_alloc_ratio wastage_ratio preemptions lost_gpu_hours jain_fairness \
    sim_wall_s cycles avg_cycle_ms per_queue per_size preemptions_per_job \
    restart_gpu_hours gpu_hours_lost_to_preemption share_error_p95 \
    share_hours max_guarantee_wait_s guarantee_wait_hours \
    max_guarantee_wait_gpu_only_s guarantee_wait_gpu_only_hours \
    restart_overhead_s checkpoint_interval_s; do
    grep -q "\"$f\":" "$TMP/a.json" || { echo "  missing field $f"; fail=$((fail + 1)); }
done
grep -q "<svg" "$TMP/a.html"
check "report has plots" $?

"$ALLOT" sim --trace "$DATA/small.csv" --cluster "$DATA/cluster.txt" \
    --queues-file "$DATA/queues.txt" --quiet >"$TMP/t.txt"
check "cluster and queues files" $?
grep -q "vision" "$TMP/t.txt"
check "table names the queues" $?
"$ALLOT" sim --trace "$DATA/small.csv" --nodes 2 --queues-from user \
    --trace-filter-queue nlp --json --quiet >"$TMP/f.json"
grep -q '"jobs":4,' "$TMP/f.json"
check "queue filter keeps 4 nlp jobs" $?

# Order inside a queue, by hand: one GPU; a (100 s) runs from 0; b (1000 s,
# submitted at 1) and c (10 s, at 2) wait.  First come first served: b
# 100-1100, c 1100-1110, JCTs 100, 1099, 1108, average 769.  Shortest first
# without service levels: c 100-110, b 110-1110, JCTs 100, 1109, 108,
# average 439.  allot's default also lets c evict a, which ran 2 s of its
# 200 s estimate: without a restart's cost, c 2-12, a 12-112, b 112-1112,
# JCTs 112, 1111, 10, average 411; paying the default 60 s to restart, a
# 12-172 and b 172-1172, average 451 (here the eviction does not pay).
printf '%s\n' 'job_id,submit_time_s,duration_s,num_gpus,num_cpus,user,queue,status' \
    'a,0,100,1,,u,q,' 'b,1,1000,1,,u,q,' 'c,2,10,1,,u,q,' >"$TMP/ord.csv"
order_jct() {
    "$ALLOT" sim --trace "$TMP/ord.csv" --nodes 1 --gpus-per-node 1 \
        --no-timing --quiet --json "$@" | grep -o '"avg_jct_s":[0-9.]*' | head -1
}
check "service levels by default, restarts free (avg JCT 411 s)" \
    $([ "$(order_jct --restart-overhead 0)" = '"avg_jct_s":411.0' ]; echo $?)
check "service levels by default, restarts at 60 s (avg JCT 451 s)" \
    $([ "$(order_jct)" = '"avg_jct_s":451.0' ]; echo $?)
check "shortest first without levels (avg JCT 439 s)" \
    $([ "$(order_jct --service-levels off)" = '"avg_jct_s":439.0' ]; echo $?)
"$ALLOT" sim --trace "$TMP/ord.csv" --nodes 1 --service-levels 5,4 \
    2>"$TMP/err" >/dev/null
check "--service-levels 5,4 exits 2" $([ $? -eq 2 ]; echo $?)
grep -q "\-\-service-levels: expected off or up to 4" "$TMP/err"
check "--service-levels 5,4 says why" $?
check "--order fifo: first come first served (769 s)" \
    $([ "$(order_jct --order fifo --service-levels off)" = '"avg_jct_s":769.0' ]; echo $?)
check "--order short on a baseline (fifo policy: 439 s)" \
    $([ "$(order_jct --policy fifo --order short)" = '"avg_jct_s":439.0' ]; echo $?)

# --estimate-noise: validated (a number in [0, 10], else exit 2 with a
# message), documented in --help, 0 identical to no noise byte for byte, and
# a noisy run reproducible for one seed.
for v in 11 -1 abc ''; do
    "$ALLOT" sim --trace "$DATA/small.csv" --nodes 1 --estimate-noise "$v" \
        2>"$TMP/err" >/dev/null
    check "--estimate-noise '$v' exits 2" $([ $? -eq 2 ]; echo $?)
done
grep -q "\-\-estimate-noise: expected a number in \[0, 10\], got ''" "$TMP/err"
check "estimate-noise message names the range" $?
"$ALLOT" sim --help | grep -q -- "--estimate-noise S"
check "--help documents --estimate-noise" $?
noise() { # out, extra args
    o=$1; shift
    "$ALLOT" sim --trace "$DATA/small.csv" --nodes 2 --gpus-per-node 4 \
        --queues 2 --no-timing --quiet --json --policy all "$@" >"$TMP/$o"
}
noise n0 && noise n00 --estimate-noise 0 --estimate-seed 9
cmp -s "$TMP/n0" "$TMP/n00"
check "--estimate-noise 0 changes nothing" $?
noise n1 --estimate-noise 2 --estimate-seed 5 &&
    noise n2 --estimate-noise 2 --estimate-seed 5
check "noisy runs succeed" $?
cmp -s "$TMP/n1" "$TMP/n2"
check "noisy runs are reproducible" $?

# --restart-overhead: validated, documented, in the JSON; on the order
# trace above nothing is evicted, so it changes no JCT.
"$ALLOT" sim --trace "$DATA/small.csv" --nodes 1 --restart-overhead -5 \
    2>"$TMP/err" >/dev/null
check "--restart-overhead -5 exits 2" $([ $? -eq 2 ]; echo $?)
"$ALLOT" sim --help | grep -q -- "--restart-overhead S"
check "--help documents --restart-overhead" $?
"$ALLOT" sim --trace "$TMP/ord.csv" --nodes 1 --gpus-per-node 1 --json \
    --quiet --restart-overhead 120 --checkpoint-interval 600 >"$TMP/ro.json"
grep -q '"restart_overhead_s":120,"checkpoint_interval_s":600' "$TMP/ro.json"
check "restart overhead and checkpoint interval in the JSON" $?
"$ALLOT" sim --trace "$TMP/ord.csv" --nodes 1 --gpus-per-node 1 --quiet \
    --jobs-csv "$TMP/ro.csv" >/dev/null
head -1 "$TMP/ro.csv" | grep -q ',unschedulable,restart_gpu_s$'
check "jobs CSV ends with restart_gpu_s" $?

# Pipelines: --dag validated (exit 2 with the choices), the pipeline
# figures in the JSON, a cycle in a trace refused with its line, and the
# four modes reproducible.
"$ALLOT" sim --trace "$DATA/small.csv" --nodes 1 --dag sometimes \
    2>"$TMP/err" >/dev/null
check "--dag sometimes exits 2" $([ $? -eq 2 ]; echo $?)
grep -q "expected on, off, blind or hold, got 'sometimes'" "$TMP/err"
check "--dag message lists the modes" $?
printf 'job_id,submit_time_s,duration_s,num_gpus,pipeline_id,stage,needs\n%s\n%s\n%s\n' \
    'a,0,100,1,p,a,' 'b,0,50,2,p,b,a' 'c,0,50,1,p,c,a' >"$TMP/pipe.csv"
for d in on off blind hold; do
    "$ALLOT" sim --trace "$TMP/pipe.csv" --nodes 1 --dag "$d" --json \
        --no-timing --quiet >"$TMP/pipe.$d" 2>&1 &&
        "$ALLOT" sim --trace "$TMP/pipe.csv" --nodes 1 --dag "$d" --json \
            --no-timing --quiet >"$TMP/pipe2.$d" 2>&1 &&
        cmp -s "$TMP/pipe.$d" "$TMP/pipe2.$d"
    check "--dag $d runs, reproducibly" $?
    grep -q "\"dag\":\"$d\",\"pipelines\":1,\"pipelines_done\":1,\"pipeline_makespan_avg_s\":150.0" \
        "$TMP/pipe.$d"
    check "--dag $d: the pipeline's figures" $?
done
printf 'job_id,submit_time_s,duration_s,num_gpus,pipeline_id,stage,needs\n%s\n%s\n' \
    'a,0,1,1,p,a,b' 'b,0,1,1,p,b,a' >"$TMP/cycle.csv"
"$ALLOT" sim --trace "$TMP/cycle.csv" --nodes 1 2>"$TMP/err" >/dev/null
check "a cycle of needs exits 1" $([ $? -eq 1 ]; echo $?)
grep -q "cycle.csv:2: field 'needs': stage 'a' of pipeline 'p' is on a cycle" \
    "$TMP/err"
check "the cycle is named with its line" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
