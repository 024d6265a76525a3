/*
 * jobcounts.c -- the active jobs counted by queue, state and class, and
 * the pending ones by why they wait, and each user's by state, kept up
 * to date as jobs change
 * rather than counted at each look: GET /metrics and GET /v1/summary read
 * them in time proportional to the queues, not to the jobs.
 *
 * Each job remembers what it adds (al__job_t's jc_* fields: its queue's
 * and its user's slots, state, class, reason bucket and how many it
 * counts for), and
 * al__jobcounts_sync() moves that when any of them changes.  It is called
 * where those change: state.c's al__ctl_set_state() and table.c's
 * al__ctl_put_job() (a new job, or an array's element taking its slot),
 * and the cycle where it sets why a job waits.  An array's parent counts
 * for its elements that have no job yet (al__array_t.nborn counts those
 * that have one).  al__jobcounts_rebuild() counts from scratch after a
 * load; al__jobcounts_check() recounts the way the scan over every job
 * did and compares: with ALLOT_DEBUG_JOBCOUNTS set in its environment,
 * the controller checks after every commit and aborts on a difference
 * (the e2e scenario `jobcounts` runs that way).
 *
 * May call: common's buffer; nothing else of the server (table.c calls
 * it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "server_int.h"
#include "xmalloc.h"

#define NACT (JS_RUNNING + 1)

/* The slot of queue name q in jc, added when new. */
static int
slot_of(al__jobcounts_t *jc, const char *q)
{
    if (jc->last >= 0 && jc->last < jc->nq &&
        strcmp(jc->q[jc->last].name, q) == 0)
        return jc->last;
    for (int i = 0; i < jc->nq; i++)
        if (strcmp(jc->q[i].name, q) == 0)
            return jc->last = i;
    if (jc->nq == jc->cap) {
        jc->cap = jc->cap ? 2 * jc->cap : 16;
        jc->q = al_xreallocarray(jc->q, (size_t)jc->cap, sizeof *jc->q);
    }
    al__jcq_t *s = &jc->q[jc->nq];
    memset(s, 0, sizeof *s);
    s->name = al_xstrdup(q);
    return jc->last = jc->nq++;
}

/* The slot of user name u in jc, added when new. */
static int
user_of(al__jobcounts_t *jc, const char *u)
{
    if (jc->ulast >= 0 && jc->ulast < jc->nu &&
        strcmp(jc->u[jc->ulast].name, u) == 0)
        return jc->ulast;
    for (int i = 0; i < jc->nu; i++)
        if (strcmp(jc->u[i].name, u) == 0)
            return jc->ulast = i;
    if (jc->nu == jc->ucap) {
        jc->ucap = jc->ucap ? 2 * jc->ucap : 16;
        jc->u = al_xreallocarray(jc->u, (size_t)jc->ucap, sizeof *jc->u);
    }
    al__jcu_t *s = &jc->u[jc->nu];
    memset(s, 0, sizeof *s);
    s->name = al_xstrdup(u);
    return jc->ulast = jc->nu++;
}

/* What j adds now: *n jobs of state *st, class *cls, reason bucket *why
 * (-1 for a running job); *n is 0 when it adds nothing. */
static void
key_of(const al__job_t *j, int *st, int *cls, int *why, uint64_t *n)
{
    *n = 0;
    *st = *cls = *why = -1;
    if (j->state > JS_RUNNING || j->cls < 0 || j->cls >= al__njclasses)
        return;
    *cls = j->cls;
    if (j->array != NULL) {
        /* An array's parent: its elements with no job yet, pending, or
         * held with it. */
        int64_t left = j->array->as.count - j->array->nborn;
        if (left <= 0)
            return;
        *n = (uint64_t)left;
        *st = j->state == JS_HELD ? JS_HELD : JS_PENDING;
        *why = *st == JS_HELD ? (int)AL_WHY_HELD : AL__WHY_ARRAY;
        return;
    }
    *n = 1;
    *st = (int)j->state;
    if (j->state == JS_HELD)
        *why = (int)AL_WHY_HELD;
    else if (j->state == JS_PENDING && j->array_wait)
        *why = AL__WHY_ARRAY;
    else if (j->state == JS_PENDING)
        *why = j->why_valid && (int)j->why.code >= 0 &&
                       (int)j->why.code < (int)AL_WHY_COUNT
                   ? (int)j->why.code
                   : AL__WHY_UNKNOWN;
}

static void
add(al__jobcounts_t *jc, int q, int u, int st, int cls, int why, uint64_t n,
    bool minus)
{
    uint64_t *c = &jc->q[q].n[st][cls];
    *c = minus ? *c - n : *c + n;
    c = &jc->u[u].n[st];
    *c = minus ? *c - n : *c + n;
    if (why >= 0)
        jc->why[why] = minus ? jc->why[why] - n : jc->why[why] + n;
}

