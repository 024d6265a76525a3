/*
 * cli_dev.c -- `allot dev`: a controller and one agent on this machine (or
 * several, each an emulated node, with --nodes N).
 * The controller runs in this process; the agent is this same program run
 * as `allot agent` in a child process (fork and exec at once).  State lives
 * under the user's data directory; the admin token and URL go to the user's
 * config so the CLI works at once.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "clock.h"
#include "fs.h"
#include "json.h"
#include "log.h"
#include "server.h"
#include "ucfg.h"
#include "xmalloc.h"

#define DEV_FAKE_GPUS "8xH100-80GB"

static const char dev_usage[] =
    "usage: allot dev [--listen HOST:PORT] [--state DIR] [--fake-gpus "
    "NxMODEL]\n"
    "                 [--name NODE] [--nodes N] [--no-agent] [--demo]\n"
    "                 [--store URI] [--log-level L]\n"
    "Starts a controller and an agent (with the GPUs NVML finds, else\n"
    "emulated " DEV_FAKE_GPUS ", or those of --fake-gpus), writes the\n"
    "server URL and admin token to your config file and runs until\n"
    "interrupted.  --nodes N starts N agents, nodes NODE-0 .. NODE-N-1,\n"
    "each with emulated GPUs (a cluster on one machine).  --demo\n"
    "also creates three queues and a small workload that shows idle GPUs\n"
    "lent to one queue and reclaimed by another.  --store keeps the\n"
    "controller's state in PostgreSQL (see allot server --help).\n";

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
        if (!demo_call(&u, token, "POST", "/v1/queues", q))
            return;
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
    pid_t pid = fork();
    if (pid == 0) {
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
al_cli_dev(int argc, char **argv)
{
    const char *listen = "127.0.0.1:7070", *state = NULL, *fake = NULL,
               *name = "local", *level = "info", *store = NULL;
    bool no_agent = false, demo = false, help = false;
    int64_t nodes = 1;
    const al_opt_t opts[] = {
        { .name = "--listen", .kind = AL_OPT_STR, .dst = &listen },
        { .name = "--state", .kind = AL_OPT_STR, .dst = &state },
        { .name = "--store", .kind = AL_OPT_STR, .dst = &store },
        { .name = "--fake-gpus", .kind = AL_OPT_STR, .dst = &fake },
        { .name = "--name", .kind = AL_OPT_STR, .dst = &name },
        { .name = "--nodes",
          .kind = AL_OPT_INT,
          .dst = &nodes,
          .min = 1,
          .max = 256 },
        { .name = "--no-agent", .kind = AL_OPT_FLAG, .dst = &no_agent },
        { .name = "--demo", .kind = AL_OPT_FLAG, .dst = &demo },
        { .name = "--log-level", .kind = AL_OPT_STR, .dst = &level },
        { .name = "--help", .kind = AL_OPT_FLAG, .dst = &help },
        { .name = NULL },
    };
    int npos,
        rc = al_opt_parse("dev", NULL, opts, argc, argv, false, NULL, 0, &npos);
    int lvl = al_log_level_parse(level);
    if (rc != 0 || help || lvl < 0) {
        fputs(dev_usage, help ? stdout : stderr);
        return help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    al_log_setup("dev", (al_log_level_t)lvl);
    char *data = al_ucfg_data_dir();
    char *sdir = state ? al_xstrdup(state) : al_xasprintf("%s/server", data);
    char *adir = state ? al_xasprintf("%s/agent", state)
                       : al_xasprintf("%s/agent", data);
    free(data);

    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);

    al_server_opts_t so;
    al_server_opts_default(&so);
    so.listen = listen;
    so.state_dir = sdir;
    so.store = store;
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
    if (status == 0 && !no_agent) {
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
                            dir, level, &old, &nofile);
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
               "  config: %s (server and admin token)\n"
               "  try:    allot submit --gpus 1 -- nvidia-smi -L || "
               "allot submit -- echo hello; allot ls --all\n",
               url, sdir, cfg);
        fflush(stdout);
        if (demo && nagents > 0)
            run_demo(url, tok);
        int sig;
        sigwait(&set, &sig);
    }
    for (int i = 0; i < nagents; i++)
        kill(agents[i], SIGTERM);
    for (int i = 0; i < nagents; i++)
        waitpid(agents[i], NULL, 0);
    free(agents);
    al_server_stop(srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(tok);
    free(tokpath);
    free(cfg);
    free(url);
    free(sdir);
    free(adir);
    return status;
}
