/*
 * place.c -- finding room: for one task (best fit over the buckets, a node
 * list or, with a workload profile, frag.c), and for a job's whole gang.
 *
 * Owns: al__find_task, al__place_gang (all or nothing, through the undo
 * log), pick_domain, al__record_start (the START decision), al__free_devices
 * and al__ever_fits.  Calls: capacity.c, frag.c, quota.c, vec.c.  Called by
 * reclaim.c, reserve.c and pass.c.
 */
#include <limits.h>
#include <string.h>

#include "core_int.h"

/* ------------------------------------------------------------------ */
/* Finding room for one task                                          */

/* Best fractional slot on node n: device with least room left after the
 * task (shared devices first).  Returns the device or -1. */
static int
frac_device(const al_cycle_t *c, int32_t n, const al_request_t *req,
            bool shared_only, int32_t *left)
{
    const wnode_t *w = &c->wn[n];
    uint64_t m = w->shared_mask;
    int best = -1;
    int32_t bestleft = INT32_MAX;

    while (m != 0) {
        int d = __builtin_ctzll(m);
        int32_t di = w->dev_off + d;
        int32_t need = frac_milli(c, req, di);
        int32_t room = AL_GPU_MILLI - c->dev_milli[di];

        m &= m - 1;
        if (room >= need && c->dev_cap[di] - c->dev_gmem[di] >= req->gpu_mem &&
            room - need < bestleft) {
            best = d;
            bestleft = room - need;
        }
    }
    if (best >= 0 || shared_only) {
        *left = bestleft;
        return best;
    }
    /* A fresh device: the one in the domain with fewest free devices. */
    {
        uint64_t av = avail_mask(w);
        uint64_t pick;

        if (av == 0)
            return -1;
        pick = al__pick_devices(c, w, av, 1);
        if (pick == 0)
            return -1;
        best = __builtin_ctzll(pick);
        if (frac_milli(c, req, w->dev_off + best) <= 0 ||
            c->dev_cap[w->dev_off + best] < req->gpu_mem)
            return -1;
        *left = AL_GPU_MILLI;
        return best;
    }
}

/* Fills p for task on node n if it fits there; returns true if so. */
static bool
fit_on(const al_cycle_t *c, int32_t n, const al_request_t *req,
       al_placement_t *p)
{
    const wnode_t *w = &c->wn[n];

    if (!w->ready || w->group == NIL || !cpu_mem_fit(w, req))
        return false;
    memset(p, 0, sizeof(*p));
    p->node = n;
    if (req->gpus > 0) {
        p->devices = al__pick_devices(c, w, avail_mask(w), req->gpus);
        /* The pick takes one domain whenever one holds the task. */
        return p->devices != 0 &&
               (!req->one_domain || al__one_domain(c, w, p->devices));
    }
    if (is_frac(req)) {
        int32_t left;
        int d = frac_device(c, n, req, false, &left);

        if (d < 0)
            return false;
        p->devices = 1ULL << d;
        p->gpu_milli = frac_milli(c, req, w->dev_off + d);
        p->gpu_mem = req->gpu_mem;
        return true;
    }
    return true;
}

static int64_t
node_slots(al_cycle_t *c, int32_t n, const al_request_t *req)
{
    const wnode_t *w = &c->wn[n];
    int64_t slots = INT32_MAX, cpu = w->free_cpu, mem = w->free_mem;

    if (!w->ready || w->group == NIL)
        return 0;
    if (req->cpu_milli > 0)
        slots = cpu / req->cpu_milli;
    else if (cpu < 0)
        slots = 0;
    if (req->mem_bytes > 0 && mem / req->mem_bytes < slots)
        slots = mem / req->mem_bytes;
    else if (mem < 0)
        slots = 0;
    if (req->gpus > 0) {
        int64_t g = popcount64(avail_mask(w)) / req->gpus;

        if (g < slots)
            slots = g;
    } else if (is_frac(req)) {
        /* Room on shared devices plus fresh ones, counted per device. */
        int64_t f = 0;
        uint64_t m = w->shared_mask | avail_mask(w);

        while (m != 0) {
            int d = __builtin_ctzll(m);
            int32_t di = w->dev_off + d;
            int32_t need = frac_milli(c, req, di);

            m &= m - 1;
            if (need > 0) {
                int64_t byms = (AL_GPU_MILLI - c->dev_milli[di]) / need;
                int64_t bymem =
                    req->gpu_mem > 0
                        ? (c->dev_cap[di] - c->dev_gmem[di]) / req->gpu_mem
                        : byms;
                f += byms < bymem ? byms : bymem;
            }
        }
        if (f < slots)
            slots = f;
    }
    return slots < 0 ? 0 : slots;
}

