/*
 * consolidate.c -- consolidation: an optional pass (--consolidate SECONDS)
 * that moves running checkpointing jobs (`allot submit --checkpointing`,
 * preemptible) off a node, or out of one NVLink domain of a node, when
 * that frees the node or domain for a waiting gang that nothing else would
 * place.
 *
 * The pass runs after a cycle that decided nothing, at most every
 * --consolidate seconds.  It takes the first job the core left waiting
 * for room (capacity, no node fits, topology, or behind its own
 * reservation) and weighs candidate sets of moves: each node (the running
 * jobs on it) and, on a node whose GPUs report two or more NVLink domains,
 * each domain (the running jobs holding GPUs in it, which must hold no GPU
 * outside it nor run on another node).  A candidate counts when all its
 * jobs are movable (preemptible, checkpointing, their queue within its
 * budget of --consolidate-moves per hour) and it does not move exactly
 * what its node would.  Fewest moves first, then fewest GPUs held, at
 * most MAX_TRIES candidates a pass, it asks the core, with the same
 * snapshot and code path as a cycle, what would happen were those jobs
 * pending again: when the waiting job and every moved job would all
 * start, without any eviction, the jobs are requeued (their restart count
 * goes up; the event "moved" in their history says from which node or
 * domain and for which job), and the next cycle starts them as the core
 * said.  One candidate per pass.
 *
 * The moves of the last hour are counted in memory and read back on a
 * start from the "moved" events of the jobs' history in the store
 * (al__consolidate_load): a restarted controller, a kill -9 included,
 * keeps the budget it had spent.
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
/* Candidates asked about per pass, at most: each question is a run of
 * the core, and a pass runs on the loop. */
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

static void move_add(al_ctl_t *ctl, const char *q, int64_t now);

typedef struct load_arg {
    al_ctl_t *ctl;
    int64_t wall, mono;
} load_arg_t;

static int
load_move(void *arg, int ncols, const char *const *cols)
{
    load_arg_t *a = arg;
    if (ncols < 2 || cols[0] == NULL || cols[1] == NULL)
        return 0;
    const al__job_t *j =
        al__ctl_job(a->ctl, (uint64_t)strtoull(cols[0], NULL, 10));
    int64_t at = strtoll(cols[1], NULL, 10);
    /* A job no longer kept counts for no queue. */
    if (j != NULL && at <= a->wall)
        move_add(a->ctl, j->queue, a->mono - (a->wall - at));
    return 0;
}

void
al__consolidate_load(al_ctl_t *ctl)
{
    al__consolidate_fini(ctl);
    if (ctl->opts.consolidate_s <= 0)
        return;
    load_arg_t a = { .ctl = ctl,
                     .wall = al_clock_ms(),
                     .mono = al_clock_mono_ms() };
    char since[32];
    snprintf(since, sizeof since, "%lld", (long long)(a.wall - HOUR_MS));
    const char *v[] = { since };
    if (al__store_read(ctl, "moves_since", 1, v, load_move, &a) != 0)
        al_error("store: cannot read the last hour's moves; consolidation's "
                 "budget starts afresh");
    else if (ctl->nmoves > 0)
        al_info("consolidation: %zu moves of the last hour read back",
                ctl->nmoves);
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

/* A candidate set of moves: the running jobs on a node, or those inside
 * one NVLink domain of it (dom >= 0, its devices in `mask`). */
typedef struct cand {
    int nmoves;   /* jobs it moves */
    int64_t held; /* devices they hold */
    int node;
    int dom; /* NVLink domain id, -1 for the whole node */
    uint64_t mask;
} cand_t;

/* Fewest moves first, then fewest GPUs held: the cheapest to free. */
static int
by_cost(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->nmoves != y->nmoves)
        return x->nmoves < y->nmoves ? -1 : 1;
    if (x->held != y->held)
        return x->held < y->held ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->dom < y->dom ? -1 : x->dom > y->dom;
}

static bool
waits_for_room(al_reason_code_t code)
{
    return code == AL_WHY_CAPACITY || code == AL_WHY_NO_NODE ||
           code == AL_WHY_TOPOLOGY || code == AL_WHY_RESERVED;
}

/* The devices job s holds on node n. */
static uint64_t
devices_on(const al_job_t *s, int node)
{
    uint64_t m = 0;
    for (int t = 0; t < s->ntasks; t++)
        if (s->placement[t].node == node)
            m |= s->placement[t].devices;
    return m;
}

static bool
on_node(const al_job_t *s, int node)
{
    for (int t = 0; t < s->ntasks; t++)
        if (s->placement[t].node == node)
            return true;
    return false;
}

static bool
on_one_node(const al_job_t *s)
{
    for (int t = 1; t < s->ntasks; t++)
        if (s->placement[t].node != s->placement[0].node)
            return false;
    return true;
}

/* Does candidate k hold job s (running)? */
static bool
in_cand(const cand_t *k, const al_job_t *s)
{
    if (k->dom < 0)
        return on_node(s, k->node);
    return (devices_on(s, k->node) & k->mask) != 0;
}

/* Appends node n's candidates to cs at *nc: the node, then each of its
 * NVLink domains when it has two or more. */
