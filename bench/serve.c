/*
 * serve.c -- bench/serve: the inference services' router against going
 * straight to a replica, on loopback.
 *
 * Starts `allot server` with its router (--router-listen) and one agent
 * with emulated GPUs in a private directory, creates a service whose one
 * replica is this very program in --replica mode (a minimal HTTP/1.1
 * keep-alive server answering "ok" at once, so the figures are the
 * router's and not a model's), then measures, from C client threads over
 * kept-alive connections:
 *
 *   - latency at a fixed rate (--rate, default 5000 requests/s, paced per
 *     connection) straight to the replica and through the router, in turn,
 *     several rounds; p50 and p99 of each and what the router adds;
 *   - requests/s through the router and straight, closed loop, as fast as
 *     --clients connections go;
 *   - a cold start: a second service at zero replicas gets a request; the
 *     time from the load rise to the ready replica, minus the replica's own
 *     start to ready (what the controller, the scheduler and the agent add).
 *
 * Prints one JSON line per figure set and the conditions.  Not a test.
 *
 *   bench/serve [--rate N] [--seconds S] [--clients N] [--allot PATH]
 *               [--keep]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef ALLOT_BIN
#define ALLOT_BIN "allot"
#endif

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench/serve: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* ------------------------------------------------------------------ */
/* The replica                                                        */

static void *
replica_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    size_t have = 0;
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 3\r\n\r\nok\n";
    for (;;) {
        char *end = NULL;
        for (size_t i = 0; have >= 4 && i + 4 <= have && end == NULL; i++)
            if (memcmp(buf + i, "\r\n\r\n", 4) == 0)
                end = buf + i + 4;
        if (end == NULL) {
            if (have == sizeof buf)
                break;
            ssize_t n = read(fd, buf + have, sizeof buf - have);
            if (n <= 0)
                break;
            have += (size_t)n;
            continue;
        }
        /* Requests here have no body. */
        if (write(fd, ok, sizeof ok - 1) != (ssize_t)(sizeof ok - 1))
            break;
        size_t used = (size_t)(end - buf);
        memmove(buf, end, have - used);
        have -= used;
    }
    close(fd);
    return NULL;
}

static int
replica_main(void)
{
    const char *p = getenv("PORT");
    if (p == NULL)
        die("--replica needs PORT");
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)atoi(p)) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(lfd, 512) != 0)
        die("replica: cannot listen on %s: %s", p, strerror(errno));
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        if (pthread_create(&t, NULL, replica_conn, (void *)(intptr_t)fd) != 0)
            close(fd);
        else
            pthread_detach(t);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* A client                                                           */

static int
dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* One request on fd and its whole answer (Content-Length framing); the
 * status, or -1. */
static int
roundtrip(int fd, const char *req, size_t reqlen, char **body)
{
    if (write(fd, req, reqlen) != (ssize_t)reqlen)
        return -1;
    static __thread char buf[65536];
    size_t have = 0;
    long len = -1;
    char *hend = NULL;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            return -1;
        have += (size_t)n;
        buf[have] = '\0';
        if (hend == NULL && (hend = strstr(buf, "\r\n\r\n")) != NULL) {
            char *cl = strstr(buf, "\r\nContent-Length:");
            if (cl == NULL || cl > hend)
                return -1;
            len = atol(cl + 17);
            hend += 4;
        }
        if (hend != NULL && (long)(have - (size_t)(hend - buf)) >= len)
            break;
    }
    if (body != NULL)
        *body = strndup(hend, (size_t)len);
    return atoi(buf + 9);
}

/* A request to the controller's API (its own connection). */
static int
api(int port, const char *token, const char *method, const char *path,
    const char *json, char **body)
{
    int fd = dial(port);
    if (fd < 0)
        return -1;
    char req[4096];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s"
                     "\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, token, json ? strlen(json) : 0,
                     json ? json : "");
    int st = roundtrip(fd, req, (size_t)n, body);
    close(fd);
    return st;
}

