/*
 * svc.c -- inference services, the controller's side: a service is a
 * stored object (the `services` table: its settings, generation, replica
 * jobs and recent events) that owns replica jobs of class inference.  The
 * loop calls al__svc_tick() in every iteration; every 100 ms it
 *
 *   - follows the replicas' jobs (one that ended without being stopped is
 *     replaced, with back-off: 0.5 s doubling up to 30 s);
 *   - publishes the running replicas to the router (router.c) and reads
 *     back their readiness and the service's load;
 *   - scales: desired = ceil(mean concurrency over window_s / target),
 *     raised at once, lowered only when the highest desired of the last
 *     scale_down_delay_s is lower (faster up than down); to zero after
 *     idle_s without requests when min is 0; within min..max;
 *   - reconciles: starts or drains replicas to the desired count; a
 *     rolling update (a new generation of the spec) starts one new replica
 *     at a time and drains an old one for each new one ready, so the
 *     ready count never drops below the desired one; three new replicas
 *     that fail before becoming ready roll the service back;
 *   - drains: a replica to stop gets no new requests and is cancelled
 *     when its requests under way are done or after drain_s.
 *
 * May call: router.c (al__router_sync), svcbody.c, jobbody.c, state.c,
 * table.c, store.c, reason.c.  Called by ctl.c (the tick) and api_svc.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "log.h"
#include "router.h"
#include "svc.h"
#include "xmalloc.h"

#define TICK_MS 100
#define SAMPLE_MS 250
#define MAX_EVENTS 100
#define UNREADY_GRACE_MS 10000 /* a ready replica failing checks this long */
#define ROLLBACK_FAILS 3

/* ------------------------------------------------------------------ */
/* The table                                                          */

static void
svc_free(al__svc_t *s)
{
    if (s == NULL)
        return;
    free(s->name);
    free(s->owner);
    al__svc_conf_fini(&s->conf);
    al__svc_conf_fini(&s->prev);
    free(s->reps);
    free(s->ring);
    json_decref(s->events);
    free(s);
}

void
al__svc_reset(al_ctl_t *ctl)
{
    al__svcs_t *t = ctl->svcs;
    if (t == NULL)
        return;
    for (int i = 0; i < AL_SVC_MAX_ROUTERS; i++)
        json_decref(t->ext[i].services);
    for (int i = 0; i < t->n; i++)
        svc_free(t->v[i]);
    free(t->v);
    free(t);
    ctl->svcs = NULL;
}

al__svc_t *
al__svc_find(al_ctl_t *ctl, const char *name)
{
    al__svcs_t *t = ctl->svcs;
    for (int i = 0; t != NULL && i < t->n; i++)
        if (strcmp(t->v[i]->name, name) == 0)
            return t->v[i];
    return NULL;
}

void
al__svc_event(al__svc_t *s, const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    /* The analyzer, run after store_sqlite.c in one clang-tidy process,
     * loses the va_start above (it does not alone). */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    al_info("service %s: %s", s->name, m);
    json_array_append_new(
        s->events,
        json_pack("{s:I, s:s}", "time", (json_int_t)al_clock_ms(), "event", m));
    while (json_array_size(s->events) > MAX_EVENTS)
        json_array_remove(s->events, 0);
    s->dirty = true;
}

static json_t *
doc_of(const al__svc_t *s)
{
    json_t *reps = json_array();
    for (int i = 0; i < s->nreps; i++) {
        const al__replica_t *r = &s->reps[i];
        json_array_append_new(
            reps, json_pack("{s:I, s:i, s:i, s:i, s:b, s:b}", "job",
                            (json_int_t)r->job, "replica", r->idx, "gen",
                            r->gen, "port", r->port, "draining", r->draining,
                            "cancelled", r->cancelled));
    }
    json_t *o = json_pack(
        "{s:s, s:s, s:o, s:i, s:i, s:i, s:i, s:o, s:O, s:f, s:f}", "name",
        s->name, "owner", s->owner, "conf", al__svc_conf_json(&s->conf), "gen",
        s->gen, "prev_gen", s->prev_gen, "desired", s->desired, "next_replica",
        s->next_idx, "replicas", reps, "events", s->events, "rise_s", s->rise_s,
        "start_s", s->start_s);
    json_object_set_new(
        o, "prev", s->has_prev ? al__svc_conf_json(&s->prev) : json_null());
    return o;
}

