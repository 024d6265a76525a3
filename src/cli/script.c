/* script.c -- the options of `allot submit` and a job script's #ALLOT
 * lines. */
#include "script.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arrayspec.h"
#include "cli_client.h"
#include "depspec.h"
#include "labels.h"
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

#define slurm_time al_script_slurm_time

/* "6", "6,11" or "6:11" (Slurm's afterok:6:11): job ids, as a JSON array;
 * NULL if malformed. */
static json_t *
job_ids(const char *s)
{
    json_t *a = json_array();
    char buf[1024];
    size_t n = strlen(s);
    if (n >= sizeof buf) {
        json_decref(a);
        return NULL;
    }
    memcpy(buf, s, n + 1);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",:", &save); w != NULL;
         w = strtok_r(NULL, ",:", &save)) {
        long long v;
        if (!num_arg(w, (long long)1 << 62, &v) || v == 0 ||
            json_array_size(a) == 64) {
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, json_integer((json_int_t)v));
    }
    if (json_array_size(a) == 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* --tasks: N, or MIN..MAX for an elastic gang (tasks and max_tasks). */
static const char *
tasks_flag(json_t *body, const char *tasks)
{
    long long v;
    if (tasks == NULL)
        return NULL;
    /* N, or MIN..MAX: an elastic gang. */
    const char *dots = strstr(tasks, "..");
    long long hi = 0;
    char lo[24];
    size_t n = dots != NULL ? (size_t)(dots - tasks) : 0;
    if (dots != NULL && n < sizeof lo) {
        memcpy(lo, tasks, n);
        lo[n] = '\0';
    }
    if (dots != NULL ? n >= sizeof lo || !num_arg(lo, 4096, &v) || v == 0 ||
                           !num_arg(dots + 2, 4096, &hi) || hi < v
                     : !num_arg(tasks, 4096, &v) || v == 0)
        return "--tasks wants a number 1..4096, or MIN..MAX (2..8) for "
               "an elastic gang";
    json_object_set_new(body, "tasks", json_integer(v));
    if (dots != NULL && hi > v)
        json_object_set_new(body, "max_tasks", json_integer(hi));
    return NULL;
}

/* --pool and --constraint, checked as the controller checks them. */
static const char *
place_flags(json_t *body, const al_req_flags_t *f)
{
    if (f->pool != NULL) {
        if (!al_pool_valid(f->pool))
            return "--pool wants a pool's name (letters, digits, '-', '_', "
                   "'.')";
        json_object_set_new(body, "pool", json_string(f->pool));
    }
    if (f->image != NULL) {
        /* What the controller accepts: see al__job_parse(). */
        size_t n = strlen(f->image);
        bool ok = n > 0 && n <= 1024 && f->image[0] != '-';
        for (size_t i = 0; i < n && ok; i++)
            ok = (unsigned char)f->image[i] > ' ' && f->image[i] != 0x7f;
        if (!ok)
            return "--image wants an image name (no spaces, not starting "
                   "with '-', at most 1024 bytes)";
        json_object_set_new(body, "image", json_string(f->image));
    }
    if (f->constraint != NULL) {
        static char why[512];
        char *cause = NULL, *canon = NULL;
        if (al_labels_parse(f->constraint, true, &canon, &cause) != 0) {
            snprintf(why, sizeof why, "--constraint: %s", cause);
            free(cause);
            return why;
        }
        free(canon);
        json_object_set_new(body, "constraint", json_string(f->constraint));
    }
    const char *const modes[][2] = { { "nvlink", f->nvlink },
                                     { "topology", f->topology } };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const char *m = modes[i][1];
        if (m == NULL)
            continue;
        if (strcmp(m, "required") != 0 && strcmp(m, "preferred") != 0)
            return i == 0 ? "--nvlink wants required or preferred"
                          : "--topology wants required or preferred";
        json_object_set_new(body, modes[i][0], json_string(m));
    }
    return NULL;
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
    if (f->gpu_mem != NULL) {
        int64_t bytes;
        if (al_cli_parse_mem(f->gpu_mem, &bytes) != 0 || bytes <= 0 ||
            f->gpus != NULL)
            return "--gpu-mem wants a size like 20G (part of one GPU), "
                   "without --gpus";
        json_object_set_new(body, "gpu_mem", json_integer(bytes));
    }
    const char *err = tasks_flag(body, f->tasks);
    if (err != NULL)
        return err;
    if (f->after != NULL) {
        json_t *ids = job_ids(f->after);
        if (ids == NULL)
            return "--after wants job ids (6, or 6,11: after both)";
        json_object_set_new(body, "after", ids);
    }
    if (f->tlimit != NULL) {
        /* Ours (90m, 2h, 1d) or Slurm's (MM:SS, HH:MM:SS, D-HH:MM). */
        int64_t secs = -1;
        if (strpbrk(f->tlimit, ":-") != NULL)
            secs = slurm_time(f->tlimit);
        else if (al_cli_parse_duration(f->tlimit, &secs) != 0)
            secs = -1;
        if (secs <= 0)
            return "--time wants a duration like 3600, 90m, 2h, 1d or "
                   "Slurm's 1:30:00 or 2-00:00:00";
        json_object_set_new(body, "time_limit", json_integer(secs));
    }
    if (f->model != NULL &&
        json_object_set_new(body, "gpu_model", json_string(f->model)) != 0)
        return "--gpu-model wants a GPU model name in UTF-8";
    if ((err = place_flags(body, f)) != NULL)
        return err;
    if (f->retry != NULL) {
        if (!num_arg(f->retry, 100, &v))
            return "--retry wants a whole number of runs again, 0..100";
        json_object_set_new(body, "retries", json_integer(v));
    }
    if (f->cls != NULL) {
        if (strcmp(f->cls, "train") != 0 && strcmp(f->cls, "build") != 0 &&
            strcmp(f->cls, "inference") != 0)
            return "--class must be train, build or inference";
        json_object_set_new(body, "class", json_string(f->cls));
    }
    if (f->array != NULL) {
        /* The parser's message names what is wrong; the CLI runs one
         * check at a time, so one buffer holds it. */
        static char why[512];
        al_array_spec_t as;
        char *cause = NULL;
        /* "%N" alone is a limit for a --sweep's elements (cli_submit.c):
         * read as the limit of a one-element spec. */
        char *text = f->array[0] == '%' ? al_xasprintf("0%s", f->array)
                                        : al_xstrdup(f->array);
        int rc = al_array_spec_parse(text, &as, &cause);
        free(text);
        if (rc != 0 && f->array[0] == '%') {
            const char *p = strchr(cause, ':');
            snprintf(why, sizeof why, "--array %s%s", f->array,
                     p != NULL ? p : "");
            free(cause);
            return why;
        }
        if (rc != 0) {
            snprintf(why, sizeof why, "--array: %s", cause);
            free(cause);
            return why;
        }
        al_array_spec_fini(&as);
        json_object_set_new(body, "array", json_string(f->array));
    }
    if (f->dep != NULL) {
        static char why[512];
        char *cause = NULL;
        int n;
        if (al_dep_parse(f->dep, NULL, &n, &cause) != 0) {
            snprintf(why, sizeof why, "--dependency: %s", cause);
            free(cause);
            return why;
        }
        json_object_set_new(body, "dependency", json_string(f->dep));
    }
    return NULL;
}

