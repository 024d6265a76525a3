/*
 * reserve.c -- backfill reservations: when and where a blocked job will
 * fit, and the holds that keep later jobs from delaying it.
 *
 * Owns: the reservation set of a pass (resv_set_t): the future timeline, the
 * sweep that replays it (sim_*, sweep_*), al__reserve, the holds
 * (al__apply_holds, al__unhold_resv, al__rehold, al__rehold_waiting) and
 * al__claim_lent (a reservation whose time has come takes back what it
 * lent).  Calls: reclaim.c (al__evict), place.c (al__place_gang),
 * capacity.c (holds, undo), order.c (al__skey_sort).  Called by pass.c.
 */
#include <string.h>

#include "core_int.h"

/*
 * May job j take back the capacity lent job x borrows?  A job started on
 * lent capacity this cycle knows its lender.  For one that was already
 * running, the snapshot does not say (reservations are recomputed every
 * cycle): its capacity goes back to the first reservation of the cycle,
 * the top-ranked blocked job, and to no lower-ranked one.
 */
static bool
lent_to(const al_cycle_t *c, const resv_set_t *rs, int32_t x, int32_t j)
{
    if (c->wj[x].flags & JF_STARTED)
        return c->wj[x].for_job == j;
    return rs->nresv == rs->nlook && rs->not_before == 0;
}

/* Event kinds on the future timeline, in the order they apply at one time. */
enum { EV_RELEASE = 0, EV_CLAIM = 1, EV_UNCLAIM = 2 };

/*
 * The future as far as the core can tell, for job j's reservation: running
 * jobs end at start + runtime (lent ones lent from j come back at once),
 * and the reservations already made claim their nodes at their start and
 * give them back a runtime later.  Sorted by time, then kind.
 */
static int
timeline(al_cycle_t *c, const resv_set_t *rs, int32_t j, skey_t **out,
         size_t *nout)
{
    size_t n = 0;
    int32_t x, r;
    skey_t *ev;

    for (x = 0; x < c->nj; x++)
        if ((c->wj[x].flags & (JF_RUNNING | JF_STARTED)) &&
            !(c->wj[x].flags & JF_EVICTED))
            n++;
    ev = al_arena_array_raw(c->tmp, n + 2 * (size_t)rs->nresv + 1, sizeof(*ev));
    if (ev == NULL)
        return AL_ENOMEM;
    n = 0;
    for (x = 0; x < c->nj; x++) {
        const al_job_t *xb = &c->s->jobs[x];
        const wjob_t *w = &c->wj[x];
        int64_t end;

        if (!(w->flags & (JF_RUNNING | JF_STARTED)) || (w->flags & JF_EVICTED))
            continue;
        if ((w->flags & JF_LENT) && lent_to(c, rs, x, j)) {
            end = c->s->now; /* lent capacity comes back on demand */
        } else if (w->flags & JF_STARTED) {
            end = c->s->now + job_runtime(c, xb);
        } else {
            end = xb->start_time + job_runtime(c, xb);
            if (end <= c->s->now)
                end = c->s->now + 1; /* overdue: any moment now */
        }
        ev[n].k[0] = bias(end);
        ev[n].k[1] = EV_RELEASE;
        ev[n].k[2] = 0;
        ev[n].k[3] = 0;
        ev[n].idx = x;
        n++;
    }
    for (r = 0; r < rs->nresv; r++) {
        const al_reservation_t *rv = &rs->resv[r].r;

        ev[n].k[0] = bias(rv->start);
        ev[n].k[1] = EV_CLAIM;
        ev[n].k[2] = 0;
        ev[n].k[3] = 0;
        ev[n].idx = r;
        n++;
        ev[n].k[0] = bias(rv->start + job_runtime(c, &c->s->jobs[rv->job]));
        ev[n].k[1] = EV_UNCLAIM;
        ev[n].k[2] = 0;
        ev[n].k[3] = 0;
        ev[n].idx = r;
        n++;
    }
    *out = ev;
    *nout = n;
    return al__skey_sort(c, ev, n);
}

/*
 * The cluster as the reservation sweep sees it at some future time: per
 * node, free whole devices, CPU, memory and (for a fractional request) the
 * tasks that fit on partly used devices; per device, the milli-GPUs still
 * used by fractional tasks, so that a device comes back whole when its last
 * fraction ends.
 */
typedef struct tsim {
    const al_request_t *req;
    int level;   /* topology level the gang must stay in, or -1 */
    int64_t m;   /* milli-GPUs one fractional task takes, or 0 */
    int64_t per; /* fractional tasks on one fresh device */
    int64_t *dev, *frac, *cpu, *mem, *slots, *domsum;
    int32_t *dm;   /* used milli per device */
    int64_t total; /* sum of slots */
} tsim_t;

