/*
 * agent_int.h -- internals shared by the agent's files.
 *
 * The files, top to bottom (each calls only those below it):
 *
 *   agent.c    `allot agent`: start-up, signals, adopting an earlier
 *              agent's tasks, the loop (agent.h is the door)
 *   sync.c     the protocol with the controller: register, sync (report
 *              tasks, logs and telemetry), apply the desired set
 *   health.c   the GPUs' health: faults found, reported until reset
 *   start.c    starting wanted tasks: GPU room, what a start needs,
 *              batches to the spawner, a spawner dying or hanging midway
 *   tasklog.c  a task's output: the next chunk of its log for a report
 *   suspend.c  a task suspended (SIGSTOP) and resumed (SIGCONT)
 *   env.c      a task's environment
 *   task.c     the task table: slots and their files, records on disk,
 *              exits, reaping, stopping, adopting one task
 *   session.c  interactive sessions: a task's terminal or pipes, exec'd
 *              commands, port connections, their streams (own thread)
 *   spawner.c  the process that is the tasks' parent
 *   launch.c   starting one task (in the spawner), records' format
 *   container.c a task in a container: podman's or Apptainer's command
 *   mps.c      MPS control daemons for fractional tasks, their variables
 *   cgroup.c   confining tasks in control groups (v2, or v1 controllers)
 *   devbpf.c   the device rule on the cgroup v2 tree: a BPF program
 *   platform.h the door to the machine: linux.c (with nvml.c) and fake.c
 *
 * Beside them, agent_cmd.c: `allot agent`'s option table alone (data), which
 * the allot command links for its help without the agent.
 */
#ifndef AL_AGENT_INT_H
#define AL_AGENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "http.h"
#include "platform.h"

/* nvml.c: fills info->gpus from NVML when the driver's library loads and
 * keeps it open in info->nvml; returns the number of GPUs found (0 without
 * NVML). */
int al__nvml_probe(al_platform_info_t *info);
/* Telemetry of GPU i (see al_platform_sample()). */
int al__nvml_sample(struct al__nvml *nv, int i, al_gpu_sample_t *s);
void al__nvml_close(struct al__nvml *nv);
/* See al_platform_health(), al_platform_health_reset(). */
int al__nvml_health(struct al__nvml *nv, al_gpu_fault_t *out, int max);
void al__nvml_health_reset(struct al__nvml *nv, int i);

/*
 * A task's record, tasks/SLOT.state, is AL__REC_LEN bytes: the line
 * "JOB TASK RESTART PID START DEVICES" (the task's pid, which leads its
 * process group, its start time, its GPU mask) padded with spaces to
 * AL__REC_ID bytes, then "CODE SIGNAL" once it has ended (spaces before).
 * A slot whose record begins with '-' is free.  Fixed places, written with
 * pwrite(): no truncation, no new file per task.
 */
#define AL__REC_ID 96
#define AL__REC_LEN 128

/* The first line of a record, parsed. */
typedef struct al__rec {
    unsigned long long job, devices;
    int index, restart;
    long pid;
    long long start;
} al__rec_t;

/* Parses "JOB TASK RESTART PID START DEVICES" at rec (the first line of a
 * record); false if malformed (a free slot's '-' included). */
bool al__rec_parse(const char *rec, al__rec_t *r);
/* Writes text into a record field of len bytes: padded with spaces, the
 * last byte '\n', no NUL. */
void al__rec_field(char *dst, size_t len, const char *text);

/* cgroup.c: confining each task in a cgroup of its own under the agent's
 * subtree (see there). */
