/*
 * policy.c -- the policies `allot sim` compares, each a configuration of
 * the core (cfg_*) plus what the run does for it: the core queues it sees
 * (one for Tiresias), job priorities (sjf-oracle's ranks of the true
 * durations, Tiresias' levels of attained service and the events of their
 * changes) and runtime estimates (the user's, with noise; the truth for
 * sjf-oracle).
 *
 * May call: events.c (al__ev_push), parse.c (al__hash), the core's
 * configuration, libm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

static void
cfg_allot(al_config_t *cfg)
{
    (void)cfg; /* the core's defaults are the allot policy */
}

static void
cfg_fifo(al_config_t *cfg)
{
    memset(cfg->service_levels, 0, sizeof(cfg->service_levels));
    cfg->strict_order = true;
    cfg->reserve_depth = 0;
    cfg->reclaim = false;
    cfg->preempt = false;
    cfg->lend_reserved = false;
    cfg->ignore_queues = true;
    cfg->short_first = false;
}

static void
cfg_static(al_config_t *cfg)
{
    memset(cfg->service_levels, 0, sizeof(cfg->service_levels));
    /* How most GPU clusters are run today: a fixed split, first come first
     * served inside each part, and the anti-starvation allot had before
     * it learnt shortest-first (oldest first after 12 h). */
    cfg->borrow = false;
    cfg->reclaim = false;
    cfg->short_first = false;
    cfg->starve_after = (int64_t)12 * 3600;
}

static void
cfg_backfill(al_config_t *cfg)
{
    memset(cfg->service_levels, 0, sizeof(cfg->service_levels));
    cfg->ignore_queues = true;
    if (cfg->reserve_depth < 1)
        cfg->reserve_depth = 1;
    cfg->reclaim = false;
    cfg->preempt = false;
    cfg->lend_reserved = false;
    cfg->short_first = false;
}

static void
cfg_tiresias(al_config_t *cfg)
{
    memset(cfg->service_levels, 0, sizeof(cfg->service_levels));
    /* One queue (the core preempts only inside a queue, and not at all with
     * ignore_queues), priority levels from attained service; a job of a
     * higher level preempts lower ones.  Tiresias has no reservations. */
    cfg->ignore_queues = false;
    cfg->reserve_depth = 0;
    cfg->reclaim = false;
    cfg->preempt = true;
    cfg->lend_reserved = false;
    cfg->usage_weight = 0;
    cfg->short_first = false;
}

static void
cfg_sjf(al_config_t *cfg)
{
    memset(cfg->service_levels, 0, sizeof(cfg->service_levels));
    cfg->ignore_queues = true;
    cfg->reclaim = false;
    cfg->preempt = false;
    cfg->lend_reserved = false;
    if (cfg->reserve_depth < 1)
        cfg->reserve_depth = 1;
    cfg->short_first = false;
}

static const policy_t policies[AL_POLICY_COUNT] = {
    [AL_POLICY_ALLOT] = { .name = "allot", .configure = cfg_allot },
    [AL_POLICY_FIFO] = { .name = "fifo", .configure = cfg_fifo },
    [AL_POLICY_STATIC] = { .name = "static", .configure = cfg_static },
    [AL_POLICY_BACKFILL] = { .name = "backfill", .configure = cfg_backfill },
    [AL_POLICY_TIRESIAS] = { .name = "tiresias",
                             .configure = cfg_tiresias,
                             .single_queue = true,
                             .las = true },
    [AL_POLICY_SJF] = { .name = "sjf-oracle",
                        .configure = cfg_sjf,
                        .oracle = true },
};

const char *
al_policy_name(al_policy_t p)
{
    return (unsigned)p < AL_POLICY_COUNT ? policies[p].name : "?";
}

int
al_policy_find(const char *name)
{
    for (int i = 0; i < AL_POLICY_COUNT; i++)
        if (strcmp(policies[i].name, name) == 0)
            return i;
    return -1;
}

