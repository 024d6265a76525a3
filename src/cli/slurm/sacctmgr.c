/*
 * sacctmgr.c -- `sacctmgr list user NAME format=account` (-n, -P, -p, -s)
 * and `sacctmgr list account`: the accounts a user may use, which on allot
 * are the leaf queues (every user may submit to every queue).  Changes are
 * refused: queues are made with `allot queue set`.
 *
 * May call: slurm.c (the API).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "slurm_int.h"

typedef struct mgr_args {
    bool noheader, parsable, p1;
    const char *verb, *entity, *user, *format;
} mgr_args_t;

static void
parse(int argc, char **argv, mgr_args_t *a)
{
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (strcmp(w, "-n") == 0 || strcmp(w, "--noheader") == 0)
            a->noheader = true;
        else if (strcmp(w, "-P") == 0 || strcmp(w, "--parsable2") == 0)
            a->parsable = true;
        else if (strcmp(w, "-p") == 0 || strcmp(w, "--parsable") == 0)
            a->parsable = a->p1 = true;
        else if (w[0] == '-')
            continue; /* -s, -i, -Q: nothing changes here */
        else if (a->verb == NULL)
            a->verb = w;
        else if (a->entity == NULL)
            a->entity = w;
        else if (strncasecmp(w, "format=", 7) == 0)
            a->format = w + 7;
        else if (strncasecmp(w, "name=", 5) == 0 ||
                 strncasecmp(w, "names=", 6) == 0)
            a->user = strchr(w, '=') + 1;
        else if (strchr(w, '=') == NULL && a->user == NULL)
            a->user = w;
    }
}

static bool
listing(const mgr_args_t *a)
{
    static const char *const entities[] = { "user", "users", "account",
                                            "accounts" };
    if (a->verb == NULL || a->entity == NULL ||
        (strcasecmp(a->verb, "list") != 0 && strcasecmp(a->verb, "show") != 0))
        return false;
    for (size_t i = 0; i < sizeof entities / sizeof entities[0]; i++)
        if (strcasecmp(a->entity, entities[i]) == 0)
            return true;
    return false;
}

/* A field's name as Slurm writes it. */
static const char *
title(const char *f)
{
    return strcasecmp(f, "account") == 0 ? "Account"
           : strcasecmp(f, "user") == 0  ? "User"
                                         : f;
}

static void
cell(const mgr_args_t *a, size_t k, const char *v)
{
    if (a->parsable)
        printf("%s%s", k ? "|" : "", v);
    else
        printf("%10s ", v);
}

/* Is queue i of queues some queue's parent (so no account to submit to)? */
static bool
parent(const json_t *queues, size_t i)
{
    const char *name = al_json_str(json_array_get(queues, i), "name", "");
    for (size_t k = 0; k < json_array_size(queues); k++)
        if (strcmp(al_json_str(json_array_get(queues, k), "parent", ""),
                   name) == 0)
            return true;
    return false;
}

int
al__sacctmgr(int argc, char **argv)
{
    mgr_args_t a = { false, false, false, NULL, NULL, NULL, "User,Account" };
    parse(argc, argv, &a);
    if (!listing(&a)) {
        fprintf(stderr, "sacctmgr: error: only `sacctmgr list user NAME "
                        "format=account` and `sacctmgr list account` are "
                        "available on allot (queues are made with `allot "
                        "queue set`)\n");
        return 1;
    }
    bool by_user = a.entity != NULL && strncasecmp(a.entity, "user", 4) == 0;
    al_client_t c;
    if (al__sl_connect(&c) != 0)
        return 1;
    json_t *out = NULL, *who = NULL;
    if (al_client_call(&c, "GET", "/v1/queues", NULL, &out, NULL, NULL) != 0) {
        al_client_fini(&c);
        return 1;
    }
    if (a.user == NULL && by_user &&
        al_client_call(&c, "GET", "/v1/whoami", NULL, &who, NULL, NULL) == 0)
        a.user = al_json_str(who, "user", "");
    json_t *queues = json_object_get(out, "queues");
    json_t *fields = al__sl_split(a.format);
    size_t nf = json_array_size(fields);
    if (!a.noheader) {
        for (size_t k = 0; k < nf; k++)
            cell(&a, k, title(json_string_value(json_array_get(fields, k))));
        printf("%s\n", a.p1 ? "|" : "");
        for (size_t k = 0; k < nf && !a.parsable; k++)
            printf("---------- %s", k + 1 == nf ? "\n" : "");
    }
    for (size_t i = 0; i < json_array_size(queues); i++) {
        if (parent(queues, i))
            continue;
        const char *name = al_json_str(json_array_get(queues, i), "name", "");
        for (size_t k = 0; k < nf; k++) {
            const char *f = json_string_value(json_array_get(fields, k));
            cell(&a, k,
                 strcasecmp(f, "account") == 0                     ? name
                 : strcasecmp(f, "user") == 0 && by_user && a.user ? a.user
                                                                   : "");
        }
        printf("%s\n", a.p1 ? "|" : "");
    }
    json_decref(fields);
    json_decref(who);
    json_decref(out);
    al_client_fini(&c);
    return 0;
}
