/*
 * queuepolicy.c -- a queue's per-GPU-model quotas and minimum runtime, in
 * its JSON form (API and store alike), and the minimum runtimes by job
 * class (the controller's --min-runtime):
 *
 *   "model_quotas": {"H100-80GB": {"deserved": 8, "limit": 12}, ...}
 *       GPUs of that model (as its nodes report it, `allot nodes`): the
 *       queue's non-preemptible work may hold at most `deserved` of them,
 *       all its work at most `limit` (-1: no limit); the core's
 *       al_model_quota_t.  A job that names no model lands on the models
 *       whose limits leave room.
 *   "min_runtime": seconds a job of the queue runs before it may be
 *       preempted or reclaimed (0: none); a job's minimum is the larger of
 *       its queue's and its class's.
 *
 * May call: table.c (a job's queue) and common's JSON and allocation
 * helpers.  Called by doc.c
 * (the queue's form), cycle.c (the snapshot), server.c (the option) and
 * api_jobs.c (a job's minimum, shown).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

/* Most models a queue names; a minimum runtime of a week at most. */
#define MAX_MODEL_QUOTAS 64
#define MIN_RUNTIME_MAX 604800 /* a week */

void
al__queue_policy_fini(al__queue_t *q)
{
    for (int i = 0; i < q->nmquotas; i++)
        free((char *)q->mquotas[i].model);
    free(q->mquotas);
    q->mquotas = NULL;
    q->nmquotas = 0;
}

void
al__queue_policy_json(const al__queue_t *q, json_t *o)
{
    if (q->min_runtime > 0)
        json_object_set_new(o, "min_runtime",
                            json_integer((json_int_t)q->min_runtime));
    if (q->nmquotas == 0)
        return;
    json_t *m = json_object();
    for (int i = 0; i < q->nmquotas; i++) {
        const al_model_quota_t *mq = &q->mquotas[i];
        json_object_set_new(
            m, mq->model,
            json_pack("{s:o, s:o}", "deserved",
                      json_real((double)mq->deserved / AL_GPU_MILLI), "limit",
                      mq->limit == AL_UNLIMITED
                          ? json_integer(-1)
                          : json_real((double)mq->limit / AL_GPU_MILLI)));
    }
    json_object_set_new(o, "model_quotas", m);
}

/* A model name: 1..64 printable characters without '=', ',' or spaces (the
 * CLI's gpu.MODEL=N syntax). */
static bool
model_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '=' || *p == ',' || *p == 127)
            return false;
    return true;
}

/* GPUs in member key of o (absent or null: def) into milli-GPUs; -1 for
 * "no limit" when unlimited_ok.  false when not a number in range. */
static bool
gpus(const json_t *o, const char *key, double def, bool unlimited_ok,
     int64_t *out)
{
    json_t *v = json_object_get(o, key);
    double x = def;
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_number(v))
            return false;
        x = json_number_value(v);
    }
    if (unlimited_ok && x == -1) {
        *out = AL_UNLIMITED;
        return true;
    }
    if (!isfinite(x) || x < 0 || x * AL_GPU_MILLI > AL_QUOTA_MAX)
        return false;
    *out = (int64_t)llround(x * AL_GPU_MILLI);
    return true;
}

static int
read_models(const json_t *m, al_model_quota_t **out, int *nout, char **cause)
{
    *out = NULL;
    *nout = 0;
    if (m == NULL || json_is_null(m))
        return 0;
    if (!json_is_object(m) || json_object_size(m) > MAX_MODEL_QUOTAS)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("model_quotas must be an object of at "
                                     "most %d GPU models, each {deserved, "
                                     "limit}",
                                     MAX_MODEL_QUOTAS));
    al_model_quota_t *v = al_xcalloc(json_object_size(m) + 1, sizeof *v);
    int n = 0;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)m, k, x)
    {
        const char *bad = NULL;
        const char *key;
        json_t *y;
        if (json_is_object(x))
            json_object_foreach(x, key, y)
            {
                (void)y;
                if (bad == NULL && strcmp(key, "deserved") != 0 &&
                    strcmp(key, "limit") != 0)
                    bad = key;
            }
        int64_t des = 0, lim = AL_UNLIMITED;
        if (!model_name(k) || !json_is_object(x) || bad != NULL ||
            !gpus(x, "deserved", 0, false, &des) ||
            !gpus(x, "limit", -1, true, &lim)) {
            for (int i = 0; i < n; i++)
                free((char *)v[i].model);
            free(v);
            return al__fail(
                cause, AL_EINVAL,
                al_xasprintf("model_quotas.%.64s must be {deserved: GPUs >= "
                             "0, limit: GPUs or -1 for none}, for a model "
                             "name of 1-64 characters without spaces, '=' "
                             "or ','",
                             k));
        }
        v[n].model = al_xstrdup(k);
        v[n].deserved = des;
        v[n].limit = lim;
        n++;
    }
    *out = v;
    *nout = n;
    return 0;
}

int
al__queue_policy_parse(const json_t *o, al__queue_t *q, char **cause)
{
    json_t *mr = json_object_get(o, "min_runtime");
    double secs = 0;
    if (mr != NULL && !json_is_null(mr)) {
        secs = json_is_number(mr) ? json_number_value(mr) : -1;
        if (secs < 0 || secs > MIN_RUNTIME_MAX || secs != floor(secs))
            return al__fail(cause, AL_EINVAL,
                            al_xasprintf("min_runtime must be whole seconds, "
                                         "0 (none) to %d",
                                         MIN_RUNTIME_MAX));
    }
    al_model_quota_t *m;
    int n;
    int rc = read_models(json_object_get(o, "model_quotas"), &m, &n, cause);
    if (rc != 0)
        return rc;
    q->mquotas = m;
    q->nmquotas = n;
    q->min_runtime = (int64_t)secs;
    return 0;
}

int
al__min_runtime_config(const char *spec, int64_t *out, char **cause)
{
    for (int c = 0; c < al__njclasses; c++)
        out[c] = 0;
    if (spec == NULL || spec[0] == '\0')
        return 0;
    char *copy = al_xstrdup(spec), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); rc == 0 && t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        int c = -1;
        if (eq != NULL) {
            *eq = '\0';
            for (int k = 0; k < al__njclasses; k++)
                if (strcmp(al__jclasses[k].name, t) == 0)
                    c = k;
        }
        char *end = NULL;
        long long v = eq != NULL ? strtoll(eq + 1, &end, 10) : -1;
        if (c < 0 || end == eq + 1 || *end != '\0' || v < 0 ||
            v > MIN_RUNTIME_MAX)
            rc = al__fail(cause, AL_EINVAL,
                          al_xasprintf("--min-runtime wants CLASS=SECONDS,... "
                                       "(classes train, build, inference; "
                                       "0 to %d s), not '%s'",
                                       MIN_RUNTIME_MAX, spec));
        else
            out[c] = v;
    }
    free(copy);
    return rc;
}

int64_t
al__job_min_runtime(const al_ctl_t *ctl, const al__job_t *j)
{
    int64_t m = ctl->class_min_runtime[j->cls];
    int qi = al__job_qidx(ctl, j);
    if (qi >= 0 && ctl->queues[qi].min_runtime > m)
        m = ctl->queues[qi].min_runtime;
    return m;
}
