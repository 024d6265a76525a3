/*
 * test_sched.c -- scenario tests of the scheduling core, each with decisions
 * worked out by hand from the contract in core.h and docs/scheduling.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "snap.h"
#include "test.h"

#define GIB SNAP_GIB

/*
 * The configuration every scenario starts from, spelled out so that a change
 * of the core's defaults does not silently change what a test means.
 */
static snap_t *
scenario(void)
{
    snap_t *s = snap_create();
    al_config_t *c = snap_config(s);

    c->pack = AL_PACK_BIN;
    c->usage_weight = 0;
    c->reserve_depth = 1;
    c->default_runtime = 3600;
    c->lend_reserved = false;
    c->reclaim = true;
    c->preempt = true;
    c->borrow = true;
    c->strict_order = false;
    c->ignore_queues = false;
    if (c->max_reclaim_tries < 64)
        c->max_reclaim_tries = 64;
    return s;
}

static int
popcount(uint64_t m)
{
    int n = 0;

    for (; m != 0; m &= m - 1)
        n++;
    return n;
}

/* Fails unless job j started with exactly ntasks tasks. */
#define ASSERT_STARTED(r, j, n)                                                \
    do {                                                                       \
        const al_decision_t *al__d = res_find((r), (j), AL_DEC_START);         \
        if (al__d == NULL) {                                                   \
            res_dump(snap_get(s), (r));                                        \
            AL__FAIL("job %d did not start", (int)(j));                        \
        }                                                                      \
        ASSERT_EQ(al__d->ntasks, (n));                                         \
        ASSERT_EQ((r)->reasons[(j)].code, AL_WHY_NONE);                        \
    } while (0)

#define ASSERT_NOT_STARTED(r, j)                                               \
    do {                                                                       \
        if (res_find((r), (j), AL_DEC_START) != NULL) {                        \
            res_dump(snap_get(s), (r));                                        \
            AL__FAIL("job %d started", (int)(j));                              \
        }                                                                      \
        ASSERT_NE((r)->reasons[(j)].code, AL_WHY_NONE);                        \
    } while (0)

#define ASSERT_REASON(r, j, c)                                                 \
    do {                                                                       \
        if ((r)->reasons[(j)].code != (c))                                     \
            res_dump(snap_get(s), (r));                                        \
        ASSERT_EQ((r)->reasons[(j)].code, (c));                                \
    } while (0)

/* ------------------------------------------------------------------ */
/* Defaults and helpers                                               */

static void
config_defaults(void)
{
    al_config_t c;

    memset(&c, 0xff, sizeof(c));
    al_config_default(&c);
    ASSERT_EQ(c.pack, AL_PACK_BIN);
    ASSERT_DBL_NEAR(c.usage_weight, 1.0, 1e-9);
    ASSERT(c.reclaim);
    ASSERT(c.preempt);
    ASSERT(c.borrow);
    ASSERT(!c.strict_order);
    ASSERT(!c.ignore_queues);
    ASSERT_GT(c.max_reclaim_tries, 0);
    ASSERT_GE(c.reserve_depth, 0);
    ASSERT_GT(c.default_runtime, 0);
    ASSERT_EQ(c.usage_half_life, 7 * 86400);
    ASSERT_GE(c.ntopo_levels, 0);
    ASSERT(c.short_first);
    ASSERT_EQ(c.starve_after, 3600);
    ASSERT_EQ(c.service_levels[0], 1);
    ASSERT_EQ(c.service_levels[1], 3600);
    ASSERT_EQ(c.service_levels[2], 36000);
    ASSERT_EQ(c.service_levels[3], 0);
}

static void
usage_decay(void)
{
    ASSERT_DBL_NEAR(al_usage_decay(100, 3600, 3600), 50, 1e-9);
    ASSERT_DBL_NEAR(al_usage_decay(100, 7200, 3600), 25, 1e-9);
    ASSERT_DBL_NEAR(al_usage_decay(100, 0, 3600), 100, 1e-9);
    ASSERT_DBL_NEAR(al_usage_decay(100, 5000, 0), 100, 1e-9);
    ASSERT_DBL_NEAR(al_usage_decay(100, 5000, -1), 100, 1e-9);
    ASSERT_DBL_NEAR(al_usage_decay(0, 5000, 10), 0, 1e-9);
}

static void
request_gpu_milli(void)
{
    al_request_t r;

    memset(&r, 0, sizeof(r));
    r.gpus = 2;
    ASSERT_EQ(al_request_gpu_milli(&r), 2000);
    r.gpus = 0;
    r.gpu_milli = 250;
    ASSERT_EQ(al_request_gpu_milli(&r), 250);
    r.gpu_milli = 0;
    ASSERT_EQ(al_request_gpu_milli(&r), 0);
}

/* An empty cluster, or no jobs, is a valid snapshot with nothing to do. */
static void
empty(void)
{
    snap_t *s = scenario();
    al_result_t *r = snap_run(s);
    int q;

    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_EQ(r->njobs, 0);
    ASSERT_EQ(r->nqueues, 0);
    al_result_destroy(r);

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_EQ(r->nqueues, 1);
    ASSERT_EQ(r->queues[q].allocated[AL_RES_GPU], 0);
    ASSERT_EQ(r->stats.started, 0);
    al_result_destroy(r);
    al_result_destroy(NULL);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (a) Run:ai's guaranteed-quota story                                */

/* The (node, device) a single-GPU task holds, as one number. */
static int
slot_of(const al_placement_t *p)
{
    int d;

    for (d = 0; d < 64; d++)
        if (p->devices == (uint64_t)1 << d)
            return p->node * 64 + d;
    return -1;
}

static int
evictions_of_queue(snap_t *s, const al_result_t *r, int q)
{
    int i, n = 0;

    for (i = 0; i < r->ndecisions; i++)
        if (r->decisions[i].kind == AL_DEC_EVICT &&
            snap_job_ref(s, r->decisions[i].job)->queue == q)
            n++;
    return n;
}

static void
runai_story(void)
{
    snap_t *s = scenario();
    int susan, joe, jemma, sj[8], jj[3], build, jtrain, i, k;
    int freed[2], nfreed = 0, got[2];
    al_result_t *r;

    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    susan = snap_queue(s, "susan", -1, 2000, 1, AL_UNLIMITED);
    joe = snap_queue(s, "joe", -1, 2000, 1, AL_UNLIMITED);
    jemma = snap_queue(s, "jemma", -1, 2000, 1, AL_UNLIMITED);

    /* 1. Susan alone: all eight one-GPU train jobs start, one per GPU. */
    for (i = 0; i < 8; i++)
        sj[i] = snap_job(s, susan, 1, 1);
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_START), 8);
    ASSERT_EQ(r->ndecisions, 8);
    {
        int used[128] = { 0 };

        for (i = 0; i < 8; i++) {
            const al_decision_t *d = res_find(r, sj[i], AL_DEC_START);
            int slot;

            ASSERT(d != NULL);
            ASSERT_EQ(d->ntasks, 1);
            slot = slot_of(&d->tasks[0]);
            ASSERT_GE(slot, 0);
            ASSERT_EQ(used[slot], 0);
            used[slot] = 1;
        }
    }
    ASSERT_EQ(r->queues[susan].allocated[AL_RES_GPU], 8000);
    snap_apply(s, r, 100);
    al_result_destroy(r);
    /* Distinct progress: job i started at 100 + 10 i, so the last two made
     * the least progress and lose the least work when evicted. */
    for (i = 0; i < 8; i++)
        snap_job_ref(s, sj[i])->start_time = 100 + 10 * i;

    /* 2. Joe submits two jobs: within one cycle he reclaims his two GPUs
     * from Susan, whose evicted jobs are requeued. */
    snap_set_now(s, 3600);
    jj[0] = snap_job(s, joe, 1, 1);
    jj[1] = snap_job(s, joe, 1, 1);
    snap_job_ref(s, jj[0])->submit_time = 3500;
    snap_job_ref(s, jj[1])->submit_time = 3501;
    r = snap_run(s);
    if (res_count(r, AL_DEC_EVICT) != 2)
        res_dump(snap_get(s), r);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 2);
    for (i = 0; i < r->ndecisions; i++) {
        const al_decision_t *d = &r->decisions[i];

        if (d->kind != AL_DEC_EVICT)
            continue;
        ASSERT(d->job == sj[6] || d->job == sj[7]);
        ASSERT_EQ(d->why, AL_EVICT_RECLAIM);
        ASSERT(d->requeue);
        ASSERT(d->for_job == jj[0] || d->for_job == jj[1]);
        freed[nfreed++] = slot_of(&snap_get(s)->jobs[d->job].placement[0]);
    }
    /* The lead's design: eviction and start in the same cycle, on the GPUs
     * the victims free. */
    ASSERT_STARTED(r, jj[0], 1);
    ASSERT_STARTED(r, jj[1], 1);
    ASSERT_EQ(r->ndecisions, 4);
    for (k = 0; k < 2; k++)
        got[k] = slot_of(&res_find(r, jj[k], AL_DEC_START)->tasks[0]);
    ASSERT((got[0] == freed[0] && got[1] == freed[1]) ||
           (got[0] == freed[1] && got[1] == freed[0]));
    ASSERT_EQ(r->queues[susan].allocated[AL_RES_GPU], 6000);
    ASSERT_EQ(r->queues[joe].allocated[AL_RES_GPU], 2000);
    ASSERT_EQ(r->stats.evicted, 2);
    snap_apply(s, r, 3600);
    al_result_destroy(r);

    /* 3. Nothing changes on the next cycle: Susan's requeued jobs wait,
     * nobody ping-pongs. */
    snap_set_now(s, 3700);
    r = snap_run(s);
    if (r->ndecisions != 0)
        res_dump(snap_get(s), r);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_NOT_STARTED(r, sj[6]);
    ASSERT_NOT_STARTED(r, sj[7]);
    al_result_destroy(r);

    /* 4. Jemma opens a build session inside her quota: it reclaims one GPU
     * from Susan, the only queue above its share. */
    snap_set_now(s, 3800);
    build = snap_job_build(s, jemma, 1, 1);
    snap_job_ref(s, build)->submit_time = 3790;
    r = snap_run(s);
    ASSERT_STARTED(r, build, 1);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    ASSERT_EQ(evictions_of_queue(s, r, susan), 1);
    ASSERT_EQ(r->queues[jemma].nonpreempt_gpu, 1000);
    snap_apply(s, r, 3800);
    al_result_destroy(r);

    /* 5. Jemma adds a train job: she is still below her 2 GPUs, Susan
     * (5 GPUs, fair share 4) gives one more. */
    snap_set_now(s, 3900);
    jtrain = snap_job(s, jemma, 1, 1);
    snap_job_ref(s, jtrain)->submit_time = 3890;
    r = snap_run(s);
    ASSERT_STARTED(r, jtrain, 1);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    ASSERT_EQ(evictions_of_queue(s, r, susan), 1);
    snap_apply(s, r, 3900);
    al_result_destroy(r);

    /* 6. Joe wants a third GPU.  Fair shares: 2 deserved each, the 2 spare
     * GPUs split 1:1 between Susan and Joe (Jemma's demand is met): Susan 3,
     * Joe 3, Jemma 2.  Susan holds 4, so she gives one; Jemma, at her
     * deserved quota, is never touched. */
    snap_set_now(s, 4000);
    jj[2] = snap_job(s, joe, 1, 1);
    snap_job_ref(s, jj[2])->submit_time = 3990;
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[susan].fair[AL_RES_GPU], 3000, 2);
    ASSERT_DBL_NEAR(r->queues[joe].fair[AL_RES_GPU], 3000, 2);
    ASSERT_DBL_NEAR(r->queues[jemma].fair[AL_RES_GPU], 2000, 2);
    ASSERT_EQ(evictions_of_queue(s, r, jemma), 0);
    ASSERT(res_find(r, build, AL_DEC_EVICT) == NULL);
    ASSERT(res_find(r, jtrain, AL_DEC_EVICT) == NULL);
    ASSERT_EQ(evictions_of_queue(s, r, susan), 1);
    ASSERT_STARTED(r, jj[2], 1);
    ASSERT_EQ(r->queues[susan].allocated[AL_RES_GPU], 3000);
    ASSERT_EQ(r->queues[joe].allocated[AL_RES_GPU], 3000);
    ASSERT_EQ(r->queues[jemma].allocated[AL_RES_GPU], 2000);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Reclaim does not take a victim queue below its deserved quota: Susan at
 * exactly 2 GPUs keeps them even though Joe is starved. */
static void
reclaim_respects_deserved(void)
{
    snap_t *s = scenario();
    int susan, joe, other, a, b, c, j;
    al_result_t *r;

    snap_node(s, "n0", 4);
    susan = snap_queue(s, "susan", -1, 2000, 1, AL_UNLIMITED);
    joe = snap_queue(s, "joe", -1, 2000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 2000, 1, AL_UNLIMITED);
    a = snap_job(s, susan, 1, 1);
    b = snap_job(s, susan, 1, 1);
    c = snap_job_build(s, other, 1, 2);
    snap_place(s, a, 0, 0, 0x1);
    snap_place(s, b, 0, 0, 0x2);
    snap_place(s, c, 0, 0, 0xC);
    j = snap_job(s, joe, 1, 1);
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_NOT_STARTED(r, j);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Reclaim honours min_runtime: Susan's young jobs are safe. */
static void
reclaim_min_runtime(void)
{
    snap_t *s = scenario();
    int susan, joe, sj[4], j, i;
    al_result_t *r;

    snap_node(s, "n0", 4);
    susan = snap_queue(s, "susan", -1, 1000, 1, AL_UNLIMITED);
    joe = snap_queue(s, "joe", -1, 2000, 1, AL_UNLIMITED);
    for (i = 0; i < 4; i++) {
        sj[i] = snap_job(s, susan, 1, 1);
        snap_place(s, sj[i], 900, 0, (uint64_t)1 << i);
        snap_job_ref(s, sj[i])->min_runtime = 600;
    }
    j = snap_job(s, joe, 1, 1);
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_NOT_STARTED(r, j);
    al_result_destroy(r);

    /* One of them has run long enough: it alone may go. */
    snap_job_ref(s, sj[2])->start_time = 100;
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    ASSERT(res_find(r, sj[2], AL_DEC_EVICT) != NULL);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].devices, 0x4);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * Reclaim takes only the victims it needs, and never a queue's last GPUs
 * below its deserved quota.  One node of 8: p (deserved 1, weight 0) runs
 * p1 (1 GPU, device 0, least progress) and p2 (4 GPUs, devices 3-6); x runs
 * a 2-GPU build session on devices 1-2; device 7 is free.  x (deserved 4)
 * wants 4 GPUs on one node: evicting p2 alone frees 5.  Evicting p1 as well
 * would gain nothing and leave p with 0 of its deserved 1.
 */
static void
reclaim_minimal_victims(void)
{
    snap_t *s = scenario();
    int x, p, p1, p2, xb, xj;
    al_result_t *r;
    const al_decision_t *d;

    snap_node(s, "n0", 8);
    x = snap_queue(s, "x", -1, 4000, 1, AL_UNLIMITED);
    p = snap_queue(s, "p", -1, 1000, 0, AL_UNLIMITED);
    p1 = snap_job(s, p, 1, 1);
    snap_place(s, p1, 900, 0, 0x01);
    p2 = snap_job(s, p, 1, 4);
    snap_place(s, p2, 100, 0, 0x78);
    xb = snap_job_build(s, x, 1, 2);
    snap_place(s, xb, 0, 0, 0x06);
    xj = snap_job(s, x, 1, 4);
    snap_set_now(s, 1000);
    r = snap_run(s);
    if (res_count(r, AL_DEC_EVICT) != 1)
        res_dump(snap_get(s), r);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    d = res_find(r, p2, AL_DEC_EVICT);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_RECLAIM);
    ASSERT(res_find(r, p1, AL_DEC_EVICT) == NULL);
    ASSERT_STARTED(r, xj, 1);
    ASSERT_EQ(res_find(r, xj, AL_DEC_START)->tasks[0].devices & 0x07, 0);
    ASSERT_EQ(r->queues[p].allocated[AL_RES_GPU], 1000);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * A queue below its deserved quota is no reclaim victim, even when the
 * room needed is memory.  n0 (4 GPUs, 256 GiB): p (deserved 4) runs pa
 * (1 GPU, 128 GiB) and pb (1 GPU, 8 GiB): 120 GiB free.  n1 (4 GPUs,
 * 64 GiB) is too small.  x (deserved 4) wants 1 GPU with 128 GiB.  p holds
 * 2 of its 4 deserved GPUs: nothing may be taken from it.
 */
