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
 * The interposers (malloc_hooks.c) call the inline fast paths below: an unsampled
 * allocation costs one subtraction and one branch, freeing an unsampled block
 * one load beside the word the real free reads (the tag check).  Everything
 * else happens off the fast path, lock-free or under a try-lock, and never
 * calls malloc.
 * Design notes: docs/DESIGN.md, "Heap sampling".
 *
 * Signal-safe: the hook paths (inline helpers, pe_heap_*_slow) add nothing
 * to the real allocator that a signal handler could deadlock on;
 * profile readers (snapshot, allocs_*, live_iterate) are not.
 */
#ifndef PE_HEAP_H
#define PE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "../preload/guard.h"
#include "../preload/pe.h"
#include "../profile/profile.h"
#include "../render/heapsnapshot.h"
#include "../render/timeline.h"

/* Deepest stack kept per sample (leaf first, our own frames trimmed). */
#define PE_HEAP_MAX_FRAMES 64
/* Stack a sample's unwinding may take below the malloc call, with a margin
   (test/progs/p_host_smallstack measures it); a small stack with less left gets a
   sample without a stack. */
#define PE_HEAP_STACK_NEED 8192
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

/* For good, when the process must be alone (preload/alone.c): sampling
   and recording stop, so that no allocation makes a system call of ours
   (libunwind's, a new thread's gettid); blocks sampled before are freed as
   usual. */
void pe_heap_step_aside(void);
/* Undo pe_heap_step_aside at `rate_bytes` (a later `profep attach`, preload/attach.c). */
void pe_heap_rejoin(int64_t rate_bytes);
/* The reason the heap endpoints give from now on (attached
   without the malloc interposers). */
void pe_heap_set_unavailable(const char *why);

/* Fork child: recording of allocations stops; heap sampling goes on when the
   child lives on as a tree member (lives), else stops (nothing could read
   its profile).  heap/ holds no lock a child could inherit. */
void pe_heap_atfork_child(int lives);

/*
 * After an attach (interpose/: the program's relocation slots now lead to
 * our hooks): sample with a mean of rate_bytes from now on, in the side
 * table's way (side.c: a sampled block is the real allocator's block,
 * untouched; nothing of ours reads a block we did not make).  Called before
 * the first slot is redirected, on one thread.  `note` (static, kept) goes
 * into every heap profile's comments, e.g. "since attach at TIME".  0 or
 * -errno (then pe_heap_reason() says why).
 */
int pe_heap_attach(int64_t rate_bytes, const char *note);
/* After the slots are put back (detach): sampling stops, and the samples
   still listed are counted freed (their frees go to libc unseen from now:
   a later attach starts its in-use view from nothing). */
void pe_heap_detach(void);
/* The note of the last attach, or "" (profile.c, views.c, the index page). */
const char *pe_heap_attach_note(void);

/* 1 when heap profiling works in this process; 0 with a reason otherwise
   (e.g. the program's malloc is not ours: it defines its own, or an allocator
   preloaded before us wins).  pe_heap_reason() is a static string. */
int pe_heap_available(void);
const char *pe_heap_reason(void);
/* The sampling rate in force (0 = off). */
int64_t pe_heap_rate(void);
/* Why the heap's sampled profiles (Go's heap and allocs, the snapshot, the
   peak) cannot answer now, or NULL: unavailable, or PROFEP_HEAP_RATE=0
   (heap_kinds.c, the kinds' rows and their routes). */
const char *pe_heap_unavailable(void);

/* ---- hook fast paths (heap/malloc_hooks.c) ------------------------------------ */

/*
 * Sampled blocks carry a tag (heap/tag.c): we allocate them ourselves with
 * room for a header in front, and the word just below the pointer we return
 * holds  key ^ p.  The key has bit 63 set, so that word is negative; glibc
 * keeps its chunk size there in its own blocks, which never is.  So free()
 * of an unsampled block tests the sign of one word on the cache line the
 * real free is about to read anyway, and no table: nothing shared is written
 * when samples come and go.  A negative word (under an allocator without
 * headers, the caller's neighbour's data) is compared with key ^ p, and the
 * slow path checks a second header word before believing it.  Under such an
 * allocator the page before a pointer at a page start may be unmapped: such
 * pointers are never read below, and never tagged.
 */
