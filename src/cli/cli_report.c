/*
 * cli_report.c -- the accounting commands: `allot report` (GPU-hours,
 * efficiency, jobs, waits and wastage over a period, by queue, user,
 * class, model or node; GET /v1/report) and `allot history` (ended jobs,
 * as sacct lists them; GET /v1/jobs).
 *
 * May call: cli_client.c (the API, times), common.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cli.h"
#include "cli_client.h"
#include "clock.h"
#include "json.h"

typedef struct report_args {
    const char *since, *until, *by, *server, *token;
    bool json, csv, help;
} report_args_t;

#define R(f) offsetof(report_args_t, f)

static const al_opt_t report_opts[] = {
    { .name = "--since",
      .kind = AL_OPT_STR,
      .off = R(since),
      .arg = "T",
      .help = "from T (default -1d): now, -DURATION (-7d, -12h), @SECONDS, "
              "YYYY-MM-DD[THH:MM[:SS]] in local time, or with Z in UTC",
      .flags = AL_OPT_BRIEF },
    { .name = "--until",
      .kind = AL_OPT_STR,
      .off = R(until),
      .arg = "T",
      .help = "to T (default now)" },
    { .name = "--by",
      .kind = AL_OPT_STR,
      .off = R(by),
      .arg = "queue|user|class|model|node",
      .help = "one row per queue (the default), user, class, GPU model or "
              "node",
      .flags = AL_OPT_BRIEF },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = R(json),
      .help = "the answer as JSON" },
    { .name = "--csv",
      .kind = AL_OPT_FLAG,
      .off = R(csv),
      .help = "comma-separated values with a header line" },
    AL_CLI_CONN_OPTS(report_args_t),
    { .name = NULL },
};

#undef R

const al_opt_cmd_t al_cli_report_cmd = {
    .name = "report",
    .opts = report_opts,
    .about = "GPU-hours allocated and used (efficiency = used / allocated, "
             "from the GPUs'\ntelemetry: by queue and model only), jobs "
             "started, completed, failed,\ncancelled and preempted, mean and "
             "p95 wait, and the wastage ratio (idle\nGPU-time while fitting "
             "work waited), over a period.  A user sees their own\njobs' "
             "rows; an admin everyone's.\n",
};

/* Parses --since/--until into seconds; AL_EXIT_USAGE after saying why. */
static int
parse_period(const char *cmd, const char *since, const char *until,
             int64_t *from, int64_t *to)
{
    int64_t now = al_clock_ms() / 1000;
    if (until != NULL && al_cli_parse_when(until, now, to) != 0) {
        fprintf(stderr,
                "allot %s: bad --until '%s' (now, -7d, @SECONDS, "
                "YYYY-MM-DD[THH:MM[:SS]][Z])\n",
                cmd, until);
        return AL_EXIT_USAGE;
    }
    if (until == NULL) /* the end is left out: this second is in */
        *to = now + 1;
    if (since != NULL && al_cli_parse_when(since, now, from) != 0) {
        fprintf(stderr,
                "allot %s: bad --since '%s' (now, -7d, @SECONDS, "
                "YYYY-MM-DD[THH:MM[:SS]][Z])\n",
                cmd, since);
        return AL_EXIT_USAGE;
    }
    if (since == NULL)
        *from = *to - 86400;
    if (*from >= *to) {
        fprintf(stderr, "allot %s: --since must be before --until\n", cmd);
        return AL_EXIT_USAGE;
    }
    return 0;
}

/* A number cell with `decimals` digits after the point, scaled, and a
 * suffix; "-" for null. */
static void
cell(char *buf, size_t n, const json_t *v, int decimals, double scale,
     const char *suffix)
{
    if (!json_is_number(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.*f%s", decimals, json_number_value(v) * scale,
                 suffix);
}

/* A wait in seconds as "45s", "12m", "3.5h". */
static void
wait_cell(char *buf, size_t n, const json_t *v)
{
    if (!json_is_number(v)) {
        snprintf(buf, n, "-");
        return;
    }
    double s = json_number_value(v);
    if (s < 120)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 7200)
        snprintf(buf, n, "%.0fm", s / 60);
    else
        snprintf(buf, n, "%.1fh", s / 3600);
}

static const char *const report_cols[] = {
    "gpu_hours",
    "used_gpu_hours",
    "efficiency",
    "started",
    "completed",
    "failed",
    "cancelled",
    "preempted",
    "wait_mean_s",
    "wait_p95_s",
    "wastage_ratio",
    /* Of the failed, those that ran out of memory (last: a column added
     * after the others). */
    "out_of_memory",
};
#define NCOLS (sizeof report_cols / sizeof report_cols[0])

