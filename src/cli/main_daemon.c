/*
 * main_daemon.c -- allot-daemon, the program that runs `allot server`,
 * `allot agent` and `allot dev`.  The allot command execs it for those
 * three (cli_server.c) with the same arguments, so that the client commands
 * do not load the controller's libraries.  Installed in libexec, not meant
 * to be run by hand; `allot dev` runs its agents as this same program.
 *
 * May call: server.h, agent.h, cli_dev.c.
 */
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "cli.h"
#include "cli_dev.h"
#include "opt.h"
#include "server.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const al_opt_cmd_t *cmd;
} daemons[] = {
    { "server", al_server_main, &al_server_cmd },
    { "agent", al_agent_main, &al_agent_cmd },
    { "router", al_router_main, &al_router_cmd },
    { "dev", al_dev_main, &al_cli_dev_cmd },
};

#define NDAEMONS (sizeof(daemons) / sizeof(daemons[0]))

int
main(int argc, char **argv)
{
    if (argc >= 2)
        for (size_t i = 0; i < NDAEMONS; i++)
            if (strcmp(daemons[i].name, argv[1]) == 0)
                return daemons[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "allot-daemon runs the daemons of allot; run them as:\n");
    for (size_t i = 0; i < NDAEMONS; i++) {
        fprintf(stderr, "  allot %s", daemons[i].name);
        al_opt_brief(stderr, daemons[i].cmd);
        fputc('\n', stderr);
    }
    return AL_EXIT_USAGE;
}
