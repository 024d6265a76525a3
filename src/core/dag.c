/*
 * dag.c -- pipelines: what the core does with the graph of dependencies
 * beyond ordering by critical path (order.c).
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
 * look-ahead of what waits on it; CPU-only jobs get none.
 *
 * Owns: al__dag_max, al__dag_lookahead.  Calls: reserve.c (al__reserve,
 * the holds), order.c (al__skey_sort).  Called by pass.c.
 */
#include <string.h>

#include "core_int.h"

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
