/*
 * history.c -- the usage history: what the cluster did over time, kept in
 * the store for reports and the dashboard's charts.
 *
 * Every --usage-interval (a minute) the loop samples the cluster into fine
 * rows: per queue (model "") its allocated, used (from the agents' GPU
 * telemetry), deserved, fair-share and pending GPUs; per GPU model (queue
 * "") its GPUs, allocated, used, idle and wasted ones (waste.c's, as means
 * over the step from its counters).  Every --usage-rollup fine steps (an
 * hour) the fine rows of the step just ended become a coarse row of their
 * means.  Fine rows are kept --usage-keep-minutes days, coarse ones
 * --usage-keep-hours.  A row's time is its step's start, and the step of
 * a restart's first sample is the one after the last stored: a controller
 * that was down leaves a gap as long as it was down and no step twice.
 * Rows go into the loop's transaction, like every other write.
 *
 * Each sample also adds to every running job's used GPU-seconds (its
 * GPUs' telemetry times the step, a fractional task's by its share), kept
 * in the job's document: the report's used GPU-hours by user, class and
 * node come from them.
 *
 * Reads: al__usage_series() (GET /v1/usage) and al__usage_report() (GET
 * /v1/report, with the job history of the store's events).
 *
 * May call: store.c (the named statements), table.c, waste.c's table; it
 * changes nothing but ctl->usage, the store's usage rows and the running
 * jobs' used GPU-seconds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

/* Telemetry older than this is not "used" any more. */
#define TELEMETRY_FRESH_MS 120000

static int
one_long(void *arg, int ncols, const char *const *cols)
{
    int64_t *v = arg;
    if (ncols > 0 && cols[0] != NULL)
        *v = strtoll(cols[0], NULL, 10);
    return 1;
}

/* The latest row time of step, or -1. */
static int64_t
last_row(al_ctl_t *ctl, int64_t step)
{
    char s[24];
    snprintf(s, sizeof s, "%lld", (long long)step);
    const char *v[] = { s };
    int64_t t = -1;
    al__store_read(ctl, "usage_last", 1, v, one_long, &t);
    return t;
}

/* The earliest row time of step, or -1. */
static int64_t
first_row(al_ctl_t *ctl, int64_t step)
{
    char s[24];
    snprintf(s, sizeof s, "%lld", (long long)step);
    const char *v[] = { s };
    int64_t t = -1;
    al__store_read(ctl, "usage_first", 1, v, one_long, &t);
    return t;
}

/* A figure as stored: thousandths of a GPU; "" for NAN (NULL). */
static void
num(char *buf, size_t n, double v)
{
    if (isnan(v))
        buf[0] = '\0';
    else
        snprintf(buf, n, "%lld", (long long)llround(v * 1000));
}

/* Writes one row; NAN figures are NULL. */
static void
put_row(al_ctl_t *ctl, int64_t step, int64_t t, const char *queue,
        const char *model, const double f[AL_USAGE_NF])
{
    char st[24], ts[24], fs[AL_USAGE_NF][32];
    snprintf(st, sizeof st, "%lld", (long long)step);
    snprintf(ts, sizeof ts, "%lld", (long long)t);
    const char *v[4 + AL_USAGE_NF] = { st, ts, queue, model };
    for (int i = 0; i < AL_USAGE_NF; i++) {
        num(fs[i], sizeof fs[i], f[i]);
        v[4 + i] = fs[i][0] != '\0' ? fs[i] : NULL;
    }
    al__store_write(ctl, "usage_put", 4 + AL_USAGE_NF, v);
}

/* What a GPU of task tk on node n at device g is used, by its telemetry:
 * its utilisation times the task's share; NAN when not known. */
static double
used_of(const al__node_t *n, int g, const al__task_t *tk, int64_t now_ms)
{
    const al__gpu_sample_t *x = &n->gpus[g].sample;
    if (x->at_ms <= 0 || now_ms - x->at_ms > TELEMETRY_FRESH_MS || x->util < 0)
        return NAN;
    double share = tk->gpu_milli > 0 ? tk->gpu_milli / (double)AL_GPU_MILLI : 1;
    return x->util / 100.0 * share;
}

