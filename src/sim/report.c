/*
 * report.c -- what a simulation run prints: the --json object, the
 * human-readable tables and the self-contained HTML report with inline SVG
 * plots.  Every figure is defined in docs/simulation.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

/* ------------------------------------------------------------------ */
/* Figures                                                            */

static int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted values (0 when n is 0). */
static double
pct(const double *v, int n, double p)
{
    if (n == 0)
        return 0;
    int k = (int)ceil(p / 100.0 * n) - 1;
    if (k < 0)
        k = 0;
    if (k >= n)
        k = n - 1;
    return v[k];
}

static double
mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n ? s / n : 0;
}

/* GPU-size buckets for the per-size breakdown. */
static const struct bucket {
    const char *name;
    int64_t lo, hi; /* milli-GPUs, inclusive */
} buckets[] = {
    { "<1", 0, 999 },          { "1", 1000, 1000 },
    { "2-4", 2000, 4000 },     { "5-8", 5000, 8000 },
    { "9-16", 9000, 16000 },   { "17-32", 17000, 32000 },
    { "33-64", 33000, 64000 }, { ">64", 65000, INT64_MAX },
};
#define NBUCKETS ((int)(sizeof(buckets) / sizeof(buckets[0])))

/* Figures over the subset of jobs for which keep(i) holds. */
typedef struct group {
    int jobs, completed, unschedulable;
    double avg_jct, p50_jct, p95_jct, p99_jct, avg_queue, p95_queue;
    double speed; /* mean duration / JCT */
} group_t;

static void
group_figures(const al_sim_result_t *r, const int *sel, int nsel, group_t *g)
{
    memset(g, 0, sizeof(*g));
    double *jct = al_xmalloc((size_t)(nsel + 1) * sizeof(double));
    double *q = al_xmalloc((size_t)(nsel + 1) * sizeof(double));
    double speed = 0;
    int n = 0;
    for (int k = 0; k < nsel; k++) {
        const al_sim_job_t *j = &r->jobs[sel[k]];
        const al_trace_job_t *tj = &r->trace->jobs[sel[k]];
        g->jobs++;
        if (j->unschedulable)
            g->unschedulable++;
        if (j->end < 0)
            continue;
        jct[n] = (double)(j->end - tj->submit);
        q[n] = (double)j->pending;
        speed += jct[n] > 0 ? (double)tj->duration / jct[n] : 1.0;
        n++;
    }
    g->completed = n;
    g->avg_jct = mean(jct, n);
    g->avg_queue = mean(q, n);
    g->speed = n ? speed / n : 0;
    qsort(jct, (size_t)n, sizeof(double), cmp_dbl);
    qsort(q, (size_t)n, sizeof(double), cmp_dbl);
    g->p50_jct = pct(jct, n, 50);
    g->p95_jct = pct(jct, n, 95);
    g->p99_jct = pct(jct, n, 99);
    g->p95_queue = pct(q, n, 95);
    free(jct);
    free(q);
}

static int
select_queue(const al_sim_result_t *r, int q, int *sel)
{
    int n = 0;
    for (int i = 0; i < r->njobs; i++)
        if (r->jobs[i].queue == q)
            sel[n++] = i;
    return n;
}

static int
select_bucket(const al_sim_result_t *r, int b, int *sel)
{
    int n = 0;
    for (int i = 0; i < r->njobs; i++) {
        int64_t g = r->trace->jobs[i].gpu_milli;
        if (g >= buckets[b].lo && g <= buckets[b].hi)
            sel[n++] = i;
    }
    return n;
}