const policy_t *
al__policy_get(al_policy_t p)
{
    return &policies[p];
}

/* splitmix64's finaliser (Steele, Lea and Flood, OOPSLA '14): a bijection
 * of 64-bit words whose outputs pass BigCrush for consecutive inputs. */
static uint64_t
mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

double
al_sim_estimate_noise(uint64_t seed, const char *job_id, double noise)
{
    if (noise == 0)
        return 1.0;
    /* Two uniforms from (seed, id), then Box-Muller.  u1 lies in (0, 1], so
     * the logarithm is finite; |z| stays below 8.6.  (6.28... is 2 pi:
     * M_PI is not in C17.) */
    uint64_t a = mix64(mix64(seed) ^ al__hash(job_id));
    uint64_t b = mix64(a);
    double u1 = (double)((a >> 11) + 1) * 0x1.0p-53;
    double u2 = (double)(b >> 11) * 0x1.0p-53;
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return exp(noise * z);
}

/* ceil(rem x factor x mult) within [1, AL_SIM_MAX_ESTIMATE]. */
int64_t
al__estimate_of(int64_t rem, double factor, double mult)
{
    double e = ceil((double)rem * factor * mult);
    if (!(e >= 1))
        return 1;
    return e >= (double)AL_SIM_MAX_ESTIMATE ? AL_SIM_MAX_ESTIMATE : (int64_t)e;
}

int64_t
al_sim_estimate(const al_sim_opts_t *o, const char *job_id, int64_t rem)
{
    return al__estimate_of(
        rem, o->estimate_factor,
        al_sim_estimate_noise(o->estimate_seed, job_id, o->estimate_noise));
}

int
al__policy_priority(const sim_t *s, const sjob_t *j, int64_t now)
{
    if (s->pol->oracle)
        return j->prio_oracle;
    if (s->pol->las) {
        double att = j->attained;
        if (j->state == S_RUNNING)
            att += (double)(now - j->start) * (double)j->total / AL_GPU_MILLI;
        int level = 0;
        while (level < s->o->ntiresias &&
               att >= s->o->tiresias_thresholds[level])
            level++;
        return AL_PRIO_TRAIN - level;
    }
    return AL_PRIO_TRAIN;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* sjf-oracle: shorter true duration = higher priority (rank based, so the
 * values stay small). */
void
al__policy_oracle(sim_t *s)
{
    int64_t *d = al_xmalloc((size_t)(s->njobs + 1) * sizeof(int64_t));
    for (int i = 0; i < s->njobs; i++)
        d[i] = s->tr->jobs[i].duration;
    qsort(d, (size_t)s->njobs, sizeof(int64_t), cmp_i64);
    int nd = 0;
    for (int i = 0; i < s->njobs; i++)
        if (nd == 0 || d[nd - 1] != d[i])
            d[nd++] = d[i];
    for (int i = 0; i < s->njobs; i++) {
        int64_t v = s->tr->jobs[i].duration;
        int lo = 0, hi = nd - 1;
        while (lo < hi) {
            int m = (lo + hi) / 2;
            if (d[m] < v)
                lo = m + 1;
            else
                hi = m;
        }
        s->jobs[i].prio_oracle = 1 + (nd - 1 - lo);
    }
    free(d);
}

/* Schedules the moment running job i's attained service crosses its next
 * Tiresias threshold (nothing after the last one). */
void
al__policy_prio_event(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    double gpus = (double)j->total / AL_GPU_MILLI;
    if (gpus <= 0)
        return;
    /* Service attained so far, the current run included. */
    double att = j->attained + (double)(now - j->start) * gpus;
    for (int l = 0; l < s->o->ntiresias; l++) {
        double thr = s->o->tiresias_thresholds[l];
        if (att < thr) {
            int64_t dt = (int64_t)ceil((thr - att) / gpus);
            al__ev_push(
                s, (event_t){ now + (dt > 0 ? dt : 1), EV_PRIO, i, j->seq });
            return;
        }
    }
}
