/*
 * fence.c -- the agent's side of a network partition.  A node cut off
 * from the controller keeps running its tasks, while the controller, not
 * hearing from it for its --node-timeout, marks it down and requeues its
 * jobs elsewhere: for a while the same job would run twice.  With
 * --fence-timeout MS the agent, once no controller has answered it for MS
 * while tasks run, stops them itself (SIGTERM, SIGKILL after the grace
 * period), so that with MS + grace below the controller's node timeout
 * they have ended before their jobs start elsewhere.  When the link comes
 * back the agent reports their exits, which the controller, having
 * requeued the jobs, acknowledges as stale.  Any HTTP answer counts as
 * heard: a controller that answers 503 (its database away) is alive and
 * does not requeue either.
 *
 * May call: task.c (stopping a task), common (clocks, logging).
 */
#include "agent_int.h"
#include "clock.h"
#include "log.h"

void
al__fence_heard(agent_t *a)
{
    a->heard_ms = al_clock_mono_ms();
    if (a->fenced)
        al_info("fence: the controller answers again");
    a->fenced = false;
}

void
al__fence_check(agent_t *a)
{
    if (a->fence_ms <= 0)
        return;
    int64_t now = al_clock_mono_ms();
    if (a->heard_ms == 0)
        a->heard_ms = now; /* from the start */
    if (now - a->heard_ms < a->fence_ms)
        return;
    int stopped = 0;
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->state == T_RUNNING && !t->killing) {
            al__task_stop(a, t);
            stopped++;
        }
    }
    if (stopped > 0 || !a->fenced)
        al_warn("fence: no answer from the controller for %lld ms: %d "
                "task(s) stopped",
                (long long)(now - a->heard_ms), stopped);
    a->fenced = true;
}

int
al__fence_bound(const agent_t *a, int timeout_ms)
{
    if (a->fence_ms <= 0)
        return timeout_ms;
    bool running = false;
    for (int i = 0; i < a->ntasks && !running; i++)
        running = a->tasks[i].state == T_RUNNING && !a->tasks[i].killing;
    if (!running)
        return timeout_ms;
    int64_t left = a->heard_ms + a->fence_ms - al_clock_mono_ms();
    /* A long-poll is answered within its wait; leave it that, at least. */
    int64_t bound = left > 1000 ? left : 1000;
    return bound < timeout_ms ? (int)bound : timeout_ms;
}
