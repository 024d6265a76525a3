/*
 * test_pipelines.c -- the simulator's pipelines (trace columns
 * pipeline_id,stage,needs) on small hand-checked traces: the parse and its
 * errors, the stages' order, and the three ways the scheduler may know the
 * graph (--dag on, off, blind, hold).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int failed_asserts;

#define ASSERT_INT(a, op, b)                                                   \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (!(a_ op b_)) {                                                     \
            fprintf(stderr, "  %s:%d: %s %s %s: %lld vs %lld\n", __FILE__,     \
                    __LINE__, #a, #op, #b, a_, b_);                            \
            failed_asserts++;                                                  \
        }                                                                      \
    } while (0)

#define ASSERT_HAS(hay, needle)                                                \
    do {                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                \
        if (h_ == NULL || strstr(h_, n_) == NULL) {                            \
            fprintf(stderr, "  %s:%d: '%s' should contain '%s'\n", __FILE__,   \
                    __LINE__, h_ ? h_ : "(null)", n_);                         \
            failed_asserts++;                                                  \
        }                                                                      \
    } while (0)

#define HEADER                                                                 \
    "job_id,submit_time_s,duration_s,num_gpus,num_cpus,user,queue,status,"     \
    "pipeline_id,stage,needs\n"

/*
 * One pipeline on one 8-GPU node (estimates exact): prep (CPU, 0-100),
 * train (8 GPUs, 1000 s) after prep, eval (1 GPU, 100 s) after train; an
 * unrelated 8-GPU job x of 5000 s arrives at 10.
 */
static const char one_pipeline[] = HEADER "prep,0,100,0,4,u,,,p1,prep,\n"
                                          "train,0,1000,8,,u,,,p1,train,prep\n"
                                          "eval,0,100,1,,u,,,p1,eval,train\n"
                                          "x,10,5000,8,,u,,,,,\n";

static al_sim_result_t *
run(const char *text, al_sim_dag_t dag)
{
    al_trace_t *t = NULL;
    char *cause = NULL;
    if (al_trace_parse("t.csv", text, strlen(text), NULL, &t, &cause) != 0) {
        fprintf(stderr, "  parse: %s\n", cause);
        free(cause);
        failed_asserts++;
        return NULL;
    }
    al_cluster_t *c = al_cluster_homogeneous(1, 8, NULL, 0, 96, 1024);
    al_sim_opts_t o;
    al_sim_opts_default(&o);
    o.estimate_factor = 1;
    o.dag = dag;
    /* The scenarios are about the graph: no service preemption. */
    o.service_levels_set = true;
    al_sim_result_t *r = NULL;
    if (al_sim_run(t, c, &o, &r, &cause) != 0) {
        fprintf(stderr, "  run: %s\n", cause ? cause : "?");
        free(cause);
        failed_asserts++;
        al_trace_destroy(t);
        r = NULL;
    }
    al_cluster_destroy(c);
    return r;
}

static void
done(al_sim_result_t *r)
{
    if (r == NULL)
        return;
    al_trace_t *t = (al_trace_t *)r->trace;
    al_sim_result_destroy(r);
    al_trace_destroy(t);
}

/* The index of job id in r's trace. */
static int
job(const al_sim_result_t *r, const char *id)
{
    for (int i = 0; i < r->trace->njobs; i++)
        if (strcmp(r->trace->jobs[i].id, id) == 0)
            return i;
    return 0;
}

