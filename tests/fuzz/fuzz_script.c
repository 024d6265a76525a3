/*
 * fuzz_script.c -- libFuzzer harness for the #ALLOT and #SBATCH lines of a
 * job script (`allot submit job.sh`): al_script_directives in
 * src/cli/script.c (with its translation of Slurm's options), and
 * through it the option parser (al_opt_parse, src/common/opt.c) and the
 * checks of every value (sizes, durations, counts).  Each input is the
 * text of a script, up to its first NUL (the CLI refuses a script holding
 * one).  Checks:
 *   - the number of errors is the number of error lines printed, each
 *     naming the script and the number of a line that is an #ALLOT or
 *     #SBATCH directive, or the script alone for what its #SBATCH lines
 *     ask together; notes (ignored Slurm options) name #SBATCH lines;
 *   - what was read points into the returned words (the text, or the
 *     room after it where numbers from #SBATCH lines go);
 *   - each value read, on its own, passes the checks it passed line by
 *     line (a merge never yields a value no line had);
 *   - every --env value is a string.
 * Corpus: tests/fuzz/corpus/script.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "script.h"

/* Whether p is NULL or points into [base, base + n]. */
static int
inside(const char *p, const char *base, size_t n)
{
    return p == NULL || (p >= base && p <= base + n);
}

/* The text of line `lineno` (from 1) of text, from its first non-blank. */
static const char *
line_at(const char *text, long lineno)
{
    const char *l = text;
    for (long i = 1; i < lineno && l != NULL; i++) {
        l = strchr(l, '\n');
        if (l != NULL)
            l++;
    }
    return l != NULL ? l + strspn(l, " \t") : NULL;
}

/* Each flag given in a, alone, must pass the resource checks. */
static void
check_each_flag(const al_req_flags_t *f)
{
    const char *const *fields[] = { &f->gpus,   &f->frac,  &f->cpus,
                                    &f->mem,    &f->tasks, &f->after,
                                    &f->tlimit, &f->cls,   &f->model };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (*fields[i] == NULL)
            continue;
        al_req_flags_t one;
        memset(&one, 0, sizeof one);
        size_t off = (size_t)((const char *)fields[i] - (const char *)f);
        memcpy((char *)&one + off, fields[i], sizeof(const char *));
        json_t *body = json_object();
        const char *err = al_script_resources(body, &one);
        CHECK(err == NULL);
        json_decref(body);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    /* Catch what the reader prints: stderr is a plain variable in glibc.
     * Sanitizer reports write to descriptor 2 directly, not through it. */
    char *msgs = NULL;
    size_t msglen = 0;
    FILE *saved = stderr, *mem = open_memstream(&msgs, &msglen);
    CHECK(mem != NULL);
    stderr = mem;
    al_submit_args_t a;
    memset(&a, 0, sizeof a);
    json_t *env = json_object();
    char *words = NULL;
    int errors = al_script_directives("job.sh", text, &a, env, &words);
    stderr = saved;
    CHECK(fclose(mem) == 0);

    CHECK(words != NULL);
    CHECK(errors >= 0);
    int printed = 0;
    for (char *l = msgs; *l != '\0';) {
        long lineno = 0;
        int used = 0;
        char *nl = strchr(l, '\n');
        CHECK(nl != NULL);
        if (strncmp(l, "allot submit: job.sh: #SBATCH", 29) == 0) {
            printed++; /* about the #SBATCH lines together */
            l = nl + 1;
            continue;
        }
        CHECK(sscanf(l, "allot submit: job.sh:%ld: %n", &lineno, &used) == 1 &&
              used > 0);
        const char *src = line_at(text, lineno);
        bool note = strncmp(l + used, "note: ", 6) == 0;
        CHECK(lineno >= 1 && src != NULL);
        CHECK(strncmp(src, "#SBATCH", 7) == 0 ||
              (!note && strncmp(src, "#ALLOT", 6) == 0));
        printed += !note;
        l = nl + 1;
    }
    CHECK(printed == errors);

    size_t n = strlen(text);
    const char *const strs[] = { a.f.gpus,  a.f.frac,  a.f.cpus,   a.f.mem,
                                 a.f.tasks, a.f.after, a.f.tlimit, a.f.cls,
                                 a.f.model, a.queue,   a.name,     a.server,
                                 a.token,   a.envopt };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        CHECK(inside(strs[i], words, n + 128));
    check_each_flag(&a.f);
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v) CHECK(json_is_string(v) && k[0] != '\0');

    json_decref(env);
    free(words);
    free(msgs);
    free(text);
    return 0;
}