/* Adds v to *sum, where NAN means unknown: the sum is known once one part
 * is. */
static void
add_known(double *sum, bool *known, double v)
{
    if (isnan(v))
        return;
    *sum += v;
    *known = true;
}

/* The GPUs each queue's pending jobs ask for, added to qpend by queue
 * index.  An array's elements without jobs yet (its empty slots) count as
 * pending jobs of its parent's request; the parent is none. */
static void
pending_gpus(al_ctl_t *ctl, double *qpend)
{
    const al__job_t *owner = NULL;
    uint64_t owner_end = 0;
    for (uint64_t i = al__ctl_first_active(ctl); i < ctl->njobs; i++) {
        const al__job_t *j = ctl->jobs[i];
        if (owner != NULL && i + 1 > owner_end)
            owner = NULL;
        if (j != NULL && j->array != NULL) {
            owner = j->state == JS_PENDING ? j : NULL;
            owner_end = j->id + (uint64_t)j->array->as.count;
            continue;
        }
        if (j == NULL)
            j = owner;
        if (j == NULL || j->state != JS_PENDING)
            continue;
        int q = al__job_qidx(ctl, j);
        if (q >= 0)
            qpend[q] +=
                j->ntasks * (j->gpus > 0 ? (double)j->gpus
                                         : j->gpu_milli / (double)AL_GPU_MILLI);
    }
}

/* One fine row per queue and per GPU model, at t. */
static void
sample(al_ctl_t *ctl, int64_t step, int64_t t, int64_t now_ms)
{
    al__usage_t *u = &ctl->usage;
    al__waste_t *w = &ctl->waste;
    int nq = ctl->nqueues;
    double *qalloc = al_xcalloc((size_t)nq + 1, sizeof(double));
    double *qused = al_xcalloc((size_t)nq + 1, sizeof(double));
    double *qpend = al_xcalloc((size_t)nq + 1, sizeof(double));
    bool *qknown = al_xcalloc((size_t)nq + 1, sizeof(bool));
    double malloc_[AL_MAX_MODELS] = { 0 }, mused[AL_MAX_MODELS] = { 0 };
    bool mknown[AL_MAX_MODELS] = { false };

    for (size_t k = 0; k < ctl->nrunning; k++) {
        al__job_t *j = ctl->running[k];
        int q = al__job_qidx(ctl, j);
        double jused = 0;
        bool jknown = false;
        for (int ti = 0; j->tasks != NULL && ti < j->ntasks; ti++) {
            const al__task_t *tk = &j->tasks[ti];
            if (tk->done || tk->node < 0 || tk->node >= ctl->nnodes)
                continue;
            const al__node_t *n = &ctl->nodes[tk->node];
            int m = n->ngpus > 0 ? al__waste_model(w, n->gpus[0].model) : -1;
            for (int g = 0; g < n->ngpus && g < 64; g++) {
                if (!(tk->devices & (UINT64_C(1) << g)))
                    continue;
                double a = tk->gpu_milli > 0
                               ? tk->gpu_milli / (double)AL_GPU_MILLI
                               : 1;
                double x = used_of(n, g, tk, now_ms);
                if (m >= 0) {
                    malloc_[m] += a;
                    add_known(&mused[m], &mknown[m], x);
                }
                if (q >= 0)
                    add_known(&qused[q], &qknown[q], x);
                add_known(&jused, &jknown, x);
            }
        }
        /* The job's own share of the step, written with the rows in the
         * same transaction: a restart neither loses nor repeats it. */
        if (jknown) {
            j->used += jused * (double)step;
            j->used_known = true;
            al__ctl_dirty(ctl, j);
        }
    }
    pending_gpus(ctl, qpend);
    for (int q = 0; q < nq; q++) {
        const al__queue_t *qq = &ctl->queues[q];
        qalloc[q] = qq->share.allocated[AL_RES_GPU] / (double)AL_GPU_MILLI;
        double f[AL_USAGE_NF] = {
            [AL_U_GPUS] = NAN,
            [AL_U_ALLOC] = qalloc[q],
            [AL_U_USED] = qknown[q]       ? qused[q]
                          : qalloc[q] > 0 ? NAN
                                          : 0,
            [AL_U_DESERVED] =
                qq->quota[AL_RES_GPU].deserved / (double)AL_GPU_MILLI,
            [AL_U_FAIR] = qq->share.fair[AL_RES_GPU] / (double)AL_GPU_MILLI,
            [AL_U_PENDING] = qpend[q],
            [AL_U_IDLE] = NAN,
            [AL_U_WASTED] = NAN,
        };
        put_row(ctl, step, t, qq->name, "", f);
    }
    /* The counters run to the last cycle's look: the means are over the
     * time between the looks before this sample and the last. */
    double dt = u->prev_mono > 0 ? (w->last_ms - u->prev_mono) / 1000.0 : 0;
    for (int m = 0; m < w->nmodels; m++) {
        double idle = w->idle[m],
               wasted = w->waiting[m] ? (double)w->idle[m] : 0;
        if (dt > 0) { /* means over the step, from the counters */
            idle = (w->idle_s[m] - u->prev_idle_s[m]) / dt;
            wasted = (w->wasted_s[m] - u->prev_wasted_s[m]) / dt;
        }
        double f[AL_USAGE_NF] = {
            [AL_U_GPUS] = w->total[m],
            [AL_U_ALLOC] = malloc_[m],
            [AL_U_USED] = mknown[m]        ? mused[m]
                          : malloc_[m] > 0 ? NAN
                                           : 0,
            [AL_U_DESERVED] = NAN,
            [AL_U_FAIR] = NAN,
            [AL_U_PENDING] = NAN,
            [AL_U_IDLE] = idle,
            [AL_U_WASTED] = wasted,
        };
        put_row(ctl, step, t, "", w->model[m], f);
        u->prev_idle_s[m] = w->idle_s[m];
        u->prev_wasted_s[m] = w->wasted_s[m];
    }
    u->prev_mono = w->last_ms;
    free(qalloc);
    free(qused);
    free(qpend);
    free(qknown);
}

