/*
 * sched.c -- one scheduling cycle: validate the snapshot, compute fair
 * shares, allocate in order of need with backfill reservations, reclaim and
 * preempt for jobs still blocked, and write the result.
 *
 * The cycle is a pure function of the snapshot.  Every loop runs in index
 * order and every sort has a total order (ties end on the job index), so the
 * same snapshot always yields the same bytes.
 */
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */

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
    cfg->starve_after = (int64_t)2 * 3600;
    cfg->short_first = true;
}

int
al__vec_push(al_ctx_t *c, vec_t *v, const void *elem)
{
    if (v->len == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 64;
        void *nd;

        if (ncap > SIZE_MAX / v->esz)
            return AL_ENOMEM;
        nd = c->a->malloc(c->a->ctx, ncap * v->esz);
        if (nd == NULL)
            return AL_ENOMEM;
        if (v->len)
            memcpy(nd, v->data, v->len * v->esz);
        if (v->data)
            c->a->free(c->a->ctx, v->data);
        v->data = nd;
        v->cap = ncap;
    }
    memcpy((char *)v->data + v->len * v->esz, elem, v->esz);
    v->len++;
    return 0;
}

void
al__vec_free(al_ctx_t *c, vec_t *v)
{
    if (v->data)
        c->a->free(c->a->ctx, v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

int64_t
al_request_gpu_milli(const al_request_t *req)
{
    if (req->gpus > 0)
        return (int64_t)req->gpus * AL_GPU_MILLI;
    return req->gpu_milli > 0 ? req->gpu_milli : 0;
}

int64_t
al__runtime(const al_ctx_t *c, const al_job_t *j)
{
    int64_t t = c->cfg.default_runtime;

    if (j->estimate > 0)
        t = j->estimate;
    if (j->time_limit > 0 && (j->estimate <= 0 || j->time_limit < t))
        t = j->time_limit;
    return t;
}

const al_placement_t *
al__job_place(const al_ctx_t *c, int32_t j)
{
    if (c->wj[j].place_off != NIL)
        return (const al_placement_t *)c->tasks.data + c->wj[j].place_off;
    return c->s->jobs[j].placement;
}

static void
set_cause(char **cause, const char *msg, int64_t a, int64_t b)
{
    char buf[256];
    size_t n;
    char *p;

    if (cause == NULL)
        return;
        /* Every caller passes a literal with two %lld conversions. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    n = (size_t)snprintf(buf, sizeof(buf), msg, (long long)a, (long long)b);
#pragma GCC diagnostic pop
    if (n >= sizeof(buf))
        n = sizeof(buf) - 1;
    /* The cause is a plain malloc()ed string: the caller frees it with
     * free(), whatever allocator the core used. */
    p = malloc(n + 1);
    if (p == NULL)
        return;
    memcpy(p, buf, n + 1);
    *cause = p;
}

/* Sort keys: three unsigned words compared in order, then the index. */
typedef struct skey {
    uint64_t k[3];
    int32_t idx;
} skey_t;

static inline int
skey_cmp(const skey_t *a, const skey_t *b)
{
    if (a->k[0] != b->k[0])
        return a->k[0] < b->k[0] ? -1 : 1;
    if (a->k[1] != b->k[1])
        return a->k[1] < b->k[1] ? -1 : 1;
    if (a->k[2] != b->k[2])
        return a->k[2] < b->k[2] ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

/*
 * Sorts v[0..n) by (k[0], k[1], k[2], idx).  Small arrays get an insertion
 * sort; large ones an LSD radix sort over only the key bits that differ
 * between elements (a cycle's keys vary in a few dozen bits), which moves
 * each element a handful of times instead of log2(n) times.  Radix passes
 * are stable, so elements with equal keys keep their input order: callers
 * build their arrays in ascending idx, which makes idx the last key.  The
 * core may not call qsort: glibc's allocates behind the caller's allocator.
 */
static int
skey_sort(al_ctx_t *c, skey_t *v, size_t n)
{
    skey_t *tmp, *src = v, *dst;
    uint32_t *count;
    size_t i;
    int w, shift;

    if (n <= 32) {
        for (i = 1; i < n; i++) {
            skey_t x = v[i];
            size_t k = i;

            while (k > 0 && skey_cmp(&v[k - 1], &x) > 0) {
                v[k] = v[k - 1];
                k--;
            }
            v[k] = x;
        }
        return 0;
    }
    tmp = al_arena_array_raw(c->tmp, n, sizeof(*tmp));
    count = al_arena_array_raw(c->tmp, RADIX_SIZE, sizeof(*count));
    if (tmp == NULL || count == NULL)
        return AL_ENOMEM;
    dst = tmp;
    for (w = 2; w >= 0; w--) {
        uint64_t diff = 0, first = v[0].k[w];

        for (i = 1; i < n; i++)
            diff |= src[i].k[w] ^ first;
        for (shift = 0; shift < 64 && (diff >> shift) != 0;
             shift += RADIX_BITS) {
            uint32_t sum = 0, d;

            if (((diff >> shift) & (RADIX_SIZE - 1)) == 0)
                continue;
            memset(count, 0, RADIX_SIZE * sizeof(*count));
            for (i = 0; i < n; i++)
                count[(src[i].k[w] >> shift) & (RADIX_SIZE - 1)]++;
            for (d = 0; d < RADIX_SIZE; d++) {
                uint32_t x = count[d];

                count[d] = sum;
                sum += x;
            }
            for (i = 0; i < n; i++)
                dst[count[(src[i].k[w] >> shift) & (RADIX_SIZE - 1)]++] =
                    src[i];
            {
                skey_t *t = src;

                src = dst;
                dst = t;
            }
        }
    }
    if (src != v)
        memcpy(v, src, n * sizeof(*v));
    return 0;
}

static uint64_t
bias(int64_t v)
{
    return (uint64_t)v ^ (1ULL << 63);
}

/* ------------------------------------------------------------------ */
/* Setup: validation and the working state                            */

static bool
valid_placement(const al_ctx_t *c, const al_job_t *j, const al_placement_t *p)
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
        return al__popcount(p->devices) == 1;
    if (j->req.gpus > 0)
        return al__popcount(p->devices) == j->req.gpus;
    return true;
}

static int
setup_queues(al_ctx_t *c, char **cause)
{
    int32_t q;

    c->wq = al_arena_array(c->tmp, (size_t)c->nq + 1, sizeof(wqueue_t));
    if (c->wq == NULL)
        return AL_ENOMEM;
    for (q = 0; q < c->nq; q++) {
        const al_queue_t *qq = &c->s->queues[q];
        wqueue_t *w = &c->wq[q];

        if (qq->parent < -1 || qq->parent >= q) {
            set_cause(cause,
                      "queue %lld: parent %lld must be -1 or an "
                      "earlier queue",
                      q, qq->parent);
            return AL_EINVAL;
        }
        if (qq->nmodel_quotas < 0 ||
            (qq->nmodel_quotas > 0 && qq->model_quotas == NULL)) {
            set_cause(cause, "queue %lld: bad model quotas (%lld)", q,
                      qq->nmodel_quotas);
            return AL_EINVAL;
        }
        w->parent = qq->parent;
        w->depth = qq->parent < 0 ? 0 : c->wq[qq->parent].depth + 1;
        w->leaf = true;
        w->valid = true;
        w->heap_pos = NIL;
        w->usage = 0;
        w->min_prio = INT_MAX;
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

static bool
queue_ok(const al_ctx_t *c, int32_t q)
{
    return q >= 0 && q < c->nq && c->wq[q].leaf;
}

/* Is pending job j allowed to start at all (held, dependencies)? */
static bool
eligible(const al_ctx_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];

    return jb->state == AL_JOB_PENDING &&
           (jb->dep_state == AL_DEPS_NONE ||
            jb->dep_state == AL_DEPS_SATISFIED) &&
           queue_ok(c, jb->queue);
}

/*
 * A job larger than queue a's deserved GPUs can never run inside that quota:
 * all of it is over quota there (as Run:ai counts it), however little else
 * the queue runs, so a's deserved quota does not shield it.  Without this a
 * whole-cluster gang of a queue deserving one node held every other queue
 * below its guarantee for as long as it ran.
 */
static bool
over_quota_alone(const al_ctx_t *c, int32_t a, int64_t gpu)
{
    return gpu > c->s->queues[a].quota[AL_RES_GPU].deserved;
}

/* Critical path: the longest chain of estimated runtimes that hangs below
 * each job, through its dependents.  Jobs others wait for go first. */
static int
critical_path(al_ctx_t *c)
{
    int32_t *indeg, *order, *roff, *radj, *fill, head = 0, tail = 0, j;
    int64_t nedges = 0;
    int d;

    for (j = 0; j < c->nj; j++)
        nedges += c->s->jobs[j].ndeps > 0 ? c->s->jobs[j].ndeps : 0;
    if (nedges == 0)
        return 0;
    indeg = al_arena_array(c->tmp, (size_t)c->nj, sizeof(int32_t));
    order = al_arena_array(c->tmp, (size_t)c->nj, sizeof(int32_t));
    roff = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(int32_t));
    fill = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(int32_t));
    radj = al_arena_array(c->tmp, (size_t)nedges, sizeof(int32_t));
    if (!indeg || !order || !roff || !fill || !radj)
        return AL_ENOMEM;
    /* Edges dep -> job ("job runs after dep"); we walk from sinks up, so
     * keep for every dep the list of jobs that wait for it. */
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];

        for (d = 0; d < jb->ndeps; d++)
            roff[jb->deps[d].job + 1]++;
    }
    for (j = 0; j < c->nj; j++)
        roff[j + 1] += roff[j];
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];

        for (d = 0; d < jb->ndeps; d++) {
            int32_t dep = jb->deps[d].job;

            radj[roff[dep] + fill[dep]++] = j;
        }
        indeg[j] = 0;
    }
    /* Process in reverse topological order: a job is done once all the
     * jobs waiting for it are done.  Count, per job, its waiters. */
    for (j = 0; j < c->nj; j++)
        indeg[j] = roff[j + 1] - roff[j];
    for (j = 0; j < c->nj; j++)
        if (indeg[j] == 0)
            order[tail++] = j;
    while (head < tail) {
        int32_t x = order[head++];
        const al_job_t *jb = &c->s->jobs[x];
        int64_t own = c->wj[x].crit + al__runtime(c, jb);

        for (d = 0; d < jb->ndeps; d++) {
            int32_t dep = jb->deps[d].job;

            if (own > c->wj[dep].crit)
                c->wj[dep].crit = own;
            if (--indeg[dep] == 0)
                order[tail++] = dep;
        }
    }
    /* Jobs on a cycle (tail < nj) keep what they got: no infinite loop. */
    return 0;
}

/* Checks job j's request, dependencies and state; AL_EINVAL (with the
 * cause) when the snapshot is malformed. */
static int
check_job(const al_ctx_t *c, int32_t j, char **cause)
{
    const al_job_t *jb = &c->s->jobs[j];
    const al_request_t *r = &jb->req;

    if (r->gpus < 0 || r->gpus > AL_MAX_DEVICES || r->gpu_milli < 0 ||
        r->gpu_milli > AL_GPU_MILLI || r->gpu_mem < 0 || r->cpu_milli < 0 ||
        r->mem_bytes < 0 || jb->min_tasks < 1 ||
        (jb->ndeps > 0 && jb->deps == NULL) || jb->ndeps < 0) {
        set_cause(cause, "job %lld (index %lld): invalid request",
                  (long long)jb->id, j);
        return AL_EINVAL;
    }
    for (int32_t t = 0; t < jb->ndeps; t++)
        if (jb->deps[t].job < 0 || jb->deps[t].job >= c->nj) {
            set_cause(cause,
                      "job %lld: dependency index %lld out of "
                      "range",
                      (long long)jb->id, jb->deps[t].job);
            return AL_EINVAL;
        }
    if (jb->topo_mode != AL_TOPO_NONE &&
        (jb->topo_level < 0 || jb->topo_level >= c->cfg.ntopo_levels)) {
        set_cause(cause, "job %lld: topology level %lld not configured",
                  (long long)jb->id, jb->topo_level);
        return AL_EINVAL;
    }
    if (jb->state == AL_JOB_RUNNING &&
        (jb->ntasks < 1 || jb->placement == NULL || !queue_ok(c, jb->queue))) {
        set_cause(cause,
                  "running job %lld (index %lld) has no "
                  "placement or no leaf queue",
                  (long long)jb->id, j);
        return AL_EINVAL;
    }
    if (jb->state != AL_JOB_RUNNING && jb->state != AL_JOB_PENDING &&
        jb->state != AL_JOB_HELD) {
        set_cause(cause, "job %lld: unknown state %lld", (long long)jb->id,
                  (long long)jb->state);
        return AL_EINVAL;
    }
    return 0;
}

/* Running job j: takes what its tasks hold (counting them per node in
 * count[]) and charges it to its queue and the queue's ancestors. */
