/*
 * api_jobupdate.c -- POST /v1/jobs/ID/update: what may change in a
 * submitted job (Slurm's `scontrol update JobId=N ...`), with Slurm's
 * rules: a waiting job (pending or held) may change its time limit,
 * name, pool and dependencies; a running one its time limit and name; an
 * ended one nothing.  A user may lower a time limit, only an admin may
 * raise it (no limit counts as the highest).  A dependency on the job
 * itself, or one that closes a cycle of waiting jobs, is refused.  A job
 * array's update is its elements'.  Priority, Nice and NumNodes are
 * jobprio.c's.
 *
 * May call: api_jobs.c (the job a request names), table.c (the jobs a
 * dependency leads to), depend.c (checks of dependencies), pools.c (a pool's
 * name), state.c (marks, touch), jobprio.c (Priority, Nice, NumNodes), store.c
 * (the event), req.c, common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "clock.h"
#include "core/error.h"
#include "depspec.h"
#include "json.h"
#include "xmalloc.h"

/* A hundred years, as the longest time limit. */
#define MAX_LIMIT_S (100LL * 366 * 86400)

/* Whether limit b is above limit a (0: none, the highest). */
static bool
raises(int64_t a, int64_t b)
{
    return a > 0 && (b == 0 || b > a);
}

/* The most waiting jobs the search for a cycle of dependencies visits. */
#define CYCLE_MAX 4096

/* Whether job `self` waiting on deps would wait on itself: a dependency
 * on it, or through waiting jobs whose dependencies (and `after`) lead
 * back to it, as Slurm refuses ("Job dependency problem", "Circular job
 * dependency").  1 itself, 2 a cycle, 0 none. */
static int
circular(al_ctl_t *ctl, uint64_t self, const al_depspec_t *deps, int ndeps)
{
    uint64_t *seen = al_xcalloc(CYCLE_MAX, sizeof *seen);
    size_t n = 0, next = 0;
    int rc = 0;
    for (int i = 0; i < ndeps && rc == 0; i++) {
        if (deps[i].kind == AL_DEP_SINGLETON)
            continue;
        if (deps[i].job == self)
            rc = 1;
        else if (n < CYCLE_MAX)
            seen[n++] = deps[i].job;
    }
    while (rc == 0 && next < n) {
        const al__job_t *j = al__ctl_job(ctl, seen[next++]);
        if (j == NULL || j->state > JS_HELD)
            continue; /* ended or running: it waits on nothing */
        for (int i = 0; i < j->ndeps + j->nafter && rc == 0; i++) {
            uint64_t d = i < j->ndeps ? j->deps[i].job : j->after[i - j->ndeps];
            if (i < j->ndeps && j->deps[i].kind == AL_DEP_SINGLETON)
                continue;
            if (d == self) {
                rc = 2;
                break;
            }
            bool known = false;
            for (size_t k = 0; k < n && !known; k++)
                known = seen[k] == d;
            if (!known && n < CYCLE_MAX)
                seen[n++] = d;
        }
    }
    free(seen);
    return rc;
}

/* Whether j may wait on deps (what Dependency= gives it): 0, or the
 * status of the refusal with its code and *cause (caller frees). */
static int
deps_refusal(al_ctl_t *ctl, al__req_t *req, al__job_t *j, al_depspec_t *deps,
             int ndeps, const char **code, char **cause)
{
    int cyc = circular(ctl, j->id, deps, ndeps);
    if (cyc != 0) {
        *code = cyc == 1 ? "dependency" : "circular";
        *cause = al_xasprintf(cyc == 1 ? "job %llu cannot depend on itself"
                                       : "job %llu would wait on itself "
                                         "through the jobs it depends on",
                              (unsigned long long)j->id);
        return 400;
    }
    al_depspec_t *old = j->deps;
    int nold = j->ndeps;
    j->deps = deps;
    j->ndeps = ndeps;
    int status = al__depend_check(ctl, j, req->user, al__req_admin(req), cause);
    j->deps = old;
    j->ndeps = nold;
    *code = status == 403 ? "forbidden" : "bad_request";
    return status;
}

