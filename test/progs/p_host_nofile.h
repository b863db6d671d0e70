/* p_host_nofile.h: the body of the rows p_host_nofile20 and p_host_nofile64,
 * started under `ulimit -n NOFILE` (their .ulimit file): with the library's
 * server and every kind of profiling running, the program opens /dev/null
 * until EMFILE.  It must get every number below the limit but those it
 * inherited and the library's own, and the library must hold at most
 * PE_OURS of them for good (fd.h: libunwind's memory-check pipes, one per
 * flavour of its code, the second from the first stack capture on; the
 * listening socket; the process tree's socket), meant to sit at the top of the range
 * (they used to sit in the middle, from half the limit up).
 * Requests take a descriptor or two for a moment (a connection, a /proc
 * file), so the count is retried for up to 30 s; one held for good fails
 * every try.
 */
#include <fcntl.h>
#include <sys/resource.h>

#include "p_host.h"

#define PE_OURS 6

int
main(void)
{
    struct rlimit rl;
    int lim, inherited = 0, ours = 0, lowest_ours = -1, want, got = 0, n, fd, *opened;
    double end;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur != NOFILE)
        row_fail("RLIMIT_NOFILE is not %d: run under `ulimit -n %d`", NOFILE, NOFILE);
    lim = (int)rl.rlim_cur;
    row_sleep(0.7); /* after the library's start-up; the profiles are under way */
    if (!(opened = calloc((size_t)lim, sizeof(*opened))))
        row_fail("calloc");
    end = row_now() + 30;
    do {
        /* Inherited: open and not close-on-exec.  Close-on-exec ones below the
           limit are the library's (this program opened none yet). */
        inherited = ours = 0;
        lowest_ours = -1;
        for (fd = 0; fd < lim; fd++) {
            int f = fcntl(fd, F_GETFD);
            if (f < 0)
                continue;
            if (f & FD_CLOEXEC) {
                ours++;
                if (lowest_ours < 0)
                    lowest_ours = fd;
            } else {
                inherited++;
            }
        }
        want = lim - inherited - PE_OURS;
        for (n = 0; n < lim && (fd = open("/dev/null", O_RDONLY)) >= 0; n++)
            opened[n] = fd;
        if (fd < 0 && errno != EMFILE)
            row_fail("open: %s", strerror(errno));
        got = n;
        for (int i = 0; i < n; i++)
            close(opened[i]);
        if (got >= want && ours <= PE_OURS)
            break;
        row_sleep(0.1);
    } while (row_now() < end);
    printf("figure: nofile%d: the program got %d descriptors (%d inherited), the library holds "
           "%d from fd %d\n",
           lim, got, inherited, ours, lowest_ours);
    /* Where ours sit is a figure, not a check: one of them was seen at fd 4 for
       good in a CI run (not understood yet; the program still got every other number). */
    if (got < want || ours > PE_OURS)
        row_fail("ulimit -n %d, %d inherited: got %d descriptors, want %d; the library holds %d "
                 "(at most %d) from fd %d",
                 lim, inherited, got, want, ours, PE_OURS, lowest_ours);
    free(opened);
    row_done();
}
