/*
 * clock.h: the one way every module reads a clock as nanoseconds.
 *
 * pe_clock_ns(CLOCK_MONOTONIC) for intervals, deadlines and timing a wait;
 * pe_clock_ns(CLOCK_REALTIME) for the wall time a profile or record carries.
 * clock_gettime is async-signal-safe (POSIX) and, for these clocks on Linux,
 * a vDSO call: no syscall, no lock.  A clock that cannot be read (an id the
 * kernel does not know) reads as 0.  pe_clock_wait_cleared: the one bounded
 * wait for a thread of ours to leave.
 *
 * Signal-safe: yes.
 */
#ifndef PE_CLOCK_H
#define PE_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "pe.h"

/* Clock `c` now, in nanoseconds since its epoch (0 if it cannot be read). */
PE_SIGSAFE static inline int64_t
pe_clock_ns(clockid_t c)
{
    struct timespec ts;

    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Sleep in 1 ms steps until *live reads 0 (acquire: the thread clears it as the
 * last thing it does when it leaves) or max_ms have passed (a report or a
 * profile under way finishes first; a thread stuck longer is not waited for).
 */
static inline void
pe_clock_wait_cleared(const int *live, int max_ms)
{
    for (int ms = 0; ms < max_ms && __atomic_load_n(live, __ATOMIC_ACQUIRE); ms++) {
        struct timespec ts = {0, 1000000L};

        nanosleep(&ts, NULL);
    }
}

#endif /* PE_CLOCK_H */
