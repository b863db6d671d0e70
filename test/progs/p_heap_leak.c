/*
 * p_heap_leak.c: ground truth for the heap's age, checkpoint and timeline
 * views.  churn_alloc keeps a ring of RING blocks of 8 KiB, replacing 50 of
 * them every 5 ms (each lives ~0.2 s, ~16 MiB live); after LEAD s,
 * leak_alloc allocates one 4 KiB block every 5 ms for LEAK s and never frees
 * them.  Then churn goes on until stdin closes.
 *
 * usage: p_heap_leak [LEAD [LEAK]]   (defaults 3 and 5 s)
 * stdout: ready, leak_start EPOCH-SECONDS, leak_done BYTES (flushed as they happen)
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 2048
static void *ring[RING];

__attribute__((noinline)) void *
churn_alloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 3, 64);
    return p;
}

__attribute__((noinline)) void *
leak_alloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 4, 64);
    return p;
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
    double lead = argc > 1 ? atof(argv[1]) : 3, leak = argc > 2 ? atof(argv[2]) : 5;
    double t0 = now();
    uint64_t leaked = 0;
    unsigned k = 0;
    int phase = 0; /* 0 lead, 1 leaking, 2 done */
    struct pollfd pfd = {0, POLLIN, 0};

    printf("ready\n");
    fflush(stdout);
    for (;;) {
        double t = now() - t0;
        for (int i = 0; i < 50; i++, k++) {
            free(ring[k % RING]);
            ring[k % RING] = churn_alloc(8192);
        }
        if (phase == 0 && t >= lead) {
            phase = 1;
            struct timespec rt;
            clock_gettime(CLOCK_REALTIME, &rt);
            printf("leak_start %ld.%09ld\n", (long)rt.tv_sec, rt.tv_nsec); /* wall clock */
            fflush(stdout);
        }
        if (phase == 1) {
            if (t >= lead + leak) {
                phase = 2;
                printf("leak_done %llu\n", (unsigned long long)leaked);
                fflush(stdout);
            } else if (leak_alloc(4096)) {
                leaked += 4096;
            }
        }
        if (poll(&pfd, 1, 5) > 0)
            break;
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    return 0;
}
