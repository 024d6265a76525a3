/*
 * store_pg.c -- the state store in PostgreSQL (`--store postgresql://...`),
 * for controllers whose state should live in a database server: managed,
 * replicated and backed up with the rest of an organisation's data.
 *
 * The tables (those of store_sqlite.c) live in the schema "allot" of the
 * database the URI names, versioned the same way.  One connection, used by
 * the loop thread only, holds a session-level advisory lock for as long as
 * it lives: a second controller on the same database is refused (it would
 * hand out the same job ids), or waits as a standby (leader.c).  Statements are
 * prepared once per connection.  A commit is durable when it returns
 * (synchronous_commit on, the default of `--sync full`).
 *
 * A lost connection (the database restarted, a network cut) fails the
 * statement or commit in progress: the controller answers 503 and reloads
 * its state from the store, which reconnects first (and takes the lock
 * again), so nothing half-done is kept and service resumes once the
 * database is back.
 */
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "core/error.h"
#include "json.h"
#include "leader.h"
#include "log.h"
#include "store_int.h"
#include "xmalloc.h"

/* The advisory lock's key (leader.h). */
#define LOCK_KEY AL_LEADER_LOCK_KEY

typedef struct pg {
    PGconn *conn;
    bool broken; /* connected, but unusable: connect again */
    /* The transaction in progress (see run()): BEGIN sent, writes sent
     * whose results are not read yet, and whether one failed. */
    bool in_txn;
    int pending;
    bool failed;
    char xid[24]; /* its transaction id (txid_current()), as text */
} pg_t;

