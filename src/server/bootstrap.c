/*
 * bootstrap.c -- a controller's first start on an empty state: the admin
 * and join tokens (written to STATE/admin-token and STATE/join-token) and
 * the default queue, committed together.  A later start finds them and
 * changes nothing.
 *
 * May call: store.c, auth.c and common.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fs.h"
#include "log.h"
#include "server_int.h"
#include "xmalloc.h"

static int
write_secret(al_ctl_t *ctl, const char *leaf, const char *secret, char **cause)
{
    char *path = al_xasprintf("%s/%s", ctl->state_dir, leaf);
    char *text = al_xasprintf("%s\n", secret);
    int rc = al_fs_write_file(path, text, strlen(text), 0600, AL_FS_SYNC);
    if (rc != 0)
        *cause = al_xasprintf("cannot write %s", path);
    free(text);
    free(path);
    return rc;
}

int
al__bootstrap(al_ctl_t *ctl, char **cause)
{
    int rc = 0;
    if (al__store_begin(ctl) != 0) {
        *cause = al_xasprintf("store: cannot begin a transaction");
        return AL_EIO;
    }
    if (ctl->ntokens == 0) {
        static const struct {
            const char *user, *file;
            int role;
        } first[] = {
            { .user = "admin", .file = "admin-token", .role = ROLE_ADMIN },
            { .user = "agent", .file = "join-token", .role = ROLE_AGENT },
        };
        for (size_t i = 0; rc == 0 && i < sizeof first / sizeof first[0]; i++) {
            al__token_t t;
            char *secret = al__token_create(first[i].user, first[i].role, &t);
            rc = write_secret(ctl, first[i].file, secret, cause);
            free(secret);
            if (rc == 0)
                rc = al__store_put_token(ctl, &t);
            ctl->tokens = al_xreallocarray(ctl->tokens,
                                           (size_t)ctl->ntokens + 1, sizeof t);
            ctl->tokens[ctl->ntokens++] = t;
        }
        if (rc == 0)
            al_info("created the admin token (%s/admin-token) and the join "
                    "token (%s/join-token)",
                    ctl->state_dir, ctl->state_dir);
    }
    if (rc == 0 && ctl->nqueues == 0) {
        al__queue_t q;
        memset(&q, 0, sizeof q);
        q.name = al_xstrdup("default");
        q.idle_util = AL_IDLE_UTIL_DEFAULT;
        for (int r = 0; r < AL_NRES; r++) {
            q.quota[r].deserved = 0;
            q.quota[r].limit = AL_UNLIMITED;
            q.quota[r].weight = 1.0;
        }
        ctl->queues = al_xmalloc(sizeof q);
        ctl->queues[ctl->nqueues++] = q;
        ctl->queue_gen++;
        rc = al__store_put_queue(ctl, &q);
    }
    if (rc == 0)
        rc = al__store_commit(ctl);
    if (rc != 0) {
        al__store_rollback(ctl);
        if (*cause == NULL)
            *cause = al_xasprintf("store: cannot write the first state");
    }
    return rc;
}
