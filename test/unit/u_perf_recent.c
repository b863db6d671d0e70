/*
 * u_perf_recent: the perf engine's last-stack table (sampler/engine_perf.c,
 * pe_perf_recent) is sized to the threads.  A wall-only engine starts with
 * the main thread alone; 400 threads are made (more than the 256 slots it
 * used to have for good), each burns a few periods of CPU and waits; the
 * collector's scans (here every 64 threads) count them and the table grows,
 * so every thread's last stack is still there at the end, none taken by
 * another's.  Skipped where
 * perf events are refused.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pe_test.h"
#include "sampler/engine_perf.h"
#include "sampler/ring.h"
#include "stack/unwind.h"

#define NTHREADS 400

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go_home, ready;
static pid_t tids[NTHREADS];
static pe_ring_t ring;
static volatile unsigned long sink;

static void
burn_ms(double ms)
{
    struct timespec a, b;
    unsigned long x = sink;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005ul + 1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
    sink = x;
}

static void *
worker(void *arg)
{
    tids[(intptr_t)arg] = (pid_t)syscall(SYS_gettid);
    burn_ms(5); /* five periods of 1 ms: a sample at least, on one CPU or another */
    pthread_mutex_lock(&mu);
    ready++;
    while (!go_home)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void
drain(void)
{
    pe_perf_drain(&ring);
}

int
main(void)
{
    static pthread_t th[NTHREADS];
    uintptr_t pcs[PE_MAX_FRAMES];
    const char *why = NULL;
    int have = 0, taken = 0, made = 0;
    pe_perf_stats_t st;

    CHECK(pe_unwind_init() == 0);
    CHECK(pe_ring_init(&ring, 256) == 0);
    if (pe_perf_start_wall(1000000, &why) < 0) {
        printf("skip: %s\n", why ? why : "perf events refused");
        return 77;
    }
    for (int i = 0; i < NTHREADS; i++) {
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0)
            break;
        made++;
        if (i % 8 == 7) /* the rings hold ~60 samples a CPU: read them as we go */
            drain();
        if (i % 64 == 63) /* the collector's scan, once a second, counts the threads */
            (void)pe_perf_scan(drain);
    }
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&mu);
        int r = ready;
        pthread_mutex_unlock(&mu);
        drain();
        if (r == made)
            break;
        usleep(5000);
    }
    /* a scan right after lost records answers -1 (a lost fork record may hide
       an inherited thread); the next one counts */
    int counted = -1;
    for (int k = 0; k < 10 && (counted = pe_perf_scan(drain)) < made; k++)
        drain();
    CHECKF(counted >= made, "the scan counted %d of %d threads", counted, made);
    drain();
    pe_perf_stats(&st);
    for (int i = 0; i < made; i++) {
        int n = pe_perf_recent(tids[i], 0, pcs, PE_MAX_FRAMES);
        have += n > 0;
        taken += n < 0;
    }
    printf("  %d threads: %d last stacks kept, %d taken by another's; table %d slots, %llu "
           "lost\n",
           made, have, taken, st.recent_slots, (unsigned long long)st.lost);
    CHECKF(made == NTHREADS, "made %d threads", made);
    CHECKF(st.recent_slots >= 2 * NTHREADS, "the table grew to the threads: %d slots",
           st.recent_slots);
    /* (a sample the kernel lost, a full ring, leaves a thread without one) */
    CHECKF(taken == 0 && have >= made - (int)st.lost - 5,
           "%d of %d kept, %d taken by another thread's", have, made, taken);
    pthread_mutex_lock(&mu);
    go_home = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < made; i++)
        pthread_join(th[i], NULL);
    pe_perf_stop();
    return pe_test_done();
}
