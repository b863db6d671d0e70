/*
 * p_fd_closeloop: a daemon-like program that keeps closing every descriptor
 * it did not open (a close loop, close_range, closefrom in turn) and at once
 * makes its own: a pipe and a listening socket, which it then checks
 * (a token through the pipe, a connection to the listener accepted, both
 * still the files it made) -- while the preloaded library makes descriptors
 * of its own as fast as it can (/proc reads of a wall profile, accepted
 * connections, perf events).  A descriptor of ours caught between its birth
 * at a low number and its move up would be closed by the loop, the number
 * given to the program's pipe or socket, and then read and closed by us
 * (preload/fd.h, "Born low").  Four threads sleep so that the wall profile
 * reads their /proc files.
 *   p_fd_closeloop STOPFILE SECONDS
 * Prints "rounds=N bad=N" and exits 0 when every round was right.
 */
#include <arpa/inet.h>
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int done;

/* A thread off CPU until the end.  Not blocked on a descriptor: the rounds
   close every one, and a sleeper reaching its read() late would read the
   round's new pipe that took the number (the program's own race, which
   failed round 0 in 1 of 5 runs without the library). */
static void *
sleeper(void *arg)
{
    (void)arg;
    while (!done)
        usleep(20000);
    return NULL;
}

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
close_all(int how)
{
    switch (how % 3) {
    case 0:
        for (int fd = 3; fd < 256; fd++)
            close(fd);
        break;
    case 1: close_range(3, ~0U, 0); break;
    default: closefrom(3); break;
    }
}

/* Is fd still the file whose identity is st? */
static int
same(int fd, const struct stat *st)
{
    struct stat now_st;

    return fstat(fd, &now_st) == 0 && now_st.st_dev == st->st_dev && now_st.st_ino == st->st_ino;
}

/* One round: make a pipe and a listener, let a moment pass (our threads run),
   check both.  0 when right, else what went wrong. */
static const char *
round_once(int i)
{
    int p[2], l, c, a;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);
    struct stat sp0, sp1, sl;
    char tok[8] = "tok", got[8] = "";
    struct pollfd pf;
    const char *bad = NULL;

    close_all(i);
    if (pipe(p) < 0)
        return "pipe";
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((l = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        bind(l, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(l, 4) < 0 ||
        getsockname(l, (struct sockaddr *)&sin, &len) < 0)
        return "listen";
    fstat(p[0], &sp0);
    fstat(p[1], &sp1);
    fstat(l, &sl);
    snprintf(tok, sizeof(tok), "%d", i % 100000);
    usleep(200); /* a daemon does other things between */
    if (!same(p[0], &sp0) || !same(p[1], &sp1))
        bad = "the pipe is not the program's any more";
    else if (write(p[1], tok, sizeof(tok)) != sizeof(tok) ||
             read(p[0], got, sizeof(got)) != sizeof(got) || memcmp(tok, got, sizeof(tok)))
        bad = "the token did not come back through the pipe";
    else if (!same(l, &sl))
        bad = "the listener is not the program's any more";
    else if ((c = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
             connect(c, (struct sockaddr *)&sin, sizeof(sin)) < 0)
        bad = "connect to its own listener";
    else {
        pf.fd = l;
        pf.events = POLLIN;
        if (poll(&pf, 1, 2000) != 1 || (a = accept(l, NULL, NULL)) < 0)
            bad = "its own listener accepted nothing";
        else
            close(a);
        close(c);
    }
    close(p[0]);
    close(p[1]);
    close(l);
    return bad;
}

int
main(int argc, char **argv)
{
    const char *stop = argc > 1 ? argv[1] : "/nonexistent";
    double secs = argc > 2 ? atof(argv[2]) : 5, t0;
    pthread_t th[4];
    long rounds = 0, bad = 0;
    const char *why;

    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, sleeper, NULL);
    t0 = now();
    while (now() - t0 < secs && access(stop, F_OK) != 0) {
        if ((why = round_once((int)rounds))) {
            if (bad++ < 5)
                fprintf(stderr, "p_fd_closeloop: round %ld: %s (%s)\n", rounds, why,
                        strerror(errno));
        }
        rounds++;
    }
    done = 1;
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    printf("rounds=%ld bad=%ld\n", rounds, bad);
    fflush(stdout);
    return bad ? 1 : 0;
}
