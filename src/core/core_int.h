/*
 * core_int.h -- what the files of the core share and nobody else sees.
 *
 * One cycle owns one al_cycle_t: a working copy of the cluster's free
 * capacity (per node, per device), per-queue accounting and per-job flags.
 * Every change to capacity goes through al__take()/al__give() in capacity.c,
 * which record it in an undo log, so that a gang that cannot be placed whole,
 * or a reclaim that finds too few victims, rolls back exactly.
 *
 * The files, bottom to top; each calls only files listed before it
 * (tools/layers.py draws the graph from the objects and refuses a circle):
 *
 *   vec.c        growable arrays on the caller's allocator
 *   order.c      sort keys, the queue heap, the candidates' order
 *   quota.c      admission: limits, borrowing, deserved and model quotas
 *   capacity.c   the working cluster, its indexes and the undo log
 *   frag.c       fragmentation-aware scoring (AL_PACK_FRAG)
 *   place.c      room for one task, then for a whole gang
 *   snapshot.c   checking the snapshot, setting up the working state
 *   fairshare.c  fair shares over the queue tree
 *   reclaim.c    victims, eviction, shedding, reclaim for one job
 *   reserve.c    backfill reservations and their holds
 *   dag.c        pipelines: the critical path, look-ahead reservations for
 *                the next stage
 *   pass.c       the allocation pass, the result, al_sched_run
 *   (reason.c, alloc.c and error.c stand apart: the door's other services.)
 *
 * Why this order and not another: capacity is what everything changes, so
 * it sits low, with quota and order below it because they only read the
 * working state.  Take/give live in capacity.c, not with the search in
 * place.c: fragmentation scoring needs the device picks below it while the
 * task search dispatches to it, so in one file with the search the two
 * would call each other.  Setup takes what running jobs hold through
 * capacity and builds frag's profile, so it is above both, though it runs
 * first.  Reclaim sits below reserve: a reservation whose time has come
 * evicts what it lent (al__evict), while the victim search never looks at
 * reservations.
 *
 * One header, in sections per file, rather than one per file: the working
 * state's types are read by nearly every file, and the list of what each
 * file offers, in layer order, is the map of the core.  Small helpers that
 * hot loops of several files call are static inline here (the build has no
 * link-time optimisation; they were inlined inside one file before).
 */
#ifndef AL_CORE_INT_H
#define AL_CORE_INT_H

#include "core.h"

#define NIL (-1)

/* One task shape of the workload profile that AL_PACK_FRAG judges
 * fragmentation against. */
typedef struct wshape {
    int32_t gpus;  /* whole GPUs, or 0 */
    int32_t milli; /* fraction of one GPU when gpus == 0, or 0 (CPU-only) */
    int64_t cpu, mem;
    double p; /* share of tasks with this shape */
} wshape_t;

#define AL_PROFILE_MAX 24 /* shapes the core keeps, the most common first */

/* A growable array on the caller's allocator (never the arena, so that
 * growth does not waste arena memory). */
typedef struct vec {
    void *data;
    size_t len, cap, esz;
} vec_t;

/* A task of a job: (job index, task index). */
typedef struct al_jt {
    int32_t job;
    int32_t task;
} al_jt_t;

/* Working state of one node. */
typedef struct wnode {
    uint64_t free_mask;   /* devices with no user at all */
    uint64_t shared_mask; /* devices partly used by fractional tasks */
    uint64_t hold_mask;   /* free devices held for a reservation */
    int64_t free_cpu, free_mem;
    int64_t hold_cpu, hold_mem;
    int32_t group;        /* (pool, model) group, or NIL when not schedulable */
    int32_t nfree;        /* popcount(free_mask & ~hold_mask): its bucket */
    int32_t prev, next;   /* bucket list links */
    int32_t sprev, snext; /* shared list links (nodes with shared devices) */
    int32_t dev_off;      /* first device in the ctx device arrays */
    int32_t ndev;
    int32_t dom_off, ndom; /* NVLink/NUMA domain masks in ctx->dom_masks */
    int32_t topo[AL_MAX_TOPO_LEVELS]; /* domain id per level, NIL unknown */
    int32_t run_off, nrun; /* running (job, task) pairs in ctx->run_tasks */
    bool ready;
    bool in_shared;
} wnode_t;

