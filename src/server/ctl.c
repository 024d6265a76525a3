/*
 * ctl.c -- the control loop: the one thread that owns the controller's
 * state.  Each iteration takes every request queued by the HTTP daemon,
 * handles them, marks silent nodes down, runs a scheduling cycle when one
 * is due, writes what changed to the store in one transaction, and only
 * after the commit releases the replies (durable before acknowledged) and
 * answers the long-polls of the nodes whose desired tasks changed.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "core/error.h"
#include "fs.h"
#include "json.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

const char *const al__jstate_names[JS_COUNT] = {
    [JS_PENDING] = "pending", [JS_HELD] = "held",
    [JS_RUNNING] = "running", [JS_COMPLETED] = "completed",
    [JS_FAILED] = "failed",   [JS_CANCELLED] = "cancelled",
};

int
al__jstate_parse(const char *s)
{
    for (int i = 0; i < JS_COUNT; i++)
        if (strcmp(s, al__jstate_names[i]) == 0)
            return i;
    return -1;
}

const al__jclass_t al__jclasses[] = {
    { .name = "train", .priority = AL_PRIO_TRAIN, .preemptible = true },
    { .name = "build", .priority = AL_PRIO_BUILD, .preemptible = false },
    { .name = "inference",
      .priority = AL_PRIO_INFERENCE,
      .preemptible = false },
};
const int al__njclasses = sizeof al__jclasses / sizeof al__jclasses[0];

void
al__job_free(al__job_t *j)
{
    if (j == NULL)
        return;
    free(j->name);
    free(j->user);
    free(j->queue);
    free(j->gpu_model);
    free(j->spec);
    free(j->after);
    free(j->reason);
    free(j->tasks);
    free(j);
}

json_t *
al__job_spec(const al__job_t *j)
{
    json_t *v = j->spec ? al_json_parse(j->spec, strlen(j->spec), NULL) : NULL;
    if (!json_is_object(v)) {
        json_decref(v);
        v = json_object();
    }
    return v;
}

void
al__node_fini(al__node_t *n)
{
    free(n->name);
    free(n->addr);
    for (int i = 0; i < n->ngpus; i++) {
        free(n->gpus[i].uuid);
        free(n->gpus[i].model);
    }
    free(n->gpus);
    free(n->devices);
    free(n->known);
    n->known = NULL;
    n->nknown = n->known_cap = 0;
    free(n->runs);
    n->runs = NULL;
    n->nruns = n->runs_cap = 0;
}

int
al__ctl_add_node(al_ctl_t *ctl, const al__node_t *n)
{
    if (ctl->nnodes == ctl->nodes_cap) {
        ctl->nodes_cap = ctl->nodes_cap ? 2 * ctl->nodes_cap : 16;
        ctl->nodes = al_xreallocarray(ctl->nodes, (size_t)ctl->nodes_cap,
                                      sizeof *ctl->nodes);
    }
    ctl->nodes[ctl->nnodes] = *n;
    return ctl->nnodes++;
}

al__job_t *
al__ctl_job(al_ctl_t *ctl, uint64_t id)
{
    if (id == 0 || id > ctl->njobs)
        return NULL;
    return ctl->jobs[id - 1];
}

uint64_t
al__ctl_first_active(al_ctl_t *ctl)
{
    /* An ended job never becomes active again, so the mark only moves
     * forward (reload() starts it over). */
    while (ctl->active_lo < ctl->njobs) {
        al__job_t *j = ctl->jobs[ctl->active_lo];
        if (j != NULL && j->state <= JS_RUNNING)
            break;
        if (j != NULL)
            j->snap = -1;
        ctl->active_lo++;
    }
    return ctl->active_lo;
}

void
al__ctl_put_job(al_ctl_t *ctl, al__job_t *j)
{
    if (j->id > ctl->jobs_cap) {
        uint64_t cap = ctl->jobs_cap ? ctl->jobs_cap : 1024;
        while (cap < j->id)
            cap *= 2;
        /* The table holds pointers: each element is sizeof(void *). */
        ctl->jobs = al_xreallocarray(ctl->jobs, cap, sizeof(void *));
        memset(ctl->jobs + ctl->jobs_cap, 0,
               (cap - ctl->jobs_cap) * sizeof(void *));
        ctl->jobs_cap = cap;
    }
    ctl->jobs[j->id - 1] = j;
    if (j->id > ctl->njobs)
        ctl->njobs = j->id;
}

