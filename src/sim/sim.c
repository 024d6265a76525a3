/*
 * sim.c -- the event loop of `allot sim`.
 *
 * Virtual time jumps from event to event: job arrivals (from the trace,
 * sorted), completions and Tiresias priority changes (a heap), and an
 * optional periodic tick.  All events at one second are applied first; then,
 * if any job is pending, one core cycle runs on a snapshot of every pending
 * and running job, and its decisions are applied: evictions first (a job
 * keeps the work saved by its last checkpoint and loses the rest), then
 * starts (a job runs for the rest of its trace duration).  If a cycle
 * evicted jobs, another cycle runs at the same second so that the freed room
 * is used at once, as the controller would do on its next pass.
 *
 * Between events the state is constant, so metrics are integrated exactly
 * over each interval: allocation, per-queue allocation, fair share and
 * demand, and wastage (an idle GPU while a pending job would fit on the idle
 * GPUs; see docs/simulation.md).  sim_int.h maps the files of a run.
 *
 * May call: every file of a run (setup.c, cycle.c, metrics.c, jobs.c,
 * policy.c, events.c), src/common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

void
al_sim_opts_default(al_sim_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->policy = AL_POLICY_ALLOT;
    o->qmode = AL_QMODE_COLUMN;
    o->checkpoint = 1800;
    o->restart_overhead = 60;
    o->estimate_factor = 2.0;
    o->estimate_noise = 0;
    o->estimate_seed = 1;
    o->usage_half_life = (int64_t)7 * 86400;
    o->usage_weight = -1;
    o->pack = -1;
    o->short_first = -1;
    /* Tiresias' discretised 2D-LAS: levels split at 1 and 10 GPU-hours. */
    o->tiresias_thresholds[0] = 3600;
    o->tiresias_thresholds[1] = 36000;
    o->ntiresias = 2;
}

static void
progress(sim_t *s, int64_t now, double *last, bool final)
{
    if (!s->o->progress)
        return;
    double t = al__now_s();
    if (!final && t - *last < 0.5)
        return;
    *last = t;
    int done = 0;
    for (int i = 0; i < s->njobs; i++)
        done += s->jobs[i].state == S_DONE || s->jobs[i].state == S_UNSCHED;
    fprintf(stderr,
            "\rsim %-10s day %6.1f  jobs %d/%d  running %lld  "
            "pending %lld  cycles %lld%s",
            s->pol->name, (double)(now - s->r->t_first) / 86400, done, s->njobs,
            (long long)s->nrun, (long long)s->npend, (long long)s->r->cycles,
            final ? "\n" : "");
    fflush(stderr);
}

/* The time of the next event after `now`, or INT64_MAX when nothing will
 * ever change again. */
static int64_t
next_event(sim_t *s, int64_t now)
{
    int64_t t = INT64_MAX;
    if (s->next < s->njobs)
        t = s->tr->jobs[s->next].submit;
    if (al__ev_clean(s) && s->heap[0].t < t)
        t = s->heap[0].t;
    if (s->o->tick > 0 && s->npend > 0) {
        /* A tick alone changes nothing when no job runs. */
        if (t == INT64_MAX && s->nrun == 0)
            return INT64_MAX;
        if (s->next_tick <= now)
            s->next_tick = now + s->o->tick;
        if (s->next_tick < t)
            t = s->next_tick;
    }
    return t;
}

/* Applies the arrivals, completions and priority changes at `now`. */
static void
apply_events(sim_t *s, int64_t now)
{
    while (s->next < s->njobs && s->tr->jobs[s->next].submit == now) {
        int i = s->next++;
        al__stages_arrive(s, i, now);
    }
    while (al__ev_clean(s) && s->heap[0].t == now) {
        event_t e = al__ev_pop(s);
        if (e.kind == EV_END) {
            al__job_complete(s, e.job, now);
            al__stages_ended(s, e.job, now, true);
        } else if (s->pol->las)
            al__policy_prio_event(s, e.job, now);
    }
}

static void
drop_pending(sim_t *s)
{
    for (int a = s->nact - 1; a >= 0; a--)
        if (s->jobs[s->act[a]].state == S_PENDING) {
            int i = s->act[a];
            al__job_unschedulable(s, i);
            al__stages_ended(s, i, 0, false);
            if (a > s->nact)
                a = s->nact; /* stages after it left the active array */
        }
}

/* Bookkeeping after the cycles at `now`. */
static void
after_cycles(sim_t *s, int64_t now)
{
    if (s->o->drop_unplaced)
        drop_pending(s);
    al__metrics_after(s, now);
}

int
al_sim_run(const al_trace_t *trace, const al_cluster_t *cluster,
           const al_sim_opts_t *opts, al_sim_result_t **out, char **cause)
{
    double wall0 = al__now_s();
    if (cluster->gpu_capacity <= 0 || opts->policy >= AL_POLICY_COUNT ||
        (opts->qmode == AL_QMODE_HASH && opts->nqueues < 1) ||
        (opts->qmode == AL_QMODE_FILE &&
         (opts->qfile == NULL || opts->qfile->nqueues < 1))) {
        if (cause)
            *cause = al_xstrdup(cluster->gpu_capacity <= 0
                                    ? "the cluster has no GPUs"
                                    : "invalid simulation options");
        return AL_EINVAL;
    }
    sim_t s_ = { 0 }, *s = &s_;
    al__sim_init(s, trace, cluster, opts);
    al_sim_result_t *r = s->r;
    if (opts->timeseries)
        al__metrics_ts_header(s);

    int64_t now = s->njobs > 0 ? trace->jobs[0].submit : 0;
    int64_t prev = now;
    r->t_first = now;
    double last_progress = al__now_s();
    int64_t max_cycles = 64 * (int64_t)s->njobs + 1000;
    for (;;) {
        int64_t t = next_event(s, now);
        if (t == INT64_MAX) {
            /* Nothing will ever change: what still pends never starts. */
            drop_pending(s);
            break;
        }
        al__metrics_advance(s, prev, t);
        prev = now = t;
        apply_events(s, now);
        /* Cycles: again at once while the core evicts to make room. */
        for (int round = 0; round < 4 && s->npend > 0 && s->err == NULL;
             round++)
            if (al__cycle(s, now) == 0)
                break;
        if (s->err == NULL && r->cycles > max_cycles)
            al__sim_error(s, AL_ELIMIT,
                          "more than %lld cycles: the core keeps evicting and "
                          "restarting jobs",
                          (long long)max_cycles);
        if (s->err != NULL)
            break;
        after_cycles(s, now);
        progress(s, now, &last_progress, false);
    }
    progress(s, now, &last_progress, true);
    al__metrics_finish(s);
    al__stages_finish(s);
    r->wall_s = al__now_s() - wall0;
    if (s->err != NULL) {
        int rc = s->rc < 0 ? s->rc : AL_EINVAL;
        if (cause)
            *cause = s->err;
        else
            free(s->err);
        al__sim_free(s);
        al_sim_result_destroy(r);
        return rc;
    }
    al__sim_free(s);
    *out = r;
    return 0;
}

void
al_sim_result_destroy(al_sim_result_t *r)
{
    if (r == NULL)
        return;
    for (int q = 0; q < r->nqueues; q++)
        free(r->queues[q].name);
    free(r->queues);
    free(r->jobs);
    free(r);
}
