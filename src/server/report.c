/*
 * report.c -- accounting over any period (GET /v1/report, `allot
 * report`): GPU-hours allocated, from the job history the store keeps (a
 * run is its "started" event to the event that ended it, its GPUs those of
 * the job, cut to the period); GPU-hours used, by queue and model from the
 * usage history's telemetry, by user, class and node (and in a user's own
 * report) from the jobs' used GPU-seconds that history.c adds up: a job's
 * used, times the share of its allocated GPU-seconds (all its runs, to
 * now) that falls in the period and in the group (a task's node, by
 * node); jobs started (first started in the period), completed, failed
 * (failed, out of memory, timed out or evicted for good; those out of
 * memory counted apart too), cancelled; preemptions (runs
 * ended by the scheduler for other work); mean and p95 wait (submission
 * to first start, of the jobs first started in the period); and the
 * wastage ratio from the usage history.
 *
 * May call: store.c (the named statements), table.c; it changes nothing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "server_int.h"
#include "xmalloc.h"

typedef struct group {
    char *key;
    double gpu_s, used_s;
    bool used_known;
    int64_t started, completed, failed, cancelled, preempted;
    int64_t out_of_memory; /* of the failed, those out of memory */
    double *waits;
    size_t nwaits, wcap;
    double wasted_s, cap_s; /* model groups: from the usage history */
} group_t;

typedef struct report {
    al_ctl_t *ctl;
    int64_t since, until, now; /* ms */
    int by;                    /* BY_* */
    const char *user;
    group_t *g;
    int ng, gcap;
    group_t total;
    /* The job whose events are being read, and its open run. */
    uint64_t job;
    const al__job_t *j;
    int64_t run_start;
    char *placement;
    int run_tasks; /* the open run's tasks: an elastic job's vary */
    bool started_once;
    /* The job's allocated GPU-seconds over all its runs, uncut (its open
     * one to wall_now), and what of them fell in the period: by group
     * (index, GPU-seconds) and in all (jin).  Its used GPU-seconds go to
     * them in those shares when its events end, where jobs_used. */
    bool jobs_used;
    int64_t wall_now, all_start;
    int all_tasks;
    double jall, jin;
    int *pidx;
    double *psec;
    size_t np, pcap;
} report_t;

enum { BY_QUEUE, BY_USER, BY_CLASS, BY_MODEL, BY_NODE };
static const char *const by_names[] = { "queue", "user", "class", "model",
                                        "node" };

/* The group of key, or NULL when there is none yet. */
static group_t *
find_group(report_t *r, const char *key)
{
    for (int i = 0; i < r->ng; i++)
        if (strcmp(r->g[i].key, key) == 0)
            return &r->g[i];
    return NULL;
}

static group_t *
group_of(report_t *r, const char *key)
{
    group_t *found = find_group(r, key);
    if (found != NULL)
        return found;
    if (r->ng == r->gcap) {
        r->gcap = r->gcap ? 2 * r->gcap : 16;
        r->g = al_xreallocarray(r->g, (size_t)r->gcap, sizeof *r->g);
    }
    group_t *g = &r->g[r->ng++];
    memset(g, 0, sizeof *g);
    g->key = al_xstrdup(key);
    return g;
}

static void
add_wait(group_t *g, double w)
{
    if (g->nwaits == g->wcap) {
        g->wcap = g->wcap ? 2 * g->wcap : 16;
        g->waits = al_xreallocarray(g->waits, g->wcap, sizeof *g->waits);
    }
    g->waits[g->nwaits++] = w;
}

/* GPUs of one task of job j. */
static double
task_gpus(const al__job_t *j)
{
    return j->gpus > 0 ? (double)j->gpus : j->gpu_milli / (double)AL_GPU_MILLI;
}

/* The group of job j for a job-level figure (not model or node). */
static group_t *
job_group(report_t *r, const al__job_t *j)
{
    switch (r->by) {
    case BY_USER:
        return group_of(r, j->user);
    case BY_CLASS:
        return group_of(r, al__jclasses[j->cls].name);
    case BY_QUEUE:
        return group_of(r, j->queue);
    default:
        return NULL;
    }
}

