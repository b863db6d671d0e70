/* p_host_ownsigprof: after ~0.8 s of work (a profile of ours running), the
 * program installs its own SIGPROF handler and an ITIMER_PROF of 10 ms, as a
 * program's own profiler does, and burns CPU for 2 s.  Checks: sigaction
 * reports the program's handler back, the handler gets ticks (at least a
 * quarter of the CPU time's worth), and once it removes the timer and
 * restores SIG_DFL nothing kills it.
 */
#include <signal.h>
#include <sys/time.h>

#include "p_host.h"

static volatile int ticks;

static void
on_prof(int sig)
{
    ticks++;
}

int
main(void)
{
    struct sigaction sa, cur;
    struct itimerval it = {{0, 10000}, {0, 10000}}, off = {{0, 0}, {0, 0}};
    double c0, c1;

    row_spin(0.8);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL))
        row_fail("sigaction");
    if (sigaction(SIGPROF, NULL, &cur) || cur.sa_handler != on_prof)
        row_fail("sigaction does not report the program's handler");
    c0 = (double)clock() / CLOCKS_PER_SEC;
    if (setitimer(ITIMER_PROF, &it, NULL))
        row_fail("setitimer");
    row_spin(2);
    setitimer(ITIMER_PROF, &off, NULL);
    c1 = (double)clock() / CLOCKS_PER_SEC;
    if (ticks < (int)((c1 - c0) * 100 / 4))
        row_fail("own SIGPROF handler: %d ticks for %.2f s of CPU", ticks, c1 - c0);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGPROF, &sa, NULL);
    row_spin(0.3);
    printf("figure: ownsigprof: %d own ticks for %.2f s CPU\n", ticks, c1 - c0);
    row_done();
}
