/*
 * cli_run.c -- interactive sessions from the user's terminal: `allot run`
 * (submit, wait for the start on one updating line, connect), `allot
 * attach`, `allot exec` and `allot port-forward`.
 *
 * A session is one stream to the controller (src/common/stream.h: frames
 * over a connection turned over with an HTTP/1.1 Upgrade), which relays it
 * to the job's node.  With -t the local terminal goes raw, its size goes
 * with the stream and follows every SIGWINCH, and every key reaches the
 * job's pseudo-terminal (Ctrl-C included) but the detach keys, Ctrl-P
 * Ctrl-Q.  Without -t stdin, stdout and stderr stay three streams and the
 * end of stdin is sent as such.  The exit status is the remote command's
 * (128+N for signal N).
 *
 * May call: cli_client.c (the API), script.c (submit's options),
 * term.c (the local terminal: raw mode, size, the signals' self-pipe),
 * src/common (stream, JSON).  No server or agent code: a client.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "script.h"
#include "stream.h"
#include "term.h"
#include "xmalloc.h"

/* What the session's loop ends with, besides an exit status. */
#define EXIT_LOST 255
/* Bytes waiting for the stream before stdin is left unread. */
#define OUT_ROOM ((size_t)256 * 1024)

/* Passed on to a job of `allot run`, as `allot submit` does. */
static const char *const passed_env[] = { "PATH",       "HOME", "LANG",
                                          "LC_ALL",     "USER", "PYTHONPATH",
                                          "VIRTUAL_ENV" };

/* Signals to the self-pipe: a resize, and SIGINT, SIGTERM and SIGHUP
 * (while the job waits they cancel it; then, without a terminal, they go
 * to the job; with one, whose keys reach the job raw, they detach). */
static void
signals_on(void)
{
    static const int sigs[] = { SIGWINCH, SIGINT, SIGTERM, SIGHUP };
    al_term_signals_on(sigs, sizeof sigs / sizeof sigs[0]);
}

/* How a session went. */
typedef struct result {
    int status;  /* the exit status to return */
    bool ended;  /* an EXIT came */
    bool failed; /* an ERROR came (printed) */
    bool lost;   /* the connection ended without a word */
    bool detach; /* the user detached */
    bool closed; /* a CLOSE came (without an EXIT: taken over elsewhere) */
    char *error; /* the ERROR's text */
} result_t;

/* A session's state while it runs. */
typedef struct sess {
    int fd;      /* the stream */
    al_buf_t in; /* from the stream, not yet parsed */
    al_buf_t out;
    size_t out_off;
    bool tty, stdin_open, held_p, closing;
    result_t *res;
} sess_t;

/* Takes the whole frames that came; false once the session is over. */
static bool
take_frames(sess_t *s)
{
    size_t off = 0;
    bool go_on = true;
    result_t *res = s->res;
    while (go_on) {
        al_frame_t f;
        size_t used;
        char *cause = NULL;
        int rc = al_stream_parse(s->in.data + off, s->in.len - off, &f, &used,
                                 &cause);
        if (rc < 0) {
            res->error = cause;
            res->failed = true;
            return false;
        }
        if (rc == 0)
            break;
        off += used;
        if (f.type == AL_FR_STDOUT) {
            al_stream_write_all(1, f.data, f.len);
        } else if (f.type == AL_FR_STDERR) {
            al_stream_write_all(2, f.data, f.len);
        } else if (f.type == AL_FR_NOTICE) {
            fprintf(stderr, "%sallot: %.*s%s", al_term_is_raw() ? "\r\n" : "",
                    (int)f.len, (const char *)f.data,
                    al_term_is_raw() ? "\r\n" : "\n");
        } else if (f.type == AL_FR_ERROR) {
            free(res->error);
            res->error = al_xstrndup((const char *)f.data, f.len);
            res->failed = true;
        } else if (f.type == AL_FR_EXIT) {
            int code, sig;
            al_stream_exit_of(&f, &code, &sig);
            res->ended = true;
            res->status = sig != 0 ? 128 + sig : code;
        } else if (f.type == AL_FR_CLOSE) {
            res->closed = true;
            go_on = false;
        }
    }
    if (off > 0) {
        memmove(s->in.data, s->in.data + off, s->in.len - off);
        s->in.len -= off;
    }
    return go_on;
}