/* The first member of body b that an update cannot change, or NULL. */
static const char *
unknown_key(const json_t *b)
{
    static const char *const known[] = { "time_limit", "name",     "pool",
                                         "dependency", "priority", "nice",
                                         "nodes" };
    return al__unknown_member(b, known, sizeof known / sizeof known[0]);
}

/* Whether limit tl raises that of an element of job array p that has not
 * ended (each element may have a limit of its own). */
static bool
elements_raised(al_ctl_t *ctl, const al__job_t *p, int64_t tl)
{
    for (int64_t k = 0; p->array != NULL && k < p->array->as.count; k++) {
        const al__job_t *e = al__ctl_job(ctl, p->id + 1 + (uint64_t)k);
        if (e != NULL && e->state < JS_COMPLETED && raises(e->time_limit, tl))
            return true;
    }
    return false;
}

/* Job array p's update (its fields already changed) given to the elements
 * that have a job and have not ended, as Slurm updates every element: a
 * running one takes the time limit and name only.  Elements still to come
 * copy the parent's fields (array.c). */
static void
update_elements(al_ctl_t *ctl, al__job_t *p, bool tl, bool nm, bool pool,
                bool dep, int prio)
{
    for (int64_t k = 0; p->array != NULL && k < p->array->as.count; k++) {
        al__job_t *e = al__ctl_job(ctl, p->id + 1 + (uint64_t)k);
        if (e == NULL || e->state >= JS_COMPLETED)
            continue;
        bool waits = e->state <= JS_HELD;
        if (tl)
            e->time_limit = p->time_limit;
        al__jobprio_element(p, e, prio);
        if (nm) {
            free(e->name);
            e->name = al_xstrdup(p->name);
        }
        if (pool && waits) {
            free(e->pool);
            e->pool = p->pool != NULL ? al_xstrdup(p->pool) : NULL;
        }
        if (dep && waits) {
            free(e->deps);
            e->deps = p->ndeps > 0
                          ? al_xcalloc((size_t)p->ndeps, sizeof *e->deps)
                          : NULL;
            if (p->ndeps > 0)
                memcpy(e->deps, p->deps, (size_t)p->ndeps * sizeof *e->deps);
            e->ndeps = p->ndeps;
            e->nafter = 0;
        }
        e->why_valid = false;
        al__jobcounts_sync(ctl, e);
        al__ctl_dirty(ctl, e);
    }
}

