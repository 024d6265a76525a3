/*
 * api.c -- the HTTP/JSON API under /v1: the route table, the handlers (run
 * on the loop thread, which owns the state they touch) and the JSON forms
 * of jobs, queues and nodes, which double as their stored documents.
 *
 * Units on the wire: GPUs in whole devices (fractions allowed in quotas),
 * CPU in millicores for jobs and cores for quotas, memory in bytes, times
 * in milliseconds since the epoch.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

#define MAX_LIST 1000
#define MAX_LOG_READ (4 << 20)
#define LONG_POLL_MAX_MS 30000
/* A sync that reported ended tasks waits for the next scheduling cycle
 * when that is due within this many ms (else it is answered at once). */
#define DEFER_MAX_MS 100

/* ------------------------------------------------------------------ */
/* Helpers                                                            */

void
al__reply_error(al__req_t *req, int status, const char *code, const char *fmt,
                ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    /* The va_list is initialised (va_start/va_copy above); clang 14's
     * analyzer reports it when clang-tidy checks several files in one
     * run. */
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_decref(req->resp);
    req->status = status;
    req->resp = json_pack("{s:s, s:s}", "error", code, "message", msg);
}

static void
reply(al__req_t *req, int status, json_t *body)
{
    json_decref(req->resp);
    req->status = status;
    req->resp = body;
}

const char *
al__req_arg(const al__req_t *req, const char *key)
{
    for (int i = 0; i < req->nargs; i++)
        if (strcmp(req->argk[i], key) == 0)
            return req->argv[i];
    return NULL;
}

/* Parses a decimal id; 0 when malformed. */
static uint64_t
parse_id(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > 19)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    return strtoull(s, NULL, 10);
}

static bool
valid_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return false;
    return true;
}

static bool
is_admin(const al__req_t *req)
{
    return req->role == ROLE_ADMIN;
}

/* The job named by the first capture, visible to the caller, or NULL after
 * replying 404/403. */
static al__job_t *
job_of_req(al_ctl_t *ctl, al__req_t *req)
{
    uint64_t id = parse_id(req->cap[0]);
    al__job_t *j = al__ctl_job(ctl, id);
    if (j == NULL) {
        al__reply_error(req, 404, "not_found", "no job %s", req->cap[0]);
        return NULL;
    }
    if (!is_admin(req) && strcmp(j->user, req->user) != 0) {
        al__reply_error(req, 403, "forbidden",
                        "job %s is not yours; only its owner or an admin "
                        "may use it",
                        req->cap[0]);
        return NULL;
    }
    return j;
}

/* ------------------------------------------------------------------ */
/* JSON forms                                                         */

static json_t *
gpu_list(uint64_t devices)
{
    json_t *a = json_array();
    for (int d = 0; d < AL_MAX_DEVICES; d++)
        if (devices & ((uint64_t)1 << d))
            json_array_append_new(a, json_integer(d));
    return a;
}

json_t *
al__job_json(const al_ctl_t *ctl, const al__job_t *j, bool internal)
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
    if (j->master_port != 0)
        json_object_set_new(o, "master_port", json_integer(j->master_port));
    json_t *spec = al__job_spec(j);
    json_object_update(o, spec); /* command, cwd, env, script */
    json_decref(spec);
    char buf[256];
    const char *reason = al__job_reason(ctl, j, buf, sizeof buf);
    if (reason != NULL)
        json_object_set_new(o, "reason", json_string(reason));
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
            json_array_append_new(
                pl,
                json_pack("{s:i, s:s, s:o, s:i, s:I, s:b, s:i, s:i}", "task", t,
                          "node", node, "gpus", gpu_list(tk->devices),
                          "gpu_milli", tk->gpu_milli, "gpu_mem",
                          (json_int_t)tk->gpu_mem, "done", tk->done,
                          "exit_code", tk->exit_code, "signal", tk->signal));
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
    j->cpu_milli = al_json_int(o, "cpu_milli", 0);
    j->mem_bytes = al_json_int(o, "mem_bytes", 0);
    j->time_limit = al_json_int(o, "time_limit", 0);
    const char *model = al_json_str(o, "gpu_model", NULL);
    j->gpu_model = model ? al_xstrdup(model) : NULL;
    json_t *spec = json_object();
    static const char *const spec_keys[] = { "command", "cwd", "env",
                                             "script" };
    for (size_t k = 0; k < sizeof spec_keys / sizeof spec_keys[0]; k++) {
        json_t *v = json_object_get(o, spec_keys[k]);
        if (v != NULL && !json_is_null(v))
            json_object_set(spec, spec_keys[k], v);
    }
    j->spec = al_json_dump(spec);
    json_decref(spec);
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
    json_int_t mp = al_json_int(o, "master_port", 0);
    j->master_port = mp > 0 && mp < 65536 ? (int32_t)mp : 0;
    j->exit_code = (int)al_json_int(o, "exit_code", 0);
    j->signal = (int)al_json_int(o, "signal", 0);
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
    }
    return o;
}

/* The first member of object o that is not among the n names known, or
 * NULL: a misspelt field is an error, never silently ignored (a PUT that
 * ignored "quoat" reset the queue's quota). */
