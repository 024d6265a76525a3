/*
 * server_int.h -- internals shared by the files of the controller, in
 * layers; a file calls only the layers below it (tools/layers.py checks
 * that no two files call each other, directly or around a circle):
 *
 *   server.c      `allot server`: options, start/stop and the HTTP intake;
 *                 the only file that knows libmicrohttpd
 *   ctl.c         the control loop: inbox, authentication, batches,
 *                 commit, replies given back through ctl->reply, timers
 *   bootstrap.c   a first start: the admin and join tokens, the default
 *                 queue
 *   route.c       the route table and path matching
 *   api_jobs.c, api_queues.c, api_nodes.c, api_tokens.c
 *                 the handlers of each resource
 *   agentproto.c  the agent protocol: register, sync, desired task sets,
 *                 parked long-polls, the server's copy of task output
 *   relay.c       interactive sessions: opening a stream (a user's and
 *                 the agent's dialing back), the streams an agent is to
 *                 open, the byte relay between the two (a thread per
 *                 session, its own lock)
 *   cycle.c       a scheduling cycle: snapshot, core, decisions applied
 *   elastic.c     elastic jobs: a shrink applied, growing into idle GPUs
 *                 (over state.c); elasticdoc.c their fields in bodies,
 *                 documents and the snapshot (under doc.c)
 *   consolidate.c moving checkpointing jobs to free a node for a waiting
 *                 gang (over state.c)
 *   pools.c       pools, labels and topology: the settings, the JSON
 *                 forms, what nodes and jobs bring to the snapshot
 *   state.c       state changes: a job's transitions, requeue, master
 *                 ports, a cycle due, a node's set changed, silent nodes
 *                 down, time limits
 *   req.c         a request's arguments and reply
 *   store.c       the store: transactions, objects to rows and back;
 *                 store_sqlite.c and store_pg.c, the backends, over
 *                 store_base.c (migrations, token rows)
 *   jobbody.c     a job submission body, checked
 *   doc.c         the JSON forms of jobs, queues and nodes (API and store)
 *   table.c       the tables: jobs, queues, nodes by name, dirty jobs
 *   clusterev.c   nodes' and queues' changes as events on GET /v1/events
 *                 (over events.c)
 *   reason.c      names of states and classes, reasons' text
 *   auth.c        bearer tokens (salted SHA-256, constant-time compare)
 *   metrics.c     GET /metrics: the Prometheus exposition of the tables
 *                 (a handler, declared in api_int.h)
 *   idle.c        idle reclaim: build sessions whose GPUs stay idle are
 *                 warned, then ended (called by the loop, over state.c)
 *   queueopts.c   a queue's build cap and idle settings, their JSON form
 *                 (under doc.c)
 *   members.c     who may use a queue: users' settings (a default queue),
 *                 groups, the check a submission passes; memberdoc.c
 *                 their JSON forms (under doc.c); api_users.c the
 *                 handlers of /v1/users and /v1/groups
 *   fairshare.c   the queues' decayed usage kept in the store (over
 *                 store.c)
 *   queuepolicy.c a queue's per-GPU-model quotas and minimum runtime,
 *                 their JSON form (under doc.c), the classes' minimums
 *   lifecycle.c   retries with back-off, a dependency never met, suspend
 *                 and resume (over state.c); lifecycledoc.c their fields
 *                 in bodies and documents (under doc.c)
 *   api_svc.c, svc.c, svcbody.c, router.c
 *                 inference services: their API, the services as stored
 *                 objects owning replica jobs (the loop's tick reconciles
 *                 them), their settings, and the router that takes their
 *                 requests (threads and a lock of its own); svc.h and
 *                 router.h declare them
 *
 * Beside them, server_cmd.c: `allot server`'s option table alone (data),
 * which the allot command links for its help without the controller.
 *
 * This header holds the types and the layers from state.c down; the
 * handlers' layer (agentproto.c, api_*.c) is declared in api_int.h, and
 * what lies under store.c (its backends) in store_int.h.
 *
 * Threads.  Two: libmicrohttpd's one polling thread (epoll) reads
 * requests, and the loop thread owns everything in al_ctl_t except `mu`,
 * `cv`, `inbox`, `waiting` and `stop`.  The access handler builds an
 * al__req_t, suspends its connection and queues the request on the inbox
 * under `mu`; the loop takes the whole inbox at once, handles it and,
 * once a reply is durable, hands the request back through ctl->reply,
 * which resumes its connection, and the daemon's thread, called again,
 * sends the reply.  So a batch costs one wake-up of each thread, not a
 * thread per connection woken per request (those wake-ups were about
 * half of the controller's CPU for small requests on a 2-CPU machine, and
 * an agent's long-poll held a thread all the time), and the intake goes
 * on while the loop waits for the disk.  There is one lock and it is
 * never held while calling out.
 */
#ifndef AL_SERVER_INT_H
#define AL_SERVER_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "arrayspec.h"
#include "buf.h"
#include "core/core.h"
#include "depspec.h"
#include "server.h"

/* ------------------------------------------------------------------ */
/* Jobs                                                               */

typedef enum al__jstate {
    JS_PENDING = 0,
    JS_HELD,
    JS_RUNNING,
    JS_COMPLETED,
    JS_FAILED,
    JS_CANCELLED,
    /* Ended because one of its tasks was killed for exceeding its memory
     * (the node's cgroup said so): a failure, named apart as Slurm does.
     * Ended states are those from JS_COMPLETED on. */
    JS_OUT_OF_MEMORY,
    JS_COUNT
} al__jstate_t;

/* reason.c */
extern const char *const al__jstate_names[JS_COUNT];
/* JS_* of a name, or -1. */
int al__jstate_parse(const char *s);
/* Whether state s is a failure: JS_FAILED or JS_OUT_OF_MEMORY (what
 * afternotok, pipelines and reports count as failed). */
bool al__jstate_failed(al__jstate_t s);

/* A job class: its name, priority value and whether it may be preempted. */
typedef struct al__jclass {
    const char *name;
    int priority;
    bool preemptible;
    bool build; /* an interactive build session (al_job_t.build) */
} al__jclass_t;

extern const al__jclass_t al__jclasses[];
#define AL_MAX_JCLASSES 8 /* al__njclasses is at most this */
extern const int al__njclasses;

typedef struct al__task {
    int node; /* index into ctl->nodes */
    int32_t gpu_milli;
    uint64_t devices;
    int64_t gpu_mem;
    bool done;
    int exit_code;
    int signal;
    /* Bytes in the server's copy of this run's log (logs/J.T.R.log), or
     * -1 until known: syncs ask for it once per task, not once per report
     * (see al__proto_log_size()). */
    int64_t log_size;
    /* Its use as its agent last said (cgroups; in memory only): CPU time
     * (us), memory in use and the most it used (bytes; -1 unknown). */
    int64_t cpu_usec, mem_used, mem_peak;
    bool has_usage;
} al__task_t;

/* What a job array's parent holds besides the job its elements copy.  The
 * elements have the ids after the parent's, in order of position (element
 * at position k is job parent + 1 + k), and an element is a job of the
 * table only once it is needed (al__array_tick()): until then its slot is
 * NULL, which is all a pending element costs (arraydoc.c, array.c). */
typedef struct al__array {
    char *spec; /* as given, e.g. "0-999%50" */
    al_array_spec_t as;
    json_t *sweep; /* [{"name", "values": [...]}...], or NULL */
    /* Every position below next_k has its job; every one below done_k has
     * ended (both only move up; found again after a load). */
    int64_t next_k, done_k;
    /* Elements that have their job in the table (jobcounts.c: the parent
     * counts for the others). */
    int64_t nborn;
} al__array_t;

