/*
 * chunked.c -- a chunked request body's decoder (see chunked.h): a state
 * machine over the bytes as they come, strict on the framing.
 *
 * May call: buf.c only (no I/O).  Called by router.c; fuzzed by
 * tests/fuzz/fuzz_chunked.c.
 */
#include <string.h>

#include "chunked.h"

enum {
    S_SIZE,    /* a chunk's size: hex digits */
    S_SIZE_WS, /* after them: white space before ';' or CR */
    S_EXT,     /* an extension, after its ';', to CR */
    S_SIZE_LF, /* the size line's LF */
    S_DATA,    /* the chunk's data */
    S_DATA_CR, /* the CRLF after it */
    S_DATA_LF,
    S_TR_START, /* after the last chunk: a trailer line or the end's CR */
    S_TR_LINE,  /* a trailer line, to CR */
    S_TR_LF,
    S_END_LF, /* the last CRLF's LF */
    S_DONE,
    S_BAD,
};

void
al__dechunk_init(al__dechunk_t *d, size_t max)
{
    memset(d, 0, sizeof *d);
    d->st = S_SIZE;
    d->max = max;
}

static int
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A byte that may not stand in a line: controls but HTAB, and DEL. */
static bool
is_ctl(char c)
{
    unsigned char u = (unsigned char)c;
    return (u < 0x20 && c != '\t') || u == 0x7f;
}

static int
refuse(al__dechunk_t *d, int status, const char *why)
{
    d->st = S_BAD;
    d->status = status;
    d->why = why;
    return status;
}

/* A byte after a chunk's size: only white space before ';' (RFC 9112's
 * BWS), so "3 2" is not taken for a size of 3. */
static int
size_ws(al__dechunk_t *d, char c)
{
    if (c == '\r')
        d->st = S_SIZE_LF;
    else if (c == '\n')
        return refuse(d, 400, "a chunk size line not ended by CRLF");
    else if (c == ';')
        d->st = S_EXT;
    else if (c != ' ' && c != '\t')
        return refuse(d, 400, "a malformed chunk size");
    return 0;
}

/* One byte of any state but S_DATA: 0 or a refusal. */
static int
step(al__dechunk_t *d, char c)
{
    switch (d->st) {
    case S_SIZE: {
        if (++d->line > AL__CHUNK_LINE_MAX)
            return refuse(d, 400, "a chunk size line over 4 KiB");
        int v = hexval(c);
        if (v >= 0) {
            if (d->ndigits == 16)
                return refuse(d, 400, "a chunk size of over 16 hex digits");
            d->left = d->left * 16 + (uint64_t)v;
            d->ndigits++;
            return 0;
        }
        if (d->ndigits == 0)
            return refuse(d, 400, "a chunk without its size");
        d->st = S_SIZE_WS;
        return size_ws(d, c);
    }
    case S_SIZE_WS:
        if (++d->line > AL__CHUNK_LINE_MAX)
            return refuse(d, 400, "a chunk size line over 4 KiB");
        return size_ws(d, c);
    case S_EXT:
        if (++d->line > AL__CHUNK_LINE_MAX)
            return refuse(d, 400, "a chunk size line over 4 KiB");
        if (c == '\r')
            d->st = S_SIZE_LF;
        else if (c == '\n')
            return refuse(d, 400, "a chunk size line not ended by CRLF");
        else if (is_ctl(c))
            return refuse(d, 400, "a control byte in a chunk extension");
        return 0;
    case S_SIZE_LF:
        if (c != '\n')
            return refuse(d, 400, "a chunk size line not ended by CRLF");
        if (d->left > (uint64_t)(d->max - d->total))
            return refuse(d, 413, "the request body is over the limit");
        d->st = d->left == 0 ? S_TR_START : S_DATA;
        d->line = 0;
        d->ndigits = 0;
        return 0;
    case S_DATA_CR:
        if (c != '\r')
            return refuse(d, 400, "a chunk's data not followed by CRLF");
        d->st = S_DATA_LF;
        return 0;
    case S_DATA_LF:
        if (c != '\n')
            return refuse(d, 400, "a chunk's data not followed by CRLF");
        d->st = S_SIZE;
        d->left = 0;
        return 0;
    case S_TR_START:
        if (c == '\r') {
            d->st = S_END_LF;
            return 0;
        }
        d->st = S_TR_LINE;
        /* FALLTHROUGH */
    case S_TR_LINE:
        if (++d->trailer > AL__CHUNK_TRAILER_MAX)
            return refuse(d, 400, "chunked trailers over 16 KiB");
        if (c == '\r')
            d->st = S_TR_LF;
        else if (c == '\n')
            return refuse(d, 400, "a trailer line not ended by CRLF");
        else if (is_ctl(c))
            return refuse(d, 400, "a control byte in a trailer");
        return 0;
    case S_TR_LF:
        if (c != '\n')
            return refuse(d, 400, "a trailer line not ended by CRLF");
        d->st = S_TR_START;
        return 0;
    case S_END_LF:
        if (c != '\n')
            return refuse(d, 400, "a chunked body not ended by CRLF");
        d->st = S_DONE;
        return 0;
    default:
        return refuse(d, 400, "a malformed chunked body");
    }
}

int
al__dechunk_feed(al__dechunk_t *d, const char *p, size_t n, al_buf_t *out,
                 size_t *used, const char **why)
{
    size_t i = 0;
    while (i < n && d->st != S_DONE && d->st != S_BAD) {
        if (d->st == S_DATA) {
            size_t take = n - i < d->left ? n - i : (size_t)d->left;
            al_buf_append(out, p + i, take);
            d->total += take;
            d->left -= take;
            i += take;
            if (d->left == 0)
                d->st = S_DATA_CR;
            continue;
        }
        if (step(d, p[i]) != 0)
            break;
        i++;
    }
    if (d->st == S_BAD) {
        *why = d->why;
        return d->status;
    }
    *used = i;
    return d->st == S_DONE ? 1 : 0;
}
