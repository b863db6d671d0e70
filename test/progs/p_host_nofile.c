/*
 * p_host_nofile: a program that lowers RLIMIT_NOFILE to 16 after start-up
 * and opens files until EMFILE: it must get every number below 16 it has
 * not opened itself.  A library's short-lived descriptor (a /proc read, a
 * request being answered: the row's profiles hold their connections for
 * 2.5 s, longer at load) may take one for a moment, so the check is
 * retried for up to 30 s, as p_host_nofile.h's rows do (5 s was once too
 * short at CI's load: 2 short); a descriptor held for good fails every try.
 * Host-matrix row (test/e2e/e2e_host_matrix.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define LIMIT 16

int
main(void)
{
    struct rlimit rl;
    int opened[LIMIT], nmine = 0, n, fd, try, i, got = 0;
    char c;
    ssize_t r;

    usleep(500000); /* after the libraries' start-up */
    /* What it inherited (0-2, maybe more): whatever crossed exec, so not
       close-on-exec; what libraries open for themselves is (or leaks). */
    for (fd = 0; fd < LIMIT; fd++)
        if (fcntl(fd, F_GETFD) == 0)
            nmine++;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return perror("getrlimit"), 1;
    rl.rlim_cur = LIMIT;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        return perror("setrlimit"), 1;
    for (try = 0; try < 300 && got != LIMIT - nmine; try++) {
        if (try)
            usleep(100000);
        for (n = 0; n < LIMIT && (fd = open("/dev/null", O_RDONLY)) >= 0; n++)
            opened[n] = fd;
        if (fd < 0 && errno != EMFILE) {
            fprintf(stderr, "p_host_nofile: open: %s\n", strerror(errno));
            return 1;
        }
        got = n;
        for (i = 0; i < n; i++)
            close(opened[i]);
    }
    if (got != LIMIT - nmine) {
        fprintf(stderr,
                "p_host_nofile: RLIMIT_NOFILE=%d with %d open: got %d descriptors, not %d\n", LIMIT,
                nmine, got, LIMIT - nmine);
        return 1;
    }
    printf("HOST-ROW-DONE\n");
    fflush(stdout);
    for (;;) { /* until stdin's EOF */
        r = read(0, &c, 1);
        if (r == 0 || (r < 0 && errno != EINTR))
            break;
    }
    return 0;
}
