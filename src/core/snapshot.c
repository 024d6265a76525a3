/*
 * snapshot.c -- checking the snapshot and setting up the cycle's working
 * state from it: queues, jobs, what running jobs hold.
 *
 * Owns: the configuration's defaults (al_config_default), the checks that
 * refuse a malformed snapshot with a cause (al__check_snapshot, and those
 * inside al__setup), the cause string itself (set_cause, al_cause_free),
 * and al__setup.  Calls: capacity.c (the working cluster, taking what
 * running jobs hold), frag.c (the workload profile).  Called by pass.c
 * (which computes the critical path, dag.c, after it).
 */
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core_int.h"

void
al_config_default(al_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->pack = AL_PACK_BIN;
    cfg->usage_weight = 1.0;
    cfg->usage_half_life = (int64_t)7 * 24 * 3600;
    cfg->reserve_depth = 4;
    cfg->default_runtime = (int64_t)24 * 3600;
    cfg->lend_reserved = true;
    cfg->reclaim = true;
    cfg->preempt = true;
    cfg->borrow = true;
    cfg->max_reclaim_tries = 8;
    cfg->starve_after = 3600;
    cfg->short_first = true;
    cfg->lookahead_depth = 8;
    /* Never ran; under a GPU-hour; under ten GPU-hours; more. */
    cfg->service_levels[0] = 1;
    cfg->service_levels[1] = 3600;
    cfg->service_levels[2] = 36000;
}

int64_t
al_request_gpu_milli(const al_request_t *req)
{
    if (req->gpus > 0)
        return (int64_t)req->gpus * AL_GPU_MILLI;
    return req->gpu_milli > 0 ? req->gpu_milli : 0;
}

/* The allocator a cause is made with and freed with. */
static const al_allocator_t *
cause_allocator(const al_snapshot_t *snap)
{
    return snap != NULL && snap->allocator != NULL ? snap->allocator
                                                   : &al_default_allocator;
}

void
al_cause_free(const al_snapshot_t *snap, char *cause)
{
    const al_allocator_t *a = cause_allocator(snap);

    if (cause != NULL)
        a->free(a->ctx, cause);
}

/* Stores the message (msg formatted with x and y) in *cause, made with the
 * snapshot's allocator (see al_cause_free).  Without memory, no cause. */
