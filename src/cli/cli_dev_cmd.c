/*
 * cli_dev_cmd.c -- `allot dev`'s options and --help text, data only, in a
 * file of their own: the allot command lists them in its help, and
 * allot-daemon parses them (cli_dev.c runs a controller, which the allot
 * command does not link).
 *
 * May call: nothing (src/common's option and daemon tables' types only).
 */
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "cli_dev.h"
#include "opt.h"

#define D(f) offsetof(dev_args_t, f)

static const al_opt_t dev_opts[] = {
    { .name = "--listen",
      .kind = AL_OPT_STR,
      .off = D(listen),
      .arg = "HOST:PORT",
      .help = "where the controller listens (default 127.0.0.1:7070)",
      .flags = AL_OPT_BRIEF },
    { .name = "--metrics-listen",
      .kind = AL_OPT_STR,
      .off = D(metrics_listen),
      .arg = "HOST:PORT",
      .help = "also serve GET /metrics here, without a token (see allot "
              "server --help)" },
    { .name = "--router-listen",
      .kind = AL_OPT_STR,
      .off = D(router_listen),
      .arg = "HOST:PORT",
      .help = "serve inference services (allot serve), taking their "
              "requests here (see allot server --help)" },
    { .name = "--state",
      .kind = AL_OPT_STR,
      .off = D(state),
      .arg = "DIR",
      .help = "state directory (default: the user's data directory)" },
    { .name = "--store",
      .kind = AL_OPT_STR,
      .off = D(store),
      .arg = "URI",
      .help = "the controller's state store (see allot server --help)" },
    { .name = "--fake-gpus",
      .kind = AL_OPT_STR,
      .off = D(fake),
      .arg = "NxMODEL[/nvlK]",
      .help = "emulated GPUs, K per NVLink domain with /nvlK (default: "
              "those NVML finds, else " DEV_FAKE_GPUS ")",
      .flags = AL_OPT_BRIEF },
    { .name = "--name",
      .kind = AL_OPT_STR,
      .off = D(name),
      .arg = "NODE",
      .help = "the node's name (default local)" },
    { .name = "--nodes",
      .kind = AL_OPT_INT,
      .off = D(nodes),
      .min = 1,
      .max = 256,
      .arg = "N",
      .help = "N agents, nodes NODE-0 .. NODE-N-1, each with emulated GPUs" },
    { .name = "--no-agent",
      .kind = AL_OPT_FLAG,
      .off = D(no_agent),
      .help = "the controller alone" },
    { .name = "--demo",
      .kind = AL_OPT_FLAG,
      .off = D(demo),
      .help = "also create three queues and a workload that shows idle GPUs "
              "lent to one queue and reclaimed by another" },
    AL_DAEMON_OPTS(dev_args_t, d),
    { .name = NULL },
};

#undef D

const al_opt_cmd_t al_cli_dev_cmd = {
    .name = "dev",
    .opts = dev_opts,
    .about =
        "Starts a controller and an agent (with the GPUs NVML finds, "
        "else\n"
        "emulated " DEV_FAKE_GPUS ", or those of --fake-gpus), writes the\n"
        "server URL and admin token to your config file and runs until\n"
        "interrupted.  --nodes N makes a cluster on one machine.\n",
};
