/*
 * elasticdoc.c -- an elastic job's fields: max_tasks in a job body,
 * min_tasks and max_tasks (and checkpointing, which consolidation reads)
 * in its document, and what they give the snapshot.  Apart from elastic.c
 * because doc.c, under state.c, calls these, and elastic.c calls state.c.
 *
 * May call: common (json) and the core's types; jobbody.c, doc.c and
 * cycle.c call it.
 */
#include <stdlib.h>

#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

int
al__elastic_body(const json_t *b, int64_t tasks, int *max, char **cause)
{
    const json_t *m = json_object_get(b, "max_tasks");
    *max = 0;
    if (m == NULL || json_is_null(m))
        return 0;
    if (!json_is_integer(m) || json_integer_value(m) < tasks ||
        json_integer_value(m) > AL_JOB_MAX_TASKS)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("max_tasks must be a whole number from "
                                     "tasks (%lld) to %d",
                                     (long long)tasks, AL_JOB_MAX_TASKS));
    if (json_integer_value(m) > tasks)
        *max = (int)json_integer_value(m);
    return 0;
}

void
al__elastic_doc(const al__job_t *j, json_t *o)
{
    if (j->checkpointing)
        json_object_set_new(o, "checkpointing", json_true());
    if (j->max_tasks > 0) {
        json_object_set_new(o, "min_tasks", json_integer(j->min_tasks));
        json_object_set_new(o, "max_tasks", json_integer(j->max_tasks));
    }
}

void
al__elastic_read(const json_t *o, al__job_t *j)
{
    j->checkpointing = al_json_bool(o, "checkpointing", false);
    int64_t lo = al_json_int(o, "min_tasks", 0);
    int64_t hi = al_json_int(o, "max_tasks", 0);
    if (lo >= 1 && hi > lo && hi <= AL_JOB_MAX_TASKS) {
        j->min_tasks = (int)lo;
        j->max_tasks = (int)hi;
    }
}

void
al__elastic_snap(const al__job_t *j, al_job_t *s)
{
    if (j->max_tasks > 0) {
        s->min_tasks = j->min_tasks;
        s->max_tasks = j->max_tasks;
    }
}
