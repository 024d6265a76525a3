/*
 * quota.c -- admission: what a job's queue chain may still take.
 *
 * Owns: al__admit (the request against limits, borrowing and deserved
 * quotas before placement), al__within_quota (what placement really
 * charged), al__model_forbid (per-GPU-model limits as groups a job may not
 * use).  Calls: only the inline helpers of core_int.h.  Called by place.c,
 * reclaim.c and pass.c.
 */
#include <string.h>

#include "core_int.h"

static void
need_of(const al_cycle_t *c, int32_t j, int64_t ntasks, int64_t need[AL_NRES])
{
    const al_job_t *jb = &c->s->jobs[j];

    need[AL_RES_GPU] = ntasks * c->wj[j].task_gpu;
    need[AL_RES_CPU] = ntasks * jb->req.cpu_milli;
    need[AL_RES_MEM] = ntasks * jb->req.mem_bytes;
}

bool
al__admit(al_cycle_t *c, int32_t j, int64_t ntasks)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need[AL_NRES];
    int32_t q;
    int r, k;

    if (c->cfg.ignore_queues)
        return true;
    need_of(c, j, ntasks, need);
    for (q = jb->queue; q != NIL; q = c->wq[q].parent) {
        const al_queue_t *qq = &c->s->queues[q];
        const wqueue_t *w = &c->wq[q];

        for (r = 0; r < AL_NRES; r++) {
            int64_t lim = qq->quota[r].limit;

            if (need[r] == 0)
                continue;
            if (lim >= 0 && w->alloc[r] + need[r] > lim)
                return set_reason(c, j, AL_WHY_LIMIT, q, NIL, r, lim, 0);
            if (!c->cfg.borrow &&
                (r == AL_RES_GPU || qq->quota[r].deserved > 0) &&
                w->alloc[r] + need[r] > qq->quota[r].deserved)
                return set_reason(c, j, AL_WHY_NO_BORROW, q, NIL, r,
                                  qq->quota[r].deserved, 0);
        }
        if (!jb->preemptible && need[AL_RES_GPU] > 0 &&
            w->nonpre_gpu + need[AL_RES_GPU] > qq->quota[AL_RES_GPU].deserved)
            return set_reason(c, j, AL_WHY_DESERVED, q, NIL, AL_RES_GPU,
                              qq->quota[AL_RES_GPU].deserved, 0);
        if (jb->build && qq->build_capped && need[AL_RES_GPU] > 0 &&
            w->build_gpu + need[AL_RES_GPU] > qq->build_cap)
            return set_reason(c, j, AL_WHY_BUILD_CAP, q, NIL, AL_RES_GPU,
                              qq->build_cap, 0);
        if (jb->req.gpu_model != NULL && w->model_alloc != NULL) {
            for (k = 0; k < qq->nmodel_quotas; k++) {
                const al_model_quota_t *mq = &qq->model_quotas[k];

                if (mq->model == NULL ||
                    strcmp(mq->model, jb->req.gpu_model) != 0)
                    continue;
                if (mq->limit >= 0 &&
                    w->model_alloc[k] + need[AL_RES_GPU] > mq->limit)
                    return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL,
                                      AL_RES_GPU, mq->limit, 0);
                if (!jb->preemptible &&
                    w->model_nonpre[k] + need[AL_RES_GPU] > mq->deserved)
                    return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL,
                                      AL_RES_GPU, mq->deserved, 0);
            }
        }
    }
    return true;
}

/*
 * After placing job j (its tasks already charged), does its queue chain
 * still respect every limit, and non-preemptible work its deserved quota?
 * al__admit() judged the request; this judges what placement really charged,
 * which differs for fractions sized by device memory.  Sets the reason when
 * not.
 */
bool
al__within_quota(al_cycle_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    int32_t q;
    int r, k;

    if (c->cfg.ignore_queues)
        return true;
    for (q = jb->queue; q != NIL; q = c->wq[q].parent) {
        const al_queue_t *qq = &c->s->queues[q];
        const wqueue_t *w = &c->wq[q];

        for (r = 0; r < AL_NRES; r++) {
            int64_t lim = qq->quota[r].limit;

            if (lim >= 0 && w->alloc[r] > lim)
                return set_reason(c, j, AL_WHY_LIMIT, q, NIL, r, lim, 0);
            if (!c->cfg.borrow && w->alloc[r] > qq->quota[r].deserved &&
                (r == AL_RES_GPU || qq->quota[r].deserved > 0))
                return set_reason(c, j, AL_WHY_NO_BORROW, q, NIL, r,
                                  qq->quota[r].deserved, 0);
        }
        if (!jb->preemptible && w->nonpre_gpu > qq->quota[AL_RES_GPU].deserved)
            return set_reason(c, j, AL_WHY_DESERVED, q, NIL, AL_RES_GPU,
                              qq->quota[AL_RES_GPU].deserved, 0);
        if (jb->build && qq->build_capped && w->build_gpu > qq->build_cap)
            return set_reason(c, j, AL_WHY_BUILD_CAP, q, NIL, AL_RES_GPU,
                              qq->build_cap, 0);
        for (k = 0; k < qq->nmodel_quotas; k++) {
            const al_model_quota_t *mq = &qq->model_quotas[k];

            if (mq->limit >= 0 && w->model_alloc[k] > mq->limit)
                return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL, AL_RES_GPU,
                                  mq->limit, 0);
            if (!jb->preemptible && w->model_nonpre[k] > mq->deserved)
                return set_reason(c, j, AL_WHY_MODEL_LIMIT, q, NIL, AL_RES_GPU,
                                  mq->deserved, 0);
        }
    }
    return true;
}

/*
 * Per-GPU-model limits.  A request without a model may land on any model,
 * so the limit is enforced by placement: the groups whose model would take
 * a queue of j's chain past its limit for that model (with `ntasks` more
 * tasks) are forbidden while j is placed.  Returns the mask and notes the
 * first queue that forbade something in *q and its limit in *lim.
 */
uint64_t
al__model_forbid(al_cycle_t *c, int32_t j, int64_t ntasks, int32_t *q,
                 int64_t *lim)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need = ntasks * c->wj[j].task_gpu;
    uint64_t mask = 0;
    int32_t a, g;
    int k;

    if (c->cfg.ignore_queues || need == 0 || c->ngroups > 64)
        return 0;
    for (a = jb->queue; a != NIL; a = c->wq[a].parent) {
        const al_queue_t *qq = &c->s->queues[a];

        for (k = 0; k < qq->nmodel_quotas; k++) {
            const al_model_quota_t *mq = &qq->model_quotas[k];

            bool over =
                mq->limit >= 0 && c->wq[a].model_alloc[k] + need > mq->limit;

            if (!jb->preemptible &&
                c->wq[a].model_nonpre[k] + need > mq->deserved)
                over = true;
            if (mq->model == NULL || !over)
                continue;
            for (g = 0; g < c->ngroups; g++)
                if (c->groups[g].model != NULL &&
                    strcmp(c->groups[g].model, mq->model) == 0 &&
                    !((mask >> g) & 1)) {
                    mask |= 1ULL << g;
                    if (*q == NIL) {
                        *q = a;
                        *lim = jb->preemptible ? mq->limit : mq->deserved;
                    }
                }
        }
    }
    return mask;
}
