/*
 * fuzz_jobbody.c -- libFuzzer harness for the job submission body
 * (POST /v1/jobs): al__job_parse in src/server/jobbody.c.  Each input is JSON
 * text, read as the server reads a body, then checked for a user and for
 * an admin.  Checks:
 *   - a refusal is AL_EINVAL (400) or AL_EPERM (403, only for a user naming
 *     another "user"), with a message, and leaves the out-parameter alone;
 *   - an admin is refused nothing a user is allowed;
 *   - an accepted job is within the bounds of docs/server.md and says what
 *     the body said (queue, class, sizes, after, hold, retries, a
 *     gpu_fraction that is there becomes a fraction);
 *   - it can be written as JSON (both forms), the direct writer of the
 *     store's row (jobtext.c) giving the tree's bytes, and its stored form
 *     loads back (al__job_from_json) into the same job, as the store does
 *     at restart.
 * Corpus: tests/fuzz/corpus/jobbody.
 */
#include <stdbool.h>

#include "core/error.h"
#include "fuzz.h"
#include "json.h"
#include "server_int.h"

/* The controller as al__job_json and al__job_from_json see it for a job
 * that has not run: they look at its nodes only for a placement. */
static al_ctl_t ctl0;

static void
check_same(const al__job_t *a, const al__job_t *b)
{
    CHECK(strcmp(a->name, b->name) == 0);
    CHECK(strcmp(a->user, b->user) == 0);
    CHECK(strcmp(a->queue, b->queue) == 0);
    CHECK(fuzz_str_eq(a->gpu_model, b->gpu_model));
    CHECK(a->cls == b->cls && a->ntasks == b->ntasks && a->gpus == b->gpus);
    CHECK(a->gpu_milli == b->gpu_milli && a->cpu_milli == b->cpu_milli);
    CHECK(a->mem_bytes == b->mem_bytes && a->time_limit == b->time_limit);
    CHECK(a->gpu_mem == b->gpu_mem);
    CHECK(a->state == b->state && a->nafter == b->nafter);
    CHECK(a->retries == b->retries && a->retried == b->retried);
    for (int i = 0; i < a->nafter; i++)
        CHECK(a->after[i] == b->after[i]);
    json_t *sa = al_json_parse(a->spec, strlen(a->spec), NULL);
    json_t *sb = al_json_parse(b->spec, strlen(b->spec), NULL);
    CHECK(sa != NULL && sb != NULL && json_equal(sa, sb));
    json_decref(sa);
    json_decref(sb);
}

/* The accepted job j against the body it came from. */
static void
check_job(const json_t *b, const al__job_t *j, bool admin)
{
    CHECK(j->id == 0 && j->snap == -1 && j->tasks == NULL);
    size_t nlen = strlen(j->name);
    CHECK(nlen >= 1 && nlen <= AL_JOB_MAX_NAME);
    if (json_is_string(json_object_get(b, "name")))
        CHECK(strcmp(j->name, al_json_str(b, "name", "")) == 0);
    const char *as = al_json_str(b, "user", NULL);
    CHECK(strcmp(j->user, admin && as != NULL ? as : "alice") == 0);
    CHECK(strcmp(j->queue, al_json_str(b, "queue", "default")) == 0);
    CHECK(j->cls >= 0 && j->cls < al__njclasses);
    CHECK(strcmp(al__jclasses[j->cls].name, al_json_str(b, "class", "train")) ==
          0);
    CHECK(j->ntasks == al_json_int(b, "tasks", 1));
    CHECK(j->ntasks >= 1 && j->ntasks <= AL_JOB_MAX_TASKS);
    CHECK(j->gpus == al_json_int(b, "gpus", 0));
    CHECK(j->gpus >= 0 && j->gpus <= AL_MAX_DEVICES);
    CHECK(j->gpu_milli >= 0 && j->gpu_milli < AL_GPU_MILLI);
    CHECK(j->gpu_milli == 0 || j->gpus == 0);
    CHECK((j->gpu_milli > 0) == (al_json_num(b, "gpu_fraction", 0) > 0));
    CHECK(j->cpu_milli == al_json_int(b, "cpu_milli", 100));
    CHECK(j->cpu_milli >= 0 && j->cpu_milli <= AL_JOB_MAX_CPU_MILLI);
    CHECK(j->mem_bytes == al_json_int(b, "mem_bytes", 0));
    CHECK(j->mem_bytes >= 0 && j->mem_bytes <= AL_JOB_MAX_MEM_BYTES);
    CHECK(j->time_limit == al_json_int(b, "time_limit", 0));
    CHECK(j->time_limit >= 0 && j->time_limit <= AL_JOB_MAX_TIME_LIMIT);
    CHECK(fuzz_str_eq(j->gpu_model, al_json_str(b, "gpu_model", NULL)));
    CHECK((j->state == JS_HELD) == al_json_bool(b, "hold", false));
    CHECK(j->state == JS_HELD || j->state == JS_PENDING);
    CHECK(j->retries == al_json_int(b, "retries", 0));
    CHECK(j->retries >= 0 && j->retries <= AL_JOB_MAX_RETRIES);
    json_t *after = json_object_get(b, "after");
    CHECK((size_t)j->nafter == json_array_size(after));
    for (int i = 0; i < j->nafter; i++) {
        CHECK(j->after[i] >= 1);
        CHECK((json_int_t)j->after[i] ==
              json_integer_value(json_array_get(after, (size_t)i)));
    }
    /* The spec holds what runs, as given. */
    json_t *spec = al_json_parse(j->spec, strlen(j->spec), NULL);
    CHECK(json_is_object(spec));
    static const char *const keys[] = { "command", "cwd", "env", "script",
                                        "image" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(b, keys[k]);
        json_t *w = json_object_get(spec, keys[k]);
        if (v == NULL || json_is_null(v))
            CHECK(w == NULL);
        else
            CHECK(w != NULL && json_equal(v, w));
    }
    json_decref(spec);
}

