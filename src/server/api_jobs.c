/*
 * api_jobs.c -- the handlers of /v1/jobs: submit, list, show (with its
 * history), cancel, hold, release, requeue and the output of a job's
 * tasks.  Run on the loop thread, which owns what they read and change.
 *
 * May call: array.c (arrays and their elements, "ID_INDEX"), members.c
 * (who may use a queue, a user's default queue), depend.c
 * (checks of dependencies), state.c
 * (every change of a job's state), table.c, jobbody.c
 * and doc.c (the forms), reason.c, store.c (events, history) and req.c.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_int.h"
#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "xmalloc.h"

#define MAX_LIST 1000
#define MAX_LOG_READ (4 << 20)

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

/* Whether the caller may see job j (its owner or an admin); replies 403
 * when not. */
static bool
visible(al__req_t *req, const al__job_t *j)
{
    if (al__req_admin(req) || strcmp(j->user, req->user) == 0)
        return true;
    al__reply_error(req, 403, "forbidden",
                    "job %s is not yours; only its owner or an admin may use "
                    "it",
                    req->cap[0]);
    return false;
}

/* The job named by the first capture, "ID" or an array's element
 * "ID_INDEX", visible to the caller, or NULL after replying 404/403.  An
 * element that has no job yet gets one when materialize is set (and its
 * array is active); otherwise NULL is returned with its JSON in *pending
 * (when pending is not NULL) and no reply set. */
static al__job_t *
job_of_req(al_ctl_t *ctl, al__req_t *req, bool materialize, json_t **pending)
{
    if (strchr(req->cap[0], '_') != NULL) {
        al__job_t *p = NULL;
        int64_t k = 0;
        char *cause = NULL;
        if (al__array_resolve(ctl, req->cap[0], &p, &k, &cause) != 0) {
            al__reply_error(req, 404, "not_found", "%s", cause);
            free(cause);
            return NULL;
        }
        if (!visible(req, p))
            return NULL;
        al__job_t *j = al__array_element(ctl, p, k, materialize);
        if (j != NULL) {
            if (materialize)
                req->mutating = true;
            return j;
        }
        if (pending != NULL)
            *pending = al__array_pending_json(ctl, p, k);
        else
            al__reply_error(req, 409, "conflict",
                            "element %s ended with its array", req->cap[0]);
        return NULL;
    }
    uint64_t id = parse_id(req->cap[0]);
    al__job_t *j = al__ctl_job(ctl, id);
    if (j == NULL) {
        al__reply_error(req, 404, "not_found", "no job %s", req->cap[0]);
        return NULL;
    }
    return visible(req, j) ? j : NULL;
}

al__job_t *
al__api_job_req(al_ctl_t *ctl, al__req_t *req)
{
    return job_of_req(ctl, req, true, NULL);
}

/* The API's form of job j; an array's parent with its elements' counts
 * and the state they make (running while any runs). */
static json_t *
job_json_spec(al_ctl_t *ctl, const al__job_t *j, bool spec)
{
    json_t *o =
        spec ? al__job_json(ctl, j, false) : al__job_json_nospec(ctl, j);
    int64_t minrt = al__job_min_runtime(ctl, j);
    if (minrt > 0)
        json_object_set_new(o, "min_runtime", json_integer((json_int_t)minrt));
    if (j->array != NULL) {
        const char *shown = NULL;
        json_object_set_new(o, "array", al__array_json(ctl, j, &shown));
        json_object_set_new(o, "state", json_string(shown));
    }
    return o;
}

/* job_json_spec's document for a reply, written as text (jobtext.c) and
 * embedded as an object's members (AL_JSON_MEMBERS), which the reply's
 * dump writes in place: the same bytes without a tree per job, for the
 * lists tools poll (squeue's) and each submission's answer.  An array's
 * parent, whose shown state is worked out, goes the tree's way.  Only for
 * a reply that is sent as it is: nothing can read the members. */
static json_t *
job_reply_entry(al_ctl_t *ctl, const al__job_t *j, bool spec)
{
    if (j->array != NULL)
        return job_json_spec(ctl, j, spec);
    al_buf_t b;
    al_buf_init(&b);
    al__job_text_buf(ctl, j, false, spec, AL__REPLY_FLAGS, &b);
    int64_t minrt = al__job_min_runtime(ctl, j);
    if (minrt > 0) {
        b.len--; /* the closing brace, written again below */
        al_buf_puts(&b, ",\"min_runtime\":");
        al_json_put_int(&b, (long long)minrt);
        al_buf_putc(&b, '}');
    }
    json_t *o = json_object();
    al_json_set_members(o, b.data, b.len);
    al_buf_fini(&b);
    return o;
}

