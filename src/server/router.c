/*
 * router.c -- the inference services' request path (see router.h): the
 * router's listener, its threads and tables, HTTP/1.1 forwarding with
 * keep-alive connections to replicas, the readiness probes.
 *
 * A request: the client's head is read and checked (router_parse_head(),
 * fuzzed), its service found, a replica chosen (ready, not draining, the
 * fewest outstanding requests); with none, the request waits on the
 * router's condition variable until one is ready, up to the service's
 * queue timeout.  Its body is read whole first (a chunked one decoded by
 * chunked.c, and sent on with a Content-Length).  A request that cannot
 * reach its replica (connect refused, or the request could not be
 * written) goes to another replica, up to four tries: the replica never
 * saw it whole.  One that went out whole and got no answer (the replica
 * closed the connection or died) is sent again only when that is safe:
 * an idempotent method (GET, HEAD, PUT, DELETE, OPTIONS, TRACE) or an
 * Idempotency-Key header; any other gets 502, as the replica may have
 * acted on it.  A kept-alive connection is checked before it is used, so
 * one the replica closed while idle is not taken for a death.  Once the
 * answer's first byte has gone to the client nothing is retried; a
 * replica that dies mid-answer closes the client's connection.  Answers go
 * through as they arrive (each read is written at once), framed by
 * Content-Length, chunked encoding, or the replica closing its connection.
 * A request's head must come whole within the head deadline (10 s by
 * default, from the connection's start or the head's first bytes), else
 * 408 and the connection closed.  The router's threads ask the kernel for
 * short time slices, and with ALLOT_ROUTER_TIMING set each request's
 * timing points go to rtime.c.
 *
 * May call: auth.c (token checks), chunked.c, rtime.c; nothing else of
 * the server.
 * Called by server.c (start, stop) and svc.c (al__router_sync()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "chunked.h"
#include "clock.h"
#include "core/error.h"
#include "log.h"
#include "router.h"
#include "rtime.h"
#include "xmalloc.h"

#define MAX_HEAD 16384      /* a request's or answer's head */
#define MAX_BODY (16 << 20) /* a request's body, held for retries */
#define MAX_CONNS 4096      /* client connections at once */
#define MAX_IDLE 32         /* kept-alive connections per replica */
#define MAX_TRIES 4         /* replicas tried for one request */
#define CLIENT_IDLE_S 60    /* a kept-alive client's silence */
#define HEAD_MS 10000       /* a request's head, from its first byte */
#define UPSTREAM_S 300      /* a replica's silence mid-answer */
#define CONNECT_MS 1000     /* connecting to a replica */
#define PROBE_READY_MS 1000 /* probes of a ready replica */
#define PROBE_START_MS 100  /* probes of one not ready yet */
#define PROBE_FAILS 3       /* failed probes that make it unready */
#define THREAD_STACK ((size_t)256 * 1024)

typedef struct rep {
    uint64_t job;
    char *addr;
    int port;
    bool draining, removed, ready;
    int inflight;
    int refs; /* requests and probes holding it */
    int64_t ready_ms, next_probe;
    int fails;
    int idle[MAX_IDLE];
    int nidle;
    struct rep *next;
} rep_t;

typedef struct svc {
    char *name, *ready_path, *owner;
    bool public, removed;
    int queue_max;
    int64_t queue_timeout_ms;
    rep_t *reps;
    int refs; /* requests holding it */
    int inflight, waiting;
    uint64_t requests, errors, rr;
    double latency_sum;
    int64_t last_ms;
    /* Its own port: wanted (the loop's), bound, its listener (-1; opened
     * and closed by the accepting thread only), a bind's errno, and when
     * to try a failed bind again. */
    int want_port, bound_port, lfd, port_error;
    int64_t port_retry_ms;
    struct svc *next;
} svc_t;

typedef struct conn {
    int cfd, ufd; /* the client's socket, and the replica's in use or -1 */
    char *ubuf;   /* MAX_HEAD bytes: a replica's answer passes through */
    int64_t *pts; /* the request's timing points, or NULL (rtime.h) */
    struct conn *next;
} conn_t;

struct al__router {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a replica became ready, the table changed, stop */
    int lfd;
    struct sockaddr_in sa; /* bound */
    pthread_t accept_thr, probe_thr;
    bool stop;
    svc_t *svcs;
    conn_t *conns;
    int nconns;
    al__token_t *tokens;
    int ntokens;
    atomic_llong head_ms; /* a request head's deadline (HEAD_MS) */
    al__rtime_t *timing;  /* the timing points, or NULL */
};

/* ------------------------------------------------------------------ */
/* Tables (under r->mu)                                               */

static void
rep_free(rep_t *p)
{
    for (int i = 0; i < p->nidle; i++)
        close(p->idle[i]);
    free(p->addr);
    free(p);
}

static void
svc_free(svc_t *s)
{
    for (rep_t *p = s->reps, *n; p != NULL; p = n) {
        n = p->next;
        rep_free(p);
    }
    free(s->name);
    free(s->ready_path);
    free(s->owner);
    if (s->lfd >= 0)
        close(s->lfd);
    free(s);
}

/* Frees the replicas removed that nothing holds, and the services. */
static void
collect(al__router_t *r)
{
    for (svc_t **sp = &r->svcs; *sp != NULL;) {
        svc_t *s = *sp;
        for (rep_t **pp = &s->reps; *pp != NULL;) {
            rep_t *p = *pp;
            if (p->removed && p->refs == 0) {
                *pp = p->next;
                rep_free(p);
            } else {
                pp = &p->next;
            }
        }
        if (s->removed && s->refs == 0 && s->reps == NULL && s->lfd < 0) {
            *sp = s->next;
            svc_free(s);
        } else {
            sp = &s->next;
        }
    }
}

static svc_t *
svc_find(al__router_t *r, const char *name, size_t len)
{
    for (svc_t *s = r->svcs; s != NULL; s = s->next)
        if (!s->removed && strlen(s->name) == len &&
            memcmp(s->name, name, len) == 0)
            return s;
    return NULL;
}

static void
set_str(char **dst, const char *src)
{
    if (*dst != NULL && src != NULL && strcmp(*dst, src) == 0)
        return;
    free(*dst);
    *dst = src != NULL ? al_xstrdup(src) : NULL;
}

void
al__router_sync(al__router_t *r, al__rt_svc_t *svcs, int n,
                const al__token_t *tokens, int ntok)
{
    al__token_t *copy =
        ntok > 0 ? al_xcalloc((size_t)ntok, sizeof *copy) : NULL;
    for (int i = 0; i < ntok; i++) {
        copy[i] = tokens[i];
        copy[i].user = al_xstrdup(tokens[i].user);
    }
    pthread_mutex_lock(&r->mu);
    al__token_t *old = r->tokens;
    int nold = r->ntokens;
    r->tokens = copy;
    r->ntokens = ntok;
    bool wake = false;
    for (svc_t *s = r->svcs; s != NULL; s = s->next)
        s->removed = true;
    for (int i = 0; i < n; i++) {
        al__rt_svc_t *in = &svcs[i];
        svc_t *s = NULL;
        for (svc_t *x = r->svcs; x != NULL && s == NULL; x = x->next)
            if (strcmp(x->name, in->name) == 0)
                s = x;
        if (s == NULL) {
            s = al_xcalloc(1, sizeof *s);
            s->name = al_xstrdup(in->name);
            s->lfd = -1;
            s->next = r->svcs;
            r->svcs = s;
        }
        s->removed = false;
        set_str(&s->ready_path, in->ready_path);
        set_str(&s->owner, in->owner);
        s->public = in->public;
        s->queue_max = in->queue_max;
        s->queue_timeout_ms = in->queue_timeout_ms;
        s->want_port = in->port;
        for (rep_t *p = s->reps; p != NULL; p = p->next)
            p->removed = true;
        for (int k = 0; k < in->nrep; k++) {
            al__rt_rep_t *ri = &in->rep[k];
            if (ri->addr == NULL) {
                ri->ready = false;
                ri->inflight = 0;
                ri->ready_ms = 0;
                continue;
            }
            rep_t *p = NULL;
            /* (All marked removed above; those still published come
             * back.) */
            for (rep_t *x = s->reps; x != NULL && p == NULL; x = x->next)
                if (x->job == ri->job)
                    p = x;
            if (p != NULL &&
                (p->port != ri->port || strcmp(p->addr, ri->addr) != 0))
                p = NULL; /* moved: a new replica */
            if (p == NULL) {
                p = al_xcalloc(1, sizeof *p);
                p->job = ri->job;
                p->addr = al_xstrdup(ri->addr);
                p->port = ri->port;
                p->next = s->reps;
                s->reps = p;
            }
            p->removed = false;
            if (p->draining != ri->draining)
                wake = true;
            p->draining = ri->draining;
            ri->ready = p->ready;
            ri->inflight = p->inflight;
            ri->ready_ms = p->ready_ms;
        }
        in->inflight = s->inflight;
        in->waiting = s->waiting;
        in->requests = s->requests;
        in->errors = s->errors;
        in->latency_sum = s->latency_sum;
        in->last_ms = s->last_ms;
        in->port_error = s->port_error;
    }
    collect(r);
    if (wake)
        pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < nold; i++)
        free(old[i].user);
    free(old);
}

