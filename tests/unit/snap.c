/* snap.c -- the snapshot builder of the unit tests (see snap.h). */
#include "snap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Side data of a node or job that the core sees through pointers. */
struct node_side {
    al_device_t *devs;
};

struct queue_side {
    al_model_quota_t *mq;
    int nmq;
};

struct job_side {
    al_placement_t *pl;
    int npl, capl;
    al_dep_t *deps;
    int ndeps, capd;
};

struct snap {
    al_snapshot_t snap;
    al_config_t config;
    const char *levels[AL_MAX_TOPO_LEVELS];
    al_node_t *nodes;
    struct node_side *nside;
    int nnodes, capn;
    al_queue_t *queues;
    struct queue_side *qside;
    int nqueues, capq;
    al_job_t *jobs;
    struct job_side *jside;
    int njobs, capj;
    char **strs;
    int nstrs, caps;
};

static void *
xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n == 0 ? 1 : n);

    if (q == NULL) {
        fprintf(stderr, "snap: out of memory\n");
        abort();
    }
    return q;
}

static void *
xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n == 0 ? 1 : n, sz == 0 ? 1 : sz);

    if (p == NULL) {
        fprintf(stderr, "snap: out of memory\n");
        abort();
    }
    return p;
}

/* Grows array *pa (and its parallel side array *ps) to hold one more. */
static void
grow(void **pa, size_t asz, void **ps, size_t ssz, int n, int *cap)
{
    int ncap;

    if (n < *cap)
        return;
    ncap = *cap == 0 ? 8 : *cap * 2;
    *pa = xrealloc(*pa, (size_t)ncap * asz);
    *ps = xrealloc(*ps, (size_t)ncap * ssz);
    memset((char *)*pa + (size_t)*cap * asz, 0, (size_t)(ncap - *cap) * asz);
    memset((char *)*ps + (size_t)*cap * ssz, 0, (size_t)(ncap - *cap) * ssz);
    *cap = ncap;
}

static const char *
str(snap_t *s, const char *v)
{
    size_t n;
    char *c;

    if (v == NULL)
        return NULL;
    if (s->nstrs == s->caps) {
        s->caps = s->caps == 0 ? 16 : s->caps * 2;
        s->strs = xrealloc(s->strs, (size_t)s->caps * sizeof(*s->strs));
    }
    n = strlen(v) + 1;
    c = xcalloc(n, 1);
    memcpy(c, v, n);
    s->strs[s->nstrs++] = c;
    return c;
}

snap_t *
snap_create(void)
{
    snap_t *s = xcalloc(1, sizeof(*s));

    al_config_default(&s->config);
    return s;
}

void
snap_destroy(snap_t *s)
{
    int i;

    if (s == NULL)
        return;
    for (i = 0; i < s->nnodes; i++)
        free(s->nside[i].devs);
    for (i = 0; i < s->nqueues; i++)
        free(s->qside[i].mq);
    for (i = 0; i < s->njobs; i++) {
        free(s->jside[i].pl);
        free(s->jside[i].deps);
    }
    for (i = 0; i < s->nstrs; i++)
        free(s->strs[i]);
    free(s->strs);
    free(s->nodes);
    free(s->nside);
    free(s->queues);
    free(s->qside);
    free(s->jobs);
    free(s->jside);
    free(s);
}

al_config_t *
snap_config(snap_t *s)
{
    return &s->config;
}

void
snap_set_now(snap_t *s, int64_t now)
{
    s->snap.now = now;
}

void
snap_set_allocator(snap_t *s, const al_allocator_t *a)
{
    s->snap.allocator = a;
}

void
snap_topo_levels(snap_t *s, int n, const char *const *names)
{
    int i;

    if (n > AL_MAX_TOPO_LEVELS)
        n = AL_MAX_TOPO_LEVELS;
    for (i = 0; i < n; i++)
        s->levels[i] = str(s, names[i]);
    s->config.ntopo_levels = n;
    s->config.topo_levels = s->levels;
}

