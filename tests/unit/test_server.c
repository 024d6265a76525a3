/*
 * test_server.c -- unit tests of the controller's pure parts: the names
 * of states and classes and the text of reasons (reason.c), the document
 * forms of jobs, queues and nodes and their round trips through the stored
 * form (doc.c), a job submission body (jobbody.c), and the agent
 * protocol's sync body and desired task sets (agentproto.c).  No loop, no
 * store, no HTTP: a zeroed controller with the tables a test fills.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "store_int.h"
#include "test.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                            */

static json_t *
parse(const char *text)
{
    json_t *v = al_json_parse(text, strlen(text), NULL);
    ASSERT(v != NULL);
    return v;
}

/* Asserts that v dumps as the compact JSON `want`; takes v. */
#define ASSERT_JSON(v, want)                                                   \
    do {                                                                       \
        json_t *aj__v = (v);                                                   \
        char *aj__s = al_json_dump(aj__v);                                     \
        json_decref(aj__v);                                                    \
        int aj__same = strcmp(aj__s, (want)) == 0;                             \
        if (!aj__same)                                                         \
            fprintf(stderr, "    got  %s\n    want %s\n", aj__s, (want));      \
        free(aj__s);                                                           \
        ASSERT(aj__same);                                                      \
    } while (0)

/* Parses body as user `caller`; returns the rc and the job or cause. */
static int
job_parse(const char *body, const char *caller, bool admin, al__job_t **j,
          char **cause)
{
    json_t *b = parse(body);
    int rc = al__job_parse(b, caller, admin, j, cause);
    json_decref(b);
    return rc;
}

/* Asserts that body is refused with rc and exactly the text want, and that
 * the out-parameter is left alone. */
static void
job_refused(const char *body, bool admin, int rc, const char *want)
{
    al__job_t *j = NULL;
    char *cause = NULL;
    ASSERT_EQ(job_parse(body, "alice", admin, &j, &cause), rc);
    ASSERT(j == NULL);
    ASSERT_STR_EQ(cause, want);
    free(cause);
    /* Without a place for the reason: the same answer, nothing leaked. */
    ASSERT_EQ(job_parse(body, "alice", admin, &j, NULL), rc);
    ASSERT(j == NULL);
}

/* Whether an out-parameter, filled with a pattern and copied to before,
 * still holds the pattern: its bytes, as a refusal must leave them. */
static bool
untouched(const void *now, const void *before, size_t n)
{
    return memcmp(now, before, n) == 0;
}

static void
ctl_fini(al_ctl_t *ctl)
{
    for (uint64_t i = 0; i < ctl->njobs; i++)
        al__job_free(ctl->jobs[i]);
    free(ctl->jobs);
    free(ctl->running);
    free(ctl->dirty);
    for (int i = 0; i < ctl->nnodes; i++)
        al__node_fini(&ctl->nodes[i]);
    free(ctl->nodes);
    free(ctl->node_hash);
    al__waste_fini(&ctl->waste);
    al__jobcounts_fini(&ctl->jc);
    memset(ctl, 0, sizeof *ctl);
}

/* Adds a node read from its register body. */
static int
add_node(al_ctl_t *ctl, const char *body)
{
    json_t *b = parse(body);
    al__node_t n;
    char *cause = NULL;
    ASSERT_EQ(al__node_from_json(b, &n, &cause), 0);
    json_decref(b);
    return al__ctl_add_node(ctl, &n);
}

/* ------------------------------------------------------------------ */
/* Names and reasons                                                  */

static void
state_names(void)
{
    static const char *const want[JS_COUNT] = {
        "pending", "held",      "running",       "completed",
        "failed",  "cancelled", "out_of_memory",
    };
    for (int s = 0; s < JS_COUNT; s++) {
        ASSERT_STR_EQ(al__jstate_names[s], want[s]);
        ASSERT_EQ(al__jstate_parse(want[s]), s);
    }
    ASSERT_EQ(al__jstate_parse("active"), -1);
    ASSERT_EQ(al__jstate_parse("Running"), -1);
    ASSERT_EQ(al__jstate_parse(""), -1);
    ASSERT_STR_EQ(al__node_state_names[NS_READY], "ready");
    ASSERT_STR_EQ(al__node_state_names[NS_DRAINING], "draining");
    ASSERT_STR_EQ(al__node_state_names[NS_DOWN], "down");
}

static void
job_classes(void)
{
    ASSERT_EQ(al__njclasses, 3);
    ASSERT_STR_EQ(al__jclasses[0].name, "train");
    ASSERT_EQ(al__jclasses[0].priority, AL_PRIO_TRAIN);
    ASSERT(al__jclasses[0].preemptible);
    ASSERT_STR_EQ(al__jclasses[1].name, "build");
    ASSERT_EQ(al__jclasses[1].priority, AL_PRIO_BUILD);
    ASSERT(!al__jclasses[1].preemptible);
    ASSERT_STR_EQ(al__jclasses[2].name, "inference");
    ASSERT_EQ(al__jclasses[2].priority, AL_PRIO_INFERENCE);
    ASSERT(!al__jclasses[2].preemptible);
}

static void
evict_reasons(void)
{
    ASSERT_STR_EQ(al__evict_reasons[AL_EVICT_RECLAIM],
                  "reclaimed by another queue");
    ASSERT_STR_EQ(al__evict_reasons[AL_EVICT_PREEMPT],
                  "preempted by a higher priority job");
    ASSERT_STR_EQ(al__evict_reasons[AL_EVICT_RESERVATION],
                  "ran on lent capacity; the reservation starts");
}

static void
job_reason(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    char team[] = "team", other[] = "other";
    char *qnames[] = { team, other };
    ctl.reason_qnames = qnames;
    ctl.reason_nq = 2;
    ctl.reason_now = 1000;
    al__job_t j;
    memset(&j, 0, sizeof j);
    char buf[256];

    /* Pending with no reason from a cycle: the stored one, or none. */
    j.state = JS_PENDING;
    ASSERT(al__job_reason(&ctl, &j, buf, sizeof buf) == NULL);
    char gone[] = "queue gone does not exist or is not a leaf";
    j.reason = gone;
    ASSERT(al__job_reason(&ctl, &j, buf, sizeof buf) == gone);

    /* The last cycle's reason, with the queue and job it names. */
    j.why_valid = true;
    j.why = (al_reason_t){ .code = AL_WHY_NO_VICTIM, .queue = 1, .job = -1 };
    ASSERT_STR_EQ(al__job_reason(&ctl, &j, buf, sizeof buf),
                  "queue other is below its fair share but no running job "
                  "can be reclaimed for it");
    j.why = (al_reason_t){ .code = AL_WHY_ORDER, .queue = 0, .job = 0 };
    j.why_job = 42;
    ASSERT_STR_EQ(al__job_reason(&ctl, &j, buf, sizeof buf),
                  "behind job 42 in strict order");
    /* A queue index beyond the names kept is shown as unknown. */
    j.why = (al_reason_t){ .code = AL_WHY_NO_VICTIM, .queue = 5, .job = -1 };
    ASSERT_STR_EQ(al__job_reason(&ctl, &j, buf, sizeof buf),
                  "queue ? is below its fair share but no running job can "
                  "be reclaimed for it");
    j.state = JS_HELD;
    j.why = (al_reason_t){ .code = AL_WHY_HELD, .queue = -1, .job = -1 };
    ASSERT_STR_EQ(al__job_reason(&ctl, &j, buf, sizeof buf), "held by user");

    /* An ended job shows how it ended, whatever a cycle said before. */
    j.state = JS_COMPLETED;
    char ended[] = "all tasks exited with code 0";
    j.reason = ended;
    ASSERT(al__job_reason(&ctl, &j, buf, sizeof buf) == ended);
}

/* ------------------------------------------------------------------ */
/* Job bodies                                                         */

static void
job_body_defaults(void)
{
    al__job_t *j = NULL;
    ASSERT_EQ(job_parse("{\"command\": [\"/usr/bin/python3\", \"train.py\"]}",
                        "alice", false, &j, NULL),
              0);
    ASSERT_STR_EQ(j->name, "python3");
    ASSERT_STR_EQ(j->user, "alice");
    ASSERT_STR_EQ(j->queue, "default");
    ASSERT_EQ(j->cls, 0);
    ASSERT_EQ(j->ntasks, 1);
    ASSERT_EQ(j->gpus, 0);
    ASSERT_EQ(j->gpu_milli, 0);
    ASSERT_EQ(j->cpu_milli, 100);
    ASSERT_EQ(j->mem_bytes, 0);
    ASSERT_EQ(j->time_limit, 0);
    ASSERT(j->gpu_model == NULL);
    ASSERT_EQ(j->nafter, 0);
    ASSERT_EQ(j->state, JS_PENDING);
    ASSERT_EQ(j->snap, -1);
    ASSERT_EQ(j->id, 0);
    ASSERT_STR_EQ(j->spec, "{\"command\":[\"/usr/bin/python3\",\"train.py\"]}");
    al__job_free(j);
}

static void
job_body_full(void)
{
    al__job_t *j = NULL;
    ASSERT_EQ(job_parse("{\"command\": [\"run\"], \"queue\": \"team\", "
                        "\"class\": \"inference\", \"tasks\": 4, \"gpus\": 2, "
                        "\"cpu_milli\": 8000, \"mem_bytes\": 1024, "
                        "\"time_limit\": 600, \"gpu_model\": \"H100\", "
                        "\"after\": [3, 5], \"hold\": true, \"name\": \"n\", "
                        "\"env\": {\"A\": \"1\"}, \"cwd\": \"/w\", "
                        "\"script\": \"#!/bin/sh\", \"user\": \"bob\"}",
                        "root", true, &j, NULL),
              0);
    ASSERT_STR_EQ(j->name, "n");
    ASSERT_STR_EQ(j->user, "bob");
    ASSERT_STR_EQ(j->queue, "team");
    ASSERT_EQ(j->cls, 2);
    ASSERT_EQ(j->ntasks, 4);
    ASSERT_EQ(j->gpus, 2);
    ASSERT_EQ(j->cpu_milli, 8000);
    ASSERT_EQ(j->mem_bytes, 1024);
    ASSERT_EQ(j->time_limit, 600);
    ASSERT_STR_EQ(j->gpu_model, "H100");
    ASSERT_EQ(j->nafter, 2);
    ASSERT_EQ(j->after[0], 3);
    ASSERT_EQ(j->after[1], 5);
    ASSERT_EQ(j->state, JS_HELD);
    /* The spec keeps command, cwd, script and env, in that order. */
    ASSERT_STR_EQ(j->spec, "{\"command\":[\"run\"],\"cwd\":\"/w\","
                           "\"script\":\"#!/bin/sh\",\"env\":{\"A\":\"1\"}}");
    al__job_free(j);
}