/* Scans an explicit node list (one node, or a topology domain). */
static int
find_in_list(al_cycle_t *c, const al_request_t *req, const int32_t *list,
             int32_t nlist, al_placement_t *out)
{
    int32_t i, best = NIL;
    al_placement_t p, bp;
    int32_t bestleft = INT32_MAX;

    memset(&bp, 0, sizeof(bp));
    for (i = 0; i < nlist; i++) {
        int32_t n = list[i];

        if (c->wn[n].group == NIL || !al__req_group(c, c->wn[n].group, req))
            continue;
        if (is_frac(req)) {
            /* Tightest shared device first, across the list. */
            int32_t left;

            if (!cpu_mem_fit(&c->wn[n], req) || !c->wn[n].ready)
                continue;
            if (frac_device(c, n, req, true, &left) >= 0 && left < bestleft) {
                bestleft = left;
                best = n;
                fit_on(c, n, req, &bp);
            }
            continue;
        }
        if (!fit_on(c, n, req, &p))
            continue;
        if (better(c, n, best)) {
            best = n;
            bp = p;
        }
    }
    if (best == NIL && is_frac(req)) {
        for (i = 0; i < nlist; i++) {
            int32_t n = list[i];

            if (c->wn[n].group == NIL || !al__req_group(c, c->wn[n].group, req))
                continue;
            if (fit_on(c, n, req, &p) && better(c, n, best)) {
                best = n;
                bp = p;
            }
        }
    }
    if (best == NIL)
        return AL_ENOENT;
    *out = bp;
    return 0;
}

/* Searches the buckets of every matching group. */
static int
find_in_buckets(al_cycle_t *c, const al_request_t *req, al_placement_t *out)
{
    int k, kmax = AL_MAX_DEVICES, kmin, step;
    int32_t g;
    al_placement_t p;

    if (is_frac(req)) {
        int32_t best = NIL, bestleft = INT32_MAX;

        for (g = 0; g < c->ngroups; g++) {
            int32_t n;

            if (!al__req_group(c, g, req))
                continue;
            for (n = c->groups[g].shared_head; n != NIL; n = c->wn[n].snext) {
                int32_t left;

                if (!cpu_mem_fit(&c->wn[n], req))
                    continue;
                if (frac_device(c, n, req, true, &left) >= 0 &&
                    (left < bestleft || (left == bestleft && n < best))) {
                    best = n;
                    bestleft = left;
                }
            }
        }
        if (best != NIL && fit_on(c, best, req, out))
            return 0;
        kmin = 1; /* a fresh device */
    } else {
        kmin = req->gpus;
    }
    if (req->gpus == 0 && !is_frac(req)) {
        /* CPU-only: nodes with fewest free GPUs first, keep GPUs free. */
        kmin = 0;
        step = 1;
        k = 0;
    } else if (al__req_pack(c, req) == AL_PACK_SPREAD) {
        step = -1;
        k = kmax;
    } else {
        step = 1;
        k = kmin;
    }
    for (; k >= kmin && k <= kmax; k += step) {
        for (g = 0; g < c->ngroups; g++) {
            int32_t n;

            if (c->groups[g].max_dev < k || !al__req_group(c, g, req))
                continue;
            for (n = c->groups[g].bucket[k]; n != NIL; n = c->wn[n].next) {
                if (fit_on(c, n, req, &p)) {
                    *out = p;
                    return 0;
                }
            }
        }
    }
    return AL_ENOENT;
}