int
snap_node(snap_t *s, const char *name, int ngpus)
{
    al_node_t *n;
    struct node_side *ns;
    int i;

    grow((void **)&s->nodes, sizeof(*s->nodes), (void **)&s->nside,
         sizeof(*s->nside), s->nnodes, &s->capn);
    n = &s->nodes[s->nnodes];
    ns = &s->nside[s->nnodes];
    memset(n, 0, sizeof(*n));
    n->name = str(s, name);
    n->state = AL_NODE_READY;
    n->cpu_milli = 128000;
    n->mem_bytes = 1024 * SNAP_GIB;
    n->ndevices = ngpus;
    ns->devs = xcalloc((size_t)(ngpus > 0 ? ngpus : 1), sizeof(al_device_t));
    for (i = 0; i < ngpus; i++) {
        ns->devs[i].mem_bytes = 80 * SNAP_GIB;
        ns->devs[i].numa = 0;
        ns->devs[i].nvlink = 0;
    }
    n->devices = ns->devs;
    return s->nnodes++;
}

al_node_t *
snap_node_ref(snap_t *s, int node)
{
    return &s->nodes[node];
}

al_device_t *
snap_dev(snap_t *s, int node, int dev)
{
    return &s->nside[node].devs[dev];
}

void
snap_node_topo(snap_t *s, int node, int level, const char *value)
{
    s->nodes[node].topo[level] = str(s, value);
}

void
snap_node_pool(snap_t *s, int node, const char *pool)
{
    s->nodes[node].pool = str(s, pool);
}

void
snap_node_model(snap_t *s, int node, const char *model)
{
    s->nodes[node].gpu_model = str(s, model);
}

int
snap_queue(snap_t *s, const char *name, int parent, int64_t deserved_gpu,
           double weight, int64_t limit_gpu)
{
    al_queue_t *q;
    int r;

    grow((void **)&s->queues, sizeof(*s->queues), (void **)&s->qside,
         sizeof(*s->qside), s->nqueues, &s->capq);
    q = &s->queues[s->nqueues];
    memset(q, 0, sizeof(*q));
    q->name = str(s, name);
    q->parent = parent;
    for (r = 0; r < AL_NRES; r++) {
        q->quota[r].deserved = 0;
        q->quota[r].limit = AL_UNLIMITED;
        q->quota[r].weight = weight;
    }
    q->quota[AL_RES_GPU].deserved = deserved_gpu;
    q->quota[AL_RES_GPU].limit = limit_gpu;
    return s->nqueues++;
}

al_queue_t *
snap_queue_ref(snap_t *s, int q)
{
    return &s->queues[q];
}

void
snap_queue_model_quota(snap_t *s, int q, const char *model, int64_t deserved,
                       int64_t limit)
{
    struct queue_side *qs = &s->qside[q];

    qs->mq = xrealloc(qs->mq, (size_t)(qs->nmq + 1) * sizeof(*qs->mq));
    qs->mq[qs->nmq].model = str(s, model);
    qs->mq[qs->nmq].deserved = deserved;
    qs->mq[qs->nmq].limit = limit;
    qs->nmq++;
}

static int
new_job(snap_t *s, int queue, int ntasks)
{
    al_job_t *j;

    grow((void **)&s->jobs, sizeof(*s->jobs), (void **)&s->jside,
         sizeof(*s->jside), s->njobs, &s->capj);
    j = &s->jobs[s->njobs];
    memset(j, 0, sizeof(*j));
    j->id = 1000 + (uint64_t)s->njobs;
    j->queue = queue;
    j->priority = AL_PRIO_TRAIN;
    j->preemptible = true;
    j->min_tasks = ntasks;
    j->max_tasks = ntasks;
    j->submit_time = s->njobs;
    j->state = AL_JOB_PENDING;
    return s->njobs++;
}

