/*
 * core.c -- bench/core: how fast the scheduling core runs one cycle.
 *
 * The program generates a cluster (nodes of 8 GPUs in racks of 32 nodes and
 * blocks of 16 racks), 50 leaf queues in two levels and a backlog of gang
 * jobs, then times al_sched_run() on two kinds of snapshot:
 *
 *   fill  an empty cluster and the pending backlog: the cycle places as much
 *         of the backlog as fits;
 *   full  a cluster already full of running jobs and the pending backlog.
 *         The running jobs come from a fill cycle over a separate set of
 *         jobs whose START decisions are applied, with start times spread
 *         over the past day.
 *
 * Each case runs in a forked child, so that the peak RSS it reports is its
 * own, and prints one JSON line.  The core allocates through a counting
 * allocator, which gives the peak bytes the core holds during the cycle.
 * Two series of cycles run on the same snapshot: "cold", where every block
 * goes back to libc between cycles (the headline figure), and "warm", where
 * freed blocks are kept for the next cycle, so the two can be compared.
 * The decisions are checked for GPUs handed out twice and for determinism.
 * The first line of output describes the conditions (CPU, compiler, build).
 * See bench/README.md for the figures and how to read them.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

#ifndef BENCH_BUILDTYPE
#define BENCH_BUILDTYPE "unknown"
#endif

#define GPUS_PER_NODE 8
#define NODES_PER_RACK 32
#define RACKS_PER_BLOCK 16
#define NDEPTS 5
#define PROJECTS_PER_DEPT 10
#define NLEAVES (NDEPTS * PROJECTS_PER_DEPT)
#define NQUEUES (NDEPTS + NLEAVES)
#define DAY 86400
#define GIB ((int64_t)1 << 30)
#define MAX_REPS 100

/* Per node: 128 cores, 2 TiB; per GPU of a task: 12 cores, 192 GiB. */
#define NODE_CPU_MILLI 128000
#define NODE_MEM (2048 * GIB)
#define TASK_CPU_PER_GPU 12000
#define TASK_MEM_PER_GPU (192 * GIB)

/* The snapshot's clock; any value far from 0 will do. */
#define NOW ((int64_t)1700000000)

/* ------------------------------------------------------------------ */
/* Helpers                                                            */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));

static void
die(const char *fmt, ...)
{
    va_list ap;

    fputs("bench/core: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *
xmalloc(size_t n)
{
    void *p = malloc(n == 0 ? 1 : n);

    if (p == NULL)
        die("out of memory (%zu bytes)", n);
    return p;
}

static void *
xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n == 0 ? 1 : n, sz == 0 ? 1 : sz);

    if (p == NULL)
        die("out of memory (%zu x %zu bytes)", n, sz);
    return p;
}

static void *
xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL)
        die("out of memory (%zu bytes)", n);
    return p;
}

