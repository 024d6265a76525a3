/*
 * store_base.c -- what both store backends (store_sqlite.c, store_pg.c)
 * share below store.c: the forward migrations of the schema and taking a
 * stored token row into the token table.
 *
 * May call: nothing of the server but the token table it fills.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "log.h"
#include "store_int.h"
#include "xmalloc.h"

int
al__store_migrate(void *db, int (*exec)(void *, const char *, char **),
                  int (*version)(void *, char **),
                  const char *const *migrations, int n, char **cause)
{
    if (exec(db,
             "CREATE TABLE IF NOT EXISTS schema_version(version "
             "INTEGER NOT NULL)",
             cause) != 0)
        return AL_EIO;
    int v = version(db, cause);
    if (v < 0)
        return AL_EIO;
    if (v > n) {
        *cause = al_xasprintf("store schema version %d is newer than this "
                              "allot (%d); upgrade allot",
                              v, n);
        return AL_ENOTSUP;
    }
    for (; v < n; v++) {
        char *sql = al_xasprintf("BEGIN; %s DELETE FROM schema_version;"
                                 " INSERT INTO schema_version VALUES(%d);"
                                 " COMMIT;",
                                 migrations[v], v + 1);
        int rc = exec(db, sql, cause);
        free(sql);
        if (rc != 0) {
            exec(db, "ROLLBACK", NULL);
            return rc;
        }
        al_info("store: schema migrated to version %d", v + 1);
    }
    return 0;
}

void
al__store_add_token(al_ctl_t *ctl, const char *id, const char *user, int role,
                    const void *salt, size_t nsalt, const void *hash,
                    size_t nhash, int64_t created_ms)
{
    al__token_t t;
    memset(&t, 0, sizeof t);
    if (id == NULL || user == NULL || strlen(id) >= sizeof t.id ||
        nsalt != sizeof t.salt || nhash != sizeof t.hash)
        return;
    memcpy(t.id, id, strlen(id) + 1);
    t.user = al_xstrdup(user);
    t.role = role;
    memcpy(t.salt, salt, sizeof t.salt);
    memcpy(t.hash, hash, sizeof t.hash);
    t.created_ms = created_ms;
    ctl->tokens =
        al_xreallocarray(ctl->tokens, (size_t)ctl->ntokens + 1, sizeof t);
    ctl->tokens[ctl->ntokens++] = t;
}
