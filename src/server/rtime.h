/*
 * rtime.h -- the router's optional timing points (rtime.c): where a
 * request spends its time inside the router, as histograms per stage and
 * a breakdown of the slow requests, written as JSON to a file.  Off
 * unless ALLOT_ROUTER_TIMING names that file; when off the router takes
 * no clock readings for it.  Also the time slice the router's threads
 * ask the kernel for.
 */
#ifndef AL_SERVER_RTIME_H
#define AL_SERVER_RTIME_H

#include <stdbool.h>
#include <stdint.h>

/* The points of one request, in CLOCK_REALTIME nanoseconds (the clock of
 * the kernel's receive timestamps); 0 when not reached. */
enum {
    AL_RT_ARRIVE,     /* the head's last bytes reached the client socket */
    AL_RT_READ,       /* the router's thread read them */
    AL_RT_PARSED,     /* head parsed (and body read) */
    AL_RT_CHOSEN,     /* replica chosen */
    AL_RT_CONN,       /* pooled connection taken or a new one connected */
    AL_RT_WRITTEN,    /* request written to the replica */
    AL_RT_ANS_ARRIVE, /* the answer's first bytes reached the router */
    AL_RT_FIRST,      /* the router's thread read them */
    AL_RT_LAST,       /* the answer's last byte read */
    AL_RT_OUT,        /* all of it written to the client */
    AL_RT_WAIT,       /* the router's thread began to wait for the head */
    AL_RT_NPTS,
};

typedef struct al__rtime al__rtime_t;

/* A recorder writing to the file ALLOT_ROUTER_TIMING names, or NULL when
 * it names none.  _destroy(NULL) is a no-op. */
al__rtime_t *al__rtime_create(void);
void al__rtime_destroy(al__rtime_t *t);

/* Now, CLOCK_REALTIME in nanoseconds. */
int64_t al__rtime_now(void);

/* Adds one request's points (a request with a point missing is counted
 * but not timed).  Thread-safe, lock-free. */
void al__rtime_add(al__rtime_t *t, const int64_t pts[AL_RT_NPTS]);

/* Writes the figures so far to the file (replaced whole). */
void al__rtime_write(al__rtime_t *t);

/* Asks the kernel for a short time slice for the calling thread
 * (ALLOT_ROUTER_SLICE_US, default 100 µs; 0 leaves the kernel's): with
 * EEVDF (Linux 6.12 and later) a thread that asks for a shorter slice
 * than the running one's preempts it on waking, instead of waiting for
 * that one's slice to end.  A thread of the router runs for a few
 * microseconds per wake-up, so it gives up nothing.  Needs no privilege;
 * older kernels ignore it. */
void al__rtime_short_slice(void);

#endif
