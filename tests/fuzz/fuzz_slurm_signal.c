/*
 * fuzz_slurm_signal.c -- libFuzzer harness for signals as Slurm's commands
 * name them (al_sl_signum: "USR1", "SIGUSR1", "10") and sbatch's
 * --signal=[{B|R}:]SIG[@TIME] (al_sl_signal_spec, src/cli/slurm/format.c).
 * The input, up to a NUL, is the text.  Checks:
 *   - a signal's number is -1 or 1..64, and a name's is its number's too
 *     ("SIG" + the name, any case, gives the same number);
 *   - a refused spec leaves the out-parameters alone; an accepted one has
 *     a signal 1..64 and a time -1..65535, -1 only with R:.
 * Corpus: tests/fuzz/corpus/slurm_signal.
 */
#include <ctype.h>
#include <strings.h>

#include "fuzz.h"
#include "slurm_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    int n = al_sl_signum(s);
    CHECK(n == -1 || (n >= 1 && n <= 64));
    if (n > 0 && !isdigit((unsigned char)s[0]) && strlen(s) < 64) {
        char with[80];
        snprintf(with, sizeof with, "sig%s", s);
        CHECK(strncasecmp(s, "sig", 3) == 0 || al_sl_signum(with) == n);
    }
    bool batch = true;
    int sig = -7;
    long when = -7;
    if (!al_sl_signal_spec(s, &batch, &sig, &when)) {
        CHECK(batch && sig == -7 && when == -7);
    } else {
        CHECK(sig >= 1 && sig <= 64);
        CHECK(when >= -1 && when <= 65535);
        CHECK(when != -1 || strchr(s, 'R') != NULL);
    }
    free(s);
    return 0;
}