typedef struct load {
    int port;
    const char *path;
    double rate;  /* per connection; 0: closed loop */
    double until; /* now_s() */
    double *lat;  /* latencies, seconds */
    size_t nlat, cap;
    long failed;
} load_t;

static void *
load_main(void *arg)
{
    load_t *l = arg;
    int fd = dial(l->port);
    if (fd < 0) {
        l->failed++;
        return NULL;
    }
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
                     l->path);
    double next = now_s();
    while (now_s() < l->until) {
        if (l->rate > 0) {
            double w = next - now_s();
            if (w > 0) {
                struct timespec ts = { (time_t)w,
                                       (long)((w - (double)(time_t)w) * 1e9) };
                nanosleep(&ts, NULL);
            }
            next += 1 / l->rate;
        }
        double t0 = now_s();
        if (roundtrip(fd, req, (size_t)n, NULL) != 200) {
            l->failed++;
            close(fd);
            if ((fd = dial(l->port)) < 0)
                break;
            continue;
        }
        if (l->nlat == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 4096;
            l->lat = realloc(l->lat, l->cap * sizeof *l->lat);
        }
        l->lat[l->nlat++] = now_s() - t0;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int
cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct fig {
    double p50_ms, p99_ms, rps;
    size_t n;
    long failed;
    double *lat; /* the n latencies (s), sorted; the caller frees */
} fig_t;

/* nconn connections for seconds to port/path, at rate requests/s in all
 * (0: closed loop). */
static fig_t
run_load(int port, const char *path, int nconn, double rate, double seconds)
{
    load_t *ls = calloc((size_t)nconn, sizeof *ls);
    pthread_t *ts = calloc((size_t)nconn, sizeof *ts);
    double t0 = now_s();
    for (int i = 0; i < nconn; i++) {
        ls[i] = (load_t){ .port = port,
                          .path = path,
                          .rate = rate / nconn,
                          .until = t0 + seconds };
        pthread_create(&ts[i], NULL, load_main, &ls[i]);
    }
    size_t total = 0;
    fig_t f = { 0 };
    for (int i = 0; i < nconn; i++) {
        pthread_join(ts[i], NULL);
        total += ls[i].nlat;
        f.failed += ls[i].failed;
    }
    double el = now_s() - t0;
    double *all = malloc((total + 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < nconn; i++) {
        memcpy(all + k, ls[i].lat, ls[i].nlat * sizeof *all);
        k += ls[i].nlat;
        free(ls[i].lat);
    }
    qsort(all, total, sizeof *all, cmp_d);
    f.n = total;
    f.rps = (double)total / el;
    if (total > 0) {
        f.p50_ms = 1000 * all[total / 2];
        f.p99_ms = 1000 * all[(size_t)((double)total * 0.99)];
    }
    f.lat = all;
    free(ls);
    free(ts);
    return f;
}

/* ------------------------------------------------------------------ */
/* The cluster                                                        */

static char dir[256];
static pid_t kids[2];

static pid_t
spawn(const char *allot, const char *const argv[], const char *log)
{
    pid_t p = fork();
    if (p == 0) {
        FILE *f = freopen(log, "w", stdout);
        (void)f;
        dup2(1, 2);
        setsid();
        execv(allot, (char *const *)argv); /* execv does not write them */
        _exit(127);
    }
    return p;
}

static char *
slurp(const char *path, double wait_s)
{
    double end = now_s() + wait_s;
    for (;;) {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            char buf[512];
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
            if (n > 0)
                return strdup(buf);
        }
        if (now_s() > end)
            die("no %s", path);
        usleep(50000);
    }
}

static int
port_of(const char *url)
{
    const char *c = strrchr(url, ':');
    return c ? atoi(c + 1) : -1;
}

static void
cleanup(void)
{
    for (int i = 1; i >= 0; i--)
        if (kids[i] > 0) {
            kill(kids[i], SIGTERM);
            waitpid(kids[i], NULL, 0);
        }
}

/* Waits until service name has `want` ready replicas; the port of the
 * first. */
static int
wait_ready(int cport, const char *tok, const char *name, double wait_s)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/services/%s", name);
    double end = now_s() + wait_s;
    while (now_s() < end) {
        char *b = NULL;
        if (api(cport, tok, "GET", path, NULL, &b) == 200 && b != NULL &&
            strstr(b, "\"state\":\"ready\"") != NULL) {
            char *p = strstr(b, "\"port\":");
            int port = p ? atoi(p + 7) : -1;
            free(b);
            return port;
        }
        free(b);
        usleep(100000);
    }
    die("service %s not ready", name);
    return -1;
}

