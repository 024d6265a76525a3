/*
 * test_dag.c -- pipelines in the core: the critical path's order, the
 * look-ahead reservation of a stage whose input is running (at the right
 * time, dropped on an overrun, none for CPU stages), and a waiting stage
 * holding nothing that free work could use.
 */
#include <stdlib.h>
#include <string.h>

#include "snap.h"
#include "test.h"

static snap_t *
scenario(void)
{
    snap_t *s = snap_create();
    al_config_t *c = snap_config(s);

    c->usage_weight = 0;
    c->reserve_depth = 2;
    c->default_runtime = 3600;
    c->lend_reserved = false;
    c->lookahead_depth = 8;
    c->lookahead_horizon = 0;
    c->lookahead_hold = true;
    c->ignore_deps = false;
    return s;
}

/* The reservation of job j in r, or NULL. */
static const al_reservation_t *
resv_of(const al_result_t *r, int j)
{
    for (int k = 0; k < r->nreservations; k++)
        if (r->reservations[k].job == j)
            return &r->reservations[k];
    return NULL;
}

/*
 * One 4-GPU node: stage A runs (ends at 100), stage B waits for it and
 * needs all 4 GPUs, an unrelated 4-GPU job X is blocked.  With look-ahead
 * B is planned at 100 and X after B (100 + B's 500 s); without, X's
 * reservation takes A's GPUs at 100.
 */
static void
build_handoff(snap_t *s, int *a, int *b, int *x)
{
    int q;

    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    *x = snap_job(s, q, 1, 4);
    snap_job_ref(s, *x)->estimate = 5000;
    *a = snap_job(s, q, 1, 4);
    snap_job_ref(s, *a)->estimate = 100;
    snap_place(s, *a, 0, 0, 0xF);
    *b = snap_job(s, q, 1, 4);
    snap_job_ref(s, *b)->estimate = 500;
    snap_job_dep(s, *b, *a);
    snap_set_now(s, 10);
}

