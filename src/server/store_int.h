/*
 * store_int.h -- under store.c (see server_int.h for the map): the
 * operations a backend of the state store implements (store_sqlite.c,
 * store_pg.c) and what the backends share (store_base.c).  Only the
 * store's files include it; the layers above use the al__store_*
 * functions of server_int.h.
 */
#ifndef AL_SERVER_STORE_INT_H
#define AL_SERVER_STORE_INT_H

#include "server_int.h"

/* The tables of JSON documents keyed by name, besides jobs and tokens. */
typedef enum {
    AL__DOC_QUEUES = 0,
    AL__DOC_NODES,
    AL__DOC_JOBS, /* loaded only: written by put_job */
    AL__DOC_USERS,
    AL__DOC_GROUPS
} al__doc_table_t;

typedef struct al__store_ops {
    /* Opens (and migrates) the store; sets ctl->store.  0, or an AL_E*
     * code with a malloc()ed message in *cause. */
    int (*open)(al_ctl_t *ctl, char **cause);
    void (*close)(al_ctl_t *ctl); /* also after a failed open */
    int (*begin)(al_ctl_t *ctl);
    int (*commit)(al_ctl_t *ctl);
    void (*rollback)(al_ctl_t *ctl);
    int (*put_job)(al_ctl_t *ctl, const al__job_t *j, const char *state,
                   const char *doc);
    int (*event)(al_ctl_t *ctl, uint64_t job, int64_t ms, const char *event,
                 const char *detail);
    json_t *(*history)(al_ctl_t *ctl, uint64_t job);
    /* Writes the document of key in table (any but AL__DOC_JOBS), or
     * deletes it when doc is NULL. */
    int (*put_doc)(al_ctl_t *ctl, al__doc_table_t table, const char *key,
                   const char *doc);
    int (*put_token)(al_ctl_t *ctl, const al__token_t *t);
    /* Calls al__store_add_token() for each stored token. */
    int (*load_tokens)(al_ctl_t *ctl, char **cause);
    /* Calls fn for each document of table, in key order (jobs by id). */
    int (*load_docs)(al_ctl_t *ctl, al__doc_table_t table,
                     int (*fn)(al_ctl_t *, const char *, char **),
                     char **cause);
    /* A statement of the backend's table by name (both backends name the
     * same ones: the usage history's, history.c's), with n parameters as
     * text (NULL for SQL NULL).  write: in the transaction; read: each row
     * to fn as text columns (NULL for NULL), stopping when fn returns
     * nonzero.  0 or AL_EIO (AL_ENOENT for an unknown name). */
    int (*write)(al_ctl_t *ctl, const char *name, int n, const char *const *v);
    int (*read)(al_ctl_t *ctl, const char *name, int n, const char *const *v,
                al__store_row_fn fn, void *arg);
} al__store_ops_t;

extern const al__store_ops_t al__store_sqlite, al__store_pg;
/* The SQLite backend's file under the state directory. */
#define AL__SQLITE_FILE "allot.db"

/* For the backends' open: brings the schema to version n by the forward
 * migrations (migration i goes from version i to i + 1).  exec runs SQL
 * (errors in *cause, or logged when cause is NULL); version reads
 * schema_version (0 when empty, negative on error).  0, AL_ENOTSUP for a
 * schema newer than n, or AL_EIO. */
int al__store_migrate(void *db, int (*exec)(void *, const char *, char **),
                      int (*version)(void *, char **),
                      const char *const *migrations, int n, char **cause);

/* For the backends' load_tokens: one stored token (a malformed row, with
 * an id, salt or hash of the wrong length, is skipped). */
void al__store_add_token(al_ctl_t *ctl, const char *id, const char *user,
                         int role, const void *salt, size_t nsalt,
                         const void *hash, size_t nhash, int64_t created_ms);

#endif /* AL_SERVER_STORE_INT_H */