static int
take_running(al_ctx_t *c, int32_t j, int32_t *count, char **cause)
{
    const al_job_t *jb = &c->s->jobs[j];
    wjob_t *w = &c->wj[j];

    w->flags = JF_RUNNING | (jb->lent ? JF_LENT : 0);
    if (jb->preemptible && jb->priority < c->wq[jb->queue].min_prio)
        c->wq[jb->queue].min_prio = jb->priority;
    w->ntasks = jb->ntasks;
    for (int32_t t = 0; t < jb->ntasks; t++) {
        if (!valid_placement(c, jb, &jb->placement[t])) {
            set_cause(cause,
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
                set_cause(cause,
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
setup_jobs(al_ctx_t *c, char **cause)
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
    rc = critical_path(c);
    if (rc == 0)
        rc = al__profile(c);
    if (rc != 0)
        return rc;
    /* What setup took is the starting point, not something to undo. */
    c->undo.len = 0;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Queue order                                                        */

static double
share_ratio(const al_ctx_t *c, int32_t q)
{
    const wqueue_t *w = &c->wq[q];
    double worst = 0;
    int r;

    for (r = 0; r < AL_NRES; r++) {
        double x;

        if (w->alloc[r] <= 0)
            continue;
        if (w->fair[r] <= 0)
            return 1e18 + (double)w->alloc[r];
        x = (double)w->alloc[r] / w->fair[r];
        if (x > worst)
            worst = x;
    }
    return worst;
}

static bool
below_deserved(const al_ctx_t *c, int32_t q)
{
    return c->wq[q].alloc[AL_RES_GPU] <
           c->s->queues[q].quota[AL_RES_GPU].deserved;
}

/* Recomputes queue q's place in the order of need from its allocation;
 * called whenever that allocation changes in a way the order must see. */
static void
queue_rekey(al_ctx_t *c, int32_t q)
{
    c->wq[q].below = below_deserved(c, q);
    c->wq[q].ratio = share_ratio(c, q);
}

/* Does queue a come before queue b (more in need)?  Uses the keys
 * queue_rekey() cached: comparing is the inner loop of the heap. */
static bool
queue_before(const al_ctx_t *c, int32_t a, int32_t b)
{
    const wqueue_t *wa = &c->wq[a], *wb = &c->wq[b];

    if (wa->below != wb->below)
        return wa->below;
    if (c->s->queues[a].priority != c->s->queues[b].priority)
        return c->s->queues[a].priority > c->s->queues[b].priority;
    if (wa->ratio != wb->ratio)
        return wa->ratio < wb->ratio;
    return a < b;
}

typedef struct qheap {
    int32_t *h;
    int32_t n;
} qheap_t;

static void
heap_swap(al_ctx_t *c, qheap_t *hp, int32_t i, int32_t k)
{
    int32_t t = hp->h[i];

    hp->h[i] = hp->h[k];
    hp->h[k] = t;
    c->wq[hp->h[i]].heap_pos = i;
    c->wq[hp->h[k]].heap_pos = k;
}

static void
heap_down(al_ctx_t *c, qheap_t *hp, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;

        if (l < hp->n && queue_before(c, hp->h[l], hp->h[m]))
            m = l;
        if (r < hp->n && queue_before(c, hp->h[r], hp->h[m]))
            m = r;
        if (m == i)
            return;
        heap_swap(c, hp, i, m);
        i = m;
    }
}

static void
heap_up(al_ctx_t *c, qheap_t *hp, int32_t i)
{
    while (i > 0) {
        int32_t p = (i - 1) / 2;

        if (!queue_before(c, hp->h[i], hp->h[p]))
            return;
        heap_swap(c, hp, i, p);
        i = p;
    }
}

static void
heap_pop(al_ctx_t *c, qheap_t *hp)
{
    c->wq[hp->h[0]].heap_pos = NIL;
    hp->n--;
    if (hp->n > 0) {
        hp->h[0] = hp->h[hp->n];
        c->wq[hp->h[0]].heap_pos = 0;
        heap_down(c, hp, 0);
    }
}

/* Every queue's position changes when allocations move; the heap is
 * re-fixed for the queue whose allocation just changed. */
static void
heap_fix(al_ctx_t *c, qheap_t *hp, int32_t q)
{
    int32_t i = c->wq[q].heap_pos;

    queue_rekey(c, q);
    if (i == NIL)
        return;
    heap_up(c, hp, i);
    heap_down(c, hp, c->wq[q].heap_pos);
}

/* ------------------------------------------------------------------ */
/* Admission: quotas and limits                                       */

static bool
set_reason(al_ctx_t *c, int32_t j, al_reason_code_t code, int32_t q,
           int32_t other, int res, int64_t amount, int64_t time)
{
    al_reason_t *r = &c->reasons[j];

    r->code = code;
    r->queue = q;
    r->job = other;
    r->res = res;
    r->amount = amount;
    r->time = time;
    return false;
}

static void
need_of(const al_ctx_t *c, int32_t j, int64_t ntasks, int64_t need[AL_NRES])
{
    const al_job_t *jb = &c->s->jobs[j];

    need[AL_RES_GPU] = ntasks * c->wj[j].task_gpu;
    need[AL_RES_CPU] = ntasks * jb->req.cpu_milli;
    need[AL_RES_MEM] = ntasks * jb->req.mem_bytes;
}

static bool
admit(al_ctx_t *c, int32_t j, int64_t ntasks)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need[AL_NRES];
    int32_t q;
    int r, k;

    if (c->cfg.ignore_queues)
        return true;
    need_of(c, j, ntasks, need);
    for (q = jb->queue; q != NIL; q = c->wq[q].parent) {
        const al_queue_t *qq = &c->s->queues[q];
        const wqueue_t *w = &c->wq[q];

        for (r = 0; r < AL_NRES; r++) {
            int64_t lim = qq->quota[r].limit;

            if (need[r] == 0)
                continue;
            if (lim >= 0 && w->alloc[r] + need[r] > lim)
                return set_reason(c, j, AL_WHY_LIMIT, q, NIL, r, lim, 0);
            if (!c->cfg.borrow &&
                (r == AL_RES_GPU || qq->quota[r].deserved > 0) &&
                w->alloc[r] + need[r] > qq->quota[r].deserved)
                return set_reason(c, j, AL_WHY_NO_BORROW, q, NIL, r,
                                  qq->quota[r].deserved, 0);
        }
        if (!jb->preemptible && need[AL_RES_GPU] > 0 &&
            w->nonpre_gpu + need[AL_RES_GPU] > qq->quota[AL_RES_GPU].deserved)
            return set_reason(c, j, AL_WHY_DESERVED, q, NIL, AL_RES_GPU,
                              qq->quota[AL_RES_GPU].deserved, 0);
        if (jb->req.gpu_model != NULL && w->model_alloc != NULL) {
            for (k = 0; k < qq->nmodel_quotas; k++) {
                const al_model_quota_t *mq = &qq->model_quotas[k];

                if (mq->model == NULL ||
                    strcmp(mq->model, jb->req.gpu_model) != 0)
                    continue;
                if (mq->limit >= 0 &&
                    w->model_alloc[k] + need[AL_RES_GPU] > mq->limit)
                    return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL,
                                      AL_RES_GPU, mq->limit, 0);
                if (!jb->preemptible &&
                    w->model_nonpre[k] + need[AL_RES_GPU] > mq->deserved)
                    return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL,
                                      AL_RES_GPU, mq->deserved, 0);
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Placing a gang                                                     */

/* Free whole devices (not held) in the groups job j may use. */
static int64_t
free_devices(al_ctx_t *c, int32_t j)
{
    int64_t f = 0;
    int32_t g;

    for (g = 0; g < c->ngroups; g++)
        if (al__req_group(c, g, &c->s->jobs[j].req))
            f += c->groups[g].free_dev;
    return f;
}

/* Could the job ever fit on the cluster, if everything were free?  No
 * (and why) in *why: AL_WHY_NO_MATCH when no node has the GPU model or
 * pool it asks for, else AL_WHY_TOO_BIG. */
static bool
ever_fits(al_ctx_t *c, int32_t j, al_reason_code_t *why)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t total = 0;
    bool node_ok = false, matched = false;
    int32_t g;

    for (g = 0; g < c->ngroups; g++) {
        const wgroup_t *gr = &c->groups[g];

        if (!al__req_group(c, g, &jb->req))
            continue;
        matched = true;
        total += gr->total_dev;
        if (gr->max_dev >= jb->req.gpus && gr->max_cpu >= jb->req.cpu_milli &&
            gr->max_mem >= jb->req.mem_bytes &&
            (jb->req.gpus > 0 || jb->req.gpu_milli == 0 || gr->max_dev > 0))
            node_ok = true;
    }
    *why = !matched && c->ngroups > 0 &&
                   ((jb->req.gpu_model != NULL && jb->req.gpu_model[0]) ||
                    (jb->req.pool != NULL && jb->req.pool[0]))
               ? AL_WHY_NO_MATCH
               : AL_WHY_TOO_BIG;
    return node_ok && total >= (int64_t)jb->min_tasks * jb->req.gpus;
}

/*
 * Picks the topology domain at `level` for job j's gang of n tasks (up to
 * `want` for an elastic job): of the domains that hold at least n, the one
 * that holds the most of `want`, then the one with the fewest free devices,
 * so that the emptiest domains stay whole for larger gangs.  A domain's
 * free-device count bounds what it can hold, so most domains are judged
 * without looking at their nodes, and a domain's scan stops at `want`.
 */
static int32_t
pick_domain(al_ctx_t *c, int32_t j, int level, int64_t n, int64_t want)
{
    const al_job_t *jb = &c->s->jobs[j];
    int32_t d, best = NIL;
    int64_t bestfree = INT64_MAX, bestk = 0;
    int64_t needdev = n * (jb->req.gpus > 0 ? jb->req.gpus : 0);
    bool match[64];
    int32_t g;

    for (g = 0; g < c->ngroups && g < 64; g++)
        match[g] = al__req_group(c, g, &jb->req);
    for (d = 0; d < c->ndomains[level]; d++) {
        int32_t i, lo = c->dom_off[level][d], hi = c->dom_off[level][d + 1];
        int64_t slots = 0, f = c->dom_free[level][d];

        if (f < needdev)
            continue;
        /* Once a domain holds every task wanted, only a tighter one can
         * beat it. */
        if (bestk >= want && f >= bestfree)
            continue;
        for (i = lo; i < hi && slots < want; i++) {
            int32_t nd = c->dom_nodes[level][i];

            g = c->wn[nd].group;
            if (g == NIL ||
                !(g < 64 ? match[g] : al__req_group(c, g, &jb->req)))
                continue;
            if (jb->req.gpus > 0 && c->wn[nd].nfree < jb->req.gpus)
                continue;
            slots += al__node_slots(c, nd, &jb->req);
        }
        if (slots > want)
            slots = want;
        if (slots >= n && (slots > bestk || (slots == bestk && f < bestfree))) {
            best = d;
            bestk = slots;
            bestfree = f;
        }
    }
    return best;
}

/*
 * After placing job j (its tasks already charged), does its queue chain
 * still respect every limit, and non-preemptible work its deserved quota?
 * admit() judged the request; this judges what placement really charged,
 * which differs for fractions sized by device memory.  Sets the reason when
 * not.
 */
static bool
within_quota(al_ctx_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    int32_t q;
    int r, k;

    if (c->cfg.ignore_queues)
        return true;
    for (q = jb->queue; q != NIL; q = c->wq[q].parent) {
        const al_queue_t *qq = &c->s->queues[q];
        const wqueue_t *w = &c->wq[q];

        for (r = 0; r < AL_NRES; r++) {
            int64_t lim = qq->quota[r].limit;

            if (lim >= 0 && w->alloc[r] > lim)
                return set_reason(c, j, AL_WHY_LIMIT, q, NIL, r, lim, 0);
            if (!c->cfg.borrow && w->alloc[r] > qq->quota[r].deserved &&
                (r == AL_RES_GPU || qq->quota[r].deserved > 0))
                return set_reason(c, j, AL_WHY_NO_BORROW, q, NIL, r,
                                  qq->quota[r].deserved, 0);
        }
        if (!jb->preemptible && w->nonpre_gpu > qq->quota[AL_RES_GPU].deserved)
            return set_reason(c, j, AL_WHY_DESERVED, q, NIL, AL_RES_GPU,
                              qq->quota[AL_RES_GPU].deserved, 0);
        for (k = 0; k < qq->nmodel_quotas; k++) {
            const al_model_quota_t *mq = &qq->model_quotas[k];

            if (mq->limit >= 0 && w->model_alloc[k] > mq->limit)
                return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL, AL_RES_GPU,
                                  mq->limit, 0);
            if (!jb->preemptible && w->model_nonpre[k] > mq->deserved)
                return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL, AL_RES_GPU,
                                  mq->deserved, 0);
        }
    }
    return true;
}

/*
 * Per-GPU-model limits.  A request without a model may land on any model,
 * so the limit is enforced by placement: the groups whose model would take
 * a queue of j's chain past its limit for that model (with `ntasks` more
 * tasks) are forbidden while j is placed.  Returns the mask and notes the
 * first queue that forbade something in *q and its limit in *lim.
 */
static uint64_t
model_forbid(al_ctx_t *c, int32_t j, int64_t ntasks, int32_t *q, int64_t *lim)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need = ntasks * c->wj[j].task_gpu;
    uint64_t mask = 0;
    int32_t a, g;
    int k;

    if (c->cfg.ignore_queues || need == 0 || c->ngroups > 64)
        return 0;
    for (a = jb->queue; a != NIL; a = c->wq[a].parent) {
        const al_queue_t *qq = &c->s->queues[a];

        for (k = 0; k < qq->nmodel_quotas; k++) {
            const al_model_quota_t *mq = &qq->model_quotas[k];

            bool over =
                mq->limit >= 0 && c->wq[a].model_alloc[k] + need > mq->limit;

            if (!jb->preemptible &&
                c->wq[a].model_nonpre[k] + need > mq->deserved)
                over = true;
            if (mq->model == NULL || !over)
                continue;
            for (g = 0; g < c->ngroups; g++)
                if (c->groups[g].model != NULL &&
                    strcmp(c->groups[g].model, mq->model) == 0 &&
                    !((mask >> g) & 1)) {
                    mask |= 1ULL << g;
                    if (*q == NIL) {
                        *q = a;
                        *lim = jb->preemptible ? mq->limit : mq->deserved;
                    }
                }
        }
    }
    return mask;
}

/* Records a START decision for job j whose placements are the last
 * `ntasks` entries pushed on c->tasks. */
static int
record_start(al_ctx_t *c, int32_t j, int32_t ntasks, bool lent,
             int32_t lent_from)
{
    al_decision_t d;
    int rc;

    memset(&d, 0, sizeof(d));
    d.kind = AL_DEC_START;
    d.job = j;
    d.ntasks = ntasks;
    d.lent = lent;
    d.for_job = lent ? lent_from : NIL;
    rc = al__job_mark(c, j);
    if (rc != 0)
        return rc;
    c->wj[j].start_dec = (int32_t)c->decisions.len;
    c->wj[j].place_off = (int32_t)(c->tasks.len - (size_t)ntasks);
    c->wj[j].ntasks = ntasks;
    c->wj[j].flags |= JF_STARTED | (lent ? JF_LENT : 0);
    if (c->s->jobs[j].preemptible &&
        c->s->jobs[j].priority < c->wq[c->s->jobs[j].queue].min_prio)
        c->wq[c->s->jobs[j].queue].min_prio = c->s->jobs[j].priority;
    c->wj[j].for_job = d.for_job;
    return al__vec_push(c, &c->decisions, &d);
}

/*
 * Places job j's gang (min_tasks, then up to max_tasks for an elastic job)
 * on the working state; on success records the START decision.  Returns 0,
 * AL_ENOENT when it does not fit, AL_ELIMIT when what placement charged
 * exceeds a quota (reason set), or AL_ENOMEM; the state is unchanged
 * unless it returns 0.
 */
static int
place_gang(al_ctx_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    size_t mark = c->undo.len, tmark = c->tasks.len;
    int32_t dom = NIL, placed = 0, want;
    uint64_t forbid = c->forbid; /* extras recompute it; restored below */
    int level = -1, rc;

    want = jb->max_tasks > jb->min_tasks ? jb->max_tasks : jb->min_tasks;
    if (jb->topo_mode != AL_TOPO_NONE && want > 1) {
        level = jb->topo_level;
        dom = pick_domain(c, j, level, jb->min_tasks, want);
        if (dom == NIL) {
            if (jb->topo_mode == AL_TOPO_REQUIRED)
                return AL_ENOENT;
            level = -1;
        }
    }
    while (placed < want) {
        bool extra = placed >= jb->min_tasks;
        size_t emark = c->undo.len;
        al_placement_t p;

        if (extra) {
            int32_t fq = NIL;
            int64_t fl = 0;

            if (!admit(c, j, 1))
                break;
            c->forbid = model_forbid(c, j, 1, &fq, &fl);
        }
        rc = al__find_task(c, j, -1, level, dom, &p);
        if (rc == AL_ENOENT && extra)
            break;
        if (rc == 0)
            rc = al__take(c, j, &p, true);
        if (rc == 0)
            rc = al__vec_push(c, &c->tasks, &p);
        if (rc != 0) {
            al__undo_to(c, mark);
            c->tasks.len = tmark;
            c->forbid = forbid;
            return rc;
        }
        placed++;
        if (placed == jb->min_tasks && !within_quota(c, j)) {
            /* Fractions sized by memory charge more than the request
             * said: the gang itself is over a quota. */
            al__undo_to(c, mark);
            c->tasks.len = tmark;
            c->forbid = forbid;
            return AL_ELIMIT;
        }
        if (extra && !within_quota(c, j)) {
            /* This extra task went over: the job starts without it. */
            al__undo_to(c, emark);
            c->tasks.len--;
            placed--;
            break;
        }
    }
    c->forbid = forbid;
    rc = record_start(c, j, placed, false, NIL);
    if (rc != 0) {
        al__undo_to(c, mark);
        c->tasks.len = tmark;
        return rc;
    }
    c->stats.started++;
    c->stats.placements += placed;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Backfill reservations                                              */

typedef struct resv_int {
    al_reservation_t r;
    uint64_t *hold; /* per reserved node: devices held */
    int64_t *hcpu, *hmem;
} resv_int_t;

#define MEMO_SIZE 256
#define AL_STARVE_MAX 16 /* starving jobs considered first, at most */

typedef struct memo {
    uint64_t key;
    int64_t cpu, mem; /* smallest CPU and memory that failed */
} memo_t;

/* Failed shapes, valid while c->version is `version`. */
typedef struct memo_tab {
    int64_t version;
    memo_t e[MEMO_SIZE];
} memo_tab_t;

typedef struct pass {
    skey_t *order; /* candidates in allocation order (per queue slices) */
    size_t norder;
    resv_int_t *resv;
    int32_t nresv;
    int32_t first_blocked; /* strict order: the job everyone waits behind */
    int64_t held_dev;      /* devices reservations hold */
    int64_t *sim_dev;      /* reserve()'s sweep arrays, taken on first use */
    struct victim *vs, *scratch; /* reclaim_one()'s, likewise */
    int32_t *sim_dm;
    memo_tab_t memo; /* failed gang shapes */
    /* Shapes that failed even with every reservation hold released (the
     * lending path of try_place). */
    memo_tab_t lend_memo;
} pass_t;

/*
 * May job j take back the capacity lent job x borrows?  A job started on
 * lent capacity this cycle knows its lender.  For one that was already
 * running, the snapshot does not say (reservations are recomputed every
 * cycle): its capacity goes back to the first reservation of the cycle,
 * the top-ranked blocked job, and to no lower-ranked one.
 */
static bool
lent_to(const al_ctx_t *c, const pass_t *ps, int32_t x, int32_t j)
{
    if (c->wj[x].flags & JF_STARTED)
        return c->wj[x].for_job == j;
    return ps->nresv == 0;
}

/* Event kinds on the future timeline, in the order they apply at one time. */
enum { EV_RELEASE = 0, EV_CLAIM = 1, EV_UNCLAIM = 2 };

/*
 * The future as far as the core can tell, for job j's reservation: running
 * jobs end at start + runtime (lent ones lent from j come back at once),
 * and the reservations already made claim their nodes at their start and
 * give them back a runtime later.  Sorted by time, then kind.
 */
static int
timeline(al_ctx_t *c, const pass_t *ps, int32_t j, skey_t **out, size_t *nout)
{
    size_t n = 0;
    int32_t x, r;
    skey_t *ev;

    for (x = 0; x < c->nj; x++)
        if ((c->wj[x].flags & (JF_RUNNING | JF_STARTED)) &&
            !(c->wj[x].flags & JF_EVICTED))
            n++;
    ev = al_arena_array_raw(c->tmp, n + 2 * (size_t)ps->nresv + 1, sizeof(*ev));
    if (ev == NULL)
        return AL_ENOMEM;
    n = 0;
    for (x = 0; x < c->nj; x++) {
        const al_job_t *xb = &c->s->jobs[x];
        const wjob_t *w = &c->wj[x];
        int64_t end;

        if (!(w->flags & (JF_RUNNING | JF_STARTED)) || (w->flags & JF_EVICTED))
            continue;
        if ((w->flags & JF_LENT) && lent_to(c, ps, x, j)) {
            end = c->s->now; /* lent capacity comes back on demand */
        } else if (w->flags & JF_STARTED) {
            end = c->s->now + al__runtime(c, xb);
        } else {
            end = xb->start_time + al__runtime(c, xb);
            if (end <= c->s->now)
                end = c->s->now + 1; /* overdue: any moment now */
        }
        ev[n].k[0] = bias(end);
        ev[n].k[1] = EV_RELEASE;
        ev[n].k[2] = 0;
        ev[n].idx = x;
        n++;
    }
    for (r = 0; r < ps->nresv; r++) {
        const al_reservation_t *rv = &ps->resv[r].r;

        ev[n].k[0] = bias(rv->start);
        ev[n].k[1] = EV_CLAIM;
        ev[n].k[2] = 0;
        ev[n].idx = r;
        n++;
        ev[n].k[0] = bias(rv->start + al__runtime(c, &c->s->jobs[rv->job]));
        ev[n].k[1] = EV_UNCLAIM;
        ev[n].k[2] = 0;
        ev[n].idx = r;
        n++;
    }
    *out = ev;
    *nout = n;
    return skey_sort(c, ev, n);
}

/*
 * The cluster as the reservation sweep sees it at some future time: per
 * node, free whole devices, CPU, memory and (for a fractional request) the
 * tasks that fit on partly used devices; per device, the milli-GPUs still
 * used by fractional tasks, so that a device comes back whole when its last
 * fraction ends.
 */
typedef struct tsim {
    const al_request_t *req;
    int level;   /* topology level the gang must stay in, or -1 */
    int64_t m;   /* milli-GPUs one fractional task takes, or 0 */
    int64_t per; /* fractional tasks on one fresh device */
    int64_t *dev, *frac, *cpu, *mem, *slots, *domsum;
    int32_t *dm;   /* used milli per device */
    int64_t total; /* sum of slots */
} tsim_t;

static int64_t
sim_slots(const tsim_t *ts, int32_t n)
{
    const al_request_t *req = ts->req;
    int64_t s = INT32_MAX;

    if (req->cpu_milli > 0)
        s = ts->cpu[n] / req->cpu_milli;
    if (req->mem_bytes > 0 && ts->mem[n] / req->mem_bytes < s)
        s = ts->mem[n] / req->mem_bytes;
    if (req->gpus > 0) {
        if (ts->dev[n] / req->gpus < s)
            s = ts->dev[n] / req->gpus;
    } else if (ts->m > 0) {
        if (ts->dev[n] * ts->per + ts->frac[n] < s)
            s = ts->dev[n] * ts->per + ts->frac[n];
    }
    return s < 0 ? 0 : s;
}

/* Recomputes node n's slots after its free amounts changed. */
static void
resim(const al_ctx_t *c, tsim_t *ts, int32_t n)
{
    int64_t before = ts->slots[n];

    ts->slots[n] = sim_slots(ts, n);
    ts->total += ts->slots[n] - before;
    if (ts->level >= 0)
        ts->domsum[c->wn[n].topo[ts->level]] += ts->slots[n] - before;
}

/* Fractional tasks that fit in the room left on a device using u milli. */
static int64_t
frac_room(const tsim_t *ts, int64_t u)
{
    return ts->m > 0 && u > 0 ? (AL_GPU_MILLI - u) / ts->m : 0;
}

/* Running job x's tasks end: give their resources back in the sweep. */
static void
sim_release(const al_ctx_t *c, tsim_t *ts, int32_t x)
{
    const al_placement_t *pl = al__job_place(c, x);
    const al_job_t *xb = &c->s->jobs[x];
    int32_t t;

    for (t = 0; t < c->wj[x].ntasks; t++) {
        const al_placement_t *p = &pl[t];
        int32_t n = p->node;

        if (ts->slots[n] < 0)
            continue;
        if (p->gpu_milli > 0) {
            int32_t di = c->wn[n].dev_off + __builtin_ctzll(p->devices);
            int64_t old = ts->dm[di];

            ts->frac[n] -= frac_room(ts, old);
            ts->dm[di] -= p->gpu_milli;
            if (ts->dm[di] <= 0) {
                ts->dm[di] = 0;
                ts->dev[n]++; /* its last fraction ended */
            } else {
                ts->frac[n] += frac_room(ts, ts->dm[di]);
            }
        } else {
            ts->dev[n] += al__popcount(p->devices);
        }
        ts->cpu[n] += xb->req.cpu_milli;
        ts->mem[n] += xb->req.mem_bytes;
        resim(c, ts, n);
    }
}

/* An earlier reservation takes (sign -1) or gives back (+1) its nodes. */
static void
sim_claim(const al_ctx_t *c, tsim_t *ts, const resv_int_t *rv, int sign)
{
    const al_request_t *rq = &c->s->jobs[rv->r.job].req;
    int32_t i;

    for (i = 0; i < rv->r.nnodes; i++) {
        int64_t k = rv->r.tasks[i];
        int32_t n = rv->r.nodes[i];

        if (ts->slots[n] < 0)
            continue;
        if (sign < 0) {
            /* It takes what it did not already hold. */
            ts->dev[n] -= k * rq->gpus - al__popcount(rv->hold[i]);
            ts->cpu[n] -= k * rq->cpu_milli - rv->hcpu[i];
            ts->mem[n] -= k * rq->mem_bytes - rv->hmem[i];
        } else {
            ts->dev[n] += k * rq->gpus;
            ts->cpu[n] += k * rq->cpu_milli;
            ts->mem[n] += k * rq->mem_bytes;
        }
        resim(c, ts, n);
    }
}

/* Does the gang fit somewhere in the sweep's current state?  Sets *win to
 * the domain for a topology-bound gang. */
static bool
sim_fits(const al_ctx_t *c, const tsim_t *ts, int64_t need, int32_t *win)
{
    int32_t d;

    if (ts->level < 0)
        return ts->total >= need;
    for (d = 0; d < c->ndomains[ts->level]; d++)
        if (ts->domsum[d] >= need) {
            *win = d;
            return true;
        }
    return false;
}

/* Sets up the sweep of blocked job j in *ts: what each usable node has
 * free now (slots[n] -1 for a node the job cannot use).  0 or AL_ENOMEM. */
static int
sweep_init(al_ctx_t *c, pass_t *ps, int32_t j, tsim_t *ts)
{
    const al_job_t *jb = &c->s->jobs[j];
    const al_request_t *req = &jb->req;
    int32_t n;

    memset(ts, 0, sizeof(*ts));
    ts->req = req;
    ts->level = jb->topo_mode == AL_TOPO_REQUIRED ? jb->topo_level : -1;
    if (req->gpus == 0 && (req->gpu_milli > 0 || req->gpu_mem > 0)) {
        ts->m = c->wj[j].task_gpu > 0 ? c->wj[j].task_gpu : 1;
        ts->per = AL_GPU_MILLI / ts->m;
    }
    /* The sweep's arrays are taken once per cycle and reused by every
     * reservation.  Only usable nodes' entries are written and read. */
    if (ps->sim_dev == NULL) {
        size_t nn = (size_t)c->nn + 1, nd = 0;
        int l;

        for (l = 0; l < c->cfg.ntopo_levels; l++)
            if ((size_t)c->ndomains[l] + 1 > nd)
                nd = (size_t)c->ndomains[l] + 1;
        ps->sim_dev =
            al_arena_array_raw(c->tmp, 6 * nn + nd + 1, sizeof(int64_t));
        ps->sim_dm =
            al_arena_array_raw(c->tmp, (size_t)c->ndev + 1, sizeof(int32_t));
        if (ps->sim_dev == NULL || ps->sim_dm == NULL)
            return AL_ENOMEM;
    }
    ts->dev = ps->sim_dev;
    ts->frac = ts->dev + (c->nn + 1);
    ts->cpu = ts->frac + (c->nn + 1);
    ts->mem = ts->cpu + (c->nn + 1);
    ts->slots = ts->mem + (c->nn + 1);
    ts->domsum = ts->slots + (c->nn + 1);
    ts->dm = ps->sim_dm;
    memset(ts->frac, 0, (size_t)c->nn * sizeof(int64_t));
    if (ts->level >= 0)
        memset(ts->domsum, 0,
               ((size_t)c->ndomains[ts->level] + 1) * sizeof(int64_t));
    memcpy(ts->dm, c->dev_milli, (size_t)c->ndev * sizeof(int32_t));
    for (n = 0; n < c->nn; n++) {
        const wnode_t *w = &c->wn[n];

        if (!w->ready || w->group == NIL || !al__req_group(c, w->group, req) ||
            (ts->level >= 0 && w->topo[ts->level] == NIL)) {
            ts->slots[n] = -1; /* not usable */
            continue;
        }
        ts->dev[n] = w->nfree;
        ts->cpu[n] = w->free_cpu;
        ts->mem[n] = w->free_mem;
        if (ts->m > 0) {
            uint64_t sm = w->shared_mask;

            while (sm != 0) {
                ts->frac[n] +=
                    frac_room(ts, ts->dm[w->dev_off + __builtin_ctzll(sm)]);
                sm &= sm - 1;
            }
        }
        ts->slots[n] = sim_slots(ts, n);
        ts->total += ts->slots[n];
        if (ts->level >= 0)
            ts->domsum[w->topo[ts->level]] += ts->slots[n];
    }
    return 0;
}

/* Replays the releases and claims ahead of job j until `need` of its tasks
 * fit: *when (INT64_MIN: never) and, for a topology-bound gang, the domain
 * in *win.  0 or AL_ENOMEM. */
static int
sweep_when(al_ctx_t *c, pass_t *ps, int32_t j, tsim_t *ts, int64_t need,
           int32_t *win, int64_t *when)
{
    skey_t *ev;
    size_t nev, e;
    int rc = timeline(c, ps, j, &ev, &nev);

    *when = INT64_MIN;
    if (rc != 0)
        return rc;
    for (e = 0; e <= nev; e++) {
        /* Check once all events of one time are in (and at the end). */
        if ((e == 0 || e == nev || ev[e].k[0] != ev[e - 1].k[0]) &&
            sim_fits(c, ts, need, win)) {
            *when =
                e == 0 ? c->s->now : (int64_t)(ev[e - 1].k[0] ^ (1ULL << 63));
            if (*when < c->s->now)
                *when = c->s->now;
            break;
        }
        if (e == nev)
            break;
        if (ev[e].k[1] == EV_RELEASE)
            sim_release(c, ts, ev[e].idx);
        else
            sim_claim(c, ts, &ps->resv[ev[e].idx],
                      ev[e].k[1] == EV_CLAIM ? -1 : 1);
    }
    return 0;
}

/* Entry `at` of reservation out: k tasks on node nd, holding what later
 * jobs must not take: everything free now beyond the spare the node will
 * have at the reservation's time (the sweep's state, ts). */
static void
hold_on_node(const al_ctx_t *c, const tsim_t *ts, const al_request_t *req,
             resv_int_t *out, int32_t at, int32_t nd, int64_t k)
{
    const wnode_t *w = &c->wn[nd];
    int64_t spare = ts->dev[nd] - k * req->gpus;
    int64_t h = w->nfree - (spare > 0 ? spare : 0);

    out->r.nodes[at] = nd;
    out->r.tasks[at] = (int32_t)k;
    out->hold[at] = 0;
    if (h > 0) {
        uint64_t av = w->free_mask & ~w->hold_mask, m = 0;

        while (h > 0 && av != 0) {
            uint64_t bit = av & (~av + 1);

            m |= bit;
            av &= av - 1;
            h--;
        }
        out->hold[at] = m;
    }
    spare = ts->cpu[nd] - k * req->cpu_milli;
    out->hcpu[at] = w->free_cpu - (spare > 0 ? spare : 0);
    if (out->hcpu[at] < 0)
        out->hcpu[at] = 0;
    spare = ts->mem[nd] - k * req->mem_bytes;
    out->hmem[at] = w->free_mem - (spare > 0 ? spare : 0);
    if (out->hmem[at] < 0)
        out->hmem[at] = 0;
}

/*
 * Finds when and where blocked job j fits by replaying the releases of
 * running jobs in order of their expected end, then holds what it needs on
 * those nodes so that later jobs cannot delay it.  Returns 0 with *made set
 * when a reservation was made, 0 with *made clear when the job can never
 * fit, or AL_ENOMEM.
 */
static int
reserve(al_ctx_t *c, pass_t *ps, int32_t j, resv_int_t *out, bool *made)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need = jb->min_tasks, when, left = need;
    tsim_t ts;
    skey_t *cand;
    size_t nc = 0, i;
    int32_t n, win = NIL;
    int rc;

    *made = false;
    if ((rc = sweep_init(c, ps, j, &ts)) != 0 ||
        (rc = sweep_when(c, ps, j, &ts, need, &win, &when)) != 0)
        return rc;
    if (when == INT64_MIN)
        return 0; /* never fits */

    /* Choose the nodes: those with most slots at that time, fewest nodes. */
    cand = al_arena_array_raw(c->tmp, (size_t)c->nn + 1, sizeof(*cand));
    out->r.nodes = al_arena_array(c->tmp, (size_t)need, sizeof(int32_t));
    out->r.tasks = al_arena_array(c->tmp, (size_t)need, sizeof(int32_t));
    out->hold = al_arena_array(c->tmp, (size_t)need, sizeof(uint64_t));
    out->hcpu = al_arena_array(c->tmp, (size_t)need, sizeof(int64_t));
    out->hmem = al_arena_array(c->tmp, (size_t)need, sizeof(int64_t));
    if (!cand || !out->r.nodes || !out->r.tasks || !out->hold || !out->hcpu ||
        !out->hmem)
        return AL_ENOMEM;
    for (n = 0; n < c->nn; n++) {
        if (ts.slots[n] <= 0 ||
            (ts.level >= 0 && c->wn[n].topo[ts.level] != win))
            continue;
        cand[nc].k[0] = UINT64_MAX - (uint64_t)ts.slots[n];
        /* Prefer nodes with least free now: hold less idle capacity. */
        cand[nc].k[1] = (uint64_t)c->wn[n].nfree;
        cand[nc].k[2] = 0;
        cand[nc].idx = n;
        nc++;
    }
    rc = skey_sort(c, cand, nc);
    if (rc != 0)
        return rc;
    out->r.job = j;
    out->r.start = when;
    out->r.nnodes = 0;
    for (i = 0; i < nc && left > 0; i++) {
        int64_t k = UINT64_MAX - cand[i].k[0];

        if (k > left)
            k = left;
        left -= k;
        hold_on_node(c, &ts, &jb->req, out, out->r.nnodes++, cand[i].idx, k);
    }
    *made = true;
    return 0;
}

static int
apply_holds(al_ctx_t *c, const resv_int_t *rv)
{
    int32_t i;
    int rc;

    for (i = 0; i < rv->r.nnodes; i++) {
        int32_t n = rv->r.nodes[i];

        rc = al__hold(c, n, rv->hold[i], rv->hcpu[i], rv->hmem[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Evicts job x (all its tasks) for the sake of job `for_job`. */
static int
evict(al_ctx_t *c, int32_t x, int32_t for_job, al_evict_why_t why)
{
    const al_placement_t *pl = al__job_place(c, x);
    wjob_t *w = &c->wj[x];
    int32_t t;
    int rc;

    rc = al__job_mark(c, x);
    if (rc != 0)
        return rc;
    for (t = 0; t < w->ntasks; t++) {
        rc = al__give(c, x, &pl[t], true);
        if (rc != 0)
            return rc;
    }
    w->flags |= JF_EVICTED;
    w->for_job = for_job;
    w->why = why;
    c->nevicted++;
    if (w->flags & JF_STARTED) {
        /* Un-started: no decision for it survives; say why it waits.  (If
         * the reclaim is undone, the job is started again and a started
         * job's reason is cleared when the result is written.) */
        set_reason(c, x, AL_WHY_YIELDED, c->s->jobs[for_job].queue, for_job,
                   AL_RES_GPU, 0, 0);
    }
    return 0;
}

/* Sheds the extra tasks of elastic job x (those past min_tasks). */
static int
shed(al_ctx_t *c, int32_t x, int32_t for_job, al_evict_why_t why)
{
    const al_placement_t *pl = al__job_place(c, x);
    wjob_t *w = &c->wj[x];
    int32_t t, keep = c->s->jobs[x].min_tasks;
    int rc;

    rc = al__job_mark(c, x);
    if (rc != 0)
        return rc;
    for (t = w->ntasks - 1; t >= keep; t--) {
        rc = al__give(c, x, &pl[t], true);
        if (rc != 0)
            return rc;
    }
    w->ntasks = keep;
    w->flags |= JF_SHED;
    c->nevicted++;
    w->for_job = for_job;
    w->why = why;
    return 0;
}

/*
 * The reservation's time has come if only lent jobs stand in the way:
 * evict the lent jobs on its nodes and start j there.  Returns 0 with
 * *started set or clear (state unchanged when clear), or AL_ENOMEM.
 */
static int
claim_lent(al_ctx_t *c, const pass_t *ps, int32_t j, const resv_int_t *rv,
           bool *started)
{
    size_t mark = c->undo.len;
    int32_t i, k;
    int rc;

    *started = false;
    for (i = 0; i < rv->r.nnodes; i++) {
        const wnode_t *w = &c->wn[rv->r.nodes[i]];

        for (k = 0; k < w->nrun; k++) {
            int32_t x = c->run_tasks[w->run_off + k].job;

            if ((c->wj[x].flags & JF_LENT) && !(c->wj[x].flags & JF_EVICTED) &&
                lent_to(c, ps, x, j)) {
                rc = evict(c, x, j, AL_EVICT_RESERVATION);
                if (rc != 0)
                    goto fail;
            }
        }
    }
    rc = place_gang(c, j);
    if (rc == 0) {
        *started = true;
        return 0;
    }
fail:
    al__undo_to(c, mark);
    return rc == AL_ENOENT || rc == AL_ELIMIT ? 0 : rc;
}

/* ------------------------------------------------------------------ */
/* Reclaim and preemption                                             */

#define VICTIMS_MAX (4 * AL_MAX_DEVICES)

typedef struct victim {
    int32_t job;
    bool shed;     /* only the extra tasks of an elastic job */
    bool guarded;  /* its queue's deserved quota limits what may be taken */
    int64_t qgive; /* milli-GPUs its queue loses (all its tasks, anywhere) */
    int64_t dev, cpu, mem; /* what it frees on the node looked at */
    skey_t key;
} victim_t;

/* GPUs queue q holds in jobs that were running before this cycle: what
 * reclaim protects down to the deserved quota (jobs this cycle started
 * would otherwise let it evict work that ran, then count what it started). */
static int64_t
running_gpu(const al_ctx_t *c, int32_t q)
{
    return c->wq[q].alloc[AL_RES_GPU] - c->wq[q].started_gpu;
}

/* Milli-GPUs that running job x's tasks from `from` on hold: what its
 * queue is charged for them (a fraction sized by memory may hold more than
 * it asked for). */
static int64_t
held_gpu(const al_ctx_t *c, int32_t x, int32_t from)
{
    const al_placement_t *pl;
    int64_t g = 0;
    int32_t t;

    /* The victim search asks this for every running job, again and again:
     * the two answers it needs for jobs that ran before the cycle were
     * summed once in setup_jobs(). */
    if ((c->wj[x].flags & (JF_RUNNING | JF_STARTED)) == JF_RUNNING) {
        if (from == 0)
            return (c->wj[x].flags & JF_SHED)
                       ? c->wj[x].held - c->wj[x].held_extra
                       : c->wj[x].held;
        if (from == c->wj[x].min_tasks && !(c->wj[x].flags & JF_SHED))
            return c->wj[x].held_extra;
    }
    pl = al__job_place(c, x);
    for (t = from; t < c->wj[x].ntasks; t++)
        g += al__placed_gpu(&pl[t]);
    return g;
}

/*
 * May reclaim take `take` milli-GPUs of jobs no larger than queue a's
 * deserved quota from a?  Such jobs keep what of the quota they held: the
 * queue's GPUs outside its big jobs (over quota as a whole, see
 * over_quota_alone) must stay at least min(deserved, what they were before
 * the cycle).  Big jobs evicted earlier in the cycle still count as held
 * here, which errs on the side of the victim.
 */
static bool
keeps_quota(const al_ctx_t *c, int32_t a, int64_t take)
{
    int64_t deserved = c->s->queues[a].quota[AL_RES_GPU].deserved;
    int64_t small = running_gpu(c, a) - c->wq[a].big_gpu;
    int64_t before = c->wq[a].run_gpu0 - c->wq[a].big_gpu;

    return small - take >= (before < deserved ? before : deserved);
}

/* May running job x be evicted (or shed) so that job j can start? */
static bool
victim_ok(al_ctx_t *c, int32_t j, int32_t x, bool shed_only)
{
    const al_job_t *jb = &c->s->jobs[j], *xb = &c->s->jobs[x];
    const wjob_t *w = &c->wj[x];
    int64_t give;
    int32_t q, a;

    if (!(w->flags & (JF_RUNNING | JF_STARTED)) || (w->flags & JF_EVICTED) ||
        !xb->preemptible)
        return false;
    if (w->flags & JF_STARTED) {
        /* Started earlier in this cycle: un-starting it loses no work, so
         * it needs no min_runtime and costs its queue nothing it ran.  A
         * job that evicted others to start keeps its place: its victims
         * made room for it, not for whoever comes next. */
        if (shed_only || (w->flags & JF_RECLAIMER))
            return false;
        if (xb->queue == jb->queue)
            return c->cfg.preempt && xb->priority < jb->priority;
        return c->cfg.reclaim && !c->cfg.ignore_queues &&
               (double)c->wq[xb->queue].alloc[AL_RES_GPU] >
                   c->wq[xb->queue].fair[AL_RES_GPU] + 0.5;
    }
    if (shed_only && w->ntasks <= xb->min_tasks)
        return false;
    if (c->s->now - xb->start_time < xb->min_runtime)
        return false; /* shedding loses work too */
    if (xb->queue == jb->queue)
        return c->cfg.preempt && xb->priority < jb->priority;
    if (!c->cfg.reclaim || c->cfg.ignore_queues)
        return false;
    /* Lent capacity goes back to anyone who needs it. */
    if (w->flags & JF_LENT)
        return true;
    q = xb->queue;
    give = held_gpu(c, x, shed_only ? xb->min_tasks : 0);
    if ((double)c->wq[q].alloc[AL_RES_GPU] <= c->wq[q].fair[AL_RES_GPU] + 0.5)
        return false;
    /* Never take a victim's queue (or an ancestor j does not share) below
     * its deserved quota. */
    for (a = q; a != NIL; a = c->wq[a].parent) {
        int32_t b;
        bool shared = false;

        for (b = jb->queue; b != NIL; b = c->wq[b].parent)
            if (b == a)
                shared = true;
        if (shared)
            break;
        if (!over_quota_alone(c, a, c->wj[x].held) && !keeps_quota(c, a, give))
            return false;
    }
    return true;
}

/* May job j reclaim from other queues: is its queue below fair share (or
 * deserved) even after j starts? */
static bool
may_reclaim(const al_ctx_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need = (int64_t)jb->min_tasks * c->wj[j].task_gpu;
    int32_t q = jb->queue;
    double room = c->wq[q].fair[AL_RES_GPU];

    if ((double)c->s->queues[q].quota[AL_RES_GPU].deserved > room)
        room = (double)c->s->queues[q].quota[AL_RES_GPU].deserved;
    return (double)(c->wq[q].alloc[AL_RES_GPU] + need) <= room + 0.5;
}

static int64_t
progress(const al_ctx_t *c, int32_t x)
{
    const al_job_t *xb = &c->s->jobs[x];
    int64_t since = xb->start_time;

    if (xb->checkpoint_time > since)
        since = xb->checkpoint_time;
    return c->s->now - since;
}

/* Cost key: lowest priority, most over-share queue, least progress lost. */
static void
victim_key(const al_ctx_t *c, victim_t *v)
{
    const al_job_t *xb = &c->s->jobs[v->job];
    double ratio = share_ratio(c, xb->queue);
    uint64_t rk;

    if (ratio > 1e15)
        ratio = 1e15;
    rk = (uint64_t)(ratio * 1000.0);
    /* Un-starting a job this cycle started is free; shedding extra tasks
     * is cheaper than evicting a whole job. */
    v->key.k[0] =
        ((uint64_t)((c->wj[v->job].flags & JF_STARTED) ? 0 : 1) << 63) |
        ((uint64_t)(v->shed ? 0 : 1) << 62) |
        ((uint64_t)(uint32_t)(xb->priority + 0x40000000) << 20);
    v->key.k[1] = UINT64_MAX - rk;
    v->key.k[2] = bias(progress(c, v->job));
    v->key.idx = v->job;
}

/* Does queue a contain queue q (a == q or an ancestor of it)? */
static bool
contains(const al_ctx_t *c, int32_t a, int32_t q)
{
    for (; q != NIL; q = c->wq[q].parent)
        if (q == a)
            return true;
    return false;
}

/* May victim v join the victims chosen[0..n) for job j without taking any
 * queue that j does not share below its deserved GPU quota? */
static bool
together_ok(const al_ctx_t *c, int32_t j, const victim_t *chosen, int32_t n,
            const victim_t *v)
{
    int32_t jq = c->s->jobs[j].queue, a, i;

    if (!v->guarded)
        return true;
    for (a = c->s->jobs[v->job].queue; a != NIL; a = c->wq[a].parent) {
        int64_t take = 0;

        if (contains(c, a, jq))
            break;
        if (!over_quota_alone(c, a, c->wj[v->job].held))
            take += v->qgive;
        for (i = 0; i < n; i++)
            if (chosen[i].guarded &&
                contains(c, a, c->s->jobs[chosen[i].job].queue) &&
                !over_quota_alone(c, a, c->wj[chosen[i].job].held))
                take += chosen[i].qgive;
        if (take > 0 && !keeps_quota(c, a, take))
            return false;
    }
    return true;
}

/*
 * victim_ok() for one pick_victims() call: the answer depends only on the
 * two jobs and on queue allocations, which do not move during a pick, and a
 * victim is met once per node it has tasks on.  c->vepoch changes per pick.
 */
static bool
victim_ok_cached(al_ctx_t *c, int32_t j, int32_t x, bool shed_only)
{
    uint8_t bit = shed_only ? 1 : 2, known = (uint8_t)(bit << 2);

    if (c->vstamp[x] != c->vepoch) {
        c->vstamp[x] = c->vepoch;
        c->vok[x] = 0;
    }
    if (!(c->vok[x] & known))
        c->vok[x] |=
            (uint8_t)(known | (victim_ok(c, j, x, shed_only) ? bit : 0));
    return (c->vok[x] & bit) != 0;
}

/* The tasks this cycle started so far, by node (CSR of (job, task)). */
typedef struct started {
    int32_t *off; /* nn + 1 */
    al_jt_t *ent;
} started_t;

static int
started_by_node(al_ctx_t *c, started_t *st)
{
    const al_decision_t *d = c->decisions.data;
    int32_t n, *fill;
    size_t i, total = 0;

    st->off = al_arena_array(c->tmp, (size_t)c->nn + 2, sizeof(int32_t));
    fill = al_arena_array(c->tmp, (size_t)c->nn + 1, sizeof(int32_t));
    if (st->off == NULL || fill == NULL)
        return AL_ENOMEM;
    for (i = 0; i < c->decisions.len; i++) {
        const al_placement_t *pl = al__job_place(c, d[i].job);
        int32_t t;

        if (c->wj[d[i].job].flags & JF_EVICTED)
            continue;
        for (t = 0; t < c->wj[d[i].job].ntasks; t++) {
            st->off[pl[t].node + 1]++;
            total++;
        }
    }
    for (n = 0; n < c->nn; n++)
        st->off[n + 1] += st->off[n];
    st->ent = al_arena_array_raw(c->tmp, total + 1, sizeof(al_jt_t));
    if (st->ent == NULL)
        return AL_ENOMEM;
    for (i = 0; i < c->decisions.len; i++) {
        const al_placement_t *pl = al__job_place(c, d[i].job);
        int32_t t;

        if (c->wj[d[i].job].flags & JF_EVICTED)
            continue;
        for (t = 0; t < c->wj[d[i].job].ntasks; t++) {
            int32_t at = st->off[pl[t].node] + fill[pl[t].node]++;

            st->ent[at].job = d[i].job;
            st->ent[at].task = t;
        }
    }
    return 0;
}

/*
 * Takes victims from scratch[0..m) in order until one task of job j fits
 * on node w, moving those taken to the front; *used counts them and
 * dev/cpu/mem say what the node then has free.  Victims are checked one by
 * one in victim_ok(); here, together, they must not take a queue below its
 * deserved quota either.  Returns whether the task fits.
 */
static bool
accumulate(const al_ctx_t *c, int32_t j, const wnode_t *w,
           const al_request_t *req, victim_t *scratch, int32_t m, int32_t *used,
           int64_t *dev, int64_t *cpu, int64_t *mem)
{
    int64_t need = req->gpus > 0 ? req->gpus : 1;
    int32_t i, n = 0;

    *dev = w->nfree;
    *cpu = w->free_cpu;
    *mem = w->free_mem;
    for (i = 0; i < m; i++) {
        if (*dev >= need && *cpu >= req->cpu_milli && *mem >= req->mem_bytes)
            break;
        if (!together_ok(c, j, scratch, n, &scratch[i]))
            continue;
        if (i != n) {
            victim_t t = scratch[n];

            scratch[n] = scratch[i];
            scratch[i] = t;
        }
        *dev += scratch[n].dev;
        *cpu += scratch[n].cpu;
        *mem += scratch[n].mem;
        n++;
    }
    *used = n;
    return *dev >= need && *cpu >= req->cpu_milli && *mem >= req->mem_bytes;
}

/* Job x's entry among the m victims of scratch[] (shed: it gives up only
 * its tasks beyond min_tasks), added when missing and there is room (at
 * most VICTIMS_MAX a node); -1 when there is none. */
static int32_t
victim_entry(al_ctx_t *c, int32_t j, int32_t x, bool sh, victim_t *scratch,
             int32_t *m)
{
    int32_t i;

    for (i = 0; i < *m; i++)
        if (scratch[i].job == x && scratch[i].shed == sh)
            return i;
    if (*m == VICTIMS_MAX)
        return -1; /* enough candidates on one node */
    scratch[i].job = x;
    scratch[i].shed = sh;
    scratch[i].dev = scratch[i].cpu = scratch[i].mem = 0;
    scratch[i].qgive = held_gpu(c, x, sh ? c->wj[x].min_tasks : 0);
    scratch[i].guarded = c->s->jobs[x].queue != c->s->jobs[j].queue &&
                         !(c->wj[x].flags & (JF_LENT | JF_STARTED));
    /* The key is the same on every node: compute it once a pick (as a
     * whole-job victim; shedding clears bit 62). */
    if (!(c->vok[x] & 16)) {
        victim_t whole = scratch[i];

        whole.shed = false;
        victim_key(c, &whole);
        c->vkey[x] = whole.key;
        c->vok[x] |= 16;
    }
    scratch[i].key = c->vkey[x];
    if (sh)
        scratch[i].key.k[0] &= ~(1ULL << 62);
    (*m)++;
    return i;
}

/* The eligible victims of job j with tasks on node n, into scratch[]
 * (what each would free there): what ran before the cycle, then what the
 * cycle started.  Returns how many. */
static int32_t
node_victims(al_ctx_t *c, int32_t j, int32_t n, const started_t *st,
             victim_t *scratch)
{
    const wnode_t *w = &c->wn[n];
    int32_t k, m = 0;

    for (k = 0; k < w->nrun + (st->off[n + 1] - st->off[n]); k++) {
        bool ran = k < w->nrun;
        int32_t e = ran ? w->run_off + k : st->off[n] + (k - w->nrun);
        int32_t x = ran ? c->run_tasks[e].job : st->ent[e].job;
        int32_t t = ran ? c->run_tasks[e].task : st->ent[e].task;
        bool sh = false;
        const al_placement_t *p;
        int32_t i;

        if (c->wj[x].flags & JF_EVICTED)
            continue;
        if (t >= c->wj[x].ntasks)
            continue; /* already shed */
        /* Only wj[] here: the job structs are big and scattered, and this
         * loop meets every running task of the cluster. */
        if (t >= c->wj[x].min_tasks && victim_ok_cached(c, j, x, true))
            sh = true;
        else if (!victim_ok_cached(c, j, x, false))
            continue;
        if ((i = victim_entry(c, j, x, sh, scratch, &m)) < 0)
            continue;
        p = &al__job_place(c, x)[t];
        scratch[i].dev += p->gpu_milli > 0 ? 0 : al__popcount(p->devices);
        scratch[i].cpu += c->wj[x].cpu;
        scratch[i].mem += c->wj[x].mem;
    }
    return m;
}

/* Sorts the m victims cheapest first, or (by_dev) those freeing most
 * devices first (insertion sort: a handful per node). */
static void
sort_victims(victim_t *scratch, int32_t m, bool by_dev)
{
    for (int32_t i = 1; i < m; i++) {
        victim_t x = scratch[i];
        int32_t k = i;

        while (k > 0 && (by_dev ? scratch[k - 1].dev < x.dev
                                : skey_cmp(&scratch[k - 1].key, &x.key) > 0)) {
            scratch[k] = scratch[k - 1];
            k--;
        }
        scratch[k] = x;
    }
}

/* Spares every victim among the first *used that the others make
 * unnecessary, the most expensive first: cheapest-first accumulation can
 * pick a small victim that a larger one, needed anyway, makes redundant.
 * dev, cpu and mem are what the node has with all *used evicted. */
static void
spare_victims(const al_request_t *req, int64_t need, victim_t *scratch,
              int32_t *m, int32_t *used, int64_t dev, int64_t cpu, int64_t mem)
{
    for (int32_t i = *used - 1; i >= 0; i--) {
        if (dev - scratch[i].dev >= need &&
            cpu - scratch[i].cpu >= req->cpu_milli &&
            mem - scratch[i].mem >= req->mem_bytes) {
            dev -= scratch[i].dev;
            cpu -= scratch[i].cpu;
            mem -= scratch[i].mem;
            memmove(&scratch[i], &scratch[i + 1],
                    (size_t)(*m - i - 1) * sizeof(*scratch));
            (*m)--;
            (*used)--;
        }
    }
}

/*
 * For one task of job j, finds the node where the fewest, cheapest victims
 * make room.  Fills vs[0..*nv) with the victims to evict and *node, or sets
 * *node NIL when nothing works.
 */
static int
pick_victims(al_ctx_t *c, int32_t j, int level, int32_t dom,
             const started_t *st, victim_t *vs, int32_t *nv, int32_t *node,
             victim_t *scratch)
{
    const al_request_t *req = &c->s->jobs[j].req;
    skey_t bestkey;
    int32_t li, lo = 0, hi = c->nn, best = NIL, bestn = 0;
    int64_t need = req->gpus > 0 ? req->gpus : 1;

    if (level >= 0) {
        lo = c->dom_off[level][dom];
        hi = c->dom_off[level][dom + 1];
    }
    memset(&bestkey, 0xff, sizeof(bestkey));
    c->vepoch++;
    for (li = lo; li < hi; li++) {
        int32_t n = level >= 0 ? c->dom_nodes[level][li] : li;
        const wnode_t *w = &c->wn[n];
        int32_t m, used = 0;
        int64_t dev, cpu, mem;
        skey_t key;

        if (!w->ready || w->group == NIL || !al__req_group(c, w->group, req))
            continue;
        if (w->nrun == 0 && st->off[n] == st->off[n + 1])
            continue;
        if ((m = node_victims(c, j, n, st, scratch)) == 0)
            continue;
        sort_victims(scratch, m, false);
        if (!accumulate(c, j, w, req, scratch, m, &used, &dev, &cpu, &mem)) {
            /* Cheapest first can stall on the deserved guard (a small
             * victim uses up what a queue may lose); try largest first. */
            sort_victims(scratch, m, true);
            if (!accumulate(c, j, w, req, scratch, m, &used, &dev, &cpu, &mem))
                continue;
        }
        if (used == 0)
            continue; /* fits without victims: placement failed elsewhere */
        spare_victims(req, need, scratch, &m, &used, dev, cpu, mem);
        /* Compare: the most expensive victim used, then how many. */
        key = scratch[used - 1].key;
        key.idx = used;
        if (best == NIL || skey_cmp(&key, &bestkey) < 0) {
            best = n;
            bestkey = key;
            bestn = used;
            memcpy(vs, scratch, (size_t)used * sizeof(*vs));
        }
    }
    *node = best;
    *nv = bestn;
    return 0;
}

/*
 * For a gang that must stay inside one topology domain: the domain where
 * free devices plus those of eligible victims hold every task, preferring
 * the one with most free devices already (fewest evictions).  NIL if none.
 */
static int32_t
reclaim_domain(al_ctx_t *c, int32_t j, int level)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t g = jb->req.gpus > 0 ? jb->req.gpus : 1, bestfree = -1;
    int32_t d, best = NIL;

    c->vepoch++;
    for (d = 0; d < c->ndomains[level]; d++) {
        int32_t i, lo = c->dom_off[level][d], hi = c->dom_off[level][d + 1];
        int64_t pot = 0, f = 0;

        for (i = lo; i < hi; i++) {
            int32_t n = c->dom_nodes[level][i], k;
            const wnode_t *w = &c->wn[n];
            int64_t vdev = 0;

            if (!w->ready || w->group == NIL ||
                !al__req_group(c, w->group, &jb->req))
                continue;
            for (k = 0; k < w->nrun; k++) {
                int32_t x = c->run_tasks[w->run_off + k].job;
                int32_t t = c->run_tasks[w->run_off + k].task;
                const al_placement_t *p = &c->s->jobs[x].placement[t];

                if ((c->wj[x].flags & JF_EVICTED) || t >= c->wj[x].ntasks ||
                    p->gpu_milli > 0 || !victim_ok_cached(c, j, x, false))
                    continue;
                vdev += al__popcount(p->devices);
            }
            pot += (w->nfree + vdev) / g;
            f += w->nfree;
        }
        if (pot >= jb->min_tasks && f > bestfree) {
            best = d;
            bestfree = f;
        }
    }
    return best;
}

/* Tries to start blocked job j by evicting victims.  On failure the state
 * is unchanged.  Returns 0 (see *started) or AL_ENOMEM. */
static int
reclaim_for(al_ctx_t *c, int32_t j, victim_t *vs, victim_t *scratch,
            bool *started)
{
    const al_job_t *jb = &c->s->jobs[j];
    size_t mark = c->undo.len, tmark = c->tasks.len;
    int32_t t, i, dom = NIL;
    int level = -1, rc = 0;
    started_t st = { NULL, NULL };

    *started = false;
    if (jb->topo_mode == AL_TOPO_REQUIRED && jb->min_tasks > 1) {
        level = jb->topo_level;
        dom = reclaim_domain(c, j, level);
        if (dom == NIL)
            return 0;
    }
    for (t = 0; t < jb->min_tasks; t++) {
        al_placement_t p;
        int32_t nv, node;

        rc = al__find_task(c, j, -1, level, dom, &p);
        if (rc == AL_ENOENT) {
            /* What this cycle started stays the same while j's own tasks
             * are placed (j is recorded at the end). */
            rc = st.off == NULL ? started_by_node(c, &st) : 0;
            if (rc == 0)
                rc = pick_victims(c, j, level, dom, &st, vs, &nv, &node,
                                  scratch);
            if (rc != 0 || node == NIL) {
                rc = rc ? rc : AL_ENOENT;
                goto fail;
            }
            for (i = 0; i < nv; i++) {
                bool same = jb->queue == c->s->jobs[vs[i].job].queue;
                al_evict_why_t why = same ? AL_EVICT_PREEMPT : AL_EVICT_RECLAIM;

                if (c->wj[vs[i].job].flags & JF_LENT)
                    why = AL_EVICT_RESERVATION;
                rc = vs[i].shed ? shed(c, vs[i].job, j, why)
                                : evict(c, vs[i].job, j, why);
                if (rc != 0)
                    goto fail;
            }
            rc = al__find_task(c, j, node, -1, NIL, &p);
        }
        if (rc == 0)
            rc = al__take(c, j, &p, true);
        if (rc == 0)
            rc = al__vec_push(c, &c->tasks, &p);
        if (rc != 0)
            goto fail;
    }
    if (!within_quota(c, j)) {
        rc = AL_ENOENT;
        goto fail;
    }
    rc = record_start(c, j, jb->min_tasks, false, NIL);
    if (rc != 0)
        goto fail;
    c->wj[j].flags |= JF_RECLAIMER;
    c->stats.started++;
    c->stats.placements += jb->min_tasks;
    *started = true;
    return 0;
fail:
    al__undo_to(c, mark);
    c->tasks.len = tmark;
    return rc == AL_ENOENT ? 0 : rc;
}

/* ------------------------------------------------------------------ */
/* The allocation pass                                                */

/*
 * Failure memo.  Placement only fails for lack of capacity, and capacity
 * only shrinks until something is released (c->version moves), so a gang
 * shape that failed stays failed: a later job of the same shape (GPUs,
 * tasks, topology, pool, model) that asks for at least as much CPU and
 * memory fails without a search.  This keeps a cycle over 100,000 pending
 * jobs on a full cluster from searching 100,000 times.
 */
static uint64_t
shape_hash(const al_job_t *jb)
{
    uint64_t h = 1469598103934665603ULL;
    const uint64_t parts[] = { (uint64_t)jb->req.gpus,
                               (uint64_t)jb->req.gpu_milli,
                               (uint64_t)jb->req.gpu_mem,
                               (uint64_t)jb->min_tasks,
                               (uint64_t)jb->topo_mode,
                               (uint64_t)jb->topo_level,
                               (uint64_t)(uintptr_t)jb->req.gpu_model,
                               (uint64_t)(uintptr_t)jb->req.pool };
    size_t i;

    for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        h ^= parts[i];
        h *= 1099511628211ULL;
    }
    return h | 1;
}

/* Empties memo t when c->version moved since its entries. */
static void
memo_reset(const al_ctx_t *c, memo_tab_t *t)
{
    if (t->version != (int64_t)c->version) {
        memset(t->e, 0, sizeof(t->e));
        t->version = (int64_t)c->version;
    }
}

/* Whether a job of shape h asking at least as much as a failed one of t
 * fails too. */
static bool
memo_failed(const memo_tab_t *t, const al_job_t *jb, uint64_t h)
{
    const memo_t *m = &t->e[h % MEMO_SIZE];

    return m->key == h && jb->req.cpu_milli >= m->cpu &&
           jb->req.mem_bytes >= m->mem;
}

static void
memo_note(memo_tab_t *t, const al_job_t *jb, uint64_t h)
{
    memo_t *m = &t->e[h % MEMO_SIZE];

    if (m->key != h ||
        (jb->req.cpu_milli <= m->cpu && jb->req.mem_bytes <= m->mem)) {
        m->key = h;
        m->cpu = jb->req.cpu_milli;
        m->mem = jb->req.mem_bytes;
    }
}

/* Sets j's reason after a failed placement. */
static void
blocked_reason(al_ctx_t *c, int32_t j, int64_t f)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need =
        (int64_t)jb->min_tasks * (jb->req.gpus > 0 ? jb->req.gpus : 0);

    if (jb->topo_mode == AL_TOPO_REQUIRED && jb->min_tasks > 1 && f >= need)
        set_reason(c, j, AL_WHY_TOPOLOGY, NIL, NIL, AL_RES_GPU, 0, 0);
    else if (f >= need && need > 0)
        set_reason(c, j, AL_WHY_NO_NODE, NIL, NIL, AL_RES_GPU, f * AL_GPU_MILLI,
                   0);
    else
        set_reason(c, j, AL_WHY_CAPACITY, NIL, NIL, AL_RES_GPU,
                   f * AL_GPU_MILLI, 0);
}

/* Releases every reservation hold (pushing undo records) and returns a
 * mark to re-apply them with rehold(). */
static int
unhold_all(al_ctx_t *c, pass_t *ps)
{
    int32_t r, i;
    int rc;

    for (r = 0; r < ps->nresv; r++)
        for (i = 0; i < ps->resv[r].r.nnodes; i++) {
            rc = al__unhold_all(c, ps->resv[r].r.nodes[i]);
            if (rc != 0)
                return rc;
        }
    return 0;
}

/* Devices the reservations hold right now (lent jobs shrink the holds). */
static int64_t
held_now(const al_ctx_t *c, const pass_t *ps)
{
    int64_t h = 0;
    int32_t r, i;

    for (r = 0; r < ps->nresv; r++)
        for (i = 0; i < ps->resv[r].r.nnodes; i++) {
            int32_t n = ps->resv[r].r.nodes[i];

            /* A node in two reservations counts once: its first. */
            if (c->wn[n].hold_mask != 0) {
                int32_t r2, i2;
                bool seen = false;

                for (r2 = 0; r2 < r && !seen; r2++)
                    for (i2 = 0; i2 < ps->resv[r2].r.nnodes; i2++)
                        if (ps->resv[r2].r.nodes[i2] == n)
                            seen = true;
                if (!seen)
                    h += al__popcount(c->wn[n].hold_mask);
            }
        }
    return h;
}

static int
rehold(al_ctx_t *c, pass_t *ps)
{
    int32_t r;
    int rc;

    for (r = 0; r < ps->nresv; r++) {
        rc = apply_holds(c, &ps->resv[r]);
        if (rc != 0)
            return rc;
    }
    ps->held_dev = held_now(c, ps);
    return 0;
}

/* The holds of every reservation whose job has not started, but job
 * skip's (NIL: none skipped), after unhold_all(). */
static int
rehold_waiting(al_ctx_t *c, pass_t *ps, int32_t skip)
{
    int32_t r;
    int rc;

    for (r = 0; r < ps->nresv; r++) {
        int32_t j = ps->resv[r].r.job;

        if (j == skip || (c->wj[j].flags & JF_STARTED))
            continue;
        rc = apply_holds(c, &ps->resv[r]);
        if (rc != 0)
            return rc;
    }
    ps->held_dev = held_now(c, ps);
    return 0;
}

/* Whether job j holds one of the pass's reservations. */
static bool
has_resv(const pass_t *ps, int32_t j)
{
    for (int32_t r = 0; r < ps->nresv; r++)
        if (ps->resv[r].r.job == j)
            return true;
    return false;
}

/* The reservation (index) whose nodes the START decision of j touches. */
static int32_t
touched_resv(const al_ctx_t *c, const pass_t *ps, int32_t j)
{
    const al_placement_t *pl = al__job_place(c, j);
    int32_t r, i, t;

    for (t = 0; t < c->wj[j].ntasks; t++)
        for (r = 0; r < ps->nresv; r++)
            for (i = 0; i < ps->resv[r].r.nnodes; i++)
                if (ps->resv[r].r.nodes[i] == pl[t].node &&
                    ps->resv[r].hold[i] != 0)
                    return r;
    return NIL;
}

/* Is any leaf queue other than q above its GPU fair share? */
static bool
any_over_share(const al_ctx_t *c, int32_t q)
{
    int32_t k;

    for (k = 0; k < c->nq; k++)
        if (k != q && c->wq[k].leaf &&
            (double)c->wq[k].alloc[AL_RES_GPU] >
                c->wq[k].fair[AL_RES_GPU] + 0.5)
            return true;
    return false;
}

/*
 * Reclaim and preemption for job j, which just failed to find room: called
 * from the allocation pass at once, before any job of a queue in less need
 * takes idle capacity that the eviction would have joined (which made the
 * next cycle evict what this one had just started).  Bounded by
 * max_reclaim_tries per cycle, and per queue by the smallest gang that
 * already failed.  Returns 0 (see *started) or AL_ENOMEM.
 */
static int
reclaim_one(al_ctx_t *c, pass_t *ps, int32_t j, bool *started)
{
    const al_job_t *jb = &c->s->jobs[j];
    wqueue_t *w = &c->wq[jb->queue];
    int64_t size = (int64_t)jb->min_tasks * c->wj[j].task_gpu;
    al_reason_t keep = c->reasons[j];
    bool cross, save = c->cfg.reclaim;
    int rc;

    *started = false;
    if ((!c->cfg.reclaim && !c->cfg.preempt) || c->cfg.strict_order ||
        c->cfg.ignore_queues ||
        c->stats.reclaim_tries >= c->cfg.max_reclaim_tries)
        return 0;
    if (w->reclaim_fail > 0 && size >= w->reclaim_fail)
        return 0;
    cross = c->cfg.reclaim && may_reclaim(c, j);
    /* Preemption needs a preemptible job of lower priority in the queue. */
    if (!cross && (!c->cfg.preempt || jb->priority <= w->min_prio))
        return 0;
    if (ps->vs == NULL) {
        ps->vs = al_arena_array(c->tmp, VICTIMS_MAX + 1, sizeof(victim_t));
        ps->scratch = al_arena_array(c->tmp, VICTIMS_MAX + 1, sizeof(victim_t));
        c->vstamp = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(int32_t));
        c->vok = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(uint8_t));
        c->vkey = al_arena_array_raw(c->tmp, (size_t)c->nj + 1, sizeof(skey_t));
        if (ps->vs == NULL || ps->scratch == NULL || c->vstamp == NULL ||
            c->vok == NULL || c->vkey == NULL)
            return AL_ENOMEM;
    }
    c->stats.reclaim_tries++;
    c->cfg.reclaim = cross;
    rc = reclaim_for(c, j, ps->vs, ps->scratch, started);
    c->cfg.reclaim = save;
    if (rc != 0 || *started)
        return rc;
    /* What reclaim_for() noted on its way does not replace the reason. */
    c->reasons[j] = keep;
    if (w->reclaim_fail == 0 || size < w->reclaim_fail)
        w->reclaim_fail = size;
    /* Say so only where reclaim was the way out: another queue is over
     * its fair share. */
    if (cross && any_over_share(c, jb->queue) &&
        (keep.code == AL_WHY_CAPACITY || keep.code == AL_WHY_NO_NODE))
        set_reason(c, j, AL_WHY_NO_VICTIM, jb->queue, NIL, AL_RES_GPU, 0, 0);
    return 0;
}