/* Sends what waits; false when the connection failed. */
static bool
send_out(sess_t *s)
{
    while (s->out.len > s->out_off) {
        ssize_t n = send(s->fd, s->out.data + s->out_off,
                         s->out.len - s->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n < 0)
            return false;
        s->out_off += (size_t)n;
    }
    if (s->out_off == s->out.len)
        s->out.len = s->out_off = 0;
    return true;
}

/* The signals that came: a resize, or (without a terminal) one for the
 * job. */
static void
take_signals(sess_t *s)
{
    unsigned char sigs[16];
    ssize_t n = read(al_term_signal_fd(), sigs, sizeof sigs);
    for (ssize_t i = 0; i < n; i++) {
        if (sigs[i] == SIGWINCH) {
            int rows, cols;
            al_term_size(&rows, &cols);
            if (rows > 0)
                al_stream_put_resize(&s->out, rows, cols);
        } else if (!s->tty) {
            unsigned char sig = sigs[i];
            al_stream_put(&s->out, AL_FR_SIGNAL, &sig, 1);
        } else if (!s->closing) {
            /* With a terminal the job's signals come as keys: one sent to
             * this process (kill, a closed window) detaches. */
            s->res->detach = true;
            al_stream_put(&s->out, AL_FR_CLOSE, NULL, 0);
            s->closing = true;
        }
    }
}

/* Keys from a terminal: all of them but the detach keys, Ctrl-P Ctrl-Q (a
 * Ctrl-P alone goes on with the next key). */
static void
take_keys(sess_t *s, const char *buf, size_t n)
{
    char keep[65536 + 1];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (s->held_p) {
            s->held_p = false;
            if (c == 0x11) {
                s->res->detach = true;
                break;
            }
            keep[k++] = 0x10;
        }
        if (c == 0x10)
            s->held_p = true;
        else
            keep[k++] = (char)c;
    }
    if (k > 0)
        al_stream_put(&s->out, AL_FR_STDIN, keep, k);
    if (s->res->detach) {
        al_stream_put(&s->out, AL_FR_CLOSE, NULL, 0);
        s->closing = true;
    }
}

static void
take_stdin(sess_t *s)
{
    char buf[65536];
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
        return;
    if (n <= 0) {
        s->stdin_open = false;
        if (!s->tty)
            al_stream_put(&s->out, AL_FR_EOF, NULL, 0);
    } else if (s->tty) {
        take_keys(s, buf, (size_t)n);
    } else {
        al_stream_put(&s->out, AL_FR_STDIN, buf, (size_t)n);
    }
}

/* Reads from the stream; false when it ended. */
static bool
take_stream(sess_t *s)
{
    al_buf_reserve(&s->in, s->in.len + 65536);
    ssize_t n = recv(s->fd, s->in.data + s->in.len, 65536, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        result_t *res = s->res;
        if (!res->ended && !res->failed && !s->closing)
            res->lost = true;
        return false;
    }
    if (n > 0)
        s->in.len += (size_t)n;
    return true;
}

/* The session's loop over an open stream (in: what came with its
 * opening): until the remote end ends it, the user detaches or the
 * connection is lost. */
static void
session_loop(int fd, al_buf_t *in, bool tty, bool want_stdin, result_t *res)
{
    sess_t s = {
        .fd = fd, .in = *in, .tty = tty, .stdin_open = want_stdin, .res = res
    };
    al_buf_init(&s.out);
    if (tty) {
        int rows, cols;
        al_term_size(&rows, &cols);
        if (rows > 0)
            al_stream_put_resize(&s.out, rows, cols);
    } else if (!want_stdin) {
        /* Without -i the job's stdin is empty, as a shell's `< /dev/null`
         * (or docker run without -i): its end at once, or a program that
         * reads it would wait for ever. */
        al_stream_put(&s.out, AL_FR_EOF, NULL, 0);
    }
    while (take_frames(&s)) {
        if (!send_out(&s)) {
            res->lost = true;
            break;
        }
        if (s.closing && s.out.len == 0)
            break;
        struct pollfd p[3] = {
            { .fd = fd, .events = POLLIN },
            { .fd = al_term_signal_fd(), .events = POLLIN },
            { .fd = s.stdin_open && !s.closing && s.out.len < OUT_ROOM ? 0 : -1,
              .events = POLLIN },
        };
        if (s.out.len > s.out_off)
            p[0].events |= POLLOUT;
        if (poll(p, 3, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents & POLLIN)
            take_signals(&s);
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR))
            take_stdin(&s);
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && !take_stream(&s))
            break;
    }
    *in = s.in;
    al_buf_fini(&s.out);
}

