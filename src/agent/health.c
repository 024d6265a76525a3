/*
 * health.c -- the GPUs' health on the agent's side: at each telemetry
 * look the platform is asked for fatal conditions (al_platform_health():
 * XID events, ECC, pages pending, off the bus, temperature, power); a GPU
 * found faulty stays so, and is reported with its reason in every sync
 * ("gpu_health"), until the controller answers that the admin has dealt
 * with it ("gpu_reset", after `allot node resume`).  The controller
 * decides what follows (drain the node or fence the GPU, requeue its
 * tasks): level-triggered, so a controller that restarts learns it again.
 *
 * May call: the platform (platform.h), src/common (JSON, logging).
 */
#include <stdlib.h>

#include "agent_int.h"
#include "json.h"
#include "log.h"
#include "xmalloc.h"

void
al__health_check(agent_t *a)
{
    al_gpu_fault_t f[AL_PLATFORM_MAX_GPUS];
    int n = al_platform_health(&a->plat, f, AL_PLATFORM_MAX_GPUS);
    for (int k = 0; k < n; k++) {
        int i = f[k].index;
        if (i < 0 || i >= AL_PLATFORM_MAX_GPUS ||
            (a->gpu_bad & ((uint64_t)1 << i)))
            continue;
        a->gpu_bad |= (uint64_t)1 << i;
        free(a->gpu_why[i]);
        a->gpu_why[i] = al_xstrdup(f[k].reason);
        al_error("GPU %d unhealthy: %s", i, f[k].reason);
    }
}

void
al__health_report(const agent_t *a, json_t *body)
{
    if (a->health_gen != 0)
        json_object_set_new(body, "health_gen",
                            json_integer((json_int_t)a->health_gen));
    if (a->gpu_bad == 0)
        return;
    json_t *arr = json_array();
    for (int i = 0; i < AL_PLATFORM_MAX_GPUS; i++)
        if (a->gpu_bad & ((uint64_t)1 << i))
            json_array_append_new(
                arr, json_pack("{s:i, s:s}", "index", i, "reason",
                               a->gpu_why[i] ? a->gpu_why[i] : "unhealthy"));
    json_object_set_new(body, "gpu_health", arr);
}

void
al__health_apply(agent_t *a, json_t *out)
{
    json_t *reset = json_object_get(out, "gpu_reset");
    if (reset != NULL)
        a->health_gen = al_json_int(out, "health_gen", a->health_gen);
    for (size_t k = 0; k < json_array_size(reset); k++) {
        json_int_t i = json_integer_value(json_array_get(reset, k));
        if (i < 0 || i >= AL_PLATFORM_MAX_GPUS ||
            !(a->gpu_bad & ((uint64_t)1 << i)))
            continue;
        a->gpu_bad &= ~((uint64_t)1 << i);
        free(a->gpu_why[i]);
        a->gpu_why[i] = NULL;
        al_platform_health_reset(&a->plat, (int)i);
        al_info("GPU %d: cleared by the controller (node resumed)", (int)i);
    }
}

void
al__health_fini(agent_t *a)
{
    for (int i = 0; i < AL_PLATFORM_MAX_GPUS; i++) {
        free(a->gpu_why[i]);
        a->gpu_why[i] = NULL;
    }
}
