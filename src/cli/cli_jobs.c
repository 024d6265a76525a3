/* cli_jobs.c -- `allot ls`, `show`, `cancel`, `hold`, `release`, `logs`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "cli_client.h"
#include "clock.h"
#include "json.h"

static bool
number_ok(const char *s, size_t n)
{
    if (n == 0 || n > 19)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* A job id, or an array's element ID_INDEX. */
static bool
job_id_ok(const char *s)
{
    const char *us = strchr(s, '_');
    return us != NULL ? number_ok(s, (size_t)(us - s)) &&
                            number_ok(us + 1, strlen(us + 1))
                      : number_ok(s, strlen(s));
}

/* How job j is named: ID, an element's ARRAY_INDEX, or an array's
 * ID_[SPEC]. */
static void
id_text(const json_t *j, char *buf, size_t len)
{
    json_t *arr = json_object_get(j, "array");
    if (json_is_integer(json_object_get(j, "array_job_id")))
        snprintf(buf, len, "%lld_%lld",
                 (long long)al_json_int(j, "array_job_id", 0),
                 (long long)al_json_int(j, "array_index", 0));
    else if (arr != NULL)
        snprintf(buf, len, "%lld_[%s]", (long long)al_json_int(j, "id", 0),
                 al_json_str(arr, "spec", ""));
    else
        snprintf(buf, len, "%lld", (long long)al_json_int(j, "id", 0));
}

/* An array's elements by state, "3 running, 97 pending". */
static void
array_counts(const json_t *arr, al_buf_t *out)
{
    static const char *const order[] = { "running",  "pending",
                                         "held",     "completed",
                                         "failed",   "out_of_memory",
                                         "cancelled" };
    json_t *st = json_object_get(arr, "states");
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        long long n = al_json_int(st, order[i], 0);
        if (n > 0)
            al_buf_printf(out, "%s%lld %s", out->len ? ", " : "", n, order[i]);
    }
}

/* True when the positional arguments are npos job ids (1 <= npos <= max);
 * otherwise says what is wrong (before the usage text the caller prints).
 * rc != 0: the option parser has said it already. */
static bool
ids_ok(const char *cmd, int rc, char **pos, int npos, int max)
{
    if (rc != 0)
        return false;
    if (npos == 0 || npos > max) {
        fprintf(stderr, "allot %s: %s\n", cmd,
                npos == 0 ? "which job? give its id (allot ls lists them)"
                          : "one job id only");
        return false;
    }
    for (int i = 0; i < npos; i++) {
        if (!job_id_ok(pos[i])) {
            fprintf(stderr,
                    "allot %s: '%s' is not a job id (a number, or an array's "
                    "ID_INDEX)\n",
                    cmd, pos[i]);
            return false;
        }
    }
    return true;
}

static void
gpus_text(const json_t *j, char *buf, size_t len)
{
    long long tasks = al_json_int(j, "tasks", 1);
    long long g = al_json_int(j, "gpus", 0);
    long long m = al_json_int(j, "gpu_milli", 0);
    if (g > 0)
        snprintf(buf, len, "%lld", g * tasks);
    else if (m > 0)
        snprintf(buf, len, "%.2f", (double)(m * tasks) / 1000.0);
    else
        snprintf(buf, len, "0");
}

/* Distinct node names of a running job, comma-separated. */
static void
nodes_text(const json_t *j, al_buf_t *out)
{
    json_t *pl = json_object_get(j, "placement");
    for (size_t i = 0; i < json_array_size(pl); i++) {
        const char *n = al_json_str(json_array_get(pl, i), "node", "?");
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen =
                strcmp(n, al_json_str(json_array_get(pl, k), "node", "")) == 0;
        if (!seen) {
            if (out->len > 0)
                al_buf_putc(out, ',');
            al_buf_puts(out, n);
        }
    }
}

typedef struct ls_args {
    const char *state, *queue, *user, *limit, *server, *token;
    bool all, json, expand, help;
} ls_args_t;

#define L(f) offsetof(ls_args_t, f)

