/*
 * place.c -- the working cluster: free capacity per node and device, the
 * indexes that make placement fast, and reversible take/give operations.
 *
 * Nodes of one (pool, GPU model) group are kept in buckets by their number
 * of free whole devices, so that a best-fit search for a task of g GPUs looks
 * at bucket g, g+1, ... and stops at the first node that also has the CPU
 * and memory: O(devices per node) instead of O(nodes).  Nodes with partly
 * used devices are also on a "shared" list, where fractional tasks look
 * first, so fractions pack onto devices that are already shared.
 */
#include <limits.h>
#include <string.h>

#include "core_int.h"

/* SWAR popcount: popcount64 compiles to a libgcc call on
 * baseline x86-64 (no -mpopcnt), which showed up at 12% of a full cycle. */
static inline int
popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

int
al__popcount(uint64_t x)
{
    return popcount64(x);
}

static int
streq(const char *a, const char *b)
{
    if (a == NULL || *a == '\0')
        return b == NULL || *b == '\0';
    return b != NULL && strcmp(a, b) == 0;
}

/* ------------------------------------------------------------------ */
/* Buckets and lists                                                  */

static void
bucket_unlink(al_ctx_t *c, int32_t n)
{
    wnode_t *w = &c->wn[n];
    wgroup_t *g = &c->groups[w->group];

    if (w->prev != NIL)
        c->wn[w->prev].next = w->next;
    else
        g->bucket[w->nfree] = w->next;
    if (w->next != NIL)
        c->wn[w->next].prev = w->prev;
    w->prev = w->next = NIL;
}

static void
bucket_link(al_ctx_t *c, int32_t n)
{
    wnode_t *w = &c->wn[n];
    wgroup_t *g = &c->groups[w->group];
    int32_t head = g->bucket[w->nfree];

    w->prev = NIL;
    w->next = head;
    if (head != NIL)
        c->wn[head].prev = n;
    g->bucket[w->nfree] = n;
}

static void
shared_update(al_ctx_t *c, int32_t n)
{
    wnode_t *w = &c->wn[n];
    wgroup_t *g;
    bool want = w->shared_mask != 0;

    if (w->group == NIL || !w->ready || want == w->in_shared)
        return;
    g = &c->groups[w->group];
    if (want) {
        w->sprev = NIL;
        w->snext = g->shared_head;
        if (g->shared_head != NIL)
            c->wn[g->shared_head].sprev = n;
        g->shared_head = n;
    } else {
        if (w->sprev != NIL)
            c->wn[w->sprev].snext = w->snext;
        else
            g->shared_head = w->snext;
        if (w->snext != NIL)
            c->wn[w->snext].sprev = w->sprev;
    }
    w->in_shared = want;
}

/* Recomputes n's free count and moves it to its bucket. */
static void
refresh(al_ctx_t *c, int32_t n)
{
    wnode_t *w = &c->wn[n];
    int32_t nf = popcount64(w->free_mask & ~w->hold_mask);

    if (w->group != NIL && w->ready) {
        if (nf != w->nfree) {
            int l;

            c->groups[w->group].free_dev += nf - w->nfree;
            for (l = 0; l < c->cfg.ntopo_levels; l++)
                if (w->topo[l] != NIL && c->dom_free[l] != NULL)
                    c->dom_free[l][w->topo[l]] += nf - w->nfree;
            bucket_unlink(c, n);
            w->nfree = nf;
            bucket_link(c, n);
        }
        shared_update(c, n);
    } else {
        w->nfree = nf;
    }
}

/* ------------------------------------------------------------------ */
/* Initialisation                                                     */

/* A small open-addressing string-path table for topology domain ids. */
typedef struct pathkey {
    const al_node_t *node; /* representative node */
    int level;
    uint64_t hash;
    int32_t id;
} pathkey_t;

static uint64_t
path_hash(const al_node_t *nd, int level)
{
    uint64_t h = 1469598103934665603ULL;
    int l;

    for (l = 0; l <= level; l++) {
        const unsigned char *p = (const unsigned char *)nd->topo[l];

        if (p == NULL)
            return 0;
        for (; *p; p++) {
            h ^= *p;
            h *= 1099511628211ULL;
        }
        h ^= 0xff;
        h *= 1099511628211ULL;
    }
    return h | 1;
}

static bool
path_eq(const al_node_t *a, const al_node_t *b, int level)
{
    int l;

    for (l = 0; l <= level; l++)
        if (strcmp(a->topo[l], b->topo[l]) != 0)
            return false;
    return true;
}

