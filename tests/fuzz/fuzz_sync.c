/*
 * fuzz_sync.c -- libFuzzer harness for an agent's sync body
 * (POST /v1/agent/sync): al__sync_parse in src/server/agentproto.c, and the
 * base64 decoder (al_b64_decode, src/common/b64.c) its log chunks go
 * through.  Each input is JSON text.  Checks:
 *   - a refusal (AL_EINVAL, with a message) happens exactly when the body
 *     names no node;
 *   - every entry of "tasks" gives one task, whose job, task and restart
 *     are either what the agent sent or the "skip me" defaults (0, -1), and
 *     never a value cut to fit an int;
 *   - a log chunk that decodes gives at most 3 bytes per 4 characters, and
 *     encoding and decoding those bytes gives them back.
 * Corpus: tests/fuzz/corpus/sync.
 */
#include <limits.h>

#include "api_int.h"
#include "core/error.h"
#include "fuzz.h"
#include "json.h"

/* Whether member key of o is an integer in [lo, hi]. */
static int
int_member(const json_t *o, const char *key, json_int_t lo, json_int_t hi)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= lo &&
           json_integer_value(v) <= hi;
}

static void
check_log(const char *b64)
{
    unsigned char *out = NULL;
    size_t n = 0;
    if (al_b64_decode(b64, &out, &n) != 0)
        return;
    CHECK(n <= strlen(b64) / 4 * 3);
    char *again = al_b64_encode(out, n);
    unsigned char *out2 = NULL;
    size_t n2 = 0;
    CHECK(al_b64_decode(again, &out2, &n2) == 0);
    CHECK(n2 == n && (n == 0 || memcmp(out, out2, n) == 0));
    free(again);
    free(out2);
    free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = al_json_parse((const char *)data, size, NULL);
    if (body == NULL)
        return 0;
    al__sync_t s;
    char *cause = NULL;
    int rc = al__sync_parse(body, &s, &cause);
    const char *node = al_json_str(body, "node", NULL);
    if (rc != 0) {
        CHECK(rc == AL_EINVAL && node == NULL);
        CHECK(cause != NULL && cause[0] != '\0');
        free(cause);
        json_decref(body);
        return 0;
    }
    CHECK(s.node == node && node != NULL);
    CHECK(s.wait_ms == al_json_int(body, "wait_ms", 0));
    json_t *tasks = json_object_get(body, "tasks");
    CHECK(s.ntasks == json_array_size(tasks));
    for (size_t i = 0; i < s.ntasks; i++) {
        const al__sync_task_t *t = &s.tasks[i];
        json_t *e = json_array_get(tasks, i);
        if (int_member(e, "job", 1, INT64_MAX))
            CHECK((json_int_t)t->job == al_json_int(e, "job", 0));
        else
            CHECK(t->job == 0);
        if (int_member(e, "task", 0, INT_MAX))
            CHECK(t->task == al_json_int(e, "task", 0));
        else
            CHECK(t->task == -1);
        if (int_member(e, "restart", 0, INT_MAX))
            CHECK(t->restart == al_json_int(e, "restart", 0));
        else
            CHECK(t->restart == -1);
        /* A failure never reads as a success. */
        CHECK((t->exit_code != 0) == (al_json_int(e, "exit_code", 0) != 0));
        CHECK((t->signal != 0) == (al_json_int(e, "signal", 0) != 0));
        CHECK(t->exited ==
              (strcmp(al_json_str(e, "state", ""), "exited") == 0));
        CHECK(t->log == al_json_str(e, "log", NULL));
        if (t->log != NULL)
            check_log(t->log);
    }
    /* Telemetry: one sample per entry, each value within its range or
     * unknown (-1), what the agent sent when it was in range. */
    json_t *gpus = json_object_get(body, "gpus");
    CHECK(s.nsamples == json_array_size(gpus));
    for (size_t i = 0; i < s.nsamples; i++) {
        const al__gpu_sample_t *x = &s.samples[i];
        json_t *e = json_array_get(gpus, i);
        CHECK(s.index[i] >= -1 && s.index[i] < AL_MAX_DEVICES);
        CHECK(x->util >= -1 && x->util <= 100);
        CHECK(x->mem_util >= -1 && x->mem_util <= 100);
        CHECK(x->temp_c >= -1 && x->temp_c <= 1000);
        CHECK(x->mem_used >= -1 && x->power_mw >= -1);
        if (int_member(e, "util", 0, 100))
            CHECK(x->util == al_json_int(e, "util", -2));
        if (int_member(e, "power_mw", 0, INT64_MAX))
            CHECK(x->power_mw == al_json_int(e, "power_mw", -2));
    }
    al__sync_fini(&s);
    json_decref(body);
    return 0;
}
