/*
 * sacct.c -- `sacct`: the accounting of jobs, running and ended, as Slurm
 * prints it: a line for the job and one for its batch step (ID.batch),
 * fields chosen with -o (widths with %N), -P/-p with a --delimiter, --json;
 * filters -j, -u, --name, -s, -S/-E.  allot keeps every job, so there is
 * no accounting database to set up.
 *
 * May call: slurm.c (the API, the mapping), format.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "json.h"
#include "slurm_int.h"
#include "xmalloc.h"

/* A line: the job's (step false), its batch step's (st NULL) or the
 * step st's (one that srun started: "ID.N"). */
typedef struct row {
    const json_t *job;
    bool step;
    int64_t now;
    const json_t *st;
} row_t;

typedef void (*value_fn)(const row_t *r, char *b, size_t n);

static bool
ran(const json_t *j)
{
    return al_json_int(j, "start_ms", 0) > 0;
}

static bool
ended(const json_t *j)
{
    const char *s = al_json_str(j, "state", "");
    return strcmp(s, "completed") == 0 || strcmp(s, "failed") == 0 ||
           strcmp(s, "cancelled") == 0 || strcmp(s, "out_of_memory") == 0;
}

/* A step's end (ms): its own, or its job's when the job ended under it
 * (its srun was stopped with the job), or 0 while it runs. */
static int64_t
step_end(const row_t *r)
{
    if (!json_is_true(json_object_get(r->st, "running")))
        return al_json_int(r->st, "end_ms", 0);
    return ended(r->job) ? al_json_int(r->job, "end_ms", 0) : 0;
}

static int64_t
step_elapsed_s(const row_t *r)
{
    /* In whole seconds, as Start and End show them: Elapsed is End minus
     * Start, as Slurm's. */
    int64_t start = al_json_int(r->st, "start_ms", 0) / 1000;
    int64_t end = step_end(r);
    int64_t e = (end > 0 ? end : r->now) / 1000 - start;
    return e > 0 ? e : 0;
}