/* A group of nodes with one pool and one GPU model. */
typedef struct wgroup {
    const char *pool;
    const char *model;
    const char *labels;
    int32_t *bucket; /* heads by free device count, 0..AL_MAX_DEVICES */
    int32_t shared_head;
    int32_t max_dev;
    int32_t max_dom; /* devices of the largest domain of one node */
    int64_t max_cpu, max_mem;
    int64_t total_dev;
    int64_t free_dev; /* free unheld devices of ready nodes */
} wgroup_t;

/* Working state of one queue. */
typedef struct wqueue {
    int32_t parent;
    int32_t depth;
    bool leaf;
    bool valid;
    int64_t alloc[AL_NRES];
    int64_t demand[AL_NRES];
    int64_t nonpre_gpu;
    int64_t build_gpu;   /* the part of alloc[GPU] held by build jobs */
    int64_t started_gpu; /* part of alloc[GPU] started by this cycle */
    int64_t run_gpu0;    /* GPUs of its running jobs before the cycle */
    int64_t big_gpu;     /* the part in jobs larger than its deserved quota */
    double fair[AL_NRES];
    double usage; /* subtree usage */
    /* allocation order */
    bool below;   /* below its deserved GPUs (cached by queue_rekey) */
    double ratio; /* dominant share over fair share (likewise) */
    int32_t heap_pos;
    int32_t next_job; /* cursor into its slice of the order */
    int32_t job_begin, job_end;
    int64_t *model_alloc;  /* parallel to queue->model_quotas */
    int64_t *model_nonpre; /* the non-preemptible part of model_alloc */
    int64_t reclaim_fail;  /* smallest GPU size whose reclaim failed, or 0 */
    int64_t min_rank; /* lowest rank (wjob_t.rank) of its preemptible running
                         or started jobs (never raised within a cycle),
                         INT64_MAX if none */
} wqueue_t;

enum {
    JF_RUNNING = 1 << 1,   /* running in the snapshot */
    JF_STARTED = 1 << 2,   /* started by this cycle */
    JF_EVICTED = 1 << 3,   /* evicted by this cycle */
    JF_SHED = 1 << 4,      /* extra tasks shed by this cycle */
    JF_LENT = 1 << 5,      /* running on lent capacity (snapshot or started) */
    JF_BLOCKED = 1 << 6,   /* failed for capacity: may reclaim */
    JF_RECLAIMER = 1 << 7, /* started by evicting others: never un-started */
    JF_TRIED = 1 << 8      /* considered ahead of the order (starving) */
};

typedef struct wjob {
    uint32_t flags;
    int32_t ntasks;    /* tasks held now (running or started) */
    int32_t start_dec; /* index of its START decision, or NIL */
    int32_t for_job;   /* eviction: who needed the room; start: lent from */
    int32_t why;       /* al_evict_why_t of an eviction */
    int64_t task_gpu;  /* milli-GPUs per task */
    int64_t crit;      /* critical-path length downstream, seconds */
    int32_t place_off; /* started: first placement in ctx->tasks, else NIL */
    /* Copies of the job's fields that the victim search reads for every
     * running task: wj[] is small and dense, the job structs are not. */
    int32_t min_tasks;
    int64_t cpu, mem;
    int64_t held;       /* running: milli-GPUs its placements hold */
    int64_t held_extra; /* running: the part held by tasks past min_tasks */
    /* Standing for preemption inside its queue: the priority class, then
     * the service level (lower level, higher rank); see al__job_rank(). */
    int64_t rank;
    int32_t level; /* service level (al_config_t.service_levels) */
} wjob_t;