typedef struct al__job {
    uint64_t id;
    char *name;
    char *user;
    char *queue;
    int cls; /* index into al__jclasses */
    int ntasks;
    int32_t gpus;      /* whole GPUs per task */
    int32_t gpu_milli; /* fraction when gpus == 0 */
    int64_t gpu_mem;   /* GPU memory per task when gpus == 0 (bytes), or 0 */
    int64_t cpu_milli;
    int64_t mem_bytes;
    int64_t time_limit; /* seconds, 0 none */
    /* Slurm's Priority and Nice (api_jobupdate.c): a priority an admin
     * set (prio_fixed, below: prio_value), else its class's less its
     * nice; the order within its queue and class (the core's
     * prio_adjust). */
    int64_t prio_value;
    int32_t nice;
    /* Slurm's NumNodes as an update set it on a waiting job (its tasks
     * became num_nodes times those per node), 0 when none did. */
    int32_t num_nodes;
    /* jobtoken.c: the credential of its current run, or NULL. */
    struct al__jobtok *jtok;
    char *gpu_model;  /* or NULL */
    char *pool;       /* the node pool it must run in, or NULL */
    char *constraint; /* node labels it needs (labels.h), or NULL */
    /* elastic.c: an elastic gang of min_tasks..max_tasks (ntasks is its
     * size now); max_tasks 0 for a gang of fixed size.  When it was last
     * tried for growing (monotonic ms; memory only). */
    int min_tasks, max_tasks;
    int64_t grow_tried_ms;
    /* It saves its progress: consolidate.c may move it. */
    bool checkpointing;
    /* pools.c: each task's GPUs inside one NVLink domain (nvlink
     * "required"), the gang inside one domain of the innermost topology
     * level (topology "required"), or wait; else both only preferred. */
    bool nvlink_required, topology_required;
    /* lifecycle.c: its tasks stopped (SIGSTOP) with their GPUs kept. */
    bool suspended;
    bool prio_fixed; /* prio_value is an admin's (above) */
    bool used_known; /* used (below) has a sample with telemetry */
    /* MASTER_PORT of its tasks (torch.distributed's rendezvous on task
     * 0's node), chosen at start apart from the other runs whose task 0
     * is on that node; 0: 29500 + id % 20000 (runs started before). */
    int32_t master_port;
    /* lifecycle.c: runs again after a failure by exit code, at most
     * `retries` times (`retried` so far), not before retry_at_ms (wall
     * ms; 0: at once). */
    int retries, retried;
    int64_t retry_at_ms;
    /* What runs, as compact JSON text: {"command": [...], "cwd": ...,
     * "env": {...}, "script": ...}.  Text, not a jansson tree, because it
     * is read only when the job starts or is shown, and a tree costs
     * several times the memory of every pending job. */
    char *spec;
    int nafter;
    /* Slurm's dependencies (depend.c), besides `after` (afterok). */
    int ndeps;
    uint64_t *after;
    al_depspec_t *deps;
    al__jstate_t state;
    int restart_count;
    int64_t submit_ms, start_ms, end_ms, eligible_ms;
    /* GPU-seconds of service in its runs before the current one (requeued
     * by preemption or a lost node): the core's al_job_t.attained. */
    double attained;
    /* GPU-seconds its GPUs were busy, by their telemetry, over all its
     * runs: history.c adds each usage sample's share (a fractional
     * task's its fraction), report.c reads it; used_known once any sample
     * had telemetry. */
    double used;
    int exit_code; /* first non-zero task exit, or 0 */
    int signal;
    /* How it ended, or why it waits when why_valid is false (a queue that
     * does not exist, or a reason loaded from the store); may be NULL.
     * al__job_reason() gives the text to show. */
    char *reason;
    al__task_t *tasks; /* ntasks entries while running (and after) */
    bool dirty;        /* to be written at the next commit */
    int snap;          /* index in the current snapshot, or -1 */
    /* Why a pending or held job waits, as the last cycle said, with the
     * snapshot's queue index turned into a controller queue index and the
     * other job, if any, in why_job (why.job is 0, or -1 for none).  Kept
     * as the core's small struct and formatted only when shown: formatting
     * the reasons of thousands of pending jobs on every cycle was most of
     * a cycle's cost under a backlog. */
    al_reason_t why;
    uint64_t why_job;
    bool why_valid;
    /* A pending element the last cycle left out for its array's "%N"
     * (cycle.c; memory only). */
    bool array_wait;
    size_t run_idx; /* its place in ctl->running while running */
    /* Index of its queue in ctl->queues, valid while qgen matches. */
    int qidx;
    uint64_t qgen;
    /* Idle reclaim (idle.c; memory only, a restart starts over): since
     * when (wall ms) every GPU of the running build job has been seen
     * under its queue's idle_util, or 0; when it was warned, or 0; and the
     * warning its agent appends to the task's log (idle_notice), kept
     * while the warning stands. */
    int64_t idle_since_ms, idle_warned_ms;
    char *idle_notice;
    /* A pipeline's stage (pipeline.c): the pipeline's id (its first
     * stage's job id), the stage's name and the pipeline's; 0 and NULLs
     * for a job of no pipeline. */
    uint64_t pipeline;
    char *stage, *pipeline_name;
    al__array_t *array;  /* a job array's parent: never scheduled itself */
    uint64_t array_job;  /* an element: its parent's id, else 0 */
    int64_t array_index; /* an element: its index */
    /* jobcounts.c: what the job adds to the kept counts now (jc_n jobs,
     * none when 0: of the queue in slot jc_q, found by the name at
     * jc_qname, state, class and reason bucket; jc_why -1 for none). */
    const char *jc_qname;
    uint64_t jc_n;
    int jc_q;
    /* And its user's slot, found by the name at jc_uname. */
    const char *jc_uname;
    int jc_u;
    int8_t jc_state, jc_cls, jc_why;
} al__job_t;

/* jobcounts.c: the active jobs by queue (by name: a job of a queue gone
 * still counts, under no queue), state (pending, held, running) and
 * class, and the pending and held ones by reason: the core's reasons, then
 * "unknown" (no cycle has seen it yet) and "array" (an element waiting for
 * its turn). */
#define AL__WHY_UNKNOWN ((int)AL_WHY_COUNT)
#define AL__WHY_ARRAY ((int)AL_WHY_COUNT + 1)
#define AL__WHY_N ((int)AL_WHY_COUNT + 2)
typedef struct al__jcq {
    char *name;
    uint64_t n[JS_RUNNING + 1][AL_MAX_JCLASSES];
} al__jcq_t;
/* A user's active jobs by state (GET /v1/summary shows a user theirs). */
typedef struct al__jcu {
    char *name;
    uint64_t n[JS_RUNNING + 1];
} al__jcu_t;
typedef struct al__jobcounts {
    al__jcq_t *q; /* by queue name, in order of first use */
    int nq, cap;
    int last;     /* the slot last found by name, or -1 */
    al__jcu_t *u; /* by user name, likewise */
    int nu, ucap, ulast;
    uint64_t why[AL__WHY_N];
    /* ALLOT_DEBUG_JOBCOUNTS: recount after every commit, abort on a
     * difference. */
    bool check;
} al__jobcounts_t;

/* ------------------------------------------------------------------ */
/* Queues and nodes                                                   */

/* A list of names (members.c): a queue's members, a group's users. */
typedef struct al__names {
    char **v;
    int n;
} al__names_t;

typedef struct al__queue {
    char *name;
    char *parent; /* or NULL */
    /* Who may submit into it (members.c): user names and "@group"s; none:
     * everyone. */
    al__names_t members;
    int priority;
    al_quota_t quota[AL_NRES];
    double usage;           /* decayed milli-GPU-seconds */
    al_queue_share_t share; /* from the last cycle */
    /* queueopts.c: a cap on its build jobs' GPUs (milli-GPUs, when
     * build_capped), and idle reclaim: a build job whose GPUs all stay
     * under idle_util percent for idle_timeout seconds (0: off) ends. */
    bool build_capped;
    int64_t build_cap;
    int64_t idle_timeout;
    int idle_util;
    /* queuepolicy.c: per-GPU-model quotas (nmquotas, their model names
     * owned) and the seconds its jobs run before they may be preempted. */
    int nmquotas;
    al_model_quota_t *mquotas;
    int64_t min_runtime;
} al__queue_t;

enum { NS_READY = 0, NS_DRAINING, NS_DOWN };

/* A GPU's telemetry as its agent last sent it (memory only, never
 * stored); -1 where unknown. */
typedef struct al__gpu_sample {
    int util, mem_util, temp_c; /* percent, percent, degrees C */
    int64_t mem_used, power_mw; /* bytes, milliwatts */
    int64_t at_ms;              /* wall-clock ms it arrived; 0: never */
    /* The time between the last two samples (how often the agent sends
     * them), 0 until there have been two: what tells a sample that is
     * late, from an agent that stopped sending them, from one that is
     * merely the last. */
    int64_t every_ms;
} al__gpu_sample_t;

typedef struct al__gpu {
    char *uuid;
    char *model;
    int64_t mem_bytes;
    int numa, nvlink;
    al__gpu_sample_t sample;
} al__gpu_t;

typedef struct al__req al__req_t;
struct al_ctl;

/* A task of a run of a job, as agents name it. */
typedef struct al__task_key {
    uint64_t job;
    int task, restart;
} al__task_key_t;

/* A task that is stopping, and the GPUs it holds until it has (leaving.c). */
typedef struct al__leaving {
    al__task_key_t key;
    uint64_t devices;
} al__leaving_t;