static double
clock_s(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
mono_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of the process, user and system: unlike the wall clock, it does
 * not count time spent waiting for a CPU that other work holds. */
static double
cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static double
peak_rss_mb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Prints s as a JSON string. */
static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A small, fast, deterministic generator (splitmix64). */
struct rng {
    uint64_t s;
};

static uint64_t
rnd(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. */
static int64_t
rnd_below(struct rng *r, int64_t n)
{
    return (int64_t)(rnd(r) % (uint64_t)n);
}

/* ------------------------------------------------------------------ */
/* Counting allocator                                                 */

/*
 * Every block carries a header holding its size, so that free() can
 * subtract it; the header is rounded up to the strictest alignment so that
 * the core's pointers stay aligned.  Only the core allocates through it.
 *
 * With `keep` set, freed blocks are not returned to libc but kept on a list
 * and handed out again (best fit) for a request they can hold.  A cycle then
 * reuses the pages of the previous one instead of faulting in fresh ones, as
 * a daemon that keeps its memory between cycles would.  Plain malloc/free
 * does not: glibc serves the core's large blocks with mmap, or trims the
 * heap once they are freed, and the next cycle pays the page faults again.
 */
struct hdr {
    size_t size;      /* bytes asked for */
    size_t cap;       /* bytes the block can hold */
    struct hdr *next; /* on the kept list, when free */
};

#define ALIGN_MAX (_Alignof(max_align_t))
#define HDR_SIZE ((sizeof(struct hdr) + ALIGN_MAX - 1) / ALIGN_MAX * ALIGN_MAX)

struct counter {
    al_allocator_t a; /* count_malloc/count_free on this counter */
    bool keep;        /* keep freed blocks for reuse */
    size_t cur;       /* bytes held now */
    size_t peak;      /* most bytes held at once since the last reset */
    size_t calls;     /* malloc calls since the last reset */
    struct hdr *kept; /* freed blocks, when keep is set */
};

static void *
count_malloc(void *ctx, size_t size)
{
    struct counter *c = ctx;
    struct hdr *h = NULL, **pp, **best = NULL;

    if (size > SIZE_MAX - HDR_SIZE)
        return NULL;
    for (pp = &c->kept; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->cap >= size && (best == NULL || (*pp)->cap < (*best)->cap))
            best = pp;
    if (best != NULL) {
        h = *best;
        *best = h->next;
    } else {
        h = malloc(HDR_SIZE + size);
        if (h == NULL)
            return NULL;
        h->cap = size;
    }
    h->size = size;
    c->cur += size;
    c->calls++;
    if (c->cur > c->peak)
        c->peak = c->cur;
    return (unsigned char *)h + HDR_SIZE;
}

static void
count_free(void *ctx, void *ptr)
{
    struct counter *c = ctx;
    struct hdr *h;

    if (ptr == NULL)
        return;
    h = (struct hdr *)(void *)((unsigned char *)ptr - HDR_SIZE);
    c->cur -= h->size;
    if (c->keep) {
        h->next = c->kept;
        c->kept = h;
    } else {
        free(h);
    }
}

/* The allocator lives in the counter because the core's result keeps a
 * pointer to it: it must outlive every result allocated through it. */
static void
counter_init(struct counter *c, bool keep)
{
    memset(c, 0, sizeof(*c));
    c->a.malloc = count_malloc;
    c->a.free = count_free;
    c->a.ctx = c;
    c->keep = keep;
}

/* Returns the kept blocks to libc. */
static void
counter_fini(struct counter *c)
{
    struct hdr *h, *next;

    for (h = c->kept; h != NULL; h = next) {
        next = h->next;
        free(h);
    }
    c->kept = NULL;
}

/* ------------------------------------------------------------------ */
/* The generated world                                                */

/* Two device layouts: one NVLink domain of 8, or two of 4.  NUMA node 0
 * holds devices 0-3, NUMA node 1 devices 4-7. */
#define DEV(dom, node)                                                         \
    {                                                                          \
        .mem_bytes = 80 * GIB, .numa = (node), .nvlink = (dom)                 \
    }
static const al_device_t devs_nv8[GPUS_PER_NODE] = {
    DEV(0, 0), DEV(0, 0), DEV(0, 0), DEV(0, 0),
    DEV(0, 1), DEV(0, 1), DEV(0, 1), DEV(0, 1),
};
static const al_device_t devs_nv4[GPUS_PER_NODE] = {
    DEV(0, 0), DEV(0, 0), DEV(0, 0), DEV(0, 0),
    DEV(1, 1), DEV(1, 1), DEV(1, 1), DEV(1, 1),
};

static const char *const topo_levels[] = { "block", "rack" };
enum { LEVEL_BLOCK = 0, LEVEL_RACK = 1 };

/* The gang mix, skewed toward small jobs: GPUs per job and percent of jobs.
 * The mean is 6.04 GPUs per job. */
static const struct {
    int gpus;
    int pct;
} size_mix[] = {
    { 1, 40 }, { 2, 20 }, { 4, 15 }, { 8, 12 }, { 16, 7 }, { 32, 4 }, { 64, 2 },
};

/* Departments' share of the cluster, in percent. */
static const int dept_pct[NDEPTS] = { 30, 25, 20, 15, 10 };

struct world {
    int nnodes;
    al_node_t *nodes;
    char *names; /* node, rack and block names */
    al_queue_t queues[NQUEUES];
    char queue_names[NQUEUES][16];
    int64_t leaf_cum[NLEAVES]; /* cumulative activity, to pick a job's queue */
    int njobs;
    int nrunning; /* running jobs come first in jobs */
    al_job_t *jobs;
    al_dep_t *deps;              /* pending jobs' dependencies, one each */
    al_placement_t **placements; /* running jobs' placements, one per job */
    al_config_t cfg;
    int64_t total_gpus;
};

static void
gen_nodes(struct world *w, int n)
{
    int nracks = (n + NODES_PER_RACK - 1) / NODES_PER_RACK;
    int nblocks = (nracks + RACKS_PER_BLOCK - 1) / RACKS_PER_BLOCK;
    size_t len = 16;
    char *rack, *block;
    int i;

    w->nnodes = n;
    w->nodes = xcalloc((size_t)n, sizeof(*w->nodes));
    w->names = xmalloc(((size_t)n + (size_t)nracks + (size_t)nblocks) * len);
    rack = w->names + (size_t)n * len;
    block = rack + (size_t)nracks * len;
    for (i = 0; i < nracks; i++)
        snprintf(rack + (size_t)i * len, len, "rack-%d", i);
    for (i = 0; i < nblocks; i++)
        snprintf(block + (size_t)i * len, len, "block-%d", i);
    for (i = 0; i < n; i++) {
        al_node_t *nd = &w->nodes[i];
        int r = i / NODES_PER_RACK, b = r / RACKS_PER_BLOCK;

        snprintf(w->names + (size_t)i * len, len, "node%06d", i);
        nd->name = w->names + (size_t)i * len;
        nd->pool = NULL;
        nd->gpu_model = "H100-80GB";
        nd->topo[LEVEL_BLOCK] = block + (size_t)b * len;
        nd->topo[LEVEL_RACK] = rack + (size_t)r * len;
        nd->state = AL_NODE_READY;
        nd->cpu_milli = NODE_CPU_MILLI;
        nd->mem_bytes = NODE_MEM;
        nd->ndevices = GPUS_PER_NODE;
        /* Alternate racks have NVLink domains of 8 and of 4. */
        nd->devices = r % 2 == 0 ? devs_nv8 : devs_nv4;
    }
    w->total_gpus = (int64_t)n * GPUS_PER_NODE;
}

/*
 * 5 departments of 10 projects.  Departments split the cluster by dept_pct;
 * projects split their department by random weights.  Deserved quotas add
 * up to the capacity; over-quota weights vary; every 7th project has a GPU
 * limit of twice its deserved quota.  Job activity per project is drawn
 * independently of quota, so some queues want more than they deserve.
 */
static void
gen_queues(struct world *w, struct rng *r)
{
    int64_t cap[AL_NRES];
    int64_t act = 0;
    int d, p, k;

    cap[AL_RES_GPU] = w->total_gpus * AL_GPU_MILLI;
    cap[AL_RES_CPU] = (int64_t)w->nnodes * NODE_CPU_MILLI;
    cap[AL_RES_MEM] = (int64_t)w->nnodes * NODE_MEM;
    for (d = 0; d < NDEPTS; d++) {
        al_queue_t *q = &w->queues[d];
        int wsum = 0, wp[PROJECTS_PER_DEPT];

        snprintf(w->queue_names[d], sizeof(w->queue_names[d]), "dept%d", d);
        q->name = w->queue_names[d];
        q->parent = -1;
        for (k = 0; k < AL_NRES; k++) {
            q->quota[k].deserved = cap[k] / 100 * dept_pct[d];
            q->quota[k].limit = AL_UNLIMITED;
            q->quota[k].weight = 1.0;
        }
        for (p = 0; p < PROJECTS_PER_DEPT; p++) {
            wp[p] = 1 + (int)rnd_below(r, 4);
            wsum += wp[p];
        }
        for (p = 0; p < PROJECTS_PER_DEPT; p++) {
            int qi = NDEPTS + d * PROJECTS_PER_DEPT + p;
            al_queue_t *c = &w->queues[qi];
            double weight = 1.0 + (double)rnd_below(r, 3);

            snprintf(w->queue_names[qi], sizeof(w->queue_names[qi]),
                     "proj%d-%d", d, p);
            c->name = w->queue_names[qi];
            c->parent = d;
            for (k = 0; k < AL_NRES; k++) {
                c->quota[k].deserved = q->quota[k].deserved / wsum * wp[p];
                c->quota[k].limit = AL_UNLIMITED;
                c->quota[k].weight = weight;
            }
            if ((qi - NDEPTS) % 7 == 3)
                c->quota[AL_RES_GPU].limit = 2 * c->quota[AL_RES_GPU].deserved;
            /* Up to half a day of its deserved GPUs, decayed. */
            c->usage = (double)rnd_below(r, DAY / 2) *
                       (double)c->quota[AL_RES_GPU].deserved;
            act += 1 + rnd_below(r, 8);
            w->leaf_cum[qi - NDEPTS] = act;
        }
    }
}

static int
pick_queue(const struct world *w, struct rng *r)
{
    int64_t x = rnd_below(r, w->leaf_cum[NLEAVES - 1]);
    int i;

    for (i = 0; i < NLEAVES - 1 && x >= w->leaf_cum[i]; i++)
        ;
    return NDEPTS + i;
}

/*
 * A pending job: a gang from size_mix; 1 in 6 of the 1- and 2-GPU jobs is a
 * non-preemptible build session, the rest are preemptible train jobs.
 * Gangs above 8 GPUs are tasks of 8 GPUs that prefer one rack; half the
 * 64-GPU gangs require one.  One in 20 train gangs is elastic (up to twice
 * its tasks).
 */
static void
gen_job(const struct world *w, struct rng *r, al_job_t *j, uint64_t id)
{
    int x = (int)rnd_below(r, 100), gpus = 0, tasks, gpt;
    size_t i;

    for (i = 0; i < sizeof(size_mix) / sizeof(size_mix[0]); i++) {
        gpus = size_mix[i].gpus;
        if (x < size_mix[i].pct)
            break;
        x -= size_mix[i].pct;
    }
    gpt = gpus < GPUS_PER_NODE ? gpus : GPUS_PER_NODE;
    tasks = gpus / gpt;

    memset(j, 0, sizeof(*j));
    j->id = id;
    j->queue = pick_queue(w, r);
    if (gpus <= 2 && rnd_below(r, 6) == 0) {
        j->priority = AL_PRIO_BUILD;
        j->preemptible = false;
        j->time_limit = 3600 * (1 + rnd_below(r, 8));
    } else {
        j->priority = AL_PRIO_TRAIN;
        j->preemptible = true;
        j->time_limit = 3600 * (1 + rnd_below(r, 48));
        j->min_runtime = 600;
    }
    j->min_tasks = tasks;
    j->max_tasks = tasks;
    if (j->preemptible && tasks >= 2 && rnd_below(r, 20) == 0)
        j->max_tasks = 2 * tasks;
    j->req.gpus = gpt;
    j->req.cpu_milli = (int64_t)gpt * TASK_CPU_PER_GPU;
    j->req.mem_bytes = (int64_t)gpt * TASK_MEM_PER_GPU;
    j->submit_time = NOW - 1 - rnd_below(r, DAY);
    if (rnd_below(r, 2) == 0)
        j->estimate = j->time_limit * (3 + rnd_below(r, 7)) / 10;
    if (gpus > GPUS_PER_NODE) {
        j->topo_level = LEVEL_RACK;
        j->topo_mode = gpus == 64 && rnd_below(r, 2) == 0 ? AL_TOPO_REQUIRED
                                                          : AL_TOPO_PREFERRED;
    }
    j->state = AL_JOB_PENDING;
}

static int64_t
job_gpus(const al_job_t *j, int tasks)
{
    return (int64_t)tasks * j->req.gpus;
}

/* Appends n pending jobs with ids from first_id; 3% wait for an earlier
 * pending job (from `base` on), 1% are held. */
static void
add_pending(struct world *w, struct rng *r, int base, int n, uint64_t first_id)
{
    int i;

    w->deps = xcalloc((size_t)n, sizeof(*w->deps));
    for (i = 0; i < n; i++) {
        al_job_t *j = &w->jobs[w->njobs];
        int64_t x;

        gen_job(w, r, j, first_id + (uint64_t)i);
        x = rnd_below(r, 100);
        if (x < 3 && i > 0) {
            w->deps[i].job = base + (int32_t)rnd_below(r, i);
            j->dep_state = AL_DEPS_WAITING;
            j->ndeps = 1;
            j->deps = &w->deps[i];
        } else if (x == 3) {
            j->state = AL_JOB_HELD;
        }
        w->njobs++;
    }
}

static void
snapshot_of(const struct world *w, const al_allocator_t *a, al_snapshot_t *s)
{
    memset(s, 0, sizeof(*s));
    s->now = NOW;
    s->config = &w->cfg;
    s->allocator = a;
    s->nnodes = w->nnodes;
    s->nodes = w->nodes;
    s->nqueues = NQUEUES;
    s->queues = w->queues;
    s->njobs = w->njobs;
    s->jobs = w->jobs;
}

/* ------------------------------------------------------------------ */
/* Checking decisions                                                 */

/*
 * Applies the cycle's decisions to the per-node masks of used devices
 * (evictions first, then starts) and returns how many started tasks landed
 * on a device already in use.  A correct core gives 0; the check is cheap
 * and catches a broken core before its figures mislead anyone.
 */
static int64_t
apply_masks(const struct world *w, const al_result_t *res, uint64_t *used)
{
    int64_t bad = 0;
    int i, t;

    for (i = 0; i < res->ndecisions; i++) {
        const al_decision_t *d = &res->decisions[i];
        const al_job_t *j = &w->jobs[d->job];
        int from = 0;

        if (d->kind == AL_DEC_START)
            continue;
        if (d->kind == AL_DEC_SHRINK)
            from = j->ntasks - d->ntasks;
        for (t = from < 0 ? 0 : from; t < j->ntasks; t++)
            used[j->placement[t].node] &= ~j->placement[t].devices;
    }
    for (i = 0; i < res->ndecisions; i++) {
        const al_decision_t *d = &res->decisions[i];

        if (d->kind != AL_DEC_START)
            continue;
        for (t = 0; t < d->ntasks; t++) {
            const al_placement_t *p = &d->tasks[t];

            if (p->node < 0 || p->node >= w->nnodes) {
                bad++;
                continue;
            }
            if (used[p->node] & p->devices)
                bad++;
            used[p->node] |= p->devices;
        }
    }
    return bad;
}

static int64_t
count_used(const struct world *w, const uint64_t *used)
{
    int64_t n = 0;
    int i;

    for (i = 0; i < w->nnodes; i++)
        n += __builtin_popcountll(used[i]);
    return n;
}

/* FNV-1a over the decisions and reasons, to check that reps agree. */
static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    while (n-- > 0)
        h = (h ^ *b++) * 0x100000001b3ULL;
    return h;
}

static uint64_t
result_hash(const al_result_t *res)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int i, t;

    for (i = 0; i < res->ndecisions; i++) {
        const al_decision_t *d = &res->decisions[i];
        int32_t v[4] = { (int32_t)d->kind, d->job, d->ntasks, d->for_job };

        h = fnv(h, v, sizeof(v));
        for (t = 0; d->kind == AL_DEC_START && t < d->ntasks; t++) {
            h = fnv(h, &d->tasks[t].node, sizeof(d->tasks[t].node));
            h = fnv(h, &d->tasks[t].devices, sizeof(d->tasks[t].devices));
        }
    }
    for (i = 0; i < res->njobs; i++)
        h = fnv(h, &res->reasons[i].code, sizeof(res->reasons[i].code));
    return h;
}