/* The model of a node by name, "unknown" when it is gone or has none. */
static const char *
node_model(const al_ctl_t *ctl, const char *name)
{
    for (int i = 0; i < ctl->nnodes; i++)
        if (strcmp(ctl->nodes[i].name, name) == 0)
            return ctl->nodes[i].ngpus > 0 && ctl->nodes[i].gpus[0].model &&
                           ctl->nodes[i].gpus[0].model[0]
                       ? ctl->nodes[i].gpus[0].model
                       : "unknown";
    return "unknown";
}

/* Adds x allocated GPU-seconds of the job being read to group g, keeping
 * its share for the job's used GPU-seconds. */
static void
alloc_to(report_t *r, group_t *g, double x)
{
    g->gpu_s += x;
    if (!r->jobs_used)
        return;
    if (r->np == r->pcap) {
        r->pcap = r->pcap ? 2 * r->pcap : 16;
        r->pidx = al_xreallocarray(r->pidx, r->pcap, sizeof *r->pidx);
        r->psec = al_xreallocarray(r->psec, r->pcap, sizeof *r->psec);
    }
    r->pidx[r->np] = (int)(g - r->g);
    r->psec[r->np++] = x;
}

/* Adds a run's GPU-seconds within the period: to the job's group, or, by
 * model or node, to each task's node (from the placement "task 0 on n1
 * gpus 0,1; task 1 on n2 ..."). */
static void
add_run(report_t *r, int64_t from, int64_t to)
{
    const al__job_t *j = r->j;
    if (from < r->since)
        from = r->since;
    if (to > r->until)
        to = r->until;
    if (to <= from)
        return;
    double secs = (to - from) / 1000.0, g = task_gpus(j);
    r->total.gpu_s += secs * g * r->run_tasks;
    r->jin += secs * g * r->run_tasks;
    if (r->by != BY_MODEL && r->by != BY_NODE) {
        alloc_to(r, job_group(r, j), secs * g * r->run_tasks);
        return;
    }
    const char *p = r->placement != NULL ? r->placement : "";
    int found = 0;
    while ((p = strstr(p, " on ")) != NULL) {
        p += 4;
        size_t n = strcspn(p, " ;");
        char node[256];
        snprintf(node, sizeof node, "%.*s", (int)n, p);
        const char *key = r->by == BY_NODE ? node : node_model(r->ctl, node);
        alloc_to(r, group_of(r, key), secs * g);
        found++;
    }
    if (found == 0)
        alloc_to(r, group_of(r, "unknown"), secs * g * r->run_tasks);
}

/* The group a job's counts go to: its own, or by model or node, that of
 * the node of its last run's first task. */
static group_t *
count_group(report_t *r)
{
    if (r->by != BY_MODEL && r->by != BY_NODE)
        return job_group(r, r->j);
    const char *p = r->placement != NULL ? strstr(r->placement, " on ") : NULL;
    if (p == NULL)
        return group_of(r, "unknown");
    char node[256];
    snprintf(node, sizeof node, "%.*s", (int)strcspn(p + 4, " ;"), p + 4);
    return group_of(r, r->by == BY_NODE ? node : node_model(r->ctl, node));
}

static bool
in_period(const report_t *r, int64_t t)
{
    return t >= r->since && t < r->until;
}

/* The end of the events of the job being read: a run still open runs on
 * to now. */
static void
end_job(report_t *r)
{
    const al__job_t *j = r->j;
    if (j != NULL && r->run_start > 0)
        add_run(r, r->run_start, r->now);
    if (j != NULL && r->all_start > 0 && r->wall_now > r->all_start)
        r->jall +=
            (r->wall_now - r->all_start) / 1000.0 * task_gpus(j) * r->all_tasks;
    if (j != NULL && j->used_known && r->jall > 0) {
        double e = j->used / r->jall; /* used per allocated GPU-second */
        for (size_t i = 0; i < r->np; i++) {
            r->g[r->pidx[i]].used_s += e * r->psec[i];
            r->g[r->pidx[i]].used_known = true;
        }
        if (r->user != NULL && r->jin > 0) {
            r->total.used_s += e * r->jin;
            r->total.used_known = true;
        }
    }
    r->np = 0;
    r->jall = r->jin = 0;
    r->all_start = 0;
    free(r->placement);
    r->placement = NULL;
    r->run_start = 0;
    r->j = NULL;
    r->started_once = false;
}

/* Whether event ev of a job ends its run, if one is open: every event
 * does but those that leave a running job running ("resized" is a
 * restart at the new size, and ends it). */
