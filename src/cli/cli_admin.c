/* cli_admin.c -- `allot queue set|delete` and `allot node drain|resume`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_client.h"
#include "json.h"

typedef struct queue_args {
    const char *parent, *deserved, *limit, *weight, *max_build, *idle_timeout,
        *server, *token;
    /* Members: the whole list, or names added to the queue's. */
    const char *members, *add_member;
    const char *min_runtime;
    int64_t priority, idle_util;
    bool json, help;
} queue_args_t;

#define Q(f) offsetof(queue_args_t, f)

static const al_opt_t queue_opts[] = {
    { .name = "--parent",
      .kind = AL_OPT_STR,
      .off = Q(parent),
      .arg = "P",
      .help = "the parent queue" },
    { .name = "--priority",
      .kind = AL_OPT_INT,
      .off = Q(priority),
      .min = -1000000,
      .max = 1000000,
      .arg = "N",
      .help = "higher goes first (default 0)" },
    { .name = "--deserved",
      .kind = AL_OPT_STR,
      .off = Q(deserved),
      .arg = "gpu=N,cpu=N,mem=SIZE",
      .help = "the guaranteed quota; gpu.MODEL=N for one GPU model "
              "(gpu.H100-80GB=8)",
      .flags = AL_OPT_BRIEF },
    { .name = "--limit",
      .kind = AL_OPT_STR,
      .off = Q(limit),
      .arg = "gpu=N,cpu=N,mem=SIZE",
      .help = "the most it may use (-1: no limit); gpu.MODEL=N for one GPU "
              "model",
      .flags = AL_OPT_BRIEF },
    { .name = "--weight",
      .kind = AL_OPT_STR,
      .off = Q(weight),
      .arg = "gpu=W,...",
      .help = "its share of what is left over" },
    { .name = "--max-build-gpus",
      .kind = AL_OPT_STR,
      .off = Q(max_build),
      .arg = "N",
      .help = "the most GPUs its build jobs may hold together (-1: no cap)" },
    { .name = "--idle-timeout",
      .kind = AL_OPT_STR,
      .off = Q(idle_timeout),
      .arg = "TIME",
      .help = "end build jobs whose GPUs stay idle this long (0: never)" },
    { .name = "--idle-util",
      .kind = AL_OPT_INT,
      .off = Q(idle_util),
      .min = 0,
      .max = 100,
      .arg = "PCT",
      .help = "a GPU under this utilisation is idle (default 5)" },
    { .name = "--min-runtime",
      .kind = AL_OPT_STR,
      .off = Q(min_runtime),
      .arg = "TIME",
      .help = "its jobs run this long before they may be preempted or "
              "reclaimed (0: none)" },
    { .name = "--members",
      .kind = AL_OPT_STR,
      .off = Q(members),
      .arg = "USER,@GROUP,...",
      .help = "who may submit into it (\"\": everyone, the default); "
              "kept when not given" },
    { .name = "--add-member",
      .kind = AL_OPT_STR,
      .off = Q(add_member),
      .arg = "USER,@GROUP,...",
      .help = "add to its members" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = Q(json),
      .help = "the answer as JSON" },
    AL_CLI_CONN_OPTS(queue_args_t),
    { .name = NULL },
};

#undef Q

const al_opt_cmd_t al_cli_queue_cmd = {
    .name = "queue",
    .opts = queue_opts,
    .lead = "set|delete NAME",
    .about = "Creates or replaces a queue (set) or deletes it (admins).  GPUs "
             "and CPUs\n"
             "in whole units, memory with K/M/G/T; a limit of -1 means "
             "none.\n"
             "--idle-timeout takes seconds or a time like 30m or 1.5h.\n",
};

static const char *const res_names[] = { "gpu", "cpu", "mem" };

/* Parses "gpu=2,mem=64G" into quota.<res>.<field>.  false after printing
 * what was wrong. */
