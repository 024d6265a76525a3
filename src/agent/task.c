/*
 * task.c -- the agent's task table: tasks keyed by (job, task index,
 * restart count), their file slots under STATE/tasks (SLOT.log,
 * SLOT.state, SLOT.script; a slot is reused once the controller has its
 * task's exit and whole log), their records on disk (see AL__REC_LEN), and
 * how they end: the spawner's reports, reaping orphans (the agent is a
 * child subreaper), polling adopted tasks, stopping (SIGTERM, SIGKILL after
 * the grace period), and a new spawner when the old one is gone.
 *
 * May call: session.c (a session task's end, an exec's), spawner.c,
 * launch.c (records), the platform (platform.h),
 * src/common.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_int.h"
#include "clock.h"
#include "core/error.h"
#include "fs.h"
#include "log.h"
#include "platform.h"
#include "xmalloc.h"

#define RESPAWN_MS 1000 /* the least time between two spawner starts */

const char *
al__task_state_name(int state)
{
    static const char *const names[] = {
        [T_WAITING] = "waiting", [T_RUNNING] = "running", [T_EXITED] = "exited"
    };
    return names[state];
}

char *
al__task_file(const agent_t *a, const task_t *t, const char *ext)
{
    return al_xasprintf("%s/%d.%s", a->task_dir, t->slot, ext);
}

/* Gives t a slot: a free one, else a new one. */
void
al__task_take_slot(agent_t *a, task_t *t)
{
    if (t->slot >= 0)
        return;
    t->slot = a->nfree > 0 ? a->free_slots[--a->nfree] : a->nslots++;
}

void
al__task_free_slot(agent_t *a, int slot)
{
    if (a->nfree == a->free_cap) {
        a->free_cap = a->free_cap ? 2 * a->free_cap : 64;
        a->free_slots = al_xreallocarray(a->free_slots, (size_t)a->free_cap,
                                         sizeof *a->free_slots);
    }
    a->free_slots[a->nfree++] = slot;
}

task_t *
al__task_find(agent_t *a, unsigned long long job, int index, int restart)
{
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].job == job && a->tasks[i].index == index &&
            a->tasks[i].restart == restart)
            return &a->tasks[i];
    return NULL;
}

task_t *
al__task_add(agent_t *a, unsigned long long job, int index, int restart)
{
    if (a->ntasks == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 16;
        a->tasks = al_xreallocarray(a->tasks, (size_t)a->cap, sizeof *a->tasks);
    }
    task_t *t = &a->tasks[a->ntasks++];
    memset(t, 0, sizeof *t);
    t->job = job;
    t->index = index;
    t->restart = restart;
    t->slot = -1;
    t->gpu_share = 1000; /* until its spec says otherwise (adopted tasks'
                            records do not say: counted whole) */
    t->usage = (al__cg_usage_t){ -1, -1, -1 };
    return t;
}

int64_t
al__file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* Forgets t; its slot's files are emptied for the next task (the log
 * first: an empty state file is what marks the slot free).  log_size is
 * the size of its log when the caller just looked, or -1. */
void
al__task_remove(agent_t *a, task_t *t, int64_t log_size)
{
    if (t->slot >= 0) {
        char *lp = al__task_file(a, t, "log"),
             *sp = al__task_file(a, t, "script"),
             *ep = al__task_file(a, t, "state");
        /* Most short tasks print nothing: an empty log needs no
         * truncate(), which costs a journal transaction on ext4.  The
         * record is marked free, not truncated (see AL__REC_LEN).  Only a
         * task started from a script (or adopted: who knows) has one. */
        int fd = -1;
        if (log_size < 0)
            log_size = al__file_size(lp);
        if ((log_size == 0 || truncate(lp, 0) == 0 || errno == ENOENT) &&
            (!t->script || unlink(sp) == 0 || errno == ENOENT) &&
            ((fd = open(ep, O_WRONLY | O_CLOEXEC)) < 0
                 ? errno == ENOENT
                 : pwrite(fd, "-", 1, 0) == 1))
            al__task_free_slot(a, t->slot);
        else
            al_warn("cannot empty the files of slot %d: %s", t->slot,
                    strerror(errno));
        if (fd >= 0)
            close(fd);
        free(lp);
        free(sp);
        free(ep);
    }
    json_decref(t->spec);
    free(t->error);
    /* A cgroup made for a start that never happened goes too. */
    if (a->cg.version != 0 && t->state == T_WAITING)
        a->cg_dirty = true;
    *t = a->tasks[--a->ntasks];
}

