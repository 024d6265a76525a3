/*
 * cli_dev.c -- `allot dev`: a controller and one agent on this machine (or
 * several, each an emulated node, with --nodes N).
 * Part of allot-daemon (main_daemon.c), to which the allot command hands
 * `allot dev`.  The controller runs in this process; the agent is this
 * same program run as `allot agent` in a child process (fork and exec at
 * once).  State lives under the user's data directory; the admin token
 * and URL go to the user's config so the CLI works at once.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cli_dev.h"
#include "clock.h"
#include "daemon.h"
#include "fs.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "server.h"
#include "ucfg.h"
#include "xmalloc.h"

/* Waits up to ms for the controller to list at least `want` nodes. */
static bool
wait_for_nodes(const char *url, const char *token, int want, int64_t ms)
{
    al_url_t u;
    if (al_url_parse(url, &u, NULL) != 0)
        return false;
    int64_t end = al_clock_mono_ms() + ms;
    while (al_clock_mono_ms() < end) {
        al_http_resp_t r;
        if (al_http_request(&u, "GET", "/v1/healthz", token, NULL, 0, 1000, -1,
                            &r, NULL) == 0) {
            json_t *v = al_json_parse(al_buf_cstr(&r.body), r.body.len, NULL);
            bool ok = al_json_int(v, "nodes", 0) >= want;
            json_decref(v);
            al_http_resp_fini(&r);
            if (ok)
                return true;
        }
        al_clock_sleep_ms(20);
    }
    return false;
}

/* One step of the demo: an API call as admin; false (with a message) if it
 * failed. */
static bool
demo_call(const al_url_t *u, const char *token, const char *method,
          const char *path, json_t *body)
{
    char *text = al_json_dump(body);
    al_http_resp_t r;
    char *cause = NULL;
    int rc = al_http_request(u, method, path, token, text, strlen(text), 5000,
                             -1, &r, &cause);
    free(text);
    json_decref(body);
    if (rc != 0) {
        fprintf(stderr, "allot dev: demo: %s\n", cause ? cause : "failed");
        free(cause);
        return false;
    }
    bool ok = r.status >= 200 && r.status < 300;
    if (!ok)
        fprintf(stderr, "allot dev: demo: %s %s: %s\n", method, path,
                al_buf_cstr(&r.body));
    al_http_resp_fini(&r);
    return ok;
}

/* Creates the demo's queue `name` (body q, which it takes), or sets it
 * again (PUT) when a run before on the same state created it. */
static bool
demo_queue(const al_url_t *u, const char *token, const char *name, json_t *q)
{
    char *text = al_json_dump(q);
    al_http_resp_t r;
    int rc = al_http_request(u, "POST", "/v1/queues", token, text, strlen(text),
                             5000, -1, &r, NULL);
    free(text);
    int status = rc == 0 ? r.status : 0;
    if (rc == 0)
        al_http_resp_fini(&r);
    if (status == 409) {
        char *path = al_xasprintf("/v1/queues/%s", name);
        json_object_del(q, "name");
        bool ok = demo_call(u, token, "PUT", path, q);
        free(path);
        return ok;
    }
    json_decref(q);
    if (status < 200 || status > 299)
        fprintf(stderr, "allot dev: demo: cannot create queue %s (%d)\n", name,
                status);
    return status >= 200 && status <= 299;
}

/* A GET as admin: the answer's JSON, or NULL. */
static json_t *
dev_get(const al_url_t *u, const char *token, const char *path)
{
    al_http_resp_t r;
    if (al_http_request(u, "GET", path, token, NULL, 0, 5000, -1, &r, NULL) !=
        0)
        return NULL;
    json_t *v = r.status == 200
                    ? al_json_parse(al_buf_cstr(&r.body), r.body.len, NULL)
                    : NULL;
    al_http_resp_fini(&r);
    return v;
}

/*
 * The admin's default queue with a real quota: the queue `default` deserves
 * the dev cluster's GPUs (those the demo's three queues leave with --demo),
 * so that a build session there starts (with deserved 0 it waited for
 * ever), and it is the admin's default queue.  Only where nobody set them
 * before: a quota or default queue chosen since is kept.
 */