static void
job_body_fraction(void)
{
    static const struct {
        const char *frac;
        int32_t milli;
    } cases[] = {
        { "0.25", 250 },
        { "0.5", 500 },
        { "0.0004", 1 },   /* never rounded to nothing */
        { "0.9999", 999 }, /* never rounded to a whole GPU */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[128];
        snprintf(body, sizeof body,
                 "{\"command\": [\"x\"], \"gpu_fraction\": %s}", cases[i].frac);
        al__job_t *j = NULL;
        ASSERT_EQ(job_parse(body, "alice", false, &j, NULL), 0);
        ASSERT_EQ(j->gpus, 0);
        ASSERT_EQ(j->gpu_milli, cases[i].milli);
        al__job_free(j);
    }
}

static void
job_body_refused(void)
{
    job_refused("[1]", false, AL_EINVAL,
                "the body must be a JSON object describing the job");
    job_refused("{\"command\": [\"x\"], \"bogus\": 1}", false, AL_EINVAL,
                "unknown field 'bogus' (see docs/server.md for a job's "
                "fields)");
    job_refused("{\"command\": []}", false, AL_EINVAL,
                "command must be a non-empty array of strings");
    job_refused("{\"command\": [\"x\", 1]}", false, AL_EINVAL,
                "command must be a non-empty array of strings");
    job_refused("{\"command\": [\"x\"], \"tasks\": 0}", false, AL_EINVAL,
                "tasks must be an integer in 1..4096");
    job_refused("{\"command\": [\"x\"], \"gpus\": 65}", false, AL_EINVAL,
                "gpus must be an integer in 0..64");
    job_refused("{\"command\": [\"x\"], \"class\": \"gpu\"}", false, AL_EINVAL,
                "class must be train, build or inference");
    job_refused("{\"command\": [\"x\"], \"queue\": 3}", false, AL_EINVAL,
                "queue must be a string");
    job_refused("{\"command\": [\"x\"], \"gpus\": 1, \"gpu_fraction\": 0.5}",
                false, AL_EINVAL,
                "gpu_fraction must be in (0, 1) and excludes gpus");
    job_refused("{\"command\": [\"x\"], \"gpu_fraction\": 1}", false, AL_EINVAL,
                "gpu_fraction must be in (0, 1) and excludes gpus");
    job_refused("{\"command\": [\"x\"], \"env\": {\"A\": 1}}", false, AL_EINVAL,
                "env must be an object of strings");
    job_refused("{\"command\": [\"x\"], \"after\": [2, 0]}", false, AL_EINVAL,
                "after: no such job (entry 1)");
    job_refused("{\"command\": [\"x\"], \"hold\": 1}", false, AL_EINVAL,
                "hold must be true or false");
    job_refused("{\"command\": [\"/bin/\"]}", false, AL_EINVAL,
                "name must be 1-128 bytes");
    /* Only an admin may submit for another user, and only as a valid
     * name. */
    job_refused("{\"command\": [\"x\"], \"user\": \"bob\"}", false, AL_EPERM,
                "only an admin may submit for another user");
    job_refused("{\"command\": [\"x\"], \"user\": \"b b\"}", true, AL_EINVAL,
                "bad user name");
    /* Naming oneself is no other user. */
    al__job_t *j = NULL;
    ASSERT_EQ(job_parse("{\"command\": [\"x\"], \"user\": \"alice\"}", "alice",
                        false, &j, NULL),
              0);
    ASSERT_STR_EQ(j->user, "alice");
    al__job_free(j);
}

/* ------------------------------------------------------------------ */
/* Job documents                                                      */

static void
job_doc_round_trip(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    add_node(&ctl, "{\"name\": \"n1\"}");
    add_node(&ctl, "{\"name\": \"n2\"}");
    al__job_t *j = NULL;
    ASSERT_EQ(job_parse("{\"command\": [\"/bin/train\"], \"queue\": \"team\", "
                        "\"class\": \"build\", \"tasks\": 2, \"gpus\": 2, "
                        "\"after\": [3], \"env\": {\"A\": \"1\"}, "
                        "\"time_limit\": 600, \"gpu_model\": \"H100\"}",
                        "alice", false, &j, NULL),
              0);
    j->id = 7;
    j->submit_ms = j->eligible_ms = 1000;
    const char *stored =
        "{\"id\":7,\"name\":\"train\",\"user\":\"alice\",\"queue\":\"team\","
        "\"class\":\"build\",\"state\":\"pending\",\"tasks\":2,\"gpus\":2,"
        "\"gpu_milli\":0,\"cpu_milli\":100,\"mem_bytes\":0,"
        "\"time_limit\":600,\"after\":[3],\"submit_ms\":1000,\"start_ms\":0,"
        "\"end_ms\":0,\"eligible_ms\":1000,\"restart_count\":0,"
        "\"exit_code\":0,\"signal\":0,\"gpu_model\":\"H100\","
        "\"command\":[\"/bin/train\"],\"env\":{\"A\":\"1\"}}";
    ASSERT_JSON(al__job_json(&ctl, j, true), stored);
    /* The API's form adds what the class implies. */
    json_t *api = al__job_json(&ctl, j, false);
    ASSERT_EQ(json_integer_value(json_object_get(api, "priority")),
              AL_PRIO_BUILD);
    ASSERT(json_is_false(json_object_get(api, "preemptible")));
    json_decref(api);

    /* Running, with a placement, a master port and exits. */
    j->state = JS_RUNNING;
    j->start_ms = 2000;
    j->restart_count = 1;
    j->master_port = 29600;
    j->tasks = calloc(2, sizeof *j->tasks);
    j->tasks[0] = (al__task_t){ .node = 1, .devices = 5, .gpu_mem = 9 };
    j->tasks[1] = (al__task_t){
        .node = 0, .devices = 2, .done = true, .exit_code = 3, .signal = 9
    };
    json_t *doc = al__job_json(&ctl, j, true);
    char *text = al_json_dump(doc);
    ASSERT(strstr(text, "\"master_port\":29600,\"command\"") != NULL);
    ASSERT(strstr(text, "\"placement\":[{\"task\":0,\"node\":\"n2\","
                        "\"gpus\":[0,2],\"gpu_milli\":0,\"gpu_mem\":9,"
                        "\"done\":false,\"exit_code\":0,\"signal\":0},"
                        "{\"task\":1,\"node\":\"n1\",\"gpus\":[1],"
                        "\"gpu_milli\":0,\"gpu_mem\":0,\"done\":true,"
                        "\"exit_code\":3,\"signal\":9}]}") != NULL);
    al__job_t *back = al__job_from_json(&ctl, doc);
    ASSERT(back != NULL);
    ASSERT_EQ(back->id, 7);
    ASSERT_EQ(back->state, JS_RUNNING);
    ASSERT_EQ(back->cls, 1);
    ASSERT_EQ(back->restart_count, 1);
    ASSERT_EQ(back->master_port, 29600);
    ASSERT_EQ(back->tasks[0].node, 1);
    ASSERT_EQ(back->tasks[0].devices, 5);
    ASSERT_EQ(back->tasks[0].log_size, -1);
    ASSERT_EQ(back->tasks[1].node, 0);
    ASSERT(back->tasks[1].done);
    ASSERT_EQ(back->tasks[1].exit_code, 3);
    ASSERT_EQ(back->snap, -1);
    ASSERT_STR_EQ(back->spec, j->spec);
    ASSERT_EQ(ctl.ndirty, 0);
    /* And it writes the same document again. */
    json_t *doc2 = al__job_json(&ctl, back, true);
    char *text2 = al_json_dump(doc2);
    ASSERT_STR_EQ(text2, text);
    free(text2);
    json_decref(doc2);
    /* The store's text is the same document; a job with no spec members
     * has none. */
    char *row = al__job_text(&ctl, back, true);
    ASSERT_STR_EQ(row, text);
    json_t *rowdoc = json_loads(row, 0, NULL);
    ASSERT(rowdoc != NULL);
    /* Read back from the stored text (its members, not the text). */
    al__job_t *stored_back = al__job_from_json(&ctl, rowdoc);
    ASSERT(stored_back != NULL);
    ASSERT_STR_EQ(stored_back->spec, j->spec);
    al__job_free(stored_back);
    json_decref(rowdoc);
    free(row);
    free(back->spec);
    back->spec = strdup("{}");
    row = al__job_text(&ctl, back, true);
    rowdoc = json_loads(row, 0, NULL);
    ASSERT(rowdoc != NULL && json_object_get(rowdoc, "command") == NULL);
    ASSERT(json_object_get(rowdoc, "signal") != NULL);
    json_decref(rowdoc);
    free(row);
    al__job_free(back);
    free(text);
    json_decref(doc);
    al__job_free(j);
    ctl_fini(&ctl);
}

/* The store's row written directly is the tree's dump, byte for byte, in
 * each of the three forms (stored; the API's; the API's without spec) and
 * with a reply's flags too (reals in 15 digits). */