/* ------------------------------------------------------------------ */
/* Sockets                                                            */

/* The first n-byte needle in h[0..hn), or NULL (memmem is GNU's). */
static const char *
find(const char *h, size_t hn, const char *needle, size_t n)
{
    for (size_t i = 0; n <= hn && i <= hn - n; i++)
        if (h[i] == needle[0] && memcmp(h + i, needle, n) == 0)
            return h + i;
    return NULL;
}

static void
set_timeout(int fd, int which, int seconds)
{
    struct timeval tv = { .tv_sec = seconds, .tv_usec = 0 };
    (void)setsockopt(fd, SOL_SOCKET, which, &tv, sizeof tv);
}

/* Timing point i of pts now, when timing (pts not NULL). */
static void
mark(int64_t *pts, int i)
{
    if (pts != NULL)
        pts[i] = al__rtime_now();
}

/* Where timing point i of pts goes, or NULL when not timing. */
static int64_t *
point(int64_t *pts, int i)
{
    return pts != NULL ? &pts[i] : NULL;
}

/* Has the kernel stamp what fd receives (for the timing points). */
static void
stamp_on(int fd)
{
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
}

/* Connects to addr:port within CONNECT_MS; the socket or -1. */
static int
dial(const char *addr, int port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd pf = { .fd = fd, .events = POLLOUT };
        int err = 0;
        socklen_t len = sizeof err;
        if (poll(&pf, 1, CONNECT_MS) == 1 &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
            rc = 0;
    }
    if (rc != 0) {
        close(fd);
        return -1;
    }
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_timeout(fd, SO_RCVTIMEO, UPSTREAM_S);
    set_timeout(fd, SO_SNDTIMEO, UPSTREAM_S);
    return fd;
}

static bool
write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static ssize_t
read_some(int fd, void *p, size_t n)
{
    for (;;) {
        ssize_t got = recv(fd, p, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        return got;
    }
}

/* read_some(), and into *rx the kernel's receive time of the bytes read
 * (SO_TIMESTAMPNS, CLOCK_REALTIME ns) when rx is not NULL. */
static ssize_t
read_stamped(int fd, void *p, size_t n, int64_t *rx)
{
    if (rx == NULL)
        return read_some(fd, p, n);
    struct iovec iov = { .iov_base = p, .iov_len = n };
    union {
        char b[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } u;
    struct msghdr m = { .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = u.b,
                        .msg_controllen = sizeof u.b };
    ssize_t got;
    do
        got = recvmsg(fd, &m, 0);
    while (got < 0 && errno == EINTR);
    for (struct cmsghdr *c = got > 0 ? CMSG_FIRSTHDR(&m) : NULL; c != NULL;
         c = CMSG_NXTHDR(&m, c))
        /* (SCM_TIMESTAMPNS, the same number, is not declared under
         * _POSIX_C_SOURCE.) */
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *rx = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        }
    return got;
}

#define HEAD_LATE (-2) /* read_head(): the deadline passed */

/* Reads until buf holds a whole head ("\r\n\r\n"); its length (the bytes
 * after it stay in buf, *have counts all), 0 on a clean EOF before any
 * byte, -1 on an error, a cut or a head over MAX_HEAD.  With deadline
 * not NULL, HEAD_LATE when *deadline (monotonic ms) passed first; a
 * *deadline of 0 is set to head_ms after the head's first bytes came, so
 * a kept-alive client's silence between requests is not counted.  *rx
 * as read_stamped()'s, of the last bytes read. */
static ssize_t
read_head(int fd, char *buf, size_t *have, int64_t *deadline, int64_t head_ms,
          int64_t *rx)
{
    for (;;) {
        if (*have >= 4) {
            const char *e = find(buf, *have, "\r\n\r\n", 4);
            if (e != NULL)
                return e + 4 - buf;
        }
        if (*have >= MAX_HEAD)
            return -1;
        if (deadline != NULL && *deadline == 0 && *have > 0)
            *deadline = al_clock_mono_ms() + head_ms;
        if (deadline != NULL && *deadline > 0) {
            int64_t left = *deadline - al_clock_mono_ms();
            struct pollfd pf = { .fd = fd, .events = POLLIN };
            int k = left > 0 ? poll(&pf, 1, (int)left) : 0;
            if (k < 0 && errno == EINTR)
                continue;
            if (k == 0)
                return HEAD_LATE;
        }
        ssize_t got = read_stamped(fd, buf + *have, MAX_HEAD - *have, rx);
        if (got <= 0)
            return got == 0 && *have == 0 ? 0 : -1;
        *have += (size_t)got;
    }
}

static const char *const reasons[][2] = {
    { "400", "Bad Request" },       { "401", "Unauthorized" },
    { "404", "Not Found" },         { "408", "Request Timeout" },
    { "411", "Length Required" },   { "413", "Content Too Large" },
    { "431", "Headers Too Large" }, { "501", "Not Implemented" },
    { "502", "Bad Gateway" },       { "503", "Service Unavailable" },
    { "504", "Gateway Timeout" },   { "505", "HTTP Version Not Supported" },
};

/* An answer of the router itself: {"error", "message"} as JSON. */
static bool
reply_error(int fd, int status, const char *code, const char *msg,
            bool close_after)
{
    const char *why = "Error";
    char st[8];
    snprintf(st, sizeof st, "%d", status);
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (strcmp(reasons[i][0], st) == 0)
            why = reasons[i][1];
    char body[512], head[512];
    int bn = snprintf(body, sizeof body,
                      "{\"error\": \"%s\", \"message\": \"%s\"}\n", code, msg);
    if (bn < 0 || (size_t)bn >= sizeof body)
        bn = (int)strlen(body);
    int hn =
        snprintf(head, sizeof head,
                 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                 "Content-Length: %d\r\n%s\r\n",
                 status, why, bn, close_after ? "Connection: close\r\n" : "");
    return write_all(fd, head, (size_t)hn) && write_all(fd, body, (size_t)bn);
}

/* ------------------------------------------------------------------ */
/* Heads                                                              */

/* Case-insensitive: whether comma-separated header value v (n bytes)
 * holds token t. */
static bool
has_token(const char *v, size_t n, const char *t)
{
    size_t tl = strlen(t);
    size_t i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - s == tl && strncasecmp(v + s, t, tl) == 0)
            return true;
    }
    return false;
}

/* Whether the header line at p (n bytes, without CRLF) is named name;
 * *val and *vlen its trimmed value. */