/* Reads the record of t's slot into rec (AL__REC_LEN bytes, NUL added);
 * false when it is shorter. */
static bool
read_record(const agent_t *a, const task_t *t, char *rec)
{
    char *p = al__task_file(a, t, "state");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    free(p);
    if (fd < 0)
        return false;
    ssize_t n = pread(fd, rec, AL__REC_LEN, 0);
    close(fd);
    if (n != AL__REC_LEN)
        return false;
    rec[AL__REC_LEN] = '\0';
    return true;
}

/* Reads the exit part of t's record; true if present. */
static bool
read_exit(const agent_t *a, task_t *t)
{
    char rec[AL__REC_LEN + 1], *e1, *e2;
    if (!read_record(a, t, rec))
        return false;
    const char *line = rec + AL__REC_ID;
    long code = strtol(line, &e1, 10), sig = strtol(e1, &e2, 10);
    if (e1 == line || e2 == e1)
        return false;
    t->exit_code = (int)code;
    t->signal = (int)sig;
    if (strncmp(e2, " oom", 4) == 0)
        t->oom = true;
    return true;
}

/* Writes the exit part of t's record from a wait status. */
static void
record_exit(const agent_t *a, const task_t *t, int status)
{
    char *p = al__task_file(a, t, "state");
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0 ||
        al__record_exit(fd, WIFEXITED(status) ? WEXITSTATUS(status) : 0,
                        WIFSIGNALED(status) ? WTERMSIG(status) : 0) != 0)
        al_warn("cannot write %s: %s", p, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(p);
}

/* Writes a whole record for t (a task that could not start). */
static void
write_record(const agent_t *a, const task_t *t, const char *exit_line)
{
    char rec[AL__REC_LEN], line[AL__REC_ID];
    snprintf(line, sizeof line, "%llu %d %d 0 -1 %llu", t->job, t->index,
             t->restart, (unsigned long long)t->devices);
    al__rec_field(rec, AL__REC_ID, line);
    al__rec_field(rec + AL__REC_ID, AL__REC_LEN - AL__REC_ID, exit_line);
    char *p = al__task_file(a, t, "state");
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || pwrite(fd, rec, sizeof rec, 0) != (ssize_t)sizeof rec)
        al_warn("cannot write %s: %s", p, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(p);
}

/* Records that a task could not even be started. */
void
al__task_fail(agent_t *a, task_t *t, const char *why)
{
    al__task_take_slot(a, t);
    char *lp = al__task_file(a, t, "log"), *ep = al__task_file(a, t, "state");
    FILE *f = fopen(lp, "a");
    if (f != NULL) {
        fprintf(f, "allot: %s\n", why);
        fclose(f);
    }
    write_record(a, t, "127 0");
    t->state = T_EXITED;
    t->exit_code = 127;
    free(lp);
    free(ep);
}

/* t has ended: with cgroups, whether it ran out of memory (kept in its
 * record, after the exit, for a restarted agent), and whatever is left
 * in its cgroup is killed; the cgroup goes (or waits for the sweep). */
static void
confine_end(agent_t *a, task_t *t)
{
    if (a->cg.version == 0)
        return;
    char name[64];
    al__cg_name(name, sizeof name, t->job, t->index, t->restart);
    al__cg_usage_t u;
    if (al__cg_usage(&a->cg, name, &u) == 0)
        t->usage = u; /* what it used, in all */
    if (al__cg_end(&a->cg, name) && !t->oom) {
        t->oom = true;
        char text[48], rec[AL__REC_LEN - AL__REC_ID];
        snprintf(text, sizeof text, "%d %d oom", t->exit_code, t->signal);
        al__rec_field(rec, sizeof rec, text);
        char *p = al__task_file(a, t, "state");
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || pwrite(fd, rec, sizeof rec, AL__REC_ID) != sizeof rec)
            al_warn("cannot write %s: %s", p, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(p);
    }
    a->cg_dirty = true;
}

/* Kills the processes of t's cgroup (every one: a daemonised grandchild
 * too) with sig; nothing without cgroups. */