al__queue_t *
al__ctl_queue(al_ctl_t *ctl, const char *name)
{
    for (int i = 0; i < ctl->nqueues; i++)
        if (strcmp(ctl->queues[i].name, name) == 0)
            return &ctl->queues[i];
    return NULL;
}

static uint64_t
name_hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void
node_hash_put(al_ctl_t *ctl, int i)
{
    size_t mask = ctl->node_hash_cap - 1;
    size_t at = name_hash(ctl->nodes[i].name) & mask;
    while (ctl->node_hash[at] >= 0)
        at = (at + 1) & mask;
    ctl->node_hash[at] = i;
}

int
al__ctl_node_index(al_ctl_t *ctl, const char *name)
{
    /* Nodes are only appended (and all dropped by a reload, which sets
     * node_hashed to 0): index those added since the last call, growing
     * the table to keep it at most half full.  A sync looks its node up:
     * a linear search was most of a sync's cost with thousands of nodes. */
    if (ctl->node_hashed > ctl->nnodes)
        ctl->node_hashed = 0;
    if (2 * (size_t)ctl->nnodes >= ctl->node_hash_cap) {
        size_t cap = ctl->node_hash_cap ? ctl->node_hash_cap : 64;
        while (2 * (size_t)ctl->nnodes >= cap)
            cap *= 2;
        free(ctl->node_hash);
        ctl->node_hash = al_xreallocarray(NULL, cap, sizeof(int));
        ctl->node_hash_cap = cap;
        ctl->node_hashed = 0;
    }
    if (ctl->node_hashed == 0)
        memset(ctl->node_hash, 0xff, ctl->node_hash_cap * sizeof(int));
    for (; ctl->node_hashed < ctl->nnodes; ctl->node_hashed++)
        node_hash_put(ctl, ctl->node_hashed);
    size_t mask = ctl->node_hash_cap - 1;
    for (size_t at = name_hash(name) & mask; ctl->node_hash[at] >= 0;
         at = (at + 1) & mask)
        if (strcmp(ctl->nodes[ctl->node_hash[at]].name, name) == 0)
            return ctl->node_hash[at];
    return -1;
}

void
al__ctl_touch(al_ctl_t *ctl)
{
    if (!ctl->sched_dirty) {
        /* Coalesce changes for a few ms, and for longer when cycles are
         * expensive (a large backlog), so that cycles take at most about a
         * third of the loop's time while requests pour in. */
        int64_t wait = ctl->opts.coalesce_ms;
        if (2 * ctl->cycle_ms > wait)
            wait = 2 * ctl->cycle_ms;
        ctl->sched_dirty = true;
        ctl->sched_due = al_clock_mono_ms() + wait;
    }
}

void
al__ctl_dirty(al_ctl_t *ctl, al__job_t *j)
{
    if (j->dirty)
        return;
    j->dirty = true;
    if (ctl->ndirty == ctl->dirty_cap) {
        ctl->dirty_cap = ctl->dirty_cap ? 2 * ctl->dirty_cap : 256;
        /* An array of pointers: each element is sizeof(void *). */
        ctl->dirty =
            al_xreallocarray(ctl->dirty, ctl->dirty_cap, sizeof(void *));
    }
    ctl->dirty[ctl->ndirty++] = j;
}

void
al__ctl_node_changed(al_ctl_t *ctl, int ni)
{
    ctl->nodes[ni].changed = true;
    ctl->nodes_changed = true;
}

void
al__ctl_park(al_ctl_t *ctl, int ni, al__req_t *req)
{
    ctl->nodes[ni].parked = req;
    if (req->deadline < ctl->parked_min)
        ctl->parked_min = req->deadline;
}

static void
mark_nodes_changed(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->tasks == NULL)
        return;
    for (int t = 0; t < j->ntasks; t++)
        if (j->tasks[t].node >= 0 && j->tasks[t].node < ctl->nnodes)
            al__ctl_node_changed(ctl, j->tasks[t].node);
}

/* Adds j's run to the runs of the nodes its tasks are on, once a node. */
static void
node_runs_add(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->tasks == NULL)
        return;
    for (int t = 0; t < j->ntasks; t++) {
        int ni = j->tasks[t].node;
        if (ni < 0 || ni >= ctl->nnodes)
            continue;
        al__node_t *n = &ctl->nodes[ni];
        /* A job's appends come together: a repeat is the last entry. */
        if (n->nruns > 0 && n->runs[n->nruns - 1].job == j->id &&
            n->runs[n->nruns - 1].restart == j->restart_count)
            continue;
        if (n->nruns == n->runs_cap) {
            n->runs_cap = n->runs_cap ? 2 * n->runs_cap : 8;
            n->runs = al_xreallocarray(n->runs, n->runs_cap, sizeof *n->runs);
        }
        n->runs[n->nruns++] = (al__task_key_t){ .job = j->id,
                                                .task = -1,
                                                .restart = j->restart_count };
    }
}

