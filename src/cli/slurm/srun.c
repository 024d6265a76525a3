/*
 * srun.c -- `srun`.  Outside a job it would submit and attach as `allot
 * run` does, inside one it would start a step in the job's allocation as
 * `allot exec` does; neither exists yet, so srun says so and exits 1
 * rather than run anything differently from Slurm.
 *
 * May call: nothing but stdio.
 */
#include <stdio.h>
#include <stdlib.h>

#include "slurm_int.h"

int
al__srun(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (getenv("SLURM_JOB_ID") != NULL)
        fprintf(stderr, "srun: error: job steps (srun inside a job) are not "
                        "available on allot yet: run the command directly, "
                        "once per task\n");
    else
        fprintf(stderr, "srun: error: interactive jobs (srun outside a job) "
                        "are not available on allot yet: submit with "
                        "sbatch --wrap\n");
    return 1;
}
