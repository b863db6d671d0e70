/*
 * p_trace: ground truth for /debug/pprof/trace (issue 34; owned by the trace
 * work), and the bench's workloads.
 *   p_trace [SECONDS]           thread "trace-A" in a loop: runs 200 ms
 *                               (a_run), sleeps 300 ms (a_sleep), then takes
 *                               a mutex that thread "trace-B" (b_hold) has
 *                               just taken and holds, running, for 100 ms
 *                               (a_lock waits ~100 ms); B then waits on a
 *                               semaphore for the next round
 *   p_trace busy N [SECONDS]    N threads spinning
 *   p_trace sleepers N [SECONDS] N threads sleeping in nanosleep
 *   p_trace churn N [SECONDS]   a thread "short-lived" every N ms, living 30 ms
 * Prints "ready" when the threads run, then exits 0 after SECONDS (default 60).
 *
 * Signal-safe: n/a (a test program).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static sem_t go, held;
static volatile unsigned long sink;

static long long
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The truth the trace is checked against: what each phase really took (a busy machine
   stretches them), on CLOCK_MONOTONIC as the trace's otherData.start_monotonic_ns. */
/* A moment of this thread: the time, and how long it has waited runnable for a CPU so far
   (schedstat's run_delay): a thread that waits for a CPU is R, which /proc and so the trace
   call running, inside a phase this program calls sleeping or waiting. */
typedef struct mark_s {
    long long t, rd;
} mark_t;

static mark_t
mark(void)
{
    mark_t m = {now_ns(), 0};
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    long long run;
    if (f) {
        if (fscanf(f, "%lld %lld", &run, &m.rd) != 2)
            m.rd = 0;
        fclose(f);
    }
    return m;
}

static void
phase(const char *who, const char *state, mark_t a, mark_t b)
{
    printf("PHASE %s %s %lld %lld %lld\n", who, state, a.t, b.t, b.rd - a.rd);
}

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Stay on the CPU for ms milliseconds of wall time. */
static __attribute__((noinline)) void
spin(double ms)
{
    double end = now_ms() + ms;
    while (now_ms() < end)
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long)i;
}

static __attribute__((noinline)) void
a_run(void)
{
    spin(200);
}

static __attribute__((noinline)) void
a_sleep(void)
{
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
}

static __attribute__((noinline)) void
a_lock(void)
{
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
}

static void *
thread_a(void *arg)
{
    pthread_setname_np(pthread_self(), "trace-A");
    for (;;) {
        mark_t t0 = mark(), t1, t2, t3;
        a_run();
        t1 = mark();
        a_sleep();
        t2 = mark();
        sem_post(&go);
        while (sem_wait(&held) != 0)
            ;
        t3 = mark();
        a_lock();
        phase("trace-A", "running", t0, t1);
        phase("trace-A", "sleeping", t1, t2);
        t0 = mark();
        phase("trace-A", "futex wait", t2, t0); /* the handshake (us), then the lock */
        phase("trace-A", "lock wait", t3, t0);
    }
    return arg;
}

static __attribute__((noinline)) void
b_hold(void)
{
    mark_t t0;
    pthread_mutex_lock(&mu);
    t0 = mark();
    sem_post(&held);
    spin(100);
    pthread_mutex_unlock(&mu);
    phase("trace-B", "running", t0, mark());
}

static void *
thread_b(void *arg)
{
    pthread_setname_np(pthread_self(), "trace-B");
    for (;;) {
        mark_t t0 = mark();
        while (sem_wait(&go) != 0)
            ;
        phase("trace-B", "futex wait", t0, mark());
        b_hold();
    }
    return arg;
}

static void *
busy(void *arg)
{
    pthread_setname_np(pthread_self(), "busy");
    for (;;)
        spin(1000);
    return arg;
}

static void *
sleeper(void *arg)
{
    pthread_setname_np(pthread_self(), "sleeper");
    for (;;)
        sleep(1);
    return arg;
}

static void *
short_lived(void *arg)
{
    struct timespec ts = {0, 30 * 1000000L};
    pthread_setname_np(pthread_self(), "short-lived");
    nanosleep(&ts, NULL);
    return arg;
}

static void *
churn(void *arg)
{
    long ms = (long)arg;
    for (;;) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        pthread_t t;
        if (pthread_create(&t, NULL, short_lived, NULL) == 0)
            pthread_join(t, NULL);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    pthread_t t;
    int seconds = 60, n = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    sem_init(&go, 0, 0);
    sem_init(&held, 0, 0);
    if (argc > 2 && !strcmp(argv[1], "churn")) {
        if (argc > 3)
            seconds = atoi(argv[3]);
        if (pthread_create(&t, NULL, churn, (void *)(long)atoi(argv[2])) != 0)
            return 1;
    } else if (argc > 2 && (!strcmp(argv[1], "busy") || !strcmp(argv[1], "sleepers"))) {
        n = atoi(argv[2]);
        if (argc > 3)
            seconds = atoi(argv[3]);
        for (int i = 0; i < n; i++)
            if (pthread_create(&t, NULL, argv[1][0] == 'b' ? busy : sleeper, NULL) != 0)
                return 1;
    } else {
        if (argc > 1)
            seconds = atoi(argv[1]);
        if (pthread_create(&t, NULL, thread_b, NULL) != 0 ||
            pthread_create(&t, NULL, thread_a, NULL) != 0)
            return 1;
    }
    printf("ready\n");
    fflush(stdout);
    sleep((unsigned)seconds);
    return 0;
}
