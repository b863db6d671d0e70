/*
 * p_cpu_sigset: burns CPU for argv[1] seconds; after 1 s it sets SIGPROF to
 * SIG_DFL through the old interfaces (sigset, sysv_signal, bsd_signal) while
 * a profile is running.  Without the library's interposition of those calls,
 * the profiler's next timer signal would kill it (status 155); with it, the
 * program's wish is stored and applied when the profile ends.  Prints
 * "sigset ok" and exits 0.
 */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <signal.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* sigset is the point */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern sighandler_t sysv_signal(int, sighandler_t);
extern sighandler_t bsd_signal(int, sighandler_t);

static volatile unsigned long sink;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
sigset_burn(double until)
{
    while (now() < until)
        for (int i = 0; i < 100000; i++)
            sink = sink * 31 + (unsigned long)i;
}

int
main(int argc, char **argv)
{
    double t0 = now(), seconds = argc > 1 ? atof(argv[1]) : 4;

    sigset_burn(t0 + 1);
    sigset(SIGPROF, SIG_DFL);
    sigset_burn(t0 + 1.3);
    sysv_signal(SIGPROF, SIG_DFL);
    sigset_burn(t0 + 1.6);
    bsd_signal(SIGPROF, SIG_DFL);
    sigset_burn(t0 + seconds);
    printf("sigset ok\n");
    return 0;
}
