/*
 * step.c -- what srun and salloc share: a job's request from Slurm's
 * options, the wait for its start, and a step's tasks run through the
 * controller.  A step through the controller is one stream per task
 * (src/common/stream.h): an attach to a task of a job that srun submitted,
 * or a command beside a task of salloc's allocation (the stream kind
 * `allot exec` opens).  Their output goes to ours (after "N: " with -l),
 * our stdin goes to every task (task 0 alone with a terminal), a signal
 * that srun gets goes to every task, and the result is the highest exit
 * status among the tasks, as Slurm's srun gives it.
 *
 * May call: slurm.c (the API), script.c (Slurm's options), term.c (the
 * local terminal, the signals' self-pipe), src/common (stream, JSON,
 * hostlist).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hostlist.h"
#include "json.h"
#include "script.h"
#include "slurm_int.h"
#include "stream.h"
#include "term.h"
#include "xmalloc.h"

extern char **environ;

/* Bytes waiting for a stream before stdin is left unread. */
#define OUT_ROOM ((size_t)256 * 1024)

void
al__sl_signals_on(bool chld)
{
    static const int sigs[] = { SIGINT,  SIGTERM,  SIGHUP, SIGUSR1,
                                SIGUSR2, SIGWINCH, SIGCHLD };
    al_term_signals_on(sigs, sizeof sigs / sizeof sigs[0] - (chld ? 0 : 1));
}

int
al__sl_signal_fd(void)
{
    return al_term_signal_fd();
}

/* ---- the job's request ------------------------------------------ */

json_t *
al__sl_export_env(const char *prog, const char *spec)
{
    json_t *env = json_object();
    bool all = spec == NULL;
    json_t *words = spec ? al__sl_split(spec) : json_array();
    for (size_t i = 0; i < json_array_size(words); i++) {
        const char *w = json_string_value(json_array_get(words, i));
        if (strcmp(w, "ALL") == 0)
            all = true;
    }
    if (all)
        for (char **e = environ; *e != NULL; e++) {
            const char *eq = strchr(*e, '=');
            if (eq == NULL || strncmp(*e, "ALLOT_", 6) == 0)
                continue;
            char *k = al_xstrndup(*e, (size_t)(eq - *e));
            json_object_set_new(env, k,
                                json_string(eq + 1)); /* non-UTF-8: left out */
            free(k);
        }
    for (size_t i = 0; i < json_array_size(words); i++) {
        const char *w = json_string_value(json_array_get(words, i));
        if (strcmp(w, "ALL") == 0 || strcmp(w, "NONE") == 0)
            continue;
        const char *eq = strchr(w, '=');
        char *k = eq ? al_xstrndup(w, (size_t)(eq - w)) : al_xstrdup(w);
        const char *v = eq ? eq + 1 : getenv(k);
        if (k[0] == '\0' || strchr(k, '=') != NULL) {
            fprintf(stderr, "%s: error: --export: bad variable '%s'\n", prog,
                    w);
            free(k);
            json_decref(env);
            json_decref(words);
            return NULL;
        }
        if (v != NULL)
            json_object_set_new(env, k, json_string(v));
        free(k);
    }
    json_decref(words);
    return env;
}

