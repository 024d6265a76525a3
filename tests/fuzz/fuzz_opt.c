/*
 * fuzz_opt.c -- libFuzzer harness for the command-line option parser
 * (al_opt_parse_cmd, src/common/opt.c) that every allot command goes
 * through.  The input is split at newlines into argv[1..] (at most 32
 * words).  Checks, against a table with one option of every kind: the
 * answer is 0 or AL_EXIT_USAGE; on success an integer or a number lies
 * within its bounds (or keeps its default), a string points into argv, the
 * positionals are argv's words in order and no more than asked for; with
 * stop_at_args the index returned is within argv; parsing is deterministic.
 * (The parser's messages go to stderr; libFuzzer's -close_fd_mask=2
 * silences them on a long run by hand.)
 * Corpus: tests/fuzz/corpus/opt.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "opt.h"

typedef struct args {
    const char *name;
    int64_t n;
    double ratio;
    bool json;
} args_t;

#define A(f) offsetof(args_t, f)
static const al_opt_t opts[] = {
    { .name = "--name", .kind = AL_OPT_STR, .off = A(name), .arg = "S" },
    { .name = "--n",
      .kind = AL_OPT_INT,
      .off = A(n),
      .min = -5,
      .max = 100,
      .arg = "N" },
    { .name = "--ratio",
      .kind = AL_OPT_NUM,
      .off = A(ratio),
      .lo = 0,
      .hi = 1,
      .arg = "R" },
    { .name = "--json", .kind = AL_OPT_FLAG, .off = A(json) },
    { .name = NULL },
};
#undef A

enum { MAXARGS = 32, MAXPOS = 4 };

/* Is p one of argv's words, or inside one (a value after '=')? */
static bool
in_argv(const char *p, char **argv, int argc)
{
    for (int i = 1; i < argc; i++)
        if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
            return true;
    return false;
}

static int
parse(bool stop, char **argv, int argc, args_t *a, char **pos, int *npos)
{
    al_opt_cmd_t c = { .name = "fuzz", .opts = opts, .stop_at_args = stop };
    a->name = NULL;
    a->n = 42;
    a->ratio = 0.5;
    a->json = false;
    *npos = -1;
    return al_opt_parse_cmd(&c, NULL, a, argc, argv, pos, MAXPOS, npos);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char *argv[MAXARGS + 2] = { (char *)"fuzz" };
    int argc = 1;
    for (char *w = text; argc <= MAXARGS;) {
        argv[argc++] = w;
        char *nl = strchr(w, '\n');
        if (nl == NULL)
            break;
        *nl = '\0';
        w = nl + 1;
    }
    argv[argc] = NULL;

    for (int stop = 0; stop <= 1; stop++) {
        args_t a, b;
        char *pos[MAXPOS], *pos2[MAXPOS];
        int npos, npos2;
        int rc = parse(stop, argv, argc, &a, pos, &npos);
        CHECK(rc == 0 || rc == AL_EXIT_USAGE);
        int rc2 = parse(stop, argv, argc, &b, pos2, &npos2);
        CHECK(rc2 == rc);
        if (rc != 0)
            continue;
        CHECK(npos2 == npos);
        CHECK(a.n == 42 || (a.n >= -5 && a.n <= 100));
        CHECK(a.ratio == 0.5 || (a.ratio >= 0 && a.ratio <= 1));
        CHECK(a.name == NULL || in_argv(a.name, argv, argc));
        CHECK(a.n == b.n && a.json == b.json && a.name == b.name);
        CHECK(memcmp(&a.ratio, &b.ratio, sizeof a.ratio) == 0);
        if (stop) {
            CHECK(npos >= 1 && npos <= argc);
            continue;
        }
        CHECK(npos >= 0 && npos <= MAXPOS);
        int from = 1; /* positionals are argv's words, in order */
        for (int i = 0; i < npos; i++) {
            CHECK(pos[i] == pos2[i]);
            while (from < argc && argv[from] != pos[i])
                from++;
            CHECK(from < argc);
            from++;
        }
    }
    free(text);
    return 0;
}
