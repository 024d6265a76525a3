/*
 * test_shell.c -- unit tests of the pieces the shells share or parse with:
 * URLs, base64, the user's config file, buffers, the CLI's option parser
 * and size parser, the controller's route table and its tokens.  Same
 * framework as tests/unit (test.h); its own small runner (shell_runner.c)
 * because it links the server and the CLI's client code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "cli_client.h"
#include "core/error.h"
#include "fs.h"
#include "json.h"
#include "opt.h"
#include "platform.h"
#include "server_int.h"
#include "test.h"
#include "ucfg.h"

static void
url_parse(void)
{
    al_url_t u;
    ASSERT_EQ(al_url_parse("http://127.0.0.1:7070", &u, NULL), 0);
    ASSERT_STR_EQ(u.host, "127.0.0.1");
    ASSERT_STR_EQ(u.port, "7070");
    ASSERT_STR_EQ(u.prefix, "");
    ASSERT_EQ(al_url_parse("http://ctl.example/allot/", &u, NULL), 0);
    ASSERT_STR_EQ(u.host, "ctl.example");
    ASSERT_STR_EQ(u.port, "80");
    ASSERT_STR_EQ(u.prefix, "/allot");
    ASSERT_EQ(al_url_parse("localhost:1", &u, NULL), 0);
    ASSERT_STR_EQ(u.port, "1");
    static const char *const bad[] = {
        "https://",   "http://",       "http://:80", "http://h:",
        "http://h:x", "http://h:80x/", "ftp://h",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *cause = NULL;
        ASSERT_EQ(al_url_parse(bad[i], &u, &cause), AL_EINVAL);
        ASSERT(cause != NULL);
        free(cause);
    }
}

static void
base64(void)
{
    unsigned char in[64];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)(i * 37 + 11);
    for (size_t n = 0; n <= 10; n++) {
        char *s = al_b64_encode(in, n);
        unsigned char *out = NULL;
        size_t len = 99;
        ASSERT_EQ(al_b64_decode(s, &out, &len), 0);
        ASSERT_EQ(len, n);
        ASSERT(memcmp(in, out, n) == 0);
        free(s);
        free(out);
    }
    unsigned char *out = NULL;
    size_t len = 0;
    ASSERT_EQ(al_b64_decode("abc", &out, &len), AL_EPARSE);
    ASSERT_EQ(al_b64_decode("a*c=", &out, &len), AL_EPARSE);
    ASSERT(out == NULL);
}

static void
json_dup_keys(void)
{
    char *cause = NULL;
    json_t *v = al_json_parse("{\"a\":1,\"a\":2}", 13, &cause);
    ASSERT(v == NULL);
    ASSERT(cause != NULL);
    free(cause);
    v = al_json_parse("{\"a\":1}", 7, NULL);
    ASSERT_EQ(al_json_int(v, "a", 0), 1);
    ASSERT_EQ(al_json_int(v, "b", 5), 5);
    ASSERT_STR_EQ(al_json_str(v, "a", "dflt"), "dflt");
    json_decref(v);
}

static void
buffer(void)
{
    al_buf_t b = AL_BUF_INIT;
    ASSERT_STR_EQ(al_buf_cstr(&b), "");
    for (int i = 0; i < 1000; i++)
        al_buf_printf(&b, "%d,", i);
    ASSERT_EQ(b.len, strlen(b.data));
    ASSERT(strncmp(b.data, "0,1,2,", 6) == 0);
    char *s = al_buf_steal(&b);
    ASSERT(b.data == NULL && b.len == 0);
    free(s);
}

static void
user_config(void)
{
    char dir[] = "/tmp/allot-ucfg-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/sub/config", dir);
    ASSERT(al_ucfg_get(path, "server") == NULL);
    ASSERT_EQ(al_ucfg_set(path, "server", "http://a:1"), 0);
    ASSERT_EQ(al_ucfg_set(path, "token", "t1"), 0);
    ASSERT_EQ(al_ucfg_set(path, "server", "http://b:2"), 0);
    char *v = al_ucfg_get(path, "server");
    ASSERT_STR_EQ(v, "http://b:2");
    free(v);
    v = al_ucfg_get(path, "token");
    ASSERT_STR_EQ(v, "t1");
    free(v);
    /* Comments and unknown lines survive a set. */
    FILE *f = fopen(path, "a");
    ASSERT(f != NULL);
    fputs("# server = http://commented:3\n  other =  x  \n", f);
    fclose(f);
    ASSERT_EQ(al_ucfg_set(path, "token", "t2"), 0);
    {
        static const char *const known[] = { "server", "token" };
        char *text;
        size_t n;
        ASSERT_EQ(al_fs_read_file(path, &text, &n), 0);
        /* server, token, the comment, then "other": line 4. */
        ASSERT_EQ(al_ucfg_bad_line(text, n, known, 2), 4);
        ASSERT_EQ(
            al_ucfg_bad_line("server = a\n\n  # c\ntoken=b", 26, known, 2), 0);
        ASSERT_EQ(al_ucfg_bad_line("token = b\nsrever = a\n", 22, known, 2), 2);
        free(text);
    }
    v = al_ucfg_get(path, "other");
    ASSERT_STR_EQ(v, "x");
    free(v);
    v = al_ucfg_get(path, "server");
    ASSERT_STR_EQ(v, "http://b:2");
    free(v);
    unlink(path);
    snprintf(path, sizeof path, "%s/sub", dir);
    rmdir(path);
    rmdir(dir);
}

