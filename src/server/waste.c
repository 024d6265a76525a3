/*
 * waste.c -- the wastage ratio of the running cluster: the share of
 * GPU-time a GPU sat idle while work that would fit on the idle GPUs
 * waited.  After each scheduling cycle the loop calls al__waste_observe(),
 * which first adds the time since the last look (at the state seen then)
 * to the counters, then looks again: per GPU model, the GPUs on nodes that
 * are up, those no task holds any part of, and whether some pending job
 * would fit on the idle ones (its tasks, GPUs, CPU and memory, by a greedy
 * count over the nodes: a job that waits only for a quota, a reservation
 * or its turn counts; one waiting for its dependencies, a hold, or a node
 * that does not exist does not, nor one the cycle found too big for the
 * free room).  The state holds until the next look, as
 * the simulator's does between events, so the counters are exact for the
 * controller's view of the cluster at cycle granularity.
 *
 * The definition is the simulator's (docs/simulation.md), per model: an
 * idle GPU of model M is wasted while a pending job that may run on M
 * would fit on the idle GPUs of M.  GET /metrics renders the counters
 * (GPU-seconds, idle GPU-seconds, wasted GPU-seconds, by model, so PromQL
 * can compute the ratio over any window) and allot_wastage_ratio over the
 * last ten minutes, kept here in ten-second slots.
 *
 * May call: table.c (the tables), common's allocation.  Changes nothing
 * but ctl->waste.
 */
#include <stdlib.h>
#include <string.h>

#include "server_int.h"
#include "xmalloc.h"

/* The slot of a time in the window's ring. */
#define SLOT_MS (AL_WASTE_WINDOW_S * 1000 / AL_WASTE_SLOTS)

/* The model slot of name m (al__model_slot()), its name copied when
 * new: nodes come and go, the counters stay. */
int
al__waste_model(al__waste_t *w, const char *m)
{
    int n = w->nmodels, i = al__model_slot(w->model, &w->nmodels, m);
    if (w->nmodels > n)
        w->model[i] = al_xstrdup(w->model[i]);
    return i;
}

/* What is free on one node that is up and takes work. */
typedef struct freenode {
    int model;
    uint64_t idle; /* devices no task holds any part of */
    int nidle;
    int64_t cpu, mem;
} freenode_t;

/* The free resources of the ready nodes into fn[] (one per ctl node;
 * model -1 for a node that takes no work), and the per-model totals. */
static void
look_nodes(al_ctl_t *ctl, freenode_t *fn)
{
    al__waste_t *w = &ctl->waste;
    for (int m = 0; m < AL_MAX_MODELS; m++)
        w->total[m] = w->idle[m] = 0;
    for (int i = 0; i < ctl->nnodes; i++) {
        const al__node_t *n = &ctl->nodes[i];
        fn[i] = (freenode_t){ .model = -1 };
        if (n->state == NS_DOWN || n->ngpus <= 0)
            continue;
        int ng = n->ngpus < 64 ? n->ngpus : 64;
        fn[i].model = al__waste_model(w, n->gpus[0].model);
        fn[i].idle = ng == 64 ? UINT64_MAX : (UINT64_C(1) << ng) - 1;
        fn[i].cpu = n->cpu_milli;
        fn[i].mem = n->mem_bytes;
        w->total[fn[i].model] += ng;
        if (n->drained || n->state != NS_READY)
            fn[i].model = -1 - fn[i].model; /* counted, takes no work */
    }
    for (size_t k = 0; k < ctl->nrunning; k++) {
        const al__job_t *j = ctl->running[k];
        for (int t = 0; j->tasks != NULL && t < j->ntasks; t++) {
            const al__task_t *tk = &j->tasks[t];
            if (tk->done || tk->node < 0 || tk->node >= ctl->nnodes)
                continue;
            freenode_t *f = &fn[tk->node];
            f->idle &= ~tk->devices;
            f->cpu -= j->cpu_milli;
            f->mem -= j->mem_bytes;
        }
    }
    for (int i = 0; i < ctl->nnodes; i++) {
        freenode_t *f = &fn[i];
        f->nidle = __builtin_popcountll(f->idle);
        int m = f->model >= 0 ? f->model : -1 - f->model;
        if (ctl->nodes[i].state != NS_DOWN && ctl->nodes[i].ngpus > 0)
            w->idle[m] += f->nidle;
        if (f->model < 0)
            f->nidle = 0; /* idle, but no job may start there */
    }
}