int
al__sl_check(const char *prog, const al_slurm_req_t *o, const char **cls)
{
    *cls = NULL;
    /* How each says that an allocation was refused. */
    const char *failed = strcmp(prog, "salloc") == 0
                             ? "Job submit/allocate failed"
                             : "Unable to allocate resources";
    char feat[512];
    if (o->constraint != NULL &&
        al__sl_features(o->constraint, feat, sizeof feat) == NULL) {
        fprintf(stderr,
                "%s: error: -C/--constraint %s: allot's node labels take "
                "features joined by '&' only\n"
                "%s: error: %s: Invalid feature specification\n",
                prog, o->constraint, prog, failed);
        return AL_EXIT_FAIL;
    }
    if (al__sl_partition_check(prog, o->partition) != 0)
        return AL_EXIT_FAIL;
    /* sbatch's alone: srun and salloc do not know them. */
    if (o->array != NULL || o->wrap != NULL || o->parsable) {
        fprintf(stderr,
                "%s: unrecognized option '--%s'\n"
                "Try \"%s --help\" for more information\n",
                prog,
                o->array  ? "array"
                : o->wrap ? "wrap"
                          : "parsable",
                prog);
        return 255;
    }
    static const struct {
        const char *name;
        size_t off;
    } not_here[] = {
        { "--signal", offsetof(al_slurm_req_t, signal) },
        { "-o/--output", offsetof(al_slurm_req_t, output) },
        { "-e/--error", offsetof(al_slurm_req_t, error) },
        { "--open-mode", offsetof(al_slurm_req_t, open_mode) },
    };
    for (size_t i = 0; i < sizeof not_here / sizeof not_here[0]; i++)
        if (*(const char *const *)((const char *)o + not_here[i].off)) {
            fprintf(stderr, "%s: error: %s is not available in %s on allot\n",
                    prog, not_here[i].name, prog);
            return AL_EXIT_FAIL;
        }
    if (o->wait || o->hold || o->test_only) {
        fprintf(stderr,
                "%s: error: -W, -H and --test-only are not available in %s "
                "on allot\n",
                prog, prog);
        return AL_EXIT_FAIL;
    }
    if (o->qos != NULL && strcmp(o->qos, "normal") != 0) {
        if (strcmp(o->qos, "train") != 0 && strcmp(o->qos, "build") != 0 &&
            strcmp(o->qos, "inference") != 0) {
            fprintf(stderr, "%s: error: %s: Invalid qos specification\n", prog,
                    failed);
            return AL_EXIT_FAIL;
        }
        *cls = o->qos;
    }
    return -1;
}

int
al__sl_args(const char *prog, const char *usage, int argc, char **argv,
            al_slurm_req_t *o, int *stop, const char **cls)
{
    for (int i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "--usage") == 0) {
            printf("Usage: %s %s\n"
                   "allot's %s takes Slurm's options; docs/slurm.md says "
                   "which differ and which are refused.\n",
                   prog, usage, prog);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            printf("slurm 22.05 (allot)\n");
            return 0;
        }
    }
    al_script_slurm_init(o);
    o->prog = prog;
    if (al_script_sbatch_words(argv + 1, argc - 1, o, NULL, stop) > 0) {
        if (o->refused == 0)
            fprintf(stderr, "Try \"%s --help\" for more information\n", prog);
        return o->refused > 0 ? AL_EXIT_FAIL : 255;
    }
    (*stop)++; /* index in argv */
    return al__sl_check(prog, o, cls);
}

char *
al__sl_dirs(const char *to, char *cwd, size_t ncwd, char *host, size_t nhost)
{
    if (getcwd(cwd, ncwd) == NULL)
        snprintf(cwd, ncwd, "/");
    if (gethostname(host, nhost) != 0)
        snprintf(host, nhost, "localhost");
    host[nhost - 1] = '\0';
    return to == NULL     ? al_xstrdup(cwd)
           : to[0] == '/' ? al_xstrdup(to)
                          : al_xasprintf("%s/%s", cwd, to);
}

