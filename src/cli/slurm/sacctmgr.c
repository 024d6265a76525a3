/*
 * sacctmgr.c -- `sacctmgr list user NAME format=account` (-n, -P, -s):
 * the accounts a user may use, which on allot are the leaf queues (every
 * user may submit to every queue).  Changes are refused: queues are made
 * with `allot queue set`.
 *
 * May call: slurm.c (the API).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "slurm_int.h"

int
al__sacctmgr(int argc, char **argv)
{
    bool noheader = false, parsable = false, p1 = false;
    const char *verb = NULL, *entity = NULL, *user = NULL,
               *format = "User,Account";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-n") == 0 || strcmp(a, "--noheader") == 0)
            noheader = true;
        else if (strcmp(a, "-P") == 0 || strcmp(a, "--parsable2") == 0)
            parsable = true;
        else if (strcmp(a, "-p") == 0 || strcmp(a, "--parsable") == 0)
            parsable = p1 = true;
        else if (a[0] == '-')
            ; /* -s, -i, -Q: nothing changes here */
        else if (verb == NULL)
            verb = a;
        else if (entity == NULL)
            entity = a;
        else if (strncasecmp(a, "format=", 7) == 0)
            format = a + 7;
        else if (strncasecmp(a, "name=", 5) == 0 ||
                 strncasecmp(a, "names=", 6) == 0)
            user = strchr(a, '=') + 1;
        else if (strchr(a, '=') == NULL && user == NULL)
            user = a;
    }
    if (verb == NULL || entity == NULL ||
        (strcasecmp(verb, "list") != 0 && strcasecmp(verb, "show") != 0) ||
        (strcasecmp(entity, "user") != 0 && strcasecmp(entity, "users") != 0 &&
         strcasecmp(entity, "account") != 0 &&
         strcasecmp(entity, "accounts") != 0)) {
        fprintf(stderr, "sacctmgr: error: only `sacctmgr list user NAME "
                        "format=account` and `sacctmgr list account` are "
                        "available on allot (queues are made with `allot "
                        "queue set`)\n");
        return 1;
    }
    bool by_user = strncasecmp(entity, "user", 4) == 0;
    al_client_t c;
    if (al__sl_connect(&c) != 0)
        return 1;
    json_t *out = NULL;
    if (al_client_call(&c, "GET", "/v1/queues", NULL, &out, NULL, NULL) != 0) {
        al_client_fini(&c);
        return 1;
    }
    json_t *queues = json_object_get(out, "queues");
    json_t *fields = al__sl_split(format);
    /* A parent queue holds no jobs: only leaves are accounts to submit to. */
    const char *self = user;
    json_t *who = NULL;
    if (self == NULL && by_user &&
        al_client_call(&c, "GET", "/v1/whoami", NULL, &who, NULL, NULL) == 0)
        self = al_json_str(who, "user", "");
    if (!noheader) {
        for (size_t k = 0; k < json_array_size(fields); k++) {
            const char *f = json_string_value(json_array_get(fields, k));
            if (parsable)
                printf("%s%s", k ? "|" : "",
                       strcasecmp(f, "account") == 0 ? "Account"
                       : strcasecmp(f, "user") == 0  ? "User"
                                                     : f);
            else
                printf("%10s ", strcasecmp(f, "account") == 0 ? "Account"
                                : strcasecmp(f, "user") == 0  ? "User"
                                                              : f);
        }
        printf("%s\n", p1 ? "|" : "");
        if (!parsable) {
            for (size_t k = 0; k < json_array_size(fields); k++)
                printf("---------- ");
            printf("\n");
        }
    }
    for (size_t i = 0; i < json_array_size(queues); i++) {
        const json_t *q = json_array_get(queues, i);
        const char *name = al_json_str(q, "name", "");
        bool parent = false;
        for (size_t k = 0; k < json_array_size(queues); k++)
            parent = parent || strcmp(al_json_str(json_array_get(queues, k),
                                                  "parent", ""),
                                      name) == 0;
        if (parent)
            continue;
        for (size_t k = 0; k < json_array_size(fields); k++) {
            const char *f = json_string_value(json_array_get(fields, k));
            const char *v = strcasecmp(f, "account") == 0 ? name
                            : strcasecmp(f, "user") == 0 && by_user
                                ? (self ? self : "")
                                : "";
            if (parsable)
                printf("%s%s", k ? "|" : "", v);
            else
                printf("%10s ", v);
        }
        printf("%s\n", p1 ? "|" : "");
    }
    json_decref(who);
    json_decref(fields);
    json_decref(out);
    al_client_fini(&c);
    return 0;
}
