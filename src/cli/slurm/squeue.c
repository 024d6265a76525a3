/*
 * squeue.c -- `squeue`: the active jobs in Slurm's layouts (the default,
 * -l, --start, -o "%.18i ...", -O "JobID:20,..."), with its filters.
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

typedef void (*value_fn)(const json_t *job, int64_t now, char *buf, size_t len);

static void
v_id(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    al__sl_jobid(j, b, n);
}
static void
v_array_id(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    long long arr = al_json_int(j, "array_job_id", 0);
    snprintf(b, n, "%lld", arr > 0 ? arr : (long long)al_json_int(j, "id", 0));
}
static void
v_array_index(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    const char *fold = al_json_str(j, "sl_fold", NULL);
    if (al_json_int(j, "array_job_id", 0) <= 0)
        snprintf(b, n, "N/A");
    else if (fold != NULL)
        snprintf(b, n, "%s", fold);
    else
        snprintf(b, n, "%lld", (long long)al_json_int(j, "array_index", 0));
}
static void
v_name(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%s", al_json_str(j, "name", ""));
}
static void
v_user(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%s", al_json_str(j, "user", ""));
}
static void
v_st(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%s", al__sl_state_short(j));
}
static void
v_state(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%s", al__sl_state(j));
}
static void
v_time(const json_t *j, int64_t now, char *b, size_t n)
{
    al__sl_duration(al__sl_elapsed_s(j, now), false, b, n);
}
static void
v_limit(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    al__sl_limit(j, false, b, n);
}
static void
v_nodes(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%d", al__sl_nnodes(j));
}
static void
v_priority(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%lld", al__sl_priority(j));
}
static void
v_nice(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%lld", al__sl_nice(j));
}
static void
v_nodelist(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    char *l = al__sl_nodelist(j);
    snprintf(b, n, "%s", l);
    free(l);
}
static void
v_reason(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%s", al__sl_reason(j));
}
static void
v_reasonlist(const json_t *j, int64_t now, char *b, size_t n)
{
    if (strcmp(al__sl_state(j), "PENDING") == 0)
        snprintf(b, n, "(%s)", al__sl_reason(j));
    else
        v_nodelist(j, now, b, n);
}
static void
v_part(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%s", al__sl_partition(j));
}
static void
v_account(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%s", al_json_str(j, "queue", ""));
}
static void
v_cpus(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    snprintf(b, n, "%lld", al__sl_cpus(j));
}
static void
v_tres(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    long long g = al_json_int(j, "gpus", 0) * al_json_int(j, "tasks", 1) /
                  al__sl_nnodes(j);
    if (g > 0)
        snprintf(b, n, "gres:gpu:%lld", g);
    else
        snprintf(b, n, "N/A");
}
static void
v_submit(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    al__sl_time(al_json_int(j, "submit_ms", 0), "N/A", b, n);
}
static void
v_start(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    al__sl_time(al_json_int(j, "start_ms", 0), "N/A", b, n);
}
static void
v_end(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    int64_t end = al_json_int(j, "end_ms", 0);
    int64_t start = al_json_int(j, "start_ms", 0);
    int64_t lim = al_json_int(j, "time_limit", 0);
    if (end <= 0 && start > 0 && lim > 0)
        end = start + lim * 1000;
    al__sl_time(end, "N/A", b, n);
}
static void
v_sched(const json_t *j, int64_t now, char *b, size_t n)
{
    (void)now;
    (void)j;
    snprintf(b, n, "(null)");
}

/* squeue's fields: the letter of -o, the name of -O, the header. */
static const struct field {
    char letter;
    const char *name, *header;
    value_fn fn;
} fields[] = {
    { 'i', "JobID", "JOBID", v_id },
    { 'A', "ArrayJobID", "ARRAY_JOB_ID", v_array_id },
    { 'K', "ArrayTaskID", "ARRAY_TASK_ID", v_array_index },
    { 'j', "Name", "NAME", v_name },
    { 'u', "UserName", "USER", v_user },
    { 't', "StateCompact", "ST", v_st },
    { 'T', "State", "STATE", v_state },
    { 'M', "TimeUsed", "TIME", v_time },
    { 'l', "TimeLimit", "TIME_LIMIT", v_limit },
    { 'D', "NumNodes", "NODES", v_nodes },
    { 'R', "ReasonList", "NODELIST(REASON)", v_reasonlist },
    { 'N', "NodeList", "NODELIST", v_nodelist },
    { 'r', "Reason", "REASON", v_reason },
    { 'P', "Partition", "PARTITION", v_part },
    { 'a', "Account", "ACCOUNT", v_account },
    { 'C', "NumCPUs", "CPUS", v_cpus },
    { 'b', "tres-per-node", "TRES_PER_NODE", v_tres },
    { 'V', "SubmitTime", "SUBMIT_TIME", v_submit },
    { 'S', "StartTime", "START_TIME", v_start },
    { 'e', "EndTime", "END_TIME", v_end },
    { 'Y', "SchedNodes", "SCHEDNODES", v_sched },
    { 'Q', "PriorityLong", "PRIORITY", v_priority },
    { 'y', "Nice", "NICE", v_nice },
};

