/*
 * fuzz_fakegpus.c -- libFuzzer harness for the spec of emulated GPUs
 * (`allot agent --fake-gpus NxMODEL[/nvlK]`, al_platform_fake_gpus in
 * src/agent/fake.c).  Each input is the spec's text.  Checks: an accepted
 * spec gives at most AL_PLATFORM_MAX_GPUS devices of one model, their
 * NVLink domains numbered from 0 without gaps and never falling; a refused
 * one leaves the GPUs as they were and says why.
 * Corpus: tests/fuzz/corpus/fakegpus.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "platform.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char spec[257];
    memcpy(spec, data, size);
    spec[size] = '\0';
    static al_platform_info_t info;
    memset(&info, 0, sizeof info);
    info.ngpus = 3;
    char *cause = NULL;
    if (al_platform_fake_gpus(&info, spec, "n1", &cause) != 0) {
        CHECK(cause != NULL && cause[0] != '\0');
        CHECK(info.ngpus == 3 && !info.emulated);
        free(cause);
        return 0;
    }
    CHECK(cause == NULL);
    CHECK(info.emulated && info.ngpus >= 0 &&
          info.ngpus <= AL_PLATFORM_MAX_GPUS);
    for (int i = 0; i < info.ngpus; i++) {
        CHECK(info.gpus[i].model[0] != '\0');
        CHECK(strcmp(info.gpus[i].model, info.gpus[0].model) == 0);
        CHECK(info.gpus[i].mem_bytes > 0);
        CHECK(info.gpus[i].nvlink >= 0);
        if (i == 0)
            CHECK(info.gpus[i].nvlink == 0);
        else
            CHECK(info.gpus[i].nvlink == info.gpus[i - 1].nvlink ||
                  info.gpus[i].nvlink == info.gpus[i - 1].nvlink + 1);
    }
    return 0;
}
