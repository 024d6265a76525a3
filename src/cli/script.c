/* script.c -- the options of `allot submit` and a job script's #ALLOT
 * lines. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_client.h"
#include "xmalloc.h"

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

const char *
al_script_resources(json_t *body, const al_req_flags_t *f)
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
        /* Written so that "nan", which strtod accepts, fails too. */
        if (end == f->frac || *end != '\0' || !(x > 0 && x < 1) ||
            f->gpus != NULL)
            return "--gpu-fraction wants a number between 0 and 1, without "
                   "--gpus";
        json_object_set_new(body, "gpu_fraction", json_real(x));
    }
    if (f->cpus != NULL) {
        double c = strtod(f->cpus, &end);
        /* Bounded before converting to an integer (and refusing "nan"):
         * a double beyond int64_t's range does not convert. */
        if (end == f->cpus || *end != '\0' || !(c >= 0 && c <= 1e9))
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
    if (f->model != NULL &&
        json_object_set_new(body, "gpu_model", json_string(f->model)) != 0)
        return "--gpu-model wants a GPU model name in UTF-8";
    if (f->cls != NULL) {
        if (strcmp(f->cls, "train") != 0 && strcmp(f->cls, "build") != 0 &&
            strcmp(f->cls, "inference") != 0)
            return "--class must be train, build or inference";
        json_object_set_new(body, "class", json_string(f->cls));
    }
    return NULL;
}

void
al_script_opts(al_submit_args_t *a, al_opt_t *opts)
{
    const al_opt_t table[AL_SUBMIT_NOPTS] = {
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
        AL_CLI_CONN_OPTS(a->server, a->token, a->help),
        { .name = NULL },
    };
    memcpy(opts, table, sizeof table);
}

void
al_script_merge(al_submit_args_t *to, const al_submit_args_t *from)
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

bool
al_script_env(json_t *env, int n, char **argv, const char *where)
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
        char *k = eq != NULL ? al_xstrndup(kv, (size_t)(eq - kv)) : NULL;
        /* jansson refuses text that is not UTF-8: say so rather than drop
         * the variable. */
        if (eq == NULL || eq == kv ||
            json_object_set_new(env, k, json_string(eq + 1)) != 0) {
            fprintf(stderr,
                    "allot submit: %s%s--env wants NAME=VALUE (in UTF-8)\n",
                    where ? where : "", where ? ": " : "");
            free(k);
            return false;
        }
        free(k);
    }
    return true;
}

int
al_script_directives(const char *path, const char *text, al_submit_args_t *a,
                     json_t *env, char **words)
{
    int errors = 0, lineno = 0;
    *words = al_xstrdup(text);
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
            char *argv[AL_SCRIPT_MAX_WORDS + 2] = { cmdname };
            int n = 1;
            char *save = NULL;
            for (char *w = strtok_r(p + 7, " \t\r", &save);
                 w != NULL && n < AL_SCRIPT_MAX_WORDS + 2;
                 w = strtok_r(NULL, " \t\r", &save))
                argv[n++] = w;
            char where[4200];
            snprintf(where, sizeof where, "%s:%d", path, lineno);
            al_submit_args_t one;
            memset(&one, 0, sizeof one);
            al_opt_t opts[AL_SUBMIT_NOPTS];
            al_script_opts(&one, opts);
            int npos;
            json_t *probe = json_object();
            const char *err = NULL;
            if (n > AL_SCRIPT_MAX_WORDS + 1) {
                fprintf(stderr, "allot submit: %s: more than %d words\n", where,
                        AL_SCRIPT_MAX_WORDS);
                errors++;
            } else if (al_opt_parse("submit", where, opts, n, argv, false, NULL,
                                    0, &npos) != 0 ||
                       !al_script_env(env, n, argv, where)) {
                errors++;
            } else if ((err = al_script_resources(probe, &one.f)) != NULL) {
                fprintf(stderr, "allot submit: %s: %s\n", where, err);
                errors++;
            } else {
                al_script_merge(a, &one);
            }
            json_decref(probe);
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    return errors;
}
