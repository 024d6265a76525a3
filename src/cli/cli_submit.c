/* cli_submit.c -- `allot submit`: build a job from flags and a command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "json.h"

static const char submit_usage[] =
    "usage: allot submit [--gpus N | --gpu-fraction F] [--gpu-model M]\n"
    "                    [--cpus C] [--mem M]\n"
    "                    [--tasks N] [--queue Q] [--class train|build|"
    "inference]\n"
    "                    [--name X] [--after JOBID] [--time T]\n"
    "                    [--env K=V]... [--hold] [--json]\n"
    "                    [--server URL] [--token T] -- command args...\n"
    "       allot submit [options] job.sh [args...]\n"
    "Prints the new job's id.  --mem takes K/M/G/T suffixes (plain numbers\n"
    "are MiB).  The job runs in the current directory with PATH, HOME,\n"
    "LANG, and the --env variables.  A job script (a file starting with\n"
    "'#') is sent whole; its '#ALLOT --gpus 2' lines, before its first\n"
    "command, set options, and the command line overrides them.\n";

/* Variables of the submitter's environment passed on to the job. */
static const char *const passed_env[] = { "PATH",       "HOME", "LANG",
                                          "LC_ALL",     "USER", "PYTHONPATH",
                                          "VIRTUAL_ENV" };

static int
bad(const char *what)
{
    fprintf(stderr, "allot submit: %s\n", what);
    return AL_EXIT_USAGE;
}

/* Non-negative integer argument; false if malformed. */
static bool
num_arg(const char *s, long long max, long long *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || v < 0 || v > max)
        return false;
    *out = v;
    return true;
}

/* The flags that shape the job's request, as given. */
struct req_flags {
    const char *gpus, *frac, *cpus, *mem, *tasks, *after, *tlimit, *cls, *model;
};

/* Adds the request's members to body; returns an error text or NULL. */
static const char *
fill_resources(json_t *body, const struct req_flags *f)
{
    long long v;
    char *end;
    if (f->gpus != NULL) {
        if (!num_arg(f->gpus, 64, &v))
            return "--gpus wants a whole number 0..64 (use --gpu-fraction "
                   "for part of a GPU)";
        json_object_set_new(body, "gpus", json_integer(v));
    }
    if (f->frac != NULL) {
        double x = strtod(f->frac, &end);
        if (end == f->frac || *end != '\0' || x <= 0 || x >= 1 ||
            f->gpus != NULL)
            return "--gpu-fraction wants a number between 0 and 1, without "
                   "--gpus";
        json_object_set_new(body, "gpu_fraction", json_real(x));
    }
    if (f->cpus != NULL) {
        double c = strtod(f->cpus, &end);
        if (end == f->cpus || *end != '\0' || c < 0)
            return "--cpus wants a number of cores (e.g. 4 or 0.5)";
        json_object_set_new(body, "cpu_milli",
                            json_integer((json_int_t)(c * 1000 + 0.5)));
    }
    if (f->mem != NULL) {
        int64_t bytes;
        if (al_cli_parse_mem(f->mem, &bytes) != 0)
            return "--mem wants a size like 16G or 512M";
        json_object_set_new(body, "mem_bytes", json_integer(bytes));
    }
    if (f->tasks != NULL) {
        if (!num_arg(f->tasks, 4096, &v) || v == 0)
            return "--tasks wants a number 1..4096";
        json_object_set_new(body, "tasks", json_integer(v));
    }
    if (f->after != NULL) {
        if (!num_arg(f->after, (long long)1 << 62, &v) || v == 0)
            return "--after wants a job id";
        json_object_set_new(body, "after", json_pack("[I]", (json_int_t)v));
    }
    if (f->tlimit != NULL) {
        int64_t secs;
        if (al_cli_parse_duration(f->tlimit, &secs) != 0 || secs == 0)
            return "--time wants a duration like 3600, 90m, 2h or 1d";
        json_object_set_new(body, "time_limit", json_integer(secs));
    }
    if (f->model != NULL)
        json_object_set_new(body, "gpu_model", json_string(f->model));
    if (f->cls != NULL) {
        if (strcmp(f->cls, "train") != 0 && strcmp(f->cls, "build") != 0 &&
            strcmp(f->cls, "inference") != 0)
            return "--class must be train, build or inference";
        json_object_set_new(body, "class", json_string(f->cls));
    }
    return NULL;
}

/* Everything `allot submit` takes, from the command line or from a
 * script's #ALLOT lines. */