static const char *
unknown_member(const json_t *o, const char *const *known, size_t n)
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
    /* The last three are what GET adds (read-only): a document read,
     * changed and PUT back is accepted, those ignored. */
    static const char *const keys[] = { "name",  "parent",     "priority",
                                        "quota", "fair_share", "allocated",
                                        "demand" };
    static const char *const rkeys[] = { "deserved", "limit", "weight" };
    const char *bad = unknown_member(o, keys, sizeof keys / sizeof *keys);
    if (bad != NULL) {
        *cause = al_xasprintf("unknown field '%s' (a queue has name, parent, "
                              "priority and quota)",
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
    if (name == NULL || !valid_name(name, 64)) {
        *cause = al_xasprintf("queue name must be 1-64 letters, digits, "
                              "'-', '_' or '.'");
        return AL_EINVAL;
    }
    json_t *quota = json_object_get(o, "quota");
    if ((quota != NULL && !json_is_object(quota)) ||
        (quota != NULL && (bad = unknown_member(quota, res_names, AL_NRES)))) {
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
                           (bad = unknown_member(qr, rkeys, 3)) != NULL)) {
            *cause = al_xasprintf("quota.%s must be an object of deserved, "
                                  "limit and weight%s%s%s",
                                  res_names[r], bad ? " (not '" : "",
                                  bad ? bad : "", bad ? "')" : "");
            return AL_EINVAL;
        }
        double des, w, l;
        if (!num_member(qr, "deserved", 0, &des) ||
            !num_member(qr, "weight", 1.0, &w) ||
            !num_member(qr, "limit", -1, &l) || des < 0 || w < 0) {
            *cause = al_xasprintf("quota.%s: deserved and weight must be "
                                  ">= 0, limit a number (-1: none)",
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
    *q = tmp;
    return 0;
}

static const char *const node_state_names[] = {
    [NS_READY] = "ready", [NS_DRAINING] = "draining", [NS_DOWN] = "down"
};

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
    return json_pack(
        "{s:s, s:s, s:b, s:b, s:s, s:I, s:I, s:o}", "name", n->name, "addr",
        n->addr ? n->addr : "", "emulated", n->emulated, "drained", n->drained,
        "state", node_state_names[state], "cpu_milli", (json_int_t)n->cpu_milli,
        "mem_bytes", (json_int_t)n->mem_bytes, "gpus", gpus);
}

int
al__node_from_json(const json_t *o, al__node_t *n, char **cause)
{
    const char *name = al_json_str(o, "name", NULL);
    json_t *gpus = json_object_get(o, "gpus");
    if (name == NULL || !valid_name(name, 128) ||
        (gpus != NULL && !json_is_array(gpus)) ||
        json_array_size(gpus) > AL_MAX_DEVICES) {
        *cause = al_xasprintf("a node needs a name (letters, digits, '-', "
                              "'_', '.') and at most %d GPUs",
                              AL_MAX_DEVICES);
        return AL_EINVAL;
    }
    al__node_t tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.name = al_xstrdup(name);
    tmp.addr = al_xstrdup(al_json_str(o, "addr", "127.0.0.1"));
    tmp.emulated = al_json_bool(o, "emulated", false);
    tmp.drained = al_json_bool(o, "drained", false);
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
        tmp.gpus[i].sample = (al__gpu_sample_t){ -1, -1, -1, -1, -1, 0 };
        tmp.devices[i].mem_bytes = tmp.gpus[i].mem_bytes;
        tmp.devices[i].numa = (int16_t)tmp.gpus[i].numa;
        tmp.devices[i].nvlink = (int16_t)tmp.gpus[i].nvlink;
    }
    *n = tmp;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Misc                                                               */

static void
api_healthz(al_ctl_t *ctl, al__req_t *req)
{
    /* Anyone may ask whether the controller is up; what it holds is for
     * callers with a token. */
    if (al__token_check(ctl, req->token) == NULL) {
        reply(req, 200, json_pack("{s:b}", "ok", 1));
        return;
    }
    reply(req, 200,
          json_pack("{s:b, s:I, s:i, s:I}", "ok", 1, "jobs",
                    (json_int_t)ctl->njobs, "nodes", ctl->nnodes, "cycles",
                    (json_int_t)ctl->cycles));
}

static void
api_whoami(al_ctl_t *ctl, al__req_t *req)
{
    reply(req, 200,
          json_pack("{s:s, s:s}", "user", req->user, "role",
                    al__role_name(req->role)));
}

static void
api_token_create(al_ctl_t *ctl, al__req_t *req)
{
    const char *user = al_json_str(req->body, "user", NULL);
    const char *role = al_json_str(req->body, "role", "user");
    int r = strcmp(role, "user") == 0    ? ROLE_USER
            : strcmp(role, "admin") == 0 ? ROLE_ADMIN
            : strcmp(role, "agent") == 0 ? ROLE_AGENT
                                         : ROLE_NONE;
    if (user == NULL || !valid_name(user, 64) || r == ROLE_NONE) {
        al__reply_error(req, 400, "bad_request",
                        "need {\"user\": NAME, \"role\": "
                        "\"user\"|\"admin\"|\"agent\"}");
        return;
    }
    al__token_t t;
    char *secret = al__token_create(user, r, &t);
    ctl->tokens =
        al_xreallocarray(ctl->tokens, (size_t)ctl->ntokens + 1, sizeof t);
    ctl->tokens[ctl->ntokens++] = t;
    al__store_put_token(ctl, &t);
    req->mutating = true;
    reply(req, 201,
          json_pack("{s:s, s:s, s:s, s:s}", "id", t.id, "user", user, "role",
                    role, "token", secret));
    free(secret);
}

/* ------------------------------------------------------------------ */
/* Jobs                                                               */

static bool
string_array(const json_t *a)
{
    if (!json_is_array(a) || json_array_size(a) == 0)
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!json_is_string(json_array_get(a, i)))
            return false;
    return true;
}

/* Hands msg (malloc()ed) to *cause, or frees it when cause is NULL;
 * returns err. */
static int
fail(char **cause, int err, char *msg)
{
    if (cause != NULL)
        *cause = msg;
    else
        free(msg);
    return err;
}

/* Reads an optional integer member into *out within [lo, hi]; absent or
 * null leaves *out alone. */
static int
opt_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
        char **cause)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > hi)
        return fail(cause, AL_EINVAL,
                    al_xasprintf("%s must be an integer in %" PRId64
                                 "..%" PRId64,
                                 key, lo, hi));
    *out = json_integer_value(v);
    return 0;
}

/* Reads an optional string member (owned by o) into *out, def when absent
 * or null. */
static int
opt_str(const json_t *o, const char *key, const char *def, const char **out,
        char **cause)
{
    json_t *v = json_object_get(o, key);
    if (v != NULL && !json_is_null(v) && !json_is_string(v))
        return fail(cause, AL_EINVAL, al_xasprintf("%s must be a string", key));
    *out = json_is_string(v) ? json_string_value(v) : def;
    return 0;
}

/* The default name of a job: the last path element of its command's first
 * word, cut to 64 bytes at a UTF-8 character boundary (a name must stay
 * valid UTF-8 to be written as JSON). */
static char *
default_name(const char *c0)
{
    const char *slash = strrchr(c0, '/');
    const char *base = slash ? slash + 1 : c0;
    size_t n = strlen(base);
    if (n > 64) {
        n = 64;
        while (n > 0 && ((unsigned char)base[n] & 0xC0) == 0x80)
            n--;
    }
    return al_xstrndup(base, n);
}

/* A job body's members once checked; strings belong to the body. */
struct job_req {
    const char *queue, *user, *name, *model;
    int cls;
    int64_t tasks, gpus, cpu, mem, limit;
    double frac;
};

