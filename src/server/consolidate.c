/*
 * consolidate.c -- consolidation: an optional pass (--consolidate SECONDS)
 * that moves running checkpointing jobs (`allot submit --checkpointing`,
 * preemptible) off a node when that frees the node for a waiting gang that
 * nothing else would place.
 *
 * The pass runs after a cycle that decided nothing, at most every
 * --consolidate seconds.  It takes the first job the core left waiting
 * for room (capacity, no node fits, topology, or behind its own
 * reservation), and for each node whose running jobs are all movable
 * (preemptible, checkpointing, their queue within its budget of
 * --consolidate-moves per hour), fewest GPUs held first and at most
 * MAX_TRIES nodes a pass, asks the core, with the same snapshot and
 * code path as a cycle, what would happen were those jobs pending again:
 * when the waiting job and every moved job would all start, without any
 * eviction, the jobs are requeued (their restart count goes up; the
 * event "moved" in their history says from where and for which job), and
 * the next cycle starts them as the core said.  One node per pass.
 *
 * The moves of the last hour are counted in memory: a restarted
 * controller starts its budget afresh.
 *
 * May call: the core, state.c (the requeue), common.  cycle.c calls it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

#define HOUR_MS INT64_C(3600000)
/* Nodes asked about per pass, at most: each question is a run of the
 * core, and a pass runs on the loop. */
#define MAX_TRIES 8

struct al__move {
    char *queue;
    int64_t at_ms; /* monotonic */
};

void
al__consolidate_fini(al_ctl_t *ctl)
{
    for (size_t i = 0; i < ctl->nmoves; i++)
        free(ctl->moves[i].queue);
    free(ctl->moves);
    ctl->moves = NULL;
    ctl->nmoves = 0;
}

/* Drops the moves older than an hour; counts queue q's. */
static int64_t
moves_of(al_ctl_t *ctl, const char *q, int64_t now)
{
    size_t k = 0;
    int64_t n = 0;
    for (size_t i = 0; i < ctl->nmoves; i++) {
        if (now - ctl->moves[i].at_ms >= HOUR_MS) {
            free(ctl->moves[i].queue);
            continue;
        }
        ctl->moves[k++] = ctl->moves[i];
        if (q != NULL && strcmp(ctl->moves[k - 1].queue, q) == 0)
            n++;
    }
    ctl->nmoves = k;
    return n;
}

static void
move_add(al_ctl_t *ctl, const char *q, int64_t now)
{
    ctl->moves =
        al_xreallocarray(ctl->moves, ctl->nmoves + 1, sizeof *ctl->moves);
    ctl->moves[ctl->nmoves].queue = al_xstrdup(q);
    ctl->moves[ctl->nmoves].at_ms = now;
    ctl->nmoves++;
}

typedef struct node_held {
    int64_t held; /* devices its running jobs hold */
    int node;
} node_held_t;

