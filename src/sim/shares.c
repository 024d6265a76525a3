/*
 * shares.c -- how fairly a run divided the GPUs, measured the same way
 * under every policy (docs/simulation.md, "Shares, precisely"):
 *
 *   - the reference: each metrics queue's max-min fair share of the
 *     cluster's GPUs at every moment, weighted by its deserved GPUs and
 *     capped by its demand (what it runs plus what it waits for), which
 *     does not depend on the policy's own idea of fairness;
 *   - per hour of the run (from the first submission), each queue's share
 *     of the GPU-time allocated in that hour against its share of the fair
 *     GPU-time, as a relative error, for every queue-hour with demand; the
 *     run's figure is their 95th percentile;
 *   - the waits for a guarantee: a queue waits for it while it has a
 *     pending job that would fit in its deserved quota on top of what it
 *     runs, in GPUs and in CPUs; the longest such wait and their sum; and
 *     the same judged on GPUs alone (a job without GPUs always fitting).
 *
 * May call: report.c's comparison of doubles, src/common's allocation,
 * libc and libm.
 */
#include <math.h>
#include <stdlib.h>

#include "sim.h"
#include "sim_int.h"

#define HOUR 3600

/* One hour's relative error of a queue, and how many hours had it. */
struct share_err {
    double err;
    int64_t hours;
};

static int
cmp_err(const void *a, const void *b)
{
    return al__cmp_dbl(&((const struct share_err *)a)->err,
                       &((const struct share_err *)b)->err);
}

void
al__shares_init(sim_t *s)
{
    size_t n = (size_t)s->nmq + 1;
    s->hr_cur = 0;
    s->hr_alloc = al_xcalloc(n, sizeof(double));
    s->hr_fair = al_xcalloc(n, sizeof(double));
    s->hr_dem = al_xcalloc(n, sizeof(double));
    s->fair_w = al_xcalloc(n, sizeof(double));
    s->fair_d = al_xcalloc(n, sizeof(double));
    s->fair_f = al_xcalloc(n, sizeof(double));
    s->gw_since = al_xcalloc(n, sizeof(int64_t));
    s->gw_min = al_xcalloc(n, sizeof(int64_t));
    s->gg_since = al_xcalloc(n, sizeof(int64_t));
    s->gw_cpu = al_xcalloc(n, sizeof(int64_t));
    for (int q = 0; q < s->nmq; q++)
        s->gw_since[q] = s->gg_since[q] = -1;
}

void
al__shares_free(sim_t *s)
{
    free(s->hr_alloc);
    free(s->hr_fair);
    free(s->hr_dem);
    free(s->fair_w);
    free(s->fair_d);
    free(s->fair_f);
    free(s->share_err);
    free(s->gw_since);
    free(s->gw_min);
    free(s->gg_since);
    free(s->gw_cpu);
}

/* Water-filling over the claims with a positive weight in `use`: each gets
 * min(demand, level x weight), the level as high as cap allows.  Returns
 * what is left of cap. */
static double
fill(int n, const double *w, const double *d, const bool *use, double cap,
     double *f)
{
    bool *open = al_xcalloc((size_t)n + 1, sizeof(bool));
    int nopen = 0;
    for (int k = 0; k < n; k++)
        if (use[k] && w[k] > 0 && d[k] > 0) {
            open[k] = true;
            nopen++;
        }
    while (nopen > 0 && cap > 0) {
        double sw = 0;
        for (int k = 0; k < n; k++)
            if (open[k])
                sw += w[k];
        double level = cap / sw;
        /* Claims below the level are met whole; the rest share what is
         * left once none is. */
        bool met = false;
        for (int k = 0; k < n; k++)
            if (open[k] && d[k] - f[k] <= level * w[k]) {
                cap -= d[k] - f[k];
                f[k] = d[k];
                open[k] = false;
                nopen--;
                met = true;
            }
        if (!met) {
            for (int k = 0; k < n; k++)
                if (open[k])
                    f[k] += level * w[k];
            cap = 0;
        }
    }
    free(open);
    return cap > 0 ? cap : 0;
}

