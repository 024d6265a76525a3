/*
 * jobbody.c -- a job submission body (POST /v1/jobs) checked by itself,
 * without the controller's state: members, types, bounds and who may
 * submit for whom (al__job_parse()).  Whether its queue and the jobs it
 * waits for exist is the handler's to check (api_jobs.c).
 *
 * May call: doc.c (names, unknown members), reason.c (job classes),
 * arraydoc.c (a job array's members) and common's JSON; nothing that reads or
 * changes the controller's state.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

static bool
string_array(const json_t *a)
{
    if (!json_is_array(a) || json_array_size(a) == 0)
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!json_is_string(json_array_get(a, i)))
            return false;
    return true;
}

/* Reads an optional integer member into *out within [lo, hi]; absent or
 * null leaves *out alone. */
static int
opt_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
        char **cause)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > hi)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("%s must be an integer in %" PRId64
                                     "..%" PRId64,
                                     key, lo, hi));
    *out = json_integer_value(v);
    return 0;
}

/* Reads an optional string member (owned by o) into *out, def when absent
 * or null. */
static int
opt_str(const json_t *o, const char *key, const char *def, const char **out,
        char **cause)
{
    json_t *v = json_object_get(o, key);
    if (v != NULL && !json_is_null(v) && !json_is_string(v))
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("%s must be a string", key));
    *out = json_is_string(v) ? json_string_value(v) : def;
    return 0;
}

/* The default name of a job: the last path element of its command's first
 * word, cut to 64 bytes at a UTF-8 character boundary (a name must stay
 * valid UTF-8 to be written as JSON). */
static char *
default_name(const char *c0)
{
    const char *slash = strrchr(c0, '/');
    const char *base = slash ? slash + 1 : c0;
    size_t n = strlen(base);
    if (n > 64) {
        n = 64;
        while (n > 0 && ((unsigned char)base[n] & 0xC0) == 0x80)
            n--;
    }
    return al_xstrndup(base, n);
}

/* A job body's members once checked; strings belong to the body. */
struct job_req {
    const char *queue, *user, *name, *model;
    int cls;
    int64_t tasks, gpus, cpu, mem, limit;
    double frac;
    int64_t gpu_mem; /* part of one GPU by its memory, or 0 */
};

/* The queue, class and sizes of body b. */
static int
check_sizes(const json_t *b, struct job_req *r, char **cause)
{
    const char *cls;
    int rc;
    if ((rc = opt_str(b, "queue", "default", &r->queue, cause)) != 0 ||
        (rc = opt_str(b, "class", "train", &cls, cause)) != 0)
        return rc;
    r->cls = -1;
    for (int c = 0; c < al__njclasses; c++)
        if (strcmp(al__jclasses[c].name, cls) == 0)
            r->cls = c;
    if (r->cls < 0)
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("class must be train, build or inference"));
    r->tasks = 1, r->gpus = 0, r->cpu = 100, r->mem = 0, r->limit = 0;
    if ((rc = opt_int(b, "tasks", 1, AL_JOB_MAX_TASKS, &r->tasks, cause)) !=
            0 ||
        (rc = opt_int(b, "gpus", 0, AL_MAX_DEVICES, &r->gpus, cause)) != 0 ||
        (rc = opt_int(b, "cpu_milli", 0, AL_JOB_MAX_CPU_MILLI, &r->cpu,
                      cause)) != 0 ||
        (rc = opt_int(b, "mem_bytes", 0, AL_JOB_MAX_MEM_BYTES, &r->mem,
                      cause)) != 0 ||
        (rc = opt_int(b, "time_limit", 0, AL_JOB_MAX_TIME_LIMIT, &r->limit,
                      cause)) != 0)
        return rc;
    json_t *fv = json_object_get(b, "gpu_fraction");
    r->frac = json_is_number(fv) ? json_number_value(fv) : 0;
    if ((fv != NULL && !json_is_null(fv) && !json_is_number(fv)) ||
        r->frac < 0 || r->frac >= 1 || (r->frac > 0 && r->gpus > 0))
        return al__fail(
            cause, AL_EINVAL,
            al_xstrdup("gpu_fraction must be in (0, 1) and excludes "
                       "gpus"));
    r->gpu_mem = 0;
    if ((rc = opt_int(b, "gpu_mem", 0, AL_JOB_MAX_MEM_BYTES, &r->gpu_mem,
                      cause)) != 0)
        return rc;
    if (r->gpu_mem > 0 && r->gpus > 0)
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("gpu_mem asks for part of one GPU by its "
                                   "memory and excludes gpus"));
    return 0;
}

