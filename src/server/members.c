/*
 * members.c -- who may use a queue: the tables of users' settings (a
 * default queue) and of groups (named lists of users), and the check a
 * submission passes.  A queue with no members is open to every user; one
 * with members takes jobs of the users it names and of the users of the
 * groups it names ("@group"); an admin may submit anywhere.
 *
 * May call: memberdoc.c (freeing) and common's allocation helpers.  The
 * handlers (api_jobs.c, api_users.c), the store's load and the loop call
 * it.
 */
#include <stdlib.h>
#include <string.h>

#include "server_int.h"
#include "xmalloc.h"

al__user_t *
al__ctl_user(al_ctl_t *ctl, const char *name)
{
    for (int i = 0; i < ctl->nusers; i++)
        if (strcmp(ctl->users[i].name, name) == 0)
            return &ctl->users[i];
    return NULL;
}

al__group_t *
al__ctl_group(al_ctl_t *ctl, const char *name)
{
    for (int i = 0; i < ctl->ngroups; i++)
        if (strcmp(ctl->groups[i].name, name) == 0)
            return &ctl->groups[i];
    return NULL;
}

void
al__ctl_put_user(al_ctl_t *ctl, al__user_t *u)
{
    al__user_t *old = al__ctl_user(ctl, u->name);
    if (old != NULL) {
        al__user_fini(old);
        *old = *u;
        return;
    }
    ctl->users =
        al_xreallocarray(ctl->users, (size_t)ctl->nusers + 1, sizeof *u);
    ctl->users[ctl->nusers++] = *u;
}

void
al__ctl_put_group(al_ctl_t *ctl, al__group_t *g)
{
    al__group_t *old = al__ctl_group(ctl, g->name);
    if (old != NULL) {
        al__group_fini(old);
        *old = *g;
        return;
    }
    ctl->groups =
        al_xreallocarray(ctl->groups, (size_t)ctl->ngroups + 1, sizeof *g);
    ctl->groups[ctl->ngroups++] = *g;
}

void
al__ctl_del_group(al_ctl_t *ctl, const char *name)
{
    al__group_t *g = al__ctl_group(ctl, name);
    if (g == NULL)
        return;
    al__group_fini(g);
    *g = ctl->groups[--ctl->ngroups];
}

bool
al__member_of(al_ctl_t *ctl, const al__queue_t *q, const char *user)
{
    if (q->members.n == 0)
        return true;
    for (int i = 0; i < q->members.n; i++) {
        const char *m = q->members.v[i];
        if (m[0] != '@') {
            if (strcmp(m, user) == 0)
                return true;
            continue;
        }
        const al__group_t *g = al__ctl_group(ctl, m + 1);
        if (g != NULL && al__names_has(&g->users, user))
            return true;
    }
    return false;
}

const char *
al__user_default_queue(al_ctl_t *ctl, const char *user)
{
    const al__user_t *u = al__ctl_user(ctl, user);
    return u != NULL && u->default_queue != NULL ? u->default_queue : "default";
}

void
al__members_fini(al_ctl_t *ctl)
{
    for (int i = 0; i < ctl->nusers; i++)
        al__user_fini(&ctl->users[i]);
    for (int i = 0; i < ctl->ngroups; i++)
        al__group_fini(&ctl->groups[i]);
    free(ctl->users);
    free(ctl->groups);
    ctl->users = NULL;
    ctl->groups = NULL;
    ctl->nusers = ctl->ngroups = 0;
}
