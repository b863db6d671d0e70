/*
 * stacktab.c: the lock-free stack interner (see stacktab.h for the layout
 * and the contract).  The users own the memory and the totals; this file
 * owns hashing, probing and the publish protocol.
 */
#include <string.h>

#include "stacktab.h"

void
pe_stacktab_setup(pe_stacktab_t *t, uint32_t *buckets, pe_stacktab_ent_t *ents, uintptr_t *frames,
                  uint32_t cap, uint32_t frames_cap, uint32_t reserved)
{
    t->buckets = buckets;
    t->ents = ents;
    t->frames = frames;
    t->cap = cap;
    t->frames_cap = frames_cap;
    t->next_frame = 0;
    for (uint32_t id = 0; id < reserved && id < cap; id++)
        ents[id].published = 1;
    t->next_ent = reserved;
}

/* FNV-1a's basis and prime over whole words, with a shift to fold the high
   bits down (pcs differ mostly in their low bits); never 0. */
PE_SIGSAFE static uint64_t
hash_stack(unsigned tag, const uintptr_t *pcs, int n)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ ((uint64_t)n << 8 | tag);

    for (int i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

PE_SIGSAFE static int
same(const pe_stacktab_t *t, const pe_stacktab_ent_t *e, uint64_t h, unsigned tag,
     const uintptr_t *pcs, int n)
{
    return e->hash == h && e->tag == tag && e->n == n &&
           !memcmp(t->frames + e->off, pcs, (size_t)n * sizeof(*pcs));
}

/* Claim and fill a record for a new stack; PE_STACKTAB_FULL if none is left.
   Each counter is looked at before it is taken, so a full table's never wraps. */
PE_SIGSAFE static uint32_t
fill(pe_stacktab_t *t, uint64_t h, unsigned tag, const uintptr_t *pcs, int n)
{
    uint32_t id, off;

    if (__atomic_load_n(&t->next_ent, __ATOMIC_RELAXED) >= t->cap)
        return PE_STACKTAB_FULL;
    id = __atomic_fetch_add(&t->next_ent, 1, __ATOMIC_RELAXED);
    if (id >= t->cap)
        return PE_STACKTAB_FULL;
    if (__atomic_load_n(&t->next_frame, __ATOMIC_RELAXED) + (uint64_t)n > t->frames_cap)
        return PE_STACKTAB_FULL; /* the id stays unpublished */
    off = __atomic_fetch_add(&t->next_frame, (uint32_t)n, __ATOMIC_RELAXED);
    if (off + (uint64_t)n > t->frames_cap)
        return PE_STACKTAB_FULL;
    memcpy(t->frames + off, pcs, (size_t)n * sizeof(*pcs));
    t->ents[id].hash = h;
    t->ents[id].off = off;
    t->ents[id].n = (uint16_t)n;
    t->ents[id].tag = (uint8_t)tag;
    return id;
}

PE_SIGSAFE uint32_t
pe_stacktab_intern(pe_stacktab_t *t, unsigned tag, const uintptr_t *pcs, int n)
{
    uint64_t h = hash_stack(tag, pcs, n);
    uint32_t mask = 2 * t->cap - 1, i, mine = PE_STACKTAB_FULL;

    for (i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        uint32_t b = __atomic_load_n(&t->buckets[i], __ATOMIC_ACQUIRE);

        if (b) {
            if (same(t, &t->ents[b - 1], h, tag, pcs, n))
                return b - 1;
            continue;
        }
        /* Empty slot: the stack is new here.  Fill a record once, then claim. */
        if (mine == PE_STACKTAB_FULL && (mine = fill(t, h, tag, pcs, n)) == PE_STACKTAB_FULL)
            return PE_STACKTAB_FULL;
        if (__atomic_compare_exchange_n(&t->buckets[i], &b, mine + 1, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&t->ents[mine].published, 1, __ATOMIC_RELEASE);
            return mine;
        }
        /* Lost the slot: the winner may be this very stack (ours stays unpublished). */
        if (same(t, &t->ents[b - 1], h, tag, pcs, n))
            return b - 1;
    }
}

PE_SIGSAFE uint32_t
pe_stacktab_count(const pe_stacktab_t *t)
{
    uint32_t n = __atomic_load_n(&t->next_ent, __ATOMIC_ACQUIRE);

    return n > t->cap ? t->cap : n;
}

PE_SIGSAFE const pe_stacktab_ent_t *
pe_stacktab_ent(const pe_stacktab_t *t, uint32_t id)
{
    if (id >= pe_stacktab_count(t) || !__atomic_load_n(&t->ents[id].published, __ATOMIC_ACQUIRE))
        return NULL;
    return &t->ents[id];
}

PE_SIGSAFE int
pe_stacktab_frames(const pe_stacktab_t *t, uint32_t id, uintptr_t *pcs, int max)
{
    const pe_stacktab_ent_t *e = pe_stacktab_ent(t, id);
    int n;

    if (!e)
        return 0;
    n = e->n < max ? e->n : max;
    memcpy(pcs, t->frames + e->off, (size_t)n * sizeof(*pcs));
    return n;
}
