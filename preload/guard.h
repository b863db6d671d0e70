/*
 * guard.h: the per-thread state every module shares, in one initial-exec TLS
 * struct that the loader zero-fills (no allocation, no __tls_get_addr, usable
 * from malloc hooks and signal handlers).
 *
 *   guard     > 0 while this thread runs library code that may allocate or
 *             unwind; interposed calls made meanwhile pass straight through.
 *   internal  1 on the library's own threads: never sampled, never timed.
 *   in_loader depth inside dlopen/dlclose on this thread (unwinding unsafe).
 *   in_unwind 1 while our unwinder runs (dl_iterate_phdr answers from a snapshot).
 *
 * Signal-safe: yes.
 */
#ifndef PE_GUARD_H
#define PE_GUARD_H

#include <sys/types.h>

#include "pe.h"

typedef struct pe_tls_s {
    int guard;
    int internal;
    int in_loader;
    int in_unwind;
    pid_t tid;         /* cached gettid(); reset in fork children */
    int unwind_primed; /* libunwind's per-thread state set up outside a handler */
    /* a small stack's lowest usable byte (pe_cpu_stack_note), 0 = large or unknown */
    uintptr_t stack_lo;
    /* preload/fd_gate.c: this thread's creations and closes under way (a
       handler nested in one never waits for the other on its own thread) */
    int fd_born, fd_closing;
    /* heap sampling (heap/sample.c) */
    uint64_t heap_countdown;   /* fast-path part of it, 1..PE_HEAP_CHUNK; 0 = see slow path */
    int64_t heap_reserve;      /* the rest of the interval to the next heap sample */
    int heap_recording;        /* countdown parked at 0 by an /allocs_profile recording */
    uint64_t rng;              /* rand.h state, 0 = not seeded */
    int heap_seeded_gen;       /* rate generation the countdown was drawn for */
    uint32_t heap_live_cursor; /* where this thread looks for a free live slot */
    unsigned stripe;           /* pe_stripe() + 1, 0 = not assigned yet */
    int stripe_owned;          /* that stripe is this thread's alone */
    int may_own_stripe;        /* the thread gives a stripe back at exit */
    /* lock contention (contention/mutex.c) */
    int64_t mutex_countdown; /* waits left until the next sampled one; 0 = not drawn yet */
    uint64_t mutex_rng;      /* rand.h state for those draws, 0 = not seeded */
} __attribute__((aligned(PE_CACHELINE))) pe_tls_t;

extern PE_TLS pe_tls_t pe_tls;

static inline void
pe_guard_enter(void)
{
    pe_tls.guard++;
}

static inline void
pe_guard_exit(void)
{
    pe_tls.guard--;
}

/* True when this thread must not record anything (inside us, or one of ours). */
static inline int
pe_guard_active(void)
{
    return pe_tls.guard != 0 || pe_tls.internal != 0;
}

/*
 * Counters that every thread bumps (per-stack heap totals, unwinder pins) are
 * split into PE_STRIPES copies, each on its own cache line, and a thread
 * bumps only its own: two threads sampling the same stack would otherwise
 * pass the line back and forth on every sample.  Readers sum the copies.
 * The first PE_STRIPES_OWNED stripes are owned, one thread each, by threads
 * that give theirs back at exit (pe_stripe_release): an owner may add with
 * plain single-instruction adds (a signal handler on the same thread cannot
 * split one), a lock prefix less per counter.  Other threads share the rest,
 * dealt round-robin, with atomic adds.
 */
#define PE_STRIPES 16
#define PE_STRIPES_OWNED 12
PE_SIGSAFE unsigned pe_stripe_assign(void);
/* At thread exit: give an owned stripe back (later calls get a shared one). */
void pe_stripe_release(void);

PE_SIGSAFE static inline unsigned
pe_stripe(void)
{
    unsigned s = pe_tls.stripe;

    return PE_LIKELY(s) ? s - 1 : pe_stripe_assign();
}

/* 1 when this thread's stripe is its own (pe_stripe() first). */
PE_SIGSAFE static inline int
pe_stripe_owned(void)
{
    return pe_tls.stripe_owned;
}

/* *p += v on a counter of this thread's stripe that readers load atomically. */
PE_SIGSAFE static inline void
pe_stripe_add(uint64_t *p, uint64_t v)
{
#if defined(__x86_64__)
    if (pe_stripe_owned()) {
        __asm__ volatile("addq %1, %0" : "+m"(*p) : "r"(v));
        return;
    }
#endif
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* This thread's tid, cached (async-signal-safe). */
PE_SIGSAFE pid_t pe_gettid(void);

#endif /* PE_GUARD_H */