static const al_opt_t ls_opts[] = {
    { .name = "--all",
      .kind = AL_OPT_FLAG,
      .off = L(all),
      .help = "every job, not only pending, held and running ones",
      .flags = AL_OPT_BRIEF },
    { .name = "--state",
      .kind = AL_OPT_STR,
      .off = L(state),
      .arg = "S[,S...]",
      .help = "jobs in these states",
      .flags = AL_OPT_BRIEF },
    { .name = "--queue",
      .kind = AL_OPT_STR,
      .off = L(queue),
      .arg = "Q",
      .help = "jobs of queue Q",
      .flags = AL_OPT_BRIEF },
    { .name = "--user",
      .kind = AL_OPT_STR,
      .off = L(user),
      .arg = "U",
      .help = "jobs of user U" },
    { .name = "--limit",
      .kind = AL_OPT_STR,
      .off = L(limit),
      .arg = "N",
      .help = "at most N jobs (default 100000)" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = L(json),
      .help = "the jobs as a JSON array",
      .flags = AL_OPT_BRIEF },
    { .name = "--expand",
      .kind = AL_OPT_FLAG,
      .off = L(expand),
      .help = "a row per element of a job array (ID_INDEX)" },
    AL_CLI_CONN_OPTS(ls_args_t),
    { .name = NULL },
};

#undef L

const al_opt_cmd_t al_cli_ls_cmd = {
    .name = "ls",
    .opts = ls_opts,
    .about = "Lists pending, held and running jobs (--all: every job).  The "
             "last\n"
             "column shows where a job runs, or why it waits.  A job array is "
             "one\n"
             "row, ID_[SPEC], with its elements' count in each state; "
             "--expand\n"
             "lists its elements, ID_INDEX, instead.\n",
};

