/*
 * scontrol.c -- `scontrol`: show job ID and show node [NAME] in Slurm's
 * Key=Value layout, hold, release, requeue and requeuehold (of a running
 * job, or an ended batch job: POST /v1/jobs/ID/requeue), update of a job
 * (TimeLimit, JobName, Partition, Dependency, Priority, Nice: POST
 * /v1/jobs/ID/update, its words read by update.c).  The other subcommands are
 * refused by name.
 *
 * May call: slurm.c (the API, the mapping).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "json.h"
#include "slurm_int.h"
#include "xmalloc.h"

static void
show_job(const json_t *j, int64_t now)
{
    char st[64], sub[32], start[32], end[32], limit[32], run[32], ex[32];
    const char *user = al_json_str(j, "user", "");
    long long uid = al__sl_uid(user);
    char *nodes = al__sl_nodelist(j);
    al__sl_time(al_json_int(j, "submit_ms", 0), "Unknown", sub, sizeof sub);
    al__sl_time(al_json_int(j, "start_ms", 0), "Unknown", start, sizeof start);
    const char *s = al_json_str(j, "state", "");
    bool ended = strcmp(s, "completed") == 0 || strcmp(s, "failed") == 0 ||
                 strcmp(s, "cancelled") == 0 || strcmp(s, "out_of_memory") == 0;
    al__sl_time(ended ? al_json_int(j, "end_ms", 0) : 0, "Unknown", end,
                sizeof end);
    al__sl_limit(j, true, limit, sizeof limit);
    al__sl_duration(al__sl_elapsed_s(j, now), true, run, sizeof run);
    al__sl_exit(j, ex, sizeof ex);
    snprintf(st, sizeof st, "%s", al__sl_state(j));
    long long cpm = al_json_int(j, "cpu_milli", 0);
    printf("JobId=%lld JobName=%s\n", (long long)al_json_int(j, "id", 0),
           al_json_str(j, "name", ""));
    printf("   UserId=%s(%lld) GroupId=%s(%lld) MCS_label=N/A\n", user,
           uid < 0 ? 0 : uid, user, uid < 0 ? 0 : uid);
    printf("   Priority=%lld Nice=%lld Account=%s QOS=normal\n",
           al__sl_priority(j), al__sl_nice(j), al_json_str(j, "queue", ""));
    /* allot's `after` (sbatch's afterok) and Slurm's other kinds. */
    const json_t *after = json_object_get(j, "after");
    const char *dep = al_json_str(j, "dependency", NULL);
    printf("   JobState=%s Reason=%s Dependency=", st, al__sl_reason(j));
    for (size_t k = 0; k < json_array_size(after); k++)
        printf("%s%lld", k == 0 ? "afterok:" : ":",
               (long long)json_integer_value(json_array_get(after, k)));
    printf("%s%s\n", json_array_size(after) > 0 && dep != NULL ? "," : "",
           dep != NULL                   ? dep
           : json_array_size(after) == 0 ? "(null)"
                                         : "");
    printf("   Requeue=1 Restarts=%lld BatchFlag=1 Reboot=0 ExitCode=%s\n",
           (long long)al_json_int(j, "restart_count", 0), ex);
    printf("   RunTime=%s TimeLimit=%s TimeMin=N/A\n", run, limit);
    printf("   SubmitTime=%s EligibleTime=%s\n", sub, sub);
    printf("   StartTime=%s EndTime=%s Deadline=N/A\n", start, end);
    printf("   Partition=%s\n", al__sl_partition(j));
    printf("   NodeList=%s\n", nodes[0] ? nodes : "(null)");
    printf("   NumNodes=%d NumCPUs=%lld NumTasks=%lld CPUs/Task=%lld\n",
           al__sl_nnodes(j), al__sl_cpus(j),
           (long long)al_json_int(j, "tasks", 1),
           cpm > 0 ? (cpm + 999) / 1000 : 1);
    long long gpus = al_json_int(j, "gpus", 0) * al_json_int(j, "tasks", 1);
    char mem[64];
    al__sl_mem(j, mem, sizeof mem);
    printf("   TRES=cpu=%lld,mem=%s,node=%d%s", al__sl_cpus(j), mem,
           al__sl_nnodes(j), gpus > 0 ? ",gres/gpu=" : "");
    if (gpus > 0)
        printf("%lld", gpus);
    printf("\n   WorkDir=%s\n", al_json_str(j, "cwd", ""));
    printf("\n");
    free(nodes);
}

