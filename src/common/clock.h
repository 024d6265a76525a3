/* clock.h -- time in milliseconds for the shells (the core reads no clock). */
#ifndef AL_CLOCK_H
#define AL_CLOCK_H

#include <stdint.h>

/* Wall-clock time: milliseconds since the Unix epoch. */
int64_t al_clock_ms(void);
/* Monotonic time in milliseconds, for timeouts and intervals. */
int64_t al_clock_mono_ms(void);
/* Sleeps ms milliseconds (restarting after signals). */
void al_clock_sleep_ms(int64_t ms);

#endif /* AL_CLOCK_H */
