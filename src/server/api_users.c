/*
 * api_users.c -- the handlers of /v1/users (a user's settings: the
 * default queue) and /v1/groups (named lists of users that a queue's
 * members may name as "@group").  Admins change them; a user sees her
 * own settings and every group.
 *
 * May call: members.c (the tables), memberdoc.c (the forms), table.c,
 * store.c and req.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "json.h"
#include "xmalloc.h"

/* Does user hold an admin token (and so submit into any queue)? */
static bool
holds_admin(const al_ctl_t *ctl, const char *user)
{
    for (int i = 0; i < ctl->ntokens; i++)
        if (ctl->tokens[i].role == ROLE_ADMIN &&
            strcmp(ctl->tokens[i].user, user) == 0)
            return true;
    return false;
}

/* The API's form of user name: its settings and the queues it may submit
 * into. */
static json_t *
user_json(al_ctl_t *ctl, const char *name)
{
    const al__user_t *u = al__ctl_user(ctl, name);
    al__user_t none = { .name = (char *)name, .default_queue = NULL };
    json_t *o = al__user_json(u != NULL ? u : &none);
    json_object_set_new(o, "queue",
                        json_string(al__user_default_queue(ctl, name)));
    json_t *qs = json_array();
    bool admin = holds_admin(ctl, name);
    for (int i = 0; i < ctl->nqueues; i++)
        if (al__member_of(ctl, &ctl->queues[i], name) || admin)
            json_array_append_new(qs, json_string(ctl->queues[i].name));
    json_object_set_new(o, "queues", qs);
    return o;
}

void
al__api_user_list(al_ctl_t *ctl, al__req_t *req)
{
    json_t *a = json_array();
    if (!al__req_admin(req)) {
        json_array_append_new(a, user_json(ctl, req->user));
        al__reply(req, 200, json_pack("{s:o}", "users", a));
        return;
    }
    /* Everyone who has a token or settings, once each. */
    json_t *seen = json_object();
    for (int i = 0; i < ctl->ntokens; i++)
        if (ctl->tokens[i].role == ROLE_USER ||
            ctl->tokens[i].role == ROLE_ADMIN)
            json_object_set_new(seen, ctl->tokens[i].user, json_true());
    for (int i = 0; i < ctl->nusers; i++)
        json_object_set_new(seen, ctl->users[i].name, json_true());
    const char *k;
    json_t *v;
    json_object_foreach(seen, k, v)
    {
        (void)v;
        json_array_append_new(a, user_json(ctl, k));
    }
    json_decref(seen);
    al__reply(req, 200, json_pack("{s:o}", "users", a));
}

void
al__api_user_get(al_ctl_t *ctl, al__req_t *req)
{
    if (!al__req_admin(req) && strcmp(req->cap[0], req->user) != 0) {
        al__reply_error(req, 403, "forbidden",
                        "only an admin may see another user's settings");
        return;
    }
    al__reply(req, 200, user_json(ctl, req->cap[0]));
}

void
al__api_user_update(al_ctl_t *ctl, al__req_t *req)
{
    al__user_t u;
    char *cause = NULL;
    if (al__user_from_json(req->body, req->cap[0], &u, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "user %s: %s", req->cap[0],
                        cause);
        free(cause);
        return;
    }
    const al__queue_t *dq =
        u.default_queue != NULL ? al__ctl_queue(ctl, u.default_queue) : NULL;
    if (u.default_queue != NULL && dq == NULL) {
        al__reply_error(req, 400, "bad_request",
                        "user %s: no queue '%s'; `allot queues` lists them",
                        u.name, u.default_queue);
        al__user_fini(&u);
        return;
    }
    for (int i = 0; dq != NULL && i < ctl->nqueues; i++) {
        if (ctl->queues[i].parent != NULL &&
            strcmp(ctl->queues[i].parent, dq->name) == 0) {
            al__reply_error(req, 400, "bad_request",
                            "user %s: queue '%s' has sub-queues; a default "
                            "queue is a leaf queue, where jobs go",
                            u.name, dq->name);
            al__user_fini(&u);
            return;
        }
    }
    /* A default queue the user may not submit into would turn every job
     * that names no queue into a 403; admins submit anywhere. */
    if (dq != NULL && !al__member_of(ctl, dq, u.name) &&
        !holds_admin(ctl, u.name)) {
        al__reply_error(req, 409, "conflict",
                        "user %s is not a member of queue '%s'; an admin "
                        "adds members first (allot queue set %s "
                        "--add-member %s)",
                        u.name, dq->name, dq->name, u.name);
        al__user_fini(&u);
        return;
    }
    al__store_put_user(ctl, &u);
    al__ctl_put_user(ctl, &u);
    req->mutating = true;
    al__reply(req, 200, user_json(ctl, req->cap[0]));
}

void
al__api_group_list(al_ctl_t *ctl, al__req_t *req)
{
    json_t *a = json_array();
    for (int i = 0; i < ctl->ngroups; i++)
        json_array_append_new(a, al__group_json(&ctl->groups[i]));
    al__reply(req, 200, json_pack("{s:o}", "groups", a));
}

void
al__api_group_get(al_ctl_t *ctl, al__req_t *req)
{
    const al__group_t *g = al__ctl_group(ctl, req->cap[0]);
    if (g == NULL) {
        al__reply_error(req, 404, "not_found", "no group '%s'", req->cap[0]);
        return;
    }
    al__reply(req, 200, al__group_json(g));
}

void
al__api_group_update(al_ctl_t *ctl, al__req_t *req)
{
    al__group_t g;
    char *cause = NULL;
    if (al__group_from_json(req->body, req->cap[0], &g, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "group %s: %s", req->cap[0],
                        cause);
        free(cause);
        return;
    }
    bool created = al__ctl_group(ctl, g.name) == NULL;
    al__store_put_group(ctl, g.name, &g);
    al__ctl_put_group(ctl, &g);
    req->mutating = true;
    al__reply(req, created ? 201 : 200,
              al__group_json(al__ctl_group(ctl, req->cap[0])));
}

void
al__api_group_delete(al_ctl_t *ctl, al__req_t *req)
{
    if (al__ctl_group(ctl, req->cap[0]) == NULL) {
        al__reply_error(req, 404, "not_found", "no group '%s'", req->cap[0]);
        return;
    }
    char *ref = al_xasprintf("@%s", req->cap[0]);
    for (int i = 0; i < ctl->nqueues; i++) {
        if (al__names_has(&ctl->queues[i].members, ref)) {
            al__reply_error(req, 409, "conflict",
                            "queue '%s' names group %s among its members; "
                            "take it out first",
                            ctl->queues[i].name, req->cap[0]);
            free(ref);
            return;
        }
    }
    free(ref);
    al__store_put_group(ctl, req->cap[0], NULL);
    json_t *o = json_pack("{s:s}", "deleted", req->cap[0]);
    al__ctl_del_group(ctl, req->cap[0]);
    req->mutating = true;
    al__reply(req, 200, o);
}
