/*
 * cli_users.c -- who may use a queue: `allot user list|show|set` (a
 * user's default queue), `allot group list|set|delete` (named lists of
 * users), and the members options of `allot queue set`
 * (al_cli_queue_members()).
 *
 * May call: cli_client.c (the API) and common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_client.h"
#include "json.h"

/* Appends the names of comma-separated list to array a, each once. */
static void
add_names(json_t *a, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    for (char *t = copy != NULL ? strtok_r(copy, ",", &save) : NULL; t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        bool have = false;
        for (size_t i = 0; i < json_array_size(a) && !have; i++)
            have = strcmp(json_string_value(json_array_get(a, i)), t) == 0;
        if (!have)
            json_array_append_new(a, json_string(t));
    }
    free(copy);
}

bool
al_cli_queue_members(json_t *body, const char *members, const char *add)
{
    json_t *old = json_object_get(body, "members");
    json_t *a = json_array();
    if (members == NULL && json_is_array(old))
        for (size_t i = 0; i < json_array_size(old); i++)
            if (json_is_string(json_array_get(old, i)))
                json_array_append(a, json_array_get(old, i));
    if (members != NULL)
        add_names(a, members);
    if (add != NULL) {
        if (add[0] == '\0') {
            fprintf(stderr, "allot queue: --add-member wants USER or "
                            "@GROUP, comma-separated\n");
            json_decref(a);
            return false;
        }
        add_names(a, add);
    }
    json_object_set_new(body, "members", a);
    return true;
}

typedef struct users_args {
    const char *default_queue, *users, *server, *token;
    bool json, help;
} users_args_t;

#define U(f) offsetof(users_args_t, f)

static const al_opt_t user_opts[] = {
    { .name = "--default-queue",
      .kind = AL_OPT_STR,
      .off = U(default_queue),
      .arg = "Q",
      .help = "where the user's jobs go when they name no queue (\"\": the "
              "queue named default)",
      .flags = AL_OPT_BRIEF },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = U(json),
      .help = "the answer as JSON" },
    AL_CLI_CONN_OPTS(users_args_t),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_user_cmd = {
    .name = "user",
    .opts = user_opts,
    .lead = "list|show [NAME]|set NAME",
    .about = "A user's settings: the default queue, and the queues the user "
             "may submit\ninto.  Admins set them and see everyone's; a user "
             "sees her own.\n",
};

static const al_opt_t group_opts[] = {
    { .name = "--users",
      .kind = AL_OPT_STR,
      .off = U(users),
      .arg = "A,B,...",
      .help = "the group's users",
      .flags = AL_OPT_BRIEF },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = U(json),
      .help = "the answer as JSON" },
    AL_CLI_CONN_OPTS(users_args_t),
    { .name = NULL },
};

#undef U

const al_opt_cmd_t al_cli_group_cmd = {
    .name = "group",
    .opts = group_opts,
    .lead = "list|set NAME|delete NAME",
    .about = "Groups of users, which a queue's members name as @NAME (allot "
             "queue set Q\n--members alice,@vision).  Admins change them.\n",
};

/* One call; the answer printed as JSON when json, else by show(). */
static int
call(const users_args_t *a, const char *method, const char *path, json_t *body,
     void (*show)(const json_t *))
{
    al_client_t c;
    int rc = al_client_init(&c, a->server, a->token);
    if (rc != 0) {
        json_decref(body);
        return rc;
    }
    json_t *out = NULL;
    rc = al_client_call(&c, method, path, body, &out, NULL, NULL);
    json_decref(body);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    if (a->json)
        al_cli_print_json(out);
    else
        show(out);
    json_decref(out);
    return AL_EXIT_OK;
}

static void
show_user(const json_t *u)
{
    json_t *qs = json_object_get(u, "queues");
    printf("%-16s %-16s", al_json_str(u, "name", ""),
           al_json_str(u, "queue", "-"));
    for (size_t i = 0; i < json_array_size(qs); i++)
        printf("%s%s", i ? "," : " ", json_string_value(json_array_get(qs, i)));
    printf("\n");
}

