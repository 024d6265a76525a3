/*
 * ctl.c -- the control loop: the one thread that owns the controller's
 * state.  Each iteration takes every request queued by the intake,
 * authenticates and handles them, marks silent nodes down, runs a
 * scheduling cycle when one is due, writes what changed to the store in
 * one transaction, and only after the commit answers the long-polls of
 * the nodes whose desired tasks changed and gives the replies back to the
 * intake through ctl->reply (durable before acknowledged).
 *
 * May call: the handlers through the route table's pointers (and
 * agentproto.c for parked polls), bootstrap.c, cycle.c, idle.c, svc.c
 * (the services' tick), state.c, table.c, reason.c, store.c, auth.c,
 * req.c and events.c (the streams' ticks).  Nothing below calls it; the
 * intake (server.c) calls al__ctl_start/stop/submit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "clock.h"
#include "core/error.h"
#include "fs.h"
#include "json.h"
#include "log.h"
#include "svc.h"
#include "xmalloc.h"

/* ------------------------------------------------------------------ */
/* Start-up                                                           */

static void *loop_main(void *arg);

int
al__ctl_start(al_ctl_t *ctl, char **cause)
{
    pthread_mutex_init(&ctl->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ctl->cv, &ca);
    pthread_condattr_destroy(&ca);
    ctl->inbox_tail = &ctl->inbox;
    ctl->parked_min = INT64_MAX;
    al_block_cache_init(&ctl->core_cache);
    ctl->core_alloc = al_block_cache_allocator(&ctl->core_cache);
    char *logs = al_xasprintf("%s/logs", ctl->state_dir);
    int rc = al_fs_mkdir_p(logs, 0700);
    free(logs);
    if (rc != 0) {
        *cause = al_xasprintf("cannot create %s/logs: %s", ctl->state_dir,
                              strerror(errno));
        return rc;
    }
    if ((rc = al__store_open(ctl, cause)) != 0)
        return rc;
    ctl->jc.check = getenv("ALLOT_DEBUG_JOBCOUNTS") != NULL;
    if ((rc = al__store_load(ctl, cause)) == 0) {
        al__ctl_index_running(ctl);
        al__jobcounts_rebuild(ctl);
        al__fairshare_load(ctl);
        al__consolidate_load(ctl);
    }
    /* GET /v1/events shows what happened before this start, too. */
    if (rc == 0 && al__store_load_events(ctl, AL_EVENTS_RING) != 0)
        al_warn("store: cannot read the last events; GET /v1/events "
                "starts empty");
    al__events_publish(ctl->events);
    if (rc != 0 || (rc = al__bootstrap(ctl, cause)) != 0) {
        al__store_close(ctl);
        return rc;
    }
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < ctl->nnodes; i++)
        ctl->nodes[i].last_seen = now; /* give agents time to come back */
    ctl->usage_last = al_clock_ms() / 1000;
    al__ctl_touch(ctl);
    if (pthread_create(&ctl->thread, NULL, loop_main, ctl) != 0) {
        *cause = al_xasprintf("cannot start the control loop");
        al__store_close(ctl);
        return AL_EIO;
    }
    return 0;
}

void
al__ctl_stop(al_ctl_t *ctl)
{
    pthread_mutex_lock(&ctl->mu);
    ctl->stop = true;
    pthread_cond_signal(&ctl->cv);
    pthread_mutex_unlock(&ctl->mu);
    pthread_join(ctl->thread, NULL);
    al_block_cache_fini(&ctl->core_cache);
    al__reason_fini(ctl);
    al__svc_reset(ctl);
    al__store_close(ctl);
    for (uint64_t i = 0; i < ctl->njobs; i++)
        al__job_free(ctl->jobs[i]);
    free(ctl->jobs);
    free(ctl->running);
    free(ctl->dirty);
    free(ctl->api_hist);
    al__waste_fini(&ctl->waste);
    al__jobcounts_fini(&ctl->jc);
    for (int i = 0; i < ctl->nqueues; i++)
        al__queue_fini(&ctl->queues[i]);
    free(ctl->queues);
    al__members_fini(ctl);
    for (int i = 0; i < ctl->nnodes; i++)
        al__node_fini(&ctl->nodes[i]);
    free(ctl->nodes);
    free(ctl->node_hash);
    for (int i = 0; i < ctl->ntokens; i++)
        free(ctl->tokens[i].user);
    free(ctl->tokens);
    pthread_cond_destroy(&ctl->cv);
    pthread_mutex_destroy(&ctl->mu);
}

/* ------------------------------------------------------------------ */
/* Requests                                                           */

