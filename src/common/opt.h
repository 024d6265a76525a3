/*
 * opt.h -- command-line options from a const table (tmux's cmd_entry, Redis
 * config table), shared by every subcommand of `allot`: the daemons and the
 * clients.  An option is "--name value", "--name=value" or a flag.
 */
#ifndef AL_OPT_H
#define AL_OPT_H

#include <stdbool.h>
#include <stdint.h>

/* Exit statuses of every subcommand. */
enum { AL_EXIT_OK = 0, AL_EXIT_FAIL = 1, AL_EXIT_USAGE = 2 };

typedef enum al_opt_kind {
    AL_OPT_FLAG = 0, /* bool *, no value */
    AL_OPT_STR,      /* const char **, takes a value */
    AL_OPT_INT       /* int64_t *, an integer within [min, max] */
} al_opt_kind_t;

typedef struct al_opt {
    const char *name; /* "--gpus" */
    al_opt_kind_t kind;
    void *dst;
    int64_t min, max; /* AL_OPT_INT only */
} al_opt_t;

/*
 * Parses argv[1..argc-1] against a table ending with {NULL}.  "--" ends the
 * options.  Positional arguments are stored in pos[] (at most maxpos;
 * *npos gets their number).  With stop_at_positional, the first positional
 * argument and all that follow are left in place: *npos is set to the
 * index in argv where they start.  Returns 0, or AL_EXIT_USAGE after
 * printing what was wrong ("allot CMD: WHERE: ..."; where may be NULL).
 */
int al_opt_parse(const char *cmd, const char *where, const al_opt_t *opts,
                 int argc, char **argv, bool stop_at_positional, char **pos,
                 int maxpos, int *npos);

#endif /* AL_OPT_H */
