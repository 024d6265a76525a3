/*
 * sinfo.c -- `sinfo`: the nodes as Slurm shows them, by partition
 * (AL_SLURM_PARTITION, the default, holds every node; each node pool is a
 * partition of its own): grouped by state (the default, -s, -l, -o), or
 * one line per node (-N).
 *
 * May call: slurm.c (the API), format.c, src/common (hostlist).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostlist.h"
#include "json.h"
#include "slurm_int.h"
#include "xmalloc.h"

/* A node's state in Slurm's words, short and long. */
static void
node_state(const json_t *n, const json_t *busy, const char **st,
           const char **lng)
{
    const char *s = al_json_str(n, "state", "");
    long long ngpus = (long long)json_array_size(json_object_get(n, "gpus"));
    long long used = al_json_int(n, "gpus_used", 0);
    bool jobs = used > 0 || al__sl_in(busy, al_json_str(n, "name", ""));
    if (strcmp(s, "down") == 0) {
        *st = "down";
        *lng = "down";
    } else if (strcmp(s, "draining") == 0) {
        *st = jobs ? "drng" : "drain";
        *lng = jobs ? "draining" : "drained";
    } else if (ngpus > 0 && used >= ngpus) {
        *st = "alloc";
        *lng = "allocated";
    } else if (jobs) {
        *st = "mix";
        *lng = "mixed";
    } else {
        *st = "idle";
        *lng = "idle";
    }
}

/* One group of nodes: those that print the same. */
typedef struct group {
    const char *part;   /* its partition */
    const json_t *node; /* the first */
    const char **names;
    size_t n;
    long long alloc, idle, other;
} group_t;

static void
value(char f, const group_t *g, const json_t *busy, char *b, size_t len)
{
    const json_t *n = g->node;
    const char *st, *lng;
    node_state(n, busy, &st, &lng);
    json_t *gpus = json_object_get(n, "gpus");
    char *l;
    switch (f) {
    case 'P':
        snprintf(b, len, "%s%s", g->part,
                 strcmp(g->part, AL_SLURM_PARTITION) == 0 ? "*" : "");
        break;
    case 'R':
        snprintf(b, len, "%s", g->part);
        break;
    case 'a':
        snprintf(b, len, "up");
        break;
    case 'l':
        snprintf(b, len, "infinite");
        break;
    case 'D':
        snprintf(b, len, "%zu", g->n);
        break;
    case 't':
        snprintf(b, len, "%s", st);
        break;
    case 'T':
        snprintf(b, len, "%s", lng);
        break;
    case 'N':
        l = al_hostlist_fold(g->names, g->n);
        snprintf(b, len, "%s", l);
        free(l);
        break;
    case 'G':
        if (json_array_size(gpus) > 0)
            snprintf(b, len, "gpu:%zu", json_array_size(gpus));
        else
            snprintf(b, len, "(null)");
        break;
    case 'c':
        snprintf(b, len, "%lld",
                 (long long)(al_json_int(n, "cpu_milli", 0) / 1000));
        break;
    case 'm':
        snprintf(b, len, "%lld",
                 (long long)(al_json_int(n, "mem_bytes", 0) >> 20));
        break;
    case 'F':
        snprintf(b, len, "%lld/%lld/%lld/%zu", g->alloc, g->idle, g->other,
                 g->n);
        break;
    case 's':
        snprintf(b, len, "1-infinite");
        break;
    case 'r':
        snprintf(b, len, "no");
        break;
    case 'h':
        snprintf(b, len, "NO");
        break;
    case 'g':
        snprintf(b, len, "all");
        break;
    default:
        snprintf(b, len, "%s", "");
        break;
    }
}

static const struct {
    char f;
    const char *header;
} headers[] = {
    { 'P', "PARTITION" }, { 'R', "PARTITION" }, { 'a', "AVAIL" },
    { 'l', "TIMELIMIT" }, { 'D', "NODES" },     { 't', "STATE" },
    { 'T', "STATE" },     { 'N', "NODELIST" },  { 'G', "GRES" },
    { 'c', "CPUS" },      { 'm', "MEMORY" },    { 'F', "NODES(A/I/O/T)" },
    { 's', "JOB_SIZE" },  { 'r', "ROOT" },      { 'h', "OVERSUBS" },
    { 'g', "GROUPS" },
};

