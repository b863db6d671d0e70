/*
 * heap.h: allocation profiling, the contract of heap/.
 *
 * Two recorders share one stack table:
 *
 *   always-on heap sampling (/debug/pprof/heap, /debug/pprof/allocs,
 *   /heap_snapshot): each thread counts down bytes to the next sample point,
 *   drawn from an exponential distribution with mean `rate` bytes (Go's
 *   MemProfileRate rule), so an allocation of s bytes is sampled with
 *   probability 1 - exp(-s/rate).  A sample carries the weight
 *   w = 1 / (1 - exp(-s/rate)); per stack we keep sum(w) and sum(w*s), which
 *   estimate the true object count and bytes without bias.  Sampled blocks
 *   stay in a bounded live table until they are freed.
 *
 *   the /allocs_profile recording (ProfileEndpoints.jl): while on, every
 *   malloc-family call is recorded with probability sample_rate (Bernoulli),
 *   into a bounded table keyed by (stack, size).
 *
 * The interposers (hooks.c) call the inline fast paths below: an unsampled
 * allocation costs one subtraction and one branch, freeing an unsampled block
 * one L1/L2 load of a counting pre-filter.  Everything else happens off the
 * fast path, lock-free or under a try-lock, and never calls malloc.
 * Design notes: README "Design: heap sampling".
 *
 * Signal-safe: the hook entry points (pe_heap_on_*, pe_heap_*_slow) are;
 * profile readers (snapshot, allocs_*, live_iterate) are not.
 */
#ifndef PE_HEAP_H
#define PE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "../preload/guard.h"
#include "../preload/pe.h"

/* Deepest stack kept per sample (leaf first, our own frames trimmed). */
#define PE_HEAP_MAX_FRAMES 64
/* Fixed-point scales of the accumulated estimates. */
#define PE_HEAP_CNT_ONE 65536 /* 1 object  = 2^16 */
#define PE_HEAP_BYTES_ONE 16  /* 1 byte    = 2^4  */

/* ---- start-up, fork (preload/init.c) ------------------------------------------ */

/*
 * Arm heap sampling with a mean of `rate_bytes` bytes between samples
 * (0 = sampling off; /allocs_profile still works).  Called once from the
 * constructor after pe_real_init, on one thread, under the guard.  Maps the
 * tables (MAP_NORESERVE: untouched pages cost nothing), finds our own text
 * range (frames trimmed from stacks) and decides pe_heap_available().
 * Returns 0 or -errno (then the heap endpoints answer 503).
 */
int pe_heap_init(int64_t rate_bytes);

/* pthread_atfork: prepare takes our one lock (so no child inherits it held),
   parent releases it, child resets it and turns recording off (a fork child
   is dormant: nothing could read its profile). */
void pe_heap_atfork_prepare(void);
void pe_heap_atfork_parent(void);
void pe_heap_atfork_child(void);

/* 1 when heap profiling works in this process; 0 with a reason otherwise
   (e.g. the program's malloc is not ours: it defines its own, or an allocator
   preloaded before us wins).  pe_heap_reason() is a static string. */
int pe_heap_available(void);
const char *pe_heap_reason(void);
/* The sampling rate in force (0 = off). */
int64_t pe_heap_rate(void);

/* ---- hook fast paths (heap/hooks.c) ------------------------------------------ */

extern int pe_heap_allocs_on; /* an /allocs_profile recording is running */

/*
 * What the hooks must do at all, in one word they read first:
 *   PE_HEAP_HOT_SAMPLING  heap sampling on (PROFEP_HEAP_RATE > 0): sampled
 *                         blocks may be live, so free() consults the filters
 *   PE_HEAP_HOT_ALLOCS    an /allocs_profile recording runs
 *   PE_HEAP_HOT_POOL      the bootstrap pool handed out blocks (free() must
 *                         recognise them)
 * 0 (sampling off, nothing recording): malloc and free are a load and a jump
 * on top of the real function.
 */
#define PE_HEAP_HOT_SAMPLING 1
#define PE_HEAP_HOT_ALLOCS 2
#define PE_HEAP_HOT_POOL 4
extern int pe_heap_hot;

/* The pre-filter: one bit per hash bucket of sampled live addresses, 8 KiB,
   so that it stays in L1 (a 64 KiB byte array missed L1 on most frees). */
#define PE_HEAP_FILTER_BITS 16
extern uint8_t pe_heap_filter[(1u << PE_HEAP_FILTER_BITS) / 8];

static inline uint32_t
pe_heap_filter_idx(const void *p)
{
    return (uint32_t)(((uintptr_t)p * 0x9E3779B97F4A7C15ull) >> (64 - PE_HEAP_FILTER_BITS));
}

/*
 * In front of it, a page map: one bit per 4 KiB page (modulo a 128 MiB
 * window) that holds the start of a sampled live block.  It is indexed by
 * address, not by hash, so frees that are near each other in memory (the
 * common case) read the same few cache lines and stay in L1 even when the
 * program's working set evicts everything else; the hashed filter above is
 * read only for the ~1% of frees whose page holds a sample.  Measured on
 * bench_heap's 2-thread workload: the hashed filter's load alone missed L1 on
 * most frees and cost ~8% of the program's time.
 */
#define PE_HEAP_PAGE_BITS 15
extern uint8_t pe_heap_pagemap[(1u << PE_HEAP_PAGE_BITS) / 8];

static inline uint32_t
pe_heap_page_idx(const void *p)
{
    return (uint32_t)((uintptr_t)p >> 12) & ((1u << PE_HEAP_PAGE_BITS) - 1);
}

