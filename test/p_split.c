/*
 * p_split: burns CPU in two named functions, 75% in burn_three_quarters and
 * 25% in burn_one_quarter, by construction (equal work per call, called 3:1).
 * Runs argv[1] seconds (default 10), or until killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void
spin(unsigned long n)
{
    unsigned long i, x = sink;

    for (i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

__attribute__((noinline)) void
burn_three_quarters(void)
{
    spin(200000);
}

__attribute__((noinline)) void
burn_one_quarter(void)
{
    spin(200000);
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    struct timespec start, now;

    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        burn_three_quarters();
        burn_three_quarters();
        burn_three_quarters();
        burn_one_quarter();
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    printf("done\n");
    return 0;
}
