/* cli_client.c -- options, server/token resolution and API calls. */
#include "cli_client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "fs.h"
#include "json.h"
#include "tls.h"
#include "ucfg.h"
#include "xmalloc.h"

int
al_client_init(al_client_t *c, const char *server, const char *token)
{
    memset(c, 0, sizeof c[0]);
    char *path = al_ucfg_path();
    /* Set but empty counts as unset: the config file's then. */
    if (server == NULL && (server = getenv("ALLOT_SERVER")) != NULL &&
        server[0] == '\0')
        server = NULL;
    if (token == NULL && (token = getenv("ALLOT_TOKEN")) != NULL &&
        token[0] == '\0')
        token = NULL;
    c->server = server ? al_xstrdup(server) : al_ucfg_get(path, "server");
    c->token = token ? al_xstrdup(token) : al_ucfg_get(path, "token");
    /* The CA of an https server: --ca (main.c) or ALLOT_CA, else the
     * config's, else the system's store. */
    const char *ca = getenv("ALLOT_CA");
    char *cfg_ca = ca != NULL && ca[0] != '\0' ? NULL : al_ucfg_get(path, "ca");
    al_tls_set_ca(cfg_ca != NULL ? cfg_ca : ca);
    free(cfg_ca);
    if (server == NULL || token == NULL) {
        /* A misspelt setting would be ignored: say so. */
        static const char *const keys[] = { "server", "token", "ca" };
        char *text = NULL;
        size_t n = 0;
        if (al_fs_read_file(path, &text, &n) == 0) {
            int bad = al_ucfg_bad_line(text, n, keys, 3);
            if (bad > 0)
                fprintf(stderr,
                        "allot: warning: %s:%d: not a 'server = URL', "
                        "'token = TOKEN' or 'ca = FILE' line; it is "
                        "ignored\n",
                        path, bad);
            free(text);
        }
    }
    free(path);
    if (c->server == NULL)
        c->server = al_xstrdup(AL_CLI_DEFAULT_SERVER);
    char *cause = NULL;
    if (al_url_parse_list(c->server, c->urls, &c->nurls, &cause) != 0) {
        fprintf(stderr,
                "allot: %s (from --server, ALLOT_SERVER or the "
                "config file)\n",
                cause);
        free(cause);
        al_client_fini(c);
        return AL_EXIT_USAGE;
    }
    c->url = c->urls[0];
    return 0;
}

void
al_client_fini(al_client_t *c)
{
    free(c->server);
    free(c->token);
    c->server = c->token = NULL;
    c->nurls = 0;
}

/* Whether a failed exchange may go to the next controller of the group:
 * the request was never sent (no connection), it changes nothing (GET),
 * or the controller answered 503, which it does before a change commits
 * (and a standby or a controller cut off from the store does for all). */
static bool
try_next(int rc, const char *method, const char *cause,
         const al_http_resp_t *resp)
{
    if (rc == 0)
        return resp->status == 503;
    if (rc != AL_EUNAVAIL)
        return false;
    return strcmp(method, "GET") == 0 ||
           (cause != NULL && (strncmp(cause, "cannot connect", 14) == 0 ||
                              strncmp(cause, "cannot resolve", 14) == 0));
}

/* One request, to the controller that answered last and then, while
 * try_next() allows, to the others of the group in turn. */
static int
request(al_client_t *c, const char *method, const char *path, const char *text,
        al_http_resp_t *resp, char **cause)
{
    int first = 0;
    for (int i = 0; i < c->nurls; i++)
        if (memcmp(&c->urls[i], &c->url, sizeof c->url) == 0)
            first = i;
    int rc = AL_EUNAVAIL;
    for (int k = 0; k < c->nurls; k++) {
        const al_url_t *u = &c->urls[(first + k) % c->nurls];
        free(*cause);
        *cause = NULL;
        rc = al_http_request(u, method, path, c->token, text,
                             text ? strlen(text) : 0, 60000, -1, resp, cause);
        if (k + 1 == c->nurls || !try_next(rc, method, *cause, resp)) {
            c->url = *u;
            break;
        }
        if (rc == 0)
            al_http_resp_fini(resp);
    }
    return rc;
}

int
al_client_call(al_client_t *c, const char *method, const char *path,
               json_t *body, json_t **out, char **raw, size_t *rawlen)
{
    char *text = body ? al_json_dump(body) : NULL;
    al_http_resp_t resp;
    char *cause = NULL;
    int rc = request(c, method, path, text, &resp, &cause);
    free(text);
    if (rc == AL_EPERM) { /* the server's certificate is refused */
        fprintf(stderr, "allot: %s\n", cause);
        free(cause);
        return AL_EXIT_FAIL;
    }
    if (rc != 0) {
        fprintf(stderr,
                "allot: cannot reach the server at %s: %s\n"
                "       start one with `allot dev`, or point ALLOT_SERVER "
                "at it\n",
                c->server, cause ? cause : al_strerror(rc));
        free(cause);
        return AL_EXIT_FAIL;
    }
    json_t *v = al_json_parse(resp.body.data ? resp.body.data : "",
                              resp.body.len, NULL);
    if (resp.status < 200 || resp.status > 299) {
        const char *msg = al_json_str(v, "message", al_buf_cstr(&resp.body));
        const char *code = al_json_str(v, "error", "error");
        fprintf(stderr, "allot: %s (HTTP %d %s)\n", msg, resp.status, code);
        if (resp.status == 401)
            fprintf(stderr, "       set ALLOT_TOKEN, pass --token, or run "
                            "`allot dev`, which writes one to your "
                            "config\n");
        json_decref(v);
        al_http_resp_fini(&resp);
        return AL_EXIT_FAIL;
    }
    *out = v;
    if (raw != NULL) {
        *rawlen = resp.body.len;
        *raw = al_buf_steal(&resp.body);
    }
    al_http_resp_fini(&resp);
    return 0;
}

