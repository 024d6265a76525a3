/*
 * agent.c -- `allot agent`: registration, the sync loop and the task table.
 *
 * Single-threaded.  A SIGCHLD handler writes a byte to a self-pipe; the
 * pipe also interrupts the long-poll, so a task's exit is reported within
 * milliseconds.  Task keys are (job, task index, restart count): a
 * requeued job's new run is a different task from its old one.
 *
 * Tasks start through the spawner (spawner.c), a small process that is
 * their parent and tells us when one ends.
 *
 * Files under the state directory, per task slot S: tasks/S.log (stdout
 * and stderr), tasks/S.state (the task's record: who it is, its pid and
 * start time, written at launch, and its exit status, written by the
 * spawner; see AL__REC_LEN), tasks/S.script for job scripts.  A slot is
 * freed for the next task once the controller has the exit status and the
 * whole log; until then the record lets a restarted agent adopt or report
 * the task instead of starting it again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "agent_int.h"
#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "daemon.h"
#include "fs.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "opt.h"
#include "platform.h"
#include "ucfg.h"
#include "xmalloc.h"

#define LOG_CHUNK ((size_t)256 * 1024)
#define IDLE_POLL_MS 25000
#define BUSY_POLL_MS 1000
#define TELEMETRY_MS 10000 /* how often real GPUs are sampled and reported */
/* How often the log of a running task that printed nothing new is looked
 * at.  Syncs come at every task's exit when tasks are short: a stat() of
 * every running task's log on each was most of the agent's system time. */
#define LOG_LOOK_MS 100
#define RESPAWN_MS 1000 /* the least time between two spawner starts */

extern char **environ;

enum { T_WAITING = 0, T_RUNNING, T_EXITED };
static const char *const task_state_names[] = {
    [T_WAITING] = "waiting", [T_RUNNING] = "running", [T_EXITED] = "exited"
};

typedef struct task {
    unsigned long long job;
    int index, restart;
    int slot; /* its files are tasks/SLOT.{state,log,script}; -1: none yet */
    int state;
    pid_t pid;     /* the task (process group leader) */
    bool adopted;  /* started by an earlier agent: not our child */
    int64_t start; /* an adopted task's start time (see adopt()) */
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
     * again only after LOG_LOOK_MS (see report_task()). */
    int64_t log_looked;
    bool log_quiet;
    bool acked_exit; /* the controller saw the exit */
    bool script;     /* its slot may hold a script (tasks/SLOT.script) */
    json_t *spec;    /* the desired entry it was started from */
} task_t;

typedef struct agent {
    al_url_t url;
    /* Two connections kept open between syncs: a sync cut short by a
     * task's exit leaves its connection waiting for the controller's
     * answer (which it gives when the next sync comes), and the next sync
     * goes on the other one. */
    al_http_conn_t conn[2];
    int cur;              /* the one the next request goes on */
    int64_t respawned_ms; /* when respawn() last started a spawner, or 0 */
    const char *token;
    char *name;
    char *addr;
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
    char *logbuf;       /* LOG_CHUNK bytes for reading logs, once needed */
    int64_t sampled_at; /* monotonic ms of the last telemetry sample */
    al__spawner_t spawner;
    bool registered;
    bool run_as_user; /* root agent: run tasks as their submitter */
} agent_t;

static int sig_pipe[2] = { -1, -1 };
/* Written to by the stop signals only: what interrupts a sync that is not
 * to be interrupted by a task's end (see sync_once()). */
static int stop_pipe[2] = { -1, -1 };
static volatile sig_atomic_t stopping;

static void
on_sigchld(int sig)
{
    int e = errno;
    ssize_t w = write(sig_pipe[1], "c", 1);
    (void)w;
    errno = e;
}

static void
on_stop(int sig)
{
    int e = errno;
    stopping = 1;
    /* Nothing to do if a write fails: the pipes are non-blocking and a
     * byte already waiting wakes the loop as well. */
    ssize_t w1 = write(sig_pipe[1], "s", 1);
    ssize_t w2 = write(stop_pipe[1], "s", 1);
    (void)w1;
    (void)w2;
    errno = e;
}

static void
drain_pipe(void)
{
    char buf[256];
    while (read(sig_pipe[0], buf, sizeof buf) > 0)
        ;
}

static char *
task_file(const agent_t *a, const task_t *t, const char *ext)
{
    return al_xasprintf("%s/%d.%s", a->task_dir, t->slot, ext);
}

/* Gives t a slot: a free one, else a new one. */
static void
take_slot(agent_t *a, task_t *t)
{
    if (t->slot >= 0)
        return;
    t->slot = a->nfree > 0 ? a->free_slots[--a->nfree] : a->nslots++;
}

static void
free_slot(agent_t *a, int slot)
{
    if (a->nfree == a->free_cap) {
        a->free_cap = a->free_cap ? 2 * a->free_cap : 64;
        a->free_slots = al_xreallocarray(a->free_slots, (size_t)a->free_cap,
                                         sizeof *a->free_slots);
    }
    a->free_slots[a->nfree++] = slot;
}

static task_t *
find_task(agent_t *a, unsigned long long job, int index, int restart)
{
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].job == job && a->tasks[i].index == index &&
            a->tasks[i].restart == restart)
            return &a->tasks[i];
    return NULL;
}

static task_t *
add_task(agent_t *a, unsigned long long job, int index, int restart)
{
    if (a->ntasks == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 16;
        a->tasks = al_xreallocarray(a->tasks, (size_t)a->cap, sizeof *a->tasks);
    }
    task_t *t = &a->tasks[a->ntasks++];
    memset(t, 0, sizeof *t);
    t->job = job;
    t->index = index;
    t->restart = restart;
    t->slot = -1;
    t->gpu_share = 1000; /* until its spec says otherwise (adopted tasks'
                            records do not say: counted whole) */
    return t;
}

static int64_t
file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* Forgets t; its slot's files are emptied for the next task (the log
 * first: an empty state file is what marks the slot free).  log_size is
 * the size of its log when the caller just looked, or -1. */
static void
remove_task(agent_t *a, task_t *t, int64_t log_size)
{
    if (t->slot >= 0) {
        char *lp = task_file(a, t, "log"), *sp = task_file(a, t, "script"),
             *ep = task_file(a, t, "state");
        /* Most short tasks print nothing: an empty log needs no
         * truncate(), which costs a journal transaction on ext4.  The
         * record is marked free, not truncated (see AL__REC_LEN).  Only a
         * task started from a script (or adopted: who knows) has one. */
        int fd = -1;
        if (log_size < 0)
            log_size = file_size(lp);
        if ((log_size == 0 || truncate(lp, 0) == 0 || errno == ENOENT) &&
            (!t->script || unlink(sp) == 0 || errno == ENOENT) &&
            ((fd = open(ep, O_WRONLY | O_CLOEXEC)) < 0
                 ? errno == ENOENT
                 : pwrite(fd, "-", 1, 0) == 1))
            free_slot(a, t->slot);
        else
            al_warn("cannot empty the files of slot %d: %s", t->slot,
                    strerror(errno));
        if (fd >= 0)
            close(fd);
        free(lp);
        free(sp);
        free(ep);
    }
    json_decref(t->spec);
    *t = a->tasks[--a->ntasks];
}