void
al_report_summary(const al_sim_result_t *r, al_sim_summary_t *s)
{
    memset(s, 0, sizeof(*s));
    int *sel = al_xmalloc((size_t)(r->njobs + 1) * sizeof(int));
    for (int i = 0; i < r->njobs; i++)
        sel[i] = i;
    group_t all;
    group_figures(r, sel, r->njobs, &all);
    s->jobs = all.jobs;
    s->completed = all.completed;
    s->unschedulable = all.unschedulable;
    s->avg_jct = all.avg_jct;
    s->p50_jct = all.p50_jct;
    s->p95_jct = all.p95_jct;
    s->p99_jct = all.p99_jct;
    s->avg_queue = all.avg_queue;
    s->p95_queue = all.p95_queue;
    /* Worst queue and Jain's index over the queues with completed jobs. */
    double sx = 0, sxx = 0;
    int nx = 0;
    for (int q = 0; q < r->nqueues; q++) {
        group_t g;
        int n = select_queue(r, q, sel);
        group_figures(r, sel, n, &g);
        if (g.completed == 0)
            continue;
        if (g.avg_queue > s->worst_queue_avg_queue)
            s->worst_queue_avg_queue = g.avg_queue;
        sx += g.speed;
        sxx += g.speed * g.speed;
        nx++;
    }
    s->jain_fairness = sxx > 0 ? sx * sx / (nx * sxx) : 1.0;
    free(sel);
    s->makespan = (double)(r->t_last - r->t_first);
    double cap_s = (double)r->capacity / AL_GPU_MILLI * s->makespan;
    s->gpu_alloc_ratio = cap_s > 0 ? r->alloc_gpu_s / cap_s : 0;
    s->wastage_ratio = s->makespan > 0 ? r->wasted_s / s->makespan : 0;
    s->wastage_gpu_ratio = cap_s > 0 ? r->wasted_gpu_s / cap_s : 0;
    s->preemptions = r->preemptions;
    s->lost_gpu_hours = r->lost_gpu_s / 3600;
    s->sim_wall_s = r->wall_s;
    s->cycles = r->cycles;
    s->avg_cycle_ms = r->cycles ? r->core_ms / (double)r->cycles : 0;
}

/* ------------------------------------------------------------------ */
/* JSON                                                               */

static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void
json_group(FILE *f, const group_t *g)
{
    fprintf(f,
            "\"jobs\":%d,\"completed\":%d,\"unschedulable\":%d,"
            "\"avg_jct_s\":%.1f,\"p95_jct_s\":%.1f,\"avg_queue_s\":%.1f,"
            "\"p95_queue_s\":%.1f",
            g->jobs, g->completed, g->unschedulable, g->avg_jct, g->p95_jct,
            g->avg_queue, g->p95_queue);
}

void
al_report_json(FILE *f, const al_sim_result_t *r)
{
    al_sim_summary_t s;
    al_report_summary(r, &s);
    fprintf(f, "{\"policy\":");
    json_str(f, al_policy_name(r->policy));
    fprintf(f,
            ",\"jobs\":%d,\"completed\":%d,\"unschedulable\":%d,"
            "\"avg_jct_s\":%.1f,\"p50_jct_s\":%.1f,\"p95_jct_s\":%.1f,"
            "\"p99_jct_s\":%.1f,\"avg_queue_s\":%.1f,\"p95_queue_s\":%.1f,"
            "\"worst_queue_avg_queue_s\":%.1f,\"makespan_s\":%.0f,"
            "\"gpu_alloc_ratio\":%.6f,\"wastage_ratio\":%.6f,"
            "\"wastage_gpu_ratio\":%.6f,\"preemptions\":%lld,"
            "\"lost_gpu_hours\":%.3f,\"jain_fairness\":%.6f,"
            "\"sim_wall_s\":%.3f,\"cycles\":%lld,\"avg_cycle_ms\":%.4f",
            s.jobs, s.completed, s.unschedulable, s.avg_jct, s.p50_jct,
            s.p95_jct, s.p99_jct, s.avg_queue, s.p95_queue,
            s.worst_queue_avg_queue, s.makespan, s.gpu_alloc_ratio,
            s.wastage_ratio, s.wastage_gpu_ratio, (long long)s.preemptions,
            s.lost_gpu_hours, s.jain_fairness, s.sim_wall_s,
            (long long)s.cycles, s.avg_cycle_ms);
    fprintf(f, ",\"capacity_gpus\":%.3f", (double)r->capacity / AL_GPU_MILLI);
    int *sel = al_xmalloc((size_t)(r->njobs + 1) * sizeof(int));
    fprintf(f, ",\"per_queue\":[");
    double tot_alloc = 0, tot_fair = 0;
    for (int q = 0; q < r->nqueues; q++) {
        tot_alloc += r->queues[q].alloc_gpu_s;
        tot_fair += r->queues[q].fair_gpu_s;
    }
    for (int q = 0; q < r->nqueues; q++) {
        const al_sim_queue_t *rq = &r->queues[q];
        group_t g;
        group_figures(r, sel, select_queue(r, q, sel), &g);
        fprintf(f, "%s{\"queue\":", q ? "," : "");
        json_str(f, rq->name);
        fprintf(f, ",\"deserved_gpus\":%.3f,", rq->deserved_gpus);
        json_group(f, &g);
        fprintf(f,
                ",\"gpu_hours\":%.1f,\"alloc_share\":%.6f,"
                "\"fair_share\":%.6f}",
                rq->alloc_gpu_s / 3600,
                tot_alloc > 0 ? rq->alloc_gpu_s / tot_alloc : 0,
                tot_fair > 0 ? rq->fair_gpu_s / tot_fair : 0);
    }
    fprintf(f, "],\"per_size\":[");
    int nb = 0;
    for (int b = 0; b < NBUCKETS; b++) {
        int n = select_bucket(r, b, sel);
        if (n == 0)
            continue;
        group_t g;
        group_figures(r, sel, n, &g);
        fprintf(f, "%s{\"gpus\":\"%s\",", nb++ ? "," : "", buckets[b].name);
        json_group(f, &g);
        fputc('}', f);
    }
    fprintf(f, "]}\n");
    free(sel);
}

