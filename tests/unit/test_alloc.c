/*
 * test_alloc.c -- the arena: alignment, zeroing, large blocks, accounting,
 * and behaviour when the caller's allocator fails.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/core.h"
#include "test.h"

/*
 * A counting allocator that fails the call numbered fail_at (1-based; 0
 * never fails) and hands out memory full of garbage, so that zeroing is
 * the arena's doing and not malloc's luck.
 */
struct counting {
    long calls;
    long live;
    long fail_at;
    size_t bytes;
};

static void *
counting_malloc(void *ctx, size_t size)
{
    struct counting *c = ctx;
    void *p;

    c->calls++;
    if (c->fail_at != 0 && c->calls == c->fail_at)
        return NULL;
    p = malloc(size);
    if (p == NULL)
        return NULL;
    memset(p, 0xA5, size);
    c->live++;
    c->bytes += size;
    return p;
}

static void
counting_free(void *ctx, void *ptr)
{
    struct counting *c = ctx;

    if (ptr == NULL)
        return;
    c->live--;
    free(ptr);
}

static al_allocator_t
counting_allocator(struct counting *c)
{
    al_allocator_t a;

    memset(c, 0, sizeof(*c));
    a.malloc = counting_malloc;
    a.free = counting_free;
    a.ctx = c;
    return a;
}