bool
al__ctl_submit(al_ctl_t *ctl, al__req_t *req)
{
    pthread_mutex_lock(&ctl->mu);
    if (ctl->stop) {
        pthread_mutex_unlock(&ctl->mu);
        return false;
    }
    req->next = NULL;
    req->t_in = al__mono_s();
    *ctl->inbox_tail = req;
    ctl->inbox_tail = &req->next;
    if (ctl->waiting) {
        ctl->waiting = false;
        pthread_cond_signal(&ctl->cv);
    }
    pthread_mutex_unlock(&ctl->mu);
    return true;
}

/* A request with a job's own token (jobtoken.c): that job's steps and
 * reading that job, while its run runs, as its owner; 401 or 403
 * otherwise. */
static void
job_token(al_ctl_t *ctl, al__req_t *req)
{
    uint64_t id = al__jobtok_job(req->token);
    al__job_t *j = id != UINT64_MAX ? al__ctl_job(ctl, id) : NULL;
    if (j == NULL || !al__jobtok_valid(j, req->token)) {
        al__reply_error(req, 401, "unauthorized",
                        "a job's token that is not valid, or whose job no "
                        "longer runs");
        return;
    }
    const al__route_t *rt = req->route;
    char ids[24];
    snprintf(ids, sizeof ids, "%llu", (unsigned long long)j->id);
    bool ok = ((strcmp(rt->method, "POST") == 0 &&
                strcmp(rt->path, "/v1/jobs/*/steps") == 0) ||
               (strcmp(rt->method, "GET") == 0 &&
                strcmp(rt->path, "/v1/jobs/*") == 0)) &&
              req->cap[0] != NULL && strcmp(req->cap[0], ids) == 0;
    if (!ok) {
        al__reply_error(req, 403, "forbidden",
                        "a job's token may only record that job's steps and "
                        "read that job");
        return;
    }
    req->user = j->user;
    req->role = ROLE_USER;
    req->route->fn(ctl, req);
}

/* Authenticates and runs one request; the handler may park it. */
static void
handle(al_ctl_t *ctl, al__req_t *req)
{
    const al__route_t *rt = req->route;
    if (rt->role != ROLE_NONE && al__jobtok_job(req->token) != 0) {
        job_token(ctl, req);
        return;
    }
    if (rt->role != ROLE_NONE) {
        const al__token_t *t = al__token_check(ctl, req->token);
        if (t == NULL) {
            al__reply_error(req, 401, "unauthorized",
                            "missing or invalid bearer token (send "
                            "Authorization: Bearer TOKEN; admins create "
                            "tokens with `allot token create`)");
            return;
        }
        req->user = t->user;
        req->role = t->role;
        /* Agents may only use agent routes, and only agents may. */
        bool ok = rt->role == ROLE_AGENT   ? t->role == ROLE_AGENT
                  : rt->role == ROLE_ADMIN ? t->role == ROLE_ADMIN
                  : rt->role == ROLE_METRICS
                      ? (t->role == ROLE_METRICS || t->role == ROLE_ADMIN)
                      : (t->role == ROLE_USER || t->role == ROLE_ADMIN);
        if (!ok) {
            al__reply_error(req, 403, "forbidden",
                            "this call needs the %s role; your token "
                            "has the %s role",
                            al__role_name(rt->role), al__role_name(t->role));
            return;
        }
    }
    rt->fn(ctl, req);
}

static int
flush(al_ctl_t *ctl)
{
    int rc = 0;
    for (size_t i = 0; i < ctl->ndirty; i++) {
        al__job_t *j = ctl->dirty[i];
        j->dirty = false;
        if (rc == 0)
            rc = al__store_put_job(ctl, j);
    }
    ctl->ndirty = 0;
    for (int i = 0; i < ctl->nnodes; i++) {
        if (ctl->nodes[i].dirty) {
            ctl->nodes[i].dirty = false;
            if (rc == 0)
                rc = al__store_put_node(ctl, &ctl->nodes[i]);
            al__clusterev_node(ctl, &ctl->nodes[i]);
        }
    }
    return rc;
}

/* Drops the whole in-memory state and loads it again from the store: after
 * a failed commit, memory may hold changes the store does not. */