static int
init_topology(al_ctx_t *c)
{
    const al_snapshot_t *s = c->s;
    int level, n;

    for (level = 0; level < c->cfg.ntopo_levels; level++) {
        size_t cap = 16;
        pathkey_t *tab;
        int32_t *count, *off, *fill, ndom = 0;

        while (cap < (size_t)c->nn * 2)
            cap <<= 1;
        tab = al_arena_array(c->tmp, cap, sizeof(*tab));
        if (tab == NULL)
            return AL_ENOMEM;
        for (n = 0; n < c->nn; n++) {
            const al_node_t *nd = &s->nodes[n];
            uint64_t h = path_hash(nd, level);
            size_t i;

            c->wn[n].topo[level] = NIL;
            if (h == 0)
                continue;
            for (i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
                if (tab[i].node == NULL) {
                    tab[i].node = nd;
                    tab[i].hash = h;
                    tab[i].id = ndom++;
                    break;
                }
                if (tab[i].hash == h && path_eq(tab[i].node, nd, level))
                    break;
            }
            c->wn[n].topo[level] = tab[i].id;
        }
        c->ndomains[level] = ndom;
        count = al_arena_array(c->tmp, (size_t)ndom + 1, sizeof(int32_t));
        fill = al_arena_array(c->tmp, (size_t)ndom + 1, sizeof(int32_t));
        off = al_arena_array(c->tmp, (size_t)ndom + 1, sizeof(int32_t));
        c->dom_nodes[level] =
            al_arena_array(c->tmp, (size_t)c->nn + 1, sizeof(int32_t));
        if (count == NULL || fill == NULL || off == NULL ||
            c->dom_nodes[level] == NULL)
            return AL_ENOMEM;
        for (n = 0; n < c->nn; n++)
            if (c->wn[n].topo[level] != NIL)
                count[c->wn[n].topo[level]]++;
        for (n = 0; n < ndom; n++)
            off[n + 1] = off[n] + count[n];
        for (n = 0; n < c->nn; n++) {
            int32_t d = c->wn[n].topo[level];

            if (d != NIL)
                c->dom_nodes[level][off[d] + fill[d]++] = n;
        }
        c->dom_off[level] = off;
        c->dom_free[level] =
            al_arena_array(c->tmp, (size_t)ndom + 1, sizeof(int64_t));
        if (c->dom_free[level] == NULL)
            return AL_ENOMEM;
        for (n = 0; n < c->nn; n++)
            if (c->wn[n].topo[level] != NIL && c->wn[n].ready &&
                c->wn[n].group != NIL)
                c->dom_free[level][c->wn[n].topo[level]] += c->wn[n].nfree;
    }
    return 0;
}

static int32_t
find_group(al_ctx_t *c, const al_node_t *nd)
{
    int32_t g;

    for (g = 0; g < c->ngroups; g++)
        if (streq(c->groups[g].pool, nd->pool) &&
            streq(c->groups[g].model, nd->gpu_model))
            return g;
    return NIL;
}

/*
 * The domains inside node nd (w): NVLink domains when known, else NUMA
 * nodes; devices without an id form a domain of their own each.  Their
 * device masks go to c->dom_masks from index off.
 */
static void
node_domains(al_ctx_t *c, const al_node_t *nd, wnode_t *w, int32_t off)
{
    int32_t ids[AL_MAX_DEVICES];
    bool by_nvlink = false, by_numa = false;
    int d;

    for (d = 0; d < nd->ndevices; d++) {
        by_nvlink = by_nvlink || nd->devices[d].nvlink >= 0;
        by_numa = by_numa || nd->devices[d].numa >= 0;
    }
    w->dom_off = off;
    w->ndom = 0;
    if (!by_nvlink && !by_numa)
        return;
    for (d = 0; d < nd->ndevices; d++) {
        int32_t id = by_nvlink ? nd->devices[d].nvlink : nd->devices[d].numa;
        int k;

        if (id < 0)
            id = INT32_MIN + d;
        for (k = 0; k < w->ndom; k++)
            if (ids[k] == id)
                break;
        if (k == w->ndom) {
            ids[w->ndom] = id;
            c->dom_masks[off + w->ndom] = 0;
            w->ndom++;
        }
        c->dom_masks[off + k] |= 1ULL << d;
    }
}

int
al__place_init(al_ctx_t *c)
{
    const al_snapshot_t *s = c->s;
    int32_t n, g, ndev_total = 0, ndom_total = 0;
    int d, rc;

    c->wn = al_arena_array(c->tmp, (size_t)c->nn + 1, sizeof(wnode_t));
    c->groups = al_arena_array(c->tmp, (size_t)c->nn + 1, sizeof(wgroup_t));
    if (c->wn == NULL || c->groups == NULL)
        return AL_ENOMEM;
    for (n = 0; n < c->nn; n++) {
        if (s->nodes[n].ndevices < 0 || s->nodes[n].ndevices > AL_MAX_DEVICES)
            return AL_EINVAL;
        ndev_total += s->nodes[n].ndevices;
    }
    c->dev_milli =
        al_arena_array(c->tmp, (size_t)ndev_total + 1, sizeof(int32_t));
    c->dev_gmem =
        al_arena_array(c->tmp, (size_t)ndev_total + 1, sizeof(int64_t));
    c->dev_cap =
        al_arena_array(c->tmp, (size_t)ndev_total + 1, sizeof(int64_t));
    c->dom_masks =
        al_arena_array(c->tmp, (size_t)ndev_total + 1, sizeof(uint64_t));
    if (c->dev_milli == NULL || c->dev_gmem == NULL || c->dev_cap == NULL ||
        c->dom_masks == NULL)
        return AL_ENOMEM;

    ndev_total = 0;
    for (n = 0; n < c->nn; n++) {
        const al_node_t *nd = &s->nodes[n];
        wnode_t *w = &c->wn[n];

        w->prev = w->next = w->sprev = w->snext = NIL;
        w->ndev = nd->ndevices;
        w->dev_off = ndev_total;
        w->free_mask = nd->ndevices == 64 ? ~0ULL : (1ULL << nd->ndevices) - 1;
        w->free_cpu = nd->cpu_milli;
        w->free_mem = nd->mem_bytes;
        w->ready = nd->state == AL_NODE_READY;
        w->nfree = 0;
        for (d = 0; d < nd->ndevices; d++)
            c->dev_cap[ndev_total + d] = nd->devices[d].mem_bytes;
        node_domains(c, nd, w, ndom_total);
        ndom_total += w->ndom;
        ndev_total += nd->ndevices;

        g = find_group(c, nd);
        if (g == NIL) {
            int32_t *b =
                al_arena_array(c->tmp, AL_MAX_DEVICES + 1, sizeof(int32_t));

            if (b == NULL)
                return AL_ENOMEM;
            g = c->ngroups++;
            c->groups[g].pool = nd->pool;
            c->groups[g].model = nd->gpu_model;
            c->groups[g].bucket = b;
            c->groups[g].shared_head = NIL;
            for (d = 0; d <= AL_MAX_DEVICES; d++)
                b[d] = NIL;
        }
        w->group = g;
        if (nd->state != AL_NODE_DOWN) {
            wgroup_t *gr = &c->groups[g];

            if (nd->ndevices > gr->max_dev)
                gr->max_dev = nd->ndevices;
            if (nd->cpu_milli > gr->max_cpu)
                gr->max_cpu = nd->cpu_milli;
            if (nd->mem_bytes > gr->max_mem)
                gr->max_mem = nd->mem_bytes;
            gr->total_dev += nd->ndevices;
        }
    }
    /* Link ready nodes in index order, so buckets list them in reverse
     * index order: deterministic, and cheap. */
    for (n = 0; n < c->nn; n++) {
        wnode_t *w = &c->wn[n];

        if (!w->ready)
            continue;
        w->nfree = popcount64(w->free_mask);
        c->groups[w->group].free_dev += w->nfree;
        bucket_link(c, n);
    }
    c->ndev = ndev_total;
    rc = init_topology(c);
    return rc;
}