/* CPU seconds (user and system) process pid has used, or 0. */
static double
cpu_s(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* After the command's ")": state is field 3, utime 14, stime 15. */
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (p == NULL || sscanf(p + 2,
                            "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                            "%lu %lu",
                            &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double
num_field(const char *b, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(b, k);
    return p ? atof(p + strlen(k)) : -1;
}

int
main(int argc, char **argv)
{
    double rate = 5000, seconds = 3;
    int clients = 16;
    const char *allot = ALLOT_BIN;
    bool keep = false, timing = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--replica") == 0)
            return replica_main();
        if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
            rate = atof(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
            clients = atoi(argv[++i]);
        else if (strcmp(argv[i], "--allot") == 0 && i + 1 < argc)
            allot = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            keep = true;
        else if (strcmp(argv[i], "--timing") == 0)
            timing = true;
        else
            die("usage: bench/serve [--rate N] [--seconds S] [--clients N] "
                "[--allot PATH] [--keep] [--timing]");
    }
    char self[4096];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sn <= 0)
        die("cannot find myself");
    self[sn] = '\0';
    snprintf(dir, sizeof dir, "/tmp/allot-bench-serve-XXXXXX");
    if (mkdtemp(dir) == NULL)
        die("mkdtemp");
    atexit(cleanup);
    char state[300], ag[300], log[300], ports[32];
    snprintf(state, sizeof state, "%s/server", dir);
    snprintf(ag, sizeof ag, "%s/agent", dir);
    srand((unsigned)getpid());
    int base = 10000 + (rand() % 100) * 200;
    snprintf(ports, sizeof ports, "%d-%d", base, base + 199);
    const char *sargv[] = {
        "allot", "server",          "--listen",    "127.0.0.1:0",     "--state",
        state,   "--router-listen", "127.0.0.1:0", "--service-ports", ports,
        NULL
    };
    snprintf(log, sizeof log, "%s/server.log", dir);
    /* The router's timing points (docs/serving.md), for the server only. */
    char tfile[300];
    snprintf(tfile, sizeof tfile, "%s/router-timing.json", dir);
    if (timing)
        setenv("ALLOT_ROUTER_TIMING", tfile, 1);
    kids[0] = spawn(allot, sargv, log);
    unsetenv("ALLOT_ROUTER_TIMING");
    char p[400];
    snprintf(p, sizeof p, "%s/url", state);
    char *url = slurp(p, 10);
    snprintf(p, sizeof p, "%s/router-url", state);
    char *rurl = slurp(p, 1);
    snprintf(p, sizeof p, "%s/admin-token", state);
    char *tok = slurp(p, 1);
    snprintf(p, sizeof p, "%s/join-token", state);
    char *join = slurp(p, 1);
    int cport = port_of(url), rport = port_of(rurl);
    const char *aargv[] = { "allot",       "agent",        "--server",
                            url,           "--join-token", join,
                            "--name",      "n1",           "--addr",
                            "127.0.0.1",   "--state",      ag,
                            "--fake-gpus", "4xH100-80GB",  "--no-run-as-user",
                            NULL };
    snprintf(log, sizeof log, "%s/agent.log", dir);
    kids[1] = spawn(allot, aargv, log);
    usleep(500000);
    setenv("ALLOT_SERVER", url, 1);
    setenv("ALLOT_TOKEN", tok, 1);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "'%s' queue set inf --deserved gpu=4 >/dev/null",
             allot);
    if (system(cmd) != 0)
        die("cannot create the queue");
    char body[6000];
    snprintf(body, sizeof body,
             "{\"name\":\"b\",\"queue\":\"inf\",\"gpus\":1,\"min\":1,"
             "\"max\":1,\"public\":true,\"ready_path\":\"/\","
             "\"command\":[\"%s\",\"--replica\"]}",
             self);
    if (api(cport, tok, "POST", "/v1/services", body, NULL) != 201)
        die("cannot create the service");
    int direct = wait_ready(cport, tok, "b", 30);

    /* The conditions. */
    char model[600] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            snprintf(model, sizeof model, "%s", c ? c + 2 : line);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f != NULL)
        fclose(f);
    double load1 = 0;
    f = fopen("/proc/loadavg", "r");
    if (f != NULL && fscanf(f, "%lf", &load1) != 1)
        load1 = 0;
    if (f != NULL)
        fclose(f);
    printf("{\"bench\":\"serve\",\"cpu\":\"%s\",\"cpus\":%ld,"
           "\"load_avg_1m\":%.2f,\"rate\":%.0f,\"seconds_per_round\":%.1f,"
           "\"connections\":%d}\n",
           model, sysconf(_SC_NPROCESSORS_ONLN), load1, rate, seconds, clients);
    fflush(stdout);

    /* Latency at a fixed rate: rounds, alternating, best round of each
     * (the machine is shared; the best is the least disturbed). */
    fig_t best_d = { 0 }, best_r = { 0 };
    /* The controller's CPU while requests go straight (its own loop: the
     * reference) and through its router, per request. */
    double cpu_d = 0, cpu_r = 0;
    size_t n_d = 0, n_r = 0;
    /* And the p99 of all rounds together, each path's: steadier than
     * one round's on a shared machine. */
    double *all_d = NULL, *all_r = NULL;
    for (int round = 0; round < 3; round++) {
        double c0 = cpu_s(kids[0]);
        fig_t d = run_load(direct, "/x", clients, rate, seconds);
        double c1 = cpu_s(kids[0]);
        fig_t r = run_load(rport, "/s/b/x", clients, rate, seconds);
        cpu_d += c1 - c0;
        cpu_r += cpu_s(kids[0]) - c1;
        all_d = realloc(all_d, (n_d + d.n + 1) * sizeof *all_d);
        all_r = realloc(all_r, (n_r + r.n + 1) * sizeof *all_r);
        memcpy(all_d + n_d, d.lat, d.n * sizeof *all_d);
        memcpy(all_r + n_r, r.lat, r.n * sizeof *all_r);
        free(d.lat);
        free(r.lat);
        d.lat = r.lat = NULL;
        n_d += d.n;
        n_r += r.n;
        if (round == 0 || d.p50_ms < best_d.p50_ms)
            best_d = d;
        if (round == 0 || r.p50_ms < best_r.p50_ms)
            best_r = r;
    }
    qsort(all_d, n_d, sizeof *all_d, cmp_d);
    qsort(all_r, n_r, sizeof *all_r, cmp_d);
    double p99_all_d = n_d ? 1000 * all_d[(size_t)((double)n_d * 0.99)] : 0;
    double p99_all_r = n_r ? 1000 * all_r[(size_t)((double)n_r * 0.99)] : 0;
    free(all_d);
    free(all_r);
    printf("{\"case\":\"serve_latency\",\"rate\":%.0f,"
           "\"direct_p50_ms\":%.3f,\"direct_p99_ms\":%.3f,"
           "\"router_p50_ms\":%.3f,\"router_p99_ms\":%.3f,"
           "\"added_p50_ms\":%.3f,\"added_p99_ms\":%.3f,"
           "\"achieved_rps_direct\":%.0f,\"achieved_rps_router\":%.0f,"
           "\"server_cpu_us_per_req_direct\":%.1f,"
           "\"server_cpu_us_per_req_router\":%.1f,"
           "\"direct_p99_all_ms\":%.3f,\"router_p99_all_ms\":%.3f,"
           "\"added_p99_all_ms\":%.3f,"
           "\"failed\":%ld}\n",
           rate, best_d.p50_ms, best_d.p99_ms, best_r.p50_ms, best_r.p99_ms,
           best_r.p50_ms - best_d.p50_ms, best_r.p99_ms - best_d.p99_ms,
           best_d.rps, best_r.rps, n_d ? 1e6 * cpu_d / (double)n_d : 0,
           n_r ? 1e6 * cpu_r / (double)n_r : 0, p99_all_d, p99_all_r,
           p99_all_r - p99_all_d, best_d.failed + best_r.failed);
    fflush(stdout);

    /* Where the router's requests of those rounds spent their time. */
    if (timing) {
        usleep(1500000); /* the router writes the file once a second */
        FILE *tf = fopen(tfile, "r");
        char tb[16384];
        size_t tn = tf != NULL ? fread(tb, 1, sizeof tb - 1, tf) : 0;
        if (tf != NULL)
            fclose(tf);
        tb[tn] = '\0';
        tb[strcspn(tb, "\n")] = '\0';
        printf("{\"case\":\"serve_router_stages\",\"rounds\":3,"
               "\"stages\":%s}\n",
               tn > 0 ? tb : "null");
        fflush(stdout);
    }

    /* Throughput, closed loop. */
    fig_t td = run_load(direct, "/x", clients, 0, seconds);
    fig_t tr = run_load(rport, "/s/b/x", clients, 0, seconds);
    free(td.lat);
    free(tr.lat);
    printf("{\"case\":\"serve_throughput\",\"connections\":%d,"
           "\"direct_rps\":%.0f,\"router_rps\":%.0f,\"ratio\":%.2f,"
           "\"router_p50_ms\":%.3f,\"router_p99_ms\":%.3f,\"failed\":%ld}\n",
           clients, td.rps, tr.rps, td.rps > 0 ? tr.rps / td.rps : 0, tr.p50_ms,
           tr.p99_ms, td.failed + tr.failed);
    fflush(stdout);

    /* A cold start: the load rise to a ready replica. */
    snprintf(body, sizeof body,
             "{\"name\":\"z\",\"queue\":\"inf\",\"gpus\":1,\"min\":0,"
             "\"max\":1,\"public\":true,\"ready_path\":\"/\","
             "\"command\":[\"%s\",\"--replica\"]}",
             self);
    if (api(cport, tok, "POST", "/v1/services", body, NULL) != 201)
        die("cannot create the second service");
    int fd = dial(rport);
    static const char zreq[] = "GET /s/z/x HTTP/1.1\r\nHost: x\r\n\r\n";
    double t0 = now_s();
    int st = fd >= 0 ? roundtrip(fd, zreq, sizeof zreq - 1, NULL) : -1;
    double first = now_s() - t0;
    if (fd >= 0)
        close(fd);
    usleep(300000);
    char *b = NULL;
    api(cport, tok, "GET", "/v1/services/z", NULL, &b);
    double rise = b ? num_field(b, "rise_s") : -1;
    double start = b ? num_field(b, "start_s") : -1;
    free(b);
    printf("{\"case\":\"serve_cold_start\",\"status\":%d,"
           "\"first_answer_s\":%.3f,\"rise_to_ready_s\":%.3f,"
           "\"replica_start_s\":%.3f,\"rise_minus_replica_start_s\":%.3f}\n",
           st, first, rise, start, rise - start);
    /* The replicas end with their services (an agent stopped leaves its
     * tasks running for the next one). */
    api(cport, tok, "DELETE", "/v1/services/b", NULL, NULL);
    api(cport, tok, "DELETE", "/v1/services/z", NULL, NULL);
    usleep(1500000);
    if (!keep) {
        cleanup();
        kids[0] = kids[1] = 0;
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench/serve: cannot remove %s\n", dir);
    } else {
        fprintf(stderr, "bench/serve: kept %s\n", dir);
    }
    return 0;
}