typedef struct pe_heap_hot_s {
    uintptr_t key;      /* tag key: random, bit 63 set; 0 before the first tag */
    uintptr_t key2;     /* second tag word's key */
    int page_start_ok;  /* glibc behind us: every block has a header below */
    uint32_t side_mask; /* side.c's table size - 1 (with side_keys) */
    /* copies of pe_real.malloc and .free (until they are resolved: our
       functions that resolve them), so that the fast paths touch this one
       line of ours and no other */
    void *(*real_malloc)(size_t);
    void (*real_free)(void *);
    /* what every slow path reads first (heap_int.h, allocs.c): on this line,
       which the fast paths keep in the cache, rather than three cold ones */
    int64_t rate_bytes; /* pe_heap_rate_bytes */
    int gen;            /* pe_heap_gen */
    int allocs_on;      /* pe_heap_allocs_on */
    /* After an attach (pe_heap_attach): the side table's keys (side.c), and
       the hooks never read below a block; NULL under LD_PRELOAD. */
    uintptr_t *side_keys;
} __attribute__((aligned(64))) pe_heap_hot_t;
/* Read by every malloc and free, written a handful of times: a line of its
   own (the type's alignment pads it, so nothing written often shares it). */
extern PE_HIDDEN pe_heap_hot_t pe_heap_hot;
#define pe_heap_allocs_on (pe_heap_hot.allocs_on) /* an /allocs_profile recording is running */

/*
 * 1 when the word below address a lies on the page before a's, which may be
 * unmapped: a is within 8 bytes of a page start.  4 KiB is the smallest page
 * Linux maps, so the test holds (conservatively) for any page size.
 */
PE_SIGSAFE static inline int
pe_heap_at_page_start(uintptr_t a)
{
    return (a & 4095) < 8;
}

/* 0 when p (not NULL, not at a page start) is certainly not ours: the word
   below it is not negative.  Safe on any block glibc handed out. */
PE_SIGSAFE static inline int
pe_heap_tag_sign(const void *p)
{
    return *(const intptr_t *)((uintptr_t)p - 8) < 0;
}

/* 1 when p (not NULL) may be one of ours (tagged or pool): the slow path
   decides.  Safe on any block the real allocator handed out. */
PE_SIGSAFE static inline int
pe_heap_maybe_tagged(const void *p)
{
    uintptr_t a = (uintptr_t)p;

    /* Below a page start: readable only when glibc's chunk header is there. */
    if (PE_UNLIKELY(pe_heap_at_page_start(a)) && !pe_heap_hot.page_start_ok)
        return 0;
    return *(const uintptr_t *)(a - 8) == (a ^ pe_heap_hot.key);
}

/*
 * Each thread counts the bytes it allocates down to its next sample point
 * in pe_tls.heap_countdown, which holds at most PE_HEAP_CHUNK of the
 * interval (the rest waits in heap_reserve).  Bigger allocations therefore
 * always reach the slow path, and so does everything while the countdown
 * is 0: a new thread, one that an /allocs_profile recording parked there
 * (every call is then a candidate), or one whose sampling rate changed.
 * The slow path sorts these out (sample.c).
 *
 * Blocks of PE_HEAP_CHUNK bytes and more are always tagged, with weight 0
 * when not sampled: a sampled block can only be resized in place (realloc, mremap)
 * if it already has its header, and a big buffer that started unsampled and
 * then grew by realloc would otherwise never be seen in use.  Smaller blocks
 * that a realloc samples or makes big are copied into a tagged block (at
 * most twice this much: what a block just under it may hold).
 * A thread that samples nothing reaches the slow path once per PE_HEAP_CHUNK
 * bytes.
 */
