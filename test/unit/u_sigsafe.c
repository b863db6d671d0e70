/*
 * u_sigsafe.c: which threads may be signalled (sampler/sigsafe.h).  Threads
 * parked in nanosleep, a timed futex wait, poll and a read on a socket with
 * SO_RCVTIMEO are not (the reason names the call; the PC is given); one in an
 * untimed futex wait, a read on a pipe and a read on a socket without a
 * timeout are; so is a spinning thread; a thread gone is -ESRCH.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../../sampler/sigsafe.h"
#include "pe_test.h"

enum { K_SLEEP, K_TFUTEX, K_POLL, K_SOCK_TIMED, K_FUTEX, K_PIPE, K_SOCK, K_SPIN, K_N };
/* the call each parks in (glibc's nanosleep is clock_nanosleep) */
static const long want_nr[K_N] = {SYS_clock_nanosleep, SYS_futex, SYS_poll, SYS_read,
                                  SYS_futex,           SYS_read,  SYS_read, -1};
static volatile pid_t tids[K_N];
static volatile int stop;
static int futex_word, pipefd[2], sp_timed[2], sp_plain[2];

static void *
parked(void *arg)
{
    int k = (int)(long)arg;
    char c;

    tids[k] = (pid_t)syscall(SYS_gettid);
    while (!stop) {
        struct timespec ts = {0, 100 * 1000000};
        struct pollfd p = {pipefd[0], POLLPRI, 0};
        switch (k) {
        case K_SLEEP: nanosleep(&ts, NULL); break;
        case K_TFUTEX: syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0); break;
        case K_POLL: poll(&p, 1, 100); break;
        case K_SOCK_TIMED: (void)!read(sp_timed[0], &c, 1); break;
        case K_FUTEX: syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0); break;
        case K_PIPE: (void)!read(pipefd[0], &c, 1); break;
        case K_SOCK: (void)!read(sp_plain[0], &c, 1); break;
        case K_SPIN: break;
        }
    }
    return NULL;
}

int
main(void)
{
    pthread_t th[K_N];
    struct timeval tv = {5, 0};
    pe_sigsafe_t ss;

    if (pipe(pipefd) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp_timed) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sp_plain) < 0)
        return 77;
    setsockopt(sp_timed[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (int k = 0; k < K_N; k++)
        pthread_create(&th[k], NULL, parked, (void *)(long)k);
    for (int k = 0; k < K_N; k++) {
        int rc = -1, tries;
        while (!tids[k])
            sched_yield();
        /* until it is seen in its call (a parked thread loops now and then) */
        for (tries = 0; tries < 500; tries++) {
            rc = pe_sigsafe_check(tids[k], &ss);
            if (k == K_SPIN ? rc == 1 : ss.nr == want_nr[k])
                break;
            usleep(10000);
        }
        if (k <= K_SOCK_TIMED) {
            CHECKF(rc == 0, "thread %d: %d (nr %ld)", k, rc, ss.nr);
            CHECKF(ss.pc != 0, "thread %d: no pc", k);
            CHECKF(strstr(ss.why, "a signal would interrupt") != NULL, "thread %d: %s", k, ss.why);
        } else {
            CHECKF(rc == 1, "thread %d: %d (nr %ld: %s)", k, rc, ss.nr, ss.why);
        }
    }
    for (int tries = 0; tries < 100 && pe_sigsafe_check(tids[K_SLEEP], &ss) != 0; tries++)
        usleep(10000); /* between two sleeps, for a moment */
    CHECKF(strstr(ss.why, "nanosleep") != NULL, "%s", ss.why);
    stop = 1;
    syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 100, NULL, NULL, 0);
    (void)!write(pipefd[1], "x", 1);
    (void)!write(sp_timed[1], "x", 1);
    (void)!write(sp_plain[1], "x", 1);
    for (int k = 0; k < K_N; k++)
        pthread_join(th[k], NULL);
    CHECK(pe_sigsafe_check(tids[K_SLEEP], &ss) == -ESRCH);
    return pe_test_done();
}