int
snap_job(snap_t *s, int queue, int ntasks, int gpus)
{
    int j = new_job(s, queue, ntasks);

    s->jobs[j].req.gpus = gpus;
    return j;
}

int
snap_job_frac(snap_t *s, int queue, int32_t milli, int64_t gpu_mem)
{
    int j = new_job(s, queue, 1);

    s->jobs[j].req.gpu_milli = milli;
    s->jobs[j].req.gpu_mem = gpu_mem;
    return j;
}

int
snap_job_build(snap_t *s, int queue, int ntasks, int gpus)
{
    int j = snap_job(s, queue, ntasks, gpus);

    s->jobs[j].priority = AL_PRIO_BUILD;
    s->jobs[j].preemptible = false;
    s->jobs[j].build = true;
    return j;
}

al_job_t *
snap_job_ref(snap_t *s, int job)
{
    return &s->jobs[job];
}

void
snap_job_dep(snap_t *s, int job, int on)
{
    struct job_side *js = &s->jside[job];

    if (js->ndeps == js->capd) {
        js->capd = js->capd == 0 ? 4 : js->capd * 2;
        js->deps = xrealloc(js->deps, (size_t)js->capd * sizeof(*js->deps));
    }
    js->deps[js->ndeps].job = on;
    js->deps[js->ndeps++].when = AL_EDGE_SUCCESS;
    if (s->jobs[job].dep_state == AL_DEPS_NONE)
        s->jobs[job].dep_state = AL_DEPS_WAITING;
}

void
snap_job_dep_when(snap_t *s, int job, int on, al_dep_when_t when)
{
    snap_job_dep(s, job, on);
    s->jside[job].deps[s->jside[job].ndeps - 1].when = when;
}

void
snap_job_pool(snap_t *s, int job, const char *pool)
{
    s->jobs[job].req.pool = str(s, pool);
}

void
snap_job_model(snap_t *s, int job, const char *model)
{
    s->jobs[job].req.gpu_model = str(s, model);
}

static al_placement_t *
add_task(snap_t *s, int job, int64_t start)
{
    struct job_side *js = &s->jside[job];
    al_placement_t *p;

    if (js->npl == js->capl) {
        js->capl = js->capl == 0 ? 4 : js->capl * 2;
        js->pl = xrealloc(js->pl, (size_t)js->capl * sizeof(*js->pl));
    }
    p = &js->pl[js->npl++];
    memset(p, 0, sizeof(*p));
    s->jobs[job].state = AL_JOB_RUNNING;
    s->jobs[job].start_time = start;
    return p;
}

void
snap_place(snap_t *s, int job, int64_t start, int node, uint64_t devices)
{
    al_placement_t *p = add_task(s, job, start);

    p->node = node;
    p->devices = devices;
}

void
snap_place_frac(snap_t *s, int job, int64_t start, int node, int dev,
                int32_t milli, int64_t gpu_mem)
{
    al_placement_t *p = add_task(s, job, start);

    p->node = node;
    p->devices = (uint64_t)1 << dev;
    p->gpu_milli = milli;
    p->gpu_mem = gpu_mem;
}

void
snap_unplace(snap_t *s, int job)
{
    s->jside[job].npl = 0;
    s->jobs[job].state = AL_JOB_PENDING;
    s->jobs[job].start_time = 0;
    s->jobs[job].lent = false;
}

int
snap_njobs(const snap_t *s)
{
    return s->njobs;
}

int
snap_nnodes(const snap_t *s)
{
    return s->nnodes;
}

int
snap_nqueues(const snap_t *s)
{
    return s->nqueues;
}

