/*
 * p_ownsig: a program with its own SIGPROF and SIGUSR1 handlers.  It arms
 * ITIMER_PROF at 100 Hz, spins argv[1] seconds of CPU (default 3) while
 * raising SIGUSR1 at itself every 10 ms, and checks: every SIGUSR1 reached its
 * handler exactly once, SIGPROF arrived (at least a quarter of the expected
 * ticks), both handlers are still its own, and the work's result is right.
 * Prints "usr1=N prof=ok handlers=own result=R" and exits 0; else says what
 * differed and exits 1.  (The library answers CPU profiles by the timers with
 * 503; perf events, which send no signal, serve the others.)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t got_usr1, got_prof;

static void
on_usr1(int sig)
{
    got_usr1++;
}

static void
on_prof(int sig)
{
    got_prof++;
}

static double
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3, start, next;
    struct itimerval it = {{0, 10000}, {0, 10000}};
    struct sigaction sa, cur;
    unsigned long x = 1, steps = 0;
    int sent = 0, ok = 1;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    setitimer(ITIMER_PROF, &it, NULL);
    start = cpu_now();
    next = start;
    while (cpu_now() - start < secs) {
        for (int k = 0; k < 10000; k++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        steps++;
        if (cpu_now() >= next) {
            raise(SIGUSR1); /* delivered before raise returns */
            sent++;
            next += 0.01;
        }
    }
    memset(&it, 0, sizeof(it));
    setitimer(ITIMER_PROF, &it, NULL);
    if (got_usr1 != sent) {
        printf("usr1: sent %d, handled %d\n", sent, (int)got_usr1);
        ok = 0;
    }
    if (got_prof < secs * 100 / 4) {
        printf("prof: %d ticks in %.1f s of CPU\n", (int)got_prof, secs);
        ok = 0;
    }
    sigaction(SIGUSR1, NULL, &cur);
    ok &= cur.sa_handler == on_usr1 || (printf("SIGUSR1 handler replaced\n"), 0);
    sigaction(SIGPROF, NULL, &cur);
    ok &= cur.sa_handler == on_prof || (printf("SIGPROF handler replaced\n"), 0);
    /* The LCG after `steps` x 10000 iterations, recomputed. */
    {
        unsigned long y = 1;
        for (unsigned long s = 0; s < steps * 10000; s++)
            y = y * 6364136223846793005UL + 1442695040888963407UL;
        ok &= y == x || (printf("result differs\n"), 0);
    }
    fprintf(stderr, "p_ownsig: usr1=%d prof=%d steps=%lu\n", sent, (int)got_prof, steps);
    if (!ok)
        return 1;
    printf("usr1=ok prof=ok handlers=own result=ok\n");
    return 0;
}