typedef struct al__node {
    char *name;
    char *addr;
    bool emulated;
    bool drained; /* admin asked to drain */
    bool mps;     /* its agent enforces GPU fractions with MPS */
    int state;    /* NS_* */
    int64_t cpu_milli, mem_bytes;
    int ngpus;
    al__gpu_t *gpus;
    al_device_t *devices; /* ngpus entries, for the snapshot */
    int64_t last_seen;    /* monotonic ms of the last sync */
    bool changed;         /* its desired task set changed this iteration */
    al__req_t *parked;    /* a long-poll sync waiting for a change */
    bool dirty;
    /* The tasks its agent reported in its last sync: it has their specs,
     * so the desired set names them without (see al__proto_desired()). */
    al__task_key_t *known;
    size_t nknown, known_cap;
    /* The runs with tasks here, as (job, restart, task -1), appended when
     * a job starts running and dropped lazily by al__proto_desired() once
     * the job no longer runs that run: a sync's answer reads these instead
     * of every running job of the cluster. */
    al__task_key_t *runs;
    size_t nruns, runs_cap;
    /* leaving.c: its tasks that are stopping. */
    al__leaving_t *leaving;
    size_t nleaving, leaving_cap;
    /* pools.c: its pool (NULL: the default) and labels (canonical, or
     * NULL), and what they give the snapshot once snap_ready: labels
     * without the topology keys, and the topology values. */
    char *pool, *labels;
    char *snap_labels;
    char *topo[AL_MAX_TOPO_LEVELS];
    bool snap_ready;
    /* gpuhealth.c: GPUs reported faulty (and why, NULL until one is), why
     * the node was drained for it, and GPUs whose reset the agent has not
     * yet acknowledged (with the reset's generation). */
    uint64_t gpu_bad;
    char **gpu_why;
    char *drain_reason;
    uint64_t gpu_resetting;
    int64_t reset_gen;
    /* clusterev.c: the state and drain GET /v1/events last told of, and
     * a registration not told yet. */
    int ev_state;
    bool ev_drained, ev_registered;
} al__node_t;

/* pools.c: the controller's topology levels and pools' strategies. */
typedef struct al__pools {
    int ntopo;
    char *topo_key[AL_MAX_TOPO_LEVELS];          /* outermost first */
    const char *topo_levels[AL_MAX_TOPO_LEVELS]; /* the same, for the core */
    int npacks;
    al_pool_pack_t *packs;
} al__pools_t;

/* members.c: a user's settings (users exist by their tokens; this is
 * what is kept about them besides) and a group, a named list of users. */
typedef struct al__user {
    char *name;
    char *default_queue; /* where a job without a queue goes, or NULL */
} al__user_t;

typedef struct al__group {
    char *name;
    al__names_t users;
} al__group_t;

/* ------------------------------------------------------------------ */
/* Tokens                                                             */

/* Stored as integers: a new role goes at the end.  ROLE_METRICS may only
 * read GET /metrics (Prometheus' scrape token); an admin may too. */
enum { ROLE_NONE = 0, ROLE_USER, ROLE_ADMIN, ROLE_AGENT, ROLE_METRICS };
#define AL_ROLE_LAST ROLE_METRICS

typedef struct al__token {
    char id[17];
    char *user;
    int role;
    unsigned char salt[16];
    unsigned char hash[32];
    int64_t created_ms;
} al__token_t;

/* ------------------------------------------------------------------ */
/* Requests                                                           */

typedef struct al__route al__route_t;

#define AL_MAX_ARGS 16

struct al__req {
    /* Filled by the HTTP thread. */
    const al__route_t *route;
    char *cap[2]; /* path segments matched by '*' */
    int nargs;
    char *argk[AL_MAX_ARGS], *argv[AL_MAX_ARGS];
    char *token;        /* bearer token, or NULL */
    bool upgrade_asked; /* "Upgrade: allot-stream": a stream's opening */
    json_t *body;       /* parsed JSON body, or NULL */
    /* Filled by the loop. */
    const char *user; /* owned by the token table; valid during handling */
    int role;
    int status;
    json_t *resp; /* JSON reply, or NULL when `text` is used */
    char *text;   /* plain-text reply (logs) */
    /* Its Content-Type when not text/plain (a static string), or NULL. */
    const char *ctype;
    size_t text_len;
    bool mutating; /* changed state: reply only after the commit */
    /* Its answer tells an agent what to run (a sync): built from memory,
     * it must not go out if the commit of that memory failed. */
    bool directs;
    int64_t deadline; /* parked long-poll: monotonic ms */
    /* A parked sync that reported exits: answered with these acks after
     * the next scheduling cycle (or at its deadline), not before. */
    json_t *acks;
    bool after_cycle;
    void *conn;  /* the intake's connection, suspended until the reply */
    double t_in; /* al__mono_s() when the loop was handed it */
    /* A 101 reply turns the connection over to the relay: the session id
     * (malloc()ed), and whether the agent's side (else the user's). */
    char *upgrade;
    bool upgrade_agent;
    /* Static files of the dashboard: send its security headers. */
    bool web;
    /* GET /v1/events: the Last-Event-ID header (the intake's copy), and
     * the stream the reply is (the intake takes it), or NULL. */
    char *last_event_id;
    struct al__sse *sse;
    al__req_t *next;
};

typedef void (*al__handler_t)(struct al_ctl *ctl, al__req_t *req);

struct al__route {
    const char *method;
    const char *path; /* segments; '*' captures one */
    int role;         /* least role needed: ROLE_NONE for open routes */
    al__handler_t fn;
};

extern const al__route_t al__routes[];
extern const int al__nroutes;
/* GET /metrics without a token, the one route of the metrics listener. */
extern const al__route_t al__metrics_open_route;

/* Returns the route for method+path and its captures, or NULL; *path_ok
 * tells whether some route had the path under another method (405). */
const al__route_t *al__route_match(const char *method, const char *path,
                                   char **cap, bool *path_ok);

/* ------------------------------------------------------------------ */
/* Counters for GET /metrics                                          */

/* A histogram of durations in seconds over fixed buckets (al__hist_bounds,
 * upper bounds, AL_HIST_NB of them; +Inf is `count`): what Prometheus
 * reads as one, cumulative at render time.  Loop thread only. */
#define AL_HIST_NB 14
extern const double al__hist_bounds[AL_HIST_NB];
typedef struct al__hist {
    uint64_t bucket[AL_HIST_NB]; /* observations in (bound[i-1], bound[i]] */
    uint64_t count;
    double sum;
} al__hist_t;

/* What the loop counts as it goes, since this controller started (never
 * stored): Prometheus' counters, which it reads as rates. */
typedef struct al__counters {
    /* Jobs the core evicted, by AL_EVICT_* cause, and whether they were
     * requeued (preemptible) or ended. */
    uint64_t evicted[AL_EVICT_RESERVATION + 1][2];
    uint64_t node_down_requeues; /* jobs requeued as their node went down */
    uint64_t nodes_down;         /* nodes marked down for silence */
    uint64_t time_limits;        /* jobs ended at their time limit */
    uint64_t idle_reclaims;      /* build jobs ended by idle reclaim */
    uint64_t ended[JS_COUNT];    /* jobs that reached each final state */
    al__hist_t cycle;            /* the core's call (al_sched_run) */
    al__hist_t commit;           /* the store's commit */
} al__counters_t;

/* API requests' durations, from the intake's hand-over to the reply's
 * release, by route (its method and path name it) and status; a new pair
 * is added as it is first seen. */
typedef struct al__api_hist {
    const al__route_t *route;
    int status;
    al__hist_t h;
} al__api_hist_t;

/* ------------------------------------------------------------------ */
/* history.c: the usage history                                       */

/* A row's figures, in GPUs (means over its step); NAN/NULL: unknown or
 * not of that kind of row. */
enum {
    AL_U_GPUS = 0,
    AL_U_ALLOC,
    AL_U_USED,
    AL_U_DESERVED,
    AL_U_FAIR,
    AL_U_PENDING,
    AL_U_IDLE,
    AL_U_WASTED,
    AL_USAGE_NF
};
extern const char *const al__usage_names[AL_USAGE_NF];

/* ------------------------------------------------------------------ */
/* waste.c: GPU-time idle while fitting work waits                    */

/* GPU models told apart in metrics' labels (al__model_slot()). */
#define AL_MAX_MODELS 32

#define AL_WASTE_WINDOW_S 600 /* allot_wastage_ratio's window */
#define AL_WASTE_SLOTS 60     /* the window's slots */
typedef struct al__waste {
    int nmodels;
    const char *model[AL_MAX_MODELS]; /* al__model_slot()'s; owned */
    /* As of the last look: GPUs on nodes not down, those no task holds
     * any part of, and whether pending work would fit on those. */
    int total[AL_MAX_MODELS], idle[AL_MAX_MODELS];
    bool waiting[AL_MAX_MODELS];
    /* The same by queue: qwaiting[q * AL_MAX_MODELS + m] for the nqwaiting
     * - 1 queues of queue_gen qgen (and a last row for jobs whose queue
     * is gone). */
    bool *qwaiting;
    int nqwaiting;
    uint64_t qgen;
    int64_t qlook_ms; /* monotonic ms of the last look by queue */
    /* Since this controller started: GPU-seconds in all, idle, and idle
     * while fitting work waited. */
    double gpu_s[AL_MAX_MODELS], idle_s[AL_MAX_MODELS], wasted_s[AL_MAX_MODELS];
    int64_t last_ms; /* monotonic ms of the last look; 0: none */
    /* The window: GPU-seconds and wasted GPU-seconds by slot, each slot
     * stamped with its number since the epoch. */
    double slot_cap[AL_WASTE_SLOTS], slot_wasted[AL_WASTE_SLOTS];
    int64_t slot_stamp[AL_WASTE_SLOTS];
} al__waste_t;

