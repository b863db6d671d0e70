/* p_host_signalfd: the program blocks SIGPROF in every thread and reads it
 * from a signalfd (as event-loop programs do), while it sends itself SIGPROF
 * with kill() every 20 ms.  Whatever of ours the signalfd also returns, the
 * program must receive every one of its own (SI_USER from its pid) and go on.
 * Two threads burn CPU meanwhile.  Prints "figure:" lines with what it saw.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>

#include "p_host.h"

static volatile int stop;

static void *
burn(void *arg)
{
    while (!stop)
        row_spin(0.01);
    return NULL;
}

int
main(void)
{
    struct signalfd_siginfo si;
    pthread_t t[2];
    sigset_t prof;
    int fd, sent = 0, own = 0, other = 0;
    double end, next;

    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    if (sigprocmask(SIG_BLOCK, &prof, NULL))
        row_fail("sigprocmask");
    fd = signalfd(-1, &prof, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0)
        row_fail("signalfd: %s", strerror(errno));
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, burn, NULL);
    end = row_now() + 3;
    next = row_now();
    while (row_now() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (row_now() >= next && sent < 120) {
            kill(getpid(), SIGPROF);
            sent++;
            next += 0.02;
        }
        if (poll(&p, 1, 5) < 0 && errno != EINTR)
            row_fail("poll: %s", strerror(errno));
        while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            if ((int)si.ssi_signo != SIGPROF)
                row_fail("signalfd gave signal %u", si.ssi_signo);
            if (si.ssi_code == SI_USER && (pid_t)si.ssi_pid == getpid())
                own++;
            else
                other++;
        }
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    /* the last ones may still be pending */
    for (int k = 0; k < 50 && own < sent; k++) {
        row_sleep(0.01);
        while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            if (si.ssi_code == SI_USER && (pid_t)si.ssi_pid == getpid())
                own++;
            else
                other++;
    }
    if (own != sent)
        row_fail("signalfd: %d of the program's own %d SIGPROF received", own, sent);
    printf("figure: signalfd row: own SIGPROF %d of %d, others read %s\n", own, sent,
           other ? ">0" : "0");
    row_done();
}