int
al_cli_ls(int argc, char **argv)
{
    ls_args_t a = { 0 };
    int npos, rc = al_opt_parse_cmd(&al_cli_ls_cmd, NULL, &a, argc, argv, NULL,
                                    0, &npos);
    if (rc != 0 || a.help) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_ls_cmd);
        return a.help ? AL_EXIT_OK : rc;
    }
    const char *state = a.state, *queue = a.queue, *user = a.user,
               *limit = a.limit;
    bool all = a.all, json = a.json;
    char *end = NULL;
    long max = limit ? strtol(limit, &end, 10) : 100000;
    if (max <= 0 || (end != NULL && *end != '\0')) {
        fputs("allot ls: --limit wants a positive number\n", stderr);
        return AL_EXIT_USAGE;
    }
    /* The states the controller knows, said here as a usage error. */
    static const char *const states[] = { "pending", "held",
                                          "running", "completed",
                                          "failed",  "cancelled",
                                          "active",  "out_of_memory" };
    for (const char *p = state; p != NULL;) {
        size_t n = strcspn(p, ",");
        bool known = false;
        for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
            known = known ||
                    (strlen(states[k]) == n && strncmp(p, states[k], n) == 0);
        if (!known) {
            fprintf(stderr,
                    "allot ls: unknown state '%.*s' (pending, held, running, "
                    "completed, failed, cancelled, out_of_memory, active)\n",
                    (int)n, p);
            return AL_EXIT_USAGE;
        }
        p = p[n] == ',' ? p + n + 1 : NULL;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    json_t *jobs = json_array();
    long long after = 0;
    while ((long)json_array_size(jobs) < max) {
        al_buf_t path = AL_BUF_INIT;
        al_buf_printf(&path, "/v1/jobs?limit=%ld&after=%lld",
                      max - (long)json_array_size(jobs) > 1000
                          ? 1000
                          : max - (long)json_array_size(jobs),
                      after);
        if (state != NULL || !all)
            al_buf_printf(&path, "&state=%s", state ? state : "active");
        if (queue != NULL)
            al_buf_printf(&path, "&queue=%s", queue);
        if (user != NULL)
            al_buf_printf(&path, "&user=%s", user);
        if (a.expand)
            al_buf_puts(&path, "&expand=1");
        json_t *out = NULL;
        rc = al_client_call(&c, "GET", al_buf_cstr(&path), NULL, &out, NULL,
                            NULL);
        al_buf_fini(&path);
        if (rc != 0)
            break;
        json_array_extend(jobs, json_object_get(out, "jobs"));
        json_t *next = json_object_get(out, "next");
        after = json_is_integer(next) ? json_integer_value(next) : 0;
        json_decref(out);
        if (after == 0)
            break;
    }
    al_client_fini(&c);
    if (rc != 0) {
        json_decref(jobs);
        return rc;
    }
    if (json) {
        al_cli_print_json(jobs);
        json_decref(jobs);
        return AL_EXIT_OK;
    }
    int idw = 7; /* the ID column: as wide as its widest */
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        char id[96];
        id_text(json_array_get(jobs, i), id, sizeof id);
        if ((int)strlen(id) > idw)
            idw = (int)strlen(id);
    }
    int stw = 9; /* the STATE column: out_of_memory is wider */
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        size_t n = strlen(al_json_str(json_array_get(jobs, i), "state", ""));
        if ((int)n > stw)
            stw = (int)n;
    }
    printf("%-*s %-16s %-10s %-10s %-9s %-*s %5s %5s  %s\n", idw, "ID", "NAME",
           "USER", "QUEUE", "CLASS", stw, "STATE", "GPUS", "AGE",
           "NODES/REASON");
    int64_t now = al_clock_ms();
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *j = json_array_get(jobs, i);
        char g[32], age[32], id[96];
        gpus_text(j, g, sizeof g);
        id_text(j, id, sizeof id);
        al_cli_age(now - al_json_int(j, "submit_ms", now), age, sizeof age);
        const char *st = al_json_str(j, "state", "?");
        if (al_json_bool(j, "suspended", false))
            st = "suspended"; /* running, its processes stopped */
        al_buf_t last = AL_BUF_INIT;
        if (json_object_get(j, "array") != NULL)
            array_counts(json_object_get(j, "array"), &last);
        else if (strcmp(st, "running") == 0)
            nodes_text(j, &last);
        else
            al_buf_puts(&last, al_json_str(j, "reason", ""));
        printf("%-*s %-16.16s %-10.10s %-10.10s %-9s %-*s %5s %5s  %s\n", idw,
               id, al_json_str(j, "name", ""), al_json_str(j, "user", ""),
               al_json_str(j, "queue", ""), al_json_str(j, "class", ""), stw,
               st, g, age, al_buf_cstr(&last));
        al_buf_fini(&last);
    }
    json_decref(jobs);
    return AL_EXIT_OK;
}

/* The options of commands that take only --json and the connection's. */
typedef struct json_args {
    const char *server, *token;
    bool json, help;
} json_args_t;

static const al_opt_t show_opts[] = {
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = offsetof(json_args_t, json),
      .help = "the job as JSON",
      .flags = AL_OPT_BRIEF },
    AL_CLI_CONN_OPTS(json_args_t),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_show_cmd = {
    .name = "show",
    .opts = show_opts,
    .args = "JOBID",
};

static void
print_time(const char *label, int64_t ms)
{
    if (ms <= 0)
        return;
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char buf[64];
    localtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    printf("%-10s %s\n", label, buf);
}