typedef struct al__usage {
    int64_t next_t;   /* the next fine row's time (s); 0: not looked yet */
    int64_t rolled_t; /* the start of the last coarse step rolled up */
    /* waste.c's counters and look time at the last sample, by its slots */
    int64_t prev_mono;
    double prev_idle_s[AL_MAX_MODELS], prev_wasted_s[AL_MAX_MODELS];
} al__usage_t;

/* ------------------------------------------------------------------ */
/* events.c: the event hub behind GET /v1/events (its own lock)        */

typedef struct al__events al__events_t;
typedef struct al__sse al__sse_t;
/* The events the hub keeps (the oldest go first). */
#define AL_EVENTS_RING 8192
/* The intake's suspend and resume of a stream's connection. */
typedef void (*al__events_io_fn)(void *conn);

/* One event as it is recorded: a job's history row and what the stream
 * shows with it (strings are copied; any but event may be NULL). */
typedef struct al__event_info {
    uint64_t job;
    int64_t ms;
    const char *event, *detail;
    const char *name, *user, *queue, *state;
    /* "node" or "queue" for a node's or a queue's change (every token
     * sees those; job is 0), NULL or "job" for a job's; node: its name. */
    const char *kind, *node;
} al__event_info_t;

/* How a stream ends: never (follow), once it caught up (once), or once
 * it sent something or poll_s passed (a long poll, `allot events -f`). */
enum { AL_SSE_FOLLOW = 0, AL_SSE_ONCE, AL_SSE_POLL };

/* GET /v1/events' query, checked. */
typedef struct al__events_query {
    bool has_since;
    uint64_t since; /* events after this id */
    int last;       /* without since: the last `last` events first */
    uint64_t job;   /* only this job's, or 0 */
    int mode;       /* AL_SSE_* */
    int poll_s;
} al__events_query_t;

al__events_t *al__events_create(al__events_io_fn suspend,
                                al__events_io_fn resume);
/* After the intake stopped (no stream is left); NULL is a no-op. */
void al__events_destroy(al__events_t *h);
/* Loop thread.  record: an event written in the open transaction;
 * publish: the transaction committed, the streams see them; drop: it
 * did not.  load: an event read from the store at start (more_before:
 * the store has older ones), published with the next publish.  tick:
 * wakes streams whose keepalive or poll deadline is due, or that a
 * publish left for it (mono ms; streams are woken at most every few ms).
 * Each is a no-op on a NULL hub. */
void al__events_record(al__events_t *h, const al__event_info_t *in);
/* The SSE message of event id (in as al__events_record() takes it), the
 * same bytes as jansson's compact dump of its fields; the caller frees. */
char *al__events_format(uint64_t id, const al__event_info_t *in);
void al__events_publish(al__events_t *h);
void al__events_drop(al__events_t *h);
void al__events_load(al__events_t *h, const al__event_info_t *in,
                     bool more_before);
void al__events_tick(al__events_t *h, int64_t mono);
/* When tick has waiting streams to wake (mono ms), or INT64_MAX. */
int64_t al__events_next_ms(const al__events_t *h);
/* Ends every stream (before the intake stops); any thread. */
void al__events_close(al__events_t *h);
/* Checks the query's arguments (each NULL when absent): 0, or AL_EINVAL
 * with the reason in *cause (caller frees) and *out untouched. */
int al__events_query_parse(const char *since, const char *last_event_id,
                           const char *last, const char *job,
                           const char *follow, const char *poll,
                           al__events_query_t *out, char **cause);
/* A new stream of the events q selects that user may see (NULL: an
 * admin, all); loop thread.  The intake attaches its connection, reads
 * it (al__events_read(): bytes, 0 after suspending the connection, or -1
 * at its end) and frees it, on its thread. */
al__sse_t *al__events_open(al__events_t *h, const al__events_query_t *q,
                           const char *user);
void al__events_attach(al__sse_t *s, void *conn);
ssize_t al__events_read(al__sse_t *s, char *buf, size_t max);
void al__events_free(al__sse_t *s);

/* clusterev.c: nodes' and queues' changes as events (in the open
 * transaction; published at its commit).  node: what changed in n since
 * the stream last told of it (the loop's flush, for each node it writes);
 * queue: event is created, updated or deleted (detail may be NULL). */
struct al_ctl;
void al__clusterev_node(struct al_ctl *ctl, al__node_t *n);
void al__clusterev_queue(struct al_ctl *ctl, const char *queue,
                         const char *event, const char *detail);

/* ------------------------------------------------------------------ */
/* The controller                                                     */

typedef struct al__relay al__relay_t;

typedef struct al_ctl {
    al_server_opts_t opts;
    char *state_dir;
    al__relay_t *relay;   /* interactive sessions (relay.c), own lock */
    al__events_t *events; /* GET /v1/events' hub (events.c), own lock */

    /* Shared with the daemon's thread, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the loop waits here for work */
    al__req_t *inbox, **inbox_tail;
    bool waiting; /* the loop waits on cv: a new request signals it */
    bool stop;

    /* Set by the intake before al__ctl_start(): the loop hands it each
     * request whose reply is ready (durable), on the loop thread, and no
     * longer touches the request afterwards. */
    void (*reply)(al__req_t *req);

    /* Owned by the loop thread. */
    pthread_t thread;
    const struct al__store_ops *store_ops; /* the store's backend */
    void *store;                           /* and its connection */
    al__job_t **jobs; /* jobs[id - 1]; ids are dense from 1 */
    uint64_t njobs, jobs_cap;
    /* Every job below jobs[active_lo] has ended (or is NULL): what looks
     * for active jobs starts there (al__ctl_first_active()), not at the
     * first job ever submitted. */
    uint64_t active_lo;
    al__queue_t *queues;
    al__node_t *nodes;
    al__token_t *tokens;
    al__user_t *users; /* members.c */
    al__group_t *groups;
    int nusers, ngroups;
    /* fairshare.c: when the queues' decayed usage was last written
     * (monotonic ms; 0: not yet), and the queue_gen + 1 it was written
     * under. */
    int64_t fairshare_saved_ms;
    uint64_t fairshare_gen;
    al__req_t *ready; /* replies to release after this iteration's commit */
    /* The running jobs, in no order: what agents' syncs, node views and
     * time limits look at, without scanning every job ever submitted. */
    al__job_t **running;
    size_t nrunning, running_cap;
    al__job_t **dirty; /* jobs to write at the next commit */
    size_t ndirty, dirty_cap;
    int64_t sched_due;  /* monotonic ms of the next coalesced cycle */
    int64_t sched_last; /* monotonic ms of the last cycle */
    int64_t usage_last; /* wall seconds of the last usage accrual */
    int64_t cycles;
    int64_t cycle_ms; /* how long the last cycle took */
    /* An agent's sync that reported ends is parked until the next cycle
     * (al__proto_sync()): maintain() runs that cycle before the commit. */
    bool ends_parked;
    int64_t commit_ms; /* how long the last commit took, rounded up */
    /* What pending jobs' reasons are formatted with (al__job_reason()):
     * the last cycle's clock (seconds) and the queue names as of the last
     * cycle, by controller queue index (copies: a queue may be deleted
     * before a reason naming it is shown). */
    int64_t reason_now;
    char **reason_qnames;
    int reason_nq;
    uint64_t reason_qgen; /* queue_gen + 1 of reason_qnames; 0: none yet */
    /* The core allocates through this cache (loop thread only): its arena
     * blocks stay faulted in from one cycle to the next. */
    al_block_cache_t core_cache;
    al_allocator_t core_alloc;
    al__pools_t pools; /* pools.c, from the options */
    /* queuepolicy.c: --min-runtime, seconds by job class. */
    int64_t class_min_runtime[AL_MAX_JCLASSES];
    /* consolidate.c: when the last pass ran (monotonic ms), and the moves
     * of the last hour, by queue (read back from the store on a start). */
    int64_t consol_last_ms;
    struct al__move *moves;
    size_t nmoves;
    /* Node index by name (al__ctl_node_index()): open addressing, -1 for
     * an empty slot; the first node_hashed nodes are in it. */
    int *node_hash;
    size_t node_hash_cap;
    int node_hashed;
    uint64_t queue_gen; /* bumped whenever ctl->queues changes shape */
    int nqueues, nnodes, ntokens;
    int nodes_cap;
    bool sched_dirty;
    bool cycled;          /* a cycle ran in this iteration of the loop */
    bool fairshare_dirty; /* a queue's usage grew since fairshare.c wrote */
    /* What spares the loop a pass over every node in each iteration (with
     * thousands of nodes those passes were a good part of its time): some
     * node's desired set changed (al__ctl_node_changed()); no parked
     * long-poll is due before parked_min (a lower bound: parking lowers
     * it, a pass over the nodes sets it); when silent nodes were last
     * looked for. */
    bool nodes_changed;
    int64_t parked_min;
    int64_t nodes_checked;
    int64_t idle_checked;    /* when idle.c last looked (monotonic ms) */
    al__counters_t counters; /* for GET /metrics */
    al__api_hist_t *api_hist;
    int napi_hist, api_hist_cap;
    al__waste_t waste;
    al__usage_t usage;
    al__jobcounts_t jc; /* jobcounts.c */
    /* Inference services (svc.c; NULL until loaded) and their router
     * (router.c; NULL without --router-listen), which has its own
     * threads and lock. */
    struct al__svcs *svcs;
    struct al__router *router;
    bool store_failed;
    /* A write of this iteration's transaction failed: its COMMIT must fail
     * too (callers may not check every write; see store.c). */
    bool write_failed;
} al_ctl_t;

