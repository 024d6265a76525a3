/*
 * cli.h -- the subcommands of the `allot` command.  Each lives in its own
 * file (cli_<name>.c) and is listed in the table in main.c.  A subcommand
 * gets argv without the program name (argv[0] is the subcommand's name) and
 * returns the process exit status: 0 success, 1 failure, 2 usage error.
 */
#ifndef AL_CLI_H
#define AL_CLI_H

#include <jansson.h>
#include <stdbool.h>

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
int al_cli_suspend(int argc, char **argv);
int al_cli_resume(int argc, char **argv);
int al_cli_logs(int argc, char **argv);
int al_cli_nodes(int argc, char **argv);
int al_cli_queues(int argc, char **argv);
int al_cli_token(int argc, char **argv);
int al_cli_queue(int argc, char **argv);
int al_cli_node(int argc, char **argv);
int al_cli_report(int argc, char **argv);
int al_cli_history(int argc, char **argv);
/* cli_pipeline.c: allot pipeline submit|ls|show|cancel|retry */
int al_cli_pipeline(int argc, char **argv);
extern const struct al_opt_cmd al_cli_pipeline_cmd;
/* Users' settings and groups: cli_users.c. */
int al_cli_user(int argc, char **argv);
int al_cli_group(int argc, char **argv);
/* `allot queue set`'s --members (the whole list; NULL: the body's as it
 * is) and --add-member into body's "members"; false after printing what
 * was wrong. */
bool al_cli_queue_members(json_t *body, const char *members, const char *add);
/* `allot queue set`'s gpu.MODEL=N (spec is MODEL=N) into body's
 * model_quotas.MODEL.field; false after printing what was wrong. */
bool al_cli_model_quota(json_t *body, const char *field, const char *spec);
/* Warns on stderr of each GPU model in body's model_quotas that no node
 * of the cluster has (a quota on 'H100' does not count 'H100-80GB'). */
struct al_client;
void al_cli_model_quota_check(struct al_client *c, const json_t *body);
/* `allot queues`' second table: each queue's decayed usage behind fair
 * share, its per-model quotas and its members. */
void al_cli_queues_policy(const json_t *queues);
/* cli_events.c: `allot events`, and its reader of server-sent events. */
int al_cli_events(int argc, char **argv);
extern const struct al_opt_cmd al_cli_events_cmd;
typedef struct al_cli_sse {
    char *buf;                     /* the message's copy, owned */
    size_t len;                    /* its length (it may hold NULs) */
    const char *event, *data, *id; /* into buf, or NULL when absent */
} al_cli_sse_t;
int al_cli_sse_next(const char *text, size_t len, size_t *off, al_cli_sse_t *m);
void al_cli_sse_fini(al_cli_sse_t *m);
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
    al_cli_attach_cmd, al_cli_exec_cmd, al_cli_port_forward_cmd,
    al_cli_user_cmd, al_cli_group_cmd, al_cli_suspend_cmd, al_cli_resume_cmd;

#endif /* AL_CLI_H */
