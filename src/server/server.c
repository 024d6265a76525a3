/*
 * server.c -- `allot server`: options, the HTTP intake and start/stop.
 *
 * libmicrohttpd runs one polling thread (epoll) for every connection.  The
 * access handler collects the body (refusing more than max_body bytes with
 * 413), matches the route table, parses the JSON body and the query
 * arguments, suspends the connection and queues the request for the
 * control loop; once the reply is durable the loop hands the request back
 * through ctl.reply (reply_ready(), which resumes the connection) and the
 * handler, called again, sends the reply.  The only file of the
 * controller that knows libmicrohttpd.
 *
 * A reply of 101 (an interactive session's stream) turns the connection
 * over: its socket goes to relay.c, which gives it back through
 * close_upgraded() when the session ends.
 *
 * A reply that is an event stream (GET /v1/events) is sent by a content
 * reader over events.c's stream: the reader suspends the connection when
 * there is nothing to send and the hub resumes it when there is, so a
 * stream costs no thread and a slow client only its own buffers.
 *
 * May call: ctl.c (start, stop, submit), route.c (matching a path),
 * relay.c (upgraded sockets), events.c (event streams) and req.c (an
 * error reply).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "daemon.h"
#include "fs.h"
#include "json.h"
#include "leader.h"
#include "log.h"
#include "opt.h"
#include "router.h"
#include "selfsign.h"
#include "server_cmd.h"
#include "server_int.h"
#include "xmalloc.h"

struct al_server {
    al_ctl_t ctl;
    struct MHD_Daemon *mhd;
    int port;
    /* --metrics-listen: GET /metrics without a token, nothing else. */
    struct MHD_Daemon *metrics_mhd;
    int metrics_port;
    int lock_fd; /* STATE/lock: one controller per state directory */
    /* --tls-cert/--tls-key's contents, which libmicrohttpd reads while it
     * runs. */
    char *tls_cert, *tls_key;
};

void
al_server_opts_default(al_server_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:7070";
    o->state_dir = "allot-state";
    o->node_timeout_ms = 30000;
    o->sched_interval_ms = 1000;
    o->coalesce_ms = 2;
    o->usage_interval_s = 60;
    o->usage_rollup = 60;
    o->consolidate_moves = 4;
    o->fairshare_half_life_s = INT64_C(7) * 86400;
    {
        al_config_t cd; /* the look-ahead's defaults are the core's */
        al_config_default(&cd);
        o->lookahead_depth = cd.lookahead_depth;
        o->lookahead_horizon_s = cd.lookahead_horizon;
        o->lookahead_hold = cd.lookahead_hold;
    }
    o->retry_backoff_s = 10;
    o->usage_keep_fine_days = 7;
    o->usage_keep_coarse_days = 365;
    o->grace_ms = 10000;
    o->max_body = 1 << 20;
    o->sync_full = 1;
}

/* Per-connection state between the calls of the access handler. */
struct conn {
    al_buf_t body;
    bool too_large;
    al__req_t *req; /* queued for the loop while the connection waits */
};

static enum MHD_Result
send_reply(struct MHD_Connection *c, int status, const char *ctype, char *data,
           size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", ctype);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result
send_json(struct MHD_Connection *c, int status, json_t *body)
{
    char *text = al_json_dump_flags(body, AL__REPLY_FLAGS);
    size_t len = strlen(text);
    /* Newline-terminated for people using curl. */
    text = al_xrealloc(text, len + 2);
    text[len] = '\n';
    text[len + 1] = '\0';
    return send_reply(c, status, "application/json", text, len + 1);
}

static enum MHD_Result
send_error(struct MHD_Connection *c, int status, const char *code,
           const char *msg)
{
    json_t *o = json_pack("{s:s, s:s}", "error", code, "message", msg);
    enum MHD_Result r = send_json(c, status, o);
    json_decref(o);
    return r;
}

static enum MHD_Result
collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
            const char *value)
{
    al__req_t *req = cls;
    if (req->nargs == AL_MAX_ARGS)
        return MHD_NO;
    req->argk[req->nargs] = al_xstrdup(key);
    req->argv[req->nargs] = al_xstrdup(value ? value : "");
    req->nargs++;
    return MHD_YES;
}

