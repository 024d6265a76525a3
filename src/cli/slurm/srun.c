/*
 * srun.c -- `srun`, in the three places a Slurm user runs it:
 *
 *  - On a job's node, inside one of its tasks (a batch script: the
 *    agent gave it ALLOT_TASK_INDEX and Slurm's variables): a job step.
 *    allot runs a batch script once per task (as srun would start its
 *    tasks), so each task starts its share of the step's tasks here, with
 *    the step's variables: task p of a job of N runs the step's tasks p,
 *    p+N, ... below -n (the job's task count by default).  `srun hostname`
 *    in a script of `sbatch -n 4` prints four lines, as on Slurm.
 *  - In salloc's shell (SLURM_JOB_ID set, not on a task): a step beside
 *    the allocation's tasks, through the controller (the stream of `allot
 *    exec`), the step's variables set by `env`.
 *  - Anywhere else: a job of its own, submitted and attached to as
 *    `allot run` does (pipes, or a terminal with --pty); the exit status
 *    is the tasks' highest.
 *
 * May call: step.c (streams, requests), slurm.c (the API), script.c
 * (Slurm's options), src/common.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "script.h"
#include "slurm_int.h"
#include "stream.h"
#include "xmalloc.h"

static long
env_long(const char *a, const char *b, long dflt)
{
    const char *v = getenv(a);
    if (v == NULL && b != NULL)
        v = getenv(b);
    char *end;
    long n = v != NULL ? strtol(v, &end, 10) : dflt;
    return v != NULL && (*end != '\0' || end == v) ? dflt : n;
}

/* How many tasks the step has: -n, else -N times --ntasks-per-node (or
 * one a node), else the job's. */
static long
step_tasks(const al_slurm_req_t *o, long job_tasks)
{
    if (o->ntasks > 0)
        return (long)o->ntasks;
    if (o->nodes > 0)
        return (long)(o->nodes * (o->per_node > 0 ? o->per_node : 1));
    return job_tasks > 0 ? job_tasks : 1;
}

/* Field `field` (1-based, as proc(5) numbers them; 3 or more) of
 * /proc/PID/stat as a number, or 0.  After the command name, which may
 * hold spaces and parentheses, the k-th space begins field k + 2. */
static long long
stat_field(pid_t pid, int field)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    for (int k = 2; p != NULL && k < field; k++)
        p = strchr(p + 1, ' ');
    return p != NULL ? strtoll(p + 1, NULL, 10) : 0;
}

/* The start time of process pid (in clock ticks since boot), or 0. */
static long long
started(pid_t pid)
{
    return stat_field(pid, 22);
}

/* The parent of process pid, or 0. */
static pid_t
parent_of(pid_t pid)
{
    return (pid_t)stat_field(pid, 4);
}

/* Whether process pid runs in job `job` (its SLURM_JOB_ID). */
static bool
in_job(pid_t pid, const char *job)
{
    char path[64], want[96];
    snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
    int len = snprintf(want, sizeof want, "SLURM_JOB_ID=%s", job);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    al_buf_t b = AL_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < (1u << 20))
        al_buf_append(&b, chunk, n);
    fclose(f);
    bool found = false;
    for (size_t i = 0; i < b.len && !found;) {
        const char *v = b.data + i;
        size_t l = strnlen(v, b.len - i);
        found = l == (size_t)len && memcmp(v, want, l) == 0;
        i += l + 1;
    }
    al_buf_fini(&b);
    return found;
}

/* The session of the job's task that runs us: ours, or, when a command
 * between (setsid) made one of its own, that of our highest ancestor
 * still in the job: the task's. */
static pid_t
task_session(const char *job)
{
    pid_t sid = getsid(0);
    pid_t p = getppid();
    for (int depth = 0; p > 1 && depth < 64 && in_job(p, job); depth++) {
        pid_t s = getsid(p);
        if (s > 0)
            sid = s;
        p = parent_of(p);
    }
    return sid;
}

