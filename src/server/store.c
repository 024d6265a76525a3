/*
 * store.c -- the controller's state store, whichever database holds it:
 * SQLite (store_sqlite.c, the default: STATE/allot.db) or PostgreSQL
 * (store_pg.c, `--store postgresql://...`).  Both keep the same tables:
 * one row per job, queue, node and token (a JSON document plus the
 * columns worth querying), and the job history (one row per state
 * transition) kept for accounting.  This file turns the controller's
 * objects into rows and back; the backend writes and reads the rows.
 * Only the loop thread calls these functions; it groups everything it
 * changes while handling a batch of requests into one transaction.
 *
 * May call: the backends (through their ops), doc.c and memberdoc.c (the
 * documents), table.c and members.c (loaded objects go into the tables),
 * reason.c (state names) and events.c (what a history row shows on
 * GET /v1/events, once committed); never a handler or the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "json.h"
#include "log.h"
#include "store_int.h"
#include "xmalloc.h"

static bool
is_pg_url(const char *s)
{
    return strncmp(s, "postgres://", 11) == 0 ||
           strncmp(s, "postgresql://", 13) == 0;
}

int
al__store_open(al_ctl_t *ctl, char **cause)
{
    const char *s = ctl->opts.store;
    if (s == NULL || strcmp(s, "sqlite") == 0) {
        ctl->store_ops = &al__store_sqlite;
    } else if (is_pg_url(s)) {
        ctl->store_ops = &al__store_pg;
    } else {
        *cause = al_xasprintf("unknown store '%s': use sqlite (the default: "
                              "STATE/" AL__SQLITE_FILE ") or a PostgreSQL URI "
                              "(postgresql://[user@]host[:port]/database)",
                              s);
        return AL_EINVAL;
    }
    int rc = ctl->store_ops->open(ctl, cause);
    if (rc != 0)
        al__store_close(ctl);
    return rc;
}

void
al__store_close(al_ctl_t *ctl)
{
    if (ctl->store_ops != NULL)
        ctl->store_ops->close(ctl);
}

/* A failed write fails the transaction's COMMIT: committing the others
 * would keep a change in memory (and answered as done) that the store
 * lacks, such as a token or a queue, or a job without its history. */
static int
wrote(al_ctl_t *ctl, int rc)
{
    if (rc != 0)
        ctl->write_failed = true;
    return rc;
}

int
al__store_begin(al_ctl_t *ctl)
{
    ctl->write_failed = false;
    return ctl->store_ops->begin(ctl);
}

int
al__store_commit(al_ctl_t *ctl)
{
    if (ctl->write_failed) {
        al_error("store: a write of this transaction failed: not "
                 "committing it");
        return AL_EIO;
    }
    int rc = ctl->store_ops->commit(ctl);
    if (rc == 0)
        al__events_publish(ctl->events);
    return rc;
}

void
al__store_rollback(al_ctl_t *ctl)
{
    ctl->store_ops->rollback(ctl);
    al__events_drop(ctl->events);
}

int
al__store_put_job(al_ctl_t *ctl, const al__job_t *j)
{
    char *text = al__job_text(ctl, j, true);
    int rc = wrote(
        ctl, ctl->store_ops->put_job(ctl, j, al__jstate_names[j->state], text));
    free(text);
    return rc;
}

/* What GET /v1/events shows with a history row of job id. */
static al__event_info_t
event_info(al_ctl_t *ctl, uint64_t id, int64_t ms, const char *event,
           const char *detail)
{
    const al__job_t *j = al__ctl_job(ctl, id);
    al__event_info_t in = {
        .job = id, .ms = ms, .event = event, .detail = detail
    };
    if (j != NULL) {
        in.name = j->name;
        in.user = j->user;
        in.queue = j->queue;
        in.state = al__jstate_names[j->state];
    }
    return in;
}

int
al__store_event(al_ctl_t *ctl, uint64_t job, int64_t ms, const char *event,
                const char *detail)
{
    int rc = wrote(ctl, ctl->store_ops->event(ctl, job, ms, event, detail));
    if (rc == 0) {
        al__event_info_t in = event_info(ctl, job, ms, event, detail);
        al__events_record(ctl->events, &in);
    }
    return rc;
}

typedef struct tail {
    al_ctl_t *ctl;
    bool more_before;
} tail_t;

static int
tail_row(void *arg, int ncols, const char *const *cols)
{
    tail_t *t = arg;
    if (ncols < 4 || cols[0] == NULL || cols[1] == NULL || cols[2] == NULL)
        return 0;
    al__event_info_t in =
        event_info(t->ctl, strtoull(cols[0], NULL, 10),
                   strtoll(cols[1], NULL, 10), cols[2], cols[3]);
    /* The job's state now says nothing of the state then. */
    in.state = NULL;
    al__events_load(t->ctl->events, &in, t->more_before);
    return 0;
}

static int
count_row(void *arg, int ncols, const char *const *cols)
{
    if (ncols >= 1 && cols[0] != NULL)
        *(long long *)arg = strtoll(cols[0], NULL, 10);
    return 0;
}

int
al__store_load_events(al_ctl_t *ctl, int n)
{
    if (ctl->events == NULL)
        return 0;
    char lim[24];
    snprintf(lim, sizeof lim, "%d", n);
    const char *const v[] = { lim };
    long long total = 0;
    /* Whether there are more than n: counted up to n + 1 only. */
    int rc = ctl->store_ops->read(ctl, "events_count", 1, v, count_row, &total);
    tail_t t = { .ctl = ctl, .more_before = total > n };
    if (rc == 0)
        rc = ctl->store_ops->read(ctl, "events_tail", 1, v, tail_row, &t);
    return rc;
}

