/*
 * test_relay.c -- the controller's side of interactive sessions
 * (src/server/relay.c): a user's request checked (no such job, another
 * user's, one not running, a bad kind, a plain request without the
 * Upgrade), the session listed for the job's
 * node once, and the relay between two sockets: bytes both ways in order,
 * a notice slipped in between two of the agent's frames and never into
 * one, the user's side closed when the agent's ends.  A zeroed controller
 * with one node and one running job; socket pairs stand for the two
 * connections.
 */
#include <linux/sockios.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api_int.h"
#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "stream.h"
#include "test.h"

/* The relay gives a socket back through this: here, a close. */
static void
close_handle(void *h)
{
    close((int)(intptr_t)h);
}

static void
relay_ctl(al_ctl_t *ctl, al__jstate_t st)
{
    memset(ctl, 0, sizeof *ctl);
    const char *node = "{\"name\": \"n1\", \"addr\": \"10.0.0.1\"}";
    const char *job = "{\"command\": [\"bash\"]}";
    json_t *b = al_json_parse(node, strlen(node), NULL);
    al__node_t n;
    ASSERT_EQ(al__node_from_json(b, &n, NULL), 0);
    json_decref(b);
    al__ctl_add_node(ctl, &n);
    b = al_json_parse(job, strlen(job), NULL);
    al__job_t *j = NULL;
    ASSERT_EQ(al__job_parse(b, "alice", false, &j, NULL), 0);
    json_decref(b);
    j->id = 1;
    j->state = st;
    j->tasks = calloc(1, sizeof *j->tasks);
    j->tasks[0] = (al__task_t){ .node = 0, .log_size = -1 };
    al__ctl_put_job(ctl, j);
    ctl->relay = al__relay_create(close_handle);
}

static void
relay_ctl_fini(al_ctl_t *ctl)
{
    al__relay_destroy(ctl->relay);
    for (uint64_t i = 0; i < ctl->njobs; i++)
        al__job_free(ctl->jobs[i]);
    free(ctl->jobs);
    for (int i = 0; i < ctl->nnodes; i++)
        al__node_fini(&ctl->nodes[i]);
    free(ctl->nodes);
    free(ctl->node_hash);
    al__jobcounts_fini(&ctl->jc);
}

/* Set: the next requests come without "Upgrade: allot-stream". */
static bool plain;

/* A request for job `id` by user with the query args (key, value, ...;
 * NULL-terminated); its status after the handler. */
static int
stream_req(al_ctl_t *ctl, const char *id, const char *user, char **upgrade,
           const char *const *args)
{
    al__req_t req;
    memset(&req, 0, sizeof req);
    req.cap[0] = (char *)id;
    req.user = user;
    req.upgrade_asked = !plain;
    for (int i = 0; args[i] != NULL; i += 2) {
        req.argk[req.nargs] = (char *)args[i];
        req.argv[req.nargs++] = (char *)args[i + 1];
    }
    al__api_job_stream(ctl, &req);
    json_decref(req.resp);
    *upgrade = req.upgrade;
    return req.status;
}

static void
relay_refusals(void)
{
    al_ctl_t ctl;
    relay_ctl(&ctl, JS_RUNNING);
    char *up = NULL;
    static const char *const attach[] = { "kind", "attach", NULL };
    static const char *const bad[] = { "kind", "shell", NULL };
    static const char *const exec_nocmd[] = { "kind", "exec", NULL };
    static const char *const port0[] = { "kind", "port", "port", "0", NULL };
    ASSERT_EQ(stream_req(&ctl, "2", "alice", &up, attach), 404);
    ASSERT_EQ(stream_req(&ctl, "1", "bob", &up, attach), 403);
    ASSERT_EQ(stream_req(&ctl, "1", "alice", &up, bad), 400);
    ASSERT_EQ(stream_req(&ctl, "1", "alice", &up, exec_nocmd), 400);
    ASSERT_EQ(stream_req(&ctl, "1", "alice", &up, port0), 400);
    /* A plain POST (curl) makes nothing. */
    plain = true;
    ASSERT_EQ(stream_req(&ctl, "1", "alice", &up, attach), 400);
    plain = false;
    ASSERT(up == NULL);
    ASSERT(al__relay_wanted(&ctl, 0) == NULL);
    ctl.jobs[0]->state = JS_PENDING;
    ASSERT_EQ(stream_req(&ctl, "1", "alice", &up, attach), 409);
    relay_ctl_fini(&ctl);
}

/* Waits (at most 5 s) until the other end of fd has read all fd sent:
 * what a test that means "the relay has the bytes" waits for, rather than
 * a sleep that a slow machine (valgrind) outruns. */
static void
drained(int fd)
{
    int64_t end = al_clock_mono_ms() + 5000;
    int queued = 1;
    while (ioctl(fd, SIOCOUTQ, &queued) == 0 && queued > 0 &&
           al_clock_mono_ms() < end)
        al_clock_sleep_ms(1);
}

/* Reads from fd until n bytes came (or 5 s passed). */
static size_t
read_n(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5000) != 1)
            break;
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

