/*
 * pools.c -- node pools, labels and topology in the controller: the
 * settings --topology (label keys that name topology levels, innermost
 * first) and --pool-placement (a placement strategy per pool), read and
 * kept in ctl->pools; a node's pool and labels and a job's pool and
 * constraint in their JSON forms (API, store and agent register); and
 * what a node and a job bring to the core's snapshot (labels without the
 * topology keys, topology values, the gang's topology preference).
 *
 * May call: common (labels.c, json) and the core's types; doc.c,
 * jobbody.c and cycle.c call it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "labels.h"
#include "server_int.h"
#include "xmalloc.h"

static const char *const pack_names[] = { "bin", "spread", "frag" };

const char *
al__pack_name(al_pack_t p)
{
    return p >= AL_PACK_BIN && p <= AL_PACK_FRAG ? pack_names[p] : "bin";
}

void
al__pools_fini(al__pools_t *p)
{
    for (int i = 0; i < p->ntopo; i++)
        free(p->topo_key[i]);
    for (int i = 0; i < p->npacks; i++)
        free((char *)p->packs[i].pool);
    free(p->packs);
    memset(p, 0, sizeof *p);
}

static int
bad(char **cause, char *msg)
{
    *cause = msg;
    return AL_EINVAL;
}

int
al__pools_config(const al_server_opts_t *o, al__pools_t *out, char **cause)
{
    al__pools_t p;
    memset(&p, 0, sizeof p);
    char *canon = NULL;
    if (o->topology != NULL && o->topology[0] != '\0') {
        /* Read as a constraint: keys alone, checked and unique. */
        if (al_labels_parse(o->topology, true, &canon, NULL) != 0)
            return bad(cause, al_xasprintf("--topology: bad list '%s': want "
                                           "label keys (letters, digits, "
                                           "'-', '_', '.'), each once, "
                                           "innermost first (rack,block)",
                                           o->topology));
        free(canon);
        char *keys[AL_MAX_TOPO_LEVELS];
        int n = 0;
        for (const char *s = o->topology; *s != '\0';) {
            size_t len = strcspn(s, ",");
            if (n == AL_MAX_TOPO_LEVELS || memchr(s, '=', len) != NULL) {
                for (int i = 0; i < n; i++)
                    free(keys[i]);
                return bad(cause,
                           al_xasprintf("--topology: at most %d label keys, "
                                        "innermost first (rack,block)",
                                        AL_MAX_TOPO_LEVELS));
            }
            keys[n++] = al_xstrndup(s, len);
            s += len + (s[len] == ',');
        }
        /* The core wants the outermost level first. */
        for (int i = 0; i < n; i++) {
            p.topo_key[i] = keys[n - 1 - i];
            p.topo_levels[i] = p.topo_key[i];
        }
        p.ntopo = n;
    }
    const char *s = o->pool_placement != NULL ? o->pool_placement : "";
    while (*s != '\0') {
        size_t len = strcspn(s, ",");
        const char *eq = memchr(s, '=', len);
        int pack = -1;
        if (eq != NULL) {
            size_t vl = len - (size_t)(eq - s) - 1;
            for (int k = 0; k < 3; k++)
                if (strlen(pack_names[k]) == vl &&
                    memcmp(eq + 1, pack_names[k], vl) == 0)
                    pack = k;
        }
        char *pool = eq != NULL ? al_xstrndup(s, (size_t)(eq - s)) : NULL;
        bool dup = false;
        for (int i = 0; pool != NULL && i < p.npacks; i++)
            dup = dup || strcmp(p.packs[i].pool, pool) == 0;
        if (pool == NULL || !al_pool_valid(pool) || pack < 0 || dup) {
            char *item = al_xstrndup(s, len);
            free(pool);
            al__pools_fini(&p);
            int rc = bad(cause, al_xasprintf("--pool-placement: bad item "
                                             "'%s': want POOL=bin|spread|frag, "
                                             "each pool once",
                                             item));
            free(item);
            return rc;
        }
        p.packs =
            al_xreallocarray(p.packs, (size_t)p.npacks + 1, sizeof *p.packs);
        p.packs[p.npacks].pool = pool;
        p.packs[p.npacks].pack = (al_pack_t)pack;
        p.npacks++;
        s += len + (s[len] == ',');
    }
    *out = p;
    return 0;
}

void
al__pools_snap_config(const al__pools_t *p, al_config_t *cfg)
{
    cfg->ntopo_levels = p->ntopo;
    cfg->topo_levels = p->ntopo > 0 ? p->topo_levels : NULL;
    cfg->npool_packs = p->npacks;
    cfg->pool_packs = p->packs;
}