/* The queue, class and sizes of body b. */
static int
check_sizes(const json_t *b, struct job_req *r, char **cause)
{
    const char *cls;
    int rc;
    if ((rc = opt_str(b, "queue", "default", &r->queue, cause)) != 0 ||
        (rc = opt_str(b, "class", "train", &cls, cause)) != 0)
        return rc;
    r->cls = -1;
    for (int c = 0; c < al__njclasses; c++)
        if (strcmp(al__jclasses[c].name, cls) == 0)
            r->cls = c;
    if (r->cls < 0)
        return fail(cause, AL_EINVAL,
                    al_xstrdup("class must be train, build or inference"));
    r->tasks = 1, r->gpus = 0, r->cpu = 100, r->mem = 0, r->limit = 0;
    if ((rc = opt_int(b, "tasks", 1, AL_JOB_MAX_TASKS, &r->tasks, cause)) !=
            0 ||
        (rc = opt_int(b, "gpus", 0, AL_MAX_DEVICES, &r->gpus, cause)) != 0 ||
        (rc = opt_int(b, "cpu_milli", 0, AL_JOB_MAX_CPU_MILLI, &r->cpu,
                      cause)) != 0 ||
        (rc = opt_int(b, "mem_bytes", 0, AL_JOB_MAX_MEM_BYTES, &r->mem,
                      cause)) != 0 ||
        (rc = opt_int(b, "time_limit", 0, AL_JOB_MAX_TIME_LIMIT, &r->limit,
                      cause)) != 0)
        return rc;
    json_t *fv = json_object_get(b, "gpu_fraction");
    r->frac = json_is_number(fv) ? json_number_value(fv) : 0;
    if ((fv != NULL && !json_is_null(fv) && !json_is_number(fv)) ||
        r->frac < 0 || r->frac >= 1 || (r->frac > 0 && r->gpus > 0))
        return fail(cause, AL_EINVAL,
                    al_xstrdup("gpu_fraction must be in (0, 1) and excludes "
                               "gpus"));
    return 0;
}

/* The members of body b that go into the job's spec, and `after`. */
static int
check_spec(const json_t *b, char **cause)
{
    json_t *env = json_object_get(b, "env");
    if (env != NULL && !json_is_null(env)) {
        const char *k;
        json_t *v;
        bool ok = json_is_object(env);
        json_object_foreach(env, k, v) ok = ok && json_is_string(v);
        if (!ok)
            return fail(cause, AL_EINVAL,
                        al_xstrdup("env must be an object of strings"));
    }
    json_t *script = json_object_get(b, "script");
    if (script != NULL && !json_is_null(script) && !json_is_string(script))
        return fail(cause, AL_EINVAL,
                    al_xstrdup("script must be the text of a job script"));
    json_t *cwd = json_object_get(b, "cwd");
    if (cwd != NULL && !json_is_null(cwd) && !json_is_string(cwd))
        return fail(cause, AL_EINVAL, al_xstrdup("cwd must be a string"));
    json_t *after = json_object_get(b, "after");
    if (after != NULL && !json_is_null(after) && !json_is_array(after))
        return fail(cause, AL_EINVAL,
                    al_xstrdup("after must be an array of job ids"));
    for (size_t i = 0; i < json_array_size(after); i++) {
        json_t *a = json_array_get(after, i);
        if (!json_is_integer(a) || json_integer_value(a) < 1)
            return fail(cause, AL_EINVAL,
                        al_xasprintf("after: no such job (entry %zu)", i));
    }
    return 0;
}

/* Who the job is for, its name (NULL: the default), GPU model and hold. */
static int
check_names(const json_t *b, const char *caller, bool admin, struct job_req *r,
            char **cause)
{
    const char *as;
    int rc;
    if ((rc = opt_str(b, "user", NULL, &as, cause)) != 0)
        return rc;
    r->user = caller;
    if (as != NULL && strcmp(as, caller) != 0) {
        if (!admin)
            return fail(cause, AL_EPERM,
                        al_xstrdup("only an admin may submit for another "
                                   "user"));
        if (!valid_name(as, 64))
            return fail(cause, AL_EINVAL, al_xstrdup("bad user name"));
        r->user = as;
    }
    if ((rc = opt_str(b, "name", NULL, &r->name, cause)) != 0)
        return rc;
    if (r->name != NULL &&
        (strlen(r->name) > AL_JOB_MAX_NAME || r->name[0] == '\0'))
        return fail(cause, AL_EINVAL, al_xstrdup("name must be 1-128 bytes"));
    if ((rc = opt_str(b, "gpu_model", NULL, &r->model, cause)) != 0)
        return rc;
    json_t *hold = json_object_get(b, "hold");
    if (hold != NULL && !json_is_null(hold) && !json_is_boolean(hold))
        return fail(cause, AL_EINVAL, al_xstrdup("hold must be true or false"));
    return 0;
}

/* The job's spec: what runs, as given. */
static char *
job_spec(const json_t *b)
{
    json_t *spec = json_pack("{s:O}", "command", json_object_get(b, "command"));
    static const char *const keys[] = { "cwd", "script", "env" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(b, keys[k]);
        if (v != NULL && !json_is_null(v))
            json_object_set(spec, keys[k], v);
    }
    char *text = al_json_dump(spec);
    json_decref(spec);
    return text;
}

int
al__job_parse(const json_t *b, const char *caller, bool admin, al__job_t **out,
              char **cause)
{
    if (!json_is_object(b))
        return fail(cause, AL_EINVAL,
                    al_xstrdup("the body must be a JSON object describing "
                               "the job"));
    static const char *const keys[] = {
        "command",      "cwd",   "env",  "script",    "after",     "queue",
        "class",        "tasks", "gpus", "cpu_milli", "mem_bytes", "time_limit",
        "gpu_fraction", "user",  "name", "gpu_model", "hold",
    };
    const char *bad = unknown_member(b, keys, sizeof keys / sizeof *keys);
    if (bad != NULL)
        return fail(cause, AL_EINVAL,
                    al_xasprintf("unknown field '%s' (see docs/server.md "
                                 "for a job's fields)",
                                 bad));
    json_t *cmd = json_object_get(b, "command");
    if (!string_array(cmd))
        return fail(cause, AL_EINVAL,
                    al_xstrdup("command must be a non-empty array of "
                               "strings"));
    struct job_req r;
    int rc;
    if ((rc = check_sizes(b, &r, cause)) != 0 ||
        (rc = check_spec(b, cause)) != 0 ||
        (rc = check_names(b, caller, admin, &r, cause)) != 0)
        return rc;
    char *name = r.name != NULL
                     ? al_xstrdup(r.name)
                     : default_name(json_string_value(json_array_get(cmd, 0)));
    if (name[0] == '\0') {
        free(name);
        return fail(cause, AL_EINVAL, al_xstrdup("name must be 1-128 bytes"));
    }

    al__job_t *j = al_xcalloc(1, sizeof *j);
    j->name = name;
    j->user = al_xstrdup(r.user);
    j->queue = al_xstrdup(r.queue);
    j->cls = r.cls;
    j->ntasks = (int)r.tasks;
    j->gpus = (int32_t)r.gpus;
    /* A fraction stays below one whole GPU (core.h: 1..999). */
    j->gpu_milli = r.frac > 0 ? (int32_t)(r.frac * AL_GPU_MILLI + 0.5) : 0;
    if (r.frac > 0 && j->gpu_milli < 1)
        j->gpu_milli = 1;
    if (j->gpu_milli >= AL_GPU_MILLI)
        j->gpu_milli = AL_GPU_MILLI - 1;
    j->cpu_milli = r.cpu;
    j->mem_bytes = r.mem;
    j->time_limit = r.limit;
    j->gpu_model = r.model ? al_xstrdup(r.model) : NULL;
    j->spec = job_spec(b);
    json_t *after = json_object_get(b, "after");
    size_t nafter = json_array_size(after);
    j->nafter = (int)nafter;
    j->after = al_xcalloc(nafter + 1, sizeof *j->after);
    for (size_t i = 0; i < nafter; i++)
        j->after[i] = (uint64_t)json_integer_value(json_array_get(after, i));
    j->state = al_json_bool(b, "hold", false) ? JS_HELD : JS_PENDING;
    j->snap = -1;
    *out = j;
    return 0;
}