/* ------------------------------------------------------------------ */
/* Building the full cluster                                          */

/*
 * Fills the empty cluster: generates jobs worth 125% of its GPUs, runs one
 * cycle and keeps the jobs it started as running jobs with their
 * placements, started at times spread over the past day (within their time
 * limits).  Returns the number of running jobs, stored at the front of
 * w->jobs; *overcommit counts devices the fill cycle handed out twice.
 */
static int
fill_cluster(struct world *w, struct rng *r, int pending, int64_t *overcommit,
             double *fill_ms)
{
    al_snapshot_t snap;
    al_result_t *res = NULL;
    char *cause = NULL;
    int64_t want = w->total_gpus * 5 / 4, have = 0;
    uint64_t *used = xcalloc((size_t)w->nnodes, sizeof(*used));
    al_job_t *filler = NULL;
    int nfill = 0, cap = 0, nrun = 0, i, err;
    double t0;

    while (have < want) {
        if (nfill == cap) {
            cap = cap == 0 ? 1024 : cap * 2;
            filler = xrealloc(filler, (size_t)cap * sizeof(*filler));
        }
        gen_job(w, r, &filler[nfill], (uint64_t)nfill + 1);
        /* The running population was submitted earlier than the backlog. */
        filler[nfill].submit_time -= DAY;
        have += job_gpus(&filler[nfill], filler[nfill].min_tasks);
        nfill++;
    }
    w->jobs = filler;
    w->njobs = nfill;
    snapshot_of(w, NULL, &snap);
    t0 = mono_s();
    err = al_sched_run(&snap, &res, &cause);
    *fill_ms = (mono_s() - t0) * 1e3;
    if (err != 0)
        die("fill cycle for the full case: %s: %s", al_err_name(err),
            cause != NULL ? cause : al_strerror(err));
    *overcommit = apply_masks(w, res, used);

    /* The running jobs first, then room for the pending backlog. */
    w->jobs =
        xcalloc((size_t)res->ndecisions + (size_t)pending, sizeof(*w->jobs));
    w->placements = xcalloc((size_t)res->ndecisions, sizeof(*w->placements));
    for (i = 0; i < res->ndecisions; i++) {
        const al_decision_t *d = &res->decisions[i];
        al_job_t *j = &w->jobs[nrun];
        int64_t span;

        if (d->kind != AL_DEC_START)
            continue;
        *j = filler[d->job];
        w->placements[nrun] = xmalloc((size_t)d->ntasks * sizeof(*d->tasks));
        memcpy(w->placements[nrun], d->tasks,
               (size_t)d->ntasks * sizeof(*d->tasks));
        j->state = AL_JOB_RUNNING;
        j->ntasks = d->ntasks;
        j->placement = w->placements[nrun];
        j->lent = d->lent;
        span = j->time_limit - 120 < DAY ? j->time_limit - 120 : DAY;
        j->start_time = NOW - 60 - rnd_below(r, span);
        j->submit_time = j->start_time - rnd_below(r, DAY);
        if (j->preemptible && rnd_below(r, 2) == 0)
            j->checkpoint_time =
                j->start_time + rnd_below(r, NOW - j->start_time);
        nrun++;
    }
    w->njobs = nrun;
    al_result_destroy(res);
    free(filler);
    free(used);
    return nrun;
}