static bool
ends_run(const char *ev)
{
    static const char *const stay[] = { "submitted",    "task_exit",
                                        "idle_warning", "held",
                                        "released",     "suspended",
                                        "resumed" };
    for (size_t i = 0; i < sizeof stay / sizeof stay[0]; i++)
        if (strcmp(ev, stay[i]) == 0)
            return false;
    return true;
}

/* The tasks of a run by its placement: one per " on ". */
static int
placement_tasks(const char *p)
{
    int n = 0;
    while (p != NULL && (p = strstr(p, " on ")) != NULL) {
        n++;
        p += 4;
    }
    return n;
}

/* Event ev at t of job j for its allocated GPU-seconds over all its runs,
 * in the period or not. */
static void
all_runs(report_t *r, const al__job_t *j, int64_t t, const char *ev,
         const char *detail)
{
    bool start = strcmp(ev, "started") == 0;
    if (!start && !ends_run(ev))
        return;
    if (r->all_start > 0 && t > r->all_start)
        r->jall += (t - r->all_start) / 1000.0 * task_gpus(j) * r->all_tasks;
    r->all_start = 0;
    if (start) {
        r->all_start = t;
        r->all_tasks = placement_tasks(detail);
        if (r->all_tasks == 0)
            r->all_tasks = j->ntasks;
    }
}

/* One event: job id, time (ms), event, detail. */
static int
event_row(void *arg, int ncols, const char *const *cols)
{
    report_t *r = arg;
    if (ncols < 3 || cols[0] == NULL || cols[1] == NULL || cols[2] == NULL)
        return 0;
    uint64_t id = strtoull(cols[0], NULL, 10);
    int64_t t = strtoll(cols[1], NULL, 10);
    const char *ev = cols[2];
    if (id != r->job) {
        end_job(r);
        r->job = id;
        const al__job_t *j = al__ctl_job(r->ctl, id);
        if (j != NULL && (r->user == NULL || strcmp(j->user, r->user) == 0))
            r->j = j;
    }
    const al__job_t *j = r->j;
    if (j != NULL && r->jobs_used)
        all_runs(r, j, t, ev, ncols > 3 ? cols[3] : NULL);
    if (j == NULL || t >= r->until)
        return 0;
    group_t *g = NULL;
    if (strcmp(ev, "started") == 0) {
        if (r->run_start > 0)
            add_run(r, r->run_start, t); /* never two opens; be safe */
        r->run_start = t;
        free(r->placement);
        r->placement =
            ncols > 3 && cols[3] != NULL ? al_xstrdup(cols[3]) : NULL;
        /* A task per " on " of the placement: an elastic job's size is
         * that of each run, not its last. */
        r->run_tasks = placement_tasks(r->placement);
        if (r->run_tasks == 0)
            r->run_tasks = j->ntasks;
        if (!r->started_once && in_period(r, t)) {
            double w = (t - j->submit_ms) / 1000.0;
            g = count_group(r);
            r->total.started++;
            add_wait(&r->total, w);
            if (g != NULL) {
                g->started++;
                add_wait(g, w);
            }
        }
        r->started_once = true;
        return 0;
    }
    /* Every other event of a running job ends its run: new ways to end
     * one (idle reclaim's idle_timeout, say) need no change here. */
    if (!ends_run(ev))
        return 0;
    bool preempt = strcmp(ev, "preempted") == 0 || strcmp(ev, "evicted") == 0;
    g = count_group(r);
    if (r->run_start > 0)
        add_run(r, r->run_start, t);
    r->run_start = 0;
    if (!in_period(r, t))
        return 0;
    int64_t *c[2] = { NULL, NULL };
    if (strcmp(ev, "preempted") == 0)
        c[0] = &r->total.preempted, c[1] = g ? &g->preempted : NULL;
    else if (strcmp(ev, "completed") == 0)
        c[0] = &r->total.completed, c[1] = g ? &g->completed : NULL;
    else if (strcmp(ev, "cancelled") == 0)
        c[0] = &r->total.cancelled, c[1] = g ? &g->cancelled : NULL;
    else if (strcmp(ev, "out_of_memory") == 0) {
        c[0] = &r->total.failed, c[1] = g ? &g->failed : NULL;
        r->total.out_of_memory++;
        if (g != NULL)
            g->out_of_memory++;
    } else if (strcmp(ev, "failed") == 0 || strcmp(ev, "timeout") == 0 ||
               strcmp(ev, "idle_timeout") == 0 || preempt) {
        c[0] = &r->total.failed, c[1] = g ? &g->failed : NULL;
        if (preempt) { /* evicted for good */
            r->total.preempted++;
            if (g != NULL)
                g->preempted++;
        }
    }
    for (int k = 0; k < 2; k++)
        if (c[k] != NULL)
            (*c[k])++;
    return 0;
}