void
al__api_job_update(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = al__api_job_req(ctl, req);
    if (j == NULL)
        return;
    const json_t *b = req->body;
    const char *key = unknown_key(b);
    if (key != NULL) {
        al__reply_error(req, 400, "bad_request",
                        "%s cannot be changed; time_limit, name, pool, "
                        "dependency, priority, nice and nodes can",
                        key);
        return;
    }
    json_t *tl = json_object_get(b, "time_limit");
    json_t *nm = json_object_get(b, "name");
    json_t *dp = json_object_get(b, "dependency");
    if (!json_is_object(b) || json_object_size(b) == 0) {
        al__reply_error(req, 400, "bad_request",
                        "the body must be an object of the fields to change");
        return;
    }
    if (tl != NULL && (!json_is_integer(tl) || json_integer_value(tl) < 0 ||
                       json_integer_value(tl) > MAX_LIMIT_S)) {
        al__reply_error(req, 400, "bad_request",
                        "time_limit must be seconds (0: none)");
        return;
    }
    if (nm != NULL &&
        (!json_is_string(nm) || json_string_length(nm) == 0 ||
         json_string_length(nm) > 255 ||
         strlen(json_string_value(nm)) != json_string_length(nm))) {
        al__reply_error(req, 400, "bad_request",
                        "name must be a string of 1..255 bytes");
        return;
    }
    char *pool = NULL, *constraint = NULL, *cause = NULL;
    /* "" is no pool (every node). */
    json_t *pv = json_object_get(b, "pool");
    json_t *pb = json_pack(
        "{s:O?}", "pool",
        json_is_string(pv) && json_string_length(pv) == 0 ? NULL : pv);
    int rc = al__pools_job_body(pb, &pool, &constraint, &cause);
    json_decref(pb);
    free(constraint);
    if (rc != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    al_depspec_t *deps = NULL;
    int ndeps = 0;
    if (dp != NULL &&
        (!json_is_string(dp) ||
         (json_string_length(dp) > 0 &&
          al_dep_parse(json_string_value(dp), &deps, &ndeps, &cause) != 0))) {
        al__reply_error(req, 400, "bad_request", "dependency: %s",
                        cause ? cause : "must be a string");
        free(cause);
        free(pool);
        return;
    }
    int status = 0;
    const char *code = NULL;
    if (j->state >= JS_COMPLETED) {
        status = 409;
        code = "ended";
        cause =
            al_xasprintf("job %llu is %s: it can no longer change",
                         (unsigned long long)j->id, al__jstate_names[j->state]);
    } else if (j->state == JS_RUNNING &&
               (json_object_get(b, "pool") != NULL || dp != NULL)) {
        status = 409;
        code = "not_pending";
        cause = al_xasprintf("job %llu is running: only its time limit and "
                             "name can change",
                             (unsigned long long)j->id);
    } else if (tl != NULL && !al__req_admin(req) &&
               (raises(j->time_limit, json_integer_value(tl)) ||
                elements_raised(ctl, j, json_integer_value(tl)))) {
        status = 403;
        code = "forbidden";
        cause =
            al_xasprintf("only an admin may raise a time limit (job "
                         "%llu's is %lld s)",
                         (unsigned long long)j->id, (long long)j->time_limit);
    }
    if (status == 0)
        status = al__jobprio_refusal(ctl, req, j, &code, &cause);
    if (status == 0 && dp != NULL && ndeps > 0)
        status = deps_refusal(ctl, req, j, deps, ndeps, &code, &cause);
    if (status != 0) {
        al__reply_error(req, status, code, "%s", cause);
        free(cause);
        free(deps);
        free(pool);
        return;
    }
    al_buf_t what = AL_BUF_INIT;
    if (tl != NULL) {
        j->time_limit = json_integer_value(tl);
        al_buf_printf(&what, "time limit %lld s", (long long)j->time_limit);
    }
    if (nm != NULL) {
        free(j->name);
        j->name = al_xstrdup(json_string_value(nm));
        al_buf_printf(&what, "%sname %s", what.len ? ", " : "", j->name);
    }
    if (json_object_get(b, "pool") != NULL) {
        free(j->pool);
        j->pool = pool != NULL && pool[0] != '\0' ? pool : NULL;
        if (j->pool != pool)
            free(pool);
        pool = NULL;
        al_buf_printf(&what, "%spool %s", what.len ? ", " : "",
                      j->pool ? j->pool : "(any)");
    }
    if (dp != NULL) {
        /* Slurm's Dependency= replaces them all: allot's own `after`
         * (afterok) too. */
        free(j->deps);
        j->deps = deps;
        j->ndeps = ndeps;
        j->nafter = 0;
        deps = NULL;
        al_buf_printf(&what, "%sdependency %s", what.len ? ", " : "",
                      json_string_value(dp)[0] ? json_string_value(dp)
                                               : "(none)");
    }
    bool hold = al__jobprio_apply(ctl, j, b, &what);
    free(pool);
    update_elements(ctl, j, tl != NULL, nm != NULL,
                    json_object_get(b, "pool") != NULL, dp != NULL,
                    al__jobprio_changes(b, j));
    al_buf_printf(&what, " by %s", req->user);
    j->why_valid = false;
    al__jobcounts_sync(ctl, j);
    al__ctl_dirty(ctl, j);
    al__store_event(ctl, j->id, al_clock_ms(), "updated", al_buf_cstr(&what));
    if (hold)
        al__jobprio_hold(ctl, j, req->user);
    al__ctl_touch(ctl);
    al_buf_fini(&what);
    req->mutating = true;
    al__reply(req, 200, al__job_json(ctl, j, false));
}
