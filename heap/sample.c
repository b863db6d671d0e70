/*
 * sample.c: the sampling decisions taken off the hooks' fast path: the
 * per-thread generator (preload/rand.h), the exponential byte interval, the weight
 * of a sample, and the slow paths of the hooks: an allocation that reached
 * its sample point or runs under an /allocs_profile recording (allocated
 * here, tagged when sampled: tag.c), and a free, realloc or
 * malloc_usable_size of a block the tag check flagged.  Tables live in
 * sitetab.c, live.c and allocs.c.
 *
 * Sampling math (Go's runtime/malloc.go nextSample, tcmalloc's rule): the countdown
 * c ~ Exp(R) is memoryless, so an allocation of s bytes meets c <= s with
 * probability  P(s) = 1 - exp(-s/R)  whatever came before; after a sample a
 * fresh interval is drawn (no carry).  Horvitz-Thompson: a sample of s bytes
 * stands for  w = 1/P(s)  objects and w*s bytes, so  E[sum w] = N  and
 * E[sum w*s] = total bytes.  A sample skipped because we were re-entered
 * also draws a fresh interval rather than sampling the next allocation
 * (jemalloc's note: that would bias towards what follows re-entry).
 *
 * Signal-safe: as the real allocator, which the slow paths call; nothing
 * else here takes a lock without a try or allocates; errno kept.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../preload/guard.h"
#include "../preload/init.h"
#include "../preload/rand.h"
#include "../preload/real.h"
#include "../stack/unwind.h"
#include "../trace/feed.h"
#include "heap_int.h"
#ifdef PE_HEAP_CFI_VERIFY
#include <stdio.h>

#include "../stack/cfi.h"
#endif

/* ---- the interval ------------------------------------------------------------ */

PE_SIGSAFE int64_t
pe_heap_draw(uint64_t *rng, int64_t rate)
{
    /* u uniform in (0, 1] (a normal double: no subnormal case); -ln(u) ~ Exp(1). */
    double u = pe_rand_unit(rng);
    double v = pe_rand_neg_log(u) * (double)rate; /* -ln(u) ~ Exp(1), no libm */

    if (v < 1.0)
        return 1;
    if (v > 64.0 * (double)rate) /* probability e^-64: only guards overflow */
        return 64 * rate;
    return (int64_t)v;
}

/* 1/n!, n = 0..11: exp(-r) by its series, Horner's rule in -r (constants:
   multiplications, no division). */
static const double inv_fact[12] = {1.0,         1.0,          1.0 / 2,       1.0 / 6,
                                    1.0 / 24,    1.0 / 120,    1.0 / 720,     1.0 / 5040,
                                    1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800};

/* exp(-x) for x in [0, 40]: x = k ln 2 + r with |r| <= ln 2 / 2, exp(-r) by
   its series to r^11 (error below 1e-13), times 2^-k. */
static inline double
exp_neg(double x)
{
    int k = (int)(x * 1.4426950408889634 + 0.5);
    double r = x - k * 0.6931471805599453, e = inv_fact[11], scale;
    uint64_t bits = (uint64_t)(1023 - k) << 52;

    for (int i = 10; i >= 0; i--)
        e = e * -r + inv_fact[i];
    memcpy(&scale, &bits, sizeof(scale));
    return e * scale;
}

/* B(2k) / (2k)!, k = 1..7 (Bernoulli numbers). */
static const double laurent[7] = {1.0 / 12,           -1.0 / 720,     1.0 / 30240,
                                  -1.0 / 1209600,     1.0 / 47900160, -691.0 / 1307674368000.0,
                                  1.0 / 74724249600.0};

