/*
 * relay.c -- interactive sessions through the controller: the handlers
 * that open a stream (POST /v1/jobs/ID/stream from a user, POST
 * /v1/agent/streams/SID from the agent that dials back), the streams an
 * agent is asked to open (its sync's answer lists them), and the byte
 * relay between the two upgraded sockets.
 *
 * A user's request names a job (and a task), a kind (attach, exec, port)
 * and its details.  The loop checks it, makes a session with a random id,
 * lists it for the node of the task and wakes the node's long-poll; the
 * intake (server.c, which alone knows libmicrohttpd) turns the connection
 * over (101) and hands its socket here.  The agent sees the session in its
 * sync's answer and dials back with the id; its socket comes here the same
 * way, and the two are spliced.
 *
 * The relay is one thread per session, each side's bytes in a bounded
 * buffer (RBUF): a side is read only while the other side's buffer has
 * room, so a slow reader slows the writer down and memory stays bounded
 * however much flows.  Nothing waits on a timer: a byte read is written
 * at once.  The relay does not parse the client's bytes; of the agent's it
 * only follows the frame boundaries, to slip the controller's notices
 * (al__relay_notice()) in between two frames.
 *
 * May call: state.c (a node's long-poll), req.c, table.c, reason.c (why
 * a job does not run) and src/common.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api_int.h"
#include "clock.h"
#include "json.h"
#include "log.h"
#include "stream.h"
#include "xmalloc.h"

/* Bytes buffered per direction. */
#define RBUF ((size_t)256 * 1024)
/* How long a session waits for its agent to dial back, and an unused one
 * for its user's socket. */
#define DIAL_MS 15000
#define UNUSED_MS 30000

enum { K_ATTACH, K_EXEC, K_PORT };
static const char *const kind_names[] = { "attach", "exec", "port" };

typedef struct rbuf {
    char *d;
    size_t off, len;
} rbuf_t;

typedef struct rsess {
    struct rsess *next;
    char id[33];
    uint64_t job;
    int node, kind;
    json_t *want; /* the entry for the agent */
    int64_t made_ms;
    /* The two sockets and how to give each back to the intake. */
    int cfd, afd;
    void *ch, *ah;
    bool started; /* its thread runs (the user's socket came) */
    bool offered; /* a sync's answer listed it (al__relay_fresh()) */
    int wake[2];
    al_buf_t notices; /* NOTICE frames to slip in */
    /* Bytes that came with a side's request, relayed before any other. */
    al_buf_t pre_up, pre_down;
} rsess_t;

struct al__relay {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rsess_t *list;
    int nthreads;
    bool stop;
    al__relay_close_fn close;
};

al__relay_t *
al__relay_create(al__relay_close_fn close_fn)
{
    al__relay_t *r = al_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->close = close_fn;
    return r;
}

static void
wake(rsess_t *s)
{
    ssize_t w = write(s->wake[1], "w", 1);
    (void)w; /* a byte already there wakes it as well */
}

/* Unlinks s (under mu) and frees it; its sockets are closed already. */
static void
sess_free(rsess_t *s)
{
    close(s->wake[0]);
    close(s->wake[1]);
    json_decref(s->want);
    al_buf_fini(&s->notices);
    al_buf_fini(&s->pre_up);
    al_buf_fini(&s->pre_down);
    free(s);
}

