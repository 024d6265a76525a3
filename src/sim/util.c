/* util.c -- memory, strings, files and number parsing for the simulator. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sim_int.h"

static void
oom(void)
{
    fputs("allot: out of memory\n", stderr);
    abort();
}

void *
al__xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        oom();
    return p;
}

void *
al__xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (p == NULL)
        oom();
    return p;
}

void *
al__xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        oom();
    return q;
}

char *
al__xstrdup(const char *s)
{
    return al__xstrndup(s, strlen(s));
}

char *
al__xstrndup(const char *s, size_t n)
{
    char *p = al__xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void
al__buf_vprintf(al_buf_t *b, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    /* va_copy above initialises aq; the analyzer does not model va_copy
     * from a va_list parameter. */
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        b->s = al__xrealloc(b->s, cap);
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void
al__buf_printf(al_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    al__buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void
al__err(al_errs_t *e, const char *fmt, ...)
{
    e->n++;
    if (e->n > AL_MAX_ERRORS)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (e->buf.len > 0)
        al__buf_printf(&e->buf, "\n");
    al__buf_vprintf(&e->buf, fmt, ap);
    va_end(ap);
}

int
al__err_give(al_errs_t *e, char **cause)
{
    if (e->n > AL_MAX_ERRORS)
        al__buf_printf(&e->buf, "\n... and %d more errors",
                       e->n - AL_MAX_ERRORS);
    char *s = e->buf.s ? e->buf.s : al__xstrdup("");
    e->buf.s = NULL;
    e->buf.len = e->buf.cap = 0;
    e->n = 0;
    if (cause)
        *cause = s;
    else
        free(s);
    return AL_EPARSE;
}

int
al__read_file(const char *path, char **data, size_t *len, char **cause)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (cause) {
            al_buf_t b = { 0 };
            al__buf_printf(&b, "%s: %s", path, strerror(errno));
            *cause = b.s;
        }
        return AL_EIO;
    }
    size_t cap = 1 << 16, n = 0;
    char *p = al__xmalloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            p = al__xrealloc(p, cap);
        }
        size_t got = fread(p + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(p);
        if (cause) {
            al_buf_t b = { 0 };
            al__buf_printf(&b, "%s: read error", path);
            *cause = b.s;
        }
        return AL_EIO;
    }
    *data = p;
    *len = n;
    return 0;
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
        char *l = al__xstrndup(p, n);
        if (strlen(l) != n) {
            al__err(errs, "%s:%d: NUL byte in line", name, *line);
            free(l);
            continue;
        }
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
