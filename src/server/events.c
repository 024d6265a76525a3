/*
 * events.c -- the event hub behind GET /v1/events: a bounded ring of the
 * jobs' recent events (state changes and the scheduler's decisions, the
 * rows of the store's job history) and the server-sent-event streams that
 * read it.
 *
 * Nodes' and queues' changes (clusterev.c) go on the same streams, as
 * events of type node and queue that every token may see; they are not
 * kept in the store, so a restart's ring holds the jobs' alone.
 *
 * The loop thread records each event as store.c writes its history row
 * (al__events_record()), keeps it aside while the transaction is open and
 * moves it into the ring when the commit succeeds (al__events_publish()),
 * or drops it when the commit fails: a stream shows only what is durable,
 * in the order it was recorded, from the same call that wrote the
 * history.  Publishing takes the hub's lock for a copy of pointers and
 * wakes the streams that wait; it never writes to a socket, so no client,
 * however slow, holds the loop up.
 *
 * A stream (al__sse_t) is read by the intake's thread (server.c's content
 * reader) into libmicrohttpd's buffer: it keeps a cursor (the id of the
 * last event it passed) and a small buffer of formatted text (at most
 * SSE_CHUNK bytes and one event).  When it has nothing to send it asks the
 * intake to suspend its connection, under the hub's lock, so that a
 * publish that follows resumes it.  The ring keeps RING events; a stream
 * whose cursor falls behind the ring's oldest event (a client that did not
 * read) is sent an `event: gap` and ended: it comes back with its cursor,
 * is told of the gap again and reloads.
 *
 * Event ids are numbers that only grow, also across restarts of the
 * controller: a start's first id is its wall-clock milliseconds times
 * 1000, so a cursor from an earlier start is below every id of this one
 * and reads as a gap.  At start the ring is filled with the store's last
 * events (al__events_load), so that `allot events` shows what happened
 * before the restart.
 *
 * Threads: the loop (record, publish, drop, tick, new streams) and the
 * intake's (reading streams, freeing them, close); the hub's lock guards
 * the ring, the waiting list and the streams' fields, not what only the
 * loop touches (the events not yet committed, the next id, when streams
 * were last woken).  The lock is never held while calling out,
 * except to the intake's suspend and resume functions, which take only
 * libmicrohttpd's own locks.
 *
 * May call: src/common (json, buffers, clock) and the intake's functions
 * through the pointers it gave al__events_create(); nothing else of the
 * server.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

/* Events the ring keeps: a few minutes of a busy cluster's changes. */
#define RING AL_EVENTS_RING
/* A stream formats at most this much ahead of what it has sent. */
#define SSE_CHUNK 16384
/* A comment line this often keeps proxies and the connection open and
 * finds clients that went away (ms). */
#define BEAT_MS 15000
/* A long poll (poll=S) waits at most this long (s). */
#define POLL_MAX_S 60
/* Waiting streams are woken at most this often (ms): under a burst of
 * commits each wake-up then carries several events rather than one, which
 * with a thousand streams cut the controller's CPU per submission about
 * three times (bench/e2e --case events: 0.78 ms against 2.5 ms with a
 * wake-up per commit), for at most this much delay. */
#define WAKE_MS 100

typedef struct al__event {
    uint64_t id;
    uint64_t job;  /* 0: a node's or a queue's event */
    char *user;    /* the job's owner: who may see it (admins: all) */
    bool everyone; /* a node's or a queue's: any token may see it */
    char *text;    /* the whole SSE message, "id: ...\n\n" */
    bool loaded;   /* read from the store at start, not seen live */
} al__event_t;

