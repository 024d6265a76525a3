/*
 * pipedoc.c -- a pipeline's stage in a job's documents (the API's and the
 * store's): "pipeline" (the pipeline's id), "stage" and "pipeline_name",
 * written when the job is a stage and read back at a restart, so that a
 * pipeline survives the controller as its jobs do.
 *
 * May call: common's JSON.  Called by doc.c.
 */
#include <string.h>

#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

void
al__pipeline_doc(const al__job_t *j, json_t *o)
{
    if (j->pipeline == 0 || j->stage == NULL)
        return;
    json_object_set_new(o, "pipeline", json_integer((json_int_t)j->pipeline));
    json_object_set_new(o, "stage", json_string(j->stage));
    if (j->pipeline_name != NULL)
        json_object_set_new(o, "pipeline_name", json_string(j->pipeline_name));
}

void
al__pipeline_read(const json_t *o, al__job_t *j)
{
    json_int_t p = al_json_int(o, "pipeline", 0);
    const char *st = al_json_str(o, "stage", NULL);
    const char *nm = al_json_str(o, "pipeline_name", NULL);
    /* A pipeline's id is its first stage's: never after the job. */
    if (p <= 0 || (uint64_t)p > j->id || st == NULL)
        return;
    j->pipeline = (uint64_t)p;
    j->stage = al_xstrdup(st);
    j->pipeline_name = nm != NULL ? al_xstrdup(nm) : NULL;
}
