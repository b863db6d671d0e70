/*
 * ring.c: the handler-to-collector sample ring (see ring.h for the protocol).
 * Owns nothing but the mapping; the sampler decides when to drain it.
 */
#include <errno.h>
#include <sys/mman.h>

#include "ring.h"

int
pe_ring_init(pe_ring_t *r, uint32_t nslots)
{
    void *m;

    if (nslots == 0 || (nslots & (nslots - 1)))
        return -EINVAL;
    m = mmap(NULL, (size_t)nslots * sizeof(pe_ring_slot_t), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    r->slots = m;
    r->nslots = nslots;
    r->mask = nslots - 1;
    r->head = r->tail = r->dropped = 0;
    for (uint32_t i = 0; i < nslots; i++)
        r->slots[i].seq = i;
    return 0;
}

PE_SIGSAFE pe_ring_slot_t *
pe_ring_claim(pe_ring_t *r)
{
    uint64_t pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

    for (;;) {
        pe_ring_slot_t *s = &r->slots[pos & r->mask];
        uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        int64_t dif = (int64_t)(seq - pos);
        if (dif == 0) {
            if (__atomic_compare_exchange_n(&r->head, &pos, pos + 1, 1, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                return s;
        } else if (dif < 0) {
            return NULL; /* full: the consumer has not freed this slot yet */
        } else {
            pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
        }
    }
}

PE_SIGSAFE int
pe_ring_publish(pe_ring_t *r, pe_ring_slot_t *s)
{
    uint64_t pos = s->seq; /* still the claimed position */
    __atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
    /* the fill level moves up by at most one per claim, so it passes half
       exactly at one position (a stale tail only makes that come earlier) */
    return pos - __atomic_load_n(&r->tail, __ATOMIC_RELAXED) == r->nslots / 2;
}

PE_SIGSAFE void
pe_ring_drop(pe_ring_t *r, uint32_t weight)
{
    __atomic_add_fetch(&r->dropped, weight, __ATOMIC_RELAXED);
}

pe_ring_slot_t *
pe_ring_peek(pe_ring_t *r)
{
    uint64_t pos = r->tail;
    pe_ring_slot_t *s;

    if (!r->slots)
        return NULL;
    s = &r->slots[pos & r->mask];
    if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos + 1)
        return NULL;
    return s;
}

void
pe_ring_release(pe_ring_t *r, pe_ring_slot_t *s)
{
    uint64_t pos = r->tail;
    __atomic_store_n(&s->seq, pos + r->nslots, __ATOMIC_RELEASE);
    __atomic_store_n(&r->tail, pos + 1, __ATOMIC_RELAXED); /* producers read it (publish) */
}