static void
test_parse_errors(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        { HEADER "a,0,1,1,,,,,p,a,b\n", "t.csv:2: field 'needs': no stage 'b' "
                                        "in pipeline 'p'" },
        { HEADER "a,0,1,1,,,,,p,a,b\nb,0,1,1,,,,,p,b,a\n", "on a cycle" },
        { HEADER "a,0,1,1,,,,,p,a,\nb,0,1,1,,,,,p,a,\n",
          "t.csv:3: field 'stage': 'a' appears twice in pipeline 'p'" },
        { HEADER "a,0,1,1,,,,,,a,\n", "field 'pipeline_id': empty" },
        { HEADER "a,0,1,1,,,,,p,a,a\n", "needs itself" },
        /* A need names a stage of its own pipeline only. */
        { HEADER "a,0,1,1,,,,,p,a,\nb,0,1,1,,,,,q,b,a\n",
          "no stage 'a' in pipeline 'q'" },
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        al_trace_t *t = NULL;
        char *cause = NULL;
        int rc = al_trace_parse("t.csv", cases[k].text, strlen(cases[k].text),
                                NULL, &t, &cause);
        ASSERT_INT(rc, ==, AL_EPARSE);
        ASSERT_HAS(cause, cases[k].want);
        free(cause);
        al_trace_destroy(t);
    }
    /* Needs are resolved to indices, ';'-separated, spaces ignored. */
    const char *ok = HEADER "c,5,1,1,,,,,p,c,a; b\na,0,1,1,,,,,p,a,\n"
                            "b,0,1,1,,,,,p,b,a\n";
    al_trace_t *t = NULL;
    char *cause = NULL;
    ASSERT_INT(al_trace_parse("t.csv", ok, strlen(ok), NULL, &t, &cause), ==,
               0);
    if (t != NULL) {
        ASSERT_INT(t->jobs[2].ndeps, ==, 2); /* c, sorted last */
        ASSERT_INT(t->jobs[2].deps[0], ==, 0);
        ASSERT_INT(t->jobs[2].deps[1], ==, 1);
        ASSERT_INT(t->jobs[1].ndeps, ==, 1);
    }
    free(cause);
    al_trace_destroy(t);
}

/*
 * dag hold: at 0 prep starts and train's look-ahead holds the 8 GPUs from
 * prep's end at 100; x (preemptible) is lent them at 10 and gives them
 * back at 100; train 100-1100, eval 1100-1200 (x's reservation after
 * eval's look-ahead): the pipeline takes 1200 s; x restarts at 1200,
 * reloads for the default restart overhead (60 s) and ends at 6260.
 * on, off and blind hold nothing: x starts at 10 on the free node and
 * train waits for it: train 5010-6010, eval 6010-6110.
 */
static void
test_hold(void)
{
    al_sim_result_t *r = run(one_pipeline, AL_SIM_DAG_HOLD);
    if (r != NULL) {
        ASSERT_INT(r->npipelines, ==, 1);
        ASSERT_INT(r->pipelines_done, ==, 1);
        ASSERT_INT(r->jobs[job(r, "train")].first_start, ==, 100);
        ASSERT_INT(r->jobs[job(r, "eval")].end, ==, 1200);
        ASSERT_INT((int64_t)r->pipe_makespan_mean, ==, 1200);
        ASSERT_INT(r->jobs[job(r, "x")].preemptions, ==, 1);
        ASSERT_INT(r->jobs[job(r, "x")].end, ==, 6260);
    }
    done(r);
    static const al_sim_dag_t others[] = { AL_SIM_DAG_ON, AL_SIM_DAG_BLIND,
                                           AL_SIM_DAG_OFF };
    for (size_t k = 0; k < 3; k++) {
        r = run(one_pipeline, others[k]);
        if (r == NULL)
            continue;
        ASSERT_INT(r->jobs[job(r, "train")].first_start, ==, 5010);
        ASSERT_INT(r->jobs[job(r, "eval")].end, ==, 6110);
        ASSERT_INT((int64_t)r->pipe_makespan_mean, ==, 6110);
        ASSERT_INT(r->jobs[job(r, "x")].preemptions, ==, 0);
        done(r);
    }
}

