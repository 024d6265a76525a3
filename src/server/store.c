/*
 * store.c -- the controller's SQLite store: WAL journal, a schema version
 * table with forward migrations, and one row per job, queue, node and
 * token (a JSON document plus the columns worth querying), and the job
 * history (one row per state transition) kept for accounting.  Only the
 * loop thread calls these functions; it groups everything it changes while
 * handling a batch of requests into one transaction.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

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
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

static int
exec(al_ctl_t *ctl, const char *sql, char **cause)
{
    char *err = NULL;
    if (sqlite3_exec(ctl->db, sql, NULL, NULL, &err) != SQLITE_OK) {
        if (cause != NULL)
            *cause = al_xasprintf("store: %s", err ? err : "error");
        else
            al_error("store: %s", err ? err : "error");
        sqlite3_free(err);
        return AL_EIO;
    }
    return 0;
}

static int
schema_version(al_ctl_t *ctl)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(ctl->db, "SELECT version FROM schema_version", -1,
                           &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v < 0 ? 0 : v;
}

static int
migrate(al_ctl_t *ctl, char **cause)
{
    if (exec(ctl,
             "CREATE TABLE IF NOT EXISTS schema_version(version "
             "INTEGER NOT NULL)",
             cause) != 0)
        return AL_EIO;
    int v = schema_version(ctl);
    if (v > SCHEMA_VERSION) {
        *cause = al_xasprintf("store schema version %d is newer than this "
                              "allot (%d); upgrade allot",
                              v, SCHEMA_VERSION);
        return AL_ENOTSUP;
    }
    for (; v < SCHEMA_VERSION; v++) {
        char *sql = al_xasprintf("BEGIN; %s DELETE FROM schema_version;"
                                 " INSERT INTO schema_version VALUES(%d);"
                                 " COMMIT;",
                                 migrations[v], v + 1);
        int rc = exec(ctl, sql, cause);
        free(sql);
        if (rc != 0) {
            exec(ctl, "ROLLBACK", NULL);
            return rc;
        }
        al_info("store: schema migrated to version %d", v + 1);
    }
    return 0;
}

int
al__store_open(al_ctl_t *ctl, char **cause)
{
    char *path = al_xasprintf("%s/allot.db", ctl->state_dir);
    int rc = sqlite3_open_v2(
        path, &ctl->db,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        *cause =
            al_xasprintf("cannot open %s: %s", path,
                         ctl->db ? sqlite3_errmsg(ctl->db) : "out of memory");
        free(path);
        sqlite3_close(ctl->db);
        ctl->db = NULL;
        return AL_EIO;
    }
    free(path);
    sqlite3_busy_timeout(ctl->db, 5000);
    const char *sync = ctl->opts.sync_full ? "PRAGMA synchronous=FULL"
                                           : "PRAGMA synchronous=NORMAL";
    if (exec(ctl, "PRAGMA journal_mode=WAL", cause) != 0 ||
        exec(ctl, sync, cause) != 0 ||
        exec(ctl, "PRAGMA foreign_keys=ON", cause) != 0 ||
        migrate(ctl, cause) != 0)
        goto fail;
    if (sqlite3_prepare_v2(ctl->db,
                           "INSERT OR REPLACE INTO jobs(id, user, queue, "
                           "state, submit_ms, doc) VALUES(?,?,?,?,?,?)",
                           -1, &ctl->st_job, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(ctl->db,
                           "INSERT INTO job_events(job_id, time_ms, event, "
                           "detail) VALUES(?,?,?,?)",
                           -1, &ctl->st_event, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(ctl->db, "BEGIN IMMEDIATE", -1, &ctl->st_begin,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(ctl->db, "COMMIT", -1, &ctl->st_commit, NULL) !=
            SQLITE_OK) {
        *cause = al_xasprintf("store: %s", sqlite3_errmsg(ctl->db));
        goto fail;
    }
    return 0;
fail:
    al__store_close(ctl);
    return AL_EIO;
}

void
al__store_close(al_ctl_t *ctl)
{
    sqlite3_finalize(ctl->st_job);
    sqlite3_finalize(ctl->st_event);
    sqlite3_finalize(ctl->st_begin);
    sqlite3_finalize(ctl->st_commit);
    ctl->st_job = ctl->st_event = ctl->st_begin = ctl->st_commit = NULL;
    sqlite3_close(ctl->db);
    ctl->db = NULL;
}

static int
step_done(al_ctl_t *ctl, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        al_error("store: %s", sqlite3_errmsg(ctl->db));
        return AL_EIO;
    }
    return 0;
}

/* BEGIN and COMMIT are prepared once: compiling them again in every
 * iteration of the loop (sqlite3_exec()) cost more than running them. */
int
al__store_begin(al_ctl_t *ctl)
{
    return step_done(ctl, ctl->st_begin);
}

int
al__store_commit(al_ctl_t *ctl)
{
    return step_done(ctl, ctl->st_commit);
}

void
al__store_rollback(al_ctl_t *ctl)
{
    if (!sqlite3_get_autocommit(ctl->db))
        exec(ctl, "ROLLBACK", NULL);
}

int
al__store_put_job(al_ctl_t *ctl, const al__job_t *j)
{
    json_t *doc = al__job_json(ctl, j, true);
    char *text = al_json_dump(doc);
    json_decref(doc);
    sqlite3_stmt *st = ctl->st_job;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_text(st, 2, j->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, j->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, al__jstate_names[j->state], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, j->submit_ms);
    sqlite3_bind_text(st, 6, text, -1, free);
    return step_done(ctl, st);
}

