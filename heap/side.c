/*
 * side.c: the side table, how free() knows our samples after an attach.
 *
 * Under LD_PRELOAD a sampled block carries a header in front (tag.c) and
 * free() reads the word below every pointer.  After an attach that is wrong
 * twice: the blocks made before it may come from any allocator (nothing of
 * ours may read outside a block we made), and after a detach libc's own
 * free() gets our samples back, so they must be plain blocks of the real
 * allocator.  So after an attach a sampled block is the real call's block,
 * untouched, and what its free must subtract lives here, keyed by address:
 *
 *   keys[]   open addressing, linear probing from hash(p); 0 empty,
 *            1 a tombstone, 2 an entry being filled, else the address
 *   meta[]   beside each key: size, weight, stack, live-table slot
 *
 * free(p) reads keys[] only: hash, one load, usually an empty slot; p's own
 * memory is never read.  Lock-free: an insert claims a slot by CAS and
 * publishes the address last; a removal turns the address into a tombstone
 * by CAS (so the free that wins accounts it once), and into an empty slot
 * when the next one is empty.  Probes stop after PROBES slots: an insert that
 * finds no room leaves the block untracked (counted allocated and freed at
 * once), a lookup that finds nothing says "not ours".  A stale entry (a
 * sample freed through a pointer to libc's free taken before the attach)
 * only misplaces one sample's free in time; it is never a wrong memory access.
 *
 * Signal-safe: find, insert and take are (no lock, no call); clear is not.
 */
#include <errno.h>
#include <string.h>

#include "heap_int.h"

typedef struct side_meta_s {
    uint64_t size;
    uint64_t cnt_fx;
    uint32_t stack;
    uint32_t slot;
} side_meta_t;

#define EMPTY 0u
#define TOMB 1u
#define FILLING 2u
#define PROBES 32

static side_meta_t *meta;
static uint64_t side_dropped; /* samples not tracked: no room within PROBES */

int
pe_heap_side_init(uint32_t entries)
{
    uintptr_t *keys;

    if (pe_heap_hot.side_keys)
        return 0;
    keys = pe_heap_map_hashed((size_t)entries * sizeof(*keys));
    meta = pe_heap_map((size_t)entries * sizeof(*meta));
    if (!keys || !meta)
        return -ENOMEM; /* (leaked: once per process at most) */
    pe_heap_hot.side_mask = entries - 1;
    /* Published last: the hooks test side_keys first (heap.h). */
    __atomic_store_n(&pe_heap_hot.side_keys, keys, __ATOMIC_RELEASE);
    return 0;
}

PE_SIGSAFE static inline uint32_t
side_hash(uintptr_t p)
{
    /* Blocks are 16-byte aligned at least: drop those bits, then Fibonacci
       (the same as heap.h's pe_heap_side_maybe). */
    return (uint32_t)(((p >> 4) * 0x9E3779B97F4A7C15ull) >> 32);
}

PE_SIGSAFE int
pe_heap_side_insert(uintptr_t p, uint64_t size, uint64_t cnt_fx, uint32_t stack, uint32_t slot)
{
    uintptr_t *keys = pe_heap_hot.side_keys;
    uint32_t mask = pe_heap_hot.side_mask, i = side_hash(p) & mask;

    if (!keys || p <= FILLING)
        return 0;
    for (int n = 0; n < PROBES; n++, i = (i + 1) & mask) {
        uintptr_t k = __atomic_load_n(&keys[i], __ATOMIC_RELAXED);
        if (k > FILLING)
            continue;
        if (!__atomic_compare_exchange_n(&keys[i], &k, FILLING, 0, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED))
            continue;
        meta[i] = (side_meta_t){size, cnt_fx, stack, slot};
        __atomic_store_n(&keys[i], p, __ATOMIC_RELEASE);
        return 1;
    }
    __atomic_fetch_add(&side_dropped, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Retire slot i (its address just became a tombstone, by us). */
PE_SIGSAFE static inline void
side_retire(uintptr_t *keys, uint32_t mask, uint32_t i)
{
    uintptr_t t = TOMB;

    /* No chain runs through i to an empty next slot: i may be empty too. */
    if (__atomic_load_n(&keys[(i + 1) & mask], __ATOMIC_RELAXED) == EMPTY)
        __atomic_compare_exchange_n(&keys[i], &t, EMPTY, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

PE_SIGSAFE int
pe_heap_side_take(uintptr_t p, uint64_t *size, uint64_t *cnt_fx, uint32_t *stack, uint32_t *slot)
{
    uintptr_t *keys = __atomic_load_n(&pe_heap_hot.side_keys, __ATOMIC_ACQUIRE);
    uint32_t mask = pe_heap_hot.side_mask, i = side_hash(p) & mask;

    if (!keys || p <= FILLING)
        return 0;
    for (int n = 0; n < PROBES; n++, i = (i + 1) & mask) {
        uintptr_t k = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
        if (k == EMPTY)
            return 0;
        if (k != p)
            continue;
        /* Read while the key is p (the insert published meta before it),
           then claim: only the one free of a block wins its CAS. */
        side_meta_t m = meta[i];
        if (!__atomic_compare_exchange_n(&keys[i], &k, TOMB, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return 0;
        side_retire(keys, mask, i);
        *size = m.size;
        *cnt_fx = m.cnt_fx;
        *stack = m.stack;
        *slot = m.slot;
        return 1;
    }
    return 0;
}

int
pe_heap_side_drain(void (*cb)(uintptr_t p, uint64_t size, uint64_t cnt_fx, uint32_t stack,
                              uint32_t slot))
{
    uintptr_t *keys = __atomic_load_n(&pe_heap_hot.side_keys, __ATOMIC_ACQUIRE);
    int n = 0;

    for (uint32_t i = 0; keys && i <= pe_heap_hot.side_mask; i++) {
        uintptr_t k = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
        side_meta_t m;
        if (k <= FILLING)
            continue;
        m = meta[i];
        if (!__atomic_compare_exchange_n(&keys[i], &k, TOMB, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue; /* its free won */
        cb(k, m.size, m.cnt_fx, m.stack, m.slot);
        n++;
    }
    return n;
}

void
pe_heap_side_clear(void)
{
    uintptr_t *keys = pe_heap_hot.side_keys;

    /* At an attach, before any slot leads here: tombstones and stale
       entries of the last attach go. */
    if (keys)
        memset(keys, 0, ((size_t)pe_heap_hot.side_mask + 1) * sizeof(*keys));
}