int
al__find_task(al_cycle_t *c, int32_t job, int only_node, int topo_level,
              int32_t topo_dom, al_placement_t *out)
{
    const al_request_t *req = &c->s->jobs[job].req;

    if (c->nprofile > 0 && al__req_pack(c, req) == AL_PACK_FRAG) {
        if (only_node >= 0) {
            int32_t one = only_node;

            return al__frag_pick(c, req, &one, 1, out);
        }
        if (topo_level >= 0 && topo_dom != NIL) {
            const int32_t *off = c->dom_off[topo_level];

            return al__frag_pick(c, req,
                                 c->dom_nodes[topo_level] + off[topo_dom],
                                 off[topo_dom + 1] - off[topo_dom], out);
        }
        return al__frag_pick(c, req, NULL, 0, out);
    }
    if (only_node >= 0) {
        int32_t one = only_node;

        return find_in_list(c, req, &one, 1, out);
    }
    if (topo_level >= 0 && topo_dom != NIL) {
        const int32_t *off = c->dom_off[topo_level];

        return find_in_list(c, req, c->dom_nodes[topo_level] + off[topo_dom],
                            off[topo_dom + 1] - off[topo_dom], out);
    }
    return find_in_buckets(c, req, out);
}

/* ------------------------------------------------------------------ */
/* Placing a gang                                                     */

/* Free whole devices (not held) in the groups job j may use. */
int64_t
al__free_devices(al_cycle_t *c, int32_t j)
{
    int64_t f = 0;
    int32_t g;

    for (g = 0; g < c->ngroups; g++)
        if (al__req_group(c, g, &c->s->jobs[j].req))
            f += c->groups[g].free_dev;
    return f;
}

/* Could the job ever fit on the cluster, if everything were free?  No
 * (and why) in *why: AL_WHY_NO_MATCH when no node has the GPU model,
 * pool or labels it asks for, else AL_WHY_TOO_BIG. */
bool
al__ever_fits(al_cycle_t *c, int32_t j, al_reason_code_t *why)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t total = 0;
    bool node_ok = false, matched = false;
    int32_t g;

    for (g = 0; g < c->ngroups; g++) {
        const wgroup_t *gr = &c->groups[g];

        if (!al__req_group(c, g, &jb->req))
            continue;
        matched = true;
        total += gr->total_dev;
        if ((jb->req.one_domain ? gr->max_dom : gr->max_dev) >= jb->req.gpus &&
            gr->max_cpu >= jb->req.cpu_milli &&
            gr->max_mem >= jb->req.mem_bytes &&
            (jb->req.gpus > 0 || jb->req.gpu_milli == 0 || gr->max_dev > 0))
            node_ok = true;
    }
    *why = !matched && c->ngroups > 0 &&
                   ((jb->req.gpu_model != NULL && jb->req.gpu_model[0]) ||
                    (jb->req.pool != NULL && jb->req.pool[0]) ||
                    (jb->req.constraint != NULL && jb->req.constraint[0]))
               ? AL_WHY_NO_MATCH
               : AL_WHY_TOO_BIG;
    return node_ok && total >= (int64_t)jb->min_tasks * jb->req.gpus;
}

/*
 * Picks the topology domain at `level` for job j's gang of n tasks (up to
 * `want` for an elastic job): of the domains that hold at least n, the one
 * that holds the most of `want`, then the one with the fewest free devices,
 * so that the emptiest domains stay whole for larger gangs.  A domain's
 * free-device count bounds what it can hold, so most domains are judged
 * without looking at their nodes, and a domain's scan stops at `want`.
 */
static int32_t
pick_domain(al_cycle_t *c, int32_t j, int level, int64_t n, int64_t want)
{
    const al_job_t *jb = &c->s->jobs[j];
    int32_t d, best = NIL;
    int64_t bestfree = INT64_MAX, bestk = 0;
    int64_t needdev = n * (jb->req.gpus > 0 ? jb->req.gpus : 0);
    bool match[64];
    int32_t g;

    for (g = 0; g < c->ngroups && g < 64; g++)
        match[g] = al__req_group(c, g, &jb->req);
    for (d = 0; d < c->ndomains[level]; d++) {
        int32_t i, lo = c->dom_off[level][d], hi = c->dom_off[level][d + 1];
        int64_t slots = 0, f = c->dom_free[level][d];

        if (f < needdev)
            continue;
        /* Once a domain holds every task wanted, only a tighter one can
         * beat it. */
        if (bestk >= want && f >= bestfree)
            continue;
        for (i = lo; i < hi && slots < want; i++) {
            int32_t nd = c->dom_nodes[level][i];

            g = c->wn[nd].group;
            if (g == NIL ||
                !(g < 64 ? match[g] : al__req_group(c, g, &jb->req)))
                continue;
            if (jb->req.gpus > 0 && c->wn[nd].nfree < jb->req.gpus)
                continue;
            slots += node_slots(c, nd, &jb->req);
        }
        if (slots > want)
            slots = want;
        if (slots >= n && (slots > bestk || (slots == bestk && f < bestfree))) {
            best = d;
            bestk = slots;
            bestfree = f;
        }
    }
    return best;
}