static void
relay_splice(void)
{
    al_ctl_t ctl;
    relay_ctl(&ctl, JS_RUNNING);
    char *id = NULL;
    static const char *const args[] = { "kind", "attach", "tty", "1", "rows",
                                        "30",   "cols",   "100", NULL };
    ASSERT_EQ(stream_req(&ctl, "1", "alice", &id, args), 101);
    ASSERT(id != NULL);
    /* Listed for node 0, fresh once. */
    json_t *w = al__relay_wanted(&ctl, 0);
    ASSERT_EQ(json_array_size(w), 1);
    json_t *e = json_array_get(w, 0);
    ASSERT_STR_EQ(al_json_str(e, "id", ""), id);
    ASSERT_STR_EQ(al_json_str(e, "kind", ""), "attach");
    ASSERT_EQ(al_json_int(e, "rows", 0), 30);
    ASSERT(al_json_bool(e, "tty", false));
    json_decref(w);
    ASSERT(al__relay_fresh(&ctl, 0));
    ASSERT(!al__relay_fresh(&ctl, 0));
    ASSERT(al__relay_wanted(&ctl, 1) == NULL);

    int user[2], agent[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, user), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, agent), 0);
    ASSERT(al__relay_take(ctl.relay, id, false, user[1], NULL, 0,
                          (void *)(intptr_t)user[1]));
    ASSERT(!al__relay_take(ctl.relay, "nope", true, -1, NULL, 0, NULL));
    ASSERT(al__relay_take(ctl.relay, id, true, agent[1], NULL, 0,
                          (void *)(intptr_t)agent[1]));
    /* The agent's side is taken: no longer listed. */
    ASSERT(al__relay_wanted(&ctl, 0) == NULL);

    /* The user's keys reach the agent. */
    al_buf_t b = AL_BUF_INIT;
    al_stream_put(&b, AL_FR_STDIN, "ls\r", 3);
    ASSERT_EQ(write(user[0], b.data, b.len), (ssize_t)b.len);
    char got[256];
    ASSERT_EQ(read_n(agent[0], got, b.len), b.len);
    ASSERT(memcmp(got, b.data, b.len) == 0);

    /* A frame in two halves with a notice sent in between: the notice
     * comes after the whole frame. */
    al_buf_clear(&b);
    al_stream_put(&b, AL_FR_STDOUT, "0123456789", 10);
    ASSERT_EQ(write(agent[0], b.data, 7), 7);
    drained(agent[0]);
    al__relay_notice(&ctl, 1, "idle");
    al__relay_notice(&ctl, 2, "not this job");
    al_clock_sleep_ms(50);
    ASSERT_EQ(write(agent[0], b.data + 7, b.len - 7), (ssize_t)(b.len - 7));
    al_buf_t want = AL_BUF_INIT;
    al_buf_append(&want, b.data, b.len);
    al_stream_put(&want, AL_FR_NOTICE, "idle", 4);
    ASSERT_EQ(read_n(user[0], got, want.len), want.len);
    ASSERT(memcmp(got, want.data, want.len) == 0);

    /* The agent's end: its exit and close reach the user, then the end of
     * the connection. */
    al_buf_clear(&b);
    al_stream_put_exit(&b, 3, 0);
    al_stream_put(&b, AL_FR_CLOSE, NULL, 0);
    ASSERT_EQ(write(agent[0], b.data, b.len), (ssize_t)b.len);
    close(agent[0]);
    ASSERT_EQ(read_n(user[0], got, b.len), b.len);
    ASSERT(memcmp(got, b.data, b.len) == 0);
    ASSERT_EQ(read_n(user[0], got, 1), 0);
    close(user[0]);
    al_buf_fini(&b);
    al_buf_fini(&want);
    free(id);
    relay_ctl_fini(&ctl);
}

/* The agent's side that ends without its close: the user is told. */
static void
relay_agent_lost(void)
{
    al_ctl_t ctl;
    relay_ctl(&ctl, JS_RUNNING);
    char *id = NULL;
    static const char *const args[] = { "kind", "attach", NULL };
    ASSERT_EQ(stream_req(&ctl, "1", "alice", &id, args), 101);
    int user[2], agent[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, user), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, agent), 0);
    ASSERT(al__relay_take(ctl.relay, id, false, user[1], NULL, 0,
                          (void *)(intptr_t)user[1]));
    ASSERT(al__relay_take(ctl.relay, id, true, agent[1], NULL, 0,
                          (void *)(intptr_t)agent[1]));
    close(agent[0]);
    al_buf_t want = AL_BUF_INIT;
    const char *msg = "the connection to the job's node was lost";
    al_stream_put(&want, AL_FR_ERROR, msg, strlen(msg));
    al_stream_put(&want, AL_FR_CLOSE, NULL, 0);
    char got[256];
    ASSERT_EQ(read_n(user[0], got, want.len), want.len);
    ASSERT(memcmp(got, want.data, want.len) == 0);
    close(user[0]);
    al_buf_fini(&want);
    free(id);
    relay_ctl_fini(&ctl);
}

const al_test_t test_relay[] = {
    { "refusals", relay_refusals },
    { "splice", relay_splice },
    { "agent_lost", relay_agent_lost },
    { NULL, NULL },
};
