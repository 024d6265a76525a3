/*
 * cli_server.c -- `allot server`, `allot agent` and `allot dev`: the
 * daemons' doors.  The daemons live in a second program, allot-daemon
 * (main_daemon.c), with the controller's libraries (libmicrohttpd, SQLite,
 * libpq and what they pull in); the allot command holds the client and
 * links only what a client needs, so that a shell loop of `allot submit`
 * does not load a database client each time.  Each door execs allot-daemon
 * with the same arguments: same process, same pid, same signals.
 *
 * allot-daemon is looked for beside this program (the build tree), then
 * where an install puts it relative to this program (ALLOT_DAEMON_REL, as
 * `meson install --destdir` moves both), then at the install path
 * (ALLOT_DAEMON_DIR).
 *
 * May call: libc only.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"

#ifndef ALLOT_DAEMON_REL
#define ALLOT_DAEMON_REL ""
#endif
#ifndef ALLOT_DAEMON_DIR
#define ALLOT_DAEMON_DIR "/usr/local/libexec/allot"
#endif

#define DAEMON_NAME "allot-daemon"

/* Writes dir/rel/allot-daemon to out; true when it is an executable. */
static bool
try_path(char *out, size_t len, const char *dir, const char *rel)
{
    int n = snprintf(out, len, "%s%s%s/" DAEMON_NAME, dir,
                     rel[0] != '\0' ? "/" : "", rel);
    return n > 0 && (size_t)n < len && access(out, X_OK) == 0;
}

/* allot-daemon's path in out (PATH_MAX bytes); false when none is found. */
static bool
find_daemon(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            if (try_path(out, len, self, ""))
                return true;
            if (ALLOT_DAEMON_REL[0] != '\0' &&
                try_path(out, len, self, ALLOT_DAEMON_REL))
                return true;
        }
    }
    return try_path(out, len, ALLOT_DAEMON_DIR, "");
}

/* Runs `allot-daemon NAME ARGS...`; returns only when that fails. */
static int
exec_daemon(int argc, char **argv)
{
    char path[PATH_MAX];
    if (!find_daemon(path, sizeof path)) {
        fprintf(stderr,
                "allot %s: cannot find " DAEMON_NAME
                " (the program that runs the daemons) beside this program "
                "or in " ALLOT_DAEMON_DIR "\n",
                argv[0]);
        return AL_EXIT_FAIL;
    }
    /* "allot", then the command's name and its arguments: the daemon's
     * own argv, as `ps` shows it. */
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (args == NULL)
        abort();
    args[0] = (char *)"allot"; /* execv() takes char *const[] */
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    execv(path, args);
    fprintf(stderr, "allot %s: cannot run %s: %s\n", argv[0], path,
            strerror(errno));
    free(args);
    return AL_EXIT_FAIL;
}

int
al_cli_server(int argc, char **argv)
{
    return exec_daemon(argc, argv);
}

int
al_cli_agent(int argc, char **argv)
{
    return exec_daemon(argc, argv);
}

int
al_cli_router(int argc, char **argv)
{
    return exec_daemon(argc, argv);
}

int
al_cli_dev(int argc, char **argv)
{
    return exec_daemon(argc, argv);
}
