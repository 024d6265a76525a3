/*
 * events.c -- the event heap of a run: completions and Tiresias priority
 * changes, min by time, then kind, then job (deterministic).  An event
 * whose job has started or stopped since (its seq differs) is stale and
 * dropped when it comes to the top.
 *
 * May call: nothing but the allocator (src/common).
 */

#include "sim.h"
#include "sim_int.h"

static bool
ev_less(const event_t *a, const event_t *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    return a->job < b->job;
}

void
al__ev_push(sim_t *s, event_t e)
{
    if (s->nheap == s->capheap) {
        s->capheap = s->capheap ? 2 * s->capheap : 1024;
        s->heap = al_xrealloc(s->heap, (size_t)s->capheap * sizeof(event_t));
    }
    int i = s->nheap++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!ev_less(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

event_t
al__ev_pop(sim_t *s)
{
    event_t top = s->heap[0];
    event_t last = s->heap[--s->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && ev_less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_less(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0)
        s->heap[i] = last;
    return top;
}

/* Drops stale events at the top; returns whether one is left. */
bool
al__ev_clean(sim_t *s)
{
    while (s->nheap > 0) {
        const event_t *e = &s->heap[0];
        const sjob_t *j = &s->jobs[e->job];
        if (j->state == S_RUNNING && j->seq == e->seq)
            return true;
        al__ev_pop(s);
    }
    return false;
}
