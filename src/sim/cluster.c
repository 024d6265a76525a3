/*
 * cluster.c -- the simulated cluster: homogeneous (--nodes/--gpus-per-node)
 * or node groups from a --cluster file (format in sim.h and
 * docs/simulation.md).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

#define GIB ((int64_t)1 << 30)

static void
add_string(al_cluster_t *c, char *s)
{
    if ((c->nstrings & (c->nstrings - 1)) == 0) /* grow at powers of two */
        c->strings = al_xrealloc(c->strings,
                                 (size_t)(c->nstrings ? 2 * c->nstrings : 1) *
                                     sizeof(char *));
    c->strings[c->nstrings++] = s;
}

/* Builds c->nodes and c->devices from c->groups. */
static void
build_nodes(al_cluster_t *c)
{
    int nnodes = 0, ndev = 0;
    for (int g = 0; g < c->ngroups; g++) {
        nnodes += c->groups[g].count;
        ndev += c->groups[g].count * c->groups[g].gpus;
    }
    c->nnodes = nnodes;
    c->nodes = al_xcalloc((size_t)nnodes, sizeof(al_node_t));
    c->devices = al_xcalloc((size_t)ndev, sizeof(al_device_t));
    int n = 0, d = 0;
    c->gpu_capacity = 0;
    c->max_gpus_per_node = 0;
    for (int g = 0; g < c->ngroups; g++) {
        const al_cluster_group_t *gr = &c->groups[g];
        char *rack = NULL;
        if (gr->gpus > c->max_gpus_per_node)
            c->max_gpus_per_node = gr->gpus;
        for (int i = 0; i < gr->count; i++, n++) {
            char *name = al_xasprintf("%s-%04d", gr->name, i);
            add_string(c, name);
            al_node_t *nd = &c->nodes[n];
            nd->name = name;
            nd->pool = gr->pool;
            nd->gpu_model = gr->model;
            if (gr->nodes_per_rack > 0) {
                if (i % gr->nodes_per_rack == 0) {
                    rack = al_xasprintf("%s-rack%d", gr->name,
                                        i / gr->nodes_per_rack);
                    add_string(c, rack);
                }
                nd->topo[0] = rack;
                c->racks = true;
            }
            nd->state = AL_NODE_READY;
            nd->cpu_milli = gr->cpu_milli;
            nd->mem_bytes = gr->mem_bytes;
            nd->ndevices = gr->gpus;
            nd->devices = &c->devices[d];
            for (int k = 0; k < gr->gpus; k++, d++) {
                c->devices[d].mem_bytes = gr->gpu_mem;
                c->devices[d].numa = (int16_t)(k < (gr->gpus + 1) / 2 ? 0 : 1);
                c->devices[d].nvlink =
                    (int16_t)(gr->nvlink > 0 ? k / gr->nvlink : 0);
            }
            c->gpu_capacity += (int64_t)gr->gpus * AL_GPU_MILLI;
        }
    }
}

al_cluster_t *
al_cluster_homogeneous(int nodes, int gpus, const char *model,
                       int nodes_per_rack, int cpus, int64_t mem_gib)
{
    if (nodes <= 0 || nodes > 1000000 || gpus < 0 || gpus > AL_MAX_DEVICES ||
        nodes_per_rack < 0 || cpus < 0 || mem_gib < 0)
        return NULL;
    al_cluster_t *c = al_xcalloc(1, sizeof(*c));
    c->ngroups = 1;
    c->groups = al_xcalloc(1, sizeof(al_cluster_group_t));
    al_cluster_group_t *g = &c->groups[0];
    g->name = al_xstrdup("node");
    g->count = nodes;
    g->gpus = gpus;
    g->model = model ? al_xstrdup(model) : NULL;
    g->gpu_mem = 80 * GIB;
    g->cpu_milli = (int64_t)cpus * 1000;
    g->mem_bytes = mem_gib * GIB;
    g->nodes_per_rack = nodes_per_rack;
    g->nvlink = 0;
    build_nodes(c);
    return c;
}

struct gctx {
    al_cluster_group_t g;
    al_errs_t *errs;
    const char *file;
    int line;
    bool seen_count, seen_gpus;
};

