/* p_host_seccomp: a program installs seccomp filters while it is profiled:
 * first on its main thread (prctl), answering EPERM to timer_create and
 * rt_tgsigqueueinfo, then on every thread (syscall(SYS_seccomp) with TSYNC).
 * Before the first call goes on, the library steps aside: its threads stopped
 * and gone (Threads: in /proc/self/status counts the program's three), no
 * server answers any more, no timer is left; the program's own timer_create
 * is refused as it asked, its threads work on, and the second filter is
 * installed on them.  Nothing dies.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "p_host.h"
#include "p_host_seccomp.h"

static volatile int stop;

static void *
work(void *arg)
{
    while (!stop) {
        free(malloc(200));
        row_spin(0.005);
    }
    return NULL;
}

int
main(void)
{
    pthread_t t[2];
    timer_t id;
    struct sigevent sev = {.sigev_notify = SIGEV_NONE};
    char addr[64], body[256];
    int n;

    if (row_addr_of(getpid(), addr, sizeof(addr), 10) < 0)
        row_fail("no port file");
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, NULL);
    row_spin(1.2); /* inside the harness's profiles */
    if (row_seccomp(SECCOMP_RET_ERRNO | EPERM, 0))
        row_fail("prctl seccomp: %s", strerror(errno));
    if ((n = row_status_threads()) != 3)
        row_fail("%d threads after the filter, want the program's 3", n);
    if (timer_create(CLOCK_MONOTONIC, &sev, &id) == 0 || errno != EPERM)
        row_fail("the program's own timer_create was not refused");
    if ((n = row_http(addr, "/debug/pprof/heap?debug=1", body, sizeof(body), NULL)) != -1)
        row_fail("the server still answers (%d) after the filter", n);
    row_spin(0.5);
    if (row_seccomp(SECCOMP_RET_ERRNO | EPERM, 1))
        row_fail("seccomp TSYNC: %s", strerror(errno));
    row_spin(0.5);
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    row_done();
}
