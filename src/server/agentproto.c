/*
 * agentproto.c -- the agent protocol, whole: an agent's register and sync
 * (POST /v1/agent/register, /v1/agent/sync), reading a sync body, the
 * desired task set each answer carries, the long-polls parked until that
 * set changes, and the server's copy of the tasks' output (appended from
 * syncs, its size kept per task).
 *
 * May call: relay.c (the streams a node is to open), state.c (a task's
 * end ends or fails its job), table.c, doc.c (the node form, a job's
 * spec), store.c (events), req.c and src/common (hostlist.c: a Slurm
 * job's nodes).  The loop
 * calls al__proto_answer_parked() when a node's set changed or a poll's
 * time is up.
 */
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_int.h"
#include "clock.h"
#include "core/error.h"
#include "hostlist.h"
#include "json.h"
#include "log.h"
#include "xmalloc.h"

#define LONG_POLL_MAX_MS 30000
/* A sync that reported ended tasks waits for the next scheduling cycle
 * when that is due within this many ms (else it is answered at once). */
#define DEFER_MAX_MS 100

void
al__proto_register(al_ctl_t *ctl, al__req_t *req)
{
    al__node_t n;
    char *cause = NULL;
    if (!json_is_object(req->body) ||
        al__node_from_json(req->body, &n, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s",
                        cause ? cause : "the body must be a node object");
        free(cause);
        return;
    }
    int i = al__ctl_node_index(ctl, n.name);
    if (i >= 0) {
        al__node_t *old = &ctl->nodes[i];
        n.drained = old->drained;
        n.ev_state = old->ev_state;
        n.ev_drained = old->ev_drained;
        al__node_health_move(&n, old);
        n.parked = old->parked;
        old->parked = NULL;
        /* Its jobs still run there (a restarted agent adopts them). */
        n.runs = old->runs;
        n.nruns = old->nruns;
        n.runs_cap = old->runs_cap;
        old->runs = NULL;
        al__node_fini(old);
        *old = n;
    } else {
        i = al__ctl_add_node(ctl, &n);
    }
    al__node_t *np = &ctl->nodes[i];
    np->state = NS_READY;
    np->last_seen = al_clock_mono_ms();
    np->dirty = true;
    np->ev_registered = true; /* GET /v1/events tells (clusterev.c) */
    al__ctl_node_changed(ctl, i);
    al_info("node %s registered: %d GPUs%s, %lld millicores, %lld bytes",
            np->name, np->ngpus, np->emulated ? " (emulated)" : "",
            (long long)np->cpu_milli, (long long)np->mem_bytes);
    al__ctl_touch(ctl);
    req->mutating = true;
    al__reply(req, 200,
              json_pack("{s:s, s:I}", "node", np->name, "grace_ms",
                        (json_int_t)ctl->opts.grace_ms));
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
al__proto_log_size(al_ctl_t *ctl, al__job_t *j, int task, int restart)
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
al__proto_log_grew(al__job_t *j, int task, int restart, int64_t size)
{
    al__task_t *tk = current_task(j, task, restart);
    if (tk != NULL)
        tk->log_size = size;
}

/* Appends a chunk of the output of task `task` of job j's run `restart`
 * that starts at offset `off` to the server's copy; returns the size of the
 * copy afterwards. */
static int64_t
append_log(al_ctl_t *ctl, al__job_t *j, int task, int restart, int64_t off,
           const char *b64)
{
    if (b64 == NULL) /* nothing to add: only tell how much we have */
        return al__proto_log_size(ctl, j, task, restart);
    char *path = al__log_path(ctl, j->id, task, restart);
    struct stat st;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    free(path);
    if (fd < 0)
        return 0;
    int64_t size = fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0;
    unsigned char *data;
    size_t n;
    if (off <= size && al_b64_decode(b64, &data, &n) == 0) {
        if (off + (int64_t)n > size) {
            size_t skip = (size_t)(size - off);
            ssize_t w = write(fd, data + skip, n - skip);
            if (w > 0)
                size += w;
        }
        free(data);
    }
    close(fd);
    al__proto_log_grew(j, task, restart, size);
    return size;
}

/* Member key of o if it is an integer in [lo, hi], else def. */
static int64_t
int_in(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t def)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > hi)
        return def;
    return json_integer_value(v);
}

/* Member key of o as an int, clamped to the range of int; def when absent
 * or not an integer.  Clamped, not cut: a huge exit code stays non-zero. */