static int
all_zero(const unsigned char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

static void
basics(void)
{
    al_arena_t *ar = al_arena_create(NULL);
    size_t before;
    char *a, *b;

    ASSERT(ar != NULL);
    before = al_arena_bytes(ar);
    a = al_arena_alloc(ar, 100);
    b = al_arena_alloc(ar, 100);
    ASSERT(a != NULL && b != NULL);
    ASSERT(a + 100 <= b || b + 100 <= a);
    memset(a, 'a', 100);
    memset(b, 'b', 100);
    ASSERT_EQ(a[99], 'a');
    ASSERT_EQ(b[0], 'b');
    ASSERT_GE(al_arena_bytes(ar), before + 200);
    al_arena_destroy(ar);
    al_arena_destroy(NULL);
}

static void
alignment(void)
{
    al_arena_t *ar = al_arena_create(NULL);
    size_t n;

    ASSERT(ar != NULL);
    for (n = 1; n < 600; n += 7) {
        void *p = al_arena_alloc(ar, n);

        ASSERT(p != NULL);
        ASSERT_EQ((uintptr_t)p % 16, 0);
    }
    for (n = 1; n < 40; n++) {
        void *p = al_arena_array(ar, n, 3);

        ASSERT(p != NULL);
        ASSERT_EQ((uintptr_t)p % 16, 0);
    }
    al_arena_destroy(ar);
}

static void
zeroing(void)
{
    struct counting c;
    al_allocator_t a = counting_allocator(&c);
    al_arena_t *ar = al_arena_create(&a);
    int i;

    ASSERT(ar != NULL);
    /* Enough allocations to span several blocks, each over garbage. */
    for (i = 0; i < 2000; i++) {
        size_t n = (size_t)(i % 97) * 13 + 1;
        unsigned char *p = al_arena_alloc(ar, n);

        ASSERT(p != NULL);
        ASSERT(all_zero(p, n));
        memset(p, 0xFF, n);
    }
    {
        unsigned char *p = al_arena_array(ar, 1000, 24);

        ASSERT(p != NULL);
        ASSERT(all_zero(p, 24000));
    }
    ASSERT_GT(c.calls, 2);
    al_arena_destroy(ar);
    ASSERT_EQ(c.live, 0);
}

/* A range of memory handed out, to check that none overlap. */
struct range {
    uintptr_t lo, hi;
};

static int
overlaps(const struct range *r, int n, uintptr_t lo, uintptr_t hi)
{
    int i;

    for (i = 0; i < n; i++)
        if (lo < r[i].hi && r[i].lo < hi)
            return 1;
    return 0;
}

static void
large_blocks(void)
{
    static const size_t sizes[] = { 10,  1 << 20,       24,      3 << 20, 65536,
                                    100, 1 << 24,       5,       200000,  70000,
                                    17,  (1 << 18) + 1, 1 << 16, 48 };
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    struct range r[N];
    struct counting c;
    al_allocator_t a = counting_allocator(&c);
    al_arena_t *ar = al_arena_create(&a);
    size_t i, total = 0;

    ASSERT(ar != NULL);
    for (i = 0; i < N; i++) {
        unsigned char *p = al_arena_alloc(ar, sizes[i]);

        ASSERT(p != NULL);
        ASSERT_EQ((uintptr_t)p % 16, 0);
        ASSERT(all_zero(p, sizes[i]));
        ASSERT(!overlaps(r, (int)i, (uintptr_t)p, (uintptr_t)p + sizes[i]));
        memset(p, (int)i + 1, sizes[i]);
        r[i].lo = (uintptr_t)p;
        r[i].hi = (uintptr_t)p + sizes[i];
        total += sizes[i];
    }
    /* Every earlier range still holds what was written to it. */
    for (i = 0; i < N; i++) {
        const unsigned char *p = (const unsigned char *)r[i].lo;

        ASSERT_EQ(p[0], (int)i + 1);
        ASSERT_EQ(p[sizes[i] - 1], (int)i + 1);
    }
    ASSERT_GE(al_arena_bytes(ar), total);
    /* The arena reports what it took from the allocator, no more. */
    ASSERT_LE(al_arena_bytes(ar), c.bytes);
    al_arena_destroy(ar);
    ASSERT_EQ(c.live, 0);
}

static void
array_overflow(void)
{
    al_arena_t *ar = al_arena_create(NULL);
    void *p;

    ASSERT(ar != NULL);
    ASSERT(al_arena_array(ar, SIZE_MAX / 2, 4) == NULL);
    ASSERT(al_arena_array(ar, 4, SIZE_MAX / 2) == NULL);
    ASSERT(al_arena_alloc(ar, SIZE_MAX - 8) == NULL);
    /* The arena is still usable after a refused request. */
    p = al_arena_array(ar, 16, 16);
    ASSERT(p != NULL);
    ASSERT(all_zero(p, 256));
    al_arena_destroy(ar);
}

static void
failing_allocator(void)
{
    struct counting c;
    al_allocator_t a = counting_allocator(&c);
    al_arena_t *ar;
    void *p;

    /* The first call (the arena itself) fails. */
    c.fail_at = 1;
    ASSERT(al_arena_create(&a) == NULL);
    ASSERT_EQ(c.live, 0);

    /* The first block fails; the arena survives and recovers. */
    a = counting_allocator(&c);
    c.fail_at = 2;
    ar = al_arena_create(&a);
    ASSERT(ar != NULL);
    ASSERT(al_arena_alloc(ar, 64) == NULL);
    p = al_arena_alloc(ar, 64);
    ASSERT(p != NULL);
    ASSERT(all_zero(p, 64));
    al_arena_destroy(ar);
    ASSERT_EQ(c.live, 0);

    /* A large block fails after small ones succeeded: earlier memory stays
     * intact and the next large request succeeds. */
    a = counting_allocator(&c);
    ar = al_arena_create(&a);
    ASSERT(ar != NULL);
    p = al_arena_alloc(ar, 32);
    ASSERT(p != NULL);
    memset(p, 7, 32);
    c.fail_at = c.calls + 1;
    ASSERT(al_arena_alloc(ar, 4 << 20) == NULL);
    ASSERT_EQ(((unsigned char *)p)[31], 7);
    ASSERT(al_arena_alloc(ar, 4 << 20) != NULL);
    ASSERT(al_arena_alloc(ar, 16) != NULL);
    al_arena_destroy(ar);
    ASSERT_EQ(c.live, 0);
}

static void
fail_every_call(void)
{
    struct counting c;
    al_allocator_t a;
    long n;

    /* Fail each call in turn over a fixed allocation pattern: memory
     * handed out is always zeroed and nothing leaks. */
    for (n = 1; n < 40; n++) {
        al_arena_t *ar;
        int i, nulls = 0;

        a = counting_allocator(&c);
        c.fail_at = n;
        ar = al_arena_create(&a);
        if (ar == NULL) {
            ASSERT_EQ(n, 1);
            ASSERT_EQ(c.live, 0);
            continue;
        }
        for (i = 0; i < 60; i++) {
            size_t sz = i % 5 == 0 ? (size_t)300000 : (size_t)5000;
            unsigned char *p = al_arena_alloc(ar, sz);

            if (p != NULL)
                ASSERT(all_zero(p, sz));
            else
                nulls++;
        }
        /* Exactly the one failed call shows, if the pattern reached it. */
        ASSERT_EQ(nulls, c.calls >= n ? 1 : 0);
        al_arena_destroy(ar);
        ASSERT_EQ(c.live, 0);
    }
}

/* The block cache hands a freed block back for the next request of its size
 * class, keeps memory aligned, refuses absurd sizes, and serves the core: a
 * second cycle through it takes no new memory from libc. */
static void
block_cache(void)
{
    al_block_cache_t bc;
    al_allocator_t a;
    void *p, *q, *r;
    int c, kept = 0;

    al_block_cache_init(&bc);
    a = al_block_cache_allocator(&bc);
    p = a.malloc(a.ctx, 5000);
    ASSERT(p != NULL);
    ASSERT_EQ((uintptr_t)p % 16, 0);
    memset(p, 0xab, 5000);
    a.free(a.ctx, p);
    q = a.malloc(a.ctx, 6000); /* same class (8 KiB): the same block */
    ASSERT(q == p);
    r = a.malloc(a.ctx, 6000); /* none kept now: a new one */
    ASSERT(r != NULL && r != q);
    a.free(a.ctx, q);
    a.free(a.ctx, r);
    a.free(a.ctx, NULL);
    ASSERT(a.malloc(a.ctx, SIZE_MAX - 4) == NULL);
    for (c = 0; c < AL_CACHE_CLASSES; c++)
        kept += bc.nfree[c];
    ASSERT_EQ(kept, 2);
    {
        al_arena_t *ar = al_arena_create(&a);
        void *x;

        ASSERT(ar != NULL);
        x = al_arena_alloc(ar, 1000);
        ASSERT(x != NULL);
        al_arena_destroy(ar);
        ar = al_arena_create(&a);
        ASSERT(ar != NULL);
        /* The arena's block comes back from the cache. */
        ASSERT(al_arena_alloc(ar, 1000) == x);
        al_arena_destroy(ar);
    }
    al_block_cache_fini(&bc);
    for (c = 0; c < AL_CACHE_CLASSES; c++)
        ASSERT_EQ(bc.nfree[c], 0);
}

/* A refused snapshot's cause comes from the snapshot's allocator and goes
 * back to it through al_cause_free(); the core calls no malloc of its own. */
static void
cause_on_allocator(void)
{
    struct counting c;
    al_allocator_t a = counting_allocator(&c);
    al_snapshot_t snap;
    al_result_t *sentinel = (al_result_t *)&sentinel, *out = sentinel;
    char *cause = NULL;

    memset(&snap, 0, sizeof(snap));
    snap.allocator = &a;
    snap.nnodes = -1;
    ASSERT_EQ(al_sched_run(&snap, &out, &cause), AL_EINVAL);
    ASSERT(out == sentinel);
    ASSERT(cause != NULL);
    ASSERT(strstr(cause, "bad counts") != NULL);
    ASSERT_EQ(c.calls, 1);
    ASSERT_EQ(c.live, 1);
    al_cause_free(&snap, cause);
    ASSERT_EQ(c.live, 0);
    al_cause_free(&snap, NULL);

    /* Without memory for it there is no cause, and the error stands. */
    c.fail_at = c.calls + 1;
    cause = NULL;
    ASSERT_EQ(al_sched_run(&snap, &out, &cause), AL_EINVAL);
    ASSERT(cause == NULL);
    ASSERT_EQ(c.live, 0);

    /* No snapshot at all: the cause is the default allocator's. */
    ASSERT_EQ(al_sched_run(NULL, &out, &cause), AL_EINVAL);
    ASSERT(cause != NULL);
    al_cause_free(NULL, cause);
}

const al_test_t test_alloc[] = {
    { "block_cache", block_cache },
    { "basics", basics },
    { "alignment", alignment },
    { "zeroing", zeroing },
    { "large_blocks", large_blocks },
    { "array_overflow", array_overflow },
    { "failing_allocator", failing_allocator },
    { "fail_every_call", fail_every_call },
    { "cause_on_allocator", cause_on_allocator },
    { NULL, NULL },
};
