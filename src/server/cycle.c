/*
 * cycle.c -- one scheduling cycle: build an al_snapshot_t from the
 * controller's memory, run the core, apply its decisions (start, evict),
 * and keep every pending job's reason and every queue's share for the API.
 * Runs on the loop thread, inside the iteration's store transaction.
 *
 * May call: the core, array.c (arrays' elements given jobs before the
 * snapshot), depend.c (Slurm's dependencies), state.c (every start, eviction
 * and requeue), table.c and reason.c.  The loop calls al__cycle_run(); nothing
 * here calls back into the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

/* Queue order for the snapshot: a parent before its children.  Fills
 * order[] (snapshot index -> ctl index) and map[] (ctl index -> snapshot
 * index); a queue whose parent is unknown (or in a cycle) becomes a top
 * level queue. */
static void
order_queues(const al_ctl_t *ctl, int *order, int *map, int *parent)
{
    int n = ctl->nqueues, done = 0;
    for (int i = 0; i < n; i++)
        map[i] = -1;
    for (bool progress = true; progress && done < n;) {
        progress = false;
        for (int i = 0; i < n; i++) {
            if (map[i] >= 0)
                continue;
            const char *pname = ctl->queues[i].parent;
            int p = -1;
            bool known = false;
            if (pname != NULL && pname[0] != '\0') {
                for (int k = 0; k < n; k++) {
                    if (strcmp(ctl->queues[k].name, pname) == 0) {
                        known = true;
                        p = k;
                        break;
                    }
                }
            }
            if (known && map[p] < 0)
                continue; /* parent not placed yet */
            parent[done] = known ? map[p] : -1;
            map[i] = done;
            order[done++] = i;
            progress = true;
        }
    }
    for (int i = 0; i < n; i++) {
        if (map[i] < 0) {
            parent[done] = -1;
            map[i] = done;
            order[done++] = i;
        }
    }
}

static char *
placement_text(const al_ctl_t *ctl, const al__job_t *j)
{
    char buf[1024];
    size_t off = 0;
    buf[0] = '\0';
    for (int t = 0; t < j->ntasks && off < sizeof buf - 64; t++) {
        const al__task_t *tk = &j->tasks[t];
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%stask %d on %s",
                                t ? "; " : "", t, ctl->nodes[tk->node].name);
        int first = 1;
        for (int d = 0; d < AL_MAX_DEVICES && off < sizeof buf - 8; d++) {
            if (tk->devices & ((uint64_t)1 << d)) {
                off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%d",
                                        first ? " gpus " : ",", d);
                first = 0;
            }
        }
    }
    return al_xstrdup(buf);
}

/* The snapshot being built and the arrays it points into; everything is
 * released by build_fini(). */
typedef struct build {
    al_snapshot_t snap;
    al_config_t cfg;
    int *qorder, *qmap, *qparent;
    bool *has_child;
    al_queue_t *sq;
    al_node_t *sn;
    al_job_t *sj;
    al__job_t **act; /* snapshot job index -> controller job */
    al_placement_t *pl;
    al_dep_t *deps;
    size_t nedges; /* in deps */
    size_t nj;
    /* By snapshot queue: what the elements of its arrays that have no job
     * yet ask for (they are not in the snapshot), added to its demand. */
    int64_t (*unborn)[AL_NRES];
} build_t;

static void
build_queues(const al_ctl_t *ctl, build_t *b)
{
    int nq = ctl->nqueues;
    b->qorder = al_xcalloc((size_t)nq + 1, sizeof *b->qorder);
    b->qmap = al_xcalloc((size_t)nq + 1, sizeof *b->qmap);
    b->qparent = al_xcalloc((size_t)nq + 1, sizeof *b->qparent);
    order_queues(ctl, b->qorder, b->qmap, b->qparent);
    b->sq = al_xcalloc((size_t)nq + 1, sizeof *b->sq);
    b->has_child = al_xcalloc((size_t)nq + 1, sizeof *b->has_child);
    for (int i = 0; i < nq; i++) {
        const al__queue_t *q = &ctl->queues[b->qorder[i]];
        b->sq[i].name = q->name;
        b->sq[i].parent = b->qparent[i];
        b->sq[i].priority = q->priority;
        memcpy(b->sq[i].quota, q->quota, sizeof b->sq[i].quota);
        b->sq[i].usage = q->usage;
        b->sq[i].build_capped = q->build_capped;
        b->sq[i].build_cap = q->build_cap;
        b->sq[i].nmodel_quotas = q->nmquotas;
        b->sq[i].model_quotas = q->mquotas;
        if (b->qparent[i] >= 0)
            b->has_child[b->qparent[i]] = true;
    }
}

