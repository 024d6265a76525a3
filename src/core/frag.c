/*
 * frag.c -- fragmentation-aware placement (AL_PACK_FRAG): the workload
 * profile, and the node and device where one task grows the expected
 * fragmentation least.
 *
 * Owns: al__profile (built once a cycle, with frag_pick()'s scratch) and
 * al__frag_pick.  Calls: capacity.c (al__pick_devices, al__req_group) and
 * the inline helpers of core_int.h.  Called by snapshot.c (the profile) and
 * place.c (the search for one task dispatches here when a profile exists).
 */
#include <limits.h>
#include <string.h>

#include "core_int.h"

/* The caller's profile (al_config_t.profile), shares normalised; none
 * when every weight is 0. */
static int
given_profile(al_cycle_t *c)
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

/* The table al__frag_pick() remembers node states in: twice the nodes. */
static int
frag_table(al_cycle_t *c)
{
    int32_t cap = 16;

    c->fcap = 0;
    c->fcur = 0;
    while (cap / 2 < c->nn) {
        if (cap > (INT32_MAX >> 2))
            return 0; /* no table: al__frag_pick() judges every node */
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
 * kept.  Built once a cycle, with the scratch al__frag_pick() needs.
 */
int
al__profile(al_cycle_t *c)
{
    wshape_t *all;
    double *w, total = 0;
    int32_t j, n = 0, k, i;

    c->nprofile = 0;
    if (!al__uses_frag(&c->cfg))
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
frag_prep(al_cycle_t *c, const int32_t *fr, int nd, fnode_t *fs)
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
node_frag(const al_cycle_t *c, const fnode_t *fs, int cnt, int32_t from,
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
node_free(const al_cycle_t *c, int32_t n, int32_t *fr)
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
frag_better(const al_cycle_t *c, double d, int32_t n, double bestd,
            int32_t best)
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
 * al__frag_pick(): same group, CPU and memory, and the same free milli on
 * their devices, in any order? */
static bool
same_state(const al_cycle_t *c, int32_t a, const int32_t *fr, int nd, int32_t b)
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
seen_state(al_cycle_t *c, int32_t n, const int32_t *fr, int nd)
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
int
al__frag_pick(al_cycle_t *c, const al_request_t *req, const int32_t *list,
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
            p.devices = al__pick_devices(c, w, avail_mask(w), req->gpus);
            if (p.devices == 0 ||
                (req->one_domain && !al__one_domain(c, w, p.devices)))
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
