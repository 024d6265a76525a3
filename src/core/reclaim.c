/*
 * reclaim.c -- reclaim and preemption: taking capacity back from running
 * jobs (or from jobs this cycle started) for a job still blocked.
 *
 * Owns: al__evict (a whole job), shed (an elastic job's extra tasks), the
 * victim search (victim_ok and its cache, node_victims, pick_victims,
 * reclaim_domain) and al__reclaim_one, the bounded attempt the allocation
 * pass makes for a blocked job.  Calls: place.c (al__find_task,
 * al__record_start), quota.c (al__within_quota), capacity.c, order.c
 * (al__share_ratio), vec.c.  Called by reserve.c (al__evict, for lent
 * capacity) and pass.c.
 */
#include <string.h>

#include "core_int.h"
/* Evicts job x (all its tasks) for the sake of job `for_job`. */
int
al__evict(al_cycle_t *c, int32_t x, int32_t for_job, al_evict_why_t why)
{
    const al_placement_t *pl = job_place(c, x);
    wjob_t *w = &c->wj[x];
    int32_t t;
    int rc;

    rc = al__job_mark(c, x);
    if (rc != 0)
        return rc;
    for (t = 0; t < w->ntasks; t++) {
        rc = al__give(c, x, &pl[t], true);
        if (rc != 0)
            return rc;
    }
    w->flags |= JF_EVICTED;
    w->for_job = for_job;
    w->why = why;
    c->nevicted++;
    if (w->flags & JF_STARTED) {
        /* Un-started: no decision for it survives; say why it waits.  (If
         * the reclaim is undone, the job is started again and a started
         * job's reason is cleared when the result is written.) */
        set_reason(c, x, AL_WHY_YIELDED, c->s->jobs[for_job].queue, for_job,
                   AL_RES_GPU, 0, 0);
    }
    return 0;
}

