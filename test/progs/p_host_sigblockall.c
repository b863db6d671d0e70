/* p_host_sigblockall: every signal blocked in every thread (the mask is set
 * before the threads start, so they inherit it).  Four threads burn CPU and
 * allocate for ~2.5 s while sampled; then each thread (and main) unblocks
 * everything, taking whatever SIGPROF of ours is still pending, and must go
 * on: results checked, nothing killed.
 */
#include <pthread.h>
#include <signal.h>

#include "p_host.h"

#define NT 4

static void *
work(void *arg)
{
    unsigned long sum = 0;
    double end = row_now() + 2.5;
    sigset_t none;

    while (row_now() < end) {
        for (int i = 0; i < 64; i++) {
            unsigned char *p = malloc(64 + (size_t)i * 32);
            if (!p)
                row_fail("malloc");
            p[0] = (unsigned char)i;
            sum += p[0];
            free(p);
        }
        sum += row_spin(0.001) & 1;
    }
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL); /* pending signals delivered now */
    row_spin(0.05);
    *(unsigned long *)arg = sum;
    return NULL;
}

int
main(void)
{
    pthread_t t[NT];
    unsigned long res[NT];
    sigset_t all, cur;

    sigfillset(&all);
    if (sigprocmask(SIG_BLOCK, &all, NULL))
        row_fail("sigprocmask");
    for (int i = 0; i < NT; i++)
        if (pthread_create(&t[i], NULL, work, &res[i]))
            row_fail("pthread_create");
    row_spin(2.5);
    for (int i = 0; i < NT; i++) {
        pthread_join(t[i], NULL);
        if (res[i] == 0)
            row_fail("thread %d did no work", i);
    }
    /* the mask is still whole in main (nobody changed it behind our back) */
    sigprocmask(SIG_SETMASK, NULL, &cur);
    if (!sigismember(&cur, SIGPROF) || !sigismember(&cur, SIGUSR1))
        row_fail("main's mask changed");
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    row_spin(0.1);
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL); /* and blocked again while idle */
    row_done();
}