static int
int_clamped(const json_t *o, const char *key, int def)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return def;
    json_int_t x = json_integer_value(v);
    return x < INT_MIN ? INT_MIN : x > INT_MAX ? INT_MAX : (int)x;
}

int
al__sync_parse(const json_t *b, al__sync_t *s, char **cause)
{
    const char *node = al_json_str(b, "node", NULL);
    if (node == NULL)
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("node not registered; register first"));
    json_t *reported = json_object_get(b, "tasks");
    size_t n = json_array_size(reported);
    al__sync_t tmp = { .node = node, .wait_ms = al_json_int(b, "wait_ms", 0) };
    tmp.tasks = al_xcalloc(n + 1, sizeof *tmp.tasks);
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(reported, i);
        al__sync_task_t *st = &tmp.tasks[tmp.ntasks++];
        st->job = (uint64_t)int_in(t, "job", 1, INT64_MAX, 0);
        st->task = (int)int_in(t, "task", 0, INT_MAX, -1);
        st->restart = (int)int_in(t, "restart", 0, INT_MAX, -1);
        st->exited = strcmp(al_json_str(t, "state", ""), "exited") == 0;
        st->exit_code = int_clamped(t, "exit_code", 0);
        st->signal = int_clamped(t, "signal", 0);
        st->oom = json_is_true(json_object_get(t, "oom"));
        st->error = al_json_str(t, "error", NULL);
        st->cpu_usec = int_in(t, "cpu_usec", 0, INT64_MAX, -1);
        st->mem_bytes = int_in(t, "mem_bytes", 0, INT64_MAX, -1);
        st->mem_peak = int_in(t, "mem_peak", 0, INT64_MAX, -1);
        st->log_off = al_json_int(t, "log_off", 0);
        st->log = al_json_str(t, "log", NULL);
    }
    json_t *gpus = json_object_get(b, "gpus");
    size_t ng = json_array_size(gpus);
    tmp.index = al_xcalloc(ng + 1, sizeof *tmp.index);
    tmp.samples = al_xcalloc(ng + 1, sizeof *tmp.samples);
    for (size_t i = 0; i < ng; i++) {
        json_t *g = json_array_get(gpus, i);
        al__gpu_sample_t *x = &tmp.samples[tmp.nsamples];
        tmp.index[tmp.nsamples++] =
            (int)int_in(g, "index", 0, AL_MAX_DEVICES - 1, -1);
        x->util = (int)int_in(g, "util", 0, 100, -1);
        x->mem_util = (int)int_in(g, "mem_util", 0, 100, -1);
        x->temp_c = (int)int_in(g, "temp_c", 0, 1000, -1);
        x->mem_used = int_in(g, "mem_used", 0, INT64_MAX, -1);
        x->power_mw = int_in(g, "power_mw", 0, INT64_MAX, -1);
    }
    json_t *health = json_object_get(b, "gpu_health");
    size_t nh = json_array_size(health);
    tmp.health_index = al_xcalloc(nh + 1, sizeof *tmp.health_index);
    tmp.health_reason = al_xcalloc(nh + 1, sizeof *tmp.health_reason);
    for (size_t i = 0; i < nh; i++) {
        json_t *h = json_array_get(health, i);
        tmp.health_index[tmp.nhealth] =
            (int)int_in(h, "index", 0, AL_MAX_DEVICES - 1, -1);
        tmp.health_reason[tmp.nhealth++] =
            al_json_str(h, "reason", "unhealthy");
    }
    tmp.health_gen = al_json_int(b, "health_gen", 0);
    *s = tmp;
    return 0;
}

void
al__sync_fini(al__sync_t *s)
{
    free(s->tasks);
    free(s->index);
    free(s->samples);
    free(s->health_index);
    free(s->health_reason);
    s->tasks = NULL;
    s->index = NULL;
    s->samples = NULL;
    s->health_index = NULL;
    s->health_reason = NULL;
    s->ntasks = s->nsamples = s->nhealth = 0;
}

/* The GPU telemetry a sync brought, kept on node n with when it came and
 * how long after the one before.  Emulated GPUs have telemetry only when
 * a test gives them some (the agent's STATE/gpu-util), which idle reclaim
 * reads like any. */
