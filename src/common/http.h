/*
 * http.h -- a minimal HTTP/1.1 client for the agent and the CLI: http://
 * and https:// URLs (TLS through tls.h), one request per connection
 * ("Connection: close") or many over a kept connection (al_http_conn_t), bodies
 * read by Content-Length, chunked encoding or to the end of the stream.  A
 * request can be cut short by a timeout or by an "interrupt" descriptor
 * becoming readable, which the agent uses to leave a long-poll as soon as one
 * of its tasks exits.
 */
#ifndef AL_HTTP_H
#define AL_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct al_url {
    char host[256];
    char port[16];
    char prefix[256]; /* path prefix without trailing '/', often "" */
    bool tls;         /* https:// */
} al_url_t;

/* Parses "http[s]://host[:port][/prefix]" (host a name, an IPv4 address
 * or an IPv6 one in brackets; the port 80 or 443 when left out).  Returns 0 or
 * AL_EINVAL with a message in *cause (caller frees) when cause is not NULL. */
int al_url_parse(const char *url, al_url_t *u, char **cause);
/* At most this many controllers in a failover group. */
#define AL_URL_LIST_MAX 8
/* Parses a comma-separated list of such URLs (the controllers of a
 * failover group, tried in turn) into out[0..*n), 1 <= *n <=
 * AL_URL_LIST_MAX.  0, or AL_EINVAL with a message naming the bad one. */
int al_url_parse_list(const char *list, al_url_t *out, int *n, char **cause);

typedef struct al_http_resp {
    int status;
    al_buf_t body;
} al_http_resp_t;

/* Releases the body of a response. */
void al_http_resp_fini(al_http_resp_t *r);

/*
 * Sends `method path` (path starts with '/', after u->prefix) with an
 * optional bearer token and JSON body, and reads the whole response into
 * *resp (initialised by this function; release with al_http_resp_fini()).
 * timeout_ms <= 0 means none.  Returns 0 when a response arrived, whatever
 * its status; AL_EUNAVAIL when the server cannot be reached, AL_ETIMEDOUT,
 * AL_EBUSY when intr_fd (if >= 0) became readable, AL_EPARSE for a
 * malformed response, AL_EPERM when the server's TLS certificate is not
 * trusted.  On error *resp is untouched and *cause may hold a
 * message.
 */
int al_http_request(const al_url_t *u, const char *method, const char *path,
                    const char *token, const char *body, size_t bodylen,
                    int timeout_ms, int intr_fd, al_http_resp_t *resp,
                    char **cause);

/*
 * A connection kept open across requests (HTTP/1.1 keep-alive), for
 * clients that talk often: the agent's sync loop, benchmarks.  Not
 * thread-safe; one request at a time.  A request on a connection the server
 * closed while it was idle is sent again once on a new connection, only
 * when nothing at all came back on the old one.
 */
typedef struct al_http_conn {
    al_url_t url;
    int fd;             /* -1 when not connected */
    struct al_tls *tls; /* the session over fd, for https */
    /* Set by the caller, for idempotent requests only: a request that the
     * interrupt descriptor cuts short after it was sent whole, before any
     * of its response came, leaves the connection open with that response
     * `pending` instead of closing it.  The next request on c first reads
     * and drops it if it has come within a few ms, else reconnects.  (The
     * agent leaves a long-poll when a task ends: reconnecting cost the
     * controller a new connection thread every time.) */
    bool keep_interrupted;
    bool pending;
} al_http_conn_t;

void al_http_conn_init(al_http_conn_t *c, const al_url_t *u);
/* Closes the connection, if any; c may be used again. */
void al_http_conn_close(al_http_conn_t *c);
/* As al_http_request(), over c; errors close the connection. */
int al_http_conn_request(al_http_conn_t *c, const char *method,
                         const char *path, const char *token, const char *body,
                         size_t bodylen, int timeout_ms, int intr_fd,
                         al_http_resp_t *resp, char **cause);

#endif /* AL_HTTP_H */
