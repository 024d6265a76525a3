/*
 * leader.h -- standby controllers on PostgreSQL (`allot server --standby`):
 * the wait for the active controller to go.  See leader.c.
 */
#ifndef AL_SERVER_LEADER_H
#define AL_SERVER_LEADER_H

#include <signal.h>

#include "server.h"

/* The advisory lock the active controller's store session holds: "allot"
 * in ASCII.  Advisory locks are scoped to a database, so one database
 * holds one controller's state. */
#define AL_LEADER_LOCK_KEY "418262553460"

/*
 * Waits, as a standby, until no session holds the store's lock (the
 * active controller is gone: stopped, killed, or cut off long enough for
 * PostgreSQL to end its session), polling every 200 ms.  Returns 0 then,
 * or 1 when a signal of `stop` (blocked by the caller) came first; a
 * database that cannot be reached is tried again.
 */
int al__leader_wait(const al_server_opts_t *o, const sigset_t *stop);

#endif /* AL_SERVER_LEADER_H */
