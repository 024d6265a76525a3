/*
 * cli_svc.c -- `allot serve`: inference services.  create, update, ls,
 * show and delete, over /v1/services.
 *
 * May call: cli_client.c (the API), common's JSON and option tables.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "json.h"
#include "xmalloc.h"

typedef struct serve_args {
    const char *server, *token;
    const char *queue, *ready_path, *mem, *gpu_model;
    int64_t gpus, port, min, max, window, down, idle, drain, queue_max,
        queue_timeout, start_timeout;
    double target, gpu_fraction;
    bool public, private_, json, help;
} serve_args_t;

#define A(f) offsetof(serve_args_t, f)

static const al_opt_t serve_opts[] = {
    { .name = "--gpus",
      .kind = AL_OPT_INT,
      .off = A(gpus),
      .min = 0,
      .max = 64,
      .arg = "N",
      .help = "GPUs per replica (default 0)",
      .flags = AL_OPT_BRIEF },
    { .name = "--gpu-fraction",
      .kind = AL_OPT_NUM,
      .off = A(gpu_fraction),
      .lo = 0.001,
      .hi = 1,
      .arg = "F",
      .help = "a fraction of one GPU per replica, instead of --gpus" },
    { .name = "--mem",
      .kind = AL_OPT_STR,
      .off = A(mem),
      .arg = "SIZE",
      .help = "memory per replica (4G, 512M)" },
    { .name = "--gpu-model",
      .kind = AL_OPT_STR,
      .off = A(gpu_model),
      .arg = "MODEL",
      .help = "only on GPUs of this model" },
    { .name = "--port",
      .kind = AL_OPT_INT,
      .off = A(port),
      .min = 0,
      .max = 65535,
      .arg = "P",
      .help = "also take the service's requests on this port of the "
              "router's address, without /s/NAME (0: none)" },
    { .name = "--queue",
      .kind = AL_OPT_STR,
      .off = A(queue),
      .arg = "Q",
      .help = "the queue whose deserved quota the replicas use (default: "
              "default)" },
    { .name = "--min",
      .kind = AL_OPT_INT,
      .off = A(min),
      .min = 0,
      .max = 64,
      .arg = "N",
      .help = "fewest replicas; 0 scales to zero when idle (default 0)" },
    { .name = "--max",
      .kind = AL_OPT_INT,
      .off = A(max),
      .min = 1,
      .max = 64,
      .arg = "N",
      .help = "most replicas (default 8)" },
    { .name = "--target-concurrency",
      .kind = AL_OPT_NUM,
      .off = A(target),
      .lo = 0.01,
      .hi = 100000,
      .arg = "C",
      .help = "requests under way per replica that the autoscaler aims at "
              "(default 4)" },
    { .name = "--ready-path",
      .kind = AL_OPT_STR,
      .off = A(ready_path),
      .arg = "PATH",
      .help = "a replica is ready when GET PATH answers 2xx (default /)" },
    { .name = "--public",
      .kind = AL_OPT_FLAG,
      .off = A(public),
      .help = "anyone may call it (default: a token of its owner or an "
              "admin)" },
    { .name = "--private",
      .kind = AL_OPT_FLAG,
      .off = A(private_),
      .help = "update: make a public service need a token again" },
    { .name = "--window",
      .kind = AL_OPT_INT,
      .off = A(window),
      .min = 1,
      .max = 3600,
      .arg = "S",
      .help = "seconds of load averaged to scale up (default 6)" },
    { .name = "--scale-down-delay",
      .kind = AL_OPT_INT,
      .off = A(down),
      .min = 0,
      .max = 86400,
      .arg = "S",
      .help = "scale down only after the load stayed lower this long "
              "(default 60)" },
    { .name = "--idle",
      .kind = AL_OPT_INT,
      .off = A(idle),
      .min = 0,
      .max = 604800,
      .arg = "S",
      .help = "with --min 0: scale to zero after S seconds without a "
              "request (default 300)" },
    { .name = "--drain",
      .kind = AL_OPT_INT,
      .off = A(drain),
      .min = 0,
      .max = 3600,
      .arg = "S",
      .help = "grace for requests under way on a replica being stopped "
              "(default 30)" },
    { .name = "--queue-max",
      .kind = AL_OPT_INT,
      .off = A(queue_max),
      .min = 0,
      .max = 100000,
      .arg = "N",
      .help = "requests held while no replica is ready (default 1000)" },
    { .name = "--queue-timeout",
      .kind = AL_OPT_INT,
      .off = A(queue_timeout),
      .min = 1,
      .max = 3600,
      .arg = "S",
      .help = "how long a held request waits for a replica (default 120)" },
    { .name = "--start-timeout",
      .kind = AL_OPT_INT,
      .off = A(start_timeout),
      .min = 1,
      .max = 86400,
      .arg = "S",
      .help = "a replica not ready this long after it started is replaced "
              "(default 600)" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = A(json),
      .help = "the answer as JSON" },
    AL_CLI_CONN_OPTS(serve_args_t),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_serve_cmd = {
    .name = "serve",
    .opts = serve_opts,
    .lead = "create|update|ls|show|delete [NAME]",
    .args = "[-- COMMAND ARGS...]",
    .about = "Inference services: replicas of COMMAND (told their port in "
             "PORT), behind the\ncontroller's router at /s/NAME/, scaled on "
             "load.  `update NAME -- COMMAND`\nrolls the replicas over to a "
             "new command, one at a time.\n",
};

/* Variables of the caller's environment passed on to the replicas. */
static const char *const passed_env[] = { "PATH",       "HOME", "LANG",
                                          "LC_ALL",     "USER", "PYTHONPATH",
                                          "VIRTUAL_ENV" };

