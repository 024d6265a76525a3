/*
 * fuzz_nodebody.c -- libFuzzer harness for an agent's register body
 * (POST /v1/agent/register) and the stored node document:
 * al__node_from_json in src/server/doc.c.  Each input is JSON text.
 * Checks:
 *   - a refusal is AL_EINVAL with a message and leaves *n alone;
 *   - an accepted node has a valid name (as given), at most AL_MAX_DEVICES
 *     GPUs, one per entry of "gpus", each with its strings, and device
 *     records for the core that agree with them;
 *   - its JSON form reads back into the same node (the store at restart).
 * Corpus: tests/fuzz/corpus/nodebody.
 */
#include <ctype.h>

#include "core/error.h"
#include "fuzz.h"
#include "json.h"
#include "server_int.h"

static al_ctl_t ctl0; /* al__node_json does not look at it */

static void
check_same(const al__node_t *a, const al__node_t *b)
{
    CHECK(strcmp(a->name, b->name) == 0 && strcmp(a->addr, b->addr) == 0);
    CHECK(a->emulated == b->emulated && a->drained == b->drained);
    CHECK(a->cpu_milli == b->cpu_milli && a->mem_bytes == b->mem_bytes);
    CHECK(a->ngpus == b->ngpus);
    for (int i = 0; i < a->ngpus; i++) {
        const al__gpu_t *g = &a->gpus[i], *h = &b->gpus[i];
        CHECK(strcmp(g->uuid, h->uuid) == 0 && strcmp(g->model, h->model) == 0);
        CHECK(g->mem_bytes == h->mem_bytes);
        CHECK(g->numa == h->numa && g->nvlink == h->nvlink);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = al_json_parse((const char *)data, size, NULL);
    if (body == NULL)
        return 0;
    al__node_t n, before;
    memset(&n, 0x5a, sizeof n);
    memcpy(&before, &n, sizeof n);
    char *cause = NULL;
    int rc = al__node_from_json(body, &n, &cause);
    if (rc != 0) {
        fuzz_check_refused(rc, &n, &before, sizeof n, cause);
        json_decref(body);
        return 0;
    }
    CHECK(strcmp(n.name, al_json_str(body, "name", "")) == 0);
    fuzz_check_name(n.name, 128);
    CHECK(n.addr != NULL && n.state == NS_READY && n.parked == NULL);
    CHECK(n.ngpus >= 0 && n.ngpus <= AL_MAX_DEVICES);
    CHECK((size_t)n.ngpus == json_array_size(json_object_get(body, "gpus")));
    for (int i = 0; i < n.ngpus; i++) {
        CHECK(n.gpus[i].uuid != NULL && n.gpus[i].model != NULL);
        CHECK(n.devices[i].mem_bytes == n.gpus[i].mem_bytes);
        CHECK(n.devices[i].numa == (int16_t)n.gpus[i].numa);
        CHECK(n.devices[i].nvlink == (int16_t)n.gpus[i].nvlink);
    }
    json_t *doc = al__node_json(&ctl0, &n);
    CHECK(doc != NULL);
    char *text = al_json_dump(doc);
    json_decref(doc);
    doc = al_json_parse(text, strlen(text), NULL);
    free(text);
    CHECK(doc != NULL);
    al__node_t n2;
    CHECK(al__node_from_json(doc, &n2, &cause) == 0);
    check_same(&n, &n2);
    al__node_fini(&n2);
    json_decref(doc);
    al__node_fini(&n);
    json_decref(body);
    return 0;
}
