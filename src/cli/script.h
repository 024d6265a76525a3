/*
 * script.h -- the options of `allot submit`, shared by its command line and
 * the #ALLOT lines of a job script, and the reader of those lines.  Kept
 * apart from cli_submit.c so that tests/fuzz/fuzz_script.c can run the
 * reader on any text without a server.
 */
#ifndef AL_SCRIPT_H
#define AL_SCRIPT_H

#include <jansson.h>
#include <stdbool.h>

#include "arrayspec.h"
#include "opt.h"

/* The flags that shape the job's request, as given (NULL: not given). */
typedef struct al_req_flags {
    const char *gpus, *frac, *cpus, *mem, *tasks, *after, *tlimit, *cls, *model;
    const char *array;      /* a job array's spec, "0-99%10" */
    const char *dep;        /* Slurm's dependencies, "afterok:5,singleton" */
    const char *pool;       /* the node pool to run in */
    const char *constraint; /* node labels required, "ib,rack=r1" */
    const char *image;      /* the container image to run in */
    const char *gpu_mem;    /* part of one GPU by its memory, "20G" */
    const char *retry;      /* runs again after a failure, "2" */
    const char *nvlink;     /* "required": each task in one NVLink domain */
    const char *topology;   /* "required": the gang in one rack (or level) */
} al_req_flags_t;

/* Everything `allot submit` takes, from the command line or from a
 * script's #ALLOT lines. */
typedef struct al_submit_args {
    al_req_flags_t f;
    const char *queue, *name, *server, *token, *envopt, *sweepopt;
    /* A script's #ALLOT --sweep NAME=V1,V2 lines, in order (the command
     * line's are read from argv by cli_submit.c). */
    const char *sweep[AL_SWEEP_MAX_AXES];
    int nsweep;
    bool json, hold, help;
    bool checkpointing; /* it saves its progress: consolidation may move it */
} al_submit_args_t;

/* The options of `allot submit` over an al_submit_args_t (the first
 * positional argument ends them), and its --help. */
extern const al_opt_cmd_t al_script_cmd;
/* Copies the settings given in `from` over `to`. */
void al_script_merge(al_submit_args_t *to, const al_submit_args_t *from);
/* Adds every --env NAME=VALUE of argv[1..n-1] to env; the option table
 * keeps only the last one.  Returns false after printing an error, which
 * starts with `where` when it is not NULL. */
bool al_script_env(json_t *env, int n, char **argv, const char *where);
/* Checks the flags and adds the request's members to body; returns an
 * error text (static) or NULL. */
const char *al_script_resources(json_t *body, const al_req_flags_t *f);

/* A job script of more bytes than this is refused. */
#define AL_SCRIPT_MAX ((size_t)512 * 1024)
/* The most words one #ALLOT line may hold. */
#define AL_SCRIPT_MAX_WORDS 63

/*
 * Reads the #ALLOT lines at the top of a job script's text (up to the first
 * line that is neither blank nor a comment) into *a and env.  Every bad line
 * is reported on stderr as "allot submit: PATH:LINE: ..."; returns the
 * number of errors.  The strings that *a points to live in *words (set
 * whatever the result; caller frees).
 */
int al_script_directives(const char *path, const char *text,
                         al_submit_args_t *a, json_t *env, char **words);

/* ------------------------------------------------------------------ */
/* Slurm's options, shared by #SBATCH lines and sbatch's command line   */

/* What Slurm options asked for, as given, before they are turned into
 * allot's per-task request (Slurm counts GPUs and memory per node). */
typedef struct al_slurm_req {
    const char *name, *partition, *cpus, *mem, *mem_per_cpu, *time, *dep;
    const char *array; /* --array's spec, "0-99%10" */
    long long ntasks, nodes, per_node, gpus_node, gpus_task, gpus_total;
    /* Read by sbatch only; `allot submit` ignores them with a note. */
    const char *output, *error, *account, *export_vars, *chdir, *constraint,
        *signal, *open_mode, *wrap, *qos;
    const char *container_image; /* pyxis's --container-image */
    bool hold, parsable, test_only, wait, requeue, no_requeue, quiet;
    /* srun's and salloc's own (sbatch does not know them). */
    bool pty, label, unbuffered;
    int refused; /* options known but refused (sbatch exits 1) */
    /* The command whose options these are, for its messages and for the
     * options only srun and salloc know: "sbatch" when NULL. */
    const char *prog;
} al_slurm_req_t;

/* Slurm's --time ("M", "M:S", "H:M:S", "D-H[:M[:S]]", UNLIMITED): seconds,
 * 0 for none, -1 if malformed. */
long long al_script_slurm_time(const char *t);
void al_script_slurm_init(al_slurm_req_t *s);
/* sbatch's options in w[0..n-1] into *s, stopping at the first word that
 * is not an option (its index in *stop; n when none).  Errors and notes
 * go to stderr as sbatch's, prefixed with `where` (FILE:LINE) when not
 * NULL; returns the number of errors.  An option known but refused (job
 * arrays, dependencies) counts as an error naming it. */
int al_script_sbatch_words(char **w, int n, al_slurm_req_t *s,
                           const char *where, int *stop);
/* The #SBATCH lines of a script's text (changed in place: the words of
 * *s point into it) into *s; returns the number of errors. */
int al_script_sbatch_lines(const char *path, char *text, al_slurm_req_t *s);

/* Turns *s into allot's per-task request in *a (its strings point into *s
 * and into room, which needs AL_SCRIPT_ROOM bytes).  0, or 1 after saying
 * on stderr why (GPUs that do not split over the tasks). */
#define AL_SCRIPT_ROOM 128
int al_script_slurm_apply(const al_slurm_req_t *s, al_submit_args_t *a,
                          char *room, const char *path);

#endif /* AL_SCRIPT_H */
