/*
 * jobprio.c -- what `scontrol update` changes of a job besides its limit,
 * name, pool and dependencies (api_jobupdate.c): Slurm's Priority and Nice,
 * which order a job among the waiting jobs of its queue and class
 * (cycle.c gives the core class - nice, or an admin's priority - class, as
 * al_job_t.prio_adjust), and NumNodes, a waiting job's tasks (allot's unit
 * across nodes).  Slurm 22.05's rules: only an admin sets a priority (0 to
 * 4294967293); Priority=0 holds a pending job; a held job takes no other
 * priority until released; a priority set clears the nice and makes a
 * later nice a no-op; a user may set a nice of 0 or more, only an admin a
 * negative one.  NumNodes: at least 1, at most the nodes of the job's
 * pool, not of an elastic job, of a running job only the count it runs on.
 *
 * May call: state.c (dirty marks, a hold), array.c (an array's hold),
 * req.c (the caller's role), common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "json.h"
#include "xmalloc.h"

/* Slurm's bounds: a priority below 0xfffffffe, a nice within
 * +-(2^31 - 3). */
#define MAX_PRIORITY 4294967293LL
#define MAX_NICE 2147483645LL
/* The most nodes NumNodes may ask for (Slurm's node counts are 32-bit;
 * allot's tasks of one job are far fewer). */
#define MAX_NODES 65536

/* The nodes running job j's tasks are on. */
static int
running_nodes(const al__job_t *j)
{
    int n = 0;
    for (int t = 0; j->tasks != NULL && t < j->ntasks; t++) {
        bool seen = false;
        for (int u = 0; u < t && !seen; u++)
            seen = j->tasks[u].node == j->tasks[t].node;
        n += !seen;
    }
    return n;
}

/* The nodes job j may use: those of its pool (every node when it has
 * none). */
static int
pool_nodes(const al_ctl_t *ctl, const al__job_t *j)
{
    int n = 0;
    for (int i = 0; i < ctl->nnodes; i++)
        n += j->pool == NULL || (ctl->nodes[i].pool != NULL &&
                                 strcmp(ctl->nodes[i].pool, j->pool) == 0);
    return n;
}

/* Whether v, when given, is an integer of lo..hi. */
static bool
in_range(const json_t *v, long long lo, long long hi)
{
    return v == NULL || (json_is_integer(v) && json_integer_value(v) >= lo &&
                         json_integer_value(v) <= hi);
}

/* Refusals of values out of their range: 400, or 0. */
static int
bad_value(const json_t *pr, const json_t *ni, const json_t *nn,
          const char **code, char **cause)
{
    *code = "bad_request";
    if (!in_range(nn, 1, MAX_NODES)) {
        *code = "node_count";
        *cause = al_xasprintf("nodes must be an integer of 1..%d", MAX_NODES);
    } else if (!in_range(pr, 0, MAX_PRIORITY)) {
        *cause = al_xasprintf("priority must be an integer of 0..%lld",
                              MAX_PRIORITY);
    } else if (!in_range(ni, -MAX_NICE, MAX_NICE)) {
        *cause = al_xasprintf("nice must be an integer of -%lld..%lld",
                              MAX_NICE, MAX_NICE);
    } else {
        return 0;
    }
    return 400;
}

/* NumNodes=n of job j: 0, or the status of its refusal. */
static int
nodes_refusal(al_ctl_t *ctl, const al__job_t *j, long long n, const char **code,
              char **cause)
{
    unsigned long long id = (unsigned long long)j->id;
    if (j->state == JS_RUNNING && n != running_nodes(j)) {
        *code = "not_supported";
        *cause = al_xasprintf("job %llu is running on %d nodes: its node "
                              "count cannot change",
                              id, running_nodes(j));
        return 409;
    }
    if (j->state != JS_RUNNING && j->max_tasks > 0) {
        *code = "not_supported";
        *cause = al_xasprintf("job %llu is elastic: its tasks follow the free "
                              "GPUs",
                              id);
        return 409;
    }
    if (j->state != JS_RUNNING && n > pool_nodes(ctl, j)) {
        *code = "node_config";
        *cause = al_xasprintf("job %llu may use %d nodes (its pool's)", id,
                              pool_nodes(ctl, j));
        return 400;
    }
    return 0;
}

