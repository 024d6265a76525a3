/*
 * test_arrayspec.c -- job array specs and sweep axes (src/common/
 * arrayspec.c): what a spec holds, position <-> index both ways over every
 * element, the messages of bad specs (compared whole: users read them),
 * placeholders and their substitution; and the controller's reading of a
 * body's "array" and "sweep" and its stored form (src/server/arraydoc.c).
 */
#include <stdlib.h>
#include <string.h>

#include "arrayspec.h"
#include "core/error.h"
#include "depspec.h"
#include "json.h"
#include "server_int.h"
#include "test.h"

static void
spec_forms(void)
{
    static const struct {
        const char *text;
        int64_t count, limit, min, max, step;
        const char *indices; /* the first ones, comma-separated */
    } cases[] = {
        { "0-9", 10, 0, 0, 9, 1, "0,1,2,3,4,5,6,7,8,9" },
        { "1-8:2", 4, 0, 1, 7, 2, "1,3,5,7" },
        { "0-15:4%2", 4, 2, 0, 12, 4, "0,4,8,12" },
        { "1,3,7", 3, 0, 1, 7, 1, "1,3,7" },
        { "5", 1, 0, 5, 5, 1, "5" },
        { "0-2,10-14:2,99%3", 7, 3, 0, 99, 1, "0,1,2,10,12,14,99" },
        { "0-999999", 1000000, 0, 0, 999999, 1, "0,1,2" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        al_array_spec_t a;
        ASSERT_EQ(al_array_spec_parse(cases[c].text, &a, NULL), 0);
        ASSERT_EQ(a.count, cases[c].count);
        ASSERT_EQ(a.limit, cases[c].limit);
        ASSERT_EQ(a.min, cases[c].min);
        ASSERT_EQ(a.max, cases[c].max);
        ASSERT_EQ(a.step, cases[c].step);
        char buf[128] = "";
        size_t off = 0;
        for (int64_t k = 0; k < a.count && off < 40; k++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%lld",
                                    k ? "," : "",
                                    (long long)al_array_spec_index(&a, k));
        ASSERT(strncmp(buf, cases[c].indices, strlen(cases[c].indices)) == 0);
        /* Both ways over every element, and the gaps are no element. */
        int64_t prev = -1;
        for (int64_t k = 0; k < a.count; k++) {
            int64_t i = al_array_spec_index(&a, k);
            ASSERT_GT(i, prev);
            ASSERT_EQ(al_array_spec_pos(&a, i), k);
            for (int64_t g = prev + 1; g < i && g < prev + 4; g++)
                ASSERT_EQ(al_array_spec_pos(&a, g), -1);
            prev = i;
        }
        ASSERT_EQ(al_array_spec_pos(&a, a.max + 1), -1);
        al_array_spec_fini(&a);
    }
}

static void
spec_errors(void)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        { "5-1", "array spec '5-1': the range 5-1 ends before it starts" },
        { "0-10000000", "array spec '0-10000000' has 10000001 elements; an "
                        "array has at most 1000000" },
        { "0-999999,2000000", "array spec '0-999999,2000000' has 1000001 "
                              "elements; an array has at most 1000000" },
        { "0-999999,7,8", "array spec '0-999999,7,8': 7 comes after 999999; "
                          "list indices in increasing order, once each" },
        { "0-999999,1000000,1000001",
          "array spec '0-999999,1000000,1000001' has more than 1000001 "
          "elements; an array has at most 1000000" },
        { "%0", "array spec '%0': %0 would run nothing; the limit is at "
                "least 1" },
        { "%4", "array spec '%4' names no indices (e.g. 0-99%4)" },
        { "0-9%", "array spec '0-9%': % wants a number of elements to run "
                  "at once" },
        { "", "the array spec is empty (e.g. 0-99, 1,3,7 or 0-15:4%2)" },
        { "3,1", "array spec '3,1': 1 comes after 3; list indices in "
                 "increasing order, once each" },
        { "1-5,5", "array spec '1-5,5': 5 comes after 5; list indices in "
                   "increasing order, once each" },
        { "0-9:0", "array spec '0-9:0': a step (after ':') is a number of "
                   "at least 1" },
        { "-1", "array spec '-1': expected an index (0..999999999) at '-1'" },
        { "1-", "array spec '1-': expected the end of the range (at most "
                "999999999) after '1-'" },
        { "1x", "array spec '1x': unexpected 'x'" },
        { "1,,2", "array spec '1,,2': expected an index (0..999999999) at "
                  "',2'" },
        { "99999999999", "array spec '99999999999': expected an index "
                         "(0..999999999) at '99999999999'" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        al_array_spec_t a = { .count = -7 };
        char *cause = NULL;
        ASSERT_EQ(al_array_spec_parse(cases[c].text, &a, &cause), -1);
        ASSERT_STR_EQ(cause, cases[c].msg);
        ASSERT_EQ(a.count, -7); /* untouched */
        free(cause);
    }
}

