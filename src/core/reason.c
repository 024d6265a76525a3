/*
 * reason.c -- turning a pending job's reason code into a sentence a user
 * can act on.  The core stores reasons as small structs (a code and a few
 * numbers) so that 100,000 pending jobs cost no strings; the shells format
 * only the ones they show.
 */
#include <inttypes.h>
#include <stdio.h>

#include "core_int.h"

static const char *const res_names[AL_NRES] = { "gpu", "cpu", "memory" };

static const char *const why_names[AL_WHY_COUNT] = {
    [AL_WHY_NONE] = "none",
    [AL_WHY_HELD] = "held",
    [AL_WHY_DEPS] = "dependencies",
    [AL_WHY_DEPS_NEVER] = "dependency_failed",
    [AL_WHY_BAD_QUEUE] = "bad_queue",
    [AL_WHY_TOO_BIG] = "too_big",
    [AL_WHY_LIMIT] = "queue_limit",
    [AL_WHY_MODEL_LIMIT] = "model_limit",
    [AL_WHY_DESERVED] = "over_deserved",
    [AL_WHY_NO_BORROW] = "no_borrow",
    [AL_WHY_CAPACITY] = "capacity",
    [AL_WHY_NO_NODE] = "no_node_fits",
    [AL_WHY_TOPOLOGY] = "topology",
    [AL_WHY_RESERVED] = "reserved",
    [AL_WHY_BEHIND_RESERVATION] = "behind_reservation",
    [AL_WHY_ORDER] = "order",
    [AL_WHY_NO_VICTIM] = "no_victim",
    [AL_WHY_YIELDED] = "yielded",
    [AL_WHY_NO_MATCH] = "no_match",
    [AL_WHY_BUILD_CAP] = "build_cap",
};

const char *
al_reason_name(al_reason_code_t code)
{
    if ((int)code < 0 || code >= AL_WHY_COUNT)
        return NULL;
    return why_names[code];
}

static const char *
queue_name(const al_snapshot_t *s, int32_t q)
{
    if (q < 0 || q >= s->nqueues || s->queues[q].name == NULL)
        return "?";
    return s->queues[q].name;
}

/* Formats an amount of resource r in the unit users think in. */
static void
amount(char *buf, size_t len, int r, int64_t v)
{
    if (r == AL_RES_GPU) {
        if (v % AL_GPU_MILLI == 0)
            snprintf(buf, len, "%" PRId64, v / AL_GPU_MILLI);
        else
            snprintf(buf, len, "%.3g", (double)v / AL_GPU_MILLI);
    } else if (r == AL_RES_CPU) {
        snprintf(buf, len, "%.4g", (double)v / 1000);
    } else {
        snprintf(buf, len, "%.4gGiB", (double)v / (1024.0 * 1024 * 1024));
    }
}

static void
delay(char *buf, size_t len, int64_t secs)
{
    if (secs < 0)
        secs = 0;
    if (secs < 120)
        snprintf(buf, len, "+%" PRId64 " s", secs);
    else if (secs < 7200)
        snprintf(buf, len, "+%" PRId64 " min", (secs + 30) / 60);
    else
        snprintf(buf, len, "+%.1f h", (double)secs / 3600);
}

int
al_reason_format(const al_snapshot_t *s, const al_reason_t *r, char *buf,
                 size_t len)
{
    char a[48], t[48];
    uint64_t other = 0;
    int res = r->res >= 0 && r->res < AL_NRES ? r->res : AL_RES_GPU;

    if (r->job >= 0 && r->job < s->njobs)
        other = s->jobs[r->job].id;
    amount(a, sizeof(a), res, r->amount);
    delay(t, sizeof(t), r->time - s->now);

    switch (r->code) {
    case AL_WHY_NONE:
        return snprintf(buf, len, "none");
    case AL_WHY_HELD:
        return snprintf(buf, len, "held by user");
    case AL_WHY_DEPS:
        return snprintf(buf, len, "waiting for dependencies");
    case AL_WHY_DEPS_NEVER:
        return snprintf(buf, len, "a dependency failed: the job can never run");
    case AL_WHY_BAD_QUEUE:
        return snprintf(buf, len, "queue %s does not exist or is not a leaf",
                        queue_name(s, r->queue));
    case AL_WHY_NO_MATCH:
        return snprintf(
            buf, len,
            "no node of the cluster has the GPU model, pool or labels the "
            "job asks for");
    case AL_WHY_TOO_BIG:
        return snprintf(buf, len,
                        "larger than any node or domain of the cluster can "
                        "hold (%s %s per task)",
                        a, res_names[res]);
    case AL_WHY_LIMIT:
        return snprintf(buf, len, "queue %s at %s limit %s",
                        queue_name(s, r->queue), res_names[res], a);
    case AL_WHY_MODEL_LIMIT:
        return snprintf(buf, len, "queue %s at its GPU-model limit %s",
                        queue_name(s, r->queue), a);
    case AL_WHY_DESERVED:
        return snprintf(buf, len,
                        "build and inference jobs run only within their "
                        "queue's deserved quota, never borrowing: queue %s "
                        "would exceed its %s deserved GPUs",
                        queue_name(s, r->queue), a);
    case AL_WHY_BUILD_CAP:
        return snprintf(
            buf, len, "queue %s at its cap of %s GPU%s for build jobs",
            queue_name(s, r->queue), a, r->amount == AL_GPU_MILLI ? "" : "s");
    case AL_WHY_NO_BORROW:
        return snprintf(buf, len, "queue %s at its static quota of %s %s",
                        queue_name(s, r->queue), a, res_names[res]);
    case AL_WHY_CAPACITY:
        return snprintf(buf, len,
                        "not enough free GPUs in the cluster (%s free)", a);
    case AL_WHY_NO_NODE:
        return snprintf(buf, len,
                        "no node has room for one task (%s GPUs free but "
                        "fragmented)",
                        a);
    case AL_WHY_TOPOLOGY:
        return snprintf(buf, len,
                        "no topology domain can hold all tasks together now");
    case AL_WHY_RESERVED:
        return snprintf(buf, len,
                        "waiting for reservation at %s (when running jobs "
                        "reach their time limits or estimates)",
                        t);
    case AL_WHY_BEHIND_RESERVATION:
        return snprintf(buf, len,
                        "would delay the reservation of job %" PRIu64 " at %s",
                        other, t);
    case AL_WHY_ORDER:
        return snprintf(buf, len, "behind job %" PRIu64 " in strict order",
                        other);
    case AL_WHY_YIELDED:
        return snprintf(buf, len,
                        "gave way to job %" PRIu64
                        " of queue %s, which is below its fair share",
                        other, queue_name(s, r->queue));
    case AL_WHY_NO_VICTIM:
        return snprintf(buf, len,
                        "queue %s is below its fair share but no running "
                        "job can be reclaimed for it",
                        queue_name(s, r->queue));
    case AL_WHY_COUNT: /* no code: below */
        break;
    }
    return snprintf(buf, len, "unknown reason %d", (int)r->code);
}