int
al__jobprio_refusal(al_ctl_t *ctl, al__req_t *req, const al__job_t *j,
                    const char **code, char **cause)
{
    const json_t *b = req->body;
    const json_t *pr = json_object_get(b, "priority");
    const json_t *ni = json_object_get(b, "nice");
    const json_t *nn = json_object_get(b, "nodes");
    int status = bad_value(pr, ni, nn, code, cause);
    if (status != 0)
        return status;
    if (nn != NULL && (status = nodes_refusal(ctl, j, json_integer_value(nn),
                                              code, cause)) != 0)
        return status;
    if ((pr != NULL || (ni != NULL && json_integer_value(ni) < 0)) &&
        !al__req_admin(req)) {
        *code = "forbidden";
        *cause = al_xstrdup(pr != NULL ? "only an admin may set a job's "
                                         "priority; a user may raise its nice"
                                       : "only an admin may set a negative "
                                         "nice");
        return 403;
    }
    if (pr != NULL && json_integer_value(pr) > 0 && j->state == JS_HELD) {
        *code = "held";
        *cause = al_xasprintf("job %llu is held: release it first",
                              (unsigned long long)j->id);
        return 409;
    }
    return 0;
}

bool
al__jobprio_apply(al_ctl_t *ctl, al__job_t *j, const json_t *b, al_buf_t *what)
{
    (void)ctl;
    const json_t *pr = json_object_get(b, "priority");
    const json_t *ni = json_object_get(b, "nice");
    const json_t *nn = json_object_get(b, "nodes");
    /* Priority=0 is a hold, not a priority. */
    if (pr != NULL && json_integer_value(pr) > 0) {
        j->prio_fixed = true;
        j->prio_value = json_integer_value(pr);
        j->nice = 0;
        al_buf_printf(what, "%spriority %lld", what->len ? ", " : "",
                      (long long)j->prio_value);
    }
    if (ni != NULL && !j->prio_fixed) {
        j->nice = (int32_t)json_integer_value(ni);
        al_buf_printf(what, "%snice %d", what->len ? ", " : "", (int)j->nice);
    }
    if (nn != NULL && j->state != JS_RUNNING) {
        /* Its tasks per node kept: those of the nodes it asked for last,
         * else one (sbatch -N alone gives a task per node). */
        int was = j->num_nodes > 0 ? j->num_nodes : j->ntasks;
        int per = was > 0 && j->ntasks % was == 0 ? j->ntasks / was : 1;
        j->num_nodes = (int32_t)json_integer_value(nn);
        j->ntasks = j->num_nodes * per;
        al_buf_printf(what, "%snodes %d (%d tasks)", what->len ? ", " : "",
                      (int)j->num_nodes, j->ntasks);
    }
    return pr != NULL && json_integer_value(pr) == 0 && j->state == JS_PENDING;
}

int
al__jobprio_changes(const json_t *b, const al__job_t *j)
{
    int c = 0;
    if (json_object_get(b, "priority") != NULL ||
        json_object_get(b, "nice") != NULL)
        c |= AL__JOBPRIO_ORDER;
    if (json_object_get(b, "nodes") != NULL && j->state != JS_RUNNING)
        c |= AL__JOBPRIO_NODES;
    return c;
}

void
al__jobprio_element(const al__job_t *p, al__job_t *e, int changes)
{
    if (changes & AL__JOBPRIO_ORDER) {
        e->prio_fixed = p->prio_fixed;
        e->prio_value = p->prio_value;
        e->nice = p->nice;
    }
    if ((changes & AL__JOBPRIO_NODES) && e->state <= JS_HELD) {
        e->ntasks = p->ntasks;
        e->num_nodes = p->num_nodes;
    }
}

void
al__jobprio_hold(al_ctl_t *ctl, al__job_t *j, const char *who)
{
    if (j->array != NULL)
        al__array_hold(ctl, j, true, who);
    else
        al__ctl_set_state(ctl, j, JS_HELD, "held", who);
}