struct submit_args {
    struct req_flags f;
    const char *queue, *name, *server, *token, *envopt;
    bool json, hold, help;
};

#define NOPTS 18

static void
opts_of(struct submit_args *a, al_opt_t *opts)
{
    const al_opt_t table[NOPTS] = {
        { .name = "--gpus", .kind = AL_OPT_STR, .dst = &a->f.gpus },
        { .name = "--gpu-fraction", .kind = AL_OPT_STR, .dst = &a->f.frac },
        { .name = "--gpu-model", .kind = AL_OPT_STR, .dst = &a->f.model },
        { .name = "--cpus", .kind = AL_OPT_STR, .dst = &a->f.cpus },
        { .name = "--mem", .kind = AL_OPT_STR, .dst = &a->f.mem },
        { .name = "--tasks", .kind = AL_OPT_STR, .dst = &a->f.tasks },
        { .name = "--queue", .kind = AL_OPT_STR, .dst = &a->queue },
        { .name = "--class", .kind = AL_OPT_STR, .dst = &a->f.cls },
        { .name = "--name", .kind = AL_OPT_STR, .dst = &a->name },
        { .name = "--after", .kind = AL_OPT_STR, .dst = &a->f.after },
        { .name = "--time", .kind = AL_OPT_STR, .dst = &a->f.tlimit },
        { .name = "--env", .kind = AL_OPT_STR, .dst = &a->envopt },
        { .name = "--hold", .kind = AL_OPT_FLAG, .dst = &a->hold },
        { .name = "--json", .kind = AL_OPT_FLAG, .dst = &a->json },
        { .name = "--server", .kind = AL_OPT_STR, .dst = &a->server },
        { .name = "--token", .kind = AL_OPT_STR, .dst = &a->token },
        { .name = "--help", .kind = AL_OPT_FLAG, .dst = &a->help },
        { .name = NULL },
    };
    memcpy(opts, table, sizeof table);
}

/* Copies the settings given in `from` over `to`. */
static void
merge(struct submit_args *to, const struct submit_args *from)
{
#define TAKE(field) to->field = from->field ? from->field : to->field
    TAKE(f.gpus);
    TAKE(f.frac);
    TAKE(f.cpus);
    TAKE(f.mem);
    TAKE(f.tasks);
    TAKE(f.after);
    TAKE(f.tlimit);
    TAKE(f.cls);
    TAKE(f.model);
#undef TAKE
    to->queue = from->queue ? from->queue : to->queue;
    to->name = from->name ? from->name : to->name;
    to->server = from->server ? from->server : to->server;
    to->token = from->token ? from->token : to->token;
    to->json = to->json || from->json;
    to->hold = to->hold || from->hold;
}

/* Adds every --env NAME=VALUE of argv[1..n-1] to env; the option table
 * keeps only the last one.  Returns false after printing an error. */
static bool
collect_env(json_t *env, int n, char **argv, const char *where)
{
    for (int i = 1; i < n; i++) {
        const char *kv = NULL;
        if (strcmp(argv[i], "--env") == 0 && i + 1 < n)
            kv = argv[++i];
        else if (strncmp(argv[i], "--env=", 6) == 0)
            kv = argv[i] + 6;
        else
            continue;
        const char *eq = strchr(kv, '=');
        if (eq == NULL || eq == kv) {
            fprintf(stderr, "allot submit: %s%s--env wants NAME=VALUE\n",
                    where ? where : "", where ? ": " : "");
            return false;
        }
        char *k = strndup(kv, (size_t)(eq - kv));
        json_object_set_new(env, k, json_string(eq + 1));
        free(k);
    }
    return true;
}

#define MAX_SCRIPT ((size_t)512 * 1024)
#define MAX_DIRECTIVE_WORDS 64

/*
 * Reads the #ALLOT lines at the top of a job script (up to the first line
 * that is neither blank nor a comment) into *a and env.  Every bad line is
 * reported with its number; returns the number of errors.  The words that
 * *a points to live in *words (caller frees).
 */