static void
show_node(const json_t *n)
{
    json_t *gpus = json_object_get(n, "gpus");
    const char *s = al_json_str(n, "state", "");
    const char *st = strcmp(s, "down") == 0               ? "DOWN"
                     : strcmp(s, "draining") == 0         ? "IDLE+DRAIN"
                     : al_json_int(n, "gpus_used", 0) > 0 ? "MIXED"
                                                          : "IDLE";
    long long cpus = al_json_int(n, "cpu_milli", 0) / 1000;
    long long mem = al_json_int(n, "mem_bytes", 0) >> 20;
    printf("NodeName=%s CoresPerSocket=%lld\n", al_json_str(n, "name", ""),
           cpus);
    printf("   CPUTot=%lld\n", cpus);
    printf("   AvailableFeatures=(null)\n   ActiveFeatures=(null)\n");
    if (json_array_size(gpus) > 0)
        printf("   Gres=gpu:%zu\n", json_array_size(gpus));
    else
        printf("   Gres=(null)\n");
    printf("   NodeAddr=%s NodeHostName=%s\n", al_json_str(n, "addr", ""),
           al_json_str(n, "name", ""));
    printf("   RealMemory=%lld\n", mem);
    printf("   State=%s\n", st);
    const char *why = al_json_str(n, "drain_reason", NULL);
    if (why != NULL) /* an admin's --reason, or the GPU fault's */
        printf("   Reason=%s\n", why);
    const char *pool = al__sl_node_pool(n);
    printf("   Partitions=%s%s%s \n", AL_SLURM_PARTITION, pool ? "," : "",
           pool ? pool : "");
    printf("   CfgTRES=cpu=%lld,mem=%lldM%s", cpus, mem,
           json_array_size(gpus) > 0 ? ",gres/gpu=" : "");
    if (json_array_size(gpus) > 0)
        printf("%zu", json_array_size(gpus));
    printf("\n\n");
}

/* The message of a controller's refusal of an update, in Slurm's words
 * (said "MESSAGE for job ID", as Slurm 22.05's scontrol says it). */
static const char *
update_refusal(int status, const json_t *err)
{
    const char *code = al_json_str(err, "error", "");
    if (status == 403)
        return "Access/permission denied";
    if (status == 404)
        return "Invalid job id specified";
    if (strcmp(code, "ended") == 0)
        return "Job has already finished";
    if (strcmp(code, "not_pending") == 0)
        return "Job is no longer pending execution";
    if (strcmp(code, "dependency") == 0)
        return "Job dependency problem";
    if (strcmp(code, "circular") == 0)
        return "Circular job dependency";
    if (strcmp(code, "node_count") == 0)
        return "Node count specification invalid";
    if (strcmp(code, "not_supported") == 0)
        return "Requested operation not supported on this system";
    if (strcmp(code, "node_config") == 0)
        return "Requested node configuration is not available";
    if (strcmp(code, "held") == 0)
        return "Job is in held state, pending scheduler release";
    return NULL;
}

/* body with a relative time limit ("time_limit_add", TimeLimit=+T or
 * -T) made the job's new limit, as Slurm's scontrol reads the job's
 * limit first.  0; 1 after saying why. */
static int
update_relative(al_client_t *c, const char *w, json_t *body)
{
    json_t *add = json_object_get(body, "time_limit_add");
    if (add == NULL)
        return 0;
    long long d = json_integer_value(add);
    al_sl_id_t id;
    int st = 0;
    json_t *j = al__sl_parse_id(w, &id) ? al__sl_job(c, &id, &st) : NULL;
    if (j == NULL) {
        if (st != 0)
            fprintf(stderr, "Invalid job id specified for job %s\n", w);
        return 1;
    }
    long long cur = al_json_int(j, "time_limit", 0);
    json_decref(j);
    if (cur <= 0) {
        fprintf(stderr,
                "scontrol: error: TimeLimit increment or decrement of "
                "job %s, which has no time limit (UNLIMITED)\n",
                w);
        return 1;
    }
    if (d < 0 && -d > cur) {
        fprintf(stderr,
                "scontrol: error: TimeLimit decrement larger than current "
                "time limit (%lld > %lld)\n",
                -d / 60, cur / 60);
        return 1;
    }
    json_object_del(body, "time_limit_add");
    json_object_set_new(body, "time_limit", json_integer(cur + d));
    return 0;
}

