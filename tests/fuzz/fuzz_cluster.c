/*
 * fuzz_cluster.c -- libFuzzer harness for the --cluster file parser
 * (src/sim/cluster.c).  Build and run as fuzz_trace.c's header says, with
 * corpus tests/fuzz/corpus/cluster.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    al_cluster_t *c = NULL;
    char *cause = NULL;
    /* Large clusters are valid but slow to build; the parser is the point. */
    if (al_cluster_parse("fuzz.txt", (const char *)data, size, &c, &cause) == 0)
        al_cluster_destroy(c);
    else
        free(cause);
    return 0;
}