/* The next step id of a job: Slurm numbers a job's steps 0, 1, 2 in the
 * order they start.  The count lives in a file: salloc's (ALLOT_STEPS,
 * which it makes and removes), or, in a batch script, one of the task's
 * own, named by the job, the task's rank and its session (the agent starts each
 * task in a session of its own; task_session() finds it under a setsid)
 * with its leader's start time.  Every
 * task of a batch job runs the same script, so each counts its own: they
 * agree. */
static long
next_step(const char *job)
{
    const char *given = getenv("ALLOT_STEPS");
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    pid_t sid = task_session(job);
    /* The task's rank too: two tasks never share a count, whatever their
     * sessions turn out to be. */
    long rank = env_long("SLURM_PROCID", "RANK", 0);
    long long since = started(sid);
    if (given != NULL && given[0] == '/')
        snprintf(path, sizeof path, "%s", given);
    else
        snprintf(path, sizeof path, "%s/allot-srun-%ld-%s.%ld-%ld-%lld",
                 tmp != NULL && tmp[0] == '/' ? tmp : "/tmp", (long)getuid(),
                 job, rank, (long)sid, since);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && given == NULL && tmp != NULL) {
        /* A TMPDIR of the submitting machine that this node lacks. */
        snprintf(path, sizeof path, "/tmp/allot-srun-%ld-%s.%ld-%ld-%lld",
                 (long)getuid(), job, rank, (long)sid, since);
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    }
    if (fd < 0)
        return 0;
    long n = 0;
    if (flock(fd, LOCK_EX) == 0) {
        char buf[32] = "";
        ssize_t got = read(fd, buf, sizeof buf - 1);
        if (got > 0) {
            buf[got] = '\0';
            n = strtol(buf, NULL, 10);
        }
        int len = snprintf(buf, sizeof buf, "%ld\n", n + 1);
        if (lseek(fd, 0, SEEK_SET) == 0 && write(fd, buf, (size_t)len) == len)
            (void)ftruncate(fd, len);
    }
    close(fd);
    return n;
}

static void
set_long(const char *k, long v)
{
    char num[32];
    snprintf(num, sizeof num, "%ld", v);
    setenv(k, num, 1);
}

/* A step of more tasks than the job has CPUs, refused as Slurm does. */
static int
too_many(const char *job)
{
    fprintf(stderr,
            "srun: error: Unable to create step for job %s: More processors "
            "requested than permitted\n",
            job);
    return AL_EXIT_FAIL;
}

/* A local task of the step: its pid and (with -l) its output pipes. */
typedef struct ltask {
    pid_t pid;
    long rank;
    int out[2]; /* read ends of stdout, stderr; -1 without -l */
    bool at_line[2];
    int status;
} ltask_t;

static pid_t
start_local(char **cmd, ltask_t *t, bool label)
{
    int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
    if (label && (pipe(po) != 0 || pipe(pe) != 0))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        static const int sigs[] = { SIGINT,   SIGTERM, SIGHUP, SIGCHLD,
                                    SIGWINCH, SIGUSR1, SIGUSR2 };
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        if (label) {
            dup2(po[1], 1);
            dup2(pe[1], 2);
            close(po[0]);
            close(po[1]);
            close(pe[0]);
            close(pe[1]);
        }
        execvp(cmd[0], cmd);
        fprintf(stderr, "srun: error: execve(): %s: %s\n", cmd[0],
                strerror(errno));
        _exit(errno == ENOENT ? 2 : 126);
    }
    if (label) {
        close(po[1]);
        close(pe[1]);
        t->out[0] = po[0];
        t->out[1] = pe[0];
    }
    return pid;
}