static void
build_nodes(al_ctl_t *ctl, build_t *b)
{
    b->sn = al_xcalloc((size_t)ctl->nnodes + 1, sizeof *b->sn);
    for (int i = 0; i < ctl->nnodes; i++) {
        const al__node_t *n = &ctl->nodes[i];
        al_node_t *s = &b->sn[i];
        s->name = n->name;
        s->gpu_model = n->ngpus > 0 ? n->gpus[0].model : NULL;
        s->state = n->state == NS_DOWN ? AL_NODE_DOWN
                   : n->drained        ? AL_NODE_DRAINING
                                       : AL_NODE_READY;
        s->cpu_milli = n->cpu_milli;
        s->mem_bytes = n->mem_bytes;
        s->ndevices = n->ngpus;
        s->devices = n->devices;
        s->fenced = n->gpu_bad; /* faulty GPUs (gpuhealth.c) */
        al__pools_node_snap(&ctl->pools, &ctl->nodes[i], s);
    }
}

/* The snapshot index of job j's queue, or -1 (unknown, or not a leaf).
 * The queue's index is cached in the job until the queues change. */
static int
job_queue(const al_ctl_t *ctl, const build_t *b, al__job_t *j)
{
    if (j->qgen != ctl->queue_gen + 1) {
        j->qidx = -1;
        for (int k = 0; k < ctl->nqueues; k++)
            if (strcmp(ctl->queues[k].name, j->queue) == 0)
                j->qidx = k;
        j->qgen = ctl->queue_gen + 1; /* 0 never matches: new jobs look */
    }
    if (j->qidx < 0)
        return -1;
    int qi = b->qmap[j->qidx];
    return b->has_child[qi] ? -1 : qi;
}

static al_dep_state_t
dep_state(al_ctl_t *ctl, const al__job_t *j)
{
    al_dep_state_t slurm = al__depend_state(ctl, j);
    if (j->nafter == 0 || slurm == AL_DEPS_NEVER)
        return slurm;
    al_dep_state_t st =
        slurm == AL_DEPS_WAITING ? AL_DEPS_WAITING : AL_DEPS_SATISFIED;
    for (int d = 0; d < j->nafter; d++) {
        const al__job_t *dj = al__ctl_job(ctl, j->after[d]);
        if (dj == NULL || al__jstate_failed(dj->state) ||
            dj->state == JS_CANCELLED)
            return AL_DEPS_NEVER;
        if (dj->state != JS_COMPLETED)
            st = AL_DEPS_WAITING;
    }
    return st;
}

/* Which dependency of j can never be met, and why, or NULL. */
static char *
never_why(al_ctl_t *ctl, const al__job_t *j)
{
    for (int d = 0; d < j->nafter; d++) {
        const al__job_t *dj = al__ctl_job(ctl, j->after[d]);
        if (dj == NULL || al__jstate_failed(dj->state) ||
            dj->state == JS_CANCELLED)
            return al_xasprintf(
                "after %llu: job %llu %s", (unsigned long long)j->after[d],
                (unsigned long long)j->after[d],
                dj == NULL ? "does not exist" : al__jstate_names[dj->state]);
    }
    return al__depend_never_why(ctl, j);
}

/* Fills snapshot job s from controller job j, whose dependencies stand
 * at ds; placements go to b->pl. */