/* Usage rows (t, queue, model, figures...) of one step: used GPU-seconds
 * by queue or model, and the wastage's. */
typedef struct usage_read {
    report_t *r;
    int64_t step;
} usage_read_t;

/* A stored figure (thousandths of a GPU) in GPUs. */
static double
gpus_of(const char *c)
{
    return (double)strtoll(c, NULL, 10) / 1000;
}

static int
usage_row(void *arg, int ncols, const char *const *cols)
{
    usage_read_t *ur = arg;
    report_t *r = ur->r;
    if (ncols < 3 + AL_USAGE_NF || cols[1] == NULL || cols[2] == NULL)
        return 0;
    bool model_row = cols[1][0] == '\0';
    /* Used GPUs count where GPUs were allocated and their telemetry known:
     * efficiency is unknown, not 0, on GPUs that send none. */
    const char *used = cols[3 + AL_U_USED];
    const char *alloc = cols[3 + AL_U_ALLOC];
    if (alloc == NULL || gpus_of(alloc) <= 0)
        used = NULL;
    double s = (double)ur->step;
    if (model_row) {
        if (cols[3 + AL_U_GPUS] != NULL)
            r->total.cap_s += gpus_of(cols[3 + AL_U_GPUS]) * s;
        if (cols[3 + AL_U_WASTED] != NULL)
            r->total.wasted_s += gpus_of(cols[3 + AL_U_WASTED]) * s;
        if (used != NULL && r->user == NULL) {
            r->total.used_s += gpus_of(used) * s;
            r->total.used_known = true;
        }
    }
    group_t *g = NULL;
    const char *key = r->by == BY_MODEL && model_row ? cols[2]
                      : r->by == BY_QUEUE && !model_row && cols[2][0] == '\0'
                          ? cols[1]
                          : NULL;
    /* A user's rows are those of their own jobs: the usage history (the
     * whole cluster's) adds to them but makes none. */
    if (key != NULL)
        g = r->user == NULL ? group_of(r, key) : find_group(r, key);
    if (g == NULL)
        return 0;
    if (used != NULL && r->user == NULL) {
        g->used_s += gpus_of(used) * s;
        g->used_known = true;
    }
    if (model_row) {
        if (cols[3 + AL_U_GPUS] != NULL)
            g->cap_s += gpus_of(cols[3 + AL_U_GPUS]) * s;
        if (cols[3 + AL_U_WASTED] != NULL)
            g->wasted_s += gpus_of(cols[3 + AL_U_WASTED]) * s;
    }
    return 0;
}

/* Reads the usage rows of [from, to) (seconds) of one step: the models'
 * (the cluster's wastage and used GPUs) and, by queue, the queues'. */
static void
read_usage(report_t *r, int64_t step, int64_t from, int64_t to)
{
    if (to <= from)
        return;
    char a[24], b[24], c[24];
    snprintf(a, sizeof a, "%lld", (long long)step);
    snprintf(b, sizeof b, "%lld", (long long)from);
    snprintf(c, sizeof c, "%lld", (long long)to);
    const char *v[] = { a, b, c };
    usage_read_t ur = { r, step };
    al__store_read(r->ctl, "usage_rows_models", 3, v, usage_row, &ur);
    if (r->by == BY_QUEUE)
        al__store_read(r->ctl, "usage_rows_queues", 3, v, usage_row, &ur);
}