/* Migration i brings the schema from version i to i + 1. */
static const char *const migrations[] = {
    "CREATE TABLE jobs(id BIGINT PRIMARY KEY, \"user\" TEXT NOT NULL,"
    " queue TEXT NOT NULL, state TEXT NOT NULL, submit_ms BIGINT NOT NULL,"
    " doc TEXT NOT NULL);"
    "CREATE INDEX jobs_state ON jobs(state);"
    "CREATE TABLE job_events(seq BIGSERIAL PRIMARY KEY,"
    " job_id BIGINT NOT NULL, time_ms BIGINT NOT NULL,"
    " event TEXT NOT NULL, detail TEXT);"
    "CREATE INDEX job_events_job ON job_events(job_id);"
    "CREATE TABLE queues(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE nodes(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE tokens(id TEXT PRIMARY KEY, \"user\" TEXT NOT NULL,"
    " role INTEGER NOT NULL, salt BYTEA NOT NULL, hash BYTEA NOT NULL,"
    " created_ms BIGINT NOT NULL);",
    "CREATE TABLE usage(step INTEGER NOT NULL, t BIGINT NOT NULL,"
    " queue TEXT NOT NULL, model TEXT NOT NULL, gpus BIGINT, alloc BIGINT,"
    " used BIGINT, deserved BIGINT, fair BIGINT, pending BIGINT,"
    " idle BIGINT, wasted BIGINT, PRIMARY KEY(step, queue, model, t));"
    "CREATE INDEX usage_t ON usage(step, t);",
    "CREATE TABLE user_settings(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE user_groups(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE fairshare(queue TEXT PRIMARY KEY,"
    " milli_gpu_s BIGINT NOT NULL, t_ms BIGINT NOT NULL);",
    "CREATE TABLE services(name TEXT PRIMARY KEY, doc TEXT NOT NULL);",
    "CREATE TABLE job_steps(job_id BIGINT NOT NULL, run INTEGER NOT NULL,"
    " step INTEGER NOT NULL, name TEXT NOT NULL, tasks INTEGER NOT NULL,"
    " start_ms BIGINT NOT NULL, end_ms BIGINT NOT NULL,"
    " exit_code INTEGER NOT NULL, signal INTEGER NOT NULL,"
    " open INTEGER NOT NULL, PRIMARY KEY(job_id, run, step));",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

/* The columns of a usage row as history.c reads them. */
#define USAGE_COLS                                                             \
    "t, queue, model, gpus, alloc, used, deserved, fair, pending, idle, "      \
    "wasted"

/* Prepared once per connection: name, text, number of parameters. */
static const struct {
    const char *name, *sql;
    int nparams;
} statements[] = {
    { "job",
      "INSERT INTO jobs(id, \"user\", queue, state, submit_ms, doc)"
      " VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET"
      " \"user\" = EXCLUDED.\"user\", queue = EXCLUDED.queue,"
      " state = EXCLUDED.state, submit_ms = EXCLUDED.submit_ms,"
      " doc = EXCLUDED.doc",
      6 },
    { "event",
      "INSERT INTO job_events(job_id, time_ms, event, detail)"
      " VALUES($1, $2, $3, $4)",
      4 },
    { "history",
      "SELECT time_ms, event, detail FROM job_events WHERE job_id = $1"
      " ORDER BY seq",
      1 },
    { "queues_put",
      "INSERT INTO queues VALUES($1, $2) ON CONFLICT (name) DO UPDATE SET"
      " doc = EXCLUDED.doc",
      2 },
    { "queues_del", "DELETE FROM queues WHERE name = $1", 1 },
    { "nodes_put",
      "INSERT INTO nodes VALUES($1, $2) ON CONFLICT (name) DO UPDATE SET"
      " doc = EXCLUDED.doc",
      2 },
    { "nodes_del", "DELETE FROM nodes WHERE name = $1", 1 },
    { "users_put",
      "INSERT INTO user_settings VALUES($1, $2) ON CONFLICT (name) DO UPDATE"
      " SET doc = EXCLUDED.doc",
      2 },
    { "users_del", "DELETE FROM user_settings WHERE name = $1", 1 },
    { "groups_put",
      "INSERT INTO user_groups VALUES($1, $2) ON CONFLICT (name) DO UPDATE"
      " SET doc = EXCLUDED.doc",
      2 },
    { "groups_del", "DELETE FROM user_groups WHERE name = $1", 1 },
    /* fairshare.c's, as store_sqlite.c names them. */
    { "fairshare_clear", "DELETE FROM fairshare", 0 },
    { "fairshare_put",
      "INSERT INTO fairshare(queue, milli_gpu_s, t_ms) VALUES($1, $2, $3)"
      " ON CONFLICT (queue) DO UPDATE SET milli_gpu_s ="
      " EXCLUDED.milli_gpu_s, t_ms = EXCLUDED.t_ms",
      3 },
    { "fairshare_all", "SELECT queue, milli_gpu_s, t_ms FROM fairshare", 0 },
    /* The usage history's, as store_sqlite.c names them. */
    { "usage_put",
      "INSERT INTO usage(step, t, queue, model, gpus, alloc, used, deserved,"
      " fair, pending, idle, wasted) VALUES($1, $2, $3, $4, $5, $6, $7, $8,"
      " $9, $10, $11, $12) ON CONFLICT (step, queue, model, t) DO UPDATE SET"
      " gpus = EXCLUDED.gpus, alloc = EXCLUDED.alloc, used = EXCLUDED.used,"
      " deserved = EXCLUDED.deserved, fair = EXCLUDED.fair,"
      " pending = EXCLUDED.pending, idle = EXCLUDED.idle,"
      " wasted = EXCLUDED.wasted",
      12 },
    { "usage_rollup",
      "INSERT INTO usage SELECT $2::integer, $3::bigint, queue, model,"
      " round(avg(gpus))::bigint, round(avg(alloc))::bigint,"
      " round(avg(used))::bigint, round(avg(deserved))::bigint,"
      " round(avg(fair))::bigint, round(avg(pending))::bigint,"
      " round(avg(idle))::bigint, round(avg(wasted))::bigint"
      " FROM usage WHERE step = $1"
      " AND t >= $3::bigint AND t < $4 GROUP BY queue, model"
      " ON CONFLICT (step, queue, model, t) DO UPDATE SET"
      " gpus = EXCLUDED.gpus, alloc = EXCLUDED.alloc, used = EXCLUDED.used,"
      " deserved = EXCLUDED.deserved, fair = EXCLUDED.fair,"
      " pending = EXCLUDED.pending, idle = EXCLUDED.idle,"
      " wasted = EXCLUDED.wasted",
      4 },
    { "usage_trim", "DELETE FROM usage WHERE step = $1 AND t < $2", 2 },
    { "usage_last", "SELECT max(t) FROM usage WHERE step = $1", 1 },
    { "usage_first", "SELECT min(t) FROM usage WHERE step = $1", 1 },
    { "usage_rows_queue",
      "SELECT " USAGE_COLS " FROM usage WHERE step = $1 AND queue = $4"
      " AND model = '' AND t >= $2 AND t < $3",
      4 },
    { "usage_rows_model",
      "SELECT " USAGE_COLS " FROM usage WHERE step = $1 AND queue = ''"
      " AND model = $4 AND t >= $2 AND t < $3",
      4 },
    { "usage_rows_queues",
      "SELECT " USAGE_COLS " FROM usage WHERE step = $1 AND queue <> ''"
      " AND model = '' AND t >= $2 AND t < $3",
      3 },
    { "usage_rows_models",
      "SELECT " USAGE_COLS " FROM usage WHERE step = $1 AND queue = ''"
      " AND model <> '' AND t >= $2 AND t < $3",
      3 },
    { "svc_put",
      "INSERT INTO services(name, doc) VALUES($1, $2) ON CONFLICT (name)"
      " DO UPDATE SET doc = EXCLUDED.doc",
      2 },
    { "svc_del", "DELETE FROM services WHERE name = $1", 1 },
    { "svc_all", "SELECT doc FROM services ORDER BY name", 0 },
    { "events_from",
      "SELECT job_id, time_ms, event, detail FROM job_events"
      " WHERE job_id >= $1 ORDER BY job_id, seq",
      1 },
    /* steps.c's, as store_sqlite.c names them. */
    { "step_start",
      "INSERT INTO job_steps VALUES($1, $2, $3, $4, $5, $6, 0, 0, 0, 1)"
      " ON CONFLICT (job_id, run, step) DO UPDATE SET"
      " name = CASE WHEN job_steps.name = '' THEN EXCLUDED.name"
      " ELSE job_steps.name END,"
      " tasks = GREATEST(job_steps.tasks, EXCLUDED.tasks),"
      " start_ms = LEAST(job_steps.start_ms, EXCLUDED.start_ms),"
      " open = job_steps.open + 1",
      6 },
    { "step_end",
      "INSERT INTO job_steps VALUES($1, $2, $3, '', 0, $4, $4, $5, $6, 0)"
      " ON CONFLICT (job_id, run, step) DO UPDATE SET"
      " end_ms = GREATEST(job_steps.end_ms, EXCLUDED.end_ms),"
      " exit_code = GREATEST(job_steps.exit_code, EXCLUDED.exit_code),"
      " signal = GREATEST(job_steps.signal, EXCLUDED.signal),"
      " open = GREATEST(job_steps.open - 1, 0)",
      6 },
    { "steps_of",
      "SELECT job_id, run, step, name, tasks, start_ms, end_ms, exit_code,"
      " signal, open FROM job_steps WHERE job_id = $1 AND run = $2"
      " ORDER BY step",
      2 },
    { "steps_from",
      "SELECT job_id, run, step, name, tasks, start_ms, end_ms, exit_code,"
      " signal, open FROM job_steps WHERE job_id >= $1"
      " ORDER BY job_id, run, step",
      1 },
    /* consolidate.c's moves since $1 (wall ms): its budget on a start. */
    { "moves_since",
      "SELECT job_id, time_ms FROM job_events WHERE event = 'moved'"
      " AND time_ms >= $1::bigint",
      1 },
    { "events_count",
      "SELECT count(*) FROM (SELECT seq FROM job_events ORDER BY seq DESC"
      " LIMIT $1::bigint + 1) AS t",
      1 },
    { "events_tail",
      "SELECT job_id, time_ms, event, detail FROM"
      " (SELECT * FROM job_events ORDER BY seq DESC LIMIT $1) AS t"
      " ORDER BY seq",
      1 },
    { "token",
      "INSERT INTO tokens VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT (id)"
      " DO UPDATE SET \"user\" = EXCLUDED.\"user\", role = EXCLUDED.role,"
      " salt = EXCLUDED.salt, hash = EXCLUDED.hash,"
      " created_ms = EXCLUDED.created_ms",
      6 },
};

/* By al__doc_table_t. */
static const char *const doc_put[] = { "queues_put", "nodes_put", NULL,
                                       "users_put", "groups_put" };
static const char *const doc_del[] = { "queues_del", "nodes_del", NULL,
                                       "users_del", "groups_del" };
static const char *const doc_load[] = {
    "SELECT doc FROM queues ORDER BY name",
    "SELECT doc FROM nodes ORDER BY name",
    "SELECT doc FROM jobs ORDER BY id",
    "SELECT doc FROM user_settings ORDER BY name",
    "SELECT doc FROM user_groups ORDER BY name",
};

/* libpq's messages end with a newline: without it, for ours. */
static const char *
errmsg(const char *m)
{
    static __thread char buf[512];
    snprintf(buf, sizeof buf, "%s", m != NULL && *m ? m : "error");
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return buf;
}

/* The result's status is `want`; else logs (or puts in *cause) what went
 * wrong.  Clears res either way. */
static int
result_ok(PGresult *res, ExecStatusType want, char **cause)
{
    int rc = 0;
    if (PQresultStatus(res) != want) {
        const char *m = errmsg(PQresultErrorMessage(res));
        if (cause != NULL && *cause == NULL)
            *cause = al_xasprintf("store: %s", m);
        else
            al_error("store: %s", m);
        rc = AL_EIO;
    }
    PQclear(res);
    return rc;
}

static int
exec(pg_t *p, const char *sql, char **cause)
{
    return result_ok(PQexec(p->conn, sql), PGRES_COMMAND_OK, cause);
}

/* The first column of the first row of a query, as a long; -1 if none. */
static long
query_long(pg_t *p, const char *sql, char **cause)
{
    PGresult *res = PQexec(p->conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        result_ok(res, PGRES_TUPLES_OK, cause);
        return -2;
    }
    long v = PQntuples(res) > 0 && !PQgetisnull(res, 0, 0)
                 ? strtol(PQgetvalue(res, 0, 0), NULL, 10)
                 : -1;
    PQclear(res);
    return v;
}

static void
quiet(void *arg, const char *message)
{
    (void)arg;
    al_debug("store: %s", errmsg(message));
}

/* al__store_migrate()'s two calls. */
static int
migrate_exec(void *db, const char *sql, char **cause)
{
    return exec(db, sql, cause);
}

static int
schema_version(void *db, char **cause)
{
    long v = query_long(db, "SELECT version FROM schema_version", cause);
    return v < -1 ? -1 : v < 0 ? 0 : (int)v;
}

/* Who holds the lock, for the message that refuses a second controller. */
static char *
lock_holder(pg_t *p)
{
    PGresult *res =
        PQexec(p->conn,
               "SELECT a.application_name, a.client_addr FROM pg_locks l"
               " JOIN pg_stat_activity a ON a.pid = l.pid"
               " WHERE l.locktype = 'advisory' AND l.granted"
               " AND l.database = (SELECT oid FROM pg_database"
               " WHERE datname = current_database())"
               " AND (l.classid::bigint << 32) + l.objid::bigint = " LOCK_KEY);
    char *who = NULL;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0)
        who = al_xasprintf("%s%s%s", PQgetvalue(res, 0, 0),
                           PQgetisnull(res, 0, 1) ? "" : " from ",
                           PQgetisnull(res, 0, 1) ? "" : PQgetvalue(res, 0, 1));
    PQclear(res);
    return who;
}

