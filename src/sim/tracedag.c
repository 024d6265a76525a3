/*
 * tracedag.c -- the pipelines of a trace: rows with pipeline_id, stage and
 * needs (stage names separated by ';') are the stages of a workflow; a
 * stage runs once every stage it needs has ended.  Resolves each stage's
 * needs into indices of the sorted trace and refuses, with the line, a
 * stage without a pipeline or name, a name given twice in one pipeline, a
 * need that names no stage of the same pipeline, and a cycle.
 *
 * May call: parse.c (errors), libc.  Called by trace.c.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

typedef struct key {
    const char *pipe, *stage;
    int idx;
} key_t_;

static int
cmp_key(const void *a, const void *b)
{
    const key_t_ *x = a, *y = b;
    int c = strcmp(x->pipe, y->pipe);
    if (c == 0)
        c = strcmp(x->stage, y->stage);
    return c != 0 ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int
find(const key_t_ *keys, int n, const char *pipe, const char *stage)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(keys[mid].pipe, pipe);
        if (c == 0)
            c = strcmp(keys[mid].stage, stage);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(keys[lo].pipe, pipe) == 0 &&
                   strcmp(keys[lo].stage, stage) == 0
               ? keys[lo].idx
               : -1;
}

/* Kahn's algorithm over the stages: what is left over lies on a cycle. */
static void
check_cycles(const char *name, al_trace_job_t *jobs, int n, al_errs_t *errs)
{
    int *left = al_xcalloc((size_t)n + 1, sizeof(int));
    int *off = al_xcalloc((size_t)n + 2, sizeof(int));
    int *adj, *queue = al_xmalloc(((size_t)n + 1) * sizeof(int));
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        left[i] = jobs[i].ndeps;
        for (int d = 0; d < jobs[i].ndeps; d++)
            off[jobs[i].deps[d] + 1]++;
    }
    for (int i = 0; i < n; i++)
        off[i + 1] += off[i];
    adj = al_xmalloc(((size_t)off[n] + 1) * sizeof(int));
    int *fill = al_xcalloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++)
        for (int d = 0; d < jobs[i].ndeps; d++) {
            int x = jobs[i].deps[d];
            adj[off[x] + fill[x]++] = i;
        }
    for (int i = 0; i < n; i++)
        if (left[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        int x = queue[head++];
        for (int k = off[x]; k < off[x + 1]; k++)
            if (--left[adj[k]] == 0)
                queue[tail++] = adj[k];
    }
    for (int i = 0; i < n; i++)
        if (left[i] > 0)
            al__err(errs,
                    "%s:%d: field 'needs': stage '%s' of pipeline '%s' is on "
                    "a cycle",
                    name, jobs[i].line, jobs[i].stage, jobs[i].pipeline);
    free(left);
    free(off);
    free(adj);
    free(fill);
    free(queue);
}

int
al__trace_dag(const char *name, al_trace_job_t *jobs, int n, al_errs_t *errs)
{
    int nk = 0, before = errs->n;
    for (int i = 0; i < n; i++)
        nk += jobs[i].pipeline != NULL;
    if (nk == 0)
        return 0;
    key_t_ *keys = al_xmalloc((size_t)nk * sizeof(*keys));
    nk = 0;
    for (int i = 0; i < n; i++) {
        al_trace_job_t *j = &jobs[i];
        if (j->pipeline == NULL)
            continue;
        if (j->pipeline[0] == '\0' || j->stage[0] == '\0') {
            al__err(errs, "%s:%d: field '%s': empty in a pipeline's stage",
                    name, j->line,
                    j->pipeline[0] == '\0' ? "pipeline_id" : "stage");
            continue;
        }
        keys[nk++] = (key_t_){ j->pipeline, j->stage, i };
    }
    if (nk > 1)
        qsort(keys, (size_t)nk, sizeof(*keys), cmp_key);
    for (int k = 1; k < nk; k++)
        if (strcmp(keys[k].pipe, keys[k - 1].pipe) == 0 &&
            strcmp(keys[k].stage, keys[k - 1].stage) == 0)
            al__err(errs,
                    "%s:%d: field 'stage': '%s' appears twice in pipeline "
                    "'%s' (line %d)",
                    name, jobs[keys[k].idx].line, keys[k].stage, keys[k].pipe,
                    jobs[keys[k - 1].idx].line);
    for (int i = 0; i < n && errs->n == before; i++) {
        al_trace_job_t *j = &jobs[i];
        if (j->pipeline == NULL || j->needs[0] == '\0')
            continue;
        char *copy = al_xstrdup(j->needs), *save = NULL;
        int cap = 1;
        for (const char *c = copy; *c != '\0'; c++)
            cap += *c == ';';
        j->deps = al_xmalloc((size_t)cap * sizeof(int));
        for (char *t = strtok_r(copy, ";", &save); t != NULL;
             t = strtok_r(NULL, ";", &save)) {
            while (*t == ' ')
                t++;
            size_t l = strlen(t);
            while (l > 0 && t[l - 1] == ' ')
                t[--l] = '\0';
            if (l == 0)
                continue;
            int d = find(keys, nk, j->pipeline, t);
            if (d < 0) {
                al__err(errs,
                        "%s:%d: field 'needs': no stage '%s' in pipeline "
                        "'%s'",
                        name, j->line, t, j->pipeline);
                continue;
            }
            bool dup = d == i;
            for (int k = 0; k < j->ndeps && !dup; k++)
                dup = j->deps[k] == d;
            if (d == i)
                al__err(errs, "%s:%d: field 'needs': stage '%s' needs itself",
                        name, j->line, t);
            else if (!dup)
                j->deps[j->ndeps++] = d;
        }
        free(copy);
    }
    if (errs->n == before)
        check_cycles(name, jobs, n, errs);
    free(keys);
    return errs->n == before ? 0 : -1;
}