void
al_cli_age(int64_t ms, char *buf, size_t len)
{
    int64_t s = ms / 1000;
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, len, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(buf, len, "%lldm", (long long)(s / 60));
    else if (s < 172800)
        snprintf(buf, len, "%lldh", (long long)(s / 3600));
    else
        snprintf(buf, len, "%lldd", (long long)(s / 86400));
}

int
al_cli_parse_mem(const char *s, int64_t *bytes)
{
    char *end;
    double v = strtod(s, &end);
    /* !(v >= 0) also refuses "nan", which strtod accepts. */
    if (end == s || !(v >= 0))
        return -1;
    static const struct {
        const char *suffix;
        int shift;
    } units[] = {
        { .suffix = "", .shift = 20 },    { .suffix = "K", .shift = 10 },
        { .suffix = "KB", .shift = 10 },  { .suffix = "KiB", .shift = 10 },
        { .suffix = "M", .shift = 20 },   { .suffix = "MB", .shift = 20 },
        { .suffix = "MiB", .shift = 20 }, { .suffix = "G", .shift = 30 },
        { .suffix = "GB", .shift = 30 },  { .suffix = "GiB", .shift = 30 },
        { .suffix = "T", .shift = 40 },   { .suffix = "TB", .shift = 40 },
        { .suffix = "TiB", .shift = 40 },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            double b = v * (double)((int64_t)1 << units[i].shift);
            /* Checked before converting: a double beyond int64_t's range
             * (or "inf") does not convert (undefined behaviour). */
            if (!(b < 0x1p62))
                return -1;
            *bytes = (int64_t)b;
            return 0;
        }
    }
    return -1;
}

int
al_cli_parse_duration(const char *s, int64_t *seconds)
{
    static const struct {
        char suffix;
        int64_t scale;
    } units[] = {
        { .suffix = '\0', .scale = 1 },    { .suffix = 's', .scale = 1 },
        { .suffix = 'm', .scale = 60 },    { .suffix = 'h', .scale = 3600 },
        { .suffix = 'd', .scale = 86400 },
    };
    char *end;
    double v = strtod(s, &end);
    /* !(v >= 0) also refuses "nan", which strtod accepts. */
    if (end == s || !(v >= 0) || v > 1e9 || (end[0] != '\0' && end[1] != '\0'))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (end[0] == units[i].suffix) {
            *seconds = (int64_t)(v * (double)units[i].scale + 0.5);
            return 0;
        }
    }
    return -1;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Exactly n decimal digits at *p into *v, *p past them. */
static bool
digits(const char **p, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        x = x * 10 + (c - '0');
    }
    *p += n;
    *v = x;
    return true;
}

int
al_cli_parse_when(const char *s, int64_t now, int64_t *out)
{
    if (strcmp(s, "now") == 0) {
        *out = now;
        return 0;
    }
    if (s[0] == '-') {
        int64_t d;
        if (al_cli_parse_duration(s + 1, &d) != 0 || d > now)
            return -1;
        *out = now - d;
        return 0;
    }
    if (s[0] == '@') {
        char *end;
        long long v = strtoll(s + 1, &end, 10);
        if (end == s + 1 || *end != '\0' || v < 0 || v > 253402300799LL)
            return -1;
        *out = v;
        return 0;
    }
    int y, mo, d, h = 0, mi = 0, sec = 0;
    const char *p = s;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) ||
        *p++ != '-' || !digits(&p, 2, &d))
        return -1;
    if (*p == 'T' || *p == ' ') {
        p++;
        if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
            return -1;
        if (*p == ':') {
            p++;
            if (!digits(&p, 2, &sec))
                return -1;
        }
    }
    bool utc = *p == 'Z';
    if (utc)
        p++;
    static const int mdays[12] = { 31, 29, 31, 30, 31, 30,
                                   31, 31, 30, 31, 30, 31 };
    if (*p != '\0' || y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 ||
        d > mdays[mo - 1] ||
        (mo == 2 && d == 29 &&
         (y % 4 != 0 || (y % 100 == 0 && y % 400 != 0))) ||
        h > 23 || mi > 59 || sec > 59 || h < 0 || mi < 0 || sec < 0)
        return -1;
    if (utc) {
        *out = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 +
               (int64_t)mi * 60 + sec;
        return 0;
    }
    struct tm tm = { .tm_year = y - 1900,
                     .tm_mon = mo - 1,
                     .tm_mday = d,
                     .tm_hour = h,
                     .tm_min = mi,
                     .tm_sec = sec,
                     .tm_isdst = -1 };
    time_t t = mktime(&tm);
    if (t == (time_t)-1)
        return -1;
    *out = (int64_t)t;
    return 0;
}

void
al_cli_print_json(const json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
    if (s != NULL) {
        puts(s);
        free(s);
    }
}
