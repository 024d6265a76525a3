/*
 * http.c -- minimal blocking HTTP/1.1 client over one TCP connection, in
 * the clear or through a TLS session (tls.c) for https URLs.
 *
 * May call: base (buffers, clocks), tls.c.
 */
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "core/error.h"
#include "tls.h"
#include "xmalloc.h"

int
al_url_parse(const char *url, al_url_t *u, char **cause)
{
    const char *p = url;
    al_url_t tmp;
    memset(&tmp, 0, sizeof tmp);
    if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else if (strncmp(p, "https://", 8) == 0) {
        p += 8;
        tmp.tls = true;
    } else if (strstr(p, "://") != NULL) {
        if (cause != NULL)
            *cause = al_xasprintf("unsupported URL scheme in '%s' (only "
                                  "http:// and https:// are supported)",
                                  url);
        return AL_EINVAL;
    }
    /* An IPv6 address is written in brackets: http://[::1]:7070. */
    bool bracket = *p == '[';
    size_t hlen = bracket ? strcspn(p + 1, "]/") : strcspn(p, ":/");
    if (hlen == 0 || hlen >= sizeof tmp.host ||
        (bracket && p[1 + hlen] != ']')) {
        if (cause != NULL)
            *cause = al_xasprintf("no host in URL '%s'", url);
        return AL_EINVAL;
    }
    memcpy(tmp.host, p + bracket, hlen);
    for (size_t i = 0; i < hlen; i++) {
        unsigned char c = (unsigned char)tmp.host[i];
        if (c <= ' ' || c == 0x7f || c == '[' || c == ']') {
            if (cause != NULL)
                *cause = al_xasprintf("bad host in URL '%s'", url);
            return AL_EINVAL;
        }
    }
    p += hlen + (bracket ? 2 : 0);
    snprintf(tmp.port, sizeof tmp.port, "%s", tmp.tls ? "443" : "80");
    if (*p == ':') {
        p++;
        size_t plen = strspn(p, "0123456789");
        if (plen == 0 || plen >= sizeof tmp.port) {
            if (cause != NULL)
                *cause = al_xasprintf("bad port in URL '%s'", url);
            return AL_EINVAL;
        }
        memcpy(tmp.port, p, plen);
        tmp.port[plen] = '\0';
        p += plen;
    }
    if (*p != '\0' && *p != '/') {
        if (cause != NULL)
            *cause = al_xasprintf("malformed URL '%s'", url);
        return AL_EINVAL;
    }
    size_t len = strlen(p);
    while (len > 0 && p[len - 1] == '/')
        len--;
    if (len >= sizeof tmp.prefix) {
        if (cause != NULL)
            *cause = al_xasprintf("URL path too long in '%s'", url);
        return AL_EINVAL;
    }
    memcpy(tmp.prefix, p, len);
    *u = tmp;
    return 0;
}

