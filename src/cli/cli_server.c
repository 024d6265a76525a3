/* cli_server.c -- `allot server` and `allot agent`: the daemons' doors. */
#include "agent.h"
#include "cli.h"
#include "server.h"

int
al_cli_server(int argc, char **argv)
{
    return al_server_main(argc, argv);
}

int
al_cli_agent(int argc, char **argv)
{
    return al_agent_main(argc, argv);
}