static bool
header_is(const char *p, size_t n, const char *name, const char **val,
          size_t *vlen)
{
    size_t nl = strlen(name);
    if (n <= nl || p[nl] != ':' || strncasecmp(p, name, nl) != 0)
        return false;
    size_t s = nl + 1;
    while (s < n && (p[s] == ' ' || p[s] == '\t'))
        s++;
    size_t e = n;
    while (e > s && (p[e - 1] == ' ' || p[e - 1] == '\t'))
        e--;
    *val = p + s;
    *vlen = e - s;
    return true;
}

/* Why the header line p..le (its colon at colon) is refused, or NULL:
 * its name must be a token (RFC 9110 5.1: no white space before the
 * colon) and its value free of control bytes but HTAB (no bare CR or
 * LF, no NUL). */
static const char *
header_bad(const char *p, const char *colon, const char *le)
{
    for (const char *c = p; c < colon; c++) {
        unsigned char u = (unsigned char)*c;
        if (u <= ' ' || u >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", u) != NULL)
            return "malformed header name";
    }
    for (const char *c = colon + 1; c < le; c++) {
        unsigned char u = (unsigned char)*c;
        if ((u < ' ' && u != '\t') || u == 0x7f)
            return "a control byte in a header";
    }
    return NULL;
}

/* A decimal length of at most 18 digits, or -1. */
static int64_t
parse_len(const char *v, size_t n)
{
    if (n == 0 || n > 18)
        return -1;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        x = x * 10 + (v[i] - '0');
    }
    return x;
}

/* The target t (tl bytes, at offset off in the head) into o: on a
 * service's own port all of it is the rest; else /s/NAME[/rest][?query],
 * NAME of 1..63 bytes.  false when it is not such a target. */
static bool
parse_target(const char *t, size_t tl, size_t off, bool own_port,
             al__rt_head_t *o)
{
    if (own_port) {
        o->name_off = o->rest_off = off;
        o->rest_len = tl;
        return true;
    }
    if (tl < 4 || memcmp(t, "/s/", 3) != 0)
        return false;
    size_t nl = 0;
    while (3 + nl < tl && t[3 + nl] != '/' && t[3 + nl] != '?')
        nl++;
    if (nl == 0 || nl > 63)
        return false;
    o->name_off = off + 3;
    o->name_len = nl;
    o->rest_off = o->name_off + nl;
    o->rest_len = tl - 3 - nl;
    return true;
}

/* The checks of a whole head o (the request line at h) on its body's
 * framing, and whether it may be sent twice (o->retry_safe): 0, or the
 * status to answer with the reason in *why. */
static int
check_body(al__rt_head_t *o, const char *h, const char **why)
{
    /* Both framings: a smuggled request could hide between them. */
    if (o->chunked && o->content_length >= 0) {
        *why = "both Transfer-Encoding and Content-Length";
        return 400;
    }
    if (o->chunked && o->http10) {
        *why = "Transfer-Encoding in an HTTP/1.0 request";
        return 400;
    }
    if (o->content_length > MAX_BODY) {
        *why = "request body over 16 MiB";
        return 413;
    }
    static const char *const idempotent[] = { "GET",    "HEAD",    "PUT",
                                              "DELETE", "OPTIONS", "TRACE" };
    for (size_t i = 0; i < sizeof idempotent / sizeof idempotent[0]; i++)
        if (o->method_len == strlen(idempotent[i]) &&
            memcmp(h, idempotent[i], o->method_len) == 0)
            o->retry_safe = true;
    return 0;
}

int
al__router_parse_head(const char *h, size_t n, bool own_port,
                      al__rt_head_t *out, const char **why)
{
    al__rt_head_t o;
    memset(&o, 0, sizeof o);
    o.content_length = -1;
    /* The request line: METHOD SP TARGET SP HTTP/1.x CRLF. */
    const char *eol = find(h, n, "\r\n", 2);
    if (eol == NULL) {
        *why = "no request line";
        return 400;
    }
    const char *sp1 = memchr(h, ' ', (size_t)(eol - h));
    const char *sp2 =
        sp1 != NULL ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (sp1 == NULL || sp2 == NULL || sp1 == h || sp2 == sp1 + 1 ||
        sp2 + 9 != eol || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
        *why = "malformed request line";
        return 400;
    }
    if (sp2[8] != '0' && sp2[8] != '1') {
        *why = "HTTP/1.0 or HTTP/1.1 only";
        return 505;
    }
    for (const char *c = h; c < sp1; c++)
        if (*c < 'A' || *c > 'Z') {
            *why = "malformed method";
            return 400;
        }
    o.http10 = sp2[8] == '0';
    o.keep_alive = !o.http10;
    o.method_len = (size_t)(sp1 - h);
    o.head_req = o.method_len == 4 && memcmp(h, "HEAD", 4) == 0;
    const char *t = sp1 + 1;
    size_t tl = (size_t)(sp2 - t);
    for (size_t i = 0; i < tl; i++)
        if ((unsigned char)t[i] <= ' ' || t[i] == 0x7f) {
            *why = "malformed target";
            return 400;
        }
    if (!parse_target(t, tl, (size_t)(t - h), own_port, &o)) {
        *why = "requests go to /s/SERVICE/...";
        return 404;
    }
    /* Headers. */
    const char *p = eol + 2;
    const char *end = h + n;
    while (p < end) {
        const char *le = find(p, (size_t)(end - p), "\r\n", 2);
        if (le == NULL) {
            *why = "malformed header";
            return 400;
        }
        if (le == p)
            break; /* the empty line */
        size_t ln = (size_t)(le - p);
        const char *colon = memchr(p, ':', ln);
        if (colon == NULL || colon == p || p[0] == ' ' || p[0] == '\t') {
            *why = "malformed header";
            return 400;
        }
        /* A replica may read a header line differently from the router
         * (a bare LF or CR taken as a line's end, a name with white
         * space before its colon): such a line could hide a framing
         * header from the router and smuggle a request past it. */
        const char *bad = header_bad(p, colon, le);
        if (bad != NULL) {
            *why = bad;
            return 400;
        }
        const char *v;
        size_t vl;
        if (header_is(p, ln, "Content-Length", &v, &vl)) {
            int64_t x = parse_len(v, vl);
            if (x < 0 || (o.content_length >= 0 && o.content_length != x)) {
                *why = "bad Content-Length";
                return 400;
            }
            o.content_length = x;
        } else if (header_is(p, ln, "Transfer-Encoding", &v, &vl)) {
            /* Only chunked, once: another coding the router cannot
             * frame, and two would hide one from it. */
            if (o.chunked || vl != 7 || strncasecmp(v, "chunked", 7) != 0) {
                *why = "only Transfer-Encoding: chunked is taken";
                return 501;
            }
            o.chunked = true;
        } else if (header_is(p, ln, "Idempotency-Key", &v, &vl)) {
            /* An empty key is none: a replica cannot tell a repeat by it. */
            if (vl > 0)
                o.retry_safe = true;
        } else if (header_is(p, ln, "Connection", &v, &vl)) {
            if (has_token(v, vl, "close"))
                o.keep_alive = false;
            else if (has_token(v, vl, "keep-alive"))
                o.keep_alive = true;
        } else if (header_is(p, ln, "Expect", &v, &vl)) {
            o.expect_continue = has_token(v, vl, "100-continue");
        } else if (header_is(p, ln, "Authorization", &v, &vl)) {
            if (vl > 7 && strncasecmp(v, "Bearer ", 7) == 0) {
                o.token_off = (size_t)(v + 7 - h);
                o.token_len = vl - 7;
                while (o.token_len > 0 && h[o.token_off] == ' ')
                    o.token_off++, o.token_len--;
            }
        }
        p = le + 2;
    }
    if (p >= end) {
        *why = "no end of head";
        return 400;
    }
    int st = check_body(&o, h, why);
    if (st != 0)
        return st;
    *out = o;
    return 0;
}

/* The answer's head: status, framing, whether the replica keeps the
 * connection.  0, or -1 when malformed. */
typedef struct ans {
    int status;
    int64_t length; /* -1: none given */
    bool chunked, keep_alive;
} ans_t;

