/*
 * cli_events.c -- `allot events [-f]`: the jobs' state changes, the
 * scheduler's decisions and the nodes' and queues' changes (a line each,
 * "node NAME" or "queue NAME" where a job's shows its id), as GET
 * /v1/events streams them to the dashboard
 * (server-sent events).  Without -f it prints the last events and ends;
 * with -f it goes on printing each event as it comes, through long polls
 * of the same stream (poll=S: the controller answers once it has sent
 * something, or after S seconds), each from the cursor of the last one,
 * so that nothing is missed or printed twice between two polls.
 *
 * May call: cli_client.c (the API), common.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_client.h"
#include "json.h"

typedef struct events_args {
    const char *server, *token;
    int64_t last, since, job;
    bool follow, follow2, json, help;
} events_args_t;

#define E(f) offsetof(events_args_t, f)

static const al_opt_t events_opts[] = {
    { .name = "-f",
      .kind = AL_OPT_FLAG,
      .off = E(follow),
      .help = "go on printing events as they come, until interrupted",
      .flags = AL_OPT_BRIEF },
    { .name = "--follow",
      .kind = AL_OPT_FLAG,
      .off = E(follow2),
      .help = "-f" },
    { .name = "-n",
      .kind = AL_OPT_INT,
      .off = E(last),
      .min = 0,
      .max = 8192,
      .arg = "N",
      .help = "start with the last N events (default 20; 0 with -f: only "
              "new ones)" },
    { .name = "--since",
      .kind = AL_OPT_INT,
      .off = E(since),
      .min = 1,
      .max = INT64_MAX,
      .arg = "ID",
      .help = "the events after event ID (an event's id, as --json shows)" },
    { .name = "--job",
      .kind = AL_OPT_INT,
      .off = E(job),
      .min = 1,
      .max = INT64_MAX,
      .arg = "ID",
      .help = "only job ID's events (no node's or queue's)" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = E(json),
      .help = "each event as a line of JSON" },
    AL_CLI_CONN_OPTS(events_args_t),
    { .name = NULL },
};

#undef E

const al_opt_cmd_t al_cli_events_cmd = {
    .name = "events",
    .opts = events_opts,
    .about = "The jobs' state changes and the scheduler's decisions (starts, "
             "preemptions,\nreclaims, ends), as the dashboard shows them live "
             "(GET /v1/events).  A user\nsees their own jobs' events; an "
             "admin everyone's.  Nodes' changes (registered,\nready, lost, "
             "drained and why, resumed) and queues' (created, updated,\n"
             "deleted) show to everyone.\n",
};

/* ------------------------------------------------------------------ */
/* Server-sent events                                                 */

/* Reads the next message of an event stream from text[*off..len):
 * fills m (its members point into a copy in m->buf, valid until the next
 * call) and returns 1; 0 when no whole message is left (a stream's last,
 * unterminated lines are not a message).  Comment lines (": ...") and
 * unknown fields are skipped; a message of comments alone has no event
 * and no data and is skipped too. */
int
al_cli_sse_next(const char *text, size_t len, size_t *off, al_cli_sse_t *m)
{
    while (*off < len) {
        /* A message ends at a blank line: "\n\n" (or "\r\n\r\n"). */
        size_t start = *off, end = start;
        bool done = false;
        while (end < len && !done) {
            const char *nl = memchr(text + end, '\n', len - end);
            if (nl == NULL)
                return 0;
            size_t line_end = (size_t)(nl - text);
            size_t l = line_end - end;
            if (l > 0 && text[line_end - 1] == '\r')
                l--;
            if (l == 0)
                done = true;
            end = line_end + 1;
        }
        if (!done)
            return 0;
        *off = end;
        free(m->buf);
        memset(m, 0, sizeof *m);
        m->len = end - start;
        m->buf = malloc(m->len + 1);
        if (m->buf == NULL)
            abort();
        memcpy(m->buf, text + start, m->len);
        m->buf[m->len] = '\0';
        char *stop = m->buf + m->len;
        for (char *line = m->buf, *next; line < stop; line = next) {
            /* Every line ends with '\n' (checked above); a NUL byte in
             * one cuts it short. */
            next = memchr(line, '\n', (size_t)(stop - line));
            *next++ = '\0';
            size_t l = strlen(line);
            if (l > 0 && line[l - 1] == '\r')
                line[--l] = '\0';
            if (l == 0 || line[0] == ':')
                continue;
            char *val = strchr(line, ':');
            if (val == NULL)
                val = line + l; /* a field name alone: an empty value */
            else
                *val++ = '\0';
            if (*val == ' ')
                val++;
            if (strcmp(line, "event") == 0)
                m->event = val;
            else if (strcmp(line, "data") == 0 && m->data == NULL)
                m->data = val; /* the controller sends one line */
            else if (strcmp(line, "id") == 0)
                m->id = val;
        }
        if (m->event != NULL || m->data != NULL)
            return 1;
    }
    return 0;
}