static void
v_jobid(const row_t *r, char *b, size_t n)
{
    char id[64];
    al__sl_jobid(r->job, id, sizeof id);
    if (r->st != NULL)
        snprintf(b, n, "%s.%lld", id, (long long)al_json_int(r->st, "step", 0));
    else
        snprintf(b, n, "%s%s", id, r->step ? ".batch" : "");
}
static void
v_jobidraw(const row_t *r, char *b, size_t n)
{
    if (r->st != NULL)
        snprintf(b, n, "%lld.%lld", (long long)al_json_int(r->job, "id", 0),
                 (long long)al_json_int(r->st, "step", 0));
    else
        snprintf(b, n, "%lld%s", (long long)al_json_int(r->job, "id", 0),
                 r->step ? ".batch" : "");
}
static void
v_name(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%s",
             r->st     ? al_json_str(r->st, "name", "")
             : r->step ? "batch"
                       : al_json_str(r->job, "name", ""));
}
static void
v_state(const row_t *r, char *b, size_t n)
{
    if (r->st != NULL) {
        /* A step its job's cancel (or time limit) stopped, by a signal
         * or before its srun could say, ended CANCELLED, as Slurm's. */
        bool open = json_is_true(json_object_get(r->st, "running"));
        const char *js = al__sl_state(r->job);
        bool stopped =
            strcmp(js, "CANCELLED") == 0 || strcmp(js, "TIMEOUT") == 0;
        long long code = al_json_int(r->st, "exit_code", 0),
                  sig = al_json_int(r->st, "signal", 0);
        snprintf(b, n, "%s",
                 open && !ended(r->job)          ? "RUNNING"
                 : stopped && (open || sig != 0) ? "CANCELLED"
                 : open                          ? js
                 : sig != 0 && strcmp(js, "OUT_OF_MEMORY") == 0
                     ? js /* the step its node killed for its memory */
                 : code != 0 || sig != 0 ? "FAILED"
                                         : "COMPLETED");
        return;
    }
    const char *st = al__sl_state(r->job);
    if (r->step && (strcmp(st, "TIMEOUT") == 0 || strcmp(st, "CANCELLED") == 0))
        snprintf(b, n, "CANCELLED");
    else if (r->step)
        snprintf(b, n, "%s", st);
    else
        al__sl_state_by(r->job, b, n);
}
static void
v_exit(const row_t *r, char *b, size_t n)
{
    if (r->st != NULL) {
        long long sig = al_json_int(r->st, "signal", 0);
        /* One still open when its job was cancelled: SIGTERM's. */
        if (json_is_true(json_object_get(r->st, "running")) && ended(r->job) &&
            strcmp(al__sl_state(r->job), "COMPLETED") != 0)
            sig = 15;
        snprintf(b, n, "%lld:%lld",
                 (long long)al_json_int(r->st, "exit_code", 0), sig);
        return;
    }
    al__sl_exit(r->job, b, n);
    /* The batch step of a cancelled job ended by SIGTERM, as allot's cancel
     * does (the job's own line says 0:0, as Slurm's). */
    if (r->step && strcmp(b, "0:0") == 0 &&
        strcmp(al__sl_state(r->job), "CANCELLED") == 0)
        snprintf(b, n, "0:15");
}
static void
v_elapsed(const row_t *r, char *b, size_t n)
{
    al__sl_duration(r->st ? step_elapsed_s(r)
                          : al__sl_elapsed_s(r->job, r->now),
                    true, b, n);
}
static void
v_elapsed_raw(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%lld",
             (long long)(r->st ? step_elapsed_s(r)
                               : al__sl_elapsed_s(r->job, r->now)));
}
static void
v_start(const row_t *r, char *b, size_t n)
{
    al__sl_time(al_json_int(r->st ? r->st : r->job, "start_ms", 0), "Unknown",
                b, n);
}
static void
v_end(const row_t *r, char *b, size_t n)
{
    if (r->st != NULL) {
        al__sl_time(step_end(r), "Unknown", b, n);
        return;
    }
    al__sl_time(ended(r->job) ? al_json_int(r->job, "end_ms", 0) : 0, "Unknown",
                b, n);
}
static void
v_submit(const row_t *r, char *b, size_t n)
{
    al__sl_time(al_json_int(r->job, "submit_ms", 0), "Unknown", b, n);
}
static void
v_eligible(const row_t *r, char *b, size_t n)
{
    al__sl_time(al_json_int(r->job, "eligible_ms", 0), "Unknown", b, n);
}
static void
tres(const row_t *r, char *b, size_t n)
{
    const json_t *j = r->job;
    char mem[64];
    al__sl_mem(j, mem, sizeof mem);
    long long cpus = al__sl_cpus(j);
    long long gpus = al_json_int(j, "gpus", 0) * al_json_int(j, "tasks", 1);
    char g[48] = "";
    if (gpus > 0)
        snprintf(g, sizeof g, "gres/gpu=%lld,", gpus);
    long long mb = al_json_int(j, "mem_bytes", 0) * al_json_int(j, "tasks", 1);
    snprintf(mem, sizeof mem, "%lldM", (mb + (1 << 20) - 1) >> 20);
    if (r->step)
        snprintf(b, n, "cpu=%lld,%smem=%s,node=%d", cpus, g, mem,
                 al__sl_nnodes(j));
    else
        snprintf(b, n, "billing=%lld,cpu=%lld,%smem=%s,node=%d", cpus, cpus, g,
                 mem, al__sl_nnodes(j));
}
static void
v_alloc_tres(const row_t *r, char *b, size_t n)
{
    if (!ran(r->job))
        snprintf(b, n, "%s", "");
    else
        tres(r, b, n);
}
static void
v_req_tres(const row_t *r, char *b, size_t n)
{
    if (r->step)
        snprintf(b, n, "%s", "");
    else
        tres(r, b, n);
}
static void
v_alloc_cpus(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%lld", ran(r->job) ? al__sl_cpus(r->job) : 0);
}
static void
v_req_cpus(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%lld", al__sl_cpus(r->job));
}
static void
v_req_mem(const row_t *r, char *b, size_t n)
{
    if (r->step) {
        snprintf(b, n, "%s", "");
        return;
    }
    long long per_node = al_json_int(r->job, "mem_bytes", 0) *
                         al_json_int(r->job, "tasks", 1) /
                         al__sl_nnodes(r->job);
    snprintf(b, n, "%lldM", (per_node + (1 << 20) - 1) >> 20);
}
static void
v_nodelist(const row_t *r, char *b, size_t n)
{
    char *l = al__sl_nodelist(r->job);
    snprintf(b, n, "%s", l[0] ? l : "None assigned");
    free(l);
}
static void
v_nnodes(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%d", al__sl_nnodes(r->job));
}
static void
v_ntasks(const row_t *r, char *b, size_t n)
{
    if (r->st != NULL)
        snprintf(b, n, "%lld", (long long)al_json_int(r->st, "tasks", 1));
    else if (r->step)
        snprintf(b, n, "%lld", (long long)al_json_int(r->job, "tasks", 1));
    else
        snprintf(b, n, "%s", "");
}
static void
v_user(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->step ? "" : al_json_str(r->job, "user", ""));
}
static void
v_uid(const row_t *r, char *b, size_t n)
{
    long long uid = al__sl_uid(al_json_str(r->job, "user", ""));
    if (r->step || uid < 0)
        snprintf(b, n, "%s", "");
    else
        snprintf(b, n, "%lld", uid);
}
static void
v_account(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%s", al_json_str(r->job, "queue", ""));
}
static void
v_partition(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->step ? "" : al__sl_partition(r->job));
}
static void
v_limit(const row_t *r, char *b, size_t n)
{
    if (r->step)
        snprintf(b, n, "%s", "");
    else
        al__sl_limit(r->job, true, b, n);
}
static void
v_qos(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->step ? "" : "normal");
}
static void
v_reason(const row_t *r, char *b, size_t n)
{
    snprintf(b, n, "%s", al__sl_reason(r->job));
}
static void
v_cluster(const row_t *r, char *b, size_t n)
{
    (void)r;
    snprintf(b, n, "%s", AL_SLURM_PARTITION);
}