/* Sheds the extra tasks of elastic job x (those past min_tasks). */
static int
shed(al_cycle_t *c, int32_t x, int32_t for_job, al_evict_why_t why)
{
    const al_placement_t *pl = job_place(c, x);
    wjob_t *w = &c->wj[x];
    int32_t t, keep = c->s->jobs[x].min_tasks;
    int rc;

    rc = al__job_mark(c, x);
    if (rc != 0)
        return rc;
    for (t = w->ntasks - 1; t >= keep; t--) {
        rc = al__give(c, x, &pl[t], true);
        if (rc != 0)
            return rc;
    }
    w->ntasks = keep;
    w->flags |= JF_SHED;
    c->nevicted++;
    w->for_job = for_job;
    w->why = why;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Victims                                                            */

#define VICTIMS_MAX (4 * AL_MAX_DEVICES)

typedef struct victim {
    int32_t job;
    bool shed;     /* only the extra tasks of an elastic job */
    bool guarded;  /* its queue's deserved quota limits what may be taken */
    int64_t qgive; /* milli-GPUs its queue loses (all its tasks, anywhere) */
    int64_t dev, cpu, mem; /* what it frees on the node looked at */
    skey_t key;
} victim_t;

/* GPUs queue q holds in jobs that were running before this cycle: what
 * reclaim protects down to the deserved quota (jobs this cycle started
 * would otherwise let it evict work that ran, then count what it started). */
static int64_t
running_gpu(const al_cycle_t *c, int32_t q)
{
    return c->wq[q].alloc[AL_RES_GPU] - c->wq[q].started_gpu;
}

/* Milli-GPUs that running job x's tasks from `from` on hold: what its
 * queue is charged for them (a fraction sized by memory may hold more than
 * it asked for). */
static int64_t
held_gpu(const al_cycle_t *c, int32_t x, int32_t from)
{
    const al_placement_t *pl;
    int64_t g = 0;
    int32_t t;

    /* The victim search asks this for every running job, again and again:
     * the two answers it needs for jobs that ran before the cycle were
     * summed once in setup_jobs(). */
    if ((c->wj[x].flags & (JF_RUNNING | JF_STARTED)) == JF_RUNNING) {
        if (from == 0)
            return (c->wj[x].flags & JF_SHED)
                       ? c->wj[x].held - c->wj[x].held_extra
                       : c->wj[x].held;
        if (from == c->wj[x].min_tasks && !(c->wj[x].flags & JF_SHED))
            return c->wj[x].held_extra;
    }
    pl = job_place(c, x);
    for (t = from; t < c->wj[x].ntasks; t++)
        g += al__placed_gpu(&pl[t]);
    return g;
}

/*
 * May reclaim take `take` milli-GPUs of jobs no larger than queue a's
 * deserved quota from a?  Such jobs keep what of the quota they held: the
 * queue's GPUs outside its big jobs (over quota as a whole, see
 * over_quota_alone) must stay at least min(deserved, what they were before
 * the cycle).  Big jobs evicted earlier in the cycle still count as held
 * here, which errs on the side of the victim.
 */
static bool
keeps_quota(const al_cycle_t *c, int32_t a, int64_t take)
{
    int64_t deserved = c->s->queues[a].quota[AL_RES_GPU].deserved;
    int64_t small = running_gpu(c, a) - c->wq[a].big_gpu;
    int64_t before = c->wq[a].run_gpu0 - c->wq[a].big_gpu;

    return small - take >= (before < deserved ? before : deserved);
}

static bool outranks(const al_cycle_t *c, int32_t j, int32_t x);

/* Has job j waited past starve_after (al_config_t.starve_after)? */
static bool
starving(const al_cycle_t *c, const al_job_t *jb)
{
    int64_t t = jb->eligible_time > 0 ? jb->eligible_time : jb->submit_time;

    return c->cfg.starve_after > 0 && c->s->now - t >= c->cfg.starve_after;
}

/*
 * Starvation across queues: may job j, waiting past starve_after, evict
 * job x of another queue, running since before this cycle, whatever x's
 * queue holds of its deserved quota?  Only when service levels are on, x
 * is of j's priority class or lower, at a higher service level than j,
 * and its current run is longer than both starve_after and SERVED_FACTOR
 * times j's expected runtime: a job that ran that long is likely to run
 * on as long again, and j's short run delays it by little (the sum of
 * completion times shrinks).  Without this a gang larger than its queue's
 * deserved share waits, in a cluster every queue fills to its share, until
 * the longest jobs in its way end by themselves (weeks on the Alibaba
 * openb trace, docs/simulation.md), while least-attained-service
 * schedulers start it at once.
 */
#define SERVED_FACTOR 4.0

static bool
served_long(const al_cycle_t *c, int32_t j, int32_t x)
{
    const al_job_t *jb = &c->s->jobs[j], *xb = &c->s->jobs[x];
    int64_t ran;

    if (!c->cfg.preempt || c->cfg.service_levels[0] <= 0 ||
        xb->queue == jb->queue || (c->wj[x].flags & JF_STARTED) ||
        xb->priority > jb->priority || c->wj[x].level <= c->wj[j].level ||
        !starving(c, jb))
        return false;
    ran = c->s->now - xb->start_time;
    return ran >= c->cfg.starve_after &&
           (double)ran > SERVED_FACTOR * (double)job_runtime(c, jb);
}

/*
 * The other way round, so that the two rules do not undo each other: may
 * reclaim for job j, a job that has been served long (its earlier runs,
 * per GPU, longer than both starve_after and SERVED_FACTOR times x's
 * expected runtime), not take back a gang x larger than its own queue's
 * deserved quota at a lower service level?  Such a gang ran only by
 * borrowing or by served_long(), and it is expected to end soon against
 * what j has run; reclaim waits for it.
 */
static bool
spares_short_gang(const al_cycle_t *c, int32_t j, int32_t x)
{
    const al_job_t *jb = &c->s->jobs[j], *xb = &c->s->jobs[x];
    double gpus, ran;

    if (!c->cfg.preempt || c->cfg.service_levels[0] <= 0 ||
        c->wj[x].level >= c->wj[j].level ||
        !over_quota_alone(c, xb->queue, c->wj[x].held))
        return false;
    gpus = (double)jb->min_tasks * (double)c->wj[j].task_gpu / AL_GPU_MILLI;
    ran = gpus > 0 && jb->attained > 0 ? jb->attained / gpus : 0;
    return ran >= (double)c->cfg.starve_after &&
           ran > SERVED_FACTOR * (double)job_runtime(c, xb);
}

/* May running job x be evicted (or shed) so that job j can start? */
static bool
victim_ok(al_cycle_t *c, int32_t j, int32_t x, bool shed_only)
{
    const al_job_t *jb = &c->s->jobs[j], *xb = &c->s->jobs[x];
    const wjob_t *w = &c->wj[x];
    int64_t give;
    int32_t q, a;

    if (!(w->flags & (JF_RUNNING | JF_STARTED)) || (w->flags & JF_EVICTED) ||
        !xb->preemptible)
        return false;
    if (w->flags & JF_STARTED) {
        /* Started earlier in this cycle: un-starting it loses no work, so
         * it needs no min_runtime and costs its queue nothing it ran.  A
         * job that evicted others to start keeps its place: its victims
         * made room for it, not for whoever comes next. */
        if (shed_only || (w->flags & JF_RECLAIMER))
            return false;
        if (xb->queue == jb->queue)
            return c->cfg.preempt && outranks(c, j, x);
        return c->cfg.reclaim && !c->cfg.ignore_queues &&
               (double)c->wq[xb->queue].alloc[AL_RES_GPU] >
                   c->wq[xb->queue].fair[AL_RES_GPU] + 0.5;
    }
    if (shed_only && w->ntasks <= xb->min_tasks)
        return false;
    if (c->s->now - xb->start_time < xb->min_runtime)
        return false; /* shedding loses work too */
    if (xb->queue == jb->queue)
        return c->cfg.preempt && outranks(c, j, x);
    if (c->served_only)
        return served_long(c, j, x);
    if (!c->cfg.reclaim || c->cfg.ignore_queues)
        return false;
    if (served_long(c, j, x))
        return true;
    /* Lent capacity goes back to anyone who needs it. */
    if (w->flags & JF_LENT)
        return true;
    if (spares_short_gang(c, j, x))
        return false;
    q = xb->queue;
    give = held_gpu(c, x, shed_only ? xb->min_tasks : 0);
    if ((double)c->wq[q].alloc[AL_RES_GPU] <= c->wq[q].fair[AL_RES_GPU] + 0.5)
        return false;
    /* Never take a victim's queue (or an ancestor j does not share) below
     * its deserved quota. */
    for (a = q; a != NIL; a = c->wq[a].parent) {
        int32_t b;
        bool shared = false;

        for (b = jb->queue; b != NIL; b = c->wq[b].parent)
            if (b == a)
                shared = true;
        if (shared)
            break;
        if (!over_quota_alone(c, a, c->wj[x].held) && !keeps_quota(c, a, give))
            return false;
    }
    return true;
}

/* May job j reclaim from other queues: is its queue below fair share (or
 * deserved) even after j starts? */
static bool
may_reclaim(const al_cycle_t *c, int32_t j)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t need = (int64_t)jb->min_tasks * c->wj[j].task_gpu;
    int32_t q = jb->queue;
    double room = c->wq[q].fair[AL_RES_GPU];

    if ((double)c->s->queues[q].quota[AL_RES_GPU].deserved > room)
        room = (double)c->s->queues[q].quota[AL_RES_GPU].deserved;
    return (double)(c->wq[q].alloc[AL_RES_GPU] + need) <= room + 0.5;
}

