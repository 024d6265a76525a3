/*
 * array.c -- job arrays: a parent job whose elements are the jobs with the
 * ids after its own (element at position k is job parent + 1 + k).  An
 * element pending in the array costs its NULL slot in the job table and
 * nothing else; it becomes a job of its own, a copy of the parent with its
 * index, its environment (ALLOT_ARRAY_*, Slurm's SLURM_ARRAY_*, a sweep's
 * ALLOT_SWEEP_*) and its sweep values in the command (and in a job
 * script's text), only when the cycle may need it (al__array_tick(): up
 * to the array's "%" limit, and a window of pending elements at a time)
 * or when a user names it.  The parent is never scheduled; it stays
 * pending (or held) until every element has ended, then takes the state
 * that says how they ended, so that `after` on a whole array means after
 * all of its elements.
 *
 * May call: state.c (every change of a job's state), table.c, doc.c,
 * depend.c (whether an element can ever start), store.c (through state.c)
 * and common.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

/* The most pending elements of one array given jobs at once: enough to
 * fill the free room of a large cluster in one cycle, few enough that a
 * cycle's cost does not grow with the array. */
#define ARRAY_WINDOW 1024

static al__job_t *
slot(al_ctl_t *ctl, const al__job_t *p, int64_t k)
{
    return ctl->jobs[p->id + (uint64_t)k];
}

/* The element's spec: the parent's, with its variables in "env" and the
 * sweep's values in the command. */
static char *
element_spec(const al__job_t *p, int64_t k, int64_t index)
{
    const al__array_t *a = p->array;
    json_t *spec = al__job_spec(p);
    json_t *env = json_object_get(spec, "env");
    if (!json_is_object(env)) {
        env = json_object();
        json_object_set_new(spec, "env", env);
    }
    char num[32];
    static const char *const keys[] = {
        "ALLOT_ARRAY_JOB_ID",     "SLURM_ARRAY_JOB_ID",
        "ALLOT_ARRAY_INDEX",      "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_MAX",   "SLURM_ARRAY_TASK_STEP",
    };
    const long long vals[] = {
        (long long)p->id,     (long long)p->id,       (long long)index,
        (long long)index,     (long long)a->as.count, (long long)a->as.min,
        (long long)a->as.max, (long long)a->as.step,
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        snprintf(num, sizeof num, "%lld", vals[i]);
        json_object_set_new(env, keys[i], json_string(num));
    }
    size_t na = json_array_size(a->sweep);
    if (na > 0) {
        const char *names[AL_SWEEP_MAX_AXES] = { NULL };
        const char *values[AL_SWEEP_MAX_AXES] = { NULL };
        /* Position k in mixed radix, the last axis the fastest. */
        int64_t rest = k;
        for (size_t i = na; i-- > 0;) {
            const json_t *ax = json_array_get(a->sweep, i);
            const json_t *vs = json_object_get(ax, "values");
            int64_t nv = (int64_t)json_array_size(vs);
            names[i] = al_json_str(ax, "name", "");
            values[i] =
                json_string_value(json_array_get(vs, (size_t)(rest % nv)));
            rest /= nv;
        }
        for (size_t i = 0; i < na; i++) {
            char var[AL_SWEEP_MAX_NAME + 16];
            int n = snprintf(var, sizeof var, "ALLOT_SWEEP_%s", names[i]);
            for (int c = 12; c < n; c++)
                var[c] = (char)toupper((unsigned char)var[c]);
            json_object_set_new(env, var, json_string(values[i]));
        }
        json_t *cmd = json_array();
        json_t *old = json_object_get(spec, "command");
        for (size_t i = 0; i < json_array_size(old); i++) {
            char *w = al_sweep_subst(json_string_value(json_array_get(old, i)),
                                     names, values, (int)na);
            json_array_append_new(cmd, json_string(w));
            free(w);
        }
        json_object_set_new(spec, "command", cmd);
        /* A job script's text too (#ALLOT --sweep): its {NAME} of an
         * axis; other braces are the shell's. */
        const char *script = al_json_str(spec, "script", NULL);
        if (script != NULL) {
            char *w = al_sweep_subst(script, names, values, (int)na);
            json_object_set_new(spec, "script", json_string(w));
            free(w);
        }
    }
    char *text = al_json_dump(spec);
    json_decref(spec);
    return text;
}

