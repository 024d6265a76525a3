/*
 * store_sqlite.c -- the state store in SQLite (the default): STATE/allot.db
 * in WAL mode, a schema version table with forward migrations.  Statements
 * run often (a job's row, an event, BEGIN, COMMIT) are prepared once.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "log.h"
#include "store_int.h"
#include "xmalloc.h"

typedef struct lite {
    sqlite3 *db;
    sqlite3_stmt *st_job, *st_event, *st_begin, *st_commit;
} lite_t;

/* Migration i brings the schema from version i to i + 1. */
static const char *const migrations[] = {
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, user TEXT NOT NULL,"
    " queue TEXT NOT NULL, state TEXT NOT NULL, submit_ms INTEGER NOT NULL,"
    " doc TEXT NOT NULL);"
    "CREATE INDEX jobs_state ON jobs(state);"
    "CREATE TABLE job_events(seq INTEGER PRIMARY KEY,"
    " job_id INTEGER NOT NULL, time_ms INTEGER NOT NULL,"
    " event TEXT NOT NULL, detail TEXT);"
    "CREATE INDEX job_events_job ON job_events(job_id);"
    "CREATE TABLE queues(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE nodes(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE tokens(id TEXT PRIMARY KEY, user TEXT NOT NULL,"
    " role INTEGER NOT NULL, salt BLOB NOT NULL, hash BLOB NOT NULL,"
    " created_ms INTEGER NOT NULL);",
    /* The usage history (history.c): one row per step, queue and GPU
     * model ("" for all) and time, each figure a mean over the step in
     * thousandths of a GPU (integers: read back as text, a REAL costs a
     * printf). */
    "CREATE TABLE usage(step INTEGER NOT NULL, t INTEGER NOT NULL,"
    " queue TEXT NOT NULL, model TEXT NOT NULL, gpus INTEGER,"
    " alloc INTEGER, used INTEGER, deserved INTEGER, fair INTEGER,"
    " pending INTEGER, idle INTEGER, wasted INTEGER,"
    " PRIMARY KEY(step, queue, model, t));"
    "CREATE INDEX usage_t ON usage(step, t);",
    /* Users' settings and groups (members.c), and each queue's decayed
     * usage behind fair share as of t_ms (fairshare.c), in
     * milli-GPU-seconds. */
    "CREATE TABLE user_settings(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE user_groups(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE fairshare(queue TEXT PRIMARY KEY,"
    " milli_gpu_s INTEGER NOT NULL, t_ms INTEGER NOT NULL);",
    /* Inference services (svc.c): a document per service. */
    "CREATE TABLE services(name TEXT PRIMARY KEY, doc TEXT NOT NULL);",
    /* A job's steps (steps.c): srun's reports per job, run and step;
     * `open` counts the reporters (a job's tasks) that have not ended. */
    "CREATE TABLE job_steps(job_id INTEGER NOT NULL, run INTEGER NOT NULL,"
    " step INTEGER NOT NULL, name TEXT NOT NULL, tasks INTEGER NOT NULL,"
    " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,"
    " exit_code INTEGER NOT NULL, signal INTEGER NOT NULL,"
    " open INTEGER NOT NULL, PRIMARY KEY(job_id, run, step));",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

/* By al__doc_table_t. */
static const char *const doc_put[] = {
    "INSERT OR REPLACE INTO queues VALUES(?, ?)",
    "INSERT OR REPLACE INTO nodes VALUES(?, ?)",
    NULL,
    "INSERT OR REPLACE INTO user_settings VALUES(?, ?)",
    "INSERT OR REPLACE INTO user_groups VALUES(?, ?)",
};
static const char *const doc_del[] = {
    "DELETE FROM queues WHERE name = ?",
    "DELETE FROM nodes WHERE name = ?",
    NULL,
    "DELETE FROM user_settings WHERE name = ?",
    "DELETE FROM user_groups WHERE name = ?",
};
static const char *const doc_load[] = {
    "SELECT doc FROM queues ORDER BY name",
    "SELECT doc FROM nodes ORDER BY name",
    "SELECT doc FROM jobs ORDER BY id",
    "SELECT doc FROM user_settings ORDER BY name",
    "SELECT doc FROM user_groups ORDER BY name",
};

/* The columns of a usage row as history.c reads them. */
#define USAGE_COLS                                                             \
    "t, queue, model, gpus, alloc, used, deserved, fair, pending, idle, "      \
    "wasted"

/* The named statements of al__store_ops_t's write and read. */
static const struct {
    const char *name, *sql;
} named[] = {
    { "usage_put",
      "INSERT OR REPLACE INTO usage(step, t, queue, model, gpus,"
      " alloc, used, deserved, fair, pending, idle, wasted)"
      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)" },
    /* ?1 the fine step, ?2 the coarse one, [?3, ?4) the coarse step's
     * span: its rows become the means of the fine rows there. */
    { "usage_rollup",
      "INSERT OR REPLACE INTO usage SELECT ?2, ?3, queue, model,"
      " round(avg(gpus)), round(avg(alloc)), round(avg(used)),"
      " round(avg(deserved)), round(avg(fair)), round(avg(pending)),"
      " round(avg(idle)), round(avg(wasted)) FROM usage WHERE step = ?1"
      " AND t >= ?3 AND t < ?4 GROUP BY queue, model" },
    { "usage_trim", "DELETE FROM usage WHERE step = ?1 AND t < ?2" },
    { "usage_last", "SELECT max(t) FROM usage WHERE step = ?1" },
    { "usage_first", "SELECT min(t) FROM usage WHERE step = ?1" },
    /* ?1 the step, [?2, ?3) the span, ?4 the queue or model: the rows of
     * one series, of every queue, or of every model. */
    { "usage_rows_queue", "SELECT " USAGE_COLS " FROM usage WHERE step = ?1"
                          " AND queue = ?4 AND model = '' AND t >= ?2"
                          " AND t < ?3" },
    { "usage_rows_model", "SELECT " USAGE_COLS " FROM usage WHERE step = ?1"
                          " AND queue = '' AND model = ?4 AND t >= ?2"
                          " AND t < ?3" },
    { "usage_rows_queues", "SELECT " USAGE_COLS " FROM usage WHERE step = ?1"
                           " AND queue <> '' AND model = '' AND t >= ?2"
                           " AND t < ?3" },
    { "usage_rows_models", "SELECT " USAGE_COLS " FROM usage WHERE step = ?1"
                           " AND queue = '' AND model <> '' AND t >= ?2"
                           " AND t < ?3" },
    { "svc_put", "INSERT OR REPLACE INTO services(name, doc) VALUES(?1, ?2)" },
    { "svc_del", "DELETE FROM services WHERE name = ?1" },
    { "svc_all", "SELECT doc FROM services ORDER BY name" },
    { "events_from", "SELECT job_id, time_ms, event, detail FROM job_events"
                     " WHERE job_id >= ?1 ORDER BY job_id, seq" },
    /* fairshare.c's: every queue's usage written again at once. */
    { "fairshare_clear", "DELETE FROM fairshare" },
    { "fairshare_put", "INSERT OR REPLACE INTO fairshare(queue, milli_gpu_s,"
                       " t_ms) VALUES(?1, ?2, ?3)" },
    { "fairshare_all", "SELECT queue, milli_gpu_s, t_ms FROM fairshare" },
    /* steps.c's: ?1 job, ?2 run, ?3 step; a start (?4 name, ?5 tasks,
     * ?6 now) and an end (?4 now, ?5 exit code, ?6 signal) merged into
     * the step's row. */
    { "step_start",
      "INSERT INTO job_steps VALUES(?1, ?2, ?3, ?4, ?5, ?6, 0, 0, 0, 1)"
      " ON CONFLICT(job_id, run, step) DO UPDATE SET"
      " name = CASE WHEN name = '' THEN excluded.name ELSE name END,"
      " tasks = max(tasks, excluded.tasks),"
      " start_ms = min(start_ms, excluded.start_ms), open = open + 1" },
    { "step_end",
      "INSERT INTO job_steps VALUES(?1, ?2, ?3, '', 0, ?4, ?4, ?5, ?6, 0)"
      " ON CONFLICT(job_id, run, step) DO UPDATE SET"
      " end_ms = max(end_ms, excluded.end_ms),"
      " exit_code = max(exit_code, excluded.exit_code),"
      " signal = max(signal, excluded.signal),"
      " open = max(open - 1, 0)" },
    { "steps_of", "SELECT job_id, run, step, name, tasks, start_ms, end_ms,"
                  " exit_code, signal, open FROM job_steps"
                  " WHERE job_id = ?1 AND run = ?2 ORDER BY step" },
    { "steps_from", "SELECT job_id, run, step, name, tasks, start_ms, end_ms,"
                    " exit_code, signal, open FROM job_steps"
                    " WHERE job_id >= ?1 ORDER BY job_id, run, step" },
    /* consolidate.c's moves since ?1 (wall ms): its budget on a start. */
    { "moves_since", "SELECT job_id, time_ms FROM job_events"
                     " WHERE event = 'moved' AND time_ms >= CAST(?1 AS"
                     " INTEGER)" },
    { "events_count", "SELECT count(*) FROM (SELECT seq FROM job_events"
                      " ORDER BY seq DESC LIMIT CAST(?1 AS INTEGER) + 1)"
                      " AS t" },
    { "events_tail", "SELECT job_id, time_ms, event, detail FROM"
                     " (SELECT * FROM job_events ORDER BY seq DESC"
                     " LIMIT CAST(?1 AS INTEGER))"
                     " AS t ORDER BY seq" },
};

static int
exec(lite_t *l, const char *sql, char **cause)
{
    char *err = NULL;
    if (sqlite3_exec(l->db, sql, NULL, NULL, &err) != SQLITE_OK) {
        if (cause != NULL)
            *cause = al_xasprintf("store: %s", err ? err : "error");
        else
            al_error("store: %s", err ? err : "error");
        sqlite3_free(err);
        return AL_EIO;
    }
    return 0;
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
    lite_t *l = db;
    sqlite3_stmt *st;
    int v = -1;
    (void)cause;
    if (sqlite3_prepare_v2(l->db, "SELECT version FROM schema_version", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v < 0 ? 0 : v;
}

static void lite_close(al_ctl_t *ctl);

static int
lite_open(al_ctl_t *ctl, char **cause)
{
    lite_t *l = al_xcalloc(1, sizeof *l);
    ctl->store = l;
    char *path = al_xasprintf("%s/" AL__SQLITE_FILE, ctl->state_dir);
    int rc = sqlite3_open_v2(
        path, &l->db,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        *cause = al_xasprintf("cannot open %s: %s", path,
                              l->db ? sqlite3_errmsg(l->db) : "out of memory");
        free(path);
        return AL_EIO;
    }
    free(path);
    sqlite3_busy_timeout(l->db, 5000);
    const char *sync = ctl->opts.sync_full ? "PRAGMA synchronous=FULL"
                                           : "PRAGMA synchronous=NORMAL";
    if (exec(l, "PRAGMA journal_mode=WAL", cause) != 0 ||
        exec(l, sync, cause) != 0 ||
        exec(l, "PRAGMA foreign_keys=ON", cause) != 0 ||
        al__store_migrate(l, migrate_exec, schema_version, migrations,
                          SCHEMA_VERSION, cause) != 0)
        return AL_EIO;
    if (sqlite3_prepare_v2(l->db,
                           "INSERT OR REPLACE INTO jobs(id, user, queue, "
                           "state, submit_ms, doc) VALUES(?,?,?,?,?,?)",
                           -1, &l->st_job, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(l->db,
                           "INSERT INTO job_events(job_id, time_ms, event, "
                           "detail) VALUES(?,?,?,?)",
                           -1, &l->st_event, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(l->db, "BEGIN IMMEDIATE", -1, &l->st_begin, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(l->db, "COMMIT", -1, &l->st_commit, NULL) !=
            SQLITE_OK) {
        *cause = al_xasprintf("store: %s", sqlite3_errmsg(l->db));
        return AL_EIO;
    }
    return 0;
}

static void
lite_close(al_ctl_t *ctl)
{
    lite_t *l = ctl->store;
    if (l == NULL)
        return;
    sqlite3_finalize(l->st_job);
    sqlite3_finalize(l->st_event);
    sqlite3_finalize(l->st_begin);
    sqlite3_finalize(l->st_commit);
    sqlite3_close(l->db);
    free(l);
    ctl->store = NULL;
}

static int
step_done(lite_t *l, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        al_error("store: %s", sqlite3_errmsg(l->db));
        return AL_EIO;
    }
    return 0;
}

/* BEGIN and COMMIT are prepared once: compiling them again in every
 * iteration of the loop (sqlite3_exec()) cost more than running them. */
static int
lite_begin(al_ctl_t *ctl)
{
    lite_t *l = ctl->store;
    return step_done(l, l->st_begin);
}

static int
lite_commit(al_ctl_t *ctl)
{
    lite_t *l = ctl->store;
    return step_done(l, l->st_commit);
}

static void
lite_rollback(al_ctl_t *ctl)
{
    lite_t *l = ctl->store;
    if (!sqlite3_get_autocommit(l->db))
        exec(l, "ROLLBACK", NULL);
}

static int
lite_put_job(al_ctl_t *ctl, const al__job_t *j, const char *state,
             const char *doc)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st = l->st_job;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_text(st, 2, j->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, j->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, state, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, j->submit_ms);
    sqlite3_bind_text(st, 6, doc, -1, SQLITE_STATIC);
    return step_done(l, st);
}

static int
lite_event(al_ctl_t *ctl, uint64_t job, int64_t ms, const char *event,
           const char *detail)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st = l->st_event;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(st, 2, ms);
    sqlite3_bind_text(st, 3, event, -1, SQLITE_STATIC);
    if (detail != NULL)
        sqlite3_bind_text(st, 4, detail, -1, SQLITE_STATIC);
    return step_done(l, st);
}

static json_t *
lite_history(al_ctl_t *ctl, uint64_t job)
{
    lite_t *l = ctl->store;
    json_t *a = json_array();
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db,
                           "SELECT time_ms, event, detail FROM job_events "
                           "WHERE job_id = ? ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return a;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *d = (const char *)sqlite3_column_text(st, 2);
        json_array_append_new(
            a,
            json_pack("{s:I, s:s, s:s?}", "time_ms",
                      (json_int_t)sqlite3_column_int64(st, 0), "event",
                      (const char *)sqlite3_column_text(st, 1), "detail", d));
    }
    sqlite3_finalize(st);
    return a;
}

static int
lite_put_doc(al_ctl_t *ctl, al__doc_table_t table, const char *key,
             const char *doc)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, doc ? doc_put[table] : doc_del[table], -1,
                           &st, NULL) != SQLITE_OK)
        return AL_EIO;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (doc != NULL)
        sqlite3_bind_text(st, 2, doc, -1, SQLITE_STATIC);
    int rc = step_done(l, st);
    sqlite3_finalize(st);
    return rc;
}

