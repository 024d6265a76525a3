/* launch.c -- starting a task under its monitor (fork with care). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
 * single-threaded agent, so opendir() may allocate. */
static void
close_from(int lowfd)
{
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

/* In the task's process: become the user, set up, exec.  Never returns. */
static void
exec_task(const al__launch_t *l, int logfd, const sigset_t *mask)
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
    close_from(3);
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
    /* execvp() with the task's environment (execvpe is a GNU extension). */
    environ = (char **)l->envp;
    execvp(l->argv[0], l->argv);
    dprintf(2, "allot: cannot run %s: %s\n", l->argv[0], strerror(errno));
    _exit(127);
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
    char text[96];
    snprintf(text, sizeof text, "%ld %lld %llu\n", (long)getpid(),
             (long long)al_platform_proc_start((long)getpid()), l->devices);
    if (al_fs_write_file(l->state_path, text, strlen(text), 0644, 0) != 0)
        _exit(125);
    int logfd = open(l->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (logfd < 0)
        _exit(125);
    pid_t pid = fork();
    if (pid < 0) {
        write_all(logfd, "allot: fork failed\n");
        _exit(125);
    }
    if (pid == 0)
        exec_task(l, logfd, mask);
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
