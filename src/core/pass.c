/*
 * pass.c -- one scheduling cycle: set up, compute fair shares, allocate in
 * order of need with backfill reservations, reclaim and preempt for jobs
 * still blocked, and write the result.
 *
 * The cycle is a pure function of the snapshot.  Every loop runs in index
 * order and every sort has a total order (ties end on the job index), so the
 * same snapshot always yields the same bytes.
 *
 * Owns: al_sched_run and al_result_destroy (the door's entry points), the
 * allocation pass (allocate, starving_first, try_start, try_place,
 * try_reserved_room, second_chance, the failure memos) and build_result.
 * Calls: every other file of the core; nothing calls it.
 */
#include <string.h>

#include "core_int.h"

#define MEMO_SIZE 256
#define AL_STARVE_MAX 16 /* starving jobs considered first, at most */

typedef struct memo {
    uint64_t key;
    int64_t cpu, mem; /* smallest CPU and memory that failed */
} memo_t;

/* Failed shapes, valid while c->version is `version`. */
typedef struct memo_tab {
    int64_t version;
    memo_t e[MEMO_SIZE];
} memo_tab_t;

/* The allocation pass's own state. */
typedef struct pass {
    skey_t *order; /* candidates in allocation order (per queue slices) */
    size_t norder;
    resv_set_t rs;
    int32_t first_blocked; /* strict order: the job everyone waits behind */
    memo_tab_t memo;       /* failed gang shapes */
    /* Shapes that failed even with every reservation hold released (the
     * lending path of try_place). */
    memo_tab_t lend_memo;
} pass_t;

/* ------------------------------------------------------------------ */
/* The allocation pass                                                */

/*
 * Failure memo.  Placement only fails for lack of capacity, and capacity
 * only shrinks until something is released (c->version moves), so a gang
 * shape that failed stays failed: a later job of the same shape (GPUs,
 * tasks, topology, pool, model) that asks for at least as much CPU and
 * memory fails without a search.  This keeps a cycle over 100,000 pending
 * jobs on a full cluster from searching 100,000 times.
 */
static uint64_t
shape_hash(const al_job_t *jb)
{
    uint64_t h = 1469598103934665603ULL;
    const uint64_t parts[] = { (uint64_t)jb->req.gpus,
                               (uint64_t)jb->req.gpu_milli,
                               (uint64_t)jb->req.gpu_mem,
                               (uint64_t)jb->min_tasks,
                               (uint64_t)jb->topo_mode,
                               (uint64_t)jb->topo_level,
                               (uint64_t)(uintptr_t)jb->req.gpu_model,
                               (uint64_t)(uintptr_t)jb->req.pool,
                               (uint64_t)(uintptr_t)jb->req.constraint,
                               (uint64_t)jb->req.one_domain };
    size_t i;

    for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        h ^= parts[i];
        h *= 1099511628211ULL;
    }
    return h | 1;
}

/* Empties memo t when c->version moved since its entries. */
static void
memo_reset(const al_cycle_t *c, memo_tab_t *t)
{
    if (t->version != (int64_t)c->version) {
        memset(t->e, 0, sizeof(t->e));
        t->version = (int64_t)c->version;
    }
}

/* Whether a job of shape h asking at least as much as a failed one of t
 * fails too. */
static bool
memo_failed(const memo_tab_t *t, const al_job_t *jb, uint64_t h)
{
    const memo_t *m = &t->e[h % MEMO_SIZE];

    return m->key == h && jb->req.cpu_milli >= m->cpu &&
           jb->req.mem_bytes >= m->mem;
}

static void
memo_note(memo_tab_t *t, const al_job_t *jb, uint64_t h)
{
    memo_t *m = &t->e[h % MEMO_SIZE];

    if (m->key != h ||
        (jb->req.cpu_milli <= m->cpu && jb->req.mem_bytes <= m->mem)) {
        m->key = h;
        m->cpu = jb->req.cpu_milli;
        m->mem = jb->req.mem_bytes;
    }
}

