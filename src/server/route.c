/*
 * route.c -- the route table of the API under /v1 (method, path, least
 * role, handler) and matching a request's path against it.  The intake
 * (server.c) matches a request before queueing it; the loop (ctl.c)
 * checks the role and calls the handler.
 *
 * May call: nothing of the server; it names every handler (api_*.c,
 * agentproto.c), whose files it sits above.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "svc.h"
#include "xmalloc.h"

const al__route_t al__routes[] = {
    { .method = "GET",
      .path = "/v1/healthz",
      .role = ROLE_NONE,
      .fn = al__api_healthz },
    { .method = "GET",
      .path = "/v1/whoami",
      .role = ROLE_USER,
      .fn = al__api_whoami },
    { .method = "POST",
      .path = "/v1/tokens",
      .role = ROLE_ADMIN,
      .fn = al__api_token_create },
    { .method = "POST",
      .path = "/v1/jobs",
      .role = ROLE_USER,
      .fn = al__api_job_submit },
    { .method = "GET",
      .path = "/v1/jobs",
      .role = ROLE_USER,
      .fn = al__api_job_list },
    { .method = "GET",
      .path = "/v1/jobs/*",
      .role = ROLE_USER,
      .fn = al__api_job_get },
    { .method = "POST",
      .path = "/v1/jobs/*/cancel",
      .role = ROLE_USER,
      .fn = al__api_job_cancel },
    { .method = "POST",
      .path = "/v1/jobs/*/hold",
      .role = ROLE_USER,
      .fn = al__api_job_hold },
    { .method = "POST",
      .path = "/v1/jobs/*/release",
      .role = ROLE_USER,
      .fn = al__api_job_release },
    { .method = "POST",
      .path = "/v1/jobs/*/suspend",
      .role = ROLE_USER,
      .fn = al__api_job_suspend },
    { .method = "POST",
      .path = "/v1/jobs/*/resume",
      .role = ROLE_USER,
      .fn = al__api_job_resume },
    { .method = "POST",
      .path = "/v1/jobs/*/requeue",
      .role = ROLE_USER,
      .fn = al__api_job_requeue },
    /* A job's steps (steps.c): srun's reports, and every job's. */
    { .method = "POST",
      .path = "/v1/jobs/*/steps",
      .role = ROLE_USER,
      .fn = al__api_job_step },
    { .method = "GET",
      .path = "/v1/steps",
      .role = ROLE_USER,
      .fn = al__api_steps },
    /* What may change in a submitted job (api_jobupdate.c). */
    { .method = "POST",
      .path = "/v1/jobs/*/update",
      .role = ROLE_USER,
      .fn = al__api_job_update },
    { .method = "GET",
      .path = "/v1/jobs/*/logs",
      .role = ROLE_USER,
      .fn = al__api_job_logs },
    { .method = "POST",
      .path = "/v1/jobs/*/stream",
      .role = ROLE_USER,
      .fn = al__api_job_stream },
    { .method = "GET",
      .path = "/v1/queues",
      .role = ROLE_USER,
      .fn = al__api_queue_list },
    { .method = "POST",
      .path = "/v1/queues",
      .role = ROLE_ADMIN,
      .fn = al__api_queue_create },
    { .method = "GET",
      .path = "/v1/queues/*",
      .role = ROLE_USER,
      .fn = al__api_queue_get },
    { .method = "PUT",
      .path = "/v1/queues/*",
      .role = ROLE_ADMIN,
      .fn = al__api_queue_update },
    { .method = "DELETE",
      .path = "/v1/queues/*",
      .role = ROLE_ADMIN,
      .fn = al__api_queue_delete },
    /* Users' settings and groups (api_users.c). */
    { .method = "GET",
      .path = "/v1/users",
      .role = ROLE_USER,
      .fn = al__api_user_list },
    { .method = "GET",
      .path = "/v1/users/*",
      .role = ROLE_USER,
      .fn = al__api_user_get },
    { .method = "PUT",
      .path = "/v1/users/*",
      .role = ROLE_ADMIN,
      .fn = al__api_user_update },
    { .method = "GET",
      .path = "/v1/groups",
      .role = ROLE_USER,
      .fn = al__api_group_list },
    { .method = "GET",
      .path = "/v1/groups/*",
      .role = ROLE_USER,
      .fn = al__api_group_get },
    { .method = "PUT",
      .path = "/v1/groups/*",
      .role = ROLE_ADMIN,
      .fn = al__api_group_update },
    { .method = "DELETE",
      .path = "/v1/groups/*",
      .role = ROLE_ADMIN,
      .fn = al__api_group_delete },
    { .method = "GET",
      .path = "/v1/nodes",
      .role = ROLE_USER,
      .fn = al__api_node_list },
    { .method = "POST",
      .path = "/v1/nodes/*/drain",
      .role = ROLE_ADMIN,
      .fn = al__api_node_drain },
    { .method = "POST",
      .path = "/v1/nodes/*/resume",
      .role = ROLE_ADMIN,
      .fn = al__api_node_resume },
    { .method = "GET",
      .path = "/v1/usage",
      .role = ROLE_USER,
      .fn = al__api_usage },
    { .method = "GET",
      .path = "/v1/report",
      .role = ROLE_USER,
      .fn = al__api_report },
    /* The cluster at a glance (api_summary.c). */
    { .method = "GET",
      .path = "/v1/summary",
      .role = ROLE_USER,
      .fn = al__api_summary },
    /* Inference services (api_svc.c). */
    { .method = "POST",
      .path = "/v1/services",
      .role = ROLE_USER,
      .fn = al__svc_create },
    { .method = "GET",
      .path = "/v1/services",
      .role = ROLE_USER,
      .fn = al__svc_list },
    { .method = "GET",
      .path = "/v1/services/*",
      .role = ROLE_USER,
      .fn = al__svc_get },
    { .method = "PUT",
      .path = "/v1/services/*",
      .role = ROLE_USER,
      .fn = al__svc_update },
    { .method = "DELETE",
      .path = "/v1/services/*",
      .role = ROLE_USER,
      .fn = al__svc_delete },
    /* Router processes (`allot router`). */
    { .method = "GET",
      .path = "/v1/router/table",
      .role = ROLE_ADMIN,
      .fn = al__svc_router_table },
    { .method = "POST",
      .path = "/v1/router/report",
      .role = ROLE_ADMIN,
      .fn = al__svc_router_report },
    { .method = "POST",
      .path = "/v1/agent/register",
      .role = ROLE_AGENT,
      .fn = al__proto_register },
    { .method = "POST",
      .path = "/v1/agent/sync",
      .role = ROLE_AGENT,
      .fn = al__proto_sync },
    { .method = "POST",
      .path = "/v1/agent/streams/*",
      .role = ROLE_AGENT,
      .fn = al__proto_stream },
    /* Pipelines (pipeline.c). */
    { .method = "POST",
      .path = "/v1/pipelines",
      .role = ROLE_USER,
      .fn = al__api_pipeline_submit },
    { .method = "GET",
      .path = "/v1/pipelines",
      .role = ROLE_USER,
      .fn = al__api_pipeline_list },
    { .method = "GET",
      .path = "/v1/pipelines/*",
      .role = ROLE_USER,
      .fn = al__api_pipeline_get },
    { .method = "POST",
      .path = "/v1/pipelines/*/cancel",
      .role = ROLE_USER,
      .fn = al__api_pipeline_cancel },
    { .method = "POST",
      .path = "/v1/pipelines/*/retry",
      .role = ROLE_USER,
      .fn = al__api_pipeline_retry },
    { .method = "GET",
      .path = "/v1/config",
      .role = ROLE_USER,
      .fn = al__api_config },
    { .method = "GET",
      .path = "/v1/events",
      .role = ROLE_USER,
      .fn = al__api_events },
    /* The dashboard's files: open, they hold no data. */
    { .method = "GET",
      .path = "/",
      .role = ROLE_NONE,
      .fn = al__api_web_index },
    { .method = "GET",
      .path = "/ui/*",
      .role = ROLE_NONE,
      .fn = al__api_web_file },
    /* Prometheus' scrape: not under /v1, where its convention expects
     * it. */
    { .method = "GET",
      .path = "/metrics",
      .role = ROLE_METRICS,
      .fn = al__api_metrics },
};
const int al__nroutes = sizeof al__routes / sizeof al__routes[0];

