/*
 * test_sim.c -- tests of the simulator library: the parsers, and tiny traces
 * whose job completion times are worked out by hand in the comments.  Every
 * run goes through the real scheduling core.
 *
 * The runner ends with the line "N passed, N failed" and exits non-zero on
 * failure (STYLE rule 13).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h" /* al__waterfill */

static int failed_asserts;

#define FAIL_AT() fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__)

#define ASSERT_INT(a, op, b)                                                   \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (!(a_ op b_)) {                                                     \
            FAIL_AT();                                                         \
            fprintf(stderr, "%s %s %s: %lld vs %lld\n", #a, #op, #b, a_, b_);  \
            failed_asserts++;                                                  \
        }                                                                      \
    } while (0)

#define ASSERT_NEAR(a, b, eps)                                                 \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        if (!(fabs(a_ - b_) <= (eps))) {                                       \
            FAIL_AT();                                                         \
            fprintf(stderr, "%s == %s: %.6f vs %.6f\n", #a, #b, a_, b_);       \
            failed_asserts++;                                                  \
        }                                                                      \
    } while (0)

#define ASSERT_STR_HAS(hay, needle)                                            \
    do {                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                \
        if (h_ == NULL || strstr(h_, n_) == NULL) {                            \
            FAIL_AT();                                                         \
            fprintf(stderr, "'%s' should contain '%s'\n", h_ ? h_ : "(null)",  \
                    n_);                                                       \
            failed_asserts++;                                                  \
        }                                                                      \
    } while (0)

#define HEADER                                                                 \
    "job_id,submit_time_s,duration_s,num_gpus,num_cpus,user,queue,status\n"

static al_trace_t *
trace(const char *text)
{
    al_trace_t *t = NULL;
    char *cause = NULL;
    int rc = al_trace_parse("t.csv", text, strlen(text), NULL, &t, &cause);
    if (rc != 0) {
        fprintf(stderr, "  unexpected parse error: %s\n", cause);
        free(cause);
        failed_asserts++;
        return NULL;
    }
    return t;
}

/* Runs trace text on nodes x gpus under the options o (the queues file,
 * when not NULL, replaces o's queues); fills *s; returns the result (caller
 * destroys) or NULL. */
static al_sim_result_t *
run_opts(const char *text, int nodes, int gpus, const al_sim_opts_t *opts,
         const char *queues_file, al_sim_summary_t *s)
{
    al_trace_t *t = trace(text);
    al_cluster_t *c = al_cluster_homogeneous(nodes, gpus, NULL, 0, 96, 1024);
    al_queues_t *q = NULL;
    al_sim_opts_t o = *opts;
    if (queues_file) {
        char *cause = NULL;
        if (al_queues_parse("q.txt", queues_file, strlen(queues_file), &q,
                            &cause) != 0) {
            fprintf(stderr, "  queues: %s\n", cause);
            free(cause);
            failed_asserts++;
        }
        o.qmode = AL_QMODE_FILE;
        o.qfile = q;
    }
    al_sim_result_t *r = NULL;
    char *cause = NULL;
    if (t == NULL || c == NULL || al_sim_run(t, c, &o, &r, &cause) != 0) {
        fprintf(stderr, "  run failed: %s\n", cause ? cause : "?");
        free(cause);
        failed_asserts++;
        al_trace_destroy(t);
        al_cluster_destroy(c);
        al_queues_destroy(q);
        return NULL;
    }
    al_report_summary(r, s);
    al_cluster_destroy(c);
    al_queues_destroy(q);
    return r;
}

/* run_opts() with the default options under policy pol. */
static al_sim_result_t *
run(const char *text, int nodes, int gpus, al_policy_t pol,
    const char *queues_file, al_sim_summary_t *s)
{
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.policy = pol;
    return run_opts(text, nodes, gpus, &o, queues_file, s);
}

/* The result keeps a pointer to its trace; free both. */
static void
done(al_sim_result_t *r)
{
    if (r == NULL)
        return;
    al_trace_t *t = (al_trace_t *)r->trace;
    al_sim_result_destroy(r);
    al_trace_destroy(t);
}

static int64_t
jct(const al_sim_result_t *r, int i)
{
    return r->jobs[i].end - r->trace->jobs[i].submit;
}

/* ------------------------------------------------------------------ */

static void
test_trace_ok(void)
{
    al_trace_t *t = trace(HEADER "b,20,5,0.5,2,u1,\"q,1\",Done\r\n"
                                 "a,10,7,8,,,q2,\n"
                                 "\n"
                                 "c,10,0,0,1.5,u2,q2,");
    if (t == NULL)
        return;
    ASSERT_INT(t->njobs, ==, 3);
    /* sorted by submit time, then line */
    ASSERT_STR_HAS(t->jobs[0].id, "a");
    ASSERT_STR_HAS(t->jobs[1].id, "c");
    ASSERT_INT(t->jobs[0].gpu_milli, ==, 8000);
    ASSERT_INT(t->jobs[2].gpu_milli, ==, 500);
    ASSERT_INT(t->jobs[2].cpu_milli, ==, 2000);
    ASSERT_INT(t->jobs[1].cpu_milli, ==, 1500);
    ASSERT_STR_HAS(t->jobs[2].queue, "q,1");
    ASSERT_INT(t->jobs[2].line, ==, 2);
    al_trace_destroy(t);

    /* The queue filter keeps one queue column value. */
    const char *text = HEADER "a,1,1,1,,,c1,\nb,1,1,1,,,c2,\nc,2,1,1,,,c1,\n";
    char *cause = NULL;
    ASSERT_INT(al_trace_parse("t", text, strlen(text), "c1", &t, &cause), ==,
               0);
    ASSERT_INT(t->njobs, ==, 2);
    ASSERT_INT(t->nrows, ==, 3);
    al_trace_destroy(t);
}

static void
expect_error(const char *text, const char *msg)
{
    al_trace_t *t = (al_trace_t *)0x1;
    char *cause = NULL;
    int rc = al_trace_parse("bad.csv", text, strlen(text), NULL, &t, &cause);
    ASSERT_INT(rc, ==, AL_EPARSE);
    ASSERT_INT(t == (al_trace_t *)0x1, ==, 1); /* untouched */
    ASSERT_STR_HAS(cause, msg);
    free(cause);
}