#define O(f) offsetof(al_submit_args_t, f)

static const al_opt_t submit_opts[] = {
    { .name = "--gpus",
      .kind = AL_OPT_STR,
      .off = O(f.gpus),
      .arg = "N",
      .help = "GPUs per task, 0..64",
      .flags = AL_OPT_BRIEF },
    { .name = "--gpu-fraction",
      .kind = AL_OPT_STR,
      .off = O(f.frac),
      .arg = "F",
      .help = "part of one GPU per task (0 < F < 1), instead of --gpus" },
    { .name = "--gpu-model",
      .kind = AL_OPT_STR,
      .off = O(f.model),
      .arg = "M",
      .help = "only GPUs of this model" },
    { .name = "--cpus",
      .kind = AL_OPT_STR,
      .off = O(f.cpus),
      .arg = "C",
      .help = "CPU cores per task (e.g. 4 or 0.5)",
      .flags = AL_OPT_BRIEF },
    { .name = "--mem",
      .kind = AL_OPT_STR,
      .off = O(f.mem),
      .arg = "M",
      .help = "memory per task, with K/M/G/T (plain numbers are MiB)",
      .flags = AL_OPT_BRIEF },
    { .name = "--pool",
      .kind = AL_OPT_STR,
      .off = O(f.pool),
      .arg = "POOL",
      .help = "run only on nodes of this pool" },
    { .name = "--constraint",
      .kind = AL_OPT_STR,
      .off = O(f.constraint),
      .arg = "L,...",
      .help = "run only on nodes with these labels (ib, rack=r1: all of "
              "them; KEY alone: any value but no/false/0)" },
    { .name = "--nvlink",
      .kind = AL_OPT_STR,
      .off = O(f.nvlink),
      .arg = "MODE",
      .help = "required: each task's GPUs inside one NVLink domain of its "
              "node, or wait; preferred (the default): span domains when "
              "none holds them" },
    { .name = "--topology",
      .kind = AL_OPT_STR,
      .off = O(f.topology),
      .arg = "MODE",
      .help = "required: a gang's tasks inside one domain of the "
              "controller's innermost topology level (a rack), or wait; "
              "preferred (the default): span them when none holds it" },
    { .name = "--gpu-mem",
      .kind = AL_OPT_STR,
      .off = O(f.gpu_mem),
      .arg = "M",
      .help = "part of one GPU by its memory, with K/M/G/T (instead of, or "
              "beside, --gpu-fraction)" },
    { .name = "--image",
      .kind = AL_OPT_STR,
      .off = O(f.image),
      .arg = "IMAGE",
      .help = "run in a container of IMAGE (an OCI image through podman, a "
              ".sif file through Apptainer)" },
    { .name = "--retry",
      .kind = AL_OPT_STR,
      .off = O(f.retry),
      .arg = "N",
      .help = "run it again, up to N times, when it fails by exit code "
              "or runs out of memory (after a back-off)" },
    { .name = "--tasks",
      .kind = AL_OPT_STR,
      .off = O(f.tasks),
      .arg = "N",
      .help = "tasks started together, 1..4096 (default 1); MIN..MAX: an "
              "elastic gang, restarted at each new size",
      .flags = AL_OPT_BRIEF },
    { .name = "--queue",
      .kind = AL_OPT_STR,
      .off = O(queue),
      .arg = "Q",
      .help = "the queue",
      .flags = AL_OPT_BRIEF },
    { .name = "--class",
      .kind = AL_OPT_STR,
      .off = O(f.cls),
      .arg = "train|build|inference",
      .help = "the kind of work",
      .flags = AL_OPT_BRIEF },
    { .name = "--name",
      .kind = AL_OPT_STR,
      .off = O(name),
      .arg = "X",
      .help = "the job's name" },
    { .name = "--after",
      .kind = AL_OPT_STR,
      .off = O(f.after),
      .arg = "JOBID[,JOBID...]",
      .help = "start once these jobs have completed" },
    { .name = "--dependency",
      .kind = AL_OPT_STR,
      .off = O(f.dep),
      .arg = "KIND:ID[:ID...][,...]",
      .help = "Slurm's afterok, afterany, afternotok, aftercorr (job or "
              "array ids) or singleton" },
    { .name = "--time",
      .kind = AL_OPT_STR,
      .off = O(f.tlimit),
      .arg = "T",
      .help = "a time limit" },
    { .name = "--array",
      .kind = AL_OPT_STR,
      .off = O(f.array),
      .arg = "SPEC",
      .help = "a job array: 0-99, 0-15:4, 1,3,7; %N runs at most N at once",
      .flags = AL_OPT_BRIEF },
    /* Every one counts: cli_submit.c reads them from argv. */
    { .name = "--sweep",
      .kind = AL_OPT_STR,
      .off = O(sweepopt),
      .arg = "NAME=V1,V2",
      .help = "an array over every combination of the values (repeatable); "
              "{NAME} in the command takes the value" },
    /* Every one counts: al_script_env() reads them from argv. */
    { .name = "--env",
      .kind = AL_OPT_STR,
      .off = O(envopt),
      .arg = "K=V",
      .help = "a variable for the job (repeatable)" },
    { .name = "--checkpointing",
      .kind = AL_OPT_FLAG,
      .off = O(checkpointing),
      .help = "the job saves its progress and resumes from it: the "
              "controller's consolidation may move it (a restart)" },
    { .name = "--hold",
      .kind = AL_OPT_FLAG,
      .off = O(hold),
      .help = "hold the job until `allot release`" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = O(json),
      .help = "the new job as JSON" },
    AL_CLI_CONN_OPTS(al_submit_args_t),
    { .name = NULL },
};