int
al__svc_store(al_ctl_t *ctl, al__svc_t *s)
{
    json_t *d = doc_of(s);
    char *text = al_json_dump(d);
    json_decref(d);
    const char *v[2] = { s->name, text };
    int rc = al__store_write(ctl, "svc_put", 2, v);
    free(text);
    s->dirty = false;
    return rc;
}

/* A stored service, or NULL when malformed. */
static al__svc_t *
svc_from_doc(const json_t *d, int64_t now)
{
    const char *name = al_json_str(d, "name", NULL);
    const char *owner = al_json_str(d, "owner", NULL);
    if (name == NULL || owner == NULL)
        return NULL;
    al__svc_t *s = al_xcalloc(1, sizeof *s);
    s->name = al_xstrdup(name);
    s->owner = al_xstrdup(owner);
    char *cause = NULL;
    if (al__svc_conf_apply(json_object_get(d, "conf"), NULL, owner, &s->conf,
                           NULL, &cause) != 0) {
        al_warn("service %s: stored settings unreadable: %s", name, cause);
        free(cause);
        free(s->name);
        free(s->owner);
        free(s);
        return NULL;
    }
    json_t *prev = json_object_get(d, "prev");
    if (json_is_object(prev) &&
        al__svc_conf_apply(prev, NULL, owner, &s->prev, NULL, NULL) == 0)
        s->has_prev = true;
    s->gen = (int)al_json_int(d, "gen", 1);
    s->prev_gen = (int)al_json_int(d, "prev_gen", 0);
    s->desired = (int)al_json_int(d, "desired", 0);
    s->next_idx = (int)al_json_int(d, "next_replica", 0);
    s->rise_s = json_number_value(json_object_get(d, "rise_s"));
    s->start_s = json_number_value(json_object_get(d, "start_s"));
    json_t *ev = json_object_get(d, "events");
    s->events = json_is_array(ev) ? json_deep_copy(ev) : json_array();
    json_t *reps = json_object_get(d, "replicas");
    for (size_t i = 0; i < json_array_size(reps); i++) {
        json_t *r = json_array_get(reps, i);
        al__replica_t *x = al__svc_add_replica(s);
        x->job = (uint64_t)al_json_int(r, "job", 0);
        x->idx = (int)al_json_int(r, "replica", 0);
        x->gen = (int)al_json_int(r, "gen", 0);
        x->port = (int)al_json_int(r, "port", 0);
        x->draining = al_json_bool(r, "draining", false);
        x->cancelled = al_json_bool(r, "cancelled", false);
        if (x->draining)
            x->drain_ms = now;
    }
    s->last_req_ms = now; /* idle counts from the controller's start */
    return s;
}

static int
load_row(void *arg, int ncols, const char *const *cols)
{
    al_ctl_t *ctl = arg;
    if (ncols < 1 || cols[0] == NULL)
        return 0;
    json_t *d = json_loads(cols[0], 0, NULL);
    al__svc_t *s = d != NULL ? svc_from_doc(d, al_clock_mono_ms()) : NULL;
    json_decref(d);
    if (s != NULL)
        al__svc_put(ctl, s);
    return 0;
}

void
al__svc_put(al_ctl_t *ctl, al__svc_t *s)
{
    al__svcs_t *t = ctl->svcs;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->v = al_xreallocarray(t->v, (size_t)t->cap, sizeof(void *));
    }
    t->v[t->n++] = s;
    if (s->events == NULL)
        s->events = json_array();
}

