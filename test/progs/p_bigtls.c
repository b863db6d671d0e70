/*
 * p_bigtls: a program with 128 KiB of static TLS (big __thread arrays), so
 * that glibc refuses threads with small stacks (civetweb asks for 100 KiB).
 * Its own two threads (default stacks) fill their arrays for ARGV[1] seconds.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static __thread char big[128 * 1024];
static double seconds;

static void *
fill(void *arg)
{
    struct timespec a, b;

    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        memset(big, (int)(long)arg, sizeof(big));
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while (b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
    return NULL;
}

int
main(int argc, char **argv)
{
    pthread_t t[2];

    seconds = argc > 1 ? atof(argv[1]) : 2;
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, fill, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}