static void
sweep_axes(void)
{
    al_sweep_axis_t ax;
    ASSERT_EQ(al_sweep_axis_parse("lr=1e-3,1e-4,x=y", &ax, NULL), 0);
    ASSERT_STR_EQ(ax.name, "lr");
    ASSERT_EQ(ax.nvalues, 3);
    ASSERT_STR_EQ(ax.values[2], "x=y");
    al_sweep_axis_fini(&ax);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        { "lr", "sweep 'lr': wants NAME=V1,V2,... (NAME: letters, digits "
                "and _, at most 32)" },
        { "9a=1", "sweep '9a=1': wants NAME=V1,V2,... (NAME: letters, "
                  "digits and _, at most 32)" },
        { "lr=", "sweep 'lr=': an empty value" },
        { "lr=1,,2", "sweep 'lr=1,,2': an empty value" },
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        char *cause = NULL;
        ASSERT_EQ(al_sweep_axis_parse(bad[c].text, &ax, &cause), -1);
        ASSERT_STR_EQ(cause, bad[c].msg);
        free(cause);
    }
}

static void
sweep_placeholders(void)
{
    const char *names[] = { "lr", "bs" }, *values[] = { "0.1", "64" };
    char bad[64];
    ASSERT(!al_sweep_unknown("--lr={lr} {bs}", names, 2, bad, sizeof bad));
    ASSERT(
        !al_sweep_unknown("${HOME} {} { x} {1a}", names, 2, bad, sizeof bad));
    ASSERT(al_sweep_unknown("a{lr}{epochs}", names, 2, bad, sizeof bad));
    ASSERT_STR_EQ(bad, "{epochs}");
    char *s =
        al_sweep_subst("--lr={lr} --bs={bs}{bs} ${lr} {x}", names, values, 2);
    ASSERT_STR_EQ(s, "--lr=0.1 --bs=6464 ${lr} {x}");
    free(s);
}

