/*
 * routerd.c -- `allot router`: a router process for inference services,
 * beside the controller's own.  It runs router.c's request path in a
 * process of its own and, every 100 ms, reads the controller's service
 * table (GET /v1/router/table: services, their running replicas, the
 * tokens that may call private services), hands it to its router, and
 * reports what the router saw (POST /v1/router/report: load and
 * readiness), which the controller's autoscaler adds to its own router's.
 * While the controller cannot be reached it routes by the last table it
 * read.
 *
 * May call: router.c, and src/common (HTTP client, JSON, files, the
 * daemons' start-up).  Nothing of the controller's loop: it is another
 * process.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "core/error.h"
#include "daemon.h"
#include "fs.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "router.h"
#include "router_cmd.h"
#include "xmalloc.h"

#define LOOK_MS 100

static volatile sig_atomic_t stopping;

static void
on_stop(int sig)
{
    (void)sig;
    stopping = 1;
}

static bool
unhex(const char *s, unsigned char *out, size_t n)
{
    if (s == NULL || strlen(s) != 2 * n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = s[2 * i + (size_t)k];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                           : -1;
            if (d < 0)
                return false;
            v = v * 16 + (unsigned)d;
        }
        out[i] = (unsigned char)v;
    }
    return true;
}

/* The table's services as the router takes them (strings owned by tab);
 * *n of them; free the array and each rep array. */
static al__rt_svc_t *
services_of(const json_t *tab, int *n)
{
    json_t *sv = json_object_get(tab, "services");
    size_t k = json_array_size(sv);
    al__rt_svc_t *v = k > 0 ? al_xcalloc(k, sizeof *v) : NULL;
    for (size_t i = 0; i < k; i++) {
        json_t *s = json_array_get(sv, i);
        json_t *reps = json_object_get(s, "replicas");
        size_t nr = json_array_size(reps);
        v[i] = (al__rt_svc_t){
            .name = al_json_str(s, "name", "?"),
            .ready_path = al_json_str(s, "ready_path", "/"),
            .public = al_json_bool(s, "public", false),
            .owner = al_json_str(s, "owner", ""),
            .queue_max = (int)al_json_int(s, "queue_max", 0),
            .queue_timeout_ms = al_json_int(s, "queue_timeout_ms", 1000),
            .port = (int)al_json_int(s, "port", 0),
            .nrep = (int)nr,
            .rep = nr > 0 ? al_xcalloc(nr, sizeof *v[i].rep) : NULL,
        };
        for (size_t r = 0; r < nr; r++) {
            json_t *x = json_array_get(reps, r);
            v[i].rep[r] = (al__rt_rep_t){
                .job = (uint64_t)al_json_int(x, "job", 0),
                .addr = al_json_str(x, "addr", NULL),
                .port = (int)al_json_int(x, "port", 0),
                .draining = al_json_bool(x, "draining", false),
            };
        }
    }
    *n = (int)k;
    return v;
}

static al__token_t *
tokens_of(const json_t *tab, int *n)
{
    json_t *tv = json_object_get(tab, "tokens");
    size_t k = json_array_size(tv);
    al__token_t *v = k > 0 ? al_xcalloc(k, sizeof *v) : NULL;
    int m = 0;
    for (size_t i = 0; i < k; i++) {
        json_t *t = json_array_get(tv, i);
        const char *id = al_json_str(t, "id", "");
        al__token_t *o = &v[m];
        if (strlen(id) != 16 ||
            !unhex(al_json_str(t, "salt", NULL), o->salt, sizeof o->salt) ||
            !unhex(al_json_str(t, "hash", NULL), o->hash, sizeof o->hash))
            continue;
        memcpy(o->id, id, 17);
        o->user = al_xstrdup(al_json_str(t, "user", ""));
        o->role = (int)al_json_int(t, "role", 0);
        m++;
    }
    *n = m;
    return v;
}

static json_t *
report_of(const char *name, const al__rt_svc_t *v, int n)
{
    json_t *svcs = json_array();
    for (int i = 0; i < n; i++) {
        json_t *reps = json_array();
        for (int r = 0; r < v[i].nrep; r++)
            json_array_append_new(reps,
                                  json_pack("{s:I, s:b, s:i}", "job",
                                            (json_int_t)v[i].rep[r].job,
                                            "ready", v[i].rep[r].ready,
                                            "inflight", v[i].rep[r].inflight));
        json_array_append_new(
            svcs, json_pack("{s:s, s:i, s:i, s:I, s:I, s:f, s:o}", "name",
                            v[i].name, "inflight", v[i].inflight, "waiting",
                            v[i].waiting, "requests", (json_int_t)v[i].requests,
                            "errors", (json_int_t)v[i].errors, "latency_sum",
                            v[i].latency_sum, "replicas", reps));
    }
    return json_pack("{s:s, s:o}", "router", name, "services", svcs);
}

