/*
 * p_eintr_strict: threads that wait ~200 ms at a time in calls a handled
 * signal would cut short with EINTR whatever SA_RESTART says (nanosleep,
 * clock_nanosleep, a timed futex wait through syscall(), poll and
 * epoll_wait with timeouts), in loops.  Any EINTR or short wait exits 3 at
 * once, naming the call; otherwise exit 0 after argv[1] seconds (default
 * 10).  Prints "ready" when the threads run.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 200

static double seconds = 10;
static int futex_word;

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
fail(const char *what, int rc, int err, int64_t took)
{
    fprintf(stderr, "p_eintr_strict: %s returned %d (%s) after %.1f ms\n", what, rc,
            rc < 0 ? (err == EINTR ? "EINTR" : "error") : "short", (double)took / 1e6);
    _exit(3);
}

/* One wait of ~WAIT_MS by kind k: the call's result, errno in *err. */
static int
wait_once(int k, int ep, int *err)
{
    struct timespec ts = {0, WAIT_MS * 1000000L};
    int rc = 0;

    switch (k) {
    case 0: rc = nanosleep(&ts, NULL); break;
    case 1:
        rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL); /* returns the error */
        if (rc) {
            *err = rc;
            return -1;
        }
        break;
    case 2:
        rc = (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        if (rc < 0 && errno == ETIMEDOUT)
            rc = 0;
        break;
    case 3: {
        int fds[2];
        struct pollfd p;
        if (pipe(fds) < 0)
            return 0;
        p.fd = fds[0];
        p.events = POLLIN;
        rc = poll(&p, 1, WAIT_MS);
        *err = errno;
        close(fds[0]);
        close(fds[1]);
        return rc < 0 ? -1 : rc;
    }
    case 4: {
        struct epoll_event ev;
        rc = epoll_wait(ep, &ev, 1, WAIT_MS);
        break;
    }
    }
    *err = errno;
    return rc;
}

static const char *const names[] = {"nanosleep", "clock_nanosleep", "futex(FUTEX_WAIT, 200ms)",
                                    "poll", "epoll_wait"};

static void *
waiter(void *arg)
{
    int k = (int)(intptr_t)arg, ep = epoll_create1(0), err = 0;
    int64_t end = now_ns() + (int64_t)(seconds * 1e9);

    while (now_ns() < end) {
        int64_t t0 = now_ns(), took;
        int rc = wait_once(k, ep, &err);
        took = now_ns() - t0;
        if (rc < 0 || rc > 0)
            fail(names[k], rc, err, took);
        if (took < (int64_t)(WAIT_MS - 1) * 1000000) /* a wait never ends early by itself */
            fail(names[k], rc, err, took);
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    pthread_t th[5];

    if (argc > 1)
        seconds = atof(argv[1]);
    for (int k = 0; k < 5; k++)
        pthread_create(&th[k], NULL, waiter, (void *)(intptr_t)k);
    printf("ready\n");
    fflush(stdout);
    for (int k = 0; k < 5; k++)
        pthread_join(th[k], NULL);
    printf("ok\n");
    return 0;
}