static int
parse_answer(const char *h, size_t n, ans_t *a)
{
    memset(a, 0, sizeof *a);
    a->length = -1;
    if (n < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ')
        return -1;
    a->keep_alive = h[7] == '1';
    a->status = 0;
    for (int i = 9; i < 12; i++) {
        if (h[i] < '0' || h[i] > '9')
            return -1;
        a->status = a->status * 10 + (h[i] - '0');
    }
    const char *p = find(h, n, "\r\n", 2);
    const char *end = h + n;
    while (p != NULL && p + 2 < end) {
        p += 2;
        const char *le = find(p, (size_t)(end - p), "\r\n", 2);
        if (le == NULL || le == p)
            break;
        const char *v;
        size_t vl, ln = (size_t)(le - p);
        if (header_is(p, ln, "Content-Length", &v, &vl)) {
            if ((a->length = parse_len(v, vl)) < 0)
                return -1;
        } else if (header_is(p, ln, "Transfer-Encoding", &v, &vl)) {
            a->chunked = has_token(v, vl, "chunked");
        } else if (header_is(p, ln, "Connection", &v, &vl)) {
            if (has_token(v, vl, "close"))
                a->keep_alive = false;
            else if (has_token(v, vl, "keep-alive"))
                a->keep_alive = true;
        }
        p = le;
    }
    return 0;
}

/* Chunked framing followed byte by byte as it passes. */
typedef struct chunker {
    int st; /* 0 size line, 1 data, 2 data's CRLF, 3 trailer, 4 done */
    uint64_t left;
    bool digits, line_empty, bad;
} chunker_t;

/* Consumes p[0..n); the bytes used (less than n only once done). */
static size_t
chunk_feed(chunker_t *c, const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && c->st != 4) {
        char ch = p[i];
        switch (c->st) {
        case 0:
            if (ch == '\n') {
                if (!c->digits) {
                    c->bad = true;
                    c->st = 4;
                    break;
                }
                c->st = c->left == 0 ? 3 : 1;
                c->line_empty = true;
                c->digits = false;
            } else if (!c->bad) {
                int d = ch >= '0' && ch <= '9'   ? ch - '0'
                        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                        : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                                 : -1;
                if (d >= 0 && c->st == 0 && c->left < (1ULL << 56) &&
                    !c->line_empty) {
                    c->left = c->left * 16 + (uint64_t)d;
                    c->digits = true;
                } else if (d < 0) {
                    c->line_empty = true; /* extension or CR: no digits */
                }
            }
            i++;
            break;
        case 1: {
            size_t take = n - i < c->left ? n - i : (size_t)c->left;
            c->left -= take;
            i += take;
            if (c->left == 0)
                c->st = 2;
            break;
        }
        case 2:
            if (ch == '\n') {
                c->st = 0;
                c->line_empty = false;
            }
            i++;
            break;
        case 3:
            if (ch == '\n') {
                if (c->line_empty)
                    c->st = 4;
                c->line_empty = true;
            } else if (ch != '\r') {
                c->line_empty = false;
            }
            i++;
            break;
        default:
            break;
        }
    }
    return i;
}

/* ------------------------------------------------------------------ */
/* Forwarding                                                         */

typedef enum {
    FWD_OK = 0, /* answered; the replica's connection kept when keep */
    FWD_RETRY,  /* nothing reached the client: another replica may */
    FWD_CLIENT, /* the answer started and broke: close the client */
    FWD_LOST,   /* the replica took the request whole and died before
                 * answering; not safe to send again: 502 */
} fwd_t;

/* An answer's head h[0..n) as it goes to the client, into b, with the
 * router's own Connection header (the replica's is about the router's
 * connection to it): keep, whether the client's connection stays open
 * after this answer; drop_te, whether its Transfer-Encoding goes (an
 * HTTP/1.0 client gets a chunked answer decoded, ended by the close). */
static void
head_into(al_buf_t *b, const char *h, size_t n, bool keep, bool drop_te)
{
    const char *end = h + n;
    const char *p = find(h, n, "\r\n", 2) + 2;
    al_buf_reserve(b, n + 512);
    al_buf_append(b, h, (size_t)(p - h));
    while (p < end) {
        const char *le = find(p, (size_t)(end - p), "\r\n", 2);
        if (le == NULL || le == p)
            break;
        size_t ln = (size_t)(le - p);
        const char *v;
        size_t vl;
        if (!header_is(p, ln, "Connection", &v, &vl) &&
            !header_is(p, ln, "Keep-Alive", &v, &vl) &&
            !(drop_te && (header_is(p, ln, "Transfer-Encoding", &v, &vl) ||
                          header_is(p, ln, "Trailer", &v, &vl))))
            al_buf_append(b, p, ln + 2);
        p = le + 2;
    }
    al_buf_puts(b, keep ? "Connection: keep-alive\r\n\r\n"
                        : "Connection: close\r\n\r\n");
}

/* Writes p[0..n) of an answer's body to cfd, after the head in hb when
 * it has not gone yet (*head_sent); decoded by dc when not NULL (a
 * chunked answer to an HTTP/1.0 client, which must not get chunks). */
static bool
send_part(int cfd, al_buf_t *hb, bool *head_sent, const char *p, size_t n,
          al__dechunk_t *dc)
{
    al_buf_t out;
    al_buf_init(&out);
    if (!*head_sent)
        al_buf_append(&out, hb->data, hb->len);
    *head_sent = true;
    bool ok = true;
    if (dc == NULL) {
        al_buf_append(&out, p, n);
    } else {
        size_t used = 0;
        const char *why = NULL;
        ok = al__dechunk_feed(dc, p, n, &out, &used, &why) <= 1;
    }
    ok = ok && write_all(cfd, out.data, out.len);
    al_buf_fini(&out);
    return ok;
}

/* Sends the request (req, reqlen bytes) on ufd and passes the answer to
 * cfd.  *keep: whether ufd may serve another request; *close_client:
 * whether the answer's framing ends with the connection; *sent: whether
 * the request went out whole (a replica may have acted on it). */
