/*
 * api_queues.c -- the handlers of /v1/queues: list, show, create, replace
 * and delete, keeping the queues a tree whose inner queues hold no jobs.
 *
 * May call: state.c, table.c, doc.c (the queue form), members.c (the
 * groups a queue's members name), store.c and req.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "json.h"
#include "xmalloc.h"

void
al__api_queue_list(al_ctl_t *ctl, al__req_t *req)
{
    json_t *a = json_array();
    for (int i = 0; i < ctl->nqueues; i++)
        json_array_append_new(a, al__queue_json(&ctl->queues[i], true));
    al__reply(req, 200, json_pack("{s:o}", "queues", a));
}

void
al__api_queue_get(al_ctl_t *ctl, al__req_t *req)
{
    al__queue_t *q = al__ctl_queue(ctl, req->cap[0]);
    if (q == NULL) {
        al__reply_error(req, 404, "not_found", "no queue '%s'", req->cap[0]);
        return;
    }
    al__reply(req, 200, al__queue_json(q, true));
}

static bool
queue_has_jobs(al_ctl_t *ctl, const char *name)
{
    for (uint64_t i = 0; i < ctl->njobs; i++) {
        const al__job_t *j = ctl->jobs[i];
        if (j != NULL && j->state <= JS_RUNNING && strcmp(j->queue, name) == 0)
            return true;
    }
    return false;
}

/* Is queue `name` some user's default queue? */
static bool
is_default_queue(const al_ctl_t *ctl, const char *name)
{
    for (int i = 0; i < ctl->nusers; i++)
        if (ctl->users[i].default_queue != NULL &&
            strcmp(ctl->users[i].default_queue, name) == 0)
            return true;
    return false;
}

/* True when queue `name` is `q` or one of its ancestors: making it q's
 * parent would close a cycle (queues that are each other's parent, which
 * then could never be deleted). */
static bool
queue_in_chain(al_ctl_t *ctl, const char *q, const char *name)
{
    for (int steps = 0; q != NULL && steps <= ctl->nqueues; steps++) {
        if (strcmp(q, name) == 0)
            return true;
        const al__queue_t *up = al__ctl_queue(ctl, q);
        q = up != NULL ? up->parent : NULL;
    }
    return false;
}

/* Creates (POST, name in the body) or replaces (PUT, name in the path). */
static void
queue_put(al_ctl_t *ctl, al__req_t *req, bool create)
{
    if (!json_is_object(req->body)) {
        al__reply_error(req, 400, "bad_request",
                        "the body must be a JSON queue object");
        return;
    }
    if (!create)
        json_object_set_new(req->body, "name", json_string(req->cap[0]));
    al__queue_t q;
    char *cause = NULL;
    if (al__queue_from_json(req->body, &q, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    al__queue_t *old = al__ctl_queue(ctl, q.name);
    const char *err = NULL;
    int status = 400;
    if (create && old != NULL) {
        err = "queue already exists; use PUT to change it";
        status = 409;
    } else if (!create && old == NULL) {
        err = "no such queue";
        status = 404;
    } else if (q.parent != NULL && al__ctl_queue(ctl, q.parent) == NULL) {
        err = "parent queue does not exist";
    } else if (q.parent != NULL && strcmp(q.parent, q.name) == 0) {
        err = "a queue cannot be its own parent";
    } else if (q.parent != NULL && queue_in_chain(ctl, q.parent, q.name)) {
        err = "the parent is below this queue (queues cannot form a cycle)";
    } else if (q.parent != NULL && queue_has_jobs(ctl, q.parent)) {
        err = "parent queue holds jobs; only leaf queues hold jobs";
        status = 409;
    } else if (q.parent != NULL && is_default_queue(ctl, q.parent)) {
        err = "parent queue is a user's default queue (allot user list); "
              "only leaf queues take jobs";
        status = 409;
    }
    for (int i = 0; err == NULL && i < q.members.n; i++) {
        const char *m = q.members.v[i];
        if (m[0] == '@' && al__ctl_group(ctl, m + 1) == NULL) {
            al__reply_error(req, 400, "bad_request",
                            "queue %s: members: no group '%s' (allot group "
                            "set %s --users ... makes one)",
                            q.name, m + 1, m + 1);
            al__queue_fini(&q);
            return;
        }
    }
    char *qerr = err == NULL ? al__quota_check(ctl, &q) : NULL;
    if (qerr != NULL) {
        al__reply_error(req, 400, "bad_request", "%s", qerr);
        free(qerr);
        al__queue_fini(&q);
        return;
    }
    if (err != NULL) {
        al__reply_error(req, status,
                        status == 404   ? "not_found"
                        : status == 409 ? "conflict"
                                        : "bad_request",
                        "queue %s: %s", q.name, err);
        al__queue_fini(&q);
        return;
    }
    al__store_put_queue(ctl, &q);
    al__clusterev_queue(ctl, q.name, create ? "created" : "updated", NULL);
    al__reply(req, create ? 201 : 200, al__queue_json(&q, false));
    if (old != NULL) {
        q.usage = old->usage;
        q.share = old->share;
        al__queue_fini(old);
        *old = q;
    } else {
        ctl->queues =
            al_xreallocarray(ctl->queues, (size_t)ctl->nqueues + 1, sizeof q);
        ctl->queues[ctl->nqueues++] = q;
    }
    ctl->queue_gen++;
    al__ctl_touch(ctl);
    req->mutating = true;
}

void
al__api_queue_create(al_ctl_t *ctl, al__req_t *req)
{
    queue_put(ctl, req, true);
}

void
al__api_queue_update(al_ctl_t *ctl, al__req_t *req)
{
    queue_put(ctl, req, false);
}

void
al__api_queue_delete(al_ctl_t *ctl, al__req_t *req)
{
    al__queue_t *q = al__ctl_queue(ctl, req->cap[0]);
    if (q == NULL) {
        al__reply_error(req, 404, "not_found", "no queue '%s'", req->cap[0]);
        return;
    }
    for (int i = 0; i < ctl->nqueues; i++) {
        if (ctl->queues[i].parent != NULL &&
            strcmp(ctl->queues[i].parent, q->name) == 0) {
            al__reply_error(req, 409, "conflict",
                            "queue '%s' has sub-queues; delete them first",
                            q->name);
            return;
        }
    }
    if (queue_has_jobs(ctl, q->name)) {
        al__reply_error(req, 409, "conflict",
                        "queue '%s' has pending or running jobs", q->name);
        return;
    }
    /* A user whose default queue is gone would have every job that names
     * no queue refused. */
    for (int i = 0; i < ctl->nusers; i++) {
        const al__user_t *u = &ctl->users[i];
        if (u->default_queue != NULL &&
            strcmp(u->default_queue, q->name) == 0) {
            al__reply_error(req, 409, "conflict",
                            "queue '%s' is the default queue of user %s; "
                            "change it first (allot user set %s "
                            "--default-queue Q)",
                            q->name, u->name, u->name);
            return;
        }
    }
    al__store_del_queue(ctl, q->name);
    al__clusterev_queue(ctl, q->name, "deleted", NULL);
    json_t *o = json_pack("{s:s}", "deleted", q->name);
    al__queue_fini(q);
    *q = ctl->queues[--ctl->nqueues];
    ctl->queue_gen++;
    al__ctl_touch(ctl);
    req->mutating = true;
    al__reply(req, 200, o);
}