#define MASTER_PORT_BASE 29500
#define MASTER_PORTS 20000

int
al__job_master_port(const al__job_t *j)
{
    return j->master_port != 0 ? j->master_port
                               : MASTER_PORT_BASE + (int)(j->id % MASTER_PORTS);
}

void
al__ctl_pick_master_port(al_ctl_t *ctl, al__job_t *j)
{
    j->master_port = 0;
    int n0 = j->tasks != NULL ? j->tasks[0].node : -1;
    if (n0 < 0 || n0 >= ctl->nnodes)
        return;
    const al__node_t *n = &ctl->nodes[n0];
    /* The ports of the other runs rendezvousing on this node (those with
     * a task here are in its runs), then the first free one from id's. */
    unsigned char taken[MASTER_PORTS / 8];
    memset(taken, 0, sizeof taken);
    for (size_t i = 0; i < n->nruns; i++) {
        const al__job_t *o = al__ctl_job(ctl, n->runs[i].job);
        if (o != NULL && o != j && o->state == JS_RUNNING && o->tasks != NULL &&
            o->tasks[0].node == n0 && o->restart_count == n->runs[i].restart) {
            int k = al__job_master_port(o) - MASTER_PORT_BASE;
            if (k >= 0 && k < MASTER_PORTS)
                taken[k / 8] |= (unsigned char)(1u << (k % 8));
        }
    }
    int first = (int)(j->id % MASTER_PORTS);
    for (int d = 0; d < MASTER_PORTS; d++) {
        int k = (first + d) % MASTER_PORTS;
        if (!(taken[k / 8] & (1u << (k % 8)))) {
            j->master_port = MASTER_PORT_BASE + k;
            return;
        }
    }
}

static void
running_add(al_ctl_t *ctl, al__job_t *j)
{
    node_runs_add(ctl, j);
    if (ctl->nrunning == ctl->running_cap) {
        ctl->running_cap = ctl->running_cap ? 2 * ctl->running_cap : 256;
        /* An array of pointers: each element is sizeof(void *). */
        ctl->running =
            al_xreallocarray(ctl->running, ctl->running_cap, sizeof(void *));
    }
    j->run_idx = ctl->nrunning;
    ctl->running[ctl->nrunning++] = j;
}

static void
running_remove(al_ctl_t *ctl, al__job_t *j)
{
    al__job_t *last = ctl->running[--ctl->nrunning];
    ctl->running[j->run_idx] = last;
    last->run_idx = j->run_idx;
}

void
al__ctl_index_running(al_ctl_t *ctl)
{
    ctl->nrunning = 0;
    for (int i = 0; i < ctl->nnodes; i++)
        ctl->nodes[i].nruns = 0;
    for (uint64_t i = 0; i < ctl->njobs; i++)
        if (ctl->jobs[i] != NULL && ctl->jobs[i]->state == JS_RUNNING)
            running_add(ctl, ctl->jobs[i]);
}

void
al__ctl_set_state(al_ctl_t *ctl, al__job_t *j, al__jstate_t st,
                  const char *event, const char *detail)
{
    int64_t now = al_clock_ms();
    if (j->state == JS_RUNNING || st == JS_RUNNING)
        mark_nodes_changed(ctl, j);
    if (j->state == JS_RUNNING && st != JS_RUNNING)
        running_remove(ctl, j);
    else if (j->state != JS_RUNNING && st == JS_RUNNING)
        running_add(ctl, j);
    j->state = st;
    j->why_valid = false;
    if (st >= JS_COMPLETED) {
        j->end_ms = now;
        free(j->reason);
        j->reason = detail != NULL ? al_xstrdup(detail) : NULL;
    }
    al__ctl_dirty(ctl, j);
    al__store_event(ctl, j->id, now, event, detail);
    al__ctl_touch(ctl);
}

void
al__ctl_requeue(al_ctl_t *ctl, al__job_t *j, const char *event,
                const char *detail)
{
    mark_nodes_changed(ctl, j);
    free(j->tasks);
    j->tasks = NULL;
    j->restart_count++;
    j->eligible_ms = al_clock_ms();
    j->start_ms = 0;
    al__ctl_set_state(ctl, j, JS_PENDING, event, detail);
}

