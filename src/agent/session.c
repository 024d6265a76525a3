/*
 * session.c -- interactive sessions on the node: the tasks of `allot run`
 * (a pseudo-terminal, or pipes, whose other ends the agent holds), the
 * commands of `allot exec` beside a job's task, connections of `allot
 * port-forward` to a local port, and the streams to the controller that
 * carry each of them (src/common/stream.h frames).
 *
 * A task whose job's environment says ALLOT_SESSION=tty (or =pipes) is
 * started by al__session_launch() instead of the spawner: the agent keeps
 * the pty's master (or the pipes), and this file's thread reads its output
 * into the task's log (what `allot logs` shows, and what an attach
 * replays) and, while a user is attached, into the stream.  The task lives
 * on whether anyone is attached: a stream that ends (a detach, a lost
 * connection, a controller that died) only marks where in the log the
 * next attach starts its replay.
 *
 * The controller asks for a stream in a sync's answer ("streams"); sync.c
 * hands each entry to al__session_want() and the thread dials back with
 * the entry's id.  Every buffer is bounded: the task's output is read only
 * while its stream has room, the stream is read only while what it brings
 * can be written.
 *
 * One thread, its own lock (mu) over everything here: the agent's loop
 * calls in when it starts such a task, when one ends (al__session_ended(),
 * which drains the task's output before its end is reported, so that the
 * log is whole), when it reaps a child that is not a task (an exec's), and
 * with the streams wanted.
 *
 * May call: launch.c (starting a task), cgroup.c (the cgroups an exec'd
 * command joins), src/common (stream, JSON).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent_int.h"
#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "fs.h"
#include "json.h"
#include "log.h"
#include "stream.h"
#include "xmalloc.h"

extern char **environ;

/* Bytes waiting for the controller before the task's output is left
 * unread, and for the task's stdin before the stream is left unread. */
#define OUT_MAX ((size_t)256 * 1024)
#define IN_MAX ((size_t)256 * 1024)
#define CHUNK 65536

enum { K_ATTACH, K_EXEC, K_PORT };

struct strm;

/* A process whose standard streams the agent holds: a session task, or an
 * exec's command. */
typedef struct proc {
    struct proc *next;
    bool is_task;
    unsigned long long job;
    int index, restart;
    pid_t pid;
    bool tty;
    int in_fd;      /* its stdin: the pty's master, or a pipe; -1 once closed */
    int out_fd;     /* its stdout: the master again, or a pipe; -1 at its end */
    int err_fd;     /* its stderr pipe, or -1 */
    int log_fd;     /* a task's log, or -1 */
    int log_rd;     /* the log again, for replays */
    int64_t logged; /* bytes written to the log */
    int64_t detached_at; /* where the next attach's replay starts */
    struct strm *s;      /* the stream attached, or NULL */
    al_buf_t tin;        /* for its stdin */
    bool in_eof;         /* close stdin once tin is written */
    bool ended;
    int code, sig;
} proc_t;

typedef struct strm {
    struct strm *next;
    char id[40];
    int kind;
    json_t *want;
    int fd; /* to the controller; -1 until dialed */
    al_buf_t in, out;
    size_t out_off;
    proc_t *p;        /* attach, exec */
    char *cgroups;    /* exec: the task's cgroup.procs files, or NULL */
    int tcp;          /* port: the connection, or -1 */
    al_buf_t tcp_out; /* port: for the connection */
    bool tcp_eof;     /* port: shut its writing side once tcp_out is out */
    int64_t replay_off, replay_end;
    bool closing; /* close once out is written */
    /* attach: the task is not started yet; bind_stream() tries again
     * until this monotonic ms. */
    int64_t bind_until;
    bool unbound;
    pid_t beside;           /* exec: the task whose allocation it joins */
    unsigned long long job; /* exec: that task */
    int index, restart;
    char *fail; /* an error to send once dialed */
} strm_t;