/* Gives the element at position k of p its job (its slot is NULL). */
static al__job_t *
materialize(al_ctl_t *ctl, al__job_t *p, int64_t k)
{
    int64_t index = al_array_spec_index(&p->array->as, k);
    al__job_t *j = al_xcalloc(1, sizeof *j);
    j->id = p->id + 1 + (uint64_t)k;
    j->name = al_xstrdup(p->name);
    j->user = al_xstrdup(p->user);
    j->queue = al_xstrdup(p->queue);
    j->cls = p->cls;
    j->ntasks = p->ntasks;
    j->gpus = p->gpus;
    j->gpu_milli = p->gpu_milli;
    j->cpu_milli = p->cpu_milli;
    j->mem_bytes = p->mem_bytes;
    j->time_limit = p->time_limit;
    j->prio_fixed = p->prio_fixed;
    j->prio_value = p->prio_value;
    j->nice = p->nice;
    j->num_nodes = p->num_nodes;
    j->gpu_model = p->gpu_model != NULL ? al_xstrdup(p->gpu_model) : NULL;
    j->pool = p->pool != NULL ? al_xstrdup(p->pool) : NULL;
    j->constraint = p->constraint != NULL ? al_xstrdup(p->constraint) : NULL;
    j->min_tasks = p->min_tasks;
    j->max_tasks = p->max_tasks;
    j->checkpointing = p->checkpointing;
    j->nvlink_required = p->nvlink_required;
    j->topology_required = p->topology_required;
    j->retries = p->retries; /* each element runs again on its own */
    j->spec = element_spec(p, k, index);
    j->nafter = p->nafter;
    j->after = al_xcalloc((size_t)p->nafter + 1, sizeof *j->after);
    if (p->nafter > 0)
        memcpy(j->after, p->after, (size_t)p->nafter * sizeof *j->after);
    if (p->ndeps > 0) {
        j->ndeps = p->ndeps;
        j->deps = al_xcalloc((size_t)p->ndeps, sizeof *j->deps);
        memcpy(j->deps, p->deps, (size_t)p->ndeps * sizeof *j->deps);
    }
    j->state = JS_PENDING;
    j->submit_ms = p->submit_ms;
    j->eligible_ms = p->eligible_ms;
    j->snap = -1;
    j->array_job = p->id;
    j->array_index = index;
    al__ctl_put_job(ctl, j);
    al__ctl_dirty(ctl, j);
    return j;
}

al__job_t *
al__array_element(al_ctl_t *ctl, al__job_t *p, int64_t k, bool materialize_it)
{
    al__job_t *j = slot(ctl, p, k);
    if (j == NULL && materialize_it && p->state <= JS_RUNNING) {
        j = materialize(ctl, p, k);
        if (p->state == JS_HELD)
            al__ctl_set_state(ctl, j, JS_HELD, "held", "its array is held");
    }
    return j;
}

/* How the array ended: failed if any element failed, else out of memory
 * if any element ran out of it, else cancelled if any was, else
 * completed.  The elements out of memory count among the failed ones in
 * the reason too. */
static void
finish(al_ctl_t *ctl, al__job_t *p)
{
    int64_t n[JS_COUNT] = { 0 };
    for (int64_t k = 0; k < p->array->as.count; k++) {
        const al__job_t *j = slot(ctl, p, k);
        n[j != NULL ? j->state : JS_CANCELLED]++;
    }
    al__jstate_t st = n[JS_FAILED] > 0          ? JS_FAILED
                      : n[JS_OUT_OF_MEMORY] > 0 ? JS_OUT_OF_MEMORY
                      : n[JS_CANCELLED] > 0     ? JS_CANCELLED
                                                : JS_COMPLETED;
    char *d =
        al_xasprintf("%lld completed, %lld failed, %lld cancelled",
                     (long long)n[JS_COMPLETED],
                     (long long)n[JS_FAILED] + (long long)n[JS_OUT_OF_MEMORY],
                     (long long)n[JS_CANCELLED]);
    if (n[JS_OUT_OF_MEMORY] > 0) {
        char *e = al_xasprintf("%s (%lld out of memory)", d,
                               (long long)n[JS_OUT_OF_MEMORY]);
        free(d);
        d = e;
    }
    al__ctl_set_state(ctl, p, st, "ended", d);
    free(d);
}

