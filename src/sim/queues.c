/*
 * queues.c -- the --queues-file hierarchy: one queue per line,
 *   queue name=research deserved=32 weight=1
 *   queue name=vision parent=research deserved=16 weight=2 limit=48
 * Quotas are in GPUs (fractions allowed).  A parent must come before its
 * children.  Only leaves receive jobs.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

struct qctx {
    al_qdef_t q;
    char *parent;
    al_errs_t *errs;
    const char *file;
    int line;
};

static void
queue_kv(void *ctx, const char *key, const char *val)
{
    struct qctx *x = ctx;
    double v = 0;
    if (key == NULL) {
        if (strcmp(val, "queue") != 0)
            al__err(x->errs, "%s:%d: unexpected word '%s' (want key=value)",
                    x->file, x->line, val);
        return;
    }
    if (strcmp(key, "name") == 0 || strcmp(key, "parent") == 0) {
        char **dst = key[0] == 'n' ? &x->q.name : &x->parent;
        if (*val == '\0') {
            al__err(x->errs, "%s:%d: field '%s': empty", x->file, x->line, key);
            return;
        }
        free(*dst);
        *dst = al_xstrdup(val);
        return;
    }
    static const char *const nums[] = { "deserved", "weight", "limit",
                                        "priority" };
    int k = 0;
    while (k < 4 && strcmp(key, nums[k]) != 0)
        k++;
    if (k == 4) {
        al__err(x->errs, "%s:%d: unknown key '%s'", x->file, x->line, key);
        return;
    }
    /* Quotas are non-negative; a priority may be negative. */
    if (al__parse_num(val, &v) < 0 || v < (k == 3 ? -1e6 : 0) || v > 1e7) {
        al__err(x->errs, "%s:%d: field '%s': expected a number, got '%s'",
                x->file, x->line, key, val);
        return;
    }
    if (k == 0)
        x->q.deserved = v;
    else if (k == 1)
        x->q.weight = v;
    else if (k == 2)
        x->q.limit = v;
    else
        x->q.priority = (int)v;
}

static void
free_defs(al_qdef_t *q, int n)
{
    for (int i = 0; i < n; i++)
        free(q[i].name);
    free(q);
}

/* Children may not be promised more than their parent. */
static void
check_children(al_errs_t *errs, const char *name, const al_qdef_t *qs, int nq)
{
    for (int i = 0; i < nq; i++) {
        double sum = 0;
        bool kids = false;
        for (int k = i + 1; k < nq; k++)
            if (qs[k].parent == i) {
                sum += qs[k].deserved;
                kids = true;
            }
        if (kids && sum > qs[i].deserved + 1e-9 && qs[i].deserved > 0)
            al__err(errs,
                    "%s: queue '%s': children deserve %g GPUs, more than its "
                    "%g",
                    name, qs[i].name, sum, qs[i].deserved);
    }
}

int
al_queues_parse(const char *name, const char *buf, size_t len,
                al_queues_t **out, char **cause)
{
    al_errs_t errs = { 0 };
    al_qdef_t *qs = NULL;
    int nq = 0;
    size_t off = 0;
    int line = 0;
    char *l;
    while ((l = al__kv_line(name, buf, len, &off, &line, &errs)) != NULL) {
        struct qctx x = { .errs = &errs, .file = name, .line = line };
        x.q.parent = -1;
        x.q.weight = 1;
        x.q.limit = -1;
        int before = errs.n;
        al__kv_split(l, queue_kv, &x);
        free(l);
        if (x.q.name == NULL)
            al__err(&errs, "%s:%d: field 'name': missing", name, line);
        for (int k = 0; k < nq && x.q.name; k++)
            if (strcmp(qs[k].name, x.q.name) == 0)
                al__err(&errs, "%s:%d: field 'name': queue '%s' defined twice",
                        name, line, x.q.name);
        if (x.parent) {
            for (int k = 0; k < nq; k++)
                if (strcmp(qs[k].name, x.parent) == 0)
                    x.q.parent = k;
            if (x.q.parent < 0)
                al__err(&errs,
                        "%s:%d: field 'parent': no earlier queue named '%s'",
                        name, line, x.parent);
        }
        free(x.parent);
        if (x.q.limit >= 0 && x.q.limit < x.q.deserved)
            al__err(&errs, "%s:%d: field 'limit': %g is below deserved %g",
                    name, line, x.q.limit, x.q.deserved);
        if (errs.n > before || x.q.name == NULL) {
            free(x.q.name);
            continue;
        }
        qs = al_xrealloc(qs, (size_t)(nq + 1) * sizeof(*qs));
        qs[nq++] = x.q;
        if (nq > 100000) {
            al__err(&errs, "%s:%d: too many queues", name, line);
            break;
        }
    }
    if (errs.n == 0)
        check_children(&errs, name, qs, nq);
    if (errs.n == 0 && nq == 0)
        al__err(&errs, "%s: no queues", name);
    if (errs.n > 0) {
        free_defs(qs, nq);
        return al__err_give(&errs, cause);
    }
    al_queues_t *q = al_xcalloc(1, sizeof(*q));
    q->queues = qs;
    q->nqueues = nq;
    *out = q;
    return 0;
}

int
al_queues_load(const char *path, al_queues_t **out, char **cause)
{
    char *data;
    size_t len;
    int rc = al__read_file(path, &data, &len, cause);
    if (rc < 0)
        return rc;
    rc = al_queues_parse(path, data, len, out, cause);
    free(data);
    return rc;
}

void
al_queues_destroy(al_queues_t *q)
{
    if (q == NULL)
        return;
    free_defs(q->queues, q->nqueues);
    free(q);
}
