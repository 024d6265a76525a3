/*
 * doc.c -- the document forms of jobs, queues and nodes: the JSON the API
 * shows, which doubles as the document the store keeps (a job's internal
 * form adds nothing the API hides but leaves out what the API derives),
 * and reading a stored document or a queue or node body back, checked.
 *
 * Units on the wire: GPUs in whole devices (fractions allowed in quotas),
 * CPU in millicores for jobs and cores for quotas, memory in bytes, times
 * in milliseconds since the epoch.
 *
 * May call: table.c (a placement's node by name; a job to write again),
 * reason.c (names, a pending job's reason), arraydoc.c (a job array's
 * stored members) and common's JSON.  The store,
 * the handlers and the agent protocol call it; it calls none of them.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

bool
al__valid_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return false;
    return true;
}

/* The first member of object o that is not among the n names known, or
 * NULL: a misspelt field is an error, never silently ignored (a PUT that
 * ignored "quoat" reset the queue's quota). */
const char *
al__unknown_member(const json_t *o, const char *const *known, size_t n)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        (void)v;
        size_t i = 0;
        while (i < n && strcmp(known[i], k) != 0)
            i++;
        if (i == n)
            return k;
    }
    return NULL;
}

static json_t *
gpu_list(uint64_t devices)
{
    json_t *a = json_array();
    for (int d = 0; d < AL_MAX_DEVICES; d++)
        if (devices & ((uint64_t)1 << d))
            json_array_append_new(a, json_integer(d));
    return a;
}

static json_t *job_doc(const al_ctl_t *ctl, const al__job_t *j, bool internal,
                       bool spec);

json_t *
al__job_json(const al_ctl_t *ctl, const al__job_t *j, bool internal)
{
    return job_doc(ctl, j, internal, true);
}

json_t *
al__job_json_nospec(const al_ctl_t *ctl, const al__job_t *j)
{
    return job_doc(ctl, j, false, false);
}

void
al__job_doc_kept(const al__job_t *j, bool internal, json_t *o)
{
    if (internal)
        al__jobtok_doc(j, o);
    if (j->attained > 0)
        json_object_set_new(o, "attained_gpu_s", json_real(j->attained));
    if (j->used_known)
        json_object_set_new(o, "used_gpu_s", json_real(j->used));
    al__pools_job_doc(j, o);
    al__elastic_doc(j, o);
    al__pipeline_doc(j, o);
    al__lifecycle_doc(j, o);
}

