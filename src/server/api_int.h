/*
 * api_int.h -- the handlers' layer of the controller (see server_int.h
 * for the map): the agent protocol (agentproto.c) and the handlers of
 * each resource (api_*.c), which route.c's table names and the loop
 * calls.  Everything here runs on the loop thread.
 */
#ifndef AL_SERVER_API_INT_H
#define AL_SERVER_API_INT_H

#include "buf.h"
#include "server_int.h"

/* ------------------------------------------------------------------ */
/* agentproto.c: the agent protocol                                   */

/* One task as an agent reports it in a sync (POST /v1/agent/sync). */
typedef struct al__sync_task {
    uint64_t job;      /* 0 when missing or not a positive integer */
    int task;          /* -1 when missing or not in 0..INT_MAX */
    int restart;       /* -1 when missing or not in 0..INT_MAX */
    bool exited;       /* state "exited" */
    int exit_code;     /* clamped to int's range; 0 when missing */
    int signal;        /* likewise */
    bool oom;          /* killed for exceeding its memory (its cgroup) */
    const char *error; /* why its container did not start, or NULL */
    /* Its use from its node's cgroup (-1: not said): CPU time, memory in
     * use, the most it used. */
    int64_t cpu_usec, mem_bytes, mem_peak;
    int64_t log_off; /* where `log` starts in the task's output */
    const char *log; /* base64 of output, or NULL; owned by the body */
} al__sync_task_t;

typedef struct al__sync {
    const char *node; /* owned by the body */
    int64_t wait_ms;
    size_t ntasks;
    al__sync_task_t *tasks;
    /* Telemetry of real GPUs: sample k is for GPU index[k] (0..63; -1 when
     * the entry is malformed).  Out-of-range values are -1 (unknown). */
    /* GPUs the agent found faulty: index and reason (owned by the body),
     * and the generation of the last reset it heard of. */
    size_t nhealth;
    int *health_index;
    const char **health_reason;
    int64_t health_gen;
    size_t nsamples;
    int *index;
    al__gpu_sample_t *samples;
} al__sync_t;

/* Reads an agent's sync body.  Lenient, like the protocol: a malformed
 * task entry keeps the defaults above and the caller skips it.  Returns 0
 * (release *s with al__sync_fini; its strings belong to body, which must
 * outlive it) or AL_EINVAL when the body names no node, with the reason in
 * *cause (caller frees; cause may be NULL). */
int al__sync_parse(const json_t *body, al__sync_t *s, char **cause);
void al__sync_fini(al__sync_t *s);

/* A task of a node's desired set as its answer names it: what an agent
 * needs to start it (besides the job's spec: command, cwd, env,
 * script). */
typedef struct al__desired_task {
    uint64_t job;
    int task, restart;
    uint64_t devices; /* GPU indexes on the node, a bit each */
    int32_t gpu_milli;
    int64_t cpu_milli, mem_bytes;
    int rank, world_size, local_rank;
    const char *master_addr;
    int master_port;
    int64_t log_off; /* bytes of its output the server has */
    const char *user;
    /* A line for the agent to append to the task's output once (idle
     * reclaim's warning), or NULL; named in the brief form too. */
    const char *notice;
    /* Its processes stopped (lifecycle.c's suspend): 1, else 0; named in
     * the brief form too. */
    int suspended;
    /* The job's own token for its tasks (ALLOT_JOB_TOKEN), or NULL. */
    const char *job_token;
} al__desired_task_t;

/* The JSON of desired task t: when `known`, the agent has the task and
 * its spec, and only job, task, restart and a fraction (gpu_milli > 0) are
 * named; else every member of t, in the struct's order, then the members
 * of spec (a job's stored spec text, may be NULL), which al_json_dump
 * writes in place (AL_JSON_MEMBERS). */
json_t *al__desired_task_json(const al__desired_task_t *t, bool known,
                              const char *spec);
/* Builds the reply to an agent's sync for node n.  When lacking is not
 * NULL it is set to the number of tasks in the reply that the node's last
 * sync did not report (tasks it has to start). */
