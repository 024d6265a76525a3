/*
 * suspend.c -- a task suspended and resumed as the controller asks (`allot
 * suspend`, `allot resume`): SIGSTOP to the task's whole process group
 * (each task leads its own) and to every process descended from it (those
 * that left the group too), SIGCONT to continue it.  Its GPUs stay its
 * own meanwhile.  A suspended task that is then stopped gets SIGCONT after
 * its SIGTERM, so that it can act on it.
 *
 * May call: the platform's process list (platform.h) and the task table's
 * types; sync.c and task.c call it.
 */
#include <signal.h>

#include "agent_int.h"
#include "log.h"

/* The most processes of one task signalled one by one. */
#define MAX_TREE 4096

/* Sends sig to every descendant of pid, breadth first: those that left
 * the task's process group (a new session, a daemon) too. */
static void
signal_tree(long pid, int sig)
{
    static long tree[MAX_TREE];
    int n = 0, next = 0;
    tree[n++] = pid;
    while (next < n && n < MAX_TREE) {
        long kids[256];
        int k = al_platform_children(tree[next++], kids, 256);
        for (int i = 0; i < k && n < MAX_TREE; i++) {
            tree[n++] = kids[i];
            kill((pid_t)kids[i], sig);
        }
    }
}

void
al__task_suspend(task_t *t, bool on)
{
    if (t->state != T_RUNNING || t->pid <= 0 || t->suspended == on ||
        (on && t->killing))
        return;
    if (kill(-t->pid, on ? SIGSTOP : SIGCONT) != 0)
        return;
    signal_tree(t->pid, on ? SIGSTOP : SIGCONT);
    t->suspended = on;
    al_info("task %llu.%d.%d %s", t->job, t->index, t->restart,
            on ? "suspended (SIGSTOP)" : "resumed (SIGCONT)");
}
