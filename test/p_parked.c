/*
 * p_parked: threads parked in known functions, for the every-thread endpoints.
 *   p-mutex  park_mutex: waits forever on a mutex main holds
 *   p-sleep  park_sleep: nanosleep, resumed after EINTR (counted)
 *   p-read   park_read:  read on a pipe nobody writes
 *   p-busy   park_busy:  a busy loop
 * main (spawn_all creates them all) waits in main_wait.  Prints the
 * addresses of the park_* functions ("park_busy 0x...") and "ready".
 * Usage: p_parked [SECONDS]  (default: run until killed; with SECONDS, stop
 * after that long and print "eintr N" and "spins N", exit 0).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile unsigned long spins;
static volatile int stop;
static unsigned long eintr;

__attribute__((noinline)) static void
park_mutex(void)
{
    pthread_mutex_lock(&held);
    pthread_mutex_unlock(&held);
}

__attribute__((noinline)) static void
park_sleep(void)
{
    while (!stop) {
        struct timespec ts = {3600, 0};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
            eintr++;
            if (stop)
                return;
        }
    }
}

__attribute__((noinline)) static void
park_read(void)
{
    char c;
    while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
        ;
}

__attribute__((noinline)) static void
park_busy(void)
{
    while (!stop)
        spins++;
}

static void *
run(void *fn)
{
    ((void (*)(void))fn)();
    return NULL;
}

static pthread_t th[4];

__attribute__((noinline)) static void
spawn_all(void)
{
    static const char *names[4] = {"p-mutex", "p-sleep", "p-read", "p-busy"};
    void (*fns[4])(void) = {park_mutex, park_sleep, park_read, park_busy};

    for (int i = 0; i < 4; i++) {
        if (pthread_create(&th[i], NULL, run, (void *)fns[i]) != 0)
            exit(2);
        pthread_setname_np(th[i], names[i]);
    }
}

__attribute__((noinline)) static void
main_wait(double seconds)
{
    if (seconds > 0) {
        struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        stop = 1;
        pthread_join(th[3], NULL);
        return;
    }
    pthread_join(th[3], NULL); /* never returns */
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0;

    if (pipe(pipefd) < 0)
        return 2;
    pthread_mutex_lock(&held);
    spawn_all();
    printf("park_mutex %p\npark_sleep %p\npark_read %p\npark_busy %p\nmain_wait %p\nready\n",
           (void *)park_mutex, (void *)park_sleep, (void *)park_read, (void *)park_busy,
           (void *)main_wait);
    fflush(stdout);
    main_wait(seconds);
    printf("eintr %lu\nspins %lu\n", eintr, spins);
    fflush(stdout);
    return 0;
}
