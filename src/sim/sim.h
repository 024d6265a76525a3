/*
 * sim.h -- the door of the allot simulator (library allotsim).
 *
 * The simulator replays a job trace through the production scheduling core
 * (al_sched_run) in virtual time.  It is a shell around the core exactly like
 * the controller: it builds a snapshot on every scheduling event, runs one
 * cycle and applies the decisions (start, evict) to its own model of the
 * cluster, where a started job runs for its trace duration and a preempted
 * job restarts from its last checkpoint.
 *
 * Modules (sim_int.h maps them): trace.c (the common trace CSV), cluster.c
 * (node groups), queues.c (the --queues-file hierarchy), sim.c (the event
 * loop) over cycle.c, setup.c, policy.c, jobs.c, metrics.c and events.c,
 * report.c and report_html.c (JSON, table, CSV and HTML output), parse.c
 * (what the parsers share; internal, in sim_int.h).  Parsers never abort
 * on bad input: they return AL_EPARSE and a malloc()ed *cause naming the
 * file, line and field of every problem found.  Out of memory aborts
 * (al_xmalloc semantics, STYLE rule 7): the library links src/common's
 * base (allocation, buffers, files; libc only), not its JSON and crypto
 * part.
 *
 * Nothing here keeps global state: runs are independent and deterministic
 * (the same inputs give the same result, byte for byte, apart from the
 * wall-clock fields sim_wall_s and avg_cycle_ms).
 */
#ifndef AL_SIM_H
#define AL_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"

/* ------------------------------------------------------------------ */
/* Trace                                                              */

/* One row of the common trace CSV (see data/traces/README.md). */
typedef struct al_trace_job {
    char *id;          /* job_id, never empty */
    int64_t submit;    /* submit_time_s */
    int64_t duration;  /* duration_s: run time once placed */
    int64_t gpu_milli; /* num_gpus x 1000 (fractions allowed below 1) */
    int64_t cpu_milli; /* num_cpus x 1000, 0 when the column is empty */
    char *user;        /* may be "" */
    char *queue;       /* may be "" */
    char *status;      /* may be "" */
    int line;          /* line number in the file (1 = header) */
    /* A pipeline's stage (columns pipeline_id, stage, needs), or NULLs;
     * deps: the indices in the sorted trace of the stages it needs. */
    char *pipeline, *stage, *needs;
    int ndeps;
    int *deps;
    /* max_gpus x 1000 for an elastic job (it runs with gpu_milli up to
     * this; duration is its run time at gpu_milli), else 0. */
    int64_t max_gpu_milli;
} al_trace_job_t;

typedef struct al_trace {
    char *name; /* file name used in messages */
    int njobs;
    al_trace_job_t *jobs; /* sorted by submit time, then line */
    int nrows;            /* data rows read, before filtering */
} al_trace_t;

/*
 * Parses a trace held in memory (len bytes; need not be NUL-terminated).
 * Rows whose queue column differs from filter_queue (when not NULL) are
 * validated and then dropped.  On success returns 0 and stores a new trace
 * in *out (free with al_trace_destroy).  On a malformed file returns
 * AL_EPARSE, leaves *out untouched and stores in *cause (when not NULL) a
 * malloc()ed text listing every problem as "name:line: field 'f': ...".
 */
int al_trace_parse(const char *name, const char *buf, size_t len,
                   const char *filter_queue, al_trace_t **out, char **cause);

/*
 * The FGD paper's placement workload (published_results/README.md §2): the
 * jobs of t shuffled with `seed`, then drawn with replacement until their
 * requested GPUs reach target_milli.  Submit times become 0, 1, 2, ... (one
 * arrival per second, in order) and durations `duration`.  Returns a new
 * trace (free with al_trace_destroy).
 */
al_trace_t *al_trace_resample(const al_trace_t *t, uint64_t seed,
                              int64_t target_milli, int64_t duration);

/* Reads and parses a file; AL_EIO when it cannot be read. */
int al_trace_load(const char *path, const char *filter_queue, al_trace_t **out,
                  char **cause);