static int
bad(const char *what)
{
    fprintf(stderr, "allot serve: %s\n", what);
    return AL_EXIT_USAGE;
}

/* The body of create or update from the options given. */
static int
build_body(const serve_args_t *a, bool create, int ncmd, char **cmd, json_t *b)
{
    if (a->gpus >= 0)
        json_object_set_new(b, "gpus", json_integer(a->gpus));
    if (!isnan(a->gpu_fraction))
        json_object_set_new(b, "gpu_fraction", json_real(a->gpu_fraction));
    if (a->mem != NULL) {
        int64_t m;
        if (al_cli_parse_mem(a->mem, &m) != 0)
            return bad("--mem: expected a size such as 4G or 512M");
        json_object_set_new(b, "mem_bytes", json_integer(m));
    }
    if (a->gpu_model != NULL)
        json_object_set_new(b, "gpu_model", json_string(a->gpu_model));
    if (a->queue != NULL)
        json_object_set_new(b, "queue", json_string(a->queue));
    if (a->ready_path != NULL)
        json_object_set_new(b, "ready_path", json_string(a->ready_path));
    const struct {
        const char *key;
        int64_t v;
    } ints[] = {
        { "port", a->port },
        { "min", a->min },
        { "max", a->max },
        { "window_s", a->window },
        { "scale_down_delay_s", a->down },
        { "idle_s", a->idle },
        { "drain_s", a->drain },
        { "queue_max", a->queue_max },
        { "queue_timeout_s", a->queue_timeout },
        { "start_timeout_s", a->start_timeout },
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].v >= 0)
            json_object_set_new(b, ints[i].key, json_integer(ints[i].v));
    if (!isnan(a->target))
        json_object_set_new(b, "target_concurrency", json_real(a->target));
    if (a->public && a->private_)
        return bad("--public and --private contradict each other");
    if (a->public || a->private_)
        json_object_set_new(b, "public", json_boolean(a->public));
    else if (create)
        json_object_set_new(b, "public", json_false());
    if (ncmd > 0) {
        json_t *c = json_array();
        for (int i = 0; i < ncmd; i++)
            json_array_append_new(c, json_string(cmd[i]));
        json_object_set_new(b, "command", c);
        json_t *env = json_object();
        for (size_t i = 0; i < sizeof passed_env / sizeof passed_env[0]; i++) {
            const char *v = getenv(passed_env[i]);
            if (v != NULL)
                json_object_set_new(env, passed_env[i], json_string(v));
        }
        json_object_set_new(b, "env", env);
        char cwd[4096];
        if (getcwd(cwd, sizeof cwd) != NULL)
            json_object_set_new(b, "cwd", json_string(cwd));
    } else if (create) {
        return bad("create needs a command: allot serve create NAME "
                   "[options] -- COMMAND ARGS...");
    }
    return 0;
}

static void
print_one(const json_t *s)
{
    printf("name:        %s\n", al_json_str(s, "name", "?"));
    printf("owner:       %s\n", al_json_str(s, "owner", "?"));
    printf("generation:  %lld\n", (long long)al_json_int(s, "gen", 0));
    printf("replicas:    %lld ready of %lld desired (min %lld, max %lld, "
           "target concurrency %g)\n",
           (long long)al_json_int(s, "ready", 0),
           (long long)al_json_int(s, "desired", 0),
           (long long)al_json_int(s, "min", 0),
           (long long)al_json_int(s, "max", 0),
           json_number_value(json_object_get(s, "target_concurrency")));
    printf("load:        %.1f concurrent (%lld under way, %lld held); "
           "%lld requests, %lld failed, mean %.1f ms\n",
           json_number_value(json_object_get(s, "concurrency")),
           (long long)al_json_int(s, "inflight", 0),
           (long long)al_json_int(s, "waiting", 0),
           (long long)al_json_int(s, "requests", 0),
           (long long)al_json_int(s, "errors", 0),
           1000 * json_number_value(json_object_get(s, "latency_mean_s")));
    double rise = json_number_value(json_object_get(s, "rise_s"));
    if (rise > 0)
        printf("scale-up:    last load rise to a ready replica %.2f s "
               "(the replica's own start %.2f s)\n",
               rise, json_number_value(json_object_get(s, "start_s")));
    printf("access:      %s\n", al_json_bool(s, "public", false)
                                    ? "public"
                                    : "its owner's or an admin's token");
    printf("command:     ");
    json_t *cmd = json_object_get(s, "command");
    for (size_t i = 0; i < json_array_size(cmd); i++)
        printf("%s%s", i ? " " : "", json_string_value(json_array_get(cmd, i)));
    printf("\n\n%-8s %-8s %-4s %-10s %-12s %-6s %s\n", "REPLICA", "JOB", "GEN",
           "STATE", "NODE", "PORT", "IN-FLIGHT");
    json_t *reps = json_object_get(s, "replicas");
    for (size_t i = 0; i < json_array_size(reps); i++) {
        json_t *r = json_array_get(reps, i);
        printf("%-8lld %-8lld %-4lld %-10s %-12s %-6lld %lld\n",
               (long long)al_json_int(r, "replica", 0),
               (long long)al_json_int(r, "job", 0),
               (long long)al_json_int(r, "gen", 0),
               al_json_str(r, "state", "?"), al_json_str(r, "node", "-"),
               (long long)al_json_int(r, "port", 0),
               (long long)al_json_int(r, "inflight", 0));
    }
    json_t *ev = json_object_get(s, "events");
    if (json_array_size(ev) > 0)
        printf("\nhistory:\n");
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        char when[32];
        int64_t t = al_json_int(e, "time", 0);
        time_t secs = (time_t)(t / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        printf("  %s.%03lld  %s\n", when, (long long)(t % 1000),
               al_json_str(e, "event", ""));
    }
}