/* Whether job j would fit on the idle GPUs of model m's nodes. */
static bool
fits(const al_ctl_t *ctl, const al__waste_t *w, const freenode_t *fn,
     const al__job_t *j, int m)
{
    if (j->gpu_model != NULL && j->gpu_model[0] != '\0' &&
        strcmp(j->gpu_model, w->model[m]) != 0) /* "other" takes none */
        return false;
    int per = j->gpus > 0 ? j->gpus : 1; /* a fraction takes one idle GPU */
    int placed = 0;
    for (int i = 0; i < ctl->nnodes && placed < j->ntasks; i++) {
        const freenode_t *f = &fn[i];
        if (f->model != m || f->nidle < per)
            continue;
        int64_t by_gpu = f->nidle / per;
        int64_t by_cpu = j->cpu_milli > 0 ? f->cpu / j->cpu_milli : by_gpu;
        int64_t by_mem = j->mem_bytes > 0 ? f->mem / j->mem_bytes : by_gpu;
        int64_t k = by_gpu < by_cpu ? by_gpu : by_cpu;
        k = k < by_mem ? k : by_mem;
        placed += k > 0 ? (int)(k < j->ntasks ? k : j->ntasks) : 0;
    }
    return placed >= j->ntasks;
}

/* Whether pending job j waits for something other than free room (its
 * dependencies, a hold, a time, or a queue or node that cannot be), or
 * the cycle found that it does not fit in the free room: skipped without
 * a look, which keeps a look cheap under a backlog of jobs too big for
 * what is free. */
static bool
waits_for_other(const al__job_t *j, int64_t now_ms)
{
    if (j->state != JS_PENDING || (j->gpus <= 0 && j->gpu_milli <= 0))
        return true;
    if (j->eligible_ms > now_ms)
        return true;
    if (!j->why_valid)
        return true; /* no cycle has looked at it, or its queue is gone */
    switch (j->why.code) {
    case AL_WHY_HELD:
    case AL_WHY_DEPS:
    case AL_WHY_DEPS_NEVER:
    case AL_WHY_BAD_QUEUE:
    case AL_WHY_TOO_BIG:
    case AL_WHY_NO_MATCH:
    case AL_WHY_CAPACITY:
    case AL_WHY_NO_NODE:
    case AL_WHY_TOPOLOGY:
        return true;
    default:
        return false;
    }
}

/* Adds the time since the last look, at the state seen then. */
static void
accrue(al__waste_t *w, int64_t now_ms)
{
    if (w->last_ms <= 0 || now_ms <= w->last_ms) {
        w->last_ms = now_ms > w->last_ms ? now_ms : w->last_ms;
        return;
    }
    double dt = (double)(now_ms - w->last_ms) / 1000.0;
    double cap = 0, wasted = 0;
    for (int m = 0; m < w->nmodels; m++) {
        w->gpu_s[m] += w->total[m] * dt;
        w->idle_s[m] += w->idle[m] * dt;
        if (w->waiting[m]) {
            w->wasted_s[m] += w->idle[m] * dt;
            wasted += w->idle[m] * dt;
        }
        cap += w->total[m] * dt;
    }
    int64_t stamp = now_ms / SLOT_MS;
    int s = (int)(stamp % AL_WASTE_SLOTS);
    if (w->slot_stamp[s] != stamp) {
        w->slot_stamp[s] = stamp;
        w->slot_cap[s] = w->slot_wasted[s] = 0;
    }
    w->slot_cap[s] += cap;
    w->slot_wasted[s] += wasted;
    w->last_ms = now_ms;
}

/* A job's shape and queue: jobs alike fit alike, so each is tried once
 * per look (a backlog is mostly copies of a few shapes per queue). */
typedef struct shape {
    int32_t gpus, milli;
    int ntasks, queue;
    int64_t cpu, mem;
    const char *model;
    bool used;
} shape_t;

#define SHAPES 4096 /* the set's room; when full, jobs are tried each */

static uint64_t
shape_hash(const shape_t *k)
{
    uint64_t h = 1469598103934665603u;
    const int64_t v[6] = { k->gpus,  k->milli, k->ntasks,
                           k->queue, k->cpu,   k->mem };
    for (int i = 0; i < 6; i++)
        h = (h ^ (uint64_t)v[i]) * 1099511628211u;
    for (const char *c = k->model; c != NULL && *c != '\0'; c++)
        h = (h ^ (uint64_t)(unsigned char)*c) * 1099511628211u;
    return h;
}

static bool
shape_eq(const shape_t *a, const shape_t *b)
{
    return a->gpus == b->gpus && a->milli == b->milli &&
           a->ntasks == b->ntasks && a->queue == b->queue && a->cpu == b->cpu &&
           a->mem == b->mem &&
           (a->model == b->model || (a->model != NULL && b->model != NULL &&
                                     strcmp(a->model, b->model) == 0));
}

/* Adds k to the set; false when it was there already. */
static bool
shape_add(shape_t *set, int *n, const shape_t *k)
{
    if (*n >= SHAPES * 3 / 4)
        return true;
    for (uint64_t i = shape_hash(k) % SHAPES;; i = (i + 1) % SHAPES) {
        if (!set[i].used) {
            set[i] = *k;
            set[i].used = true;
            (*n)++;
            return true;
        }
        if (shape_eq(&set[i], k))
            return false;
    }
}