PE_SIGSAFE uint64_t
pe_heap_weight_fx(uint64_t size, int64_t rate)
{
    double x, p, w;

    if (rate <= 1 || size == 0) /* rate 1: every byte sampled; size 0: never sampled */
        return PE_HEAP_CNT_ONE;
    x = (double)size / (double)rate;
    if (x > 40.0)
        return PE_HEAP_CNT_ONE;
    /* w = 1 / (1 - exp(-x)).  For x < 1 (blocks under the rate: nearly
       every sample) its Laurent series 1/x + 1/2 + sum B(2k) x^(2k-1) / (2k)!
       to k = 7 (the next term is below 4e-13); else 1 / (1 - exp_neg(x)).
       No libm call: half the samples of a workload with big blocks came
       here, and libm's code was cold by then. */
    if (x < 1.0) {
        double x2 = x * x, q = laurent[6];
        for (int i = 5; i >= 0; i--)
            q = q * x2 + laurent[i];
        w = 1.0 / x + 0.5 + x * q;
    } else {
        p = 1.0 - exp_neg(x);
        w = 1.0 / p;
    }
    return (uint64_t)(w * PE_HEAP_CNT_ONE + 0.5);
}

/* ---- slow paths -------------------------------------------------------------- */

/* "Never": the interval of a thread that samples nothing. */
#define NEVER (INT64_MAX / 4)

/* A fresh interval for this thread (or "never" when sampling is off). */
static inline int64_t
draw_interval(pe_tls_t *t, int64_t rate)
{
    if (rate <= 0)
        return NEVER;
    if (PE_UNLIKELY(t->rng == 0))
        pe_rand_seed(&t->rng);
    return pe_heap_draw(&t->rng, rate);
}

/* Hand the thread `left` bytes to its next sample point: up to a chunk into
   the fast path's countdown, the rest in reserve; or, while a recording
   runs, park the countdown at 0 so that every call comes here. */
static inline void
load_interval(pe_tls_t *t, int64_t left, int recording)
{
    uint64_t c = (uint64_t)left < PE_HEAP_CHUNK ? (uint64_t)left : PE_HEAP_CHUNK;

    t->heap_recording = recording;
    if (recording)
        c = 0;
    t->heap_reserve = left - (int64_t)c;
    t->heap_countdown = c;
}

/* Frames a heap walk takes: the profile keeps PE_HEAP_MAX_FRAMES after our own. */
#define TAKE_FRAMES (PE_HEAP_MAX_FRAMES + 8)

#ifdef PE_HEAP_CFI_VERIFY
/*
 * The check build (Makefile: libprofendpoints-cfiverify.so, used by
 * test/e2e/e2e_heap_cfi.sh): every sample the rules walked is walked by
 * libunwind too, and the frames a profile keeps (ours trimmed, at most
 * PE_HEAP_MAX_FRAMES) must be the same.  The counts go to stderr at exit,
 * after the first few differences.
 */
static unsigned long vfy_same, vfy_differ, vfy_gave_up;

static void
vfy_put(const char *what, const uintptr_t *pcs, int n)
{
    char line[2048];
    int k = snprintf(line, sizeof(line), "cfi verify: %s", what);

    for (int i = 0; i < n && k < (int)sizeof(line) - 24; i++)
        k += snprintf(line + k, sizeof(line) - (size_t)k, " %#lx", (unsigned long)pcs[i]);
    line[k++] = '\n';
    (void)!write(2, line, (size_t)k);
}

static __attribute__((noinline)) void
vfy_compare(const uintptr_t *pcs, int n)
{
    uintptr_t ref[TAKE_FRAMES];
    pe_unwind_bt_fn bt = pe_unwind_heap_begin();
    int m, a, b, la, lb, same;

    if (!bt)
        return;
    m = bt((void **)ref, (int)PE_ARRAY_SIZE(ref));
    pe_unwind_heap_end(ref, m, (int)PE_ARRAY_SIZE(ref));
    a = pe_heap_trim(pcs, n);
    b = pe_heap_trim(ref, m);
    la = n - a < PE_HEAP_MAX_FRAMES ? n - a : PE_HEAP_MAX_FRAMES;
    lb = m - b < PE_HEAP_MAX_FRAMES ? m - b : PE_HEAP_MAX_FRAMES;
    same = la == lb && !memcmp(pcs + a, ref + b, (size_t)la * sizeof(*pcs));
    if (same) {
        __atomic_add_fetch(&vfy_same, 1, __ATOMIC_RELAXED);
    } else if (__atomic_add_fetch(&vfy_differ, 1, __ATOMIC_RELAXED) <= 3) {
        vfy_put("rules    ", pcs + a, la);
        vfy_put("libunwind", ref + b, lb);
    }
}