al__replica_t *
al__svc_add_replica(al__svc_t *s)
{
    if (s->nreps == s->capreps) {
        s->capreps = s->capreps ? 2 * s->capreps : 8;
        s->reps =
            al_xreallocarray(s->reps, (size_t)s->capreps, sizeof *s->reps);
    }
    al__replica_t *r = &s->reps[s->nreps++];
    memset(r, 0, sizeof *r);
    return r;
}

static void
drop_replica(al__svc_t *s, int i)
{
    memmove(&s->reps[i], &s->reps[i + 1],
            (size_t)(s->nreps - i - 1) * sizeof *s->reps);
    s->nreps--;
    s->dirty = true;
}

/* Loads the table on first use; 0 or AL_EIO. */
int
al__svc_load(al_ctl_t *ctl)
{
    if (ctl->svcs != NULL)
        return 0;
    ctl->svcs = al_xcalloc(1, sizeof *ctl->svcs);
    if (al__store_read(ctl, "svc_all", 0, NULL, load_row, ctl) != 0) {
        al_error("services: cannot read the services table");
        return AL_EIO;
    }
    return 0;
}

void
al__svc_remove(al_ctl_t *ctl, al__svc_t *s, const char *who)
{
    for (int i = 0; i < s->nreps; i++)
        al__svc_stop_job(ctl, s, &s->reps[i], who);
    const char *v[1] = { s->name };
    (void)al__store_write(ctl, "svc_del", 1, v);
    al__svcs_t *t = ctl->svcs;
    for (int i = 0; i < t->n; i++)
        if (t->v[i] == s) {
            memmove(&t->v[i], &t->v[i + 1],
                    (size_t)(t->n - i - 1) * sizeof(void *));
            t->n--;
            break;
        }
    svc_free(s);
}

/* ------------------------------------------------------------------ */
/* Replicas                                                           */

void
al__svc_stop_job(al_ctl_t *ctl, al__svc_t *s, al__replica_t *r, const char *why)
{
    r->cancelled = true;
    s->dirty = true;
    al__job_t *j = al__ctl_job(ctl, r->job);
    if (j != NULL && j->state < JS_COMPLETED) {
        char *d = al_xasprintf("service %s: %s", s->name, why);
        al__ctl_set_state(ctl, j, JS_CANCELLED, "cancelled", d);
        free(d);
    }
}

/* A port for a new replica within the controller's range, apart from
 * every live replica's. */
static int
pick_port(al_ctl_t *ctl)
{
    al__svcs_t *t = ctl->svcs;
    int lo = ctl->opts.svc_port_lo, hi = ctl->opts.svc_port_hi;
    if (lo <= 0 || hi < lo) {
        lo = 30000;
        hi = 32767;
    }
    int span = hi - lo + 1;
    for (int k = 0; k < span; k++) {
        int p = lo + (t->port_next++ % span);
        bool used = false;
        for (int i = 0; i < t->n && !used; i++)
            for (int r = 0; r < t->v[i]->nreps && !used; r++)
                used = t->v[i]->reps[r].port == p;
        if (!used)
            return p;
    }
    return lo + (t->port_next++ % span);
}

