/*
 * reason.c -- the words the controller shows: the names of job states,
 * job classes and node states, why a job was evicted, and the text of a
 * pending job's reason, formatted from the core's small struct only when
 * it is shown (al__job_reason()) with the queue names kept from the last
 * cycle.
 *
 * May call: the core (al_reason_format) and nothing else of the server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

const char *const al__jstate_names[JS_COUNT] = {
    [JS_PENDING] = "pending",
    [JS_HELD] = "held",
    [JS_RUNNING] = "running",
    [JS_COMPLETED] = "completed",
    [JS_FAILED] = "failed",
    [JS_CANCELLED] = "cancelled",
    [JS_OUT_OF_MEMORY] = "out_of_memory",
};

int
al__jstate_parse(const char *s)
{
    for (int i = 0; i < JS_COUNT; i++)
        if (strcmp(s, al__jstate_names[i]) == 0)
            return i;
    return -1;
}

bool
al__jstate_failed(al__jstate_t s)
{
    return s == JS_FAILED || s == JS_OUT_OF_MEMORY;
}

const al__jclass_t al__jclasses[] = {
    { .name = "train", .priority = AL_PRIO_TRAIN, .preemptible = true },
    { .name = "build",
      .priority = AL_PRIO_BUILD,
      .preemptible = false,
      .build = true },
    { .name = "inference",
      .priority = AL_PRIO_INFERENCE,
      .preemptible = false },
};
const int al__njclasses = sizeof al__jclasses / sizeof al__jclasses[0];

const char *const al__node_state_names[] = {
    [NS_READY] = "ready", [NS_DRAINING] = "draining", [NS_DOWN] = "down"
};

const char *const al__evict_reasons[] = {
    [AL_EVICT_RECLAIM] = "reclaimed by another queue",
    [AL_EVICT_PREEMPT] = "preempted by a higher priority job",
    [AL_EVICT_RESERVATION] = "ran on lent capacity; the reservation starts",
};

const char *
al__job_reason(const al_ctl_t *ctl, const al__job_t *j, char *buf, size_t len)
{
    if ((j->state != JS_PENDING && j->state != JS_HELD) || !j->why_valid)
        return j->reason;
    /* A snapshot of one queue and one job: all al_reason_format() reads
     * besides the clock. */
    al_reason_t r = j->why;
    int q = r.queue;
    al_queue_t sq = { .name = q >= 0 && q < ctl->reason_nq
                                  ? ctl->reason_qnames[q]
                                  : NULL };
    al_job_t sj = { .id = j->why_job };
    al_snapshot_t s = { .now = ctl->reason_now,
                        .nqueues = 1,
                        .queues = &sq,
                        .njobs = 1,
                        .jobs = &sj };
    r.queue = q >= 0 ? 0 : -1;
    r.job = j->why_job != 0 ? 0 : -1;
    /* Dependencies in Slurm's words too (squeue's reasons), and a failed
     * afterok is not the only way one can never be satisfied. */
    if (r.code == AL_WHY_DEPS)
        snprintf(buf, len, "waiting for its dependencies (Dependency)");
    else if (r.code == AL_WHY_DEPS_NEVER)
        snprintf(buf, len,
                 "a dependency can never be satisfied: the job "
                 "can never run (DependencyNeverSatisfied)");
    else if (j->nvlink_required && j->gpus > 1 && r.code == AL_WHY_TOO_BIG)
        snprintf(buf, len,
                 "no node has an NVLink domain of %d GPUs (nvlink required: "
                 "its GPUs never span domains)",
                 (int)j->gpus);
    else if (j->nvlink_required && j->gpus > 1 && r.code == AL_WHY_TOPOLOGY)
        snprintf(buf, len,
                 "no NVLink domain of a node has %d free GPUs now (nvlink "
                 "required: it waits rather than span domains)",
                 (int)j->gpus);
    else if (j->topology_required && r.code == AL_WHY_TOPOLOGY)
        snprintf(buf, len,
                 "no topology domain can hold all tasks together now "
                 "(topology required: it waits rather than span them)");
    else
        al_reason_format(&s, &r, buf, len);
    /* A reservation of a job that keeps to one domain: say why it does
     * not start now on the devices free elsewhere. */
    size_t n = strlen(buf);
    if (r.code == AL_WHY_RESERVED && n < len &&
        (j->topology_required || (j->nvlink_required && j->gpus > 1)))
        snprintf(buf + n, len - n,
                 " (%s required: it waits rather than "
                 "span domains)",
                 j->topology_required ? "topology" : "nvlink");
    return buf;
}

void
al__reason_fini(al_ctl_t *ctl)
{
    for (int i = 0; i < ctl->reason_nq; i++)
        free(ctl->reason_qnames[i]);
    free(ctl->reason_qnames);
    ctl->reason_qnames = NULL;
    ctl->reason_nq = 0;
    ctl->reason_qgen = 0;
}
