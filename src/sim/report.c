/*
 * report.c -- what a simulation run prints: the figures over its jobs
 * (completion times, waits, by queue and by size), the --json object, the
 * --jobs-csv rows and the human-readable tables; report_html.c writes the
 * HTML report.  Every figure is defined in docs/simulation.md.
 *
 * May call: policy.c (al_policy_name), src/common, libc and libm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

/* ------------------------------------------------------------------ */
/* Figures                                                            */

int
al__cmp_dbl(const void *a, const void *b)
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
    qsort(jct, (size_t)n, sizeof(double), al__cmp_dbl);
    qsort(q, (size_t)n, sizeof(double), al__cmp_dbl);
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
    s->restart_gpu_hours = r->restart_gpu_s / 3600;
    s->gpu_hours_lost_to_preemption = s->lost_gpu_hours + s->restart_gpu_hours;
    int ran = s->jobs - s->unschedulable;
    s->preemptions_per_job = ran > 0 ? (double)s->preemptions / ran : 0;
    s->share_error_p95 = r->share_error_p95;
    s->share_hours = r->share_hours;
    s->max_guarantee_wait = r->max_guarantee_wait_s;
    s->guarantee_wait_hours = r->guarantee_wait_s / 3600;
    s->max_guarantee_wait_gpu_only = r->max_guarantee_wait_gpu_only_s;
    s->guarantee_wait_gpu_only_hours = r->guarantee_wait_gpu_only_s / 3600;
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
    fprintf(f,
            ",\"preemptions_per_job\":%.6f,\"restart_gpu_hours\":%.3f,"
            "\"gpu_hours_lost_to_preemption\":%.3f,"
            "\"share_error_p95\":%.6f,\"share_hours\":%lld,"
            "\"max_guarantee_wait_s\":%.0f,\"guarantee_wait_hours\":%.3f,"
            "\"restart_overhead_s\":%lld,\"checkpoint_interval_s\":%lld",
            s.preemptions_per_job, s.restart_gpu_hours,
            s.gpu_hours_lost_to_preemption, s.share_error_p95,
            (long long)s.share_hours, s.max_guarantee_wait,
            s.guarantee_wait_hours, (long long)r->restart_overhead,
            (long long)r->checkpoint);
    fprintf(f,
            ",\"max_guarantee_wait_gpu_only_s\":%.0f,"
            "\"guarantee_wait_gpu_only_hours\":%.3f",
            s.max_guarantee_wait_gpu_only, s.guarantee_wait_gpu_only_hours);
    fprintf(f, ",\"capacity_gpus\":%.3f", (double)r->capacity / AL_GPU_MILLI);
    if (r->npipelines > 0)
        fprintf(f,
                ",\"dag\":\"%s\",\"pipelines\":%d,\"pipelines_done\":%d,"
                "\"pipeline_makespan_avg_s\":%.1f,\"pipelines_per_hour\":%.4f",
                al_sim_dag_name(r->dag), r->npipelines, r->pipelines_done,
                r->pipe_makespan_mean, r->pipelines_per_hour);
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
               "jct_s,queue_s,preemptions,lost_gpu_s,unschedulable,"
               "restart_gpu_s\n");
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
        fprintf(f, ",%lld,%d,%.0f,%d,%.0f\n", (long long)j->pending,
                j->preemptions, (double)j->lost / AL_GPU_MILLI,
                j->unschedulable ? 1 : 0, (double)j->restart / AL_GPU_MILLI);
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
    hms(a, sizeof a, s.max_guarantee_wait);
    fprintf(f,
            "  preemption cost %.1f GPU-h (restarts %.1f)  %.3f preemptions "
            "per job  share error p95 %.3f  longest wait for a guarantee "
            "%s\n",
            s.gpu_hours_lost_to_preemption, s.restart_gpu_hours,
            s.preemptions_per_job, s.share_error_p95, a);
    if (r->npipelines > 0) {
        hms(a, sizeof a, r->pipe_makespan_mean);
        fprintf(f,
                "  pipelines (dag %s) %d, %d completed  makespan avg %s  "
                "%.2f per hour\n",
                al_sim_dag_name(r->dag), r->npipelines, r->pipelines_done, a,
                r->pipelines_per_hour);
    }
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
