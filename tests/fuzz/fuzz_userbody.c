/*
 * fuzz_userbody.c -- libFuzzer harness for a user's settings and a group
 * (PUT /v1/users/NAME, PUT /v1/groups/NAME, and their stored documents):
 * al__user_from_json and al__group_from_json in src/server/memberdoc.c.
 * Each input is JSON text, read as both.  Checks:
 *   - a refusal is AL_EINVAL with a message and leaves the output alone;
 *   - an accepted user has a valid name and a default queue that is NULL
 *     or a valid queue name; an accepted group valid user names, none
 *     twice, at most AL_MAX_MEMBERS;
 *   - each JSON form reads back into the same object (what the store does
 *     at restart).
 * Corpus: tests/fuzz/corpus/userbody.
 */
#include <ctype.h>

#include "core/error.h"
#include "fuzz.h"
#include "json.h"
#include "server_int.h"

/* The document's JSON text parsed again. */
static json_t *
again(json_t *doc)
{
    char *text = al_json_dump(doc);
    json_decref(doc);
    json_t *v = al_json_parse(text, strlen(text), NULL);
    free(text);
    CHECK(v != NULL);
    return v;
}

static void
user(const json_t *body)
{
    al__user_t u, before;
    memset(&u, 0x5a, sizeof u);
    memcpy(&before, &u, sizeof u);
    char *cause = NULL;
    int rc = al__user_from_json(body, NULL, &u, &cause);
    if (rc != 0) {
        fuzz_check_refused(rc, &u, &before, sizeof u, cause);
        return;
    }
    fuzz_check_name(u.name, 64);
    if (u.default_queue != NULL)
        fuzz_check_name(u.default_queue, 64);
    json_t *doc = again(al__user_json(&u));
    al__user_t u2;
    CHECK(al__user_from_json(doc, u.name, &u2, &cause) == 0);
    CHECK(strcmp(u.name, u2.name) == 0);
    CHECK(fuzz_str_eq(u.default_queue, u2.default_queue));
    json_decref(doc);
    al__user_fini(&u2);
    al__user_fini(&u);
}

static void
group(const json_t *body)
{
    al__group_t g, before;
    memset(&g, 0x5a, sizeof g);
    memcpy(&before, &g, sizeof g);
    char *cause = NULL;
    int rc = al__group_from_json(body, NULL, &g, &cause);
    if (rc != 0) {
        fuzz_check_refused(rc, &g, &before, sizeof g, cause);
        return;
    }
    fuzz_check_name(g.name, 64);
    CHECK(g.users.n >= 0 && g.users.n <= AL_MAX_MEMBERS);
    for (int i = 0; i < g.users.n; i++) {
        fuzz_check_name(g.users.v[i], 64);
        for (int k = 0; k < i; k++)
            CHECK(strcmp(g.users.v[k], g.users.v[i]) != 0);
    }
    json_t *doc = again(al__group_json(&g));
    al__group_t g2;
    CHECK(al__group_from_json(doc, NULL, &g2, &cause) == 0);
    CHECK(strcmp(g.name, g2.name) == 0 && g.users.n == g2.users.n);
    for (int i = 0; i < g.users.n && i < g2.users.n; i++)
        CHECK(strcmp(g.users.v[i], g2.users.v[i]) == 0);
    json_decref(doc);
    al__group_fini(&g2);
    al__group_fini(&g);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = al_json_parse((const char *)data, size, NULL);
    if (body == NULL)
        return 0;
    user(body);
    group(body);
    json_decref(body);
    return 0;
}