/* Opens a stream of job id: kind "attach", "exec" or "port" with its
 * extra query (already encoded).  0 with *fd and the first bytes in *in,
 * else the dial's error with why in *cause (caller frees). */
static int
open_stream(al_client_t *c, unsigned long long id, const char *kind, int task,
            bool tty, const char *extra, int *fd, al_buf_t *in, char **cause)
{
    int rows = 0, cols = 0;
    if (tty)
        al_term_size(&rows, &cols);
    char *path = al_xasprintf(
        "/v1/jobs/%llu/stream?kind=%s&task=%d&tty=%d&rows=%d&cols=%d%s", id,
        kind, task, tty ? 1 : 0, rows, cols, extra ? extra : "");
    int rc = al_stream_dial(&c->url, path, c->token, fd, in, cause);
    free(path);
    return rc;
}

/* GET /v1/jobs/ID, quietly; NULL when it fails. */
static json_t *
get_job(al_client_t *c, unsigned long long id)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu", id);
    al_http_resp_t r;
    json_t *j = NULL;
    if (al_http_request(&c->url, "GET", path, c->token, NULL, 0, 10000, -1, &r,
                        NULL) == 0) {
        if (r.status == 200)
            j = al_json_parse(r.body.data, r.body.len, NULL);
        al_http_resp_fini(&r);
    }
    return j;
}

static int
job_status(const json_t *j)
{
    int sig = (int)al_json_int(j, "signal", 0);
    return sig != 0 ? 128 + sig : (int)al_json_int(j, "exit_code", 0);
}

static bool
ended_state(const char *st)
{
    return strcmp(st, "completed") == 0 || strcmp(st, "failed") == 0 ||
           strcmp(st, "cancelled") == 0 || strcmp(st, "out_of_memory") == 0;
}

/* Waits until job id runs (true) or has ended (false, *last its last
 * view), showing its state and why it waits on one line of stderr; a
 * signal meanwhile cancels the job (false, *interrupted set). */
static bool
wait_start(al_client_t *c, unsigned long long id, json_t **last,
           bool *interrupted)
{
    bool shown = false, term = isatty(2);
    int delay_ms = 50;
    int64_t t0 = al_clock_mono_ms();
    char prev[512] = "";
    for (;;) {
        json_t *j = get_job(c, id);
        const char *st = al_json_str(j, "state", "");
        if (strcmp(st, "running") == 0 || ended_state(st)) {
            if (shown && term)
                fprintf(stderr, "\r\033[K");
            bool run = strcmp(st, "running") == 0;
            if (last != NULL && !run)
                *last = j;
            else
                json_decref(j);
            return run;
        }
        char line[512];
        const char *why = al_json_str(j, "reason", NULL);
        snprintf(line, sizeof line, "job %llu: %s%s%s", id,
                 j != NULL ? st : "(no answer)", why ? " - " : "",
                 why ? why : "");
        /* Only a wait worth seeing: nothing for a start within moments. */
        if (al_clock_mono_ms() - t0 >= 300 && strcmp(line, prev) != 0) {
            /* One line it is: cut to the terminal's width (a line that
             * wrapped would leave its first rows behind at the next
             * update, which clears only the row the cursor is on). */
            struct winsize ws;
            int width = ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1
                            ? ws.ws_col - 1
                            : 200;
            if (term)
                fprintf(stderr, "\r\033[K%.*s", width, line);
            else
                fprintf(stderr, "%s\n", line);
            snprintf(prev, sizeof prev, "%s", line);
            shown = true;
        }
        json_decref(j);
        /* Interrupted while it waits: the job is not wanted any more. */
        struct pollfd p = { .fd = al_term_signal_fd(), .events = POLLIN };
        if (poll(&p, 1, delay_ms) == 1) {
            if (shown && term)
                fprintf(stderr, "\r\033[K");
            char path[64];
            snprintf(path, sizeof path, "/v1/jobs/%llu/cancel", id);
            al_http_resp_t r;
            if (al_http_request(&c->url, "POST", path, c->token, NULL, 0, 10000,
                                -1, &r, NULL) == 0)
                al_http_resp_fini(&r);
            fprintf(stderr, "allot run: interrupted; job %llu cancelled\n", id);
            *interrupted = true;
            return false;
        }
        if (delay_ms < 500)
            delay_ms *= 2;
    }
}

