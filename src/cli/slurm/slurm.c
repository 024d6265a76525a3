/*
 * slurm.c -- what Slurm's commands on allot share: the mapping from allot's
 * jobs and nodes (as the HTTP API gives them) to Slurm's words: states,
 * pending reasons, times, node lists, exit codes.
 *
 * May call: cli_client.c (the API), src/common.  Never the server or the
 * agent: these commands are clients of the API only.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hostlist.h"
#include "json.h"
#include "opt.h"
#include "slurm_int.h"
#include "xmalloc.h"

/* ------------------------------------------------------------------ */

int
al__sl_connect(al_client_t *c)
{
    return al_client_init(c, NULL, NULL);
}

json_t *
al__sl_jobs(al_client_t *c, const char *query)
{
    json_t *all = json_array();
    long long after = 0;
    for (;;) {
        char path[512];
        snprintf(path, sizeof path, "/v1/jobs?limit=1000&after=%lld%s%s", after,
                 query && query[0] ? "&" : "", query ? query : "");
        json_t *out = NULL;
        if (al_client_call(c, "GET", path, NULL, &out, NULL, NULL) != 0) {
            json_decref(all);
            return NULL;
        }
        json_array_extend(all, json_object_get(out, "jobs"));
        json_t *next = json_object_get(out, "next");
        after = json_is_integer(next) ? (long long)json_integer_value(next) : 0;
        json_decref(out);
        if (after <= 0)
            return all;
    }
}

/* The API's path of a job: /v1/jobs/ID or /v1/jobs/ID_INDEX, then tail. */
static void
job_path(char *buf, size_t len, const al_sl_id_t *id, const char *tail)
{
    if (id->index >= 0)
        snprintf(buf, len, "/v1/jobs/%lld_%lld%s", id->id, id->index, tail);
    else
        snprintf(buf, len, "/v1/jobs/%lld%s", id->id, tail);
}

json_t *
al__sl_job(al_client_t *c, const al_sl_id_t *id, int *status)
{
    char path[96];
    job_path(path, sizeof path, id, "");
    al_http_resp_t resp;
    char *cause = NULL;
    *status = 0;
    if (al_http_request(&c->url, "GET", path, c->token, NULL, 0, 60000, -1,
                        &resp, &cause) != 0) {
        fprintf(stderr, "allot: cannot reach the server at %s: %s\n", c->server,
                cause ? cause : "error");
        free(cause);
        return NULL;
    }
    *status = resp.status;
    json_t *v = NULL;
    if (resp.status == 200)
        v = al_json_parse(resp.body.data ? resp.body.data : "", resp.body.len,
                          NULL);
    al_http_resp_fini(&resp);
    return v;
}

int
al__sl_post(al_client_t *c, const al_sl_id_t *id, const char *verb)
{
    char path[128], tail[32];
    snprintf(tail, sizeof tail, "/%s", verb);
    job_path(path, sizeof path, id, tail);
    al_http_resp_t resp;
    char *cause = NULL;
    if (al_http_request(&c->url, "POST", path, c->token, "{}", 2, 60000, -1,
                        &resp, &cause) != 0) {
        fprintf(stderr, "allot: cannot reach the server at %s: %s\n", c->server,
                cause ? cause : "error");
        free(cause);
        return 0;
    }
    int st = resp.status;
    al_http_resp_fini(&resp);
    return st;
}

json_t *
al__sl_nodes(al_client_t *c)
{
    json_t *out = NULL;
    if (al_client_call(c, "GET", "/v1/nodes", NULL, &out, NULL, NULL) != 0)
        return NULL;
    json_t *nodes = json_incref(json_object_get(out, "nodes"));
    json_decref(out);
    return nodes != NULL ? nodes : json_array();
}

static bool
timed_out(const json_t *job)
{
    return strncmp(al_json_str(job, "reason", ""), "time limit", 10) == 0;
}

const char *
al__sl_state(const json_t *job)
{
    const char *s = al_json_str(job, "state", "");
    if (strcmp(s, "pending") == 0 || strcmp(s, "held") == 0)
        return "PENDING";
    if (strcmp(s, "running") == 0)
        return "RUNNING";
    if (strcmp(s, "completed") == 0)
        return "COMPLETED";
    if (strcmp(s, "cancelled") == 0)
        return "CANCELLED";
    if (strcmp(s, "failed") == 0)
        return timed_out(job) ? "TIMEOUT" : "FAILED";
    if (strcmp(s, "out_of_memory") == 0)
        return "OUT_OF_MEMORY";
    return "UNKNOWN";
}

