/*
 * server.h -- the door of the allot controller (`allot server`).
 *
 * The controller keeps the cluster's state (jobs, queues, nodes, tokens) in
 * memory, owned by one thread -- the control loop -- and in a SQLite store
 * under its state directory.  HTTP threads (libmicrohttpd) parse requests
 * and hand them to the loop through a queue; the loop applies them, commits
 * the store, and only then releases the replies (durable before
 * acknowledged).  The loop runs the scheduling core on every change,
 * coalesced within a few milliseconds, and on a timer, and answers the
 * agents' long-poll syncs with the tasks that should run on their node.
 */
#ifndef AL_SERVER_H
#define AL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct al_server_opts {
    const char *listen;        /* "HOST:PORT"; port 0 picks a free one */
    const char *state_dir;     /* created if missing */
    int64_t node_timeout_ms;   /* a node silent this long is marked down */
    int64_t sched_interval_ms; /* scheduling cycle at least this often */
    int64_t coalesce_ms;       /* wait this long after a change to batch more */
    int64_t grace_ms;          /* SIGTERM..SIGKILL grace told to agents */
    size_t max_body;           /* request body limit in bytes */
    int sync_full;             /* durable commits: SQLite synchronous=FULL,
                                  PostgreSQL synchronous_commit=on */
    /* What a GPU found faulty does to its node (gpuhealth.c): "drain"
     * (NULL, the default) drains the node; "fence" keeps only that GPU
     * from new work while the node's others take it. */
    const char *gpu_fault;
    /* The state store: NULL or "sqlite" for STATE/allot.db, or a
     * PostgreSQL connection URI (postgres:// or postgresql://). */
    const char *store;
    /* "HOST:PORT" of a second listener that serves GET /metrics only,
     * without a token (for a Prometheus on a trusted network), or NULL. */
    const char *metrics_listen;
    /* PEM files of the API listener's certificate (its chain) and private
     * key: HTTPS when both are set, plain HTTP when neither is. */
    const char *tls_cert, *tls_key;
    /* A directory for a private CA and a certificate made on first start
     * (selfsign.c), used as tls_cert and tls_key; or NULL. */
    const char *tls_self_signed;
    /* With a PostgreSQL store in use by another controller: wait as its
     * standby and take over when it goes (leader.c), rather than refuse
     * to start. */
    bool standby;
    /* The usage history (history.c): a fine row every usage_interval_s
     * (0: none), a coarse one every usage_rollup fine steps, each kept
     * this long. */
    int64_t usage_interval_s;
    int64_t usage_rollup;
    int64_t usage_keep_fine_days, usage_keep_coarse_days;
    /* pools.c: label keys that name topology levels, innermost first
     * ("rack,block"), and placement strategies by pool
     * ("train=frag,infer=spread"); NULL for none. */
    const char *topology;
    const char *pool_placement;
    /* consolidate.c: a pass every consolidate_s seconds (0: none), at
     * most consolidate_moves moves per queue and hour. */
    int64_t consolidate_s;
    int64_t consolidate_moves;
    /* fairshare.c: the half-life of the queues' decayed usage. */
    int64_t fairshare_half_life_s;
    /* The core's pipeline look-ahead (al_config_t.lookahead_depth,
     * lookahead_horizon, lookahead_hold; schedcfg.c). */
    int64_t lookahead_depth;
    int64_t lookahead_horizon_s;
    bool lookahead_hold;
    /* queuepolicy.c: minimum runtimes by class ("train=600"), or NULL. */
    const char *min_runtime;
    /* lifecycle.c: the first retry's back-off (seconds), doubled for each
     * next one. */
    int64_t retry_backoff_s;
    /* Inference services: the router's "HOST:PORT" (NULL: no router, no
     * services) and the replicas' ports, "LO-HI" (NULL: 30000-32767),
     * read into svc_port_lo/hi at start. */
    const char *router_listen;
    const char *svc_ports;
    int svc_port_lo, svc_port_hi;
    /* The router's deadline for a request's head, ms (0: 10 s). */
    int64_t router_head_ms;
} al_server_opts_t;

/* Fills *o with defaults (listen 127.0.0.1:7070, state ./allot-state). */
void al_server_opts_default(al_server_opts_t *o);

typedef struct al_server al_server_t;

/*
 * Opens the store (creating the admin and join tokens on first start),
 * starts the control loop and the HTTP listener, and writes the URL it
 * listens on to STATE/url.  Returns 0 and the server
 * in *out, or a negative AL_E* code with a malloc()ed message in *cause.
 */
int al_server_start(const al_server_opts_t *o, al_server_t **out, char **cause);
/* The port actually bound. */
int al_server_port(const al_server_t *s);
/* The port of the metrics listener, or 0 when there is none. */
int al_server_metrics_port(const al_server_t *s);
/* Stops the listener and the loop and releases everything; NULL is a no-op. */
void al_server_stop(al_server_t *s);

/* `allot server [options]`: runs until SIGINT/SIGTERM.  Returns an exit
 * status (0 ok, 1 failure, 2 usage). */
int al_server_main(int argc, char **argv);
/* Its options and --help (common/opt.h), for the CLI's list of commands. */
extern const struct al_opt_cmd al_server_cmd;
/* `allot router`: a router process for inference services (routerd.c);
 * its options (router_cmd.c). */
int al_router_main(int argc, char **argv);
extern const struct al_opt_cmd al_router_cmd;

#endif /* AL_SERVER_H */