static fwd_t
forward(int ufd, int cfd, char *buf, const char *req, size_t reqlen,
        bool head_req, bool client_keep, bool http10, bool *keep,
        bool *close_client, int *status, bool *sent, int64_t *pts)
{
    *keep = false;
    *sent = false;
    if (!write_all(ufd, req, reqlen))
        return FWD_RETRY;
    *sent = true;
    mark(pts, AL_RT_WRITTEN);
    size_t have = 0;
    ssize_t hl;
    ans_t a;
    for (;;) {
        hl = read_head(ufd, buf, &have, NULL, 0, point(pts, AL_RT_ANS_ARRIVE));
        if (hl <= 0 || parse_answer(buf, (size_t)hl, &a) != 0) {
            return FWD_RETRY;
        }
        if (a.status >= 200 || a.status == 101)
            break;
        /* 1xx: passed on (never to an HTTP/1.0 client: RFC 9110 15.2),
         * then the real answer. */
        if (!http10 && !write_all(cfd, buf, (size_t)hl)) {
            return FWD_CLIENT;
        }
        memmove(buf, buf + hl, have - (size_t)hl);
        have -= (size_t)hl;
    }
    *status = a.status;
    mark(pts, AL_RT_FIRST);
    bool nobody = head_req || a.status == 204 || a.status == 304;
    bool until_close = !nobody && !a.chunked && a.length < 0;
    /* An HTTP/1.0 client cannot read chunks (RFC 9112 6.1): it gets the
     * data, ended by the connection's close. */
    al__dechunk_t dcs, *dc = NULL;
    if (http10 && a.chunked && !nobody) {
        al__dechunk_init(&dcs, SIZE_MAX);
        dc = &dcs;
    }
    *close_client = until_close || !client_keep || dc != NULL;
    /* The head goes out with the body bytes that came with it, in one
     * write: one wake-up of the client, not two.  It goes alone only
     * before the router waits for more of the body (a stream's head must
     * not wait for its first event). */
    al_buf_t hb;
    al_buf_init(&hb);
    head_into(&hb, buf, (size_t)hl, !*close_client, dc != NULL);
    bool head_sent = false;
    size_t extra = have - (size_t)hl;
    memmove(buf, buf + hl, extra);
    fwd_t rc = FWD_OK;
    chunker_t ck = { 0 };
    int64_t left = a.length;
    bool done = nobody || (!a.chunked && left == 0);
    size_t n = extra;
    bool first = true;
    if (done)
        mark(pts, AL_RT_LAST);
    while (!done) {
        if (!first || n == 0) {
            if (!head_sent) {
                head_sent = true;
                if (!write_all(cfd, hb.data, hb.len)) {
                    rc = FWD_CLIENT;
                    break;
                }
            }
            ssize_t got = read_some(ufd, buf, MAX_HEAD);
            if (got <= 0) {
                if (until_close && got == 0) {
                    done = true;
                    break;
                }
                rc = FWD_CLIENT;
                break;
            }
            n = (size_t)got;
        }
        first = false;
        size_t use = n;
        if (a.chunked) {
            use = chunk_feed(&ck, buf, n);
            done = ck.st == 4;
            if (ck.bad) {
                rc = FWD_CLIENT;
                break;
            }
        } else if (left >= 0) {
            if ((int64_t)use > left)
                use = (size_t)left;
            left -= (int64_t)use;
            done = left == 0;
        }
        if (done)
            mark(pts, AL_RT_LAST);
        if (!send_part(cfd, &hb, &head_sent, buf, use, dc)) {
            rc = FWD_CLIENT;
            break;
        }
        n = 0;
    }
    if (rc == FWD_OK && !head_sent && !write_all(cfd, hb.data, hb.len))
        rc = FWD_CLIENT;
    if (rc == FWD_OK)
        mark(pts, AL_RT_OUT);
    al_buf_fini(&hb);
    *keep =
        rc == FWD_OK && done && !until_close && a.keep_alive && a.status != 101;
    return rc;
}

/* Builds what goes to the replica: the request line with the path after
 * /s/NAME, the headers but the hop-by-hop ones, and the body. */
static char *
build_upstream(const char *h, size_t hn, const al__rt_head_t *rh,
               const char *body, size_t blen, const char *peer, size_t *len)
{
    al_buf_t b;
    al_buf_init(&b);
    al_buf_reserve(&b, hn + blen + 128);
    al_buf_append(&b, h, rh->method_len);
    al_buf_append(&b, " ", 1);
    const char *rest = h + rh->rest_off;
    if (rh->rest_len == 0 || rest[0] != '/')
        al_buf_append(&b, "/", 1);
    al_buf_append(&b, rest, rh->rest_len);
    al_buf_puts(&b, " HTTP/1.1\r\n");
    const char *p = find(h, hn, "\r\n", 2) + 2;
    const char *end = h + hn;
    while (p < end) {
        const char *le = find(p, (size_t)(end - p), "\r\n", 2);
        if (le == NULL || le == p)
            break;
        size_t ln = (size_t)(le - p);
        const char *v;
        size_t vl;
        if (!header_is(p, ln, "Connection", &v, &vl) &&
            !header_is(p, ln, "Keep-Alive", &v, &vl) &&
            !header_is(p, ln, "Proxy-Connection", &v, &vl) &&
            !header_is(p, ln, "Upgrade", &v, &vl) &&
            !header_is(p, ln, "Expect", &v, &vl) &&
            !header_is(p, ln, "TE", &v, &vl) &&
            !(rh->chunked && (header_is(p, ln, "Transfer-Encoding", &v, &vl) ||
                              header_is(p, ln, "Trailer", &v, &vl)))) {
            al_buf_append(&b, p, ln + 2);
        }
        p = le + 2;
    }
    /* A chunked body goes decoded, its trailers dropped. */
    if (rh->chunked)
        al_buf_printf(&b, "Content-Length: %zu\r\n", blen);
    al_buf_printf(&b, "X-Forwarded-For: %s\r\nConnection: keep-alive\r\n\r\n",
                  peer);
    al_buf_append(&b, body, blen);
    *len = b.len;
    return al_buf_steal(&b);
}

/* Whether the token in the head may call service s (under r->mu). */
static bool
allowed(al__router_t *r, const svc_t *s, const char *tok, size_t len)
{
    if (s->public)
        return true;
    if (tok == NULL || len == 0 || len > 128)
        return false;
    char t[130];
    memcpy(t, tok, len);
    t[len] = '\0';
    const al__token_t *k = al__token_match(r->tokens, r->ntokens, t);
    return k != NULL && (k->role == ROLE_ADMIN ||
                         (k->role == ROLE_USER && s->owner != NULL &&
                          strcmp(k->user, s->owner) == 0));
}

/* The ready replica of s with the fewest requests under way, or NULL
 * (under r->mu). */
static rep_t *
pick(svc_t *s)
{
    rep_t *best = NULL;
    int nbest = 0;
    for (rep_t *p = s->reps; p != NULL; p = p->next) {
        if (!p->ready || p->draining || p->removed)
            continue;
        if (best == NULL || p->inflight < best->inflight) {
            best = p;
            nbest = 1;
        } else if (p->inflight == best->inflight) {
            /* Ties go round the replicas. */
            nbest++;
            if ((s->rr % (uint64_t)nbest) == 0)
                best = p;
        }
    }
    s->rr++;
    return best;
}

static void
deadline_ts(int64_t mono_ms, struct timespec *ts)
{
    ts->tv_sec = mono_ms / 1000;
    ts->tv_nsec = (long)(mono_ms % 1000) * 1000000;
}

/* Takes the slot of a replica for one request: the ready one with the
 * fewest under way, waiting for one up to the service's queue timeout.
 * NULL with *status and *why set when none came (under r->mu). */
