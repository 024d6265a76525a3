/*
 * order.c -- the order of things: sort keys, the order of need between
 * queues (a heap), and the order of candidates inside a queue.
 *
 * Owns: al__skey_sort (radix sort of skey_t), al__share_ratio, the queue
 * heap (al__heap_push, al__heap_pop, al__heap_fix), al__build_order,
 * al__job_rank (service levels), al__response_ratio.  Calls: only the
 * inline helpers of core_int.h.  Called by reclaim.c (share ratio),
 * reserve.c and dag.c (sort) and pass.c.
 */
#include <string.h>

#include "core_int.h"

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

/*
 * Sorts v[0..n) by (k[0], k[1], k[2], k[3], idx).  Small arrays get an
 * insertion sort; large ones an LSD radix sort over only the key bits that
 * differ between elements (a cycle's keys vary in a few dozen bits), which
 * moves each element a handful of times instead of log2(n) times.  Radix passes
 * are stable, so elements with equal keys keep their input order: callers
 * build their arrays in ascending idx, which makes idx the last key.  The
 * core may not call qsort: glibc's allocates behind the caller's allocator.
 */
int
al__skey_sort(al_cycle_t *c, skey_t *v, size_t n)
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
    for (w = 3; w >= 0; w--) {
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

/* ------------------------------------------------------------------ */
/* Queue order                                                        */

double
al__share_ratio(const al_cycle_t *c, int32_t q)
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
below_deserved(const al_cycle_t *c, int32_t q)
{
    return c->wq[q].alloc[AL_RES_GPU] <
           c->s->queues[q].quota[AL_RES_GPU].deserved;
}

/* Recomputes queue q's place in the order of need from its allocation;
 * called whenever that allocation changes in a way the order must see. */
static void
queue_rekey(al_cycle_t *c, int32_t q)
{
    c->wq[q].below = below_deserved(c, q);
    c->wq[q].ratio = al__share_ratio(c, q);
}

/* Does queue a come before queue b (more in need)?  Uses the keys
 * queue_rekey() cached: comparing is the inner loop of the heap. */
static bool
queue_before(const al_cycle_t *c, int32_t a, int32_t b)
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

static void
heap_swap(al_cycle_t *c, qheap_t *hp, int32_t i, int32_t k)
{
    int32_t t = hp->h[i];

    hp->h[i] = hp->h[k];
    hp->h[k] = t;
    c->wq[hp->h[i]].heap_pos = i;
    c->wq[hp->h[k]].heap_pos = k;
}

static void
heap_down(al_cycle_t *c, qheap_t *hp, int32_t i)
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
heap_up(al_cycle_t *c, qheap_t *hp, int32_t i)
{
    while (i > 0) {
        int32_t p = (i - 1) / 2;

        if (!queue_before(c, hp->h[i], hp->h[p]))
            return;
        heap_swap(c, hp, i, p);
        i = p;
    }
}

void
al__heap_push(al_cycle_t *c, qheap_t *hp, int32_t q)
{
    queue_rekey(c, q);
    hp->h[hp->n] = q;
    c->wq[q].heap_pos = hp->n++;
    heap_up(c, hp, hp->n - 1);
}

void
al__heap_pop(al_cycle_t *c, qheap_t *hp)
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
void
al__heap_fix(al_cycle_t *c, qheap_t *hp, int32_t q)
{
    int32_t i = c->wq[q].heap_pos;

    queue_rekey(c, q);
    if (i == NIL)
        return;
    heap_up(c, hp, i);
    heap_down(c, hp, c->wq[q].heap_pos);
}

/* ------------------------------------------------------------------ */
/* Job order                                                          */

double
al_service(int64_t seconds, int64_t ntasks, int64_t task_milli)
{
    if (seconds <= 0 || ntasks <= 0)
        return 0;
    if (task_milli <= 0)
        task_milli = AL_GPU_MILLI;
    return (double)seconds * (double)ntasks * (double)task_milli / AL_GPU_MILLI;
}

/* Attained service: what the job had before, plus its current run at the
 * size it holds now.  Service levels count the thresholds it reached. */
void
al__job_rank(al_cycle_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    double att = jb->attained > 0 && jb->attained < 1e300 ? jb->attained : 0;
    int32_t level = 0;

    if (jb->state == AL_JOB_RUNNING && c->s->now > jb->start_time)
        att += al_service(c->s->now - jb->start_time, jb->ntasks,
                          c->wj[j].task_gpu);
    while (level < AL_MAX_SERVICE_LEVELS && c->cfg.service_levels[level] > 0 &&
           att >= (double)c->cfg.service_levels[level])
        level++;
    c->wj[j].level = level;
    c->wj[j].rank = (int64_t)jb->priority * (AL_MAX_SERVICE_LEVELS + 1) +
                    (AL_MAX_SERVICE_LEVELS - level);
}

/* v clamped to +-2^(bits-1) and moved up by that: `bits` bits that sort
 * as v does (a time in 44 bits spans some 270,000 years). */
static uint64_t
biased(int64_t v, int bits)
{
    const int64_t half = (int64_t)1 << (bits - 1);

    if (v < -half)
        v = -half;
    if (v > half - 1)
        v = half - 1;
    return (uint64_t)(v + half);
}

/* The expected runtime in whole minutes as an order key (16 bits), or 0
 * when the order ignores it. */
static uint64_t
runtime_minutes(const al_cycle_t *c, const al_job_t *jb)
{
    int64_t m;

    if (!c->cfg.short_first)
        return 0;
    m = job_runtime(c, jb) / 60;
    return m < 0 ? 0 : m > 0xFFFF ? 0xFFFF : (uint64_t)m;
}

/* A job's priority adjustment as 34 bits that sort higher-first
 * (clamped at +-2^33). */
static uint64_t
adjust34(int64_t v)
{
    return (((uint64_t)1 << 34) - 1) - biased(v, 34);
}

/* Builds the candidates' order: per queue (or one global list), priority
 * class, the job's priority adjustment, critical path, expected runtime
 * (short_first), service level (least attained service first), waiting time,
 * submit time, id. */
int
al__build_order(al_cycle_t *c, skey_t **orderp, size_t *norder)
{
    skey_t *order;
    int32_t j;
    size_t n = 0;
    int rc;

    order = al_arena_array_raw(c->tmp, (size_t)c->nj + 1, sizeof(skey_t));
    if (order == NULL)
        return AL_ENOMEM;
    *orderp = order;
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];
        skey_t *k;
        uint64_t q, prio, crit, level;

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
        level = (uint64_t)c->wj[j].level & 7;
        k = &order[n++];
        k->k[0] = q << 16 | prio;
        /* The job's own adjustment (higher first), then the critical
         * path. */
        k->k[1] = adjust34(jb->prio_adjust) << 28 | crit;
        /* Expected runtime in minutes (short_first), then service level
         * (least attained service first), then waiting since (earlier
         * first: aging), then submit time. */
        k->k[2] =
            runtime_minutes(c, jb) << 47 | level << 44 |
            biased(jb->eligible_time > 0 ? jb->eligible_time : jb->submit_time,
                   44);
        /* Submit time as an offset from the waiting time: the same
         * order for ties, and all zero (no sort pass) in the usual case
         * where a job waits since it was submitted. */
        k->k[3] =
            bias(jb->submit_time -
                 (jb->eligible_time > 0 ? jb->eligible_time : jb->submit_time));
        k->idx = j;
    }
    *norder = n;
    rc = al__skey_sort(c, order, n);
    if (rc != 0)
        return rc;
    /* Slices per queue. */
    if (!c->cfg.ignore_queues) {
        size_t i;

        for (i = 0; i < n; i++) {
            int32_t q = c->s->jobs[order[i].idx].queue;

            if (i == 0 || c->s->jobs[order[i - 1].idx].queue != q)
                c->wq[q].job_begin = (int32_t)i;
            c->wq[q].job_end = (int32_t)i + 1;
            c->wq[q].next_job = c->wq[q].job_begin;
        }
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
int64_t
al__response_ratio(const al_cycle_t *c, const al_job_t *jb, int64_t waited)
{
    int64_t rt = job_runtime(c, jb);
    double r;

    if (rt < c->cfg.starve_after)
        rt = c->cfg.starve_after;
    if (rt < 1)
        rt = 1;
    r = ((double)waited + (double)rt) * 1000.0 / (double)rt;
    return r > 4e18 ? (int64_t)4e18 : (int64_t)r;
}