void
al__jobcounts_sync(al_ctl_t *ctl, al__job_t *j)
{
    al__jobcounts_t *jc = &ctl->jc;
    int st, cls, why;
    uint64_t n;
    key_of(j, &st, &cls, &why, &n);
    int q = j->jc_n > 0 ? j->jc_q : -1;
    int u = j->jc_n > 0 ? j->jc_u : -1;
    if (n > 0 && (q < 0 || j->jc_qname != j->queue))
        q = slot_of(jc, j->queue);
    if (n > 0 && (u < 0 || j->jc_uname != j->user))
        u = user_of(jc, j->user);
    if (n == j->jc_n &&
        (n == 0 || (q == j->jc_q && u == j->jc_u && st == j->jc_state &&
                    cls == j->jc_cls && why == j->jc_why)))
        return;
    if (j->jc_n > 0)
        add(jc, j->jc_q, j->jc_u, j->jc_state, j->jc_cls, j->jc_why, j->jc_n,
            true);
    if (n > 0)
        add(jc, q, u, st, cls, why, n, false);
    j->jc_n = n;
    j->jc_q = q;
    j->jc_u = u;
    j->jc_qname = j->queue;
    j->jc_uname = j->user;
    j->jc_state = (int8_t)st;
    j->jc_cls = (int8_t)cls;
    j->jc_why = (int8_t)why;
}

void
al__jobcounts_rebuild(al_ctl_t *ctl)
{
    al__jobcounts_t *jc = &ctl->jc;
    for (int i = 0; i < jc->nq; i++)
        memset(jc->q[i].n, 0, sizeof jc->q[i].n);
    for (int i = 0; i < jc->nu; i++)
        memset(jc->u[i].n, 0, sizeof jc->u[i].n);
    memset(jc->why, 0, sizeof jc->why);
    for (uint64_t i = 0; i < ctl->njobs; i++) {
        al__job_t *j = ctl->jobs[i];
        if (j == NULL)
            continue;
        j->jc_n = 0;
        if (j->array != NULL) {
            int64_t born = 0;
            for (int64_t k = 1; k <= j->array->as.count; k++)
                if (i + (uint64_t)k < ctl->njobs &&
                    ctl->jobs[i + (uint64_t)k] != NULL)
                    born++;
            j->array->nborn = born;
        }
    }
    for (uint64_t i = 0; i < ctl->njobs; i++)
        if (ctl->jobs[i] != NULL)
            al__jobcounts_sync(ctl, ctl->jobs[i]);
}

void
al__jobcounts_fini(al__jobcounts_t *jc)
{
    for (int i = 0; i < jc->nq; i++)
        free(jc->q[i].name);
    free(jc->q);
    for (int i = 0; i < jc->nu; i++)
        free(jc->u[i].name);
    free(jc->u);
    jc->q = NULL;
    jc->u = NULL;
    jc->nq = jc->cap = jc->nu = jc->ucap = 0;
    jc->last = jc->ulast = -1;
}

void
al__jobcounts_user(const al_ctl_t *ctl, const char *user,
                   uint64_t n[JS_RUNNING + 1])
{
    memset(n, 0, (JS_RUNNING + 1) * sizeof *n);
    for (int i = 0; i < ctl->jc.nu; i++)
        if (strcmp(ctl->jc.u[i].name, user) == 0) {
            memcpy(n, ctl->jc.u[i].n, sizeof ctl->jc.u[i].n);
            return;
        }
}

uint64_t *
al__jobcounts_cells(const al_ctl_t *ctl, uint64_t why[AL__WHY_N])
{
    const al__jobcounts_t *jc = &ctl->jc;
    size_t nq = (size_t)ctl->nqueues + 1;
    size_t per = (size_t)NACT * (size_t)al__njclasses;
    uint64_t *cell = al_xcalloc(nq * per, sizeof *cell);
    for (int i = 0; i < jc->nq; i++) {
        const al__jcq_t *s = &jc->q[i];
        size_t qi = nq - 1; /* a queue gone, unless found */
        for (int k = 0; k < ctl->nqueues; k++)
            if (strcmp(ctl->queues[k].name, s->name) == 0) {
                qi = (size_t)k;
                break;
            }
        for (int st = 0; st < NACT; st++)
            for (int c = 0; c < al__njclasses; c++)
                cell[qi * per + (size_t)st * (size_t)al__njclasses +
                     (size_t)c] += s->n[st][c];
    }
    memcpy(why, jc->why, sizeof jc->why);
    return cell;
}

/* The counts by a scan over every active job, as GET /metrics took them
 * at each scrape before they were kept: the reference of the check. */
