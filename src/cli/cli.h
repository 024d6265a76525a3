/*
 * cli.h -- the subcommands of the `allot` command.  Each lives in its own
 * file (cli_<name>.c) and is listed in the table in main.c.  A subcommand
 * gets argv without the program name (argv[0] is the subcommand's name) and
 * returns the process exit status: 0 success, 1 failure, 2 usage error.
 */
#ifndef AL_CLI_H
#define AL_CLI_H

int al_cli_sim(int argc, char **argv);
/* The running system: cli_server.c, cli_dev.c, cli_submit.c,
 * cli_jobs.c, cli_cluster.c, cli_admin.c. */
int al_cli_server(int argc, char **argv);
int al_cli_agent(int argc, char **argv);
int al_cli_dev(int argc, char **argv);
int al_cli_submit(int argc, char **argv);
int al_cli_ls(int argc, char **argv);
int al_cli_show(int argc, char **argv);
int al_cli_cancel(int argc, char **argv);
int al_cli_hold(int argc, char **argv);
int al_cli_release(int argc, char **argv);
int al_cli_logs(int argc, char **argv);
int al_cli_nodes(int argc, char **argv);
int al_cli_queues(int argc, char **argv);
int al_cli_token(int argc, char **argv);
int al_cli_queue(int argc, char **argv);
int al_cli_node(int argc, char **argv);

#endif /* AL_CLI_H */
