/*
 * sim_int.h -- internals shared between the files of the simulator
 * (sim.h is its door).
 *
 * The files: the inputs, parsed (trace.c, cluster.c, queues.c, with the
 * helpers they share in parse.c); a run (sim.c and the files below it, see
 * "A run" further down); what a run prints (report.c, report_html.c).
 *
 * Memory: the simulator is a shell, so it aborts on out-of-memory through
 * src/common's al_xmalloc and friends (STYLE rule 7) instead of threading
 * AL_ENOMEM through every parser; its buffers are src/common's al_buf.
 */
#ifndef AL_SIM_INT_H
#define AL_SIM_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "sim.h"
#include "xmalloc.h"

/*
 * Collects parse errors: at most AL_MAX_ERRORS messages are kept, the rest
 * are counted and summarised as "... and N more".
 */
#define AL_MAX_ERRORS 20
typedef struct al_errs {
    al_buf_t buf;
    int n;
} al_errs_t;

void al__err(al_errs_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Hands the collected text to *cause (malloc()ed; freed if cause is NULL),
 * resets e and returns AL_EPARSE. */
int al__err_give(al_errs_t *e, char **cause);

/*
 * The next meaningful line of a `key=value` file (--cluster, --queues-file):
 * what follows '#' is cut, CR and commas become spaces, blank lines are
 * skipped.  Returns the line, malloc()ed (the caller frees it), with its
 * 1-based number in *line, or NULL at the end of buf.  *off is the reading
 * position.  A line holding a NUL byte is reported in errs and skipped.
 */
char *al__kv_line(const char *name, const char *buf, size_t len, size_t *off,
                  int *line, al_errs_t *errs);

/* parse.c: reads a whole file (NUL-terminated, *len bytes before the NUL);
 * returns 0, or AL_EIO with a message naming the file in *cause. */
int al__read_file(const char *path, char **data, size_t *len, char **cause);

/* Parses a whole decimal integer / finite number; 0 or -1. */
int al__parse_i64(const char *s, int64_t *v);
int al__parse_num(const char *s, double *v);

/* A 64-bit hash of a string, stable across runs and machines: FNV-1a's
 * steps from 1469598103934665603, one digit short of FNV's offset basis.
 * Kept so: queues by hash and estimate noise (hence every result) depend
 * on it. */
uint64_t al__hash(const char *s);

/*
 * Splits a line of "key=value" words.  Calls fn(ctx, key, value) for each;
 * the first bare word (no '=') is passed with key NULL.
 */
typedef void (*al_kv_fn)(void *ctx, const char *key, const char *val);
void al__kv_split(char *line, al_kv_fn fn, void *ctx);

/* tracedag.c: resolves the pipelines of a parsed, sorted trace: each
 * stage's needs into deps (indices); a stage without a pipeline, a name
 * twice in one pipeline, a need that names no stage of its pipeline, or a
 * cycle is reported in errs with its line.  0, or -1 after an error. */
int al__trace_dag(const char *name, al_trace_job_t *jobs, int n,
                  al_errs_t *errs);

/* ------------------------------------------------------------------ */
/* A run (sim.c and the files it calls)                               */

/*
 * The files of a run, top to bottom (each calls only those below it):
 *
 *   sim.c      the event loop: al_sim_run(), arrivals, completions, ticks
 *   setup.c    the state of a run: queues, job shapes, al_sim_profile()
 *   cycle.c    one core cycle: the snapshot, al_sched_run(), its decisions
 *   stages.c   pipelines: stages waiting for what they need, the graph
 *              in the snapshot, the pipelines' figures
 *   metrics.c  wastage, allocation and shares over time, time series, bins
 *   shares.c   the policy-independent fair share, the hourly share error
 *              and the waits for a queue's guarantee
 *   jobs.c     a job's state changes and the room it takes on the nodes
 *   policy.c   the policies (configurations of the core, priorities,
 *              estimates)
 *   events.c   the event heap
 */

typedef struct policy {
    const char *name;
    void (*configure)(al_config_t *cfg);
    bool single_queue; /* the core sees one queue holding every job */
    bool oracle;       /* priorities and estimates from the true duration */
    bool las;          /* priorities from attained service (Tiresias) */
} policy_t;

/* S_WAITING: a pipeline's stage, submitted, waiting for the stages it
 * needs (stages.c). */
enum { S_FUTURE = 0, S_PENDING, S_RUNNING, S_DONE, S_UNSCHED, S_WAITING };

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
    double served;    /* al_service() over finished runs (the core's) */
    uint32_t seq;     /* bumps on every start/evict: stale events die */
    int prio_oracle;  /* sjf-oracle priority */
    double est_noise; /* al_sim_estimate_noise of the job, fixed for the run */
    int act;          /* position in the active array, -1 none */
    bool lent;
    al_placement_t *place;
    int deps_left; /* stages it needs that have not ended; -1: never */
    bool arrived;  /* its submission time has come */
    /* An elastic job (max_tasks > min_tasks; ntasks is its size now):
     * its work is in seconds at min_tasks, done at ntasks / min_tasks of
     * that pace; seg_work is the work of this run up to seg_start, when
     * its size last changed. */
    int min_tasks, max_tasks;
    int64_t task_milli; /* milli-GPUs of one task */
    int64_t seg_start;
    double seg_work;
    /* Restart overhead: a job evicted once pays o->restart_overhead at the
     * start of each later run, [start, ovh_end), doing no work; seg_start
     * is then ovh_end.  ovh_from: how far the overhead has been counted. */
    bool evicted;
    int64_t ovh_from, ovh_end;
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
    /* pipelines (stages.c) */
    al_sim_dag_t dag;
    int *succ_off, *succ; /* CSR: the stages that need each job */
    int *sidx;            /* trace index -> snapshot index this cycle */
    al_dep_t *sdeps;      /* the snapshot's dependencies */
    int capdeps;
    /* shares.c: the hour being integrated and its per-queue GPU-seconds
     * (allocated, fair, demand); the errors of the hours past, each with
     * the number of hours that had it (a stretch of whole hours alike is
     * one entry); since when each queue waits for its guarantee (-1: it
     * does not) */
    int64_t hr_cur;
    double *hr_alloc, *hr_fair, *hr_dem;
    double *fair_w, *fair_d, *fair_f; /* scratch of the fair share */
    struct share_err *share_err;
    int64_t nshare_err, capshare_err, share_hours;
    int64_t *gw_since;
    int64_t *gw_min; /* scratch: smallest pending job per queue */
    /* the same counting GPUs only (the figure before CPU was counted) */
    int64_t *gg_since;
    int64_t *gw_cpu; /* scratch: millicores each queue runs */
} sim_t;

