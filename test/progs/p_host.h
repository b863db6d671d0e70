/*
 * p_host.h: what every host-matrix row (test/progs/p_host_<row>.c, run by
 * test/e2e/e2e_host_matrix.sh) shares: failing with a message, sleeping and
 * spinning that survive EINTR, the HOST-ROW-DONE ending (then read stdin to
 * EOF and exit 0), and a tiny HTTP client for rows that ask their own or a
 * child's endpoints (the port comes from PROFEP_PORT_FILE, %p = pid).
 */
#ifndef P_HOST_H
#define P_HOST_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void __attribute__((format(printf, 1, 2), noreturn, unused)) row_fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ROW FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static double __attribute__((unused)) row_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep s seconds of wall time whatever signals arrive. */
static void __attribute__((unused)) row_sleep(double s)
{
    double end = row_now() + s, left;

    while ((left = end - row_now()) > 0) {
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Burn CPU for s seconds; returns a value so the loop is not optimised out. */
static unsigned long __attribute__((unused)) row_spin(double s)
{
    volatile unsigned long x = 0;
    double end = row_now() + s;

    while (row_now() < end)
        for (int i = 0; i < 10000; i++)
            x += (unsigned long)i * 7;
    return x;
}

/* PE_HOST_LONG=1 (make stress): rows may do more. */
static int __attribute__((unused)) row_long(void)
{
    const char *v = getenv("PE_HOST_LONG");
    return v && *v == '1';
}

/* The row's work and checks passed: say so, wait for EOF on stdin, exit 0. */
static void __attribute__((noreturn, unused)) row_done(void)
{
    char buf[256];
    ssize_t n;

    printf("HOST-ROW-DONE\n");
    fflush(stdout);
    for (;;) {
        n = read(0, buf, sizeof(buf));
        if (n == 0)
            break;
        if (n < 0 && errno != EINTR)
            row_fail("read stdin: %s", strerror(errno));
    }
    exit(0);
}

/* The "127.0.0.1:PORT" the library of process pid serves, or -1 (waits up to
   `wait_s` for the port file). */
static int __attribute__((unused)) row_addr_of(pid_t pid, char *out, size_t cap, double wait_s)
{
    const char *pat = getenv("PROFEP_PORT_FILE");
    char path[512], *pp;
    double end = row_now() + wait_s;

    if (!pat || !(pp = strstr(pat, "%p")))
        return -1;
    snprintf(path, sizeof(path), "%.*s%d%s", (int)(pp - pat), pat, (int)pid, pp + 2);
    do {
        FILE *f = fopen(path, "r");
        if (f) {
            int ok = fgets(out, (int)cap, f) != NULL;
            fclose(f);
            if (ok) {
                out[strcspn(out, "\r\n")] = 0;
                return 0;
            }
        }
        row_sleep(0.02);
    } while (row_now() < end);
    return -1;
}

/* GET path from addr; the status (or -1), the body's first cap-1 bytes in body
   (NUL-terminated), the whole body's length in *len if len. */
static int __attribute__((unused))
row_http(const char *addr, const char *path, char *body, size_t cap, size_t *len)
{
    struct sockaddr_in sa;
    struct timeval tv = {60, 0};
    char req[1024], buf[4096], *colon = strchr(addr, ':');
    size_t got = 0, blen = 0;
    int fd, status = -1, in_body = 0;
    ssize_t n;

    if (body && cap)
        body[0] = 0;
    if (!colon)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)atoi(colon + 1));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    /* Host names us as curl does (the server answers 421 to a Host not its own) */
    n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1%s\r\n\r\n", path, colon);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    /* headers are small: keep the first 4 KiB to find the status and the end */
    for (;;) {
        n = read(fd, buf + (in_body ? 0 : got), in_body ? sizeof(buf) : sizeof(buf) - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (in_body) {
            if (body && blen + 1 < cap)
                memcpy(body + blen, buf, blen + (size_t)n < cap - 1 ? (size_t)n : cap - 1 - blen);
            blen += (size_t)n;
            continue;
        }
        got += (size_t)n;
        buf[got] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (end) {
            size_t rest = got - (size_t)(end + 4 - buf);
            sscanf(buf, "HTTP/%*s %d", &status);
            in_body = 1;
            if (body && cap > 1)
                memcpy(body, end + 4, rest < cap - 1 ? rest : cap - 1);
            blen = rest;
        } else if (got >= sizeof(buf) - 1) {
            break;
        }
    }
    close(fd);
    if (body && cap)
        body[blen < cap - 1 ? blen : cap - 1] = 0;
    if (len)
        *len = blen;
    return status;
}

/* Threads: of /proc/self/status, -1 if unreadable (not /proc/self/task: a look at it
   from a process alone makes the library step aside, docs/GUIDE.md "A process that must
   be alone", and so hides the very threads counted). */
static int __attribute__((unused)) row_status_threads(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "re");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

#endif
