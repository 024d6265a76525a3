/*
 * idle.c -- idle reclaim: a build session whose GPUs all stay under its
 * queue's `idle_util` (percent) for the queue's `idle_timeout` (seconds)
 * is warned, then ended with the reason IdleTimeout, and its GPUs go back
 * to the queues.  Utilisation is the agents' GPU telemetry as the last
 * sync brought it (al__gpu_sample_t, agentproto.c); a GPU without a sample
 * taken since the job started, or whose samples stopped coming, counts as
 * busy, so a job is never ended on what is not known.
 *
 * The warning comes `lead` before the end (a quarter of the timeout, at
 * most five minutes) and the end never comes sooner than `lead` after the
 * warning.  It goes into the job's log: the controller hands the text to
 * the agents of the job's tasks with their desired set (the "notice"
 * member), and each appends it to its task's output once, so that it
 * reaches `allot logs` in order with the rest.  Whether a session is idle
 * is kept in memory only: a restarted controller starts counting again.
 *
 * May call: state.c (ending a job, node changes), relay.c (the warning to
 * an attached terminal), table.c, reason.c (the
 * job classes), store.c (events), common's clock, log and allocation.
 * Called by the loop (ctl.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

/* How late a sample may come besides its agent's interval: an agent with
 * tasks syncs every second, a sync carries the samples, and a loaded node
 * or controller may be some seconds late. */
#define SYNC_SLACK_MS 5000

/* How long before the end the warning comes: a quarter of the timeout,
 * at most five minutes, at least a second. */
static int64_t
lead_ms(int64_t timeout_ms)
{
    int64_t l = timeout_ms / 4;
    if (l > 300000)
        l = 300000;
    return l < 1000 ? 1000 : l;
}

/* Whether sample s is current at now: its agent sends them every
 * s->every_ms, and this one is not more than two of those (and the slack
 * of a sync, which carries them) old.  A GPU whose telemetry stopped (the
 * driver fails, an emulated GPU's file is gone) is thus not judged by its
 * last word, however idle that said it was. */
static bool
fresh(const al__gpu_sample_t *s, int64_t now)
{
    return s->at_ms > 0 && s->every_ms > 0 &&
           now - s->at_ms <= 2 * s->every_ms + SYNC_SLACK_MS;
}

/* 1 when every GPU job j holds has a current sample (fresh()), taken
 * since the job started, under util percent; 0 when one is at or above
 * it, or unknown, or stale, or j holds no GPU (nothing to give back). */
static int
gpus_idle(const al_ctl_t *ctl, const al__job_t *j, int util, int64_t now)
{
    int seen = 0;
    for (int t = 0; t < j->ntasks; t++) {
        const al__task_t *tk = &j->tasks[t];
        if (tk->node < 0 || tk->node >= ctl->nnodes)
            return 0;
        const al__node_t *n = &ctl->nodes[tk->node];
        for (int d = 0; d < n->ngpus && d < AL_MAX_DEVICES; d++) {
            if (!(tk->devices & ((uint64_t)1 << d)))
                continue;
            const al__gpu_sample_t *s = &n->gpus[d].sample;
            if (s->at_ms < j->start_ms || !fresh(s, now) || s->util < 0 ||
                s->util >= util)
                return 0;
            seen++;
        }
    }
    return seen > 0;
}

static void
nodes_changed(al_ctl_t *ctl, const al__job_t *j)
{
    for (int t = 0; t < j->ntasks; t++)
        if (j->tasks[t].node >= 0)
            al__ctl_node_changed(ctl, j->tasks[t].node);
}

/* Forgets j's idleness; a warning that stood is withdrawn from its
 * agents' desired sets. */
static void
reset(al_ctl_t *ctl, al__job_t *j)
{
    if (j->idle_notice != NULL) {
        free(j->idle_notice);
        j->idle_notice = NULL;
        if (j->state == JS_RUNNING && j->tasks != NULL)
            nodes_changed(ctl, j);
    }
    j->idle_since_ms = j->idle_warned_ms = 0;
}

void
al__idle_warn(al_ctl_t *ctl, al__job_t *j, int64_t left_s)
{
    const al__queue_t *q = al__ctl_queue(ctl, j->queue);
    int64_t now = al_clock_ms();
    time_t secs = (time_t)(now / 1000);
    struct tm tm;
    char when[32];
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    char *detail = al_xasprintf(
        "the GPUs of this build session have been idle (under %d%%) for "
        "%" PRId64 " s; it ends in %" PRId64 " s (IdleTimeout) unless they "
        "are used",
        q != NULL ? q->idle_util : 0,
        j->idle_since_ms > 0 ? (now - j->idle_since_ms) / 1000 : 0, left_s);
    free(j->idle_notice);
    j->idle_notice = al_xasprintf("\nallot: %s: %s\n", when, detail);
    j->idle_warned_ms = now;
    nodes_changed(ctl, j);
    al_info("job %llu: %s", (unsigned long long)j->id, detail);
    al__store_event(ctl, j->id, now, "idle_warning", detail);
    /* And to a terminal attached to it now (the log's copy reaches one
     * that attaches later, in the replay). */
    char *line = al_xasprintf("%s: %s", when, detail);
    al__relay_notice(ctl, j->id, line);
    free(line);
    free(detail);
}

void
al__idle_check(al_ctl_t *ctl)
{
    int64_t now = al_clock_ms();
    /* Backwards: ending a job takes it out of ctl->running. */
    for (size_t i = ctl->nrunning; i-- > 0;) {
        al__job_t *j = ctl->running[i];
        if (!al__jclasses[j->cls].build || j->tasks == NULL)
            continue;
        const al__queue_t *q = al__ctl_queue(ctl, j->queue);
        if (q == NULL || q->idle_timeout <= 0 ||
            !gpus_idle(ctl, j, q->idle_util, now)) {
            if (j->idle_since_ms != 0 || j->idle_notice != NULL)
                reset(ctl, j);
            continue;
        }
        int64_t limit = q->idle_timeout * 1000, lead = lead_ms(limit);
        if (j->idle_since_ms == 0)
            j->idle_since_ms = now;
        int64_t idle = now - j->idle_since_ms;
        if (j->idle_warned_ms == 0) {
            if (idle < limit - lead)
                continue;
            /* The warning gives the whole lead, however late it comes. */
            if (idle > limit - lead)
                j->idle_since_ms = now - (limit - lead);
            al__idle_warn(ctl, j, (lead + 999) / 1000);
            continue;
        }
        if (idle < limit)
            continue;
        char *d = al_xasprintf("IdleTimeout: its GPUs stayed under %d%% "
                               "utilisation for %" PRId64
                               " s (queue %s's idle_timeout)",
                               q->idle_util, q->idle_timeout, q->name);
        al_info("job %llu: %s", (unsigned long long)j->id, d);
        reset(ctl, j);
        ctl->counters.idle_reclaims++;
        al__ctl_set_state(ctl, j, JS_FAILED, "idle_timeout", d);
        free(d);
    }
}