static void
set_cause(const al_snapshot_t *snap, char **cause, const char *msg, int64_t x,
          int64_t y)
{
    const al_allocator_t *a = cause_allocator(snap);
    char buf[256];
    size_t n;
    char *p;

    if (cause == NULL)
        return;
        /* Every caller passes a literal with two %lld conversions. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    n = (size_t)snprintf(buf, sizeof(buf), msg, (long long)x, (long long)y);
#pragma GCC diagnostic pop
    if (n >= sizeof(buf))
        n = sizeof(buf) - 1;
    p = a->malloc(a->ctx, n + 1);
    if (p == NULL)
        return;
    memcpy(p, buf, n + 1);
    *cause = p;
}

/* ------------------------------------------------------------------ */
/* Checks                                                             */

/* Checks AL_PACK_FRAG's workload profile (see al_config_t.profile) and
 * the pools' strategies. */
static int
check_profile(const al_snapshot_t *snap, const al_config_t *cfg, char **cause)
{
    int i;

    for (i = 0; i < AL_MAX_SERVICE_LEVELS; i++) {
        int64_t v = cfg->service_levels[i];

        if (v < 0 || (i > 0 && v > 0 && v <= cfg->service_levels[i - 1]) ||
            (i > 0 && v > 0 && cfg->service_levels[i - 1] == 0)) {
            set_cause(snap, cause,
                      "config: service level %lld: bad threshold %lld", i, v);
            return AL_EINVAL;
        }
    }
    if (cfg->nprofile < 0 || (cfg->nprofile > 0 && cfg->profile == NULL)) {
        set_cause(snap, cause,
                  "config: bad workload profile (%lld shapes, array %lld)",
                  cfg->nprofile, cfg->profile != NULL);
        return AL_EINVAL;
    }
    if (cfg->npool_packs < 0 ||
        (cfg->npool_packs > 0 && cfg->pool_packs == NULL)) {
        set_cause(snap, cause, "config: bad pool strategies (%lld, %lld)",
                  cfg->npool_packs, cfg->pool_packs != NULL);
        return AL_EINVAL;
    }
    for (i = 0; i < cfg->npool_packs; i++) {
        if (cfg->pool_packs[i].pack < AL_PACK_BIN ||
            cfg->pool_packs[i].pack > AL_PACK_FRAG) {
            set_cause(snap, cause, "config: pool strategy %lld of %lld is bad",
                      i, cfg->npool_packs);
            return AL_EINVAL;
        }
    }
    for (i = 0; i < cfg->nprofile; i++) {
        const al_shape_t *m = &cfg->profile[i];

        /* Both comparisons are false for NaN; the second for infinity. */
        if (!(m->weight >= 0 && m->weight <= DBL_MAX) || m->gpus < 0 ||
            m->gpu_milli < 0 || m->gpu_milli >= AL_GPU_MILLI ||
            m->cpu_milli < 0 || m->mem_bytes < 0) {
            set_cause(snap, cause,
                      "config: workload profile shape %lld of %lld is bad", i,
                      cfg->nprofile);
            return AL_EINVAL;
        }
    }
    return 0;
}

int
al__check_snapshot(const al_snapshot_t *snap, al_result_t **out,
                   al_config_t *cfg, char **cause)
{
    if (snap == NULL || out == NULL || snap->nnodes < 0 || snap->nqueues < 0 ||
        snap->njobs < 0 || (snap->nnodes > 0 && snap->nodes == NULL) ||
        (snap->nqueues > 0 && snap->queues == NULL) ||
        (snap->njobs > 0 && snap->jobs == NULL)) {
        set_cause(snap, cause,
                  "snapshot is NULL or has bad counts (%lld, %lld)",
                  snap ? snap->nnodes : 0, snap ? snap->njobs : 0);
        return AL_EINVAL;
    }
    if (snap->config != NULL)
        *cfg = *snap->config;
    else
        al_config_default(cfg);
    if (cfg->ntopo_levels < 0 || cfg->ntopo_levels > AL_MAX_TOPO_LEVELS ||
        cfg->reserve_depth < 0) {
        set_cause(snap, cause,
                  "config: bad topology levels (%lld) or reserve depth "
                  "(%lld)",
                  cfg->ntopo_levels, cfg->reserve_depth);
        return AL_EINVAL;
    }
    if (check_profile(snap, cfg, cause) != 0)
        return AL_EINVAL;
    return 0;
}

/* Checks job j's request, dependencies and state; AL_EINVAL (with the
 * cause) when the snapshot is malformed. */
static int
check_job(const al_cycle_t *c, int32_t j, char **cause)
{
    const al_job_t *jb = &c->s->jobs[j];
    const al_request_t *r = &jb->req;

    if (r->gpus < 0 || r->gpus > AL_MAX_DEVICES || r->gpu_milli < 0 ||
        r->gpu_milli > AL_GPU_MILLI || r->gpu_mem < 0 || r->cpu_milli < 0 ||
        r->mem_bytes < 0 || jb->min_tasks < 1 ||
        (jb->ndeps > 0 && jb->deps == NULL) || jb->ndeps < 0 ||
        jb->array_waves < 0) {
        set_cause(c->s, cause, "job %lld (index %lld): invalid request",
                  (long long)jb->id, j);
        return AL_EINVAL;
    }
    for (int32_t t = 0; t < jb->ndeps; t++)
        if (jb->deps[t].job < 0 || jb->deps[t].job >= c->nj ||
            (unsigned)jb->deps[t].when > AL_EDGE_ALWAYS) {
            set_cause(c->s, cause,
                      "job %lld: dependency index %lld (or its when) out "
                      "of range",
                      (long long)jb->id, jb->deps[t].job);
            return AL_EINVAL;
        }
    if (jb->topo_mode != AL_TOPO_NONE &&
        (jb->topo_level < 0 || jb->topo_level >= c->cfg.ntopo_levels)) {
        set_cause(c->s, cause, "job %lld: topology level %lld not configured",
                  (long long)jb->id, jb->topo_level);
        return AL_EINVAL;
    }
    if (jb->state == AL_JOB_RUNNING &&
        (jb->ntasks < 1 || jb->placement == NULL || !queue_ok(c, jb->queue))) {
        set_cause(c->s, cause,
                  "running job %lld (index %lld) has no "
                  "placement or no leaf queue",
                  (long long)jb->id, j);
        return AL_EINVAL;
    }
    if (jb->state != AL_JOB_RUNNING && jb->state != AL_JOB_PENDING &&
        jb->state != AL_JOB_HELD) {
        set_cause(c->s, cause, "job %lld: unknown state %lld",
                  (long long)jb->id, (long long)jb->state);
        return AL_EINVAL;
    }
    return 0;
}

static bool
valid_placement(const al_cycle_t *c, const al_job_t *j, const al_placement_t *p)
{
    const al_node_t *nd;
    uint64_t all;

    if (p->node < 0 || p->node >= c->nn)
        return false;
    nd = &c->s->nodes[p->node];
    all = nd->ndevices == 64 ? ~0ULL : (1ULL << nd->ndevices) - 1;
    if ((p->devices & ~all) != 0)
        return false;
    if (p->gpu_milli < 0 || p->gpu_milli > AL_GPU_MILLI || p->gpu_mem < 0)
        return false;
    if (p->gpu_milli > 0)
        return popcount64(p->devices) == 1;
    if (j->req.gpus > 0)
        return popcount64(p->devices) == j->req.gpus;
    return true;
}

/* ------------------------------------------------------------------ */
/* The working state                                                  */

static int
setup_queues(al_cycle_t *c, char **cause)
{
    int32_t q;

    c->wq = al_arena_array(c->tmp, (size_t)c->nq + 1, sizeof(wqueue_t));
    if (c->wq == NULL)
        return AL_ENOMEM;
    for (q = 0; q < c->nq; q++) {
        const al_queue_t *qq = &c->s->queues[q];
        wqueue_t *w = &c->wq[q];

        if (qq->parent < -1 || qq->parent >= q) {
            set_cause(c->s, cause,
                      "queue %lld: parent %lld must be -1 or an "
                      "earlier queue",
                      q, qq->parent);
            return AL_EINVAL;
        }
        if (qq->build_capped && qq->build_cap < 0) {
            set_cause(c->s, cause, "queue %lld: negative build cap %lld", q,
                      qq->build_cap);
            return AL_EINVAL;
        }
        if (qq->nmodel_quotas < 0 ||
            (qq->nmodel_quotas > 0 && qq->model_quotas == NULL)) {
            set_cause(c->s, cause, "queue %lld: bad model quotas (%lld)", q,
                      qq->nmodel_quotas);
            return AL_EINVAL;
        }
        w->parent = qq->parent;
        w->depth = qq->parent < 0 ? 0 : c->wq[qq->parent].depth + 1;
        w->leaf = true;
        w->valid = true;
        w->heap_pos = NIL;
        w->usage = 0;
        w->min_rank = INT64_MAX;
        if (qq->parent >= 0)
            c->wq[qq->parent].leaf = false;
        if (qq->nmodel_quotas > 0) {
            w->model_alloc = al_arena_array(c->tmp, (size_t)qq->nmodel_quotas,
                                            sizeof(int64_t));
            w->model_nonpre = al_arena_array(c->tmp, (size_t)qq->nmodel_quotas,
                                             sizeof(int64_t));
            if (w->model_alloc == NULL || w->model_nonpre == NULL)
                return AL_ENOMEM;
        }
    }
    /* Usage of leaves, summed up the tree (children come after parents). */
    for (q = c->nq - 1; q >= 0; q--) {
        if (c->wq[q].leaf)
            c->wq[q].usage =
                c->s->queues[q].usage > 0 ? c->s->queues[q].usage : 0;
        if (c->wq[q].parent >= 0)
            c->wq[c->wq[q].parent].usage += c->wq[q].usage;
    }
    return 0;
}

/* Is pending job j allowed to start at all (held, dependencies)? */
static bool
eligible(const al_cycle_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];

    return jb->state == AL_JOB_PENDING &&
           (jb->dep_state == AL_DEPS_NONE ||
            jb->dep_state == AL_DEPS_SATISFIED) &&
           queue_ok(c, jb->queue);
}