static void
req_free(al__req_t *req)
{
    free(req->cap[0]);
    free(req->cap[1]);
    for (int i = 0; i < req->nargs; i++) {
        free(req->argk[i]);
        free(req->argv[i]);
    }
    free(req->token);
    free(req->upgrade);
    free(req->last_event_id);
    al__events_free(req->sse);
    json_decref(req->body);
    json_decref(req->resp);
    json_decref(req->acks);
    free(req->text);
    free(req);
}

/* What the upgrade handler needs to hand a socket to the relay. */
struct upgrading {
    al__relay_t *relay;
    char id[40];
    bool agent;
};

static void
close_upgraded(void *handle)
{
    MHD_upgrade_action(handle, MHD_UPGRADE_ACTION_CLOSE);
}

static void
on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls,
            const char *extra, size_t n, MHD_socket sock,
            struct MHD_UpgradeResponseHandle *urh)
{
    struct upgrading *u = cls;
    (void)c;
    (void)con_cls;
    if (!al__relay_take(u->relay, u->id, u->agent, sock, extra, n, urh))
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    free(u);
}

/* A 101: the connection becomes the session's stream. */
static enum MHD_Result
send_upgrade(al_server_t *s, struct MHD_Connection *c, al__req_t *req)
{
    struct upgrading *u = al_xcalloc(1, sizeof *u);
    u->relay = s->ctl.relay;
    snprintf(u->id, sizeof u->id, "%s", req->upgrade);
    u->agent = req->upgrade_agent;
    struct MHD_Response *r = MHD_create_response_for_upgrade(on_upgraded, u);
    MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "allot-stream");
    enum MHD_Result ret =
        MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
    MHD_destroy_response(r);
    if (ret != MHD_YES)
        free(u);
    req_free(req);
    return ret;
}

/* libmicrohttpd's side of an event stream (events.c). */
static ssize_t
sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ssize_t n = al__events_read(cls, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void
sse_free(void *cls)
{
    al__events_free(cls);
}

static void
sse_suspend(void *conn)
{
    MHD_suspend_connection(conn);
}

static void
sse_resume(void *conn)
{
    MHD_resume_connection(conn);
}

/* A 200 whose body is the event stream req->sse, which it takes. */
static enum MHD_Result
send_events(struct MHD_Connection *c, al__req_t *req)
{
    al__sse_t *sse = req->sse;
    req->sse = NULL;
    req_free(req);
    al__events_attach(sse, c);
    struct MHD_Response *r = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 16384, sse_read, sse, sse_free);
    if (r == NULL) {
        al__events_free(sse);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r); /* frees sse when ret is MHD_NO */
    return ret;
}

/* The dashboard's files: no script but its own, no framing, no sniffing
 * (docs/server.md, "Dashboard"). */
static enum MHD_Result
send_web(struct MHD_Connection *c, al__req_t *req)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        req->text_len, req->text, MHD_RESPMEM_MUST_FREE);
    req->text = NULL;
    MHD_add_response_header(r, "Content-Type",
                            req->ctype ? req->ctype : "text/plain");
    MHD_add_response_header(
        r, "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ret =
        MHD_queue_response(c, (unsigned)(req->status ? req->status : 200), r);
    MHD_destroy_response(r);
    req_free(req);
    return ret;
}

/* Sends the reply the loop made for req and frees req. */
static enum MHD_Result
send_handled(al_server_t *s, struct MHD_Connection *c, al__req_t *req)
{
    enum MHD_Result r;
    if (req->upgrade != NULL && req->status == 101)
        return send_upgrade(s, c, req);
    if (req->sse != NULL)
        return send_events(c, req);
    if (req->web && req->text != NULL)
        return send_web(c, req);
    if (req->text != NULL) {
        r = send_reply(c, req->status ? req->status : 200,
                       req->ctype ? req->ctype : "text/plain; charset=utf-8",
                       req->text, req->text_len);
        req->text = NULL; /* MHD frees it */
    } else if (req->resp != NULL) {
        r = send_json(c, req->status, req->resp);
    } else {
        r = send_error(c, 500, "internal", "no reply");
    }
    req_free(req);
    return r;
}

/* A complete request: answered at once when it is malformed, else queued
 * for the loop with its connection suspended until the reply is ready. */