int
al_cli_show(int argc, char **argv)
{
    json_args_t a = { 0 };
    char *pos[1];
    int npos, rc = al_opt_parse_cmd(&al_cli_show_cmd, NULL, &a, argc, argv, pos,
                                    1, &npos);
    if (a.help || !ids_ok("show", rc, pos, npos, 1)) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_show_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%s", pos[0]);
    json_t *j = NULL;
    rc = al_client_call(&c, "GET", path, NULL, &j, NULL, NULL);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    if (a.json) {
        al_cli_print_json(j);
        json_decref(j);
        return AL_EXIT_OK;
    }
    char g[32], id[96];
    gpus_text(j, g, sizeof g);
    id_text(j, id, sizeof id);
    printf("%-10s %s\n", "id", id);
    json_t *arr = json_object_get(j, "array");
    if (arr != NULL) {
        al_buf_t counts = AL_BUF_INIT;
        array_counts(arr, &counts);
        printf("%-10s %lld elements: %s\n", "array",
               (long long)al_json_int(arr, "count", 0), al_buf_cstr(&counts));
        al_buf_fini(&counts);
    } else if (json_is_integer(json_object_get(j, "array_job_id"))) {
        printf("%-10s %lld\n", "job id", (long long)al_json_int(j, "id", 0));
    }
    static const char *const strs[] = { "name",  "user",  "queue",
                                        "class", "state", "reason" };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (al_json_str(j, strs[i], NULL) != NULL)
            printf("%-10s %s\n", strs[i], al_json_str(j, strs[i], ""));
    if (al_json_bool(j, "suspended", false))
        printf("%-10s %s\n", "suspended", "yes (allot resume continues it)");
    if (al_json_int(j, "retries", 0) > 0)
        printf("%-10s %lld of %lld\n", "retried",
               (long long)al_json_int(j, "retried", 0),
               (long long)al_json_int(j, "retries", 0));
    char per[48];
    long long tg = al_json_int(j, "gpus", 0),
              tmilli = al_json_int(j, "gpu_milli", 0);
    long long tgmem = al_json_int(j, "gpu_mem", 0);
    if (tg == 0 && tgmem > 0)
        snprintf(per, sizeof per, "%.1f GiB of a GPU",
                 (double)tgmem / (1 << 30));
    else if (tg == 0 && tmilli > 0)
        snprintf(per, sizeof per, "%.2f of a GPU", (double)tmilli / 1000.0);
    else
        snprintf(per, sizeof per, "%lld GPU%s", tg, tg == 1 ? "" : "s");
    printf("%-10s %lld x (%s, %.2f CPU, %lld MiB)\n", "tasks",
           (long long)al_json_int(j, "tasks", 1), per,
           (double)al_json_int(j, "cpu_milli", 0) / 1000.0,
           (long long)(al_json_int(j, "mem_bytes", 0) >> 20));
    printf("%-10s %s\n", "gpus", g);
    if (al_json_str(j, "gpu_model", NULL) != NULL)
        printf("%-10s %s\n", "gpu model", al_json_str(j, "gpu_model", ""));
    if (al_json_int(j, "max_tasks", 0) > 0)
        printf("%-10s %lld..%lld (elastic; %lld now)\n", "size",
               (long long)al_json_int(j, "min_tasks", 0),
               (long long)al_json_int(j, "max_tasks", 0),
               (long long)al_json_int(j, "tasks", 0));
    if (al_json_bool(j, "checkpointing", false))
        printf("%-10s %s\n", "checkpoint", "yes (consolidation may move it)");
    if (al_json_str(j, "pool", NULL) != NULL)
        printf("%-10s %s\n", "pool", al_json_str(j, "pool", ""));
    if (al_json_str(j, "constraint", NULL) != NULL)
        printf("%-10s %s\n", "constraint", al_json_str(j, "constraint", ""));
    if (al_json_str(j, "nvlink", NULL) != NULL)
        printf("%-10s %s (each task in one NVLink domain)\n", "nvlink",
               al_json_str(j, "nvlink", ""));
    if (al_json_str(j, "topology", NULL) != NULL)
        printf("%-10s %s (the gang in one topology domain)\n", "topology",
               al_json_str(j, "topology", ""));
    long long minrt = al_json_int(j, "min_runtime", 0);
    if (minrt > 0)
        printf("%-10s %lld s (not preempted before)\n", "min runtime", minrt);
    long long lim = al_json_int(j, "time_limit", 0);
    if (lim > 0)
        printf("%-10s %lld s\n", "time limit", lim);
    json_t *after = json_object_get(j, "after");
    if (json_array_size(after) > 0) {
        printf("%-10s", "after");
        for (size_t i = 0; i < json_array_size(after); i++)
            printf(" %lld",
                   (long long)json_integer_value(json_array_get(after, i)));
        printf("\n");
    }
    const char *dep = al_json_str(j, "dependency", NULL);
    if (dep != NULL)
        printf("%-10s %s\n", "dependency", dep);
    json_t *cmd = json_object_get(j, "command");
    printf("%-10s", "command");
    for (size_t i = 0; i < json_array_size(cmd); i++)
        printf(" %s", json_string_value(json_array_get(cmd, i)));
    printf("\n");
    if (al_json_str(j, "cwd", NULL) != NULL)
        printf("%-10s %s\n", "cwd", al_json_str(j, "cwd", ""));
    print_time("submitted", al_json_int(j, "submit_ms", 0));
    print_time("started", al_json_int(j, "start_ms", 0));
    print_time("ended", al_json_int(j, "end_ms", 0));
    printf("%-10s %lld\n", "restarts",
           (long long)al_json_int(j, "restart_count", 0));
    const char *st = al_json_str(j, "state", "");
    long long sig = al_json_int(j, "signal", 0);
    bool exited = strcmp(st, "completed") == 0 || strcmp(st, "failed") == 0 ||
                  strcmp(st, "out_of_memory") == 0;
    if (exited && sig != 0)
        printf("%-10s killed by signal %lld (%s)\n", "exit", sig,
               strsignal((int)sig));
    else if (exited && al_json_int(j, "start_ms", 0) != 0) /* it ran: an exit */
        printf("%-10s %lld\n", "exit code",
               (long long)al_json_int(j, "exit_code", 0));
    json_t *pl = json_object_get(j, "placement");
    for (size_t i = 0; i < json_array_size(pl); i++) {
        json_t *p = json_array_get(pl, i);
        al_buf_t gl = AL_BUF_INIT;
        json_t *ga = json_object_get(p, "gpus");
        for (size_t k = 0; k < json_array_size(ga); k++)
            al_buf_printf(&gl, "%s%lld", k ? "," : "",
                          (long long)json_integer_value(json_array_get(ga, k)));
        printf("task %-5lld on %s, GPUs [%s]",
               (long long)al_json_int(p, "task", 0),
               al_json_str(p, "node", "?"), al_buf_cstr(&gl));
        /* Its use, from its node's cgroup, when the agent confines it. */
        if (al_json_int(p, "cpu_usec", -1) >= 0)
            printf(", CPU %.1f s", (double)al_json_int(p, "cpu_usec", 0) / 1e6);
        if (al_json_int(p, "mem_peak", -1) >= 0)
            printf(", memory peak %.1f MiB",
                   (double)al_json_int(p, "mem_peak", 0) / (1 << 20));
        printf("\n");
        al_buf_fini(&gl);
    }
    json_t *h = json_object_get(j, "history");
    if (json_array_size(h) > 0)
        printf("history:\n");
    for (size_t i = 0; i < json_array_size(h); i++) {
        json_t *e = json_array_get(h, i);
        time_t t = (time_t)(al_json_int(e, "time_ms", 0) / 1000);
        struct tm tm;
        char buf[32];
        localtime_r(&t, &tm);
        strftime(buf, sizeof buf, "%H:%M:%S", &tm);
        printf("  %s %-10s %s\n", buf, al_json_str(e, "event", ""),
               al_json_str(e, "detail", ""));
    }
    json_decref(j);
    return AL_EXIT_OK;
}