static int64_t
sim_slots(const tsim_t *ts, int32_t n)
{
    const al_request_t *req = ts->req;
    int64_t s = INT32_MAX;

    if (req->cpu_milli > 0)
        s = ts->cpu[n] / req->cpu_milli;
    if (req->mem_bytes > 0 && ts->mem[n] / req->mem_bytes < s)
        s = ts->mem[n] / req->mem_bytes;
    if (req->gpus > 0) {
        if (ts->dev[n] / req->gpus < s)
            s = ts->dev[n] / req->gpus;
    } else if (ts->m > 0) {
        if (ts->dev[n] * ts->per + ts->frac[n] < s)
            s = ts->dev[n] * ts->per + ts->frac[n];
    }
    return s < 0 ? 0 : s;
}

/* Recomputes node n's slots after its free amounts changed. */
static void
resim(const al_cycle_t *c, tsim_t *ts, int32_t n)
{
    int64_t before = ts->slots[n];

    ts->slots[n] = sim_slots(ts, n);
    ts->total += ts->slots[n] - before;
    if (ts->level >= 0)
        ts->domsum[c->wn[n].topo[ts->level]] += ts->slots[n] - before;
}

/* Fractional tasks that fit in the room left on a device using u milli. */
static int64_t
frac_room(const tsim_t *ts, int64_t u)
{
    return ts->m > 0 && u > 0 ? (AL_GPU_MILLI - u) / ts->m : 0;
}

/* Running job x's tasks end: give their resources back in the sweep. */
static void
sim_release(const al_cycle_t *c, tsim_t *ts, int32_t x)
{
    const al_placement_t *pl = job_place(c, x);
    const al_job_t *xb = &c->s->jobs[x];
    int32_t t;

    for (t = 0; t < c->wj[x].ntasks; t++) {
        const al_placement_t *p = &pl[t];
        int32_t n = p->node;

        if (ts->slots[n] < 0)
            continue;
        if (p->gpu_milli > 0) {
            int32_t di = c->wn[n].dev_off + __builtin_ctzll(p->devices);
            int64_t old = ts->dm[di];

            ts->frac[n] -= frac_room(ts, old);
            ts->dm[di] -= p->gpu_milli;
            if (ts->dm[di] <= 0) {
                ts->dm[di] = 0;
                ts->dev[n]++; /* its last fraction ended */
            } else {
                ts->frac[n] += frac_room(ts, ts->dm[di]);
            }
        } else {
            ts->dev[n] += popcount64(p->devices);
        }
        ts->cpu[n] += xb->req.cpu_milli;
        ts->mem[n] += xb->req.mem_bytes;
        resim(c, ts, n);
    }
}

/* An earlier reservation takes (sign -1) or gives back (+1) its nodes. */
static void
sim_claim(const al_cycle_t *c, tsim_t *ts, const resv_int_t *rv, int sign)
{
    const al_request_t *rq = &c->s->jobs[rv->r.job].req;
    int32_t i;

    for (i = 0; i < rv->r.nnodes; i++) {
        int64_t k = rv->r.tasks[i];
        int32_t n = rv->r.nodes[i];

        if (ts->slots[n] < 0)
            continue;
        if (sign < 0) {
            /* It takes what it did not already hold. */
            ts->dev[n] -= k * rq->gpus - popcount64(rv->hold[i]);
            ts->cpu[n] -= k * rq->cpu_milli - rv->hcpu[i];
            ts->mem[n] -= k * rq->mem_bytes - rv->hmem[i];
        } else {
            ts->dev[n] += k * rq->gpus;
            ts->cpu[n] += k * rq->cpu_milli;
            ts->mem[n] += k * rq->mem_bytes;
        }
        resim(c, ts, n);
    }
}

/* Does the gang fit somewhere in the sweep's current state?  Sets *win to
 * the domain for a topology-bound gang. */
static bool
sim_fits(const al_cycle_t *c, const tsim_t *ts, int64_t need, int32_t *win)
{
    int32_t d;

    if (ts->level < 0)
        return ts->total >= need;
    for (d = 0; d < c->ndomains[ts->level]; d++)
        if (ts->domsum[d] >= need) {
            *win = d;
            return true;
        }
    return false;
}

/* Sets up the sweep of blocked job j in *ts: what each usable node has
 * free now (slots[n] -1 for a node the job cannot use).  0 or AL_ENOMEM. */
