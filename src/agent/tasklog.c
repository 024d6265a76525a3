/*
 * tasklog.c -- a task's output on its way to the controller: the next chunk
 * of its log file (STATE/tasks/SLOT.log, written by the task itself) after
 * what the controller acknowledged, for a sync's report.  A running task
 * that printed nothing lately is looked at only every LOG_LOOK_MS; an
 * ended one always, since all of its output must arrive.  And the
 * controller's notices, appended to that file like the task's output.
 *
 * May call: task.c (the slot's file names), src/common (base64).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_int.h"
#include "clock.h"
#include "json.h"
#include "xmalloc.h"

/* The most of a task's log that one report carries. */
#define LOG_CHUNK ((size_t)256 * 1024)
/* How often the log of a running task that printed nothing new is looked
 * at.  Syncs come at every task's exit when tasks are short: a stat() of
 * every running task's log on each was most of the agent's system time. */
#define LOG_LOOK_MS 100

bool
al__tasklog_chunk(agent_t *a, task_t *t, json_t *report)
{
    bool more = false;
    /* Most tasks have nothing new to say: look before reading, and look
     * at a quiet running task's log only now and then (an ended task's
     * log is always looked at: all of it must reach the controller). */
    int64_t now = al_clock_mono_ms();
    if (t->slot < 0 || (t->state == T_RUNNING && t->log_quiet &&
                        now - t->log_looked < LOG_LOOK_MS))
        return false;
    t->log_looked = now;
    t->log_quiet = true;
    char *lp = al__task_file(a, t, "log");
    int fd =
        al__file_size(lp) > t->log_acked ? open(lp, O_RDONLY | O_CLOEXEC) : -1;
    free(lp);
    if (fd >= 0) {
        if (a->logbuf == NULL)
            a->logbuf = al_xmalloc(LOG_CHUNK);
        ssize_t n = pread(fd, a->logbuf, LOG_CHUNK, t->log_acked);
        if (n > 0) {
            char *b64 = al_b64_encode(a->logbuf, (size_t)n);
            json_object_set_new(report, "log", json_string(b64));
            free(b64);
            more = true;
            t->log_quiet = false;
        }
        close(fd);
    }
    return more;
}

void
al__tasklog_notice(agent_t *a, task_t *t, const char *text)
{
    uint32_t h = 2166136261u; /* FNV-1a; never 0 for a notice */
    for (const char *p = text; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h |= 1;
    if (t->slot < 0 || t->state != T_RUNNING || h == t->notice_hash)
        return;
    char *lp = al__task_file(a, t, "log");
    /* O_APPEND: the task writes to the same file, so does this, whole. */
    int fd = open(lp, O_WRONLY | O_APPEND | O_CLOEXEC);
    free(lp);
    if (fd < 0)
        return;
    size_t n = strlen(text);
    if (write(fd, text, n) == (ssize_t)n)
        t->notice_hash = h;
    close(fd);
    t->log_quiet = false;
    t->log_looked = 0;
}