void
al_report_jobs_csv(FILE *f, const al_sim_result_t *r)
{
    fprintf(f, "job_id,queue,gpus,submit_s,duration_s,first_start_s,end_s,"
               "jct_s,queue_s,preemptions,lost_gpu_s,unschedulable\n");
    for (int i = 0; i < r->njobs; i++) {
        const al_sim_job_t *j = &r->jobs[i];
        const al_trace_job_t *tj = &r->trace->jobs[i];
        /* job ids come from a validated trace: no control characters; quote
         * them since they may hold commas. */
        fputc('"', f);
        for (const char *p = tj->id; *p; p++) {
            if (*p == '"')
                fputc('"', f);
            fputc(*p, f);
        }
        fprintf(f, "\",%s,%g,%lld,%lld,", r->queues[j->queue].name,
                (double)tj->gpu_milli / AL_GPU_MILLI, (long long)tj->submit,
                (long long)tj->duration);
        if (j->first_start >= 0)
            fprintf(f, "%lld", (long long)j->first_start);
        fputc(',', f);
        if (j->end >= 0)
            fprintf(f, "%lld,%lld", (long long)j->end,
                    (long long)(j->end - tj->submit));
        else
            fputc(',', f);
        fprintf(f, ",%lld,%d,%.0f,%d\n", (long long)j->pending, j->preemptions,
                (double)j->lost / AL_GPU_MILLI, j->unschedulable ? 1 : 0);
    }
}

/* ------------------------------------------------------------------ */
/* Tables                                                             */

static void
hms(char *buf, size_t len, double s)
{
    if (s < 3600)
        snprintf(buf, len, "%.0fs", s);
    else if (s < 86400 * 2)
        snprintf(buf, len, "%.2fh", s / 3600);
    else
        snprintf(buf, len, "%.2fd", s / 86400);
}

void
al_report_table(FILE *f, const al_sim_result_t *r)
{
    al_sim_summary_t s;
    al_report_summary(r, &s);
    char a[32], b[32], c[32], d[32];
    fprintf(f,
            "policy %s: %d jobs, %d completed, %d unschedulable, "
            "%.0f GPUs\n",
            al_policy_name(r->policy), s.jobs, s.completed, s.unschedulable,
            (double)r->capacity / AL_GPU_MILLI);
    hms(a, sizeof a, s.avg_jct);
    hms(b, sizeof b, s.p50_jct);
    hms(c, sizeof c, s.p95_jct);
    hms(d, sizeof d, s.p99_jct);
    fprintf(f, "  JCT            avg %s  p50 %s  p95 %s  p99 %s\n", a, b, c, d);
    hms(a, sizeof a, s.avg_queue);
    hms(b, sizeof b, s.p95_queue);
    hms(c, sizeof c, s.worst_queue_avg_queue);
    fprintf(f, "  queueing       avg %s  p95 %s  worst queue avg %s\n", a, b,
            c);
    hms(a, sizeof a, s.makespan);
    fprintf(f,
            "  makespan %s  GPU allocation %.1f%%  wastage %.2f%% of time "
            "(%.2f%% of GPU-time)\n",
            a, 100 * s.gpu_alloc_ratio, 100 * s.wastage_ratio,
            100 * s.wastage_gpu_ratio);
    fprintf(f,
            "  preemptions %lld  lost %.1f GPU-h  Jain %.3f  cycles %lld "
            "(%.3f ms avg)  wall %.2fs\n",
            (long long)s.preemptions, s.lost_gpu_hours, s.jain_fairness,
            (long long)s.cycles, s.avg_cycle_ms, s.sim_wall_s);
    int *sel = al_xmalloc((size_t)(r->njobs + 1) * sizeof(int));
    fprintf(f, "  %-16s %9s %7s %7s %7s %9s %9s %9s\n", "queue", "deserved",
            "jobs", "done", "unsched", "avg JCT", "avg wait", "p95 wait");
    for (int q = 0; q < r->nqueues; q++) {
        group_t g;
        group_figures(r, sel, select_queue(r, q, sel), &g);
        hms(a, sizeof a, g.avg_jct);
        hms(b, sizeof b, g.avg_queue);
        hms(c, sizeof c, g.p95_queue);
        fprintf(f, "  %-16.16s %9.1f %7d %7d %7d %9s %9s %9s\n",
                r->queues[q].name, r->queues[q].deserved_gpus, g.jobs,
                g.completed, g.unschedulable, a, b, c);
    }
    fprintf(f, "  %-16s %9s %7s %7s %7s %9s %9s %9s\n", "GPUs", "", "jobs",
            "done", "unsched", "avg JCT", "avg wait", "p95 wait");
    for (int k = 0; k < NBUCKETS; k++) {
        int n = select_bucket(r, k, sel);
        if (n == 0)
            continue;
        group_t g;
        group_figures(r, sel, n, &g);
        hms(a, sizeof a, g.avg_jct);
        hms(b, sizeof b, g.avg_queue);
        hms(c, sizeof c, g.p95_queue);
        fprintf(f, "  %-16s %9s %7d %7d %7d %9s %9s %9s\n", buckets[k].name, "",
                g.jobs, g.completed, g.unschedulable, a, b, c);
    }
    free(sel);
}

