/*
 * bench_heap.c: malloc-heavy workloads for scripts/bench_heap.sh, timed from
 * inside (start-up excluded).
 *   bench_heap mt [OPS]    2 threads, each OPS random free+malloc pairs over
 *                          4096 slots, sizes 16 B..1 KiB with 1 in 64 of
 *                          4..64 KiB; prints "cpu_s X wall_s Y"
 *   bench_heap pair [N]    one thread, N malloc(64)+free pairs; "ns_per_pair X"
 *   bench_heap ab [OPS] [ROUNDS]
 *                          the mt workload in one process, in rounds that
 *                          alternate glibc's own functions (__libc_malloc,
 *                          __libc_free: never interposed) with the ones the
 *                          program links (malloc, free: ours when preloaded),
 *                          both threads in the same phase; prints the median
 *                          and smallest per-round ratio of thread CPU time,
 *                          linked/glibc ("ab_ratio_median X ab_ratio_min Y").
 *                          Without a preload it is 1 within the noise: a
 *                          comparison free of process-to-process variation.
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

/* The workload's next step: which of the 4096 slots to replace, and the new
   block's size (16 B..1 KiB, 1 in 64 of 4..68 KiB). */
static inline size_t
next_step(uint64_t *x, int *slot)
{
    uint64_t v = *x;

    v ^= v << 13;
    v ^= v >> 7;
    v ^= v << 17;
    *x = v;
    *slot = (int)(v & 4095);
    return (v >> 20) & 63 ? 16 + ((v >> 32) & 1023) : 4096 + ((v >> 32) & 65535);
}

static void *
worker(void *arg)
{
    static __thread void *slots[4096];
    uint64_t x = 88172645463325252ull ^ (uintptr_t)arg;

    for (long i = 0; i < ops; i++) {
        int j;
        size_t n = next_step(&x, &j);
        free(slots[j]);
        slots[j] = work_alloc(n);
        *(volatile char *)slots[j] = 1;
    }
    for (int j = 0; j < 4096; j++)
        free(slots[j]);
    return NULL;
}

/* ---- in-process A/B ------------------------------------------------------------ */

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

typedef struct {
    void *(*alloc)(size_t);
    void (*release)(void *);
} ab_fns_t;

static long ab_ops = 2000000;
static int ab_rounds = 10;
static pthread_barrier_t ab_bar;
static double ab_cpu[2][64][2]; /* [thread][round][phase] */

__attribute__((noinline)) static void *
ab_alloc(const ab_fns_t *f, size_t n)
{
    return f->alloc(n);
}

static void *
ab_worker(void *arg)
{
    int me = (int)(uintptr_t)arg;
    static __thread void *slots[4096];
    ab_fns_t fns[2] = {{__libc_malloc, __libc_free}, {malloc, free}};
    uint64_t x = 88172645463325252ull ^ (uint64_t)(me + 1);

    for (int r = 0; r < ab_rounds; r++)
        for (int k = 0; k < 2; k++) {
            int ph = (r & 1) ? 1 - k : k; /* ABBA: neither goes first every time */
            const ab_fns_t *f = &fns[ph];
            double t0, t1;

            for (int j = 0; j < 4096; j++)
                slots[j] = ab_alloc(f, 16 + (j & 1023));
            pthread_barrier_wait(&ab_bar);
            t0 = clk(CLOCK_THREAD_CPUTIME_ID);
            for (long i = 0; i < ab_ops; i++) {
                int j;
                size_t n = next_step(&x, &j);
                f->release(slots[j]);
                slots[j] = ab_alloc(f, n);
                *(volatile char *)slots[j] = 1;
            }
            t1 = clk(CLOCK_THREAD_CPUTIME_ID);
            ab_cpu[me][r][ph] = t1 - t0;
            for (int j = 0; j < 4096; j++)
                f->release(slots[j]);
            pthread_barrier_wait(&ab_bar);
        }
    return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int
run_ab(void)
{
    pthread_t t[2];
    double ratio[64];

    pthread_barrier_init(&ab_bar, NULL, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, ab_worker, (void *)(uintptr_t)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int r = 0; r < ab_rounds; r++)
        ratio[r] = (ab_cpu[0][r][1] + ab_cpu[1][r][1]) / (ab_cpu[0][r][0] + ab_cpu[1][r][0]);
    qsort(ratio, ab_rounds, sizeof(double), cmp_double);
    printf("ab_ratio_median %.4f ab_ratio_min %.4f\n", ratio[ab_rounds / 2], ratio[0]);
    return 0;
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
    if (!strcmp(mode, "ab")) {
        if (argc > 2)
            ab_ops = atol(argv[2]);
        if (argc > 3)
            ab_rounds = atoi(argv[3]);
        if (ab_rounds < 1 || ab_rounds > 64)
            ab_rounds = 10;
        return run_ab();
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
