/*
 * main.c -- the `allot` command: a table of subcommands (tmux's cmd_entry).
 * To add one, write cli_<name>.c, declare it in cli.h and add a row here.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *usage; /* one line: arguments and what it does */
} subcommand_t;

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const subcommand_t subcommands[] = {
    { .name = "sim",
      .fn = al_cli_sim,
      .usage = "--trace FILE.csv [cluster] [queues] [--policy P] [--json] "
               "[--report out.html] [--timeseries out.csv]\n"
               "        replay a job trace through the scheduling core in "
               "virtual time" },
    { .name = "dev",
      .fn = al_cli_dev,
      .usage = "[--listen HOST:PORT] [--fake-gpus NxMODEL]\n"
               "        run a controller and an agent here; sets up the CLI" },
    { .name = "server",
      .fn = al_cli_server,
      .usage = "[--listen HOST:PORT] [--state DIR]\n"
               "        run the controller" },
    { .name = "agent",
      .fn = al_cli_agent,
      .usage = "--server URL --join-token T [--fake-gpus NxMODEL]\n"
               "        run a node agent" },
    { .name = "submit",
      .fn = al_cli_submit,
      .usage = "[--gpus N] [--cpus C] [--mem M] [--tasks N] [--queue Q] "
               "[--class C] -- cmd...\n"
               "        submit a job; prints its id" },
    { .name = "ls",
      .fn = al_cli_ls,
      .usage = "[--all] [--state S] [--queue Q] [--json]\n"
               "        list jobs, where they run or why they wait" },
    { .name = "show",
      .fn = al_cli_show,
      .usage = "[--json] JOBID\n        a job's details and history" },
    { .name = "cancel",
      .fn = al_cli_cancel,
      .usage = "JOBID...\n        cancel jobs" },
    { .name = "hold",
      .fn = al_cli_hold,
      .usage = "JOBID...\n        keep pending jobs from starting" },
    { .name = "release",
      .fn = al_cli_release,
      .usage = "JOBID...\n        release held jobs" },
    { .name = "logs",
      .fn = al_cli_logs,
      .usage = "[-f] [--task N] JOBID\n        a task's output" },
    { .name = "nodes",
      .fn = al_cli_nodes,
      .usage = "[--json]\n        nodes, their GPUs and state" },
    { .name = "queues",
      .fn = al_cli_queues,
      .usage = "[--json]\n        queues: deserved, fair share, allocated" },
    { .name = "token",
      .fn = al_cli_token,
      .usage = "create --user NAME [--role user|admin]\n"
               "        create an API token (admins)" },
    { .name = "queue",
      .fn = al_cli_queue,
      .usage = "set|delete NAME [--deserved gpu=N,...] [--limit ...]\n"
               "        create, change or delete a queue (admins)" },
    { .name = "node",
      .fn = al_cli_node,
      .usage = "drain|resume NAME\n"
               "        stop or resume placing work on a node (admins)" },
    { .name = "help", .fn = cmd_help, .usage = "\n        this list" },
    { .name = "version",
      .fn = cmd_version,
      .usage = "\n        print the version" },
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void
usage(FILE *f)
{
    fprintf(f, "usage: allot <command> [arguments]\n\ncommands:\n");
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        fprintf(f, "  allot %s %s\n", subcommands[i].name,
                subcommands[i].usage);
    fprintf(f, "\n`allot <command> --help` describes a command's options.\n");
}

static int
cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    usage(stdout);
    return 0;
}

static int
cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("allot %s\n", ALLOT_VERSION);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    if (strcmp(name, "--version") == 0)
        name = "version";
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        if (strcmp(subcommands[i].name, name) == 0)
            return subcommands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "allot: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
