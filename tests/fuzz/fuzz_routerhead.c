/*
 * fuzz_routerhead.c -- libFuzzer harness for a client's request head as
 * the services' router reads it: al__router_parse_head in
 * src/server/router.c.  Each input is a byte (its low bit: the head came
 * to a service's own port, where any target goes) and the head's bytes.
 * Checks:
 *   - a refusal is one of the statuses the router answers (400, 404, 413,
 *     501, 505) with a reason, and leaves the output alone;
 *   - an accepted head names a service of 1..63 bytes right after "/s/"
 *     (on a service's own port: none, and the whole target is the rest),
 *     its rest and token lie inside the head, a Content-Length within
 *     the router's 16 MiB, and a chunked body only without one (and not
 *     in HTTP/1.0).
 * Corpus: tests/fuzz/corpus/routerhead.
 */
#include "fuzz.h"
#include "router.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *h = (const char *)data;
    al__rt_head_t o, before;
    memset(&o, 0x5a, sizeof o);
    memcpy(&before, &o, sizeof o);
    const char *why = NULL;
    /* The first byte: whether it came to a service's own port. */
    bool own = size > 0 && (data[0] & 1) != 0;
    if (size > 0) {
        h++;
        size--;
    }
    int st = al__router_parse_head(h, size, own, &o, &why);
    if (st != 0) {
        CHECK(st == 400 || st == 404 || st == 413 || st == 501 || st == 505);
        CHECK(why != NULL && why[0] != '\0');
        CHECK(memcmp(&o, &before, sizeof o) == 0);
        return 0;
    }
    if (own) {
        CHECK(o.name_len == 0 && o.rest_len >= 1);
    } else {
        CHECK(o.name_len >= 1 && o.name_len <= 63);
        CHECK(o.name_off >= 3 && memcmp(h + o.name_off - 3, "/s/", 3) == 0);
    }
    CHECK(o.name_off + o.name_len <= size);
    CHECK(o.rest_off == o.name_off + o.name_len);
    CHECK(o.rest_off + o.rest_len <= size);
    for (size_t i = 0; i < o.name_len; i++)
        CHECK(h[o.name_off + i] != '/' && h[o.name_off + i] != '?');
    CHECK(o.token_len == 0 || o.token_off + o.token_len <= size);
    CHECK(o.content_length >= -1 && o.content_length <= (16 << 20));
    /* A chunked body, never with a Content-Length beside it. */
    CHECK(!o.chunked || (o.content_length == -1 && !o.http10));
    CHECK(o.method_len >= 1);
    return 0;
}
