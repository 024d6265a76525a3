/*
 * rtime.c -- the router's optional timing points (see rtime.h).  Each
 * request the router answers brings ten points (router.c takes them);
 * the stages between them go into histograms with fixed bucket edges,
 * and the requests over SLOW_NS also add up, stage by stage, where their
 * time went and which stage was their largest.  Counters are atomics:
 * the request threads never wait on each other for it.
 *
 * May call: src/common (xmalloc.h) and libc.  Called by router.c.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rtime.h"
#include "xmalloc.h"

#define SLOW_NS 1000000 /* a slow request: over 1 ms in the router */

/* Bucket upper edges in microseconds; the last bucket is open. */
static const int64_t edges_us[] = { 5,     10,    20,    50,    100,
                                    200,   500,   1000,  2000,  5000,
                                    10000, 20000, 50000, 100000 };
#define NB (sizeof edges_us / sizeof edges_us[0] + 1)

/* The stages, each from one point to the next but the last (the whole). */
/* (The head may come before the router's thread waits for it, when that
 * thread is late from the previous request: "late" is that part, and
 * the wake-up runs from the later of the two, point SINCE.) */
#define SINCE AL_RT_NPTS
static const struct {
    const char *name;
    int from, to;
} stages[] = {
    { "late", AL_RT_ARRIVE, AL_RT_WAIT },
    { "wake_request", SINCE, AL_RT_READ },
    { "parse", AL_RT_READ, AL_RT_PARSED },
    { "choose", AL_RT_PARSED, AL_RT_CHOSEN },
    { "connect", AL_RT_CHOSEN, AL_RT_CONN },
    { "write", AL_RT_CONN, AL_RT_WRITTEN },
    { "replica", AL_RT_WRITTEN, AL_RT_ANS_ARRIVE },
    { "wake_answer", AL_RT_ANS_ARRIVE, AL_RT_FIRST },
    { "body", AL_RT_FIRST, AL_RT_LAST },
    { "to_client", AL_RT_LAST, AL_RT_OUT },
    { "total", AL_RT_ARRIVE, AL_RT_OUT },
};
#define NST (sizeof stages / sizeof stages[0])
#define TOTAL (NST - 1)

struct al__rtime {
    char *path;
    atomic_llong untimed;
    atomic_llong hist[NST][NB];
    atomic_llong sum_ns[NST];
    atomic_llong slow, slow_ns[NST], slow_top[NST];
};

al__rtime_t *
al__rtime_create(void)
{
    const char *p = getenv("ALLOT_ROUTER_TIMING");
    if (p == NULL || p[0] == '\0')
        return NULL;
    al__rtime_t *t = al_xcalloc(1, sizeof *t);
    t->path = al_xstrdup(p);
    return t;
}

void
al__rtime_destroy(al__rtime_t *t)
{
    if (t == NULL)
        return;
    free(t->path);
    free(t);
}

int64_t
al__rtime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t
bucket(int64_t ns)
{
    size_t b = 0;
    while (b < NB - 1 && ns > edges_us[b] * 1000)
        b++;
    return b;
}

void
al__rtime_add(al__rtime_t *t, const int64_t pts[AL_RT_NPTS])
{
    for (int i = 0; i < AL_RT_NPTS; i++)
        if (pts[i] == 0) {
            atomic_fetch_add_explicit(&t->untimed, 1, memory_order_relaxed);
            return;
        }
    int64_t q[AL_RT_NPTS + 1], d[NST];
    memcpy(q, pts, AL_RT_NPTS * sizeof *q);
    q[SINCE] = pts[AL_RT_WAIT] > pts[AL_RT_ARRIVE] ? pts[AL_RT_WAIT]
                                                   : pts[AL_RT_ARRIVE];
    for (size_t s = 0; s < NST; s++) {
        d[s] = q[stages[s].to] - q[stages[s].from];
        if (d[s] < 0)
            d[s] = 0; /* the kernel's stamp and ours: not one clock read */
        atomic_fetch_add_explicit(&t->hist[s][bucket(d[s])], 1,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&t->sum_ns[s], d[s], memory_order_relaxed);
    }
    if (d[TOTAL] < SLOW_NS)
        return;
    atomic_fetch_add_explicit(&t->slow, 1, memory_order_relaxed);
    size_t top = 0;
    for (size_t s = 0; s < TOTAL; s++) {
        atomic_fetch_add_explicit(&t->slow_ns[s], d[s], memory_order_relaxed);
        if (d[s] > d[top])
            top = s;
    }
    atomic_fetch_add_explicit(&t->slow_top[top], 1, memory_order_relaxed);
}