/* Reads the record of t's slot into rec (AL__REC_LEN bytes, NUL added);
 * false when it is shorter. */
static bool
read_record(const agent_t *a, const task_t *t, char *rec)
{
    char *p = task_file(a, t, "state");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    free(p);
    if (fd < 0)
        return false;
    ssize_t n = pread(fd, rec, AL__REC_LEN, 0);
    close(fd);
    if (n != AL__REC_LEN)
        return false;
    rec[AL__REC_LEN] = '\0';
    return true;
}

/* Reads the exit part of t's record; true if present. */
static bool
read_exit(const agent_t *a, task_t *t)
{
    char rec[AL__REC_LEN + 1], *e1, *e2;
    if (!read_record(a, t, rec))
        return false;
    const char *line = rec + AL__REC_ID;
    long code = strtol(line, &e1, 10), sig = strtol(e1, &e2, 10);
    if (e1 == line || e2 == e1)
        return false;
    t->exit_code = (int)code;
    t->signal = (int)sig;
    return true;
}

/* Writes the exit part of t's record from a wait status. */
static void
record_exit(const agent_t *a, const task_t *t, int status)
{
    char *p = task_file(a, t, "state");
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0 ||
        al__record_exit(fd, WIFEXITED(status) ? WEXITSTATUS(status) : 0,
                        WIFSIGNALED(status) ? WTERMSIG(status) : 0) != 0)
        al_warn("cannot write %s: %s", p, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(p);
}

/* Writes a whole record for t (a task that could not start). */
static void
write_record(const agent_t *a, const task_t *t, const char *exit_line)
{
    char rec[AL__REC_LEN], line[AL__REC_ID];
    snprintf(line, sizeof line, "%llu %d %d 0 -1 %llu", t->job, t->index,
             t->restart, (unsigned long long)t->devices);
    al__rec_field(rec, AL__REC_ID, line);
    al__rec_field(rec + AL__REC_ID, AL__REC_LEN - AL__REC_ID, exit_line);
    char *p = task_file(a, t, "state");
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || pwrite(fd, rec, sizeof rec, 0) != (ssize_t)sizeof rec)
        al_warn("cannot write %s: %s", p, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(p);
}

/* ------------------------------------------------------------------ */
/* Processes                                                          */

/* t has ended with the exit code and signal it holds. */
static void
ended(task_t *t)
{
    t->state = T_EXITED;
    al_info("task %llu.%d.%d exited: code %d signal %d", t->job, t->index,
            t->restart, t->exit_code, t->signal);
}

/* t ended with wait status `status` (-1: unknown, taken for SIGKILL). */
static void
set_exited(task_t *t, int status)
{
    bool coded = status >= 0 && WIFEXITED(status);
    t->exit_code = coded ? WEXITSTATUS(status) : 0;
    t->signal = coded                                ? 0
                : status >= 0 && WIFSIGNALED(status) ? WTERMSIG(status)
                                                     : SIGKILL;
    ended(t);
}

/* A task is gone; status is its wait status, or -1 when unknown.  The
 * record's exit, when it has one, is what counts (none: the spawner was
 * killed before it could write one). */
static void
mark_exited(agent_t *a, task_t *t, int status)
{
    if (read_exit(a, t))
        ended(t);
    else
        set_exited(t, status);
}

/* The running task of pid that the spawner tells us about. */
static task_t *
find_child(agent_t *a, pid_t pid)
{
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->pid == pid && t->state == T_RUNNING && !t->adopted)
            return t;
    }
    return NULL;
}

/* Takes the ends of tasks the spawner reported. */
static void
take_reports(agent_t *a)
{
    pid_t pid;
    int st;
    while (a->spawner.pid > 0 &&
           al__spawner_reaped(&a->spawner, &pid, &st) == 1) {
        task_t *t = find_child(a, pid);
        /* The spawner wrote the exit into the record before it reported
         * it, from the same wait status: no need to read it back. */
        if (t != NULL)
            set_exited(t, st);
    }
}

/* The spawner is gone: the tasks it started are nobody's children we can
 * wait for, so watch them as adopted ones (pid and start time from their
 * records), then start another spawner. */
static void
respawn(agent_t *a)
{
    al__spawner_t *sp = &a->spawner;
    take_reports(a); /* what it told us first: those tasks have ended */
    if (sp->sock >= 0)
        close(sp->sock);
    if (sp->exit_fd >= 0)
        close(sp->exit_fd);
    sp->sock = sp->exit_fd = -1;
    sp->pid = -1;
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->state != T_RUNNING || t->adopted)
            continue;
        char *p = task_file(a, t, "state"), *data = NULL;
        size_t n;
        al__rec_t rec;
        if (al_fs_read_file(p, &data, &n) == 0 && al__rec_parse(data, &rec) &&
            rec.pid == t->pid)
            t->start = rec.start;
        free(data);
        free(p);
        t->adopted = true;
    }
    /* A spawner that cannot get going dies at once: at most one start a
     * second (the tasks wait for the next sync meanwhile), not a loop. */
    int64_t now = al_clock_mono_ms();
    if (a->respawned_ms != 0 && now - a->respawned_ms < RESPAWN_MS)
        return;
    a->respawned_ms = now;
    if (al__spawner_start(sp, sig_pipe[1]) != 0) {
        al_error("cannot start a spawner: %s", strerror(errno));
        sp->pid = -1;
    }
}

static void
reap(agent_t *a)
{
    take_reports(a);
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            break;
        if (pid == a->spawner.pid) {
            al_warn("the spawner exited (status %d); starting another", st);
            respawn(a);
            continue;
        }
        /* A task whose spawner died: the agent is a child subreaper, so
         * its orphaned tasks come to it, with their exit status. */
        for (int i = 0; i < a->ntasks; i++) {
            task_t *t = &a->tasks[i];
            if (t->pid != pid || t->state != T_RUNNING)
                continue;
            if (!read_exit(a, t))
                record_exit(a, t, st);
            mark_exited(a, t, st);
            break;
        }
    }
    /* Adopted tasks are not our spawner's children: poll them.  One that
     * ended is a zombie until its parent (an earlier spawner) has written
     * its exit into the record and reaped it: wait for that. */
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        int64_t start = -1;
        if (t->state != T_RUNNING || !t->adopted)
            continue;
        int st = al_platform_proc_state(t->pid, &start);
        if (start == t->start && (st == 1 || (st == 0 && !read_exit(a, t))))
            continue;
        mark_exited(a, t, -1);
    }
}

static void
escalate(agent_t *a)
{
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->state == T_RUNNING && t->killing && now >= t->kill_at) {
            al_info("task %llu.%d.%d: grace period over, SIGKILL", t->job,
                    t->index, t->restart);
            kill(-t->pid, SIGKILL);
            t->kill_at = now + 1000;
        }
    }
}

