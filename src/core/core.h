/*
 * core.h -- the door of the allot scheduling core.
 *
 * The core is a pure function: a snapshot of the cluster (nodes, GPUs,
 * topology, queues, jobs, the time "now" and a configuration) goes in, and a
 * result comes out: jobs to start (with placements), jobs to evict, the
 * reservations made for blocked jobs, every pending job's reason, and the
 * fair share of every queue.  The core performs no I/O, reads no clock, starts
 * no thread and keeps no global state; it allocates only through the
 * allocator the caller passes.  The same snapshot always yields the same
 * result, byte for byte.
 *
 * Units.  Time is in whole seconds (int64_t) on the caller's clock.  GPU
 * amounts are in milli-GPUs (1000 = one whole device), CPU in millicores,
 * memory in bytes.  Quotas are expressed in the same units.
 *
 * Ownership.  The snapshot and everything it points to belong to the caller
 * and must stay valid and unchanged during al_sched_run().  The result is
 * allocated by the core (through snapshot->allocator or the libc default)
 * and released with al_result_destroy(); it does not point into the
 * snapshot except by index.  The result keeps a pointer to the allocator
 * struct, which must therefore outlive the result, not only the call.
 */
#ifndef AL_CORE_H
#define AL_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "error.h"

/* ------------------------------------------------------------------ */
/* Limits                                                             */

#define AL_GPU_MILLI 1000       /* milli-GPUs in one whole device */
#define AL_MAX_DEVICES 64       /* devices per node (a 64-bit mask) */
#define AL_MAX_TOPO_LEVELS 4    /* topology levels above the node */
#define AL_NRES 3               /* resources with quotas: gpu, cpu, mem */
#define AL_UNLIMITED (-1)       /* a quota limit meaning "no limit" */
#define AL_MAX_SERVICE_LEVELS 4 /* thresholds of attained service */

/* Resource indices into the AL_NRES-sized arrays. */
enum { AL_RES_GPU = 0, AL_RES_CPU = 1, AL_RES_MEM = 2 };

/* Default priority classes (Run:ai's): train jobs are preemptible, build
 * (interactive) sessions and inference services are not. */
#define AL_PRIO_TRAIN 50
#define AL_PRIO_BUILD 100
#define AL_PRIO_INFERENCE 125

/* ------------------------------------------------------------------ */
/* Nodes                                                              */

typedef enum al_node_state {
    AL_NODE_READY = 0, /* accepts work */
    AL_NODE_DRAINING,  /* keeps running work, accepts none */
    AL_NODE_DOWN       /* holds nothing; the shell requeues its jobs */
} al_node_state_t;

/* One whole GPU device on a node. */
typedef struct al_device {
    int64_t mem_bytes; /* device memory */
    int16_t numa;      /* NUMA node the device hangs off, -1 unknown */
    int16_t nvlink;    /* NVLink/NVSwitch domain inside the node, -1 none */
} al_device_t;

typedef struct al_node {
    const char *name;
    const char *pool; /* node pool; NULL or "" is the default pool */
    const char
        *gpu_model; /* model of all its devices ("H100-80GB"); may be NULL */
    /* Ordered topology path, outermost first, one value per level named in
     * al_config_t.topo_levels (e.g. {"block-3", "rack-17"}).  Values are
     * compared as strings; entries beyond ntopo count as unknown. */
    const char *topo[AL_MAX_TOPO_LEVELS];
    al_node_state_t state;
    int64_t cpu_milli;
    int64_t mem_bytes;
    int ndevices; /* 0..AL_MAX_DEVICES */
    const al_device_t *devices;
    /* Labels a job's constraint is matched against, as "key=value" items
     * joined by commas ("ib=yes,nvme=2t"), or NULL for none.  Nodes with
     * equal pool, model and labels are placed alike. */
    const char *labels;
    /* Devices that take no new work (a GPU found faulty, fenced while the
     * node's others go on): bit d for device d.  A running task may still
     * hold one; once it ends the device stays out. */
    uint64_t fenced;
} al_node_t;