static json_t *
job_doc(const al_ctl_t *ctl, const al__job_t *j, bool internal, bool spec)
{
    json_t *after = json_array();
    for (int i = 0; i < j->nafter; i++)
        json_array_append_new(after, json_integer((json_int_t)j->after[i]));
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I,"
        " s:o, s:I, s:I, s:I, s:I, s:i, s:i, s:i}",
        "id", (json_int_t)j->id, "name", j->name, "user", j->user, "queue",
        j->queue, "class", al__jclasses[j->cls].name, "state",
        al__jstate_names[j->state], "tasks", j->ntasks, "gpus", j->gpus,
        "gpu_milli", j->gpu_milli, "cpu_milli", (json_int_t)j->cpu_milli,
        "mem_bytes", (json_int_t)j->mem_bytes, "time_limit",
        (json_int_t)j->time_limit, "after", after, "submit_ms",
        (json_int_t)j->submit_ms, "start_ms", (json_int_t)j->start_ms, "end_ms",
        (json_int_t)j->end_ms, "eligible_ms", (json_int_t)j->eligible_ms,
        "restart_count", j->restart_count, "exit_code", j->exit_code, "signal",
        j->signal);
    if (j->gpu_model != NULL)
        json_object_set_new(o, "gpu_model", json_string(j->gpu_model));
    if (j->nice != 0)
        json_object_set_new(o, "nice", json_integer(j->nice));
    if (j->prio_fixed)
        json_object_set_new(o, "priority_fixed",
                            json_integer((json_int_t)j->prio_value));
    if (j->num_nodes > 0)
        json_object_set_new(o, "num_nodes", json_integer(j->num_nodes));
    al__job_doc_kept(j, internal, o);
    if (j->master_port != 0)
        json_object_set_new(o, "master_port", json_integer(j->master_port));
    if (j->array != NULL)
        json_object_set_new(o, "array", al__array_doc(j->array));
    if (j->ndeps > 0) {
        char *d = al_dep_text(j->deps, j->ndeps);
        json_object_set_new(o, "dependency", json_string(d));
        free(d);
    }
    if (j->array_job != 0) {
        json_object_set_new(o, "array_job_id",
                            json_integer((json_int_t)j->array_job));
        json_object_set_new(o, "array_index",
                            json_integer((json_int_t)j->array_index));
    }
    /* command, cwd, env, script, image: the stored text's members,
     * written in place by the dump (AL_JSON_MEMBERS) rather than parsed
     * and dumped again: a job's environment is most of its document, and
     * the document is written at each change of its state.  The text is
     * allot's own dump of valid JSON: no UTF-8 check again. */
    if (spec && j->spec != NULL)
        al_json_set_members(o, j->spec, strlen(j->spec));
    char buf[256];
    const char *reason = al__job_reason(ctl, j, buf, sizeof buf);
    if (reason != NULL)
        json_object_set_new(o, "reason", json_string(reason));
    if (j->gpu_mem > 0)
        json_object_set_new(o, "gpu_mem", json_integer((json_int_t)j->gpu_mem));
    if (!internal) {
        json_object_set_new(o, "priority",
                            json_integer(al__jclasses[j->cls].priority));
        json_object_set_new(o, "preemptible",
                            json_boolean(al__jclasses[j->cls].preemptible));
    }
    if (j->tasks != NULL) {
        json_t *pl = json_array();
        for (int t = 0; t < j->ntasks; t++) {
            const al__task_t *tk = &j->tasks[t];
            const char *node = tk->node >= 0 && tk->node < ctl->nnodes
                                   ? ctl->nodes[tk->node].name
                                   : "?";
            json_t *po = json_pack(
                "{s:i, s:s, s:o, s:i, s:I, s:b, s:i, s:i}", "task", t, "node",
                node, "gpus", gpu_list(tk->devices), "gpu_milli", tk->gpu_milli,
                "gpu_mem", (json_int_t)tk->gpu_mem, "done", tk->done,
                "exit_code", tk->exit_code, "signal", tk->signal);
            if (!internal && tk->has_usage) {
                json_object_set_new(po, "cpu_usec",
                                    json_integer((json_int_t)tk->cpu_usec));
                if (tk->mem_used >= 0)
                    json_object_set_new(po, "mem_used",
                                        json_integer((json_int_t)tk->mem_used));
                if (tk->mem_peak >= 0)
                    json_object_set_new(po, "mem_peak",
                                        json_integer((json_int_t)tk->mem_peak));
            }
            json_array_append_new(pl, po);
        }
        json_object_set_new(o, "placement", pl);
    }
    return o;
}