/* The task of j that is run `restart` of task `task`, when that is j's
 * current run; else NULL. */
static al__task_t *
current_task(al__job_t *j, int task, int restart)
{
    if (j->tasks == NULL || task < 0 || task >= j->ntasks ||
        restart != j->restart_count)
        return NULL;
    return &j->tasks[task];
}

int64_t
al__ctl_log_size(al_ctl_t *ctl, al__job_t *j, int task, int restart)
{
    al__task_t *tk = current_task(j, task, restart);
    if (tk != NULL && tk->log_size >= 0)
        return tk->log_size;
    char path[4096];
    snprintf(path, sizeof path, "%s/logs/%llu.%d.%d.log", ctl->state_dir,
             (unsigned long long)j->id, task, restart);
    struct stat st;
    int64_t size = stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
    if (tk != NULL)
        tk->log_size = size;
    return size;
}

void
al__ctl_log_grew(al__job_t *j, int task, int restart, int64_t size)
{
    al__task_t *tk = current_task(j, task, restart);
    if (tk != NULL)
        tk->log_size = size;
}

static bool
node_knows(const al__node_t *n, uint64_t job, int task, int restart)
{
    for (size_t i = 0; i < n->nknown; i++)
        if (n->known[i].job == job && n->known[i].task == task &&
            n->known[i].restart == restart)
            return true;
    return false;
}

json_t *
al__ctl_desired(al_ctl_t *ctl, int n, int *lacking)
{
    json_t *tasks = json_array();
    int nlacking = 0;
    al__node_t *node = &ctl->nodes[n];
    size_t kept = 0;
    for (size_t i = 0; i < node->nruns; i++) {
        al__job_t *j = al__ctl_job(ctl, node->runs[i].job);
        /* A run that ended, or a job that runs again (another restart,
         * with an entry of its own), leaves the list here. */
        if (j == NULL || j->state != JS_RUNNING || j->tasks == NULL ||
            j->restart_count != node->runs[i].restart)
            continue;
        node->runs[kept++] = node->runs[i];
        const char *master = NULL;
        int n0 = j->tasks[0].node;
        if (n0 >= 0 && n0 < ctl->nnodes)
            master = ctl->nodes[n0].addr;
        int local = 0;
        json_t *spec = NULL;
        for (int t = 0; t < j->ntasks; t++) {
            const al__task_t *tk = &j->tasks[t];
            if (tk->node != n)
                continue;
            int local_rank = local++;
            if (tk->done)
                continue;
            if (node_knows(&ctl->nodes[n], j->id, t, j->restart_count)) {
                /* The agent has this task and its spec: name it only
                 * (building the spec and the log's size for every task on
                 * every sync was most of a sync's cost). */
                json_t *o =
                    json_pack("{s:I, s:i, s:i}", "job", (json_int_t)j->id,
                              "task", t, "restart", j->restart_count);
                /* A fraction is named too: an agent that adopted the task
                 * from its record does not know it (it would count the
                 * task as holding its whole GPU). */
                if (tk->gpu_milli > 0)
                    json_object_set_new(o, "gpu_milli",
                                        json_integer(tk->gpu_milli));
                json_array_append_new(tasks, o);
                continue;
            }
            nlacking++;
            json_t *gpus = json_array();
            for (int d = 0; d < AL_MAX_DEVICES; d++)
                if (tk->devices & ((uint64_t)1 << d))
                    json_array_append_new(gpus, json_integer(d));
            if (spec == NULL)
                spec = al__job_spec(j);
            json_t *o = json_pack(
                "{s:I, s:i, s:i, s:o, s:i, s:I, s:I,"
                " s:i, s:i, s:i, s:s, s:i, s:I, s:s}",
                "job", (json_int_t)j->id, "task", t, "restart",
                j->restart_count, "gpus", gpus, "gpu_milli", tk->gpu_milli,
                "cpu_milli", (json_int_t)j->cpu_milli, "mem_bytes",
                (json_int_t)j->mem_bytes, "rank", t, "world_size", j->ntasks,
                "local_rank", local_rank, "master_addr",
                master ? master : "127.0.0.1", "master_port",
                al__job_master_port(j), "log_off",
                (json_int_t)al__ctl_log_size(ctl, j, t, j->restart_count),
                "user", j->user);
            json_object_update(o, spec); /* command, cwd, env, script */
            json_array_append_new(tasks, o);
        }
        json_decref(spec);
    }
    node->nruns = kept;
    if (lacking != NULL)
        *lacking = nlacking;
    return json_pack("{s:o, s:I}", "tasks", tasks, "grace_ms",
                     (json_int_t)ctl->opts.grace_ms);
}