static int
read_directives(const char *path, const char *text, struct submit_args *a,
                json_t *env, char **words)
{
    int errors = 0, lineno = 0;
    *words = strdup(text);
    for (char *line = *words; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        lineno++;
        char *p = line + strspn(line, " \t");
        if (*p != '\0' && *p != '#')
            break;
        if (strncmp(p, "#ALLOT", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
            char cmdname[] = "submit";
            char *argv[MAX_DIRECTIVE_WORDS + 1] = { cmdname };
            int n = 1;
            char *save = NULL;
            for (char *w = strtok_r(p + 7, " \t\r", &save);
                 w != NULL && n < MAX_DIRECTIVE_WORDS;
                 w = strtok_r(NULL, " \t\r", &save))
                argv[n++] = w;
            char where[4200];
            snprintf(where, sizeof where, "%s:%d", path, lineno);
            struct submit_args one;
            memset(&one, 0, sizeof one);
            al_opt_t opts[NOPTS];
            opts_of(&one, opts);
            int npos;
            json_t *probe = json_object();
            const char *err = NULL;
            if (al_opt_parse("submit", where, opts, n, argv, false, NULL, 0,
                             &npos) != 0 ||
                !collect_env(env, n, argv, where)) {
                errors++;
            } else if ((err = fill_resources(probe, &one.f)) != NULL) {
                fprintf(stderr, "allot submit: %s: %s\n", where, err);
                errors++;
            } else {
                merge(a, &one);
            }
            json_decref(probe);
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    return errors;
}

/* The script's text if argv names a job script; NULL otherwise. */
static char *
script_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *buf = malloc(MAX_SCRIPT + 1);
    size_t n = buf ? fread(buf, 1, MAX_SCRIPT + 1, f) : 0;
    fclose(f);
    if (buf == NULL || n > MAX_SCRIPT || memchr(buf, '\0', n) != NULL ||
        (n < 2 || buf[0] != '#')) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

int
al_cli_submit(int argc, char **argv)
{
    struct submit_args cl, a;
    memset(&cl, 0, sizeof cl);
    memset(&a, 0, sizeof a);
    al_opt_t opts[NOPTS];
    opts_of(&cl, opts);
    int first = argc;
    int rc =
        al_opt_parse("submit", NULL, opts, argc, argv, true, NULL, 0, &first);
    if (rc != 0 || cl.help) {
        fputs(submit_usage, cl.help ? stdout : stderr);
        return cl.help ? AL_EXIT_OK : rc;
    }
    if (first >= argc) {
        fputs(submit_usage, stderr);
        return bad("no command given; put it after --, or name a job "
                   "script");
    }
    /* The job gets these from the submitter; --env adds to them. */
    json_t *env = json_object();
    for (size_t i = 0; i < sizeof passed_env / sizeof passed_env[0]; i++) {
        const char *v = getenv(passed_env[i]);
        if (v != NULL)
            json_object_set_new(env, passed_env[i], json_string(v));
    }
    /* `allot submit job.sh`: a script (starting with '#') whose #ALLOT
     * lines hold options; the command line overrides them.  After "--",
     * a file is always a command. */
    bool dashdash = strcmp(argv[first - 1], "--") == 0;
    char *script = dashdash ? NULL : script_text(argv[first]);
    char *words = NULL;
    if (script != NULL &&
        read_directives(argv[first], script, &a, env, &words) != 0) {
        free(script);
        free(words);
        json_decref(env);
        return AL_EXIT_USAGE;
    }
    merge(&a, &cl);
    if (!collect_env(env, first, argv, NULL)) {
        free(script);
        free(words);
        json_decref(env);
        return AL_EXIT_USAGE;
    }
    json_t *body = json_object();
    json_object_set_new(body, "env", env);
    json_t *cmd = json_array();
    for (int i = first; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(body, "command", cmd);
    if (script != NULL)
        json_object_set_new(body, "script", json_string(script));
    free(script);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != NULL)
        json_object_set_new(body, "cwd", json_string(cwd));
    const char *err = fill_resources(body, &a.f);
    if (err == NULL && a.queue != NULL)
        json_object_set_new(body, "queue", json_string(a.queue));
    if (err == NULL && a.name != NULL)
        json_object_set_new(body, "name", json_string(a.name));
    if (a.hold)
        json_object_set_new(body, "hold", json_true());
    al_client_t c;
    if (err != NULL || (rc = al_client_init(&c, a.server, a.token)) != 0) {
        json_decref(body);
        free(words);
        return err != NULL ? bad(err) : rc;
    }
    json_t *out = NULL;
    rc = al_client_call(&c, "POST", "/v1/jobs", body, &out, NULL, NULL);
    json_decref(body);
    al_client_fini(&c);
    free(words);
    if (rc != 0)
        return rc;
    if (a.json)
        al_cli_print_json(out);
    else
        printf("%lld\n", (long long)al_json_int(out, "id", 0));
    json_decref(out);
    return AL_EXIT_OK;
}
