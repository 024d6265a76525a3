/*
 * svc.h -- inference services inside the controller: their settings and
 * body (svcbody.c), the controller's side of them (svc.c: replicas as
 * jobs, autoscaling, rolling updates, reconciled by the loop) and their
 * API (api_svc.c).  The request path is router.c's (router.h).
 */
#ifndef AL_SERVER_SVC_H
#define AL_SERVER_SVC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "router.h"
#include "server_int.h"

/* ------------------------------------------------------------------ */
/* svcbody.c: a service's settings                                    */

/* What a service runs and how it scales, as a body gives it or the store
 * keeps it.  The fields of `spec` are those of a job body (command, env,
 * cwd, queue, gpus, gpu_fraction, cpu_milli, mem_bytes, gpu_model): a
 * change to them is a rolling update; the others take effect at once. */
typedef struct al__svc_conf {
    json_t *spec;
    char *ready_path;
    int64_t min, max;
    int64_t port;  /* its own port on the router's address; 0: none */
    double target; /* concurrency per replica */
    bool public;
    int64_t window_s;        /* averaging window of the load (scale up) */
    int64_t down_s;          /* scale down only after this long lower */
    int64_t idle_s;          /* to zero after this long without requests */
    int64_t drain_s;         /* grace for requests under way on a stop */
    int64_t queue_max;       /* requests held while nothing is ready */
    int64_t queue_timeout_s; /* how long one is held */
    int64_t start_timeout_s; /* a replica not ready by then is replaced */
} al__svc_conf_t;

#define AL_SVC_MAX_REPLICAS 64

/* Applies body b to *base (defaults when base is NULL: a create, which
 * needs a command) into *out, checking every field (the spec through
 * al__job_parse() as `owner`) and the whole (min <= max, ...).
 * *spec_changed tells whether the spec differs from base's.  0, or
 * AL_EINVAL with the reason in *cause (caller frees), *out untouched.
 * "name" in b is ignored here (the caller checks it). */
int al__svc_conf_apply(const json_t *b, const al__svc_conf_t *base,
                       const char *owner, al__svc_conf_t *out,
                       bool *spec_changed, char **cause);
/* The body form of c (new reference). */
json_t *al__svc_conf_json(const al__svc_conf_t *c);
void al__svc_conf_fini(al__svc_conf_t *c);
/* The job body of a replica: c's spec as class inference, with PORT,
 * ALLOT_REPLICA and ALLOT_SERVICE in its env (new reference). */
json_t *al__svc_job_body(const al__svc_conf_t *c, const char *name, int idx,
                         int port);

/* ------------------------------------------------------------------ */
/* svc.c: the services                                                */

/* A replica: a job of the service.  Stored: job, idx, gen, port,
 * draining, cancelled; the rest is memory (monotonic ms). */
typedef struct al__replica {
    uint64_t job;
    int idx, gen, port;
    bool draining;  /* stops taking requests, then is cancelled */
    bool cancelled; /* stopped by the service: its end is no failure */
    int64_t drain_ms;
    int64_t want_ms; /* when a scale-up asked for it, or 0 */
    int64_t run_ms;  /* when its job was first seen running, or 0 */
    bool ready, was_ready;
    int64_t unready_ms; /* since when a once ready replica is not */
    int inflight;
} al__replica_t;

typedef struct al__sample {
    int64_t t;
    int conc, d;
} al__sample_t;

typedef struct al__svc {
    char *name, *owner;
    al__svc_conf_t conf; /* generation gen */
    al__svc_conf_t prev; /* generation prev_gen, when has_prev */
    bool has_prev;
    int gen, prev_gen;
    al__replica_t *reps;
    int nreps, capreps;
    int next_idx;
    int desired;
    json_t *events; /* [{time, event}], the last 100 */
    double rise_s;  /* the last load rise to a ready replica, seconds */
    double start_s; /* of which the replica's own start to ready */
    bool dirty;
    /* Memory only. */
    int fails;             /* replicas failed since one was last ready */
    int update_fails;      /* new-generation replicas failed before ready */
    int64_t next_start_ms; /* back-off */
    int64_t rise_ms;       /* when desired last rose */
    int64_t last_req_ms, last_sample_ms;
    uint64_t last_requests;
    bool req_seen;      /* a request came since the last sample */
    int port_error;     /* the router's last errno binding its port */
    al__sample_t *ring; /* concurrency samples, RING of them */
    int ring_head, nring;
    double conc_avg;
    /* The router's figures at the last tick. */
    int inflight, waiting;
    uint64_t requests, errors;
    double latency_sum;
} al__svc_t;