static enum MHD_Result
dispatch(al_server_t *s, struct MHD_Connection *c, const char *url,
         const char *method, struct conn *cn, bool metrics_only)
{
    bool path_ok;
    char *cap[2] = { NULL, NULL };
    const al__route_t *route;
    if (metrics_only) {
        /* The metrics listener knows one path, and no token. */
        path_ok = strcmp(url, al__metrics_open_route.path) == 0;
        route = path_ok && strcmp(method, "GET") == 0 ? &al__metrics_open_route
                                                      : NULL;
    } else {
        route = al__route_match(method, url, cap, &path_ok);
    }
    if (route == NULL)
        return path_ok ? send_error(c, 405, "method_not_allowed",
                                    "method not allowed on this path")
                       : send_error(c, 404, "not_found", "no such endpoint");
    al__req_t *req = al_xcalloc(1, sizeof *req);
    req->route = route;
    req->cap[0] = cap[0];
    req->cap[1] = cap[1];
    if (cn->body.len > 0) {
        char *cause = NULL;
        req->body = al_json_parse(cn->body.data, cn->body.len, &cause);
        if (req->body == NULL) {
            enum MHD_Result r = send_error(c, 400, "bad_request", cause);
            free(cause);
            req_free(req);
            return r;
        }
    }
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, req);
    const char *auth =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    /* The scheme is case-insensitive (RFC 9110, 11.1). */
    if (auth != NULL && strncasecmp(auth, "Bearer ", 7) == 0)
        req->token = al_xstrdup(auth + 7);
    const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_UPGRADE);
    req->upgrade_asked = up != NULL && strcasecmp(up, "allot-stream") == 0;
    const char *lei =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    if (lei != NULL)
        req->last_event_id = al_xstrndup(lei, 64);
    /* Suspended before the loop can see it: the loop may answer it
     * before al__ctl_submit() returns, and hands it back through
     * reply_ready(), which resumes the connection; the reply goes out from
     * this thread, at the handler's next call, after this one. */
    req->conn = c;
    cn->req = req;
    MHD_suspend_connection(c);
    if (!al__ctl_submit(&s->ctl, req)) {
        /* Not taken: the server is stopping.  Answered the same way. */
        al__reply_error(req, 503, "unavailable", "the server is stopping");
        MHD_resume_connection(c);
    }
    return MHD_YES;
}

static enum MHD_Result
intake(al_server_t *s, bool metrics_only, struct MHD_Connection *c,
       const char *url, const char *method, const char *upload,
       size_t *upload_size, void **con_cls)
{
    struct conn *cn = *con_cls;
    if (cn == NULL) {
        cn = al_xcalloc(1, sizeof *cn);
        *con_cls = cn;
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl != NULL && strtoull(cl, NULL, 10) > s->ctl.opts.max_body) {
            cn->too_large = true;
            char msg[128];
            snprintf(msg, sizeof msg, "request body over %zu bytes",
                     s->ctl.opts.max_body);
            return send_error(c, 413, "too_large", msg);
        }
        return MHD_YES;
    }
    if (cn->req != NULL) {
        /* Resumed by reply_ready(): the reply is ready. */
        al__req_t *req = cn->req;
        cn->req = NULL;
        return send_handled(s, c, req);
    }
    if (*upload_size > 0) {
        if (!cn->too_large &&
            cn->body.len + *upload_size <= s->ctl.opts.max_body)
            al_buf_append(&cn->body, upload, *upload_size);
        else
            cn->too_large = true;
        *upload_size = 0;
        return MHD_YES;
    }
    if (cn->too_large) {
        char msg[128];
        snprintf(msg, sizeof msg, "request body over %zu bytes",
                 s->ctl.opts.max_body);
        return send_error(c, 413, "too_large", msg);
    }
    return dispatch(s, c, url, method, cn, metrics_only);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
           const char *method, const char *version, const char *upload,
           size_t *upload_size, void **con_cls)
{
    (void)version;
    return intake(cls, false, c, url, method, upload, upload_size, con_cls);
}

/* The metrics listener's access handler: the same intake, one route. */
static enum MHD_Result
on_metrics_request(void *cls, struct MHD_Connection *c, const char *url,
                   const char *method, const char *version, const char *upload,
                   size_t *upload_size, void **con_cls)
{
    (void)version;
    return intake(cls, true, c, url, method, upload, upload_size, con_cls);
}

