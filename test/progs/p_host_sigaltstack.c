/* p_host_sigaltstack: threads with an alternate signal stack whose SIGUSR1
 * handler (SA_ONSTACK) runs on it and burns CPU there, so that samples land
 * on the alternate stack; each thread raises SIGUSR1 at itself in a loop.
 * Checks: every handler ran on its thread's alternate stack, every raise was
 * handled once, the alternate stack is disabled again on the way out
 * (SS_DISABLE is honoured) and the threads' results are right.
 */
#include <pthread.h>
#include <signal.h>

#include "p_host.h"

#define NT 3
#define ALT (64 * 1024)

static __thread char *alt_lo;
static __thread int handled, off_stack;

static void
on_usr1(int sig)
{
    char here;

    if (&here < alt_lo || &here >= alt_lo + ALT)
        off_stack++;
    handled++;
    row_spin(0.002);
}

static void *
work(void *arg)
{
    stack_t ss = {0}, old;
    int sent = 0;
    double end = row_now() + 2.5;

    alt_lo = malloc(ALT);
    if (!alt_lo)
        row_fail("malloc");
    ss.ss_sp = alt_lo;
    ss.ss_size = ALT;
    if (sigaltstack(&ss, NULL))
        row_fail("sigaltstack: %s", strerror(errno));
    while (row_now() < end) {
        pthread_kill(pthread_self(), SIGUSR1);
        sent++;
        row_spin(0.002);
    }
    ss.ss_flags = SS_DISABLE;
    if (sigaltstack(&ss, &old) || (old.ss_flags & SS_ONSTACK))
        row_fail("sigaltstack disable");
    if (handled != sent || off_stack)
        row_fail("thread: %d raised, %d handled, %d off the alternate stack", sent, handled,
                 off_stack);
    free(alt_lo);
    *(int *)arg = handled;
    return NULL;
}

int
main(void)
{
    struct sigaction sa;
    pthread_t t[NT];
    int n[NT];

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL))
        row_fail("sigaction");
    for (int i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, work, &n[i]);
    for (int i = 0; i < NT; i++) {
        pthread_join(t[i], NULL);
        if (n[i] < 10)
            row_fail("thread %d handled only %d", i, n[i]);
    }
    row_done();
}
