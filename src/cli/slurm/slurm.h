/*
 * slurm.h -- the door to Slurm's commands on allot (sbatch, squeue,
 * scancel, sinfo, sacct, scontrol, sacctmgr, srun, salloc): the allot
 * binary answers to their names (main.c asks al_slurm_main() first), and
 * `allot slurm-commands DIR` links those names to it.
 */
#ifndef AL_SLURM_H
#define AL_SLURM_H

/* When argv[0]'s last component is the name of a Slurm command, runs it
 * and returns its exit status; otherwise returns -1 and does nothing. */
int al_slurm_main(int argc, char **argv);

/* `allot slurm-commands DIR`: links every Slurm command name in DIR to
 * this program. */
int al_cli_slurm_commands(int argc, char **argv);
extern const struct al_opt_cmd al_cli_slurm_commands_cmd;

#endif /* AL_SLURM_H */