/* What a new connection needs: our schema, the commit mode, the lock,
 * the tables and the prepared statements. */
static int
session(al_ctl_t *ctl, pg_t *p, char **cause)
{
    PQsetNoticeProcessor(p->conn, quiet, NULL);
    /* The lock first: two controllers starting together must not race
     * to create the schema.  A session of ours that just broke may hold
     * it a moment longer (its backend ends on its own time): try for a
     * second before calling the database taken. */
    long locked = 0;
    for (int tries = 0; locked == 0 && tries < 20; tries++) {
        if (tries > 0)
            al_clock_sleep_ms(50);
        locked = query_long(p, "SELECT pg_try_advisory_lock(" LOCK_KEY ")::int",
                            cause);
    }
    if (locked < 0)
        return AL_EIO;
    if (locked == 0) {
        char *who = lock_holder(p);
        *cause = al_xasprintf(
            "the store's database is in use by another allot controller "
            "(%s); stop that one first, or give this one a database of its "
            "own",
            who ? who : "connection unknown");
        free(who);
        return AL_EBUSY;
    }
    /* The database's side of this session: should this controller's
     * machine be cut off, the session (and the lock) ends within about 5 s
     * rather than the operating system's two hours, and a standby
     * (leader.c) takes over.  Ignored on a Unix socket. */
    if (exec(p,
             "SET tcp_keepalives_idle TO 2; SET tcp_keepalives_interval TO 1;"
             " SET tcp_keepalives_count TO 2; SET tcp_user_timeout TO 4000",
             cause) != 0)
        return AL_EIO;
    long have = query_long(
        p, "SELECT count(*) FROM pg_namespace WHERE nspname = 'allot'", cause);
    if (have < 0 || (have == 0 && exec(p, "CREATE SCHEMA allot", cause) != 0) ||
        exec(p, "SET search_path TO allot", cause) != 0 ||
        exec(p,
             ctl->opts.sync_full ? "SET synchronous_commit TO on"
                                 : "SET synchronous_commit TO off",
             cause) != 0)
        return AL_EIO;
    int rc = al__store_migrate(p, migrate_exec, schema_version, migrations,
                               SCHEMA_VERSION, cause);
    for (size_t i = 0; rc == 0 && i < sizeof statements / sizeof *statements;
         i++)
        rc = result_ok(PQprepare(p->conn, statements[i].name, statements[i].sql,
                                 statements[i].nparams, NULL),
                       PGRES_COMMAND_OK, cause);
    return rc;
}