static void
lookahead_at_stage_end(void)
{
    snap_t *s = scenario();
    int a, b, x;
    al_result_t *r;
    const al_reservation_t *rv;

    build_handoff(s, &a, &b, &x);
    r = snap_run(s);
    rv = resv_of(r, b);
    ASSERT(rv != NULL);
    ASSERT_EQ(rv->start, 100);
    ASSERT_EQ(rv->nnodes, 1);
    ASSERT_EQ(r->reasons[b].code, AL_WHY_DEPS);
    rv = resv_of(r, x);
    ASSERT(rv != NULL);
    ASSERT_EQ(rv->start, 600);
    ASSERT_EQ(r->reasons[x].code, AL_WHY_RESERVED);
    ASSERT_EQ(r->reasons[x].time, 600);
    al_result_destroy(r);

    /* Look-ahead off: X plans on A's GPUs, B gets nothing. */
    snap_config(s)->lookahead_depth = 0;
    r = snap_run(s);
    ASSERT(resv_of(r, b) == NULL);
    rv = resv_of(r, x);
    ASSERT(rv != NULL);
    ASSERT_EQ(rv->start, 100);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A stage past its expected end releases the look-ahead: X plans at once. */
static void
lookahead_released_on_overrun(void)
{
    snap_t *s = scenario();
    int a, b, x;
    al_result_t *r;

    build_handoff(s, &a, &b, &x);
    snap_set_now(s, 150);
    r = snap_run(s);
    ASSERT(resv_of(r, b) == NULL);
    ASSERT(resv_of(r, x) != NULL);
    ASSERT_EQ(resv_of(r, x)->start, 151);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Beyond the horizon, and for the dependency-blind order, no look-ahead. */
static void
lookahead_horizon_and_off(void)
{
    snap_t *s = scenario();
    int a, b, x;
    al_result_t *r;

    build_handoff(s, &a, &b, &x);
    snap_config(s)->lookahead_horizon = 60; /* A ends in 90 s */
    r = snap_run(s);
    ASSERT(resv_of(r, b) == NULL);
    al_result_destroy(r);
    snap_config(s)->lookahead_horizon = 90;
    r = snap_run(s);
    ASSERT(resv_of(r, b) != NULL);
    al_result_destroy(r);
    snap_config(s)->ignore_deps = true;
    r = snap_run(s);
    ASSERT(resv_of(r, b) == NULL);
    ASSERT_EQ(resv_of(r, x)->start, 100);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * Without lookahead_hold, a stage needing more GPUs than its input frees
 * holds none of today's free GPUs: an unrelated long job starts on them
 * now.  A CPU-only stage gets no look-ahead at all.
 */
static void
waiting_stage_holds_nothing(void)
{
    snap_t *s = scenario();
    int q, a, b, c, y;
    al_result_t *r;
    const al_reservation_t *rv;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 4);
    snap_job_ref(s, a)->estimate = 100;
    snap_place(s, a, 0, 0, 0xF);
    b = snap_job(s, q, 1, 8);
    snap_job_ref(s, b)->estimate = 500;
    snap_job_dep(s, b, a);
    c = snap_job(s, q, 1, 0); /* a CPU stage after A */
    snap_job_ref(s, c)->req.cpu_milli = 1000;
    snap_job_dep(s, c, a);
    y = snap_job(s, q, 1, 4);
    snap_job_ref(s, y)->estimate = 10000;
    snap_job_ref(s, y)->preemptible = false;
    snap_set_now(s, 10);
    snap_config(s)->lookahead_hold = false;
    r = snap_run(s);
    ASSERT(res_find(r, y, AL_DEC_START) != NULL);
    ASSERT_EQ(res_devices_on(r, y, 0), 0xF0);
    ASSERT(res_find(r, b, AL_DEC_START) == NULL);
    ASSERT(resv_of(r, c) == NULL);
    rv = resv_of(r, b);
    ASSERT(rv != NULL);
    ASSERT_EQ(rv->start, 100); /* planned before Y started */
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * With lookahead_hold, the part of the stage's need that is free now is
 * held for it: a long unrelated job does not start there, a short one
 * that ends before the stage's input does is lent the room; once the input
 * overruns, the hold is released and the long job starts.
 */
static void
hold_lent_and_released(void)
{
    snap_t *s = scenario();
    int q, a, b, y, z;
    al_result_t *r;

    snap_node(s, "n0", 8);
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 4);
    snap_job_ref(s, a)->estimate = 100;
    snap_place(s, a, 0, 0, 0xF);
    b = snap_job(s, q, 1, 8);
    snap_job_ref(s, b)->estimate = 500;
    snap_job_dep(s, b, a);
    y = snap_job(s, q, 1, 4); /* long */
    snap_job_ref(s, y)->estimate = 10000;
    snap_job_ref(s, y)->preemptible = false;
    z = snap_job(s, q, 1, 4); /* ends at 60, before A's 100 */
    snap_job_ref(s, z)->estimate = 50;
    snap_job_ref(s, z)->preemptible = false;
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT(res_find(r, y, AL_DEC_START) == NULL);
    ASSERT(res_find(r, z, AL_DEC_START) != NULL);
    ASSERT_EQ(res_devices_on(r, z, 0), 0xF0);
    ASSERT_EQ(resv_of(r, b)->start, 100);
    al_result_destroy(r);
    /* A overruns: nothing is held, the long job starts. */
    snap_job_ref(s, z)->state = AL_JOB_HELD;
    snap_set_now(s, 120);
    r = snap_run(s);
    ASSERT(resv_of(r, b) == NULL);
    ASSERT(res_find(r, y, AL_DEC_START) != NULL);
    al_result_destroy(r);
    snap_destroy(s);
}

/* A stage further back (its input still pending) gets no look-ahead. */
static void
only_the_next_stage(void)
{
    snap_t *s = scenario();
    int q, a, b, c;
    al_result_t *r;

    snap_node(s, "n0", 4);
    q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 4);
    snap_job_ref(s, a)->estimate = 100;
    snap_place(s, a, 0, 0, 0xF);
    b = snap_job(s, q, 1, 4);
    snap_job_dep(s, b, a);
    c = snap_job(s, q, 1, 4);
    snap_job_dep(s, c, b);
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT(resv_of(r, b) != NULL);
    ASSERT(resv_of(r, c) == NULL);
    ASSERT_EQ(r->reasons[c].code, AL_WHY_DEPS);
    al_result_destroy(r);
    snap_destroy(s);
}

/* Critical path: the stage a chain waits on goes before an older job;
 * with ignore_deps the older job goes first. */
static void
critical_path_and_blind(void)
{
    snap_t *s = scenario();
    int q, old, head, tail;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    snap_node(s, "n0", 1);
    q = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
    old = snap_job(s, q, 1, 1);
    head = snap_job(s, q, 1, 1);
    tail = snap_job(s, q, 1, 1);
    snap_job_dep(s, tail, head);
    r = snap_run(s);
    ASSERT(res_find(r, head, AL_DEC_START) != NULL);
    ASSERT(res_find(r, old, AL_DEC_START) == NULL);
    al_result_destroy(r);
    snap_config(s)->ignore_deps = true;
    r = snap_run(s);
    ASSERT(res_find(r, old, AL_DEC_START) != NULL);
    ASSERT(res_find(r, head, AL_DEC_START) == NULL);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * Two ready 1-GPU jobs on one GPU, p older than q.  What waits on p is w
 * (runtime tw) behind an edge of kind `when`, or an array element of
 * `waves` rounds; what waits on q is v (1500 s).  Returns the one that
 * starts.
 */
static int
first_of_two(al_dep_when_t when, int64_t tw, int32_t waves, int *p, int *q)
{
    snap_t *s = scenario();
    int qu, w, v, got = -1;
    al_result_t *r;

    snap_config(s)->reserve_depth = 0;
    snap_config(s)->lookahead_depth = 0;
    snap_node(s, "n0", 1);
    qu = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
    *p = snap_job(s, qu, 1, 1);
    snap_job_ref(s, *p)->estimate = 600;
    *q = snap_job(s, qu, 1, 1);
    snap_job_ref(s, *q)->estimate = 600;
    w = snap_job(s, qu, 1, 1);
    snap_job_ref(s, w)->estimate = tw;
    snap_job_ref(s, w)->array_waves = waves;
    snap_job_dep_when(s, w, *p, when);
    v = snap_job(s, qu, 1, 1);
    snap_job_ref(s, v)->estimate = 1500;
    snap_job_dep(s, v, *q);
    r = snap_run(s);
    if (res_find(r, *p, AL_DEC_START) != NULL)
        got = *p;
    else if (res_find(r, *q, AL_DEC_START) != NULL)
        got = *q;
    al_result_destroy(r);
    snap_destroy(s);
    return got;
}

/* A failure edge counts a quarter of the chain behind it: a 4000 s
 * cleanup (1000) loses to 1500 s that runs on success, an 8000 s one
 * (2000) wins; an always edge counts whole. */
static void
critical_path_failure_edge(void)
{
    int p, q;

    ASSERT_EQ(first_of_two(AL_EDGE_FAILURE, 4000, 0, &p, &q), q);
    ASSERT_EQ(first_of_two(AL_EDGE_FAILURE, 8000, 0, &p, &q), p);
    ASSERT_EQ(first_of_two(AL_EDGE_ALWAYS, 1600, 0, &p, &q), p);
    ASSERT_EQ(first_of_two(AL_EDGE_SUCCESS, 1400, 0, &p, &q), q);
}

/* An array stage counts its rounds: 16 elements of 300 s, 4 at a time,
 * is 1200 s on the path (loses to 1500), 6 rounds 1800 s (wins); 0 and 1
 * count the element once. */
static void
critical_path_array_waves(void)
{
    int p, q;

    ASSERT_EQ(first_of_two(AL_EDGE_SUCCESS, 300, 4, &p, &q), q);
    ASSERT_EQ(first_of_two(AL_EDGE_SUCCESS, 300, 6, &p, &q), p);
    ASSERT_EQ(first_of_two(AL_EDGE_SUCCESS, 1000, 1, &p, &q), q);
    ASSERT_EQ(first_of_two(AL_EDGE_SUCCESS, 1000, 0, &p, &q), q);
    ASSERT_EQ(first_of_two(AL_EDGE_SUCCESS, 1000, 2, &p, &q), p);
}

/* A stage behind a failure edge gets no look-ahead (it runs only if its
 * input fails); behind an always edge it does; a when out of range or
 * negative waves make the snapshot invalid. */
static void
lookahead_not_after_failure(void)
{
    al_dep_when_t k[] = { AL_EDGE_FAILURE, AL_EDGE_ALWAYS };

    for (int i = 0; i < 2; i++) {
        snap_t *s = scenario();
        int q, a, b;
        al_result_t *r;

        snap_node(s, "n0", 4);
        q = snap_queue(s, "q", -1, 4000, 1, AL_UNLIMITED);
        a = snap_job(s, q, 1, 4);
        snap_job_ref(s, a)->estimate = 100;
        snap_place(s, a, 0, 0, 0xF);
        b = snap_job(s, q, 1, 4);
        snap_job_dep_when(s, b, a, k[i]);
        snap_set_now(s, 10);
        r = snap_run(s);
        if (k[i] == AL_EDGE_FAILURE)
            ASSERT(resv_of(r, b) == NULL);
        else
            ASSERT(resv_of(r, b) != NULL && resv_of(r, b)->start == 100);
        al_result_destroy(r);
        snap_destroy(s);
    }
    {
        snap_t *s = scenario();
        int q, a, b;
        al_result_t *r = NULL;

        snap_node(s, "n0", 1);
        q = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
        a = snap_job(s, q, 1, 1);
        b = snap_job(s, q, 1, 1);
        snap_job_dep_when(s, b, a, (al_dep_when_t)7);
        ASSERT_EQ(al_sched_run(snap_get(s), &r, NULL), AL_EINVAL);
        snap_destroy(s);
        s = scenario();
        snap_node(s, "n0", 1);
        q = snap_queue(s, "q", -1, 1000, 1, AL_UNLIMITED);
        a = snap_job(s, q, 1, 1);
        snap_job_ref(s, a)->array_waves = -1;
        ASSERT_EQ(al_sched_run(snap_get(s), &r, NULL), AL_EINVAL);
        snap_destroy(s);
    }
}

/* An input that is an element of an array with rounds still to come
 * after its own (array_waves > 1) does not end the stage's wait: no
 * look-ahead, so nothing is held for the stage through every round of
 * a fan-out; at the last round (1) the look-ahead is made. */
static void
lookahead_not_before_last_round(void)
{
    snap_t *s = scenario();
    int a, b, x;
    al_result_t *r;

    build_handoff(s, &a, &b, &x);
    snap_job_ref(s, a)->array_waves = 3;
    r = snap_run(s);
    ASSERT(resv_of(r, b) == NULL);
    al_result_destroy(r);
    snap_job_ref(s, a)->array_waves = 1;
    r = snap_run(s);
    ASSERT(resv_of(r, b) != NULL);
    ASSERT_EQ(resv_of(r, b)->start, 100);
    al_result_destroy(r);
    snap_destroy(s);
}

/* The same snapshot, the same bytes. */
static void
lookahead_deterministic(void)
{
    snap_t *s = scenario();
    int a, b, x;
    al_result_t *r1, *r2;
    char why[256];

    build_handoff(s, &a, &b, &x);
    r1 = snap_run(s);
    r2 = snap_run(s);
    ASSERT_EQ(res_diff(r1, r2, why, sizeof(why)), 0);
    al_result_destroy(r1);
    al_result_destroy(r2);
    snap_destroy(s);
}

const al_test_t test_dag[] = {
    { "lookahead_at_stage_end", lookahead_at_stage_end },
    { "lookahead_released_on_overrun", lookahead_released_on_overrun },
    { "lookahead_horizon_and_off", lookahead_horizon_and_off },
    { "waiting_stage_holds_nothing", waiting_stage_holds_nothing },
    { "hold_lent_and_released", hold_lent_and_released },
    { "only_the_next_stage", only_the_next_stage },
    { "critical_path_and_blind", critical_path_and_blind },
    { "lookahead_deterministic", lookahead_deterministic },
    { "critical_path_failure_edge", critical_path_failure_edge },
    { "critical_path_array_waves", critical_path_array_waves },
    { "lookahead_not_after_failure", lookahead_not_after_failure },
    { "lookahead_not_before_last_round", lookahead_not_before_last_round },
    { NULL, NULL },
};