static rep_t *
take_replica(al__router_t *r, svc_t *s, int64_t deadline, bool *waited,
             int *status, const char **why)
{
    rep_t *p;
    while ((p = pick(s)) == NULL) {
        if (r->stop || s->removed) {
            *status = 503;
            *why = "the service is gone";
            return NULL;
        }
        if (!*waited && s->waiting >= s->queue_max) {
            *status = 503;
            *why = "no ready replica and the service's queue is full";
            return NULL;
        }
        int64_t now = al_clock_mono_ms();
        if (now >= deadline) {
            *status = 504;
            *why = "no replica became ready in time";
            return NULL;
        }
        if (!*waited) {
            *waited = true;
            s->waiting++;
        }
        struct timespec ts;
        deadline_ts(deadline < now + 200 ? deadline : now + 200, &ts);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    p->inflight++;
    p->refs++;
    return p;
}

/* Whether kept-alive connection fd is still open: a replica closes
 * idle connections when it likes, and a request sent on one it closed
 * would look like a replica dying with the request. */
static bool
still_open(int fd)
{
    char c;
    ssize_t k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Closes c's connection to a replica, fd, once c->ufd no longer names it
 * (under r->mu: al__router_stop() must never shut down a descriptor
 * number already reused). */
static void
drop_upstream(al__router_t *r, conn_t *c, int fd)
{
    pthread_mutex_lock(&r->mu);
    c->ufd = -1;
    pthread_mutex_unlock(&r->mu);
    close(fd);
}

/* Sends the request to the replica at addr:port over *fd (a kept-alive
 * connection, already c->ufd, or -1 to dial), once more on a fresh
 * connection when a kept one turns out closed and the request may be
 * sent again (it did not go out whole, or rh->retry_safe).  A kept one is
 * checked first for a request that may not be sent twice.  What
 * forward() says, FWD_LOST for a request that went out whole, is not
 * retry-safe and got no answer; *fd the connection used (c->ufd), or -1.
 * r->mu is taken only when a connection is opened or dropped, not for a
 * request on a kept one. */
static fwd_t
attempt(al__router_t *r, conn_t *c, const char *addr, int port, int *fd,
        const char *up, size_t ulen, const al__rt_head_t *rh, bool *keep,
        bool *close_client, int *status)
{
    if (*fd >= 0 && !rh->retry_safe && !still_open(*fd)) {
        drop_upstream(r, c, *fd);
        *fd = -1;
    }
    bool reused = *fd >= 0;
    fwd_t f = FWD_RETRY;
    for (int k = 0; k < 2 && f == FWD_RETRY; k++) {
        if (*fd < 0) {
            if ((*fd = dial(addr, port)) < 0)
                break;
            if (c->pts != NULL)
                stamp_on(*fd);
            pthread_mutex_lock(&r->mu);
            c->ufd = *fd;
            pthread_mutex_unlock(&r->mu);
        }
        mark(c->pts, AL_RT_CONN);
        bool sent = false;
        f = forward(*fd, c->cfd, c->ubuf, up, ulen, rh->head_req,
                    rh->keep_alive, rh->http10, keep, close_client, status,
                    &sent, c->pts);
        if (f == FWD_RETRY) {
            drop_upstream(r, c, *fd);
            *fd = -1;
            if (sent && !rh->retry_safe)
                return FWD_LOST;
            if (!reused)
                break; /* a fresh connection failed: this replica */
            reused = false;
        }
    }
    return f;
}

/* Reads a request's body, of which extra[0..nextra) came with its head,
 * into body, and the bytes after it (the next pipelined request's, at
 * most MAX_HEAD) into next.  Framed by Content-Length or chunked
 * (decoded: the replica gets it with a Content-Length).  0; -1 when the
 * client's connection broke; or the HTTP status to answer (400, 413)
 * with the reason in *why. */
static int
read_body(int cfd, const char *extra, size_t nextra, const al__rt_head_t *rh,
          al_buf_t *body, al_buf_t *next, const char **why)
{
    if (!rh->chunked) {
        size_t blen = rh->content_length > 0 ? (size_t)rh->content_length : 0;
        size_t take = nextra < blen ? nextra : blen;
        al_buf_reserve(body, blen);
        al_buf_append(body, extra, take);
        al_buf_append(next, extra + take, nextra - take);
        if (rh->expect_continue && body->len < blen &&
            !write_all(cfd, "HTTP/1.1 100 Continue\r\n\r\n", 25))
            return -1;
        while (body->len < blen) {
            ssize_t k =
                read_some(cfd, body->data + body->len, blen - body->len);
            if (k <= 0)
                return -1;
            body->len += (size_t)k;
            body->data[body->len] = '\0';
        }
        return 0;
    }
    al__dechunk_t d;
    al__dechunk_init(&d, MAX_BODY);
    size_t used = 0;
    int rc = al__dechunk_feed(&d, extra, nextra, body, &used, why);
    if (rc == 1) {
        al_buf_append(next, extra + used, nextra - used);
        return 0;
    }
    if (rc != 0)
        return rc;
    if (rh->expect_continue &&
        !write_all(cfd, "HTTP/1.1 100 Continue\r\n\r\n", 25))
        return -1;
    char *tmp = al_xmalloc(MAX_HEAD);
    while (rc == 0) {
        ssize_t k = read_some(cfd, tmp, MAX_HEAD);
        if (k <= 0) {
            rc = -1;
            break;
        }
        rc = al__dechunk_feed(&d, tmp, (size_t)k, body, &used, why);
        if (rc == 1)
            al_buf_append(next, tmp + used, (size_t)k - used);
    }
    free(tmp);
    return rc == 1 ? 0 : rc;
}

/* The error code of a refused request's status. */
static const char *
err_code(int st)
{
    if (st == 404)
        return "not_found";
    return st == 413 ? "too_large" : "bad_request";
}

/* Whether service name is unknown or refuses token tok (toklen bytes),
 * answered (404 or 401) with the connection to be closed. */
static bool
refused_early(al__router_t *r, int cfd, const char *name, const char *tok,
              size_t toklen)
{
    pthread_mutex_lock(&r->mu);
    svc_t *s = svc_find(r, name, strlen(name));
    bool found = s != NULL, ok = found && allowed(r, s, tok, toklen);
    pthread_mutex_unlock(&r->mu);
    if (ok)
        return false;
    if (found)
        reply_error(cfd, 401, "unauthorized",
                    "this service needs a token of its owner or an admin "
                    "(Authorization: Bearer)",
                    true);
    else
        reply_error(cfd, 404, "not_found", "no such service", true);
    return true;
}

/* Handles one request whose head is buf[0..hl) (and maybe more bytes
 * after it, *have in all).  false: close the client connection. */
static bool
serve_one(al__router_t *r, conn_t *c, char *buf, size_t hl, size_t *have,
          const char *peer, const char *own)
{
    int cfd = c->cfd;
    al__rt_head_t rh;
    const char *why = "bad request";
    int st = al__router_parse_head(buf, hl, own != NULL, &rh, &why);
    if (st != 0) {
        reply_error(cfd, st, err_code(st), why, true);
        return false;
    }
    char name[64];
    if (own != NULL) {
        snprintf(name, sizeof name, "%s", own);
    } else {
        memcpy(name, buf + rh.name_off, rh.name_len);
        name[rh.name_len] = '\0';
    }
    char tok[130];
    size_t toklen = rh.token_len < sizeof tok - 1 ? rh.token_len : 0;
    memcpy(tok, buf + rh.token_off, toklen);
    /* A client that waits for 100 Continue is told before it sends its
     * body that the service is unknown or refuses it (RFC 9110 10.1.1):
     * no body read, and none buffered, for a request that goes nowhere. */
    if (rh.expect_continue && refused_early(r, cfd, name, tok, toklen))
        return false;
    /* The body, held whole: a retry sends it again. */
    al_buf_t body, next;
    al_buf_init(&body);
    al_buf_init(&next);
    st = read_body(cfd, buf + hl, *have - hl, &rh, &body, &next, &why);
    if (st != 0) {
        if (st > 0)
            reply_error(cfd, st, err_code(st), why, true);
        al_buf_fini(&body);
        al_buf_fini(&next);
        return false;
    }
    size_t ulen;
    char *up = build_upstream(buf, hl, &rh, body.data, body.len, peer, &ulen);
    al_buf_fini(&body);
    mark(c->pts, AL_RT_PARSED);
    /* What is left is the next pipelined request. */
    if (next.len > 0)
        memcpy(buf, next.data, next.len);
    *have = next.len;
    al_buf_fini(&next);

    double t0 = al__mono_s();
    pthread_mutex_lock(&r->mu);
    svc_t *s = svc_find(r, name, strlen(name));
    if (s == NULL || !allowed(r, s, tok, toklen)) {
        bool found = s != NULL;
        pthread_mutex_unlock(&r->mu);
        free(up);
        return found ? reply_error(cfd, 401, "unauthorized",
                                   "this service needs a token of its owner "
                                   "or an admin (Authorization: Bearer)",
                                   !rh.keep_alive) &&
                           rh.keep_alive
                     : reply_error(cfd, 404, "not_found", "no such service",
                                   !rh.keep_alive) &&
                           rh.keep_alive;
    }
    s->refs++;
    s->inflight++;
    s->requests++;
    s->last_ms = al_clock_mono_ms();
    int64_t deadline = s->last_ms + s->queue_timeout_ms;
    bool waited = false, ok = false, keep_client = rh.keep_alive;
    int tries = 0, status = 0, to_close = -1;
    const char *err = NULL;
    int err_status = 502;
    while (!ok && tries < MAX_TRIES) {
        rep_t *p = take_replica(r, s, deadline, &waited, &err_status, &err);
        if (p == NULL)
            break;
        if (waited) {
            s->waiting--;
            waited = false;
        }
        mark(c->pts, AL_RT_CHOSEN);
        int fd = p->nidle > 0 ? p->idle[--p->nidle] : -1;
        c->ufd = fd;
        char addr[INET_ADDRSTRLEN + 1];
        snprintf(addr, sizeof addr, "%s", p->addr);
        int port = p->port;
        pthread_mutex_unlock(&r->mu);
        bool keep = false, close_client = false;
        fwd_t f = attempt(r, c, addr, port, &fd, up, ulen, &rh, &keep,
                          &close_client, &status);
        pthread_mutex_lock(&r->mu);
        c->ufd = -1;
        p->inflight--;
        p->refs--;
        if (f == FWD_OK) {
            ok = true;
            if (keep && !p->removed && p->nidle < MAX_IDLE)
                p->idle[p->nidle++] = fd;
            else
                to_close = fd;
            if (close_client)
                keep_client = false;
        } else if (f == FWD_CLIENT) {
            to_close = fd;
            keep_client = false;
            err = NULL;
            break;
        } else if (f == FWD_LOST) {
            /* It may have acted on the request: not sent again. */
            al_debug("router: %s: replica %s:%d took a request and gave no "
                     "answer",
                     s->name, addr, port);
            p->ready = false;
            p->fails = PROBE_FAILS;
            p->next_probe = 0;
            err = "the replica took the request but gave no answer (it "
                  "died or closed the connection); not sent again as its "
                  "method is not idempotent (an Idempotency-Key header "
                  "allows it)";
            err_status = 502;
            break;
        } else {
            /* Unreachable: out of the rotation until a probe says. */
            if (fd >= 0)
                close(fd);
            if (p->ready && !p->draining)
                al_debug("router: %s: replica %s:%d unreachable", s->name, addr,
                         port);
            p->ready = false;
            p->fails = PROBE_FAILS;
            p->next_probe = 0;
            err = "no replica could be reached";
            err_status = 502;
            tries++;
        }
    }
    if (waited)
        s->waiting--;
    s->inflight--;
    s->refs--;
    if (!ok)
        s->errors++;
    s->latency_sum += al__mono_s() - t0;
    /* (What was removed is freed by the accepting and probing threads:
     * not on a request's path.) */
    pthread_mutex_unlock(&r->mu);
    if (to_close >= 0)
        close(to_close);
    free(up);
    if (ok && c->pts != NULL)
        al__rtime_add(r->timing, c->pts);
    if (!ok && err != NULL)
        return reply_error(cfd, err_status,
                           err_status == 504 ? "timeout" : "unavailable", err,
                           !keep_client) &&
               keep_client;
    return ok && keep_client;
}

/* ------------------------------------------------------------------ */
/* Threads                                                            */

typedef struct conn_arg {
    al__router_t *r;
    conn_t *c;
    char peer[INET_ADDRSTRLEN];
    char svc[64]; /* came to this service's own port; "" for /s/NAME */
} conn_arg_t;

static void *conn_main(void *arg);

/* Starts a thread for a connection accepted from a listener (of service
 * svc's own port when svc is not NULL). */
static void
take_conn(al__router_t *r, int fd, const struct sockaddr_in *sa,
          const char *svc)
{
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_timeout(fd, SO_RCVTIMEO, CLIENT_IDLE_S);
    set_timeout(fd, SO_SNDTIMEO, UPSTREAM_S);
    if (r->timing != NULL)
        stamp_on(fd);
    conn_arg_t *a = al_xcalloc(1, sizeof *a);
    a->r = r;
    inet_ntop(AF_INET, &sa->sin_addr, a->peer, sizeof a->peer);
    if (svc != NULL)
        snprintf(a->svc, sizeof a->svc, "%s", svc);
    a->c = al_xcalloc(1, sizeof *a->c);
    a->c->cfd = fd;
    a->c->ufd = -1;
    pthread_mutex_lock(&r->mu);
    bool full = r->nconns >= MAX_CONNS;
    if (!full) {
        a->c->next = r->conns;
        r->conns = a->c;
        r->nconns++;
    }
    pthread_mutex_unlock(&r->mu);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, THREAD_STACK);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (full || pthread_create(&t, &at, conn_main, a) != 0) {
        if (!full) {
            pthread_mutex_lock(&r->mu);
            for (conn_t **cp = &r->conns; *cp != NULL; cp = &(*cp)->next)
                if (*cp == a->c) {
                    *cp = a->c->next;
                    break;
                }
            r->nconns--;
            pthread_mutex_unlock(&r->mu);
        }
        reply_error(fd, 503, "unavailable", "too many connections", true);
        close(fd);
        free(a->c);
        free(a);
    }
    pthread_attr_destroy(&at);
}

/* Binds and listens on port at the router's address; the socket, or -1
 * with errno set. */
static int
listen_on(const al__router_t *r, int port)
{
    struct sockaddr_in sa = r->sa;
    sa.sin_port = htons((uint16_t)port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 1024) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The services' own ports as the table wants them: a listener opened for
 * each new port, closed for each one gone (only this thread opens and
 * closes them, so no poll() ever waits on a closed descriptor).  Fills
 * fds (the router's listener first) and names; their number.  Under
 * r->mu. */
static int
own_ports(al__router_t *r, struct pollfd **fds, char (**names)[64], int *cap)
{
    int64_t now = al_clock_mono_ms();
    int n = 1;
    for (svc_t *s = r->svcs; s != NULL; s = s->next) {
        int want = s->removed ? 0 : s->want_port;
        if (s->bound_port != want ||
            (want > 0 && s->lfd < 0 && now >= s->port_retry_ms)) {
            if (s->lfd >= 0)
                close(s->lfd);
            s->lfd = -1;
            s->bound_port = want;
            s->port_error = 0;
            if (want > 0 && (s->lfd = listen_on(r, want)) < 0) {
                s->port_error = errno;
                s->port_retry_ms = now + 5000;
            }
        }
        if (s->lfd >= 0)
            n++;
    }
    if (n > *cap) {
        *cap = n;
        *fds = al_xreallocarray(*fds, (size_t)n, sizeof **fds);
        *names = al_xreallocarray(*names, (size_t)n, sizeof **names);
    }
    (*fds)[0] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
    (*names)[0][0] = '\0';
    int k = 1;
    for (svc_t *s = r->svcs; s != NULL; s = s->next) {
        if (s->lfd < 0)
            continue;
        (*fds)[k] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
        snprintf((*names)[k], sizeof(*names)[k], "%s", s->name);
        k++;
    }
    return k;
}

static void *
accept_main(void *arg)
{
    al__router_t *r = arg;
    struct pollfd *fds = NULL;
    char(*names)[64] = NULL;
    int cap = 0;
    /* (It takes the router's lock: preempted while holding it, it would
     * hold up every request.) */
    al__rtime_short_slice();
    for (;;) {
        pthread_mutex_lock(&r->mu);
        bool stop = r->stop;
        int n = stop ? 0 : own_ports(r, &fds, &names, &cap);
        collect(r);
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        if (poll(fds, (nfds_t)n, 200) <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            if ((fds[i].revents & POLLIN) == 0)
                continue;
            struct sockaddr_in sa;
            socklen_t sl = sizeof sa;
            int fd = accept(fds[i].fd, (struct sockaddr *)&sa, &sl);
            if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
                    (void)poll(NULL, 0, 50);
                continue;
            }
            take_conn(r, fd, &sa, i == 0 ? NULL : names[i]);
        }
    }
    free(fds);
    free(names);
    /* Listeners of services: closed here, their one owner. */
    pthread_mutex_lock(&r->mu);
    for (svc_t *s = r->svcs; s != NULL; s = s->next) {
        if (s->lfd >= 0)
            close(s->lfd);
        s->lfd = -1;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void *
conn_main(void *arg)
{
    conn_arg_t *a = arg;
    al__router_t *r = a->r;
    conn_t *c = a->c;
    char *buf = al_xmalloc(MAX_HEAD);
    c->ubuf = al_xmalloc(MAX_HEAD);
    if (r->timing != NULL)
        c->pts = al_xcalloc(AL_RT_NPTS, sizeof *c->pts);
    al__rtime_short_slice();
    size_t have = 0;
    /* The first head's deadline runs from the connection's start (a
     * client that connects and says nothing is cut off too); the next
     * ones' from their first bytes. */
    int64_t head_ms = atomic_load(&r->head_ms);
    int64_t deadline = al_clock_mono_ms() + head_ms;
    for (;;) {
        if (c->pts != NULL)
            memset(c->pts, 0, AL_RT_NPTS * sizeof *c->pts);
        mark(c->pts, AL_RT_WAIT);
        ssize_t hl = read_head(c->cfd, buf, &have, &deadline, head_ms,
                               point(c->pts, AL_RT_ARRIVE));
        deadline = 0;
        if (hl == HEAD_LATE) {
            char msg[96];
            snprintf(msg, sizeof msg,
                     "the request's head did not come whole within %lld ms",
                     (long long)head_ms);
            reply_error(c->cfd, 408, "timeout", msg, true);
            break;
        }
        if (hl <= 0) {
            if (hl < 0 && have >= MAX_HEAD)
                reply_error(c->cfd, 431, "bad_request", "head over 16 KiB",
                            true);
            break;
        }
        mark(c->pts, AL_RT_READ);
        if (!serve_one(r, c, buf, (size_t)hl, &have, a->peer,
                       a->svc[0] != '\0' ? a->svc : NULL))
            break;
    }
    free(buf);
    free(c->ubuf);
    free(c->pts);
    pthread_mutex_lock(&r->mu);
    for (conn_t **cp = &r->conns; *cp != NULL; cp = &(*cp)->next)
        if (*cp == c) {
            *cp = c->next;
            break;
        }
    r->nconns--;
    close(c->cfd);
    if (r->nconns == 0)
        pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    free(c);
    free(a);
    return NULL;
}

/* One probe: GET ready_path answered 2xx within a second. */
static bool
probe(const char *addr, int port, const char *path)
{
    int fd = dial(addr, port);
    if (fd < 0)
        return false;
    set_timeout(fd, SO_RCVTIMEO, 1);
    char req[600];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: "
                     "allot-router\r\nConnection: close\r\n\r\n",
                     path, addr, port);
    bool ok = false;
    if (n > 0 && (size_t)n < sizeof req && write_all(fd, req, (size_t)n)) {
        char ans[16];
        size_t have = 0;
        while (have < 12) {
            ssize_t k = read_some(fd, ans + have, sizeof ans - have);
            if (k <= 0)
                break;
            have += (size_t)k;
        }
        ok = have >= 12 && memcmp(ans, "HTTP/1.", 7) == 0 && ans[9] == '2';
    }
    close(fd);
    return ok;
}

typedef struct target {
    rep_t *p;
    char addr[INET_ADDRSTRLEN + 1];
    char path[512];
    int port;
} target_t;

static void *
probe_main(void *arg)
{
    al__router_t *r = arg;
    target_t *t = NULL;
    size_t cap = 0;
    int64_t written = 0;
    al__rtime_short_slice(); /* as accept_main()'s */
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        int64_t now = al_clock_mono_ms();
        if (r->timing != NULL && now - written >= 1000) {
            al__rtime_write(r->timing); /* atomics: no lock needed */
            written = now;
        }
        size_t n = 0;
        for (svc_t *s = r->svcs; s != NULL; s = s->next) {
            for (rep_t *p = s->reps; p != NULL; p = p->next) {
                if (p->removed || now < p->next_probe)
                    continue;
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    t = al_xreallocarray(t, cap, sizeof *t);
                }
                t[n].p = p;
                snprintf(t[n].addr, sizeof t[n].addr, "%s", p->addr);
                snprintf(t[n].path, sizeof t[n].path, "%s",
                         s->ready_path != NULL ? s->ready_path : "/");
                t[n].port = p->port;
                p->refs++;
                n++;
            }
        }
        pthread_mutex_unlock(&r->mu);
        bool *ok = n > 0 ? al_xcalloc(n, sizeof *ok) : NULL;
        for (size_t i = 0; i < n; i++)
            ok[i] = probe(t[i].addr, t[i].port, t[i].path);
        pthread_mutex_lock(&r->mu);
        now = al_clock_mono_ms();
        bool woke = false;
        for (size_t i = 0; i < n; i++) {
            rep_t *p = t[i].p;
            p->refs--;
            if (ok[i]) {
                p->fails = 0;
                if (!p->ready) {
                    p->ready = true;
                    woke = true;
                    if (p->ready_ms == 0)
                        p->ready_ms = now;
                }
            } else if (p->ready && ++p->fails >= PROBE_FAILS) {
                p->ready = false;
            }
            p->next_probe = now + (p->ready ? PROBE_READY_MS : PROBE_START_MS);
        }
        free(ok);
        if (woke)
            pthread_cond_broadcast(&r->cv);
        collect(r);
        struct timespec ts;
        deadline_ts(al_clock_mono_ms() + PROBE_START_MS, &ts);
        if (!r->stop)
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    pthread_mutex_unlock(&r->mu);
    free(t);
    return NULL;
}

int
al__router_start(const char *where, al__router_t **out, char **cause)
{
    const char *colon = where != NULL ? strrchr(where, ':') : NULL;
    char host[64];
    int64_t port = colon != NULL ? parse_len(colon + 1, strlen(colon + 1)) : -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    if (colon == NULL || (size_t)(colon - where) >= sizeof host || port < 0 ||
        port > 65535) {
        *cause = al_xasprintf("--router-listen: expected HOST:PORT, got '%s'",
                              where != NULL ? where : "");
        return AL_EINVAL;
    }
    memcpy(host, where, (size_t)(colon - where));
    host[colon - where] = '\0';
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        *cause =
            al_xasprintf("--router-listen: not an IPv4 address: '%s'", host);
        return AL_EINVAL;
    }
    sa.sin_port = htons((uint16_t)port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 1024) != 0) {
        *cause = al_xasprintf("--router-listen: cannot listen on %s: %s", where,
                              strerror(errno));
        if (fd >= 0)
            close(fd);
        return AL_EIO;
    }
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    al__router_t *r = al_xcalloc(1, sizeof *r);
    r->lfd = fd;
    r->sa = sa;
    atomic_init(&r->head_ms, HEAD_MS);
    r->timing = al__rtime_create();
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&r->accept_thr, NULL, accept_main, r) != 0 ||
        pthread_create(&r->probe_thr, NULL, probe_main, r) != 0) {
        *cause = al_xstrdup("router: cannot start its threads");
        abort(); /* threads at start-up: out of resources */
    }
    *out = r;
    return 0;
}

