/*
 * u_threads.c: the thread registry's published TLS (preload/threads.c) and
 * the stripes (preload/guard.h).  A walk reaches every published thread and
 * no withdrawn one; a thread that unregisters while a walk may hold its
 * pe_tls does not return (and so cannot free its TLS) before the walk ends.
 * Owned stripes go to one thread each, the rest share, and an owned stripe
 * given back at exit is owned again.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../preload/guard.h"
#include "../../preload/threads.h"
#include "pe_test.h"

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- published TLS and exit during a walk ---------------------------------------- */

static pe_tls_t *worker_tls;
static int worker_ready, walk_holds_worker, seen_worker;
static double walk_end, unregister_end;

static void *
exiting_worker(void *arg)
{
    (void)arg;
    pe_threads_register(NULL, 0);
    worker_tls = &pe_tls;
    pe_threads_publish_tls();
    __atomic_store_n(&worker_ready, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&walk_holds_worker, __ATOMIC_SEQ_CST))
        usleep(1000);
    pe_threads_unregister(); /* must wait for the walk */
    unregister_end = now();
    return NULL;
}

static void
slow_visit(pe_tls_t *t)
{
    if (t != worker_tls)
        return;
    seen_worker++;
    __atomic_store_n(&walk_holds_worker, 1, __ATOMIC_SEQ_CST);
    usleep(200000);        /* the worker tries to leave meanwhile */
    t->heap_countdown = 0; /* its TLS is still there to store to */
    walk_end = now();      /* done with it */
}

static void
count_worker(pe_tls_t *t)
{
    if (t == worker_tls)
        seen_worker++;
}

static void
test_exit_during_walk(void)
{
    pthread_t th;

    CHECK(pthread_create(&th, NULL, exiting_worker, NULL) == 0);
    while (!__atomic_load_n(&worker_ready, __ATOMIC_SEQ_CST))
        usleep(1000);
    pe_threads_each_tls(slow_visit);
    pthread_join(th, NULL);
    CHECK(seen_worker == 1);
    CHECKF(unregister_end >= walk_end,
           "unregister returned %.3f s before the walk was done with it",
           walk_end - unregister_end);
    seen_worker = 0;
    pe_threads_each_tls(count_worker);
    CHECK(seen_worker == 0); /* withdrawn */
}

/* ---- stripes ---------------------------------------------------------------------- */

#define NT (PE_STRIPES_OWNED + 3)
static pthread_barrier_t bar;
static unsigned stripe_of[NT + 1];
static int owned_of[NT + 1];

static void *
stripe_worker(void *arg)
{
    int i = (int)(long)arg;

    pe_tls.may_own_stripe = 1; /* as pe_threads_publish_tls sets it */
    stripe_of[i] = pe_stripe();
    owned_of[i] = pe_stripe_owned();
    pthread_barrier_wait(&bar); /* all alive at once */
    pthread_barrier_wait(&bar);
    pe_stripe_release();
    return NULL;
}

static void
test_stripes(void)
{
    pthread_t th[NT];
    int owned = 0, dup = 0;

    pthread_barrier_init(&bar, NULL, NT + 1);
    for (long i = 0; i < NT; i++)
        CHECK(pthread_create(&th[i], NULL, stripe_worker, (void *)i) == 0);
    pthread_barrier_wait(&bar);
    for (int i = 0; i < NT; i++) {
        owned += owned_of[i];
        CHECK(owned_of[i] ? stripe_of[i] < PE_STRIPES_OWNED
                          : stripe_of[i] >= PE_STRIPES_OWNED && stripe_of[i] < PE_STRIPES);
        for (int j = 0; j < i; j++)
            dup += owned_of[i] && owned_of[j] && stripe_of[i] == stripe_of[j];
    }
    CHECKF(owned == PE_STRIPES_OWNED, "%d threads own a stripe, want %d", owned, PE_STRIPES_OWNED);
    CHECK(dup == 0);
    pthread_barrier_wait(&bar);
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    /* Given back at exit: a new thread owns one again. */
    pthread_barrier_init(&bar, NULL, 2);
    CHECK(pthread_create(&th[0], NULL, stripe_worker, (void *)(long)NT) == 0);
    pthread_barrier_wait(&bar);
    CHECK(owned_of[NT] == 1 && stripe_of[NT] < PE_STRIPES_OWNED);
    pthread_barrier_wait(&bar);
    pthread_join(th[0], NULL);
    pthread_barrier_destroy(&bar);
}

int
main(void)
{
    test_exit_during_walk();
    test_stripes();
    return pe_test_done();
}
