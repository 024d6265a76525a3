/*
 * fuzz_arrayspec.c -- libFuzzer harness for job array specs and sweep axes
 * (al_array_spec_parse, al_sweep_axis_parse, the placeholders;
 * src/common/arrayspec.c), which the CLI and the controller both run on
 * what users send.  Each input is one argument, up to its first NUL.
 * Checks: a refusal says why and leaves the result alone; an accepted spec
 * has 1..AL_ARRAY_MAX_ELEMENTS elements in increasing order, min and max
 * its first and last, and position -> index -> position is the identity
 * (on the ends and some positions between); an accepted axis has 1..1024
 * non-empty values; substitution leaves a word without placeholders as it
 * was; an accepted dependency list reads back the same from its canonical
 * text.
 * Also Slurm's dependency lists (al_dep_parse, src/common/depspec.c).
 * Corpus: tests/fuzz/corpus/arrayspec.
 */
#include "arrayspec.h"
#include "depspec.h"
#include "fuzz.h"

static void
spec(const char *s)
{
    al_array_spec_t a;
    memset(&a, 0x5a, sizeof a);
    al_array_spec_t before = a;
    char *cause = NULL;
    if (al_array_spec_parse(s, &a, &cause) != 0) {
        CHECK(cause != NULL && cause[0] != '\0');
        CHECK(memcmp(&a, &before, sizeof a) == 0);
        free(cause);
        return;
    }
    CHECK(a.count >= 1 && a.count <= AL_ARRAY_MAX_ELEMENTS);
    CHECK(a.limit >= 0 && a.min <= a.max && a.max <= AL_ARRAY_MAX_INDEX);
    CHECK(al_array_spec_index(&a, 0) == a.min);
    CHECK(al_array_spec_index(&a, a.count - 1) == a.max);
    int64_t prev = -1;
    for (int64_t k = 0; k < a.count; k += 1 + k / 7) {
        int64_t i = al_array_spec_index(&a, k);
        CHECK(i > prev && al_array_spec_pos(&a, i) == k);
        prev = i;
    }
    CHECK(al_array_spec_pos(&a, a.max + 1) == -1);
    al_array_spec_fini(&a);
}

static void
sweep(const char *s)
{
    al_sweep_axis_t ax;
    char *cause = NULL;
    if (al_sweep_axis_parse(s, &ax, &cause) != 0) {
        CHECK(cause != NULL && cause[0] != '\0');
        free(cause);
        return;
    }
    CHECK(ax.nvalues >= 1 && ax.nvalues <= AL_ARRAY_MAX_PARTS);
    for (int i = 0; i < ax.nvalues; i++)
        CHECK(ax.values[i][0] != '\0');
    const char *names[] = { ax.name };
    const char *values[] = { ax.values[0] };
    char bad[64];
    /* Known names only: every placeholder left after substituting is one
     * that was unknown before. */
    bool unknown = al_sweep_unknown(s, names, 1, bad, sizeof bad);
    char *out = al_sweep_subst(s, names, values, 1);
    if (!unknown && strchr(s, '{') == NULL)
        CHECK(strcmp(out, s) == 0);
    free(out);
    out = al_sweep_subst(s, names, values, 0);
    CHECK(strcmp(out, s) == 0);
    free(out);
    al_sweep_axis_fini(&ax);
}

static void
deps(const char *s)
{
    al_depspec_t *d = NULL;
    int n = -7;
    char *cause = NULL;
    if (al_dep_parse(s, &d, &n, &cause) != 0) {
        CHECK(cause != NULL && cause[0] != '\0' && n == -7);
        free(cause);
        return;
    }
    CHECK(n >= 1 && n <= AL_DEP_MAX);
    char *t = al_dep_text(d, n);
    al_depspec_t *e = NULL;
    int m = 0;
    CHECK(al_dep_parse(t, &e, &m, NULL) == 0 && m == n);
    CHECK(memcmp(d, e, (size_t)n * sizeof *d) == 0);
    free(t);
    free(d);
    free(e);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    spec(s);
    sweep(s);
    deps(s);
    free(s);
    return 0;
}
