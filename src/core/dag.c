/*
 * dag.c -- pipelines: what the core does with the graph of dependencies:
 * the critical path that orders ready stages (order.c reads it) and the
 * look-ahead reservations of stages whose input runs.
 *
 * Critical path.  Each job's crit is the most work that waits on it: over
 * the jobs that run after it, the longest chain of their expected
 * runtimes.  A job that stands for a job array's stage (array_waves > 1)
 * counts its runtime once per round of the array: elements left over the
 * array's parallelism bound, rounded up, which is how long the stage
 * takes when each round runs side by side.  Success and always edges
 * count the chain behind them whole; a failure edge (a cleanup that runs
 * only when its input fails) counts FAIL_SHARE of it: failures are the
 * exception, so a cleanup chain should not outrank the chain of a stage
 * that will run, yet a stage whose failure starts a long recovery should
 * rank above an equal stage whose failure starts nothing.  A quarter is a
 * judgement, not a measurement: it lets a failure chain win only when it
 * is over four times longer than what runs on success.
 *
 * Look-ahead.  A job that waits for dependencies which all run now will be
 * ready when the last of them ends (their start plus expected runtime).
 * It gets a reservation for that time, made before any backfill
 * reservation of the cycle, so that a blocked job's reservation does not
 * plan on the capacity the ending stage gives back and the next stage
 * starts there as soon as its input is done.  The capacity its inputs
 * give back is busy until then, so holding it costs nothing; what the
 * stage needs beyond that (a 1-GPU evaluation after a CPU step, a gang
 * after a smaller stage) is free now.  With lookahead_hold that part is
 * held like a backfill reservation's room: work that ends in time may
 * use it, preemptible work may borrow it (lend_reserved), and nothing
 * else delays the stage.  Without it a look-ahead holds nothing today and
 * only claims the future that later reservations sweep.  A stage that
 * overruns its estimate (its expected end has passed) drops the
 * look-ahead of what waits on it; CPU-only jobs get none, and neither
 * does a job behind a failure edge (it runs only if its input fails,
 * which the input's end does not foretell), nor one whose input is an
 * array element with rounds of its array still to come after it (the
 * stage is ready at the last round's end, not this one's).
 *
 * Owns: al__critical_path, al__dag_max, al__dag_lookahead.  Calls:
 * reserve.c (al__reserve, the holds), order.c (al__skey_sort).  Called by
 * pass.c.
 */
#include <string.h>

#include "core_int.h"

/* The share of the chain behind a failure edge that counts (a quarter:
 * see the header). */
#define FAIL_SHARE_NUM 1
#define FAIL_SHARE_DEN 4

/* Job x's own work on the critical path: its expected runtime, once per
 * round of the array it stands for. */
static int64_t
path_work(const al_cycle_t *c, const al_job_t *xb)
{
    int64_t t = job_runtime(c, xb);

    if (xb->array_waves > 1 && t > 0)
        t = t > INT64_MAX / xb->array_waves ? INT64_MAX : t * xb->array_waves;
    return t;
}

int
al__critical_path(al_cycle_t *c)
{
    int32_t *indeg, *order, *roff, *radj, *fill, head = 0, tail = 0, j;
    int64_t nedges = 0;
    int d;

    if (c->cfg.ignore_deps)
        return 0; /* a dependency-blind order */
    for (j = 0; j < c->nj; j++)
        nedges += c->s->jobs[j].ndeps > 0 ? c->s->jobs[j].ndeps : 0;
    if (nedges == 0)
        return 0;
    indeg = al_arena_array(c->tmp, (size_t)c->nj, sizeof(int32_t));
    order = al_arena_array(c->tmp, (size_t)c->nj, sizeof(int32_t));
    roff = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(int32_t));
    fill = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(int32_t));
    radj = al_arena_array(c->tmp, (size_t)nedges, sizeof(int32_t));
    if (!indeg || !order || !roff || !fill || !radj)
        return AL_ENOMEM;
    /* Edges dep -> job ("job runs after dep"); we walk from sinks up, so
     * keep for every dep the list of jobs that wait for it. */
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];

        for (d = 0; d < jb->ndeps; d++)
            roff[jb->deps[d].job + 1]++;
    }
    for (j = 0; j < c->nj; j++)
        roff[j + 1] += roff[j];
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];

        for (d = 0; d < jb->ndeps; d++) {
            int32_t dep = jb->deps[d].job;

            radj[roff[dep] + fill[dep]++] = j;
        }
        indeg[j] = 0;
    }
    /* Process in reverse topological order: a job is done once all the
     * jobs waiting for it are done.  Count, per job, its waiters. */
    for (j = 0; j < c->nj; j++)
        indeg[j] = roff[j + 1] - roff[j];
    for (j = 0; j < c->nj; j++)
        if (indeg[j] == 0)
            order[tail++] = j;
    while (head < tail) {
        int32_t x = order[head++];
        const al_job_t *jb = &c->s->jobs[x];
        int64_t own = c->wj[x].crit, w = path_work(c, jb);

        own = own > INT64_MAX - w ? INT64_MAX : own + w;
        for (d = 0; d < jb->ndeps; d++) {
            int32_t dep = jb->deps[d].job;
            int64_t via = own;

            if (jb->deps[d].when == AL_EDGE_FAILURE)
                via = own / FAIL_SHARE_DEN * FAIL_SHARE_NUM;
            if (via > c->wj[dep].crit)
                c->wj[dep].crit = via;
            if (--indeg[dep] == 0)
                order[tail++] = dep;
        }
    }
    /* Jobs on a cycle (tail < nj) keep what they got: no infinite loop. */
    return 0;
}

