/*
 * fuzz_pipeline.c -- libFuzzer harness for pipeline files (`allot pipeline
 * submit`, POST /v1/pipelines): al__pfile_parse in src/server/pipefile.c,
 * YAML or JSON.  The input is the file's text; a first line "#set K=V"
 * gives one --set parameter.  Checks:
 *   - a refusal is AL_EINVAL with a message (every problem, joined by
 *     "; "), and leaves the out-parameter alone;
 *   - an accepted file has 1..AL_PIPELINE_MAX_STAGES stages with distinct
 *     names, each a job body whose command is a non-empty array of
 *     strings and whose env is an object;
 *   - needs name other stages, and `order` is a permutation of the stages
 *     in which every stage comes after all it needs (no cycle got in);
 *   - parsing the same text again gives the same stages (deterministic).
 * Corpus: tests/fuzz/corpus/pipeline.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "json.h"
#include "server_int.h"

static void
check_file(const al__pfile_t *pf)
{
    CHECK(pf->nstages >= 1 && pf->nstages <= AL_PIPELINE_MAX_STAGES);
    CHECK(pf->name != NULL && pf->name[0] != '\0');
    int *pos = calloc((size_t)pf->nstages, sizeof(int));
    CHECK(pos != NULL);
    for (int k = 0; k < pf->nstages; k++)
        pos[k] = -1;
    for (int k = 0; k < pf->nstages; k++) {
        int s = pf->order[k];
        CHECK(s >= 0 && s < pf->nstages && pos[s] < 0);
        pos[s] = k;
    }
    for (int s = 0; s < pf->nstages; s++) {
        const al__pstage_t *ps = &pf->stages[s];
        CHECK(ps->name != NULL && ps->name[0] != '\0');
        CHECK(ps->when >= AL_WHEN_SUCCESS && ps->when <= AL_WHEN_ALWAYS);
        for (int o = 0; o < s; o++)
            CHECK(strcmp(pf->stages[o].name, ps->name) != 0);
        const json_t *cmd = json_object_get(ps->body, "command");
        CHECK(json_is_array(cmd) && json_array_size(cmd) > 0);
        for (size_t i = 0; i < json_array_size(cmd); i++)
            CHECK(json_is_string(json_array_get(cmd, i)));
        CHECK(json_is_object(json_object_get(ps->body, "env")));
        for (int d = 0; d < ps->nneeds; d++) {
            int n = ps->needs[d];
            CHECK(n >= 0 && n < pf->nstages && n != s);
            CHECK(pos[n] < pos[s]);
        }
    }
    free(pos);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_t *sets = json_object();
    if (size > 6 && memcmp(data, "#set ", 5) == 0) {
        const char *nl = memchr(data, '\n', size);
        const char *eq = memchr(data, '=', nl ? (size_t)(nl - text) : size);
        if (nl != NULL && eq != NULL && eq > text + 5) {
            char k[64], v[64];
            size_t kl = (size_t)(eq - (text + 5)), vl = (size_t)(nl - eq - 1);
            if (kl < sizeof k && vl < sizeof v) {
                memcpy(k, text + 5, kl);
                k[kl] = '\0';
                memcpy(v, eq + 1, vl);
                v[vl] = '\0';
                json_t *sv = json_string(v);
                if (sv != NULL)
                    json_object_set_new(sets, k, sv);
            }
        }
    }
    al__pfile_t *pf = (al__pfile_t *)(uintptr_t)1, *pf2 = NULL;
    char *cause = NULL;
    int rc = al__pfile_parse(text, size, sets, &pf, &cause);
    if (rc != 0) {
        CHECK(rc == AL_EINVAL);
        CHECK(cause != NULL && cause[0] != '\0');
        CHECK(pf == (al__pfile_t *)(uintptr_t)1);
        free(cause);
        json_decref(sets);
        return 0;
    }
    CHECK(cause == NULL);
    check_file(pf);
    CHECK(al__pfile_parse(text, size, sets, &pf2, NULL) == 0);
    CHECK(pf2->nstages == pf->nstages);
    for (int s = 0; s < pf->nstages; s++) {
        CHECK(strcmp(pf->stages[s].name, pf2->stages[s].name) == 0);
        CHECK(json_equal(pf->stages[s].body, pf2->stages[s].body));
        CHECK(pf->order[s] == pf2->order[s]);
    }
    al__pfile_free(pf);
    al__pfile_free(pf2);
    json_decref(sets);
    return 0;
}
