/*
 * api_summary.c -- GET /v1/summary: the cluster at a glance, what the
 * dashboard's overview draws first: GPUs by the state of their node and
 * by model (allocated, busy by telemetry), nodes by state, the active
 * jobs by state and the pending ones by reason (jobcounts.c's kept
 * counts: no pass over the jobs), and each queue's quota, fair share and
 * allocation.  Its size and its cost grow with the nodes and queues, not
 * with the jobs: a few kilobytes where GET /v1/nodes is a megabyte.
 *
 * Counts only, no job ids, users or node names: every user sees the
 * cluster's (as GET /metrics' metrics role does), and in my_jobs their
 * own.
 *
 * May call: jobcounts.c, table.c, doc.c (a queue's form), reason.c and
 * req.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "json.h"
#include "xmalloc.h"

typedef struct gpu_count {
    int64_t total, allocated, busy, telemetry;
} gpu_count_t;

static json_t *
count_json(const gpu_count_t *c)
{
    return json_pack(
        "{s:I,s:I,s:I,s:I,s:I}", "total", (json_int_t)c->total, "allocated",
        (json_int_t)c->allocated, "idle", (json_int_t)(c->total - c->allocated),
        "busy", (json_int_t)c->busy, "telemetry", (json_int_t)c->telemetry);
}

/* GPUs and nodes.  A GPU is allocated when a running task holds it or a
 * fraction of it, busy when its last telemetry said a utilisation over 0
 * (telemetry: how many GPUs sent any). */
static void
put_gpus(const al_ctl_t *ctl, json_t *o)
{
    /* What the running tasks hold, by node: one pass over the running
     * jobs (bounded by the GPUs), not over every job. */
    uint64_t *held = al_xcalloc((size_t)ctl->nnodes + 1, sizeof *held);
    for (size_t k = 0; k < ctl->nrunning; k++) {
        const al__job_t *j = ctl->running[k];
        for (int t = 0; j->tasks != NULL && t < j->ntasks; t++) {
            const al__task_t *tk = &j->tasks[t];
            if (!tk->done && tk->node >= 0 && tk->node < ctl->nnodes)
                held[tk->node] |= tk->devices;
        }
    }
    const char *models[AL_MAX_MODELS];
    int nmodels = 0;
    gpu_count_t all = { 0 }, by_state[NS_DOWN + 1], by_model[AL_MAX_MODELS];
    memset(by_state, 0, sizeof by_state);
    memset(by_model, 0, sizeof by_model);
    int64_t nodes[NS_DOWN + 1] = { 0 };
    for (int i = 0; i < ctl->nnodes; i++) {
        const al__node_t *n = &ctl->nodes[i];
        int s = n->state >= 0 && n->state <= NS_DOWN ? n->state : NS_DOWN;
        nodes[s]++;
        for (int g = 0; g < n->ngpus; g++) {
            int m = al__model_slot(models, &nmodels, n->gpus[g].model);
            bool alloc = g < 64 && (held[i] & (UINT64_C(1) << g)) != 0;
            const al__gpu_sample_t *x = &n->gpus[g].sample;
            bool known = x->at_ms != 0 && x->util >= 0;
            gpu_count_t *c[3] = { &all, &by_state[s], &by_model[m] };
            for (int k = 0; k < 3; k++) {
                c[k]->total++;
                c[k]->allocated += alloc;
                c[k]->telemetry += known;
                c[k]->busy += known && x->util > 0;
            }
        }
    }
    free(held);
    json_t *g = count_json(&all);
    json_t *st = json_object();
    json_t *ns = json_object();
    for (int s = 0; s <= NS_DOWN; s++) {
        json_object_set_new(st, al__node_state_names[s],
                            count_json(&by_state[s]));
        json_object_set_new(ns, al__node_state_names[s],
                            json_integer((json_int_t)nodes[s]));
    }
    json_object_set_new(g, "by_node_state", st);
    json_t *bm = json_array();
    for (int m = 0; m < nmodels; m++) {
        json_t *x = count_json(&by_model[m]);
        json_object_set_new(x, "model", json_string(models[m]));
        json_array_append_new(bm, x);
    }
    json_object_set_new(g, "by_model", bm);
    json_object_set_new(o, "gpus", g);
    json_object_set_new(o, "nodes", ns);
}

/* The active jobs by state, and the pending and held ones by reason; the
 * caller's own by state. */
static void
put_jobs(const al_ctl_t *ctl, const al__req_t *req, json_t *o)
{
    enum { NACT = JS_RUNNING + 1 };
    uint64_t why[AL__WHY_N];
    uint64_t *cell = al__jobcounts_cells(ctl, why);
    uint64_t by[NACT] = { 0 };
    size_t nq = (size_t)ctl->nqueues + 1;
    for (size_t q = 0; q < nq; q++)
        for (int s = 0; s < NACT; s++)
            for (int c = 0; c < al__njclasses; c++)
                by[s] += cell[(q * NACT + (size_t)s) * (size_t)al__njclasses +
                              (size_t)c];
    free(cell);
    json_t *j = json_object();
    for (int s = 0; s < NACT; s++)
        json_object_set_new(j, al__jstate_names[s],
                            json_integer((json_int_t)by[s]));
    json_t *r = json_object();
    for (int w = 1; w < AL__WHY_N; w++)
        if (why[w] > 0)
            json_object_set_new(r,
                                w == AL__WHY_UNKNOWN ? "unknown"
                                : w == AL__WHY_ARRAY
                                    ? "array"
                                    : al_reason_name((al_reason_code_t)w),
                                json_integer((json_int_t)why[w]));
    json_object_set_new(o, "jobs", j);
    uint64_t mine[NACT];
    al__jobcounts_user(ctl, req->user, mine);
    json_t *m = json_object();
    for (int s = 0; s < NACT; s++)
        json_object_set_new(m, al__jstate_names[s],
                            json_integer((json_int_t)mine[s]));
    json_object_set_new(o, "my_jobs", m);
    json_object_set_new(o, "pending_by_reason", r);
}

void
al__api_summary(al_ctl_t *ctl, al__req_t *req)
{
    json_t *o = json_object();
    put_gpus(ctl, o);
    put_jobs(ctl, req, o);
    json_t *a = json_array();
    for (int i = 0; i < ctl->nqueues; i++)
        json_array_append_new(a, al__queue_json(&ctl->queues[i], true));
    json_object_set_new(o, "queues", a);
    al__reply(req, 200, o);
}
