/*
 * p_cpu_manythreads: argv[1] threads (default 1000, 64 KiB stacks) made at
 * once, each doing a little CPU work every 50 ms and sleeping between; prints
 * "ready" once all exist, then runs until the file argv[2] exists (at most
 * argv[3] seconds, default 60) and prints "done N".  With argv[4], a file:
 * prints "waiting" and makes the threads only once that file exists.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;

__attribute__((noinline)) static void
many_work(void)
{
    unsigned long x = sink;
    for (int i = 0; i < 20000; i++)
        x = x * 6364136223846793005ul + 1;
    sink = x;
}

static void *
worker(void *unused)
{
    struct timespec ts = {0, 50000000};

    (void)unused;
    while (!stop) {
        many_work();
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    int nt = argc > 1 ? atoi(argv[1]) : 1000, made = 0;
    const char *go = argc > 2 ? argv[2] : NULL;
    double limit = argc > 3 ? atof(argv[3]) : 60;
    pthread_t *t = calloc((size_t)nt, sizeof(*t));
    pthread_attr_t a;

    if (argc > 4) {
        printf("waiting\n");
        fflush(stdout);
        for (double w = 0; w < limit && access(argv[4], F_OK) != 0; w += 0.05)
            usleep(50000);
    }
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    for (int i = 0; i < nt; i++) {
        if (pthread_create(&t[i], &a, worker, NULL))
            break;
        made++;
    }
    printf("ready %d\n", made);
    fflush(stdout);
    for (double w = 0; w < limit && !(go && access(go, F_OK) == 0); w += 0.1)
        usleep(100000);
    stop = 1;
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    printf("done %d\n", made);
    return 0;
}