#define PE_HEAP_CHUNK ((uint64_t)1 << 20)
#define PE_HEAP_TAG_ALWAYS PE_HEAP_CHUNK

/* Count an allocation of `size` bytes down; 1 when it must take the slow
   path.  An allocation that is not sampled costs this subtraction and one
   branch (the borrow: size >= countdown, unsigned, so impossible sizes of
   2^63 and up go to the slow path too). */
PE_SIGSAFE static inline int
pe_heap_countdown(size_t size)
{
#if defined(__x86_64__) && defined(__PIC__)
    /* One read-modify-write of the thread's countdown and the borrow test,
       which the compiler spells in three more instructions. */
    __asm__ goto("movq pe_tls@gottpoff(%%rip), %%rax\n\t"
                 "subq %0, %%fs:%c1(%%rax)\n\t"
                 "jbe %l[slow]"
                 :
                 : "r"(size), "i"(__builtin_offsetof(pe_tls_t, heap_countdown))
                 : "rax", "cc", "memory"
                 : slow);
    return 0;
slow:
    return 1;
#else
    uint64_t c = pe_tls.heap_countdown;

    pe_tls.heap_countdown = c - size;
    return PE_UNLIKELY(c <= size);
#endif
}

/* What the slow allocation path is asked to do (the real call it stands for). */
typedef enum {
    PE_HEAP_MALLOC,
    PE_HEAP_CALLOC,
    PE_HEAP_MEMALIGN,
    PE_HEAP_ALIGNED_ALLOC,
    PE_HEAP_POSIX_MEMALIGN, /* errno carries its error on NULL */
    PE_HEAP_VALLOC,
    PE_HEAP_PVALLOC,
} pe_heap_kind_t;

/*
 * The allocation itself, for one that reached the slow path: decides whether
 * to sample it, allocates (tagged when sampled, by the real call otherwise)
 * and records.  Returns what the real call would (errno as it would leave it).
 */
PE_SIGSAFE void *pe_heap_alloc_slow(pe_heap_kind_t kind, size_t align, size_t size);
/* realloc of a block pe_heap_maybe_tagged() flagged, or one whose new size
   reached the slow path (counted: pe_heap_countdown said so): the whole call. */
PE_SIGSAFE void *pe_heap_realloc_slow(void *old, size_t size, int counted);
/* free of a block pe_heap_maybe_tagged() flagged: the whole call. */
PE_SIGSAFE void pe_heap_free_slow(void *p);
/* After an attach: 1 when p (not NULL) may be a sample (side.c's table has
   something where p's probe starts; an empty slot there means "not listed"),
   without reading p's memory.  One multiply and one load of a line of ours. */