static bool
parse_quota(json_t *body, const char *field, const char *spec)
{
    json_t *quota = json_object_get(body, "quota");
    char *copy = strdup(spec), *save = NULL;
    bool ok = copy != NULL;
    for (char *kv = ok ? strtok_r(copy, ",", &save) : NULL; ok && kv != NULL;
         kv = strtok_r(NULL, ",", &save)) {
        if (strncmp(kv, "gpu.", 4) == 0) {
            /* gpu.MODEL=N: a per-model quota. */
            ok = al_cli_model_quota(body, field, kv + 4);
            continue;
        }
        char *eq = strchr(kv, '=');
        size_t r = 0;
        while (eq != NULL && r < 3 &&
               (strlen(res_names[r]) != (size_t)(eq - kv) ||
                strncmp(kv, res_names[r], (size_t)(eq - kv)) != 0))
            r++;
        if (eq == NULL || r == 3) {
            fprintf(stderr,
                    "allot queue: --%s wants gpu=N,cpu=N,mem=SIZE, "
                    "not '%s'\n",
                    field, kv);
            ok = false;
            break;
        }
        char *end;
        double v = strtod(eq + 1, &end);
        int64_t bytes;
        json_t *num = NULL;
        if (r == 2 && strcmp(eq + 1, "-1") != 0) {
            if (al_cli_parse_mem(eq + 1, &bytes) == 0)
                num = json_integer(bytes);
        } else if (end != eq + 1 && *end == '\0') {
            num = json_real(v);
        }
        if (num == NULL) {
            fprintf(stderr, "allot queue: bad amount in '%s'\n", kv);
            ok = false;
            break;
        }
        json_t *res = json_object_get(quota, res_names[r]);
        if (res == NULL) {
            res = json_object();
            json_object_set_new(quota, res_names[r], res);
        }
        json_object_set_new(res, field, num);
    }
    free(copy);
    return ok;
}

/* --max-build-gpus, --idle-timeout and --idle-util into body; false after
 * printing what was wrong. */
static bool
build_idle_opts(const queue_args_t *a, json_t *body)
{
    if (a->max_build != NULL) {
        char *end;
        double v = strtod(a->max_build, &end);
        if (end == a->max_build || *end != '\0' || (v < 0 && v != -1)) {
            fprintf(stderr,
                    "allot queue: --max-build-gpus wants a number of GPUs "
                    "(-1: no cap), not '%s'\n",
                    a->max_build);
            return false;
        }
        json_object_set_new(body, "max_build_gpus", json_real(v));
    }
    if (a->idle_timeout != NULL) {
        int64_t secs = 0;
        if (strcmp(a->idle_timeout, "0") != 0 &&
            al_cli_parse_duration(a->idle_timeout, &secs) != 0) {
            fprintf(stderr,
                    "allot queue: --idle-timeout wants seconds or a time "
                    "like 30m or 1.5h, not '%s'\n",
                    a->idle_timeout);
            return false;
        }
        json_object_set_new(body, "idle_timeout", json_integer(secs));
    }
    if (a->idle_util >= 0)
        json_object_set_new(body, "idle_util", json_integer(a->idle_util));
    if (a->min_runtime != NULL) {
        int64_t secs = 0;
        if (strcmp(a->min_runtime, "0") != 0 &&
            al_cli_parse_duration(a->min_runtime, &secs) != 0) {
            fprintf(stderr,
                    "allot queue: --min-runtime wants seconds or a time "
                    "like 10m or 1.5h, not '%s'\n",
                    a->min_runtime);
            return false;
        }
        json_object_set_new(body, "min_runtime", json_integer(secs));
    }
    return true;
}

