/* launch.c -- starting a task (vfork with care) and keeping its record. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
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

/* What a vfork()ed child may say: write(2) only, no stdio (vdprintf links
 * a FILE into a global list and allocates, in memory shared with the
 * parent) and no strerror() (which may translate, and allocate). */
static void
child_say(const char *what, const char *arg, int err)
{
    static const struct {
        int err;
        const char *text;
    } texts[] = {
        { ENOENT, "No such file or directory" },
        { EACCES, "Permission denied" },
        { ENOEXEC, "Exec format error" },
        { ENOTDIR, "Not a directory" },
        { ELOOP, "Too many levels of symbolic links" },
        { E2BIG, "Argument list too long" },
        { ENOMEM, "Cannot allocate memory" },
        { ETXTBSY, "Text file busy" },
        { EISDIR, "Is a directory" },
        { ENAMETOOLONG, "File name too long" },
    };
    const char *text = NULL;
    char num[32], *p = num + sizeof num;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i].err == err)
            text = texts[i].text;
    if (text == NULL) { /* "error N" */
        unsigned v = err > 0 ? (unsigned)err : 0;
        *--p = '\0';
        do
            *--p = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        p -= 6;
        memcpy(p, "error ", 6);
        text = p;
    }
    const char *parts[] = { what, arg, ": ", text, "\n" };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ssize_t w = write(2, parts[i], strlen(parts[i]));
        (void)w;
    }
}

/*
 * In the task's process: become the user, set up, exec.  Never returns.
 * Without a user to become, this runs in a vfork()ed child that shares the
 * spawner's memory until it execs, so it allocates nothing and changes no
 * global: signal dispositions and the mask are per process, descriptors
 * per process, and the parent set `environ` to the task's before.
 */
/* The limit of open files the process that starts tasks was given, when
 * it raised its own (al__launch_init()): what tasks get back. */
static struct rlimit task_nofile;
static bool task_nofile_set;

/* ALLOT_TEST_LAUNCH_HANG=DIR (tests only): a task whose working directory
 * is DIR hangs before it runs its program, as one would in chdir() on a
 * file system that does not answer.  Read in the spawner before its first
 * start, while environ is its own. */
static const char *test_hang_cwd;

void
al__launch_init(void)
{
    const char *hang = getenv("ALLOT_TEST_LAUNCH_HANG");
    if (hang != NULL && *hang != '\0')
        test_hang_cwd = hang;
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max)
        return;
    task_nofile = r;
    r.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &r) == 0)
        task_nofile_set = true;
}

/* Joins the cgroups of list ('\n'-separated cgroup.procs files): "0" is
 * the writer itself.  Runs in the child before it runs its program, as
 * root still, with write(2) and a path on the stack only (vfork()).
 * True when every one was joined. */
static bool
join_cgroups(const char *list)
{
    char path[4096];
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        if (len >= sizeof path)
            return false;
        memcpy(path, p, len);
        path[len] = '\0';
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1) {
            child_say("allot: cannot join the cgroup ", path, errno);
            if (fd >= 0)
                close(fd);
            return false;
        }
        close(fd);
        p = nl != NULL ? nl + 1 : NULL;
    }
    return true;
}