al__job_t *
al__job_from_json(al_ctl_t *ctl, const json_t *o)
{
    const char *name = al_json_str(o, "name", NULL);
    const char *user = al_json_str(o, "user", NULL);
    const char *queue = al_json_str(o, "queue", NULL);
    const char *cls = al_json_str(o, "class", "train");
    int st = al__jstate_parse(al_json_str(o, "state", ""));
    int64_t id = al_json_int(o, "id", 0);
    if (name == NULL || user == NULL || queue == NULL || st < 0 || id <= 0)
        return NULL;
    al__job_t *j = al_xcalloc(1, sizeof *j);
    j->id = (uint64_t)id;
    j->name = al_xstrdup(name);
    j->user = al_xstrdup(user);
    j->queue = al_xstrdup(queue);
    for (int c = 0; c < al__njclasses; c++)
        if (strcmp(al__jclasses[c].name, cls) == 0)
            j->cls = c;
    j->state = (al__jstate_t)st;
    j->ntasks = (int)al_json_int(o, "tasks", 1);
    j->gpus = (int32_t)al_json_int(o, "gpus", 0);
    j->gpu_milli = (int32_t)al_json_int(o, "gpu_milli", 0);
    j->gpu_mem = al_json_int(o, "gpu_mem", 0);
    j->cpu_milli = al_json_int(o, "cpu_milli", 0);
    j->mem_bytes = al_json_int(o, "mem_bytes", 0);
    j->time_limit = al_json_int(o, "time_limit", 0);
    j->nice = (int32_t)al_json_int(o, "nice", 0);
    j->num_nodes = (int32_t)al_json_int(o, "num_nodes", 0);
    al__jobtok_read(o, j);
    j->prio_fixed = json_is_integer(json_object_get(o, "priority_fixed"));
    j->prio_value = al_json_int(o, "priority_fixed", 0);
    const char *model = al_json_str(o, "gpu_model", NULL);
    j->gpu_model = model ? al_xstrdup(model) : NULL;
    al__pools_job_read(o, j);
    al__elastic_read(o, j);
    al__pipeline_read(o, j);
    al__lifecycle_read(o, j);
    /* A document built in memory (al__job_json()) holds the spec's text;
     * a stored one, read back, its members. */
    json_t *text =
        json_object_getn(o, AL_JSON_MEMBERS, sizeof AL_JSON_MEMBERS - 1);
    if (json_is_string(text)) {
        j->spec = al_xstrdup(json_string_value(text));
    } else {
        json_t *spec = json_object();
        static const char *const spec_keys[] = { "command", "cwd", "env",
                                                 "script", "image" };
        for (size_t k = 0; k < sizeof spec_keys / sizeof spec_keys[0]; k++) {
            json_t *v = json_object_get(o, spec_keys[k]);
            if (v != NULL && !json_is_null(v))
                json_object_set(spec, spec_keys[k], v);
        }
        j->spec = al_json_dump(spec);
        json_decref(spec);
    }
    json_t *after = json_object_get(o, "after");
    j->nafter = (int)json_array_size(after);
    j->after = al_xcalloc((size_t)j->nafter + 1, sizeof *j->after);
    for (int i = 0; i < j->nafter; i++)
        j->after[i] = (uint64_t)json_integer_value(json_array_get(after, i));
    j->submit_ms = al_json_int(o, "submit_ms", 0);
    j->start_ms = al_json_int(o, "start_ms", 0);
    j->end_ms = al_json_int(o, "end_ms", 0);
    j->eligible_ms = al_json_int(o, "eligible_ms", j->submit_ms);
    j->restart_count = (int)al_json_int(o, "restart_count", 0);
    {
        json_t *att = json_object_get(o, "attained_gpu_s");
        double v = json_is_number(att) ? json_number_value(att) : 0;

        /* Bad values from the store count as none. */
        j->attained = v > 0 && v < 1e15 ? v : 0;
    }
    {
        json_t *u = json_object_get(o, "used_gpu_s");
        double v = json_is_number(u) ? json_number_value(u) : -1;

        /* Bad values from the store count as none. */
        j->used_known = v >= 0 && v < 1e15;
        j->used = j->used_known ? v : 0;
    }
    json_int_t mp = al_json_int(o, "master_port", 0);
    j->master_port = mp > 0 && mp < 65536 ? (int32_t)mp : 0;
    j->exit_code = (int)al_json_int(o, "exit_code", 0);
    j->signal = (int)al_json_int(o, "signal", 0);
    json_t *arr = json_object_get(o, "array");
    if (arr != NULL && (j->array = al__array_from_doc(arr)) == NULL) {
        al__job_free(j);
        return NULL;
    }
    const char *dep = al_json_str(o, "dependency", NULL);
    if (dep != NULL && al_dep_parse(dep, &j->deps, &j->ndeps, NULL) != 0) {
        al__job_free(j);
        return NULL;
    }
    json_int_t aj = al_json_int(o, "array_job_id", 0);
    j->array_job = aj > 0 && (uint64_t)aj < j->id ? (uint64_t)aj : 0;
    j->array_index = al_json_int(o, "array_index", 0);
    const char *reason = al_json_str(o, "reason", NULL);
    j->reason = reason ? al_xstrdup(reason) : NULL;
    j->snap = -1;
    json_t *pl = json_object_get(o, "placement");
    if (json_array_size(pl) == (size_t)j->ntasks && j->ntasks > 0) {
        j->tasks = al_xcalloc((size_t)j->ntasks, sizeof *j->tasks);
        for (int t = 0; t < j->ntasks; t++) {
            json_t *p = json_array_get(pl, (size_t)t);
            al__task_t *tk = &j->tasks[t];
            tk->node = al__ctl_node_index(ctl, al_json_str(p, "node", ""));
            json_t *g = json_object_get(p, "gpus");
            for (size_t k = 0; k < json_array_size(g); k++) {
                json_int_t d = json_integer_value(json_array_get(g, k));
                if (d >= 0 && d < AL_MAX_DEVICES)
                    tk->devices |= (uint64_t)1 << d;
            }
            tk->gpu_milli = (int32_t)al_json_int(p, "gpu_milli", 0);
            tk->gpu_mem = al_json_int(p, "gpu_mem", 0);
            tk->done = al_json_bool(p, "done", false);
            tk->exit_code = (int)al_json_int(p, "exit_code", 0);
            tk->signal = (int)al_json_int(p, "signal", 0);
            tk->log_size = -1;
        }
    }
    if (j->state == JS_RUNNING) {
        bool ok = j->tasks != NULL;
        for (int t = 0; ok && t < j->ntasks; t++)
            ok = j->tasks[t].node >= 0;
        if (!ok) {
            /* Its node is gone from the store: run it again. */
            free(j->tasks);
            j->tasks = NULL;
            j->state = JS_PENDING;
            j->restart_count++;
            al__ctl_dirty(ctl, j);
        }
    }
    return j;
}

