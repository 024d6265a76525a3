/*
 * test_invariants.c -- properties that must hold for every snapshot, checked
 * over thousands of random ones, and allocation-failure injection.
 *
 * The generator builds valid snapshots from a seeded PRNG (same seed, same
 * snapshots): random nodes with GPUs, NVLink/NUMA domains, racks, pools and
 * models; random queue trees with quotas; validly placed running jobs that
 * respect every capacity, limit and deserved quota; random pending work.
 * The checker is written from the contract in core.h and docs/scheduling.md,
 * sharing no code with the core: it rebuilds the cluster after the decisions
 * and verifies it.  Each snapshot runs for a few cycles, applying decisions in
 * between as a shell would.
 *
 * AL_INVARIANT_ITERS sets the number of random snapshots (default 10000;
 * 3000 under ASan; 300 when AL_TEST_QUICK is set, as CI does under
 * valgrind).
 * AL_INVARIANT_SEED changes the seed.  Failures are tallied by kind, each
 * with a snapshot to replay: AL_INVARIANT_FIRST=<iteration> starts there,
 * AL_INVARIANT_DUMP=1 prints failing snapshots and results, and
 * AL_INVARIANT_MINIMIZE=1 shrinks each failing snapshot to a small case
 * (with AL_INVARIANT_EMIT=1 also printed as builder calls for a test).
 * AL_INVARIANT_LAX_MODEL=1 skips the per-model quota checks.
 * AL_INVARIANT_CHURN=1 shows one minimized case
 * where the next cycle, at the same time and with nothing new, stops a job
 * the previous cycle started; churn is counted, not failed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "snap.h"
#include "test.h"

#define GIB SNAP_GIB
#define CYCLES 4
#define NMODELS 2

static const char *const models[NMODELS] = { "A100", "H100" };

/* ------------------------------------------------------------------ */
/* PRNG: splitmix64, deterministic on every platform                  */

typedef struct rng {
    uint64_t s;
} rng_t;

static uint64_t
rnext(rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static int64_t
rrange(rng_t *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnext(r) % (uint64_t)(hi - lo + 1));
}

static bool
rpct(rng_t *r, int percent)
{
    return (int)(rnext(r) % 100) < percent;
}

static int64_t
rpick(rng_t *r, const int64_t *v, int n)
{
    return v[rnext(r) % (uint64_t)n];
}

static int
env_int(const char *name, int def)
{
    const char *v = getenv(name);

    return v != NULL && *v != '\0' ? atoi(v) : def;
}

/* ------------------------------------------------------------------ */
/* Helpers shared by generator and checker (not by the core)          */

static int64_t
task_gpu(const al_request_t *q)
{
    return q->gpus > 0 ? (int64_t)q->gpus * AL_GPU_MILLI : q->gpu_milli;
}

/*
 * Milli-GPUs one placed task holds: whole devices, or the share of the
 * device its placement records (which may exceed the requested milli when
 * the core sizes a fraction by its memory).
 */
static int64_t
placed_gpu(const al_job_t *j, const al_placement_t *p)
{
    if (j->req.gpus > 0)
        return (int64_t)j->req.gpus * AL_GPU_MILLI;
    return p->devices != 0 ? p->gpu_milli : 0;
}

/* All the GPU a running job holds, as its queue is charged. */
static int64_t
job_gpu(const al_job_t *j)
{
    int64_t g = 0;
    int t;

    for (t = 0; t < j->ntasks; t++)
        g += placed_gpu(j, &j->placement[t]);
    return g;
}

static int
model_index(const char *m)
{
    int i;

    for (i = 0; m != NULL && i < NMODELS; i++)
        if (strcmp(m, models[i]) == 0)
            return i;
    return -1;
}

static bool
str_eq(const char *a, const char *b)
{
    if (a == NULL || *a == '\0')
        return b == NULL || *b == '\0';
    return b != NULL && strcmp(a, b) == 0;
}

/* Whether a task of job j may go on node n, as far as labels go. */
static bool
node_matches(const al_node_t *n, const al_request_t *q)
{
    if (q->pool != NULL && !str_eq(q->pool, n->pool))
        return false;
    if (q->gpu_model != NULL &&
        (n->gpu_model == NULL || strcmp(q->gpu_model, n->gpu_model) != 0))
        return false;
    return true;
}

/* Whether nodes a and b share the topology domain at `level`. */
static bool
same_domain(const al_node_t *a, const al_node_t *b, int level)
{
    int l;

    for (l = 0; l <= level; l++)
        if (a->topo[l] == NULL || b->topo[l] == NULL ||
            strcmp(a->topo[l], b->topo[l]) != 0)
            return false;
    return true;
}

static int
popcount(uint64_t m)
{
    int n = 0;

    for (; m != 0; m &= m - 1)
        n++;
    return n;
}

static uint64_t
dev_mask(int ndev)
{
    return ndev >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << ndev) - 1;
}

/* ------------------------------------------------------------------ */
/* Cluster accounting (used by the generator to place running jobs    */
/* and by the checker to rebuild the state after the decisions)       */

typedef struct usage {
    int nn, nq;
    int *dev_off;                /* per node: first device slot */
    int *owners;                 /* per device: whole-GPU owners */
    int64_t *milli;              /* per device: fractional milli-GPUs */
    int64_t *gmem;               /* per device: fractional memory */
    int *nfrac;                  /* per device: fractional tasks */
    int64_t *cpu, *mem;          /* per node */
    int64_t (*q)[AL_NRES];       /* per queue, subtree usage */
    int64_t *nonpre;             /* per queue, non-preemptible GPU */
    int64_t (*model)[NMODELS];   /* per queue, GPU by model */
    int64_t (*npmodel)[NMODELS]; /* per queue, non-preemptible GPU by model */
} usage_t;

static void
usage_init(usage_t *u, const al_snapshot_t *s)
{
    int i, nd = 0;

    memset(u, 0, sizeof(*u));
    u->nn = s->nnodes;
    u->nq = s->nqueues;
    u->dev_off = calloc((size_t)s->nnodes + 1, sizeof(int));
    for (i = 0; i < s->nnodes; i++) {
        u->dev_off[i] = nd;
        nd += s->nodes[i].ndevices;
    }
    u->dev_off[s->nnodes] = nd;
    u->owners = calloc((size_t)nd + 1, sizeof(int));
    u->milli = calloc((size_t)nd + 1, sizeof(int64_t));
    u->gmem = calloc((size_t)nd + 1, sizeof(int64_t));
    u->nfrac = calloc((size_t)nd + 1, sizeof(int));
    u->cpu = calloc((size_t)s->nnodes + 1, sizeof(int64_t));
    u->mem = calloc((size_t)s->nnodes + 1, sizeof(int64_t));
    u->q = calloc((size_t)s->nqueues + 1, sizeof(*u->q));
    u->nonpre = calloc((size_t)s->nqueues + 1, sizeof(int64_t));
    u->model = calloc((size_t)s->nqueues + 1, sizeof(*u->model));
    u->npmodel = calloc((size_t)s->nqueues + 1, sizeof(*u->npmodel));
    if (u->dev_off == NULL || u->owners == NULL || u->milli == NULL ||
        u->gmem == NULL || u->nfrac == NULL || u->cpu == NULL ||
        u->mem == NULL || u->q == NULL || u->nonpre == NULL ||
        u->model == NULL || u->npmodel == NULL)
        abort();
}

static void
usage_fini(usage_t *u)
{
    free(u->dev_off);
    free(u->owners);
    free(u->milli);
    free(u->gmem);
    free(u->nfrac);
    free(u->cpu);
    free(u->mem);
    free(u->q);
    free(u->nonpre);
    free(u->model);
    free(u->npmodel);
}

/* Charges (sign 1) or releases (sign -1) ntasks placements of job j. */
static void
usage_add(usage_t *u, const al_snapshot_t *s, const al_job_t *j,
          const al_placement_t *p, int ntasks, int sign)
{
    int t, d, q;

    for (t = 0; t < ntasks; t++) {
        const al_node_t *n = &s->nodes[p[t].node];
        int off = u->dev_off[p[t].node];
        int m = model_index(n->gpu_model);
        int64_t g = placed_gpu(j, &p[t]);

        for (d = 0; d < n->ndevices; d++) {
            if (!(p[t].devices >> d & 1))
                continue;
            if (j->req.gpus > 0) {
                u->owners[off + d] += sign;
            } else {
                u->milli[off + d] += sign * (int64_t)p[t].gpu_milli;
                u->gmem[off + d] += sign * p[t].gpu_mem;
                u->nfrac[off + d] += sign;
            }
        }
        u->cpu[p[t].node] += sign * j->req.cpu_milli;
        u->mem[p[t].node] += sign * j->req.mem_bytes;
        for (q = j->queue; q >= 0; q = s->queues[q].parent) {
            u->q[q][AL_RES_GPU] += sign * g;
            u->q[q][AL_RES_CPU] += sign * j->req.cpu_milli;
            u->q[q][AL_RES_MEM] += sign * j->req.mem_bytes;
            if (!j->preemptible)
                u->nonpre[q] += sign * g;
            if (m >= 0) {
                u->model[q][m] += sign * g;
                if (!j->preemptible)
                    u->npmodel[q][m] += sign * g;
            }
        }
    }
}