static int
lite_put_token(al_ctl_t *ctl, const al__token_t *t)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db,
                           "INSERT OR REPLACE INTO tokens VALUES(?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return AL_EIO;
    sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, t->user, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, t->role);
    sqlite3_bind_blob(st, 4, t->salt, sizeof t->salt, SQLITE_STATIC);
    sqlite3_bind_blob(st, 5, t->hash, sizeof t->hash, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, t->created_ms);
    int rc = step_done(l, st);
    sqlite3_finalize(st);
    return rc;
}

static int
lite_load_tokens(al_ctl_t *ctl, char **cause)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db,
                           "SELECT id, user, role, salt, hash, created_ms "
                           "FROM tokens",
                           -1, &st, NULL) != SQLITE_OK) {
        *cause = al_xasprintf("store: %s", sqlite3_errmsg(l->db));
        return AL_EIO;
    }
    while (sqlite3_step(st) == SQLITE_ROW)
        al__store_add_token(
            ctl, (const char *)sqlite3_column_text(st, 0),
            (const char *)sqlite3_column_text(st, 1), sqlite3_column_int(st, 2),
            sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3),
            sqlite3_column_blob(st, 4), (size_t)sqlite3_column_bytes(st, 4),
            sqlite3_column_int64(st, 5));
    sqlite3_finalize(st);
    return 0;
}