static int
pg_open(al_ctl_t *ctl, char **cause)
{
    pg_t *p = al_xcalloc(1, sizeof *p);
    ctl->store = p;
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    char *app =
        al_xasprintf("allot controller on %s (pid %ld)", host, (long)getpid());
    /* Bounds on every wait, so that a database or network that stops
     * answering fails the loop's calls (503) instead of stalling the
     * loop: given before the URI, which may set its own. */
    const char *const keys[] = {
        "connect_timeout",           "keepalives_idle",
        "keepalives_interval",       "keepalives_count",
        "tcp_user_timeout",          "dbname",
        "fallback_application_name", NULL
    };
    const char *const values[] = { "5", "10",    "5",
                                   "3", "15000", ctl->opts.store,
                                   app, NULL };
    p->conn = PQconnectdbParams(keys, values, 1);
    free(app);
    if (p->conn == NULL || PQstatus(p->conn) != CONNECTION_OK) {
        *cause = al_xasprintf(
            "cannot connect to the store: %s",
            errmsg(p->conn ? PQerrorMessage(p->conn) : "out of memory"));
        return AL_EIO;
    }
    return session(ctl, p, cause);
}

static void
pg_close(al_ctl_t *ctl)
{
    pg_t *p = ctl->store;
    if (p == NULL)
        return;
    PQfinish(p->conn); /* the advisory lock goes with the session */
    free(p);
    ctl->store = NULL;
}