json_t *
al__store_history(al_ctl_t *ctl, uint64_t job)
{
    return ctl->store_ops->history(ctl, job);
}

int
al__store_write(al_ctl_t *ctl, const char *name, int n, const char *const *v)
{
    return wrote(ctl, ctl->store_ops->write(ctl, name, n, v));
}

int
al__store_read(al_ctl_t *ctl, const char *name, int n, const char *const *v,
               al__store_row_fn fn, void *arg)
{
    return ctl->store_ops->read(ctl, name, n, v, fn, arg);
}

/* Writes a document (NULL: deletes the row of key). */
static int
put_doc(al_ctl_t *ctl, al__doc_table_t table, const char *key, json_t *doc)
{
    char *text = doc != NULL ? al_json_dump(doc) : NULL;
    json_decref(doc);
    int rc = wrote(ctl, ctl->store_ops->put_doc(ctl, table, key, text));
    free(text);
    return rc;
}

int
al__store_put_queue(al_ctl_t *ctl, const al__queue_t *q)
{
    return put_doc(ctl, AL__DOC_QUEUES, q->name, al__queue_json(q, false));
}

int
al__store_del_queue(al_ctl_t *ctl, const char *name)
{
    return put_doc(ctl, AL__DOC_QUEUES, name, NULL);
}

int
al__store_put_node(al_ctl_t *ctl, const al__node_t *n)
{
    return put_doc(ctl, AL__DOC_NODES, n->name, al__node_json(ctl, n));
}

int
al__store_put_token(al_ctl_t *ctl, const al__token_t *t)
{
    return wrote(ctl, ctl->store_ops->put_token(ctl, t));
}

int
al__store_put_user(al_ctl_t *ctl, const al__user_t *u)
{
    return put_doc(ctl, AL__DOC_USERS, u->name, al__user_json(u));
}

int
al__store_put_group(al_ctl_t *ctl, const char *name, const al__group_t *g)
{
    return put_doc(ctl, AL__DOC_GROUPS, name,
                   g != NULL ? al__group_json(g) : NULL);
}

static int
load_user(al_ctl_t *ctl, const char *text, char **cause)
{
    json_t *doc = al_json_parse(text, strlen(text), cause);
    if (doc == NULL)
        return AL_EPARSE;
    al__user_t u;
    int rc = al__user_from_json(doc, NULL, &u, cause) != 0 ? AL_EPARSE : 0;
    json_decref(doc);
    if (rc == 0)
        al__ctl_put_user(ctl, &u);
    return rc;
}

static int
load_group(al_ctl_t *ctl, const char *text, char **cause)
{
    json_t *doc = al_json_parse(text, strlen(text), cause);
    if (doc == NULL)
        return AL_EPARSE;
    al__group_t g;
    int rc = al__group_from_json(doc, NULL, &g, cause) != 0 ? AL_EPARSE : 0;
    json_decref(doc);
    if (rc == 0)
        al__ctl_put_group(ctl, &g);
    return rc;
}

static int
load_queue(al_ctl_t *ctl, const char *text, char **cause)
{
    json_t *doc = al_json_parse(text, strlen(text), cause);
    if (doc == NULL)
        return AL_EPARSE;
    al__queue_t q;
    int rc = al__queue_from_json(doc, &q, cause) != 0 ? AL_EPARSE : 0;
    json_decref(doc);
    if (rc != 0)
        return rc;
    ctl->queues =
        al_xreallocarray(ctl->queues, (size_t)ctl->nqueues + 1, sizeof q);
    ctl->queues[ctl->nqueues++] = q;
    ctl->queue_gen++;
    return 0;
}

static int
load_node(al_ctl_t *ctl, const char *text, char **cause)
{
    json_t *doc = al_json_parse(text, strlen(text), cause);
    if (doc == NULL)
        return AL_EPARSE;
    al__node_t n;
    int rc = al__node_from_json(doc, &n, cause) != 0 ? AL_EPARSE : 0;
    if (rc == 0)
        al__ctl_add_node(ctl, &n);
    json_decref(doc);
    return rc;
}

static int
load_job(al_ctl_t *ctl, const char *text, char **cause)
{
    json_t *doc = al_json_parse(text, strlen(text), cause);
    if (doc == NULL)
        return AL_EPARSE;
    al__job_t *j = al__job_from_json(ctl, doc);
    if (j != NULL)
        al__ctl_put_job(ctl, j);
    json_decref(doc);
    if (j == NULL) {
        *cause = al_xasprintf("store: malformed job document");
        return AL_EPARSE;
    }
    return 0;
}

int
al__store_load(al_ctl_t *ctl, char **cause)
{
    const al__store_ops_t *o = ctl->store_ops;
    int rc = o->load_tokens(ctl, cause);
    if (rc == 0)
        rc = o->load_docs(ctl, AL__DOC_USERS, load_user, cause);
    if (rc == 0)
        rc = o->load_docs(ctl, AL__DOC_GROUPS, load_group, cause);
    if (rc == 0)
        rc = o->load_docs(ctl, AL__DOC_QUEUES, load_queue, cause);
    if (rc == 0)
        rc = o->load_docs(ctl, AL__DOC_NODES, load_node, cause);
    if (rc == 0)
        rc = o->load_docs(ctl, AL__DOC_JOBS, load_job, cause);
    return rc;
}
