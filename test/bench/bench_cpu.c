/*
 * bench_cpu: figures for scripts/bench_cpu.sh.
 *   bench_cpu work WAIT ITERS   sleep WAIT s (time to start a profile), then two
 *                               threads each spin ITERS iterations; prints the
 *                               wall seconds of that phase and the process's
 *                               CPU seconds (user + sys, all threads).
 *   bench_cpu sample N          median cost of one sample (tgkill -> our handler:
 *                               unwind + ring store) at stack depth 30, over N
 *                               signals, next to an empty handler's.
 * Linked with build/libpe_core.a (the sampler's objects, not the preload).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../sampler/cpu.h"
#include "../../sampler/unwind.h"

static volatile unsigned long sink;
static long iters;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
spin(long n)
{
    unsigned long x = sink;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

static void *
worker(void *unused)
{
    for (long i = 0; i < iters / 1000; i++)
        spin(1000);
    return NULL;
}

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double *times;
static int ntimes;

static void
empty_handler(int sig, siginfo_t *si, void *uc)
{
}

__attribute__((noinline)) static int
deep(int d, int n)
{
    pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
    if (d > 0)
        return deep(d - 1, n) + (int)(sink & 1);
    for (int i = 0; i < n; i++) {
        double t0 = now();
        syscall(SYS_tgkill, pid, tid, SIGPROF);
        times[i] = now() - t0;
        pe_ring_slot_t *s;
        while ((s = pe_ring_peek(&pe_cpu_ring)))
            pe_ring_release(&pe_cpu_ring, s);
    }
    return 0;
}

static double
median_run(int n)
{
    deep(25, n); /* + main, __libc_start_call_main, __libc_start_main, _start, deep(0) = 30 */
    qsort(times, (size_t)n, sizeof(*times), cmp);
    return times[n / 2];
}

int
main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "work")) {
        pthread_t a, b;
        double t0;
        usleep((useconds_t)(atof(argv[2]) * 1e6));
        iters = atol(argv[3]);
        t0 = now();
        pthread_create(&a, NULL, worker, NULL);
        pthread_create(&b, NULL, worker, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        {
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            printf("%.4f %.4f\n", now() - t0,
                   ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                       ru.ru_stime.tv_usec / 1e6);
        }
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "sample")) {
        struct sigaction sa;
        double empty, ours;
        ntimes = atoi(argv[2]);
        times = calloc((size_t)ntimes, sizeof(*times));
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = empty_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigaction(SIGPROF, &sa, NULL);
        if (pe_unwind_init() < 0 || pe_ring_init(&pe_cpu_ring, 2048) < 0)
            return 1;
        median_run(ntimes / 10); /* warm */
        empty = median_run(ntimes);
        sa.sa_sigaction = pe_cpu_handler;
        sigaction(SIGPROF, &sa, NULL);
        pe_cpu_accept_tkill = 1;
        median_run(ntimes / 10);
        ours = median_run(ntimes);
        printf("%.0f %.0f\n", ours * 1e9, empty * 1e9);
        return 0;
    }
    fprintf(stderr, "usage: bench_cpu work WAIT ITERS | bench_cpu sample N\n");
    return 2;
}