/* Sets j's reason after a failed placement. */
static void
blocked_reason(al_cycle_t *c, int32_t j, int64_t f)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need =
        (int64_t)jb->min_tasks * (jb->req.gpus > 0 ? jb->req.gpus : 0);

    if (((jb->topo_mode == AL_TOPO_REQUIRED && jb->min_tasks > 1) ||
         (jb->req.one_domain && jb->req.gpus > 1)) &&
        f >= need)
        set_reason(c, j, AL_WHY_TOPOLOGY, NIL, NIL, AL_RES_GPU, 0, 0);
    else if (f >= need && need > 0)
        set_reason(c, j, AL_WHY_NO_NODE, NIL, NIL, AL_RES_GPU, f * AL_GPU_MILLI,
                   0);
    else
        set_reason(c, j, AL_WHY_CAPACITY, NIL, NIL, AL_RES_GPU,
                   f * AL_GPU_MILLI, 0);
}

/*
 * j found no room: try the room reservations hold.  A job that ends before
 * the earliest reservation starts delays nobody; a preemptible one may
 * borrow it and leave when the reservation's job starts.  Sets *done when
 * try_place has nothing more to do (j started, or a quota stopped it);
 * otherwise j's reason may become "behind a reservation".  0 or an
 * error.
 */
static int
try_reserved_room(al_cycle_t *c, pass_t *ps, int32_t j, int64_t fdev,
                  bool *done)
{
    const al_job_t *jb = &c->s->jobs[j];
    uint64_t h = shape_hash(jb);
    bool use_memo = c->forbid == 0;
    bool shorter = c->s->now + job_runtime(c, jb) <= c->min_resv_start;
    bool lend = jb->preemptible && c->cfg.lend_reserved;
    size_t mark = c->undo.len, tmark = c->tasks.len;
    uint64_t v0 = c->version;
    int rc;

    *done = false;
    /* A shape that failed here at this version fails again: a queue of
     * thousands of like jobs behind a reservation costs one search, not
     * one per job (each attempt releases and restores the holds). */
    memo_reset(c, &ps->lend_memo);
    if ((shorter || lend) &&
        !(use_memo && memo_failed(&ps->lend_memo, jb, h)) &&
        (jb->req.gpus == 0 ||
         fdev + ps->rs.held_dev >= (int64_t)jb->min_tasks * jb->req.gpus)) {
        /* With every hold released the buckets show all free devices,
         * so the normal search serves. */
        rc = al__unhold_resv(c, &ps->rs);
        if (rc == 0)
            rc = al__place_gang(c, j);
        if (rc == 0) {
            int32_t r = al__touched_resv(c, &ps->rs, j);
            al_decision_t *d =
                (al_decision_t *)c->decisions.data + c->wj[j].start_dec;

            if (!shorter && r != NIL) {
                d->lent = true;
                d->for_job = ps->rs.resv[r].r.job;
                c->wj[j].flags |= JF_LENT;
                c->wj[j].for_job = d->for_job;
            }
            rc = al__rehold(c, &ps->rs);
            if (rc == 0) {
                c->reasons[j].code = AL_WHY_NONE;
                *done = true;
                return 0;
            }
        }
        al__undo_to(c, mark);
        c->tasks.len = tmark;
        if (rc == AL_ELIMIT) {
            *done = true; /* over a quota, not out of room: reason set */
            return 0;
        }
        if (rc != AL_ENOENT)
            return rc;
        /* Undone: the state is the one at v0 again, so what failed
         * before (both memos) still fails. */
        c->version = v0;
        if (use_memo)
            memo_note(&ps->lend_memo, jb, h);
    }
    if ((c->reasons[j].code == AL_WHY_CAPACITY ||
         c->reasons[j].code == AL_WHY_NO_NODE) &&
        fdev + ps->rs.held_dev >= (int64_t)jb->min_tasks * jb->req.gpus) {
        /* The first backfill reservation, else the first look-ahead. */
        int32_t r0 = ps->rs.nresv > ps->rs.nlook ? ps->rs.nlook : 0;

        set_reason(c, j, AL_WHY_BEHIND_RESERVATION, NIL, ps->rs.resv[r0].r.job,
                   AL_RES_GPU, 0, ps->rs.resv[r0].r.start);
    }
    return 0;
}

