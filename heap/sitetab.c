/*
 * sitetab.c: the one stack table of heap/: interned call stacks, each with the
 * running totals of the samples taken there.  Both recorders (heap sampling,
 * /allocs_profile) name stacks by the ids handed out here.
 *
 *   tab        the stacks themselves: preload/stacktab.h (lock-free, ids
 *              valid for the life of the process, PE_HEAP_STACKS of them, or
 *              fewer under an address-space limit: pe_heap_fit)
 *   totals[]   per stripe (preload/guard.h) and stack, the running totals on one
 *              cache line: a thread adds to its own stripe's line only, so
 *              two threads sampling the same stack do not pass a line back
 *              and forth (and a stripe's owner adds without a lock prefix);
 *              readers sum the stripes
 *
 * All the arrays are mapped with MAP_NORESERVE up front: pages never touched
 * cost nothing.
 *
 * Signal-safe: intern and account are; init and readers are not needed there.
 */
#include <errno.h>
#include <string.h>

#include "../preload/stacktab.h"
#include "heap_int.h"

#define PE_HEAP_STACKS_MAX (1u << 15) /* distinct stacks kept */
#define PE_HEAP_FRAMES_PER 64         /* pcs per stack on average: 16 MiB in all */

/* One stripe's totals for one stack: estimates (fixed point) and raw sampled
   values; relaxed atomics. */
typedef struct stack_totals_s {
    uint64_t acnt, abytes, fcnt, fbytes;
    uint64_t raw_an, raw_ab, raw_fn, raw_fb;
} __attribute__((aligned(64))) stack_totals_t;

static pe_stacktab_t tab;
static int tab_ready;          /* tab is set up (writer: init, before sharing) */
static stack_totals_t *totals; /* [stripe * nstacks + id] */
static uint32_t nstacks;       /* set once by init */
uint64_t pe_heap_stacks_full;

int
pe_heap_stacks_init(void)
{
    uint32_t *buckets;
    pe_stacktab_ent_t *ents;
    uintptr_t *frames;

    if (tab_ready)
        return 0;
    /* 1.5 KiB of address space a stack: 51 MiB at most, a 512th of a limit */
    nstacks = pe_heap_fit(PE_HEAP_STACKS_MAX,
                          2 * sizeof(*buckets) + sizeof(*ents) +
                              PE_HEAP_FRAMES_PER * sizeof(*frames) + PE_STRIPES * sizeof(*totals),
                          512);
    buckets = pe_heap_map_hashed(2 * (size_t)nstacks * sizeof(*buckets));
    ents = pe_heap_map(nstacks * sizeof(*ents));
    frames = pe_heap_map((size_t)nstacks * PE_HEAP_FRAMES_PER * sizeof(*frames));
    totals = pe_heap_map((size_t)PE_STRIPES * nstacks * sizeof(*totals));
    if (!buckets || !ents || !frames || !totals)
        return -ENOMEM;
    /* id 0: the "[unknown]" pseudo-stack, no frames, never in a bucket */
    pe_stacktab_setup(&tab, buckets, ents, frames, nstacks, nstacks * PE_HEAP_FRAMES_PER, 1);
    __atomic_store_n(&tab_ready, 1, __ATOMIC_RELEASE);
    return 0;
}

PE_SIGSAFE uint32_t
pe_heap_stacks_intern(const uintptr_t *pcs, int n)
{
    uint32_t id;

    if (n <= 0 || !__atomic_load_n(&tab_ready, __ATOMIC_ACQUIRE))
        return PE_HEAP_NO_STACK;
    if (n > PE_HEAP_MAX_FRAMES)
        n = PE_HEAP_MAX_FRAMES;
    id = pe_stacktab_intern(&tab, 0, pcs, n);
    if (id == PE_STACKTAB_FULL) {
        __atomic_fetch_add(&pe_heap_stacks_full, 1, __ATOMIC_RELAXED);
        return PE_HEAP_NO_STACK; /* full: counted under "[unknown]" */
    }
    return id;
}

PE_SIGSAFE void
pe_heap_stacks_account(uint32_t id, int freed, uint64_t cnt_fx, uint64_t size)
{
    stack_totals_t *e;
    uint64_t bytes = pe_heap_bytes_fx(cnt_fx, size);

    if (!totals || id >= nstacks)
        return;
    e = &totals[(size_t)pe_stripe() * nstacks + id];
    if (!freed) {
        pe_stripe_add(&e->acnt, cnt_fx);
        pe_stripe_add(&e->abytes, bytes);
        pe_stripe_add(&e->raw_an, 1);
        pe_stripe_add(&e->raw_ab, size);
    } else {
        pe_stripe_add(&e->fcnt, cnt_fx);
        pe_stripe_add(&e->fbytes, bytes);
        pe_stripe_add(&e->raw_fn, 1);
        pe_stripe_add(&e->raw_fb, size);
    }
}

uint32_t
pe_heap_stacks_count(void)
{
    return __atomic_load_n(&tab_ready, __ATOMIC_ACQUIRE) ? pe_stacktab_count(&tab) : 0;
}

static uint64_t
sub0(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

int
pe_heap_stacks_read(uint32_t id, pe_heap_rec_t *rec)
{
    uint64_t fc = 0, fb = 0, fn = 0, fr = 0, ac = 0, ab = 0, an = 0, ar = 0;

    if (!__atomic_load_n(&tab_ready, __ATOMIC_ACQUIRE) || !pe_stacktab_ent(&tab, id))
        return 0;
    /* Read frees before allocs: a block freed after we read its alloc can
       then never make inuse negative. */
    for (int s = 0; s < PE_STRIPES; s++) {
        stack_totals_t *e = &totals[(size_t)s * nstacks + id];
        fc += __atomic_load_n(&e->fcnt, __ATOMIC_ACQUIRE);
        fb += __atomic_load_n(&e->fbytes, __ATOMIC_ACQUIRE);
        fn += __atomic_load_n(&e->raw_fn, __ATOMIC_ACQUIRE);
        fr += __atomic_load_n(&e->raw_fb, __ATOMIC_ACQUIRE);
    }
    for (int s = 0; s < PE_STRIPES; s++) {
        stack_totals_t *e = &totals[(size_t)s * nstacks + id];
        ac += __atomic_load_n(&e->acnt, __ATOMIC_ACQUIRE);
        ab += __atomic_load_n(&e->abytes, __ATOMIC_ACQUIRE);
        an += __atomic_load_n(&e->raw_an, __ATOMIC_ACQUIRE);
        ar += __atomic_load_n(&e->raw_ab, __ATOMIC_ACQUIRE);
    }
    rec->stack = id;
    rec->alloc_cnt_fx = ac;
    rec->alloc_bytes_fx = ab;
    rec->raw_alloc_n = an;
    rec->raw_alloc_b = ar;
    rec->inuse_cnt_fx = sub0(ac, fc);
    rec->inuse_bytes_fx = sub0(ab, fb);
    rec->raw_inuse_n = sub0(an, fn);
    rec->raw_inuse_b = sub0(ar, fr);
    return 1;
}

int
pe_heap_stack(uint32_t id, uintptr_t *pcs, int max)
{
    if (!__atomic_load_n(&tab_ready, __ATOMIC_ACQUIRE))
        return 0;
    return pe_stacktab_frames(&tab, id, pcs, max);
}