/* Copies what a local task wrote, each line after "RANK: ". */
static void
copy_labelled(ltask_t *t, int which)
{
    char buf[65536];
    ssize_t n = read(t->out[which], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
        return;
    if (n <= 0) {
        close(t->out[which]);
        t->out[which] = -1;
        return;
    }
    al_buf_t b = AL_BUF_INIT;
    for (ssize_t i = 0; i < n; i++) {
        if (t->at_line[which])
            al_buf_printf(&b, "%ld: ", t->rank);
        al_buf_putc(&b, buf[i]);
        t->at_line[which] = buf[i] == '\n';
    }
    al_stream_write_all(which + 1, b.data, b.len);
    al_buf_fini(&b);
}

/* Waits for the local tasks, forwarding the signals srun gets and
 * copying their output with -l. */
static void
wait_local(ltask_t *v, long n, bool label)
{
    int sigfd = al__sl_signal_fd();
    long left = n;
    struct pollfd *p = al_xcalloc((size_t)(2 * n + 1), sizeof *p);
    while (left > 0) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
            for (long k = 0; k < n; k++)
                if (v[k].pid == pid) {
                    v[k].status = status;
                    v[k].pid = 0;
                    left--;
                }
        bool pipes = false;
        for (long k = 0; k < n; k++) {
            p[2 * k] = (struct pollfd){ .fd = label ? v[k].out[0] : -1,
                                        .events = POLLIN };
            p[2 * k + 1] = (struct pollfd){ .fd = label ? v[k].out[1] : -1,
                                            .events = POLLIN };
            pipes = pipes || (label && (v[k].out[0] >= 0 || v[k].out[1] >= 0));
        }
        if (left == 0 && !pipes)
            break;
        p[2 * n] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
        if (poll(p, (nfds_t)(2 * n + 1), left > 0 ? -1 : 1000) < 0 &&
            errno != EINTR)
            break;
        for (long k = 0; k < n; k++)
            for (int w = 0; w < 2; w++)
                if (p[2 * k + w].revents & (POLLIN | POLLHUP | POLLERR))
                    copy_labelled(&v[k], w);
        if (p[2 * n].revents & POLLIN) {
            unsigned char sigs[16];
            ssize_t got = read(sigfd, sigs, sizeof sigs);
            for (ssize_t i = 0; i < got; i++)
                if (sigs[i] != SIGCHLD && sigs[i] != SIGWINCH)
                    for (long k = 0; k < n; k++)
                        if (v[k].pid > 0)
                            kill(v[k].pid, sigs[i]);
        }
        if (left == 0 && pipes)
            continue; /* the rest of their output */
    }
    free(p);
}

/* A step on this node, inside task p of the job: the step's tasks p,
 * p+N, ... */
