/*
 * p_attach_split: two threads ("split-a", "split-b") each burning CPU 75% in
 * attach_three_quarters and 25% in attach_one_quarter (the same loop, called
 * 3:1), for argv[1] seconds (default 30).  Unlike p_cpu_split the work is in
 * the two functions themselves: a thread older than an attach is unwound by
 * frame pointers (docs/ATTACH.md), which cannot see past a frameless leaf.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop;

#define WORK(n)                                                                                    \
    do {                                                                                           \
        unsigned long x = sink;                                                                    \
        for (unsigned long i = 0; i < (n); i++)                                                    \
            x = x * 6364136223846793005ul + 1442695040888963407ul;                                 \
        sink = x;                                                                                  \
    } while (0)

__attribute__((noinline)) void
attach_three_quarters(void)
{
    WORK(100000);
}

__attribute__((noinline)) void
attach_one_quarter(void)
{
    WORK(100000);
}

static void *
worker(void *name)
{
    pthread_setname_np(pthread_self(), name);
    while (!stop) {
        attach_three_quarters();
        attach_three_quarters();
        attach_three_quarters();
        attach_one_quarter();
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 30;
    pthread_t a, b;

    pthread_create(&a, NULL, worker, "split-a");
    pthread_create(&b, NULL, worker, "split-b");
    usleep((useconds_t)(seconds * 1e6));
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