json_t *
al__job_spec(const al__job_t *j)
{
    json_t *v = j->spec ? al_json_parse(j->spec, strlen(j->spec), NULL) : NULL;
    if (!json_is_object(v)) {
        json_decref(v);
        v = json_object();
    }
    return v;
}

static const char *const res_names[AL_NRES] = {
    [AL_RES_GPU] = "gpu", [AL_RES_CPU] = "cpu", [AL_RES_MEM] = "mem"
};
/* Wire unit of each resource in core units: GPUs and cores are whole
 * units on the wire, milli-units in the core; memory is bytes in both. */
static const double res_scale[AL_NRES] = {
    [AL_RES_GPU] = 1000.0, [AL_RES_CPU] = 1000.0, [AL_RES_MEM] = 1.0
};

static json_t *
amount(int r, double v)
{
    if (r == AL_RES_MEM)
        return json_integer((json_int_t)v);
    return json_real(v / res_scale[r]);
}

json_t *
al__queue_json(const al__queue_t *q, bool with_share)
{
    json_t *quota = json_object();
    for (int r = 0; r < AL_NRES; r++) {
        const al_quota_t *qt = &q->quota[r];
        json_object_set_new(quota, res_names[r],
                            json_pack("{s:o, s:o, s:f}", "deserved",
                                      amount(r, (double)qt->deserved), "limit",
                                      qt->limit == AL_UNLIMITED
                                          ? json_integer(-1)
                                          : amount(r, (double)qt->limit),
                                      "weight", qt->weight));
    }
    json_t *o = json_pack("{s:s, s:s?, s:i, s:o}", "name", q->name, "parent",
                          q->parent, "priority", q->priority, "quota", quota);
    al__queue_opts_json(q, o);
    al__queue_policy_json(q, o);
    if (with_share || q->members.n > 0)
        json_object_set_new(o, "members", al__names_json(&q->members));
    if (with_share) {
        json_t *fair = json_object(), *alloc = json_object(),
               *demand = json_object();
        for (int r = 0; r < AL_NRES; r++) {
            json_object_set_new(fair, res_names[r],
                                amount(r, q->share.fair[r]));
            json_object_set_new(alloc, res_names[r],
                                amount(r, (double)q->share.allocated[r]));
            json_object_set_new(demand, res_names[r],
                                amount(r, (double)q->share.demand[r]));
        }
        json_object_set_new(o, "fair_share", fair);
        json_object_set_new(o, "allocated", alloc);
        json_object_set_new(o, "demand", demand);
        /* The decayed usage behind fair share, in GPU-hours. */
        json_object_set_new(o, "usage_gpu_hours",
                            json_real(q->usage / AL_GPU_MILLI / 3600.0));
    }
    return o;
}

