/* cli_submit.c -- `allot submit`: build a job from flags and a command. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayspec.h"
#include "cli.h"
#include "cli_client.h"
#include "json.h"
#include "script.h"
#include "xmalloc.h"

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

/* What path, named without "--", is: a job script (its text in *text), a
 * command (*text NULL: no such file, or an executable file that is not a
 * script, such as a program), or neither: said on stderr (false).  A file
 * taken for a command that is none would fail on the node, and a script
 * taken for one would run without its #ALLOT options. */
static bool
script_text(const char *path, char **text)
{
    *text = NULL;
    struct stat st;
    if (stat(path, &st) != 0 || S_ISDIR(st.st_mode))
        return true; /* not a file here: a command */
    bool exec = access(path, X_OK) == 0;
    char *buf = al_xmalloc(AL_SCRIPT_MAX + 1);
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, AL_SCRIPT_MAX + 1, f) : 0;
    const char *why = NULL;
    if (f == NULL || ferror(f) != 0)
        why = exec || strchr(path, '/') == NULL ? NULL : "cannot be read";
    else if (n < 2 || buf[0] != '#' || memchr(buf, '\0', n) != NULL)
        /* Not a script.  A name without '/' is a command found on the
         * node's PATH, whatever file of that name lies here. */
        why = exec || strchr(path, '/') == NULL
                  ? NULL
                  : "is neither a job script (its first line would start "
                    "with '#', as #!/bin/sh does) nor a program (it is not "
                    "executable)";
    else if (n > AL_SCRIPT_MAX)
        why = "is a job script larger than 512 KiB (to run it as a "
              "program instead: allot submit [options] -- PROGRAM)";
    else
        *text = buf;
    if (f != NULL)
        fclose(f);
    if (*text == NULL)
        free(buf);
    else
        buf[n] = '\0';
    if (why != NULL)
        fprintf(stderr, "allot submit: %s %s%s%s\n", path, why,
                f == NULL ? ": " : "", f == NULL ? strerror(errno) : "");
    return why == NULL;
}

/* One --sweep NAME=V1,V2 of the script (from_script) or the command
 * line into axes (the body's "sweep"): a command line's axis replaces the
 * script's of that name; a name twice in one place is an error.  False
 * after printing it. */
/* Whether name and an axis of axes differ only in case (said on stderr):
 * both would be the same ALLOT_SWEEP_NAME in the environment, one lost. */
static bool
sweep_case_clash(const json_t *axes, const char *name)
{
    for (size_t k = 0; k < json_array_size(axes); k++) {
        const char *nm = al_json_str(json_array_get(axes, k), "name", "");
        if (strcmp(nm, name) != 0 && strcasecmp(nm, name) == 0) {
            fprintf(stderr,
                    "allot submit: --sweep %s and %s differ only in "
                    "case: both would be ALLOT_SWEEP_",
                    nm, name);
            for (const char *c = name; *c != '\0'; c++)
                fputc(toupper((unsigned char)*c), stderr);
            fputs(" in the environment\n", stderr);
            return true;
        }
    }
    return false;
}

static bool
add_sweep(json_t *axes, const char *s, bool from_script, bool *script_axis)
{
    al_sweep_axis_t ax;
    char *cause = NULL;
    if (al_sweep_axis_parse(s, &ax, &cause) != 0) {
        fprintf(stderr, "allot submit: --sweep: %s\n", cause);
        free(cause);
        return false;
    }
    json_t *vals = json_array();
    for (int v = 0; v < ax.nvalues; v++)
        json_array_append_new(vals, json_string(ax.values[v]));
    json_t *o = json_pack("{s:s, s:o}", "name", ax.name, "values", vals);
    size_t at = json_array_size(axes);
    for (size_t k = 0; k < json_array_size(axes); k++)
        if (strcmp(al_json_str(json_array_get(axes, k), "name", ""), ax.name) ==
            0)
            at = k;
    bool ok = true;
    if (sweep_case_clash(axes, ax.name)) {
        ok = false;
    } else if (at < json_array_size(axes) &&
               (from_script || !script_axis[at])) {
        fprintf(stderr,
                "allot submit: --sweep %s is given twice; give each name "
                "once, with all its values (%s=V1,V2,...)\n",
                ax.name, ax.name);
        ok = false;
    } else if (at == AL_SWEEP_MAX_AXES) {
        fprintf(stderr, "allot submit: at most %d --sweep options\n",
                AL_SWEEP_MAX_AXES);
        ok = false;
    } else if (at < json_array_size(axes)) {
        json_array_set(axes, at, o);
    } else {
        json_array_append(axes, o);
    }
    if (ok)
        script_axis[at] = from_script;
    json_decref(o);
    al_sweep_axis_fini(&ax);
    return ok;
}

/* The sweep of the job script's #ALLOT lines (a) and of every --sweep
 * NAME=V1,V2 of argv[1..n-1] (the option table keeps only the last one)
 * as the body's "sweep", each placeholder {NAME} of the command known; a
 * --array of "%N" alone becomes the limit of the sweep's elements, and
 * one with indices must have as many as there are combinations.  Returns
 * false after printing an error. */
