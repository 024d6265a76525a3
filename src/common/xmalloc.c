/* xmalloc.c -- aborting allocation helpers for the shells. */
#include "xmalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
oom(size_t size)
{
    fprintf(stderr, "allot: out of memory (%zu bytes)\n", size);
    abort();
}

void *
al_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        oom(size);
    return p;
}

void *
al_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        oom(n * size);
    return p;
}

void *
al_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (p == NULL)
        oom(size);
    return p;
}

void *
al_xreallocarray(void *ptr, size_t n, size_t sz)
{
    if (sz != 0 && n > SIZE_MAX / sz)
        oom(SIZE_MAX);
    return al_xrealloc(ptr, n * sz);
}

char *
al_xstrdup(const char *s)
{
    return al_xstrndup(s, strlen(s));
}

char *
al_xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = al_xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *
al_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* The va_list is initialised (va_start/va_copy above); clang 14's
     * analyzer reports it when clang-tidy checks several files in one
     * run. */
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    char *p = al_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
