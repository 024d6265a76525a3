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
 * GPUs; see docs/simulation.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "sim_int.h"

/* ------------------------------------------------------------------ */
/* Policies                                                           */

typedef struct policy {
    const char *name;
    void (*configure)(al_config_t *cfg);
    bool single_queue; /* the core sees one queue holding every job */
    bool oracle;       /* priorities and estimates from the true duration */
    bool las;          /* priorities from attained service (Tiresias) */
} policy_t;

static void
cfg_allot(al_config_t *cfg)
{
    (void)cfg; /* the core's defaults are the allot policy */
}

static void
cfg_fifo(al_config_t *cfg)
{
    cfg->strict_order = true;
    cfg->reserve_depth = 0;
    cfg->reclaim = false;
    cfg->preempt = false;
    cfg->lend_reserved = false;
    cfg->ignore_queues = true;
    cfg->short_first = false;
}

static void
cfg_static(al_config_t *cfg)
{
    /* How most GPU clusters are run today: a fixed split, first come first
     * served inside each part, and the anti-starvation allot had before
     * it learnt shortest-first (oldest first after 12 h). */
    cfg->borrow = false;
    cfg->reclaim = false;
    cfg->short_first = false;
    cfg->starve_after = (int64_t)12 * 3600;
}

static void
cfg_backfill(al_config_t *cfg)
{
    cfg->ignore_queues = true;
    if (cfg->reserve_depth < 1)
        cfg->reserve_depth = 1;
    cfg->reclaim = false;
    cfg->preempt = false;
    cfg->lend_reserved = false;
    cfg->short_first = false;
}

static void
cfg_tiresias(al_config_t *cfg)
{
    /* One queue (the core preempts only inside a queue, and not at all with
     * ignore_queues), priority levels from attained service; a job of a
     * higher level preempts lower ones.  Tiresias has no reservations. */
    cfg->ignore_queues = false;
    cfg->reserve_depth = 0;
    cfg->reclaim = false;
    cfg->preempt = true;
    cfg->lend_reserved = false;
    cfg->usage_weight = 0;
    cfg->short_first = false;
}

static void
cfg_sjf(al_config_t *cfg)
{
    cfg->ignore_queues = true;
    cfg->reclaim = false;
    cfg->preempt = false;
    cfg->lend_reserved = false;
    if (cfg->reserve_depth < 1)
        cfg->reserve_depth = 1;
    cfg->short_first = false;
}

static const policy_t policies[AL_POLICY_COUNT] = {
    [AL_POLICY_ALLOT] = { .name = "allot", .configure = cfg_allot },
    [AL_POLICY_FIFO] = { .name = "fifo", .configure = cfg_fifo },
    [AL_POLICY_STATIC] = { .name = "static", .configure = cfg_static },
    [AL_POLICY_BACKFILL] = { .name = "backfill", .configure = cfg_backfill },
    [AL_POLICY_TIRESIAS] = { .name = "tiresias",
                             .configure = cfg_tiresias,
                             .single_queue = true,
                             .las = true },
    [AL_POLICY_SJF] = { .name = "sjf-oracle",
                        .configure = cfg_sjf,
                        .oracle = true },
};

const char *
al_policy_name(al_policy_t p)
{
    return (unsigned)p < AL_POLICY_COUNT ? policies[p].name : "?";
}

int
al_policy_find(const char *name)
{
    for (int i = 0; i < AL_POLICY_COUNT; i++)
        if (strcmp(policies[i].name, name) == 0)
            return i;
    return -1;
}