#define QUEUE_LOOK_MS 5000

/* The look by model alone: each shape once (the first 64), stopping once
 * every model with idle GPUs has fitting work. */
static void
model_look(al_ctl_t *ctl, al__waste_t *w, const freenode_t *fn, int left,
           int64_t now_ms)
{
    shape_t seen[64];
    int nseen = 0;
    for (uint64_t i = al__ctl_first_active(ctl); left > 0 && i < ctl->njobs;
         i++) {
        const al__job_t *j = ctl->jobs[i];
        if (j == NULL || waits_for_other(j, now_ms))
            continue;
        shape_t k = { j->gpus,      j->gpu_milli, j->ntasks,    0,
                      j->cpu_milli, j->mem_bytes, j->gpu_model, true };
        bool dup = false;
        for (int x = 0; x < nseen && !dup; x++)
            dup = shape_eq(&seen[x], &k);
        if (dup)
            continue;
        for (int m = 0; m < w->nmodels; m++)
            if (!w->waiting[m] && w->idle[m] > 0 && fits(ctl, w, fn, j, m)) {
                w->waiting[m] = true;
                left--;
            }
        if (nseen < 64)
            seen[nseen++] = k;
    }
}

void
al__waste_observe(al_ctl_t *ctl, int64_t now_ms, int64_t mono_ms)
{
    al__waste_t *w = &ctl->waste;
    accrue(w, mono_ms);
    freenode_t *fn = al_xcalloc((size_t)ctl->nnodes + 1, sizeof *fn);
    look_nodes(ctl, fn);
    int nidle = 0; /* models with idle GPUs */
    for (int m = 0; m < w->nmodels; m++) {
        w->waiting[m] = false;
        nidle += w->idle[m] > 0;
    }
    /* By queue (a job whose queue is gone in the last row): which models'
     * idle GPUs its pending work would fit on.  That look goes through
     * every pending job, so it is taken at most every QUEUE_LOOK_MS (a
     * scrape's interval); between, a look stops as soon as every model
     * with idle GPUs has fitting work of some queue. */
    bool by_queue = w->qlook_ms == 0 || mono_ms - w->qlook_ms >= QUEUE_LOOK_MS;
    if (!by_queue) {
        model_look(ctl, w, fn, nidle, now_ms);
        free(fn);
        return;
    }
    w->qlook_ms = mono_ms;
    int nq = ctl->nqueues + 1;
    free(w->qwaiting);
    w->qwaiting = al_xcalloc((size_t)nq * AL_MAX_MODELS, sizeof(bool));
    w->nqwaiting = nq;
    w->qgen = ctl->queue_gen;
    int *qleft = al_xcalloc((size_t)nq, sizeof(int));
    for (int q = 0; q < nq; q++)
        qleft[q] = nidle;
    shape_t *set = nidle > 0 ? al_xcalloc(SHAPES, sizeof *set) : NULL;
    int nset = 0;
    for (uint64_t i = al__ctl_first_active(ctl); nidle > 0 && i < ctl->njobs;
         i++) {
        const al__job_t *j = ctl->jobs[i];
        if (j == NULL || waits_for_other(j, now_ms))
            continue;
        int q = al__job_qidx(ctl, j);
        q = q >= 0 ? q : nq - 1;
        if (qleft[q] == 0)
            continue;
        shape_t k = { j->gpus,      j->gpu_milli, j->ntasks,    q,
                      j->cpu_milli, j->mem_bytes, j->gpu_model, false };
        if (!shape_add(set, &nset, &k))
            continue;
        bool *qw = &w->qwaiting[(size_t)q * AL_MAX_MODELS];
        for (int m = 0; m < w->nmodels; m++)
            if (!qw[m] && w->idle[m] > 0 && fits(ctl, w, fn, j, m)) {
                qw[m] = true;
                w->waiting[m] = true;
                qleft[q]--;
            }
    }
    free(set);
    free(qleft);
    free(fn);
}

double
al__waste_ratio(const al__waste_t *w, int64_t now_ms)
{
    double cap = 0, wasted = 0;
    int64_t now_stamp = now_ms / SLOT_MS;
    for (int s = 0; s < AL_WASTE_SLOTS; s++) {
        if (w->slot_stamp[s] <= now_stamp - AL_WASTE_SLOTS ||
            w->slot_stamp[s] > now_stamp)
            continue;
        cap += w->slot_cap[s];
        wasted += w->slot_wasted[s];
    }
    return cap > 0 ? wasted / cap : 0;
}

void
al__waste_fini(al__waste_t *w)
{
    free(w->qwaiting);
    for (int m = 0; m < w->nmodels; m++)
        free((char *)w->model[m]);
    memset(w, 0, sizeof *w);
}
