/*
 * u_sampler_ring.c: the handler-to-collector ring: order, full-ring drops,
 * the half-full signal (once per filling), and no loss or duplication with several producers racing
 * one consumer.
 */
#include <pthread.h>
#include <string.h>

#include "../../sampler/ring.h"
#include "pe_test.h"

static pe_ring_t ring;
#define PRODUCERS 4
#define PER 200000

static void *
producer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < PER; i++) {
        pe_ring_slot_t *s;
        while (!(s = pe_ring_claim(&ring)))
            ;
        s->tid = (pid_t)id;
        s->nframes = 1;
        s->pcs[0] = (uintptr_t)i;
        pe_ring_publish(&ring, s);
    }
    return NULL;
}

int
main(void)
{
    pe_ring_slot_t *s;
    pthread_t th[PRODUCERS];
    long next[PRODUCERS] = {0};
    long got = 0, bad = 0;
    int i;

    CHECK(pe_ring_init(&ring, 3) == -22);
    CHECK(pe_ring_init(&ring, 8) == 0);
    CHECK(pe_ring_peek(&ring) == NULL);
    for (i = 0; i < 8; i++) {
        s = pe_ring_claim(&ring);
        CHECK(s != NULL);
        if (!s)
            break;
        s->tid = i;
        /* the consumer's wake-up: exactly the publish that fills half the ring */
        CHECKF(pe_ring_publish(&ring, s) == (i == 4), "publish %d says half full wrongly", i);
    }
    CHECK(pe_ring_claim(&ring) == NULL); /* full */
    pe_ring_drop(&ring, 3);
    CHECK(ring.dropped == 3);
    for (i = 0; i < 8; i++) {
        s = pe_ring_peek(&ring);
        CHECK(s && s->tid == i);
        if (s)
            pe_ring_release(&ring, s);
    }
    CHECK(pe_ring_peek(&ring) == NULL);
    /* refilled after a drain: half full is said again, once */
    for (i = 0, got = 0; i < 8; i++) {
        s = pe_ring_claim(&ring);
        if (s)
            got += pe_ring_publish(&ring, s);
    }
    CHECKF(got == 1, "half full said %ld times on the second filling", got);
    while ((s = pe_ring_peek(&ring)))
        pe_ring_release(&ring, s);
    got = 0;

    /* racing producers: every item arrives once, in order per producer */
    CHECK(pe_ring_init(&ring, 64) == 0);
    for (long p = 0; p < PRODUCERS; p++)
        pthread_create(&th[p], NULL, producer, (void *)p);
    while (got < (long)PRODUCERS * PER) {
        if (!(s = pe_ring_peek(&ring)))
            continue;
        if (s->tid < 0 || s->tid >= PRODUCERS || (long)s->pcs[0] != next[s->tid])
            bad++;
        else
            next[s->tid]++;
        got++;
        pe_ring_release(&ring, s);
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(th[p], NULL);
    CHECKF(bad == 0, "%ld out-of-order or foreign items", bad);
    CHECK(pe_ring_peek(&ring) == NULL);
    return pe_test_done();
}