al_snapshot_t *
snap_get(snap_t *s)
{
    int i;

    for (i = 0; i < s->nnodes; i++)
        s->nodes[i].devices = s->nside[i].devs;
    for (i = 0; i < s->nqueues; i++) {
        s->queues[i].nmodel_quotas = s->qside[i].nmq;
        s->queues[i].model_quotas = s->qside[i].mq;
    }
    for (i = 0; i < s->njobs; i++) {
        al_job_t *j = &s->jobs[i];

        j->ndeps = s->jside[i].ndeps;
        j->deps = s->jside[i].ndeps > 0 ? s->jside[i].deps : NULL;
        if (j->state == AL_JOB_RUNNING) {
            j->ntasks = s->jside[i].npl;
            j->placement = s->jside[i].pl;
        } else {
            j->ntasks = 0;
            j->placement = NULL;
        }
    }
    s->snap.config = &s->config;
    s->snap.nnodes = s->nnodes;
    s->snap.nodes = s->nodes;
    s->snap.nqueues = s->nqueues;
    s->snap.queues = s->queues;
    s->snap.njobs = s->njobs;
    s->snap.jobs = s->jobs;
    return &s->snap;
}

al_snapshot_t *
snap_peek(snap_t *s)
{
    return &s->snap;
}

void
snap_apply(snap_t *s, const al_result_t *r, int64_t now)
{
    int i, k;

    for (i = 0; i < r->ndecisions; i++) {
        const al_decision_t *d = &r->decisions[i];
        al_job_t *j = &s->jobs[d->job];
        struct job_side *js = &s->jside[d->job];

        switch (d->kind) {
        case AL_DEC_START:
            js->npl = 0;
            for (k = 0; k < d->ntasks; k++)
                *add_task(s, d->job, now) = d->tasks[k];
            j->lent = d->lent;
            break;
        case AL_DEC_EVICT:
            snap_unplace(s, d->job);
            j->eligible_time = now;
            if (!d->requeue)
                j->state = AL_JOB_HELD;
            break;
        case AL_DEC_SHRINK:
            js->npl -= d->ntasks < js->npl ? d->ntasks : js->npl;
            break;
        }
    }
    s->snap.now = now;
    snap_get(s);
}

const al_decision_t *
res_find(const al_result_t *r, int job, al_decision_kind_t kind)
{
    int i;

    for (i = 0; i < r->ndecisions; i++)
        if (r->decisions[i].job == job && r->decisions[i].kind == kind)
            return &r->decisions[i];
    return NULL;
}

int
res_count(const al_result_t *r, al_decision_kind_t kind)
{
    int i, n = 0;

    for (i = 0; i < r->ndecisions; i++)
        n += r->decisions[i].kind == kind;
    return n;
}

int
res_tasks_on(const al_result_t *r, int job, int node)
{
    const al_decision_t *d = res_find(r, job, AL_DEC_START);
    int k, n = 0;

    if (d == NULL)
        return -1;
    for (k = 0; k < d->ntasks; k++)
        n += d->tasks[k].node == node;
    return n;
}

uint64_t
res_devices_on(const al_result_t *r, int job, int node)
{
    const al_decision_t *d = res_find(r, job, AL_DEC_START);
    uint64_t m = 0;
    int k;

    if (d == NULL)
        return 0;
    for (k = 0; k < d->ntasks; k++)
        if (d->tasks[k].node == node)
            m |= d->tasks[k].devices;
    return m;
}

al_result_t *
snap_run(snap_t *s)
{
    al_result_t *r = NULL;
    char *cause = NULL;
    int rc = al_sched_run(snap_get(s), &r, &cause);

    if (rc != 0) {
        fprintf(stderr, "    al_sched_run: %s (%s)\n", al_err_name(rc),
                cause != NULL ? cause : "no cause");
        al_cause_free(snap_peek(s), cause);
        AL__FAIL("al_sched_run failed");
    }
    al_cause_free(snap_peek(s), cause);
    ASSERT(r != NULL);
    return r;
}

