/* buf.c -- growable NUL-terminated byte buffer. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

void
al_buf_init(al_buf_t *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void
al_buf_fini(al_buf_t *b)
{
    free(b->data);
    al_buf_init(b);
}

void
al_buf_clear(al_buf_t *b)
{
    b->len = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

void
al_buf_reserve(al_buf_t *b, size_t n)
{
    if (b->len + n + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n + 1)
        cap *= 2;
    b->data = al_xrealloc(b->data, cap);
    b->cap = cap;
}

void
al_buf_append(al_buf_t *b, const void *data, size_t n)
{
    al_buf_reserve(b, n);
    if (n > 0)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void
al_buf_puts(al_buf_t *b, const char *s)
{
    al_buf_append(b, s, strlen(s));
}

void
al_buf_putc(al_buf_t *b, char c)
{
    al_buf_append(b, &c, 1);
}

void
al_buf_vprintf(al_buf_t *b, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    /* The va_list is initialised (va_start/va_copy above); clang 14's
     * analyzer reports it when clang-tidy checks several files in one
     * run. */
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n <= 0)
        return;
    al_buf_reserve(b, (size_t)n);
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void
al_buf_printf(al_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    al_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *
al_buf_cstr(const al_buf_t *b)
{
    return b->data != NULL ? b->data : "";
}

char *
al_buf_steal(al_buf_t *b)
{
    char *p = b->data != NULL ? b->data : al_xstrdup("");
    al_buf_init(b);
    return p;
}