static _Noreturn void
exec_task(const al__launch_t *l, int logfd, int devnull, const sigset_t *mask,
          bool vforked)
{
    for (size_t i = 0; i < NRESET; i++)
        signal(reset_signals[i], SIG_DFL);
    if (l->stdio != NULL) {
        /* An interactive session's task (session.c): its terminal or
         * pipes, the terminal its controlling one. */
        for (int i = 0; i < 3; i++)
            dup2(l->stdio[i], i);
        if (l->tty)
            ioctl(0, TIOCSCTTY, 0);
        close(logfd);
        logfd = 1;
    } else if (devnull > 0) {
        dup2(devnull, 0); /* the copy on 0 is not close-on-exec */
    } else if (devnull == 0) {
        fcntl(0, F_SETFD, 0); /* the child's own descriptor table */
    } else if ((devnull = open("/dev/null", O_RDONLY)) > 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    if (l->stdio == NULL) {
        dup2(logfd, 1);
        dup2(logfd, 2);
    }
    if (logfd > 2)
        close(logfd);
    if (!vforked)
        close_from(3);
    else if (!close_range_from(3))
        _exit(125); /* the parent checked that close_range works */
    /* The task's own limit, as the agent was started with: a program may
     * size tables by it, or use select(), which a raised one breaks. */
    if (task_nofile_set)
        setrlimit(RLIMIT_NOFILE, &task_nofile);
    /* Confined before anything of the task runs: a task that cannot be
     * confined does not run. */
    if (l->cgroups != NULL && !join_cgroups(l->cgroups))
        _exit(125);
    if (l->user != NULL && geteuid() == 0) {
        struct passwd *pw = getpwnam(l->user);
        if (pw == NULL || initgroups(pw->pw_name, pw->pw_gid) != 0 ||
            setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
            dprintf(2, "allot: cannot run as user %s\n", l->user);
            _exit(126);
        }
    }
    if (test_hang_cwd != NULL && l->cwd != NULL &&
        strcmp(l->cwd, test_hang_cwd) == 0)
        for (;;)
            pause();
    if (l->cwd != NULL && chdir(l->cwd) != 0) {
        child_say("allot: cannot enter ", l->cwd, errno);
        _exit(126);
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    /* execvp() with the task's environment (execvpe is a GNU extension):
     * environ is the task's already. */
    execvp(l->argv[0], l->argv);
    child_say("allot: cannot run ", l->argv[0], errno);
    _exit(127);
}

/* True when close_range(2) is not available (an old kernel): tried once,
 * on nothing (descriptors from 1 << 30), in the process that starts tasks
 * (single-threaded). */
static bool
close_range_missing(void)
{
    static int missing = -1;
    if (missing < 0)
        missing = !close_range_from(1 << 30);
    return missing != 0;
}

/* A descriptor open on /dev/null (close-on-exec) for the tasks' standard
 * input, opened once in the process that starts tasks rather than by
 * every task; -1 when it cannot be opened (each task tries then). */
static int
devnull_fd(void)
{
    static int fd = -2;
    if (fd == -2)
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd;
}

/* Writes n bytes of p at off; 0 or -1. */
static int
pwrite_all(int fd, const char *p, size_t n, off_t off)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

void
al__rec_field(char *dst, size_t len, const char *text)
{
    size_t n = strlen(text);
    if (n > len - 1)
        n = len - 1;
    /* A fixed-width field of the record, not a C string: no NUL. */
    memcpy(dst, text, n); // NOLINT(bugprone-not-null-terminated-result)
    memset(dst + n, ' ', len - 1 - n);
    dst[len - 1] = '\n';
}

bool
al__rec_parse(const char *rec, al__rec_t *r)
{
    /* strtoull()/strtoll() with their ends checked: sscanf() cannot say
     * that a number overflowed. */
    const char *p = rec;
    char *end;
    long long v[6];
    for (int i = 0; i < 6; i++) {
        while (*p == ' ')
            p++;
        /* Digits only, but START, which may be -1: a free slot's record
         * begins with '-', and strtoull() would take "-23" for 2^64 - 23. */
        if (!(*p >= '0' && *p <= '9') && !(i == 4 && *p == '-'))
            return false;
        errno = 0;
        v[i] = i == 0 || i == 5 ? (long long)strtoull(p, &end, 10)
                                : strtoll(p, &end, 10);
        if (end == p || errno != 0 || (*end != ' ' && *end != '\n'))
            return false;
        p = end;
    }
    if (v[1] < 0 || v[1] > 1 << 20 || v[2] < 0 || v[2] > 1 << 20)
        return false;
    r->job = (unsigned long long)v[0];
    r->index = (int)v[1];
    r->restart = (int)v[2];
    r->pid = (long)v[3];
    r->start = v[4];
    r->devices = (unsigned long long)v[5];
    return true;
}

pid_t
al__launch(const al__launch_t *l, int *state_fd, char **cause)
{
    /* Neither file is truncated: on ext4 a truncate to zero makes the next
     * close() of a written file flush it to disk.  A slot's state file is
     * overwritten whole; its log was emptied when the slot was freed. */
    int sfd = open(l->state_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    int logfd =
        open(l->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (sfd < 0 || logfd < 0) {
        int err = errno;
        *cause =
            al_xasprintf("cannot open %s: %s",
                         sfd < 0 ? l->state_path : l->log_path, strerror(err));
        if (sfd >= 0)
            close(sfd);
        if (logfd >= 0)
            close(logfd);
        errno = err;
        return -1;
    }
    /* Becoming another user needs the user database (which allocates):
     * fork.  Otherwise vfork(): no page tables copied, the cheapest way to
     * start a process.  The child may only do what exec_task() allows;
     * environ is swapped here and back (this process is single-threaded). */
    bool use_vfork = !(l->user != NULL && geteuid() == 0) &&
                     !close_range_missing() && l->stdio == NULL;
    int devnull = devnull_fd();
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    /* A session's task starts from the agent, which has other threads
     * then: its environment is swapped in the child only. */
    char **saved_env = environ;
    if (l->stdio == NULL)
        environ = (char **)l->envp;
    /* vfork() on purpose (see above; measured with bench/e2e): the child
     * only calls exec_task(), which keeps to what a vfork()ed child may
     * do.  posix_spawn() would do the same but cannot report an exec
     * failure in the task's own log, as its users expect. */
    // NOLINTBEGIN(clang-analyzer-security.insecureAPI.vfork,clang-analyzer-unix.Vfork)
    pid_t pid = use_vfork ? vfork() : fork();
    // NOLINTEND(clang-analyzer-security.insecureAPI.vfork,clang-analyzer-unix.Vfork)
    if (pid == 0) {
        environ = (char **)l->envp;
        setsid(); /* the task and all it starts: one process group */
        exec_task(l, logfd, devnull, &old, use_vfork);
    }
    int err = errno;
    environ = saved_env;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(logfd);
    if (pid < 0) {
        close(sfd);
        *cause = al_xasprintf("fork: %s", strerror(err));
        errno = err;
        return -1;
    }
    /* The record, the exit part blank.  vfork() returned: the child has
     * exec()ed (or failed) and its start time is known. */
    char line[AL__REC_ID + 64], rec[AL__REC_LEN];
    /* The task may have ended already (a zombie until we reap it): its
     * start time is known all the same. */
    int64_t start = -1;
    al_platform_proc_state((long)pid, &start);
    snprintf(line, sizeof line, "%s %ld %lld %llu", l->ident, (long)pid,
             (long long)start, l->devices);
    al__rec_field(rec, AL__REC_ID, line);
    al__rec_field(rec + AL__REC_ID, AL__REC_LEN - AL__REC_ID, "");
    if (pwrite_all(sfd, rec, sizeof rec, 0) != 0)
        kill(-pid, SIGKILL); /* it could not be found again after a restart:
                                do not let it run; its end is reported */
    *state_fd = sfd;
    return pid;
}

int
al__record_exit(int state_fd, int code, int sig)
{
    char text[32], rec[AL__REC_LEN - AL__REC_ID];
    snprintf(text, sizeof text, "%d %d", code, sig);
    al__rec_field(rec, sizeof rec, text);
    return pwrite_all(state_fd, rec, sizeof rec, AL__REC_ID);
}

int
al__chld_pipe(int p[2], void (*handler)(int))
{
    if (pipe(p) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(p[i], F_SETFL, fcntl(p[i], F_GETFL) | O_NONBLOCK);
        fcntl(p[i], F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sa.sa_handler = handler;
    return sigaction(SIGCHLD, &sa, NULL);
}

pid_t
al__spawn_aside(const char *prog, char *const argv[], char *const envp[],
                int stdin_fd, const char *out, int *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdin_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out != NULL ? out : "/dev/null",
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, def;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    sigemptyset(&def);
    sigaddset(&def, SIGCHLD);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGHUP);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawnp(&pid, prog, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    *err = rc;
    return rc == 0 ? pid : -1;
}