/* POST /v1/jobs/W/update of body; 0, or 1 after saying why. */
static int
update_one(al_client_t *c, const char *w, json_t *body)
{
    if (update_relative(c, w, body) != 0)
        return 1;
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s/update", w);
    char *text = json_dumps(body, JSON_COMPACT);
    al_http_resp_t resp;
    int st = 0;
    json_t *err = NULL;
    char *cause = NULL;
    if (al_http_request(&c->url, "POST", path, c->token, text, strlen(text),
                        60000, -1, &resp, &cause) != 0) {
        fprintf(stderr, "allot: cannot reach the server at %s: %s\n", c->server,
                cause ? cause : "error");
        free(cause);
    } else {
        st = resp.status;
        if (st < 200 || st > 299)
            err = al_json_parse(resp.body.data ? resp.body.data : "",
                                resp.body.len, NULL);
        al_http_resp_fini(&resp);
    }
    int rc = st >= 200 && st <= 299 ? 0 : 1;
    if (st != 0 && rc != 0) {
        const char *slurm = update_refusal(st, err);
        fprintf(stderr, "%s for job %s\n",
                slurm ? slurm : al_json_str(err, "message", "refused"), w);
    }
    json_decref(err);
    free(text);
    return rc;
}

/* scontrol update JobId=N[,M...] KEY=VALUE... */
static int
update(int n, char **w)
{
    char *job = NULL, *cause = NULL;
    json_t *body = NULL;
    int rc = al_sl_update_parse(n, w, &job, &body, &cause);
    if (rc != 0) {
        fprintf(stderr, "scontrol: error: %s\n", cause);
        if (rc == 2)
            fprintf(stderr, "scontrol: error: Request aborted\n");
        free(cause);
        return 1;
    }
    const char *pool = al_json_str(body, "pool", "");
    if (pool[0] != '\0' && al__sl_partition_check("scontrol", pool) != 0) {
        json_decref(body);
        free(job);
        return 1;
    }
    al_client_t c;
    if (al__sl_connect(&c) != 0) {
        json_decref(body);
        free(job);
        return 1;
    }
    /* Each job of the list, as Slurm updates each; a relative limit (+T,
     * -T) takes one job, as Slurm's scontrol reads that job's limit. */
    json_t *l = al__sl_split(job);
    if (json_array_size(l) > 1 &&
        json_object_get(body, "time_limit_add") != NULL) {
        fprintf(stderr, "scontrol: error: Invalid job ID %s\n", job);
        json_array_clear(l);
        rc = 1;
    }
    for (size_t k = 0; k < json_array_size(l); k++) {
        json_t *b = json_deep_copy(body);
        rc |= update_one(&c, json_string_value(json_array_get(l, k)), b);
        json_decref(b);
    }
    json_decref(l);
    json_decref(body);
    free(job);
    al_client_fini(&c);
    return rc;
}

static int
usage(int rc)
{
    fprintf(rc ? stderr : stdout,
            "Usage: scontrol show job ID | show node [NAME] | hold ID... | "
            "release ID... | requeue ID... | update JobId=ID KEY=VALUE...\n");
    return rc;
}

/* requeue (and requeuehold) of job id, written w: Slurm's messages. */
static int
requeue(al_client_t *c, const al_sl_id_t *id, const char *w, bool hold)
{
    int st;
    json_t *j = al__sl_job(c, id, &st);
    const char *state = al_json_str(j, "state", "");
    bool waits = strcmp(state, "pending") == 0 || strcmp(state, "held") == 0;
    /* Slurm requeues only batch jobs (sbatch's, with its script), not
     * srun's or salloc's, running or ended. */
    bool batch = json_object_get(j, "script") != NULL;
    bool never = strcmp(al_json_str(json_object_get(j, "env"),
                                    "ALLOT_SLURM_NO_REQUEUE", ""),
                        "1") == 0;
    json_decref(j);
    if (j == NULL) {
        if (st != 0)
            fprintf(stderr, "Invalid job id specified for job %s\n", w);
        return 1;
    }
    /* Slurm's order: a job that may not be requeued (--no-requeue), then
     * one that is no batch job (srun's, salloc's), whatever their state,
     * then a waiting one. */
    if (never) {
        fprintf(stderr,
                "Requested operation is presently disabled for job %s\n", w);
        return 1;
    }
    if (!batch) {
        fprintf(stderr,
                "Only batch jobs are accepted or processed for job %s\n", w);
        return 1;
    }
    if (waits) {
        fprintf(stderr, "Job is pending execution for job %s\n", w);
        return 1;
    }
    st = al__sl_post(c, id, hold ? "requeue?hold=1" : "requeue");
    if (st == 409) {
        /* An array's element that has ended. */
        fprintf(stderr,
                "Requested operation is presently disabled for job %s\n", w);
        return 1;
    }
    if (st < 200 || st > 299) {
        fprintf(stderr, "Access/permission denied for job %s\n", w);
        return 1;
    }
    return 0;
}

