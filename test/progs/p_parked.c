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
 * P_PARKED_BLOCK=1 adds p-blocked (park_blocked: SIGPROF blocked, sleeping);
 * P_PARKED_USR1=1 makes main install its own SIGUSR1 handler, print what
 * sigaction said was there before ("usr1 old default" when SIG_DFL), and
 * print "usr1 handled N" at the end.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile unsigned long spins;
static volatile int stop;
static unsigned long eintr;
static volatile int usr1;

static void
on_usr1(int sig)
{
    usr1++;
}

__attribute__((noinline)) static void
park_blocked(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    while (!stop)
        usleep(100000);
}

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

static pthread_t th[5];

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
    if (getenv("P_PARKED_BLOCK")) {
        if (pthread_create(&th[4], NULL, run, (void *)park_blocked) != 0)
            exit(2);
        pthread_setname_np(th[4], "p-blocked");
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
    if (getenv("P_PARKED_USR1")) {
        struct sigaction sa = {0}, old;
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGUSR1, &sa, &old);
        printf("usr1 old %s\n", old.sa_handler == SIG_DFL ? "default" : "other");
    }
    spawn_all();
    printf("park_mutex %p\npark_sleep %p\npark_read %p\npark_busy %p\nmain_wait %p\nready\n",
           (void *)park_mutex, (void *)park_sleep, (void *)park_read, (void *)park_busy,
           (void *)main_wait);
    fflush(stdout);
    main_wait(seconds);
    printf("eintr %lu\nspins %lu\nusr1 handled %d\n", eintr, spins, usr1);
    fflush(stdout);
    return 0;
}
