/*
 * test_common.c -- src/common: buffers, files, the option table (every
 * kind, bounds, errors and the usage made from it), the daemons' start-up,
 * the user's config lines, the JSON helpers and base64, URLs, logging
 * levels and allocation helpers.  Messages are compared whole: they are
 * what users read.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "daemon.h"
#include "fs.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "opt.h"
#include "test.h"
#include "ucfg.h"
#include "xmalloc.h"

/* What a call printed on stderr (or stdout): capture_begin(), the call,
 * then capture_end() gives the text (caller frees).  No assertion may run
 * in between, or its message would be captured too. */
static FILE *saved_stream, *mem_stream;
static char *mem_text;
static size_t mem_len;

static void
capture_begin(FILE **stream)
{
    saved_stream = *stream;
    mem_stream = open_memstream(&mem_text, &mem_len);
    ASSERT(mem_stream != NULL);
    *stream = mem_stream;
}

static char *
capture_end(FILE **stream)
{
    *stream = saved_stream;
    fclose(mem_stream);
    return mem_text;
}

/* A word of an argv (whose type is char *, though nothing writes it). */
#define W(s) ((char *)(s))

/* ------------------------------------------------------------------ */
/* buf                                                                */

static void
buf_basics(void)
{
    al_buf_t b = AL_BUF_INIT;
    ASSERT_STR_EQ(al_buf_cstr(&b), "");
    ASSERT_EQ(b.len, 0);
    al_buf_puts(&b, "ab");
    al_buf_putc(&b, 'c');
    al_buf_append(&b, "de\0f", 4);
    ASSERT_EQ(b.len, 7);
    ASSERT_EQ(memcmp(b.data, "abcde\0f", 8), 0); /* NUL-terminated too */
    al_buf_clear(&b);
    ASSERT_EQ(b.len, 0);
    ASSERT_STR_EQ(al_buf_cstr(&b), "");
    al_buf_printf(&b, "%d-%s", 42, "x");
    ASSERT_STR_EQ(al_buf_cstr(&b), "42-x");
    /* Growth past what was there, in one printf. */
    al_buf_printf(&b, "%0500d", 7);
    ASSERT_EQ(b.len, 504);
    ASSERT_GE(b.cap, 505);
    ASSERT_EQ(b.data[503], '7');
    ASSERT_EQ(b.data[504], '\0');
    char *s = al_buf_steal(&b);
    ASSERT_EQ(strlen(s), 504);
    ASSERT_EQ(b.len, 0);
    ASSERT(b.data == NULL);
    free(s);
    al_buf_fini(&b);
}

static void
buf_reserve(void)
{
    al_buf_t b;
    al_buf_init(&b);
    al_buf_reserve(&b, 1000);
    ASSERT_GE(b.cap, 1001);
    size_t cap = b.cap;
    al_buf_append(&b, "x", 1);
    ASSERT_EQ(b.cap, cap); /* no reallocation: the room was there */
    al_buf_fini(&b);
}

/* ------------------------------------------------------------------ */
/* fs                                                                 */

static void
fs_files(void)
{
    char dir[] = "/tmp/allot-test-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char *sub = al_xasprintf("%s/a/b", dir);
    ASSERT_EQ(al_fs_mkdir_p(sub, 0700), 0);
    ASSERT_EQ(al_fs_mkdir_p(sub, 0700), 0); /* already there: fine */
    char *path = al_xasprintf("%s/f", sub);
    ASSERT_EQ(al_fs_write_file(path, "hello\n", 6, 0600, 0), 0);
    char *data = NULL;
    size_t n = 0;
    ASSERT_EQ(al_fs_read_file(path, &data, &n), 0);
    ASSERT_EQ(n, 6);
    ASSERT_STR_EQ(data, "hello\n");
    free(data);
    /* Atomic rewrite, shorter: nothing of the old contents is left. */
    ASSERT_EQ(al_fs_write_file(path, "yo", 2, 0600, AL_FS_SYNC), 0);
    ASSERT_EQ(al_fs_read_file(path, &data, &n), 0);
    ASSERT_EQ(n, 2);
    ASSERT_STR_EQ(data, "yo");
    free(data);
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    /* A missing file stores nothing. */
    char *missing = al_xasprintf("%s/none", dir);
    data = (char *)"untouched";
    ASSERT_EQ(al_fs_read_file(missing, &data, &n), AL_ENOENT);
    ASSERT_STR_EQ(data, "untouched");
    /* One holder of a directory's lock at a time. */
    int fd1 = -1, fd2 = -1;
    char *cause = NULL;
    ASSERT_EQ(al_fs_lock_dir(dir, "tester", &fd1, &cause), 0);
    ASSERT_EQ(al_fs_lock_dir(dir, "tester", &fd2, &cause), AL_EBUSY);
    ASSERT(strstr(cause, "in use by another allot tester (pid ") != NULL);
    ASSERT_EQ(fd2, -1);
    free(cause);
    close(fd1);
    char *lock = al_xasprintf("%s/lock", dir);
    ASSERT_EQ(unlink(lock), 0);
    ASSERT_EQ(unlink(path), 0);
    ASSERT_EQ(rmdir(sub), 0);
    char *a = al_xasprintf("%s/a", dir);
    ASSERT_EQ(rmdir(a), 0);
    ASSERT_EQ(rmdir(dir), 0);
    free(a);
    free(lock);
    free(missing);
    free(path);
    free(sub);
}