/* ------------------------------------------------------------------ */
/* Start-up                                                           */

static int
write_secret(al_ctl_t *ctl, const char *leaf, const char *secret, char **cause)
{
    char *path = al_xasprintf("%s/%s", ctl->state_dir, leaf);
    char *text = al_xasprintf("%s\n", secret);
    int rc = al_fs_write_file(path, text, strlen(text), 0600, AL_FS_SYNC);
    if (rc != 0)
        *cause = al_xasprintf("cannot write %s", path);
    free(text);
    free(path);
    return rc;
}

/* First start: the admin and join tokens and the default queue. */
static int
bootstrap(al_ctl_t *ctl, char **cause)
{
    int rc = 0;
    if (al__store_begin(ctl) != 0) {
        *cause = al_xasprintf("store: cannot begin a transaction");
        return AL_EIO;
    }
    if (ctl->ntokens == 0) {
        static const struct {
            const char *user, *file;
            int role;
        } first[] = {
            { .user = "admin", .file = "admin-token", .role = ROLE_ADMIN },
            { .user = "agent", .file = "join-token", .role = ROLE_AGENT },
        };
        for (size_t i = 0; rc == 0 && i < sizeof first / sizeof first[0]; i++) {
            al__token_t t;
            char *secret = al__token_create(first[i].user, first[i].role, &t);
            rc = write_secret(ctl, first[i].file, secret, cause);
            free(secret);
            if (rc == 0)
                rc = al__store_put_token(ctl, &t);
            ctl->tokens = al_xreallocarray(ctl->tokens,
                                           (size_t)ctl->ntokens + 1, sizeof t);
            ctl->tokens[ctl->ntokens++] = t;
        }
        if (rc == 0)
            al_info("created the admin token (%s/admin-token) and the join "
                    "token (%s/join-token)",
                    ctl->state_dir, ctl->state_dir);
    }
    if (rc == 0 && ctl->nqueues == 0) {
        al__queue_t q;
        memset(&q, 0, sizeof q);
        q.name = al_xstrdup("default");
        for (int r = 0; r < AL_NRES; r++) {
            q.quota[r].deserved = 0;
            q.quota[r].limit = AL_UNLIMITED;
            q.quota[r].weight = 1.0;
        }
        ctl->queues = al_xmalloc(sizeof q);
        ctl->queues[ctl->nqueues++] = q;
        ctl->queue_gen++;
        rc = al__store_put_queue(ctl, &q);
    }
    if (rc == 0)
        rc = al__store_commit(ctl);
    if (rc != 0) {
        al__store_rollback(ctl);
        if (*cause == NULL)
            *cause = al_xasprintf("store: cannot write the first state");
    }
    return rc;
}

static void *loop_main(void *arg);

int
al__ctl_start(al_ctl_t *ctl, char **cause)
{
    pthread_mutex_init(&ctl->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ctl->cv, &ca);
    pthread_condattr_destroy(&ca);
    ctl->inbox_tail = &ctl->inbox;
    ctl->parked_min = INT64_MAX;
    al_block_cache_init(&ctl->core_cache);
    ctl->core_alloc = al_block_cache_allocator(&ctl->core_cache);
    char *logs = al_xasprintf("%s/logs", ctl->state_dir);
    int rc = al_fs_mkdir_p(logs, 0700);
    free(logs);
    if (rc != 0) {
        *cause = al_xasprintf("cannot create %s/logs: %s", ctl->state_dir,
                              strerror(errno));
        return rc;
    }
    if ((rc = al__store_open(ctl, cause)) != 0)
        return rc;
    if ((rc = al__store_load(ctl, cause)) == 0)
        al__ctl_index_running(ctl);
    if (rc != 0 || (rc = bootstrap(ctl, cause)) != 0) {
        al__store_close(ctl);
        return rc;
    }
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < ctl->nnodes; i++)
        ctl->nodes[i].last_seen = now; /* give agents time to come back */
    ctl->usage_last = al_clock_ms() / 1000;
    al__ctl_touch(ctl);
    if (pthread_create(&ctl->thread, NULL, loop_main, ctl) != 0) {
        *cause = al_xasprintf("cannot start the control loop");
        al__store_close(ctl);
        return AL_EIO;
    }
    return 0;
}

