/*
 * p_heap_split.c: heap-profile ground truth.  Two named sites, site_a_alloc and
 * site_b_alloc, allocate 70% and 30% of TOTAL bytes (default 8 GiB) in varied
 * sizes (log-uniform 16 B .. 128 KiB, the same mix at both), freeing at once,
 * except the last LAST bytes (default 1200 MiB), which are kept; then every
 * second kept block is freed.  The exact byte counts are printed, then the
 * program waits (until stdin is readable/closed, or WAIT s) so a test can fetch.
 *
 * usage: p_heap_split [TOTAL [LAST [WAIT]]]
 * stdout: site_a_bytes N, site_b_bytes N, live_a_bytes N, live_b_bytes N, ready
 *
 * With P_SPLIT_AFTER=FILE (the attach tests): first 64 MiB of blocks from
 * site_pre_alloc, kept; "waiting" on stdout; then nothing until FILE exists
 * (the library attached); then those blocks are freed and the run above
 * starts: its truth is what came after.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng = 88172645463325252ull;

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
    /* log-uniform 16 B .. 64 KiB */
    int sh = 4 + (int)(next() % 13);
    return ((size_t)1 << sh) + next() % ((size_t)1 << sh);
}

#define KEEP_MAX 600000
static void *kept[2][KEEP_MAX];
static size_t keptsz[2][KEEP_MAX];
static int nkept[2];
static uint64_t live[2];

__attribute__((noinline)) void *
site_a_alloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 1, n < 64 ? n : 64);
    return p;
}

__attribute__((noinline)) void *
site_b_alloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 2, n < 64 ? n : 64);
    return p;
}

/* Allocate `total` bytes at one site; keep every block when `keep`, else
   free it at once. */
static uint64_t
run_site(int site, uint64_t total, int keep)
{
    uint64_t done = 0;

    while (done < total) {
        size_t n = pick_size();
        void *p = site == 0 ? site_a_alloc(n) : site_b_alloc(n);
        if (!p)
            abort();
        done += n;
        if (keep && nkept[site] < KEEP_MAX) {
            kept[site][nkept[site]] = p;
            keptsz[site][nkept[site]++] = n;
        } else {
            free(p);
        }
    }
    return done;
}

__attribute__((noinline)) void *
site_pre_alloc(size_t n)
{
    return malloc(n);
}

/* Blocks made before an attach, freed after it (P_SPLIT_AFTER). */
static void
before_attach(const char *file)
{
    static void *pre[40000];
    uint64_t done = 0;
    int n = 0;

    while (done < (64u << 20) && n < 40000) {
        size_t sz = pick_size();
        if (!(pre[n++] = site_pre_alloc(sz)))
            abort();
        done += sz;
    }
    printf("waiting\n");
    fflush(stdout);
    for (int i = 0; i < 120000 && access(file, F_OK) != 0; i++)
        usleep(1000);
    for (int i = 0; i < n; i++)
        free(pre[i]);
}

int
main(int argc, char **argv)
{
    uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 0) : (8ull << 30);
    uint64_t last = argc > 2 ? strtoull(argv[2], NULL, 0) : (1200ull << 20);
    int wait_s = argc > 3 ? atoi(argv[3]) : 60;
    uint64_t a = 0, b = 0, chunk = (total - last) / 20;
    struct pollfd pfd = {0, POLLIN, 0};

    if (getenv("P_SPLIT_AFTER"))
        before_attach(getenv("P_SPLIT_AFTER"));

    /* Interleave the sites in chunks so both see the same program phases. */
    for (int i = 0; i < 20; i++) {
        a += run_site(0, chunk * 7 / 10, 0);
        b += run_site(1, chunk * 3 / 10, 0);
    }
    /* The last stretch is kept, then every second block is freed. */
    a += run_site(0, last * 7 / 10, 1);
    b += run_site(1, last * 3 / 10, 1);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < nkept[s]; i++) {
            if (i & 1)
                free(kept[s][i]);
            else
                live[s] += keptsz[s][i];
        }
    printf("site_a_bytes %llu\nsite_b_bytes %llu\nlive_a_bytes %llu\nlive_b_bytes %llu\nready\n",
           (unsigned long long)a, (unsigned long long)b, (unsigned long long)live[0],
           (unsigned long long)live[1]);
    fflush(stdout);
    /* Wait for the test (stdin closed or readable ends the wait).  Thread-stack and
       wall-clock requests interrupt poll (EINTR, README): wait again, as programs should. */
    while (poll(&pfd, 1, wait_s * 1000) < 0 && errno == EINTR)
        ;
    return 0;
}
