/*
 * pipeline.c -- pipelines through the API: POST /v1/pipelines creates a
 * pipeline and all its stages, one job each, in one request (so in one
 * commit: all or nothing), GET /v1/pipelines lists them, GET
 * /v1/pipelines/ID shows one with its stages' states and reasons, and
 * POST /v1/pipelines/ID/cancel and /retry end it or run again its stages
 * that failed or were cancelled (what waits on them follows).
 *
 * A pipeline is its stages: jobs with consecutive ids whose "pipeline" is
 * the first one's id (the pipeline's id).  A stage after others depends on
 * them as `allot submit --after` does (when: success, afterok: the core
 * sees the edge and orders by critical path and looks ahead), or by
 * Slurm's afternotok (when: failure) or afterany (when: always).  Each
 * stage gets ALLOT_PIPELINE_ID, ALLOT_STAGE and ALLOT_PIPELINE_DIR (a
 * directory the client made for the stages' artefacts) in its
 * environment.
 *
 * May call: pipefile.c (the file), jobbody.c (each stage's job), state.c
 * (cancel, requeue), table.c, doc.c, reason.c, store.c (events), req.c,
 * members.c (who may use a queue).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "clock.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

static uint64_t
parse_pid(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return *s != '\0' && *end == '\0' ? (uint64_t)v : 0;
}

/* The stages of pipeline p (its first job), into *out (the caller frees
 * the array); their number.  A stage that is a job array is its parent:
 * its elements' ids follow it. */
static int
stages_of(al_ctl_t *ctl, const al__job_t *p, al__job_t ***out)
{
    int n = 0, cap = 8;
    uint64_t elements_end = 0;
    /* An array of pointers: each element is sizeof(void *). */
    al__job_t **v = al_xmalloc((size_t)cap * sizeof(void *));
    for (uint64_t id = p->id; id <= ctl->njobs; id++) {
        if (id <= elements_end)
            continue;
        al__job_t *j = al__ctl_job(ctl, id);
        if (j == NULL || j->pipeline != p->id)
            break;
        if (j->array != NULL)
            elements_end = j->id + (uint64_t)j->array->as.count;
        if (n == cap) {
            cap *= 2;
            v = al_xrealloc(v, (size_t)cap * sizeof(void *));
        }
        v[n++] = j;
    }
    *out = v;
    return n;
}

/* Whether stage j waits for what can never happen (a dependency failed). */
static bool
never(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->state != JS_PENDING && j->state != JS_HELD)
        return false;
    if (al__depend_state(ctl, j) == AL_DEPS_NEVER)
        return true;
    for (int d = 0; d < j->nafter; d++) {
        const al__job_t *dj = al__ctl_job(ctl, j->after[d]);
        if (dj == NULL || al__jstate_failed(dj->state) ||
            dj->state == JS_CANCELLED)
            return true;
    }
    return false;
}

/* Whether stage j failed only because what it waited for can never
 * happen: a `when: failure` stage whose inputs completed (its condition
 * not met: no failure of the pipeline's), or one after a stage that
 * failed or was cancelled (that stage says how the pipeline ended). */
static bool
failed_unrun_one(const al__job_t *j)
{
    return j != NULL && j->state == JS_FAILED && j->reason != NULL &&
           strstr(j->reason, "(DependencyNeverSatisfied)") != NULL;
}

/* The same for a stage that is a job array: every element failed so. */
static bool
failed_unrun(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->state != JS_FAILED)
        return false;
    if (j->array == NULL)
        return failed_unrun_one(j);
    for (int64_t k = 0; k < j->array->as.count; k++)
        if (!failed_unrun_one(al__ctl_job(ctl, j->id + 1 + (uint64_t)k)))
            return false;
    return true;
}

/* The pipeline's state from its stages': running while a stage runs or
 * can still run, then failed (a stage failed or ran out of memory),
 * cancelled, or completed.
 * A stage that failed unrun (failed_unrun) decides nothing itself: a
 * pipeline whose cleanup for a failure did not run has completed. */
static const char *
pipeline_state(al_ctl_t *ctl, al__job_t *const *st, int n)
{
    bool active = false, running = false, failed = false, cancelled = false;
    for (int i = 0; i < n; i++) {
        const al__job_t *j = st[i];
        if (j->state == JS_RUNNING)
            running = true;
        else if (j->state <= JS_RUNNING && !never(ctl, j))
            active = true;
        else if (al__jstate_failed(j->state) && !failed_unrun(ctl, j))
            failed = true;
        else if (j->state == JS_CANCELLED)
            cancelled = true;
    }
    return running     ? "running"
           : active    ? "pending"
           : failed    ? "failed"
           : cancelled ? "cancelled"
                       : "completed";
}

