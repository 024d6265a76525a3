/*
 * fuzz_queuebody.c -- libFuzzer harness for the queue body (POST and PUT
 * /v1/queues) and stored queue document: al__queue_from_json in
 * src/server/doc.c.  Each input is JSON text.  Checks:
 *   - a refusal is AL_EINVAL with a message and leaves *q alone;
 *   - an accepted queue has a valid name (as given), quotas within
 *     0..AL_QUOTA_MAX or AL_UNLIMITED and weights >= 0, a build cap
 *     within 0..AL_QUOTA_MAX, idle_util a percentage, members valid names
 *     (users, or "@group"), none twice, per-model quotas within
 *     0..AL_QUOTA_MAX (limits AL_UNLIMITED too), min_runtime >= 0;
 *   - its JSON form reads back into the same queue (what the store does at
 *     restart, and what `allot queue set` reads and writes).
 * Corpus: tests/fuzz/corpus/queuebody.
 */
#include <ctype.h>
#include <math.h>

#include "core/error.h"
#include "fuzz.h"
#include "json.h"
#include "server_int.h"

/* Per-model quotas, minimum runtime and members. */
static void
check_same_policy(const al__queue_t *a, const al__queue_t *b)
{
    CHECK(a->min_runtime == b->min_runtime && a->nmquotas == b->nmquotas);
    for (int i = 0; i < a->nmquotas && i < b->nmquotas; i++) {
        CHECK(strcmp(a->mquotas[i].model, b->mquotas[i].model) == 0);
        CHECK(a->mquotas[i].deserved == b->mquotas[i].deserved);
        CHECK(a->mquotas[i].limit == b->mquotas[i].limit);
    }
    CHECK(a->members.n == b->members.n);
    for (int i = 0; i < a->members.n && i < b->members.n; i++)
        CHECK(strcmp(a->members.v[i], b->members.v[i]) == 0);
}

static void
check_same(const al__queue_t *a, const al__queue_t *b)
{
    CHECK(strcmp(a->name, b->name) == 0);
    CHECK(fuzz_str_eq(a->parent, b->parent));
    CHECK(a->priority == b->priority);
    for (int r = 0; r < AL_NRES; r++) {
        CHECK(a->quota[r].deserved == b->quota[r].deserved);
        CHECK(a->quota[r].limit == b->quota[r].limit);
        CHECK(a->quota[r].weight == b->quota[r].weight);
    }
    CHECK(a->build_capped == b->build_capped);
    CHECK(a->build_cap == b->build_cap);
    CHECK(a->idle_timeout == b->idle_timeout);
    CHECK(a->idle_util == b->idle_util);
    check_same_policy(a, b);
}

/* Users and "@group"s, valid names, none twice. */
static void
check_members(const al__names_t *m)
{
    CHECK(m->n >= 0 && m->n <= AL_MAX_MEMBERS);
    for (int i = 0; i < m->n; i++) {
        const char *s = m->v[i];
        fuzz_check_name(s[0] == '@' ? s + 1 : s, 64);
        for (int k = 0; k < i; k++)
            CHECK(strcmp(m->v[k], s) != 0);
    }
}

/* Per-model quotas within bounds, a minimum runtime >= 0. */
static void
check_models(const al__queue_t *q)
{
    CHECK(q->min_runtime >= 0);
    for (int i = 0; i < q->nmquotas; i++) {
        const al_model_quota_t *mq = &q->mquotas[i];
        CHECK(mq->model != NULL && mq->model[0] != '\0');
        CHECK(mq->deserved >= 0 && mq->deserved <= (int64_t)AL_QUOTA_MAX);
        CHECK(mq->limit == AL_UNLIMITED ||
              (mq->limit >= 0 && mq->limit <= (int64_t)AL_QUOTA_MAX));
    }
}

static void
release(al__queue_t *q)
{
    al__queue_fini(q);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = al_json_parse((const char *)data, size, NULL);
    if (body == NULL)
        return 0;
    al__queue_t q, before;
    memset(&q, 0x5a, sizeof q);
    memcpy(&before, &q, sizeof q);
    char *cause = NULL;
    int rc = al__queue_from_json(body, &q, &cause);
    if (rc != 0) {
        fuzz_check_refused(rc, &q, &before, sizeof q, cause);
        json_decref(body);
        return 0;
    }
    CHECK(strcmp(q.name, al_json_str(body, "name", "")) == 0);
    fuzz_check_name(q.name, 64);
    CHECK(q.parent == NULL || q.parent[0] != '\0');
    for (int r = 0; r < AL_NRES; r++) {
        const al_quota_t *qt = &q.quota[r];
        CHECK(qt->deserved >= 0 && qt->deserved <= (int64_t)AL_QUOTA_MAX);
        CHECK(qt->limit == AL_UNLIMITED ||
              (qt->limit >= 0 && qt->limit <= (int64_t)AL_QUOTA_MAX));
        CHECK(qt->weight >= 0 && isfinite(qt->weight));
    }
    CHECK(!q.build_capped ||
          (q.build_cap >= 0 && q.build_cap <= (int64_t)AL_QUOTA_MAX));
    CHECK(q.idle_timeout >= 0 && q.idle_util >= 0 && q.idle_util <= 100);
    check_members(&q.members);
    check_models(&q);
    json_t *doc = al__queue_json(&q, false);
    CHECK(doc != NULL);
    char *text = al_json_dump(doc);
    json_decref(doc);
    doc = al_json_parse(text, strlen(text), NULL);
    free(text);
    CHECK(doc != NULL);
    al__queue_t q2;
    CHECK(al__queue_from_json(doc, &q2, &cause) == 0);
    check_same(&q, &q2);
    release(&q2);
    json_decref(doc);
    /* The API's view, with its share, must be writable too. */
    doc = al__queue_json(&q, true);
    CHECK(doc != NULL);
    json_decref(doc);
    release(&q);
    json_decref(body);
    return 0;
}
