/*
 * spawner.c -- a small process, forked once when the agent starts, that
 * starts the tasks and is their parent.
 *
 * Why: fork() copies the page tables of the process that calls it, and
 * after it every page either side writes is copied once more.  The agent's
 * heap grows with its work (JSON, buffers); forking a monitor per task from
 * it cost more than the task when tasks are short.  The spawner is forked
 * while the agent is still small, stays small, and starts each task with
 * vfork(), which copies nothing.  Being the tasks' parent, it also does
 * what a monitor per task did: it waits for each and writes how it ended
 * into the task's record (al__record_exit), which outlives both processes.
 *
 * Protocol over a socketpair (stream, both ends blocking): the agent sends
 * a request (u32 length, then the launch: u64 devices, u32 argc, u32 envc,
 * then NUL-terminated strings ident, log_path, state_path, cwd, user,
 * cgroups, the argv and the envp; cwd, user and cgroups empty for none); the
 * spawner starts the task (al__launch) and answers an i32: its pid, or -errno.
 * It writes a {pid, wait status} record to a pipe the agent reads for every
 * task that ended, with a byte to the agent's wake-up descriptor.
 *
 * When the agent's end of the socket closes (the agent stopped or died),
 * the spawner stays while it has tasks, records their ends, and exits
 * after the last: a restarted agent finds them in the records (adoption)
 * and starts a spawner of its own.  If the spawner itself is killed, its
 * running tasks are reparented to the agent (a child subreaper), which
 * records their ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_int.h"
#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "log.h"
#include "platform.h"
#include "xmalloc.h"

#define MAX_REQUEST (16u << 20)
/* Requests started before their replies go back together; the agent sends
 * at most this many before it reads their replies (AL__SPAWN_BATCH). */
#define MAX_BATCH AL__SPAWN_BATCH

static int chld_pipe[2] = { -1, -1 };

static void
on_chld(int sig)
{
    (void)sig;
    int e = errno;
    ssize_t w = write(chld_pipe[1], "c", 1);
    (void)w;
    errno = e;
}

static int
io_all(int fd, void *p, size_t n, bool out)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = out ? send(fd, c, n, MSG_NOSIGNAL) : read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Points *s at the next string of [*p, end); false when none is left. */
static bool
next_str(char **p, const char *end, const char **s)
{
    char *z = memchr(*p, '\0', (size_t)(end - *p));
    if (z == NULL)
        return false;
    *s = *p;
    *p = z + 1;
    return true;
}

/* Decodes a request in place; false when it is malformed. */
static bool
decode(char *buf, size_t n, al__launch_t *l, char ***argv, char ***envp)
{
    uint64_t dev;
    uint32_t argc, envc;
    if (n < 16)
        return false;
    memcpy(&dev, buf, 8);
    memcpy(&argc, buf + 8, 4);
    memcpy(&envc, buf + 12, 4);
    char *p = buf + 16, *end = buf + n;
    const char *cwd, *user, *cgroups;
    if (argc == 0 || argc > n || envc > n || !next_str(&p, end, &l->ident) ||
        !next_str(&p, end, &l->log_path) ||
        !next_str(&p, end, &l->state_path) || !next_str(&p, end, &cwd) ||
        !next_str(&p, end, &user) || !next_str(&p, end, &cgroups))
        return false;
    l->devices = dev;
    l->cwd = cwd[0] != '\0' ? cwd : NULL;
    l->user = user[0] != '\0' ? user : NULL;
    l->cgroups = cgroups[0] != '\0' ? cgroups : NULL;
    *argv = al_xcalloc((size_t)argc + 1, sizeof **argv);
    *envp = al_xcalloc((size_t)envc + 1, sizeof **envp);
    bool ok = true;
    for (uint32_t i = 0; ok && i < argc; i++)
        ok = next_str(&p, end, (const char **)&(*argv)[i]);
    for (uint32_t i = 0; ok && i < envc; i++)
        ok = next_str(&p, end, (const char **)&(*envp)[i]);
    l->argv = *argv;
    l->envp = *envp;
    return ok;
}

/* The running tasks: pid and the descriptor of its record. */
typedef struct child {
    pid_t pid;
    int state_fd;
} child_t;

static child_t *children;
static int nchildren, children_cap;

