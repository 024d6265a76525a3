/*
 * svcbody.c -- a service's settings: a create or update body, or the
 * stored form, checked field by field (svc.h's al__svc_conf_t), and a
 * replica's job body made from them.
 *
 * May call: jobbody.c (a replica's job body is checked as any job's),
 * doc.c (al__unknown_member).  Called by svc.c and api_svc.c; fuzzed by
 * tests/fuzz/fuzz_svcbody.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "svc.h"
#include "xmalloc.h"

/* The members that make a replica's job. */
static const char *const spec_keys[] = {
    "command",      "env",       "cwd",       "queue",     "gpus",
    "gpu_fraction", "cpu_milli", "mem_bytes", "gpu_model",
};
#define NSPEC (sizeof spec_keys / sizeof spec_keys[0])

/* The integer settings: member, field, bounds, default. */
static const struct {
    const char *key;
    size_t off;
    int64_t min, max, def;
} ints[] = {
    { "min", offsetof(al__svc_conf_t, min), 0, AL_SVC_MAX_REPLICAS, 0 },
    { "port", offsetof(al__svc_conf_t, port), 0, 65535, 0 },
    { "max", offsetof(al__svc_conf_t, max), 1, AL_SVC_MAX_REPLICAS, 8 },
    { "window_s", offsetof(al__svc_conf_t, window_s), 1, 3600, 6 },
    { "scale_down_delay_s", offsetof(al__svc_conf_t, down_s), 0, 86400, 60 },
    { "idle_s", offsetof(al__svc_conf_t, idle_s), 0, 604800, 300 },
    { "drain_s", offsetof(al__svc_conf_t, drain_s), 0, 3600, 30 },
    { "queue_max", offsetof(al__svc_conf_t, queue_max), 0, 100000, 1000 },
    { "queue_timeout_s", offsetof(al__svc_conf_t, queue_timeout_s), 1, 3600,
      120 },
    { "start_timeout_s", offsetof(al__svc_conf_t, start_timeout_s), 1, 86400,
      600 },
};
#define NINTS (sizeof ints / sizeof ints[0])

void
al__svc_conf_fini(al__svc_conf_t *c)
{
    json_decref(c->spec);
    free(c->ready_path);
    memset(c, 0, sizeof *c);
}

static void
defaults(al__svc_conf_t *c)
{
    memset(c, 0, sizeof *c);
    c->spec = json_object();
    c->ready_path = al_xstrdup("/");
    c->target = 4;
    for (size_t i = 0; i < NINTS; i++)
        *(int64_t *)(void *)((char *)c + ints[i].off) = ints[i].def;
}

/* A replica's job body from spec: what al__job_parse() must accept. */
json_t *
al__svc_job_body(const al__svc_conf_t *c, const char *name, int idx, int port)
{
    json_t *b = json_deep_copy(c->spec);
    json_t *env = json_object_get(b, "env");
    if (!json_is_object(env)) {
        env = json_object();
        json_object_set_new(b, "env", env);
    }
    char v[32];
    snprintf(v, sizeof v, "%d", port);
    json_object_set_new(env, "PORT", json_string(v));
    snprintf(v, sizeof v, "%d", idx);
    json_object_set_new(env, "ALLOT_REPLICA", json_string(v));
    json_object_set_new(env, "ALLOT_SERVICE", json_string(name));
    json_object_set_new(b, "class", json_string("inference"));
    char *jn = al_xasprintf("%s.r%d", name, idx);
    json_object_set_new(b, "name", json_string(jn));
    free(jn);
    return b;
}

