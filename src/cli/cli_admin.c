/* cli_admin.c -- `allot queue set|delete` and `allot node drain|resume`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_client.h"
#include "json.h"

static const char queue_usage[] =
    "usage: allot queue set NAME [--parent P] [--priority N]\n"
    "                   [--deserved gpu=N,cpu=N,mem=SIZE]\n"
    "                   [--limit gpu=N,cpu=N,mem=SIZE] [--weight gpu=W,...]\n"
    "       allot queue delete NAME\n"
    "Creates or replaces a queue (admins).  GPUs and CPUs in whole units,\n"
    "memory with K/M/G/T; a limit of -1 means none.\n";

static const char *const res_names[] = { "gpu", "cpu", "mem" };

/* Parses "gpu=2,mem=64G" into quota.<res>.<field>.  false after printing
 * what was wrong. */
static bool
parse_quota(json_t *quota, const char *field, const char *spec)
{
    char *copy = strdup(spec), *save = NULL;
    bool ok = copy != NULL;
    for (char *kv = ok ? strtok_r(copy, ",", &save) : NULL; ok && kv != NULL;
         kv = strtok_r(NULL, ",", &save)) {
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

int
al_cli_queue(int argc, char **argv)
{
    const char *parent = NULL, *deserved = NULL, *limit = NULL, *weight = NULL,
               *server = NULL, *token = NULL;
    int64_t priority = 0;
    bool help = false, json = false;
    const al_opt_t opts[] = {
        { .name = "--parent", .kind = AL_OPT_STR, .dst = &parent },
        { .name = "--priority",
          .kind = AL_OPT_INT,
          .dst = &priority,
          .min = -1000000,
          .max = 1000000 },
        { .name = "--deserved", .kind = AL_OPT_STR, .dst = &deserved },
        { .name = "--limit", .kind = AL_OPT_STR, .dst = &limit },
        { .name = "--weight", .kind = AL_OPT_STR, .dst = &weight },
        { .name = "--json", .kind = AL_OPT_FLAG, .dst = &json },
        AL_CLI_CONN_OPTS(server, token, help),
        { .name = NULL },
    };
    char *pos[2];
    int npos;
    int rc =
        al_opt_parse("queue", NULL, opts, argc, argv, false, pos, 2, &npos);
    bool set = npos == 2 && strcmp(pos[0], "set") == 0;
    bool del = npos == 2 && strcmp(pos[0], "delete") == 0;
    if (rc != 0 || help || (!set && !del)) {
        fputs(queue_usage, help ? stdout : stderr);
        return help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    json_t *body = json_pack("{s:s, s:I, s:o}", "name", pos[1], "priority",
                             (json_int_t)priority, "quota", json_object());
    json_t *quota = json_object_get(body, "quota");
    if (parent != NULL)
        json_object_set_new(body, "parent", json_string(parent));
    if ((deserved && !parse_quota(quota, "deserved", deserved)) ||
        (limit && !parse_quota(quota, "limit", limit)) ||
        (weight && !parse_quota(quota, "weight", weight))) {
        json_decref(body);
        return AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, server, token)) != 0) {
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
            al_http_resp_fini(&r);
        }
        rc = al_client_call(&c, exists ? "PUT" : "POST",
                            exists ? path : "/v1/queues", body, &out, NULL,
                            NULL);
    }
    json_decref(body);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    if (json)
        al_cli_print_json(out);
    else
        printf("%s queue %s\n", del ? "deleted" : "set", pos[1]);
    json_decref(out);
    return AL_EXIT_OK;
}

int
al_cli_node(int argc, char **argv)
{
    const char *server = NULL, *token = NULL;
    bool help = false;
    const al_opt_t opts[] = {
        AL_CLI_CONN_OPTS(server, token, help),
        { .name = NULL },
    };
    char *pos[2];
    int npos;
    int rc = al_opt_parse("node", NULL, opts, argc, argv, false, pos, 2, &npos);
    bool ok = npos == 2 &&
              (strcmp(pos[0], "drain") == 0 || strcmp(pos[0], "resume") == 0);
    if (rc != 0 || help || !ok) {
        fputs("usage: allot node drain|resume NAME\n"
              "A drained node keeps its running work and takes no new work "
              "(admins).\n",
              help ? stdout : stderr);
        return help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, server, token)) != 0)
        return rc;
    char path[200];
    snprintf(path, sizeof path, "/v1/nodes/%s/%s", pos[1], pos[0]);
    json_t *out = NULL;
    rc = al_client_call(&c, "POST", path, NULL, &out, NULL, NULL);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    printf("node %s: %s\n", pos[1], al_json_str(out, "state", "?"));
    json_decref(out);
    return AL_EXIT_OK;
}
