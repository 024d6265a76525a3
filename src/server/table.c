/*
 * table.c -- the controller's tables: jobs by id, queues by name, nodes
 * (with their index by name) and the list of jobs to write at the next
 * commit, and freeing what they hold.  Plain data: changes of a job's
 * state, which have consequences (events, nodes to tell, a cycle), are
 * state.c's.  Also the histograms' buckets and clock, plain data for
 * GET /metrics that the layers above fill.
 *
 * May call: nothing of the server but arraydoc.c's al__array_free()
 * (common's allocation only).  Every other
 * file of the controller may call it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server_int.h"
#include "xmalloc.h"

void
al__job_free(al__job_t *j)
{
    if (j == NULL)
        return;
    free(j->name);
    free(j->user);
    free(j->queue);
    free(j->gpu_model);
    free(j->pool);
    free(j->constraint);
    free(j->spec);
    free(j->after);
    free(j->deps);
    free(j->reason);
    free(j->tasks);
    free(j->idle_notice);
    al__jobtok_free(j);
    free(j->stage);
    free(j->pipeline_name);
    al__array_free(j->array);
    free(j);
}

/* The GPU health of a node (gpuhealth.c sets it): released, moved. */
void
al__node_health_fini(al__node_t *n)
{
    if (n->gpu_why != NULL)
        for (int i = 0; i < AL_MAX_DEVICES; i++)
            free(n->gpu_why[i]);
    free(n->gpu_why);
    free(n->drain_reason);
    n->gpu_why = NULL;
    n->drain_reason = NULL;
    n->gpu_bad = 0;
}

void
al__node_health_move(al__node_t *to, al__node_t *from)
{
    al__node_health_fini(to);
    to->gpu_bad = from->gpu_bad;
    to->gpu_why = from->gpu_why;
    to->drain_reason = from->drain_reason;
    to->gpu_resetting = from->gpu_resetting;
    to->reset_gen = from->reset_gen;
    from->gpu_why = NULL;
    from->drain_reason = NULL;
    from->gpu_bad = 0;
}

void
al__queue_fini(al__queue_t *q)
{
    free(q->name);
    free(q->parent);
    for (int i = 0; i < q->members.n; i++)
        free(q->members.v[i]);
    free(q->members.v);
    for (int i = 0; i < q->nmquotas; i++)
        free((char *)q->mquotas[i].model);
    free(q->mquotas);
    q->mquotas = NULL;
    q->nmquotas = 0;
    q->name = q->parent = NULL;
    q->members.v = NULL;
    q->members.n = 0;
}

void
al__node_fini(al__node_t *n)
{
    free(n->name);
    free(n->addr);
    for (int i = 0; i < n->ngpus; i++) {
        free(n->gpus[i].uuid);
        free(n->gpus[i].model);
    }
    free(n->gpus);
    free(n->devices);
    al__pools_node_fini(n);
    al__node_health_fini(n);
    free(n->known);
    n->known = NULL;
    free(n->leaving);
    n->leaving = NULL;
    n->nleaving = n->leaving_cap = 0;
    n->nknown = n->known_cap = 0;
    free(n->runs);
    n->runs = NULL;
    n->nruns = n->runs_cap = 0;
}

int
al__ctl_add_node(al_ctl_t *ctl, const al__node_t *n)
{
    if (ctl->nnodes == ctl->nodes_cap) {
        ctl->nodes_cap = ctl->nodes_cap ? 2 * ctl->nodes_cap : 16;
        ctl->nodes = al_xreallocarray(ctl->nodes, (size_t)ctl->nodes_cap,
                                      sizeof *ctl->nodes);
    }
    ctl->nodes[ctl->nnodes] = *n;
    /* As GET /v1/events knows it (clusterev.c): a node read from the
     * store is no change; a registration says so itself. */
    ctl->nodes[ctl->nnodes].ev_state = n->state;
    ctl->nodes[ctl->nnodes].ev_drained = n->drained;
    ctl->nodes[ctl->nnodes].ev_registered = false;
    return ctl->nnodes++;
}

al__job_t *
al__ctl_job(al_ctl_t *ctl, uint64_t id)
{
    if (id == 0 || id > ctl->njobs)
        return NULL;
    return ctl->jobs[id - 1];
}

uint64_t
al__ctl_first_active(al_ctl_t *ctl)
{
    /* The mark moves forward here; an ended job made active again (an
     * ended job's requeue, api_jobs.c) moves it back, and reload() starts
     * it over. */
    while (ctl->active_lo < ctl->njobs) {
        al__job_t *j = ctl->jobs[ctl->active_lo];
        if (j != NULL && j->state <= JS_RUNNING)
            break;
        if (j != NULL)
            j->snap = -1;
        ctl->active_lo++;
    }
    return ctl->active_lo;
}