static int64_t
progress(const al_cycle_t *c, int32_t x)
{
    const al_job_t *xb = &c->s->jobs[x];
    int64_t since = xb->start_time;

    if (xb->checkpoint_time > since)
        since = xb->checkpoint_time;
    return c->s->now - since;
}

/*
 * Service preemption: x has less claim than j inside their queue (x's rank
 * is lower) and evicting it pays.  A lower priority class always yields.
 * In one class, x at a higher service level (al_config_t.service_levels)
 * yields only when what it is expected still to run exceeds j's expected
 * runtime plus RUN_WEIGHT times its current run.  Evicting x for j shrinks
 * the sum of completion times by about x's remaining time less j's runtime
 * and less the work x redoes; the weight charges the whole run, not only
 * the progress since the last checkpoint, because a long run is also GPU
 * time the others waited for, and a job evicted near its end is the most
 * expensive eviction there is.  What x is expected still to run is its
 * expected runtime less its current run, but at least OVERRUN_FACTOR times
 * that run: a job past its estimate has proved the estimate wrong, and a
 * heavy-tailed job that ran for t typically runs on for about as long again
 * or more.  With the two constants (chosen on the ITP traces,
 * docs/scheduling.md) x yields when its estimate less three times its run
 * exceeds j's runtime, or when it has run more than four times j's
 * runtime.  Un-starting a job this cycle started loses nothing, so there
 * the run is 0 and its earlier runs stand for what it proved.
 */
#define RUN_WEIGHT 2.0
#define OVERRUN_FACTOR 2.25