static void
test_trace_errors(void)
{
    expect_error("", "bad.csv:1: empty file");
    expect_error("job_id,submit_time_s,num_gpus\n",
                 "lacks column 'duration_s'");
    expect_error(HEADER "a,1,x,1,,,,\n",
                 "bad.csv:2: field 'duration_s': expected a whole number");
    expect_error(HEADER "a,1,1,1,,,,\nb,-5,1,1,,,,\n",
                 "bad.csv:3: field 'submit_time_s'");
    expect_error(HEADER "a,1,3155760001,1,,,,\n",
                 "bad.csv:2: field 'duration_s': expected a whole number of "
                 "seconds between 0 and 3155760000");
    expect_error(HEADER "a,9223372036854775807,1,1,,,,\n",
                 "bad.csv:2: field 'submit_time_s'");
    expect_error(HEADER "a,1,1,1.5,,,,\n", "field 'num_gpus': a fraction");
    expect_error(HEADER "a,1,1,nan,,,,\n", "field 'num_gpus'");
    expect_error(HEADER "a,1,1,1,,,\n", "bad.csv:2: expected 8 fields, got 7");
    expect_error(HEADER ",1,1,1,,,,\n", "field 'job_id': empty");
    expect_error(HEADER "a,1,1,1,lots,,,\n", "field 'num_cpus'");
    expect_error(HEADER "\"a,1,1,1,,,,\n", "unterminated quoted field");
    /* A max_gpus far past the limit is refused, and nothing is computed
     * from it (x 1000 would overflow: the sanitized build aborts). */
    expect_error("job_id,submit_time_s,duration_s,num_gpus,max_gpus\n"
                 "a,1,1,1,133333333333333333\n",
                 "bad.csv:2: field 'max_gpus': expected a whole number");
    /* Every bad row is reported, not just the first. */
    expect_error(HEADER "a,x,1,1,,,,\nb,1,y,1,,,,\n",
                 "bad.csv:2: field 'submit_time_s'");
    expect_error(HEADER "a,x,1,1,,,,\nb,1,y,1,,,,\n",
                 "bad.csv:3: field 'duration_s'");
}

static void
test_cluster_and_queues_files(void)
{
    const char *text = "# two groups\n"
                       "group name=big count=2 gpus=8 model=H100 "
                       "nodes_per_rack=1 cpus=64\n"
                       "name=small count=3 gpus=2\n";
    al_cluster_t *c = NULL;
    char *cause = NULL;
    ASSERT_INT(al_cluster_parse("c", text, strlen(text), &c, &cause), ==, 0);
    if (c) {
        ASSERT_INT(c->nnodes, ==, 5);
        ASSERT_INT(c->gpu_capacity, ==, 22000);
        ASSERT_INT(c->racks, ==, 1);
        ASSERT_INT(c->nodes[0].cpu_milli, ==, 64000);
        ASSERT_STR_HAS(c->nodes[1].topo[0], "big-rack1");
        ASSERT_INT(c->nodes[4].ndevices, ==, 2);
        al_cluster_destroy(c);
    }
    const char *bad = "group count=x gpus=8\nname=a gpus=1 colour=red\n";
    ASSERT_INT(al_cluster_parse("c.txt", bad, strlen(bad), &c, &cause), ==,
               AL_EPARSE);
    ASSERT_STR_HAS(cause, "c.txt:1: field 'count'");
    ASSERT_STR_HAS(cause, "c.txt:2: unknown key 'colour'");
    ASSERT_STR_HAS(cause, "c.txt:2: field 'count': missing");
    free(cause);

    const char *qt = "queue name=r deserved=4\nqueue name=a parent=r "
                     "deserved=3 limit=8\nqueue name=b parent=r deserved=1\n";
    al_queues_t *q = NULL;
    ASSERT_INT(al_queues_parse("q", qt, strlen(qt), &q, &cause), ==, 0);
    if (q) {
        ASSERT_INT(q->nqueues, ==, 3);
        ASSERT_INT(q->queues[2].parent, ==, 0);
        ASSERT_NEAR(q->queues[1].limit, 8, 1e-9);
        al_queues_destroy(q);
    }
    const char *qbad = "queue name=r deserved=1\nqueue name=a parent=x\n"
                       "queue name=b parent=r deserved=5\n";
    ASSERT_INT(al_queues_parse("q.txt", qbad, strlen(qbad), &q, &cause), ==,
               AL_EPARSE);
    ASSERT_STR_HAS(cause, "q.txt:2: field 'parent'");
    free(cause);
}

/*
 * Two jobs, one GPU.  a: submit 0, runs 100 s; b: submit 10, runs 50 s.
 * b waits for a (the baselines; allot: test_service_levels): starts at
 * 100, ends at 150.  JCTs 100 and 140, avg 120;
 * queueing 0 and 90.  The GPU is busy 150 of 150 s.
 */
static void
test_two_jobs_one_gpu(void)
{
    static const al_policy_t pols[] = { AL_POLICY_FIFO, AL_POLICY_BACKFILL,
                                        AL_POLICY_STATIC };
    for (size_t k = 0; k < sizeof(pols) / sizeof(pols[0]); k++) {
        al_sim_summary_t s;
        al_sim_result_t *r = run(HEADER "a,0,100,1,,,,\nb,10,50,1,,,,\n", 1, 1,
                                 pols[k], NULL, &s);
        if (r == NULL)
            continue;
        ASSERT_INT(s.completed, ==, 2);
        ASSERT_INT(jct(r, 0), ==, 100);
        ASSERT_INT(jct(r, 1), ==, 140);
        ASSERT_NEAR(s.avg_jct, 120, 1e-9);
        ASSERT_NEAR(s.avg_queue, 45, 1e-9);
        ASSERT_NEAR(s.makespan, 150, 1e-9);
        ASSERT_NEAR(s.gpu_alloc_ratio, 1.0, 1e-9);
        ASSERT_NEAR(s.wastage_ratio, 0, 1e-9);
        done(r);
    }
}