/* Sort keys: four unsigned words compared in order, then the index. */
typedef struct skey {
    uint64_t k[4];
    int32_t idx;
} skey_t;

/* One undo record. */
typedef struct undo {
    int8_t kind;      /* U_* */
    bool charge;      /* U_TAKE/U_GIVE: the queue chain was charged */
    int32_t job;      /* U_TAKE/U_GIVE/U_JOB */
    int32_t node;     /* U_HOLD/U_UNHOLD */
    al_placement_t p; /* U_TAKE/U_GIVE */
    uint64_t mask;    /* U_HOLD/U_UNHOLD: devices */
    int64_t cpu, mem;
    /* U_JOB: the job's state before, and the decision vectors' lengths. */
    uint32_t flags;
    int32_t ntasks, start_dec, for_job, why, place_off;
    size_t ndecisions, ntaskv;
} undo_t;

enum { U_TAKE = 1, U_GIVE, U_HOLD, U_UNHOLD, U_JOB };

typedef struct al_cycle {
    const al_snapshot_t *s;
    al_config_t cfg;
    const al_allocator_t *a;
    al_arena_t *tmp; /* scratch for the cycle */
    al_arena_t *out; /* the result's memory, until the result owns it */
    int nn, nq, nj;
    int32_t ndev; /* devices of all nodes */
    wnode_t *wn;
    int32_t *dev_milli; /* used milli per device (fractional) */
    int64_t *dev_gmem;  /* used memory per device (fractional) */
    int64_t *dev_cap;   /* device memory */
    uint64_t *dom_masks;
    int ngroups;
    wgroup_t *groups;
    bool gm_valid; /* al__req_group's cache */
    const char *gm_pool, *gm_model, *gm_constraint;
    uint64_t gm_mask;
    /* Groups the job being placed may not use (its queue chain is at a
     * per-model limit there); see al__model_forbid() in quota.c. */
    uint64_t forbid;
    int ndomains[AL_MAX_TOPO_LEVELS];
    int32_t *dom_nodes[AL_MAX_TOPO_LEVELS]; /* CSR: nodes of each domain */
    int32_t *dom_off[AL_MAX_TOPO_LEVELS];
    int64_t *dom_free[AL_MAX_TOPO_LEVELS]; /* free unheld devices per domain */
    al_jt_t *run_tasks; /* running (job, task) pairs, grouped by node */
    wqueue_t *wq;
    wjob_t *wj;
    vec_t undo;
    vec_t decisions; /* al_decision_t */
    vec_t tasks;     /* al_placement_t backing START decisions */
    al_reason_t *reasons;
    wshape_t *profile; /* AL_PACK_FRAG's workload (arena), shares sum to 1 */
    int nprofile;
    int64_t *fslots; /* per profile shape, scratch for AL_PACK_FRAG */
    /* AL_PACK_FRAG's table of node states already judged in one search:
     * fcap slots (a power of two) of key, node and the search's stamp. */
    uint64_t *fkey;
    int32_t *fnode, *fstamp, fcap, fcur;
    uint64_t version; /* bumps whenever capacity grows */
    int64_t nevicted; /* evictions and shrinks tried (undone ones too) */
    int32_t *vstamp;  /* victim_ok_cached(): per job, the pick it was judged */
    uint8_t *vok;     /*   in, its answers, and (16) whether vkey is set */
    skey_t *vkey;     /* its cost key, computed once a pick */
    int32_t vepoch;
    struct victim *vs, *vscratch; /* al__reclaim_one()'s, taken on first use */
    /* al__reclaim_one() for a starving job whose queue has no room to
     * reclaim: other queues' jobs are victims only when long served
     * (reclaim.c, served_long()). */
    bool served_only;
    /* Some node is draining or has fenced devices: capacity that counts
     * for "could it ever fit" takes no new work now (al__fence()). */
    bool unavail;
    int64_t min_resv_start; /* earliest reservation start, INT64_MAX none */
    al_cycle_stats_t stats;
} al_cycle_t;