__attribute__((destructor)) static void
vfy_report(void)
{
    char line[160];
    int k = snprintf(line, sizeof(line),
                     "cfi verify: %lu same, %lu differ, %lu gave up; %llu rules read\n", vfy_same,
                     vfy_differ, vfy_gave_up, (unsigned long long)pe_cfi_rules_read());

    (void)!write(2, line, (size_t)k);
}
#endif

/* Inlined into its callers: each frame of ours is one more step for the
   unwinder on every sample.  The walk by cached rules starts at our caller;
   when it gives up, unw_backtrace is called from this frame into this buffer
   (pe_unwind_heap_begin: no frame of the wrapper, no copy).  pe_heap_trim
   drops our frames. */
static inline __attribute__((always_inline)) uint32_t
take_stack(void)
{
    uintptr_t pcs[TAKE_FRAMES], lo = pe_tls.stack_lo;
    pe_unwind_bt_fn bt;
    int n = 0, start;

    /* a small stack (pe_tls.stack_lo) near its end: the unwinder could run
       into the guard page (test/progs/p_host_smallstack) */
    if (PE_UNLIKELY(lo) && (uintptr_t)__builtin_frame_address(0) - lo < PE_HEAP_STACK_NEED)
        return PE_HEAP_NO_STACK;
#ifndef PE_HEAP_NO_CFI /* (a build switch, to compare: libunwind for every sample) */
    {
        /* by the unwind tables' rules (stack/cfi.h), from our caller's
           frame: ours has a frame pointer (the Makefile builds with
           -fno-omit-frame-pointer), so its record gives the caller's pc,
           stack pointer and rbp exactly */
        uintptr_t *rec = __builtin_frame_address(0);
        n = pe_unwind_heap_fast(rec[1], (uintptr_t)(rec + 2), rec[0], pcs, TAKE_FRAMES);
#ifdef PE_HEAP_CFI_VERIFY
        if (n > 0)
            vfy_compare(pcs, n);
        else
            __atomic_add_fetch(&vfy_gave_up, 1, __ATOMIC_RELAXED);
#endif
        if (PE_LIKELY(n > 0))
            goto walked;
        n = 0;
    }
#endif
    if (PE_LIKELY((bt = pe_unwind_heap_begin()) != NULL)) {
        n = bt((void **)pcs, TAKE_FRAMES);
        if (PE_UNLIKELY(!pe_unwind_heap_end(pcs, n, TAKE_FRAMES)))
            bt = NULL;
    }
    if (PE_UNLIKELY(!bt)) /* libunwind unusable now, or JIT frames */
        n = pe_unwind_here(pcs, PE_HEAP_MAX_FRAMES, 0);
    if (n <= 0)
        return PE_HEAP_NO_STACK;
#ifndef PE_HEAP_NO_CFI
walked:
#endif
    start = pe_heap_trim(pcs, n);
    return pe_heap_stacks_intern(pcs + start, n - start);
}

#define WANT_HEAP 1   /* a heap sample */
#define WANT_ALLOCS 2 /* an /allocs_profile record (pe_heap_allocs_inflight held) */

/*
 * The countdown's slow step, for an allocation of `size` bytes that
 * pe_heap_countdown has just counted down and sent here: 1 when it is a
 * sample point.  The bytes left to the sample point before this call were
 * countdown + size; a countdown of 0 means "not drawn yet" (a new thread,
 * or `fresh`: the rate changed), "parked by this thread's recording" (the
 * interval waits in reserve) or "parked by the recording's start on another
 * thread" (the interval is lost and drawn afresh, which the exponential's
 * lack of memory allows).  Then the next interval is loaded.
 */