/*
 * allot's service levels, as two_jobs_one_gpu: at 10 a has run 10 s of its
 * 200 s estimate, so b (estimate 100 s, never ran) evicts it (190 s left >
 * 100 s + 2 x 10 s): b 10-60, a again 60-160 (the 10 s since its start
 * lost).  JCTs 160 and 50.  Without levels b waits as for the baselines.
 * Restarts cost nothing here (the order is what is tested; the cost has
 * tests of its own).
 */
static void
test_service_levels(void)
{
    al_trace_t *t = trace(HEADER "a,0,100,1,,,,\nb,10,50,1,,,,\n");
    al_cluster_t *c = al_cluster_homogeneous(1, 1, NULL, 0, 96, 1024);
    for (int off = 0; off < 2 && t != NULL && c != NULL; off++) {
        al_sim_opts_t o;
        al_sim_opts_default(&o);
        o.service_levels_set = off != 0;
        o.restart_overhead = 0;
        al_sim_result_t *r = NULL;
        char *cause = NULL;
        if (al_sim_run(t, c, &o, &r, &cause) != 0) {
            fprintf(stderr, "  run failed: %s\n", cause ? cause : "?");
            free(cause);
            failed_asserts++;
            continue;
        }
        ASSERT_INT(jct(r, 0), ==, off ? 100 : 160);
        ASSERT_INT(jct(r, 1), ==, off ? 140 : 50);
        ASSERT_INT(r->jobs[0].preemptions, ==, off ? 0 : 1);
        al_sim_result_destroy(r);
    }
    al_cluster_destroy(c);
    al_trace_destroy(t);
}

/*
 * Backfill.  One node, 4 GPUs.  A: t=0, 2 GPUs, 100 s.  B: t=1, 4 GPUs,
 * 100 s (blocked until A ends).  C: t=2, 2 GPUs, 50 s.
 * fifo: C waits behind B: A 0-100, B 100-200, C 200-250 -> JCTs 100, 199,
 *   248.  From t=2 to 100 two GPUs idle while C could run: wastage 98/250.
 * backfill: B's reservation is at A's estimate, 0 + 2 x 100 = 200; C's
 *   estimate 2 + 2 x 50 = 102 <= 200, so C starts at 2: A 0-100, C 2-52,
 *   B 100-200 -> JCTs 100, 199, 50.  From 52 to 100 two GPUs idle but no
 *   pending job fits on two GPUs: no wastage.
 */
static void
test_backfill(void)
{
    const char *t = HEADER "A,0,100,2,,,,\nB,1,100,4,,,,\nC,2,50,2,,,,\n";
    al_sim_summary_t s;
    al_sim_result_t *r = run(t, 1, 4, AL_POLICY_FIFO, NULL, &s);
    if (r) {
        ASSERT_INT(jct(r, 0), ==, 100);
        ASSERT_INT(jct(r, 1), ==, 199);
        ASSERT_INT(jct(r, 2), ==, 248);
        ASSERT_NEAR(s.wastage_ratio, 98.0 / 250, 1e-9);
        ASSERT_NEAR(s.wastage_gpu_ratio, 2 * 98.0 / (4 * 250), 1e-9);
        done(r);
    }
    static const al_policy_t pols[] = { AL_POLICY_BACKFILL, AL_POLICY_ALLOT };
    for (int k = 0; k < 2; k++) {
        r = run(t, 1, 4, pols[k], NULL, &s);
        if (r == NULL)
            continue;
        ASSERT_INT(jct(r, 0), ==, 100);
        ASSERT_INT(jct(r, 1), ==, 199);
        ASSERT_INT(jct(r, 2), ==, 50);
        ASSERT_NEAR(s.avg_jct, 349.0 / 3, 1e-9);
        ASSERT_NEAR(s.wastage_ratio, 0, 1e-9);
        done(r);
    }
}

/*
 * Reclaim with checkpoint loss.  One node, 2 GPUs; queues qa and qb each
 * deserve 1 GPU.  a1, a2 (qa): t=0, 1 GPU, 10000 s each: qa borrows qb's
 * GPU.  b1 (qb): t=4000, 1 GPU, 1000 s.  allot reclaims one a-job at 4000:
 * it ran 4000 s, its checkpoint at 3600 s keeps 3600 s and 400 s are lost.
 * b1 runs 4000-5000 (JCT 1000); the evicted job restarts at 5000, spends
 * the default restart overhead (60 s) reloading, has 6400 s left and ends
 * at 11460; the other ends at 10000.  avg JCT (10000 + 11460 + 1000) / 3;
 * lost 400 GPU-s of work, 460 GPU-s in all.  qb never waits for its
 * guarantee (1 GPU) under allot.
 * static: qa may not borrow: a2 waits for a1, 10000-20000; b1 4000-5000.
 * fifo: no reclaim: b1 waits until 10000 -> JCT 7000, and qb, holding
 * nothing of its 1 GPU, waited 6000 s for its guarantee.
 */
static void
test_reclaim_checkpoint(void)
{
    const char *t = HEADER "a1,0,10000,1,,,qa,\na2,0,10000,1,,,qa,\n"
                           "b1,4000,1000,1,,,qb,\n";
    const char *qf = "queue name=qa deserved=1\nqueue name=qb deserved=1\n";
    al_sim_summary_t s;
    al_sim_result_t *r = run(t, 1, 2, AL_POLICY_ALLOT, qf, &s);
    if (r) {
        ASSERT_INT(s.completed, ==, 3);
        ASSERT_INT(s.preemptions, ==, 1);
        ASSERT_INT(jct(r, 2), ==, 1000);
        ASSERT_INT(jct(r, 0) + jct(r, 1), ==, 21460);
        ASSERT_NEAR(s.avg_jct, 22460.0 / 3, 1e-9);
        ASSERT_NEAR(s.lost_gpu_hours, 400.0 / 3600, 1e-9);
        ASSERT_NEAR(s.gpu_hours_lost_to_preemption, 460.0 / 3600, 1e-9);
        ASSERT_NEAR(s.preemptions_per_job, 1.0 / 3, 1e-9);
        ASSERT_NEAR(s.max_guarantee_wait, 0, 1e-9);
        done(r);
    }
    r = run(t, 1, 2, AL_POLICY_STATIC, qf, &s);
    if (r) {
        ASSERT_INT(jct(r, 0) + jct(r, 1), ==, 30000);
        ASSERT_INT(jct(r, 2), ==, 1000);
        ASSERT_INT(s.preemptions, ==, 0);
        done(r);
    }
    r = run(t, 1, 2, AL_POLICY_FIFO, qf, &s);
    if (r) {
        ASSERT_INT(jct(r, 2), ==, 7000);
        ASSERT_INT(s.preemptions, ==, 0);
        ASSERT_NEAR(s.max_guarantee_wait, 6000, 1e-9);
        ASSERT_NEAR(s.guarantee_wait_hours, 6000.0 / 3600, 1e-9);
        done(r);
    }
}

