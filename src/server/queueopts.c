/*
 * queueopts.c -- a queue's settings for build sessions, in its JSON form
 * (API and store alike): `max_build_gpus`, the most GPUs its build jobs
 * may hold together (-1: no cap; the core enforces it, see
 * al_queue_t.build_capped), and idle reclaim's `idle_timeout` (seconds a
 * build job's GPUs may stay idle before it ends; 0: off) and `idle_util`
 * (the utilisation, in percent, under which a GPU counts as idle).
 *
 * May call: common's JSON and allocation helpers only.  Called by doc.c,
 * which reads and writes the rest of the queue.
 */
#include <math.h>
#include <string.h>

#include "server_int.h"
#include "xmalloc.h"

/* Limits: a week of idleness, and a cap as large as any quota. */
#define IDLE_TIMEOUT_MAX (7 * 24 * 3600)

void
al__queue_opts_json(const al__queue_t *q, json_t *o)
{
    json_object_set_new(o, "max_build_gpus",
                        q->build_capped
                            ? json_real((double)q->build_cap / AL_GPU_MILLI)
                            : json_integer(-1));
    json_object_set_new(o, "idle_timeout",
                        json_integer((json_int_t)q->idle_timeout));
    json_object_set_new(o, "idle_util", json_integer(q->idle_util));
}

/* Member key of o as a number in *v: false when present (not null) and
 * not a number. */
static bool
number(const json_t *o, const char *key, double *v, bool *given)
{
    json_t *x = json_object_get(o, key);
    *given = x != NULL && !json_is_null(x);
    if (!*given)
        return true;
    if (!json_is_number(x))
        return false;
    *v = json_number_value(x);
    return isfinite(*v);
}

int
al__queue_opts_parse(const json_t *o, al__queue_t *q, char **cause)
{
    double cap = -1, timeout = 0, util = AL_IDLE_UTIL_DEFAULT;
    bool gc, gt, gu;
    if (!number(o, "max_build_gpus", &cap, &gc) ||
        (gc && cap != -1 && (cap < 0 || cap > AL_QUOTA_MAX / AL_GPU_MILLI)))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("max_build_gpus must be a number of GPUs "
                                   ">= 0, or -1 for no cap"));
    if (!number(o, "idle_timeout", &timeout, &gt) || timeout < 0 ||
        timeout > IDLE_TIMEOUT_MAX || timeout != floor(timeout))
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("idle_timeout must be whole seconds, "
                                     "0 (off) to %d",
                                     IDLE_TIMEOUT_MAX));
    if (!number(o, "idle_util", &util, &gu) || util < 0 || util > 100 ||
        util != floor(util))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("idle_util must be a whole percentage, "
                                   "0 to 100"));
    q->build_capped = cap >= 0;
    q->build_cap = cap >= 0 ? (int64_t)llround(cap * AL_GPU_MILLI) : 0;
    q->idle_timeout = (int64_t)timeout;
    q->idle_util = (int)util;
    return 0;
}