void
al__waterfill(int n, const double *w, const double *d, double cap, double *f)
{
    bool *use = al_xcalloc((size_t)n + 1, sizeof(bool));
    double *one = al_xcalloc((size_t)n + 1, sizeof(double));
    for (int k = 0; k < n; k++) {
        f[k] = 0;
        use[k] = w[k] > 0;
    }
    cap = fill(n, w, d, use, cap, f);
    /* Claims without a weight share what the others leave, equally. */
    for (int k = 0; k < n; k++) {
        use[k] = w[k] <= 0;
        one[k] = 1;
    }
    fill(n, one, d, use, cap, f);
    free(one);
    free(use);
}

/* The relative errors of the hour just integrated, one per queue with
 * demand in it, each counted `hours` times (the hours after it in a stretch
 * where nothing changed had the same sums); the hour's sums are reset. */
static void
close_hour(sim_t *s, int64_t hours)
{
    double ta = 0, tf = 0;
    for (int q = 0; q < s->nmq; q++) {
        ta += s->hr_alloc[q];
        tf += s->hr_fair[q];
    }
    for (int q = 0; q < s->nmq; q++) {
        if (s->hr_dem[q] > 0 && s->hr_fair[q] > 0 && tf > 0) {
            double fair = s->hr_fair[q] / tf;
            double got = ta > 0 ? s->hr_alloc[q] / ta : 0;
            if (s->nshare_err == s->capshare_err) {
                s->capshare_err = s->capshare_err ? 2 * s->capshare_err : 1024;
                s->share_err =
                    al_xrealloc(s->share_err, (size_t)s->capshare_err *
                                                  sizeof(struct share_err));
            }
            s->share_err[s->nshare_err++] =
                (struct share_err){ fabs(got - fair) / fair, hours };
            s->share_hours += hours;
        }
        s->hr_alloc[q] = s->hr_fair[q] = s->hr_dem[q] = 0;
    }
}

/* Adds [from, end) to the hour being integrated, at this moment's rates. */
static void
integrate(sim_t *s, int64_t from, int64_t end)
{
    double dt = (double)(end - from) / AL_GPU_MILLI;
    for (int q = 0; q < s->nmq; q++) {
        s->hr_alloc[q] += (double)s->mq_alloc[q] * dt;
        s->hr_fair[q] += s->fair_f[q] * dt;
        s->hr_dem[q] += s->fair_d[q] * dt;
    }
}

void
al__shares_advance(sim_t *s, int64_t from, int64_t to)
{
    if (to <= from || s->nmq == 0)
        return;
    for (int q = 0; q < s->nmq; q++) {
        s->fair_w[q] = s->mq_deserved[q];
        s->fair_d[q] = (double)(s->mq_alloc[q] + s->mq_pend[q]);
    }
    al__waterfill(s->nmq, s->fair_w, s->fair_d, (double)s->r->capacity,
                  s->fair_f);
    int64_t t0 = s->r->t_first;
    int64_t h = (from - t0) / HOUR;
    if (h != s->hr_cur) {
        close_hour(s, 1);
        s->hr_cur = h;
    }
    int64_t last = (to - t0) / HOUR; /* the hour `to` falls in */
    if (last > h) {
        /* The rest of hour h; then whole hours h+1 .. last-1, all alike:
         * the first of them integrated and closed for all (a long quiet
         * stretch costs one step, not one per hour). */
        integrate(s, from, t0 + (h + 1) * HOUR);
        close_hour(s, 1);
        if (last > h + 1) {
            integrate(s, t0 + (h + 1) * HOUR, t0 + (h + 2) * HOUR);
            close_hour(s, last - h - 1);
        }
        s->hr_cur = last;
        from = t0 + last * HOUR;
    }
    if (from < to)
        integrate(s, from, to);
}

