/*
 * env.c -- a task's environment: the agent's own (without its ALLOT_*
 * settings), then the job's, then what allot tells a task (its job, rank,
 * GPUs, master address and port; what srun would tell a Slurm script's
 * tasks), every name once, the last setting winning.
 *
 * May call: src/common (allocation, JSON, Slurm's hostlist form).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "hostlist.h"
#include "json.h"
#include "xmalloc.h"

extern char **environ;

char *
al__env_entry(const char *k, const char *v)
{
    /* By hand: a job's environment is tens of these per task, and printf's
     * machinery was a sixth of the agent's CPU for a trivial job. */
    size_t kn = strlen(k), vn = strlen(v);
    char *e = al_xmalloc(kn + vn + 2);
    memcpy(e, k, kn);
    e[kn] = '=';
    memcpy(e + kn + 1, v, vn);
    e[kn + 1 + vn] = '\0';
    return e;
}

void
al__env_push(al__env_t *e, char *entry)
{
    if (e->n + 1 >= e->cap) {
        e->cap = e->cap ? 2 * e->cap : 64;
        e->v = al_xreallocarray(e->v, e->cap, sizeof *e->v);
    }
    e->v[e->n++] = entry;
    e->v[e->n] = NULL;
}

/* Not every program takes the last of two settings of a name: drops the
 * earlier ones, keeping the order of the rest.  A hash set of the names
 * seen, walking backwards: comparing every pair cost more than the rest of
 * starting a task with a large environment. */
void
al__env_dedup(al__env_t *e)
{
    size_t cap = 16;
    while (cap < 2 * e->n)
        cap *= 2;
    const char **seen = al_xcalloc(cap, sizeof *seen);
    size_t w = e->n, borrowed = e->borrowed;
    for (size_t i = e->n; i-- > 0;) {
        char *v = e->v[i];
        size_t klen = strcspn(v, "=");
        uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
        for (size_t k = 0; k < klen; k++)
            h = (h ^ (unsigned char)v[k]) * UINT64_C(1099511628211);
        size_t slot = (size_t)h & (cap - 1);
        bool later = false;
        for (; seen[slot] != NULL && !later; slot = (slot + 1) & (cap - 1))
            later = strncmp(seen[slot], v, klen + 1) == 0;
        if (later) {
            if (i < borrowed)
                e->borrowed--; /* the order is kept: still a prefix */
            else
                free(v);
            continue;
        }
        seen[slot] = v;
        e->v[--w] = v;
    }
    free(seen);
    memmove(e->v, e->v + w, (e->n - w) * sizeof *e->v);
    e->n -= w;
    e->v[e->n] = NULL;
}

/* What allot tells a task, from its desired entry. */
static const struct {
    const char *var, *key;
} task_ints[] = {
    { .var = "ALLOT_JOB_ID", .key = "job" },
    { .var = "ALLOT_TASK_INDEX", .key = "task" },
    { .var = "ALLOT_RESTART_COUNT", .key = "restart" },
    { .var = "RANK", .key = "rank" },
    { .var = "WORLD_SIZE", .key = "world_size" },
    { .var = "LOCAL_RANK", .key = "local_rank" },
    { .var = "MASTER_PORT", .key = "master_port" },
};

/* A Slurm job's nodes (the controller sends them for Slurm jobs only):
 * SLURM_JOB_NODELIST in hostlist form, how many, which one this is, the
 * tasks on each, and this task's GPUs. */
static void
slurm_nodes(al__env_t *e, const agent_t *a, json_t *s, const char *gpus)
{
    const char *list = al_json_str(s, "slurm_nodelist", NULL);
    char **names = NULL;
    size_t n = 0;
    if (list != NULL && al_hostlist_expand(list, &names, &n) == 0) {
        char num[32];
        al__env_push(e, al__env_entry("SLURM_JOB_NODELIST", list));
        al__env_push(e, al__env_entry("SLURM_NODELIST", list));
        snprintf(num, sizeof num, "%zu", n);
        al__env_push(e, al__env_entry("SLURM_NNODES", num));
        al__env_push(e, al__env_entry("SLURM_JOB_NUM_NODES", num));
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], a->name) == 0) {
                snprintf(num, sizeof num, "%zu", i);
                al__env_push(e, al__env_entry("SLURM_NODEID", num));
            }
        al_hostlist_free(names, n);
        al__env_push(
            e, al__env_entry("SLURM_TASKS_PER_NODE",
                             al_json_str(s, "slurm_tasks_per_node", "1")));
    }
    size_t ngpus = 0;
    for (const char *p = gpus; *p != '\0'; p += strcspn(p, ","), p += *p == ',')
        ngpus++;
    if (ngpus > 0) {
        char num[32];
        snprintf(num, sizeof num, "%zu", ngpus);
        al__env_push(e, al__env_entry("SLURM_GPUS_ON_NODE", num));
    }
    if (al_json_int(s, "world_size", 1) > 1) /* as srun's tasks: a step */
        al__env_push(e, al__env_entry("SLURM_STEP_ID", "0"));
    const char *user = al_json_str(s, "user", NULL);
    if (user != NULL)
        al__env_push(e, al__env_entry("SLURM_JOB_USER", user));
}