static void
cli_options(void)
{
    const char *gpus = NULL, *queue = NULL;
    bool json = false;
    const al_opt_t opts[] = {
        { .name = "--gpus", .kind = AL_OPT_STR, .dst = &gpus },
        { .name = "--queue", .kind = AL_OPT_STR, .dst = &queue },
        { .name = "--json", .kind = AL_OPT_FLAG, .dst = &json },
        { .name = NULL },
    };
    char a0[] = "x", a1[] = "--gpus", a2[] = "2", a3[] = "--queue=q",
         a4[] = "--json", a5[] = "cmd", a6[] = "--gpus", a7[] = "9";
    char *argv[] = { a0, a1, a2, a3, a4, a5, a6, a7, NULL };
    int first = -1;
    ASSERT_EQ(al_opt_parse("t", NULL, opts, 8, argv, true, NULL, 0, &first), 0);
    ASSERT_STR_EQ(gpus, "2"); /* the command's own --gpus is not ours */
    ASSERT_STR_EQ(queue, "q");
    ASSERT(json);
    ASSERT_EQ(first, 5);
    char *pos[2];
    int npos = -1;
    ASSERT_EQ(al_opt_parse("t", NULL, opts, 8, argv, false, pos, 2, &npos), 0);
    ASSERT_STR_EQ(gpus, "9");
    ASSERT_EQ(npos, 1);
    char b1[] = "--nope";
    char *bad[] = { a0, b1, NULL };
    ASSERT_EQ(al_opt_parse("t", "f:1", opts, 2, bad, false, pos, 2, &npos),
              AL_EXIT_USAGE);
    char c1[] = "--gpus";
    char *novalue[] = { a0, c1, NULL };
    ASSERT_EQ(al_opt_parse("t", NULL, opts, 2, novalue, false, pos, 2, &npos),
              AL_EXIT_USAGE);
    int64_t n = -1;
    const al_opt_t iopts[] = {
        { .name = "--n", .kind = AL_OPT_INT, .dst = &n, .min = 1, .max = 9 },
        { .name = NULL },
    };
    char e1[] = "--n=9", e2[] = "--n", e3[] = "10", e4[] = "x";
    char *iok[] = { a0, e1, NULL };
    ASSERT_EQ(al_opt_parse("t", NULL, iopts, 2, iok, false, pos, 2, &npos), 0);
    ASSERT_EQ(n, 9);
    char *ibig[] = { a0, e2, e3, NULL };
    ASSERT_EQ(al_opt_parse("t", NULL, iopts, 3, ibig, false, pos, 2, &npos),
              AL_EXIT_USAGE);
    char *inan[] = { a0, e2, e4, NULL };
    ASSERT_EQ(al_opt_parse("t", NULL, iopts, 3, inan, false, pos, 2, &npos),
              AL_EXIT_USAGE);
    ASSERT_EQ(n, 9);
    char d1[] = "--json=1";
    char *flagvalue[] = { a0, d1, NULL };
    ASSERT_EQ(al_opt_parse("t", NULL, opts, 2, flagvalue, false, pos, 2, &npos),
              AL_EXIT_USAGE);
}

