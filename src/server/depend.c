/*
 * depend.c -- Slurm's dependencies of a job (`dependency`, parsed by
 * common's depspec.c): checked at submission (the jobs exist, the caller
 * may see them, aftercorr joins two arrays) and, at each cycle, where they
 * stand.  A dependency on a job array's parent is on the whole array: the
 * parent ends once all its elements have, completed only if they all did
 * (array.c).  `after` (afterok by id) stays cycle.c's.
 *
 * May call: table.c (jobs by id, read only) and common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"
#include "xmalloc.h"

/* Where one dependency on job d stands, for kinds that look at d's end. */
static al_dep_state_t
on_end(al_dep_kind_t kind, const al__job_t *d)
{
    if (d->state <= JS_RUNNING)
        return AL_DEPS_WAITING;
    bool ok = d->state == JS_COMPLETED;
    switch (kind) {
    case AL_DEP_AFTEROK:
    case AL_DEP_AFTERCORR:
        return ok ? AL_DEPS_SATISFIED : AL_DEPS_NEVER;
    case AL_DEP_AFTERNOTOK:
        return ok ? AL_DEPS_NEVER : AL_DEPS_SATISFIED;
    default:
        return AL_DEPS_SATISFIED;
    }
}

/* aftercorr on array a: j (an element) waits for a's element of j's index;
 * an index a does not have is nothing to wait for. */
static al_dep_state_t
corr(al_ctl_t *ctl, const al__job_t *j, const al__job_t *a)
{
    if (j->array_job == 0 || a->array == NULL)
        return AL_DEPS_NEVER; /* refused at submission; a stored oddity */
    int64_t k = al_array_spec_pos(&a->array->as, j->array_index);
    if (k < 0)
        return AL_DEPS_SATISFIED;
    const al__job_t *e = al__ctl_job(ctl, a->id + 1 + (uint64_t)k);
    if (e == NULL) /* no job yet: waits, unless its array has ended */
        return a->state <= JS_RUNNING ? AL_DEPS_WAITING : AL_DEPS_NEVER;
    return on_end(AL_DEP_AFTERCORR, e);
}

/* singleton: waits while an earlier job of the same user and name is
 * pending, held or running, as Slurm's does.  An array counts as a whole
 * while any of its elements has not ended (its parent stays active until
 * then), held or not, and its elements need no look of their own; the
 * elements of j's own array before j are jobs of the same name like any
 * (one at a time). */
static al_dep_state_t
singleton(al_ctl_t *ctl, const al__job_t *j)
{
    for (uint64_t i = al__ctl_first_active(ctl); i + 1 < j->id; i++) {
        const al__job_t *o = ctl->jobs[i];
        if (o == NULL || o->state > JS_RUNNING || o->id == j->array_job)
            continue;
        if (strcmp(o->name, j->name) == 0 && strcmp(o->user, j->user) == 0)
            return AL_DEPS_WAITING;
        if (o->array != NULL)
            i += (uint64_t)o->array->as.count;
    }
    return AL_DEPS_SATISFIED;
}

bool
al__depend_never_own(al_ctl_t *ctl, const al__job_t *j)
{
    for (int i = 0; i < j->ndeps; i++) {
        const al_depspec_t *d = &j->deps[i];
        const al__job_t *dj =
            d->kind == AL_DEP_AFTERCORR ? al__ctl_job(ctl, d->job) : NULL;
        if (dj != NULL && corr(ctl, j, dj) == AL_DEPS_NEVER)
            return true;
    }
    return false;
}

al_dep_state_t
al__depend_state(al_ctl_t *ctl, const al__job_t *j)
{
    if (j->ndeps == 0)
        return AL_DEPS_NONE;
    al_dep_state_t st = AL_DEPS_SATISFIED;
    for (int i = 0; i < j->ndeps && st != AL_DEPS_NEVER; i++) {
        const al_depspec_t *d = &j->deps[i];
        al_dep_state_t one;
        const al__job_t *dj = al__ctl_job(ctl, d->job);
        if (d->kind == AL_DEP_SINGLETON)
            one = singleton(ctl, j);
        else if (dj == NULL)
            one = AL_DEPS_NEVER;
        else if (d->kind == AL_DEP_AFTERCORR)
            one = corr(ctl, j, dj);
        else
            one = on_end(d->kind, dj);
        if (one == AL_DEPS_NEVER || one == AL_DEPS_WAITING)
            st = one;
    }
    return st;
}

char *
al__depend_never_why(al_ctl_t *ctl, const al__job_t *j)
{
    for (int i = 0; i < j->ndeps; i++) {
        const al_depspec_t *d = &j->deps[i];
        if (d->kind == AL_DEP_SINGLETON)
            continue;
        const al__job_t *dj = al__ctl_job(ctl, d->job);
        if (dj == NULL)
            return al_xasprintf("%s:%llu: no such job",
                                al_dep_kind_names[d->kind],
                                (unsigned long long)d->job);
        al_dep_state_t one = d->kind == AL_DEP_AFTERCORR ? corr(ctl, j, dj)
                                                         : on_end(d->kind, dj);
        if (one == AL_DEPS_NEVER)
            return al_xasprintf(
                "%s:%llu: job %llu %s", al_dep_kind_names[d->kind],
                (unsigned long long)d->job, (unsigned long long)d->job,
                al__jstate_names[dj->state]);
    }
    return NULL;
}

int
al__depend_check(al_ctl_t *ctl, const al__job_t *j, const char *caller,
                 bool admin, char **cause)
{
    for (int i = 0; i < j->ndeps; i++) {
        const al_depspec_t *d = &j->deps[i];
        if (d->kind == AL_DEP_SINGLETON)
            continue;
        const al__job_t *dj = al__ctl_job(ctl, d->job);
        if (dj == NULL) {
            *cause = al_xasprintf("dependency: no job %llu",
                                  (unsigned long long)d->job);
            return 400;
        }
        if (!admin && strcmp(dj->user, caller) != 0) {
            *cause = al_xasprintf("dependency: job %llu is not yours; you "
                                  "may depend only on jobs you can see",
                                  (unsigned long long)d->job);
            return 403;
        }
        if (d->kind == AL_DEP_AFTERCORR &&
            (j->array == NULL || dj->array == NULL)) {
            *cause = al_xasprintf("dependency: aftercorr makes each element "
                                  "of a job array wait for the same element "
                                  "of another; job %llu %s",
                                  (unsigned long long)d->job,
                                  dj->array == NULL ? "is not an array"
                                                    : "is, but this job is "
                                                      "not an array");
            return 400;
        }
    }
    return 0;
}
