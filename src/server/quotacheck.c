/*
 * quotacheck.c -- a queue's quotas checked against each other before
 * POST/PUT /v1/queues stores them: within each resource, deserved at most
 * the limit; within each GPU model, deserved at most its limit and the
 * limit at most the queue's GPU limit; the models' deserved together at
 * most the queue's deserved GPUs; and in the tree, the children's
 * deserved together at most their parent's, for each resource (checked
 * both when a child is set and when its parent is).  Each refusal names
 * the queue, the resource and both amounts.  Quotas read back from the
 * store are not checked here: what was accepted before keeps loading.
 *
 * May call: the controller's tables (al__ctl_queue) and common's
 * allocation helpers.  Called by api_queues.c.
 */
#include <string.h>

#include "server_int.h"
#include "xmalloc.h"

static const char *const names[AL_NRES] = { "gpu", "cpu", "mem" };

/* Amount v of resource r in its wire unit (GPUs, cores, bytes). */
static double
wire(int r, int64_t v)
{
    return r == AL_RES_MEM ? (double)v : (double)v / 1000.0;
}

static bool
over_limit(int64_t deserved, int64_t limit)
{
    return limit != AL_UNLIMITED && deserved > limit;
}

/* The deserved amount of resource r that q's children (as they will be
 * with q as given) hold together. */
static int64_t
children_deserved(const al_ctl_t *ctl, const al__queue_t *q, int r)
{
    int64_t sum = 0;
    for (int i = 0; i < ctl->nqueues; i++) {
        const al__queue_t *c = &ctl->queues[i];
        if (c->parent != NULL && strcmp(c->parent, q->name) == 0 &&
            strcmp(c->name, q->name) != 0)
            sum += c->quota[r].deserved;
    }
    return sum;
}

char *
al__quota_check(al_ctl_t *ctl, const al__queue_t *q)
{
    for (int r = 0; r < AL_NRES; r++)
        if (over_limit(q->quota[r].deserved, q->quota[r].limit))
            return al_xasprintf("queue %s: %s deserved %g is over its limit "
                                "%g (a queue is guaranteed no more than it "
                                "may use)",
                                q->name, names[r],
                                wire(r, q->quota[r].deserved),
                                wire(r, q->quota[r].limit));
    int64_t models = 0;
    const al_quota_t *gq = &q->quota[AL_RES_GPU];
    for (int m = 0; m < q->nmquotas; m++) {
        const al_model_quota_t *mq = &q->mquotas[m];
        if (over_limit(mq->deserved, mq->limit))
            return al_xasprintf("queue %s: gpu.%s deserved %g is over its "
                                "limit %g",
                                q->name, mq->model, wire(0, mq->deserved),
                                wire(0, mq->limit));
        if (gq->limit != AL_UNLIMITED &&
            (mq->limit == AL_UNLIMITED ? mq->deserved > gq->limit
                                       : mq->limit > gq->limit))
            return al_xasprintf(
                "queue %s: gpu.%s limit %g is over the "
                "queue's gpu limit %g",
                q->name, mq->model,
                wire(0, mq->limit == AL_UNLIMITED ? mq->deserved : mq->limit),
                wire(0, gq->limit));
        models += mq->deserved;
    }
    if (models > gq->deserved)
        return al_xasprintf("queue %s: the GPU models' deserved quotas "
                            "together (%g) are over the queue's gpu "
                            "deserved %g",
                            q->name, wire(0, models), wire(0, gq->deserved));
    for (int r = 0; r < AL_NRES; r++) {
        int64_t below = children_deserved(ctl, q, r);
        if (below > q->quota[r].deserved)
            return al_xasprintf("queue %s: %s deserved %g is under what its "
                                "sub-queues deserve together (%g)",
                                q->name, names[r],
                                wire(r, q->quota[r].deserved), wire(r, below));
    }
    const al__queue_t *p =
        q->parent != NULL ? al__ctl_queue(ctl, q->parent) : NULL;
    if (p == NULL)
        return NULL;
    for (int r = 0; r < AL_NRES; r++) {
        /* The siblings as they are, this queue as it will be. */
        int64_t sum = children_deserved(ctl, p, r) + q->quota[r].deserved;
        const al__queue_t *old = al__ctl_queue(ctl, q->name);
        if (old != NULL && old->parent != NULL &&
            strcmp(old->parent, p->name) == 0)
            sum -= old->quota[r].deserved;
        if (sum > p->quota[r].deserved)
            return al_xasprintf("queue %s: the sub-queues of %s would "
                                "deserve %g %s together, over %s's "
                                "deserved %g",
                                q->name, p->name, wire(r, sum), names[r],
                                p->name, wire(r, p->quota[r].deserved));
    }
    return NULL;
}