/*
 * j found no room: try the room reservations hold.  A job that ends before
 * the earliest reservation starts delays nobody; a preemptible one may
 * borrow it and leave when the reservation's job starts.  Sets *done when
 * try_place has nothing more to do (j started, or a quota stopped it);
 * otherwise j's reason may become "behind a reservation".  0 or an
 * error.
 */
static int
try_reserved_room(al_ctx_t *c, pass_t *ps, int32_t j, int64_t fdev, bool *done)
{
    const al_job_t *jb = &c->s->jobs[j];
    uint64_t h = shape_hash(jb);
    bool use_memo = c->forbid == 0;
    bool shorter = c->s->now + al__runtime(c, jb) <= c->min_resv_start;
    bool lend = jb->preemptible && c->cfg.lend_reserved;
    size_t mark = c->undo.len, tmark = c->tasks.len;
    uint64_t v0 = c->version;
    int rc;

    *done = false;
    /* A shape that failed here at this version fails again: a queue of
     * thousands of like jobs behind a reservation costs one search, not
     * one per job (each attempt releases and restores the holds). */
    memo_reset(c, &ps->lend_memo);
    if ((shorter || lend) &&
        !(use_memo && memo_failed(&ps->lend_memo, jb, h)) &&
        (jb->req.gpus == 0 ||
         fdev + ps->held_dev >= (int64_t)jb->min_tasks * jb->req.gpus)) {
        /* With every hold released the buckets show all free devices,
         * so the normal search serves. */
        rc = unhold_all(c, ps);
        if (rc == 0)
            rc = place_gang(c, j);
        if (rc == 0) {
            int32_t r = touched_resv(c, ps, j);
            al_decision_t *d =
                (al_decision_t *)c->decisions.data + c->wj[j].start_dec;

            if (!shorter && r != NIL) {
                d->lent = true;
                d->for_job = ps->resv[r].r.job;
                c->wj[j].flags |= JF_LENT;
                c->wj[j].for_job = d->for_job;
            }
            rc = rehold(c, ps);
            if (rc == 0) {
                c->reasons[j].code = AL_WHY_NONE;
                *done = true;
                return 0;
            }
        }
        al__undo_to(c, mark);
        c->tasks.len = tmark;
        if (rc == AL_ELIMIT) {
            *done = true; /* over a quota, not out of room: reason set */
            return 0;
        }
        if (rc != AL_ENOENT)
            return rc;
        /* Undone: the state is the one at v0 again, so what failed
         * before (both memos) still fails. */
        c->version = v0;
        if (use_memo)
            memo_note(&ps->lend_memo, jb, h);
    }
    if ((c->reasons[j].code == AL_WHY_CAPACITY ||
         c->reasons[j].code == AL_WHY_NO_NODE) &&
        fdev + ps->held_dev >= (int64_t)jb->min_tasks * jb->req.gpus)
        set_reason(c, j, AL_WHY_BEHIND_RESERVATION, NIL, ps->resv[0].r.job,
                   AL_RES_GPU, 0, ps->resv[0].r.start);
    return 0;
}

