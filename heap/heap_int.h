/*
 * heap_int.h: what the files of heap/ share with each other (and with the
 * unit tests, which link them directly).  Not for other modules.
 *
 * Signal-safe: as marked.
 */
#ifndef PE_HEAP_INT_H
#define PE_HEAP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"

/* Stack id of the pseudo-stack "[unknown]": samples with no frames, or that
   found the stack table full. */
#define PE_HEAP_NO_STACK 0u

/* ---- heap.c ------------------------------------------------------------------ */

#define pe_heap_rate_bytes (pe_heap_hot.rate_bytes) /* 0 = heap sampling off */
/* Generation of the sampling rate, bumped when it changes; each thread's
   pe_tls.heap_seeded_gen (0 in a new thread) says which one its countdown
   was drawn for.  PE_HEAP_GEN_BOOT: before pe_heap_init, nothing recorded. */
#define PE_HEAP_GEN_BOOT 1
#define pe_heap_gen (pe_heap_hot.gen)
extern uint64_t pe_heap_dropped_live;

/* mmap `bytes` of zeroed MAP_NORESERVE memory; NULL on failure. */
void *pe_heap_map(size_t bytes);
/* The same for hash tables probed at random: populated up front when small. */
void *pe_heap_map_hashed(size_t bytes);
/* Entries for a table that would hold `want` (a power of two) of `per`
   bytes: want, or under an address-space limit (RLIMIT_AS, read once) the
   largest power of two whose table takes at most 1/share of it (at least
   256): the program's memory is the program's (README "Limitations"). */
uint32_t pe_heap_fit(uint32_t want, size_t per, unsigned share);
/* Trim our own frames off the leaf end of pcs; returns the new start index. */
PE_SIGSAFE int pe_heap_trim(const uintptr_t *pcs, int n);

/* ---- sample.c ----------------------------------------------------------------- */

/* Exponential interval with mean `rate` (>0), clamped to [1, 64*rate]. */
PE_TESTONLY PE_SIGSAFE int64_t pe_heap_draw(uint64_t *rng, int64_t rate);
/*
 * The countdown's slow step (heap.h: pe_heap_countdown said "slow" for an
 * allocation of `size` bytes): 1 when it is a sample point.  Loads the next
 * interval into t (parked at 0 while `recording`).  fresh: the thread's
 * interval is stale (first call, or the rate changed).
 */
PE_TESTONLY PE_SIGSAFE int pe_heap_interval_step(pe_tls_t *t, size_t size, int64_t rate, int fresh,
                                                 int recording);
