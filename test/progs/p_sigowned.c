/*
 * p_sigowned: a program that owns SIGPROF, as one with a profiler of its own
 * does: its handler (on_prof, SA_SIGINFO) and an ITIMER_PROF every 10 ms.  A
 * worker thread ("owned-w") burns CPU 75% in cpu_three_quarters and 25% in
 * cpu_one_quarter; the main thread pushes a fixed byte stream through a pipe
 * in small pieces and sums what it reads back.  Runs argv[1] seconds (default
 * 6), then prints
 *   ticks=T expected=E foreign=F checksum=C
 * T: its itimer's signals (si_code SI_KERNEL); E: the process CPU time over
 * the same span / 10 ms; F: SIGPROFs of any other origin (someone else's);
 * C: the checksum of the bytes read back (the same every run).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop, ticks, foreign;

static void
on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_KERNEL)
        ticks++;
    else
        foreign++;
}

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

static void *
worker(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "owned-w");
    while (!stop) {
        cpu_three_quarters();
        cpu_three_quarters();
        cpu_three_quarters();
        cpu_one_quarter();
    }
    return NULL;
}

static double
now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 6, t0, c0, c1;
    struct itimerval it = {{0, 10000}, {0, 10000}}, off = {{0, 0}, {0, 0}};
    struct sigaction sa = {0};
    unsigned char out[512], in[512];
    uint32_t sum = 0, seq = 1;
    pthread_t th;
    int p[2];

    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) < 0 || pipe(p) < 0)
        return 2;
    c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    setitimer(ITIMER_PROF, &it, NULL);
    pthread_create(&th, NULL, worker, NULL);
    t0 = now(CLOCK_MONOTONIC);
    /* 1,000 pieces of the stream, paced over the run (a signal of ours would
       cut a read or write short: the sum would tell) */
    for (int i = 0; i < 1000; i++) {
        ssize_t w, r, got = 0;
        for (size_t j = 0; j < sizeof(out); j++)
            out[j] = (unsigned char)((seq = seq * 1103515245u + 12345u) >> 16);
        w = write(p[1], out, sizeof(out));
        while (w > 0 && got < w && (r = read(p[0], in + got, (size_t)(w - got))) > 0)
            got += r;
        for (ssize_t j = 0; j < got; j++)
            sum = sum * 31 + in[j];
        while (now(CLOCK_MONOTONIC) - t0 < secs * (i + 1) / 1000)
            usleep(1000);
    }
    stop = 1;
    pthread_join(th, NULL);
    setitimer(ITIMER_PROF, &off, NULL);
    c1 = now(CLOCK_PROCESS_CPUTIME_ID);
    printf("ticks=%d expected=%d foreign=%d checksum=%08x\n", ticks, (int)((c1 - c0) / 0.01),
           foreign, (unsigned)sum);
    return 0;
}