static void
node_cands(const al_node_t *nd, int n, cand_t *cs, int *nc)
{
    int first = *nc;
    cs[(*nc)++] = (cand_t){ .node = n, .dom = -1 };
    for (int d = 0; d < nd->ndevices && d < AL_MAX_DEVICES; d++) {
        int id = nd->devices[d].nvlink;
        if (id < 0)
            continue;
        int k = first + 1;
        while (k < *nc && cs[k].dom != id)
            k++;
        if (k == *nc)
            cs[(*nc)++] = (cand_t){ .node = n, .dom = id };
        cs[k].mask |= UINT64_C(1) << d;
    }
    if (*nc - first < 3) /* one domain or none: the node says it all */
        *nc = first + 1;
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

/* Adds running job s to the candidates of the nodes it runs on (those of
 * node n from first[n] to first[n + 1]): its moves and GPUs; a candidate
 * is bad when the job cannot move or, for a domain, holds GPUs outside
 * it. */
static void
count_job(const al_job_t *s, bool movable, int nn, const int *first, cand_t *cs,
          bool *bad)
{
    bool one = on_one_node(s);
    for (int t = 0; t < s->ntasks; t++) {
        int n = s->placement[t].node;
        bool seen = n < 0 || n >= nn;
        for (int u = 0; u < t && !seen; u++)
            seen = s->placement[u].node == n;
        if (seen)
            continue;
        uint64_t m = devices_on(s, n);
        for (int k = first[n]; k < first[n + 1]; k++) {
            bool dom = cs[k].dom >= 0;
            if (dom && (m & cs[k].mask) == 0)
                continue;
            cs[k].nmoves++;
            cs[k].held += __builtin_popcountll(dom ? m & cs[k].mask : m);
            if (!movable || (dom && (!one || (m & ~cs[k].mask) != 0)))
                bad[k] = true;
        }
    }
}

/* Requeues the jobs marked in `moved`, out of candidate k, for job g. */
static void
move_jobs(al_ctl_t *ctl, const al_snapshot_t *snap, al__job_t *const *act,
          const bool *moved, int g, const cand_t *k, int64_t now)
{
    const al__job_t *gj = act[g];
    char *where = k->dom >= 0
                      ? al_xasprintf("out of NVLink domain %d on node %s",
                                     k->dom, snap->nodes[k->node].name)
                      : al_xasprintf("off node %s", snap->nodes[k->node].name);
    for (int i = 0; i < snap->njobs; i++) {
        if (!moved[i])
            continue;
        al__job_t *j = act[i];
        char *d = al_xasprintf(
            "consolidation: moved %s to free it for job %llu "
            "(%d x %d GPUs waiting); restarts elsewhere from its "
            "checkpoint",
            where, (unsigned long long)gj->id, gj->ntasks, gj->gpus);
        al_info("job %llu: %s", (unsigned long long)j->id, d);
        move_add(ctl, j->queue, now);
        al__ctl_requeue(ctl, j, "moved", d);
        free(d);
    }
    free(where);
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
    int nn = snap->nnodes;
    size_t most = 1; /* a node, and a domain per device at most */
    for (int n = 0; n < nn; n++)
        most +=
            1 +
            (size_t)(snap->nodes[n].ndevices > 0 ? snap->nodes[n].ndevices : 0);
    cand_t *cs = al_xcalloc(most, sizeof *cs);
    int *first = al_xcalloc((size_t)nn + 1, sizeof *first);
    bool *bad = NULL;
    int nc = 0;
    for (int n = 0; n < nn; n++) {
        first[n] = nc;
        node_cands(&snap->nodes[n], n, cs, &nc);
    }
    first[nn] = nc;
    /* Count each candidate's moves and GPUs, and which are bad. */
    bad = al_xcalloc((size_t)nc + 1, sizeof *bad);
    for (int i = 0; i < snap->njobs; i++) {
        const al_job_t *s = &snap->jobs[i];
        if (s->state != AL_JOB_RUNNING)
            continue;
        const al__job_t *j = act[i];
        bool movable =
            s->preemptible && j->checkpointing &&
            moves_of(ctl, j->queue, now) < ctl->opts.consolidate_moves;
        count_job(s, movable, nn, first, cs, bad);
    }
    /* Keep the good ones; a domain that moves what its whole node would
     * is the node again. */
    cand_t *good = al_xcalloc((size_t)nc + 1, sizeof *good);
    int ng = 0;
    for (int k = 0; k < nc; k++) {
        const cand_t *node = &cs[first[cs[k].node]];
        bool node_ok = !bad[first[cs[k].node]];
        if (bad[k] || cs[k].nmoves == 0 ||
            snap->nodes[cs[k].node].state != AL_NODE_READY ||
            (cs[k].dom >= 0 && node_ok && cs[k].nmoves == node->nmoves))
            continue;
        good[ng++] = cs[k];
    }
    qsort(good, (size_t)ng, sizeof *good, by_cost);
    bool *moved = al_xcalloc((size_t)snap->njobs + 1, sizeof *moved);
    for (int o = 0; o < ng && o < MAX_TRIES; o++) {
        const cand_t *k = &good[o];
        for (int i = 0; i < snap->njobs; i++)
            moved[i] = snap->jobs[i].state == AL_JOB_RUNNING &&
                       in_cand(k, &snap->jobs[i]);
        if (!moves_work(snap, moved, g))
            continue;
        move_jobs(ctl, snap, act, moved, g, k, now);
        break;
    }
    free(moved);
    free(good);
    free(bad);
    free(first);
    free(cs);
}