static void
text_same(al_ctl_t *ctl, const al__job_t *j)
{
    static const size_t flags[2] = { JSON_COMPACT | JSON_ENCODE_ANY,
                                     AL__REPLY_FLAGS };
    for (int form = 0; form < 6; form++) {
        json_t *doc = form % 3 == 2 ? al__job_json_nospec(ctl, j)
                                    : al__job_json(ctl, j, form % 3 == 0);
        char *want = al_json_dump_flags(doc, flags[form / 3]);
        al_buf_t b;
        al_buf_init(&b);
        al__job_text_buf(ctl, j, form % 3 == 0, form % 3 != 2, flags[form / 3],
                         &b);
        ASSERT_STR_EQ(al_buf_cstr(&b), want);
        json_t *back = json_loads(al_buf_cstr(&b), 0, NULL);
        ASSERT(back != NULL);
        json_decref(back);
        al_buf_fini(&b);
        free(want);
        json_decref(doc);
    }
    char *row = al__job_text(ctl, j, true);
    json_t *doc = al__job_json(ctl, j, true);
    char *want = al_json_dump(doc);
    ASSERT_STR_EQ(row, want);
    free(want);
    json_decref(doc);
    free(row);
}

static void
job_text_same(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    add_node(&ctl, "{\"name\": \"n1\"}");
    add_node(&ctl, "{\"name\": \"n2\"}");
    static const char *const bodies[] = {
        "{\"command\": [\"x\"]}",
        "{\"command\": [\"/bin/t\"], \"name\": \"a \\\"q\\\" \\u00e9\\n\", "
        "\"queue\": \"team\", \"class\": \"build\", \"tasks\": 2, "
        "\"gpus\": 2, \"after\": [3, 4], \"env\": {\"A\": \"1\"}, "
        "\"time_limit\": 600, \"gpu_model\": \"H100\", "
        "\"pool\": \"p\", \"constraint\": \"c\", \"nvlink\": \"required\", "
        "\"topology\": \"required\", \"retries\": 2, "
        "\"dependency\": \"afterok:3\", \"cwd\": \"/w\"}",
        "{\"command\": [\"x\"], \"gpus\": 1, \"max_tasks\": 4, "
        "\"checkpointing\": true, \"array\": \"0-9%2\"}",
        "{\"command\": [\"x\"], \"gpu_fraction\": 0.25, \"hold\": true}",
        "{\"command\": [\"x\"], \"gpu_mem\": 5000000, \"image\": \"i\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        al__job_t *j = NULL;
        char *cause = NULL;
        int rc = job_parse(bodies[i], "alice", false, &j, &cause);
        if (rc != 0)
            fprintf(stderr, "  body %zu: %s\n", i, cause ? cause : "?");
        free(cause);
        ASSERT_EQ(rc, 0);
        j->id = 40 + i;
        j->submit_ms = j->eligible_ms = 1000;
        text_same(&ctl, j);
        /* Every optional member at once, then running with a placement. */
        j->nice = -3;
        j->prio_fixed = true;
        j->prio_value = 77;
        j->num_nodes = 2;
        j->attained = 12.5;
        j->used_known = true;
        j->used = 0.1;
        j->pipeline = 1;
        free(j->stage);
        j->stage = strdup("prep");
        j->retry_at_ms = 99;
        j->suspended = true;
        j->master_port = 29600;
        j->array_job = 39;
        j->array_index = 1;
        free(j->reason);
        j->reason = strdup("cut short \xc3");
        text_same(&ctl, j);
        free(j->reason);
        j->reason = strdup("held: \"why\" \xc3\xa9");
        text_same(&ctl, j);
        j->state = JS_RUNNING;
        j->start_ms = 2000;
        j->tasks = calloc((size_t)j->ntasks, sizeof *j->tasks);
        for (int t = 0; t < j->ntasks; t++)
            j->tasks[t] = (al__task_t){ .node = t % 3 == 2 ? 7 : t % 2,
                                        .devices = 5 + (uint64_t)t,
                                        .gpu_mem = 9,
                                        .done = t == 1,
                                        .exit_code = t,
                                        .signal = 0,
                                        .has_usage = true,
                                        .cpu_usec = 123,
                                        .mem_used = t == 0 ? -1 : 4,
                                        .mem_peak = 8 };
        bool made = false;
        ASSERT(al__jobtok_text(j, &made) != NULL);
        text_same(&ctl, j);
        free(j->spec);
        j->spec = strdup("{}");
        text_same(&ctl, j);
        al__job_free(j);
    }
    ctl_fini(&ctl);
}

static void
job_doc_lost_node(void)
{
    /* A running job whose node is no longer in the store runs again: it
     * comes back pending, one restart later, to be written again. */
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    json_t *doc = parse("{\"id\": 3, \"name\": \"x\", \"user\": \"u\", "
                        "\"queue\": \"q\", \"state\": \"running\", "
                        "\"restart_count\": 2, \"placement\": [{\"task\": 0, "
                        "\"node\": \"gone\", \"gpus\": [0]}]}");
    al__job_t *j = al__job_from_json(&ctl, doc);
    json_decref(doc);
    ASSERT(j != NULL);
    ASSERT_EQ(j->state, JS_PENDING);
    ASSERT_EQ(j->restart_count, 3);
    ASSERT(j->tasks == NULL);
    ASSERT_EQ(ctl.ndirty, 1);
    ASSERT(ctl.dirty[0] == j);
    ASSERT(j->dirty);
    al__job_free(j);
    ctl_fini(&ctl);

    /* Malformed documents load as nothing. */
    static const char *const bad[] = {
        "{\"name\": \"x\", \"user\": \"u\", \"queue\": \"q\", "
        "\"state\": \"pending\"}", /* no id */
        "{\"id\": 1, \"user\": \"u\", \"queue\": \"q\", "
        "\"state\": \"pending\"}", /* no name */
        "{\"id\": 1, \"name\": \"x\", \"user\": \"u\", \"queue\": \"q\", "
        "\"state\": \"sleeping\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        doc = parse(bad[i]);
        ASSERT(al__job_from_json(&ctl, doc) == NULL);
        json_decref(doc);
    }
}

/* ------------------------------------------------------------------ */
/* Queue documents                                                    */

static void
same_quota(const al_quota_t *a, const al_quota_t *b)
{
    for (int r = 0; r < AL_NRES; r++) {
        ASSERT_EQ(a[r].deserved, b[r].deserved);
        ASSERT_EQ(a[r].limit, b[r].limit);
        ASSERT_DBL_NEAR(a[r].weight, b[r].weight, 0);
    }
}

static void
queue_doc(void)
{
    json_t *b = parse("{\"name\": \"team\", \"parent\": \"root\", "
                      "\"priority\": 3, \"quota\": {\"gpu\": {\"deserved\": "
                      "2, \"limit\": 4.5}, \"mem\": {\"deserved\": "
                      "1073741824, \"weight\": 2}}}");
    al__queue_t q;
    char *cause = NULL;
    ASSERT_EQ(al__queue_from_json(b, &q, &cause), 0);
    json_decref(b);
    ASSERT(cause == NULL);
    ASSERT_STR_EQ(q.name, "team");
    ASSERT_STR_EQ(q.parent, "root");
    ASSERT_EQ(q.priority, 3);
    ASSERT_EQ(q.quota[AL_RES_GPU].deserved, 2000);
    ASSERT_EQ(q.quota[AL_RES_GPU].limit, 4500);
    ASSERT_DBL_NEAR(q.quota[AL_RES_GPU].weight, 1.0, 0);
    ASSERT_EQ(q.quota[AL_RES_CPU].deserved, 0);
    ASSERT_EQ(q.quota[AL_RES_CPU].limit, AL_UNLIMITED);
    ASSERT_EQ(q.quota[AL_RES_MEM].deserved, 1073741824);
    ASSERT_EQ(q.quota[AL_RES_MEM].limit, AL_UNLIMITED);
    ASSERT_DBL_NEAR(q.quota[AL_RES_MEM].weight, 2.0, 0);
    const char *stored =
        "{\"name\":\"team\",\"parent\":\"root\",\"priority\":3,\"quota\":{"
        "\"gpu\":{\"deserved\":2.0,\"limit\":4.5,\"weight\":1.0},"
        "\"cpu\":{\"deserved\":0.0,\"limit\":-1,\"weight\":1.0},"
        "\"mem\":{\"deserved\":1073741824,\"limit\":-1,\"weight\":2.0}},"
        "\"max_build_gpus\":-1,\"idle_timeout\":0,\"idle_util\":5}";
    json_t *doc = al__queue_json(&q, false);
    char *text = al_json_dump(doc);
    ASSERT_STR_EQ(text, stored);
    /* The stored form reads back into the same queue. */
    al__queue_t back;
    ASSERT_EQ(al__queue_from_json(doc, &back, &cause), 0);
    ASSERT_STR_EQ(back.name, q.name);
    ASSERT_STR_EQ(back.parent, q.parent);
    ASSERT_EQ(back.priority, q.priority);
    same_quota(back.quota, q.quota);
    /* So does the API's form, with the share it adds (read-only). */
    q.share.allocated[AL_RES_GPU] = 1000;
    json_t *shown = al__queue_json(&q, true);
    ASSERT_DBL_NEAR(json_real_value(json_object_get(
                        json_object_get(shown, "allocated"), "gpu")),
                    1.0, 0);
    al__queue_t again;
    ASSERT_EQ(al__queue_from_json(shown, &again, &cause), 0);
    same_quota(again.quota, q.quota);
    al__queue_fini(&again);
    json_decref(shown);
    al__queue_fini(&back);
    free(text);
    json_decref(doc);
    al__queue_fini(&q);
}

