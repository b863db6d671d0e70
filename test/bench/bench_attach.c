/*
 * bench_attach: the pause an attach costs a program (scripts/bench_attach.sh).
 * argv[1] threads in all (default 100): one "stamper" reading the clock in a
 * tight loop and keeping its largest gap, the others asleep in nanosleep
 * (1 ms steps, so that some are always in a system call).  On stdin, "r"
 * resets the largest gap, "g" prints it in microseconds; EOF ends it.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t max_gap;
static volatile int reset;

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *
stamper(void *a)
{
    int64_t last = now_ns();
    for (;;) {
        int64_t t = now_ns();
        if (reset) {
            reset = 0;
            max_gap = 0;
        } else if (t - last > max_gap) {
            max_gap = t - last;
        }
        last = t;
    }
    return a;
}

static void *
sleeper(void *a)
{
    struct timespec ts = {0, 1000000L};
    for (;;)
        nanosleep(&ts, NULL);
    return a;
}

int
main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    pthread_t t;
    char line[16];

    pthread_create(&t, NULL, stamper, NULL);
    for (int i = 1; i < n; i++)
        pthread_create(&t, NULL, sleeper, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready\n");
    while (fgets(line, sizeof(line), stdin)) {
        if (line[0] == 'r') {
            reset = 1;
            while (reset)
                usleep(100);
            printf("ok\n");
        } else if (line[0] == 'g') {
            printf("%lld\n", (long long)(max_gap / 1000));
        }
    }
    return 0;
}