void
al__ctl_stop(al_ctl_t *ctl)
{
    pthread_mutex_lock(&ctl->mu);
    ctl->stop = true;
    pthread_cond_signal(&ctl->cv);
    pthread_mutex_unlock(&ctl->mu);
    pthread_join(ctl->thread, NULL);
    al_block_cache_fini(&ctl->core_cache);
    al__cycle_fini(ctl);
    al__store_close(ctl);
    for (uint64_t i = 0; i < ctl->njobs; i++)
        al__job_free(ctl->jobs[i]);
    free(ctl->jobs);
    free(ctl->running);
    free(ctl->dirty);
    for (int i = 0; i < ctl->nqueues; i++) {
        free(ctl->queues[i].name);
        free(ctl->queues[i].parent);
    }
    free(ctl->queues);
    for (int i = 0; i < ctl->nnodes; i++)
        al__node_fini(&ctl->nodes[i]);
    free(ctl->nodes);
    free(ctl->node_hash);
    for (int i = 0; i < ctl->ntokens; i++)
        free(ctl->tokens[i].user);
    free(ctl->tokens);
    pthread_cond_destroy(&ctl->cv);
    pthread_mutex_destroy(&ctl->mu);
}

/* ------------------------------------------------------------------ */
/* Requests                                                           */

bool
al__ctl_submit(al_ctl_t *ctl, al__req_t *req)
{
    pthread_mutex_lock(&ctl->mu);
    if (ctl->stop) {
        pthread_mutex_unlock(&ctl->mu);
        return false;
    }
    /* Suspended before the loop can see it: the loop resumes it. */
    MHD_suspend_connection(req->conn);
    req->next = NULL;
    *ctl->inbox_tail = req;
    ctl->inbox_tail = &req->next;
    if (ctl->waiting) {
        ctl->waiting = false;
        pthread_cond_signal(&ctl->cv);
    }
    pthread_mutex_unlock(&ctl->mu);
    return true;
}

/* Authenticates and runs one request; the handler may park it. */
static void
handle(al_ctl_t *ctl, al__req_t *req)
{
    const al__route_t *rt = req->route;
    if (rt->role != ROLE_NONE) {
        const al__token_t *t = al__token_check(ctl, req->token);
        if (t == NULL) {
            al__reply_error(req, 401, "unauthorized",
                            "missing or invalid bearer token (send "
                            "Authorization: Bearer TOKEN; admins create "
                            "tokens with `allot token create`)");
            return;
        }
        req->user = t->user;
        req->role = t->role;
        /* Agents may only use agent routes, and only agents may. */
        bool ok = rt->role == ROLE_AGENT ? t->role == ROLE_AGENT
                  : rt->role == ROLE_ADMIN
                      ? t->role == ROLE_ADMIN
                      : (t->role == ROLE_USER || t->role == ROLE_ADMIN);
        if (!ok) {
            al__reply_error(req, 403, "forbidden",
                            "this call needs the %s role; your token "
                            "has the %s role",
                            al__role_name(rt->role), al__role_name(t->role));
            return;
        }
    }
    rt->fn(ctl, req);
}

/* Marks nodes silent past the timeout down and requeues their jobs. */
static void
check_nodes(al_ctl_t *ctl, int64_t mono)
{
    for (int i = 0; i < ctl->nnodes; i++) {
        al__node_t *n = &ctl->nodes[i];
        if (n->state == NS_DOWN ||
            mono - n->last_seen < ctl->opts.node_timeout_ms)
            continue;
        al_warn("node %s silent for %lld ms: marked down, its jobs requeued",
                n->name, (long long)(mono - n->last_seen));
        n->state = NS_DOWN;
        n->dirty = true;
        /* Backwards: a requeue takes the job out of ctl->running. */
        for (size_t k = ctl->nrunning; k-- > 0;) {
            al__job_t *j = ctl->running[k];
            if (j->tasks == NULL)
                continue;
            for (int t = 0; t < j->ntasks; t++) {
                if (j->tasks[t].node == i && !j->tasks[t].done) {
                    char *d = al_xasprintf("node %s down", n->name);
                    al__ctl_requeue(ctl, j, "requeued", d);
                    free(d);
                    break;
                }
            }
        }
        al__ctl_touch(ctl);
    }
}