static void
confine_signal(agent_t *a, const task_t *t, int sig)
{
    if (a->cg.version == 0)
        return;
    char name[64];
    al__cg_name(name, sizeof name, t->job, t->index, t->restart);
    al__cg_signal(&a->cg, name, sig);
}

/* The sweep's test: keep the cgroups of tasks that run or may start. */
static bool
cg_keep(void *ctx, const char *name)
{
    agent_t *a = ctx;
    for (int i = 0; i < a->ntasks; i++) {
        char n[64];
        const task_t *t = &a->tasks[i];
        al__cg_name(n, sizeof n, t->job, t->index, t->restart);
        if (t->state != T_EXITED && strcmp(n, name) == 0)
            return true;
    }
    return false;
}

void
al__task_sweep(agent_t *a, bool now)
{
    int64_t mono = al_clock_mono_ms();
    if (a->cg.version == 0 ||
        (!now && (!a->cg_dirty || mono - a->cg_swept < 1000)))
        return;
    a->cg_swept = mono;
    a->cg_dirty = al__cg_sweep(&a->cg, cg_keep, a) > 0;
}

/* t has ended with the exit code and signal it holds. */
static void
ended(agent_t *a, task_t *t)
{
    t->state = T_EXITED;
    confine_end(a, t);
    if (t->error == NULL && t->spec != NULL &&
        json_object_get(t->spec, "image") != NULL) {
        char *lp = al__task_file(a, t, "log");
        t->error = al__container_error(t, lp);
        free(lp);
    }
    al_info("task %llu.%d.%d exited: code %d signal %d%s", t->job, t->index,
            t->restart, t->exit_code, t->signal,
            t->oom ? " (out of memory)" : "");
    /* Its session's output drained, what was exec'd into it ended. */
    al__session_ended(t);
}

/* t ended with wait status `status` (-1: unknown, taken for SIGKILL). */
static void
set_exited(agent_t *a, task_t *t, int status)
{
    bool coded = status >= 0 && WIFEXITED(status);
    t->exit_code = coded ? WEXITSTATUS(status) : 0;
    t->signal = coded                                ? 0
                : status >= 0 && WIFSIGNALED(status) ? WTERMSIG(status)
                                                     : SIGKILL;
    ended(a, t);
}

/* A task is gone; status is its wait status, or -1 when unknown.  The
 * record's exit, when it has one, is what counts (none: the spawner was
 * killed before it could write one). */
static void
mark_exited(agent_t *a, task_t *t, int status)
{
    if (read_exit(a, t))
        ended(a, t);
    else
        set_exited(a, t, status);
}

/* The running task of pid that the spawner tells us about. */
static task_t *
find_child(agent_t *a, pid_t pid)
{
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->pid == pid && t->state == T_RUNNING && !t->adopted)
            return t;
    }
    return NULL;
}

/* Takes the ends of tasks the spawner reported. */
static void
take_reports(agent_t *a)
{
    pid_t pid;
    int st;
    while (a->spawner.pid > 0 &&
           al__spawner_reaped(&a->spawner, &pid, &st) == 1) {
        task_t *t = find_child(a, pid);
        /* The spawner wrote the exit into the record before it reported
         * it, from the same wait status: no need to read it back. */
        if (t != NULL)
            set_exited(a, t, st);
    }
}

/* The spawner is gone: the tasks it started are nobody's children we can
 * wait for, so watch them as adopted ones (pid and start time from their
 * records), then start another spawner. */
void
al__task_respawn(agent_t *a)
{
    al__spawner_t *sp = &a->spawner;
    take_reports(a); /* what it told us first: those tasks have ended */
    if (sp->sock >= 0)
        close(sp->sock);
    if (sp->exit_fd >= 0)
        close(sp->exit_fd);
    sp->sock = sp->exit_fd = -1;
    sp->pid = -1;
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->state != T_RUNNING || t->adopted)
            continue;
        char *p = al__task_file(a, t, "state"), *data = NULL;
        size_t n;
        al__rec_t rec;
        if (al_fs_read_file(p, &data, &n) == 0 && al__rec_parse(data, &rec) &&
            rec.pid == t->pid)
            t->start = rec.start;
        free(data);
        free(p);
        t->adopted = true;
    }
    /* A spawner that cannot get going dies at once: at most one start a
     * second (the tasks wait for the next sync meanwhile), not a loop. */
    int64_t now = al_clock_mono_ms();
    if (a->respawned_ms != 0 && now - a->respawned_ms < RESPAWN_MS)
        return;
    a->respawned_ms = now;
    if (al__spawner_start(sp, a->wake_write) != 0) {
        al_error("cannot start a spawner: %s", strerror(errno));
        sp->pid = -1;
    }
}

