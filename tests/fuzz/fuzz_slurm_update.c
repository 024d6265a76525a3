/*
 * fuzz_slurm_update.c -- libFuzzer harness for the words of `scontrol
 * update JobId=N KEY=VALUE ...`, al_sl_update_parse (src/cli/slurm/update.c).
 * The input, up to a NUL, is split at spaces and newlines into the words.
 * Checks:
 *   - a refusal (1 or 2) has a message and leaves *job and *body alone;
 *   - an accepted update names a job (digits, or ID_INDEX) and changes
 *     something: only time_limit (seconds >= 0), name (1..255 bytes),
 *     pool and dependency (strings);
 *   - the body survives a round trip through JSON text (what is sent).
 * Corpus: tests/fuzz/corpus/slurm_update.
 */
#include "fuzz.h"
#include "json.h"
#include "slurm_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    char *w[64];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, " \n", &save); t != NULL && n < 64;
         t = strtok_r(NULL, " \n", &save))
        w[n++] = t;
    char *job = (char *)"untouched", *cause = NULL;
    json_t *body = (json_t *)&job;
    int rc = al_sl_update_parse(n, w, &job, &body, &cause);
    CHECK(rc >= 0 && rc <= 2);
    if (rc != 0) {
        CHECK(cause != NULL && cause[0] != '\0');
        CHECK(strcmp(job, "untouched") == 0 && body == (json_t *)&job);
        free(cause);
        free(s);
        return 0;
    }
    CHECK(job[0] >= '0' && job[0] <= '9');
    CHECK(json_object_size(body) > 0);
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        if (strcmp(k, "time_limit") == 0)
            CHECK(json_is_integer(v) && json_integer_value(v) >= 0);
        else if (strcmp(k, "time_limit_add") == 0) /* +T, -T */
            CHECK(json_is_integer(v) && json_integer_value(v) != 0 &&
                  json_object_get(body, "time_limit") == NULL);
        else if (strcmp(k, "name") == 0)
            CHECK(json_is_string(v) && json_string_length(v) >= 1 &&
                  json_string_length(v) <= 255);
        else if (strcmp(k, "priority") == 0)
            CHECK(json_is_integer(v) && json_integer_value(v) >= 0 &&
                  json_integer_value(v) <= 4294967293LL);
        else if (strcmp(k, "nice") == 0)
            CHECK(json_is_integer(v) &&
                  json_integer_value(v) >= -2147483645LL &&
                  json_integer_value(v) <= 2147483645LL);
        else if (strcmp(k, "nodes") == 0)
            CHECK(json_is_integer(v) && json_integer_value(v) >= 0);
        else
            CHECK((strcmp(k, "pool") == 0 || strcmp(k, "dependency") == 0) &&
                  json_is_string(v));
    }
    char *text = json_dumps(body, JSON_COMPACT);
    CHECK(text != NULL);
    json_t *back = json_loads(text, 0, NULL);
    CHECK(back != NULL && json_equal(back, body));
    json_decref(back);
    free(text);
    json_decref(body);
    free(job);
    free(s);
    return 0;
}