/* Tries to start candidate j.  Returns 0 (started or not: see flags and
 * reason) or AL_ENOMEM. */
static int
try_place(al_ctx_t *c, pass_t *ps, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    uint64_t h = shape_hash(jb);
    bool use_memo = c->forbid == 0; /* the memo knows shapes, not masks */
    /* Free devices j may use; a failed placement leaves the state as it
     * was, so this holds for the whole of this function. */
    int64_t fdev = free_devices(c, j);
    int rc;

    memo_reset(c, &ps->memo);
    /* Too few free devices, or a shape that already failed: no search. */
    if ((jb->req.gpus > 0 && fdev < (int64_t)jb->min_tasks * jb->req.gpus) ||
        (use_memo && memo_failed(&ps->memo, jb, h)))
        rc = AL_ENOENT;
    else
        rc = place_gang(c, j);
    if (rc == 0)
        return 0;
    if (rc == AL_ELIMIT)
        return 0; /* over a quota, not out of room: reason set */
    if (rc != AL_ENOENT)
        return rc;
    memo_reset(c, &ps->memo);
    if (use_memo)
        memo_note(&ps->memo, jb, h);
    blocked_reason(c, j, fdev);

    if (ps->nresv > 0) {
        bool done;

        rc = try_reserved_room(c, ps, j, fdev, &done);
        if (rc != 0 || done)
            return rc;
    }
    c->wj[j].flags |= JF_BLOCKED;

    {
        bool started;

        rc = reclaim_one(c, ps, j, &started);
        if (rc != 0)
            return rc;
        if (started) {
            c->wj[j].flags &= ~JF_BLOCKED;
            c->reasons[j].code = AL_WHY_NONE;
            return 0;
        }
    }

    if (ps->nresv < c->cfg.reserve_depth &&
        (c->reasons[j].code == AL_WHY_CAPACITY ||
         c->reasons[j].code == AL_WHY_NO_NODE ||
         c->reasons[j].code == AL_WHY_TOPOLOGY ||
         c->reasons[j].code == AL_WHY_NO_VICTIM ||
         c->reasons[j].code == AL_WHY_BEHIND_RESERVATION)) {
        resv_int_t *rv = &ps->resv[ps->nresv];
        bool made, started;

        memset(rv, 0, sizeof(*rv));
        rc = reserve(c, ps, j, rv, &made);
        if (rc != 0)
            return rc;
        if (!made) {
            set_reason(c, j, AL_WHY_TOO_BIG, NIL, NIL, AL_RES_GPU,
                       c->wj[j].task_gpu, 0);
            return 0;
        }
        if (rv->r.start <= c->s->now) {
            rc = claim_lent(c, ps, j, rv, &started);
            if (rc != 0)
                return rc;
            if (started) {
                c->wj[j].flags &= ~JF_BLOCKED;
                c->reasons[j].code = AL_WHY_NONE;
                return 0;
            }
        }
        rc = apply_holds(c, rv);
        if (rc != 0)
            return rc;
        ps->nresv++;
        ps->held_dev = held_now(c, ps);
        c->stats.reservations++;
        if (rv->r.start < c->min_resv_start)
            c->min_resv_start = rv->r.start;
        set_reason(c, j, AL_WHY_RESERVED, NIL, NIL, AL_RES_GPU, 0, rv->r.start);
    }
    return 0;
}

