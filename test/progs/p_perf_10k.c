/*
 * p_perf_10k: argv[1] threads (default 10000, 32 KiB stacks) that sleep in
 * tenk_nap (1 s at a time, a few microseconds of work between), plus one
 * "burner" in tenk_burn; made at once, or (argv[3], a file) once that file
 * exists (printing "waiting" first).  Prints "ready N" once all exist, runs
 * until file argv[2] exists (at most 60 s), then prints "done N".  Light on
 * a small machine: 10,000 wake-ups a second in all.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;

__attribute__((noinline)) static void
tenk_work(int n)
{
    unsigned long x = sink;
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1;
    sink = x;
}

__attribute__((noinline)) static void
tenk_nap(void)
{
    struct timespec ts = {1, 0};
    while (!stop) {
        tenk_work(1000);
        nanosleep(&ts, NULL);
    }
}

__attribute__((noinline)) static void
tenk_burn(void)
{
    struct timespec ts = {0, 1000000};
    while (!stop) {
        tenk_work(200000);
        nanosleep(&ts, NULL); /* (leaves the CPU to the others now and then) */
    }
}

static void *
napper(void *unused)
{
    (void)unused;
    tenk_nap();
    return NULL;
}

static void *
burner(void *unused)
{
    (void)unused;
    tenk_burn();
    return NULL;
}

int
main(int argc, char **argv)
{
    int nt = argc > 1 ? atoi(argv[1]) : 10000, made = 0;
    pthread_t *t = calloc((size_t)nt + 1, sizeof(*t));
    pthread_attr_t a;

    if (!t || argc < 3)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 3) {
        printf("waiting\n");
        for (int w = 0; w < 1200 && access(argv[3], F_OK) != 0; w++)
            usleep(50000);
    }
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 32 * 1024);
    if (pthread_create(&t[0], &a, burner, NULL) == 0)
        made++;
    for (int i = 0; i < nt; i++) {
        if (pthread_create(&t[made], &a, napper, NULL))
            break;
        made++;
    }
    printf("ready %d\n", made - 1);
    for (int w = 0; w < 600 && access(argv[2], F_OK) != 0; w++)
        usleep(100000);
    stop = 1;
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    printf("done %d\n", made - 1);
    return 0;
}
