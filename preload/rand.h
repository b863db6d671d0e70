/*
 * rand.h: the library's pseudo-random numbers, for sampling decisions and
 * keys that must not collide with program data by chance (never for secrets).
 *
 * The generator is xorshift64* (Vigna, "An experimental exploration of
 * Marsaglia's xorshift generators, scrambled", 2016): 64 bits of state, period
 * 2^64 - 1, a few shifts and a multiply per number.  The caller owns the state
 * (per thread for the samplers, so no draw is shared or locked); 0 means "not
 * seeded" and must go through pe_rand_seed first, which never leaves 0.
 *
 * Signal-safe: yes (no locks, no allocation; seeding reads the vDSO clock).
 */
#ifndef PE_RAND_H
#define PE_RAND_H

#include <stdint.h>

#include "pe.h"

/*
 * Seed *s: splitmix64 (Steele et al.) of what *s already holds (any entropy
 * the caller has, or 0), the monotonic clock, this thread's tid, the address
 * of the state and a process-wide counter, so that threads seeding in the
 * same nanosecond still get unrelated streams.  Never leaves *s at 0.
 */
PE_SIGSAFE void pe_rand_seed(uint64_t *s);

/* The next 64 random bits from a seeded state. */
PE_SIGSAFE static inline uint64_t
pe_rand_next(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* A uniform double in (0, 1] from the top 53 bits: never 0, so log(u) is finite. */
PE_SIGSAFE static inline double
pe_rand_unit(uint64_t *s)
{
    return (double)((pe_rand_next(s) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/*
 * -ln(u) for u in (0, 1], without a call into libm (not async-signal-safe by
 * contract, and cold by the time a sample comes: it cost ~50 ns a draw):
 * u = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m-1)/(m+1), |s| < 0.172, whose series to s^11 is exact to ~1e-11.
 * With pe_rand_unit, -ln(u) ~ Exp(1): the samplers' intervals.
 */
PE_SIGSAFE static inline double
pe_rand_neg_log(double u)
{
    uint64_t bits;
    double m, s, s2, ln_m;
    int e;

    __builtin_memcpy(&bits, &u, sizeof(bits));
    e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    __builtin_memcpy(&m, &bits, sizeof(m));
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    s = (m - 1.0) / (m + 1.0);
    s2 = s * s;
    ln_m = 2.0 * s *
           (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (1.0 / 9 + s2 / 11)))));
    return -((double)e * 0.6931471805599453 + ln_m);
}

#endif /* PE_RAND_H */