static void
fill_job(al_ctl_t *ctl, build_t *b, al__job_t *j, int qi, al_dep_state_t ds,
         size_t *npl)
{
    al_job_t *s = &b->sj[b->nj];
    const al__jclass_t *c = &al__jclasses[j->cls];
    s->id = j->id;
    s->queue = qi;
    s->priority = c->priority;
    /* Slurm's Priority (an admin's, absolute) or Nice (less is more). */
    s->prio_adjust =
        j->prio_fixed ? j->prio_value - c->priority : -(int64_t)j->nice;
    s->preemptible = c->preemptible;
    s->build = c->build;
    s->min_tasks = s->max_tasks = j->ntasks;
    s->req.gpus = j->gpus;
    s->req.gpu_milli = j->gpus == 0 ? j->gpu_milli : 0;
    s->req.gpu_mem = j->gpus == 0 ? j->gpu_mem : 0;
    s->req.cpu_milli = j->cpu_milli;
    s->req.mem_bytes = j->mem_bytes;
    s->req.gpu_model = j->gpu_model;
    al__pools_job_snap(&ctl->pools, j, s);
    al__elastic_snap(j, s);
    s->submit_time = j->submit_ms / 1000;
    s->eligible_time = j->eligible_ms / 1000;
    s->attained = j->attained;
    s->time_limit = j->time_limit;
    /* Whole seconds from a start in ms: one more when the start was
     * inside a second, so that a job is never a victim before it ran its
     * minimum in full. */
    s->min_runtime = al__job_min_runtime(ctl, j);
    if (s->min_runtime > 0 && j->start_ms % 1000 != 0)
        s->min_runtime++;
    s->state = j->state == JS_RUNNING ? AL_JOB_RUNNING
               : j->state == JS_HELD  ? AL_JOB_HELD
                                      : AL_JOB_PENDING;
    s->dep_state = ds;
    if (j->state == JS_RUNNING) {
        s->start_time = j->start_ms / 1000;
        s->ntasks = j->ntasks;
        s->placement = &b->pl[*npl];
        for (int t = 0; t < j->ntasks; t++, (*npl)++) {
            b->pl[*npl].node = j->tasks[t].node;
            b->pl[*npl].gpu_milli = j->tasks[t].gpu_milli;
            b->pl[*npl].devices = j->tasks[t].devices;
            b->pl[*npl].gpu_mem = j->tasks[t].gpu_mem;
        }
    }
    j->snap = (int)b->nj;
    b->act[b->nj++] = j;
}

/* An array's "%N" as the snapshot is built: how many more of its pending
 * elements may be offered to the core.  The limit is kept here, on what
 * may start, and not only by how many elements array.c has given jobs,
 * because a user who names an element (hold, release) gives it its job
 * whatever the limit. */
typedef struct turn {
    uint64_t parent; /* the array whose elements come next, or 0 */
    int64_t left;    /* how many more of them may start */
} turn_t;

/* Sets t for the elements of p, which follow it in id order: every one
 * running counts, those a user named past the others included (a look
 * over the slots the cycle walks anyway). */
static void
turn_start(al_ctl_t *ctl, turn_t *t, const al__job_t *p)
{
    const al__array_t *a = p->array;
    t->parent = a->as.limit > 0 ? p->id : 0;
    t->left = a->as.limit;
    for (int64_t k = a->done_k; t->parent != 0 && k < a->as.count; k++) {
        const al__job_t *e = ctl->jobs[p->id + (uint64_t)k];
        if (e != NULL && e->state == JS_RUNNING)
            t->left--;
    }
}

/* Whether pending element j (its dependencies at ds) may be in the
 * snapshot: within its array's limit, taken in index order.  One that
 * cannot start anyway (held, or waiting on a dependency) takes no turn:
 * "%N" is how many run, as in Slurm.  One left out says why. */
static bool
array_turn(al_ctl_t *ctl, turn_t *t, al__job_t *j, al_dep_state_t ds)
{
    if (j->array_wait) {
        j->array_wait = false;
        al__jobcounts_sync(ctl, j);
    }
    if (j->array_job == 0 || j->array_job != t->parent ||
        j->state != JS_PENDING || ds == AL_DEPS_WAITING || ds == AL_DEPS_NEVER)
        return true;
    if (t->left > 0) {
        t->left--;
        return true;
    }
    j->array_wait = true;
    const al__job_t *p = al__ctl_job(ctl, j->array_job);
    char *why = al_xasprintf("waiting for its turn in array %llu (at most "
                             "%lld elements at once)",
                             (unsigned long long)j->array_job,
                             p != NULL ? (long long)p->array->as.limit : 0LL);
    if (j->why_valid || j->reason == NULL || strcmp(j->reason, why) != 0) {
        free(j->reason);
        j->reason = why;
        why = NULL;
    }
    free(why);
    j->why_valid = false;
    al__jobcounts_sync(ctl, j);
    return false;
}

/* One dependency edge of snapshot job i: on controller job dj, when w.
 * An edge on an array's parent (never in the snapshot) goes to each of
 * its elements that is, so that what needs the array stage counts in the
 * critical path of its elements and of what they wait for. */