/* One look: the table in, the report out.  false when the controller
 * could not be asked (the router keeps its last table). */
static bool
look(al_http_conn_t *conn, const char *token, al__router_t *r, const char *name)
{
    al_http_resp_t resp;
    char *cause = NULL;
    int rc = al_http_conn_request(conn, "GET", "/v1/router/table", token, NULL,
                                  0, 5000, -1, &resp, &cause);
    free(cause);
    if (rc != 0)
        return false;
    json_t *tab = resp.status == 200
                      ? al_json_parse(resp.body.data, resp.body.len, NULL)
                      : NULL;
    al_http_resp_fini(&resp);
    if (tab == NULL)
        return false;
    int n, ntok;
    al__rt_svc_t *v = services_of(tab, &n);
    al__token_t *toks = tokens_of(tab, &ntok);
    al__router_sync(r, v, n, toks, ntok);
    json_t *rep = report_of(name, v, n);
    for (int i = 0; i < n; i++)
        free(v[i].rep);
    free(v);
    for (int i = 0; i < ntok; i++)
        free(toks[i].user);
    free(toks);
    json_decref(tab);
    char *body = al_json_dump(rep);
    json_decref(rep);
    rc = al_http_conn_request(conn, "POST", "/v1/router/report", token, body,
                              strlen(body), 5000, -1, &resp, &cause);
    free(body);
    free(cause);
    if (rc == 0)
        al_http_resp_fini(&resp);
    return rc == 0;
}

int
al_router_main(int argc, char **argv)
{
    router_args_t a;
    memset(&a, 0, sizeof a);
    a.listen = "127.0.0.1:8080";
    int rc = al_daemon_parse(&a.d, &al_router_cmd, &a, argc, argv);
    bool ok = rc != 0 || a.d.help || (a.server != NULL && a.token_file != NULL);
    if (!al_daemon_begin(&a.d, &al_router_cmd, rc, ok, &rc))
        return rc;
    al_url_t u;
    char *cause = NULL, *token = NULL;
    size_t tn;
    if (al_url_parse(a.server, &u, &cause) != 0) {
        fprintf(stderr, "allot router: --server: %s\n", cause);
        free(cause);
        return AL_EXIT_USAGE;
    }
    if (al_fs_read_file(a.token_file, &token, &tn) != 0) {
        fprintf(stderr, "allot router: cannot read %s\n", a.token_file);
        return AL_EXIT_FAIL;
    }
    token[strcspn(token, "\r\n")] = '\0';
    al_daemon_catch(on_stop);
    al__router_t *r;
    if (al__router_start(a.listen, &r, &cause) != 0) {
        fprintf(stderr, "allot router: %s\n", cause);
        free(cause);
        free(token);
        return AL_EXIT_FAIL;
    }
    al__router_set_head_timeout(r, a.head_ms);
    struct sockaddr_in sa = al__router_addr(r);
    char host[INET_ADDRSTRLEN] = "127.0.0.1";
    if (sa.sin_addr.s_addr != htonl(INADDR_ANY))
        inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
    char *url = al_xasprintf("http://%s:%d", host, ntohs(sa.sin_port));
    char *name = a.name != NULL
                     ? al_xstrdup(a.name)
                     : al_xasprintf("%s:%d", host, ntohs(sa.sin_port));
    if (a.url_file != NULL) {
        char *line = al_xasprintf("%s\n", url);
        if (al_fs_write_file(a.url_file, line, strlen(line), 0644,
                             AL_FS_SYNC) != 0)
            al_warn("cannot write %s", a.url_file);
        free(line);
    }
    al_info("router %s listening on %s for %s", name, url, a.server);
    al_http_conn_t conn;
    al_http_conn_init(&conn, &u);
    bool was_ok = true;
    while (!stopping) {
        bool now_ok = look(&conn, token, r, name);
        if (now_ok != was_ok)
            al_info(now_ok ? "the controller answers again"
                           : "cannot reach the controller; routing by the "
                             "last table");
        was_ok = now_ok;
        struct timespec ts = { 0, LOOK_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
    al_info("stopping");
    al_http_conn_close(&conn);
    al__router_stop(r);
    free(url);
    free(name);
    free(token);
    return AL_EXIT_OK;
}
