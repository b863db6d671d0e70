/*
 * live.c: the live table, the sampled blocks not yet freed, for the heap
 * snapshot and the profile's in-use totals.  free() never searches it: a
 * block's tag (tag.c) says whether it is here.
 *
 *   slots[]   linear probing on a hash of the address, at most half full.
 *             Deletion shifts the following entries back (Knuth 6.4
 *             algorithm R), so there are never tombstones and probe lengths do
 *             not grow under churn.
 *
 * Writers (insert, remove) hold one spin lock, taken with a bounded try.  A free
 * that finds the lock busy (another thread, or a signal handler that
 * interrupted this very thread inside the lock) never waits: it queues the
 * address in pending[], and whoever holds the lock drains the queue before
 * and after it lets go (Dekker-style check, seq_cst on both sides), so
 * a removal is never lost unless the queue overflows (counted).  Insertions
 * run only with the guard clear, so the lock is never held by their own
 * thread; they spin briefly and then drop the sample (counted).
 *
 * Signal-safe: insert and forget are; copy/lock are for the profile threads.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "heap_int.h"

typedef struct live_ent_s {
    uintptr_t addr; /* 0 = empty */
    uint64_t size;
    uint64_t cnt_fx;
    uint32_t stack;
    uint32_t pad;
} live_ent_t;

#define PE_HEAP_PENDING 512

static live_ent_t *slots;
static uint64_t mask, count, cap_live;
static int lock_word;
static uintptr_t pending[PE_HEAP_PENDING];
static int npending;
uint64_t pe_heap_lost_frees;

int
pe_heap_live_init(size_t nslots)
{
    if (slots)
        return 0;
    slots = pe_heap_map_hashed(nslots * sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    mask = nslots - 1;
    cap_live = nslots / 2;
    return 0;
}

static inline uint64_t
home(uintptr_t a)
{
    uint64_t h = (uint64_t)a * 0xC2B2AE3D27D4EB4Full;

    return (h ^ (h >> 31)) & mask;
}

/* ---- the lock ------------------------------------------------------------------- */

static int
trylock(int spins)
{
    for (int i = 0;; i++) {
        if (!__atomic_load_n(&lock_word, __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&lock_word, 1, __ATOMIC_SEQ_CST))
            return 1;
        if (i >= spins)
            return 0;
        if (i > 64)
            sched_yield();
        else
            __builtin_ia32_pause();
    }
}

static void remove_locked(uintptr_t addr);

static void
drain_locked(void)
{
    if (!__atomic_load_n(&npending, __ATOMIC_SEQ_CST))
        return;
    for (int i = 0; i < PE_HEAP_PENDING; i++) {
        uintptr_t a = __atomic_exchange_n(&pending[i], 0, __ATOMIC_SEQ_CST);
        if (a) {
            __atomic_fetch_sub(&npending, 1, __ATOMIC_SEQ_CST);
            remove_locked(a);
        }
    }
}

/* Let go, then take back anything queued meanwhile (a free that saw the
   lock busy pushed before its own try, so one of us sees the other). */
static void
unlock(void)
{
    for (;;) {
        __atomic_store_n(&lock_word, 0, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&npending, __ATOMIC_SEQ_CST) || !trylock(0))
            return;
        drain_locked();
    }
}

void
pe_heap_live_lock(void)
{
    pe_guard_enter();
    trylock(1 << 30);
    drain_locked();
}

void
pe_heap_live_unlock(void)
{
    unlock();
    pe_guard_exit();
}

void
pe_heap_live_reset_lock(void)
{
    /* Fork child: whoever held it is gone; the structure is consistent
       because prepare took the lock before fork. */
    __atomic_store_n(&lock_word, 0, __ATOMIC_SEQ_CST);
}

/* ---- table operations (lock held) ------------------------------------------------- */

