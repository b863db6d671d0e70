/*
 * rand.c: seeding for rand.h's generator (the generator itself is inline
 * there).  Owns the process-wide counter that keeps two seeds apart.
 */
#include <time.h>

#include "clock.h"
#include "guard.h"
#include "rand.h"

static uint64_t seed_counter;

PE_SIGSAFE void
pe_rand_seed(uint64_t *s)
{
    uint64_t z = *s ^ (uint64_t)pe_clock_ns(CLOCK_MONOTONIC) ^ (uintptr_t)s ^
                 ((uint64_t)pe_gettid() << 40) ^
                 __atomic_add_fetch(&seed_counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);

    /* splitmix64's finaliser: nearby inputs give unrelated outputs */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    *s = z ? z : 0x853c49e6748fea9bull;
}