static void
add_edge(al_ctl_t *ctl, build_t *b, size_t *cap, size_t i, uint64_t id,
         al_dep_when_t w)
{
    const al__job_t *dj = al__ctl_job(ctl, id);
    uint64_t lo = id, hi = id;
    if (dj == NULL)
        return;
    if (dj->array != NULL && dj->state <= JS_RUNNING) {
        /* Only the elements that have a job and have not ended. */
        lo = id + 1 + (uint64_t)dj->array->done_k;
        hi = id + (uint64_t)dj->array->next_k;
    }
    for (uint64_t k = lo; k <= hi; k++) {
        const al__job_t *x = al__ctl_job(ctl, k);
        if (x == NULL || x->snap < 0)
            continue;
        if (b->nedges == *cap) {
            *cap = *cap * 2 + 16;
            b->deps = al_xrealloc(b->deps, *cap * sizeof *b->deps);
        }
        b->deps[b->nedges].job = x->snap;
        b->deps[b->nedges].when = w;
        b->nedges++;
        b->sj[i].ndeps++;
    }
}

/* Dependency edges by snapshot index, for the core's critical path and
 * look-ahead: `after` (afterok) and Slurm's dependencies (afterany as
 * always, afternotok as failure, aftercorr as success; singleton has no
 * job to point at).  An array's element also says how many rounds of
 * the array are left (elements not ended over its "%" limit, rounded
 * up), so that the stage counts as the time it takes whole. */
static void
build_edges(al_ctl_t *ctl, build_t *b)
{
    size_t cap = 0;
    size_t *first = al_xcalloc(b->nj + 1, sizeof *first);
    b->deps = NULL;
    b->nedges = 0;
    for (size_t i = 0; i < b->nj; i++) {
        const al__job_t *j = b->act[i];
        first[i] = b->nedges;
        for (int d = 0; d < j->nafter; d++)
            add_edge(ctl, b, &cap, i, j->after[d], AL_EDGE_SUCCESS);
        for (int d = 0; d < j->ndeps; d++) {
            const al_depspec_t *ds = &j->deps[d];
            if (ds->kind == AL_DEP_SINGLETON)
                continue;
            add_edge(ctl, b, &cap, i, ds->job,
                     ds->kind == AL_DEP_AFTERANY     ? AL_EDGE_ALWAYS
                     : ds->kind == AL_DEP_AFTERNOTOK ? AL_EDGE_FAILURE
                                                     : AL_EDGE_SUCCESS);
        }
        const al__job_t *p =
            j->array_job != 0 ? al__ctl_job(ctl, j->array_job) : NULL;
        if (p != NULL && p->array != NULL) {
            const al__array_t *a = p->array;
            int64_t left = a->as.count - a->done_k;
            int64_t par = a->as.limit > 0 ? a->as.limit : left;
            if (left > 0 && par > 0)
                b->sj[i].array_waves =
                    (int32_t)((left + par - 1) / par > INT32_MAX
                                  ? INT32_MAX
                                  : (left + par - 1) / par);
        }
    }
    /* The array may have moved while it grew: point at it only now. */
    for (size_t i = 0; i < b->nj; i++)
        b->sj[i].deps = b->deps != NULL ? &b->deps[first[i]] : NULL;
    free(first);
}

/* Active jobs (pending, held, running) in id order, so that the snapshot
 * and therefore the decisions are deterministic. */
