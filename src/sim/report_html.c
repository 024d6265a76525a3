/*
 * report_html.c -- `allot sim --report FILE`: a self-contained HTML report of
 * one or more runs, with inline SVG plots (utilisation over time, the CDF of
 * job completion times, each queue's allocation beside its fair share and
 * demand) and the summary tables.  Every figure is defined in
 * docs/simulation.md.
 *
 * May call: report.c (al_report_summary, al__cmp_dbl), policy.c
 * (al_policy_name), libc and libm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

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
        qsort(v, (size_t)m, sizeof(double), al__cmp_dbl);
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
               "<th>preempt.</th><th>GPU-h lost to preempt.</th>"
               "<th>share error p95</th><th>longest guarantee wait (h)</th>"
               "<th>Jain</th></tr>\n");
    for (int k = 0; k < n; k++) {
        al_sim_summary_t s;
        al_report_summary(r[k], &s);
        fprintf(f,
                "<tr><td style=\"color:%s\">%s</td><td>%d</td><td>%d</td>"
                "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                "<td>%.2f</td><td>%.1f%%</td><td>%.2f%%</td><td>%lld</td>"
                "<td>%.1f</td><td>%.3f</td><td>%.2f</td>"
                "<td>%.3f</td></tr>\n",
                colors[k % NCOLORS], al_policy_name(r[k]->policy), s.completed,
                s.unschedulable, s.avg_jct / 3600, s.p95_jct / 3600,
                s.avg_queue / 3600, s.p95_queue / 3600,
                s.worst_queue_avg_queue / 3600, 100 * s.gpu_alloc_ratio,
                100 * s.wastage_ratio, (long long)s.preemptions,
                s.gpu_hours_lost_to_preemption, s.share_error_p95,
                s.max_guarantee_wait / 3600, s.jain_fairness);
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
