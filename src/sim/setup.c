/*
 * setup.c -- the state of a run before its first event: the metrics queues
 * (a trace column, --queues N by hash, or the leaves of a --queues-file)
 * and the core queues above them with their quotas, each job shaped into a
 * gang of identical tasks that nodes can hold, the devices' and CPUs'
 * bookkeeping, the empty result; and freeing it.  al_sim_profile() reads
 * the same shapes.
 *
 * May call: policy.c (the configuration, oracle ranks, estimate noise),
 * parse.c (al__hash), the core's configuration and allocator, src/common.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

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
    j->min_tasks = j->max_tasks = j->ntasks;
    j->task_milli = j->total / j->ntasks;
    if (tj->max_gpu_milli > tj->gpu_milli) {
        /* Elastic: tasks of the most GPUs (a node's at most) that divide
         * both its least and its most size. */
        int64_t lo = tj->gpu_milli / AL_GPU_MILLI,
                hi = tj->max_gpu_milli / AL_GPU_MILLI;
        int64_t d = cl->max_gpus_per_node < 1 ? 1 : cl->max_gpus_per_node;
        while (d > 1 && (lo % d != 0 || hi % d != 0))
            d--;
        j->gpus = (int32_t)d;
        j->milli = 0;
        j->ntasks = j->min_tasks = (int)(lo / d);
        j->max_tasks = (int)(hi / d);
        j->task_milli = d * AL_GPU_MILLI;
        j->cpu = (tj->cpu_milli + j->ntasks - 1) / j->ntasks;
    }
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

void
al__sim_free(sim_t *s)
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
    al__stages_free(s);
    al__shares_free(s);
    al_block_cache_fini(&s->cache);
}

/* Builds the state and the empty result of a run. */
void
al__sim_init(sim_t *s, const al_trace_t *trace, const al_cluster_t *cluster,
             const al_sim_opts_t *opts)
{
    static const char *const levels[] = { "rack" };
    s->tr = trace;
    s->cl = cluster;
    s->o = opts;
    s->pol = al__policy_get(opts->policy);
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
    if (opts->service_levels_set && opts->policy == AL_POLICY_ALLOT)
        memcpy(s->cfg.service_levels, opts->service_levels,
               sizeof(s->cfg.service_levels));
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
    r->restart_overhead = opts->restart_overhead;
    r->checkpoint = opts->checkpoint;
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
        al__policy_oracle(s);
    al__stages_init(s);

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
    al__shares_init(s);
}