void
al__ctl_put_job(al_ctl_t *ctl, al__job_t *j)
{
    /* A job array's parent takes the ids of its elements too. */
    uint64_t last =
        j->id + (j->array != NULL ? (uint64_t)j->array->as.count : 0);
    if (last > ctl->jobs_cap) {
        uint64_t cap = ctl->jobs_cap ? ctl->jobs_cap : 1024;
        while (cap < last)
            cap *= 2;
        /* The table holds pointers: each element is sizeof(void *). */
        ctl->jobs = al_xreallocarray(ctl->jobs, cap, sizeof(void *));
        memset(ctl->jobs + ctl->jobs_cap, 0,
               (cap - ctl->jobs_cap) * sizeof(void *));
        ctl->jobs_cap = cap;
    }
    /* An element taking its slot: its parent counts for one fewer. */
    al__job_t *p = j->array_job != 0 && ctl->jobs[j->id - 1] == NULL
                       ? al__ctl_job(ctl, j->array_job)
                       : NULL;
    ctl->jobs[j->id - 1] = j;
    if (last > ctl->njobs)
        ctl->njobs = last;
    if (p != NULL && p->array != NULL) {
        p->array->nborn++;
        al__jobcounts_sync(ctl, p);
    }
    al__jobcounts_sync(ctl, j);
}

al__queue_t *
al__ctl_queue(al_ctl_t *ctl, const char *name)
{
    for (int i = 0; i < ctl->nqueues; i++)
        if (strcmp(ctl->queues[i].name, name) == 0)
            return &ctl->queues[i];
    return NULL;
}

static uint64_t
name_hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void
node_hash_put(al_ctl_t *ctl, int i)
{
    size_t mask = ctl->node_hash_cap - 1;
    size_t at = name_hash(ctl->nodes[i].name) & mask;
    while (ctl->node_hash[at] >= 0)
        at = (at + 1) & mask;
    ctl->node_hash[at] = i;
}

int
al__ctl_node_index(al_ctl_t *ctl, const char *name)
{
    /* Nodes are only appended (and all dropped by a reload, which sets
     * node_hashed to 0): index those added since the last call, growing
     * the table to keep it at most half full.  A sync looks its node up:
     * a linear search was most of a sync's cost with thousands of nodes. */
    if (ctl->node_hashed > ctl->nnodes)
        ctl->node_hashed = 0;
    if (2 * (size_t)ctl->nnodes >= ctl->node_hash_cap) {
        size_t cap = ctl->node_hash_cap ? ctl->node_hash_cap : 64;
        while (2 * (size_t)ctl->nnodes >= cap)
            cap *= 2;
        free(ctl->node_hash);
        ctl->node_hash = al_xreallocarray(NULL, cap, sizeof(int));
        ctl->node_hash_cap = cap;
        ctl->node_hashed = 0;
    }
    if (ctl->node_hashed == 0)
        memset(ctl->node_hash, 0xff, ctl->node_hash_cap * sizeof(int));
    for (; ctl->node_hashed < ctl->nnodes; ctl->node_hashed++)
        node_hash_put(ctl, ctl->node_hashed);
    size_t mask = ctl->node_hash_cap - 1;
    for (size_t at = name_hash(name) & mask; ctl->node_hash[at] >= 0;
         at = (at + 1) & mask)
        if (strcmp(ctl->nodes[ctl->node_hash[at]].name, name) == 0)
            return ctl->node_hash[at];
    return -1;
}

void
al__ctl_dirty(al_ctl_t *ctl, al__job_t *j)
{
    if (j->dirty)
        return;
    j->dirty = true;
    if (ctl->ndirty == ctl->dirty_cap) {
        ctl->dirty_cap = ctl->dirty_cap ? 2 * ctl->dirty_cap : 256;
        /* An array of pointers: each element is sizeof(void *). */
        ctl->dirty =
            al_xreallocarray(ctl->dirty, ctl->dirty_cap, sizeof(void *));
    }
    ctl->dirty[ctl->ndirty++] = j;
}

/* From 0.5 ms to 10 s: a cycle of a small cluster takes well under a
 * millisecond, one of a large backlog tens of milliseconds; a commit with
 * synchronous=FULL a few milliseconds on an SSD, far more on a slow disk. */
const double al__hist_bounds[AL_HIST_NB] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,  0.5,    1,     2.5,  5,     10,
};

void
al__hist_observe(al__hist_t *h, double seconds)
{
    for (int i = 0; i < AL_HIST_NB; i++) {
        if (seconds <= al__hist_bounds[i]) {
            h->bucket[i]++;
            break;
        }
    }
    h->count++;
    h->sum += seconds;
}

int
al__job_qidx(const al_ctl_t *ctl, const al__job_t *j)
{
    if (j->qgen == ctl->queue_gen + 1 && j->qidx < ctl->nqueues)
        return j->qidx;
    for (int i = 0; i < ctl->nqueues; i++)
        if (strcmp(ctl->queues[i].name, j->queue) == 0)
            return i;
    return -1;
}

static int
find_model(const char **models, int nmodels, const char *m)
{
    for (int i = 0; i < nmodels; i++)
        if (strcmp(models[i], m) == 0)
            return i;
    return -1;
}

int
al__model_slot(const char **models, int *nmodels, const char *m)
{
    static const char other[] = "other";
    if (m == NULL || *m == '\0')
        m = "unknown";
    int i = find_model(models, *nmodels, m);
    if (i >= 0)
        return i;
    if (strcmp(m, other) != 0 && *nmodels < AL_MAX_MODELS - 1) {
        models[*nmodels] = m;
        return (*nmodels)++;
    }
    i = find_model(models, *nmodels, other);
    if (i >= 0)
        return i;
    models[*nmodels] = other; /* room: names take AL_MAX_MODELS - 1 */
    return (*nmodels)++;
}

double
al__mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