static void
keep_samples(al__node_t *n, const al__sync_t *s)
{
    int64_t now_ms = al_clock_ms();
    for (size_t k = 0; k < s->nsamples; k++) {
        if (s->index[k] < 0 || s->index[k] >= n->ngpus)
            continue;
        al__gpu_sample_t *x = &n->gpus[s->index[k]].sample;
        int64_t prev = x->at_ms;
        *x = s->samples[k];
        x->at_ms = now_ms;
        x->every_ms = prev > 0 && now_ms > prev ? now_ms - prev : 0;
    }
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

/* The members of a desired task, in the order of its JSON; `brief` ones
 * are named for a task the agent has (al__desired_task_json()). */
enum { F_U64, F_INT, F_I32, F_I64, F_STR, F_DEVICES };
/* BRIEF_SET: named in either form, but only when nonzero. */
enum { BRIEF_NO = 0, BRIEF_ALWAYS, BRIEF_NONZERO, BRIEF_SET };

static const struct desired_field {
    const char *key;
    int kind;  /* F_* */
    int brief; /* BRIEF_* */
    size_t off;
} desired_fields[] = {
#define FIELD(k, kind, brief)                                                  \
    {                                                                          \
#k, kind, brief, offsetof(al__desired_task_t, k)                       \
    }
    FIELD(job, F_U64, BRIEF_ALWAYS),
    FIELD(task, F_INT, BRIEF_ALWAYS),
    FIELD(restart, F_INT, BRIEF_ALWAYS),
    { "gpus", F_DEVICES, BRIEF_NO, offsetof(al__desired_task_t, devices) },
    /* A fraction is named in the brief form too: an agent that adopted
     * the task from its record does not know it (it would count the task
     * as holding its whole GPU). */
    FIELD(gpu_milli, F_I32, BRIEF_NONZERO),
    FIELD(cpu_milli, F_I64, BRIEF_NO),
    FIELD(mem_bytes, F_I64, BRIEF_NO),
    FIELD(rank, F_INT, BRIEF_NO),
    FIELD(world_size, F_INT, BRIEF_NO),
    FIELD(local_rank, F_INT, BRIEF_NO),
    FIELD(master_addr, F_STR, BRIEF_NO),
    FIELD(master_port, F_INT, BRIEF_NO),
    FIELD(log_off, F_I64, BRIEF_NO),
    FIELD(user, F_STR, BRIEF_NO),
    FIELD(notice, F_STR, BRIEF_NONZERO),
    FIELD(suspended, F_INT, BRIEF_SET),
    FIELD(job_token, F_STR, BRIEF_NO),
#undef FIELD
};

json_t *
al__desired_task_json(const al__desired_task_t *t, bool known, const char *spec)
{
    json_t *o = json_object();
    const char *base = (const char *)t;
    for (size_t i = 0; i < sizeof desired_fields / sizeof *desired_fields;
         i++) {
        const struct desired_field *f = &desired_fields[i];
        const void *at = base + f->off;
        json_int_t v = 0;
        json_t *x;
        switch (f->kind) {
        case F_U64:
            v = (json_int_t) * (const uint64_t *)at;
            break;
        case F_INT:
            v = *(const int *)at;
            break;
        case F_I32:
            v = *(const int32_t *)at;
            break;
        case F_I64:
            v = *(const int64_t *)at;
            break;
        case F_STR: /* 1 when set: a NULL string is never named */
            if (*(const char *const *)at == NULL)
                continue;
            v = 1;
            break;
        default:
            break;
        }
        if (known &&
            (f->brief == BRIEF_NO || (f->brief == BRIEF_NONZERO && v <= 0)))
            continue;
        if (f->brief == BRIEF_SET && v <= 0)
            continue;
        if (f->kind == F_STR) {
            x = json_string(*(const char *const *)at);
        } else if (f->kind == F_DEVICES) {
            uint64_t devices = *(const uint64_t *)at;
            x = json_array();
            for (int d = 0; d < AL_MAX_DEVICES; d++)
                if (devices & ((uint64_t)1 << d))
                    json_array_append_new(x, json_integer(d));
        } else {
            x = json_integer(v);
        }
        json_object_set_new(o, f->key, x);
    }
    /* command, cwd, env, script, image: the stored text's members, written
     * in place when the answer is dumped (parsing a job's environment and
     * dumping it again was a sixth of the controller's CPU per start; the
     * text is allot's own dump of valid JSON: no UTF-8 check again). */
    if (!known && spec != NULL)
        al_json_set_members(o, spec, strlen(spec));
    return o;
}

/* For a Slurm job (its env has ALLOT_SLURM=1), its nodes as Slurm names
 * them, for the agent's SLURM_JOB_NODELIST, SLURM_NODEID and
 * SLURM_TASKS_PER_NODE: {"slurm_nodelist", "slurm_tasks_per_node"}; else
 * NULL.  The spec is compact JSON that allot wrote, where that setting
 * reads as below; a look-alike elsewhere (a key ending in a quote) only
 * adds two members that the agent ignores for a job that is not Slurm's. */
static json_t *
slurm_nodes(const al_ctl_t *ctl, const al__job_t *j)
{
    if (j->spec == NULL || strstr(j->spec, "\"ALLOT_SLURM\":\"1\"") == NULL)
        return NULL;
    const char **names = al_xcalloc((size_t)j->ntasks + 1, sizeof *names);
    for (int t = 0; t < j->ntasks; t++) {
        int ni = j->tasks[t].node;
        names[t] = ni >= 0 && ni < ctl->nnodes ? ctl->nodes[ni].name : "";
    }
    char *list = NULL;
    char *per = al_hostlist_tasks_per_node(names, (size_t)j->ntasks, &list);
    json_t *o = json_pack("{s:s, s:s}", "slurm_nodelist", list,
                          "slurm_tasks_per_node", per);
    free(list);
    free(per);
    free(names);
    return o;
}

json_t *
al__proto_desired(al_ctl_t *ctl, int n, int *lacking)
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
        json_t *slurm = NULL;
        bool slurm_known = false;
        for (int t = 0; t < j->ntasks; t++) {
            const al__task_t *tk = &j->tasks[t];
            if (tk->node != n)
                continue;
            int local_rank = local++;
            if (tk->done)
                continue;
            al__desired_task_t d = {
                .job = j->id,
                .task = t,
                .restart = j->restart_count,
                .devices = tk->devices,
                .gpu_milli = tk->gpu_milli,
                .notice = j->idle_notice,
                .suspended = j->suspended ? 1 : 0,
            };
            if (node_knows(&ctl->nodes[n], j->id, t, j->restart_count)) {
                /* The agent has this task and its spec: name it only
                 * (building the spec and the log's size for every task on
                 * every sync was most of a sync's cost). */
                json_array_append_new(tasks,
                                      al__desired_task_json(&d, true, NULL));
                continue;
            }
            nlacking++;
            if (!slurm_known) {
                slurm = slurm_nodes(ctl, j);
                slurm_known = true;
            }
            d.cpu_milli = j->cpu_milli;
            d.mem_bytes = j->mem_bytes;
            d.rank = t;
            d.world_size = j->ntasks;
            d.local_rank = local_rank;
            d.master_addr = master ? master : "127.0.0.1";
            d.master_port = al__job_master_port(j);
            d.log_off = al__proto_log_size(ctl, j, t, j->restart_count);
            d.user = j->user;
            bool made;
            d.job_token = al__jobtok_text(j, &made);
            if (made) /* its hash stored before the agent has it */
                al__ctl_dirty(ctl, j);
            json_t *entry = al__desired_task_json(&d, false, j->spec);
            if (slurm != NULL)
                json_object_update(entry, slurm);
            /* The GPU memory it holds on a shared GPU (its MPS limit),
             * named only when there is some. */
            if (tk->gpu_mem > 0)
                json_object_set_new(entry, "gpu_mem",
                                    json_integer((json_int_t)tk->gpu_mem));
            json_array_append_new(tasks, entry);
        }
        json_decref(slurm);
    }
    node->nruns = kept;
    if (lacking != NULL)
        *lacking = nlacking;
    json_t *o = json_pack("{s:o, s:I}", "tasks", tasks, "grace_ms",
                          (json_int_t)ctl->opts.grace_ms);
    /* Interactive sessions whose streams the agent is to open. */
    al__gpuhealth_desired(node, o);
    json_t *streams = al__relay_wanted(ctl, n);
    if (streams != NULL)
        json_object_set_new(o, "streams", streams);
    return o;
}

