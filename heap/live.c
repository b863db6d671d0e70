/*
 * live.c: the live table, the sampled blocks not yet freed, for the heap
 * snapshot.  (The profile's in-use totals come from the stack table: a
 * block's tag carries what its free must subtract.)
 *
 *   slots[]   a fixed array of entries; a block's tag remembers its slot,
 *             so removal is one compare-and-swap, and nothing is searched.
 *
 * Lock-free: an insert claims an empty slot by CAS near this thread's own
 * cursor (threads start far apart, so their inserts touch different cache
 * lines, and a cursor walks forward so a long run touches few new pages);
 * it fills the entry and publishes the address last.  A remove clears the
 * address.  Readers take an entry when its address reads the same before
 * and after its fields.  A claim that finds no empty slot within a few short
 * runs of probes drops the sample from the table (counted); the block is still
 * counted in the profile.  No lock means nothing to hold across fork and
 * nothing a signal handler could deadlock on.
 *
 * Signal-safe: insert and remove are; copy is for the profile threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../preload/clock.h"
#include "heap_int.h"

typedef struct live_ent_s {
    uintptr_t addr; /* 0 = empty, 1 = being filled */
    uint64_t size;
    uint64_t cnt_fx;
    uint32_t stack;
    uint32_t born; /* pe_heap_now_s() at insert: the sample's age */
} live_ent_t;

#define CLAIMED 1u
#define PROBES 256 /* slots tried per insert before the sample is not listed */
#define RUN 64     /* ... in runs of this many, each from a new place */

static live_ent_t *slots;

PE_SIGSAFE uint32_t
pe_heap_now_s(void)
{
    /* Coarse: a tick's resolution is plenty for ages in seconds, and it
       costs a few ns where the sample's unwind costs microseconds. */
    return (uint32_t)(pe_clock_ns(CLOCK_MONOTONIC_COARSE) / 1000000000);
}
static uint32_t nslots; /* a power of two */

int
pe_heap_live_init(size_t n)
{
    if (slots)
        return 0;
    /* Never read before written, except by readers: no zero-page copies. */
    slots = pe_heap_map(n * sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    nslots = (uint32_t)n;
    return 0;
}

PE_SIGSAFE uint32_t
pe_heap_live_insert(uintptr_t addr, uint64_t size, uint32_t stack, uint64_t cnt_fx)
{
    pe_tls_t *t = &pe_tls;
    uint32_t mask = nslots - 1, i;

    if (!slots || addr <= CLAIMED)
        return 0;
    if (PE_UNLIKELY(t->heap_live_cursor == 0)) /* threads start apart (golden ratio) */
        t->heap_live_cursor = ((uint32_t)pe_gettid() * 0x9E3779B9u) | 1;
    i = t->heap_live_cursor;
    for (int n = 0; n < PROBES; n++, i++) {
        /* A long run of long-lived entries (a program's start-up): jump
           past it to an unrelated place, a few times, before giving up. */
        if (n && (n & (RUN - 1)) == 0)
            i = (i + 0x9E3779B9u * (uint32_t)n) | 1;
        live_ent_t *e = &slots[i & mask];
        uintptr_t zero = 0;

        /* No load first: on a page nobody touched yet, a read would map the
           shared zero page and the write after it would copy it, with a TLB
           shootdown across CPUs; a CAS faults in a fresh page directly. */
        if (!__atomic_compare_exchange_n(&e->addr, &zero, CLAIMED, 0, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED))
            continue;
        e->size = size;
        e->cnt_fx = cnt_fx;
        e->stack = stack;
        e->born = pe_heap_now_s();
        __atomic_store_n(&e->addr, addr, __ATOMIC_RELEASE);
        t->heap_live_cursor = (i + 1) | (i + 1 == 0);
        return (i & mask) + 1;
    }
    t->heap_live_cursor = i | (i == 0);
    return 0;
}

PE_SIGSAFE void
pe_heap_live_remove(uint32_t slot, uintptr_t addr)
{
    uintptr_t want = addr;

    if (!slots || slot == 0 || slot > nslots)
        return;
    __atomic_compare_exchange_n(&slots[slot - 1].addr, &want, 0, 0, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
}

uint64_t
pe_heap_live_count(void)
{
    uint64_t n = 0;

    for (uint32_t i = 0; slots && i < nslots; i++)
        n += __atomic_load_n(&slots[i].addr, __ATOMIC_RELAXED) > CLAIMED;
    return n;
}

uint64_t
pe_heap_live_capacity(void)
{
    return nslots;
}

int
pe_heap_live_copy(pe_heap_live_t **out, size_t *n)
{
    pe_heap_live_t *v;
    size_t k = 0, cap = 1024;

    *out = NULL;
    *n = 0;
    if (!slots)
        return 0;
    if (!(v = malloc(cap * sizeof(*v))))
        return -ENOMEM;
    for (uint32_t i = 0; i < nslots; i++) {
        live_ent_t *e = &slots[i];
        uintptr_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        pe_heap_live_t b;

        if (a <= CLAIMED)
            continue;
        b.addr = a;
        b.size = __atomic_load_n(&e->size, __ATOMIC_RELAXED);
        b.weight = (double)__atomic_load_n(&e->cnt_fx, __ATOMIC_RELAXED) / PE_HEAP_CNT_ONE;
        b.stack = __atomic_load_n(&e->stack, __ATOMIC_RELAXED);
        b.born = __atomic_load_n(&e->born, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->addr, __ATOMIC_RELAXED) != a)
            continue; /* freed (and maybe reused) while we read it */
        if (k == cap) {
            pe_heap_live_t *w = realloc(v, 2 * cap * sizeof(*v));
            if (!w) {
                free(v);
                return -ENOMEM;
            }
            v = w;
            cap *= 2;
        }
        v[k++] = b;
    }
    *out = v;
    *n = k;
    return 0;
}