enum {
    AL__CG_CPU = 0, /* v2: the one tree is dir[0] */
    AL__CG_ACCT,
    AL__CG_MEM,
    AL__CG_PIDS,
    AL__CG_DEV,
    AL__CG_FREEZER,
    /* v1 controllers with the device rule by BPF ("hybrid"): the subtree
     * in the cgroup v2 tree that tasks join too, for their programs. */
    AL__CG_UNIFIED,
    AL__CG_N
};
/* How a task's GPUs are kept from the others (--cgroup-devices). */
enum {
    AL__CG_DEVS_NONE = 0, /* not enforced (cg.dev_note says why) */
    AL__CG_DEVS_V1,       /* the v1 devices controller: devices.deny */
    AL__CG_DEVS_BPF,      /* a device program on the v2 tree (devbpf.c) */
};
typedef struct al__cg {
    int version;         /* 0: tasks not confined; 1 or 2 */
    char *dir[AL__CG_N]; /* the agent's subtree per controller (v1) */
    char *mount;         /* v2: the tree's mount point */
    char *dev_dir;       /* where the GPUs' nodes are (nvidiaN) */
    /* The root's cgroup path when it is the same in every hierarchy
     * (v2, or v1 with an absolute --cgroup-root), else NULL. */
    char *path;
    int64_t pids_max; /* 0: no limit */
    int devs;         /* AL__CG_DEVS_* */
    char *dev_note;   /* AL__CG_DEVS_NONE: why, or NULL */
    /* Bit c: dir[c] did not exist before al__cg_open() made it (so that
     * `allot agent --probe` can leave the node as it found it). */
    uint32_t made;
} al__cg_t;
/* A task's limits: thousandths of a CPU and bytes (0: none), its GPUs
 * as device minors (bit N: nvidiaN, for N below ngpus). */
typedef struct al__cg_limits {
    int64_t cpu_milli, mem_bytes;
    uint64_t devices;
    int ngpus;
} al__cg_limits_t;
/* Finds the hierarchy and creates the subtree root (absolute, or relative
 * to the agent's own cgroup); dev_dir NULL for /dev; devices the device
 * rule wanted, "auto" (or NULL), "bpf" or "none".  0, or an error with
 * *cause (cg then all zero). */
int al__cg_open(al__cg_t *cg, const char *root, const char *dev_dir,
                const char *devices, char **cause);
void al__cg_close(al__cg_t *cg);
/* A task's cgroup name, "tJOB.TASK.RESTART". */
void al__cg_name(char *buf, size_t len, unsigned long long job, int index,
                 int restart);
/* Creates the cgroup of task name with its limits; *procs gets the
 * cgroup.procs files the task joins, '\n'-separated (caller frees).  0,
 * or an error with *cause (nothing left behind). */
int al__cg_create(const al__cg_t *cg, const char *name,
                  const al__cg_limits_t *lim, char **procs, char **cause);
/* The cgroup.procs files of task name (as al__cg_create() gives them), for
 * a process that joins the task's allocation (`allot exec`); NULL when
 * tasks are not confined (caller frees). */
char *al__cg_procs(const al__cg_t *cg, const char *name);
/* Sends sig to every process in the cgroup (SIGKILL: all at once, through
 * cgroup.kill or the freezer, so none escapes by forking). */
void al__cg_signal(const al__cg_t *cg, const char *name, int sig);
/* Whether the kernel killed a process of the cgroup for memory. */
bool al__cg_oom(const al__cg_t *cg, const char *name);
/* Removes the cgroup; false when some part is still busy. */
bool al__cg_remove(const al__cg_t *cg, const char *name);
/* The task has ended: whether it ran out of memory; whatever is left in
 * its cgroup is killed and the cgroup removed (or left to the sweep). */
bool al__cg_end(const al__cg_t *cg, const char *name);
/* A task's use, from its cgroup; -1 where unknown. */
typedef struct al__cg_usage {
    int64_t cpu_usec;  /* CPU time so far */
    int64_t mem_bytes; /* memory in use */
    int64_t mem_peak;  /* the most it used */
} al__cg_usage_t;
/* The cgroup's use: 0, or AL_ENOENT (all -1). */
int al__cg_usage(const al__cg_t *cg, const char *name, al__cg_usage_t *u);
/* Kills and removes the task cgroups under the root for which keep()
 * says false; returns how many could not be removed yet. */
int al__cg_sweep(const al__cg_t *cg, bool (*keep)(void *ctx, const char *name),
                 void *ctx);
/* Whether word is one --cgroup-devices knows (NULL: the default). */
bool al__cg_devices_ok(const char *word);
/* `allot agent --probe`'s "cgroups": what --cgroup-root (and
 * --cgroup-devices) would use. */
json_t *al__cg_probe_json(const char *root, const char *devices);

/* devbpf.c: the device rule on the cgroup v2 tree, a BPF program (see
 * there).  A rule gates character majors, each open only at the minors
 * it lists; every other device is allowed. */