static const struct field *
field_of(const al_sl_item_t *it)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (it->field == 'F' ? strcasecmp(it->text, fields[i].name) == 0
                             : it->field == fields[i].letter)
            return &fields[i];
    return NULL;
}

/* One line: the header (job NULL) or a job's. */
static void
line(const al_sl_fmt_t *f, const json_t *job, int64_t now, bool named)
{
    al_buf_t b;
    al_buf_init(&b);
    for (size_t i = 0; i < f->n; i++) {
        const al_sl_item_t *it = &f->v[i];
        if (it->field == 0) {
            al_buf_puts(&b, it->text);
            continue;
        }
        const struct field *fd = field_of(it);
        char v[4096];
        if (fd == NULL)
            v[0] = '\0';
        else if (job == NULL)
            snprintf(v, sizeof v, "%s", fd->header);
        else
            fd->fn(job, now, v, sizeof v);
        al_sl_item_t w = *it;
        if (named && !it->given)
            w.width = 20;
        al_sl_put(&b, &w, v, false);
    }
    /* -O pads every field, the last one too, as Slurm's lines end. */
    printf("%s\n", al_buf_cstr(&b));
    al_buf_fini(&b);
}

enum { OPT_ME = 256, OPT_START };

static const struct option longopts[] = {
    { "noheader", no_argument, NULL, 'h' },
    { "format", required_argument, NULL, 'o' },
    { "Format", required_argument, NULL, 'O' },
    { "user", required_argument, NULL, 'u' },
    { "me", no_argument, NULL, OPT_ME },
    { "jobs", required_argument, NULL, 'j' },
    { "states", required_argument, NULL, 't' },
    { "name", required_argument, NULL, 'n' },
    { "partition", required_argument, NULL, 'p' },
    { "account", required_argument, NULL, 'A' },
    { "array", no_argument, NULL, 'r' },
    { "start", no_argument, NULL, OPT_START },
    { "long", no_argument, NULL, 'l' },
    { "all", no_argument, NULL, 'a' },
    { "help", no_argument, NULL, 'H' },
    { NULL, 0, NULL, 0 },
};

static int
usage(int rc)
{
    fprintf(rc ? stderr : stdout,
            "Usage: squeue [-h] [-l] [--start] [-o FORMAT | -O FIELDS] "
            "[-u USERS | --me]\n"
            "              [-j JOBS] [-t STATES] [-n NAMES] [-p PARTITIONS] "
            "[-A ACCOUNTS] [-r]\n"
            "allot's squeue: docs/slurm.md lists what differs from "
            "Slurm's.\n");
    return rc;
}

static int
cmp_jobs(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    bool px = strcmp(al__sl_state(x), "PENDING") == 0;
    bool py = strcmp(al__sl_state(y), "PENDING") == 0;
    if (px != py)
        return px ? -1 : 1;
    long long ix = al_json_int(x, "id", 0), iy = al_json_int(y, "id", 0);
    return ix < iy ? -1 : ix > iy;
}

typedef struct sq_args {
    bool noheader, lng, start, me;
    bool array; /* -r: an array's pending elements one by one */
    const char *fmt, *Fmt, *users, *jobs, *states, *names, *parts, *accts;
} sq_args_t;

