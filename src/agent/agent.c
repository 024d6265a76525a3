/*
 * agent.c -- `allot agent`: start-up (options, the state directory and its
 * lock, the spawner), adopting what an earlier agent left there, the
 * signals, and the loop that reaps tasks and registers or syncs.
 *
 * Single-threaded.  A SIGCHLD handler writes a byte to a self-pipe; the
 * pipe also interrupts the long-poll, so a task's exit is reported within
 * milliseconds.  The stop signals write to it and to a second pipe, which
 * alone interrupts a sync that a task's end may not (see al__sync_once()).
 * run() hands both to the rest of the agent through agent_t.
 *
 * What the rest owns is mapped in agent_int.h: the sync with the
 * controller (sync.c), starting tasks (start.c, env.c), the task table
 * and its files (task.c), the spawner (spawner.c, launch.c) and the
 * machine (platform.h).
 *
 * May call: every file of the agent, src/common.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "agent_cmd.h"
#include "agent_int.h"
#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "daemon.h"
#include "fs.h"
#include "http.h"
#include "json.h"
#include "labels.h"
#include "log.h"
#include "opt.h"
#include "platform.h"
#include "tls.h"
#include "ucfg.h"
#include "xmalloc.h"

static int sig_pipe[2] = { -1, -1 };
/* Written to by the stop signals only: what interrupts a sync that is not
 * to be interrupted by a task's end (see al__sync_once()). */
static int stop_pipe[2] = { -1, -1 };
static volatile sig_atomic_t stopping;

static void
on_sigchld(int sig)
{
    int e = errno;
    ssize_t w = write(sig_pipe[1], "c", 1);
    (void)w;
    errno = e;
}

static void
on_stop(int sig)
{
    int e = errno;
    stopping = 1;
    /* Nothing to do if a write fails: the pipes are non-blocking and a
     * byte already waiting wakes the loop as well. */
    ssize_t w1 = write(sig_pipe[1], "s", 1);
    ssize_t w2 = write(stop_pipe[1], "s", 1);
    (void)w1;
    (void)w2;
    errno = e;
}

static void
drain_pipe(void)
{
    char buf[256];
    while (read(sig_pipe[0], buf, sizeof buf) > 0)
        ;
}

/* Sleeps up to ms, waking early on a child's exit or a stop signal. */
static void
nap(int64_t ms)
{
    struct pollfd p = { sig_pipe[0], POLLIN, 0 };
    poll(&p, 1, (int)ms);
}

/* Adopts the tasks an earlier agent left in the state directory: the
 * records (see AL__REC_LEN) of slots in use. */
static void
adopt(agent_t *a)
{
    DIR *d = opendir(a->task_dir);
    if (d == NULL)
        return;
    struct dirent *e;
    int maxslot = -1;
    char *used = NULL;
    size_t nused = 0;
    while ((e = readdir(d)) != NULL) {
        int slot;
        if (!al__task_slot_parse(e->d_name, &slot))
            continue;
        if (slot > maxslot)
            maxslot = slot;
        char *p = al_xasprintf("%s/%s", a->task_dir, e->d_name), *data = NULL;
        size_t n = 0;
        al__rec_t rec;
        bool ok = al_fs_read_file(p, &data, &n) == 0 && n >= AL__REC_LEN &&
                  al__rec_parse(data, &rec);
        free(data);
        free(p);
        if (!ok)
            continue; /* free (or unreadable): reused */
        unsigned long long job = rec.job, devices = rec.devices;
        long index = rec.index, restart = rec.restart, pid = rec.pid;
        long long start = rec.start;
        if (used == NULL || (size_t)slot >= nused) {
            size_t nn = (size_t)slot + 64;
            used = al_xrealloc(used, nn);
            memset(used + nused, 0, nn - nused);
            nused = nn;
        }
        used[slot] = 1;
        task_t *t = al__task_add(a, job, (int)index, (int)restart);
        t->slot = slot;
        t->devices = devices;
        t->script = true; /* it may have one */
        al__task_adopt(a, t, pid, start);
        al_info("adopted task %llu.%ld.%ld (%s)", job, index, restart,
                al__task_state_name(t->state));
    }
    closedir(d);
    a->nslots = maxslot + 1;
    for (int i = maxslot; i >= 0; i--)
        if ((size_t)i >= nused || !used[i])
            al__task_free_slot(a, i);
    free(used);
}

/* ------------------------------------------------------------------ */
/* `allot agent`                                                      */