static void
reload(al_ctl_t *ctl)
{
    for (uint64_t i = 0; i < ctl->njobs; i++)
        al__job_free(ctl->jobs[i]);
    memset(ctl->jobs, 0, ctl->jobs_cap * sizeof(void *));
    ctl->njobs = 0;
    ctl->active_lo = 0;
    ctl->ndirty = 0;
    ctl->nrunning = 0;
    al__jobcounts_rebuild(ctl); /* no jobs: zeros, should the load fail */
    for (int i = 0; i < ctl->nqueues; i++)
        al__queue_fini(&ctl->queues[i]);
    ctl->nqueues = 0;
    al__members_fini(ctl);
    /* Answer the parked long-polls before their nodes go. */
    for (int i = 0; i < ctl->nnodes; i++) {
        al__req_t *p = ctl->nodes[i].parked;
        if (p != NULL) {
            al__reply_error(p, 503, "unavailable", "the store was reloaded");
            al__req_complete(ctl, p);
        }
        al__node_fini(&ctl->nodes[i]);
    }
    ctl->nnodes = 0;
    ctl->node_hashed = 0;
    for (int i = 0; i < ctl->ntokens; i++)
        free(ctl->tokens[i].user);
    ctl->ntokens = 0;
    al__svc_reset(ctl);
    char *cause = NULL;
    if (al__store_load(ctl, &cause) != 0) {
        al_error("store reload failed: %s", cause ? cause : "?");
        free(cause);
        ctl->store_failed = true;
        return;
    }
    al__ctl_index_running(ctl);
    al__jobcounts_rebuild(ctl);
    al__fairshare_load(ctl);
    al__consolidate_load(ctl);
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < ctl->nnodes; i++)
        ctl->nodes[i].last_seen = now;
    ctl->store_failed = false;
    al__ctl_touch(ctl);
}

/* Waits for requests, a due cycle, a parked poll's deadline or stop.
 * Returns the batch of requests taken from the inbox and sets *stop. */
static al__req_t *
wait_for_work(al_ctl_t *ctl, bool *stop)
{
    int64_t now = al_clock_mono_ms();
    int64_t wake = ctl->sched_last + ctl->opts.sched_interval_ms;
    if (ctl->sched_dirty && ctl->sched_due < wake)
        wake = ctl->sched_due;
    if (ctl->parked_min < wake)
        wake = ctl->parked_min;
    /* Event streams' keepalives and long polls are due to the second,
     * and streams a publish left to wake within a few ms. */
    if (ctl->events != NULL && wake > now + 1000)
        wake = now + 1000;
    if (al__events_next_ms(ctl->events) < wake)
        wake = al__events_next_ms(ctl->events);
    if (al__svc_due(ctl) < wake)
        wake = al__svc_due(ctl);
    pthread_mutex_lock(&ctl->mu);
    while (ctl->inbox == NULL && !ctl->stop && now < wake) {
        struct timespec ts = { wake / 1000, (long)(wake % 1000) * 1000000 };
        ctl->waiting = true;
        pthread_cond_timedwait(&ctl->cv, &ctl->mu, &ts);
        ctl->waiting = false;
        now = al_clock_mono_ms();
    }
    al__req_t *batch = ctl->inbox;
    ctl->inbox = NULL;
    ctl->inbox_tail = &ctl->inbox;
    *stop = ctl->stop;
    pthread_mutex_unlock(&ctl->mu);
    return batch;
}

static void
handle_batch(al_ctl_t *ctl, al__req_t *batch, bool txn)
{
    for (al__req_t *r = batch, *next; r != NULL; r = next) {
        next = r->next;
        if (!txn && r->route->role != ROLE_NONE) {
            al__reply_error(r, 503, "unavailable",
                            "the state store is unavailable");
            al__req_complete(ctl, r);
            continue;
        }
        handle(ctl, r);
        if (r->deadline == 0 || r->status != 0)
            al__req_complete(ctl, r);
    }
}

/* ALLOT_DEBUG_JOBCOUNTS: the kept job counts must equal a recount after
 * every commit; a difference is a path that changed a job without
 * al__jobcounts_sync(), and ends the controller where it is seen. */
static void
check_counts(const al_ctl_t *ctl)
{
    char *cause = NULL;
    if (al__jobcounts_check(ctl, &cause) == 0)
        return;
    al_error("job counts differ from a recount: %s", cause);
    free(cause);
    abort();
}