/* A queue's build cap and idle settings: read, shown, read back. */
static void
queue_doc_build_idle(void)
{
    json_t *b = parse("{\"name\": \"dev\", \"max_build_gpus\": 2.5, "
                      "\"idle_timeout\": 1800, \"idle_util\": 10}");
    al__queue_t q, back;
    char *cause = NULL;
    ASSERT_EQ(al__queue_from_json(b, &q, &cause), 0);
    json_decref(b);
    ASSERT(q.build_capped);
    ASSERT_EQ(q.build_cap, 2500);
    ASSERT_EQ(q.idle_timeout, 1800);
    ASSERT_EQ(q.idle_util, 10);
    json_t *doc = al__queue_json(&q, true);
    ASSERT_DBL_NEAR(json_real_value(json_object_get(doc, "max_build_gpus")),
                    2.5, 0);
    ASSERT_EQ(al__queue_from_json(doc, &back, &cause), 0);
    ASSERT(back.build_capped);
    ASSERT_EQ(back.build_cap, 2500);
    ASSERT_EQ(back.idle_timeout, 1800);
    ASSERT_EQ(back.idle_util, 10);
    json_decref(doc);
    al__queue_fini(&back);
    al__queue_fini(&q);
    /* A cap of 0 is a cap (no build job runs); -1 or null none. */
    b = parse("{\"name\": \"dev\", \"max_build_gpus\": 0}");
    ASSERT_EQ(al__queue_from_json(b, &q, &cause), 0);
    json_decref(b);
    ASSERT(q.build_capped);
    ASSERT_EQ(q.build_cap, 0);
    al__queue_fini(&q);
    b = parse("{\"name\": \"dev\", \"max_build_gpus\": null}");
    ASSERT_EQ(al__queue_from_json(b, &q, &cause), 0);
    json_decref(b);
    ASSERT(!q.build_capped);
    ASSERT_EQ(q.idle_timeout, 0);
    ASSERT_EQ(q.idle_util, AL_IDLE_UTIL_DEFAULT);
    al__queue_fini(&q);
}

static void
queue_doc_refused(void)
{
    static const struct {
        const char *body, *cause;
    } cases[] = {
        { "{\"name\": \"q\", \"quoat\": {}}",
          "unknown field 'quoat' (a queue has name, parent, priority, quota, "
          "max_build_gpus, idle_timeout, idle_util, members, min_runtime and "
          "model_quotas)" },
        { "{\"name\": \"q\", \"max_build_gpus\": -2}",
          "max_build_gpus must be a number of GPUs >= 0, or -1 for no cap" },
        { "{\"name\": \"q\", \"max_build_gpus\": \"2\"}",
          "max_build_gpus must be a number of GPUs >= 0, or -1 for no cap" },
        { "{\"name\": \"q\", \"max_build_gpus\": 2e15}",
          "max_build_gpus must be a number of GPUs >= 0, or -1 for no cap" },
        { "{\"name\": \"q\", \"idle_timeout\": 1.5}",
          "idle_timeout must be whole seconds, 0 (off) to 604800" },
        { "{\"name\": \"q\", \"idle_timeout\": 604801}",
          "idle_timeout must be whole seconds, 0 (off) to 604800" },
        { "{\"name\": \"q\", \"idle_util\": 101}",
          "idle_util must be a whole percentage, 0 to 100" },
        { "{\"name\": \"q\", \"idle_util\": true}",
          "idle_util must be a whole percentage, 0 to 100" },
        { "{\"name\": \"a b\"}",
          "queue name must be 1-64 letters, digits, '-', '_' or '.'" },
        { "{\"parent\": \"x\"}",
          "queue name must be 1-64 letters, digits, '-', '_' or '.'" },
        { "{\"name\": \"q\", \"priority\": 1.5}",
          "parent must be a queue name and priority an integer" },
        { "{\"name\": \"q\", \"quota\": {\"gpus\": {}}}",
          "quota must be an object of gpu, cpu and mem (not 'gpus')" },
        { "{\"name\": \"q\", \"quota\": []}",
          "quota must be an object of gpu, cpu and mem" },
        { "{\"name\": \"q\", \"quota\": {\"cpu\": {\"max\": 1}}}",
          "quota.cpu must be an object of deserved, limit and weight (not "
          "'max')" },
        { "{\"name\": \"q\", \"quota\": {\"gpu\": {\"deserved\": -1}}}",
          "quota.gpu: deserved and weight must be >= 0, limit a number >= 0 "
          "(-1: none)" },
        { "{\"name\": \"q\", \"quota\": {\"gpu\": {\"limit\": \"4\"}}}",
          "quota.gpu: deserved and weight must be >= 0, limit a number >= 0 "
          "(-1: none)" },
        { "{\"name\": \"q\", \"quota\": {\"gpu\": {\"limit\": -2}}}",
          "quota.gpu: deserved and weight must be >= 0, limit a number >= 0 "
          "(-1: none)" },
        { "{\"name\": \"q\", \"quota\": {\"gpu\": {\"deserved\": 2e12}}}",
          "quota.gpu: deserved and limit must be at most 1125899906843" },
        { "{\"name\": \"q\", \"quota\": {\"mem\": {\"limit\": 2e15}}}",
          "quota.mem: deserved and limit must be at most 1125899906842624" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *b = parse(cases[i].body);
        al__queue_t q, before;
        memset(&q, 0x5a, sizeof q);
        memcpy(&before, &q, sizeof q); /* bytes, padding included */
        char *cause = NULL;
        ASSERT_EQ(al__queue_from_json(b, &q, &cause), AL_EINVAL);
        json_decref(b);
        ASSERT_STR_EQ(cause, cases[i].cause);
        ASSERT(untouched(&q, &before, sizeof q));
        free(cause);
    }
}

/* ------------------------------------------------------------------ */
/* Node documents                                                     */

static void
node_doc(void)
{
    json_t *b = parse(
        "{\"name\": \"gpu-01\", \"addr\": \"10.0.0.5\", \"cpu_milli\": 64000, "
        "\"mem_bytes\": 1099511627776, \"gpus\": [{\"uuid\": \"GPU-a\", "
        "\"model\": \"H100\", \"mem_bytes\": 85899345920, \"numa\": 0, "
        "\"nvlink\": 1}, {\"uuid\": \"GPU-b\", \"mem_bytes\": 100, "
        "\"numa\": 1}]}");
    al__node_t n;
    char *cause = NULL;
    ASSERT_EQ(al__node_from_json(b, &n, &cause), 0);
    json_decref(b);
    ASSERT_STR_EQ(n.name, "gpu-01");
    ASSERT_STR_EQ(n.addr, "10.0.0.5");
    ASSERT(!n.emulated);
    ASSERT_EQ(n.state, NS_READY);
    ASSERT_EQ(n.cpu_milli, 64000);
    ASSERT_EQ(n.ngpus, 2);
    ASSERT_STR_EQ(n.gpus[1].model, "unknown");
    ASSERT_EQ(n.gpus[1].nvlink, -1);
    ASSERT_EQ(n.gpus[1].sample.util, -1);
    ASSERT_EQ(n.gpus[1].sample.at_ms, 0);
    ASSERT_EQ(n.devices[0].mem_bytes, 85899345920);
    ASSERT_EQ(n.devices[1].numa, 1);
    ASSERT_EQ(n.devices[0].nvlink, 1);
    const char *stored =
        "{\"name\":\"gpu-01\",\"addr\":\"10.0.0.5\",\"emulated\":false,"
        "\"drained\":false,\"state\":\"ready\",\"cpu_milli\":64000,"
        "\"mem_bytes\":1099511627776,\"gpus\":[{\"index\":0,\"uuid\":"
        "\"GPU-a\",\"model\":\"H100\",\"mem_bytes\":85899345920,\"numa\":0,"
        "\"nvlink\":1},{\"index\":1,\"uuid\":\"GPU-b\",\"model\":\"unknown\","
        "\"mem_bytes\":100,\"numa\":1,\"nvlink\":-1}]}";
    json_t *doc = al__node_json(NULL, &n);
    char *text = al_json_dump(doc);
    ASSERT_STR_EQ(text, stored);
    /* Read back (as the store does), the same node writes the same. */
    al__node_t back;
    ASSERT_EQ(al__node_from_json(doc, &back, &cause), 0);
    ASSERT_JSON(al__node_json(NULL, &back), stored);
    al__node_fini(&back);
    free(text);
    /* A pool and labels: written sorted, read back the same. */
    json_t *lb = parse("{\"name\": \"n\", \"pool\": \"train\", "
                       "\"labels\": {\"rack\": \"r1\", \"ib\": \"yes\"}}");
    al__node_t ln;
    ASSERT_EQ(al__node_from_json(lb, &ln, &cause), 0);
    json_decref(lb);
    ASSERT_STR_EQ(ln.pool, "train");
    ASSERT_STR_EQ(ln.labels, "ib=yes,rack=r1");
    json_t *ld = al__node_json(NULL, &ln);
    ASSERT_JSON(json_incref(json_object_get(ld, "labels")),
                "{\"ib\":\"yes\",\"rack\":\"r1\"}");
    json_decref(ld);
    al__node_fini(&ln);
    json_decref(doc);

    /* A drained node that is up shows as draining, and stays drained. */
    n.drained = true;
    doc = al__node_json(NULL, &n);
    ASSERT_STR_EQ(al_json_str(doc, "state", NULL), "draining");
    ASSERT_EQ(al__node_from_json(doc, &back, &cause), 0);
    ASSERT(back.drained);
    ASSERT_EQ(back.state, NS_READY);
    al__node_fini(&back);
    json_decref(doc);
    n.state = NS_DOWN;
    doc = al__node_json(NULL, &n);
    ASSERT_STR_EQ(al_json_str(doc, "state", NULL), "down");
    json_decref(doc);
    al__node_fini(&n);
}

static void
node_doc_refused(void)
{
    char many[4096];
    size_t off =
        (size_t)snprintf(many, sizeof many, "{\"name\": \"n\", \"gpus\": [{}");
    for (int i = 1; i <= AL_MAX_DEVICES; i++)
        off += (size_t)snprintf(many + off, sizeof many - off, ", {}");
    snprintf(many + off, sizeof many - off, "]}");
    const char *bodies[] = { "{\"name\": \"a b\"}",
                             "{\"addr\": \"x\"}",
                             "{\"name\": \"n\", \"gpus\": {}}",
                             many,
                             "{\"name\": \"n\", \"pool\": \"a b\"}",
                             "{\"name\": \"n\", \"labels\": {\"r\": 1}}",
                             "{\"name\": \"n\", \"labels\": [\"r=1\"]}" };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        json_t *b = parse(bodies[i]);
        al__node_t n, before;
        memset(&n, 0x5a, sizeof n);
        memcpy(&before, &n, sizeof n); /* bytes, padding included */
        char *cause = NULL;
        ASSERT_EQ(al__node_from_json(b, &n, &cause), AL_EINVAL);
        json_decref(b);
        /* The last three: a bad pool or labels, which say so. */
        if (i + 3 < sizeof bodies / sizeof bodies[0])
            ASSERT_STR_EQ(cause,
                          "a node needs a name (letters, digits, '-', '_', "
                          "'.') and at most 64 GPUs");
        else
            ASSERT(strstr(cause, "pool") != NULL ||
                   strstr(cause, "label") != NULL);
        ASSERT(untouched(&n, &before, sizeof n));
        free(cause);
    }
}