static void
api_job_submit(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = NULL;
    char *cause = NULL;
    int rc = al__job_parse(req->body, req->user, is_admin(req), &j, &cause);
    if (rc != 0) {
        if (rc == AL_EPERM)
            al__reply_error(req, 403, "forbidden", "%s", cause);
        else
            al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    /* What the body refers to must exist. */
    if (al__ctl_queue(ctl, j->queue) == NULL) {
        al__reply_error(req, 400, "bad_request",
                        "no queue '%s'; `allot queues` lists them", j->queue);
        al__job_free(j);
        return;
    }
    for (int i = 0; i < ctl->nqueues; i++) {
        if (ctl->queues[i].parent != NULL &&
            strcmp(ctl->queues[i].parent, j->queue) == 0) {
            al__reply_error(req, 400, "bad_request",
                            "queue '%s' has sub-queues; submit to a leaf "
                            "queue",
                            j->queue);
            al__job_free(j);
            return;
        }
    }
    for (int i = 0; i < j->nafter; i++) {
        if (al__ctl_job(ctl, j->after[i]) == NULL) {
            al__reply_error(req, 400, "bad_request",
                            "after: no such job (entry %d)", i);
            al__job_free(j);
            return;
        }
    }
    j->id = ctl->njobs + 1;
    al__ctl_put_job(ctl, j);
    j->submit_ms = j->eligible_ms = al_clock_ms();
    al__ctl_dirty(ctl, j);
    al__store_event(ctl, j->id, j->submit_ms, "submitted", NULL);
    al__ctl_touch(ctl);
    req->mutating = true;
    reply(req, 201, al__job_json(ctl, j, false));
}

static void
api_job_list(al_ctl_t *ctl, al__req_t *req)
{
    bool want[JS_COUNT];
    const char *states = al__req_arg(req, "state");
    for (int s = 0; s < JS_COUNT; s++)
        want[s] = states == NULL;
    if (states != NULL) {
        char *copy = al_xstrdup(states), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t != NULL;
             t = strtok_r(NULL, ",", &save)) {
            int s = strcmp(t, "active") == 0 ? -2 : al__jstate_parse(t);
            if (s == -2) {
                want[JS_PENDING] = want[JS_HELD] = want[JS_RUNNING] = true;
            } else if (s < 0) {
                al__reply_error(req, 400, "bad_request",
                                "unknown state '%s' (pending, held, running, "
                                "completed, failed, cancelled, active)",
                                t);
                free(copy);
                return;
            } else {
                want[s] = true;
            }
        }
        free(copy);
    }
    const char *queue = al__req_arg(req, "queue");
    const char *user = al__req_arg(req, "user");
    if (!is_admin(req)) {
        if (user != NULL && strcmp(user, req->user) != 0) {
            al__reply_error(req, 403, "forbidden",
                            "only an admin may list other users' jobs");
            return;
        }
        user = req->user;
    }
    int64_t limit = 100;
    const char *ls = al__req_arg(req, "limit");
    if (ls != NULL) {
        uint64_t v = parse_id(ls);
        if (v == 0 || v > MAX_LIST) {
            al__reply_error(req, 400, "bad_request", "limit must be 1..%d",
                            MAX_LIST);
            return;
        }
        limit = (int64_t)v;
    }
    uint64_t after = 0;
    const char *as = al__req_arg(req, "after");
    if (as != NULL && (after = parse_id(as)) == 0 && strcmp(as, "0") != 0) {
        al__reply_error(req, 400, "bad_request", "after must be a job id");
        return;
    }
    /* Only active jobs wanted: none lies before the first active one. */
    if (!want[JS_COMPLETED] && !want[JS_FAILED] && !want[JS_CANCELLED]) {
        uint64_t lo = al__ctl_first_active(ctl);
        if (after < lo)
            after = lo;
    }
    json_t *jobs = json_array();
    uint64_t last = 0;
    bool more = false;
    for (uint64_t i = after; i < ctl->njobs; i++) {
        const al__job_t *j = ctl->jobs[i];
        if (j == NULL || !want[j->state] ||
            (queue != NULL && strcmp(queue, j->queue) != 0) ||
            (user != NULL && strcmp(user, j->user) != 0))
            continue;
        if ((int64_t)json_array_size(jobs) == limit) {
            more = true;
            break;
        }
        json_array_append_new(jobs, al__job_json(ctl, j, false));
        last = j->id;
    }
    json_t *o = json_pack("{s:o}", "jobs", jobs);
    json_object_set_new(o, "next",
                        more ? json_integer((json_int_t)last) : json_null());
    reply(req, 200, o);
}

static void
api_job_get(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = job_of_req(ctl, req);
    if (j == NULL)
        return;
    json_t *o = al__job_json(ctl, j, false);
    json_object_set_new(o, "history", al__store_history(ctl, j->id));
    reply(req, 200, o);
}

static void
api_job_cancel(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = job_of_req(ctl, req);
    if (j == NULL)
        return;
    if (j->state >= JS_COMPLETED) {
        al__reply_error(req, 409, "conflict", "job %llu already %s",
                        (unsigned long long)j->id, al__jstate_names[j->state]);
        return;
    }
    char *d = al_xasprintf("cancelled by %s", req->user);
    al__ctl_set_state(ctl, j, JS_CANCELLED, "cancelled", d);
    free(d);
    req->mutating = true;
    reply(req, 200, al__job_json(ctl, j, false));
}

/* Hold (from pending) and release (from held); idempotent. */
static void
hold_release(al_ctl_t *ctl, al__req_t *req, al__jstate_t from, al__jstate_t to,
             const char *event)
{
    al__job_t *j = job_of_req(ctl, req);
    if (j == NULL)
        return;
    if (j->state != from && j->state != to) {
        al__reply_error(req, 409, "conflict", "job %llu is %s, not %s",
                        (unsigned long long)j->id, al__jstate_names[j->state],
                        al__jstate_names[from]);
        return;
    }
    if (j->state == from) {
        al__ctl_set_state(ctl, j, to, event, req->user);
        req->mutating = true;
    }
    reply(req, 200, al__job_json(ctl, j, false));
}

