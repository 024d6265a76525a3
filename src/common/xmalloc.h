/*
 * xmalloc.h -- allocation for the shells (server, agent, CLI): these abort
 * on out-of-memory instead of returning NULL (tmux, Redis).  The core never
 * uses them; it returns AL_ENOMEM through its caller's allocator.
 */
#ifndef AL_XMALLOC_H
#define AL_XMALLOC_H

#include <stddef.h>

void *al_xmalloc(size_t size);
void *al_xcalloc(size_t n, size_t size);
void *al_xrealloc(void *ptr, size_t size);
/* Grows an array of n elements of size sz, checking for overflow. */
void *al_xreallocarray(void *ptr, size_t n, size_t sz);
char *al_xstrdup(const char *s);
char *al_xstrndup(const char *s, size_t n);
/* A malloc()ed formatted string; the caller frees it. */
char *al_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* AL_XMALLOC_H */
