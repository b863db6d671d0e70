/*
 * p_wall_perf: a program that must never be signalled, for wall-clock
 * profiles by perf events: every thread blocks SIGPROF (a signal sent to one
 * stays pending there, which each thread checks as it ends) and treats any
 * EINTR as fatal.  "spinner" burns in wall_spin, "napper" sleeps in wall_nap
 * (nanosleep, 2 ms at a time), main waits in nanosleep.  Runs argv[1] seconds
 * (default 10), then prints "pending=N eintr=0" (N threads found SIGPROF
 * pending); at the first EINTR it prints "EINTR in CALL" and exits 3.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;
static int pending;

static void
fatal(const char *call)
{
    printf("EINTR in %s\n", call);
    fflush(stdout);
    _exit(3);
}

static void
check_pending(void)
{
    sigset_t set;

    if (sigpending(&set) == 0 && sigismember(&set, SIGPROF))
        __atomic_add_fetch(&pending, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) static void
wall_spin(void)
{
    unsigned long x = sink;
    while (!stop)
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ul + 1;
    sink = x;
}

__attribute__((noinline)) static void
wall_nap(void)
{
    struct timespec ts = {0, 2000000};
    while (!stop)
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            fatal("nanosleep");
}

static void *
spinner(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "spinner");
    wall_spin();
    check_pending();
    return NULL;
}

static void *
napper(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "napper");
    wall_nap();
    check_pending();
    return NULL;
}

__attribute__((noinline)) static void
wall_main_wait(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
        fatal("clock_nanosleep");
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    pthread_t a, b;
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the threads inherit the mask */
    pthread_create(&a, NULL, spinner, NULL);
    pthread_create(&b, NULL, napper, NULL);
    wall_main_wait(seconds);
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    check_pending();
    printf("pending=%d eintr=0\n", pending);
    return 0;
}