static const char *
stage_name_of(al__job_t *const *st, int n, uint64_t id)
{
    for (int i = 0; i < n; i++)
        if (st[i]->id == id)
            return st[i]->stage;
    return NULL;
}

static json_t *
pipeline_json(al_ctl_t *ctl, al__job_t *p, bool full)
{
    al__job_t **st;
    int n = stages_of(ctl, p, &st);
    int done = 0;
    int64_t end = 0;
    for (int i = 0; i < n; i++) {
        done += st[i]->state == JS_COMPLETED;
        if (st[i]->end_ms > end)
            end = st[i]->end_ms;
    }
    const char *state = pipeline_state(ctl, st, n);
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:i, s:i, s:I}", "id", (json_int_t)p->id, "name",
        p->pipeline_name ? p->pipeline_name : "pipeline", "user", p->user,
        "state", state, "stages", n, "completed", done, "submit_ms",
        (json_int_t)p->submit_ms);
    bool ended = strcmp(state, "running") != 0 && strcmp(state, "pending") != 0;
    json_object_set_new(o, "end_ms", json_integer(ended ? end : 0));
    if (full) {
        json_t *a = json_array();
        for (int i = 0; i < n; i++) {
            const al__job_t *j = st[i];
            json_t *needs = json_array();
            const char *when = "success";
            for (int d = 0; d < j->nafter; d++) {
                const char *nm = stage_name_of(st, n, j->after[d]);
                if (nm != NULL)
                    json_array_append_new(needs, json_string(nm));
            }
            for (int d = 0; d < j->ndeps; d++) {
                const char *nm = stage_name_of(st, n, j->deps[d].job);
                if (nm != NULL)
                    json_array_append_new(needs, json_string(nm));
                when =
                    j->deps[d].kind == AL_DEP_AFTERNOTOK ? "failure" : "always";
            }
            char buf[256];
            const char *reason =
                never(ctl, j) ? "a stage it needs ended so that it never runs"
                              : al__job_reason(ctl, j, buf, sizeof buf);
            json_t *s =
                json_pack("{s:s, s:I, s:s, s:o, s:s, s:I, s:I, s:i, s:i}",
                          "name", j->stage, "job", (json_int_t)j->id, "state",
                          al__jstate_names[j->state], "needs", needs, "when",
                          when, "start_ms", (json_int_t)j->start_ms, "end_ms",
                          (json_int_t)j->end_ms, "exit_code", j->exit_code,
                          "restarts", j->restart_count);
            if (reason != NULL)
                json_object_set_new(s, "reason", json_string(reason));
            json_object_set_new(s, "gpus", json_integer(j->gpus));
            json_array_append_new(a, s);
        }
        json_object_set_new(o, "stage_list", a);
    }
    free(st);
    return o;
}

/* The pipeline the first capture names, visible to the caller, or NULL
 * after a 404 or 403. */
static al__job_t *
pipeline_of_req(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *p = al__ctl_job(ctl, parse_pid(req->cap[0]));
    if (p == NULL || p->pipeline != p->id) {
        al__reply_error(req, 404, "not_found", "no pipeline %s", req->cap[0]);
        return NULL;
    }
    if (!al__req_admin(req) && strcmp(p->user, req->user) != 0) {
        al__reply_error(req, 403, "forbidden",
                        "pipeline %s is not yours; only its owner or an "
                        "admin may use it",
                        req->cap[0]);
        return NULL;
    }
    return p;
}

/* A stage's job from its body, with the pipeline's environment; NULL
 * after a reply. */