json_t *
al__sl_body(const char *prog, const al_slurm_req_t *o, json_t *env,
            const char *name, json_t *command)
{
    const char *cls = NULL;
    al__sl_check(prog, o, &cls); /* checked before: the class alone */
    al_submit_args_t a;
    memset(&a, 0, sizeof a);
    char room[AL_SCRIPT_ROOM];
    json_t *body = json_object();
    const char *err = NULL;
    if (al_script_slurm_apply(o, &a, room, prog) != 0)
        err = "";
    /* Interactive work: allot's build class unless -q says otherwise. */
    a.f.cls = cls != NULL ? cls : "build";
    char feats[512];
    if (o->partition != NULL && strcmp(o->partition, AL_SLURM_PARTITION) != 0)
        a.f.pool = o->partition;
    if (o->constraint != NULL)
        a.f.constraint = al__sl_features(o->constraint, feats, sizeof feats);
    if (err == NULL)
        err = al_script_resources(body, &a.f);
    if (err != NULL) {
        if (err[0] != '\0')
            fprintf(stderr, "%s: error: %s\n", prog, err);
        json_decref(env);
        json_decref(command);
        json_decref(body);
        return NULL;
    }
    char cwd[4096], host[256];
    char *dir = al__sl_dirs(o->chdir, cwd, sizeof cwd, host, sizeof host);
    json_object_set_new(env, "ALLOT_SLURM", json_string("1"));
    json_object_set_new(env, "SLURM_JOB_NAME", json_string(name));
    json_object_set_new(env, "SLURM_JOB_ACCOUNT",
                        json_string(o->account ? o->account : "default"));
    json_object_set_new(
        env, "SLURM_JOB_PARTITION",
        json_string(o->partition ? o->partition : AL_SLURM_PARTITION));
    json_object_set_new(env, "SLURM_CLUSTER_NAME",
                        json_string(AL_SLURM_PARTITION));
    json_object_set_new(env, "SLURM_SUBMIT_DIR", json_string(cwd));
    json_object_set_new(env, "SLURM_SUBMIT_HOST", json_string(host));
    if (o->cpus != NULL)
        json_object_set_new(env, "SLURM_CPUS_PER_TASK", json_string(o->cpus));
    json_object_set_new(body, "env", env);
    json_object_set_new(body, "command", command);
    bool utf8 = json_object_set_new(body, "cwd", json_string(dir)) == 0;
    utf8 = json_object_set_new(body, "name", json_string(name)) == 0 && utf8;
    free(dir);
    if (o->account != NULL)
        utf8 =
            json_object_set_new(body, "queue", json_string(o->account)) == 0 &&
            utf8;
    if (!utf8) {
        fprintf(stderr,
                "%s: error: the command, -J, -A and the directory must be "
                "UTF-8 text\n",
                prog);
        json_decref(body);
        return NULL;
    }
    return body;
}

json_t *
al__sl_wait_start(al_client_t *c, const char *prog, long long id, bool ended_ok)
{
    bool said = false;
    int delay_ms = 20;
    int64_t t0 = al_clock_mono_ms();
    for (;;) {
        int st;
        al_sl_id_t jid = { id, -1 };
        json_t *j = al__sl_job(c, &jid, &st);
        const char *s = al_json_str(j, "state", "");
        if (strcmp(s, "running") == 0) {
            if (said)
                fprintf(stderr, "%s: job %lld has been allocated resources\n",
                        prog, id);
            return j;
        }
        if (ended_ok &&
            (strcmp(s, "completed") == 0 || strcmp(s, "failed") == 0 ||
             strcmp(s, "out_of_memory") == 0))
            return j; /* it ran between two looks */
        if (j == NULL || strcmp(s, "completed") == 0 ||
            strcmp(s, "failed") == 0 || strcmp(s, "cancelled") == 0 ||
            strcmp(s, "out_of_memory") == 0) {
            fprintf(stderr,
                    "%s: error: Job allocation %lld has been revoked%s%s\n",
                    prog, id, j != NULL ? ": " : "", j != NULL ? s : "");
            json_decref(j);
            return NULL;
        }
        if (!said && al_clock_mono_ms() - t0 >= 1000) {
            const char *why = al__sl_reason(j);
            if (strcmp(prog, "salloc") == 0)
                fprintf(stderr, "salloc: Pending job allocation %lld\n", id);
            fprintf(stderr,
                    "%s: job %lld queued and waiting for resources%s%s\n", prog,
                    id, strcmp(why, "None") != 0 ? ": " : "",
                    strcmp(why, "None") != 0 ? why : "");
            said = true;
        }
        json_decref(j);
        struct pollfd p = { .fd = al_term_signal_fd(), .events = POLLIN };
        if (poll(&p, al_term_signal_fd() >= 0 ? 1 : 0, delay_ms) == 1) {
            unsigned char b;
            ssize_t r = read(al_term_signal_fd(), &b, 1);
            if (r == 1 && b == SIGWINCH)
                continue;
            al__sl_post(c, &jid, "cancel");
            fprintf(stderr, "%s: Job allocation %lld has been revoked\n", prog,
                    id);
            return NULL;
        }
        if (delay_ms < 500)
            delay_ms *= 2;
    }
}