const char *
al__sl_state_short(const json_t *job)
{
    static const struct {
        const char *lng, *shrt;
    } m[] = { { "PENDING", "PD" },       { "RUNNING", "R" },
              { "COMPLETED", "CD" },     { "CANCELLED", "CA" },
              { "TIMEOUT", "TO" },       { "FAILED", "F" },
              { "OUT_OF_MEMORY", "OOM" } };
    const char *l = al__sl_state(job);
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (strcmp(m[i].lng, l) == 0)
            return m[i].shrt;
    return "??";
}

void
al__sl_state_by(const json_t *job, char *buf, size_t len)
{
    const char *st = al__sl_state(job);
    const char *r = al_json_str(job, "reason", "");
    if (strcmp(st, "CANCELLED") == 0 && strncmp(r, "cancelled by ", 13) == 0) {
        long long uid = al__sl_uid(r + 13);
        if (uid >= 0) {
            snprintf(buf, len, "CANCELLED by %lld", uid);
            return;
        }
    }
    snprintf(buf, len, "%s", st);
}

/* allot's reasons (src/core/reason.c's texts) in Slurm's words. */
static const struct {
    const char *prefix, *contains, *slurm;
} reasons[] = {
    { "held by user", NULL, "JobHeldUser" },
    { "waiting for dependencies", NULL, "Dependency" },
    { "a dependency failed", NULL, "DependencyNeverSatisfied" },
    /* The controller's own texts for dependencies, Slurm's word inside. */
    { "waiting for its dependencies", NULL, "Dependency" },
    /* An array's elements that wait for their turn. */
    { "waiting for its turn in array", "at most", "JobArrayTaskLimit" },
    { "waiting for its turn in array", NULL, "Priority" },
    { "a dependency can never be satisfied", NULL, "DependencyNeverSatisfied" },
    { "queue ", " at gpu limit", "QOSGrpGRES" },
    { "queue ", " at cpu limit", "QOSGrpCpuLimit" },
    { "queue ", " at mem limit", "QOSGrpMemLimit" },
    { "queue ", "GPU-model limit", "QOSGrpGRES" },
    { "not enough free GPUs", NULL, "Resources" },
    { "no node has room", NULL, "Resources" },
    { "no topology domain", NULL, "Resources" },
    { "waiting for reservation", NULL, "Resources" },
    { "would delay the reservation", NULL, "Priority" },
    { "behind job", NULL, "Priority" },
    { "gave way to job", NULL, "Priority" },
    { "none", NULL, "None" },
};

const char *
al__sl_reason(const json_t *job)
{
    const char *st = al_json_str(job, "state", "");
    if (strcmp(st, "held") == 0)
        return "JobHeldUser";
    const char *r = al_json_str(job, "reason", NULL);
    /* A job whose dependency can never be met fails at once (allot's
     * default, Slurm's kill_invalid_depend); squeue -j and sacct still say
     * why. */
    if (strcmp(st, "failed") == 0 && r != NULL &&
        strstr(r, "(DependencyNeverSatisfied)") != NULL)
        return "DependencyNeverSatisfied";
    if (strcmp(st, "pending") != 0)
        return "None";
    if (r == NULL || r[0] == '\0')
        return "None";
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (strncmp(r, reasons[i].prefix, strlen(reasons[i].prefix)) == 0 &&
            (reasons[i].contains == NULL ||
             strstr(r, reasons[i].contains) != NULL))
            return reasons[i].slurm;
    return r;
}

/* The job's nodes, once each, in the order of its tasks. */
static size_t
job_nodes(const json_t *job, const char **names, size_t max)
{
    size_t n = 0;
    json_t *pl = json_object_get(job, "placement");
    for (size_t i = 0; i < json_array_size(pl); i++) {
        const char *node = al_json_str(json_array_get(pl, i), "node", NULL);
        if (node == NULL)
            continue;
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(names[k], node) == 0;
        if (!seen && n < max)
            names[n++] = node;
    }
    return n;
}

char *
al__sl_nodelist(const json_t *job)
{
    const char *names[4096];
    size_t n = job_nodes(job, names, 4096);
    return al_hostlist_fold(names, n);
}

int
al__sl_nnodes(const json_t *job)
{
    const char *names[4096];
    size_t n = job_nodes(job, names, 4096);
    if (n == 0) /* not placed yet: as NumNodes= set it, else 1 */
        return al_json_int(job, "num_nodes", 0) > 0
                   ? (int)al_json_int(job, "num_nodes", 0)
                   : 1;
    return (int)n;
}

long long
al__sl_priority(const json_t *job)
{
    if (strcmp(al_json_str(job, "state", ""), "held") == 0)
        return 0;
    const json_t *fixed = json_object_get(job, "priority_fixed");
    if (json_is_integer(fixed))
        return (long long)json_integer_value(fixed);
    long long p = (long long)al_json_int(job, "priority", 0) - al__sl_nice(job);
    return p < 1 ? 1 : p;
}