PE_SIGSAFE int
pe_heap_interval_step(pe_tls_t *t, size_t size, int64_t rate, int fresh, int recording)
{
    uint64_t before = t->heap_countdown + size, have;
    int64_t left;
    int sample = 0;

    if (fresh)
        have = (uint64_t)draw_interval(t, rate);
    else if (before == 0 || before > PE_HEAP_CHUNK)
        have = t->heap_recording ? (uint64_t)t->heap_reserve : (uint64_t)draw_interval(t, rate);
    else
        have = before + (uint64_t)t->heap_reserve;
    if (size < have) {
        left = (int64_t)(have - size);
    } else {
        left = draw_interval(t, rate); /* the sample point: a fresh interval, no carry */
        sample = rate > 0;
    }
    load_interval(t, left, recording);
    return sample;
}

/* What to record for an allocation of `size` bytes that reached the slow
   path (after pe_heap_countdown). */
static int
decide(size_t size, int64_t *rate_out)
{
    pe_tls_t *t = &pe_tls;
    int gen = __atomic_load_n(&pe_heap_gen, __ATOMIC_RELAXED), want = 0, fresh = 0, recording;
    int64_t rate = __atomic_load_n(&pe_heap_rate_bytes, __ATOMIC_RELAXED);

    if (PE_UNLIKELY(t->heap_seeded_gen != gen)) {
        /* First allocation of this thread since start-up or a rate change. */
        t->heap_seeded_gen = gen;
        fresh = 1;
        if (gen == PE_HEAP_GEN_BOOT) { /* before pe_heap_init: nothing recorded yet */
            load_interval(t, NEVER, 0);
            return 0;
        }
    }
    if (PE_UNLIKELY(t->internal)) {
        /* The library's own threads: never recorded, rarely back here. */
        load_interval(t, NEVER, 0);
        return 0;
    }
    recording = __atomic_load_n(&pe_heap_allocs_on, __ATOMIC_RELAXED);
    if (pe_heap_interval_step(t, size, rate, fresh, recording))
        want = WANT_HEAP;
    if (t->guard)
        return 0; /* re-entered: the sample is skipped, the interval already redrawn */
    /* Dormant (preload/init.h: the bind failed, say): nothing may sample, and
       nobody could read it.  Its threads started since were never primed for
       libunwind either: their samples walked frame pointers with a syscall
       per stack page, ~2 us each (one every ~500 allocations: +6% on
       bench_heap's workload). */
    if (PE_UNLIKELY(!pe_init_active()))
        return 0;
    if (recording) {
        __atomic_fetch_add(&pe_heap_allocs_inflight, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&pe_heap_allocs_on, __ATOMIC_SEQ_CST)) {
            if (PE_UNLIKELY(t->rng == 0))
                pe_rand_seed(&t->rng);
            if (pe_rand_next(&t->rng) <= pe_heap_allocs_threshold)
                want |= WANT_ALLOCS;
        }
        if (!(want & WANT_ALLOCS))
            __atomic_fetch_sub(&pe_heap_allocs_inflight, 1, __ATOMIC_SEQ_CST);
    }
    *rate_out = rate;
    return want;
}

/* Big blocks are tagged even when not sampled (heap.h) while sampling is on
   and this thread is one whose allocations count. */
static inline int
big_tags(void)
{
    return __atomic_load_n(&pe_heap_rate_bytes, __ATOMIC_RELAXED) > 0 && !pe_tls.internal &&
           !pe_tls.guard && __atomic_load_n(&pe_heap_gen, __ATOMIC_RELAXED) != PE_HEAP_GEN_BOOT;
}