/* ------------------------------------------------------------------ */
/* opt                                                                */

static void
opt_kinds(void)
{
    const char *s = NULL;
    bool f = false;
    int64_t i = -1;
    double d = -1;
    const al_opt_t opts[] = {
        { .name = "--s", .kind = AL_OPT_STR, .dst = &s },
        { .name = "--f", .kind = AL_OPT_FLAG, .dst = &f },
        { .name = "--i", .kind = AL_OPT_INT, .dst = &i, .min = -5, .max = 5 },
        { .name = "--d", .kind = AL_OPT_NUM, .dst = &d, .lo = 0, .hi = 10 },
        { .name = NULL },
    };
    char *argv[] = { W("t"),   W("p1"),  W("--s=a=b"), W("--f"),
                     W("--i"), W("-5"),  W("--d=2.5"), W("-"),
                     W("--"),  W("--f"), W("p4"),      NULL };
    int argc = 11;
    char *pos[4];
    int npos = -1;
    ASSERT_EQ(al_opt_parse("t", NULL, opts, argc, argv, false, pos, 4, &npos),
              0);
    ASSERT_STR_EQ(s, "a=b"); /* only the first '=' splits */
    ASSERT(f);
    ASSERT_EQ(i, -5);
    ASSERT_DBL_NEAR(d, 2.5, 0);
    ASSERT_EQ(npos, 4);
    ASSERT_STR_EQ(pos[0], "p1");
    ASSERT_STR_EQ(pos[1], "-"); /* a lone dash is an argument */
    ASSERT_STR_EQ(pos[2], "--f");
    ASSERT_STR_EQ(pos[3], "p4");
    /* The bounds are inclusive. */
    char *edge[] = { (char *)"t",  (char *)"--i=5", (char *)"--d",
                     (char *)"10", (char *)"--d",   (char *)"0",
                     NULL };
    ASSERT_EQ(al_opt_parse("t", NULL, opts, 6, edge, false, pos, 4, &npos), 0);
    ASSERT_EQ(i, 5);
    ASSERT_DBL_NEAR(d, 0, 0);
    ASSERT_EQ(npos, 0);
}

/* Parses one value of opts' option and returns what it printed. */
static char *
parse_error(const al_opt_t *opts, const char *where, const char *a1,
            const char *a2, int *rc)
{
    char *argv[] = { (char *)"t", (char *)a1, (char *)a2, NULL };
    int argc = a2 != NULL ? 3 : 2, npos;
    char *pos[1];
    capture_begin(&stderr);
    *rc = al_opt_parse("t", where, opts, argc, argv, false, pos, 1, &npos);
    return capture_end(&stderr);
}

