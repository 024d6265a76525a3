/*
 * api_nodes.c -- the handlers of /v1/nodes: the list (each node's stored
 * form, what runs on its GPUs and their last telemetry), drain and resume.
 * What agents send (register, sync) is agentproto.c's.
 *
 * May call: state.c, table.c, doc.c (the node form) and req.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "clock.h"
#include "json.h"
#include "xmalloc.h"

/* The running tasks of each node, from one pass over the running jobs:
 * node i's are at[start[i]..start[i+1]), in the order of ctl->running.
 * The list of every node reads these rather than going through every
 * running job once per node (1,000 nodes with 8,000 running tasks: 8
 * million looks, most of GET /v1/nodes' time). */
typedef struct placed {
    const al__job_t *j;
    int t;
} placed_t;

typedef struct placement {
    placed_t *at;
    size_t *start;
} placement_t;

static void
placement_init(const al_ctl_t *ctl, placement_t *p)
{
    size_t nn = (size_t)ctl->nnodes;
    p->start = al_xcalloc(nn + 2, sizeof *p->start);
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < ctl->nrunning; i++) {
            const al__job_t *j = ctl->running[i];
            for (int t = 0; j->tasks != NULL && t < j->ntasks; t++) {
                int node = j->tasks[t].node;
                if (j->tasks[t].done || node < 0 || node >= ctl->nnodes)
                    continue;
                if (pass == 0)
                    p->start[(size_t)node + 2]++, total++;
                else
                    p->at[p->start[(size_t)node + 1]++] =
                        (placed_t){ .j = j, .t = t };
            }
        }
        if (pass == 0) {
            /* start[i + 2] counted node i's; shifted by one so that the
             * fill above leaves start[i + 1] at node i's end. */
            for (size_t i = 2; i < nn + 2; i++)
                p->start[i] += p->start[i - 1];
            p->at = al_xmalloc((total ? total : 1) * sizeof *p->at);
        }
    }
}

static void
placement_fini(placement_t *p)
{
    free(p->at);
    free(p->start);
}

/* Marks the GPUs of node n that task t of j holds in gpus (its API form);
 * their count. */
static int
mark_gpus(const al__node_t *n, const al__job_t *j, int t, json_t *gpus,
          const al__req_t *req)
{
    int used = 0;
    for (int d = 0; d < n->ngpus; d++) {
        if (!(j->tasks[t].devices & ((uint64_t)1 << d)))
            continue;
        used++;
        json_t *g = json_array_get(gpus, (size_t)d);
        if (al__req_admin(req) || strcmp(j->user, req->user) == 0)
            json_object_set_new(g, "job", json_integer((json_int_t)j->id));
        json_object_set_new(g, "busy", json_true());
        if (j->tasks[t].gpu_milli > 0) /* a fraction of it */
            json_object_set_new(g, "shared", json_true());
    }
    return used;
}

/* The API form of a node: its stored form plus what runs on it (from pl,
 * or, when NULL, from a look at every running job).  A GPU's job is named
 * for admins and for the job's owner only (users see their own jobs);
 * others see the GPU in use. */
static json_t *
node_view(al_ctl_t *ctl, int idx, const al__req_t *req, const placement_t *pl)
{
    const al__node_t *n = &ctl->nodes[idx];
    json_t *o = al__node_json(ctl, n);
    json_t *gpus = json_object_get(o, "gpus");
    int used = 0;
    if (pl != NULL) {
        for (size_t k = pl->start[idx]; k < pl->start[idx + 1]; k++)
            used += mark_gpus(n, pl->at[k].j, pl->at[k].t, gpus, req);
    } else {
        for (size_t i = 0; i < ctl->nrunning; i++) {
            const al__job_t *j = ctl->running[i];
            for (int t = 0; j->tasks != NULL && t < j->ntasks; t++)
                if (j->tasks[t].node == idx && !j->tasks[t].done)
                    used += mark_gpus(n, j, t, gpus, req);
        }
    }
    json_object_set_new(o, "gpus_used", json_integer(used));
    /* Telemetry, as last sampled by the agent (real GPUs, and emulated
     * ones given a utilisation). */
    int64_t now_ms = al_clock_ms();
    for (int d = 0; d < n->ngpus; d++) {
        const al__gpu_sample_t *x = &n->gpus[d].sample;
        json_t *g = json_array_get(gpus, (size_t)d);
        if (x->at_ms == 0 || g == NULL)
            continue;
        const struct {
            const char *key;
            int64_t v;
        } f[] = {
            { "util", x->util },         { "mem_util", x->mem_util },
            { "mem_used", x->mem_used }, { "temp_c", x->temp_c },
            { "power_mw", x->power_mw },
        };
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (f[k].v >= 0)
                json_object_set_new(g, f[k].key,
                                    json_integer((json_int_t)f[k].v));
        json_object_set_new(g, "sampled_ms_ago",
                            json_integer((json_int_t)(now_ms - x->at_ms)));
    }
    json_object_set_new(
        o, "last_seen_ms_ago",
        json_integer((json_int_t)(al_clock_mono_ms() - n->last_seen)));
    return o;
}

void
al__api_node_list(al_ctl_t *ctl, al__req_t *req)
{
    json_t *a = json_array();
    placement_t pl;
    placement_init(ctl, &pl);
    for (int i = 0; i < ctl->nnodes; i++)
        json_array_append_new(a, node_view(ctl, i, req, &pl));
    placement_fini(&pl);
    al__reply(req, 200, json_pack("{s:o}", "nodes", a));
}

static void
drain_resume(al_ctl_t *ctl, al__req_t *req, bool drain)
{
    int i = al__ctl_node_index(ctl, req->cap[0]);
    if (i < 0) {
        al__reply_error(req, 404, "not_found", "no node '%s'", req->cap[0]);
        return;
    }
    /* An admin's drain may say why ({"reason": "..."}): kept as the
     * node's drain_reason (the one GPU faults set), cleared on resume. */
    json_t *rv = drain ? json_object_get(req->body, "reason") : NULL;
    const char *reason = json_is_string(rv) ? json_string_value(rv) : NULL;
    bool bad = rv != NULL && !json_is_null(rv) &&
               (reason == NULL || strlen(reason) > 200);
    for (const char *p = reason; p != NULL && *p != '\0' && !bad; p++)
        bad = (unsigned char)*p < 0x20 || *p == 0x7f;
    if (bad) {
        al__reply_error(req, 400, "bad_request",
                        "reason: one line of text, at most 200 bytes");
        return;
    }
    ctl->nodes[i].drained = drain;
    if (!drain)
        al__gpuhealth_resume(ctl, i); /* its GPU faults are dealt with */
    if (reason != NULL && reason[0] != '\0') {
        free(ctl->nodes[i].drain_reason);
        ctl->nodes[i].drain_reason = al_xstrdup(reason);
    }
    ctl->nodes[i].dirty = true;
    al__ctl_touch(ctl);
    req->mutating = true;
    al__reply(req, 200, node_view(ctl, i, req, NULL));
}

void
al__api_node_drain(al_ctl_t *ctl, al__req_t *req)
{
    drain_resume(ctl, req, true);
}

void
al__api_node_resume(al_ctl_t *ctl, al__req_t *req)
{
    drain_resume(ctl, req, false);
}