/* policy.c */
/* The policy p (p < AL_POLICY_COUNT). */
const policy_t *al__policy_get(al_policy_t p);
/* The core priority of job j at `now`: sjf-oracle's rank, Tiresias' level
 * of attained service, or the one level of every other policy. */
int al__policy_priority(const sim_t *s, const sjob_t *j, int64_t now);
/* sjf-oracle: sets every job's prio_oracle from its true duration. */
void al__policy_oracle(sim_t *s);
/* Tiresias: pushes the event of running job i's next level, if any. */
void al__policy_prio_event(sim_t *s, int i, int64_t now);
/* ceil(rem x factor x mult) within [1, AL_SIM_MAX_ESTIMATE]. */
int64_t al__estimate_of(int64_t rem, double factor, double mult);

/* events.c: the heap of completions and priority changes, earliest first
 * (then by kind, then by job: deterministic). */
void al__ev_push(sim_t *s, event_t e);
event_t al__ev_pop(sim_t *s);
/* Drops stale events at the top; returns whether one is left. */
bool al__ev_clean(sim_t *s);

/* stages.c: pipelines in a run (see the file) */
void al__stages_init(sim_t *s);
void al__stages_free(sim_t *s);
/* Job i's submission time has come. */
void al__stages_arrive(sim_t *s, int i, int64_t now);
/* Job i ended (done: completed; else unschedulable): what needs it. */
void al__stages_ended(sim_t *s, int i, int64_t now, bool done);
/* The dependencies of the waiting stages among the snapshot's n jobs. */
void al__stages_snapshot(sim_t *s, int n);
/* The pipelines' figures into the result. */
void al__stages_finish(sim_t *s);

/* jobs.c */
/* Records the run's first error (the later ones are consequences). */
void al__sim_error(sim_t *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds job i to the active jobs (pending or running). */
void al__act_add(sim_t *s, int i);
/* Job i starts as decision d says, ends, is evicted (keeping the work of
 * its last checkpoint), or is found unschedulable. */
void al__job_start(sim_t *s, int i, const al_decision_t *d, int64_t now);
void al__job_evict(sim_t *s, int i, int64_t now);
/* An elastic job's last `stop` tasks stop; it runs on, slower. */
void al__job_shrink(sim_t *s, int i, int stop, int64_t now);
void al__job_complete(sim_t *s, int i, int64_t now);
void al__job_unschedulable(sim_t *s, int i);
/* Whether job j fits on the free resources (empty: on the empty nodes). */
bool al__job_fits(const sim_t *s, const sjob_t *j, bool empty);
/* Whether job j can never start under the policy. */
bool al__job_never_fits(const sim_t *s, const sjob_t *j);

/* metrics.c */
/* Integrates the state, constant between events, over [from, to). */
void al__metrics_advance(sim_t *s, int64_t from, int64_t to);
/* Writes the time series' header line. */
void al__metrics_ts_header(sim_t *s);
/* Records the state after the cycles at `now`. */
void al__metrics_after(sim_t *s, int64_t now);
/* The figures of the whole run once it has ended (t_last, bins). */
void al__metrics_finish(sim_t *s);

/* shares.c */
void al__shares_init(sim_t *s);
void al__shares_free(sim_t *s);
/* Integrates the allocation and the max-min fair share over [from, to),
 * the state constant, closing the hours it passes. */
void al__shares_advance(sim_t *s, int64_t from, int64_t to);
/* After the cycles at `now`: which queues wait for their guarantee. */
void al__shares_after(sim_t *s, int64_t now);
/* Closes the last hour and the open waits at `end`; the figures into the
 * result. */
void al__shares_finish(sim_t *s, int64_t end);
/* Weighted max-min fair division of cap among n claims (w[k] weight,
 * d[k] demand; w[k] = 0: only what the others leave, shared equally) into
 * f[k]. */
void al__waterfill(int n, const double *w, const double *d, double cap,
                   double *f);

/* cycle.c */
/* Monotonic seconds, for the run's own timings. */
double al__now_s(void);
/* Runs one core cycle at `now`; returns the number of evictions. */
int al__cycle(sim_t *s, int64_t now);

/* report.c: qsort()'s order of doubles, ascending. */
int al__cmp_dbl(const void *a, const void *b);

/* setup.c */
/* Builds the state and the empty result (s->r) of a run. */
void al__sim_init(sim_t *s, const al_trace_t *trace,
                  const al_cluster_t *cluster, const al_sim_opts_t *opts);
/* Frees the state (not the result). */
void al__sim_free(sim_t *s);

#endif /* AL_SIM_INT_H */
