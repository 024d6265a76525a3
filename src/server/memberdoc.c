/*
 * memberdoc.c -- the JSON forms of who may use a queue: a list of names (a
 * queue's `members`: user names and "@group"s; a group's `users`), a
 * user's document ({"name", "default_queue"}) and a group's ({"name",
 * "users"}), the same in the API and in the store, read back checked.
 *
 * May call: common's JSON and allocation helpers only (doc.c calls it
 * for a queue's members, so it keeps its own name checks rather than
 * call doc.c's).  Called by doc.c, store.c (loading users and groups)
 * and the handlers (api_users.c).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

/* The longest user or group name (a token's user is 1..64 too). */
#define NAME_MAX_LEN 64

/* 1..max letters, digits, '-', '_' or '.' (as doc.c's al__valid_name()). */
static bool
valid_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return false;
    return true;
}

/* The first member of o not among the two names known, or NULL. */
static const char *
unknown_member(const json_t *o, const char *a, const char *b)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        (void)v;
        if (strcmp(k, a) != 0 && strcmp(k, b) != 0)
            return k;
    }
    return NULL;
}

bool
al__names_has(const al__names_t *n, const char *name)
{
    for (int i = 0; i < n->n; i++)
        if (strcmp(n->v[i], name) == 0)
            return true;
    return false;
}

void
al__names_fini(al__names_t *n)
{
    for (int i = 0; i < n->n; i++)
        free(n->v[i]);
    free(n->v);
    n->v = NULL;
    n->n = 0;
}

json_t *
al__names_json(const al__names_t *n)
{
    json_t *a = json_array();
    for (int i = 0; i < n->n; i++)
        json_array_append_new(a, json_string(n->v[i]));
    return a;
}

int
al__names_read(const json_t *o, const char *key, bool groups, al__names_t *out,
               char **cause)
{
    json_t *a = json_object_get(o, key);
    al__names_t tmp = { NULL, 0 };
    if (a == NULL || json_is_null(a)) {
        *out = tmp;
        return 0;
    }
    if (!json_is_array(a) || json_array_size(a) > AL_MAX_MEMBERS)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("%s must be a list of at most %d names",
                                     key, AL_MAX_MEMBERS));
    tmp.v = al_xcalloc(json_array_size(a) + 1, sizeof *tmp.v);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *s = json_string_value(json_array_get(a, i));
        const char *bare = s != NULL && groups && s[0] == '@' ? s + 1 : s;
        const char *why = NULL;
        if (s == NULL || !valid_name(bare, NAME_MAX_LEN))
            why = groups ? "a user name or @group (1-64 letters, digits, "
                           "'-', '_' or '.')"
                         : "a user name (1-64 letters, digits, '-', '_' or "
                           "'.')";
        else if (al__names_has(&tmp, s))
            why = "named once only";
        if (why != NULL) {
            al__names_fini(&tmp);
            return al__fail(cause, AL_EINVAL,
                            al_xasprintf("%s[%zu] must be %s", key, i, why));
        }
        tmp.v[tmp.n++] = al_xstrdup(s);
    }
    *out = tmp;
    return 0;
}

/* The name of a user or group document: the path's when given (the body
 * may repeat it, not contradict it), else the body's. */
static int
doc_name(const json_t *o, const char *name, const char *what, char **out,
         char **cause)
{
    json_t *v = json_object_get(o, "name");
    const char *b = json_string_value(v);
    if ((v != NULL && b == NULL) ||
        (name != NULL && b != NULL && strcmp(name, b) != 0))
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("name must be the %s's name", what));
    const char *n = name != NULL ? name : b;
    if (n == NULL || !valid_name(n, NAME_MAX_LEN))
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("a %s name must be 1-64 letters, digits, "
                                     "'-', '_' or '.'",
                                     what));
    *out = al_xstrdup(n);
    return 0;
}

json_t *
al__user_json(const al__user_t *u)
{
    return json_pack("{s:s, s:s?}", "name", u->name, "default_queue",
                     u->default_queue);
}

int
al__user_from_json(const json_t *o, const char *name, al__user_t *u,
                   char **cause)
{
    const char *bad;
    if (!json_is_object(o))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("a user is a JSON object {\"name\", "
                                   "\"default_queue\"}"));
    if ((bad = unknown_member(o, "name", "default_queue")) != NULL)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("unknown field '%s' (a user has name "
                                     "and default_queue)",
                                     bad));
    json_t *dq = json_object_get(o, "default_queue");
    const char *q = json_string_value(dq);
    if ((dq != NULL && !json_is_null(dq) && q == NULL) ||
        (q != NULL && q[0] != '\0' && !valid_name(q, 64)))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("default_queue must be a queue name, or "
                                   "null for none"));
    char *n = NULL;
    int rc = doc_name(o, name, "user", &n, cause);
    if (rc != 0)
        return rc;
    u->name = n;
    u->default_queue = q != NULL && q[0] != '\0' ? al_xstrdup(q) : NULL;
    return 0;
}

void
al__user_fini(al__user_t *u)
{
    free(u->name);
    free(u->default_queue);
    u->name = u->default_queue = NULL;
}

json_t *
al__group_json(const al__group_t *g)
{
    return json_pack("{s:s, s:o}", "name", g->name, "users",
                     al__names_json(&g->users));
}

int
al__group_from_json(const json_t *o, const char *name, al__group_t *g,
                    char **cause)
{
    const char *bad;
    if (!json_is_object(o))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("a group is a JSON object {\"name\", "
                                   "\"users\": [...]}"));
    if ((bad = unknown_member(o, "name", "users")) != NULL)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("unknown field '%s' (a group has name "
                                     "and users)",
                                     bad));
    char *n = NULL;
    int rc = doc_name(o, name, "group", &n, cause);
    if (rc != 0)
        return rc;
    al__names_t users;
    if ((rc = al__names_read(o, "users", false, &users, cause)) != 0) {
        free(n);
        return rc;
    }
    g->name = n;
    g->users = users;
    return 0;
}

void
al__group_fini(al__group_t *g)
{
    free(g->name);
    g->name = NULL;
    al__names_fini(&g->users);
}
