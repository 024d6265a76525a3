/*
 * capacity.c -- the working cluster: free capacity per node and device, the
 * indexes that make placement fast, and reversible take/give operations.
 *
 * Nodes of one (pool, GPU model) group are kept in buckets by their number
 * of free whole devices, so that a best-fit search for a task of g GPUs looks
 * at bucket g, g+1, ... and stops at the first node that also has the CPU
 * and memory: O(devices per node) instead of O(nodes).  Nodes with partly
 * used devices are also on a "shared" list, where fractional tasks look
 * first, so fractions pack onto devices that are already shared.
 *
 * Owns: al__place_init, group matching (al__req_group), the undo log
 * (al__take, al__give, al__hold, al__unhold_all, al__job_mark,
 * al__undo_to), al__placed_gpu, and the choice of devices inside one node
 * (al__pick_devices).  Calls: vec.c.  Everything that changes capacity goes
 * through here.
 */
#include <limits.h>
#include <string.h>

#include "core_int.h"

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
bucket_unlink(al_cycle_t *c, int32_t n)
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
bucket_link(al_cycle_t *c, int32_t n)
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
shared_update(al_cycle_t *c, int32_t n)
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
refresh(al_cycle_t *c, int32_t n)
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
init_topology(al_cycle_t *c)
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

static bool
in_group(const wgroup_t *gr, const al_node_t *nd)
{
    return streq(gr->pool, nd->pool) && streq(gr->model, nd->gpu_model) &&
           streq(gr->labels, nd->labels);
}

/* The group of nd's kind, or NIL.  Groups are distinct, so the one found
 * is the only one: `hint` (the previous node's) is tried first, as nodes
 * of one kind tend to come together. */
static int32_t
find_group(al_cycle_t *c, const al_node_t *nd, int32_t hint)
{
    int32_t g;

    if (hint != NIL && in_group(&c->groups[hint], nd))
        return hint;
    for (g = 0; g < c->ngroups; g++)
        if (g != hint && in_group(&c->groups[g], nd))
            return g;
    return NIL;
}

/*
 * The domains inside node nd (w): NVLink domains when known, else NUMA
 * nodes; devices without an id form a domain of their own each.  Their
 * device masks go to c->dom_masks from index off.
 */
static void
node_domains(al_cycle_t *c, const al_node_t *nd, wnode_t *w, int32_t off)
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
al__place_init(al_cycle_t *c)
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

        g = find_group(c, nd, n > 0 ? c->wn[n - 1].group : NIL);
        if (g == NIL) {
            int32_t *b =
                al_arena_array(c->tmp, AL_MAX_DEVICES + 1, sizeof(int32_t));

            if (b == NULL)
                return AL_ENOMEM;
            g = c->ngroups++;
            c->groups[g].pool = nd->pool;
            c->groups[g].model = nd->gpu_model;
            c->groups[g].labels = nd->labels;
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
            for (d = 0; d < w->ndom; d++)
                if (popcount64(c->dom_masks[w->dom_off + d]) > gr->max_dom)
                    gr->max_dom = popcount64(c->dom_masks[w->dom_off + d]);
            if (w->ndom == 0 && nd->ndevices > gr->max_dom)
                gr->max_dom = nd->ndevices;
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

/* The value of label `key` (klen bytes) in labels ("k=v,k=v"), its
 * length in *vlen; NULL when absent. */
static const char *
label_value(const char *labels, const char *key, size_t klen, size_t *vlen)
{
    const char *p = labels;

    while (p != NULL && *p != '\0') {
        const char *end = strchr(p, ','), *eq;
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

        eq = memchr(p, '=', n);
        if (eq != NULL && (size_t)(eq - p) == klen &&
            memcmp(p, key, klen) == 0) {
            *vlen = n - klen - 1;
            return eq + 1;
        }
        p = end != NULL ? end + 1 : NULL;
    }
    return NULL;
}

/* Do labels meet every item of constraint (see al_request_t)? */
static bool
labels_meet(const char *labels, const char *constraint)
{
    const char *p = constraint;

    while (p != NULL && *p != '\0') {
        const char *end = strchr(p, ','), *eq, *v;
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p), klen, vlen = 0;

        eq = memchr(p, '=', n);
        klen = eq != NULL ? (size_t)(eq - p) : n;
        v = label_value(labels, p, klen, &vlen);
        if (v == NULL)
            return false;
        if (eq != NULL) {
            if (vlen != n - klen - 1 || memcmp(v, eq + 1, vlen) != 0)
                return false;
        } else if ((vlen == 2 && memcmp(v, "no", 2) == 0) ||
                   (vlen == 5 && memcmp(v, "false", 5) == 0) ||
                   (vlen == 1 && v[0] == '0')) {
            return false;
        }
        p = end != NULL ? end + 1 : NULL;
    }
    return true;
}

static bool
group_match(const al_cycle_t *c, int32_t g, const al_request_t *req)
{
    const wgroup_t *gr = &c->groups[g];

    if (req->constraint != NULL && req->constraint[0] != '\0' &&
        !labels_meet(gr->labels, req->constraint))
        return false;
    if (req->pool != NULL && req->pool[0] != '\0' &&
        !streq(gr->pool, req->pool))
        return false;
    if (req->gpu_model != NULL && req->gpu_model[0] != '\0' &&
        !streq(gr->model, req->gpu_model))
        return false;
    return true;
}