/* Running job j: takes what its tasks hold (counting them per node in
 * count[]) and charges it to its queue and the queue's ancestors. */
static int
take_running(al_cycle_t *c, int32_t j, int32_t *count, char **cause)
{
    const al_job_t *jb = &c->s->jobs[j];
    wjob_t *w = &c->wj[j];

    w->flags = JF_RUNNING | (jb->lent ? JF_LENT : 0);
    if (jb->preemptible && w->rank < c->wq[jb->queue].min_rank)
        c->wq[jb->queue].min_rank = w->rank;
    w->ntasks = jb->ntasks;
    for (int32_t t = 0; t < jb->ntasks; t++) {
        if (!valid_placement(c, jb, &jb->placement[t])) {
            set_cause(c->s, cause,
                      "running job %lld task %lld: invalid "
                      "placement",
                      (long long)jb->id, t);
            return AL_EINVAL;
        }
        int rc = al__take(c, j, &jb->placement[t], true);
        w->held += al__placed_gpu(&jb->placement[t]);
        if (t >= jb->min_tasks)
            w->held_extra += al__placed_gpu(&jb->placement[t]);
        if (rc != 0) {
            if (rc == AL_EINVAL)
                set_cause(c->s, cause,
                          "running job %lld task %lld: "
                          "device already in use",
                          (long long)jb->id, t);
            return rc;
        }
        count[jb->placement[t].node]++;
    }
    for (int32_t a = jb->queue; a != NIL; a = c->wq[a].parent) {
        c->wq[a].run_gpu0 += w->held;
        if (over_quota_alone(c, a, w->held))
            c->wq[a].big_gpu += w->held;
    }
    return 0;
}