/* A connection that works: the one we have, or a new one after it broke. */
static int
ensure(al_ctl_t *ctl, char **cause)
{
    pg_t *p = ctl->store;
    if (PQstatus(p->conn) == CONNECTION_OK && !p->broken)
        return 0;
    PQreset(p->conn); /* the same parameters, a new session */
    if (PQstatus(p->conn) != CONNECTION_OK) {
        char *m = al_xasprintf("cannot reconnect to the store: %s",
                               errmsg(PQerrorMessage(p->conn)));
        if (cause != NULL)
            *cause = m;
        else {
            al_error("%s", m);
            free(m);
        }
        return AL_EIO;
    }
    char *why = NULL;
    int rc = session(ctl, p, &why);
    if (rc != 0) {
        al_error("%s", why ? why : "store: cannot set up the connection");
        if (cause != NULL)
            *cause = why;
        else
            free(why);
        p->broken = true; /* the next ensure() connects again */
        return rc;
    }
    p->broken = false;
    al_info("store: reconnected");
    return 0;
}

/* A transaction's writes go out in pipeline mode, without waiting for
 * each answer: the statements of a loop iteration cost one round trip to
 * the server (at COMMIT) instead of one each.  BEGIN is sent when the
 * first write comes, and waited for: a connection that broke while idle
 * (the database restarted) is found there, with nothing in flight, and
 * replaced at once.  Results are read back every PIPE_MAX statements, so
 * that neither side ever waits on a full socket buffer. */
#define PIPE_MAX 256

static int
pg_begin(al_ctl_t *ctl)
{
    return ensure(ctl, NULL); /* BEGIN itself waits for the first write */
}

/* Reads the results of the statements sent since the last read: up to and
 * including the sync point when `sync`, else those a flush request asked
 * for.  A failure is remembered in p->failed (the server skips the rest
 * of the pipeline up to the sync, and COMMIT then fails). */
static void
drain(pg_t *p, bool sync)
{
    if (!sync && (!PQsendFlushRequest(p->conn) || PQflush(p->conn) != 0)) {
        p->failed = true;
        p->pending = 0;
        return;
    }
    while (p->pending > 0 || sync) {
        PGresult *res = PQgetResult(p->conn);
        if (res == NULL) {
            if (PQstatus(p->conn) != CONNECTION_OK) {
                p->failed = true;
                al_error("store: %s", errmsg(PQerrorMessage(p->conn)));
                break;
            }
            continue; /* the end of one statement's results */
        }
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            break;
        }
        p->pending--;
        if (st == PGRES_FATAL_ERROR) {
            al_error("store: %s", errmsg(PQresultErrorMessage(res)));
            p->failed = true;
        } else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            p->failed = true; /* aborted by an earlier error, or stranger */
        } else if (st == PGRES_COMMAND_OK &&
                   strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
            /* COMMIT of a transaction that a failed statement aborted
             * answers "ROLLBACK", with a status that says all is well. */
            al_error("store: the transaction was rolled back");
            p->failed = true;
        }
        PQclear(res);
        /* A statement's results end with a NULL: take it now, so that
         * the next read starts at the next statement's. */
        res = PQgetResult(p->conn);
        if (res != NULL) {
            PQclear(res);
            p->failed = true;
            break;
        }
    }
    if (sync || p->failed)
        p->pending = 0;
}

/* A query whose answer is wanted now, in pipeline mode or not (a read in
 * the middle of a transaction's writes).  NULL if it could not be sent. */
