/*
 * state.c -- changes of the controller's state that have consequences: a
 * job's move to another state (the event recorded, the nodes whose
 * desired set changes, the index of running jobs and of each node's runs
 * kept), a requeue, the master port of a started job, the marks that a
 * scheduling cycle is due or a node's long-poll must be answered, and the
 * changes that time brings (silent nodes down, time limits reached).
 * Handlers, the agent protocol, the cycle and the loop change jobs through
 * these functions, never by setting j->state themselves.
 *
 * May call: table.c, store.c (the event of each change) and common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

void
al__ctl_touch(al_ctl_t *ctl)
{
    if (!ctl->sched_dirty) {
        /* Coalesce changes for a few ms, and for longer when cycles are
         * expensive (a large backlog), so that cycles take at most about a
         * third of the loop's time while requests pour in. */
        int64_t wait = ctl->opts.coalesce_ms;
        if (2 * ctl->cycle_ms > wait)
            wait = 2 * ctl->cycle_ms;
        ctl->sched_dirty = true;
        ctl->sched_due = al_clock_mono_ms() + wait;
    }
}

void
al__ctl_node_changed(al_ctl_t *ctl, int ni)
{
    ctl->nodes[ni].changed = true;
    ctl->nodes_changed = true;
}

static void
mark_nodes_changed(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->tasks == NULL)
        return;
    for (int t = 0; t < j->ntasks; t++)
        if (j->tasks[t].node >= 0 && j->tasks[t].node < ctl->nnodes)
            al__ctl_node_changed(ctl, j->tasks[t].node);
}

/* Adds j's run to the runs of the nodes its tasks are on, once a node. */
static void
node_runs_add(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->tasks == NULL)
        return;
    for (int t = 0; t < j->ntasks; t++) {
        int ni = j->tasks[t].node;
        if (ni < 0 || ni >= ctl->nnodes)
            continue;
        al__node_t *n = &ctl->nodes[ni];
        /* A job's appends come together: a repeat is the last entry. */
        if (n->nruns > 0 && n->runs[n->nruns - 1].job == j->id &&
            n->runs[n->nruns - 1].restart == j->restart_count)
            continue;
        if (n->nruns == n->runs_cap) {
            n->runs_cap = n->runs_cap ? 2 * n->runs_cap : 8;
            n->runs = al_xreallocarray(n->runs, n->runs_cap, sizeof *n->runs);
        }
        n->runs[n->nruns++] = (al__task_key_t){ .job = j->id,
                                                .task = -1,
                                                .restart = j->restart_count };
    }
}

#define MASTER_PORT_BASE 29500
#define MASTER_PORTS 20000

int
al__job_master_port(const al__job_t *j)
{
    return j->master_port != 0 ? j->master_port
                               : MASTER_PORT_BASE + (int)(j->id % MASTER_PORTS);
}

void
al__ctl_pick_master_port(al_ctl_t *ctl, al__job_t *j)
{
    j->master_port = 0;
    int n0 = j->tasks != NULL ? j->tasks[0].node : -1;
    if (n0 < 0 || n0 >= ctl->nnodes)
        return;
    const al__node_t *n = &ctl->nodes[n0];
    /* The ports of the other runs rendezvousing on this node (those with
     * a task here are in its runs), then the first free one from id's. */
    unsigned char taken[MASTER_PORTS / 8];
    memset(taken, 0, sizeof taken);
    for (size_t i = 0; i < n->nruns; i++) {
        const al__job_t *o = al__ctl_job(ctl, n->runs[i].job);
        if (o != NULL && o != j && o->state == JS_RUNNING && o->tasks != NULL &&
            o->tasks[0].node == n0 && o->restart_count == n->runs[i].restart) {
            int k = al__job_master_port(o) - MASTER_PORT_BASE;
            if (k >= 0 && k < MASTER_PORTS)
                taken[k / 8] |= (unsigned char)(1u << (k % 8));
        }
    }
    int first = (int)(j->id % MASTER_PORTS);
    for (int d = 0; d < MASTER_PORTS; d++) {
        int k = (first + d) % MASTER_PORTS;
        if (!(taken[k / 8] & (1u << (k % 8)))) {
            j->master_port = MASTER_PORT_BASE + k;
            return;
        }
    }
}

static void
running_add(al_ctl_t *ctl, al__job_t *j)
{
    node_runs_add(ctl, j);
    if (ctl->nrunning == ctl->running_cap) {
        ctl->running_cap = ctl->running_cap ? 2 * ctl->running_cap : 256;
        /* An array of pointers: each element is sizeof(void *). */
        ctl->running =
            al_xreallocarray(ctl->running, ctl->running_cap, sizeof(void *));
    }
    j->run_idx = ctl->nrunning;
    ctl->running[ctl->nrunning++] = j;
}