static bool
outranks(const al_cycle_t *c, int32_t j, int32_t x)
{
    const al_job_t *jb = &c->s->jobs[j], *xb = &c->s->jobs[x];
    double ran, left;

    if (c->wj[x].rank >= c->wj[j].rank)
        return false;
    if (xb->priority < jb->priority)
        return true;
    if (c->wj[x].flags & JF_STARTED) {
        /* Un-starting loses nothing: what counts is how long it ran
         * before, in seconds at the size it asks for. */
        double gpus =
            (double)c->wj[x].ntasks * (double)c->wj[x].task_gpu / AL_GPU_MILLI;

        ran = gpus > 0 && xb->attained > 0 ? xb->attained / gpus : 0;
        left = (double)job_runtime(c, xb);
        if (left < OVERRUN_FACTOR * ran)
            left = OVERRUN_FACTOR * ran;
        return left > (double)job_runtime(c, jb);
    }
    ran = (double)(c->s->now - xb->start_time);
    left = (double)job_runtime(c, xb) - ran;
    if (left < OVERRUN_FACTOR * ran)
        left = OVERRUN_FACTOR * ran;
    return left > (double)job_runtime(c, jb) + RUN_WEIGHT * ran;
}

/* Cost key: lowest priority, most over-share queue, least progress lost. */
static void
victim_key(const al_cycle_t *c, victim_t *v)
{
    const al_job_t *xb = &c->s->jobs[v->job];
    double ratio = al__share_ratio(c, xb->queue);
    uint64_t rk;

    if (ratio > 1e15)
        ratio = 1e15;
    rk = (uint64_t)(ratio * 1000.0);
    /* Un-starting a job this cycle started is free; shedding extra tasks
     * is cheaper than evicting a whole job. */
    v->key.k[0] =
        ((uint64_t)((c->wj[v->job].flags & JF_STARTED) ? 0 : 1) << 63) |
        ((uint64_t)(v->shed ? 0 : 1) << 62) |
        ((uint64_t)(c->wj[v->job].rank + ((int64_t)1 << 40)) &
         (((uint64_t)1 << 42) - 1))
            << 20;
    v->key.k[1] = UINT64_MAX - rk;
    v->key.k[2] = bias(progress(c, v->job));
    v->key.k[3] = 0;
    v->key.idx = v->job;
}

/* Does queue a contain queue q (a == q or an ancestor of it)? */
static bool
contains(const al_cycle_t *c, int32_t a, int32_t q)
{
    for (; q != NIL; q = c->wq[q].parent)
        if (q == a)
            return true;
    return false;
}

/* May victim v join the victims chosen[0..n) for job j without taking any
 * queue that j does not share below its deserved GPU quota? */
static bool
together_ok(const al_cycle_t *c, int32_t j, const victim_t *chosen, int32_t n,
            const victim_t *v)
{
    int32_t jq = c->s->jobs[j].queue, a, i;

    if (!v->guarded)
        return true;
    for (a = c->s->jobs[v->job].queue; a != NIL; a = c->wq[a].parent) {
        int64_t take = 0;

        if (contains(c, a, jq))
            break;
        if (!over_quota_alone(c, a, c->wj[v->job].held))
            take += v->qgive;
        for (i = 0; i < n; i++)
            if (chosen[i].guarded &&
                contains(c, a, c->s->jobs[chosen[i].job].queue) &&
                !over_quota_alone(c, a, c->wj[chosen[i].job].held))
                take += chosen[i].qgive;
        if (take > 0 && !keeps_quota(c, a, take))
            return false;
    }
    return true;
}

/*
 * victim_ok() for one pick_victims() call: the answer depends only on the
 * two jobs and on queue allocations, which do not move during a pick, and a
 * victim is met once per node it has tasks on.  c->vepoch changes per pick.
 */
static bool
victim_ok_cached(al_cycle_t *c, int32_t j, int32_t x, bool shed_only)
{
    uint8_t bit = shed_only ? 1 : 2, known = (uint8_t)(bit << 2);

    if (c->vstamp[x] != c->vepoch) {
        c->vstamp[x] = c->vepoch;
        c->vok[x] = 0;
    }
    if (!(c->vok[x] & known))
        c->vok[x] |=
            (uint8_t)(known | (victim_ok(c, j, x, shed_only) ? bit : 0));
    return (c->vok[x] & bit) != 0;
}

/* The tasks this cycle started so far, by node (CSR of (job, task)). */
typedef struct started {
    int32_t *off; /* nn + 1 */
    al_jt_t *ent;
} started_t;