/* The real call the slow path stands for, untagged. */
static void *
plain_alloc(pe_heap_kind_t kind, size_t align, size_t size)
{
    void *p = NULL;
    int r;

    switch (kind) {
    case PE_HEAP_MALLOC: return pe_real.malloc(size);
    case PE_HEAP_CALLOC: return pe_real.calloc(1, size);
    case PE_HEAP_MEMALIGN: return pe_real.memalign(align, size);
    case PE_HEAP_ALIGNED_ALLOC: return pe_real.aligned_alloc(align, size);
    case PE_HEAP_POSIX_MEMALIGN:
        if ((r = pe_real.posix_memalign(&p, align, size)) != 0) {
            errno = r;
            return NULL;
        }
        return p;
    case PE_HEAP_VALLOC: return pe_real.valloc(size);
    case PE_HEAP_PVALLOC: return pe_real.pvalloc(size);
    }
    return NULL;
}

/* A tagged block p of `size` bytes was allocated: record it, fill its tag. */
static inline __attribute__((always_inline)) uint32_t
record_sample(void *p, size_t size, int64_t rate)
{
    uint64_t w = pe_heap_weight_fx(size, rate);
    uint32_t id = take_stack(), slot;

    pe_heap_stacks_account(id, 0, w, size);
    slot = pe_heap_live_insert((uintptr_t)p, size, id, w);
    if (!slot) /* counted, and its free will be, but the snapshot will not list it */
        __atomic_fetch_add(&pe_heap_dropped_live, 1, __ATOMIC_RELAXED);
    pe_heap_tag_set(p, id, size, w, slot);
    /* while a trace records (else one load) */
    PE_TRACE_ALLOC(0, size, pe_heap_bytes_fx(w, size) / PE_HEAP_BYTES_ONE, id);
    return id;
}

/* Tag a block we allocated: a sample when decided so (its stack id), else
   weight 0 (PE_HEAP_NO_STACK). */
static inline __attribute__((always_inline)) uint32_t
tag_block(void *p, int want, size_t size, int64_t rate)
{
    if (want & WANT_HEAP)
        return record_sample(p, size, rate);
    pe_heap_tag_set(p, PE_HEAP_NO_STACK, size, 0, 0);
    return PE_HEAP_NO_STACK;
}

/* The /allocs_profile side of a call that returned p: record it (with the
   heap sample's stack when there was one) and let the recording go. */
static void
finish_allocs(int want, const void *p, uint32_t id, size_t size)
{
    if (!(want & WANT_ALLOCS))
        return;
    if (p)
        pe_heap_allocs_record(id != PE_HEAP_NO_STACK ? id : take_stack(), size);
    __atomic_fetch_sub(&pe_heap_allocs_inflight, 1, __ATOMIC_SEQ_CST);
}

/* ---- after an attach: samples kept by address (side.c) ------------------------ */

/* A block p of `size` bytes, the real call's own, was sampled: record it and
   list it in the side table (where its free will find it). */
static inline __attribute__((always_inline)) uint32_t
side_record(void *p, size_t size, int64_t rate)
{
    uint64_t w = pe_heap_weight_fx(size, rate);
    uint32_t id = take_stack(), slot;

    pe_heap_stacks_account(id, 0, w, size);
    slot = pe_heap_live_insert((uintptr_t)p, size, id, w);
    if (!slot)
        __atomic_fetch_add(&pe_heap_dropped_live, 1, __ATOMIC_RELAXED);
    if (!pe_heap_side_insert((uintptr_t)p, size, w, id, slot)) {
        /* no room: its free could not be seen, so it is not in use */
        pe_heap_live_remove(slot, (uintptr_t)p);
        pe_heap_stacks_account(id, 1, w, size);
        return id;
    }
    PE_TRACE_ALLOC(0, size, pe_heap_bytes_fx(w, size) / PE_HEAP_BYTES_ONE, id);
    return id;
}

