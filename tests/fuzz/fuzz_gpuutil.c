/*
 * fuzz_gpuutil.c -- libFuzzer harness for the utilisation file of an
 * emulated GPU (STATE/gpu-util/INDEX, al_platform_util_parse in
 * src/agent/fake.c).  Each input is the file's text.  Checks: an accepted
 * value is a percentage 0..100 and reads the same as the number written
 * back; a refusal leaves the result alone.
 * Corpus: tests/fuzz/corpus/gpuutil.
 */
#include <stdio.h>

#include "fuzz.h"
#include "platform.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int pct = -7;
    if (al_platform_util_parse((const char *)data, size, &pct) != 0) {
        CHECK(pct == -7);
        return 0;
    }
    CHECK(pct >= 0 && pct <= 100);
    char text[16];
    int n = snprintf(text, sizeof text, "%d\n", pct), again = -1;
    CHECK(al_platform_util_parse(text, (size_t)n, &again) == 0);
    CHECK(again == pct);
    return 0;
}