static PGresult *
query_now(pg_t *p, const char *name, int n, const char *const *values)
{
    if (PQpipelineStatus(p->conn) == PQ_PIPELINE_OFF)
        return PQexecPrepared(p->conn, name, n, values, NULL, NULL, 0);
    if (p->pending > 0)
        drain(p, false);
    if (!PQsendQueryPrepared(p->conn, name, n, values, NULL, NULL, 0) ||
        !PQsendFlushRequest(p->conn) || PQflush(p->conn) != 0) {
        p->failed = true;
        return NULL;
    }
    PGresult *res = PQgetResult(p->conn), *end;
    if (res != NULL && (end = PQgetResult(p->conn)) != NULL) {
        PQclear(end);
        p->failed = true;
    }
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK)
        p->failed = true; /* the pipeline is aborted: so is the commit */
    return res;
}

/* Opens the transaction (BEGIN, waited for) and pipeline mode for its
 * writes, unless done already in this transaction. */
static int
open_txn(al_ctl_t *ctl)
{
    pg_t *p = ctl->store;
    if (p->in_txn)
        return p->failed ? AL_EIO : 0;
    /* The transaction's id, should its COMMIT's answer be lost. */
    static const char begin[] = "BEGIN; SELECT txid_current()";
    PGresult *res = PQexec(p->conn, begin);
    if (PQresultStatus(res) != PGRES_TUPLES_OK &&
        PQstatus(p->conn) != CONNECTION_OK) {
        /* The connection broke while idle: nothing was in flight, so a
         * new one can take over at once. */
        PQclear(res);
        if (ensure(ctl, NULL) != 0) {
            p->in_txn = p->failed = true; /* the commit must fail */
            return AL_EIO;
        }
        res = PQexec(p->conn, begin);
    }
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        snprintf(p->xid, sizeof p->xid, "%s", PQgetvalue(res, 0, 0));
    if (result_ok(res, PGRES_TUPLES_OK, NULL) != 0) {
        /* The write is lost: so must the transaction be (pg_rollback()
         * ends it), whatever its other writes. */
        p->in_txn = p->failed = true;
        return AL_EIO;
    }
    p->in_txn = true;
    p->failed = false;
    p->pending = 0;
    if (!PQenterPipelineMode(p->conn)) {
        al_error("store: cannot enter pipeline mode: %s",
                 errmsg(PQerrorMessage(p->conn)));
        p->failed = true;
        return AL_EIO;
    }
    return 0;
}

/* Leaves pipeline mode (every result read); false if it cannot. */
static bool
leave_pipeline(pg_t *p)
{
    if (PQpipelineStatus(p->conn) == PQ_PIPELINE_OFF)
        return true;
    if (p->pending > 0)
        drain(p, false);
    return PQexitPipelineMode(p->conn) == 1;
}

/* The connection broke with the COMMIT sent and its answer not read: the
 * transaction may have committed.  Asks a new connection, for a while
 * (the database may be restarting), whether it did.  True if it did. */
static bool
committed_after_all(al_ctl_t *ctl)
{
    pg_t *p = ctl->store;
    if (p->xid[0] == '\0')
        return false;
    int64_t end = al_clock_mono_ms() + 3000;
    for (int tries = 0; al_clock_mono_ms() < end; tries++) {
        if (tries > 0)
            al_clock_sleep_ms(50);
        p->broken = true; /* a new session, whatever the old one's state */
        if (ensure(ctl, NULL) != 0)
            continue;
        const char *const v[] = { p->xid };
        PGresult *res = PQexecParams(p->conn, "SELECT txid_status($1)", 1, NULL,
                                     v, NULL, NULL, 0);
        const char *st = PQresultStatus(res) == PGRES_TUPLES_OK &&
                                 PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
                             ? PQgetvalue(res, 0, 0)
                             : "";
        bool done = strcmp(st, "committed") == 0,
             over = done || strcmp(st, "in progress") != 0;
        PQclear(res);
        if (over) {
            al_warn("store: the connection broke during COMMIT; the "
                    "transaction %s",
                    done ? "had committed" : "had not committed");
            return done;
        }
    }
    al_error("store: the connection broke during COMMIT and the database "
             "did not come back within 3 s: requests answered 503 may have "
             "been stored");
    return false;
}

