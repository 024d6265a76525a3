/*
 * fuzz_queues.c -- libFuzzer harness for the --queues-file parser
 * (src/sim/queues.c).  Build and run as fuzz_trace.c's header says, with
 * corpus tests/fuzz/corpus/queues.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    al_queues_t *q = NULL;
    char *cause = NULL;
    if (al_queues_parse("fuzz.txt", (const char *)data, size, &q, &cause) == 0)
        al_queues_destroy(q);
    else
        free(cause);
    return 0;
}