/* Node timeouts, the scheduling cycle when due, and the commit. */
static void
maintain(al_ctl_t *ctl, bool stop)
{
    int64_t now = al_clock_mono_ms();
    /* Timeouts are at least 100 ms: a look every 20 ms is soon enough. */
    if (now - ctl->nodes_checked >= 20) {
        ctl->nodes_checked = now;
        al__ctl_nodes_down(ctl, now);
    }
    if (!stop && now - ctl->idle_checked >= 250) {
        ctl->idle_checked = now;
        al__idle_check(ctl);
    }
    /* Ends an agent reported wait for a cycle to be answered: committing
     * them first and cycling in the next pass would make each wave of
     * ends two durable commits (two disk flushes with --sync full) before
     * the agent hears what to start in their place.  The cycle runs now,
     * in this transaction, unless a cycle costs more than a commit and
     * more than the coalescing wait (al__ctl_touch()): then coalescing
     * the changes of several passes matters more. */
    bool ends = ctl->sched_dirty && ctl->ends_parked &&
                (ctl->cycle_ms <= ctl->commit_ms ||
                 2 * ctl->cycle_ms <= ctl->opts.coalesce_ms);
    if (!stop && ((ctl->sched_dirty && (now >= ctl->sched_due || ends)) ||
                  now >= ctl->sched_last + ctl->opts.sched_interval_ms)) {
        ctl->sched_dirty = false;
        ctl->sched_last = now;
        al__ctl_time_limits(ctl);
        al__cycle_run(ctl);
        ctl->cycled = true;
        ctl->cycle_ms = al_clock_mono_ms() - now;
    }
    al__usage_tick(ctl, al_clock_ms());
    al__fairshare_save(ctl, stop ? 0 : -1);
    if (!stop)
        al__svc_tick(ctl, al_clock_mono_ms());
    if (flush(ctl) == 0) {
        double t0 = al__mono_s();
        int rc = al__store_commit(ctl);
        double took = al__mono_s() - t0;
        al__hist_observe(&ctl->counters.commit, took);
        ctl->commit_ms = (int64_t)(took * 1000) + 1;
        if (rc == 0 && ctl->jc.check)
            check_counts(ctl);
        if (rc == 0)
            return;
    }
    al_error("store commit failed; answering 503 and reloading the state "
             "from the store");
    al__store_rollback(ctl);
    for (al__req_t *r = ctl->ready; r != NULL; r = r->next) {
        if (!r->mutating && !r->directs)
            continue;
        json_decref(r->resp);
        r->resp = NULL;
        al__reply_error(r, 503, "unavailable",
                        "the state store failed to commit");
    }
    ctl->store_failed = true;
}

/* Answers the long-polls whose node changed or whose time is up. */
static void
answer_polls(al_ctl_t *ctl, bool stop)
{
    int64_t now = al_clock_mono_ms();
    if (!stop && !ctl->store_failed && !ctl->nodes_changed && !ctl->cycled &&
        now < ctl->parked_min)
        return; /* nothing for any node */
    ctl->parked_min = INT64_MAX;
    for (int i = 0; i < ctl->nnodes; i++) {
        al__node_t *n = &ctl->nodes[i];
        al__req_t *p = n->parked;
        /* A sync that reported ends waits for a cycle, any other for a
         * change of the node's desired set. */
        bool changed = p != NULL && p->after_cycle ? ctl->cycled : n->changed;
        if (p != NULL &&
            (changed || now >= p->deadline || stop || ctl->store_failed))
            al__proto_answer_parked(ctl, i);
        else if (p != NULL && p->deadline < ctl->parked_min)
            ctl->parked_min = p->deadline;
        n->changed = false;
    }
    ctl->nodes_changed = false;
    if (ctl->cycled)
        ctl->ends_parked = false;
    ctl->cycled = false;
}

/* Counts a request's duration under its route and status, for GET
 * /metrics. */
static void
api_observe(al_ctl_t *ctl, const al__req_t *req, double seconds)
{
    const al__route_t *rt = req->route;
    al__api_hist_t *h = NULL;
    for (int i = 0; i < ctl->napi_hist && h == NULL; i++)
        if (ctl->api_hist[i].route == rt &&
            ctl->api_hist[i].status == req->status)
            h = &ctl->api_hist[i];
    if (h == NULL) {
        if (ctl->napi_hist == ctl->api_hist_cap) {
            ctl->api_hist_cap = ctl->api_hist_cap ? 2 * ctl->api_hist_cap : 16;
            ctl->api_hist =
                al_xreallocarray(ctl->api_hist, (size_t)ctl->api_hist_cap,
                                 sizeof *ctl->api_hist);
        }
        h = &ctl->api_hist[ctl->napi_hist++];
        *h = (al__api_hist_t){ .route = rt, .status = req->status };
    }
    al__hist_observe(&h->h, seconds < 0 ? 0 : seconds);
}

/* Hands the replies that are ready back to the intake. */
static void
release(al_ctl_t *ctl)
{
    for (al__req_t *r = ctl->ready, *next; r != NULL; r = next) {
        next = r->next; /* r is gone once its reply is sent */
        api_observe(ctl, r, al__mono_s() - r->t_in);
        ctl->reply(r);
    }
    ctl->ready = NULL;
}

static void *
loop_main(void *arg)
{
    al_ctl_t *ctl = arg;
    for (;;) {
        bool stop;
        al__req_t *batch = wait_for_work(ctl, &stop);
        ctl->ready = NULL;
        if (ctl->store_failed)
            reload(ctl);
        bool txn = !ctl->store_failed && al__store_begin(ctl) == 0;
        handle_batch(ctl, batch, txn);
        if (txn)
            maintain(ctl, stop);
        answer_polls(ctl, stop);
        release(ctl);
        al__events_tick(ctl->events, al_clock_mono_ms());
        if (stop)
            return NULL;
    }
}
