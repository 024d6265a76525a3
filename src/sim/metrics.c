/*
 * metrics.c -- what a run measures between events, where the state is
 * constant so that every figure is integrated exactly over each interval:
 * allocation, each metrics queue's allocation, demand and fair share, and
 * wastage (an idle GPU while a pending job would fit on the idle GPUs; see
 * docs/simulation.md); the decayed usage the core's fair share reads; the
 * --timeseries rows; the allocation recorded at each event and averaged
 * into AL_SIM_BINS bins; the shares and guarantee waits through shares.c.
 * Figures over the jobs (JCT, waits, slowdowns) are report.c's, from the
 * result.
 *
 * May call: shares.c, jobs.c (whether a pending job fits), the core's usage
 * decay, libc and libm.
 */
#include <math.h>
#include <stdio.h>

#include "sim.h"
#include "sim_int.h"

/* Whether some pending job would fit on the idle GPUs now. */
static bool
compute_wasted(sim_t *s)
{
    if (s->npend == 0 || s->alloc >= s->r->capacity)
        return false;
    struct shape {
        int32_t gpus, milli;
        int ntasks;
        int64_t cpu;
    } seen[32];
    int nseen = 0;
    for (int a = 0; a < s->nact; a++) {
        const sjob_t *j = &s->jobs[s->act[a]];
        if (j->state != S_PENDING)
            continue;
        if (j->total > s->r->capacity - s->alloc)
            continue;
        bool dup = false;
        for (int k = 0; k < nseen && !dup; k++)
            dup = seen[k].gpus == j->gpus && seen[k].milli == j->milli &&
                  seen[k].ntasks == j->ntasks && seen[k].cpu == j->cpu;
        if (dup)
            continue;
        if (al__job_fits(s, j, false))
            return true;
        if (nseen < 32)
            seen[nseen++] =
                (struct shape){ j->gpus, j->milli, j->ntasks, j->cpu };
    }
    return false;
}

/* Metrics queue q's fair share in milli-GPUs: the core's, or its deserved
 * share when the core sees no queues (ignore_queues computes no fair share;
 * tiresias gets one queue holding everything). */
static double
fair_of(const sim_t *s, int q)
{
    if (s->pol->single_queue || s->cfg.ignore_queues)
        return s->mq_deserved[q] * AL_GPU_MILLI;
    return s->cq_fair[s->mq_to_cq[q]];
}

void
al__metrics_advance(sim_t *s, int64_t from, int64_t to)
{
    if (to <= from)
        return;
    double dt = (double)(to - from);
    al_sim_result_t *r = s->r;
    r->alloc_gpu_s += (double)s->alloc / AL_GPU_MILLI * dt;
    if (s->wasted) {
        r->wasted_s += dt;
        r->wasted_gpu_s += (double)(r->capacity - s->alloc) / AL_GPU_MILLI * dt;
    }
    for (int q = 0; q < s->nmq; q++) {
        al_sim_queue_t *rq = &r->queues[q];
        rq->alloc_gpu_s += (double)s->mq_alloc[q] / AL_GPU_MILLI * dt;
        rq->demand_gpu_s +=
            (double)(s->mq_alloc[q] + s->mq_pend[q]) / AL_GPU_MILLI * dt;
        double fair = fair_of(s, q);
        rq->fair_gpu_s += fair / AL_GPU_MILLI * dt;
    }
    al__shares_advance(s, from, to);
    for (int q = 0; q < s->ncq; q++)
        s->cq[q].usage =
            al_usage_decay(s->cq[q].usage, to - from, s->o->usage_half_life) +
            (double)s->cq_alloc[q] * dt;
}

void
al__metrics_ts_header(sim_t *s)
{
    FILE *f = s->o->timeseries;
    fprintf(f, "time_s,util,alloc_gpus,running_jobs,pending_jobs,"
               "pending_gpus");
    for (int q = 0; q < s->nmq; q++)
        fprintf(f, ",alloc_gpus:%s,pending_gpus:%s,fair_gpus:%s",
                s->mq_names[q], s->mq_names[q], s->mq_names[q]);
    fputc('\n', f);
}