static void
dev_admin_queue(const char *url, const char *token, bool demo)
{
    al_url_t u;
    if (al_url_parse(url, &u, NULL) != 0)
        return;
    json_t *nodes = dev_get(&u, token, "/v1/nodes");
    json_t *list = json_object_get(nodes, "nodes");
    int total = 0;
    for (size_t i = 0; i < json_array_size(list); i++)
        total += (int)json_array_size(
            json_object_get(json_array_get(list, i), "gpus"));
    int first =
        (int)json_array_size(json_object_get(json_array_get(list, 0), "gpus"));
    json_decref(nodes);
    int want = total - (demo && first >= 4 ? 3 * (first / 4) : 0);
    json_t *q = dev_get(&u, token, "/v1/queues/default");
    json_t *gpu = json_object_get(json_object_get(q, "quota"), "gpu");
    if (want > 0 && gpu != NULL && al_json_num(gpu, "deserved", 0) == 0) {
        static const char *const derived[] = { "name", "fair_share",
                                               "allocated", "demand",
                                               "usage_gpu_hours" };
        for (size_t k = 0; k < sizeof derived / sizeof *derived; k++)
            json_object_del(q, derived[k]);
        json_object_set_new(gpu, "deserved", json_integer(want));
        if (demo_call(&u, token, "PUT", "/v1/queues/default", q))
            fprintf(stderr, "allot dev: queue default deserves %d GPUs\n",
                    want);
        q = NULL; /* demo_call took it */
    }
    json_decref(q);
    json_t *me = dev_get(&u, token, "/v1/users/admin");
    if (me != NULL && json_is_null(json_object_get(me, "default_queue")))
        demo_call(&u, token, "PUT", "/v1/users/admin",
                  json_pack("{s:s}", "default_queue", "default"));
    json_decref(me);
}

/* Cancels what a run of the demo before left running or pending in
 * `queue`, so that the story starts again on an idle node. */
static void
demo_reset(const al_url_t *u, const char *token, const char *queue)
{
    char *path =
        al_xasprintf("/v1/jobs?state=active&queue=%s&limit=1000", queue);
    al_http_resp_t r;
    int rc =
        al_http_request(u, "GET", path, token, NULL, 0, 5000, -1, &r, NULL);
    free(path);
    if (rc != 0)
        return;
    json_t *v = al_json_parse(al_buf_cstr(&r.body), r.body.len, NULL);
    al_http_resp_fini(&r);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(v, "jobs"), i, j)
    {
        char *cancel = al_xasprintf(
            "/v1/jobs/%lld/cancel",
            (long long)json_integer_value(json_object_get(j, "id")));
        if (al_http_request(u, "POST", cancel, token, NULL, 0, 5000, -1, &r,
                            NULL) == 0)
            al_http_resp_fini(&r);
        free(cancel);
    }
    json_decref(v);
}

static json_t *
demo_job(const char *user, const char *queue, const char *cls, int gpus,
         const char *name)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:s, s:[s, s, s]}", "user", user,
                     "queue", queue, "class", cls, "gpus", gpus, "name", name,
                     "command", "sh", "-c",
                     "echo $ALLOT_JOB_ID on GPUs $CUDA_VISIBLE_DEVICES, run "
                     "$ALLOT_RESTART_COUNT; sleep 600");
}

/*
 * `--demo`: the guaranteed-quota story on the dev node.  Three queues each
 * deserve a quarter of the GPUs; Susan's training jobs borrow the whole
 * node while it is idle, Jemma opens a build session inside her quota,
 * then Joe submits and gets his share back by reclaim: one of Susan's jobs
 * is evicted and requeued with the same id.
 */