static void
csv_row(const json_t *row, const char *key)
{
    printf("%s", key);
    for (size_t c = 0; c < NCOLS; c++) {
        const json_t *v = json_object_get(row, report_cols[c]);
        if (json_is_integer(v))
            printf(",%lld", (long long)json_integer_value(v));
        else if (json_is_number(v))
            printf(",%.6g", json_number_value(v));
        else
            printf(",");
    }
    printf("\n");
}

static void
table_row(const json_t *row, const char *key)
{
    char gh[24], uh[24], eff[24], wm[24], wp[24], waste[24];
    cell(gh, sizeof gh, json_object_get(row, "gpu_hours"), 2, 1, "");
    cell(uh, sizeof uh, json_object_get(row, "used_gpu_hours"), 2, 1, "");
    cell(eff, sizeof eff, json_object_get(row, "efficiency"), 0, 100, "%");
    wait_cell(wm, sizeof wm, json_object_get(row, "wait_mean_s"));
    wait_cell(wp, sizeof wp, json_object_get(row, "wait_p95_s"));
    cell(waste, sizeof waste, json_object_get(row, "wastage_ratio"), 1, 100,
         "%");
    printf("%-20s %9s %9s %5s %7lld %6lld %6lld %6lld %7lld %7s %7s %6s\n", key,
           gh, uh, eff, (long long)al_json_int(row, "started", 0),
           (long long)al_json_int(row, "completed", 0),
           (long long)al_json_int(row, "failed", 0),
           (long long)al_json_int(row, "cancelled", 0),
           (long long)al_json_int(row, "preempted", 0), wm, wp, waste);
}