/* ------------------------------------------------------------------ */
/* Cases                                                              */

struct opts {
    const char *only_case; /* NULL: both */
    int nodes;             /* 0: 1k and 10k */
    int pending;           /* 0: 10k and 100k */
    int reps;
    double budget_s; /* stop repeating once the cycles took this long */
    int timeout_s;   /* kill a case that takes longer */
    uint64_t seed;
    bool fork;
};

/* Reasons counted by code; named with al_reason_name(). */
#define NWHY ((int)AL_WHY_COUNT)

/* Cycle times of one series of reps, each sorted once the reps are done. */
struct timing {
    int reps;
    double ms[MAX_REPS];     /* wall clock */
    double cpu_ms[MAX_REPS]; /* process CPU time */
};

/* What one case measured. */
struct figures {
    struct timing cold; /* plain malloc/free: what al_default_allocator gives */
    struct timing warm; /* freed blocks kept and reused between cycles */
    size_t peak;        /* most bytes the core held during any cycle */
    size_t calls;       /* allocator calls in one cycle */
    uint64_t hash;      /* of the first cycle's decisions and reasons */
    bool hashed;        /* hash is set */
    bool deterministic; /* every cycle gave the same decisions and reasons */
    double setup_s;     /* generating the snapshot (and the fill cycle) */
    double rss_before;  /* peak RSS before the first measured cycle */
    double fill_ms;     /* full case: the fill cycle that built it */
    int64_t fill_over;  /* full case: devices that cycle handed out twice */
    /* From the first series' last result. */
    int ndecisions, nreservations, considered, reclaim_tries;
    int64_t placements, started, evictions, used_before, used_after, over;
    int64_t why[NWHY + 1]; /* reasons of the snapshot's non-running jobs */
};