/*
 * A wait for a guarantee counts CPUs too.  One node, 2 GPUs, 96 CPUs;
 * queues qa and qb each deserve 1 GPU and 48 CPUs.  a1 (qa): t=0, no GPU,
 * 96 CPUs, 10000 s.  b1 (qb): t=1000, no GPU, 60 CPUs, 100 s: it asks more
 * CPUs than qb deserves, so qb does not wait for its guarantee although
 * it holds nothing; judged on GPUs alone it waits until a1 ends, 9000 s.
 */
static void
test_guarantee_cpu(void)
{
    const char *t = HEADER "a1,0,10000,0,96,,qa,\nb1,1000,100,0,60,,qb,\n";
    const char *qf = "queue name=qa deserved=1\nqueue name=qb deserved=1\n";
    al_sim_summary_t s;
    al_sim_result_t *r = run(t, 1, 2, AL_POLICY_FIFO, qf, &s);
    if (r) {
        ASSERT_INT(jct(r, 1), ==, 9100);
        ASSERT_NEAR(s.max_guarantee_wait, 0, 1e-9);
        ASSERT_NEAR(s.guarantee_wait_hours, 0, 1e-9);
        ASSERT_NEAR(s.max_guarantee_wait_gpu_only, 9000, 1e-9);
        ASSERT_NEAR(s.guarantee_wait_gpu_only_hours, 9000.0 / 3600, 1e-9);
        done(r);
    }
}

/*
 * Elastic jobs (max_gpus).  One node of 8 GPUs.  e: 2..8 GPUs, 800 s at
 * its least size, alone: it starts with all 8 (tasks of 2 GPUs, 1..4 of
 * them), four times the pace, and ends at 200.  With queues: qa deserves
 * 2, qb 6; e (qa) starts at 0 with 8; b (qb, 6 GPUs, 100 s) arrives at
 * 100, when e has done 400 s of work: e is shrunk to 2 GPUs (no job is
 * evicted), b runs at once, 100-200, and e does its last 400 s at its
 * least pace: it ends at 500.  A max_gpus below num_gpus, or with a
 * fraction, is refused.
 */
static void
test_elastic(void)
{
    const char *h = "job_id,submit_time_s,duration_s,num_gpus,num_cpus,"
                    "user,queue,status,max_gpus\n";
    char t[512];
    snprintf(t, sizeof t, "%se,0,800,2,,,qa,,8\n", h);
    al_sim_summary_t s;
    al_sim_result_t *r = run(t, 1, 8, AL_POLICY_ALLOT, NULL, &s);
    if (r) {
        ASSERT_INT(jct(r, 0), ==, 200);
        ASSERT_INT(r->jobs[0].resizes, ==, 0);
        done(r);
    }
    snprintf(t, sizeof t, "%se,0,800,2,,,qa,,8\nb,100,100,6,,,qb,,\n", h);
    const char *qf = "queue name=qa deserved=2\nqueue name=qb deserved=6\n";
    r = run(t, 1, 8, AL_POLICY_ALLOT, qf, &s);
    if (r) {
        ASSERT_INT(s.preemptions, ==, 0);
        ASSERT_INT(r->jobs[0].resizes, ==, 1);
        ASSERT_INT(jct(r, 1), ==, 100);
        ASSERT_INT(jct(r, 0), ==, 500);
        done(r);
    }
    static const char *const bad[] = { "e,0,8,2,,,,,1\n", "e,0,8,0.5,,,,,4\n",
                                       "e,0,8,2,,,,,x\n" };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        al_trace_t *x = NULL;
        char *cause = NULL;
        snprintf(t, sizeof t, "%s%s", h, bad[k]);
        ASSERT_INT(al_trace_parse("t.csv", t, strlen(t), NULL, &x, &cause), ==,
                   AL_EPARSE);
        ASSERT_STR_HAS(cause, "max_gpus");
        free(cause);
    }
}

/*
 * Tiresias.  One GPU.  a: t=0, 10000 s; b: t=5000, 1000 s.  At 5000 a has
 * attained 5000 GPU-s (above the first threshold, 3600) and b none: b
 * preempts a.  a's checkpoint at 3600 keeps 3600 s, 1400 s lost.  b runs
 * 5000-6000; a restarts at 6000, reloads for 60 s (the default restart
 * overhead) and does its 6400 s left: it ends at 12460.
 */
static void
test_tiresias(void)
{
    al_sim_summary_t s;
    al_sim_result_t *r = run(HEADER "a,0,10000,1,,,,\nb,5000,1000,1,,,,\n", 1,
                             1, AL_POLICY_TIRESIAS, NULL, &s);
    if (r) {
        ASSERT_INT(jct(r, 0), ==, 12460);
        ASSERT_INT(jct(r, 1), ==, 1000);
        ASSERT_INT(s.preemptions, ==, 1);
        ASSERT_NEAR(s.lost_gpu_hours, 1400.0 / 3600, 1e-9);
        ASSERT_NEAR(s.restart_gpu_hours, 60.0 / 3600, 1e-9);
        done(r);
    }
}