/* GET /metrics on --metrics-listen's address, where it needs no token. */
const al__route_t al__metrics_open_route = {
    .method = "GET",
    .path = "/metrics",
    .role = ROLE_NONE,
    .fn = al__api_metrics,
};

/* Matches path against pattern segment by segment; '*' captures one
 * non-empty segment into cap (malloc()ed). */
static bool
path_match(const char *pattern, const char *path, char **cap)
{
    int ncap = 0;
    const char *p = pattern, *s = path;
    char *got[2] = { NULL, NULL };
    while (*p != '\0' && *s != '\0') {
        if (*p == '*') {
            size_t n = strcspn(s, "/");
            if (n == 0 || ncap == 2)
                break;
            got[ncap++] = al_xstrndup(s, n);
            p++;
            s += n;
        } else if (*p == *s) {
            p++;
            s++;
        } else {
            break;
        }
    }
    if (*p != '\0' || (*s != '\0' && strcmp(s, "/") != 0)) {
        free(got[0]);
        free(got[1]);
        return false;
    }
    cap[0] = got[0];
    cap[1] = got[1];
    return true;
}

const al__route_t *
al__route_match(const char *method, const char *path, char **cap, bool *path_ok)
{
    *path_ok = false;
    for (int i = 0; i < al__nroutes; i++) {
        char *c[2];
        if (!path_match(al__routes[i].path, path, c))
            continue;
        if (strcmp(al__routes[i].method, method) == 0) {
            cap[0] = c[0];
            cap[1] = c[1];
            return &al__routes[i];
        }
        *path_ok = true;
        free(c[0]);
        free(c[1]);
    }
    return NULL;
}
