/*
 * p_host_vfork (host-matrix row): vfork + execl("/bin/true") in a loop for
 * PE_ROW_SECONDS (default 3), with every tenth child exec'ing a path that does
 * not exist (exit 127 from the child), and a second thread working; every
 * status is checked.  CPython's subprocess and many shells start children so.
 * The vfork child runs our exec wrapper in the parent's memory and with the
 * parent thread's TLS (issue 15, point 2: it used to clear the parent's timer
 * entries, leaking timers).  Prints the children run on stderr.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "host_row.h"

static volatile int stop;

int
main(void)
{
    double secs = getenv("PE_ROW_SECONDS") ? atof(getenv("PE_ROW_SECONDS")) : 3;
    double t0 = row_now();
    pthread_t th;
    long n = 0;

    if (pthread_create(&th, NULL, row_spinner, (void *)&stop) != 0)
        row_fail("pthread_create");
    while (row_now() - t0 < secs) {
        int bad = n % 10 == 9, status;
        pid_t pid = vfork();

        if (pid < 0)
            row_fail("vfork: %s", strerror(errno));
        if (pid == 0) {
            if (bad)
                execl("/nonexistent/pe-true", "pe-true", (char *)NULL);
            else
                execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
            if (errno != EINTR)
                row_fail("waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != (bad ? 127 : 0))
            row_fail("child %ld: status 0x%x", n, status);
        n++;
    }
    stop = 1;
    pthread_join(th, NULL);
    fprintf(stderr, "vfork children: %ld\n", n);
    row_done();
    return 0;
}
