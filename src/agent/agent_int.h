/* agent_int.h -- internals shared by the agent's files (agent.c, launch.c). */
#ifndef AL_AGENT_INT_H
#define AL_AGENT_INT_H

#include <sys/types.h>

#include "platform.h"

/* nvml.c: fills info->gpus from NVML when the driver's library loads;
 * returns the number of GPUs found (0 without NVML). */
int al__nvml_probe(al_platform_info_t *info);

/* What a task needs to start. */
typedef struct al__launch {
    const char *ident;    /* "JOB TASK RESTART", first in the record */
    char *const *argv;    /* NULL-terminated; argv[0] searched in PATH */
    const char *cwd;      /* or NULL: the agent's */
    char *const *envp;    /* NULL-terminated */
    const char *log_path; /* stdout and stderr, appended */
    /* The task's record: the monitor writes "IDENT PID START DEVICES\n"
     * (its pid and start time, the task's GPU mask), replacing what was
     * there, before the task starts, so that
     * an agent restarted at any moment finds every task it launched, and
     * appends "CODE SIGNAL\n" when the task has ended.  One file, not two:
     * creating and removing files per task is what costs most when tasks
     * are short. */
    const char *state_path;
    unsigned long long devices;
    const char *user; /* run as this user when root, or NULL */
} al__launch_t;

/*
 * Starts a task: forks a monitor in a new session (so the task and all it
 * spawns form one process group, pgid = the monitor's pid), which forks
 * and execs the task, waits for it, appends its status to state_path and
 * exits.  Signals are blocked around fork() and restored in the children;
 * inherited descriptors are closed.  Returns the monitor's pid, or -1 with
 * a message in *cause.
 */
pid_t al__launch(const al__launch_t *l, char **cause);

#endif /* AL_AGENT_INT_H */
