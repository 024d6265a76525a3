/*
 * alloc.h -- the caller's allocator, and the arena the core carves from it.
 *
 * The core never calls malloc directly: every byte comes through an
 * al_allocator_t the caller passes (libuv's uv_replace_allocator, without the
 * global).  Tests pass one that fails the Nth call to prove that every error
 * path releases what it took.
 */
#ifndef AL_ALLOC_H
#define AL_ALLOC_H

#include <stddef.h>

typedef struct al_allocator {
    void *(*malloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} al_allocator_t;

/* The libc allocator (malloc/free). */
extern const al_allocator_t al_default_allocator;

/*
 * An arena: memory taken in large blocks from an allocator and released all
 * at once.  al_arena_alloc() returns zeroed, 16-byte aligned memory or NULL
 * when the allocator fails; the arena stays usable either way.
 */
typedef struct al_arena al_arena_t;

/* Creates an arena on allocator a (NULL: the default).  NULL on failure. */
al_arena_t *al_arena_create(const al_allocator_t *a);

/* Releases the arena and all its memory.  al_arena_destroy(NULL) is a no-op. */
void al_arena_destroy(al_arena_t *ar);

/* n zeroed bytes from the arena, or NULL on allocation failure. */
void *al_arena_alloc(al_arena_t *ar, size_t n);

/* Zeroed array of n elements of size sz, or NULL on failure or overflow. */
void *al_arena_array(al_arena_t *ar, size_t n, size_t sz);

/* Like al_arena_array() but the memory is not zeroed: for arrays the
 * caller fills completely. */
void *al_arena_array_raw(al_arena_t *ar, size_t n, size_t sz);

/* Total bytes the arena holds from its allocator. */
size_t al_arena_bytes(const al_arena_t *ar);

#endif /* AL_ALLOC_H */