int
al_cli_report(int argc, char **argv)
{
    report_args_t a;
    memset(&a, 0, sizeof a);
    int npos, rc = al_opt_parse_cmd(&al_cli_report_cmd, NULL, &a, argc, argv,
                                    NULL, 0, &npos);
    if (rc != 0 || a.help) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_report_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    static const char *const bys[] = { "queue", "user", "class", "model",
                                       "node" };
    bool ok = a.by == NULL;
    for (size_t i = 0; !ok && i < sizeof bys / sizeof bys[0]; i++)
        ok = strcmp(a.by, bys[i]) == 0;
    if (!ok) {
        fprintf(stderr, "allot report: --by must be queue, user, class, "
                        "model or node\n");
        return AL_EXIT_USAGE;
    }
    if (a.json && a.csv) {
        fprintf(stderr, "allot report: --json or --csv, not both\n");
        return AL_EXIT_USAGE;
    }
    int64_t from, to;
    if ((rc = parse_period("report", a.since, a.until, &from, &to)) != 0)
        return rc;
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    char path[160];
    snprintf(path, sizeof path, "/v1/report?since=%lld&until=%lld&by=%s",
             (long long)from, (long long)to, a.by ? a.by : "queue");
    json_t *v = NULL;
    rc = al_client_call(&c, "GET", path, NULL, &v, NULL, NULL);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    json_t *rows = json_object_get(v, "rows");
    json_t *total = json_object_get(v, "total");
    if (a.json) {
        al_cli_print_json(v);
    } else if (a.csv) {
        printf("%s", a.by ? a.by : "queue");
        for (size_t k = 0; k < NCOLS; k++)
            printf(",%s", report_cols[k]);
        printf("\n");
        for (size_t i = 0; i < json_array_size(rows); i++)
            csv_row(json_array_get(rows, i),
                    al_json_str(json_array_get(rows, i), "key", ""));
        csv_row(total, "total");
    } else {
        char up[24];
        snprintf(up, sizeof up, "%s", a.by ? a.by : "queue");
        for (char *p = up; *p; p++)
            *p = (char)(*p - ('a' <= *p && *p <= 'z' ? 32 : 0));
        printf("%-20s %9s %9s %5s %7s %6s %6s %6s %7s %7s %7s %6s\n", up,
               "GPU-H", "USED-H", "EFF", "STARTED", "DONE", "FAILED", "CANCEL",
               "PREEMPT", "WAIT", "WAIT95", "WASTE");
        for (size_t i = 0; i < json_array_size(rows); i++)
            table_row(json_array_get(rows, i),
                      al_json_str(json_array_get(rows, i), "key", ""));
        table_row(total, "total");
    }
    json_decref(v);
    return AL_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* allot history                                                      */

typedef struct history_args {
    const char *since, *until, *user, *queue, *state, *server, *token;
    int64_t limit;
    bool json, help;
} history_args_t;

#define H(f) offsetof(history_args_t, f)

static const al_opt_t history_opts[] = {
    { .name = "--since",
      .kind = AL_OPT_STR,
      .off = H(since),
      .arg = "T",
      .help = "jobs ended from T (default -1d; as `allot report`)",
      .flags = AL_OPT_BRIEF },
    { .name = "--until",
      .kind = AL_OPT_STR,
      .off = H(until),
      .arg = "T",
      .help = "jobs ended before T (default now)" },
    { .name = "--user",
      .kind = AL_OPT_STR,
      .off = H(user),
      .arg = "NAME",
      .help = "that user's jobs (admins; default: an admin sees "
              "everyone's, a user their own)" },
    { .name = "--queue",
      .kind = AL_OPT_STR,
      .off = H(queue),
      .arg = "Q",
      .help = "jobs of queue Q" },
    { .name = "--state",
      .kind = AL_OPT_STR,
      .off = H(state),
      .arg = "S[,S]",
      .help = "completed, failed, cancelled or out_of_memory (default: "
              "all four)" },
    { .name = "-n",
      .kind = AL_OPT_INT,
      .off = H(limit),
      .min = 1,
      .max = 1000000,
      .arg = "N",
      .help = "at most the N that ended last (default 1000)" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = H(json),
      .help = "the jobs as JSON" },
    AL_CLI_CONN_OPTS(history_args_t),
    { .name = NULL },
};

#undef H

const al_opt_cmd_t al_cli_history_cmd = {
    .name = "history",
    .opts = history_opts,
    .about = "Jobs that ended, as sacct lists them: when they were submitted, "
             "started\nand ended, their wait and run time, GPUs, nodes, exit "
             "status and how often\nthey were preempted or requeued.\n",
};

static void
clock_cell(char *buf, size_t n, int64_t ms)
{
    if (ms <= 0) {
        snprintf(buf, n, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%m-%d %H:%M:%S", &tm);
}

/* "task 0 on n1, task 1 on n2" as "n1,n2" (each node once). */
static void
nodes_cell(al_buf_t *b, const json_t *placement)
{
    for (size_t i = 0; i < json_array_size(placement); i++) {
        const char *n = al_json_str(json_array_get(placement, i), "node", "?");
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(al_json_str(json_array_get(placement, k), "node", ""),
                          n) == 0;
        if (!seen)
            al_buf_printf(b, "%s%s", b->len ? "," : "", n);
    }
    if (b->len == 0)
        al_buf_puts(b, "-");
}

int
al_cli_history(int argc, char **argv)
{
    history_args_t a;
    memset(&a, 0, sizeof a);
    a.limit = 1000;
    int npos, rc = al_opt_parse_cmd(&al_cli_history_cmd, NULL, &a, argc, argv,
                                    NULL, 0, &npos);
    if (rc != 0 || a.help) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_history_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    int64_t from, to;
    if ((rc = parse_period("history", a.since, a.until, &from, &to)) != 0)
        return rc;
    const char *states =
        a.state ? a.state : "completed,failed,cancelled,out_of_memory";
    /* Only ended states: what has not ended has no history yet. */
    for (const char *p = states; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (!((n == 9 && strncmp(p, "completed", n) == 0) ||
              (n == 6 && strncmp(p, "failed", n) == 0) ||
              (n == 9 && strncmp(p, "cancelled", n) == 0) ||
              (n == 13 && strncmp(p, "out_of_memory", n) == 0))) {
            fprintf(stderr,
                    "allot history: --state takes completed, failed, "
                    "cancelled and out_of_memory, not '%.*s'\n",
                    (int)n, p);
            return AL_EXIT_USAGE;
        }
        p += n + (p[n] == ',');
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    /* Pages of the list, oldest first; kept: those ended in the period,
     * the last `limit` of them. */
    json_t *kept = json_array();
    uint64_t after = 0;
    /* Without --until, up to now: a job that ended within this second
     * too (the period's bounds are whole seconds). */
    int64_t to_ms = a.until != NULL ? to * 1000 : INT64_MAX;
    for (;;) {
        al_buf_t path;
        al_buf_init(&path);
        /* expand: an array's elements are the jobs that ran, each a row
         * (its parent is none). */
        al_buf_printf(&path, "/v1/jobs?state=%s&limit=1000&after=%llu&expand=1",
                      states, (unsigned long long)after);
        if (a.user != NULL)
            al_buf_printf(&path, "&user=%s", a.user);
        json_t *v = NULL;
        rc =
            al_client_call(&c, "GET", al_buf_cstr(&path), NULL, &v, NULL, NULL);
        al_buf_fini(&path);
        if (rc != 0) {
            json_decref(kept);
            al_client_fini(&c);
            return rc;
        }
        json_t *jobs = json_object_get(v, "jobs");
        for (size_t i = 0; i < json_array_size(jobs); i++) {
            json_t *j = json_array_get(jobs, i);
            int64_t end = al_json_int(j, "end_ms", 0);
            after = (uint64_t)al_json_int(j, "id", 0);
            if (end < from * 1000 || end >= to_ms)
                continue;
            if (a.queue != NULL &&
                strcmp(al_json_str(j, "queue", ""), a.queue) != 0)
                continue;
            json_array_append(kept, j);
        }
        size_t n = json_array_size(jobs);
        json_decref(v);
        if (n < 1000)
            break;
    }
    al_client_fini(&c);
    while ((int64_t)json_array_size(kept) > a.limit)
        json_array_remove(kept, 0);
    if (a.json) {
        al_cli_print_json(kept);
        json_decref(kept);
        return AL_EXIT_OK;
    }
    printf("%-8s %-16s %-10s %-12s %-13s %-14s %-14s %-14s %7s %8s %5s %5s "
           "%7s %s\n",
           "ID", "NAME", "USER", "QUEUE", "STATE", "SUBMIT", "START", "END",
           "WAIT", "ELAPSED", "GPUS", "EXIT", "PREEMPT", "NODES");
    for (size_t i = 0; i < json_array_size(kept); i++) {
        json_t *j = json_array_get(kept, i);
        int64_t sub = al_json_int(j, "submit_ms", 0),
                st = al_json_int(j, "start_ms", 0),
                end = al_json_int(j, "end_ms", 0);
        char s1[32], s2[32], s3[32], wait[16] = "-", el[16] = "-", gpus[24],
                                     ex[32];
        clock_cell(s1, sizeof s1, sub);
        clock_cell(s2, sizeof s2, st);
        clock_cell(s3, sizeof s3, end);
        if (st > 0) {
            al_cli_age(st - sub, wait, sizeof wait);
            al_cli_age(end - st, el, sizeof el);
        }
        int64_t g = al_json_int(j, "gpus", 0),
                m = al_json_int(j, "gpu_milli", 0),
                nt = al_json_int(j, "tasks", 1);
        if (g > 0)
            snprintf(gpus, sizeof gpus, "%lld", (long long)g * nt);
        else
            snprintf(gpus, sizeof gpus, "%.2g", (double)(m * nt) / 1000);
        int64_t sig = al_json_int(j, "signal", 0);
        if (sig > 0)
            snprintf(ex, sizeof ex, "sig%lld", (long long)sig);
        else if (strcmp(al_json_str(j, "state", ""), "cancelled") == 0 &&
                 al_json_int(j, "exit_code", 0) == 0)
            snprintf(ex, sizeof ex, "-"); /* stopped: no exit of its own */
        else
            snprintf(ex, sizeof ex, "%lld",
                     (long long)al_json_int(j, "exit_code", 0));
        al_buf_t nodes;
        al_buf_init(&nodes);
        nodes_cell(&nodes, json_object_get(j, "placement"));
        char id[48];
        if (json_is_integer(json_object_get(j, "array_job_id")))
            snprintf(id, sizeof id, "%lld_%lld",
                     (long long)al_json_int(j, "array_job_id", 0),
                     (long long)al_json_int(j, "array_index", 0));
        else
            snprintf(id, sizeof id, "%lld", (long long)al_json_int(j, "id", 0));
        printf("%-8s %-16.16s %-10.10s %-12.12s %-13s %-14s %-14s %-14s %7s "
               "%8s %5s %5s %7lld %s\n",
               id, al_json_str(j, "name", ""), al_json_str(j, "user", ""),
               al_json_str(j, "queue", ""), al_json_str(j, "state", ""), s1, s2,
               s3, wait, el, gpus, ex,
               (long long)al_json_int(j, "restart_count", 0),
               al_buf_cstr(&nodes));
        al_buf_fini(&nodes);
    }
    json_decref(kept);
    return AL_EXIT_OK;
}
