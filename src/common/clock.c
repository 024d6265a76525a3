/* clock.c -- millisecond clocks. */
#include "clock.h"

#include <errno.h>
#include <time.h>

static int64_t
ms_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
al_clock_ms(void)
{
    return ms_of(CLOCK_REALTIME);
}

int64_t
al_clock_mono_ms(void)
{
    return ms_of(CLOCK_MONOTONIC);
}

void
al_clock_sleep_ms(int64_t ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}