/* A sample taken out of the side table is freed (or moved). */
static void
side_forget(uintptr_t p, uint64_t size, uint64_t cnt_fx, uint32_t stack, uint32_t slot)
{
    pe_heap_live_remove(slot, p);
    pe_heap_stacks_account(stack, 1, cnt_fx, size);
    PE_TRACE_ALLOC(1, size, pe_heap_bytes_fx(cnt_fx, size) / PE_HEAP_BYTES_ONE, 0);
}

void
pe_heap_side_drain_all(void)
{
    pe_guard_enter();
    (void)pe_heap_side_drain(side_forget);
    pe_guard_exit();
}

/* The slow allocation after an attach: the real call, then the record. */
static __attribute__((noinline)) void *
side_alloc(pe_heap_kind_t kind, size_t align, size_t size)
{
    int64_t rate = 0;
    int want = decide(size, &rate), err;
    uint32_t id = PE_HEAP_NO_STACK;
    void *p;

    if (!want)
        return plain_alloc(kind, align, size);
    p = plain_alloc(kind, align, size);
    err = errno;
    pe_guard_enter();
    if (p && (want & WANT_HEAP))
        id = side_record(p, size, rate);
    finish_allocs(want, p, id, size);
    pe_guard_exit();
    errno = err;
    return p;
}

void
pe_heap_side_free(void *p)
{
    uint64_t size, cnt;
    uint32_t stack, slot;

    /* Unlisted before the real free: once freed, its address may come back
       to another thread's malloc and be listed again. */
    if (p && pe_heap_side_take((uintptr_t)p, &size, &cnt, &stack, &slot)) {
        int e = errno;
        pe_guard_enter();
        side_forget((uintptr_t)p, size, cnt, stack, slot);
        pe_guard_exit();
        errno = e;
    }
    pe_heap_hot.real_free(p);
}

void *
pe_heap_side_realloc(void *old, size_t size)
{
    uint64_t osize = 0, ocnt = 0;
    uint32_t ostack = 0, oslot = 0, id = PE_HEAP_NO_STACK;
    int64_t rate = 0;
    int had, want = 0, err;
    void *p;

    had = pe_heap_side_take((uintptr_t)old, &osize, &ocnt, &ostack, &oslot);
    if (size && pe_heap_countdown(size))
        want = decide(size, &rate);
    p = pe_real.realloc(old, size);
    err = errno;
    pe_guard_enter();
    if (!p && size) {
        /* failed: old is as it was, listed again (or, with no room, let go) */
        if (had && !pe_heap_side_insert((uintptr_t)old, osize, ocnt, ostack, oslot))
            side_forget((uintptr_t)old, osize, ocnt, ostack, oslot);
    } else {
        if (had) /* freed or moved: the old sample ends (free + malloc, as before an attach) */
            side_forget((uintptr_t)old, osize, ocnt, ostack, oslot);
        if (p && (want & WANT_HEAP))
            id = side_record(p, size, rate);
    }
    finish_allocs(want, p, id, size);
    pe_guard_exit();
    errno = err;
    return p;
}

/* ---- the slow paths under LD_PRELOAD ------------------------------------------- */

void *
pe_heap_alloc_slow(pe_heap_kind_t kind, size_t align, size_t size)
{
    int64_t rate = 0;
    int want, saved_errno, err, big;
    uint32_t id = PE_HEAP_NO_STACK;
    void *p = NULL;

    /* After an attach first: our threads' allocator (own.c) tags blocks */
    if (PE_UNLIKELY(pe_heap_hot.side_keys != NULL))
        return side_alloc(kind, align, size);
    if (PE_UNLIKELY(pe_tls.internal) && pe_heap_own_on())
        return pe_heap_own_alloc(kind, align, size);
    if (PE_UNLIKELY(pe_heap_own_pending()) && !pe_tls.internal)
        pe_heap_own_drain_slow();
    want = decide(size, &rate);
    big = size >= PE_HEAP_TAG_ALWAYS && big_tags(); /* (before our guard is set) */
    if (!want && !big)
        return plain_alloc(kind, align, size);
    saved_errno = errno;
    pe_guard_enter();
    if ((want & WANT_HEAP) || big) {
        p = pe_heap_tag_alloc(kind, align, size);
        if (p)
            id = tag_block(p, want, size, rate);
    }
    err = saved_errno;
    if (!p) { /* not sampled after all (no memory for the tag, odd alignment) */
        errno = saved_errno;
        p = plain_alloc(kind, align, size);
        err = errno;
    }
    finish_allocs(want, p, id, size);
    pe_guard_exit();
    errno = err;
    return p;
}

