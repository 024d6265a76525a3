/*
 * fairshare.c -- hierarchical water-filling of capacity over the queue tree.
 *
 * At every level the parent's share is split among its children in three
 * steps, per resource:
 *   1. each child gets its deserved quota, bounded by its demand and limit
 *      (scaled down proportionally if the deserved quotas overbook the
 *      parent);
 *   2. what is left goes to children that still want more, one queue
 *      priority level at a time (highest first), split by over-quota weight
 *      and water-filled: a child that needs less than its split takes only
 *      what it needs and the rest is split again among the others;
 *   3. the children recurse with their share as their parent amount.
 * Time-based fair share bends the weights of step 2 by decayed usage: a
 * child whose share of its siblings' recent usage exceeds its share of their
 * weight gets a smaller effective weight, so a queue that hogged yesterday
 * yields today.
 */
#include <math.h>
#include <string.h>

#include "core_int.h"

double
al_usage_decay(double usage, int64_t elapsed, int64_t half_life)
{
    if (half_life <= 0 || elapsed <= 0)
        return usage;
    return usage * exp2(-(double)elapsed / (double)half_life);
}

/* Upper bound of what queue q can use of resource r. */
static double
cap_of(const al_cycle_t *c, int32_t q, int r)
{
    double cap = (double)c->wq[q].demand[r];
    int64_t lim = c->s->queues[q].quota[r].limit;

    if (lim >= 0 && (double)lim < cap)
        cap = (double)lim;
    if (!c->cfg.borrow) {
        double d = (double)c->s->queues[q].quota[r].deserved;

        if (d < cap)
            cap = d;
    }
    return cap;
}

/* Step 1 of split(): each child its deserved quota of r, bounded by its
 * demand and limit, scaled down if they add up to more than `amount`.
 * Returns what is left. */
static double
give_deserved(al_cycle_t *c, const int32_t *kids, int nk, int r, double amount)
{
    double dsum = 0;
    int i;

    for (i = 0; i < nk; i++) {
        int32_t q = kids[i];
        double d = (double)c->s->queues[q].quota[r].deserved;
        double cap = cap_of(c, q, r);

        if (d < 0)
            d = 0;
        c->wq[q].fair[r] = d < cap ? d : cap;
        dsum += c->wq[q].fair[r];
    }
    if (dsum > amount && dsum > 0) {
        for (i = 0; i < nk; i++)
            c->wq[kids[i]].fair[r] *= amount / dsum;
        return 0;
    }
    return amount - dsum;
}

/* Splits `amount` of resource r among the children kids[0..nk). */
static void
split(al_cycle_t *c, const int32_t *kids, int nk, int r, double amount,
      const double *weff, bool *open)
{
    double left;
    int i;

    if (nk == 0)
        return;
    /* Step 1: deserved, bounded by demand and limit. */
    left = give_deserved(c, kids, nk, r, amount);

    /* Step 2: the surplus by priority level, then weight. */
    while (left > 1e-9) {
        int prio = 0, nopen = 0;
        bool any = false;

        for (i = 0; i < nk; i++) {
            int32_t q = kids[i];

            open[i] = weff[i] > 0 && cap_of(c, q, r) - c->wq[q].fair[r] > 1e-9;
            if (open[i] && (!any || c->s->queues[q].priority > prio)) {
                prio = c->s->queues[q].priority;
                any = true;
            }
        }
        if (!any)
            break;
        for (i = 0; i < nk; i++) {
            if (open[i] && c->s->queues[kids[i]].priority != prio)
                open[i] = false;
            nopen += open[i];
        }
        /* Water-fill this level until it is saturated or nothing is left. */
        while (nopen > 0 && left > 1e-9) {
            double wsum = 0, given = 0;
            bool capped = false;

            for (i = 0; i < nk; i++)
                if (open[i])
                    wsum += weff[i];
            for (i = 0; i < nk; i++) {
                int32_t q = kids[i];
                double want;

                if (!open[i])
                    continue;
                want = cap_of(c, q, r) - c->wq[q].fair[r];
                if (left * weff[i] / wsum >= want) {
                    c->wq[q].fair[r] += want;
                    given += want;
                    open[i] = false;
                    nopen--;
                    capped = true;
                }
            }
            if (capped) {
                left -= given;
                continue;
            }
            for (i = 0; i < nk; i++)
                if (open[i])
                    c->wq[kids[i]].fair[r] += left * weff[i] / wsum;
            left = 0;
        }
        if (nopen > 0)
            break; /* this level absorbed everything */
    }
}

/* Effective surplus weights of the children, bent by usage history. */
static void
weights(const al_cycle_t *c, const int32_t *kids, int nk, int r, double *weff)
{
    double wsum = 0, usum = 0;
    int i;

    for (i = 0; i < nk; i++) {
        double w = c->s->queues[kids[i]].quota[r].weight;

        weff[i] = w > 0 ? w : 0;
        wsum += weff[i];
        usum += c->wq[kids[i]].usage;
    }
    if (c->cfg.usage_weight <= 0 || usum <= 0 || wsum <= 0)
        return;
    for (i = 0; i < nk; i++) {
        double ws = weff[i] / wsum, us = c->wq[kids[i]].usage / usum, f;

        if (ws <= 0)
            continue;
        f = exp(-c->cfg.usage_weight * (us - ws) / ws);
        if (f < 0.2)
            f = 0.2;
        if (f > 5)
            f = 5;
        weff[i] *= f;
    }
}

void
al__fairshare(al_cycle_t *c)
{
    int32_t q, *kids = NULL;
    double *weff = NULL;
    bool *open = NULL;
    double total[AL_NRES] = { 0, 0, 0 };
    int n, r;

    /* Capacity: every node that is not down. */
    for (n = 0; n < c->nn; n++) {
        const al_node_t *nd = &c->s->nodes[n];

        if (nd->state == AL_NODE_DOWN)
            continue;
        total[AL_RES_GPU] += (double)nd->ndevices * AL_GPU_MILLI;
        total[AL_RES_CPU] += (double)nd->cpu_milli;
        total[AL_RES_MEM] += (double)nd->mem_bytes;
    }
    /* Scratch sized for the widest sibling set (at most nq). */
    kids = al_arena_array(c->tmp, (size_t)c->nq + 1, sizeof(*kids));
    weff = al_arena_array(c->tmp, (size_t)c->nq + 1, sizeof(*weff));
    open = al_arena_array(c->tmp, (size_t)c->nq + 1, sizeof(*open));
    if (kids == NULL || weff == NULL || open == NULL) {
        /* Without scratch, fall back to deserved quotas: still safe. */
        for (q = 0; q < c->nq; q++)
            for (r = 0; r < AL_NRES; r++)
                c->wq[q].fair[r] = (double)c->s->queues[q].quota[r].deserved;
        return;
    }
    /* Parents come before children, so one pass per parent (top-level
     * queues have the virtual root, -1, as parent). */
    for (q = -1; q < c->nq; q++) {
        int nk = 0;
        int32_t k;

        if (q >= 0 && c->wq[q].leaf)
            continue;
        for (k = q + 1; k < c->nq; k++)
            if (c->wq[k].parent == q && c->wq[k].valid)
                kids[nk++] = k;
        if (nk == 0)
            continue;
        for (r = 0; r < AL_NRES; r++) {
            double amount = q < 0 ? total[r] : c->wq[q].fair[r];

            weights(c, kids, nk, r, weff);
            split(c, kids, nk, r, amount, weff, open);
        }
    }
}