bool
al__group_match(const al_ctx_t *c, int32_t g, const al_request_t *req)
{
    const wgroup_t *gr = &c->groups[g];

    if (req->pool != NULL && req->pool[0] != '\0' &&
        !streq(gr->pool, req->pool))
        return false;
    if (req->gpu_model != NULL && req->gpu_model[0] != '\0' &&
        !streq(gr->model, req->gpu_model))
        return false;
    return true;
}

bool
al__req_group(al_ctx_t *c, int32_t g, const al_request_t *req)
{
    if ((c->forbid >> (g & 63)) & 1 && g < 64)
        return false;
    if (c->ngroups > 64)
        return al__group_match(c, g, req);
    /* One-entry cache keyed by the request's string pointers: jobs of one
     * shape share them, and matching compares strings. */
    if (!c->gm_valid || c->gm_pool != req->pool ||
        c->gm_model != req->gpu_model) {
        int32_t k;

        c->gm_mask = 0;
        for (k = 0; k < c->ngroups; k++)
            if (al__group_match(c, k, req))
                c->gm_mask |= 1ULL << k;
        c->gm_pool = req->pool;
        c->gm_model = req->gpu_model;
        c->gm_valid = true;
    }
    return (c->gm_mask >> g) & 1;
}

/* ------------------------------------------------------------------ */
/* Reversible operations                                              */

static int
push_undo(al_ctx_t *c, const undo_t *u)
{
    return al__vec_push(c, &c->undo, u);
}

int64_t
al__placed_gpu(const al_placement_t *p)
{
    return p->gpu_milli > 0 ? p->gpu_milli
                            : (int64_t)popcount64(p->devices) * AL_GPU_MILLI;
}

/* Charges (sign 1) or refunds (sign -1) job j's use to its queue chain. */
static void
charge_queue(al_ctx_t *c, int32_t job, const al_placement_t *p, int sign)
{
    const al_job_t *j = &c->s->jobs[job];
    int64_t gpu = al__placed_gpu(p);
    int32_t q;

    if (j->queue < 0 || j->queue >= c->nq)
        return;
    for (q = j->queue; q != NIL; q = c->wq[q].parent) {
        wqueue_t *w = &c->wq[q];
        const al_queue_t *qq = &c->s->queues[q];
        int k;

        w->alloc[AL_RES_GPU] += sign * gpu;
        w->alloc[AL_RES_CPU] += sign * j->req.cpu_milli;
        w->alloc[AL_RES_MEM] += sign * j->req.mem_bytes;
        if (!j->preemptible)
            w->nonpre_gpu += sign * gpu;
        if (!(c->wj[job].flags & JF_RUNNING))
            w->started_gpu += sign * gpu;
        if (w->model_alloc != NULL && p->node >= 0) {
            const char *model = c->s->nodes[p->node].gpu_model;

            for (k = 0; k < qq->nmodel_quotas; k++)
                if (streq(qq->model_quotas[k].model, model)) {
                    w->model_alloc[k] += sign * gpu;
                    if (!j->preemptible)
                        w->model_nonpre[k] += sign * gpu;
                }
        }
    }
}

