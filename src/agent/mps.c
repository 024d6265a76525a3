/*
 * mps.c -- enforced GPU fractions through NVIDIA MPS (--mps).  For each
 * GPU that has fractional tasks the agent runs one MPS control daemon,
 * `nvidia-cuda-mps-control -f` (in the foreground: the agent is its
 * parent, and restarts it when it dies while tasks need it), with
 * CUDA_VISIBLE_DEVICES naming that GPU and its pipe and log directories
 * under STATE/mps/gpuN.  Each fractional task gets that pipe directory,
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (its share of the SMs) and
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (its share of the GPU's memory, or the
 * memory its job asked for), which the MPS server enforces: an allocation
 * past it fails inside the task.  When the last fractional task on a GPU
 * has ended, the daemon is told to quit (`quit` on the control program's
 * standard input, as NVIDIA documents).
 *
 * A daemon's pid and start time are kept in STATE/mps/gpuN/pid, so that
 * a restarted agent finds the daemons its predecessor left (still serving
 * the tasks it adopts) rather than starting a second one on the same
 * pipe directory.
 *
 * May call: the platform (platform.h: a process's start time), src/common
 * (files, allocation, logging).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_int.h"
#include "clock.h"
#include "fs.h"
#include "json.h"
#include "log.h"
#include "platform.h"
#include "xmalloc.h"

extern char **environ;

#define RESTART_MS 1000 /* the least time between two starts on a GPU */

static char *
gpu_dir(const agent_t *a, int d, const char *sub)
{
    return al_xasprintf("%s/mps/gpu%d%s%s", a->state_dir, d, sub ? "/" : "",
                        sub ? sub : "");
}

/* CUDA_VISIBLE_DEVICES for GPU d: its UUID on real GPUs, else its index. */
static void
visible(const agent_t *a, int d, char *buf, size_t len)
{
    if (!a->plat.emulated && d < a->plat.ngpus)
        snprintf(buf, len, "%s", a->plat.gpus[d].uuid);
    else
        snprintf(buf, len, "%d", d);
}

/* Runs the control program with argv[1] (NULL for none) and the daemon's
 * environment for GPU d; stdin_fd its standard input (or -1).  The pid,
 * or -1. */
static pid_t
spawn(agent_t *a, int d, const char *arg, int stdin_fd)
{
    char *pipe = gpu_dir(a, d, "pipe"), *log = gpu_dir(a, d, "log");
    char dev[128];
    visible(a, d, dev, sizeof dev);
    al__env_t e = { NULL, 0, 0, 0 };
    for (char **p = environ; *p != NULL; p++)
        if (strncmp(*p, "ALLOT_", 6) != 0)
            al__env_push(&e, *p);
    e.borrowed = e.n;
    al__env_push(&e, al__env_entry("CUDA_VISIBLE_DEVICES", dev));
    al__env_push(&e, al__env_entry("CUDA_MPS_PIPE_DIRECTORY", pipe));
    al__env_push(&e, al__env_entry("CUDA_MPS_LOG_DIRECTORY", log));
    al__env_dedup(&e);
    char *argv[] = { a->mps.control, (char *)arg, NULL };
    char *out = al_xasprintf("%s/control.log", log);
    int rc;
    pid_t pid = al__spawn_aside(a->mps.control, argv, e.v, stdin_fd, out, &rc);
    al__env_fini(&e);
    free(out);
    free(pipe);
    free(log);
    if (rc != 0) {
        al_error("MPS: cannot run %s: %s", a->mps.control, strerror(rc));
        return -1;
    }
    return pid;
}

/* Writes GPU d's daemon's pid and start time to its pid file. */
static void
save_pid(agent_t *a, int d)
{
    char *p = gpu_dir(a, d, "pid"), text[64];
    int n = snprintf(text, sizeof text, "%ld %lld\n", (long)a->mps.pid[d],
                     (long long)a->mps.start[d]);
    if (al_fs_write_file(p, text, (size_t)n, 0644, 0) != 0)
        al_warn("MPS: cannot write %s", p);
    free(p);
}

/* Starts GPU d's control daemon and waits (a few seconds at most) for its
 * control pipe, which clients need. */