/*
 * Critical path.  One 8-GPU node: a (8 GPUs, 0-100), b after a (8 GPUs,
 * 600 s), c after b (1 GPU, 100 s); x, unrelated, 8 GPUs for 500 s,
 * arrives at 10.  When a ends, b and x are ready.  on (and hold): b has a
 * stage waiting on it and goes first although x is shorter: b 100-700,
 * c 700-800, x 800-1300; the pipeline takes 800 s.  off and blind: the
 * shorter x goes first, 100-600, then b 600-1200 and c 1200-1300.
 */
static void
test_critical_path(void)
{
    static const char text[] = HEADER "a,0,100,8,,,,,p,a,\n"
                                      "b,0,600,8,,,,,p,b,a\n"
                                      "c,0,100,1,,,,,p,c,b\n"
                                      "x,10,500,8,,,,,,,\n";
    for (int d = 0; d < 4; d++) {
        al_sim_result_t *r = run(text, (al_sim_dag_t)d);
        if (r == NULL)
            continue;
        bool knows = d == AL_SIM_DAG_ON || d == AL_SIM_DAG_HOLD;
        ASSERT_INT(r->jobs[job(r, "b")].first_start, ==, knows ? 100 : 600);
        ASSERT_INT(r->jobs[job(r, "c")].end, ==, knows ? 800 : 1300);
        ASSERT_INT(r->jobs[job(r, "x")].end, ==, knows ? 1300 : 600);
        ASSERT_INT((int64_t)r->pipe_makespan_mean, ==, knows ? 800 : 1300);
        ASSERT_INT(r->wasted_s, ==, 0);
        done(r);
    }
}

/*
 * A fan-out and a join: a (1 GPU, 100 s) then b1..b3 (1 GPU each, 50 s)
 * after a, then c after all three.  On 8 GPUs nothing competes: a 0-100,
 * b* 100-150, c 150-250, in every mode; each stage starts only when what
 * it needs has ended.
 */
static void
test_fan_out_join(void)
{
    static const char text[] = HEADER "a,0,100,1,,,,,p,a,\n"
                                      "b1,0,50,1,,,,,p,b1,a\n"
                                      "b2,0,50,1,,,,,p,b2,a\n"
                                      "b3,0,50,1,,,,,p,b3,a\n"
                                      "c,0,100,1,,,,,p,c,b1;b2;b3\n";
    for (int d = 0; d < 4; d++) {
        al_sim_result_t *r = run(text, (al_sim_dag_t)d);
        if (r == NULL)
            continue;
        ASSERT_INT(r->jobs[job(r, "b2")].first_start, ==, 100);
        ASSERT_INT(r->jobs[job(r, "c")].first_start, ==, 150);
        ASSERT_INT(r->jobs[job(r, "c")].end, ==, 250);
        ASSERT_INT(r->wasted_s, ==, 0);
        done(r);
    }
}

/* A stage after a job that can never run can never run either. */
static void
test_never(void)
{
    static const char text[] = HEADER "a,0,100,16,,,,,p,a,\n"
                                      "b,0,50,1,,,,,p,b,a\n"
                                      "c,0,50,1,,,,,p,c,b\n";
    for (int d = 0; d < 4; d++) {
        al_sim_result_t *r = run(text, (al_sim_dag_t)d);
        if (r == NULL)
            continue;
        for (int i = 0; i < 3; i++)
            ASSERT_INT(r->jobs[i].unschedulable, ==, 1);
        ASSERT_INT(r->pipelines_done, ==, 0);
        done(r);
    }
}

static const struct test {
    const char *name;
    void (*fn)(void);
} tests[] = {
    { "parse_errors", test_parse_errors },
    { "hold", test_hold },
    { "critical_path", test_critical_path },
    { "fan_out_join", test_fan_out_join },
    { "never", test_never },
};

int
main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
            continue;
        int before = failed_asserts;
        tests[i].fn();
        if (failed_asserts > before) {
            printf("FAIL %s\n", tests[i].name);
            failed++;
        } else {
            printf("ok   %s\n", tests[i].name);
            passed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0;
}