/* Builds the snapshot of a case: nodes and queues, then for "full" the
 * running jobs, then the pending backlog. */
static void
world_build(struct world *w, struct rng *r, bool full, int nodes, int pending,
            struct figures *f)
{
    int nrun = 0;

    memset(w, 0, sizeof(*w));
    al_config_default(&w->cfg);
    w->cfg.ntopo_levels = 2;
    w->cfg.topo_levels = topo_levels;
    gen_nodes(w, nodes);
    gen_queues(w, r);
    if (full)
        nrun = fill_cluster(w, r, pending, &f->fill_over, &f->fill_ms);
    else
        w->jobs = xcalloc((size_t)pending, sizeof(*w->jobs));
    w->nrunning = nrun;
    add_pending(w, r, nrun, pending, (uint64_t)10000000);
}

static void
world_free(struct world *w)
{
    int i;

    for (i = 0; i < w->nrunning; i++)
        free(w->placements[i]);
    free(w->placements);
    free(w->jobs);
    free(w->deps);
    free(w->nodes);
    free(w->names);
}

/*
 * Runs the cycle up to o->reps times (at least once, and no more once the
 * cycles took o->budget_s in all), after `warmup` unmeasured cycles, and
 * returns the last result, allocated through c.  Each cycle starts with the
 * counter's peak reset, so the peak is the cycle's own.
 */