/* Tries to start candidate j.  Returns 0 (started or not: see flags and
 * reason) or AL_ENOMEM. */
static int
try_place(al_cycle_t *c, pass_t *ps, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    uint64_t h = shape_hash(jb);
    bool use_memo = c->forbid == 0; /* the memo knows shapes, not masks */
    /* Free devices j may use; a failed placement leaves the state as it
     * was, so this holds for the whole of this function. */
    int64_t fdev = al__free_devices(c, j);
    int rc;

    memo_reset(c, &ps->memo);
    /* Too few free devices, or a shape that already failed: no search. */
    if ((jb->req.gpus > 0 && fdev < (int64_t)jb->min_tasks * jb->req.gpus) ||
        (use_memo && memo_failed(&ps->memo, jb, h)))
        rc = AL_ENOENT;
    else
        rc = al__place_gang(c, j);
    if (rc == 0)
        return 0;
    if (rc == AL_ELIMIT)
        return 0; /* over a quota, not out of room: reason set */
    if (rc != AL_ENOENT)
        return rc;
    memo_reset(c, &ps->memo);
    if (use_memo)
        memo_note(&ps->memo, jb, h);
    blocked_reason(c, j, fdev);

    if (ps->rs.nresv > ps->rs.nlook || ps->rs.held_dev > 0) {
        bool done;

        rc = try_reserved_room(c, ps, j, fdev, &done);
        if (rc != 0 || done)
            return rc;
    }
    c->wj[j].flags |= JF_BLOCKED;

    {
        bool started;

        rc = al__reclaim_one(c, j, &started);
        if (rc != 0)
            return rc;
        if (started) {
            c->wj[j].flags &= ~JF_BLOCKED;
            c->reasons[j].code = AL_WHY_NONE;
            return 0;
        }
    }

    if (ps->rs.nresv - ps->rs.nlook < c->cfg.reserve_depth &&
        (c->reasons[j].code == AL_WHY_CAPACITY ||
         c->reasons[j].code == AL_WHY_NO_NODE ||
         c->reasons[j].code == AL_WHY_TOPOLOGY ||
         c->reasons[j].code == AL_WHY_NO_VICTIM ||
         c->reasons[j].code == AL_WHY_BEHIND_RESERVATION)) {
        resv_int_t *rv = &ps->rs.resv[ps->rs.nresv];
        bool made, started;

        memset(rv, 0, sizeof(*rv));
        rc = al__reserve(c, &ps->rs, j, rv, &made);
        if (rc != 0)
            return rc;
        if (!made) {
            /* It fits the cluster (al__ever_fits() said so) but no room
             * can be reserved for it: with nodes draining or GPUs fenced
             * that is no proof it is too big, and the reason it has
             * (not enough free GPUs) is the true one. */
            if (!c->unavail)
                set_reason(c, j, AL_WHY_TOO_BIG, NIL, NIL, AL_RES_GPU,
                           c->wj[j].task_gpu, 0);
            return 0;
        }
        if (rv->r.start <= c->s->now) {
            rc = al__claim_lent(c, &ps->rs, j, rv, &started);
            if (rc != 0)
                return rc;
            if (started) {
                c->wj[j].flags &= ~JF_BLOCKED;
                c->reasons[j].code = AL_WHY_NONE;
                return 0;
            }
            /* The sweep counts a node's free devices, not its domains:
             * room "now" that no domain has is no reservation. */
            if (jb->req.one_domain && jb->req.gpus > 1) {
                set_reason(c, j, AL_WHY_TOPOLOGY, NIL, NIL, AL_RES_GPU, 0, 0);
                return 0;
            }
        }
        rc = al__apply_holds(c, rv);
        if (rc != 0)
            return rc;
        ps->rs.nresv++;
        ps->rs.held_dev = al__held_now(c, &ps->rs);
        c->stats.reservations++;
        if (rv->r.start < c->min_resv_start)
            c->min_resv_start = rv->r.start;
        set_reason(c, j, AL_WHY_RESERVED, NIL, NIL, AL_RES_GPU, 0, rv->r.start);
    }
    return 0;
}