static void
unlink_sess(al__relay_t *r, rsess_t *s)
{
    for (rsess_t **p = &r->list; *p != NULL; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
}

void
al__relay_destroy(al__relay_t *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    for (rsess_t *s = r->list; s != NULL; s = s->next)
        if (s->started)
            wake(s);
    while (r->nthreads > 0)
        pthread_cond_wait(&r->cv, &r->mu);
    /* Those left never had a thread: a socket may have come alone. */
    while (r->list != NULL) {
        rsess_t *s = r->list;
        r->list = s->next;
        if (s->cfd >= 0)
            r->close(s->ch);
        if (s->afd >= 0)
            r->close(s->ah);
        sess_free(s);
    }
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

/* Drops sessions whose user's socket never came (under mu). */
static void
sweep(al__relay_t *r, int64_t now)
{
    rsess_t **p = &r->list;
    while (*p != NULL) {
        rsess_t *s = *p;
        if (!s->started && now - s->made_ms > UNUSED_MS) {
            *p = s->next;
            if (s->afd >= 0)
                r->close(s->ah);
            sess_free(s);
            continue;
        }
        p = &s->next;
    }
}

json_t *
al__relay_wanted(al_ctl_t *ctl, int node)
{
    al__relay_t *r = ctl->relay;
    if (r == NULL)
        return NULL;
    json_t *a = NULL;
    int64_t now = al_clock_mono_ms();
    pthread_mutex_lock(&r->mu);
    sweep(r, now);
    for (rsess_t *s = r->list; s != NULL; s = s->next) {
        if (s->node != node || s->afd >= 0 || now - s->made_ms > DIAL_MS)
            continue;
        if (a == NULL)
            a = json_array();
        json_array_append(a, s->want);
    }
    pthread_mutex_unlock(&r->mu);
    return a;
}

bool
al__relay_fresh(al_ctl_t *ctl, int node)
{
    al__relay_t *r = ctl->relay;
    bool any = false;
    if (r == NULL)
        return false;
    pthread_mutex_lock(&r->mu);
    for (rsess_t *s = r->list; s != NULL; s = s->next)
        if (s->node == node && s->afd < 0 && !s->offered) {
            s->offered = true;
            any = true;
        }
    pthread_mutex_unlock(&r->mu);
    return any;
}

/* ------------------------------------------------------------------ */
/* The handlers (loop thread)                                         */

static bool
random_id(char out[33])
{
    unsigned char b[16] = { 0 };
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && read(fd, b, sizeof b) == (ssize_t)sizeof b;
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < 16; i++)
        snprintf(out + (size_t)2 * i, 3, "%02x", b[i]);
    return ok;
}

/* An integer query argument within lo..hi, def when absent; -1 when
 * malformed. */
static long
arg_int(const al__req_t *req, const char *key, long lo, long hi, long def)
{
    const char *v = al__req_arg(req, key);
    if (v == NULL || *v == '\0')
        return def;
    char *end;
    long n = strtol(v, &end, 10);
    return *end != '\0' || n < lo || n > hi ? -1 : n;
}

/* The entry for the agent from the request's arguments, or NULL after
 * replying 400. */
static json_t *
want_of(al__req_t *req, const al__job_t *j, int task, int *kind)
{
    const char *k = al__req_arg(req, "kind");
    *kind = -1;
    for (int i = 0; i < 3; i++)
        if (k != NULL && strcmp(k, kind_names[i]) == 0)
            *kind = i;
    if (*kind < 0) {
        al__reply_error(req, 400, "bad_request",
                        "kind must be attach, exec or port");
        return NULL;
    }
    long rows = arg_int(req, "rows", 0, 65535, 0);
    long cols = arg_int(req, "cols", 0, 65535, 0);
    long port = arg_int(req, "port", 1, 65535, 0);
    if (rows < 0 || cols < 0) {
        al__reply_error(req, 400, "bad_request",
                        "rows and cols must be 0..65535");
        return NULL;
    }
    json_t *w = json_pack("{s:s, s:I, s:i, s:i, s:b, s:i, s:i}", "kind",
                          kind_names[*kind], "job", (json_int_t)j->id, "task",
                          task, "restart", j->restart_count, "tty",
                          arg_int(req, "tty", 0, 1, 0) == 1, "rows", (int)rows,
                          "cols", (int)cols);
    if (*kind == K_PORT) {
        if (port <= 0) {
            json_decref(w);
            al__reply_error(req, 400, "bad_request", "port must be 1..65535");
            return NULL;
        }
        json_object_set_new(w, "port", json_integer(port));
    }
    if (*kind == K_EXEC) {
        const char *c = al__req_arg(req, "cmd");
        json_t *cmd = c != NULL ? al_json_parse(c, strlen(c), NULL) : NULL;
        bool ok = json_is_array(cmd) && json_array_size(cmd) > 0;
        for (size_t i = 0; ok && i < json_array_size(cmd); i++)
            ok = json_is_string(json_array_get(cmd, i));
        if (!ok) {
            json_decref(cmd);
            json_decref(w);
            al__reply_error(req, 400, "bad_request",
                            "cmd must be a JSON array of strings");
            return NULL;
        }
        json_object_set_new(w, "cmd", cmd);
    }
    return w;
}

/* A stream is opened by an Upgrade (the only reply is 101): a plain
 * request gets 400 before anything is made.  True after that reply. */
static bool
refuse_plain(al__req_t *req)
{
    if (req->upgrade_asked)
        return false;
    al__reply_error(req, 400, "bad_request",
                    "a stream wants Connection: Upgrade and Upgrade: "
                    "allot-stream");
    return true;
}

void
al__api_job_stream(al_ctl_t *ctl, al__req_t *req)
{
    const char *idtext = req->cap[0];
    char *end;
    uint64_t id = strtoull(idtext, &end, 10);
    al__job_t *j = *end == '\0' ? al__ctl_job(ctl, id) : NULL;
    if (j == NULL) {
        al__reply_error(req, 404, "not_found", "no job %s", idtext);
        return;
    }
    if (!al__req_admin(req) && strcmp(j->user, req->user) != 0) {
        al__reply_error(req, 403, "forbidden",
                        "job %s is not yours; only its owner may enter it",
                        idtext);
        return;
    }
    if (j->array != NULL) { /* never runs itself */
        al__reply_error(req, 400, "bad_request",
                        "job %s is an array: name one of its elements, "
                        "%s_INDEX",
                        idtext, idtext);
        return;
    }
    if (j->state != JS_RUNNING || j->tasks == NULL) {
        char buf[256];
        const char *why = al__job_reason(ctl, j, buf, sizeof buf);
        al__reply_error(req, 409, "not_running", "job %s is %s%s%s", idtext,
                        al__jstate_names[j->state], why ? ": " : "",
                        why ? why : "");
        return;
    }
    long task = arg_int(req, "task", 0, j->ntasks - 1, 0);
    if (task < 0) {
        al__reply_error(req, 400, "bad_request", "job %s has tasks 0..%d",
                        idtext, j->ntasks - 1);
        return;
    }
    int kind, node = j->tasks[task].node;
    if (node < 0 || node >= ctl->nnodes || ctl->nodes[node].state == NS_DOWN) {
        al__reply_error(req, 503, "unavailable",
                        "the node of job %s is not answering", idtext);
        return;
    }
    json_t *w = want_of(req, j, (int)task, &kind);
    if (w == NULL)
        return;
    if (refuse_plain(req)) {
        json_decref(w);
        return;
    }
    rsess_t *s = al_xcalloc(1, sizeof *s);
    if (!random_id(s->id) || pipe(s->wake) != 0) {
        json_decref(w);
        free(s);
        al__reply_error(req, 500, "internal", "cannot make a session");
        return;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(s->wake[i], F_SETFL, O_NONBLOCK);
        fcntl(s->wake[i], F_SETFD, FD_CLOEXEC);
    }
    json_object_set_new(w, "id", json_string(s->id));
    s->want = w;
    s->job = j->id;
    s->node = node;
    s->kind = kind;
    s->made_ms = al_clock_mono_ms();
    s->cfd = s->afd = -1;
    al__relay_t *r = ctl->relay;
    pthread_mutex_lock(&r->mu);
    s->next = r->list;
    r->list = s;
    pthread_mutex_unlock(&r->mu);
    al_info("session %.8s: %s of job %llu task %ld by %s", s->id,
            kind_names[kind], (unsigned long long)j->id, task, req->user);
    /* The node's long-poll answers with the session listed. */
    al__ctl_node_changed(ctl, node);
    req->upgrade = al_xstrdup(s->id);
    al__reply(req, 101, json_object());
}

void
al__proto_stream(al_ctl_t *ctl, al__req_t *req)
{
    al__relay_t *r = ctl->relay;
    bool ok = false;
    if (refuse_plain(req))
        return;
    pthread_mutex_lock(&r->mu);
    for (rsess_t *s = r->list; s != NULL; s = s->next)
        if (strcmp(s->id, req->cap[0]) == 0 && s->afd < 0)
            ok = true;
    pthread_mutex_unlock(&r->mu);
    if (!ok) {
        al__reply_error(req, 404, "not_found", "no session %s waiting",
                        req->cap[0]);
        return;
    }
    req->upgrade = al_xstrdup(req->cap[0]);
    req->upgrade_agent = true;
    al__reply(req, 101, json_object());
}

/* ------------------------------------------------------------------ */
/* The relay (one thread per session)                                 */

static size_t
room(const rbuf_t *b)
{
    return RBUF - b->len;
}

/* Reads from fd into b; the bytes read, 0 at the end, -1 on error (and
 * -2 when it would block). */
static ssize_t
fill(int fd, rbuf_t *b)
{
    if (b->off + b->len == RBUF) {
        memmove(b->d, b->d + b->off, b->len);
        b->off = 0;
    }
    ssize_t n = recv(fd, b->d + b->off + b->len, RBUF - b->off - b->len, 0);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? -2 : -1;
    b->len += (size_t)n;
    return n;
}

/* Writes what b holds to fd; -1 on error. */
static int
flush(int fd, rbuf_t *b)
{
    while (b->len > 0) {
        ssize_t n = send(fd, b->d + b->off, b->len, MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        b->off += (size_t)n;
        b->len -= (size_t)n;
    }
    b->off = 0;
    return 0;
}

static void
append(rbuf_t *b, const void *p, size_t n)
{
    if (b->off + b->len + n > RBUF) {
        memmove(b->d, b->d + b->off, b->len);
        b->off = 0;
    }
    memcpy(b->d + b->off + b->len, p, n);
    b->len += n;
}

/* Where the agent's frames are: bytes of a header seen, payload left. */
typedef struct scan {
    unsigned char hdr[AL_STREAM_HDR];
    int got;
    uint32_t left;
    int last; /* the type of the last frame begun */
} scan_t;

static void
scan(scan_t *sc, const char *p, size_t n)
{
    while (n > 0) {
        if (sc->left > 0) {
            size_t k = n < sc->left ? n : sc->left;
            sc->left -= (uint32_t)k;
            p += k;
            n -= k;
            continue;
        }
        sc->hdr[sc->got++] = (unsigned char)*p++;
        n--;
        if (sc->got == AL_STREAM_HDR) {
            sc->last = sc->hdr[0];
            sc->left = (uint32_t)sc->hdr[1] << 24 | (uint32_t)sc->hdr[2] << 16 |
                       (uint32_t)sc->hdr[3] << 8 | sc->hdr[4];
            sc->got = 0;
        }
    }
}

static void
say_error(rbuf_t *b, const char *msg)
{
    al_buf_t f = AL_BUF_INIT;
    al_stream_put(&f, AL_FR_ERROR, msg, strlen(msg));
    al_stream_put(&f, AL_FR_CLOSE, NULL, 0);
    if (room(b) >= f.len)
        append(b, f.data, f.len);
    al_buf_fini(&f);
}

typedef struct targ {
    al__relay_t *r;
    rsess_t *s;
} targ_t;

/* A relay thread's state. */
typedef struct relay {
    rbuf_t up;   /* client to agent */
    rbuf_t down; /* agent to client */
    scan_t sc;
    bool c_eof, a_eof, gave_up;
    int afd;
} relay_t;

/* What others left for the thread (under mu): the agent's socket, bytes
 * that came with a request, notices.  True when the relay is stopping. */
static bool
take_shared(al__relay_t *r, rsess_t *s, relay_t *t)
{
    pthread_mutex_lock(&r->mu);
    bool stop = r->stop;
    if (t->afd < 0)
        t->afd = s->afd;
    if (s->pre_up.len > 0 && room(&t->up) >= s->pre_up.len) {
        append(&t->up, s->pre_up.data, s->pre_up.len);
        al_buf_clear(&s->pre_up);
    }
    if (t->afd >= 0 && s->pre_down.len > 0 &&
        room(&t->down) >= s->pre_down.len) {
        scan(&t->sc, s->pre_down.data, s->pre_down.len);
        append(&t->down, s->pre_down.data, s->pre_down.len);
        al_buf_clear(&s->pre_down);
    }
    /* A notice goes in between two of the agent's frames. */
    if (s->notices.len > 0 && t->sc.got == 0 && t->sc.left == 0 &&
        room(&t->down) >= s->notices.len) {
        append(&t->down, s->notices.data, s->notices.len);
        al_buf_clear(&s->notices);
    }
    pthread_mutex_unlock(&r->mu);
    return stop;
}

/* The agent's side that never came, or ended without its CLOSE (the
 * agent or its connection died): the user hears it from here. */
static void
check_agent(const rsess_t *s, relay_t *t)
{
    if (t->gave_up)
        return;
    if (t->afd < 0 && al_clock_mono_ms() - s->made_ms > DIAL_MS) {
        say_error(&t->down, "the job's node did not open the stream");
        t->gave_up = t->a_eof = true;
    } else if (t->a_eof && t->sc.last != AL_FR_CLOSE && t->sc.got == 0 &&
               t->sc.left == 0) {
        say_error(&t->down, "the connection to the job's node was lost");
        t->gave_up = true;
    }
}

/* One wait and what it found: reads as far as the other side's buffer has
 * room, writes what each buffer holds.  False when poll() failed. */
static bool
relay_turn(const rsess_t *s, relay_t *t)
{
    struct pollfd p[3] = {
        { .fd = s->wake[0], .events = POLLIN },
        { .fd = s->cfd, .events = 0 },
        /* An agent's side at its end takes nothing more. */
        { .fd = t->a_eof ? -1 : t->afd, .events = 0 },
    };
    if (room(&t->up) > 0)
        p[1].events |= POLLIN;
    if (t->down.len > 0)
        p[1].events |= POLLOUT;
    if (t->afd >= 0 && !t->a_eof && room(&t->down) > 0)
        p[2].events |= POLLIN;
    if (t->afd >= 0 && t->up.len > 0)
        p[2].events |= POLLOUT;
    if (poll(p, 3, t->afd < 0 && !t->gave_up ? 200 : -1) < 0 && errno != EINTR)
        return false;
    if (p[0].revents & POLLIN) {
        char junk[64];
        while (read(s->wake[0], junk, sizeof junk) > 0)
            ;
    }
    if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = fill(s->cfd, &t->up);
        if (n == 0 || n == -1)
            t->c_eof = true; /* the user left: the agent's side sees it */
    }
    if (t->afd >= 0 && !t->a_eof &&
        (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n = fill(t->afd, &t->down);
        if (n > 0)
            scan(&t->sc, t->down.d + t->down.off + t->down.len - (size_t)n,
                 (size_t)n);
        if (n == 0 || n == -1)
            t->a_eof = true;
    }
    if (t->down.len > 0 && flush(s->cfd, &t->down) != 0)
        t->c_eof = true;
    if (t->afd >= 0 && !t->a_eof && t->up.len > 0 && flush(t->afd, &t->up) != 0)
        t->a_eof = true;
    if (t->a_eof)
        t->up.len = t->up.off = 0; /* nobody to take it */
    return true;
}

static void *
relay_main(void *arg)
{
    targ_t *ta = arg;
    al__relay_t *r = ta->r;
    rsess_t *s = ta->s;
    free(ta);
    relay_t t = { .up = { al_xmalloc(RBUF), 0, 0 },
                  .down = { al_xmalloc(RBUF), 0, 0 },
                  .afd = -1 };
    for (;;) {
        if (take_shared(r, s, &t))
            break;
        check_agent(s, &t);
        if (t.c_eof || (t.a_eof && t.down.len == 0) || !relay_turn(s, &t))
            break;
    }
    /* Whatever is left for the user, as far as it goes without waiting. */
    if (!t.c_eof && t.down.len > 0)
        flush(s->cfd, &t.down);
    free(t.up.d);
    free(t.down.d);
    pthread_mutex_lock(&r->mu);
    unlink_sess(r, s);
    pthread_mutex_unlock(&r->mu);
    /* Closing the agent's side is how it learns that the user left. */
    if (s->afd >= 0)
        r->close(s->ah);
    r->close(s->ch);
    al_info("session %.8s ended", s->id);
    sess_free(s);
    pthread_mutex_lock(&r->mu);
    r->nthreads--;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

bool
al__relay_take(al__relay_t *r, const char *id, bool agent, int fd,
               const char *extra, size_t n, void *handle)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    pthread_mutex_lock(&r->mu);
    rsess_t *s = r->list;
    while (s != NULL && strcmp(s->id, id) != 0)
        s = s->next;
    if (s == NULL || r->stop || (agent ? s->afd >= 0 : s->cfd >= 0)) {
        pthread_mutex_unlock(&r->mu);
        return false;
    }
    /* Bytes that came right behind the request (the dialers wait for the
     * 101 before they send, so there are none unless a client hurries):
     * relayed first. */
    if (extra != NULL && n > 0)
        al_buf_append(agent ? &s->pre_down : &s->pre_up, extra, n);
    if (agent) {
        s->afd = fd;
        s->ah = handle;
        wake(s);
        pthread_mutex_unlock(&r->mu);
        return true;
    }
    s->cfd = fd;
    s->ch = handle;
    targ_t *ta = al_xmalloc(sizeof *ta);
    ta->r = r;
    ta->s = s;
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&th, &at, relay_main, ta);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        free(ta);
        s->cfd = -1;
        pthread_mutex_unlock(&r->mu);
        return false;
    }
    s->started = true;
    r->nthreads++;
    pthread_mutex_unlock(&r->mu);
    return true;
}

void
al__relay_notice(al_ctl_t *ctl, uint64_t job, const char *text)
{
    al__relay_t *r = ctl->relay;
    if (r == NULL)
        return;
    size_t n = strlen(text);
    if (n > 4096)
        n = 4096;
    pthread_mutex_lock(&r->mu);
    for (rsess_t *s = r->list; s != NULL; s = s->next) {
        if (s->job != job || s->kind != K_ATTACH || !s->started ||
            s->notices.len > (size_t)64 * 1024)
            continue;
        al_stream_put(&s->notices, AL_FR_NOTICE, text, n);
        wake(s);
    }
    pthread_mutex_unlock(&r->mu);
}