static int
started_by_node(al_cycle_t *c, started_t *st)
{
    const al_decision_t *d = c->decisions.data;
    int32_t n, *fill;
    size_t i, total = 0;

    st->off = al_arena_array(c->tmp, (size_t)c->nn + 2, sizeof(int32_t));
    fill = al_arena_array(c->tmp, (size_t)c->nn + 1, sizeof(int32_t));
    if (st->off == NULL || fill == NULL)
        return AL_ENOMEM;
    for (i = 0; i < c->decisions.len; i++) {
        const al_placement_t *pl = job_place(c, d[i].job);
        int32_t t;

        if (c->wj[d[i].job].flags & JF_EVICTED)
            continue;
        for (t = 0; t < c->wj[d[i].job].ntasks; t++) {
            st->off[pl[t].node + 1]++;
            total++;
        }
    }
    for (n = 0; n < c->nn; n++)
        st->off[n + 1] += st->off[n];
    st->ent = al_arena_array_raw(c->tmp, total + 1, sizeof(al_jt_t));
    if (st->ent == NULL)
        return AL_ENOMEM;
    for (i = 0; i < c->decisions.len; i++) {
        const al_placement_t *pl = job_place(c, d[i].job);
        int32_t t;

        if (c->wj[d[i].job].flags & JF_EVICTED)
            continue;
        for (t = 0; t < c->wj[d[i].job].ntasks; t++) {
            int32_t at = st->off[pl[t].node] + fill[pl[t].node]++;

            st->ent[at].job = d[i].job;
            st->ent[at].task = t;
        }
    }
    return 0;
}

/*
 * Takes victims from scratch[0..m) in order until one task of job j fits
 * on node w, moving those taken to the front; *used counts them and
 * dev/cpu/mem say what the node then has free.  Victims are checked one by
 * one in victim_ok(); here, together, they must not take a queue below its
 * deserved quota either.  Returns whether the task fits.
 */
static bool
accumulate(const al_cycle_t *c, int32_t j, const wnode_t *w,
           const al_request_t *req, victim_t *scratch, int32_t m, int32_t *used,
           int64_t *dev, int64_t *cpu, int64_t *mem)
{
    int64_t need = req->gpus > 0 ? req->gpus : 1;
    int32_t i, n = 0;

    *dev = w->nfree;
    *cpu = w->free_cpu;
    *mem = w->free_mem;
    for (i = 0; i < m; i++) {
        if (*dev >= need && *cpu >= req->cpu_milli && *mem >= req->mem_bytes)
            break;
        if (!together_ok(c, j, scratch, n, &scratch[i]))
            continue;
        if (i != n) {
            victim_t t = scratch[n];

            scratch[n] = scratch[i];
            scratch[i] = t;
        }
        *dev += scratch[n].dev;
        *cpu += scratch[n].cpu;
        *mem += scratch[n].mem;
        n++;
    }
    *used = n;
    return *dev >= need && *cpu >= req->cpu_milli && *mem >= req->mem_bytes;
}

/* Job x's entry among the m victims of scratch[] (shed: it gives up only
 * its tasks beyond min_tasks), added when missing and there is room (at
 * most VICTIMS_MAX a node); -1 when there is none. */
static int32_t
victim_entry(al_cycle_t *c, int32_t j, int32_t x, bool sh, victim_t *scratch,
             int32_t *m)
{
    int32_t i;

    for (i = 0; i < *m; i++)
        if (scratch[i].job == x && scratch[i].shed == sh)
            return i;
    if (*m == VICTIMS_MAX)
        return -1; /* enough candidates on one node */
    scratch[i].job = x;
    scratch[i].shed = sh;
    scratch[i].dev = scratch[i].cpu = scratch[i].mem = 0;
    scratch[i].qgive = held_gpu(c, x, sh ? c->wj[x].min_tasks : 0);
    scratch[i].guarded = c->s->jobs[x].queue != c->s->jobs[j].queue &&
                         !(c->wj[x].flags & (JF_LENT | JF_STARTED)) &&
                         !served_long(c, j, x);
    /* The key is the same on every node: compute it once a pick (as a
     * whole-job victim; shedding clears bit 62). */
    if (!(c->vok[x] & 16)) {
        victim_t whole = scratch[i];

        whole.shed = false;
        victim_key(c, &whole);
        c->vkey[x] = whole.key;
        c->vok[x] |= 16;
    }
    scratch[i].key = c->vkey[x];
    if (sh)
        scratch[i].key.k[0] &= ~(1ULL << 62);
    (*m)++;
    return i;
}

/* The eligible victims of job j with tasks on node n, into scratch[]
 * (what each would free there): what ran before the cycle, then what the
 * cycle started.  Returns how many. */