static void
stop_task(agent_t *a, task_t *t)
{
    if (t->state != T_RUNNING || t->killing)
        return;
    al_info("task %llu.%d.%d no longer wanted: SIGTERM, SIGKILL in %lld ms",
            t->job, t->index, t->restart, (long long)a->grace_ms);
    kill(-t->pid, SIGTERM);
    t->killing = true;
    t->kill_at = al_clock_mono_ms() + a->grace_ms;
}

static char *
env_entry(const char *k, const char *v)
{
    return al_xasprintf("%s=%s", k, v);
}

/* An environment being built: the first `borrowed` entries are the
 * agent's own (environ's strings, which it never changes), the rest are
 * allocated. */
typedef struct env {
    char **v;
    size_t n, cap, borrowed;
} env_t;

static void
env_push(env_t *e, char *entry)
{
    if (e->n + 1 >= e->cap) {
        e->cap = e->cap ? 2 * e->cap : 64;
        e->v = al_xreallocarray(e->v, e->cap, sizeof *e->v);
    }
    e->v[e->n++] = entry;
    e->v[e->n] = NULL;
}

/* Not every program takes the last of two settings of a name: drops the
 * earlier ones, keeping the order of the rest.  A hash set of the names
 * seen, walking backwards: comparing every pair cost more than the rest of
 * starting a task with a large environment. */
static void
env_dedup(env_t *e)
{
    size_t cap = 16;
    while (cap < 2 * e->n)
        cap *= 2;
    const char **seen = al_xcalloc(cap, sizeof *seen);
    size_t w = e->n, borrowed = e->borrowed;
    for (size_t i = e->n; i-- > 0;) {
        char *v = e->v[i];
        size_t klen = strcspn(v, "=");
        uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
        for (size_t k = 0; k < klen; k++)
            h = (h ^ (unsigned char)v[k]) * UINT64_C(1099511628211);
        size_t slot = (size_t)h & (cap - 1);
        bool later = false;
        for (; seen[slot] != NULL && !later; slot = (slot + 1) & (cap - 1))
            later = strncmp(seen[slot], v, klen + 1) == 0;
        if (later) {
            if (i < borrowed)
                e->borrowed--; /* the order is kept: still a prefix */
            else
                free(v);
            continue;
        }
        seen[slot] = v;
        e->v[--w] = v;
    }
    free(seen);
    memmove(e->v, e->v + w, (e->n - w) * sizeof *e->v);
    e->n -= w;
    e->v[e->n] = NULL;
}

/* What allot tells a task, from its desired entry. */
static const struct {
    const char *var, *key;
} task_ints[] = {
    { .var = "ALLOT_JOB_ID", .key = "job" },
    { .var = "ALLOT_TASK_INDEX", .key = "task" },
    { .var = "ALLOT_RESTART_COUNT", .key = "restart" },
    { .var = "RANK", .key = "rank" },
    { .var = "WORLD_SIZE", .key = "world_size" },
    { .var = "LOCAL_RANK", .key = "local_rank" },
    { .var = "MASTER_PORT", .key = "master_port" },
};

/* The task's environment: the agent's own without its ALLOT_* settings,
 * then the job's, then allot's variables; every name once, the last
 * setting winning.  gpus is the CUDA_VISIBLE_DEVICES list. */
static env_t
task_env(const agent_t *a, json_t *s, const char *gpus)
{
    env_t e = { NULL, 0, 0, 0 };
    for (char **p = environ; *p != NULL; p++)
        if (strncmp(*p, "ALLOT_", 6) != 0)
            env_push(&e, *p);
    e.borrowed = e.n;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(s, "env"), k, v)
    {
        if (json_is_string(v))
            env_push(&e, env_entry(k, json_string_value(v)));
    }
    env_push(&e, env_entry("CUDA_VISIBLE_DEVICES", gpus));
    env_push(&e, env_entry("ALLOT_NODE", a->name));
    if (a->plat.emulated)
        env_push(&e, env_entry("ALLOT_EMULATED_GPUS", "1"));
    for (size_t i = 0; i < sizeof task_ints / sizeof task_ints[0]; i++) {
        char num[32];
        snprintf(num, sizeof num, "%lld",
                 (long long)al_json_int(s, task_ints[i].key, 0));
        env_push(&e, env_entry(task_ints[i].var, num));
    }
    env_push(&e, env_entry("MASTER_ADDR", al_json_str(s, "master_addr", "")));
    /* A Slurm job script (`allot submit` marks it): what srun would tell
     * each task, so that the script and the tools it runs work unchanged. */
    if (strcmp(al_json_str(json_object_get(s, "env"), "ALLOT_SLURM", ""),
               "1") == 0) {
        static const struct {
            const char *var, *key;
        } slurm[] = {
            { "SLURM_JOB_ID", "job" },
            { "SLURM_JOBID", "job" },
            { "SLURM_PROCID", "rank" },
            { "SLURM_NTASKS", "world_size" },
            { "SLURM_NPROCS", "world_size" },
            { "SLURM_LOCALID", "local_rank" },
            { "SLURM_RESTART_COUNT", "restart" },
        };
        for (size_t i = 0; i < sizeof slurm / sizeof slurm[0]; i++) {
            char num[32];
            snprintf(num, sizeof num, "%lld",
                     (long long)al_json_int(s, slurm[i].key, 0));
            env_push(&e, env_entry(slurm[i].var, num));
        }
        if (al_json_str(s, "cwd", NULL) != NULL)
            env_push(&e,
                     env_entry("SLURM_SUBMIT_DIR", al_json_str(s, "cwd", "")));
        env_push(&e, env_entry("SLURMD_NODENAME", a->name));
    }
    env_dedup(&e);
    return e;
}