/*
 * What one preemption costs, the same under the two policies that preempt
 * here: restart overhead 300 s, a checkpoint every 1,000 s of work.
 *
 * allot: one node of 2 GPUs, qa and qb deserving 1 each.  a1, a2 (qa): t=0,
 * 1 GPU, 10000 s; b1 (qb): t=4500, 1 GPU, 1000 s.  One a-job is reclaimed
 * at 4500: its checkpoint at 4000 keeps 4000 s, 500 s are lost.  b1 runs
 * 4500-5500; the victim restarts at 5500, reloads 5500-5800 and does its
 * 6000 s left: it ends at 11800 = 10000 (its work) + 1000 (the wait) +
 * 500 (lost) + 300 (overhead).
 * tiresias: one GPU; a: t=0, 10000 s; b: t=5500, 1000 s.  b preempts a
 * (5500 attained GPU-s against none): 5000 s kept, 500 lost; b runs
 * 5500-6500; a reloads 6500-6800 and ends at 11800 too.
 * Both: 800 GPU-s lost to the preemption (500 of work, 300 of restart).
 * Without the overhead (0 s) a ends at 11500.  An eviction during the
 * restart keeps nothing more: tiresias with a third job c (t=6600, 100 s)
 * evicts a again at 6600, 100 s into its reload (a has 5500 attained
 * GPU-s, c none): a has done no work in that run, so it loses none; it
 * paid 100 s of reload, restarts at 6700, reloads again until 7000 and
 * ends at 12000: 500 GPU-s of work and 400 of restarts lost.
 */
static void
test_preemption_cost(void)
{
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.restart_overhead = 300;
    o.checkpoint = 1000;
    al_sim_summary_t s;
    o.policy = AL_POLICY_ALLOT;
    al_sim_result_t *r = run_opts(
        HEADER "a1,0,10000,1,,,qa,\na2,0,10000,1,,,qa,\nb1,4500,1000,1,,,qb,\n",
        1, 2, &o, "queue name=qa deserved=1\nqueue name=qb deserved=1\n", &s);
    if (r) {
        ASSERT_INT(s.preemptions, ==, 1);
        ASSERT_INT(jct(r, 2), ==, 1000);
        ASSERT_INT(jct(r, 0) + jct(r, 1), ==, 10000 + 11800);
        ASSERT_NEAR(s.lost_gpu_hours, 500.0 / 3600, 1e-9);
        ASSERT_NEAR(s.restart_gpu_hours, 300.0 / 3600, 1e-9);
        ASSERT_NEAR(s.gpu_hours_lost_to_preemption, 800.0 / 3600, 1e-9);
        done(r);
    }
}

/* The tiresias half of test_preemption_cost (see there). */
static void
test_preemption_cost_las(void)
{
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.restart_overhead = 300;
    o.checkpoint = 1000;
    al_sim_summary_t s;
    al_sim_result_t *r;
    o.policy = AL_POLICY_TIRESIAS;
    const char *t = HEADER "a,0,10000,1,,,,\nb,5500,1000,1,,,,\n";
    r = run_opts(t, 1, 1, &o, NULL, &s);
    if (r) {
        ASSERT_INT(s.preemptions, ==, 1);
        ASSERT_INT(jct(r, 0), ==, 11800);
        ASSERT_INT(r->jobs[0].lost, ==, 500 * 1000);
        ASSERT_INT(r->jobs[0].restart, ==, 300 * 1000);
        ASSERT_NEAR(s.gpu_hours_lost_to_preemption, 800.0 / 3600, 1e-9);
        done(r);
    }
    o.restart_overhead = 0;
    r = run_opts(t, 1, 1, &o, NULL, &s);
    if (r) {
        ASSERT_INT(jct(r, 0), ==, 11500);
        ASSERT_NEAR(s.gpu_hours_lost_to_preemption, 500.0 / 3600, 1e-9);
        done(r);
    }
}

/* An eviction during the reload (see test_preemption_cost). */
static void
test_preemption_during_restart(void)
{
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.restart_overhead = 300;
    o.checkpoint = 1000;
    o.policy = AL_POLICY_TIRESIAS;
    al_sim_summary_t s;
    al_sim_result_t *r = run_opts(
        HEADER "a,0,10000,1,,,,\nb,5500,1000,1,,,,\nc,6600,100,1,,,,\n", 1, 1,
        &o, NULL, &s);
    if (r) {
        ASSERT_INT(s.preemptions, ==, 2);
        ASSERT_INT(jct(r, 2), ==, 100);
        ASSERT_INT(jct(r, 0), ==, 12000);
        ASSERT_INT(r->jobs[0].lost, ==, 500 * 1000);
        ASSERT_INT(r->jobs[0].restart, ==, (100 + 300) * 1000);
        done(r);
    }
}

/*
 * The share error, by hand.  fifo on one node of 4 GPUs, qa and qb
 * deserving 2 each.  a1 (qa, 3 GPUs) and b1 (qb, 1 GPU) run 0-3600; b2
 * (qb, 2 GPUs, 3600 s) arrives at 1800 and waits for them (fifo does not
 * reclaim), running 3600-7200.
 * Hour 0: until 1800 the demand (qa 3, qb 1) fits, so the fair share is
 * the demand; from 1800 qb asks 3 and the max-min fair split is 2 and 2.
 * Fair GPU-s: qa 3 x 1800 + 2 x 1800 = 9000, qb 1800 + 3600 = 5400, shares
 * 0.625 and 0.375; allocated: qa 10800, qb 3600, shares 0.75 and 0.25.
 * Errors |0.75 - 0.625| / 0.625 = 0.2 and |0.25 - 0.375| / 0.375 = 1/3.
 * Hour 1: qb alone, error 0; qa had no demand.  Three queue-hours, p95
 * (nearest rank of three) 1/3.  qb never waited for its guarantee: from
 * 1800 it held 1 GPU and b2 needs 2 more, above its 2.
 */
