/*
 * p_attach_block: threads waiting in the system calls an attach interrupts
 * (read, accept, poll, nanosleep, clock_nanosleep, epoll_wait, a futex with
 * and without a timeout), each checking what the call returned: any EINTR,
 * or a sleep or timed wait that ended early, prints "FAIL ..." and exits 1
 * at once.  Prints "ready"; exits 0 when its stdin closes (the main thread
 * waits in read too).  test/e2e/e2e_attach.sh attaches and detaches many
 * times meanwhile.
 */
#include <errno.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int quiet_pipe[2];
static int listener;
static int epfd;
static uint32_t futex_word;

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
fail(const char *what, int err)
{
    fprintf(stderr, "FAIL %s: %s\n", what, strerror(err));
    fflush(stderr);
    _exit(1);
}

static void
short_(const char *what, int64_t got, int64_t want)
{
    fprintf(stderr, "FAIL %s: %lld ns instead of at least %lld\n", what, (long long)got,
            (long long)want);
    fflush(stderr);
    _exit(1);
}

static void *
t_read(void *a)
{
    char c;
    for (;;)
        if (read(quiet_pipe[0], &c, 1) < 0)
            fail("read", errno);
        else
            fail("read returned", 0);
    return NULL;
}

static void *
t_accept(void *a)
{
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0)
            fail("accept", errno);
        close(fd); /* a connection: fine */
    }
    return NULL;
}

static void *
t_poll(void *a)
{
    struct pollfd p = {quiet_pipe[0], POLLIN, 0};
    for (;;) {
        int64_t t0 = now_ns();
        int n = poll(&p, 1, 300);
        if (n < 0)
            fail("poll", errno);
        if (n == 0 && now_ns() - t0 < 300000000LL)
            short_("poll timeout", now_ns() - t0, 300000000LL);
    }
    return NULL;
}

static void *
t_nanosleep(void *a)
{
    for (;;) {
        struct timespec ts = {0, 250000000L};
        int64_t t0 = now_ns();
        if (nanosleep(&ts, NULL) < 0)
            fail("nanosleep", errno);
        if (now_ns() - t0 < 250000000LL)
            short_("nanosleep", now_ns() - t0, 250000000LL);
    }
    return NULL;
}

static void *
t_clock_nanosleep(void *a)
{
    for (;;) {
        struct timespec ts = {1, 0};
        int64_t t0 = now_ns();
        int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        if (rc)
            fail("clock_nanosleep", rc);
        if (now_ns() - t0 < 1000000000LL)
            short_("clock_nanosleep", now_ns() - t0, 1000000000LL);
    }
    return NULL;
}

static void *
t_epoll(void *a)
{
    struct epoll_event ev;
    for (;;)
        if (epoll_wait(epfd, &ev, 1, -1) < 0)
            fail("epoll_wait", errno);
    return NULL;
}

static void *
t_epoll_timed(void *a)
{
    struct epoll_event ev;
    for (;;) {
        int64_t t0 = now_ns();
        int n = epoll_wait(epfd, &ev, 1, 400);
        if (n < 0)
            fail("epoll_wait (timed)", errno);
        if (n == 0 && now_ns() - t0 < 400000000LL)
            short_("epoll_wait timeout", now_ns() - t0, 400000000LL);
    }
    return NULL;
}

static void *
t_futex(void *a)
{
    for (;;)
        if (syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0) < 0 &&
            errno != EAGAIN)
            fail("futex", errno);
    return NULL;
}

static void *
t_futex_timed(void *a)
{
    for (;;) {
        struct timespec ts = {0, 350000000L};
        int64_t t0 = now_ns();
        long rc = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        if (rc < 0 && errno != ETIMEDOUT)
            fail("futex (timed)", errno);
        if (now_ns() - t0 < 350000000LL)
            short_("futex timeout", now_ns() - t0, 350000000LL);
    }
    return NULL;
}

static void *
t_cond(void *a)
{
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&m);
    for (;;)
        pthread_cond_wait(&c, &m); /* never signalled: spurious wake-ups are allowed */
    return NULL;
}

int
main(void)
{
    void *(*fns[])(void *) = {t_read,  t_accept,      t_poll,  t_nanosleep,   t_clock_nanosleep,
                              t_epoll, t_epoll_timed, t_futex, t_futex_timed, t_cond};
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    pthread_t t;
    char buf[64];
    ssize_t n;

    if (pipe(quiet_pipe) < 0 || (listener = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        bind(listener, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listener, 4) < 0 ||
        (epfd = epoll_create1(0)) < 0)
        fail("setup", errno);
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        pthread_create(&t, NULL, fns[i], NULL);
    printf("ready\n");
    fflush(stdout);
    /* the main thread waits in read too, until the test closes our stdin */
    while ((n = read(0, buf, sizeof(buf))) != 0)
        if (n < 0)
            fail("read (stdin)", errno);
    printf("done\n");
    return 0;
}