/* sacct's fields, their default widths (negative: left-aligned). */
static const struct field {
    const char *name;
    int width;
    value_fn fn;
} fields[] = {
    { "JobID", -12, v_jobid },
    { "JobIDRaw", -12, v_jobidraw },
    { "JobName", 10, v_name },
    { "State", 10, v_state },
    { "ExitCode", 8, v_exit },
    { "Elapsed", 10, v_elapsed },
    { "ElapsedRaw", 10, v_elapsed_raw },
    { "Start", 19, v_start },
    { "End", 19, v_end },
    { "Submit", 19, v_submit },
    { "Eligible", 19, v_eligible },
    { "AllocTRES", 10, v_alloc_tres },
    { "ReqTRES", 10, v_req_tres },
    { "AllocCPUS", 10, v_alloc_cpus },
    { "ReqCPUS", 8, v_req_cpus },
    { "ReqMem", 10, v_req_mem },
    { "NodeList", 15, v_nodelist },
    { "NNodes", 8, v_nnodes },
    { "NTasks", 8, v_ntasks },
    { "User", 9, v_user },
    { "UID", 6, v_uid },
    { "Account", 10, v_account },
    { "Partition", 10, v_partition },
    { "Timelimit", 10, v_limit },
    { "QOS", 10, v_qos },
    { "Reason", 25, v_reason },
    { "Cluster", 10, v_cluster },
};

static const struct field *
field_named(const char *s)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (strcasecmp(s, fields[i].name) == 0)
            return &fields[i];
    return NULL;
}

/* Exactly n digits at *p into *v; advances *p. */
static bool
fixed(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return false;
        *v = *v * 10 + (**p - '0');
    }
    return true;
}