static void
tick_one(al_ctl_t *ctl, al__job_t *p)
{
    al__array_t *a = p->array;
    int64_t count = a->as.count;
    while (a->done_k < count) {
        const al__job_t *j = slot(ctl, p, a->done_k);
        if (j == NULL || j->state <= JS_RUNNING)
            break;
        a->done_k++;
    }
    if (a->next_k < a->done_k)
        a->next_k = a->done_k;
    while (a->next_k < count && slot(ctl, p, a->next_k) != NULL)
        a->next_k++;
    if (a->done_k == count) {
        finish(ctl, p);
        return;
    }
    if (p->state == JS_HELD || a->next_k == count)
        return;
    /* What holds the next elements back.  The limit counts those running
     * and those pending that may start now (the cycle keeps it: cycle.c),
     * not those that wait on a dependency: as in Slurm, "%N" is how many
     * run, so an element waiting on its aftercorr does not keep the next
     * from starting.  The window counts every element pending, but for
     * one whose own aftercorr can never be satisfied (the element it
     * follows failed): the cycle fails it (lifecycle.c), and until then it
     * must not hold up the rest of the array. */
    int64_t active = 0, pending = 0;
    for (int64_t k = a->done_k; k < count; k++) {
        const al__job_t *j = slot(ctl, p, k);
        if (j == NULL && k >= a->next_k)
            break;
        if (j == NULL || j->state == JS_HELD || j->state > JS_RUNNING)
            continue;
        if (j->state == JS_PENDING) {
            al_dep_state_t ds = al__depend_state(ctl, j);
            if (ds == AL_DEPS_NEVER && al__depend_never_own(ctl, j))
                continue;
            pending++;
            if (ds == AL_DEPS_WAITING || ds == AL_DEPS_NEVER)
                continue;
        }
        active++;
    }
    int64_t room = ARRAY_WINDOW - pending;
    if (a->as.limit > 0 && a->as.limit - active < room)
        room = a->as.limit - active;
    for (; room > 0 && a->next_k < count; a->next_k++) {
        if (slot(ctl, p, a->next_k) == NULL) {
            materialize(ctl, p, a->next_k);
            room--;
        }
    }
}

void
al__array_tick(al_ctl_t *ctl)
{
    for (uint64_t i = al__ctl_first_active(ctl); i < ctl->njobs; i++) {
        al__job_t *p = ctl->jobs[i];
        if (p == NULL || p->array == NULL || p->state > JS_RUNNING)
            continue;
        tick_one(ctl, p);
        /* Its elements are jobs of their own, or nothing yet. */
        i += (uint64_t)p->array->as.count;
    }
}

int
al__array_resolve(al_ctl_t *ctl, const char *text, al__job_t **p, int64_t *k,
                  char **cause)
{
    const char *us = strchr(text, '_');
    char *end = NULL;
    unsigned long long pid = strtoull(text, &end, 10);
    long long idx = us != NULL ? strtoll(us + 1, &end, 10) : -1;
    al__job_t *par = us != NULL && us > text && isdigit((unsigned char)text[0])
                         ? al__ctl_job(ctl, pid)
                         : NULL;
    if (par == NULL || par->array == NULL) {
        *cause =
            al_xasprintf("no job array %.*s", us ? (int)(us - text) : 0, text);
        return -1;
    }
    int64_t pos = isdigit((unsigned char)us[1]) && *end == '\0'
                      ? al_array_spec_pos(&par->array->as, idx)
                      : -1;
    if (pos < 0) {
        *cause = al_xasprintf("job array %llu has no element %s (its indices: "
                              "%s)",
                              pid, us + 1, par->array->spec);
        return -1;
    }
    *p = par;
    *k = pos;
    return 0;
}

