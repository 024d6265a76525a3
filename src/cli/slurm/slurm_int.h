/*
 * slurm_int.h -- what the Slurm commands share (slurm.c: the mapping of
 * allot's jobs, queues and nodes to Slurm's words; format.c: the format
 * strings of squeue, sinfo and sacct), and the commands themselves, one
 * file each.
 *
 * The mapping, documented once in docs/slurm.md: Slurm's account is an
 * allot queue; allot's nodes carry no pool in the API, so there is one
 * partition, AL_SLURM_PARTITION, the default.
 */
#ifndef AL_SLURM_INT_H
#define AL_SLURM_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cli_client.h"

#define AL_SLURM_PARTITION "allot"

/* The commands: argv[0] is the command's name. */
int al__sbatch(int argc, char **argv);
int al__squeue(int argc, char **argv);
int al__scancel(int argc, char **argv);
int al__sinfo(int argc, char **argv);
int al__sacct(int argc, char **argv);
int al__scontrol(int argc, char **argv);
int al__sacctmgr(int argc, char **argv);
int al__srun(int argc, char **argv);
int al__salloc(int argc, char **argv);

/* ---- slurm.c ---------------------------------------------------- */

/* The server and token, as `allot` finds them.  0, or an exit status. */
int al__sl_connect(al_client_t *c);
/* Every job the API lists for query (e.g. "state=active"), all pages, as
 * a JSON array (caller decrefs); NULL after printing why. */
json_t *al__sl_jobs(al_client_t *c, const char *query);
/* A job id as Slurm's commands take it: "123", "123.batch" (the job), or
 * "123_4" (element 4 of job array 123; index -1 when none). */
typedef struct al_sl_id {
    long long id, index;
} al_sl_id_t;

/* The job of that id, or NULL (*status gets the HTTP status; 0 when the
 * server could not be reached, and then it was said on stderr). */
json_t *al__sl_job(al_client_t *c, const al_sl_id_t *id, int *status);
/* A job's partition: its node pool, or AL_SLURM_PARTITION (every node,
 * the default) when it asks for none. */
const char *al__sl_partition(const json_t *job);
/* A node's pool, NULL when it has none (it is in AL_SLURM_PARTITION
 * only; every node is in that one too). */
const char *al__sl_node_pool(const json_t *node);
/* A partition named by -p: 0 when it is AL_SLURM_PARTITION or the pool
 * of some node; otherwise says so as prog does (1), or -1 when the server
 * could not be reached (said too). */
int al__sl_partition_check(const char *prog, const char *part);
/* Slurm's -C features ("ib&nvme", "rack=r1") as allot's constraint
 * ("ib,nvme") in buf; NULL for what allot cannot ask (any of '|', '[',
 * '*', '(': one of several). */
const char *al__sl_features(const char *c, char *buf, size_t len);
/* A job's id as Slurm writes it: "123", an array's element "120_3", or
 * pending elements folded into one row "120_[4-9]" (its "sl_fold" holds
 * "4-9"). */
void al__sl_jobid(const json_t *job, char *buf, size_t len);
/* list (taken) with each job array's parent replaced by its elements, as
 * GET /v1/jobs?expand=1 gives them; NULL after printing why. */
json_t *al__sl_expand(al_client_t *c, json_t *list);
/* GET /v1/nodes' list, or NULL after printing why. */
json_t *al__sl_nodes(al_client_t *c);
/* POST /v1/jobs/ID/VERB; the HTTP status, 0 when unreachable. */
int al__sl_post(al_client_t *c, const al_sl_id_t *id, const char *verb);

/* A job's state in Slurm's words, long ("PENDING") and short ("PD"). */
const char *al__sl_state(const json_t *job);
const char *al__sl_state_short(const json_t *job);
/* Why a pending job waits, in Slurm's words where one fits, else allot's
 * own text; "None" for a job that does not wait. */
const char *al__sl_reason(const json_t *job);
/* "CANCELLED by 0" for a job cancelled by root, else the state. */
void al__sl_state_by(const json_t *job, char *buf, size_t len);
/* The job's nodes in hostlist form ("" when it has none). Caller frees. */
char *al__sl_nodelist(const json_t *job);
int al__sl_nnodes(const json_t *job);
/* Slurm's Priority of the job: 0 while held, the one an admin set, else
 * its class's priority less its nice (at least 1); and its Nice. */
long long al__sl_priority(const json_t *job);
long long al__sl_nice(const json_t *job);
/* Seconds the job has run (0 when it has not started). */
int64_t al__sl_elapsed_s(const json_t *job, int64_t now_ms);
/* squeue's durations: "0:00", "1:02:03", "2-01:02:03"; sacct's:
 * "00:00:00", "2-01:02:03" (long). */
