/*
 * leaving.c -- the tasks that are stopping.
 *
 * A run the controller no longer wants (preempted or reclaimed, requeued,
 * cancelled, failed by another of its tasks) goes on until its agent has
 * signalled it and it has exited: up to the grace period, more for a task
 * that traps SIGTERM to save its work.  Until then its GPUs are not free,
 * and its job must not run a second time beside it (two runs writing one
 * checkpoint).  So each of its tasks that had not ended is kept here, on
 * its node, until the node's agent reports it ended or no longer has it;
 * meanwhile a start the core decided on those GPUs, or of that job, waits
 * (al__leaving_blocks(); the next cycles try again).  A node that goes
 * down keeps nothing: its jobs restart elsewhere at once, as before, and
 * its agent's fence stops their old runs.  In memory only: a controller
 * that takes over starts with none.
 *
 * May call: nothing of the server's; called by state.c (set_state,
 * requeue), agentproto.c (syncs) and cycle.c (starts).
 */
#include <stdlib.h>

#include "api_int.h"
#include "server_int.h"
#include "xmalloc.h"

void
al__leaving_add(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->tasks == NULL)
        return;
    for (int t = 0; t < j->ntasks; t++) {
        const al__task_t *tk = &j->tasks[t];
        if (tk->done || tk->node < 0 || tk->node >= ctl->nnodes)
            continue;
        al__node_t *n = &ctl->nodes[tk->node];
        if (n->state == NS_DOWN)
            continue;
        if (n->nleaving == n->leaving_cap) {
            n->leaving_cap = n->leaving_cap ? 2 * n->leaving_cap : 8;
            n->leaving = al_xreallocarray(n->leaving, n->leaving_cap,
                                          sizeof *n->leaving);
        }
        n->leaving[n->nleaving++] = (al__leaving_t){
            .key = { j->id, t, j->restart_count },
            .devices = tk->devices,
        };
    }
}

bool
al__leaving_synced(al_ctl_t *ctl, int ni, const al__sync_t *s)
{
    al__node_t *n = &ctl->nodes[ni];
    size_t kept = 0;
    for (size_t i = 0; i < n->nleaving; i++) {
        const al__task_key_t *k = &n->leaving[i].key;
        bool running = false;
        for (size_t r = 0; r < s->ntasks && !running; r++) {
            const al__sync_task_t *t = &s->tasks[r];
            running = t->job == k->job && t->task == k->task &&
                      t->restart == k->restart && !t->exited;
        }
        if (running)
            n->leaving[kept++] = n->leaving[i];
    }
    bool dropped = kept < n->nleaving;
    n->nleaving = kept;
    return dropped;
}

void
al__leaving_node_down(al__node_t *n)
{
    n->nleaving = 0;
}

bool
al__leaving_blocks(const al_ctl_t *ctl, const al__job_t *j, int ntasks,
                   const int *nodes, const uint64_t *devices)
{
    for (int i = 0; i < ctl->nnodes; i++) {
        const al__node_t *n = &ctl->nodes[i];
        for (size_t k = 0; k < n->nleaving; k++) {
            if (n->leaving[k].key.job == j->id)
                return true; /* its previous run is still stopping */
            for (int t = 0; t < ntasks; t++)
                if (nodes[t] == i && (devices[t] & n->leaving[k].devices))
                    return true;
        }
    }
    return false;
}
