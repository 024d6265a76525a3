/* opt.c -- command-line options from a table, and usage made from it. */
#include "opt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Where the usage lists put an option's help (after "  --name ARG"). */
#define HELP_COLUMN 34

/* What an error message starts with: "allot CMD: " and "WHERE: ". */
typedef struct ctx {
    const char *cmd, *where, *sep;
} ctx_t;

/* Stores v, the value of o, at p; 0 or AL_EXIT_USAGE after saying why. */
static int
store(const ctx_t *x, const al_opt_t *o, const char *v, void *p)
{
    char *end;
    switch (o->kind) {
    case AL_OPT_FLAG:
        *(bool *)p = true;
        return 0;
    case AL_OPT_STR:
        *(const char **)p = v;
        return 0;
    case AL_OPT_INT: {
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0' || n < o->min ||
            n > o->max) {
            fprintf(stderr,
                    "allot %s: %s%s%s wants an integer in %lld..%lld, "
                    "not '%s'\n",
                    x->cmd, x->where, x->sep, o->name, (long long)o->min,
                    (long long)o->max, v);
            return AL_EXIT_USAGE;
        }
        *(int64_t *)p = n;
        return 0;
    }
    case AL_OPT_NUM: {
        double d = strtod(v, &end);
        /* Written so that "nan", which strtod accepts, fails too. */
        if (end == v || *end != '\0' || !(d >= o->lo && d <= o->hi)) {
            fprintf(stderr,
                    "allot %s: %s%s%s: expected a number in [%g, %g], got "
                    "'%s'\n",
                    x->cmd, x->where, x->sep, o->name, o->lo, o->hi, v);
            return AL_EXIT_USAGE;
        }
        *(double *)p = d;
        return 0;
    }
    }
    return AL_EXIT_USAGE;
}

/* The entry named by the first len bytes of a, or NULL. */
static const al_opt_t *
find(const al_opt_t *opts, const char *a, size_t len)
{
    for (const al_opt_t *p = opts; p->name != NULL; p++)
        if (strlen(p->name) == len && strncmp(p->name, a, len) == 0)
            return p;
    return NULL;
}

static int
parse(const ctx_t *x, const al_opt_t *opts, void *base, int argc, char **argv,
      bool stop_at_positional, char **pos, int maxpos, int *npos)
{
    int n = 0;
    bool only_pos = false;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = true;
            if (stop_at_positional) {
                *npos = i + 1;
                return 0;
            }
            continue;
        }
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (stop_at_positional) {
                *npos = i;
                return 0;
            }
            if (n == maxpos) {
                fprintf(stderr, "allot %s: %s%stoo many arguments ('%s')\n",
                        x->cmd, x->where, x->sep, a);
                return AL_EXIT_USAGE;
            }
            pos[n++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const al_opt_t *o = find(opts, a, len);
        if (o == NULL) {
            fprintf(stderr,
                    "allot %s: %s%sunknown option '%.*s'; see `allot %s "
                    "--help`\n",
                    x->cmd, x->where, x->sep, (int)len, a, x->cmd);
            return AL_EXIT_USAGE;
        }
        if (o->kind == AL_OPT_FLAG && eq != NULL) {
            fprintf(stderr, "allot %s: %s%s%s takes no value\n", x->cmd,
                    x->where, x->sep, o->name);
            return AL_EXIT_USAGE;
        }
        const char *v = NULL;
        if (o->kind != AL_OPT_FLAG) {
            v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            /* "--" ends the options: `submit --pool -- cmd` lacks the
             * pool rather than asking for a pool named "--". */
            if (v == NULL || (eq == NULL && strcmp(v, "--") == 0)) {
                fprintf(stderr, "allot %s: %s%s%s needs a value\n", x->cmd,
                        x->where, x->sep, o->name);
                return AL_EXIT_USAGE;
            }
        }
        void *p = o->dst != NULL ? o->dst : (char *)base + o->off;
        int rc = store(x, o, v, p);
        if (rc != 0)
            return rc;
    }
    *npos = stop_at_positional ? argc : n;
    return 0;
}

int
al_opt_parse(const char *cmd, const char *where, const al_opt_t *opts, int argc,
             char **argv, bool stop_at_positional, char **pos, int maxpos,
             int *npos)
{
    ctx_t x = { cmd, where != NULL ? where : "", where != NULL ? ": " : "" };
    return parse(&x, opts, NULL, argc, argv, stop_at_positional, pos, maxpos,
                 npos);
}

int
al_opt_parse_cmd(const al_opt_cmd_t *c, const char *where, void *base, int argc,
                 char **argv, char **pos, int maxpos, int *npos)
{
    ctx_t x = { c->name, where != NULL ? where : "",
                where != NULL ? ": " : "" };
    return parse(&x, c->opts, base, argc, argv, c->stop_at_args, pos, maxpos,
                 npos);
}

/* " --name ARG", bracketed unless the option is required. */
static void
put_synopsis(FILE *f, const al_opt_t *o)
{
    bool req = (o->flags & AL_OPT_REQUIRED) != 0;
    fprintf(f, " %s%s%s%s%s", req ? "" : "[", o->name, o->arg ? " " : "",
            o->arg ? o->arg : "", req ? "" : "]");
}

void
al_opt_usage(FILE *f, const al_opt_cmd_t *c)
{
    bool others = false;
    fprintf(f, "usage: allot %s", c->name);
    if (c->lead != NULL)
        fprintf(f, " %s", c->lead);
    for (const al_opt_t *o = c->opts; o->name != NULL; o++) {
        if ((o->flags & AL_OPT_REQUIRED) != 0)
            put_synopsis(f, o);
        else if ((o->flags & AL_OPT_HIDDEN) == 0)
            others = true;
    }
    fprintf(f, "%s%s%s\n", others ? " [options]" : "", c->args ? " " : "",
            c->args ? c->args : "");
    fprintf(f, "%s\n", c->about ? c->about : "");
    for (const al_opt_t *o = c->opts; o->name != NULL; o++) {
        if ((o->flags & AL_OPT_HIDDEN) != 0)
            continue;
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        fprintf(f, "  %-*s %s\n", HELP_COLUMN, left, o->help ? o->help : "");
    }
}

void
al_opt_brief(FILE *f, const al_opt_cmd_t *c)
{
    if (c->lead != NULL)
        fprintf(f, " %s", c->lead);
    for (const al_opt_t *o = c->opts; o->name != NULL; o++)
        if ((o->flags & (AL_OPT_REQUIRED | AL_OPT_BRIEF)) != 0)
            put_synopsis(f, o);
    if (c->args != NULL)
        fprintf(f, " %s", c->args);
}