/* The backfill reservations of one pass (reserve.c's). */
typedef struct resv_int {
    al_reservation_t r;
    uint64_t *hold; /* per reserved node: devices held */
    int64_t *hcpu, *hmem;
} resv_int_t;

typedef struct resv_set {
    resv_int_t *resv; /* nlook + reserve_depth + 1 entries */
    int32_t nresv;
    /* The first nlook entries are dag.c's look-aheads (they hold nothing
     * and do not count against reserve_depth); while not_before is set,
     * al__reserve() finds no time earlier than it. */
    int32_t nlook;
    int64_t not_before;
    int64_t held_dev; /* devices reservations hold */
    int64_t *sim_dev; /* al__reserve()'s sweep arrays, taken on first use */
    int32_t *sim_dm;
} resv_set_t;

/* The queues in order of need (order.c's heap). */
typedef struct qheap {
    int32_t *h;
    int32_t n;
} qheap_t;

/* ------------------------------------------------------------------ */
/* Small helpers for every file (static inline: hot loops call them)  */

/* SWAR popcount: popcount64 compiles to a libgcc call on
 * baseline x86-64 (no -mpopcnt), which showed up at 12% of a full cycle. */
static inline int
popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* A signed value as an unsigned key that sorts as it does. */
static inline uint64_t
bias(int64_t v)
{
    return (uint64_t)v ^ (1ULL << 63);
}