/* Tries to start candidate j: admission, then placement (see try_place).
 * Returns 0 (started or not: see flags and reason) or AL_ENOMEM. */
static int
try_start(al_ctx_t *c, pass_t *ps, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    int32_t fq = NIL;
    int64_t fl = 0;
    int rc;

    c->stats.considered++;
    if (!admit(c, j, jb->min_tasks))
        return 0;
    al_reason_code_t why;
    if (!ever_fits(c, j, &why)) {
        set_reason(c, j, why, NIL, NIL, AL_RES_GPU, c->wj[j].task_gpu, 0);
        return 0;
    }
    c->forbid = model_forbid(c, j, jb->min_tasks, &fq, &fl);
    rc = try_place(c, ps, j);
    if (rc == 0 && c->forbid != 0 && !(c->wj[j].flags & JF_STARTED) &&
        (c->reasons[j].code == AL_WHY_CAPACITY ||
         c->reasons[j].code == AL_WHY_NO_NODE ||
         c->reasons[j].code == AL_WHY_TOPOLOGY ||
         c->reasons[j].code == AL_WHY_TOO_BIG)) {
        c->wj[j].flags &= ~JF_BLOCKED; /* reclaim cannot lift a limit */
        set_reason(c, j, AL_WHY_MODEL_LIMIT, fq, NIL, AL_RES_GPU, fl, 0);
    }
    c->forbid = 0;
    return rc;
}