/* Writes j as the API and the store do, and loads the stored form back. */
static void
round_trip(al__job_t *j)
{
    j->id = 1;
    j->submit_ms = j->eligible_ms = 1700000000000;
    json_t *pub = al__job_json(&ctl0, j, false);
    CHECK(pub != NULL);
    char *text = al_json_dump(pub);
    /* The direct writer (jobtext.c) gives the tree's bytes. */
    al_buf_t b;
    al_buf_init(&b);
    al__job_text_buf(&ctl0, j, false, true, JSON_COMPACT | JSON_ENCODE_ANY, &b);
    CHECK(strcmp(al_buf_cstr(&b), text) == 0);
    al_buf_fini(&b);
    free(text);
    json_decref(pub);
    json_t *doc = al__job_json(&ctl0, j, true);
    CHECK(doc != NULL);
    /* Through text, as the store keeps it. */
    text = al_json_dump(doc);
    json_decref(doc);
    char *row = al__job_text(&ctl0, j, true);
    CHECK(strcmp(row, text) == 0);
    free(row);
    doc = al_json_parse(text, strlen(text), NULL);
    free(text);
    CHECK(doc != NULL);
    al__job_t *k = al__job_from_json(&ctl0, doc);
    json_decref(doc);
    CHECK(k != NULL);
    CHECK(k->id == j->id && k->submit_ms == j->submit_ms);
    check_same(j, k);
    al__job_free(k);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = al_json_parse((const char *)data, size, NULL);
    if (body == NULL)
        return 0; /* the server answers 400 before any handler */
    int rcs[2];
    al__job_t *jobs[2] = { NULL, NULL };
    for (int admin = 0; admin < 2; admin++) {
        al__job_t sentinel, *j = &sentinel;
        char *cause = NULL;
        int rc = al__job_parse(body, "alice", admin, &j, &cause);
        rcs[admin] = rc;
        if (rc != 0) {
            CHECK(rc == AL_EINVAL || (rc == AL_EPERM && !admin));
            CHECK(j == &sentinel);
            CHECK(cause != NULL && cause[0] != '\0');
            free(cause);
            continue;
        }
        CHECK(cause == NULL);
        check_job(body, j, admin);
        round_trip(j);
        jobs[admin] = j;
    }
    /* What a user may submit, an admin may too, and gets the same job. */
    CHECK(rcs[0] != 0 || rcs[1] == 0);
    if (rcs[0] == 0)
        check_same(jobs[0], jobs[1]);
    al__job_free(jobs[0]);
    al__job_free(jobs[1]);
    json_decref(body);
    return 0;
}
