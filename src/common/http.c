/* http.c -- minimal blocking HTTP/1.1 client over one TCP connection. */
#include "http.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "core/error.h"
#include "xmalloc.h"

int
al_url_parse(const char *url, al_url_t *u, char **cause)
{
    const char *p = url;
    al_url_t tmp;
    memset(&tmp, 0, sizeof tmp);
    if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else if (strstr(p, "://") != NULL) {
        if (cause != NULL)
            *cause = al_xasprintf("unsupported URL scheme in '%s' (only "
                                  "http:// is supported)",
                                  url);
        return AL_EINVAL;
    }
    size_t hlen = strcspn(p, ":/");
    if (hlen == 0 || hlen >= sizeof tmp.host) {
        if (cause != NULL)
            *cause = al_xasprintf("no host in URL '%s'", url);
        return AL_EINVAL;
    }
    memcpy(tmp.host, p, hlen);
    p += hlen;
    strcpy(tmp.port, "80");
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

static int
connect_to(const al_url_t *u, int *fdp, char **cause)
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
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
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

int
al_http_request(const al_url_t *u, const char *method, const char *path,
                const char *token, const char *body, size_t bodylen,
                int timeout_ms, int intr_fd, al_http_resp_t *resp, char **cause)
{
    int64_t deadline = timeout_ms > 0 ? al_clock_mono_ms() + timeout_ms : 0;
    int fd, rc;
    if ((rc = connect_to(u, &fd, cause)) != 0)
        return rc;

    al_buf_t req = AL_BUF_INIT, in = AL_BUF_INIT;
    al_buf_printf(&req, "%s %s%s HTTP/1.1\r\nHost: %s:%s\r\n", method,
                  u->prefix, path, u->host, u->port);
    al_buf_puts(&req, "Connection: close\r\nUser-Agent: allot\r\n");
    if (token != NULL && token[0] != '\0')
        al_buf_printf(&req, "Authorization: Bearer %s\r\n", token);
    if (body != NULL)
        al_buf_printf(&req,
                      "Content-Type: application/json\r\n"
                      "Content-Length: %zu\r\n",
                      bodylen);
    al_buf_puts(&req, "\r\n");
    if (body != NULL)
        al_buf_append(&req, body, bodylen);

    size_t off = 0;
    while (off < req.len) {
        if ((rc = wait_fd(fd, POLLOUT, deadline, intr_fd)) != 0)
            goto out;
        ssize_t w = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            /* The server may answer early (413) and close; read it. */
            break;
        }
        off += (size_t)w;
    }
    for (;;) {
        if ((rc = wait_fd(fd, POLLIN, deadline, intr_fd)) != 0)
            goto out;
        al_buf_reserve(&in, 65536);
        ssize_t r = recv(fd, in.data + in.len, in.cap - in.len - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            if (in.len > 0)
                break;
            rc = set_cause(cause, AL_EUNAVAIL,
                           "connection error: ", strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        in.len += (size_t)r;
        in.data[in.len] = '\0';
    }

    rc = set_cause(cause, AL_EPARSE, "malformed HTTP response from ", u->host);
    const char *hdr_end = in.data != NULL ? strstr(in.data, "\r\n\r\n") : NULL;
    char *end = NULL;
    long status = 0;
    if (hdr_end != NULL && strncmp(in.data, "HTTP/1.", 7) == 0 &&
        in.data[8] == ' ')
        status = strtol(in.data + 9, &end, 10);
    if (end == NULL || status < 100 || status > 999 || *end != ' ')
        goto out;
    if (cause != NULL) {
        free(*cause);
        *cause = NULL;
    }
    const char *bstart = hdr_end + 4;
    size_t blen = in.len - (size_t)(bstart - in.data);
    int chunked = 0;
    for (const char *l = strstr(in.data, "\r\n") + 2; l < hdr_end;
         l = strstr(l, "\r\n") + 2) {
        if (strncasecmp(l, "Transfer-Encoding:", 18) == 0 &&
            strstr(l, "chunked") != NULL && strstr(l, "chunked") < hdr_end)
            chunked = 1;
    }
    al_http_resp_t r;
    r.status = (int)status;
    al_buf_init(&r.body);
    if (chunked) {
        if (dechunk(bstart, blen, &r.body) != 0) {
            al_buf_fini(&r.body);
            rc = set_cause(cause, AL_EPARSE, "malformed chunked body from ",
                           u->host);
            goto out;
        }
    } else {
        al_buf_append(&r.body, bstart, blen);
    }
    *resp = r;
    rc = 0;
out:
    if (rc == AL_ETIMEDOUT && cause != NULL && *cause == NULL)
        *cause = al_xasprintf("request to %s:%s timed out", u->host, u->port);
    close(fd);
    al_buf_fini(&req);
    al_buf_fini(&in);
    return rc;
}
