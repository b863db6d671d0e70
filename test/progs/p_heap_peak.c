/*
 * p_heap_peak.c: a peak that is gone.  site_big holds BIG MiB in 1 MiB
 * blocks for HOLD s, frees them, then site_small holds SMALL MiB in 64 KiB
 * blocks until stdin closes.  Every block is written through, so RSS follows.
 *
 * usage: p_heap_peak [BIG [SMALL [HOLD]]]   (defaults 300, 20, 3)
 * stdout: big_start EPOCH, big_bytes N, big_held EPOCH, big_done EPOCH, small_bytes N, ready
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void *
site_big(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 5, n);
    return p;
}

__attribute__((noinline)) void *
site_small(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 6, n);
    return p;
}

static void
stamp(const char *what)
{
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    printf("%s %ld.%09ld\n", what, (long)rt.tv_sec, rt.tv_nsec);
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    int big = argc > 1 ? atoi(argv[1]) : 300, small = argc > 2 ? atoi(argv[2]) : 20;
    double hold = argc > 3 ? atof(argv[3]) : 3;
    int nsmall = small * 16;
    void **b = calloc((size_t)big, sizeof(void *)), **s = calloc((size_t)nsmall, sizeof(void *));
    struct pollfd pfd = {0, POLLIN, 0};
    char c;

    sleep(1); /* a first checkpoint before anything */
    stamp("big_start");
    for (int i = 0; i < big; i++)
        if (!(b[i] = site_big(1 << 20)))
            return 1;
    printf("big_bytes %llu\n", (unsigned long long)big << 20);
    stamp("big_held");
    usleep((useconds_t)(hold * 1e6));
    for (int i = 0; i < big; i++)
        free(b[i]);
    stamp("big_done");
    for (int i = 0; i < nsmall; i++)
        if (!(s[i] = site_small(64 << 10)))
            return 1;
    printf("small_bytes %llu\nready\n", (unsigned long long)nsmall << 16);
    fflush(stdout);
    while (poll(&pfd, 1, -1) < 0)
        ;
    while (read(0, &c, 1) > 0)
        ;
    for (int i = 0; i < nsmall; i++)
        free(s[i]);
    free(b);
    free(s);
    return 0;
}