void
al__task_reap(agent_t *a)
{
    take_reports(a);
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            break;
        if (pid == a->spawner.pid) {
            al_warn("the spawner exited (status %d); starting another", st);
            al__task_respawn(a);
            continue;
        }
        /* A task whose spawner died: the agent is a child subreaper, so
         * its orphaned tasks come to it, with their exit status.  So do
         * interactive sessions' tasks, which the agent starts itself. */
        bool found = false;
        for (int i = 0; i < a->ntasks && !found; i++) {
            task_t *t = &a->tasks[i];
            if (t->pid != pid || t->state != T_RUNNING)
                continue;
            if (!read_exit(a, t))
                record_exit(a, t, st);
            mark_exited(a, t, st);
            found = true;
        }
        if (!found && !al__mps_reaped(a, pid, st))
            al__session_reaped(pid, st); /* an exec's command, perhaps */
    }
    /* Adopted tasks are not our spawner's children: poll them.  One that
     * ended is a zombie until its parent (an earlier spawner) has written
     * its exit into the record and reaped it: wait for that. */
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        int64_t start = -1;
        if (t->state != T_RUNNING || !t->adopted)
            continue;
        int st = al_platform_proc_state(t->pid, &start);
        if (start == t->start && (st == 1 || (st == 0 && !read_exit(a, t))))
            continue;
        mark_exited(a, t, -1);
    }
    al__task_sweep(a, false);
}

void
al__task_escalate(agent_t *a)
{
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->state == T_RUNNING && t->killing && now >= t->kill_at) {
            al_info("task %llu.%d.%d: grace period over, SIGKILL", t->job,
                    t->index, t->restart);
            kill(-t->pid, SIGKILL);
            confine_signal(a, t, SIGKILL);
            if (t->kill_at + 1000 > now) /* the first SIGKILL only */
                al__container_kill(a, t);
            t->kill_at = now + 1000;
        }
    }
}

void
al__task_stop(agent_t *a, task_t *t)
{
    if (t->state != T_RUNNING || t->killing)
        return;
    al_info("task %llu.%d.%d no longer wanted: SIGTERM, SIGKILL in %lld ms",
            t->job, t->index, t->restart, (long long)a->grace_ms);
    kill(-t->pid, SIGTERM);
    confine_signal(a, t, SIGTERM);
    al__task_suspend(t, false); /* a stopped task acts on SIGTERM after this */
    t->killing = true;
    t->kill_at = al_clock_mono_ms() + a->grace_ms;
}

/*
 * Takes t as the task its record names: process pid, started at `start`.
 * Alive means the same process: its pid and its start time.  One that
 * ended but whose spawner has not yet recorded it (a zombie) counts as
 * running: al__task_reap() waits for the record.  One gone without a recorded
 * exit ended how we cannot know: SIGKILL.
 */
void
al__task_adopt(agent_t *a, task_t *t, long pid, long long start)
{
    int64_t now_start = -1;
    t->pid = (pid_t)pid;
    t->start = start;
    t->adopted = true;
    if (read_exit(a, t)) {
        t->state = T_EXITED;
        confine_end(a, t);
    } else if (pid > 0 && start >= 0 &&
               al_platform_proc_state(pid, &now_start) >= 0 &&
               now_start == start) {
        t->state = T_RUNNING;
    } else {
        t->state = T_EXITED;
        t->exit_code = 0;
        t->signal = SIGKILL;
        confine_end(a, t);
    }
}

/* Parses "SLOT.state"; false if name is anything else. */
bool
al__task_slot_parse(const char *name, int *slot)
{
    char *e;
    if (name[0] < '0' || name[0] > '9')
        return false;
    long v = strtol(name, &e, 10);
    if (strcmp(e, ".state") != 0 || v > 1 << 24)
        return false;
    *slot = (int)v;
    return true;
}