/* ------------------------------------------------------------------ */
/* JSON forms                                                         */

/* Canonical labels ("a=1,b=2") as an object. */
static json_t *
labels_object(const char *labels)
{
    json_t *o = json_object();
    for (const char *s = labels; s != NULL && *s != '\0';) {
        size_t len = strcspn(s, ",");
        const char *eq = memchr(s, '=', len);
        if (eq != NULL) {
            char *k = al_xstrndup(s, (size_t)(eq - s));
            char *v = al_xstrndup(eq + 1, len - (size_t)(eq - s) - 1);
            json_object_set_new(o, k, json_string(v));
            free(k);
            free(v);
        }
        s += len + (s[len] == ',');
    }
    return o;
}

void
al__pools_node_doc(const al_ctl_t *ctl, const al__node_t *n, json_t *o)
{
    if (n->pool != NULL)
        json_object_set_new(o, "pool", json_string(n->pool));
    if (n->labels != NULL)
        json_object_set_new(o, "labels", labels_object(n->labels));
    /* The node's topology path, outermost first, as the controller reads
     * it from the labels --topology names. */
    if (ctl != NULL && ctl->pools.ntopo > 0) {
        json_t *t = json_object();
        for (int i = 0; i < ctl->pools.ntopo; i++) {
            char *v = al_labels_get(n->labels, ctl->pools.topo_key[i]);
            json_object_set_new(t, ctl->pools.topo_key[i],
                                v != NULL ? json_string(v) : json_null());
            free(v);
        }
        json_object_set_new(o, "topology", t);
    }
}

int
al__pools_node_read(const json_t *o, al__node_t *n, char **cause)
{
    const json_t *pool = json_object_get(o, "pool");
    const json_t *labels = json_object_get(o, "labels");
    if (pool != NULL && !json_is_null(pool) &&
        (!json_is_string(pool) || (json_string_length(pool) > 0 &&
                                   !al_pool_valid(json_string_value(pool)))))
        return bad(cause, al_xstrdup("a node's pool is a name (letters, "
                                     "digits, '-', '_', '.')"));
    if (labels != NULL && !json_is_null(labels) && !json_is_object(labels))
        return bad(cause, al_xstrdup("a node's labels are an object of "
                                     "strings, {\"rack\": \"r1\"}"));
    /* As KEY=VALUE text, read by the one parser. */
    size_t cap = 1, off = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v)
    {
        if (!json_is_string(v))
            return bad(cause, al_xasprintf("label %.64s: the value must be "
                                           "a string",
                                           k));
        cap += strlen(k) + json_string_length(v) + 2;
    }
    char *text = al_xmalloc(cap);
    text[0] = '\0';
    json_object_foreach((json_t *)labels, k, v)
    {
        off += (size_t)snprintf(text + off, cap - off, "%s%s=%s",
                                off ? "," : "", k, json_string_value(v));
    }
    char *canon = NULL;
    int rc = al_labels_parse(text, false, &canon, cause);
    free(text);
    if (rc != 0)
        return AL_EINVAL;
    const char *ps = json_string_value(pool);
    n->pool = ps != NULL && ps[0] != '\0' ? al_xstrdup(ps) : NULL;
    n->labels = canon[0] != '\0' ? canon : NULL;
    if (n->labels == NULL)
        free(canon);
    return 0;
}

int
al__pools_job_body(const json_t *b, char **pool, char **constraint,
                   char **cause)
{
    const json_t *p = json_object_get(b, "pool");
    const json_t *c = json_object_get(b, "constraint");
    *pool = *constraint = NULL;
    if (p != NULL && !json_is_null(p) &&
        (!json_is_string(p) || !al_pool_valid(json_string_value(p))))
        return bad(cause, al_xstrdup("pool must be a pool's name (letters, "
                                     "digits, '-', '_', '.')"));
    if (c != NULL && !json_is_null(c)) {
        char *why = NULL;
        if (!json_is_string(c))
            return bad(cause, al_xstrdup("constraint must be a string such "
                                         "as \"ib,rack=r1\""));
        if (al_labels_parse(json_string_value(c), true, constraint, &why) != 0)
            return bad(cause, why);
        if ((*constraint)[0] == '\0') {
            free(*constraint);
            *constraint = NULL;
        }
    }
    *pool = p != NULL && json_is_string(p) ? al_xstrdup(json_string_value(p))
                                           : NULL;
    return 0;
}

/* Reads member key of b, "required" or "preferred" (the default), into
 * *required. */