static void
show_users(const json_t *o)
{
    json_t *us = json_object_get(o, "users");
    printf("%-16s %-16s %s\n", "USER", "DEFAULT-QUEUE", "MAY-USE");
    if (us == NULL) {
        show_user(o);
        return;
    }
    for (size_t i = 0; i < json_array_size(us); i++)
        show_user(json_array_get(us, i));
}

static void
show_groups(const json_t *o)
{
    json_t *gs = json_object_get(o, "groups");
    printf("%-16s %s\n", "GROUP", "USERS");
    for (size_t i = 0; i < json_array_size(gs) || (gs == NULL && i == 0); i++) {
        const json_t *g = gs != NULL ? json_array_get(gs, i) : o;
        json_t *us = json_object_get(g, "users");
        printf("%-16s", al_json_str(g, "name", ""));
        for (size_t k = 0; k < json_array_size(us); k++)
            printf("%s%s", k ? "," : " ",
                   json_string_value(json_array_get(us, k)));
        printf("\n");
    }
}

static void
show_deleted(const json_t *o)
{
    printf("deleted group %s\n", al_json_str(o, "deleted", "?"));
}

int
al_cli_user(int argc, char **argv)
{
    users_args_t a = { 0 };
    char *pos[2];
    int npos = 0;
    int rc =
        al_opt_parse_cmd(&al_cli_user_cmd, NULL, &a, argc, argv, pos, 2, &npos);
    const char *verb = npos > 0 ? pos[0] : "";
    bool list = strcmp(verb, "list") == 0 && npos == 1;
    bool show = strcmp(verb, "show") == 0 && npos <= 2;
    bool set = strcmp(verb, "set") == 0 && npos == 2;
    if (rc == 0 && set && a.default_queue == NULL)
        fprintf(stderr, "allot user: set what? give --default-queue Q\n");
    if (rc != 0 || a.help || !(list || show || set) ||
        (set && a.default_queue == NULL)) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_user_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    char path[200];
    if (list)
        return call(&a, "GET", "/v1/users", NULL, show_users);
    if (show && npos == 1) {
        /* Oneself: whoami says who that is. */
        al_client_t c;
        json_t *me = NULL;
        if ((rc = al_client_init(&c, a.server, a.token)) != 0)
            return rc;
        rc = al_client_call(&c, "GET", "/v1/whoami", NULL, &me, NULL, NULL);
        al_client_fini(&c);
        if (rc != 0)
            return rc;
        snprintf(path, sizeof path, "/v1/users/%s",
                 al_json_str(me, "user", ""));
        json_decref(me);
        return call(&a, "GET", path, NULL, show_users);
    }
    snprintf(path, sizeof path, "/v1/users/%s", pos[1]);
    if (show)
        return call(&a, "GET", path, NULL, show_users);
    json_t *body = json_object();
    json_object_set_new(body, "default_queue",
                        a.default_queue[0] ? json_string(a.default_queue)
                                           : json_null());
    return call(&a, "PUT", path, body, show_users);
}

int
al_cli_group(int argc, char **argv)
{
    users_args_t a = { 0 };
    char *pos[2];
    int npos = 0;
    int rc = al_opt_parse_cmd(&al_cli_group_cmd, NULL, &a, argc, argv, pos, 2,
                              &npos);
    const char *verb = npos > 0 ? pos[0] : "";
    bool list = strcmp(verb, "list") == 0 && npos == 1;
    bool set = strcmp(verb, "set") == 0 && npos == 2;
    bool del = strcmp(verb, "delete") == 0 && npos == 2;
    if (rc != 0 || a.help || !(list || set || del)) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_group_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    if (list)
        return call(&a, "GET", "/v1/groups", NULL, show_groups);
    char path[200];
    snprintf(path, sizeof path, "/v1/groups/%s", pos[1]);
    if (del)
        return call(&a, "DELETE", path, NULL, show_deleted);
    json_t *body = json_object(), *users = json_array();
    if (a.users != NULL)
        add_names(users, a.users);
    json_object_set_new(body, "users", users);
    return call(&a, "PUT", path, body, show_groups);
}