static void
line(const al_sl_fmt_t *f, const group_t *g, const json_t *busy)
{
    al_buf_t b;
    al_buf_init(&b);
    for (size_t i = 0; i < f->n; i++) {
        const al_sl_item_t *it = &f->v[i];
        char v[4096] = "";
        if (it->field == 0) {
            al_buf_puts(&b, it->text);
            continue;
        }
        if (g == NULL) {
            for (size_t k = 0; k < sizeof headers / sizeof headers[0]; k++)
                if (headers[k].f == it->field)
                    snprintf(v, sizeof v, "%s", headers[k].header);
        } else {
            value(it->field, g, busy, v, sizeof v);
        }
        al_sl_put(&b, it, v, false);
    }
    printf("%s\n", al_buf_cstr(&b));
    al_buf_fini(&b);
}

/* The row's text without its node list and counts: nodes whose rows say
 * the same are one group. */
static void
key(const al_sl_fmt_t *f, const char *part, const json_t *n, const json_t *busy,
    al_buf_t *k)
{
    group_t g = { part, n, NULL, 1, 0, 0, 0 };
    al_buf_printf(k, "%s\x1f", part);
    for (size_t i = 0; i < f->n; i++) {
        char c = f->v[i].field;
        if (c == 0 || c == 'N' || c == 'D' || c == 'F')
            continue;
        char v[512];
        value(c, &g, busy, v, sizeof v);
        al_buf_printf(k, "%s\x1f", v);
    }
}

/* The partitions: the default (every node), then each pool once, into
 * part; how many. */
static size_t
partitions(const json_t *nodes, const char **part)
{
    size_t np = 0;
    part[np++] = AL_SLURM_PARTITION;
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        const char *pool = al__sl_node_pool(json_array_get(nodes, i));
        bool seen = pool == NULL;
        for (size_t k = 0; k < np && !seen; k++)
            seen = strcmp(part[k], pool) == 0;
        if (!seen)
            part[np++] = pool;
    }
    return np;
}

/* How nodes go into groups: one per node (-N), one per partition (-s),
 * else one per line that prints the same. */
typedef struct grouping {
    const al_sl_fmt_t *f;
    const json_t *busy;
    bool per_node, summ;
    group_t *groups;
    char **keys;
    size_t first; /* the current partition's first group */
    size_t nn;    /* nodes in all */
} grouping_t;

static void
add_node(grouping_t *gp, const char *part, const json_t *n, size_t *ng)
{
    al_buf_t k;
    al_buf_init(&k);
    key(gp->f, part, n, gp->busy, &k);
    size_t g = *ng;
    for (size_t x = gp->first; x < *ng && !gp->per_node && !gp->summ; x++)
        if (strcmp(gp->keys[x], al_buf_cstr(&k)) == 0)
            g = x;
    if (gp->summ && *ng > gp->first)
        g = gp->first;
    if (g == *ng) {
        gp->groups[g].part = part;
        gp->groups[g].node = n;
        gp->groups[g].names = al_xcalloc(gp->nn + 1, sizeof(char *));
        gp->keys[(*ng)++] = al_xstrdup(al_buf_cstr(&k));
    }
    al_buf_fini(&k);
    group_t *gr = &gp->groups[g];
    gr->names[gr->n++] = al_json_str(n, "name", "");
    const char *st, *ln;
    node_state(n, gp->busy, &st, &ln);
    if (strcmp(st, "idle") == 0)
        gr->idle++;
    else if (strcmp(st, "alloc") == 0 || strcmp(st, "mix") == 0)
        gr->alloc++;
    else
        gr->other++;
}