/* -S/-E: "now", "now-N[seconds|minutes|hours|days]", "YYYY-MM-DD",
 * "YYYY-MM-DDTHH:MM[:SS]", "midnight", "today".  ms, or -1. */
static int64_t
when(const char *s, int64_t now)
{
    if (strcmp(s, "now") == 0)
        return now;
    if (strncmp(s, "now-", 4) == 0 || strncmp(s, "now+", 4) == 0) {
        char *end;
        long long v = strtoll(s + 4, &end, 10);
        long long unit = strcmp(end, "") == 0 || strcmp(end, "seconds") == 0 ? 1
                         : strcmp(end, "minutes") == 0 ? 60
                         : strcmp(end, "hours") == 0   ? 3600
                         : strcmp(end, "days") == 0    ? 86400
                                                       : -1;
        if (end == s + 4 || unit < 0 || v < 0 || v > 100000000)
            return -1;
        return now + (s[3] == '-' ? -1 : 1) * v * unit * 1000;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    time_t t = (time_t)(now / 1000);
    if (strcmp(s, "midnight") == 0 || strcmp(s, "today") == 0) {
        localtime_r(&t, &tm);
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    } else {
        /* YYYY-MM-DD[THH:MM[:SS]] */
        const char *p = s;
        int y, mo, d, h = 0, mi = 0, sec = 0;
        bool ok = fixed(&p, 4, &y) && *p++ == '-' && fixed(&p, 2, &mo) &&
                  *p++ == '-' && fixed(&p, 2, &d);
        if (ok && *p == 'T') {
            p++;
            ok = fixed(&p, 2, &h) && *p++ == ':' && fixed(&p, 2, &mi);
            if (ok && *p == ':') {
                p++;
                ok = fixed(&p, 2, &sec);
            }
        }
        if (!ok || *p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 ||
            h > 23 || mi > 59 || sec > 60 || y < 1970)
            return -1;
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
    }
    tm.tm_isdst = -1;
    return (int64_t)mktime(&tm) * 1000;
}

static json_t *
json_job(const json_t *j, int64_t now)
{
    char st[64], nodes[4096];
    row_t r = { j, false, now, NULL };
    v_state(&r, st, sizeof st);
    v_nodelist(&r, nodes, sizeof nodes);
    const char *s = al__sl_state(j);
    json_t *steps = json_array();
    char sid[64];
    snprintf(sid, sizeof sid, "%lld.batch", (long long)al_json_int(j, "id", 0));
    if (ran(j) && !json_is_true(json_object_get(j, "sl_nobatch")))
        json_array_append_new(
            steps,
            json_pack("{s:{s:I, s:s, s:s}, s:s, s:{s:s}}", "step", "job_id",
                      (json_int_t)al_json_int(j, "id", 0), "id", sid, "name",
                      "batch", "state", s, "exit_code", "status",
                      al_json_int(j, "signal", 0)      ? "SIGNALED"
                      : al_json_int(j, "exit_code", 0) ? "FAILED"
                                                       : "SUCCESS"));
    json_t *sv = json_object_get(j, "steps");
    for (size_t k = 0; k < json_array_size(sv); k++) {
        row_t sr = { j, true, now, json_array_get(sv, k) };
        char ss[32];
        v_state(&sr, ss, sizeof ss);
        snprintf(sid, sizeof sid, "%lld.%lld",
                 (long long)al_json_int(j, "id", 0),
                 (long long)al_json_int(sr.st, "step", 0));
        json_array_append_new(
            steps, json_pack("{s:{s:I, s:s, s:s}, s:s, s:{s:s}}", "step",
                             "job_id", (json_int_t)al_json_int(j, "id", 0),
                             "id", sid, "name", al_json_str(sr.st, "name", ""),
                             "state", ss, "exit_code", "status",
                             al_json_int(sr.st, "signal", 0)      ? "SIGNALED"
                             : al_json_int(sr.st, "exit_code", 0) ? "FAILED"
                                                                  : "SUCCESS"));
    }
    return json_pack(
        "{s:I, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, "
        "s:{s:s, s:I, s:{s:I}}, s:{s:I, s:I, s:I, s:I, s:{s:b, s:b, s:I}}, "
        "s:o}",
        "job_id", (json_int_t)al_json_int(j, "id", 0), "name",
        al_json_str(j, "name", ""), "user", al_json_str(j, "user", ""),
        "account", al_json_str(j, "queue", ""), "partition",
        al__sl_partition(j), "nodes", nodes, "state", "current", s, "reason",
        al__sl_reason(j), "exit_code", "status",
        al_json_int(j, "signal", 0)      ? "SIGNALED"
        : al_json_int(j, "exit_code", 0) ? "FAILED"
                                         : "SUCCESS",
        "return_code", (json_int_t)al_json_int(j, "exit_code", 0), "signal",
        "signal_id", (json_int_t)al_json_int(j, "signal", 0), "time",
        "submission", (json_int_t)(al_json_int(j, "submit_ms", 0) / 1000),
        "start", (json_int_t)(al_json_int(j, "start_ms", 0) / 1000), "end",
        (json_int_t)(al_json_int(j, "end_ms", 0) / 1000), "elapsed",
        (json_int_t)al__sl_elapsed_s(j, now), "limit", "set",
        al_json_int(j, "time_limit", 0) > 0, "infinite",
        al_json_int(j, "time_limit", 0) <= 0, "number",
        (json_int_t)(al_json_int(j, "time_limit", 0) / 60), "steps", steps);
}

enum { OPT_DELIM = 256, OPT_NAME, OPT_JSON };

static const struct option longopts[] = {
    { "jobs", required_argument, NULL, 'j' },
    { "user", required_argument, NULL, 'u' },
    { "allusers", no_argument, NULL, 'a' },
    { "allocations", no_argument, NULL, 'X' },
    { "noheader", no_argument, NULL, 'n' },
    { "parsable2", no_argument, NULL, 'P' },
    { "parsable", no_argument, NULL, 'p' },
    { "delimiter", required_argument, NULL, OPT_DELIM },
    { "format", required_argument, NULL, 'o' },
    { "starttime", required_argument, NULL, 'S' },
    { "endtime", required_argument, NULL, 'E' },
    { "name", required_argument, NULL, OPT_NAME },
    { "state", required_argument, NULL, 's' },
    { "json", no_argument, NULL, OPT_JSON },
    { "brief", no_argument, NULL, 'b' },
    { "long", no_argument, NULL, 'l' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

typedef struct sacct_args {
    bool alloc, noheader, p2, p1, json;
    const char *jobs, *users, *delim, *fmt, *S, *E, *names, *states;
} sacct_args_t;

/* The options into *a: -1, or the exit status (usage, --help). */
static int
parse_args(int argc, char **argv, sacct_args_t *a)
{
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "j:u:aXnPpo:S:E:s:blh", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 'j':
            a->jobs = optarg;
            break;
        case 'u':
            a->users = optarg;
            break;
        case 'a':
            break;
        case 'X':
            a->alloc = true;
            break;
        case 'n':
            a->noheader = true;
            break;
        case 'P':
            a->p2 = true;
            break;
        case 'p':
            a->p1 = true;
            break;
        case OPT_DELIM:
            a->delim = optarg;
            break;
        case 'o':
            a->fmt = optarg;
            break;
        case 'S':
            a->S = optarg;
            break;
        case 'E':
            a->E = optarg;
            break;
        case OPT_NAME:
            a->names = optarg;
            break;
        case 's':
            a->states = optarg;
            break;
        case OPT_JSON:
            a->json = true;
            break;
        case 'b':
            a->fmt = "JobID,State,ExitCode";
            break;
        case 'l':
            a->fmt = "JobID,JobIDRaw,JobName,Partition,Account,AllocCPUS,"
                     "ReqCPUS,ReqMem,NNodes,NodeList,State,ExitCode,Elapsed,"
                     "Timelimit,Submit,Start,End";
            break;
        case 'h':
            printf("Usage: sacct [-j JOBS] [-u USERS] [-X] [-n] [-P|-p] "
                   "[--delimiter D] [-o FIELDS] [-S T] [-E T] [--name N] [-s "
                   "STATES] [--json]\n");
            return 0;
        default:
            return 1;
        }
    }
    return -1;
}

/* -o into *f with the fields' default widths; 0, or 1 after saying why. */
static int
fields_of(const char *fmt, al_sl_fmt_t *f)
{
    if (al_sl_fmt_named(fmt, '%', f) != 0) {
        fprintf(stderr, "sacct: error: Invalid field requested: \"%s\"\n", fmt);
        return 1;
    }
    for (size_t i = 0; i < f->n; i++) {
        const struct field *fd = field_named(f->v[i].text);
        if (fd == NULL) {
            fprintf(stderr, "sacct: error: Invalid field requested: \"%s\"\n",
                    f->v[i].text);
            al_sl_fmt_fini(f);
            return 1;
        }
        if (!f->v[i].given) {
            f->v[i].width = abs(fd->width);
            f->v[i].right = fd->width > 0;
        }
    }
    return 0;
}

/* The jobs of -j (each asked for), or all; NULL after saying why. */
static json_t *
fetch(al_client_t *cl, const char *jobs)
{
    if (jobs == NULL)
        return al__sl_jobs(cl, "expand=1");
    json_t *list = json_array();
    json_t *ids = al__sl_split(jobs);
    for (size_t i = 0; i < json_array_size(ids) && list != NULL; i++) {
        al_sl_id_t id;
        int st;
        const char *w = json_string_value(json_array_get(ids, i));
        json_t *j = NULL;
        /* ID.STEP (ID.batch, ID.0): that step's line alone, as Slurm's
         * sacct gives it. */
        char job[64];
        const char *dot = strchr(w, '.');
        const char *only = dot != NULL ? dot + 1 : NULL;
        size_t n = dot != NULL ? (size_t)(dot - w) : strlen(w);
        bool step_ok = only == NULL || strcmp(only, "batch") == 0 ||
                       (only[0] != '\0' && strlen(only) <= 9 &&
                        strspn(only, "0123456789") == strlen(only));
        if (n < sizeof job) {
            memcpy(job, w, n);
            job[n] = '\0';
        }
        if (n >= sizeof job || !step_ok || !al__sl_parse_id(job, &id)) {
            fprintf(stderr, "sacct: error: Invalid job id: %s\n", w);
            st = 0;
        } else {
            j = al__sl_job(cl, &id, &st);
        }
        if (j != NULL) {
            if (only != NULL)
                json_object_set_new(j, "sl_only", json_string(only));
            json_array_append_new(list, j);
        } else if (st == 0) {
            json_decref(list);
            list = NULL;
        }
    }
    json_decref(ids);
    return list != NULL ? al__sl_expand(cl, list) : NULL;
}

/* Whether job j is salloc's allocation: its task waits for salloc's
 * release (step.c's fifo), not a command of the user's. */
static bool
is_salloc(const json_t *j)
{
    const char *c =
        json_string_value(json_array_get(json_object_get(j, "command"), 2));
    return c != NULL && strstr(c, "allot-salloc-") != NULL;
}

/* Slurm has a batch step for sbatch's jobs only: srun's job (no script)
 * is one step, ID.0, named as the job (srun's -J, else its command, as
 * Slurm's); salloc's has only its sruns' steps.
 * Marks j "sl_nobatch" for both, and gives srun's its step 0. */
static void
srun_step(json_t *j)
{
    if (json_object_get(j, "script") != NULL)
        return;
    json_object_set_new(j, "sl_nobatch", json_true());
    if (is_salloc(j))
        return;
    const char *st = al__sl_state(j);
    /* Stopped by its cancel or time limit: open, as a step its job's end
     * cut short (CANCELLED, 0:15). */
    bool open =
        !ended(j) || strcmp(st, "CANCELLED") == 0 || strcmp(st, "TIMEOUT") == 0;
    json_t *o =
        json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:b}", "step", 0, "name",
                  al_json_str(j, "name", ""), "tasks",
                  (json_int_t)al_json_int(j, "tasks", 1), "start_ms",
                  (json_int_t)al_json_int(j, "start_ms", 0), "end_ms",
                  (json_int_t)al_json_int(j, "end_ms", 0), "exit_code",
                  (json_int_t)al_json_int(j, "exit_code", 0), "signal",
                  (json_int_t)al_json_int(j, "signal", 0), "running", open);
    json_t *sv = json_object_get(j, "steps");
    if (o != NULL && json_is_array(sv) && json_array_size(sv) == 0)
        json_array_append_new(sv, o);
    else
        json_decref(o);
}

