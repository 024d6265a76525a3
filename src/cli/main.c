/*
 * main.c -- the `allot` command: a table of subcommands (tmux's cmd_entry).
 * To add one, write cli_<name>.c with its function and its option table
 * (an al_opt_cmd_t), declare both in cli.h and add a row here; the list
 * `allot --help` prints is made from the rows and the tables.
 */
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "cli.h"
#include "opt.h"
#include "script.h"
#include "server.h"
#include "slurm/slurm.h"

typedef struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
    /* Its options, whose required and brief ones make its line in the
     * list; NULL for a command without options. */
    const al_opt_cmd_t *cmd;
    const char *summary; /* what it does, in a few words */
} subcommand_t;

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const subcommand_t subcommands[] = {
    { .name = "sim",
      .fn = al_cli_sim,
      .cmd = &al_cli_sim_cmd,
      .summary = "replay a job trace through the scheduling core in virtual "
                 "time" },
    { .name = "dev",
      .fn = al_cli_dev,
      .cmd = &al_cli_dev_cmd,
      .summary = "run a controller and an agent here; sets up the CLI" },
    { .name = "server",
      .fn = al_cli_server,
      .cmd = &al_server_cmd,
      .summary = "run the controller" },
    { .name = "agent",
      .fn = al_cli_agent,
      .cmd = &al_agent_cmd,
      .summary = "run a node agent" },
    { .name = "submit",
      .fn = al_cli_submit,
      .cmd = &al_script_cmd,
      .summary = "submit a job; prints its id" },
    { .name = "run",
      .fn = al_cli_run,
      .cmd = &al_script_cmd,
      .summary = "run a command as a job, this terminal connected to it (-i "
                 "stdin, -t a terminal)" },
    { .name = "attach",
      .fn = al_cli_attach,
      .cmd = &al_cli_attach_cmd,
      .summary = "connect this terminal to a job of allot run again" },
    { .name = "exec",
      .fn = al_cli_exec,
      .cmd = &al_cli_exec_cmd,
      .summary = "run a command inside a running job's allocation" },
    { .name = "port-forward",
      .fn = al_cli_port_forward,
      .cmd = &al_cli_port_forward_cmd,
      .summary = "forward a local port to a port on a job's node" },
    { .name = "ls",
      .fn = al_cli_ls,
      .cmd = &al_cli_ls_cmd,
      .summary = "list jobs, where they run or why they wait" },
    { .name = "show",
      .fn = al_cli_show,
      .cmd = &al_cli_show_cmd,
      .summary = "a job's details and history" },
    { .name = "cancel",
      .fn = al_cli_cancel,
      .cmd = &al_cli_cancel_cmd,
      .summary = "cancel jobs" },
    { .name = "hold",
      .fn = al_cli_hold,
      .cmd = &al_cli_hold_cmd,
      .summary = "keep pending jobs from starting" },
    { .name = "release",
      .fn = al_cli_release,
      .cmd = &al_cli_release_cmd,
      .summary = "release held jobs" },
    { .name = "suspend",
      .fn = al_cli_suspend,
      .cmd = &al_cli_suspend_cmd,
      .summary = "stop a running job's processes, keeping its GPUs" },
    { .name = "resume",
      .fn = al_cli_resume,
      .cmd = &al_cli_resume_cmd,
      .summary = "continue a suspended job" },
    { .name = "logs",
      .fn = al_cli_logs,
      .cmd = &al_cli_logs_cmd,
      .summary = "a task's output" },
    { .name = "pipeline",
      .fn = al_cli_pipeline,
      .cmd = &al_cli_pipeline_cmd,
      .summary = "a whole workflow of stages in one submission: submit, ls, "
                 "show, cancel, retry" },
    { .name = "nodes",
      .fn = al_cli_nodes,
      .cmd = &al_cli_nodes_cmd,
      .summary = "nodes, their GPUs and state" },
    { .name = "queues",
      .fn = al_cli_queues,
      .cmd = &al_cli_queues_cmd,
      .summary = "queues: deserved, fair share, allocated" },
    { .name = "history",
      .fn = al_cli_history,
      .cmd = &al_cli_history_cmd,
      .summary = "jobs that ended: times, waits, GPUs, nodes, exits" },
    { .name = "events",
      .fn = al_cli_events,
      .cmd = &al_cli_events_cmd,
      .summary = "job state changes and scheduler decisions, live with -f" },
    { .name = "report",
      .fn = al_cli_report,
      .cmd = &al_cli_report_cmd,
      .summary = "GPU-hours, efficiency, jobs, waits and wastage over a "
                 "period" },
    { .name = "token",
      .fn = al_cli_token,
      .cmd = &al_cli_token_cmd,
      .summary = "create an API token (admins)" },
    { .name = "queue",
      .fn = al_cli_queue,
      .cmd = &al_cli_queue_cmd,
      .summary = "create, change or delete a queue (admins)" },
    { .name = "user",
      .fn = al_cli_user,
      .cmd = &al_cli_user_cmd,
      .summary = "a user's default queue and the queues she may use" },
    { .name = "group",
      .fn = al_cli_group,
      .cmd = &al_cli_group_cmd,
      .summary = "groups of users, for queues' members (admins)" },
    { .name = "node",
      .fn = al_cli_node,
      .cmd = &al_cli_node_cmd,
      .summary = "stop or resume placing work on a node (admins)" },
    { .name = "slurm-commands",
      .fn = al_cli_slurm_commands,
      .cmd = &al_cli_slurm_commands_cmd,
      .summary = "link sbatch, squeue, ... to allot in a directory" },
    { .name = "help", .fn = cmd_help, .summary = "this list" },
    { .name = "version", .fn = cmd_version, .summary = "print the version" },
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void
usage(FILE *f)
{
    fprintf(f, "usage: allot <command> [arguments]\n\ncommands:\n");
    for (size_t i = 0; i < NSUBCOMMANDS; i++) {
        fprintf(f, "  allot %s", subcommands[i].name);
        if (subcommands[i].cmd != NULL)
            al_opt_brief(f, subcommands[i].cmd);
        fprintf(f, "\n        %s\n", subcommands[i].summary);
    }
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
    /* Run as sbatch, squeue, ...: Slurm's commands (src/cli/slurm/). */
    int slurm_rc = al_slurm_main(argc, argv);
    if (slurm_rc >= 0)
        return slurm_rc;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    /* `allot --ca FILE COMMAND ...`: the CA that signs an https server's
     * certificate, for any command (as ALLOT_CA). */
    if (strcmp(argv[1], "--ca") == 0) {
        if (argc < 4) {
            usage(stderr);
            return 2;
        }
        setenv("ALLOT_CA", argv[2], 1);
        argc -= 2;
        argv += 2;
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