void al__sl_duration(int64_t secs, bool long_form, char *buf, size_t len);
/* A time limit: "UNLIMITED", or a duration as above. */
void al__sl_limit(const json_t *job, bool long_form, char *buf, size_t len);
/* "2026-11-25T12:38:27" in local time, or none_word when ms is 0. */
void al__sl_time(int64_t ms, const char *none_word, char *buf, size_t len);
/* The job's CPUs: tasks times cores (at least 1 per task). */
long long al__sl_cpus(const json_t *job);
/* Memory per node as Slurm prints it: "16000M", "" when none. */
void al__sl_mem(const json_t *job, char *buf, size_t len);
/* Slurm's "code:signal". */
void al__sl_exit(const json_t *job, char *buf, size_t len);
/* A uid for a user name (0 for root; -1 when unknown here). */
long long al__sl_uid(const char *user);
/* Parses a job id ("123", "123.batch", "123_4"); false if malformed. */
bool al__sl_parse_id(const char *s, al_sl_id_t *id);
/* "a,b,c" split into a JSON array of strings. */
json_t *al__sl_split(const char *s);
bool al__sl_in(const json_t *list, const char *s);
/* The state list of -t/-s ("PD,R", "pending,running"): Slurm's long or
 * short names, case-insensitive, or "all"; NULL if one is unknown. */
json_t *al__sl_states(const char *s);

/* sh text that defines sig_kids: it sends signal $S to every child of
 * process $P (a batch script's steps).  Read from /proc: no procps. */
#define AL_SL_SIG_KIDS                                                         \
    "sig_kids() { for d in /proc/[0-9]*; do "                                  \
    "s=$(cat \"$d/stat\" 2>/dev/null) || continue; s=${s##*) }; set -- $s; "   \
    "[ \"$2\" = \"$P\" ] && kill -$S \"${d#/proc/}\" 2>/dev/null; done; "      \
    "return 0; }\n"

/* ---- format.c: format strings ---------------------------------- */

/* One item of a format: literal text, or a field with a width. */
typedef struct al_sl_item {
    char *text; /* literal text (field == 0), or the field's name */
    char field; /* squeue/sinfo letter, or 'F' for a named field */
    int width;  /* 0: as wide as the value */
    bool right; /* right-aligned */
    bool given; /* the width came from the format */
} al_sl_item_t;

typedef struct al_sl_fmt {
    al_sl_item_t *v;
    size_t n;
} al_sl_fmt_t;

/* squeue's and sinfo's -o "%.18i %9P %j": fields "%[.][WIDTH]LETTER";
 * anything else is literal text (as Slurm prints "%-8T" for a width it
 * does not read).  0, or -1 for a malformed format (a width beyond 10000,
 * a '%' at the end). */
int al_sl_fmt_percent(const char *s, al_sl_fmt_t *f);
/* squeue's -O "JobID:20,Name:.10" and sacct's -o "JobID%20,State%-5":
 * named fields, sep ':' or '%'; a width alone is right-aligned in
 * sacct ('%') unless negative, left-aligned in squeue (':') unless it
 * starts with '.'.  0, or -1 for a malformed list. */
int al_sl_fmt_named(const char *s, char sep, al_sl_fmt_t *f);
void al_sl_fmt_fini(al_sl_fmt_t *f);
/* Appends v to b as the item says: padded to its width, cut to it
 * (with '+' at the end when cut and plus is true, as sacct does). */
void al_sl_put(al_buf_t *b, const al_sl_item_t *it, const char *v, bool plus);

/* sbatch's -o/-e pattern ("out-%j-%x.txt": %j %J job id, %A the array's
 * id (the job's outside an array), %a the element's index (4294967294
 * outside an array, as Slurm prints it), %x job name, %u user, %N node, %n %t
 * 0, %s "batch", %% '%'; a number after '%' pads with zeros) as a word of sh
 * that the job's shell expands on the node (SLURM_JOB_ID, SLURMD_NODENAME),
 * appended to out. name and user are the job's.  0, or -1 for a pattern that
 * cannot be a file name (empty, a newline, a '%' at the end). */
int al_sl_pattern(const char *pat, const char *name, const char *user,
                  al_buf_t *out);

/* A signal as Slurm's commands name it ("USR1", "SIGUSR1", "10"): its
 * number, or -1. */
int al_sl_signum(const char *s);
/* sbatch's --signal=[{B|R}:]SIG[@TIME] (TIME 60 when not given): *batch
 * for B:, *when -1 for R: (at a reservation's end).  false for a
 * malformed spec, with the out-parameters untouched. */
bool al_sl_signal_spec(const char *s, bool *batch, int *sig, long *when);

/* ---- step.c: what srun and salloc share -------------------------- */

struct al_slurm_req;
/* The job's environment as --export says: ALL (the default), NONE, or
 * [ALL,]NAME[=VALUE],...  NULL after saying why (as prog). */