/* Prints what job id wrote (task 0) and returns its status: a job of
 * `allot run` that ended before its stream opened.  The job's end may be
 * known a moment before the last of its output: read until it stops
 * growing. */
static int
print_ended(al_client_t *c, unsigned long long id, json_t *j)
{
    size_t off = 0;
    int quiet = 0;
    while (quiet < 3) {
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%llu/logs?task=0&offset=%zu", id,
                 off);
        al_http_resp_t r;
        size_t got = 0;
        if (al_http_request(&c->url, "GET", path, c->token, NULL, 0, 30000, -1,
                            &r, NULL) == 0) {
            if (r.status == 200) {
                al_stream_write_all(1, r.body.data, r.body.len);
                got = r.body.len;
            }
            al_http_resp_fini(&r);
        }
        off += got;
        quiet = got > 0 ? 0 : quiet + 1;
        if (got == 0) {
            struct timespec ts = { 0, 100 * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    int st = job_status(j);
    if (strcmp(al_json_str(j, "state", ""), "cancelled") == 0) {
        fprintf(stderr, "allot: job %llu was cancelled\n", id);
        st = st ? st : 1;
    }
    return st;
}

/* Waits up to ms for job id to end: its view then, or NULL. */
static json_t *
wait_ended(al_client_t *c, unsigned long long id, int ms)
{
    int64_t end = al_clock_mono_ms() + ms;
    for (;;) {
        json_t *j = get_job(c, id);
        if (j != NULL && ended_state(al_json_str(j, "state", "")))
            return j;
        json_decref(j);
        if (al_clock_mono_ms() > end)
            return NULL;
        struct timespec ts = { 0, 50 * 1000000L };
        nanosleep(&ts, NULL);
    }
}

/* Runs a session on job id until it ends: the exit status for the CLI. */
static int
run_session(al_client_t *c, unsigned long long id, const char *kind,
            const char *extra, bool tty, bool want_stdin, const char *who,
            bool fallback)
{
    int fd = -1;
    al_buf_t in = AL_BUF_INIT;
    char *cause = NULL;
    int rc = open_stream(c, id, kind, 0, tty, extra, &fd, &in, &cause);
    if (rc != 0) {
        al_buf_fini(&in);
        /* `allot run`: a job that ended before its stream opened. */
        json_t *j = fallback && rc == AL_EINVAL ? wait_ended(c, id, 0) : NULL;
        if (j != NULL) {
            free(cause);
            rc = print_ended(c, id, j);
            json_decref(j);
            return rc;
        }
        fprintf(stderr, "allot %s: %s\n", who, cause ? cause : "failed");
        free(cause);
        return rc == AL_EUNAVAIL ? EXIT_LOST : AL_EXIT_FAIL;
    }
    signals_on();
    if (tty && isatty(0))
        al_term_raw();
    result_t res = { .status = 0 };
    session_loop(fd, &in, tty, want_stdin, &res);
    close(fd);
    al_buf_fini(&in);
    al_term_restore();
    int status = res.status;
    if (res.detach) {
        fprintf(stderr,
                "\nallot: detached from job %llu; it keeps running "
                "(allot attach %llu)\n",
                id, id);
        status = 0;
    } else if (res.failed) {
        /* `allot run`'s job may have ended before its stream opened: the
         * node said so before the controller knew. */
        json_t *j = fallback ? wait_ended(c, id, 10000) : NULL;
        if (j != NULL) {
            status = print_ended(c, id, j);
        } else {
            fprintf(stderr, "allot %s: %s\n", who,
                    res.error ? res.error : "the session failed");
            status = AL_EXIT_FAIL;
        }
        json_decref(j);
    } else if (res.closed && !res.ended) {
        fprintf(stderr,
                "\nallot: the session was closed; job %llu keeps "
                "running (allot attach %llu)\n",
                id, id);
        status = 0;
    } else if (res.lost || !res.ended) {
        fprintf(stderr,
                "\nallot: lost the connection to the controller; job "
                "%llu keeps running (allot attach %llu)\n",
                id, id);
        status = EXIT_LOST;
    }
    free(res.error);
    return status;
}

/* Takes -i, -t, -it, -ti, --interactive, --tty out of argv[1..] (before
 * "--"), compacting it; returns the new argc. */
static int
take_it(int argc, char **argv, bool *i, bool *t)
{
    int k = 1;
    bool rest = false;
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a];
        if (!rest && strcmp(s, "--") == 0)
            rest = true;
        if (!rest && (strcmp(s, "-i") == 0 || strcmp(s, "--interactive") == 0))
            *i = true;
        else if (!rest && (strcmp(s, "-t") == 0 || strcmp(s, "--tty") == 0))
            *t = true;
        else if (!rest && (strcmp(s, "-it") == 0 || strcmp(s, "-ti") == 0))
            *i = *t = true;
        else
            argv[k++] = argv[a];
    }
    argv[k] = NULL;
    return k;
}