long long
al__sl_nice(const json_t *job)
{
    return (long long)al_json_int(job, "nice", 0);
}

int64_t
al__sl_elapsed_s(const json_t *job, int64_t now_ms)
{
    int64_t start = al_json_int(job, "start_ms", 0);
    int64_t end = al_json_int(job, "end_ms", 0);
    if (start <= 0)
        return 0;
    if (end <= 0 || strcmp(al_json_str(job, "state", ""), "running") == 0)
        end = now_ms;
    /* In whole seconds, as Start and End show them (End minus Start). */
    return end / 1000 > start / 1000 ? end / 1000 - start / 1000 : 0;
}

void
al__sl_duration(int64_t secs, bool long_form, char *buf, size_t len)
{
    if (secs < 0)
        secs = 0;
    long long d = secs / 86400, h = secs / 3600 % 24, m = secs / 60 % 60,
              s = secs % 60;
    if (d > 0)
        snprintf(buf, len, "%lld-%02lld:%02lld:%02lld", d, h, m, s);
    else if (long_form)
        snprintf(buf, len, "%02lld:%02lld:%02lld", h, m, s);
    else if (h > 0)
        snprintf(buf, len, "%lld:%02lld:%02lld", h, m, s);
    else
        snprintf(buf, len, "%lld:%02lld", m, s);
}

void
al__sl_limit(const json_t *job, bool long_form, char *buf, size_t len)
{
    int64_t t = al_json_int(job, "time_limit", 0);
    if (t <= 0)
        snprintf(buf, len, "UNLIMITED");
    else
        al__sl_duration(t, long_form, buf, len);
}

void
al__sl_time(int64_t ms, const char *none_word, char *buf, size_t len)
{
    if (ms <= 0) {
        snprintf(buf, len, "%s", none_word);
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

long long
al__sl_cpus(const json_t *job)
{
    long long tasks = al_json_int(job, "tasks", 1);
    long long milli = al_json_int(job, "cpu_milli", 0);
    long long per = (milli + 999) / 1000;
    return tasks * (per > 0 ? per : 1);
}

void
al__sl_mem(const json_t *job, char *buf, size_t len)
{
    long long b = al_json_int(job, "mem_bytes", 0);
    if (b <= 0)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, "%lldM", (b + (1 << 20) - 1) >> 20);
}

void
al__sl_exit(const json_t *job, char *buf, size_t len)
{
    long long code = al_json_int(job, "exit_code", 0);
    long long sig = al_json_int(job, "signal", 0);
    snprintf(buf, len, "%lld:%lld", code, sig);
}

long long
al__sl_uid(const char *user)
{
    struct passwd *pw = getpwnam(user);
    return pw != NULL ? (long long)pw->pw_uid : -1;
}

/* A positive decimal of at most 18 digits at *p; advances *p. */
static bool
positive(const char **p, long long *v)
{
    const char *s = *p;
    *v = 0;
    while (**p >= '0' && **p <= '9' && *p - s < 18)
        *v = *v * 10 + (*(*p)++ - '0');
    return *p > s && !(**p >= '0' && **p <= '9');
}

bool
al__sl_parse_id(const char *s, al_sl_id_t *id)
{
    const char *p = s;
    al_sl_id_t r = { 0, -1 };
    if (!positive(&p, &r.id) || r.id == 0)
        return false;
    if (*p == '_') {
        p++;
        if (!positive(&p, &r.index))
            return false;
    }
    if (*p != '\0' && strcmp(p, ".batch") != 0)
        return false;
    *id = r;
    return true;
}

json_t *
al__sl_split(const char *s)
{
    json_t *a = json_array();
    const char *p = s;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        if (n > 0)
            json_array_append_new(a, json_stringn_nocheck(p, n));
        p += n;
        if (*p == ',')
            p++;
    }
    return a;
}

bool
al__sl_in(const json_t *list, const char *s)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (strcmp(json_string_value(json_array_get(list, i)), s) == 0)
            return true;
    return false;
}