json_t *al__sl_export_env(const char *prog, const char *spec);
/* What srun and salloc refuse (-p, -C, -q as sbatch does; sbatch's own
 * options); -1 when the options are fine (*cls: the class a QOS names),
 * else the exit status. */
int al__sl_check(const char *prog, const struct al_slurm_req *o,
                 const char **cls);
/* srun's and salloc's command line (prog's, usage its words after the
 * name in --help): --help and --version, Slurm's options into *o, then
 * al__sl_check(); -1 when the command goes on (*stop: the index in argv
 * of its first word after the options, *cls as al__sl_check() sets it),
 * else the exit status, after saying why. */
int al__sl_args(const char *prog, const char *usage, int argc, char **argv,
                struct al_slurm_req *o, int *stop, const char **cls);
/* The directory a job of Slurm's runs in (the caller frees it): to
 * (--chdir; a relative one under the current directory), or the current
 * directory when to is NULL.  cwd (ncwd bytes) gets the current directory,
 * "/" when it cannot be read; host (nhost bytes) this host's name,
 * "localhost" when it cannot be read. */
char *al__sl_dirs(const char *to, char *cwd, size_t ncwd, char *host,
                  size_t nhost);
/* A job's body from Slurm's options (that al__sl_check() passed), env
 * (taken) and command (taken):
 * resources, Slurm's variables known here, cwd, name, queue; class build
 * unless -q says otherwise.  NULL after saying why. */
json_t *al__sl_body(const char *prog, const struct al_slurm_req *o, json_t *env,
                    const char *name, json_t *command);
/* SIGINT, SIGTERM, SIGHUP and SIGWINCH (and SIGCHLD when chld) to a
 * self-pipe, whose read end al__sl_signal_fd() gives. */
void al__sl_signals_on(bool chld);
int al__sl_signal_fd(void);
/* Waits until job id runs: its view (caller decrefs), or NULL when it
 * ended first (unless ended_ok: then its view when it completed or
 * failed) or a signal came (the job is cancelled then), said as prog
 * says it. */
json_t *al__sl_wait_start(al_client_t *c, const char *prog, long long id,
                          bool ended_ok);
/* Submits body (taken) through a new connection *c and waits, as
 * al__sl_wait_start() does, until the job runs: its view (caller decrefs;
 * *c stays open for the caller to finish) with *id its id, or NULL after
 * saying why (failed, after "prog: error: ", when the submission fails;
 * *c finished). */
json_t *al__sl_submit_wait(al_client_t *c, const char *prog, json_t *body,
                           const char *failed, bool ended_ok, long long *id);
/* al__sl_step()'s flags: task 0 gets a terminal; "N: " before each line
 * of task N; neither stdin nor signals go to the tasks (a command of
 * salloc's or scancel's own). */
#define AL_SL_STEP_TTY 1
#define AL_SL_STEP_LABEL 2
#define AL_SL_STEP_QUIET 4
/* A command beside a task that the task's end may cut short (SIGKILL, as
 * the agent ends what was exec'd into a task that ended): done, not an
 * error (scancel --signal's, whose signal may end the task at once). */
#define AL_SL_STEP_CUT_OK 8
/* Runs a step of n tasks on the job (its view): task k is beside the
 * job's task k % tasks; cmds NULL attaches to the job's own tasks (or,
 * when it has ended, prints their logs), else cmds[k] (a JSON array) runs
 * beside it.  Returns the highest exit status (128+N for signal N). */
/* update.c: scontrol update's words w[0..n-1] ("JobId=5",
 * "TimeLimit=10", ...) into the job (*job, caller frees) and the body of
 * POST /v1/jobs/ID/update (*body, caller decrefs).  0; 1 with the message
 * in *cause (caller frees; cause may be NULL), or 2 when Slurm adds
 * "Request aborted" after it. */
int al_sl_update_parse(int n, char *const *w, char **job, json_t **body,
                       char **cause);
/* Tells the controller that step `step` of job `job` (digits, its
 * SLURM_JOB_ID) starts, named after cmd0's last part, with `tasks` tasks,
 * or (end) that it ended with exit code and signal; c NULL: through a
 * connection of the user's settings (ALLOT_SERVER and ALLOT_TOKEN, or the
 * config file), else of the job's own token (al__sl_job_client()).
 * Quiet: a step runs whether or not it can be recorded. */
/* A client of the user's settings; where they give no token, one of the
 * job's own (ALLOT_JOB_TOKEN, which the agent gives a job's tasks, and
 * ALLOT_JOB_SERVER).  0, or -1. */
int al__sl_job_client(al_client_t *c);
void al__sl_step_report(al_client_t *c, const char *job, long step,
                        const char *cmd0, long tasks, bool end, int code,
                        int sig);
int al__sl_step(al_client_t *c, const char *prog, const json_t *job, int n,
                json_t *const *cmds, int flags);

#endif /* AL_SLURM_INT_H */
