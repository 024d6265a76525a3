/*
 * agent_cmd.c -- `allot agent`'s options and --help text, data only, in a
 * file of their own: the allot command lists them in its help without
 * linking the agent, which runs in allot-daemon.
 *
 * May call: nothing (src/common's option and daemon tables' types only).
 */
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "agent_cmd.h"
#include "opt.h"

#define A(f) offsetof(agent_args_t, f)

static const al_opt_t agent_opts[] = {
    { .name = "--server",
      .kind = AL_OPT_STR,
      .off = A(server),
      .arg = "URL",
      .help = "the controller",
      .flags = AL_OPT_REQUIRED },
    { .name = "--ca",
      .kind = AL_OPT_STR,
      .off = A(ca),
      .arg = "FILE",
      .help = "the CA (PEM) that signs an https controller's certificate "
              "(default: the system's store)" },
    { .name = "--join-token",
      .kind = AL_OPT_STR,
      .off = A(token),
      .arg = "T",
      .help = "the join token (the server wrote it to STATE/join-token; "
              "default: ALLOT_JOIN_TOKEN)",
      .flags = AL_OPT_BRIEF },
    { .name = "--join-token-file",
      .kind = AL_OPT_STR,
      .off = A(token_file),
      .arg = "F",
      .help = "read the join token from F" },
    { .name = "--name",
      .kind = AL_OPT_STR,
      .off = A(name),
      .arg = "NAME",
      .help = "the node's name (default: hostname)" },
    { .name = "--addr",
      .kind = AL_OPT_STR,
      .off = A(addr),
      .arg = "ADDR",
      .help = "where other nodes reach this one (default: hostname)" },
    { .name = "--state",
      .kind = AL_OPT_STR,
      .off = A(state),
      .arg = "DIR",
      .help = "the state directory (default: agent-NAME in the user's data "
              "directory)" },
    { .name = "--fake-gpus",
      .kind = AL_OPT_STR,
      .off = A(fake),
      .arg = "NxMODEL[/nvlK]",
      .help = "declare emulated GPUs (/nvlK: K per NVLink domain, "
              "8xH100-80GB/nvl4; default one domain)",
      .flags = AL_OPT_BRIEF },
    { .name = "--fallback-gpus",
      .kind = AL_OPT_STR,
      .off = A(fallback),
      .arg = "NxMODEL[/nvlK]",
      .help = "declare emulated GPUs only when NVML finds none" },
    { .name = "--cpus",
      .kind = AL_OPT_STR,
      .off = A(cpus),
      .arg = "N",
      .help = "CPU cores to offer (default: the machine's)" },
    { .name = "--pool",
      .kind = AL_OPT_STR,
      .off = A(pool),
      .arg = "POOL",
      .help = "the node pool this node belongs to (default: none)" },
    { .name = "--label",
      .kind = AL_OPT_STR,
      .off = A(labels),
      .arg = "K=V,...",
      .help = "the node's labels, which jobs' --constraint match and "
              "--topology of the server reads (rack=r1,ib=yes)" },
    { .name = "--no-run-as-user",
      .kind = AL_OPT_FLAG,
      .off = A(no_run_as_user),
      .help = "run tasks as the agent's own user" },
    /* The default when root; accepted for scripts written before. */
    { .name = "--run-as-user",
      .kind = AL_OPT_FLAG,
      .off = A(run_as_user),
      .flags = AL_OPT_HIDDEN },
    { .name = "--probe",
      .kind = AL_OPT_FLAG,
      .off = A(probe),
      .help = "print what this node would offer as JSON and exit" },
    { .name = "--launch-timeout",
      .kind = AL_OPT_INT,
      .off = A(launch_timeout),
      .min = 100,
      .max = INT64_C(86400000),
      .arg = "MS",
      .help = "kill a task that has not reached its program by then "
              "(default 10000)" },
    { .name = "--telemetry-ms",
      .kind = AL_OPT_INT,
      .off = A(telemetry_ms),
      .min = 100,
      .max = INT64_C(3600000),
      .arg = "MS",
      .help = "how often GPUs are sampled and reported (default 10000)" },
    { .name = "--fence-timeout",
      .kind = AL_OPT_INT,
      .off = A(fence_ms),
      .min = 0,
      .max = INT64_C(86400000),
      .arg = "MS",
      .help = "with no answer from the controller for MS while tasks run, "
              "stop them (SIGTERM, SIGKILL after the grace period): set it "
              "below the controller's --node-timeout less the grace, so that "
              "a node cut off has stopped its jobs before they are requeued "
              "elsewhere (default 0: never)" },
    { .name = "--cgroup-root",
      .kind = AL_OPT_STR,
      .off = A(cgroup_root),
      .arg = "PATH",
      .help = "run each task in a cgroup of its own under PATH, a cgroup "
              "path (\"/allot\") or one relative to the agent's own cgroup, "
              "limited to its job's --cpus and --mem (default: tasks are not "
              "confined)" },
    { .name = "--cgroup-pids-max",
      .kind = AL_OPT_INT,
      .off = A(pids_max),
      .min = 0,
      .max = INT64_C(4194304),
      .arg = "N",
      .help = "with --cgroup-root, at most N processes and threads per task "
              "(default 0: no limit)" },
    { .name = "--gpu-dev-dir",
      .kind = AL_OPT_STR,
      .off = A(gpu_dev_dir),
      .arg = "DIR",
      .help = "where the GPUs' device nodes nvidiaN are, which --cgroup-root "
              "keeps each task from opening but its own (default /dev)" },
    { .name = "--cgroup-devices",
      .kind = AL_OPT_STR,
      .off = A(cgroup_devices),
      .arg = "auto|bpf|none",
      .help = "with --cgroup-root, how a task is kept off the other GPUs' "
              "nodes: auto (default) a BPF device program on cgroup v2, the "
              "devices controller on v1; bpf the program on the v2 tree, on "
              "v1 nodes too (hybrid); none not at all" },
    { .name = "--mps",
      .kind = AL_OPT_FLAG,
      .off = A(mps),
      .help = "enforce fractional GPUs with NVIDIA MPS: a control daemon per "
              "GPU with fractional tasks, each task capped to its share of "
              "the SMs and of the GPU's memory" },
    { .name = "--mps-control",
      .kind = AL_OPT_STR,
      .off = A(mps_control),
      .arg = "PROGRAM",
      .help = "the MPS control program (default: nvidia-cuda-mps-control, "
              "searched in PATH)" },
    { .name = "--podman",
      .kind = AL_OPT_STR,
      .off = A(podman),
      .arg = "PROGRAM",
      .help = "runs jobs' OCI images (default: podman, searched in PATH)" },
    { .name = "--apptainer",
      .kind = AL_OPT_STR,
      .off = A(apptainer),
      .arg = "PROGRAM",
      .help = "runs jobs' .sif images (default: apptainer)" },
    { .name = "--container-args",
      .kind = AL_OPT_STR,
      .off = A(container_args),
      .arg = "\"ARG ...\"",
      .help = "more arguments for `podman run`, split at spaces (a node's "
              "runtime, ulimits, mounts: \"--runtime runc\")" },
    AL_DAEMON_OPTS(agent_args_t, d),
    { .name = NULL },
};

#undef A

const al_opt_cmd_t al_agent_cmd = {
    .name = "agent",
    .opts = agent_opts,
    .about =
        "A root agent runs each task as the Unix user who submitted it (who\n"
        "must exist on the node; the task fails otherwise); --no-run-as-user\n"
        "runs tasks as the agent's own user, as an agent that is not root\n"
        "always does.\n"
        "A task that has not reached its program after --launch-timeout ms\n"
        "(its working directory or program on a file system that does not\n"
        "answer) is killed and fails, and the next tasks start.\n"
        "allot agent --probe [--fake-gpus ...] prints what this node would\n"
        "offer (CPUs, memory, GPUs with NUMA node, NVLink domain and a\n"
        "telemetry sample) as JSON and exits.\n"
        "Emulated GPUs report the utilisation written (a percentage) in\n"
        "STATE/gpu-util/INDEX, when that file exists.\n",
};