static int
setup_jobs(al_cycle_t *c, char **cause)
{
    int32_t j, n, t;
    int32_t *count;
    int64_t maxdevmem = 0;
    int rc;

    /* Both arrays are initialised field by field below: zeroing 100,000
     * entries first was a measurable part of a cycle.  Reasons live in the
     * result's arena from the start, so the result needs no copy. */
    c->wj = al_arena_array_raw(c->tmp, (size_t)c->nj + 1, sizeof(wjob_t));
    c->reasons =
        al_arena_array_raw(c->out, (size_t)c->nj + 1, sizeof(al_reason_t));
    count = al_arena_array(c->tmp, (size_t)c->nn + 1, sizeof(int32_t));
    if (c->wj == NULL || c->reasons == NULL || count == NULL)
        return AL_ENOMEM;
    for (n = 0; n < c->nn; n++)
        for (t = 0; t < c->s->nodes[n].ndevices; t++)
            if (c->s->nodes[n].devices[t].mem_bytes > maxdevmem)
                maxdevmem = c->s->nodes[n].devices[t].mem_bytes;

    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];
        wjob_t *w = &c->wj[j];
        const al_request_t *r = &jb->req;

        memset(w, 0, sizeof(*w));
        w->min_tasks = jb->min_tasks;
        w->cpu = jb->req.cpu_milli;
        w->mem = jb->req.mem_bytes;
        w->start_dec = NIL;
        w->place_off = NIL;
        w->for_job = NIL;
        memset(&c->reasons[j], 0, sizeof(c->reasons[j]));
        c->reasons[j].queue = NIL;
        c->reasons[j].job = NIL;
        if ((rc = check_job(c, j, cause)) != 0)
            return rc;
        if (r->gpus > 0)
            w->task_gpu = (int64_t)r->gpus * AL_GPU_MILLI;
        else if (r->gpu_milli > 0)
            w->task_gpu = r->gpu_milli;
        else if (r->gpu_mem > 0 && maxdevmem > 0)
            w->task_gpu =
                (r->gpu_mem * AL_GPU_MILLI + maxdevmem - 1) / maxdevmem;
        al__job_rank(c, j);
        if (jb->state == AL_JOB_RUNNING &&
            (rc = take_running(c, j, count, cause)) != 0)
            return rc;
    }
    /* Running (job, task) pairs per node, for victim search. */
    {
        int32_t total = 0, *fill;

        for (n = 0; n < c->nn; n++) {
            c->wn[n].run_off = total;
            total += count[n];
        }
        c->run_tasks =
            al_arena_array(c->tmp, (size_t)total + 1, sizeof(al_jt_t));
        fill = al_arena_array(c->tmp, (size_t)c->nn + 1, sizeof(int32_t));
        if (c->run_tasks == NULL || fill == NULL)
            return AL_ENOMEM;
        for (j = 0; j < c->nj; j++) {
            const al_job_t *jb = &c->s->jobs[j];

            if (jb->state != AL_JOB_RUNNING)
                continue;
            for (t = 0; t < jb->ntasks; t++) {
                int32_t nd = jb->placement[t].node;
                int32_t at = c->wn[nd].run_off + fill[nd]++;

                c->run_tasks[at].job = j;
                c->run_tasks[at].task = t;
            }
        }
        for (n = 0; n < c->nn; n++)
            c->wn[n].nrun = fill[n];
    }
    /* Demand: what runs plus what could start, summed up the tree. */
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];
        int64_t k;
        int32_t q;

        if (jb->state == AL_JOB_RUNNING)
            k = jb->ntasks;
        else if (eligible(c, j))
            k = jb->min_tasks;
        else
            continue;
        for (q = jb->queue; q != NIL; q = c->wq[q].parent) {
            c->wq[q].demand[AL_RES_GPU] += k * c->wj[j].task_gpu;
            c->wq[q].demand[AL_RES_CPU] += k * jb->req.cpu_milli;
            c->wq[q].demand[AL_RES_MEM] += k * jb->req.mem_bytes;
        }
    }
    rc = al__profile(c);
    if (rc != 0)
        return rc;
    /* What setup took is the starting point, not something to undo. */
    c->undo.len = 0;
    return 0;
}

int
al__setup(al_cycle_t *c, char **cause)
{
    int rc = al__place_init(c);

    if (rc == AL_EINVAL)
        set_cause(c->s, cause, "a node has more than %lld devices (%lld)",
                  AL_MAX_DEVICES, 0);
    if (rc == 0)
        rc = setup_queues(c, cause);
    if (rc == 0)
        rc = setup_jobs(c, cause);
    if (rc == 0)
        al__fence(c);
    return rc;
}