static void
reclaim_not_below_deserved_memory(void)
{
    snap_t *s = scenario();
    int x, p, pa, pb, xj;
    al_result_t *r;

    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    snap_node_ref(s, 0)->mem_bytes = 256 * GIB;
    snap_node_ref(s, 1)->mem_bytes = 64 * GIB;
    x = snap_queue(s, "x", -1, 4000, 1, AL_UNLIMITED);
    p = snap_queue(s, "p", -1, 4000, 1, AL_UNLIMITED);
    pa = snap_job(s, p, 1, 1);
    snap_job_ref(s, pa)->req.mem_bytes = 128 * GIB;
    snap_place(s, pa, 100, 0, 0x1);
    pb = snap_job(s, p, 1, 1);
    snap_job_ref(s, pb)->req.mem_bytes = 8 * GIB;
    snap_place(s, pb, 900, 0, 0x2);
    xj = snap_job(s, x, 1, 1);
    snap_job_ref(s, xj)->req.mem_bytes = 128 * GIB;
    snap_set_now(s, 1000);
    r = snap_run(s);
    if (res_count(r, AL_DEC_EVICT) != 0)
        res_dump(snap_get(s), r);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_NOT_STARTED(r, xj);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * No reclaim from a queue that is below its deserved quota, whatever the
 * reclaimer's share.  Two nodes of 8.  a (deserved 8, weight 0) runs 4 GPUs
 * on n0 and 2 on n1; b (deserved 0, weight 3) runs 2 on n0 and 4 on n1;
 * 2 GPUs are free on each node.  b wants one 4-GPU task: it is below its
 * fair share (10), but the only way in is to take GPUs from a, which holds
 * 6 of its deserved 8.
 */
static void
reclaim_not_below_deserved(void)
{
    snap_t *s = scenario();
    int a, b, bj;
    al_result_t *r;

    snap_node(s, "n0", 8);
    snap_node(s, "n1", 8);
    a = snap_queue(s, "a", -1, 8000, 0, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 0, 3, AL_UNLIMITED);
    snap_place(s, snap_job(s, a, 1, 4), 100, 0, 0x0F);
    snap_place(s, snap_job(s, a, 1, 2), 200, 1, 0x03);
    snap_place(s, snap_job(s, b, 1, 2), 300, 0, 0x30);
    snap_place(s, snap_job(s, b, 1, 4), 400, 1, 0x3C);
    bj = snap_job(s, b, 1, 4);
    snap_set_now(s, 1000);
    r = snap_run(s);
    if (res_count(r, AL_DEC_EVICT) != 0)
        res_dump(snap_get(s), r);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_NOT_STARTED(r, bj);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * A job larger than its queue's deserved quota is over quota as a whole
 * (Run:ai counts it so): it is no shield for the queue's guarantee.  Three
 * nodes of 8: g (deserved 8) runs a 16-GPU gang on n0 and n1 and a young
 * 4-GPU job on n2; x holds the rest of n2 with a build session.  o
 * (deserved 8, nothing running) wants 1 GPU.  Before, evicting the gang
 * would have taken g below 8 and o waited for as long as the gang ran.
 * The 4-GPU job is the cheapest victim (least work lost) but within g's
 * quota: it stays, and the gang goes.
 */
static void
reclaim_gang_over_quota(void)
{
    snap_t *s = scenario();
    int g, o, x, gang, small, oj;
    al_result_t *r;
    const al_decision_t *d;

    snap_node(s, "n0", 8);
    snap_node(s, "n1", 8);
    snap_node(s, "n2", 8);
    g = snap_queue(s, "g", -1, 8000, 1, AL_UNLIMITED);
    o = snap_queue(s, "o", -1, 8000, 1, AL_UNLIMITED);
    x = snap_queue(s, "x", -1, 8000, 1, AL_UNLIMITED);
    gang = snap_job(s, g, 2, 8);
    snap_place(s, gang, 100, 0, 0xFF);
    snap_place(s, gang, 100, 1, 0xFF);
    small = snap_job(s, g, 1, 4);
    snap_place(s, small, 990, 2, 0x0F);
    snap_place(s, snap_job_build(s, x, 1, 4), 0, 2, 0xF0);
    oj = snap_job(s, o, 1, 1);
    snap_set_now(s, 1000);
    r = snap_run(s);
    if (res_count(r, AL_DEC_EVICT) != 1)
        res_dump(snap_get(s), r);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    d = res_find(r, gang, AL_DEC_EVICT);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_RECLAIM);
    ASSERT_STARTED(r, oj, 1);
    ASSERT_EQ(r->queues[g].allocated[AL_RES_GPU], 4000);
    al_result_destroy(r);

    /* Without the gang (held; x's build sessions fill n0 and n1), g's
     * 4 GPUs are within its quota: nothing goes, o waits. */
    snap_unplace(s, gang);
    snap_job_ref(s, gang)->state = AL_JOB_HELD;
    gang = snap_job_build(s, x, 2, 8);
    snap_place(s, gang, 0, 0, 0xFF);
    snap_place(s, gang, 0, 1, 0xFF);
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_NOT_STARTED(r, oj);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * Queue priority orders the surplus, not the guarantee: a high-priority
 * queue with no deserved quota may not reclaim a low-priority queue below
 * its deserved quota.  One node of 8: lo (priority 0, deserved 2) runs L1
 * (4 GPUs) and L2 (1 GPU); o runs a 3-GPU build session.  hi (priority 1,
 * deserved 0) wants 4 GPUs: evicting L1 would leave lo with 1 of its 2.
 */
static void
reclaim_priority_case(bool siblings)
{
    snap_t *s = scenario();
    int d = -1, lo, hi, o, hj;
    al_result_t *r;

    snap_node(s, "n0", 8);
    if (siblings)
        d = snap_queue(s, "d", -1, 0, 3, AL_UNLIMITED);
    lo = snap_queue(s, "lo", d, 2000, 1, AL_UNLIMITED);
    hi = snap_queue(s, "hi", d, 0, 1, AL_UNLIMITED);
    o = snap_queue(s, "o", -1, 3000, 1, AL_UNLIMITED);
    snap_queue_ref(s, hi)->priority = 1;
    snap_place(s, snap_job(s, lo, 1, 4), 500, 0, 0x0F);
    snap_place(s, snap_job(s, lo, 1, 1), 100, 0, 0x10);
    snap_place(s, snap_job_build(s, o, 1, 3), 0, 0, 0xE0);
    hj = snap_job(s, hi, 1, 4);
    snap_set_now(s, 1000);
    r = snap_run(s);
    if (res_count(r, AL_DEC_EVICT) != 0)
        res_dump(snap_get(s), r);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_NOT_STARTED(r, hj);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
reclaim_priority_not_below_deserved(void)
{
    reclaim_priority_case(false);
    /* The same inside one department: siblings are no exception. */
    reclaim_priority_case(true);
}

/*
 * Elastic jobs shed extra tasks before anything is evicted, and the shed
 * tasks are the last ones.  One node of 8: e (queue a, deserved 0) runs 2
 * tasks of 4 GPUs (min 1); queue b (deserved 4) wants 4 GPUs.  Shrinking e
 * by one task frees devices 4-7.  Before its min_runtime, e is safe.
 */
static void
reclaim_shrink_elastic(void)
{
    snap_t *s = scenario();
    int a, b, e, bj;
    al_result_t *r;
    const al_decision_t *d;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 0, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 4000, 1, AL_UNLIMITED);
    e = snap_job(s, a, 1, 4);
    snap_job_ref(s, e)->max_tasks = 2;
    snap_job_ref(s, e)->min_runtime = 600;
    snap_place(s, e, 100, 0, 0x0F);
    snap_place(s, e, 100, 0, 0xF0);
    bj = snap_job(s, b, 1, 4);
    snap_set_now(s, 500);
    r = snap_run(s);
    if (r->ndecisions != 0)
        res_dump(snap_get(s), r);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_NOT_STARTED(r, bj);
    al_result_destroy(r);

    snap_set_now(s, 1000);
    r = snap_run(s);
    d = res_find(r, e, AL_DEC_SHRINK);
    if (d == NULL)
        res_dump(snap_get(s), r);
    ASSERT(d != NULL);
    ASSERT_EQ(d->ntasks, 1);
    ASSERT_EQ(d->why, AL_EVICT_RECLAIM);
    ASSERT_EQ(d->for_job, bj);
    ASSERT(res_find(r, e, AL_DEC_EVICT) == NULL);
    ASSERT_STARTED(r, bj, 1);
    ASSERT_EQ(res_find(r, bj, AL_DEC_START)->tasks[0].devices, 0xF0);
    ASSERT_EQ(r->queues[a].allocated[AL_RES_GPU], 4000);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * A fraction sized by memory frees what it holds, not what it asked for.
 * p (deserved 1 GPU) runs f1, 250 milli + 32 GiB on n0's one 40 GiB device
 * (placed at 800 milli), and f2, 500 milli on n1's device: 1300 in all.
 * x (deserved 3) wants one whole GPU.  Evicting f1 frees n0's device but
 * leaves p with 500 of its deserved 1000; evicting f2 frees nothing whole.
 */
static void
reclaim_fraction_by_memory(void)
{
    snap_t *s = scenario();
    int p, x, f1, f2, xj;
    al_result_t *r;

    snap_node(s, "n0", 1);
    snap_node(s, "n1", 1);
    snap_dev(s, 0, 0)->mem_bytes = 40 * GIB;
    p = snap_queue(s, "p", -1, 1000, 1, AL_UNLIMITED);
    x = snap_queue(s, "x", -1, 3000, 1, AL_UNLIMITED);
    f1 = snap_job_frac(s, p, 250, 32 * GIB);
    snap_place_frac(s, f1, 100, 0, 0, 800, 32 * GIB);
    f2 = snap_job_frac(s, p, 500, 0);
    snap_place_frac(s, f2, 100, 1, 0, 500, 0);
    xj = snap_job(s, x, 1, 1);
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_EQ(r->queues[p].allocated[AL_RES_GPU], 1300);
    if (res_count(r, AL_DEC_EVICT) != 0)
        res_dump(snap_get(s), r);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_NOT_STARTED(r, xj);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * With backfill on, a queue below its deserved quota still reclaims at
 * once rather than waiting for a reservation: the guarantee is now, not
 * when the borrower's job ends.  n0 (8 GPUs) runs p's 8-GPU job (p deserved
 * 0, ends in two hours); x (deserved 8) wants 4 GPUs.
 */
static void
reclaim_before_reservation(void)
{
    snap_t *s = scenario();
    int p, x, big, xj;
    al_result_t *r;
    const al_decision_t *d;

    snap_config(s)->reserve_depth = 1;
    snap_node(s, "n0", 8);
    p = snap_queue(s, "p", -1, 0, 1, AL_UNLIMITED);
    x = snap_queue(s, "x", -1, 8000, 1, AL_UNLIMITED);
    big = snap_job(s, p, 1, 8);
    snap_job_ref(s, big)->time_limit = 9000;
    snap_place(s, big, 0, 0, 0xFF);
    xj = snap_job(s, x, 1, 4);
    snap_set_now(s, 1800);
    r = snap_run(s);
    d = res_find(r, big, AL_DEC_EVICT);
    if (d == NULL)
        res_dump(snap_get(s), r);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_RECLAIM);
    ASSERT_STARTED(r, xj, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (b) Gangs                                                          */

static void
gang_all_or_nothing(void)
{
    snap_t *s = scenario();
    int q, other, busy, g8, g3, g9, g5;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0; /* lower-ranked jobs start freely */
    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 3000, 1, AL_UNLIMITED);
    busy = snap_job_build(s, other, 1, 3);
    snap_place(s, busy, 0, 0, 0x7);
    g8 = snap_job(s, q, 2, 4); /* needs both nodes whole */
    g3 = snap_job(s, q, 3, 1);
    g9 = snap_job(s, q, 9, 1); /* more GPUs than the cluster has */
    g5 = snap_job(s, q, 1, 5); /* more GPUs than any node has */
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_NOT_STARTED(r, g8);
    ASSERT_STARTED(r, g3, 3);
    ASSERT_REASON(r, g9, AL_WHY_TOO_BIG);
    ASSERT_REASON(r, g5, AL_WHY_TOO_BIG);
    ASSERT_EQ(res_count(r, AL_DEC_START), 1);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_EQ(r->stats.placements, 3);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
gang_elastic(void)
{
    snap_t *s = scenario();
    int q, other, busy, e;
    al_result_t *r;
    const al_decision_t *d;

    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 8000, 1, AL_UNLIMITED);
    e = snap_job(s, q, 2, 1);
    snap_job_ref(s, e)->max_tasks = 6;
    r = snap_run(s);
    d = res_find(r, e, AL_DEC_START);
    ASSERT(d != NULL);
    ASSERT_GE(d->ntasks, 2);
    ASSERT_LE(d->ntasks, 6);
    al_result_destroy(r);

    /* Only one GPU free: below min_tasks, nothing starts. */
    busy = snap_job_build(s, other, 1, 7);
    snap_place(s, busy, 0, 0, 0x7F);
    r = snap_run(s);
    ASSERT_NOT_STARTED(r, e);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (c) Limits                                                         */

static void
limit_leaf(void)
{
    snap_t *s = scenario();
    int dept, pa, j[3], i;
    al_result_t *r;

    snap_node(s, "n0", 8);
    dept = snap_queue(s, "dept", -1, 0, 1, AL_UNLIMITED);
    pa = snap_queue(s, "pa", dept, 0, 1, 2000);
    for (i = 0; i < 3; i++)
        j[i] = snap_job(s, pa, 1, 1);
    r = snap_run(s);
    ASSERT_STARTED(r, j[0], 1);
    ASSERT_STARTED(r, j[1], 1);
    ASSERT_REASON(r, j[2], AL_WHY_LIMIT);
    ASSERT_EQ(r->reasons[j[2]].queue, pa);
    ASSERT_EQ(r->reasons[j[2]].res, AL_RES_GPU);
    ASSERT_EQ(r->reasons[j[2]].amount, 2000);
    ASSERT_EQ(r->queues[pa].allocated[AL_RES_GPU], 2000);
    ASSERT_EQ(r->queues[dept].allocated[AL_RES_GPU], 2000);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
limit_ancestor(void)
{
    snap_t *s = scenario();
    int dept, pa, pb, a0, a1, b0, b1;
    al_result_t *r;

    /* Reclaim off: inside dept, pb below its fair share of the 3 GPUs could
     * otherwise take one from pa, which is not what this test is about. */
    snap_config(s)->reclaim = false;
    snap_node(s, "n0", 8);
    dept = snap_queue(s, "dept", -1, 0, 1, 3000);
    pa = snap_queue(s, "pa", dept, 0, 1, AL_UNLIMITED);
    pb = snap_queue(s, "pb", dept, 0, 1, AL_UNLIMITED);
    a0 = snap_job(s, pa, 1, 1);
    a1 = snap_job(s, pa, 1, 1);
    snap_place(s, a0, 0, 0, 0x1);
    snap_place(s, a1, 0, 0, 0x2);
    b0 = snap_job(s, pb, 1, 1);
    b1 = snap_job(s, pb, 1, 1);
    snap_set_now(s, 100);
    r = snap_run(s);
    ASSERT_STARTED(r, b0, 1);
    ASSERT_REASON(r, b1, AL_WHY_LIMIT);
    ASSERT_EQ(r->reasons[b1].queue, dept);
    ASSERT_EQ(r->reasons[b1].res, AL_RES_GPU);
    ASSERT_EQ(r->reasons[b1].amount, 3000);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_EQ(r->queues[dept].allocated[AL_RES_GPU], 3000);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
limit_cpu(void)
{
    snap_t *s = scenario();
    int q, a, b;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 0, 1, AL_UNLIMITED);
    snap_queue_ref(s, q)->quota[AL_RES_CPU].limit = 4000;
    a = snap_job(s, q, 1, 1);
    b = snap_job(s, q, 1, 1);
    snap_job_ref(s, a)->req.cpu_milli = 3000;
    snap_job_ref(s, b)->req.cpu_milli = 3000;
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_REASON(r, b, AL_WHY_LIMIT);
    ASSERT_EQ(r->reasons[b].queue, q);
    ASSERT_EQ(r->reasons[b].res, AL_RES_CPU);
    ASSERT_EQ(r->reasons[b].amount, 4000);
    ASSERT_EQ(r->queues[q].allocated[AL_RES_CPU], 3000);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (d) Non-preemptible work stays within deserved quota               */

static void
nonpreemptible_deserved(void)
{
    snap_t *s = scenario();
    int q, b[3], t, i;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 2000, 1, AL_UNLIMITED);
    for (i = 0; i < 3; i++)
        b[i] = snap_job_build(s, q, 1, 1);
    t = snap_job(s, q, 1, 1);
    r = snap_run(s);
    ASSERT_STARTED(r, b[0], 1);
    ASSERT_STARTED(r, b[1], 1);
    ASSERT_REASON(r, b[2], AL_WHY_DESERVED);
    ASSERT_EQ(r->reasons[b[2]].queue, q);
    /* Preemptible work borrows the idle GPUs freely. */
    ASSERT_STARTED(r, t, 1);
    ASSERT_EQ(r->queues[q].nonpreempt_gpu, 2000);
    ASSERT_EQ(r->queues[q].allocated[AL_RES_GPU], 3000);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
nonpreemptible_ancestor(void)
{
    snap_t *s = scenario();
    int dept, pa, pb, a0, a1, b0;
    al_result_t *r;

    snap_node(s, "n0", 8);
    dept = snap_queue(s, "dept", -1, 2000, 1, AL_UNLIMITED);
    pa = snap_queue(s, "pa", dept, 2000, 1, AL_UNLIMITED);
    pb = snap_queue(s, "pb", dept, 1000, 1, AL_UNLIMITED);
    a0 = snap_job_build(s, pa, 1, 1);
    a1 = snap_job_build(s, pa, 1, 1);
    snap_place(s, a0, 0, 0, 0x1);
    snap_place(s, a1, 0, 0, 0x2);
    b0 = snap_job_build(s, pb, 1, 1);
    snap_set_now(s, 100);
    r = snap_run(s);
    ASSERT_REASON(r, b0, AL_WHY_DESERVED);
    ASSERT_EQ(r->reasons[b0].queue, dept);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_EQ(r->queues[dept].nonpreempt_gpu, 2000);
    al_result_destroy(r);
    snap_destroy(s);
}

/* With no deserved quota at all, a build session can never start. */
static void
nonpreemptible_no_quota(void)
{
    snap_t *s = scenario();
    int q, b;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 0, 1, AL_UNLIMITED);
    b = snap_job_build(s, q, 1, 1);
    r = snap_run(s);
    ASSERT_REASON(r, b, AL_WHY_DESERVED);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A queue's build cap: its build jobs together hold at most the cap, on
 * top of the deserved rule; train jobs and other queues are not held back,
 * and build jobs already running count. */
static void
build_cap(void)
{
    snap_t *s = scenario();
    int q, o, b[4], t, i;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    o = snap_queue(s, "o", -1, 2000, 1, AL_UNLIMITED);
    snap_queue_ref(s, q)->build_capped = true;
    snap_queue_ref(s, q)->build_cap = 2000;
    b[0] = snap_job_build(s, q, 1, 1);
    snap_place(s, b[0], 0, 0, 0x1);
    for (i = 1; i < 3; i++)
        b[i] = snap_job_build(s, q, 1, 1);
    t = snap_job(s, q, 1, 1);
    b[3] = snap_job_build(s, o, 1, 2);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_STARTED(r, b[1], 1);
    ASSERT_REASON(r, b[2], AL_WHY_BUILD_CAP);
    ASSERT_EQ(r->reasons[b[2]].queue, q);
    ASSERT_EQ(r->reasons[b[2]].amount, 2000);
    ASSERT_STARTED(r, t, 1);
    ASSERT_STARTED(r, b[3], 1);
    ASSERT_EQ(r->queues[q].nonpreempt_gpu, 2000);
    al_result_destroy(r);

    /* A cap of 0 keeps every build job out; on a parent it holds for the
     * subtree; a non-build, non-preemptible job (inference) is not
     * counted. */
    snap_queue_ref(s, q)->build_cap = 0;
    snap_unplace(s, b[0]);
    snap_job_ref(s, b[1])->build = false;
    r = snap_run(s);
    ASSERT_REASON(r, b[0], AL_WHY_BUILD_CAP);
    ASSERT_REASON(r, b[2], AL_WHY_BUILD_CAP);
    ASSERT_STARTED(r, b[1], 1);
    ASSERT_EQ(r->reasons[b[0]].amount, 0);
    al_result_destroy(r);
    snap_queue_ref(s, q)->build_cap = -1;
    {
        al_result_t *bad = NULL;
        ASSERT_EQ(al_sched_run(snap_get(s), &bad, NULL), AL_EINVAL);
        ASSERT(bad == NULL);
    }
    snap_destroy(s);
}

static void
build_cap_parent(void)
{
    snap_t *s = scenario();
    int dept, pa, pb, a, b, c;
    al_result_t *r;

    snap_node(s, "n0", 8);
    dept = snap_queue(s, "dept", -1, 6000, 1, AL_UNLIMITED);
    pa = snap_queue(s, "pa", dept, 3000, 1, AL_UNLIMITED);
    pb = snap_queue(s, "pb", dept, 3000, 1, AL_UNLIMITED);
    snap_queue_ref(s, dept)->build_capped = true;
    snap_queue_ref(s, dept)->build_cap = 3000;
    a = snap_job_build(s, pa, 1, 2);
    snap_place(s, a, 0, 0, 0x3);
    b = snap_job_build(s, pb, 1, 2);
    c = snap_job_build(s, pb, 1, 1);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_REASON(r, b, AL_WHY_BUILD_CAP);
    ASSERT_EQ(r->reasons[b].queue, dept);
    ASSERT_STARTED(r, c, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Build jobs inside their deserved quota are never reclaimed, even when
 * their queue is above its fair share and another queue waits: the
 * waiting queue's job says no victim could be found. */
static void
build_never_reclaimed(void)
{
    snap_t *s = scenario();
    int a, o, b[4], t, i;
    al_result_t *r;

    snap_node(s, "n0", 4);
    a = snap_queue(s, "a", -1, 4000, 1, AL_UNLIMITED);
    o = snap_queue(s, "o", -1, 0, 1, AL_UNLIMITED);
    for (i = 0; i < 4; i++) {
        b[i] = snap_job_build(s, a, 1, 1);
        snap_place(s, b[i], 0, 0, 1ULL << i);
    }
    snap_queue_ref(s, a)->quota[AL_RES_GPU].deserved = 2000;
    snap_queue_ref(s, o)->quota[AL_RES_GPU].deserved = 2000;
    t = snap_job(s, o, 1, 2);
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_NOT_STARTED(r, t);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (e) Backfill                                                       */

/*
 * One node of 8 GPUs at now = 100.  R1 holds 4 GPUs until 1000, R2 holds 2
 * until 2000, 2 are free.  G, the oldest pending job, wants 6: the earliest
 * time 6 GPUs are free is 1000, when R1 ends.  Then job x (2 GPUs, limit
 * `limit`) is considered.
 */
static snap_t *
backfill_setup(int *g, int *x, int64_t limit)
{
    snap_t *s = scenario();
    int q, r1, r2;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    r1 = snap_job(s, q, 1, 4);
    r2 = snap_job(s, q, 1, 2);
    snap_job_ref(s, r1)->time_limit = 1000;
    snap_job_ref(s, r2)->time_limit = 2000;
    snap_place(s, r1, 0, 0, 0x0F);
    snap_place(s, r2, 0, 0, 0x30);
    *g = snap_job(s, q, 1, 6);
    snap_job_ref(s, *g)->submit_time = 10;
    snap_job_ref(s, *g)->time_limit = 5000;
    *x = snap_job(s, q, 1, 2);
    snap_job_ref(s, *x)->submit_time = 20;
    snap_job_ref(s, *x)->time_limit = limit;
    snap_set_now(s, 100);
    return s;
}

static void
backfill_short_job(void)
{
    int g, x, i, found = 0;
    snap_t *s = backfill_setup(&g, &x, 500);
    al_result_t *r = snap_run(s);

    ASSERT_REASON(r, g, AL_WHY_RESERVED);
    ASSERT_EQ(r->reasons[g].time, 1000);
    ASSERT_GE(r->nreservations, 1);
    for (i = 0; i < r->nreservations; i++) {
        if (r->reservations[i].job != g)
            continue;
        found = 1;
        ASSERT_EQ(r->reservations[i].start, 1000);
        ASSERT_EQ(r->reservations[i].nnodes, 1);
        ASSERT_EQ(r->reservations[i].nodes[0], 0);
        ASSERT_EQ(r->reservations[i].tasks[0], 1);
    }
    ASSERT(found);
    /* Ends at 600, before the reservation: it backfills. */
    ASSERT_STARTED(r, x, 1);
    ASSERT(!res_find(r, x, AL_DEC_START)->lent);
    ASSERT_EQ(res_find(r, x, AL_DEC_START)->tasks[0].devices, 0xC0);
    ASSERT_EQ(r->stats.reservations, r->nreservations);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
backfill_long_job(void)
{
    int g, x;
    snap_t *s = backfill_setup(&g, &x, 5000);
    al_result_t *r = snap_run(s);

    ASSERT_REASON(r, g, AL_WHY_RESERVED);
    ASSERT_EQ(r->reasons[g].time, 1000);
    /* Would hold its GPUs until 5100 and push G back to 2000. */
    ASSERT_REASON(r, x, AL_WHY_BEHIND_RESERVATION);
    ASSERT_EQ(r->reasons[x].job, g);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);
    snap_destroy(s);

    /* A job with neither limit nor estimate is assumed to run
     * default_runtime (3600 here): also too long.  (First come first
     * served: shortest-first would put x, 3600 s, before G, 5000 s.) */
    s = backfill_setup(&g, &x, 0);
    snap_config(s)->short_first = false;
    r = snap_run(s);
    ASSERT_REASON(r, x, AL_WHY_BEHIND_RESERVATION);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
backfill_lend(void)
{
    int g, x;
    snap_t *s = backfill_setup(&g, &x, 5000);
    al_result_t *r;
    const al_decision_t *d;

    snap_config(s)->lend_reserved = true;
    r = snap_run(s);
    ASSERT_REASON(r, g, AL_WHY_RESERVED);
    ASSERT_STARTED(r, x, 1);
    d = res_find(r, x, AL_DEC_START);
    ASSERT(d->lent);
    ASSERT_EQ(d->for_job, g);
    al_result_destroy(r);

    /* Non-preemptible work is never lent reserved GPUs. */
    snap_job_ref(s, x)->preemptible = false;
    r = snap_run(s);
    ASSERT_REASON(r, x, AL_WHY_BEHIND_RESERVATION);
    ASSERT_EQ(r->reasons[x].job, g);
    al_result_destroy(r);
    snap_destroy(s);
}

/* When the reserved job can start, the lent job is evicted for it. */
static void
backfill_lent_evicted(void)
{
    int g, x, r1;
    snap_t *s = backfill_setup(&g, &x, 5000);
    al_result_t *r;
    const al_decision_t *d;

    snap_config(s)->lend_reserved = true;
    snap_place(s, x, 100, 0, 0xC0);
    snap_job_ref(s, x)->lent = true;
    /* R1 has ended (the shell removed it): 4 free + x's 2 lent = 6. */
    r1 = 0;
    snap_unplace(s, r1);
    snap_job_ref(s, r1)->state = AL_JOB_HELD;
    snap_set_now(s, 1000);
    r = snap_run(s);
    d = res_find(r, x, AL_DEC_EVICT);
    if (d == NULL)
        res_dump(snap_get(s), r);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_RESERVATION);
    ASSERT_EQ(d->for_job, g);
    ASSERT(d->requeue);
    ASSERT_STARTED(r, g, 1);
    ASSERT_EQ(res_find(r, g, AL_DEC_START)->tasks[0].devices, 0xCF);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A fraction holds its device until it ends: a whole-node job behind it
 * waits for that end, it is not "too big". */
static void
backfill_behind_fraction(void)
{
    snap_t *s = scenario();
    int q, f, big;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    f = snap_job_frac(s, q, 750, 0);
    snap_job_ref(s, f)->time_limit = 900;
    snap_place_frac(s, f, 100, 0, 5, 750, 0);
    big = snap_job(s, q, 1, 8);
    snap_set_now(s, 200);
    r = snap_run(s);
    ASSERT_REASON(r, big, AL_WHY_RESERVED);
    ASSERT_EQ(r->reasons[big].time, 1000);
    al_result_destroy(r);

    snap_config(s)->reserve_depth = 0;
    r = snap_run(s);
    ASSERT_NOT_STARTED(r, big);
    ASSERT_NE(r->reasons[big].code, AL_WHY_TOO_BIG);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Without reservations (reserve_depth 0) the long job starts freely. */
static void
backfill_off(void)
{
    int g, x;
    snap_t *s = backfill_setup(&g, &x, 5000);
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    r = snap_run(s);
    ASSERT_NOT_STARTED(r, g);
    ASSERT_NE(r->reasons[g].code, AL_WHY_RESERVED);
    ASSERT_STARTED(r, x, 1);
    ASSERT_EQ(r->nreservations, 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (f) Preemption inside a queue, (g) min_runtime                     */

static snap_t *
preempt_setup(int *run, int *build)
{
    snap_t *s = scenario();
    int q, i;

    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    for (i = 0; i < 4; i++) {
        run[i] = snap_job(s, q, 1, 1);
        snap_place(s, run[i], 100 * (i + 1), 0, (uint64_t)1 << i);
    }
    *build = snap_job_build(s, q, 1, 1);
    snap_set_now(s, 1000);
    return s;
}

static void
preempt_by_priority(void)
{
    int run[4], b;
    snap_t *s = preempt_setup(run, &b);
    al_result_t *r = snap_run(s);
    const al_decision_t *d;

    /* The victim is the one that made the least progress: run[3]. */
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    d = res_find(r, run[3], AL_DEC_EVICT);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_PREEMPT);
    ASSERT_EQ(d->for_job, b);
    ASSERT(d->requeue);
    ASSERT_STARTED(r, b, 1);
    ASSERT_EQ(res_find(r, b, AL_DEC_START)->tasks[0].devices, 0x8);
    al_result_destroy(r);

    /* Preemption off: nothing moves. */
    snap_config(s)->preempt = false;
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_NOT_STARTED(r, b);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A job's own priority adjustment orders it within its queue and class,
 * ahead of the age order, and not across classes: one node of 4 and
 * three 4-GPU jobs, only one of which fits. */
static void
priority_adjust(void)
{
    snap_t *s = scenario();
    int q, a, b, c;
    al_result_t *r;

    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 4);
    b = snap_job(s, q, 1, 4);
    c = snap_job(s, q, 1, 4);
    r = snap_run(s); /* oldest first */
    ASSERT_STARTED(r, a, 1);
    al_result_destroy(r);
    snap_job_ref(s, b)->prio_adjust = 10;
    r = snap_run(s); /* the raised one, though younger */
    ASSERT_STARTED(r, b, 1);
    ASSERT_NOT_STARTED(r, a);
    al_result_destroy(r);
    snap_job_ref(s, b)->prio_adjust = 0;
    snap_job_ref(s, a)->prio_adjust = -1;
    r = snap_run(s); /* a lowered (niced) one goes behind the others */
    ASSERT_STARTED(r, b, 1);
    al_result_destroy(r);
    snap_job_ref(s, c)->prio_adjust = (int64_t)1 << 40; /* clamped */
    snap_job_ref(s, b)->prio_adjust = ((int64_t)1 << 33) - 2;
    r = snap_run(s);
    ASSERT_STARTED(r, c, 1);
    al_result_destroy(r);
    /* A higher class still comes first. */
    snap_job_ref(s, a)->priority = AL_PRIO_BUILD;
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_NOT_STARTED(r, c);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Progress counts since the last checkpoint: a job checkpointed a moment
 * ago loses the least. */
static void
preempt_checkpoint(void)
{
    int run[4], b;
    snap_t *s = preempt_setup(run, &b);
    al_result_t *r;

    snap_job_ref(s, run[0])->checkpoint_time = 990;
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    ASSERT(res_find(r, run[0], AL_DEC_EVICT) != NULL);
    ASSERT_STARTED(r, b, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Equal or lower priority never preempts. */
static void
preempt_not_lower(void)
{
    snap_t *s = scenario();
    int q, i, j, t;
    al_result_t *r;

    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    for (i = 0; i < 4; i++) {
        j = snap_job(s, q, 1, 1);
        snap_place(s, j, 100, 0, (uint64_t)1 << i);
    }
    t = snap_job(s, q, 1, 1);
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_NOT_STARTED(r, t);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
preempt_min_runtime(void)
{
    int run[4], b, i;
    snap_t *s = preempt_setup(run, &b);
    al_result_t *r;

    for (i = 0; i < 4; i++)
        snap_job_ref(s, run[i])->min_runtime = 3600;
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_NOT_STARTED(r, b);
    al_result_destroy(r);

    /* Only run[0] has run long enough: it goes even though it made the
     * most progress. */
    snap_set_now(s, 3750);
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 1);
    ASSERT(res_find(r, run[0], AL_DEC_EVICT) != NULL);
    ASSERT_STARTED(r, b, 1);
    ASSERT_EQ(res_find(r, b, AL_DEC_START)->tasks[0].devices, 0x1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (h) Topology, (i) NVLink/NUMA, (j) fractions, (k) packing          */

/* Four nodes of 4 GPUs: n0, n1 in rack r1; n2, n3 in rack r2. */
static snap_t *
racks_setup(int *q)
{
    static const char *const levels[] = { "block", "rack" };
    snap_t *s = scenario();
    int n, other;

    snap_config(s)->reserve_depth = 0;
    snap_topo_levels(s, 2, levels);
    for (n = 0; n < 4; n++) {
        char name[32];

        snprintf(name, sizeof(name), "n%d", n);
        snap_node(s, name, 4);
        snap_node_topo(s, n, 0, "b1");
        snap_node_topo(s, n, 1, n < 2 ? "r1" : "r2");
    }
    *q = snap_queue(s, "q", -1, 16000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 16000, 1, AL_UNLIMITED);
    /* Two GPUs busy on n2 with work nobody may touch. */
    snap_place(s, snap_job_build(s, other, 1, 2), 0, 2, 0x3);
    return s;
}

static void
topology_required(void)
{
    int q, g, busy;
    snap_t *s = racks_setup(&q);
    al_result_t *r;

    busy = snap_job_build(s, 1, 1, 2);
    snap_place(s, busy, 0, 0, 0x3);
    /* Whole nodes free: n1 (r1) and n3 (r2): no rack holds 2 x 4. */
    g = snap_job(s, q, 2, 4);
    snap_job_ref(s, g)->topo_level = 1;
    snap_job_ref(s, g)->topo_mode = AL_TOPO_REQUIRED;
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_REASON(r, g, AL_WHY_TOPOLOGY);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);

    /* Preferred only: it takes n1 and n3. */
    snap_job_ref(s, g)->topo_mode = AL_TOPO_PREFERRED;
    r = snap_run(s);
    ASSERT_STARTED(r, g, 2);
    ASSERT_EQ(res_tasks_on(r, g, 1), 1);
    ASSERT_EQ(res_tasks_on(r, g, 3), 1);
    al_result_destroy(r);

    /* n0 frees up: rack r1 holds the whole gang. */
    snap_unplace(s, busy);
    snap_job_ref(s, busy)->state = AL_JOB_HELD;
    snap_job_ref(s, g)->topo_mode = AL_TOPO_REQUIRED;
    r = snap_run(s);
    ASSERT_STARTED(r, g, 2);
    ASSERT_EQ(res_tasks_on(r, g, 0), 1);
    ASSERT_EQ(res_tasks_on(r, g, 1), 1);
    ASSERT_EQ(res_devices_on(r, g, 0), 0xF);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A preferred gang that fits in one rack goes in one rack, and bin-packing
 * picks the fuller rack. */
static void
topology_preferred_tight(void)
{
    int q, g;
    snap_t *s = racks_setup(&q);
    al_result_t *r;

    /* n2 has 2 free, n3 4: rack r2 (6 free) is fuller than r1 (8 free) and
     * holds 2 x 2 GPUs, so the gang goes there. */
    g = snap_job(s, q, 2, 2);
    snap_job_ref(s, g)->topo_level = 1;
    snap_job_ref(s, g)->topo_mode = AL_TOPO_PREFERRED;
    r = snap_run(s);
    ASSERT_STARTED(r, g, 2);
    ASSERT_EQ(res_tasks_on(r, g, 0) + res_tasks_on(r, g, 1), 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/* The extra tasks of an elastic job obey its required topology too. */
static void
topology_required_elastic(void)
{
    int q, e, k;
    snap_t *s = racks_setup(&q);
    al_result_t *r;
    const al_decision_t *d;
    const char *rack;

    /* Whole nodes free: n0, n1 (rack r1) and n3 (rack r2). */
    e = snap_job(s, q, 1, 4);
    snap_job_ref(s, e)->max_tasks = 4;
    snap_job_ref(s, e)->topo_level = 1;
    snap_job_ref(s, e)->topo_mode = AL_TOPO_REQUIRED;
    snap_set_now(s, 10);
    r = snap_run(s);
    d = res_find(r, e, AL_DEC_START);
    ASSERT(d != NULL);
    rack = snap_node_ref(s, d->tasks[0].node)->topo[1];
    for (k = 1; k < d->ntasks; k++)
        if (strcmp(snap_node_ref(s, d->tasks[k].node)->topo[1], rack) != 0) {
            res_dump(snap_get(s), r);
            AL__FAIL("task %d in rack %s, task 0 in rack %s", k,
                     snap_node_ref(s, d->tasks[k].node)->topo[1], rack);
        }
    /* Rack r1 holds two tasks: the larger choice. */
    ASSERT_EQ(d->ntasks, 2);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
nvlink_preference(void)
{
    snap_t *s = scenario();
    int q, other, a, b, j, d;
    al_result_t *r;

    snap_node(s, "n0", 8);
    for (d = 0; d < 8; d++)
        snap_dev(s, 0, d)->nvlink = d < 4 ? 0 : 1;
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 8000, 1, AL_UNLIMITED);
    a = snap_job_build(s, other, 1, 3);
    b = snap_job_build(s, other, 1, 2);
    snap_place(s, a, 0, 0, 0x07);
    snap_place(s, b, 0, 0, 0x30);
    /* Free: 3 (domain 0), 6 and 7 (domain 1).  Two GPUs: 6 and 7. */
    j = snap_job(s, q, 1, 2);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].devices, 0xC0);
    al_result_destroy(r);

    /* One GPU: the lone free GPU of domain 0, keeping 6+7 together. */
    snap_job_ref(s, j)->req.gpus = 1;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].devices, 0x08);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A task that requires one NVLink domain waits rather than span two, and
 * one larger than every domain never fits; preferring, it spans them. */
static void
nvlink_required(void)
{
    snap_t *s = scenario();
    int q, other, a, j, big, d;
    al_result_t *r;

    snap_node(s, "n0", 8);
    for (d = 0; d < 8; d++)
        snap_dev(s, 0, d)->nvlink = d < 4 ? 0 : 1;
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 8000, 1, AL_UNLIMITED);
    a = snap_job_build(s, other, 1, 2);
    snap_place(s, a, 0, 0, 0x11); /* one GPU of each domain */
    j = snap_job(s, q, 1, 4);
    big = snap_job(s, q, 1, 5);
    snap_job_ref(s, j)->req.one_domain = true;
    snap_job_ref(s, big)->req.one_domain = true;
    snap_set_now(s, 10);
    r = snap_run(s);
    /* Six GPUs free, three in each domain: the 4-GPU task waits. */
    ASSERT_NOT_STARTED(r, j);
    ASSERT_REASON(r, j, AL_WHY_TOPOLOGY);
    ASSERT_NOT_STARTED(r, big);
    ASSERT_REASON(r, big, AL_WHY_TOO_BIG);
    al_result_destroy(r);

    /* Preferred (the default): the same task spans the two domains. */
    snap_job_ref(s, j)->req.one_domain = false;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(
        __builtin_popcountll(res_find(r, j, AL_DEC_START)->tasks[0].devices),
        4);
    al_result_destroy(r);

    /* Domain 1 freed: the required task takes all of it. */
    snap_job_ref(s, j)->req.one_domain = true;
    snap_unplace(s, a);
    snap_place(s, a, 0, 0, 0x03);
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].devices, 0xF0);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
numa_preference(void)
{
    snap_t *s = scenario();
    int q, other, a, j, d;
    al_result_t *r;

    snap_node(s, "n0", 8);
    for (d = 0; d < 8; d++) {
        snap_dev(s, 0, d)->nvlink = -1;
        snap_dev(s, 0, d)->numa = d < 4 ? 0 : 1;
    }
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 8000, 1, AL_UNLIMITED);
    a = snap_job_build(s, other, 1, 3);
    snap_place(s, a, 0, 0, 0x61); /* 0 (numa 0), 5 and 6 (numa 1) */
    /* Free: 1, 2, 3 (numa 0); 4, 7 (numa 1).  Three GPUs: 1, 2, 3. */
    j = snap_job(s, q, 1, 3);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].devices, 0x0E);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
fractional_packing(void)
{
    snap_t *s = scenario();
    int q, f1, f2, f3;
    const al_placement_t *p1, *p2, *p3;
    al_result_t *r;

    snap_node(s, "n0", 2);
    q = snap_queue(s, "q", -1, 2000, 1, AL_UNLIMITED);
    f1 = snap_job_frac(s, q, 500, 0);
    f2 = snap_job_frac(s, q, 500, 0);
    f3 = snap_job_frac(s, q, 600, 0);
    r = snap_run(s);
    ASSERT_STARTED(r, f1, 1);
    ASSERT_STARTED(r, f2, 1);
    ASSERT_STARTED(r, f3, 1);
    p1 = &res_find(r, f1, AL_DEC_START)->tasks[0];
    p2 = &res_find(r, f2, AL_DEC_START)->tasks[0];
    p3 = &res_find(r, f3, AL_DEC_START)->tasks[0];
    ASSERT_EQ(popcount(p1->devices), 1);
    ASSERT_EQ(p1->devices, p2->devices);
    ASSERT_NE(p3->devices, p1->devices);
    ASSERT_EQ(popcount(p3->devices), 1);
    ASSERT_EQ(p1->gpu_milli, 500);
    ASSERT_EQ(p2->gpu_milli, 500);
    ASSERT_EQ(p3->gpu_milli, 600);
    ASSERT_EQ(r->queues[q].allocated[AL_RES_GPU], 1600);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A new fraction goes to the device that is already shared. */
static void
fractional_prefers_shared(void)
{
    snap_t *s = scenario();
    int q, run, f, big;
    al_result_t *r;

    snap_node(s, "n0", 2);
    q = snap_queue(s, "q", -1, 2000, 1, AL_UNLIMITED);
    run = snap_job_frac(s, q, 500, 0);
    snap_place_frac(s, run, 0, 0, 1, 500, 0);
    f = snap_job_frac(s, q, 300, 0);
    big = snap_job_frac(s, q, 700, 0);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_STARTED(r, f, 1);
    ASSERT_EQ(res_find(r, f, AL_DEC_START)->tasks[0].devices, 0x2);
    /* 500 + 300 + 700 > 1000: the big one takes device 0. */
    ASSERT_STARTED(r, big, 1);
    ASSERT_EQ(res_find(r, big, AL_DEC_START)->tasks[0].devices, 0x1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Fractions by GPU memory: 40 GiB twice fills an 80 GiB device. */
static void
fractional_memory(void)
{
    snap_t *s = scenario();
    int q, f[3], i, other;
    al_result_t *r;
    const al_placement_t *p[3];

    snap_node(s, "n0", 3);
    q = snap_queue(s, "q", -1, 3000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 3000, 1, AL_UNLIMITED);
    /* Device 2 holds a whole-GPU job: fractions must not land there. */
    snap_place(s, snap_job_build(s, other, 1, 1), 0, 0, 0x4);
    for (i = 0; i < 3; i++)
        f[i] = snap_job_frac(s, q, 0, 40 * GIB);
    snap_set_now(s, 10);
    r = snap_run(s);
    for (i = 0; i < 3; i++) {
        ASSERT_STARTED(r, f[i], 1);
        p[i] = &res_find(r, f[i], AL_DEC_START)->tasks[0];
        ASSERT_EQ(popcount(p[i]->devices), 1);
        ASSERT_EQ(p[i]->devices & 0x4, 0);
        ASSERT_EQ(p[i]->gpu_mem, 40 * GIB);
    }
    /* Two share a device, the third is alone on the other. */
    ASSERT(p[0]->devices == p[1]->devices || p[0]->devices == p[2]->devices ||
           p[1]->devices == p[2]->devices);
    ASSERT(p[0]->devices != p[1]->devices || p[0]->devices != p[2]->devices);
    al_result_destroy(r);

    /* A fourth 40 GiB still fits; a fifth does not. */
    r = snap_run(s);
    snap_apply(s, r, 20);
    al_result_destroy(r);
    f[0] = snap_job_frac(s, q, 0, 40 * GIB);
    f[1] = snap_job_frac(s, q, 0, 40 * GIB);
    r = snap_run(s);
    ASSERT_STARTED(r, f[0], 1);
    ASSERT_NOT_STARTED(r, f[1]);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * A fraction sized by memory counts for what it holds against limits.  Two
 * 16 GiB devices; each job asks 100 milli and 12 GiB, which takes 3/4 of a
 * device.  Queue limit: 1 GPU.  The first job holds 750 milli; a second
 * (750 more on the other device) would exceed the limit.
 */
static void
fractional_memory_limit(void)
{
    snap_t *s = scenario();
    int q, a, b;
    al_result_t *r;
    int64_t held;

    snap_node(s, "n0", 2);
    snap_dev(s, 0, 0)->mem_bytes = 16 * GIB;
    snap_dev(s, 0, 1)->mem_bytes = 16 * GIB;
    q = snap_queue(s, "q", -1, 0, 1, 1000);
    a = snap_job_frac(s, q, 100, 12 * GIB);
    b = snap_job_frac(s, q, 100, 12 * GIB);
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    held = res_find(r, a, AL_DEC_START)->tasks[0].gpu_milli;
    ASSERT_GE(held, 100);
    /* Whatever share the core gives a task, the queue's total stays within
     * its limit; with the 3/4 share, b cannot start. */
    ASSERT_LE(r->queues[q].allocated[AL_RES_GPU], 1000);
    if (held == 750)
        ASSERT_REASON(r, b, AL_WHY_LIMIT);
    al_result_destroy(r);
    snap_destroy(s);
}

/* The same for a per-model limit. */
static void
fractional_memory_model_limit(void)
{
    snap_t *s = scenario();
    int q, a, b;
    al_result_t *r;

    snap_node(s, "n0", 2);
    snap_node_model(s, 0, "H100");
    snap_dev(s, 0, 0)->mem_bytes = 16 * GIB;
    snap_dev(s, 0, 1)->mem_bytes = 16 * GIB;
    q = snap_queue(s, "q", -1, 0, 1, AL_UNLIMITED);
    snap_queue_model_quota(s, q, "H100", 0, 1000);
    a = snap_job_frac(s, q, 100, 12 * GIB);
    b = snap_job_frac(s, q, 100, 12 * GIB);
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_EQ(res_find(r, a, AL_DEC_START)->tasks[0].gpu_milli, 750);
    ASSERT_REASON(r, b, AL_WHY_MODEL_LIMIT);
    ASSERT_LE(r->queues[q].allocated[AL_RES_GPU], 1000);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
pack_bin_vs_spread(void)
{
    snap_t *s = scenario();
    int q, other, j, a, b;
    al_result_t *r;

    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    snap_node(s, "n2", 4);
    q = snap_queue(s, "q", -1, 12000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 12000, 1, AL_UNLIMITED);
    a = snap_job_build(s, other, 1, 3);
    b = snap_job_build(s, other, 1, 1);
    snap_place(s, a, 0, 1, 0x7);
    snap_place(s, b, 0, 2, 0x1);
    j = snap_job(s, q, 1, 1);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].node, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].devices, 0x8);
    al_result_destroy(r);

    snap_config(s)->pack = AL_PACK_SPREAD;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].node, 0);
    al_result_destroy(r);

    /* A 2-GPU job does not fit n1 (1 free): bin-pack takes n2 (3 free). */
    snap_config(s)->pack = AL_PACK_BIN;
    snap_job_ref(s, j)->req.gpus = 2;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].node, 2);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Pools and GPU models restrict where a job may go. */
static void
pool_and_model(void)
{
    snap_t *s = scenario();
    int q, a, b, c, d, e;
    al_result_t *r;

    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    snap_node(s, "n2", 4);
    snap_node_pool(s, 1, "inference");
    snap_node_model(s, 0, "A100");
    snap_node_model(s, 1, "A100");
    snap_node_model(s, 2, "H100");
    q = snap_queue(s, "q", -1, 12000, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 1);
    snap_job_pool(s, a, "inference");
    b = snap_job(s, q, 1, 1);
    snap_job_model(s, b, "H100");
    c = snap_job(s, q, 1, 1);
    snap_job_model(s, c, "V100");
    d = snap_job(s, q, 1, 8); /* H100s exist, not 8 on one node */
    snap_job_model(s, d, "H100");
    e = snap_job(s, q, 1, 1);
    snap_job_pool(s, e, "training"); /* no such pool */
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_EQ(res_find(r, a, AL_DEC_START)->tasks[0].node, 1);
    ASSERT_STARTED(r, b, 1);
    ASSERT_EQ(res_find(r, b, AL_DEC_START)->tasks[0].node, 2);
    ASSERT_NOT_STARTED(r, c);
    ASSERT_EQ(r->reasons[c].code, AL_WHY_NO_MATCH);
    ASSERT_REASON(r, d, AL_WHY_TOO_BIG);
    ASSERT_REASON(r, e, AL_WHY_NO_MATCH);
    {
        char why[256];
        al_reason_format(snap_get(s), &r->reasons[c], why, sizeof why);
        ASSERT(strstr(why, "GPU model, pool or labels") != NULL);
    }
    al_result_destroy(r);
    snap_destroy(s);
}

static void
model_limit(void)
{
    snap_t *s = scenario();
    int q, a, b;
    al_result_t *r;

    snap_node(s, "n0", 4);
    snap_node_model(s, 0, "H100");
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    snap_queue_model_quota(s, q, "H100", 1000, 2000);
    a = snap_job(s, q, 1, 2);
    b = snap_job(s, q, 1, 1);
    snap_job_model(s, a, "H100");
    snap_job_model(s, b, "H100");
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_REASON(r, b, AL_WHY_MODEL_LIMIT);
    ASSERT_EQ(r->reasons[b].queue, q);
    al_result_destroy(r);

    /* The quota counts the H100s a job uses, whether or not it named the
     * model ("milli-GPUs of this model all work may use"). */
    snap_job_ref(s, a)->req.gpu_model = NULL;
    snap_job_ref(s, b)->req.gpu_model = NULL;
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_REASON(r, b, AL_WHY_MODEL_LIMIT);
    al_result_destroy(r);

    /* Non-preemptible work stays within the model's deserved 1 GPU. */
    snap_job_model(s, a, "H100");
    snap_job_model(s, b, "H100");
    snap_job_ref(s, a)->req.gpus = 1;
    snap_job_ref(s, a)->preemptible = false;
    snap_job_ref(s, b)->preemptible = false;
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_NOT_STARTED(r, b);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (l) Fair share                                                     */

static void
add_pending(snap_t *s, int q, int n)
{
    int i;

    for (i = 0; i < n; i++)
        snap_job(s, q, 1, 1);
}

/*
 * 12 GPUs; A, B, C deserve 2 each with weights 1, 2, 1 and demand 10, 10, 3.
 * Deserved: 2, 2, 2; surplus 6 at 1.5 per weight unit: A 3.5, B 5, C 3.5
 * capped at its demand 3; the 0.5 left goes 1:2 to A and B: A 3.667,
 * B 5.333, C 3.
 */
static void
fair_share_weights(void)
{
    snap_t *s = scenario();
    int a, b, c;
    al_result_t *r;

    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    snap_node(s, "n2", 4);
    a = snap_queue(s, "a", -1, 2000, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 2000, 2, AL_UNLIMITED);
    c = snap_queue(s, "c", -1, 2000, 1, AL_UNLIMITED);
    add_pending(s, a, 10);
    add_pending(s, b, 10);
    add_pending(s, c, 3);
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[a].fair[AL_RES_GPU], 11000.0 / 3, 2);
    ASSERT_DBL_NEAR(r->queues[b].fair[AL_RES_GPU], 16000.0 / 3, 2);
    ASSERT_DBL_NEAR(r->queues[c].fair[AL_RES_GPU], 3000, 2);
    ASSERT_EQ(r->queues[a].demand[AL_RES_GPU], 10000);
    ASSERT_EQ(r->queues[c].demand[AL_RES_GPU], 3000);
    /* The cycle hands out all 12 GPUs along those lines. */
    ASSERT_EQ(res_count(r, AL_DEC_START), 12);
    ASSERT_EQ(r->queues[c].allocated[AL_RES_GPU], 3000);
    ASSERT_GE(r->queues[a].allocated[AL_RES_GPU], 3000);
    ASSERT_LE(r->queues[a].allocated[AL_RES_GPU], 4000);
    ASSERT_GE(r->queues[b].allocated[AL_RES_GPU], 5000);
    ASSERT_LE(r->queues[b].allocated[AL_RES_GPU], 6000);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A limit bounds the fair share as demand does. */
static void
fair_share_limit(void)
{
    snap_t *s = scenario();
    int a, b;
    al_result_t *r;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 1000, 1, 2000);
    b = snap_queue(s, "b", -1, 1000, 1, AL_UNLIMITED);
    add_pending(s, a, 8);
    add_pending(s, b, 8);
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[a].fair[AL_RES_GPU], 2000, 2);
    ASSERT_DBL_NEAR(r->queues[b].fair[AL_RES_GPU], 6000, 2);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Higher queue priority gets the surplus first. */
static void
fair_share_priority(void)
{
    snap_t *s = scenario();
    int p, q;
    al_result_t *r;

    snap_node(s, "n0", 8);
    p = snap_queue(s, "p", -1, 1000, 1, AL_UNLIMITED);
    q = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
    snap_queue_ref(s, p)->priority = 1;
    add_pending(s, q, 6);
    add_pending(s, p, 6);
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[p].fair[AL_RES_GPU], 6000, 2);
    ASSERT_DBL_NEAR(r->queues[q].fair[AL_RES_GPU], 2000, 2);
    ASSERT_EQ(r->queues[p].allocated[AL_RES_GPU], 6000);
    ASSERT_EQ(r->queues[q].allocated[AL_RES_GPU], 2000);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * 12 GPUs.  d1 (deserved 4) holds p1 (2, weight 1) and p2 (2, weight 3);
 * d2 (deserved 4) holds p3 (4).  Demand p1 10, p2 10, p3 2.  Top: d2 gets
 * its demand 2, d1 the other 10.  Inside d1: 2 + 2, then 6 split 1:3:
 * p1 3.5, p2 6.5.
 */
static void
fair_share_hierarchy(void)
{
    snap_t *s = scenario();
    int d1, d2, p1, p2, p3;
    al_result_t *r;

    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    snap_node(s, "n2", 4);
    d1 = snap_queue(s, "d1", -1, 4000, 1, AL_UNLIMITED);
    d2 = snap_queue(s, "d2", -1, 4000, 1, AL_UNLIMITED);
    p1 = snap_queue(s, "p1", d1, 2000, 1, AL_UNLIMITED);
    p2 = snap_queue(s, "p2", d1, 2000, 3, AL_UNLIMITED);
    p3 = snap_queue(s, "p3", d2, 4000, 1, AL_UNLIMITED);
    add_pending(s, p1, 10);
    add_pending(s, p2, 10);
    add_pending(s, p3, 2);
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[d1].fair[AL_RES_GPU], 10000, 2);
    ASSERT_DBL_NEAR(r->queues[d2].fair[AL_RES_GPU], 2000, 2);
    ASSERT_DBL_NEAR(r->queues[p1].fair[AL_RES_GPU], 3500, 2);
    ASSERT_DBL_NEAR(r->queues[p2].fair[AL_RES_GPU], 6500, 2);
    ASSERT_DBL_NEAR(r->queues[p3].fair[AL_RES_GPU], 2000, 2);
    ASSERT_EQ(r->queues[d1].demand[AL_RES_GPU], 20000);
    ASSERT_EQ(r->queues[p3].allocated[AL_RES_GPU], 2000);
    ASSERT_EQ(r->queues[d1].allocated[AL_RES_GPU], 10000);
    ASSERT_GE(r->queues[p1].allocated[AL_RES_GPU], 3000);
    ASSERT_LE(r->queues[p1].allocated[AL_RES_GPU], 4000);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Decayed usage bends the surplus split towards the queue that used less. */
static void
fair_share_usage(void)
{
    snap_t *s = scenario();
    int a, b;
    al_result_t *r;
    double fa, fb;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 0, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 0, 1, AL_UNLIMITED);
    snap_queue_ref(s, a)->usage = 8000.0 * 86400;
    add_pending(s, a, 8);
    add_pending(s, b, 8);
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[a].fair[AL_RES_GPU], 4000, 2);
    ASSERT_DBL_NEAR(r->queues[b].fair[AL_RES_GPU], 4000, 2);
    al_result_destroy(r);

    snap_config(s)->usage_weight = 1;
    r = snap_run(s);
    fa = r->queues[a].fair[AL_RES_GPU];
    fb = r->queues[b].fair[AL_RES_GPU];
    ASSERT_LT(fa, fb);
    ASSERT_DBL_NEAR(fa + fb, 8000, 2);
    al_result_destroy(r);
    snap_destroy(s);
}

/* borrow = false: a static split, no queue above its deserved quota. */
static void
no_borrow(void)
{
    snap_t *s = scenario();
    int a, j[3], i;
    al_result_t *r;

    snap_config(s)->borrow = false;
    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 2000, 1, AL_UNLIMITED);
    snap_queue(s, "b", -1, 6000, 1, AL_UNLIMITED);
    for (i = 0; i < 3; i++)
        j[i] = snap_job(s, a, 1, 1);
    r = snap_run(s);
    ASSERT_STARTED(r, j[0], 1);
    ASSERT_STARTED(r, j[1], 1);
    ASSERT_REASON(r, j[2], AL_WHY_NO_BORROW);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (m) Dependencies, (n) held jobs, (o) node states, ordering         */

static void
dependencies(void)
{
    snap_t *s = scenario();
    int q, first, w, n, ok;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    first = snap_job(s, q, 1, 1);
    w = snap_job(s, q, 1, 1);
    snap_job_dep(s, w, first);
    n = snap_job(s, q, 1, 1);
    snap_job_dep(s, n, first);
    snap_job_ref(s, n)->dep_state = AL_DEPS_NEVER;
    ok = snap_job(s, q, 1, 1);
    snap_job_dep(s, ok, first);
    snap_job_ref(s, ok)->dep_state = AL_DEPS_SATISFIED;
    r = snap_run(s);
    ASSERT_STARTED(r, first, 1);
    ASSERT_REASON(r, w, AL_WHY_DEPS);
    ASSERT_REASON(r, n, AL_WHY_DEPS_NEVER);
    ASSERT_STARTED(r, ok, 1);
    ASSERT_EQ(res_count(r, AL_DEC_START), 2);
    al_result_destroy(r);
    snap_destroy(s);
}

/* With one GPU free, the job another waits for goes before an older one. */
static void
critical_path_first(void)
{
    snap_t *s = scenario();
    int q, a, b, c;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 1);
    q = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 1);
    b = snap_job(s, q, 1, 1);
    c = snap_job(s, q, 1, 1);
    snap_job_dep(s, c, b);
    r = snap_run(s);
    ASSERT_STARTED(r, b, 1);
    ASSERT_NOT_STARTED(r, a);
    ASSERT_REASON(r, c, AL_WHY_DEPS);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Priority class first, then waiting time. */
static void
order_in_queue(void)
{
    snap_t *s = scenario();
    int q, old, young, hi;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 1);
    q = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
    young = snap_job(s, q, 1, 1);
    old = snap_job(s, q, 1, 1);
    snap_job_ref(s, young)->submit_time = 500;
    snap_job_ref(s, old)->submit_time = 100;
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_STARTED(r, old, 1);
    ASSERT_NOT_STARTED(r, young);
    al_result_destroy(r);

    /* A requeued job waits since its eligible time, not its submit time. */
    snap_job_ref(s, old)->eligible_time = 900;
    r = snap_run(s);
    ASSERT_STARTED(r, young, 1);
    ASSERT_NOT_STARTED(r, old);
    al_result_destroy(r);

    hi = snap_job(s, q, 1, 1);
    snap_job_ref(s, hi)->priority = AL_PRIO_INFERENCE;
    snap_job_ref(s, hi)->submit_time = 999;
    r = snap_run(s);
    ASSERT_STARTED(r, hi, 1);
    ASSERT_EQ(res_count(r, AL_DEC_START), 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Between queues: a queue below its deserved quota goes first, whatever
 * the submit times. */
static void
queue_order_deserved_first(void)
{
    snap_t *s = scenario();
    int a, b, ja, jb;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 1);
    a = snap_queue(s, "a", -1, 0, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 1000, 1, AL_UNLIMITED);
    ja = snap_job(s, a, 1, 1);
    jb = snap_job(s, b, 1, 1);
    snap_job_ref(s, ja)->submit_time = 0;
    snap_job_ref(s, jb)->submit_time = 500;
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_STARTED(r, jb, 1);
    ASSERT_NOT_STARTED(r, ja);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Then the queue furthest below its fair share.  Five GPUs, one free: a
 * holds 3 and wants 4, b holds 1 and wants 2.  Fair shares: b 2, a 3.
 * a is at its share, b at half of it: b gets the GPU. */
static void
queue_order_share(void)
{
    snap_t *s = scenario();
    int a, b, ja, jb, k;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 5);
    a = snap_queue(s, "a", -1, 0, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 0, 1, AL_UNLIMITED);
    for (k = 0; k < 3; k++)
        snap_place(s, snap_job(s, a, 1, 1), 0, 0, (uint64_t)1 << k);
    snap_place(s, snap_job(s, b, 1, 1), 0, 0, 0x8);
    ja = snap_job(s, a, 1, 1);
    jb = snap_job(s, b, 1, 1);
    snap_job_ref(s, ja)->submit_time = 10;
    snap_job_ref(s, jb)->submit_time = 20;
    snap_set_now(s, 100);
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[a].fair[AL_RES_GPU], 3000, 2);
    ASSERT_DBL_NEAR(r->queues[b].fair[AL_RES_GPU], 2000, 2);
    ASSERT_STARTED(r, jb, 1);
    ASSERT_NOT_STARTED(r, ja);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/* strict_order: nothing passes a job that cannot start. */
static void
strict_order(void)
{
    snap_t *s = scenario();
    int q, big, small;
    al_result_t *r;

    snap_config(s)->strict_order = true;
    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    big = snap_job(s, q, 1, 4); /* each node has only 3 free */
    small = snap_job(s, q, 1, 1);
    snap_place(s, snap_job_build(s, q, 1, 1), 0, 0, 0x1);
    snap_place(s, snap_job_build(s, q, 1, 1), 0, 1, 0x1);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_NOT_STARTED(r, big);
    ASSERT_REASON(r, small, AL_WHY_ORDER);
    ASSERT_EQ(r->reasons[small].job, big);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);

    /* Without strict order the small job passes. */
    snap_config(s)->strict_order = false;
    r = snap_run(s);
    ASSERT_NOT_STARTED(r, big);
    ASSERT_STARTED(r, small, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
held_jobs(void)
{
    snap_t *s = scenario();
    int q, h, p;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    h = snap_job(s, q, 1, 1);
    snap_job_ref(s, h)->state = AL_JOB_HELD;
    p = snap_job(s, q, 1, 1);
    r = snap_run(s);
    ASSERT_REASON(r, h, AL_WHY_HELD);
    ASSERT(res_find(r, h, AL_DEC_START) == NULL);
    ASSERT_STARTED(r, p, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

static void
node_states(void)
{
    snap_t *s = scenario();
    int q, other, j[6], run, i, k;
    al_result_t *r;

    snap_node(s, "down", 2);
    snap_node(s, "draining", 2);
    snap_node(s, "ready", 2);
    snap_node_ref(s, 0)->state = AL_NODE_DOWN;
    snap_node_ref(s, 1)->state = AL_NODE_DRAINING;
    q = snap_queue(s, "q", -1, 6000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 0, 1, AL_UNLIMITED);
    run = snap_job(s, other, 1, 1);
    snap_place(s, run, 0, 1, 0x1);
    for (i = 0; i < 6; i++)
        j[i] = snap_job(s, q, 1, 1);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_START), 2);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    for (i = 0; i < r->ndecisions; i++)
        for (k = 0; k < r->decisions[i].ntasks; k++)
            ASSERT_EQ(r->decisions[i].tasks[k].node, 2);
    ASSERT_STARTED(r, j[0], 1);
    ASSERT_STARTED(r, j[1], 1);
    ASSERT_NOT_STARTED(r, j[2]);
    ASSERT_EQ(r->reasons[run].code, AL_WHY_NONE);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A node's fenced GPUs (found faulty) take no new work, whole or shared,
 * while its other GPUs do; a task still running on one does not upset the
 * cycle. */
static void
node_fenced_gpus(void)
{
    snap_t *s = scenario();
    int q, run, frun, j[3], f, i, k;
    al_result_t *r;

    snap_node(s, "n", 4);
    snap_node(s, "shared", 1);
    snap_node_ref(s, 0)->fenced = 0x6; /* GPUs 1 and 2 */
    snap_node_ref(s, 1)->fenced = 0x1;
    q = snap_queue(s, "q", -1, 6000, 1, AL_UNLIMITED);
    run = snap_job(s, q, 1, 1);
    snap_place(s, run, 0, 0, 0x4); /* on fenced GPU 2 */
    frun = snap_job_frac(s, q, 500, 0);
    snap_place_frac(s, frun, 0, 1, 0, 500, 0); /* shares fenced GPU 0 */
    for (i = 0; i < 3; i++)
        j[i] = snap_job(s, q, 1, 1);
    f = snap_job_frac(s, q, 500, 0);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_STARTED(r, j[0], 1);
    ASSERT_STARTED(r, j[1], 1);
    ASSERT_NOT_STARTED(r, j[2]);
    ASSERT_NOT_STARTED(r, f);
    for (i = 0; i < r->ndecisions; i++)
        for (k = 0; k < r->decisions[i].ntasks; k++) {
            ASSERT_EQ(r->decisions[i].tasks[k].node, 0);
            ASSERT_EQ(r->decisions[i].tasks[k].devices & 0x6, 0);
        }
    al_result_destroy(r);
    snap_destroy(s);
}

/* A job that fits the cluster but finds its nodes drained, or a GPU it
 * needs fenced, waits for capacity: it is not "too big". */
static void
reason_drained_not_too_big(void)
{
    snap_t *s = scenario();
    int q, j, big, f;
    al_result_t *r;

    snap_node(s, "drained", 2);
    snap_node(s, "fenced", 2);
    snap_node_ref(s, 0)->state = AL_NODE_DRAINING;
    snap_node_ref(s, 1)->fenced = 0x1;
    q = snap_queue(s, "q", -1, 6000, 1, AL_UNLIMITED);
    j = snap_job(s, q, 1, 2);
    big = snap_job(s, q, 1, 3);
    f = snap_job(s, q, 1, 1);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_STARTED(r, f, 1);
    ASSERT_REASON(r, j, AL_WHY_CAPACITY);
    ASSERT_REASON(r, big, AL_WHY_TOO_BIG);
    al_result_destroy(r);
    snap_destroy(s);
}

/* "Not enough free GPUs" and "free but fragmented" are told apart. */
static void
reasons_capacity_vs_fragmented(void)
{
    snap_t *s = scenario();
    int q, other, frag, cap;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 4);
    snap_node(s, "n1", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    other = snap_queue(s, "other", -1, 4000, 1, AL_UNLIMITED);
    snap_place(s, snap_job_build(s, other, 1, 2), 0, 0, 0x3);
    snap_place(s, snap_job_build(s, other, 1, 2), 0, 1, 0x3);
    frag = snap_job(s, q, 1, 4); /* 4 free, 2 per node */
    cap = snap_job(s, q, 5, 1);  /* 5 GPUs, only 4 free */
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_REASON(r, frag, AL_WHY_NO_NODE);
    ASSERT_REASON(r, cap, AL_WHY_CAPACITY);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * Found by the random invariant test (seed 7, iteration 26272 of 60000,
 * minimized): a job holding a reservation started in the second chance
 * after evictions, but its holds stayed in place for the rest of that pass,
 * so a later job (11: 2 GPUs) was turned away for room that the end of the
 * cycle left free (node n2, devices 2 and 3), with "0 free GPUs".
 */
static void
second_chance_after_reserved_start(void)
{
    snap_t *s = snap_create();
    al_config_t *c = snap_config(s);
    al_result_t *r;
    int d;

    c->pack = 1;
    c->usage_weight = 0;
    c->reserve_depth = 1;
    c->default_runtime = 7165;
    c->lend_reserved = 0;
    c->reclaim = 1;
    c->preempt = 1;
    c->borrow = 1;
    c->strict_order = 0;
    c->ignore_queues = 0;
    c->max_reclaim_tries = 8;
    {
        static const char *const lv[] = {
            "block",
            "rack",
        };
        snap_topo_levels(s, 2, lv);
    }
    snap_set_now(s, 100000);
    snap_node(s, "n0", 4);
    snap_node_ref(s, 0)->state = 0;
    snap_node_ref(s, 0)->cpu_milli = 128000;
    snap_node_ref(s, 0)->mem_bytes = 274877906944;
    *snap_dev(s, 0, 0) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 0, 1) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 0, 2) = (al_device_t){ 85899345920, 1, 1 };
    *snap_dev(s, 0, 3) = (al_device_t){ 85899345920, 1, 1 };
    snap_node_topo(s, 0, 0, "b0");
    snap_node_topo(s, 0, 1, "r0");
    snap_node(s, "n1", 4);
    snap_node_ref(s, 1)->state = 0;
    snap_node_ref(s, 1)->cpu_milli = 64000;
    snap_node_ref(s, 1)->mem_bytes = 1099511627776;
    *snap_dev(s, 1, 0) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 1, 1) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 1, 2) = (al_device_t){ 85899345920, 1, 1 };
    *snap_dev(s, 1, 3) = (al_device_t){ 85899345920, 1, 1 };
    snap_node_topo(s, 1, 0, "b1");
    snap_node_topo(s, 1, 1, "r3");
    snap_node_model(s, 1, "H100");
    snap_node(s, "n2", 4);
    snap_node_ref(s, 2)->state = 0;
    snap_node_ref(s, 2)->cpu_milli = 128000;
    snap_node_ref(s, 2)->mem_bytes = 137438953472;
    *snap_dev(s, 2, 0) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 2, 1) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 2, 2) = (al_device_t){ 85899345920, 1, 1 };
    *snap_dev(s, 2, 3) = (al_device_t){ 85899345920, 1, 1 };
    snap_node_topo(s, 2, 0, "b1");
    snap_node_topo(s, 2, 1, "r3");
    snap_node_model(s, 2, "A100");
    snap_queue(s, "d0", -1, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 0)->priority = 0;
    snap_queue_ref(s, 0)->quota[0] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 0)->quota[1] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 0)->quota[2] = (al_quota_t){ 0, -1, 1 };
    snap_queue(s, "d0.p0", 0, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 1)->priority = 0;
    snap_queue_ref(s, 1)->quota[0] = (al_quota_t){ 4000, -1, 1 };
    snap_queue_ref(s, 1)->quota[1] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 1)->quota[2] = (al_quota_t){ 0, -1, 1 };
    snap_queue(s, "d0.p1", 0, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 2)->priority = 1;
    snap_queue_ref(s, 2)->quota[0] = (al_quota_t){ 0, 16000, 1 };
    snap_queue_ref(s, 2)->quota[1] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 2)->quota[2] = (al_quota_t){ 0, -1, 1 };
    snap_queue(s, "d1", -1, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 3)->priority = 1;
    snap_queue_ref(s, 3)->quota[0] = (al_quota_t){ 0, -1, 0.5 };
    snap_queue_ref(s, 3)->quota[1] = (al_quota_t){ 0, -1, 0 };
    snap_queue_ref(s, 3)->quota[2] = (al_quota_t){ 0, -1, 0 };
    snap_queue(s, "d2", -1, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 4)->priority = 0;
    snap_queue_ref(s, 4)->quota[0] = (al_quota_t){ 4000, 8000, 0 };
    snap_queue_ref(s, 4)->quota[1] = (al_quota_t){ 0, -1, 0 };
    snap_queue_ref(s, 4)->quota[2] = (al_quota_t){ 0, -1, 0 };
    snap_queue(s, "d2.p0", 4, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 5)->priority = 0;
    snap_queue_ref(s, 5)->usage = 37120642;
    snap_queue_ref(s, 5)->quota[0] = (al_quota_t){ 2000, -1, 0.5 };
    snap_queue_ref(s, 5)->quota[1] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 5)->quota[2] = (al_quota_t){ 0, -1, 1 };
    snap_queue(s, "d2.p1", 4, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 6)->priority = 0;
    snap_queue_ref(s, 6)->quota[0] = (al_quota_t){ 0, -1, 2 };
    snap_queue_ref(s, 6)->quota[1] = (al_quota_t){ 0, -1, 2 };
    snap_queue_ref(s, 6)->quota[2] = (al_quota_t){ 0, -1, 2 };
    snap_job(s, 2, 1, 0);
    {
        al_job_t *j = snap_job_ref(s, 0);

        j->id = 1000;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 0;
        j->submit_time = 81534;
        j->eligible_time = 0;
        j->time_limit = 0;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 89323;
        j->lent = 0;
    }
    snap_job_ref(s, 0)->dep_state = 0;
    snap_place(s, 0, 88948, 1, 0);
    snap_job(s, 6, 1, 2);
    {
        al_job_t *j = snap_job_ref(s, 1);

        j->id = 1002;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 4;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 4294967296;
        j->submit_time = 83031;
        j->eligible_time = 0;
        j->time_limit = 3819;
        j->estimate = 19565;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 1)->dep_state = 0;
    snap_place(s, 1, 83032, 0, 0x3);
    snap_place(s, 1, 83032, 2, 0x3);
    snap_job(s, 1, 1, 0);
    {
        al_job_t *j = snap_job_ref(s, 2);

        j->id = 1005;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 25769803776;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 4294967296;
        j->submit_time = 87014;
        j->eligible_time = 0;
        j->time_limit = 0;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 2)->dep_state = 0;
    snap_job(s, 3, 1, 0);
    {
        al_job_t *j = snap_job_ref(s, 3);

        j->id = 1006;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 500;
        j->req.gpu_mem = 34359738368;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 34359738368;
        j->submit_time = 81173;
        j->eligible_time = 0;
        j->time_limit = 7545;
        j->estimate = 0;
        j->min_runtime = 2834;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 3)->dep_state = 0;
    snap_job(s, 5, 1, 1);
    {
        al_job_t *j = snap_job_ref(s, 4);

        j->id = 1007;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 4294967296;
        j->submit_time = 97777;
        j->eligible_time = 0;
        j->time_limit = 9001;
        j->estimate = 15967;
        j->min_runtime = 3336;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_model(s, 4, "H100");
    snap_job_ref(s, 4)->dep_state = 0;
    snap_job(s, 3, 1, 0);
    {
        al_job_t *j = snap_job_ref(s, 5);

        j->id = 1008;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 500;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 16000;
        j->req.mem_bytes = 137438953472;
        j->submit_time = 91918;
        j->eligible_time = 0;
        j->time_limit = 0;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 5)->dep_state = 0;
    snap_job(s, 1, 1, 1);
    {
        al_job_t *j = snap_job_ref(s, 6);

        j->id = 1013;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 0;
        j->req.mem_bytes = 4294967296;
        j->submit_time = 97627;
        j->eligible_time = 97708;
        j->time_limit = 7716;
        j->estimate = 0;
        j->min_runtime = 2315;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 6)->dep_state = 0;
    snap_job(s, 3, 1, 2);
    {
        al_job_t *j = snap_job_ref(s, 7);

        j->id = 1015;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 137438953472;
        j->submit_time = 94334;
        j->eligible_time = 94417;
        j->time_limit = 6778;
        j->estimate = 0;
        j->min_runtime = 2613;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 7)->dep_state = 0;
    snap_job(s, 1, 1, 1);
    {
        al_job_t *j = snap_job_ref(s, 8);

        j->id = 1016;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 4000;
        j->req.mem_bytes = 137438953472;
        j->submit_time = 91573;
        j->eligible_time = 0;
        j->time_limit = 9503;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 1;
        j->topo_mode = 1;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 8)->dep_state = 0;
    snap_job(s, 2, 2, 0);
    {
        al_job_t *j = snap_job_ref(s, 9);

        j->id = 1018;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 2;
        j->req.gpu_milli = 250;
        j->req.gpu_mem = 8589934592;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 137438953472;
        j->submit_time = 98764;
        j->eligible_time = 0;
        j->time_limit = 4374;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 9)->dep_state = 0;
    snap_job(s, 3, 1, 2);
    {
        al_job_t *j = snap_job_ref(s, 10);

        j->id = 1022;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 4;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 0;
        j->req.mem_bytes = 34359738368;
        j->submit_time = 84739;
        j->eligible_time = 0;
        j->time_limit = 0;
        j->estimate = 6660;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 10)->dep_state = 2;
    snap_job(s, 3, 1, 2);
    {
        al_job_t *j = snap_job_ref(s, 11);

        j->id = 1023;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 16000;
        j->req.mem_bytes = 4294967296;
        j->submit_time = 94283;
        j->eligible_time = 0;
        j->time_limit = 0;
        j->estimate = 14211;
        j->min_runtime = 857;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 11)->dep_state = 0;
    snap_job(s, 5, 1, 1);
    {
        al_job_t *j = snap_job_ref(s, 12);

        j->id = 1024;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 0;
        j->req.mem_bytes = 4294967296;
        j->submit_time = 89746;
        j->eligible_time = 89757;
        j->time_limit = 0;
        j->estimate = 0;
        j->min_runtime = 261;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 12)->dep_state = 0;
    r = snap_run(s);
    /* Either job 11 started, or no pair of free devices is left on n2. */
    bool used[4] = { false };
    const al_decision_t *st = res_find(r, 11, AL_DEC_START);
    for (d = 0; d < r->ndecisions; d++) {
        const al_decision_t *x = &r->decisions[d];
        if (x->kind != AL_DEC_START)
            continue;
        for (int t = 0; t < x->ntasks; t++)
            if (x->tasks[t].node == 2)
                for (int k = 0; k < 4; k++)
                    if (x->tasks[t].devices & (1u << k))
                        used[k] = true;
    }
    if (st == NULL && !used[2] && !used[3])
        res_dump(snap_get(s), r);
    ASSERT(st != NULL || used[2] || used[3]);
    ASSERT_NE(r->reasons[11].code, AL_WHY_CAPACITY);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (p) Reasons in words                                               */

static void
reason_format(void)
{
    static const struct {
        al_reason_code_t code;
        const char *must; /* a fragment the text must hold, or NULL */
    } cases[] = {
        { AL_WHY_NONE, NULL },
        { AL_WHY_HELD, NULL },
        { AL_WHY_DEPS, NULL },
        { AL_WHY_DEPS_NEVER, NULL },
        { AL_WHY_BAD_QUEUE, NULL },
        { AL_WHY_TOO_BIG, NULL },
        { AL_WHY_LIMIT, "vision" },
        { AL_WHY_MODEL_LIMIT, "vision" },
        { AL_WHY_DESERVED, "build and inference jobs run only within" },
        { AL_WHY_NO_BORROW, "vision" },
        { AL_WHY_BUILD_CAP, "vision at its cap of 16 GPUs for build" },
        { AL_WHY_CAPACITY, NULL },
        { AL_WHY_NO_NODE, NULL },
        { AL_WHY_TOPOLOGY, NULL },
        { AL_WHY_RESERVED, "42" },
        { AL_WHY_BEHIND_RESERVATION, "4242" },
        { AL_WHY_ORDER, "4242" },
        { AL_WHY_NO_VICTIM, NULL },
    };
    enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
    static char texts[NCASES][256];
    snap_t *s = scenario();
    al_snapshot_t *snap;
    int q, j, other;
    size_t i, k;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "vision", -1, 0, 1, 16000);
    j = snap_job(s, q, 1, 1);
    other = snap_job(s, q, 1, 1);
    snap_job_ref(s, other)->id = 4242;
    snap_set_now(s, 1000);
    snap = snap_get(s);
    (void)j;
    for (i = 0; i < NCASES; i++) {
        al_reason_t r;
        char small[8];
        int n;

        memset(&r, 0, sizeof(r));
        r.code = cases[i].code;
        r.queue = q;
        r.job = other;
        r.res = AL_RES_GPU;
        r.amount = 16000;
        r.time = 1000 + 42 * 60;
        n = al_reason_format(snap, &r, texts[i], sizeof(texts[i]));
        ASSERT_GT(n, 0);
        ASSERT_LT(n, (int)sizeof(texts[i]));
        ASSERT_EQ(strlen(texts[i]), (size_t)n);
        if (cases[i].must != NULL && strstr(texts[i], cases[i].must) == NULL)
            AL__FAIL("reason %d: \"%s\" lacks \"%s\"", (int)cases[i].code,
                     texts[i], cases[i].must);
        /* Truncation: still terminated, still reports the full length. */
        memset(small, 'x', sizeof(small));
        ASSERT_EQ(al_reason_format(snap, &r, small, sizeof(small)), n);
        ASSERT_EQ(
            small[(size_t)n < sizeof(small) ? (size_t)n : sizeof(small) - 1],
            '\0');
        ASSERT_EQ(strncmp(small, texts[i], sizeof(small) - 1), 0);
        ASSERT_EQ(al_reason_format(snap, &r, NULL, 0), n);
        for (k = 0; k < i; k++)
            if (strcmp(texts[i], texts[k]) == 0)
                AL__FAIL("reasons %d and %d read the same: \"%s\"",
                         (int)cases[i].code, (int)cases[k].code, texts[i]);
    }
    {
        /* The reason text of the docs: "queue vision at gpu limit 16". */
        al_reason_t r;

        memset(&r, 0, sizeof(r));
        r.code = AL_WHY_LIMIT;
        r.queue = q;
        r.job = -1;
        r.res = AL_RES_GPU;
        r.amount = 16000;
        al_reason_format(snap, &r, texts[0], sizeof(texts[0]));
        if (strstr(texts[0], "16") == NULL || strstr(texts[0], "16000"))
            AL__FAIL("limit reads \"%s\": want 16 GPUs", texts[0]);
    }
    snap_destroy(s);
}

/* The reasons a real cycle gives read sensibly too. */
static void
reason_from_cycle(void)
{
    snap_t *s = scenario();
    int q, a, b;
    al_result_t *r;
    char buf[256];

    snap_node(s, "n0", 8);
    q = snap_queue(s, "vision", -1, 0, 1, 1000);
    a = snap_job(s, q, 1, 1);
    b = snap_job(s, q, 1, 1);
    r = snap_run(s);
    ASSERT_STARTED(r, a, 1);
    ASSERT_REASON(r, b, AL_WHY_LIMIT);
    ASSERT_GT(al_reason_format(snap_get(s), &r->reasons[b], buf, sizeof(buf)),
              0);
    if (strstr(buf, "vision") == NULL)
        AL__FAIL("\"%s\" does not name the queue", buf);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (q) Invalid snapshots                                              */

/* Runs a snapshot that must be refused with AL_EINVAL, *out untouched. */
static void
expect_einval(snap_t *s, al_snapshot_t *snap, const char *what)
{
    al_result_t *sentinel = (al_result_t *)&sentinel;
    al_result_t *out = sentinel;
    char *cause = NULL;
    int rc = al_sched_run(snap, &out, &cause);

    (void)s;
    if (rc != AL_EINVAL) {
        if (rc == 0 && out != sentinel)
            al_result_destroy(out);
        AL__FAIL("%s: al_sched_run returned %s, want EINVAL", what,
                 al_err_name(rc));
    }
    ASSERT(out == sentinel);
    al_cause_free(snap, cause);
    /* And the cause is optional. */
    ASSERT_EQ(al_sched_run(snap, &out, NULL), AL_EINVAL);
    ASSERT(out == sentinel);
}

/* Job 1 of s, pending, gets queue index q. */
static void
bad_queue_pending(snap_t *s, int q)
{
    al_snapshot_t *snap = snap_get(s);
    al_result_t *sentinel = (al_result_t *)&sentinel, *out = sentinel;
    int rc;

    snap_job_ref(s, 1)->queue = q;
    rc = al_sched_run(snap, &out, NULL);
    if (rc == AL_EINVAL) {
        ASSERT(out == sentinel);
    } else {
        ASSERT_EQ(rc, 0);
        ASSERT(out != sentinel);
        if (out->reasons[1].code != AL_WHY_BAD_QUEUE ||
            res_find(out, 1, AL_DEC_START) != NULL) {
            al_result_destroy(out);
            AL__FAIL("pending job in queue %d: not refused", q);
        }
        al_result_destroy(out);
    }
    snap_job_ref(s, 1)->queue = 0;
}

static snap_t *
valid_base(void)
{
    snap_t *s = scenario();
    int q, j;

    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    j = snap_job(s, q, 1, 1);
    snap_place(s, j, 0, 0, 0x1);
    snap_job(s, q, 1, 1);
    snap_set_now(s, 10);
    return s;
}

static void
invalid_snapshots(void)
{
    snap_t *s;
    al_snapshot_t *snap;
    al_result_t *r;
    al_placement_t bad[2];

    /* The base is valid. */
    s = valid_base();
    r = snap_run(s);
    al_result_destroy(r);

    snap = snap_get(s);
    /* A pending job with a queue index out of range: core.h allows
     * either answer, AL_EINVAL or the reason AL_WHY_BAD_QUEUE ("queue
     * index invalid or not a leaf"). */
    bad_queue_pending(s, 5);
    bad_queue_pending(s, -1);
    /* A running job with one is inconsistent: it holds resources that no
     * queue can account for. */
    snap_job_ref(s, 0)->queue = 5;
    expect_einval(s, snap, "running job in queue 5 of 1");
    snap_job_ref(s, 0)->queue = -1;
    expect_einval(s, snap, "running job in queue -1");
    snap_job_ref(s, 0)->queue = 0;

    /* A running job placed on a node that does not exist. */
    bad[0] = snap->jobs[0].placement[0];
    bad[0].node = 7;
    snap_job_ref(s, 0)->placement = bad;
    expect_einval(s, snap, "placement on node 7 of 1");
    bad[0].node = -1;
    expect_einval(s, snap, "placement on node -1");
    /* On a device the node does not have. */
    bad[0].node = 0;
    bad[0].devices = 0x10;
    expect_einval(s, snap, "placement on device 4 of 4");
    /* Too few devices for its request. */
    bad[0].devices = 0;
    expect_einval(s, snap, "placement with no device");
    snap_destroy(s);

    /* A running job without a placement. */
    s = valid_base();
    snap = snap_get(s);
    snap_job_ref(s, 0)->ntasks = 0;
    snap_job_ref(s, 0)->placement = NULL;
    expect_einval(s, snap, "running job without placement");
    snap_destroy(s);

    /* A parent after its child, and a parent out of range. */
    s = valid_base();
    snap_queue(s, "child", 2, 0, 1, AL_UNLIMITED);
    snap_queue(s, "parent", -1, 0, 1, AL_UNLIMITED);
    snap = snap_get(s);
    expect_einval(s, snap, "parent after child");
    snap_queue_ref(s, 1)->parent = 9;
    expect_einval(s, snap, "parent out of range");
    snap_destroy(s);

    /* A dependency on a job that does not exist. */
    s = valid_base();
    snap_job_dep(s, 1, 17);
    snap = snap_get(s);
    expect_einval(s, snap, "dependency out of range");
    snap_destroy(s);

    /* A device count beyond AL_MAX_DEVICES. */
    s = valid_base();
    snap = snap_get(s);
    snap_node_ref(s, 0)->ndevices = AL_MAX_DEVICES + 1;
    expect_einval(s, snap, "too many devices");
    snap_destroy(s);
}

/* A job in a queue that is not a leaf is not an error: it gets a reason. */
static void
job_in_inner_queue(void)
{
    snap_t *s = scenario();
    int dept, j, ok;
    al_result_t *r;

    snap_node(s, "n0", 4);
    dept = snap_queue(s, "dept", -1, 4000, 1, AL_UNLIMITED);
    snap_queue(s, "proj", dept, 4000, 1, AL_UNLIMITED);
    j = snap_job(s, dept, 1, 1);
    ok = snap_job(s, 1, 1, 1);
    r = snap_run(s);
    ASSERT_REASON(r, j, AL_WHY_BAD_QUEUE);
    ASSERT_STARTED(r, ok, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* (r) Determinism                                                    */

/* A busy snapshot: several queues, gangs, fractions, running work. */
static snap_t *
busy_snapshot(void)
{
    snap_t *s = scenario();
    int n, q[4], i;

    snap_config(s)->lend_reserved = true;
    for (n = 0; n < 6; n++) {
        char name[32];

        snprintf(name, sizeof(name), "n%d", n);
        snap_node(s, name, 8);
    }
    q[0] = snap_queue(s, "d", -1, 16000, 1, AL_UNLIMITED);
    q[1] = snap_queue(s, "a", q[0], 8000, 1, AL_UNLIMITED);
    q[2] = snap_queue(s, "b", q[0], 8000, 2, 24000);
    q[3] = snap_queue(s, "c", -1, 16000, 1, AL_UNLIMITED);
    for (i = 0; i < 6; i++) {
        int j = snap_job(s, q[1 + i % 3], 1, 4);

        snap_place(s, j, 10 * i, i, 0x0F);
        snap_job_ref(s, j)->time_limit = 1000 + 100 * i;
    }
    for (i = 0; i < 40; i++) {
        int j;

        if (i % 5 == 0)
            j = snap_job_frac(s, q[1 + i % 3], 250 * (1 + i % 3), 0);
        else
            j = snap_job(s, q[1 + i % 3], 1 + i % 3, 1 << (i % 4));
        snap_job_ref(s, j)->submit_time = 100 + i % 7;
        snap_job_ref(s, j)->time_limit = 500 * (1 + i % 4);
        if (i % 6 == 0) {
            snap_job_ref(s, j)->preemptible = false;
            snap_job_ref(s, j)->priority = AL_PRIO_BUILD;
        }
    }
    snap_set_now(s, 300);
    return s;
}

static void
same_results(const al_result_t *a, const al_result_t *b)
{
    char why[256];

    if (res_diff(a, b, why, sizeof(why)) != 0)
        AL__FAIL("results differ: %s", why);
}

static void
determinism(void)
{
    snap_t *s = busy_snapshot(), *t = busy_snapshot();
    al_result_t *a, *b, *c;

    a = snap_run(s);
    b = snap_run(s);
    /* An identical snapshot at other addresses gives the same result. */
    c = snap_run(t);
    ASSERT_GT(a->ndecisions, 0);
    same_results(a, b);
    same_results(a, c);
    al_result_destroy(a);
    al_result_destroy(b);
    al_result_destroy(c);
    snap_destroy(s);
    snap_destroy(t);
}

/* The result owns its memory: it outlives the snapshot (ASan and valgrind
 * catch a result that points into it). */
static void
result_outlives_snapshot(void)
{
    snap_t *s = busy_snapshot();
    al_result_t *r = snap_run(s);
    int64_t sum = 0;
    int i, k;

    snap_destroy(s);
    ASSERT_GT(r->ndecisions, 0);
    for (i = 0; i < r->ndecisions; i++)
        for (k = 0;
             r->decisions[i].kind == AL_DEC_START && k < r->decisions[i].ntasks;
             k++)
            sum += r->decisions[i].tasks[k].node +
                   (int64_t)r->decisions[i].tasks[k].devices;
    for (i = 0; i < r->nreservations; i++)
        for (k = 0; k < r->reservations[i].nnodes; k++)
            sum += r->reservations[i].nodes[k] + r->reservations[i].tasks[k];
    for (i = 0; i < r->njobs; i++)
        sum += r->reasons[i].code;
    for (i = 0; i < r->nqueues; i++)
        sum += r->queues[i].allocated[AL_RES_GPU];
    ASSERT_GT(sum, 0);
    al_result_destroy(r);
}

/* The core does not write to the snapshot. */
static void
snapshot_untouched(void)
{
    snap_t *s = busy_snapshot();
    al_snapshot_t *snap = snap_get(s), before = *snap;
    size_t nb = sizeof(al_node_t) * (size_t)snap->nnodes;
    size_t qb = sizeof(al_queue_t) * (size_t)snap->nqueues;
    size_t jb = sizeof(al_job_t) * (size_t)snap->njobs;
    al_config_t cfg = *snap->config;
    void *nodes = malloc(nb), *queues = malloc(qb), *jobs = malloc(jb);
    uint64_t placed = 0;
    al_result_t *r;
    int i, k;

    ASSERT(nodes != NULL && queues != NULL && jobs != NULL);
    memcpy(nodes, snap->nodes, nb);
    memcpy(queues, snap->queues, qb);
    memcpy(jobs, snap->jobs, jb);
    for (i = 0; i < snap->njobs; i++)
        for (k = 0; k < snap->jobs[i].ntasks; k++)
            placed += snap->jobs[i].placement[k].devices * (uint64_t)(k + 1) +
                      (uint64_t)snap->jobs[i].placement[k].node;
    ASSERT_EQ(al_sched_run(snap, &r, NULL), 0);
    ASSERT(memcmp(&before, snap, sizeof(before)) == 0);
    ASSERT(memcmp(&cfg, snap->config, sizeof(cfg)) == 0);
    ASSERT(memcmp(nodes, snap->nodes, nb) == 0);
    ASSERT(memcmp(queues, snap->queues, qb) == 0);
    ASSERT(memcmp(jobs, snap->jobs, jb) == 0);
    for (i = 0; i < snap->njobs; i++)
        for (k = 0; k < snap->jobs[i].ntasks; k++)
            placed -= snap->jobs[i].placement[k].devices * (uint64_t)(k + 1) +
                      (uint64_t)snap->jobs[i].placement[k].node;
    ASSERT_EQ(placed, 0);
    al_result_destroy(r);
    free(nodes);
    free(queues);
    free(jobs);
    snap_destroy(s);
}

/* The result is self-consistent: counts match decisions. */
static void
result_accounting(void)
{
    snap_t *s = busy_snapshot();
    al_result_t *r = snap_run(s);
    int i, started = 0, placements = 0, evicted = 0;

    for (i = 0; i < r->ndecisions; i++) {
        if (r->decisions[i].kind == AL_DEC_START) {
            started++;
            placements += r->decisions[i].ntasks;
        } else {
            evicted++;
        }
    }
    ASSERT_EQ(r->stats.started, started);
    ASSERT_EQ(r->stats.placements, placements);
    ASSERT_EQ(r->stats.evicted, evicted);
    ASSERT_EQ(r->stats.reservations, r->nreservations);
    ASSERT_EQ(r->njobs, snap_njobs(s));
    ASSERT_EQ(r->nqueues, snap_nqueues(s));
    al_result_destroy(r);
    snap_destroy(s);
}

/* ------------------------------------------------------------------ */
/* Anti-starvation, un-starting, fragmentation-aware placement        */

/*
 * A job that has waited past starve_after is considered before the order of
 * need, so it takes the only reservation.  One node of 8, full with a job of
 * queue a that min_runtime protects; a (deserved 4) waits with `old`, 13 h
 * old; b (deserved 4, below it) with `young`.  In the order of need b goes
 * first and young would take the reservation.
 */
static void
starving_job_first(void)
{
    snap_t *s = scenario();
    int a, b, r, old, young;
    al_result_t *res;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 4000, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 4000, 1, AL_UNLIMITED);
    r = snap_job(s, a, 1, 8);
    snap_job_ref(s, r)->min_runtime = 1000000;
    snap_place(s, r, 100000 - 60, 0, 0xFF);
    old = snap_job(s, a, 1, 4);
    snap_job_ref(s, old)->submit_time = 100000 - 13 * 3600;
    young = snap_job(s, b, 1, 4);
    snap_job_ref(s, young)->submit_time = 100000 - 60;
    snap_set_now(s, 100000);
    snap_config(s)->starve_after = 12 * 3600;
    res = snap_run(s);
    ASSERT_REASON(res, old, AL_WHY_RESERVED);
    ASSERT(res->reasons[young].code != AL_WHY_RESERVED);
    ASSERT_EQ(res->nreservations, 1);
    ASSERT_EQ(res->reservations[0].job, old);
    al_result_destroy(res);

    /* An older job that its queue's limit holds back takes no place
     * among the starving (it could not use it): old keeps it. */
    {
        int l = snap_queue(s, "l", -1, 0, 1, 2000);
        int held = snap_job(s, l, 1, 4);

        snap_job_ref(s, held)->submit_time = 100000 - 20 * 3600;
        res = snap_run(s);
        ASSERT_REASON(res, held, AL_WHY_LIMIT);
        ASSERT_EQ(res->nreservations, 1);
        ASSERT_EQ(res->reservations[0].job, old);
        al_result_destroy(res);
    }

    /* Without it, the order of need rules: young gets the reservation. */
    snap_config(s)->starve_after = 0;
    res = snap_run(s);
    ASSERT_REASON(res, young, AL_WHY_RESERVED);
    ASSERT(res->reasons[old].code != AL_WHY_RESERVED);
    al_result_destroy(res);
    snap_destroy(s);
}

/*
 * short_first: inside a queue the shortest expected runtime goes first
 * (the smaller of estimate and time limit, else default_runtime), then
 * the oldest.  One node of 8 with 2 GPUs free; q waits with lng (2 GPUs,
 * limit 10 h, the oldest), none (2 GPUs, no limit: default_runtime, 1 h)
 * and shrt (2 GPUs, estimate 10 min, the youngest).  Only one fits now.
 */
static void
short_first_order(void)
{
    snap_t *s = scenario();
    int q, run, lng, none, shrt;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    run = snap_job_build(s, q, 1, 6);
    snap_place(s, run, 0, 0, 0x3F);
    lng = snap_job(s, q, 1, 2);
    snap_job_ref(s, lng)->time_limit = 10 * 3600;
    none = snap_job(s, q, 1, 2);
    shrt = snap_job(s, q, 1, 2);
    snap_job_ref(s, shrt)->estimate = 600;
    snap_job_ref(s, shrt)->time_limit = 3 * 3600;
    snap_set_now(s, 100);
    snap_config(s)->reserve_depth = 0;
    snap_config(s)->short_first = true;
    r = snap_run(s);
    ASSERT_STARTED(r, shrt, 1);
    ASSERT_NOT_STARTED(r, none);
    ASSERT_NOT_STARTED(r, lng);
    al_result_destroy(r);

    /* Without it, first come first served. */
    snap_config(s)->short_first = false;
    r = snap_run(s);
    ASSERT_STARTED(r, lng, 1);
    ASSERT_NOT_STARTED(r, shrt);
    al_result_destroy(r);

    /* shrt now expects min(5 h estimate, 2 h limit) = 2 h: none (1 h) goes
     * first. */
    snap_config(s)->short_first = true;
    snap_job_ref(s, shrt)->estimate = 5 * 3600;
    snap_job_ref(s, shrt)->time_limit = 2 * 3600;
    r = snap_run(s);
    ASSERT_STARTED(r, none, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * Service levels: of two jobs with the same expected runtime (to the
 * minute), the one with less attained service goes first, even when the
 * other waits longer.  One node of 8 with 2 GPUs free; ran (2 GPUs, 20
 * GPU-minutes in an earlier run, the oldest) and fresh (2 GPUs, never ran).
 */
static void
service_level_order(void)
{
    snap_t *s = scenario();
    int q, run, ran, fresh;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    run = snap_job_build(s, q, 1, 6);
    snap_place(s, run, 0, 0, 0x3F);
    ran = snap_job(s, q, 1, 2);
    snap_job_ref(s, ran)->estimate = 1800;
    snap_job_ref(s, ran)->attained = 1200;
    fresh = snap_job(s, q, 1, 2);
    snap_job_ref(s, fresh)->estimate = 1810;
    snap_set_now(s, 100);
    snap_config(s)->reserve_depth = 0;
    /* The order alone (no preemption, which would also take the room from
     * a job this cycle started for one with less service). */
    snap_config(s)->preempt = false;
    r = snap_run(s);
    ASSERT_STARTED(r, fresh, 1);
    ASSERT_NOT_STARTED(r, ran);
    al_result_destroy(r);

    /* Levels off: the oldest first. */
    memset(snap_config(s)->service_levels, 0,
           sizeof(snap_config(s)->service_levels));
    r = snap_run(s);
    ASSERT_STARTED(r, ran, 1);
    ASSERT_NOT_STARTED(r, fresh);
    al_result_destroy(r);

    snap_destroy(s);
}

/*
 * Un-starting a job this cycle started costs nothing, so only its earlier
 * runs count: as service_level_order with preemption on, ran (2 GPUs, 2 h
 * in an earlier run, 30 min by its estimate) comes first in the order and
 * yields to fresh (3 h): having run 2 h, it counts as running on for at
 * least 2.25 x 2 h.  Thresholds that do not ascend are refused.
 */
static void
service_level_yield(void)
{
    snap_t *s = scenario();
    int q, run, ran, fresh;
    al_result_t *r = NULL;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    run = snap_job_build(s, q, 1, 6);
    snap_place(s, run, 0, 0, 0x3F);
    ran = snap_job(s, q, 1, 2);
    snap_job_ref(s, ran)->estimate = 1800;
    snap_job_ref(s, ran)->attained = 2 * 2 * 3600;
    fresh = snap_job(s, q, 1, 2);
    snap_job_ref(s, fresh)->estimate = 3 * 3600;
    snap_set_now(s, 100);
    snap_config(s)->reserve_depth = 0;
    r = snap_run(s);
    ASSERT_STARTED(r, fresh, 1);
    ASSERT_NOT_STARTED(r, ran);
    ASSERT_EQ(r->reasons[ran].code, AL_WHY_YIELDED);
    al_result_destroy(r);

    /* 10 min before: the shorter keeps it. */
    snap_job_ref(s, ran)->attained = 2 * 600;
    r = snap_run(s);
    ASSERT_STARTED(r, ran, 1);
    ASSERT_NOT_STARTED(r, fresh);
    al_result_destroy(r);

    /* Both fresh: the shorter keeps it. */
    snap_job_ref(s, ran)->attained = 0;
    r = snap_run(s);
    ASSERT_STARTED(r, ran, 1);
    ASSERT_NOT_STARTED(r, fresh);
    al_result_destroy(r);

    snap_config(s)->service_levels[1] = 3600;
    snap_config(s)->service_levels[2] = 600;
    r = NULL;
    ASSERT_EQ(al_sched_run(snap_get(s), &r, NULL), AL_EINVAL);
    ASSERT(r == NULL);
    snap_config(s)->service_levels[2] = 0;
    snap_config(s)->service_levels[3] = 7200;
    ASSERT_EQ(al_sched_run(snap_get(s), &r, NULL), AL_EINVAL);
    snap_config(s)->service_levels[3] = 0;
    snap_config(s)->service_levels[0] = -1;
    ASSERT_EQ(al_sched_run(snap_get(s), &r, NULL), AL_EINVAL);
    ASSERT(r == NULL);
    snap_destroy(s);
}

/*
 * Service preemption: a job that never ran evicts a running job of its
 * own queue and priority class that has had more service, when the
 * running job is expected to run on for longer than the new job's runtime
 * plus twice its current run, or when it has run more than four times the
 * new job's expected runtime.  One node of 4 GPUs, all held by long
 * (4 GPUs, estimate 10 h, running for 30 min: 7200 GPU-s, level 2); short
 * waits (1 GPU, estimate 10 min).
 */
static void
service_preempt(void)
{
    snap_t *s = scenario();
    int q, lng, shrt;
    al_result_t *r;
    const al_decision_t *d;

    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    lng = snap_job(s, q, 1, 4);
    snap_job_ref(s, lng)->estimate = 10 * 3600;
    snap_place(s, lng, 10000 - 1800, 0, 0xF);
    shrt = snap_job(s, q, 1, 1);
    snap_job_ref(s, shrt)->estimate = 600;
    snap_set_now(s, 10000);
    r = snap_run(s);
    d = res_find(r, lng, AL_DEC_EVICT);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_PREEMPT);
    ASSERT_EQ(d->for_job, shrt);
    ASSERT(d->requeue);
    ASSERT_STARTED(r, shrt, 1);
    al_result_destroy(r);

    /* Levels off: one class, no preemption. */
    memset(snap_config(s)->service_levels, 0,
           sizeof(snap_config(s)->service_levels));
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);
    snap_config(s)->service_levels[0] = 1;

    /* Near its end it stays: what it has left counts as at least 2.25 x
     * 30 min, not above 20 min + 2 x 30 min. */
    snap_job_ref(s, lng)->estimate = 4200;
    snap_job_ref(s, shrt)->estimate = 1200;
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_NOT_STARTED(r, shrt);
    al_result_destroy(r);

    /* A job that has run more than four times the newcomer's runtime
     * yields whatever its estimate says: 2.25 x 30 min > 5 min + 2 x 30
     * min. */
    snap_job_ref(s, shrt)->estimate = 300;
    r = snap_run(s);
    ASSERT(res_find(r, lng, AL_DEC_EVICT) != NULL);
    ASSERT_STARTED(r, shrt, 1);
    al_result_destroy(r);

    /* A job with as much service as the victim's level does not evict. */
    snap_job_ref(s, lng)->estimate = 10 * 3600;
    snap_job_ref(s, shrt)->attained = 7200;
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * A job with no GPU attains service too, one GPU per task
 * (al_service()): a CPU-only job that has run 30 min is at level 1 and
 * yields its cores to a short CPU-only job of its queue as a GPU job
 * would; counted in GPUs alone it would stay at level 0 however long it
 * ran.  One node (4 GPUs, 128 cores), all its cores held by long (1 task,
 * 128 cores, estimate 10 h); short waits (64 cores, estimate 10 min).
 */
static void
service_cpu_only(void)
{
    snap_t *s = scenario();
    int q, lng, shrt;
    al_result_t *r;
    const al_decision_t *d;

    ASSERT(al_service(10, 2, 0) == 20.0);
    ASSERT(al_service(10, 2, 500) == 10.0);
    ASSERT(al_service(-5, 2, 0) == 0.0);
    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    lng = snap_job(s, q, 1, 0);
    snap_job_ref(s, lng)->req.cpu_milli = 128000;
    snap_job_ref(s, lng)->estimate = 10 * 3600;
    snap_place(s, lng, 10000 - 1800, 0, 0);
    shrt = snap_job(s, q, 1, 0);
    snap_job_ref(s, shrt)->req.cpu_milli = 64000;
    snap_job_ref(s, shrt)->estimate = 600;
    snap_set_now(s, 10000);
    r = snap_run(s);
    d = res_find(r, lng, AL_DEC_EVICT);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_PREEMPT);
    ASSERT_EQ(d->for_job, shrt);
    ASSERT_STARTED(r, shrt, 1);
    al_result_destroy(r);

    /* A newcomer with as much service (earlier runs of 30 min) waits. */
    snap_job_ref(s, shrt)->attained = al_service(1800, 1, 0);
    r = snap_run(s);
    ASSERT_EQ(r->ndecisions, 0);
    ASSERT_NOT_STARTED(r, shrt);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * Starvation across queues: a gang larger than its queue's deserved
 * quota, waiting past starve_after (2 h), evicts jobs of another queue
 * that have run longer than both starve_after and four times its expected
 * runtime, even where that queue holds no more than its deserved quota.
 * One node of 8; queues a and b deserve 4 GPUs each.  b runs lng1 and lng2
 * (4 GPUs each, running for 100 h: level 3); gang (a, 8 GPUs, estimate
 * 10 min) has waited 3 h.  a's fair share is 4 GPUs, so ordinary reclaim
 * cannot start it.
 */
static void
starving_evicts_served(void)
{
    snap_t *s = scenario();
    int a, b, lng1, lng2, gang;
    const int64_t now = 1000000;
    al_result_t *r;
    const al_decision_t *d;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 4000, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 4000, 1, AL_UNLIMITED);
    lng1 = snap_job(s, b, 1, 4);
    snap_job_ref(s, lng1)->estimate = 400 * 3600;
    snap_place(s, lng1, now - 100 * 3600, 0, 0x0F);
    lng2 = snap_job(s, b, 1, 4);
    snap_job_ref(s, lng2)->estimate = 400 * 3600;
    snap_place(s, lng2, now - 100 * 3600, 0, 0xF0);
    gang = snap_job(s, a, 1, 8);
    snap_job_ref(s, gang)->estimate = 600;
    snap_job_ref(s, gang)->submit_time = now - 3 * 3600;
    snap_set_now(s, now);
    snap_config(s)->starve_after = 2 * 3600;
    r = snap_run(s);
    d = res_find(r, lng1, AL_DEC_EVICT);
    ASSERT(d != NULL);
    ASSERT_EQ(d->why, AL_EVICT_RECLAIM);
    ASSERT_EQ(d->for_job, gang);
    ASSERT(res_find(r, lng2, AL_DEC_EVICT) != NULL);
    ASSERT_STARTED(r, gang, 1);
    al_result_destroy(r);

    /* Not yet starving (1 h): it waits. */
    snap_job_ref(s, gang)->submit_time = now - 3600;
    r = snap_run(s);
    ASSERT(res_find(r, lng1, AL_DEC_EVICT) == NULL);
    ASSERT_NOT_STARTED(r, gang);
    al_result_destroy(r);

    /* With the default threshold (1 h) a wait of 75 min is starving. */
    {
        al_config_t def;

        al_config_default(&def);
        snap_config(s)->starve_after = def.starve_after;
        snap_job_ref(s, gang)->submit_time = now - 75 * 60;
        r = snap_run(s);
        ASSERT(res_find(r, lng1, AL_DEC_EVICT) != NULL);
        ASSERT_STARTED(r, gang, 1);
        al_result_destroy(r);
        snap_config(s)->starve_after = 2 * 3600;
    }

    /* Starving but long itself (30 h: 4 x 30 h > 100 h): it waits. */
    snap_job_ref(s, gang)->submit_time = now - 3 * 3600;
    snap_job_ref(s, gang)->estimate = 30 * 3600;
    r = snap_run(s);
    ASSERT(res_find(r, lng1, AL_DEC_EVICT) == NULL);
    ASSERT_NOT_STARTED(r, gang);
    al_result_destroy(r);

    /* Levels off: it waits. */
    snap_job_ref(s, gang)->estimate = 600;
    memset(snap_config(s)->service_levels, 0,
           sizeof(snap_config(s)->service_levels));
    r = snap_run(s);
    ASSERT(res_find(r, lng1, AL_DEC_EVICT) == NULL);
    ASSERT_NOT_STARTED(r, gang);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * The other way round: reclaim for a job that has been served long does
 * not take back a gang larger than its own queue's deserved quota at a
 * lower service level, expected to end soon.  As starving_evicts_served
 * after the evictions: gang (a, 8 GPUs, estimate 10 min) runs since 5 min;
 * back (b, 4 GPUs, 100 h at 4 GPUs served) waits within b's deserved 4.
 */
static void
reclaim_spares_short_gang(void)
{
    snap_t *s = scenario();
    int a, b, gang, back;
    const int64_t now = 1000000;
    al_result_t *r;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 4000, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 4000, 1, AL_UNLIMITED);
    gang = snap_job(s, a, 1, 8);
    snap_job_ref(s, gang)->estimate = 600;
    snap_place(s, gang, now - 300, 0, 0xFF);
    back = snap_job(s, b, 1, 4);
    snap_job_ref(s, back)->estimate = 400 * 3600;
    snap_job_ref(s, back)->attained = 100.0 * 3600 * 4;
    snap_job_ref(s, back)->submit_time = now - 300;
    snap_set_now(s, now);
    r = snap_run(s);
    ASSERT(res_find(r, gang, AL_DEC_EVICT) == NULL);
    ASSERT_NOT_STARTED(r, back);
    al_result_destroy(r);

    /* A job that never ran takes its guarantee back at once. */
    snap_job_ref(s, back)->attained = 0;
    r = snap_run(s);
    ASSERT(res_find(r, gang, AL_DEC_EVICT) != NULL);
    ASSERT_STARTED(r, back, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * With short_first, the jobs past starve_after go by response ratio
 * (waited + runtime) / runtime, the runtime counted as at least
 * starve_after (2 h here), not oldest first.  As starving_job_first, with
 * two starving jobs of queue a and one reservation: old (13 h waited, 100 h
 * expected: ratio 1.13) and brief (3 h waited, 1 h expected, counted as
 * 2 h: ratio 2.5): brief takes it.
 */
static void
starving_response_ratio(void)
{
    snap_t *s = scenario();
    int a, r, old, brief;
    al_result_t *res;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 8000, 1, AL_UNLIMITED);
    r = snap_job(s, a, 1, 8);
    snap_job_ref(s, r)->min_runtime = 1000000;
    snap_place(s, r, 100000 - 60, 0, 0xFF);
    old = snap_job(s, a, 1, 4);
    snap_job_ref(s, old)->submit_time = 100000 - 13 * 3600;
    snap_job_ref(s, old)->time_limit = 100 * 3600;
    brief = snap_job(s, a, 1, 4);
    snap_job_ref(s, brief)->submit_time = 100000 - 3 * 3600;
    snap_job_ref(s, brief)->time_limit = 3600;
    snap_set_now(s, 100000);
    snap_config(s)->starve_after = 2 * 3600;
    snap_config(s)->short_first = true;
    res = snap_run(s);
    ASSERT_EQ(res->nreservations, 1);
    ASSERT_EQ(res->reservations[0].job, brief);
    al_result_destroy(res);

    /* Oldest first without short_first. */
    snap_config(s)->short_first = false;
    res = snap_run(s);
    ASSERT_EQ(res->nreservations, 1);
    ASSERT_EQ(res->reservations[0].job, old);
    al_result_destroy(res);

    /* A long job's turn comes once it has waited about its runtime: after
     * 120 h old's ratio is (120 + 100) / 100 = 2.2, above that of brief
     * waiting 2.1 h, (2.1 + 2) / 2 = 2.05, or of any job just past the
     * threshold (2). */
    snap_job_ref(s, old)->submit_time = 100000 - 120 * 3600;
    snap_job_ref(s, brief)->submit_time = 100000 - 7560;
    snap_config(s)->short_first = true;
    res = snap_run(s);
    ASSERT_EQ(res->reservations[0].job, old);
    al_result_destroy(res);
    snap_destroy(s);
}

/*
 * A job the same cycle started is the cheapest victim: it gives way, with
 * no decision at all, to a job of a queue below its fair share.  8 GPUs;
 * b (deserved 2) runs 2 and wants 3 more; a (deserved 0) wants 4.  Fair
 * shares come out a 3, b 5; a is furthest below its share, so a1 starts
 * first, taking a GPU of b's share; b1 then reclaims by un-starting a1.
 */
static void
yield_within_cycle(void)
{
    snap_t *s = scenario();
    int a, b, b0, a1, b1;
    al_result_t *r;

    snap_node(s, "n0", 8);
    a = snap_queue(s, "a", -1, 0, 1, AL_UNLIMITED);
    b = snap_queue(s, "b", -1, 2000, 1, AL_UNLIMITED);
    b0 = snap_job(s, b, 1, 2);
    snap_place(s, b0, 0, 0, 0x03);
    a1 = snap_job(s, a, 1, 4);
    b1 = snap_job(s, b, 1, 3);
    snap_set_now(s, 1000);
    r = snap_run(s);
    ASSERT_DBL_NEAR(r->queues[a].fair[AL_RES_GPU], 3000, 1);
    ASSERT_DBL_NEAR(r->queues[b].fair[AL_RES_GPU], 5000, 1);
    ASSERT_STARTED(r, b1, 1);
    ASSERT_NOT_STARTED(r, a1);
    ASSERT(res_find(r, a1, AL_DEC_EVICT) == NULL);
    ASSERT_EQ(res_count(r, AL_DEC_EVICT), 0);
    ASSERT_REASON(r, a1, AL_WHY_YIELDED);
    ASSERT_EQ(r->reasons[a1].job, b1);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * AL_PACK_FRAG puts a task where the node's expected fragmentation grows
 * least, judged against the shapes that run and wait.  Node a has 2 free
 * GPUs but only 6 cores left; node b 3 free GPUs and cores to spare.  A
 * 1-GPU task with 4 cores: bin-packing takes a (fuller); FGD takes b, since
 * on a the last GPU would be stranded without the cores to use it.
 */
static void
pack_frag(void)
{
    snap_t *s = scenario();
    int q, ra, rb, j;
    al_result_t *r;

    snap_node(s, "a", 8);
    snap_node(s, "b", 8);
    snap_node_ref(s, 0)->cpu_milli = 10000;
    snap_node_ref(s, 1)->cpu_milli = 64000;
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    ra = snap_job(s, q, 1, 6);
    snap_job_ref(s, ra)->req.cpu_milli = 4000;
    snap_place(s, ra, 0, 0, 0x3F);
    rb = snap_job(s, q, 1, 5);
    snap_place(s, rb, 0, 1, 0x1F);
    j = snap_job(s, q, 1, 1);
    snap_job_ref(s, j)->req.cpu_milli = 4000;
    snap_set_now(s, 100);
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].node, 0);
    al_result_destroy(r);

    snap_config(s)->pack = AL_PACK_FRAG;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].node, 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/* The node a job's first task started on, or -1. */
static int
start_node(const al_result_t *r, int j)
{
    const al_decision_t *d = res_find(r, j, AL_DEC_START);

    return d != NULL ? d->tasks[0].node : -1;
}

/*
 * A workload profile the caller gives (al_config_t.profile) is what
 * AL_PACK_FRAG judges against.  Node a's one device has 700 milli free (a
 * 0.3 task runs there), node b's is free; a 0.4 task waits.  Against the
 * profile the core builds itself (0.3 and 0.4 tasks, half each) the
 * fragmentation grows by -50 on either node, and a, the fuller, wins.
 * Against a profile of 0.35 tasks, a would keep 300, too little for one
 * (it held two with nothing left: +300), and b 600, one with 250 left (it
 * held two with 300 left: -50): b.
 */
static void
pack_frag_profile(void)
{
    snap_t *s = scenario();
    al_shape_t shape = { .gpu_milli = 350, .weight = 1 };
    int q, run, j;
    al_result_t *r;

    snap_node(s, "a", 1);
    snap_node(s, "b", 1);
    q = snap_queue(s, "q", -1, 2000, 1, AL_UNLIMITED);
    run = snap_job_frac(s, q, 300, 0);
    snap_place_frac(s, run, 0, 0, 0, 300, 0);
    j = snap_job_frac(s, q, 400, 0);
    snap_set_now(s, 100);
    snap_config(s)->pack = AL_PACK_FRAG;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(start_node(r, j), 0);
    al_result_destroy(r);

    snap_config(s)->nprofile = 1;
    snap_config(s)->profile = &shape;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(start_node(r, j), 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].gpu_milli, 400);
    al_result_destroy(r);

    /* Shapes of weight 0 do not count; with none left, the core's own
     * profile rules again. */
    shape.weight = 0;
    r = snap_run(s);
    ASSERT_EQ(start_node(r, j), 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * AL_PACK_FRAG counts as fragment the GPUs that a node's CPU would strand.
 * Nodes a and b have 4 free GPUs; a has 16 cores, b 64.  The workload is
 * 1-GPU tasks with 4 cores; a 1-GPU task with 12 cores waits.  On a it
 * would leave 4 cores to 3 GPUs: one more task fits and two GPUs are
 * stranded (+2000); on b nothing is (0).  Counting as FGD does (a node is
 * fragment for a shape only when not one task of it fits) would tie the
 * two, and ties go to the lower index, a.
 */
static void
pack_frag_cpu_strands(void)
{
    snap_t *s = scenario();
    al_shape_t shape = { .gpus = 1, .cpu_milli = 4000, .weight = 1 };
    int q, j;
    al_result_t *r;

    snap_node(s, "a", 4);
    snap_node(s, "b", 4);
    snap_node_ref(s, 0)->cpu_milli = 16000;
    snap_node_ref(s, 1)->cpu_milli = 64000;
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    j = snap_job(s, q, 1, 1);
    snap_job_ref(s, j)->req.cpu_milli = 12000;
    snap_set_now(s, 100);
    snap_config(s)->pack = AL_PACK_FRAG;
    snap_config(s)->nprofile = 1;
    snap_config(s)->profile = &shape;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(start_node(r, j), 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * AL_PACK_FRAG places CPU-only tasks too, where their cores strand the
 * least GPU.  Node a has half a device free (a 0.5 task runs) and 10
 * cores; node b one free device of two and 20 cores.  The workload is 0.5
 * tasks with 4 cores; a CPU-only task with 8 cores waits.  Bin-packing
 * sends it to the node with fewest free devices, a, where the half device
 * would be left with 2 cores (+500); on b two 0.5 tasks still fit (0).
 */
static void
pack_frag_cpu_only(void)
{
    snap_t *s = scenario();
    al_shape_t shape = { .gpu_milli = 500, .cpu_milli = 4000, .weight = 1 };
    int q, half, whole, j;
    al_result_t *r;

    snap_node(s, "a", 1);
    snap_node(s, "b", 2);
    snap_node_ref(s, 0)->cpu_milli = 10000;
    snap_node_ref(s, 1)->cpu_milli = 20000;
    q = snap_queue(s, "q", -1, 3000, 1, AL_UNLIMITED);
    half = snap_job_frac(s, q, 500, 0);
    snap_place_frac(s, half, 0, 0, 0, 500, 0);
    whole = snap_job(s, q, 1, 1);
    snap_place(s, whole, 0, 1, 0x1);
    j = snap_job(s, q, 1, 0);
    snap_job_ref(s, j)->req.cpu_milli = 8000;
    snap_set_now(s, 100);
    r = snap_run(s);
    ASSERT_EQ(start_node(r, j), 0);
    al_result_destroy(r);

    snap_config(s)->pack = AL_PACK_FRAG;
    snap_config(s)->nprofile = 1;
    snap_config(s)->profile = &shape;
    r = snap_run(s);
    ASSERT_STARTED(r, j, 1);
    ASSERT_EQ(start_node(r, j), 1);
    ASSERT_EQ(res_find(r, j, AL_DEC_START)->tasks[0].devices, 0);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A bad workload profile is refused whole, as any bad snapshot. */
static void
pack_frag_bad_profile(void)
{
    snap_t *s = valid_base();
    al_snapshot_t *snap = snap_get(s);
    al_shape_t shape = { .gpus = 1, .weight = 1 };

    snap_config(s)->pack = AL_PACK_FRAG;
    snap_config(s)->nprofile = 1;
    expect_einval(s, snap, "profile of 1 shape, no array");
    snap_config(s)->profile = &shape;
    snap_config(s)->nprofile = -1;
    expect_einval(s, snap, "profile of -1 shapes");
    snap_config(s)->nprofile = 1;
    shape.weight = -1;
    expect_einval(s, snap, "negative weight");
    shape.weight = NAN;
    expect_einval(s, snap, "weight NaN");
    shape.weight = INFINITY;
    expect_einval(s, snap, "weight infinite");
    shape.weight = 1;
    shape.gpu_milli = AL_GPU_MILLI;
    expect_einval(s, snap, "fraction of a whole GPU");
    shape.gpu_milli = 0;
    shape.cpu_milli = -1;
    expect_einval(s, snap, "negative cores");
    shape.cpu_milli = 0;
    al_result_destroy(snap_run(s));
    snap_destroy(s);
}

/* Every reason code has a short name: distinct, a label's characters. */
static void
reason_names(void)
{
    ASSERT_STR_EQ(al_reason_name(AL_WHY_NONE), "none");
    ASSERT_STR_EQ(al_reason_name(AL_WHY_CAPACITY), "capacity");
    ASSERT_STR_EQ(al_reason_name(AL_WHY_NO_NODE), "no_node_fits");
    ASSERT_STR_EQ(al_reason_name(AL_WHY_NO_MATCH), "no_match");
    ASSERT(al_reason_name(AL_WHY_COUNT) == NULL);
    ASSERT(al_reason_name((al_reason_code_t)-1) == NULL);
    for (int i = 0; i < AL_WHY_COUNT; i++) {
        const char *n = al_reason_name((al_reason_code_t)i);
        ASSERT(n != NULL && n[0] != '\0');
        ASSERT_EQ(strspn(n, "abcdefghijklmnopqrstuvwxyz_"), strlen(n));
        for (int k = 0; k < i; k++)
            ASSERT(strcmp(n, al_reason_name((al_reason_code_t)k)) != 0);
    }
}

const al_test_t test_sched[] = {
    { "reason_names", reason_names },
    { "starving_job_first", starving_job_first },
    { "yield_within_cycle", yield_within_cycle },
    { "pack_frag", pack_frag },
    { "pack_frag_profile", pack_frag_profile },
    { "pack_frag_cpu_strands", pack_frag_cpu_strands },
    { "pack_frag_cpu_only", pack_frag_cpu_only },
    { "pack_frag_bad_profile", pack_frag_bad_profile },
    { "config_defaults", config_defaults },
    { "short_first_order", short_first_order },
    { "service_level_order", service_level_order },
    { "service_preempt", service_preempt },
    { "service_cpu_only", service_cpu_only },
    { "starving_evicts_served", starving_evicts_served },
    { "reclaim_spares_short_gang", reclaim_spares_short_gang },
    { "service_level_yield", service_level_yield },
    { "starving_response_ratio", starving_response_ratio },
    { "usage_decay", usage_decay },
    { "request_gpu_milli", request_gpu_milli },
    { "empty", empty },
    { "runai_story", runai_story },
    { "reclaim_respects_deserved", reclaim_respects_deserved },
    { "reclaim_min_runtime", reclaim_min_runtime },
    { "reclaim_minimal_victims", reclaim_minimal_victims },
    { "reclaim_gang_over_quota", reclaim_gang_over_quota },
    { "reclaim_not_below_deserved", reclaim_not_below_deserved },
    { "reclaim_shrink_elastic", reclaim_shrink_elastic },
    { "reclaim_before_reservation", reclaim_before_reservation },
    { "reclaim_fraction_by_memory", reclaim_fraction_by_memory },
    { "reclaim_priority_not_below_deserved",
      reclaim_priority_not_below_deserved },
    { "reclaim_not_below_deserved_memory", reclaim_not_below_deserved_memory },
    { "gang_all_or_nothing", gang_all_or_nothing },
    { "gang_elastic", gang_elastic },
    { "limit_leaf", limit_leaf },
    { "limit_ancestor", limit_ancestor },
    { "limit_cpu", limit_cpu },
    { "nonpreemptible_deserved", nonpreemptible_deserved },
    { "nonpreemptible_ancestor", nonpreemptible_ancestor },
    { "nonpreemptible_no_quota", nonpreemptible_no_quota },
    { "build_cap", build_cap },
    { "build_cap_parent", build_cap_parent },
    { "build_never_reclaimed", build_never_reclaimed },
    { "backfill_short_job", backfill_short_job },
    { "backfill_long_job", backfill_long_job },
    { "backfill_lend", backfill_lend },
    { "backfill_lent_evicted", backfill_lent_evicted },
    { "backfill_behind_fraction", backfill_behind_fraction },
    { "backfill_off", backfill_off },
    { "preempt_by_priority", preempt_by_priority },
    { "preempt_checkpoint", preempt_checkpoint },
    { "priority_adjust", priority_adjust },
    { "preempt_not_lower", preempt_not_lower },
    { "preempt_min_runtime", preempt_min_runtime },
    { "topology_required", topology_required },
    { "topology_preferred_tight", topology_preferred_tight },
    { "topology_required_elastic", topology_required_elastic },
    { "nvlink_preference", nvlink_preference },
    { "nvlink_required", nvlink_required },
    { "numa_preference", numa_preference },
    { "fractional_packing", fractional_packing },
    { "fractional_prefers_shared", fractional_prefers_shared },
    { "fractional_memory", fractional_memory },
    { "fractional_memory_limit", fractional_memory_limit },
    { "fractional_memory_model_limit", fractional_memory_model_limit },
    { "pack_bin_vs_spread", pack_bin_vs_spread },
    { "pool_and_model", pool_and_model },
    { "model_limit", model_limit },
    { "fair_share_weights", fair_share_weights },
    { "fair_share_limit", fair_share_limit },
    { "fair_share_priority", fair_share_priority },
    { "fair_share_hierarchy", fair_share_hierarchy },
    { "fair_share_usage", fair_share_usage },
    { "no_borrow", no_borrow },
    { "dependencies", dependencies },
    { "critical_path_first", critical_path_first },
    { "order_in_queue", order_in_queue },
    { "queue_order_deserved_first", queue_order_deserved_first },
    { "queue_order_share", queue_order_share },
    { "strict_order", strict_order },
    { "held_jobs", held_jobs },
    { "node_states", node_states },
    { "node_fenced_gpus", node_fenced_gpus },
    { "reason_drained_not_too_big", reason_drained_not_too_big },
    { "reasons_capacity_vs_fragmented", reasons_capacity_vs_fragmented },
    { "second_chance_after_reserved_start",
      second_chance_after_reserved_start },
    { "reason_format", reason_format },
    { "reason_from_cycle", reason_from_cycle },
    { "invalid_snapshots", invalid_snapshots },
    { "job_in_inner_queue", job_in_inner_queue },
    { "determinism", determinism },
    { "result_outlives_snapshot", result_outlives_snapshot },
    { "snapshot_untouched", snapshot_untouched },
    { "result_accounting", result_accounting },
    { NULL, NULL },
};