static int
sweep_init(al_cycle_t *c, resv_set_t *rs, int32_t j, tsim_t *ts)
{
    const al_job_t *jb = &c->s->jobs[j];
    const al_request_t *req = &jb->req;
    int32_t n;

    memset(ts, 0, sizeof(*ts));
    ts->req = req;
    ts->level = jb->topo_mode == AL_TOPO_REQUIRED ? jb->topo_level : -1;
    if (req->gpus == 0 && (req->gpu_milli > 0 || req->gpu_mem > 0)) {
        ts->m = c->wj[j].task_gpu > 0 ? c->wj[j].task_gpu : 1;
        ts->per = AL_GPU_MILLI / ts->m;
    }
    /* The sweep's arrays are taken once per cycle and reused by every
     * reservation.  Only usable nodes' entries are written and read. */
    if (rs->sim_dev == NULL) {
        size_t nn = (size_t)c->nn + 1, nd = 0;
        int l;

        for (l = 0; l < c->cfg.ntopo_levels; l++)
            if ((size_t)c->ndomains[l] + 1 > nd)
                nd = (size_t)c->ndomains[l] + 1;
        rs->sim_dev =
            al_arena_array_raw(c->tmp, 6 * nn + nd + 1, sizeof(int64_t));
        rs->sim_dm =
            al_arena_array_raw(c->tmp, (size_t)c->ndev + 1, sizeof(int32_t));
        if (rs->sim_dev == NULL || rs->sim_dm == NULL)
            return AL_ENOMEM;
    }
    ts->dev = rs->sim_dev;
    ts->frac = ts->dev + (c->nn + 1);
    ts->cpu = ts->frac + (c->nn + 1);
    ts->mem = ts->cpu + (c->nn + 1);
    ts->slots = ts->mem + (c->nn + 1);
    ts->domsum = ts->slots + (c->nn + 1);
    ts->dm = rs->sim_dm;
    memset(ts->frac, 0, (size_t)c->nn * sizeof(int64_t));
    if (ts->level >= 0)
        memset(ts->domsum, 0,
               ((size_t)c->ndomains[ts->level] + 1) * sizeof(int64_t));
    memcpy(ts->dm, c->dev_milli, (size_t)c->ndev * sizeof(int32_t));
    for (n = 0; n < c->nn; n++) {
        const wnode_t *w = &c->wn[n];

        if (!w->ready || w->group == NIL || !al__req_group(c, w->group, req) ||
            (ts->level >= 0 && w->topo[ts->level] == NIL)) {
            ts->slots[n] = -1; /* not usable */
            continue;
        }
        ts->dev[n] = w->nfree;
        ts->cpu[n] = w->free_cpu;
        ts->mem[n] = w->free_mem;
        if (ts->m > 0) {
            uint64_t sm = w->shared_mask;

            while (sm != 0) {
                ts->frac[n] +=
                    frac_room(ts, ts->dm[w->dev_off + __builtin_ctzll(sm)]);
                sm &= sm - 1;
            }
        }
        ts->slots[n] = sim_slots(ts, n);
        ts->total += ts->slots[n];
        if (ts->level >= 0)
            ts->domsum[w->topo[ts->level]] += ts->slots[n];
    }
    return 0;
}

/* Replays the releases and claims ahead of job j until `need` of its tasks
 * fit: *when (INT64_MIN: never) and, for a topology-bound gang, the domain
 * in *win.  0 or AL_ENOMEM. */
static int
sweep_when(al_cycle_t *c, resv_set_t *rs, int32_t j, tsim_t *ts, int64_t need,
           int32_t *win, int64_t *when)
{
    skey_t *ev;
    size_t nev, e;
    int rc = timeline(c, rs, j, &ev, &nev);

    *when = INT64_MIN;
    if (rc != 0)
        return rc;
    for (e = 0; e <= nev; e++) {
        /* Check once all events of one time are in (and at the end). */
        if ((e == 0 || e == nev || ev[e].k[0] != ev[e - 1].k[0]) &&
            /* The state holds until the next event: it serves a
             * look-ahead when that event comes after not_before. */
            (e == nev ||
             (int64_t)(ev[e].k[0] ^ (1ULL << 63)) > rs->not_before) &&
            sim_fits(c, ts, need, win)) {
            *when =
                e == 0 ? c->s->now : (int64_t)(ev[e - 1].k[0] ^ (1ULL << 63));
            if (*when < c->s->now)
                *when = c->s->now;
            if (*when < rs->not_before)
                *when = rs->not_before;
            break;
        }
        if (e == nev)
            break;
        if (ev[e].k[1] == EV_RELEASE)
            sim_release(c, ts, ev[e].idx);
        else
            sim_claim(c, ts, &rs->resv[ev[e].idx],
                      ev[e].k[1] == EV_CLAIM ? -1 : 1);
    }
    return 0;
}

