/*
 * fairshare.c -- the queues' decayed GPU usage behind time-based fair
 * share, kept in the store (table fairshare: queue, milli-GPU-seconds,
 * the wall time it was written) so that a restart of the controller, a
 * kill -9 included, starts from what the queues used rather than from
 * nothing.  The loop writes it every few seconds in the transaction of
 * its iteration (and at a clean stop); a start reads it back, decayed
 * over the time the controller was away.  The half-life is the
 * controller's --fair-share-half-life (7 days by default, as in the
 * simulator).
 *
 * May call: store.c (its named statements), table.c and the core's
 * al_usage_decay().  The loop (ctl.c) and cycle.c call it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "server_int.h"

/* How often the loop writes the usage (ms): what a kill -9 may lose. */
#define SAVE_EVERY_MS 2000

int64_t
al__fairshare_half_life(const al_ctl_t *ctl)
{
    return ctl->opts.fairshare_half_life_s > 0 ? ctl->opts.fairshare_half_life_s
                                               : INT64_C(7) * 86400;
}

void
al__fairshare_save(al_ctl_t *ctl, int64_t every_ms)
{
    int64_t mono = al_clock_mono_ms();
    if (every_ms < 0)
        every_ms = SAVE_EVERY_MS;
    if (ctl->fairshare_saved_ms != 0 &&
        mono - ctl->fairshare_saved_ms < every_ms)
        return;
    if (!ctl->fairshare_dirty && ctl->fairshare_gen == ctl->queue_gen + 1)
        return;
    ctl->fairshare_dirty = false;
    ctl->fairshare_saved_ms = mono;
    ctl->fairshare_gen = ctl->queue_gen + 1;
    /* As of usage_last, the wall second the cycle accrued it to. */
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, ctl->usage_last * 1000);
    al__store_write(ctl, "fairshare_clear", 0, NULL);
    for (int i = 0; i < ctl->nqueues; i++) {
        const al__queue_t *q = &ctl->queues[i];
        char u[32];
        double v = q->usage;
        snprintf(u, sizeof u, "%" PRId64,
                 isfinite(v) && v > 0 && v < 9e18 ? (int64_t)llround(v) : 0);
        const char *const vals[] = { q->name, u, t };
        al__store_write(ctl, "fairshare_put", 3, vals);
    }
}

typedef struct load_arg {
    al_ctl_t *ctl;
    int64_t now_ms;
    int n;
} load_arg_t;

static int
load_row(void *arg, int ncols, const char *const *cols)
{
    load_arg_t *a = arg;
    if (ncols < 3 || cols[0] == NULL || cols[1] == NULL || cols[2] == NULL)
        return 0;
    al__queue_t *q = al__ctl_queue(a->ctl, cols[0]);
    if (q == NULL)
        return 0;
    char *end;
    double v = strtod(cols[1], &end);
    int64_t at = strtoll(cols[2], NULL, 10);
    if (end == cols[1] || !isfinite(v) || v < 0)
        return 0;
    int64_t away = (a->now_ms - at) / 1000;
    q->usage =
        away > 0 ? al_usage_decay(v, away, al__fairshare_half_life(a->ctl)) : v;
    a->n++;
    return 0;
}

void
al__fairshare_load(al_ctl_t *ctl)
{
    load_arg_t a = { .ctl = ctl, .now_ms = al_clock_ms(), .n = 0 };
    if (al__store_read(ctl, "fairshare_all", 0, NULL, load_row, &a) != 0)
        al_error("store: cannot read the queues' fair-share usage; it "
                 "starts from nothing");
    else if (a.n > 0)
        al_info("fair share: the usage of %d queues read back", a.n);
}