json_t *
al__sl_submit_wait(al_client_t *c, const char *prog, json_t *body,
                   const char *failed, bool ended_ok, long long *id)
{
    if (al__sl_connect(c) != 0) {
        json_decref(body);
        return NULL;
    }
    json_t *res = NULL;
    int rc = al_client_call(c, "POST", "/v1/jobs", body, &res, NULL, NULL);
    json_decref(body);
    if (rc != 0) {
        fprintf(stderr, "%s: error: %s\n", prog, failed);
        al_client_fini(c);
        return NULL;
    }
    *id = (long long)al_json_int(res, "id", 0);
    json_decref(res);
    al__sl_signals_on(false);
    json_t *job = al__sl_wait_start(c, prog, *id, ended_ok);
    if (job == NULL)
        al_client_fini(c);
    return job;
}

/* ---- a step's streams ------------------------------------------- */

typedef struct tstream {
    int fd;       /* -1 once closed */
    int task;     /* the job's task it is beside */
    int rank;     /* the step's task */
    al_buf_t in;  /* from the stream, not yet parsed */
    al_buf_t out; /* for the stream, not yet sent */
    size_t out_off;
    bool at_line[2]; /* -l: the next byte of stdout, stderr starts a line */
    bool ended;      /* an EXIT came */
    int code, sig;
    char *error; /* an ERROR's text */
} tstream_t;

/* Writes what task rank wrote to fd, each line after "RANK: " with -l. */
static void
put_out(tstream_t *t, int fd, const unsigned char *p, size_t n, bool label)
{
    if (!label) {
        al_stream_write_all(fd, p, n);
        return;
    }
    al_buf_t b = AL_BUF_INIT;
    bool *at = &t->at_line[fd == 2];
    for (size_t i = 0; i < n; i++) {
        if (*at)
            al_buf_printf(&b, "%d: ", t->rank);
        al_buf_putc(&b, (char)p[i]);
        *at = p[i] == '\n';
    }
    al_stream_write_all(fd, b.data, b.len);
    al_buf_fini(&b);
}

/* Takes the whole frames that came on t; false once its stream is over. */
static bool
take_frames(tstream_t *t, const char *prog, bool label)
{
    size_t off = 0;
    bool go_on = true;
    while (go_on) {
        al_frame_t f;
        size_t used;
        char *cause = NULL;
        int rc = al_stream_parse(t->in.data + off, t->in.len - off, &f, &used,
                                 &cause);
        if (rc < 0) {
            free(t->error);
            t->error = cause;
            return false;
        }
        if (rc == 0)
            break;
        off += used;
        if (f.type == AL_FR_STDOUT || f.type == AL_FR_STDERR) {
            put_out(t, f.type == AL_FR_STDOUT ? 1 : 2, f.data, f.len, label);
        } else if (f.type == AL_FR_NOTICE) {
            fprintf(stderr, "%s%s: %.*s%s", al_term_is_raw() ? "\r\n" : "",
                    prog, (int)f.len, (const char *)f.data,
                    al_term_is_raw() ? "\r\n" : "\n");
        } else if (f.type == AL_FR_ERROR) {
            free(t->error);
            t->error = al_xstrndup((const char *)f.data, f.len);
        } else if (f.type == AL_FR_EXIT) {
            al_stream_exit_of(&f, &t->code, &t->sig);
            t->ended = true;
        } else if (f.type == AL_FR_CLOSE) {
            go_on = false;
        }
    }
    if (off > 0) {
        memmove(t->in.data, t->in.data + off, t->in.len - off);
        t->in.len -= off;
    }
    return go_on;
}

