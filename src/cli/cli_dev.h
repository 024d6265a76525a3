/*
 * cli_dev.h -- `allot dev`: its command line (the structure the options of
 * cli_dev_cmd.c store into) and its body, al_dev_main() (cli_dev.c), which
 * runs in allot-daemon as it starts a controller in its own process.
 */
#ifndef AL_CLI_DEV_H
#define AL_CLI_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"

/* The GPUs the agent emulates when NVML finds none. */
#define DEV_FAKE_GPUS "8xH100-80GB"

typedef struct dev_args {
    const char *listen, *metrics_listen, *state, *store, *fake, *name;
    const char *router_listen; /* inference services' router, or NULL */
    int64_t nodes;
    bool no_agent, demo;
    al_daemon_t d;
} dev_args_t;

/* `allot dev [options]`: runs until SIGINT/SIGTERM; its options are
 * al_cli_dev_cmd (cli.h).  Returns an exit status. */
int al_dev_main(int argc, char **argv);

#endif /* AL_CLI_DEV_H */
