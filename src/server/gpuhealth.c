/*
 * gpuhealth.c -- the controller's side of the GPUs' health.  An agent
 * reports the GPUs it found faulty, with why ("gpu_health" in its sync:
 * XID events, ECC, pages pending, off the bus, temperature, power); the
 * first report of a GPU marks it unhealthy (the scheduler places no new
 * work on it: cycle.c hands it to the core as fenced), drains its node
 * with the reason (no new work is placed there; with `--gpu-fault fence`
 * the node is not drained and its other GPUs take work) and requeues the
 * jobs with tasks on that GPU (their restart count goes up, the event
 * says why).
 * `allot node resume` clears it: the node takes work again and the agent
 * is told to forget those faults ("gpu_reset", with a generation that the
 * agent echoes back, so that reports sent before it heard are not taken
 * for new faults; a fault that persists is found and reported again).
 * The reasons are part of the node's stored document.
 *
 * May call: state.c (the requeue), table.c, common.  agentproto.c and
 * api_nodes.c call it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "clock.h"
#include "json.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

/* Requeues the running jobs with a task on GPU d of node ni. */
static void
requeue_on(al_ctl_t *ctl, int ni, int d, const char *why)
{
    /* Backwards: a requeue takes the job out of ctl->running. */
    for (size_t k = ctl->nrunning; k-- > 0;) {
        al__job_t *j = ctl->running[k];
        for (int t = 0; j->tasks != NULL && t < j->ntasks; t++) {
            const al__task_t *tk = &j->tasks[t];
            if (tk->node == ni && !tk->done &&
                (tk->devices & ((uint64_t)1 << d))) {
                al_warn("job %llu requeued: %s", (unsigned long long)j->id,
                        why);
                al__ctl_requeue(ctl, j, "requeued", why);
                break;
            }
        }
    }
}

void
al__gpuhealth_sync(al_ctl_t *ctl, int ni, const al__sync_t *s)
{
    al__node_t *n = &ctl->nodes[ni];
    if (n->gpu_resetting != 0) {
        if (s->health_gen != n->reset_gen)
            return; /* sent before the agent heard of the reset */
        n->gpu_resetting = 0;
    }
    for (size_t k = 0; k < s->nhealth; k++) {
        int d = s->health_index[k];
        if (d < 0 || d >= n->ngpus || (n->gpu_bad & ((uint64_t)1 << d)))
            continue;
        const char *reason = s->health_reason[k];
        if (n->gpu_why == NULL)
            n->gpu_why = al_xcalloc(AL_MAX_DEVICES, sizeof *n->gpu_why);
        n->gpu_bad |= (uint64_t)1 << d;
        free(n->gpu_why[d]);
        n->gpu_why[d] = al_xstrdup(reason);
        char *why =
            al_xasprintf("GPU %d of node %s unhealthy: %s", d, n->name, reason);
        bool fence = ctl->opts.gpu_fault != NULL &&
                     strcmp(ctl->opts.gpu_fault, "fence") == 0;
        al_error("%s: %s", why, fence ? "GPU fenced" : "node drained");
        if (!fence && n->drain_reason == NULL) {
            n->drain_reason = al_xasprintf("GPU %d unhealthy: %s", d, reason);
            n->drained = true;
        }
        requeue_on(ctl, ni, d, why);
        free(why);
        n->dirty = true;
        al__ctl_node_changed(ctl, ni);
        al__ctl_touch(ctl);
    }
}

void
al__gpuhealth_resume(al_ctl_t *ctl, int ni)
{
    al__node_t *n = &ctl->nodes[ni];
    if (n->gpu_bad != 0) {
        al_info("node %s resumed: GPU faults cleared (mask %#llx)", n->name,
                (unsigned long long)n->gpu_bad);
        n->gpu_resetting = n->gpu_bad;
        /* A wall-clock ms: a controller restarted since the agent last
         * heard never reuses one. */
        n->reset_gen = al_clock_ms();
    }
    uint64_t resetting = n->gpu_resetting;
    int64_t gen = n->reset_gen;
    al__node_health_fini(n);
    n->gpu_resetting = resetting;
    n->reset_gen = gen;
    al__ctl_node_changed(ctl, ni);
}

void
al__gpuhealth_desired(const al__node_t *n, json_t *o)
{
    if (n->gpu_resetting == 0)
        return;
    json_t *gpus = json_array();
    for (int d = 0; d < AL_MAX_DEVICES; d++)
        if (n->gpu_resetting & ((uint64_t)1 << d))
            json_array_append_new(gpus, json_integer(d));
    json_object_set_new(o, "gpu_reset", gpus);
    json_object_set_new(o, "health_gen",
                        json_integer((json_int_t)n->reset_gen));
}