int
al__store_event(al_ctl_t *ctl, uint64_t job, int64_t ms, const char *event,
                const char *detail)
{
    sqlite3_stmt *st = ctl->st_event;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(st, 2, ms);
    sqlite3_bind_text(st, 3, event, -1, SQLITE_STATIC);
    if (detail != NULL)
        sqlite3_bind_text(st, 4, detail, -1, SQLITE_STATIC);
    return step_done(ctl, st);
}

json_t *
al__store_history(al_ctl_t *ctl, uint64_t job)
{
    json_t *a = json_array();
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctl->db,
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

/* Runs `sql` with one text parameter and one JSON document parameter. */
static int
put_doc(al_ctl_t *ctl, const char *sql, const char *key, json_t *doc)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctl->db, sql, -1, &st, NULL) != SQLITE_OK) {
        json_decref(doc);
        return AL_EIO;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (doc != NULL)
        sqlite3_bind_text(st, 2, al_json_dump(doc), -1, free);
    json_decref(doc);
    int rc = step_done(ctl, st);
    sqlite3_finalize(st);
    return rc;
}

int
al__store_put_queue(al_ctl_t *ctl, const al__queue_t *q)
{
    return put_doc(ctl, "INSERT OR REPLACE INTO queues VALUES(?, ?)", q->name,
                   al__queue_json(q, false));
}

int
al__store_del_queue(al_ctl_t *ctl, const char *name)
{
    return put_doc(ctl, "DELETE FROM queues WHERE name = ?", name, NULL);
}

int
al__store_put_node(al_ctl_t *ctl, const al__node_t *n)
{
    return put_doc(ctl, "INSERT OR REPLACE INTO nodes VALUES(?, ?)", n->name,
                   al__node_json(ctl, n));
}

int
al__store_put_token(al_ctl_t *ctl, const al__token_t *t)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctl->db,
                           "INSERT OR REPLACE INTO tokens VALUES(?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return AL_EIO;
    sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, t->user, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, t->role);
    sqlite3_bind_blob(st, 4, t->salt, sizeof t->salt, SQLITE_STATIC);
    sqlite3_bind_blob(st, 5, t->hash, sizeof t->hash, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, t->created_ms);
    int rc = step_done(ctl, st);
    sqlite3_finalize(st);
    return rc;
}

/* Calls fn for each row of `sql`, whose first column is a JSON document. */
static int
load_docs(al_ctl_t *ctl, const char *sql,
          int (*fn)(al_ctl_t *, const json_t *, char **), char **cause)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctl->db, sql, -1, &st, NULL) != SQLITE_OK) {
        *cause = al_xasprintf("store: %s", sqlite3_errmsg(ctl->db));
        return AL_EIO;
    }
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        json_t *doc = al_json_parse(text, strlen(text), cause);
        if (doc == NULL) {
            rc = AL_EPARSE;
            break;
        }
        rc = fn(ctl, doc, cause);
        json_decref(doc);
    }
    sqlite3_finalize(st);
    return rc;
}

static int
load_queue(al_ctl_t *ctl, const json_t *doc, char **cause)
{
    al__queue_t q;
    if (al__queue_from_json(doc, &q, cause) != 0)
        return AL_EPARSE;
    ctl->queues =
        al_xreallocarray(ctl->queues, (size_t)ctl->nqueues + 1, sizeof q);
    ctl->queues[ctl->nqueues++] = q;
    ctl->queue_gen++;
    return 0;
}

static int
load_node(al_ctl_t *ctl, const json_t *doc, char **cause)
{
    al__node_t n;
    if (al__node_from_json(doc, &n, cause) != 0)
        return AL_EPARSE;
    al__ctl_add_node(ctl, &n);
    return 0;
}

static int
load_job(al_ctl_t *ctl, const json_t *doc, char **cause)
{
    al__job_t *j = al__job_from_json(ctl, doc);
    if (j == NULL) {
        *cause = al_xasprintf("store: malformed job document");
        return AL_EPARSE;
    }
    al__ctl_put_job(ctl, j);
    return 0;
}

int
al__store_load(al_ctl_t *ctl, char **cause)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctl->db,
                           "SELECT id, user, role, salt, hash, created_ms "
                           "FROM tokens",
                           -1, &st, NULL) != SQLITE_OK) {
        *cause = al_xasprintf("store: %s", sqlite3_errmsg(ctl->db));
        return AL_EIO;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        al__token_t t;
        memset(&t, 0, sizeof t);
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (strlen(id) >= sizeof t.id ||
            sqlite3_column_bytes(st, 3) != sizeof t.salt ||
            sqlite3_column_bytes(st, 4) != sizeof t.hash)
            continue;
        memcpy(t.id, id, strlen(id) + 1);
        t.user = al_xstrdup((const char *)sqlite3_column_text(st, 1));
        t.role = sqlite3_column_int(st, 2);
        memcpy(t.salt, sqlite3_column_blob(st, 3), sizeof t.salt);
        memcpy(t.hash, sqlite3_column_blob(st, 4), sizeof t.hash);
        t.created_ms = sqlite3_column_int64(st, 5);
        ctl->tokens =
            al_xreallocarray(ctl->tokens, (size_t)ctl->ntokens + 1, sizeof t);
        ctl->tokens[ctl->ntokens++] = t;
    }
    sqlite3_finalize(st);
    int rc = load_docs(ctl, "SELECT doc FROM queues ORDER BY name", load_queue,
                       cause);
    if (rc == 0)
        rc = load_docs(ctl, "SELECT doc FROM nodes ORDER BY name", load_node,
                       cause);
    if (rc == 0)
        rc =
            load_docs(ctl, "SELECT doc FROM jobs ORDER BY id", load_job, cause);
    return rc;
}