/* Releases a trace; NULL is a no-op. */
void al_trace_destroy(al_trace_t *t);

/* ------------------------------------------------------------------ */
/* Cluster                                                            */

/* A group of identical nodes (one line of a --cluster file). */
typedef struct al_cluster_group {
    char *name;
    int count;          /* nodes */
    int gpus;           /* devices per node */
    char *model;        /* GPU model, may be NULL */
    int64_t gpu_mem;    /* bytes per device */
    int64_t cpu_milli;  /* per node */
    int64_t mem_bytes;  /* per node */
    int nodes_per_rack; /* 0: no rack level */
    int nvlink;         /* devices per NVLink domain, 0 = one domain */
    char *pool;         /* may be NULL */
} al_cluster_group_t;

typedef struct al_cluster {
    int ngroups;
    al_cluster_group_t *groups;
    int nnodes;
    al_node_t *nodes;     /* the core's view, built from the groups */
    al_device_t *devices; /* all nodes' devices, back to back */
    char **strings;       /* node names and rack names we own */
    int nstrings;
    bool racks;           /* nodes carry a "rack" topology level */
    int64_t gpu_capacity; /* milli-GPUs in all nodes */
    int max_gpus_per_node;
} al_cluster_t;

/*
 * Parses a cluster file: one node group per line as key=value words, e.g.
 *   group name=a100 count=16 gpus=8 model=A100-80GB gpu_mem_gib=80
 *         cpus=128 mem_gib=1024 nodes_per_rack=8 nvlink=8 pool=train
 * '#' starts a comment.  Keys: name, count (required), gpus (required),
 * model, gpu_mem_gib, cpus, mem_gib, nodes_per_rack, nvlink, pool.  Returns
 * 0 and a new cluster in *out, or AL_EPARSE with every problem in *cause.
 */
int al_cluster_parse(const char *name, const char *buf, size_t len,
                     al_cluster_t **out, char **cause);

/* Reads and parses a cluster file; AL_EIO when it cannot be read. */
int al_cluster_load(const char *path, al_cluster_t **out, char **cause);

/*
 * A homogeneous cluster of `nodes` nodes with `gpus` GPUs each (model may be
 * NULL; nodes_per_rack 0 means no rack level; cpus and mem_gib per node).
 * Returns NULL when an argument is out of range.
 */
al_cluster_t *al_cluster_homogeneous(int nodes, int gpus, const char *model,
                                     int nodes_per_rack, int cpus,
                                     int64_t mem_gib);

/* Releases a cluster; NULL is a no-op. */
void al_cluster_destroy(al_cluster_t *c);

/* ------------------------------------------------------------------ */
/* Queues                                                             */

/* One queue of a hierarchy, in GPUs (fractions allowed). */
typedef struct al_qdef {
    char *name;
    int parent;      /* index of an earlier queue, or -1 */
    double deserved; /* GPUs */
    double weight;   /* over-quota weight */
    double limit;    /* GPUs, < 0 for none */
    int priority;
} al_qdef_t;

typedef struct al_queues {
    int nqueues;
    al_qdef_t *queues;
} al_queues_t;

/*
 * Parses a --queues-file: one queue per line as key=value words, e.g.
 *   queue name=vision parent=research deserved=16 weight=2 limit=48
 * Keys: name (required, unique), parent (an earlier queue's name), deserved
 * (GPUs, default 0), weight (default 1), limit (GPUs, default none), priority
 * (default 0).  A child's deserved quotas must not sum above its parent's.
 */
int al_queues_parse(const char *name, const char *buf, size_t len,
                    al_queues_t **out, char **cause);

/* Reads and parses a queues file; AL_EIO when it cannot be read. */
int al_queues_load(const char *path, al_queues_t **out, char **cause);

/* Releases queue definitions; NULL is a no-op. */
void al_queues_destroy(al_queues_t *q);

/* ------------------------------------------------------------------ */
/* Simulation                                                         */

