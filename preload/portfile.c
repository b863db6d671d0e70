/*
 * portfile.c: the port file (portfile.h): one writer, so that the server's
 * and a tree member's files are made alike (whole, renamed, never through a
 * symbolic link).  What path and which host stays with the callers.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd.h"
#include "portfile.h"

int
pe_portfile_write(const char *path, const char *host, int port)
{
    char tmp[PATH_MAX + 32], line[160];
    const char *slash = strrchr(path, '/');
    struct stat st;
    int fd, n, err;

    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return -ELOOP;
    snprintf(tmp, sizeof(tmp), "%.*s/.profep-port.XXXXXX", slash ? (int)(slash - path) : 1,
             slash ? path : ".");
    n = snprintf(line, sizeof(line), "%s:%d\n", host, port);
    pe_fd_born_begin(); /* out of the program's way while written (fd.h) */
    fd = pe_fd_move_high(mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW));
    err = errno;
    pe_fd_born_end();
    if (fd < 0)
        return -err;
    errno = 0;
    err = write(fd, line, (size_t)n) == n ? 0 : errno ? errno : EIO; /* short: EIO */
    if (close(fd) < 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) < 0)
        err = errno;
    if (err)
        unlink(tmp);
    return -err;
}