#undef O

const al_opt_cmd_t al_script_cmd = {
    .name = "submit",
    .opts = submit_opts,
    .args = "-- command args... | job.sh [args...]",
    .stop_at_args = true,
    .about =
        "Prints the new job's id.  The job runs in the current directory "
        "with\n"
        "PATH, HOME, LANG, and the --env variables.  A job script (a file\n"
        "starting with '#') is sent whole; its '#ALLOT --gpus 2' lines, "
        "before\n"
        "its first command, set options, and the command line overrides "
        "them.\n"
        "--after 6,11 waits for both jobs to complete.  --time is a limit "
        "(90m,\n"
        "2h, 1d, or Slurm's 1:30:00 and 2-00:00:00; the job fails when it "
        "is\n"
        "reached), and inside a queue shorter limits start first: a job\n"
        "without one counts as 24 hours.\n",
};

/* An #ALLOT line: the same options, and nothing else. */
static const al_opt_cmd_t directive_cmd = {
    .name = "submit",
    .opts = submit_opts,
};

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
    TAKE(f.array);
    TAKE(f.dep);
    TAKE(f.pool);
    TAKE(f.constraint);
    TAKE(f.image);
    TAKE(f.gpu_mem);
    TAKE(f.retry);
    TAKE(f.nvlink);
    TAKE(f.topology);
#undef TAKE
    to->queue = from->queue ? from->queue : to->queue;
    to->name = from->name ? from->name : to->name;
    to->server = from->server ? from->server : to->server;
    to->token = from->token ? from->token : to->token;
    /* A script's sweeps: every line's axes, in order. */
    for (int i = 0; i < from->nsweep && to->nsweep < AL_SWEEP_MAX_AXES; i++)
        to->sweep[to->nsweep++] = from->sweep[i];
    to->json = to->json || from->json;
    to->hold = to->hold || from->hold;
    to->checkpointing = to->checkpointing || from->checkpointing;
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

/* ------------------------------------------------------------------ */
/* #SBATCH lines: Slurm job scripts run unchanged                     */

typedef al_slurm_req_t slurm_t;

/* Slurm's --time: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S", or
 * UNLIMITED / INFINITE (no limit: 0).  Seconds, or -1 if malformed. */
long long
al_script_slurm_time(const char *t)
{
    if (strcasecmp(t, "UNLIMITED") == 0 || strcasecmp(t, "INFINITE") == 0)
        return 0;
    long long days = 0, f[3];
    int n = 0;
    const char *p = t, *dash = strchr(t, '-');
    char *end;
    if (dash != NULL) {
        days = strtoll(t, &end, 10);
        if (end != dash || end == t || days < 0 || days > 100000)
            return -1;
        p = dash + 1;
    }
    for (;;) {
        if (*p < '0' || *p > '9' || n == 3)
            return -1;
        f[n++] = strtoll(p, &end, 10);
        if (f[n - 1] > 10000000)
            return -1;
        if (*end == '\0')
            break;
        if (*end != ':')
            return -1;
        p = end + 1;
    }
    long long h = 0, m = 0, sec = 0;
    if (dash != NULL) { /* D-H, D-H:M, D-H:M:S */
        h = f[0];
        m = n > 1 ? f[1] : 0;
        sec = n > 2 ? f[2] : 0;
    } else if (n == 1) { /* minutes */
        m = f[0];
    } else if (n == 2) { /* M:S */
        m = f[0];
        sec = f[1];
    } else { /* H:M:S */
        h = f[0];
        m = f[1];
        sec = f[2];
    }
    return ((days * 24 + h) * 60 + m) * 60 + sec;
}