/* The upper edge (µs) of the bucket holding quantile q of h; -1 when
 * it is the open last bucket. */
static int64_t
quantile_us(const long long h[NB], long long n, double q)
{
    long long want = (long long)((double)n * q), acc = 0;
    for (size_t b = 0; b < NB; b++) {
        acc += h[b];
        if (acc > want)
            return b < NB - 1 ? edges_us[b] : -1;
    }
    return -1;
}

void
al__rtime_write(al__rtime_t *t)
{
    if (t == NULL)
        return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return;
    long long slow = atomic_load(&t->slow);
    fprintf(f, "{\"untimed\":%lld,\"slow_over_us\":%d,\"slow\":%lld,",
            (long long)atomic_load(&t->untimed), SLOW_NS / 1000, slow);
    fprintf(f, "\"bucket_edges_us\":[");
    for (size_t b = 0; b < NB - 1; b++)
        fprintf(f, "%s%lld", b ? "," : "", (long long)edges_us[b]);
    fprintf(f, "],\"stages\":{");
    long long slow_all = 0;
    for (size_t s = 0; s < TOTAL; s++)
        slow_all += atomic_load(&t->slow_ns[s]);
    for (size_t s = 0; s < NST; s++) {
        long long h[NB], n = 0;
        for (size_t b = 0; b < NB; b++)
            n += h[b] = atomic_load(&t->hist[s][b]);
        fprintf(f,
                "%s\"%s\":{\"n\":%lld,\"mean_us\":%.1f,\"p50_us_le\":%lld,"
                "\"p99_us_le\":%lld,\"hist\":[",
                s ? "," : "", stages[s].name, n,
                n ? (double)atomic_load(&t->sum_ns[s]) / (double)n / 1000 : 0,
                (long long)quantile_us(h, n, 0.5),
                (long long)quantile_us(h, n, 0.99));
        for (size_t b = 0; b < NB; b++)
            fprintf(f, "%s%lld", b ? "," : "", h[b]);
        fprintf(f, "]");
        if (s < TOTAL)
            fprintf(f, ",\"slow_share\":%.3f,\"slow_largest\":%lld",
                    slow_all > 0
                        ? (double)atomic_load(&t->slow_ns[s]) / (double)slow_all
                        : 0.0,
                    (long long)atomic_load(&t->slow_top[s]));
        fprintf(f, "}");
    }
    fprintf(f, "}}\n");
    if (fclose(f) == 0)
        (void)rename(tmp, t->path);
}

/* glibc 2.36 has no sched_setattr(), and declares syscall() only with
 * _DEFAULT_SOURCE, which the server's other files need not see. */
long syscall(long number, ...);

/* struct sched_attr of sched_setattr(2). */
typedef struct sattr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
} sattr_t;

void
al__rtime_short_slice(void)
{
    const char *e = getenv("ALLOT_ROUTER_SLICE_US");
    long us = e != NULL && e[0] != '\0' ? strtol(e, NULL, 10) : 100;
    if (us <= 0)
        return;
    if (us < 100)
        us = 100; /* the kernel's least */
#ifdef SYS_sched_setattr
    /* The nice value stays: sched_getattr() reads it first. */
    sattr_t a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0U) != 0 ||
        a.policy != 0 /* SCHED_OTHER only */)
        return;
    a.size = sizeof a;
    a.flags = 0;
    a.runtime = (uint64_t)us * 1000;
    (void)syscall(SYS_sched_setattr, 0, &a, 0U);
#endif
}