/* ------------------------------------------------------------------ */
/* table.c: the tables                                                */

void al__job_free(al__job_t *j);
void al__node_fini(al__node_t *n);

/* gpuhealth.c: the GPUs' health (see there).  A sync's faults: drain and
 * requeue; `allot node resume`: clear, tell the agent; the sync answer's
 * "gpu_reset". */
struct al__sync;
void al__gpuhealth_sync(al_ctl_t *ctl, int ni, const struct al__sync *s);
void al__gpuhealth_resume(al_ctl_t *ctl, int ni);
void al__gpuhealth_desired(const al__node_t *n, json_t *o);
/* table.c: a node's GPU health released; moved to a re-registered node's
 * entry (the reasons live on). */
void al__node_health_fini(al__node_t *n);
void al__node_health_move(al__node_t *to, al__node_t *from);
al__job_t *al__ctl_job(al_ctl_t *ctl, uint64_t id);
/* The index in ctl->jobs of the first job that may be active (pending,
 * held or running): all before it have ended.  Jobs it passes get snap
 * -1, since an ended job is in no snapshot. */
uint64_t al__ctl_first_active(al_ctl_t *ctl);
/* Puts job j in the table at its id, growing the table as needed. */
void al__ctl_put_job(al_ctl_t *ctl, al__job_t *j);
al__queue_t *al__ctl_queue(al_ctl_t *ctl, const char *name);
/* quotacheck.c: NULL when queue q, created or replacing the queue of its
 * name, keeps its quotas, its models' and its tree's consistent; else why
 * not, naming the amounts (caller frees). */
char *al__quota_check(al_ctl_t *ctl, const al__queue_t *q);
int al__ctl_node_index(al_ctl_t *ctl, const char *name);
/* Appends a node (growing ctl->nodes geometrically); its index. */
int al__ctl_add_node(al_ctl_t *ctl, const al__node_t *n);
/* Queues job j to be written at the next commit. */
void al__ctl_dirty(al_ctl_t *ctl, al__job_t *j);
/* Counts one observation of `seconds` in h. */
void al__hist_observe(al__hist_t *h, double seconds);
/* The controller queue index of job j (its cached one while the queues
 * keep their shape), or -1 when its queue is gone. */
int al__job_qidx(const al_ctl_t *ctl, const al__job_t *j);
/* The slot of GPU model m (NULL or "" is "unknown") among models, for
 * labels: at most AL_MAX_MODELS - 1 names, added as met (models[i] = m,
 * which must outlive the table), and the last slot, "other", for the rest
 * (a model of that very name included, so that no two series share a
 * label). */
int al__model_slot(const char **models, int *nmodels, const char *m);

/* jobcounts.c (see there).  Moves what job j adds to the kept counts to
 * what it is now: called wherever a job's state, reason or array
 * elements change, and for each new job of the table. */
void al__jobcounts_sync(al_ctl_t *ctl, al__job_t *j);
/* Counts every job of the table from scratch (after a load). */
void al__jobcounts_rebuild(al_ctl_t *ctl);
void al__jobcounts_fini(al__jobcounts_t *jc);
/* The kept counts as cells[(q * (JS_RUNNING + 1) + state) * al__njclasses
 * + class], q a controller queue index or nqueues for a queue gone, and
 * why[]; the caller frees the cells. */
uint64_t *al__jobcounts_cells(const al_ctl_t *ctl, uint64_t why[AL__WHY_N]);
/* User `user`'s active jobs by state as kept (zeros for one with none). */
void al__jobcounts_user(const al_ctl_t *ctl, const char *user,
                        uint64_t n[JS_RUNNING + 1]);
/* 0 when the kept counts equal a recount over every job; else AL_EINVAL
 * and, in *cause (caller frees), each difference. */
int al__jobcounts_check(const al_ctl_t *ctl, char **cause);

/* waste.c: a look after a cycle, at now_ms (wall clock: jobs' eligible
 * times) and mono_ms (monotonic: the time between looks). */
void al__waste_observe(al_ctl_t *ctl, int64_t now_ms, int64_t mono_ms);
/* Wasted over all GPU-seconds in the last AL_WASTE_WINDOW_S before
 * now_ms (monotonic); 0 when nothing is known yet. */
double al__waste_ratio(const al__waste_t *w, int64_t now_ms);
void al__waste_fini(al__waste_t *w);
/* The slot of GPU model m in w, added when new. */
int al__waste_model(al__waste_t *w, const char *m);

/* history.c: called by the loop in each iteration's transaction; samples
 * when a step is due.  now_ms is the wall clock. */
void al__usage_tick(al_ctl_t *ctl, int64_t now_ms);
/* GET /v1/usage's answer: the series by queue or by model (only that of
 * key when not NULL) over [from, to) (seconds), in buckets of `bucket`
 * seconds (made a multiple of the rows' step; coarse rows once it is a
 * coarse step or more). */
json_t *al__usage_series(al_ctl_t *ctl, int64_t from, int64_t to,
                         int64_t bucket, bool by_model, const char *key);
/* report.c: GET /v1/report's answer over [since, until) (ms) grouped by
 * `by` (queue, user, class, model or node); user non-NULL: that user's
 * jobs only, without the cluster's used GPUs. */
json_t *al__usage_report(al_ctl_t *ctl, int64_t since, int64_t until,
                         const char *by, const char *user);
/* The monotonic clock in seconds, finer than al_clock_mono_ms(): what the
 * histograms time with. */
double al__mono_s(void);

/* ------------------------------------------------------------------ */
/* reason.c: names and reasons (and al__jstate_names above)           */

/* Node states by NS_*, as shown. */
extern const char *const al__node_state_names[];
/* Why the core evicted a job, by AL_EVICT_* up to AL_EVICT_RESERVATION. */
extern const char *const al__evict_reasons[];
/* The text of job j's reason (why it waits, or how it ended), formatted
 * into buf (len bytes) when it must be; NULL when it has none. */
const char *al__job_reason(const al_ctl_t *ctl, const al__job_t *j, char *buf,
                           size_t len);
/* Frees the queue names kept for al__job_reason() (cycle.c keeps them). */
void al__reason_fini(al_ctl_t *ctl);

/* ------------------------------------------------------------------ */
/* doc.c: the document forms                                          */

/* True when s is 1..max letters, digits, '-', '_' or '.'. */
bool al__valid_name(const char *s, size_t max);
/* Hands msg (malloc()ed) to *cause, or frees it when cause is NULL;
 * returns err.  Inline: a checker that reads one file at a time sees that
 * a refusal returns err, never 0 with the out-parameters unset. */
static inline int
al__fail(char **cause, int err, char *msg)
{
    if (cause != NULL)
        *cause = msg;
    else
        free(msg);
    return err;
}
/* The first member of object o that is not among the n names known, or
 * NULL. */
const char *al__unknown_member(const json_t *o, const char *const *known,
                               size_t n);
/* The job's spec as a new JSON object (an empty one if unreadable). */
json_t *al__job_spec(const al__job_t *j);
/* Job j's document (internal: the store's form, else the API's).  Its
 * spec's members (command, cwd, env, script, image) are the stored text
 * under AL_JSON_MEMBERS, which al_json_dump writes in place; read them
 * from the dumped text (al__job_from_json() takes either form). */
json_t *al__job_json(const al_ctl_t *ctl, const al__job_t *j, bool internal);
/* The same shown form without what runs (command, cwd, env, script,
 * image): a list's rows for tools that read the rest (GET /v1/jobs?spec=0,
 * squeue's), without parsing and sending every job's environment. */
json_t *al__job_json_nospec(const al_ctl_t *ctl, const al__job_t *j);
/* The members of a job's document that other files keep (its token when
 * internal, its attained and used GPU-seconds, pools, elastic sizes,
 * pipeline, retries), added to o in their order: job_doc's and
 * jobtext.c's alike. */
void al__job_doc_kept(const al__job_t *j, bool internal, json_t *o);
/* jobtext.c: al__job_json's document as compact text (the store's row),
 * written without the tree, byte for byte al_json_dump's; _buf appends
 * it to b, with the spec's members or without them, as
 * al_json_dump_flags(doc, flags) would write it. */
char *al__job_text(const al_ctl_t *ctl, const al__job_t *j, bool internal);
void al__job_text_buf(const al_ctl_t *ctl, const al__job_t *j, bool internal,
                      bool spec, size_t flags, al_buf_t *b);
/* Loads a job from its internal JSON; NULL if malformed. */
al__job_t *al__job_from_json(al_ctl_t *ctl, const json_t *o);
json_t *al__queue_json(const al__queue_t *q, bool with_share);
/* Reads a queue body or stored document into *q (name and parent
 * malloc()ed; quotas within 0..AL_QUOTA_MAX or AL_UNLIMITED).  0, or
 * AL_EINVAL with the reason in *cause (caller frees), *q untouched. */