static bool
start_replica(al_ctl_t *ctl, al__svc_t *s, int64_t now, bool scaled)
{
    int idx = s->next_idx;
    int port = pick_port(ctl);
    json_t *b = al__svc_job_body(&s->conf, s->name, idx, port);
    al__job_t *j = NULL;
    char *cause = NULL;
    int rc = al__job_parse(b, s->owner, false, &j, &cause);
    json_decref(b);
    if (rc == 0 && al__ctl_queue(ctl, j->queue) == NULL) {
        cause = al_xasprintf("no queue '%s'", j->queue);
        rc = AL_EINVAL;
        al__job_free(j);
    }
    if (rc != 0) {
        al__svc_event(s, "cannot start a replica: %s", cause ? cause : "?");
        free(cause);
        s->next_start_ms = now + 30000;
        return false;
    }
    s->next_idx++;
    j->id = ctl->njobs + 1;
    al__ctl_put_job(ctl, j);
    j->submit_ms = j->eligible_ms = al_clock_ms();
    al__ctl_dirty(ctl, j);
    char *d = al_xasprintf("replica %d of service %s (generation %d)", idx,
                           s->name, s->gen);
    al__store_event(ctl, j->id, j->submit_ms, "submitted", d);
    free(d);
    al__ctl_touch(ctl);
    al__replica_t *r = al__svc_add_replica(s);
    r->job = j->id;
    r->idx = idx;
    r->gen = s->gen;
    r->port = port;
    r->want_ms = scaled ? now : 0;
    al__svc_event(s, "replica %d: job %llu submitted (generation %d, port %d)",
                  idx, (unsigned long long)j->id, s->gen, port);
    return true;
}

static void
drain(al__svc_t *s, al__replica_t *r, int64_t now, const char *why)
{
    r->draining = true;
    r->drain_ms = now;
    al__svc_event(s, "replica %d: draining (%s)", r->idx, why);
}

/* Follows the replicas' jobs: those that ended leave the service. */
static void
follow(al_ctl_t *ctl, al__svc_t *s, int64_t now)
{
    for (int i = s->nreps - 1; i >= 0; i--) {
        al__replica_t *r = &s->reps[i];
        al__job_t *j = al__ctl_job(ctl, r->job);
        if (j != NULL && j->state < JS_COMPLETED) {
            if (j->state == JS_RUNNING && r->run_ms == 0)
                r->run_ms = now;
            continue;
        }
        if (!r->cancelled) {
            char buf[256];
            const char *why =
                j != NULL ? al__job_reason(ctl, j, buf, sizeof buf) : NULL;
            al__svc_event(s, "replica %d: job %llu %s%s%s; replaced", r->idx,
                          (unsigned long long)r->job,
                          j != NULL ? al__jstate_names[j->state] : "gone",
                          why != NULL ? ": " : "", why != NULL ? why : "");
            s->fails++;
            int64_t back = 500LL << (s->fails < 7 ? s->fails - 1 : 6);
            s->next_start_ms = now + (back < 30000 ? back : 30000);
            if (r->gen == s->gen && !r->was_ready)
                s->update_fails++;
        } else if (!r->draining) {
            /* stopped by us before it ran: nothing to tell */
        } else {
            al__svc_event(s, "replica %d: stopped", r->idx);
        }
        drop_replica(s, i);
    }
}