/* ------------------------------------------------------------------ */
/* Queues                                                             */

/* Quota of one resource for one queue. */
typedef struct al_quota {
    int64_t deserved; /* guaranteed amount */
    int64_t limit;    /* hard cap, AL_UNLIMITED for none */
    double weight;    /* over-quota weight; 0 means "no surplus" */
} al_quota_t;

/* Quota for one GPU model inside a queue (optional, admin-set). */
typedef struct al_model_quota {
    const char *model;
    int64_t
        deserved; /* milli-GPUs of this model non-preemptible work may use */
    int64_t
        limit; /* milli-GPUs of this model all work may use, or AL_UNLIMITED */
} al_model_quota_t;

/*
 * A queue.  Queues form a tree through `parent` (an index into
 * al_snapshot_t.queues, or -1 for a top-level queue); a parent must come
 * before its children in the array.  Only leaves hold jobs.
 */
typedef struct al_queue {
    const char *name;
    int parent;
    int priority;              /* higher levels get surplus first */
    al_quota_t quota[AL_NRES]; /* indexed by AL_RES_* */
    int nmodel_quotas;
    const al_model_quota_t *model_quotas;
    /* Decayed historical GPU usage in milli-GPU-seconds, kept by the shell
     * with al_usage_decay().  Used for time-based fair share. */
    double usage;
    /* A cap on build jobs (al_job_t.build): when build_capped, the build
     * jobs of this queue's subtree may hold at most build_cap milli-GPUs
     * together (0: none may run).  Off (false) by default. */
    bool build_capped;
    int64_t build_cap;
} al_queue_t;

/* ------------------------------------------------------------------ */
/* Jobs                                                               */

typedef enum al_job_state {
    AL_JOB_PENDING = 0, /* waiting to be scheduled */
    AL_JOB_RUNNING,     /* placed; `placement` and `start_time` are valid */
    AL_JOB_HELD         /* pending but held by a user: never started */
} al_job_state_t;

/* Where a job's dependencies stand, as far as the shell knows. */
typedef enum al_dep_state {
    AL_DEPS_NONE = 0,  /* no dependencies */
    AL_DEPS_WAITING,   /* some dependency has not finished yet */
    AL_DEPS_SATISFIED, /* all dependencies met */
    AL_DEPS_NEVER      /* a dependency ended so that this job can never run */
} al_dep_state_t;

typedef enum al_topo_mode {
    AL_TOPO_NONE = 0,  /* no constraint */
    AL_TOPO_PREFERRED, /* try to keep all tasks inside one domain */
    AL_TOPO_REQUIRED   /* all tasks inside one domain or not at all */
} al_topo_mode_t;

/* The request of one task; all tasks of a gang have the same request. */
typedef struct al_request {
    int32_t gpus;      /* whole GPUs per task, or 0 */
    int32_t gpu_milli; /* fraction of one GPU when gpus == 0 (1..999), or 0 */
    int64_t gpu_mem;   /* GPU memory of a fractional task, bytes, or 0 */
    int64_t cpu_milli;
    int64_t mem_bytes;
    const char *gpu_model; /* required model, or NULL */
    const char *pool;      /* required pool, or NULL for any */
    /* Required labels, or NULL: items joined by commas, each "key=value"
     * (the node's label has that value) or "key" (the node has the label
     * with a value other than "no", "false" or "0"); all must hold. */
    const char *constraint;
    /* The whole GPUs of each task come from one NVLink domain of its node
     * (NUMA node when the node reports no NVLink domains; the whole node
     * when it reports neither), or the task waits; false: one domain is
     * only preferred, and a task spans domains when none holds it. */
    bool one_domain;
} al_request_t;

/* Placement of one task. */
typedef struct al_placement {
    int32_t node;      /* index into al_snapshot_t.nodes */
    int32_t gpu_milli; /* for a fractional task: its share of the device */
    uint64_t devices;  /* bit i set: device i of the node is used */
    int64_t gpu_mem;   /* for a fractional task: device memory it holds */
} al_placement_t;

