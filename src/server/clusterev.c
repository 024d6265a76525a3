/*
 * clusterev.c -- nodes' and queues' changes on GET /v1/events: a node
 * registered, ready again, lost (its agent went silent), drained (and
 * why) or resumed; a queue created, updated or deleted.  They go on the
 * jobs' streams as events of type node and queue, which every token may
 * see, in the transaction of the change, so that a stream shows them only
 * once they are committed (events.c publishes at the commit).
 *
 * A node's events come from comparing what it is now with what the
 * stream last told of it (ev_state, ev_drained in its entry), when the
 * loop writes it to the store (ctl.c's flush): every path that changes a
 * node (register, a sync after silence, the silent check, drain and
 * resume through the API, a GPU fault) marks it dirty, so none is missed
 * and none is told twice.  A node read from the store starts as told
 * (table.c's al__ctl_add_node()): a restart is not a change.
 *
 * May call: events.c, reason.c (the state names); nothing above them.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "server_int.h"

static void
record(al_ctl_t *ctl, const char *kind, const char *node, const char *queue,
       const char *event, const char *state, const char *detail)
{
    al__event_info_t in = { .ms = al_clock_ms(),
                            .event = event,
                            .detail = detail,
                            .queue = queue,
                            .state = state,
                            .kind = kind,
                            .node = node };
    al__events_record(ctl->events, &in);
}

/* The state a node shows (GET /v1/nodes' "state"). */
static int
shown_state(const al__node_t *n)
{
    return n->state == NS_READY && n->drained ? NS_DRAINING : n->state;
}

/* What the stream was told of n is what it is now. */
static void
told(al__node_t *n)
{
    n->ev_state = n->state;
    n->ev_drained = n->drained;
    n->ev_registered = false;
}

void
al__clusterev_node(al_ctl_t *ctl, al__node_t *n)
{
    const char *state = al__node_state_names[shown_state(n)];
    char detail[256];
    if (n->ev_registered) {
        snprintf(detail, sizeof detail, "%d GPU%s%s", n->ngpus,
                 n->ngpus == 1 ? "" : "s", n->emulated ? " (emulated)" : "");
        record(ctl, "node", n->name, NULL, "registered", state, detail);
    } else if (n->state != n->ev_state && n->state == NS_DOWN) {
        record(ctl, "node", n->name, NULL, "lost", state,
               "its agent stopped reporting; its jobs were requeued");
    } else if (n->state != n->ev_state && n->ev_state == NS_DOWN) {
        record(ctl, "node", n->name, NULL, "ready", state,
               "its agent reports again");
    }
    if (n->drained != n->ev_drained && !n->ev_registered) {
        if (n->drained)
            record(ctl, "node", n->name, NULL, "drained", state,
                   n->drain_reason != NULL ? n->drain_reason
                                           : "drained by an admin");
        else
            record(ctl, "node", n->name, NULL, "resumed", state, NULL);
    }
    told(n);
}

void
al__clusterev_queue(al_ctl_t *ctl, const char *queue, const char *event,
                    const char *detail)
{
    record(ctl, "queue", NULL, queue, event, NULL, detail);
}
