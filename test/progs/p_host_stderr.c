/*
 * p_host_stderr: a program that closes fd 2 first thing in main and opens a
 * data file in its place (argv[1]), writes records to it for ~1.5 s, and
 * checks that the file holds only its records: a preloaded library must
 * not write its lines into it.  Host-matrix row (test/e2e/e2e_host_matrix.sh;
 * without an argument it uses a temporary file).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    char tmpl[] = "/tmp/p_host_stderr.XXXXXX", buf[8192], line[64], c;
    const char *path = argc > 1 ? argv[1] : NULL;
    int fd, i, len, bad = 0;
    size_t off = 0;
    ssize_t r;

    close(2);
    fd = path ? open(path, O_RDWR | O_CREAT | O_TRUNC, 0644) : mkstemp(tmpl);
    if (fd != 2)
        return 1; /* nowhere to complain: stderr is gone */
    for (i = 0; i < 30; i++) {
        len = snprintf(line, sizeof(line), "record %d\n", i);
        if (write(2, line, (size_t)len) != len)
            return 1;
        usleep(50000);
    }
    if (lseek(2, 0, SEEK_SET) < 0 || (r = read(2, buf, sizeof(buf) - 1)) < 0)
        return 1;
    buf[r] = '\0';
    for (i = 0; i < 30; i++) {
        len = snprintf(line, sizeof(line), "record %d\n", i);
        if (strncmp(buf + off, line, (size_t)len)) {
            bad = 1;
            break;
        }
        off += (size_t)len;
    }
    if (bad || off != (size_t)r) {
        printf("p_host_stderr: the data file holds more than the program's records:\n%s", buf);
        return 1;
    }
    if (!path)
        unlink(tmpl);
    printf("HOST-ROW-DONE\n");
    fflush(stdout);
    for (;;) { /* until stdin's EOF */
        r = read(0, &c, 1);
        if (r == 0 || (r < 0 && errno != EINTR))
            break;
    }
    return 0;
}