/* What the router saw: readiness, checks, drains done. */
static void
observe(al_ctl_t *ctl, al__svc_t *s, const al__rt_svc_t *o, int64_t now)
{
    for (int i = 0; i < s->nreps; i++) {
        al__replica_t *r = &s->reps[i];
        const al__rt_rep_t *x = &o->rep[i];
        r->ready = x->ready;
        r->inflight = x->inflight;
        if (r->cancelled)
            continue;
        if (x->ready && !r->was_ready) {
            r->was_ready = true;
            s->fails = 0;
            double start = r->run_ms ? (double)(now - r->run_ms) / 1000 : 0;
            if (r->want_ms != 0) {
                s->rise_s = (double)(now - r->want_ms) / 1000;
                s->start_s = start;
                al__svc_event(s,
                              "replica %d: ready, %.2f s after the load "
                              "asked for it (%.2f s after it started)",
                              r->idx, s->rise_s, start);
            } else {
                al__svc_event(s, "replica %d: ready (%.2f s after it started)",
                              r->idx, start);
            }
        }
        if (x->ready)
            r->unready_ms = 0;
        else if (r->was_ready && r->unready_ms == 0)
            r->unready_ms = now;
        if (r->draining) {
            /* Done once the router, told in this very sync that it
             * drains, has nothing under way there; router processes learn
             * it at their next look, so with them, a second later. */
            if (!x->draining ||
                (ctl->svcs->ext_fresh && now - r->drain_ms < 1000))
                continue;
            if (x->inflight == 0 || now - r->drain_ms >= s->conf.drain_s * 1000)
                al__svc_stop_job(ctl, s, r, "drained");
            continue;
        }
        if (r->was_ready && r->unready_ms != 0 &&
            now - r->unready_ms >= UNREADY_GRACE_MS) {
            al__svc_event(s,
                          "replica %d: failed its checks for %d s; "
                          "replaced",
                          r->idx, UNREADY_GRACE_MS / 1000);
            al__svc_stop_job(ctl, s, r, "failed its checks");
            s->fails++;
        } else if (!r->was_ready && r->run_ms != 0 &&
                   now - r->run_ms >= s->conf.start_timeout_s * 1000) {
            al__svc_event(s, "replica %d: not ready after %lld s; replaced",
                          r->idx, (long long)s->conf.start_timeout_s);
            al__svc_stop_job(ctl, s, r, "not ready in time");
            s->fails++;
            if (r->gen == s->gen)
                s->update_fails++;
        }
    }
    if (o->requests != s->last_requests || o->inflight > 0) {
        s->last_requests = o->requests;
        s->last_req_ms = now;
        s->req_seen = true;
    }
    if (o->port_error != s->port_error) {
        s->port_error = o->port_error;
        if (o->port_error != 0)
            al__svc_event(s, "cannot listen on its port %lld: %s",
                          (long long)s->conf.port, strerror(o->port_error));
    }
    s->inflight = o->inflight;
    s->waiting = o->waiting;
    s->requests = o->requests;
    s->errors = o->errors;
    s->latency_sum = o->latency_sum;
}

/* ------------------------------------------------------------------ */
/* Autoscaling                                                        */

#define RING 4096

static void
scale(al__svc_t *s, int64_t now)
{
    const al__svc_conf_t *c = &s->conf;
    if (s->ring == NULL)
        s->ring = al_xcalloc(RING, sizeof *s->ring);
    if (now - s->last_sample_ms >= SAMPLE_MS || s->nring == 0) {
        s->last_sample_ms = now;
        /* The mean concurrency over the window, this sample included. */
        double sum = s->inflight;
        int cnt = 1;
        for (int k = 0; k < s->nring; k++) {
            const al__sample_t *x =
                &s->ring[(s->ring_head + RING - 1 - k) % RING];
            if (now - x->t >= c->window_s * 1000)
                break;
            sum += x->conc;
            cnt++;
        }
        double avg = sum / cnt;
        int d = (int)ceil(avg / c->target - 1e-9);
        if (d < 1 && s->req_seen)
            d = 1; /* a request came: at least one replica */
        s->req_seen = false;
        al__sample_t *x = &s->ring[s->ring_head];
        x->t = now;
        x->conc = s->inflight;
        x->d = d;
        s->ring_head = (s->ring_head + 1) % RING;
        if (s->nring < RING)
            s->nring++;
        s->conc_avg = avg;
    }
    /* The highest of the scale-down delay: up at once, down late. */
    int dmax = 0;
    for (int k = 0; k < s->nring; k++) {
        const al__sample_t *x = &s->ring[(s->ring_head + RING - 1 - k) % RING];
        if (k > 0 && now - x->t >= c->down_s * 1000)
            break;
        if (x->d > dmax)
            dmax = x->d;
    }
    int want = dmax;
    if (want == 0) {
        bool idle = now - s->last_req_ms >= c->idle_s * 1000;
        want = s->desired > 0 && !idle ? 1 : 0;
    }
    if (want < c->min)
        want = (int)c->min;
    if (want > c->max)
        want = (int)c->max;
    if (want > s->desired) {
        al__svc_event(s, "scale up %d -> %d (concurrency %.1f, target %g)",
                      s->desired, want, s->conc_avg, c->target);
        s->rise_ms = now;
    } else if (want < s->desired) {
        if (want == 0)
            al__svc_event(s, "scale to zero (no request for %lld s)",
                          (long long)c->idle_s);
        else
            al__svc_event(s,
                          "scale down %d -> %d (concurrency %.1f, "
                          "target %g)",
                          s->desired, want, s->conc_avg, c->target);
    }
    s->desired = want;
}

