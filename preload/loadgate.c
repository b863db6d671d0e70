/*
 * loadgate.c: the gate our dl_iterate_phdr walks pass, closed across a fork
 * (loadgate.h says why).  Two counters and a flag; a walk and a closing
 * prepare handler meet Dekker-style: each writes its own word, then reads
 * the other's (sequentially consistent), so one of them always sees the other.
 */
#include <time.h>

#include "clock.h"
#include "loadgate.h"
#include "real.h"

static int inflight; /* our walks past the gate, or looking at it */
static int inside;   /* our walks inside the real dl_iterate_phdr now */
static int closed;   /* a fork is being prepared */
static int forsaken; /* this fork child's loader lock was held at the fork */

static void
pause_100us(void)
{
    struct timespec ts = {0, 100 * 1000L};

    nanosleep(&ts, NULL);
}

int
pe_loadgate_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    int64_t until = 0;
    int rc;

    if (__atomic_load_n(&forsaken, __ATOMIC_RELAXED))
        return 0;
    for (;;) {
        __atomic_add_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&closed, __ATOMIC_SEQ_CST))
            break;
        __atomic_sub_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
        /* A fork is under way on another thread: after it, or (never
           seen) after as long as a prepare may wait. */
        if (!until)
            until = pe_clock_ns(CLOCK_MONOTONIC) + 2 * PE_LOADGATE_WAIT_MS * 1000000LL;
        if (pe_clock_ns(CLOCK_MONOTONIC) > until) {
            __atomic_add_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
            break;
        }
        pause_100us();
    }
    pe_real_init();
    __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
    rc = pe_real.dl_iterate_phdr(cb, data);
    __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
    __atomic_sub_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
    return rc;
}

void
pe_loadgate_close(void)
{
    int64_t until;

    __atomic_store_n(&closed, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&inflight, __ATOMIC_SEQ_CST))
        return;
    /* A walk takes microseconds; our callbacks take no lock the forking
       thread could hold.  Bounded all the same. */
    until = pe_clock_ns(CLOCK_MONOTONIC) + PE_LOADGATE_WAIT_MS * 1000000LL;
    while (__atomic_load_n(&inflight, __ATOMIC_SEQ_CST) && pe_clock_ns(CLOCK_MONOTONIC) < until)
        pause_100us();
}

void
pe_loadgate_open(int child)
{
    if (child) {
        /* A walk still inside at the fork (the wait ran out) belongs to a
           thread the child lacks, and so does the lock it took. */
        if (__atomic_load_n(&inside, __ATOMIC_SEQ_CST))
            __atomic_store_n(&forsaken, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&inside, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&inflight, 0, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&closed, 0, __ATOMIC_SEQ_CST);
}
