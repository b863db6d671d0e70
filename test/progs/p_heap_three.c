/*
 * p_heap_three.c: heap-snapshot ground truth.  Three named sites, site_a,
 * site_b and site_c, each allocate and keep MIB_A, MIB_B and MIB_C MiB
 * (default 40, 20, 10) in varied sizes (log-uniform 16 B .. 2^(MAXSHIFT+1),
 * default MAXSHIFT 16: up to 128 KiB), reached through 1 to 4 levels of
 * descend() so that each site has several call paths sharing a prefix.  The
 * exact kept bytes and block counts are printed, then the program waits (until
 * stdin is readable or closed, or WAIT s).  With CHURN threads > 0, each of
 * them allocates and frees in a loop meanwhile (churn_site, a window of 1024
 * blocks of 1 KiB live), so snapshots are taken while the live table changes.
 *
 * usage: p_heap_three [MIB_A MIB_B MIB_C [MAXSHIFT [CHURN [WAIT]]]]
 * stdout: site_a_bytes N, site_a_blocks N, ... for b and c, then ready
 */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng = 88172645463325252ull;
static int maxshift = 16;
static uint64_t bytes[3], blocks[3];
static volatile int stop;

static uint64_t
next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t
pick_size(void)
{
    int sh = 4 + (int)(next() % (uint64_t)(maxshift - 3));

    return ((size_t)1 << sh) + next() % ((size_t)1 << sh);
}

__attribute__((noinline)) void *
site_a(size_t n)
{
    void *p = malloc(n);

    if (p)
        memset(p, 1, n < 64 ? n : 64);
    return p;
}

__attribute__((noinline)) void *
site_b(size_t n)
{
    void *p = malloc(n);

    if (p)
        memset(p, 2, n < 64 ? n : 64);
    return p;
}

__attribute__((noinline)) void *
site_c(size_t n)
{
    void *p = malloc(n);

    if (p)
        memset(p, 3, n < 64 ? n : 64);
    return p;
}

/* depth more levels of itself, then the site: several paths to each site. */
__attribute__((noinline)) void *
descend(int depth, int site, size_t n)
{
    void *p;

    if (depth > 0)
        p = descend(depth - 1, site, n);
    else
        p = site == 0 ? site_a(n) : site == 1 ? site_b(n) : site_c(n);
    __asm__ volatile("" ::: "memory"); /* not a tail call: keep this frame */
    return p;
}

/* Allocate and keep `total` bytes at one site (the blocks are never freed). */
__attribute__((noinline)) void
fill(int site, uint64_t total)
{
    uint64_t i = 0;

    while (bytes[site] < total) {
        size_t n = pick_size();

        if (!descend((int)(i++ % 4), site, n))
            abort();
        bytes[site] += n;
        blocks[site]++;
    }
}

__attribute__((noinline)) void *
churn_site(size_t n)
{
    return malloc(n);
}

static void *
churn(void *arg)
{
    static __thread void *win[1024];
    unsigned i = 0;

    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        free(win[i % 1024]);
        win[i % 1024] = churn_site(1024);
        i++;
    }
    for (i = 0; i < 1024; i++)
        free(win[i]);
    return NULL;
}

int
main(int argc, char **argv)
{
    uint64_t mib[3] = {40, 20, 10};
    int nchurn = argc > 5 ? atoi(argv[5]) : 0, wait_s = argc > 6 ? atoi(argv[6]) : 60;
    struct pollfd pfd = {0, POLLIN, 0};
    pthread_t th[16];

    for (int s = 0; s < 3 && argc > 1 + s; s++)
        mib[s] = strtoull(argv[1 + s], NULL, 0);
    if (argc > 4)
        maxshift = atoi(argv[4]);
    if (maxshift < 5 || maxshift > 24)
        maxshift = 16;
    if (nchurn > 16)
        nchurn = 16;
    /* Interleave the sites in tenths so all see the same program phases. */
    for (int k = 1; k <= 10; k++)
        for (int s = 0; s < 3; s++)
            fill(s, (mib[s] << 20) * (uint64_t)k / 10);
    for (int t = 0; t < nchurn; t++)
        pthread_create(&th[t], NULL, churn, NULL);
    printf("site_a_bytes %llu\nsite_a_blocks %llu\nsite_b_bytes %llu\nsite_b_blocks %llu\n"
           "site_c_bytes %llu\nsite_c_blocks %llu\nready\n",
           (unsigned long long)bytes[0], (unsigned long long)blocks[0],
           (unsigned long long)bytes[1], (unsigned long long)blocks[1],
           (unsigned long long)bytes[2], (unsigned long long)blocks[2]);
    fflush(stdout);
    poll(&pfd, 1, wait_s * 1000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int t = 0; t < nchurn; t++)
        pthread_join(th[t], NULL);
    return 0;
}