/* ------------------------------------------------------------------ */
/* The agent protocol                                                 */

static void
sync_body(void)
{
    json_t *b = parse(
        "{\"node\": \"n1\", \"wait_ms\": 5000, \"tasks\": ["
        "{\"job\": 4, \"task\": 0, \"restart\": 1, \"state\": \"exited\", "
        "\"exit_code\": 3, \"log_off\": 10, \"log\": \"aGk=\"}, "
        "{\"job\": -2, \"task\": \"x\", \"restart\": 99999999999, "
        "\"state\": \"running\", \"exit_code\": 99999999999, "
        "\"signal\": -99999999999}, {}], "
        "\"gpus\": [{\"index\": 1, \"util\": 50, \"mem_util\": 101, "
        "\"temp_c\": 60, \"mem_used\": 1000, \"power_mw\": -5}, "
        "{\"index\": 64}]}");
    al__sync_t s;
    char *cause = NULL;
    ASSERT_EQ(al__sync_parse(b, &s, &cause), 0);
    ASSERT(cause == NULL);
    ASSERT_STR_EQ(s.node, "n1");
    ASSERT_EQ(s.wait_ms, 5000);
    ASSERT_EQ(s.ntasks, 3);
    ASSERT_EQ(s.tasks[0].job, 4);
    ASSERT_EQ(s.tasks[0].task, 0);
    ASSERT_EQ(s.tasks[0].restart, 1);
    ASSERT(s.tasks[0].exited);
    ASSERT_EQ(s.tasks[0].exit_code, 3);
    ASSERT_EQ(s.tasks[0].signal, 0);
    ASSERT_EQ(s.tasks[0].log_off, 10);
    ASSERT_STR_EQ(s.tasks[0].log, "aGk=");
    /* Malformed members keep the defaults; codes are clamped, not cut. */
    ASSERT_EQ(s.tasks[1].job, 0);
    ASSERT_EQ(s.tasks[1].task, -1);
    ASSERT_EQ(s.tasks[1].restart, -1);
    ASSERT(!s.tasks[1].exited);
    ASSERT_EQ(s.tasks[1].exit_code, INT_MAX);
    ASSERT_EQ(s.tasks[1].signal, INT_MIN);
    ASSERT_EQ(s.tasks[2].job, 0);
    ASSERT_EQ(s.tasks[2].task, -1);
    ASSERT(s.tasks[2].log == NULL);
    ASSERT_EQ(s.nsamples, 2);
    ASSERT_EQ(s.index[0], 1);
    ASSERT_EQ(s.samples[0].util, 50);
    ASSERT_EQ(s.samples[0].mem_util, -1);
    ASSERT_EQ(s.samples[0].temp_c, 60);
    ASSERT_EQ(s.samples[0].mem_used, 1000);
    ASSERT_EQ(s.samples[0].power_mw, -1);
    ASSERT_EQ(s.samples[0].at_ms, 0);
    ASSERT_EQ(s.index[1], -1);
    al__sync_fini(&s);
    ASSERT(s.tasks == NULL);
    ASSERT_EQ(s.ntasks, 0);
    json_decref(b);

    /* No node: refused, *s left alone. */
    b = parse("{\"tasks\": []}");
    memset(&s, 0x5a, sizeof s);
    al__sync_t before;
    memcpy(&before, &s, sizeof s); /* bytes, padding included */
    ASSERT_EQ(al__sync_parse(b, &s, &cause), AL_EINVAL);
    ASSERT_STR_EQ(cause, "node not registered; register first");
    ASSERT(untouched(&s, &before, sizeof s));
    free(cause);
    ASSERT_EQ(al__sync_parse(b, &s, NULL), AL_EINVAL);
    json_decref(b);
}

static void
desired_task_encoding(void)
{
    al__desired_task_t d = {
        .job = 12,
        .task = 1,
        .restart = 2,
        .devices = 6,
        .gpu_milli = 0,
        .cpu_milli = 2000,
        .mem_bytes = 4096,
        .rank = 1,
        .world_size = 2,
        .local_rank = 0,
        .master_addr = "10.0.0.5",
        .master_port = 29512,
        .log_off = 77,
        .user = "alice",
    };
    const char *spec_text = "{\"command\":[\"x\"],\"env\":{\"A\":\"1\"}}";
    json_t *spec = parse(spec_text);
    ASSERT_JSON(al__desired_task_json(&d, false, spec_text),
                "{\"job\":12,\"task\":1,\"restart\":2,\"gpus\":[1,2],"
                "\"gpu_milli\":0,\"cpu_milli\":2000,\"mem_bytes\":4096,"
                "\"rank\":1,\"world_size\":2,\"local_rank\":0,"
                "\"master_addr\":\"10.0.0.5\",\"master_port\":29512,"
                "\"log_off\":77,\"user\":\"alice\",\"command\":[\"x\"],"
                "\"env\":{\"A\":\"1\"}}");
    /* A task the agent has: named only, its fraction when it has one. */
    ASSERT_JSON(al__desired_task_json(&d, true, spec_text),
                "{\"job\":12,\"task\":1,\"restart\":2}");
    d.gpu_milli = 250;
    ASSERT_JSON(al__desired_task_json(&d, true, NULL),
                "{\"job\":12,\"task\":1,\"restart\":2,\"gpu_milli\":250}");

    /* The same as the members written out one by one. */
    d.job = (uint64_t)1 << 40;
    d.devices = (uint64_t)1 << 63;
    d.cpu_milli = INT64_C(1) << 40;
    json_t *want = json_pack(
        "{s:I, s:i, s:i, s:[i], s:i, s:I, s:I, s:i, s:i, s:i, s:s, s:i, s:I,"
        " s:s}",
        "job", (json_int_t)d.job, "task", d.task, "restart", d.restart, "gpus",
        63, "gpu_milli", d.gpu_milli, "cpu_milli", (json_int_t)d.cpu_milli,
        "mem_bytes", (json_int_t)d.mem_bytes, "rank", d.rank, "world_size",
        d.world_size, "local_rank", d.local_rank, "master_addr", d.master_addr,
        "master_port", d.master_port, "log_off", (json_int_t)d.log_off, "user",
        d.user);
    json_object_update(want, spec);
    char *w = al_json_dump(want);
    ASSERT_JSON(al__desired_task_json(&d, false, spec_text), w);
    free(w);
    json_decref(want);
    json_decref(spec);
}

/* Answer o without its tasks' job tokens (random), each checked to be
 * "alj_<job>_" and 32 hex digits; *n counts them. */
static json_t *
take_tokens(json_t *o, int *n)
{
    json_t *t;
    size_t i;
    json_array_foreach(json_object_get(o, "tasks"), i, t)
    {
        const char *tok = al_json_str(t, "job_token", NULL);
        if (tok == NULL)
            continue;
        char want[32];
        snprintf(want, sizeof want, "alj_%lld_",
                 (long long)al_json_int(t, "job", 0));
        ASSERT(strncmp(tok, want, strlen(want)) == 0);
        ASSERT_EQ(strlen(tok), strlen(want) + 32);
        json_object_del(t, "job_token");
        (*n)++;
    }
    return o;
}

static void
desired_set(void)
{
    /* Two nodes, a job of two tasks across them, a second job on one:
     * each node's answer names its tasks, in full where its agent lacks
     * them. */
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    char dir[] = "/nonexistent/allot-unit"; /* no logs: sizes are 0 */
    ctl.state_dir = dir;
    ctl.opts.grace_ms = 10000;
    add_node(&ctl, "{\"name\": \"a\", \"addr\": \"10.0.0.1\"}");
    add_node(&ctl, "{\"name\": \"b\", \"addr\": \"10.0.0.2\"}");
    al__job_t *j = NULL;
    ASSERT_EQ(job_parse("{\"command\": [\"true\"], \"tasks\": 2, \"gpus\": 1}",
                        "u", false, &j, NULL),
              0);
    j->id = 1;
    j->state = JS_RUNNING;
    j->tasks = calloc(2, sizeof *j->tasks);
    j->tasks[0] = (al__task_t){ .node = 0, .devices = 1, .log_size = -1 };
    j->tasks[1] = (al__task_t){ .node = 1, .devices = 2, .log_size = -1 };
    al__ctl_put_job(&ctl, j);
    al__job_t *k = NULL;
    ASSERT_EQ(job_parse("{\"command\": [\"sleep\"], \"gpu_fraction\": 0.5}",
                        "v", false, &k, NULL),
              0);
    k->id = 2;
    k->state = JS_RUNNING;
    k->restart_count = 1;
    k->master_port = 29999;
    k->tasks = calloc(1, sizeof *k->tasks);
    k->tasks[0] = (al__task_t){ .node = 1, .gpu_milli = 500, .log_size = 5 };
    al__ctl_put_job(&ctl, k);
    al__ctl_index_running(&ctl);

    int lacking = -1, ntok = 0;
    ASSERT_JSON(take_tokens(al__proto_desired(&ctl, 0, &lacking), &ntok),
                "{\"tasks\":[{\"job\":1,\"task\":0,\"restart\":0,"
                "\"gpus\":[0],\"gpu_milli\":0,\"cpu_milli\":100,"
                "\"mem_bytes\":0,\"rank\":0,\"world_size\":2,"
                "\"local_rank\":0,\"master_addr\":\"10.0.0.1\","
                "\"master_port\":29501,\"log_off\":0,\"user\":\"u\","
                "\"command\":[\"true\"]}],\"grace_ms\":10000}");
    ASSERT_EQ(lacking, 1);
    ASSERT_EQ(ntok, 1); /* the job's own token, for the task it lacks */
    /* The log's size, looked up once, is kept in the task. */
    ASSERT_EQ(j->tasks[0].log_size, 0);

    al__node_t *b = &ctl.nodes[1];
    b->known = calloc(1, sizeof *b->known);
    b->known[0] = (al__task_key_t){ .job = 1, .task = 1, .restart = 0 };
    b->nknown = b->known_cap = 1;
    ntok = 0;
    ASSERT_JSON(take_tokens(al__proto_desired(&ctl, 1, &lacking), &ntok),
                "{\"tasks\":[{\"job\":1,\"task\":1,\"restart\":0},"
                "{\"job\":2,\"task\":0,\"restart\":1,\"gpus\":[],"
                "\"gpu_milli\":500,\"cpu_milli\":100,\"mem_bytes\":0,"
                "\"rank\":0,\"world_size\":1,\"local_rank\":0,"
                "\"master_addr\":\"10.0.0.2\",\"master_port\":29999,"
                "\"log_off\":5,\"user\":\"v\",\"command\":[\"sleep\"]}],"
                "\"grace_ms\":10000}");
    ASSERT_EQ(lacking, 1);
    ASSERT_EQ(ntok, 1); /* none in the brief form */

    /* A done task is not asked for; an ended job leaves the node's runs. */
    j->tasks[1].done = true;
    k->state = JS_COMPLETED;
    ASSERT_JSON(al__proto_desired(&ctl, 1, NULL),
                "{\"tasks\":[],\"grace_ms\":10000}");
    ASSERT_EQ(b->nruns, 1);
    ctl_fini(&ctl);
}

