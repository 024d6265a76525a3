/*
 * e2e.c -- bench/e2e: the running system's speed, end to end.
 *
 * Each case starts a fresh `allot dev` (controller + agents with emulated
 * GPUs, SQLite store with synchronous=FULL: a 201 is durable) on loopback in
 * a private state directory, drives its HTTP API from C client threads over
 * kept-alive connections, and prints one JSON line.  Not a test: it fails
 * only when the system misbehaves (a submission refused, a job lost or
 * failed).  See bench/README.md for the cases and the targets.
 *
 *   bench/e2e [--case spawn|throughput|latency|memory|cluster|cli|array|
 *                      session|events]
 *             [--jobs N] [--clients N] [--nodes N] [--elements N]
 *             [--allot PATH] [--store sqlite|pg] [--keep]
 *
 * --store pg keeps the controller's state in PostgreSQL instead: each case
 * starts a PostgreSQL server of its own (initdb in the case's directory,
 * a Unix socket there and no TCP), as this program's child so that its CPU
 * is counted (store_cpu_ms_per_job).
 *
 * With no arguments every case runs (well within 10 minutes).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "fs.h"
#include "http.h"
#include "json.h"
#include "xmalloc.h"

#ifndef ALLOT_BIN
#define ALLOT_BIN "allot"
#endif

typedef struct opts {
    const char *cse, *allot;
    int jobs, clients, nodes, sim_nodes;
    int elements; /* of the array case's array */
    bool keep;
    bool pg;         /* --store pg */
    bool jobs_given; /* --jobs, rather than a case's own default */
} opts_t;

/* A running `allot dev`. */
typedef struct dev {
    pid_t pid;
    char dir[256];
    al_url_t url;
    char *token;
    pid_t pg_pid;  /* its PostgreSQL server, with --store pg */
    double pg_cpu; /* the CPU seconds that server used, once stopped */
} dev_t_;