/* The coarse row of [c, c + coarse) from the fine rows there. */
static void
rollup(al_ctl_t *ctl, int64_t step, int64_t coarse, int64_t c)
{
    char a[24], b[24], x[24], y[24];
    snprintf(a, sizeof a, "%lld", (long long)step);
    snprintf(b, sizeof b, "%lld", (long long)coarse);
    snprintf(x, sizeof x, "%lld", (long long)c);
    snprintf(y, sizeof y, "%lld", (long long)c + coarse);
    const char *v[] = { a, b, x, y };
    al__store_write(ctl, "usage_rollup", 4, v);
}

static void
trim(al_ctl_t *ctl, int64_t step, int64_t before)
{
    char a[24], b[24];
    snprintf(a, sizeof a, "%lld", (long long)step);
    snprintf(b, sizeof b, "%lld", (long long)before);
    const char *v[] = { a, b };
    al__store_write(ctl, "usage_trim", 2, v);
}

void
al__usage_tick(al_ctl_t *ctl, int64_t now_ms)
{
    al__usage_t *u = &ctl->usage;
    int64_t step = ctl->opts.usage_interval_s;
    if (step <= 0 || ctl->store_failed)
        return;
    int64_t coarse = step * ctl->opts.usage_rollup;
    int64_t now = now_ms / 1000, cur = now / step * step;
    if (u->next_t == 0) { /* the first look since the start */
        int64_t last = last_row(ctl, step), lastc = last_row(ctl, coarse);
        u->next_t = last >= cur ? last + step : cur;
        /* With no coarse row yet, the fine rows a controller stopped
         * before its first rollup left are rolled up from the step of the
         * first of them: nothing sampled is left out of the coarse rows. */
        int64_t firstf = lastc >= 0 ? -1 : first_row(ctl, step);
        if (firstf < 0 || firstf > cur)
            firstf = cur;
        u->rolled_t = lastc >= 0 ? lastc : firstf / coarse * coarse - coarse;
        u->prev_mono = 0;
    }
    if (now < u->next_t)
        return;
    sample(ctl, step, cur, now_ms);
    u->next_t = cur + step;
    int64_t done = cur / coarse * coarse - coarse; /* the last ended step */
    if (done <= u->rolled_t)
        return;
    int64_t from = u->rolled_t + coarse;
    int64_t keep = ctl->opts.usage_keep_fine_days * 86400;
    if (from < done - keep)
        from = (done - keep) / coarse * coarse; /* nothing older is left */
    for (int64_t c = from; c <= done; c += coarse)
        rollup(ctl, step, coarse, c);
    u->rolled_t = done;
    /* At a coarse step's start: readers take coarse rows up to the
     * first fine row's coarse step and fine rows from it, so a coarse
     * step is either whole in fine rows or read from its coarse row. */
    trim(ctl, step, (cur - keep) / coarse * coarse);
    trim(ctl, coarse, cur - ctl->opts.usage_keep_coarse_days * 86400);
}