/* ------------------------------------------------------------------ */
/* Reconciling                                                        */

/* The replica to stop first among those of gen (same: gen == s->gen,
 * else the others), not draining: one not running, then not ready, then
 * the newest. */
static al__replica_t *
victim(al_ctl_t *ctl, al__svc_t *s, bool same)
{
    al__replica_t *best = NULL;
    int best_rank = -1;
    for (int i = 0; i < s->nreps; i++) {
        al__replica_t *r = &s->reps[i];
        if (r->draining || r->cancelled || (r->gen == s->gen) != same)
            continue;
        al__job_t *j = al__ctl_job(ctl, r->job);
        int rank = j == NULL || j->state != JS_RUNNING ? 3 : !r->ready ? 2 : 1;
        if (rank > best_rank || (rank == best_rank && r->idx > best->idx)) {
            best = r;
            best_rank = rank;
        }
    }
    return best;
}

static void
stop_one(al_ctl_t *ctl, al__svc_t *s, al__replica_t *r, int64_t now,
         const char *why)
{
    al__job_t *j = al__ctl_job(ctl, r->job);
    if (j == NULL || j->state != JS_RUNNING)
        al__svc_stop_job(ctl, s, r, why); /* nothing to drain */
    else
        drain(s, r, now, why);
}

static void
rollback(al__svc_t *s)
{
    al__svc_conf_t bad = s->conf;
    int bad_gen = s->gen;
    s->conf = s->prev;
    s->gen = s->prev_gen;
    s->prev = bad;
    s->prev_gen = bad_gen;
    s->update_fails = 0;
    s->fails = 0;
    s->next_start_ms = 0;
    al__svc_event(s,
                  "update to generation %d failed (%d replicas did not "
                  "become ready); rolled back to generation %d",
                  bad_gen, ROLLBACK_FAILS, s->gen);
}

static void
reconcile(al_ctl_t *ctl, al__svc_t *s, int64_t now)
{
    int cur = 0, cur_ready = 0, cur_unready = 0, old = 0;
    for (int i = 0; i < s->nreps; i++) {
        const al__replica_t *r = &s->reps[i];
        if (r->draining || r->cancelled)
            continue;
        if (r->gen == s->gen) {
            cur++;
            if (r->ready)
                cur_ready++;
            else
                cur_unready++;
        } else {
            old++;
        }
    }
    int n = s->desired;
    bool can_start = now >= s->next_start_ms;
    if (old > 0) {
        if (s->update_fails >= ROLLBACK_FAILS && s->has_prev) {
            rollback(s);
            return;
        }
        /* Keep old ones until as many new ones are ready. */
        int allowed = n - cur_ready > 0 ? n - cur_ready : 0;
        while (old > allowed) {
            al__replica_t *r = victim(ctl, s, false);
            if (r == NULL)
                break;
            stop_one(ctl, s, r, now, "replaced by a new generation");
            old--;
        }
        if (cur < n && cur_unready == 0 && can_start)
            start_replica(ctl, s, now, false);
        return;
    }
    s->update_fails = 0;
    if (cur < n && can_start) {
        bool scaled = now - s->rise_ms < 2000;
        /* After failures, one at a time at the back-off's pace. */
        int k = s->fails > 0 ? 1 : n - cur;
        for (int i = 0; i < k; i++)
            if (!start_replica(ctl, s, now, scaled))
                break;
    }
    while (cur > n) {
        al__replica_t *r = victim(ctl, s, true);
        if (r == NULL)
            break;
        stop_one(ctl, s, r, now, "scaled down");
        cur--;
    }
}