static int
pg_commit(al_ctl_t *ctl)
{
    pg_t *p = ctl->store;
    if (!p->in_txn)
        return 0; /* nothing was written */
    if (!p->failed) {
        if (!PQsendQueryParams(p->conn, "COMMIT", 0, NULL, NULL, NULL, NULL,
                               0)) {
            al_error("store: %s", errmsg(PQerrorMessage(p->conn)));
            p->failed = true; /* not even queued: not committed */
        } else {
            p->pending++;
            if (PQpipelineSync(p->conn)) {
                drain(p, true);
            } else {
                al_error("store: %s", errmsg(PQerrorMessage(p->conn)));
                p->failed = true;
            }
            /* Once queued, the COMMIT may have reached the server (it
             * commits without waiting for the sync point). */
            if (p->failed && PQstatus(p->conn) != CONNECTION_OK &&
                committed_after_all(ctl)) {
                p->failed = false;
                p->in_txn = false;
                return 0; /* on a new connection, out of pipeline mode */
            }
        }
    }
    if (p->failed)
        return AL_EIO; /* pg_rollback() ends it */
    p->in_txn = false;
    if (!leave_pipeline(p)) {
        /* Committed; the next transaction will find the connection as it
         * is and replace it if need be. */
        al_error("store: cannot leave pipeline mode: %s",
                 errmsg(PQerrorMessage(p->conn)));
        p->broken = true;
    }
    return 0;
}

static void
pg_rollback(al_ctl_t *ctl)
{
    pg_t *p = ctl->store;
    if (!p->in_txn)
        return;
    p->in_txn = false;
    p->failed = false;
    if (PQstatus(p->conn) != CONNECTION_OK)
        return;
    if (PQpipelineStatus(p->conn) != PQ_PIPELINE_OFF) {
        /* A sync point ends what the server skipped after an error. */
        if (PQpipelineSync(p->conn))
            drain(p, true);
        if (PQexitPipelineMode(p->conn) != 1) {
            p->broken = true; /* start over with a new connection */
            return;
        }
    }
    if (PQtransactionStatus(p->conn) != PQTRANS_IDLE)
        exec(p, "ROLLBACK", NULL);
}

/* Sends a write of the open transaction (opened here if need be). */
static int
run(al_ctl_t *ctl, const char *name, int n, const char *const *values,
    const int *lengths, const int *formats)
{
    pg_t *p = ctl->store;
    if (open_txn(ctl) != 0)
        return AL_EIO;
    if (!PQsendQueryPrepared(p->conn, name, n, values, lengths, formats, 0)) {
        al_error("store: %s", errmsg(PQerrorMessage(p->conn)));
        p->failed = true;
        return AL_EIO;
    }
    if (++p->pending >= PIPE_MAX)
        drain(p, false);
    return p->failed ? AL_EIO : 0;
}

static int
pg_put_job(al_ctl_t *ctl, const al__job_t *j, const char *state,
           const char *doc)
{
    char id[24], submit[24];
    snprintf(id, sizeof id, "%llu", (unsigned long long)j->id);
    snprintf(submit, sizeof submit, "%lld", (long long)j->submit_ms);
    const char *const v[] = { id, j->user, j->queue, state, submit, doc };
    return run(ctl, "job", 6, v, NULL, NULL);
}

static int
pg_event(al_ctl_t *ctl, uint64_t job, int64_t ms, const char *event,
         const char *detail)
{
    char id[24], t[24];
    snprintf(id, sizeof id, "%llu", (unsigned long long)job);
    snprintf(t, sizeof t, "%lld", (long long)ms);
    const char *const v[] = { id, t, event, detail };
    return run(ctl, "event", 4, v, NULL, NULL);
}

/* The named statement's index, or -1. */
static int
named(const char *name, int n)
{
    for (size_t i = 0; i < sizeof statements / sizeof *statements; i++)
        if (strcmp(statements[i].name, name) == 0)
            return statements[i].nparams == n ? (int)i : -1;
    return -1;
}

static int
pg_write(al_ctl_t *ctl, const char *name, int n, const char *const *v)
{
    if (named(name, n) < 0) {
        al_error("store: no statement '%s' of %d parameters", name, n);
        return AL_EIO;
    }
    return run(ctl, name, n, v, NULL, NULL);
}

static int
pg_read(al_ctl_t *ctl, const char *name, int n, const char *const *v,
        al__store_row_fn fn, void *arg)
{
    pg_t *p = ctl->store;
    if (named(name, n) < 0) {
        al_error("store: no statement '%s' of %d parameters", name, n);
        return AL_EIO;
    }
    PGresult *res = query_now(p, name, n, v);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        result_ok(res, PGRES_TUPLES_OK, NULL);
        return AL_EIO;
    }
    const char *cols[16];
    int ncols = PQnfields(res) < 16 ? PQnfields(res) : 16;
    for (int i = 0; i < PQntuples(res); i++) {
        for (int c = 0; c < ncols; c++)
            cols[c] = PQgetisnull(res, i, c) ? NULL : PQgetvalue(res, i, c);
        if (fn(arg, ncols, cols) != 0)
            break;
    }
    PQclear(res);
    return 0;
}