/* The controller reads a body's array and sweep, and its stored form. */
static void
array_body(void)
{
    json_error_t e;
    json_t *b = json_loads("{\"command\": [\"echo\", \"{lr}\"], \"sweep\": "
                           "[{\"name\": \"lr\", \"values\": [\"1\", \"2\"]},"
                           " {\"name\": \"bs\", \"values\": [\"8\", \"16\", "
                           "\"32\"]}], \"array\": \"10-15%2\"}",
                           0, &e);
    al__array_t *a = NULL;
    ASSERT_EQ(al__array_from_body(b, json_object_get(b, "command"), &a, NULL),
              0);
    ASSERT(a != NULL);
    ASSERT_EQ(a->as.count, 6);
    ASSERT_EQ(a->as.limit, 2);
    json_t *doc = al__array_doc(a);
    al__array_t *back = al__array_from_doc(doc);
    ASSERT(back != NULL);
    ASSERT_STR_EQ(back->spec, "10-15%2");
    ASSERT(json_equal(back->sweep, a->sweep));
    al__array_free(back);
    al__array_free(a);
    json_decref(doc);
    /* Without "array", a sweep makes 0..N-1. */
    json_object_del(b, "array");
    ASSERT_EQ(al__array_from_body(b, NULL, &a, NULL), 0);
    ASSERT_STR_EQ(a->spec, "0-5");
    al__array_free(a);
    /* A count that is not the sweep's, a placeholder of no axis. */
    json_object_set_new(b, "array", json_string("0-4"));
    char *cause = NULL;
    ASSERT_EQ(al__array_from_body(b, NULL, &a, &cause), AL_EINVAL);
    ASSERT_STR_EQ(cause, "the array has 5 elements but the sweep 6 "
                         "combinations");
    free(cause);
    json_object_del(b, "array");
    json_array_append_new(json_object_get(b, "command"), json_string("{ep}"));
    ASSERT_EQ(al__array_from_body(b, json_object_get(b, "command"), &a, &cause),
              AL_EINVAL);
    ASSERT_STR_EQ(cause, "the command's placeholder {ep} names no sweep axis");
    free(cause);
    json_decref(b);
    json_t *empty = json_object();
    ASSERT(al__array_from_doc(empty) == NULL);
    json_decref(empty);
}

static void
dep_specs(void)
{
    al_depspec_t *d = NULL;
    int n = 0;
    ASSERT_EQ(al_dep_parse("afterok:5:6,afterany:7,afternotok:8,aftercorr:9,"
                           "singleton",
                           &d, &n, NULL),
              0);
    ASSERT_EQ(n, 6);
    ASSERT_EQ(d[1].kind, AL_DEP_AFTEROK);
    ASSERT_EQ(d[1].job, 6);
    ASSERT_EQ(d[4].kind, AL_DEP_AFTERCORR);
    ASSERT_EQ(d[5].kind, AL_DEP_SINGLETON);
    char *t = al_dep_text(d, n);
    ASSERT_STR_EQ(t, "afterok:5:6,afterany:7,afternotok:8,aftercorr:9,"
                     "singleton");
    free(t);
    free(d);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        { "", "the dependency is empty (e.g. afterok:5:6,singleton)" },
        { "after:5", "dependency 'after:5': unknown kind 'after' (afterok, "
                     "afterany, afternotok or aftercorr with job ids, or "
                     "singleton)" },
        { "afterok", "dependency 'afterok': afterok wants job ids "
                     "(afterok:ID[:ID...])" },
        { "singleton:3", "dependency 'singleton:3': singleton takes no job "
                         "ids" },
        { "afterok:0", "dependency 'afterok:0': a job id is a number of at "
                       "least 1 (at ':0')" },
        { "afterok:5:", "dependency 'afterok:5:': a job id is a number of "
                        "at least 1 (at ':5:')" },
        { "afterok:5,", "dependency 'afterok:5,': unknown kind '' (afterok, "
                        "afterany, afternotok or aftercorr with job ids, or "
                        "singleton)" },
        { "afterok:1?afterany:2", "dependency 'afterok:1?afterany:2': '?' "
                                  "(any one of) is not supported; ',' (all "
                                  "of) is" },
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        char *cause = NULL;
        n = -7;
        ASSERT_EQ(al_dep_parse(bad[c].text, &d, &n, &cause), -1);
        ASSERT_STR_EQ(cause, bad[c].msg);
        ASSERT_EQ(n, -7);
        free(cause);
    }
}

const al_test_t test_arrayspec[] = {
    { "dep_specs", dep_specs },
    { "spec_forms", spec_forms },
    { "spec_errors", spec_errors },
    { "sweep_axes", sweep_axes },
    { "sweep_placeholders", sweep_placeholders },
    { "array_body", array_body },
    { NULL, NULL },
};
