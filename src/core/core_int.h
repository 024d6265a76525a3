/*
 * core_int.h -- what the files of the core share and nobody else sees.
 *
 * One cycle owns one al_ctx: a working copy of the cluster's free capacity
 * (per node, per device), per-queue accounting and per-job flags.  Every
 * change to capacity goes through take()/give() in place.c, which record it
 * in an undo log, so that a gang that cannot be placed whole, or a reclaim
 * that finds too few victims, rolls back exactly.
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
    int32_t *bucket; /* heads by free device count, 0..AL_MAX_DEVICES */
    int32_t shared_head;
    int32_t max_dev;
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
    int min_prio; /* lowest priority of its preemptible running or started
                     jobs (never raised within a cycle), INT_MAX if none */
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
} wjob_t;

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

typedef struct al_ctx {
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
    const char *gm_pool, *gm_model;
    uint64_t gm_mask;
    /* Groups the job being placed may not use (its queue chain is at a
     * per-model limit there); see model_forbid() in sched.c. */
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
    uint64_t version;  /* bumps whenever capacity grows */
    int64_t nevicted;  /* evictions and shrinks tried (undone ones too) */
    int32_t *vstamp;   /* victim_ok_cached(): per job, the pick it was judged */
    uint8_t *vok;      /*   in, its answers, and (16) whether vkey is set */
    struct skey *vkey; /* its cost key, computed once a pick */
    int32_t vepoch;
    int64_t min_resv_start; /* earliest reservation start, INT64_MAX none */
    al_cycle_stats_t stats;
} al_ctx_t;

/* vec.c-like helpers (sched.c). */
int al__vec_push(al_ctx_t *c, vec_t *v, const void *elem);
void al__vec_free(al_ctx_t *c, vec_t *v);

/* fairshare.c */
void al__fairshare(al_ctx_t *c);

/* place.c */
int al__profile(al_ctx_t *c);
int al__popcount(uint64_t x);
/* Milli-GPUs a placement holds: its fraction, or 1000 per whole device. */
int64_t al__placed_gpu(const al_placement_t *p);
int al__place_init(al_ctx_t *c);
int al__take(al_ctx_t *c, int32_t job, const al_placement_t *p, bool charge);
int al__give(al_ctx_t *c, int32_t job, const al_placement_t *p, bool charge);
int al__hold(al_ctx_t *c, int32_t node, uint64_t mask, int64_t cpu,
             int64_t mem);
int al__unhold_all(al_ctx_t *c, int32_t node);
void al__undo_to(al_ctx_t *c, size_t mark);
int al__job_mark(al_ctx_t *c, int32_t job);
int al__find_task(al_ctx_t *c, int32_t job, int only_node, int topo_level,
                  int32_t topo_dom, al_placement_t *out);
int64_t al__node_slots(al_ctx_t *c, int32_t node, const al_request_t *req);
bool al__group_match(const al_ctx_t *c, int32_t g, const al_request_t *req);
bool al__req_group(al_ctx_t *c, int32_t g, const al_request_t *req);

/* The placements job j holds now: the snapshot's, or those of the START
 * decision this cycle made.  Valid until ctx->tasks grows. */
const al_placement_t *al__job_place(const al_ctx_t *c, int32_t j);

/* Runtime the core assumes for job j (limit, estimate or default). */
int64_t al__runtime(const al_ctx_t *c, const al_job_t *j);

#endif /* AL_CORE_INT_H */
