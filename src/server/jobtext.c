/*
 * jobtext.c -- a job's document written as JSON text directly, without
 * building its tree: the store's row at every change of a job's state.
 *
 * The bytes are exactly those of al_json_dump(al__job_json(ctl, j, true))
 * (doc.c's job_doc, member by member in the same order), or of another
 * form of it dumped with other flags (a list's answer: its reals in 15
 * digits, as the server's replies write them); the unit test
 * job_text_same and the fuzz harness fuzz_jobbody compare the two for
 * every job they make.  A member added to job_doc must be added here in
 * the same place.  Building the tree (a hash table, a key copy and a value
 * object per member) and freeing it cost several times the writing: with
 * a job written when it is placed and when it ends, this is what a job's
 * row costs the controller.
 *
 * The rare members that other files own (a running job's token, pools,
 * elastic sizes, pipelines, retries, an array's record) still go through
 * their own functions, into a small object whose members are written in
 * place.
 *
 * May call: doc.c's neighbours (jobtoken.c, pools.c, elasticdoc.c,
 * pipedoc.c, lifecycledoc.c, arraydoc.c), reason.c, table.c (a task's
 * node) and common's JSON writers.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "server_int.h"

/* ,"key": */
static void
key(al_buf_t *b, const char *k)
{
    al_buf_putc(b, ',');
    al_json_put_str(b, k, strlen(k));
    al_buf_putc(b, ':');
}

static void
member_int(al_buf_t *b, const char *k, long long v)
{
    key(b, k);
    al_json_put_int(b, v);
}

static void
member_str(al_buf_t *b, const char *k, const char *v)
{
    key(b, k);
    al_json_put_str(b, v, strlen(v));
}

/* The members of object o (which the call takes), in place. */
static void
members_of(al_buf_t *b, json_t *o, size_t flags)
{
    if (json_object_size(o) > 0) {
        size_t at = b->len;
        al_json_put_value(b, o, flags);
        /* {"a":1} -> ,"a":1 */
        b->data[at] = ',';
        b->len--;
        b->data[b->len] = '\0';
    }
    json_decref(o);
}

static void
gpu_list(al_buf_t *b, uint64_t devices)
{
    al_buf_putc(b, '[');
    bool first = true;
    for (int d = 0; d < AL_MAX_DEVICES; d++)
        if (devices & ((uint64_t)1 << d)) {
            if (!first)
                al_buf_putc(b, ',');
            first = false;
            al_json_put_int(b, d);
        }
    al_buf_putc(b, ']');
}

static void
placement(al_buf_t *b, const al_ctl_t *ctl, const al__job_t *j, bool internal)
{
    key(b, "placement");
    al_buf_putc(b, '[');
    for (int t = 0; t < j->ntasks; t++) {
        const al__task_t *tk = &j->tasks[t];
        const char *node = tk->node >= 0 && tk->node < ctl->nnodes
                               ? ctl->nodes[tk->node].name
                               : "?";
        if (t > 0)
            al_buf_putc(b, ',');
        al_buf_puts(b, "{\"task\":");
        al_json_put_int(b, t);
        member_str(b, "node", node);
        key(b, "gpus");
        gpu_list(b, tk->devices);
        member_int(b, "gpu_milli", tk->gpu_milli);
        member_int(b, "gpu_mem", (long long)tk->gpu_mem);
        key(b, "done");
        al_buf_puts(b, tk->done ? "true" : "false");
        member_int(b, "exit_code", tk->exit_code);
        member_int(b, "signal", tk->signal);
        if (!internal && tk->has_usage) {
            member_int(b, "cpu_usec", (long long)tk->cpu_usec);
            if (tk->mem_used >= 0)
                member_int(b, "mem_used", (long long)tk->mem_used);
            if (tk->mem_peak >= 0)
                member_int(b, "mem_peak", (long long)tk->mem_peak);
        }
        al_buf_putc(b, '}');
    }
    al_buf_putc(b, ']');
}