/* The model quota of queue q for model m, or NULL. */
static const al_model_quota_t *
model_quota(const al_queue_t *q, int m)
{
    int i;

    for (i = 0; i < q->nmodel_quotas; i++)
        if (strcmp(q->model_quotas[i].model, models[m]) == 0)
            return &q->model_quotas[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Generator                                                          */

/* Finds room for one task of job j under usage u, or returns false. */
static bool
gen_find_task(const al_snapshot_t *s, const usage_t *u, const al_job_t *j,
              rng_t *r, int same_as, al_placement_t *out)
{
    int k, start = (int)rrange(r, 0, s->nnodes - 1);

    for (k = 0; k < s->nnodes; k++) {
        int n = (start + k) % s->nnodes, off = u->dev_off[n], d;
        const al_node_t *nd = &s->nodes[n];

        if (nd->state == AL_NODE_DOWN || !node_matches(nd, &j->req))
            continue;
        if (same_as >= 0 && j->topo_mode == AL_TOPO_REQUIRED &&
            !same_domain(nd, &s->nodes[same_as], j->topo_level))
            continue;
        if (u->cpu[n] + j->req.cpu_milli > nd->cpu_milli ||
            u->mem[n] + j->req.mem_bytes > nd->mem_bytes)
            continue;
        memset(out, 0, sizeof(*out));
        out->node = n;
        if (j->req.gpus > 0) {
            int got = 0;

            for (d = 0; d < nd->ndevices && got < j->req.gpus; d++) {
                if (u->owners[off + d] == 0 && u->nfrac[off + d] == 0) {
                    out->devices |= (uint64_t)1 << d;
                    got++;
                }
            }
            if (got < j->req.gpus)
                continue;
        } else if (j->req.gpu_milli > 0 || j->req.gpu_mem > 0) {
            for (d = 0; d < nd->ndevices; d++)
                if (u->owners[off + d] == 0 &&
                    u->milli[off + d] + j->req.gpu_milli <= AL_GPU_MILLI &&
                    u->gmem[off + d] + j->req.gpu_mem <=
                        nd->devices[d].mem_bytes)
                    break;
            if (d == nd->ndevices)
                continue;
            out->devices = (uint64_t)1 << d;
            out->gpu_milli = j->req.gpu_milli;
            out->gpu_mem = j->req.gpu_mem;
        }
        return true;
    }
    return false;
}

/* Whether adding ntasks of job j keeps every quota of the snapshot. */
static bool
gen_quota_ok(const al_snapshot_t *s, const usage_t *u, const al_job_t *j,
             int ntasks, const al_placement_t *p)
{
    int64_t add[AL_NRES], madd[NMODELS] = { 0, 0 };
    int q, r, t, m;

    add[AL_RES_GPU] = task_gpu(&j->req) * ntasks;
    add[AL_RES_CPU] = j->req.cpu_milli * ntasks;
    add[AL_RES_MEM] = j->req.mem_bytes * ntasks;
    for (t = 0; t < ntasks; t++) {
        m = model_index(s->nodes[p[t].node].gpu_model);
        if (m >= 0)
            madd[m] += task_gpu(&j->req);
    }
    for (q = j->queue; q >= 0; q = s->queues[q].parent) {
        const al_queue_t *qq = &s->queues[q];

        for (r = 0; r < AL_NRES; r++)
            if (qq->quota[r].limit != AL_UNLIMITED &&
                u->q[q][r] + add[r] > qq->quota[r].limit)
                return false;
        if (!j->preemptible &&
            u->nonpre[q] + add[AL_RES_GPU] > qq->quota[AL_RES_GPU].deserved)
            return false;
        for (m = 0; m < NMODELS; m++) {
            const al_model_quota_t *mq = model_quota(qq, m);

            if (mq == NULL || madd[m] == 0)
                continue;
            if (mq->limit != AL_UNLIMITED &&
                u->model[q][m] + madd[m] > mq->limit)
                return false;
            if (!j->preemptible && u->npmodel[q][m] + madd[m] > mq->deserved)
                return false;
        }
    }
    return true;
}

static void
gen_request(rng_t *r, al_job_t *j, int *ntasks)
{
    static const int64_t gpus[] = { 1, 1, 1, 2, 2, 4, 8 };
    static const int64_t fracs[] = { 100, 250, 500, 500, 750 };
    static const int64_t cpus[] = { 0, 0, 1000, 4000, 16000 };
    static const int64_t mems[] = { 0, 4 * GIB, 32 * GIB, 128 * GIB };
    int kind = (int)rrange(r, 0, 99);

    memset(&j->req, 0, sizeof(j->req));
    if (kind < 65) {
        j->req.gpus = (int32_t)rpick(r, gpus, 7);
        *ntasks = rpct(r, 70) ? 1 : (int)rrange(r, 2, 4);
    } else if (kind < 92) {
        j->req.gpu_milli = (int32_t)rpick(r, fracs, 5);
        if (rpct(r, 30))
            j->req.gpu_mem = rrange(r, 1, 4) * 8 * GIB;
        if (j->req.gpu_mem > 0 && rpct(r, 30))
            j->req.gpu_milli = 0; /* a fraction by memory alone */
        *ntasks = rpct(r, 85) ? 1 : 2;
    } else {
        *ntasks = (int)rrange(r, 1, 2); /* CPU only */
        j->req.cpu_milli = 1000;
    }
    if (j->req.cpu_milli == 0)
        j->req.cpu_milli = rpick(r, cpus, 5);
    j->req.mem_bytes = rpick(r, mems, 4);
}

/* Strings of the generator live in static tables: the builder copies. */
static void
gen_nodes(snap_t *b, rng_t *r, bool large)
{
    static const int64_t ngpu[] = { 0, 2, 4, 4, 8, 8, 8 };
    static const int64_t dmem[] = { 16, 40, 80, 80 };
    static const int64_t cpus[] = { 32000, 64000, 128000 };
    static const int64_t mems[] = { 128, 256, 1024 };
    static const char *const racks[] = { "r0", "r1", "r2", "r3" };
    static const char *const blocks[] = { "b0", "b1" };
    int nn = (int)rrange(r, 1, large ? 24 : 10), i, d;

    for (i = 0; i < nn; i++) {
        char name[32];
        int nd = (int)rpick(r, ngpu, 7), pattern = (int)rrange(r, 0, 2);
        int64_t mem = rpick(r, dmem, 4) * GIB;
        int rack = (int)rrange(r, 0, 3), n;
        al_node_t *node;

        snprintf(name, sizeof(name), "n%d", i);
        n = snap_node(b, name, nd);
        node = snap_node_ref(b, n);
        node->cpu_milli = rpick(r, cpus, 3);
        node->mem_bytes = rpick(r, mems, 3) * GIB;
        if (rpct(r, 10))
            node->state = AL_NODE_DRAINING;
        else if (rpct(r, 6))
            node->state = AL_NODE_DOWN;
        for (d = 0; d < nd; d++) {
            al_device_t *dev = snap_dev(b, n, d);

            dev->mem_bytes = mem;
            dev->numa = (int16_t)(d < nd / 2 ? 0 : 1);
            dev->nvlink = (int16_t)(pattern == 0   ? -1
                                    : pattern == 1 ? 0
                                                   : (d < nd / 2 ? 0 : 1));
        }
        if (rpct(r, 90)) {
            snap_node_topo(b, n, 0, blocks[rack / 2]);
            snap_node_topo(b, n, 1, racks[rack]);
        }
        if (rpct(r, 15))
            snap_node_pool(b, n, "p1");
        if (rpct(r, 85))
            snap_node_model(b, n, models[rrange(r, 0, NMODELS - 1)]);
    }
}

/* Returns the number of leaves, stored in leaves[]. */
static int
gen_queues(snap_t *b, rng_t *r, int *leaves)
{
    static const int64_t deserved[] = { 0, 0, 1000, 2000, 4000, 8000 };
    static const int64_t extra[] = { 0, 2000, 4000, 16000 };
    int ntop = (int)rrange(r, 1, 3), i, c, nleaves = 0;

    for (i = 0; i < ntop; i++) {
        int nchild = (int)rrange(r, 0, 3), top, q;
        char name[32];

        snprintf(name, sizeof(name), "d%d", i);
        top = snap_queue(b, name, -1, rpick(r, deserved, 6),
                         (double)rrange(r, 0, 3), AL_UNLIMITED);
        for (c = 0; c <= nchild; c++) {
            al_queue_t *qq;

            if (c == nchild && nchild > 0)
                break;
            if (nchild == 0) {
                q = top;
            } else {
                snprintf(name, sizeof(name), "d%d.p%d", i, c);
                q = snap_queue(b, name, top, rpick(r, deserved, 6),
                               (double)rrange(r, 0, 3), AL_UNLIMITED);
            }
            leaves[nleaves++] = q;
            qq = snap_queue_ref(b, q);
            if (rpct(r, 30))
                qq->quota[AL_RES_GPU].limit =
                    qq->quota[AL_RES_GPU].deserved + rpick(r, extra, 4);
            if (rpct(r, 15))
                qq->quota[AL_RES_CPU].limit = rrange(r, 1, 8) * 8000;
            if (rpct(r, 10))
                qq->quota[AL_RES_MEM].limit = rrange(r, 1, 4) * 64 * GIB;
            if (rpct(r, 20))
                qq->quota[AL_RES_GPU].weight = 0.5;
            qq->priority = rpct(r, 20) ? 1 : 0;
            if (rpct(r, 30))
                qq->usage = (double)rrange(r, 0, 100000000);
            if (rpct(r, 10))
                snap_queue_model_quota(b, q, "H100", rrange(r, 0, 2) * 1000,
                                       rpct(r, 50) ? AL_UNLIMITED
                                                   : rrange(r, 2, 4) * 1000);
        }
        if (rpct(r, 20) && nchild > 0)
            snap_queue_ref(b, top)->quota[AL_RES_GPU].limit =
                rrange(r, 1, 8) * 2000;
    }
    return nleaves;
}

/* Fills the time, priority and topology fields of a job. */
static void
gen_job_fields(rng_t *r, al_job_t *j, int64_t now, int ntopo)
{
    int kind = (int)rrange(r, 0, 99);

    if (kind < 70) {
        j->priority = AL_PRIO_TRAIN;
        j->preemptible = !rpct(r, 5);
    } else if (kind < 90) {
        j->priority = AL_PRIO_BUILD;
        j->preemptible = false;
    } else {
        j->priority = AL_PRIO_INFERENCE;
        j->preemptible = false;
    }
    j->submit_time = now - rrange(r, 0, 20000);
    j->eligible_time = rpct(r, 20) ? j->submit_time + rrange(r, 0, 100) : 0;
    j->time_limit = rpct(r, 50) ? rrange(r, 60, 20000) : 0;
    j->estimate = rpct(r, 30) ? rrange(r, 60, 20000) : 0;
    j->min_runtime = rpct(r, 30) ? rrange(r, 0, 3600) : 0;
    if (ntopo > 0 && rpct(r, 15)) {
        j->topo_level = (int)rrange(r, 0, ntopo - 1);
        j->topo_mode = rpct(r, 50) ? AL_TOPO_REQUIRED : AL_TOPO_PREFERRED;
    }
}

/* Builds random snapshot number `iter` into a fresh builder. */
static snap_t *
gen_snapshot(uint64_t seed, int iter)
{
    static const char *const levels[] = { "block", "rack" };
    static const int64_t depth[] = { 0, 1, 1, 2 };
    rng_t r = { seed * 0x100000001B3ull + (uint64_t)iter };
    snap_t *b = snap_create();
    al_config_t *c = snap_config(b);
    int leaves[16], nleaves, nrun, npend, i, t;
    int64_t now = 100000;
    bool large;
    usage_t u;
    al_snapshot_t *s;

    c->pack = rpct(&r, 80) ? AL_PACK_BIN : AL_PACK_SPREAD;
    c->usage_weight = rpct(&r, 50) ? 0 : 1;
    c->reserve_depth = (int)rpick(&r, depth, 4);
    c->default_runtime = rrange(&r, 600, 7200);
    c->lend_reserved = rpct(&r, 40);
    c->reclaim = rpct(&r, 85);
    c->preempt = rpct(&r, 85);
    c->borrow = rpct(&r, 90);
    c->strict_order = rpct(&r, 5);
    c->ignore_queues = rpct(&r, 5);
    snap_topo_levels(b, 2, levels);
    snap_set_now(b, now);

    /* One snapshot in five is larger: more nodes and more work. */
    large = rpct(&r, 20);
    gen_nodes(b, &r, large);
    nleaves = gen_queues(b, &r, leaves);

    /* Running jobs, placed validly. */
    s = snap_get(b);
    usage_init(&u, s);
    nrun = (int)rrange(&r, 0, 4 * s->nnodes);
    for (i = 0; i < nrun; i++) {
        int nt, j, q = leaves[rrange(&r, 0, nleaves - 1)];
        al_placement_t p[8];
        al_job_t *jj;

        j = snap_job(b, q, 1, 0);
        jj = snap_job_ref(b, j);
        gen_request(&r, jj, &nt);
        /* The generator places running fractions by their milli share. */
        if (jj->req.gpus == 0 && jj->req.gpu_milli == 0 && jj->req.gpu_mem > 0)
            jj->req.gpu_milli = 500;
        gen_job_fields(&r, jj, now, 2);
        jj->min_tasks = nt;
        jj->max_tasks = rpct(&r, 15) ? nt + (int)rrange(&r, 1, 3) : nt;
        if (jj->max_tasks > nt && rpct(&r, 50))
            nt = (int)rrange(&r, nt, jj->max_tasks);
        jj->start_time = now - rrange(&r, 0, 20000);
        jj->checkpoint_time =
            rpct(&r, 20) ? jj->start_time + rrange(&r, 0, 1000) : 0;
        if (jj->submit_time > jj->start_time)
            jj->submit_time = jj->start_time - rrange(&r, 0, 100);
        s = snap_get(b);
        /* Find room task by task (charging as we go so that tasks do not
         * collide), then check the quotas with the whole job. */
        for (t = 0; t < nt; t++) {
            if (!gen_find_task(s, &u, &s->jobs[j], &r, t > 0 ? p[0].node : -1,
                               &p[t]))
                break;
            usage_add(&u, s, &s->jobs[j], &p[t], 1, 1);
        }
        usage_add(&u, s, &s->jobs[j], p, t, -1);
        if (t < nt || !gen_quota_ok(s, &u, &s->jobs[j], nt, p)) {
            /* No room: it waits as pending work instead. */
            jj->start_time = 0;
            jj->checkpoint_time = 0;
            continue;
        }
        usage_add(&u, s, &s->jobs[j], p, nt, 1);
        for (t = 0; t < nt; t++) {
            if (jj->req.gpus > 0 || jj->req.gpu_milli == 0)
                snap_place(b, j, jj->start_time, p[t].node, p[t].devices);
            else
                snap_place_frac(b, j, jj->start_time, p[t].node,
                                __builtin_ctzll(p[t].devices), p[t].gpu_milli,
                                p[t].gpu_mem);
        }
        snap_job_ref(b, j)->lent =
            snap_job_ref(b, j)->preemptible && rpct(&r, 5);
    }
    usage_fini(&u);

    /* Pending work. */
    npend = (int)rrange(&r, 0, large ? 60 : 25);
    for (i = 0; i < npend; i++) {
        int nt, j, q = leaves[rrange(&r, 0, nleaves - 1)];
        al_job_t *jj;

        j = snap_job(b, q, 1, 0);
        jj = snap_job_ref(b, j);
        gen_request(&r, jj, &nt);
        gen_job_fields(&r, jj, now, 2);
        jj->min_tasks = nt;
        jj->max_tasks = rpct(&r, 15) ? nt + (int)rrange(&r, 1, 3) : nt;
        if (rpct(&r, 8))
            jj->state = AL_JOB_HELD;
        if (rpct(&r, 10))
            snap_job_pool(b, j, "p1");
        if (rpct(&r, 10))
            snap_job_model(b, j, models[rrange(&r, 0, NMODELS - 1)]);
        if (j > 0 && rpct(&r, 25)) {
            int nd = (int)rrange(&r, 1, 2), k;

            /* Edges point to earlier jobs only: no cycles. */
            for (k = 0; k < nd; k++)
                snap_job_dep(b, j, (int)rrange(&r, 0, j - 1));
            jj = snap_job_ref(b, j);
            jj->dep_state = rpct(&r, 60)   ? AL_DEPS_WAITING
                            : rpct(&r, 70) ? AL_DEPS_SATISFIED
                                           : AL_DEPS_NEVER;
        }
    }
    /* One snapshot in six places by fragmentation, every other one of those
     * against a profile the caller gives.  Without draws: the random stream,
     * and so every other snapshot, stays as it was. */
    if (iter % 6 == 5) {
        static const al_shape_t profile[] = {
            { .gpus = 1, .cpu_milli = 4000, .weight = 3 },
            { .gpu_milli = 500, .cpu_milli = 2000, .weight = 2 },
            { .gpus = 4, .mem_bytes = 64 * SNAP_GIB, .weight = 1 },
            { .cpu_milli = 8000, .weight = 1 },
            { .gpu_milli = 250, .weight = 0 },
        };

        c->pack = AL_PACK_FRAG;
        if (iter % 12 == 11) {
            c->nprofile = (int)(sizeof(profile) / sizeof(profile[0]));
            c->profile = profile;
        }
    }
    snap_get(b);
    return b;
}

/* ------------------------------------------------------------------ */
/* The independent checker                                            */

typedef struct chk {
    char msg[512];
    int line; /* of the CHECK that failed */
    bool failed;
} chk_t;

#define CHECK(c, cond, ...)                                                    \
    do {                                                                       \
        if (!(cond)) {                                                         \
            int al__n =                                                        \
                snprintf((c)->msg, sizeof((c)->msg), "line %d: ", __LINE__);   \
            snprintf((c)->msg + al__n, sizeof((c)->msg) - (size_t)al__n,       \
                     __VA_ARGS__);                                             \
            (c)->failed = true;                                                \
            (c)->line = __LINE__;                                              \
            goto out;                                                          \
        }                                                                      \
    } while (0)

static bool
is_ancestor_or_self(const al_snapshot_t *s, int anc, int q)
{
    for (; q >= 0; q = s->queues[q].parent)
        if (q == anc)
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* An independent placer, to check "not enough room" claims           */

/* Node-side free capacity: a scratch copy of a usage_t's node arrays. */
typedef struct room {
    int nd;
    int *owners, *nfrac;
    int64_t *milli, *gmem, *cpu, *mem;
} room_t;

static void
room_init(room_t *m, const usage_t *u)
{
    size_t nd = (size_t)u->dev_off[u->nn] + 1, nn = (size_t)u->nn + 1;

    m->nd = u->dev_off[u->nn];
    m->owners = malloc(nd * sizeof(int));
    m->nfrac = malloc(nd * sizeof(int));
    m->milli = malloc(nd * sizeof(int64_t));
    m->gmem = malloc(nd * sizeof(int64_t));
    m->cpu = malloc(nn * sizeof(int64_t));
    m->mem = malloc(nn * sizeof(int64_t));
    if (m->owners == NULL || m->nfrac == NULL || m->milli == NULL ||
        m->gmem == NULL || m->cpu == NULL || m->mem == NULL)
        abort();
    memcpy(m->owners, u->owners, nd * sizeof(int));
    memcpy(m->nfrac, u->nfrac, nd * sizeof(int));
    memcpy(m->milli, u->milli, nd * sizeof(int64_t));
    memcpy(m->gmem, u->gmem, nd * sizeof(int64_t));
    memcpy(m->cpu, u->cpu, nn * sizeof(int64_t));
    memcpy(m->mem, u->mem, nn * sizeof(int64_t));
}

static void
room_fini(room_t *m)
{
    free(m->owners);
    free(m->nfrac);
    free(m->milli);
    free(m->gmem);
    free(m->cpu);
    free(m->mem);
}

/* The share of a device of `devmem` bytes a fractional request holds at
 * most, with a margin for the core's rounding. */
static int64_t
frac_share(const al_request_t *q, int64_t devmem)
{
    int64_t share = q->gpu_milli;

    if (q->gpu_mem > 0 && devmem > 0) {
        int64_t m = (q->gpu_mem * AL_GPU_MILLI + devmem - 1) / devmem;

        if (m > share)
            share = m;
    }
    return share + 5;
}

/*
 * Greedy first fit of ntasks tasks of job j on ready nodes, in room m
 * (which it consumes), only on nodes sharing node `dom`'s domain at the
 * job's level when dom >= 0.  Greedy success proves a placement exists.
 */
static bool
greedy_fit(const al_snapshot_t *s, const usage_t *u, room_t *m,
           const al_job_t *j, int ntasks, int dom)
{
    int t, n, d;

    for (t = 0; t < ntasks; t++) {
        bool placed = false;

        for (n = 0; n < s->nnodes && !placed; n++) {
            const al_node_t *nd = &s->nodes[n];
            int off = u->dev_off[n], got = 0;
            uint64_t take = 0;

            if (nd->state != AL_NODE_READY || !node_matches(nd, &j->req))
                continue;
            if (dom >= 0 && !same_domain(nd, &s->nodes[dom], j->topo_level))
                continue;
            if (m->cpu[n] + j->req.cpu_milli > nd->cpu_milli ||
                m->mem[n] + j->req.mem_bytes > nd->mem_bytes)
                continue;
            if (j->req.gpus > 0) {
                for (d = 0; d < nd->ndevices && got < j->req.gpus; d++)
                    if (m->owners[off + d] == 0 && m->nfrac[off + d] == 0) {
                        take |= (uint64_t)1 << d;
                        got++;
                    }
                if (got < j->req.gpus)
                    continue;
                for (d = 0; d < nd->ndevices; d++)
                    if (take >> d & 1)
                        m->owners[off + d]++;
            } else if (j->req.gpu_milli > 0 || j->req.gpu_mem > 0) {
                for (d = 0; d < nd->ndevices; d++) {
                    int64_t share =
                        frac_share(&j->req, nd->devices[d].mem_bytes);

                    if (m->owners[off + d] == 0 &&
                        m->milli[off + d] + share <= AL_GPU_MILLI &&
                        m->gmem[off + d] + j->req.gpu_mem <=
                            nd->devices[d].mem_bytes) {
                        m->milli[off + d] += share;
                        m->gmem[off + d] += j->req.gpu_mem;
                        m->nfrac[off + d]++;
                        break;
                    }
                }
                if (d == nd->ndevices)
                    continue;
            }
            m->cpu[n] += j->req.cpu_milli;
            m->mem[n] += j->req.mem_bytes;
            placed = true;
        }
        if (!placed)
            return false;
    }
    return true;
}

/* Whether job j's gang (min_tasks) fits in the room of usage u. */
static bool
fits_in(const al_snapshot_t *s, const usage_t *u, const al_job_t *j)
{
    int n;

    /* A required domain is judged only on nodes whose labels name one
     * (the core may refuse unlabelled nodes even for a single task). */
    if (j->topo_mode != AL_TOPO_REQUIRED) {
        room_t m;
        bool ok;

        room_init(&m, u);
        ok = greedy_fit(s, u, &m, j, j->min_tasks, -1);
        room_fini(&m);
        return ok;
    }
    /* One try per domain, named by a node in it. */
    for (n = 0; n < s->nnodes; n++) {
        room_t m;
        bool ok;

        if (s->nodes[n].topo[j->topo_level] == NULL)
            continue;
        room_init(&m, u);
        ok = greedy_fit(s, u, &m, j, j->min_tasks, n);
        room_fini(&m);
        if (ok)
            return true;
    }
    return false;
}

/*
 * Whether the quotas of job j's queues admit its gang on top of usage u,
 * as core.h and docs/scheduling.md state them: limits at every ancestor, and
 * for non-preemptible work deserved at every ancestor; with borrow off,
 * deserved for all.  Fractions count as a whole GPU (their share depends
 * on the device).  Queues with model quotas are not judged.
 */
static bool
quota_admits(const al_snapshot_t *s, const usage_t *u, const al_job_t *j)
{
    int64_t need[AL_NRES];
    int q, res;

    need[AL_RES_GPU] =
        (j->req.gpus > 0 ? (int64_t)j->req.gpus * AL_GPU_MILLI
         : j->req.gpu_milli > 0 || j->req.gpu_mem > 0 ? AL_GPU_MILLI
                                                      : 0) *
        j->min_tasks;
    need[AL_RES_CPU] = j->req.cpu_milli * j->min_tasks;
    need[AL_RES_MEM] = j->req.mem_bytes * j->min_tasks;
    for (q = j->queue; q >= 0; q = s->queues[q].parent) {
        const al_queue_t *qq = &s->queues[q];

        if (qq->nmodel_quotas > 0)
            return false;
        for (res = 0; res < AL_NRES; res++) {
            if (qq->quota[res].limit != AL_UNLIMITED &&
                u->q[q][res] + need[res] > qq->quota[res].limit)
                return false;
            if (!s->config->borrow &&
                u->q[q][res] + need[res] > qq->quota[res].deserved)
                return false;
        }
        if (!j->preemptible &&
            u->nonpre[q] + need[AL_RES_GPU] > qq->quota[AL_RES_GPU].deserved)
            return false;
    }
    return true;
}

/* What queue q is owed before any surplus: its deserved GPUs, bounded by
 * its demand and its limit. */
static int64_t
deserved_want(const al_snapshot_t *s, const al_result_t *r, int q)
{
    int64_t w = s->queues[q].quota[AL_RES_GPU].deserved;
    int64_t lim = s->queues[q].quota[AL_RES_GPU].limit;

    if (r->queues[q].demand[AL_RES_GPU] < w)
        w = r->queues[q].demand[AL_RES_GPU];
    if (lim != AL_UNLIMITED && lim < w)
        w = lim;
    return w;
}

/*
 * AL_INVARIANT_LAX_MODEL=1 skips the per-model quota checks, to look for
 * other failures while a known model-quota bug is open.
 */
static bool lax_models;

static int service_level(const al_snapshot_t *s, const al_job_t *j);

/* May job f, waiting past starve_after, have evicted job x of another
 * queue below its deserved quota because x has run long (the core's
 * served_long() in reclaim.c): same priority class or lower, a higher
 * service level, a current run of at least starve_after and more than
 * four times f's expected runtime? */
static bool
served_long(const al_snapshot_t *s, const al_job_t *f, const al_job_t *x)
{
    al_config_t def;
    const al_config_t *cfg = s->config;
    int64_t t = f->eligible_time > 0 ? f->eligible_time : f->submit_time;
    int64_t rt, ran = s->now - x->start_time;

    if (cfg == NULL) {
        al_config_default(&def);
        cfg = &def;
    }
    rt = f->estimate > 0 ? f->estimate : cfg->default_runtime;
    if (f->time_limit > 0 && (f->estimate <= 0 || f->time_limit < rt))
        rt = f->time_limit;
    return cfg->preempt && cfg->service_levels[0] > 0 &&
           cfg->starve_after > 0 && s->now - t >= cfg->starve_after &&
           x->priority <= f->priority &&
           service_level(s, x) > service_level(s, f) &&
           ran >= cfg->starve_after && (double)ran > 4.0 * (double)rt;
}

/* Job j's service level (al_config_t.service_levels), from its attained
 * service, the current run included. */
static int
service_level(const al_snapshot_t *s, const al_job_t *j)
{
    double att = j->attained > 0 ? j->attained : 0;
    int level = 0;
    al_config_t def;
    const al_config_t *cfg = s->config;

    if (cfg == NULL) {
        al_config_default(&def);
        cfg = &def;
    }
    if (j->state == AL_JOB_RUNNING && s->now > j->start_time) {
        int64_t task = al_request_gpu_milli(&j->req);

        /* A fraction by memory alone: the share its placement holds. */
        if (task == 0 && j->req.gpu_mem > 0 && j->ntasks > 0)
            task = j->placement[0].gpu_milli;
        /* A task with no GPU counts as one (al_service()). */
        if (task <= 0)
            task = AL_GPU_MILLI;
        att += (double)(s->now - j->start_time) * (double)j->ntasks *
               (double)task / AL_GPU_MILLI;
    }
    while (level < AL_MAX_SERVICE_LEVELS && cfg->service_levels[level] > 0 &&
           att >= (double)cfg->service_levels[level])
        level++;
    return level;
}

static bool
check_result(const al_snapshot_t *s, const al_result_t *r, chk_t *c)
{
    usage_t before, after;
    int *dec = calloc((size_t)s->njobs + 1, sizeof(int));
    bool *started_in = calloc((size_t)s->nqueues + 1, sizeof(bool));
    bool *np_started_in = calloc((size_t)s->nqueues + 1, sizeof(bool));
    bool *leaf = calloc((size_t)s->nqueues + 1, sizeof(bool));
    int64_t *reclaimed = calloc((size_t)s->nqueues + 1, sizeof(int64_t));
    int64_t *small_taken = calloc((size_t)s->nqueues + 1, sizeof(int64_t));
    int64_t *big0 = calloc((size_t)s->nqueues + 1, sizeof(int64_t));
    int64_t *requested = calloc((size_t)s->nqueues + 1, sizeof(int64_t));
    int i, k, q, res, m, nstart = 0, nplace = 0;
    /* ignore_queues ("one global order by priority and age, no fair
     * share") is read as switching queue quotas off as well. */
    bool quotas = s->config == NULL || !s->config->ignore_queues;
    int nevict = 0;

    if (dec == NULL || started_in == NULL || np_started_in == NULL ||
        leaf == NULL || reclaimed == NULL || small_taken == NULL ||
        big0 == NULL || requested == NULL)
        abort();
    usage_init(&before, s);
    usage_init(&after, s);
    c->failed = false;

    CHECK(c, r->njobs == s->njobs, "njobs %d of %d", r->njobs, s->njobs);
    CHECK(c, r->nqueues == s->nqueues, "nqueues %d of %d", r->nqueues,
          s->nqueues);
    for (q = 0; q < s->nqueues; q++)
        leaf[q] = true;
    for (q = 0; q < s->nqueues; q++)
        if (s->queues[q].parent >= 0)
            leaf[s->queues[q].parent] = false;

    /* Before: what runs in the snapshot. */
    for (i = 0; i < s->njobs; i++) {
        const al_job_t *j = &s->jobs[i];

        dec[i] = -1;
        if (j->state != AL_JOB_RUNNING)
            continue;
        usage_add(&before, s, j, j->placement, j->ntasks, 1);
        for (q = j->queue; q >= 0; q = s->queues[q].parent) {
            requested[q] += task_gpu(&j->req) * j->ntasks;
            if (job_gpu(j) > s->queues[q].quota[AL_RES_GPU].deserved)
                big0[q] += job_gpu(j);
        }
    }

    /* One decision per job, each well formed. */
    for (k = 0; k < r->ndecisions; k++) {
        const al_decision_t *d = &r->decisions[k];
        const al_job_t *j;

        CHECK(c, d->job >= 0 && d->job < s->njobs, "decision %d: job %d", k,
              d->job);
        CHECK(c, dec[d->job] < 0, "job %d has two decisions", d->job);
        dec[d->job] = k;
        j = &s->jobs[d->job];
        if (d->kind == AL_DEC_START) {
            nstart++;
            nplace += d->ntasks;
            CHECK(c, j->state == AL_JOB_PENDING, "job %d started from state %d",
                  d->job, (int)j->state);
            CHECK(c,
                  j->dep_state == AL_DEPS_NONE ||
                      j->dep_state == AL_DEPS_SATISFIED,
                  "job %d started with dep_state %d", d->job,
                  (int)j->dep_state);
            CHECK(c, j->queue >= 0 && j->queue < s->nqueues && leaf[j->queue],
                  "job %d started from queue %d", d->job, j->queue);
            CHECK(c, d->ntasks >= j->min_tasks && d->ntasks <= j->max_tasks,
                  "job %d: partial gang, %d tasks of %d..%d", d->job, d->ntasks,
                  j->min_tasks, j->max_tasks);
            CHECK(c, r->reasons[d->job].code == AL_WHY_NONE,
                  "started job %d has reason %d", d->job,
                  (int)r->reasons[d->job].code);
            if (d->lent) {
                CHECK(c, j->preemptible, "job %d: lent but not preemptible",
                      d->job);
                CHECK(c, d->for_job >= 0 && d->for_job < s->njobs,
                      "job %d: lent from job %d", d->job, d->for_job);
            } else {
                CHECK(c, d->for_job == -1, "job %d: START for_job %d", d->job,
                      d->for_job);
            }
            for (i = 0; i < d->ntasks; i++) {
                const al_placement_t *p = &d->tasks[i];
                const al_node_t *n;

                CHECK(c, p->node >= 0 && p->node < s->nnodes,
                      "job %d task %d on node %d", d->job, i, p->node);
                n = &s->nodes[p->node];
                CHECK(c, n->state == AL_NODE_READY,
                      "job %d task %d on node %d in state %d", d->job, i,
                      p->node, (int)n->state);
                CHECK(c, node_matches(n, &j->req),
                      "job %d task %d: node %d has the wrong pool or model",
                      d->job, i, p->node);
                CHECK(c, (p->devices & ~dev_mask(n->ndevices)) == 0,
                      "job %d task %d: devices %#llx on a %d-GPU node", d->job,
                      i, (unsigned long long)p->devices, n->ndevices);
                if (j->req.gpus > 0) {
                    CHECK(c, popcount(p->devices) == j->req.gpus,
                          "job %d task %d: %d devices for %d GPUs", d->job, i,
                          popcount(p->devices), j->req.gpus);
                } else if (j->req.gpu_milli > 0 || j->req.gpu_mem > 0) {
                    CHECK(c, popcount(p->devices) == 1,
                          "job %d task %d: fraction on %d devices", d->job, i,
                          popcount(p->devices));
                    CHECK(c, p->gpu_milli >= j->req.gpu_milli,
                          "job %d task %d: %d milli for %d", d->job, i,
                          p->gpu_milli, j->req.gpu_milli);
                    CHECK(c, p->gpu_mem >= j->req.gpu_mem,
                          "job %d task %d: gpu_mem %lld for %lld", d->job, i,
                          (long long)p->gpu_mem, (long long)j->req.gpu_mem);
                } else {
                    CHECK(c, p->devices == 0,
                          "job %d task %d: CPU job holds devices", d->job, i);
                }
                /* Tasks on one node share every domain, known or not. */
                if (j->topo_mode == AL_TOPO_REQUIRED &&
                    p->node != d->tasks[0].node)
                    CHECK(c,
                          same_domain(n, &s->nodes[d->tasks[0].node],
                                      j->topo_level),
                          "job %d: tasks outside one level-%d domain", d->job,
                          j->topo_level);
            }
            for (q = j->queue; q >= 0; q = s->queues[q].parent) {
                started_in[q] = true;
                if (!j->preemptible)
                    np_started_in[q] = true;
            }
        } else if (d->kind == AL_DEC_EVICT || d->kind == AL_DEC_SHRINK) {
            nevict++;
            CHECK(c, j->state == AL_JOB_RUNNING, "job %d evicted from state %d",
                  d->job, (int)j->state);
            CHECK(c, j->preemptible, "non-preemptible job %d evicted", d->job);
            CHECK(c,
                  d->for_job >= 0 && d->for_job < s->njobs &&
                      d->for_job != d->job,
                  "job %d evicted for job %d", d->job, d->for_job);
            if (d->kind == AL_DEC_EVICT)
                CHECK(c, d->requeue, "preemptible job %d not requeued", d->job);
            else
                CHECK(c,
                      d->ntasks >= 1 && j->ntasks - d->ntasks >= j->min_tasks,
                      "job %d of %d tasks (min %d) shrunk by %d", d->job,
                      j->ntasks, j->min_tasks, d->ntasks);
            if (d->why != AL_EVICT_RESERVATION)
                CHECK(c, s->now - j->start_time >= j->min_runtime,
                      "job %d evicted after %llds, min_runtime %lld", d->job,
                      (long long)(s->now - j->start_time),
                      (long long)j->min_runtime);
            if (d->why == AL_EVICT_PREEMPT) {
                const al_job_t *f = &s->jobs[d->for_job];

                CHECK(c,
                      f->queue == j->queue &&
                          (f->priority > j->priority ||
                           (f->priority == j->priority &&
                            service_level(s, f) < service_level(s, j))),
                      "job %d (queue %d, prio %d, level %d) preempted for job "
                      "%d (queue %d, prio %d, level %d)",
                      d->job, j->queue, j->priority, service_level(s, j),
                      d->for_job, f->queue, f->priority, service_level(s, f));
            } else if (d->why == AL_EVICT_RECLAIM) {
                int fq = s->jobs[d->for_job].queue, t0, t;
                int64_t g = 0;

                /* An eviction frees all tasks, a shrink the last ones. */
                t0 = d->kind == AL_DEC_EVICT ? 0 : j->ntasks - d->ntasks;
                for (t = t0 >= 0 ? t0 : 0; t < j->ntasks; t++)
                    g += placed_gpu(j, &j->placement[t]);

                CHECK(c, fq != j->queue, "job %d reclaimed by its own queue",
                      d->job);
                for (q = j->queue; q >= 0; q = s->queues[q].parent)
                    if (!is_ancestor_or_self(s, q, fq)) {
                        reclaimed[q] += g;
                        if (job_gpu(j) <=
                                s->queues[q].quota[AL_RES_GPU].deserved &&
                            !served_long(s, &s->jobs[d->for_job], j))
                            small_taken[q] += g;
                    }
            } else {
                CHECK(c, d->why == AL_EVICT_RESERVATION, "job %d: why %d",
                      d->job, (int)d->why);
                CHECK(c, j->lent, "job %d evicted for a reservation, not lent",
                      d->job);
            }
        } else {
            CHECK(c, false, "decision %d: kind %d", k, (int)d->kind);
        }
    }
    CHECK(c, r->stats.started == nstart, "stats.started %d, %d starts",
          r->stats.started, nstart);
    CHECK(c, r->stats.placements == nplace, "stats.placements %d, %d tasks",
          r->stats.placements, nplace);
    CHECK(c, r->stats.evicted == nevict, "stats.evicted %d, %d evictions",
          r->stats.evicted, nevict);

    /* After: the cluster once the decisions are applied. */
    for (i = 0; i < s->njobs; i++) {
        const al_job_t *j = &s->jobs[i];
        const al_decision_t *d = dec[i] >= 0 ? &r->decisions[dec[i]] : NULL;

        if (d != NULL && d->kind == AL_DEC_START)
            usage_add(&after, s, j, d->tasks, d->ntasks, 1);
        else if (d != NULL && d->kind == AL_DEC_SHRINK)
            usage_add(&after, s, j, j->placement, j->ntasks - d->ntasks, 1);
        else if (j->state == AL_JOB_RUNNING &&
                 (d == NULL || d->kind != AL_DEC_EVICT))
            usage_add(&after, s, j, j->placement, j->ntasks, 1);
    }
    for (i = 0; i < s->nnodes; i++) {
        const al_node_t *n = &s->nodes[i];
        int off = after.dev_off[i], dv;

        CHECK(c, after.cpu[i] <= n->cpu_milli, "node %d: cpu %lld of %lld", i,
              (long long)after.cpu[i], (long long)n->cpu_milli);
        CHECK(c, after.mem[i] <= n->mem_bytes, "node %d: mem %lld of %lld", i,
              (long long)after.mem[i], (long long)n->mem_bytes);
        for (dv = 0; dv < n->ndevices; dv++) {
            CHECK(c, after.owners[off + dv] <= 1,
                  "node %d device %d: %d whole owners", i, dv,
                  after.owners[off + dv]);
            CHECK(c, after.owners[off + dv] == 0 || after.nfrac[off + dv] == 0,
                  "node %d device %d: whole and fractional users", i, dv);
            CHECK(c, after.milli[off + dv] <= AL_GPU_MILLI,
                  "node %d device %d: %lld milli", i, dv,
                  (long long)after.milli[off + dv]);
            CHECK(c, after.gmem[off + dv] <= n->devices[dv].mem_bytes,
                  "node %d device %d: %lld bytes of %lld", i, dv,
                  (long long)after.gmem[off + dv],
                  (long long)n->devices[dv].mem_bytes);
        }
    }

    /* Quotas. */
    for (q = 0; q < s->nqueues; q++) {
        const al_queue_t *qq = &s->queues[q];
        const al_queue_share_t *sh = &r->queues[q];

        for (res = 0; res < AL_NRES; res++) {
            CHECK(c, sh->allocated[res] == after.q[q][res],
                  "queue %d res %d: allocated %lld, really %lld", q, res,
                  (long long)sh->allocated[res], (long long)after.q[q][res]);
            if (qq->quota[res].limit != AL_UNLIMITED && started_in[q] && quotas)
                CHECK(c, after.q[q][res] <= qq->quota[res].limit,
                      "queue %d res %d: %lld above limit %lld", q, res,
                      (long long)after.q[q][res],
                      (long long)qq->quota[res].limit);
            CHECK(c, sh->fair[res] >= 0, "queue %d res %d: fair %g", q, res,
                  sh->fair[res]);
        }
        CHECK(c, sh->nonpreempt_gpu == after.nonpre[q],
              "queue %d: nonpreempt_gpu %lld, really %lld", q,
              (long long)sh->nonpreempt_gpu, (long long)after.nonpre[q]);
        if (np_started_in[q] && quotas)
            CHECK(c, after.nonpre[q] <= qq->quota[AL_RES_GPU].deserved,
                  "queue %d: non-preemptible %lld above deserved %lld", q,
                  (long long)after.nonpre[q],
                  (long long)qq->quota[AL_RES_GPU].deserved);
        if (qq->quota[AL_RES_GPU].limit != AL_UNLIMITED)
            CHECK(c, sh->fair[AL_RES_GPU] <= qq->quota[AL_RES_GPU].limit + 1,
                  "queue %d: fair %g above limit %lld", q, sh->fair[AL_RES_GPU],
                  (long long)qq->quota[AL_RES_GPU].limit);
        CHECK(c, sh->fair[AL_RES_GPU] <= (double)sh->demand[AL_RES_GPU] + 1,
              "queue %d: fair %g above demand %lld", q, sh->fair[AL_RES_GPU],
              (long long)sh->demand[AL_RES_GPU]);
        /* Demand counts requests (core.h), so compare it with what the
         * running jobs requested, not with the shares they were given. */
        CHECK(c, sh->demand[AL_RES_GPU] >= requested[q],
              "queue %d: demand %lld below running requests %lld", q,
              (long long)sh->demand[AL_RES_GPU], (long long)requested[q]);
        for (m = 0; m < NMODELS; m++) {
            const al_model_quota_t *mq = model_quota(qq, m);

            if (mq == NULL || !started_in[q] || lax_models || !quotas)
                continue;
            if (mq->limit != AL_UNLIMITED)
                CHECK(c, after.model[q][m] <= mq->limit,
                      "queue %d: %s %lld above model limit %lld", q, models[m],
                      (long long)after.model[q][m], (long long)mq->limit);
            if (np_started_in[q])
                CHECK(c, after.npmodel[q][m] <= mq->deserved,
                      "queue %d: non-preemptible %s %lld above %lld", q,
                      models[m], (long long)after.npmodel[q][m],
                      (long long)mq->deserved);
        }
        /* Reclaim never takes a queue below its deserved GPUs, except by
         * evicting jobs larger than that quota (over quota as a whole):
         * its other jobs keep min(deserved, what they held). */
        if (small_taken[q] > 0 && quotas) {
            int64_t small0 = before.q[q][AL_RES_GPU] - big0[q];
            int64_t keep = small0 < qq->quota[AL_RES_GPU].deserved
                               ? small0
                               : qq->quota[AL_RES_GPU].deserved;

            CHECK(c, small0 - small_taken[q] >= keep,
                  "queue %d: reclaim took %lld of %lld in jobs within its "
                  "quota (%lld in all), deserved %lld",
                  q, (long long)small_taken[q], (long long)small0,
                  (long long)before.q[q][AL_RES_GPU],
                  (long long)qq->quota[AL_RES_GPU].deserved);
        }
    }

    /* Reasons. */
    for (i = 0; i < s->njobs; i++) {
        const al_job_t *j = &s->jobs[i];
        const al_reason_t *why = &r->reasons[i];
        bool started = dec[i] >= 0 && r->decisions[dec[i]].kind == AL_DEC_START;

        CHECK(c, why->queue >= -1 && why->queue < s->nqueues,
              "job %d: reason queue %d", i, why->queue);
        CHECK(c, why->job >= -1 && why->job < s->njobs, "job %d: reason job %d",
              i, why->job);
        if (j->state == AL_JOB_RUNNING || started) {
            /* "AL_WHY_NONE: it started (or is not pending)". */
            CHECK(c, why->code == AL_WHY_NONE,
                  "job %d (state %d) has reason %d", i, (int)j->state,
                  (int)why->code);
            continue;
        }
        CHECK(c, why->code != AL_WHY_NONE, "pending job %d has no reason", i);
        /* Each code only where its cause can be. */
        CHECK(c, why->code != AL_WHY_HELD || j->state == AL_JOB_HELD,
              "job %d: held reason, state %d", i, (int)j->state);
        CHECK(c, why->code != AL_WHY_DEPS || j->dep_state == AL_DEPS_WAITING,
              "job %d: deps reason, dep_state %d", i, (int)j->dep_state);
        CHECK(c,
              why->code != AL_WHY_DEPS_NEVER || j->dep_state == AL_DEPS_NEVER,
              "job %d: deps-never reason, dep_state %d", i, (int)j->dep_state);
        CHECK(c, why->code != AL_WHY_DESERVED || !j->preemptible,
              "preemptible job %d: deserved reason", i);
        CHECK(c, why->code != AL_WHY_NO_BORROW || !s->config->borrow,
              "job %d: no-borrow reason with borrowing on", i);
        CHECK(c, why->code != AL_WHY_ORDER || s->config->strict_order,
              "job %d: strict-order reason without strict order", i);
        /* (Behind a pipeline's look-ahead needs no reserve_depth.) */
        CHECK(c,
              (why->code != AL_WHY_RESERVED &&
               why->code != AL_WHY_BEHIND_RESERVATION) ||
                  s->config->reserve_depth > 0 ||
                  (why->code == AL_WHY_BEHIND_RESERVATION && why->job >= 0 &&
                   s->jobs[why->job].dep_state == AL_DEPS_WAITING),
              "job %d: reservation reason with reserve_depth 0", i);
        CHECK(c,
              why->code != AL_WHY_BAD_QUEUE ||
                  !(j->queue >= 0 && j->queue < s->nqueues && leaf[j->queue]),
              "job %d: bad-queue reason for leaf queue %d", i, j->queue);
        if (why->code == AL_WHY_LIMIT)
            CHECK(c,
                  why->queue >= 0 && why->res >= 0 && why->res < AL_NRES &&
                      why->amount ==
                          s->queues[why->queue].quota[why->res].limit,
                  "job %d: limit reason for queue %d res %d amount %lld", i,
                  why->queue, why->res, (long long)why->amount);
        if (why->code == AL_WHY_DESERVED || why->code == AL_WHY_MODEL_LIMIT ||
            why->code == AL_WHY_NO_BORROW)
            CHECK(c, why->queue >= 0, "job %d: reason %d names no queue", i,
                  (int)why->code);
        if (why->code == AL_WHY_BEHIND_RESERVATION || why->code == AL_WHY_ORDER)
            CHECK(c, why->job >= 0 && why->job != i,
                  "job %d: reason %d names job %d", i, (int)why->code,
                  why->job);
        if (why->code == AL_WHY_RESERVED ||
            why->code == AL_WHY_BEHIND_RESERVATION) {
            /* The reservation named exists, at the time the reason gives. */
            int owner = why->code == AL_WHY_RESERVED ? i : why->job;

            for (k = 0; k < r->nreservations; k++)
                if (r->reservations[k].job == owner)
                    break;
            CHECK(c, k < r->nreservations,
                  "job %d: reason %d but job %d has no reservation", i,
                  (int)why->code, owner);
            if (why->code == AL_WHY_RESERVED)
                CHECK(c, why->time == r->reservations[k].start,
                      "job %d: reserved at %lld, reservation at %lld", i,
                      (long long)why->time,
                      (long long)r->reservations[k].start);
        }
        if (j->state == AL_JOB_HELD)
            CHECK(c,
                  why->code == AL_WHY_HELD || why->code == AL_WHY_DEPS ||
                      why->code == AL_WHY_DEPS_NEVER,
                  "held job %d: reason %d", i, (int)why->code);
        else if (j->dep_state == AL_DEPS_WAITING)
            CHECK(c, why->code == AL_WHY_DEPS, "job %d waits: reason %d", i,
                  (int)why->code);
        else if (j->dep_state == AL_DEPS_NEVER)
            CHECK(c, why->code == AL_WHY_DEPS_NEVER,
                  "job %d can never run: reason %d", i, (int)why->code);
    }

    /* Reservations name pending jobs and real nodes. */
    for (k = 0; k < r->nreservations; k++) {
        const al_reservation_t *rv = &r->reservations[k];

        CHECK(c, rv->job >= 0 && rv->job < s->njobs, "reservation %d: job %d",
              k, rv->job);
        CHECK(c, dec[rv->job] < 0, "reservation %d: job %d has a decision", k,
              rv->job);
        CHECK(c, s->jobs[rv->job].state == AL_JOB_PENDING,
              "reservation %d: job %d in state %d", k, rv->job,
              (int)s->jobs[rv->job].state);
        CHECK(c, rv->start >= s->now, "reservation %d starts at %lld < now", k,
              (long long)rv->start);
        /* A pipeline's look-ahead is made for a job that waits for its
         * dependencies, and keeps that reason. */
        CHECK(c,
              r->reasons[rv->job].code == AL_WHY_RESERVED ||
                  (r->reasons[rv->job].code == AL_WHY_DEPS &&
                   s->jobs[rv->job].dep_state == AL_DEPS_WAITING),
              "reservation %d: job %d has reason %d", k, rv->job,
              (int)r->reasons[rv->job].code);
        CHECK(c, rv->nnodes >= 1, "reservation %d: %d nodes", k, rv->nnodes);
        for (i = 0; i < rv->nnodes; i++)
            CHECK(c, rv->nodes[i] >= 0 && rv->nodes[i] < s->nnodes,
                  "reservation %d: node %d", k, rv->nodes[i]);
    }
    /* Fair shares: water-filling hands down no more than it has, and
     * deserved quotas come first where they fit. */
    {
        double top = 0, cap = 0, want = 0;

        for (i = 0; i < s->nnodes; i++)
            if (s->nodes[i].state == AL_NODE_READY)
                cap += (double)s->nodes[i].ndevices * AL_GPU_MILLI;
        for (q = 0; q < s->nqueues; q++) {
            const al_queue_t *qq = &s->queues[q];
            double kids = 0, kwant = 0;
            int k2;

            if (qq->parent < 0) {
                top += r->queues[q].fair[AL_RES_GPU];
                want += (double)deserved_want(s, r, q);
            }
            for (k2 = q + 1; k2 < s->nqueues; k2++)
                if (s->queues[k2].parent == q) {
                    kids += r->queues[k2].fair[AL_RES_GPU];
                    kwant += (double)deserved_want(s, r, k2);
                }
            CHECK(c, kids <= r->queues[q].fair[AL_RES_GPU] + 1,
                  "queue %d: children's fair shares %g exceed its %g", q, kids,
                  r->queues[q].fair[AL_RES_GPU]);
            for (k2 = q + 1; quotas && kwant <= r->queues[q].fair[AL_RES_GPU] &&
                             k2 < s->nqueues;
                 k2++)
                if (s->queues[k2].parent == q)
                    CHECK(c,
                          r->queues[k2].fair[AL_RES_GPU] + 1 >=
                              (double)deserved_want(s, r, k2),
                          "queue %d: fair %g below its deserved want %lld", k2,
                          r->queues[k2].fair[AL_RES_GPU],
                          (long long)deserved_want(s, r, k2));
        }
        /* Deserved quotas that fit the ready GPUs are met at the top. */
        for (q = 0; quotas && want <= cap && q < s->nqueues; q++)
            if (s->queues[q].parent < 0)
                CHECK(c,
                      r->queues[q].fair[AL_RES_GPU] + 1 >=
                          (double)deserved_want(s, r, q),
                      "top queue %d: fair %g below its deserved want %lld", q,
                      r->queues[q].fair[AL_RES_GPU],
                      (long long)deserved_want(s, r, q));
        /* Draining nodes may count too: bound by every node not down. */
        for (i = 0; i < s->nnodes; i++)
            if (s->nodes[i].state == AL_NODE_DRAINING)
                cap += (double)s->nodes[i].ndevices * AL_GPU_MILLI;
        CHECK(c, top <= cap + 1, "top-level fair shares %g exceed %g GPUs", top,
              cap);
        (void)want;
    }

    /*
     * Work conservation: a job told "no room" must really have none.  Only
     * judged where nothing muddles the picture: no evictions (room freed
     * after the job was looked at), no reservations (held room), no strict
     * order, queues honoured.
     */
    if (nevict == 0 && r->nreservations == 0 && !s->config->strict_order &&
        quotas) {
        for (i = 0; i < s->njobs; i++) {
            const al_job_t *j = &s->jobs[i];
            al_reason_code_t code = r->reasons[i].code;

            if (j->state != AL_JOB_PENDING || dec[i] >= 0 || j->queue < 0 ||
                j->queue >= s->nqueues || !leaf[j->queue])
                continue;
            if (code != AL_WHY_CAPACITY && code != AL_WHY_NO_NODE &&
                code != AL_WHY_TOPOLOGY && code != AL_WHY_NO_VICTIM)
                continue;
            CHECK(c, !(quota_admits(s, &after, j) && fits_in(s, &after, j)),
                  "job %d: reason %d, yet it fits in the room left", i,
                  (int)code);
        }
    }
    /* "No node or domain could ever hold it": not even an empty cluster. */
    for (i = 0; i < s->njobs; i++) {
        usage_t empty;
        bool fits;

        if (r->reasons[i].code != AL_WHY_TOO_BIG)
            continue;
        usage_init(&empty, s);
        fits = fits_in(s, &empty, &s->jobs[i]);
        usage_fini(&empty);
        CHECK(c, !fits, "job %d: too big, yet it fits an empty cluster", i);
    }
out:
    usage_fini(&before);
    usage_fini(&after);
    free(dec);
    free(started_in);
    free(np_started_in);
    free(leaf);
    free(reclaimed);
    free(small_taken);
    free(big0);
    free(requested);
    return !c->failed;
}

/* ------------------------------------------------------------------ */
/* Allocation-failure injection                                       */

struct failing {
    long calls, live, fail_at;
};

static void *
failing_malloc(void *ctx, size_t size)
{
    struct failing *f = ctx;
    void *p;

    f->calls++;
    if (f->fail_at != 0 && f->calls == f->fail_at)
        return NULL;
    p = malloc(size);
    if (p != NULL)
        f->live++;
    return p;
}

static void
failing_free(void *ctx, void *ptr)
{
    struct failing *f = ctx;

    if (ptr == NULL)
        return;
    f->live--;
    free(ptr);
}

/*
 * Fails the 1st, 2nd, 3rd... allocation of a cycle on snapshot s until the
 * cycle succeeds: each failure must return AL_ENOMEM with *out untouched and
 * every byte returned; the final success must equal `ref`.  Returns the
 * number of allocations a successful cycle makes.
 */
static long
inject_failures(const al_snapshot_t *s, const al_result_t *ref)
{
    struct failing f;
    al_allocator_t a = { failing_malloc, failing_free, &f };
    al_snapshot_t local = *s; /* the same snapshot on the failing allocator */
    al_result_t *sentinel = (al_result_t *)&f, *out = NULL;
    char why[256];
    long n;
    int rc = -1;

    local.allocator = &a;
    for (n = 1; n < 1000000; n++) {
        char *cause = NULL;

        memset(&f, 0, sizeof(f));
        f.fail_at = n;
        out = sentinel;
        rc = al_sched_run(&local, &out, &cause);
        al_cause_free(&local, cause);
        if (rc == 0)
            break;
        if (rc != AL_ENOMEM)
            AL__FAIL("failing allocation %ld: %s, want ENOMEM", n,
                     al_err_name(rc));
        if (out != sentinel || f.live != 0)
            AL__FAIL("failing allocation %ld: out %s, %ld blocks leaked", n,
                     out != sentinel ? "changed" : "untouched", f.live);
    }
    ASSERT_EQ(rc, 0);
    ASSERT(out != sentinel && out != NULL);
    if (res_diff(ref, out, why, sizeof(why)) != 0) {
        al_result_destroy(out);
        AL__FAIL("result under failure injection differs: %s", why);
    }
    /* The result lives on the caller's allocator until destroyed. */
    ASSERT_GT(f.live, 0);
    al_result_destroy(out);
    ASSERT_EQ(f.live, 0);
    return n - 1;
}

/* ------------------------------------------------------------------ */
/* The tests                                                          */

/* Whether this build runs under AddressSanitizer (several times slower). */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* 10000 snapshots; 3000 under ASan; 300 when AL_TEST_QUICK asks for a quick
 * run (CI's valgrind pass). */
static int
default_iters(void)
{
    if (getenv("AL_TEST_QUICK") != NULL)
        return 300;
    return UNDER_ASAN ? 3000 : 10000;
}

static uint64_t
seed(void)
{
    const char *v = getenv("AL_INVARIANT_SEED");

    return v != NULL && *v != '\0' ? strtoull(v, NULL, 0) : 20261122;
}

/* ------------------------------------------------------------------ */
/* Shrinking a failing snapshot                                       */

/*
 * Copies snapshot s into a new builder, keeping only the jobs and nodes
 * whose keep flag is set.  Jobs placed on a dropped node are dropped too;
 * dependency edges to dropped jobs disappear and the others are renumbered.
 */
static snap_t *
copy_filtered(const al_snapshot_t *s, const bool *keep_job,
              const bool *keep_node)
{
    snap_t *b = snap_create();
    int *nmap = calloc((size_t)s->nnodes + 1, sizeof(int));
    int *jmap = calloc((size_t)s->njobs + 1, sizeof(int));
    int i, k, l;

    if (nmap == NULL || jmap == NULL)
        abort();
    *snap_config(b) = *s->config;
    snap_topo_levels(b, s->config->ntopo_levels, s->config->topo_levels);
    snap_set_now(b, s->now);
    for (i = 0; i < s->nnodes; i++) {
        const al_node_t *n = &s->nodes[i];
        al_node_t *m;
        int to;

        nmap[i] = -1;
        if (!keep_node[i])
            continue;
        to = snap_node(b, n->name, n->ndevices);
        m = snap_node_ref(b, to);
        m->state = n->state;
        m->cpu_milli = n->cpu_milli;
        m->mem_bytes = n->mem_bytes;
        for (k = 0; k < n->ndevices; k++)
            *snap_dev(b, to, k) = n->devices[k];
        for (l = 0; l < AL_MAX_TOPO_LEVELS; l++)
            if (n->topo[l] != NULL)
                snap_node_topo(b, to, l, n->topo[l]);
        if (n->pool != NULL)
            snap_node_pool(b, to, n->pool);
        if (n->gpu_model != NULL)
            snap_node_model(b, to, n->gpu_model);
        nmap[i] = to;
    }
    for (i = 0; i < s->nqueues; i++) {
        const al_queue_t *q = &s->queues[i];
        const al_model_quota_t *mq = q->model_quotas;
        al_queue_t *nq;

        snap_queue(b, q->name, q->parent, 0, 0, AL_UNLIMITED);
        nq = snap_queue_ref(b, i);
        nq->priority = q->priority;
        memcpy(nq->quota, q->quota, sizeof(q->quota));
        nq->usage = q->usage;
        for (k = 0; k < q->nmodel_quotas; k++)
            snap_queue_model_quota(b, i, mq[k].model, mq[k].deserved,
                                   mq[k].limit);
    }
    for (i = 0, l = 0; i < s->njobs; i++) {
        const al_job_t *j = &s->jobs[i];
        bool ok = keep_job[i];

        for (k = 0; ok && j->state == AL_JOB_RUNNING && k < j->ntasks; k++)
            ok = nmap[j->placement[k].node] >= 0;
        jmap[i] = ok ? l++ : -1;
    }
    for (i = 0; i < s->njobs; i++) {
        const al_job_t *j = &s->jobs[i];
        al_job_t *nj;
        int to;

        if (jmap[i] < 0)
            continue;
        to = snap_job(b, j->queue, j->min_tasks, 0);
        nj = snap_job_ref(b, to);
        *nj = *j;
        nj->req.pool = NULL;
        nj->req.gpu_model = NULL;
        nj->ndeps = 0;
        nj->deps = NULL;
        nj->ntasks = 0;
        nj->placement = NULL;
        if (j->req.pool != NULL)
            snap_job_pool(b, to, j->req.pool);
        if (j->req.gpu_model != NULL)
            snap_job_model(b, to, j->req.gpu_model);
        for (k = 0; k < j->ndeps; k++)
            if (jmap[j->deps[k].job] >= 0)
                snap_job_dep(b, to, jmap[j->deps[k].job]);
        snap_job_ref(b, to)->dep_state = j->dep_state;
        for (k = 0; j->state == AL_JOB_RUNNING && k < j->ntasks; k++) {
            const al_placement_t *p = &j->placement[k];

            if (j->req.gpus > 0 || p->devices == 0)
                snap_place(b, to, j->start_time, nmap[p->node], p->devices);
            else
                snap_place_frac(b, to, j->start_time, nmap[p->node],
                                __builtin_ctzll(p->devices), p->gpu_milli,
                                p->gpu_mem);
        }
    }
    free(nmap);
    free(jmap);
    snap_get(b);
    return b;
}

/* A deep copy of s. */
static snap_t *
copy_all(const al_snapshot_t *s)
{
    bool *kj = malloc((size_t)s->njobs + 1),
         *kn = malloc((size_t)s->nnodes + 1);
    snap_t *b;

    if (kj == NULL || kn == NULL)
        abort();
    memset(kj, 1, (size_t)s->njobs + 1);
    memset(kn, 1, (size_t)s->nnodes + 1);
    b = copy_filtered(s, kj, kn);
    free(kj);
    free(kn);
    return b;
}

/* Whether snapshot s still breaks the invariant of CHECK line `line`. */
static bool
still_fails(const al_snapshot_t *s, int line)
{
    al_result_t *r = NULL;
    chk_t c;
    bool fails;

    if (al_sched_run(s, &r, NULL) != 0)
        return false;
    fails = !check_result(s, r, &c) && c.line == line;
    al_result_destroy(r);
    return fails;
}

/*
 * Whether the cycle after s, at the same time and with nothing new,
 * stops a job that the cycle on s started (other than a lent one whose
 * reservation comes due).  Prints both cycles when verbose.
 */
static bool
churns(const al_snapshot_t *s, int verbose)
{
    al_result_t *r1 = NULL, *r2 = NULL;
    snap_t *b2;
    bool found = false;
    int k;

    if (al_sched_run(s, &r1, NULL) != 0)
        return false;
    b2 = copy_all(s);
    snap_apply(b2, r1, s->now);
    if (al_sched_run(snap_get(b2), &r2, NULL) == 0) {
        for (k = 0; k < r2->ndecisions; k++) {
            const al_decision_t *d = &r2->decisions[k];

            if (d->kind != AL_DEC_START && d->why != AL_EVICT_RESERVATION &&
                res_find(r1, d->job, AL_DEC_START) != NULL)
                found = true;
        }
        if (verbose) {
            fprintf(stderr, "    cycle 1:\n");
            snap_dump(s);
            res_dump(s, r1);
            fprintf(stderr, "    cycle 2, same time:\n");
            res_dump(snap_get(b2), r2);
        }
        al_result_destroy(r2);
    }
    al_result_destroy(r1);
    snap_destroy(b2);
    return found;
}

/*
 * Drops jobs and nodes one at a time from snapshot b for as long as
 * pred(snapshot, arg) holds, and returns what is left (b itself when
 * nothing could go): a small case to debug by hand.
 */
static snap_t *
minimize(snap_t *b, bool (*pred)(const al_snapshot_t *, int), int arg)
{
    snap_t *cur = b, *next;
    bool changed = true;
    int i;

    while (changed) {
        al_snapshot_t *s = snap_get(cur);
        int n = s->njobs > s->nnodes ? s->njobs : s->nnodes;
        bool *kj = malloc((size_t)s->njobs + 1);
        bool *kn = malloc((size_t)s->nnodes + 1);

        if (kj == NULL || kn == NULL)
            abort();
        changed = false;
        for (i = 0; i < 2 * n && !changed; i++) {
            memset(kj, 1, (size_t)s->njobs + 1);
            memset(kn, 1, (size_t)s->nnodes + 1);
            if (i < n) {
                if (i >= s->njobs)
                    continue;
                kj[i] = false;
            } else {
                if (i - n >= s->nnodes)
                    continue;
                kn[i - n] = false;
            }
            next = copy_filtered(s, kj, kn);
            if (pred(snap_get(next), arg)) {
                if (cur != b)
                    snap_destroy(cur);
                cur = next;
                changed = true;
            } else {
                snap_destroy(next);
            }
        }
        free(kj);
        free(kn);
    }
    return cur;
}

/* Shrinks a snapshot failing CHECK line `line` and prints the result. */
static void
minimize_failure(snap_t *b, int line)
{
    snap_t *m = minimize(b, still_fails, line);
    al_snapshot_t *s = snap_get(m);
    al_result_t *r = NULL;
    chk_t c;

    if (al_sched_run(s, &r, NULL) == 0) {
        check_result(s, r, &c);
        fprintf(stderr, "    minimized: %s\n", c.msg);
        snap_dump(s);
        res_dump(s, r);
        if (getenv("AL_INVARIANT_EMIT") != NULL)
            snap_emit_c(s);
        al_result_destroy(r);
    }
    if (m != b)
        snap_destroy(m);
}

/* Failures of one kind (one CHECK line), with the first example. */
struct tally {
    int line, count, iter, cycle;
    char msg[512];
};

#define MAX_KINDS 32

static void
tally_add(struct tally *k, int *nk, const chk_t *c, int iter, int cycle)
{
    int i;

    for (i = 0; i < *nk; i++)
        if (k[i].line == c->line) {
            k[i].count++;
            return;
        }
    if (*nk == MAX_KINDS)
        return;
    k[*nk].line = c->line;
    k[*nk].count = 1;
    k[*nk].iter = iter;
    k[*nk].cycle = cycle;
    snprintf(k[*nk].msg, sizeof(k[*nk].msg), "%s", c->msg);
    (*nk)++;
}

/*
 * Runs the cycle on s, checks it, and compares a second run.  Returns the
 * result, or NULL with c->failed set when an invariant is broken (refusals
 * and non-determinism fail the test at once).
 */
static al_result_t *
run_checked(snap_t *b, uint64_t sd, int iter, int cycle, chk_t *c)
{
    al_snapshot_t *s = snap_get(b);
    al_result_t *r = NULL, *again = NULL;
    char *cause = NULL, why[256];
    int rc = al_sched_run(s, &r, &cause), k;

    if (rc != 0) {
        fprintf(stderr, "    seed %llu iter %d cycle %d: %s (%s)\n",
                (unsigned long long)sd, iter, cycle, al_err_name(rc),
                cause != NULL ? cause : "");
        al_cause_free(s, cause);
        AL__FAIL("a valid snapshot was refused");
    }
    al_cause_free(s, cause);
    if (!check_result(s, r, c)) {
        if (getenv("AL_INVARIANT_DUMP") != NULL) {
            fprintf(stderr, "    iteration %d cycle %d: %s\n", iter, cycle,
                    c->msg);
            snap_dump(s);
            res_dump(s, r);
        }
        if (getenv("AL_INVARIANT_MINIMIZE") != NULL)
            minimize_failure(b, c->line);
        al_result_destroy(r);
        return NULL;
    }
    /* Every reason reads as text. */
    for (k = 0; k < r->njobs; k++) {
        char buf[256];
        int n = al_reason_format(s, &r->reasons[k], buf, sizeof(buf));

        if (n <= 0 || (n < (int)sizeof(buf) && strlen(buf) != (size_t)n) ||
            al_reason_format(s, &r->reasons[k], NULL, 0) != n) {
            al_result_destroy(r);
            AL__FAIL("seed %llu iter %d cycle %d: reason of job %d formats "
                     "badly (%d)",
                     (unsigned long long)sd, iter, cycle, k, n);
        }
    }
    ASSERT_EQ(al_sched_run(s, &again, NULL), 0);
    if (res_diff(r, again, why, sizeof(why)) != 0) {
        al_result_destroy(r);
        al_result_destroy(again);
        AL__FAIL("seed %llu iter %d cycle %d: not deterministic: %s",
                 (unsigned long long)sd, iter, cycle, why);
    }
    al_result_destroy(again);
    /* An equal snapshot at other addresses (every string a fresh copy)
     * gives the same result: nothing may depend on pointer values. */
    if (iter % 4 == 0) {
        snap_t *copy = copy_all(s);

        again = NULL;
        ASSERT_EQ(al_sched_run(snap_get(copy), &again, NULL), 0);
        snap_destroy(copy);
        if (res_diff(r, again, why, sizeof(why)) != 0) {
            al_result_destroy(r);
            al_result_destroy(again);
            AL__FAIL("seed %llu iter %d cycle %d: a copy differs: %s",
                     (unsigned long long)sd, iter, cycle, why);
        }
        al_result_destroy(again);
    }
    return r;
}

/*
 * Checks every snapshot, going on after a failure so that one report lists
 * every kind of broken invariant, each with a snapshot to replay:
 * AL_INVARIANT_FIRST=<iteration> AL_INVARIANT_ITERS=<iteration + 1>
 * AL_INVARIANT_DUMP=1 unit-runner invariants/random prints it in full.
 */
static void
random_snapshots(void)
{
    uint64_t sd = seed();
    int iters = env_int("AL_INVARIANT_ITERS", default_iters()), it, cy, nk = 0;
    long starts = 0, evicts = 0, reasons[32] = { 0 }, whys[2][3] = { { 0 } };
    long churn = 0, orphan = 0;
    /* AL_INVARIANT_CHURN=1 shows one case of churn, minimized. */
    bool show_churn = getenv("AL_INVARIANT_CHURN") != NULL;
    int k, bad = 0;
    struct tally kinds[MAX_KINDS];

    memset(kinds, 0, sizeof(kinds));
    lax_models = env_int("AL_INVARIANT_LAX_MODEL", 0) != 0;
    for (it = env_int("AL_INVARIANT_FIRST", 0); it < iters; it++) {
        snap_t *b = gen_snapshot(sd, it);
        rng_t r = { sd ^ (uint64_t)it * 7919 };
        bool *fresh = calloc((size_t)snap_njobs(b) + 1, sizeof(bool));

        if (fresh == NULL)
            abort();
        for (cy = 0; cy < CYCLES; cy++) {
            chk_t c;
            al_result_t *res = run_checked(b, sd, it, cy, &c);

            if (res == NULL) {
                tally_add(kinds, &nk, &c, it, cy);
                bad++;
                break;
            }
            starts += res_count(res, AL_DEC_START);
            evicts += res->ndecisions - res_count(res, AL_DEC_START);
            for (k = 0; k < res->ndecisions; k++) {
                const al_decision_t *d = &res->decisions[k];

                if (d->kind != AL_DEC_START && (int)d->why < 3)
                    whys[d->kind == AL_DEC_SHRINK][d->why]++;
                if (d->kind != AL_DEC_START && d->why != AL_EVICT_RESERVATION &&
                    res_find(res, d->for_job, AL_DEC_START) == NULL)
                    orphan++;
                /* Churn: stopping what the previous cycle started. */
                if (d->kind != AL_DEC_START && fresh[d->job] &&
                    d->why != AL_EVICT_RESERVATION)
                    churn++;
                if (d->kind == AL_DEC_START && cy == 0 && show_churn &&
                    churns(snap_get(b), 0)) {
                    snap_t *m = minimize(b, churns, 0);

                    fprintf(stderr, "    churn: iteration %d\n", it);
                    churns(snap_get(m), 1);
                    if (getenv("AL_INVARIANT_EMIT") != NULL)
                        snap_emit_c(snap_get(m));
                    if (m != b)
                        snap_destroy(m);
                    show_churn = false;
                }
            }
            for (k = 0; k < res->njobs; k++)
                fresh[k] = res_find(res, k, AL_DEC_START) != NULL;
            for (k = 0; k < res->njobs; k++)
                if ((int)res->reasons[k].code < 32)
                    reasons[res->reasons[k].code]++;
            /* Time passes (sometimes past many limits), and now and then
             * a node starts draining. */
            snap_apply(b, res,
                       snap_get(b)->now + (rpct(&r, 10)
                                               ? rrange(&r, 1000, 20000)
                                               : rrange(&r, 0, 900)));
            if (rpct(&r, 10)) {
                al_node_t *nd =
                    snap_node_ref(b, (int)rrange(&r, 0, snap_nnodes(b) - 1));

                if (nd->state == AL_NODE_READY)
                    nd->state = AL_NODE_DRAINING;
            }
            al_result_destroy(res);
        }
        free(fresh);
        snap_destroy(b);
    }
    if (al_test_verbose) {
        printf("    %d snapshots x %d cycles: %ld starts, %ld evictions\n",
               iters, CYCLES, starts, evicts);
        printf("    evictions reclaim/preempt/reservation: %ld/%ld/%ld, "
               "shrinks %ld/%ld/%ld, of jobs the previous cycle started: "
               "%ld, for a job that did not start: %ld\n",
               whys[0][0], whys[0][1], whys[0][2], whys[1][0], whys[1][1],
               whys[1][2], churn, orphan);
        printf("    reasons:");
        for (k = 0; k < 32; k++)
            if (reasons[k] != 0)
                printf(" %d:%ld", k, reasons[k]);
        printf("\n");
    }
    for (k = 0; k < nk; k++)
        fprintf(stderr,
                "    %d snapshot(s): %s\n"
                "      first: AL_INVARIANT_SEED=%llu AL_INVARIANT_FIRST=%d "
                "(cycle %d)\n",
                kinds[k].count, kinds[k].msg, (unsigned long long)sd,
                kinds[k].iter, kinds[k].cycle);
    if (bad > 0)
        AL__FAIL("%d of %d random snapshots broke an invariant", bad, iters);
    /* The generator must exercise the core, not feed it idle clusters. */
    iters -= env_int("AL_INVARIANT_FIRST", 0);
    if (iters >= 200) {
        ASSERT_GT(starts, iters);
        ASSERT_GT(evicts, 0);
    }
}

/* The checker itself must be able to fail: corrupt good results. */
static void
checker_catches(void)
{
    uint64_t sd = seed();
    int it, caught = 0, tried = 0;

    for (it = 0; it < 200 && tried < 20; it++) {
        snap_t *b = gen_snapshot(sd, it);
        al_snapshot_t *s = snap_get(b);
        al_result_t *r = NULL;
        chk_t c;
        int k;

        ASSERT_EQ(al_sched_run(s, &r, NULL), 0);
        /* Only results the checker accepts as they are. */
        for (k = check_result(s, r, &c) ? 0 : r->ndecisions; k < r->ndecisions;
             k++) {
            al_decision_t *d = &r->decisions[k];

            if (d->kind != AL_DEC_START)
                continue;
            tried++;
            if (r->ndecisions >= 2) {
                /* A second START of the same job in place of another
                 * decision: one job with two decisions. */
                int o = (k + 1) % r->ndecisions;
                al_decision_t save = r->decisions[o];

                r->decisions[o] = *d;
                caught += !check_result(s, r, &c);
                r->decisions[o] = save;
            } else {
                /* A started job that still gives a reason. */
                r->reasons[d->job].code = AL_WHY_CAPACITY;
                caught += !check_result(s, r, &c);
                r->reasons[d->job].code = AL_WHY_NONE;
            }
            ASSERT(check_result(s, r, &c));
            /* The queue accounting off by one milli-GPU. */
            tried++;
            r->queues[s->jobs[d->job].queue].allocated[AL_RES_GPU]++;
            caught += !check_result(s, r, &c);
            r->queues[s->jobs[d->job].queue].allocated[AL_RES_GPU]--;
            /* A fair share beyond the cluster. */
            tried++;
            r->queues[0].fair[AL_RES_GPU] += 1e9;
            caught += !check_result(s, r, &c);
            r->queues[0].fair[AL_RES_GPU] -= 1e9;
            /* A task moved onto a device that does not exist. */
            tried++;
            {
                uint64_t save = d->tasks[0].devices;

                d->tasks[0].devices = (uint64_t)1 << 63;
                caught += !check_result(s, r, &c);
                d->tasks[0].devices = save;
            }
            ASSERT(check_result(s, r, &c));
            break;
        }
        al_result_destroy(r);
        snap_destroy(b);
    }
    ASSERT_GE(tried, 20);
    ASSERT_EQ(caught, tried);
}

/* A running job on a device that another running job owns, written by
 * hand, is caught by the checker (its "after" state double-books). */
static void
checker_catches_double_booking(void)
{
    snap_t *b = snap_create();
    al_result_t fake;
    al_decision_t d;
    al_placement_t p = { 0, 0, 0x1, 0 };
    al_reason_t reasons[2];
    al_queue_share_t qs[1];
    chk_t c;
    int q, a, j;

    snap_node(b, "n0", 2);
    q = snap_queue(b, "q", -1, 2000, 1, AL_UNLIMITED);
    a = snap_job(b, q, 1, 1);
    snap_place(b, a, 0, 0, 0x1);
    j = snap_job(b, q, 1, 1);
    memset(&fake, 0, sizeof(fake));
    memset(&d, 0, sizeof(d));
    memset(reasons, 0, sizeof(reasons));
    memset(qs, 0, sizeof(qs));
    d.kind = AL_DEC_START;
    d.job = j;
    d.ntasks = 1;
    d.tasks = &p;
    d.for_job = -1;
    fake.ndecisions = 1;
    fake.decisions = &d;
    fake.njobs = 2;
    fake.reasons = reasons;
    fake.nqueues = 1;
    fake.queues = qs;
    fake.stats.started = 1;
    fake.stats.placements = 1;
    qs[0].allocated[AL_RES_GPU] = 2000;
    qs[0].demand[AL_RES_GPU] = 2000;
    qs[0].fair[AL_RES_GPU] = 2000;
    ASSERT(!check_result(snap_get(b), &fake, &c));
    ASSERT(strstr(c.msg, "whole owners") != NULL);
    /* On the free device it passes. */
    p.devices = 0x2;
    ASSERT(check_result(snap_get(b), &fake, &c));
    snap_destroy(b);
}

/*
 * Robustness: one random corruption of a valid snapshot (an index out of
 * range, a parent after its child, a count or enum out of range...).  The
 * core must answer AL_EINVAL with *out untouched, or succeed; never crash,
 * hang or read out of bounds (ASan and valgrind watch).  Returns what was
 * done, for the failure message.
 */
static const char *
corrupt(snap_t *b, rng_t *r)
{
    al_snapshot_t *s = snap_get(b);
    int nj = s->njobs, nn = s->nnodes, nq = s->nqueues;
    int j = nj > 0 ? (int)rrange(r, 0, nj - 1) : -1;
    int n = (int)rrange(r, 0, nn - 1), q = (int)rrange(r, 0, nq - 1);
    al_job_t *jj = j >= 0 ? snap_job_ref(b, j) : NULL;
    static al_placement_t bad[8];
    static al_dep_t dep;

    switch (rrange(r, 0, 15)) {
    case 0:
        if (jj == NULL)
            break;
        jj->queue = (int)rrange(r, 0, 1) ? nq + (int)rrange(r, 0, 3) : -2;
        return "job queue out of range";
    case 1:
        snap_queue_ref(b, q)->parent = q; /* itself: after its child */
        return "queue is its own parent";
    case 2:
        snap_queue_ref(b, q)->parent = nq + 1;
        return "queue parent out of range";
    case 3:
        if (jj == NULL || jj->state != AL_JOB_RUNNING || jj->ntasks > 8)
            break;
        memcpy(bad, jj->placement, sizeof(bad[0]) * (size_t)jj->ntasks);
        bad[rrange(r, 0, jj->ntasks - 1)].node =
            rrange(r, 0, 1) ? nn + (int)rrange(r, 0, 3) : -1;
        jj->placement = bad;
        return "placement node out of range";
    case 4:
        if (jj == NULL || jj->state != AL_JOB_RUNNING || jj->ntasks > 8)
            break;
        memcpy(bad, jj->placement, sizeof(bad[0]) * (size_t)jj->ntasks);
        bad[0].devices |= (uint64_t)1 << 63;
        jj->placement = bad;
        return "placement device out of range";
    case 5:
        if (jj == NULL)
            break;
        dep.job = rrange(r, 0, 1) ? nj + (int)rrange(r, 0, 3) : -1;
        jj->deps = &dep;
        jj->ndeps = 1;
        jj->dep_state = AL_DEPS_WAITING;
        return "dependency out of range";
    case 6:
        snap_node_ref(b, n)->ndevices =
            rrange(r, 0, 1) ? AL_MAX_DEVICES + 1 : -1;
        return "device count out of range";
    case 7:
        if (jj == NULL)
            break;
        jj->min_tasks = (int)rrange(r, -1, 0);
        return "min_tasks below 1";
    case 8:
        if (jj == NULL || jj->state == AL_JOB_RUNNING)
            break;
        jj->max_tasks = jj->min_tasks - 1;
        return "max_tasks below min_tasks";
    case 9:
        if (jj == NULL)
            break;
        jj->req.gpus = -1;
        return "negative GPU request";
    case 10:
        if (jj == NULL || jj->req.gpus > 0)
            break;
        jj->req.gpu_milli = rrange(r, 0, 1) ? 1500 : -100;
        return "fraction out of range";
    case 11:
        if (jj == NULL)
            break;
        jj->topo_mode = AL_TOPO_REQUIRED;
        jj->topo_level = rrange(r, 0, 1) ? AL_MAX_TOPO_LEVELS + 1 : -1;
        return "topology level out of range";
    case 12:
        if (jj == NULL)
            break;
        jj->state = (al_job_state_t)7;
        return "job state out of range";
    case 13:
        snap_node_ref(b, n)->state = (al_node_state_t)9;
        return "node state out of range";
    case 14:
        if (jj == NULL || jj->state != AL_JOB_RUNNING)
            break;
        jj->placement = NULL;
        return "running job without placement";
    default:
        snap_config(b)->ntopo_levels = AL_MAX_TOPO_LEVELS + 1;
        return "too many topology levels";
    }
    return NULL;
}

/* Whether `what` is new to the list of accepted corruptions (verbose
 * output prints each once). */
static bool
accepted_seen(const char *what)
{
    static const char *seen[32];
    static int nseen;
    int i;

    for (i = 0; i < nseen; i++)
        if (seen[i] == what)
            return false;
    if (nseen < 32)
        seen[nseen++] = what;
    return true;
}

static void
corrupt_snapshots(void)
{
    uint64_t sd = seed();
    int iters = env_int("AL_INVARIANT_ITERS", default_iters()) / 5, it;
    int refused = 0, tried = 0;

    for (it = 0; it < iters; it++) {
        snap_t *b = gen_snapshot(sd + 1, it);
        rng_t r = { sd ^ (uint64_t)it * 104729 };
        al_result_t *sentinel = (al_result_t *)&r, *out = sentinel;
        const char *what = corrupt(b, &r);
        int rc;

        if (what == NULL) {
            snap_destroy(b);
            continue;
        }
        tried++;
        /* snap_get() would repair the pointers just corrupted: run on the
         * snapshot as it stands. */
        rc = al_sched_run(snap_peek(b), &out, NULL);
        if (rc == AL_EINVAL) {
            refused++;
            ASSERT(out == sentinel);
        } else if (rc == 0) {
            ASSERT(out != sentinel);
            al_result_destroy(out);
            if (al_test_verbose && accepted_seen(what))
                printf("    accepted: %s\n", what);
        } else {
            snap_destroy(b);
            AL__FAIL("%s (iteration %d): %s", what, it, al_err_name(rc));
        }
        snap_destroy(b);
    }
    if (al_test_verbose)
        printf("    %d corrupted snapshots, %d refused\n", tried, refused);
    ASSERT_GT(refused, tried / 2);
}

/* Runs the checker on one cycle of s; fails the test on a broken
 * invariant. */
static void
check_one(snap_t *s)
{
    al_snapshot_t *snap = snap_get(s);
    al_result_t *r = NULL;
    chk_t c;

    ASSERT_EQ(al_sched_run(snap, &r, NULL), 0);
    if (!check_result(snap, r, &c)) {
        res_dump(snap, r);
        al_result_destroy(r);
        AL__FAIL("invariant broken: %s", c.msg);
    }
    al_result_destroy(r);
}

/*
 * Minimized random cases that once broke an invariant, kept as regression
 * tests (printed by AL_INVARIANT_MINIMIZE=1 AL_INVARIANT_EMIT=1).
 *
 * Reclaim and fractions sized by memory: d1.p2 (deserved 1 GPU) holds
 * jobs 1 (500), 4 (100) and 5 (100 milli asked, 8 of 16 GiB held: 500),
 * 1100 in all.  Evicting job 5 leaves 600, below deserved.
 */
static void
regress_reclaim_memory_fraction(void)
{
    snap_t *s = snap_create();
    al_config_t *c = snap_config(s);
    al_result_t *r;

    c->pack = 0;
    c->usage_weight = 1;
    c->reserve_depth = 0;
    c->default_runtime = 3144;
    c->lend_reserved = 1;
    c->reclaim = 1;
    c->preempt = 1;
    c->borrow = 1;
    c->strict_order = 0;
    c->ignore_queues = 0;
    c->max_reclaim_tries = 16;
    {
        static const char *const lv[] = {
            "block",
            "rack",
        };
        snap_topo_levels(s, 2, lv);
    }
    snap_set_now(s, 100579);
    snap_node(s, "n0", 8);
    snap_node_ref(s, 0)->state = 0;
    snap_node_ref(s, 0)->cpu_milli = 32000;
    snap_node_ref(s, 0)->mem_bytes = 137438953472;
    *snap_dev(s, 0, 0) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 0, 1) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 0, 2) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 0, 3) = (al_device_t){ 85899345920, 0, 0 };
    *snap_dev(s, 0, 4) = (al_device_t){ 85899345920, 1, 1 };
    *snap_dev(s, 0, 5) = (al_device_t){ 85899345920, 1, 1 };
    *snap_dev(s, 0, 6) = (al_device_t){ 85899345920, 1, 1 };
    *snap_dev(s, 0, 7) = (al_device_t){ 85899345920, 1, 1 };
    snap_node_topo(s, 0, 0, "b0");
    snap_node_topo(s, 0, 1, "r0");
    snap_node_model(s, 0, "A100");
    snap_node(s, "n4", 8);
    snap_node_ref(s, 1)->state = 0;
    snap_node_ref(s, 1)->cpu_milli = 128000;
    snap_node_ref(s, 1)->mem_bytes = 274877906944;
    *snap_dev(s, 1, 0) = (al_device_t){ 17179869184, 0, 0 };
    *snap_dev(s, 1, 1) = (al_device_t){ 17179869184, 0, 0 };
    *snap_dev(s, 1, 2) = (al_device_t){ 17179869184, 0, 0 };
    *snap_dev(s, 1, 3) = (al_device_t){ 17179869184, 0, 0 };
    *snap_dev(s, 1, 4) = (al_device_t){ 17179869184, 1, 0 };
    *snap_dev(s, 1, 5) = (al_device_t){ 17179869184, 1, 0 };
    *snap_dev(s, 1, 6) = (al_device_t){ 17179869184, 1, 0 };
    *snap_dev(s, 1, 7) = (al_device_t){ 17179869184, 1, 0 };
    snap_node_topo(s, 1, 0, "b0");
    snap_node_topo(s, 1, 1, "r1");
    snap_node_model(s, 1, "A100");
    snap_queue(s, "d0", -1, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 0)->priority = 0;
    snap_queue_ref(s, 0)->quota[0] = (al_quota_t){ 8000, -1, 3 };
    snap_queue_ref(s, 0)->quota[1] = (al_quota_t){ 0, -1, 3 };
    snap_queue_ref(s, 0)->quota[2] = (al_quota_t){ 0, -1, 3 };
    snap_queue(s, "d0.p0", 0, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 1)->priority = 0;
    snap_queue_ref(s, 1)->quota[0] = (al_quota_t){ 4000, -1, 2 };
    snap_queue_ref(s, 1)->quota[1] = (al_quota_t){ 0, -1, 2 };
    snap_queue_ref(s, 1)->quota[2] = (al_quota_t){ 0, -1, 2 };
    snap_queue(s, "d0.p1", 0, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 2)->priority = 0;
    snap_queue_ref(s, 2)->quota[0] = (al_quota_t){ 1000, -1, 1 };
    snap_queue_ref(s, 2)->quota[1] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 2)->quota[2] = (al_quota_t){ 0, -1, 1 };
    snap_queue(s, "d0.p2", 0, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 3)->priority = 0;
    snap_queue_ref(s, 3)->usage = 23042456;
    snap_queue_ref(s, 3)->quota[0] = (al_quota_t){ 0, -1, 0 };
    snap_queue_ref(s, 3)->quota[1] = (al_quota_t){ 0, -1, 0 };
    snap_queue_ref(s, 3)->quota[2] = (al_quota_t){ 0, -1, 0 };
    snap_queue(s, "d1", -1, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 4)->priority = 0;
    snap_queue_ref(s, 4)->quota[0] = (al_quota_t){ 8000, -1, 0 };
    snap_queue_ref(s, 4)->quota[1] = (al_quota_t){ 0, -1, 0 };
    snap_queue_ref(s, 4)->quota[2] = (al_quota_t){ 0, -1, 0 };
    snap_queue(s, "d1.p0", 4, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 5)->priority = 0;
    snap_queue_ref(s, 5)->quota[0] = (al_quota_t){ 1000, -1, 1 };
    snap_queue_ref(s, 5)->quota[1] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 5)->quota[2] = (al_quota_t){ 0, 137438953472, 1 };
    snap_queue(s, "d1.p1", 4, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 6)->priority = 0;
    snap_queue_ref(s, 6)->quota[0] = (al_quota_t){ 2000, -1, 1 };
    snap_queue_ref(s, 6)->quota[1] = (al_quota_t){ 0, -1, 1 };
    snap_queue_ref(s, 6)->quota[2] = (al_quota_t){ 0, -1, 1 };
    snap_queue(s, "d1.p2", 4, 0, 0, AL_UNLIMITED);
    snap_queue_ref(s, 7)->priority = 1;
    snap_queue_ref(s, 7)->quota[0] = (al_quota_t){ 1000, -1, 0 };
    snap_queue_ref(s, 7)->quota[1] = (al_quota_t){ 0, -1, 0 };
    snap_queue_ref(s, 7)->quota[2] = (al_quota_t){ 0, -1, 0 };
    snap_job(s, 3, 1, 1);
    {
        al_job_t *j = snap_job_ref(s, 0);

        j->id = 1013;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 4000;
        j->req.mem_bytes = 137438953472;
        j->submit_time = 82516;
        j->eligible_time = 0;
        j->time_limit = 13615;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 0)->dep_state = 0;
    snap_job(s, 7, 1, 0);
    {
        al_job_t *j = snap_job_ref(s, 1);

        j->id = 1017;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 500;
        j->req.gpu_mem = 34359738368;
        j->req.cpu_milli = 16000;
        j->req.mem_bytes = 34359738368;
        j->submit_time = 96898;
        j->eligible_time = 0;
        j->time_limit = 4042;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 1)->dep_state = 0;
    snap_place_frac(s, 1, 100579, 0, 4, 500, 34359738368);
    snap_job(s, 6, 1, 2);
    {
        al_job_t *j = snap_job_ref(s, 2);

        j->id = 1018;
        j->priority = 125;
        j->preemptible = 0;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 1000;
        j->req.mem_bytes = 34359738368;
        j->submit_time = 98206;
        j->eligible_time = 0;
        j->time_limit = 0;
        j->estimate = 0;
        j->min_runtime = 821;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 2)->dep_state = 0;
    snap_job(s, 6, 1, 1);
    {
        al_job_t *j = snap_job_ref(s, 3);

        j->id = 1019;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 0;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 0;
        j->req.mem_bytes = 137438953472;
        j->submit_time = 88440;
        j->eligible_time = 0;
        j->time_limit = 3466;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 3)->dep_state = 0;
    snap_job(s, 7, 1, 0);
    {
        al_job_t *j = snap_job_ref(s, 4);

        j->id = 1021;
        j->priority = 125;
        j->preemptible = 0;
        j->max_tasks = 1;
        j->req.gpu_milli = 100;
        j->req.gpu_mem = 0;
        j->req.cpu_milli = 0;
        j->req.mem_bytes = 0;
        j->submit_time = 84558;
        j->eligible_time = 0;
        j->time_limit = 0;
        j->estimate = 0;
        j->min_runtime = 763;
        j->topo_level = 0;
        j->topo_mode = 0;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 4)->dep_state = 0;
    snap_place_frac(s, 4, 100579, 0, 0, 100, 0);
    snap_job(s, 7, 1, 0);
    {
        al_job_t *j = snap_job_ref(s, 5);

        j->id = 1026;
        j->priority = 50;
        j->preemptible = 1;
        j->max_tasks = 1;
        j->req.gpu_milli = 100;
        j->req.gpu_mem = 8589934592;
        j->req.cpu_milli = 0;
        j->req.mem_bytes = 137438953472;
        j->submit_time = 98887;
        j->eligible_time = 0;
        j->time_limit = 17751;
        j->estimate = 0;
        j->min_runtime = 0;
        j->topo_level = 0;
        j->topo_mode = 2;
        j->checkpoint_time = 0;
        j->lent = 0;
    }
    snap_job_ref(s, 5)->dep_state = 0;
    snap_place_frac(s, 5, 100579, 1, 2, 500, 8589934592);
    check_one(s);
    snap_destroy(s);
    (void)c;
    (void)r;
}

