/*
 * p_quiet_churn: threads that block briefly and exit, for captures that read
 * threads from /proc while they wake, exit and are replaced (tids reused).
 * 16 threads are alive at any time; each sleeps 0-2 ms (nanosleep, retried on
 * EINTR), sometimes blocks in a short poll, and exits; main replaces them
 * until SIGTERM, then prints "threads N" and exits 0.  Prints "ready" first.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#pragma GCC optimize("omit-frame-pointer")

#define ALIVE 16

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
    stop = 1;
}

__attribute__((noinline)) static void *
brief(void *arg)
{
    unsigned long i = (unsigned long)arg;
    struct timespec ts = {0, (long)(i * 7919 % 2000) * 1000};

    if (i % 3 == 0) {
        poll(NULL, 0, 1);
    } else {
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    return (void *)i;
}

int
main(void)
{
    pthread_t th[ALIVE];
    unsigned long want[ALIVE];
    struct sigaction sa;
    sigset_t term, old;
    unsigned long n = 0;
    void *ret;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, &old);
    for (int i = 0; i < ALIVE; i++) {
        want[i] = n;
        if (pthread_create(&th[i], NULL, brief, (void *)n++))
            return 1;
    }
    printf("ready\n");
    fflush(stdout);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    while (!stop) {
        for (int i = 0; i < ALIVE && !stop; i++) {
            if (pthread_join(th[i], &ret) || (unsigned long)ret != want[i]) {
                fprintf(stderr, "thread %lu: wrong result\n", want[i]);
                return 1;
            }
            want[i] = n;
            pthread_sigmask(SIG_BLOCK, &term, &old);
            if (pthread_create(&th[i], NULL, brief, (void *)n++)) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
            }
            pthread_sigmask(SIG_SETMASK, &old, NULL);
        }
    }
    for (int i = 0; i < ALIVE; i++)
        pthread_join(th[i], NULL);
    printf("threads %lu\n", n);
    return 0;
}
