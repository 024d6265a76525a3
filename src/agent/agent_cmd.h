/*
 * agent_cmd.h -- `allot agent`'s command line: the structure its options
 * (agent_cmd.c) store into, read by al_agent_main() (agent.c).
 */
#ifndef AL_AGENT_CMD_H
#define AL_AGENT_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"

typedef struct agent_args {
    const char *server, *ca, *token, *token_file, *name, *addr, *state, *fake,
        *fallback, *cpus, *pool, *labels;
    bool no_run_as_user, run_as_user, probe;
    int64_t launch_timeout, telemetry_ms, fence_ms;
    /* Confinement (cgroup.c): the subtree, the tasks' process limit, where
     * the GPUs' device nodes are. */
    const char *cgroup_root, *gpu_dev_dir;
    const char *cgroup_devices; /* --cgroup-devices: auto, bpf, none */
    int64_t pids_max;
    /* mps.c: run fractional tasks under MPS, with this control program. */
    bool mps;
    const char *mps_control;
    /* container.c: the runtimes and extra arguments of `podman run`. */
    const char *podman, *apptainer, *container_args;
    al_daemon_t d;
} agent_args_t;

#endif /* AL_AGENT_CMD_H */