typedef enum al_policy {
    AL_POLICY_ALLOT = 0, /* the core's defaults: quotas, reclaim, backfill */
    AL_POLICY_FIFO,      /* one global order, strict, no backfill */
    AL_POLICY_STATIC,    /* each queue fixed to its deserved GPUs */
    AL_POLICY_BACKFILL,  /* one global order with reservations, no quotas */
    AL_POLICY_TIRESIAS,  /* 2D least-attained-service with preemption */
    AL_POLICY_SJF,       /* shortest true duration first (oracle) */
    AL_POLICY_COUNT
} al_policy_t;

/* Name of a policy ("allot", "fifo", ...). */
const char *al_policy_name(al_policy_t p);

/* Looks a policy up by name; -1 when unknown. */
int al_policy_find(const char *name);

/* How jobs are spread over queues. */
typedef enum al_qmode {
    AL_QMODE_COLUMN = 0, /* the trace's queue column */
    AL_QMODE_USER,       /* the trace's user column */
    AL_QMODE_HASH,       /* N synthetic queues by a stable hash of job_id */
    AL_QMODE_FILE        /* a --queues-file hierarchy */
} al_qmode_t;

/* How the scheduler knows a trace's pipelines (stages.c). */
typedef enum al_sim_dag {
    AL_SIM_DAG_ON = 0, /* stages submitted with their pipeline, the graph
                          known: critical path and look-ahead (holding
                          nothing free today, the core's default) */
    AL_SIM_DAG_OFF,    /* the same submissions, the graph ignored */
    AL_SIM_DAG_BLIND,  /* a stage submitted when what it needs has ended */
    AL_SIM_DAG_HOLD    /* on, and look-aheads hold free capacity now
                          (al_config_t.lookahead_hold) */
} al_sim_dag_t;

/* "on", "off", "blind" or "hold"; NULL for a value out of range. */
const char *al_sim_dag_name(al_sim_dag_t d);
/* An al_sim_dag_t by name, or -1. */
int al_sim_dag_find(const char *name);

typedef struct al_sim_opts {
    al_policy_t policy;
    al_qmode_t qmode;
    int nqueues;              /* AL_QMODE_HASH */
    const al_queues_t *qfile; /* AL_QMODE_FILE */
    int64_t checkpoint;       /* seconds between checkpoints, 0 = none */
    /* Seconds a job restarted after an eviction holds its GPUs before it
     * does any work (reloading its checkpoint); every policy pays it. */
    int64_t restart_overhead;
    double estimate_factor; /* estimate = duration x factor */
    /* Log-normal noise on the estimates: each job's is multiplied by
     * exp(estimate_noise x z), z standard normal drawn from estimate_seed
     * and the job's id (al_sim_estimate_noise); 0 = none. */
    double estimate_noise;
    uint64_t estimate_seed;
    int64_t usage_half_life; /* seconds, for al_usage_decay */
    double usage_weight;     /* al_config_t.usage_weight; < 0: default */
    int pack;                /* al_config_t.pack; < 0: the policy's */
    int short_first; /* al_config_t.short_first: 0 off, 1 on, < 0 policy's */
    int64_t tick;    /* extra cycle period while work pends, 0 off */
    double tiresias_thresholds[4]; /* attained GPU-seconds per level */
    int ntiresias;
    /* The allot policy's al_config_t.service_levels when
     * service_levels_set (all 0: off); otherwise the core's default. */
    int64_t service_levels[4];
    bool service_levels_set;
    FILE *timeseries; /* when not NULL, CSV rows are written here */
    bool progress;    /* progress line on stderr */
    bool no_timing;   /* write 0 for wall-clock figures (reproducible) */
    /* Placement experiments: a job the cycle at its arrival does not start
     * never starts (it is counted unschedulable), as in FGD's simulator. */
    bool drop_unplaced;
    /* al_config_t.profile: the workload profile AL_PACK_FRAG judges
     * fragmentation against (al_sim_profile() makes one from a trace);
     * NULL: the core's own, from running and waiting jobs. */
    int nprofile;
    const al_shape_t *profile;
    al_sim_dag_t dag; /* pipelines: AL_SIM_DAG_ON by default */
} al_sim_opts_t;