json_t *
al__sl_states(const char *s)
{
    static const struct {
        const char *lng, *shrt;
    } m[] = { { "PENDING", "PD" },        { "RUNNING", "R" },
              { "COMPLETED", "CD" },      { "CANCELLED", "CA" },
              { "TIMEOUT", "TO" },        { "FAILED", "F" },
              { "SUSPENDED", "S" },       { "COMPLETING", "CG" },
              { "PREEMPTED", "PR" },      { "NODE_FAIL", "NF" },
              { "OUT_OF_MEMORY", "OOM" }, { "REQUEUED", "RQ" } };
    json_t *in = al__sl_split(s), *out = json_array();
    for (size_t i = 0; i < json_array_size(in); i++) {
        const char *w = json_string_value(json_array_get(in, i));
        bool found = false;
        if (strcasecmp(w, "all") == 0) {
            for (size_t k = 0; k < sizeof m / sizeof m[0]; k++)
                json_array_append_new(out, json_string(m[k].lng));
            found = true;
        }
        for (size_t k = 0; k < sizeof m / sizeof m[0] && !found; k++)
            if (strcasecmp(w, m[k].lng) == 0 || strcasecmp(w, m[k].shrt) == 0) {
                json_array_append_new(out, json_string(m[k].lng));
                found = true;
            }
        if (!found) {
            json_decref(in);
            json_decref(out);
            return NULL;
        }
    }
    json_decref(in);
    return out;
}

const char *
al__sl_partition(const json_t *job)
{
    const char *pool = al_json_str(job, "pool", NULL);
    return pool != NULL && pool[0] != '\0' ? pool : AL_SLURM_PARTITION;
}

const char *
al__sl_node_pool(const json_t *node)
{
    const char *pool = al_json_str(node, "pool", NULL);
    return pool != NULL && pool[0] != '\0' ? pool : NULL;
}

int
al__sl_partition_check(const char *prog, const char *part)
{
    if (part == NULL || strcmp(part, AL_SLURM_PARTITION) == 0)
        return 0;
    al_client_t c;
    if (al__sl_connect(&c) != 0)
        return -1;
    json_t *nodes = al__sl_nodes(&c);
    bool known = false;
    for (size_t i = 0; i < json_array_size(nodes) && !known; i++) {
        const char *pool = al__sl_node_pool(json_array_get(nodes, i));
        known = pool != NULL && strcmp(pool, part) == 0;
    }
    json_decref(nodes);
    al_client_fini(&c);
    if (known)
        return 0;
    const char *failed =
        strcmp(prog, "sbatch") == 0   ? "Batch job submission failed"
        : strcmp(prog, "salloc") == 0 ? "Job submit/allocate failed"
                                      : "Unable to allocate resources";
    fprintf(stderr,
            "%s: error: invalid partition specified: %s\n"
            "%s: error: %s: Invalid partition name specified\n",
            prog, part, prog, failed);
    return 1;
}

const char *
al__sl_features(const char *c, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *p = c; *p != '\0'; p++) {
        if (strchr("|[]*()", *p) != NULL || n + 1 >= len)
            return NULL;
        buf[n++] = *p == '&' ? ',' : *p;
    }
    buf[n] = '\0';
    return n > 0 ? buf : NULL;
}

void
al__sl_jobid(const json_t *job, char *buf, size_t len)
{
    long long arr = al_json_int(job, "array_job_id", 0);
    const char *fold = al_json_str(job, "sl_fold", NULL);
    if (arr > 0 && fold != NULL)
        snprintf(buf, len, "%lld_[%s]", arr, fold);
    else if (arr > 0)
        snprintf(buf, len, "%lld_%lld", arr,
                 (long long)al_json_int(job, "array_index", 0));
    else
        snprintf(buf, len, "%lld", (long long)al_json_int(job, "id", 0));
}

/* Appends array p's elements (count of them, ids p+1..p+count) to out;
 * false when the server could not be asked. */
static bool
elements(al_client_t *c, long long p, long long count, json_t *out)
{
    long long after = p;
    while (after < p + count) {
        char path[160];
        long long left = p + count - after;
        snprintf(path, sizeof path, "/v1/jobs?expand=1&after=%lld&limit=%lld",
                 after, left < 1000 ? left : 1000);
        json_t *res = NULL;
        if (al_client_call(c, "GET", path, NULL, &res, NULL, NULL) != 0)
            return false;
        json_t *jobs = json_object_get(res, "jobs");
        for (size_t i = 0; i < json_array_size(jobs); i++) {
            json_t *j = json_array_get(jobs, i);
            if (al_json_int(j, "array_job_id", 0) == p)
                json_array_append(out, j);
        }
        json_t *next = json_object_get(res, "next");
        after = json_is_integer(next) ? (long long)json_integer_value(next)
                                      : p + count;
        json_decref(res);
    }
    return true;
}

json_t *
al__sl_expand(al_client_t *c, json_t *list)
{
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *j = json_array_get(list, i);
        json_t *arr = json_object_get(j, "array");
        long long count = al_json_int(arr, "count", 0);
        if (arr == NULL || count <= 0)
            json_array_append(out, j);
        else if (!elements(c, al_json_int(j, "id", 0), count, out)) {
            json_decref(out);
            json_decref(list);
            return NULL;
        }
    }
    json_decref(list);
    return out;
}