/* When a dependent runs (a pipeline stage's `when`): after its input
 * succeeded (the default), only after it failed (a cleanup), or after it
 * ended either way. */
typedef enum al_dep_when {
    AL_EDGE_SUCCESS = 0,
    AL_EDGE_FAILURE,
    AL_EDGE_ALWAYS
} al_dep_when_t;

/* A dependency edge: this job runs after job `job` (an index), when
 * `when` says.  Only success and always edges get look-ahead; a failure
 * edge counts a fraction of the work behind it in the critical path
 * (dag.c). */
typedef struct al_dep {
    int32_t job;
    al_dep_when_t when;
} al_dep_t;

typedef struct al_job {
    uint64_t id;  /* the shell's id; used for tie-breaks and reasons */
    int queue;    /* index of a leaf queue */
    int priority; /* priority class value (AL_PRIO_*) */
    /* A per-job adjustment within its queue and priority class: a job
     * with a higher one comes first among the jobs of its queue and class
     * (before the critical path, runtime and age orders).  0 for most;
     * the shell maps Slurm's Priority and Nice onto it.  Clamped to
     * +-2^33.  It does not change preemption, which goes by class. */
    int64_t prio_adjust;
    bool preemptible;
    /* An interactive build session: counts against its queues' build caps
     * (al_queue_t.build_capped).  A build job is normally also not
     * preemptible, which keeps it within deserved quota and out of reach
     * of reclaim; the core judges those by `preemptible` alone. */
    bool build;
    int min_tasks; /* gang size; 1 for a single task */
    int max_tasks; /* > min_tasks for an elastic job */
    al_request_t req;
    int64_t submit_time;
    int64_t eligible_time; /* since when it waits (requeue resets it); 0 =
                              submit_time */
    int64_t time_limit;    /* seconds, 0 = none */
    int64_t estimate;      /* expected runtime in seconds, 0 = unknown */
    int64_t min_runtime;   /* may not be preempted before running this long */
    /* Service the job received in its earlier runs (before a requeue), in
     * GPU-seconds (one whole GPU for one second is 1), kept by the shell;
     * 0 for a job that never ran.  The core adds the current run of a
     * running job itself; see al_config_t.service_levels. */
    double attained;
    al_dep_state_t dep_state;
    int ndeps; /* jobs this one runs after (for critical-path ordering) */
    const al_dep_t *deps;
    /* An element of a job array that stands for its whole stage in the
     * critical path: the array's remaining work is this many rounds of
     * the element's runtime (elements left over the array's parallelism
     * bound, rounded up).  0 or 1: the job counts once.  Over 1, what
     * waits on it gets no look-ahead at its end (rounds follow it). */
    int32_t array_waves;
    int topo_level; /* index into al_config_t.topo_levels, used if topo_mode */
    al_topo_mode_t topo_mode;
    al_job_state_t state;
    /* Running jobs only. */
    int64_t start_time;
    int64_t checkpoint_time; /* last checkpoint, 0 = none */
    /* Runs on capacity a reservation holds (a START decision with lent set).
     * Lent jobs give the capacity back, by eviction, to the first-ranked
     * blocked job whose reservation needs it. */
    bool lent;
    int ntasks; /* tasks placed */
    const al_placement_t *placement;
} al_job_t;

/* ------------------------------------------------------------------ */
/* Configuration                                                      */

typedef enum al_pack {
    AL_PACK_BIN = 0, /* fill the fullest node that fits (default) */
    AL_PACK_SPREAD,  /* use the emptiest node */
    /* Fragmentation-aware (after FGD, Weng et al., USENIX ATC '23): put
     * each task where it least increases the expected fragmentation of the
     * node, judged against a workload profile (al_config_t.profile, or the
     * mix of task shapes the cluster runs and waits for).  Best for
     * clusters with many fractional tasks or scarce CPU. */
    AL_PACK_FRAG
} al_pack_t;