/* Gives each job of list its steps (srun's, "ID.N"), from one GET
 * /v1/steps from the least id of the list on; a server without them
 * leaves the jobs as they are. */
static void
add_steps(al_client_t *cl, json_t *list)
{
    long long min = -1;
    for (size_t i = 0; i < json_array_size(list); i++) {
        long long id = al_json_int(json_array_get(list, i), "id", 0);
        min = min < 0 || id < min ? id : min;
    }
    if (min < 0)
        return;
    char path[64];
    snprintf(path, sizeof path, "/v1/steps?from=%lld", min);
    al_http_resp_t resp;
    char *cause = NULL;
    if (al_http_request(&cl->url, "GET", path, cl->token, NULL, 0, 60000, -1,
                        &resp, &cause) != 0) {
        free(cause);
        return;
    }
    json_t *v = resp.status == 200
                    ? al_json_parse(resp.body.data ? resp.body.data : "",
                                    resp.body.len, NULL)
                    : NULL;
    al_http_resp_fini(&resp);
    json_t *steps = json_object_get(v, "steps");
    json_t *by = json_object(); /* job id -> its steps */
    for (size_t q = 0; q < json_array_size(steps); q++) {
        json_t *st = json_array_get(steps, q);
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)al_json_int(st, "job", 0));
        json_t *mine = json_object_get(by, key);
        if (mine == NULL)
            json_object_set_new(by, key, mine = json_array());
        json_array_append(mine, st);
    }
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *j = json_array_get(list, i);
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)al_json_int(j, "id", 0));
        json_t *mine = json_object_get(by, key);
        json_object_set_new(j, "steps",
                            mine ? json_incref(mine) : json_array());
        srun_step(j);
    }
    json_decref(by);
    json_decref(v);
}

