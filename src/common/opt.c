/* opt.c -- command-line options from a table. */
#include "opt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
al_opt_parse(const char *cmd, const char *where, const al_opt_t *opts, int argc,
             char **argv, bool stop_at_positional, char **pos, int maxpos,
             int *npos)
{
    const char *sep = where != NULL ? ": " : "";
    where = where != NULL ? where : "";
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
                        cmd, where, sep, a);
                return AL_EXIT_USAGE;
            }
            pos[n++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const al_opt_t *o = NULL;
        for (const al_opt_t *p = opts; p->name != NULL; p++)
            if (strlen(p->name) == len && strncmp(p->name, a, len) == 0)
                o = p;
        if (o == NULL) {
            fprintf(stderr,
                    "allot %s: %s%sunknown option '%.*s'; see `allot %s "
                    "--help`\n",
                    cmd, where, sep, (int)len, a, cmd);
            return AL_EXIT_USAGE;
        }
        if (o->kind == AL_OPT_FLAG) {
            if (eq != NULL) {
                fprintf(stderr, "allot %s: %s%s%s takes no value\n", cmd, where,
                        sep, o->name);
                return AL_EXIT_USAGE;
            }
            *(bool *)o->dst = true;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (v == NULL) {
            fprintf(stderr, "allot %s: %s%s%s needs a value\n", cmd, where, sep,
                    o->name);
            return AL_EXIT_USAGE;
        }
        if (o->kind == AL_OPT_INT) {
            char *end;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno != 0 || end == v || *end != '\0' || x < o->min ||
                x > o->max) {
                fprintf(stderr,
                        "allot %s: %s%s%s wants an integer in %lld..%lld, "
                        "not '%s'\n",
                        cmd, where, sep, o->name, (long long)o->min,
                        (long long)o->max, v);
                return AL_EXIT_USAGE;
            }
            *(int64_t *)o->dst = x;
            continue;
        }
        *(const char **)o->dst = v;
    }
    *npos = stop_at_positional ? argc : n;
    return 0;
}
