/*
 * p_cpu_split: two worker threads ("split-a", "split-b") each burn CPU 75% in
 * cpu_three_quarters and 25% in cpu_one_quarter (equal work per call, called
 * 3:1).  After argv[2] seconds (default 1) a third thread "late-one" starts
 * and burns in late_work.  Runs argv[1] seconds (default 10).  With argv[3]
 * "block", the two workers block SIGPROF (as servers that block every signal
 * in their workers do): the timer engine cannot sample them, perf events can.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop, block;

__attribute__((noinline)) static void
spin(unsigned long n)
{
    unsigned long i, x = sink;
    for (i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

__attribute__((noinline)) void
cpu_three_quarters(void)
{
    spin(100000);
}

__attribute__((noinline)) void
cpu_one_quarter(void)
{
    spin(100000);
}

__attribute__((noinline)) void
late_work(void)
{
    spin(100000);
}

static void *
worker(void *name)
{
    pthread_setname_np(pthread_self(), name);
    if (block) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGPROF);
        pthread_sigmask(SIG_BLOCK, &s, NULL);
    }
    while (!stop) {
        cpu_three_quarters();
        cpu_three_quarters();
        cpu_three_quarters();
        cpu_one_quarter();
    }
    return NULL;
}

static void *
late(void *unused)
{
    pthread_setname_np(pthread_self(), "late-one");
    while (!stop)
        late_work();
    return NULL;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    double late_at = argc > 2 ? atof(argv[2]) : 1;
    pthread_t a, b, c;

    block = argc > 3 && !strcmp(argv[3], "block");
    pthread_create(&a, NULL, worker, "split-a");
    pthread_create(&b, NULL, worker, "split-b");
    usleep((useconds_t)(late_at * 1e6));
    pthread_create(&c, NULL, late, NULL);
    usleep((useconds_t)((seconds - late_at) * 1e6));
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    printf("done\n");
    return 0;
}