static void
run_demo(const char *url, const char *token)
{
    al_url_t u;
    al_http_resp_t r;
    if (al_url_parse(url, &u, NULL) != 0 ||
        al_http_request(&u, "GET", "/v1/nodes", token, NULL, 0, 5000, -1, &r,
                        NULL) != 0)
        return;
    json_t *v = al_json_parse(al_buf_cstr(&r.body), r.body.len, NULL);
    al_http_resp_fini(&r);
    int ngpus = (int)json_array_size(json_object_get(
        json_array_get(json_object_get(v, "nodes"), 0), "gpus"));
    json_decref(v);
    if (ngpus < 4) {
        fprintf(stderr, "allot dev: --demo needs a node with 4 GPUs or more\n");
        return;
    }
    int share = ngpus / 4;
    static const char *const queues[] = { "susan", "joe", "jemma" };
    for (size_t i = 0; i < sizeof queues / sizeof queues[0]; i++) {
        json_t *q = json_pack("{s:s, s:{s:{s:i, s:f}}}", "name", queues[i],
                              "quota", "gpu", "deserved", share, "weight", 1.0);
        if (!demo_queue(&u, token, queues[i], q))
            return;
        demo_reset(&u, token, queues[i]);
    }
    printf("demo: queues susan, joe and jemma each deserve %d GPUs\n", share);
    if (!demo_call(&u, token, "POST", "/v1/jobs",
                   demo_job("jemma", "jemma", "build", share, "notebook")))
        return;
    for (int i = 0; i < (ngpus - share) / share; i++)
        if (!demo_call(&u, token, "POST", "/v1/jobs",
                       demo_job("susan", "susan", "train", share, "sweep")))
            return;
    printf("demo: jemma opened a build session; susan's training borrows "
           "the idle GPUs (allot ls)\n");
    fflush(stdout);
    al_clock_sleep_ms(3000);
    if (!demo_call(&u, token, "POST", "/v1/jobs",
                   demo_job("joe", "joe", "train", share, "finetune")))
        return;
    printf("demo: joe submitted within his quota: one of susan's jobs is "
           "reclaimed and requeued (allot ls --all; allot show ID)\n");
    fflush(stdout);
}

/*
 * Starts `allot agent` (this program) for node `name` with state in dir;
 * emulated GPUs `gpus`, only when NVML finds none if fallback.  This
 * process has threads, so the child only restores the signal mask `old`
 * and the limit of open files `nofile` this process was started with (the
 * server raised its own: tasks would inherit it) and execs
 * (async-signal-safe calls).  Returns the pid or -1.
 */
static pid_t
spawn_agent(const char *url, const char *join, const char *name,
            const char *gpus, bool fallback, const char *dir, const char *level,
            const sigset_t *old, const struct rlimit *nofile)
{
    /* execv() wants char *const[]: writable copies. */
    char *args[] = {
        al_xstrdup("allot"),
        al_xstrdup("agent"),
        al_xstrdup("--server"),
        al_xstrdup(url),
        al_xstrdup("--join-token-file"),
        al_xstrdup(join),
        al_xstrdup("--addr"),
        al_xstrdup("127.0.0.1"),
        al_xstrdup("--name"),
        al_xstrdup(name),
        al_xstrdup(fallback ? "--fallback-gpus" : "--fake-gpus"),
        al_xstrdup(gpus),
        al_xstrdup("--state"),
        al_xstrdup(dir),
        al_xstrdup("--log-level"),
        al_xstrdup(level),
        /* One user's machine: tasks run as whoever runs allot dev. */
        al_xstrdup("--no-run-as-user"),
        NULL,
    };
    sigset_t all, cur;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &cur);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* The agent goes with this process, even after a kill -9 of it
         * (its tasks live on under their monitors, for the next agent to
         * adopt): a stray agent would hold its state's lock, the next
         * `allot dev`'s own agent would be refused, and a clean stop of
         * that one would leave the stray running for ever. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
            _exit(127);
        sigprocmask(SIG_SETMASK, old, NULL);
        setrlimit(RLIMIT_NOFILE, nofile);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    pthread_sigmask(SIG_SETMASK, &cur, NULL);
    for (char **p = args; *p != NULL; p++)
        free(*p);
    return pid < 0 ? -1 : pid;
}