void
res_dump(const al_snapshot_t *snap, const al_result_t *r)
{
    char buf[256];
    int i, k;

    for (i = 0; i < r->ndecisions; i++) {
        const al_decision_t *d = &r->decisions[i];

        fprintf(stderr,
                "    decision %d: kind %d job %d ntasks %d why %d "
                "for %d requeue %d lent %d\n",
                i, (int)d->kind, d->job, d->ntasks, (int)d->why, d->for_job,
                d->requeue, d->lent);
        for (k = 0; d->kind == AL_DEC_START && k < d->ntasks; k++)
            fprintf(stderr,
                    "      task %d: node %d devices %#llx milli %d mem %lld\n",
                    k, d->tasks[k].node,
                    (unsigned long long)d->tasks[k].devices,
                    d->tasks[k].gpu_milli, (long long)d->tasks[k].gpu_mem);
    }
    for (i = 0; i < r->njobs && i < snap->njobs; i++) {
        if (r->reasons[i].code == AL_WHY_NONE)
            continue;
        al_reason_format(snap, &r->reasons[i], buf, sizeof(buf));
        fprintf(stderr, "    job %d: reason %d: %s\n", i,
                (int)r->reasons[i].code, buf);
    }
    for (i = 0; i < r->nreservations; i++)
        fprintf(stderr, "    reservation: job %d start %lld nnodes %d\n",
                r->reservations[i].job, (long long)r->reservations[i].start,
                r->reservations[i].nnodes);
}

#define DIFF(cond, ...)                                                        \
    do {                                                                       \
        if (cond) {                                                            \
            snprintf(why, len, __VA_ARGS__);                                   \
            return -1;                                                         \
        }                                                                      \
    } while (0)

int
res_diff(const al_result_t *a, const al_result_t *b, char *why, size_t len)
{
    int i, k, res;

    DIFF(a->ndecisions != b->ndecisions, "ndecisions %d vs %d", a->ndecisions,
         b->ndecisions);
    for (i = 0; i < a->ndecisions; i++) {
        const al_decision_t *x = &a->decisions[i], *y = &b->decisions[i];

        DIFF(x->kind != y->kind || x->job != y->job || x->ntasks != y->ntasks ||
                 x->why != y->why || x->for_job != y->for_job ||
                 x->requeue != y->requeue || x->lent != y->lent,
             "decision %d", i);
        for (k = 0; x->kind == AL_DEC_START && k < x->ntasks; k++)
            DIFF(x->tasks[k].node != y->tasks[k].node ||
                     x->tasks[k].devices != y->tasks[k].devices ||
                     x->tasks[k].gpu_milli != y->tasks[k].gpu_milli ||
                     x->tasks[k].gpu_mem != y->tasks[k].gpu_mem,
                 "decision %d task %d", i, k);
    }
    DIFF(a->nreservations != b->nreservations, "nreservations %d vs %d",
         a->nreservations, b->nreservations);
    for (i = 0; i < a->nreservations; i++) {
        const al_reservation_t *x = &a->reservations[i];
        const al_reservation_t *y = &b->reservations[i];

        DIFF(x->job != y->job || x->start != y->start || x->nnodes != y->nnodes,
             "reservation %d", i);
        for (k = 0; k < x->nnodes; k++)
            DIFF(x->nodes[k] != y->nodes[k] || x->tasks[k] != y->tasks[k],
                 "reservation %d node %d", i, k);
    }
    DIFF(a->njobs != b->njobs, "njobs %d vs %d", a->njobs, b->njobs);
    for (i = 0; i < a->njobs; i++) {
        const al_reason_t *x = &a->reasons[i], *y = &b->reasons[i];

        DIFF(x->code != y->code || x->queue != y->queue || x->job != y->job ||
                 x->res != y->res || x->amount != y->amount ||
                 x->time != y->time,
             "reason of job %d", i);
    }
    DIFF(a->nqueues != b->nqueues, "nqueues %d vs %d", a->nqueues, b->nqueues);
    for (i = 0; i < a->nqueues; i++) {
        const al_queue_share_t *x = &a->queues[i], *y = &b->queues[i];

        for (res = 0; res < AL_NRES; res++)
            DIFF(memcmp(&x->fair[res], &y->fair[res], sizeof(double)) != 0 ||
                     x->allocated[res] != y->allocated[res] ||
                     x->demand[res] != y->demand[res],
                 "queue %d resource %d", i, res);
        DIFF(x->nonpreempt_gpu != y->nonpreempt_gpu, "queue %d nonpreempt", i);
    }
    DIFF(memcmp(&a->stats, &b->stats, sizeof(a->stats)) != 0, "stats");
    return 0;
}