static int64_t
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench/e2e: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* CPU seconds pid itself used so far (not its children). */
static double
proc_cpu_s(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    /* Fields 14 and 15 (utime, stime), counted after the command name:
     * each step moves p to the space before the next field. */
    for (int field = 2; p != NULL && field < 14; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu %llu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Resident set size of pid in KiB ("VmRSS" or "VmHWM"), or -1. */
static long
proc_kib(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f == NULL)
        return -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

/* --store pg: PostgreSQL's programs, and a way to run them (as the
 * postgres user when we are root: PostgreSQL refuses to run as root). */
static char *
pg_path(const char *prog)
{
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/postgres", 0, NULL, &g) != 0)
        die("--store pg: PostgreSQL is not installed (scripts/deps)");
    char *dir = al_xstrdup(g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    *strrchr(dir, '/') = '\0';
    char *p = al_xasprintf("%s/%s", dir, prog);
    free(dir);
    return p;
}

static pid_t
pg_spawn(const char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        struct passwd *pw = geteuid() == 0 ? getpwnam("postgres") : NULL;
        if (geteuid() == 0 &&
            (pw == NULL || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0))
            _exit(126);
        execv(argv[0], (char *const *)argv); /* execv() copies them */
        _exit(127);
    }
    if (pid < 0)
        die("fork: %s", strerror(errno));
    return pid;
}

static int
pg_run(const char *const argv[], const char *log)
{
    pid_t pid = pg_spawn(argv, log);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Starts d's PostgreSQL server and returns the store URI for allot dev. */
static char *
pg_start(dev_t_ *d)
{
    char *dir = al_xasprintf("%s/pg", d->dir);
    char *data = al_xasprintf("%s/data", dir);
    char *log = al_xasprintf("%s/pg.log", d->dir);
    if (mkdir(dir, 0700) != 0)
        die("cannot create %s: %s", dir, strerror(errno));
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (pw == NULL || chown(dir, pw->pw_uid, pw->pw_gid) != 0 ||
            chmod(d->dir, 0711) != 0)
            die("--store pg: no postgres user to run PostgreSQL as");
    }
    char *initdb = pg_path("initdb"), *postgres = pg_path("postgres"),
         *createdb = pg_path("createdb");
    const char *const init_argv[] = { initdb,  "-D",        data,
                                      "-U",    "allot",     "-A",
                                      "trust", "--no-sync", NULL };
    if (pg_run(init_argv, log) != 0)
        die("initdb failed; see %s", log);
    const char *const pg_argv[] = {
        postgres, "-D", data, "-k", dir, "-c", "listen_addresses=", NULL
    };
    d->pg_pid = pg_spawn(pg_argv, log);
    const char *const create_argv[] = { createdb, "-h",    dir, "-U",
                                        "allot",  "allot", NULL };
    int64_t end = al_clock_mono_ms() + 20000;
    while (pg_run(create_argv, log) != 0) {
        if (al_clock_mono_ms() > end)
            die("PostgreSQL did not start; see %s", log);
        al_clock_sleep_ms(100);
    }
    char *uri = al_xasprintf("postgresql:///allot?host=%s&user=allot", dir);
    free(initdb);
    free(postgres);
    free(createdb);
    free(dir);
    free(data);
    free(log);
    return uri;
}

static int
dev_start(const opts_t *o, int nodes, dev_t_ *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/allot-e2e-XXXXXX");
    if (mkdtemp(d->dir) == NULL)
        die("cannot create a directory in /tmp: %s", strerror(errno));
    char *state = al_xasprintf("%s/state", d->dir);
    char *cfg = al_xasprintf("%s/config", d->dir);
    char *logp = al_xasprintf("%s/dev.log", d->dir);
    char nbuf[16];
    snprintf(nbuf, sizeof nbuf, "%d", nodes);
    char *store = o->pg ? pg_start(d) : al_xstrdup("sqlite");
    pid_t pid = fork();
    if (pid == 0) {
        /* The CLI config allot dev writes goes to the private directory,
         * not the user's. */
        setenv("XDG_CONFIG_HOME", cfg, 1);
        setenv("XDG_DATA_HOME", d->dir, 1);
        FILE *lf = freopen(logp, "w", stdout);
        if (lf == NULL || dup2(fileno(stdout), 2) < 0)
            _exit(126);
        if (nodes > 0)
            execl(o->allot, "allot", "dev", "--listen", "127.0.0.1:0",
                  "--state", state, "--store", store, "--nodes", nbuf,
                  "--fake-gpus", "8xH100-80GB", "--log-level", "warn",
                  (char *)NULL);
        else
            execl(o->allot, "allot", "dev", "--listen", "127.0.0.1:0",
                  "--state", state, "--store", store, "--no-agent",
                  "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        die("fork: %s", strerror(errno));
    free(store);
    d->pid = pid;
    /* Ready when the log says so and the server answers with every node. */
    char *urlp = al_xasprintf("%s/url", state);
    char *tokp = al_xasprintf("%s/admin-token", state);
    int64_t end = al_clock_mono_ms() + 20000;
    bool ready = false;
    while (!ready && al_clock_mono_ms() < end) {
        al_clock_sleep_ms(20);
        char *log = NULL, *url = NULL;
        size_t n;
        if (al_fs_read_file(logp, &log, &n) == 0 &&
            strstr(log, "ready at") != NULL &&
            al_fs_read_file(urlp, &url, &n) == 0 &&
            al_fs_read_file(tokp, &d->token, &n) == 0) {
            url[strcspn(url, "\r\n")] = '\0';
            d->token[strcspn(d->token, "\r\n")] = '\0';
            ready = al_url_parse(url, &d->url, NULL) == 0;
        }
        free(log);
        free(url);
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            die("allot dev exited early; see %s", logp);
    }
    free(urlp);
    free(tokp);
    free(state);
    free(cfg);
    free(logp);
    if (!ready)
        die("allot dev was not ready within 20 s (%s)", d->dir);
    return 0;
}

/* Stops allot dev; returns the CPU seconds it and everything it started
 * (agents, their monitors, the tasks: all waited for) used. */
static double
dev_stop(const opts_t *o, dev_t_ *d)
{
    kill(d->pid, SIGTERM);
    int st;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(d->pid, &st, 0, &ru) < 0 && errno == EINTR)
        ;
    if (d->pg_pid > 0) {
        /* A fast shutdown; its backends' CPU comes with it. */
        struct rusage pru;
        memset(&pru, 0, sizeof pru);
        kill(d->pg_pid, SIGINT);
        while (wait4(d->pg_pid, &st, 0, &pru) < 0 && errno == EINTR)
            ;
        d->pg_cpu = (double)pru.ru_utime.tv_sec + pru.ru_utime.tv_usec / 1e6 +
                    (double)pru.ru_stime.tv_sec + pru.ru_stime.tv_usec / 1e6;
    }
    if (!o->keep) {
        char *cmd = al_xasprintf("rm -rf '%s'", d->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench/e2e: could not remove %s\n", d->dir);
        free(cmd);
    } else {
        fprintf(stderr, "bench/e2e: kept %s\n", d->dir);
    }
    free(d->token);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* One API call on a kept connection; the parsed body or NULL.  Dies when
 * the server cannot be reached. */
static json_t *
api(al_http_conn_t *c, const char *token, const char *method, const char *path,
    const char *body, int *status)
{
    al_http_resp_t r;
    char *cause = NULL;
    if (al_http_conn_request(c, method, path, token, body,
                             body ? strlen(body) : 0, 60000, -1, &r,
                             &cause) != 0)
        die("request failed: %s", cause ? cause : "?");
    *status = r.status;
    json_t *v = r.body.len > 0 && r.body.data[0] == '{'
                    ? al_json_parse(al_buf_cstr(&r.body), r.body.len, NULL)
                    : json_stringn(al_buf_cstr(&r.body), r.body.len); /* logs */
    al_http_resp_fini(&r);
    return v;
}

/* ------------------------------------------------------------------ */
/* Submitting clients                                                 */

typedef struct client {
    pthread_t th;
    const dev_t_ *d;
    const char *body;
    int n;          /* jobs to submit */
    int64_t *lat;   /* per-request latency, us */
    uint64_t first; /* lowest job id it got */
    int refused;
} client_t;

static void *
client_main(void *arg)
{
    client_t *c = arg;
    al_http_conn_t conn;
    al_http_conn_init(&conn, &c->d->url);
    c->first = UINT64_MAX;
    for (int i = 0; i < c->n; i++) {
        int64_t t0 = now_us();
        int st;
        json_t *v = api(&conn, c->d->token, "POST", "/v1/jobs", c->body, &st);
        c->lat[i] = now_us() - t0;
        if (st != 201) {
            c->refused++;
        } else {
            uint64_t id = (uint64_t)al_json_int(v, "id", 0);
            if (id < c->first)
                c->first = id;
        }
        json_decref(v);
    }
    al_http_conn_close(&conn);
    return NULL;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double
pct_ms(int64_t *v, int n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    int k = (int)(p * (n - 1) + 0.5);
    return (double)v[k] / 1000.0;
}

/* Submits o->jobs jobs with `body` from o->clients threads; returns the
 * wall time in us and fills lat (o->jobs entries). */
static int64_t
submit_all(const opts_t *o, const dev_t_ *d, const char *body, int64_t *lat,
           int *refused)
{
    client_t *cl = al_xcalloc((size_t)o->clients, sizeof *cl);
    int off = 0;
    int64_t t0 = now_us();
    for (int i = 0; i < o->clients; i++) {
        cl[i].d = d;
        cl[i].body = body;
        cl[i].n = o->jobs / o->clients + (i < o->jobs % o->clients);
        cl[i].lat = lat + off;
        off += cl[i].n;
        if (pthread_create(&cl[i].th, NULL, client_main, &cl[i]) != 0)
            die("pthread_create: %s", strerror(errno));
    }
    *refused = 0;
    for (int i = 0; i < o->clients; i++) {
        pthread_join(cl[i].th, NULL);
        *refused += cl[i].refused;
    }
    int64_t wall = now_us() - t0;
    free(cl);
    return wall;
}

/* Jobs in `state` (a filter of GET /v1/jobs), counted by paging. */
static int
count_jobs(al_http_conn_t *c, const dev_t_ *d, const char *state, int limit)
{
    int st;
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs?state=%s&limit=%d", state, limit);
    json_t *v = api(c, d->token, "GET", path, NULL, &st);
    int n = (int)json_array_size(json_object_get(v, "jobs"));
    json_decref(v);
    return n;
}

static void
print_head(const opts_t *o)
{
    char cpu[256] = "?", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "model name", 10) == 0) {
            snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
            cpu[strcspn(cpu, "\n")] = '\0';
            break;
        }
    if (f != NULL)
        fclose(f);
    double load = 0;
    f = fopen("/proc/loadavg", "r");
    if (f != NULL && fscanf(f, "%lf", &load) != 1)
        load = 0;
    if (f != NULL)
        fclose(f);
    printf("{\"bench\":\"e2e\",\"cpu\":\"%s\",\"cpus\":%ld,\"load1\":%.2f,"
           "\"allot\":\"%s\",\"buildtype\":\"%s\",\"store\":\"%s\"}\n",
           cpu, sysconf(_SC_NPROCESSORS_ONLN), load, o->allot, BENCH_BUILDTYPE,
           o->pg ? "pg" : "sqlite");
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Cases                                                              */

/* o->jobs trivial jobs (`true`) from o->clients clients against allot dev
 * with o->nodes emulated nodes: durable submits per second, and jobs
 * executed per second until the last one completed. */
/* Waits (polling every poll_ms) until no job is active; dies after 300 s. */
static void
await_idle(al_http_conn_t *c, const dev_t_ *d, int poll_ms)
{
    int64_t deadline = al_clock_mono_ms() + 300000;
    while (count_jobs(c, d, "active", 1) > 0) {
        if (al_clock_mono_ms() > deadline)
            die("jobs still active after 300 s");
        al_clock_sleep_ms(poll_ms);
    }
}

/* The machine's own limit on trivial jobs: two workers each start `true`
 * (posix_spawnp, as the agent's spawner starts a task's program) and reap
 * it, n runs in all, with nothing else running.  Runs per second. */
typedef struct spawner_arg {
    int runs;
    int failed;
} spawner_arg_t;

static void *
spawner_main(void *arg)
{
    spawner_arg_t *a = arg;
    static char prog[] = "true";
    char *const argv[] = { prog, NULL };
    extern char **environ;
    for (int i = 0; i < a->runs; i++) {
        pid_t pid;
        int st;
        if (posix_spawnp(&pid, "true", NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            a->failed++;
    }
    return NULL;
}

static double
spawn_rate(int n)
{
    spawner_arg_t a[2] = { { n / 2, 0 }, { n - n / 2, 0 } };
    pthread_t t[2];
    int64_t t0 = now_us();
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, spawner_main, &a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    int64_t wall = now_us() - t0;
    if (a[0].failed + a[1].failed > 0)
        die("%d runs of true failed", a[0].failed + a[1].failed);
    return n / (wall / 1e6);
}

#define SPAWN_RUNS 4000

static void
case_spawn(void)
{
    double rate = spawn_rate(SPAWN_RUNS);
    printf("{\"case\":\"spawn\",\"runs\":%d,\"workers\":2,"
           "\"spawns_per_s\":%.0f}\n",
           SPAWN_RUNS, rate);
    fflush(stdout);
}

static void
case_throughput(const opts_t *o)
{
    /* This machine's limit, measured in the same run before the cluster
     * starts: jobs_per_s_vs_spawn says how close allot comes to it. */
    double spawn = spawn_rate(SPAWN_RUNS);
    dev_t_ d;
    dev_start(o, o->nodes, &d);
    const char *body = "{\"command\":[\"true\"],\"name\":\"e2e\"}";
    int64_t *lat = al_xcalloc((size_t)o->jobs, sizeof *lat);
    int refused;
    int64_t t0 = now_us();
    int64_t wall = submit_all(o, &d, body, lat, &refused);
    if (refused > 0)
        die("%d submissions refused", refused);
    al_http_conn_t c;
    al_http_conn_init(&c, &d.url);
    await_idle(&c, &d, 5);
    int64_t done = now_us() - t0;
    int failed = count_jobs(&c, &d, "failed,cancelled", 1000);
    int hst;
    json_t *h = api(&c, d.token, "GET", "/v1/healthz", NULL, &hst);
    long long cycles =
        (long long)json_integer_value(json_object_get(h, "cycles"));
    json_decref(h);
    long rss = proc_kib(d.pid, "VmRSS"), hwm = proc_kib(d.pid, "VmHWM");
    al_http_conn_close(&c);
    double server_cpu = proc_cpu_s(d.pid);
    double cpu = dev_stop(o, &d);
    printf("{\"case\":\"throughput\",\"jobs\":%d,\"clients\":%d,\"nodes\":%d,"
           "\"submits_per_s\":%.0f,\"submit_p50_ms\":%.2f,"
           "\"submit_p99_ms\":%.2f,\"jobs_per_s\":%.0f,\"failed\":%d,"
           "\"cpu_ms_per_job\":%.3f,\"server_cpu_ms_per_job\":%.3f,"
           "\"cycles\":%lld,"
           "\"server_rss_mb\":%.1f,\"server_peak_rss_mb\":%.1f",
           o->jobs, o->clients, o->nodes, o->jobs / (wall / 1e6),
           pct_ms(lat, o->jobs, 0.5), pct_ms(lat, o->jobs, 0.99),
           o->jobs / (done / 1e6), failed, cpu * 1000 / o->jobs,
           server_cpu * 1000 / o->jobs, cycles, rss / 1024.0, hwm / 1024.0);
    if (o->pg)
        printf(",\"store\":\"pg\",\"store_cpu_ms_per_job\":%.3f",
               d.pg_cpu * 1000 / o->jobs);
    printf(",\"spawns_per_s\":%.0f,\"jobs_per_s_vs_spawn\":%.2f}\n", spawn,
           o->jobs / (done / 1e6) / spawn);
    fflush(stdout);
    free(lat);
    if (failed > 0)
        die("%d jobs failed", failed);
}

/* Idle cluster: one job at a time, from the moment the client sends the
 * submission to the moment the job's own process runs (it prints the
 * realtime clock first thing: this program with --stamp). */
static void
case_latency(const opts_t *o, const char *self)
{
    dev_t_ d;
    dev_start(o, o->nodes, &d);
    int n = o->jobs < 200 ? o->jobs : 200;
    int64_t *lat = al_xcalloc((size_t)n, sizeof *lat);
    int64_t *bind = al_xcalloc((size_t)n, sizeof *bind);
    json_t *cmd = json_pack("{s:[s,s],s:s}", "command", self, "--stamp", "name",
                            "e2e-latency");
    char *body = al_json_dump(cmd);
    json_decref(cmd);
    al_http_conn_t c;
    al_http_conn_init(&c, &d.url);
    for (int i = 0; i < n; i++) {
        int st;
        int64_t sent = real_ns();
        json_t *v = api(&c, d.token, "POST", "/v1/jobs", body, &st);
        if (st != 201)
            die("submission refused: %s", al_json_str(v, "message", "?"));
        uint64_t id = (uint64_t)al_json_int(v, "id", 0);
        json_decref(v);
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%llu", (unsigned long long)id);
        const char *state = "pending";
        int64_t deadline = al_clock_mono_ms() + 30000;
        json_t *j = NULL;
        for (;;) {
            j = api(&c, d.token, "GET", path, NULL, &st);
            state = al_json_str(j, "state", "?");
            if (strcmp(state, "completed") == 0 ||
                strcmp(state, "failed") == 0 || al_clock_mono_ms() > deadline)
                break;
            json_decref(j);
            al_clock_sleep_ms(2);
        }
        if (strcmp(state, "completed") != 0)
            die("a latency job ended %s", state);
        bind[i] =
            (al_json_int(j, "start_ms", 0) - al_json_int(j, "submit_ms", 0)) *
            1000;
        json_decref(j);
        /* The log arrives with (or just after) the exit report. */
        snprintf(path, sizeof path, "/v1/jobs/%llu/logs",
                 (unsigned long long)id);
        long long stamp = 0;
        for (int k = 0; k < 500 && stamp == 0; k++) {
            json_t *lg = api(&c, d.token, "GET", path, NULL, &st);
            if (json_is_string(lg))
                stamp = atoll(json_string_value(lg));
            json_decref(lg);
            if (stamp == 0)
                al_clock_sleep_ms(2);
        }
        if (stamp == 0)
            die("no stamp in the log of job %s", path);
        lat[i] = (stamp - sent) / 1000;
    }
    al_http_conn_close(&c);
    free(body);
    printf("{\"case\":\"latency\",\"jobs\":%d,\"nodes\":%d,"
           "\"latency_p50_ms\":%.2f,\"latency_p99_ms\":%.2f,"
           "\"bind_p50_ms\":%.1f,\"server_rss_mb\":%.1f}\n",
           n, o->nodes, pct_ms(lat, n, 0.5), pct_ms(lat, n, 0.99),
           pct_ms(bind, n, 0.5), proc_kib(d.pid, "VmRSS") / 1024.0);
    fflush(stdout);
    free(lat);
    free(bind);
    dev_stop(o, &d);
}

/* A controller without nodes: every job stays pending.  Server memory per
 * pending job = growth of its resident set / jobs, after the store and a
 * first scheduling cycle over the backlog. */
static void
case_memory(const opts_t *o)
{
    dev_t_ d;
    dev_start(o, 0, &d);
    opts_t m = *o;
    m.jobs = o->jobs * 5;
    const char *body =
        "{\"command\":[\"python3\",\"train.py\",\"--epochs\",\"10\"],"
        "\"name\":\"resnet50-sweep\",\"gpus\":1,\"cpu_milli\":4000}";
    al_clock_sleep_ms(1200); /* a cycle on the empty store */
    long before = proc_kib(d.pid, "VmRSS");
    double cpu0 = proc_cpu_s(d.pid);
    int64_t *lat = al_xcalloc((size_t)m.jobs, sizeof *lat);
    int refused;
    int64_t wall = submit_all(&m, &d, body, lat, &refused);
    if (refused > 0)
        die("%d submissions refused", refused);
    double cpu1 = proc_cpu_s(d.pid);
    al_clock_sleep_ms(1500); /* at least one timer cycle over the backlog */
    long after = proc_kib(d.pid, "VmRSS");
    printf("{\"case\":\"memory\",\"pending\":%d,\"clients\":%d,"
           "\"submits_per_s\":%.0f,\"submit_p50_ms\":%.2f,"
           "\"submit_p99_ms\":%.2f,\"server_cpu_ms_per_submit\":%.3f,"
           "\"server_rss_mb\":%.1f,\"bytes_per_pending_job\":%.0f",
           m.jobs, m.clients, m.jobs / (wall / 1e6), pct_ms(lat, m.jobs, 0.5),
           pct_ms(lat, m.jobs, 0.99), (cpu1 - cpu0) * 1000 / m.jobs,
           after / 1024.0, (double)(after - before) * 1024.0 / m.jobs);
    free(lat);
    dev_stop(o, &d);
    if (o->pg)
        printf(",\"store\":\"pg\",\"store_cpu_ms_per_submit\":%.3f",
               d.pg_cpu * 1000 / m.jobs);
    printf("}\n");
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Simulated nodes                                                    */

/* A node that speaks the agent protocol from a thread of this program:
 * it registers 8 emulated GPUs, long-polls the controller's syncs, takes
 * the tasks it is told to run as running at once and reports each as
 * exited (code 0) `dur_ms` later, so that a controller can be driven with
 * thousands of nodes on one machine.  Nothing is started. */
typedef struct simtask {
    uint64_t job;
    int task, restart;
    int64_t end_ms; /* when it is reported exited */
    bool exited;
} simtask_t;

typedef struct simnode {
    const dev_t_ *d;
    const char *join;
    int idx;
    int64_t dur_ms;
    volatile int *stop;
    long syncs, ended;
    simtask_t *t;
    size_t nt, cap;
} simnode_t;

static bool
sim_has(const simnode_t *s, uint64_t job, int task, int restart, size_t *at)
{
    for (size_t i = 0; i < s->nt; i++)
        if (s->t[i].job == job && s->t[i].task == task &&
            s->t[i].restart == restart) {
            *at = i;
            return true;
        }
    return false;
}

/* Takes a sync's answer: new desired tasks run from now on; acknowledged
 * ends are dropped. */
static void
sim_answer(simnode_t *s, json_t *v)
{
    int64_t now = al_clock_mono_ms();
    size_t i, at;
    json_t *e;
    json_array_foreach(json_object_get(v, "tasks"), i, e)
    {
        uint64_t job = (uint64_t)al_json_int(e, "job", 0);
        int task = (int)al_json_int(e, "task", 0);
        int restart = (int)al_json_int(e, "restart", 0);
        if (sim_has(s, job, task, restart, &at))
            continue;
        if (s->nt == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 16;
            s->t = al_xreallocarray(s->t, s->cap, sizeof *s->t);
        }
        s->t[s->nt++] = (simtask_t){ .job = job,
                                     .task = task,
                                     .restart = restart,
                                     .end_ms = now + s->dur_ms };
    }
    json_array_foreach(json_object_get(v, "acks"), i, e)
    {
        if (sim_has(s, (uint64_t)al_json_int(e, "job", 0),
                    (int)al_json_int(e, "task", 0),
                    (int)al_json_int(e, "restart", 0), &at) &&
            s->t[at].exited) {
            s->t[at] = s->t[--s->nt];
            s->ended++;
        }
    }
}

static void *
simnode_main(void *arg)
{
    simnode_t *s = arg;
    al_http_conn_t c;
    al_http_conn_init(&c, &s->d->url);
    char name[32];
    snprintf(name, sizeof name, "sim-%05d", s->idx);
    json_t *gpus = json_array();
    for (int g = 0; g < 8; g++) {
        char uuid[48];
        snprintf(uuid, sizeof uuid, "GPU-sim-%05d-%d", s->idx, g);
        json_array_append_new(
            gpus, json_pack("{s:s, s:s, s:I, s:i, s:i}", "uuid", uuid, "model",
                            "H100-80GB", "mem_bytes", (json_int_t)85899345920LL,
                            "numa", g / 4, "nvlink", 0));
    }
    json_t *reg =
        json_pack("{s:s, s:s, s:b, s:I, s:I, s:o}", "name", name, "addr",
                  "127.0.0.1", "emulated", 1, "cpu_milli", (json_int_t)64000,
                  "mem_bytes", (json_int_t)(512LL << 30), "gpus", gpus);
    char *body = al_json_dump(reg);
    json_decref(reg);
    int st;
    json_t *v = api(&c, s->join, "POST", "/v1/agent/register", body, &st);
    free(body);
    json_decref(v);
    if (st != 200 && st != 201)
        die("node %s: register answered %d", name, st);
    while (!*s->stop) {
        int64_t now = al_clock_mono_ms(), wait = 2000;
        json_t *tasks = json_array();
        for (size_t i = 0; i < s->nt; i++) {
            simtask_t *t = &s->t[i];
            if (!t->exited && t->end_ms <= now)
                t->exited = true;
            if (!t->exited && t->end_ms - now < wait)
                wait = t->end_ms - now;
            json_array_append_new(tasks,
                                  json_pack("{s:I, s:i, s:i, s:s, s:i}", "job",
                                            (json_int_t)t->job, "task", t->task,
                                            "restart", t->restart, "state",
                                            t->exited ? "exited" : "running",
                                            "exit_code", 0));
        }
        json_t *req =
            json_pack("{s:s, s:I, s:o}", "node", name, "wait_ms",
                      (json_int_t)(wait > 1 ? wait : 1), "tasks", tasks);
        body = al_json_dump(req);
        json_decref(req);
        al_http_resp_t r;
        int rc = al_http_conn_request(&c, "POST", "/v1/agent/sync", s->join,
                                      body, strlen(body), 60000, -1, &r, NULL);
        free(body);
        if (rc != 0) {
            if (*s->stop)
                break; /* the controller is gone */
            die("node %s: a sync failed", name);
        }
        s->syncs++;
        v = r.status == 200
                ? al_json_parse(al_buf_cstr(&r.body), r.body.len, NULL)
                : NULL;
        al_http_resp_fini(&r);
        if (v != NULL)
            sim_answer(s, v);
        json_decref(v);
    }
    al_http_conn_close(&c);
    free(s->t);
    return NULL;
}

/* Simulated nodes (a thread each) registered with d's controller. */
typedef struct fleet {
    simnode_t *sn;
    pthread_t *th;
    pthread_attr_t at;
    char *join;
    volatile int stop;
    int n;
} fleet_t;

/* Starts n simulated nodes whose tasks run dur_ms, and waits until the
 * controller counts them all (over c). */
static void
fleet_start(fleet_t *f, const dev_t_ *d, int n, int64_t dur_ms,
            al_http_conn_t *c)
{
    char *jp = al_xasprintf("%s/state/join-token", d->dir);
    size_t len;
    f->join = NULL;
    if (al_fs_read_file(jp, &f->join, &len) != 0)
        die("cannot read %s", jp);
    f->join[strcspn(f->join, "\r\n")] = '\0';
    free(jp);
    f->stop = 0;
    f->n = n;
    f->sn = al_xcalloc((size_t)n, sizeof *f->sn);
    f->th = al_xcalloc((size_t)n, sizeof *f->th);
    pthread_attr_init(&f->at);
    pthread_attr_setstacksize(&f->at, 256 << 10);
    for (int i = 0; i < n; i++) {
        f->sn[i] = (simnode_t){ .d = d,
                                .join = f->join,
                                .idx = i,
                                .dur_ms = dur_ms,
                                .stop = &f->stop };
        if (pthread_create(&f->th[i], &f->at, simnode_main, &f->sn[i]) != 0)
            die("cannot start simulated node %d", i);
    }
    int st;
    for (;;) {
        json_t *h = api(c, d->token, "GET", "/v1/healthz", NULL, &st);
        long nodes = (long)al_json_int(h, "nodes", 0);
        json_decref(h);
        if (nodes >= n)
            break;
        al_clock_sleep_ms(20);
    }
}

/* The syncs the nodes made so far. */
static long
fleet_syncs(const fleet_t *f)
{
    long syncs = 0;
    for (int i = 0; i < f->n; i++)
        syncs += f->sn[i].syncs;
    return syncs;
}

/* Waits for the nodes, told to stop and their controller stopped (which
 * ends their long polls); their syncs in all. */
static long
fleet_join(fleet_t *f)
{
    for (int i = 0; i < f->n; i++)
        pthread_join(f->th[i], NULL);
    long syncs = fleet_syncs(f);
    pthread_attr_destroy(&f->at);
    free(f->th);
    free(f->sn);
    free(f->join);
    return syncs;
}

/* Many simulated nodes (--sim-nodes, 8 GPUs each) and o->jobs jobs of one
 * GPU that each "run" 1 s: the controller's cost with a large cluster,
 * per job and per sync, and its threads. */
static void
case_cluster(const opts_t *o)
{
    /* A connection per simulated node. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    dev_t_ d;
    dev_start(o, 0, &d);
    al_http_conn_t c;
    al_http_conn_init(&c, &d.url);
    fleet_t f;
    int64_t r0 = now_us();
    fleet_start(&f, &d, o->sim_nodes, 1000, &c);
    int st;
    int64_t reg_us = now_us() - r0;
    al_clock_sleep_ms(1500); /* registrations settle; a timer cycle */
    /* GET /metrics with every node registered: the round trip of a
     * scrape (the loop renders it, one line per node at least). */
    int64_t m0 = now_us();
    size_t mbytes = 0;
    enum { NSCRAPE = 20 };
    for (int i = 0; i < NSCRAPE; i++) {
        al_http_resp_t r;
        char *cause = NULL;
        if (al_http_conn_request(&c, "GET", "/metrics", d.token, NULL, 0, 60000,
                                 -1, &r, &cause) != 0 ||
            r.status != 200)
            die("GET /metrics failed: %s", cause ? cause : "status");
        mbytes = r.body.len;
        al_http_resp_fini(&r);
    }
    double metrics_ms = (double)(now_us() - m0) / 1000.0 / NSCRAPE;
    double cpu0 = proc_cpu_s(d.pid);
    long syncs0 = fleet_syncs(&f);
    const char *body = "{\"command\":[\"true\"],\"name\":\"sim\",\"gpus\":1}";
    int64_t *lat = al_xcalloc((size_t)o->jobs, sizeof *lat);
    int refused;
    int64_t t0 = now_us();
    submit_all(o, &d, body, lat, &refused);
    if (refused > 0)
        die("%d submissions refused", refused);
    await_idle(&c, &d, 20);
    int64_t done = now_us() - t0;
    double cpu = proc_cpu_s(d.pid) - cpu0;
    int failed = count_jobs(&c, &d, "failed,cancelled", 1000);
    json_t *h = api(&c, d.token, "GET", "/v1/healthz", NULL, &st);
    long long cycles = (long long)al_json_int(h, "cycles", 0);
    json_decref(h);
    long rss = proc_kib(d.pid, "VmRSS"), threads = proc_kib(d.pid, "Threads");
    al_http_conn_close(&c);
    f.stop = 1;
    dev_stop(o, &d); /* ends the long-polls */
    long syncs = fleet_join(&f) - syncs0;
    printf("{\"case\":\"cluster\",\"nodes\":%d,\"gpus\":%d,\"jobs\":%d,"
           "\"register_s\":%.2f,\"jobs_per_s\":%.0f,\"failed\":%d,"
           "\"syncs\":%ld,\"server_cpu_ms_per_job\":%.3f,"
           "\"server_cpu_ms_per_sync\":%.3f,\"cycles\":%lld,"
           "\"server_rss_mb\":%.1f,\"server_threads\":%ld,"
           "\"metrics_ms\":%.2f,\"metrics_kib\":%.1f}\n",
           o->sim_nodes, 8 * o->sim_nodes, o->jobs, reg_us / 1e6,
           o->jobs / (done / 1e6), failed, syncs, cpu * 1000 / o->jobs,
           syncs > 0 ? cpu * 1000 / (double)syncs : 0.0, cycles, rss / 1024.0,
           threads, metrics_ms, (double)mbytes / 1024.0);
    fflush(stdout);
    free(lat);
    if (failed > 0)
        die("%d jobs failed", failed);
}

/* ------------------------------------------------------------------ */
/* cli: the allot command as a shell script drives it                 */

extern char **environ;

#define CLI_SUBMITS 300 /* `allot submit -- true`, one process each */
#define CLI_STARTS 200  /* `allot version` and /bin/true, alternately */

/* Runs argv (stdout to /dev/null) and waits; its wall time in us, or -1
 * when it did not exit 0. */
static int64_t
cli_run(const char *const argv[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    int64_t t0 = now_us();
    pid_t pid;
    int st = -1;
    /* posix_spawn() copies argv. */
    if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) ==
        0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    int64_t us = now_us() - t0;
    posix_spawn_file_actions_destroy(&fa);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? us : -1;
}

/* The shared objects (and the vdso, as ldd counts) `allot submit` maps:
 * caught while it waits for a server that accepts and never answers. */
static int
cli_shared_libs(const char *allot)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(ls, 4) != 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &len) != 0)
        die("cli: a listening socket: %s", strerror(errno));
    char *url = al_xasprintf("http://127.0.0.1:%d", ntohs(sa.sin_port));
    char *old =
        getenv("ALLOT_SERVER") ? al_xstrdup(getenv("ALLOT_SERVER")) : NULL;
    setenv("ALLOT_SERVER", url, 1);
    const char *const argv[] = { allot, "submit", "--", "true", NULL };
    pid_t pid;
    if (posix_spawn(&pid, allot, NULL, NULL, (char *const *)argv, environ) != 0)
        die("cli: cannot run %s", allot);
    if (old != NULL)
        setenv("ALLOT_SERVER", old, 1);
    else
        unsetenv("ALLOT_SERVER");
    free(old);
    free(url);
    int conn = accept(ls, NULL, NULL); /* it is in its first call now */
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    char seen[64][256];
    int n = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        const char *name = strchr(line, '/');
        if (name == NULL)
            name = strstr(line, "[vdso]");
        if (name == NULL ||
            (strstr(name, ".so") == NULL && strcmp(name, "[vdso]\n") != 0))
            continue;
        bool dup = false;
        for (int i = 0; i < n && !dup; i++)
            dup = strcmp(seen[i], name) == 0;
        if (!dup && n < 64)
            snprintf(seen[n++], sizeof seen[0], "%s", name);
    }
    if (f != NULL)
        fclose(f);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (conn >= 0)
        close(conn);
    close(ls);
    return n;
}

/* CLI_SUBMITS `allot submit -- true` from a shell loop against allot dev,
 * and the start-up time of `allot version` beside /bin/true's, measured
 * in the same run (their medians). */
static void
case_cli(const opts_t *o)
{
    dev_t_ d;
    dev_start(o, o->nodes, &d);
    char *urlp = al_xasprintf("%s/state/url", d.dir), *url = NULL;
    size_t n;
    if (al_fs_read_file(urlp, &url, &n) != 0)
        die("cli: cannot read %s", urlp);
    url[strcspn(url, "\r\n")] = '\0';
    setenv("ALLOT_SERVER", url, 1);
    setenv("ALLOT_TOKEN", d.token, 1);
    setenv("ALLOT", o->allot, 1);
    char script[160];
    snprintf(script, sizeof script,
             "i=0; while [ $i -lt %d ]; do \"$ALLOT\" submit -- true "
             ">/dev/null || exit 1; i=$((i + 1)); done",
             CLI_SUBMITS);
    const char *const loop[] = { "/bin/sh", "-c", script, NULL };
    int64_t wall = cli_run(loop);
    if (wall < 0)
        die("cli: an allot submit of the loop failed");
    al_http_conn_t c;
    al_http_conn_init(&c, &d.url);
    await_idle(&c, &d, 5);
    int failed = count_jobs(&c, &d, "failed,cancelled", 1000);
    int done = count_jobs(&c, &d, "completed", CLI_SUBMITS + 1);
    al_http_conn_close(&c);
    if (failed > 0 || done != CLI_SUBMITS)
        die("cli: %d jobs failed, %d of %d completed", failed, done,
            CLI_SUBMITS);

    const char *const version[] = { o->allot, "version", NULL };
    const char *const truth[] = { "/bin/true", NULL };
    int64_t *tv = al_xcalloc(CLI_STARTS, sizeof *tv);
    int64_t *tt = al_xcalloc(CLI_STARTS, sizeof *tt);
    for (int i = 0; i < CLI_STARTS; i++) {
        tv[i] = cli_run(version);
        tt[i] = cli_run(truth);
        if (tv[i] < 0 || tt[i] < 0)
            die("cli: allot version or /bin/true failed");
    }
    double start = pct_ms(tv, CLI_STARTS, 0.5);
    double true_ms = pct_ms(tt, CLI_STARTS, 0.5);
    int libs = cli_shared_libs(o->allot);
    unsetenv("ALLOT_SERVER");
    unsetenv("ALLOT_TOKEN");
    unsetenv("ALLOT");
    printf("{\"case\":\"cli\",\"submits\":%d,\"nodes\":%d,"
           "\"cli_submits_per_s\":%.0f,\"cli_start_ms\":%.3f,"
           "\"true_start_ms\":%.3f,\"cli_start_ratio\":%.2f,"
           "\"cli_shared_libs\":%d}\n",
           CLI_SUBMITS, o->nodes, CLI_SUBMITS / (wall / 1e6), start, true_ms,
           start / true_ms, libs);
    fflush(stdout);
    free(tv);
    free(tt);
    free(url);
    free(urlp);
    dev_stop(o, &d);
}

/* One job array of o->elements trivial elements (`true`), submitted with
 * one call: how long the call takes to be accepted (durable), the
 * controller's memory per pending element (growth of its resident set /
 * elements, on a controller without nodes after a cycle, which gives the
 * first window of elements their jobs), then, on another controller with
 * o->nodes nodes (the throughput case's), elements run per second until the
 * array completed. */
static void
case_array(const opts_t *o)
{
    char *body = al_xasprintf("{\"command\":[\"true\"],\"name\":\"e2e\","
                              "\"array\":\"0-%d\"}",
                              o->elements - 1);
    dev_t_ d;
    dev_start(o, 0, &d);
    al_clock_sleep_ms(1200); /* a cycle on the empty store */
    long before = proc_kib(d.pid, "VmRSS");
    al_http_conn_t c;
    al_http_conn_init(&c, &d.url);
    int st;
    int64_t t0 = now_us();
    json_t *v = api(&c, d.token, "POST", "/v1/jobs", body, &st);
    int64_t accept = now_us() - t0;
    if (st != 201)
        die("the array was refused: %d", st);
    json_decref(v);
    al_clock_sleep_ms(1500); /* at least one cycle over the array */
    long after = proc_kib(d.pid, "VmRSS");
    al_http_conn_close(&c);
    dev_stop(o, &d);

    dev_start(o, o->nodes, &d);
    al_http_conn_init(&c, &d.url);
    t0 = now_us();
    v = api(&c, d.token, "POST", "/v1/jobs", body, &st);
    if (st != 201)
        die("the array was refused: %d", st);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld",
             (long long)al_json_int(v, "id", 0));
    json_decref(v);
    int64_t deadline = al_clock_mono_ms() + 600000;
    json_t *arr = NULL;
    for (;;) {
        v = api(&c, d.token, "GET", path, NULL, &st);
        const char *state = al_json_str(v, "state", "");
        if (strcmp(state, "completed") == 0 || strcmp(state, "failed") == 0 ||
            strcmp(state, "cancelled") == 0) {
            arr = json_incref(json_object_get(v, "array"));
            json_decref(v);
            break;
        }
        json_decref(v);
        if (al_clock_mono_ms() > deadline)
            die("the array still runs after 600 s");
        al_clock_sleep_ms(20);
    }
    int64_t done = now_us() - t0;
    long long completed =
        (long long)al_json_int(json_object_get(arr, "states"), "completed", 0);
    json_decref(arr);
    al_http_conn_close(&c);
    double server_cpu = proc_cpu_s(d.pid);
    dev_stop(o, &d);
    printf("{\"case\":\"array\",\"elements\":%d,\"nodes\":%d,"
           "\"array_accept_ms\":%.1f,\"bytes_per_pending_element\":%.1f,"
           "\"jobs_per_s\":%.0f,\"completed\":%lld,"
           "\"server_cpu_ms_per_job\":%.3f}\n",
           o->elements, o->nodes, accept / 1000.0,
           (double)(after - before) * 1024.0 / o->elements,
           o->elements / (done / 1e6), completed,
           server_cpu * 1000 / o->elements);
    fflush(stdout);
    free(body);
    if (completed != o->elements)
        die("%lld of %d elements completed", completed, o->elements);
}

/* ------------------------------------------------------------------ */
/* session: an interactive session's round trip and bulk throughput   */

/* Starts `allot ARGS...` for d (its server and token in the environment)
 * with stdin, stdout and stderr on fds[0..2]; with a terminal (fds all the
 * same pty slave) it is the process's controlling one. */
static pid_t
session_spawn(const opts_t *o, const dev_t_ *d, const int fds[3], bool tty,
              const char *const *args)
{
    char *url = al_xasprintf("http://%s:%s", d->url.host, d->url.port);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        for (int i = 0; i < 3; i++)
            dup2(fds[i], i);
        if (tty)
            ioctl(0, TIOCSCTTY, 0);
        setenv("ALLOT_SERVER", url, 1);
        setenv("ALLOT_TOKEN", d->token, 1);
        char *argv[16];
        int n = 0;
        argv[n++] = (char *)"allot";
        for (; args[n - 1] != NULL && n < 15; n++)
            argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(o->allot, argv);
        _exit(127);
    }
    free(url);
    if (pid < 0)
        die("fork: %s", strerror(errno));
    return pid;
}

/* Reads one byte from fd within ms; false when none came. */
static bool
read_byte(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    char c;
    return poll(&p, 1, ms) == 1 && read(fd, &c, 1) == 1;
}

static int
session_wait(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* `allot run -it -- cat` on a terminal of its own: a key typed goes through
 * the CLI, the controller and the agent to the job's pty, whose echo comes
 * back the same way (session_rtt_*_ms, one key at a time); then `allot run
 * -- sh -c 'yes | head -c N'` into a pipe (session_mb_per_s, from its first
 * byte to its last). */
static void
case_session(const opts_t *o)
{
    dev_t_ d;
    dev_start(o, 1, &d);
    /* A build job starts within its queue's deserved quota. */
    al_http_conn_t c;
    al_http_conn_init(&c, &d.url);
    int st;
    json_decref(api(&c, d.token, "POST", "/v1/queues",
                    "{\"name\":\"bench\",\"quota\":{\"gpu\":{\"deserved\":8}}}",
                    &st));
    if (st != 200 && st != 201)
        die("cannot create queue bench (%d)", st);
    int m, sl;
    struct winsize ws = { .ws_row = 24, .ws_col = 80 };
    if (openpty(&m, &sl, NULL, NULL, &ws) != 0)
        die("openpty: %s", strerror(errno));
    /* No local echo: what comes back was echoed by the job's pty. */
    struct termios tio;
    if (tcgetattr(sl, &tio) == 0) {
        cfmakeraw(&tio);
        tcsetattr(sl, TCSANOW, &tio);
    }
    const int tfd[3] = { sl, sl, sl };
    const char *const rargs[] = { "run", "-it", "--queue", "bench",
                                  "--",  "cat", NULL };
    pid_t pid = session_spawn(o, &d, tfd, true, rargs);
    close(sl);
    /* Up once a key comes back. */
    bool up = false;
    for (int i = 0; i < 300 && !up; i++) {
        if (write(m, "w", 1) != 1)
            die("write to the terminal: %s", strerror(errno));
        up = read_byte(m, 100);
    }
    if (!up)
        die("allot run -it -- cat never echoed a key");
    while (read_byte(m, 200))
        ;
    enum { NKEYS = 1000 };
    int64_t *lat = al_xcalloc(NKEYS, sizeof *lat);
    for (int i = 0; i < NKEYS; i++) {
        if (i % 200 == 199) {
            /* A line now and then: the pty's line stays short. */
            if (write(m, "\r", 1) != 1)
                die("write: %s", strerror(errno));
            while (read_byte(m, 100))
                ;
        }
        int64_t t0 = now_us();
        if (write(m, "k", 1) != 1)
            die("write: %s", strerror(errno));
        if (!read_byte(m, 5000))
            die("key %d: no echo within 5 s", i);
        lat[i] = now_us() - t0;
    }
    if (write(m, "\r\004", 2) != 2)
        die("write: %s", strerror(errno));
    while (read_byte(m, 200))
        ;
    int rc = session_wait(pid);
    close(m);
    if (rc != 0)
        die("allot run -it -- cat exited %d", rc);

    /* Bulk: the job's output through the controller into a pipe. */
    const int64_t bytes = INT64_C(1) << 30;
    char *sh = al_xasprintf("yes | head -c %lld", (long long)bytes);
    const char *const bargs[] = { "run", "--queue", "bench", "--",
                                  "sh",  "-c",      sh,      NULL };
    int p[2];
    if (pipe(p) != 0)
        die("pipe: %s", strerror(errno));
    int devnull = open("/dev/null", O_RDWR);
    const int bfd[3] = { devnull, p[1], 2 };
    pid = session_spawn(o, &d, bfd, false, bargs);
    close(p[1]);
    close(devnull);
    char *buf = al_xmalloc(1 << 20);
    int64_t got = 0, first = 0;
    for (;;) {
        ssize_t n = read(p[0], buf, 1 << 20);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (got == 0)
            first = now_us();
        got += n;
    }
    int64_t span = now_us() - first;
    close(p[0]);
    rc = session_wait(pid);
    free(buf);
    free(sh);
    long hwm = proc_kib(d.pid, "VmHWM");
    al_http_conn_close(&c);
    dev_stop(o, &d);
    if (rc != 0 || got != bytes)
        die("yes | head -c %lld through a session: %lld bytes, exit %d",
            (long long)bytes, (long long)got, rc);
    printf("{\"case\":\"session\",\"keys\":%d,\"session_rtt_p50_ms\":%.3f,"
           "\"session_rtt_p99_ms\":%.3f,\"session_bytes\":%lld,"
           "\"session_mb_per_s\":%.0f,\"server_peak_rss_mb\":%.1f}\n",
           NKEYS, pct_ms(lat, NKEYS, 0.5), pct_ms(lat, NKEYS, 0.99),
           (long long)got, (double)got / 1e6 / ((double)span / 1e6),
           hwm / 1024.0);
    fflush(stdout);
    free(lat);
}

/* ------------------------------------------------------------------ */
/* Event streams                                                      */

/* Streams of GET /v1/events read by one thread with poll(): how many
 * "event: job" messages each got (a message split across two reads is
 * found through the last bytes of the one before). */
typedef struct sse_fan {
    int n;
    int *fd;
    long *got;
    char (*tail)[16];
    volatile bool stop;
    int64_t want, done_us; /* when every stream had `want` (monotonic us) */
    pthread_mutex_t mu;
} sse_fan_t;

static void *
sse_fan_main(void *arg)
{
    sse_fan_t *f = arg;
    struct pollfd *p = al_xcalloc((size_t)f->n, sizeof *p);
    static char buf[65536 + 16];
    while (!f->stop) {
        for (int i = 0; i < f->n; i++)
            p[i] = (struct pollfd){ .fd = f->fd[i], .events = POLLIN };
        if (poll(p, (nfds_t)f->n, 100) <= 0)
            continue;
        for (int i = 0; i < f->n; i++) {
            if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
                continue;
            size_t t = strlen(f->tail[i]);
            memcpy(buf, f->tail[i], t);
            ssize_t r = read(f->fd[i], buf + t, 65536);
            if (r <= 0)
                continue;
            size_t len = t + (size_t)r;
            buf[len] = '\0';
            for (char *q = buf; (q = strstr(q, "event: job\n")) != NULL; q++)
                if (q + 11 > buf + t) /* not counted with the last read */
                    f->got[i]++;
            size_t keep = len < 15 ? len : 15;
            memcpy(f->tail[i], buf + len - keep, keep);
            f->tail[i][keep] = '\0';
        }
        pthread_mutex_lock(&f->mu);
        if (f->want > 0 && f->done_us == 0) {
            bool all = true;
            for (int i = 0; i < f->n && all; i++)
                all = f->got[i] >= f->want;
            if (all)
                f->done_us = now_us();
        }
        pthread_mutex_unlock(&f->mu);
    }
    free(p);
    return NULL;
}

/* Opens a stream of new events for everything (the admin's token). */
static int
sse_open(const dev_t_ *d)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons(
                                  (uint16_t)strtol(d->url.port, NULL, 10)) };
    inet_pton(AF_INET, d->url.host, &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        die("cannot connect a stream: %s", strerror(errno));
    char *req = al_xasprintf("GET /v1/events HTTP/1.1\r\nHost: bench\r\n"
                             "Authorization: Bearer %s\r\n\r\n",
                             d->token);
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
        die("cannot send a stream's request");
    free(req);
    return fd;
}

/* o->jobs submissions (pending: no nodes) from o->clients clients, first
 * with no event stream open (the reference), then with `streams` streams
 * following GET /v1/events: the submission rate and the controller's CPU
 * per submission with and without them, how long after the last 201 every
 * stream had every event, and the controller's memory per stream. */
static void
case_events(const opts_t *o)
{
    const int streams = 1000;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    dev_t_ d;
    dev_start(o, 0, &d);
    opts_t m = *o;
    m.jobs = o->jobs < 5000 ? o->jobs : 5000;
    const char *body = "{\"command\":[\"true\"],\"gpus\":1}";
    int64_t *lat = al_xcalloc((size_t)m.jobs, sizeof *lat);
    int refused;
    double c0 = proc_cpu_s(d.pid);
    int64_t wall0 = submit_all(&m, &d, body, lat, &refused);
    double c1 = proc_cpu_s(d.pid);
    if (refused > 0)
        die("%d submissions refused", refused);
    long rss0 = proc_kib(d.pid, "VmRSS");
    sse_fan_t f = { .n = streams };
    pthread_mutex_init(&f.mu, NULL);
    f.fd = al_xcalloc((size_t)streams, sizeof *f.fd);
    f.got = al_xcalloc((size_t)streams, sizeof *f.got);
    f.tail = al_xcalloc((size_t)streams, sizeof *f.tail);
    for (int i = 0; i < streams; i++)
        f.fd[i] = sse_open(&d);
    pthread_t th;
    if (pthread_create(&th, NULL, sse_fan_main, &f) != 0)
        die("pthread_create: %s", strerror(errno));
    al_clock_sleep_ms(1000); /* every stream open and caught up */
    long rss1 = proc_kib(d.pid, "VmRSS");
    pthread_mutex_lock(&f.mu);
    f.want = m.jobs;
    pthread_mutex_unlock(&f.mu);
    double c2 = proc_cpu_s(d.pid);
    int64_t t1 = now_us();
    int64_t wall1 = submit_all(&m, &d, body, lat, &refused);
    int64_t last201 = t1 + wall1;
    if (refused > 0)
        die("%d submissions refused", refused);
    int64_t deadline = al_clock_mono_ms() + 60000;
    for (;;) {
        pthread_mutex_lock(&f.mu);
        int64_t done = f.done_us;
        pthread_mutex_unlock(&f.mu);
        if (done != 0)
            break;
        if (al_clock_mono_ms() > deadline) {
            long least = f.got[0];
            for (int i = 1; i < streams; i++)
                least = f.got[i] < least ? f.got[i] : least;
            die("after 60 s a stream had %ld of %d events", least, m.jobs);
        }
        al_clock_sleep_ms(5);
    }
    double c3 = proc_cpu_s(d.pid);
    f.stop = true;
    pthread_join(th, NULL);
    for (int i = 0; i < streams; i++)
        close(f.fd[i]);
    printf("{\"case\":\"events\",\"jobs\":%d,\"clients\":%d,\"streams\":%d,"
           "\"submits_per_s_no_streams\":%.0f,"
           "\"submits_per_s_streams\":%.0f,\"ratio\":%.2f,"
           "\"server_cpu_ms_per_submit_no_streams\":%.3f,"
           "\"server_cpu_ms_per_submit_streams\":%.3f,"
           "\"events_delivered\":%lld,\"all_delivered_after_last_201_ms\":%.1f,"
           "\"server_kib_per_stream\":%.1f}\n",
           m.jobs, m.clients, streams, m.jobs / (wall0 / 1e6),
           m.jobs / (wall1 / 1e6), (double)wall0 / (double)wall1,
           (c1 - c0) * 1000 / m.jobs, (c3 - c2) * 1000 / m.jobs,
           (long long)m.jobs * streams,
           (double)(f.done_us > last201 ? f.done_us - last201 : 0) / 1000.0,
           (double)(rss1 - rss0) / streams);
    fflush(stdout);
    free(f.fd);
    free(f.got);
    free(f.tail);
    free(lat);
    dev_stop(o, &d);
}

/* GET /metrics on a large cluster: --sim-nodes simulated nodes (as the
 * cluster case's, whose tasks run for an hour, so nothing ends) and
 * --jobs jobs of one GPU (100,000 unless given): 8 run per node, the rest
 * wait.  Then NSCRAPE scrapes on one kept connection, and as the
 * reference in the same run as many GET /v1/healthz (a request through
 * the same loop that renders nothing), each timed (round trip) with the
 * controller's CPU over them.  Not in the run of every case: the
 * submissions take minutes. */
static void
case_metrics(const opts_t *o)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    opts_t mo = *o;
    if (!o->jobs_given)
        mo.jobs = 100000;
    dev_t_ d;
    dev_start(&mo, 0, &d);
    al_http_conn_t c;
    al_http_conn_init(&c, &d.url);
    fleet_t f;
    fleet_start(&f, &d, mo.sim_nodes, 3600000, &c);
    int st;
    const char *body = "{\"command\":[\"true\"],\"name\":\"m\",\"gpus\":1}";
    int64_t *lat = al_xcalloc((size_t)mo.jobs, sizeof *lat);
    int refused;
    int64_t t0 = now_us();
    submit_all(&mo, &d, body, lat, &refused);
    if (refused > 0)
        die("%d submissions refused", refused);
    double submit_s = (double)(now_us() - t0) / 1e6;
    al_clock_sleep_ms(3000); /* the cycles after the last submission */
    enum { NSCRAPE = 20 };
    double ms[2], cpu_ms[2];
    size_t mbytes = 0;
    for (int k = 0; k < 2; k++) { /* the reference, then the scrapes */
        const char *path = k == 0 ? "/v1/healthz" : "/metrics";
        double cpu0 = proc_cpu_s(d.pid);
        int64_t m0 = now_us();
        for (int i = 0; i < NSCRAPE; i++) {
            al_http_resp_t r;
            char *cause = NULL;
            if (al_http_conn_request(&c, "GET", path, d.token, NULL, 0, 60000,
                                     -1, &r, &cause) != 0 ||
                r.status != 200)
                die("GET %s failed: %s", path, cause ? cause : "status");
            if (k == 1)
                mbytes = r.body.len;
            al_http_resp_fini(&r);
        }
        ms[k] = (double)(now_us() - m0) / 1000.0 / NSCRAPE;
        cpu_ms[k] = (proc_cpu_s(d.pid) - cpu0) * 1000.0 / NSCRAPE;
    }
    json_t *h = api(&c, d.token, "GET", "/v1/healthz", NULL, &st);
    long held = (long)al_json_int(h, "jobs", 0); /* its healthz count */
    json_decref(h);
    al_http_conn_close(&c);
    f.stop = 1;
    dev_stop(&mo, &d);
    fleet_join(&f);
    printf("{\"case\":\"metrics\",\"nodes\":%d,\"jobs\":%d,\"controller_jobs\":"
           "%ld,"
           "\"submit_s\":%.1f,\"metrics_ms\":%.2f,"
           "\"metrics_server_cpu_ms\":%.2f,\"metrics_kib\":%.1f,"
           "\"healthz_ms\":%.2f,\"healthz_server_cpu_ms\":%.2f}\n",
           mo.sim_nodes, mo.jobs, held, submit_s, ms[1], cpu_ms[1],
           (double)mbytes / 1024.0, ms[0], cpu_ms[0]);
    fflush(stdout);
    free(lat);
}

static void
usage(void)
{
    fputs(
        "usage: bench/e2e [--case "
        "spawn|throughput|latency|memory|cluster|cli|array|session|"
        "events|metrics]\n"
        "                 [--jobs N] [--clients N] [--nodes N] [--elements N]\n"
        "                 [--sim-nodes N] [--allot PATH] [--store sqlite|pg]\n"
        "                 [--keep]\n",
        stderr);
    exit(2);
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--stamp") == 0) {
        /* A latency job: its first act is to say when it began. */
        printf("%lld\n", (long long)real_ns());
        return 0;
    }
    opts_t o = { .cse = NULL,
                 .allot = ALLOT_BIN,
                 .jobs = 10000,
                 .clients = 8,
                 .nodes = 4,
                 .sim_nodes = 1000,
                 .elements = 100000,
                 .keep = false };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--keep") == 0) {
            o.keep = true;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--case") == 0)
            o.cse = v;
        else if (strcmp(a, "--allot") == 0)
            o.allot = v;
        else if (strcmp(a, "--store") == 0 &&
                 (strcmp(v, "pg") == 0 || strcmp(v, "sqlite") == 0))
            o.pg = strcmp(v, "pg") == 0;
        else if (strcmp(a, "--jobs") == 0 && (o.jobs = atoi(v)) > 0)
            o.jobs_given = true;
        else if (strcmp(a, "--clients") == 0 && (o.clients = atoi(v)) > 0)
            continue;
        else if (strcmp(a, "--nodes") == 0 && (o.nodes = atoi(v)) > 0)
            continue;
        else if (strcmp(a, "--sim-nodes") == 0 && (o.sim_nodes = atoi(v)) > 0)
            continue;
        else if (strcmp(a, "--elements") == 0 && (o.elements = atoi(v)) > 0)
            continue;
        else
            usage();
    }
    if (o.cse != NULL && strcmp(o.cse, "throughput") != 0 &&
        strcmp(o.cse, "latency") != 0 && strcmp(o.cse, "memory") != 0 &&
        strcmp(o.cse, "cluster") != 0 && strcmp(o.cse, "cli") != 0 &&
        strcmp(o.cse, "array") != 0 && strcmp(o.cse, "session") != 0 &&
        strcmp(o.cse, "spawn") != 0 && strcmp(o.cse, "events") != 0 &&
        strcmp(o.cse, "metrics") != 0)
        usage();
    if (access(o.allot, X_OK) != 0)
        die("cannot run %s (build it, or pass --allot PATH)", o.allot);
    signal(SIGPIPE, SIG_IGN);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        die("cannot find %s", "/proc/self/exe");
    self[n] = '\0';
    print_head(&o);
    if (o.cse == NULL || strcmp(o.cse, "spawn") == 0)
        case_spawn();
    if (o.cse == NULL || strcmp(o.cse, "latency") == 0)
        case_latency(&o, self);
    if (o.cse == NULL || strcmp(o.cse, "throughput") == 0)
        case_throughput(&o);
    if (o.cse == NULL || strcmp(o.cse, "memory") == 0)
        case_memory(&o);
    if (o.cse == NULL || strcmp(o.cse, "cluster") == 0)
        case_cluster(&o);
    if (o.cse == NULL || strcmp(o.cse, "cli") == 0)
        case_cli(&o);
    if (o.cse == NULL || strcmp(o.cse, "array") == 0)
        case_array(&o);
    if (o.cse == NULL || strcmp(o.cse, "session") == 0)
        case_session(&o);
    if (o.cse == NULL || strcmp(o.cse, "events") == 0)
        case_events(&o);
    if (o.cse != NULL && strcmp(o.cse, "metrics") == 0)
        case_metrics(&o); /* only when asked: minutes of submissions */
    return 0;
}