/* The count in "gpu:N", "gpu:TYPE:N" or "gpu" (1); -1 if not a GPU gres
 * or malformed.  Other resources in a comma list are ignored. */
static long long
slurm_gres_gpus(const char *g)
{
    long long total = -1;
    const char *p = g;
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        if (len >= 3 && strncmp(p, "gpu", 3) == 0 &&
            (len == 3 || p[3] == ':')) {
            const char *last = p + len;
            const char *c = p + len;
            while (c > p && c[-1] != ':')
                c--;
            long long n = 1;
            if (c > p + 3) {
                char *end;
                n = strtoll(c, &end, 10);
                if (end != last || n < 0) {
                    /* "gpu:TYPE": one of that type */
                    n = end == c ? 1 : -1;
                }
            }
            if (n < 0)
                return -1;
            total = (total < 0 ? 0 : total) + n;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return total;
}

/* Setters of the #SBATCH options allot reads: each stores val into the
 * member at off of *s, or returns false when allot cannot use it. */
static bool
set_str(slurm_t *s, size_t off, const char *val)
{
    *(const char **)((char *)s + off) = val;
    return true;
}

static bool
set_count(slurm_t *s, size_t off, const char *val)
{
    long long v;
    if (!num_arg(val, 1 << 20, &v))
        return false;
    *(long long *)((char *)s + off) = v;
    return true;
}

static bool
set_time(slurm_t *s, size_t off, const char *val)
{
    return slurm_time(val) >= 0 && set_str(s, off, val);
}

static bool
set_flag(slurm_t *s, size_t off, const char *val)
{
    (void)val;
    *(bool *)((char *)s + off) = true;
    return true;
}

/* Slurm's dependencies, as allot's --dependency reads them. */
static bool
set_dep(slurm_t *s, size_t off, const char *val)
{
    int n;
    return al_dep_parse(val, NULL, &n, NULL) == 0 && set_str(s, off, val);
}

static bool
set_gres(slurm_t *s, size_t off, const char *val)
{
    long long v = slurm_gres_gpus(val);
    if (v < 0)
        return false;
    *(long long *)((char *)s + off) = v;
    return true;
}

/* What allot does with one #SBATCH option, by its long and short names. */
typedef struct slurm_opt {
    const char *lng;
    /* Reads the value into the member at off; NULL: the option changes
     * nothing here (Slurm's output files, mail, accounts, binding hints)
     * and is ignored with a note. */
    bool (*set)(slurm_t *s, size_t off, const char *val);
    size_t off;
    const char *hint; /* added to the error when set() refuses a value */
    /* sbatch refuses it until allot can keep its meaning: the text says
     * why.  To wire the option, drop this and give it a setter. */
    const char *sbatch_refuse;
    char shrt;
    bool flag;   /* takes no value */
    bool refuse; /* an error: its meaning cannot be kept (job arrays) */
    /* sbatch reads it (`allot submit` ignores it with a note). */
    bool sbatch;
    /* Only srun and salloc know it: sbatch says it does not. */
    bool step;
} slurm_opt_t;

#define S(f) offsetof(slurm_t, f)

static const slurm_opt_t slurm_opts[] = {
    { .lng = "job-name", .shrt = 'J', .set = set_str, .off = S(name) },
    { .lng = "partition", .shrt = 'p', .set = set_str, .off = S(partition) },
    { .lng = "ntasks", .shrt = 'n', .set = set_count, .off = S(ntasks) },
    { .lng = "nodes", .shrt = 'N', .set = set_count, .off = S(nodes) },
    { .lng = "cpus-per-task", .shrt = 'c', .set = set_str, .off = S(cpus) },
    { .lng = "time", .shrt = 't', .set = set_time, .off = S(time) },
    { .lng = "dependency",
      .shrt = 'd',
      .set = set_dep,
      .off = S(dep),
      .hint = " (afterok, afterany, afternotok, aftercorr with job ids, "
              "or singleton; ',' between them)" },
    { .lng = "mem", .set = set_str, .off = S(mem) },
    { .lng = "mem-per-cpu", .set = set_str, .off = S(mem_per_cpu) },
    { .lng = "gres", .set = set_gres, .off = S(gpus_node) },
    { .lng = "gpus", .shrt = 'G', .set = set_count, .off = S(gpus_total) },
    { .lng = "gpus-per-node", .set = set_count, .off = S(gpus_node) },
    { .lng = "gpus-per-task", .set = set_count, .off = S(gpus_task) },
    { .lng = "ntasks-per-node", .set = set_count, .off = S(per_node) },
    { .lng = "array", .shrt = 'a', .set = set_str, .off = S(array) },
    /* Read by sbatch; `allot submit` notes them as ignored. */
    { .lng = "output",
      .shrt = 'o',
      .sbatch = true,
      .set = set_str,
      .off = S(output) },
    { .lng = "error",
      .shrt = 'e',
      .sbatch = true,
      .set = set_str,
      .off = S(error) },
    { .lng = "account",
      .shrt = 'A',
      .sbatch = true,
      .set = set_str,
      .off = S(account) },
    { .lng = "export", .sbatch = true, .set = set_str, .off = S(export_vars) },
    { .lng = "chdir",
      .shrt = 'D',
      .sbatch = true,
      .set = set_str,
      .off = S(chdir) },
    { .lng = "constraint",
      .shrt = 'C',
      .sbatch = true,
      .set = set_str,
      .off = S(constraint) },
    { .lng = "signal", .sbatch = true, .set = set_str, .off = S(signal) },
    /* pyxis's spelling of a container image */
    { .lng = "container-image", .set = set_str, .off = S(container_image) },
    { .lng = "open-mode", .sbatch = true, .set = set_str, .off = S(open_mode) },
    { .lng = "wrap", .sbatch = true, .set = set_str, .off = S(wrap) },
    { .lng = "qos",
      .shrt = 'q',
      .sbatch = true,
      .set = set_str,
      .off = S(qos) },
    { .lng = "hold",
      .shrt = 'H',
      .flag = true,
      .sbatch = true,
      .set = set_flag,
      .off = S(hold) },
    { .lng = "parsable",
      .flag = true,
      .sbatch = true,
      .set = set_flag,
      .off = S(parsable) },
    { .lng = "test-only",
      .flag = true,
      .sbatch = true,
      .set = set_flag,
      .off = S(test_only) },
    { .lng = "wait",
      .shrt = 'W',
      .flag = true,
      .sbatch = true,
      .set = set_flag,
      .off = S(wait) },
    { .lng = "requeue",
      .flag = true,
      .sbatch = true,
      .set = set_flag,
      .off = S(requeue) },
    { .lng = "no-requeue",
      .flag = true,
      .sbatch = true,
      .set = set_flag,
      .off = S(no_requeue) },
    { .lng = "quiet",
      .shrt = 'Q',
      .flag = true,
      .sbatch = true,
      .set = set_flag,
      .off = S(quiet) },
    /* srun's and salloc's. */
    { .lng = "pty",
      .flag = true,
      .sbatch = true,
      .step = true,
      .set = set_flag,
      .off = S(pty) },
    { .lng = "label",
      .shrt = 'l',
      .flag = true,
      .sbatch = true,
      .step = true,
      .set = set_flag,
      .off = S(label) },
    { .lng = "unbuffered",
      .shrt = 'u',
      .flag = true,
      .sbatch = true,
      .step = true,
      .set = set_flag,
      .off = S(unbuffered) },
    { .lng = "overlap", .flag = true, .step = true },
    { .lng = "exact", .flag = true, .step = true },
    { .lng = "mpi", .step = true },
    { .lng = "kill-on-bad-exit", .shrt = 'K', .flag = true, .step = true },
    /* Accepted and noted: they change nothing here. */
    { .lng = "mail-type" },
    { .lng = "mail-user" },
    { .lng = "exclusive", .flag = true },
    { .lng = "comment" },
    { .lng = "reservation" },
    { .lng = "wckey" },
    { .lng = "hint" },
    { .lng = "distribution", .shrt = 'm' },
    { .lng = "mem-bind" },
    { .lng = "cpu-bind" },
    { .lng = "gpu-bind" },
    { .lng = "threads-per-core" },
    { .lng = "nice" },
    { .lng = "priority" },
    { .lng = "licenses", .shrt = 'L' },
    { .lng = "verbose", .shrt = 'v', .flag = true },
    { .lng = "get-user-env", .flag = true },
    { .lng = "propagate" },
    { .lng = "oversubscribe", .shrt = 's', .flag = true },
    { .lng = "contiguous", .flag = true },
    { .lng = "no-kill", .shrt = 'k', .flag = true },
};

#undef S

/* One option word: "--key[=value]" or "-k[value]". */
typedef struct slurm_word {
    char key[64]; /* long name, or "" */
    char shrt;    /* short name, or 0 */
    char *val;    /* the value inside the word, or NULL */
} slurm_word_t;

static bool
slurm_split(char *a, slurm_word_t *o)
{
    memset(o, 0, sizeof *o);
    if (strncmp(a, "--", 2) == 0) {
        char *eq = strchr(a, '=');
        size_t klen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        snprintf(o->key, sizeof o->key, "%.*s", (int)klen, a + 2);
        o->val = eq ? eq + 1 : NULL;
        return true;
    }
    if (a[0] == '-' && a[1] != '\0') {
        o->shrt = a[1];
        o->val = a[2] != '\0' ? a + 2 : NULL;
        return true;
    }
    return false;
}

/* The entry of the option word o, or NULL when allot does not know it. */
static const slurm_opt_t *
slurm_find(const slurm_word_t *o)
{
    for (size_t k = 0; k < sizeof slurm_opts / sizeof slurm_opts[0]; k++)
        if ((o->key[0] && strcmp(o->key, slurm_opts[k].lng) == 0) ||
            (o->shrt && o->shrt == slurm_opts[k].shrt))
            return &slurm_opts[k];
    return NULL;
}

/* Where a message goes: `allot submit`'s "allot submit: FILE:LINE: " or
 * sbatch's "sbatch: error: " (and FILE:LINE when from a script). */
typedef struct slurm_ctx {
    const char *where; /* FILE:LINE, or NULL (sbatch's command line) */
    bool sbatch;       /* sbatch, srun or salloc */
    const char *prog;  /* which of them ("sbatch" for #SBATCH lines) */
    bool step;         /* srun or salloc */
} slurm_ctx_t;

static void say(const slurm_ctx_t *c, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
say(const slurm_ctx_t *c, bool error, const char *fmt, ...)
{
    if (c->sbatch)
        fprintf(stderr, "%s: %s", c->prog, error ? "error: " : "");
    else
        fprintf(stderr, "allot submit: ");
    if (c->where != NULL)
        fprintf(stderr, "%s: ", c->where);
    if (!c->sbatch && !error)
        fprintf(stderr, "note: ");
    va_list ap;
    va_start(ap, fmt);
    /* The va_list is initialised (va_start above); clang 14's analyzer
     * reports it when clang-tidy checks several files in one run. */
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* An option not read here (e NULL when it is not known at all): an error
 * for job arrays (and, for sbatch, what it cannot honour yet), otherwise a
 * note.  Returns 1 for an error. */
static int
slurm_other(const slurm_word_t *o, const slurm_opt_t *e, const slurm_ctx_t *c,
            slurm_t *s)
{
    char shrt[2] = { o->shrt, '\0' };
    const char *dash = o->key[0] ? "--" : "-", *nm = o->key[0] ? o->key : shrt;
    if (c->sbatch && e != NULL && e->sbatch_refuse != NULL) {
        say(c, true, "%s%s: %s on allot; the job is not submitted", dash, nm,
            e->sbatch_refuse);
        s->refused++;
        return 1;
    }
    if (!c->sbatch && e != NULL && e->refuse) {
        say(c, true,
            "job arrays (#SBATCH --array) are not supported; submit one job "
            "per element");
        return 1;
    }
    if (c->sbatch && e == NULL && c->where == NULL) {
        /* As getopt says it, which is what Slurm prints. */
        if (o->key[0])
            fprintf(stderr, "%s: unrecognized option '--%s'\n", c->prog,
                    o->key);
        else
            fprintf(stderr, "%s: invalid option -- '%c'\n", c->prog, o->shrt);
        return 1;
    }
    if (c->sbatch && e == NULL) {
        say(c, true, "unrecognized option '%s%s'", dash, nm);
        return 1;
    }
    /* srun's binding and distribution hints are said in every step of
     * a script: quietly, as each task's cores and GPUs are allot's. */
    bool hint = e != NULL && (strstr(e->lng, "bind") != NULL ||
                              strcmp(e->lng, "distribution") == 0 ||
                              strcmp(e->lng, "hint") == 0 || e->step);
    if (c->step && hint)
        return 0;
    if (c->sbatch)
        say(c, false, "%s%s does not apply on allot; ignored", dash, nm);
    else
        say(c, false, "#SBATCH %s%s %s", dash, nm,
            e != NULL ? "does not apply here; ignored"
                      : "is not known to allot; ignored");
    return 0;
}

/* Reads Slurm option words into *s.  `allot submit` (c->sbatch false):
 * options that change nothing here (output files, mail, account, ...) are
 * ignored with a note and those whose meaning allot cannot keep (job
 * arrays, other dependencies) are errors.  sbatch reads more of them and
 * stops at the first word that is not an option (the script), whose index
 * goes to *stop (n when none).  Returns the number of errors (reported on
 * stderr). */
static int
slurm_words(char **w, int n, slurm_t *s, const slurm_ctx_t *c, int *stop)
{
    int errors = 0;
    *stop = n;
    for (int i = 0; i < n; i++) {
        slurm_word_t o;
        if (c->sbatch && strcmp(w[i], "--") == 0) {
            *stop = i + 1;
            break;
        }
        if (!slurm_split(w[i], &o)) {
            if (c->sbatch) {
                *stop = i;
                break;
            }
            say(c, true, "unexpected '%s' in #SBATCH", w[i]);
            errors++;
            continue;
        }
        const slurm_opt_t *e = slurm_find(&o);
        if (e != NULL && e->step && c->sbatch && !c->step)
            e = NULL; /* srun's own: sbatch does not know it */
        bool reads = e != NULL && e->set != NULL && (c->sbatch || !e->sbatch);
        if (!reads || (c->sbatch && e->sbatch_refuse != NULL)) {
            bool takes_value = e == NULL || !e->flag;
            errors += slurm_other(&o, e, c, s);
            /* A value given apart belongs to the ignored option. */
            if (o.val == NULL && takes_value && i + 1 < n && w[i + 1][0] != '-')
                i++;
            continue;
        }
        if (e->flag) {
            if (o.val != NULL && o.shrt == 0) {
                say(c, true, "option '--%s' doesn't allow an argument", e->lng);
                errors++;
            } else {
                e->set(s, e->off, NULL);
            }
            /* "-HW": more short flags in one word. */
            for (const char *p = o.val; o.shrt != 0 && p != NULL && *p; p++) {
                slurm_word_t more = { "", *p, NULL };
                const slurm_opt_t *m = slurm_find(&more);
                if (m == NULL || !m->flag || m->set == NULL ||
                    (!c->sbatch && m->sbatch) || (m->step && !c->step)) {
                    say(c, true, "invalid option -- '%c'", *p);
                    errors++;
                    break;
                }
                m->set(s, m->off, NULL);
            }
            continue;
        }
        if (o.val == NULL && i + 1 >= n) {
            say(c, true, "%s%s wants a value", c->sbatch ? "" : "#SBATCH ",
                w[i]);
            errors++;
            continue;
        }
        const char *val = o.val != NULL ? o.val : w[++i];
        if (!e->set(s, e->off, val)) {
            say(c, true, "%s--%s: cannot use '%s'%s",
                c->sbatch ? "" : "#SBATCH ", e->lng, val,
                e->hint != NULL ? e->hint : "");
            errors++;
        }
    }
    return errors;
}

static int
slurm_line(char **w, int n, slurm_t *s, const char *where)
{
    slurm_ctx_t c = { where, false, "allot submit", false };
    int stop;
    return slurm_words(w, n, s, &c, &stop);
}

void
al_script_slurm_init(al_slurm_req_t *s)
{
    memset(s, 0, sizeof *s);
    s->gpus_node = -1;
}

int
al_script_sbatch_words(char **w, int n, al_slurm_req_t *s, const char *where,
                       int *stop)
{
    const char *prog = s->prog != NULL ? s->prog : "sbatch";
    slurm_ctx_t c = { where, true, prog, strcmp(prog, "sbatch") != 0 };
    return slurm_words(w, n, s, &c, stop);
}

int
al_script_sbatch_lines(const char *path, char *text, al_slurm_req_t *s)
{
    int errors = 0, lineno = 0;
    for (char *line = text; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        lineno++;
        char *p = line + strspn(line, " \t");
        if (lineno > 1 && *p != '\0' && *p != '#')
            break;
        if (strncmp(p, "#SBATCH", 7) == 0 && (p[7] == ' ' || p[7] == '\t')) {
            char *argv[AL_SCRIPT_MAX_WORDS + 1] = { NULL };
            int n = 0;
            char *save = NULL;
            for (char *w = strtok_r(p + 8, " \t\r", &save);
                 w != NULL && n < AL_SCRIPT_MAX_WORDS + 1;
                 w = strtok_r(NULL, " \t\r", &save)) {
                if (w[0] == '#')
                    break; /* a comment after the options */
                argv[n++] = w;
            }
            char where[4200];
            snprintf(where, sizeof where, "%s:%d", path, lineno);
            int stop;
            if (n > AL_SCRIPT_MAX_WORDS) {
                fprintf(stderr, "sbatch: error: %s: more than %d words\n",
                        where, AL_SCRIPT_MAX_WORDS);
                errors++;
            } else {
                errors += al_script_sbatch_words(argv, n, s, where, &stop);
                if (stop < n) {
                    fprintf(stderr,
                            "sbatch: error: %s: unexpected '%s' in #SBATCH\n",
                            where, argv[stop]);
                    errors++;
                }
            }
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    return errors;
}

/* Writes v in decimal into the spare room at *room; returns it. */
static const char *
stash(char **room, long long v)
{
    char *p = *room;
    int n = sprintf(p, "%lld", v);
    *room += n + 1;
    return p;
}

/* Turns what the #SBATCH lines asked for into allot's per-task request in
 * *a; room has space for a few numbers.  Returns the number of errors. */
int
al_script_slurm_apply(const al_slurm_req_t *s, al_submit_args_t *a, char *room,
                      const char *path)
{
    long long per_node = s->per_node > 0 ? s->per_node : 0;
    long long nodes = s->nodes > 0 ? s->nodes : 0;
    long long tasks = s->ntasks > 0               ? s->ntasks
                      : nodes > 0 && per_node > 0 ? nodes * per_node
                      : nodes > 0                 ? nodes
                      : per_node > 0              ? per_node
                                                  : 0;
    if (per_node == 0)
        per_node = nodes > 0 && tasks > 0 ? (tasks + nodes - 1) / nodes
                   : tasks > 0            ? tasks
                                          : 1;
    long long gpus = -1;
    if (s->gpus_task > 0)
        gpus = s->gpus_task;
    else if (s->gpus_node >= 0 && s->gpus_node % per_node == 0)
        gpus = s->gpus_node / per_node;
    else if (s->gpus_total > 0 && tasks > 0 && s->gpus_total % tasks == 0)
        gpus = s->gpus_total / tasks;
    else if (s->gpus_total > 0 && tasks == 0)
        gpus = s->gpus_total;
    if (gpus < 0 && (s->gpus_node > 0 || s->gpus_total > 0)) {
        bool node = s->gpus_node > 0;
        fprintf(stderr,
                "allot submit: %s: #SBATCH: %lld GPUs %s do not split evenly "
                "over %lld tasks%s; say --gpus-per-task\n",
                path, node ? s->gpus_node : s->gpus_total,
                node ? "per node" : "in all", node ? per_node : tasks,
                node ? " per node" : "");
        return 1;
    }
    a->name = s->name;
    a->queue = s->partition;
    a->f.cpus = s->cpus;
    if (tasks > 0)
        a->f.tasks = stash(&room, tasks);
    if (gpus >= 0)
        a->f.gpus = stash(&room, gpus);
    if (s->time != NULL && slurm_time(s->time) > 0)
        a->f.tlimit = stash(&room, slurm_time(s->time));
    /* Slurm's --mem is per node: a task's share of it; --mem-per-cpu
     * times the task's CPUs.  Plain numbers are MiB in both. */
    int64_t mem;
    if (s->mem != NULL && al_cli_parse_mem(s->mem, &mem) == 0 && mem > 0)
        a->f.mem = stash(&room, (mem / per_node) >> 20);
    else if (s->mem != NULL)
        a->f.mem = s->mem; /* reported by al_script_resources */
    if (s->mem_per_cpu != NULL && al_cli_parse_mem(s->mem_per_cpu, &mem) == 0) {
        /* Bounded before converting: "1e300" CPUs are refused later, and
         * a double that large does not convert to an integer. */
        double c = s->cpus != NULL ? strtod(s->cpus, NULL) : 1;
        double m = (double)mem * (c >= 1 && c <= 1e6 ? c : 1);
        if (m < 9e18)
            a->f.mem = stash(&room, (long long)m >> 20);
    }
    /* afterok alone is --after (6:11: after both); the rest --dependency. */
    if (s->dep != NULL && strncmp(s->dep, "afterok:", 8) == 0 &&
        strchr(s->dep, ',') == NULL)
        a->f.after = s->dep + 8;
    else
        a->f.dep = s->dep;
    a->f.array = s->array;
    a->f.image = s->container_image;
    return 0;
}

/* Adds the --sweep values of one #ALLOT line (argv[1..n-1]; the option
 * table keeps only the last) to a->sweep, each checked as the command
 * line's are; false after saying what is wrong. */
static bool
line_sweeps(al_submit_args_t *a, int n, char **argv, const char *where)
{
    for (int i = 1; i < n; i++) {
        const char *s = NULL;
        if (strcmp(argv[i], "--sweep") == 0 && i + 1 < n)
            s = argv[++i];
        else if (strncmp(argv[i], "--sweep=", 8) == 0)
            s = argv[i] + 8;
        else
            continue;
        al_sweep_axis_t ax;
        char *cause = NULL;
        if (al_sweep_axis_parse(s, &ax, &cause) != 0) {
            fprintf(stderr, "allot submit: %s: --sweep: %s\n", where, cause);
            free(cause);
            return false;
        }
        al_sweep_axis_fini(&ax);
        if (a->nsweep == AL_SWEEP_MAX_AXES) {
            fprintf(stderr, "allot submit: %s: at most %d --sweep options\n",
                    where, AL_SWEEP_MAX_AXES);
            return false;
        }
        a->sweep[a->nsweep++] = s;
    }
    return true;
}

int
al_script_directives(const char *path, const char *text, al_submit_args_t *a,
                     json_t *env, char **words)
{
    int errors = 0, lineno = 0;
    /* The text, then room for the numbers #SBATCH lines turn into. */
    size_t len = strlen(text);
    *words = al_xmalloc(len + 1 + 128);
    memcpy(*words, text, len + 1);
    char *room = *words + len + 1;
    slurm_t slurm;
    memset(&slurm, 0, sizeof slurm);
    slurm.gpus_node = -1;
    bool any_slurm = false;
    al_submit_args_t own;
    memset(&own, 0, sizeof own);
    for (char *line = *words; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        lineno++;
        char *p = line + strspn(line, " \t");
        if (*p != '\0' && *p != '#')
            break;
        if (strncmp(p, "#SBATCH", 7) == 0 && (p[7] == ' ' || p[7] == '\t')) {
            char *argv[AL_SCRIPT_MAX_WORDS + 1] = { NULL };
            int n = 0;
            char *save = NULL;
            for (char *w = strtok_r(p + 8, " \t\r", &save);
                 w != NULL && n < AL_SCRIPT_MAX_WORDS + 1;
                 w = strtok_r(NULL, " \t\r", &save)) {
                if (w[0] == '#')
                    break; /* a comment after the options */
                argv[n++] = w;
            }
            char where[4200];
            snprintf(where, sizeof where, "%s:%d", path, lineno);
            if (n > AL_SCRIPT_MAX_WORDS) {
                fprintf(stderr, "allot submit: %s: more than %d words\n", where,
                        AL_SCRIPT_MAX_WORDS);
                errors++;
            } else {
                errors += slurm_line(argv, n, &slurm, where);
                any_slurm = true;
            }
        } else if (strncmp(p, "#ALLOT", 6) == 0 &&
                   (p[6] == ' ' || p[6] == '\t')) {
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
            int npos;
            json_t *probe = json_object();
            const char *err = NULL;
            if (n > AL_SCRIPT_MAX_WORDS + 1) {
                fprintf(stderr, "allot submit: %s: more than %d words\n", where,
                        AL_SCRIPT_MAX_WORDS);
                errors++;
            } else if (al_opt_parse_cmd(&directive_cmd, where, &one, n, argv,
                                        NULL, 0, &npos) != 0 ||
                       !al_script_env(env, n, argv, where) ||
                       !line_sweeps(&own, n, argv, where)) {
                errors++;
            } else if ((err = al_script_resources(probe, &one.f)) != NULL) {
                fprintf(stderr, "allot submit: %s: %s\n", where, err);
                errors++;
            } else {
                al_script_merge(&own, &one);
            }
            json_decref(probe);
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    /* #SBATCH first, then #ALLOT lines over them (the command line goes
     * over both, in the caller). */
    al_submit_args_t sb;
    memset(&sb, 0, sizeof sb);
    if (any_slurm && errors == 0 &&
        al_script_slurm_apply(&slurm, &sb, room, path) == 0) {
        json_t *probe = json_object();
        const char *err = al_script_resources(probe, &sb.f);
        json_decref(probe);
        if (err == NULL) {
            al_script_merge(a, &sb);
        } else {
            fprintf(stderr, "allot submit: %s: #SBATCH lines: %s\n", path, err);
            errors++;
        }
    } else if (any_slurm && errors == 0) {
        errors++; /* al_script_slurm_apply() said why */
    }
    al_script_merge(a, &own);
    /* Tells the agent to give the tasks Slurm's variables too. */
    if (any_slurm)
        json_object_set_new(env, "ALLOT_SLURM", json_string("1"));
    return errors;
}
