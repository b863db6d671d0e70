/*
 * bench_mutex: the uncontended lock/unlock loop, for scripts/bench_mutex.sh.
 *
 *   bench_mutex ITERATIONS [REPEATS [IDLE_THREAD]]
 *
 * One thread locks and unlocks one mutex ITERATIONS times, REPEATS times, and
 * prints the best run's thread CPU nanoseconds per lock+unlock pair (the best run is the
 * least disturbed by whatever else the machine does).  A second line does the
 * same for a rwlock's wrlock+unlock.  With IDLE_THREAD=1 a second thread,
 * blocked for good, exists during the loops: glibc takes a cheaper, non-atomic
 * path for mutexes while a process has a single thread, and the library's own
 * server threads end that, so the interposer's own cost shows only when the
 * program is multi-threaded itself (as every program with contention is).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* preemption on a shared machine does not count */
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static double
mutex_loop(long n)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&mu);
        __asm__ volatile("" ::: "memory");
        pthread_mutex_unlock(&mu);
    }
    return (now() - t0) / (double)n;
}

__attribute__((noinline)) static double
rwlock_loop(long n)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        pthread_rwlock_wrlock(&rw);
        __asm__ volatile("" ::: "memory");
        pthread_rwlock_unlock(&rw);
    }
    return (now() - t0) / (double)n;
}

static void *
idle(void *fd)
{
    char c;

    return read((int)(intptr_t)fd, &c, 1) < 0 ? NULL : NULL; /* blocks until exit */
}

int
main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    double best_m = 1e30, best_r = 1e30, v;
    int fds[2];
    pthread_t t;

    if (argc > 3 && atoi(argv[3]) && pipe(fds) == 0)
        pthread_create(&t, NULL, idle, (void *)(intptr_t)fds[0]);

    mutex_loop(n / 10); /* warm up */
    for (int r = 0; r < reps; r++) {
        if ((v = mutex_loop(n)) < best_m)
            best_m = v;
        if ((v = rwlock_loop(n)) < best_r)
            best_r = v;
    }
    printf("mutex %.3f\nrwlock %.3f\n", best_m, best_r);
    return 0;
}
