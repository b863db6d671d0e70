/*
 * p_sigprof_half: 4 busy threads, of which the 2 named "busy-blk" block
 * SIGPROF (as Apache's event MPM does in its workers) and the 2 named
 * "busy-open" do not.  Prints "ready" and each thread's "TID NAME" line, then
 * spins until killed or for argv[1] seconds (default 60).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NT 4

static pthread_barrier_t ready;
static double seconds = 60;
static volatile unsigned long sink;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
spin_work(void)
{
    for (int i = 0; i < 100000; i++)
        sink += (unsigned long)i * 2654435761u;
}

static void *
busy(void *arg)
{
    long i = (long)arg;
    int blk = i < NT / 2;
    double end = now() + seconds;

    if (blk) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGPROF);
        pthread_sigmask(SIG_BLOCK, &s, NULL);
    }
    prctl(PR_SET_NAME, blk ? "busy-blk" : "busy-open", 0, 0, 0);
    printf("%ld %s\n", (long)syscall(SYS_gettid), blk ? "busy-blk" : "busy-open");
    fflush(stdout);
    pthread_barrier_wait(&ready);
    while (now() < end)
        spin_work();
    return NULL;
}

int
main(int argc, char **argv)
{
    pthread_t t[NT];

    if (argc > 1)
        seconds = atof(argv[1]);
    pthread_barrier_init(&ready, NULL, NT + 1);
    for (long i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, busy, (void *)i);
    pthread_barrier_wait(&ready);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    return 0;
}
