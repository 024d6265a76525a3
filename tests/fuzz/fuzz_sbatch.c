/*
 * fuzz_sbatch.c -- libFuzzer harness for sbatch's options, on its command
 * line and in a script's #SBATCH lines: al_script_sbatch_words and
 * al_script_sbatch_lines (src/cli/script.c, the table `allot submit`
 * shares), and srun's and salloc's command lines (an odd last byte).  Each
 * input, up to its first NUL, is a script's text, and its words (split on
 * blanks) a command line.  Checks:
 *   - the command line stops within it, at a word that is not an option;
 *   - every string read points into the words or the text it came from;
 *   - options refused by name are counted among the errors.
 * Corpus: tests/fuzz/corpus/sbatch.
 */
#include "fuzz.h"
#include "script.h"

static void
check_inside(const al_slurm_req_t *r, const char *lo, const char *hi)
{
    const char *const strs[] = { r->name,       r->partition,   r->cpus,
                                 r->mem,        r->mem_per_cpu, r->time,
                                 r->dep,        r->output,      r->error,
                                 r->account,    r->export_vars, r->chdir,
                                 r->constraint, r->signal,      r->open_mode,
                                 r->wrap,       r->qos,         r->array };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        CHECK(strs[i] == NULL || (strs[i] >= lo && strs[i] <= hi));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    size_t len = strlen(s);
    char *text = malloc(len + 1);
    CHECK(text != NULL);
    memcpy(text, s, len + 1);
    al_slurm_req_t r;
    al_script_slurm_init(&r);
    int errors = al_script_sbatch_lines("fuzz.sh", text, &r);
    CHECK(errors >= r.refused && r.refused >= 0);
    check_inside(&r, text, text + len);
    char *w[64];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, " \t\n", &save); t && n < 64;
         t = strtok_r(NULL, " \t\n", &save))
        w[n++] = t;
    al_script_slurm_init(&r);
    /* srun's and salloc's command lines too: their own options. */
    if (len > 0 && (s[len - 1] & 1))
        r.prog = (s[len - 1] & 2) ? "srun" : "salloc";
    int stop = -1;
    errors = al_script_sbatch_words(w, n, &r, NULL, &stop);
    CHECK(stop >= 0 && stop <= n);
    CHECK(errors >= r.refused);
    if (stop < n && stop > 0 && strcmp(w[stop - 1], "--") != 0)
        CHECK(w[stop][0] != '-' || w[stop][1] == '\0');
    check_inside(&r, s, s + len);
    free(text);
    free(s);
    return 0;
}