static void
close_stream(tstream_t *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}

/* Sends what waits for t; false when its connection failed. */
static bool
send_out(tstream_t *t)
{
    while (t->out.len > t->out_off) {
        ssize_t n = send(t->fd, t->out.data + t->out_off,
                         t->out.len - t->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n < 0)
            return false;
        t->out_off += (size_t)n;
    }
    if (t->out_off == t->out.len)
        t->out.len = t->out_off = 0;
    return true;
}

/* Opens t's stream: an attach (cmd NULL) or a command beside the task. */
static int
open_one(al_client_t *c, long long id, tstream_t *t, const json_t *cmd,
         bool tty)
{
    int rows = 0, cols = 0;
    if (tty)
        al_term_size(&rows, &cols);
    al_buf_t path = AL_BUF_INIT;
    al_buf_printf(
        &path, "/v1/jobs/%lld/stream?kind=%s&task=%d&tty=%d&rows=%d&cols=%d",
        id, cmd != NULL ? "exec" : "attach", t->task, tty ? 1 : 0, rows, cols);
    if (cmd != NULL) {
        char *text = al_json_dump(cmd);
        al_buf_puts(&path, "&cmd=");
        al_stream_urlenc(&path, text);
        free(text);
    }
    char *cause = NULL;
    int rc = al_stream_dial(&c->url, al_buf_cstr(&path), c->token, &t->fd,
                            &t->in, &cause);
    al_buf_fini(&path);
    if (rc != 0) {
        t->fd = -1;
        t->error = cause != NULL ? cause : al_xstrdup("cannot connect");
    }
    return rc;
}

/* What the signals that came do: a resize goes to task 0's terminal;
 * another signal goes to every task (with a terminal, its keys do that:
 * a signal sent to srun itself ends the session's tasks all the same). */
static void
take_signals(tstream_t *v, int n, bool tty)
{
    unsigned char sigs[16];
    ssize_t got = read(al_term_signal_fd(), sigs, sizeof sigs);
    for (ssize_t i = 0; i < got; i++) {
        if (sigs[i] == SIGWINCH) {
            int rows, cols;
            al_term_size(&rows, &cols);
            if (tty && rows > 0 && v[0].fd >= 0)
                al_stream_put_resize(&v[0].out, rows, cols);
            continue;
        }
        for (int k = 0; k < n; k++)
            if (v[k].fd >= 0)
                al_stream_put(&v[k].out, AL_FR_SIGNAL, &sigs[i], 1);
    }
}

/* Our stdin to every task's stream (task 0's alone with a terminal);
 * false at its end. */
static bool
take_stdin(tstream_t *v, int n, bool tty)
{
    char buf[65536];
    ssize_t got = read(0, buf, sizeof buf);
    if (got < 0 && errno == EINTR)
        return true;
    for (int k = 0; k < (tty ? 1 : n); k++) {
        if (v[k].fd < 0)
            continue;
        if (got > 0)
            al_stream_put(&v[k].out, AL_FR_STDIN, buf, (size_t)got);
        else if (!tty)
            al_stream_put(&v[k].out, AL_FR_EOF, NULL, 0);
    }
    return got > 0;
}

