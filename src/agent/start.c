/*
 * start.c -- starting the tasks the controller wants: which waiting tasks
 * have room on their GPUs (whole ones, or thousandths of one shared by
 * fractional tasks), what each needs to start (command, script, GPU list,
 * environment), and the batches of requests to the spawner with their
 * answers, including a spawner that dies or hangs midway.
 *
 * May call: session.c (a session's task), task.c, env.c, spawner.c,
 * src/common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "fs.h"
#include "json.h"
#include "log.h"
#include "xmalloc.h"

/* A task whose start was asked of the spawner, and what its request
 * points into, until the reply comes. */
typedef struct launching {
    task_t *t;
    al__launch_t l;
    char **argv;
    al__env_t env;
    char *sp, *lp, *sp2;
    char *cgroups; /* the cgroup.procs files it joins, or NULL */
    char **cargv;  /* its container runtime's command, or NULL */
    char ident[96];
    al_buf_t gpus;
    bool sent;
} launching_t;

/* Prepares the start of t into x; false when t cannot start at all (it
 * has then failed). */
static bool
launch_prepare(agent_t *a, task_t *t, launching_t *x)
{
    json_t *s = t->spec;
    json_t *cmd = json_object_get(s, "command");
    size_t argc = json_array_size(cmd);
    if (argc == 0) {
        al__task_fail(a, t, "the job has no command");
        return false;
    }
    al__task_take_slot(a, t);
    memset(x, 0, sizeof *x);
    x->t = t;
    x->argv = al_xcalloc(argc + 1, sizeof *x->argv);
    for (size_t i = 0; i < argc; i++)
        x->argv[i] = (char *)json_string_value(json_array_get(cmd, i));
    /* A job script travels whole: write it beside the task's log and run
     * that copy (execvp() hands a file without "#!" to /bin/sh). */
    const char *script = al_json_str(s, "script", NULL);
    x->sp = al__task_file(a, t, "script");
    if (script != NULL) {
        t->script = true;
        if (al_fs_write_file(x->sp, script, strlen(script), 0700, 0) != 0)
            al_warn("task %llu.%d.%d: cannot write %s", t->job, t->index,
                    t->restart, x->sp);
        x->argv[0] = x->sp;
    }
    al_buf_init(&x->gpus);
    json_t *g = json_object_get(s, "gpus");
    for (size_t i = 0; i < json_array_size(g); i++) {
        /* Real devices by UUID, which CUDA accepts and which cannot be
         * confused by device ordering; emulated ones by index. */
        json_int_t d = json_integer_value(json_array_get(g, i));
        if (!a->plat.emulated && d >= 0 && d < a->plat.ngpus)
            al_buf_printf(&x->gpus, "%s%s", i ? "," : "", a->plat.gpus[d].uuid);
        else
            al_buf_printf(&x->gpus, "%s%lld", i ? "," : "", (long long)d);
    }
    if (a->cg.version != 0) {
        char name[64], *cause = NULL;
        al__cg_name(name, sizeof name, t->job, t->index, t->restart);
        al__cg_limits_t lim = {
            .cpu_milli = al_json_int(s, "cpu_milli", 0),
            .mem_bytes = al_json_int(s, "mem_bytes", 0),
            .devices = al_platform_minor_mask(&a->plat, t->devices),
            .ngpus = al_platform_minor_span(&a->plat),
        };
        if (al__cg_create(&a->cg, name, &lim, &x->cgroups, &cause) != 0) {
            al_error("task %llu.%d.%d: %s", t->job, t->index, t->restart,
                     cause);
            char *why = al_xasprintf("cannot confine the task: %s", cause);
            al__task_fail(a, t, why);
            free(why);
            free(cause);
            free(x->argv);
            free(x->sp);
            al_buf_fini(&x->gpus);
            return false;
        }
    }
    x->env = al__task_env(a, s, al_buf_cstr(&x->gpus));
    al__mps_task(a, t, s, &x->env);
    const char *user = a->run_as_user ? al_json_str(s, "user", NULL) : NULL;
    if (al_json_str(s, "image", NULL) != NULL)
        x->cargv = al__container_argv(a, t, s, x->argv, &x->env, &user);
    x->lp = al__task_file(a, t, "log");
    x->sp2 = al__task_file(a, t, "state");
    snprintf(x->ident, sizeof x->ident, "%llu %d %d", t->job, t->index,
             t->restart);
    x->l = (al__launch_t){
        .ident = x->ident,
        .argv = x->cargv != NULL ? x->cargv : x->argv,
        .cwd = al_json_str(s, "cwd", NULL),
        .envp = x->env.v,
        .log_path = x->lp,
        .state_path = x->sp2,
        .devices = t->devices,
        .user = user,
        .cgroups = x->cgroups,
    };
    return true;
}