/* ------------------------------------------------------------------ */
/* HTML                                                               */

static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c",
                                      "#ff7f0e", "#9467bd", "#8c564b" };
#define NCOLORS ((int)(sizeof(colors) / sizeof(colors[0])))

static void
html_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* Plot area of every chart. */
enum { W = 720, H = 300, ML = 60, MR = 20, MT = 20, MB = 45 };

static void
svg_open(FILE *f, const char *xlabel, const char *ylabel)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#888\"/>\n",
            W, H, ML, MT, W - ML - MR, H - MT - MB);
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n"
            "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 14 %d)\">%s</text>\n",
            ML + (W - ML - MR) / 2, H - 8, xlabel, MT + (H - MT - MB) / 2,
            MT + (H - MT - MB) / 2, ylabel);
}

static double
px(double x, double x0, double x1)
{
    return ML + (x - x0) / (x1 - x0) * (W - ML - MR);
}

static double
py(double y, double y0, double y1)
{
    return H - MB - (y - y0) / (y1 - y0) * (H - MT - MB);
}

static void
svg_xtick(FILE *f, double x, const char *label)
{
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#888\"/><text x=\"%.1f\" y=\"%d\" "
            "text-anchor=\"middle\">%s</text>\n",
            x, H - MB, x, H - MB + 5, x, H - MB + 18, label);
}

static void
svg_ytick(FILE *f, double y, const char *label)
{
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
            "stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" "
            "text-anchor=\"end\">%s</text>\n",
            ML, y, W - MR, y, ML - 5, y + 4, label);
}

static void
svg_legend(FILE *f, const al_sim_result_t *const *r, int n)
{
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"20\" "
            "fill=\"#fff\" fill-opacity=\"0.85\"/>\n",
            ML + 4, MT + 2, n * 110);
    for (int k = 0; k < n; k++)
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
                "fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
                ML + 10 + k * 110, MT + 6, colors[k % NCOLORS],
                ML + 26 + k * 110, MT + 16, al_policy_name(r[k]->policy));
}

static void
plot_util(FILE *f, const al_sim_result_t *const *r, int n)
{
    double span = 0;
    for (int k = 0; k < n; k++)
        if ((double)(r[k]->t_last - r[k]->t_first) > span)
            span = (double)(r[k]->t_last - r[k]->t_first);
    if (span <= 0)
        span = 1;
    double days = span / 86400;
    svg_open(f, "days since first submit", "GPUs allocated (share)");
    for (int t = 0; t <= 4; t++) {
        char l[16];
        snprintf(l, sizeof l, "%d%%", t * 25);
        svg_ytick(f, py(t * 0.25, 0, 1.05), l);
    }
    double step = days > 20 ? 10 : days > 4 ? 1 : days > 0.5 ? 0.25 : 0.05;
    for (int t = 0; t * step <= days + 1e-9; t++) {
        char l[16];
        snprintf(l, sizeof l, "%g", t * step);
        svg_xtick(f, px(t * step, 0, days), l);
    }
    for (int k = 0; k < n; k++) {
        double w = (double)(r[k]->t_last - r[k]->t_first) / AL_SIM_BINS;
        fprintf(f,
                "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" "
                "points=\"",
                colors[k % NCOLORS]);
        for (int b = 0; b < AL_SIM_BINS; b++)
            fprintf(f, "%.1f,%.1f ", px((b + 0.5) * w / 86400, 0, days),
                    py(r[k]->util_bins[b], 0, 1.05));
        fprintf(f, "\"/>\n");
    }
    svg_legend(f, r, n);
    fprintf(f, "</svg>\n");
}

