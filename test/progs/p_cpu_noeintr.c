/*
 * p_cpu_noeintr: threads that treat any EINTR as fatal, as programs written
 * without signals in mind do: two alternate CPU work with short sleeps in
 * nanosleep, clock_nanosleep and poll (never restarted after a handler, even
 * with SA_RESTART), one blocks in read on a pipe another feeds.  Runs argv[1]
 * seconds (default 10), then prints "eintr=0 rounds=N"; at the first EINTR it
 * prints "EINTR in CALL" and exits 3.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static volatile int stop;
static volatile unsigned long sink, rounds;

static void
fatal(const char *call)
{
    printf("EINTR in %s\n", call);
    fflush(stdout);
    _exit(3);
}

__attribute__((noinline)) static void
noeintr_work(unsigned long n)
{
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1;
    sink = x;
}

static void *
sleeper(void *unused)
{
    struct timespec ts = {0, 200000};

    (void)unused;
    while (!stop) {
        noeintr_work(100000);
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            fatal("nanosleep");
        if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
            fatal("clock_nanosleep");
        if (poll(NULL, 0, 1) < 0 && errno == EINTR)
            fatal("poll");
        rounds++;
    }
    return NULL;
}

static void *
reader(void *unused)
{
    char buf[64];

    (void)unused;
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            fatal("read");
        if (n <= 0)
            return NULL;
        noeintr_work(50000);
    }
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    struct timespec ts = {0, 1000000}, t0, t;
    pthread_t s1, s2, r;

    if (pipe(fds) < 0)
        return 2;
    pthread_create(&s1, NULL, sleeper, NULL);
    pthread_create(&s2, NULL, sleeper, NULL);
    pthread_create(&r, NULL, reader, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
            break;
        if (write(fds[1], "x", 1) < 0 && errno == EINTR)
            fatal("write");
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            fatal("nanosleep (main)");
    }
    stop = 1;
    close(fds[1]);
    pthread_join(s1, NULL);
    pthread_join(s2, NULL);
    pthread_join(r, NULL);
    printf("eintr=0 rounds=%lu\n", rounds);
    return 0;
}