static struct {
    pthread_mutex_t mu;
    bool started;
    al_url_t url;
    char *token;
    int wake[2];
    proc_t *procs;
    strm_t *strms;
    char seen[64][40]; /* ids of the streams asked for lately */
    int nseen;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
wake(void)
{
    ssize_t w = write(S.wake[1], "w", 1);
    (void)w;
}

static void *session_main(void *arg);

/* Starts the thread the first time a session needs it (mu held). */
static bool
ensure_started(const agent_t *a)
{
    if (S.started)
        return true;
    if (pipe(S.wake) != 0)
        return false;
    for (int i = 0; i < 2; i++) {
        fcntl(S.wake[i], F_SETFL, O_NONBLOCK);
        fcntl(S.wake[i], F_SETFD, FD_CLOEXEC);
    }
    S.url = a->url;
    S.token = al_xstrdup(a->token ? a->token : "");
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* Signals are the loop's: the thread blocks them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&th, &at, session_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0)
        return false;
    S.started = true;
    return true;
}

int
al__session_mode(const json_t *spec)
{
    const char *m =
        al_json_str(json_object_get(spec, "env"), "ALLOT_SESSION", NULL);
    if (m == NULL)
        return 0;
    return strcmp(m, "tty") == 0 ? 2 : 1;
}

static void
nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* Opens the descriptors of a process's standard streams: ours[3] (stdin
 * to write, stdout and stderr to read; the master thrice, as one
 * descriptor, for a tty) and theirs[3].  0 or -1. */
static int
open_stdio(bool tty, int ours[3], int theirs[3])
{
    if (tty) {
        int m, s;
        struct winsize ws = { .ws_row = 24, .ws_col = 80 };
        if (openpty(&m, &s, NULL, NULL, &ws) != 0)
            return -1;
        nonblock(m);
        fcntl(s, F_SETFD, FD_CLOEXEC);
        ours[0] = ours[1] = m;
        ours[2] = -1;
        theirs[0] = theirs[1] = theirs[2] = s;
        return 0;
    }
    int p[3][2];
    for (int i = 0; i < 3; i++) {
        if (pipe(p[i]) != 0) {
            for (int k = 0; k < i; k++) {
                close(p[k][0]);
                close(p[k][1]);
            }
            return -1;
        }
        fcntl(p[i][0], F_SETFD, FD_CLOEXEC);
        fcntl(p[i][1], F_SETFD, FD_CLOEXEC);
    }
    ours[0] = p[0][1];
    theirs[0] = p[0][0];
    for (int i = 1; i < 3; i++) {
        ours[i] = p[i][0];
        theirs[i] = p[i][1];
    }
    for (int i = 0; i < 3; i++)
        nonblock(ours[i]);
    return 0;
}

static void
close_theirs(int theirs[3])
{
    close(theirs[0]);
    if (theirs[1] != theirs[0])
        close(theirs[1]);
    if (theirs[2] != theirs[0] && theirs[2] != theirs[1])
        close(theirs[2]);
}