static void
env_fini(env_t *e)
{
    for (size_t i = e->borrowed; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
}

/* Records that a task could not even be started. */
static void
fail_task(agent_t *a, task_t *t, const char *why)
{
    take_slot(a, t);
    char *lp = task_file(a, t, "log"), *ep = task_file(a, t, "state");
    FILE *f = fopen(lp, "a");
    if (f != NULL) {
        fprintf(f, "allot: %s\n", why);
        fclose(f);
    }
    write_record(a, t, "127 0");
    t->state = T_EXITED;
    t->exit_code = 127;
    free(lp);
    free(ep);
}

/* A task whose start was asked of the spawner, and what its request
 * points into, until the reply comes. */
typedef struct launching {
    task_t *t;
    al__launch_t l;
    char **argv;
    env_t env;
    char *sp, *lp, *sp2;
    char ident[96];
    al_buf_t gpus;
    bool sent;
} launching_t;

/* Prepares the start of t into x; false when t cannot start at all (it
 * has then failed). */
static bool
launch_prepare(agent_t *a, task_t *t, launching_t *x)
{
    json_t *s = t->spec;
    json_t *cmd = json_object_get(s, "command");
    size_t argc = json_array_size(cmd);
    if (argc == 0) {
        fail_task(a, t, "the job has no command");
        return false;
    }
    take_slot(a, t);
    memset(x, 0, sizeof *x);
    x->t = t;
    x->argv = al_xcalloc(argc + 1, sizeof *x->argv);
    for (size_t i = 0; i < argc; i++)
        x->argv[i] = (char *)json_string_value(json_array_get(cmd, i));
    /* A job script travels whole: write it beside the task's log and run
     * that copy (execvp() hands a file without "#!" to /bin/sh). */
    const char *script = al_json_str(s, "script", NULL);
    x->sp = task_file(a, t, "script");
    if (script != NULL) {
        t->script = true;
        if (al_fs_write_file(x->sp, script, strlen(script), 0700, 0) != 0)
            al_warn("task %llu.%d.%d: cannot write %s", t->job, t->index,
                    t->restart, x->sp);
        x->argv[0] = x->sp;
    }
    al_buf_init(&x->gpus);
    json_t *g = json_object_get(s, "gpus");
    for (size_t i = 0; i < json_array_size(g); i++) {
        /* Real devices by UUID, which CUDA accepts and which cannot be
         * confused by device ordering; emulated ones by index. */
        json_int_t d = json_integer_value(json_array_get(g, i));
        if (!a->plat.emulated && d >= 0 && d < a->plat.ngpus)
            al_buf_printf(&x->gpus, "%s%s", i ? "," : "", a->plat.gpus[d].uuid);
        else
            al_buf_printf(&x->gpus, "%s%lld", i ? "," : "", (long long)d);
    }
    x->env = task_env(a, s, al_buf_cstr(&x->gpus));
    x->lp = task_file(a, t, "log");
    x->sp2 = task_file(a, t, "state");
    snprintf(x->ident, sizeof x->ident, "%llu %d %d", t->job, t->index,
             t->restart);
    x->l = (al__launch_t){
        .ident = x->ident,
        .argv = x->argv,
        .cwd = al_json_str(s, "cwd", NULL),
        .envp = x->env.v,
        .log_path = x->lp,
        .state_path = x->sp2,
        .devices = t->devices,
        .user = a->run_as_user ? al_json_str(s, "user", NULL) : NULL,
    };
    return true;
}

static void
launch_free(launching_t *x)
{
    env_fini(&x->env);
    free(x->argv);
    free(x->sp);
    free(x->lp);
    free(x->sp2);
    al_buf_fini(&x->gpus);
}

/*
 * Takes t as the task its record names: process pid, started at `start`.
 * Alive means the same process: its pid and its start time.  One that
 * ended but whose spawner has not yet recorded it (a zombie) counts as
 * running: reap() waits for the record.  One gone without a recorded exit
 * ended how we cannot know: SIGKILL.
 */
static void
adopt_task(agent_t *a, task_t *t, long pid, long long start)
{
    int64_t now_start = -1;
    t->pid = (pid_t)pid;
    t->start = start;
    t->adopted = true;
    if (read_exit(a, t)) {
        t->state = T_EXITED;
    } else if (pid > 0 && start >= 0 &&
               al_platform_proc_state(pid, &now_start) >= 0 &&
               now_start == start) {
        t->state = T_RUNNING;
    } else {
        t->state = T_EXITED;
        t->exit_code = 0;
        t->signal = SIGKILL;
    }
}

/*
 * x was sent to a spawner that died before answering: did it start the task
 * all the same?  Its record says so (al__launch() writes it right after
 * the fork).  Then the task is taken as adopted, as a restarted agent
 * takes its tasks: running if the process is still the same, else ended,
 * how unknown (SIGKILL), rather than started a second time.  Releases x
 * and returns true in that case.
 */
static bool
launched_before(agent_t *a, launching_t *x)
{
    task_t *t = x->t;
    char *data = NULL;
    size_t n;
    al__rec_t rec;
    bool mine = al_fs_read_file(x->sp2, &data, &n) == 0 &&
                al__rec_parse(data, &rec) && rec.job == t->job &&
                rec.index == t->index && rec.restart == t->restart &&
                rec.pid > 0;
    free(data);
    if (!mine)
        return false;
    adopt_task(a, t, rec.pid, rec.start);
    if (t->state == T_RUNNING) {
        t->log_looked = al_clock_mono_ms();
        t->log_quiet = true;
    }
    al_warn("task %llu.%d.%d: started by a spawner that died before saying "
            "so; adopted (%s)",
            t->job, t->index, t->restart, task_state_names[t->state]);
    launch_free(x);
    return true;
}

/* Takes the spawner's answer for x (pid, or an error with cause, which it
 * frees) and releases x. */
static void
launch_finish(launching_t *x, pid_t pid, char *cause)
{
    task_t *t = x->t;
    if (pid < 0) {
        /* Not started: the next sync tries again. */
        al_error("task %llu.%d.%d: %s", t->job, t->index, t->restart,
                 cause ? cause : "not started");
    } else {
        t->pid = pid;
        t->state = T_RUNNING;
        t->log_looked = al_clock_mono_ms();
        t->log_quiet = true;
        al_info("task %llu.%d.%d started: pid %ld, gpus [%s]", t->job, t->index,
                t->restart, (long)pid, al_buf_cstr(&x->gpus));
    }
    free(cause);
    launch_free(x);
}

/* The spawner did not answer within its time limit: a start in the batch
 * hangs (its working directory or program on a file system that does not
 * answer).  Kills that start and the spawner (its running tasks come to
 * this process, see respawn()) and fails the task that hung: the spawner
 * starts a batch's tasks in order and writes each one's record once it
 * runs its program, so it is the first sent without a record.  Those
 * before it are adopted; those after it were never read and are sent
 * again, to the next spawner. */
static void
spawner_hung(agent_t *a, launching_t *batch, int n, const char *cause)
{
    pid_t *known = al_xcalloc((size_t)a->ntasks + 1, sizeof *known);
    size_t nknown = 0;
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].state == T_RUNNING && a->tasks[i].pid > 0)
            known[nknown++] = a->tasks[i].pid;
    al__spawner_kill_hung(&a->spawner, known, nknown);
    free(known);
    a->spawner.unread = 0;
    respawn(a);
    bool failed = false;
    for (int i = 0; i < n; i++) {
        launching_t *x = &batch[i];
        if (!x->sent || launched_before(a, x))
            continue;
        x->sent = false;
        if (failed)
            continue; /* sent again by launch_batch() */
        failed = true;
        al_error("task %llu.%d.%d: %s", x->t->job, x->t->index, x->t->restart,
                 cause);
        fail_task(a, x->t, cause);
        launch_free(x);
        x->t = NULL;
    }
}

/* Reads the spawner's answers for the n tasks of batch whose starts were
 * sent.  If the spawner is gone, starts another and asks it once more for
 * those left without an answer, one at a time, except those the dead one
 * had started (their records say so: launched_before()). */