/* A number member of o (absent or null: def); false if of another type. */
static bool
num_member(const json_t *o, const char *key, double def, double *out)
{
    json_t *v = json_object_get(o, key);
    *out = json_is_number(v) ? json_number_value(v) : def;
    return v == NULL || json_is_null(v) || json_is_number(v);
}

int
al__queue_from_json(const json_t *o, al__queue_t *q, char **cause)
{
    /* The last four are what GET adds (read-only): a document read,
     * changed and PUT back is accepted, those ignored. */
    static const char *const keys[] = {
        "name",           "parent",         "priority",   "quota",
        "max_build_gpus", "idle_timeout",   "idle_util",  "members",
        "min_runtime",    "model_quotas",   "fair_share", "allocated",
        "demand",         "usage_gpu_hours"
    };
    static const char *const rkeys[] = { "deserved", "limit", "weight" };
    const char *bad = al__unknown_member(o, keys, sizeof keys / sizeof *keys);
    if (bad != NULL) {
        *cause = al_xasprintf("unknown field '%s' (a queue has name, parent, "
                              "priority, quota, max_build_gpus, "
                              "idle_timeout, idle_util, members, "
                              "min_runtime and model_quotas)",
                              bad);
        return AL_EINVAL;
    }
    json_t *pv = json_object_get(o, "parent");
    json_t *prio = json_object_get(o, "priority");
    if ((pv != NULL && !json_is_null(pv) && !json_is_string(pv)) ||
        (prio != NULL && !json_is_null(prio) && !json_is_integer(prio))) {
        *cause = al_xasprintf("parent must be a queue name and priority an "
                              "integer");
        return AL_EINVAL;
    }
    const char *name = al_json_str(o, "name", NULL);
    if (name == NULL || !al__valid_name(name, 64)) {
        *cause = al_xasprintf("queue name must be 1-64 letters, digits, "
                              "'-', '_' or '.'");
        return AL_EINVAL;
    }
    json_t *quota = json_object_get(o, "quota");
    if ((quota != NULL && !json_is_object(quota)) ||
        (quota != NULL &&
         (bad = al__unknown_member(quota, res_names, AL_NRES)))) {
        *cause =
            al_xasprintf("quota must be an object of gpu, cpu and mem%s%s%s",
                         bad ? " (not '" : "", bad ? bad : "", bad ? "')" : "");
        return AL_EINVAL;
    }
    al__queue_t tmp;
    memset(&tmp, 0, sizeof tmp);
    for (int r = 0; r < AL_NRES; r++) {
        json_t *qr = json_object_get(quota, res_names[r]);
        if (qr != NULL && (!json_is_object(qr) ||
                           (bad = al__unknown_member(qr, rkeys, 3)) != NULL)) {
            *cause = al_xasprintf("quota.%s must be an object of deserved, "
                                  "limit and weight%s%s%s",
                                  res_names[r], bad ? " (not '" : "",
                                  bad ? bad : "", bad ? "')" : "");
            return AL_EINVAL;
        }
        double des, w, l;
        if (!num_member(qr, "deserved", 0, &des) ||
            !num_member(qr, "weight", 1.0, &w) ||
            !num_member(qr, "limit", -1, &l) || des < 0 || w < 0 ||
            (l < 0 && l != -1)) {
            *cause = al_xasprintf("quota.%s: deserved and weight must be "
                                  ">= 0, limit a number >= 0 (-1: none)",
                                  res_names[r]);
            return AL_EINVAL;
        }
        /* Checked before converting: a double beyond int64_t's range
         * does not convert (undefined behaviour). */
        if (des * res_scale[r] > AL_QUOTA_MAX ||
            l * res_scale[r] > AL_QUOTA_MAX) {
            *cause = al_xasprintf("quota.%s: deserved and limit must be at "
                                  "most %.0f",
                                  res_names[r], AL_QUOTA_MAX / res_scale[r]);
            return AL_EINVAL;
        }
        tmp.quota[r].deserved = (int64_t)(des * res_scale[r] + 0.5);
        tmp.quota[r].limit =
            l < 0 ? AL_UNLIMITED : (int64_t)(l * res_scale[r] + 0.5);
        tmp.quota[r].weight = w;
    }
    const char *parent = al_json_str(o, "parent", NULL);
    tmp.name = al_xstrdup(name);
    tmp.parent = parent != NULL && parent[0] ? al_xstrdup(parent) : NULL;
    tmp.priority = (int)al_json_int(o, "priority", 0);
    if (al__queue_opts_parse(o, &tmp, cause) != 0 ||
        al__queue_policy_parse(o, &tmp, cause) != 0) {
        free(tmp.name);
        free(tmp.parent);
        return AL_EINVAL;
    }
    if (al__names_read(o, "members", true, &tmp.members, cause) != 0) {
        al__queue_policy_fini(&tmp);
        free(tmp.name);
        free(tmp.parent);
        return AL_EINVAL;
    }
    *q = tmp;
    return 0;
}