static void
opt_errors(void)
{
    int64_t i = 3;
    double d = 3;
    bool f = false;
    const char *s = NULL;
    const al_opt_t opts[] = {
        { .name = "--i", .kind = AL_OPT_INT, .dst = &i, .min = 1, .max = 9 },
        { .name = "--d", .kind = AL_OPT_NUM, .dst = &d, .lo = 0.5, .hi = 10 },
        { .name = "--f", .kind = AL_OPT_FLAG, .dst = &f },
        { .name = "--s", .kind = AL_OPT_STR, .dst = &s },
        { .name = NULL },
    };
    static const struct {
        const char *a1, *a2, *where, *msg;
    } cases[] = {
        { "--i", "10", NULL,
          "allot t: --i wants an integer in 1..9, not '10'\n" },
        { "--i=0", NULL, NULL,
          "allot t: --i wants an integer in 1..9, not '0'\n" },
        { "--i", "2x", NULL,
          "allot t: --i wants an integer in 1..9, not '2x'\n" },
        { "--i", "", NULL, "allot t: --i wants an integer in 1..9, not ''\n" },
        { "--i", "99999999999999999999", NULL,
          "allot t: --i wants an integer in 1..9, not "
          "'99999999999999999999'\n" },
        { "--d", "11", NULL,
          "allot t: --d: expected a number in [0.5, 10], got '11'\n" },
        { "--d", "0.4", NULL,
          "allot t: --d: expected a number in [0.5, 10], got '0.4'\n" },
        { "--d", "nan", NULL,
          "allot t: --d: expected a number in [0.5, 10], got 'nan'\n" },
        { "--d=", NULL, NULL,
          "allot t: --d: expected a number in [0.5, 10], got ''\n" },
        { "--d", "1e", NULL,
          "allot t: --d: expected a number in [0.5, 10], got '1e'\n" },
        { "--f=1", NULL, NULL, "allot t: --f takes no value\n" },
        { "--s", NULL, NULL, "allot t: --s needs a value\n" },
        { "--nope", NULL, "f:1",
          "allot t: f:1: unknown option '--nope'; see `allot t --help`\n" },
        { "--nope=3", NULL, NULL,
          "allot t: unknown option '--nope'; see `allot t --help`\n" },
        { "a", "b", "f:2", "allot t: f:2: too many arguments ('b')\n" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int rc;
        char *msg =
            parse_error(opts, cases[k].where, cases[k].a1, cases[k].a2, &rc);
        bool same = strcmp(msg, cases[k].msg) == 0;
        if (!same)
            fprintf(stderr, "    case %zu: got \"%s\"\n", k, msg);
        free(msg);
        ASSERT(same);
        ASSERT_EQ(rc, AL_EXIT_USAGE);
    }
    /* Failure leaves the values as they were. */
    ASSERT_EQ(i, 3);
    ASSERT_DBL_NEAR(d, 3, 0);
    ASSERT(!f);
}

typedef struct targs {
    const char *name, *hidden;
    int64_t n;
    double ratio;
    bool json, help;
} targs_t;

static const al_opt_t t_opts[] = {
    { .name = "--name",
      .kind = AL_OPT_STR,
      .off = offsetof(targs_t, name),
      .arg = "NAME",
      .help = "who",
      .flags = AL_OPT_REQUIRED },
    { .name = "--n",
      .kind = AL_OPT_INT,
      .off = offsetof(targs_t, n),
      .min = 0,
      .max = 100,
      .arg = "N",
      .help = "how many (default 1)",
      .flags = AL_OPT_BRIEF },
    { .name = "--ratio",
      .kind = AL_OPT_NUM,
      .off = offsetof(targs_t, ratio),
      .lo = 0,
      .hi = 1,
      .arg = "R",
      .help = "a share" },
    { .name = "--old",
      .kind = AL_OPT_STR,
      .off = offsetof(targs_t, hidden),
      .arg = "X",
      .flags = AL_OPT_HIDDEN },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = offsetof(targs_t, json),
      .help = "as JSON",
      .flags = AL_OPT_BRIEF },
    { .name = "--help",
      .kind = AL_OPT_FLAG,
      .off = offsetof(targs_t, help),
      .help = "this text" },
    { .name = NULL },
};

static const al_opt_cmd_t t_cmd = {
    .name = "t",
    .opts = t_opts,
    .args = "FILE...",
    .about = "Does t.\nTwice.\n",
};

static void
opt_table_offsets(void)
{
    targs_t a = { .n = 1 };
    char *argv[] = { W("t"),  W("--name"),       W("x"),
                     W("f1"), W("--ratio=0.25"), W("--old"),
                     W("o"),  W("f2"),           W("--json"),
                     NULL };
    int argc = 9;
    char *pos[2];
    int npos = -1;
    ASSERT_EQ(al_opt_parse_cmd(&t_cmd, NULL, &a, argc, argv, pos, 2, &npos), 0);
    ASSERT_STR_EQ(a.name, "x");
    ASSERT_STR_EQ(a.hidden, "o"); /* hidden from usage, parsed all the same */
    ASSERT_EQ(a.n, 1);
    ASSERT_DBL_NEAR(a.ratio, 0.25, 0);
    ASSERT(a.json);
    ASSERT(!a.help);
    ASSERT_EQ(npos, 2);
    ASSERT_STR_EQ(pos[1], "f2");

    /* Stopping at the first positional: the rest is not ours. */
    al_opt_cmd_t stop = t_cmd;
    stop.stop_at_args = true;
    targs_t b = { 0 };
    ASSERT_EQ(al_opt_parse_cmd(&stop, NULL, &b, argc, argv, NULL, 0, &npos), 0);
    ASSERT_EQ(npos, 3);
    ASSERT(!b.json);
    char *dd[] = { (char *)"t",  (char *)"--n",    (char *)"7",
                   (char *)"--", (char *)"--json", NULL };
    ASSERT_EQ(al_opt_parse_cmd(&stop, NULL, &b, 5, dd, NULL, 0, &npos), 0);
    ASSERT_EQ(npos, 4); /* after "--" */
    ASSERT_EQ(b.n, 7);
    ASSERT(!b.json);
}