static al__job_t *
stage_job(al_ctl_t *ctl, al__req_t *req, const al__pstage_t *ps,
          const json_t *env, const char *cwd, const char *dir, uint64_t pid)
{
    json_t *b = json_deep_copy(ps->body);
    json_t *e = json_object();
    if (json_is_object(env))
        json_object_update(e, (json_t *)env);
    json_object_update(e, json_object_get(b, "env"));
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%llu", (unsigned long long)pid);
    json_object_set_new(e, "ALLOT_PIPELINE_ID", json_string(idbuf));
    json_object_set_new(e, "ALLOT_STAGE", json_string(ps->name));
    if (dir != NULL)
        json_object_set_new(e, "ALLOT_PIPELINE_DIR", json_string(dir));
    json_object_set_new(b, "env", e);
    if (cwd != NULL)
        json_object_set_new(b, "cwd", json_string(cwd));
    al__job_t *j = NULL;
    char *cause = NULL;
    int rc = al__job_parse(b, req->user, false, &j, &cause);
    /* A stage that names no queue goes to its user's default queue, as a
     * job does (api_jobs.c). */
    bool named = json_object_get(b, "queue") != NULL &&
                 !json_is_null(json_object_get(b, "queue"));
    json_decref(b);
    if (rc == 0 && !named) {
        free(j->queue);
        j->queue = al_xstrdup(al__user_default_queue(ctl, j->user));
    }
    if (rc != 0) {
        if (ps->line > 0)
            al__reply_error(req, 400, "bad_request", "line %d: stage '%s': %s",
                            ps->line, ps->name, cause);
        else
            al__reply_error(req, 400, "bad_request", "stage '%s': %s", ps->name,
                            cause);
        free(cause);
        return NULL;
    }
    const char *why = NULL;
    if (al__ctl_queue(ctl, j->queue) == NULL)
        why = "no such queue; `allot queues` lists them";
    for (int i = 0; why == NULL && i < ctl->nqueues; i++)
        if (ctl->queues[i].parent != NULL &&
            strcmp(ctl->queues[i].parent, j->queue) == 0)
            why = "the queue has sub-queues; name a leaf queue";
    if (why != NULL) {
        al__reply_error(req, 400, "bad_request", "stage '%s': queue '%s': %s",
                        ps->name, j->queue, why);
        al__job_free(j);
        return NULL;
    }
    if (!al__req_admin(req) &&
        !al__member_of(ctl, al__ctl_queue(ctl, j->queue), j->user)) {
        al__reply_error(req, 403, "forbidden",
                        "stage '%s': user %s is not a member of queue '%s'; "
                        "an admin adds members (allot queue set %s "
                        "--add-member %s)",
                        ps->name, j->user, j->queue, j->queue, j->user);
        al__job_free(j);
        return NULL;
    }
    return j;
}