/* Records a START decision for job j whose placements are the last
 * `ntasks` entries pushed on c->tasks. */
int
al__record_start(al_cycle_t *c, int32_t j, int32_t ntasks, bool lent,
                 int32_t lent_from)
{
    al_decision_t d;
    int rc;

    memset(&d, 0, sizeof(d));
    d.kind = AL_DEC_START;
    d.job = j;
    d.ntasks = ntasks;
    d.lent = lent;
    d.for_job = lent ? lent_from : NIL;
    rc = al__job_mark(c, j);
    if (rc != 0)
        return rc;
    c->wj[j].start_dec = (int32_t)c->decisions.len;
    c->wj[j].place_off = (int32_t)(c->tasks.len - (size_t)ntasks);
    c->wj[j].ntasks = ntasks;
    c->wj[j].flags |= JF_STARTED | (lent ? JF_LENT : 0);
    if (c->s->jobs[j].preemptible &&
        c->wj[j].rank < c->wq[c->s->jobs[j].queue].min_rank)
        c->wq[c->s->jobs[j].queue].min_rank = c->wj[j].rank;
    c->wj[j].for_job = d.for_job;
    return al__vec_push(c, &c->decisions, &d);
}

/*
 * Places job j's gang (min_tasks, then up to max_tasks for an elastic job)
 * on the working state; on success records the START decision.  Returns 0,
 * AL_ENOENT when it does not fit, AL_ELIMIT when what placement charged
 * exceeds a quota (reason set), or AL_ENOMEM; the state is unchanged
 * unless it returns 0.
 */
int
al__place_gang(al_cycle_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    size_t mark = c->undo.len, tmark = c->tasks.len;
    int32_t dom = NIL, placed = 0, want;
    uint64_t forbid = c->forbid; /* extras recompute it; restored below */
    int level = -1, rc;

    want = jb->max_tasks > jb->min_tasks ? jb->max_tasks : jb->min_tasks;
    if (jb->topo_mode != AL_TOPO_NONE && want > 1) {
        level = jb->topo_level;
        dom = pick_domain(c, j, level, jb->min_tasks, want);
        if (dom == NIL) {
            if (jb->topo_mode == AL_TOPO_REQUIRED)
                return AL_ENOENT;
            level = -1;
        }
    }
    while (placed < want) {
        bool extra = placed >= jb->min_tasks;
        size_t emark = c->undo.len;
        al_placement_t p;

        if (extra) {
            int32_t fq = NIL;
            int64_t fl = 0;

            if (!al__admit(c, j, 1))
                break;
            c->forbid = al__model_forbid(c, j, 1, &fq, &fl);
        }
        rc = al__find_task(c, j, -1, level, dom, &p);
        if (rc == AL_ENOENT && extra)
            break;
        if (rc == 0)
            rc = al__take(c, j, &p, true);
        if (rc == 0)
            rc = al__vec_push(c, &c->tasks, &p);
        if (rc != 0) {
            al__undo_to(c, mark);
            c->tasks.len = tmark;
            c->forbid = forbid;
            return rc;
        }
        placed++;
        if (placed == jb->min_tasks && !al__within_quota(c, j)) {
            /* Fractions sized by memory charge more than the request
             * said: the gang itself is over a quota. */
            al__undo_to(c, mark);
            c->tasks.len = tmark;
            c->forbid = forbid;
            return AL_ELIMIT;
        }
        if (extra && !al__within_quota(c, j)) {
            /* This extra task went over: the job starts without it. */
            al__undo_to(c, emark);
            c->tasks.len--;
            placed--;
            break;
        }
    }
    c->forbid = forbid;
    rc = al__record_start(c, j, placed, false, NIL);
    if (rc != 0) {
        al__undo_to(c, mark);
        c->tasks.len = tmark;
        return rc;
    }
    c->stats.started++;
    c->stats.placements += placed;
    return 0;
}
