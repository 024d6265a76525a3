/*
 * steps.c -- a job's steps, Slurm's `srun` inside a job: their start and
 * end as srun reports them (POST /v1/jobs/ID/steps), kept in the store's
 * job_steps table (one row per job, run and step), and their JSON for GET
 * /v1/jobs/ID ("steps") and GET /v1/steps (every job's from an id on,
 * what sacct reads).  The controller takes the times from its own clock.
 * A job of several tasks runs its script once per task, and each task's
 * srun reports the same step: a step counts its reporters (`open`), and
 * ends when the last of them has ended, with the highest exit code and
 * signal among them.
 *
 * May call: table.c (the job of an id), store.c (the named statements
 * "step_start", "step_end", "steps_of", "steps_from"), req.c, common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "xmalloc.h"

int
al__step_parse(const json_t *b, al__step_t *s, char **cause)
{
    const char *why = NULL;
    json_t *step = json_object_get(b, "step");
    json_t *ev = json_object_get(b, "event");
    json_t *name = json_object_get(b, "name");
    json_t *tasks = json_object_get(b, "tasks");
    json_t *code = json_object_get(b, "exit_code");
    json_t *sig = json_object_get(b, "signal");
    const char *e = json_string_value(ev);
    al__step_t v = { 0 };
    if (!json_is_object(b))
        why = "the body must be a JSON object";
    else if (!json_is_integer(step) || json_integer_value(step) < 0 ||
             json_integer_value(step) > AL__STEP_MAX)
        why = "step must be an integer 0..999999";
    else if (e == NULL || (strcmp(e, "start") != 0 && strcmp(e, "end") != 0))
        why = "event must be \"start\" or \"end\"";
    else if (name != NULL &&
             (!json_is_string(name) || json_string_length(name) == 0 ||
              json_string_length(name) > AL__STEP_NAME_MAX ||
              strlen(json_string_value(name)) != json_string_length(name)))
        why = "name must be a string of 1..255 bytes";
    else if (tasks != NULL &&
             (!json_is_integer(tasks) || json_integer_value(tasks) < 1 ||
              json_integer_value(tasks) > AL__STEP_MAX))
        why = "tasks must be an integer 1..999999";
    else if (code != NULL &&
             (!json_is_integer(code) || json_integer_value(code) < 0 ||
              json_integer_value(code) > 255))
        why = "exit_code must be an integer 0..255";
    else if (sig != NULL &&
             (!json_is_integer(sig) || json_integer_value(sig) < 0 ||
              json_integer_value(sig) > 127))
        why = "signal must be an integer 0..127";
    if (why != NULL) {
        if (cause != NULL)
            *cause = al_xstrdup(why);
        return AL_EINVAL;
    }
    v.step = (int)json_integer_value(step);
    v.end = strcmp(e, "end") == 0;
    v.name = name != NULL ? json_string_value(name) : NULL;
    v.tasks = tasks != NULL ? (int)json_integer_value(tasks) : 1;
    v.exit_code = code != NULL ? (int)json_integer_value(code) : 0;
    v.signal = sig != NULL ? (int)json_integer_value(sig) : 0;
    *s = v;
    return 0;
}

/* The job of the request's first capture (digits: what srun sends, its
 * SLURM_JOB_ID), its owner's or an admin's; NULL after replying. */
static al__job_t *
job_of(al_ctl_t *ctl, al__req_t *req)
{
    const char *s = req->cap[0];
    size_t n = strspn(s, "0123456789");
    al__job_t *j = n > 0 && n <= 19 && s[n] == '\0'
                       ? al__ctl_job(ctl, strtoull(s, NULL, 10))
                       : NULL;
    if (j == NULL) {
        al__reply_error(req, 404, "not_found", "no job %s", s);
        return NULL;
    }
    if (!al__req_admin(req) && strcmp(j->user, req->user) != 0) {
        al__reply_error(req, 403, "forbidden",
                        "job %s is not yours; only its owner or an admin may "
                        "use it",
                        s);
        return NULL;
    }
    return j;
}

