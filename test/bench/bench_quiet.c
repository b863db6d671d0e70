/*
 * bench_quiet: the wall-clock bench's program (scripts/bench_quiet.sh): 50
 * threads ("sleeper") asleep in nanosleep and 2 ("spinner") busy, until
 * SIGTERM; then prints "eintr N", the nanosleep calls cut short by a signal.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLEEPERS 50
#define SPINNERS 2

static volatile sig_atomic_t stop;
static unsigned long eintr;
static volatile unsigned long spins;

static void
on_term(int sig)
{
    stop = 1;
}

static void *
sleeper(void *arg)
{
    struct timespec ts = {1000, 0};
    pthread_setname_np(pthread_self(), "sleeper");
    for (;;)
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            __atomic_add_fetch(&eintr, 1, __ATOMIC_RELAXED);
    return NULL;
}

static void *
spinner(void *arg)
{
    pthread_setname_np(pthread_self(), "spinner");
    for (;;)
        spins++;
    return NULL;
}

int
main(void)
{
    struct sigaction sa;
    sigset_t term, old;
    pthread_t th;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, &old);
    for (int i = 0; i < SLEEPERS; i++)
        pthread_create(&th, NULL, sleeper, NULL);
    for (int i = 0; i < SPINNERS; i++)
        pthread_create(&th, NULL, spinner, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    printf("ready\n");
    fflush(stdout);
    while (!stop)
        pause();
    printf("eintr %lu\n", __atomic_load_n(&eintr, __ATOMIC_RELAXED));
    fflush(stdout);
    _exit(0);
}