json_t *al__proto_desired(al_ctl_t *ctl, int n, int *lacking);
/* Parks req, a sync of node ni, until its deadline or a change. */
void al__proto_park(al_ctl_t *ctl, int ni, al__req_t *req);
/* Answers node ni's parked sync, if any: its desired set and the acks it
 * waited with, or 503 when the last commit failed. */
void al__proto_answer_parked(al_ctl_t *ctl, int ni);
/* The size of the server's copy of the log of task `task` of job j's run
 * `restart` (0 when there is none), kept in the task while it is j's
 * current run. */
int64_t al__proto_log_size(al_ctl_t *ctl, al__job_t *j, int task, int restart);
/* Records that the copy now holds `size` bytes. */
void al__proto_log_grew(al__job_t *j, int task, int restart, int64_t size);

/* ------------------------------------------------------------------ */
/* The handlers (route.c's table)                                     */

/* agentproto.c */
void al__proto_register(al_ctl_t *ctl, al__req_t *req);
void al__proto_sync(al_ctl_t *ctl, al__req_t *req);
/* api_jobs.c */
void al__api_job_submit(al_ctl_t *ctl, al__req_t *req);
/* pipeline.c: pipelines, their stages created in one request */
void al__api_pipeline_submit(al_ctl_t *ctl, al__req_t *req);
void al__api_pipeline_list(al_ctl_t *ctl, al__req_t *req);
void al__api_pipeline_get(al_ctl_t *ctl, al__req_t *req);
void al__api_pipeline_cancel(al_ctl_t *ctl, al__req_t *req);
void al__api_pipeline_retry(al_ctl_t *ctl, al__req_t *req);
void al__api_job_list(al_ctl_t *ctl, al__req_t *req);
void al__api_job_get(al_ctl_t *ctl, al__req_t *req);
void al__api_job_cancel(al_ctl_t *ctl, al__req_t *req);
void al__api_job_hold(al_ctl_t *ctl, al__req_t *req);
void al__api_job_release(al_ctl_t *ctl, al__req_t *req);
void al__api_job_requeue(al_ctl_t *ctl, al__req_t *req);
void al__api_job_logs(al_ctl_t *ctl, al__req_t *req);
/* api_queues.c */
void al__api_queue_list(al_ctl_t *ctl, al__req_t *req);
void al__api_queue_get(al_ctl_t *ctl, al__req_t *req);
void al__api_queue_create(al_ctl_t *ctl, al__req_t *req);
void al__api_queue_update(al_ctl_t *ctl, al__req_t *req);
void al__api_queue_delete(al_ctl_t *ctl, al__req_t *req);
/* api_lifecycle.c */
void al__api_job_suspend(al_ctl_t *ctl, al__req_t *req);
void al__api_job_resume(al_ctl_t *ctl, al__req_t *req);
/* api_users.c */
void al__api_user_list(al_ctl_t *ctl, al__req_t *req);
void al__api_user_get(al_ctl_t *ctl, al__req_t *req);
void al__api_user_update(al_ctl_t *ctl, al__req_t *req);
void al__api_group_list(al_ctl_t *ctl, al__req_t *req);
void al__api_group_get(al_ctl_t *ctl, al__req_t *req);
void al__api_group_update(al_ctl_t *ctl, al__req_t *req);
void al__api_group_delete(al_ctl_t *ctl, al__req_t *req);
/* api_nodes.c */
void al__api_node_list(al_ctl_t *ctl, al__req_t *req);
void al__api_node_drain(al_ctl_t *ctl, al__req_t *req);
void al__api_node_resume(al_ctl_t *ctl, al__req_t *req);
/* api_tokens.c */
void al__api_healthz(al_ctl_t *ctl, al__req_t *req);
/* schedcfg.c: GET /v1/config, the core's configuration as cycles use it. */
void al__api_config(al_ctl_t *ctl, al__req_t *req);
void al__api_whoami(al_ctl_t *ctl, al__req_t *req);
void al__api_token_create(al_ctl_t *ctl, al__req_t *req);
/* metrics.c: GET /metrics, the Prometheus text exposition (version 0.0.4)
 * of the tables, rendered read-only. */