static void
build_jobs(al_ctl_t *ctl, build_t *b, int64_t now_ms)
{
    size_t cap = 0, ntask = 0;
    uint64_t lo = al__ctl_first_active(ctl);
    for (uint64_t i = lo; i < ctl->njobs; i++) {
        al__job_t *j = ctl->jobs[i];
        if (j == NULL)
            continue;
        j->snap = -1;
        if (j->state <= JS_RUNNING && j->array == NULL) {
            cap++;
            ntask += (size_t)j->ntasks;
        }
    }
    b->sj = al_xcalloc(cap + 1, sizeof *b->sj);
    /* An array of pointers: sizeof(void *) is the size of each element. */
    b->act = al_xcalloc(cap + 1, sizeof(void *));
    b->pl = al_xcalloc(ntask + 1, sizeof *b->pl);
    size_t npl = 0;
    turn_t turn = { .parent = 0, .left = 0 };
    b->unborn = al_xcalloc((size_t)ctl->nqueues + 1, sizeof *b->unborn);
    const al__job_t *owner = NULL; /* a pending array, its slots next */
    uint64_t owner_end = 0;        /* the id of its last element */
    int owner_q = -1;
    for (uint64_t i = lo; i < ctl->njobs; i++) {
        al__job_t *j = ctl->jobs[i];
        if (owner != NULL && i + 1 > owner_end)
            owner = NULL;
        if (j != NULL && j->array != NULL && j->state <= JS_RUNNING) {
            turn_start(ctl, &turn, j);
            owner = j->state == JS_PENDING ? j : NULL;
            owner_end = j->id + (uint64_t)j->array->as.count;
            owner_q = owner != NULL ? job_queue(ctl, b, j) : -1;
        }
        if (j == NULL && owner != NULL && owner_q >= 0) {
            int64_t *u = b->unborn[owner_q];
            u[AL_RES_GPU] += (int64_t)owner->ntasks *
                             (owner->gpus > 0 ? owner->gpus * AL_GPU_MILLI
                                              : owner->gpu_milli);
            u[AL_RES_CPU] += owner->ntasks * owner->cpu_milli;
            u[AL_RES_MEM] += owner->ntasks * owner->mem_bytes;
        }
        if (j == NULL || j->state > JS_RUNNING || j->array != NULL)
            continue; /* an array's parent: its elements are scheduled */
        int qi = job_queue(ctl, b, j);
        if (qi < 0) {
            /* The core would reject the whole snapshot. */
            j->why_valid = false;
            al__jobcounts_sync(ctl, j);
            free(j->reason);
            j->reason = al_xasprintf("queue %s does not exist or is not a "
                                     "leaf",
                                     j->queue);
            continue;
        }
        if (j->state == JS_RUNNING &&
            (j->tasks == NULL || j->tasks[0].node < 0))
            continue;
        /* lifecycle.c: a dependency never met fails the job at once; a
         * retry waits out its back-off. */
        al_dep_state_t ds = dep_state(ctl, j);
        if (j->state != JS_RUNNING && ds == AL_DEPS_NEVER) {
            char *why = never_why(ctl, j);
            al__lifecycle_dep_never(ctl, j, why);
            free(why);
            continue;
        }
        if (al__lifecycle_waits(j, now_ms)) {
            al__jobcounts_sync(ctl, j); /* its reason is its own now */
            continue;
        }
        if (!array_turn(ctl, &turn, j, ds))
            continue;
        fill_job(ctl, b, j, qi, ds, &npl);
    }
    build_edges(ctl, b);
}

static void
build_fini(build_t *b)
{
    free(b->qorder);
    free(b->qmap);
    free(b->qparent);
    free(b->sq);
    free(b->has_child);
    free(b->sn);
    free(b->sj);
    free(b->act);
    free(b->pl);
    free(b->deps);
    free(b->unborn);
}

/* Whether decision d's start of j waits for a stopping task: j's previous
 * run, or one on the GPUs d gives it (leaving.c); the next cycles decide
 * again once the agents said they ended. */
static bool
any_leaving(const al_ctl_t *ctl)
{
    for (int i = 0; i < ctl->nnodes; i++)
        if (ctl->nodes[i].nleaving > 0)
            return true;
    return false;
}

/* any: whether any_leaving() (taken once a cycle: a start adds nothing
 * that stops, and a look over every node for each start was a pass over
 * the cluster per job). */
static bool
start_waits(const al_ctl_t *ctl, const al__job_t *j, const al_decision_t *d,
            bool any)
{
    if (!any)
        return false; /* the usual case: nothing is stopping */
    int *nodes = al_xcalloc((size_t)d->ntasks, sizeof *nodes);
    uint64_t *devices = al_xcalloc((size_t)d->ntasks, sizeof *devices);
    for (int t = 0; t < d->ntasks; t++) {
        nodes[t] = d->tasks[t].node;
        devices[t] = d->tasks[t].devices;
    }
    bool waits = al__leaving_blocks(ctl, j, d->ntasks, nodes, devices);
    free(nodes);
    free(devices);
    return waits;
}

/* Evictions first, so that a node's desired set drops the victims in the
 * same reply that adds the jobs taking their place. */