static int
mode_body(const json_t *b, const char *key, bool *required, char **cause)
{
    const json_t *v = json_object_get(b, key);
    *required = false;
    if (v == NULL || json_is_null(v))
        return 0;
    if (json_is_string(v) && strcmp(json_string_value(v), "required") == 0)
        *required = true;
    else if (!json_is_string(v) ||
             strcmp(json_string_value(v), "preferred") != 0)
        return bad(cause, al_xasprintf("%s must be \"required\" or "
                                       "\"preferred\"",
                                       key));
    return 0;
}

int
al__pools_mode_body(const json_t *b, bool *nvlink, bool *topology, char **cause)
{
    bool nv, topo;
    int rc;
    if ((rc = mode_body(b, "nvlink", &nv, cause)) != 0 ||
        (rc = mode_body(b, "topology", &topo, cause)) != 0)
        return rc;
    *nvlink = nv;
    *topology = topo;
    return 0;
}

void
al__pools_job_doc(const al__job_t *j, json_t *o)
{
    if (j->nvlink_required)
        json_object_set_new(o, "nvlink", json_string("required"));
    if (j->topology_required)
        json_object_set_new(o, "topology", json_string("required"));
    if (j->pool != NULL)
        json_object_set_new(o, "pool", json_string(j->pool));
    if (j->constraint != NULL)
        json_object_set_new(o, "constraint", json_string(j->constraint));
}

void
al__pools_job_read(const json_t *o, al__job_t *j)
{
    const char *p = al_json_str(o, "pool", NULL);
    const char *c = al_json_str(o, "constraint", NULL);
    j->pool = p != NULL && p[0] != '\0' ? al_xstrdup(p) : NULL;
    j->constraint = c != NULL && c[0] != '\0' ? al_xstrdup(c) : NULL;
    const char *nv = al_json_str(o, "nvlink", NULL);
    const char *topo = al_json_str(o, "topology", NULL);
    j->nvlink_required = nv != NULL && strcmp(nv, "required") == 0;
    j->topology_required = topo != NULL && strcmp(topo, "required") == 0;
}

/* ------------------------------------------------------------------ */
/* The snapshot                                                       */

/* The node's labels without the topology keys, and its topology values,
 * computed once a node (a registered node is a new struct). */
static void
node_prepare(const al__pools_t *p, al__node_t *n)
{
    n->snap_ready = true;
    if (n->labels == NULL)
        return;
    size_t len = strlen(n->labels), off = 0;
    char *rest = al_xmalloc(len + 1);
    rest[0] = '\0';
    for (const char *s = n->labels; *s != '\0';) {
        size_t l = strcspn(s, ",");
        const char *eq = memchr(s, '=', l);
        size_t kl = eq != NULL ? (size_t)(eq - s) : l;
        int level = -1;
        for (int i = 0; i < p->ntopo; i++)
            if (strlen(p->topo_key[i]) == kl &&
                memcmp(p->topo_key[i], s, kl) == 0)
                level = i;
        if (level >= 0 && eq != NULL) {
            n->topo[level] = al_xstrndup(eq + 1, l - kl - 1);
        } else {
            if (off > 0)
                rest[off++] = ',';
            memcpy(rest + off, s, l);
            off += l;
            rest[off] = '\0';
        }
        s += l + (s[l] == ',');
    }
    if (off > 0)
        n->snap_labels = rest;
    else
        free(rest);
}

void
al__pools_node_snap(const al__pools_t *p, al__node_t *n, al_node_t *s)
{
    if (!n->snap_ready)
        node_prepare(p, n);
    s->pool = n->pool;
    s->labels = n->snap_labels;
    for (int i = 0; i < p->ntopo; i++)
        s->topo[i] = n->topo[i];
}

void
al__pools_job_snap(const al__pools_t *p, const al__job_t *j, al_job_t *s)
{
    s->req.pool = j->pool;
    s->req.constraint = j->constraint;
    s->req.one_domain = j->nvlink_required;
    /* A gang goes inside one domain of the innermost level when one can
     * hold it, else across them (topology "required": else it waits). */
    if (p->ntopo > 0 && (j->ntasks > 1 || j->max_tasks > 1)) {
        s->topo_mode =
            j->topology_required ? AL_TOPO_REQUIRED : AL_TOPO_PREFERRED;
        s->topo_level = p->ntopo - 1;
    }
}

void
al__pools_node_fini(al__node_t *n)
{
    free(n->pool);
    free(n->labels);
    free(n->snap_labels);
    for (int i = 0; i < AL_MAX_TOPO_LEVELS; i++)
        free(n->topo[i]);
    n->pool = n->labels = n->snap_labels = NULL;
    memset(n->topo, 0, sizeof n->topo);
    n->snap_ready = false;
}