static void
cli_sizes(void)
{
    static const struct {
        const char *in;
        int64_t bytes;
    } ok[] = {
        { "4G", (int64_t)4 << 30 },    { "512M", (int64_t)512 << 20 },
        { "100", (int64_t)100 << 20 }, { "1.5GiB", (int64_t)3 << 29 },
        { "2T", (int64_t)2 << 40 },    { "8K", 8192 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t b = -1;
        ASSERT_EQ(al_cli_parse_mem(ok[i].in, &b), 0);
        ASSERT_EQ(b, ok[i].bytes);
    }
    static const char *const bad[] = { "", "G", "4Q", "-1G", "4 G" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t b = 0;
        ASSERT_EQ(al_cli_parse_mem(bad[i], &b), -1);
    }
}

static void
cli_durations(void)
{
    static const struct {
        const char *in;
        int64_t secs;
    } ok[] = {
        { "90", 90 },     { "45s", 45 },    { "30m", 1800 },
        { "1.5h", 5400 }, { "2d", 172800 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t s = -1;
        ASSERT_EQ(al_cli_parse_duration(ok[i].in, &s), 0);
        ASSERT_EQ(s, ok[i].secs);
    }
    static const char *const bad[] = { "", "m", "5x", "5mm", "-3" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t s = 0;
        ASSERT_EQ(al_cli_parse_duration(bad[i], &s), -1);
    }
}

/* --since/--until: relative, epoch, dates in UTC and local time; bad
 * dates (month 13, 30 February, 29 February of a common year) refused. */
static void
cli_when(void)
{
    int64_t now = 1795600000, t = -1;
    ASSERT_EQ(al_cli_parse_when("now", now, &t), 0);
    ASSERT_EQ(t, now);
    ASSERT_EQ(al_cli_parse_when("-7d", now, &t), 0);
    ASSERT_EQ(t, now - 7 * 86400);
    ASSERT_EQ(al_cli_parse_when("-90m", now, &t), 0);
    ASSERT_EQ(t, now - 5400);
    ASSERT_EQ(al_cli_parse_when("@1700000000", now, &t), 0);
    ASSERT_EQ(t, 1700000000);
    ASSERT_EQ(al_cli_parse_when("1970-01-01Z", now, &t), 0);
    ASSERT_EQ(t, 0);
    ASSERT_EQ(al_cli_parse_when("2026-11-25T12:30:15Z", now, &t), 0);
    ASSERT_EQ(t, 1795609815);
    ASSERT_EQ(al_cli_parse_when("2024-02-29T00:00Z", now, &t), 0);
    ASSERT_EQ(t, 1709164800);
    /* Local time: one day apart is 86400 s apart, give or take an hour of
     * daylight saving. */
    int64_t a, b;
    ASSERT_EQ(al_cli_parse_when("2026-06-01", now, &a), 0);
    ASSERT_EQ(al_cli_parse_when("2026-06-02 00:00", now, &b), 0);
    ASSERT(b - a >= 82800 && b - a <= 90000);
    static const char *const bad[] = {
        "",
        "yesterday",
        "-",
        "-5x",
        "@",
        "@12x",
        "@-5",
        "2026-13-01",
        "2026-02-30",
        "2023-02-29",
        "2026-1-01",
        "2026-01-01T25:00",
        "2026-01-01T12:60",
        "2026-01-01T12:00:61",
        "2026-01-01X",
        "2026-01-01T12:00Zz",
        "1969-12-31",
        "-99999999d",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = 42;
        ASSERT_EQ(al_cli_parse_when(bad[i], now, &t), -1);
        ASSERT_EQ(t, 42);
    }
}

static void
routes(void)
{
    char *cap[2];
    bool path_ok;
    const al__route_t *r =
        al__route_match("POST", "/v1/jobs/42/cancel", cap, &path_ok);
    ASSERT(r != NULL);
    ASSERT_STR_EQ(r->path, "/v1/jobs/*/cancel");
    ASSERT_STR_EQ(cap[0], "42");
    free(cap[0]);
    free(cap[1]);
    r = al__route_match("GET", "/v1/jobs/", cap, &path_ok);
    ASSERT(r != NULL && strcmp(r->path, "/v1/jobs") == 0);
    r = al__route_match("DELETE", "/v1/jobs", cap, &path_ok);
    ASSERT(r == NULL && path_ok); /* 405, not 404 */
    r = al__route_match("GET", "/v1/jobs//cancel", cap, &path_ok);
    ASSERT(r == NULL && !path_ok);
    r = al__route_match("GET", "/v1/jobsx", cap, &path_ok);
    ASSERT(r == NULL && !path_ok);
    r = al__route_match("GET", "/v2/jobs", cap, &path_ok);
    ASSERT(r == NULL);
    /* Every route matches its own path, with "x" for each capture. */
    for (int i = 0; i < al__nroutes; i++) {
        char path[128];
        size_t o = 0;
        for (const char *p = al__routes[i].path; *p && o < 120; p++)
            path[o++] = *p == '*' ? 'x' : *p;
        path[o] = '\0';
        r = al__route_match(al__routes[i].method, path, cap, &path_ok);
        ASSERT(r == &al__routes[i]);
        free(cap[0]);
        free(cap[1]);
    }
}

static void
tokens(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    al__token_t t[2];
    char *a = al__token_create("alice", ROLE_USER, &t[0]);
    char *b = al__token_create("bob", ROLE_ADMIN, &t[1]);
    ctl.tokens = t;
    ctl.ntokens = 2;
    ASSERT_EQ(strlen(a), 52);
    ASSERT(strstr(a, t[0].id) != NULL);
    ASSERT(al__token_check(&ctl, a) == &t[0]);
    ASSERT(al__token_check(&ctl, b) == &t[1]);
    ASSERT_STR_EQ(al__token_check(&ctl, b)->user, "bob");
    /* Any change to the secret, the id, or the length fails. */
    char *c = strdup(a);
    c[51] = c[51] == '0' ? '1' : '0';
    ASSERT(al__token_check(&ctl, c) == NULL);
    memcpy(c, b, 20); /* bob's id with alice's secret */
    c[51] = a[51];
    ASSERT(al__token_check(&ctl, c) == NULL);
    c[40] = '\0';
    ASSERT(al__token_check(&ctl, c) == NULL);
    ASSERT(al__token_check(&ctl, NULL) == NULL);
    ASSERT(al__token_check(&ctl, "") == NULL);
    free(a);
    free(b);
    free(c);
    free(t[0].user);
    free(t[1].user);
}

static void
proc_state(void)
{
    int64_t me = -1, again = -1, zstart = -1, gone = -1;
    ASSERT_EQ(al_platform_proc_state((long)getpid(), &me), 1);
    ASSERT_GE(me, 0);
    ASSERT_EQ(al_platform_proc_state((long)getpid(), &again), 1);
    ASSERT_EQ(again, me);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    ASSERT_GT(child, 0);
    /* Ended but not reaped: a zombie (0), its start time still known. */
    int st = -1;
    for (int i = 0; i < 200; i++) {
        if ((st = al_platform_proc_state((long)child, &zstart)) == 0)
            break;
        usleep(5000);
    }
    ASSERT_EQ(st, 0);
    ASSERT_GE(zstart, me);
    int ws;
    ASSERT_EQ(waitpid(child, &ws, 0), child);
    ASSERT_EQ(al_platform_proc_state((long)child, &gone), -1);
}

static void
fake_gpus(void)
{
    al_platform_info_t info;
    memset(&info, 0, sizeof info);
    char *cause = NULL;
    ASSERT_EQ(al_platform_fake_gpus(&info, "8xH100-80GB", "n1", &cause), 0);
    ASSERT_EQ(info.ngpus, 8);
    ASSERT(info.emulated);
    ASSERT_STR_EQ(info.gpus[7].model, "H100-80GB");
    ASSERT_EQ(info.gpus[0].mem_bytes, (int64_t)80 << 30);
    ASSERT_EQ(info.gpus[3].numa, 0);
    ASSERT_EQ(info.gpus[4].numa, 1);
    static const char *const bad[] = { "8", "x", "8x", "65xA", "-1xA" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(al_platform_fake_gpus(&info, bad[i], "n1", &cause),
                  AL_EINVAL);
        free(cause);
        cause = NULL;
    }
}

/* Two gangs whose task 0 share a node get different MASTER_PORTs, even
 * when their ids give the same one (29500 + id % 20000 did). */
static void
master_ports(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    al__node_t node;
    memset(&node, 0, sizeof node);
    al__task_key_t runs[2] = { { .job = 1, .task = -1, .restart = 0 },
                               { .job = 20001, .task = -1, .restart = 0 } };
    node.runs = runs;
    node.nruns = 2;
    ctl.nodes = &node;
    ctl.nnodes = 1;
    al__task_t ta = { .node = 0 }, tb = { .node = 0 };
    al__job_t a = { .id = 1, .state = JS_RUNNING, .ntasks = 1, .tasks = &ta };
    al__job_t b = {
        .id = 20001, .state = JS_RUNNING, .ntasks = 1, .tasks = &tb
    };
    al__job_t *jobs[20001] = { NULL };
    jobs[0] = &a;
    jobs[20000] = &b;
    ctl.jobs = jobs;
    ctl.njobs = 20001;
    ASSERT_EQ(al__job_master_port(&b), 29501); /* before any pick */
    b.state = JS_PENDING;                      /* a starts first */
    al__ctl_pick_master_port(&ctl, &a);
    ASSERT_EQ(a.master_port, 29501);
    b.state = JS_RUNNING;
    al__ctl_pick_master_port(&ctl, &b);
    ASSERT_EQ(b.master_port, 29502);
    /* On another node, or once a has ended, b may have its own port. */
    tb.node = 1;
    ctl.nnodes = 2;
    al__node_t two[2];
    memcpy(&two[0], &node, sizeof node);
    memset(&two[1], 0, sizeof two[1]);
    ctl.nodes = two;
    al__ctl_pick_master_port(&ctl, &b);
    ASSERT_EQ(b.master_port, 29501);
    tb.node = 0;
    ctl.nodes = &node;
    ctl.nnodes = 1;
    a.state = JS_COMPLETED;
    al__ctl_pick_master_port(&ctl, &b);
    ASSERT_EQ(b.master_port, 29501);
}

/* The event hub (events.c): a stream sees only what was committed, only
 * its user's jobs, resumes when something comes; one that keeps reading
 * keeps up however much comes, one that does not is told of the gap and
 * ended once the ring moved past it. */
static int hub_suspends, hub_resumes;

static void
hub_suspend(void *conn)
{
    (void)conn;
    hub_suspends++;
}

static void
hub_resume(void *conn)
{
    (void)conn;
    hub_resumes++;
}

/* Reads what s has now into buf (NUL-terminated); the last read's
 * result. */
static ssize_t
hub_read(al__sse_t *s, char *buf, size_t len)
{
    size_t got = 0;
    ssize_t n;
    while ((n = al__events_read(s, buf + got, len - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    return n;
}

static void
event_hub(void)
{
    static char buf[1 << 20];
    hub_suspends = hub_resumes = 0;
    al__events_t *h = al__events_create(hub_suspend, hub_resume);
    al__events_query_t q;
    char *cause = NULL;
    ASSERT_EQ(
        al__events_query_parse(NULL, NULL, NULL, NULL, NULL, NULL, &q, &cause),
        0);
    al__sse_t *all = al__events_open(h, &q, NULL);
    al__sse_t *alice = al__events_open(h, &q, "alice");
    al__sse_t *bob = al__events_open(h, &q, "bob");
    ASSERT_EQ(hub_read(all, buf, sizeof buf), 0);
    ASSERT(strstr(buf, "event: ready") != NULL);
    ASSERT_EQ(hub_suspends, 1);
    ASSERT_EQ(hub_read(alice, buf, sizeof buf), 0);
    ASSERT_EQ(hub_read(bob, buf, sizeof buf), 0);
    ASSERT_EQ(hub_suspends, 3);
    al__event_info_t in = { .job = 7,
                            .ms = 1000,
                            .event = "started",
                            .user = "alice",
                            .detail = "task 0 on n1" };
    /* A transaction that failed shows nothing and wakes no one. */
    al__events_record(h, &in);
    al__events_drop(h);
    al__events_publish(h);
    ASSERT_EQ(hub_resumes, 0);
    al__events_record(h, &in);
    al__events_publish(h);
    ASSERT_EQ(hub_resumes, 3);
    ASSERT_EQ(hub_read(all, buf, sizeof buf), 0);
    ASSERT(strstr(buf, "event: job\ndata: {") != NULL &&
           strstr(buf, "\"job\":7") != NULL &&
           strstr(buf, "\"detail\":\"task 0 on n1\"") != NULL);
    ASSERT_EQ(hub_read(alice, buf, sizeof buf), 0);
    ASSERT(strstr(buf, "\"job\":7") != NULL);
    ASSERT_EQ(hub_read(bob, buf, sizeof buf), 0);
    ASSERT_STR_EQ(buf, "");
    /* Twice the ring: `all` reads after each commit and keeps up; bob
     * never reads and falls behind. */
    int seen = 0;
    for (int i = 0; i < 2 * AL_EVENTS_RING; i++) {
        in.job = (uint64_t)(100 + i);
        al__events_record(h, &in);
        al__events_publish(h);
        ASSERT_EQ(hub_read(all, buf, sizeof buf), 0);
        seen += strstr(buf, "event: job") != NULL;
    }
    ASSERT_EQ(seen, 2 * AL_EVENTS_RING);
    ASSERT_EQ(hub_read(bob, buf, sizeof buf), -1);
    ASSERT(strstr(buf, "event: gap") != NULL);
    al__events_free(bob);
    al__events_free(alice);
    al__events_free(all);
    al__events_close(h);
    al__events_destroy(h);
    /* The query: defaults, and each bad value refused with a reason. */
    ASSERT_EQ(
        al__events_query_parse("5", "9", NULL, "3", "false", NULL, &q, &cause),
        0);
    ASSERT(q.has_since && q.since == 5 && q.job == 3 && q.mode == AL_SSE_ONCE);
    ASSERT_EQ(
        al__events_query_parse(NULL, "9", "0", NULL, NULL, NULL, &q, &cause),
        AL_EINVAL);
    ASSERT(cause != NULL && strstr(cause, "together") != NULL);
    free(cause);
    cause = NULL;
    static const char *const bad[][6] = {
        { "x", NULL, NULL, NULL, NULL, NULL },
        { "-1", NULL, NULL, NULL, NULL, NULL },
        { "99999999999999999999999", NULL, NULL, NULL, NULL, NULL },
        { NULL, "1e3", NULL, NULL, NULL, NULL },
        { NULL, NULL, "8193", NULL, NULL, NULL },
        { NULL, NULL, NULL, "0", NULL, NULL },
        { NULL, NULL, NULL, NULL, "yes", NULL },
        { NULL, NULL, NULL, NULL, NULL, "61" },
        { NULL, NULL, NULL, NULL, "0", "5" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *const *b = bad[i];
        q.job = 42;
        ASSERT_EQ(al__events_query_parse(b[0], b[1], b[2], b[3], b[4], b[5], &q,
                                         &cause),
                  AL_EINVAL);
        ASSERT(cause != NULL && cause[0] != '\0');
        ASSERT_EQ(q.job, 42); /* untouched */
        free(cause);
        cause = NULL;
    }
}

const al_test_t test_shell[] = {
    { "url_parse", url_parse },
    { "base64", base64 },
    { "json_dup_keys", json_dup_keys },
    { "buffer", buffer },
    { "user_config", user_config },
    { "cli_options", cli_options },
    { "cli_sizes", cli_sizes },
    { "cli_durations", cli_durations },
    { "cli_when", cli_when },
    { "routes", routes },
    { "tokens", tokens },
    { "proc_state", proc_state },
    { "fake_gpus", fake_gpus },
    { "master_ports", master_ports },
    { "event_hub", event_hub },
    { NULL, NULL },
};