/* hold/release/requeue of every id of argv[0..n-1] ("1,2" or "1 2"). */
static int
each(al_client_t *c, const char *verb, int n, char **ids)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        json_t *l = al__sl_split(ids[i]);
        for (size_t k = 0; k < json_array_size(l); k++) {
            const char *w = json_string_value(json_array_get(l, k));
            al_sl_id_t id;
            if (!al__sl_parse_id(w, &id)) {
                fprintf(stderr, "Invalid job id specified for job %s\n", w);
                rc = 1;
                continue;
            }
            if (strncmp(verb, "requeue", 7) == 0) {
                rc |= requeue(c, &id, w, strcmp(verb, "requeuehold") == 0);
                continue;
            }
            int st = al__sl_post(c, &id, verb);
            if (st == 404) {
                fprintf(stderr,
                        "Invalid job id specified for job %s\n"
                        "slurm_suspend error: Invalid job id specified\n",
                        w);
                rc = 1;
            } else if (st == 409) {
                fprintf(stderr,
                        "Job is no longer pending execution for job "
                        "%s\n",
                        w);
                rc = 1;
            } else if (st < 200 || st > 299) {
                fprintf(stderr, "Access/permission denied for job %s\n", w);
                rc = 1;
            }
        }
        json_decref(l);
    }
    return rc;
}

int
al__scontrol(int argc, char **argv)
{
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return usage(0);
        i++; /* -d, -o, -a: no change here */
    }
    if (i >= argc)
        return usage(1);
    const char *cmd = argv[i++];
    bool show = strcasecmp(cmd, "show") == 0;
    bool hold = strcasecmp(cmd, "hold") == 0 || strcasecmp(cmd, "uhold") == 0;
    bool rel = strcasecmp(cmd, "release") == 0;
    bool rq = strcasecmp(cmd, "requeue") == 0;
    bool rqh = strcasecmp(cmd, "requeuehold") == 0;
    if (strcasecmp(cmd, "update") == 0)
        return update(argc - i, argv + i);
    if (!show && !hold && !rel && !rq && !rqh) {
        fprintf(stderr, "scontrol: error: %s: not available on allot\n", cmd);
        return 1;
    }
    if (hold || rel || rq || rqh) {
        if (i >= argc)
            return usage(1);
        al_client_t c;
        if (al__sl_connect(&c) != 0)
            return 1;
        int rc = each(&c,
                      hold  ? "hold"
                      : rel ? "release"
                      : rq  ? "requeue"
                            : "requeuehold",
                      argc - i, argv + i);
        al_client_fini(&c);
        return rc;
    }
    if (i >= argc)
        return usage(1);
    const char *what = argv[i++];
    const char *arg = i < argc ? argv[i] : NULL;
    bool job = strncasecmp(what, "jobs", strlen(what)) == 0 && what[0];
    bool node = strncasecmp(what, "nodes", strlen(what)) == 0 && what[0];
    if (!job && !node) {
        fprintf(stderr, "scontrol: error: show %s: not available on allot\n",
                what);
        return 1;
    }
    al_client_t c;
    if (al__sl_connect(&c) != 0)
        return 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int rc = 0;
    if (job && arg != NULL) {
        al_sl_id_t id;
        int st = 404;
        json_t *j = al__sl_parse_id(arg, &id) ? al__sl_job(&c, &id, &st) : NULL;
        if (j == NULL) {
            if (st != 0)
                fprintf(stderr, "slurm_load_jobs error: Invalid job id "
                                "specified\n");
            rc = 1;
        } else {
            show_job(j, now);
        }
        json_decref(j);
    } else if (job) {
        json_t *l = al__sl_jobs(&c, "state=active");
        rc = l == NULL;
        for (size_t k = 0; k < json_array_size(l); k++)
            show_job(json_array_get(l, k), now);
        if (l != NULL && json_array_size(l) == 0)
            printf("No jobs in the system\n");
        json_decref(l);
    } else {
        json_t *l = al__sl_nodes(&c);
        rc = l == NULL;
        bool found = false;
        for (size_t k = 0; k < json_array_size(l); k++) {
            const json_t *n = json_array_get(l, k);
            if (arg == NULL || strcmp(arg, al_json_str(n, "name", "")) == 0) {
                show_node(n);
                found = true;
            }
        }
        if (l != NULL && arg != NULL && !found) {
            fprintf(stderr, "Node %s not found\n", arg);
            rc = 1;
        }
        json_decref(l);
    }
    al_client_fini(&c);
    return rc;
}