static void
running_remove(al_ctl_t *ctl, al__job_t *j)
{
    al__job_t *last = ctl->running[--ctl->nrunning];
    ctl->running[j->run_idx] = last;
    last->run_idx = j->run_idx;
}

void
al__ctl_index_running(al_ctl_t *ctl)
{
    ctl->nrunning = 0;
    for (int i = 0; i < ctl->nnodes; i++)
        ctl->nodes[i].nruns = 0;
    for (uint64_t i = 0; i < ctl->njobs; i++)
        if (ctl->jobs[i] != NULL && ctl->jobs[i]->state == JS_RUNNING)
            running_add(ctl, ctl->jobs[i]);
}

void
al__ctl_set_state(al_ctl_t *ctl, al__job_t *j, al__jstate_t st,
                  const char *event, const char *detail)
{
    int64_t now = al_clock_ms();
    if (j->state == JS_RUNNING || st == JS_RUNNING)
        mark_nodes_changed(ctl, j);
    if (j->state == JS_RUNNING && st != JS_RUNNING)
        running_remove(ctl, j);
    else if (j->state != JS_RUNNING && st == JS_RUNNING)
        running_add(ctl, j);
    al__jstate_t was = j->state;
    if (was == JS_RUNNING && st >= JS_COMPLETED)
        al__leaving_add(ctl, j); /* its tasks that have not ended stop */
    j->state = st;
    j->why_valid = false;
    al__jobcounts_sync(ctl, j);
    if (st >= JS_COMPLETED) {
        /* An array's parent is no job that ran: its elements count. */
        if (was < JS_COMPLETED && j->array == NULL)
            ctl->counters.ended[st]++;
        j->end_ms = now;
        free(j->reason);
        j->reason = detail != NULL ? al_xstrdup(detail) : NULL;
    }
    al__ctl_dirty(ctl, j);
    al__store_event(ctl, j->id, now, event, detail);
    al__ctl_touch(ctl);
}

void
al__ctl_requeue(al_ctl_t *ctl, al__job_t *j, const char *event,
                const char *detail)
{
    int64_t now = al_clock_ms();

    mark_nodes_changed(ctl, j);
    /* The run it loses still counts as service it had: least attained
     * service first (al_config_t.service_levels) keeps it behind jobs
     * that had less. */
    if (j->start_ms > 0 && now > j->start_ms)
        j->attained += al_service((now - j->start_ms) / 1000, j->ntasks,
                                  j->gpus > 0 ? (int64_t)j->gpus * AL_GPU_MILLI
                                              : (int64_t)j->gpu_milli);
    al__leaving_add(ctl, j); /* its tasks stop; until then they hold */
    free(j->tasks);
    j->tasks = NULL;
    j->restart_count++;
    j->eligible_ms = now;
    j->start_ms = 0;
    al__ctl_set_state(ctl, j, JS_PENDING, event, detail);
}

char *
al__log_path(al_ctl_t *ctl, uint64_t job, int task, int restart)
{
    return al_xasprintf("%s/logs/%llu.%d.%d.log", ctl->state_dir,
                        (unsigned long long)job, task, restart);
}

void
al__ctl_nodes_down(al_ctl_t *ctl, int64_t mono)
{
    for (int i = 0; i < ctl->nnodes; i++) {
        al__node_t *n = &ctl->nodes[i];
        if (n->state == NS_DOWN ||
            mono - n->last_seen < ctl->opts.node_timeout_ms)
            continue;
        al_warn("node %s silent for %lld ms: marked down, its jobs requeued",
                n->name, (long long)(mono - n->last_seen));
        n->state = NS_DOWN;
        n->dirty = true;
        al__leaving_node_down(n);
        ctl->counters.nodes_down++;
        /* Backwards: a requeue takes the job out of ctl->running. */
        for (size_t k = ctl->nrunning; k-- > 0;) {
            al__job_t *j = ctl->running[k];
            if (j->tasks == NULL)
                continue;
            for (int t = 0; t < j->ntasks; t++) {
                if (j->tasks[t].node == i && !j->tasks[t].done) {
                    char *d = al_xasprintf("node %s down", n->name);
                    ctl->counters.node_down_requeues++;
                    al__ctl_requeue(ctl, j, "requeued", d);
                    free(d);
                    break;
                }
            }
        }
        al__ctl_touch(ctl);
    }
}

void
al__ctl_time_limits(al_ctl_t *ctl)
{
    int64_t now = al_clock_ms();
    for (size_t i = ctl->nrunning; i-- > 0;) {
        al__job_t *j = ctl->running[i];
        if (j->time_limit <= 0 || now - j->start_ms < j->time_limit * 1000)
            continue;
        char *d = al_xasprintf("time limit of %lld s reached",
                               (long long)j->time_limit);
        ctl->counters.time_limits++;
        al__ctl_set_state(ctl, j, JS_FAILED, "timeout", d);
        free(d);
    }
}