void
al__proto_park(al_ctl_t *ctl, int ni, al__req_t *req)
{
    ctl->nodes[ni].parked = req;
    if (req->deadline < ctl->parked_min)
        ctl->parked_min = req->deadline;
}

void
al__proto_answer_parked(al_ctl_t *ctl, int ni)
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
        p->resp = al__proto_desired(ctl, ni, NULL);
        if (p->acks != NULL)
            json_object_set_new(p->resp, "acks", p->acks);
        p->acks = NULL;
    }
    n->parked = NULL;
    al__req_complete(ctl, p);
}

/* A running task's use as its agent said (cgroups), shown with its
 * placement, not stored: into cur (NULL: not the job's current run), when
 * it runs on node ni. */
static void
take_usage(al__task_t *cur, const al__sync_task_t *t, int ni)
{
    if (cur == NULL || t->cpu_usec < 0 || cur->node != ni)
        return;
    cur->cpu_usec = t->cpu_usec;
    cur->mem_used = t->mem_bytes;
    cur->mem_peak = t->mem_peak;
    cur->has_usage = true;
}

/* What the end of task `task` of j (tk, as reported in t) says, for its
 * event and the job's reason (caller frees).  A task its node's cgroup
 * killed for memory fails whatever its exit said, with Slurm's word for
 * it first, so that scripts looking for it find it. */