int al__queue_from_json(const json_t *o, al__queue_t *q, char **cause);
json_t *al__node_json(const al_ctl_t *ctl, const al__node_t *n);
/* Reads an agent's register body or a stored node into *n (release with
 * al__node_fini); at most AL_MAX_DEVICES GPUs.  0, or AL_EINVAL with the
 * reason in *cause (caller frees), *n untouched. */
int al__node_from_json(const json_t *o, al__node_t *n, char **cause);

/* ------------------------------------------------------------------ */
/* queueopts.c: a queue's build cap and idle settings                 */

/* Adds max_build_gpus (-1: none), idle_timeout and idle_util to o. */
void al__queue_opts_json(const al__queue_t *q, json_t *o);
#define AL_IDLE_UTIL_DEFAULT 5
/* Reads them from a queue body or stored document o into q (absent:
 * no cap, idle reclaim off, idle_util AL_IDLE_UTIL_DEFAULT).  0, or AL_EINVAL
 * with the reason in *cause (caller frees), q untouched. */
int al__queue_opts_parse(const json_t *o, al__queue_t *q, char **cause);
/* arraydoc.c: a job array's members, in a body and stored            */

/* Reads the "array" and "sweep" members of submission body b: NULL in *out
 * when there are none, else a new al__array_t (free with
 * al__array_free).  command is the body's command (its sweep placeholders
 * must be known).  0, or AL_EINVAL with the reason in *cause. */
int al__array_from_body(const json_t *b, const json_t *command,
                        al__array_t **out, char **cause);
/* The stored form {"spec", "sweep"} and back (NULL when malformed). */
json_t *al__array_doc(const al__array_t *a);
al__array_t *al__array_from_doc(const json_t *o);
void al__array_free(al__array_t *a);

/* ------------------------------------------------------------------ */
/* jobbody.c: a submission body                                       */

/* Bounds of a submitted job (docs/server.md, "Job body"). */
#define AL_JOB_MAX_TASKS 4096
#define AL_JOB_MAX_NAME 128
#define AL_JOB_MAX_CPU_MILLI (INT64_C(1) << 40)
#define AL_JOB_MAX_MEM_BYTES (INT64_C(1) << 50)
#define AL_JOB_MAX_TIME_LIMIT (INT64_C(1) << 40)
#define AL_JOB_MAX_RETRIES 100
/* The largest queue quota (deserved or limit), in core units (milli-GPUs,
 * millicores, bytes): 2^50, small enough that a quota written as whole
 * units (value / 1000, a double) reads back as the same integer. */
#define AL_QUOTA_MAX 1125899906842624.0

/*
 * Checks a job submission body (POST /v1/jobs) by itself, without the
 * controller's state: the members' types and bounds, and whether `caller`
 * may submit as the body's "user" (only an admin may name another).  On
 * success returns 0 and a new job in *out (free it with al__job_free):
 * name, user, queue, cls, ntasks, gpus, gpu_milli (1..AL_GPU_MILLI - 1 for
 * a fraction, else 0), cpu_milli, mem_bytes, time_limit, gpu_model, spec,
 * nafter/after (ids >= 1) and state (JS_HELD or JS_PENDING) are set, snap
 * is -1, the rest is zero.  Otherwise returns AL_EINVAL (a 400) or
 * AL_EPERM (a 403) with the reason in *cause (caller frees; cause may be
 * NULL) and leaves *out alone.  Whether the queue exists and is a leaf and
 * whether the jobs in `after` exist is for the caller to check.
 */
int al__job_parse(const json_t *body, const char *caller, bool admin,
                  al__job_t **out, char **cause);

/* ------------------------------------------------------------------ */
/* store.c: the store, for the layers above                          */

/* store.c: all calls from the loop thread.  The rows themselves are
 * written and read by a backend: store_sqlite.c or store_pg.c. */

/* What a backend implements is in store_int.h. */
int al__store_open(al_ctl_t *ctl, char **cause);
void al__store_close(al_ctl_t *ctl);
/* A row of a read: its columns as text, NULL for SQL NULL; nonzero stops
 * the read. */
typedef int (*al__store_row_fn)(void *arg, int ncols, const char *const *cols);
/* The statements of the usage history, by name (see al__store_ops_t). */
int al__store_write(al_ctl_t *ctl, const char *name, int n,
                    const char *const *v);
int al__store_read(al_ctl_t *ctl, const char *name, int n, const char *const *v,
                   al__store_row_fn fn, void *arg);
int al__store_begin(al_ctl_t *ctl);
int al__store_commit(al_ctl_t *ctl);
void al__store_rollback(al_ctl_t *ctl);
int al__store_put_job(al_ctl_t *ctl, const al__job_t *j);
int al__store_event(al_ctl_t *ctl, uint64_t job, int64_t ms, const char *event,
                    const char *detail);
/* Loads the store's last n history rows into ctl->events (at start). */
int al__store_load_events(al_ctl_t *ctl, int n);
/* The history of a job as a JSON array of {time, event, detail}. */
json_t *al__store_history(al_ctl_t *ctl, uint64_t job);
int al__store_put_queue(al_ctl_t *ctl, const al__queue_t *q);
int al__store_del_queue(al_ctl_t *ctl, const char *name);
int al__store_put_node(al_ctl_t *ctl, const al__node_t *n);
int al__store_put_token(al_ctl_t *ctl, const al__token_t *t);
/* A user's and a group's document (members.c); NULL g: delete name's. */
int al__store_put_user(al_ctl_t *ctl, const al__user_t *u);
int al__store_put_group(al_ctl_t *ctl, const char *name, const al__group_t *g);
/* Loads jobs, queues, nodes and tokens into the (empty) controller. */
int al__store_load(al_ctl_t *ctl, char **cause);

/* ------------------------------------------------------------------ */
/* state.c: state changes                                             */

/* Records that the state changed and a scheduling cycle is due. */
void al__ctl_touch(al_ctl_t *ctl);
/* Marks node ni's desired set changed: its long-poll is answered. */
void al__ctl_node_changed(al_ctl_t *ctl, int ni);

/* leaving.c: the tasks that are stopping.  _add: j's tasks that have not
 * ended, as j stops running (before its tasks are freed); _synced: drops
 * those node ni's agent no longer reports running (true if it dropped
 * any: their GPUs are free, a cycle is due); _node_down: drops a
 * node's; _blocks: whether a start of j with these tasks (node indices,
 * GPU masks) must wait for one of them. */
struct al__sync;
void al__leaving_add(al_ctl_t *ctl, const al__job_t *j);
bool al__leaving_synced(al_ctl_t *ctl, int ni, const struct al__sync *s);
void al__leaving_node_down(al__node_t *n);
bool al__leaving_blocks(const al_ctl_t *ctl, const al__job_t *j, int ntasks,
                        const int *nodes, const uint64_t *devices);
/* Moves a job to a new state, frees or keeps its tasks, marks the nodes it
 * ran on as changed and records an event. */
void al__ctl_set_state(al_ctl_t *ctl, al__job_t *j, al__jstate_t st,
                       const char *event, const char *detail);
/* Requeues a running job (preemption, node loss): same id, restart+1. */
void al__ctl_requeue(al_ctl_t *ctl, al__job_t *j, const char *event,
                     const char *detail);
/* Rebuilds ctl->running and the nodes' runs from the job table (after
 * loading it). */
void al__ctl_index_running(al_ctl_t *ctl);
/* The MASTER_PORT of j's tasks (see al__job_t.master_port). */
int al__job_master_port(const al__job_t *j);
/* Picks j's master_port, once its tasks are placed. */
void al__ctl_pick_master_port(al_ctl_t *ctl, al__job_t *j);
/* Marks the nodes silent for the node timeout (mono: al_clock_mono_ms()
 * now) down and requeues their jobs. */
void al__ctl_nodes_down(al_ctl_t *ctl, int64_t mono);
/* Ends the running jobs past their time limit (their agents stop them). */
void al__ctl_time_limits(al_ctl_t *ctl);

/* The path of the server's copy of the log of a task's run (caller
 * frees). */
char *al__log_path(al_ctl_t *ctl, uint64_t job, int task, int restart);

/* ------------------------------------------------------------------ */
/* req.c: a request's reply                                           */

/* Sets req's reply to the error {error: code, message: fmt...}. */
void al__reply_error(al__req_t *req, int status, const char *code,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets req's reply to body (taking it). */
/* How a reply's JSON is written: compact, numbers in 15 digits (0.003,
 * not 0.0030000000000000001: a reply is read by people and tools; the
 * store keeps 17). */
#define AL__REPLY_FLAGS                                                        \
    (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15))
void al__reply(al__req_t *req, int status, json_t *body);
/* The query argument key, or NULL. */
const char *al__req_arg(const al__req_t *req, const char *key);
/* Whether the caller has the admin role. */
bool al__req_admin(const al__req_t *req);
/* Queues a reply for release after the commit (parked requests). */
void al__req_complete(al_ctl_t *ctl, al__req_t *req);