json_t *
al__array_json(al_ctl_t *ctl, const al__job_t *p, const char **shown)
{
    const al__array_t *a = p->array;
    int64_t n[JS_COUNT] = { 0 };
    for (int64_t k = 0; k < a->as.count; k++) {
        const al__job_t *j = slot(ctl, p, k);
        n[j != NULL                  ? j->state
          : p->state == JS_CANCELLED ? JS_CANCELLED
          : p->state == JS_HELD      ? JS_HELD
                                     : JS_PENDING]++;
    }
    json_t *st = json_object();
    for (int s = 0; s < JS_COUNT; s++)
        json_object_set_new(st, al__jstate_names[s], json_integer(n[s]));
    json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "spec",
                          a->spec, "count", (json_int_t)a->as.count, "limit",
                          (json_int_t)a->as.limit, "min", (json_int_t)a->as.min,
                          "max", (json_int_t)a->as.max, "step",
                          (json_int_t)a->as.step, "states", st);
    if (a->sweep != NULL)
        json_object_set(o, "sweep", a->sweep);
    *shown = p->state <= JS_RUNNING && n[JS_RUNNING] > 0
                 ? al__jstate_names[JS_RUNNING]
                 : al__jstate_names[p->state];
    return o;
}

json_t *
al__array_pending_json(al_ctl_t *ctl, const al__job_t *p, int64_t k)
{
    json_t *o = al__job_json(ctl, p, false);
    json_object_del(o, "array");
    json_object_del(o, "history");
    int64_t index = al_array_spec_index(&p->array->as, k);
    uint64_t eid = p->id + 1 + (uint64_t)k;
    json_object_set_new(o, "id", json_integer((json_int_t)eid));
    json_object_set_new(o, "array_job_id", json_integer((json_int_t)p->id));
    json_object_set_new(o, "array_index", json_integer((json_int_t)index));
    al__jstate_t st = p->state <= JS_RUNNING ? p->state : JS_CANCELLED;
    json_object_set_new(o, "state", json_string(al__jstate_names[st]));
    char *why = st == JS_CANCELLED ? al_xstrdup("its array was cancelled")
                : st == JS_HELD    ? al_xstrdup("its array is held")
                : p->array->as.limit > 0
                    ? al_xasprintf("waiting for its turn in array %llu (at "
                                   "most %lld elements at once)",
                                   (unsigned long long)p->id,
                                   (long long)p->array->as.limit)
                    : al_xasprintf("waiting for its turn in array %llu",
                                   (unsigned long long)p->id);
    json_object_set_new(o, "reason", json_string(why));
    free(why);
    return o;
}

void
al__array_cancel(al_ctl_t *ctl, al__job_t *p, const char *detail)
{
    for (int64_t k = 0; k < p->array->as.count; k++) {
        al__job_t *j = slot(ctl, p, k);
        if (j != NULL && j->state <= JS_RUNNING)
            al__ctl_set_state(ctl, j, JS_CANCELLED, "cancelled", detail);
        else if (j == NULL) /* ends with its array, without a job */
            ctl->counters.ended[JS_CANCELLED]++;
    }
    al__ctl_set_state(ctl, p, JS_CANCELLED, "cancelled", detail);
}

void
al__array_hold(al_ctl_t *ctl, al__job_t *p, bool hold, const char *who)
{
    al__jstate_t from = hold ? JS_PENDING : JS_HELD;
    al__jstate_t to = hold ? JS_HELD : JS_PENDING;
    const char *event = hold ? "held" : "released";
    for (int64_t k = 0; k < p->array->as.count; k++) {
        al__job_t *j = slot(ctl, p, k);
        if (j != NULL && j->state == from)
            al__ctl_set_state(ctl, j, to, event, who);
    }
    if (p->state == from)
        al__ctl_set_state(ctl, p, to, event, who);
}
