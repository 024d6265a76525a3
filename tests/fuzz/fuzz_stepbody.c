/*
 * fuzz_stepbody.c -- libFuzzer harness for a step's report (POST
 * /v1/jobs/ID/steps, what srun sends when a step starts and ends):
 * al__step_parse in src/server/steps.c.  Each input is JSON text.  Checks:
 *   - a refusal is AL_EINVAL with a message and leaves *s alone;
 *   - an accepted report has a step 0..AL__STEP_MAX, tasks
 *     1..AL__STEP_MAX, an exit code 0..255, a signal 0..127 and a name
 *     NULL or of 1..AL__STEP_NAME_MAX bytes without NUL.
 * Corpus: tests/fuzz/corpus/stepbody.
 */
#include "api_int.h"
#include "fuzz.h"
#include "json.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *b = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (b == NULL)
        return 0;
    al__step_t s = { .step = -7 };
    char *cause = NULL;
    int rc = al__step_parse(b, &s, &cause);
    if (rc != 0) {
        CHECK(rc == AL_EINVAL && cause != NULL && cause[0] != '\0');
        CHECK(s.step == -7 && s.name == NULL);
        free(cause);
    } else {
        CHECK(s.step >= 0 && s.step <= AL__STEP_MAX);
        CHECK(s.tasks >= 1 && s.tasks <= AL__STEP_MAX);
        CHECK(s.exit_code >= 0 && s.exit_code <= 255);
        CHECK(s.signal >= 0 && s.signal <= 127);
        CHECK(s.name == NULL ||
              (strlen(s.name) >= 1 && strlen(s.name) <= AL__STEP_NAME_MAX));
    }
    json_decref(b);
    return 0;
}