/* Fills opts with the defaults (allot, queue column, checkpoint 1800 s,
 * restart overhead 60 s, estimate factor 2 without noise, estimate seed 1,
 * half-life 7 days, no workload profile). */
void al_sim_opts_default(al_sim_opts_t *opts);

/* The largest estimate the core is given, in seconds (about 139,000 years:
 * above duration x factor for every trace the parser accepts, so it only
 * ever cuts a noisy estimate's far tail). */
#define AL_SIM_MAX_ESTIMATE ((int64_t)1 << 42)

/*
 * The noise factor of one job's runtime estimate: exp(noise x z), where z is
 * a standard normal drawn from seed and job_id alone (a hash, no generator
 * state).  A job therefore keeps its factor across restarts, and the factor
 * depends neither on the order of events nor on the other jobs of the trace.
 * Exactly 1 when noise is 0.
 */
double al_sim_estimate_noise(uint64_t seed, const char *job_id, double noise);

/*
 * The runtime estimate the core sees for job_id with rem seconds of work
 * left, under every policy but sjf-oracle (which sees rem):
 * ceil(rem x estimate_factor x al_sim_estimate_noise(...)), at least 1 and
 * at most AL_SIM_MAX_ESTIMATE.  With estimate_noise 0 this is
 * ceil(rem x estimate_factor), bit for bit.
 */
int64_t al_sim_estimate(const al_sim_opts_t *opts, const char *job_id,
                        int64_t rem);

/*
 * The workload profile of a trace, as FGD builds its "typical pods": the
 * task shapes of all its jobs (split into tasks as al_sim_run() splits them
 * for cluster), weighted by their number of tasks, most popular first, cut
 * after the fewest shapes that cover `coverage` (0..1) of all tasks; CPU-only
 * tasks count.  Stores a malloc()ed array in *out (free it with free()) and
 * returns the number of shapes kept.
 */
int al_sim_profile(const al_trace_t *tr, const al_cluster_t *cl,
                   double coverage, al_shape_t **out);

/* What happened to one job. */
typedef struct al_sim_job {
    int queue;           /* metrics queue index */
    int64_t first_start; /* -1 if never started */
    int64_t end;         /* completion time, -1 if not completed */
    int64_t pending;     /* seconds spent pending in all */
    int64_t lost;        /* GPU-milli-seconds of work lost to preemption */
    int64_t restart;     /* GPU-milli-seconds of restart overhead paid */
    int preemptions;
    int resizes; /* an elastic job: times it was shrunk while running */
    bool unschedulable;
} al_sim_job_t;

/* Per-queue aggregates over the run. */
typedef struct al_sim_queue {
    char *name;
    double deserved_gpus;
    double alloc_gpu_s;  /* allocated GPU-seconds */
    double fair_gpu_s;   /* fair share GPU-seconds (integral) */
    double demand_gpu_s; /* demand GPU-seconds (integral) */
} al_sim_queue_t;

/* Utilisation sampled on a fixed grid for plots. */
#define AL_SIM_BINS 400