/* Body b's members over *c; NULL, or what is wrong (malloc()ed). */
static char *
apply_fields(const json_t *b, al__svc_conf_t *c)
{
    char *msg = NULL;
    for (size_t i = 0; i < NSPEC && msg == NULL; i++) {
        json_t *v = json_object_get(b, spec_keys[i]);
        if (v == NULL)
            continue;
        if (json_is_null(v))
            json_object_del(c->spec, spec_keys[i]);
        else
            json_object_set(c->spec, spec_keys[i], v);
    }
    for (size_t i = 0; i < NINTS && msg == NULL; i++) {
        json_t *v = json_object_get(b, ints[i].key);
        if (v == NULL)
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < ints[i].min ||
            json_integer_value(v) > ints[i].max)
            msg =
                al_xasprintf("%s must be an integer in %lld..%lld", ints[i].key,
                             (long long)ints[i].min, (long long)ints[i].max);
        else
            *(int64_t *)(void *)((char *)c + ints[i].off) =
                json_integer_value(v);
    }
    json_t *v = json_object_get(b, "target_concurrency");
    if (msg == NULL && v != NULL) {
        double t = json_number_value(v);
        if (!json_is_number(v) || !(t >= 0.01 && t <= 100000))
            msg = al_xstrdup("target_concurrency must be a number in "
                             "0.01..100000");
        else
            c->target = t;
    }
    v = json_object_get(b, "public");
    if (msg == NULL && v != NULL) {
        if (!json_is_boolean(v))
            msg = al_xstrdup("public must be true or false");
        else
            c->public = json_is_true(v);
    }
    v = json_object_get(b, "ready_path");
    if (msg == NULL && v != NULL) {
        const char *p = json_string_value(v);
        bool ok = p != NULL && p[0] == '/' && strlen(p) < 256;
        for (const char *q = p; ok && *q != '\0'; q++)
            ok = (unsigned char)*q > ' ' && *q != 0x7f;
        if (!ok)
            msg = al_xstrdup("ready_path must be a path starting with '/', "
                             "without spaces, under 256 bytes");
        else {
            free(c->ready_path);
            c->ready_path = al_xstrdup(p);
        }
    }
    return msg;
}

/* The settings as a whole; NULL, or what is wrong (malloc()ed). */
static char *
check_whole(const al__svc_conf_t *c, const char *owner)
{
    char *msg = NULL;
    if (c->min > c->max)
        msg = al_xasprintf("min (%lld) is above max (%lld)", (long long)c->min,
                           (long long)c->max);
    if (msg == NULL && json_object_get(c->spec, "command") == NULL)
        msg = al_xstrdup("a service needs a command");
    if (msg == NULL) {
        /* The replicas' jobs must be good jobs. */
        json_t *jb = al__svc_job_body(c, "x", 0, 1);
        al__job_t *j = NULL;
        char *why = NULL;
        if (al__job_parse(jb, owner != NULL ? owner : "nobody", false, &j,
                          &why) != 0)
            msg = why != NULL ? why : al_xstrdup("not a valid job");
        else if (j->array != NULL || j->ntasks != 1 || j->state != JS_PENDING)
            msg = al_xstrdup("a replica is one task");
        al__job_free(j);
        json_decref(jb);
    }
    return msg;
}

int
al__svc_conf_apply(const json_t *b, const al__svc_conf_t *base,
                   const char *owner, al__svc_conf_t *out, bool *spec_changed,
                   char **cause)
{
    if (!json_is_object(b))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("the body must be a JSON object"));
    static const char *const known[] = {
        "name",
        "command",
        "env",
        "cwd",
        "queue",
        "gpus",
        "gpu_fraction",
        "cpu_milli",
        "mem_bytes",
        "gpu_model",
        "ready_path",
        "port",
        "min",
        "max",
        "target_concurrency",
        "public",
        "window_s",
        "scale_down_delay_s",
        "idle_s",
        "drain_s",
        "queue_max",
        "queue_timeout_s",
        "start_timeout_s",
    };
    const char *unk =
        al__unknown_member(b, known, sizeof known / sizeof known[0]);
    if (unk != NULL)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("unknown member '%s'", unk));
    al__svc_conf_t c;
    if (base == NULL) {
        defaults(&c);
    } else {
        c = *base;
        c.spec = json_deep_copy(base->spec);
        c.ready_path = al_xstrdup(base->ready_path);
    }
    char *msg = apply_fields(b, &c);
    if (msg == NULL)
        msg = check_whole(&c, owner);
    if (msg != NULL) {
        al__svc_conf_fini(&c);
        return al__fail(cause, AL_EINVAL, msg);
    }
    if (spec_changed != NULL)
        *spec_changed = base == NULL || !json_equal(base->spec, c.spec);
    *out = c;
    return 0;
}

json_t *
al__svc_conf_json(const al__svc_conf_t *c)
{
    json_t *o = json_deep_copy(c->spec);
    json_object_set_new(o, "ready_path", json_string(c->ready_path));
    json_object_set_new(o, "target_concurrency", json_real(c->target));
    json_object_set_new(o, "public", json_boolean(c->public));
    for (size_t i = 0; i < NINTS; i++)
        json_object_set_new(
            o, ints[i].key,
            json_integer(*(const int64_t *)(const void *)((const char *)c +
                                                          ints[i].off)));
    return o;
}
