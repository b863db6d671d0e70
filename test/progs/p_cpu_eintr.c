/*
 * p_cpu_eintr: a thread that burns CPU between blocking read()s on a pipe fed
 * by another thread, and a main thread doing the same with accept()-free
 * waits: with SA_RESTART our CPU-timer signals must never make read() fail
 * with EINTR.  Prints "reads=N eintr=M bytes_ok=0|1".  argv[1]: seconds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static volatile int stop;
static volatile unsigned long sink;

__attribute__((noinline)) static void
busy(unsigned long n)
{
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1;
    sink = x;
}

static void *
writer(void *unused)
{
    unsigned char c = 0;
    while (!stop) {
        busy(20000);
        if (write(fds[1], &c, 1) == 1)
            c++;
    }
    close(fds[1]);
    return NULL;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    unsigned char want = 0, got;
    long reads = 0, eintr = 0;
    int bytes_ok = 1;
    pthread_t th;
    struct timespec t0, t;

    if (pipe(fds) < 0)
        return 2;
    pthread_create(&th, NULL, writer, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        ssize_t n = read(fds[0], &got, 1);
        if (n < 0 && errno == EINTR) {
            eintr++;
            continue;
        }
        if (n <= 0)
            break;
        reads++;
        bytes_ok &= got == want++;
        busy(30000);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (!stop && t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
            stop = 1;
    }
    pthread_join(th, NULL);
    printf("reads=%ld eintr=%ld bytes_ok=%d\n", reads, eintr, bytes_ok);
    return 0;
}