/* Tries to start candidate j: admission, then placement (see try_place).
 * Returns 0 (started or not: see flags and reason) or AL_ENOMEM. */
static int
try_start(al_cycle_t *c, pass_t *ps, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    int32_t fq = NIL;
    int64_t fl = 0;
    int rc;

    c->stats.considered++;
    if (!al__admit(c, j, jb->min_tasks))
        return 0;
    al_reason_code_t why;
    if (!al__ever_fits(c, j, &why)) {
        set_reason(c, j, why, NIL, NIL, AL_RES_GPU, c->wj[j].task_gpu, 0);
        return 0;
    }
    c->forbid = al__model_forbid(c, j, jb->min_tasks, &fq, &fl);
    rc = try_place(c, ps, j);
    if (rc == 0 && c->forbid != 0 && !(c->wj[j].flags & JF_STARTED) &&
        (c->reasons[j].code == AL_WHY_CAPACITY ||
         c->reasons[j].code == AL_WHY_NO_NODE ||
         c->reasons[j].code == AL_WHY_TOPOLOGY ||
         c->reasons[j].code == AL_WHY_TOO_BIG)) {
        c->wj[j].flags &= ~JF_BLOCKED; /* reclaim cannot lift a limit */
        set_reason(c, j, AL_WHY_MODEL_LIMIT, fq, NIL, AL_RES_GPU, fl, 0);
    }
    c->forbid = 0;
    return rc;
}

/*
 * Evictions free more than their reclaimer takes (devices come in whole
 * jobs), and the room appears after jobs ranked below the reclaimer were
 * already turned away.  Give every job still blocked for room one more
 * try, in rank order, so that no GPU stays idle that a waiting job fits.
 */
static int
second_chance(al_cycle_t *c, pass_t *ps)
{
    size_t i;
    int rc;

    if (c->cfg.strict_order)
        return 0;
    for (i = 0; i < ps->norder; i++) {
        int32_t j = ps->order[i].idx;
        const al_job_t *jb = &c->s->jobs[j];
        al_reason_t keep = c->reasons[j];
        int32_t fq = NIL;
        int64_t fl = 0;
        uint64_t h;

        if ((c->wj[j].flags & (JF_BLOCKED | JF_STARTED | JF_EVICTED)) !=
            JF_BLOCKED)
            continue;
        if (jb->req.gpus > 0 &&
            al__free_devices(c, j) < (int64_t)jb->min_tasks * jb->req.gpus)
            continue;
        h = shape_hash(jb);
        memo_reset(c, &ps->memo);
        if (memo_failed(&ps->memo, jb, h))
            continue;
        if (!al__admit(c, j, jb->min_tasks)) {
            c->reasons[j] = keep;
            continue;
        }
        /* A job with a reservation may use the room it holds; once it has
         * started, its holds must not keep later jobs out of that room
         * (the reservation is not reported, the room would look free). */
        bool own = al__has_resv(&ps->rs, j);
        if (own && ((rc = al__unhold_resv(c, &ps->rs)) != 0 ||
                    (rc = al__rehold_waiting(c, &ps->rs, j)) != 0))
            return rc;
        c->forbid = al__model_forbid(c, j, jb->min_tasks, &fq, &fl);
        rc = al__place_gang(c, j);
        if (rc == AL_ENOENT && c->forbid == 0 && !own)
            memo_note(&ps->memo, jb, h);
        c->forbid = 0;
        if (own) {
            int rc2 = al__unhold_resv(c, &ps->rs);
            if (rc2 == 0)
                rc2 = al__rehold_waiting(c, &ps->rs, NIL);
            if (rc2 != 0)
                return rc2;
        }
        if (rc == 0) {
            c->wj[j].flags &= ~JF_BLOCKED;
            continue;
        }
        c->reasons[j] = keep;
        if (rc != AL_ENOENT && rc != AL_ELIMIT)
            return rc;
    }
    return 0;
}

/*
 * Anti-starvation: the jobs that have waited longer than starve_after, at
 * most reserve_depth of them, are considered before the order of need:
 * oldest first, or with short_first the highest response ratio first.
 * Each starts, reclaims or takes one of the first reservations, so a gang
 * of a queue above its fair share cannot be passed over forever by the
 * steady small jobs of queues below theirs.
 */
