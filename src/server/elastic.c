/*
 * elastic.c -- elastic jobs in the controller: a gang of min..max tasks
 * (the body's tasks and max_tasks, `allot submit --tasks 2..8`) that the
 * core starts with as many tasks as fit, up to max; that shrinks toward
 * min when another queue reclaims (the core's AL_DEC_SHRINK, before it
 * evicts any whole job); and that grows into idle GPUs.
 *
 * How the job sees its size: a resize is a restart of the whole gang at
 * its new size, as torch elastic expects (torchrun --nnodes MIN:MAX): the
 * job is requeued (its restart count, ALLOT_RESTART_COUNT, goes up by
 * one, and the event "resized" with the old and new sizes goes into its
 * history), and the next cycle starts it again, its tasks seeing the new
 * WORLD_SIZE.  A job that should keep its progress checkpoints, as any
 * preemptible job does.
 *
 * Growing: after a cycle that decided nothing and left no job waiting
 * that could start, each running elastic job below its max is tried in
 * the core as if it were pending (the same snapshot, the same code path);
 * when the core would start it with more tasks, and with no eviction, it
 * is requeued to grow.  At most one job grows per cycle, and a job is
 * tried at most every GROW_EVERY_MS.  A suspended job does not grow.
 *
 * May call: the core, state.c (the requeue), common.  cycle.c calls it.
 * The job's fields in bodies, documents and the snapshot: elasticdoc.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

#define GROW_EVERY_MS 2000

void
al__elastic_shrink(al_ctl_t *ctl, al__job_t *j, int stop, const char *why,
                   uint64_t for_job)
{
    int to = j->ntasks - stop;
    char *d =
        for_job != 0
            ? al_xasprintf("shrinking from %d to %d tasks: %s (for job "
                           "%llu); restarts at its new size",
                           j->ntasks, to, why, (unsigned long long)for_job)
            : al_xasprintf("shrinking from %d to %d tasks: %s; "
                           "restarts at its new size",
                           j->ntasks, to, why);
    al__ctl_requeue(ctl, j, "resized", d);
    free(d);
}

/* Would the core start job i (running now, shown pending) with more
 * tasks than it has, and evict nothing for it?  Returns that size, or 0. */
static int
grown_size(al_ctl_t *ctl, const al_snapshot_t *snap, int i)
{
    al_job_t *jobs = al_xcalloc((size_t)snap->njobs + 1, sizeof *jobs);
    memcpy(jobs, snap->jobs, (size_t)snap->njobs * sizeof *jobs);
    jobs[i].state = AL_JOB_PENDING;
    jobs[i].ntasks = 0;
    jobs[i].placement = NULL;
    jobs[i].lent = false;
    al_snapshot_t what_if = *snap;
    what_if.jobs = jobs;
    al_result_t *res = NULL;
    char *cause = NULL;
    int size = 0;
    if (al_sched_run(&what_if, &res, &cause) != 0) {
        al_cause_free(&what_if, cause);
        free(jobs);
        return 0;
    }
    bool evicts = false;
    for (int k = 0; k < res->ndecisions; k++) {
        const al_decision_t *d = &res->decisions[k];
        if (d->kind != AL_DEC_START)
            evicts = true;
        else if (d->job == i)
            size = d->ntasks;
    }
    al_result_destroy(res);
    free(jobs);
    (void)ctl;
    return evicts || size <= snap->jobs[i].ntasks ? 0 : size;
}

bool
al__elastic_grow(al_ctl_t *ctl, const al_snapshot_t *snap,
                 al__job_t *const *act, const al_result_t *res)
{
    if (res->ndecisions > 0)
        return false; /* the state moved: the snapshot is out of date */
    for (int i = 0; i < snap->njobs; i++) {
        const al_job_t *s = &snap->jobs[i];
        if (s->state == AL_JOB_PENDING && s->dep_state != AL_DEPS_WAITING &&
            s->dep_state != AL_DEPS_NEVER)
            return false; /* idle GPUs go to waiting jobs first */
    }
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < snap->njobs; i++) {
        const al_job_t *s = &snap->jobs[i];
        al__job_t *j = act[i];
        /* A suspended job does no work: growing it would restart it to
         * hold more GPUs idle. */
        if (s->state != AL_JOB_RUNNING || j->max_tasks <= 0 || j->suspended ||
            s->ntasks >= j->max_tasks ||
            (j->grow_tried_ms != 0 && now - j->grow_tried_ms < GROW_EVERY_MS))
            continue;
        j->grow_tried_ms = now;
        int to = grown_size(ctl, snap, i);
        if (to == 0)
            continue;
        char *d = al_xasprintf("growing from %d to %d tasks into idle GPUs; "
                               "restarts at its new size",
                               j->ntasks, to);
        al_info("job %llu: %s", (unsigned long long)j->id, d);
        al__ctl_requeue(ctl, j, "resized", d);
        free(d);
        return true;
    }
    return false;
}