static void
api_job_hold(al_ctl_t *ctl, al__req_t *req)
{
    hold_release(ctl, req, JS_PENDING, JS_HELD, "held");
}

static void
api_job_release(al_ctl_t *ctl, al__req_t *req)
{
    hold_release(ctl, req, JS_HELD, JS_PENDING, "released");
}

static char *
log_path(al_ctl_t *ctl, uint64_t job, int task, int restart)
{
    return al_xasprintf("%s/logs/%llu.%d.%d.log", ctl->state_dir,
                        (unsigned long long)job, task, restart);
}

static void
api_job_logs(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = job_of_req(ctl, req);
    if (j == NULL)
        return;
    const char *ts = al__req_arg(req, "task"),
               *rs = al__req_arg(req, "restart"),
               *os = al__req_arg(req, "offset");
    int64_t task = ts ? (int64_t)parse_id(ts) : 0;
    int64_t restart = rs ? (int64_t)parse_id(rs) : j->restart_count;
    int64_t off = os ? (int64_t)parse_id(os) : 0;
    if (task >= j->ntasks || (ts && task == 0 && strcmp(ts, "0") != 0)) {
        al__reply_error(req, 400, "bad_request", "task must be 0..%d",
                        j->ntasks - 1);
        return;
    }
    char *path = log_path(ctl, j->id, (int)task, (int)restart);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    req->status = 200;
    req->text = al_xstrdup("");
    req->text_len = 0;
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > off) {
        size_t n = (size_t)(st.st_size - off);
        if (n > MAX_LOG_READ)
            n = MAX_LOG_READ;
        char *buf = al_xmalloc(n + 1);
        ssize_t r = pread(fd, buf, n, off);
        if (r > 0) {
            free(req->text);
            req->text = buf;
            req->text_len = (size_t)r;
        } else {
            free(buf);
        }
    }
    close(fd);
}

/* ------------------------------------------------------------------ */
/* Queues                                                             */

static void
api_queue_list(al_ctl_t *ctl, al__req_t *req)
{
    json_t *a = json_array();
    for (int i = 0; i < ctl->nqueues; i++)
        json_array_append_new(a, al__queue_json(&ctl->queues[i], true));
    reply(req, 200, json_pack("{s:o}", "queues", a));
}

static void
api_queue_get(al_ctl_t *ctl, al__req_t *req)
{
    al__queue_t *q = al__ctl_queue(ctl, req->cap[0]);
    if (q == NULL) {
        al__reply_error(req, 404, "not_found", "no queue '%s'", req->cap[0]);
        return;
    }
    reply(req, 200, al__queue_json(q, true));
}

static bool
queue_has_jobs(al_ctl_t *ctl, const char *name)
{
    for (uint64_t i = 0; i < ctl->njobs; i++) {
        const al__job_t *j = ctl->jobs[i];
        if (j != NULL && j->state <= JS_RUNNING && strcmp(j->queue, name) == 0)
            return true;
    }
    return false;
}

/* True when queue `name` is `q` or one of its ancestors: making it q's
 * parent would close a cycle (queues that are each other's parent, which
 * then could never be deleted). */
static bool
queue_in_chain(al_ctl_t *ctl, const char *q, const char *name)
{
    for (int steps = 0; q != NULL && steps <= ctl->nqueues; steps++) {
        if (strcmp(q, name) == 0)
            return true;
        const al__queue_t *up = al__ctl_queue(ctl, q);
        q = up != NULL ? up->parent : NULL;
    }
    return false;
}

