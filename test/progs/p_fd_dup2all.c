/*
 * p_fd_dup2all: a program that dup2s onto every descriptor it has while a
 * perf-engine profile holds many (sampler/engine_perf.c: one a thread and
 * CPU, the rings, an eventfd), then checks they are all still its own.
 *
 *   p_fd_dup2all STOPFILE [SECONDS]
 *
 * A worker thread burns CPU.  Half a second after /proc/self/fd shows a perf
 * event (the profile started; at most SECONDS, default 20), every number listed there
 * but 0-2 and its own becomes a copy of its eventfd or of its pipe's write
 * end, in turn (dup2; dup3 for every third).  It prints "replaced=N
 * perf=P", then waits for STOPFILE (the profile is over, the engine has
 * closed what it holds) and checks each number: still open, still its own
 * file, and working: one byte through each pipe copy (read back from the
 * pipe), 1 added through each eventfd copy (read back as the sum).  Prints
 * "ok=K bad=B pipe=X/Y eventfd=S/T" and exits 0 when B is 0.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAXN 4096

static volatile int stop;
static volatile unsigned long sink;

__attribute__((noinline)) void
dup2all_work(void)
{
    unsigned long x = sink;
    for (int i = 0; i < 200000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

static void *
worker(void *unused)
{
    (void)unused;
    while (!stop)
        dup2all_work();
    return NULL;
}

static int
is_perf(int fd)
{
    char path[64], link[64];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, link, sizeof(link) - 1);
    if (n < 0)
        return 0;
    link[n] = 0;
    return strcmp(link, "anon_inode:[perf_event]") == 0;
}

/* The numbers in /proc/self/fd, into fds; how many; *perf gets the perf events among them. */
static int
list(int *fds, int max, int *perf)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0, self = d ? dirfd(d) : -1;

    *perf = 0;
    while (d && (e = readdir(d)) && n < max) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == self)
            continue;
        *perf += is_perf(fd);
        fds[n++] = fd;
    }
    if (d)
        closedir(d);
    return n;
}

int
main(int argc, char **argv)
{
    static int fds[MAXN], kind[MAXN];
    double secs = argc > 2 ? atof(argv[2]) : 20;
    struct stat pst, est, st;
    int p[2], efd, n = 0, perf = 0, replaced = 0, ok = 0, bad = 0;
    int npipe = 0, pipe_ok = 0, nev = 0;
    uint64_t sum = 0;
    pthread_t th;

    if (argc < 2 || pipe2(p, O_NONBLOCK) < 0 || (efd = eventfd(0, EFD_NONBLOCK)) < 0)
        return 2;
    fstat(p[1], &pst);
    fstat(efd, &est);
    pthread_create(&th, NULL, worker, NULL);
    for (int i = 0; i < (int)(secs * 100) && perf == 0; i++) {
        usleep(10000);
        n = list(fds, MAXN, &perf);
    }
    if (perf) { /* the profile has started: let it sample a while, then list again */
        usleep(500000);
        n = list(fds, MAXN, &perf);
    }
    for (int i = 0; i < n; i++) {
        int fd = fds[i], from, rc;
        kind[i] = -1;
        if (fd <= 2 || fd == p[0] || fd == p[1] || fd == efd)
            continue;
        kind[i] = replaced % 2;
        from = kind[i] ? efd : p[1];
        rc = replaced % 3 == 2 ? dup3(from, fd, O_CLOEXEC) : dup2(from, fd);
        if (rc != fd) {
            kind[i] = -1;
            continue;
        }
        replaced++;
    }
    printf("replaced=%d perf=%d\n", replaced, perf);
    fflush(stdout);
    for (int i = 0; i < 6000 && access(argv[1], F_OK) != 0; i++)
        usleep(10000);
    stop = 1;
    pthread_join(th, NULL);
    for (int i = 0; i < n; i++) {
        int fd = fds[i];
        const struct stat *want = kind[i] ? &est : &pst;
        if (kind[i] < 0)
            continue;
        if (fstat(fd, &st) < 0 || st.st_ino != want->st_ino || st.st_dev != want->st_dev) {
            bad++;
            fprintf(stderr, "fd %d: not its own any more\n", fd);
            continue;
        }
        if (kind[i]) {
            uint64_t one = 1;
            nev++;
            if (write(fd, &one, sizeof(one)) == sizeof(one))
                ok++;
            else
                bad++;
        } else {
            char c = 'x';
            npipe++;
            if (write(fd, &c, 1) == 1)
                ok++;
            else
                bad++;
        }
    }
    for (char c; read(p[0], &c, 1) == 1;)
        pipe_ok += c == 'x';
    if (read(efd, &sum, sizeof(sum)) != sizeof(sum))
        sum = 0;
    if (pipe_ok != npipe || (int)sum != nev)
        bad++;
    printf("ok=%d bad=%d pipe=%d/%d eventfd=%d/%d\n", ok, bad, pipe_ok, npipe, (int)sum, nev);
    return bad ? 1 : 0;
}