static void
test_share_error(void)
{
    const char *t = HEADER "a1,0,3600,3,,,qa,\nb1,0,3600,1,,,qb,\n"
                           "b2,1800,3600,2,,,qb,\n";
    const char *qf = "queue name=qa deserved=2\nqueue name=qb deserved=2\n";
    al_sim_summary_t s;
    al_sim_result_t *r = run(t, 1, 4, AL_POLICY_FIFO, qf, &s);
    if (r) {
        ASSERT_INT(jct(r, 2), ==, 5400);
        ASSERT_INT(s.share_hours, ==, 3);
        ASSERT_NEAR(s.share_error_p95, 1.0 / 3, 1e-9);
        ASSERT_NEAR(s.max_guarantee_wait, 0, 1e-9);
        done(r);
    }
    /* Every hour counts, also in a stretch where nothing changes (which
     * the simulator adds up in one step).  a1 (qa, 4 GPUs) runs hour 0
     * while b1 (qb) waits: errors 1/3 (qa) and 1 (qb).  Hour 1: b1 and a2
     * (qa, 1 GPU, 876,000 hours, the longest a trace may hold) side by
     * side, both at their fair share: 0 and 0.  Hours 2 to 876,000: qa
     * alone, error 0.  876,003 queue-hours; the p95 is 0, where ranking
     * the run's six distinct steps rather than its hours would give 1. */
    t = HEADER "a1,0,3600,4,,,qa,\nb1,0,3600,1,,,qb,\n"
               "a2,3600,3153600000,1,,,qa,\n";
    r = run(t, 1, 4, AL_POLICY_FIFO, qf, &s);
    if (r) {
        ASSERT_INT(jct(r, 1), ==, 7200);
        ASSERT_INT(s.share_hours, ==, 876003);
        ASSERT_NEAR(s.share_error_p95, 0, 1e-9);
        done(r);
    }
    /* The division itself: weights 2, 1, 1 and 0 over 8 GPUs. */
    double w[4] = { 2, 1, 1, 0 }, d[4] = { 10, 1, 10, 5 }, f[4];
    al__waterfill(4, w, d, 8, f);
    ASSERT_NEAR(f[0], 14.0 / 3, 1e-9); /* 7 left after qb's 1: 2/3 of it */
    ASSERT_NEAR(f[1], 1, 1e-9);
    ASSERT_NEAR(f[2], 7.0 / 3, 1e-9);
    ASSERT_NEAR(f[3], 0, 1e-9);
    double d2[4] = { 1, 1, 1, 5 };
    al__waterfill(4, w, d2, 8, f); /* 5 left go to the weightless claim */
    ASSERT_NEAR(f[3], 5, 1e-9);
}

/*
 * Oracle SJF.  One GPU, three jobs submitted at 0, 1, 2 running 300, 200,
 * 100 s.  The first starts at once; then the shortest: 2 at 300-400, 1 at
 * 400-600.  JCTs 300, 599, 398.
 */
static void
test_sjf_oracle(void)
{
    al_sim_summary_t s;
    al_sim_result_t *r =
        run(HEADER "x,0,300,1,,,,\ny,1,200,1,,,,\nz,2,100,1,,,,\n", 1, 1,
            AL_POLICY_SJF, NULL, &s);
    if (r) {
        ASSERT_INT(jct(r, 0), ==, 300);
        ASSERT_INT(jct(r, 1), ==, 599);
        ASSERT_INT(jct(r, 2), ==, 398);
        done(r);
    }
}

/*
 * Unschedulable.  Two queues deserve 1 GPU each of 2; a 2-GPU job can never
 * start under static (it exceeds its queue's share) and a 4-GPU job under
 * any policy; both are left out of the JCT figures.
 */
static void
test_unschedulable(void)
{
    const char *t = HEADER "big,0,100,2,,,qa,\nhuge,0,100,4,,,qa,\n"
                           "s,5,100,1,,,qb,\n";
    const char *qf = "queue name=qa deserved=1\nqueue name=qb deserved=1\n";
    al_sim_summary_t s;
    al_sim_result_t *r = run(t, 1, 2, AL_POLICY_STATIC, qf, &s);
    if (r) {
        ASSERT_INT(s.unschedulable, ==, 2);
        ASSERT_INT(s.completed, ==, 1);
        ASSERT_NEAR(s.avg_jct, 100, 1e-9);
        done(r);
    }
    r = run(t, 1, 2, AL_POLICY_ALLOT, qf, &s);
    if (r) {
        ASSERT_INT(s.unschedulable, ==, 1);
        ASSERT_INT(s.completed, ==, 2);
        done(r);
    }
    /* fifo: the impossible job must not block the line forever. */
    r = run(t, 1, 2, AL_POLICY_FIFO, qf, &s);
    if (r) {
        ASSERT_INT(s.unschedulable, ==, 1);
        ASSERT_INT(s.completed, ==, 2);
        done(r);
    }
}

/* Gangs: a 16-GPU job on 8-GPU nodes is two tasks of 8. */
static void
test_gang(void)
{
    al_sim_summary_t s;
    al_sim_result_t *r = run(HEADER "g,0,100,16,,,,\nh,0,100,8,,,,\n", 3, 8,
                             AL_POLICY_ALLOT, NULL, &s);
    if (r) {
        ASSERT_INT(s.completed, ==, 2);
        ASSERT_INT(jct(r, 0), ==, 100);
        ASSERT_INT(jct(r, 1), ==, 100);
        ASSERT_NEAR(s.gpu_alloc_ratio, 1.0, 1e-9);
        done(r);
    }
}

/*
 * The FGD placement workload: resampling is deterministic per seed, reaches
 * the GPU target, and pods that do not fit on arrival are dropped.  One node
 * of 2 GPUs; pods of 0.5, 1 and 2 GPUs drawn to 1.3 x 2 GPUs.
 */
static void
test_fill(void)
{
    al_trace_t *t =
        trace(HEADER "a,0,10,0.5,,,,\nb,0,10,1,,,,\nc,0,10,2,,,,\n");
    if (t == NULL)
        return;
    al_trace_t *x = al_trace_resample(t, 42, 2600, 1000000);
    al_trace_t *y = al_trace_resample(t, 42, 2600, 1000000);
    int64_t sum = 0;
    ASSERT_INT(x->njobs, ==, y->njobs);
    ASSERT_INT(x->njobs, >=, 3); /* every pod at least once */
    for (int i = 0; i < x->njobs; i++) {
        ASSERT_INT(strcmp(x->jobs[i].id, y->jobs[i].id), ==, 0);
        ASSERT_INT(x->jobs[i].submit, ==, i);
        sum += x->jobs[i].gpu_milli;
    }
    ASSERT_INT(sum, >=, 2600);
    ASSERT_INT(sum - x->jobs[x->njobs - 1].gpu_milli, <, 2600 + 2000);
    al_cluster_t *c = al_cluster_homogeneous(1, 2, NULL, 0, 96, 1024);
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.qmode = AL_QMODE_HASH;
    o.nqueues = 1;
    o.drop_unplaced = true;
    al_sim_result_t *r = NULL;
    char *cause = NULL;
    ASSERT_INT(al_sim_run(x, c, &o, &r, &cause), ==, 0);
    if (r) {
        int placed = 0;
        int64_t milli = 0;
        for (int i = 0; i < r->njobs; i++) {
            /* placed on arrival or never */
            ASSERT_INT(r->jobs[i].first_start < 0 ||
                           r->jobs[i].first_start == x->jobs[i].submit,
                       ==, 1);
            ASSERT_INT(r->jobs[i].unschedulable, ==,
                       r->jobs[i].first_start < 0);
            if (r->jobs[i].first_start >= 0) {
                placed++;
                milli += x->jobs[i].gpu_milli;
            }
        }
        ASSERT_INT(placed, >=, 1);
        ASSERT_INT(milli, <=, 2000);
        ASSERT_NEAR(r->alloc_at_end, (double)milli / 2000, 1e-9);
        ASSERT_INT(r->alloc_at_full >= 0 && r->alloc_at_full <= 1, ==, 1);
        al_sim_result_destroy(r);
    }
    free(cause);
    al_cluster_destroy(c);
    al_trace_destroy(x);
    al_trace_destroy(y);
    al_trace_destroy(t);
}