/* The placement strategy of one node pool (al_config_t.pool_packs). */
typedef struct al_pool_pack {
    const char *pool;
    al_pack_t pack;
} al_pool_pack_t;

/*
 * One task shape of a workload profile: the mix of tasks AL_PACK_FRAG
 * expects to place, against which it judges fragmentation.  A shape is a
 * task request (whole GPUs, or a fraction of one, or none: CPU-only) and
 * its popularity; weights are relative (the core divides by their sum), so
 * counts of tasks serve as they are.
 */
typedef struct al_shape {
    int32_t gpus;      /* whole GPUs per task, or 0 */
    int32_t gpu_milli; /* fraction of one GPU when gpus == 0 (1..999), or 0 */
    int64_t cpu_milli;
    int64_t mem_bytes;
    double weight; /* popularity, >= 0; shapes of weight 0 are ignored */
} al_shape_t;

typedef struct al_config {
    al_pack_t pack;
    int ntopo_levels; /* 0..AL_MAX_TOPO_LEVELS */
    const char *const
        *topo_levels; /* names, outermost first ("block", "rack") */
    /* Time-based fair share: how strongly decayed usage bends the surplus
     * split.  0 turns it off; 1 is the default. */
    double usage_weight;
    /* Half-life of queue usage in seconds (default 7 days).  The core does
     * not read it: the shells decay al_queue_t.usage with al_usage_decay()
     * and this value, so that both keep one policy in one place. */
    int64_t usage_half_life;
    /* Backfill: how many blocked jobs get a reservation per cycle (0 turns
     * backfill reservations off, and lower-ranked jobs start freely). */
    int reserve_depth;
    /* Runtime assumed for a running job with neither limit nor estimate. */
    int64_t default_runtime;
    bool lend_reserved; /* lend reserved GPUs to preemptible jobs */
    bool reclaim;       /* queues below fair share reclaim from others */
    bool preempt;       /* higher priority evicts lower inside a queue */
    bool borrow; /* queues may exceed deserved quota (false: static split) */
    bool strict_order; /* stop at the first job that cannot start (FIFO) */
    /* One global order by priority and age: no fair share (all fair values
     * are 0), no quotas, limits or deserved checks, no reclaim and no
     * preemption. */
    bool ignore_queues;
    int max_reclaim_tries; /* reclaim/preempt attempts per cycle */
    /* Anti-starvation: pending jobs that have waited this long (seconds;
     * 0 turns it off) are considered first, before the order of need, up
     * to reserve_depth of them: they start, reclaim or get the first
     * reservations.  Fair-share order alone can leave the big gangs of a
     * queue above its share waiting without a reservation for as long as
     * other queues keep submitting.  Which of them go first: see
     * short_first. */
    int64_t starve_after;
    /* Shortest expected runtime first (the job's estimate, else its time
     * limit, else default_runtime).  Inside a queue, jobs of one priority
     * class and critical path go by expected runtime (to the minute), then
     * by waiting time; among jobs waiting past starve_after, the highest
     * response ratio (waited + runtime) / runtime goes first, so a job's
     * turn comes however long it is.  Off: waiting time alone, oldest
     * first, in both places. */
    bool short_first;
    /* AL_PACK_FRAG's workload profile, when the caller knows the mix of
     * tasks to expect (FGD measures fragmentation against the target
     * workload's task shapes, known from history): nprofile shapes, owned
     * by the caller like the rest of the snapshot.  Every shape of weight
     * > 0 is used, so the cost of a placement grows with nprofile.  With
     * none (nprofile 0, or every weight 0) the core builds one each cycle
     * from the 24 most common task shapes among running and waiting jobs.
     * A weight that is negative, infinite or NaN, a negative count or a
     * gpu_milli outside 0..999 makes al_sched_run() fail with AL_EINVAL. */
    int nprofile;
    const al_shape_t *profile;
    /* Placement strategies by pool: a job that asks for a pool listed here
     * is placed with that pool's strategy instead of `pack`; npool_packs
     * entries, owned by the caller. */
    int npool_packs;
    const al_pool_pack_t *pool_packs;
    /* Pipelines (dag.c).  Look-ahead: a waiting job whose dependencies in
     * the snapshot all run gets a reservation at their expected end, made
     * before the backfill reservations, so that the capacity they free is
     * planned for it; up to lookahead_depth such jobs a cycle (0 turns
     * look-ahead off), nearest end first, each only when that end is
     * within lookahead_horizon seconds of now (0: any).  With
     * lookahead_hold, what the stage needs beyond what its inputs give
     * back is held now like a backfill reservation's room: lent to work
     * that ends in time (and, with lend_reserved, to preemptible work);
     * without it (the default) a look-ahead holds nothing today and only
     * claims the future: no GPU stays idle for a stage that cannot start
     * yet (holding raised the simulator's wastage and preemptions and
     * lengthened pipelines; docs/simulation.md).  A dependency past its
     * expected end (an overrun) drops the look-ahead.  CPU-only jobs get none.
     * ignore_deps: the order and the reservations ignore the graph (no critical
     * path, no look-ahead), as a dependency-blind scheduler would. */
    int lookahead_depth;
    int64_t lookahead_horizon;
    bool lookahead_hold;
    bool ignore_deps;
    /* Least attained service first (after Tiresias, Gu et al., NSDI '19):
     * thresholds of attained service in GPU-seconds, ascending, ended by
     * the first 0 (all 0: off).  A job's service level is the number of
     * thresholds its attained service (al_job_t.attained plus the current
     * run, GPU-seconds) has reached.  Inside a priority class a job of a
     * lower level comes first in its queue's order among jobs of the same
     * expected runtime (to the minute), and may preempt (cfg.preempt) a
     * preemptible running job of its queue at a higher level when that
     * pays: when the running job's estimate less three times its current
     * run exceeds the newcomer's expected runtime, or when it has run more
     * than four times that runtime (a job that ran long is likely long,
     * whatever its estimate says).  A job a cycle started yields the same
     * way to one with less service, its earlier runs counting.  This
     * bounds what a wrong estimate costs: shortest expected runtime first
     * orders the jobs, and a long job that passed for short yields to new
     * short jobs once it has run long.  Across queues, with preempt on, a
     * job waiting past starve_after may evict a job of another queue (even
     * one within its deserved quota) of its class or lower at a higher
     * level whose current run exceeds both starve_after and four times
     * the waiting job's expected runtime; and reclaim for a job whose
     * earlier runs were that long does not take back a gang larger than
     * its own queue's deserved quota at a lower level (docs/scheduling.md,
     * "Starvation across queues").  Thresholds that are negative or not
     * ascending make al_sched_run() fail with AL_EINVAL. */
    int64_t service_levels[AL_MAX_SERVICE_LEVELS];
} al_config_t;