static bool
sweeps(json_t *body, const al_submit_args_t *a, int n, char **argv)
{
    json_t *axes = json_array();
    bool script_axis[AL_SWEEP_MAX_AXES + 1] = { false };
    bool ok = true;
    for (int i = 0; ok && i < a->nsweep; i++)
        ok = add_sweep(axes, a->sweep[i], true, script_axis);
    for (int i = 1; ok && i < n; i++) {
        const char *s = NULL;
        if (strcmp(argv[i], "--sweep") == 0 && i + 1 < n)
            s = argv[++i];
        else if (strncmp(argv[i], "--sweep=", 8) == 0)
            s = argv[i] + 8;
        else
            continue;
        ok = add_sweep(axes, s, false, script_axis);
    }
    const char *names[AL_SWEEP_MAX_AXES] = { NULL };
    int64_t combos = 1;
    for (size_t k = 0; ok && k < json_array_size(axes); k++) {
        const json_t *ax = json_array_get(axes, k);
        names[k] = al_json_str(ax, "name", "");
        combos *= (int64_t)json_array_size(json_object_get(ax, "values"));
        if (combos > AL_ARRAY_MAX_ELEMENTS) {
            fprintf(stderr,
                    "allot submit: --sweep: more than %d combinations\n",
                    AL_ARRAY_MAX_ELEMENTS);
            ok = false;
        }
    }
    if (!ok || json_array_size(axes) == 0) {
        json_decref(axes);
        return ok;
    }
    json_t *cmd = json_object_get(body, "command");
    for (size_t i = 0; i < json_array_size(cmd); i++) {
        char badp[64];
        if (al_sweep_unknown(json_string_value(json_array_get(cmd, i)), names,
                             (int)json_array_size(axes), badp, sizeof badp)) {
            fprintf(stderr,
                    "allot submit: the command's placeholder %s names no "
                    "--sweep (give --sweep %.*s=V1,V2,...)\n",
                    badp, (int)strlen(badp) - 2, badp + 1);
            json_decref(axes);
            return false;
        }
    }
    const char *spec = al_json_str(body, "array", NULL);
    if (spec != NULL && spec[0] != '%') {
        /* The spec was checked (al_script_resources). */
        al_array_spec_t as;
        int64_t count = combos;
        if (al_array_spec_parse(spec, &as, NULL) == 0) {
            count = as.count;
            al_array_spec_fini(&as);
        }
        if (count != combos) {
            fprintf(stderr,
                    "allot submit: --array %s has %lld elements but the "
                    "sweep %lld combinations (--array %%N alone limits "
                    "them)\n",
                    spec, (long long)count, (long long)combos);
            json_decref(axes);
            return false;
        }
    }
    json_object_set_new(body, "sweep", axes);
    if (spec != NULL && spec[0] == '%') {
        char *full = al_xasprintf("0-%lld%s", (long long)combos - 1, spec);
        json_object_set_new(body, "array", json_string(full));
        free(full);
    }
    return true;
}

int
al_cli_submit(int argc, char **argv)
{
    al_submit_args_t cl, a;
    memset(&cl, 0, sizeof cl);
    memset(&a, 0, sizeof a);
    int first = argc;
    int rc = al_opt_parse_cmd(&al_script_cmd, NULL, &cl, argc, argv, NULL, 0,
                              &first);
    if (rc != 0 || cl.help) {
        al_opt_usage(cl.help ? stdout : stderr, &al_script_cmd);
        return cl.help ? AL_EXIT_OK : rc;
    }
    if (first >= argc) {
        al_opt_usage(stderr, &al_script_cmd);
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
    char *script = NULL;
    if (!dashdash && !script_text(argv[first], &script)) {
        json_decref(env);
        return AL_EXIT_USAGE;
    }
    char *words = NULL;
    if (script != NULL &&
        al_script_directives(argv[first], script, &a, env, &words) != 0) {
        free(script);
        free(words);
        json_decref(env);
        return AL_EXIT_USAGE;
    }
    al_script_merge(&a, &cl);
    if (!al_script_env(env, first, argv, NULL)) {
        free(script);
        free(words);
        json_decref(env);
        return AL_EXIT_USAGE;
    }
    /* jansson refuses text that is not UTF-8 (json_string gives NULL and
     * the set fails): count that as an error rather than drop a word. */
    bool utf8 = true;
    json_t *body = json_object();
    json_object_set_new(body, "env", env);
    json_t *cmd = json_array();
    for (int i = first; i < argc; i++)
        utf8 = json_array_append_new(cmd, json_string(argv[i])) == 0 && utf8;
    json_object_set_new(body, "command", cmd);
    if (script != NULL)
        utf8 = json_object_set_new(body, "script", json_string(script)) == 0 &&
               utf8;
    free(script);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != NULL)
        utf8 = json_object_set_new(body, "cwd", json_string(cwd)) == 0 && utf8;
    const char *err = al_script_resources(body, &a.f);
    if (err == NULL && a.queue != NULL)
        utf8 = json_object_set_new(body, "queue", json_string(a.queue)) == 0 &&
               utf8;
    if (err == NULL && a.name != NULL)
        utf8 =
            json_object_set_new(body, "name", json_string(a.name)) == 0 && utf8;
    if (err == NULL && !utf8)
        err = "the command, the job script, --name, --queue and the "
              "current directory must be UTF-8 text";
    if (a.hold)
        json_object_set_new(body, "hold", json_true());
    if (a.checkpointing)
        json_object_set_new(body, "checkpointing", json_true());
    if (err == NULL && !sweeps(body, &a, first, argv)) {
        json_decref(body);
        free(words);
        return AL_EXIT_USAGE;
    }
    if (err == NULL && a.f.array != NULL && a.f.array[0] == '%' &&
        json_object_get(body, "sweep") == NULL)
        err = "--array %N alone limits the elements of a --sweep; give the "
              "indices too (0-99%N)";
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