static inline int
skey_cmp(const skey_t *a, const skey_t *b)
{
    if (a->k[0] != b->k[0])
        return a->k[0] < b->k[0] ? -1 : 1;
    if (a->k[1] != b->k[1])
        return a->k[1] < b->k[1] ? -1 : 1;
    if (a->k[2] != b->k[2])
        return a->k[2] < b->k[2] ? -1 : 1;
    if (a->k[3] != b->k[3])
        return a->k[3] < b->k[3] ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Sets job j's reason; returns false, so that a check can fail with it. */
static inline bool
set_reason(al_cycle_t *c, int32_t j, al_reason_code_t code, int32_t q,
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

/* Runtime the core assumes for job j (limit, estimate or default). */
static inline int64_t
job_runtime(const al_cycle_t *c, const al_job_t *j)
{
    int64_t t = c->cfg.default_runtime;

    if (j->estimate > 0)
        t = j->estimate;
    if (j->time_limit > 0 && (j->estimate <= 0 || j->time_limit < t))
        t = j->time_limit;
    return t;
}

/* The placements job j holds now: the snapshot's, or those of the START
 * decision this cycle made.  Valid until c->tasks grows. */
static inline const al_placement_t *
job_place(const al_cycle_t *c, int32_t j)
{
    if (c->wj[j].place_off != NIL)
        return (const al_placement_t *)c->tasks.data + c->wj[j].place_off;
    return c->s->jobs[j].placement;
}

static inline bool
queue_ok(const al_cycle_t *c, int32_t q)
{
    return q >= 0 && q < c->nq && c->wq[q].leaf;
}

/*
 * A job larger than queue a's deserved GPUs can never run inside that quota:
 * all of it is over quota there (as Run:ai counts it), however little else
 * the queue runs, so a's deserved quota does not shield it.  Without this a
 * whole-cluster gang of a queue deserving one node held every other queue
 * below its guarantee for as long as it ran.
 */
static inline bool
over_quota_alone(const al_cycle_t *c, int32_t a, int64_t gpu)
{
    return gpu > c->s->queues[a].quota[AL_RES_GPU].deserved;
}

/* Milli-GPUs a fractional request needs on device di. */
static inline int32_t
frac_milli(const al_cycle_t *c, const al_request_t *req, int32_t di)
{
    int64_t m = req->gpu_milli;

    if (req->gpu_mem > 0 && c->dev_cap[di] > 0) {
        int64_t bym =
            (req->gpu_mem * AL_GPU_MILLI + c->dev_cap[di] - 1) / c->dev_cap[di];
        if (bym > m)
            m = bym;
    }
    if (m > AL_GPU_MILLI)
        m = AL_GPU_MILLI;
    return (int32_t)m;
}

static inline bool
is_frac(const al_request_t *req)
{
    return req->gpus == 0 && (req->gpu_milli > 0 || req->gpu_mem > 0);
}

/* Whole devices available to new work on node w: free and not held. */
static inline uint64_t
avail_mask(const wnode_t *w)
{
    return w->free_mask & ~w->hold_mask;
}

/* free_cpu and free_mem already exclude what reservations hold. */
static inline bool
cpu_mem_fit(const wnode_t *w, const al_request_t *req)
{
    return w->free_cpu >= req->cpu_milli && w->free_mem >= req->mem_bytes;
}

/* Is node a better choice than cur (by pack policy, then index)? */
static inline bool
better(const al_cycle_t *c, int32_t a, int32_t cur)
{
    int32_t fa, fc;

    if (cur == NIL)
        return true;
    fa = c->wn[a].nfree;
    fc = c->wn[cur].nfree;
    if (fa != fc)
        return c->cfg.pack == AL_PACK_SPREAD ? fa > fc : fa < fc;
    return a < cur;
}

/* ------------------------------------------------------------------ */
/* vec.c                                                              */

int al__vec_push(al_cycle_t *c, vec_t *v, const void *elem);
void al__vec_free(al_cycle_t *c, vec_t *v);

/* ------------------------------------------------------------------ */
/* order.c                                                            */

/* Sorts v[0..n) by (k[0], k[1], k[2], idx) on c's scratch; AL_ENOMEM. */
int al__skey_sort(al_cycle_t *c, skey_t *v, size_t n);
/* Queue q's dominant share over its fair share. */
double al__share_ratio(const al_cycle_t *c, int32_t q);
/* Adds queue q to the heap, keyed by its allocation now. */
void al__heap_push(al_cycle_t *c, qheap_t *hp, int32_t q);
void al__heap_pop(al_cycle_t *c, qheap_t *hp);
/* Re-keys queue q after its allocation changed, and re-places it. */
void al__heap_fix(al_cycle_t *c, qheap_t *hp, int32_t q);
/* Sets job j's service level and rank (wjob_t.level, .rank) from its
 * attained service; task_gpu must be set. */
void al__job_rank(al_cycle_t *c, int32_t j);
/* The candidates in allocation order (per queue slices), into *order. */
int al__build_order(al_cycle_t *c, skey_t **order, size_t *norder);
int64_t al__response_ratio(const al_cycle_t *c, const al_job_t *jb,
                           int64_t waited);

/* ------------------------------------------------------------------ */
/* quota.c                                                            */

/* May job j start ntasks more tasks under its queue chain's quotas?  Sets
 * the reason when not. */
bool al__admit(al_cycle_t *c, int32_t j, int64_t ntasks);
bool al__within_quota(al_cycle_t *c, int32_t j);
uint64_t al__model_forbid(al_cycle_t *c, int32_t j, int64_t ntasks, int32_t *q,
                          int64_t *lim);

/* ------------------------------------------------------------------ */
/* capacity.c                                                         */

int al__place_init(al_cycle_t *c);
bool al__req_group(al_cycle_t *c, int32_t g, const al_request_t *req);
/* The placement strategy for req: its pool's (al_config_t.pool_packs),
 * else the configuration's. */
al_pack_t al__req_pack(const al_cycle_t *c, const al_request_t *req);
/* Does any pool, or the default, place with AL_PACK_FRAG? */
bool al__uses_frag(const al_config_t *cfg);
/* Milli-GPUs a placement holds: its fraction, or 1000 per whole device. */
int64_t al__placed_gpu(const al_placement_t *p);
int al__take(al_cycle_t *c, int32_t job, const al_placement_t *p, bool charge);
/* Takes the nodes' fenced devices out of what can be placed on; after the
 * running jobs have taken theirs (one may still hold a fenced device).
 * Sets c->unavail. */
void al__fence(al_cycle_t *c);
int al__give(al_cycle_t *c, int32_t job, const al_placement_t *p, bool charge);
int al__hold(al_cycle_t *c, int32_t node, uint64_t mask, int64_t cpu,
             int64_t mem);
int al__unhold_all(al_cycle_t *c, int32_t node);
int al__job_mark(al_cycle_t *c, int32_t job);
void al__undo_to(al_cycle_t *c, size_t mark);
uint64_t al__pick_devices(const al_cycle_t *c, const wnode_t *w, uint64_t avail,
                          int g);
bool al__one_domain(const al_cycle_t *c, const wnode_t *w, uint64_t mask);

/* ------------------------------------------------------------------ */
/* frag.c                                                             */

int al__profile(al_cycle_t *c);
int al__frag_pick(al_cycle_t *c, const al_request_t *req, const int32_t *list,
                  int32_t nlist, al_placement_t *out);

/* ------------------------------------------------------------------ */
/* place.c                                                            */

int al__find_task(al_cycle_t *c, int32_t job, int only_node, int topo_level,
                  int32_t topo_dom, al_placement_t *out);
int64_t al__free_devices(al_cycle_t *c, int32_t j);
bool al__ever_fits(al_cycle_t *c, int32_t j, al_reason_code_t *why);
int al__record_start(al_cycle_t *c, int32_t j, int32_t ntasks, bool lent,
                     int32_t lent_from);
int al__place_gang(al_cycle_t *c, int32_t j);

/* ------------------------------------------------------------------ */
/* snapshot.c                                                         */

/* Checks al_sched_run()'s arguments, the snapshot's counts and its
 * configuration, and fills *cfg (the snapshot's or the defaults).
 * AL_EINVAL with the cause. */
int al__check_snapshot(const al_snapshot_t *snap, al_result_t **out,
                       al_config_t *cfg, char **cause);
/* The working state of cycle c from its snapshot.  AL_EINVAL with the
 * cause, or AL_ENOMEM. */
int al__setup(al_cycle_t *c, char **cause);

/* ------------------------------------------------------------------ */
/* fairshare.c                                                        */

void al__fairshare(al_cycle_t *c);

/* ------------------------------------------------------------------ */
/* reclaim.c                                                          */

int al__evict(al_cycle_t *c, int32_t x, int32_t for_job, al_evict_why_t why);
int al__reclaim_one(al_cycle_t *c, int32_t j, bool *started);

/* ------------------------------------------------------------------ */
/* reserve.c                                                          */

int al__reserve(al_cycle_t *c, resv_set_t *rs, int32_t j, resv_int_t *out,
                bool *made);
int al__claim_lent(al_cycle_t *c, const resv_set_t *rs, int32_t j,
                   const resv_int_t *rv, bool *started);
int al__apply_holds(al_cycle_t *c, const resv_int_t *rv);
int al__unhold_resv(al_cycle_t *c, resv_set_t *rs);
int64_t al__held_now(const al_cycle_t *c, const resv_set_t *rs);
int al__rehold(al_cycle_t *c, resv_set_t *rs);
int al__rehold_waiting(al_cycle_t *c, resv_set_t *rs, int32_t skip);
bool al__has_resv(const resv_set_t *rs, int32_t j);
int32_t al__touched_resv(const al_cycle_t *c, const resv_set_t *rs, int32_t j);

/* ------------------------------------------------------------------ */
/* dag.c                                                              */

/* How many look-ahead reservations this cycle may make, at most. */
int32_t al__dag_max(const al_cycle_t *c);
/* Each job's critical path (wjob_t.crit), from its dependents. */
int al__critical_path(al_cycle_t *c);
/* Makes the look-ahead reservations into rs (first, before any backfill
 * reservation); 0 or AL_ENOMEM. */
int al__dag_lookahead(al_cycle_t *c, resv_set_t *rs);

#endif /* AL_CORE_INT_H */