static int
bad(const char *cmd, const char *what)
{
    fprintf(stderr, "allot %s: %s\n", cmd, what);
    return AL_EXIT_USAGE;
}

static const char run_about[] =
    "Usage: allot run [-i] [-t] [submit options] -- COMMAND [ARGS...]\n"
    "\n"
    "Submits COMMAND as a job (class build unless --class says otherwise),\n"
    "waits for it to start (its state and why it waits on one line), then\n"
    "connects this terminal to it through the controller.\n"
    "  -i   send stdin to the job (its end too); without it the job's\n"
    "       stdin is empty\n"
    "  -t   give the job a terminal: keys go to it raw (Ctrl-C included),\n"
    "       its size follows this one; Ctrl-P Ctrl-Q detaches\n"
    "Exit status: the job's (128+N when signal N ended it).  The job keeps\n"
    "running after a detach or a lost connection: allot attach ID.\n"
    "\n"
    "Submit options (see allot submit --help):\n";

int
al_cli_run(int argc, char **argv)
{
    bool want_i = false, want_t = false;
    argc = take_it(argc, argv, &want_i, &want_t);
    al_submit_args_t a;
    memset(&a, 0, sizeof a);
    int first = argc;
    int rc =
        al_opt_parse_cmd(&al_script_cmd, NULL, &a, argc, argv, NULL, 0, &first);
    if (rc != 0 || a.help) {
        fputs(run_about, a.help ? stdout : stderr);
        al_opt_usage(a.help ? stdout : stderr, &al_script_cmd);
        return a.help ? AL_EXIT_OK : rc;
    }
    if (first >= argc)
        return bad("run", "no command given; put it after --");
    json_t *env = json_object();
    for (size_t i = 0; i < sizeof passed_env / sizeof passed_env[0]; i++) {
        const char *v = getenv(passed_env[i]);
        if (v != NULL)
            json_object_set_new(env, passed_env[i], json_string(v));
    }
    const char *term = getenv("TERM");
    if (want_t && term != NULL)
        json_object_set_new(env, "TERM", json_string(term));
    if (!al_script_env(env, first, argv, NULL)) {
        json_decref(env);
        return AL_EXIT_USAGE;
    }
    /* What makes the agent keep the job's terminal or pipes. */
    json_object_set_new(env, "ALLOT_SESSION",
                        json_string(want_t ? "tty" : "pipes"));
    bool utf8 = true;
    json_t *body = json_object();
    json_object_set_new(body, "env", env);
    json_t *cmd = json_array();
    for (int i = first; i < argc; i++)
        utf8 = json_array_append_new(cmd, json_string(argv[i])) == 0 && utf8;
    json_object_set_new(body, "command", cmd);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != NULL)
        utf8 = json_object_set_new(body, "cwd", json_string(cwd)) == 0 && utf8;
    if (a.f.cls == NULL)
        a.f.cls = "build";
    const char *err = al_script_resources(body, &a.f);
    if (err == NULL && a.queue != NULL)
        utf8 = json_object_set_new(body, "queue", json_string(a.queue)) == 0 &&
               utf8;
    if (err == NULL && a.name != NULL)
        utf8 =
            json_object_set_new(body, "name", json_string(a.name)) == 0 && utf8;
    if (err == NULL && !utf8)
        err = "the command, --name, --queue and the current directory must "
              "be UTF-8 text";
    if (err == NULL && a.hold)
        err = "--hold makes no sense for a session";
    if (err == NULL && (a.f.array != NULL || a.sweepopt != NULL))
        err = "a session is one job: --array and --sweep make many (allot "
              "submit takes them)";
    al_client_t c;
    if (err != NULL || (rc = al_client_init(&c, a.server, a.token)) != 0) {
        json_decref(body);
        return err != NULL ? bad("run", err) : rc;
    }
    json_t *out = NULL;
    rc = al_client_call(&c, "POST", "/v1/jobs", body, &out, NULL, NULL);
    json_decref(body);
    if (rc != 0) {
        al_client_fini(&c);
        return rc;
    }
    unsigned long long id = (unsigned long long)al_json_int(out, "id", 0);
    json_decref(out);
    json_t *last = NULL;
    bool interrupted = false;
    signals_on();
    if (!wait_start(&c, id, &last, &interrupted)) {
        rc = interrupted ? 130 : print_ended(&c, id, last);
        json_decref(last);
    } else {
        rc = run_session(&c, id, "attach", NULL, want_t, want_i, "run", true);
    }
    al_client_fini(&c);
    return rc;
}

