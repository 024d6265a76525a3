/*
 * stream.c -- an interactive session's frames (parse, build) and the dial
 * that opens a stream with an HTTP/1.1 Upgrade (see stream.h).  Shared by
 * the CLI and the agent; the controller only relays the bytes.
 *
 * May call: buf.c, xmalloc.c, json.c (an error answer's message).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/error.h"
#include "json.h"
#include "stream.h"
#include "xmalloc.h"

/* The payload size of each type: -1 any up to AL_STREAM_MAX. */
static int
payload_size(int type)
{
    switch (type) {
    case AL_FR_STDIN:
    case AL_FR_STDOUT:
    case AL_FR_STDERR:
    case AL_FR_NOTICE:
    case AL_FR_ERROR:
        return -1;
    case AL_FR_EOF:
    case AL_FR_CLOSE:
        return 0;
    case AL_FR_RESIZE:
        return 4;
    case AL_FR_SIGNAL:
        return 1;
    case AL_FR_EXIT:
        return 8;
    default:
        return -2;
    }
}

int
al_stream_parse(const void *buf, size_t len, al_frame_t *f, size_t *used,
                char **cause)
{
    const unsigned char *p = buf;
    if (len < 1)
        return 0;
    int want = payload_size(p[0]);
    if (want == -2) {
        if (cause != NULL)
            *cause = al_xasprintf("unknown frame type 0x%02x", p[0]);
        return AL_EPARSE;
    }
    if (len < AL_STREAM_HDR)
        return 0;
    uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 8 | (uint32_t)p[4];
    if (n > AL_STREAM_MAX || (want >= 0 && n != (uint32_t)want)) {
        if (cause != NULL)
            *cause =
                al_xasprintf("frame '%c' of %lu bytes", p[0], (unsigned long)n);
        return AL_EPARSE;
    }
    if (len - AL_STREAM_HDR < n)
        return 0;
    f->type = p[0];
    f->data = p + AL_STREAM_HDR;
    f->len = n;
    *used = AL_STREAM_HDR + n;
    return 1;
}

void
al_stream_hdr(unsigned char hdr[AL_STREAM_HDR], int type, size_t len)
{
    hdr[0] = (unsigned char)type;
    hdr[1] = (unsigned char)(len >> 24);
    hdr[2] = (unsigned char)(len >> 16);
    hdr[3] = (unsigned char)(len >> 8);
    hdr[4] = (unsigned char)len;
}

void
al_stream_put(al_buf_t *b, int type, const void *data, size_t len)
{
    unsigned char hdr[AL_STREAM_HDR];
    al_stream_hdr(hdr, type, len);
    al_buf_append(b, hdr, sizeof hdr);
    if (len > 0)
        al_buf_append(b, data, len);
}

static void
put_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void
put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t
get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

void
al_stream_put_resize(al_buf_t *b, int rows, int cols)
{
    unsigned char p[4];
    put_u16(p, (unsigned)rows & 0xffff);
    put_u16(p + 2, (unsigned)cols & 0xffff);
    al_stream_put(b, AL_FR_RESIZE, p, sizeof p);
}

void
al_stream_put_exit(al_buf_t *b, int code, int sig)
{
    unsigned char p[8];
    put_u32(p, (uint32_t)code);
    put_u32(p + 4, (uint32_t)sig);
    al_stream_put(b, AL_FR_EXIT, p, sizeof p);
}

void
al_stream_resize_of(const al_frame_t *f, int *rows, int *cols)
{
    *rows = f->data[0] << 8 | f->data[1];
    *cols = f->data[2] << 8 | f->data[3];
}

void
al_stream_exit_of(const al_frame_t *f, int *code, int *sig)
{
    *code = (int)(get_u32(f->data) & 0xff);
    *sig = (int)(get_u32(f->data + 4) & 0x7f);
}

void
al_stream_urlenc(al_buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || strchr("-_.~", *p) != NULL) {
            al_buf_putc(b, (char)*p);
        } else {
            al_buf_putc(b, '%');
            al_buf_putc(b, hex[*p >> 4]);
            al_buf_putc(b, hex[*p & 15]);
        }
    }
}

int
al_stream_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int
connect_to(const al_url_t *u, char **cause)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        *cause =
            al_xasprintf("cannot resolve %s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        *cause = al_xasprintf("cannot connect to %s:%s: %s", u->host, u->port,
                              strerror(err ? err : ECONNREFUSED));
        return -1;
    }
    /* A typed key goes out at once: no Nagle delay on the session's path. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* The message of an error answer's JSON body, or its status line. */
static char *
answer_cause(int status, const char *body, size_t len)
{
    json_t *j = al_json_parse(body, len, NULL);
    const char *m = al_json_str(j, "message", NULL);
    char *c = m != NULL ? al_xstrdup(m)
                        : al_xasprintf("the server answered %d", status);
    json_decref(j);
    return c;
}

int
al_stream_dial(const al_url_t *u, const char *path, const char *token, int *fd,
               al_buf_t *extra, char **cause)
{
    int s = connect_to(u, cause);
    if (s < 0)
        return AL_EUNAVAIL;
    al_buf_t req = AL_BUF_INIT;
    al_buf_printf(&req,
                  "POST %s%s HTTP/1.1\r\nHost: %s:%s\r\n"
                  "Connection: Upgrade\r\nUpgrade: allot-stream\r\n"
                  "Content-Length: 0\r\n",
                  u->prefix, path, u->host, u->port);
    if (token != NULL && token[0] != '\0')
        al_buf_printf(&req, "Authorization: Bearer %s\r\n", token);
    al_buf_puts(&req, "\r\n");
    int wrc = al_stream_write_all(s, req.data, req.len);
    al_buf_fini(&req);
    al_buf_t in = AL_BUF_INIT;
    char *end = NULL;
    while (wrc == 0 && end == NULL && in.len < 65536) {
        char chunk[4096];
        ssize_t r = read(s, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        al_buf_append(&in, chunk, (size_t)r);
        end = strstr(al_buf_cstr(&in), "\r\n\r\n");
    }
    /* "HTTP/1.x NNN ..." */
    int status = 0;
    if (end != NULL && strncmp(in.data, "HTTP/1.", 7) == 0 && in.len > 12 &&
        in.data[8] == ' ')
        status = (int)strtol(in.data + 9, NULL, 10);
    if (status < 100 || status > 599) {
        *cause = al_xasprintf("no answer from %s:%s", u->host, u->port);
        al_buf_fini(&in);
        close(s);
        return AL_EUNAVAIL;
    }
    size_t head = (size_t)(end + 4 - in.data);
    if (status != 101) {
        /* The error's body, by its Content-Length, which it has. */
        size_t want = 0;
        for (const char *l = strstr(in.data, "\r\n"); l != NULL && l < end;
             l = strstr(l + 2, "\r\n"))
            if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
                want = strtoul(l + 17, NULL, 10);
        while (want < 65536 && in.len < head + want) {
            char chunk[4096];
            ssize_t r = read(s, chunk, sizeof chunk);
            if (r <= 0)
                break;
            al_buf_append(&in, chunk, (size_t)r);
        }
        *cause = answer_cause(status, in.data + head, in.len - head);
        al_buf_fini(&in);
        close(s);
        return status == 404   ? AL_ENOENT
               : status == 403 ? AL_EPERM
               : status == 401 ? AL_EAUTH
               : status < 500  ? AL_EINVAL
                               : AL_EIO;
    }
    if (in.len > head)
        al_buf_append(extra, in.data + head, in.len - head);
    al_buf_fini(&in);
    *fd = s;
    return 0;
}