static void
apply_evictions(al_ctl_t *ctl, const build_t *b, const al_result_t *res)
{
    for (int i = 0; i < res->ndecisions; i++) {
        const al_decision_t *d = &res->decisions[i];
        if ((d->kind != AL_DEC_EVICT && d->kind != AL_DEC_SHRINK) ||
            d->job < 0 || (size_t)d->job >= b->nj)
            continue;
        al__job_t *j = b->act[d->job];
        if (j->state != JS_RUNNING)
            continue;
        if (d->kind == AL_DEC_SHRINK) {
            al__elastic_shrink(ctl, j, d->ntasks,
                               d->why <= AL_EVICT_RESERVATION
                                   ? al__evict_reasons[d->why]
                                   : "evicted",
                               d->for_job >= 0 && (size_t)d->for_job < b->nj
                                   ? b->act[d->for_job]->id
                                   : 0);
            continue;
        }
        const char *why = d->why <= AL_EVICT_RESERVATION
                              ? al__evict_reasons[d->why]
                              : "evicted";
        const al__job_t *fj = d->for_job >= 0 && (size_t)d->for_job < b->nj
                                  ? b->act[d->for_job]
                                  : NULL;
        char *detail;
        if (fj != NULL && d->why == AL_EVICT_RECLAIM) {
            /* Who took what back: the event streams and histories say
             * "queue joe reclaimed 2 GPUs (for job 5)". */
            char gpus[32];
            if (j->gpus > 0)
                snprintf(gpus, sizeof gpus, "%lld GPU%s",
                         (long long)j->gpus * j->ntasks,
                         (long long)j->gpus * j->ntasks == 1 ? "" : "s");
            else
                snprintf(gpus, sizeof gpus, "%.2f GPU",
                         j->gpu_milli * j->ntasks / 1000.0);
            detail = al_xasprintf("queue %s reclaimed %s (for job %llu)",
                                  fj->queue, gpus, (unsigned long long)fj->id);
        } else if (fj != NULL) {
            detail = al_xasprintf("%s (for job %llu)", why,
                                  (unsigned long long)fj->id);
        } else {
            detail = al_xstrdup(why);
        }
        if (d->why <= AL_EVICT_RESERVATION)
            ctl->counters.evicted[d->why][d->requeue ? 1 : 0]++;
        if (d->requeue)
            al__ctl_requeue(ctl, j, "preempted", detail);
        else
            al__ctl_set_state(ctl, j, JS_FAILED, "evicted", detail);
        free(detail);
    }
}

static void
apply_starts(al_ctl_t *ctl, const build_t *b, const al_result_t *res,
             int64_t now_ms)
{
    bool leaving = any_leaving(ctl);
    for (int i = 0; i < res->ndecisions; i++) {
        const al_decision_t *d = &res->decisions[i];
        if (d->kind != AL_DEC_START || d->job < 0 || (size_t)d->job >= b->nj)
            continue;
        al__job_t *j = b->act[d->job];
        if (j->state != JS_PENDING || d->ntasks <= 0 ||
            start_waits(ctl, j, d, leaving))
            continue;
        free(j->tasks);
        j->ntasks = d->ntasks;
        j->tasks = al_xcalloc((size_t)d->ntasks, sizeof *j->tasks);
        for (int t = 0; t < d->ntasks; t++) {
            j->tasks[t].node = d->tasks[t].node;
            j->tasks[t].devices = d->tasks[t].devices;
            j->tasks[t].gpu_milli = d->tasks[t].gpu_milli;
            j->tasks[t].gpu_mem = d->tasks[t].gpu_mem;
            j->tasks[t].log_size = -1;
        }
        j->start_ms = now_ms;
        al__ctl_pick_master_port(ctl, j);
        free(j->reason);
        j->reason = NULL;
        char *detail = placement_text(ctl, j);
        al__ctl_set_state(ctl, j, JS_RUNNING, "started", detail);
        free(detail);
    }
}

/* Reasons of the jobs still waiting, and the queues' shares: kept in
 * memory for the API (a reason changes too often to be worth a write), as
 * the core's structs; al__job_reason() formats the ones shown. */