struct al__sse {
    al__events_t *hub;
    uint64_t cursor;        /* the last event passed (sent or filtered out) */
    uint64_t job;           /* only this job's events, or 0 */
    char *user;             /* only this user's jobs, or NULL (an admin) */
    int mode;               /* AL_SSE_* */
    int64_t deadline_ms;    /* poll: when to end without events (mono) */
    int64_t last_write_ms;  /* when text was last added (mono) */
    bool started, sent_any; /* the ready message; an event */
    bool gap;               /* a gap to tell before anything else */
    bool ended;             /* end once out is drained */
    al_buf_t out;           /* formatted, not yet handed over */
    size_t off;             /* how much of out was handed over */
    void *conn;             /* the intake's connection */
    bool waiting;           /* suspended, on hub->waiting */
    al__sse_t *next_waiting, **prev_waiting;
};

struct al__events {
    pthread_mutex_t mu;
    al__event_t ring[RING];
    size_t start, count; /* ring[start..] in id order, count of them */
    uint64_t next_id;    /* the id the next event gets */
    uint64_t base;       /* the first id of this start */
    uint64_t dropped;    /* the newest id pushed out of the ring, or 0 */
    al__sse_t *waiting;  /* suspended streams */
    bool closing;
    al__events_io_fn suspend, resume;
    /* Loop thread only: recorded, not committed yet. */
    al__event_t *pending;
    size_t npending, pending_cap;
    int64_t beat_checked;
    int64_t woken_ms; /* when the waiting streams were last woken */
    bool wake_due;    /* published since, not woken yet */
};