static int
local_step(const al_slurm_req_t *o, char **cmd)
{
    long njob = env_long("SLURM_NTASKS", "WORLD_SIZE", 1);
    long me = env_long("SLURM_PROCID", "RANK", 0);
    long local = env_long("SLURM_LOCALID", "LOCAL_RANK", 0);
    long k = step_tasks(o, njob);
    const char *job = getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID")
                                             : getenv("ALLOT_JOB_ID");
    long cpus = njob * env_long("SLURM_CPUS_PER_TASK", NULL, 1);
    if (k > (cpus > njob ? cpus : njob))
        return too_many(job ? job : "?");
    long step = next_step(job ? job : "0");
    if (njob < 1)
        njob = 1;
    long n = me < k ? (k - me + njob - 1) / njob : 0;
    if (n == 0)
        return 0; /* none of the step's tasks falls to this one */
    al__sl_signals_on(true);
    set_long("SLURM_STEP_ID", step);
    set_long("SLURM_STEPID", step);
    set_long("SLURM_NTASKS", k);
    set_long("SLURM_NPROCS", k);
    set_long("SLURM_STEP_NUM_TASKS", k);
    const char *nodes = getenv("SLURM_JOB_NODELIST");
    if (nodes != NULL)
        setenv("SLURM_STEP_NODELIST", nodes, 1);
    const char *nnodes = getenv("SLURM_NNODES");
    if (nnodes != NULL)
        setenv("SLURM_STEP_NUM_NODES", nnodes, 1);
    ltask_t *v = al_xcalloc((size_t)n, sizeof *v);
    for (long i = 0; i < n; i++) {
        v[i] = (ltask_t){ .rank = me + i * njob,
                          .out = { -1, -1 },
                          .at_line = { true, true } };
        set_long("SLURM_PROCID", v[i].rank);
        set_long("SLURM_LOCALID", local + i * njob);
        v[i].pid = start_local(cmd, &v[i], o->label);
        if (v[i].pid < 0) {
            fprintf(stderr, "srun: error: fork: %s\n", strerror(errno));
            v[i].pid = 0;
            v[i].status = 1 << 8;
        }
    }
    al__sl_step_report(NULL, job, step, cmd[0], k, false, 0, 0);
    wait_local(v, n, o->label);
    int rc = 0, code = 0, sig = 0;
    const char *node = getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME")
                       : getenv("ALLOT_NODE")    ? getenv("ALLOT_NODE")
                                                 : "localhost";
    for (long i = 0; i < n; i++) {
        int st = 0, s = v[i].status;
        if (WIFSIGNALED(s)) {
            fprintf(stderr, "srun: error: %s: task %ld: %s\n", node, v[i].rank,
                    strsignal(WTERMSIG(s)));
            st = 128 + WTERMSIG(s);
            sig = WTERMSIG(s) > sig ? WTERMSIG(s) : sig;
        } else if (WIFEXITED(s) && WEXITSTATUS(s) != 0) {
            code = WEXITSTATUS(s) > code ? WEXITSTATUS(s) : code;
            fprintf(stderr,
                    "srun: error: %s: task %ld: Exited with exit code %d\n",
                    node, v[i].rank, WEXITSTATUS(s));
            st = WEXITSTATUS(s);
        }
        rc = st > rc ? st : rc;
    }
    free(v);
    al__sl_step_report(NULL, job, step, cmd[0], k, true, code, sig);
    return rc;
}

/* A step beside the tasks of the allocation `jobid` (salloc's shell),
 * through the controller. */
