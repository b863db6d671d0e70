/*
 * ring.h: the bounded, lock-free store between the SIGPROF handler (many
 * producers, one per interrupted thread) and the collector (one consumer).
 *
 * A Vyukov-style sequence ring: each slot carries `seq`; a producer claims
 * slot `pos` with a CAS on `head` when seq == pos, fills it, and publishes
 * with seq = pos + 1; the consumer reads slot `tail` when seq == tail + 1 and
 * frees it with seq = tail + nslots.  A full ring makes the producer count the
 * sample as dropped instead of waiting.  Memory is one mmap, made once.
 *
 * Writers/readers: pe_ring_claim/pe_ring_publish from the handler (any thread);
 * pe_ring_peek/pe_ring_release from the single consumer, serialized by the
 * caller (the sampler's window lock).
 *
 * Signal-safe: pe_ring_claim, pe_ring_publish, pe_ring_drop.
 */
#ifndef PE_RING_H
#define PE_RING_H

#include <stdint.h>
#include <sys/types.h>

#include "../preload/pe.h"

/* Room for the handler's own frames, which unw_backtrace records first. */
#define PE_RING_FRAMES (PE_MAX_FRAMES + 8)

typedef struct pe_ring_slot_s {
    uint64_t seq;
    pid_t tid;
    int nframes;
    uint32_t weight; /* 1 + timer overruns */
    uint32_t flags;  /* PE_RING_F_* */
    uintptr_t pcs[PE_RING_FRAMES];
} pe_ring_slot_t;

#define PE_RING_F_TRUNCATED 1u /* unwinding was unsafe: leaf (or partial) only */
#define PE_RING_F_CUT 64u      /* stack cut in JIT code (unwind.h: pe_unwind_cut) */
/* With TRUNCATED: interrupted in the loader or in our own unwinding (account.h) */
#define PE_RING_F_TRUNC_OURS 0x10000u

typedef struct pe_ring_s {
    uint64_t head __attribute__((aligned(PE_CACHELINE)));    /* producers */
    uint64_t tail __attribute__((aligned(PE_CACHELINE)));    /* consumer */
    uint64_t dropped __attribute__((aligned(PE_CACHELINE))); /* weight lost to a full ring */
    uint32_t nslots, mask;
    pe_ring_slot_t *slots;
} pe_ring_t;

/* Map a ring of nslots (a power of two).  0 or -errno.  Not signal-safe. */
int pe_ring_init(pe_ring_t *r, uint32_t nslots);
/* A slot to fill, or NULL when full (then the caller reports pe_ring_drop). */
PE_SIGSAFE pe_ring_slot_t *pe_ring_claim(pe_ring_t *r);
/* Publish a claimed slot.  Returns 1 when this sample brought the ring to half
   full (exactly one publish per filling does, give or take a stale tail), so
   the handler can wake a sleeping consumer once per half ring, not per sample. */
PE_SIGSAFE int pe_ring_publish(pe_ring_t *r, pe_ring_slot_t *s);
PE_SIGSAFE void pe_ring_drop(pe_ring_t *r, uint32_t weight);
/* Consumer: the oldest published slot, or NULL; then release it. */
pe_ring_slot_t *pe_ring_peek(pe_ring_t *r);
void pe_ring_release(pe_ring_t *r, pe_ring_slot_t *s);

#endif /* PE_RING_H */