/* A node's GPU health in its document (drain_reason, each faulty GPU's
 * "unhealthy"), written and read back. */
static void
node_health_doc(const al__node_t *n, json_t *o)
{
    if (n->drain_reason != NULL)
        json_object_set_new(o, "drain_reason", json_string(n->drain_reason));
    json_t *gpus = json_object_get(o, "gpus");
    for (int d = 0; d < n->ngpus && n->gpu_why != NULL; d++)
        if ((n->gpu_bad & ((uint64_t)1 << d)) && n->gpu_why[d] != NULL)
            json_object_set_new(json_array_get(gpus, (size_t)d), "unhealthy",
                                json_string(n->gpu_why[d]));
}

static void
node_health_read(const json_t *o, al__node_t *n)
{
    const char *r = al_json_str(o, "drain_reason", NULL);
    if (r != NULL)
        n->drain_reason = al_xstrdup(r);
    json_t *gpus = json_object_get(o, "gpus");
    for (int d = 0; d < n->ngpus && d < AL_MAX_DEVICES; d++) {
        const char *why =
            al_json_str(json_array_get(gpus, (size_t)d), "unhealthy", NULL);
        if (why == NULL)
            continue;
        if (n->gpu_why == NULL)
            n->gpu_why = al_xcalloc(AL_MAX_DEVICES, sizeof *n->gpu_why);
        n->gpu_why[d] = al_xstrdup(why);
        n->gpu_bad |= (uint64_t)1 << d;
    }
}