/* The task's environment: the agent's own without its ALLOT_* settings,
 * then the job's, then allot's variables; every name once, the last
 * setting winning.  gpus is the CUDA_VISIBLE_DEVICES list. */
al__env_t
al__task_env(const agent_t *a, json_t *s, const char *gpus)
{
    al__env_t e = { NULL, 0, 0, 0 };
    for (char **p = environ; *p != NULL; p++)
        if (strncmp(*p, "ALLOT_", 6) != 0)
            al__env_push(&e, *p);
    e.borrowed = e.n;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(s, "env"), k, v)
    {
        if (json_is_string(v))
            al__env_push(&e, al__env_entry(k, json_string_value(v)));
    }
    al__env_push(&e, al__env_entry("CUDA_VISIBLE_DEVICES", gpus));
    al__env_push(&e, al__env_entry("ALLOT_NODE", a->name));
    if (a->plat.emulated)
        al__env_push(&e, al__env_entry("ALLOT_EMULATED_GPUS", "1"));
    for (size_t i = 0; i < sizeof task_ints / sizeof task_ints[0]; i++) {
        char num[32];
        snprintf(num, sizeof num, "%lld",
                 (long long)al_json_int(s, task_ints[i].key, 0));
        al__env_push(&e, al__env_entry(task_ints[i].var, num));
    }
    al__env_push(
        &e, al__env_entry("MASTER_ADDR", al_json_str(s, "master_addr", "")));
    /* The job's own token, good for its steps and itself while it runs
     * (srun inside it uses it when the user has no config of their
     * own), and where the controller is. */
    const char *jt = al_json_str(s, "job_token", NULL);
    if (jt != NULL && a->server != NULL) {
        al__env_push(&e, al__env_entry("ALLOT_JOB_TOKEN", jt));
        al__env_push(&e, al__env_entry("ALLOT_JOB_SERVER", a->server));
    }
    /* A Slurm job script (`allot submit` marks it): what srun would tell
     * each task, so that the script and the tools it runs work unchanged. */
    if (strcmp(al_json_str(json_object_get(s, "env"), "ALLOT_SLURM", ""),
               "1") == 0) {
        static const struct {
            const char *var, *key;
        } slurm[] = {
            { "SLURM_JOB_ID", "job" },
            { "SLURM_JOBID", "job" },
            { "SLURM_PROCID", "rank" },
            { "SLURM_NTASKS", "world_size" },
            { "SLURM_NPROCS", "world_size" },
            { "SLURM_LOCALID", "local_rank" },
            { "SLURM_RESTART_COUNT", "restart" },
        };
        for (size_t i = 0; i < sizeof slurm / sizeof slurm[0]; i++) {
            char num[32];
            snprintf(num, sizeof num, "%lld",
                     (long long)al_json_int(s, slurm[i].key, 0));
            al__env_push(&e, al__env_entry(slurm[i].var, num));
        }
        /* sbatch sends where it ran (which -D may change the cwd from). */
        if (al_json_str(s, "cwd", NULL) != NULL &&
            al_json_str(json_object_get(s, "env"), "SLURM_SUBMIT_DIR", NULL) ==
                NULL)
            al__env_push(&e, al__env_entry("SLURM_SUBMIT_DIR",
                                           al_json_str(s, "cwd", "")));
        slurm_nodes(&e, a, s, gpus);
        al__env_push(&e, al__env_entry("SLURMD_NODENAME", a->name));
    }
    al__env_dedup(&e);
    return e;
}

void
al__env_fini(al__env_t *e)
{
    for (size_t i = e->borrowed; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
}
