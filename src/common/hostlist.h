/*
 * hostlist.h -- Slurm's compact form of a list of host names,
 * "node[1-3,7],login1": names that differ only in a trailing number are
 * folded into one bracket of ranges, with their leading zeros kept
 * ("gpu[01-03]").  The CLI's Slurm commands print it and read it; the agent
 * gives it to a task as SLURM_JOB_NODELIST.
 */
#ifndef AL_HOSTLIST_H
#define AL_HOSTLIST_H

#include <stddef.h>

/* The most names al_hostlist_expand() gives, against "n[1-999999999]". */
#define AL_HOSTLIST_MAX 65536

/* Folds names[0..n-1] (in that order; a repeated name is kept once) into
 * Slurm's form, as Slurm does: runs of consecutive names that share a
 * prefix and a number width become one bracket.  Returns a string the caller
 * frees ("" for n == 0). */
char *al_hostlist_fold(const char *const *names, size_t n);

/* Expands "node[1-3,7],login1" into its names: *out gets an array of
 * *n strings (the caller frees each and the array).  0, or -1 for a
 * malformed list (an unclosed bracket, a range running backwards, more than
 * AL_HOSTLIST_MAX names, an empty name) with *out and *n untouched. */
int al_hostlist_expand(const char *list, char ***out, size_t *n);

void al_hostlist_free(char **names, size_t n);

/* For the node of each of a job's n tasks (task_nodes[t]): the nodes in
 * hostlist form into *nodelist, and what Slurm calls SLURM_TASKS_PER_NODE,
 * the task count of each node in the list's order, repeats folded: "2(x3),1"
 * (returned).  The caller frees both. */
char *al_hostlist_tasks_per_node(const char *const *task_nodes, size_t n,
                                 char **nodelist);

#endif /* AL_HOSTLIST_H */