typedef struct al_sim_result {
    al_policy_t policy;
    const al_trace_t *trace;
    int njobs;
    al_sim_job_t *jobs; /* parallel to trace->jobs */
    int nqueues;
    al_sim_queue_t *queues;
    int64_t capacity;    /* milli-GPUs */
    int64_t t_first;     /* first submit */
    int64_t t_last;      /* last completion (or last event) */
    double alloc_gpu_s;  /* allocated GPU-seconds in [t_first, t_last] */
    double wasted_s;     /* seconds with an idle GPU a pending job could use */
    double wasted_gpu_s; /* idle GPU-seconds within those seconds */
    int64_t preemptions;
    double lost_gpu_s;    /* work lost since the victims' last checkpoints */
    double restart_gpu_s; /* GPU-seconds of restart overhead paid */
    /* Shares (shares.c, docs/simulation.md): the 95th percentile of the
     * relative error of each queue's share of an hour's allocated
     * GPU-time against its max-min fair share, over the queue-hours with
     * demand (share_hours of them); the longest time a queue waited below
     * its deserved share with a pending job that fits in it, and the
     * queue-seconds spent so in all. */
    double share_error_p95;
    int64_t share_hours;
    int64_t restart_overhead, checkpoint; /* the run's settings, seconds */
    double max_guarantee_wait_s;
    double guarantee_wait_s;
    /* The same waits judged on GPUs alone: a job without GPUs, or one
     * whose CPUs exceed what the queue deserves, counted as fitting. */
    double max_guarantee_wait_gpu_only_s;
    double guarantee_wait_gpu_only_s;
    int64_t cycles;
    double core_ms;                /* time inside al_sched_run */
    double wall_s;                 /* whole replay */
    double util_bins[AL_SIM_BINS]; /* mean allocation ratio per bin */
    /* Allocation share (allocated / capacity GPUs) right after the arrival
     * that brought the arrived GPU demand to 100% of capacity, and at the
     * last arrival; -1 if demand never reached capacity. */
    double alloc_at_full;
    double alloc_at_end;
    double arrived_end; /* arrived GPU demand / capacity at the end */
    /* Pipelines (trace columns pipeline_id,stage,needs): how many, how
     * many completed every stage, their mean makespan (first submission
     * to the last stage's end, seconds) and completions per hour over the
     * run (first submission to the last pipeline's end). */
    al_sim_dag_t dag;
    int npipelines, pipelines_done;
    double pipe_makespan_mean, pipelines_per_hour;
} al_sim_result_t;

/*
 * Replays trace on cluster under opts.  Returns 0 and a new result in *out
 * (free with al_sim_result_destroy), or a negative AL_E* code with a
 * malloc()ed *cause: AL_EINVAL for inconsistent options (no queues, a
 * cluster without GPUs), or the core's error when a cycle fails.
 */
int al_sim_run(const al_trace_t *trace, const al_cluster_t *cluster,
               const al_sim_opts_t *opts, al_sim_result_t **out, char **cause);

/* Releases a result; NULL is a no-op. */
void al_sim_result_destroy(al_sim_result_t *r);

/* ------------------------------------------------------------------ */
/* Reports                                                            */

/* Summary figures computed from a result (the --json fields). */
typedef struct al_sim_summary {
    int jobs, completed, unschedulable;
    double avg_jct, p50_jct, p95_jct, p99_jct;
    double avg_queue, p95_queue, worst_queue_avg_queue;
    double makespan, gpu_alloc_ratio, wastage_ratio, wastage_gpu_ratio;
    int64_t preemptions;
    double lost_gpu_hours, jain_fairness, sim_wall_s;
    /* preemptions per schedulable job; lost work plus restart overhead */
    double preemptions_per_job, restart_gpu_hours, gpu_hours_lost_to_preemption;
    double share_error_p95, max_guarantee_wait, guarantee_wait_hours;
    double max_guarantee_wait_gpu_only, guarantee_wait_gpu_only_hours;
    int64_t share_hours;
    int64_t cycles;
    double avg_cycle_ms;
} al_sim_summary_t;

void al_report_summary(const al_sim_result_t *r, al_sim_summary_t *s);

/* Writes the --json object (one line) for a result. */
void al_report_json(FILE *f, const al_sim_result_t *r);

/* Writes the human-readable tables for a result. */
void al_report_table(FILE *f, const al_sim_result_t *r);

/* Writes one CSV row per job: job_id, queue, gpus, submit_s, duration_s,
 * first_start_s, end_s, jct_s, queue_s, preemptions, lost_gpu_s,
 * unschedulable, restart_gpu_s (times empty when the job never
 * started/ended). */
void al_report_jobs_csv(FILE *f, const al_sim_result_t *r);

/* Writes a self-contained HTML page comparing n results (one per policy). */
void al_report_html(FILE *f, const char *title, const al_sim_result_t *const *r,
                    int n);

#endif /* AL_SIM_H */
