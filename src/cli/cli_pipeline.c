/*
 * cli_pipeline.c -- `allot pipeline submit|ls|show|cancel|retry`: a whole
 * workflow in one submission (a YAML or JSON file of stages, see
 * docs/pipelines.md), its stages' states drawn in the terminal, and the
 * pipeline ended or its failed stages run again.  The file is read here
 * and checked by the controller (POST /v1/pipelines), which creates every
 * stage in one request or none; a directory for the stages' artefacts is
 * made here, under the current one, before the submission.
 *
 * May call: cli_client.c (the API), common's option tables and JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "fs.h"
#include "json.h"
#include "opt.h"
#include "xmalloc.h"

#define AL_PIPELINE_FILE_MAX ((size_t)1 << 20)

typedef struct pipe_args {
    const char *server, *token;
    bool json, help;
} pipe_args_t;

#define P(f) offsetof(pipe_args_t, f)

static const al_opt_t pipe_opts[] = {
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = P(json),
      .help = "print the controller's JSON" },
    AL_CLI_CONN_OPTS(pipe_args_t),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_pipeline_cmd = {
    .name = "pipeline",
    .opts = pipe_opts,
    .lead = "submit|ls|show|cancel|retry",
    .args = "[FILE [--set KEY=VALUE]... | ID]",
    .about =
        "  submit FILE   create a pipeline and all its stages (YAML or "
        "JSON, see\n"
        "                docs/pipelines.md); prints its id.  --set KEY=VALUE "
        "gives a\n"
        "                parameter of the file a value\n"
        "  ls            your pipelines\n"
        "  show ID       its stages as a graph, with states and reasons\n"
        "  cancel ID     cancel the stages that have not ended\n"
        "  retry ID      run again the failed and cancelled stages (and "
        "what\n"
        "                waits on them)\n",
};

/* The environment a stage gets from the submitter, as `allot submit`. */
static const char *const passed_env[] = { "PATH",       "HOME", "LANG",
                                          "LC_ALL",     "USER", "PYTHONPATH",
                                          "VIRTUAL_ENV" };

static int
usage(void)
{
    al_opt_usage(stderr, &al_cli_pipeline_cmd);
    return AL_EXIT_USAGE;
}

/* A directory for the pipeline's artefacts: .allot-pipelines/XXXXXX under
 * the current one.  NULL after saying why. */
static char *
make_dir(const char *cwd)
{
    char *base = al_xasprintf("%s/.allot-pipelines", cwd);
    if (mkdir(base, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "allot pipeline: %s: %s\n", base, strerror(errno));
        free(base);
        return NULL;
    }
    char *tmpl = al_xasprintf("%s/XXXXXX", base);
    free(base);
    if (mkdtemp(tmpl) == NULL) {
        fprintf(stderr, "allot pipeline: %s: %s\n", tmpl, strerror(errno));
        free(tmpl);
        return NULL;
    }
    return tmpl;
}

static int
submit(al_client_t *c, const pipe_args_t *a, const char *path, json_t *sets)
{
    char *text = NULL;
    size_t len = 0;
    if (al_fs_read_file(path, &text, &len) != 0) {
        fprintf(stderr, "allot pipeline: %s: %s\n", path, strerror(errno));
        return AL_EXIT_FAIL;
    }
    if (len > AL_PIPELINE_FILE_MAX) {
        fprintf(stderr, "allot pipeline: %s: larger than 1 MiB\n", path);
        free(text);
        return AL_EXIT_FAIL;
    }
    json_t *file = json_stringn(text, len);
    free(text);
    if (file == NULL) {
        fprintf(stderr, "allot pipeline: %s: not UTF-8 text\n", path);
        return AL_EXIT_FAIL;
    }
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) == NULL) {
        json_decref(file);
        fprintf(stderr, "allot pipeline: the current directory: %s\n",
                strerror(errno));
        return AL_EXIT_FAIL;
    }
    char *dir = make_dir(cwd);
    if (dir == NULL) {
        json_decref(file);
        return AL_EXIT_FAIL;
    }
    json_t *env = json_object();
    for (size_t i = 0; i < sizeof passed_env / sizeof passed_env[0]; i++) {
        const char *v = getenv(passed_env[i]);
        if (v != NULL)
            json_object_set_new(env, passed_env[i], json_string(v));
    }
    json_t *body = json_pack("{s:o, s:O, s:s, s:o, s:s}", "file", file, "set",
                             sets, "cwd", cwd, "env", env, "dir", dir);
    json_t *out = NULL;
    int rc = body != NULL ? al_client_call(c, "POST", "/v1/pipelines", body,
                                           &out, NULL, NULL)
                          : AL_EXIT_FAIL;
    json_decref(body);
    if (rc != 0) {
        rmdir(dir); /* refused: nothing will use it */
        free(dir);
        return rc;
    }
    free(dir);
    if (a->json)
        al_cli_print_json(out);
    else
        printf("%lld\n", (long long)al_json_int(out, "id", 0));
    json_decref(out);
    return AL_EXIT_OK;
}