static void
start_daemon(agent_t *a, int d)
{
    int64_t now = al_clock_mono_ms();
    if (a->mps.tried[d] != 0 && now - a->mps.tried[d] < RESTART_MS)
        return;
    a->mps.tried[d] = now;
    char *pipe = gpu_dir(a, d, "pipe"), *log = gpu_dir(a, d, "log");
    if (al_fs_mkdir_p(pipe, 0755) != 0 || al_fs_mkdir_p(log, 0755) != 0)
        al_warn("MPS: cannot create %s: %s", pipe, strerror(errno));
    pid_t pid = spawn(a, d, "-f", -1);
    if (pid > 0) {
        int64_t st = -1;
        al_platform_proc_state(pid, &st);
        a->mps.pid[d] = pid;
        a->mps.start[d] = st;
        a->mps.adopted[d] = false;
        save_pid(a, d);
        al_info("MPS: control daemon for GPU %d started (pid %ld)", d,
                (long)pid);
        char *ctl = al_xasprintf("%s/control", pipe);
        struct stat sb;
        for (int i = 0; i < 100 && stat(ctl, &sb) != 0; i++) {
            struct timespec ts = { 0, 50L * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
        free(ctl);
    }
    free(pipe);
    free(log);
}

/* Tells GPU d's daemon to quit ("quit" on the control program's stdin). */
static void
stop_daemon(agent_t *a, int d)
{
    int p[2];
    if (pipe(p) == 0) {
        ssize_t w = write(p[1], "quit\n", 5);
        (void)w;
        close(p[1]);
        spawn(a, d, NULL, p[0]); /* reaped by the loop like any child */
        close(p[0]);
    }
    al_info("MPS: control daemon for GPU %d told to quit (pid %ld)", d,
            (long)a->mps.pid[d]);
    a->mps.pid[d] = 0;
    char *f = gpu_dir(a, d, "pid");
    unlink(f);
    free(f);
}

void
al__mps_adopt(agent_t *a)
{
    if (!a->mps.on)
        return;
    for (int d = 0; d < a->plat.ngpus && d < AL_PLATFORM_MAX_GPUS; d++) {
        char *f = gpu_dir(a, d, "pid"), *data = NULL;
        size_t n;
        long pid = 0;
        long long start = -1;
        char *end = NULL;
        if (al_fs_read_file(f, &data, &n) == 0) {
            pid = strtol(data, &end, 10);
            start = end != data ? strtoll(end, NULL, 10) : -1;
        }
        if (pid > 0 && start >= 0) {
            int64_t now = -1;
            if (al_platform_proc_state(pid, &now) == 1 && now == start) {
                a->mps.pid[d] = (pid_t)pid;
                a->mps.start[d] = start;
                a->mps.adopted[d] = true;
                al_info("MPS: control daemon for GPU %d found running "
                        "(pid %ld)",
                        d, pid);
            }
        }
        free(data);
        free(f);
    }
}

bool
al__mps_reaped(agent_t *a, pid_t pid, int status)
{
    for (int d = 0; d < AL_PLATFORM_MAX_GPUS; d++)
        if (a->mps.pid[d] == pid && pid > 0) {
            al_warn("MPS: control daemon for GPU %d exited (status %d)", d,
                    status);
            a->mps.pid[d] = 0;
            return true;
        }
    return false;
}

/* Whether a fractional task runs, or is about to, on GPU d. */
static bool
needed(const agent_t *a, int d)
{
    for (int i = 0; i < a->ntasks; i++) {
        const task_t *t = &a->tasks[i];
        if (t->gpu_share < 1000 && (t->devices & ((uint64_t)1 << d)) &&
            (t->state == T_RUNNING || (t->state == T_WAITING && t->desired)))
            return true;
    }
    return false;
}

void
al__mps_check(agent_t *a)
{
    if (!a->mps.on)
        return;
    for (int d = 0; d < a->plat.ngpus && d < AL_PLATFORM_MAX_GPUS; d++) {
        pid_t pid = a->mps.pid[d];
        if (pid > 0 && a->mps.adopted[d]) {
            int64_t st = -1;
            if (al_platform_proc_state(pid, &st) != 1 ||
                st != a->mps.start[d]) {
                al_warn("MPS: control daemon for GPU %d is gone", d);
                a->mps.pid[d] = pid = 0;
            }
        }
        bool need = needed(a, d);
        if (need && pid == 0)
            start_daemon(a, d); /* first use, or it died: supervised */
        else if (!need && pid > 0 && a->mps.synced)
            stop_daemon(a, d); /* (adopted tasks' shares known) */
    }
}

void
al__mps_task(agent_t *a, const task_t *t, json_t *s, al__env_t *e)
{
    if (!a->mps.on || t->gpu_share >= 1000 || t->devices == 0)
        return;
    int d = __builtin_ctzll(t->devices);
    if (d >= a->plat.ngpus)
        return;
    if (a->mps.pid[d] == 0)
        start_daemon(a, d);
    char *pipe = gpu_dir(a, d, "pipe"), *log = gpu_dir(a, d, "log");
    char num[64];
    al__env_push(e, al__env_entry("CUDA_MPS_PIPE_DIRECTORY", pipe));
    al__env_push(e, al__env_entry("CUDA_MPS_LOG_DIRECTORY", log));
    int pct = (t->gpu_share + 5) / 10;
    snprintf(num, sizeof num, "%d", pct < 1 ? 1 : pct);
    al__env_push(e, al__env_entry("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", num));
    /* Its memory: what its job asked for, else its share of the GPU's.
     * Device 0 is the one GPU it sees. */
    int64_t mem = al_json_int(s, "gpu_mem", 0);
    if (mem <= 0)
        mem = a->plat.gpus[d].mem_bytes * t->gpu_share / 1000;
    snprintf(num, sizeof num, "0=%lldM", (long long)(mem >> 20));
    al__env_push(e, al__env_entry("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", num));
    al__env_dedup(e);
    free(pipe);
    free(log);
}
