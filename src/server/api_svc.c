/*
 * api_svc.c -- the handlers of /v1/services: create, list, show, update
 * (settings at once; a new spec as a rolling update) and delete.  A
 * service belongs to the user who created it; admins see and change all.
 *
 * May call: svc.c, svcbody.c, table.c, req.c, doc.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "clock.h"
#include "json.h"
#include "svc.h"
#include "xmalloc.h"

static bool
mine(const al__req_t *req, const al__svc_t *s)
{
    return al__req_admin(req) || strcmp(req->user, s->owner) == 0;
}

/* The service named in the path, or NULL after a 404 (503 without the
 * table). */
static al__svc_t *
svc_of_req(al_ctl_t *ctl, al__req_t *req)
{
    if (al__svc_load(ctl) != 0) {
        al__reply_error(req, 503, "unavailable", "services not loaded");
        return NULL;
    }
    al__svc_t *s = al__svc_find(ctl, req->cap[0]);
    if (s == NULL || !mine(req, s)) {
        al__reply_error(req, 404, "not_found",
                        "no service '%s'; `allot serve ls` lists them",
                        req->cap[0]);
        return NULL;
    }
    return s;
}

/* The queue of settings c: named, or the owner's default (written into
 * c's spec, so that every replica goes there); it must exist and take the
 * caller's jobs.  false after answering req. */
static bool
queue_ok(al_ctl_t *ctl, al__req_t *req, al__svc_conf_t *c, const char *owner)
{
    if (json_object_get(c->spec, "queue") == NULL)
        json_object_set_new(c->spec, "queue",
                            json_string(al__user_default_queue(ctl, owner)));
    const char *q = al_json_str(c->spec, "queue", "default");
    const al__queue_t *qq = al__ctl_queue(ctl, q);
    if (qq == NULL) {
        al__reply_error(req, 400, "bad_request",
                        "no queue '%s'; `allot queues` lists them", q);
        return false;
    }
    if (!al__req_admin(req) && !al__member_of(ctl, qq, owner)) {
        al__reply_error(req, 403, "forbidden",
                        "user %s is not a member of queue '%s'; an admin "
                        "adds members (allot queue set %s --add-member %s)",
                        owner, q, q, owner);
        return false;
    }
    return true;
}

static json_t *
svc_json(al_ctl_t *ctl, const al__svc_t *s, bool full)
{
    int ready = 0, running = 0;
    json_t *reps = json_array();
    for (int i = 0; i < s->nreps; i++) {
        const al__replica_t *r = &s->reps[i];
        al__job_t *j = al__ctl_job(ctl, r->job);
        const char *state = r->draining ? "draining"
                            : r->ready  ? "ready"
                            : j == NULL ? "gone"
                            : j->state == JS_RUNNING
                                ? "starting"
                                : al__jstate_names[j->state];
        if (r->ready && !r->draining)
            ready++;
        if (j != NULL && j->state == JS_RUNNING)
            running++;
        const char *node = j != NULL && j->state == JS_RUNNING &&
                                   j->tasks != NULL && j->tasks[0].node >= 0
                               ? ctl->nodes[j->tasks[0].node].name
                               : NULL;
        json_t *o =
            json_pack("{s:i, s:I, s:i, s:s, s:i, s:i}", "replica", r->idx,
                      "job", (json_int_t)r->job, "gen", r->gen, "state", state,
                      "port", r->port, "inflight", r->inflight);
        json_object_set_new(o, "node", node ? json_string(node) : json_null());
        json_array_append_new(reps, o);
    }
    json_t *o = json_pack(
        "{s:s, s:s, s:i, s:i, s:i, s:i, s:o, s:i, s:i, s:I, s:I, s:f, "
        "s:f, s:f, s:f}",
        "name", s->name, "owner", s->owner, "gen", s->gen, "desired",
        s->desired, "ready", ready, "running", running, "replicas", reps,
        "inflight", s->inflight, "waiting", s->waiting, "requests",
        (json_int_t)s->requests, "errors", (json_int_t)s->errors, "concurrency",
        s->conc_avg, "latency_mean_s",
        s->requests ? s->latency_sum / (double)s->requests : 0.0, "rise_s",
        s->rise_s, "start_s", s->start_s);
    json_t *conf = al__svc_conf_json(&s->conf);
    json_object_update(o, conf);
    json_decref(conf);
    if (full)
        json_object_set(o, "events", s->events);
    return o;
}

