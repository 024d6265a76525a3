/*
 * fuzz_trace.c -- libFuzzer harness for the trace CSV parser (src/sim/trace.c)
 * and, for inputs that parse into a few jobs, one whole simulation on the
 * real core, so the event loop sees odd traces too (zero durations, equal
 * times, fractional and huge GPU counts).
 *
 * libFuzzer build (what scripts/fuzz does):
 *   CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined
 * \ -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link ninja -C build-fuzz &&
 * build-fuzz/tests/fuzz/fuzz_trace tests/fuzz/corpus/trace Without -Dfuzz=true,
 * replay.c runs this harness over its seed corpus as an ordinary meson test
 * (fuzz-replay-trace).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    al_trace_t *t = NULL;
    char *cause = NULL;
    if (al_trace_parse("fuzz.csv", (const char *)data, size, NULL, &t,
                       &cause) != 0) {
        free(cause);
        return 0;
    }
    if (t->njobs <= 32) {
        al_cluster_t *c = al_cluster_homogeneous(2, 4, NULL, 1, 8, 64);
        al_sim_opts_t o;
        al_sim_opts_default(&o);
        o.policy = (al_policy_t)(size % AL_POLICY_COUNT);
        o.qmode = size % 2 ? AL_QMODE_COLUMN : AL_QMODE_HASH;
        o.nqueues = 3;
        al_sim_result_t *r = NULL;
        if (al_sim_run(t, c, &o, &r, &cause) == 0) {
            al_sim_summary_t s;
            al_report_summary(r, &s);
        } else {
            free(cause);
        }
        al_sim_result_destroy(r);
        al_cluster_destroy(c);
    }
    al_trace_destroy(t);
    return 0;
}