static int32_t
node_victims(al_cycle_t *c, int32_t j, int32_t n, const started_t *st,
             victim_t *scratch)
{
    const wnode_t *w = &c->wn[n];
    int32_t k, m = 0;

    for (k = 0; k < w->nrun + (st->off[n + 1] - st->off[n]); k++) {
        bool ran = k < w->nrun;
        int32_t e = ran ? w->run_off + k : st->off[n] + (k - w->nrun);
        int32_t x = ran ? c->run_tasks[e].job : st->ent[e].job;
        int32_t t = ran ? c->run_tasks[e].task : st->ent[e].task;
        bool sh = false;
        const al_placement_t *p;
        int32_t i;

        if (c->wj[x].flags & JF_EVICTED)
            continue;
        if (t >= c->wj[x].ntasks)
            continue; /* already shed */
        /* Only wj[] here: the job structs are big and scattered, and this
         * loop meets every running task of the cluster. */
        if (t >= c->wj[x].min_tasks && victim_ok_cached(c, j, x, true))
            sh = true;
        else if (!victim_ok_cached(c, j, x, false))
            continue;
        if ((i = victim_entry(c, j, x, sh, scratch, &m)) < 0)
            continue;
        p = &job_place(c, x)[t];
        scratch[i].dev += p->gpu_milli > 0 ? 0 : popcount64(p->devices);
        scratch[i].cpu += c->wj[x].cpu;
        scratch[i].mem += c->wj[x].mem;
    }
    return m;
}

/* Sorts the m victims cheapest first, or (by_dev) those freeing most
 * devices first (insertion sort: a handful per node). */
static void
sort_victims(victim_t *scratch, int32_t m, bool by_dev)
{
    for (int32_t i = 1; i < m; i++) {
        victim_t x = scratch[i];
        int32_t k = i;

        while (k > 0 && (by_dev ? scratch[k - 1].dev < x.dev
                                : skey_cmp(&scratch[k - 1].key, &x.key) > 0)) {
            scratch[k] = scratch[k - 1];
            k--;
        }
        scratch[k] = x;
    }
}

/* Spares every victim among the first *used that the others make
 * unnecessary, the most expensive first: cheapest-first accumulation can
 * pick a small victim that a larger one, needed anyway, makes redundant.
 * dev, cpu and mem are what the node has with all *used evicted. */
static void
spare_victims(const al_request_t *req, int64_t need, victim_t *scratch,
              int32_t *m, int32_t *used, int64_t dev, int64_t cpu, int64_t mem)
{
    for (int32_t i = *used - 1; i >= 0; i--) {
        if (dev - scratch[i].dev >= need &&
            cpu - scratch[i].cpu >= req->cpu_milli &&
            mem - scratch[i].mem >= req->mem_bytes) {
            dev -= scratch[i].dev;
            cpu -= scratch[i].cpu;
            mem -= scratch[i].mem;
            memmove(&scratch[i], &scratch[i + 1],
                    (size_t)(*m - i - 1) * sizeof(*scratch));
            (*m)--;
            (*used)--;
        }
    }
}

/*
 * For one task of job j, finds the node where the fewest, cheapest victims
 * make room.  Fills vs[0..*nv) with the victims to evict and *node, or sets
 * *node NIL when nothing works.
 */
static int
pick_victims(al_cycle_t *c, int32_t j, int level, int32_t dom,
             const started_t *st, victim_t *vs, int32_t *nv, int32_t *node,
             victim_t *scratch)
{
    const al_request_t *req = &c->s->jobs[j].req;
    skey_t bestkey;
    int32_t li, lo = 0, hi = c->nn, best = NIL, bestn = 0;
    int64_t need = req->gpus > 0 ? req->gpus : 1;

    if (level >= 0) {
        lo = c->dom_off[level][dom];
        hi = c->dom_off[level][dom + 1];
    }
    memset(&bestkey, 0xff, sizeof(bestkey));
    c->vepoch++;
    for (li = lo; li < hi; li++) {
        int32_t n = level >= 0 ? c->dom_nodes[level][li] : li;
        const wnode_t *w = &c->wn[n];
        int32_t m, used = 0;
        int64_t dev, cpu, mem;
        skey_t key;

        if (!w->ready || w->group == NIL || !al__req_group(c, w->group, req))
            continue;
        if (w->nrun == 0 && st->off[n] == st->off[n + 1])
            continue;
        if ((m = node_victims(c, j, n, st, scratch)) == 0)
            continue;
        sort_victims(scratch, m, false);
        if (!accumulate(c, j, w, req, scratch, m, &used, &dev, &cpu, &mem)) {
            /* Cheapest first can stall on the deserved guard (a small
             * victim uses up what a queue may lose); try largest first. */
            sort_victims(scratch, m, true);
            if (!accumulate(c, j, w, req, scratch, m, &used, &dev, &cpu, &mem))
                continue;
        }
        if (used == 0)
            continue; /* fits without victims: placement failed elsewhere */
        spare_victims(req, need, scratch, &m, &used, dev, cpu, mem);
        /* Compare: the most expensive victim used, then how many. */
        key = scratch[used - 1].key;
        key.idx = used;
        if (best == NIL || skey_cmp(&key, &bestkey) < 0) {
            best = n;
            bestkey = key;
            bestn = used;
            memcpy(vs, scratch, (size_t)used * sizeof(*vs));
        }
    }
    *node = best;
    *nv = bestn;
    return 0;
}

