/*
 * lifecycledoc.c -- a job's lifecycle fields: `retries` in a job body (how
 * many times a job that fails by exit code is run again), and in its
 * document `retries`, `retried` (how many times it was), `retry_at_ms`
 * (not before then: the back-off) and `suspended`.  Apart from
 * lifecycle.c because jobbody.c and doc.c, under state.c, call these, and
 * lifecycle.c calls state.c.
 *
 * May call: common (json); jobbody.c and doc.c call it.
 */
#include <stdlib.h>

#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

int
al__lifecycle_body(const json_t *b, int *retries, char **cause)
{
    const json_t *r = json_object_get(b, "retries");
    *retries = 0;
    if (r == NULL || json_is_null(r))
        return 0;
    if (!json_is_integer(r) || json_integer_value(r) < 0 ||
        json_integer_value(r) > AL_JOB_MAX_RETRIES)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("retries must be a whole number from 0 "
                                     "to %d",
                                     AL_JOB_MAX_RETRIES));
    *retries = (int)json_integer_value(r);
    return 0;
}

void
al__lifecycle_doc(const al__job_t *j, json_t *o)
{
    if (j->retries > 0) {
        json_object_set_new(o, "retries", json_integer(j->retries));
        json_object_set_new(o, "retried", json_integer(j->retried));
    }
    if (j->retry_at_ms > 0)
        json_object_set_new(o, "retry_at_ms",
                            json_integer((json_int_t)j->retry_at_ms));
    if (j->suspended)
        json_object_set_new(o, "suspended", json_true());
}

void
al__lifecycle_read(const json_t *o, al__job_t *j)
{
    int64_t r = al_json_int(o, "retries", 0);
    int64_t d = al_json_int(o, "retried", 0);
    j->retries = r > 0 && r <= AL_JOB_MAX_RETRIES ? (int)r : 0;
    j->retried = d > 0 && d <= j->retries ? (int)d : 0;
    int64_t at = al_json_int(o, "retry_at_ms", 0);
    j->retry_at_ms = at > 0 ? at : 0;
    j->suspended = al_json_bool(o, "suspended", false);
}