static void
reap_tasks(int exit_fd, int wake_fd)
{
    for (;;) {
        /* Look first (WNOWAIT), record, then reap: while the ended task is
         * a zombie its record may still lack the exit, but once it is gone
         * the record has it.  An agent watching the pid relies on that. */
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            si.si_pid == 0)
            return;
        pid_t pid = si.si_pid;
        int st = 0;
        for (int i = 0; i < nchildren; i++)
            if (children[i].pid == pid) {
                int code = si.si_code == CLD_EXITED ? si.si_status : 0;
                int sig = si.si_code == CLD_EXITED ? 0 : si.si_status;
                al__record_exit(children[i].state_fd, code, sig);
                close(children[i].state_fd);
                children[i] = children[--nchildren];
                break;
            }
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (wake_fd < 0)
            continue; /* nobody to tell: the record says it */
        int32_t rec[2] = { (int32_t)pid, (int32_t)st };
        /* 8 bytes: atomic on a pipe; the agent drains it often. */
        while (write(exit_fd, rec, sizeof rec) < 0 && errno == EINTR)
            ;
        ssize_t w = write(wake_fd, "c", 1);
        (void)w;
    }
}

/* Keeps only fds a, b and c open (moved to 100, 101 and 102, or to the
 * lowest free ones from 3 when the limit of open files is lower: a
 * descriptor cannot be placed at or above it). */
static void
keep_only(int *a, int *b, int *c)
{
    struct rlimit r;
    int base = getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur > 103 ? 100 : 3;
    *a = fcntl(*a, F_DUPFD_CLOEXEC, base);
    *b = fcntl(*b, F_DUPFD_CLOEXEC, base);
    *c = fcntl(*c, F_DUPFD_CLOEXEC, base);
    int top = *a > *b ? *a : *b;
    top = top > *c ? top : *c;
    for (int fd = 3; fd < top; fd++)
        if (fd != *a && fd != *b && fd != *c)
            close(fd);
#ifdef SYS_close_range
    /* Everything above, however high the agent's limit let it go. */
    if (syscall(SYS_close_range, (unsigned)top + 1, ~0U, 0) == 0)
        return;
#endif
    for (int fd = top + 1; fd < 1024; fd++)
        close(fd);
}

/* The agent is gone: stay for the running tasks only (the main loop
 * exits once none is left). */
static void
agent_gone(int *sock, int *wake_fd)
{
    close(*sock);
    close(*wake_fd);
    *sock = *wake_fd = -1;
    if (nchildren == 0)
        _exit(0);
}

/* Starts the task of one request; the reply: its pid, or -errno. */
static int32_t
launch(char *data, uint32_t len)
{
    al__launch_t l;
    memset(&l, 0, sizeof l);
    char **argv = NULL, **envp = NULL;
    int32_t reply;
    if (!decode(data, len, &l, &argv, &envp)) {
        reply = -EINVAL;
    } else {
        char *cause = NULL;
        int sfd = -1;
        pid_t pid = al__launch(&l, &sfd, &cause);
        /* The agent says why from the errno alone (EMFILE, ENOSPC...). */
        reply = pid > 0 ? (int32_t)pid : errno > 0 ? -errno : -EAGAIN;
        free(cause);
        if (pid > 0) {
            if (nchildren == children_cap) {
                children_cap = children_cap ? 2 * children_cap : 64;
                children = al_xreallocarray(children, (size_t)children_cap,
                                            sizeof *children);
            }
            children[nchildren++] = (child_t){ pid, sfd };
        }
    }
    free(argv);
    free(envp);
    return reply;
}

/* Fault injection for the tests (tests/server/e2e.py, launch_crash): with
 * ALLOT_TEST_SPAWNER_CRASH=FILE in the agent's environment, the first
 * spawner to start tasks creates FILE and dies before it answers, as an
 * OOM kill at the worst moment would.  Later spawners find FILE and go
 * on. */
static void
crash_test(void)
{
    const char *marker = getenv("ALLOT_TEST_SPAWNER_CRASH");
    if (marker == NULL || *marker == '\0')
        return;
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        _exit(9);
}

