/*
 * p_work: the host program of the stress tests.  For argv[1] seconds it runs
 * rounds of the same work: 4 threads (new ones each round) that allocate,
 * fill, hash, keep some blocks live in a ring and free them.  Every round must
 * give the same checksum.  Prints "rounds agree checksum=X" (the same with or
 * without the library), then exits with status argv[2] (default 0); stderr
 * gets "p_work: rounds=N VmHWM=K kB" for the throughput and peak memory.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 4
#define RING 512

static void *
work(void *arg)
{
    uint64_t h = 1469598103934665603ULL, seed = (uintptr_t)arg + 1;
    unsigned char *ring[RING] = {0};
    size_t k, j;

    for (k = 0; k < 20000; k++) {
        size_t len, slot;
        unsigned char *p;

        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        len = 16 + (seed >> 33) % 2048;
        slot = (seed >> 20) % RING;
        p = malloc(len);
        if (!p)
            return NULL;
        for (j = 0; j < len; j++)
            p[j] = (unsigned char)(seed >> (j % 56));
        for (j = 0; j < len; j += 7)
            h = (h ^ p[j]) * 1099511628211ULL;
        free(ring[slot]);
        ring[slot] = p;
    }
    for (k = 0; k < RING; k++)
        free(ring[k]);
    return (void *)(uintptr_t)h;
}

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
    double end = now() + (argc > 1 ? atof(argv[1]) : 10);
    int code = argc > 2 ? atoi(argv[2]) : 0;
    uint64_t first = 0, sum;
    long rounds = 0, bad = 0;
    char line[256];
    FILE *f;

    do {
        pthread_t t[THREADS];
        void *ret;
        int i;

        for (i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, work, (void *)(uintptr_t)i);
        sum = 0;
        for (i = 0; i < THREADS; i++) {
            pthread_join(t[i], &ret);
            sum = sum * 31 + (uintptr_t)ret;
        }
        if (rounds++ == 0)
            first = sum;
        else if (sum != first)
            bad++;
    } while (now() < end);
    if (bad)
        printf("rounds DISAGREE: %ld of %ld\n", bad, rounds);
    else
        printf("rounds agree checksum=%llx\n", (unsigned long long)first);
    if ((f = fopen("/proc/self/status", "r"))) {
        while (fgets(line, sizeof(line), f)) {
            if (!strncmp(line, "VmHWM:", 6))
                fprintf(stderr, "p_work: rounds=%ld VmHWM=%ld kB\n", rounds, atol(line + 6));
        }
        fclose(f);
    }
    fflush(stdout);
    return bad ? 1 : code;
}