int
al_cli_serve(int argc, char **argv)
{
    serve_args_t a = { .gpus = -1,
                       .port = -1,
                       .min = -1,
                       .max = -1,
                       .window = -1,
                       .down = -1,
                       .idle = -1,
                       .drain = -1,
                       .queue_max = -1,
                       .queue_timeout = -1,
                       .start_timeout = -1,
                       .target = NAN,
                       .gpu_fraction = NAN };
    /* The command after "--" is not ours to parse. */
    int ncmd = 0;
    char **cmd = NULL;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            cmd = argv + i + 1;
            ncmd = argc - i - 1;
            argc = i;
            break;
        }
    char *pos[3];
    int npos = 0;
    int rc = al_opt_parse_cmd(&al_cli_serve_cmd, NULL, &a, argc, argv, pos, 3,
                              &npos);
    if (rc != 0 || a.help || npos < 1) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_serve_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    const char *verb = pos[0];
    bool ls = strcmp(verb, "ls") == 0;
    bool create = strcmp(verb, "create") == 0;
    bool update = strcmp(verb, "update") == 0;
    bool show = strcmp(verb, "show") == 0;
    bool del = strcmp(verb, "delete") == 0 || strcmp(verb, "rm") == 0;
    if (!ls && !create && !update && !show && !del)
        return bad("expected create, update, ls, show or delete");
    if (ls ? npos != 1 : npos != 2)
        return bad(ls ? "ls takes no name" : "expected a service's name");
    if (ncmd > 0 && !create && !update)
        return bad("only create and update take a command");
    json_t *body = NULL;
    if (create || update) {
        body = json_object();
        if (create)
            json_object_set_new(body, "name", json_string(pos[1]));
        if ((rc = build_body(&a, create, ncmd, cmd, body)) != 0) {
            json_decref(body);
            return rc;
        }
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0) {
        json_decref(body);
        return rc;
    }
    char path[200];
    if (ls || create)
        snprintf(path, sizeof path, "/v1/services");
    else
        snprintf(path, sizeof path, "/v1/services/%s", pos[1]);
    const char *method = create   ? "POST"
                         : update ? "PUT"
                         : del    ? "DELETE"
                                  : "GET";
    json_t *out = NULL;
    rc = al_client_call(&c, method, path, body, &out, NULL, NULL);
    json_decref(body);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    if (a.json) {
        al_cli_print_json(out);
    } else if (ls) {
        printf("%-20s %-8s %-9s %-4s %7s %9s %10s %s\n", "NAME", "READY",
               "DESIRED", "GEN", "CONC", "REQUESTS", "FAILED", "OWNER");
        json_t *v = json_object_get(out, "services");
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *s = json_array_get(v, i);
            char ready[24];
            snprintf(
                ready, sizeof ready, "%lld/%lld",
                (long long)al_json_int(s, "ready", 0),
                (long long)json_array_size(json_object_get(s, "replicas")));
            printf("%-20s %-8s %-9lld %-4lld %7.1f %9lld %10lld %s\n",
                   al_json_str(s, "name", "?"), ready,
                   (long long)al_json_int(s, "desired", 0),
                   (long long)al_json_int(s, "gen", 0),
                   json_number_value(json_object_get(s, "concurrency")),
                   (long long)al_json_int(s, "requests", 0),
                   (long long)al_json_int(s, "errors", 0),
                   al_json_str(s, "owner", "?"));
        }
    } else if (show) {
        print_one(out);
    } else if (del) {
        printf("deleted service %s\n", pos[1]);
    } else {
        printf("%s service %s (generation %lld)\n",
               create ? "created" : "updated", pos[1],
               (long long)al_json_int(out, "gen", 0));
    }
    json_decref(out);
    return AL_EXIT_OK;
}