/* ------------------------------------------------------------------ */
/* idle.c: idle reclaim                                               */

/* Looks at the running build jobs of queues with an idle_timeout: warns
 * those idle long enough (al__idle_warn) and ends those idle past it,
 * with reason IdleTimeout.  Wall clock; called by the loop. */
void al__idle_check(al_ctl_t *ctl);
/* Warns job j that it ends in `left_s` seconds unless its GPUs are used:
 * the line goes into the job's log (its agent appends it to the task's
 * output) and the server's log. */
void al__idle_warn(al_ctl_t *ctl, al__job_t *j, int64_t left_s);
/* array.c: job arrays, through state.c                               */

/* Before a cycle: gives each active array's next pending elements their
 * jobs (no more than its "%" limit allows, and a window of pending ones
 * at a time, so that the cycle never sees the whole backlog of an array),
 * and ends the arrays whose elements have all ended. */
void al__array_tick(al_ctl_t *ctl);
/* The element at position k of parent p (its job, or NULL while it has
 * none); materialize: give it one first if p is still active. */
al__job_t *al__array_element(al_ctl_t *ctl, al__job_t *p, int64_t k,
                             bool materialize);
/* Reads "ID_INDEX": 0 with the parent in *p and the position in *k; -1
 * when text is no such element (the reason, for a 404, in *cause). */
int al__array_resolve(al_ctl_t *ctl, const char *text, al__job_t **p,
                      int64_t *k, char **cause);
/* The API's form of array parent p: {"spec", "count", "limit", "sweep",
 * "states": {state: n...}}, and the state the array shows (running while
 * any element runs). */
json_t *al__array_json(al_ctl_t *ctl, const al__job_t *p, const char **shown);
/* The API's form of the element at position k of p that has no job yet. */
json_t *al__array_pending_json(al_ctl_t *ctl, const al__job_t *p, int64_t k);
/* Cancel, hold and release every element of p that can be, then p. */
void al__array_cancel(al_ctl_t *ctl, al__job_t *p, const char *detail);
void al__array_hold(al_ctl_t *ctl, al__job_t *p, bool hold, const char *who);

/* ------------------------------------------------------------------ */
/* depend.c: Slurm's dependencies                                     */

/* Where job j's `deps` stand (AL_DEPS_NONE when it has none). */
al_dep_state_t al__depend_state(al_ctl_t *ctl, const al__job_t *j);
/* Whether array element j can never start because of its own index: an
 * aftercorr on an element that did not complete. */
bool al__depend_never_own(al_ctl_t *ctl, const al__job_t *j);
/* Which of j's `deps` can never be met and why ("afterok:5: job 5
 * failed"), malloc()ed, or NULL when none is. */
char *al__depend_never_why(al_ctl_t *ctl, const al__job_t *j);
/* Checks j's deps at submission, as `caller` (admin: any job): each job
 * exists (400), the caller may see it (403), aftercorr joins two arrays
 * (400).  0, or the HTTP status with the reason in *cause. */
int al__depend_check(al_ctl_t *ctl, const al__job_t *j, const char *caller,
                     bool admin, char **cause);

/* ------------------------------------------------------------------ */
/* cycle.c                                                            */

/* Builds a snapshot, runs the core and applies its decisions. */
void al__cycle_run(al_ctl_t *ctl);

/* ------------------------------------------------------------------ */
/* ctl.c: the loop, for the intake                                    */

/* Starts the loop; ctl->opts, state_dir and reply are set. */
int al__ctl_start(al_ctl_t *ctl, char **cause);
/* Stops the loop, which answers every request it took. */
void al__ctl_stop(al_ctl_t *ctl);
/* Queues a request for the loop (daemon's thread), its connection
 * already suspended; false, with nothing done, when the server is
 * stopping. */
bool al__ctl_submit(al_ctl_t *ctl, al__req_t *req);

/* ------------------------------------------------------------------ */
/* bootstrap.c                                                        */

/* On a first start (no token, no queue): creates the admin and join tokens,
 * writes them to the state directory, and the default queue, in one
 * transaction.  0, or an error with *cause set. */
int al__bootstrap(al_ctl_t *ctl, char **cause);

/* ------------------------------------------------------------------ */
/* auth.c                                                             */

/* Creates a token for user with role; returns the secret text (caller
 * frees) and the stored record in *t. */
char *al__token_create(const char *user, int role, al__token_t *t);
/* Finds the token matching `text`; NULL if none. */
const al__token_t *al__token_check(const al_ctl_t *ctl, const char *text);
/* The same over tokens[0..n) (a copy of the table: the router's). */
const al__token_t *al__token_match(const al__token_t *tokens, int n,
                                   const char *text);
const char *al__role_name(int role);
/* ROLE_USER .. AL_ROLE_LAST of a name; ROLE_NONE for any other. */
int al__role_parse(const char *name);
/* What jobtoken.c shares of it: n random bytes (aborts without), the
 * salted SHA-256 of a secret, and a comparison in constant time. */
void al__auth_random(unsigned char *p, int n);
void al__auth_digest(const unsigned char salt[16], const char *secret,
                     unsigned char out[32]);
bool al__auth_equal(const unsigned char *a, const unsigned char *b, size_t n);

/* ------------------------------------------------------------------ */
/* jobtoken.c: a running job's own credential (its steps, itself)      */

/* The token of job j's current run for the tasks the agent starts now
 * (made on first need: *made, and the caller marks the job dirty, so its
 * hash is stored before an agent gets it); NULL when the run's token was
 * made before a restart of the controller (its text is gone; the tasks
 * that got it still use it). */
const char *al__jobtok_text(al__job_t *j, bool *made);
/* The job id a token names when it is a job's ("alj_ID_SECRET"),
 * UINT64_MAX when it looks like one but is malformed, 0 for any other. */
uint64_t al__jobtok_job(const char *text);
/* Whether text is the token of job j's current run, which runs. */
bool al__jobtok_valid(const al__job_t *j, const char *text);
/* The token's record in the job's stored document, and back. */
void al__jobtok_doc(const al__job_t *j, json_t *o);
void al__jobtok_read(const json_t *o, al__job_t *j);
void al__jobtok_free(al__job_t *j);

/* ------------------------------------------------------------------ */
/* relay.c: interactive sessions (streams between a user and an agent)  */

/* Gives an upgraded connection back to the intake, which closes it. */
typedef void (*al__relay_close_fn)(void *handle);
al__relay_t *al__relay_create(al__relay_close_fn close_fn);
/* Ends every session (their threads close their sockets) and frees r;
 * NULL is a no-op.  Before the intake stops. */
void al__relay_destroy(al__relay_t *r);
/* POST /v1/jobs/ID/stream (a user) and POST /v1/agent/streams/SID (the
 * agent dialing back): loop thread; a 101 sets req->upgrade. */
void al__api_job_stream(al_ctl_t *ctl, al__req_t *req);
void al__proto_stream(al_ctl_t *ctl, al__req_t *req);
/* The streams node's agent is to open, as a JSON array, or NULL. */
json_t *al__relay_wanted(al_ctl_t *ctl, int node);
/* Whether a stream for node was asked for since its last sync's answer
 * (that answer must not wait); marks them all as told. */
bool al__relay_fresh(al_ctl_t *ctl, int node);
/* The intake hands over the upgraded socket of session id (any thread);
 * extra: bytes that came after the request.  False when no session takes
 * it (the caller closes it). */
bool al__relay_take(al__relay_t *r, const char *id, bool agent, int fd,
                    const char *extra, size_t n, void *handle);
/* Sends a line of text to every user attached to job (shown on their
 * terminal's stderr); any thread. */
void al__relay_notice(al_ctl_t *ctl, uint64_t job, const char *text);

/* ------------------------------------------------------------------ */
/* pools.c: pools, labels, topology                                   */

/* Reads --topology and --pool-placement into *out (AL_EINVAL and a
 * cause when bad). */
int al__pools_config(const al_server_opts_t *o, al__pools_t *out, char **cause);
void al__pools_fini(al__pools_t *p);
const char *al__pack_name(al_pack_t p);
void al__pools_snap_config(const al__pools_t *p, al_config_t *cfg);
/* schedcfg.c: the al_config_t a cycle passes to the core (the core's
 * defaults, the pools', the options' fair-share half-life and look-ahead). */
void al__sched_config(const al_ctl_t *ctl, al_config_t *cfg);
/* A node's pool, labels and topology into its JSON form o; read back
 * (checked) from a node body or document. */
void al__pools_node_doc(const al_ctl_t *ctl, const al__node_t *n, json_t *o);
int al__pools_node_read(const json_t *o, al__node_t *n, char **cause);
void al__pools_node_fini(al__node_t *n);
/* A job body's pool and constraint, checked (new strings or NULL). */
/* A job body's nvlink and topology: "required" or "preferred" (the
 * default); 0 or AL_EINVAL with *cause, the outputs untouched. */
int al__pools_mode_body(const json_t *b, bool *nvlink, bool *topology,
                        char **cause);
int al__pools_job_body(const json_t *b, char **pool, char **constraint,
                       char **cause);