void
al__job_text_buf(const al_ctl_t *ctl, const al__job_t *j, bool internal,
                 bool spec, size_t flags, al_buf_t *b)
{
    al_buf_puts(b, "{\"id\":");
    al_json_put_int(b, (long long)j->id);
    member_str(b, "name", j->name);
    member_str(b, "user", j->user);
    member_str(b, "queue", j->queue);
    member_str(b, "class", al__jclasses[j->cls].name);
    member_str(b, "state", al__jstate_names[j->state]);
    member_int(b, "tasks", j->ntasks);
    member_int(b, "gpus", j->gpus);
    member_int(b, "gpu_milli", j->gpu_milli);
    member_int(b, "cpu_milli", (long long)j->cpu_milli);
    member_int(b, "mem_bytes", (long long)j->mem_bytes);
    member_int(b, "time_limit", (long long)j->time_limit);
    key(b, "after");
    al_buf_putc(b, '[');
    for (int i = 0; i < j->nafter; i++) {
        if (i > 0)
            al_buf_putc(b, ',');
        al_json_put_int(b, (long long)j->after[i]);
    }
    al_buf_putc(b, ']');
    member_int(b, "submit_ms", (long long)j->submit_ms);
    member_int(b, "start_ms", (long long)j->start_ms);
    member_int(b, "end_ms", (long long)j->end_ms);
    member_int(b, "eligible_ms", (long long)j->eligible_ms);
    member_int(b, "restart_count", j->restart_count);
    member_int(b, "exit_code", j->exit_code);
    member_int(b, "signal", j->signal);
    if (j->gpu_model != NULL)
        member_str(b, "gpu_model", j->gpu_model);
    if (j->nice != 0)
        member_int(b, "nice", j->nice);
    if (j->prio_fixed)
        member_int(b, "priority_fixed", (long long)j->prio_value);
    if (j->num_nodes > 0)
        member_int(b, "num_nodes", j->num_nodes);
    /* The members other files keep, and the two reals (jansson's own
     * formatting of a double): the same function job_doc calls. */
    json_t *o = json_object();
    al__job_doc_kept(j, internal, o);
    members_of(b, o, flags);
    if (j->master_port != 0)
        member_int(b, "master_port", j->master_port);
    if (j->array != NULL) {
        key(b, "array");
        json_t *a = al__array_doc(j->array);
        al_json_put_value(b, a, flags);
        json_decref(a);
    }
    if (j->ndeps > 0) {
        char *d = al_dep_text(j->deps, j->ndeps);
        member_str(b, "dependency", d);
        free(d);
    }
    if (j->array_job != 0) {
        member_int(b, "array_job_id", (long long)j->array_job);
        member_int(b, "array_index", (long long)j->array_index);
    }
    /* command, cwd, env, script, image: the stored text's members. */
    if (spec && j->spec != NULL) {
        bool first = false; /* after "id" */
        al_json_put_members(b, j->spec, strlen(j->spec), &first);
    }
    char buf[256];
    const char *reason = al__job_reason(ctl, j, buf, sizeof buf);
    /* A reason may hold text from elsewhere, cut short: job_doc leaves
     * it out where jansson refuses it. */
    if (reason != NULL && al_json_utf8_ok(reason, strlen(reason)))
        member_str(b, "reason", reason);
    if (j->gpu_mem > 0)
        member_int(b, "gpu_mem", (long long)j->gpu_mem);
    if (!internal) {
        member_int(b, "priority", al__jclasses[j->cls].priority);
        key(b, "preemptible");
        al_buf_puts(b, al__jclasses[j->cls].preemptible ? "true" : "false");
    }
    if (j->tasks != NULL)
        placement(b, ctl, j, internal);
    al_buf_putc(b, '}');
}

char *
al__job_text(const al_ctl_t *ctl, const al__job_t *j, bool internal)
{
    al_buf_t b;
    al_buf_init(&b);
    al_buf_reserve(&b, 512 + (j->spec != NULL ? strlen(j->spec) : 0));
    al__job_text_buf(ctl, j, internal, true, JSON_COMPACT | JSON_ENCODE_ANY,
                     &b);
    return al_buf_steal(&b);
}