static void
opt_usage_text(void)
{
    capture_begin(&stdout);
    al_opt_usage(stdout, &t_cmd);
    char *text = capture_end(&stdout);
    ASSERT_STR_EQ(text, "usage: allot t --name NAME [options] FILE...\n"
                        "Does t.\n"
                        "Twice.\n"
                        "\n"
                        "  --name NAME                        who\n"
                        "  --n N                              how many "
                        "(default 1)\n"
                        "  --ratio R                          a share\n"
                        "  --json                             as JSON\n"
                        "  --help                             this text\n");
    free(text);
    capture_begin(&stdout);
    al_opt_brief(stdout, &t_cmd);
    text = capture_end(&stdout);
    ASSERT_STR_EQ(text, " --name NAME [--n N] [--json] FILE...");
    free(text);
    /* Without about text or other options. */
    static const al_opt_t only[] = {
        { .name = "--x",
          .kind = AL_OPT_STR,
          .arg = "X",
          .help = "x",
          .flags = AL_OPT_REQUIRED },
        { .name = NULL },
    };
    static const al_opt_cmd_t bare = { .name = "b", .opts = only };
    capture_begin(&stdout);
    al_opt_usage(stdout, &bare);
    text = capture_end(&stdout);
    ASSERT_STR_EQ(text, "usage: allot b --x X\n\n"
                        "  --x X                              x\n");
    free(text);
    /* A verb comes before the options, other positionals after them. */
    al_opt_cmd_t verb = bare;
    verb.lead = "set NAME";
    verb.args = "MORE";
    capture_begin(&stdout);
    al_opt_brief(stdout, &verb);
    text = capture_end(&stdout);
    ASSERT_STR_EQ(text, " set NAME --x X MORE");
    free(text);
    capture_begin(&stdout);
    al_opt_usage(stdout, &verb);
    text = capture_end(&stdout);
    ASSERT_STR_EQ(text, "usage: allot b set NAME --x X MORE\n\n"
                        "  --x X                              x\n");
    free(text);
}

/* ------------------------------------------------------------------ */
/* daemon                                                             */

typedef struct dargs {
    int64_t port;
    al_daemon_t d;
} dargs_t;

static const al_opt_t d_opts[] = {
    { .name = "--port",
      .kind = AL_OPT_INT,
      .off = offsetof(dargs_t, port),
      .min = 1,
      .max = 65535,
      .arg = "P",
      .help = "the port" },
    AL_DAEMON_OPTS(dargs_t, d),
    { .name = NULL },
};

static const al_opt_cmd_t d_cmd = { .name = "d", .opts = d_opts };

static const char d_usage[] =
    "usage: allot d [options]\n\n"
    "  --port P                           the port\n"
    "  --log-level LEVEL                  debug, info (default), warn, error "
    "or quiet\n"
    "  --help                             this text\n";

static void
daemon_start(void)
{
    dargs_t a = { .port = 1 };
    int status = -1;
    char *argv[] = { (char *)"d", (char *)"--port=80", (char *)"--log-level",
                     (char *)"warn", NULL };
    ASSERT_EQ(al_daemon_parse(&a.d, &d_cmd, &a, 4, argv), 0);
    ASSERT_EQ(a.port, 80);
    ASSERT_STR_EQ(a.d.level, "warn");
    ASSERT(al_daemon_begin(&a.d, &d_cmd, 0, true, &status));
    ASSERT_EQ(status, -1); /* untouched: go on */
    al_log_setup("allot", AL_LOG_INFO);

    /* --help: the usage on stdout, status 0. */
    char *help[] = { (char *)"d", (char *)"--help", NULL };
    int rc = al_daemon_parse(&a.d, &d_cmd, &a, 2, help);
    ASSERT_STR_EQ(a.d.level, "info"); /* the default, set again */
    capture_begin(&stdout);
    bool go = al_daemon_begin(&a.d, &d_cmd, rc, true, &status);
    char *text = capture_end(&stdout);
    ASSERT(!go);
    ASSERT_EQ(status, AL_EXIT_OK);
    ASSERT_STR_EQ(text, d_usage);
    free(text);

    /* An unknown level, a failed parse or the daemon's own refusal: the
     * usage on stderr, status 2. */
    char *bad[] = { (char *)"d", (char *)"--log-level=loud", NULL };
    for (int k = 0; k < 3; k++) {
        rc = al_daemon_parse(&a.d, &d_cmd, &a, k == 0 ? 2 : 1, bad);
        capture_begin(&stderr);
        go = al_daemon_begin(&a.d, &d_cmd, k == 1 ? AL_EXIT_USAGE : rc, k != 2,
                             &status);
        text = capture_end(&stderr);
        ASSERT(!go);
        ASSERT_EQ(status, AL_EXIT_USAGE);
        ASSERT_STR_EQ(text, d_usage);
        free(text);
    }
}