static void
alloc_failures(void)
{
    uint64_t sd = seed();
    int iters = env_int("AL_INVARIANT_ITERS", default_iters()) / 30, it;
    long most = 0;

    if (iters < 3)
        iters = 3;
    for (it = 0; it < iters; it++) {
        snap_t *b = gen_snapshot(sd, it * 7);
        al_snapshot_t *s = snap_get(b);
        al_result_t *ref = NULL;
        long n;

        ASSERT_EQ(al_sched_run(s, &ref, NULL), 0);
        n = inject_failures(s, ref);
        if (n > most)
            most = n;
        al_result_destroy(ref);
        snap_destroy(b);
    }
    ASSERT_GT(most, 1);
    if (al_test_verbose)
        printf("    %d snapshots, up to %ld allocations per cycle\n", iters,
               most);
}

/* Failure injection on a cycle that reclaims, preempts and reserves. */
static void
alloc_failures_busy(void)
{
    snap_t *b = snap_create();
    al_config_t *c = snap_config(b);
    al_result_t *ref = NULL;
    int susan, joe, i, j, g;

    c->reserve_depth = 2;
    c->lend_reserved = true;
    snap_node(b, "n0", 4);
    snap_node(b, "n1", 4);
    susan = snap_queue(b, "susan", -1, 2000, 1, AL_UNLIMITED);
    joe = snap_queue(b, "joe", -1, 2000, 1, AL_UNLIMITED);
    for (i = 0; i < 8; i++) {
        j = snap_job(b, susan, 1, 1);
        snap_place(b, j, 10 * i, i / 4, (uint64_t)1 << (i % 4));
        snap_job_ref(b, j)->time_limit = 5000;
    }
    snap_job(b, joe, 1, 1);
    snap_job(b, joe, 1, 1);
    snap_job_build(b, susan, 1, 1);
    g = snap_job(b, susan, 2, 4);
    snap_job_ref(b, g)->time_limit = 100;
    snap_job_frac(b, joe, 500, 0);
    snap_set_now(b, 1000);
    ASSERT_EQ(al_sched_run(snap_get(b), &ref, NULL), 0);
    ASSERT_GT(ref->ndecisions, 0);
    ASSERT_GT(inject_failures(snap_get(b), ref), 1);
    al_result_destroy(ref);
    snap_destroy(b);
}