/* ------------------------------------------------------------------ */
/* Metrics (metrics.c)                                                */

/* Whether the exposition `text` holds `line` as a whole line. */
static bool
has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

#define ASSERT_LINE(text, line)                                                \
    do {                                                                       \
        if (!has_line((text), (line)))                                         \
            fprintf(stderr, "    no line: %s\n", (line));                      \
        ASSERT(has_line((text), (line)));                                      \
    } while (0)

/* A running job of queue q on node 0's GPUs `devices` (or a fraction). */
static al__job_t *
metrics_job(al_ctl_t *ctl, uint64_t id, const char *body, al__jstate_t st,
            uint64_t devices, int32_t milli)
{
    al__job_t *j = NULL;
    ASSERT_EQ(job_parse(body, "u", false, &j, NULL), 0);
    j->id = id;
    j->state = st;
    if (st == JS_RUNNING) {
        j->tasks = calloc(1, sizeof *j->tasks);
        j->tasks[0] = (al__task_t){
            .node = 0, .devices = devices, .gpu_milli = milli, .log_size = -1
        };
    }
    al__ctl_put_job(ctl, j);
    return j;
}

static void
metrics_render(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    add_node(&ctl, "{\"name\": \"a\", \"addr\": \"10.0.0.1\", \"gpus\": ["
                   "{\"uuid\": \"G0\", \"model\": \"H100\"}, "
                   "{\"uuid\": \"G1\", \"model\": \"H100\"}, "
                   "{\"uuid\": \"G2\", \"model\": \"A\\\"100\"}]}");
    add_node(&ctl, "{\"name\": \"b\", \"addr\": \"10.0.0.2\", \"gpus\": ["
                   "{\"uuid\": \"G3\", \"model\": \"H100\"}]}");
    ctl.nodes[0].last_seen = 1000;
    ctl.nodes[1].last_seen = 500;
    ctl.nodes[1].state = NS_DOWN;
    ctl.nodes[0].gpus[1].sample = (al__gpu_sample_t){ .util = 75,
                                                      .mem_util = 10,
                                                      .temp_c = 61,
                                                      .mem_used = 1048576,
                                                      .power_mw = 250500,
                                                      .at_ms = 1 };
    al__queue_t qs[2];
    memset(qs, 0, sizeof qs);
    char team[] = "team", idle[] = "idle";
    qs[0].name = team;
    qs[0].quota[AL_RES_GPU].deserved = 1000;
    qs[0].share.allocated[AL_RES_GPU] = 2500;
    qs[0].share.allocated[AL_RES_CPU] = 1500;
    qs[0].share.allocated[AL_RES_MEM] = 4096;
    qs[0].share.fair[AL_RES_GPU] = 1500;
    qs[1].name = idle;
    qs[1].quota[AL_RES_GPU].deserved = 3000;
    ctl.queues = qs;
    ctl.nqueues = 2;
    metrics_job(&ctl, 1,
                "{\"command\": [\"x\"], \"queue\": \"team\", "
                "\"gpus\": 2}",
                JS_RUNNING, 3, 0);
    metrics_job(&ctl, 2,
                "{\"command\": [\"x\"], \"queue\": \"team\", "
                "\"gpu_fraction\": 0.5, \"class\": \"build\"}",
                JS_RUNNING, 4, 500);
    al__job_t *p = metrics_job(&ctl, 3,
                               "{\"command\": [\"x\"], "
                               "\"queue\": \"team\"}",
                               JS_PENDING, 0, 0);
    p->why = (al_reason_t){ .code = AL_WHY_CAPACITY, .queue = -1, .job = -1 };
    p->why_valid = true;
    metrics_job(&ctl, 4, "{\"command\": [\"x\"], \"queue\": \"team\"}",
                JS_PENDING, 0, 0);
    metrics_job(&ctl, 5,
                "{\"command\": [\"x\"], \"queue\": \"gone\", "
                "\"hold\": true}",
                JS_HELD, 0, 0);
    metrics_job(&ctl, 6, "{\"command\": [\"x\"], \"queue\": \"team\"}",
                JS_COMPLETED, 0, 0);
    al__ctl_index_running(&ctl);
    /* jobcounts.c: p's reason came after it was put in the table; the
     * recount sees the kept counts lag until p is synced or all are
     * counted again. */
    char *cause = NULL;
    ASSERT_EQ(al__jobcounts_check(&ctl, &cause), AL_EINVAL);
    ASSERT(cause != NULL && strstr(cause, "kept") != NULL);
    free(cause);
    al__jobcounts_sync(&ctl, p);
    ASSERT_EQ(al__jobcounts_check(&ctl, NULL), 0);
    p->why_valid = false;
    ASSERT_EQ(al__jobcounts_check(&ctl, NULL), AL_EINVAL);
    al__jobcounts_rebuild(&ctl);
    ASSERT_EQ(al__jobcounts_check(&ctl, NULL), 0);
    p->why_valid = true;
    al__jobcounts_sync(&ctl, p);
    ASSERT_EQ(al__jobcounts_check(&ctl, NULL), 0);
    ctl.counters.evicted[AL_EVICT_RECLAIM][1] = 3;
    ctl.counters.ended[JS_FAILED] = 2;
    ctl.cycles = 7;
    al__hist_observe(&ctl.counters.cycle, 0.0003);
    al__hist_observe(&ctl.counters.cycle, 0.002);
    al__hist_observe(&ctl.counters.cycle, 30);

    al_buf_t b;
    al_buf_init(&b);
    al__metrics_render(&ctl, 3500, &b);
    const char *t = al_buf_cstr(&b);
    static const char *const want[] = {
        "# HELP allot_jobs Jobs pending, held or running, by queue, state "
        "and class.",
        "# TYPE allot_jobs gauge",
        "allot_jobs{queue=\"team\",state=\"running\",class=\"train\"} 1",
        "allot_jobs{queue=\"team\",state=\"running\",class=\"build\"} 1",
        "allot_jobs{queue=\"team\",state=\"pending\",class=\"train\"} 2",
        "allot_jobs{queue=\"idle\",state=\"pending\",class=\"train\"} 0",
        "allot_jobs{queue=\"\",state=\"held\",class=\"train\"} 1",
        "allot_pending_jobs{reason=\"capacity\"} 1",
        "allot_pending_jobs{reason=\"unknown\"} 1",
        "allot_pending_jobs{reason=\"held\"} 1",
        "allot_jobs_ended_total{state=\"failed\"} 2",
        "# TYPE allot_gpus gauge",
        "allot_gpus{model=\"H100\"} 2",
        "allot_gpus{model=\"A\\\"100\"} 1",
        "allot_gpus_allocated{model=\"H100\"} 2",
        "allot_gpus_allocated{model=\"A\\\"100\"} 0.5",
        "allot_queue_deserved_gpus{queue=\"team\"} 1",
        "allot_queue_deserved_gpus{queue=\"idle\"} 3",
        "allot_queue_fair_share_gpus{queue=\"team\"} 1.5",
        "allot_queue_allocated_gpus{queue=\"team\"} 2.5",
        "allot_queue_allocated_cpus{queue=\"team\"} 1.5",
        "allot_queue_allocated_memory_bytes{queue=\"team\"} 4096",
        "allot_queue_borrowed_gpus{queue=\"team\"} 1.5",
        "allot_queue_borrowed_gpus{queue=\"idle\"} 0",
        /* team holds 2 H100s and half an A"100, 1.5 over its quota of 1:
         * borrowed in proportion, 1.2 and 0.3. */
        "allot_queue_model_borrowed_gpus{queue=\"team\",model=\"H100\"} 1.2",
        "allot_queue_model_borrowed_gpus{queue=\"team\",model=\"A\\\"100\"} "
        "0.3",
        "allot_queue_model_borrowed_gpus{queue=\"idle\",model=\"H100\"} 0",
        "allot_nodes{state=\"ready\"} 1",
        "allot_nodes{state=\"down\"} 1",
        "allot_node_sync_age_seconds{node=\"a\"} 2.5",
        "allot_node_sync_age_seconds{node=\"b\"} 3",
        "allot_gpu_utilization_ratio{node=\"a\",gpu=\"1\",model=\"H100\"} "
        "0.75",
        "allot_gpu_memory_used_bytes{node=\"a\",gpu=\"1\",model=\"H100\"} "
        "1048576",
        "allot_gpu_power_watts{node=\"a\",gpu=\"1\",model=\"H100\"} 250.5",
        "allot_gpu_temperature_celsius{node=\"a\",gpu=\"1\",model=\"H100\"} "
        "61",
        "allot_evictions_total{cause=\"reclaim\",outcome=\"requeued\"} 3",
        "allot_evictions_total{cause=\"preempt\",outcome=\"failed\"} 0",
        "allot_scheduling_cycles_total 7",
        "# TYPE allot_scheduling_cycle_duration_seconds histogram",
        "allot_scheduling_cycle_duration_seconds_bucket{le=\"0.0005\"} 1",
        "allot_scheduling_cycle_duration_seconds_bucket{le=\"0.001\"} 1",
        "allot_scheduling_cycle_duration_seconds_bucket{le=\"0.0025\"} 2",
        "allot_scheduling_cycle_duration_seconds_bucket{le=\"10\"} 2",
        "allot_scheduling_cycle_duration_seconds_bucket{le=\"+Inf\"} 3",
        "allot_scheduling_cycle_duration_seconds_sum 30.0023",
        "allot_scheduling_cycle_duration_seconds_count 3",
        "allot_store_commit_duration_seconds_count 0",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ASSERT_LINE(t, want[i]);
    /* No telemetry for a GPU that sent none, nor a queue gone with no
     * jobs; no ended job among the gauges. */
    ASSERT(strstr(t, "gpu=\"0\"") == NULL);
    ASSERT(!has_line(t, "allot_jobs{queue=\"\",state=\"pending\","
                        "class=\"train\"} 0"));
    ASSERT(strstr(t, "state=\"completed\",class") == NULL);
    /* Every sample's family has its HELP and TYPE before it, and every
     * line ends with a newline. */
    ASSERT(t[strlen(t) - 1] == '\n');
    char fam[128] = "";
    for (const char *line = t; *line != '\0';) {
        const char *end = strchr(line, '\n');
        ASSERT(end != NULL);
        if (strncmp(line, "# TYPE ", 7) == 0) {
            size_t n = strcspn(line + 7, " ");
            ASSERT(n < sizeof fam);
            memcpy(fam, line + 7, n);
            fam[n] = '\0';
        } else if (line[0] != '#') {
            ASSERT(fam[0] != '\0');
            ASSERT(strncmp(line, fam, strlen(fam)) == 0);
        }
        line = end + 1;
    }
    al_buf_fini(&b);
    /* A deserved quota of A"100s of its own (none): all it holds of them
     * is borrowed; the H100s take the queue's whole 1.5 over its quota. */
    char a100[] = "A\"100";
    al_model_quota_t mq = { .model = a100, .deserved = 0, .limit = -1 };
    qs[0].mquotas = &mq;
    qs[0].nmquotas = 1;
    al_buf_init(&b);
    al__metrics_render(&ctl, 3500, &b);
    t = al_buf_cstr(&b);
    ASSERT_LINE(t, "allot_queue_model_borrowed_gpus{queue=\"team\","
                   "model=\"H100\"} 1.5");
    ASSERT_LINE(t, "allot_queue_model_borrowed_gpus{queue=\"team\","
                   "model=\"A\\\"100\"} 0.5");
    al_buf_fini(&b);
    qs[0].mquotas = NULL;
    qs[0].nmquotas = 0;
    ctl.queues = NULL;
    ctl.nqueues = 0;
    ctl_fini(&ctl);
}

/* The wastage: idle GPUs count as wasted while a pending job that waits
 * for something else than room (here a quota) would fit on them, and not
 * while the only pending job is too big for them or held; each look's
 * state holds until the next one. */
static void
waste_ratio(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    add_node(&ctl, "{\"name\": \"a\", \"addr\": \"x\", \"cpu_milli\": 8000, "
                   "\"mem_bytes\": 1073741824, \"gpus\": ["
                   "{\"uuid\": \"G0\", \"model\": \"H100\"}, "
                   "{\"uuid\": \"G1\", \"model\": \"H100\"}, "
                   "{\"uuid\": \"G2\", \"model\": \"H100\"}, "
                   "{\"uuid\": \"G3\", \"model\": \"H100\"}]}");
    add_node(&ctl, "{\"name\": \"b\", \"addr\": \"y\", \"cpu_milli\": 8000, "
                   "\"mem_bytes\": 1073741824, \"gpus\": ["
                   "{\"uuid\": \"G4\", \"model\": \"A100\"}]}");
    ctl.nodes[1].state = NS_DOWN;
    metrics_job(&ctl, 1, "{\"command\": [\"x\"], \"gpus\": 2}", JS_RUNNING, 3,
                0);
    al__job_t *p = metrics_job(
        &ctl, 2, "{\"command\": [\"x\"], \"gpus\": 2, \"cpu_milli\": 1000}",
        JS_PENDING, 0, 0);
    p->why = (al_reason_t){ .code = AL_WHY_LIMIT, .queue = -1, .job = -1 };
    p->why_valid = true;
    al__ctl_index_running(&ctl);

    al__waste_observe(&ctl, 0, 1000);
    ASSERT_EQ(ctl.waste.nmodels, 1); /* node b is down: not counted */
    ASSERT_STR_EQ(ctl.waste.model[0], "H100");
    ASSERT_EQ(ctl.waste.total[0], 4);
    ASSERT_EQ(ctl.waste.idle[0], 2);
    ASSERT(ctl.waste.waiting[0]);
    al__waste_observe(&ctl, 0, 11000);
    ASSERT(ctl.waste.gpu_s[0] == 40.0);
    ASSERT(ctl.waste.idle_s[0] == 20.0);
    ASSERT(ctl.waste.wasted_s[0] == 20.0);
    ASSERT(al__waste_ratio(&ctl.waste, 11000) == 0.5);

    /* Three GPUs a task do not fit on two idle ones: idle, not wasted. */
    p->gpus = 3;
    al__waste_observe(&ctl, 0, 21000); /* the last state held until now */
    ASSERT(ctl.waste.wasted_s[0] == 40.0);
    ASSERT(!ctl.waste.waiting[0]);
    al__waste_observe(&ctl, 0, 31000);
    ASSERT(ctl.waste.wasted_s[0] == 40.0);
    ASSERT(ctl.waste.idle_s[0] == 60.0);
    double r = al__waste_ratio(&ctl.waste, 31000) - 40.0 / 120.0;
    ASSERT(r < 1e-12 && r > -1e-12);

    /* Two tasks of one GPU fit; not when the job asks for another model,
     * nor when it waits for its dependencies. */
    p->gpus = 1;
    p->ntasks = 2;
    al__waste_observe(&ctl, 0, 32000);
    ASSERT(ctl.waste.waiting[0]);
    free(p->gpu_model);
    p->gpu_model = strdup("A100");
    al__waste_observe(&ctl, 0, 33000);
    ASSERT(!ctl.waste.waiting[0]);
    free(p->gpu_model);
    p->gpu_model = NULL;
    p->why.code = AL_WHY_DEPS;
    al__waste_observe(&ctl, 0, 34000);
    ASSERT(!ctl.waste.waiting[0]);

    /* Rendered as counters by model and the window's ratio. */
    al_buf_t b;
    al_buf_init(&b);
    al__metrics_render(&ctl, 34000, &b);
    const char *t = al_buf_cstr(&b);
    ASSERT_LINE(t, "allot_gpus_idle{model=\"H100\"} 2");
    ASSERT_LINE(t, "allot_gpus_idle_while_waiting{model=\"H100\"} 0");
    ASSERT_LINE(t, "allot_gpu_wasted_seconds_total{model=\"H100\"} 42");
    ASSERT_LINE(t, "allot_gpu_seconds_total{model=\"H100\"} 132");
    ASSERT(strstr(t, "allot_wastage_ratio 0.318") != NULL);
    /* Past the window, nothing is known. */
    ASSERT(al__waste_ratio(&ctl.waste, 34000 + 700000) == 0);
    al_buf_fini(&b);
    ctl_fini(&ctl);
}

/* GPU models past the table's room, and one named like the bucket of the
 * rest, share one "other" series; a GPU without a model is "unknown" in
 * every family. */
static void
metrics_models(void)
{
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    al_buf_t body;
    al_buf_init(&body);
    al_buf_puts(&body, "{\"name\": \"a\", \"addr\": \"x\", \"gpus\": ["
                       "{\"uuid\": \"o\", \"model\": \"other\"}, "
                       "{\"uuid\": \"e\", \"model\": \"\"}");
    for (int i = 0; i < 40; i++)
        al_buf_printf(&body, ", {\"uuid\": \"u%d\", \"model\": \"M%d\"}", i, i);
    al_buf_puts(&body, "]}");
    add_node(&ctl, al_buf_cstr(&body));
    al_buf_fini(&body);
    ctl.nodes[0].last_seen = 1000;
    ctl.nodes[0].gpus[1].sample =
        (al__gpu_sample_t){ .util = 50, .temp_c = 40, .at_ms = 1 };

    al_buf_t b;
    al_buf_init(&b);
    al__metrics_render(&ctl, 1000, &b);
    const char *t = al_buf_cstr(&b);
    /* The model named "other" opens the bucket's slot; "unknown" and
     * M0..M28 fill the other 30 names of the 31 a table lends names;
     * M29..M39 join the bucket. */
    ASSERT_LINE(t, "allot_gpus{model=\"other\"} 12");
    ASSERT_LINE(t, "allot_gpus{model=\"unknown\"} 1");
    ASSERT_LINE(t, "allot_gpus{model=\"M28\"} 1");
    ASSERT(strstr(t, "model=\"M29\"") == NULL);
    const char *first = strstr(t, "allot_gpus{model=\"other\"}");
    ASSERT(strstr(first + 1, "allot_gpus{model=\"other\"}") == NULL);
    ASSERT_LINE(t, "allot_gpu_utilization_ratio{node=\"a\",gpu=\"1\","
                   "model=\"unknown\"} 0.5");
    al_buf_fini(&b);
    ctl_fini(&ctl);
}

/* Role names both ways (auth.c): what token creation takes and shows. */
/* A store that keeps only the name of the last event written. */
static char last_event[32];

static int
keep_event(al_ctl_t *ctl, uint64_t job, int64_t ms, const char *event,
           const char *detail)
{
    (void)ctl, (void)job, (void)ms, (void)detail;
    snprintf(last_event, sizeof last_event, "%s", event);
    return 0;
}

static const al__store_ops_t event_store = { .event = keep_event };

/* A job killed for its memory: it ends OUT_OF_MEMORY (a failure for
 * Slurm's dependencies), stored and read back so, or runs again while it
 * has retries. */
static void
oom_transitions(void)
{
    ASSERT(al__jstate_failed(JS_FAILED));
    ASSERT(al__jstate_failed(JS_OUT_OF_MEMORY));
    ASSERT(!al__jstate_failed(JS_COMPLETED));
    ASSERT(!al__jstate_failed(JS_CANCELLED));
    ASSERT(!al__jstate_failed(JS_RUNNING));
    ASSERT(JS_OUT_OF_MEMORY > JS_COMPLETED); /* an ended state */

    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.store_ops = &event_store;
    add_node(&ctl, "{\"name\": \"a\", \"gpus\": ["
                   "{\"uuid\": \"G0\", \"model\": \"H100\"}]}");
    al__job_t *j = metrics_job(&ctl, 1, "{\"command\": [\"x\"], \"gpus\": 1}",
                               JS_RUNNING, 1, 0);
    al__job_t *r = metrics_job(
        &ctl, 2, "{\"command\": [\"x\"], \"gpus\": 1, \"retries\": 1}",
        JS_RUNNING, 1, 0);
    al__ctl_index_running(&ctl);
    ASSERT_EQ(ctl.nrunning, 2);

    const char *why = "OUT_OF_MEMORY: task 0 exceeded its memory limit "
                      "(64 MiB) and was killed";
    j->signal = 9;
    al__lifecycle_oom(&ctl, j, why);
    ASSERT_EQ(j->state, JS_OUT_OF_MEMORY);
    ASSERT_STR_EQ(j->reason, why);
    ASSERT_STR_EQ(last_event, "out_of_memory");
    ASSERT(j->end_ms > 0);
    ASSERT_EQ(ctl.nrunning, 1);
    ASSERT_EQ(ctl.counters.ended[JS_OUT_OF_MEMORY], 1);
    ASSERT_EQ(ctl.counters.ended[JS_FAILED], 0);

    /* The stored form keeps the state; an old store knows no more. */
    json_t *o = al__job_json(&ctl, j, true);
    ASSERT_STR_EQ(al_json_str(o, "state", ""), "out_of_memory");
    al__job_t *back = al__job_from_json(&ctl, o);
    ASSERT(back != NULL);
    ASSERT_EQ(back->state, JS_OUT_OF_MEMORY);
    al__job_free(back);
    json_decref(o);

    /* Its dependants: afternotok and afterany run, afterok never. */
    static const struct {
        const char *dep;
        al_dep_state_t want;
    } deps[] = { { "afternotok:1", AL_DEPS_SATISFIED },
                 { "afterany:1", AL_DEPS_SATISFIED },
                 { "afterok:1", AL_DEPS_NEVER } };
    for (size_t k = 0; k < sizeof deps / sizeof deps[0]; k++) {
        char body[128];
        snprintf(body, sizeof body,
                 "{\"command\": [\"x\"], \"dependency\": \"%s\"}", deps[k].dep);
        al__job_t *d = NULL;
        ASSERT_EQ(job_parse(body, "u", false, &d, NULL), 0);
        ASSERT_EQ(al__depend_state(&ctl, d), deps[k].want);
        al__job_free(d);
    }

    /* With a retry left it runs again (the retry counted), and the next
     * time it ends out of memory. */
    r->signal = 9;
    al__lifecycle_oom(&ctl, r, why);
    ASSERT_EQ(r->state, JS_PENDING);
    ASSERT_EQ(r->retried, 1);
    ASSERT_EQ(r->signal, 0); /* the next run's exit is its own */
    ASSERT_STR_EQ(last_event, "retry");
    ASSERT_EQ(ctl.counters.ended[JS_OUT_OF_MEMORY], 1);
    r->retry_at_ms = 0;
    al__ctl_set_state(&ctl, r, JS_RUNNING, "started", NULL);
    al__lifecycle_oom(&ctl, r, why);
    ASSERT_EQ(r->state, JS_OUT_OF_MEMORY);
    ASSERT_EQ(ctl.counters.ended[JS_OUT_OF_MEMORY], 2);
    ASSERT_EQ(ctl.nrunning, 0);
    ctl_fini(&ctl);
}

static void
role_names(void)
{
    ASSERT_EQ(al__role_parse("user"), ROLE_USER);
    ASSERT_EQ(al__role_parse("admin"), ROLE_ADMIN);
    ASSERT_EQ(al__role_parse("agent"), ROLE_AGENT);
    ASSERT_EQ(al__role_parse("metrics"), ROLE_METRICS);
    ASSERT_EQ(al__role_parse("none"), ROLE_NONE);
    ASSERT_EQ(al__role_parse("Admin"), ROLE_NONE);
    ASSERT_EQ(al__role_parse(""), ROLE_NONE);
    for (int r = ROLE_USER; r <= AL_ROLE_LAST; r++)
        ASSERT_EQ(al__role_parse(al__role_name(r)), r);
    ASSERT_STR_EQ(al__role_name(ROLE_METRICS), "metrics");
    ASSERT_STR_EQ(al__role_name(ROLE_NONE), "none");
    ASSERT_STR_EQ(al__role_name(99), "none");
}

/* What events.c formatted through jansson before it wrote the text
 * itself: the fields in order, a string jansson refuses left out. */
static char *
event_ref(uint64_t id, const al__event_info_t *in)
{
    const char *kind = in->kind != NULL ? in->kind : "job";
    json_t *o = json_pack("{s:I, s:I}", "id", (json_int_t)id, "time",
                          (json_int_t)in->ms);
    if (strcmp(kind, "job") == 0)
        json_object_set_new(o, "job", json_integer((json_int_t)in->job));
    const char *keys[] = { "event", "node",  "name",  "user",
                           "queue", "state", "detail" };
    const char *vals[] = { in->event, in->node,  in->name,  in->user,
                           in->queue, in->state, in->detail };
    for (int i = 0; i < 7; i++)
        if (vals[i] != NULL)
            json_object_set_new(o, keys[i], json_string(vals[i]));
    char *data = al_json_dump(o);
    json_decref(o);
    size_t n = strlen(data) + 128;
    char *text = malloc(n);
    snprintf(text, n, "id: %llu\nevent: %s\ndata: %s\n\n",
             (unsigned long long)id, kind, data);
    free(data);
    return text;
}

static void
event_text_is_janssons(void)
{
    al__event_info_t in = { .job = 42,
                            .ms = 1764000000123,
                            .event = "started",
                            .detail = "task 0 on sim-00001 gpus 0",
                            .name = "train",
                            .user = "ann",
                            .queue = "ml",
                            .state = "running" };
    char *got = al__events_format(1764000000123001ULL, &in);
    char *want = event_ref(1764000000123001ULL, &in);
    ASSERT_STR_EQ(got, want);
    free(got);
    free(want);
    /* Every ASCII byte, and UTF-8 of two, three and four bytes. */
    char all[160];
    int k = 0;
    for (int c = 1; c < 128; c++)
        all[k++] = (char)c;
    all[k] = '\0';
    const char *odd[] = {
        all, "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x98\x80",
        "",  "a\"b\\c/d",   "tab\there\r\n"
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        al__event_info_t e = { .job = 7,
                               .ms = 5,
                               .event = "failed",
                               .detail = odd[i],
                               .name = odd[i] };
        got = al__events_format(99, &e);
        want = event_ref(99, &e);
        ASSERT_STR_EQ(got, want);
        free(got);
        free(want);
    }
    /* A node's event, and strings jansson refuses (invalid UTF-8: a lone
     * continuation byte, an overlong form, a surrogate, a cut sequence):
     * the field is left out, as before. */
    const char *bad[] = { "a\x80", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82",
                          "\xf5\x80\x80\x80" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        al__event_info_t e = { .ms = 5,
                               .event = "down",
                               .detail = bad[i],
                               .kind = "node",
                               .node = "n1" };
        got = al__events_format(3, &e);
        want = event_ref(3, &e);
        ASSERT_STR_EQ(got, want);
        ASSERT(strstr(got, "detail") == NULL);
        free(got);
        free(want);
    }
}

const al_test_t test_server[] = {
    { "event_text_is_janssons", event_text_is_janssons },
    { "role_names", role_names },
    { "metrics_models", metrics_models },
    { "state_names", state_names },
    { "job_classes", job_classes },
    { "evict_reasons", evict_reasons },
    { "job_reason", job_reason },
    { "job_body_defaults", job_body_defaults },
    { "job_body_full", job_body_full },
    { "job_body_fraction", job_body_fraction },
    { "job_body_refused", job_body_refused },
    { "job_doc_round_trip", job_doc_round_trip },
    { "job_text_same", job_text_same },
    { "job_doc_lost_node", job_doc_lost_node },
    { "queue_doc", queue_doc },
    { "queue_doc_refused", queue_doc_refused },
    { "queue_doc_build_idle", queue_doc_build_idle },
    { "node_doc", node_doc },
    { "node_doc_refused", node_doc_refused },
    { "sync_body", sync_body },
    { "desired_task_encoding", desired_task_encoding },
    { "desired_set", desired_set },
    { "metrics_render", metrics_render },
    { "oom_transitions", oom_transitions },
    { "waste_ratio", waste_ratio },
    { NULL, NULL },
};
