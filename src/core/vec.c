/*
 * vec.c -- growable arrays on the caller's allocator (vec_t).
 *
 * Owns: al__vec_push, al__vec_free.  Calls: nothing in the core.  Every
 * other file may call it; it is the bottom of the core.
 */
#include <string.h>

#include "core_int.h"

int
al__vec_push(al_cycle_t *c, vec_t *v, const void *elem)
{
    if (v->len == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 64;
        void *nd;

        if (ncap > SIZE_MAX / v->esz)
            return AL_ENOMEM;
        nd = c->a->malloc(c->a->ctx, ncap * v->esz);
        if (nd == NULL)
            return AL_ENOMEM;
        if (v->len)
            memcpy(nd, v->data, v->len * v->esz);
        if (v->data)
            c->a->free(c->a->ctx, v->data);
        v->data = nd;
        v->cap = ncap;
    }
    memcpy((char *)v->data + v->len * v->esz, elem, v->esz);
    v->len++;
    return 0;
}

void
al__vec_free(al_cycle_t *c, vec_t *v)
{
    if (v->data)
        c->a->free(c->a->ctx, v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}