/* Forget a tagged block and return what the real free must be given
   (nothing here calls out, so errno stays as it was). */
static void *
untag(pe_heap_tag_t *t, void *p)
{
    void *base;

    pe_guard_enter();
    pe_heap_live_remove(t->slot, (uintptr_t)p);
    /* (weight 0: a block that stayed tagged through realloc; dormant: nobody
       reads the totals, and a new thread's stripe would cost a gettid) */
    if (t->cnt_fx && pe_init_active())
        pe_heap_stacks_account(t->stack, 1, t->cnt_fx, t->size);
    if (t->cnt_fx)
        PE_TRACE_ALLOC(1, t->size, pe_heap_bytes_fx(t->cnt_fx, t->size) / PE_HEAP_BYTES_ONE, 0);
    base = pe_heap_tag_release(t);
    pe_guard_exit();
    return base;
}

/*
 * realloc of a tagged block: the real realloc resizes the whole block, header
 * included (in place, or by mremap for big blocks: we never copy a big
 * buffer ourselves).  The tag is cleared first, so a move leaves no valid
 * tag behind in freed memory, and put back if the realloc fails.  In the
 * profile it is free + malloc: the old sample is counted freed and the new
 * size gets its own sampling decision.  When it is not sampled the block
 * keeps a tag of weight 0, which counts for nothing.
 */