static char *
end_detail(const al__job_t *j, al__task_t *tk, int task,
           const al__sync_task_t *t)
{
    if (t->oom && tk->exit_code == 0 && tk->signal == 0)
        tk->signal = 9;
    if (t->error != NULL)
        return al_xasprintf("task %d: its container did not start: %.400s",
                            task, t->error);
    if (t->oom)
        return al_xasprintf("OUT_OF_MEMORY: task %d exceeded its memory "
                            "limit (%lld MiB) and was killed",
                            task, (long long)(j->mem_bytes >> 20));
    if (tk->signal)
        return al_xasprintf("task %d killed by signal %d", task, tk->signal);
    return al_xasprintf("task %d exited with code %d", task, tk->exit_code);
}

/* The order in which to take s's tasks (caller frees): those killed for
 * their memory first, so that a job whose tasks end together (an OOM
 * kill and a peer that fails for want of it) ends OUT_OF_MEMORY whichever
 * the agent listed first. */
static size_t *
oom_first(const al__sync_t *s)
{
    size_t *o = al_xreallocarray(NULL, s->ntasks + 1, sizeof *o), n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < s->ntasks; i++)
            if (s->tasks[i].oom == (pass == 0))
                o[n++] = i;
    return o;
}

void
al__proto_sync(al_ctl_t *ctl, al__req_t *req)
{
    al__sync_t s;
    int ni = -1;
    req->directs = true;
    if (al__sync_parse(req->body, &s, NULL) == 0) {
        ni = al__ctl_node_index(ctl, s.node);
        if (ni < 0)
            al__sync_fini(&s);
    }
    if (ni < 0) {
        al__reply_error(req, 409, "unknown_node",
                        "node not registered; register first");
        return;
    }
    al__node_t *n = &ctl->nodes[ni];
    n->last_seen = al_clock_mono_ms();
    if (n->state == NS_DOWN) {
        al_info("node %s is back", n->name);
        n->state = NS_READY;
        n->dirty = true;
        al__ctl_touch(ctl);
    }
    keep_samples(n, &s);
    if (al__leaving_synced(ctl, ni, &s)) {
        al__ctl_node_changed(ctl, ni);
        al__ctl_touch(ctl); /* GPUs freed, a job may start again: a cycle */
    }
    /* What the agent has: the desired set need not repeat those specs. */
    n->nknown = 0;
    for (size_t i = 0; i < s.ntasks; i++) {
        const al__sync_task_t *t = &s.tasks[i];
        if (t->job == 0 || t->task < 0 || t->restart < 0)
            continue;
        if (n->nknown == n->known_cap) {
            n->known_cap = n->known_cap ? 2 * n->known_cap : 16;
            n->known =
                al_xreallocarray(n->known, n->known_cap, sizeof *n->known);
        }
        n->known[n->nknown++] = (al__task_key_t){ t->job, t->task, t->restart };
    }
    json_t *acks = json_array();
    bool urgent = false, exits = false; /* exits: it reported new ends */
    size_t *order = oom_first(&s);
    for (size_t o = 0; o < s.ntasks; o++) {
        const al__sync_task_t *t = &s.tasks[order[o]];
        al__job_t *j = al__ctl_job(ctl, t->job);
        int task = t->task, restart = t->restart;
        if (j == NULL || task < 0 || task >= j->ntasks || restart < 0) {
            /* A task of no job we know (a store restored from a backup,
             * say): acknowledge its exit and all its output, so that the
             * agent forgets it rather than report it forever; not being
             * wanted, it is stopped if it runs. */
            if (t->job != 0 && task >= 0 && restart >= 0)
                json_array_append_new(
                    acks,
                    json_pack("{s:I, s:i, s:i, s:I}", "job", (json_int_t)t->job,
                              "task", task, "restart", restart, "log_off",
                              (json_int_t)(INT64_MAX / 2)));
            continue;
        }
        int64_t size = append_log(ctl, j, task, restart, t->log_off, t->log);
        /* Acknowledge what the agent does not know yet: an exit, output it
         * sent, or a copy whose size differs from what it thinks we have.
         * A running task with nothing new needs no ack (most of them, and
         * an ack for each on every sync was much of a sync's cost). */
        if (t->exited || t->log != NULL || t->log_off != size)
            json_array_append_new(acks, json_pack("{s:I, s:i, s:i, s:I}", "job",
                                                  (json_int_t)t->job, "task",
                                                  task, "restart", restart,
                                                  "log_off", (json_int_t)size));
        if (t->log != NULL)
            urgent = true;
        take_usage(current_task(j, task, restart), t, ni);
        if (!t->exited)
            continue;
        urgent = true;
        if (j->state != JS_RUNNING || restart != j->restart_count ||
            j->tasks == NULL || j->tasks[task].node != ni ||
            j->tasks[task].done)
            continue;
        al__task_t *tk = &j->tasks[task];
        tk->done = true;
        exits = true;
        tk->exit_code = t->exit_code;
        tk->signal = t->signal;
        al__ctl_node_changed(ctl, ni);
        al__ctl_dirty(ctl, j);
        char *d = end_detail(j, tk, task, t);
        al__store_event(ctl, j->id, al_clock_ms(), "task_exit", d);
        if (tk->exit_code != 0 || tk->signal != 0) {
            j->exit_code = tk->exit_code;
            j->signal = tk->signal;
            if (t->oom)
                al__lifecycle_oom(ctl, j, d);
            else
                al__lifecycle_failed(ctl, j, d);
        } else {
            bool all = true;
            for (int k = 0; k < j->ntasks; k++)
                all = all && j->tasks[k].done;
            if (all)
                al__ctl_set_state(ctl, j, JS_COMPLETED, "completed",
                                  "all tasks exited with code 0");
        }
        free(d);
    }
    free(order);
    /* GPUs it found faulty: drain, requeue (gpuhealth.c). */
    al__gpuhealth_sync(ctl, ni, &s);
    /* The agent gave up on its previous poll (one of its tasks ended, say):
     * answer it now, whether this one is answered at once or parked.  An
     * agent waits for that answer on its other connection before using it
     * again (al_http_conn_t.pending). */
    al__proto_answer_parked(ctl, ni);
    /* Answer at once when the agent must start something it lacks (a
     * task this sync did not report: n->known is what it reported). */
    int lacking = 0;
    json_t *desired = al__proto_desired(ctl, ni, &lacking);
    /* A session waits for the agent to dial back: answer now. */
    if (lacking > 0 || al__relay_fresh(ctl, ni))
        urgent = true;
    /* A node counts as alive from sync to sync: answer within half the
     * node timeout so that an idle agent is never taken for a dead one. */
    int64_t wait = s.wait_ms;
    al__sync_fini(&s);
    if (wait > LONG_POLL_MAX_MS)
        wait = LONG_POLL_MAX_MS;
    if (wait > ctl->opts.node_timeout_ms / 2)
        wait = ctl->opts.node_timeout_ms / 2;
    /* What it reported changed the state: its acks must not go out before
     * that is committed (a 503 instead if the commit fails). */
    if (json_array_size(acks) > 0)
        req->mutating = true;
    /* Ended tasks free room for others: answer after the scheduling cycle
     * that is due (in a few ms), so that the answer names the tasks taking
     * their place and the agent has no second sync to make for them. */
    if (exits && lacking == 0 && ctl->sched_dirty &&
        ctl->sched_due - al_clock_mono_ms() <= DEFER_MAX_MS) {
        json_decref(desired);
        req->acks = acks;
        req->after_cycle = true;
        ctl->ends_parked = true;
        req->deadline = ctl->sched_due + 1;
        al__proto_park(ctl, ni, req);
        return;
    }
    if (urgent || wait <= 0 || n->changed) {
        json_object_set_new(desired, "acks", acks);
        al__reply(req, 200, desired);
        return;
    }
    json_decref(desired);
    json_decref(acks);
    req->deadline = al_clock_mono_ms() + wait;
    al__proto_park(ctl, ni, req);
}
