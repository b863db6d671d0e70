/*
 * p_quiet_park: threads blocked in each common system call, for the /proc
 * (signal-free) stack captures.  Threads and where they block:
 *   q-sleep nanosleep   q-poll poll        q-epoll epoll_wait   q-read read (pipe)
 *   q-cond pthread_cond_wait   q-mutex pthread_mutex_lock (main holds it)
 *   q-sem sem_wait      q-accept accept    q-wait waitpid (a child that pauses)
 * each inside a park_<what> function.  Prints "ready" once all are parked.
 * Usage: p_quiet_park [strict]
 *   default: an EINTR is retried (so the signal capture can be compared);
 *   strict:  any EINTR is fatal: "EINTR in <thread>" on stderr, exit 3.
 * SIGTERM (taken by main only; the parked threads block it) ends the run:
 * exit 0 when nothing went wrong.  Built without frame pointers, as Debian
 * builds programs; p_quiet_park_fp is the same with frame pointers (its
 * frames' CFA is %rbp-based: /proc gives SP and PC only, so %rbp is found
 * from the first such frame's prologue).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_QUIET_PARK_FP
#pragma GCC optimize("omit-frame-pointer")
#endif

static int strict;
static volatile sig_atomic_t stop;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static int pipe_poll[2], pipe_epoll[2], pipe_read[2], lsock;
static pid_t child;
static int parked;

static void
eintr(const char *who)
{
    if (!strict)
        return;
    fprintf(stderr, "EINTR in %s\n", who);
    _exit(3);
}

static void
fail(const char *who)
{
    fprintf(stderr, "%s: unexpected return: %s\n", who, strerror(errno));
    _exit(4);
}

#define NOTAIL() __asm__ volatile("" ::: "memory")

__attribute__((noinline)) static void
park_sleep(void)
{
    struct timespec ts = {100000, 0};
    for (;;) {
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            eintr("q-sleep");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_poll(void)
{
    struct pollfd p = {pipe_poll[0], POLLIN, 0};
    for (;;) {
        int rc = poll(&p, 1, 100000000);
        if (rc < 0 && errno == EINTR)
            eintr("q-poll");
        else if (rc != 0)
            fail("q-poll");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_epoll(void)
{
    struct epoll_event ev = {EPOLLIN, {0}}, out;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_ctl(ep, EPOLL_CTL_ADD, pipe_epoll[0], &ev);
    for (;;) {
        int rc = epoll_wait(ep, &out, 1, -1);
        if (rc < 0 && errno == EINTR)
            eintr("q-epoll");
        else
            fail("q-epoll");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_read(void)
{
    char c;
    for (;;) {
        if (read(pipe_read[0], &c, 1) < 0 && errno == EINTR)
            eintr("q-read");
        else
            fail("q-read");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_cond(void)
{
    pthread_mutex_lock(&cm);
    for (;;) {
        int rc = pthread_cond_wait(&cv, &cm);
        if (rc == EINTR)
            eintr("q-cond");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_mutex(void)
{
    for (;;) {
        int rc = pthread_mutex_lock(&held);
        if (rc == EINTR)
            eintr("q-mutex");
        else
            fail("q-mutex");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_sem(void)
{
    for (;;) {
        if (sem_wait(&sem) < 0 && errno == EINTR)
            eintr("q-sem");
        else
            fail("q-sem");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_accept(void)
{
    for (;;) {
        if (accept(lsock, NULL, NULL) < 0 && errno == EINTR)
            eintr("q-accept");
        else
            fail("q-accept");
        NOTAIL();
    }
}

__attribute__((noinline)) static void
park_wait(void)
{
    int st;
    for (;;) {
        if (waitpid(child, &st, 0) < 0 && errno == EINTR)
            eintr("q-wait");
        else
            fail("q-wait");
        NOTAIL();
    }
}

static const struct {
    const char *name;
    void (*fn)(void);
} parks[] = {
    {"q-sleep", park_sleep}, {"q-poll", park_poll},     {"q-epoll", park_epoll},
    {"q-read", park_read},   {"q-cond", park_cond},     {"q-mutex", park_mutex},
    {"q-sem", park_sem},     {"q-accept", park_accept}, {"q-wait", park_wait},
};

static void *
start(void *arg)
{
    int i = (int)(long)arg;
    pthread_setname_np(pthread_self(), parks[i].name);
    __atomic_add_fetch(&parked, 1, __ATOMIC_SEQ_CST);
    parks[i].fn();
    return NULL;
}

static void
on_term(int sig)
{
    stop = 1;
}

int
main(int argc, char **argv)
{
    struct sockaddr_in a;
    struct sigaction sa;
    sigset_t term, old;
    pthread_t th;

    strict = argc > 1 && !strcmp(argv[1], "strict");
    if (pipe(pipe_poll) || pipe(pipe_epoll) || pipe(pipe_read) || sem_init(&sem, 0, 0))
        return 1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lsock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lsock < 0 || bind(lsock, (struct sockaddr *)&a, sizeof(a)) || listen(lsock, 1))
        return 1;
    if ((child = fork()) == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* goes with us */
        for (;;)
            pause();
    }
    pthread_mutex_lock(&held);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, &old); /* threads inherit: only main takes it */
    for (long i = 0; i < (long)(sizeof(parks) / sizeof(parks[0])); i++)
        if (pthread_create(&th, NULL, start, (void *)i))
            return 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    while (__atomic_load_n(&parked, __ATOMIC_SEQ_CST) < (int)(sizeof(parks) / sizeof(parks[0])))
        usleep(1000);
    usleep(100000); /* into their calls */
    printf("ready\n");
    fflush(stdout);
    while (!stop) {
        struct timespec ts = {100000, 0};
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR && !stop)
            eintr("main");
    }
    printf("done\n");
    fflush(stdout);
    _exit(0);
}