/* Entry `at` of reservation out: k tasks on node nd, holding what later
 * jobs must not take: everything free now beyond the spare the node will
 * have at the reservation's time (the sweep's state, ts). */
static void
hold_on_node(const al_cycle_t *c, const tsim_t *ts, const al_request_t *req,
             resv_int_t *out, int32_t at, int32_t nd, int64_t k)
{
    const wnode_t *w = &c->wn[nd];
    int64_t spare = ts->dev[nd] - k * req->gpus;
    int64_t h = w->nfree - (spare > 0 ? spare : 0);

    out->r.nodes[at] = nd;
    out->r.tasks[at] = (int32_t)k;
    out->hold[at] = 0;
    if (h > 0) {
        uint64_t av = w->free_mask & ~w->hold_mask, m = 0;

        while (h > 0 && av != 0) {
            uint64_t bit = av & (~av + 1);

            m |= bit;
            av &= av - 1;
            h--;
        }
        out->hold[at] = m;
    }
    spare = ts->cpu[nd] - k * req->cpu_milli;
    out->hcpu[at] = w->free_cpu - (spare > 0 ? spare : 0);
    if (out->hcpu[at] < 0)
        out->hcpu[at] = 0;
    spare = ts->mem[nd] - k * req->mem_bytes;
    out->hmem[at] = w->free_mem - (spare > 0 ? spare : 0);
    if (out->hmem[at] < 0)
        out->hmem[at] = 0;
}

/*
 * Finds when and where blocked job j fits by replaying the releases of
 * running jobs in order of their expected end, then holds what it needs on
 * those nodes so that later jobs cannot delay it.  Returns 0 with *made set
 * when a reservation was made, 0 with *made clear when the job can never
 * fit, or AL_ENOMEM.
 */
int
al__reserve(al_cycle_t *c, resv_set_t *rs, int32_t j, resv_int_t *out,
            bool *made)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need = jb->min_tasks, when, left = need;
    tsim_t ts;
    skey_t *cand;
    size_t nc = 0, i;
    int32_t n, win = NIL;
    int rc;

    *made = false;
    if ((rc = sweep_init(c, rs, j, &ts)) != 0 ||
        (rc = sweep_when(c, rs, j, &ts, need, &win, &when)) != 0)
        return rc;
    if (when == INT64_MIN)
        return 0; /* never fits */

    /* Choose the nodes: those with most slots at that time, fewest nodes. */
    cand = al_arena_array_raw(c->tmp, (size_t)c->nn + 1, sizeof(*cand));
    out->r.nodes = al_arena_array(c->tmp, (size_t)need, sizeof(int32_t));
    out->r.tasks = al_arena_array(c->tmp, (size_t)need, sizeof(int32_t));
    out->hold = al_arena_array(c->tmp, (size_t)need, sizeof(uint64_t));
    out->hcpu = al_arena_array(c->tmp, (size_t)need, sizeof(int64_t));
    out->hmem = al_arena_array(c->tmp, (size_t)need, sizeof(int64_t));
    if (!cand || !out->r.nodes || !out->r.tasks || !out->hold || !out->hcpu ||
        !out->hmem)
        return AL_ENOMEM;
    for (n = 0; n < c->nn; n++) {
        if (ts.slots[n] <= 0 ||
            (ts.level >= 0 && c->wn[n].topo[ts.level] != win))
            continue;
        cand[nc].k[0] = UINT64_MAX - (uint64_t)ts.slots[n];
        /* Prefer nodes with least free now: hold less idle capacity. */
        cand[nc].k[1] = (uint64_t)c->wn[n].nfree;
        cand[nc].k[2] = 0;
        cand[nc].k[3] = 0;
        cand[nc].idx = n;
        nc++;
    }
    rc = al__skey_sort(c, cand, nc);
    if (rc != 0)
        return rc;
    out->r.job = j;
    out->r.start = when;
    out->r.nnodes = 0;
    for (i = 0; i < nc && left > 0; i++) {
        int64_t k = UINT64_MAX - cand[i].k[0];

        if (k > left)
            k = left;
        left -= k;
        hold_on_node(c, &ts, &jb->req, out, out->r.nnodes++, cand[i].idx, k);
    }
    *made = true;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Holds                                                              */