void
al_cli_sse_fini(al_cli_sse_t *m)
{
    free(m->buf);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------ */
/* allot events                                                       */

/* Prints event e: a job's (kind NULL), or a node's or a queue's (kind
 * "node" or "queue"). */
static void
print_event(const json_t *e, const char *kind, bool as_json)
{
    if (as_json) {
        char *s = al_json_dump(e);
        printf("%s\n", s);
        free(s);
        return;
    }
    time_t t = (time_t)(al_json_int(e, "time", 0) / 1000);
    struct tm tm;
    char when[32];
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    const char *detail = al_json_str(e, "detail", NULL);
    if (kind != NULL) {
        /* A node's or a queue's change: its name where a job's owner and
         * queue go. */
        const char *what = al_json_str(e, kind, "?");
        printf("%s  %-6s %-20s %-12s%s%s\n", when, kind, what,
               al_json_str(e, "event", "?"), detail != NULL ? " " : "",
               detail != NULL ? detail : "");
        return;
    }
    char who[128];
    snprintf(who, sizeof who, "%s/%s", al_json_str(e, "user", "?"),
             al_json_str(e, "queue", "?"));
    printf("%s  %-6lld %-20s %-12s %s%s%s\n", when,
           (long long)al_json_int(e, "job", 0), who,
           al_json_str(e, "event", "?"), al_json_str(e, "name", ""),
           detail != NULL ? ": " : "", detail != NULL ? detail : "");
}

/* Prints the events of one answer and moves *cursor past them; counts
 * them in *n. */
static void
print_stream(const char *text, size_t len, bool as_json, long long *cursor,
             int *n)
{
    size_t off = 0;
    al_cli_sse_t m = { 0 };
    while (al_cli_sse_next(text, len, &off, &m) == 1) {
        json_t *d =
            m.data != NULL ? al_json_parse(m.data, strlen(m.data), NULL) : NULL;
        const char *ev = m.event != NULL ? m.event : "message";
        if (strcmp(ev, "ready") == 0) {
            if (*cursor < 0)
                *cursor = al_json_int(d, "cursor", -1);
        } else if (strcmp(ev, "gap") == 0) {
            fprintf(stderr, "allot events: some events were missed (the "
                            "controller restarted, or kept no more)\n");
            long long c = al_json_int(d, "cursor", -1);
            if (c > *cursor)
                *cursor = c;
        } else if ((strcmp(ev, "job") == 0 || strcmp(ev, "node") == 0 ||
                    strcmp(ev, "queue") == 0) &&
                   d != NULL) {
            print_event(d, strcmp(ev, "job") == 0 ? NULL : ev, as_json);
            (*n)++;
            long long id = al_json_int(d, "id", -1);
            if (id > *cursor)
                *cursor = id;
        }
        json_decref(d);
    }
    al_cli_sse_fini(&m);
    fflush(stdout);
}

int
al_cli_events(int argc, char **argv)
{
    events_args_t a;
    memset(&a, 0, sizeof a);
    a.last = -1;
    int npos, rc = al_opt_parse_cmd(&al_cli_events_cmd, NULL, &a, argc, argv,
                                    NULL, 0, &npos);
    if (rc != 0 || a.help || npos != 0) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_events_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    if (a.since > 0 && a.last >= 0) {
        fprintf(stderr, "allot events: -n or --since, not both\n");
        return AL_EXIT_USAGE;
    }
    bool follow = a.follow || a.follow2;
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    char job[40] = "";
    if (a.job > 0)
        snprintf(job, sizeof job, "&job=%lld", (long long)a.job);
    long long cursor = a.since > 0 ? (long long)a.since : -1;
    char path[160];
    if (cursor >= 0)
        snprintf(path, sizeof path, "/v1/events?follow=false&since=%lld%s",
                 cursor, job);
    else
        snprintf(path, sizeof path, "/v1/events?follow=false&last=%lld%s",
                 (long long)(a.last >= 0 ? a.last : 20), job);
    /* A pipe's reader going away ends a follower quietly. */
    signal(SIGPIPE, SIG_DFL);
    for (;;) {
        char *raw = NULL;
        size_t rawlen = 0;
        json_t *v = NULL;
        rc = al_client_call(&c, "GET", path, NULL, &v, &raw, &rawlen);
        json_decref(v);
        if (rc != 0) {
            free(raw);
            break;
        }
        int n = 0;
        print_stream(raw != NULL ? raw : "", raw != NULL ? rawlen : 0, a.json,
                     &cursor, &n);
        free(raw);
        if (!follow)
            break;
        snprintf(path, sizeof path, "/v1/events?poll=25&since=%lld%s",
                 cursor < 0 ? 0 : cursor, job);
    }
    al_client_fini(&c);
    return rc;
}
