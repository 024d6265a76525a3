/*
 * fuzz_hostlist.c -- libFuzzer harness for Slurm's hostlist form
 * ("node[1-3,7],login1", src/common/hostlist.c), which the Slurm commands
 * print and the agent gives tasks as SLURM_JOB_NODELIST.  Each input, up to
 * its first NUL, is read twice: as a hostlist to expand, and as names, one
 * a line, to fold.  Checks:
 *   - a refused list leaves the output alone; an expanded one has 1 to
 *     AL_HOSTLIST_MAX names, none empty;
 *   - folding the expanded names and expanding again gives the same set
 *     of names (the fold loses nothing and invents nothing);
 *   - folding plain names (no '[', ']' or ',') and expanding the result
 *     gives them back, each once.
 * Corpus: tests/fuzz/corpus/hostlist.
 */
#include "fuzz.h"
#include "hostlist.h"

static int
cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct names of v[0..n-1], sorted, in place; their number. */
static size_t
uniq(char **v, size_t n)
{
    qsort(v, n, sizeof *v, cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(v[u - 1], v[i]) != 0)
            v[u++] = v[i];
    return u;
}

/* folds names[0..n-1] and expands the result: the same distinct names. */
static void
round_trip(char **names, size_t n)
{
    char *folded = al_hostlist_fold((const char *const *)names, n);
    char **back = (char **)&back; /* must change */
    size_t nb = 0;
    CHECK(al_hostlist_expand(folded, &back, &nb) == 0);
    char **a = malloc((n + 1) * sizeof *a), **b = malloc((nb + 1) * sizeof *b);
    CHECK(a != NULL && b != NULL);
    memcpy(a, names, n * sizeof *a);
    memcpy(b, back, nb * sizeof *b);
    size_t ua = uniq(a, n), ub = uniq(b, nb);
    CHECK(ua == ub);
    for (size_t i = 0; i < ua; i++)
        CHECK(strcmp(a[i], b[i]) == 0);
    free(a);
    free(b);
    al_hostlist_free(back, nb);
    free(folded);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    char **names = NULL;
    size_t n = 7;
    if (al_hostlist_expand(s, &names, &n) == 0) {
        CHECK(n >= 1 && n <= AL_HOSTLIST_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK(names[i][0] != '\0');
        if (n <= 2000) /* the fold compares every pair */
            round_trip(names, n);
        al_hostlist_free(names, n);
    } else {
        CHECK(names == NULL && n == 7);
    }
    /* One name a line. */
    char *lines[256];
    size_t nl = 0;
    for (char *save = NULL, *w = strtok_r(s, "\n", &save); w && nl < 256;
         w = strtok_r(NULL, "\n", &save))
        if (strpbrk(w, "[],") == NULL)
            lines[nl++] = w;
    if (nl > 0)
        round_trip(lines, nl);
    free(s);
    return 0;
}