/* One queue's wait for its guarantee: starts when `waits` first holds,
 * ends (and is counted) when it first no longer does. */
static void
wait_step(int64_t *since, bool waits, int64_t now, double *sum, double *max)
{
    if (waits && *since < 0) {
        *since = now;
    } else if (!waits && *since >= 0) {
        double w = (double)(now - *since);
        *sum += w;
        if (w > *max)
            *max = w;
        *since = -1;
    }
}

void
al__shares_after(sim_t *s, int64_t now)
{
    for (int q = 0; q < s->nmq; q++) {
        s->gw_min[q] = INT64_MAX;
        s->gw_cpu[q] = 0;
    }
    for (int a = 0; a < s->nact; a++) {
        const sjob_t *j = &s->jobs[s->act[a]];
        if (j->state == S_PENDING && j->total < s->gw_min[j->mq])
            s->gw_min[j->mq] = j->total;
        if (j->state == S_RUNNING)
            s->gw_cpu[j->mq] += (int64_t)j->ntasks * j->cpu;
    }
    al_sim_result_t *r = s->r;
    double gpus = (double)s->tot[AL_RES_GPU] / AL_GPU_MILLI;
    for (int q = 0; q < s->nmq; q++) {
        /* Deserved GPUs to milli-GPUs, rounded: a share of 1/3 GPU is
         * 333 milli-GPUs as the core counts it.  A queue deserves the
         * same fraction of the CPUs as of the GPUs. */
        int64_t deserved = llround(s->mq_deserved[q] * AL_GPU_MILLI);
        int64_t des_cpu =
            gpus > 0
                ? llround((double)s->tot[AL_RES_CPU] * s->mq_deserved[q] / gpus)
                : 0;
        bool gpu_only = s->gw_min[q] != INT64_MAX &&
                        s->mq_alloc[q] + s->gw_min[q] <= deserved;
        bool waits = false;
        for (int a = 0; gpu_only && !waits && a < s->nact; a++) {
            const sjob_t *j = &s->jobs[s->act[a]];
            waits = j->state == S_PENDING && j->mq == q &&
                    s->mq_alloc[q] + j->total <= deserved &&
                    s->gw_cpu[q] + (int64_t)j->ntasks * j->cpu <= des_cpu;
        }
        wait_step(&s->gw_since[q], waits, now, &r->guarantee_wait_s,
                  &r->max_guarantee_wait_s);
        wait_step(&s->gg_since[q], gpu_only, now, &r->guarantee_wait_gpu_only_s,
                  &r->max_guarantee_wait_gpu_only_s);
    }
}

void
al__shares_finish(sim_t *s, int64_t end)
{
    al_sim_result_t *r = s->r;
    for (int q = 0; q < s->nmq; q++) {
        if (end > s->gw_since[q])
            wait_step(&s->gw_since[q], false, end, &r->guarantee_wait_s,
                      &r->max_guarantee_wait_s);
        if (end > s->gg_since[q])
            wait_step(&s->gg_since[q], false, end,
                      &r->guarantee_wait_gpu_only_s,
                      &r->max_guarantee_wait_gpu_only_s);
    }
    close_hour(s, 1);
    r->share_hours = s->share_hours;
    if (s->nshare_err > 0) {
        qsort(s->share_err, (size_t)s->nshare_err, sizeof *s->share_err,
              cmp_err);
        /* Nearest rank, as every percentile of the report, over the
         * queue-hours: the entry holding the k-th of them in order. */
        int64_t k = (int64_t)ceil(0.95 * (double)s->share_hours) - 1;
        if (k < 0)
            k = 0;
        int64_t i = 0;
        for (int64_t seen = s->share_err[0].hours; seen <= k;
             seen += s->share_err[i].hours)
            i++;
        r->share_error_p95 = s->share_err[i].err;
    }
}