int
al_cli_queue(int argc, char **argv)
{
    queue_args_t a = { .idle_util = -1, .priority = INT64_MIN };
    char *pos[2];
    int npos = 0;
    int rc = al_opt_parse_cmd(&al_cli_queue_cmd, NULL, &a, argc, argv, pos, 2,
                              &npos);
    bool set = npos == 2 && strcmp(pos[0], "set") == 0;
    bool del = npos == 2 && strcmp(pos[0], "delete") == 0;
    if (rc != 0 || a.help || (!set && !del)) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_queue_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    const char *parent = a.parent, *deserved = a.deserved, *limit = a.limit,
               *weight = a.weight;
    /* Only members given: the rest of an existing queue stays as it is. */
    bool members_only =
        (a.members != NULL || a.add_member != NULL) && a.parent == NULL &&
        a.deserved == NULL && a.limit == NULL && a.weight == NULL &&
        a.max_build == NULL && a.idle_timeout == NULL &&
        a.min_runtime == NULL && a.idle_util < 0 && a.priority == INT64_MIN;
    int64_t priority = a.priority == INT64_MIN ? 0 : a.priority;
    json_t *body = json_pack("{s:s, s:I, s:o}", "name", pos[1], "priority",
                             (json_int_t)priority, "quota", json_object());
    if (parent != NULL)
        json_object_set_new(body, "parent", json_string(parent));
    if ((deserved && !parse_quota(body, "deserved", deserved)) ||
        (limit && !parse_quota(body, "limit", limit)) ||
        (weight && !parse_quota(body, "weight", weight))) {
        json_decref(body);
        return AL_EXIT_USAGE;
    }
    if (!build_idle_opts(&a, body)) {
        json_decref(body);
        return AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0) {
        json_decref(body);
        return rc;
    }
    char path[200];
    snprintf(path, sizeof path, "/v1/queues/%s", pos[1]);
    json_t *out = NULL;
    if (del) {
        rc = al_client_call(&c, "DELETE", path, NULL, &out, NULL, NULL);
    } else {
        /* Replace it if it exists, create it otherwise. */
        al_http_resp_t r;
        bool exists = false;
        if (al_http_request(&c.url, "GET", path, c.token, NULL, 0, 30000, -1,
                            &r, NULL) == 0) {
            exists = r.status == 200;
            if (exists) {
                json_t *old =
                    al_json_parse(al_buf_cstr(&r.body), r.body.len, NULL);
                if (members_only && json_is_object(old)) {
                    static const char *const derived[] = {
                        "fair_share", "allocated", "demand", "usage_gpu_hours"
                    };
                    for (size_t k = 0; k < sizeof derived / sizeof *derived;
                         k++)
                        json_object_del(old, derived[k]);
                    json_object_update(body, old);
                } else {
                    json_object_set(body, "members",
                                    json_object_get(old, "members"));
                }
                json_decref(old);
            }
            al_http_resp_fini(&r);
        }
        if (!al_cli_queue_members(body, a.members, a.add_member)) {
            json_decref(body);
            al_client_fini(&c);
            return AL_EXIT_USAGE;
        }
        rc = al_client_call(&c, exists ? "PUT" : "POST",
                            exists ? path : "/v1/queues", body, &out, NULL,
                            NULL);
        if (rc == 0)
            al_cli_model_quota_check(&c, body);
    }
    json_decref(body);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    if (a.json)
        al_cli_print_json(out);
    else
        printf("%s queue %s\n", del ? "deleted" : "set", pos[1]);
    json_decref(out);
    return AL_EXIT_OK;
}

/* `allot node` takes only the connection's options. */
typedef struct node_args {
    const char *server, *token, *reason;
    bool help;
} node_args_t;

static const al_opt_t node_opts[] = {
    AL_CLI_CONN_OPTS(node_args_t),
    { .name = "--reason",
      .kind = AL_OPT_STR,
      .off = offsetof(node_args_t, reason),
      .arg = "TEXT",
      .help = "why the node is drained (shown by `allot nodes` and the "
              "dashboard)" },
    { .name = NULL },
};

const al_opt_cmd_t al_cli_node_cmd = {
    .name = "node",
    .opts = node_opts,
    .lead = "drain|resume NAME",
    .about = "A drained node keeps its running work and takes no new work "
             "(admins).\n",
};

int
al_cli_node(int argc, char **argv)
{
    node_args_t a = { 0 };
    char *pos[2];
    int npos = 0;
    int rc =
        al_opt_parse_cmd(&al_cli_node_cmd, NULL, &a, argc, argv, pos, 2, &npos);
    bool ok =
        npos == 2 && (strcmp(pos[0], "drain") == 0 ||
                      (strcmp(pos[0], "resume") == 0 && a.reason == NULL));
    if (rc != 0 || a.help || !ok) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_node_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    char path[200];
    snprintf(path, sizeof path, "/v1/nodes/%s/%s", pos[1], pos[0]);
    json_t *out = NULL;
    json_t *body =
        a.reason != NULL ? json_pack("{s:s}", "reason", a.reason) : NULL;
    rc = al_client_call(&c, "POST", path, body, &out, NULL, NULL);
    json_decref(body);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    printf("node %s: %s\n", pos[1], al_json_str(out, "state", "?"));
    json_decref(out);
    return AL_EXIT_OK;
}