static int
apply(al_ctx_t *c, int32_t job, const al_placement_t *p, int sign)
{
    wnode_t *w = &c->wn[p->node];
    const al_job_t *j = &c->s->jobs[job];

    if (p->gpu_milli > 0) {
        int d = __builtin_ctzll(p->devices);
        int32_t di = w->dev_off + d;

        if (sign > 0) {
            if (c->dev_milli[di] == 0) {
                if (!(w->free_mask & (1ULL << d)))
                    return AL_EINVAL;
                w->free_mask &= ~(1ULL << d);
                w->shared_mask |= 1ULL << d;
            }
            c->dev_milli[di] += p->gpu_milli;
            c->dev_gmem[di] += p->gpu_mem;
        } else {
            c->dev_milli[di] -= p->gpu_milli;
            c->dev_gmem[di] -= p->gpu_mem;
            if (c->dev_milli[di] == 0) {
                w->free_mask |= 1ULL << d;
                w->shared_mask &= ~(1ULL << d);
                c->dev_gmem[di] = 0;
            }
        }
    } else if (p->devices != 0) {
        if (sign > 0) {
            if ((w->free_mask & p->devices) != p->devices)
                return AL_EINVAL;
            w->free_mask &= ~p->devices;
        } else {
            w->free_mask |= p->devices;
        }
    }
    w->free_cpu -= sign * j->req.cpu_milli;
    w->free_mem -= sign * j->req.mem_bytes;
    refresh(c, p->node);
    return 0;
}

int
al__take(al_ctx_t *c, int32_t job, const al_placement_t *p, bool charge)
{
    undo_t u;
    int rc;

    memset(&u, 0, sizeof(u));
    u.kind = U_TAKE;
    u.job = job;
    u.p = *p;
    u.charge = charge;
    rc = apply(c, job, p, 1);
    if (rc != 0)
        return rc;
    if (charge)
        charge_queue(c, job, p, 1);
    rc = push_undo(c, &u);
    if (rc != 0) {
        if (charge)
            charge_queue(c, job, p, -1);
        apply(c, job, p, -1);
    }
    return rc;
}

int
al__give(al_ctx_t *c, int32_t job, const al_placement_t *p, bool charge)
{
    undo_t u;
    int rc;

    memset(&u, 0, sizeof(u));
    u.kind = U_GIVE;
    u.job = job;
    u.p = *p;
    u.charge = charge;
    rc = push_undo(c, &u);
    if (rc != 0)
        return rc;
    apply(c, job, p, -1);
    if (charge)
        charge_queue(c, job, p, -1);
    c->version++;
    return 0;
}

int
al__hold(al_ctx_t *c, int32_t node, uint64_t mask, int64_t cpu, int64_t mem)
{
    wnode_t *w = &c->wn[node];
    undo_t u;
    int rc;

    mask &= w->free_mask & ~w->hold_mask;
    memset(&u, 0, sizeof(u));
    u.kind = U_HOLD;
    u.node = node;
    u.mask = mask;
    u.cpu = cpu;
    u.mem = mem;
    rc = push_undo(c, &u);
    if (rc != 0)
        return rc;
    w->hold_mask |= mask;
    w->hold_cpu += cpu;
    w->hold_mem += mem;
    w->free_cpu -= cpu;
    w->free_mem -= mem;
    refresh(c, node);
    return 0;
}

int
al__unhold_all(al_ctx_t *c, int32_t node)
{
    wnode_t *w = &c->wn[node];
    undo_t u;
    int rc;

    if (w->hold_mask == 0 && w->hold_cpu == 0 && w->hold_mem == 0)
        return 0;
    memset(&u, 0, sizeof(u));
    u.kind = U_UNHOLD;
    u.node = node;
    u.mask = w->hold_mask;
    u.cpu = w->hold_cpu;
    u.mem = w->hold_mem;
    rc = push_undo(c, &u);
    if (rc != 0)
        return rc;
    w->hold_mask = 0;
    w->free_cpu += w->hold_cpu;
    w->free_mem += w->hold_mem;
    w->hold_cpu = w->hold_mem = 0;
    refresh(c, node);
    c->version++;
    return 0;
}

int
al__job_mark(al_ctx_t *c, int32_t job)
{
    undo_t u;

    memset(&u, 0, sizeof(u));
    u.kind = U_JOB;
    u.job = job;
    u.flags = c->wj[job].flags;
    u.ntasks = c->wj[job].ntasks;
    u.start_dec = c->wj[job].start_dec;
    u.for_job = c->wj[job].for_job;
    u.why = c->wj[job].why;
    u.place_off = c->wj[job].place_off;
    u.ndecisions = c->decisions.len;
    u.ntaskv = c->tasks.len;
    return push_undo(c, &u);
}

/*
 * Rolls the working state back to what it was when the log was `mark` long.
 * This does not move c->version: the state returns to one the failure memo
 * has already seen, and no memo entry is ever written inside a segment that
 * is later undone (try_start writes them only between operations).
 */
