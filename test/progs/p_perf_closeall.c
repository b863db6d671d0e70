/*
 * p_perf_closeall: a program that closes every descriptor it did not open
 * in the middle of a CPU profile, as daemons do: a worker burns in
 * closeall_before until file argv[1] exists (the test made it once the
 * profile runs) and 1 s more, then main closes everything from 3 up (a close
 * loop over 3..1023, close_range(3, ~0U, 0), closefrom(3)) and the worker
 * burns in closeall_after for argv[2] seconds (default 3).  Prints
 * "closed" after the closing and "done" at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int phase, stop;
static volatile unsigned long sink;

__attribute__((noinline)) static void
burn(void)
{
    unsigned long x = sink;
    for (int i = 0; i < 100000; i++)
        x = x * 6364136223846793005ul + 1;
    sink = x;
}

__attribute__((noinline)) static void
closeall_before(void)
{
    while (phase == 0)
        burn();
}

__attribute__((noinline)) static void
closeall_after(void)
{
    while (!stop)
        burn();
}

static void *
worker(void *unused)
{
    (void)unused;
    closeall_before();
    closeall_after();
    return NULL;
}

int
main(int argc, char **argv)
{
    double after = argc > 2 ? atof(argv[2]) : 3;
    struct timespec ts = {0, 20000000};
    pthread_t t;

    if (argc < 2)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_create(&t, NULL, worker, NULL);
    while (access(argv[1], F_OK) != 0)
        nanosleep(&ts, NULL);
    sleep(1);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    close_range(3, ~0U, 0);
    closefrom(3);
    phase = 1;
    printf("closed\n");
    ts.tv_sec = (time_t)after;
    ts.tv_nsec = (long)((after - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
    stop = 1;
    pthread_join(t, NULL);
    printf("done\n");
    return 0;
}
