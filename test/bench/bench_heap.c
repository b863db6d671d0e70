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
 *   bench_heap cost [OPS]  the mt workload with every malloc and free timed
 *                          (rdtsc): a block whose word below is negative is
 *                          one of ours, i.e. a heap sample (blocks here are
 *                          under 1 MiB), so the calls that sampled and the
 *                          frees of sampled blocks are told apart from the
 *                          others.  Prints per size class (under 4 KiB, 4 KiB
 *                          and up) the median cycles of sampled and plain
 *                          calls, and the extra of a sample (malloc + free,
 *                          medians: a load that preempts a few calls moves
 *                          none), in ns, and times the samples as a share of
 *                          the same workload's CPU time run again untimed
 *                          ("cost_sample_ns X share_pct Y samples N").
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

/* ---- the cost of one sample, in place ------------------------------------------------ */

#define CBINS 4096 /* histogram of cycles, 4 per bin, up to 16k cycles */
typedef struct {
    uint32_t h[2][2][2][CBINS]; /* [malloc/free][small/big][plain/sampled][cycles / 4] */
    double cpu;
    long samples;
} cost_t;
static cost_t cost[2];

static inline uint64_t
tsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi) : : "rcx", "memory");
    return (uint64_t)hi << 32 | lo;
}

static inline void
cost_add(uint32_t *h, uint64_t d)
{
    h[d / 4 < CBINS ? d / 4 : CBINS - 1]++;
}

static inline int
ours(const void *p)
{
    return p && ((uintptr_t)p & 4088) && *(const intptr_t *)((uintptr_t)p - 8) < 0;
}

static void *
cost_worker(void *arg)
{
    static __thread void *slots[4096];
    static __thread size_t sizes[4096];
    int me = (int)(uintptr_t)arg;
    cost_t *c = &cost[me];
    uint64_t x = 88172645463325252ull ^ (uint64_t)(me + 1);
    double t0 = clk(CLOCK_THREAD_CPUTIME_ID);

    for (long i = 0; i < ops; i++) {
        int j, s;
        size_t n = next_step(&x, &j);
        void *old = slots[j];
        uint64_t a, b;

        s = ours(old);
        a = tsc();
        free(old);
        b = tsc();
        if (old)
            cost_add(c->h[1][sizes[j] >= 4096][s], b - a);
        a = tsc();
        slots[j] = work_alloc(n);
        b = tsc();
        s = ours(slots[j]);
        c->samples += s;
        cost_add(c->h[0][n >= 4096][s], b - a);
        sizes[j] = n;
        *(volatile char *)slots[j] = 1;
    }
    c->cpu = clk(CLOCK_THREAD_CPUTIME_ID) - t0;
    for (int j = 0; j < 4096; j++)
        free(slots[j]);
    return NULL;
}

/* Median (cycles) of the two threads' histograms h[k][z][s]. */
static double
cost_median(int k, int z, int s, long *count)
{
    long n = 0, m = 0;

    for (int b = 0; b < CBINS; b++)
        n += cost[0].h[k][z][s][b] + cost[1].h[k][z][s][b];
    *count = n;
    for (int b = 0; b < CBINS; b++) {
        m += cost[0].h[k][z][s][b] + cost[1].h[k][z][s][b];
        if (n && 2 * m >= n)
            return b * 4 + 2;
    }
    return 0;
}

static int
run_cost(void)
{
    pthread_t t[2];
    double w0 = clk(CLOCK_MONOTONIC), w1, ghz, extra = 0;
    uint64_t c0 = tsc(), c1;
    long n[2][2][2], samples = cost[0].samples;

    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, cost_worker, (void *)(uintptr_t)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    c1 = tsc();
    w1 = clk(CLOCK_MONOTONIC);
    ghz = (double)(c1 - c0) / ((w1 - w0) * 1e9);
    samples = cost[0].samples + cost[1].samples;
    for (int z = 0; z < 2; z++) {
        double m[2][2];
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < 2; s++)
                m[k][s] = cost_median(k, z, s, &n[k][z][s]);
        printf("%-6s malloc plain %6.0f sampled %6.0f (%ld), free plain %6.0f sampled %6.0f (%ld) "
               "cycles\n",
               z ? "4K+" : "<4K", m[0][0], m[0][1], n[0][z][1], m[1][0], m[1][1], n[1][z][1]);
        if (n[0][z][1])
            extra += (m[0][1] - m[0][0] + m[1][1] - m[1][0]) * n[0][z][1];
    }
    extra = samples ? extra / samples / ghz : 0;
    /* The share is of the same workload untimed (the timing costs more than
       the calls): the plain run's process CPU. */
    w0 = clk(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    w1 = clk(CLOCK_PROCESS_CPUTIME_ID) - w0;
    printf("cost_sample_ns %.1f share_pct %.3f samples %ld (tsc %.2f GHz, untimed run %.3f s)\n",
           extra, extra * 1e-9 * samples / w1 * 100, samples, ghz, w1);
    return 0;
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
    if (!strcmp(mode, "cost")) {
        if (argc > 2)
            ops = atol(argv[2]);
        return run_cost();
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
