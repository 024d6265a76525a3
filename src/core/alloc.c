/* alloc.c -- default allocator and a bump arena over any allocator. */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *
default_malloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void
default_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

const al_allocator_t al_default_allocator = { default_malloc, default_free,
                                              NULL };

/* Blocks are chained; each hands out memory from its tail. */
struct block {
    struct block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
};

struct al_arena {
    const al_allocator_t *a;
    struct block *head;
    size_t total;
};

#define BLOCK_MIN ((size_t)256 * 1024)
#define ALIGN 16
#define HDR ((sizeof(struct block) + ALIGN - 1) & ~(size_t)(ALIGN - 1))

al_arena_t *
al_arena_create(const al_allocator_t *a)
{
    al_arena_t *ar;

    if (a == NULL)
        a = &al_default_allocator;
    ar = a->malloc(a->ctx, sizeof(*ar));
    if (ar == NULL)
        return NULL;
    ar->a = a;
    ar->head = NULL;
    ar->total = sizeof(*ar);
    return ar;
}

void
al_arena_destroy(al_arena_t *ar)
{
    struct block *b, *next;

    if (ar == NULL)
        return;
    for (b = ar->head; b != NULL; b = next) {
        next = b->next;
        ar->a->free(ar->a->ctx, b);
    }
    ar->a->free(ar->a->ctx, ar);
}

static void *
arena_take(al_arena_t *ar, size_t n)
{
    struct block *b = ar->head;
    size_t size;
    void *p;

    if (n > SIZE_MAX - ALIGN)
        return NULL; /* rounding up would wrap around */
    n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (n == 0)
        n = ALIGN;
    if (b == NULL || b->size - b->used < n) {
        /* Large requests get a block of their own, put behind the head so
         * that the head's free tail is not wasted. */
        size = n > BLOCK_MIN / 4 ? n : BLOCK_MIN;
        if (size > SIZE_MAX - HDR)
            return NULL;
        b = ar->a->malloc(ar->a->ctx, HDR + size);
        if (b == NULL)
            return NULL;
        b->size = size;
        b->used = 0;
        ar->total += HDR + size;
        if (ar->head != NULL && size == n) {
            b->next = ar->head->next;
            ar->head->next = b;
        } else {
            b->next = ar->head;
            ar->head = b;
        }
    }
    p = (char *)b + HDR + b->used;
    b->used += n;
    return p;
}

void *
al_arena_alloc(al_arena_t *ar, size_t n)
{
    void *p = arena_take(ar, n);

    if (p != NULL)
        memset(p, 0, n);
    return p;
}

void *
al_arena_array_raw(al_arena_t *ar, size_t n, size_t sz)
{
    if (sz != 0 && n > SIZE_MAX / sz)
        return NULL;
    return arena_take(ar, n * sz);
}

void *
al_arena_array(al_arena_t *ar, size_t n, size_t sz)
{
    if (sz != 0 && n > SIZE_MAX / sz)
        return NULL;
    return al_arena_alloc(ar, n * sz);
}

size_t
al_arena_bytes(const al_arena_t *ar)
{
    return ar->total;
}

/* ------------------------------------------------------------------ */
/* The block cache                                                    */

#define CACHE_HDR 16 /* keeps user memory 16-byte aligned; byte 0: class */

static void *
cache_malloc(void *ctx, size_t size)
{
    al_block_cache_t *bc = ctx;
    int c = 12; /* 4 KiB at least */
    unsigned char *p;

    while (c < AL_CACHE_CLASSES - 1 && ((size_t)1 << c) < size + CACHE_HDR)
        c++;
    if (size > SIZE_MAX - CACHE_HDR || ((size_t)1 << c) < size + CACHE_HDR)
        return NULL;
    if (bc->nfree[c] > 0)
        p = bc->free[c][--bc->nfree[c]];
    else if ((p = malloc((size_t)1 << c)) == NULL)
        return NULL;
    p[0] = (unsigned char)c;
    return p + CACHE_HDR;
}

static void
cache_free(void *ctx, void *ptr)
{
    al_block_cache_t *bc = ctx;
    unsigned char *p;
    int c;

    if (ptr == NULL)
        return;
    p = (unsigned char *)ptr - CACHE_HDR;
    c = p[0];
    if (bc->nfree[c] < AL_CACHE_KEEP)
        bc->free[c][bc->nfree[c]++] = p;
    else
        free(p);
}

void
al_block_cache_init(al_block_cache_t *bc)
{
    memset(bc, 0, sizeof(*bc));
}

al_allocator_t
al_block_cache_allocator(al_block_cache_t *bc)
{
    al_allocator_t a = { cache_malloc, cache_free, bc };

    return a;
}

void
al_block_cache_fini(al_block_cache_t *bc)
{
    int c, k;

    for (c = 0; c < AL_CACHE_CLASSES; c++)
        for (k = 0; k < bc->nfree[c]; k++)
            free(bc->free[c][k]);
    al_block_cache_init(bc);
}