void al__api_metrics(al_ctl_t *ctl, al__req_t *req);

/* api_usage.c: the usage history and accounting */
void al__api_usage(al_ctl_t *ctl, al__req_t *req);
void al__api_report(al_ctl_t *ctl, al__req_t *req);
/* api_summary.c: GET /v1/summary, the cluster's counts at a glance */
void al__api_summary(al_ctl_t *ctl, al__req_t *req);
/* api_events.c: GET /v1/events, the event stream (events.c) */
void al__api_events(al_ctl_t *ctl, al__req_t *req);
/* api_web.c: the dashboard's files, GET / and GET /ui/NAME */
void al__api_web_index(al_ctl_t *ctl, al__req_t *req);
void al__api_web_file(al_ctl_t *ctl, al__req_t *req);
/* web_files.c, made by the build from src/server/web/ */
typedef struct al__web_file {
    const char *name, *ctype;
    const unsigned char *data;
    size_t len;
} al__web_file_t;
extern const al__web_file_t al__web_files[];
extern const int al__nweb_files;
/* Appends the exposition to out; mono_ms is al_clock_mono_ms() now (the
 * agents' sync ages are reckoned from it). */
void al__metrics_render(const al_ctl_t *ctl, int64_t mono_ms, al_buf_t *out);

/* ------------------------------------------------------------------ */
/* steps.c: a job's steps (Slurm's srun inside a job)                 */

#define AL__STEP_MAX 999999
#define AL__STEP_NAME_MAX 255

/* A step's report, POST /v1/jobs/ID/steps: {"step": N, "event": "start"
 * or "end", "name": the command's (start), "tasks": K (start),
 * "exit_code": 0..255, "signal": 0..127 (end)}. */
typedef struct al__step {
    int step;
    bool end;
    const char *name; /* or NULL; owned by the body */
    int tasks;
    int exit_code, signal;
} al__step_t;

/* Reads a step's report into *s: 0, or AL_EINVAL with the reason in
 * *cause (caller frees; cause may be NULL) and *s untouched. */
int al__step_parse(const json_t *body, al__step_t *s, char **cause);
/* The steps of job j's latest run, oldest first (read from the store). */
json_t *al__steps_json(al_ctl_t *ctl, const al__job_t *j);
void al__api_job_step(al_ctl_t *ctl, al__req_t *req);
void al__api_steps(al_ctl_t *ctl, al__req_t *req);
/* api_jobupdate.c: POST /v1/jobs/ID/update (Slurm's scontrol update) */
void al__api_job_update(al_ctl_t *ctl, al__req_t *req);
/* jobprio.c: an update's Priority, Nice and NumNodes ("priority", "nice",
 * "nodes" of the body).  al__jobprio_refusal: 0, or the status of the
 * refusal with its code and *cause (caller frees).  al__jobprio_apply
 * changes job j (an account of it appended to what); true when the update
 * holds it (Priority=0), for al__jobprio_hold() once the update is
 * recorded.  al__jobprio_changes: which AL__JOBPRIO_* an array's
 * elements take, al__jobprio_element gives them to element e. */
#define AL__JOBPRIO_ORDER 1
#define AL__JOBPRIO_NODES 2
int al__jobprio_refusal(al_ctl_t *ctl, al__req_t *req, const al__job_t *j,
                        const char **code, char **cause);
bool al__jobprio_apply(al_ctl_t *ctl, al__job_t *j, const json_t *b,
                       al_buf_t *what);
int al__jobprio_changes(const json_t *b, const al__job_t *j);
void al__jobprio_element(const al__job_t *p, al__job_t *e, int changes);
void al__jobprio_hold(al_ctl_t *ctl, al__job_t *j, const char *who);
/* api_jobs.c: the job of a request's first capture ("ID" or "ID_INDEX"),
 * visible to the caller, or NULL after replying 404/403/409. */
al__job_t *al__api_job_req(al_ctl_t *ctl, al__req_t *req);

#endif /* AL_SERVER_API_INT_H */