static inline int
pe_heap_filter_maybe(const void *p)
{
    uint32_t g = pe_heap_page_idx(p), i;

    if (!((__atomic_load_n(&pe_heap_pagemap[g >> 3], __ATOMIC_RELAXED) >> (g & 7)) & 1))
        return 0;
    i = pe_heap_filter_idx(p);
    return (__atomic_load_n(&pe_heap_filter[i >> 3], __ATOMIC_RELAXED) >> (i & 7)) & 1;
}

/* The bootstrap pool's range (preload/real.c), learnt at init so that free()
   tests it inline; until then every pointer is "maybe" and pe_real_owns()
   decides. */
extern uintptr_t pe_heap_pool_lo, pe_heap_pool_span;

/* Sampling decisions and recording, off the fast path.  p != NULL. */
PE_SIGSAFE void pe_heap_alloc_slow(void *p, size_t size);
PE_SIGSAFE void pe_heap_free_slow(void *p);

/* After an allocation of `size` bytes returned p (p != NULL). */
PE_SIGSAFE static inline void
pe_heap_on_alloc(void *p, size_t size)
{
    int64_t c = pe_tls.heap_countdown - (int64_t)size;

    pe_tls.heap_countdown = c;
    if (PE_UNLIKELY((c <= 0) |
                    (__atomic_load_n(&pe_heap_hot, __ATOMIC_RELAXED) & PE_HEAP_HOT_ALLOCS)))
        pe_heap_alloc_slow(p, size);
}

/* Before p (not NULL) goes back to the real free/realloc. */
PE_SIGSAFE static inline void
pe_heap_on_free(void *p)
{
    if ((__atomic_load_n(&pe_heap_hot, __ATOMIC_RELAXED) & PE_HEAP_HOT_SAMPLING) &&
        PE_UNLIKELY(pe_heap_filter_maybe(p)))
        pe_heap_free_slow(p);
}

/* ---- heap profile (http/h_heap.c) --------------------------------------------- */

/*
 * One stack's totals.  *_fx are unbiased estimates in fixed point
 * (PE_HEAP_CNT_ONE, PE_HEAP_BYTES_ONE), raw_* the sampled values themselves
 * (Go's debug=1 text prints those and lets the reader unbias).
 * inuse = alloc - freed, counted only for samples the live table could hold.
 */
typedef struct pe_heap_rec_s {
    uint32_t stack;
    uint64_t alloc_cnt_fx, alloc_bytes_fx, inuse_cnt_fx, inuse_bytes_fx;
    uint64_t raw_alloc_n, raw_alloc_b, raw_inuse_n, raw_inuse_b;
} pe_heap_rec_t;

/*
 * Copy every stack's totals into a malloc'd array (*out, *n; free() it).
 * Stacks never sampled are left out.  Any thread; takes no lock.
 * Returns 0 or -ENOMEM.
 */
int pe_heap_snapshot(pe_heap_rec_t **out, int *n);

/*
 * The frames of stack `id` (return addresses, leaf first) into pcs[max];
 * returns the count (0 for the pseudo-stack of samples without one).
 */
int pe_heap_stack(uint32_t id, uintptr_t *pcs, int max);

/* Counters for the profile comments: samples dropped because a table was full
   or busy, and frees lost because the pending queue overflowed. */
typedef struct pe_heap_stats_s {
    uint64_t samples, dropped_live, dropped_busy, lost_frees, stacks, stacks_full, live;
    uint64_t live_cap;
} pe_heap_stats_t;
void pe_heap_get_stats(pe_heap_stats_t *st);

/* ---- live sampled blocks (/heap_snapshot) --------------------------------------- */

typedef struct pe_heap_live_s {
    uintptr_t addr;
    uint64_t size;  /* requested bytes */
    double weight;  /* objects this sample stands for: 1/(1-exp(-size/rate)) */
    uint32_t stack; /* pe_heap_stack() id */
} pe_heap_live_t;

/*
 * Call cb for every live sampled block, from a copy taken at one instant
 * under the live table's lock (so the set is consistent, and cb may be slow
 * or allocate).  Stops early when cb returns non-zero and returns that value;
 * else 0, or -ENOMEM.  Not from signal handlers; not from inside cb.
 */
int pe_heap_live_iterate(int (*cb)(const pe_heap_live_t *blk, void *arg), void *arg);

/* ---- /allocs_profile recording ------------------------------------------------- */

/* Start recording with Bernoulli probability p in (0, 1].  `open_ended` is 1
   for /allocs_profile_start.  0, or -EBUSY when a recording (or its read-out)
   is in progress, -EINVAL for a bad p. */
int pe_heap_allocs_start(double p, int open_ended);

/* One recorded (stack, size) pair: `count` calls recorded (unscaled). */
typedef struct pe_heap_arec_s {
    uint32_t stack;
    uint64_t size;
    uint64_t count;
} pe_heap_arec_t;

/*
 * Stop the running recording and copy it out (malloc'd *out and *n; free() it;
 * *p gets its probability).  `open_ended` must match how it was started:
 * -ENOENT when no such recording runs.  Entries that did not fit the table
 * are summed into *over_count and *over_bytes (unscaled).  Afterwards the next
 * recording may start.  Returns 0, -ENOENT or -ENOMEM (recording stopped).
 */
int pe_heap_allocs_stop(int open_ended, pe_heap_arec_t **out, int *n, double *p,
                        uint64_t *over_count, uint64_t *over_bytes);
/* 1 when a recording runs: 1 timed, 2 open-ended; 0 none. */
int pe_heap_allocs_state(void);

#endif /* PE_HEAP_H */