/* ------------------------------------------------------------------ */
/* attach, exec                                                       */

typedef struct sess_args {
    const char *server, *token;
    bool help;
} sess_args_t;

static const al_opt_t sess_opts[] = {
    AL_CLI_CONN_OPTS(sess_args_t),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_attach_cmd = {
    .name = "attach",
    .args = "ID",
    .opts = sess_opts,
    .about = "Connects this terminal to a job started by allot run: what it "
             "wrote since the last detach first, then live.  Ctrl-P Ctrl-Q "
             "detaches again.\n",
};

const al_opt_cmd_t al_cli_exec_cmd = {
    .name = "exec",
    .args = "ID [-i] [-t] -- COMMAND [ARGS...]",
    .opts = sess_opts,
    .about = "Runs COMMAND inside a running job's allocation: on its node, "
             "with its environment (CUDA_VISIBLE_DEVICES included), its "
             "working directory and its user.  Only the job's owner.  -i "
             "sends stdin (without it, its stdin is empty), -t gives it a "
             "terminal.  ID is a job's, or an array element's ID_INDEX.\n",
};

const al_opt_cmd_t al_cli_port_forward_cmd = {
    .name = "port-forward",
    .args = "ID [LOCAL:]REMOTE",
    .opts = sess_opts,
    .about = "Listens on 127.0.0.1:LOCAL (REMOTE when not given; 0 picks a "
             "free port) and forwards each connection, through the "
             "controller, to 127.0.0.1:REMOTE on the job's node.  Runs "
             "until interrupted.\n",
};

static bool
digits(const char *s, size_t n)
{
    if (n == 0 || n > 19)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* Whether s names a job: its ID, or an array's element ID_INDEX; when not
 * (or when it is missing), says so.  rc != 0: the option parser has said
 * what is wrong already. */
static bool
target_ok(const char *who, int rc, int npos, int want, const char *s)
{
    if (rc != 0)
        return false;
    if (npos < 1 || s == NULL) {
        fprintf(stderr,
                "allot %s: which job? give its id (allot ls lists "
                "them)\n",
                who);
        return false;
    }
    if (npos > want) {
        fprintf(stderr, "allot %s: too many arguments\n", who);
        return false;
    }
    const char *us = strchr(s, '_');
    bool ok = us != NULL ? digits(s, (size_t)(us - s)) &&
                               digits(us + 1, strlen(us + 1))
                         : digits(s, strlen(s)) && strtoull(s, NULL, 10) > 0;
    if (!ok)
        fprintf(stderr,
                "allot %s: '%s' is not a job id (a number, or an array's "
                "ID_INDEX)\n",
                who, s);
    return ok;
}

/* The id of the job s names (target_ok() said it is one): an element's
 * ID_INDEX is asked of the controller.  0 after saying why not. */
static unsigned long long
target_id(al_client_t *c, const char *s)
{
    if (strchr(s, '_') == NULL)
        return strtoull(s, NULL, 10);
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s", s);
    json_t *j = NULL;
    if (al_client_call(c, "GET", path, NULL, &j, NULL, NULL) != 0)
        return 0;
    unsigned long long id = (unsigned long long)al_json_int(j, "id", 0);
    json_decref(j);
    return id;
}

int
al_cli_attach(int argc, char **argv)
{
    sess_args_t a = { 0 };
    char *pos[2];
    int npos;
    int rc = al_opt_parse_cmd(&al_cli_attach_cmd, NULL, &a, argc, argv, pos, 2,
                              &npos);
    if (a.help || !target_ok("attach", rc, npos, 1, npos > 0 ? pos[0] : NULL)) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_attach_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    unsigned long long id = target_id(&c, pos[0]);
    if (id == 0) {
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    /* A terminal's session wants this terminal raw; a pipes' session
     * takes stdin too. */
    bool tty = isatty(0) != 0;
    rc = run_session(&c, id, "attach", NULL, tty, true, "attach", false);
    al_client_fini(&c);
    return rc;
}

int
al_cli_exec(int argc, char **argv)
{
    bool want_i = false, want_t = false;
    argc = take_it(argc, argv, &want_i, &want_t);
    sess_args_t a = { 0 };
    char *pos[1];
    int first = argc;
    int dd = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            dd = i;
            break;
        }
    int npos;
    int rc =
        al_opt_parse_cmd(&al_cli_exec_cmd, NULL, &a, dd, argv, pos, 1, &npos);
    first = dd + 1;
    bool ok =
        a.help || target_ok("exec", rc, npos, 1, npos > 0 ? pos[0] : NULL);
    if (ok && !a.help && first >= argc) {
        fprintf(stderr, "allot exec: no command given; put it after --\n");
        ok = false;
    }
    if (a.help || !ok) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_exec_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    json_t *cmd = json_array();
    for (int i = first; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    char *text = al_json_dump(cmd);
    json_decref(cmd);
    al_buf_t q = AL_BUF_INIT;
    al_buf_puts(&q, "&cmd=");
    al_stream_urlenc(&q, text);
    free(text);
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0) {
        al_buf_fini(&q);
        return rc;
    }
    unsigned long long id = target_id(&c, pos[0]);
    if (id == 0) {
        al_buf_fini(&q);
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    rc = run_session(&c, id, "exec", al_buf_cstr(&q), want_t, want_i, "exec",
                     false);
    al_buf_fini(&q);
    al_client_fini(&c);
    return rc;
}

/* ------------------------------------------------------------------ */
/* port-forward                                                       */

typedef struct fwd {
    al_client_t *c;
    unsigned long long id;
    int remote;
    int conn;
} fwd_t;

/* One forwarded connection: bytes both ways until either side ends. */
static void *
forward_one(void *arg)
{
    fwd_t *f = arg;
    char q[32];
    snprintf(q, sizeof q, "&port=%d", f->remote);
    int fd = -1;
    al_buf_t in = AL_BUF_INIT, out = AL_BUF_INIT;
    char *cause = NULL;
    if (open_stream(f->c, f->id, "port", 0, false, q, &fd, &in, &cause) != 0) {
        fprintf(stderr, "allot port-forward: %s\n", cause ? cause : "failed");
        free(cause);
        close(f->conn);
        free(f);
        al_buf_fini(&in);
        return NULL;
    }
    bool local_open = true, done = false;
    while (!done) {
        size_t off = 0;
        while (!done) {
            al_frame_t fr;
            size_t used;
            int rc =
                al_stream_parse(in.data + off, in.len - off, &fr, &used, NULL);
            if (rc < 0)
                done = true;
            if (rc <= 0)
                break;
            off += used;
            if (fr.type == AL_FR_STDOUT)
                al_stream_write_all(f->conn, fr.data, fr.len);
            else if (fr.type == AL_FR_ERROR)
                fprintf(stderr, "allot port-forward: %.*s\n", (int)fr.len,
                        (const char *)fr.data);
            else if (fr.type == AL_FR_CLOSE)
                done = true;
        }
        if (off > 0) {
            memmove(in.data, in.data + off, in.len - off);
            in.len -= off;
        }
        if (done)
            break;
        struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
                               { .fd = local_open ? f->conn : -1,
                                 .events = POLLIN } };
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            char buf[65536];
            ssize_t n = recv(f->conn, buf, sizeof buf, 0);
            al_buf_clear(&out);
            if (n <= 0) {
                local_open = false;
                al_stream_put(&out, AL_FR_EOF, NULL, 0);
            } else {
                al_stream_put(&out, AL_FR_STDIN, buf, (size_t)n);
            }
            if (al_stream_write_all(fd, out.data, out.len) != 0)
                break;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            al_buf_reserve(&in, in.len + 65536);
            ssize_t n = recv(fd, in.data + in.len, 65536, 0);
            if (n <= 0)
                break;
            in.len += (size_t)n;
        }
    }
    close(fd);
    close(f->conn);
    al_buf_fini(&in);
    al_buf_fini(&out);
    free(f);
    return NULL;
}

int
al_cli_port_forward(int argc, char **argv)
{
    sess_args_t a = { 0 };
    char *pos[2];
    int npos;
    int rc = al_opt_parse_cmd(&al_cli_port_forward_cmd, NULL, &a, argc, argv,
                              pos, 2, &npos);
    bool ok = a.help ||
              target_ok("port-forward", rc, npos, 2, npos > 0 ? pos[0] : NULL);
    if (ok && !a.help && npos < 2) {
        fprintf(stderr, "allot port-forward: which port? give "
                        "[LOCAL:]REMOTE\n");
        ok = false;
    }
    if (a.help || !ok) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_port_forward_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    long local = -1, remote;
    char *end;
    const char *colon = strchr(pos[1], ':');
    if (colon != NULL) {
        local = strtol(pos[1], &end, 10);
        if (end != colon || local < 0 || local > 65535)
            return bad("port-forward", "LOCAL must be a port, 0..65535");
        remote = strtol(colon + 1, &end, 10);
    } else {
        remote = strtol(pos[1], &end, 10);
    }
    if (*end != '\0' || remote < 1 || remote > 65535)
        return bad("port-forward", "REMOTE must be a port, 1..65535");
    if (local < 0)
        local = remote;
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    unsigned long long id = target_id(&c, pos[0]);
    if (id == 0) {
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    /* The job must run: said now rather than at the first connection
     * (the controller's word when it cannot be seen). */
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu", id);
    json_t *j = NULL;
    if (al_client_call(&c, "GET", path, NULL, &j, NULL, NULL) != 0) {
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    const char *st = al_json_str(j, "state", "");
    bool array = json_object_get(j, "array") != NULL;
    if (array || strcmp(st, "running") != 0) {
        if (array)
            fprintf(stderr,
                    "allot port-forward: job %llu is an array: name one "
                    "of its elements, %llu_INDEX\n",
                    id, id);
        else
            fprintf(stderr, "allot port-forward: job %llu is %s\n", id, st);
        json_decref(j);
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    json_decref(j);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)local);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(ls, 64) != 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &sl) != 0) {
        fprintf(stderr,
                "allot port-forward: cannot listen on 127.0.0.1:%ld: "
                "%s\n",
                local, strerror(errno));
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    printf("Forwarding 127.0.0.1:%d -> job %llu port %ld\n", ntohs(sa.sin_port),
           id, remote);
    fflush(stdout);
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        int conn = accept(ls, NULL, NULL);
        if (conn < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fwd_t *f = al_xmalloc(sizeof *f);
        *f = (fwd_t){ .c = &c, .id = id, .remote = (int)remote, .conn = conn };
        pthread_t th;
        if (pthread_create(&th, NULL, forward_one, f) != 0) {
            close(conn);
            free(f);
            continue;
        }
        pthread_detach(th);
    }
    close(ls);
    al_client_fini(&c);
    return AL_EXIT_FAIL;
}