void
snap_dump(const al_snapshot_t *s)
{
    const al_config_t *c = s->config;
    int i, k, r;

    fprintf(stderr, "    snapshot now %lld\n", (long long)s->now);
    if (c != NULL)
        fprintf(stderr,
                "    config pack %d usage_weight %g reserve_depth %d "
                "default_runtime %lld lend %d reclaim %d preempt %d borrow %d "
                "strict %d ignore_queues %d tries %d\n",
                (int)c->pack, c->usage_weight, c->reserve_depth,
                (long long)c->default_runtime, c->lend_reserved, c->reclaim,
                c->preempt, c->borrow, c->strict_order, c->ignore_queues,
                c->max_reclaim_tries);
    for (i = 0; i < s->nnodes; i++) {
        const al_node_t *n = &s->nodes[i];

        fprintf(stderr,
                "    node %d %s: state %d pool %s model %s topo %s/%s cpu %lld "
                "mem %lldG gpus %d (mem %lldG",
                i, n->name, (int)n->state, n->pool ? n->pool : "-",
                n->gpu_model ? n->gpu_model : "-",
                n->topo[0] ? n->topo[0] : "-", n->topo[1] ? n->topo[1] : "-",
                (long long)n->cpu_milli, (long long)(n->mem_bytes / SNAP_GIB),
                n->ndevices,
                (long long)(n->ndevices > 0 ? n->devices[0].mem_bytes / SNAP_GIB
                                            : 0));
        for (k = 0; k < n->ndevices; k++)
            fprintf(stderr, " %d/%d", n->devices[k].nvlink, n->devices[k].numa);
        fprintf(stderr, ")\n");
    }
    for (i = 0; i < s->nqueues; i++) {
        const al_queue_t *q = &s->queues[i];

        fprintf(stderr, "    queue %d %s: parent %d prio %d usage %g", i,
                q->name, q->parent, q->priority, q->usage);
        for (r = 0; r < AL_NRES; r++)
            fprintf(stderr, " [%lld/%lld w%g]", (long long)q->quota[r].deserved,
                    (long long)q->quota[r].limit, q->quota[r].weight);
        for (k = 0; k < q->nmodel_quotas; k++)
            fprintf(stderr, " model %s %lld/%lld", q->model_quotas[k].model,
                    (long long)q->model_quotas[k].deserved,
                    (long long)q->model_quotas[k].limit);
        fprintf(stderr, "\n");
    }
    for (i = 0; i < s->njobs; i++) {
        const al_job_t *j = &s->jobs[i];

        fprintf(
            stderr,
            "    job %d: q %d state %d prio %d pre %d tasks %d..%d req "
            "%dg %dm %lldG cpu %lld mem %lldG%s%s%s%s submit %lld elig "
            "%lld limit %lld est %lld minrt %lld deps %d(%d) topo %d/%d",
            i, j->queue, (int)j->state, j->priority, j->preemptible,
            j->min_tasks, j->max_tasks, j->req.gpus, j->req.gpu_milli,
            (long long)(j->req.gpu_mem / SNAP_GIB), (long long)j->req.cpu_milli,
            (long long)(j->req.mem_bytes / SNAP_GIB),
            j->req.pool ? " pool " : "", j->req.pool ? j->req.pool : "",
            j->req.gpu_model ? " model " : "",
            j->req.gpu_model ? j->req.gpu_model : "", (long long)j->submit_time,
            (long long)j->eligible_time, (long long)j->time_limit,
            (long long)j->estimate, (long long)j->min_runtime,
            (int)j->dep_state, j->ndeps, (int)j->topo_mode, j->topo_level);
        if (j->state == AL_JOB_RUNNING) {
            fprintf(stderr, " start %lld ckpt %lld lent %d at",
                    (long long)j->start_time, (long long)j->checkpoint_time,
                    j->lent);
            for (k = 0; k < j->ntasks; k++)
                fprintf(stderr, " n%d:%#llx/%d", j->placement[k].node,
                        (unsigned long long)j->placement[k].devices,
                        j->placement[k].gpu_milli);
        }
        fprintf(stderr, "\n");
    }
}