static void
header(const sacct_args_t *a, const al_sl_fmt_t *f, al_buf_t *b)
{
    bool parsable = a->p1 || a->p2;
    for (size_t i = 0; i < f->n; i++) {
        const char *name = field_named(f->v[i].text)->name;
        if (parsable) {
            al_buf_printf(b, "%s%s", i ? a->delim : "", name);
        } else {
            al_sl_put(b, &f->v[i], name, false);
            al_buf_puts(b, " ");
        }
    }
    if (a->p1)
        al_buf_puts(b, a->delim);
    if (!parsable) {
        al_buf_puts(b, "\n");
        for (size_t i = 0; i < f->n; i++) {
            for (int k = 0; k < f->v[i].width; k++)
                al_buf_puts(b, "-");
            al_buf_puts(b, " ");
        }
    }
    printf("%s\n", al_buf_cstr(b));
}

/* Whether line `line` of a job (0 its own, 1 its batch step's, then its
 * steps', r) is the step `only` of -j ID.STEP ("batch", or a number). */
static bool
row_is(const row_t *r, size_t line, const char *only)
{
    bool batch = strcmp(only, "batch") == 0;
    if (line <= 1)
        return line == 1 && batch;
    return !batch && al_json_int(r->st, "step", -1) == strtoll(only, NULL, 10);
}

