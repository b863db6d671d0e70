/*
 * p_fd_rawclose: closes every socket it did not create with the raw close
 * system call (no interposer sees it), puts a listening socket of its own at
 * the first such number (raw dup3), and checks that its client is answered
 * by itself; then idles 2.5 s so the caller can measure the process's CPU.
 * Prints DONE, then waits for stdin's EOF.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int
main(void)
{
    struct sockaddr_in sin;
    struct pollfd p;
    socklen_t len = sizeof(sin);
    char link[64], buf[16] = "", c;
    struct dirent *de;
    int target = -1, l, cl, a;
    ssize_t n;
    DIR *d;

    usleep(500000);
    if (!(d = opendir("/proc/self/fd")))
        return 1;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        if ((n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1)) <= 0)
            continue;
        link[n] = '\0';
        if (strncmp(link, "socket:", 7))
            continue;
        if (target < 0)
            target = atoi(de->d_name);
        syscall(SYS_close, atoi(de->d_name));
    }
    closedir(d);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((l = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(l, (struct sockaddr *)&sin, len) < 0 ||
        listen(l, 8) < 0 || getsockname(l, (struct sockaddr *)&sin, &len) < 0)
        return perror("listen"), 1;
    if (target >= 0 && syscall(SYS_dup3, l, target, 0) == target) {
        syscall(SYS_close, l);
        l = target;
    }
    usleep(2200000); /* a poll begun on the closed socket times out meanwhile */
    if ((cl = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(cl, (struct sockaddr *)&sin, sizeof(sin)) < 0)
        return perror("connect"), 1;
    usleep(300000);
    p.fd = l;
    p.events = POLLIN;
    if (poll(&p, 1, 500) != 1 || (a = accept(l, NULL, NULL)) < 0) {
        fprintf(stderr, "p_fd_rawclose: our own client was taken by someone else\n");
        return 1;
    }
    if (write(a, "mine", 4) != 4 || (n = read(cl, buf, sizeof(buf) - 1)) != 4)
        return 1;
    close(a);
    close(cl);
    usleep(2500000);
    printf("DONE\n");
    fflush(stdout);
    for (;;) {
        n = read(0, &c, 1);
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    return 0;
}
