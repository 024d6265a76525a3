/*
 * agent.h -- the door of the node agent (`allot agent`).
 *
 * The agent registers its node with the controller, then syncs in a loop,
 * level-triggered: each sync reports every task it knows (running, waiting
 * for its GPUs, or exited with its status) and the new part of each task's
 * output; the controller answers with the tasks that should run on the
 * node.  The agent starts what is missing, stops (SIGTERM, then SIGKILL
 * after the grace period) what is no longer wanted, and never starts a
 * task twice: each task runs under a small monitor process that records its
 * exit status in the agent's state directory, so an agent restarted while
 * its tasks run adopts them instead of running them again.
 */
#ifndef AL_AGENT_H
#define AL_AGENT_H

/* `allot agent --server URL --join-token T [options]`.  Returns an exit
 * status (0 ok, 1 failure, 2 usage). */
int al_agent_main(int argc, char **argv);
/* Its options and --help (common/opt.h), for the CLI's list of commands. */
extern const struct al_opt_cmd al_agent_cmd;

#endif /* AL_AGENT_H */