#define AL__DEVRULE_MAJORS 4
#define AL__DEVRULE_MINORS 80
typedef struct al__devrule {
    int ngates;
    struct al__devgate {
        uint32_t major;
        int nminors;
        uint32_t minors[AL__DEVRULE_MINORS];
    } gates[AL__DEVRULE_MAJORS];
} al__devrule_t;
struct bpf_insn;
/* The rule of a task whose GPUs are mine (a mask over ngpus), from the
 * nodes dev_dir/nvidiaN: their majors gated, open at its own GPUs' minors
 * and the control devices'.  Returns how many majors it gates (0: no GPU
 * node there, nothing to keep a task from). */
int al__devrule_read(al__devrule_t *r, const char *dev_dir, int ngpus,
                     uint64_t mine);
/* The program of rule r: *n instructions (caller frees). */
struct bpf_insn *al__devbpf_build(const al__devrule_t *r, size_t *n);
/* Loads a device program: 0 with *fd (close-on-exec; caller closes), or an
 * error with *cause (the verifier's log when it refused the program). */
int al__devbpf_load(const struct bpf_insn *p, size_t n, int *fd, char **cause);
/* Loads rule r's program and attaches it to the cgroup directory dir
 * (BPF_F_ALLOW_MULTI); the cgroup holds it, no descriptor is left.  0, or
 * an error with *cause. */
int al__devbpf_attach(const char *dir, const al__devrule_t *r, char **cause);
/* Whether device programs can be loaded and attached at dir (one that
 * allows everything, attached and detached at once): 0, or an error with
 * *cause. */
int al__devbpf_check(const char *dir, char **cause);

/* What a task needs to start. */
typedef struct al__launch {
    const char *ident;      /* "JOB TASK RESTART", first in the record */
    char *const *argv;      /* NULL-terminated; argv[0] searched in PATH */
    const char *cwd;        /* or NULL: the agent's */
    char *const *envp;      /* NULL-terminated */
    const char *log_path;   /* stdout and stderr, appended */
    const char *state_path; /* the record */
    unsigned long long devices;
    const char *user; /* run as this user when root, or NULL */
    /* The cgroup.procs files it joins before it runs its program,
     * '\n'-separated, or NULL (al__cg_create()). */
    const char *cgroups;
    /* An interactive session's task (session.c): its stdin, stdout and
     * stderr instead of /dev/null and the log, and whether stdin is a
     * terminal to make its controlling one; NULL for other tasks. */
    const int *stdio;
    bool tty;
} al__launch_t;

/*
 * Starts a task in a new session (its pid is its process group) with
 * vfork() (fork() when it must become another user), signals blocked
 * around it and restored in the child, descriptors closed; writes its
 * record.  Returns the task's pid with the record's descriptor (kept open
 * to write the exit) in *state_fd, or -1 with a message in *cause and
 * errno set.  Runs in the spawner, which is the task's parent.
 */
pid_t al__launch(const al__launch_t *l, int *state_fd, char **cause);
/* Prepares the process that starts tasks, once: raises its soft limit of
 * open files to its hard limit (each running task holds a descriptor: the
 * usual soft limit, 1,024, capped a node at about 1,000 tasks; tasks
 * started afterwards get the old soft limit back), and reads the test
 * hook ALLOT_TEST_LAUNCH_HANG (see launch.c). */
void al__launch_init(void);
/* Starts a helper of the agent's own (podman rm, an MPS control daemon)
 * with posix_spawnp(): its standard input from stdin_fd (-1:
 * /dev/null), its output and errors appended to out (NULL: /dev/null),
 * envp its environment, default signal handling and no signal blocked,
 * in a process group of its own so that no task's signals reach it; the
 * agent's loop reaps it.  Its pid, or -1 with the error number in *err. */
pid_t al__spawn_aside(const char *prog, char *const argv[], char *const envp[],
                      int stdin_fd, const char *out, int *err);
/* Writes the exit part of a record: exit code, or signal.  0 or -1. */
int al__record_exit(int state_fd, int code, int sig);

/* A self-pipe for SIGCHLD: p[] non-blocking and close-on-exec, handler
 * (which writes a byte to p[1]) installed with SA_RESTART | SA_NOCLDSTOP.
 * 0 or -1. */