static void
daemon_signals(void)
{
    al_daemon_t d;
    al_daemon_block(&d);
    ASSERT(sigismember(&d.stop, SIGINT) == 1);
    ASSERT(sigismember(&d.stop, SIGTERM) == 1);
    ASSERT(sigismember(&d.stop, SIGHUP) == 0);
    sigset_t now;
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
    ASSERT(sigismember(&now, SIGTERM) == 1);
    /* Blocked: the signal waits for al_daemon_wait() instead of killing. */
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);
    ASSERT_EQ(al_daemon_wait(&d), SIGTERM);
    al_daemon_unblock(&d);
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
    ASSERT(sigismember(&now, SIGTERM) == sigismember(&d.old, SIGTERM));
    struct sigaction sa;
    ASSERT_EQ(sigaction(SIGPIPE, NULL, &sa), 0);
    ASSERT(sa.sa_handler == SIG_IGN);
    signal(SIGPIPE, SIG_DFL);
}

static volatile sig_atomic_t caught;

static void
on_stop(int sig)
{
    caught = sig;
}

static void
daemon_catch(void)
{
    struct sigaction old_int, old_term;
    sigaction(SIGINT, NULL, &old_int);
    sigaction(SIGTERM, NULL, &old_term);
    al_daemon_catch(on_stop);
    struct sigaction sa;
    ASSERT_EQ(sigaction(SIGINT, NULL, &sa), 0);
    ASSERT(sa.sa_handler == on_stop);
    ASSERT((sa.sa_flags & SA_RESTART) != 0);
    caught = 0;
    raise(SIGTERM);
    ASSERT_EQ(caught, SIGTERM);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    signal(SIGPIPE, SIG_DFL);
}

/* ------------------------------------------------------------------ */
/* ucfg, json, http, log, xmalloc, clock                              */

static void
ucfg_lines(void)
{
    static const char text[] = "# server = http://comment\n"
                               "  server\t=  http://a:1  \r\n"
                               "token=t1\n"
                               "\n"
                               "server = http://b:2\n"
                               "bogus line\n";
    size_t n = sizeof text - 1;
    char *v = al_ucfg_lookup(text, n, "server");
    ASSERT_STR_EQ(v, "http://b:2"); /* the last one wins */
    free(v);
    v = al_ucfg_lookup(text, n, "token");
    ASSERT_STR_EQ(v, "t1");
    free(v);
    ASSERT(al_ucfg_lookup(text, n, "other") == NULL);
    ASSERT(al_ucfg_lookup(text, n, "serve") == NULL);
    /* A NUL ends the file. */
    v = al_ucfg_lookup("token = x\0token = y\n", 20, "token");
    ASSERT_STR_EQ(v, "x");
    free(v);
    static const char *const keys[] = { "server", "token" };
    ASSERT_EQ(al_ucfg_bad_line(text, n, keys, 2), 6);
    ASSERT_EQ(al_ucfg_bad_line(text, n - 11, keys, 2), 0);
    ASSERT_EQ(al_ucfg_bad_line(text, n, keys, 1), 3);
    al_buf_t out = AL_BUF_INIT;
    al_ucfg_rewrite(text, n, "server", "http://c:3", &out);
    ASSERT_STR_EQ(al_buf_cstr(&out), "# server = http://comment\n"
                                     "server = http://c:3\n"
                                     "token=t1\n"
                                     "\n"
                                     "bogus line\n");
    al_buf_clear(&out);
    al_ucfg_rewrite("a = 1", 5, "b", "2", &out);
    ASSERT_STR_EQ(al_buf_cstr(&out), "a = 1\nb = 2\n");
    al_buf_fini(&out);
}

