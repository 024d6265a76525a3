/*
 * cli_policy.c -- a queue's scheduling policy on the command line: the
 * per-GPU-model quotas of `allot queue set` (--deserved gpu.H100-80GB=8,
 * --limit gpu.H100-80GB=12) and the second table of `allot queues`: each
 * queue's decayed usage behind fair share, its minimum runtime, its
 * per-model quotas and its members.
 *
 * May call: cli_client.c and common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_client.h"
#include "json.h"

bool
al_cli_model_quota(json_t *body, const char *field, const char *spec)
{
    const char *eq = strchr(spec, '=');
    char *end = NULL;
    double v = eq != NULL ? strtod(eq + 1, &end) : 0;
    if (strcmp(field, "weight") == 0 || eq == NULL || eq == spec ||
        end == eq + 1 || *end != '\0' ||
        (v < 0 && (v != -1 || strcmp(field, "limit") != 0))) {
        fprintf(stderr,
                "allot queue: --%s wants gpu.MODEL=N (GPUs of that model%s), "
                "not 'gpu.%s'\n",
                field,
                strcmp(field, "limit") == 0    ? "; -1: no limit"
                : strcmp(field, "weight") == 0 ? "; weights are not per model"
                                               : "",
                spec);
        return false;
    }
    json_t *m = json_object_get(body, "model_quotas");
    if (m == NULL) {
        m = json_object();
        json_object_set_new(body, "model_quotas", m);
    }
    char model[128];
    snprintf(model, sizeof model, "%.*s", (int)(eq - spec), spec);
    json_t *q = json_object_get(m, model);
    if (q == NULL) {
        q = json_object();
        json_object_set_new(m, model, q);
    }
    json_object_set_new(q, field, json_real(v));
    return true;
}

void
al_cli_model_quota_check(al_client_t *c, const json_t *body)
{
    const json_t *m = json_object_get(body, "model_quotas");
    json_t *nodes = NULL;
    if (json_object_size(m) == 0 ||
        al_client_call(c, "GET", "/v1/nodes", NULL, &nodes, NULL, NULL) != 0)
        return;
    json_t *have = json_object(); /* the models of the nodes, as a set */
    json_t *list = json_object_get(nodes, "nodes");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *g = json_object_get(json_array_get(list, i), "gpus");
        for (size_t k = 0; k < json_array_size(g); k++) {
            const char *mod = json_string_value(
                json_object_get(json_array_get(g, k), "model"));
            if (mod != NULL)
                json_object_set_new(have, mod, json_true());
        }
    }
    al_buf_t names = AL_BUF_INIT;
    const char *k;
    json_t *v;
    json_object_foreach(have, k, v)
    {
        (void)v;
        al_buf_printf(&names, "%s%s", names.len > 0 ? ", " : "", k);
    }
    json_object_foreach((json_t *)m, k, v)
    {
        (void)v;
        if (json_object_get(have, k) == NULL)
            fprintf(stderr,
                    "allot queue: warning: no node has GPU model '%s' now "
                    "(%s%s); a per-model quota counts GPUs of exactly that "
                    "model\n",
                    k, names.len > 0 ? "models: " : "no GPUs yet",
                    al_buf_cstr(&names));
    }
    al_buf_fini(&names);
    json_decref(have);
    json_decref(nodes);
}

/* "H100-80GB=8/12" for each model quota (deserved/limit, "-": none),
 * padded to the column's width. */
static void
print_models(const json_t *q)
{
    json_t *m = json_object_get(q, "model_quotas");
    const char *k;
    json_t *v;
    al_buf_t b = AL_BUF_INIT;
    json_object_foreach((json_t *)m, k, v)
    {
        double lim = al_json_num(v, "limit", -1);
        char l[32] = "-";
        if (lim >= 0)
            snprintf(l, sizeof l, "%g", lim);
        al_buf_printf(&b, "%s%s=%g/%s", b.len > 0 ? "," : "", k,
                      al_json_num(v, "deserved", 0), l);
    }
    printf("%-24s", b.len > 0 ? al_buf_cstr(&b) : "-");
    al_buf_fini(&b);
}

void
al_cli_queues_policy(const json_t *queues)
{
    printf("\n%-16s %12s %8s  %-24s %s\n", "QUEUE", "USAGE-GPU-H", "MIN-RUN",
           "MODEL-QUOTA(DES/LIM)", "MEMBERS");
    for (size_t i = 0; i < json_array_size(queues); i++) {
        json_t *q = json_array_get(queues, i);
        json_t *m = json_object_get(q, "members");
        char minrt[32] = "-";
        long long mr = al_json_int(q, "min_runtime", 0);
        if (mr > 0)
            snprintf(minrt, sizeof minrt, "%llds", mr);
        printf("%-16s %12.3f %8s  ", al_json_str(q, "name", ""),
               al_json_num(q, "usage_gpu_hours", 0), minrt);
        print_models(q);
        printf(" ");
        if (json_array_size(m) == 0)
            printf("everyone");
        for (size_t k = 0; k < json_array_size(m); k++)
            printf("%s%s", k ? "," : "",
                   json_string_value(json_array_get(m, k)));
        printf("\n");
    }
}
