/*
 * leader.c -- standby controllers on PostgreSQL.  Several controllers may
 * run against one database: the active one is the one whose store session
 * holds the advisory lock (store_pg.c); a standby (`--standby`) waits here,
 * without loading the state or listening, until no session holds it, and
 * then starts as any controller does (the store takes the lock; one that
 * loses the race to another standby comes back here).  The active's session
 * ends when its process dies (PostgreSQL sees the socket close) or, when its
 * machine is cut off, by the TCP keepalive and user timeout the store sets
 * on its session (store_pg.c), so a standby takes over within seconds.
 *
 * May call: libpq, common (logging, clocks).
 */
#include "leader.h"

#include <errno.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "xmalloc.h"

#define POLL_MS 200

/* The lock's holder (its application_name), "" when it is free, or NULL
 * when the query failed. */
static char *
holder(PGconn *c)
{
    PGresult *res = PQexec(
        c, "SELECT count(*), coalesce(max(a.application_name), '?')"
           " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
           " WHERE l.locktype = 'advisory' AND l.granted"
           " AND l.database = (SELECT oid FROM pg_database"
           " WHERE datname = current_database())"
           " AND (l.classid::bigint << 32) + l.objid::bigint "
           "= " AL_LEADER_LOCK_KEY);
    char *who = NULL;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        who = al_xstrdup(strcmp(PQgetvalue(res, 0, 0), "0") == 0
                             ? ""
                             : PQgetvalue(res, 0, 1));
    PQclear(res);
    return who;
}

/* Sleeps ms, or returns true at once when a signal of stop comes. */
static bool
nap(const sigset_t *stop, int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    for (;;) {
        int sig = sigtimedwait(stop, NULL, &ts);
        if (sig > 0)
            return true;
        if (errno != EINTR)
            return false;
    }
}

int
al__leader_wait(const al_server_opts_t *o, const sigset_t *stop)
{
    const char *const keys[] = {
        "connect_timeout",           "keepalives_idle",
        "keepalives_interval",       "keepalives_count",
        "tcp_user_timeout",          "dbname",
        "fallback_application_name", NULL
    };
    const char *const values[] = {
        "5", "2", "1", "2", "5000", o->store, "allot standby controller", NULL
    };
    PGconn *c = NULL;
    char *said = NULL; /* the holder last logged */
    int rc = 1;
    for (;;) {
        if (c == NULL || PQstatus(c) != CONNECTION_OK) {
            PQfinish(c);
            c = PQconnectdbParams(keys, values, 1);
            if (c == NULL || PQstatus(c) != CONNECTION_OK) {
                if (said == NULL || said[0] != '?')
                    al_warn("standby: cannot reach the store: %s",
                            c != NULL ? PQerrorMessage(c) : "out of memory");
                free(said);
                said = al_xstrdup("?");
                if (nap(stop, 1000))
                    break;
                continue;
            }
        }
        char *who = holder(c);
        if (who != NULL && who[0] == '\0') {
            al_info("standby: no active controller holds the store; taking "
                    "over");
            free(who);
            rc = 0;
            break;
        }
        if (who != NULL && (said == NULL || strcmp(said, who) != 0)) {
            al_info("standby: the active controller is %s", who);
            free(said);
            said = who;
        } else {
            free(who);
        }
        if (nap(stop, POLL_MS))
            break;
    }
    free(said);
    PQfinish(c);
    return rc;
}
