/*
 * p_hammer: the load client of the stress tests (not preloaded).
 *   p_hammer HOST:PORT SECONDS CLIENTS [-a] PATH...
 * CLIENTS threads each send one request per connection, cycling through the
 * PATHs ("POST:/path|body" posts the body), until SECONDS have passed; each
 * reads the whole response.  With -a, every 7th request of a client hangs up
 * after the first bytes of the response (a client that leaves mid-response).
 * Prints the figures (requests, statuses, failures, bytes, slowest) and exits
 * 1 if any request failed: a 5xx other than 503, a reset, no status line or a
 * 30 s stall.  A 503 or a 409 under load is a correct answer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in addr;
static char host_hdr[128]; /* HOST:PORT, as the server must be named (it answers 421 otherwise) */
static double deadline;
static int npaths, abort_some;
static char **paths;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long status_count[600], failures, resets, nostatus, stalls, aborted, total;
static long long bytes;
static double slowest;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One request; returns the status, 0 for an early hang-up of ours, or < 0. */
static int
one(const char *spec, int hang_up, long long *got)
{
    char req[8192], buf[65536];
    const char *body = NULL, *path = spec;
    char pathbuf[4096];
    struct timeval tv = {30, 0};
    int fd, n, len, status = -1;
    size_t off = 0;

    if (!strncmp(spec, "POST:", 5)) {
        const char *bar = strchr(spec + 5, '|');
        size_t pl = bar ? (size_t)(bar - spec - 5) : strlen(spec + 5);

        snprintf(pathbuf, sizeof(pathbuf), "%.*s", (int)pl, spec + 5);
        path = pathbuf;
        body = bar ? bar + 1 : "";
    }
    if (body)
        len = snprintf(req, sizeof(req),
                       "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %zu\r\n"
                       "Connection: close\r\n\r\n%s",
                       path, host_hdr, strlen(body), body);
    else
        len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                       path, host_hdr);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -EMFILE;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        send(fd, req, (size_t)len, MSG_NOSIGNAL) != len) {
        status = -ECONNREFUSED;
        goto out;
    }
    while ((n = (int)recv(fd, buf + (off < 16 ? off : 0),
                          off < 16 ? sizeof(buf) - off : sizeof(buf), 0)) > 0) {
        if (off < 16 && off + (size_t)n >= 12 && !strncmp(buf, "HTTP/1.", 7))
            status = atoi(buf + 9);
        off += (size_t)n;
        if (hang_up && off >= 12) {
            status = 0;
            break;
        }
    }
    if (n < 0 && status != 0)
        status = errno == EAGAIN ? -ETIMEDOUT : -ECONNRESET;
out:
    *got = (long long)off;
    close(fd);
    return status;
}

static void *
client(void *arg)
{
    long id = (long)arg, k = 0;

    while (now() < deadline) {
        const char *spec = paths[(id + k) % npaths];
        int hang = abort_some && k % 7 == 6;
        long long got = 0;
        double t0 = now(), dt;
        int st = one(spec, hang, &got);

        dt = now() - t0;
        k++;
        pthread_mutex_lock(&lock);
        total++;
        bytes += got;
        if (dt > slowest)
            slowest = dt;
        if (st == 0) {
            aborted++;
        } else if (st > 0 && st < 600) {
            status_count[st]++;
            if (st >= 500 && st != 503) {
                failures++;
                fprintf(stderr, "p_hammer: %d for %s\n", st, spec);
            }
        } else {
            failures++;
            if (st == -ETIMEDOUT)
                stalls++;
            else if (st == -ECONNRESET)
                resets++;
            else
                nostatus++;
            if (failures < 20)
                fprintf(stderr, "p_hammer: %s for %s\n", strerror(-st), spec);
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    pthread_t *t;
    char host[64];
    const char *colon;
    int clients, i, argi = 4, st;
    double secs, start;

    if (argc < 5 || !(colon = strrchr(argv[1], ':'))) {
        fprintf(stderr, "usage: p_hammer HOST:PORT SECONDS CLIENTS [-a] PATH...\n");
        return 2;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - argv[1]), argv[1]);
    snprintf(host_hdr, sizeof(host_hdr), "%s", argv[1]);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(colon + 1));
    inet_pton(AF_INET, host, &addr.sin_addr);
    secs = atof(argv[2]);
    clients = atoi(argv[3]);
    if (!strcmp(argv[argi], "-a")) {
        abort_some = 1;
        argi++;
    }
    paths = argv + argi;
    npaths = argc - argi;
    if (npaths <= 0 || clients <= 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    start = now();
    deadline = start + secs;
    t = calloc((size_t)clients, sizeof(*t));
    for (i = 0; i < clients; i++)
        pthread_create(&t[i], NULL, client, (void *)(long)i);
    for (i = 0; i < clients; i++)
        pthread_join(t[i], NULL);
    printf("requests %ld in %.1f s (%.0f/s), %d clients, %d paths\n", total, now() - start,
           total / (now() - start), clients, npaths);
    printf("statuses:");
    for (st = 100; st < 600; st++) {
        if (status_count[st])
            printf(" %d=%ld", st, status_count[st]);
    }
    printf("\nclient hang-ups mid-response %ld\n", aborted);
    printf("failures %ld (5xx other than 503, resets %ld, no status %ld, 30 s stalls %ld)\n",
           failures, resets, nostatus, stalls);
    printf("bytes received %lld, slowest request %.2f s\n", bytes, slowest);
    return failures ? 1 : 0;
}