static void *
realloc_tagged(pe_heap_tag_t *t, void *old, size_t size)
{
    size_t off = (uintptr_t)old - t->base, total;
    uint32_t old_slot = t->slot, old_stack = t->stack;
    uint64_t old_cnt = t->cnt_fx, old_size = t->size;
    uintptr_t magic, check;
    int64_t rate = 0;
    int want = 0, saved_errno;
    char *nb, *p;

    /* Under another allocator the block may land with p on a page start,
       where free() does not look for tags: keep 16 bytes spare to shift it. */
    size_t spare = pe_heap_hot.page_start_ok ? 0 : 16;

    if (__builtin_add_overflow(size, off + spare, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    magic = t->magic;
    check = t->check;
    pe_heap_tag_release(t);
    if (!(nb = pe_real.realloc((void *)t->base, total))) {
        t->check = check; /* old is as it was: tag it again */
        __atomic_store_n(&t->magic, magic, __ATOMIC_RELEASE);
        return NULL;
    }
    p = nb + off;
    if (spare && pe_heap_at_page_start((uintptr_t)p)) {
        memmove(p + spare, p, size);
        p += spare;
    }
    if (pe_heap_countdown(size))
        want = decide(size, &rate);
    saved_errno = errno;
    pe_guard_enter();
    pe_heap_live_remove(old_slot, (uintptr_t)old);
    if (old_cnt)
        pe_heap_stacks_account(old_stack, 1, old_cnt, old_size);
    pe_heap_tag_moved(p, nb);
    finish_allocs(want, p, tag_block(p, want, size, rate), size);
    pe_guard_exit();
    errno = saved_errno;
    return p;
}

void
pe_heap_free_slow(void *p)
{
    pe_heap_tag_t *t;

    if (pe_real_owns(p))
        return; /* the bootstrap pool is static, never freed */
    if (pe_heap_own_is(p)) {
        pe_heap_own_free(p);
        return;
    }
    if ((t = pe_heap_tag_of(p)))
        p = untag(t, p);
    if (PE_UNLIKELY(pe_tls.internal) && pe_heap_own_on())
        pe_heap_own_give_up(p); /* glibc's free would give this thread an arena */
    else
        pe_heap_hot.real_free(p); /* (not resolved yet: it resolves) */
}

size_t
pe_heap_usable_slow(void *p)
{
    pe_heap_tag_t *t;

    if (pe_real_owns(p))
        return pe_heap_pool_size(p);
    if (pe_heap_own_is(p))
        return pe_heap_own_usable(p);
    if ((t = pe_heap_tag_of(p)))
        return pe_heap_tag_usable(t, p);
    return pe_real.malloc_usable_size(p);
}

static size_t
min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* An untagged block that a realloc samples (or makes big) is copied into a
   tagged one only up to this size; bigger ones are tagged from birth (a
   block under PE_HEAP_TAG_ALWAYS may hold a page or so more than that). */
#define TAG_COPY_MAX (2 * PE_HEAP_TAG_ALWAYS)

void *
pe_heap_realloc_slow(void *old, size_t size, int counted)
{
    size_t keep;
    int big;
    pe_heap_tag_t *t;
    int64_t rate = 0;
    int want, saved_errno;
    uint32_t id = PE_HEAP_NO_STACK;
    void *p;

    if (pe_real_owns(old)) {
        /* Out of the pool into a real block (through malloc: it may be sampled). */
        if ((p = malloc(size ? size : 1)))
            memcpy(p, old, min_size(size, pe_heap_pool_size(old)));
        return p;
    }
    if (pe_heap_own_is(old))
        return pe_heap_own_realloc(old, size);
    if (PE_UNLIKELY(pe_tls.internal) && pe_heap_own_on()) {
        /* glibc's or a tag on a thread of ours: into one of ours (copied) */
        if ((t = pe_heap_tag_of(old))) {
            size_t have = pe_heap_tag_usable(t, old);
            if ((p = pe_heap_own_alloc(PE_HEAP_MALLOC, 16, size))) {
                memcpy(p, old, min_size(size, have));
                pe_heap_own_give_up(untag(t, old));
            }
            return p;
        }
        return pe_heap_own_adopt(old, size);
    }
    if ((t = pe_heap_tag_of(old))) {
        if (size == 0) /* the real realloc decides what size 0 means */
            return pe_real.realloc(untag(t, old), 0);
        return realloc_tagged(t, old, size);
    }
    if (!counted && !pe_heap_countdown(size))
        return pe_real.realloc(old, size);
    want = decide(size, &rate);
    big = size >= PE_HEAP_TAG_ALWAYS && big_tags();
    if (!want && !big)
        return pe_real.realloc(old, size);
    saved_errno = errno;
    pe_guard_enter();
    p = NULL;
    keep = min_size(size, pe_real.malloc_usable_size(old));
    if (((want & WANT_HEAP) || big) && size && keep <= TAG_COPY_MAX &&
        (p = pe_heap_tag_alloc(PE_HEAP_MALLOC, 16, size))) {
        /* To carry a tag the block must move: we copy what it holds. */
        memcpy(p, old, keep);
        pe_real.free(old);
        id = tag_block(p, want, size, rate);
        errno = saved_errno;
    } else {
        errno = saved_errno;
        p = pe_real.realloc(old, size);
        if (p && (want & WANT_HEAP) && size) {
            /* Too big to copy: a big block untagged (made before start-up, or
               aligned under another allocator): counted as allocated, but it
               cannot be seen freed, so not in use. */
            uint64_t w = pe_heap_weight_fx(size, rate);
            id = take_stack();
            pe_heap_stacks_account(id, 0, w, size);
            pe_heap_stacks_account(id, 1, w, size);
        }
    }
    saved_errno = errno;
    finish_allocs(want, p, id, size);
    pe_guard_exit();
    errno = saved_errno;
    return p;
}