/* What a router process (`allot router`) last reported: its services'
 * load and its replicas' readiness (POST /v1/router/report), when
 * (monotonic ms).  Memory only; a report older than AL_SVC_REPORT_MS is
 * ignored. */
#define AL_SVC_MAX_ROUTERS 16
#define AL_SVC_REPORT_MS 2000
typedef struct al__ext_router {
    char id[64];
    int64_t at_ms;
    json_t *services; /* the report's "services" */
} al__ext_router_t;

typedef struct al__svcs {
    al__svc_t **v;
    int n, cap;
    int64_t next_tick;
    int port_next;
    al__ext_router_t ext[AL_SVC_MAX_ROUTERS];
    int next_ext;
    bool ext_fresh; /* some router process reported lately */
} al__svcs_t;

/* The service of that name, or NULL. */
al__svc_t *al__svc_find(al_ctl_t *ctl, const char *name);
/* Adds s to the table (taking it). */
void al__svc_put(al_ctl_t *ctl, al__svc_t *s);
/* Loads the table when not yet in memory; 0 or AL_EIO. */
int al__svc_load(al_ctl_t *ctl);
/* Appends a zeroed replica to s. */
al__replica_t *al__svc_add_replica(al__svc_t *s);
/* Appends an event to s's history (and the log). */
void al__svc_event(al__svc_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes s to the store (in the loop's transaction). */
int al__svc_store(al_ctl_t *ctl, al__svc_t *s);
/* The address of replica r's node while its job runs, else NULL. */
const char *al__svc_rep_addr(al_ctl_t *ctl, const al__replica_t *r);
/* Cancels replica r's job (who: why, for its history). */
void al__svc_stop_job(al_ctl_t *ctl, al__svc_t *s, al__replica_t *r,
                      const char *why);
/* Stops every replica, deletes s from the store and the table, frees
 * it. */
void al__svc_remove(al_ctl_t *ctl, al__svc_t *s, const char *who);

/* The loop's call in each iteration, inside its transaction: loads the
 * services on first use, follows replica jobs, publishes the replicas to
 * the router, scales, updates, writes what changed.  now_ms is the
 * monotonic clock. */
void al__svc_tick(al_ctl_t *ctl, int64_t now_ms);
/* When the loop should wake for the next tick (monotonic ms);
 * INT64_MAX when there are no services. */
int64_t al__svc_due(const al_ctl_t *ctl);
/* Drops the services from memory (the next tick loads them again): after
 * the store reloads, and at stop. */
void al__svc_reset(al_ctl_t *ctl);

/* Appends the services' series to GET /metrics: requests, failed
 * requests, latency (sum), requests under way and held, replicas
 * desired and ready, by service. */
void al__svc_metrics(const al_ctl_t *ctl, al_buf_t *out);

/* The API's calls (api_svc.c).  Each answers req. */
void al__svc_create(al_ctl_t *ctl, al__req_t *req);
void al__svc_list(al_ctl_t *ctl, al__req_t *req);
void al__svc_get(al_ctl_t *ctl, al__req_t *req);
void al__svc_update(al_ctl_t *ctl, al__req_t *req);
void al__svc_delete(al_ctl_t *ctl, al__req_t *req);
/* The router processes' calls (admins' tokens): the table they route by
 * (services, their running replicas' addresses, the tokens that may call
 * private services, as salted hashes), and their report. */
void al__svc_router_table(al_ctl_t *ctl, al__req_t *req);
void al__svc_router_report(al_ctl_t *ctl, al__req_t *req);
/* Adds the fresh reports of router processes to what the controller's own
 * router saw, o[i] for service s->v[i] (svc.c; now_ms monotonic); whether
 * any report was fresh. */
bool al__svc_merge_reports(al_ctl_t *ctl, al__rt_svc_t *o, int64_t now_ms);

#endif /* AL_SERVER_SVC_H */