static void
launch_batch(agent_t *a, launching_t *batch, int n)
{
    bool gone = false, hung = false;
    for (int i = 0; i < n && !hung; i++) {
        launching_t *x = &batch[i];
        char *cause = NULL;
        pid_t pid = AL_EUNAVAIL;
        if (x->sent && !gone)
            pid = al__spawner_result(&a->spawner, &cause);
        if (pid == AL_ETIMEDOUT) {
            spawner_hung(a, batch + i, n - i, cause); /* respawns */
            hung = true;
        } else if (pid == AL_EUNAVAIL) {
            gone = true;
            x->sent = false; /* to ask again below */
        } else {
            launch_finish(x, pid, cause);
            continue;
        }
        free(cause);
    }
    if (!gone && !hung)
        return;
    if (gone) {
        a->spawner.unread = 0;
        respawn(a);
    }
    for (int i = 0; i < n; i++) {
        if (batch[i].t == NULL || batch[i].sent ||
            launched_before(a, &batch[i]))
            continue;
        char *cause = NULL;
        pid_t pid = al__spawner_launch(&a->spawner, &batch[i].l, &cause);
        if (pid == AL_ETIMEDOUT) {
            batch[i].sent = true;
            spawner_hung(a, &batch[i], 1, cause);
            free(cause);
            continue;
        }
        launch_finish(&batch[i], pid, cause);
    }
}

/* Adds (sign 1) or takes (-1) t's share of each of its GPUs to used. */
static void
count_share(int used[64], const task_t *t, int sign)
{
    for (int d = 0; d < 64; d++)
        if (t->devices & ((uint64_t)1 << d))
            used[d] += sign * t->gpu_share;
}

/* Starts the waiting tasks that are wanted and whose GPUs have room: a
 * task being stopped keeps its GPUs until it has exited, and fractional
 * tasks placed on one GPU run beside each other.  The requests go to the
 * spawner in batches and their replies are read together: a round trip
 * between the two processes per task was a good part of a short task's
 * cost. */
static void
start_tasks(agent_t *a)
{
    launching_t batch[AL__SPAWN_BATCH];
    int n = 0;
    int used[64] = { 0 }; /* thousandths of each GPU in use */
    for (int k = 0; k < a->ntasks; k++)
        if (a->tasks[k].state == T_RUNNING)
            count_share(used, &a->tasks[k], 1);
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->state != T_WAITING || !t->desired)
            continue;
        count_share(used, t, 1);
        bool fits = true;
        for (int d = 0; d < 64; d++)
            if ((t->devices & ((uint64_t)1 << d)) && used[d] > 1000)
                fits = false;
        if (!fits || !launch_prepare(a, t, &batch[n])) {
            count_share(used, t, -1);
            continue;
        }
        int rc = al__spawner_send(&a->spawner, &batch[n].l);
        if (rc == AL_ELIMIT) {
            launch_finish(&batch[n], -1,
                          al_xasprintf("the task's request is too large"));
            count_share(used, t, -1);
            continue;
        }
        batch[n].sent = rc == 0;
        if (++n == AL__SPAWN_BATCH) {
            launch_batch(a, batch, n);
            n = 0;
        }
    }
    launch_batch(a, batch, n);
}

/* Parses "SLOT.state"; false if name is anything else. */
static bool
parse_slot_name(const char *name, int *slot)
{
    char *e;
    if (name[0] < '0' || name[0] > '9')
        return false;
    long v = strtol(name, &e, 10);
    if (strcmp(e, ".state") != 0 || v > 1 << 24)
        return false;
    *slot = (int)v;
    return true;
}

/* Adopts the tasks an earlier agent left in the state directory: the
 * records (see AL__REC_LEN) of slots in use. */
static void
adopt(agent_t *a)
{
    DIR *d = opendir(a->task_dir);
    if (d == NULL)
        return;
    struct dirent *e;
    int maxslot = -1;
    char *used = NULL;
    size_t nused = 0;
    while ((e = readdir(d)) != NULL) {
        int slot;
        if (!parse_slot_name(e->d_name, &slot))
            continue;
        if (slot > maxslot)
            maxslot = slot;
        char *p = al_xasprintf("%s/%s", a->task_dir, e->d_name), *data = NULL;
        size_t n = 0;
        al__rec_t rec;
        bool ok = al_fs_read_file(p, &data, &n) == 0 && n >= AL__REC_LEN &&
                  al__rec_parse(data, &rec);
        free(data);
        free(p);
        if (!ok)
            continue; /* free (or unreadable): reused */
        unsigned long long job = rec.job, devices = rec.devices;
        long index = rec.index, restart = rec.restart, pid = rec.pid;
        long long start = rec.start;
        if ((size_t)slot >= nused) {
            size_t nn = (size_t)slot + 64;
            used = al_xrealloc(used, nn);
            memset(used + nused, 0, nn - nused);
            nused = nn;
        }
        used[slot] = 1;
        task_t *t = add_task(a, job, (int)index, (int)restart);
        t->slot = slot;
        t->devices = devices;
        t->script = true; /* it may have one */
        adopt_task(a, t, pid, start);
        al_info("adopted task %llu.%ld.%ld (%s)", job, index, restart,
                task_state_names[t->state]);
    }
    closedir(d);
    a->nslots = maxslot + 1;
    for (int i = maxslot; i >= 0; i--)
        if ((size_t)i >= nused || !used[i])
            free_slot(a, i);
    free(used);
}

/* ------------------------------------------------------------------ */
/* Protocol                                                           */

/* POSTs body to path.  A task's end interrupts the request (AL_EBUSY)
 * when intr is true; a stop signal always does. */
static int
call(agent_t *a, const char *path, json_t *body, int timeout_ms,
     al_http_resp_t *resp, json_t **out, char **cause, bool intr)
{
    char *text = al_json_dump(body);
    al_http_conn_t *c = &a->conn[a->cur];
    int rc = al_http_conn_request(c, "POST", path, a->token, text, strlen(text),
                                  timeout_ms, intr ? sig_pipe[0] : stop_pipe[0],
                                  resp, cause);
    free(text);
    if (rc == AL_EBUSY && c->pending)
        a->cur ^= 1;
    if (rc != 0)
        return rc;
    *out = al_json_parse(resp->body.data ? resp->body.data : "", resp->body.len,
                         NULL);
    return 0;
}

static int
do_register(agent_t *a)
{
    json_t *gpus = json_array();
    for (int i = 0; i < a->plat.ngpus; i++) {
        const al_gpu_info_t *g = &a->plat.gpus[i];
        json_array_append_new(gpus,
                              json_pack("{s:s, s:s, s:I, s:i, s:i}", "uuid",
                                        g->uuid, "model", g->model, "mem_bytes",
                                        (json_int_t)g->mem_bytes, "numa",
                                        g->numa, "nvlink", g->nvlink));
    }
    json_t *body =
        json_pack("{s:s, s:s, s:I, s:I, s:b, s:o}", "name", a->name, "addr",
                  a->addr, "cpu_milli", (json_int_t)a->plat.cpu_milli,
                  "mem_bytes", (json_int_t)a->plat.mem_bytes, "emulated",
                  a->plat.emulated, "gpus", gpus);
    al_http_resp_t resp;
    json_t *out = NULL;
    char *cause = NULL;
    int rc =
        call(a, "/v1/agent/register", body, 10000, &resp, &out, &cause, true);
    json_decref(body);
    if (rc != 0) {
        if (rc != AL_EBUSY)
            al_warn("register: %s", cause ? cause : al_strerror(rc));
        free(cause);
        return rc;
    }
    if (resp.status != 200) {
        al_error("register refused (%d): %s", resp.status,
                 al_json_str(out, "message", al_buf_cstr(&resp.body)));
        rc = resp.status == 401 || resp.status == 403 ? AL_EAUTH : AL_EIO;
    } else {
        a->grace_ms = al_json_int(out, "grace_ms", a->grace_ms);
        a->registered = true;
        al_info("registered as node %s with %s (%d GPUs%s)", a->name,
                a->url.host, a->plat.ngpus,
                a->plat.emulated ? ", emulated" : "");
    }
    json_decref(out);
    al_http_resp_fini(&resp);
    return rc;
}