/* The loop over the open streams, until every one has ended. */
static void
step_loop(tstream_t *v, int n, int flags, const char *prog)
{
    bool tty = flags & AL_SL_STEP_TTY, label = flags & AL_SL_STEP_LABEL;
    bool quiet = flags & AL_SL_STEP_QUIET;
    bool stdin_open = !quiet;
    struct pollfd *p = al_xcalloc((size_t)n + 2, sizeof *p);
    for (;;) {
        int open = 0;
        size_t waiting = 0;
        for (int k = 0; k < n; k++) {
            if (v[k].fd >= 0 &&
                (!take_frames(&v[k], prog, label) || !send_out(&v[k])))
                close_stream(&v[k]);
            open += v[k].fd >= 0;
            waiting += v[k].fd >= 0 ? v[k].out.len - v[k].out_off : 0;
        }
        if (open == 0)
            break;
        for (int k = 0; k < n; k++) {
            p[k].fd = v[k].fd;
            p[k].events = POLLIN;
            if (v[k].fd >= 0 && v[k].out.len > v[k].out_off)
                p[k].events |= POLLOUT;
            p[k].revents = 0;
        }
        p[n] = (struct pollfd){ .fd = quiet ? -1 : al_term_signal_fd(),
                                .events = POLLIN };
        p[n + 1] =
            (struct pollfd){ .fd = stdin_open && waiting < OUT_ROOM ? 0 : -1,
                             .events = POLLIN };
        if (poll(p, (nfds_t)n + 2, -1) < 0 && errno != EINTR)
            break;
        if (p[n].revents & POLLIN)
            take_signals(v, n, tty);
        if (p[n + 1].revents & (POLLIN | POLLHUP | POLLERR))
            stdin_open = take_stdin(v, n, tty);
        for (int k = 0; k < n; k++) {
            if (v[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            al_buf_reserve(&v[k].in, v[k].in.len + 65536);
            ssize_t got = recv(v[k].fd, v[k].in.data + v[k].in.len, 65536, 0);
            if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
                take_frames(&v[k], prog, label);
                close_stream(&v[k]);
            } else if (got > 0) {
                v[k].in.len += (size_t)got;
            }
        }
    }
    free(p);
}

/* The job's view once it has ended (NULL after ms). */
static json_t *
wait_ended(al_client_t *c, long long id, int ms)
{
    int64_t end = al_clock_mono_ms() + ms;
    for (;;) {
        int st;
        al_sl_id_t jid = { id, -1 };
        json_t *j = al__sl_job(c, &jid, &st);
        const char *s = al_json_str(j, "state", "");
        if (strcmp(s, "completed") == 0 || strcmp(s, "failed") == 0 ||
            strcmp(s, "cancelled") == 0 || strcmp(s, "out_of_memory") == 0)
            return j;
        json_decref(j);
        if (j == NULL || al_clock_mono_ms() > end)
            return NULL;
        struct timespec ts = { 0, 50 * 1000000L };
        nanosleep(&ts, NULL);
    }
}

/* A task that ended before its attach: what it wrote (its log), and its
 * end from the job's placement. */
static void
ended_task(al_client_t *c, long long id, tstream_t *t, bool label)
{
    json_t *j = wait_ended(c, id, 30000);
    if (j == NULL)
        return;
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%lld/logs?task=%d", id, t->task);
    al_http_resp_t r;
    if (al_http_request(&c->url, "GET", path, c->token, NULL, 0, 30000, -1, &r,
                        NULL) == 0) {
        if (r.status == 200)
            put_out(t, 1, (const unsigned char *)r.body.data, r.body.len,
                    label);
        al_http_resp_fini(&r);
    }
    json_t *pl =
        json_array_get(json_object_get(j, "placement"), (size_t)t->task);
    if (pl != NULL) {
        t->code = (int)al_json_int(pl, "exit_code", 0);
        t->sig = (int)al_json_int(pl, "signal", 0);
        t->ended = true;
        free(t->error);
        t->error = NULL;
    }
    json_decref(j);
}

int
al__sl_step(al_client_t *c, const char *prog, const json_t *job, int n,
            json_t *const *cmds, int flags)
{
    bool tty = flags & AL_SL_STEP_TTY, label = flags & AL_SL_STEP_LABEL;
    long long id = (long long)al_json_int(job, "id", 0);
    int ntasks = (int)al_json_int(job, "tasks", 1);
    if (ntasks < 1)
        ntasks = 1;
    tstream_t *v = al_xcalloc((size_t)n, sizeof *v);
    bool running = strcmp(al_json_str(job, "state", ""), "running") == 0;
    al__sl_signals_on(false);
    for (int k = 0; k < n; k++) {
        v[k] = (tstream_t){ .fd = -1, .task = k % ntasks, .rank = k };
        v[k].at_line[0] = v[k].at_line[1] = true;
        al_buf_init(&v[k].in);
        al_buf_init(&v[k].out);
        if (running)
            open_one(c, id, &v[k], cmds != NULL ? cmds[k] : NULL,
                     tty && k == 0);
    }
    if (tty && isatty(0))
        al_term_raw();
    if (tty) {
        int rows, cols;
        al_term_size(&rows, &cols);
        if (rows > 0 && v[0].fd >= 0)
            al_stream_put_resize(&v[0].out, rows, cols);
    }
    step_loop(v, n, flags, prog);
    al_term_restore();
    int status = 0;
    json_t *pl = json_object_get(job, "placement");
    for (int k = 0; k < n; k++) {
        tstream_t *t = &v[k];
        if (!t->ended && cmds == NULL)
            ended_task(c, id, t, label);
        const char *node =
            al_json_str(json_array_get(pl, (size_t)t->task), "node", "?");
        int st = 0;
        if (!t->ended) {
            fprintf(stderr, "%s: error: %s: task %d: %s\n", prog, node, k,
                    t->error != NULL ? t->error : "lost the connection");
            st = 1;
        } else if (t->sig == SIGKILL && (flags & AL_SL_STEP_CUT_OK)) {
            st = 0;
        } else if (t->sig != 0) {
            fprintf(stderr, "%s: error: %s: task %d: %s\n", prog, node, k,
                    strsignal(t->sig));
            st = 128 + t->sig;
        } else if (t->code != 0) {
            fprintf(stderr,
                    "%s: error: %s: task %d: Exited with exit code %d\n", prog,
                    node, k, t->code);
            st = t->code;
        }
        if (st > status)
            status = st;
        close_stream(t);
        al_buf_fini(&t->in);
        al_buf_fini(&t->out);
        free(t->error);
    }
    free(v);
    return status;
}

int
al__sl_job_client(al_client_t *c)
{
    if (al_client_init(c, NULL, NULL) != 0)
        return -1;
    const char *jt = getenv("ALLOT_JOB_TOKEN");
    const char *js = getenv("ALLOT_JOB_SERVER");
    if (c->token != NULL || jt == NULL || jt[0] == '\0' || js == NULL ||
        js[0] == '\0')
        return 0;
    /* No token of the user's: the job's own, with the controller the
     * agent talks to. */
    al_client_fini(c);
    return al_client_init(c, js, jt) != 0 ? -1 : 0;
}

void
al__sl_step_report(al_client_t *c, const char *job, long step, const char *cmd0,
                   long tasks, bool end, int code, int sig)
{
    if (job == NULL || job[0] == '\0' || strlen(job) > 19 ||
        strspn(job, "0123456789") != strlen(job))
        return;
    al_client_t own;
    if (c == NULL) {
        if (al__sl_job_client(&own) != 0)
            return;
        c = &own;
    }
    json_t *b = json_pack("{s:I, s:s}", "step", (json_int_t)step, "event",
                          end ? "end" : "start");
    if (end) {
        json_object_set_new(b, "exit_code", json_integer(code & 255));
        json_object_set_new(b, "signal", json_integer(sig & 127));
    } else {
        const char *base = strrchr(cmd0, '/') ? strrchr(cmd0, '/') + 1 : cmd0;
        char name[256];
        snprintf(name, sizeof name, "%s", base[0] ? base : "step");
        json_t *n = json_string(name); /* NULL when not UTF-8 */
        json_object_set_new(b, "name", n != NULL ? n : json_string("step"));
        json_object_set_new(b, "tasks", json_integer((json_int_t)tasks));
    }
    char *text = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s/steps", job);
    al_http_resp_t resp;
    char *cause = NULL;
    if (text != NULL &&
        al_http_request(&c->url, "POST", path, c->token, text, strlen(text),
                        3000, -1, &resp, &cause) == 0)
        al_http_resp_fini(&resp);
    free(cause);
    free(text);
    if (c == &own)
        al_client_fini(&own);
}
