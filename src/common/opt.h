/*
 * opt.h -- command-line options from a const table (tmux's cmd_entry, Redis
 * config table), shared by every subcommand of `allot`: the daemons, the
 * clients and the simulator.  An option is "--name value", "--name=value"
 * or a flag; "--" ends the options.  Each entry carries its type (with
 * bounds), its value's name and its help, so that parsing, `allot CMD
 * --help` and the one-line synopses of `allot --help` come from the same
 * table and cannot drift apart.
 *
 * Owns: parsing argv against a table, and the usage text made from it.
 * Calls: libc only.
 */
#ifndef AL_OPT_H
#define AL_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of every subcommand. */
enum { AL_EXIT_OK = 0, AL_EXIT_FAIL = 1, AL_EXIT_USAGE = 2 };

typedef enum al_opt_kind {
    AL_OPT_FLAG = 0, /* bool, no value */
    AL_OPT_STR,      /* const char *, takes a value */
    AL_OPT_INT,      /* int64_t, an integer within [min, max] */
    AL_OPT_NUM       /* double, a number within [lo, hi] */
} al_opt_kind_t;

/* How an option shows in the usage texts. */
enum {
    AL_OPT_REQUIRED = 1 << 0, /* shown without brackets (the command checks) */
    AL_OPT_BRIEF = 1 << 1,    /* also in the command's line of `allot --help` */
    AL_OPT_HIDDEN = 1 << 2    /* not listed (an alias kept for old scripts) */
};

/*
 * One option.  Its value goes to dst when dst is set (a table built where
 * its variables live), otherwise to the base the parser is given plus off
 * (a static table over a struct of arguments, which `allot --help` can
 * read too).
 */
typedef struct al_opt {
    const char *name; /* "--gpus" */
    void *dst;
    size_t off;
    int64_t min, max; /* AL_OPT_INT */
    double lo, hi;    /* AL_OPT_NUM */
    const char *arg;  /* the value's name in usage texts ("N", "FILE") */
    const char *help; /* one line for `allot CMD --help` */
    al_opt_kind_t kind;
    unsigned flags; /* AL_OPT_REQUIRED, AL_OPT_BRIEF, AL_OPT_HIDDEN */
} al_opt_t;

/* A command's options and what its --help says around them. */
typedef struct al_opt_cmd {
    const char *name;     /* "ls": messages start "allot ls: " */
    const al_opt_t *opts; /* ending with { .name = NULL } */
    const char *lead;     /* positional words before the options in the
                             synopsis (a verb: "create", "set|delete NAME"),
                             or NULL */
    const char *args;     /* positional arguments after the options in the
                             synopsis ("JOBID..."), or NULL */
    const char *about;    /* text between the synopsis and the options (each
                             line ending with a newline), or NULL */
    bool stop_at_args;    /* the first positional argument ends the options
                             (`allot submit ... -- cmd --flag`) */
} al_opt_cmd_t;

/*
 * Parses argv[1..argc-1] against a table ending with {NULL}, whose entries
 * all have dst set.  "--" ends the options.  Positional arguments are
 * stored in pos[] (at most maxpos; *npos gets their number).  With
 * stop_at_positional, the first positional argument and all that follow
 * are left in place: *npos is set to the index in argv where they start.
 * Returns 0, or AL_EXIT_USAGE after printing what was wrong ("allot CMD:
 * WHERE: ..."; where may be NULL).
 */
int al_opt_parse(const char *cmd, const char *where, const al_opt_t *opts,
                 int argc, char **argv, bool stop_at_positional, char **pos,
                 int maxpos, int *npos);
/* The same for a command's table: values without dst go to base + off, and
 * c->stop_at_args says whether the first positional ends the options. */
int al_opt_parse_cmd(const al_opt_cmd_t *c, const char *where, void *base,
                     int argc, char **argv, char **pos, int maxpos, int *npos);

/*
 * `allot CMD --help`: "usage: allot CMD SYNOPSIS", the about text, then one
 * line per option ("  --name ARG" padded to a column, then its help).  The
 * synopsis is c->lead, the required options, "[options]" and c->args.
 */
void al_opt_usage(FILE *f, const al_opt_cmd_t *c);
/* The command's line in `allot --help`: c->lead, its required and brief
 * options (the others in brackets) and c->args, without a newline. */
void al_opt_brief(FILE *f, const al_opt_cmd_t *c);

#endif /* AL_OPT_H */
