/*
 * parse.c -- what the simulator's input parsers (trace.c, cluster.c,
 * queues.c) share: reading a whole input file with a message naming it,
 * collecting errors, `key=value` lines and words, whole numbers, and a
 * stable hash of names.
 *
 * May call: src/common's base (allocation, buffers, files) and libc.
 * Memory, buffers and file reading are src/common's; only what is the
 * simulator's own lives here.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fs.h"
#include "sim_int.h"

void
al__err(al_errs_t *e, const char *fmt, ...)
{
    e->n++;
    if (e->n > AL_MAX_ERRORS)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (e->buf.len > 0)
        al_buf_putc(&e->buf, '\n');
    al_buf_vprintf(&e->buf, fmt, ap);
    va_end(ap);
}

int
al__err_give(al_errs_t *e, char **cause)
{
    if (e->n > AL_MAX_ERRORS)
        al_buf_printf(&e->buf, "\n... and %d more errors",
                      e->n - AL_MAX_ERRORS);
    char *s = al_buf_steal(&e->buf);
    e->n = 0;
    if (cause)
        *cause = s;
    else
        free(s);
    return AL_EPARSE;
}

/* errno values that read(2) gives and open(2) with O_RDONLY does not. */
static const int read_errnos[] = { EISDIR, EIO, EAGAIN, EBADF, EFAULT };

int
al__read_file(const char *path, char **data, size_t *len, char **cause)
{
    int rc = al_fs_read_file(path, data, len);
    if (rc == 0)
        return 0;
    /* al_fs_read_file() returns as open() or read() left errno.  The
     * message says why a file could not be opened, and only "read error"
     * when it opened but could not be read (a directory). */
    int e = rc == AL_ENOENT ? ENOENT : errno;
    bool read_failed = false;
    for (size_t i = 0; i < sizeof read_errnos / sizeof read_errnos[0]; i++)
        read_failed = read_failed || e == read_errnos[i];
    if (cause)
        *cause = read_failed ? al_xasprintf("%s: read error", path)
                             : al_xasprintf("%s: %s", path, strerror(e));
    return AL_EIO;
}

int
al__parse_i64(const char *s, int64_t *v)
{
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (*p < '0' || *p > '9')
        return -1;
    int64_t x = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (x > (INT64_MAX - (*p - '0')) / 10)
            return -1;
        x = x * 10 + (*p - '0');
    }
    if (*p != '\0')
        return -1;
    *v = neg ? -x : x;
    return 0;
}

int
al__parse_num(const char *s, double *v)
{
    if (*s == '\0')
        return -1;
    /* Only plain decimal notation: no hex, inf or nan from strtod. */
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789.+-eE", *p))
            return -1;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (*end != '\0' || errno != 0 || !isfinite(x))
        return -1;
    *v = x;
    return 0;
}

uint64_t
al__hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void
al__kv_split(char *line, al_kv_fn fn, void *ctx)
{
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        char *w = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
        char *eq = strchr(w, '=');
        if (eq == NULL) {
            fn(ctx, NULL, w);
        } else {
            *eq = '\0';
            fn(ctx, w, eq + 1);
        }
    }
}

char *
al__kv_line(const char *name, const char *buf, size_t len, size_t *off,
            int *line, al_errs_t *errs)
{
    while (*off < len) {
        const char *p = buf + *off;
        const char *nl = memchr(p, '\n', len - *off);
        size_t n = nl ? (size_t)(nl - p) : len - *off;
        *off += n + (nl ? 1 : 0);
        (*line)++;
        if (memchr(p, '\0', n) != NULL) {
            al__err(errs, "%s:%d: NUL byte in line", name, *line);
            continue;
        }
        char *l = al_xstrndup(p, n);
        char *hash = strchr(l, '#');
        if (hash)
            *hash = '\0';
        for (char *q = l; *q; q++)
            if (*q == '\r' || *q == ',')
                *q = ' ';
        if (strspn(l, " \t") == strlen(l)) {
            free(l);
            continue;
        }
        return l;
    }
    return NULL;
}