static void
keep_reasons(al_ctl_t *ctl, const build_t *b, const al_result_t *res)
{
    for (size_t i = 0; i < b->nj && (int)i < res->njobs; i++) {
        al__job_t *j = b->act[i];
        if (j->state != JS_PENDING && j->state != JS_HELD)
            continue;
        al_reason_t key = res->reasons[i];
        key.queue = key.queue >= 0 && key.queue < res->nqueues
                        ? b->qorder[key.queue]
                        : -1;
        j->why_job =
            key.job >= 0 && (size_t)key.job < b->nj ? b->act[key.job]->id : 0;
        key.job = j->why_job != 0 ? 0 : -1;
        j->why = key;
        j->why_valid = true;
        al__jobcounts_sync(ctl, j);
    }
    ctl->reason_now = b->snap.now;
    if (ctl->reason_qgen != ctl->queue_gen + 1) {
        al__reason_fini(ctl);
        ctl->reason_qnames =
            al_xcalloc((size_t)ctl->nqueues + 1, sizeof(char *));
        for (int i = 0; i < ctl->nqueues; i++)
            ctl->reason_qnames[i] = al_xstrdup(ctl->queues[i].name);
        ctl->reason_nq = ctl->nqueues;
        ctl->reason_qgen = ctl->queue_gen + 1;
    }
    for (int i = 0; i < ctl->nqueues && i < res->nqueues; i++)
        ctl->queues[b->qorder[i]].share = res->queues[i];
    /* The demand of arrays' elements without jobs yet, up the tree as the
     * core sums its own: the backlog a queue has, which the API shows. */
    for (int i = 0; i < ctl->nqueues && i < res->nqueues; i++)
        for (int q = i; q >= 0; q = b->qparent[q])
            for (int r = 0; r < AL_NRES; r++)
                ctl->queues[b->qorder[q]].share.demand[r] += b->unborn[i][r];
}

/* Decayed usage for time-based fair share (--fair-share-half-life; kept
 * in the store by fairshare.c). */
static void
accrue_usage(al_ctl_t *ctl, const build_t *b, const al_result_t *res,
             int64_t now)
{
    int64_t elapsed = now - ctl->usage_last;
    if (elapsed <= 0)
        return;
    for (int i = 0; i < ctl->nqueues && i < res->nqueues; i++) {
        al__queue_t *q = &ctl->queues[b->qorder[i]];
        if (res->queues[i].allocated[AL_RES_GPU] > 0)
            ctl->fairshare_dirty = true;
        q->usage =
            al_usage_decay(q->usage, elapsed, al__fairshare_half_life(ctl)) +
            (double)res->queues[i].allocated[AL_RES_GPU] * (double)elapsed;
    }
    ctl->usage_last = now;
}

void
al__cycle_run(al_ctl_t *ctl)
{
    /* The arrays' tick may end a parent (its end_ms is the clock's now):
     * the cycle's time is taken after it, so that a job it frees (a
     * singleton) never starts before what it waited for ended. */
    al__array_tick(ctl);
    int64_t now_ms = al_clock_ms(), now = now_ms / 1000;
    build_t b;
    memset(&b, 0, sizeof b);
    build_queues(ctl, &b);
    build_nodes(ctl, &b);
    build_jobs(ctl, &b, now_ms);
    al__sched_config(ctl, &b.cfg);
    b.snap = (al_snapshot_t){
        .now = now,
        .config = &b.cfg,
        .allocator = &ctl->core_alloc,
        .nnodes = ctl->nnodes,
        .nodes = b.sn,
        .nqueues = ctl->nqueues,
        .queues = b.sq,
        .njobs = (int)b.nj,
        .jobs = b.sj,
    };
    al_result_t *res = NULL;
    char *cause = NULL;
    double t0 = al__mono_s();
    int rc = al_sched_run(&b.snap, &res, &cause);
    al__hist_observe(&ctl->counters.cycle, al__mono_s() - t0);
    ctl->cycles++;
    if (rc != 0) {
        al_error("scheduling cycle failed: %s%s%s", al_err_name(rc),
                 cause ? ": " : "", cause ? cause : "");
        al_cause_free(&b.snap, cause);
    } else {
        apply_evictions(ctl, &b, res);
        apply_starts(ctl, &b, res, now_ms);
        keep_reasons(ctl, &b, res);
        accrue_usage(ctl, &b, res, now);
        if (!al__elastic_grow(ctl, &b.snap, b.act, res))
            al__consolidate(ctl, &b.snap, b.act, res);
        al__waste_observe(ctl, now_ms, al_clock_mono_ms());
        if (res->stats.started > 0 || res->stats.evicted > 0)
            al_debug("cycle: %d started, %d evicted, %d considered",
                     res->stats.started, res->stats.evicted,
                     res->stats.considered);
    }
    al_result_destroy(res);
    build_fini(&b);
}