static void
remove_locked(uintptr_t addr)
{
    uint64_t i = home(addr), j, k;
    live_ent_t *e;

    for (;; i = (i + 1) & mask) {
        uintptr_t a = slots[i].addr;
        if (!a)
            return; /* not live (already gone) */
        if (a == addr)
            break;
    }
    e = &slots[i];
    pe_heap_stacks_account(e->stack, 1, e->cnt_fx, e->size);
    /* Backward shift: move later entries of the cluster into the hole when
       their home position does not lie cyclically in (i, j]. */
    for (j = i;;) {
        j = (j + 1) & mask;
        if (!slots[j].addr)
            break;
        k = home(slots[j].addr);
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        slots[i].size = slots[j].size;
        slots[i].cnt_fx = slots[j].cnt_fx;
        slots[i].stack = slots[j].stack;
        __atomic_store_n(&slots[i].addr, slots[j].addr, __ATOMIC_RELAXED);
        i = j;
    }
    __atomic_store_n(&slots[i].addr, 0, __ATOMIC_RELAXED);
    count--;
}

PE_SIGSAFE int
pe_heap_live_insert(uintptr_t addr, uint64_t size, uint32_t stack, uint64_t cnt_fx)
{
    uint64_t i;

    if (!slots || !addr)
        return -ENOSPC;
    if (!trylock(2000))
        return -EBUSY;
    drain_locked();
    /* A stale entry for this address (its free went around us) is replaced. */
    remove_locked(addr);
    if (count >= cap_live) {
        unlock();
        return -ENOSPC;
    }
    for (i = home(addr); slots[i].addr; i = (i + 1) & mask)
        ;
    slots[i].size = size;
    slots[i].cnt_fx = cnt_fx;
    slots[i].stack = stack;
    __atomic_store_n(&slots[i].addr, addr, __ATOMIC_RELEASE);
    count++;
    unlock();
    return 0;
}

PE_SIGSAFE void
pe_heap_live_forget(uintptr_t addr)
{
    if (!slots)
        return;
    /* Only a thread that was not already inside us may wait for the lock:
       with the guard set before ours, the holder may be our own frame. */
    if (trylock(pe_tls.guard > 1 ? 0 : 200)) {
        drain_locked();
        remove_locked(addr);
        unlock();
        return;
    }
    for (int i = (int)(addr >> 4) & (PE_HEAP_PENDING - 1), n = 0; n < PE_HEAP_PENDING;
         n++, i = (i + 1) & (PE_HEAP_PENDING - 1)) {
        uintptr_t zero = 0;
        if (__atomic_compare_exchange_n(&pending[i], &zero, addr, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&npending, 1, __ATOMIC_SEQ_CST);
            /* The holder may have let go before it saw us: try once more. */
            if (trylock(0)) {
                drain_locked();
                unlock();
            }
            return;
        }
    }
    __atomic_fetch_add(&pe_heap_lost_frees, 1, __ATOMIC_RELAXED);
}

uint64_t
pe_heap_live_count(void)
{
    return __atomic_load_n(&count, __ATOMIC_RELAXED);
}

uint64_t
pe_heap_live_capacity(void)
{
    return cap_live;
}

int
pe_heap_live_copy(pe_heap_live_t **out, size_t *n)
{
    pe_heap_live_t *v;
    size_t k = 0, want;

    *out = NULL;
    *n = 0;
    if (!slots)
        return 0;
    /* Allocate outside the lock (malloc may be slow); the table cannot grow
       past cap_live. */
    want = cap_live ? cap_live : 1;
    v = malloc(want * sizeof(*v));
    if (!v)
        return -ENOMEM;
    pe_heap_live_lock();
    for (uint64_t i = 0; i <= mask && k < want; i++) {
        if (!slots[i].addr)
            continue;
        v[k].addr = slots[i].addr;
        v[k].size = slots[i].size;
        v[k].weight = (double)slots[i].cnt_fx / PE_HEAP_CNT_ONE;
        v[k].stack = slots[i].stack;
        k++;
    }
    pe_heap_live_unlock();
    *out = v;
    *n = k;
    return 0;
}
