/*
 * p_host_close_all: a daemon that closes every descriptor it did not open
 * (three ways: a close loop, close_range(3, ~0U, 0), closefrom(3)), then
 * listens on sockets of its own: each of its 20 clients must be answered by
 * it, fds 0-2 stay, and the process's other threads (a preloaded library's)
 * stay near idle meanwhile (about 8 s in all).  Host-matrix row (test/e2e/e2e_host_matrix.sh).
 * It reads its thread list to find civetweb-master, with an idle thread of its
 * own: a program alone in its process that reads the list is taken to check
 * that it is alone, and the library steps aside (docs/GUIDE.md "A process that must
 * be alone").
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define LISTENERS 10
#define CLIENTS_EACH 2

static void
die(const char *what)
{
    fprintf(stderr, "p_host_close_all: %s (%s)\n", what, strerror(errno));
    exit(1);
}

/*
 * Nanoseconds on CPU (schedstat) of the threads named civetweb-master: a
 * preloaded server's accept loop, the thread that spins on a closed socket.
 * Run time, not ticks: on a loaded machine a spinning thread still gets far
 * more than an idle one's ~0, but not the 2 s a tick count would expect.
 */
static long long
master_cpu_ns(void)
{
    char path[300], buf[128];
    struct dirent *de;
    long long sum = 0, ns;
    DIR *d = opendir("/proc/self/task");
    FILE *f;

    if (!d)
        return 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        buf[0] = '\0';
        if (!fgets(buf, sizeof(buf), f))
            buf[0] = '\0';
        fclose(f);
        if (strncmp(buf, "civetweb-master", 15))
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (fscanf(f, "%lld", &ns) == 1)
            sum += ns;
        fclose(f);
    }
    closedir(d);
    return sum;
}

/* Listen on LISTENERS sockets of its own (they take the lowest free numbers,
   those just closed), connect CLIENTS_EACH clients to each, answer each one. */
static int
serve_own_clients(const char *how, unsigned wait_ms)
{
    int lfd[LISTENERS], port[LISTENERS], i, j, answered = 0;
    struct sockaddr_in sin;
    socklen_t len;

    for (i = 0; i < LISTENERS; i++) {
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if ((lfd[i] = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
            bind(lfd[i], (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(lfd[i], 8) < 0)
            die("listen");
        len = sizeof(sin);
        getsockname(lfd[i], (struct sockaddr *)&sin, &len);
        port[i] = ntohs(sin.sin_port);
    }
    /* A real daemon listens a while before its clients come: long enough for
       a poller still waiting on the old file (civetweb's timeout is 2 s) to
       come back and poll whatever now has the number. */
    usleep(wait_ms * 1000);
    for (i = 0; i < LISTENERS; i++) {
        int c[CLIENTS_EACH];

        /* All clients first, then a pause (a daemon is busy elsewhere), then
           its accepts: a stale poller of this number would take them meanwhile. */
        for (j = 0; j < CLIENTS_EACH; j++) {
            memset(&sin, 0, sizeof(sin));
            sin.sin_family = AF_INET;
            sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            sin.sin_port = htons((unsigned short)port[i]);
            if ((c[j] = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
                connect(c[j], (struct sockaddr *)&sin, sizeof(sin)) < 0)
                die("connect");
        }
        usleep(50000);
        for (j = 0; j < CLIENTS_EACH; j++) {
            struct pollfd p = {.fd = lfd[i], .events = POLLIN};
            int a = -1;

            if (poll(&p, 1, 500) == 1)
                a = accept4(lfd[i], NULL, NULL, SOCK_NONBLOCK);
            if (a >= 0) {
                if (write(a, "mine\n", 5) != 5)
                    die("write");
                close(a);
            }
        }
        for (j = 0; j < CLIENTS_EACH; j++) {
            struct pollfd p = {.fd = c[j], .events = POLLIN};
            char buf[64] = "";
            ssize_t n;

            if (poll(&p, 1, 500) == 1 && (n = read(c[j], buf, sizeof(buf) - 1)) > 0)
                buf[n] = '\0';
            if (!strcmp(buf, "mine\n"))
                answered++;
            close(c[j]);
        }
    }
    for (i = 0; i < LISTENERS; i++)
        close(lfd[i]);
    if (answered != LISTENERS * CLIENTS_EACH) {
        fprintf(stderr,
                "p_host_close_all: after %s only %d of %d clients answered by the program\n", how,
                answered, LISTENERS * CLIENTS_EACH);
        return -1;
    }
    return 0;
}

static void *
idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int
main(void)
{
    struct stat st;
    long long before, used;
    pthread_t t;
    char c;
    int fd, bad = 0;

    if (pthread_create(&t, NULL, idle, NULL) != 0)
        die("pthread_create");

    usleep(500000); /* a daemon closes its descriptors once its libraries are up */

    for (fd = 3; fd < 1024; fd++)
        close(fd);
    bad |= serve_own_clients("a close loop", 2200);

    if (close_range(3, ~0U, 0) < 0)
        die("close_range");
    bad |= serve_own_clients("close_range(3, ~0U, 0)", 0);

    closefrom(3);
    bad |= serve_own_clients("closefrom(3)", 0);

    for (fd = 0; fd < 3; fd++)
        if (fstat(fd, &st) < 0)
            die("fds 0-2 must stay open");

    /* Idle for 2 s: the server's accept loop must not spin (an idle one
       uses ~1 ms; a spinning one hundreds even on a loaded machine).  The
       window opens once a poll begun on a socket closed above has timed out. */
    usleep(2100000);
    before = master_cpu_ns();
    sleep(2);
    used = master_cpu_ns() - before;
    if (getenv("P_HOST_VERBOSE"))
        fprintf(stderr, "p_host_close_all: civetweb-master ran %lld ms in 2 s of idle\n",
                used / 1000000);
    if (used > 100 * 1000000LL) {
        fprintf(stderr, "p_host_close_all: civetweb-master ran %lld ms in 2 s of idle\n",
                used / 1000000);
        bad = 1;
    }
    if (bad)
        return 1;
    printf("HOST-ROW-DONE\n");
    fflush(stdout);
    for (;;) { /* until stdin's EOF */
        ssize_t r = read(0, &c, 1);
        if (r == 0 || (r < 0 && errno != EINTR))
            break;
    }
    return 0;
}