static int
by_held(const void *a, const void *b)
{
    const node_held_t *x = a, *y = b;
    if (x->held != y->held)
        return x->held < y->held ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

static bool
waits_for_room(al_reason_code_t code)
{
    return code == AL_WHY_CAPACITY || code == AL_WHY_NO_NODE ||
           code == AL_WHY_TOPOLOGY || code == AL_WHY_RESERVED;
}

static bool
on_node(const al_job_t *s, int node)
{
    for (int t = 0; t < s->ntasks; t++)
        if (s->placement[t].node == node)
            return true;
    return false;
}

/* Would moving the jobs marked in `moved` let job g and all of them
 * start, with no eviction? */
static bool
moves_work(const al_snapshot_t *snap, const bool *moved, int g)
{
    al_job_t *jobs = al_xcalloc((size_t)snap->njobs + 1, sizeof *jobs);
    memcpy(jobs, snap->jobs, (size_t)snap->njobs * sizeof *jobs);
    for (int i = 0; i < snap->njobs; i++) {
        if (!moved[i])
            continue;
        jobs[i].state = AL_JOB_PENDING;
        jobs[i].ntasks = 0;
        jobs[i].placement = NULL;
        jobs[i].lent = false;
        jobs[i].eligible_time = snap->now;
    }
    al_snapshot_t what_if = *snap;
    what_if.jobs = jobs;
    al_result_t *res = NULL;
    char *cause = NULL;
    bool ok = false;
    if (al_sched_run(&what_if, &res, &cause) == 0) {
        bool *started = al_xcalloc((size_t)snap->njobs + 1, sizeof *started);
        ok = true;
        for (int k = 0; k < res->ndecisions; k++) {
            const al_decision_t *d = &res->decisions[k];
            if (d->kind != AL_DEC_START)
                ok = false;
            else if (d->job >= 0 && d->job < snap->njobs)
                started[d->job] = true;
        }
        ok = ok && started[g];
        for (int i = 0; ok && i < snap->njobs; i++)
            ok = !moved[i] || started[i];
        free(started);
    } else {
        al_cause_free(&what_if, cause);
    }
    al_result_destroy(res);
    free(jobs);
    return ok;
}

void
al__consolidate(al_ctl_t *ctl, const al_snapshot_t *snap, al__job_t *const *act,
                const al_result_t *res)
{
    int64_t now = al_clock_mono_ms();
    if (ctl->opts.consolidate_s <= 0 || res->ndecisions > 0 ||
        (ctl->consol_last_ms != 0 &&
         now - ctl->consol_last_ms < ctl->opts.consolidate_s * 1000))
        return;
    ctl->consol_last_ms = now;
    int g = -1;
    for (int i = 0; i < snap->njobs && i < res->njobs && g < 0; i++)
        if (snap->jobs[i].state == AL_JOB_PENDING &&
            waits_for_room(res->reasons[i].code))
            g = i;
    if (g < 0)
        return;
    (void)moves_of(ctl, NULL, now);
    /* The nodes in order of the GPUs their jobs hold, fewest first: the
     * cheapest to free. */
    int nn = snap->nnodes;
    node_held_t *order = al_xcalloc((size_t)nn + 1, sizeof *order);
    for (int k = 0; k < nn; k++)
        order[k].node = k;
    for (int i = 0; i < snap->njobs; i++) {
        const al_job_t *s = &snap->jobs[i];
        for (int t = 0; s->state == AL_JOB_RUNNING && t < s->ntasks; t++)
            if (s->placement[t].node >= 0 && s->placement[t].node < nn)
                order[s->placement[t].node].held +=
                    __builtin_popcountll(s->placement[t].devices);
    }
    qsort(order, (size_t)nn, sizeof *order, by_held);
    bool *moved = al_xcalloc((size_t)snap->njobs + 1, sizeof *moved);
    int tries = 0;
    for (int o = 0; o < nn && tries < MAX_TRIES; o++) {
        int n = order[o].node;
        if (snap->nodes[n].state != AL_NODE_READY)
            continue;
        bool any = false, all_ok = true;
        memset(moved, 0, (size_t)snap->njobs * sizeof *moved);
        for (int i = 0; i < snap->njobs && all_ok; i++) {
            const al_job_t *s = &snap->jobs[i];
            if (s->state != AL_JOB_RUNNING || !on_node(s, n))
                continue;
            const al__job_t *j = act[i];
            all_ok = s->preemptible && j->checkpointing &&
                     moves_of(ctl, j->queue, now) < ctl->opts.consolidate_moves;
            moved[i] = true;
            any = true;
        }
        if (!any || !all_ok)
            continue;
        tries++;
        if (!moves_work(snap, moved, g))
            continue;
        const al__job_t *gj = act[g];
        for (int i = 0; i < snap->njobs; i++) {
            if (!moved[i])
                continue;
            al__job_t *j = act[i];
            char *d = al_xasprintf(
                "consolidation: moved off node %s to free it for job %llu "
                "(%d x %d GPUs waiting); restarts elsewhere from its "
                "checkpoint",
                snap->nodes[n].name, (unsigned long long)gj->id, gj->ntasks,
                gj->gpus);
            al_info("job %llu: %s", (unsigned long long)j->id, d);
            move_add(ctl, j->queue, now);
            al__ctl_requeue(ctl, j, "moved", d);
            free(d);
        }
        break;
    }
    free(moved);
    free(order);
}