/* The report of one task, with the next chunk of its log. */
static json_t *
report_task(agent_t *a, task_t *t, bool *more)
{
    json_t *o = json_pack("{s:I, s:i, s:i, s:s, s:I}", "job",
                          (json_int_t)t->job, "task", t->index, "restart",
                          t->restart, "state", task_state_names[t->state],
                          "log_off", (json_int_t)t->log_acked);
    if (t->state == T_EXITED) {
        json_object_set_new(o, "exit_code", json_integer(t->exit_code));
        json_object_set_new(o, "signal", json_integer(t->signal));
    }
    /* Most tasks have nothing new to say: look before reading, and look
     * at a quiet running task's log only now and then (an ended task's
     * log is always looked at: all of it must reach the controller). */
    int64_t now = al_clock_mono_ms();
    if (t->slot < 0 || (t->state == T_RUNNING && t->log_quiet &&
                        now - t->log_looked < LOG_LOOK_MS))
        return o;
    t->log_looked = now;
    t->log_quiet = true;
    char *lp = task_file(a, t, "log");
    int fd = file_size(lp) > t->log_acked ? open(lp, O_RDONLY | O_CLOEXEC) : -1;
    free(lp);
    if (fd >= 0) {
        if (a->logbuf == NULL)
            a->logbuf = al_xmalloc(LOG_CHUNK);
        ssize_t n = pread(fd, a->logbuf, LOG_CHUNK, t->log_acked);
        if (n > 0) {
            char *b64 = al_b64_encode(a->logbuf, (size_t)n);
            json_object_set_new(o, "log", json_string(b64));
            free(b64);
            *more = true;
            t->log_quiet = false;
        }
        close(fd);
    }
    return o;
}

static void
apply(agent_t *a, json_t *out)
{
    json_t *acks = json_object_get(out, "acks");
    for (size_t i = 0; i < json_array_size(acks); i++) {
        json_t *k = json_array_get(acks, i);
        task_t *t = find_task(a, (unsigned long long)al_json_int(k, "job", 0),
                              (int)al_json_int(k, "task", -1),
                              (int)al_json_int(k, "restart", -1));
        if (t == NULL)
            continue;
        t->log_acked = al_json_int(k, "log_off", t->log_acked);
        if (t->state == T_EXITED)
            t->acked_exit = true;
    }
    a->grace_ms = al_json_int(out, "grace_ms", a->grace_ms);
    for (int i = 0; i < a->ntasks; i++)
        a->tasks[i].desired = false;
    json_t *want = json_object_get(out, "tasks");
    for (size_t i = 0; i < json_array_size(want); i++) {
        json_t *d = json_array_get(want, i);
        unsigned long long job = (unsigned long long)al_json_int(d, "job", 0);
        int index = (int)al_json_int(d, "task", -1);
        int restart = (int)al_json_int(d, "restart", -1);
        task_t *t = find_task(a, job, index, restart);
        if (t == NULL) {
            t = add_task(a, job, index, restart);
            t->state = T_WAITING;
            t->log_acked = al_json_int(d, "log_off", 0);
        }
        t->desired = true;
        /* Any entry may name a fraction (an adopted task learns it so). */
        json_int_t milli = al_json_int(d, "gpu_milli", 0);
        if (milli > 0 && milli < 1000)
            t->gpu_share = (int)milli;
        if (t->spec == NULL) {
            t->spec = json_incref(d);
            json_t *g = json_object_get(d, "gpus");
            for (size_t k = 0; k < json_array_size(g); k++) {
                json_int_t dev = json_integer_value(json_array_get(g, k));
                if (dev >= 0 && dev < 64)
                    t->devices |= (uint64_t)1 << dev;
            }
        }
    }
    /* Stop what is not wanted; forget what is over and fully reported. */
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->desired)
            continue;
        if (t->state == T_RUNNING) {
            stop_task(a, t);
        } else if (t->state == T_WAITING) {
            remove_task(a, t, -1);
            i--;
        } else if (t->state == T_EXITED && t->acked_exit) {
            char *lp = task_file(a, t, "log");
            int64_t size = file_size(lp);
            free(lp);
            if (t->log_acked >= size) {
                remove_task(a, t, size);
                i--;
            }
        }
    }
    start_tasks(a);
}

/* One sync: report, wait for the answer, apply it.  Returns 0 or an error
 * (AL_EBUSY: interrupted by a child's exit or a signal). */
/* Real GPUs' telemetry, at most every TELEMETRY_MS: an array of {index,
 * util, mem_util, mem_used, temp_c, power_mw} (fields the driver does not
 * give left out), or NULL when none is due. */
static json_t *
telemetry(agent_t *a, int64_t now)
{
    if (a->plat.nvml == NULL || a->plat.emulated ||
        (a->sampled_at != 0 && now - a->sampled_at < TELEMETRY_MS))
        return NULL;
    a->sampled_at = now;
    json_t *arr = json_array();
    for (int i = 0; i < a->plat.ngpus; i++) {
        al_gpu_sample_t g;
        if (al_platform_sample(&a->plat, i, &g) != 0)
            continue;
        json_t *o = json_pack("{s:i}", "index", i);
        const struct {
            const char *key;
            int64_t v;
        } f[] = {
            { "util", g.util_pct },     { "mem_util", g.mem_util_pct },
            { "mem_used", g.mem_used }, { "temp_c", g.temp_c },
            { "power_mw", g.power_mw },
        };
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (f[k].v >= 0)
                json_object_set_new(o, f[k].key,
                                    json_integer((json_int_t)f[k].v));
        json_array_append_new(arr, o);
    }
    return arr;
}