static void
group_kv(void *ctx, const char *key, const char *val)
{
    struct gctx *x = ctx;
    int64_t i = 0;
    double v = 0;
    if (key == NULL) {
        if (strcmp(val, "group") != 0)
            al__err(x->errs, "%s:%d: unexpected word '%s' (want key=value)",
                    x->file, x->line, val);
        return;
    }
    if (strcmp(key, "name") == 0 || strcmp(key, "model") == 0 ||
        strcmp(key, "pool") == 0) {
        char **dst = key[0] == 'n'   ? &x->g.name
                     : key[0] == 'm' ? &x->g.model
                                     : &x->g.pool;
        if (*val == '\0') {
            al__err(x->errs, "%s:%d: field '%s': empty", x->file, x->line, key);
            return;
        }
        free(*dst);
        *dst = al_xstrdup(val);
        return;
    }
    static const struct {
        const char *key;
        double lo, hi;
    } nums[] = {
        { "count", 1, 1000000 },         { "gpus", 0, AL_MAX_DEVICES },
        { "gpu_mem_gib", 0, 1e6 },       { "cpus", 0, 1e7 },
        { "mem_gib", 0, 1e9 },           { "nodes_per_rack", 0, 1000000 },
        { "nvlink", 0, AL_MAX_DEVICES },
    };
    for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
        if (strcmp(key, nums[k].key) != 0)
            continue;
        if (al__parse_num(val, &v) < 0 || v < nums[k].lo || v > nums[k].hi) {
            al__err(x->errs,
                    "%s:%d: field '%s': expected a number in [%g, %g], got "
                    "'%s'",
                    x->file, x->line, key, nums[k].lo, nums[k].hi, val);
            return;
        }
        i = (int64_t)v;
        switch (k) {
        case 0:
            x->g.count = (int)i;
            x->seen_count = true;
            break;
        case 1:
            x->g.gpus = (int)i;
            x->seen_gpus = true;
            break;
        case 2:
            x->g.gpu_mem = (int64_t)(v * (double)GIB);
            break;
        case 3:
            x->g.cpu_milli = (int64_t)(v * 1000);
            break;
        case 4:
            x->g.mem_bytes = (int64_t)(v * (double)GIB);
            break;
        case 5:
            x->g.nodes_per_rack = (int)i;
            break;
        default:
            x->g.nvlink = (int)i;
            break;
        }
        return;
    }
    al__err(x->errs, "%s:%d: unknown key '%s'", x->file, x->line, key);
}

static void
free_group(al_cluster_group_t *g)
{
    free(g->name);
    free(g->model);
    free(g->pool);
}

int
al_cluster_parse(const char *name, const char *buf, size_t len,
                 al_cluster_t **out, char **cause)
{
    al_errs_t errs = { 0 };
    al_cluster_group_t *groups = NULL;
    int ngroups = 0;
    int64_t nnodes = 0;
    size_t off = 0;
    int line = 0;
    char *l;
    while ((l = al__kv_line(name, buf, len, &off, &line, &errs)) != NULL) {
        struct gctx x = { .errs = &errs, .file = name, .line = line };
        x.g.cpu_milli = (int64_t)96 * 1000;
        x.g.mem_bytes = 1024 * GIB;
        x.g.gpu_mem = 80 * GIB;
        int before = errs.n;
        al__kv_split(l, group_kv, &x);
        free(l);
        if (!x.seen_count)
            al__err(&errs, "%s:%d: field 'count': missing", name, line);
        if (!x.seen_gpus)
            al__err(&errs, "%s:%d: field 'gpus': missing", name, line);
        if (x.g.name == NULL) {
            x.g.name = al_xasprintf("g%d", ngroups);
        }
        for (int k = 0; k < ngroups && errs.n == before; k++)
            if (strcmp(groups[k].name, x.g.name) == 0)
                al__err(&errs, "%s:%d: field 'name': group '%s' defined twice",
                        name, line, x.g.name);
        nnodes += x.g.count;
        if (nnodes > 1000000)
            al__err(&errs, "%s:%d: more than 1000000 nodes", name, line);
        if (errs.n > before) {
            free_group(&x.g);
            continue;
        }
        groups = al_xrealloc(groups, (size_t)(ngroups + 1) * sizeof(*groups));
        groups[ngroups++] = x.g;
    }
    if (errs.n == 0 && ngroups == 0)
        al__err(&errs, "%s: no node groups", name);
    if (errs.n > 0) {
        for (int k = 0; k < ngroups; k++)
            free_group(&groups[k]);
        free(groups);
        return al__err_give(&errs, cause);
    }
    al_cluster_t *c = al_xcalloc(1, sizeof(*c));
    c->groups = groups;
    c->ngroups = ngroups;
    build_nodes(c);
    *out = c;
    return 0;
}

int
al_cluster_load(const char *path, al_cluster_t **out, char **cause)
{
    char *data;
    size_t len;
    int rc = al__read_file(path, &data, &len, cause);
    if (rc < 0)
        return rc;
    rc = al_cluster_parse(path, data, len, out, cause);
    free(data);
    return rc;
}

void
al_cluster_destroy(al_cluster_t *c)
{
    if (c == NULL)
        return;
    for (int g = 0; g < c->ngroups; g++)
        free_group(&c->groups[g]);
    free(c->groups);
    for (int i = 0; i < c->nstrings; i++)
        free(c->strings[i]);
    free(c->strings);
    free(c->nodes);
    free(c->devices);
    free(c);
}