/* Fills *cfg with the defaults: bin-packing, no topology levels,
 * usage_weight 1, usage_half_life 7 days, reserve_depth 4, default_runtime
 * 24 h, lend_reserved, reclaim, preempt, borrow and short_first on,
 * strict_order and ignore_queues off, max_reclaim_tries 8, starve_after
 * 1 h, no workload profile, lookahead_depth 8 with no horizon and
 * lookahead_hold off, the graph's order on (ignore_deps off), and service
 * levels at 1, 3600 and 36000 GPU-seconds (never ran, under a GPU-hour,
 * under ten, more). */
void al_config_default(al_config_t *cfg);

/* ------------------------------------------------------------------ */
/* Snapshot                                                           */

typedef struct al_snapshot {
    int64_t now;
    const al_config_t *config;       /* NULL: defaults */
    const al_allocator_t *allocator; /* NULL: malloc/realloc/free */
    int nnodes;
    const al_node_t *nodes;
    int nqueues;
    const al_queue_t *queues;
    int njobs;
    const al_job_t *jobs;
} al_snapshot_t;

/* ------------------------------------------------------------------ */
/* Result                                                             */

typedef enum al_decision_kind {
    AL_DEC_START = 0, /* start job with the given task placements */
    AL_DEC_EVICT,     /* stop a running job entirely */
    AL_DEC_SHRINK /* stop the last `ntasks` tasks of a running elastic job */
} al_decision_kind_t;