static int
flush(al_ctl_t *ctl)
{
    int rc = 0;
    for (size_t i = 0; i < ctl->ndirty; i++) {
        al__job_t *j = ctl->dirty[i];
        j->dirty = false;
        if (rc == 0)
            rc = al__store_put_job(ctl, j);
    }
    ctl->ndirty = 0;
    for (int i = 0; i < ctl->nnodes; i++) {
        if (ctl->nodes[i].dirty) {
            ctl->nodes[i].dirty = false;
            if (rc == 0)
                rc = al__store_put_node(ctl, &ctl->nodes[i]);
        }
    }
    return rc;
}

void
al__ctl_complete(al_ctl_t *ctl, al__req_t *req)
{
    req->next = ctl->ready;
    ctl->ready = req;
}

/* Drops the whole in-memory state and loads it again from the store: after
 * a failed commit, memory may hold changes the store does not. */
static void
reload(al_ctl_t *ctl)
{
    for (uint64_t i = 0; i < ctl->njobs; i++)
        al__job_free(ctl->jobs[i]);
    memset(ctl->jobs, 0, ctl->jobs_cap * sizeof(void *));
    ctl->njobs = 0;
    ctl->active_lo = 0;
    ctl->ndirty = 0;
    ctl->nrunning = 0;
    for (int i = 0; i < ctl->nqueues; i++) {
        free(ctl->queues[i].name);
        free(ctl->queues[i].parent);
    }
    ctl->nqueues = 0;
    /* Answer the parked long-polls before their nodes go. */
    for (int i = 0; i < ctl->nnodes; i++) {
        al__req_t *p = ctl->nodes[i].parked;
        if (p != NULL) {
            al__reply_error(p, 503, "unavailable", "the store was reloaded");
            al__ctl_complete(ctl, p);
        }
        al__node_fini(&ctl->nodes[i]);
    }
    ctl->nnodes = 0;
    ctl->node_hashed = 0;
    for (int i = 0; i < ctl->ntokens; i++)
        free(ctl->tokens[i].user);
    ctl->ntokens = 0;
    char *cause = NULL;
    if (al__store_load(ctl, &cause) != 0) {
        al_error("store reload failed: %s", cause ? cause : "?");
        free(cause);
        ctl->store_failed = true;
        return;
    }
    al__ctl_index_running(ctl);
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < ctl->nnodes; i++)
        ctl->nodes[i].last_seen = now;
    ctl->store_failed = false;
    al__ctl_touch(ctl);
}

/* Waits for requests, a due cycle, a parked poll's deadline or stop.
 * Returns the batch of requests taken from the inbox and sets *stop. */
static al__req_t *
wait_for_work(al_ctl_t *ctl, bool *stop)
{
    int64_t now = al_clock_mono_ms();
    int64_t wake = ctl->sched_last + ctl->opts.sched_interval_ms;
    if (ctl->sched_dirty && ctl->sched_due < wake)
        wake = ctl->sched_due;
    if (ctl->parked_min < wake)
        wake = ctl->parked_min;
    pthread_mutex_lock(&ctl->mu);
    while (ctl->inbox == NULL && !ctl->stop && now < wake) {
        struct timespec ts = { wake / 1000, (long)(wake % 1000) * 1000000 };
        ctl->waiting = true;
        pthread_cond_timedwait(&ctl->cv, &ctl->mu, &ts);
        ctl->waiting = false;
        now = al_clock_mono_ms();
    }
    al__req_t *batch = ctl->inbox;
    ctl->inbox = NULL;
    ctl->inbox_tail = &ctl->inbox;
    *stop = ctl->stop;
    pthread_mutex_unlock(&ctl->mu);
    return batch;
}

static void
handle_batch(al_ctl_t *ctl, al__req_t *batch, bool txn)
{
    for (al__req_t *r = batch, *next; r != NULL; r = next) {
        next = r->next;
        if (!txn && r->route->role != ROLE_NONE) {
            al__reply_error(r, 503, "unavailable",
                            "the state store is unavailable");
            al__ctl_complete(ctl, r);
            continue;
        }
        handle(ctl, r);
        if (r->deadline == 0 || r->status != 0)
            al__ctl_complete(ctl, r);
    }
}