static void
emit_str(const char *call, int idx, const char *v)
{
    if (v != NULL)
        fprintf(stderr, "    %s(s, %d, \"%s\");\n", call, idx, v);
}

void
snap_emit_c(const al_snapshot_t *s)
{
    const al_config_t *c = s->config;
    int i, k, r;

    fprintf(stderr, "    /* snap_emit_c */\n");
    fprintf(stderr, "    snap_t *s = snap_create();\n");
    fprintf(stderr, "    al_config_t *c = snap_config(s);\n");
    fprintf(stderr, "    al_result_t *r;\n\n");
    fprintf(stderr,
            "    c->pack = %d;\n    c->usage_weight = %g;\n"
            "    c->reserve_depth = %d;\n    c->default_runtime = %lld;\n"
            "    c->lend_reserved = %d;\n    c->reclaim = %d;\n"
            "    c->preempt = %d;\n    c->borrow = %d;\n"
            "    c->strict_order = %d;\n    c->ignore_queues = %d;\n"
            "    c->max_reclaim_tries = %d;\n",
            (int)c->pack, c->usage_weight, c->reserve_depth,
            (long long)c->default_runtime, c->lend_reserved, c->reclaim,
            c->preempt, c->borrow, c->strict_order, c->ignore_queues,
            c->max_reclaim_tries);
    if (c->ntopo_levels > 0) {
        fprintf(stderr, "    {\n        static const char *const lv[] = {");
        for (i = 0; i < c->ntopo_levels; i++)
            fprintf(stderr, " \"%s\",", c->topo_levels[i]);
        fprintf(stderr, " };\n        snap_topo_levels(s, %d, lv);\n    }\n",
                c->ntopo_levels);
    }
    fprintf(stderr, "    snap_set_now(s, %lld);\n", (long long)s->now);
    for (i = 0; i < s->nnodes; i++) {
        const al_node_t *n = &s->nodes[i];

        fprintf(stderr, "    snap_node(s, \"%s\", %d);\n", n->name,
                n->ndevices);
        fprintf(stderr,
                "    snap_node_ref(s, %d)->state = %d;\n"
                "    snap_node_ref(s, %d)->cpu_milli = %lld;\n"
                "    snap_node_ref(s, %d)->mem_bytes = %lld;\n",
                i, (int)n->state, i, (long long)n->cpu_milli, i,
                (long long)n->mem_bytes);
        for (k = 0; k < n->ndevices; k++)
            fprintf(stderr,
                    "    *snap_dev(s, %d, %d) = (al_device_t){ %lld, %d, %d "
                    "};\n",
                    i, k, (long long)n->devices[k].mem_bytes,
                    n->devices[k].numa, n->devices[k].nvlink);
        for (k = 0; k < AL_MAX_TOPO_LEVELS; k++)
            if (n->topo[k] != NULL)
                fprintf(stderr, "    snap_node_topo(s, %d, %d, \"%s\");\n", i,
                        k, n->topo[k]);
        emit_str("snap_node_pool", i, n->pool);
        emit_str("snap_node_model", i, n->gpu_model);
    }
    for (i = 0; i < s->nqueues; i++) {
        const al_queue_t *q = &s->queues[i];

        fprintf(stderr, "    snap_queue(s, \"%s\", %d, 0, 0, AL_UNLIMITED);\n",
                q->name, q->parent);
        fprintf(stderr, "    snap_queue_ref(s, %d)->priority = %d;\n", i,
                q->priority);
        if (q->usage != 0)
            fprintf(stderr, "    snap_queue_ref(s, %d)->usage = %.17g;\n", i,
                    q->usage);
        for (r = 0; r < AL_NRES; r++)
            fprintf(stderr,
                    "    snap_queue_ref(s, %d)->quota[%d] = (al_quota_t){ "
                    "%lld, %lld, %g };\n",
                    i, r, (long long)q->quota[r].deserved,
                    (long long)q->quota[r].limit, q->quota[r].weight);
        for (k = 0; k < q->nmodel_quotas; k++)
            fprintf(stderr,
                    "    snap_queue_model_quota(s, %d, \"%s\", %lld, %lld);\n",
                    i, q->model_quotas[k].model,
                    (long long)q->model_quotas[k].deserved,
                    (long long)q->model_quotas[k].limit);
    }
    for (i = 0; i < s->njobs; i++) {
        const al_job_t *j = &s->jobs[i];

        fprintf(stderr, "    snap_job(s, %d, %d, %d);\n", j->queue,
                j->min_tasks, j->req.gpus);
        fprintf(stderr,
                "    {\n        al_job_t *j = snap_job_ref(s, %d);\n\n"
                "        j->id = %llu;\n        j->priority = %d;\n"
                "        j->preemptible = %d;\n        j->max_tasks = %d;\n"
                "        j->req.gpu_milli = %d;\n"
                "        j->req.gpu_mem = %lld;\n"
                "        j->req.cpu_milli = %lld;\n"
                "        j->req.mem_bytes = %lld;\n"
                "        j->submit_time = %lld;\n"
                "        j->eligible_time = %lld;\n"
                "        j->time_limit = %lld;\n        j->estimate = %lld;\n"
                "        j->min_runtime = %lld;\n"
                "        j->topo_level = %d;\n        j->topo_mode = %d;\n"
                "        j->checkpoint_time = %lld;\n"
                "        j->lent = %d;\n    }\n",
                i, (unsigned long long)j->id, j->priority, j->preemptible,
                j->max_tasks, j->req.gpu_milli, (long long)j->req.gpu_mem,
                (long long)j->req.cpu_milli, (long long)j->req.mem_bytes,
                (long long)j->submit_time, (long long)j->eligible_time,
                (long long)j->time_limit, (long long)j->estimate,
                (long long)j->min_runtime, j->topo_level, (int)j->topo_mode,
                (long long)j->checkpoint_time, j->lent);
        emit_str("snap_job_pool", i, j->req.pool);
        emit_str("snap_job_model", i, j->req.gpu_model);
        for (k = 0; k < j->ndeps; k++)
            fprintf(stderr, "    snap_job_dep(s, %d, %d);\n", i,
                    j->deps[k].job);
        fprintf(stderr, "    snap_job_ref(s, %d)->dep_state = %d;\n", i,
                (int)j->dep_state);
        if (j->state == AL_JOB_HELD)
            fprintf(stderr, "    snap_job_ref(s, %d)->state = AL_JOB_HELD;\n",
                    i);
        for (k = 0; j->state == AL_JOB_RUNNING && k < j->ntasks; k++) {
            const al_placement_t *p = &j->placement[k];

            if (j->req.gpus > 0 || p->devices == 0)
                fprintf(stderr, "    snap_place(s, %d, %lld, %d, %#llx);\n", i,
                        (long long)j->start_time, p->node,
                        (unsigned long long)p->devices);
            else
                fprintf(stderr,
                        "    snap_place_frac(s, %d, %lld, %d, %d, %d, "
                        "%lld);\n",
                        i, (long long)j->start_time, p->node,
                        __builtin_ctzll(p->devices), p->gpu_milli,
                        (long long)p->gpu_mem);
        }
    }
    fprintf(stderr, "    r = snap_run(s);\n");
}