void al__pools_job_doc(const al__job_t *j, json_t *o);
void al__pools_job_read(const json_t *o, al__job_t *j);
void al__pools_node_snap(const al__pools_t *p, al__node_t *n, al_node_t *s);
void al__pools_job_snap(const al__pools_t *p, const al__job_t *j, al_job_t *s);

/* ------------------------------------------------------------------ */
/* elastic.c: elastic jobs                                            */

/* elasticdoc.c: a body's max_tasks against its tasks: *max (0: not
 * elastic). */
int al__elastic_body(const json_t *b, int64_t tasks, int *max, char **cause);
void al__elastic_doc(const al__job_t *j, json_t *o);
void al__elastic_read(const json_t *o, al__job_t *j);
void al__elastic_snap(const al__job_t *j, al_job_t *s);
/* The core shrinks j by `stop` tasks (why, for job for_job or 0): it is
 * restarted at its new size. */
void al__elastic_shrink(al_ctl_t *ctl, al__job_t *j, int stop, const char *why,
                        uint64_t for_job);
/* After a cycle: grows one running elastic job into idle GPUs, when the
 * core would give it more tasks (see elastic.c); true when one grew. */
bool al__elastic_grow(al_ctl_t *ctl, const al_snapshot_t *snap,
                      al__job_t *const *act, const al_result_t *res);

/* ------------------------------------------------------------------ */
/* lifecycle.c: retries, dependencies never met, suspend and resume   */

/* lifecycledoc.c: a body's retries (0..AL_JOB_MAX_RETRIES); the fields in
 * a job's document and back. */
int al__lifecycle_body(const json_t *b, int *retries, char **cause);
void al__lifecycle_doc(const al__job_t *j, json_t *o);
void al__lifecycle_read(const json_t *o, al__job_t *j);
/* Job j failed by exit code (why): when it has retries left, requeues it
 * to run after its back-off and returns true. */
bool al__lifecycle_retry(al_ctl_t *ctl, al__job_t *j, const char *why);
/* A task of running job j failed (why; j's exit_code and signal set):
 * j runs again (al__lifecycle_retry()) or fails. */
void al__lifecycle_failed(al_ctl_t *ctl, al__job_t *j, const char *why);
/* A task of running job j was killed for exceeding its memory (why: the
 * task's end): j runs again while it has retries, as after a failure by
 * exit code, or ends JS_OUT_OF_MEMORY. */
void al__lifecycle_oom(al_ctl_t *ctl, al__job_t *j, const char *why);
/* Whether pending job j waits for its back-off at now_ms (its reason set
 * then); clears the back-off once it is over. */
bool al__lifecycle_waits(al__job_t *j, int64_t now_ms);
/* Fails job j, whose dependencies can never be satisfied, with reason
 * DependencyNeverSatisfied and why (which one, as
 * al__depend_never_why() says; NULL: not said). */
void al__lifecycle_dep_never(al_ctl_t *ctl, al__job_t *j, const char *why);
/* Suspends (or resumes) running job j for `who`: its agents stop (or
 * continue) its tasks.  0, or the HTTP status (409) with *cause. */
int al__lifecycle_suspend(al_ctl_t *ctl, al__job_t *j, bool suspend,
                          const char *who, char **cause);

/* consolidate.c: every --consolidate seconds, after a cycle that decided
 * nothing, moves checkpointing jobs off a node when that lets a waiting
 * gang start (see consolidate.c). */
void al__consolidate(al_ctl_t *ctl, const al_snapshot_t *snap,
                     al__job_t *const *act, const al_result_t *res);
void al__consolidate_fini(al_ctl_t *ctl);
/* The moves of the last hour read back from the jobs' "moved" events in
 * the store (after al__store_load), so that a restart keeps the budget
 * spent; nothing with consolidation off. */
void al__consolidate_load(al_ctl_t *ctl);

/* ------------------------------------------------------------------ */
/* Pipelines: the file (pipefile.c), the fields in documents (pipedoc.c) */

#define AL_PIPELINE_MAX_STAGES 1000

enum { AL_WHEN_SUCCESS = 0, AL_WHEN_FAILURE, AL_WHEN_ALWAYS };

/* One stage of a pipeline file. */
typedef struct al__pstage {
    char *name;
    int line; /* in the file, 0 when unknown (JSON) */
    int when; /* AL_WHEN_*: after its needs succeeded, failed, or ended */
    int nneeds;
    int *needs;   /* indices of the stages it needs */
    json_t *body; /* its job body (POST /v1/jobs), without deps */
} al__pstage_t;

typedef struct al__pfile {
    char *name;
    int nstages;
    al__pstage_t *stages; /* in the file's order */
    int *order;           /* the stages in an order where needs come first */
} al__pfile_t;

/* Parses a pipeline file (YAML, or JSON when it starts with '{'), with
 * the parameters' values in sets (an object of strings; may be NULL).
 * 0 and a new file in *out, or AL_EINVAL with every problem, and its
 * line, in *cause (the caller frees it). */
int al__pfile_parse(const char *text, size_t len, const json_t *sets,
                    al__pfile_t **out, char **cause);
void al__pfile_free(al__pfile_t *pf);
/* pipedoc.c: a stage's fields in a job's documents, and back. */
void al__pipeline_doc(const al__job_t *j, json_t *o);
void al__pipeline_read(const json_t *o, al__job_t *j);
/* memberdoc.c: names, users and groups in their JSON forms (under doc.c) */

/* Most names in a queue's or a group's list. */
#define AL_MAX_MEMBERS 4096
/* Reads member key of o, an array of names (users; "@group" too when
 * groups), into *out (absent or null: none).  No name twice.  0, or
 * AL_EINVAL with the reason in *cause, *out untouched. */
int al__names_read(const json_t *o, const char *key, bool groups,
                   al__names_t *out, char **cause);
json_t *al__names_json(const al__names_t *n);
bool al__names_has(const al__names_t *n, const char *name);
void al__names_fini(al__names_t *n);
/* A user's and a group's document (API and store) and back, checked; the
 * name comes from `name` when not NULL (a path), else from the body. */
json_t *al__user_json(const al__user_t *u);
int al__user_from_json(const json_t *o, const char *name, al__user_t *u,
                       char **cause);
void al__user_fini(al__user_t *u);
json_t *al__group_json(const al__group_t *g);
int al__group_from_json(const json_t *o, const char *name, al__group_t *g,
                        char **cause);
void al__group_fini(al__group_t *g);

/* ------------------------------------------------------------------ */
/* members.c: who may use a queue, users' default queues              */

al__user_t *al__ctl_user(al_ctl_t *ctl, const char *name);
al__group_t *al__ctl_group(al_ctl_t *ctl, const char *name);
/* Puts u (taking its strings) in the table, replacing one of its name. */
void al__ctl_put_user(al_ctl_t *ctl, al__user_t *u);
void al__ctl_put_group(al_ctl_t *ctl, al__group_t *g);
void al__ctl_del_group(al_ctl_t *ctl, const char *name);
/* Whether user may submit into q: q has no members, or names the user or
 * a group the user is in. */
bool al__member_of(al_ctl_t *ctl, const al__queue_t *q, const char *user);
/* The queue a job of user goes to when it names none. */
const char *al__user_default_queue(al_ctl_t *ctl, const char *user);
/* Frees the users and groups (stop, reload). */
void al__members_fini(al_ctl_t *ctl);

/* ------------------------------------------------------------------ */
/* fairshare.c: the queues' decayed usage, kept in the store          */

/* The half-life of the decayed usage, in seconds (the controller's
 * --fair-share-half-life). */
int64_t al__fairshare_half_life(const al_ctl_t *ctl);
/* Writes every queue's usage in the iteration's transaction when the last
 * write is every_ms old or more (-1: a few seconds; 0: now) and something
 * changed since: a queue used GPUs, or the queues changed (what only
 * decays is decayed again when read back). */
void al__fairshare_save(al_ctl_t *ctl, int64_t every_ms);
/* After a load: reads the usage back, decayed from when it was written
 * to now. */
void al__fairshare_load(al_ctl_t *ctl);

/* ------------------------------------------------------------------ */
/* queuepolicy.c: per-model quotas, minimum runtimes                  */

/* Adds min_runtime (when > 0) and model_quotas (when any) to o. */
void al__queue_policy_json(const al__queue_t *q, json_t *o);
/* Reads them from a queue body or stored document into q (absent: none).
 * 0, or AL_EINVAL with the reason in *cause, q untouched. */
int al__queue_policy_parse(const json_t *o, al__queue_t *q, char **cause);
void al__queue_policy_fini(al__queue_t *q);
/* Reads --min-runtime ("train=600,build=0") into out[class]. */
int al__min_runtime_config(const char *spec, int64_t *out, char **cause);
/* Job j's minimum runtime: the larger of its class's and its queue's. */
int64_t al__job_min_runtime(const al_ctl_t *ctl, const al__job_t *j);

/* table.c: frees what queue q holds (not q). */
void al__queue_fini(al__queue_t *q);

#endif /* AL_SERVER_INT_H */
