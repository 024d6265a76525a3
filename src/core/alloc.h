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
 * A caching allocator for shells that run cycle after cycle (the controller,
 * the simulator).  A cycle's result and scratch live in arena blocks of
 * 256 KiB and more; handed straight back to libc, glibc returns them to the
 * kernel and every cycle faults them in again (a third of a full cycle at 10k
 * nodes, half the run time of the openb placement experiment).  This one
 * rounds blocks up to a power of two and keeps up to AL_CACHE_KEEP of each
 * size for reuse.  The caller owns the struct (no globals); it is not
 * thread-safe.  Zero it (or use al_block_cache_init), point an
 * al_allocator_t at it with al_block_cache_allocator(), and release the kept
 * blocks with al_block_cache_fini() once no result made through it remains.
 */
#define AL_CACHE_CLASSES 48
#define AL_CACHE_KEEP 16

typedef struct al_block_cache {
    void *free[AL_CACHE_CLASSES][AL_CACHE_KEEP];
    int nfree[AL_CACHE_CLASSES];
} al_block_cache_t;

/* Empties *bc. */
void al_block_cache_init(al_block_cache_t *bc);

/* An allocator drawing on bc (which must outlive every use of it). */
al_allocator_t al_block_cache_allocator(al_block_cache_t *bc);

/* Frees the blocks bc keeps; bc is empty afterwards. */
void al_block_cache_fini(al_block_cache_t *bc);

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
