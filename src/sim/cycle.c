/*
 * cycle.c -- one core cycle of a run: a snapshot of every active job
 * (pending and running, in the active array's deterministic order) with
 * the policy's priorities and estimates, al_sched_run(), and its decisions
 * applied: evictions first, then starts; jobs the core says can never run
 * leave the run as unschedulable; the core's fair shares are kept for the
 * metrics.
 *
 * May call: jobs.c, policy.c, the core (al_sched_run), src/common.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "sim_int.h"

double
al__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs one core cycle at `now`; returns the number of evictions. */
int
al__cycle(sim_t *s, int64_t now)
{
    if (s->nact > s->capsj) {
        s->capsj = s->nact * 2;
        s->sj = al_xrealloc(s->sj, (size_t)s->capsj * sizeof(al_job_t));
        s->smap = al_xrealloc(s->smap, (size_t)s->capsj * sizeof(int));
    }
    /* The active array's order is deterministic (arrivals in trace order,
     * swap-removal), so the snapshot is too. */
    int n = 0;
    for (int a = 0; a < s->nact; a++)
        s->smap[n++] = s->act[a];
    for (int k = 0; k < n; k++) {
        int i = s->smap[k];
        const sjob_t *j = &s->jobs[i];
        const al_trace_job_t *tj = &s->tr->jobs[i];
        al_job_t *x = &s->sj[k];
        memset(x, 0, sizeof(*x));
        x->id = (uint64_t)i + 1;
        x->queue = j->cq;
        x->priority = al__policy_priority(s, j, now);
        x->preemptible = true;
        x->min_tasks = j->min_tasks;
        x->max_tasks = j->max_tasks;
        x->req.gpus = j->gpus;
        x->req.gpu_milli = j->milli;
        x->req.cpu_milli = j->cpu;
        x->submit_time = tj->submit;
        x->eligible_time = j->eligible;
        x->attained = j->served;
        int64_t rem = tj->duration - j->saved;
        if (s->pol->oracle)
            x->estimate = rem < 1 ? 1 : rem;
        else
            x->estimate =
                al__estimate_of(rem, s->o->estimate_factor, j->est_noise);
        x->topo_mode = AL_TOPO_NONE;
        if (j->state == S_RUNNING) {
            x->state = AL_JOB_RUNNING;
            x->start_time = j->start;
            /* The last checkpoint of this run: none before its restart
             * overhead is over (the run's start stands for it). */
            if (s->o->checkpoint > 0)
                x->checkpoint_time = now <= j->seg_start
                                         ? j->start
                                         : j->seg_start + (now - j->seg_start) /
                                                              s->o->checkpoint *
                                                              s->o->checkpoint;
            x->lent = j->lent;
            x->ntasks = j->ntasks;
            x->placement = j->place;
        } else {
            x->state = AL_JOB_PENDING;
        }
    }
    al__stages_snapshot(s, n);
    al_snapshot_t snap = {
        .now = now,
        .config = &s->cfg,
        .allocator = &s->allocator,
        .nnodes = s->cl->nnodes,
        .nodes = s->cl->nodes,
        .nqueues = s->ncq,
        .queues = s->cq,
        .njobs = n,
        .jobs = s->sj,
    };
    al_result_t *res = NULL;
    char *cause = NULL;
    double t0 = al__now_s();
    int rc = al_sched_run(&snap, &res, &cause);
    s->r->core_ms += (al__now_s() - t0) * 1000;
    s->r->cycles++;
    if (rc < 0) {
        al__sim_error(s, rc, "core cycle at t=%lld failed: %s: %s",
                      (long long)now, al_err_name(rc),
                      cause ? cause : al_strerror(rc));
        al_cause_free(&snap, cause);
        return 0;
    }
    int nev = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int d = 0; d < res->ndecisions; d++) {
            const al_decision_t *dec = &res->decisions[d];
            if (dec->job < 0 || dec->job >= n) {
                al__sim_error(s, AL_EINVAL, "core decision for job index %d",
                              dec->job);
                continue;
            }
            int i = s->smap[dec->job];
            sjob_t *j = &s->jobs[i];
            if (pass == 0 && dec->kind != AL_DEC_START) {
                if (j->state != S_RUNNING) {
                    al__sim_error(s, AL_EINVAL,
                                  "core evicted job %s (snapshot index %d, "
                                  "decision %d, why %d, for job %d) at t=%lld, "
                                  "but it is not running",
                                  s->tr->jobs[i].id, dec->job, d, (int)dec->why,
                                  dec->for_job, (long long)now);
                    continue;
                }
                if (dec->kind == AL_DEC_SHRINK) {
                    al__job_shrink(s, i, dec->ntasks, now);
                    continue;
                }
                al__job_evict(s, i, now);
                nev++;
            } else if (pass == 1 && dec->kind == AL_DEC_START) {
                if (j->state != S_PENDING) {
                    al__sim_error(
                        s, AL_EINVAL,
                        "core started job %s (snapshot index %d, "
                        "decision %d) at t=%lld, but it is not pending",
                        s->tr->jobs[i].id, dec->job, d, (long long)now);
                    continue;
                }
                al__job_start(s, i, dec, now);
            }
        }
    }
    /* Jobs the core says can never run leave the run as unschedulable. */
    if (res->reasons != NULL && res->njobs == n) {
        for (int k = 0; k < n; k++) {
            int i = s->smap[k];
            al_reason_code_t c = res->reasons[k].code;
            if (s->jobs[i].state == S_PENDING &&
                (c == AL_WHY_TOO_BIG || c == AL_WHY_NO_MATCH ||
                 c == AL_WHY_DEPS_NEVER || c == AL_WHY_BAD_QUEUE)) {
                al__job_unschedulable(s, i);
                al__stages_ended(s, i, now, false);
            }
        }
    }
    if (res->queues != NULL && res->nqueues == s->ncq)
        for (int q = 0; q < s->ncq; q++)
            s->cq_fair[q] = res->queues[q].fair[AL_RES_GPU];
    al_result_destroy(res);
    return nev;
}