int
al_dev_main(int argc, char **argv)
{
    dev_args_t a = { .listen = "127.0.0.1:7070", .name = "local", .nodes = 1 };
    int rc = al_daemon_parse(&a.d, &al_cli_dev_cmd, &a, argc, argv);
    if (!al_daemon_begin(&a.d, &al_cli_dev_cmd, rc, true, &rc))
        return rc;
    const char *listen = a.listen, *state = a.state, *fake = a.fake,
               *name = a.name, *level = a.d.level, *store = a.store;
    int64_t nodes = a.nodes;
    char *data = al_ucfg_data_dir();
    char *sdir = state ? al_xstrdup(state) : al_xasprintf("%s/server", data);
    char *adir = state ? al_xasprintf("%s/agent", state)
                       : al_xasprintf("%s/agent", data);
    free(data);

    al_daemon_block(&a.d);

    al_server_opts_t so;
    al_server_opts_default(&so);
    so.listen = listen;
    so.state_dir = sdir;
    so.store = store;
    so.metrics_listen = a.metrics_listen;
    al_server_t *srv;
    char *cause = NULL;
    struct rlimit nofile;
    getrlimit(RLIMIT_NOFILE, &nofile);
    if (al_server_start(&so, &srv, &cause) != 0) {
        fprintf(stderr, "allot dev: %s\n", cause);
        free(cause);
        free(sdir);
        free(adir);
        return AL_EXIT_FAIL;
    }
    char host[128];
    snprintf(host, sizeof host, "%.*s", (int)(strrchr(listen, ':') - listen),
             listen);
    if (strcmp(host, "0.0.0.0") == 0 || host[0] == '\0' ||
        strcmp(host, "*") == 0)
        strcpy(host, "127.0.0.1");
    char *url = al_xasprintf("http://%s:%d", host, al_server_port(srv));

    /* The CLI's config: this server and its admin token. */
    char *tokpath = al_xasprintf("%s/admin-token", sdir), *tok = NULL;
    char *cfg = al_ucfg_path();
    size_t n;
    int status = AL_EXIT_OK;
    if (al_fs_read_file(tokpath, &tok, &n) != 0 ||
        (tok[strcspn(tok, "\r\n")] = '\0', al_ucfg_set(cfg, "server", url)) !=
            0 ||
        al_ucfg_set(cfg, "token", tok) != 0) {
        fprintf(stderr, "allot dev: cannot write %s\n", cfg);
        status = AL_EXIT_FAIL;
    }

    int nagents = 0;
    pid_t *agents = al_xcalloc((size_t)nodes, sizeof *agents);
    if (status == 0 && !a.no_agent) {
        char *join = al_xasprintf("%s/join-token", sdir);
        for (int i = 0; i < nodes; i++) {
            /* One node keeps the plain name and directory; several are
             * NAME-I, each with emulated GPUs and a directory of its own. */
            char *nm =
                nodes == 1 ? al_xstrdup(name) : al_xasprintf("%s-%d", name, i);
            char *dir =
                nodes == 1 ? al_xstrdup(adir) : al_xasprintf("%s/%s", adir, nm);
            const char *gpus = fake != NULL ? fake : DEV_FAKE_GPUS;
            pid_t pid =
                spawn_agent(url, join, nm, gpus, fake == NULL && nodes == 1,
                            dir, level, &a.d.old, &nofile);
            free(nm);
            free(dir);
            if (pid < 0) {
                fprintf(stderr, "allot dev: cannot start the agent\n");
                status = AL_EXIT_FAIL;
                break;
            }
            agents[nagents++] = pid;
        }
        free(join);
    }
    if (status == 0 && nagents > 0 && !wait_for_nodes(url, tok, nagents, 5000))
        fprintf(stderr, "allot dev: not every agent has registered yet\n");
    if (status == 0) {
        printf("allot dev: ready at %s\n"
               "  state:  %s\n"
               "  config: %s (server and admin token; the dashboard, "
               "%s/, logs in with the token in %s/admin-token)\n"
               "  try:    allot submit --gpus 1 -- nvidia-smi -L || "
               "allot submit -- echo hello; allot ls --all\n",
               url, sdir, cfg, url, sdir);
        if (nagents > 0)
            dev_admin_queue(url, tok, a.demo);
        fflush(stdout);
        if (a.demo && nagents > 0)
            run_demo(url, tok);
        al_daemon_wait(&a.d);
    }
    for (int i = 0; i < nagents; i++)
        kill(agents[i], SIGTERM);
    for (int i = 0; i < nagents; i++)
        waitpid(agents[i], NULL, 0);
    free(agents);
    al_server_stop(srv);
    al_daemon_unblock(&a.d);
    free(tok);
    free(tokpath);
    free(cfg);
    free(url);
    free(sdir);
    free(adir);
    return status;
}