int
al__apply_holds(al_cycle_t *c, const resv_int_t *rv)
{
    int32_t i;
    int rc;

    for (i = 0; i < rv->r.nnodes; i++) {
        int32_t n = rv->r.nodes[i];

        rc = al__hold(c, n, rv->hold[i], rv->hcpu[i], rv->hmem[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Releases every reservation hold (pushing undo records) and returns a
 * mark to re-apply them with al__rehold(). */
int
al__unhold_resv(al_cycle_t *c, resv_set_t *rs)
{
    int32_t r, i;
    int rc;

    for (r = 0; r < rs->nresv; r++)
        for (i = 0; i < rs->resv[r].r.nnodes; i++) {
            rc = al__unhold_all(c, rs->resv[r].r.nodes[i]);
            if (rc != 0)
                return rc;
        }
    return 0;
}

/* Devices the reservations hold right now (lent jobs shrink the holds). */
int64_t
al__held_now(const al_cycle_t *c, const resv_set_t *rs)
{
    int64_t h = 0;
    int32_t r, i;

    for (r = 0; r < rs->nresv; r++)
        for (i = 0; i < rs->resv[r].r.nnodes; i++) {
            int32_t n = rs->resv[r].r.nodes[i];

            /* A node in two reservations counts once: its first. */
            if (c->wn[n].hold_mask != 0) {
                int32_t r2, i2;
                bool seen = false;

                for (r2 = 0; r2 < r && !seen; r2++)
                    for (i2 = 0; i2 < rs->resv[r2].r.nnodes; i2++)
                        if (rs->resv[r2].r.nodes[i2] == n)
                            seen = true;
                if (!seen)
                    h += popcount64(c->wn[n].hold_mask);
            }
        }
    return h;
}

int
al__rehold(al_cycle_t *c, resv_set_t *rs)
{
    int32_t r;
    int rc;

    for (r = 0; r < rs->nresv; r++) {
        rc = al__apply_holds(c, &rs->resv[r]);
        if (rc != 0)
            return rc;
    }
    rs->held_dev = al__held_now(c, rs);
    return 0;
}

/* The holds of every reservation whose job has not started, but job
 * skip's (NIL: none skipped), after al__unhold_resv(). */
int
al__rehold_waiting(al_cycle_t *c, resv_set_t *rs, int32_t skip)
{
    int32_t r;
    int rc;

    for (r = 0; r < rs->nresv; r++) {
        int32_t j = rs->resv[r].r.job;

        if (j == skip || (c->wj[j].flags & JF_STARTED))
            continue;
        rc = al__apply_holds(c, &rs->resv[r]);
        if (rc != 0)
            return rc;
    }
    rs->held_dev = al__held_now(c, rs);
    return 0;
}

/* Whether job j holds one of the pass's reservations. */
bool
al__has_resv(const resv_set_t *rs, int32_t j)
{
    for (int32_t r = 0; r < rs->nresv; r++)
        if (rs->resv[r].r.job == j)
            return true;
    return false;
}

/* The reservation (index) whose nodes the START decision of j touches. */
int32_t
al__touched_resv(const al_cycle_t *c, const resv_set_t *rs, int32_t j)
{
    const al_placement_t *pl = job_place(c, j);
    int32_t r, i, t;

    for (t = 0; t < c->wj[j].ntasks; t++)
        for (r = 0; r < rs->nresv; r++)
            for (i = 0; i < rs->resv[r].r.nnodes; i++)
                if (rs->resv[r].r.nodes[i] == pl[t].node &&
                    rs->resv[r].hold[i] != 0)
                    return r;
    return NIL;
}

/*
 * The reservation's time has come if only lent jobs stand in the way:
 * evict the lent jobs on its nodes and start j there.  Returns 0 with
 * *started set or clear (state unchanged when clear), or AL_ENOMEM.
 */
int
al__claim_lent(al_cycle_t *c, const resv_set_t *rs, int32_t j,
               const resv_int_t *rv, bool *started)
{
    size_t mark = c->undo.len;
    int32_t i, k;
    int rc;

    *started = false;
    for (i = 0; i < rv->r.nnodes; i++) {
        const wnode_t *w = &c->wn[rv->r.nodes[i]];

        for (k = 0; k < w->nrun; k++) {
            int32_t x = c->run_tasks[w->run_off + k].job;

            if ((c->wj[x].flags & JF_LENT) && !(c->wj[x].flags & JF_EVICTED) &&
                lent_to(c, rs, x, j)) {
                rc = al__evict(c, x, j, AL_EVICT_RESERVATION);
                if (rc != 0)
                    goto fail;
            }
        }
    }
    rc = al__place_gang(c, j);
    if (rc == 0) {
        *started = true;
        return 0;
    }
fail:
    al__undo_to(c, mark);
    return rc == AL_ENOENT || rc == AL_ELIMIT ? 0 : rc;
}
