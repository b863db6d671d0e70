/*
 * p_attach_alloc: 8 threads allocating at full speed (random sizes, 16 B to
 * 64 KiB, some kept a while), each block filled with a pattern and checked
 * before it is freed.  Prints "ready", runs until its stdin closes, then
 * prints "ops N" and exits 0, or 1 at the first block found changed.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 8
#define KEEP 64

static volatile int stop;
static unsigned long long ops[THREADS];

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i + 1 < n; i += 61)
        p[i] = (unsigned char)(seed + i);
    p[n - 1] = (unsigned char)seed;
}

static int
intact(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i + 1 < n; i += 61)
        if (p[i] != (unsigned char)(seed + i))
            return 0;
    return p[n - 1] == (unsigned char)seed;
}

static void *
worker(void *arg)
{
    long id = (long)arg;
    unsigned rnd = (unsigned)id * 2654435761u + 1;
    struct {
        unsigned char *p;
        size_t n;
        unsigned seed;
    } keep[KEEP];

    memset(keep, 0, sizeof(keep));
    while (!stop) {
        int k;
        rnd = rnd * 1103515245u + 12345u;
        k = (int)(rnd >> 8) % KEEP;
        if (keep[k].p) {
            if (!intact(keep[k].p, keep[k].n, keep[k].seed)) {
                fprintf(stderr, "FAIL thread %ld: a block changed\n", id);
                _exit(1);
            }
            free(keep[k].p);
        }
        keep[k].n = 16 + (rnd >> 4) % (64 << 10);
        keep[k].seed = rnd;
        keep[k].p = (rnd & 1) ? malloc(keep[k].n) : calloc(1, keep[k].n);
        if (!keep[k].p) {
            fprintf(stderr, "FAIL thread %ld: out of memory\n", id);
            _exit(1);
        }
        fill(keep[k].p, keep[k].n, keep[k].seed);
        ops[id]++;
    }
    for (int k = 0; k < KEEP; k++)
        if (keep[k].p) {
            if (!intact(keep[k].p, keep[k].n, keep[k].seed)) {
                fprintf(stderr, "FAIL thread %ld: a block changed\n", id);
                _exit(1);
            }
            free(keep[k].p);
        }
    return NULL;
}

int
main(void)
{
    pthread_t t[THREADS];
    unsigned long long total = 0;
    char buf[64];

    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    printf("ready\n");
    fflush(stdout);
    while (read(0, buf, sizeof(buf)) > 0)
        ;
    stop = 1;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        total += ops[i];
    }
    printf("ops %llu\n", total);
    return 0;
}