static int
first_row(void *arg, int ncols, const char *const *cols)
{
    int64_t *v = arg;
    if (ncols > 0 && cols[0] != NULL)
        *v = strtoll(cols[0], NULL, 10);
    return 1;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static json_t *
num_or_null(bool known, double v)
{
    return known && !isnan(v) ? json_real(v) : json_null();
}

static json_t *
group_json(const report_t *r, group_t *g, const char *key)
{
    double mean = 0, p95 = 0;
    if (g->nwaits > 0) {
        qsort(g->waits, g->nwaits, sizeof *g->waits, cmp_double);
        for (size_t i = 0; i < g->nwaits; i++)
            mean += g->waits[i];
        mean /= (double)g->nwaits;
        size_t k = (size_t)ceil(0.95 * (double)g->nwaits);
        p95 = g->waits[k > 0 ? k - 1 : 0];
    }
    /* The usage history's figures are the cluster's, never in a user's
     * report (usage_row); the jobs' are. */
    bool used = g->used_known;
    json_t *o = json_pack(
        "{s:s, s:f, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
        "key", key, "gpu_hours", g->gpu_s / 3600.0, "used_gpu_hours",
        num_or_null(used, g->used_s / 3600.0), "efficiency",
        num_or_null(used && g->gpu_s > 0, g->used_s / g->gpu_s), "started",
        (json_int_t)g->started, "completed", (json_int_t)g->completed, "failed",
        (json_int_t)g->failed, "cancelled", (json_int_t)g->cancelled,
        "preempted", (json_int_t)g->preempted, "out_of_memory",
        (json_int_t)g->out_of_memory, "wait_mean_s",
        num_or_null(g->nwaits > 0, mean), "wait_p95_s",
        num_or_null(g->nwaits > 0, p95), "wastage_ratio",
        num_or_null(g->cap_s > 0, g->wasted_s / g->cap_s));
    return o;
}

static int
cmp_key(const void *a, const void *b)
{
    return strcmp(((const group_t *)a)->key, ((const group_t *)b)->key);
}

json_t *
al__usage_report(al_ctl_t *ctl, int64_t since, int64_t until, const char *by,
                 const char *user)
{
    report_t r = { .ctl = ctl,
                   .since = since,
                   .until = until,
                   .now = al_clock_ms(),
                   .user = user };
    r.by = BY_QUEUE;
    for (int i = 0; i < (int)(sizeof by_names / sizeof by_names[0]); i++)
        if (by != NULL && strcmp(by, by_names[i]) == 0)
            r.by = i;
    r.wall_now = r.now;
    if (r.now > until)
        r.now = until;
    r.jobs_used =
        user != NULL || r.by == BY_USER || r.by == BY_CLASS || r.by == BY_NODE;

    /* Jobs are numbered in submission order: the first that may have run
     * in the period is the first not ended before it. */
    uint64_t first = 0;
    while (first < ctl->njobs &&
           (ctl->jobs[first] == NULL || ctl->jobs[first]->submit_ms >= until ||
            (ctl->jobs[first]->state >= JS_COMPLETED &&
             ctl->jobs[first]->end_ms < since)))
        first++;
    if (first < ctl->njobs) {
        char a[24];
        snprintf(a, sizeof a, "%llu", (unsigned long long)first + 1);
        const char *v[] = { a };
        al__store_read(ctl, "events_from", 1, v, event_row, &r);
        end_job(&r);
    }
    free(r.pidx);
    free(r.psec);

    /* The usage history: fine rows where they are kept, coarse ones
     * before the first fine one. */
    int64_t step =
        ctl->opts.usage_interval_s > 0 ? ctl->opts.usage_interval_s : 60;
    int64_t coarse = step * ctl->opts.usage_rollup;
    int64_t from = since / 1000, to = (until + 999) / 1000, ffirst = -1;
    char st[24];
    snprintf(st, sizeof st, "%lld", (long long)step);
    const char *v[] = { st };
    al__store_read(ctl, "usage_first", 1, v, first_row, &ffirst);
    if (ffirst < 0)
        ffirst = to;
    read_usage(&r, coarse, from, ffirst < to ? ffirst / coarse * coarse : to);
    read_usage(&r, step, ffirst > from ? ffirst : from, to);

    qsort(r.g, (size_t)r.ng, sizeof *r.g, cmp_key);
    json_t *rows = json_array();
    for (int i = 0; i < r.ng; i++) {
        json_array_append_new(rows, group_json(&r, &r.g[i], r.g[i].key));
        free(r.g[i].key);
        free(r.g[i].waits);
    }
    free(r.g);
    json_t *total = group_json(&r, &r.total, "total");
    free(r.total.waits);
    return json_pack("{s:I, s:I, s:s, s:o, s:o}", "since", (json_int_t)since,
                     "until", (json_int_t)until, "by", by_names[r.by], "rows",
                     rows, "total", total);
}
