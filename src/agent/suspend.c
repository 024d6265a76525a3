/*
 * suspend.c -- a task suspended and resumed as the controller asks (`allot
 * suspend`, `allot resume`): SIGSTOP to the task's whole process group
 * (each task leads its own), SIGCONT to continue it.  Its GPUs stay its
 * own meanwhile.  A suspended task that is then stopped gets SIGCONT after
 * its SIGTERM, so that it can act on it.
 *
 * May call: nothing of the agent but the task table's types; sync.c and
 * task.c call it.
 */
#include <signal.h>

#include "agent_int.h"
#include "log.h"

void
al__task_suspend(task_t *t, bool on)
{
    if (t->state != T_RUNNING || t->pid <= 0 || t->suspended == on ||
        (on && t->killing))
        return;
    if (kill(-t->pid, on ? SIGSTOP : SIGCONT) != 0)
        return;
    t->suspended = on;
    al_info("task %llu.%d.%d %s", t->job, t->index, t->restart,
            on ? "suspended (SIGSTOP)" : "resumed (SIGCONT)");
}
