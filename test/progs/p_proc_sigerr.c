/*
 * p_proc_sigerr: signal, bsd_signal, ssignal and sigset refuse SIG_ERR with
 * EINVAL and leave the disposition alone (issue 15, point 8: our wrappers
 * used to install (void *)-1 as a handler).  glibc's signal and bsd_signal
 * refuse it; its sigset (2.36) hands it to the kernel, and ours refuses it
 * too (a handler at -1 only crashes the program later).  Prints "sigerr ok".
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>

sighandler_t bsd_signal(int signum, sighandler_t handler);
sighandler_t ssignal(int signum, sighandler_t handler);

static int failures;

static void
expect(const char *what, sighandler_t got)
{
    struct sigaction sa;

    if (got != SIG_ERR || errno != EINVAL) {
        printf("%s(SIGUSR1, SIG_ERR) returned %p errno %d, not SIG_ERR/EINVAL\n", what, (void *)got,
               errno);
        failures++;
    }
    if (sigaction(SIGUSR1, NULL, &sa) != 0 || sa.sa_handler != SIG_DFL) {
        printf("%s(SIGUSR1, SIG_ERR) changed the disposition\n", what);
        failures++;
        signal(SIGUSR1, SIG_DFL);
    }
    errno = 0;
}

int
main(void)
{
    expect("signal", signal(SIGUSR1, SIG_ERR));
    expect("bsd_signal", bsd_signal(SIGUSR1, SIG_ERR));
    expect("ssignal", ssignal(SIGUSR1, SIG_ERR));
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    expect("sigset", sigset(SIGUSR1, SIG_ERR));
    if (signal(0, SIG_IGN) != SIG_ERR || errno != EINVAL) {
        printf("signal(0) accepted\n");
        failures++;
    }
    if (!failures)
        printf("sigerr ok\n");
    return failures != 0;
}