static uint64_t *
recount(const al_ctl_t *ctl, uint64_t why[AL__WHY_N], uint64_t *byuser)
{
    size_t nq = (size_t)ctl->nqueues + 1; /* the last: a queue gone */
    size_t ncell = nq * NACT * (size_t)al__njclasses;
    uint64_t *cell = al_xcalloc(ncell, sizeof *cell);
    memset(why, 0, AL__WHY_N * sizeof *why);
    const al__job_t *owner = NULL; /* the active array whose slots these are */
    uint64_t owner_end = 0;        /* the id of its last element */
    for (uint64_t i = ctl->active_lo; i < ctl->njobs; i++) {
        const al__job_t *j = ctl->jobs[i];
        if (owner != NULL && i + 1 > owner_end)
            owner = NULL;
        if (j != NULL && j->array != NULL) {
            if (j->state <= JS_RUNNING) {
                owner = j;
                owner_end = j->id + (uint64_t)j->array->as.count;
            }
            continue;
        }
        al__jstate_t st = j != NULL ? j->state : JS_PENDING;
        if (j == NULL && owner != NULL) { /* an element with no job yet */
            j = owner;
            st = owner->state == JS_HELD ? JS_HELD : JS_PENDING;
        }
        if (j == NULL || st > JS_RUNNING || j->cls < 0 ||
            j->cls >= al__njclasses)
            continue;
        int q = -1;
        for (int k = 0; k < ctl->nqueues; k++)
            if (strcmp(ctl->queues[k].name, j->queue) == 0) {
                q = k;
                break;
            }
        size_t qi = q < 0 ? nq - 1 : (size_t)q;
        cell[(qi * NACT + (size_t)st) * (size_t)al__njclasses +
             (size_t)j->cls]++;
        /* By user: in the kept counts' slots, the last for a user they
         * lack. */
        int u = ctl->jc.nu;
        for (int k = 0; k < ctl->jc.nu; k++)
            if (strcmp(ctl->jc.u[k].name, j->user) == 0) {
                u = k;
                break;
            }
        byuser[(size_t)u * NACT + (size_t)st]++;
        if (st == JS_HELD)
            why[AL_WHY_HELD]++;
        else if (st == JS_PENDING && (j == owner || j->array_wait))
            why[AL__WHY_ARRAY]++;
        else if (st == JS_PENDING)
            why[j->why_valid && (int)j->why.code >= 0 &&
                        (int)j->why.code < (int)AL_WHY_COUNT
                    ? (int)j->why.code
                    : AL__WHY_UNKNOWN]++;
    }
    return cell;
}

int
al__jobcounts_check(const al_ctl_t *ctl, char **cause)
{
    uint64_t kept_why[AL__WHY_N], full_why[AL__WHY_N];
    uint64_t *kept = al__jobcounts_cells(ctl, kept_why);
    size_t nu = (size_t)ctl->jc.nu;
    uint64_t *byuser = al_xcalloc((nu + 1) * NACT, sizeof *byuser);
    uint64_t *full = recount(ctl, full_why, byuser);
    size_t nq = (size_t)ctl->nqueues + 1;
    al_buf_t b;
    al_buf_init(&b);
    for (size_t u = 0; u <= nu; u++)
        for (int st = 0; st < NACT; st++) {
            uint64_t k = u < nu ? ctl->jc.u[u].n[st] : 0;
            if (k != byuser[u * NACT + (size_t)st])
                al_buf_printf(
                    &b, "%suser %s, %s: kept %llu, counted %llu",
                    b.len ? "; " : "",
                    u < nu ? ctl->jc.u[u].name : "(none kept)",
                    al__jstate_names[st], (unsigned long long)k,
                    (unsigned long long)byuser[u * NACT + (size_t)st]);
        }
    free(byuser);
    for (size_t q = 0; q < nq; q++)
        for (int st = 0; st < NACT; st++)
            for (int c = 0; c < al__njclasses; c++) {
                size_t k =
                    (q * NACT + (size_t)st) * (size_t)al__njclasses + (size_t)c;
                if (kept[k] != full[k])
                    al_buf_printf(
                        &b, "%squeue %s, %s, class %s: kept %llu, counted %llu",
                        b.len ? "; " : "",
                        q < nq - 1 ? ctl->queues[q].name : "(gone)",
                        al__jstate_names[st], al__jclasses[c].name,
                        (unsigned long long)kept[k],
                        (unsigned long long)full[k]);
            }
    for (int w = 0; w < AL__WHY_N; w++)
        if (kept_why[w] != full_why[w])
            al_buf_printf(&b, "%sreason %d: kept %llu, counted %llu",
                          b.len ? "; " : "", w, (unsigned long long)kept_why[w],
                          (unsigned long long)full_why[w]);
    free(kept);
    free(full);
    if (b.len == 0) {
        al_buf_fini(&b);
        return 0;
    }
    if (cause != NULL)
        *cause = al_buf_steal(&b);
    else
        al_buf_fini(&b);
    return AL_EINVAL;
}
