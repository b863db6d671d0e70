/*
 * stacks.c: the one stack table of heap/: interned call stacks, each with the
 * running totals of the samples taken there.  Both recorders (heap sampling,
 * /allocs_profile) name stacks by the ids handed out here.
 *
 *   buckets[]  uint32 id+1 per slot, open addressing on the stack's hash,
 *              at most half full (PE_HEAP_STACKS entries, twice the slots)
 *   ents[]     fixed records, handed out by fetch-add, published by the CAS
 *              that puts their id in a bucket
 *   frames[]   one arena of pcs, handed out by fetch-add
 *   totals[]   per stripe (guard.h) and stack, the running totals on one
 *              cache line: a thread adds to its own stripe's line only, so
 *              two threads sampling the same stack do not pass a line back
 *              and forth (and a stripe's owner adds without a lock prefix);
 *              readers sum the stripes
 *
 * Insertion is lock-free: two threads racing to add the same new stack both
 * fill a record, one CAS wins and the loser's record stays unpublished (a
 * wasted slot, counted against the bound).  Nothing is ever removed, so ids
 * stay valid for the life of the process.  All the arrays are mapped with
 * MAP_NORESERVE up front: pages never touched cost nothing.
 *
 * Signal-safe: intern and account are; init and readers are not needed there.
 */
#include <errno.h>
#include <string.h>

#include "heap_int.h"

#define PE_HEAP_STACKS (1u << 15) /* distinct stacks kept */
#define PE_HEAP_BUCKETS (PE_HEAP_STACKS * 2)
#define PE_HEAP_FRAMES_CAP (1u << 21) /* pcs in all: 16 MiB of address space */

typedef struct stack_ent_s {
    uint64_t hash;
    uint32_t off;       /* first frame in frames[] */
    uint16_t n;         /* frames */
    uint16_t published; /* 1 once its id is in a bucket */
} stack_ent_t;

/* One stripe's totals for one stack: estimates (fixed point) and raw sampled
   values; relaxed atomics. */
typedef struct stack_totals_s {
    uint64_t acnt, abytes, fcnt, fbytes;
    uint64_t raw_an, raw_ab, raw_fn, raw_fb;
} __attribute__((aligned(64))) stack_totals_t;

static uint32_t *buckets;
static stack_ent_t *ents;
static uintptr_t *frames;
static stack_totals_t *totals; /* [stripe * PE_HEAP_STACKS + id] */
static uint32_t next_ent, next_frame;
uint64_t pe_heap_stacks_full;

int
pe_heap_stacks_init(void)
{
    if (ents)
        return 0;
    buckets = pe_heap_map_hashed(PE_HEAP_BUCKETS * sizeof(*buckets));
    ents = pe_heap_map(PE_HEAP_STACKS * sizeof(*ents));
    frames = pe_heap_map(PE_HEAP_FRAMES_CAP * sizeof(*frames));
    totals = pe_heap_map((size_t)PE_STRIPES * PE_HEAP_STACKS * sizeof(*totals));
    if (!buckets || !ents || !frames || !totals)
        return -ENOMEM;
    /* id 0: the "[unknown]" pseudo-stack, no frames, never in a bucket */
    ents[0].published = 1;
    next_ent = 1;
    return 0;
}

static uint64_t
hash_pcs(const uintptr_t *pcs, int n)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ (uint64_t)n;

    for (int i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

static int
same(const stack_ent_t *e, uint64_t h, const uintptr_t *pcs, int n)
{
    return e->hash == h && e->n == n && !memcmp(frames + e->off, pcs, n * sizeof(*pcs));
}

PE_SIGSAFE uint32_t
pe_heap_stacks_intern(const uintptr_t *pcs, int n)
{
    uint64_t h;
    uint32_t mask = PE_HEAP_BUCKETS - 1, i, mine = 0, off;

    if (n <= 0 || !ents)
        return PE_HEAP_NO_STACK;
    if (n > PE_HEAP_MAX_FRAMES)
        n = PE_HEAP_MAX_FRAMES;
    h = hash_pcs(pcs, n);
    for (i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        uint32_t b = __atomic_load_n(&buckets[i], __ATOMIC_ACQUIRE);

        if (b) {
            if (same(&ents[b - 1], h, pcs, n))
                return b - 1;
            continue;
        }
        /* Empty: this stack is new.  Fill a record once, then try to claim. */
        if (!mine) {
            mine = __atomic_fetch_add(&next_ent, 1, __ATOMIC_RELAXED);
            off = __atomic_fetch_add(&next_frame, (uint32_t)n, __ATOMIC_RELAXED);
            if (mine >= PE_HEAP_STACKS || off + (uint64_t)n > PE_HEAP_FRAMES_CAP) {
                __atomic_fetch_add(&pe_heap_stacks_full, 1, __ATOMIC_RELAXED);
                return PE_HEAP_NO_STACK; /* full: counted under "[unknown]" */
            }
            memcpy(frames + off, pcs, n * sizeof(*pcs));
            ents[mine].hash = h;
            ents[mine].off = off;
            ents[mine].n = (uint16_t)n;
        }
        if (__atomic_compare_exchange_n(&buckets[i], &b, mine + 1, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&ents[mine].published, 1, __ATOMIC_RELEASE);
            return mine;
        }
        /* Lost the slot: the winner may be this very stack. */
        if (same(&ents[b - 1], h, pcs, n))
            return b - 1; /* our record stays unpublished */
    }
}

PE_SIGSAFE void
pe_heap_stacks_account(uint32_t id, int freed, uint64_t cnt_fx, uint64_t size)
{
    stack_totals_t *e;
    uint64_t bytes = pe_heap_bytes_fx(cnt_fx, size);

    if (!totals || id >= PE_HEAP_STACKS)
        return;
    e = &totals[(size_t)pe_stripe() * PE_HEAP_STACKS + id];
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
    uint32_t n = __atomic_load_n(&next_ent, __ATOMIC_ACQUIRE);

    return n > PE_HEAP_STACKS ? PE_HEAP_STACKS : n;
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

    if (!ents || id >= pe_heap_stacks_count())
        return 0;
    if (!__atomic_load_n(&ents[id].published, __ATOMIC_ACQUIRE))
        return 0;
    /* Read frees before allocs: a block freed after we read its alloc can
       then never make inuse negative. */
    for (int s = 0; s < PE_STRIPES; s++) {
        stack_totals_t *e = &totals[(size_t)s * PE_HEAP_STACKS + id];
        fc += __atomic_load_n(&e->fcnt, __ATOMIC_ACQUIRE);
        fb += __atomic_load_n(&e->fbytes, __ATOMIC_ACQUIRE);
        fn += __atomic_load_n(&e->raw_fn, __ATOMIC_ACQUIRE);
        fr += __atomic_load_n(&e->raw_fb, __ATOMIC_ACQUIRE);
    }
    for (int s = 0; s < PE_STRIPES; s++) {
        stack_totals_t *e = &totals[(size_t)s * PE_HEAP_STACKS + id];
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
    stack_ent_t *e;
    int n;

    if (!ents || id >= pe_heap_stacks_count())
        return 0;
    e = &ents[id];
    if (!__atomic_load_n(&e->published, __ATOMIC_ACQUIRE))
        return 0;
    n = e->n < max ? e->n : max;
    memcpy(pcs, frames + e->off, n * sizeof(*pcs));
    return n;
}