int al__chld_pipe(int p[2], void (*handler)(int));

/* spawner.c: a small process, the parent of the tasks (see there why). */
typedef struct al__spawner {
    pid_t pid;       /* -1: none (tasks are launched from the agent itself) */
    int sock;        /* requests and replies */
    int exit_fd;     /* {pid, wait status} of ended tasks */
    int32_t (*q)[2]; /* records read while awaiting a reply */
    size_t nq, qcap;
    int unread; /* requests sent whose replies were not read yet */
    /* How long a reply may take (ms): a task's start blocks the spawner
     * until its program runs, and a working directory or program on a
     * file system that hangs (NFS) would block it, and every start after
     * it, for good.  0: no limit. */
    int64_t timeout_ms;
} al__spawner_t;

/* How many requests the agent may send before it reads their replies. */
#define AL__SPAWN_BATCH 16

/* Forks the spawner, which writes a byte to wake_fd whenever a record
 * waits in exit_fd.  0 or AL_EIO. */
int al__spawner_start(al__spawner_t *s, int wake_fd);
/* Closes the connection (the spawner exits) and waits for it. */
void al__spawner_stop(al__spawner_t *s);
/* Starts a task through the spawner: its pid; -1 with *cause when it
 * could not start; AL_EUNAVAIL when the spawner is gone. */
pid_t al__spawner_launch(al__spawner_t *s, const al__launch_t *l, char **cause);
/* The same in two halves, so that several tasks start with one exchange:
 * al__spawner_send() sends a request (0; AL_ELIMIT, nothing sent, when it
 * is too large; AL_EUNAVAIL when the spawner is gone);
 * al__spawner_result() reads the reply to the oldest request sent and not
 * yet answered, and returns what al__spawner_launch() would.  At most
 * AL__SPAWN_BATCH requests may wait for their replies: the spawner answers
 * those that came together at once, after starting them all. */
int al__spawner_send(al__spawner_t *s, const al__launch_t *l);
pid_t al__spawner_result(al__spawner_t *s, char **cause);
/* When al__spawner_result() times out it returns AL_ETIMEDOUT: the start
 * it waits for hangs.  The caller then calls al__spawner_kill_hung() with
 * the pids of the tasks it knows the spawner started (known[0..n-1]): the
 * spawner's other children, starts that never reached their program, are
 * killed (SIGKILL: they die before running it, even when the kill waits
 * for the file system), then the spawner itself; its tasks come to the
 * agent, a child subreaper. */
void al__spawner_kill_hung(al__spawner_t *s, const pid_t *known, size_t n);
/* One ended task ({pid, wait status}; its record has the exit already),
 * without blocking: 1, or 0 if none. */
int al__spawner_reaped(al__spawner_t *s, pid_t *pid, int *status);

/* ------------------------------------------------------------------ */
/* The agent's state (agent.c and the files it calls)                 */

/* A task's state; al__task_state_name() names it in reports. */
enum { T_WAITING = 0, T_RUNNING, T_EXITED };

typedef struct task {
    unsigned long long job;
    int index, restart;
    int slot; /* its files are tasks/SLOT.{state,log,script}; -1: none yet */
    int state;
    pid_t pid;     /* the task (process group leader) */
    bool adopted;  /* started by an earlier agent: not our child */
    int64_t start; /* an adopted task's start time (see al__task_adopt()) */
    uint64_t devices;
    /* Its share of each of its GPUs in thousandths: 1000 for whole GPUs;
     * less for a fractional task, which shares its GPU with others. */
    int gpu_share;
    int exit_code, signal;
    bool desired;
    bool killing;
    int64_t kill_at;   /* monotonic ms for SIGKILL */
    int64_t log_acked; /* bytes the controller has */
    /* When its log was last looked at (monotonic ms), and whether that
     * look found nothing new: a quiet running task's log is looked at
     * again only after LOG_LOOK_MS (see tasklog.c). */
    int64_t log_looked;
    bool log_quiet;
    bool acked_exit; /* the controller saw the exit */
    bool script;     /* its slot may hold a script (tasks/SLOT.script) */
    json_t *spec;    /* the desired entry it was started from */
    /* A hash of the last notice appended to its log (see
     * al__tasklog_notice()), 0 for none. */
    uint32_t notice_hash;
    /* It ended killed for exceeding its memory (its cgroup said so; kept
     * in its record as "oom" after the exit). */
    bool oom;
    /* Why its container could not start (container.c), or NULL. */
    char *error;
    /* Its use from its cgroup: the last look while it ran, the final one
     * once it ended (cpu_usec -1: none). */
    al__cg_usage_t usage;
    /* suspend.c: the controller wants it suspended; it is (SIGSTOP). */
    bool want_suspended, suspended;
} task_t;

