/*
 * salloc.c -- `salloc`: an interactive allocation needs `allot run`'s
 * sessions, which do not exist yet; salloc says so and exits 1.
 *
 * May call: nothing but stdio.
 */
#include <stdio.h>

#include "slurm_int.h"

int
al__salloc(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "salloc: error: interactive allocations are not "
                    "available on allot yet: submit with sbatch\n");
    return 1;
}