static void
plot_cdf(FILE *f, const al_sim_result_t *const *r, int n)
{
    /* x: log10 of JCT in hours, from 0.1 h to the largest JCT. */
    double lo = -1, hi = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < r[k]->njobs; i++)
            if (r[k]->jobs[i].end >= 0) {
                double h =
                    (double)(r[k]->jobs[i].end - r[k]->trace->jobs[i].submit) /
                    3600;
                if (h > 0 && log10(h) > hi)
                    hi = log10(h);
                if (h > 0 && log10(h) < lo)
                    lo = log10(h);
            }
    lo = floor(lo);
    hi = ceil(hi);
    if (hi <= lo)
        hi = lo + 1;
    svg_open(f, "job completion time (hours, log scale)",
             "share of completed jobs");
    for (int t = 0; t <= 4; t++) {
        char l[16];
        snprintf(l, sizeof l, "%d%%", t * 25);
        svg_ytick(f, py(t * 0.25, 0, 1.05), l);
    }
    for (int e = (int)lo; e <= (int)hi; e++) {
        char l[16];
        snprintf(l, sizeof l, "%g", pow(10, e));
        svg_xtick(f, px(e, lo, hi), l);
    }
    for (int k = 0; k < n; k++) {
        const al_sim_result_t *x = r[k];
        double *v = al_xmalloc((size_t)(x->njobs + 1) * sizeof(double));
        int m = 0;
        for (int i = 0; i < x->njobs; i++)
            if (x->jobs[i].end >= 0) {
                double h =
                    (double)(x->jobs[i].end - x->trace->jobs[i].submit) / 3600;
                v[m++] = log10(h > pow(10, lo) ? h : pow(10, lo));
            }
        qsort(v, (size_t)m, sizeof(double), cmp_dbl);
        fprintf(f,
                "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                "points=\"",
                colors[k % NCOLORS]);
        /* At most 400 points: enough for a smooth curve, small file. */
        int stepk = m > 400 ? m / 400 : 1;
        for (int i = 0; i < m; i += stepk)
            fprintf(f, "%.1f,%.1f ", px(v[i], lo, hi),
                    py((double)(i + 1) / m, 0, 1.05));
        if (m > 0)
            fprintf(f, "%.1f,%.1f", px(v[m - 1], lo, hi), py(1, 0, 1.05));
        fprintf(f, "\"/>\n");
        free(v);
    }
    svg_legend(f, r, n);
    fprintf(f, "</svg>\n");
}

