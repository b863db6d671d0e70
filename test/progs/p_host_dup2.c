/*
 * p_host_dup2: a program that dup2s its own pipe onto every socket it did
 * not create (a preloaded library's: found in /proc/self/fd), writes through
 * each number and reads back exactly what it wrote, nothing more, even while
 * that library answers requests.  Host-matrix row (test/e2e/e2e_host_matrix.sh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXFD 64

static int
foreign_sockets(int *out, int max)
{
    char link[64];
    struct dirent *de;
    int n = 0, fd;
    ssize_t len;
    DIR *d = opendir("/proc/self/fd");

    if (!d)
        return 0;
    while ((de = readdir(d)) && n < max) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        fd = atoi(de->d_name);
        if ((len = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1)) <= 0)
            continue;
        link[len] = '\0';
        if (!strncmp(link, "socket:", 7))
            out[n++] = fd;
    }
    closedir(d);
    return n;
}

int
main(void)
{
    int fds[MAXFD], n, i, p[2], bad = 0;
    char msg[64], buf[256], c;
    ssize_t r;

    usleep(500000); /* the preloaded server is up */
    n = foreign_sockets(fds, MAXFD);
    for (i = 0; i < n; i++) {
        if (pipe(p) < 0) {
            perror("pipe");
            return 1;
        }
        if (dup2(p[1], fds[i]) != fds[i]) {
            fprintf(stderr, "p_host_dup2: dup2 onto %d: %s\n", fds[i], strerror(errno));
            return 1;
        }
        snprintf(msg, sizeof(msg), "data for fd %d\n", fds[i]);
        if (write(fds[i], msg, strlen(msg)) != (ssize_t)strlen(msg)) {
            fprintf(stderr, "p_host_dup2: write to %d: %s\n", fds[i], strerror(errno));
            return 1;
        }
        /* Hold the number a while: a request in flight on the old socket
           ends meanwhile, and must not write its answer into our pipe. */
        usleep(300000);
        close(fds[i]);
        close(p[1]);
        r = read(p[0], buf, sizeof(buf) - 1);
        buf[r > 0 ? r : 0] = '\0';
        if (strcmp(buf, msg) || read(p[0], &c, 1) != 0) {
            fprintf(stderr, "p_host_dup2: fd %d: read back \"%s\" (and more?) not \"%s\"\n", fds[i],
                    buf, msg);
            bad = 1;
        }
        close(p[0]);
    }
    if (bad)
        return 1;
    printf("HOST-ROW-DONE\n");
    fflush(stdout);
    for (;;) { /* until stdin's EOF */
        r = read(0, &c, 1);
        if (r == 0 || (r < 0 && errno != EINTR))
            break;
    }
    return 0;
}