/* Weight of a sample of `size` bytes: objects (PE_HEAP_CNT_ONE units). */
PE_TESTONLY PE_SIGSAFE uint64_t pe_heap_weight_fx(uint64_t size, int64_t rate);
/* Bytes a sample of `size` with weight cnt_fx stands for (PE_HEAP_BYTES_ONE units). */
PE_SIGSAFE static inline uint64_t
pe_heap_bytes_fx(uint64_t cnt_fx, uint64_t size)
{
    unsigned __int128 v = (unsigned __int128)cnt_fx * size;

    v >>= 12; /* 2^16 count units -> 2^4 byte units */
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* ---- sitetab.c ---------------------------------------------------------------- */

int pe_heap_stacks_init(void);
/* Intern a stack (leaf first); returns its id, PE_HEAP_NO_STACK when n == 0
   or the table is full.  Lock-free. */
PE_SIGSAFE uint32_t pe_heap_stacks_intern(const uintptr_t *pcs, int n);
/* Add one sample's weight to a stack's alloc (freed = 0) or freed totals. */
PE_SIGSAFE void pe_heap_stacks_account(uint32_t id, int freed, uint64_t cnt_fx, uint64_t size);
/* Number of ids handed out (upper bound for iteration). */
uint32_t pe_heap_stacks_count(void);
/* Copy one stack's totals; 0 if the id is unused/unpublished. */
int pe_heap_stacks_read(uint32_t id, pe_heap_rec_t *rec);
extern uint64_t pe_heap_stacks_full;

/* ---- tag.c ------------------------------------------------------------------- */

/* The header in front of a sampled block (layout: tag.c).  magic must stay
   the last word: free() reads p - 8. */
typedef struct pe_heap_tag_s {
    uintptr_t base;  /* what the real allocator returned */
    uint64_t size;   /* bytes asked for */
    uint64_t cnt_fx; /* the sample's weight */
    uint32_t stack;
    uint32_t slot;   /* live table slot (1-based), 0 = not listed */
    uintptr_t check; /* key2 ^ p */
    uintptr_t magic; /* key ^ p */
} pe_heap_tag_t;

/* Draw the tag keys once (before the first tag). */
PE_SIGSAFE void pe_heap_tag_key_init(void);
/* Allocate size bytes as the real call `kind` would (zeroed, aligned), with
   room for a tag in front; the tag is not valid until pe_heap_tag_set.
   NULL when the real call failed or the alignment is not one we tag. */
PE_SIGSAFE void *pe_heap_tag_alloc(pe_heap_kind_t kind, size_t align, size_t size);
/* Fill and validate p's tag. */
PE_SIGSAFE void pe_heap_tag_set(void *p, uint32_t stack, uint64_t size, uint64_t cnt_fx,
                                uint32_t slot);
/* After the real realloc moved a tagged block: its new base (p's tag is
   not valid until pe_heap_tag_set). */
PE_SIGSAFE void pe_heap_tag_moved(void *p, void *base);
/* p's tag if p is a tagged block, else NULL (the check of both words). */
PE_SIGSAFE pe_heap_tag_t *pe_heap_tag_of(void *p);
/* Invalidate the tag; returns the pointer to give back to the real free. */
PE_SIGSAFE void *pe_heap_tag_release(pe_heap_tag_t *t);
/* malloc_usable_size of a tagged block p. */
PE_SIGSAFE size_t pe_heap_tag_usable(pe_heap_tag_t *t, void *p);
/* Bytes asked for a bootstrap pool block. */
PE_SIGSAFE size_t pe_heap_pool_size(const void *p);

/* ---- side.c: after an attach, samples by address -------------------------------- */

/* Map the table (entries: a power of two) and publish it in the hot line. */
int pe_heap_side_init(uint32_t entries);
/* List sampled block p; 0 when there was no room (counted). */
PE_SIGSAFE int pe_heap_side_insert(uintptr_t p, uint64_t size, uint64_t cnt_fx, uint32_t stack,
                                   uint32_t slot);
/* Unlist p and give what was kept: 1, or 0 when p is not listed (not ours). */
PE_SIGSAFE int pe_heap_side_take(uintptr_t p, uint64_t *size, uint64_t *cnt_fx, uint32_t *stack,
                                 uint32_t *slot);
/* Unlist every entry, calling cb for each; returns how many. */
int pe_heap_side_drain(void (*cb)(uintptr_t p, uint64_t size, uint64_t cnt_fx, uint32_t stack,
                                  uint32_t slot));
/* sample.c: every listed sample counted freed and unlisted (detach). */
void pe_heap_side_drain_all(void);
/* Forget everything (no hook may lead here yet). */
void pe_heap_side_clear(void);

/* ---- live.c ------------------------------------------------------------------- */

/* Map a table of `slots` (power of two) entries. */
int pe_heap_live_init(size_t slots);
/* List a sampled block; returns its slot (1-based, kept in its tag) or 0 when
   no empty slot was found near this thread's cursor (not listed). */
PE_SIGSAFE uint32_t pe_heap_live_insert(uintptr_t addr, uint64_t size, uint32_t stack,
                                        uint64_t cnt_fx);
/* Unlist addr from its slot (a no-op if the slot holds something else). */
PE_SIGSAFE void pe_heap_live_remove(uint32_t slot, uintptr_t addr);
/* Entries listed now (a scan), and the table's size. */
uint64_t pe_heap_live_count(void);
uint64_t pe_heap_live_capacity(void);
/* Copy every listed entry into a malloc'd array (any thread, no lock). */
int pe_heap_live_copy(pe_heap_live_t **out, size_t *n);

/* ---- allocs.c ----------------------------------------------------------------- */

int pe_heap_allocs_init(void);
/* Probability threshold for a 64-bit uniform draw (Bernoulli p). */
extern uint64_t pe_heap_allocs_threshold;
/* Record one call (the caller checked the draw); lock-free. */
PE_SIGSAFE void pe_heap_allocs_record(uint32_t stack, uint64_t size);
/* In-flight recorders (stop waits for 0). */
extern int pe_heap_allocs_inflight;
void pe_heap_allocs_atfork_child(void);

/* ---- own.c: our threads' allocator ------------------------------------------- */

/* After the tag keys (pe_heap_init): on with glibc behind us.  The rest is
   on the malloc path: as safe as the real allocator (a spin lock our threads
   take with every signal blocked; a program thread only to free one of our
   blocks, which it does not hold). */
void pe_heap_own_init(void);
PE_SIGSAFE int pe_heap_own_on(void);
/* The whole call, for a thread of ours (pe_tls.internal). */
PE_SIGSAFE void *pe_heap_own_alloc(pe_heap_kind_t kind, size_t align, size_t size);
/* 1 when p (not NULL, pe_heap_maybe_tagged) is one of own.c's blocks. */
PE_SIGSAFE int pe_heap_own_is(void *p);
PE_SIGSAFE void pe_heap_own_free(void *p);
PE_SIGSAFE void *pe_heap_own_realloc(void *old, size_t size);
PE_SIGSAFE size_t pe_heap_own_usable(void *p);
/* On a thread of ours: a glibc block to free (later, on a program thread),
   and one to resize (into one of ours). */
PE_SIGSAFE void pe_heap_own_give_up(void *p);
PE_SIGSAFE void *pe_heap_own_adopt(void *old, size_t size);
/* On a program thread: free what ours gave up. */
PE_SIGSAFE int pe_heap_own_pending(void);
PE_SIGSAFE void pe_heap_own_drain_slow(void);
void pe_heap_own_atfork_child(void);

#endif /* PE_HEAP_INT_H */