/* The job's lines: its own, its batch step's and its other steps' (not
 * with -X). */
static void
job_lines(const sacct_args_t *a, const al_sl_fmt_t *f, const json_t *j,
          int64_t now, al_buf_t *b)
{
    bool parsable = a->p1 || a->p2;
    const json_t *sv = json_object_get(j, "steps");
    size_t nrows = a->alloc || !ran(j) ? 1 : 2 + json_array_size(sv);
    /* -j ID.STEP: that step's line alone. */
    const char *only = al_json_str(j, "sl_only", NULL);
    for (size_t step = 0; step < nrows; step++) {
        row_t r = { j, step >= 1, now,
                    step >= 2 ? json_array_get(sv, step - 2) : NULL };
        if ((only != NULL && !row_is(&r, step, only)) ||
            (step == 1 && json_is_true(json_object_get(j, "sl_nobatch"))))
            continue;
        al_buf_clear(b);
        for (size_t k = 0; k < f->n; k++) {
            char v[4096];
            field_named(f->v[k].text)->fn(&r, v, sizeof v);
            if (parsable) {
                al_buf_printf(b, "%s%s", k ? a->delim : "", v);
            } else {
                al_sl_put(b, &f->v[k], v, true);
                al_buf_puts(b, " ");
            }
        }
        if (a->p1)
            al_buf_puts(b, a->delim);
        printf("%s\n", al_buf_cstr(b));
    }
}