/* ------------------------------------------------------------------ */
/* The tick                                                           */

int64_t
al__svc_due(const al_ctl_t *ctl)
{
    const al__svcs_t *t = ctl->svcs;
    if (t == NULL)
        return 0;
    if (t->n == 0)
        return INT64_MAX;
    return t->next_tick;
}

const char *
al__svc_rep_addr(al_ctl_t *ctl, const al__replica_t *r)
{
    al__job_t *j = al__ctl_job(ctl, r->job);
    if (j != NULL && j->state == JS_RUNNING && !r->cancelled &&
        j->tasks != NULL && j->tasks[0].node >= 0 &&
        j->tasks[0].node < ctl->nnodes)
        return ctl->nodes[j->tasks[0].node].addr;
    return NULL;
}

bool
al__svc_merge_reports(al_ctl_t *ctl, al__rt_svc_t *o, int64_t now)
{
    al__svcs_t *t = ctl->svcs;
    bool any = false;
    if (o == NULL || t->n == 0)
        return false;
    for (int k = 0; k < AL_SVC_MAX_ROUTERS; k++) {
        const al__ext_router_t *e = &t->ext[k];
        if (e->services == NULL || now - e->at_ms > AL_SVC_REPORT_MS)
            continue;
        any = true;
        size_t n = json_array_size(e->services);
        for (size_t x = 0; x < n; x++) {
            json_t *sv = json_array_get(e->services, x);
            const char *name = al_json_str(sv, "name", "");
            int i = 0;
            while (i < t->n && strcmp(t->v[i]->name, name) != 0)
                i++;
            if (i == t->n)
                continue;
            o[i].inflight += (int)al_json_int(sv, "inflight", 0);
            o[i].waiting += (int)al_json_int(sv, "waiting", 0);
            o[i].requests += (uint64_t)al_json_int(sv, "requests", 0);
            o[i].errors += (uint64_t)al_json_int(sv, "errors", 0);
            o[i].latency_sum +=
                json_number_value(json_object_get(sv, "latency_sum"));
            json_t *reps = json_object_get(sv, "replicas");
            for (size_t y = 0; y < json_array_size(reps); y++) {
                json_t *rp = json_array_get(reps, y);
                uint64_t job = (uint64_t)al_json_int(rp, "job", 0);
                for (int r = 0; r < o[i].nrep; r++) {
                    if (o[i].rep[r].job != job || o[i].rep[r].addr == NULL)
                        continue;
                    o[i].rep[r].ready |= al_json_bool(rp, "ready", false);
                    o[i].rep[r].inflight += (int)al_json_int(rp, "inflight", 0);
                }
            }
        }
    }
    return any;
}

/* The tokens that may call private services: users' and admins'. */
static al__token_t *
callers(al_ctl_t *ctl, int *n)
{
    al__token_t *v =
        ctl->ntokens > 0 ? al_xcalloc((size_t)ctl->ntokens, sizeof *v) : NULL;
    int k = 0;
    for (int i = 0; i < ctl->ntokens; i++)
        if (ctl->tokens[i].role == ROLE_USER ||
            ctl->tokens[i].role == ROLE_ADMIN)
            v[k++] = ctl->tokens[i];
    *n = k;
    return v;
}