static void
launch_free(launching_t *x)
{
    al__env_fini(&x->env);
    free(x->argv);
    free(x->sp);
    free(x->lp);
    free(x->sp2);
    free(x->cgroups);
    al__container_free(x->cargv);
    al_buf_fini(&x->gpus);
}

/*
 * x was sent to a spawner that died before answering: did it start the task
 * all the same?  Its record says so (al__launch() writes it right after
 * the fork).  Then the task is taken as adopted, as a restarted agent
 * takes its tasks: running if the process is still the same, else ended,
 * how unknown (SIGKILL), rather than started a second time.  Releases x
 * and returns true in that case.
 */
static bool
launched_before(agent_t *a, launching_t *x)
{
    task_t *t = x->t;
    char *data = NULL;
    size_t n;
    al__rec_t rec;
    bool mine = al_fs_read_file(x->sp2, &data, &n) == 0 &&
                al__rec_parse(data, &rec) && rec.job == t->job &&
                rec.index == t->index && rec.restart == t->restart &&
                rec.pid > 0;
    free(data);
    if (!mine)
        return false;
    al__task_adopt(a, t, rec.pid, rec.start);
    if (t->state == T_RUNNING) {
        t->log_looked = al_clock_mono_ms();
        t->log_quiet = true;
    }
    al_warn("task %llu.%d.%d: started by a spawner that died before saying "
            "so; adopted (%s)",
            t->job, t->index, t->restart, al__task_state_name(t->state));
    launch_free(x);
    return true;
}

/* Takes the spawner's answer for x (pid, or an error with cause, which it
 * frees) and releases x. */
static void
launch_finish(launching_t *x, pid_t pid, char *cause)
{
    task_t *t = x->t;
    if (pid < 0) {
        /* Not started: the next sync tries again. */
        al_error("task %llu.%d.%d: %s", t->job, t->index, t->restart,
                 cause ? cause : "not started");
    } else {
        t->pid = pid;
        t->state = T_RUNNING;
        t->log_looked = al_clock_mono_ms();
        t->log_quiet = true;
        al_info("task %llu.%d.%d started: pid %ld, gpus [%s]", t->job, t->index,
                t->restart, (long)pid, al_buf_cstr(&x->gpus));
    }
    free(cause);
    launch_free(x);
}

/* The spawner did not answer within its time limit: a start in the batch
 * hangs (its working directory or program on a file system that does not
 * answer).  Kills that start and the spawner (its running tasks come to
 * this process, see al__task_respawn()) and fails the task that hung: the
 * spawner starts a batch's tasks in order and writes each one's record once it
 * runs its program, so it is the first sent without a record.  Those
 * before it are adopted; those after it were never read and are sent
 * again, to the next spawner. */
static void
spawner_hung(agent_t *a, launching_t *batch, int n, const char *cause)
{
    pid_t *known = al_xcalloc((size_t)a->ntasks + 1, sizeof *known);
    size_t nknown = 0;
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].state == T_RUNNING && a->tasks[i].pid > 0)
            known[nknown++] = a->tasks[i].pid;
    al__spawner_kill_hung(&a->spawner, known, nknown);
    free(known);
    a->spawner.unread = 0;
    al__task_respawn(a);
    bool failed = false;
    for (int i = 0; i < n; i++) {
        launching_t *x = &batch[i];
        if (!x->sent || launched_before(a, x))
            continue;
        x->sent = false;
        if (failed)
            continue; /* sent again by launch_batch() */
        failed = true;
        al_error("task %llu.%d.%d: %s", x->t->job, x->t->index, x->t->restart,
                 cause);
        al__task_fail(a, x->t, cause);
        launch_free(x);
        x->t = NULL;
    }
}