/* The generator is deterministic and its snapshots are valid. */
static void
generator_sane(void)
{
    int it;

    for (it = 0; it < 50; it++) {
        snap_t *a = gen_snapshot(7, it), *b = gen_snapshot(7, it);
        al_snapshot_t *x = snap_get(a), *y = snap_get(b);
        usage_t u;
        int i, q, res;

        ASSERT_EQ(x->nnodes, y->nnodes);
        ASSERT_EQ(x->njobs, y->njobs);
        ASSERT_EQ(x->nqueues, y->nqueues);
        for (i = 0; i < x->njobs; i++) {
            ASSERT_EQ(x->jobs[i].ntasks, y->jobs[i].ntasks);
            ASSERT_EQ(x->jobs[i].req.gpus, y->jobs[i].req.gpus);
            ASSERT_EQ(x->jobs[i].state, y->jobs[i].state);
        }
        /* Running work respects capacity and limits before any cycle. */
        usage_init(&u, x);
        for (i = 0; i < x->njobs; i++)
            if (x->jobs[i].state == AL_JOB_RUNNING)
                usage_add(&u, x, &x->jobs[i], x->jobs[i].placement,
                          x->jobs[i].ntasks, 1);
        for (i = 0; i < u.dev_off[x->nnodes]; i++) {
            ASSERT_LE(u.owners[i], 1);
            ASSERT_LE(u.milli[i], AL_GPU_MILLI);
        }
        for (q = 0; q < x->nqueues; q++)
            for (res = 0; res < AL_NRES; res++)
                if (x->queues[q].quota[res].limit != AL_UNLIMITED)
                    ASSERT_LE(u.q[q][res], x->queues[q].quota[res].limit);
        usage_fini(&u);
        snap_destroy(a);
        snap_destroy(b);
    }
}

const al_test_t test_invariants[] = {
    { "generator_sane", generator_sane },
    { "checker_catches", checker_catches },
    { "checker_catches_double_booking", checker_catches_double_booking },
    { "random_snapshots", random_snapshots },
    { "regress_reclaim_memory_fraction", regress_reclaim_memory_fraction },
    { "corrupt_snapshots", corrupt_snapshots },
    { "alloc_failures", alloc_failures },
    { "alloc_failures_busy", alloc_failures_busy },
    { NULL, NULL },
};