static int
sync_once(agent_t *a)
{
    json_t *tasks = json_array();
    bool more = false, running = false, exited_unacked = false;
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        json_array_append_new(tasks, report_task(a, t, &more));
        running = running || t->state == T_RUNNING;
        exited_unacked =
            exited_unacked || (t->state == T_EXITED && !t->acked_exit);
    }
    int64_t wait = more || exited_unacked ? 0
                   : running              ? BUSY_POLL_MS
                                          : IDLE_POLL_MS;
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].killing && a->tasks[i].kill_at - now < wait)
            wait = a->tasks[i].kill_at > now ? a->tasks[i].kill_at - now : 0;
    json_t *gpus = telemetry(a, now);
    if (a->plat.nvml != NULL && !a->plat.emulated &&
        wait > a->sampled_at + TELEMETRY_MS - now)
        wait = a->sampled_at + TELEMETRY_MS - now;
    json_t *body = json_pack("{s:s, s:o, s:I}", "node", a->name, "tasks", tasks,
                             "wait_ms", (json_int_t)(wait > 0 ? wait : 0));
    if (gpus != NULL)
        json_object_set_new(body, "gpus", gpus);
    al_http_resp_t resp;
    json_t *out = NULL;
    char *cause = NULL;
    int rc = call(a, "/v1/agent/sync", body, (int)wait + 15000, &resp, &out,
                  &cause, wait > 0);
    json_decref(body);
    if (rc != 0) {
        if (rc != AL_EBUSY)
            al_warn("sync: %s", cause ? cause : al_strerror(rc));
        free(cause);
        return rc;
    }
    if (resp.status == 409) {
        a->registered = false;
    } else if (resp.status != 200 || !json_is_object(out)) {
        al_warn("sync refused (%d): %s", resp.status,
                al_json_str(out, "message", al_buf_cstr(&resp.body)));
        rc = AL_EIO;
    } else {
        apply(a, out);
    }
    json_decref(out);
    al_http_resp_fini(&resp);
    return rc;
}

/* Sleeps up to ms, waking early on a child's exit or a stop signal. */
static void
nap(int64_t ms)
{
    struct pollfd p = { sig_pipe[0], POLLIN, 0 };
    poll(&p, 1, (int)ms);
}

/* ------------------------------------------------------------------ */
/* `allot agent`                                                      */

static int
run(agent_t *a)
{
    int64_t backoff = 200;
    while (!stopping) {
        reap(a);
        escalate(a);
        int rc;
        if (!a->registered) {
            rc = do_register(a);
            if (rc == AL_EAUTH)
                return AL_EXIT_FAIL;
        } else {
            rc = sync_once(a);
        }
        if (rc == AL_EBUSY) {
            drain_pipe();
            continue;
        }
        if (rc != 0) {
            nap(backoff);
            drain_pipe();
            backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
        } else {
            backoff = 200;
        }
    }
    return 0;
}

