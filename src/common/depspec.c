/*
 * depspec.c -- a job's dependencies in Slurm's syntax; see depspec.h.
 *
 * May call: libc and xmalloc.
 */
#include "depspec.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

const char *const al_dep_kind_names[AL_DEP_NKINDS] = {
    [AL_DEP_AFTEROK] = "afterok",       [AL_DEP_AFTERANY] = "afterany",
    [AL_DEP_AFTERNOTOK] = "afternotok", [AL_DEP_AFTERCORR] = "aftercorr",
    [AL_DEP_SINGLETON] = "singleton",
};

static int
fail(char **cause, char *msg)
{
    if (cause != NULL)
        *cause = msg;
    else
        free(msg);
    return -1;
}

#define KINDS                                                                  \
    "afterok, afterany, afternotok or aftercorr with job ids, or singleton"

int
al_dep_parse(const char *s, al_depspec_t **out, int *n, char **cause)
{
    if (s == NULL || *s == '\0')
        return fail(cause, al_xstrdup("the dependency is empty (e.g. "
                                      "afterok:5:6,singleton)"));
    if (strchr(s, '?') != NULL)
        return fail(cause, al_xasprintf("dependency '%s': '?' (any one of) "
                                        "is not supported; ',' (all of) is",
                                        s));
    al_depspec_t *d = NULL;
    int nd = 0;
    char *err = NULL;
    for (const char *p = s; err == NULL;) {
        size_t len = strcspn(p, ",");
        size_t klen = strcspn(p, ",:");
        int kind = -1;
        for (int k = 0; k < AL_DEP_NKINDS; k++)
            if (strlen(al_dep_kind_names[k]) == klen &&
                strncmp(p, al_dep_kind_names[k], klen) == 0)
                kind = k;
        if (kind < 0) {
            err =
                al_xasprintf("dependency '%s': unknown kind '%.*s' (" KINDS ")",
                             s, (int)klen, p);
            break;
        }
        bool single = kind == AL_DEP_SINGLETON;
        if (single != (klen == len)) {
            err = al_xasprintf(single ? "dependency '%s': singleton takes no "
                                        "job ids"
                                      : "dependency '%s': %s wants job ids "
                                        "(%s:ID[:ID...])",
                               s, al_dep_kind_names[kind],
                               al_dep_kind_names[kind]);
            break;
        }
        const char *q = p + klen;
        do {
            uint64_t id = 0;
            int digits = 0;
            if (!single) {
                q++; /* ':' */
                while (*q >= '0' && *q <= '9' && digits < 19) {
                    id = id * 10 + (uint64_t)(*q - '0');
                    q++, digits++;
                }
                if (digits == 0 || id == 0 ||
                    (*q != ':' && *q != ',' && *q != '\0')) {
                    err =
                        al_xasprintf("dependency '%s': a job id is a "
                                     "number of at least 1 (at '%.*s')",
                                     s, (int)strcspn(p + klen, ","), p + klen);
                    break;
                }
            }
            if (nd == AL_DEP_MAX) {
                err = al_xasprintf("dependency '%s': more than %d", s,
                                   AL_DEP_MAX);
                break;
            }
            d = al_xreallocarray(d, (size_t)nd + 1, sizeof *d);
            d[nd++] = (al_depspec_t){ .kind = (al_dep_kind_t)kind, .job = id };
        } while (!single && *q == ':');
        if (err != NULL || p[len] == '\0')
            break;
        p += len + 1;
    }
    if (err != NULL) {
        free(d);
        return fail(cause, err);
    }
    if (out != NULL)
        *out = d;
    else
        free(d);
    *n = nd;
    return 0;
}

char *
al_dep_text(const al_depspec_t *d, int n)
{
    size_t cap = 64, len = 0;
    char *s = al_xmalloc(cap);
    s[0] = '\0';
    for (int i = 0; i < n; i++) {
        char item[48];
        bool same = i > 0 && d[i - 1].kind == d[i].kind &&
                    d[i].kind != AL_DEP_SINGLETON;
        if (same)
            snprintf(item, sizeof item, ":%llu", (unsigned long long)d[i].job);
        else if (d[i].kind == AL_DEP_SINGLETON)
            snprintf(item, sizeof item, "%ssingleton", i ? "," : "");
        else
            snprintf(item, sizeof item, "%s%s:%llu", i ? "," : "",
                     al_dep_kind_names[d[i].kind],
                     (unsigned long long)d[i].job);
        size_t il = strlen(item);
        if (len + il + 1 > cap) {
            cap = 2 * (len + il + 1);
            s = al_xrealloc(s, cap);
        }
        memcpy(s + len, item, il + 1);
        len += il;
    }
    return s;
}