/* The options into *a: -1, or the exit status (usage, --help). */
static int
parse_args(int argc, char **argv, sq_args_t *a)
{
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:O:u:j:t:n:p:A:rla", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 'h':
            a->noheader = true;
            break;
        case 'o':
            a->fmt = optarg;
            break;
        case 'O':
            a->Fmt = optarg;
            break;
        case 'u':
            a->users = optarg;
            break;
        case OPT_ME:
            a->me = true;
            break;
        case 'j':
            a->jobs = optarg;
            break;
        case 't':
            a->states = optarg;
            break;
        case 'n':
            a->names = optarg;
            break;
        case 'p':
            a->parts = optarg;
            break;
        case 'A':
            a->accts = optarg;
            break;
        case OPT_START:
            a->start = true;
            break;
        case 'l':
            a->lng = true;
            break;
        case 'r':
            a->array = true;
            break;
        case 'a':
            break; /* no hidden partitions */
        case 'H':
            return usage(0);
        default:
            fprintf(stderr, "Try \"squeue --help\" for more information\n");
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "squeue: error: Unrecognized option: %s\n",
                argv[optind]);
        return usage(1);
    }
    if (a->fmt == NULL && a->Fmt == NULL)
        a->fmt = a->start ? "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %.20Y %R"
                 : a->lng ? "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
                          : "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
    return -1;
}

/* The format of -o or -O into *f; 0, or 1 after saying why. */
static int
format_of(const sq_args_t *a, al_sl_fmt_t *f)
{
    const char *spec = a->Fmt != NULL ? a->Fmt : a->fmt;
    if (a->Fmt != NULL ? al_sl_fmt_named(a->Fmt, ':', f) != 0
                       : al_sl_fmt_percent(a->fmt, f) != 0) {
        fprintf(stderr, "squeue: error: Invalid job format specification: %s\n",
                spec);
        return 1;
    }
    for (size_t i = 0; a->Fmt != NULL && i < f->n; i++)
        if (field_of(&f->v[i]) == NULL) {
            fprintf(stderr,
                    "squeue: error: Invalid job format specification: %s\n",
                    f->v[i].text);
            al_sl_fmt_fini(f);
            return 1;
        }
    return 0;
}

/* The jobs of -j, each asked for; NULL after saying why. */
static json_t *
fetch_ids(al_client_t *cl, const char *jobs)
{
    json_t *list = json_array();
    json_t *ids = al__sl_split(jobs);
    size_t n = json_array_size(ids);
    for (size_t i = 0; i < n && list != NULL; i++) {
        al_sl_id_t id;
        int st = 0;
        const char *w = json_string_value(json_array_get(ids, i));
        json_t *j = NULL;
        if (!al__sl_parse_id(w, &id))
            fprintf(stderr, "squeue: error: Invalid job id: %s\n", w);
        else
            j = al__sl_job(cl, &id, &st);
        if (j != NULL) {
            json_array_append_new(list, j);
            continue;
        }
        if (st == 404 && n > 1)
            continue; /* one of several: left out, as Slurm does */
        if (st == 404)
            fprintf(stderr,
                    "slurm_load_jobs error: Invalid job id specified\n");
        json_decref(list);
        list = NULL;
    }
    json_decref(ids);
    return list != NULL ? al__sl_expand(cl, list) : NULL;
}

/* The jobs to look at: -j's, or every active one (every one when -t asks
 * for ended states). */
static json_t *
fetch(al_client_t *cl, const sq_args_t *a, const json_t *want)
{
    if (a->jobs != NULL)
        return fetch_ids(cl, a->jobs);
    bool ended = false;
    for (size_t i = 0; i < json_array_size(want); i++) {
        const char *s = json_string_value(json_array_get(want, i));
        ended =
            ended || (strcmp(s, "PENDING") != 0 && strcmp(s, "RUNNING") != 0);
    }
    /* spec=0: no job's command and environment, which squeue never
     * shows (most of a listing's bytes: sbatch exports the environment). */
    return al__sl_jobs(cl, ended ? "expand=1&spec=0"
                                 : "state=active&expand=1&spec=0");
}

/* The filters of the command line, as lists (NULL: not given). */
typedef struct filters {
    json_t *users, *names, *parts, *accts, *states;
    char *self;
} filters_t;

static bool
shown(const sq_args_t *a, const filters_t *f, const json_t *j)
{
    const char *st = al__sl_state(j);
    bool active = strcmp(st, "PENDING") == 0 || strcmp(st, "RUNNING") == 0;
    const char *user = al_json_str(j, "user", "");
    if (f->states != NULL ? !al__sl_in(f->states, st)
                          : (!active && a->jobs == NULL))
        return false;
    return !((f->users && !al__sl_in(f->users, user)) ||
             (f->self && strcmp(f->self, user) != 0) ||
             (f->names && !al__sl_in(f->names, al_json_str(j, "name", ""))) ||
             (f->parts && !al__sl_in(f->parts, al__sl_partition(j))) ||
             (f->accts && !al__sl_in(f->accts, al_json_str(j, "queue", ""))) ||
             (a->start && strcmp(st, "PENDING") != 0));
}