void
al__undo_to(al_ctx_t *c, size_t mark)
{
    undo_t *log = c->undo.data;

    while (c->undo.len > mark) {
        undo_t *u = &log[--c->undo.len];
        wnode_t *w;

        switch (u->kind) {
        case U_TAKE:
            apply(c, u->job, &u->p, -1);
            if (u->charge)
                charge_queue(c, u->job, &u->p, -1);
            break;
        case U_GIVE:
            apply(c, u->job, &u->p, 1);
            if (u->charge)
                charge_queue(c, u->job, &u->p, 1);
            break;
        case U_HOLD:
            w = &c->wn[u->node];
            w->hold_mask &= ~u->mask;
            w->hold_cpu -= u->cpu;
            w->hold_mem -= u->mem;
            w->free_cpu += u->cpu;
            w->free_mem += u->mem;
            refresh(c, u->node);
            break;
        case U_UNHOLD:
            w = &c->wn[u->node];
            w->hold_mask |= u->mask;
            w->hold_cpu += u->cpu;
            w->hold_mem += u->mem;
            w->free_cpu -= u->cpu;
            w->free_mem -= u->mem;
            refresh(c, u->node);
            break;
        case U_JOB:
            c->wj[u->job].flags = u->flags;
            c->wj[u->job].ntasks = u->ntasks;
            c->wj[u->job].start_dec = u->start_dec;
            c->wj[u->job].for_job = u->for_job;
            c->wj[u->job].why = u->why;
            c->wj[u->job].place_off = u->place_off;
            c->decisions.len = u->ndecisions;
            c->tasks.len = u->ntaskv;
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Finding room for one task                                          */

/* Milli-GPUs a fractional request needs on device di. */
static int32_t
frac_milli(const al_ctx_t *c, const al_request_t *req, int32_t di)
{
    int64_t m = req->gpu_milli;

    if (req->gpu_mem > 0 && c->dev_cap[di] > 0) {
        int64_t bym =
            (req->gpu_mem * AL_GPU_MILLI + c->dev_cap[di] - 1) / c->dev_cap[di];
        if (bym > m)
            m = bym;
    }
    if (m > AL_GPU_MILLI)
        m = AL_GPU_MILLI;
    return (int32_t)m;
}

static bool
is_frac(const al_request_t *req)
{
    return req->gpus == 0 && (req->gpu_milli > 0 || req->gpu_mem > 0);
}

/* Whole devices available to new work on node w: free and not held. */
static uint64_t
avail_mask(const wnode_t *w)
{
    return w->free_mask & ~w->hold_mask;
}

/* free_cpu and free_mem already exclude what reservations hold. */
static bool
cpu_mem_fit(const wnode_t *w, const al_request_t *req)
{
    return w->free_cpu >= req->cpu_milli && w->free_mem >= req->mem_bytes;
}

/* Picks g devices from avail on node w, preferring one NVLink/NUMA domain
 * that fits them most tightly, so that larger domains stay whole. */
static uint64_t
pick_devices(const al_ctx_t *c, const wnode_t *w, uint64_t avail, int g)
{
    uint64_t out = 0, used = 0;
    int k, best = -1, bestn = INT_MAX;

    if (popcount64(avail) < g)
        return 0;
    for (k = 0; k < w->ndom; k++) {
        int f = popcount64(avail & c->dom_masks[w->dom_off + k]);

        if (f >= g && f < bestn) {
            best = k;
            bestn = f;
        }
    }
    if (best >= 0) {
        avail &= c->dom_masks[w->dom_off + best];
    } else if (w->ndom > 0) {
        /* No domain holds them all: take from the fullest domains first
         * so the task spans as few domains as possible. */
        while (g > 0) {
            int bk = -1, bf = 0;

            for (k = 0; k < w->ndom; k++) {
                int f =
                    popcount64(avail & c->dom_masks[w->dom_off + k] & ~used);
                if (f > bf) {
                    bk = k;
                    bf = f;
                }
            }
            if (bk < 0)
                break;
            used |= c->dom_masks[w->dom_off + bk];
            {
                uint64_t m = avail & c->dom_masks[w->dom_off + bk];

                while (m != 0 && g > 0) {
                    uint64_t bit = m & (~m + 1);

                    out |= bit;
                    m &= m - 1;
                    g--;
                }
            }
        }
        /* Devices outside every domain (none in practice). */
        avail &= ~out;
    }
    while (g > 0 && avail != 0) {
        uint64_t bit = avail & (~avail + 1);

        out |= bit;
        avail &= avail - 1;
        g--;
    }
    return g == 0 ? out : 0;
}

/* Best fractional slot on node n: device with least room left after the
 * task (shared devices first).  Returns the device or -1. */
static int
frac_device(const al_ctx_t *c, int32_t n, const al_request_t *req,
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
        pick = pick_devices(c, w, av, 1);
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
fit_on(const al_ctx_t *c, int32_t n, const al_request_t *req, al_placement_t *p)
{
    const wnode_t *w = &c->wn[n];

    if (!w->ready || w->group == NIL || !cpu_mem_fit(w, req))
        return false;
    memset(p, 0, sizeof(*p));
    p->node = n;
    if (req->gpus > 0) {
        p->devices = pick_devices(c, w, avail_mask(w), req->gpus);
        return p->devices != 0;
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

int64_t
al__node_slots(al_ctx_t *c, int32_t n, const al_request_t *req)
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

/* Is node a better choice than cur (by pack policy, then index)? */
static bool
better(const al_ctx_t *c, int32_t a, int32_t cur)
{
    int32_t fa, fc;

    if (cur == NIL)
        return true;
    fa = c->wn[a].nfree;
    fc = c->wn[cur].nfree;
    if (fa != fc)
        return c->cfg.pack == AL_PACK_SPREAD ? fa > fc : fa < fc;
    return a < cur;
}

/* ------------------------------------------------------------------ */
/* Fragmentation-aware placement (AL_PACK_FRAG)                       */

/* The caller's profile (al_config_t.profile), shares normalised; none
 * when every weight is 0. */
static int
given_profile(al_ctx_t *c)
{
    const al_shape_t *g = c->cfg.profile;
    double total = 0;
    int32_t i, n = 0;

    for (i = 0; i < c->cfg.nprofile; i++)
        if (g[i].weight > 0)
            total += g[i].weight;
    if (total <= 0)
        return 0;
    c->profile =
        al_arena_array(c->tmp, (size_t)c->cfg.nprofile, sizeof(*c->profile));
    c->fslots =
        al_arena_array(c->tmp, (size_t)c->cfg.nprofile, sizeof(*c->fslots));
    if (c->profile == NULL || c->fslots == NULL)
        return AL_ENOMEM;
    for (i = 0; i < c->cfg.nprofile; i++) {
        wshape_t *m = &c->profile[n];

        if (!(g[i].weight > 0))
            continue;
        m->gpus = g[i].gpus > 0 ? g[i].gpus : 0;
        m->milli = m->gpus == 0 && g[i].gpu_milli > 0 ? g[i].gpu_milli : 0;
        m->cpu = g[i].cpu_milli;
        m->mem = g[i].mem_bytes;
        m->p = g[i].weight / total;
        n++;
    }
    c->nprofile = n;
    return 0;
}

/* The table frag_pick() remembers node states in: twice the nodes. */
static int
frag_table(al_ctx_t *c)
{
    int32_t cap = 16;

    c->fcap = 0;
    c->fcur = 0;
    while (cap / 2 < c->nn) {
        if (cap > (INT32_MAX >> 2))
            return 0; /* no table: frag_pick() judges every node */
        cap <<= 1;
    }
    c->fcap = cap;
    /* Only the stamps need zeroing: a slot is read once stamped. */
    c->fkey = al_arena_array_raw(c->tmp, (size_t)cap, sizeof(*c->fkey));
    c->fnode = al_arena_array_raw(c->tmp, (size_t)cap, sizeof(*c->fnode));
    c->fstamp = al_arena_array(c->tmp, (size_t)cap, sizeof(*c->fstamp));
    return c->fkey && c->fnode && c->fstamp ? 0 : AL_ENOMEM;
}

/*
 * The workload profile: the caller's, or else the task shapes of running
 * and waiting jobs, with their shares, the AL_PROFILE_MAX most common
 * kept.  Built once a cycle, with the scratch frag_pick() needs.
 */
int
al__profile(al_ctx_t *c)
{
    wshape_t *all;
    double *w, total = 0;
    int32_t j, n = 0, k, i;

    c->nprofile = 0;
    if (c->cfg.pack != AL_PACK_FRAG)
        return 0;
    if (frag_table(c) != 0)
        return AL_ENOMEM;
    if (c->cfg.nprofile > 0) {
        int rc = given_profile(c);

        if (rc != 0 || c->nprofile > 0)
            return rc;
    }
    c->profile = al_arena_array(c->tmp, AL_PROFILE_MAX, sizeof(*c->profile));
    c->fslots = al_arena_array(c->tmp, AL_PROFILE_MAX, sizeof(*c->fslots));
    all = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(*all));
    w = al_arena_array(c->tmp, (size_t)c->nj + 1, sizeof(*w));
    if (c->profile == NULL || c->fslots == NULL || all == NULL || w == NULL)
        return AL_ENOMEM;
    /* Distinct shapes with their task counts: a linear probe over the few
     * kinds a cluster runs (the list stays short; jobs are many). */
    for (j = 0; j < c->nj; j++) {
        const al_job_t *jb = &c->s->jobs[j];
        wshape_t sh;
        double tasks;

        if (jb->state == AL_JOB_RUNNING)
            tasks = jb->ntasks;
        else if (jb->state == AL_JOB_PENDING &&
                 (jb->dep_state == AL_DEPS_NONE ||
                  jb->dep_state == AL_DEPS_SATISFIED))
            tasks = jb->min_tasks;
        else
            continue;
        memset(&sh, 0, sizeof(sh));
        sh.gpus = jb->req.gpus;
        sh.milli = jb->req.gpus > 0 ? 0 : (int32_t)c->wj[j].task_gpu;
        sh.cpu = jb->req.cpu_milli;
        sh.mem = jb->req.mem_bytes;
        for (i = 0; i < n; i++)
            if (all[i].gpus == sh.gpus && all[i].milli == sh.milli &&
                all[i].cpu == sh.cpu && all[i].mem == sh.mem)
                break;
        if (i == n) {
            if (n == 4096)
                continue; /* a long tail adds nothing to the estimate */
            all[n++] = sh;
        }
        w[i] += tasks;
        total += tasks;
    }
    /* Keep the most common shapes (selection: K is small). */
    for (k = 0; k < AL_PROFILE_MAX && k < n; k++) {
        int32_t best = k;

        for (i = k + 1; i < n; i++)
            if (w[i] > w[best])
                best = i;
        if (best != k) {
            wshape_t t = all[k];
            double tw = w[k];

            all[k] = all[best];
            w[k] = w[best];
            all[best] = t;
            w[best] = tw;
        }
        c->profile[k] = all[k];
        c->profile[k].p = total > 0 ? w[k] / total : 0;
    }
    c->nprofile = k;
    return 0;
}

/*
 * The state of a node's free GPUs that node_frag() reads: their total milli,
 * whole free devices, and per profile shape (in c->fslots) how many tasks
 * of a fractional shape the devices hold, one device at a time.
 */
typedef struct fnode {
    int64_t all;
    int32_t full;
} fnode_t;

static void
frag_prep(al_ctx_t *c, const int32_t *fr, int nd, fnode_t *fs)
{
    int i, k;

    fs->all = 0;
    fs->full = 0;
    for (i = 0; i < nd; i++) {
        fs->all += fr[i];
        fs->full += fr[i] == AL_GPU_MILLI;
    }
    for (k = 0; k < c->nprofile; k++) {
        const wshape_t *m = &c->profile[k];
        int64_t slots = 0;

        if (m->gpus == 0 && m->milli > 0)
            for (i = 0; i < nd; i++)
                slots += fr[i] / m->milli;
        c->fslots[k] = slots;
    }
}

/*
 * Expected fragmentation of a node (after FGD) whose free GPUs are `fs`
 * with `cnt` devices changed from `from` to `to` free milli, and cpu/mem
 * free: for each shape m of the profile, the free GPU milli that m could
 * not use there, weighted by m's share.  What m could use is what the node
 * holds once filled with m-tasks alone, as many as its free devices, CPU
 * and memory allow.  FGD counts only the devices too small for one m-task,
 * and all free GPU when not one m-task fits; counting the leftovers of a
 * filled node instead also sees devices that CPU or memory would strand,
 * and the remainder a device keeps after its last m-task (on Alibaba openb
 * this lifts the allocation at full demand by about a point).  A CPU-only
 * shape counts all free GPU where it does not fit, so that CPU-only tasks
 * leave room on GPU nodes for GPU tasks.
 */
static double
node_frag(const al_ctx_t *c, const fnode_t *fs, int cnt, int32_t from,
          int32_t to, int64_t cpu, int64_t mem)
{
    int64_t all = fs->all - (int64_t)cnt * (from - to);
    int32_t full = fs->full - (from == AL_GPU_MILLI ? cnt : 0) +
                   (to == AL_GPU_MILLI ? cnt : 0);
    double f = 0;
    int k;

    for (k = 0; k < c->nprofile; k++) {
        const wshape_t *m = &c->profile[k];
        int64_t fit, per;

        if (cpu < m->cpu || mem < m->mem) {
            f += m->p * (double)all;
            continue;
        }
        if (m->gpus > 0) {
            fit = full / m->gpus;
            per = (int64_t)m->gpus * AL_GPU_MILLI;
        } else if (m->milli > 0) {
            fit =
                c->fslots[k] + (int64_t)cnt * (to / m->milli - from / m->milli);
            per = m->milli;
        } else {
            continue; /* a CPU-only shape that fits */
        }
        if (m->cpu > 0 && cpu / m->cpu < fit)
            fit = cpu / m->cpu;
        if (m->mem > 0 && mem / m->mem < fit)
            fit = mem / m->mem;
        f += m->p * (double)(all - fit * per);
    }
    return f;
}

/* Free milli of node n's devices that new work may use. */
static int
node_free(const al_ctx_t *c, int32_t n, int32_t *fr)
{
    const wnode_t *w = &c->wn[n];
    uint64_t av = avail_mask(w);
    int d;

    for (d = 0; d < w->ndev; d++) {
        if (av & (1ULL << d))
            fr[d] = AL_GPU_MILLI;
        else if (w->shared_mask & (1ULL << d))
            fr[d] = AL_GPU_MILLI - c->dev_milli[w->dev_off + d];
        else
            fr[d] = 0;
    }
    return w->ndev;
}

/* Is a placement that grows fragmentation by d on node n better than the
 * best so far (bestd on node best)?  Ties go to the fuller node, then the
 * lower index. */
static bool
frag_better(const al_ctx_t *c, double d, int32_t n, double bestd, int32_t best)
{
    if (best == NIL || d != bestd)
        return best == NIL || d < bestd;
    return better(c, n, best);
}

static uint64_t
mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Sorts a node's free milli (few devices: insertion sort). */
static void
sort_free(int32_t *fr, int nd)
{
    int i, j;

    for (i = 1; i < nd; i++) {
        int32_t x = fr[i];

        for (j = i; j > 0 && fr[j - 1] > x; j--)
            fr[j] = fr[j - 1];
        fr[j] = x;
    }
}

/* Do nodes a and b (free milli fr/nd of a given) look the same to
 * frag_pick(): same group, CPU and memory, and the same free milli on
 * their devices, in any order? */
static bool
same_state(const al_ctx_t *c, int32_t a, const int32_t *fr, int nd, int32_t b)
{
    const wnode_t *wa = &c->wn[a], *wb = &c->wn[b];
    int32_t x[AL_MAX_DEVICES], y[AL_MAX_DEVICES];
    int i;

    if (wa->group != wb->group || wa->free_cpu != wb->free_cpu ||
        wa->free_mem != wb->free_mem || wb->ndev != nd)
        return false;
    memcpy(x, fr, (size_t)nd * sizeof(*x));
    node_free(c, b, y);
    sort_free(x, nd);
    sort_free(y, nd);
    for (i = 0; i < nd; i++)
        if (x[i] != y[i])
            return false;
    return true;
}

/*
 * Has a node in the same state as n already been judged in this search?
 * Records n if not.  Such a node cannot win: it ties with the earlier one
 * on every count, and ties go to the lower index, met first.
 */
static bool
seen_state(al_ctx_t *c, int32_t n, const int32_t *fr, int nd)
{
    const wnode_t *w = &c->wn[n];
    uint64_t key = mix64((uint64_t)w->group * 0x9E3779B97F4A7C15ULL ^
                         (uint64_t)w->free_cpu) ^
                   mix64((uint64_t)w->free_mem + (uint64_t)nd);
    uint32_t h;
    int i;

    /* A sum keeps the key independent of the devices' order. */
    for (i = 0; i < nd; i++)
        key += mix64((uint64_t)fr[i] + 0x632BE59BD9B4E019ULL);
    for (h = (uint32_t)key & (uint32_t)(c->fcap - 1); c->fstamp[h] == c->fcur;
         h = (h + 1) & (uint32_t)(c->fcap - 1))
        if (c->fkey[h] == key && same_state(c, n, fr, nd, c->fnode[h]))
            return true;
    c->fstamp[h] = c->fcur;
    c->fkey[h] = key;
    c->fnode[h] = n;
    return false;
}

/*
 * Places one task on the node (and device) where the expected
 * fragmentation grows least; ties go to the fuller node, then the lower
 * index.  Considers the nodes of `list` (or every node when list is NULL).
 */
static int
frag_pick(al_ctx_t *c, const al_request_t *req, const int32_t *list,
          int32_t nlist, al_placement_t *out)
{
    int32_t i, best = NIL, fr[AL_MAX_DEVICES];
    double bestd = 0;
    al_placement_t bp;

    memset(&bp, 0, sizeof(bp));
    if (c->fcap > 0 && ++c->fcur == INT32_MAX) {
        memset(c->fstamp, 0, (size_t)c->fcap * sizeof(*c->fstamp));
        c->fcur = 1;
    }
    for (i = 0; i < (list ? nlist : c->nn); i++) {
        int32_t n = list ? list[i] : i;
        const wnode_t *w = &c->wn[n];
        al_placement_t p;
        fnode_t fs;
        double before, after;
        int64_t cpu, mem;
        int nd, d;

        if (!w->ready || w->group == NIL || !al__req_group(c, w->group, req) ||
            !cpu_mem_fit(w, req))
            continue;
        if (req->gpus > 0 && w->nfree < req->gpus)
            continue;
        nd = node_free(c, n, fr);
        if (is_frac(req)) {
            /* Skip, before the work below, a node with no room. */
            for (d = 0; d < nd && fr[d] < req->gpu_milli; d++)
                ;
            if (d == nd)
                continue;
        }
        /* The table holds at most every node once: never full. */
        if (c->fcap > 0 && req->gpu_mem == 0 && seen_state(c, n, fr, nd))
            continue;
        frag_prep(c, fr, nd, &fs);
        before = node_frag(c, &fs, 0, 0, 0, w->free_cpu, w->free_mem);
        cpu = w->free_cpu - req->cpu_milli;
        mem = w->free_mem - req->mem_bytes;
        memset(&p, 0, sizeof(p));
        p.node = n;
        if (req->gpus == 0 && !is_frac(req)) {
            /* CPU-only: what its CPU and memory take from GPU tasks. */
            after = node_frag(c, &fs, 0, 0, 0, cpu, mem);
            if (frag_better(c, after - before, n, bestd, best)) {
                best = n;
                bestd = after - before;
                bp = p;
            }
            continue;
        }
        if (req->gpus > 0) {
            /* Whole devices: free ones, so each goes from 1000 to 0. */
            p.devices = pick_devices(c, w, avail_mask(w), req->gpus);
            if (p.devices == 0)
                continue;
            after = node_frag(c, &fs, req->gpus, AL_GPU_MILLI, 0, cpu, mem);
            if (frag_better(c, after - before, n, bestd, best)) {
                best = n;
                bestd = after - before;
                bp = p;
            }
            continue;
        }
        /* A fraction: every device with room is a candidate. */
        for (d = 0; d < nd; d++) {
            int32_t di = w->dev_off + d, need;

            if (fr[d] == 0)
                continue;
            need = frac_milli(c, req, di);
            if (need > fr[d] || need <= 0 ||
                c->dev_cap[di] - c->dev_gmem[di] < req->gpu_mem)
                continue;
            after = node_frag(c, &fs, 1, fr[d], fr[d] - need, cpu, mem);
            if (frag_better(c, after - before, n, bestd, best)) {
                best = n;
                bestd = after - before;
                bp = p;
                bp.devices = 1ULL << d;
                bp.gpu_milli = need;
                bp.gpu_mem = req->gpu_mem;
            }
        }
    }
    if (best == NIL)
        return AL_ENOENT;
    *out = bp;
    return 0;
}

/* Scans an explicit node list (one node, or a topology domain). */
static int
find_in_list(al_ctx_t *c, const al_request_t *req, const int32_t *list,
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
find_in_buckets(al_ctx_t *c, const al_request_t *req, al_placement_t *out)
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
    } else if (c->cfg.pack == AL_PACK_SPREAD) {
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
al__find_task(al_ctx_t *c, int32_t job, int only_node, int topo_level,
              int32_t topo_dom, al_placement_t *out)
{
    const al_request_t *req = &c->s->jobs[job].req;

    if (c->nprofile > 0) {
        if (only_node >= 0) {
            int32_t one = only_node;

            return frag_pick(c, req, &one, 1, out);
        }
        if (topo_level >= 0 && topo_dom != NIL) {
            const int32_t *off = c->dom_off[topo_level];

            return frag_pick(c, req, c->dom_nodes[topo_level] + off[topo_dom],
                             off[topo_dom + 1] - off[topo_dom], out);
        }
        return frag_pick(c, req, NULL, 0, out);
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