/* Creates (POST, name in the body) or replaces (PUT, name in the path). */
static void
queue_put(al_ctl_t *ctl, al__req_t *req, bool create)
{
    if (!json_is_object(req->body)) {
        al__reply_error(req, 400, "bad_request",
                        "the body must be a JSON queue object");
        return;
    }
    if (!create)
        json_object_set_new(req->body, "name", json_string(req->cap[0]));
    al__queue_t q;
    char *cause = NULL;
    if (al__queue_from_json(req->body, &q, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    al__queue_t *old = al__ctl_queue(ctl, q.name);
    const char *err = NULL;
    int status = 400;
    if (create && old != NULL) {
        err = "queue already exists; use PUT to change it";
        status = 409;
    } else if (!create && old == NULL) {
        err = "no such queue";
        status = 404;
    } else if (q.parent != NULL && al__ctl_queue(ctl, q.parent) == NULL) {
        err = "parent queue does not exist";
    } else if (q.parent != NULL && strcmp(q.parent, q.name) == 0) {
        err = "a queue cannot be its own parent";
    } else if (q.parent != NULL && queue_in_chain(ctl, q.parent, q.name)) {
        err = "the parent is below this queue (queues cannot form a cycle)";
    } else if (q.parent != NULL && queue_has_jobs(ctl, q.parent)) {
        err = "parent queue holds jobs; only leaf queues hold jobs";
        status = 409;
    }
    if (err != NULL) {
        al__reply_error(req, status,
                        status == 404   ? "not_found"
                        : status == 409 ? "conflict"
                                        : "bad_request",
                        "queue %s: %s", q.name, err);
        free(q.name);
        free(q.parent);
        return;
    }
    al__store_put_queue(ctl, &q);
    reply(req, create ? 201 : 200, al__queue_json(&q, false));
    if (old != NULL) {
        char *oname = old->name, *oparent = old->parent;
        q.usage = old->usage;
        q.share = old->share;
        *old = q;
        free(oname);
        free(oparent);
    } else {
        ctl->queues =
            al_xreallocarray(ctl->queues, (size_t)ctl->nqueues + 1, sizeof q);
        ctl->queues[ctl->nqueues++] = q;
    }
    ctl->queue_gen++;
    al__ctl_touch(ctl);
    req->mutating = true;
}

static void
api_queue_create(al_ctl_t *ctl, al__req_t *req)
{
    queue_put(ctl, req, true);
}

static void
api_queue_update(al_ctl_t *ctl, al__req_t *req)
{
    queue_put(ctl, req, false);
}

static void
api_queue_delete(al_ctl_t *ctl, al__req_t *req)
{
    al__queue_t *q = al__ctl_queue(ctl, req->cap[0]);
    if (q == NULL) {
        al__reply_error(req, 404, "not_found", "no queue '%s'", req->cap[0]);
        return;
    }
    for (int i = 0; i < ctl->nqueues; i++) {
        if (ctl->queues[i].parent != NULL &&
            strcmp(ctl->queues[i].parent, q->name) == 0) {
            al__reply_error(req, 409, "conflict",
                            "queue '%s' has sub-queues; delete them first",
                            q->name);
            return;
        }
    }
    if (queue_has_jobs(ctl, q->name)) {
        al__reply_error(req, 409, "conflict",
                        "queue '%s' has pending or running jobs", q->name);
        return;
    }
    al__store_del_queue(ctl, q->name);
    json_t *o = json_pack("{s:s}", "deleted", q->name);
    free(q->name);
    free(q->parent);
    *q = ctl->queues[--ctl->nqueues];
    ctl->queue_gen++;
    al__ctl_touch(ctl);
    req->mutating = true;
    reply(req, 200, o);
}

/* ------------------------------------------------------------------ */
/* Nodes                                                              */

/* The API form of a node: its stored form plus what runs on it.  A GPU's
 * job is named for admins and for the job's owner only (users see their
 * own jobs); others see the GPU in use. */
static json_t *
node_view(al_ctl_t *ctl, int idx, const al__req_t *req)
{
    const al__node_t *n = &ctl->nodes[idx];
    json_t *o = al__node_json(ctl, n);
    json_t *gpus = json_object_get(o, "gpus");
    int used = 0;
    for (size_t i = 0; i < ctl->nrunning; i++) {
        const al__job_t *j = ctl->running[i];
        if (j->tasks == NULL)
            continue;
        for (int t = 0; t < j->ntasks; t++) {
            if (j->tasks[t].node != idx || j->tasks[t].done)
                continue;
            for (int d = 0; d < n->ngpus; d++) {
                if (!(j->tasks[t].devices & ((uint64_t)1 << d)))
                    continue;
                used++;
                json_t *g = json_array_get(gpus, (size_t)d);
                if (is_admin(req) || strcmp(j->user, req->user) == 0)
                    json_object_set_new(g, "job",
                                        json_integer((json_int_t)j->id));
                json_object_set_new(g, "busy", json_true());
            }
        }
    }
    json_object_set_new(o, "gpus_used", json_integer(used));
    /* Telemetry of real GPUs, as last sampled by the agent. */
    int64_t now_ms = al_clock_ms();
    for (int d = 0; d < n->ngpus; d++) {
        const al__gpu_sample_t *x = &n->gpus[d].sample;
        json_t *g = json_array_get(gpus, (size_t)d);
        if (x->at_ms == 0 || g == NULL)
            continue;
        const struct {
            const char *key;
            int64_t v;
        } f[] = {
            { "util", x->util },         { "mem_util", x->mem_util },
            { "mem_used", x->mem_used }, { "temp_c", x->temp_c },
            { "power_mw", x->power_mw },
        };
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (f[k].v >= 0)
                json_object_set_new(g, f[k].key,
                                    json_integer((json_int_t)f[k].v));
        json_object_set_new(g, "sampled_ms_ago",
                            json_integer((json_int_t)(now_ms - x->at_ms)));
    }
    json_object_set_new(
        o, "last_seen_ms_ago",
        json_integer((json_int_t)(al_clock_mono_ms() - n->last_seen)));
    return o;
}

static void
api_node_list(al_ctl_t *ctl, al__req_t *req)
{
    json_t *a = json_array();
    for (int i = 0; i < ctl->nnodes; i++)
        json_array_append_new(a, node_view(ctl, i, req));
    reply(req, 200, json_pack("{s:o}", "nodes", a));
}

static void
drain_resume(al_ctl_t *ctl, al__req_t *req, bool drain)
{
    int i = al__ctl_node_index(ctl, req->cap[0]);
    if (i < 0) {
        al__reply_error(req, 404, "not_found", "no node '%s'", req->cap[0]);
        return;
    }
    ctl->nodes[i].drained = drain;
    ctl->nodes[i].dirty = true;
    al__ctl_touch(ctl);
    req->mutating = true;
    reply(req, 200, node_view(ctl, i, req));
}

static void
api_node_drain(al_ctl_t *ctl, al__req_t *req)
{
    drain_resume(ctl, req, true);
}

static void
api_node_resume(al_ctl_t *ctl, al__req_t *req)
{
    drain_resume(ctl, req, false);
}

/* ------------------------------------------------------------------ */
/* Agents                                                             */

static void
api_agent_register(al_ctl_t *ctl, al__req_t *req)
{
    al__node_t n;
    char *cause = NULL;
    if (!json_is_object(req->body) ||
        al__node_from_json(req->body, &n, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s",
                        cause ? cause : "the body must be a node object");
        free(cause);
        return;
    }
    int i = al__ctl_node_index(ctl, n.name);
    if (i >= 0) {
        al__node_t *old = &ctl->nodes[i];
        n.drained = old->drained;
        n.parked = old->parked;
        old->parked = NULL;
        /* Its jobs still run there (a restarted agent adopts them). */
        n.runs = old->runs;
        n.nruns = old->nruns;
        n.runs_cap = old->runs_cap;
        old->runs = NULL;
        al__node_fini(old);
        *old = n;
    } else {
        i = al__ctl_add_node(ctl, &n);
    }
    al__node_t *np = &ctl->nodes[i];
    np->state = NS_READY;
    np->last_seen = al_clock_mono_ms();
    np->dirty = true;
    al__ctl_node_changed(ctl, i);
    al_info("node %s registered: %d GPUs%s, %lld millicores, %lld bytes",
            np->name, np->ngpus, np->emulated ? " (emulated)" : "",
            (long long)np->cpu_milli, (long long)np->mem_bytes);
    al__ctl_touch(ctl);
    req->mutating = true;
    reply(req, 200,
          json_pack("{s:s, s:I}", "node", np->name, "grace_ms",
                    (json_int_t)ctl->opts.grace_ms));
}

/* Appends a chunk of the output of task `task` of job j's run `restart`
 * that starts at offset `off` to the server's copy; returns the size of the
 * copy afterwards. */
static int64_t
append_log(al_ctl_t *ctl, al__job_t *j, int task, int restart, int64_t off,
           const char *b64)
{
    if (b64 == NULL) /* nothing to add: only tell how much we have */
        return al__ctl_log_size(ctl, j, task, restart);
    char *path = log_path(ctl, j->id, task, restart);
    struct stat st;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    free(path);
    if (fd < 0)
        return 0;
    int64_t size = fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0;
    unsigned char *data;
    size_t n;
    if (off <= size && al_b64_decode(b64, &data, &n) == 0) {
        if (off + (int64_t)n > size) {
            size_t skip = (size_t)(size - off);
            ssize_t w = write(fd, data + skip, n - skip);
            if (w > 0)
                size += w;
        }
        free(data);
    }
    close(fd);
    al__ctl_log_grew(j, task, restart, size);
    return size;
}

/* Member key of o if it is an integer in [lo, hi], else def. */
static int64_t
int_in(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t def)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > hi)
        return def;
    return json_integer_value(v);
}

/* Member key of o as an int, clamped to the range of int; def when absent
 * or not an integer.  Clamped, not cut: a huge exit code stays non-zero. */