/* The members of body b that go into the job's spec, and `after`. */
static int
check_spec(const json_t *b, char **cause)
{
    json_t *env = json_object_get(b, "env");
    if (env != NULL && !json_is_null(env)) {
        const char *k;
        json_t *v;
        bool ok = json_is_object(env);
        json_object_foreach(env, k, v) ok = ok && json_is_string(v);
        if (!ok)
            return al__fail(cause, AL_EINVAL,
                            al_xstrdup("env must be an object of strings"));
    }
    json_t *script = json_object_get(b, "script");
    if (script != NULL && !json_is_null(script) && !json_is_string(script))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("script must be the text of a job script"));
    json_t *cwd = json_object_get(b, "cwd");
    if (cwd != NULL && !json_is_null(cwd) && !json_is_string(cwd))
        return al__fail(cause, AL_EINVAL, al_xstrdup("cwd must be a string"));
    json_t *image = json_object_get(b, "image");
    if (image != NULL && !json_is_null(image)) {
        /* It becomes an argument of the container runtime: a word, never
         * an option. */
        const char *s = json_string_value(image);
        size_t n = s != NULL ? strlen(s) : 0;
        bool ok = n > 0 && n <= 1024 && s[0] != '-';
        for (size_t i = 0; i < n && ok; i++)
            ok = (unsigned char)s[i] > ' ' && s[i] != 0x7f;
        if (!ok)
            return al__fail(cause, AL_EINVAL,
                            al_xstrdup("image must be an image name: no "
                                       "spaces, not starting with '-', at "
                                       "most 1024 bytes"));
    }
    json_t *after = json_object_get(b, "after");
    if (after != NULL && !json_is_null(after) && !json_is_array(after))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("after must be an array of job ids"));
    for (size_t i = 0; i < json_array_size(after); i++) {
        json_t *a = json_array_get(after, i);
        if (!json_is_integer(a) || json_integer_value(a) < 1)
            return al__fail(cause, AL_EINVAL,
                            al_xasprintf("after: no such job (entry %zu)", i));
    }
    return 0;
}

/* Who the job is for, its name (NULL: the default), GPU model and hold. */
static int
check_names(const json_t *b, const char *caller, bool admin, struct job_req *r,
            char **cause)
{
    const char *as;
    int rc;
    if ((rc = opt_str(b, "user", NULL, &as, cause)) != 0)
        return rc;
    r->user = caller;
    if (as != NULL && strcmp(as, caller) != 0) {
        if (!admin)
            return al__fail(cause, AL_EPERM,
                            al_xstrdup("only an admin may submit for another "
                                       "user"));
        if (!al__valid_name(as, 64))
            return al__fail(cause, AL_EINVAL, al_xstrdup("bad user name"));
        r->user = as;
    }
    if ((rc = opt_str(b, "name", NULL, &r->name, cause)) != 0)
        return rc;
    if (r->name != NULL &&
        (strlen(r->name) > AL_JOB_MAX_NAME || r->name[0] == '\0'))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("name must be 1-128 bytes"));
    if ((rc = opt_str(b, "gpu_model", NULL, &r->model, cause)) != 0)
        return rc;
    json_t *hold = json_object_get(b, "hold");
    if (hold != NULL && !json_is_null(hold) && !json_is_boolean(hold))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("hold must be true or false"));
    json_t *ck = json_object_get(b, "checkpointing");
    if (ck != NULL && !json_is_null(ck) && !json_is_boolean(ck))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("checkpointing must be true or false"));
    return 0;
}

/* The job's spec: what runs, as given. */
static char *
job_spec(const json_t *b)
{
    json_t *spec = json_pack("{s:O}", "command", json_object_get(b, "command"));
    static const char *const keys[] = { "cwd", "script", "env", "image" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(b, keys[k]);
        if (v != NULL && !json_is_null(v))
            json_object_set(spec, keys[k], v);
    }
    char *text = al_json_dump(spec);
    json_decref(spec);
    return text;
}