/* cancel, hold and release: the connection's options and job ids. */
typedef struct verb_args {
    const char *server, *token;
    bool help;
} verb_args_t;

static const al_opt_t verb_opts[] = {
    AL_CLI_CONN_OPTS(verb_args_t),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_cancel_cmd = { .name = "cancel",
                                         .opts = verb_opts,
                                         .args = "JOBID..." };
const al_opt_cmd_t al_cli_hold_cmd = { .name = "hold",
                                       .opts = verb_opts,
                                       .args = "JOBID..." };
const al_opt_cmd_t al_cli_release_cmd = { .name = "release",
                                          .opts = verb_opts,
                                          .args = "JOBID..." };
const al_opt_cmd_t al_cli_suspend_cmd = { .name = "suspend",
                                          .opts = verb_opts,
                                          .args = "JOBID..." };
const al_opt_cmd_t al_cli_resume_cmd = { .name = "resume",
                                         .opts = verb_opts,
                                         .args = "JOBID..." };

/* POST /v1/jobs/ID/<verb> for each id; `done` says it happened. */
static int
job_verb(const al_opt_cmd_t *cmd, const char *done, int argc, char **argv)
{
    const char *verb = cmd->name;
    verb_args_t a = { 0 };
    char *pos[256];
    int npos, rc = al_opt_parse_cmd(cmd, NULL, &a, argc, argv, pos, 256, &npos);
    if (a.help || !ids_ok(verb, rc, pos, npos, 256)) {
        al_opt_usage(a.help ? stdout : stderr, cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    int status = AL_EXIT_OK;
    for (int i = 0; i < npos; i++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%s/%s", pos[i], verb);
        json_t *out = NULL;
        if (al_client_call(&c, "POST", path, NULL, &out, NULL, NULL) != 0) {
            status = AL_EXIT_FAIL;
            continue;
        }
        printf("%s job %s\n", done, pos[i]);
        json_decref(out);
    }
    al_client_fini(&c);
    return status;
}

int
al_cli_cancel(int argc, char **argv)
{
    return job_verb(&al_cli_cancel_cmd, "cancelled", argc, argv);
}

int
al_cli_hold(int argc, char **argv)
{
    return job_verb(&al_cli_hold_cmd, "held", argc, argv);
}

int
al_cli_suspend(int argc, char **argv)
{
    return job_verb(&al_cli_suspend_cmd, "suspended", argc, argv);
}

int
al_cli_resume(int argc, char **argv)
{
    return job_verb(&al_cli_resume_cmd, "resumed", argc, argv);
}

int
al_cli_release(int argc, char **argv)
{
    return job_verb(&al_cli_release_cmd, "released", argc, argv);
}

typedef struct logs_args {
    const char *task, *restart, *server, *token;
    bool follow, follow2, json, help;
} logs_args_t;

#define G(f) offsetof(logs_args_t, f)

static const al_opt_t logs_opts[] = {
    { .name = "-f",
      .kind = AL_OPT_FLAG,
      .off = G(follow),
      .help = "follow the output until the job ends",
      .flags = AL_OPT_BRIEF },
    { .name = "--follow",
      .kind = AL_OPT_FLAG,
      .off = G(follow2),
      .flags = AL_OPT_HIDDEN },
    { .name = "--task",
      .kind = AL_OPT_STR,
      .off = G(task),
      .arg = "N",
      .help = "the task's output (default 0)",
      .flags = AL_OPT_BRIEF },
    { .name = "--restart",
      .kind = AL_OPT_STR,
      .off = G(restart),
      .arg = "R",
      .help = "the output of run R of a requeued job (from 0; default the "
              "latest)" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = G(json),
      .help = "JSON objects, one per line" },
    AL_CLI_CONN_OPTS(logs_args_t),
    { .name = NULL },
};

#undef G

const al_opt_cmd_t al_cli_logs_cmd = {
    .name = "logs",
    .opts = logs_opts,
    .args = "JOBID",
    .about =
        "Prints a task's output (stdout and stderr); -f follows it until "
        "the\n"
        "job ends.  --restart R reads the output of an earlier run of a\n"
        "requeued job (runs count from 0; the default is the latest).\n"
        "--json prints {\"job\", \"task\", \"restart\", \"offset\", "
        "\"text\"}\n"
        "objects, one per line (one in all without -f); output that is not\n"
        "UTF-8 comes as \"base64\" instead of \"text\".\n",
};

/* How much of the n bytes at p to show now: all but an unfinished UTF-8
 * character at the end (its other bytes come with the next read). */
static size_t
utf8_whole(const char *p, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = (unsigned char)p[n - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back */
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > back ? n - back : n;
    }
    return n;
}

/* One chunk of output as a JSON line (see al_cli_logs_cmd.about). */
static void
print_log_json(const char *job, const char *task, const char *restart,
               long long off, const char *data, size_t len)
{
    json_t *o = json_pack(
        "{s:I, s:I, s:o, s:I}", "job", (json_int_t)strtoll(job, NULL, 10),
        "task", (json_int_t)strtoll(task, NULL, 10), "restart",
        restart ? json_integer((json_int_t)strtoll(restart, NULL, 10))
                : json_null(),
        "offset", (json_int_t)off);
    json_t *text = json_stringn(data, len);
    if (text != NULL) {
        json_object_set_new(o, "text", text);
    } else {
        char *b64 = al_b64_encode(data, len);
        json_object_set_new(o, "base64", json_string(b64));
        free(b64);
    }
    char *line = json_dumps(o, JSON_COMPACT);
    puts(line);
    free(line);
    json_decref(o);
}

int
al_cli_logs(int argc, char **argv)
{
    logs_args_t a = { .task = "0" };
    char *pos[1];
    int npos, rc = al_opt_parse_cmd(&al_cli_logs_cmd, NULL, &a, argc, argv, pos,
                                    1, &npos);
    const char *task = a.task, *restart = a.restart;
    bool ok = a.help || ids_ok("logs", rc, pos, npos, 1);
    if (ok && !a.help &&
        (!job_id_ok(task) || (restart && !job_id_ok(restart)))) {
        fprintf(stderr, "allot logs: --task and --restart want numbers\n");
        ok = false;
    }
    if (!ok || a.help) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_logs_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    bool follow = a.follow || a.follow2, json = a.json;
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    /* One run throughout: the latest when --restart is not given (a job
     * requeued meanwhile starts a new log). */
    char jp[64], rbuf[24];
    snprintf(jp, sizeof jp, "/v1/jobs/%s", pos[0]);
    if (restart == NULL) {
        json_t *j = NULL;
        if ((rc = al_client_call(&c, "GET", jp, NULL, &j, NULL, NULL)) != 0) {
            al_client_fini(&c);
            return rc;
        }
        snprintf(rbuf, sizeof rbuf, "%lld",
                 (long long)al_json_int(j, "restart_count", 0));
        restart = rbuf;
        json_decref(j);
    }
    long long run = strtoll(restart, NULL, 10);
    long long off = 0, shown = 0;
    al_buf_t carry = AL_BUF_INIT; /* --json: an unfinished UTF-8 character */
    for (;;) {
        /* Read the state first: output fetched after seeing an ended run
         * is complete. */
        bool ended = true;
        if (follow) {
            json_t *j = NULL;
            if ((rc = al_client_call(&c, "GET", jp, NULL, &j, NULL, NULL)) != 0)
                break;
            const char *st = al_json_str(j, "state", "");
            ended = strcmp(st, "completed") == 0 || strcmp(st, "failed") == 0 ||
                    strcmp(st, "cancelled") == 0 ||
                    strcmp(st, "out_of_memory") == 0 ||
                    run < al_json_int(j, "restart_count", 0);
            json_decref(j);
        }
        char path[128];
        snprintf(path, sizeof path,
                 "/v1/jobs/%s/logs?task=%s&offset=%lld&restart=%s", pos[0],
                 task, off, restart);
        json_t *out = NULL;
        char *raw = NULL;
        size_t len = 0;
        if ((rc = al_client_call(&c, "GET", path, NULL, &out, &raw, &len)) != 0)
            break;
        json_decref(out);
        off += (long long)len;
        bool last = !follow || (ended && len == 0);
        if (!json) {
            fwrite(raw, 1, len, stdout);
        } else {
            al_buf_append(&carry, raw, len);
            size_t cut = last ? carry.len : utf8_whole(carry.data, carry.len);
            if (cut > 0 || (last && shown == 0))
                print_log_json(pos[0], task, restart, shown,
                               carry.data ? carry.data : "", cut);
            shown += (long long)cut;
            if (cut > 0)
                memmove(carry.data, carry.data + cut, carry.len - cut);
            carry.len -= cut;
        }
        fflush(stdout);
        free(raw);
        if (last)
            break;
        if (len == 0)
            al_clock_sleep_ms(300);
    }
    al_buf_fini(&carry);
    al_client_fini(&c);
    return rc;
}