/* ctl->reply: the loop hands back a request whose reply is durable (loop
 * thread).  Its connection, resumed, sends the reply and frees it. */
static void
reply_ready(al__req_t *req)
{
    MHD_resume_connection(req->conn);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    struct conn *cn = *con_cls;
    if (cn == NULL)
        return;
    /* The loop answers every request it takes, so a connection ends with
     * its request only when its reply could not be sent. */
    if (cn->req != NULL)
        req_free(cn->req);
    al_buf_fini(&cn->body);
    free(cn);
    *con_cls = NULL;
}

static int
parse_listen(const char *opt, const char *listen, struct sockaddr_in *sa,
             char **cause)
{
    const char *colon = strrchr(listen, ':');
    char host[64];
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    if (colon == NULL || (size_t)(colon - listen) >= sizeof host) {
        *cause = al_xasprintf("%s wants HOST:PORT, not '%s'", opt, listen);
        return AL_EINVAL;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *end;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || colon[1] == '\0' || port > 65535) {
        *cause = al_xasprintf("bad port in %s '%s'", opt, listen);
        return AL_EINVAL;
    }
    sa->sin_port = htons((uint16_t)port);
    if (host[0] == '\0' || strcmp(host, "*") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
        *cause = al_xasprintf("%s host must be an IPv4 address, not "
                              "'%s'",
                              opt, host);
        return AL_EINVAL;
    }
    return 0;
}

/* Reads --service-ports "LO-HI" into o (NULL: 30000-32767). */
static int
svc_ports(const char *v, al_server_opts_t *o, char **cause)
{
    o->svc_port_lo = 30000;
    o->svc_port_hi = 32767;
    if (v == NULL)
        return 0;
    char *end;
    long lo = strtol(v, &end, 10), hi = -1;
    if (end != v && *end == '-') {
        const char *h = end + 1;
        hi = strtol(h, &end, 10);
        if (end == h)
            hi = -1;
    }
    if (*end != '\0' || lo < 1 || hi > 65535 || hi < lo) {
        *cause = al_xasprintf("--service-ports: expected LO-HI within "
                              "1..65535, got '%s'",
                              v);
        return AL_EINVAL;
    }
    o->svc_port_lo = (int)lo;
    o->svc_port_hi = (int)hi;
    return 0;
}

/* Writes STATE/leaf: "SCHEME://HOST:PORT" + suffix of a listener bound to
 * sa (127.0.0.1 for the any-address), or removes it when sa is NULL. */
static void
write_url(const char *state_dir, const char *leaf, const char *scheme,
          const struct sockaddr_in *sa, int port, const char *suffix)
{
    char *path = al_xasprintf("%s/%s", state_dir, leaf);
    if (sa == NULL) {
        (void)unlink(path);
        free(path);
        return;
    }
    char host[INET_ADDRSTRLEN] = "127.0.0.1";
    if (sa->sin_addr.s_addr != htonl(INADDR_ANY))
        inet_ntop(AF_INET, &sa->sin_addr, host, sizeof host);
    char *url = al_xasprintf("%s://%s:%d%s\n", scheme, host, port, suffix);
    if (al_fs_write_file(path, url, strlen(url), 0644, AL_FS_SYNC) != 0)
        al_warn("cannot write %s", path);
    free(url);
    free(path);
}

/* TLS on the API listener: with --tls-cert and --tls-key, reads both
 * files into s and fills items (3, ending with MHD_OPTION_END) and *flags
 * for MHD_start_daemon(); without them, items holds only the end. */
static int
tls_options(al_server_t *s, const al_server_opts_t *o,
            struct MHD_OptionItem *items, unsigned *flags, char **cause)
{
    items[0] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    if (o->tls_cert == NULL && o->tls_key == NULL)
        return 0;
    if (o->tls_cert == NULL || o->tls_key == NULL) {
        *cause = al_xstrdup("--tls-cert and --tls-key go together");
        return AL_EINVAL;
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        *cause = al_xstrdup("this libmicrohttpd was built without TLS");
        return AL_ENOTSUP;
    }
    size_t n;
    const char *bad = NULL;
    if (al_fs_read_file(o->tls_cert, &s->tls_cert, &n) != 0)
        bad = o->tls_cert;
    else if (al_fs_read_file(o->tls_key, &s->tls_key, &n) != 0)
        bad = o->tls_key;
    if (bad != NULL) {
        *cause = al_xasprintf("cannot read %s: %s", bad, strerror(errno));
        return AL_EIO;
    }
    items[0] =
        (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert };
    items[1] =
        (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key };
    items[2] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    *flags |= MHD_USE_TLS;
    return 0;
}

