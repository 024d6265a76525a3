/* launch.c -- starting a task under its monitor (fork with care). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_int.h"
#include "fs.h"
#include "platform.h"
#include "xmalloc.h"

extern char **environ;

/* The signals whose dispositions the agent changes; children reset them. */
static const int reset_signals[] = { SIGCHLD, SIGTERM, SIGINT,
                                     SIGHUP,  SIGPIPE, SIGQUIT };
#define NRESET (sizeof reset_signals / sizeof reset_signals[0])

/* Closes every descriptor >= lowfd.  Runs in a forked child of the
 * single-threaded agent, so the fallback's opendir() may allocate. */
/* close_range(2) (Linux 5.9): one call, no directory to read. */
static bool
close_range_from(int lowfd)
{
#ifdef SYS_close_range
    return syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0;
#else
    (void)lowfd;
    return false;
#endif
}

static void
close_from(int lowfd)
{
    if (close_range_from(lowfd))
        return;
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        int dfd = dirfd(d), fds[256], n = 0;
        struct dirent *e;
        /* Collect first: closing while reading the directory would skip
         * entries. */
        for (;;) {
            n = 0;
            rewinddir(d);
            while ((e = readdir(d)) != NULL && n < 256) {
                char *end;
                long fd = strtol(e->d_name, &end, 10);
                if (end == e->d_name || *end != '\0')
                    continue;
                if (fd >= lowfd && fd != dfd && fd <= 1 << 30)
                    fds[n++] = (int)fd;
            }
            for (int i = 0; i < n; i++)
                close(fds[i]);
            if (n < 256)
                break;
        }
        closedir(d);
        return;
    }
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = lowfd; fd < max; fd++)
        close(fd);
}

static void
write_all(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/*
 * In the task's process: become the user, set up, exec.  Never returns.
 * Without a user to become, this runs in a vfork()ed child that shares the
 * monitor's memory until it execs, so it allocates nothing and changes no
 * global: signal dispositions and the mask are per process, descriptors
 * per process, and the monitor set `environ` to the task's before.
 */
static _Noreturn void
exec_task(const al__launch_t *l, int logfd, const sigset_t *mask, bool vforked)
{
    for (size_t i = 0; i < NRESET; i++)
        signal(reset_signals[i], SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0 && devnull != 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    dup2(logfd, 1);
    dup2(logfd, 2);
    if (logfd > 2)
        close(logfd);
    if (!vforked)
        close_from(3);
    else if (!close_range_from(3))
        _exit(125); /* the monitor checked that close_range works */
    if (l->user != NULL && geteuid() == 0) {
        struct passwd *pw = getpwnam(l->user);
        if (pw == NULL || initgroups(pw->pw_name, pw->pw_gid) != 0 ||
            setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
            dprintf(2, "allot: cannot run as user %s\n", l->user);
            _exit(126);
        }
    }
    if (l->cwd != NULL && chdir(l->cwd) != 0) {
        dprintf(2, "allot: cannot enter %s: %s\n", l->cwd, strerror(errno));
        _exit(126);
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    /* execvp() with the task's environment (execvpe is a GNU extension):
     * environ is the task's already. */
    execvp(l->argv[0], l->argv);
    dprintf(2, "allot: cannot run %s: %s\n", l->argv[0], strerror(errno));
    _exit(127);
}

/* True when close_range(2) is not available (an old kernel). */
static bool
syscall_close_range_missing(void)
{
    return !close_range_from(1 << 30);
}

/* The monitor: waits for the task and records how it ended. */
static void
monitor(const al__launch_t *l, const sigset_t *mask)
{
    /* Termination signals are for the task; the monitor outlives it to
     * record its status (SIGKILL still takes both). */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    close_from(3);
    char text[192];
    snprintf(text, sizeof text, "%s %ld %lld %llu\n", l->ident, (long)getpid(),
             (long long)al_platform_proc_start((long)getpid()), l->devices);
    if (al_fs_write_file(l->state_path, text, strlen(text), 0644, 0) != 0)
        _exit(125);
    int logfd = open(l->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (logfd < 0)
        _exit(125);
    environ = (char **)l->envp;
    /* Becoming another user needs the user database (which allocates):
     * fork.  Otherwise vfork(), which copies no page tables: with short
     * tasks, copying and tearing down the monitor's address space was what
     * cost most.  The child may only use what exec_task() allows, and
     * needs close_range(2) (tried here, on nothing: fds from 1 << 30). */
    bool use_vfork =
        !(l->user != NULL && geteuid() == 0) && !syscall_close_range_missing();
    pid_t pid = use_vfork ? vfork() : fork();
    if (pid < 0) {
        write_all(logfd, "allot: fork failed\n");
        _exit(125);
    }
    if (pid == 0)
        exec_task(l, logfd, mask, use_vfork);
    close(logfd);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    snprintf(text, sizeof text, "%d %d\n", code, sig);
    int fd = open(l->state_path, O_WRONLY | O_APPEND);
    if (fd >= 0) {
        write_all(fd, text);
        close(fd);
    }
    _exit(sig ? 128 + sig : code);
}

pid_t
al__launch(const al__launch_t *l, char **cause)
{
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        monitor(l, &old);
    }
    int err = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        *cause = al_xasprintf("fork: %s", strerror(err));
        return -1;
    }
    return pid;
}