/* A time as 47 bits that sort as it does (clamped at +-2^46 s, some two
 * million years). */
static uint64_t
bias47(int64_t v)
{
    const int64_t half = (int64_t)1 << 46;

    if (v < -half)
        v = -half;
    if (v > half - 1)
        v = half - 1;
    return (uint64_t)(v + half);
}

/* The expected runtime in whole minutes as an order key (16 bits), or 0
 * when the order ignores it. */
static uint64_t
runtime_minutes(const al_ctx_t *c, const al_job_t *jb)
{
    int64_t m;

    if (!c->cfg.short_first)
        return 0;
    m = al__runtime(c, jb) / 60;
    return m < 0 ? 0 : m > 0xFFFF ? 0xFFFF : (uint64_t)m;
}

/* Builds the candidates' order: per queue (or one global list), priority
 * class, critical path, expected runtime (short_first), waiting time,
 * submit time, id. */
static int
build_order(al_ctx_t *c, pass_t *ps)
{
    int32_t j;
    size_t n = 0;
    int rc;

    ps->order = al_arena_array_raw(c->tmp, (size_t)c->nj + 1, sizeof(skey_t));
    if (ps->order == NULL)
        return AL_ENOMEM;
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];
        skey_t *k;
        uint64_t q, prio, crit;

        if (jb->state == AL_JOB_RUNNING)
            continue;
        if (jb->state == AL_JOB_HELD) {
            set_reason(c, j, AL_WHY_HELD, NIL, NIL, 0, 0, 0);
            continue;
        }
        if (!queue_ok(c, jb->queue)) {
            set_reason(c, j, AL_WHY_BAD_QUEUE, jb->queue, NIL, 0, 0, 0);
            continue;
        }
        if (jb->dep_state == AL_DEPS_WAITING) {
            set_reason(c, j, AL_WHY_DEPS, NIL, NIL, 0, 0, 0);
            continue;
        }
        if (jb->dep_state == AL_DEPS_NEVER) {
            set_reason(c, j, AL_WHY_DEPS_NEVER, NIL, NIL, 0, 0, 0);
            continue;
        }
        q = c->cfg.ignore_queues ? 0 : (uint64_t)jb->queue & 0xFFFFF;
        prio = (uint64_t)(0xFFFF - (jb->priority < 0        ? 0
                                    : jb->priority > 0xFFFF ? 0xFFFF
                                                            : jb->priority));
        crit =
            (uint64_t)(0xFFFFFFF -
                       (c->wj[j].crit > 0xFFFFFFF ? 0xFFFFFFF : c->wj[j].crit));
        k = &ps->order[n++];
        k->k[0] = q << 44 | prio << 28 | crit;
        /* Expected runtime in minutes (short_first), then waiting since
         * (earlier first: aging), then submit time. */
        k->k[1] =
            runtime_minutes(c, jb) << 47 |
            bias47(jb->eligible_time > 0 ? jb->eligible_time : jb->submit_time);
        /* Submit time as an offset from the waiting time: the same
         * order for ties, and all zero (no sort pass) in the usual case
         * where a job waits since it was submitted. */
        k->k[2] =
            bias(jb->submit_time -
                 (jb->eligible_time > 0 ? jb->eligible_time : jb->submit_time));
        k->idx = j;
    }
    ps->norder = n;
    rc = skey_sort(c, ps->order, n);
    if (rc != 0)
        return rc;
    /* Slices per queue. */
    if (!c->cfg.ignore_queues) {
        size_t i;

        for (i = 0; i < n; i++) {
            int32_t q = c->s->jobs[ps->order[i].idx].queue;

            if (i == 0 || c->s->jobs[ps->order[i - 1].idx].queue != q)
                c->wq[q].job_begin = (int32_t)i;
            c->wq[q].job_end = (int32_t)i + 1;
            c->wq[q].next_job = c->wq[q].job_begin;
        }
    }
    return 0;
}

