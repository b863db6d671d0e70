/*
 * p_mutex_fight: lock contention with a known truth, for e2e_mutex.sh.
 *
 *   p_mutex_fight SECONDS OUT [LINGER]
 *
 * Phase 1 (SECONDS): two threads fight over one mutex in fight_lock(), each
 * sleeping ~100 us while holding it and ~20 us outside it (sleeping,
 * not spinning: the fight does not depend on free CPUs, and nearly every
 * acquisition waits); each measures its own wait around pthread_mutex_lock.
 * Phase 2 (0.5 s): a writer and a reader share a rwlock (rw_write, rw_read).
 * Phase 3 (0.5 s): a consumer waits on a condition variable in
 * wait_for_item() for items a producer posts every 2 ms.
 * Then OUT gets "fight_ns=<summed wait of phase 1>" and friends (written to a
 * temporary name and renamed, so readers see it whole), and the program
 * sleeps LINGER seconds (default 60) so the profile can be fetched.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER;
static int items, done;
static double seconds;
static volatile uint64_t sink;

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
spin_ns(uint64_t ns)
{
    uint64_t end = now_ns() + ns;

    while (now_ns() < end)
        sink++;
}

/* The one place phase 1 waits; returns how long pthread_mutex_lock took. */
__attribute__((noinline)) static uint64_t
fight_lock(pthread_mutex_t *m)
{
    uint64_t t0 = now_ns(), t1;

    pthread_mutex_lock(m);
    t1 = now_ns();
    return t1 - t0;
}

static void *
fighter(void *arg)
{
    uint64_t *wait = arg, end = now_ns() + (uint64_t)(seconds * 1e9);

    while (now_ns() < end) {
        *wait += fight_lock(&mu);
        usleep(100);
        pthread_mutex_unlock(&mu);
        usleep(20);
    }
    return NULL;
}

__attribute__((noinline)) static void
rw_write(void)
{
    pthread_rwlock_wrlock(&rw);
    spin_ns(200000);
    pthread_rwlock_unlock(&rw);
}

__attribute__((noinline)) static void
rw_read(void)
{
    pthread_rwlock_rdlock(&rw);
    spin_ns(50000);
    pthread_rwlock_unlock(&rw);
}

static void *
rw_thread(void *arg)
{
    uint64_t end = now_ns() + 500000000ull;

    while (now_ns() < end) {
        if (arg)
            rw_write();
        else
            rw_read();
        spin_ns(10000);
    }
    return NULL;
}

/* The one place phase 3 waits. */
__attribute__((noinline)) static int
wait_for_item(void)
{
    int got;

    pthread_mutex_lock(&qmu);
    while (!items && !done)
        pthread_cond_wait(&qcv, &qmu);
    got = items > 0;
    if (got)
        items--;
    pthread_mutex_unlock(&qmu);
    return got;
}

static void *
consumer(void *arg)
{
    while (wait_for_item())
        ;
    return NULL;
}

int
main(int argc, char **argv)
{
    uint64_t wait[2] = {0, 0}, t0;
    pthread_t a, b;
    char tmp[4096];
    FILE *f;
    int i;

    if (argc < 3) {
        fprintf(stderr, "usage: p_mutex_fight SECONDS OUT [LINGER]\n");
        return 2;
    }
    seconds = atof(argv[1]);
    pthread_create(&a, NULL, fighter, &wait[0]);
    pthread_create(&b, NULL, fighter, &wait[1]);
    pthread_join(a, NULL);
    pthread_join(b, NULL);

    pthread_create(&a, NULL, rw_thread, (void *)1);
    pthread_create(&b, NULL, rw_thread, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);

    t0 = now_ns();
    pthread_create(&a, NULL, consumer, NULL);
    for (i = 0; i < 250; i++) {
        usleep(2000);
        pthread_mutex_lock(&qmu);
        items++;
        pthread_cond_signal(&qcv);
        pthread_mutex_unlock(&qmu);
    }
    pthread_mutex_lock(&qmu);
    done = 1;
    pthread_cond_broadcast(&qcv);
    pthread_mutex_unlock(&qmu);
    pthread_join(a, NULL);

    snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
    f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "fight_ns=%llu\ncond_phase_ns=%llu\n", (unsigned long long)(wait[0] + wait[1]),
            (unsigned long long)(now_ns() - t0));
    fclose(f);
    rename(tmp, argv[2]);
    sleep(argc > 3 ? (unsigned)atoi(argv[3]) : 60);
    return 0;
}
