/*
 * sample.c: the sampling decisions taken off the hooks' fast path: the
 * per-thread xorshift generator, the exponential byte interval, the weight
 * of a sample, and the two slow paths (an allocation that reached its sample
 * point or runs under an /allocs_profile recording; a free the pre-filter
 * could not rule out).  Tables live in stacks.c, live.c and allocs.c.
 *
 * Sampling math (Go runtime/malloc.go nextSample; NOTES §4): the countdown
 * c ~ Exp(R) is memoryless, so an allocation of s bytes meets c <= s with
 * probability  P(s) = 1 - exp(-s/R)  whatever came before; after a sample a
 * fresh interval is drawn (no carry).  Horvitz-Thompson: a sample of s bytes
 * stands for  w = 1/P(s)  objects and w*s bytes, so  E[sum w] = N  and
 * E[sum w*s] = total bytes.  A sample skipped because we were re-entered
 * also draws a fresh interval rather than sampling the next allocation
 * (jemalloc's note: that would bias towards what follows re-entry).
 *
 * Signal-safe: yes (no locks taken without a try; no malloc; errno kept).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/guard.h"
#include "../sampler/unwind.h"
#include "heap_int.h"

/* ---- random numbers --------------------------------------------------------- */

PE_SIGSAFE uint64_t
pe_heap_rng_next(uint64_t *s)
{
    /* xorshift64* (Vigna): period 2^64-1, good enough for sampling. */
    uint64_t x = *s;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

PE_SIGSAFE void
pe_heap_rng_seed(uint64_t *s)
{
    struct timespec ts;
    uint64_t x;

    clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO; async-signal-safe */
    x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)s ^
        ((uint64_t)syscall(SYS_gettid) << 17);
    /* splitmix64 finaliser, so nearby seeds give unrelated streams */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    *s = x ? x : 0x853c49e6748fea9bull;
}

PE_SIGSAFE int64_t
pe_heap_draw(uint64_t *rng, int64_t rate)
{
    /* u uniform in (0, 1]; -ln(u) ~ Exp(1). */
    double u = (double)((pe_heap_rng_next(rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
    double v = -log(u) * (double)rate;

    if (v < 1.0)
        return 1;
    if (v > 64.0 * (double)rate) /* probability e^-64: only guards overflow */
        return 64 * rate;
    return (int64_t)v;
}

PE_SIGSAFE uint64_t
pe_heap_weight_fx(uint64_t size, int64_t rate)
{
    double x, w;

    if (rate <= 1 || size == 0) /* rate 1: every byte sampled; size 0: never sampled */
        return PE_HEAP_CNT_ONE;
    x = (double)size / (double)rate;
    if (x > 40.0)
        return PE_HEAP_CNT_ONE;
    w = -1.0 / expm1(-x); /* 1/(1-exp(-x)), accurate for small x */
    return (uint64_t)(w * PE_HEAP_CNT_ONE + 0.5);
}

/* ---- slow paths -------------------------------------------------------------- */

/* A fresh interval for this thread (or "never" when sampling is off). */
static inline void
redraw(pe_tls_t *t, int64_t rate)
{
    if (rate <= 0) {
        t->heap_countdown = INT64_MAX / 2;
        return;
    }
    if (PE_UNLIKELY(t->rng == 0))
        pe_heap_rng_seed(&t->rng);
    t->heap_countdown = pe_heap_draw(&t->rng, rate);
}

static int
take_stack(uintptr_t *pcs, uint32_t *id)
{
    int n = pe_unwind_here(pcs, PE_HEAP_MAX_FRAMES, 0), start;

    if (n <= 0) {
        *id = PE_HEAP_NO_STACK;
        return 0;
    }
    start = pe_heap_trim(pcs, n);
    *id = pe_heap_stacks_intern(pcs + start, n - start);
    return 1;
}

PE_SIGSAFE void
pe_heap_alloc_slow(void *p, size_t size)
{
    pe_tls_t *t = &pe_tls;
    int gen = __atomic_load_n(&pe_heap_gen, __ATOMIC_RELAXED);
    int64_t rate = __atomic_load_n(&pe_heap_rate_bytes, __ATOMIC_RELAXED);
    int heap_sample = 0, allocs_sample = 0, saved_errno;
    uintptr_t pcs[PE_HEAP_MAX_FRAMES];
    uint32_t id = PE_HEAP_NO_STACK;
    int have_stack = 0;

    if (PE_UNLIKELY(t->heap_seeded_gen != gen)) {
        /* First allocation of this thread since start-up or a rate change:
           draw a fresh interval, then judge this allocation against it. */
        t->heap_seeded_gen = gen;
        if (gen == PE_HEAP_GEN_BOOT) { /* before pe_heap_init: nothing recorded yet */
            t->heap_countdown = 1 << 20;
            return;
        }
        redraw(t, rate);
        t->heap_countdown -= (int64_t)size;
    }
    if (t->heap_countdown <= 0) {
        redraw(t, rate);
        heap_sample = rate > 0;
    }
    if (PE_UNLIKELY(t->internal)) {
        /* The library's own threads: never recorded, rarely back here. */
        t->heap_countdown = INT64_MAX / 2;
        return;
    }
    if (t->guard)
        return; /* re-entered: the sample is skipped, the interval already redrawn */

    saved_errno = errno;
    pe_guard_enter();
    if (__atomic_load_n(&pe_heap_allocs_on, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&pe_heap_allocs_inflight, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&pe_heap_allocs_on, __ATOMIC_SEQ_CST)) {
            if (PE_UNLIKELY(t->rng == 0))
                pe_heap_rng_seed(&t->rng);
            if (pe_heap_rng_next(&t->rng) <= pe_heap_allocs_threshold) {
                have_stack = take_stack(pcs, &id);
                pe_heap_allocs_record(id, size);
                allocs_sample = 1;
            }
        }
        __atomic_fetch_sub(&pe_heap_allocs_inflight, 1, __ATOMIC_SEQ_CST);
    }
    if (heap_sample) {
        uint64_t w = pe_heap_weight_fx(size, rate);
        int r;

        if (!allocs_sample)
            have_stack = take_stack(pcs, &id);
        (void)have_stack;
        pe_heap_stacks_account(id, 0, w, size);
        __atomic_fetch_add(&pe_heap_nsamples, 1, __ATOMIC_RELAXED);
        r = pe_heap_live_insert((uintptr_t)p, size, id, w);
        if (r < 0) {
            /* Not tracked: it can never be seen freed, so it counts as
               allocated but not in use. */
            pe_heap_stacks_account(id, 1, w, size);
            __atomic_fetch_add(r == -EBUSY ? &pe_heap_dropped_busy : &pe_heap_dropped_live, 1,
                               __ATOMIC_RELAXED);
        }
    }
    pe_guard_exit();
    errno = saved_errno;
}

PE_SIGSAFE void
pe_heap_free_slow(void *p)
{
    int saved_errno = errno;

    pe_guard_enter();
    pe_heap_live_forget((uintptr_t)p);
    pe_guard_exit();
    errno = saved_errno;
}