al_pack_t
al__req_pack(const al_cycle_t *c, const al_request_t *req)
{
    int i;

    if (req->pool != NULL && req->pool[0] != '\0')
        for (i = 0; i < c->cfg.npool_packs; i++)
            if (streq(c->cfg.pool_packs[i].pool, req->pool))
                return c->cfg.pool_packs[i].pack;
    return c->cfg.pack;
}

bool
al__uses_frag(const al_config_t *cfg)
{
    int i;

    if (cfg->pack == AL_PACK_FRAG)
        return true;
    for (i = 0; i < cfg->npool_packs; i++)
        if (cfg->pool_packs[i].pack == AL_PACK_FRAG)
            return true;
    return false;
}

bool
al__req_group(al_cycle_t *c, int32_t g, const al_request_t *req)
{
    if ((c->forbid >> (g & 63)) & 1 && g < 64)
        return false;
    if (c->ngroups > 64)
        return group_match(c, g, req);
    /* One-entry cache keyed by the request's string pointers: jobs of one
     * shape share them, and matching compares strings. */
    if (!c->gm_valid || c->gm_pool != req->pool ||
        c->gm_model != req->gpu_model || c->gm_constraint != req->constraint) {
        int32_t k;

        c->gm_mask = 0;
        for (k = 0; k < c->ngroups; k++)
            if (group_match(c, k, req))
                c->gm_mask |= 1ULL << k;
        c->gm_pool = req->pool;
        c->gm_model = req->gpu_model;
        c->gm_constraint = req->constraint;
        c->gm_valid = true;
    }
    return (c->gm_mask >> g) & 1;
}

/* ------------------------------------------------------------------ */
/* Reversible operations                                              */

static int
push_undo(al_cycle_t *c, const undo_t *u)
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
charge_queue(al_cycle_t *c, int32_t job, const al_placement_t *p, int sign)
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
        if (j->build)
            w->build_gpu += sign * gpu;
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
apply(al_cycle_t *c, int32_t job, const al_placement_t *p, int sign)
{
    wnode_t *w = &c->wn[p->node];
    const al_job_t *j = &c->s->jobs[job];
    /* A fenced device is never free; a running task that holds one gives
     * it up (an eviction tried) and takes it back (undone) all the same. */
    uint64_t fenced = c->s->nodes[p->node].fenced;

    if (p->gpu_milli > 0) {
        int d = __builtin_ctzll(p->devices);
        int32_t di = w->dev_off + d;

        if (sign > 0) {
            if (c->dev_milli[di] == 0) {
                if (!((w->free_mask | fenced) & (1ULL << d)))
                    return AL_EINVAL;
                w->free_mask &= ~(1ULL << d);
                w->shared_mask |= (1ULL << d) & ~fenced;
            }
            c->dev_milli[di] += p->gpu_milli;
            c->dev_gmem[di] += p->gpu_mem;
        } else {
            c->dev_milli[di] -= p->gpu_milli;
            c->dev_gmem[di] -= p->gpu_mem;
            if (c->dev_milli[di] == 0) {
                w->free_mask |= (1ULL << d) & ~fenced;
                w->shared_mask &= ~(1ULL << d);
                c->dev_gmem[di] = 0;
            }
        }
    } else if (p->devices != 0) {
        if (sign > 0) {
            if (((w->free_mask | fenced) & p->devices) != p->devices)
                return AL_EINVAL;
            w->free_mask &= ~p->devices;
        } else {
            w->free_mask |= p->devices & ~fenced;
        }
    }
    w->free_cpu -= sign * j->req.cpu_milli;
    w->free_mem -= sign * j->req.mem_bytes;
    refresh(c, p->node);
    return 0;
}

void
al__fence(al_cycle_t *c)
{
    c->unavail = false;
    for (int32_t n = 0; n < c->nn; n++) {
        uint64_t f = c->s->nodes[n].fenced;

        if (c->s->nodes[n].state == AL_NODE_DRAINING || f != 0)
            c->unavail = true;

        if (f != 0) {
            c->wn[n].free_mask &= ~f;
            c->wn[n].shared_mask &= ~f;
            refresh(c, n);
        }
    }
}

int
al__take(al_cycle_t *c, int32_t job, const al_placement_t *p, bool charge)
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
al__give(al_cycle_t *c, int32_t job, const al_placement_t *p, bool charge)
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
al__hold(al_cycle_t *c, int32_t node, uint64_t mask, int64_t cpu, int64_t mem)
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
al__unhold_all(al_cycle_t *c, int32_t node)
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
al__job_mark(al_cycle_t *c, int32_t job)
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
al__undo_to(al_cycle_t *c, size_t mark)
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
/* Devices inside one node                                            */

/* Whether the devices of mask lie inside one domain of node w (a node
 * without domains is one). */
bool
al__one_domain(const al_cycle_t *c, const wnode_t *w, uint64_t mask)
{
    int k;

    if (w->ndom == 0)
        return true;
    for (k = 0; k < w->ndom; k++)
        if ((mask & ~c->dom_masks[w->dom_off + k]) == 0)
            return true;
    return false;
}

/* Picks g devices from avail on node w, preferring one NVLink/NUMA domain
 * that fits them most tightly, so that larger domains stay whole. */
uint64_t
al__pick_devices(const al_cycle_t *c, const wnode_t *w, uint64_t avail, int g)
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