/*
 * A trace's workload profile (FGD's "typical pods"): task shapes as the
 * simulator splits jobs, weighted by tasks, most popular first, cut at the
 * coverage asked.  Three 0.5-GPU pods with 4 cores, two 1-GPU pods with 8,
 * one CPU-only pod, and one 16-GPU job that 8-GPU nodes split into two
 * tasks of 8 GPUs and 10 cores: 8 tasks.  The profile then drives
 * AL_PACK_FRAG through al_sim_run.
 */
static void
test_profile(void)
{
    al_trace_t *t = trace(HEADER "a,0,10,0.5,4,,,\nb,0,10,0.5,4,,,\n"
                                 "c,0,10,0.5,4,,,\nd,0,10,1,8,,,\n"
                                 "e,0,10,1,8,,,\nf,0,10,0,2,,,\n"
                                 "g,0,10,16,20,,,\n");
    if (t == NULL)
        return;
    al_cluster_t *c = al_cluster_homogeneous(2, 8, NULL, 0, 96, 1024);
    al_shape_t *p = NULL;
    int n = al_sim_profile(t, c, 1.0, &p);
    ASSERT_INT(n, ==, 4);
    if (n == 4) {
        ASSERT_INT(p[0].gpu_milli, ==, 500);
        ASSERT_INT(p[0].cpu_milli, ==, 4000);
        ASSERT_NEAR(p[0].weight, 3, 1e-9);
        /* Equal weights: fewer GPUs first. */
        ASSERT_INT(p[1].gpus, ==, 1);
        ASSERT_INT(p[1].cpu_milli, ==, 8000);
        ASSERT_NEAR(p[1].weight, 2, 1e-9);
        ASSERT_INT(p[2].gpus, ==, 8);
        ASSERT_INT(p[2].cpu_milli, ==, 10000);
        ASSERT_NEAR(p[2].weight, 2, 1e-9);
        ASSERT_INT(p[3].gpus + p[3].gpu_milli, ==, 0);
        ASSERT_INT(p[3].cpu_milli, ==, 2000);
    }
    free(p);
    /* 3/8 of tasks fall short of half; 5/8 do not. */
    ASSERT_INT(al_sim_profile(t, c, 0.5, &p), ==, 2);
    free(p);
    ASSERT_INT(al_sim_profile(t, c, 0, &p), ==, 1);

    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.pack = AL_PACK_FRAG;
    o.profile = p;
    o.nprofile = 1;
    al_sim_result_t *r = NULL;
    char *cause = NULL;
    ASSERT_INT(al_sim_run(t, c, &o, &r, &cause), ==, 0);
    if (r) {
        for (int i = 0; i < r->njobs; i++)
            ASSERT_INT(r->jobs[i].end, >=, 10);
        al_sim_result_destroy(r);
    }
    free(cause);
    free(p);
    al_cluster_destroy(c);
    al_trace_destroy(t);
}

/*
 * Accounting invariants over a random trace (fixed seed) under every
 * policy: each completed job's JCT is its queueing time + its duration + the
 * run time it lost to evictions; nothing starts before its submit time;
 * allocation never exceeds capacity; every job completes or is
 * unschedulable.
 */
/*
 * Noisy estimates (--estimate-noise S).  The factor is exp(S x z) with z
 * drawn from (seed, job id) alone:
 * - S = 0 gives exactly ceil(rem x factor) and a factor of exactly 1;
 * - the same seed and id give the same estimate, whatever else is asked in
 *   between; other seeds give other estimates;
 * - the estimate stays proportional to the remaining work (a restarted job
 *   keeps its factor);
 * - over 20,000 ids, log(estimate / (rem x factor)) has mean about 0 and
 *   standard deviation about S;
 * - estimates stay within [1, AL_SIM_MAX_ESTIMATE] even at S = 10.
 */
static void
test_estimate_noise(void)
{
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    ASSERT_NEAR(o.estimate_noise, 0, 0);
    ASSERT_NEAR(al_sim_estimate_noise(1, "j1", 0), 1.0, 0);
    static const int64_t rems[] = { 0, 1, 7, 100, 3599, 86400, 3155760000 };
    for (size_t k = 0; k < sizeof(rems) / sizeof(rems[0]); k++) {
        int64_t want = rems[k] == 0 ? 1 : 2 * rems[k];
        ASSERT_INT(al_sim_estimate(&o, "j1", rems[k]), ==, want);
    }
    o.estimate_factor = 1.5;
    ASSERT_INT(al_sim_estimate(&o, "j1", 7), ==, 11); /* ceil(10.5) */
    o.estimate_factor = 2;

    enum { N = 20000 };
    char id[32];
    for (int k = 0; k < 2; k++) {
        double S = k == 0 ? 0.5 : 1.0, sum = 0, sum2 = 0;
        int same = 0, differ = 0, proportional = 0;
        o.estimate_noise = S;
        for (int i = 0; i < N; i++) {
            snprintf(id, sizeof id, "job-%d", i);
            o.estimate_seed = 42;
            int64_t e = al_sim_estimate(&o, id, 36000);
            int64_t half = al_sim_estimate(&o, id, 18000);
            o.estimate_seed = 43;
            int64_t other = al_sim_estimate(&o, id, 36000);
            o.estimate_seed = 42;
            same += al_sim_estimate(&o, id, 36000) == e;
            differ += other != e;
            proportional += llabs(2 * half - e) <= 2;
            double l = log((double)e / (36000.0 * 2));
            sum += l;
            sum2 += l * l;
        }
        double mean = sum / N, sd = sqrt(sum2 / N - mean * mean);
        ASSERT_INT(same, ==, N);
        ASSERT_INT(differ, >=, N - 10);
        ASSERT_INT(proportional, ==, N);
        ASSERT_NEAR(mean, 0, 0.03 * S);
        ASSERT_NEAR(sd, S, 0.03 * S);
    }

    o.estimate_noise = 10;
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "job-%d", i);
        int64_t a = al_sim_estimate(&o, id, 1);
        int64_t b = al_sim_estimate(&o, id, 3155760000);
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    ASSERT_INT(lo, ==, 1);
    ASSERT_INT(hi, ==, AL_SIM_MAX_ESTIMATE);
}

