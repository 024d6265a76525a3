/*
 * api_events.c -- GET /v1/events: the jobs' state changes and the
 * scheduler's decisions as server-sent events (text/event-stream), from
 * the event hub (events.c).  The handler checks the query and who may see
 * what (a user their own jobs' events, an admin all) and makes the
 * stream; the intake (server.c) sends it.
 *
 * Query: since=ID (or the Last-Event-ID header): the events after it;
 * last=N: without a cursor, the last N events first; job=ID: one job's;
 * follow=false: end once caught up; poll=S: end once something was sent
 * or after S seconds (a long poll).  docs/server.md, "Events".
 *
 * May call: events.c, table.c and req.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

void
al__api_events(al_ctl_t *ctl, al__req_t *req)
{
    al__events_query_t q;
    char *cause = NULL;
    if (al__events_query_parse(al__req_arg(req, "since"), req->last_event_id,
                               al__req_arg(req, "last"),
                               al__req_arg(req, "job"),
                               al__req_arg(req, "follow"),
                               al__req_arg(req, "poll"), &q, &cause) != 0) {
        al__reply_error(req, 400, "bad_request", "%s", cause);
        free(cause);
        return;
    }
    bool admin = al__req_admin(req);
    if (q.job != 0) {
        const al__job_t *j = al__ctl_job(ctl, q.job);
        if (j == NULL || (!admin && strcmp(j->user, req->user) != 0)) {
            /* Another's job reads as absent, as on GET /v1/jobs/ID. */
            al__reply_error(req, 404, "not_found", "no job %llu",
                            (unsigned long long)q.job);
            return;
        }
    }
    if (ctl->events == NULL) {
        al__reply_error(req, 503, "unavailable", "no event hub");
        return;
    }
    req->sse = al__events_open(ctl->events, &q, admin ? NULL : req->user);
    req->status = 200;
}