static void
server_free(al_server_t *s)
{
    al__router_stop(s->ctl.router); /* after the loop, its one caller */
    free(s->tls_cert);
    free(s->tls_key);
    free(s->ctl.state_dir);
    free(s);
}

int
al_server_start(const al_server_opts_t *o, al_server_t **out, char **cause)
{
    struct sockaddr_in sa, msa;
    memset(&msa, 0, sizeof msa);
    int rc = parse_listen("--listen", o->listen, &sa, cause);
    if (rc == 0 && o->metrics_listen != NULL)
        rc = parse_listen("--metrics-listen", o->metrics_listen, &msa, cause);
    al__pools_t pools;
    int64_t minrt[AL_MAX_JCLASSES];
    if (rc == 0)
        rc = al__min_runtime_config(o->min_runtime, minrt, cause);
    if (rc == 0)
        rc = al__pools_config(o, &pools, cause);
    if (rc == 0 && o->gpu_fault != NULL && strcmp(o->gpu_fault, "drain") != 0 &&
        strcmp(o->gpu_fault, "fence") != 0) {
        *cause = al_xasprintf("--gpu-fault: '%s': want drain or fence",
                              o->gpu_fault);
        rc = AL_EINVAL;
    }
    if (rc != 0)
        return rc;
    al__pools_fini(&pools); /* checked now; the loop's copy is read below */
    if (al_fs_mkdir_p(o->state_dir, 0700) != 0) {
        *cause = al_xasprintf("cannot create state directory %s: %s",
                              o->state_dir, strerror(errno));
        return AL_EIO;
    }
    /* Two controllers on one state would both hand out the same job ids,
     * each overwriting the other's jobs in the store. */
    int lock_fd;
    if ((rc = al_fs_lock_dir(o->state_dir, "controller", &lock_fd, cause)) != 0)
        return rc;
    /* A connection is a descriptor, not a thread: let there be as many as
     * the hard limit allows (an agent keeps two). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    al_server_t *s = al_xcalloc(1, sizeof *s);
    s->lock_fd = lock_fd;
    struct MHD_OptionItem tls[3];
    unsigned flags =
        MHD_USE_EPOLL_INTERNALLY | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE;
    if ((rc = tls_options(s, o, tls, &flags, cause)) != 0) {
        close(s->lock_fd);
        server_free(s);
        return rc;
    }
    s->ctl.opts = *o;
    s->ctl.state_dir = al_xstrdup(o->state_dir);
    if ((rc = svc_ports(o->svc_ports, &s->ctl.opts, cause)) != 0 ||
        (o->router_listen != NULL &&
         (rc = al__router_start(o->router_listen, &s->ctl.router, cause)) !=
             0)) {
        close(s->lock_fd);
        server_free(s);
        return rc;
    }
    if (s->ctl.router != NULL)
        al__router_set_head_timeout(s->ctl.router, o->router_head_ms);
    s->ctl.reply = reply_ready;
    s->ctl.relay = al__relay_create(close_upgraded);
    s->ctl.events = al__events_create(sse_suspend, sse_resume);
    (void)al__pools_config(o, &s->ctl.pools, cause);
    memcpy(s->ctl.class_min_runtime, minrt, sizeof minrt);
    if ((rc = al__ctl_start(&s->ctl, cause)) != 0) {
        al__relay_destroy(s->ctl.relay);
        al__events_destroy(s->ctl.events);
        al__pools_fini(&s->ctl.pools);
        close(s->lock_fd);
        server_free(s);
        return rc;
    }
    /* Not MHD_OPTION_LISTENING_ADDRESS_REUSE: its SO_REUSEPORT let a
     * second controller bind the same port and take a share of the
     * connections.  libmicrohttpd sets SO_REUSEADDR, so a restarted
     * controller binds its port at once all the same. */
    s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                              MHD_OPTION_SOCK_ADDR, &sa,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)65536,
                              MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (s->mhd == NULL) {
        *cause = al_xasprintf(
            (flags & MHD_USE_TLS) != 0
                ? "cannot listen on %s (port in use, or a certificate "
                  "and key that do not load or match?)"
                : "cannot listen on %s (port in use?)",
            o->listen);
        al__ctl_stop(&s->ctl);
        al__relay_destroy(s->ctl.relay);
        al__events_destroy(s->ctl.events);
        al__pools_fini(&s->ctl.pools);
        close(s->lock_fd);
        server_free(s);
        return AL_EIO;
    }
    if (o->metrics_listen != NULL) {
        /* Its own polling thread: a scrape waits on the loop like any
         * request, and never on the API's connections. */
        s->metrics_mhd = MHD_start_daemon(
            MHD_USE_EPOLL_INTERNALLY | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
            on_metrics_request, s, MHD_OPTION_SOCK_ADDR, &msa,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
            MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024, MHD_OPTION_END);
        if (s->metrics_mhd == NULL) {
            *cause = al_xasprintf("cannot listen on %s (port in use?)",
                                  o->metrics_listen);
            al__ctl_stop(&s->ctl);
            al__relay_destroy(s->ctl.relay);
            al__events_close(s->ctl.events);
            MHD_stop_daemon(s->mhd);
            al__events_destroy(s->ctl.events);
            close(s->lock_fd);
            server_free(s);
            return AL_EIO;
        }
        const union MHD_DaemonInfo *mi =
            MHD_get_daemon_info(s->metrics_mhd, MHD_DAEMON_INFO_BIND_PORT);
        s->metrics_port = mi != NULL ? mi->port : ntohs(msa.sin_port);
    }
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di != NULL ? di->port : ntohs(sa.sin_port);
    /* STATE/url and STATE/metrics-url tell scripts, tests and scrape
     * configs where the server listens, which matters when it picked its
     * port itself (HOST:0); a start without a metrics listener leaves no
     * address of an earlier one.  STATE/url last: once it is there, so is
     * the rest. */
    if (s->metrics_mhd != NULL)
        write_url(o->state_dir, "metrics-url", "http", &msa, s->metrics_port,
                  "/metrics");
    else
        write_url(o->state_dir, "metrics-url", NULL, NULL, 0, NULL);
    if (s->ctl.router != NULL) {
        struct sockaddr_in rsa = al__router_addr(s->ctl.router);
        write_url(o->state_dir, "router-url", "http", &rsa, ntohs(rsa.sin_port),
                  "");
    } else {
        write_url(o->state_dir, "router-url", NULL, NULL, 0, NULL);
    }
    write_url(o->state_dir, "url", (flags & MHD_USE_TLS) ? "https" : "http",
              &sa, s->port, "");
    *out = s;
    return 0;
}

