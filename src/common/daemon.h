/*
 * daemon.h -- the start-up that `allot server`, `allot agent` and `allot
 * dev` share: their --log-level and --help options, the usage printed when
 * the command line is wrong (on stderr, status 2) or asked for (on stdout,
 * status 0), the log's tag, and the handling of SIGINT and SIGTERM (blocked
 * for a daemon that waits for them with sigwait(), or caught for one that
 * polls a flag) with SIGPIPE ignored.
 *
 * Owns: the daemons' shared options and signal set-up.
 * Calls: opt.h, log.h and libc (signals).
 */
#ifndef AL_DAEMON_H
#define AL_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "opt.h"

/* What every daemon's command line holds besides its own options; a member
 * of the daemon's struct of arguments. */
typedef struct al_daemon {
    const char *level; /* --log-level; "info" unless given */
    bool help;         /* --help */
    sigset_t stop;     /* SIGINT and SIGTERM, once al_daemon_block() ran */
    sigset_t old;      /* the signal mask before al_daemon_block() */
} al_daemon_t;

/* The entries of --log-level and --help for a table over struct `type`
 * whose al_daemon_t is `member`. */
// clang-format off
#define AL_DAEMON_OPTS(type, member)                                        \
    { .name = "--log-level", .kind = AL_OPT_STR,                            \
      .off = offsetof(type, member) + offsetof(al_daemon_t, level),         \
      .arg = "LEVEL",                                                       \
      .help = "debug, info (default), warn, error or quiet" },              \
    { .name = "--help", .kind = AL_OPT_FLAG,                                \
      .off = offsetof(type, member) + offsetof(al_daemon_t, help),          \
      .help = "this text" }
// clang-format on

/* Parses argv against c into args (which holds d), --log-level defaulting
 * to "info".  Returns 0, or AL_EXIT_USAGE after saying what was wrong. */
int al_daemon_parse(al_daemon_t *d, const al_opt_cmd_t *c, void *args, int argc,
                    char **argv);
/*
 * Ends the command line's part of start-up.  When parsing failed (rc not
 * 0), --help was given, the log level is unknown or !ok (the daemon's own
 * checks, which print nothing), prints c's usage (on stdout for --help, on
 * stderr otherwise), sets *status (0 for --help, AL_EXIT_USAGE otherwise)
 * and returns false.  Otherwise tags the log with c->name at the level
 * given and returns true.
 */
bool al_daemon_begin(const al_daemon_t *d, const al_opt_cmd_t *c, int rc,
                     bool ok, int *status);

/* Blocks SIGINT and SIGTERM in the calling thread (threads it starts later
 * inherit the mask, so only al_daemon_wait() sees them), keeping the mask
 * before in d->old for children to restore, and ignores SIGPIPE. */
void al_daemon_block(al_daemon_t *d);
/* Waits for SIGINT or SIGTERM (blocked by al_daemon_block()); returns it. */
int al_daemon_wait(al_daemon_t *d);
/* Restores the mask al_daemon_block() replaced. */
void al_daemon_unblock(const al_daemon_t *d);
/* For a daemon that polls instead: on_stop handles SIGINT and SIGTERM
 * (system calls restart), and SIGPIPE is ignored. */
void al_daemon_catch(void (*on_stop)(int));

#endif /* AL_DAEMON_H */