static json_t *
job_json(al_ctl_t *ctl, const al__job_t *j)
{
    return job_json_spec(ctl, j, true);
}

/* The array whose elements' ids include id (a slot without its job yet),
 * or NULL. */
static al__job_t *
slot_owner(al_ctl_t *ctl, uint64_t id)
{
    for (uint64_t i = id - 1; i >= 1; i--) {
        al__job_t *j = al__ctl_job(ctl, i);
        if (j == NULL)
            continue;
        al__job_t *p = j->array != NULL ? j : al__ctl_job(ctl, j->array_job);
        return p != NULL && p->array != NULL &&
                       id <= p->id + (uint64_t)p->array->as.count
                   ? p
                   : NULL;
    }
    return NULL;
}

void
al__api_job_submit(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = NULL;
    char *cause = NULL;
    int rc =
        al__job_parse(req->body, req->user, al__req_admin(req), &j, &cause);
    if (rc != 0) {
        if (rc == AL_EPERM)
            al__reply_error(req, 403, "forbidden", "%s", cause);
        else
            al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    /* No queue named: the user's default queue (members.c). */
    json_t *qv = json_object_get(req->body, "queue");
    if (qv == NULL || json_is_null(qv)) {
        free(j->queue);
        j->queue = al_xstrdup(al__user_default_queue(ctl, j->user));
    }
    /* What the body refers to must exist. */
    const al__queue_t *q = al__ctl_queue(ctl, j->queue);
    if (q == NULL) {
        al__reply_error(req, 400, "bad_request",
                        "no queue '%s'; `allot queues` lists them", j->queue);
        al__job_free(j);
        return;
    }
    if (!al__req_admin(req) && !al__member_of(ctl, q, j->user)) {
        al__reply_error(req, 403, "forbidden",
                        "user %s is not a member of queue '%s'; an admin "
                        "adds members (allot queue set %s --add-member %s)",
                        j->user, j->queue, j->queue, j->user);
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
    /* As for `dependency` (depend.c): only jobs the caller may see. */
    for (int i = 0; i < j->nafter; i++) {
        const al__job_t *dj = al__ctl_job(ctl, j->after[i]);
        if (dj == NULL) {
            al__reply_error(req, 400, "bad_request",
                            "after: no such job (entry %d)", i);
            al__job_free(j);
            return;
        }
        if (!al__req_admin(req) && strcmp(dj->user, req->user) != 0) {
            al__reply_error(req, 403, "forbidden",
                            "after: job %llu is not yours; you may depend "
                            "only on jobs you can see",
                            (unsigned long long)dj->id);
            al__job_free(j);
            return;
        }
    }
    int st = al__depend_check(ctl, j, req->user, al__req_admin(req), &cause);
    if (st != 0) {
        al__reply_error(req, st, st == 403 ? "forbidden" : "bad_request", "%s",
                        cause);
        free(cause);
        al__job_free(j);
        return;
    }
    j->id = ctl->njobs + 1;
    al__ctl_put_job(ctl, j);
    j->submit_ms = j->eligible_ms = al_clock_ms();
    al__ctl_dirty(ctl, j);
    al__store_event(ctl, j->id, j->submit_ms, "submitted", NULL);
    al__ctl_touch(ctl);
    req->mutating = true;
    al__reply(req, 201, job_reply_entry(ctl, j, true));
}

/* The list's ?state= into want[]; false after a 400 reply. */
static bool
list_states(al__req_t *req, bool want[JS_COUNT])
{
    const char *states = al__req_arg(req, "state");
    for (int s = 0; s < JS_COUNT; s++)
        want[s] = states == NULL;
    if (states == NULL)
        return true;
    char *copy = al_xstrdup(states), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        int s = strcmp(t, "active") == 0 ? -2 : al__jstate_parse(t);
        if (s == -2) {
            want[JS_PENDING] = want[JS_HELD] = want[JS_RUNNING] = true;
        } else if (s < 0) {
            al__reply_error(req, 400, "bad_request",
                            "unknown state '%s' (pending, held, running, "
                            "completed, failed, cancelled, out_of_memory, "
                            "active)",
                            t);
            free(copy);
            return false;
        } else {
            want[s] = true;
        }
    }
    free(copy);
    return true;
}

/* The list's ?order= and ?before= (0: none); false after a 400 reply.
 * Newest first (order=desc, the next page before=ID) lists the latest
 * jobs without reading all the older ones. */
static bool
list_order(al__req_t *req, bool *desc, uint64_t *before)
{
    const char *bs = al__req_arg(req, "before");
    if (bs != NULL && (*before = parse_id(bs)) == 0) {
        al__reply_error(req, 400, "bad_request", "before must be a job id");
        return false;
    }
    const char *os = al__req_arg(req, "order");
    *desc = os != NULL && strcmp(os, "desc") == 0;
    if (os != NULL && !*desc && strcmp(os, "asc") != 0) {
        al__reply_error(req, 400, "bad_request", "order is asc or desc");
        return false;
    }
    return true;
}

void
al__api_job_list(al_ctl_t *ctl, al__req_t *req)
{
    bool want[JS_COUNT];
    if (!list_states(req, want))
        return;
    const char *queue = al__req_arg(req, "queue");
    const char *user = al__req_arg(req, "user");
    if (!al__req_admin(req)) {
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
    uint64_t before = 0;
    bool desc = false;
    if (!list_order(req, &desc, &before))
        return;
    /* Only active jobs wanted: none lies before the first active one. */
    if (!want[JS_COMPLETED] && !want[JS_FAILED] && !want[JS_CANCELLED] &&
        !want[JS_OUT_OF_MEMORY]) {
        uint64_t lo = al__ctl_first_active(ctl);
        if (after < lo)
            after = lo;
    }
    /* An array is one row (its parent's), or with expand=1 a row per
     * element, those without a job yet made up from the array. */
    const char *ex = al__req_arg(req, "expand");
    bool expand = ex != NULL && strcmp(ex, "0") != 0;
    /* spec=0: rows without what runs (a tool's listing, squeue's). */
    const char *sp = al__req_arg(req, "spec");
    bool spec = sp == NULL || strcmp(sp, "0") != 0;
    if (desc && expand) {
        al__reply_error(req, 400, "bad_request",
                        "order=desc does not take expand");
        return;
    }
    /* Indexes [after, hi): ids after `after` and before `before`. */
    uint64_t hi = ctl->njobs;
    if (before != 0 && before - 1 < hi)
        hi = before - 1;
    uint64_t span = hi > after ? hi - after : 0;
    json_t *jobs = json_array();
    uint64_t last = 0;
    bool more = false;
    al__job_t *owner = NULL;
    for (uint64_t k = 0; k < span; k++) {
        uint64_t i = desc ? hi - 1 - k : after + k;
        const al__job_t *j = ctl->jobs[i];
        uint64_t id = i + 1;
        al__jstate_t st = j != NULL ? j->state : JS_PENDING;
        if (j == NULL && expand) {
            if (owner == NULL ||
                id > owner->id + (uint64_t)owner->array->as.count)
                owner = slot_owner(ctl, id);
            if (owner == NULL)
                continue;
            j = owner;
            st = owner->state <= JS_RUNNING ? owner->state : JS_CANCELLED;
        }
        if (j != NULL && j->array != NULL && !expand &&
            j->state == JS_PENDING) { /* filtered as shown: running? */
            const char *shown = NULL;
            json_decref(al__array_json(ctl, j, &shown));
            st = (al__jstate_t)al__jstate_parse(shown);
        }
        if (j == NULL || !want[st] ||
            (queue != NULL && strcmp(queue, j->queue) != 0) ||
            (user != NULL && strcmp(user, j->user) != 0) ||
            (expand ? j->array != NULL && j != owner : j->array_job != 0))
            continue;
        if ((int64_t)json_array_size(jobs) == limit) {
            more = true;
            break;
        }
        json_array_append_new(
            jobs, j == owner ? al__array_pending_json(ctl, owner,
                                                      (int64_t)(id - j->id - 1))
                             : job_reply_entry(ctl, j, spec));
        last = id;
    }
    json_t *o = json_pack("{s:o}", "jobs", jobs);
    json_object_set_new(o, "next",
                        more ? json_integer((json_int_t)last) : json_null());
    al__reply(req, 200, o);
}

void
al__api_job_get(al_ctl_t *ctl, al__req_t *req)
{
    json_t *pending = NULL;
    al__job_t *j = job_of_req(ctl, req, false, &pending);
    if (pending != NULL) {
        json_object_set_new(pending, "history", json_array());
        al__reply(req, 200, pending);
    }
    if (j == NULL)
        return;
    json_t *o = job_json(ctl, j);
    json_object_set_new(o, "history", al__store_history(ctl, j->id));
    json_object_set_new(o, "steps", al__steps_json(ctl, j));
    al__reply(req, 200, o);
}

void
al__api_job_cancel(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = job_of_req(ctl, req, true, NULL);
    if (j == NULL)
        return;
    if (j->state >= JS_COMPLETED) {
        al__reply_error(req, 409, "conflict", "job %s already %s", req->cap[0],
                        al__jstate_names[j->state]);
        return;
    }
    char *d = al_xasprintf("cancelled by %s", req->user);
    if (j->array != NULL)
        al__array_cancel(ctl, j, d);
    else
        al__ctl_set_state(ctl, j, JS_CANCELLED, "cancelled", d);
    free(d);
    req->mutating = true;
    al__reply(req, 200, job_json(ctl, j));
}

/* Hold (from pending) and release (from held); idempotent. */
static void
hold_release(al_ctl_t *ctl, al__req_t *req, al__jstate_t from, al__jstate_t to,
             const char *event)
{
    al__job_t *j = job_of_req(ctl, req, true, NULL);
    if (j == NULL)
        return;
    if (j->state != from && j->state != to) {
        al__reply_error(req, 409, "conflict", "job %llu is %s, not %s",
                        (unsigned long long)j->id, al__jstate_names[j->state],
                        al__jstate_names[from]);
        return;
    }
    if (j->array != NULL) {
        al__array_hold(ctl, j, to == JS_HELD, req->user);
        req->mutating = true;
    } else if (j->state == from) {
        al__ctl_set_state(ctl, j, to, event, req->user);
        req->mutating = true;
    }
    al__reply(req, 200, job_json(ctl, j));
}

void
al__api_job_hold(al_ctl_t *ctl, al__req_t *req)
{
    hold_release(ctl, req, JS_PENDING, JS_HELD, "held");
}

void
al__api_job_release(al_ctl_t *ctl, al__req_t *req)
{
    hold_release(ctl, req, JS_HELD, JS_PENDING, "released");
}

/* A running job back to pending, as when its node went down: its tasks
 * stop, its restart count goes up, it starts again when the scheduler
 * places it (Slurm's scontrol requeue); with ?hold=1 it is held at once
 * (requeuehold), before any cycle could start it again.  An ended job
 * (completed, failed, cancelled) goes back to pending the same way, its
 * end forgotten, as Slurm requeues an ended batch job; not an array or
 * one of its elements, whose array has counted it as ended. */
void
al__api_job_requeue(al_ctl_t *ctl, al__req_t *req)
{
    al__job_t *j = job_of_req(ctl, req, true, NULL);
    if (j == NULL)
        return;
    bool ended = j->state >= JS_COMPLETED;
    if (ended && (j->array != NULL || j->array_job != 0)) {
        al__reply_error(req, 409, "conflict",
                        "job %llu is %s and part of a job array: only a "
                        "running element can be requeued",
                        (unsigned long long)j->id, al__jstate_names[j->state]);
        return;
    }
    if (!ended && (j->state != JS_RUNNING || j->tasks == NULL)) {
        al__reply_error(req, 409, "conflict",
                        "job %llu is %s: only a running or ended job can be "
                        "requeued",
                        (unsigned long long)j->id, al__jstate_names[j->state]);
        return;
    }
    if (ended) {
        j->end_ms = 0;
        j->exit_code = 0;
        j->signal = 0;
        j->retried = 0;
        j->retry_at_ms = 0;
        free(j->reason);
        j->reason = NULL;
        /* Active again: what looks for active jobs must see it. */
        if (j->id - 1 < ctl->active_lo)
            ctl->active_lo = j->id - 1;
    }
    char *d = al_xasprintf("requeued by %s", req->user);
    al__ctl_requeue(ctl, j, "requeued", d);
    free(d);
    const char *hold = al__req_arg(req, "hold");
    if (hold != NULL && strcmp(hold, "1") == 0)
        al__ctl_set_state(ctl, j, JS_HELD, "held", req->user);
    req->mutating = true;
    al__reply(req, 200, job_json(ctl, j));
}

void
al__api_job_logs(al_ctl_t *ctl, al__req_t *req)
{
    json_t *pending = NULL;
    al__job_t *j = job_of_req(ctl, req, false, &pending);
    if (pending != NULL) { /* no output yet */
        json_decref(pending);
        req->status = 200;
        req->text = al_xstrdup("");
        return;
    }
    if (j == NULL)
        return;
    if (j->array != NULL) {
        al__reply_error(req, 400, "bad_request",
                        "job %llu is an array: name one of its elements, "
                        "%llu_INDEX",
                        (unsigned long long)j->id, (unsigned long long)j->id);
        return;
    }
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
    char *path = al__log_path(ctl, j->id, (int)task, (int)restart);
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