/*
 * For a gang that must stay inside one topology domain: the domain where
 * free devices plus those of eligible victims hold every task, preferring
 * the one with most free devices already (fewest evictions).  NIL if none.
 */
static int32_t
reclaim_domain(al_cycle_t *c, int32_t j, int level)
{
    const al_job_t *jb = &c->s->jobs[j];
    int64_t g = jb->req.gpus > 0 ? jb->req.gpus : 1, bestfree = -1;
    int32_t d, best = NIL;

    c->vepoch++;
    for (d = 0; d < c->ndomains[level]; d++) {
        int32_t i, lo = c->dom_off[level][d], hi = c->dom_off[level][d + 1];
        int64_t pot = 0, f = 0;

        for (i = lo; i < hi; i++) {
            int32_t n = c->dom_nodes[level][i], k;
            const wnode_t *w = &c->wn[n];
            int64_t vdev = 0;

            if (!w->ready || w->group == NIL ||
                !al__req_group(c, w->group, &jb->req))
                continue;
            for (k = 0; k < w->nrun; k++) {
                int32_t x = c->run_tasks[w->run_off + k].job;
                int32_t t = c->run_tasks[w->run_off + k].task;
                const al_placement_t *p = &c->s->jobs[x].placement[t];

                if ((c->wj[x].flags & JF_EVICTED) || t >= c->wj[x].ntasks ||
                    p->gpu_milli > 0 || !victim_ok_cached(c, j, x, false))
                    continue;
                vdev += popcount64(p->devices);
            }
            pot += (w->nfree + vdev) / g;
            f += w->nfree;
        }
        if (pot >= jb->min_tasks && f > bestfree) {
            best = d;
            bestfree = f;
        }
    }
    return best;
}

/* ------------------------------------------------------------------ */
/* Reclaiming for one job                                             */

/* Tries to start blocked job j by evicting victims.  On failure the state
 * is unchanged.  Returns 0 (see *started) or AL_ENOMEM. */
static int
reclaim_for(al_cycle_t *c, int32_t j, victim_t *vs, victim_t *scratch,
            bool *started)
{
    const al_job_t *jb = &c->s->jobs[j];
    size_t mark = c->undo.len, tmark = c->tasks.len;
    int32_t t, i, dom = NIL;
    int level = -1, rc = 0;
    started_t st = { NULL, NULL };

    *started = false;
    if (jb->topo_mode == AL_TOPO_REQUIRED && jb->min_tasks > 1) {
        level = jb->topo_level;
        dom = reclaim_domain(c, j, level);
        if (dom == NIL)
            return 0;
    }
    for (t = 0; t < jb->min_tasks; t++) {
        al_placement_t p;
        int32_t nv, node;

        rc = al__find_task(c, j, -1, level, dom, &p);
        if (rc == AL_ENOENT) {
            /* What this cycle started stays the same while j's own tasks
             * are placed (j is recorded at the end). */
            rc = st.off == NULL ? started_by_node(c, &st) : 0;
            if (rc == 0)
                rc = pick_victims(c, j, level, dom, &st, vs, &nv, &node,
                                  scratch);
            if (rc != 0 || node == NIL) {
                rc = rc ? rc : AL_ENOENT;
                goto fail;
            }
            for (i = 0; i < nv; i++) {
                bool same = jb->queue == c->s->jobs[vs[i].job].queue;
                al_evict_why_t why = same ? AL_EVICT_PREEMPT : AL_EVICT_RECLAIM;

                if (c->wj[vs[i].job].flags & JF_LENT)
                    why = AL_EVICT_RESERVATION;
                rc = vs[i].shed ? shed(c, vs[i].job, j, why)
                                : al__evict(c, vs[i].job, j, why);
                if (rc != 0)
                    goto fail;
            }
            rc = al__find_task(c, j, node, -1, NIL, &p);
        }
        if (rc == 0)
            rc = al__take(c, j, &p, true);
        if (rc == 0)
            rc = al__vec_push(c, &c->tasks, &p);
        if (rc != 0)
            goto fail;
    }
    if (!al__within_quota(c, j)) {
        rc = AL_ENOENT;
        goto fail;
    }
    rc = al__record_start(c, j, jb->min_tasks, false, NIL);
    if (rc != 0)
        goto fail;
    c->wj[j].flags |= JF_RECLAIMER;
    c->stats.started++;
    c->stats.placements += jb->min_tasks;
    *started = true;
    return 0;
fail:
    al__undo_to(c, mark);
    c->tasks.len = tmark;
    return rc == AL_ENOENT ? 0 : rc;
}