static int
remote_step(const al_slurm_req_t *o, char **cmd, int ncmd, const char *jobid)
{
    al_sl_id_t id;
    if (!al__sl_parse_id(jobid, &id)) {
        fprintf(stderr, "srun: error: SLURM_JOB_ID=%s is not a job id\n",
                jobid);
        return AL_EXIT_FAIL;
    }
    al_client_t c;
    if (al__sl_connect(&c) != 0)
        return AL_EXIT_FAIL;
    int status;
    json_t *job = al__sl_job(&c, &id, &status);
    if (job == NULL || strcmp(al_json_str(job, "state", ""), "running") != 0) {
        fprintf(stderr, "srun: error: Unable to create step for job %lld: %s\n",
                id.id,
                job == NULL ? "Invalid job id specified"
                            : "Job/step already completing or completed");
        json_decref(job);
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    long njob = (long)al_json_int(job, "tasks", 1);
    long k = step_tasks(o, njob);
    if (k > al__sl_cpus(job) && k > njob) {
        json_decref(job);
        al_client_fini(&c);
        return too_many(jobid);
    }
    long step = next_step(jobid);
    json_t *pl = json_object_get(job, "placement");
    json_t **cmds = al_xcalloc((size_t)k, sizeof(json_t *));
    for (long r = 0; r < k; r++) {
        const char *node =
            al_json_str(json_array_get(pl, (size_t)(r % njob)), "node", "");
        long localid = 0;
        for (long q = 0; q < r; q++)
            localid +=
                strcmp(al_json_str(json_array_get(pl, (size_t)(q % njob)),
                                   "node", ""),
                       node) == 0;
        json_t *a = json_array();
        json_array_append_new(a, json_string("env"));
        char kv[96];
#define KV(name, v)                                                            \
    (snprintf(kv, sizeof kv, "%s=%ld", name, (long)(v)),                       \
     json_array_append_new(a, json_string(kv)))
        KV("SLURM_PROCID", r);
        KV("SLURM_LOCALID", localid);
        KV("SLURM_NTASKS", k);
        KV("SLURM_NPROCS", k);
        KV("SLURM_STEP_ID", step);
        KV("SLURM_STEPID", step);
        KV("SLURM_STEP_NUM_TASKS", k);
#undef KV
        for (int i = 0; i < ncmd; i++)
            json_array_append_new(a, json_string(cmd[i]));
        cmds[r] = a;
    }
    char jid[24];
    snprintf(jid, sizeof jid, "%lld", (long long)al_json_int(job, "id", 0));
    al__sl_step_report(&c, jid, step, cmd[0], k, false, 0, 0);
    int rc = al__sl_step(&c, "srun", job, (int)k, cmds,
                         (o->pty ? AL_SL_STEP_TTY : 0) |
                             (o->label ? AL_SL_STEP_LABEL : 0));
    /* The highest status: 128+N for signal N. */
    al__sl_step_report(&c, jid, step, cmd[0], k, true,
                       rc > 128 && rc < 192 ? 0 : rc,
                       rc > 128 && rc < 192 ? rc - 128 : 0);
    for (long r = 0; r < k; r++)
        json_decref(cmds[r]);
    free(cmds);
    json_decref(job);
    al_client_fini(&c);
    return rc;
}

/* A job of its own: submitted, waited for, attached to. */
static int
new_job(const al_slurm_req_t *o, char **cmd, int ncmd)
{
    json_t *env = al__sl_export_env("srun", o->export_vars);
    if (env == NULL)
        return AL_EXIT_FAIL;
    json_object_set_new(env, "ALLOT_SESSION",
                        json_string(o->pty ? "tty" : "pipes"));
    json_object_set_new(env, "SLURM_STEP_ID", json_string("0"));
    json_t *command = json_array();
    bool utf8 = true;
    for (int i = 0; i < ncmd; i++)
        utf8 = json_array_append_new(command, json_string(cmd[i])) == 0 && utf8;
    if (!utf8) {
        fprintf(stderr, "srun: error: the command must be UTF-8 text\n");
        json_decref(env);
        json_decref(command);
        return AL_EXIT_FAIL;
    }
    const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
    json_t *body =
        al__sl_body("srun", o, env, o->name ? o->name : base, command);
    if (body == NULL)
        return AL_EXIT_FAIL;
    al_client_t c;
    long long id;
    json_t *job = al__sl_submit_wait(&c, "srun", body,
                                     "Unable to allocate resources", true, &id);
    if (job == NULL)
        return AL_EXIT_FAIL;
    int n = (int)al_json_int(job, "tasks", 1);
    int rc = al__sl_step(&c, "srun", job, n < 1 ? 1 : n, NULL,
                         (o->pty ? AL_SL_STEP_TTY : 0) |
                             (o->label ? AL_SL_STEP_LABEL : 0));
    json_decref(job);
    al_client_fini(&c);
    return rc;
}

int
al__srun(int argc, char **argv)
{
    al_slurm_req_t o;
    int stop;
    const char *cls;
    int rc = al__sl_args("srun", "[OPTIONS(0)...] executable(0) [args(0)...]",
                         argc, argv, &o, &stop, &cls);
    if (rc >= 0)
        return rc;
    if (stop >= argc) {
        fprintf(stderr, "srun: fatal: No command given to execute.\n");
        return AL_EXIT_FAIL;
    }
    const char *job = getenv("SLURM_JOB_ID");
    if (job == NULL)
        job = getenv("ALLOT_JOB_ID");
    if (job != NULL && getenv("ALLOT_TASK_INDEX") != NULL)
        return local_step(&o, argv + stop);
    if (job != NULL)
        return remote_step(&o, argv + stop, argc - stop, job);
    return new_job(&o, argv + stop, argc - stop);
}