void
al__api_job_step(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = job_of(ctl, req);
    if (j == NULL)
        return;
    al__step_t s;
    char *cause = NULL;
    if (al__step_parse(req->body, &s, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    if (!s.end && j->state != JS_RUNNING) {
        al__reply_error(req, 409, "conflict",
                        "job %llu is %s: a step starts in a running job",
                        (unsigned long long)j->id, al__jstate_names[j->state]);
        return;
    }
    char id[24], run[16], step[16], tasks[16], now[24], code[8], sig[8];
    snprintf(id, sizeof id, "%llu", (unsigned long long)j->id);
    snprintf(run, sizeof run, "%d", j->restart_count);
    snprintf(step, sizeof step, "%d", s.step);
    snprintf(tasks, sizeof tasks, "%d", s.tasks);
    snprintf(now, sizeof now, "%lld", (long long)al_clock_ms());
    snprintf(code, sizeof code, "%d", s.exit_code);
    snprintf(sig, sizeof sig, "%d", s.signal);
    int rc;
    if (!s.end) {
        const char *v[] = { id, run, step, s.name ? s.name : "", tasks, now };
        rc = al__store_write(ctl, "step_start", 6, v);
    } else {
        const char *v[] = { id, run, step, now, code, sig };
        rc = al__store_write(ctl, "step_end", 6, v);
    }
    if (rc != 0) {
        al__reply_error(req, 503, "unavailable", "the store failed");
        return;
    }
    req->mutating = true;
    al__reply(req, 200,
              json_pack("{s:I, s:i, s:s}", "job", (json_int_t)j->id, "step",
                        s.step, "event", s.end ? "end" : "start"));
}

/* The columns of a step row, as "steps_of" and "steps_from" give them. */
enum {
    C_JOB,
    C_RUN,
    C_STEP,
    C_NAME,
    C_TASKS,
    C_START,
    C_END,
    C_CODE,
    C_SIG,
    C_OPEN,
    C_N
};

typedef struct collect {
    al_ctl_t *ctl;
    json_t *list;
    bool with_job;
} collect_t;

/* A column's integer (the store wrote it: malformed reads as 0). */
static int
num(const char *s)
{
    long long v = strtoll(s, NULL, 10);
    return v < 0 ? 0 : v > AL__STEP_MAX ? AL__STEP_MAX : (int)v;
}

static int
step_row(void *arg, int ncols, const char *const *cols)
{
    collect_t *c = arg;
    if (ncols < C_N)
        return 0;
    for (int i = 0; i < C_N; i++)
        if (cols[i] == NULL)
            return 0;
    uint64_t job = strtoull(cols[C_JOB], NULL, 10);
    int run = num(cols[C_RUN]);
    if (c->with_job) {
        /* Only the job's latest run: a requeued job starts its steps
         * again from 0, as Slurm's. */
        const al__job_t *j = al__ctl_job(c->ctl, job);
        if (j == NULL || j->restart_count != run)
            return 0;
    }
    json_t *o = json_pack("{s:i, s:s, s:i, s:I, s:I, s:i, s:i, s:b}", "step",
                          num(cols[C_STEP]), "name", cols[C_NAME], "tasks",
                          num(cols[C_TASKS]), "start_ms",
                          (json_int_t)strtoll(cols[C_START], NULL, 10),
                          "end_ms", (json_int_t)strtoll(cols[C_END], NULL, 10),
                          "exit_code", num(cols[C_CODE]), "signal",
                          num(cols[C_SIG]), "running", num(cols[C_OPEN]) > 0);
    if (o == NULL) /* a name that is not UTF-8 text */
        return 0;
    if (c->with_job)
        json_object_set_new(o, "job", json_integer((json_int_t)job));
    json_array_append_new(c->list, o);
    return 0;
}

json_t *
al__steps_json(al_ctl_t *ctl, const al__job_t *j)
{
    char id[24], run[16];
    snprintf(id, sizeof id, "%llu", (unsigned long long)j->id);
    snprintf(run, sizeof run, "%d", j->restart_count);
    const char *v[] = { id, run };
    collect_t c = { ctl, json_array(), false };
    al__store_read(ctl, "steps_of", 2, v, step_row, &c);
    return c.list;
}

void
al__api_steps(al_ctl_t *ctl, al__req_t *req)
{
    const char *from = al__req_arg(req, "from");
    char *end = NULL;
    unsigned long long f = from != NULL ? strtoull(from, &end, 10) : 0;
    if (from != NULL && (from[0] < '0' || from[0] > '9' || *end != '\0')) {
        al__reply_error(req, 400, "bad_request",
                        "from must be a job id (a number)");
        return;
    }
    char id[24];
    snprintf(id, sizeof id, "%llu", f);
    const char *v[] = { id };
    collect_t c = { ctl, json_array(), true };
    if (al__store_read(ctl, "steps_from", 1, v, step_row, &c) != 0) {
        json_decref(c.list);
        al__reply_error(req, 503, "unavailable", "the store failed");
        return;
    }
    al__reply(req, 200, json_pack("{s:o}", "steps", c.list));
}
