/*
 * cli.h -- the subcommands of the `allot` command.  Each lives in its own
 * file (cli_<name>.c) and is listed in the table in main.c.  A subcommand
 * gets argv without the program name (argv[0] is the subcommand's name) and
 * returns the process exit status: 0 success, 1 failure, 2 usage error.
 */
#ifndef AL_CLI_H
#define AL_CLI_H

int al_cli_sim(int argc, char **argv);
/* The running system: cli_submit.c, cli_jobs.c, cli_cluster.c,
 * cli_admin.c; the daemons' three (cli_server.c) exec allot-daemon, which
 * runs them (main_daemon.c, cli_dev.c). */
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
int al_cli_report(int argc, char **argv);
int al_cli_history(int argc, char **argv);
/* Inference services: cli_svc.c. */
int al_cli_serve(int argc, char **argv);
int al_cli_router(int argc, char **argv);
extern const struct al_opt_cmd al_cli_serve_cmd;
/* Interactive sessions: cli_run.c. */
int al_cli_run(int argc, char **argv);
int al_cli_attach(int argc, char **argv);
int al_cli_exec(int argc, char **argv);
int al_cli_port_forward(int argc, char **argv);

/* Their options and --help texts (common/opt.h), for `allot --help`; the
 * daemons' are al_server_cmd and al_agent_cmd, submit's al_script_cmd. */
extern const struct al_opt_cmd al_cli_sim_cmd, al_cli_dev_cmd, al_cli_ls_cmd,
    al_cli_show_cmd, al_cli_cancel_cmd, al_cli_hold_cmd, al_cli_release_cmd,
    al_cli_logs_cmd, al_cli_nodes_cmd, al_cli_queues_cmd, al_cli_token_cmd,
    al_cli_queue_cmd, al_cli_node_cmd, al_cli_report_cmd, al_cli_history_cmd,
    al_cli_attach_cmd, al_cli_exec_cmd, al_cli_port_forward_cmd;

#endif /* AL_CLI_H */
