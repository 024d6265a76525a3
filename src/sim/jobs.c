/*
 * jobs.c -- a job's state changes during a run (arrives, starts, is
 * evicted, completes, found unschedulable), the resources its placement
 * takes on the nodes' devices and CPUs, and whether a job fits (now, or
 * ever).  The run's first error is kept here too (al__sim_error).
 *
 * May call: events.c (a start's completion event), policy.c (Tiresias'
 * priority events), src/common's allocation and buffers.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

void
al__act_add(sim_t *s, int i)
{
    s->act[s->nact] = i;
    s->jobs[i].act = s->nact++;
}

static void
act_remove(sim_t *s, int i)
{
    int pos = s->jobs[i].act;
    int last = s->act[--s->nact];
    s->act[pos] = last;
    s->jobs[last].act = pos;
    s->jobs[i].act = -1;
}

void
al__sim_error(sim_t *s, int rc, const char *fmt, ...)
{
    if (s->err != NULL)
        return;
    al_buf_t b = AL_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    al_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    s->err = al_buf_steal(&b);
    s->rc = rc;
}

/* Takes or returns the resources of j's placement (sign +1 or -1). */
static int
account(sim_t *s, int i, int sign)
{
    sjob_t *j = &s->jobs[i];
    int bad = 0;
    for (int t = 0; t < j->ntasks; t++) {
        const al_placement_t *p = &j->place[t];
        int n = p->node;
        const al_node_t *nd = &s->cl->nodes[n];
        s->cpu_used[n] += sign * j->cpu;
        for (int d = 0; d < nd->ndevices; d++) {
            if (!(p->devices >> d & 1))
                continue;
            int32_t *u = &s->dev_used[s->dev_base[n] + d];
            int32_t amt = j->gpus > 0 ? AL_GPU_MILLI : p->gpu_milli;
            if (j->gpus == 0 && amt == 0)
                amt = j->milli;
            bool was_free = *u == 0;
            *u += sign * amt;
            if (*u > AL_GPU_MILLI || *u < 0)
                bad = 1;
            if (was_free && *u != 0)
                s->free_whole[n]--;
            else if (!was_free && *u == 0)
                s->free_whole[n]++;
        }
    }
    s->alloc += sign * j->total;
    s->cq_alloc[j->cq] += sign * j->total;
    s->mq_alloc[j->mq] += sign * j->total;
    return bad;
}

/* An elastic job's pace: work (seconds at its least size) per second. */
static double
pace(const sjob_t *j)
{
    return (double)j->ntasks / (double)j->min_tasks;
}

/* Seconds from seg_start until running job j ends at its size now (a job
 * of one size: its duration less the work saved). */
static int64_t
elastic_left(const sjob_t *j, const al_trace_job_t *tj)
{
    double left = (double)(tj->duration - j->saved) - j->seg_work;
    if (left <= 0)
        return 0;
    if (j->max_tasks <= j->min_tasks)
        return (int64_t)left;
    return (int64_t)ceil(left / pace(j) - 1e-9);
}

/* Counts the restart overhead running job i has paid up to `now` (at its
 * size then) into its figures and the run's. */
static void
charge_overhead(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    int64_t t = now < j->ovh_end ? now : j->ovh_end;
    if (t <= j->ovh_from)
        return;
    int64_t g = (t - j->ovh_from) * j->total;
    s->r->jobs[i].restart += g;
    s->r->restart_gpu_s += (double)g / AL_GPU_MILLI;
    j->ovh_from = t;
}

void
al__job_shrink(sim_t *s, int i, int stop, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    if (j->max_tasks <= j->min_tasks || stop <= 0 ||
        j->ntasks - stop < j->min_tasks) {
        al__sim_error(s, AL_EINVAL,
                      "core shrank job %s by %d tasks from %d (least %d)",
                      s->tr->jobs[i].id, stop, j->ntasks, j->min_tasks);
        return;
    }
    charge_overhead(s, i, now);
    if (now > j->seg_start) {
        j->seg_work += (double)(now - j->seg_start) * pace(j);
        j->seg_start = now;
    }
    j->attained += (double)(now - j->start) * (double)j->total / AL_GPU_MILLI;
    j->served += al_service(now - j->start, j->ntasks, j->task_milli);
    account(s, i, -1);
    j->ntasks -= stop;
    j->total = j->task_milli * j->ntasks;
    account(s, i, +1);
    j->start = now; /* attained counts from here at the new size */
    j->seq++;
    s->r->jobs[i].resizes++;
    al__ev_push(s, (event_t){ j->seg_start + elastic_left(j, &s->tr->jobs[i]),
                              EV_END, i, j->seq });
}

