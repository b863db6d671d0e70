/*
 * p_cpu_newthreads: for argv[1] seconds, starts threads two at a time, each
 * spending ~5 ms of CPU in malloc/free from its very first instruction, so
 * that a thread's first CPU sample usually lands inside malloc.  Prints
 * "threads=N" and exits 0.  Under a 1000 Hz profile this catches unwinder
 * state that a handler would allocate on a thread's first use.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
churn(void *arg)
{
    struct timespec t0, t;
    void *p[64] = {0};
    long i = 0;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        for (int k = 0; k < 256; k++, i++) {
            free(p[i % 64]);
            /* above the tcache limit: every call takes the arena lock */
            p[i % 64] = malloc((size_t)(2048 + (i * 7919) % 30000));
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 5000000L);
    for (i = 0; i < 64; i++)
        free(p[i]);
    return arg;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5, end = now() + seconds;
    long n = 0;

    while (now() < end) {
        pthread_t a, b;
        pthread_create(&a, NULL, churn, NULL);
        pthread_create(&b, NULL, churn, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        n += 2;
    }
    printf("threads=%s\n", n > 0 ? "many" : "0");
    return 0;
}