int
al__sacct(int argc, char **argv)
{
    sacct_args_t a;
    memset(&a, 0, sizeof a);
    a.delim = "|";
    a.fmt = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode";
    int rc = parse_args(argc, argv, &a);
    al_sl_fmt_t f;
    if (rc >= 0 || (rc = fields_of(a.fmt, &f)) != 0)
        return rc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t from = when(a.S ? a.S : "midnight", now);
    int64_t to = a.E ? when(a.E, now) : now;
    json_t *want = a.states ? al__sl_states(a.states) : NULL;
    al_client_t cl;
    if (from < 0 || to < 0 || (a.states && want == NULL)) {
        fprintf(stderr, "sacct: error: Invalid %s\n",
                from < 0 ? "start time"
                : to < 0 ? "end time"
                         : "state");
        rc = 1;
    } else if (al__sl_connect(&cl) != 0) {
        rc = 1;
    }
    if (rc != 0) {
        al_sl_fmt_fini(&f);
        json_decref(want);
        return rc;
    }
    json_t *list = fetch(&cl, a.jobs);
    rc = list == NULL;
    if (list != NULL && !a.alloc)
        add_steps(&cl, list);
    json_t *fu = a.users ? al__sl_split(a.users) : NULL;
    json_t *fn = a.names ? al__sl_split(a.names) : NULL;
    json_t *out = json_array();
    al_buf_t b;
    al_buf_init(&b);
    if (rc == 0 && !a.noheader && !a.json)
        header(&a, &f, &b);
    for (size_t i = 0; rc == 0 && i < json_array_size(list); i++) {
        const json_t *j = json_array_get(list, i);
        int64_t sub = al_json_int(j, "submit_ms", 0),
                end = al_json_int(j, "end_ms", 0);
        if ((a.jobs == NULL && (sub > to || (end > 0 && end < from))) ||
            (fu && !al__sl_in(fu, al_json_str(j, "user", ""))) ||
            (fn && !al__sl_in(fn, al_json_str(j, "name", ""))) ||
            (want && !al__sl_in(want, al__sl_state(j))))
            continue;
        if (a.json)
            json_array_append_new(out, json_job(j, now));
        else
            job_lines(&a, &f, j, now, &b);
    }
    if (rc == 0 && a.json) {
        json_t *doc = json_pack("{s:{s:{s:s}}, s:[], s:o}", "meta", "plugin",
                                "name", "allot", "errors", "jobs", out);
        al_cli_print_json(doc);
        json_decref(doc);
    } else {
        json_decref(out);
    }
    al_buf_fini(&b);
    json_decref(fu);
    json_decref(fn);
    json_decref(want);
    json_decref(list);
    al_sl_fmt_fini(&f);
    al_client_fini(&cl);
    return rc;
}
