/*
 * chunked.h -- a chunked request body's decoder (HTTP/1.1's
 * Transfer-Encoding: chunked, RFC 9112 section 7.1), fed the bytes as
 * they come from a client (chunked.c).  The router (router.c) holds a
 * request's body whole before asking a replica, so it decodes a chunked
 * body as it reads it and sends the replica the data with a
 * Content-Length.
 *
 * Strict, as a front for other servers must be: a chunk's size line is
 * hex digits, then maybe extensions (skipped), then CRLF; a bare LF, a
 * missing CRLF after a chunk's data, a size over 16 hex digits or a
 * control byte in a line is refused (400), never guessed at, so that the
 * router and a replica never disagree on where a request ends.  Trailer
 * fields are read and dropped.
 */
#ifndef AL_SERVER_CHUNKED_H
#define AL_SERVER_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define AL__CHUNK_LINE_MAX 4096     /* a size line, extensions included */
#define AL__CHUNK_TRAILER_MAX 16384 /* all trailer lines together */

/* The decoder's state; fill with al__dechunk_init(). */
typedef struct al__dechunk {
    int st;         /* where in the framing (chunked.c's states) */
    uint64_t left;  /* the chunk's data bytes still to come, or its size */
    size_t ndigits; /* of the size being read */
    size_t line;    /* bytes of the current size or trailer line */
    size_t trailer; /* bytes of trailer lines so far */
    size_t max;     /* data bytes allowed in all */
    size_t total;   /* data bytes so far */
    int status;     /* once refused: 400 or 413, and it stays */
    const char *why;
} al__dechunk_t;

/* A decoder for a body of at most max data bytes. */
void al__dechunk_init(al__dechunk_t *d, size_t max);

/* Feeds p[0..n): appends the data bytes to out and sets *used to the
 * bytes consumed.  0: more is needed (all n used); 1: the body ended
 * (*used is through its last CRLF; what follows is not the body's);
 * 400 or 413: refused, with the reason in *why (a static string), and
 * every later call says the same.  The data appended before a refusal
 * stays in out (the caller drops it). */
int al__dechunk_feed(al__dechunk_t *d, const char *p, size_t n, al_buf_t *out,
                     size_t *used, const char **why);

#endif /* AL_SERVER_CHUNKED_H */