/* True when fd has something to read now. */
static bool
readable(int fd)
{
    struct pollfd p = { fd, POLLIN, 0 };
    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static _Noreturn void
spawner_main(int sock, int exit_fd, int wake_fd)
{
    /* First: it holds a descriptor per running task. */
    al__launch_init();
    keep_only(&sock, &exit_fd, &wake_fd);
    if (sock < 0 || exit_fd < 0 || wake_fd < 0)
        _exit(1);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if (al__chld_pipe(chld_pipe, on_chld) != 0)
        _exit(1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    al_buf_t req = AL_BUF_INIT;
    for (;;) {
        /* Once the agent is gone (sock -1), poll() skips the entry. */
        struct pollfd p[2] = { { chld_pipe[0], POLLIN, 0 },
                               { sock, POLLIN, 0 } };
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            _exit(1);
        if (p[0].revents & POLLIN) {
            char b[64];
            while (read(chld_pipe[0], b, sizeof b) > 0)
                ;
        }
        reap_tasks(exit_fd, wake_fd);
        if (sock < 0 && nchildren == 0)
            _exit(0);
        if (sock < 0 || (p[1].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
            continue;
        /* The requests that came together, then their replies together:
         * the agent sends a sync's tasks at once and waits once. */
        int32_t replies[MAX_BATCH];
        int n = 0;
        bool gone = false;
        do {
            uint32_t len;
            if (io_all(sock, &len, sizeof len, false) != 0 ||
                len > MAX_REQUEST ||
                (al_buf_reserve(&req, len + 1),
                 io_all(sock, req.data, len, false) != 0)) {
                gone = true;
                break;
            }
            replies[n++] = launch(req.data, len);
        } while (n < MAX_BATCH && readable(sock));
        crash_test();
        if (n > 0 &&
            io_all(sock, replies, (size_t)n * sizeof *replies, true) != 0)
            gone = true;
        if (gone)
            agent_gone(&sock, &wake_fd);
    }
}

int
al__spawner_start(al__spawner_t *s, int wake_fd)
{
    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return AL_EIO;
    if (pipe(ep) != 0) {
        close(sv[0]);
        close(sv[1]);
        return AL_EIO;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        close(ep[0]);
        spawner_main(sv[1], ep[1], wake_fd);
    }
    close(sv[1]);
    close(ep[1]);
    if (pid < 0) {
        close(sv[0]);
        close(ep[0]);
        return AL_EIO;
    }
    fcntl(ep[0], F_SETFL, fcntl(ep[0], F_GETFL) | O_NONBLOCK);
    fcntl(ep[0], F_SETFD, FD_CLOEXEC);
    s->pid = pid;
    s->sock = sv[0];
    s->exit_fd = ep[0];
    s->unread = 0;
    return 0;
}

void
al__spawner_stop(al__spawner_t *s)
{
    free(s->q);
    s->q = NULL;
    s->nq = s->qcap = 0;
    /* It stays while tasks run (see the top); otherwise it exits at
     * once, and is waited for briefly so that no zombie is left. */
    if (s->sock >= 0)
        close(s->sock);
    if (s->exit_fd >= 0)
        close(s->exit_fd);
    for (int i = 0; s->pid > 0 && i < 100; i++) {
        pid_t r = waitpid(s->pid, NULL, WNOHANG);
        if (r == s->pid || (r < 0 && errno != EINTR))
            break;
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
    }
    s->sock = s->exit_fd = -1;
    s->pid = -1;
}

/* Reads the spawner's reply to a request.  Meanwhile the exit records it
 * writes are taken off their pipe and kept for al__spawner_reaped(): the
 * spawner may be blocked writing one, with the pipe full, before it reads
 * the request.  0; -1 when the spawner is gone; AL_ETIMEDOUT when no reply
 * came within s->timeout_ms. */
static int
await_reply(al__spawner_t *s, int32_t *reply)
{
    int64_t deadline =
        s->timeout_ms > 0 ? al_clock_mono_ms() + s->timeout_ms : -1;
    for (;;) {
        struct pollfd p[2] = { { s->sock, POLLIN, 0 },
                               { s->exit_fd, POLLIN, 0 } };
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - al_clock_mono_ms();
            if (left <= 0)
                return AL_ETIMEDOUT;
            wait = left > 60000 ? 60000 : (int)left;
        }
        int r = poll(p, 2, wait);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (p[1].revents & POLLIN) {
            int32_t rec[2];
            while (read(s->exit_fd, rec, sizeof rec) == (ssize_t)sizeof rec) {
                if (s->nq == s->qcap) {
                    s->qcap = s->qcap ? 2 * s->qcap : 64;
                    s->q = al_xreallocarray(s->q, s->qcap, sizeof *s->q);
                }
                s->q[s->nq][0] = rec[0];
                s->q[s->nq++][1] = rec[1];
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
            return io_all(s->sock, reply, sizeof *reply, false);
    }
}

void
al__spawner_kill_hung(al__spawner_t *s, const pid_t *known, size_t n)
{
    if (s->pid <= 0)
        return;
    long kids[64];
    int nkids = al_platform_children(s->pid, kids, 64);
    /* The spawner first: a start that dies lets its vfork() return, and
     * the spawner would write the task's record as if it had started.
     * With its SIGKILL pending it returns to nothing. */
    kill(s->pid, SIGKILL);
    for (int k = 0; k < nkids; k++) {
        bool task = false;
        for (size_t i = 0; i < n && !task; i++)
            task = known[i] == (pid_t)kids[k];
        if (task)
            continue;
        al_warn("killing process %ld: a task's start that hangs", kids[k]);
        kill((pid_t)kids[k], SIGKILL);
    }
}

static void
put_str(al_buf_t *b, const char *s)
{
    al_buf_append(b, s != NULL ? s : "", strlen(s != NULL ? s : "") + 1);
}

int
al__spawner_send(al__spawner_t *s, const al__launch_t *l)
{
    uint32_t argc = 0, envc = 0;
    while (l->argv[argc] != NULL)
        argc++;
    while (l->envp[envc] != NULL)
        envc++;
    al_buf_t b = AL_BUF_INIT;
    uint32_t len = 0;
    uint64_t dev = l->devices;
    al_buf_append(&b, &len, 4);
    al_buf_append(&b, &dev, 8);
    al_buf_append(&b, &argc, 4);
    al_buf_append(&b, &envc, 4);
    put_str(&b, l->ident);
    put_str(&b, l->log_path);
    put_str(&b, l->state_path);
    put_str(&b, l->cwd);
    put_str(&b, l->user);
    put_str(&b, l->cgroups);
    for (uint32_t i = 0; i < argc; i++)
        put_str(&b, l->argv[i]);
    for (uint32_t i = 0; i < envc; i++)
        put_str(&b, l->envp[i]);
    len = (uint32_t)(b.len - 4);
    memcpy(b.data, &len, 4);
    int rc = len > MAX_REQUEST                           ? AL_ELIMIT
             : io_all(s->sock, b.data, b.len, true) != 0 ? AL_EUNAVAIL
                                                         : 0;
    al_buf_fini(&b);
    if (rc == 0)
        s->unread++;
    return rc;
}

pid_t
al__spawner_result(al__spawner_t *s, char **cause)
{
    int32_t reply = 0;
    int rc = s->unread == 0 ? -1 : await_reply(s, &reply);
    if (rc == AL_ETIMEDOUT) {
        *cause = al_xasprintf("the task did not start within %lld ms (its "
                              "working directory or program may be on a "
                              "file system that does not answer)",
                              (long long)s->timeout_ms);
        return AL_ETIMEDOUT;
    }
    if (rc != 0) {
        s->unread = 0;
        *cause = al_xasprintf("the spawner is gone");
        return AL_EUNAVAIL;
    }
    s->unread--;
    if (reply <= 0) {
        *cause = al_xasprintf("cannot start the task: %s", strerror(-reply));
        return -1;
    }
    return (pid_t)reply;
}

pid_t
al__spawner_launch(al__spawner_t *s, const al__launch_t *l, char **cause)
{
    int rc = al__spawner_send(s, l);
    if (rc != 0) {
        *cause =
            al_xasprintf(rc == AL_ELIMIT ? "the task's request is too large"
                                         : "the spawner is gone");
        return rc == AL_ELIMIT ? -1 : AL_EUNAVAIL;
    }
    return al__spawner_result(s, cause);
}

int
al__spawner_reaped(al__spawner_t *s, pid_t *pid, int *status)
{
    if (s->nq > 0) {
        *pid = (pid_t)s->q[0][0];
        *status = (int)s->q[0][1];
        memmove(s->q, s->q + 1, --s->nq * sizeof *s->q);
        return 1;
    }
    int32_t rec[2];
    ssize_t r = read(s->exit_fd, rec, sizeof rec);
    if (r != (ssize_t)sizeof rec)
        return 0;
    *pid = (pid_t)rec[0];
    *status = (int)rec[1];
    return 1;
}