pid_t
al__session_launch(agent_t *a, task_t *t, al__launch_t *l, char **cause)
{
    bool tty = al__session_mode(t->spec) == 2;
    int ours[3], theirs[3];
    pthread_mutex_lock(&S.mu);
    if (!ensure_started(a) || open_stdio(tty, ours, theirs) != 0) {
        pthread_mutex_unlock(&S.mu);
        *cause = al_xasprintf("cannot open a terminal: %s", strerror(errno));
        return -1;
    }
    l->stdio = theirs;
    l->tty = tty;
    int sfd = -1;
    pid_t pid = al__launch(l, &sfd, cause);
    close_theirs(theirs);
    if (sfd >= 0)
        close(sfd); /* the exit is written by the loop (task.c) */
    if (pid < 0) {
        close(ours[0]);
        if (!tty) {
            close(ours[1]);
            close(ours[2]);
        }
        pthread_mutex_unlock(&S.mu);
        return -1;
    }
    proc_t *p = al_xcalloc(1, sizeof *p);
    p->is_task = true;
    p->job = t->job;
    p->index = t->index;
    p->restart = t->restart;
    p->pid = pid;
    p->tty = tty;
    p->in_fd = ours[0];
    p->out_fd = ours[1];
    p->err_fd = ours[2];
    p->log_fd =
        open(l->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    p->log_rd = open(l->log_path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    p->logged = p->log_fd >= 0 && fstat(p->log_fd, &st) == 0 ? st.st_size : 0;
    p->detached_at = p->logged;
    p->next = S.procs;
    S.procs = p;
    wake();
    pthread_mutex_unlock(&S.mu);
    return pid;
}

/* ------------------------------------------------------------------ */
/* Output                                                             */

static void
out_frame(strm_t *s, int type, const void *p, size_t n)
{
    al_stream_put(&s->out, type, p, n);
}

/* Reads what fd has (one chunk), into p's log and its stream: the bytes
 * read, 0 at its end, -1 when nothing is there. */
static ssize_t
read_out(proc_t *p, int fd, int type)
{
    strm_t *s = p->s;
    /* While a stream replays the log, what comes now goes to the log only
     * and the replay goes on to it: the user gets it in order. */
    bool live = s != NULL && s->replay_off >= s->replay_end;
    al_buf_t *o = live ? &s->out : NULL;
    char local[CHUNK];
    char *dst = local;
    if (o != NULL) {
        al_buf_reserve(o, o->len + AL_STREAM_HDR + CHUNK);
        dst = o->data + o->len + AL_STREAM_HDR;
    }
    ssize_t n = read(fd, dst, CHUNK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return -1;
    if (n <= 0)
        return 0; /* EIO: a pty whose other side all closed */
    if (p->log_fd >= 0 && al_stream_write_all(p->log_fd, dst, (size_t)n) == 0)
        p->logged += n;
    if (s != NULL && !live)
        s->replay_end = p->logged;
    if (o != NULL) {
        al_stream_hdr((unsigned char *)o->data + o->len, type, (size_t)n);
        o->len += AL_STREAM_HDR + (size_t)n;
    }
    return n;
}

/* Reads all p's output there is now (its end came). */
static void
drain(proc_t *p)
{
    while (p->out_fd >= 0 && read_out(p, p->out_fd, AL_FR_STDOUT) > 0)
        ;
    while (p->err_fd >= 0 && read_out(p, p->err_fd, AL_FR_STDERR) > 0)
        ;
}

static void
close_proc_fds(proc_t *p)
{
    if (p->in_fd >= 0 && p->in_fd != p->out_fd)
        close(p->in_fd);
    if (p->out_fd >= 0)
        close(p->out_fd);
    if (p->err_fd >= 0)
        close(p->err_fd);
    if (p->log_fd >= 0)
        close(p->log_fd);
    if (p->log_rd >= 0)
        close(p->log_rd);
    p->in_fd = p->out_fd = p->err_fd = p->log_fd = p->log_rd = -1;
}

static void
proc_ended(proc_t *p, int code, int sig)
{
    drain(p);
    p->ended = true;
    p->code = code;
    p->sig = sig;
    wake();
}

/* Task t ended: so does what was exec'd into it, as with its cgroup (where
 * there is none, an exec'd command would outlive the allocation it joined,
 * and its stream with it, for as long as it waits on something the task
 * was to give it); an exec not yet started is refused. */
void
al__session_ended(const task_t *t)
{
    if (!S.started)
        return;
    pthread_mutex_lock(&S.mu);
    for (proc_t *p = S.procs; p != NULL; p = p->next) {
        if (p->job != t->job || p->index != t->index ||
            p->restart != t->restart || p->ended)
            continue;
        if (p->is_task)
            proc_ended(p, t->exit_code, t->signal);
        else if (p->pid > 0)
            kill(-p->pid, SIGKILL);
    }
    for (strm_t *s = S.strms; s != NULL; s = s->next)
        if (s->kind == K_EXEC && s->p == NULL && s->fail == NULL &&
            s->beside > 0 && s->job == t->job && s->index == t->index &&
            s->restart == t->restart)
            s->fail = al_xasprintf("job %llu has no running task %d: it "
                                   "ended",
                                   t->job, t->index);
    pthread_mutex_unlock(&S.mu);
}

bool
al__session_reaped(pid_t pid, int status)
{
    bool mine = false;
    if (!S.started)
        return false;
    pthread_mutex_lock(&S.mu);
    for (proc_t *p = S.procs; p != NULL; p = p->next)
        if (!p->is_task && p->pid == pid && !p->ended) {
            proc_ended(p, WIFEXITED(status) ? WEXITSTATUS(status) : 0,
                       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            mine = true;
        }
    pthread_mutex_unlock(&S.mu);
    return mine;
}

/* ------------------------------------------------------------------ */
/* Streams asked for                                                  */

static bool
seen(const char *id)
{
    for (int i = 0; i < S.nseen && i < 64; i++)
        if (strcmp(S.seen[i], id) == 0)
            return true;
    snprintf(S.seen[S.nseen % 64], sizeof S.seen[0], "%s", id);
    S.nseen++;
    return false;
}

/* What an attach finds in the task table: a task that runs without a
 * terminal is refused now; one not started yet (its start may come with
 * the same answer, or wait for its GPUs) is waited for a while. */
static void
attach_target(const agent_t *a, strm_t *s, const json_t *w)
{
    unsigned long long job = (unsigned long long)al_json_int(w, "job", 0);
    int index = (int)al_json_int(w, "task", 0);
    for (int k = 0; k < a->ntasks; k++) {
        const task_t *t = &a->tasks[k];
        if (t->job != job || t->index != index || t->state == T_EXITED)
            continue;
        if (t->state == T_RUNNING && al__session_mode(t->spec) == 0) {
            s->fail = al_xasprintf("job %llu has no terminal to attach to (it "
                                   "was not started by allot run); allot "
                                   "exec or allot logs may do",
                                   job);
            return;
        }
    }
    s->bind_until = al_clock_mono_ms() + 10000;
}

void
al__session_want(agent_t *a, json_t *streams)
{
    for (size_t i = 0; i < json_array_size(streams); i++) {
        json_t *w = json_array_get(streams, i);
        const char *id = al_json_str(w, "id", "");
        const char *kind = al_json_str(w, "kind", "");
        if (strlen(id) != 32)
            continue;
        pthread_mutex_lock(&S.mu);
        if (seen(id) || !ensure_started(a)) {
            pthread_mutex_unlock(&S.mu);
            continue;
        }
        strm_t *s = al_xcalloc(1, sizeof *s);
        snprintf(s->id, sizeof s->id, "%s", id);
        s->kind = strcmp(kind, "exec") == 0   ? K_EXEC
                  : strcmp(kind, "port") == 0 ? K_PORT
                                              : K_ATTACH;
        s->want = json_incref(w);
        s->fd = s->tcp = -1;
        if (s->kind == K_EXEC) {
            /* The task whose allocation the command joins. */
            unsigned long long job =
                (unsigned long long)al_json_int(w, "job", 0);
            int index = (int)al_json_int(w, "task", 0);
            for (int k = 0; k < a->ntasks; k++) {
                const task_t *t = &a->tasks[k];
                if (t->job == job && t->index == index &&
                    t->state == T_RUNNING) {
                    /* Its limits, its devices: the task's cgroups. */
                    char name[64];
                    al__cg_name(name, sizeof name, t->job, t->index,
                                t->restart);
                    s->beside = t->pid;
                    s->job = t->job;
                    s->index = t->index;
                    s->restart = t->restart;
                    free(s->cgroups);
                    s->cgroups = al__cg_procs(&a->cg, name);
                }
            }
            if (s->beside <= 0)
                s->fail = al_xasprintf("job %llu has no running task %d on "
                                       "node %s",
                                       job, index, a->name);
        } else if (s->kind == K_ATTACH) {
            attach_target(a, s, w);
        }
        s->next = S.strms;
        S.strms = s;
        wake();
        pthread_mutex_unlock(&S.mu);
    }
}

/* ------------------------------------------------------------------ */
/* The thread                                                         */

static void
say_error(strm_t *s, const char *msg)
{
    out_frame(s, AL_FR_ERROR, msg, strlen(msg));
    out_frame(s, AL_FR_CLOSE, NULL, 0);
    s->closing = true;
}

/* Reads a NUL-separated file of /proc into a NULL-terminated vector
 * (caller frees v[0] and v); NULL when it cannot. */
static char **
read_vec(const char *path)
{
    char *data = NULL;
    size_t n = 0;
    if (al_fs_read_file(path, &data, &n) != 0)
        return NULL;
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++)
        cnt += data[i] == '\0';
    char **v = al_xcalloc(cnt + 2, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < n; i += strlen(data + i) + 1)
        v[k++] = data + i;
    if (k == 0)
        v[k++] = data; /* keeps v[0] the block to free */
    return v;
}

/* Joins the cgroups of list ('\n'-separated cgroup.procs files), in the
 * child before it runs the command; false after saying which failed. */
static bool
join_cgroups(const char *list)
{
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        int len = (int)(nl != NULL ? (size_t)(nl - p) : strlen(p));
        char path[4096];
        snprintf(path, sizeof path, "%.*s", len, p);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1) {
            dprintf(2, "allot: cannot join the job's cgroup %s: %s\n", path,
                    strerror(errno));
            return false;
        }
        close(fd);
        p = nl != NULL ? nl + 1 : NULL;
    }
    return true;
}

/* Starts an exec's command beside task pid `beside`: its environment
 * (CUDA_VISIBLE_DEVICES among it), working directory, user and cgroups
 * (cgroups: the task's cgroup.procs files, or NULL; mu held, so that its
 * end, reaped by the loop, finds it).  NULL with *cause. */
static proc_t *
exec_start(pid_t beside, const char *cgroups, json_t *w, char **cause)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/environ", (long)beside);
    char **envp = read_vec(path);
    snprintf(path, sizeof path, "/proc/%ld", (long)beside);
    struct stat st;
    char cwd[4096];
    snprintf(path, sizeof path, "/proc/%ld/cwd", (long)beside);
    ssize_t cl = readlink(path, cwd, sizeof cwd - 1);
    snprintf(path, sizeof path, "/proc/%ld", (long)beside);
    if (envp == NULL || cl < 0 || stat(path, &st) != 0) {
        *cause =
            al_xasprintf("cannot read the job's process: %s", strerror(errno));
        if (envp != NULL)
            free(envp[0]);
        free(envp);
        return NULL;
    }
    cwd[cl] = '\0';
    /* The task's environment, and which process the task is: what a
     * command beside it needs to signal it (Slurm's scancel --signal). */
    size_t ne = 0;
    while (envp[ne] != NULL)
        ne++;
    char pidvar[48];
    snprintf(pidvar, sizeof pidvar, "ALLOT_TASK_PID=%ld", (long)beside);
    char **envx = al_xcalloc(ne + 2, sizeof *envx);
    memcpy(envx, envp, ne * sizeof *envx);
    envx[ne] = pidvar;
    json_t *cmd = json_object_get(w, "cmd");
    size_t argc = json_array_size(cmd);
    char **argv = al_xcalloc(argc + 1, sizeof *argv);
    for (size_t i = 0; i < argc; i++)
        argv[i] = (char *)json_string_value(json_array_get(cmd, i));
    bool tty = al_json_bool(w, "tty", false);
    int ours[3], theirs[3];
    if (argc == 0 || open_stdio(tty, ours, theirs) != 0) {
        *cause = al_xasprintf(argc == 0 ? "no command"
                                        : "cannot open a "
                                          "terminal");
        free(envx);
        free(envp[0]);
        free(envp);
        free(argv);
        return NULL;
    }
    int rows = (int)al_json_int(w, "rows", 0),
        cols = (int)al_json_int(w, "cols", 0);
    if (tty && rows > 0 && cols > 0) {
        struct winsize ws = { .ws_row = (unsigned short)rows,
                              .ws_col = (unsigned short)cols };
        ioctl(ours[0], TIOCSWINSZ, &ws);
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        for (int sg = 1; sg < NSIG; sg++)
            signal(sg, SIG_DFL);
        setsid();
        for (int i = 0; i < 3; i++)
            dup2(theirs[i], i);
        if (tty)
            ioctl(0, TIOCSCTTY, 0);
        syscall(SYS_close_range, 3U, ~0U, 0U);
        /* Confined as the task is: a command that cannot be runs not. */
        if (cgroups != NULL && !join_cgroups(cgroups))
            _exit(126);
        if (geteuid() == 0 && st.st_uid != 0) {
            gid_t g = st.st_gid;
            if (setgroups(1, &g) != 0 || setgid(st.st_gid) != 0 ||
                setuid(st.st_uid) != 0)
                _exit(126);
        }
        if (chdir(cwd) != 0)
            _exit(126);
        sigprocmask(SIG_SETMASK, &old, NULL);
        environ = envx;
        execvp(argv[0], argv);
        dprintf(2, "allot: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close_theirs(theirs);
    free(envx);
    free(envp[0]);
    free(envp);
    free(argv);
    if (pid < 0) {
        close(ours[0]);
        if (!tty) {
            close(ours[1]);
            close(ours[2]);
        }
        *cause = al_xasprintf("fork: %s", strerror(err));
        return NULL;
    }
    proc_t *p = al_xcalloc(1, sizeof *p);
    p->pid = pid;
    p->tty = tty;
    p->in_fd = ours[0];
    p->out_fd = ours[1];
    p->err_fd = ours[2];
    p->log_fd = p->log_rd = -1;
    p->next = S.procs;
    S.procs = p;
    return p;
}

static int
port_connect(int port, char **cause)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        *cause = al_xasprintf("cannot connect to port %d: %s", port,
                              strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nonblock(fd);
    return fd;
}

static void
set_winsize(int fd, int rows, int cols)
{
    if (rows <= 0 || cols <= 0)
        return;
    struct winsize ws = { .ws_row = (unsigned short)rows,
                          .ws_col = (unsigned short)cols };
    ioctl(fd, TIOCSWINSZ, &ws);
}

/* Binds a dialed stream to what it is for (mu held). */
static void
bind_stream(strm_t *s)
{
    json_t *w = s->want;
    char *cause = NULL;
    if (s->fail != NULL) {
        say_error(s, s->fail);
        return;
    }
    if (s->kind == K_PORT) {
        s->tcp = port_connect((int)al_json_int(w, "port", 0), &cause);
        if (s->tcp < 0) {
            say_error(s, cause);
            free(cause);
        }
        return;
    }
    if (s->kind == K_EXEC) {
        s->p = exec_start(s->beside, s->cgroups, w, &cause);
        if (s->p == NULL) {
            say_error(s, cause);
            free(cause);
            return;
        }
        s->p->s = s;
        s->p->job = s->job; /* the task it joined, whose end is its own */
        s->p->index = s->index;
        s->p->restart = s->restart;
        return;
    }
    unsigned long long job = (unsigned long long)al_json_int(w, "job", 0);
    int index = (int)al_json_int(w, "task", 0);
    proc_t *p = S.procs;
    while (p != NULL && !(p->is_task && p->job == job && p->index == index))
        p = p->next;
    s->unbound = p == NULL && al_clock_mono_ms() < s->bind_until;
    if (s->unbound)
        return; /* not started yet: step_stream() tries again */
    if (p == NULL || p->ended) {
        char *m = al_xasprintf(
            p == NULL ? "job %llu has no terminal to attach to (it was not "
                        "started by allot run); allot exec or allot logs "
                        "may do"
                      : "job %llu has ended",
            job);
        say_error(s, m);
        free(m);
        return;
    }
    if (p->s != NULL) {
        /* Another attach (one that the controller lost, say): this one
         * takes over. */
        const char *m = "another attach took this session over";
        out_frame(p->s, AL_FR_NOTICE, m, strlen(m));
        out_frame(p->s, AL_FR_CLOSE, NULL, 0);
        p->s->closing = true;
        p->s->p = NULL;
        p->detached_at = p->logged;
    }
    p->s = s;
    s->p = p;
    s->replay_off = p->detached_at;
    s->replay_end = p->logged;
    if (p->tty)
        set_winsize(p->in_fd, (int)al_json_int(w, "rows", 0),
                    (int)al_json_int(w, "cols", 0));
}

/* Replays what the task wrote while nobody was attached, from its log. */
static void
replay(strm_t *s)
{
    proc_t *p = s->p;
    while (p != NULL && s->replay_off < s->replay_end &&
           s->out.len - s->out_off < OUT_MAX) {
        size_t want = (size_t)(s->replay_end - s->replay_off);
        if (want > CHUNK)
            want = CHUNK;
        char buf[CHUNK];
        ssize_t n = p->log_rd >= 0
                        ? pread(p->log_rd, buf, want, (off_t)s->replay_off)
                        : -1;
        if (n <= 0) {
            s->replay_off = s->replay_end;
            break;
        }
        out_frame(s, AL_FR_STDOUT, buf, (size_t)n);
        s->replay_off += n;
    }
}

/* Detaches s from the process it serves: a task's next attach replays
 * from here; an exec's command ends with its user (SIGHUP). */
static void
detach(strm_t *s)
{
    proc_t *p = s->p;
    if (p != NULL && p->s == s) {
        p->s = NULL;
        p->detached_at = p->logged;
        if (!p->is_task && !p->ended)
            kill(-p->pid, SIGHUP);
    }
    s->p = NULL;
}

/* Detaches s and frees it (mu held). */
static void
strm_free(strm_t *s)
{
    detach(s);
    if (s->tcp >= 0)
        close(s->tcp);
    if (s->fd >= 0)
        close(s->fd);
    for (strm_t **q = &S.strms; *q != NULL; q = &(*q)->next)
        if (*q == s) {
            *q = s->next;
            break;
        }
    json_decref(s->want);
    al_buf_fini(&s->in);
    al_buf_fini(&s->out);
    al_buf_fini(&s->tcp_out);
    free(s->fail);
    free(s->cgroups);
    free(s);
}

/* The frames that came from the user, as far as their target takes them. */
static void
take_frames(strm_t *s)
{
    size_t off = 0;
    proc_t *p = s->p;
    while (!s->closing) {
        al_frame_t f;
        size_t used;
        int rc =
            al_stream_parse(s->in.data + off, s->in.len - off, &f, &used, NULL);
        if (rc == 0)
            break;
        if (rc < 0) {
            say_error(s, "malformed frame from the client");
            break;
        }
        if (f.type == AL_FR_STDIN) {
            al_buf_t *dst = s->kind == K_PORT ? &s->tcp_out
                            : p != NULL       ? &p->tin
                                              : NULL;
            if (dst != NULL && dst->len >= IN_MAX)
                break; /* back-pressure: the rest waits */
            if (dst != NULL)
                al_buf_append(dst, f.data, f.len);
        } else if (f.type == AL_FR_EOF) {
            if (s->kind == K_PORT)
                s->tcp_eof = true;
            else if (p != NULL && !p->tty)
                p->in_eof = true;
        } else if (f.type == AL_FR_RESIZE && p != NULL && p->tty) {
            int rows, cols;
            al_stream_resize_of(&f, &rows, &cols);
            set_winsize(p->in_fd, rows, cols);
        } else if (f.type == AL_FR_SIGNAL && p != NULL && !p->ended) {
            int sig = f.data[0];
            if (sig > 0 && sig < NSIG)
                kill(-p->pid, sig);
        } else if (f.type == AL_FR_CLOSE) {
            /* The user left: nothing more to send, and the next attach
             * replays from here. */
            s->closing = true;
            s->out.len = s->out_off = 0;
            detach(s);
            p = NULL;
        }
        off += used;
    }
    if (off > 0) {
        memmove(s->in.data, s->in.data + off, s->in.len - off);
        s->in.len -= off;
    }
}

/* Writes what waits for fd from b; -1 on an error. */
static int
write_some(int fd, al_buf_t *b, size_t *off, bool sock)
{
    while (b->len > *off) {
        ssize_t n = sock ? send(fd, b->data + *off, b->len - *off, MSG_NOSIGNAL)
                         : write(fd, b->data + *off, b->len - *off);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        *off += (size_t)n;
    }
    b->len = *off = 0;
    return 0;
}

/* Writes what b holds to fd as far as it goes, keeping the rest at its
 * start; -1 on an error. */
static int
write_buf(int fd, al_buf_t *b, bool sock)
{
    size_t off = 0;
    int rc = write_some(fd, b, &off, sock);
    if (off > 0 && off < b->len) {
        memmove(b->data, b->data + off, b->len - off);
        b->len -= off;
    }
    return rc;
}

/* A port stream's connection: what the user sent to it, what it says
 * back while the stream has room. */
static void
step_port(strm_t *s)
{
    if (write_buf(s->tcp, &s->tcp_out, true) != 0)
        s->tcp_eof = true;
    if (s->tcp_eof && s->tcp_out.len == 0)
        shutdown(s->tcp, SHUT_WR);
    if (s->out.len - s->out_off >= OUT_MAX)
        return;
    char buf[CHUNK];
    ssize_t n = recv(s->tcp, buf, sizeof buf, 0);
    if (n > 0) {
        out_frame(s, AL_FR_STDOUT, buf, (size_t)n);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        out_frame(s, AL_FR_CLOSE, NULL, 0);
        s->closing = true;
        close(s->tcp);
        s->tcp = -1;
    }
}

/* What came from the user on s, taken as far as its target has room;
 * false when s ended (and is freed). */
static bool
step_stream(strm_t *s)
{
    if (!s->closing && s->in.len < IN_MAX) {
        al_buf_reserve(&s->in, s->in.len + CHUNK);
        ssize_t n = recv(s->fd, s->in.data + s->in.len, CHUNK, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            strm_free(s);
            return false;
        }
        if (n > 0)
            s->in.len += (size_t)n;
    }
    if (s->unbound)
        bind_stream(s);
    if (s->in.len > 0 && !s->unbound)
        take_frames(s);
    if (s->kind == K_PORT && s->tcp >= 0)
        step_port(s);
    if (s->replay_off < s->replay_end)
        replay(s);
    return true;
}

/* Whether p's output may be read now: its stream has room and its replay
 * is over (always when nobody is attached: then it goes to the log only). */
static bool
out_room(const proc_t *p)
{
    const strm_t *s = p->s;
    return s == NULL || (s->replay_off >= s->replay_end &&
                         s->out.len - s->out_off < OUT_MAX);
}

/* p's stdin and output; false when p ended and is freed (its stream, if
 * any, got the exit). */
static bool
step_proc(proc_t *p)
{
    strm_t *s = p->s;
    if (p->in_fd >= 0 && p->tin.len > 0 &&
        write_buf(p->in_fd, &p->tin, false) != 0)
        p->tin.len = 0;
    if (p->in_eof && p->tin.len == 0 && p->in_fd >= 0 && !p->tty) {
        close(p->in_fd);
        p->in_fd = -1;
    }
    if (out_room(p) && !p->ended) {
        if (p->out_fd >= 0 && read_out(p, p->out_fd, AL_FR_STDOUT) == 0) {
            /* A pty's master stays open for stdin (and resizes) until the
             * task's end. */
            if (!p->tty)
                close(p->out_fd);
            p->out_fd = -1;
        }
        if (p->err_fd >= 0 && read_out(p, p->err_fd, AL_FR_STDERR) == 0) {
            close(p->err_fd);
            p->err_fd = -1;
        }
    }
    if (!p->ended || (s != NULL && s->replay_off < s->replay_end))
        return true;
    if (s != NULL) {
        al_stream_put_exit(&s->out, p->code, p->sig);
        out_frame(s, AL_FR_CLOSE, NULL, 0);
        s->closing = true;
        s->p = NULL;
    }
    close_proc_fds(p);
    al_buf_fini(&p->tin);
    free(p);
    return false;
}

/* The work of one turn for every stream and process (mu held). */
static void
step(void)
{
    for (strm_t *s = S.strms, *next; s != NULL; s = next) {
        next = s->next;
        if (s->fd >= 0)
            step_stream(s);
    }
    for (proc_t **pp = &S.procs; *pp != NULL;) {
        proc_t *p = *pp;
        proc_t *after = p->next;
        if (step_proc(p))
            pp = &p->next;
        else
            *pp = after;
    }
    /* To the user. */
    for (strm_t *s = S.strms, *next; s != NULL; s = next) {
        next = s->next;
        if (s->fd < 0)
            continue;
        if (write_some(s->fd, &s->out, &s->out_off, true) != 0 ||
            (s->closing && s->out.len == 0))
            strm_free(s);
    }
}

/* Dials the streams asked for (mu not held: a dial may take a while). */
static void
dial_new(void)
{
    for (;;) {
        pthread_mutex_lock(&S.mu);
        strm_t *s = S.strms;
        while (s != NULL && s->fd >= 0)
            s = s->next;
        char id[40] = "";
        if (s != NULL)
            snprintf(id, sizeof id, "%s", s->id);
        pthread_mutex_unlock(&S.mu);
        if (s == NULL)
            return;
        char path[128];
        snprintf(path, sizeof path, "/v1/agent/streams/%s", id);
        al_buf_t extra = AL_BUF_INIT;
        char *cause = NULL;
        int fd = -1;
        int rc = al_stream_dial(&S.url, path, S.token, &fd, &extra, &cause);
        pthread_mutex_lock(&S.mu);
        /* s is still ours: only this thread frees streams. */
        if (rc != 0) {
            al_warn("session %.8s: %s", id, cause ? cause : "cannot dial");
            strm_free(s);
        } else {
            nonblock(fd);
            s->fd = fd;
            if (extra.len > 0)
                al_buf_append(&s->in, extra.data, extra.len);
            bind_stream(s);
        }
        pthread_mutex_unlock(&S.mu);
        free(cause);
        al_buf_fini(&extra);
    }
}

static void *
session_main(void *arg)
{
    (void)arg;
    size_t cap = 16;
    struct pollfd *pf = al_xcalloc(cap, sizeof *pf);
    for (;;) {
        dial_new();
        pthread_mutex_lock(&S.mu);
        step();
        size_t n = 1;
        for (strm_t *s = S.strms; s != NULL; s = s->next)
            n += 2;
        for (proc_t *p = S.procs; p != NULL; p = p->next)
            n += 3;
        if (n > cap) {
            cap = 2 * n;
            pf = al_xreallocarray(pf, cap, sizeof *pf);
        }
        size_t k = 0;
        pf[k++] = (struct pollfd){ .fd = S.wake[0], .events = POLLIN };
        int timeout = -1;
        for (strm_t *s = S.strms; s != NULL; s = s->next) {
            if (s->fd < 0)
                continue;
            short ev = 0;
            if (!s->closing && s->in.len < IN_MAX)
                ev |= POLLIN;
            if (s->out.len > s->out_off)
                ev |= POLLOUT;
            pf[k++] = (struct pollfd){ .fd = s->fd, .events = ev };
            if (s->tcp >= 0) {
                ev = 0;
                if (s->out.len - s->out_off < OUT_MAX)
                    ev |= POLLIN;
                if (s->tcp_out.len > 0)
                    ev |= POLLOUT;
                pf[k++] = (struct pollfd){ .fd = s->tcp, .events = ev };
            }
            if (s->replay_off < s->replay_end ||
                (s->in.len > 0 && !s->closing) || s->unbound)
                timeout = 10; /* waiting on room elsewhere, or a start */
        }
        for (proc_t *p = S.procs; p != NULL; p = p->next) {
            strm_t *s = p->s;
            bool room = s == NULL || (s->replay_off >= s->replay_end &&
                                      s->out.len - s->out_off < OUT_MAX);
            if (p->ended) {
                timeout = 0;
                continue;
            }
            if (room && p->out_fd >= 0)
                pf[k++] = (struct pollfd){ .fd = p->out_fd, .events = POLLIN };
            if (room && p->err_fd >= 0)
                pf[k++] = (struct pollfd){ .fd = p->err_fd, .events = POLLIN };
            if (p->in_fd >= 0 && p->tin.len > 0)
                pf[k++] = (struct pollfd){ .fd = p->in_fd, .events = POLLOUT };
        }
        pthread_mutex_unlock(&S.mu);
        if (poll(pf, k, timeout) > 0 && (pf[0].revents & POLLIN)) {
            char junk[64];
            while (read(S.wake[0], junk, sizeof junk) > 0)
                ;
        }
    }
    return NULL;
}
