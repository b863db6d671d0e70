/*
 * host_row.h: what the process-event host-matrix rows (test/progs/p_host_*.c of the
 * fork/exec/spawn kind) share: the end of a row (HOST-ROW-DONE, then block on
 * stdin until EOF), failure, and an optional self-request of a wall-clock
 * profile from the row's own server (PE_ROW_SELF_WALL=1, used by
 * test/e2e/e2e_host_proc.sh to make an exec land inside a running profile).
 */
#ifndef HOST_ROW_H
#define HOST_ROW_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static __attribute__((unused)) void
row_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "host-row failed: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* The row's work and checks passed: say so, then wait for EOF on stdin. */
static __attribute__((unused)) void
row_done(void)
{
    char buf[256];
    ssize_t n;

    printf("HOST-ROW-DONE\n");
    fflush(stdout);
    for (;;) {
        n = read(0, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    exit(0);
}

static __attribute__((unused)) void
row_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static __attribute__((unused)) double
row_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Wait up to secs for child pid; its status in *status.  0 when it ended,
 * -1 when it had not (it hung: killed and reaped), -2 when waitpid failed.
 */
static __attribute__((unused)) int
row_wait_child(pid_t pid, double secs, int *status)
{
    double t0 = row_now();
    pid_t w;

    *status = 0;
    while ((w = waitpid(pid, status, WNOHANG)) == 0 && row_now() - t0 < secs)
        row_sleep_ms(1);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, status, 0);
        return -1;
    }
    return w < 0 ? -2 : 0;
}

/*
 * PE_ROW_SELF_WALL=1: ask our own server (its address from PROFEP_PORT_FILE,
 * "%p" being our pid, waiting up to 3 s for it) for `path` (or for
 * PE_ROW_SELF_PATH when set) and leave the request running (the socket is
 * close-on-exec and never read).  Returns 0 when the request was sent.
 */
static __attribute__((unused)) int
row_self_request(const char *path)
{
    const char *pf = getenv("PROFEP_PORT_FILE"), *p;
    char file[512], addr[128], req[512];
    struct sockaddr_in sa;
    double until = row_now() + 3;
    int fd = -1, port;
    size_t w = 0;

    if (!pf || !getenv("PE_ROW_SELF_WALL"))
        return -1;
    if (getenv("PE_ROW_SELF_PATH"))
        path = getenv("PE_ROW_SELF_PATH");
    for (p = pf; *p && w + 16 < sizeof(file); p++) {
        if (p[0] == '%' && p[1] == 'p') {
            w += (size_t)snprintf(file + w, sizeof(file) - w, "%d", (int)getpid());
            p++;
        } else {
            file[w++] = *p;
        }
    }
    file[w] = '\0';
    for (;;) {
        FILE *f = fopen(file, "re");
        char *colon;
        if (f) {
            int ok = fgets(addr, sizeof(addr), f) != NULL;
            fclose(f);
            if (ok && (colon = strrchr(addr, ':')) && (port = atoi(colon + 1)) > 0)
                break;
        }
        if (row_now() > until)
            return -1;
        row_sleep_ms(5);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
    if (write(fd, req, strlen(req)) < 0) {
        close(fd);
        return -1;
    }
    unlink(file); /* the next image of this pid writes its own */
    return 0;     /* fd stays open (close-on-exec): the request keeps running */
}

/* A thread that keeps a CPU busy until the volatile int it is given is set. */
static __attribute__((unused)) void *
row_spinner(void *stop)
{
    volatile unsigned long x = 0;

    while (!*(volatile int *)stop)
        x++;
    return NULL;
}

#endif /* HOST_ROW_H */