/* ------------------------------------------------------------------ */
/* Reading it back                                                    */

const char *const al__usage_names[AL_USAGE_NF] = {
    [AL_U_GPUS] = "gpus",       [AL_U_ALLOC] = "allocated",
    [AL_U_USED] = "used",       [AL_U_DESERVED] = "deserved",
    [AL_U_FAIR] = "fair_share", [AL_U_PENDING] = "pending",
    [AL_U_IDLE] = "idle",       [AL_U_WASTED] = "wasted",
};

/* Rows into series: one per key (a queue's name, or a model's), each a
 * bucket per `bucket` seconds holding the mean of each figure over the
 * rows in it. */
typedef struct series {
    char *key;
    double *sum; /* nb * AL_USAGE_NF */
    int *n;      /* nb * AL_USAGE_NF: rows with the figure known */
} series_t;

typedef struct gather {
    bool by_model;
    int64_t from, bucket;
    int nb;
    series_t *s, *last;
    int ns, cap;
} gather_t;

static series_t *
series_of(gather_t *g, const char *key)
{
    /* Rows come a series at a time (the store's key is step, queue,
     * model, time): the last one is the likely one. */
    if (g->last != NULL && strcmp(g->last->key, key) == 0)
        return g->last;
    for (int i = 0; i < g->ns; i++)
        if (strcmp(g->s[i].key, key) == 0)
            return g->last = &g->s[i];
    if (g->ns == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 8;
        g->s = al_xreallocarray(g->s, (size_t)g->cap, sizeof *g->s);
    }
    series_t *s = &g->s[g->ns++];
    s->key = al_xstrdup(key);
    s->sum = al_xcalloc((size_t)g->nb * AL_USAGE_NF, sizeof *s->sum);
    s->n = al_xcalloc((size_t)g->nb * AL_USAGE_NF, sizeof *s->n);
    return g->last = s;
}

/* A row: t, queue, model, then the figures in AL_U_* order. */
static int
gather_row(void *arg, int ncols, const char *const *cols)
{
    gather_t *g = arg;
    if (ncols < 3 + AL_USAGE_NF || cols[0] == NULL || cols[1] == NULL ||
        cols[2] == NULL)
        return 0;
    int64_t t = strtoll(cols[0], NULL, 10);
    int64_t b = (t - g->from) / g->bucket;
    if (b < 0 || b >= g->nb)
        return 0;
    series_t *s = series_of(g, g->by_model ? cols[2] : cols[1]);
    for (int f = 0; f < AL_USAGE_NF; f++) {
        const char *c = cols[3 + f];
        if (c == NULL)
            continue;
        s->sum[b * AL_USAGE_NF + f] += (double)strtoll(c, NULL, 10) / 1000;
        s->n[b * AL_USAGE_NF + f]++;
    }
    return 0;
}