/*
 * Evictions free more than their reclaimer takes (devices come in whole
 * jobs), and the room appears after jobs ranked below the reclaimer were
 * already turned away.  Give every job still blocked for room one more
 * try, in rank order, so that no GPU stays idle that a waiting job fits.
 */
static int
second_chance(al_ctx_t *c, pass_t *ps)
{
    size_t i;
    int rc;

    if (c->cfg.strict_order)
        return 0;
    for (i = 0; i < ps->norder; i++) {
        int32_t j = ps->order[i].idx;
        const al_job_t *jb = &c->s->jobs[j];
        al_reason_t keep = c->reasons[j];
        int32_t fq = NIL;
        int64_t fl = 0;
        uint64_t h;

        if ((c->wj[j].flags & (JF_BLOCKED | JF_STARTED | JF_EVICTED)) !=
            JF_BLOCKED)
            continue;
        if (jb->req.gpus > 0 &&
            free_devices(c, j) < (int64_t)jb->min_tasks * jb->req.gpus)
            continue;
        h = shape_hash(jb);
        memo_reset(c, &ps->memo);
        if (memo_failed(&ps->memo, jb, h))
            continue;
        if (!admit(c, j, jb->min_tasks)) {
            c->reasons[j] = keep;
            continue;
        }
        /* A job with a reservation may use the room it holds; once it has
         * started, its holds must not keep later jobs out of that room
         * (the reservation is not reported, the room would look free). */
        bool own = has_resv(ps, j);
        if (own && ((rc = unhold_all(c, ps)) != 0 ||
                    (rc = rehold_waiting(c, ps, j)) != 0))
            return rc;
        c->forbid = model_forbid(c, j, jb->min_tasks, &fq, &fl);
        rc = place_gang(c, j);
        if (rc == AL_ENOENT && c->forbid == 0 && !own)
            memo_note(&ps->memo, jb, h);
        c->forbid = 0;
        if (own) {
            int rc2 = unhold_all(c, ps);
            if (rc2 == 0)
                rc2 = rehold_waiting(c, ps, NIL);
            if (rc2 != 0)
                return rc2;
        }
        if (rc == 0) {
            c->wj[j].flags &= ~JF_BLOCKED;
            continue;
        }
        c->reasons[j] = keep;
        if (rc != AL_ENOENT && rc != AL_ELIMIT)
            return rc;
    }
    return 0;
}

/* (waited + runtime) / runtime in thousandths: the response ratio of
 * highest-response-ratio-next, which favours short jobs and lets every job's
 * ratio grow without bound while it waits.  The runtime counts as at least
 * starve_after: a job just past the threshold then has a ratio of at most
 * 2, which any job that has waited its own runtime (or starve_after) has
 * reached, so a long job's wait for the first place is bounded by its
 * runtime, not by its runtime times the ratio of the two runtimes. */
static int64_t
response_ratio(const al_ctx_t *c, const al_job_t *jb, int64_t waited)
{
    int64_t rt = al__runtime(c, jb);
    double r;

    if (rt < c->cfg.starve_after)
        rt = c->cfg.starve_after;
    if (rt < 1)
        rt = 1;
    r = ((double)waited + (double)rt) * 1000.0 / (double)rt;
    return r > 4e18 ? (int64_t)4e18 : (int64_t)r;
}

/*
 * Anti-starvation: the jobs that have waited longer than starve_after, at
 * most reserve_depth of them, are considered before the order of need:
 * oldest first, or with short_first the highest response ratio first.
 * Each starts, reclaims or takes one of the first reservations, so a gang
 * of a queue above its fair share cannot be passed over forever by the
 * steady small jobs of queues below theirs.
 */