json_t *
al__node_json(const al_ctl_t *ctl, const al__node_t *n)
{
    json_t *gpus = json_array();
    for (int i = 0; i < n->ngpus; i++) {
        const al__gpu_t *g = &n->gpus[i];
        json_array_append_new(gpus, json_pack("{s:i, s:s, s:s, s:I, s:i, s:i}",
                                              "index", i, "uuid", g->uuid,
                                              "model", g->model, "mem_bytes",
                                              (json_int_t)g->mem_bytes, "numa",
                                              g->numa, "nvlink", g->nvlink));
    }
    int state = n->state;
    if (state == NS_READY && n->drained)
        state = NS_DRAINING;
    json_t *o =
        json_pack("{s:s, s:s, s:b, s:b, s:s, s:I, s:I, s:o}", "name", n->name,
                  "addr", n->addr ? n->addr : "", "emulated", n->emulated,
                  "drained", n->drained, "state", al__node_state_names[state],
                  "cpu_milli", (json_int_t)n->cpu_milli, "mem_bytes",
                  (json_int_t)n->mem_bytes, "gpus", gpus);
    al__pools_node_doc(ctl, n, o);
    node_health_doc(n, o);
    if (n->mps) /* said only when true: older documents stay as they were */
        json_object_set_new(o, "mps", json_true());
    return o;
}

int
al__node_from_json(const json_t *o, al__node_t *n, char **cause)
{
    const char *name = al_json_str(o, "name", NULL);
    json_t *gpus = json_object_get(o, "gpus");
    if (name == NULL || !al__valid_name(name, 128) ||
        (gpus != NULL && !json_is_array(gpus)) ||
        json_array_size(gpus) > AL_MAX_DEVICES) {
        *cause = al_xasprintf("a node needs a name (letters, digits, '-', "
                              "'_', '.') and at most %d GPUs",
                              AL_MAX_DEVICES);
        return AL_EINVAL;
    }
    al__node_t tmp;
    memset(&tmp, 0, sizeof tmp);
    if (al__pools_node_read(o, &tmp, cause) != 0)
        return AL_EINVAL;
    tmp.name = al_xstrdup(name);
    tmp.addr = al_xstrdup(al_json_str(o, "addr", "127.0.0.1"));
    tmp.emulated = al_json_bool(o, "emulated", false);
    tmp.drained = al_json_bool(o, "drained", false);
    tmp.mps = al_json_bool(o, "mps", false);
    tmp.state = NS_READY;
    tmp.cpu_milli = al_json_int(o, "cpu_milli", 0);
    tmp.mem_bytes = al_json_int(o, "mem_bytes", 0);
    tmp.ngpus = (int)json_array_size(gpus);
    tmp.gpus = al_xcalloc((size_t)tmp.ngpus + 1, sizeof *tmp.gpus);
    tmp.devices = al_xcalloc((size_t)tmp.ngpus + 1, sizeof *tmp.devices);
    for (int i = 0; i < tmp.ngpus; i++) {
        json_t *g = json_array_get(gpus, (size_t)i);
        tmp.gpus[i].uuid = al_xstrdup(al_json_str(g, "uuid", ""));
        tmp.gpus[i].model = al_xstrdup(al_json_str(g, "model", "unknown"));
        tmp.gpus[i].mem_bytes = al_json_int(g, "mem_bytes", 0);
        tmp.gpus[i].numa = (int)al_json_int(g, "numa", -1);
        tmp.gpus[i].nvlink = (int)al_json_int(g, "nvlink", -1);
        tmp.gpus[i].sample = (al__gpu_sample_t){ -1, -1, -1, -1, -1, 0, 0 };
        tmp.devices[i].mem_bytes = tmp.gpus[i].mem_bytes;
        tmp.devices[i].numa = (int16_t)tmp.gpus[i].numa;
        tmp.devices[i].nvlink = (int16_t)tmp.gpus[i].nvlink;
    }
    node_health_read(o, &tmp);
    *n = tmp;
    return 0;
}