static int
lite_load_docs(al_ctl_t *ctl, al__doc_table_t table,
               int (*fn)(al_ctl_t *, const char *, char **), char **cause)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, doc_load[table], -1, &st, NULL) !=
        SQLITE_OK) {
        *cause = al_xasprintf("store: %s", sqlite3_errmsg(l->db));
        return AL_EIO;
    }
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        rc = fn(ctl, (const char *)sqlite3_column_text(st, 0), cause);
    sqlite3_finalize(st);
    return rc;
}

/* A named statement, prepared and bound; NULL when unknown or broken. */
static sqlite3_stmt *
prepare_named(lite_t *l, const char *name, int n, const char *const *v)
{
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (strcmp(named[i].name, name) != 0)
            continue;
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(l->db, named[i].sql, -1, &st, NULL) !=
            SQLITE_OK) {
            al_error("store: %s", sqlite3_errmsg(l->db));
            return NULL;
        }
        for (int k = 0; k < n; k++)
            if (v[k] != NULL)
                sqlite3_bind_text(st, k + 1, v[k], -1, SQLITE_STATIC);
        return st;
    }
    al_error("store: no statement '%s'", name);
    return NULL;
}

static int
lite_write(al_ctl_t *ctl, const char *name, int n, const char *const *v)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st = prepare_named(l, name, n, v);
    if (st == NULL)
        return AL_EIO;
    int rc = step_done(l, st);
    sqlite3_finalize(st);
    return rc;
}

static int
lite_read(al_ctl_t *ctl, const char *name, int n, const char *const *v,
          al__store_row_fn fn, void *arg)
{
    lite_t *l = ctl->store;
    sqlite3_stmt *st = prepare_named(l, name, n, v);
    if (st == NULL)
        return AL_EIO;
    const char *cols[16];
    int rc, ncols = sqlite3_column_count(st);
    if (ncols > 16)
        ncols = 16;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0; c < ncols; c++)
            cols[c] = (const char *)sqlite3_column_text(st, c);
        if (fn(arg, ncols, cols) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        al_error("store: %s", sqlite3_errmsg(l->db));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : AL_EIO;
}

const al__store_ops_t al__store_sqlite = {
    .open = lite_open,
    .close = lite_close,
    .begin = lite_begin,
    .commit = lite_commit,
    .rollback = lite_rollback,
    .put_job = lite_put_job,
    .event = lite_event,
    .history = lite_history,
    .put_doc = lite_put_doc,
    .put_token = lite_put_token,
    .load_tokens = lite_load_tokens,
    .load_docs = lite_load_docs,
    .write = lite_write,
    .read = lite_read,
};
