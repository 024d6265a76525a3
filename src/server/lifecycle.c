/*
 * lifecycle.c -- the rest of a job's lifecycle: retries of a job that
 * failed by exit code or ran out of memory (with a back-off that doubles
 * from the controller's --retry-backoff, each attempt recorded in the
 * history), failing at once a job whose dependency can never be
 * satisfied (DependencyNeverSatisfied), and suspending and resuming a
 * running job (its agent stops and continues its tasks' processes; its
 * GPUs stay allocated).
 *
 * May call: state.c (every change of a job's state), table.c, store.c
 * (events) and common.  agentproto.c, cycle.c and the handlers call it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

/* The longest back-off between two attempts. */
#define BACKOFF_MAX_S 3600

bool
al__lifecycle_retry(al_ctl_t *ctl, al__job_t *j, const char *why)
{
    if (j->retried >= j->retries)
        return false;
    int64_t base =
        ctl->opts.retry_backoff_s > 0 ? ctl->opts.retry_backoff_s : 0;
    int64_t wait = base;
    for (int k = 0; k < j->retried && wait < BACKOFF_MAX_S; k++)
        wait *= 2;
    if (wait > BACKOFF_MAX_S)
        wait = BACKOFF_MAX_S;
    j->retried++;
    char *d = al_xasprintf("attempt %d of %d in %lld s: %s", j->retried + 1,
                           j->retries + 1, (long long)wait, why);
    j->suspended = false;
    /* The attempt's exit is in its history; the next run's is its own (a
     * run that completes shows no kill of an earlier one). */
    j->exit_code = 0;
    j->signal = 0;
    al__ctl_requeue(ctl, j, "retry", d);
    j->retry_at_ms = al_clock_ms() + wait * 1000;
    free(d);
    return true;
}

void
al__lifecycle_failed(al_ctl_t *ctl, al__job_t *j, const char *why)
{
    /* A failure by exit code runs again while it has retries; one by a
     * signal (killed, out of memory) ends it. */
    if (j->signal != 0 || !al__lifecycle_retry(ctl, j, why))
        al__ctl_set_state(ctl, j, JS_FAILED, "failed", why);
}

void
al__lifecycle_oom(al_ctl_t *ctl, al__job_t *j, const char *why)
{
    /* Killed by the kernel for its memory, not by anyone's signal: a
     * failure of the job's own, which a retry may get past (a peak that
     * depends on its data, a node's other tenants). */
    if (!al__lifecycle_retry(ctl, j, why))
        al__ctl_set_state(ctl, j, JS_OUT_OF_MEMORY, "out_of_memory", why);
}

bool
al__lifecycle_waits(al__job_t *j, int64_t now_ms)
{
    if (j->retry_at_ms <= 0 || j->state != JS_PENDING)
        return false;
    if (j->retry_at_ms <= now_ms) {
        j->retry_at_ms = 0;
        return false;
    }
    j->why_valid = false;
    free(j->reason);
    j->reason =
        al_xasprintf("waiting to run again (attempt %d of %d) in "
                     "%lld s (Retry)",
                     j->retried + 1, j->retries + 1,
                     (long long)((j->retry_at_ms - now_ms + 999) / 1000));
    return true;
}

void
al__lifecycle_dep_never(al_ctl_t *ctl, al__job_t *j, const char *why)
{
    char *r = al_xasprintf("a dependency can never be satisfied%s%s "
                           "(DependencyNeverSatisfied)",
                           why != NULL ? ": " : "", why != NULL ? why : "");
    al__ctl_set_state(ctl, j, JS_FAILED, "failed", r);
    free(r);
}

int
al__lifecycle_suspend(al_ctl_t *ctl, al__job_t *j, bool suspend,
                      const char *who, char **cause)
{
    if (j->state != JS_RUNNING)
        return al__fail(cause, 409,
                        al_xasprintf("job %llu is %s; only a running job is "
                                     "%s",
                                     (unsigned long long)j->id,
                                     al__jstate_names[j->state],
                                     suspend ? "suspended" : "resumed"));
    if (j->suspended == suspend)
        return al__fail(
            cause, 409,
            al_xasprintf("job %llu is %s", (unsigned long long)j->id,
                         suspend ? "already suspended" : "not suspended"));
    j->suspended = suspend;
    al__ctl_dirty(ctl, j);
    for (int t = 0; j->tasks != NULL && t < j->ntasks; t++)
        if (j->tasks[t].node >= 0 && j->tasks[t].node < ctl->nnodes)
            al__ctl_node_changed(ctl, j->tasks[t].node);
    al__store_event(ctl, j->id, al_clock_ms(),
                    suspend ? "suspended" : "resumed", who);
    return 0;
}