/* Ends the running jobs past their time limit (their agents stop them). */
static void
check_time_limits(al_ctl_t *ctl)
{
    int64_t now = al_clock_ms();
    for (size_t i = ctl->nrunning; i-- > 0;) {
        al__job_t *j = ctl->running[i];
        if (j->time_limit <= 0 || now - j->start_ms < j->time_limit * 1000)
            continue;
        char *d = al_xasprintf("time limit of %lld s reached",
                               (long long)j->time_limit);
        al__ctl_set_state(ctl, j, JS_FAILED, "timeout", d);
        free(d);
    }
}

/* Node timeouts, the scheduling cycle when due, and the commit. */
static void
maintain(al_ctl_t *ctl, bool stop)
{
    int64_t now = al_clock_mono_ms();
    /* Timeouts are at least 100 ms: a look every 20 ms is soon enough. */
    if (now - ctl->nodes_checked >= 20) {
        ctl->nodes_checked = now;
        check_nodes(ctl, now);
    }
    if (!stop && ((ctl->sched_dirty && now >= ctl->sched_due) ||
                  now >= ctl->sched_last + ctl->opts.sched_interval_ms)) {
        ctl->sched_dirty = false;
        ctl->sched_last = now;
        check_time_limits(ctl);
        al__cycle_run(ctl);
        ctl->cycled = true;
        ctl->cycle_ms = al_clock_mono_ms() - now;
    }
    if (flush(ctl) == 0 && al__store_commit(ctl) == 0)
        return;
    al_error("store commit failed; answering 503 and reloading the state "
             "from the store");
    al__store_rollback(ctl);
    for (al__req_t *r = ctl->ready; r != NULL; r = r->next) {
        if (!r->mutating && !r->directs)
            continue;
        json_decref(r->resp);
        r->resp = NULL;
        al__reply_error(r, 503, "unavailable",
                        "the state store failed to commit");
    }
    ctl->store_failed = true;
}

void
al__ctl_answer_parked(al_ctl_t *ctl, int ni)
{
    al__node_t *n = &ctl->nodes[ni];
    al__req_t *p = n->parked;
    if (p == NULL)
        return;
    if (ctl->store_failed) {
        /* What its acks acknowledge, and what the desired set says (a
         * cancel, an eviction), may not be stored: say nothing; the agent
         * syncs again after the reload. */
        json_decref(p->acks);
        p->acks = NULL;
        al__reply_error(p, 503, "unavailable",
                        "the state store failed to commit");
    } else {
        p->status = 200;
        p->resp = al__ctl_desired(ctl, ni, NULL);
        if (p->acks != NULL)
            json_object_set_new(p->resp, "acks", p->acks);
        p->acks = NULL;
    }
    n->parked = NULL;
    al__ctl_complete(ctl, p);
}

/* Answers the long-polls whose node changed or whose time is up. */
static void
answer_polls(al_ctl_t *ctl, bool stop)
{
    int64_t now = al_clock_mono_ms();
    if (!stop && !ctl->store_failed && !ctl->nodes_changed && !ctl->cycled &&
        now < ctl->parked_min)
        return; /* nothing for any node */
    ctl->parked_min = INT64_MAX;
    for (int i = 0; i < ctl->nnodes; i++) {
        al__node_t *n = &ctl->nodes[i];
        al__req_t *p = n->parked;
        /* A sync that reported ends waits for a cycle, any other for a
         * change of the node's desired set. */
        bool changed = p != NULL && p->after_cycle ? ctl->cycled : n->changed;
        if (p != NULL &&
            (changed || now >= p->deadline || stop || ctl->store_failed))
            al__ctl_answer_parked(ctl, i);
        else if (p != NULL && p->deadline < ctl->parked_min)
            ctl->parked_min = p->deadline;
        n->changed = false;
    }
    ctl->nodes_changed = false;
    ctl->cycled = false;
}

/* Hands the replies that are ready back to their connections. */
static void
release(al_ctl_t *ctl)
{
    for (al__req_t *r = ctl->ready, *next; r != NULL; r = next) {
        next = r->next; /* r is gone once its reply is sent */
        al__http_reply(r);
    }
    ctl->ready = NULL;
}

static void *
loop_main(void *arg)
{
    al_ctl_t *ctl = arg;
    for (;;) {
        bool stop;
        al__req_t *batch = wait_for_work(ctl, &stop);
        ctl->ready = NULL;
        if (ctl->store_failed)
            reload(ctl);
        bool txn = !ctl->store_failed && al__store_begin(ctl) == 0;
        handle_batch(ctl, batch, txn);
        if (txn)
            maintain(ctl, stop);
        answer_polls(ctl, stop);
        release(ctl);
        if (stop)
            return NULL;
    }
}