void
al__api_pipeline_submit(al_ctl_t *ctl, al__req_t *req)
{
    const json_t *b = req->body;
    static const char *const keys[] = { "file", "set", "cwd", "env", "dir" };
    const char *bad =
        json_is_object(b)
            ? al__unknown_member(b, keys, sizeof keys / sizeof *keys)
            : NULL;
    json_t *file = json_object_get(b, "file");
    json_t *sets = json_object_get(b, "set");
    json_t *cwd = json_object_get(b, "cwd"), *dir = json_object_get(b, "dir");
    if (!json_is_object(b) || bad != NULL || !json_is_string(file) ||
        (sets != NULL && !json_is_object(sets)) ||
        (cwd != NULL && !json_is_string(cwd)) ||
        (dir != NULL && !json_is_string(dir))) {
        al__reply_error(req, 400, "bad_request",
                        "the body must be {\"file\": the pipeline file's text, "
                        "\"set\": {parameters}, \"cwd\", \"env\", \"dir\"}%s%s",
                        bad ? ": unknown field " : "", bad ? bad : "");
        return;
    }
    al__pfile_t *pf = NULL;
    char *cause = NULL;
    if (al__pfile_parse(json_string_value(file), json_string_length(file), sets,
                        &pf, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    /* Every stage is checked before any exists: all or nothing. */
    int n = pf->nstages;
    al__job_t **jobs = al_xcalloc((size_t)n + 1, sizeof(void *));
    uint64_t pid = ctl->njobs + 1;
    bool ok = true;
    for (int k = 0; k < n && ok; k++) {
        const al__pstage_t *ps = &pf->stages[pf->order[k]];
        jobs[k] =
            stage_job(ctl, req, ps, json_object_get(b, "env"),
                      json_string_value(cwd), json_string_value(dir), pid);
        ok = jobs[k] != NULL;
    }
    if (!ok) {
        for (int k = 0; k < n; k++)
            al__job_free(jobs[k]);
        free(jobs);
        al__pfile_free(pf);
        return;
    }
    /* Stage pf->order[k] becomes the next id, after the elements of an
     * array stage before it. */
    uint64_t *id_of = al_xcalloc((size_t)n + 1, sizeof *id_of);
    uint64_t next = pid;
    for (int k = 0; k < n; k++) {
        id_of[pf->order[k]] = next;
        next += 1 + (jobs[k]->array != NULL ? (uint64_t)jobs[k]->array->as.count
                                            : 0);
    }
    int64_t now = al_clock_ms();
    json_t *list = json_array();
    for (int k = 0; k < n; k++) {
        const al__pstage_t *ps = &pf->stages[pf->order[k]];
        al__job_t *j = jobs[k];
        j->id = id_of[pf->order[k]];
        j->pipeline = pid;
        j->stage = al_xstrdup(ps->name);
        j->pipeline_name = al_xstrdup(pf->name);
        if (ps->when == AL_WHEN_SUCCESS) {
            free(j->after);
            j->nafter = ps->nneeds;
            j->after = al_xcalloc((size_t)ps->nneeds + 1, sizeof *j->after);
            for (int d = 0; d < ps->nneeds; d++)
                j->after[d] = id_of[ps->needs[d]];
        } else {
            free(j->deps);
            j->ndeps = ps->nneeds;
            j->deps = al_xcalloc((size_t)ps->nneeds + 1, sizeof *j->deps);
            for (int d = 0; d < ps->nneeds; d++) {
                j->deps[d].kind = ps->when == AL_WHEN_FAILURE
                                      ? AL_DEP_AFTERNOTOK
                                      : AL_DEP_AFTERANY;
                j->deps[d].job = id_of[ps->needs[d]];
            }
        }
        al__ctl_put_job(ctl, j);
        j->submit_ms = j->eligible_ms = now;
        al__ctl_dirty(ctl, j);
        al__store_event(ctl, j->id, now, "submitted", "with its pipeline");
        json_array_append_new(list, json_pack("{s:s, s:I}", "name", ps->name,
                                              "job", (json_int_t)j->id));
    }
    al__ctl_touch(ctl);
    req->mutating = true;
    json_t *o = json_pack("{s:I, s:s, s:o}", "id", (json_int_t)pid, "name",
                          pf->name, "stage_list", list);
    free(id_of);
    free(jobs);
    al__pfile_free(pf);
    al__reply(req, 201, o);
}

void
al__api_pipeline_list(al_ctl_t *ctl, al__req_t *req)
{
    json_t *a = json_array();
    bool admin = al__req_admin(req);
    for (uint64_t id = 1; id <= ctl->njobs; id++) {
        al__job_t *j = al__ctl_job(ctl, id);
        if (j == NULL || j->pipeline != j->id ||
            (!admin && strcmp(j->user, req->user) != 0))
            continue;
        json_array_append_new(a, pipeline_json(ctl, j, false));
    }
    al__reply(req, 200, a);
}

void
al__api_pipeline_get(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *p = pipeline_of_req(ctl, req);
    if (p != NULL)
        al__reply(req, 200, pipeline_json(ctl, p, true));
}

void
al__api_pipeline_cancel(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *p = pipeline_of_req(ctl, req);
    if (p == NULL)
        return;
    al__job_t **st;
    int n = stages_of(ctl, p, &st), k = 0;
    char *d = al_xasprintf("cancelled with its pipeline by %s", req->user);
    for (int i = 0; i < n; i++) {
        if (st[i]->state > JS_RUNNING)
            continue;
        if (st[i]->array != NULL)
            al__array_cancel(ctl, st[i], d);
        else
            al__ctl_set_state(ctl, st[i], JS_CANCELLED, "cancelled", d);
        k++;
    }
    free(d);
    free(st);
    if (k > 0)
        req->mutating = true;
    al__reply(req, 200, pipeline_json(ctl, p, true));
}

void
al__api_pipeline_retry(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *p = pipeline_of_req(ctl, req);
    if (p == NULL)
        return;
    al__job_t **st;
    int n = stages_of(ctl, p, &st), k = 0;
    /* Only stages that failed unrun (failed_unrun: a cleanup whose
     * condition was not met, say) are nothing to retry: they would only
     * fail again.  With a stage that did fail, they go back too. */
    bool real = false;
    for (int i = 0; i < n; i++)
        real = real || (st[i]->state == JS_CANCELLED && st[i]->array == NULL) ||
               (al__jstate_failed(st[i]->state) && st[i]->array == NULL &&
                !failed_unrun(ctl, st[i]));
    char *d = al_xasprintf("retried with its pipeline by %s", req->user);
    for (int i = 0; i < n && real; i++) {
        al__job_t *j = st[i];
        /* An array's elements end with it: it is not run again. */
        if ((!al__jstate_failed(j->state) && j->state != JS_CANCELLED) ||
            j->array != NULL)
            continue;
        j->exit_code = 0;
        j->signal = 0;
        j->end_ms = 0;
        free(j->reason);
        j->reason = NULL;
        al__ctl_requeue(ctl, j, "retried", d);
        /* Ended jobs lie below the table's mark of active ones. */
        if (j->id - 1 < ctl->active_lo)
            ctl->active_lo = j->id - 1;
        k++;
    }
    free(d);
    free(st);
    if (k == 0) {
        al__reply_error(req, 409, "conflict",
                        "pipeline %s has no failed or cancelled stage to "
                        "run again (array stages are not run again)",
                        req->cap[0]);
        return;
    }
    req->mutating = true;
    al__reply(req, 200, pipeline_json(ctl, p, true));
}