/* Why a job was evicted. */
typedef enum al_evict_why {
    AL_EVICT_RECLAIM =
        0, /* its queue was over fair share; another queue reclaimed */
    AL_EVICT_PREEMPT, /* a higher-priority job of its own queue needed room */
    AL_EVICT_RESERVATION /* it ran on lent capacity and the reservation's job
                            starts */
} al_evict_why_t;

typedef struct al_decision {
    al_decision_kind_t kind;
    int32_t job;           /* index into snapshot jobs */
    int32_t ntasks;        /* START: tasks placed; SHRINK: tasks to stop */
    al_placement_t *tasks; /* START: ntasks placements */
    al_evict_why_t why;    /* EVICT/SHRINK */
    int32_t for_job;       /* EVICT/SHRINK: the job that needed the room; START:
                              reservation lent from, or -1 */
    bool requeue;          /* EVICT: put back to pending (preemptible jobs) */
    bool lent;             /* START: runs on capacity reserved for for_job */
} al_decision_t;

/* Why a pending job did not start this cycle. */
typedef enum al_reason_code {
    AL_WHY_NONE = 0,    /* it started (or is not pending) */
    AL_WHY_HELD,        /* held by a user */
    AL_WHY_DEPS,        /* waiting for dependencies */
    AL_WHY_DEPS_NEVER,  /* a dependency failed: can never run */
    AL_WHY_BAD_QUEUE,   /* queue index invalid or not a leaf */
    AL_WHY_TOO_BIG,     /* no node/domain could ever hold it */
    AL_WHY_LIMIT,       /* queue `queue` at its `res` limit `amount` */
    AL_WHY_MODEL_LIMIT, /* queue `queue` at its per-model limit */
    AL_WHY_DESERVED,  /* non-preemptible and queue `queue` would exceed deserved
                       */
    AL_WHY_NO_BORROW, /* static policy: queue at deserved quota */
    AL_WHY_CAPACITY,  /* not enough free resources anywhere now */
    AL_WHY_NO_NODE,   /* free capacity exists but no node fits one task */
    AL_WHY_TOPOLOGY,  /* no topology domain can hold the gang now */
    AL_WHY_RESERVED,  /* holds a reservation starting at `time` */
    AL_WHY_BEHIND_RESERVATION, /* would delay job `job`'s reservation */
    AL_WHY_ORDER,              /* strict order: behind job `job` */
    AL_WHY_NO_VICTIM,          /* reclaim found no victims to free room */
    AL_WHY_YIELDED,            /* placed, then gave way within the cycle to job
                                  `job`, whose queue is below its fair share */
    AL_WHY_NO_MATCH,  /* no node has the GPU model, pool or labels asked for */
    AL_WHY_BUILD_CAP, /* a build job and queue `queue` at its build cap */
    AL_WHY_COUNT      /* the number of codes */
} al_reason_code_t;

typedef struct al_reason {
    al_reason_code_t code;
    int32_t queue;  /* queue concerned, or -1 */
    int32_t job;    /* other job concerned, or -1 */
    int32_t res;    /* AL_RES_* concerned */
    int64_t amount; /* a quantity (limit, free GPUs, ...) */
    int64_t time;   /* a time (reservation start) */
} al_reason_t;

/* A reservation made for a blocked job: at `start` it should fit on `nodes`. */
typedef struct al_reservation {
    int32_t job;
    int32_t nnodes;
    int64_t start;
    int32_t *nodes; /* node indices */
    int32_t *tasks; /* tasks planned on each node, parallel to nodes */
} al_reservation_t;