int
al__job_parse(const json_t *b, const char *caller, bool admin, al__job_t **out,
              char **cause)
{
    if (!json_is_object(b))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("the body must be a JSON object describing "
                                   "the job"));
    static const char *const keys[] = {
        "command",      "cwd",        "env",       "script",
        "after",        "queue",      "class",     "tasks",
        "gpus",         "cpu_milli",  "mem_bytes", "time_limit",
        "gpu_fraction", "user",       "name",      "gpu_model",
        "hold",         "array",      "sweep",     "dependency",
        "pool",         "constraint", "max_tasks", "checkpointing",
        "image",        "gpu_mem",    "retries",   "nvlink",
        "topology",
    };
    const char *bad = al__unknown_member(b, keys, sizeof keys / sizeof *keys);
    if (bad != NULL)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("unknown field '%s' (see docs/server.md "
                                     "for a job's fields)",
                                     bad));
    json_t *cmd = json_object_get(b, "command");
    if (!string_array(cmd))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("command must be a non-empty array of "
                                   "strings"));
    struct job_req r;
    al__array_t *array = NULL;
    int rc;
    if ((rc = check_sizes(b, &r, cause)) != 0 ||
        (rc = check_spec(b, cause)) != 0 ||
        (rc = check_names(b, caller, admin, &r, cause)) != 0 ||
        (rc = al__array_from_body(b, cmd, &array, cause)) != 0)
        return rc;
    /* Slurm's dependencies, beside `after` (afterok). */
    al_depspec_t *deps = NULL;
    int ndeps = 0;
    json_t *dv = json_object_get(b, "dependency");
    char *why = NULL;
    if (dv != NULL && !json_is_null(dv) &&
        (!json_is_string(dv) ||
         al_dep_parse(json_string_value(dv), &deps, &ndeps, &why) != 0)) {
        al__array_free(array);
        return al__fail(cause, AL_EINVAL,
                        why != NULL ? why
                                    : al_xstrdup("dependency must be a string "
                                                 "such as afterok:5:6"));
    }
    char *pool = NULL, *constraint = NULL;
    int max_tasks = 0, retries = 0;
    bool nvlink = false, topology = false;
    if ((rc = al__elastic_body(b, r.tasks, &max_tasks, cause)) != 0 ||
        (rc = al__pools_mode_body(b, &nvlink, &topology, cause)) != 0 ||
        (rc = al__lifecycle_body(b, &retries, cause)) != 0 ||
        (rc = al__pools_job_body(b, &pool, &constraint, cause)) != 0) {
        al__array_free(array);
        free(deps);
        return rc;
    }
    char *name = r.name != NULL
                     ? al_xstrdup(r.name)
                     : default_name(json_string_value(json_array_get(cmd, 0)));
    if (name[0] == '\0') {
        free(name);
        free(pool);
        free(constraint);
        al__array_free(array);
        free(deps);
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("name must be 1-128 bytes"));
    }

    al__job_t *j = al_xcalloc(1, sizeof *j);
    j->name = name;
    j->user = al_xstrdup(r.user);
    j->queue = al_xstrdup(r.queue);
    j->cls = r.cls;
    j->ntasks = (int)r.tasks;
    j->gpus = (int32_t)r.gpus;
    /* A fraction stays below one whole GPU (core.h: 1..999). */
    j->gpu_milli = r.frac > 0 ? (int32_t)(r.frac * AL_GPU_MILLI + 0.5) : 0;
    if (r.frac > 0 && j->gpu_milli < 1)
        j->gpu_milli = 1;
    if (j->gpu_milli >= AL_GPU_MILLI)
        j->gpu_milli = AL_GPU_MILLI - 1;
    j->gpu_mem = r.gpu_mem;
    j->cpu_milli = r.cpu;
    j->mem_bytes = r.mem;
    j->time_limit = r.limit;
    j->gpu_model = r.model ? al_xstrdup(r.model) : NULL;
    j->pool = pool;
    j->constraint = constraint;
    if (max_tasks > 0) {
        j->min_tasks = j->ntasks;
        j->max_tasks = max_tasks;
    }
    j->spec = job_spec(b);
    json_t *after = json_object_get(b, "after");
    size_t nafter = json_array_size(after);
    j->nafter = (int)nafter;
    j->after = al_xcalloc(nafter + 1, sizeof *j->after);
    for (size_t i = 0; i < nafter; i++)
        j->after[i] = (uint64_t)json_integer_value(json_array_get(after, i));
    j->state = al_json_bool(b, "hold", false) ? JS_HELD : JS_PENDING;
    j->checkpointing = al_json_bool(b, "checkpointing", false);
    j->nvlink_required = nvlink;
    j->topology_required = topology;
    j->retries = retries;
    j->snap = -1;
    j->array = array;
    j->deps = deps;
    j->ndeps = ndeps;
    *out = j;
    return 0;
}