static void
print_ls(const json_t *a)
{
    printf("%-8s %-20s %-10s %-10s %7s\n", "ID", "NAME", "USER", "STATE",
           "STAGES");
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *p = json_array_get(a, i);
        char st[32];
        snprintf(st, sizeof st, "%lld/%lld",
                 (long long)al_json_int(p, "completed", 0),
                 (long long)al_json_int(p, "stages", 0));
        printf("%-8lld %-20s %-10s %-10s %7s\n",
               (long long)al_json_int(p, "id", 0), al_json_str(p, "name", ""),
               al_json_str(p, "user", ""), al_json_str(p, "state", ""), st);
    }
}

/* The stage of list st named nm, or -1. */
static int
stage_index(const json_t *st, const char *nm)
{
    for (size_t i = 0; i < json_array_size(st); i++)
        if (strcmp(al_json_str(json_array_get(st, i), "name", ""), nm) == 0)
            return (int)i;
    return -1;
}

static const char *
mark(const char *state)
{
    return strcmp(state, "completed") == 0       ? "ok"
           : strcmp(state, "failed") == 0        ? "FAILED"
           : strcmp(state, "out_of_memory") == 0 ? "OUT_OF_MEMORY"
           : strcmp(state, "cancelled") == 0     ? "cancelled"
           : strcmp(state, "running") == 0       ? "running"
                                                 : "waiting";
}

/* The graph, one column per level (a stage's level is one more than its
 * needs' highest), then a line per stage. */
static void
print_show(const json_t *p)
{
    const json_t *st = json_object_get(p, "stage_list");
    size_t n = json_array_size(st);
    int *level = al_xcalloc(n + 1, sizeof(int));
    int maxl = 0;
    /* Stages come in an order where needs come first. */
    for (size_t i = 0; i < n; i++) {
        const json_t *needs = json_object_get(json_array_get(st, i), "needs");
        for (size_t k = 0; k < json_array_size(needs); k++) {
            int d =
                stage_index(st, json_string_value(json_array_get(needs, k)));
            if (d >= 0 && level[d] + 1 > level[i])
                level[i] = level[d] + 1;
        }
        if (level[i] > maxl)
            maxl = level[i];
    }
    printf("pipeline %lld %s (%s): %s, %lld of %zu stages completed\n\n",
           (long long)al_json_int(p, "id", 0), al_json_str(p, "name", ""),
           al_json_str(p, "user", ""), al_json_str(p, "state", ""),
           (long long)al_json_int(p, "completed", 0), n);
    for (int l = 0; l <= maxl; l++) {
        printf("  %s", l == 0 ? "   " : "-> ");
        bool first = true;
        for (size_t i = 0; i < n; i++) {
            if (level[i] != l)
                continue;
            const json_t *s = json_array_get(st, i);
            printf("%s[%s %s]", first ? "" : "  ", al_json_str(s, "name", ""),
                   mark(al_json_str(s, "state", "")));
            first = false;
        }
        printf("\n");
    }
    printf("\n  %-16s %-8s %-10s %-8s %-20s %s\n", "STAGE", "JOB", "STATE",
           "WHEN", "NEEDS", "REASON");
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(st, i);
        char needs[256] = "-";
        const json_t *nd = json_object_get(s, "needs");
        size_t off = 0;
        for (size_t k = 0; k < json_array_size(nd) && off < sizeof needs - 1;
             k++) {
            int w =
                snprintf(needs + off, sizeof needs - off, "%s%s", k ? "," : "",
                         json_string_value(json_array_get(nd, k)));
            if (w < 0)
                break;
            off += (size_t)w;
        }
        printf("  %-16s %-8lld %-10s %-8s %-20s %s\n",
               al_json_str(s, "name", ""), (long long)al_json_int(s, "job", 0),
               al_json_str(s, "state", ""), al_json_str(s, "when", ""), needs,
               al_json_str(s, "reason", ""));
    }
    free(level);
}