static al_result_t *
time_cycles(const struct opts *o, const struct world *w, struct counter *c,
            int warmup, struct timing *t, struct figures *f)
{
    al_snapshot_t snap;
    al_result_t *res = NULL;
    char *cause = NULL;
    double total = 0;

    snapshot_of(w, &c->a, &snap);
    t->reps = 0;
    while (t->reps < o->reps && (t->reps == 0 || total < o->budget_s)) {
        double t0, c0, ms, cpu_ms;
        uint64_t h;
        int err;

        al_result_destroy(res);
        res = NULL;
        c->peak = c->cur;
        c->calls = 0;
        c0 = cpu_s();
        t0 = mono_s();
        err = al_sched_run(&snap, &res, &cause);
        ms = (mono_s() - t0) * 1e3;
        cpu_ms = (cpu_s() - c0) * 1e3;
        if (err != 0)
            die("cycle: %s: %s", al_err_name(err),
                cause != NULL ? cause : al_strerror(err));
        if (c->peak > f->peak)
            f->peak = c->peak;
        f->calls = c->calls;
        h = result_hash(res);
        if (!f->hashed)
            f->hash = h;
        else if (h != f->hash)
            f->deterministic = false;
        f->hashed = true;
        if (warmup > 0) {
            warmup--;
            continue;
        }
        t->ms[t->reps] = ms;
        t->cpu_ms[t->reps++] = cpu_ms;
        total += ms / 1e3;
    }
    qsort(t->ms, (size_t)t->reps, sizeof(t->ms[0]), cmp_double);
    qsort(t->cpu_ms, (size_t)t->reps, sizeof(t->cpu_ms[0]), cmp_double);
    return res;
}

/* Counts what the result decided, and checks it against the GPUs in use. */
static void
tally(const struct world *w, const al_result_t *res, struct figures *f)
{
    uint64_t *used = xcalloc((size_t)w->nnodes, sizeof(*used));
    int i, t;

    for (i = 0; i < w->nrunning; i++)
        for (t = 0; t < w->jobs[i].ntasks; t++)
            used[w->jobs[i].placement[t].node] |=
                w->jobs[i].placement[t].devices;
    f->used_before = count_used(w, used);
    f->over = apply_masks(w, res, used);
    f->used_after = count_used(w, used);
    free(used);
    for (i = 0; i < res->ndecisions; i++) {
        if (res->decisions[i].kind == AL_DEC_START) {
            f->started++;
            f->placements += res->decisions[i].ntasks;
        } else {
            f->evictions++;
        }
    }
    f->ndecisions = res->ndecisions;
    f->nreservations = res->nreservations;
    f->considered = res->stats.considered;
    f->reclaim_tries = res->stats.reclaim_tries;
    for (i = 0; i < res->njobs && i < w->njobs; i++) {
        int c = (int)res->reasons[i].code;

        if (w->jobs[i].state != AL_JOB_RUNNING)
            f->why[c >= 0 && c < NWHY ? c : NWHY]++;
    }
}