static int
starving_first(al_ctx_t *c, pass_t *ps)
{
    int32_t pick[AL_STARVE_MAX], np = 0, k, j;
    int64_t key[AL_STARVE_MAX];
    int want = c->cfg.reserve_depth < AL_STARVE_MAX ? c->cfg.reserve_depth
                                                    : AL_STARVE_MAX;
    size_t i;
    int rc;

    if (c->cfg.starve_after <= 0 || c->cfg.strict_order ||
        c->cfg.ignore_queues || want <= 0)
        return 0;
    for (i = 0; i < ps->norder; i++) {
        const al_job_t *jb;
        int64_t t;

        j = ps->order[i].idx;
        jb = &c->s->jobs[j];
        t = jb->eligible_time > 0 ? jb->eligible_time : jb->submit_time;
        if (c->s->now - t < c->cfg.starve_after)
            continue;
        if (c->cfg.short_first)
            t = -response_ratio(c, jb, c->s->now - t);
        if (np == want &&
            (t > key[np - 1] || (t == key[np - 1] && j > pick[np - 1])))
            continue;
        /* A job its queue's limits hold back could take a place here
         * cycle after cycle and never use it.  (Asked only of jobs that
         * would get a place: with 100,000 waiting it cost 9 ms a cycle.) */
        if (!admit(c, j, jb->min_tasks))
            continue;
        /* Insert into the small sorted list, smallest key (then lowest
         * index) first. */
        k = np < want ? np++ : np - 1;
        while (k > 0 &&
               (key[k - 1] > t || (key[k - 1] == t && pick[k - 1] > j))) {
            key[k] = key[k - 1];
            pick[k] = pick[k - 1];
            k--;
        }
        key[k] = t;
        pick[k] = j;
    }
    for (k = 0; k < np; k++) {
        j = pick[k];
        c->wj[j].flags |= JF_TRIED;
        rc = try_start(c, ps, j);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int
allocate(al_ctx_t *c, pass_t *ps)
{
    qheap_t hp;
    size_t i = 0;
    int32_t q;
    int rc;

    ps->resv = al_arena_array(c->tmp, (size_t)c->cfg.reserve_depth + 1,
                              sizeof(resv_int_t));
    hp.h = al_arena_array(c->tmp, (size_t)c->nq + 1, sizeof(int32_t));
    if (ps->resv == NULL || hp.h == NULL)
        return AL_ENOMEM;
    hp.n = 0;
    ps->first_blocked = NIL;
    /* Before the heap is built: starting jobs moves queues' keys. */
    rc = starving_first(c, ps);
    if (rc != 0)
        return rc;
    if (!c->cfg.ignore_queues) {
        for (q = 0; q < c->nq; q++)
            if (c->wq[q].leaf && c->wq[q].job_end > c->wq[q].job_begin) {
                queue_rekey(c, q);
                hp.h[hp.n] = q;
                c->wq[q].heap_pos = hp.n++;
                heap_up(c, &hp, hp.n - 1);
            }
    }
    for (;;) {
        int32_t j;

        if (c->cfg.ignore_queues) {
            if (i >= ps->norder)
                break;
            j = ps->order[i++].idx;
        } else {
            wqueue_t *w;

            if (hp.n == 0)
                break;
            q = hp.h[0];
            w = &c->wq[q];
            j = ps->order[w->next_job++].idx;
            /* Jobs come in rank order, scattered in memory: fetch the
             * state of the one four places ahead while this one runs (a
             * quarter of a full cycle was cache misses here). */
            if (w->next_job + 4 < w->job_end) {
                int32_t pj = ps->order[w->next_job + 4].idx;
                const char *pjb = (const char *)&c->s->jobs[pj];

                __builtin_prefetch(pjb);
                __builtin_prefetch(pjb + 64);
                __builtin_prefetch(pjb + 128);
                __builtin_prefetch(&c->wj[pj]);
                __builtin_prefetch(&c->reasons[pj]);
            }
            if (w->next_job >= w->job_end)
                heap_pop(c, &hp);
        }
        if (c->wj[j].flags & JF_TRIED)
            continue; /* considered first, as a starving job */
        if (ps->first_blocked != NIL) {
            set_reason(c, j, AL_WHY_ORDER, NIL, ps->first_blocked, 0, 0, 0);
            continue;
        }
        rc = try_start(c, ps, j);
        if (rc != 0)
            return rc;
        if (c->wj[j].flags & JF_STARTED) {
            if (!c->cfg.ignore_queues)
                heap_fix(c, &hp, c->s->jobs[j].queue);
        } else if (c->cfg.strict_order) {
            ps->first_blocked = j;
        }
    }
    return c->nevicted > 0 ? second_chance(c, ps) : 0;
}

/* ------------------------------------------------------------------ */
/* The result                                                         */

void
al_result_destroy(al_result_t *res)
{
    if (res == NULL)
        return;
    al_arena_destroy(res->arena);
}

static int
build_result(al_ctx_t *c, const pass_t *ps, al_result_t **out)
{
    al_arena_t *ar = c->out;
    al_result_t *res;
    size_t nd = 0, i;
    int32_t j, q, r;
    const al_decision_t *starts = c->decisions.data;

    if (ar == NULL)
        return AL_ENOMEM;
    res = al_arena_alloc(ar, sizeof(*res));
    if (res == NULL)
        goto nomem;
    res->arena = ar;
    for (j = 0; j < c->nj; j++)
        if (c->wj[j].flags & (JF_EVICTED | JF_SHED))
            nd++;
    nd += c->decisions.len;
    /* A job started and un-started in this cycle has no decision at all. */
    res->decisions = al_arena_array(ar, nd + 1, sizeof(al_decision_t));
    res->reasons = c->reasons;
    res->queues =
        al_arena_array(ar, (size_t)c->nq + 1, sizeof(al_queue_share_t));
    res->reservations =
        al_arena_array(ar, (size_t)ps->nresv + 1, sizeof(al_reservation_t));
    res->nreservations = 0;
    if (!res->decisions || !res->reasons || !res->queues || !res->reservations)
        goto nomem;
    /* Evictions first, in job order, so a shell frees before it starts. */
    nd = 0;
    for (j = 0; j < c->nj; j++) {
        const wjob_t *w = &c->wj[j];
        al_decision_t *d;

        if (!(w->flags & (JF_EVICTED | JF_SHED)) || (w->flags & JF_STARTED))
            continue;
        d = &res->decisions[nd++];
        d->job = j;
        d->why = (al_evict_why_t)w->why;
        d->for_job = w->for_job;
        if (w->flags & JF_EVICTED) {
            d->kind = AL_DEC_EVICT;
            d->ntasks = c->s->jobs[j].ntasks;
            d->requeue = c->s->jobs[j].preemptible;
        } else {
            d->kind = AL_DEC_SHRINK;
            d->ntasks = c->s->jobs[j].ntasks - w->ntasks;
        }
        c->stats.evicted++;
    }
    for (i = 0; i < c->decisions.len; i++) {
        al_decision_t *d;
        const wjob_t *w = &c->wj[starts[i].job];

        if (w->flags & JF_EVICTED) {
            c->stats.started--;
            c->stats.placements -= w->ntasks;
            continue;
        }
        d = &res->decisions[nd++];
        *d = starts[i];
        d->tasks =
            al_arena_array(ar, (size_t)d->ntasks + 1, sizeof(al_placement_t));
        if (d->tasks == NULL)
            goto nomem;
        memcpy(d->tasks, (const al_placement_t *)c->tasks.data + w->place_off,
               (size_t)d->ntasks * sizeof(al_placement_t));
    }
    res->ndecisions = (int)nd;
    for (j = 0; j < c->nj; j++) {
        al_reason_t *rs = &res->reasons[j];

        if ((c->wj[j].flags & JF_STARTED) && !(c->wj[j].flags & JF_EVICTED)) {
            memset(rs, 0, sizeof(*rs));
            rs->queue = NIL;
            rs->job = NIL;
        } else if (rs->code == AL_WHY_BEHIND_RESERVATION && rs->job >= 0 &&
                   (c->wj[rs->job].flags & JF_STARTED)) {
            /* The reservation it stood behind was met by reclaim later in
             * the cycle: what it waits for now is room. */
            rs->code = AL_WHY_CAPACITY;
            rs->job = NIL;
            rs->amount = 0;
            rs->time = 0;
        }
    }
    res->njobs = c->nj;
    for (q = 0; q < c->nq; q++) {
        for (r = 0; r < AL_NRES; r++) {
            res->queues[q].fair[r] = c->wq[q].fair[r];
            res->queues[q].allocated[r] = c->wq[q].alloc[r];
            res->queues[q].demand[r] = c->wq[q].demand[r];
        }
        res->queues[q].nonpreempt_gpu = c->wq[q].nonpre_gpu;
    }
    res->nqueues = c->nq;
    for (r = 0; r < ps->nresv; r++) {
        al_reservation_t *rv = &res->reservations[res->nreservations];

        /* A job that reclaim started later in the cycle needs none. */
        if (c->wj[ps->resv[r].r.job].flags & JF_STARTED)
            continue;
        res->nreservations++;
        *rv = ps->resv[r].r;
        rv->nodes = al_arena_array(ar, (size_t)rv->nnodes + 1, sizeof(int32_t));
        rv->tasks = al_arena_array(ar, (size_t)rv->nnodes + 1, sizeof(int32_t));
        if (rv->nodes == NULL || rv->tasks == NULL)
            goto nomem;
        memcpy(rv->nodes, ps->resv[r].r.nodes,
               (size_t)rv->nnodes * sizeof(int32_t));
        memcpy(rv->tasks, ps->resv[r].r.tasks,
               (size_t)rv->nnodes * sizeof(int32_t));
    }
    res->stats = c->stats;
    *out = res;
    c->out = NULL; /* the result owns its arena now */
    return 0;
nomem:
    return AL_ENOMEM;
}

/* ------------------------------------------------------------------ */
/* The cycle                                                          */

static int
run(al_ctx_t *c, al_result_t **out, char **cause)
{
    pass_t ps;
    int rc;

    memset(&ps, 0, sizeof(ps));
    ps.memo.version = -1;
    ps.lend_memo.version = -1;
    rc = al__place_init(c);
    if (rc == AL_EINVAL)
        set_cause(cause, "a node has more than %lld devices (%lld)",
                  AL_MAX_DEVICES, 0);
    if (rc == 0)
        rc = setup_queues(c, cause);
    if (rc == 0)
        rc = setup_jobs(c, cause);
    if (rc != 0)
        return rc;
    if (!c->cfg.ignore_queues)
        al__fairshare(c);
    rc = build_order(c, &ps);
    if (rc == 0)
        rc = allocate(c, &ps);
    if (rc == 0)
        rc = build_result(c, &ps, out);
    return rc;
}

/* Checks AL_PACK_FRAG's workload profile (see al_config_t.profile). */
static int
check_profile(const al_config_t *cfg, char **cause)
{
    int i;

    if (cfg->nprofile < 0 || (cfg->nprofile > 0 && cfg->profile == NULL)) {
        set_cause(cause,
                  "config: bad workload profile (%lld shapes, array %lld)",
                  cfg->nprofile, cfg->profile != NULL);
        return AL_EINVAL;
    }
    for (i = 0; i < cfg->nprofile; i++) {
        const al_shape_t *m = &cfg->profile[i];

        /* Both comparisons are false for NaN; the second for infinity. */
        if (!(m->weight >= 0 && m->weight <= DBL_MAX) || m->gpus < 0 ||
            m->gpu_milli < 0 || m->gpu_milli >= AL_GPU_MILLI ||
            m->cpu_milli < 0 || m->mem_bytes < 0) {
            set_cause(cause,
                      "config: workload profile shape %lld of %lld is bad", i,
                      cfg->nprofile);
            return AL_EINVAL;
        }
    }
    return 0;
}

int
al_sched_run(const al_snapshot_t *snap, al_result_t **out, char **cause)
{
    al_ctx_t c;
    al_result_t *res = NULL;
    int rc;

    if (snap == NULL || out == NULL || snap->nnodes < 0 || snap->nqueues < 0 ||
        snap->njobs < 0 || (snap->nnodes > 0 && snap->nodes == NULL) ||
        (snap->nqueues > 0 && snap->queues == NULL) ||
        (snap->njobs > 0 && snap->jobs == NULL)) {
        set_cause(cause, "snapshot is NULL or has bad counts (%lld, %lld)",
                  snap ? snap->nnodes : 0, snap ? snap->njobs : 0);
        return AL_EINVAL;
    }
    memset(&c, 0, sizeof(c));
    c.s = snap;
    if (snap->config != NULL)
        c.cfg = *snap->config;
    else
        al_config_default(&c.cfg);
    if (c.cfg.ntopo_levels < 0 || c.cfg.ntopo_levels > AL_MAX_TOPO_LEVELS ||
        c.cfg.reserve_depth < 0) {
        set_cause(cause,
                  "config: bad topology levels (%lld) or reserve depth "
                  "(%lld)",
                  c.cfg.ntopo_levels, c.cfg.reserve_depth);
        return AL_EINVAL;
    }
    if (check_profile(&c.cfg, cause) != 0)
        return AL_EINVAL;
    c.a = snap->allocator ? snap->allocator : &al_default_allocator;
    c.nn = snap->nnodes;
    c.nq = snap->nqueues;
    c.nj = snap->njobs;
    c.min_resv_start = INT64_MAX;
    c.undo.esz = sizeof(undo_t);
    c.decisions.esz = sizeof(al_decision_t);
    c.tasks.esz = sizeof(al_placement_t);
    c.tmp = al_arena_create(c.a);
    c.out = al_arena_create(c.a);
    if (c.tmp == NULL || c.out == NULL) {
        al_arena_destroy(c.tmp);
        al_arena_destroy(c.out);
        return AL_ENOMEM;
    }
    rc = run(&c, &res, cause);
    al__vec_free(&c, &c.undo);
    al__vec_free(&c, &c.decisions);
    al__vec_free(&c, &c.tasks);
    al_arena_destroy(c.tmp);
    al_arena_destroy(c.out); /* NULL once the result took it */
    if (rc == 0)
        *out = res;
    return rc;
}
