/*
 * allocs.c: the /allocs_profile recording (ProfileEndpoints.jl's
 * Profile.Allocs semantics): while it runs, each malloc-family call is
 * recorded with probability p, into a bounded table keyed by (stack, size),
 * so every sample can carry its requested size as the label `bytes`.  The
 * reader scales counts and bytes by 1/p.  One recording at a time.
 *
 *   state   0 idle -> 1 timed | 2 open-ended -> 3 reading -> 0
 *   table   open addressing, key = (stack+1) << 44 | min(size, 2^44-1),
 *           claimed by CAS, counts by fetch-add; at most half full, the rest
 *           summed in over_*; cleared with MADV_DONTNEED (pages go back).
 *
 * The hook side checks pe_heap_allocs_on around an in-flight counter; stop
 * clears the flag and waits (bounded) for in-flight recorders to leave
 * before it reads the table.  Start parks every published thread's
 * countdown at 0 (heap.h), so that their next call reaches the slow path
 * and sees the flag; a thread that is not published (the registry's
 * overflow, threads that predate us) sees it within PE_HEAP_CHUNK bytes.
 *
 * Signal-safe: pe_heap_allocs_record is; start/stop are not.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "../preload/threads.h"
#include "heap_int.h"

#define PE_HEAP_ASLOTS aslots /* 1 << 16, fewer under an address-space limit (set once) */
static uint32_t aslots;
#define SIZE_BITS 44

typedef struct arec_slot_s {
    uint64_t key; /* 0 = empty */
    uint64_t count;
} arec_slot_t;

int pe_heap_allocs_inflight;
uint64_t pe_heap_allocs_threshold;
static arec_slot_t *table;
static uint32_t used;
static uint64_t over_n, over_b;
static int state;
static double prob;

int
pe_heap_allocs_init(void)
{
    if (table)
        return 0;
    if (!aslots)
        aslots = pe_heap_fit(1u << 16, sizeof(*table), 1024);
    table = pe_heap_map(PE_HEAP_ASLOTS * sizeof(*table));
    return table ? 0 : -ENOMEM;
}

PE_SIGSAFE void
pe_heap_allocs_record(uint32_t stack, uint64_t size)
{
    uint64_t key, h, i, mask = PE_HEAP_ASLOTS - 1;

    if (!table)
        return;
    if (size >= (1ull << SIZE_BITS))
        size = (1ull << SIZE_BITS) - 1;
    key = ((uint64_t)stack + 1) << SIZE_BITS | size;
    h = key * 0x9E3779B97F4A7C15ull;
    for (i = (h >> 40) & mask;; i = (i + 1) & mask) {
        uint64_t k = __atomic_load_n(&table[i].key, __ATOMIC_ACQUIRE);

        if (k == key)
            break;
        if (k)
            continue;
        if (__atomic_fetch_add(&used, 1, __ATOMIC_RELAXED) >= PE_HEAP_ASLOTS / 2) {
            __atomic_fetch_sub(&used, 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&over_n, 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&over_b, size, __ATOMIC_RELAXED);
            return;
        }
        if (__atomic_compare_exchange_n(&table[i].key, &k, key, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            break;
        __atomic_fetch_sub(&used, 1, __ATOMIC_RELAXED);
        if (k == key)
            break;
    }
    __atomic_fetch_add(&table[i].count, 1, __ATOMIC_RELAXED);
}

static void
clear_table(void)
{
    /* Anonymous private mapping: DONTNEED gives back zero pages. */
    if (madvise(table, PE_HEAP_ASLOTS * sizeof(*table), MADV_DONTNEED) != 0)
        for (uint32_t i = 0; i < PE_HEAP_ASLOTS; i++)
            table[i].key = table[i].count = 0;
    used = 0;
    over_n = over_b = 0;
}

static void
park(pe_tls_t *t)
{
    __atomic_store_n(&t->heap_countdown, 0, __ATOMIC_RELAXED);
}

/* Send every thread to the slow path on its next call.  A thread that was
   between reading and writing its countdown (a few instructions of malloc,
   or its slow path) can write over our 0: a second pass a little later
   catches those. */
static void
park_all(void)
{
    struct timespec ts = {0, 200000};

    pe_threads_each_tls(park);
    nanosleep(&ts, NULL);
    pe_threads_each_tls(park);
}

int
pe_heap_allocs_start(double p, int open_ended)
{
    int idle = 0;

    if (!(p > 0.0 && p <= 1.0))
        return -EINVAL;
    if (!table && pe_heap_allocs_init() < 0)
        return -ENOMEM;
    if (!__atomic_compare_exchange_n(&state, &idle, open_ended ? 2 : 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return -EBUSY;
    clear_table();
    prob = p;
    /* u64 uniform <= threshold with probability p (p = 1: always). */
    pe_heap_allocs_threshold = p >= 1.0 ? UINT64_MAX : (uint64_t)(p * 18446744073709551616.0);
    __atomic_store_n(&pe_heap_allocs_on, 1, __ATOMIC_SEQ_CST);
    park_all();
    return 0;
}

int
pe_heap_allocs_state(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);

    return s == 1 || s == 2 ? s : 0;
}

static void
wait_inflight(void)
{
    /* Recorders are a few hundred ns long; give up after ~100 ms (a thread
       stopped inside one, e.g. by a debugger) rather than hang the request:
       at worst one count lands after we read it. */
    struct timespec ts = {0, 100000};

    for (int i = 0; i < 1000 && __atomic_load_n(&pe_heap_allocs_inflight, __ATOMIC_SEQ_CST); i++)
        nanosleep(&ts, NULL);
}

int
pe_heap_allocs_stop(int open_ended, pe_heap_arec_t **out, int *n, double *p, uint64_t *over_count,
                    uint64_t *over_bytes)
{
    int want = open_ended ? 2 : 1, k = 0, err = 0;
    pe_heap_arec_t *v;
    uint32_t nused;

    *out = NULL;
    *n = 0;
    if (!__atomic_compare_exchange_n(&state, &want, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return -ENOENT;
    /* Threads see the flag on their next call and go back to sampling. */
    __atomic_store_n(&pe_heap_allocs_on, 0, __ATOMIC_SEQ_CST);
    wait_inflight();
    nused = __atomic_load_n(&used, __ATOMIC_ACQUIRE);
    *p = prob;
    *over_count = over_n;
    *over_bytes = over_b;
    v = malloc((nused ? nused : 1) * sizeof(*v));
    if (!v) {
        err = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < PE_HEAP_ASLOTS && k < (int)nused; i++) {
        uint64_t key = table[i].key;
        if (!key || !table[i].count)
            continue;
        v[k].stack = (uint32_t)((key >> SIZE_BITS) - 1);
        v[k].size = key & ((1ull << SIZE_BITS) - 1);
        v[k].count = table[i].count;
        k++;
    }
    *out = v;
    *n = k;
out:
    clear_table();
    __atomic_store_n(&state, 0, __ATOMIC_RELEASE);
    return err;
}

void
pe_heap_allocs_atfork_child(void)
{
    /* Nobody can read a recording in a dormant child; stop paying for it. */
    __atomic_store_n(&pe_heap_allocs_on, 0, __ATOMIC_SEQ_CST);
    pe_heap_allocs_inflight = 0;
    if (state != 0 && table)
        clear_table();
    state = 0;
}