void
al_sim_opts_default(al_sim_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->policy = AL_POLICY_ALLOT;
    o->qmode = AL_QMODE_COLUMN;
    o->checkpoint = 1800;
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

/* splitmix64's finaliser (Steele, Lea and Flood, OOPSLA '14): a bijection
 * of 64-bit words whose outputs pass BigCrush for consecutive inputs. */
static uint64_t
mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

double
al_sim_estimate_noise(uint64_t seed, const char *job_id, double noise)
{
    if (noise == 0)
        return 1.0;
    /* Two uniforms from (seed, id), then Box-Muller.  u1 lies in (0, 1], so
     * the logarithm is finite; |z| stays below 8.6.  (6.28... is 2 pi:
     * M_PI is not in C17.) */
    uint64_t a = mix64(mix64(seed) ^ al__hash(job_id));
    uint64_t b = mix64(a);
    double u1 = (double)((a >> 11) + 1) * 0x1.0p-53;
    double u2 = (double)(b >> 11) * 0x1.0p-53;
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return exp(noise * z);
}

/* ceil(rem x factor x mult) within [1, AL_SIM_MAX_ESTIMATE]. */
static int64_t
estimate_of(int64_t rem, double factor, double mult)
{
    double e = ceil((double)rem * factor * mult);
    if (!(e >= 1))
        return 1;
    return e >= (double)AL_SIM_MAX_ESTIMATE ? AL_SIM_MAX_ESTIMATE : (int64_t)e;
}

int64_t
al_sim_estimate(const al_sim_opts_t *o, const char *job_id, int64_t rem)
{
    return estimate_of(
        rem, o->estimate_factor,
        al_sim_estimate_noise(o->estimate_seed, job_id, o->estimate_noise));
}

/* ------------------------------------------------------------------ */
/* State                                                              */

enum { S_FUTURE = 0, S_PENDING, S_RUNNING, S_DONE, S_UNSCHED };

typedef struct sjob {
    int state;
    int mq; /* metrics queue */
    int cq; /* core queue (a leaf) */
    int ntasks;
    int32_t gpus;  /* whole GPUs per task */
    int32_t milli; /* fractional GPU per task */
    int64_t cpu;   /* millicores per task */
    int64_t total; /* milli-GPUs of the whole job */
    int64_t saved; /* seconds of work kept by checkpoints */
    int64_t start; /* start of the current run */
    int64_t pend_since;
    int64_t eligible;
    double attained;  /* GPU-seconds over finished runs (Tiresias) */
    uint32_t seq;     /* bumps on every start/evict: stale events die */
    int prio_oracle;  /* sjf-oracle priority */
    double est_noise; /* al_sim_estimate_noise of the job, fixed for the run */
    int act;          /* position in the active array, -1 none */
    bool lent;
    al_placement_t *place;
} sjob_t;

enum { EV_END = 0, EV_PRIO };

typedef struct event {
    int64_t t;
    int kind;
    int job;
    uint32_t seq;
} event_t;

typedef struct sim {
    const al_trace_t *tr;
    const al_cluster_t *cl;
    const al_sim_opts_t *o;
    const policy_t *pol;
    al_config_t cfg;
    sjob_t *jobs;
    int njobs;
    /* queues */
    int nmq; /* metrics queues (leaves) */
    char **mq_names;
    double *mq_deserved; /* GPUs */
    int *mq_to_cq;
    int ncq; /* core queues */
    al_queue_t *cq;
    char **cq_names;
    int64_t *cq_alloc; /* milli-GPUs running per core queue */
    double *cq_fair;   /* last fair share, milli */
    int64_t *mq_alloc, *mq_pend;
    /* cluster */
    int64_t tot[AL_NRES]; /* capacity per resource */
    int *dev_base;
    int32_t *dev_used; /* milli per device */
    int *free_whole;   /* free whole devices per node */
    int64_t *cpu_used;
    int64_t alloc; /* milli-GPUs allocated */
    int64_t npend, nrun;
    /* arrivals */
    int next;        /* next trace job to arrive */
    int64_t arrived; /* milli-GPUs requested by the jobs arrived so far */
    int64_t next_tick;
    /* active jobs */
    int *act;
    int nact;
    /* events */
    event_t *heap;
    int nheap, capheap;
    /* snapshot scratch */
    al_job_t *sj;
    int *smap;
    int capsj;
    al_block_cache_t cache; /* the core allocates here (core/alloc.h) */
    al_allocator_t allocator;
    /* metrics */
    al_sim_result_t *r;
    bool wasted;
    int64_t *ts_t, *ts_a;
    int nts, capts;
    char *err;
    int rc;
} sim_t;

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Event heap (min by time, then kind, then job: deterministic)        */

static bool
ev_less(const event_t *a, const event_t *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    return a->job < b->job;
}

static void
heap_push(sim_t *s, event_t e)
{
    if (s->nheap == s->capheap) {
        s->capheap = s->capheap ? 2 * s->capheap : 1024;
        s->heap = al_xrealloc(s->heap, (size_t)s->capheap * sizeof(event_t));
    }
    int i = s->nheap++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!ev_less(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

static event_t
heap_pop(sim_t *s)
{
    event_t top = s->heap[0];
    event_t last = s->heap[--s->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && ev_less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_less(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0)
        s->heap[i] = last;
    return top;
}

/* Drops stale events at the top; returns whether one is left. */
static bool
heap_clean(sim_t *s)
{
    while (s->nheap > 0) {
        const event_t *e = &s->heap[0];
        const sjob_t *j = &s->jobs[e->job];
        if (j->state == S_RUNNING && j->seq == e->seq)
            return true;
        heap_pop(s);
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* Setup                                                              */

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
find_name(char **names, int n, const char *key)
{
    /* names are sorted */
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int m = (lo + hi) / 2;
        int c = strcmp(names[m], key);
        if (c == 0)
            return m;
        if (c < 0)
            lo = m + 1;
        else
            hi = m - 1;
    }
    return -1;
}

/* Metrics queues from a trace column: distinct values, sorted. */
static void
queues_from_column(sim_t *s, bool user)
{
    char **v = al_xmalloc((size_t)(s->njobs + 1) * sizeof(char *));
    for (int i = 0; i < s->njobs; i++) {
        const al_trace_job_t *tj = &s->tr->jobs[i];
        v[i] = user ? tj->user : tj->queue;
    }
    qsort(v, (size_t)s->njobs, sizeof(char *), cmp_str);
    int n = 0;
    for (int i = 0; i < s->njobs; i++)
        if (n == 0 || strcmp(v[n - 1], v[i]) != 0)
            v[n++] = v[i];
    if (n == 0)
        v[n++] = (char *)"";
    s->nmq = n;
    s->mq_names = al_xmalloc((size_t)n * sizeof(char *));
    for (int i = 0; i < n; i++)
        s->mq_names[i] = al_xstrdup(v[i][0] ? v[i] : "default");
    for (int i = 0; i < s->njobs; i++) {
        const al_trace_job_t *tj = &s->tr->jobs[i];
        const char *key = user ? tj->user : tj->queue;
        int q = find_name(v, n, key);
        s->jobs[i].mq = q < 0 ? 0 : q;
    }
    free(v);
}

/* A quota with no limit and over-quota weight w. */
static al_quota_t
quota(int64_t deserved, double w)
{
    return (
        al_quota_t){ .deserved = deserved, .limit = AL_UNLIMITED, .weight = w };
}

/* Core queues from a --queues-file; metrics queues are its leaves. */
static void
queues_from_file(sim_t *s)
{
    const al_queues_t *qf = s->o->qfile;
    double cap = (double)s->tot[AL_RES_GPU] / AL_GPU_MILLI;
    bool *leaf = al_xcalloc((size_t)qf->nqueues, sizeof(bool));
    for (int i = 0; i < qf->nqueues; i++)
        leaf[i] = true;
    for (int i = 0; i < qf->nqueues; i++)
        if (qf->queues[i].parent >= 0)
            leaf[qf->queues[i].parent] = false;
    s->ncq = qf->nqueues;
    s->cq = al_xcalloc((size_t)s->ncq, sizeof(al_queue_t));
    s->cq_names = al_xcalloc((size_t)s->ncq, sizeof(char *));
    s->nmq = 0;
    s->mq_names = al_xcalloc((size_t)s->ncq, sizeof(char *));
    s->mq_deserved = al_xcalloc((size_t)s->ncq, sizeof(double));
    s->mq_to_cq = al_xcalloc((size_t)s->ncq, sizeof(int));
    for (int i = 0; i < qf->nqueues; i++) {
        const al_qdef_t *d = &qf->queues[i];
        al_queue_t *q = &s->cq[i];
        s->cq_names[i] = al_xstrdup(d->name);
        q->name = s->cq_names[i];
        q->parent = d->parent;
        q->priority = d->priority;
        /* CPU and memory: the same fraction of the cluster as the GPUs. */
        double frac = cap > 0 ? d->deserved / cap : 0;
        q->quota[AL_RES_GPU] =
            quota(llround(d->deserved * AL_GPU_MILLI), d->weight);
        if (d->limit >= 0)
            q->quota[AL_RES_GPU].limit = llround(d->limit * AL_GPU_MILLI);
        q->quota[AL_RES_CPU] =
            quota(llround(frac * (double)s->tot[AL_RES_CPU]), d->weight);
        q->quota[AL_RES_MEM] =
            quota(llround(frac * (double)s->tot[AL_RES_MEM]), d->weight);
        if (leaf[i]) {
            s->mq_names[s->nmq] = al_xstrdup(d->name);
            s->mq_deserved[s->nmq] = d->deserved;
            s->mq_to_cq[s->nmq] = i;
            s->nmq++;
        }
    }
    free(leaf);
    /* Jobs go to the leaf named by their queue column, else by their user
     * column, else to a leaf by a stable hash of job_id. */
    for (int i = 0; i < s->njobs; i++) {
        const al_trace_job_t *tj = &s->tr->jobs[i];
        int m = -1;
        for (int k = 0; k < s->nmq && m < 0; k++)
            if (strcmp(s->mq_names[k], tj->queue) == 0)
                m = k;
        for (int k = 0; k < s->nmq && m < 0; k++)
            if (strcmp(s->mq_names[k], tj->user) == 0)
                m = k;
        if (m < 0 && s->nmq > 0)
            m = (int)(al__hash(tj->id) % (uint64_t)s->nmq);
        s->jobs[i].mq = m < 0 ? 0 : m;
    }
}

/* Flat queues (trace column or --queues N), each deserving 1/N of every
 * resource with equal over-quota weight. */
static void
queues_flat(sim_t *s)
{
    if (s->o->qmode == AL_QMODE_HASH) {
        s->nmq = s->o->nqueues;
        s->mq_names = al_xmalloc((size_t)s->nmq * sizeof(char *));
        for (int q = 0; q < s->nmq; q++) {
            s->mq_names[q] = al_xasprintf("q%d", q);
        }
        for (int i = 0; i < s->njobs; i++)
            s->jobs[i].mq =
                (int)(al__hash(s->tr->jobs[i].id) % (uint64_t)s->nmq);
    } else {
        queues_from_column(s, s->o->qmode == AL_QMODE_USER);
    }
    s->ncq = s->nmq;
    s->cq = al_xcalloc((size_t)s->ncq, sizeof(al_queue_t));
    s->cq_names = al_xcalloc((size_t)s->ncq, sizeof(char *));
    s->mq_deserved = al_xcalloc((size_t)s->nmq, sizeof(double));
    s->mq_to_cq = al_xcalloc((size_t)s->nmq, sizeof(int));
    for (int q = 0; q < s->nmq; q++) {
        al_queue_t *cq = &s->cq[q];
        s->cq_names[q] = al_xstrdup(s->mq_names[q]);
        cq->name = s->cq_names[q];
        cq->parent = -1;
        for (int r = 0; r < AL_NRES; r++) {
            /* The remainder goes to the first queues. */
            int64_t share = s->tot[r] / s->nmq + (q < s->tot[r] % s->nmq);
            cq->quota[r] = quota(share, 1.0);
        }
        s->mq_deserved[q] =
            (double)cq->quota[AL_RES_GPU].deserved / AL_GPU_MILLI;
        s->mq_to_cq[q] = q;
    }
}

/* Replaces the core queues by one queue deserving the whole cluster. */
static void
single_core_queue(sim_t *s)
{
    for (int i = 0; i < s->ncq; i++)
        free(s->cq_names[i]);
    s->ncq = 1;
    s->cq = al_xrealloc(s->cq, sizeof(al_queue_t));
    memset(s->cq, 0, sizeof(al_queue_t));
    s->cq_names[0] = al_xstrdup("all");
    s->cq->name = s->cq_names[0];
    s->cq->parent = -1;
    for (int r = 0; r < AL_NRES; r++)
        s->cq->quota[r] = quota(s->tot[r], 1.0);
    for (int i = 0; i < s->njobs; i++)
        s->jobs[i].cq = 0;
}

static void
setup_queues(sim_t *s)
{
    s->tot[AL_RES_GPU] = s->cl->gpu_capacity;
    for (int n = 0; n < s->cl->nnodes; n++) {
        s->tot[AL_RES_CPU] += s->cl->nodes[n].cpu_milli;
        s->tot[AL_RES_MEM] += s->cl->nodes[n].mem_bytes;
    }
    if (s->o->qmode == AL_QMODE_FILE)
        queues_from_file(s);
    else
        queues_flat(s);
    for (int i = 0; i < s->njobs; i++)
        s->jobs[i].cq = s->mq_to_cq[s->jobs[i].mq];
    if (s->pol->single_queue)
        single_core_queue(s);
    s->cq_alloc = al_xcalloc((size_t)s->ncq, sizeof(int64_t));
    s->cq_fair = al_xcalloc((size_t)s->ncq, sizeof(double));
    s->mq_alloc = al_xcalloc((size_t)s->nmq, sizeof(int64_t));
    s->mq_pend = al_xcalloc((size_t)s->nmq, sizeof(int64_t));
}

/* Splits a job into a gang of identical tasks that nodes can hold. */
static void
shape_job(const al_cluster_t *cl, sjob_t *j, const al_trace_job_t *tj)
{
    j->total = tj->gpu_milli;
    j->ntasks = 1;
    if (tj->gpu_milli < AL_GPU_MILLI) {
        j->milli = (int32_t)tj->gpu_milli;
        j->gpus = 0;
    } else {
        int64_t g = tj->gpu_milli / AL_GPU_MILLI;
        int64_t per = cl->max_gpus_per_node;
        if (per < 1)
            per = 1;
        if (g <= per) {
            j->gpus = (int32_t)g;
        } else {
            int64_t d = per;
            while (d > 1 && g % d != 0)
                d--;
            j->gpus = (int32_t)d;
            j->ntasks = (int)(g / d);
        }
    }
    j->cpu = (tj->cpu_milli + j->ntasks - 1) / j->ntasks;
}

/* Orders shapes by request. */
static int
cmp_request(const void *pa, const void *pb)
{
    const al_shape_t *a = pa, *b = pb;

    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    if (a->gpu_milli != b->gpu_milli)
        return a->gpu_milli < b->gpu_milli ? -1 : 1;
    if (a->cpu_milli != b->cpu_milli)
        return a->cpu_milli < b->cpu_milli ? -1 : 1;
    return 0;
}

/* Orders shapes by weight, most popular first, then by request. */
static int
cmp_popular(const void *pa, const void *pb)
{
    const al_shape_t *a = pa, *b = pb;

    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    return cmp_request(pa, pb);
}

int
al_sim_profile(const al_trace_t *tr, const al_cluster_t *cl, double coverage,
               al_shape_t **out)
{
    al_shape_t *all = al_xcalloc((size_t)tr->njobs + 1, sizeof(*all));
    double total = 0, cum = 0;
    int n = 0, k;

    for (int i = 0; i < tr->njobs; i++) {
        sjob_t j;

        memset(&j, 0, sizeof(j));
        shape_job(cl, &j, &tr->jobs[i]);
        all[i].gpus = j.gpus;
        all[i].gpu_milli = j.milli;
        all[i].cpu_milli = j.cpu;
        all[i].weight = j.ntasks;
        total += j.ntasks;
    }
    /* Equal requests side by side, then merged. */
    qsort(all, (size_t)tr->njobs, sizeof(*all), cmp_request);
    for (int i = 0; i < tr->njobs; i++) {
        if (n > 0 && cmp_request(&all[n - 1], &all[i]) == 0)
            all[n - 1].weight += all[i].weight;
        else
            all[n++] = all[i];
    }
    qsort(all, (size_t)n, sizeof(*all), cmp_popular);
    /* The most popular shapes that together cover `coverage` of tasks. */
    for (k = 0; k < n && (k == 0 || cum < coverage * total); k++)
        cum += all[k].weight;
    *out = all;
    return k;
}

/* Tasks of job j node n could hold, given its free resources (or all of
 * them when empty). */
static int64_t
node_fits(const sim_t *s, const sjob_t *j, int n, bool empty, int64_t want)
{
    const al_node_t *nd = &s->cl->nodes[n];
    if (nd->state != AL_NODE_READY)
        return 0;
    int64_t cnt;
    if (j->gpus > 0) {
        cnt = (empty ? nd->ndevices : s->free_whole[n]) / j->gpus;
    } else if (j->milli > 0) {
        cnt = 0;
        for (int d = 0; d < nd->ndevices && cnt < want; d++) {
            int32_t used = empty ? 0 : s->dev_used[s->dev_base[n] + d];
            if (AL_GPU_MILLI - used >= j->milli)
                cnt++;
        }
    } else {
        cnt = want;
    }
    if (j->cpu > 0) {
        int64_t fc = nd->cpu_milli - (empty ? 0 : s->cpu_used[n]);
        int64_t c = fc / j->cpu;
        if (c < cnt)
            cnt = c;
    }
    return cnt;
}

static bool
fits(const sim_t *s, const sjob_t *j, bool empty)
{
    int64_t cnt = 0;
    for (int n = 0; n < s->cl->nnodes && cnt < j->ntasks; n++)
        cnt += node_fits(s, j, n, empty, j->ntasks - cnt);
    return cnt >= j->ntasks;
}

/* Whether job j can never start under the policy. */
static bool
never_fits(const sim_t *s, const sjob_t *j)
{
    if (!fits(s, j, true))
        return true;
    if (s->pol->single_queue || s->cfg.ignore_queues)
        return false;
    /* Limits at every ancestor; deserved quota under the static policy. */
    for (int q = j->cq; q >= 0; q = s->cq[q].parent) {
        const al_quota_t *g = &s->cq[q].quota[AL_RES_GPU];
        if (g->limit != AL_UNLIMITED && j->total > g->limit)
            return true;
        if (!s->cfg.borrow && j->total > g->deserved)
            return true;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* Job state changes                                                  */

static void
act_add(sim_t *s, int i)
{
    s->act[s->nact] = i;
    s->jobs[i].act = s->nact++;
}

static void
act_remove(sim_t *s, int i)
{
    int pos = s->jobs[i].act;
    int last = s->act[--s->nact];
    s->act[pos] = last;
    s->jobs[last].act = pos;
    s->jobs[i].act = -1;
}

static void set_error(sim_t *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_error(sim_t *s, int rc, const char *fmt, ...)
{
    if (s->err != NULL)
        return;
    al_buf_t b = AL_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    al_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    s->err = al_buf_steal(&b);
    s->rc = rc;
}

/* Takes or returns the resources of j's placement (sign +1 or -1). */
static int
account(sim_t *s, int i, int sign)
{
    sjob_t *j = &s->jobs[i];
    int bad = 0;
    for (int t = 0; t < j->ntasks; t++) {
        const al_placement_t *p = &j->place[t];
        int n = p->node;
        const al_node_t *nd = &s->cl->nodes[n];
        s->cpu_used[n] += sign * j->cpu;
        for (int d = 0; d < nd->ndevices; d++) {
            if (!(p->devices >> d & 1))
                continue;
            int32_t *u = &s->dev_used[s->dev_base[n] + d];
            int32_t amt = j->gpus > 0 ? AL_GPU_MILLI : p->gpu_milli;
            if (j->gpus == 0 && amt == 0)
                amt = j->milli;
            bool was_free = *u == 0;
            *u += sign * amt;
            if (*u > AL_GPU_MILLI || *u < 0)
                bad = 1;
            if (was_free && *u != 0)
                s->free_whole[n]--;
            else if (!was_free && *u == 0)
                s->free_whole[n]++;
        }
    }
    s->alloc += sign * j->total;
    s->cq_alloc[j->cq] += sign * j->total;
    s->mq_alloc[j->mq] += sign * j->total;
    return bad;
}

/* Schedules the moment running job i's attained service crosses its next
 * Tiresias threshold (nothing after the last one). */
static void
push_prio_event(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    double gpus = (double)j->total / AL_GPU_MILLI;
    if (gpus <= 0)
        return;
    /* Service attained so far, the current run included. */
    double att = j->attained + (double)(now - j->start) * gpus;
    for (int l = 0; l < s->o->ntiresias; l++) {
        double thr = s->o->tiresias_thresholds[l];
        if (att < thr) {
            int64_t dt = (int64_t)ceil((thr - att) / gpus);
            heap_push(s,
                      (event_t){ now + (dt > 0 ? dt : 1), EV_PRIO, i, j->seq });
            return;
        }
    }
}

static void
start_job(sim_t *s, int i, const al_decision_t *d, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    const al_trace_job_t *tj = &s->tr->jobs[i];
    al_sim_job_t *rj = &s->r->jobs[i];
    if (d->ntasks != j->ntasks) {
        set_error(s, AL_EINVAL, "core started job %s with %d tasks, it has %d",
                  tj->id, d->ntasks, j->ntasks);
        return;
    }
    j->place =
        al_xrealloc(j->place, (size_t)j->ntasks * sizeof(al_placement_t));
    memcpy(j->place, d->tasks, (size_t)j->ntasks * sizeof(al_placement_t));
    for (int t = 0; t < j->ntasks; t++)
        if (j->place[t].node < 0 || j->place[t].node >= s->cl->nnodes) {
            set_error(s, AL_EINVAL, "core placed job %s on node %d", tj->id,
                      j->place[t].node);
            return;
        }
    j->state = S_RUNNING;
    j->start = now;
    j->lent = d->lent;
    j->seq++;
    s->npend--;
    s->nrun++;
    s->mq_pend[j->mq] -= j->total;
    rj->pending += now - j->pend_since;
    if (rj->first_start < 0)
        rj->first_start = now;
    if (account(s, i, +1))
        set_error(s, AL_EINVAL,
                  "core over-committed a GPU when starting job %s at t=%lld",
                  tj->id, (long long)now);
    heap_push(s,
              (event_t){ now + (tj->duration - j->saved), EV_END, i, j->seq });
    if (s->pol->las)
        push_prio_event(s, i, now);
}

static void
evict_job(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    al_sim_job_t *rj = &s->r->jobs[i];
    int64_t run = now - j->start;
    int64_t keep =
        s->o->checkpoint > 0 ? run / s->o->checkpoint * s->o->checkpoint : 0;
    int64_t lost = run - keep;
    j->saved += keep;
    j->attained += (double)run * (double)j->total / AL_GPU_MILLI;
    rj->lost += lost * j->total;
    rj->preemptions++;
    s->r->preemptions++;
    s->r->lost_gpu_s += (double)lost * (double)j->total / AL_GPU_MILLI;
    account(s, i, -1);
    j->state = S_PENDING;
    j->seq++;
    j->pend_since = now;
    j->eligible = now;
    j->lent = false;
    s->nrun--;
    s->npend++;
    s->mq_pend[j->mq] += j->total;
}

static void
complete_job(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    account(s, i, -1);
    j->state = S_DONE;
    j->seq++;
    s->nrun--;
    s->r->jobs[i].end = now;
    act_remove(s, i);
    free(j->place);
    j->place = NULL;
}

static void
mark_unschedulable(sim_t *s, int i)
{
    sjob_t *j = &s->jobs[i];
    j->state = S_UNSCHED;
    s->npend--;
    s->mq_pend[j->mq] -= j->total;
    s->r->jobs[i].unschedulable = true;
    act_remove(s, i);
}

/* ------------------------------------------------------------------ */
/* The cycle                                                          */

static int
job_priority(const sim_t *s, const sjob_t *j, int64_t now)
{
    if (s->pol->oracle)
        return j->prio_oracle;
    if (s->pol->las) {
        double att = j->attained;
        if (j->state == S_RUNNING)
            att += (double)(now - j->start) * (double)j->total / AL_GPU_MILLI;
        int level = 0;
        while (level < s->o->ntiresias &&
               att >= s->o->tiresias_thresholds[level])
            level++;
        return AL_PRIO_TRAIN - level;
    }
    return AL_PRIO_TRAIN;
}

/* Runs one core cycle at `now`; returns the number of evictions. */
static int
cycle(sim_t *s, int64_t now)
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
        x->priority = job_priority(s, j, now);
        x->preemptible = true;
        x->min_tasks = x->max_tasks = j->ntasks;
        x->req.gpus = j->gpus;
        x->req.gpu_milli = j->milli;
        x->req.cpu_milli = j->cpu;
        x->submit_time = tj->submit;
        x->eligible_time = j->eligible;
        int64_t rem = tj->duration - j->saved;
        if (s->pol->oracle)
            x->estimate = rem < 1 ? 1 : rem;
        else
            x->estimate = estimate_of(rem, s->o->estimate_factor, j->est_noise);
        x->topo_mode = AL_TOPO_NONE;
        if (j->state == S_RUNNING) {
            x->state = AL_JOB_RUNNING;
            x->start_time = j->start;
            if (s->o->checkpoint > 0)
                x->checkpoint_time = j->start + (now - j->start) /
                                                    s->o->checkpoint *
                                                    s->o->checkpoint;
            x->lent = j->lent;
            x->ntasks = j->ntasks;
            x->placement = j->place;
        } else {
            x->state = AL_JOB_PENDING;
        }
    }
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
    double t0 = now_s();
    int rc = al_sched_run(&snap, &res, &cause);
    s->r->core_ms += (now_s() - t0) * 1000;
    s->r->cycles++;
    if (rc < 0) {
        set_error(s, rc, "core cycle at t=%lld failed: %s: %s", (long long)now,
                  al_err_name(rc), cause ? cause : al_strerror(rc));
        free(cause);
        return 0;
    }
    int nev = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int d = 0; d < res->ndecisions; d++) {
            const al_decision_t *dec = &res->decisions[d];
            if (dec->job < 0 || dec->job >= n) {
                set_error(s, AL_EINVAL, "core decision for job index %d",
                          dec->job);
                continue;
            }
            int i = s->smap[dec->job];
            sjob_t *j = &s->jobs[i];
            if (pass == 0 && dec->kind != AL_DEC_START) {
                if (j->state != S_RUNNING) {
                    set_error(s, AL_EINVAL,
                              "core evicted job %s (snapshot index %d, "
                              "decision %d, why %d, for job %d) at t=%lld, "
                              "but it is not running",
                              s->tr->jobs[i].id, dec->job, d, (int)dec->why,
                              dec->for_job, (long long)now);
                    continue;
                }
                /* SHRINK cannot happen (no elastic jobs): treat as evict. */
                evict_job(s, i, now);
                nev++;
            } else if (pass == 1 && dec->kind == AL_DEC_START) {
                if (j->state != S_PENDING) {
                    set_error(s, AL_EINVAL,
                              "core started job %s (snapshot index %d, "
                              "decision %d) at t=%lld, but it is not pending",
                              s->tr->jobs[i].id, dec->job, d, (long long)now);
                    continue;
                }
                start_job(s, i, dec, now);
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
                 c == AL_WHY_DEPS_NEVER || c == AL_WHY_BAD_QUEUE))
                mark_unschedulable(s, i);
        }
    }
    if (res->queues != NULL && res->nqueues == s->ncq)
        for (int q = 0; q < s->ncq; q++)
            s->cq_fair[q] = res->queues[q].fair[AL_RES_GPU];
    al_result_destroy(res);
    return nev;
}

/* ------------------------------------------------------------------ */
/* Metrics between events                                             */

/* Whether some pending job would fit on the idle GPUs now. */
static bool
compute_wasted(sim_t *s)
{
    if (s->npend == 0 || s->alloc >= s->r->capacity)
        return false;
    struct shape {
        int32_t gpus, milli;
        int ntasks;
        int64_t cpu;
    } seen[32];
    int nseen = 0;
    for (int a = 0; a < s->nact; a++) {
        const sjob_t *j = &s->jobs[s->act[a]];
        if (j->state != S_PENDING)
            continue;
        if (j->total > s->r->capacity - s->alloc)
            continue;
        bool dup = false;
        for (int k = 0; k < nseen && !dup; k++)
            dup = seen[k].gpus == j->gpus && seen[k].milli == j->milli &&
                  seen[k].ntasks == j->ntasks && seen[k].cpu == j->cpu;
        if (dup)
            continue;
        if (fits(s, j, false))
            return true;
        if (nseen < 32)
            seen[nseen++] =
                (struct shape){ j->gpus, j->milli, j->ntasks, j->cpu };
    }
    return false;
}

/* Metrics queue q's fair share in milli-GPUs: the core's, or its deserved
 * share when the core sees no queues (ignore_queues computes no fair share;
 * tiresias gets one queue holding everything). */
static double
fair_of(const sim_t *s, int q)
{
    if (s->pol->single_queue || s->cfg.ignore_queues)
        return s->mq_deserved[q] * AL_GPU_MILLI;
    return s->cq_fair[s->mq_to_cq[q]];
}

static void
advance(sim_t *s, int64_t from, int64_t to)
{
    if (to <= from)
        return;
    double dt = (double)(to - from);
    al_sim_result_t *r = s->r;
    r->alloc_gpu_s += (double)s->alloc / AL_GPU_MILLI * dt;
    if (s->wasted) {
        r->wasted_s += dt;
        r->wasted_gpu_s += (double)(r->capacity - s->alloc) / AL_GPU_MILLI * dt;
    }
    for (int q = 0; q < s->nmq; q++) {
        al_sim_queue_t *rq = &r->queues[q];
        rq->alloc_gpu_s += (double)s->mq_alloc[q] / AL_GPU_MILLI * dt;
        rq->demand_gpu_s +=
            (double)(s->mq_alloc[q] + s->mq_pend[q]) / AL_GPU_MILLI * dt;
        double fair = fair_of(s, q);
        rq->fair_gpu_s += fair / AL_GPU_MILLI * dt;
    }
    for (int q = 0; q < s->ncq; q++)
        s->cq[q].usage =
            al_usage_decay(s->cq[q].usage, to - from, s->o->usage_half_life) +
            (double)s->cq_alloc[q] * dt;
}

static void
ts_header(sim_t *s)
{
    FILE *f = s->o->timeseries;
    fprintf(f, "time_s,util,alloc_gpus,running_jobs,pending_jobs,"
               "pending_gpus");
    for (int q = 0; q < s->nmq; q++)
        fprintf(f, ",alloc_gpus:%s,pending_gpus:%s,fair_gpus:%s",
                s->mq_names[q], s->mq_names[q], s->mq_names[q]);
    fputc('\n', f);
}

static void
ts_row(sim_t *s, int64_t now)
{
    FILE *f = s->o->timeseries;
    int64_t pend = 0;
    for (int q = 0; q < s->nmq; q++)
        pend += s->mq_pend[q];
    fprintf(f, "%lld,%.4f,%.3f,%lld,%lld,%.3f", (long long)now,
            (double)s->alloc / (double)s->r->capacity,
            (double)s->alloc / AL_GPU_MILLI, (long long)s->nrun,
            (long long)s->npend, (double)pend / AL_GPU_MILLI);
    for (int q = 0; q < s->nmq; q++) {
        double fair = fair_of(s, q);
        fprintf(f, ",%.3f,%.3f,%.3f", (double)s->mq_alloc[q] / AL_GPU_MILLI,
                (double)s->mq_pend[q] / AL_GPU_MILLI, fair / AL_GPU_MILLI);
    }
    fputc('\n', f);
}

static void
ts_record(sim_t *s, int64_t now)
{
    if (s->nts > 0 && s->ts_t[s->nts - 1] == now) {
        s->ts_a[s->nts - 1] = s->alloc;
        return;
    }
    if (s->nts == s->capts) {
        s->capts = s->capts ? 2 * s->capts : 4096;
        s->ts_t = al_xrealloc(s->ts_t, (size_t)s->capts * sizeof(int64_t));
        s->ts_a = al_xrealloc(s->ts_a, (size_t)s->capts * sizeof(int64_t));
    }
    s->ts_t[s->nts] = now;
    s->ts_a[s->nts++] = s->alloc;
}

/* Averages the recorded allocation over AL_SIM_BINS equal bins. */
static void
fill_bins(sim_t *s)
{
    al_sim_result_t *r = s->r;
    double span = (double)(r->t_last - r->t_first);
    if (span <= 0 || s->nts == 0 || r->capacity <= 0)
        return;
    double w = span / AL_SIM_BINS;
    double acc[AL_SIM_BINS] = { 0 };
    for (int k = 0; k < s->nts; k++) {
        double a = (double)s->ts_t[k] - (double)r->t_first;
        double b =
            k + 1 < s->nts ? (double)s->ts_t[k + 1] - (double)r->t_first : span;
        if (b > span)
            b = span;
        double v = (double)s->ts_a[k] / (double)r->capacity;
        if (b <= a)
            continue;
        /* Walk the bins by index: stepping `a` by float bin ends can stall
         * on rounding. */
        int bin = (int)(a / w);
        if (bin >= AL_SIM_BINS)
            bin = AL_SIM_BINS - 1;
        for (; bin < AL_SIM_BINS; bin++) {
            double lo = fmax(a, bin * w);
            double hi = bin == AL_SIM_BINS - 1 ? b : fmin(b, (bin + 1) * w);
            if (hi > lo)
                acc[bin] += v * (hi - lo);
            if (hi >= b)
                break;
        }
    }
    for (int b = 0; b < AL_SIM_BINS; b++)
        r->util_bins[b] = acc[b] / w;
}

/* ------------------------------------------------------------------ */
/* The run                                                            */

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* sjf-oracle: shorter true duration = higher priority (rank based, so the
 * values stay small). */
static void
oracle_priorities(sim_t *s)
{
    int64_t *d = al_xmalloc((size_t)(s->njobs + 1) * sizeof(int64_t));
    for (int i = 0; i < s->njobs; i++)
        d[i] = s->tr->jobs[i].duration;
    qsort(d, (size_t)s->njobs, sizeof(int64_t), cmp_i64);
    int nd = 0;
    for (int i = 0; i < s->njobs; i++)
        if (nd == 0 || d[nd - 1] != d[i])
            d[nd++] = d[i];
    for (int i = 0; i < s->njobs; i++) {
        int64_t v = s->tr->jobs[i].duration;
        int lo = 0, hi = nd - 1;
        while (lo < hi) {
            int m = (lo + hi) / 2;
            if (d[m] < v)
                lo = m + 1;
            else
                hi = m;
        }
        s->jobs[i].prio_oracle = 1 + (nd - 1 - lo);
    }
    free(d);
}

static void
progress(sim_t *s, int64_t now, double *last, bool final)
{
    if (!s->o->progress)
        return;
    double t = now_s();
    if (!final && t - *last < 0.5)
        return;
    *last = t;
    int done = 0;
    for (int i = 0; i < s->njobs; i++)
        done += s->jobs[i].state >= S_DONE;
    fprintf(stderr,
            "\rsim %-10s day %6.1f  jobs %d/%d  running %lld  "
            "pending %lld  cycles %lld%s",
            s->pol->name, (double)(now - s->r->t_first) / 86400, done, s->njobs,
            (long long)s->nrun, (long long)s->npend, (long long)s->r->cycles,
            final ? "\n" : "");
    fflush(stderr);
}

static void
sim_free(sim_t *s)
{
    for (int i = 0; i < s->njobs; i++)
        free(s->jobs[i].place);
    free(s->jobs);
    for (int q = 0; q < s->nmq; q++)
        free(s->mq_names[q]);
    free(s->mq_names);
    free(s->mq_deserved);
    free(s->mq_to_cq);
    for (int q = 0; q < s->ncq; q++)
        free(s->cq_names[q]);
    free(s->cq_names);
    free(s->cq);
    free(s->cq_alloc);
    free(s->cq_fair);
    free(s->mq_alloc);
    free(s->mq_pend);
    free(s->dev_base);
    free(s->dev_used);
    free(s->free_whole);
    free(s->cpu_used);
    free(s->act);
    free(s->heap);
    free(s->sj);
    free(s->smap);
    free(s->ts_t);
    free(s->ts_a);
    al_block_cache_fini(&s->cache);
}

/* Builds the state and the empty result of a run. */
static void
sim_init(sim_t *s, const al_trace_t *trace, const al_cluster_t *cluster,
         const al_sim_opts_t *opts)
{
    static const char *const levels[] = { "rack" };
    s->tr = trace;
    s->cl = cluster;
    s->o = opts;
    s->pol = &policies[opts->policy];
    s->allocator = al_block_cache_allocator(&s->cache);
    al_config_default(&s->cfg);
    if (cluster->racks) {
        s->cfg.ntopo_levels = 1;
        s->cfg.topo_levels = levels;
    }
    if (opts->usage_weight >= 0)
        s->cfg.usage_weight = opts->usage_weight;
    s->pol->configure(&s->cfg);
    if (opts->pack >= 0)
        s->cfg.pack = (al_pack_t)opts->pack;
    if (opts->short_first >= 0)
        s->cfg.short_first = opts->short_first != 0;
    s->cfg.nprofile = opts->nprofile;
    s->cfg.profile = opts->profile;
    s->njobs = trace->njobs;
    s->jobs = al_xcalloc((size_t)s->njobs + 1, sizeof(sjob_t));
    setup_queues(s);

    al_sim_result_t *r = al_xcalloc(1, sizeof(*r));
    s->r = r;
    r->policy = opts->policy;
    r->trace = trace;
    r->njobs = s->njobs;
    r->jobs = al_xcalloc((size_t)s->njobs + 1, sizeof(al_sim_job_t));
    r->capacity = cluster->gpu_capacity;
    r->nqueues = s->nmq;
    r->queues = al_xcalloc((size_t)s->nmq, sizeof(al_sim_queue_t));
    r->alloc_at_full = -1;
    for (int q = 0; q < s->nmq; q++) {
        r->queues[q].name = al_xstrdup(s->mq_names[q]);
        r->queues[q].deserved_gpus = s->mq_deserved[q];
    }
    for (int i = 0; i < s->njobs; i++) {
        shape_job(cluster, &s->jobs[i], &trace->jobs[i]);
        s->jobs[i].act = -1;
        s->jobs[i].est_noise = al_sim_estimate_noise(
            opts->estimate_seed, trace->jobs[i].id, opts->estimate_noise);
        r->jobs[i].queue = s->jobs[i].mq;
        r->jobs[i].first_start = -1;
        r->jobs[i].end = -1;
    }
    if (s->pol->oracle)
        oracle_priorities(s);

    int nn = cluster->nnodes;
    s->dev_base = al_xcalloc((size_t)nn + 1, sizeof(int));
    for (int n = 0; n < nn; n++)
        s->dev_base[n + 1] = s->dev_base[n] + cluster->nodes[n].ndevices;
    s->dev_used = al_xcalloc((size_t)s->dev_base[nn] + 1, sizeof(int32_t));
    s->free_whole = al_xcalloc((size_t)nn + 1, sizeof(int));
    for (int n = 0; n < nn; n++)
        s->free_whole[n] = cluster->nodes[n].ndevices;
    s->cpu_used = al_xcalloc((size_t)nn + 1, sizeof(int64_t));
    s->act = al_xcalloc((size_t)s->njobs + 1, sizeof(int));
    s->next_tick = -1;
}

/* The time of the next event after `now`, or INT64_MAX when nothing will
 * ever change again. */
static int64_t
next_event(sim_t *s, int64_t now)
{
    int64_t t = INT64_MAX;
    if (s->next < s->njobs)
        t = s->tr->jobs[s->next].submit;
    if (heap_clean(s) && s->heap[0].t < t)
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
        sjob_t *j = &s->jobs[i];
        j->state = S_PENDING;
        j->pend_since = now;
        j->eligible = s->tr->jobs[i].submit;
        s->npend++;
        s->mq_pend[j->mq] += j->total;
        act_add(s, i);
        s->arrived += j->total;
        if (never_fits(s, j))
            mark_unschedulable(s, i);
    }
    while (heap_clean(s) && s->heap[0].t == now) {
        event_t e = heap_pop(s);
        if (e.kind == EV_END)
            complete_job(s, e.job, now);
        else if (s->pol->las)
            push_prio_event(s, e.job, now);
    }
}

static void
drop_pending(sim_t *s)
{
    for (int a = s->nact - 1; a >= 0; a--)
        if (s->jobs[s->act[a]].state == S_PENDING)
            mark_unschedulable(s, s->act[a]);
}

/* Bookkeeping after the cycles at `now`. */
static void
after_cycles(sim_t *s, int64_t now)
{
    al_sim_result_t *r = s->r;
    if (s->o->drop_unplaced)
        drop_pending(s);
    if (s->next > 0 && s->tr->jobs[s->next - 1].submit == now) {
        double share = (double)s->alloc / (double)r->capacity;
        if (r->alloc_at_full < 0 && s->arrived >= r->capacity)
            r->alloc_at_full = share;
        r->alloc_at_end = share;
        r->arrived_end = (double)s->arrived / (double)r->capacity;
    }
    s->wasted = compute_wasted(s);
    ts_record(s, now);
    if (s->o->timeseries)
        ts_row(s, now);
}

int
al_sim_run(const al_trace_t *trace, const al_cluster_t *cluster,
           const al_sim_opts_t *opts, al_sim_result_t **out, char **cause)
{
    double wall0 = now_s();
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
    sim_init(s, trace, cluster, opts);
    al_sim_result_t *r = s->r;
    if (opts->timeseries)
        ts_header(s);

    int64_t now = s->njobs > 0 ? trace->jobs[0].submit : 0;
    int64_t prev = now;
    r->t_first = now;
    double last_progress = now_s();
    int64_t max_cycles = 64 * (int64_t)s->njobs + 1000;
    for (;;) {
        int64_t t = next_event(s, now);
        if (t == INT64_MAX) {
            /* Nothing will ever change: what still pends never starts. */
            drop_pending(s);
            break;
        }
        advance(s, prev, t);
        prev = now = t;
        apply_events(s, now);
        /* Cycles: again at once while the core evicts to make room. */
        for (int round = 0; round < 4 && s->npend > 0 && s->err == NULL;
             round++)
            if (cycle(s, now) == 0)
                break;
        if (s->err == NULL && r->cycles > max_cycles)
            set_error(s, AL_ELIMIT,
                      "more than %lld cycles: the core keeps evicting and "
                      "restarting jobs",
                      (long long)max_cycles);
        if (s->err != NULL)
            break;
        after_cycles(s, now);
        progress(s, now, &last_progress, false);
    }
    progress(s, now, &last_progress, true);
    /* t_last: the last completion. */
    r->t_last = r->t_first;
    for (int i = 0; i < s->njobs; i++)
        if (r->jobs[i].end > r->t_last)
            r->t_last = r->jobs[i].end;
    fill_bins(s);
    r->wall_s = now_s() - wall0;
    if (s->err != NULL) {
        int rc = s->rc < 0 ? s->rc : AL_EINVAL;
        if (cause)
            *cause = s->err;
        else
            free(s->err);
        sim_free(s);
        al_sim_result_destroy(r);
        return rc;
    }
    sim_free(s);
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