/* mps.c: one MPS control daemon per GPU with fractional tasks. */
typedef struct al__mps {
    char *control;                   /* the control program (--mps-control) */
    pid_t pid[AL_PLATFORM_MAX_GPUS]; /* 0: none */
    int64_t start[AL_PLATFORM_MAX_GPUS]; /* its start time (clock ticks) */
    int64_t tried[AL_PLATFORM_MAX_GPUS]; /* the last start (monotonic ms) */
    bool adopted[AL_PLATFORM_MAX_GPUS];  /* left by an earlier agent */
    bool on;                             /* --mps */
    /* A sync's answer was applied: adopted tasks know their shares (their
     * records do not say; until then none is stopped for want of one). */
    bool synced;
} al__mps_t;

typedef struct agent {
    al_url_t url; /* the controller talked to: urls[cur_url] */
    /* --server A,B,C: a failover group's controllers; a failed exchange
     * moves on to the next (agent.c). */
    al_url_t urls[AL_URL_LIST_MAX];
    int nurls, cur_url;
    /* --server as given: a task's ALLOT_JOB_SERVER. */
    const char *server;
    /* Two connections kept open between syncs: a sync cut short by a
     * task's exit leaves its connection waiting for the controller's
     * answer (which it gives when the next sync comes), and the next sync
     * goes on the other one. */
    al_http_conn_t conn[2];
    int cur;              /* the one the next request goes on */
    int64_t respawned_ms; /* when al__task_respawn() last started a
                             spawner, or 0 */
    const char *token;
    char *name;
    char *addr;
    char *pool;   /* --pool, or NULL */
    char *labels; /* --label, canonical (labels.h), or NULL */
    char *state_dir;
    char *task_dir;
    al_platform_info_t plat;
    int64_t grace_ms;
    task_t *tasks;
    int ntasks, cap;
    /* Task file slots: a task's files are reused by a later task once the
     * controller has all of its output, so that short tasks cost no file
     * creation or removal (on ext4, allocating inodes among recently
     * deleted ones is what dominated the agent's time). */
    int *free_slots;
    int nfree, free_cap, nslots;
    char *logbuf;         /* LOG_CHUNK bytes for reading logs, once needed */
    int64_t sampled_at;   /* monotonic ms of the last telemetry sample */
    int64_t telemetry_ms; /* how often GPUs are sampled (--telemetry-ms) */
    bool telemetry_on;    /* the last look found GPUs to sample */
    al__spawner_t spawner;
    bool registered;
    /* Fencing (fence.c): the --fence-timeout (0: off), when a controller
     * last answered, and whether the tasks were stopped for its silence. */
    int64_t fence_ms, heard_ms;
    bool fenced;
    bool run_as_user; /* root agent: run tasks as their submitter */
    bool cg_dirty;    /* cgroups of ended tasks wait for a sweep (below) */
    bool usage_due;   /* this sync looks at tasks' use (sync.c) */
    /* agent.c's self-pipe, set by run(): wake_fd becomes readable when a
     * task has ended or a stop signal came, wake_write is its write end
     * (given to the spawner); stop_fd only on a stop signal. */
    int wake_fd, wake_write, stop_fd;
    /* Tasks' cgroups (cgroup.c; version 0: not confined), whether some
     * wait to be swept, and when they last were (monotonic ms). */
    al__cg_t cg;
    int64_t cg_swept;
    /* health.c: the GPUs found faulty, and why (until the controller
     * resets them). */
    uint64_t gpu_bad;
    char *gpu_why[AL_PLATFORM_MAX_GPUS];
    int64_t health_gen; /* the controller's last reset heard of */
    al__mps_t mps;
    /* container.c: the runtimes, extra arguments of `podman run`
     * (--container-args), and the cgroup path under which podman puts a
     * confined task's container (NULL: none, see agent.c). */
    const char *podman, *apptainer;
    char **container_args;
    size_t ncontainer_args;
    const char *cg_parent;
} agent_t;