al__events_t *
al__events_create(al__events_io_fn suspend, al__events_io_fn resume)
{
    al__events_t *h = al_xcalloc(1, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    h->suspend = suspend;
    h->resume = resume;
    h->base = (uint64_t)al_clock_ms() * 1000;
    h->next_id = h->base + 1;
    return h;
}

static void
event_fini(al__event_t *e)
{
    free(e->user);
    free(e->text);
    memset(e, 0, sizeof *e);
}

void
al__events_destroy(al__events_t *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->count; i++)
        event_fini(&h->ring[(h->start + i) % RING]);
    for (size_t i = 0; i < h->npending; i++)
        event_fini(&h->pending[i]);
    free(h->pending);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* The SSE message of an event through jansson: the reference for
 * al__events_format(), and what it falls back to for a string that is not
 * valid UTF-8 (jansson leaves such a field out). */
static char *
format_json(uint64_t id, const al__event_info_t *in)
{
    const char *kind = in->kind != NULL ? in->kind : "job";
    json_t *o = json_pack("{s:I, s:I}", "id", (json_int_t)id, "time",
                          (json_int_t)in->ms);
    if (strcmp(kind, "job") == 0)
        json_object_set_new(o, "job", json_integer((json_int_t)in->job));
    json_object_set_new(o, "event", json_string(in->event));
    if (in->node != NULL)
        json_object_set_new(o, "node", json_string(in->node));
    if (in->name != NULL)
        json_object_set_new(o, "name", json_string(in->name));
    if (in->user != NULL)
        json_object_set_new(o, "user", json_string(in->user));
    if (in->queue != NULL)
        json_object_set_new(o, "queue", json_string(in->queue));
    if (in->state != NULL)
        json_object_set_new(o, "state", json_string(in->state));
    if (in->detail != NULL)
        json_object_set_new(o, "detail", json_string(in->detail));
    char *data = al_json_dump(o);
    json_decref(o);
    char *text = al_xasprintf("id: %" PRIu64 "\nevent: %s\ndata: %s\n\n", id,
                              kind, data);
    free(data);
    return text;
}

/* Whether s (NULL counts) is valid UTF-8 as jansson takes it: no
 * overlong forms, no surrogates, nothing above U+10FFFF. */
static bool
utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (p != NULL && *p != '\0') {
        unsigned c = *p;
        int n;
        uint32_t cp;
        if (c < 0x80) {
            p++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        for (int k = 1; k <= n; k++) {
            if ((p[k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return false;
        p += n + 1;
    }
    return true;
}

/* Appends ,"key":"value" (value escaped as jansson's compact dump does:
 * quote, backslash and control characters; UTF-8 as it is). */
static void
put_str(al_buf_t *b, const char *key, const char *v)
{
    if (v == NULL)
        return;
    al_buf_putc(b, ',');
    al_buf_putc(b, '"');
    al_buf_puts(b, key);
    al_buf_puts(b, "\":\"");
    const char *run = v;
    for (const char *p = v;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        al_buf_append(b, run, (size_t)(p - run));
        if (c == '\0')
            break;
        run = p + 1;
        char esc[8];
        switch (c) {
        case '"':
            al_buf_puts(b, "\\\"");
            break;
        case '\\':
            al_buf_puts(b, "\\\\");
            break;
        case '\b':
            al_buf_puts(b, "\\b");
            break;
        case '\f':
            al_buf_puts(b, "\\f");
            break;
        case '\n':
            al_buf_puts(b, "\\n");
            break;
        case '\r':
            al_buf_puts(b, "\\r");
            break;
        case '\t':
            al_buf_puts(b, "\\t");
            break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
            al_buf_puts(b, esc);
        }
    }
    al_buf_putc(b, '"');
}

/* The SSE message of an event; its data is one line of JSON.  Its SSE
 * event type is its kind: job, node or queue.  Every recorded event is
 * formatted once, at the commit's pace, so the text is written straight
 * into one buffer rather than built as a jansson tree and dumped (that
 * took about a tenth of the controller's CPU per job); the bytes are
 * jansson's, which format_json() gives for a string it would refuse. */
char *
al__events_format(uint64_t id, const al__event_info_t *in)
{
    const char *kind = in->kind != NULL ? in->kind : "job";
    const char *strs[] = { in->event, in->node,  in->name,   in->user,
                           in->queue, in->state, in->detail, kind };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (!utf8_ok(strs[i]))
            return format_json(id, in);
    al_buf_t b;
    al_buf_init(&b);
    al_buf_reserve(&b, 256);
    /* jansson's integers are signed: the same cast as format_json(). */
    al_buf_printf(&b,
                  "id: %" PRIu64 "\nevent: %s\ndata: {\"id\":%" PRId64
                  ",\"time\":%" PRId64,
                  id, kind, (int64_t)id, in->ms);
    if (strcmp(kind, "job") == 0)
        al_buf_printf(&b, ",\"job\":%" PRId64, (int64_t)in->job);
    put_str(&b, "event", in->event);
    put_str(&b, "node", in->node);
    put_str(&b, "name", in->name);
    put_str(&b, "user", in->user);
    put_str(&b, "queue", in->queue);
    put_str(&b, "state", in->state);
    put_str(&b, "detail", in->detail);
    al_buf_puts(&b, "}\n\n");
    /* Kept in the ring: a copy of its size (see al_json_dump_flags). */
    char *t = al_xmalloc(b.len + 1);
    memcpy(t, b.data, b.len + 1);
    al_buf_fini(&b);
    return t;
}

static void
push_pending(al__events_t *h, const al__event_info_t *in, bool loaded)
{
    if (h->npending == h->pending_cap) {
        h->pending_cap = h->pending_cap ? 2 * h->pending_cap : 64;
        h->pending =
            al_xreallocarray(h->pending, h->pending_cap, sizeof *h->pending);
    }
    al__event_t *e = &h->pending[h->npending++];
    e->id = h->next_id++;
    e->job = in->job;
    e->user = in->user != NULL ? al_xstrdup(in->user) : NULL;
    e->everyone = in->kind != NULL && strcmp(in->kind, "job") != 0;
    e->text = al__events_format(e->id, in);
    e->loaded = loaded;
}

void
al__events_record(al__events_t *h, const al__event_info_t *in)
{
    if (h != NULL)
        push_pending(h, in, false);
}

void
al__events_drop(al__events_t *h)
{
    if (h == NULL)
        return;
    /* Their ids are not given again: a stream that never saw them has
     * nothing to miss, and ids need only grow. */
    for (size_t i = 0; i < h->npending; i++)
        event_fini(&h->pending[i]);
    h->npending = 0;
}

/* Takes s off the waiting list (under the lock). */
static void
unwait(al__sse_t *s)
{
    if (!s->waiting)
        return;
    *s->prev_waiting = s->next_waiting;
    if (s->next_waiting != NULL)
        s->next_waiting->prev_waiting = s->prev_waiting;
    s->waiting = false;
    s->next_waiting = NULL;
    s->prev_waiting = NULL;
}

/* Resumes every waiting stream (under the lock). */
static void
wake_all(al__events_t *h)
{
    for (al__sse_t *s = h->waiting, *next; s != NULL; s = next) {
        next = s->next_waiting;
        s->waiting = false;
        s->next_waiting = NULL;
        s->prev_waiting = NULL;
        h->resume(s->conn);
    }
    h->waiting = NULL;
}

void
al__events_publish(al__events_t *h)
{
    if (h == NULL || h->npending == 0)
        return;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->npending; i++) {
        if (h->count == RING) {
            al__event_t *old = &h->ring[h->start];
            h->dropped = old->id;
            event_fini(old);
            h->start = (h->start + 1) % RING;
            h->count--;
        }
        h->ring[(h->start + h->count) % RING] = h->pending[i];
        h->count++;
    }
    h->npending = 0;
    int64_t now = al_clock_mono_ms();
    if (now - h->woken_ms >= WAKE_MS) {
        wake_all(h);
        h->woken_ms = now;
        h->wake_due = false;
    } else {
        h->wake_due = true; /* al__events_tick() wakes them */
    }
    pthread_mutex_unlock(&h->mu);
}

int64_t
al__events_next_ms(const al__events_t *h)
{
    return h != NULL && h->wake_due ? h->woken_ms + WAKE_MS : INT64_MAX;
}

void
al__events_load(al__events_t *h, const al__event_info_t *in, bool more_before)
{
    if (h == NULL)
        return;
    push_pending(h, in, true);
    if (more_before && h->dropped == 0)
        h->dropped = h->base; /* older ones are in the store only */
}

void
al__events_tick(al__events_t *h, int64_t mono)
{
    if (h == NULL)
        return;
    if (h->wake_due && mono - h->woken_ms >= WAKE_MS) {
        pthread_mutex_lock(&h->mu);
        wake_all(h);
        pthread_mutex_unlock(&h->mu);
        h->woken_ms = mono;
        h->wake_due = false;
    }
    if (mono - h->beat_checked < 1000)
        return;
    h->beat_checked = mono;
    pthread_mutex_lock(&h->mu);
    for (al__sse_t *s = h->waiting, *next; s != NULL; s = next) {
        next = s->next_waiting;
        bool due = mono - s->last_write_ms >= BEAT_MS ||
                   (s->mode == AL_SSE_POLL && mono >= s->deadline_ms);
        if (!due)
            continue;
        unwait(s);
        h->resume(s->conn);
    }
    pthread_mutex_unlock(&h->mu);
}

void
al__events_close(al__events_t *h)
{
    if (h == NULL)
        return;
    pthread_mutex_lock(&h->mu);
    h->closing = true;
    wake_all(h);
    pthread_mutex_unlock(&h->mu);
}

/* ------------------------------------------------------------------ */
/* Streams                                                            */

/* The ring index of the first event after id (count when none). */
static size_t
after(const al__events_t *h, uint64_t id)
{
    size_t lo = 0, hi = h->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->ring[(h->start + mid) % RING].id <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool
visible(const al__sse_t *s, const al__event_t *e)
{
    if (s->job != 0 && e->job != s->job)
        return false;
    return s->user == NULL || e->everyone ||
           (e->user != NULL && strcmp(e->user, s->user) == 0);
}

al__sse_t *
al__events_open(al__events_t *h, const al__events_query_t *q, const char *user)
{
    al__sse_t *s = al_xcalloc(1, sizeof *s);
    s->hub = h;
    s->job = q->job;
    s->user = user != NULL ? al_xstrdup(user) : NULL;
    s->mode = q->mode;
    int64_t now = al_clock_mono_ms();
    s->last_write_ms = now;
    s->deadline_ms = now + (int64_t)q->poll_s * 1000;
    pthread_mutex_lock(&h->mu);
    uint64_t newest = h->count > 0
                          ? h->ring[(h->start + h->count - 1) % RING].id
                          : h->next_id - 1;
    if (q->has_since) {
        s->cursor = q->since;
        if (q->since < h->base) {
            /* From an earlier start: what it missed is unknown.  Go on
             * with this start's live events, told of the gap. */
            s->gap = true;
            s->cursor = h->base;
            for (size_t i = 0; i < h->count; i++)
                if (h->ring[(h->start + i) % RING].loaded)
                    s->cursor = h->ring[(h->start + i) % RING].id;
        } else if (q->since < h->dropped) {
            s->gap = true;
            s->cursor = h->dropped;
        } else if (q->since > newest) {
            s->cursor = newest; /* from the future: from now on */
        }
    } else {
        /* The last `last` events it may see, then what comes. */
        s->cursor = newest;
        int64_t left = q->last;
        for (size_t i = h->count; i-- > 0 && left > 0;) {
            const al__event_t *e = &h->ring[(h->start + i) % RING];
            if (!visible(s, e))
                continue;
            s->cursor = e->id - 1;
            left--;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return s;
}

void
al__events_attach(al__sse_t *s, void *conn)
{
    s->conn = conn;
}

void
al__events_free(al__sse_t *s)
{
    if (s == NULL)
        return;
    al__events_t *h = s->hub;
    pthread_mutex_lock(&h->mu);
    unwait(s);
    pthread_mutex_unlock(&h->mu);
    al_buf_fini(&s->out);
    free(s->user);
    free(s);
}

static void
add(al__sse_t *s, const char *text, int64_t now)
{
    al_buf_append(&s->out, text, strlen(text));
    s->last_write_ms = now;
}

/* Formats what s may send next into s->out (under the lock). */
static void
fill(al__events_t *h, al__sse_t *s, int64_t now)
{
    s->out.len = 0;
    s->off = 0;
    if (!s->started) {
        char ready[96];
        snprintf(ready, sizeof ready,
                 "retry: 1000\nevent: ready\ndata: {\"cursor\":%" PRIu64
                 "}\n\n",
                 s->cursor);
        add(s, ready, now);
        s->started = true;
    }
    if (!s->gap && s->cursor < h->dropped) {
        /* The ring moved past it while it did not read: a slow client. */
        s->gap = true;
        s->ended = true;
    }
    if (s->gap) {
        char gap[128];
        snprintf(gap, sizeof gap,
                 "event: gap\ndata: {\"cursor\":%" PRIu64
                 ",\"dropped\":%" PRIu64 "}\n\n",
                 s->cursor, h->dropped);
        add(s, gap, now);
        s->gap = false;
        if (s->ended)
            return;
        if (s->cursor < h->dropped)
            s->cursor = h->dropped;
    }
    for (size_t i = after(h, s->cursor); i < h->count; i++) {
        const al__event_t *e = &h->ring[(h->start + i) % RING];
        if (s->out.len >= SSE_CHUNK)
            break;
        s->cursor = e->id;
        if (!visible(s, e))
            continue;
        add(s, e->text, now);
        s->sent_any = true;
    }
    bool caught_up = after(h, s->cursor) == h->count;
    if (caught_up &&
        (s->mode == AL_SSE_ONCE ||
         (s->mode == AL_SSE_POLL && (s->sent_any || now >= s->deadline_ms))))
        s->ended = true;
    if (s->out.len == 0 && now - s->last_write_ms >= BEAT_MS)
        add(s, ": keepalive\n\n", now);
}

ssize_t
al__events_read(al__sse_t *s, char *buf, size_t max)
{
    al__events_t *h = s->hub;
    pthread_mutex_lock(&h->mu);
    /* The intake reads a stream only once it was resumed; a caller that
     * reads one still waiting takes it off the list first. */
    unwait(s);
    if (s->off == s->out.len && !s->ended && !h->closing)
        fill(h, s, al_clock_mono_ms());
    if (s->off == s->out.len) {
        if (s->ended || h->closing) {
            pthread_mutex_unlock(&h->mu);
            return -1;
        }
        /* Nothing to send: wait for a publish or a tick.  Suspended
         * under the lock, so that a publish after this sees it. */
        s->waiting = true;
        s->next_waiting = h->waiting;
        s->prev_waiting = &h->waiting;
        if (h->waiting != NULL)
            h->waiting->prev_waiting = &s->next_waiting;
        h->waiting = s;
        h->suspend(s->conn);
        pthread_mutex_unlock(&h->mu);
        return 0;
    }
    size_t n = s->out.len - s->off;
    if (n > max)
        n = max;
    memcpy(buf, s->out.data + s->off, n);
    s->off += n;
    pthread_mutex_unlock(&h->mu);
    return (ssize_t)n;
}

/* ------------------------------------------------------------------ */
/* The query                                                          */

/* A decimal integer in [lo, hi], the whole of text. */
static bool
parse_u64(const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (text == NULL || *text == '\0' || strlen(text) > 20)
        return false;
    uint64_t v = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return false;
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int
al__events_query_parse(const char *since, const char *last_event_id,
                       const char *last, const char *job, const char *follow,
                       const char *poll, al__events_query_t *out, char **cause)
{
    al__events_query_t q = { .mode = AL_SSE_FOLLOW };
    uint64_t v;
    /* The query's since wins over the header a browser's EventSource
     * sends when it reconnects. */
    const char *cur = since != NULL ? since : last_event_id;
    if (cur != NULL) {
        if (!parse_u64(cur, 0, (UINT64_C(1) << 62), &v)) {
            *cause =
                al_xasprintf("%s must be an event id (a whole number), "
                             "not '%.40s'",
                             since != NULL ? "since" : "Last-Event-ID", cur);
            return AL_EINVAL;
        }
        q.since = v;
        q.has_since = true;
    }
    if (last != NULL) {
        if (!parse_u64(last, 0, RING, &v)) {
            *cause = al_xasprintf("last must be a number of events from 0 to "
                                  "%d, not '%.40s'",
                                  RING, last);
            return AL_EINVAL;
        }
        if (q.has_since) {
            *cause = al_xstrdup("last and since (or Last-Event-ID) do not go "
                                "together");
            return AL_EINVAL;
        }
        q.last = (int)v;
    }
    if (job != NULL) {
        if (!parse_u64(job, 1, INT64_MAX, &v)) {
            *cause = al_xasprintf("job must be a job id, not '%.40s'", job);
            return AL_EINVAL;
        }
        q.job = v;
    }
    if (follow != NULL) {
        if (strcmp(follow, "0") == 0 || strcmp(follow, "false") == 0)
            q.mode = AL_SSE_ONCE;
        else if (strcmp(follow, "1") != 0 && strcmp(follow, "true") != 0) {
            *cause = al_xasprintf("follow must be true or false, not '%.40s'",
                                  follow);
            return AL_EINVAL;
        }
    }
    if (poll != NULL) {
        if (!parse_u64(poll, 1, POLL_MAX_S, &v)) {
            *cause = al_xasprintf("poll must be seconds from 1 to %d, not "
                                  "'%.40s'",
                                  POLL_MAX_S, poll);
            return AL_EINVAL;
        }
        if (q.mode == AL_SSE_ONCE) {
            *cause = al_xstrdup("poll and follow=false do not go together");
            return AL_EINVAL;
        }
        q.mode = AL_SSE_POLL;
        q.poll_s = (int)v;
    }
    *out = q;
    return 0;
}