static void
json_helpers(void)
{
    char *cause = NULL;
    const char doc[] = "{\"i\": 7, \"r\": 1.5, \"s\": \"x\", \"b\": true, "
                       "\"n\": null}";
    json_t *v = al_json_parse(doc, sizeof doc - 1, &cause);
    ASSERT(v != NULL);
    ASSERT(cause == NULL);
    ASSERT_EQ(al_json_int(v, "i", -1), 7);
    ASSERT_EQ(al_json_int(v, "r", -1), -1); /* not an integer */
    ASSERT_EQ(al_json_int(v, "none", -2), -2);
    ASSERT_DBL_NEAR(al_json_num(v, "r", 0), 1.5, 0);
    ASSERT_DBL_NEAR(al_json_num(v, "i", 0), 7, 0);
    ASSERT_DBL_NEAR(al_json_num(v, "s", 9), 9, 0);
    ASSERT_STR_EQ(al_json_str(v, "s", "d"), "x");
    ASSERT_STR_EQ(al_json_str(v, "i", "d"), "d");
    ASSERT(al_json_bool(v, "b", false));
    ASSERT(al_json_bool(v, "n", true));
    ASSERT_EQ(al_json_int(NULL, "i", 3), 3);
    char *s = al_json_dump(json_object_get(v, "s"));
    ASSERT_STR_EQ(s, "\"x\"");
    free(s);
    json_decref(v);
    json_t *o = json_pack("{s:i, s:[i, i]}", "a", 1, "b", 2, 3);
    s = al_json_dump(o);
    ASSERT_STR_EQ(s, "{\"a\":1,\"b\":[2,3]}");
    free(s);
    json_decref(o);
    ASSERT(al_json_parse("{\"a\":", 5, &cause) == NULL);
    ASSERT(cause != NULL && cause[0] != '\0');
    free(cause);
}

static void
json_base64(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        { "", "" },        { "f", "Zg==" },         { "fo", "Zm8=" },
        { "foo", "Zm9v" }, { "hello", "aGVsbG8=" }, { "\xff\xfe", "//4=" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *e = al_b64_encode(cases[k].in, strlen(cases[k].in));
        ASSERT_STR_EQ(e, cases[k].out);
        unsigned char *d = NULL;
        size_t n = 99;
        ASSERT_EQ(al_b64_decode(e, &d, &n), 0);
        ASSERT_EQ(n, strlen(cases[k].in));
        ASSERT_EQ(memcmp(d, cases[k].in, n), 0);
        free(d);
        free(e);
    }
    unsigned char *d = NULL;
    size_t n = 99;
    ASSERT_EQ(al_b64_decode("Zm9v!", &d, &n), AL_EPARSE);
    /* Padding only at the end of the last group; no spaces. */
    static const char *const bad[] = { "Zg==Zm8=", "Z===",      "====",
                                       "Zm 9",     "Zm9v\n   ", "=Zm9" };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        ASSERT_EQ(al_b64_decode(bad[k], &d, &n), AL_EPARSE);
    ASSERT(d == NULL);
    ASSERT_EQ(n, 99);
    /* Every byte value, at every length up to 3 groups and more. */
    unsigned char in[300];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    for (size_t len = 0; len <= sizeof in; len++) {
        char *e = al_b64_encode(in, len);
        ASSERT_EQ(strlen(e), (len + 2) / 3 * 4);
        ASSERT_EQ(al_b64_decode(e, &d, &n), 0);
        ASSERT_EQ(n, len);
        ASSERT_EQ(memcmp(d, in, len), 0);
        free(d);
        free(e);
    }
}