/* task.c */
/* "waiting", "running" or "exited": a task's state as reports name it. */
const char *al__task_state_name(int state);
/* The path of t's file STATE/tasks/SLOT.ext (caller frees). */
char *al__task_file(const agent_t *a, const task_t *t, const char *ext);
/* Gives t a slot (a free one, else a new one) unless it has one. */
void al__task_take_slot(agent_t *a, task_t *t);
/* Makes slot free for the next task. */
void al__task_free_slot(agent_t *a, int slot);
/* Parses a file name "SLOT.state" into *slot; false for anything else. */
bool al__task_slot_parse(const char *name, int *slot);
/* The task (job, index, restart), or NULL. */
task_t *al__task_find(agent_t *a, unsigned long long job, int index,
                      int restart);
/* Adds a task, waiting, without a slot; pointers into the table are
 * invalidated (as by al__task_remove()). */
task_t *al__task_add(agent_t *a, unsigned long long job, int index,
                     int restart);
/* Forgets t (the last task takes its place); its slot's files are emptied
 * for the next task.  log_size is the size of its log when the caller just
 * looked, or -1. */
void al__task_remove(agent_t *a, task_t *t, int64_t log_size);
/* A file's size, 0 when it cannot be read. */
int64_t al__file_size(const char *path);
/* Records that t could not even be started (exit code 127, why in its
 * log). */
void al__task_fail(agent_t *a, task_t *t, const char *why);
/* Takes t as the task its record names, started by an earlier agent or
 * spawner: running if process pid with that start time lives, else ended
 * (with its recorded exit, or SIGKILL). */
void al__task_adopt(agent_t *a, task_t *t, long pid, long long start);
/* The spawner is gone: its tasks are watched as adopted ones and another
 * spawner starts (at most one a second). */
void al__task_respawn(agent_t *a);
/* Takes the ends of tasks: the spawner's reports, orphans, adopted ones. */
void al__task_reap(agent_t *a);
/* Stops t (SIGTERM, then SIGKILL once the grace period is over, which
 * al__task_escalate() sends). */
/* fence.c: a controller answered (any HTTP status): it is not cut off. */
void al__fence_heard(agent_t *a);
/* Stops every running task when no controller has answered for the fence
 * timeout. */
void al__fence_check(agent_t *a);
/* A request's timeout_ms, shortened so that the fence check runs on time
 * while tasks run. */
int al__fence_bound(const agent_t *a, int timeout_ms);
void al__task_stop(agent_t *a, task_t *t);
void al__task_escalate(agent_t *a);
/* Removes the cgroups of tasks that have ended (and, at start, those an
 * earlier agent left): when some wait and a second has passed since the
 * last sweep, or at once with now. */
void al__task_sweep(agent_t *a, bool now);

/* suspend.c: SIGSTOP (on) or SIGCONT to running task t's process group,
 * when that changes its state. */
void al__task_suspend(task_t *t, bool on);

/* tasklog.c */
/* Adds to report (a sync's report of t) the next chunk of t's log after
 * what the controller acknowledged, base64 under "log", when there is one;
 * returns whether it did (more may follow).  A running task that printed
 * nothing lately is looked at only every so often. */
bool al__tasklog_chunk(agent_t *a, task_t *t, json_t *report);
/* Appends the controller's notice `text` (idle reclaim's warning) to the
 * log of running task t, once: a notice it already appended is not
 * appended again. */
void al__tasklog_notice(agent_t *a, task_t *t, const char *text);

/* env.c */
/* An environment being built: the first `borrowed` entries are the
 * agent's own (environ's strings, which it never changes), the rest are
 * allocated.  v is NULL-terminated once an entry is pushed. */
typedef struct al__env {
    char **v;
    size_t n, cap, borrowed;
} al__env_t;
/* "k=v", malloc()ed. */
char *al__env_entry(const char *k, const char *v);
/* Appends entry (owned by e unless among the borrowed ones). */
void al__env_push(al__env_t *e, char *entry);
/* Keeps only the last setting of each name, in order. */
void al__env_dedup(al__env_t *e);
/* The environment of a task from its desired entry s (see env.c); gpus is
 * its CUDA_VISIBLE_DEVICES.  Release with al__env_fini(). */