int
al_url_parse_list(const char *list, al_url_t *out, int *n, char **cause)
{
    int k = 0;
    const char *p = list;
    for (;;) {
        if (k == AL_URL_LIST_MAX) {
            if (cause != NULL)
                *cause = al_xasprintf("more than %d URLs in '%s'",
                                      AL_URL_LIST_MAX, list);
            return AL_EINVAL;
        }
        size_t len = strcspn(p, ",");
        char *one = al_xstrndup(p, len);
        int rc = al_url_parse(one, &out[k], cause);
        free(one);
        if (rc != 0)
            return rc;
        k++;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *n = k;
    return 0;
}

void
al_http_resp_fini(al_http_resp_t *r)
{
    al_buf_fini(&r->body);
}

static int
set_cause(char **cause, int err, const char *what, const char *arg)
{
    if (cause != NULL)
        *cause = al_xasprintf("%s%s", what, arg);
    return err;
}

/* Waits until fd is ready for `events`, the deadline passes or intr_fd
 * fires. */
static int
wait_fd(int fd, short events, int64_t deadline, int intr_fd)
{
    for (;;) {
        struct pollfd p[2] = { { fd, events, 0 }, { intr_fd, POLLIN, 0 } };
        int timeout = -1;
        if (deadline > 0) {
            int64_t left = deadline - al_clock_mono_ms();
            if (left <= 0)
                return AL_ETIMEDOUT;
            timeout = left > 60000 ? 60000 : (int)left;
        }
        int n = poll(p, intr_fd >= 0 ? 2 : 1, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return AL_EIO;
        if (intr_fd >= 0 && (p[1].revents & POLLIN))
            return AL_EBUSY;
        if (p[0].revents != 0)
            return 0;
    }
}

/* connect() within the deadline (0: none): a peer cut off by a firewall
 * that drops packets would hold a blocking one for minutes.  0 or -1 with
 * errno. */
static int
connect_by(int fd, const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
    if (deadline <= 0)
        return connect(fd, sa, len);
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    int rc = connect(fd, sa, len);
    if (rc < 0 && errno == EINPROGRESS) {
        int w = wait_fd(fd, POLLOUT, deadline, -1);
        int err = 0;
        socklen_t elen = sizeof err;
        if (w == AL_ETIMEDOUT) {
            errno = ETIMEDOUT;
        } else if (w == 0 &&
                   getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0) {
            rc = err == 0 ? 0 : -1;
            errno = err;
        }
    }
    int saved = errno;
    if (fcntl(fd, F_SETFL, fl) < 0 && rc == 0)
        return -1;
    errno = saved;
    return rc;
}

static int
connect_to(const al_url_t *u, int64_t deadline, int *fdp, char **cause)
{
    struct addrinfo hints, *res, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        if (cause != NULL)
            *cause = al_xasprintf("cannot resolve %s: %s", u->host,
                                  gai_strerror(rc));
        return AL_EUNAVAIL;
    }
    int fd = -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect_by(fd, ai->ai_addr, ai->ai_addrlen, deadline) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (cause != NULL)
            *cause = al_xasprintf("cannot connect to %s:%s: %s", u->host,
                                  u->port, strerror(errno));
        return AL_EUNAVAIL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *fdp = fd;
    return 0;
}

/* Waits until c can be read: decrypted bytes already in its TLS session
 * count, which poll() cannot see. */
static int
wait_read(al_http_conn_t *c, int64_t deadline, int intr_fd)
{
    if (c->tls != NULL && al_tls_pending(c->tls))
        return 0;
    return wait_fd(c->fd, POLLIN, deadline, intr_fd);
}

static ssize_t
conn_send(al_http_conn_t *c, const void *p, size_t n)
{
    if (c->tls != NULL)
        return al_tls_send(c->tls, p, n);
    return send(c->fd, p, n, MSG_NOSIGNAL);
}

static ssize_t
conn_recv(al_http_conn_t *c, void *p, size_t n)
{
    if (c->tls != NULL)
        return al_tls_recv(c->tls, p, n);
    return recv(c->fd, p, n, 0);
}

/* Connects c to its URL, with a TLS session for https. */
static int
conn_open(al_http_conn_t *c, int64_t deadline, char **cause)
{
    int rc = connect_to(&c->url, deadline, &c->fd, cause);
    if (rc != 0 || !c->url.tls)
        return rc;
    int left = 0;
    if (deadline > 0) {
        int64_t ms = deadline - al_clock_mono_ms();
        left = ms < 1 ? 1 : ms > 600000 ? 600000 : (int)ms;
    }
    rc = al_tls_open(c->fd, c->url.host, left, &c->tls, cause);
    if (rc != 0) {
        close(c->fd);
        c->fd = -1;
    }
    return rc;
}

/* Decodes a chunked body in place into out.  0 or AL_EPARSE. */
static int
dechunk(const char *p, size_t n, al_buf_t *out)
{
    const char *end = p + n;
    for (;;) {
        char *e;
        unsigned long len = strtoul(p, &e, 16);
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (e == p || nl == NULL)
            return AL_EPARSE;
        p = nl + 1;
        if (len == 0)
            return 0;
        if ((size_t)(end - p) < len + 2)
            return AL_EPARSE;
        al_buf_append(out, p, len);
        p += len + 2;
    }
}

/* Sends the whole request; a send error is not fatal, since the server may
 * answer early (413) and close: the caller reads what came. */
static int
send_all(al_http_conn_t *c, const al_buf_t *req, int64_t deadline, int intr_fd,
         bool *sent, bool *started)
{
    size_t off = 0;
    *sent = *started = false;
    while (off < req->len) {
        int rc = wait_fd(c->fd, POLLOUT, deadline, intr_fd);
        if (rc != 0)
            return rc;
        ssize_t w = conn_send(c, req->data + off, req->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return 0;
        off += (size_t)w;
        *started = true;
    }
    *sent = true;
    return 0;
}

/* What the head of a response says about its body. */
typedef struct head {
    long status;
    size_t hlen;    /* bytes up to and including the blank line */
    long long clen; /* Content-Length, or -1 */
    bool chunked, close;
} head_t;

/* True when word occurs, ignoring case, in [l, eol). */
static bool
line_has(const char *l, const char *eol, const char *word)
{
    size_t n = strlen(word);
    for (; l + n <= eol; l++)
        if (strncasecmp(l, word, n) == 0)
            return true;
    return false;
}

/* Parses the head in in[0..len), which holds its end.  0 or AL_EPARSE. */
static int
parse_head(const char *in, const char *hdr_end, head_t *h)
{
    char *end = NULL;
    memset(h, 0, sizeof *h);
    h->clen = -1;
    if (strncmp(in, "HTTP/1.", 7) != 0 || in[8] != ' ')
        return AL_EPARSE;
    h->status = strtol(in + 9, &end, 10);
    if (end == NULL || h->status < 100 || h->status > 999 || *end != ' ')
        return AL_EPARSE;
    h->close = in[7] == '0'; /* HTTP/1.0 closes unless told otherwise */
    for (const char *l = strstr(in, "\r\n") + 2; l < hdr_end;
         l = strstr(l, "\r\n") + 2) {
        const char *eol = strstr(l, "\r\n");
        if (strncasecmp(l, "Transfer-Encoding:", 18) == 0 &&
            line_has(l, eol, "chunked"))
            h->chunked = true;
        else if (strncasecmp(l, "Content-Length:", 15) == 0)
            h->clen = strtoll(l + 15, NULL, 10);
        else if (strncasecmp(l, "Connection:", 11) == 0)
            h->close = line_has(l, eol, "close");
    }
    if (h->clen < -1)
        return AL_EPARSE;
    h->hlen = (size_t)(hdr_end + 4 - in);
    return 0;
}

/* True when in[0..n) holds a whole chunked body. */
static bool
chunked_done(const char *p, size_t n)
{
    const char *end = p + n;
    for (;;) {
        char *e;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            return false;
        unsigned long len = strtoul(p, &e, 16);
        if (e == p)
            return true; /* malformed: stop reading, dechunk() says so */
        p = nl + 1;
        if (len == 0) /* the last chunk, then trailers up to a blank line */
            return (end - p >= 2 && p[0] == '\r' && p[1] == '\n') ||
                   strstr(p, "\r\n\r\n") != NULL;
        if ((size_t)(end - p) < len + 2)
            return false;
        p += len + 2;
    }
}

/* Reads one response into *in; sets *h.  Returns 0, or an error; *got
 * tells whether any byte arrived (a reused connection the server closed
 * while idle yields nothing). */
static int
read_response(al_http_conn_t *c, int64_t deadline, int intr_fd, al_buf_t *in,
              head_t *h, bool *got)
{
    const char *hdr_end = NULL;
    *got = false;
    for (;;) {
        if (hdr_end == NULL && in->len > 0)
            hdr_end = strstr(in->data, "\r\n\r\n");
        if (hdr_end != NULL && h->hlen == 0) {
            if (parse_head(in->data, hdr_end, h) != 0)
                return AL_EPARSE;
        }
        if (h->hlen > 0) {
            size_t blen = in->len - h->hlen;
            if (h->chunked && chunked_done(in->data + h->hlen, blen))
                return 0;
            if (!h->chunked && h->clen >= 0 && blen >= (size_t)h->clen)
                return 0;
            if (h->status == 204 || h->status == 304 ||
                (h->status >= 100 && h->status < 200))
                return 0;
        }
        int rc = wait_read(c, deadline, intr_fd);
        if (rc != 0)
            return rc;
        al_buf_reserve(in, 65536);
        ssize_t r = conn_recv(c, in->data + in->len, in->cap - in->len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && in->len == 0)
            return AL_EUNAVAIL;
        if (r == 0)
            errno = 0; /* closed, not failed */
        if (r <= 0) {
            /* End of stream: the body runs to here (no length given). */
            if (h->hlen == 0)
                return in->len == 0 ? AL_EUNAVAIL : AL_EPARSE;
            h->close = true;
            if (!h->chunked && h->clen >= 0 &&
                in->len - h->hlen < (size_t)h->clen)
                return AL_EPARSE;
            return 0;
        }
        *got = true;
        in->len += (size_t)r;
        in->data[in->len] = '\0';
    }
}

void
al_http_conn_init(al_http_conn_t *c, const al_url_t *u)
{
    c->url = *u;
    c->fd = -1;
    c->tls = NULL;
    c->keep_interrupted = false;
    c->pending = false;
}

void
al_http_conn_close(al_http_conn_t *c)
{
    al_tls_close(c->tls);
    c->tls = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->pending = false;
}

/* How long the response of an interrupted request may take to come before
 * the next request gives up on the connection.  The controller answers a
 * node's parked sync as soon as its next sync arrives, so the answer is
 * normally there already; one that does not answer early costs a
 * reconnection, as before, after this wait. */
#define DRAIN_MS 2

/* Reads and drops the response of the interrupted request on c, closing c
 * when it does not come soon or says so. */
static void
drain(al_http_conn_t *c)
{
    al_buf_t in = AL_BUF_INIT;
    head_t h;
    memset(&h, 0, sizeof h);
    bool got;
    c->pending = false;
    if (read_response(c, al_clock_mono_ms() + DRAIN_MS, -1, &in, &h, &got) !=
            0 ||
        h.close)
        al_http_conn_close(c);
    al_buf_fini(&in);
}

/* One exchange on c (connecting when it has no connection); keep says
 * whether to ask for the connection to stay open. */
static int
exchange(al_http_conn_t *c, bool keep, const al_buf_t *req, int64_t deadline,
         int intr_fd, al_http_resp_t *resp, char **cause)
{
    const al_url_t *u = &c->url;
    int rc;
    /* A reused connection may have been closed by the server while idle;
     * then, and only if nothing at all came back, try once on a new one. */
    if (c->pending)
        drain(c);
    for (int attempt = 0;; attempt++) {
        bool reused = c->fd >= 0, sent, started, got = false;
        if (!reused && (rc = conn_open(c, deadline, cause)) != 0)
            return rc;
        al_buf_t in = AL_BUF_INIT;
        head_t h;
        memset(&h, 0, sizeof h);
        rc = send_all(c, req, deadline, intr_fd, &sent, &started);
        if (rc == 0)
            rc = read_response(c, deadline, intr_fd, &in, &h, &got);
        if (rc == AL_EUNAVAIL && reused && !got && attempt == 0) {
            al_buf_fini(&in);
            al_http_conn_close(c);
            continue;
        }
        if (rc == 0) {
            al_http_resp_t r;
            r.status = (int)h.status;
            al_buf_init(&r.body);
            const char *b = in.data + h.hlen;
            size_t blen = in.len - h.hlen;
            if (h.chunked) {
                if (dechunk(b, blen, &r.body) != 0) {
                    al_buf_fini(&r.body);
                    rc = set_cause(cause, AL_EPARSE,
                                   "malformed chunked body from ", u->host);
                }
            } else {
                if (h.clen >= 0 && (size_t)h.clen < blen)
                    blen = (size_t)h.clen;
                al_buf_append(&r.body, b, blen);
            }
            if (rc == 0)
                *resp = r;
        } else if (rc == AL_EPARSE) {
            set_cause(cause, AL_EPARSE, "malformed HTTP response from ",
                      u->host);
        } else if (rc == AL_EUNAVAIL) {
            set_cause(cause, AL_EUNAVAIL, "connection error: ",
                      errno != 0 ? strerror(errno)
                      : u->tls   ? "closed"
                                 : "closed without an answer (an https "
                                   "server? then use an https:// URL)");
        }
        /* Interrupted before a byte went, the connection is as clean as
         * before; after the whole request went and before any of the
         * answer came, it may be kept with the answer to drop later. */
        bool clean = rc == AL_EBUSY && !started && keep;
        if (!clean && rc == AL_EBUSY && sent && !got && keep &&
            c->keep_interrupted)
            c->pending = true;
        else if (!clean && (rc != 0 || !keep || h.close))
            al_http_conn_close(c);
        al_buf_fini(&in);
        break;
    }
    if (rc == AL_ETIMEDOUT && cause != NULL && *cause == NULL)
        *cause = al_xasprintf("request to %s:%s timed out", u->host, u->port);
    return rc;
}

static void
build_request(al_buf_t *req, const al_url_t *u, bool keep, const char *method,
              const char *path, const char *token, const char *body,
              size_t bodylen)
{
    bool v6 = strchr(u->host, ':') != NULL;
    al_buf_printf(req, "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\n", method,
                  u->prefix, path, v6 ? "[" : "", u->host, v6 ? "]" : "",
                  u->port);
    al_buf_puts(req, keep ? "User-Agent: allot\r\n"
                          : "Connection: close\r\nUser-Agent: allot\r\n");
    if (token != NULL && token[0] != '\0')
        al_buf_printf(req, "Authorization: Bearer %s\r\n", token);
    if (body != NULL)
        al_buf_printf(req,
                      "Content-Type: application/json\r\n"
                      "Content-Length: %zu\r\n",
                      bodylen);
    al_buf_puts(req, "\r\n");
    if (body != NULL)
        al_buf_append(req, body, bodylen);
}

int
al_http_conn_request(al_http_conn_t *c, const char *method, const char *path,
                     const char *token, const char *body, size_t bodylen,
                     int timeout_ms, int intr_fd, al_http_resp_t *resp,
                     char **cause)
{
    int64_t deadline = timeout_ms > 0 ? al_clock_mono_ms() + timeout_ms : 0;
    al_buf_t req = AL_BUF_INIT;
    build_request(&req, &c->url, true, method, path, token, body, bodylen);
    int rc = exchange(c, true, &req, deadline, intr_fd, resp, cause);
    al_buf_fini(&req);
    return rc;
}

int
al_http_request(const al_url_t *u, const char *method, const char *path,
                const char *token, const char *body, size_t bodylen,
                int timeout_ms, int intr_fd, al_http_resp_t *resp, char **cause)
{
    int64_t deadline = timeout_ms > 0 ? al_clock_mono_ms() + timeout_ms : 0;
    al_http_conn_t c;
    al_http_conn_init(&c, u);
    al_buf_t req = AL_BUF_INIT;
    build_request(&req, u, false, method, path, token, body, bodylen);
    int rc = exchange(&c, false, &req, deadline, intr_fd, resp, cause);
    al_http_conn_close(&c);
    al_buf_fini(&req);
    return rc;
}