static void
print(const sq_args_t *a, const al_sl_fmt_t *f, json_t **jobs, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (a->lng && a->Fmt == NULL) {
        char d[64];
        time_t t = ts.tv_sec;
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(d, sizeof d, "%a %b %e %H:%M:%S %Y", &tm);
        printf("%s\n", d);
    }
    if (!a->noheader)
        line(f, NULL, now, a->Fmt != NULL);
    for (size_t i = 0; i < n; i++)
        line(f, jobs[i], now, a->Fmt != NULL);
}

/* Folds each run of an array's pending elements into one row, as squeue
 * shows them without -r: "120_[4-9,12]" (a copy kept in owned, its
 * indexes "4-9,12" in "sl_fold"). */
static size_t
fold(json_t **jobs, size_t n, json_t *owned)
{
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        json_t *j = jobs[i];
        long long arr = al_json_int(j, "array_job_id", 0);
        size_t k = i + 1;
        if (arr > 0 && strcmp(al__sl_state(j), "PENDING") == 0)
            while (k < n && al_json_int(jobs[k], "array_job_id", 0) == arr &&
                   strcmp(al__sl_state(jobs[k]), "PENDING") == 0)
                k++;
        if (k - i > 1) {
            al_buf_t b = AL_BUF_INIT;
            for (size_t x = i; x < k;) {
                long long lo = al_json_int(jobs[x], "array_index", 0), hi = lo;
                size_t y = x + 1;
                while (y < k &&
                       al_json_int(jobs[y], "array_index", 0) == hi + 1)
                    hi = al_json_int(jobs[y++], "array_index", 0);
                al_buf_printf(&b, x > i ? ",%lld" : "%lld", lo);
                if (hi > lo)
                    al_buf_printf(&b, "-%lld", hi);
                x = y;
            }
            j = json_deep_copy(j);
            json_object_set_new(j, "sl_fold", json_string(al_buf_cstr(&b)));
            json_array_append_new(owned, j);
            al_buf_fini(&b);
        }
        jobs[out++] = j;
        i = k;
    }
    return out;
}

int
al__squeue(int argc, char **argv)
{
    sq_args_t a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    al_sl_fmt_t f;
    if (rc >= 0 || (rc = format_of(&a, &f)) != 0)
        return rc;
    filters_t fl;
    memset(&fl, 0, sizeof fl);
    al_client_t cl;
    if (a.states != NULL && (fl.states = al__sl_states(a.states)) == NULL) {
        fprintf(stderr, "squeue: error: Invalid job state specified: %s\n",
                a.states);
        rc = 1;
    } else if (al__sl_connect(&cl) != 0) {
        rc = 1;
    }
    if (rc != 0) {
        al_sl_fmt_fini(&f);
        json_decref(fl.states);
        return rc;
    }
    if (a.me) {
        json_t *who = NULL;
        if (al_client_call(&cl, "GET", "/v1/whoami", NULL, &who, NULL, NULL) ==
            0)
            fl.self = al_xstrdup(al_json_str(who, "user", ""));
        json_decref(who);
    }
    fl.users = a.users ? al__sl_split(a.users) : NULL;
    fl.names = a.names ? al__sl_split(a.names) : NULL;
    fl.parts = a.parts ? al__sl_split(a.parts) : NULL;
    fl.accts = a.accts ? al__sl_split(a.accts) : NULL;
    json_t *list = fetch(&cl, &a, fl.states);
    rc = list == NULL;
    size_t n = 0, total = json_array_size(list);
    /* An array of pointers to the jobs, sorted: the element is a pointer. */
    // NOLINTNEXTLINE(bugprone-sizeof-expression)
    json_t **jobs = al_xcalloc(total + 1, sizeof(json_t *));
    for (size_t i = 0; i < total; i++)
        if (shown(&a, &fl, json_array_get(list, i)))
            jobs[n++] = json_array_get(list, i);
    // NOLINTNEXTLINE(bugprone-sizeof-expression)
    qsort(jobs, n, sizeof(json_t *), cmp_jobs);
    json_t *owned = json_array();
    if (!a.array)
        n = fold(jobs, n, owned);
    if (rc == 0)
        print(&a, &f, jobs, n);
    json_decref(owned);
    free(jobs);
    free(fl.self);
    json_decref(fl.users);
    json_decref(fl.names);
    json_decref(fl.parts);
    json_decref(fl.accts);
    json_decref(fl.states);
    json_decref(list);
    al_sl_fmt_fini(&f);
    al_client_fini(&cl);
    return rc;
}
