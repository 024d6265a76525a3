/*
 * router.h -- the inference services' request path (router.c): a listener
 * of its own that takes HTTP for /s/NAME/..., forwards each request to a
 * ready replica of service NAME (the one with the fewest outstanding
 * requests), holds requests while a service has no ready replica (a cold
 * start), probes replicas' ready paths, and counts the load that the
 * autoscaler (svc.c) reads.
 *
 * Threads.  The router has its own: one accepting connections, one per
 * client connection (keep-alive), one probing replicas.  Its tables are
 * under its own lock, never held while calling out; the control loop
 * meets it only through al__router_sync(), which publishes the services'
 * replicas and reads back what the router saw, in one short critical
 * section.  So a slow replica or a flood of requests never blocks the
 * loop, and the loop never blocks a request.
 */
#ifndef AL_SERVER_ROUTER_H
#define AL_SERVER_ROUTER_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server_int.h"

typedef struct al__router al__router_t;

/* A replica as the loop publishes it (in) and the router saw it (out). */
typedef struct al__rt_rep {
    /* in */
    uint64_t job;     /* its job: the key */
    const char *addr; /* its node's address, or NULL while not running */
    int port;
    bool draining; /* no new requests; those under way finish */
    /* out */
    bool ready;       /* its ready path answered 2xx last */
    int inflight;     /* requests under way there now */
    int64_t ready_ms; /* monotonic ms it first became ready, or 0 */
} al__rt_rep_t;

/* A service as the loop publishes it (in) and the router saw it (out). */
typedef struct al__rt_svc {
    /* in */
    const char *name;
    const char *ready_path;
    bool public;              /* else a token of the owner or an admin */
    const char *owner;        /* whose user tokens may call it */
    int port;                 /* its own port on the router's address; 0 */
    int queue_max;            /* requests held while no replica is ready */
    int64_t queue_timeout_ms; /* how long one is held at most */
    int nrep;
    al__rt_rep_t *rep;
    /* out */
    int inflight;              /* requests under way or held now */
    int waiting;               /* of which held for a replica */
    uint64_t requests, errors; /* since the router started */
    double latency_sum;        /* seconds, over `requests` */
    int64_t last_ms;           /* monotonic ms of the last request; 0 */
    int port_error;            /* errno of binding its own port, or 0 */
} al__rt_svc_t;

/* Starts a router listening on "HOST:PORT" (port 0 picks one).  0 and
 * *out, or an AL_E* code with a message in *cause (caller frees). */
int al__router_start(const char *where, al__router_t **out, char **cause);
/* The address bound. */
struct sockaddr_in al__router_addr(const al__router_t *r);

/* How long a request's head may take to arrive whole, in ms (from the
 * connection's start for its first request, from its first bytes for
 * the next ones; 0: the default, 10 s): a client too slow is answered
 * 408 and its connection closed. */
void al__router_set_head_timeout(al__router_t *r, int64_t ms);
/* Stops the threads, closes every connection and frees r; NULL is a
 * no-op. */
void al__router_stop(al__router_t *r);
/* The loop's one call: replaces the table with svcs[0..n) (replicas
 * matched by job, services by name; what is gone stops taking requests)
 * and the user tokens allowed to call private services (tokens[0..ntok):
 * copied), then fills the out fields of each. */
void al__router_sync(al__router_t *r, al__rt_svc_t *svcs, int n,
                     const al__token_t *tokens, int ntok);

/* A client's request head as the router reads it: offsets into the head
 * text.  Its target is /s/NAME[/rest]: NAME at name_off (name_len bytes,
 * 1..63), what goes to the replica at rest_off (rest_len bytes, maybe
 * none: "/" then). */
typedef struct al__rt_head {
    size_t method_len;
    size_t name_off, name_len, rest_off, rest_len;
    size_t token_off, token_len; /* Authorization: Bearer's; 0 length */
    int64_t content_length;      /* -1: none */
    bool chunked, keep_alive, http10, head_req;
    bool expect_continue; /* Expect: 100-continue */
    /* Whether the request may go to a second replica after the first
     * took it whole and died before answering: its method is idempotent
     * (GET, HEAD, PUT, DELETE, OPTIONS, TRACE) or it carries an
     * Idempotency-Key header. */
    bool retry_safe;
} al__rt_head_t;

/* Reads a request head h[0..n) (through its empty line); own_port: it
 * came to a service's own port, where any target goes as it is (name_len
 * 0).  0 and *out, or the HTTP status to answer (400, 404, 413, 501, 505)
 * with the reason in *why (a static string), *out untouched. */
int al__router_parse_head(const char *h, size_t n, bool own_port,
                          al__rt_head_t *out, const char **why);

#endif /* AL_SERVER_ROUTER_H */
