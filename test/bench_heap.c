/*
 * bench_heap.c: malloc-heavy workloads for scripts/bench_heap.sh, timed from
 * inside (start-up excluded).
 *   bench_heap mt [OPS]    2 threads, each OPS random free+malloc pairs over
 *                          4096 slots, sizes 16 B..1 KiB with 1 in 64 of
 *                          4..64 KiB; prints "cpu_s X wall_s Y"
 *   bench_heap pair [N]    one thread, N malloc(64)+free pairs; "ns_per_pair X"
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long ops = 20000000;

static double
clk(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void *
work_alloc(size_t n)
{
    return malloc(n);
}

static void *
worker(void *arg)
{
    static __thread void *slots[4096];
    uint64_t x = 88172645463325252ull ^ (uintptr_t)arg;

    for (long i = 0; i < ops; i++) {
        size_t n;
        int j;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        j = (int)(x & 4095);
        n = (x >> 20) & 63 ? 16 + ((x >> 32) & 1023) : 4096 + ((x >> 32) & 65535);
        free(slots[j]);
        slots[j] = work_alloc(n);
        *(volatile char *)slots[j] = 1;
    }
    for (int j = 0; j < 4096; j++)
        free(slots[j]);
    return NULL;
}

int
main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "mt";

    if (!strcmp(mode, "pair")) {
        long n = argc > 2 ? atol(argv[2]) : 100000000;
        double t0 = clk(CLOCK_THREAD_CPUTIME_ID), t1;
        for (long i = 0; i < n; i++) {
            void *p = work_alloc(64);
            __asm__ volatile("" : : "r"(p) : "memory");
            free(p);
        }
        t1 = clk(CLOCK_THREAD_CPUTIME_ID);
        printf("ns_per_pair %.3f\n", (t1 - t0) * 1e9 / n);
        return 0;
    }
    if (argc > 2)
        ops = atol(argv[2]);
    pthread_t t[2];
    double c0 = clk(CLOCK_PROCESS_CPUTIME_ID), w0 = clk(CLOCK_MONOTONIC);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("cpu_s %.4f wall_s %.4f\n", clk(CLOCK_PROCESS_CPUTIME_ID) - c0,
           clk(CLOCK_MONOTONIC) - w0);
    return 0;
}