int
al_server_port(const al_server_t *s)
{
    return s->port;
}

int
al_server_metrics_port(const al_server_t *s)
{
    return s->metrics_port;
}

void
al_server_stop(al_server_t *s)
{
    if (s == NULL)
        return;
    /* The loop first, so that it answers every request it took; then the
     * listener, which closes the connections. */
    al__ctl_stop(&s->ctl);
    al__relay_destroy(s->ctl.relay); /* its sockets before the intake's */
    /* The streams end before the intake stops: libmicrohttpd may not stop
     * with a suspended connection. */
    al__events_close(s->ctl.events);
    MHD_stop_daemon(s->mhd);
    al__events_destroy(s->ctl.events);
    if (s->metrics_mhd != NULL)
        MHD_stop_daemon(s->metrics_mhd);
    al__pools_fini(&s->ctl.pools);
    al__consolidate_fini(&s->ctl);
    close(s->lock_fd);
    server_free(s);
}

/* ------------------------------------------------------------------ */
/* `allot server`                                                     */

/* Tokens cross the network in the clear when a listener that is not on
 * the loopback serves plain HTTP: say so. */
static void
warn_clear(const al_server_opts_t *o)
{
    struct sockaddr_in sa;
    char *cause = NULL;
    if (o->tls_cert != NULL ||
        parse_listen("--listen", o->listen, &sa, &cause) != 0) {
        free(cause);
        return;
    }
    if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127)
        al_warn("--listen %s without --tls-cert: API tokens travel in the "
                "clear over the network",
                o->listen);
}