void
al__svc_create(al_ctl_t *ctl, al__req_t *req)
{
    if (al__svc_load(ctl) != 0) {
        al__reply_error(req, 503, "unavailable", "services not loaded");
        return;
    }
    const char *name = al_json_str(req->body, "name", NULL);
    if (name == NULL || !al__valid_name(name, 63)) {
        al__reply_error(req, 400, "bad_request",
                        "name: 1 to 63 letters, digits, '-', '_' or '.'");
        return;
    }
    if (al__svc_find(ctl, name) != NULL) {
        al__reply_error(req, 409, "conflict", "service '%s' exists", name);
        return;
    }
    al__svc_conf_t c;
    char *cause = NULL;
    if (al__svc_conf_apply(req->body, NULL, req->user, &c, NULL, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    if (!queue_ok(ctl, req, &c, req->user)) {
        al__svc_conf_fini(&c);
        return;
    }
    al__svc_t *s = al_xcalloc(1, sizeof *s);
    s->name = al_xstrdup(name);
    s->owner = al_xstrdup(req->user);
    s->conf = c;
    s->gen = 1;
    s->last_req_ms = al_clock_mono_ms();
    al__svc_put(ctl, s);
    al__svc_event(s, "created by %s (min %lld, max %lld, target %g)", req->user,
                  (long long)c.min, (long long)c.max, c.target);
    s->desired = (int)c.min;
    al__svc_store(ctl, s);
    ctl->svcs->next_tick = 0; /* the router knows it before the reply */
    req->mutating = true;
    al__reply(req, 201, svc_json(ctl, s, false));
}

void
al__svc_list(al_ctl_t *ctl, al__req_t *req)
{
    if (al__svc_load(ctl) != 0) {
        al__reply_error(req, 503, "unavailable", "services not loaded");
        return;
    }
    json_t *a = json_array();
    for (int i = 0; i < ctl->svcs->n; i++)
        if (mine(req, ctl->svcs->v[i]))
            json_array_append_new(a, svc_json(ctl, ctl->svcs->v[i], false));
    al__reply(req, 200, json_pack("{s:o}", "services", a));
}

void
al__svc_get(al_ctl_t *ctl, al__req_t *req)
{
    al__svc_t *s = svc_of_req(ctl, req);
    if (s != NULL)
        al__reply(req, 200, svc_json(ctl, s, true));
}

void
al__svc_update(al_ctl_t *ctl, al__req_t *req)
{
    al__svc_t *s = svc_of_req(ctl, req);
    if (s == NULL)
        return;
    const char *name = al_json_str(req->body, "name", NULL);
    if (name != NULL && strcmp(name, s->name) != 0) {
        al__reply_error(req, 400, "bad_request",
                        "a service's name does not change");
        return;
    }
    al__svc_conf_t c;
    bool spec_changed = false;
    char *cause = NULL;
    if (al__svc_conf_apply(req->body, &s->conf, s->owner, &c, &spec_changed,
                           &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    if (!queue_ok(ctl, req, &c, s->owner)) {
        al__svc_conf_fini(&c);
        return;
    }
    spec_changed = spec_changed || !json_equal(c.spec, s->conf.spec);
    if (spec_changed) {
        al__svc_conf_fini(&s->prev);
        s->prev = s->conf;
        s->prev_gen = s->gen;
        s->has_prev = true;
        s->conf = c;
        /* Past any generation a rollback left behind. */
        int top = s->gen;
        for (int i = 0; i < s->nreps; i++)
            if (s->reps[i].gen > top)
                top = s->reps[i].gen;
        s->gen = top + 1;
        s->update_fails = 0;
        s->fails = 0;
        s->next_start_ms = 0;
        al__svc_event(s, "update by %s: generation %d, rolling", req->user,
                      s->gen);
    } else {
        al__svc_conf_fini(&s->conf);
        s->conf = c;
        al__svc_event(s,
                      "settings changed by %s (min %lld, max %lld, "
                      "target %g)",
                      req->user, (long long)c.min, (long long)c.max, c.target);
    }
    if (s->desired < s->conf.min)
        s->desired = (int)s->conf.min;
    if (s->desired > s->conf.max)
        s->desired = (int)s->conf.max;
    al__svc_store(ctl, s);
    ctl->svcs->next_tick = 0;
    req->mutating = true;
    al__reply(req, 200, svc_json(ctl, s, false));
}

void
al__svc_delete(al_ctl_t *ctl, al__req_t *req)
{
    al__svc_t *s = svc_of_req(ctl, req);
    if (s == NULL)
        return;
    char *who = al_xasprintf("deleted by %s", req->user);
    json_t *o = json_pack("{s:s, s:b}", "name", s->name, "deleted", true);
    al__svc_remove(ctl, s, who);
    free(who);
    ctl->svcs->next_tick = 0;
    req->mutating = true;
    al__reply(req, 200, o);
}

/* ------------------------------------------------------------------ */
/* Router processes                                                   */

static json_t *
hex_json(const unsigned char *p, size_t n)
{
    char buf[65];
    for (size_t i = 0; i < n && i < 32; i++)
        snprintf(buf + 2 * i, 3, "%02x", p[i]);
    buf[2 * (n < 32 ? n : 32)] = '\0';
    return json_string(buf);
}

void
al__svc_router_table(al_ctl_t *ctl, al__req_t *req)
{
    if (al__svc_load(ctl) != 0) {
        al__reply_error(req, 503, "unavailable", "services not loaded");
        return;
    }
    json_t *svcs = json_array();
    for (int i = 0; i < ctl->svcs->n; i++) {
        const al__svc_t *s = ctl->svcs->v[i];
        json_t *reps = json_array();
        for (int k = 0; k < s->nreps; k++) {
            const al__replica_t *r = &s->reps[k];
            const char *addr = al__svc_rep_addr(ctl, r);
            if (addr != NULL)
                json_array_append_new(
                    reps, json_pack("{s:I, s:s, s:i, s:b}", "job",
                                    (json_int_t)r->job, "addr", addr, "port",
                                    r->port, "draining", r->draining));
        }
        json_array_append_new(
            svcs, json_pack("{s:s, s:s, s:b, s:s, s:I, s:I, s:I, s:o}", "name",
                            s->name, "ready_path", s->conf.ready_path, "public",
                            s->conf.public, "owner", s->owner, "queue_max",
                            (json_int_t)s->conf.queue_max, "queue_timeout_ms",
                            (json_int_t)s->conf.queue_timeout_s * 1000, "port",
                            (json_int_t)s->conf.port, "replicas", reps));
    }
    json_t *toks = json_array();
    for (int i = 0; i < ctl->ntokens; i++) {
        const al__token_t *t = &ctl->tokens[i];
        if (t->role != ROLE_USER && t->role != ROLE_ADMIN)
            continue;
        json_array_append_new(
            toks, json_pack("{s:s, s:s, s:i, s:o, s:o}", "id", t->id, "user",
                            t->user, "role", t->role, "salt",
                            hex_json(t->salt, sizeof t->salt), "hash",
                            hex_json(t->hash, sizeof t->hash)));
    }
    al__reply(req, 200,
              json_pack("{s:o, s:o}", "services", svcs, "tokens", toks));
}

void
al__svc_router_report(al_ctl_t *ctl, al__req_t *req)
{
    const char *id = al_json_str(req->body, "router", NULL);
    json_t *svcs = json_object_get(req->body, "services");
    if (id == NULL || id[0] == '\0' || strlen(id) > 63 ||
        !json_is_array(svcs)) {
        al__reply_error(req, 400, "bad_request",
                        "a report is {\"router\": ID, \"services\": [...]}");
        return;
    }
    if (al__svc_load(ctl) != 0) {
        al__reply_error(req, 503, "unavailable", "services not loaded");
        return;
    }
    al__svcs_t *t = ctl->svcs;
    al__ext_router_t *e = NULL;
    for (int k = 0; k < AL_SVC_MAX_ROUTERS && e == NULL; k++)
        if (strcmp(t->ext[k].id, id) == 0)
            e = &t->ext[k];
    if (e == NULL) {
        e = &t->ext[t->next_ext];
        t->next_ext = (t->next_ext + 1) % AL_SVC_MAX_ROUTERS;
        snprintf(e->id, sizeof e->id, "%s", id);
    }
    json_decref(e->services);
    e->services = json_incref(svcs);
    e->at_ms = al_clock_mono_ms();
    al__reply(req, 200, json_pack("{s:b}", "ok", true));
}