static void
ts_row(sim_t *s, int64_t now)
{
    FILE *f = s->o->timeseries;
    int64_t pend = 0;
    for (int q = 0; q < s->nmq; q++)
        pend += s->mq_pend[q];
    fprintf(f, "%lld,%.4f,%.3f,%lld,%lld,%.3f", (long long)now,
            (double)s->alloc / (double)s->r->capacity,
            (double)s->alloc / AL_GPU_MILLI, (long long)s->nrun,
            (long long)s->npend, (double)pend / AL_GPU_MILLI);
    for (int q = 0; q < s->nmq; q++) {
        double fair = fair_of(s, q);
        fprintf(f, ",%.3f,%.3f,%.3f", (double)s->mq_alloc[q] / AL_GPU_MILLI,
                (double)s->mq_pend[q] / AL_GPU_MILLI, fair / AL_GPU_MILLI);
    }
    fputc('\n', f);
}

static void
ts_record(sim_t *s, int64_t now)
{
    if (s->nts > 0 && s->ts_t[s->nts - 1] == now) {
        s->ts_a[s->nts - 1] = s->alloc;
        return;
    }
    if (s->nts == s->capts) {
        s->capts = s->capts ? 2 * s->capts : 4096;
        s->ts_t = al_xrealloc(s->ts_t, (size_t)s->capts * sizeof(int64_t));
        s->ts_a = al_xrealloc(s->ts_a, (size_t)s->capts * sizeof(int64_t));
    }
    s->ts_t[s->nts] = now;
    s->ts_a[s->nts++] = s->alloc;
}

/* Averages the recorded allocation over AL_SIM_BINS equal bins. */
static void
fill_bins(sim_t *s)
{
    al_sim_result_t *r = s->r;
    double span = (double)(r->t_last - r->t_first);
    if (span <= 0 || s->nts == 0 || r->capacity <= 0)
        return;
    double w = span / AL_SIM_BINS;
    double acc[AL_SIM_BINS] = { 0 };
    for (int k = 0; k < s->nts; k++) {
        double a = (double)s->ts_t[k] - (double)r->t_first;
        double b =
            k + 1 < s->nts ? (double)s->ts_t[k + 1] - (double)r->t_first : span;
        if (b > span)
            b = span;
        double v = (double)s->ts_a[k] / (double)r->capacity;
        if (b <= a)
            continue;
        /* Walk the bins by index: stepping `a` by float bin ends can stall
         * on rounding. */
        int bin = (int)(a / w);
        if (bin >= AL_SIM_BINS)
            bin = AL_SIM_BINS - 1;
        for (; bin < AL_SIM_BINS; bin++) {
            double lo = fmax(a, bin * w);
            double hi = bin == AL_SIM_BINS - 1 ? b : fmin(b, (bin + 1) * w);
            if (hi > lo)
                acc[bin] += v * (hi - lo);
            if (hi >= b)
                break;
        }
    }
    for (int b = 0; b < AL_SIM_BINS; b++)
        r->util_bins[b] = acc[b] / w;
}

/* Bookkeeping after the cycles at `now`: the allocation when the last
 * arrival so far came (and when the arrivals first filled the cluster),
 * wastage until the next event, the time series. */
void
al__metrics_after(sim_t *s, int64_t now)
{
    al_sim_result_t *r = s->r;
    if (s->next > 0 && s->tr->jobs[s->next - 1].submit == now) {
        double share = (double)s->alloc / (double)r->capacity;
        if (r->alloc_at_full < 0 && s->arrived >= r->capacity)
            r->alloc_at_full = share;
        r->alloc_at_end = share;
        r->arrived_end = (double)s->arrived / (double)r->capacity;
    }
    s->wasted = compute_wasted(s);
    al__shares_after(s, now);
    ts_record(s, now);
    if (s->o->timeseries)
        ts_row(s, now);
}

void
al__metrics_finish(sim_t *s)
{
    al_sim_result_t *r = s->r;
    /* t_last: the last completion. */
    r->t_last = r->t_first;
    for (int i = 0; i < s->njobs; i++)
        if (r->jobs[i].end > r->t_last)
            r->t_last = r->jobs[i].end;
    al__shares_finish(s, r->t_last);
    fill_bins(s);
}
