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

/* The API form of a node: its stored form plus what runs on it.  A GPU's
 * job is named for admins and for the job's owner only (users see their
 * own jobs); others see the GPU in use. */
static json_t *
node_view(al_ctl_t *ctl, int idx, const al__req_t *req)
{
    const al__node_t *n = &ctl->nodes[idx];
    json_t *o = al__node_json(ctl, n);
    json_t *gpus = json_object_get(o, "gpus");
    int used = 0;
    for (size_t i = 0; i < ctl->nrunning; i++) {
        const al__job_t *j = ctl->running[i];
        if (j->tasks == NULL)
            continue;
        for (int t = 0; t < j->ntasks; t++) {
            if (j->tasks[t].node != idx || j->tasks[t].done)
                continue;
            for (int d = 0; d < n->ngpus; d++) {
                if (!(j->tasks[t].devices & ((uint64_t)1 << d)))
                    continue;
                used++;
                json_t *g = json_array_get(gpus, (size_t)d);
                if (al__req_admin(req) || strcmp(j->user, req->user) == 0)
                    json_object_set_new(g, "job",
                                        json_integer((json_int_t)j->id));
                json_object_set_new(g, "busy", json_true());
                if (j->tasks[t].gpu_milli > 0) /* a fraction of it */
                    json_object_set_new(g, "shared", json_true());
            }
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
    for (int i = 0; i < ctl->nnodes; i++)
        json_array_append_new(a, node_view(ctl, i, req));
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
    al__reply(req, 200, node_view(ctl, i, req));
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