static int
int_clamped(const json_t *o, const char *key, int def)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return def;
    json_int_t x = json_integer_value(v);
    return x < INT_MIN ? INT_MIN : x > INT_MAX ? INT_MAX : (int)x;
}

int
al__sync_parse(const json_t *b, al__sync_t *s, char **cause)
{
    const char *node = al_json_str(b, "node", NULL);
    if (node == NULL)
        return fail(cause, AL_EINVAL,
                    al_xstrdup("node not registered; register first"));
    json_t *reported = json_object_get(b, "tasks");
    size_t n = json_array_size(reported);
    al__sync_t tmp = { .node = node, .wait_ms = al_json_int(b, "wait_ms", 0) };
    tmp.tasks = al_xcalloc(n + 1, sizeof *tmp.tasks);
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(reported, i);
        al__sync_task_t *st = &tmp.tasks[tmp.ntasks++];
        st->job = (uint64_t)int_in(t, "job", 1, INT64_MAX, 0);
        st->task = (int)int_in(t, "task", 0, INT_MAX, -1);
        st->restart = (int)int_in(t, "restart", 0, INT_MAX, -1);
        st->exited = strcmp(al_json_str(t, "state", ""), "exited") == 0;
        st->exit_code = int_clamped(t, "exit_code", 0);
        st->signal = int_clamped(t, "signal", 0);
        st->log_off = al_json_int(t, "log_off", 0);
        st->log = al_json_str(t, "log", NULL);
    }
    json_t *gpus = json_object_get(b, "gpus");
    size_t ng = json_array_size(gpus);
    tmp.index = al_xcalloc(ng + 1, sizeof *tmp.index);
    tmp.samples = al_xcalloc(ng + 1, sizeof *tmp.samples);
    for (size_t i = 0; i < ng; i++) {
        json_t *g = json_array_get(gpus, i);
        al__gpu_sample_t *x = &tmp.samples[tmp.nsamples];
        tmp.index[tmp.nsamples++] =
            (int)int_in(g, "index", 0, AL_MAX_DEVICES - 1, -1);
        x->util = (int)int_in(g, "util", 0, 100, -1);
        x->mem_util = (int)int_in(g, "mem_util", 0, 100, -1);
        x->temp_c = (int)int_in(g, "temp_c", 0, 1000, -1);
        x->mem_used = int_in(g, "mem_used", 0, INT64_MAX, -1);
        x->power_mw = int_in(g, "power_mw", 0, INT64_MAX, -1);
    }
    *s = tmp;
    return 0;
}

void
al__sync_fini(al__sync_t *s)
{
    free(s->tasks);
    free(s->index);
    free(s->samples);
    s->tasks = NULL;
    s->index = NULL;
    s->samples = NULL;
    s->ntasks = s->nsamples = 0;
}

static void
api_agent_sync(al_ctl_t *ctl, al__req_t *req)
{
    al__sync_t s;
    int ni = -1;
    req->directs = true;
    if (al__sync_parse(req->body, &s, NULL) == 0) {
        ni = al__ctl_node_index(ctl, s.node);
        if (ni < 0)
            al__sync_fini(&s);
    }
    if (ni < 0) {
        al__reply_error(req, 409, "unknown_node",
                        "node not registered; register first");
        return;
    }
    al__node_t *n = &ctl->nodes[ni];
    n->last_seen = al_clock_mono_ms();
    if (n->state == NS_DOWN) {
        al_info("node %s is back", n->name);
        n->state = NS_READY;
        n->dirty = true;
        al__ctl_touch(ctl);
    }
    int64_t now_ms = al_clock_ms();
    for (size_t k = 0; k < s.nsamples; k++)
        if (s.index[k] >= 0 && s.index[k] < n->ngpus && !n->emulated) {
            n->gpus[s.index[k]].sample = s.samples[k];
            n->gpus[s.index[k]].sample.at_ms = now_ms;
        }
    /* What the agent has: the desired set need not repeat those specs. */
    n->nknown = 0;
    for (size_t i = 0; i < s.ntasks; i++) {
        const al__sync_task_t *t = &s.tasks[i];
        if (t->job == 0 || t->task < 0 || t->restart < 0)
            continue;
        if (n->nknown == n->known_cap) {
            n->known_cap = n->known_cap ? 2 * n->known_cap : 16;
            n->known =
                al_xreallocarray(n->known, n->known_cap, sizeof *n->known);
        }
        n->known[n->nknown++] = (al__task_key_t){ t->job, t->task, t->restart };
    }
    json_t *acks = json_array();
    bool urgent = false, exits = false; /* exits: it reported new ends */
    for (size_t i = 0; i < s.ntasks; i++) {
        const al__sync_task_t *t = &s.tasks[i];
        al__job_t *j = al__ctl_job(ctl, t->job);
        int task = t->task, restart = t->restart;
        if (j == NULL || task < 0 || task >= j->ntasks || restart < 0) {
            /* A task of no job we know (a store restored from a backup,
             * say): acknowledge its exit and all its output, so that the
             * agent forgets it rather than report it forever; not being
             * wanted, it is stopped if it runs. */
            if (t->job != 0 && task >= 0 && restart >= 0)
                json_array_append_new(
                    acks,
                    json_pack("{s:I, s:i, s:i, s:I}", "job", (json_int_t)t->job,
                              "task", task, "restart", restart, "log_off",
                              (json_int_t)(INT64_MAX / 2)));
            continue;
        }
        int64_t size = append_log(ctl, j, task, restart, t->log_off, t->log);
        /* Acknowledge what the agent does not know yet: an exit, output it
         * sent, or a copy whose size differs from what it thinks we have.
         * A running task with nothing new needs no ack (most of them, and
         * an ack for each on every sync was much of a sync's cost). */
        if (t->exited || t->log != NULL || t->log_off != size)
            json_array_append_new(acks, json_pack("{s:I, s:i, s:i, s:I}", "job",
                                                  (json_int_t)t->job, "task",
                                                  task, "restart", restart,
                                                  "log_off", (json_int_t)size));
        if (t->log != NULL)
            urgent = true;
        if (!t->exited)
            continue;
        urgent = true;
        if (j->state != JS_RUNNING || restart != j->restart_count ||
            j->tasks == NULL || j->tasks[task].node != ni ||
            j->tasks[task].done)
            continue;
        al__task_t *tk = &j->tasks[task];
        tk->done = true;
        exits = true;
        tk->exit_code = t->exit_code;
        tk->signal = t->signal;
        al__ctl_node_changed(ctl, ni);
        al__ctl_dirty(ctl, j);
        char *d = tk->signal ? al_xasprintf("task %d killed by signal %d", task,
                                            tk->signal)
                             : al_xasprintf("task %d exited with code %d", task,
                                            tk->exit_code);
        al__store_event(ctl, j->id, al_clock_ms(), "task_exit", d);
        if (tk->exit_code != 0 || tk->signal != 0) {
            j->exit_code = tk->exit_code;
            j->signal = tk->signal;
            al__ctl_set_state(ctl, j, JS_FAILED, "failed", d);
        } else {
            bool all = true;
            for (int k = 0; k < j->ntasks; k++)
                all = all && j->tasks[k].done;
            if (all)
                al__ctl_set_state(ctl, j, JS_COMPLETED, "completed",
                                  "all tasks exited with code 0");
        }
        free(d);
    }
    /* The agent gave up on its previous poll (one of its tasks ended, say):
     * answer it now, whether this one is answered at once or parked.  An
     * agent waits for that answer on its other connection before using it
     * again (al_http_conn_t.pending). */
    al__ctl_answer_parked(ctl, ni);
    /* Answer at once when the agent must start something it lacks (a
     * task this sync did not report: n->known is what it reported). */
    int lacking = 0;
    json_t *desired = al__ctl_desired(ctl, ni, &lacking);
    if (lacking > 0)
        urgent = true;
    /* A node counts as alive from sync to sync: answer within half the
     * node timeout so that an idle agent is never taken for a dead one. */
    int64_t wait = s.wait_ms;
    al__sync_fini(&s);
    if (wait > LONG_POLL_MAX_MS)
        wait = LONG_POLL_MAX_MS;
    if (wait > ctl->opts.node_timeout_ms / 2)
        wait = ctl->opts.node_timeout_ms / 2;
    /* What it reported changed the state: its acks must not go out before
     * that is committed (a 503 instead if the commit fails). */
    if (json_array_size(acks) > 0)
        req->mutating = true;
    /* Ended tasks free room for others: answer after the scheduling cycle
     * that is due (in a few ms), so that the answer names the tasks taking
     * their place and the agent has no second sync to make for them. */
    if (exits && lacking == 0 && ctl->sched_dirty &&
        ctl->sched_due - al_clock_mono_ms() <= DEFER_MAX_MS) {
        json_decref(desired);
        req->acks = acks;
        req->after_cycle = true;
        req->deadline = ctl->sched_due + 1;
        al__ctl_park(ctl, ni, req);
        return;
    }
    if (urgent || wait <= 0 || n->changed) {
        json_object_set_new(desired, "acks", acks);
        reply(req, 200, desired);
        return;
    }
    json_decref(desired);
    json_decref(acks);
    req->deadline = al_clock_mono_ms() + wait;
    al__ctl_park(ctl, ni, req);
}