struct sockaddr_in
al__router_addr(const al__router_t *r)
{
    return r->sa;
}

void
al__router_set_head_timeout(al__router_t *r, int64_t ms)
{
    atomic_store(&r->head_ms, ms > 0 ? ms : HEAD_MS);
}

void
al__router_stop(al__router_t *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    for (svc_t *s = r->svcs; s != NULL; s = s->next)
        s->removed = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    shutdown(r->lfd, SHUT_RDWR);
    pthread_join(r->accept_thr, NULL);
    pthread_join(r->probe_thr, NULL);
    close(r->lfd);
    /* Connections: woken out of their reads, they end themselves. */
    pthread_mutex_lock(&r->mu);
    while (r->nconns > 0) {
        for (conn_t *c = r->conns; c != NULL; c = c->next) {
            shutdown(c->cfd, SHUT_RDWR);
            if (c->ufd >= 0)
                shutdown(c->ufd, SHUT_RDWR);
        }
        struct timespec ts;
        deadline_ts(al_clock_mono_ms() + 100, &ts);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    collect(r);
    pthread_mutex_unlock(&r->mu);
    for (svc_t *s = r->svcs, *n; s != NULL; s = n) {
        n = s->next;
        svc_free(s);
    }
    for (int i = 0; i < r->ntokens; i++)
        free(r->tokens[i].user);
    free(r->tokens);
    al__rtime_write(r->timing);
    al__rtime_destroy(r->timing);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