/* Reads the spawner's answers for the n tasks of batch whose starts were
 * sent.  If the spawner is gone, starts another and asks it once more for
 * those left without an answer, one at a time, except those the dead one
 * had started (their records say so: launched_before()). */
static void
launch_batch(agent_t *a, launching_t *batch, int n)
{
    bool gone = false, hung = false;
    for (int i = 0; i < n && !hung; i++) {
        launching_t *x = &batch[i];
        char *cause = NULL;
        pid_t pid = AL_EUNAVAIL;
        if (x->sent && !gone)
            pid = al__spawner_result(&a->spawner, &cause);
        if (pid == AL_ETIMEDOUT) {
            spawner_hung(a, batch + i, n - i, cause); /* respawns */
            hung = true;
        } else if (pid == AL_EUNAVAIL) {
            gone = true;
            x->sent = false; /* to ask again below */
        } else {
            launch_finish(x, pid, cause);
            continue;
        }
        free(cause);
    }
    if (!gone && !hung)
        return;
    if (gone) {
        a->spawner.unread = 0;
        al__task_respawn(a);
    }
    for (int i = 0; i < n; i++) {
        if (batch[i].t == NULL || batch[i].sent ||
            launched_before(a, &batch[i]))
            continue;
        char *cause = NULL;
        pid_t pid = al__spawner_launch(&a->spawner, &batch[i].l, &cause);
        if (pid == AL_ETIMEDOUT) {
            batch[i].sent = true;
            spawner_hung(a, &batch[i], 1, cause);
            free(cause);
            continue;
        }
        launch_finish(&batch[i], pid, cause);
    }
}

/* Adds (sign 1) or takes (-1) t's share of each of its GPUs to used. */
void
al__share_count(int used[64], const task_t *t, int sign)
{
    for (int d = 0; d < 64; d++)
        if (t->devices & ((uint64_t)1 << d))
            used[d] += sign * t->gpu_share;
}

bool
al__share_fits(const int used[64], const task_t *t)
{
    bool fits = true;
    for (int d = 0; d < 64; d++)
        if ((t->devices & ((uint64_t)1 << d)) && used[d] > 1000)
            fits = false;
    return fits;
}

/* Starts the waiting tasks that are wanted and whose GPUs have room: a
 * task being stopped keeps its GPUs until it has exited, and fractional
 * tasks placed on one GPU run beside each other.  The requests go to the
 * spawner in batches and their replies are read together: a round trip
 * between the two processes per task was a good part of a short task's
 * cost. */
void
al__start_tasks(agent_t *a)
{
    launching_t batch[AL__SPAWN_BATCH];
    int n = 0;
    int used[64] = { 0 }; /* thousandths of each GPU in use */
    for (int k = 0; k < a->ntasks; k++)
        if (a->tasks[k].state == T_RUNNING)
            al__share_count(used, &a->tasks[k], 1);
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->state != T_WAITING || !t->desired)
            continue;
        al__share_count(used, t, 1);
        if (!al__share_fits(used, t) || !launch_prepare(a, t, &batch[n])) {
            al__share_count(used, t, -1);
            continue;
        }
        if (al__session_mode(t->spec) != 0) {
            /* An interactive session's task: the agent holds its
             * terminal, so it starts it itself (session.c). */
            char *cause = NULL;
            pid_t pid = al__session_launch(a, t, &batch[n].l, &cause);
            launch_finish(&batch[n], pid, cause);
            if (pid < 0)
                al__share_count(used, t, -1);
            continue;
        }
        int rc = al__spawner_send(&a->spawner, &batch[n].l);
        if (rc == AL_ELIMIT) {
            launch_finish(&batch[n], -1,
                          al_xasprintf("the task's request is too large"));
            al__share_count(used, t, -1);
            continue;
        }
        batch[n].sent = rc == 0;
        if (++n == AL__SPAWN_BATCH) {
            launch_batch(a, batch, n);
            n = 0;
        }
    }
    launch_batch(a, batch, n);
}