/* ------------------------------------------------------------------ */
/* Routes                                                             */

const al__route_t al__routes[] = {
    { .method = "GET",
      .path = "/v1/healthz",
      .role = ROLE_NONE,
      .fn = api_healthz },
    { .method = "GET",
      .path = "/v1/whoami",
      .role = ROLE_USER,
      .fn = api_whoami },
    { .method = "POST",
      .path = "/v1/tokens",
      .role = ROLE_ADMIN,
      .fn = api_token_create },
    { .method = "POST",
      .path = "/v1/jobs",
      .role = ROLE_USER,
      .fn = api_job_submit },
    { .method = "GET",
      .path = "/v1/jobs",
      .role = ROLE_USER,
      .fn = api_job_list },
    { .method = "GET",
      .path = "/v1/jobs/*",
      .role = ROLE_USER,
      .fn = api_job_get },
    { .method = "POST",
      .path = "/v1/jobs/*/cancel",
      .role = ROLE_USER,
      .fn = api_job_cancel },
    { .method = "POST",
      .path = "/v1/jobs/*/hold",
      .role = ROLE_USER,
      .fn = api_job_hold },
    { .method = "POST",
      .path = "/v1/jobs/*/release",
      .role = ROLE_USER,
      .fn = api_job_release },
    { .method = "GET",
      .path = "/v1/jobs/*/logs",
      .role = ROLE_USER,
      .fn = api_job_logs },
    { .method = "GET",
      .path = "/v1/queues",
      .role = ROLE_USER,
      .fn = api_queue_list },
    { .method = "POST",
      .path = "/v1/queues",
      .role = ROLE_ADMIN,
      .fn = api_queue_create },
    { .method = "GET",
      .path = "/v1/queues/*",
      .role = ROLE_USER,
      .fn = api_queue_get },
    { .method = "PUT",
      .path = "/v1/queues/*",
      .role = ROLE_ADMIN,
      .fn = api_queue_update },
    { .method = "DELETE",
      .path = "/v1/queues/*",
      .role = ROLE_ADMIN,
      .fn = api_queue_delete },
    { .method = "GET",
      .path = "/v1/nodes",
      .role = ROLE_USER,
      .fn = api_node_list },
    { .method = "POST",
      .path = "/v1/nodes/*/drain",
      .role = ROLE_ADMIN,
      .fn = api_node_drain },
    { .method = "POST",
      .path = "/v1/nodes/*/resume",
      .role = ROLE_ADMIN,
      .fn = api_node_resume },
    { .method = "POST",
      .path = "/v1/agent/register",
      .role = ROLE_AGENT,
      .fn = api_agent_register },
    { .method = "POST",
      .path = "/v1/agent/sync",
      .role = ROLE_AGENT,
      .fn = api_agent_sync },
};
const int al__nroutes = sizeof al__routes / sizeof al__routes[0];

/* Matches path against pattern segment by segment; '*' captures one
 * non-empty segment into cap (malloc()ed). */
static bool
path_match(const char *pattern, const char *path, char **cap)
{
    int ncap = 0;
    const char *p = pattern, *s = path;
    char *got[2] = { NULL, NULL };
    while (*p != '\0' && *s != '\0') {
        if (*p == '*') {
            size_t n = strcspn(s, "/");
            if (n == 0 || ncap == 2)
                break;
            got[ncap++] = al_xstrndup(s, n);
            p++;
            s += n;
        } else if (*p == *s) {
            p++;
            s++;
        } else {
            break;
        }
    }
    if (*p != '\0' || (*s != '\0' && strcmp(s, "/") != 0)) {
        free(got[0]);
        free(got[1]);
        return false;
    }
    cap[0] = got[0];
    cap[1] = got[1];
    return true;
}

const al__route_t *
al__route_match(const char *method, const char *path, char **cap, bool *path_ok)
{
    *path_ok = false;
    for (int i = 0; i < al__nroutes; i++) {
        char *c[2];
        if (!path_match(al__routes[i].path, path, c))
            continue;
        if (strcmp(al__routes[i].method, method) == 0) {
            cap[0] = c[0];
            cap[1] = c[1];
            return &al__routes[i];
        }
        *path_ok = true;
        free(c[0]);
        free(c[1]);
    }
    return NULL;
}