/* Per-queue accounting after the cycle's decisions. */
typedef struct al_queue_share {
    double fair[AL_NRES];       /* fair share */
    int64_t allocated[AL_NRES]; /* in use after decisions */
    int64_t demand[AL_NRES];    /* running + pending requests (subtree) */
    int64_t nonpreempt_gpu;     /* milli-GPUs held by non-preemptible jobs */
} al_queue_share_t;

typedef struct al_cycle_stats {
    int started;    /* jobs started */
    int placements; /* tasks placed */
    int evicted;    /* jobs evicted or shrunk */
    int reservations;
    int considered; /* pending jobs looked at */
    int reclaim_tries;
} al_cycle_stats_t;

typedef struct al_result {
    int ndecisions;
    al_decision_t *decisions;
    int nreservations;
    al_reservation_t *reservations;
    int njobs;
    al_reason_t *reasons; /* one per snapshot job, indexed like it */
    int nqueues;
    al_queue_share_t *queues; /* one per snapshot queue */
    al_cycle_stats_t stats;
    /* Private: the memory the result lives in. */
    struct al_arena *arena;
} al_result_t;

/* ------------------------------------------------------------------ */
/* Functions                                                          */

/*
 * Runs one scheduling cycle.  On success returns 0 and stores a new result in
 * *out, which the caller releases with al_result_destroy().  On failure
 * returns a negative AL_E* code, leaves *out untouched and, when cause is not
 * NULL, may store a message in *cause, which the caller frees with
 * al_cause_free(snap, cause): the core makes it with snap->allocator (the
 * libc default when snap or its allocator is NULL), like everything else.
 * AL_EINVAL: the snapshot is inconsistent (an index out of range, a parent
 * after its child, a running job without placement...).  AL_ENOMEM: the
 * allocator failed; nothing leaks.
 */
int al_sched_run(const al_snapshot_t *snap, al_result_t **out, char **cause);

/* Frees a cause that al_sched_run(snap, ...) stored, with the allocator it
 * was made with.  al_cause_free(snap, NULL) does nothing. */
void al_cause_free(const al_snapshot_t *snap, char *cause);

/* Releases a result.  al_result_destroy(NULL) does nothing. */
void al_result_destroy(al_result_t *res);

/*
 * Writes a human-readable explanation of reason r of job `job` into buf (at
 * most len bytes, always NUL-terminated when len > 0), for instance "queue
 * vision at gpu limit 16" or "waiting for reservation at +42 min".  Returns
 * the length the full text needs, like snprintf.
 */
int al_reason_format(const al_snapshot_t *snap, const al_reason_t *r, char *buf,
                     size_t len);

/*
 * A reason code's short name, stable across versions and safe as a label
 * or a JSON key ("capacity", "no_node_fits", "over_deserved"; "none" for
 * AL_WHY_NONE), or NULL for a value that is no code.  Metrics and
 * benchmarks count reasons by it.
 */
const char *al_reason_name(al_reason_code_t code);

/*
 * Decays a usage figure: the value `usage` measured `elapsed` seconds ago,
 * with a half-life of `half_life` seconds (<= 0: no decay).  The shell keeps
 * al_queue_t.usage with this and adds new usage as it accrues.
 */
double al_usage_decay(double usage, int64_t elapsed, int64_t half_life);

/* The service (al_job_t.attained, GPU-seconds) that a run of `seconds` of
 * ntasks tasks of task_milli milli-GPUs each attains.  A task with no GPU
 * counts as one whole GPU, so that a job that asks only for CPUs also
 * leaves the first service levels as it runs: otherwise it would stay at
 * the top level however long it ran, and a long CPU-only job would never
 * yield its cores.  Shells add a finished run's service with this. */
double al_service(int64_t seconds, int64_t ntasks, int64_t task_milli);

/* Total milli-GPUs requested by one task of job j's request. */
int64_t al_request_gpu_milli(const al_request_t *req);

#endif /* AL_CORE_H */