/* Median of n sorted values. */
static double
median(const double *v, int n)
{
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double
per_s(int64_t n, double ms)
{
    return ms > 0 ? (double)n / (ms / 1e3) : 0.0;
}

/* Prints the case's JSON line. */
static void
print_figures(const struct opts *o, const struct world *w, bool full,
              const struct figures *f)
{
    int gpus = w->nnodes * GPUS_PER_NODE, pending = w->njobs - w->nrunning;
    double cold = median(f->cold.ms, f->cold.reps);
    double warm = median(f->warm.ms, f->warm.reps);
    double cold_cpu = median(f->cold.cpu_ms, f->cold.reps);
    double warm_cpu = median(f->warm.cpu_ms, f->warm.reps);
    int i, first = 1;

    printf("{\"case\":\"%s\",\"nodes\":%d,\"gpus\":%d,\"pending\":%d,"
           "\"running\":%d,\"jobs\":%d,\"reps\":%d,",
           full ? "full" : "fill", w->nnodes, gpus, pending, w->nrunning,
           w->njobs, f->cold.reps);
    printf("\"cycle_ms\":%.3f,\"cycle_ms_min\":%.3f,\"cycle_ms_max\":%.3f,",
           cold, f->cold.ms[0], f->cold.ms[f->cold.reps - 1]);
    printf("\"placements\":%" PRId64 ",\"placements_per_s\":%.0f,",
           f->placements, per_s(f->placements, cold));
    printf("\"cycle_cpu_ms\":%.3f,\"cycle_cpu_ms_min\":%.3f,"
           "\"placements_per_cpu_s\":%.0f,",
           cold_cpu, f->cold.cpu_ms[0], per_s(f->placements, cold_cpu));
    printf("\"cycle_ms_warm\":%.3f,\"cycle_ms_warm_min\":%.3f,"
           "\"cycle_cpu_ms_warm\":%.3f,\"placements_per_s_warm\":%.0f,"
           "\"warm_vs_cold\":%.2f,",
           warm, f->warm.ms[0], warm_cpu, per_s(f->placements, warm),
           cold > 0 ? warm / cold : 0.0);
    printf("\"started\":%" PRId64 ",\"decisions\":%d,\"evictions\":%" PRId64
           ",\"reservations\":%d,\"considered\":%d,\"reclaim_tries\":%d,",
           f->started, f->ndecisions, f->evictions, f->nreservations,
           f->considered, f->reclaim_tries);
    printf("\"gpu_util_before\":%.4f,\"gpu_util_after\":%.4f,",
           (double)f->used_before / gpus, (double)f->used_after / gpus);
    printf("\"core_peak_mb\":%.2f,\"core_bytes_per_pending\":%.0f,"
           "\"core_bytes_per_job\":%.0f,\"core_mallocs\":%zu,",
           (double)f->peak / (1024.0 * 1024.0), (double)f->peak / pending,
           (double)f->peak / w->njobs, f->calls);
    printf("\"peak_rss_mb\":%.1f,\"rss_before_cycle_mb\":%.1f,"
           "\"setup_s\":%.2f,",
           peak_rss_mb(), f->rss_before, f->setup_s);
    if (full)
        printf("\"fill_cycle_ms\":%.1f,\"fill_overcommit\":%" PRId64 ",",
               f->fill_ms, f->fill_over);
    printf("\"overcommit\":%" PRId64 ",\"deterministic\":%s,\"why\":{", f->over,
           f->deterministic ? "true" : "false");
    for (i = 0; i <= NWHY; i++) {
        if (f->why[i] == 0)
            continue;
        printf("%s\"%s\":%" PRId64, first ? "" : ",",
               i < NWHY ? al_reason_name((al_reason_code_t)i) : "other",
               f->why[i]);
        first = 0;
    }
    printf("},\"result_hash\":\"%016" PRIx64 "\",\"seed\":%" PRIu64 "}\n",
           f->hash, o->seed);
    fflush(stdout);
}

/*
 * One case: the plain-malloc series first (so that no memory freed by an
 * earlier series makes it look warm), tallied from its last result, then
 * the kept-memory series after one warm-up cycle.
 */
static void
run_case(const struct opts *o, bool full, int nodes, int pending)
{
    struct world w;
    struct rng r = { o->seed };
    struct figures f;
    struct counter cold, warm;
    al_result_t *res;
    double t0 = mono_s();

    counter_init(&cold, false);
    counter_init(&warm, true);
    memset(&f, 0, sizeof(f));
    f.deterministic = true;
    world_build(&w, &r, full, nodes, pending, &f);
    f.setup_s = mono_s() - t0;
    f.rss_before = peak_rss_mb();
    res = time_cycles(o, &w, &cold, 0, &f.cold, &f);
    tally(&w, res, &f);
    al_result_destroy(res);
    res = time_cycles(o, &w, &warm, 1, &f.warm, &f);
    al_result_destroy(res);
    counter_fini(&warm);
    print_figures(o, &w, full, &f);
    world_free(&w);
}

/* Runs one case in a child (unless --no-fork) and reports its failure. */
static int
spawn_case(const struct opts *o, bool full, int nodes, int pending)
{
    const char *name = full ? "full" : "fill";
    pid_t pid;
    int st;

    if (!o->fork) {
        run_case(o, full, nodes, pending);
        return 0;
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        alarm((unsigned)o->timeout_s);
        run_case(o, full, nodes, pending);
        exit(0);
    }
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            die("waitpid: %s", strerror(errno));
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    printf("{\"case\":\"%s\",\"nodes\":%d,\"pending\":%d,\"error\":", name,
           nodes, pending);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
        printf("\"timed out after %d s\"}\n", o->timeout_s);
    else if (WIFSIGNALED(st))
        printf("\"killed by signal %d\"}\n", WTERMSIG(st));
    else
        printf("\"exit status %d\"}\n", WEXITSTATUS(st));
    fflush(stdout);
    return 1;
}

/* The first line: the conditions the figures were taken under. */
static void
print_conditions(const struct opts *o)
{
    char line[256], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");

    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL) {
            char *colon = strchr(line, ':');

            if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
                snprintf(model, sizeof(model), "%s", colon + 2);
                model[strcspn(model, "\n")] = '\0';
                break;
            }
        }
        fclose(f);
    }
    printf("{\"bench\":\"core\",\"cpu\":");
    json_str(stdout, model);
    printf(",\"cpus\":%ld,\"compiler\":", sysconf(_SC_NPROCESSORS_ONLN));
