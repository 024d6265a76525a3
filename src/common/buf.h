/*
 * buf.h -- a growable byte buffer, always NUL-terminated so that its data
 * can be used as a C string.  Memory comes from al_xmalloc (aborts on OOM).
 */
#ifndef AL_BUF_H
#define AL_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct al_buf {
    char *data; /* NULL until something is added; see al_buf_cstr() */
    size_t len;
    size_t cap;
} al_buf_t;

#define AL_BUF_INIT                                                            \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

void al_buf_init(al_buf_t *b);
/* Releases the memory; the buffer may be reused after al_buf_init(). */
void al_buf_fini(al_buf_t *b);
/* Empties the buffer and keeps its memory. */
void al_buf_clear(al_buf_t *b);
/* Makes room for n more bytes. */
void al_buf_reserve(al_buf_t *b, size_t n);
void al_buf_append(al_buf_t *b, const void *data, size_t n);
void al_buf_puts(al_buf_t *b, const char *s);
void al_buf_putc(al_buf_t *b, char c);
void al_buf_printf(al_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void al_buf_vprintf(al_buf_t *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* The contents as a C string; "" when empty.  Owned by the buffer. */
const char *al_buf_cstr(const al_buf_t *b);
/* Hands the data over to the caller (who frees it) and empties the buffer. */
char *al_buf_steal(al_buf_t *b);

#endif /* AL_BUF_H */
