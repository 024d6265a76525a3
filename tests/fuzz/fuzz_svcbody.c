/*
 * fuzz_svcbody.c -- libFuzzer harness for an inference service's body
 * (POST and PUT /v1/services) and stored settings: al__svc_conf_apply in
 * src/server/svcbody.c.  Each input is JSON text.  Checks:
 *   - a refusal is AL_EINVAL with a message and leaves the output alone;
 *   - accepted settings are within their bounds (min <= max, 1..64
 *     replicas, a target above 0, a ready path starting with '/') and
 *     have a command;
 *   - their body form reads back into the same settings (the store's
 *     round trip at restart), and applying it as an update to them
 *     changes no spec (no rolling update out of nothing);
 *   - a replica's job body made from them is a valid job of one task of
 *     class inference.
 * Corpus: tests/fuzz/corpus/svcbody.
 */
#include "fuzz.h"
#include "json.h"
#include "svc.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = al_json_parse((const char *)data, size, NULL);
    if (body == NULL)
        return 0;
    al__svc_conf_t c, before;
    memset(&c, 0x5a, sizeof c);
    memcpy(&before, &c, sizeof c);
    char *cause = NULL;
    bool changed = false;
    int rc = al__svc_conf_apply(body, NULL, "fuzz", &c, &changed, &cause);
    if (rc != 0) {
        fuzz_check_refused(rc, &c, &before, sizeof c, cause);
        json_decref(body);
        return 0;
    }
    CHECK(changed);
    CHECK(c.min >= 0 && c.min <= c.max && c.max <= AL_SVC_MAX_REPLICAS);
    CHECK(c.target > 0);
    CHECK(c.ready_path != NULL && c.ready_path[0] == '/');
    CHECK(json_is_array(json_object_get(c.spec, "command")));
    /* The stored form and back. */
    json_t *doc = al__svc_conf_json(&c);
    al__svc_conf_t d;
    rc = al__svc_conf_apply(doc, NULL, "fuzz", &d, NULL, &cause);
    CHECK(rc == 0);
    json_t *doc2 = al__svc_conf_json(&d);
    CHECK(json_equal(doc, doc2));
    /* The same again as an update: no new generation. */
    al__svc_conf_t e;
    rc = al__svc_conf_apply(doc, &c, "fuzz", &e, &changed, &cause);
    CHECK(rc == 0 && !changed);
    /* A replica's job. */
    json_t *jb = al__svc_job_body(&c, "svc", 3, 30003);
    al__job_t *j = NULL;
    rc = al__job_parse(jb, "fuzz", false, &j, &cause);
    CHECK(rc == 0);
    CHECK(j->ntasks == 1 &&
          strcmp(al__jclasses[j->cls].name, "inference") == 0);
    al__job_free(j);
    json_decref(jb);
    al__svc_conf_fini(&e);
    json_decref(doc2);
    al__svc_conf_fini(&d);
    json_decref(doc);
    al__svc_conf_fini(&c);
    json_decref(body);
    return 0;
}