#if defined(__clang__)
    json_str(stdout, "clang " __clang_version__);
#elif defined(__GNUC__)
    json_str(stdout, "gcc " __VERSION__);
#else
    json_str(stdout, "unknown");
#endif
    printf(",\"buildtype\":");
    json_str(stdout, BENCH_BUILDTYPE);
#ifdef NDEBUG
    printf(",\"ndebug\":true");
#else
    printf(",\"ndebug\":false");
#endif
    /* Other work on the machine skews the figures: say how busy it was. */
    f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        double load;

        if (fscanf(f, "%lf", &load) == 1)
            printf(",\"loadavg_1min\":%.2f", load);
        fclose(f);
    }
    printf(",\"reps\":%d,\"seed\":%" PRIu64 "}\n", o->reps, o->seed);
}

static void
usage(FILE *f)
{
    fputs("usage: core [--case fill|full] [--nodes N] [--pending N] "
          "[--reps N]\n"
          "            [--budget SECONDS] [--timeout SECONDS] [--seed N] "
          "[--no-fork]\n"
          "With no options runs fill and full on 1000 and 10000 nodes "
          "with 10000 and\n"
          "100000 pending jobs, one JSON line per case.\n",
          f);
}

static long
num_arg(int argc, char **argv, int *i, long lo, long hi)
{
    char *end;
    long v;

    if (*i + 1 >= argc)
        die("%s needs a value", argv[*i]);
    errno = 0;
    v = strtol(argv[++*i], &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        die("%s: %s is not a number in %ld..%ld", argv[*i - 1], argv[*i], lo,
            hi);
    return v;
}

int
main(int argc, char **argv)
{
    struct opts o = { NULL, 0, 0, 11, 20.0, 240, 1, true };
    static const int node_sizes[] = { 1000, 10000 };
    static const int pending_sizes[] = { 10000, 100000 };
    int i, n, p, c, failed = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            o.only_case = argv[++i];
            if (strcmp(o.only_case, "fill") != 0 &&
                strcmp(o.only_case, "full") != 0)
                die("--case: fill or full, not %s", o.only_case);
        } else if (strcmp(argv[i], "--nodes") == 0) {
            o.nodes = (int)num_arg(argc, argv, &i, 1, 1000000);
        } else if (strcmp(argv[i], "--pending") == 0) {
            o.pending = (int)num_arg(argc, argv, &i, 1, 10000000);
        } else if (strcmp(argv[i], "--reps") == 0) {
            o.reps = (int)num_arg(argc, argv, &i, 1, MAX_REPS);
        } else if (strcmp(argv[i], "--budget") == 0) {
            o.budget_s = (double)num_arg(argc, argv, &i, 0, 3600);
        } else if (strcmp(argv[i], "--timeout") == 0) {
            o.timeout_s = (int)num_arg(argc, argv, &i, 1, 86400);
        } else if (strcmp(argv[i], "--seed") == 0) {
            o.seed = (uint64_t)num_arg(argc, argv, &i, 0, 1L << 30);
        } else if (strcmp(argv[i], "--no-fork") == 0) {
            o.fork = false;
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!o.fork && (o.nodes == 0 || o.pending == 0 || o.only_case == NULL))
        die("--no-fork runs one case: give --case, --nodes and --pending");

    print_conditions(&o);
    for (n = 0; n < 2; n++) {
        int nodes = o.nodes != 0 ? o.nodes : node_sizes[n];

        if (n == 1 && o.nodes != 0)
            break;
        for (p = 0; p < 2; p++) {
            int pending = o.pending != 0 ? o.pending : pending_sizes[p];

            if (p == 1 && o.pending != 0)
                break;
            for (c = 0; c < 2; c++) {
                bool full = c == 1;

                if (o.only_case != NULL &&
                    strcmp(o.only_case, full ? "full" : "fill") != 0)
                    continue;
                failed += spawn_case(&o, full, nodes, pending);
            }
        }
    }
    return failed != 0;
}