static const struct option longopts[] = {
    { "noheader", no_argument, NULL, 'h' },
    { "format", required_argument, NULL, 'o' },
    { "Node", no_argument, NULL, 'N' },
    { "partition", required_argument, NULL, 'p' },
    { "summarize", no_argument, NULL, 's' },
    { "long", no_argument, NULL, 'l' },
    { "all", no_argument, NULL, 'a' },
    { "help", no_argument, NULL, 'H' },
    { NULL, 0, NULL, 0 },
};

int
al__sinfo(int argc, char **argv)
{
    bool noheader = false, per_node = false, summ = false, lng = false;
    const char *fmt = NULL, *parts = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:Np:sla", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            noheader = true;
            break;
        case 'o':
            fmt = optarg;
            break;
        case 'N':
            per_node = true;
            break;
        case 'p':
            parts = optarg;
            break;
        case 's':
            summ = true;
            break;
        case 'l':
            lng = true;
            break;
        case 'a':
            break;
        case 'H':
            printf("Usage: sinfo [-h] [-N] [-s] [-l] [-p PARTITION] [-o "
                   "FORMAT]\n");
            return 0;
        default:
            fprintf(stderr, "Try \"sinfo --help\" for more information\n");
            return 1;
        }
    }
    if (fmt == NULL)
        fmt = per_node && lng ? "%9N %.6D %.9P %11T %.4c %.8m %G"
              : per_node      ? "%9N %.6D %.9P %6t"
              : summ          ? "%9P %.5a %.10l %.16F %N"
              : lng ? "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
                    : "%9P %.5a %.10l %.6D %.6t %N";
    al_sl_fmt_t f;
    if (al_sl_fmt_percent(fmt, &f) != 0) {
        fprintf(stderr, "sinfo: error: Invalid node format specification: %s\n",
                fmt);
        return 1;
    }
    al_client_t cl;
    if (al__sl_connect(&cl) != 0) {
        al_sl_fmt_fini(&f);
        return 1;
    }
    json_t *nodes = al__sl_nodes(&cl);
    json_t *running = nodes ? al__sl_jobs(&cl, "state=running") : NULL;
    json_t *busy = json_array();
    for (size_t i = 0; i < json_array_size(running); i++) {
        json_t *pl = json_object_get(json_array_get(running, i), "placement");
        for (size_t k = 0; k < json_array_size(pl); k++)
            json_array_append_new(
                busy,
                json_string(al_json_str(json_array_get(pl, k), "node", "")));
    }
    int rc = nodes == NULL || running == NULL;
    json_t *fp = parts ? al__sl_split(parts) : NULL;
    size_t nn = json_array_size(nodes), ng = 0;
    const char **part = al_xcalloc(nn + 1, sizeof *part);
    size_t np = partitions(nodes, part);
    group_t *groups = al_xcalloc(nn * np + 1, sizeof *groups);
    char **keys = al_xcalloc(nn * np + 1, sizeof *keys);
    grouping_t gp = { &f, busy, per_node, summ, groups, keys, 0, nn };
    for (size_t pi = 0; pi < np; pi++) {
        if (fp != NULL && !al__sl_in(fp, part[pi]))
            continue;
        gp.first = ng; /* this partition's first group */
        for (size_t i = 0; i < nn; i++) {
            const json_t *n = json_array_get(nodes, i);
            const char *pool = al__sl_node_pool(n);
            if (pi == 0 || (pool != NULL && strcmp(pool, part[pi]) == 0))
                add_node(&gp, part[pi], n, &ng);
        }
    }
    if (rc == 0 && lng) {
        char d[64];
        time_t t = time(NULL);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(d, sizeof d, "%a %b %e %H:%M:%S %Y", &tm);
        printf("%s\n", d);
    }
    if (rc == 0 && !noheader)
        line(&f, NULL, busy);
    for (size_t g = 0; rc == 0 && g < ng; g++)
        line(&f, &groups[g], busy);
    for (size_t g = 0; g < ng; g++) {
        free(groups[g].names);
        free(keys[g]);
    }
    free(groups);
    free(keys);
    free(part);
    json_decref(fp);
    json_decref(busy);
    json_decref(running);
    json_decref(nodes);
    al_sl_fmt_fini(&f);
    al_client_fini(&cl);
    return rc;
}