static json_t *
pg_history(al_ctl_t *ctl, uint64_t job)
{
    pg_t *p = ctl->store;
    json_t *a = json_array();
    char id[24];
    snprintf(id, sizeof id, "%llu", (unsigned long long)job);
    const char *const v[] = { id };
    PGresult *res = query_now(p, "history", 1, v);
    if (PQresultStatus(res) != PGRES_TUPLES_OK &&
        PQpipelineStatus(p->conn) == PQ_PIPELINE_OFF &&
        PQstatus(p->conn) != CONNECTION_OK && ensure(ctl, NULL) == 0) {
        /* Broken while idle: a new connection can answer at once. */
        PQclear(res);
        res = query_now(p, "history", 1, v);
    }
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        result_ok(res, PGRES_TUPLES_OK, NULL);
        return a;
    }
    for (int i = 0; i < PQntuples(res); i++)
        json_array_append_new(
            a,
            json_pack("{s:I, s:s, s:s?}", "time_ms",
                      (json_int_t)strtoll(PQgetvalue(res, i, 0), NULL, 10),
                      "event", PQgetvalue(res, i, 1), "detail",
                      PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2)));
    PQclear(res);
    return a;
}

static int
pg_put_doc(al_ctl_t *ctl, al__doc_table_t table, const char *key,
           const char *doc)
{
    const char *const v[] = { key, doc };
    return doc != NULL ? run(ctl, doc_put[table], 2, v, NULL, NULL)
                       : run(ctl, doc_del[table], 1, v, NULL, NULL);
}

static int
pg_put_token(al_ctl_t *ctl, const al__token_t *t)
{
    char role[16], created[24];
    snprintf(role, sizeof role, "%d", t->role);
    snprintf(created, sizeof created, "%lld", (long long)t->created_ms);
    const char *const v[] = {
        t->id,  t->user, role, (const char *)t->salt, (const char *)t->hash,
        created
    };
    const int len[] = { 0, 0, 0, (int)sizeof t->salt, (int)sizeof t->hash, 0 };
    const int fmt[] = { 0, 0, 0, 1, 1, 0 }; /* salt and hash: binary */
    return run(ctl, "token", 6, v, len, fmt);
}

static int
pg_load_tokens(al_ctl_t *ctl, char **cause)
{
    if (ensure(ctl, cause) != 0)
        return AL_EIO;
    pg_t *p = ctl->store;
    PGresult *res = PQexec(p->conn, "SELECT id, \"user\", role, salt, hash,"
                                    " created_ms FROM tokens");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return result_ok(res, PGRES_TUPLES_OK, cause);
    for (int i = 0; i < PQntuples(res); i++) {
        size_t ns = 0, nh = 0;
        unsigned char *salt =
            PQunescapeBytea((const unsigned char *)PQgetvalue(res, i, 3), &ns);
        unsigned char *hash =
            PQunescapeBytea((const unsigned char *)PQgetvalue(res, i, 4), &nh);
        if (salt != NULL && hash != NULL)
            al__store_add_token(
                ctl, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                (int)strtol(PQgetvalue(res, i, 2), NULL, 10), salt, ns, hash,
                nh, strtoll(PQgetvalue(res, i, 5), NULL, 10));
        PQfreemem(salt);
        PQfreemem(hash);
    }
    PQclear(res);
    return 0;
}

/* Rows come one at a time (single-row mode): a store of 100,000 jobs is
 * never one result in memory. */
static int
pg_load_docs(al_ctl_t *ctl, al__doc_table_t table,
             int (*fn)(al_ctl_t *, const char *, char **), char **cause)
{
    pg_t *p = ctl->store;
    if (!PQsendQuery(p->conn, doc_load[table]) ||
        !PQsetSingleRowMode(p->conn)) {
        *cause = al_xasprintf("store: %s", errmsg(PQerrorMessage(p->conn)));
        return AL_EIO;
    }
    int rc = 0;
    PGresult *res;
    while ((res = PQgetResult(p->conn)) != NULL) {
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_SINGLE_TUPLE && rc == 0)
            rc = fn(ctl, PQgetvalue(res, 0, 0), cause);
        else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK && rc == 0) {
            *cause =
                al_xasprintf("store: %s", errmsg(PQresultErrorMessage(res)));
            rc = AL_EIO;
        }
        PQclear(res); /* every result is taken, even after an error */
    }
    return rc;
}

const al__store_ops_t al__store_pg = {
    .open = pg_open,
    .close = pg_close,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .put_job = pg_put_job,
    .event = pg_event,
    .history = pg_history,
    .write = pg_write,
    .read = pg_read,
    .put_doc = pg_put_doc,
    .put_token = pg_put_token,
    .load_tokens = pg_load_tokens,
    .load_docs = pg_load_docs,
};