/* Moves to the next controller of the group, on new connections. */
static void
next_controller(agent_t *a)
{
    a->cur_url = (a->cur_url + 1) % a->nurls;
    a->url = a->urls[a->cur_url];
    for (int i = 0; i < 2; i++) {
        al_http_conn_close(&a->conn[i]);
        al_http_conn_init(&a->conn[i], &a->url);
        a->conn[i].keep_interrupted = true;
    }
    al_info("trying the controller at %s:%s", a->url.host, a->url.port);
}

static int
run(agent_t *a)
{
    int64_t backoff = 200;
    a->wake_fd = sig_pipe[0];
    a->wake_write = sig_pipe[1];
    a->stop_fd = stop_pipe[0];
    while (!stopping) {
        al__task_reap(a);
        al__mps_check(a);
        al__fence_check(a);
        al__task_escalate(a);
        int rc;
        if (!a->registered) {
            rc = al__sync_register(a);
            if (rc == AL_EAUTH)
                return AL_EXIT_FAIL;
        } else {
            rc = al__sync_once(a);
        }
        if (rc == AL_EBUSY) {
            drain_pipe();
            continue;
        }
        if (rc != 0 && a->nurls > 1) {
            /* The next controller of the group: the active one may have
             * changed.  A round of them all waits a little. */
            next_controller(a);
            if (a->cur_url == 0) {
                nap(backoff);
                drain_pipe();
                backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
            }
        } else if (rc != 0) {
            nap(backoff);
            drain_pipe();
            /* Fencing checks the controller's silence between tries. */
            int64_t most = a->fence_ms > 0 ? 1000 : 5000;
            backoff = backoff * 2 > most ? most : backoff * 2;
        } else {
            backoff = 200;
        }
    }
    return 0;
}