int32_t
al__dag_max(const al_cycle_t *c)
{
    if (c->cfg.ignore_deps || c->cfg.lookahead_depth <= 0)
        return 0;
    return c->cfg.lookahead_depth < c->nj ? c->cfg.lookahead_depth : c->nj;
}

/* When waiting job j will be ready: the latest expected end of its
 * dependencies when all of them run and none is overdue, within the
 * horizon; INT64_MIN when j gets no look-ahead. */
static int64_t
ready_at(const al_cycle_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t t = INT64_MIN;
    int d;

    if (jb->state != AL_JOB_PENDING || jb->dep_state != AL_DEPS_WAITING ||
        jb->ndeps <= 0 || !queue_ok(c, jb->queue) ||
        al_request_gpu_milli(&jb->req) <= 0)
        return INT64_MIN;
    for (d = 0; d < jb->ndeps; d++) {
        int32_t x = jb->deps[d].job;
        const al_job_t *xb = &c->s->jobs[x];
        int64_t end;

        if (!(c->wj[x].flags & JF_RUNNING))
            return INT64_MIN; /* a stage further back: not the next one */
        if (jb->deps[d].when == AL_EDGE_FAILURE)
            return INT64_MIN; /* runs only if x fails: not foretold */
        if (xb->array_waves > 1)
            return INT64_MIN; /* rounds of x's array follow: not its end */
        end = xb->start_time + job_runtime(c, xb);
        if (end <= c->s->now)
            return INT64_MIN; /* overrun: when it ends is unknown */
        if (end > t)
            t = end;
    }
    if (c->cfg.lookahead_horizon > 0 &&
        t - c->s->now > c->cfg.lookahead_horizon)
        return INT64_MIN;
    return t;
}

int
al__dag_lookahead(al_cycle_t *c, resv_set_t *rs)
{
    int32_t max = al__dag_max(c), j;
    skey_t *cand;
    size_t n = 0, i;
    int rc = 0;

    if (max <= 0)
        return 0;
    cand = al_arena_array_raw(c->tmp, (size_t)c->nj + 1, sizeof(*cand));
    if (cand == NULL)
        return AL_ENOMEM;
    for (j = 0; j < c->nj; j++) {
        int64_t t = ready_at(c, j);

        if (t == INT64_MIN)
            continue;
        /* Nearest first; then the longer chain below; then the index. */
        cand[n].k[0] = bias(t);
        cand[n].k[1] =
            UINT64_MAX - (uint64_t)(c->wj[j].crit > 0 ? c->wj[j].crit : 0);
        cand[n].k[2] = 0;
        cand[n].k[3] = 0;
        cand[n].idx = j;
        n++;
    }
    rc = al__skey_sort(c, cand, n);
    for (i = 0; rc == 0 && i < n && rs->nlook < max; i++) {
        resv_int_t *rv = &rs->resv[rs->nresv];
        int32_t k;
        bool made;

        memset(rv, 0, sizeof(*rv));
        rs->not_before = (int64_t)(cand[i].k[0] ^ (1ULL << 63));
        rc = al__reserve(c, rs, cand[i].idx, rv, &made);
        if (rc != 0 || !made)
            continue;
        if (!c->cfg.lookahead_hold) {
            for (k = 0; k < rv->r.nnodes; k++) {
                rv->hold[k] = 0;
                rv->hcpu[k] = 0;
                rv->hmem[k] = 0;
            }
        } else {
            rc = al__apply_holds(c, rv);
            if (rc != 0)
                break;
            if (rv->r.start < c->min_resv_start)
                c->min_resv_start = rv->r.start;
        }
        rs->nresv++;
        rs->nlook++;
        c->stats.reservations++;
    }
    rs->not_before = 0;
    rs->held_dev = al__held_now(c, rs);
    return rc;
}