json_t *
al__usage_series(al_ctl_t *ctl, int64_t from, int64_t to, int64_t bucket,
                 bool by_model, const char *key)
{
    int64_t step =
        ctl->opts.usage_interval_s > 0 ? ctl->opts.usage_interval_s : 60;
    int64_t coarse = step * ctl->opts.usage_rollup;
    int64_t rowstep = bucket >= coarse ? coarse : step;
    if (bucket < rowstep)
        bucket = rowstep;
    bucket = bucket / rowstep * rowstep;
    from = from / bucket * bucket;
    gather_t g = { .by_model = by_model, .from = from, .bucket = bucket };
    g.nb = (int)((to - from + bucket - 1) / bucket);
    if (g.nb < 0)
        g.nb = 0;
    char a[24], b[24], c[24];
    snprintf(a, sizeof a, "%lld", (long long)rowstep);
    snprintf(b, sizeof b, "%lld", (long long)from);
    snprintf(c, sizeof c, "%lld", (long long)to);
    const char *v[] = { a, b, c, key };
    static const char *const stmt[2][2] = {
        { "usage_rows_queues", "usage_rows_queue" },
        { "usage_rows_models", "usage_rows_model" },
    };
    if (g.nb > 0)
        al__store_read(ctl, stmt[by_model][key != NULL], key != NULL ? 4 : 3, v,
                       gather_row, &g);
    /* The coarse steps not rolled up yet (the hour under way) are read
     * from their fine rows, from the first bucket wholly after the last
     * coarse row: a query at an hourly step shows the last hour too. */
    if (g.nb > 0 && rowstep > step) {
        int64_t rolled = ctl->usage.next_t != 0 ? ctl->usage.rolled_t
                                                : last_row(ctl, coarse);
        int64_t fine = rolled >= 0 ? rolled + coarse : from;
        if (fine < from)
            fine = from;
        fine = from + (fine - from + bucket - 1) / bucket * bucket;
        if (fine < to) {
            snprintf(a, sizeof a, "%lld", (long long)step);
            snprintf(b, sizeof b, "%lld", (long long)fine);
            al__store_read(ctl, stmt[by_model][key != NULL],
                           key != NULL ? 4 : 3, v, gather_row, &g);
        }
    }

    json_t *out = json_pack("{s:I, s:I, s:I, s:s}", "from", (json_int_t)from,
                            "to", (json_int_t)to, "step", (json_int_t)bucket,
                            "by", by_model ? "model" : "queue");
    json_t *arr = json_array();
    for (int i = 0; i < g.ns; i++) {
        series_t *s = &g.s[i];
        json_t *o = json_pack("{s:s}", by_model ? "model" : "queue", s->key);
        json_t *ts = json_array();
        json_t *col[AL_USAGE_NF];
        for (int f = 0; f < AL_USAGE_NF; f++)
            col[f] = json_array();
        for (int k = 0; k < g.nb; k++) {
            bool any = false;
            for (int f = 0; f < AL_USAGE_NF; f++)
                any |= s->n[k * AL_USAGE_NF + f] > 0;
            if (!any)
                continue; /* no sample there: a gap, not a zero */
            json_array_append_new(ts, json_integer(from + k * bucket));
            for (int f = 0; f < AL_USAGE_NF; f++) {
                int n = s->n[k * AL_USAGE_NF + f];
                json_array_append_new(
                    col[f], n > 0 ? json_real(s->sum[k * AL_USAGE_NF + f] / n)
                                  : json_null());
            }
        }
        json_object_set_new(o, "t", ts);
        for (int f = 0; f < AL_USAGE_NF; f++) {
            bool keep =
                by_model
                    ? (f == AL_U_GPUS || f == AL_U_ALLOC || f == AL_U_USED ||
                       f == AL_U_IDLE || f == AL_U_WASTED)
                    : (f != AL_U_GPUS && f != AL_U_IDLE && f != AL_U_WASTED);
            if (keep)
                json_object_set_new(o, al__usage_names[f], col[f]);
            else
                json_decref(col[f]);
        }
        json_array_append_new(arr, o);
        free(s->key);
        free(s->sum);
        free(s->n);
    }
    free(g.s);
    json_object_set_new(out, "series", arr);
    return out;
}