al__env_t al__task_env(const agent_t *a, json_t *s, const char *gpus);
void al__env_fini(al__env_t *e);

/* start.c */
/* Adds (sign 1) or takes (-1) t's share of each of its GPUs to used
 * (thousandths of each GPU in use). */
void al__share_count(int used[64], const task_t *t, int sign);
/* Whether each of t's GPUs is within its 1000 thousandths in used (which
 * counts t already). */
bool al__share_fits(const int used[64], const task_t *t);
/* Starts the waiting tasks that are wanted and whose GPUs have room. */
void al__start_tasks(agent_t *a);

/* container.c */
/* Whether image is an Apptainer image (a path ending in .sif). */
bool al__container_sif(const char *image);
/* The command that runs the task t of spec s (which names an image) in
 * its container: argv the task's own command, env its environment; *user
 * becomes NULL when the runtime is to run as the agent (podman, told the
 * user's uid).  NULL-terminated, release with al__container_free(). */
char **al__container_argv(const agent_t *a, const task_t *t, json_t *s,
                          char *const *argv, const al__env_t *env,
                          const char **user);
void al__container_free(char **v);
/* Kills and removes t's podman container (`podman rm --force`), in the
 * background: when the grace period of a stopped task is over, SIGKILL
 * ends the podman client but not the container conmon supervises.  Does
 * nothing for a task without an image, or with Apptainer's (a process of
 * the task's own). */
void al__container_kill(const agent_t *a, const task_t *t);
/* Why t's container did not start (the runtime's last error line in its
 * log, log_path), when it ended with the runtime's own failure; NULL
 * otherwise (caller frees). */
char *al__container_error(const task_t *t, const char *log_path);

/* mps.c */
/* Finds the daemons an earlier agent left (STATE/mps/gpuN/pid). */
void al__mps_adopt(agent_t *a);
/* Starts the daemons GPUs with fractional tasks need (again, when one
 * died), stops those no longer needed. */
void al__mps_check(agent_t *a);
/* A child the loop reaped: true when it was a control daemon. */
bool al__mps_reaped(agent_t *a, pid_t pid, int status);
/* Adds a fractional task's MPS variables to its environment e (its spec
 * s), its GPU's daemon started first when it has none. */
void al__mps_task(agent_t *a, const task_t *t, json_t *s, al__env_t *e);

/* health.c */
/* Asks the platform for faulty GPUs; new ones are marked bad. */
void al__health_check(agent_t *a);
/* Adds "gpu_health" (the bad GPUs and why) to a sync's body. */
void al__health_report(const agent_t *a, json_t *body);
/* Clears the GPUs a sync's answer names under "gpu_reset". */
void al__health_apply(agent_t *a, json_t *out);
void al__health_fini(agent_t *a);

/* sync.c: registers the node / runs one sync (report, wait for the answer,
 * apply it).  0 or an error (AL_EBUSY: interrupted by a task's end or a
 * signal; AL_EAUTH: registration refused for good). */
int al__sync_register(agent_t *a);
int al__sync_once(agent_t *a);

/* session.c: interactive sessions (one thread of its own, started when
 * first needed; these calls come from the loop). */
/* 2 when a task's spec asks for a terminal (ALLOT_SESSION=tty in its
 * environment), 1 for pipes (any other value), 0 for neither. */
int al__session_mode(const json_t *spec);
/* Starts t from l with a terminal or pipes the agent keeps (l->stdio and
 * l->tty are set here): its pid, or -1 with *cause. */
pid_t al__session_launch(agent_t *a, task_t *t, al__launch_t *l, char **cause);
/* t, started by al__session_launch(), has ended (its exit in t): its output
 * is drained into its log before the caller reports the end. */
void al__session_ended(const task_t *t);
/* A child the loop reaped that is no task: true when it was an exec's. */
bool al__session_reaped(pid_t pid, int status);
/* The streams a sync's answer asks for ("streams"; NULL for none). */
void al__session_want(agent_t *a, json_t *streams);

#endif /* AL_AGENT_INT_H */