/*
 * The noise reaches the core.  One GPU; a (100 s) holds it while long
 * (1,000 s) and short (10 s) arrive at t=1.  Without noise allot starts
 * short first at 100: JCTs 109 (short) and 1,109 (long).  With S = 2 and a
 * seed whose draws make long's estimate the smaller, long goes first:
 * long ends at 1,100 (JCT 1,099), short at 1,110 (JCT 1,109).
 */
static void
test_estimate_noise_order(void)
{
    static const char text[] =
        HEADER "a,0,100,1,,,,\nlong,1,1000,1,,,,\nshort,1,10,1,,,,\n";
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.qmode = AL_QMODE_HASH;
    o.nqueues = 1;
    o.estimate_noise = 2;
    o.service_levels_set = true; /* the order alone: no levels */
    uint64_t seed = 0;
    for (uint64_t k = 1; k < 1000 && seed == 0; k++) {
        o.estimate_seed = k;
        if (al_sim_estimate(&o, "long", 1000) <
            al_sim_estimate(&o, "short", 10))
            seed = k;
    }
    ASSERT_INT(seed, >, 0);
    al_trace_t *t = trace(text);
    al_cluster_t *c = al_cluster_homogeneous(1, 1, NULL, 0, 96, 1024);
    for (int noisy = 0; noisy < 2 && t != NULL && c != NULL; noisy++) {
        o.estimate_noise = noisy ? 2 : 0;
        o.estimate_seed = seed;
        al_sim_result_t *r = NULL;
        char *cause = NULL;
        if (al_sim_run(t, c, &o, &r, &cause) != 0) {
            fprintf(stderr, "  run failed: %s\n", cause ? cause : "?");
            free(cause);
            failed_asserts++;
            continue;
        }
        ASSERT_INT(jct(r, 0), ==, 100);
        ASSERT_INT(jct(r, 1), ==, noisy ? 1099 : 1109);
        ASSERT_INT(jct(r, 2), ==, noisy ? 1109 : 109);
        al_sim_result_destroy(r);
    }
    al_cluster_destroy(c);
    al_trace_destroy(t);
}

static void
test_invariants(void)
{
    char *text = malloc(64 * 1024);
    if (text == NULL)
        return;
    size_t len = (size_t)snprintf(text, 64 * 1024, "%s", HEADER);
    uint64_t x = 12345;
    static const int sizes[] = { 1, 1, 1, 2, 4, 8, 16 };
    int64_t t = 0;
    for (int i = 0; i < 300; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        t += (int64_t)(x >> 33) % 900;
        int g = sizes[(x >> 20) % 7];
        int64_t d = 60 + (int64_t)(x >> 40) % 20000;
        len += (size_t)snprintf(text + len, 64 * 1024 - len,
                                "j%d,%lld,%lld,%d,,u%d,q%d,\n", i, (long long)t,
                                (long long)d, g, (int)(x >> 12) % 5,
                                (int)(x >> 16) % 3);
    }
    for (int p = 0; p < AL_POLICY_COUNT; p++) {
        al_sim_summary_t s;
        al_sim_result_t *r = run(text, 3, 8, (al_policy_t)p, NULL, &s);
        if (r == NULL)
            continue;
        ASSERT_INT(s.completed + s.unschedulable, ==, 300);
        ASSERT_INT(s.gpu_alloc_ratio <= 1.0 + 1e-9, ==, 1);
        for (int i = 0; i < r->njobs; i++) {
            const al_sim_job_t *j = &r->jobs[i];
            const al_trace_job_t *tj = &r->trace->jobs[i];
            if (j->end < 0)
                continue;
            ASSERT_INT(j->first_start, >=, tj->submit);
            ASSERT_INT(j->end - tj->submit, ==,
                       j->pending + tj->duration +
                           (j->lost + j->restart) / tj->gpu_milli);
        }
        done(r);
    }
    free(text);
}

static const struct test {
    const char *name;
    void (*fn)(void);
} tests[] = {
    { "trace_ok", test_trace_ok },
    { "trace_errors", test_trace_errors },
    { "cluster_and_queues_files", test_cluster_and_queues_files },
    { "two_jobs_one_gpu", test_two_jobs_one_gpu },
    { "service_levels", test_service_levels },
    { "backfill", test_backfill },
    { "reclaim_checkpoint", test_reclaim_checkpoint },
    { "guarantee_cpu", test_guarantee_cpu },
    { "elastic", test_elastic },
    { "tiresias", test_tiresias },
    { "preemption_cost", test_preemption_cost },
    { "preemption_cost_las", test_preemption_cost_las },
    { "preemption_during_restart", test_preemption_during_restart },
    { "share_error", test_share_error },
    { "sjf_oracle", test_sjf_oracle },
    { "unschedulable", test_unschedulable },
    { "gang", test_gang },
    { "fill", test_fill },
    { "profile", test_profile },
    { "estimate_noise", test_estimate_noise },
    { "estimate_noise_order", test_estimate_noise_order },
    { "invariants", test_invariants },
};

int
main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
            continue;
        int before = failed_asserts;
        tests[i].fn();
        if (failed_asserts > before) {
            printf("FAIL %s\n", tests[i].name);
            failed++;
        } else {
            printf("ok   %s\n", tests[i].name);
            passed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0;
}