static int
starving_first(al_cycle_t *c, pass_t *ps)
{
    int32_t pick[AL_STARVE_MAX], np = 0, k, j;
    int64_t key[AL_STARVE_MAX];
    int want = c->cfg.reserve_depth < AL_STARVE_MAX ? c->cfg.reserve_depth
                                                    : AL_STARVE_MAX;
    size_t i;
    int rc;

    if (c->cfg.starve_after <= 0 || c->cfg.strict_order ||
        c->cfg.ignore_queues || want <= 0)
        return 0;
    for (i = 0; i < ps->norder; i++) {
        const al_job_t *jb;
        int64_t t;

        j = ps->order[i].idx;
        jb = &c->s->jobs[j];
        t = jb->eligible_time > 0 ? jb->eligible_time : jb->submit_time;
        if (c->s->now - t < c->cfg.starve_after)
            continue;
        if (c->cfg.short_first)
            t = -al__response_ratio(c, jb, c->s->now - t);
        if (np == want &&
            (t > key[np - 1] || (t == key[np - 1] && j > pick[np - 1])))
            continue;
        /* A job its queue's limits hold back could take a place here
         * cycle after cycle and never use it.  (Asked only of jobs that
         * would get a place: with 100,000 waiting it cost 9 ms a cycle.) */
        if (!al__admit(c, j, jb->min_tasks))
            continue;
        /* Insert into the small sorted list, smallest key (then lowest
         * index) first. */
        k = np < want ? np++ : np - 1;
        while (k > 0 &&
               (key[k - 1] > t || (key[k - 1] == t && pick[k - 1] > j))) {
            key[k] = key[k - 1];
            pick[k] = pick[k - 1];
            k--;
        }
        key[k] = t;
        pick[k] = j;
    }
    for (k = 0; k < np; k++) {
        j = pick[k];
        c->wj[j].flags |= JF_TRIED;
        rc = try_start(c, ps, j);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int
allocate(al_cycle_t *c, pass_t *ps)
{
    qheap_t hp;
    size_t i = 0;
    int32_t q;
    int rc;

    ps->rs.resv = al_arena_array(
        c->tmp, (size_t)al__dag_max(c) + (size_t)c->cfg.reserve_depth + 1,
        sizeof(resv_int_t));
    hp.h = al_arena_array(c->tmp, (size_t)c->nq + 1, sizeof(int32_t));
    if (ps->rs.resv == NULL || hp.h == NULL)
        return AL_ENOMEM;
    hp.n = 0;
    ps->first_blocked = NIL;
    /* Pipelines' look-aheads first: every reservation after sees them. */
    rc = al__dag_lookahead(c, &ps->rs);
    if (rc != 0)
        return rc;
    /* Before the heap is built: starting jobs moves queues' keys. */
    rc = starving_first(c, ps);
    if (rc != 0)
        return rc;
    if (!c->cfg.ignore_queues) {
        for (q = 0; q < c->nq; q++)
            if (c->wq[q].leaf && c->wq[q].job_end > c->wq[q].job_begin) {
                al__heap_push(c, &hp, q);
            }
    }
    for (;;) {
        int32_t j;

        if (c->cfg.ignore_queues) {
            if (i >= ps->norder)
                break;
            j = ps->order[i++].idx;
        } else {
            wqueue_t *w;

            if (hp.n == 0)
                break;
            q = hp.h[0];
            w = &c->wq[q];
            j = ps->order[w->next_job++].idx;
            /* Jobs come in rank order, scattered in memory: fetch the
             * state of the one four places ahead while this one runs (a
             * quarter of a full cycle was cache misses here). */
            if (w->next_job + 4 < w->job_end) {
                int32_t pj = ps->order[w->next_job + 4].idx;
                const char *pjb = (const char *)&c->s->jobs[pj];

                __builtin_prefetch(pjb);
                __builtin_prefetch(pjb + 64);
                __builtin_prefetch(pjb + 128);
                __builtin_prefetch(&c->wj[pj]);
                __builtin_prefetch(&c->reasons[pj]);
            }
            if (w->next_job >= w->job_end)
                al__heap_pop(c, &hp);
        }
        if (c->wj[j].flags & JF_TRIED)
            continue; /* considered first, as a starving job */
        if (ps->first_blocked != NIL) {
            set_reason(c, j, AL_WHY_ORDER, NIL, ps->first_blocked, 0, 0, 0);
            continue;
        }
        rc = try_start(c, ps, j);
        if (rc != 0)
            return rc;
        if (c->wj[j].flags & JF_STARTED) {
            if (!c->cfg.ignore_queues)
                al__heap_fix(c, &hp, c->s->jobs[j].queue);
        } else if (c->cfg.strict_order) {
            ps->first_blocked = j;
        }
    }
    return c->nevicted > 0 ? second_chance(c, ps) : 0;
}

/* ------------------------------------------------------------------ */
/* The result                                                         */

void
al_result_destroy(al_result_t *res)
{
    if (res == NULL)
        return;
    al_arena_destroy(res->arena);
}

static int
build_result(al_cycle_t *c, const pass_t *ps, al_result_t **out)
{
    al_arena_t *ar = c->out;
    al_result_t *res;
    size_t nd = 0, i;
    int32_t j, q, r;
    const al_decision_t *starts = c->decisions.data;

    if (ar == NULL)
        return AL_ENOMEM;
    res = al_arena_alloc(ar, sizeof(*res));
    if (res == NULL)
        goto nomem;
    res->arena = ar;
    for (j = 0; j < c->nj; j++)
        if (c->wj[j].flags & (JF_EVICTED | JF_SHED))
            nd++;
    nd += c->decisions.len;
    /* A job started and un-started in this cycle has no decision at all. */
    res->decisions = al_arena_array(ar, nd + 1, sizeof(al_decision_t));
    res->reasons = c->reasons;
    res->queues =
        al_arena_array(ar, (size_t)c->nq + 1, sizeof(al_queue_share_t));
    res->reservations =
        al_arena_array(ar, (size_t)ps->rs.nresv + 1, sizeof(al_reservation_t));
    res->nreservations = 0;
    if (!res->decisions || !res->reasons || !res->queues || !res->reservations)
        goto nomem;
    /* Evictions first, in job order, so a shell frees before it starts. */
    nd = 0;
    for (j = 0; j < c->nj; j++) {
        const wjob_t *w = &c->wj[j];
        al_decision_t *d;

        if (!(w->flags & (JF_EVICTED | JF_SHED)) || (w->flags & JF_STARTED))
            continue;
        d = &res->decisions[nd++];
        d->job = j;
        d->why = (al_evict_why_t)w->why;
        d->for_job = w->for_job;
        if (w->flags & JF_EVICTED) {
            d->kind = AL_DEC_EVICT;
            d->ntasks = c->s->jobs[j].ntasks;
            d->requeue = c->s->jobs[j].preemptible;
        } else {
            d->kind = AL_DEC_SHRINK;
            d->ntasks = c->s->jobs[j].ntasks - w->ntasks;
        }
        c->stats.evicted++;
    }
    for (i = 0; i < c->decisions.len; i++) {
        al_decision_t *d;
        const wjob_t *w = &c->wj[starts[i].job];

        if (w->flags & JF_EVICTED) {
            c->stats.started--;
            c->stats.placements -= w->ntasks;
            continue;
        }
        d = &res->decisions[nd++];
        *d = starts[i];
        d->tasks =
            al_arena_array(ar, (size_t)d->ntasks + 1, sizeof(al_placement_t));
        if (d->tasks == NULL)
            goto nomem;
        memcpy(d->tasks, (const al_placement_t *)c->tasks.data + w->place_off,
               (size_t)d->ntasks * sizeof(al_placement_t));
    }
    res->ndecisions = (int)nd;
    for (j = 0; j < c->nj; j++) {
        al_reason_t *rs = &res->reasons[j];

        if ((c->wj[j].flags & JF_STARTED) && !(c->wj[j].flags & JF_EVICTED)) {
            memset(rs, 0, sizeof(*rs));
            rs->queue = NIL;
            rs->job = NIL;
        } else if (rs->code == AL_WHY_BEHIND_RESERVATION && rs->job >= 0 &&
                   (c->wj[rs->job].flags & JF_STARTED)) {
            /* The reservation it stood behind was met by reclaim later in
             * the cycle: what it waits for now is room. */
            rs->code = AL_WHY_CAPACITY;
            rs->job = NIL;
            rs->amount = 0;
            rs->time = 0;
        }
    }
    res->njobs = c->nj;
    for (q = 0; q < c->nq; q++) {
        for (r = 0; r < AL_NRES; r++) {
            res->queues[q].fair[r] = c->wq[q].fair[r];
            res->queues[q].allocated[r] = c->wq[q].alloc[r];
            res->queues[q].demand[r] = c->wq[q].demand[r];
        }
        res->queues[q].nonpreempt_gpu = c->wq[q].nonpre_gpu;
    }
    res->nqueues = c->nq;
    for (r = 0; r < ps->rs.nresv; r++) {
        al_reservation_t *rv = &res->reservations[res->nreservations];

        /* A job that reclaim started later in the cycle needs none. */
        if (c->wj[ps->rs.resv[r].r.job].flags & JF_STARTED)
            continue;
        res->nreservations++;
        *rv = ps->rs.resv[r].r;
        rv->nodes = al_arena_array(ar, (size_t)rv->nnodes + 1, sizeof(int32_t));
        rv->tasks = al_arena_array(ar, (size_t)rv->nnodes + 1, sizeof(int32_t));
        if (rv->nodes == NULL || rv->tasks == NULL)
            goto nomem;
        memcpy(rv->nodes, ps->rs.resv[r].r.nodes,
               (size_t)rv->nnodes * sizeof(int32_t));
        memcpy(rv->tasks, ps->rs.resv[r].r.tasks,
               (size_t)rv->nnodes * sizeof(int32_t));
    }
    res->stats = c->stats;
    *out = res;
    c->out = NULL; /* the result owns its arena now */
    return 0;
nomem:
    return AL_ENOMEM;
}

/* ------------------------------------------------------------------ */
/* The cycle                                                          */

static int
run(al_cycle_t *c, al_result_t **out, char **cause)
{
    pass_t ps;
    int rc;

    memset(&ps, 0, sizeof(ps));
    ps.memo.version = -1;
    ps.lend_memo.version = -1;
    rc = al__setup(c, cause);
    if (rc == 0)
        rc = al__critical_path(c); /* dag.c: what the order reads */
    if (rc != 0)
        return rc;
    if (!c->cfg.ignore_queues)
        al__fairshare(c);
    rc = al__build_order(c, &ps.order, &ps.norder);
    if (rc == 0)
        rc = allocate(c, &ps);
    if (rc == 0)
        rc = build_result(c, &ps, out);
    return rc;
}

int
al_sched_run(const al_snapshot_t *snap, al_result_t **out, char **cause)
{
    al_cycle_t c;
    al_result_t *res = NULL;
    int rc;

    memset(&c, 0, sizeof(c));
    rc = al__check_snapshot(snap, out, &c.cfg, cause);
    if (rc != 0)
        return rc;
    c.s = snap;
    c.a = snap->allocator ? snap->allocator : &al_default_allocator;
    c.nn = snap->nnodes;
    c.nq = snap->nqueues;
    c.nj = snap->njobs;
    c.min_resv_start = INT64_MAX;
    c.undo.esz = sizeof(undo_t);
    c.decisions.esz = sizeof(al_decision_t);
    c.tasks.esz = sizeof(al_placement_t);
    c.tmp = al_arena_create(c.a);
    c.out = al_arena_create(c.a);
    if (c.tmp == NULL || c.out == NULL) {
        al_arena_destroy(c.tmp);
        al_arena_destroy(c.out);
        return AL_ENOMEM;
    }
    rc = run(&c, &res, cause);
    al__vec_free(&c, &c.undo);
    al__vec_free(&c, &c.decisions);
    al__vec_free(&c, &c.tasks);
    al_arena_destroy(c.tmp);
    al_arena_destroy(c.out); /* NULL once the result took it */
    if (rc == 0)
        *out = res;
    return rc;
}