void
al__job_start(sim_t *s, int i, const al_decision_t *d, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    const al_trace_job_t *tj = &s->tr->jobs[i];
    al_sim_job_t *rj = &s->r->jobs[i];
    bool elastic = j->max_tasks > j->min_tasks;
    if (elastic ? d->ntasks < j->min_tasks || d->ntasks > j->max_tasks
                : d->ntasks != j->ntasks) {
        al__sim_error(s, AL_EINVAL,
                      "core started job %s with %d tasks, it has %d..%d",
                      tj->id, d->ntasks, j->min_tasks, j->max_tasks);
        return;
    }
    /* Pending, an elastic job counted at its least size. */
    int64_t pend_total = j->total;
    if (elastic) {
        j->ntasks = d->ntasks;
        j->total = j->task_milli * j->ntasks;
    }
    j->place =
        al_xrealloc(j->place, (size_t)j->ntasks * sizeof(al_placement_t));
    memcpy(j->place, d->tasks, (size_t)j->ntasks * sizeof(al_placement_t));
    for (int t = 0; t < j->ntasks; t++)
        if (j->place[t].node < 0 || j->place[t].node >= s->cl->nnodes) {
            al__sim_error(s, AL_EINVAL, "core placed job %s on node %d", tj->id,
                          j->place[t].node);
            return;
        }
    j->state = S_RUNNING;
    j->start = now;
    j->lent = d->lent;
    j->seq++;
    s->npend--;
    s->nrun++;
    s->mq_pend[j->mq] -= pend_total;
    rj->pending += now - j->pend_since;
    if (rj->first_start < 0)
        rj->first_start = now;
    if (account(s, i, +1))
        al__sim_error(
            s, AL_EINVAL,
            "core over-committed a GPU when starting job %s at t=%lld", tj->id,
            (long long)now);
    /* A job evicted before first reloads its checkpoint: the overhead. */
    int64_t ovh = j->evicted ? s->o->restart_overhead : 0;
    j->ovh_from = now;
    j->ovh_end = now + ovh;
    j->seg_start = now + ovh;
    j->seg_work = 0;
    al__ev_push(
        s, (event_t){ j->seg_start + elastic_left(j, tj), EV_END, i, j->seq });
    if (s->pol->las)
        al__policy_prio_event(s, i, now);
}

void
al__job_evict(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    al_sim_job_t *rj = &s->r->jobs[i];
    int64_t run = now - j->start;
    /* Work is done after the restart overhead; checkpoints are taken every
     * interval of it.  The overhead paid is counted apart. */
    charge_overhead(s, i, now);
    int64_t useful = now > j->seg_start ? now - j->seg_start : 0;
    int64_t keep =
        s->o->checkpoint > 0 ? useful / s->o->checkpoint * s->o->checkpoint : 0;
    int64_t lost = useful - keep;
    if (j->max_tasks > j->min_tasks) {
        /* The work of this run at its sizes, kept in the proportion the
         * checkpoints keep of its time since the last resize. */
        double kept = j->seg_work + (double)keep * pace(j);
        j->saved += (int64_t)kept;
    } else {
        j->saved += keep;
    }
    j->attained += (double)run * (double)j->total / AL_GPU_MILLI;
    j->served += al_service(run, j->ntasks, j->task_milli);
    rj->lost += lost * j->total;
    rj->preemptions++;
    s->r->preemptions++;
    s->r->lost_gpu_s += (double)lost * (double)j->total / AL_GPU_MILLI;
    account(s, i, -1);
    j->evicted = true;
    j->state = S_PENDING;
    j->seq++;
    j->pend_since = now;
    j->eligible = now;
    j->lent = false;
    s->nrun--;
    s->npend++;
    if (j->max_tasks > j->min_tasks) {
        j->ntasks = j->min_tasks; /* it waits at its least size */
        j->total = j->task_milli * j->ntasks;
    }
    s->mq_pend[j->mq] += j->total;
}

void
al__job_complete(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    charge_overhead(s, i, now);
    account(s, i, -1);
    j->state = S_DONE;
    j->seq++;
    s->nrun--;
    s->r->jobs[i].end = now;
    act_remove(s, i);
    free(j->place);
    j->place = NULL;
}

void
al__job_unschedulable(sim_t *s, int i)
{
    sjob_t *j = &s->jobs[i];
    j->state = S_UNSCHED;
    s->npend--;
    s->mq_pend[j->mq] -= j->total;
    s->r->jobs[i].unschedulable = true;
    act_remove(s, i);
}

/* Tasks of job j node n could hold, given its free resources (or all of
 * them when empty). */
static int64_t
node_fits(const sim_t *s, const sjob_t *j, int n, bool empty, int64_t want)
{
    const al_node_t *nd = &s->cl->nodes[n];
    if (nd->state != AL_NODE_READY)
        return 0;
    int64_t cnt;
    if (j->gpus > 0) {
        cnt = (empty ? nd->ndevices : s->free_whole[n]) / j->gpus;
    } else if (j->milli > 0) {
        cnt = 0;
        for (int d = 0; d < nd->ndevices && cnt < want; d++) {
            int32_t used = empty ? 0 : s->dev_used[s->dev_base[n] + d];
            if (AL_GPU_MILLI - used >= j->milli)
                cnt++;
        }
    } else {
        cnt = want;
    }
    if (j->cpu > 0) {
        int64_t fc = nd->cpu_milli - (empty ? 0 : s->cpu_used[n]);
        int64_t c = fc / j->cpu;
        if (c < cnt)
            cnt = c;
    }
    return cnt;
}

bool
al__job_fits(const sim_t *s, const sjob_t *j, bool empty)
{
    int64_t cnt = 0;
    for (int n = 0; n < s->cl->nnodes && cnt < j->ntasks; n++)
        cnt += node_fits(s, j, n, empty, j->ntasks - cnt);
    return cnt >= j->ntasks;
}

/* Whether job j can never start under the policy. */
bool
al__job_never_fits(const sim_t *s, const sjob_t *j)
{
    if (!al__job_fits(s, j, true))
        return true;
    if (s->pol->single_queue || s->cfg.ignore_queues)
        return false;
    /* Limits at every ancestor; deserved quota under the static policy. */
    for (int q = j->cq; q >= 0; q = s->cq[q].parent) {
        const al_quota_t *g = &s->cq[q].quota[AL_RES_GPU];
        if (g->limit != AL_UNLIMITED && j->total > g->limit)
            return true;
        if (!s->cfg.borrow && j->total > g->deserved)
            return true;
    }
    return false;
}