static void
http_urls(void)
{
    al_url_t u;
    char *cause = NULL;
    ASSERT_EQ(al_url_parse("http://host:8080/api//", &u, &cause), 0);
    ASSERT_STR_EQ(u.host, "host");
    ASSERT_STR_EQ(u.port, "8080");
    ASSERT_STR_EQ(u.prefix, "/api");
    ASSERT_EQ(al_url_parse("10.0.0.1", &u, &cause), 0);
    ASSERT_STR_EQ(u.host, "10.0.0.1");
    ASSERT_STR_EQ(u.port, "80");
    ASSERT_STR_EQ(u.prefix, "");
    ASSERT_EQ(u.tls, false);
    ASSERT_EQ(al_url_parse("https://ctl.example", &u, &cause), 0);
    ASSERT_STR_EQ(u.host, "ctl.example");
    ASSERT_STR_EQ(u.port, "443");
    ASSERT_EQ(u.tls, true);
    ASSERT_EQ(al_url_parse("https://[::1]:7070/a", &u, &cause), 0);
    ASSERT_STR_EQ(u.host, "::1");
    ASSERT_STR_EQ(u.port, "7070");
    ASSERT_STR_EQ(u.prefix, "/a");
    ASSERT_EQ(al_url_parse("http://[fe80::1]", &u, &cause), 0);
    ASSERT_STR_EQ(u.host, "fe80::1");
    ASSERT_STR_EQ(u.port, "80");
    static const struct {
        const char *url, *cause;
    } bad[] = {
        { "ftp://h", "unsupported URL scheme in 'ftp://h' (only http:// "
                     "and https:// are supported)" },
        { "http://[::1:80", "no host in URL 'http://[::1:80'" },
        { "http://[]:80", "no host in URL 'http://[]:80'" },
        { "http://[::1]x", "malformed URL 'http://[::1]x'" },
        { "http://:80", "no host in URL 'http://:80'" },
        { "http://h:", "bad port in URL 'http://h:'" },
        { "http://h:8x", "malformed URL 'http://h:8x'" },
        { "http://h:80x/p", "malformed URL 'http://h:80x/p'" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(&u, 'z', sizeof u);
        ASSERT_EQ(al_url_parse(bad[k].url, &u, &cause), AL_EINVAL);
        ASSERT_STR_EQ(cause, bad[k].cause);
        ASSERT_EQ(u.host[0], 'z'); /* untouched */
        free(cause);
        cause = NULL;
    }
    ASSERT_EQ(al_url_parse("http://", &u, NULL), AL_EINVAL);
    /* A failover group's list. */
    al_url_t list[AL_URL_LIST_MAX];
    int n = 0;
    ASSERT_EQ(al_url_parse_list("http://a:1,https://[::1]:2", list, &n, NULL),
              0);
    ASSERT_EQ(n, 2);
    ASSERT_STR_EQ(list[0].host, "a");
    ASSERT_STR_EQ(list[1].host, "::1");
    ASSERT_EQ(list[1].tls, true);
    ASSERT_EQ(al_url_parse_list("http://a:1", list, &n, NULL), 0);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(al_url_parse_list("http://a:1,", list, &n, &cause), AL_EINVAL);
    ASSERT_STR_EQ(cause, "no host in URL ''");
    free(cause);
    cause = NULL;
    ASSERT_EQ(al_url_parse_list("a,b,c,d,e,f,g,h,i", list, &n, &cause),
              AL_EINVAL);
    ASSERT_STR_EQ(cause, "more than 8 URLs in 'a,b,c,d,e,f,g,h,i'");
    free(cause);
}

static void
log_levels(void)
{
    ASSERT_EQ(al_log_level_parse("debug"), AL_LOG_DEBUG);
    ASSERT_EQ(al_log_level_parse("info"), AL_LOG_INFO);
    ASSERT_EQ(al_log_level_parse("warn"), AL_LOG_WARN);
    ASSERT_EQ(al_log_level_parse("error"), AL_LOG_ERROR);
    ASSERT_EQ(al_log_level_parse("quiet"), AL_LOG_QUIET);
    ASSERT_EQ(al_log_level_parse("INFO"), -1);
    ASSERT_EQ(al_log_level_parse(""), -1);
}

static void
xmalloc_strings(void)
{
    char *s = al_xasprintf("%s-%03d", "a", 7);
    ASSERT_STR_EQ(s, "a-007");
    free(s);
    s = al_xstrndup("abcdef", 3);
    ASSERT_STR_EQ(s, "abc");
    free(s);
    s = al_xstrndup("ab", 10);
    ASSERT_STR_EQ(s, "ab");
    free(s);
    int *z = al_xcalloc(4, sizeof *z);
    ASSERT_EQ(z[0] | z[1] | z[2] | z[3], 0);
    z = al_xreallocarray(z, 8, sizeof *z);
    ASSERT_EQ(z[3], 0);
    free(z);
}

static void
clock_monotonic(void)
{
    int64_t a = al_clock_mono_ms();
    al_clock_sleep_ms(5);
    int64_t b = al_clock_mono_ms();
    ASSERT_GE(b - a, 5);
    ASSERT_GT(al_clock_ms(), INT64_C(1600000000000)); /* after 2020 */
}

/* al_json_dump_flags(v, f) against jansson's json_dumps(v, f). */
static void
dump_same(const json_t *v, size_t f)
{
    char *got = al_json_dump_flags(v, f);
    char *want = json_dumps(v, f);
    ASSERT(want != NULL);
    ASSERT_STR_EQ(got, want);
    free(got);
    free(want);
}

/* A member under AL_JSON_MEMBERS is written as its object's members, in
 * its place; the rest of the document is as jansson writes it. */
static void
json_dump_members(void)
{
    json_t *o = json_pack("{s:i}", "job", 7);
    const char *spec = "{\"command\":[\"true\"],\"env\":{\"A\":\"1\"}}";
    json_object_setn_new(o, AL_JSON_MEMBERS, sizeof AL_JSON_MEMBERS - 1,
                         json_string(spec));
    json_object_set_new(o, "extra", json_string("x"));
    json_t *a = json_pack("{s:[o]}", "tasks", o);
    char *t = al_json_dump(a);
    ASSERT_STR_EQ(t, "{\"tasks\":[{\"job\":7,\"command\":[\"true\"],"
                     "\"env\":{\"A\":\"1\"},\"extra\":\"x\"}]}");
    free(t);
    /* An empty object adds nothing, first or not. */
    json_t *e = json_object();
    json_object_setn_new(e, AL_JSON_MEMBERS, sizeof AL_JSON_MEMBERS - 1,
                         json_string("{}"));
    json_object_set_new(e, "k", json_true());
    json_object_setn_new(e, AL_JSON_MEMBERS, sizeof AL_JSON_MEMBERS - 1,
                         json_string("{}"));
    t = al_json_dump(e);
    ASSERT_STR_EQ(t, "{\"k\":true}");
    free(t);
    json_t *only = json_object();
    json_object_setn_new(only, AL_JSON_MEMBERS, sizeof AL_JSON_MEMBERS - 1,
                         json_string("{\"a\":1}"));
    t = al_json_dump(only);
    ASSERT_STR_EQ(t, "{\"a\":1}");
    free(t);
    /* No input makes such a key: jansson's parser refuses a NUL in one. */
    json_t *in = json_loads("{\"\\u0000members\":\"{}\"}", 0, NULL);
    ASSERT(in == NULL);
    json_decref(only);
    json_decref(e);
    json_decref(a);
}

static void
json_dump_is_janssons(void)
{
    const char *docs[] = {
        "{}",
        "[]",
        "0",
        "-9223372036854775808",
        "9223372036854775807",
        "true",
        "false",
        "null",
        "\"\"",
        "0.1",
        "1e300",
        "-0.0",
        "3.0",
        "0.003",
        "123456789.123456789",
        "[1,[2,[3,{}]],{\"a\":[]}]",
        "{\"id\":5,\"name\":\"train\",\"tasks\":[{\"node\":\"n1\",\"devices\":"
        "[0,1]}],\"gpu\":0.25,\"ok\":true,\"x\":null}",
        "{\"\\u00e9t\\u00e9\":\"\\u20ac \\ud83d\\ude00\",\"q\\\"k\":\"a\\\\b/"
        "c\\u007f\\u0001\\u001f\"}",
        "{\"z\":1,\"a\":2,\"m\":{\"y\":[true,false,null],\"b\":\"\\t\\n\\r\\b"
        "\\f\"}}",
    };
    size_t flags[] = { JSON_COMPACT | JSON_ENCODE_ANY,
                       JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15),
                       JSON_INDENT(2) | JSON_ENCODE_ANY, JSON_COMPACT };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_t *v = json_loads(docs[i], JSON_DECODE_ANY, NULL);
        ASSERT(v != NULL);
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            if (json_is_object(v) || json_is_array(v) ||
                (flags[k] & JSON_ENCODE_ANY))
                dump_same(v, flags[k]);
        json_decref(v);
    }
    /* Every byte below 0x80 in a string and a key, a NUL inside a
     * string, and keys added out of order. */
    char all[128];
    for (int c = 1; c < 128; c++)
        all[c - 1] = (char)c;
    all[127] = '\0';
    json_t *o = json_object();
    json_object_set_new(o, "zeta", json_string(all));
    json_object_set_new(o, all, json_integer(-1));
    json_object_set_new(o, "nul", json_stringn("a\0b", 3));
    json_object_set_new(o, "alpha", json_real(1.0 / 3.0));
    dump_same(o, JSON_COMPACT | JSON_ENCODE_ANY);
    dump_same(o, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    char *text = al_json_dump(o);
    ASSERT(strncmp(text, "{\"zeta\":\"\\u0001", 15) == 0);
    free(text);
    json_decref(o);
}

const al_test_t test_common[] = {
    { "json_dump_is_janssons", json_dump_is_janssons },
    { "json_dump_members", json_dump_members },
    { "buf_basics", buf_basics },
    { "buf_reserve", buf_reserve },
    { "fs_files", fs_files },
    { "opt_kinds", opt_kinds },
    { "opt_errors", opt_errors },
    { "opt_table_offsets", opt_table_offsets },
    { "opt_usage_text", opt_usage_text },
    { "daemon_start", daemon_start },
    { "daemon_signals", daemon_signals },
    { "daemon_catch", daemon_catch },
    { "ucfg_lines", ucfg_lines },
    { "json_helpers", json_helpers },
    { "json_base64", json_base64 },
    { "http_urls", http_urls },
    { "log_levels", log_levels },
    { "xmalloc_strings", xmalloc_strings },
    { "clock_monotonic", clock_monotonic },
    { NULL, NULL },
};