static int
setup_signals(void)
{
    if (al__chld_pipe(sig_pipe, on_sigchld) != 0 || pipe(stop_pipe) != 0)
        return AL_EIO;
    for (int i = 0; i < 2; i++) {
        fcntl(stop_pipe[i], F_SETFL, fcntl(stop_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(stop_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    al_daemon_catch(on_stop);
    return 0;
}

/* `allot agent --probe`: what this node would register, and one sample. */
static int
probe_main(const char *fake, const char *fallback, const char *name)
{
    al_platform_info_t plat;
    char *cause = NULL;
    if (al_platform_probe(&plat) != 0) {
        fprintf(stderr, "allot agent: cannot read the machine's resources\n");
        return AL_EXIT_FAIL;
    }
    if (fake == NULL && plat.ngpus == 0)
        fake = fallback;
    if (fake != NULL &&
        al_platform_fake_gpus(&plat, fake, name ? name : plat.hostname,
                              &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        return AL_EXIT_USAGE;
    }
    json_t *gpus = json_array();
    for (int i = 0; i < plat.ngpus; i++) {
        const al_gpu_info_t *g = &plat.gpus[i];
        al_gpu_sample_t t;
        json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:i, s:i}", "index", i,
                              "uuid", g->uuid, "model", g->model, "mem_bytes",
                              (json_int_t)g->mem_bytes, "numa", g->numa,
                              "nvlink", g->nvlink);
        if (al_platform_sample(&plat, i, &t) == 0)
            json_object_set_new(
                o, "sample",
                json_pack("{s:i, s:i, s:I, s:i, s:I}", "util", t.util_pct,
                          "mem_util", t.mem_util_pct, "mem_used",
                          (json_int_t)t.mem_used, "temp_c", t.temp_c,
                          "power_mw", (json_int_t)t.power_mw));
        json_array_append_new(gpus, o);
    }
    json_t *out = json_pack(
        "{s:s, s:I, s:I, s:b, s:o}", "hostname", plat.hostname, "cpu_milli",
        (json_int_t)plat.cpu_milli, "mem_bytes", (json_int_t)plat.mem_bytes,
        "emulated", plat.emulated, "gpus", gpus);
    char *text = json_dumps(out, JSON_INDENT(2));
    puts(text);
    free(text);
    json_decref(out);
    al_platform_close(&plat);
    return AL_EXIT_OK;
}

/* `allot agent`'s command line: the options store into this. */
typedef struct agent_args {
    const char *server, *token, *token_file, *name, *addr, *state, *fake,
        *fallback, *cpus;
    bool no_run_as_user, run_as_user, probe;
    int64_t launch_timeout;
    al_daemon_t d;
} agent_args_t;

#define A(f) offsetof(agent_args_t, f)

static const al_opt_t agent_opts[] = {
    { .name = "--server",
      .kind = AL_OPT_STR,
      .off = A(server),
      .arg = "URL",
      .help = "the controller",
      .flags = AL_OPT_REQUIRED },
    { .name = "--join-token",
      .kind = AL_OPT_STR,
      .off = A(token),
      .arg = "T",
      .help = "the join token (the server wrote it to STATE/join-token; "
              "default: ALLOT_JOIN_TOKEN)",
      .flags = AL_OPT_BRIEF },
    { .name = "--join-token-file",
      .kind = AL_OPT_STR,
      .off = A(token_file),
      .arg = "F",
      .help = "read the join token from F" },
    { .name = "--name",
      .kind = AL_OPT_STR,
      .off = A(name),
      .arg = "NAME",
      .help = "the node's name (default: hostname)" },
    { .name = "--addr",
      .kind = AL_OPT_STR,
      .off = A(addr),
      .arg = "ADDR",
      .help = "where other nodes reach this one (default: hostname)" },
    { .name = "--state",
      .kind = AL_OPT_STR,
      .off = A(state),
      .arg = "DIR",
      .help = "the state directory (default: agent-NAME in the user's data "
              "directory)" },
    { .name = "--fake-gpus",
      .kind = AL_OPT_STR,
      .off = A(fake),
      .arg = "NxMODEL",
      .help = "declare emulated GPUs",
      .flags = AL_OPT_BRIEF },
    { .name = "--fallback-gpus",
      .kind = AL_OPT_STR,
      .off = A(fallback),
      .arg = "NxMODEL",
      .help = "declare emulated GPUs only when NVML finds none" },
    { .name = "--cpus",
      .kind = AL_OPT_STR,
      .off = A(cpus),
      .arg = "N",
      .help = "CPU cores to offer (default: the machine's)" },
    { .name = "--no-run-as-user",
      .kind = AL_OPT_FLAG,
      .off = A(no_run_as_user),
      .help = "run tasks as the agent's own user" },
    /* The default when root; accepted for scripts written before. */
    { .name = "--run-as-user",
      .kind = AL_OPT_FLAG,
      .off = A(run_as_user),
      .flags = AL_OPT_HIDDEN },
    { .name = "--probe",
      .kind = AL_OPT_FLAG,
      .off = A(probe),
      .help = "print what this node would offer as JSON and exit" },
    { .name = "--launch-timeout",
      .kind = AL_OPT_INT,
      .off = A(launch_timeout),
      .min = 100,
      .max = INT64_C(86400000),
      .arg = "MS",
      .help = "kill a task that has not reached its program by then "
              "(default 10000)" },
    AL_DAEMON_OPTS(agent_args_t, d),
    { .name = NULL },
};

#undef A

const al_opt_cmd_t al_agent_cmd = {
    .name = "agent",
    .opts = agent_opts,
    .about =
        "A root agent runs each task as the Unix user who submitted it (who\n"
        "must exist on the node; the task fails otherwise); --no-run-as-user\n"
        "runs tasks as the agent's own user, as an agent that is not root\n"
        "always does.\n"
        "A task that has not reached its program after --launch-timeout ms\n"
        "(its working directory or program on a file system that does not\n"
        "answer) is killed and fails, and the next tasks start.\n"
        "allot agent --probe [--fake-gpus ...] prints what this node would\n"
        "offer (CPUs, memory, GPUs with NUMA node, NVLink domain and a\n"
        "telemetry sample) as JSON and exits.\n",
};

int
al_agent_main(int argc, char **argv)
{
    agent_args_t args;
    memset(&args, 0, sizeof args);
    args.token = getenv("ALLOT_JOIN_TOKEN");
    args.launch_timeout = 10000;
    int rc = al_daemon_parse(&args.d, &al_agent_cmd, &args, argc, argv);
    if (rc == 0 && args.probe && !args.d.help)
        return probe_main(args.fake, args.fallback, args.name);
    if (!al_daemon_begin(&args.d, &al_agent_cmd, rc, args.server != NULL, &rc))
        return rc;
    const char *server = args.server, *token = args.token,
               *token_file = args.token_file, *name = args.name,
               *addr = args.addr, *state = args.state, *fake = args.fake,
               *fallback = args.fallback, *cpus = args.cpus;
    bool no_run_as_user = args.no_run_as_user, run_as_user = args.run_as_user;
    int64_t launch_timeout = args.launch_timeout;

    agent_t a;
    memset(&a, 0, sizeof a);
    a.grace_ms = 10000;
    a.run_as_user = geteuid() == 0 && !no_run_as_user;
    if (run_as_user && no_run_as_user) {
        fputs("allot agent: --run-as-user and --no-run-as-user conflict\n",
              stderr);
        return AL_EXIT_USAGE;
    }
    char *cause = NULL, *filetoken = NULL;
    if (al_url_parse(server, &a.url, &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        return AL_EXIT_USAGE;
    }
    for (int i = 0; i < 2; i++) {
        al_http_conn_init(&a.conn[i], &a.url);
        a.conn[i].keep_interrupted = true; /* syncs may be sent again */
    }
    if (token_file != NULL) {
        size_t n;
        if (al_fs_read_file(token_file, &filetoken, &n) != 0) {
            fprintf(stderr, "allot agent: cannot read %s\n", token_file);
            return AL_EXIT_FAIL;
        }
        filetoken[strcspn(filetoken, "\r\n")] = '\0';
        token = filetoken;
    }
    if (token == NULL) {
        fprintf(stderr, "allot agent: no join token: pass --join-token or "
                        "set ALLOT_JOIN_TOKEN (the server wrote it to "
                        "STATE/join-token)\n");
        return AL_EXIT_USAGE;
    }
    a.token = token;
    if (al_platform_probe(&a.plat) != 0) {
        fprintf(stderr, "allot agent: cannot read the machine's resources\n");
        free(filetoken);
        return AL_EXIT_FAIL;
    }
    int lock_fd = -1;
    a.name = al_xstrdup(name ? name : a.plat.hostname);
    /* Other nodes reach this one (MASTER_ADDR of a gang) by its hostname
     * unless told otherwise. */
    a.addr = al_xstrdup(addr ? addr : a.plat.hostname);
    if (fake == NULL && a.plat.ngpus == 0)
        fake = fallback;
    if (fake != NULL &&
        al_platform_fake_gpus(&a.plat, fake, a.name, &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        rc = AL_EXIT_USAGE;
        goto fail;
    }
    if (cpus != NULL) {
        double c = strtod(cpus, NULL);
        if (c <= 0) {
            fprintf(stderr, "allot agent: --cpus wants a positive number\n");
            rc = AL_EXIT_USAGE;
            goto fail;
        }
        a.plat.cpu_milli = (int64_t)(c * 1000);
    }
    if (state != NULL) {
        a.state_dir = al_xstrdup(state);
    } else {
        char *d = al_ucfg_data_dir();
        a.state_dir = al_xasprintf("%s/agent-%s", d, a.name);
        free(d);
    }
    a.task_dir = al_xasprintf("%s/tasks", a.state_dir);
    if (al_fs_mkdir_p(a.task_dir, 0700) != 0) {
        fprintf(stderr, "allot agent: cannot create %s: %s\n", a.task_dir,
                strerror(errno));
        rc = AL_EXIT_FAIL;
        goto fail;
    }
    /* Two agents on one state directory would both own its task slots. */
    if (al_fs_lock_dir(a.state_dir, "agent", &lock_fd, &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        rc = AL_EXIT_FAIL;
        goto fail;
    }
    if (setup_signals() != 0) {
        fprintf(stderr, "allot agent: cannot set up signals\n");
        rc = AL_EXIT_FAIL;
        goto fail;
    }
    a.spawner.pid = -1;
    a.spawner.sock = a.spawner.exit_fd = -1;
    a.spawner.timeout_ms = launch_timeout;
    /* Tasks orphaned by a spawner that died come to the agent, which then
     * learns how they end (see reap()). */
    if (al_platform_subreaper() != 0)
        al_warn("cannot become a child subreaper: the ends of tasks whose "
                "spawner dies will be unknown");
    if (al__spawner_start(&a.spawner, sig_pipe[1]) != 0) {
        fprintf(stderr, "allot agent: cannot start the spawner: %s\n",
                strerror(errno));
        return AL_EXIT_FAIL;
    }
    adopt(&a);
    rc = run(&a);
    al__spawner_stop(&a.spawner);
    al_http_conn_close(&a.conn[0]);
    al_http_conn_close(&a.conn[1]);
    /* Tasks keep running in their own sessions; a restarted agent adopts
     * them from the state directory. */
    al_info("stopping; %d task(s) left to the next agent", a.ntasks);
    for (int i = 0; i < a.ntasks; i++)
        json_decref(a.tasks[i].spec);
    free(a.tasks);
    free(a.free_slots);
    free(a.logbuf);
fail: /* what the set-up took, on the way out or after it failed */
    al_platform_close(&a.plat);
    free(a.name);
    free(a.addr);
    free(a.state_dir);
    free(a.task_dir);
    free(filetoken);
    if (lock_fd >= 0)
        close(lock_fd);
    return rc;
}
