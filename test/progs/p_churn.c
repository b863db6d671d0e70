/*
 * p_churn: thread churn.  Creates and joins argv[1] threads (default 100000),
 * at most 8 alive at a time; each allocates, fills and checks a buffer and
 * returns its own checksum.  Prints "threads=N sum=S" (S depends only on N)
 * and exits 0, or prints the failure and exits 1.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIVE 8

static void *
work(void *arg)
{
    uintptr_t i = (uintptr_t)arg, sum = 0;
    size_t len = 64 + (i % 4096);
    unsigned char *p = malloc(len);

    if (!p)
        return (void *)~(uintptr_t)0;
    memset(p, (int)(i & 0xff), len);
    for (size_t k = 0; k < len; k += 61)
        sum += p[k];
    free(p);
    return (void *)(sum + i);
}

int
main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000, i, j;
    pthread_t t[ALIVE];
    uintptr_t total = 0, want = 0;
    void *ret;
    int err;

    for (i = 0; i < n; i += ALIVE) {
        long batch = n - i < ALIVE ? n - i : ALIVE;

        for (j = 0; j < batch; j++) {
            while ((err = pthread_create(&t[j], NULL, work, (void *)(uintptr_t)(i + j))) != 0) {
                fprintf(stderr, "p_churn: pthread_create: %s\n", strerror(err));
                return 1;
            }
        }
        for (j = 0; j < batch; j++) {
            pthread_join(t[j], &ret);
            total += (uintptr_t)ret;
        }
    }
    /* The same sums, computed without threads. */
    for (i = 0; i < n; i++) {
        size_t len = 64 + ((uintptr_t)i % 4096);
        for (size_t k = 0; k < len; k += 61)
            want += (uintptr_t)(i & 0xff);
        want += (uintptr_t)i;
    }
    if (total != want) {
        printf("threads=%ld sum=%lu MISMATCH (want %lu)\n", n, (unsigned long)total,
               (unsigned long)want);
        return 1;
    }
    printf("threads=%ld sum=%lu\n", n, (unsigned long)total);
    return 0;
}