static void
plot_shares(FILE *f, const al_sim_result_t *x, int color)
{
    double ymax = 0;
    double span = (double)(x->t_last - x->t_first);
    if (span <= 0)
        span = 1;
    for (int q = 0; q < x->nqueues; q++) {
        double a = x->queues[q].alloc_gpu_s / span;
        double fr = x->queues[q].fair_gpu_s / span;
        double d = x->queues[q].demand_gpu_s / span;
        ymax = fmax(ymax, fmax(a, fmax(fr, fmin(d, 2 * fmax(a, fr)))));
    }
    if (ymax <= 0)
        ymax = 1;
    ymax *= 1.1;
    svg_open(f, "queue", "mean GPUs");
    for (int t = 0; t <= 4; t++) {
        char l[24];
        snprintf(l, sizeof l, "%.1f", ymax * t / 4);
        svg_ytick(f, py(ymax * t / 4, 0, ymax), l);
    }
    int nq = x->nqueues > 0 ? x->nqueues : 1;
    double slot = (double)(W - ML - MR) / nq;
    for (int q = 0; q < x->nqueues; q++) {
        double vals[3] = { x->queues[q].alloc_gpu_s / span,
                           x->queues[q].fair_gpu_s / span,
                           x->queues[q].demand_gpu_s / span };
        const char *fill[3] = { colors[color % NCOLORS], "#bbb", "none" };
        double bw = slot / 4;
        for (int k = 0; k < 3; k++) {
            double v = fmin(vals[k], ymax);
            double x0 = ML + q * slot + bw * (0.5 + k);
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"%s\" stroke=\"%s\">"
                    "<title>%s: %.2f GPUs</title></rect>\n",
                    x0, py(v, 0, ymax), bw * 0.9,
                    py(0, 0, ymax) - py(v, 0, ymax), fill[k],
                    k == 2 ? "#555" : "none",
                    k == 0   ? "allocated"
                    : k == 1 ? "fair share"
                             : "demand",
                    vals[k]);
        }
        /* Many queues: slanted labels, so that neighbours do not overlap. */
        double lx = ML + (q + 0.5) * slot;
        if (slot < 60)
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" "
                    "text-anchor=\"end\" transform=\"rotate(-40 %.1f %d)\">",
                    lx, H - MB + 12, lx, H - MB + 12);
        else
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", lx,
                    H - MB + 15);
        html_str(f, x->queues[q].name);
        fprintf(f, "</text>\n");
    }
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
            "<text x=\"%d\" y=\"%d\">allocated</text>"
            "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#bbb\"/>"
            "<text x=\"%d\" y=\"%d\">fair share</text>"
            "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"none\" "
            "stroke=\"#555\"/><text x=\"%d\" y=\"%d\">demand</text>\n",
            ML + 10, MT + 6, colors[color % NCOLORS], ML + 26, MT + 16,
            ML + 120, MT + 6, ML + 136, MT + 16, ML + 240, MT + 6, ML + 256,
            MT + 16);
    fprintf(f, "</svg>\n");
}

void
al_report_html(FILE *f, const char *title, const al_sim_result_t *const *r,
               int n)
{
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
               "<title>");
    html_str(f, title);
    fprintf(f,
            "</title>\n<style>body{font-family:sans-serif;max-width:780px;"
            "margin:2em auto;color:#222}table{border-collapse:collapse;"
            "font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;"
            "text-align:right}th{background:#f4f4f4}td:first-child{text-align:"
            "left}</style></head><body>\n<h1>");
    html_str(f, title);
    fprintf(f, "</h1>\n");
    if (n > 0)
        fprintf(f,
                "<p>%d jobs on %.0f GPUs, replayed through the allot "
                "scheduling core in virtual time. Definitions of every "
                "figure: docs/simulation.md.</p>\n",
                r[0]->njobs, (double)r[0]->capacity / AL_GPU_MILLI);
    fprintf(f, "<h2>Summary</h2>\n<table><tr><th>policy</th><th>completed"
               "</th><th>unsched.</th><th>avg JCT (h)</th><th>p95 JCT (h)"
               "</th><th>avg wait (h)</th><th>p95 wait (h)</th><th>worst "
               "queue avg wait (h)</th><th>GPU alloc</th><th>wastage</th>"
               "<th>preempt.</th><th>Jain</th></tr>\n");
    for (int k = 0; k < n; k++) {
        al_sim_summary_t s;
        al_report_summary(r[k], &s);
        fprintf(f,
                "<tr><td style=\"color:%s\">%s</td><td>%d</td><td>%d</td>"
                "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                "<td>%.2f</td><td>%.1f%%</td><td>%.2f%%</td><td>%lld</td>"
                "<td>%.3f</td></tr>\n",
                colors[k % NCOLORS], al_policy_name(r[k]->policy), s.completed,
                s.unschedulable, s.avg_jct / 3600, s.p95_jct / 3600,
                s.avg_queue / 3600, s.p95_queue / 3600,
                s.worst_queue_avg_queue / 3600, 100 * s.gpu_alloc_ratio,
                100 * s.wastage_ratio, (long long)s.preemptions,
                s.jain_fairness);
    }
    fprintf(f, "</table>\n<h2>GPU allocation over time</h2>\n");
    plot_util(f, r, n);
    fprintf(f, "<h2>Job completion time, CDF</h2>\n");
    plot_cdf(f, r, n);
    for (int k = 0; k < n; k++) {
        fprintf(f,
                "<h2>Queue share vs fair share: %s</h2>\n<p>Mean GPUs held "
                "by each queue over the run, next to its mean fair share "
                "(as the core computed it each cycle) and its mean demand "
                "(running + pending).</p>\n",
                al_policy_name(r[k]->policy));
        plot_shares(f, r[k], k);
    }
    fprintf(f, "</body></html>\n");
}