void
al__svc_tick(al_ctl_t *ctl, int64_t now)
{
    if (ctl->svcs == NULL && al__svc_load(ctl) != 0)
        return;
    al__svcs_t *t = ctl->svcs;
    if (now < t->next_tick)
        return;
    t->next_tick = now + TICK_MS;
    for (int i = 0; i < t->n; i++)
        follow(ctl, t->v[i], now);
    /* Publish and observe, for all services in one call. */
    al__rt_svc_t *rs = t->n > 0 ? al_xcalloc((size_t)t->n, sizeof *rs) : NULL;
    for (int i = 0; i < t->n; i++) {
        al__svc_t *s = t->v[i];
        rs[i] = (al__rt_svc_t){
            .name = s->name,
            .ready_path = s->conf.ready_path,
            .public = s->conf.public,
            .owner = s->owner,
            .queue_max = (int)s->conf.queue_max,
            .queue_timeout_ms = s->conf.queue_timeout_s * 1000,
            .port = (int)s->conf.port,
            .nrep = s->nreps,
        };
        rs[i].rep = s->nreps > 0
                        ? al_xcalloc((size_t)s->nreps, sizeof *rs[i].rep)
                        : NULL;
        for (int k = 0; k < s->nreps; k++) {
            const al__replica_t *r = &s->reps[k];
            const char *addr = al__svc_rep_addr(ctl, r);
            rs[i].rep[k] = (al__rt_rep_t){ .job = r->job,
                                           .addr = addr,
                                           .port = r->port,
                                           .draining = r->draining };
        }
    }
    if (ctl->router != NULL) {
        int ntok;
        al__token_t *tok = callers(ctl, &ntok);
        al__router_sync(ctl->router, rs, t->n, tok, ntok);
        free(tok);
    }
    t->ext_fresh = al__svc_merge_reports(ctl, rs, now);
    for (int i = 0; i < t->n; i++) {
        al__svc_t *s = t->v[i];
        observe(ctl, s, &rs[i], now);
        free(rs[i].rep);
        scale(s, now);
        reconcile(ctl, s, now);
        if (s->dirty)
            (void)al__svc_store(ctl, s);
    }
    free(rs);
}

/* ------------------------------------------------------------------ */
/* GET /metrics                                                       */

void
al__svc_metrics(const al_ctl_t *ctl, al_buf_t *out)
{
    const al__svcs_t *t = ctl->svcs;
    if (t == NULL || t->n == 0)
        return;
    static const struct {
        const char *name, *type, *help;
    } series[] = {
        { "allot_service_requests_total", "counter",
          "Requests the router took for the service." },
        { "allot_service_errors_total", "counter",
          "Requests that got no answer from a replica." },
        /* A counter's name ends in _total (promtool refuses _sum on
         * anything but a histogram's or a summary's series). */
        { "allot_service_request_duration_seconds_total", "counter",
          "Seconds the router spent on the service's requests." },
        { "allot_service_inflight", "gauge",
          "Requests under way or held for a replica." },
        { "allot_service_waiting", "gauge",
          "Requests held while no replica is ready." },
        { "allot_service_replicas_desired", "gauge",
          "Replicas the autoscaler wants." },
        { "allot_service_replicas_ready", "gauge", "Replicas ready." },
    };
    for (size_t k = 0; k < sizeof series / sizeof series[0]; k++) {
        al_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", series[k].name,
                      series[k].help, series[k].name, series[k].type);
        for (int i = 0; i < t->n; i++) {
            const al__svc_t *s = t->v[i];
            int ready = 0;
            for (int r = 0; r < s->nreps; r++)
                ready += s->reps[r].ready && !s->reps[r].draining;
            double v = k == 0   ? (double)s->requests
                       : k == 1 ? (double)s->errors
                       : k == 2 ? s->latency_sum
                       : k == 3 ? s->inflight
                       : k == 4 ? s->waiting
                       : k == 5 ? s->desired
                                : ready;
            /* Every digit: a counter past a million must go on
             * counting, not stay at 1e+06. */
            al_buf_printf(out, "%s{service=\"%s\"} %.17g\n", series[k].name,
                          s->name, v);
        }
    }
}