/* Starts the server; a --standby one first waits (leader.c) until no
 * controller holds the store's database, and again when another standby
 * wins the race for it.  0, 1 when a stop signal came while it waited, 2
 * for --standby without PostgreSQL, or an error (AL_E*), each but 1 with a
 * message in *cause. */
static int
start_or_wait(const al_server_opts_t *o, al_daemon_t *d, al_server_t **s,
              char **cause)
{
    if (!o->standby)
        return al_server_start(o, s, cause);
    if (o->store == NULL || (strncmp(o->store, "postgres://", 11) != 0 &&
                             strncmp(o->store, "postgresql://", 13) != 0)) {
        *cause = al_xstrdup("--standby needs --store postgresql://...");
        return 2;
    }
    for (;;) {
        if (al__leader_wait(o, &d->stop) != 0)
            return 1;
        int rc = al_server_start(o, s, cause);
        /* Busy is the store's database (another standby won) or the state
         * directory (a controller of its own there: refused). */
        if (rc != AL_EBUSY || strstr(*cause, "store's database") == NULL)
            return rc;
        al_info("standby: %s", *cause);
        free(*cause);
        *cause = NULL;
    }
}

int
al_server_main(int argc, char **argv)
{
    server_args_t a;
    memset(&a, 0, sizeof a);
    al_server_opts_default(&a.o);
    a.sync = "full";
    a.max_body = (int64_t)a.o.max_body;
    int rc = al_daemon_parse(&a.d, &al_server_cmd, &a, argc, argv);
    bool sync_ok = strcmp(a.sync, "full") == 0 || strcmp(a.sync, "normal") == 0;
    if (!al_daemon_begin(&a.d, &al_server_cmd, rc, sync_ok, &rc))
        return rc;
    al_server_opts_t o = a.o;
    o.max_body = (size_t)a.max_body;
    al__pools_t pools;
    char *why = NULL;
    int64_t minrt[AL_MAX_JCLASSES];
    if (al__min_runtime_config(o.min_runtime, minrt, &why) != 0 ||
        al__pools_config(&o, &pools, &why) != 0) {
        fprintf(stderr, "allot server: %s\n", why);
        free(why);
        return AL_EXIT_USAGE;
    }
    al__pools_fini(&pools);
    o.sync_full = strcmp(a.sync, "full") == 0;
    /* Threads inherit the mask: only al_daemon_wait() below sees SIGINT
     * and SIGTERM. */
    al_daemon_block(&a.d);

    al_server_t *s;
    char *cause = NULL, *cert = NULL, *key = NULL;
    if (o.tls_self_signed != NULL) {
        if (o.tls_cert != NULL || o.tls_key != NULL) {
            fputs("allot server: --tls-self-signed or --tls-cert/--tls-key, "
                  "not both\n",
                  stderr);
            return AL_EXIT_USAGE;
        }
        if (al__selfsign(o.tls_self_signed, o.listen, &cert, &key, &cause) !=
            0) {
            fprintf(stderr, "allot server: %s\n", cause);
            free(cause);
            return AL_EXIT_FAIL;
        }
        o.tls_cert = cert;
        o.tls_key = key;
    }
    rc = start_or_wait(&o, &a.d, &s, &cause);
    if (rc != 0) {
        free(cert);
        free(key);
        if (rc == 1) { /* stopped while a standby */
            al_daemon_unblock(&a.d);
            return AL_EXIT_OK;
        }
        fprintf(stderr, "allot server: %s\n", cause ? cause : "failed");
        free(cause);
        return rc == 2 ? AL_EXIT_USAGE : AL_EXIT_FAIL;
    }
    warn_clear(&o);
    al_info("listening on %s://%.*s:%d (state %s)",
            o.tls_cert != NULL ? "https" : "http",
            (int)(strrchr(o.listen, ':') - o.listen), o.listen,
            al_server_port(s), o.state_dir);
    if (o.metrics_listen != NULL)
        al_info("metrics on http://%.*s:%d/metrics",
                (int)(strrchr(o.metrics_listen, ':') - o.metrics_listen),
                o.metrics_listen, al_server_metrics_port(s));
    int sig = al_daemon_wait(&a.d);
    al_info("signal %d: stopping", sig);
    al_server_stop(s);
    al_daemon_unblock(&a.d);
    free(cert);
    free(key);
    return AL_EXIT_OK;
}
