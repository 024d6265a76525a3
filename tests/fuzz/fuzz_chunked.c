/*
 * fuzz_chunked.c -- libFuzzer harness for a chunked request body's
 * decoder, al__dechunk_feed in src/server/chunked.c.  Each input is a
 * byte (the size of the pieces the body comes in, 1..256, as reads
 * from a socket cut it) and the body's bytes.  Checks:
 *   - fed whole or in pieces, the decoder says the same: the same
 *     outcome, the same data, the same bytes used;
 *   - a refusal is 400 or 413 with a reason, and sticks;
 *   - the data is never over the limit (4 KiB here), and an accepted
 *     body used no more than it was given;
 *   - the data, chunked again as one chunk, decodes to itself.
 * Corpus: tests/fuzz/corpus/chunked.
 */
#include "buf.h"
#include "chunked.h"
#include "fuzz.h"

#define LIMIT 4096

/* Feeds p[0..n) in pieces of step bytes until the body ends or is
 * refused; the outcome, the data in out, the bytes used in *used. */
static int
decode(const char *p, size_t n, size_t step, al_buf_t *out, size_t *used,
       const char **why)
{
    al__dechunk_t d;
    al__dechunk_init(&d, LIMIT);
    size_t off = 0;
    int rc = 0;
    *used = 0;
    do {
        size_t k = n - off < step ? n - off : step;
        size_t u = 0;
        rc = al__dechunk_feed(&d, p + off, k, out, &u, why);
        if (rc >= 400) {
            const char *again = NULL;
            size_t u2 = 12345;
            CHECK(al__dechunk_feed(&d, "0\r\n\r\n", 5, out, &u2, &again) == rc);
            CHECK(again == *why && u2 == 12345);
            return rc;
        }
        CHECK(u <= k);
        CHECK(rc == 1 || u == k);
        off += u;
    } while (rc == 0 && off < n);
    *used = off;
    return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)data[0] + 1;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    al_buf_t a, b;
    al_buf_init(&a);
    al_buf_init(&b);
    const char *wa = NULL, *wb = NULL;
    size_t ua = 0, ub = 0;
    int ra = decode(p, n, n > 0 ? n : 1, &a, &ua, &wa);
    int rb = decode(p, n, step, &b, &ub, &wb);
    CHECK(ra == rb);
    CHECK(ra == 0 || ra == 1 || ra == 400 || ra == 413);
    if (ra >= 400) {
        CHECK(wa != NULL && wa[0] != '\0' && wa == wb);
    } else {
        CHECK(ua == ub && ua <= n);
        CHECK(a.len == b.len && a.len <= LIMIT);
        CHECK(a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
    }
    if (ra == 1) {
        /* Chunked again as one chunk (and the last), it decodes to
         * itself, every byte used. */
        al_buf_t re, c;
        al_buf_init(&re);
        al_buf_init(&c);
        if (a.len > 0) {
            al_buf_printf(&re, "%zx\r\n", a.len);
            al_buf_append(&re, a.data, a.len);
            al_buf_puts(&re, "\r\n");
        }
        al_buf_puts(&re, "0\r\n\r\n");
        size_t uc = 0;
        const char *wc = NULL;
        CHECK(decode(re.data, re.len, re.len, &c, &uc, &wc) == 1);
        CHECK(uc == re.len && c.len == a.len);
        CHECK(a.len == 0 || memcmp(a.data, c.data, a.len) == 0);
        al_buf_fini(&re);
        al_buf_fini(&c);
    }
    al_buf_fini(&a);
    al_buf_fini(&b);
    return 0;
}
