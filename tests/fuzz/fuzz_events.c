/*
 * fuzz_events.c -- libFuzzer harness for GET /v1/events' query
 * (al__events_query_parse, src/server/events.c) and the CLI's reader of
 * the stream it sends (al_cli_sse_next, src/cli/cli_events.c).  The
 * input's first six lines are the query's since, Last-Event-ID, last,
 * job, follow and poll ("-" or a missing line: absent); what follows is
 * read as an event stream.  Checks: a refused query says why and leaves
 * the result untouched, an accepted one is within its bounds; the reader
 * never reads past the input, moves forward on every message, and each
 * message's fields lie in its own copy.
 * Corpus: tests/fuzz/corpus/events.
 */
#include <string.h>

#include "cli.h"
#include "fuzz.h"
#include "server_int.h"

/* The query of fields f (NULL: absent). */
static void
query(char *const f[6])
{
    const al__events_query_t before = { .has_since = true,
                                        .since = 77,
                                        .last = 5,
                                        .job = 99,
                                        .mode = 42,
                                        .poll_s = 7 };
    al__events_query_t q = before;
    char *cause = NULL;
    int rc =
        al__events_query_parse(f[0], f[1], f[2], f[3], f[4], f[5], &q, &cause);
    if (rc != 0) {
        CHECK(rc == AL_EINVAL && cause != NULL && cause[0] != '\0');
        CHECK(q.has_since == before.has_since && q.since == before.since &&
              q.last == before.last && q.job == before.job &&
              q.mode == before.mode && q.poll_s == before.poll_s);
        free(cause);
        return;
    }
    CHECK(cause == NULL);
    CHECK(q.last >= 0 && q.last <= AL_EVENTS_RING);
    CHECK(q.mode == AL_SSE_FOLLOW || q.mode == AL_SSE_ONCE ||
          q.mode == AL_SSE_POLL);
    CHECK(q.mode != AL_SSE_POLL || (q.poll_s >= 1 && q.poll_s <= 60));
    CHECK(!q.has_since || q.last == 0);
    CHECK(q.job <= INT64_MAX);
}

/* The CLI's reader over text[0..len). */
static void
stream(const char *text, size_t len)
{
    size_t pos = 0, last = 0;
    al_cli_sse_t m = { 0 };
    while (al_cli_sse_next(text, len, &pos, &m) == 1) {
        CHECK(pos > last && pos <= len);
        last = pos;
        CHECK(m.event != NULL || m.data != NULL);
        const char *fields[3] = { m.event, m.data, m.id };
        for (int k = 0; k < 3; k++)
            CHECK(fields[k] == NULL ||
                  (fields[k] >= m.buf &&
                   fields[k] + strlen(fields[k]) <= m.buf + m.len));
    }
    CHECK(pos <= len);
    al_cli_sse_fini(&m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *f[6] = { NULL, NULL, NULL, NULL, NULL, NULL };
    size_t off = 0;
    for (int i = 0; i < 6 && off < size; i++) {
        const uint8_t *nl = memchr(data + off, '\n', size - off);
        size_t n = nl != NULL ? (size_t)(nl - (data + off)) : size - off;
        if (!(n == 1 && data[off] == '-')) {
            f[i] = malloc(n + 1);
            memcpy(f[i], data + off, n);
            f[i][n] = '\0';
        }
        off += n + (nl != NULL);
    }
    query(f);
    for (int i = 0; i < 6; i++)
        free(f[i]);
    stream((const char *)data + off, size - off);
    return 0;
}