/* Is any leaf queue other than q above its GPU fair share? */
static bool
any_over_share(const al_cycle_t *c, int32_t q)
{
    int32_t k;

    for (k = 0; k < c->nq; k++)
        if (k != q && c->wq[k].leaf &&
            (double)c->wq[k].alloc[AL_RES_GPU] >
                c->wq[k].fair[AL_RES_GPU] + 0.5)
            return true;
    return false;
}

/*
 * Reclaim and preemption for job j, which just failed to find room: called
 * from the allocation pass at once, before any job of a queue in less need
 * takes idle capacity that the eviction would have joined (which made the
 * next cycle evict what this one had just started).  Bounded by
 * max_reclaim_tries per cycle, and per queue by the smallest gang that
 * already failed.  Returns 0 (see *started) or AL_ENOMEM.
 */
int
al__reclaim_one(al_cycle_t *c, int32_t j, bool *started)
{
    const al_job_t *jb = &c->s->jobs[j];
    wqueue_t *w = &c->wq[jb->queue];
    int64_t size = (int64_t)jb->min_tasks * c->wj[j].task_gpu;
    al_reason_t keep = c->reasons[j];
    bool cross, served = false, save = c->cfg.reclaim;
    int rc;

    *started = false;
    if ((!c->cfg.reclaim && !c->cfg.preempt) || c->cfg.strict_order ||
        c->cfg.ignore_queues ||
        c->stats.reclaim_tries >= c->cfg.max_reclaim_tries)
        return 0;
    if (w->reclaim_fail > 0 && size >= w->reclaim_fail)
        return 0;
    cross = c->cfg.reclaim && may_reclaim(c, j);
    /* A starving job may still take long-served jobs of other queues. */
    if (!cross && c->cfg.reclaim && c->cfg.preempt &&
        c->cfg.service_levels[0] > 0 && starving(c, jb))
        served = true;
    /* Preemption needs a preemptible job of lower rank in the queue. */
    if (!cross && !served && (!c->cfg.preempt || c->wj[j].rank <= w->min_rank))
        return 0;
    if (c->vs == NULL) {
        c->vs = al_arena_array(c->tmp, VICTIMS_MAX + 1, sizeof(victim_t));
        c->vscratch = al_arena_array(c->tmp, VICTIMS_MAX + 1, sizeof(victim_t));
        c->vstamp = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(int32_t));
        c->vok = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(uint8_t));
        c->vkey = al_arena_array_raw(c->tmp, (size_t)c->nj + 1, sizeof(skey_t));
        if (c->vs == NULL || c->vscratch == NULL || c->vstamp == NULL ||
            c->vok == NULL || c->vkey == NULL)
            return AL_ENOMEM;
    }
    c->stats.reclaim_tries++;
    c->cfg.reclaim = cross;
    c->served_only = served;
    rc = reclaim_for(c, j, c->vs, c->vscratch, started);
    c->cfg.reclaim = save;
    c->served_only = false;
    if (rc != 0 || *started)
        return rc;
    /* What reclaim_for() noted on its way does not replace the reason. */
    c->reasons[j] = keep;
    if (w->reclaim_fail == 0 || size < w->reclaim_fail)
        w->reclaim_fail = size;
    /* Say so only where reclaim was the way out: another queue is over
     * its fair share. */
    if (cross && any_over_share(c, jb->queue) &&
        (keep.code == AL_WHY_CAPACITY || keep.code == AL_WHY_NO_NODE))
        set_reason(c, j, AL_WHY_NO_VICTIM, jb->queue, NIL, AL_RES_GPU, 0, 0);
    return 0;
}