int
al_cli_pipeline(int argc, char **argv)
{
    /* --set KEY=VALUE may repeat: taken out before the option table. */
    json_t *sets = json_object();
    char **rest = al_xcalloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        const char *kv = NULL;
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc)
            kv = argv[++i];
        else if (strncmp(argv[i], "--set=", 6) == 0)
            kv = argv[i] + 6;
        if (kv == NULL) {
            rest[nrest++] = argv[i];
            continue;
        }
        const char *eq = strchr(kv, '=');
        json_t *v = eq != NULL ? json_string(eq + 1) : NULL;
        if (eq == NULL || eq == kv || v == NULL) {
            fprintf(stderr, "allot pipeline: --set wants KEY=VALUE, got '%s'\n",
                    kv);
            json_decref(v);
            json_decref(sets);
            free(rest);
            return AL_EXIT_USAGE;
        }
        char *k = al_xstrndup(kv, (size_t)(eq - kv));
        json_object_set_new(sets, k, v);
        free(k);
    }
    pipe_args_t a = { 0 };
    char *pos[4];
    int npos = 0;
    int rc = al_opt_parse_cmd(&al_cli_pipeline_cmd, NULL, &a, nrest, rest, pos,
                              4, &npos);
    free(rest);
    if (rc != 0 || a.help) {
        json_decref(sets);
        if (a.help) {
            al_opt_usage(stdout, &al_cli_pipeline_cmd);
            return AL_EXIT_OK;
        }
        return rc;
    }
    const char *verb = npos > 0 ? pos[0] : "";
    bool is_ls = strcmp(verb, "ls") == 0;
    bool known = is_ls || strcmp(verb, "submit") == 0 ||
                 strcmp(verb, "show") == 0 || strcmp(verb, "cancel") == 0 ||
                 strcmp(verb, "retry") == 0;
    if (!known || npos != (is_ls ? 1 : 2) ||
        (json_object_size(sets) > 0 && strcmp(verb, "submit") != 0)) {
        json_decref(sets);
        return usage();
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0) {
        json_decref(sets);
        return rc;
    }
    json_t *out = NULL;
    if (strcmp(verb, "submit") == 0) {
        rc = submit(&c, &a, pos[1], sets);
    } else if (is_ls) {
        rc = al_client_call(&c, "GET", "/v1/pipelines", NULL, &out, NULL, NULL);
        if (rc == 0 && a.json)
            al_cli_print_json(out);
        else if (rc == 0)
            print_ls(out);
    } else {
        char path[128];
        bool get = strcmp(verb, "show") == 0;
        if (strspn(pos[1], "0123456789") != strlen(pos[1]) ||
            strlen(pos[1]) > 20) {
            fprintf(stderr, "allot pipeline %s: '%s' is no pipeline id\n", verb,
                    pos[1]);
            rc = AL_EXIT_USAGE;
        } else {
            snprintf(path, sizeof path, "/v1/pipelines/%s%s%s", pos[1],
                     get ? "" : "/", get ? "" : verb);
            rc = al_client_call(&c, get ? "GET" : "POST", path, NULL, &out,
                                NULL, NULL);
        }
        if (rc == 0 && (a.json || !get)) {
            if (a.json)
                al_cli_print_json(out);
            else
                printf("%s pipeline %s\n",
                       strcmp(verb, "cancel") == 0 ? "cancelled" : "retried",
                       pos[1]);
        } else if (rc == 0) {
            print_show(out);
        }
    }
    json_decref(out);
    json_decref(sets);
    al_client_fini(&c);
    return rc;
}