static int
setup_signals(void)
{
    if (al__chld_pipe(sig_pipe, on_sigchld) != 0 || pipe(stop_pipe) != 0)
        return AL_EIO;
    for (int i = 0; i < 2; i++) {
        fcntl(stop_pipe[i], F_SETFL, fcntl(stop_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(stop_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    al_daemon_catch(on_stop);
    return 0;
}

/* `allot agent --probe`: what this node would register, and one sample. */
static int
probe_main(const char *fake, const char *fallback, const char *name,
           const char *cgroup_root, const char *cgroup_devices)
{
    al_platform_info_t plat;
    char *cause = NULL;
    if (al_platform_probe(&plat) != 0) {
        fprintf(stderr, "allot agent: cannot read the machine's resources\n");
        return AL_EXIT_FAIL;
    }
    if (fake == NULL && plat.ngpus == 0)
        fake = fallback;
    if (fake != NULL &&
        al_platform_fake_gpus(&plat, fake, name ? name : plat.hostname,
                              &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        return AL_EXIT_USAGE;
    }
    json_t *gpus = json_array();
    for (int i = 0; i < plat.ngpus; i++) {
        const al_gpu_info_t *g = &plat.gpus[i];
        al_gpu_sample_t t;
        json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:i, s:i}", "index", i,
                              "uuid", g->uuid, "model", g->model, "mem_bytes",
                              (json_int_t)g->mem_bytes, "numa", g->numa,
                              "nvlink", g->nvlink);
        if (al_platform_sample(&plat, i, &t) == 0)
            json_object_set_new(
                o, "sample",
                json_pack("{s:i, s:i, s:I, s:i, s:I}", "util", t.util_pct,
                          "mem_util", t.mem_util_pct, "mem_used",
                          (json_int_t)t.mem_used, "temp_c", t.temp_c,
                          "power_mw", (json_int_t)t.power_mw));
        json_array_append_new(gpus, o);
    }
    json_t *out = json_pack(
        "{s:s, s:I, s:I, s:b, s:o}", "hostname", plat.hostname, "cpu_milli",
        (json_int_t)plat.cpu_milli, "mem_bytes", (json_int_t)plat.mem_bytes,
        "emulated", plat.emulated, "gpus", gpus);
    json_object_set_new(out, "cgroups",
                        al__cg_probe_json(cgroup_root, cgroup_devices));
    char *text = json_dumps(out, JSON_INDENT(2));
    puts(text);
    free(text);
    json_decref(out);
    al_platform_close(&plat);
    return AL_EXIT_OK;
}

/* The command line's rc after --cgroup-devices' word is checked: a word
 * not known is a usage error, said here. */
static int
check_devices(int rc, const char *word)
{
    if (rc != 0 || al__cg_devices_ok(word))
        return rc;
    fprintf(stderr,
            "allot agent: --cgroup-devices wants auto, bpf or none, not "
            "\"%s\"\n",
            word);
    return AL_EXIT_USAGE;
}

/* Says at start how tasks are kept off the other GPUs, or that they are
 * not. */
static void
say_devices(const al__cg_t *cg)
{
    if (cg->devs == AL__CG_DEVS_BPF)
        al_info("GPU devices: a BPF device program per task");
    else if (cg->devs == AL__CG_DEVS_NONE)
        al_warn("device isolation is not enforced: a task can open every "
                "GPU's device node (%s)",
                cg->dev_note);
}

int
al_agent_main(int argc, char **argv)
{
    agent_args_t args;
    memset(&args, 0, sizeof args);
    args.token = getenv("ALLOT_JOIN_TOKEN");
    args.launch_timeout = 10000;
    args.telemetry_ms = 10000;
    int rc = al_daemon_parse(&args.d, &al_agent_cmd, &args, argc, argv);
    rc = check_devices(rc, args.cgroup_devices);
    if (rc == 0 && args.probe && !args.d.help)
        return probe_main(args.fake, args.fallback, args.name, args.cgroup_root,
                          args.cgroup_devices);
    if (!al_daemon_begin(&args.d, &al_agent_cmd, rc, args.server != NULL, &rc))
        return rc;
    const char *server = args.server, *token = args.token,
               *token_file = args.token_file, *name = args.name,
               *addr = args.addr, *state = args.state, *fake = args.fake,
               *fallback = args.fallback, *cpus = args.cpus;
    bool no_run_as_user = args.no_run_as_user, run_as_user = args.run_as_user;
    int64_t launch_timeout = args.launch_timeout;
    int64_t telemetry_ms = args.telemetry_ms;

    agent_t a;
    memset(&a, 0, sizeof a);
    a.grace_ms = 10000;
    a.telemetry_ms = telemetry_ms;
    a.fence_ms = args.fence_ms;
    a.run_as_user = geteuid() == 0 && !no_run_as_user;
    if (run_as_user && no_run_as_user) {
        fputs("allot agent: --run-as-user and --no-run-as-user conflict\n",
              stderr);
        return AL_EXIT_USAGE;
    }
    char *cause = NULL, *filetoken = NULL;
    if (al_url_parse_list(server, a.urls, &a.nurls, &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        return AL_EXIT_USAGE;
    }
    a.url = a.urls[0];
    a.server = server;
    al_tls_set_ca(args.ca);
    for (int i = 0; i < 2; i++) {
        al_http_conn_init(&a.conn[i], &a.url);
        a.conn[i].keep_interrupted = true; /* syncs may be sent again */
    }
    if (token_file != NULL) {
        size_t n;
        if (al_fs_read_file(token_file, &filetoken, &n) != 0) {
            fprintf(stderr, "allot agent: cannot read %s\n", token_file);
            return AL_EXIT_FAIL;
        }
        filetoken[strcspn(filetoken, "\r\n")] = '\0';
        token = filetoken;
    }
    if (token == NULL) {
        fprintf(stderr, "allot agent: no join token: pass --join-token or "
                        "set ALLOT_JOIN_TOKEN (the server wrote it to "
                        "STATE/join-token)\n");
        return AL_EXIT_USAGE;
    }
    a.token = token;
    if (al_platform_probe(&a.plat) != 0) {
        fprintf(stderr, "allot agent: cannot read the machine's resources\n");
        free(filetoken);
        return AL_EXIT_FAIL;
    }
    int lock_fd = -1;
    a.name = al_xstrdup(name ? name : a.plat.hostname);
    /* Other nodes reach this one (MASTER_ADDR of a gang) by its hostname
     * unless told otherwise. */
    a.addr = al_xstrdup(addr ? addr : a.plat.hostname);
    if (fake == NULL && a.plat.ngpus == 0)
        fake = fallback;
    if (fake != NULL &&
        al_platform_fake_gpus(&a.plat, fake, a.name, &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        rc = AL_EXIT_USAGE;
        goto fail;
    }
    if (args.pool != NULL && !al_pool_valid(args.pool)) {
        fprintf(stderr, "allot agent: --pool wants a name (letters, digits, "
                        "'-', '_', '.')\n");
        rc = AL_EXIT_USAGE;
        goto fail;
    }
    a.pool = args.pool != NULL ? al_xstrdup(args.pool) : NULL;
    if (args.labels != NULL &&
        al_labels_parse(args.labels, false, &a.labels, &cause) != 0) {
        fprintf(stderr, "allot agent: --label: %s\n", cause);
        free(cause);
        rc = AL_EXIT_USAGE;
        goto fail;
    }
    if (cpus != NULL) {
        double c = strtod(cpus, NULL);
        if (c <= 0) {
            fprintf(stderr, "allot agent: --cpus wants a positive number\n");
            rc = AL_EXIT_USAGE;
            goto fail;
        }
        a.plat.cpu_milli = (int64_t)(c * 1000);
    }
    if (state != NULL) {
        a.state_dir = al_xstrdup(state);
    } else {
        char *d = al_ucfg_data_dir();
        a.state_dir = al_xasprintf("%s/agent-%s", d, a.name);
        free(d);
    }
    a.task_dir = al_xasprintf("%s/tasks", a.state_dir);
    if (al_fs_mkdir_p(a.task_dir, 0700) != 0) {
        fprintf(stderr, "allot agent: cannot create %s: %s\n", a.task_dir,
                strerror(errno));
        rc = AL_EXIT_FAIL;
        goto fail;
    }
    /* Two agents on one state directory would both own its task slots. */
    if (al_fs_lock_dir(a.state_dir, "agent", &lock_fd, &cause) != 0) {
        fprintf(stderr, "allot agent: %s\n", cause);
        free(cause);
        rc = AL_EXIT_FAIL;
        goto fail;
    }
    if (setup_signals() != 0) {
        fprintf(stderr, "allot agent: cannot set up signals\n");
        rc = AL_EXIT_FAIL;
        goto fail;
    }
    if (args.cgroup_root != NULL) {
        if (al__cg_open(&a.cg, args.cgroup_root, args.gpu_dev_dir,
                        args.cgroup_devices, &cause) != 0) {
            fprintf(stderr, "allot agent: --cgroup-root: %s\n", cause);
            free(cause);
            rc = AL_EXIT_FAIL;
            goto fail;
        }
        a.cg.pids_max = args.pids_max;
        al_info("tasks confined in cgroup v%d under %s", a.cg.version,
                a.cg.version == 2 ? a.cg.dir[0] : a.cg.dir[AL__CG_MEM]);
        say_devices(&a.cg);
    }
    a.podman = args.podman != NULL ? args.podman : "podman";
    a.apptainer = args.apptainer != NULL ? args.apptainer : "apptainer";
    for (const char *p = args.container_args; p != NULL && *p != '\0';) {
        p += strspn(p, " ");
        size_t len = strcspn(p, " ");
        if (len == 0)
            break;
        a.container_args = al_xreallocarray(
            a.container_args, a.ncontainer_args + 1, sizeof *a.container_args);
        a.container_args[a.ncontainer_args++] = al_xstrndup(p, len);
        p += len;
    }
    /* A confined task's container goes under its cgroup, when podman can
     * name that cgroup with one path (see al__cg_t.path). */
    a.cg_parent = a.cg.path;
    if (a.cg.version != 0 && a.cg.path == NULL)
        al_warn("containers of confined tasks are not under their tasks' "
                "cgroups: the cgroup path differs between hierarchies (give "
                "--cgroup-root an absolute path)");
    a.mps.on = args.mps;
    a.mps.control =
        (char *)(args.mps_control != NULL ? args.mps_control
                                          : "nvidia-cuda-mps-control");
    a.spawner.pid = -1;
    a.spawner.sock = a.spawner.exit_fd = -1;
    a.spawner.timeout_ms = launch_timeout;
    /* Tasks orphaned by a spawner that died come to the agent, which then
     * learns how they end (see al__task_reap() in task.c). */
    if (al_platform_subreaper() != 0)
        al_warn("cannot become a child subreaper: the ends of tasks whose "
                "spawner dies will be unknown");
    if (al__spawner_start(&a.spawner, sig_pipe[1]) != 0) {
        fprintf(stderr, "allot agent: cannot start the spawner: %s\n",
                strerror(errno));
        return AL_EXIT_FAIL;
    }
    adopt(&a);
    al__mps_adopt(&a);
    /* What an earlier agent left: cgroups of tasks that are over. */
    al__task_sweep(&a, true);
    rc = run(&a);
    al__spawner_stop(&a.spawner);
    al_http_conn_close(&a.conn[0]);
    al_http_conn_close(&a.conn[1]);
    /* Tasks keep running in their own sessions; a restarted agent adopts
     * them from the state directory. */
    al_info("stopping; %d task(s) left to the next agent", a.ntasks);
    for (int i = 0; i < a.ntasks; i++) {
        json_decref(a.tasks[i].spec);
        free(a.tasks[i].error);
    }
    free(a.tasks);
    free(a.free_slots);
    free(a.logbuf);
fail: /* what the set-up took, on the way out or after it failed */
    al_platform_close(&a.plat);
    al__cg_close(&a.cg);
    al__health_fini(&a);
    for (size_t i = 0; i < a.ncontainer_args; i++)
        free(a.container_args[i]);
    free(a.container_args);
    free(a.name);
    free(a.addr);
    free(a.pool);
    free(a.labels);
    free(a.state_dir);
    free(a.task_dir);
    free(filetoken);
    if (lock_fd >= 0)
        close(lock_fd);
    return rc;
}