PE_SIGSAFE static inline int
pe_heap_side_maybe(const uintptr_t *keys, const void *p)
{
    uint32_t i = (uint32_t)((((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) >> 32);

    return __atomic_load_n(&keys[i & pe_heap_hot.side_mask], __ATOMIC_ACQUIRE) != 0;
}

/* After an attach (pe_heap_hot.side_keys set): the whole free and realloc,
   which look the block up in the side table and never read it. */
PE_SIGSAFE void pe_heap_side_free(void *p);
PE_SIGSAFE void *pe_heap_side_realloc(void *old, size_t size);
/* malloc_usable_size of such a block. */
PE_SIGSAFE size_t pe_heap_usable_slow(void *p);
/* The same, resolving the real functions first: NULL when that worked (the
   caller calls the real function) or the pool is exhausted. */
PE_SIGSAFE void *pe_heap_boot_alloc(size_t size, size_t align);

/* ---- per-stack totals (/debug/pprof/heap, allocs) ---------------------------------------------
 */

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

/* Counters for the profile comments: samples the live table could not list
   (still counted in the profile), stacks that found the stack table full. */
typedef struct pe_heap_stats_s {
    uint64_t samples, dropped_live, stacks, stacks_full, live;
    uint64_t live_cap;
} pe_heap_stats_t;
void pe_heap_get_stats(pe_heap_stats_t *st);

/* ---- profiles (profile.c; HTTP threads) ------------------------------------------ */

/* A sample of `stack` in p: its frames, or "[unknown]".  As pe_prof_add. */
int pe_heap_prof_add(pe_prof_t *p, uint32_t stack, const int64_t *values,
                     const pe_prof_label_t *labels, int nlabels);
/* s1 -= s0 for alloc_* (both from pe_heap_snapshot, ascending stack); inuse_*
   stay as in s1 (Go's delta heap profile). */
void pe_heap_delta(pe_heap_rec_t *s1, int n1, const pe_heap_rec_t *s0, int n0);
/*
 * The totals as Go's heap profile: alloc_objects, alloc_space, inuse_objects,
 * inuse_space (unbiased), label bytes (the record's average block size),
 * default type `deftype`, period space/bytes = the rate; covering duration_ns
 * up to now; a comment when tables overflowed.  NULL on ENOMEM.
 */
pe_prof_t *pe_heap_profile(const pe_heap_rec_t *v, int n, const char *deftype, int64_t duration_ns);
/* Go's debug=1 text of the totals (sorted in place by in-use bytes): raw
   sampled values, heap/2*rate, our sampling comments, the MAPPED_LIBRARIES
   trailer.  0 or the sink's first error. */
int pe_heap_write_text(pe_sink_t *out, pe_heap_rec_t *v, int n);

/* ---- live sampled blocks (/heap_snapshot) --------------------------------------- */

typedef struct pe_heap_live_s {
    uintptr_t addr;
    uint64_t size;  /* requested bytes */
    double weight;  /* objects this sample stands for: 1/(1-exp(-size/rate)) */
    uint32_t stack; /* pe_heap_stack() id */
    uint32_t born;  /* pe_heap_now_s() when it was sampled (a realloc re-samples) */
} pe_heap_live_t;

/* A coarse clock for the age of samples: whole seconds of CLOCK_MONOTONIC_COARSE
   (vDSO, no syscall).  Read on the sampled path only. */
PE_SIGSAFE uint32_t pe_heap_now_s(void);

/*
 * Call cb for every live sampled block, from a copy taken first without a
 * lock (each entry whole; blocks allocated or freed during the copy may or
 * may not be in it), so cb may be slow or allocate.  Stops early when cb returns non-zero and
 * returns that value; else 0, or -ENOMEM.  Not from signal handlers; not from inside cb.
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
/* A stopped recording as a profile (alloc_objects, alloc_space, default
   alloc_space), scaled by 1/prob, the overflow as "[allocs table full]";
   covering duration_ns up to now.  NULL on ENOMEM (profile.c). */
pe_prof_t *pe_heap_allocs_profile(const pe_heap_arec_t *v, int n, double prob, uint64_t over_n,
                                  uint64_t over_b, int64_t duration_ns);

/* ---- memory over time (history.c) ------------------------------------------------ */

#define PE_HEAP_CHECKPOINTS 60 /* per-stack checkpoints kept */
#define PE_HEAP_TIMELINE 3600  /* seconds of timeline kept */

/* One stack's live totals (or their change), fixed point as pe_heap_rec_t. */
typedef struct pe_heap_ck_ent_s {
    uint32_t stack;
    uint32_t pad;
    int64_t cnt_fx, bytes_fx;
} pe_heap_ck_ent_t;

/* One second of the timeline: render/timeline.h's point, which the chart reads. */
typedef pe_prof_tl_point_t pe_heap_tl_t;

/*
 * Start the history thread (internal, every signal blocked): every second it
 * reads the per-stack live totals, RSS, mallinfo2 and the thread count;
 * every PROFEP_HEAP_CHECKPOINT s it keeps a checkpoint, and a copy at each
 * new peak of the sampled live total.  0 or -errno.  Called once the server
 * runs (http/server.c).
 */
int pe_heap_hist_start(void);
int pe_heap_hist_running(void);
/* The history thread leaves for good (returns once it has left its loop, 5 s
   at most; the caller waits for its task to vanish); the history is kept. */
void pe_heap_hist_stop(void);
/* After pe_heap_hist_stop: pe_heap_hist_start may start it again (preload/attach.c). */
void pe_heap_hist_rejoin(void);
/* Change of the per-stack live totals since the checkpoint nearest to `ago`
   s before now (malloc'd *out, ascending stack; when it was taken in
   *taken_ns, CLOCK_REALTIME).  0, -ENOENT (no checkpoint yet) or -ENOMEM. */
int pe_heap_hist_since(double ago, pe_heap_ck_ent_t **out, int *n, int64_t *taken_ns);
/* The per-stack live totals at the highest sampled live total seen (when, how
   many bytes).  0, -ENOENT (none yet) or -ENOMEM. */
int pe_heap_hist_peak(pe_heap_ck_ent_t **out, int *n, int64_t *when_ns, uint64_t *bytes);
/* The timeline, oldest first (malloc'd; NULL and 0 when empty).  0 or -ENOMEM. */
int pe_heap_hist_timeline(pe_heap_tl_t **out, int *n);
/* A fork child: the history lock as new (its thread is gone). */
void pe_heap_history_atfork_child(void);
/* Bytes the history holds now; checkpoints kept now. */
uint64_t pe_heap_hist_bytes(void);
uint64_t pe_heap_hist_checkpoints(void);

/* ---- views of the live table and the history (views.c; HTTP threads) ------------ */

/* Which live blocks a view keeps, by age (min_age, max_age). */
typedef struct pe_heap_age_s {
    int on;              /* a window was asked for; else every block passes */
    double min_s, max_s; /* the window, seconds */
    uint32_t now;        /* pe_heap_now_s() when the request was read */
} pe_heap_age_t;

/*
 * A view: per-stack live objects and bytes (or their change), with what it
 * is in `comment`, and the time span it covers.  Filled by one of:
 *   pe_heap_view_age    live blocks in the window f, split by an age_s label
 *                       (exact below 100 s, then two significant digits);
 *                       0 or -ENOMEM
 *   pe_heap_view_since  change since the checkpoint nearest to `ago` s ago;
 *                       0, -ENOENT (no checkpoint yet) or -ENOMEM
 *   pe_heap_view_peak   the live heap per stack at the highest live total
 *                       seen; 0, -ENOENT (none yet) or -ENOMEM
 * then sent as a profile (inuse_objects, inuse_space; NULL on ENOMEM) or as
 * Go's debug=1 text (one record per stack, values already unbiased: heap/2),
 * and freed.
 */
typedef struct pe_heap_view_s {
    struct pe_heap_vrec_s *v;
    int n;
    int64_t time_ns, dur_ns;
    char comment[512];
} pe_heap_view_t;
int pe_heap_view_age(pe_heap_view_t *w, const pe_heap_age_t *f);
int pe_heap_view_since(pe_heap_view_t *w, double ago);
int pe_heap_view_peak(pe_heap_view_t *w);
pe_prof_t *pe_heap_view_profile(const pe_heap_view_t *w);
int pe_heap_view_write_text(pe_heap_view_t *w, pe_sink_t *out);
void pe_heap_view_free(pe_heap_view_t *w);

/*
 * /heap_snapshot: every live block in the window f as an object of its
 * stack's sample (bytes weight x size, clamped to 32 bits; 1 with all_one),
 * laid out (pe_prof_hsnap_build).  0 with *p and *h (the caller frees both,
 * h first), or -ENOMEM, -E2BIG.
 */
int pe_heap_hsnap(const pe_heap_age_t *f, int all_one, pe_prof_t **p, pe_prof_hsnap_t **h);

#endif /* PE_HEAP_H */
