/*
 * p_tree: process trees for e2e_tree.sh.
 *   p_tree tree       forks two workers (one of them forks a grandchild) and
 *                     fork+execs itself as "leaf"; every process burns CPU in
 *                     tree_burn() between poll(10 ms) calls until killed.
 *                     Prints "fork PID", "grand PID", "exec PID" lines.
 *   p_tree leaf       the exec'd descendant's loop.
 *   p_tree storm N    N times: fork+exec /bin/true, and fork + one quick
 *                     blocking call + _exit; each such child reports through
 *                     its exit status whether a second thread existed (1) or
 *                     not (0).  Prints "storm N threads=0" when none did.
 *   p_tree short N    N children, 8 at a time, each living ~60 ms in poll(5 ms)
 *                     calls; then prints "short done" and loops like a worker.
 *   p_tree idle N     N children idle in poll(-1) (scripts/bench_tree.sh);
 *                     prints "idle PID" per child, then sleeps.
 *   p_tree first      forks children back to back for its first 80 ms, over
 *                     our server thread's first libunwind walk; each child
 *                     allocates 16 MiB (a heap sample: an unwind) and exits.
 *                     Prints "first N hung=H" (H children still there 10 s on).
 */
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "p_host.h"

static volatile double sink;

__attribute__((noinline)) static void
tree_burn(int ms)
{
    struct timespec a, b;
    double x = 1;

    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
    sink = x;
}

static void
worker_loop(void)
{
    for (;;) {
        tree_burn(10);
        poll(NULL, 0, 10);
    }
}

static pid_t
fork_worker(const char *tag, int grand)
{
    pid_t pid = fork();

    if (pid == 0) {
        if (grand && fork_worker("grand", 0) < 0)
            _exit(1);
        worker_loop();
    }
    if (pid > 0) {
        printf("%s %d\n", tag, (int)pid);
        fflush(stdout);
    }
    return pid;
}

static int
storm(long n)
{
    long k, bad = 0;
    int st;

    for (k = 0; k < n; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (k & 1) {
                /* one quick blocking call, as a launcher's child may make
                   (a second one made 20 ms later would be a safe point) */
                poll(NULL, 0, 0);
                _exit(row_status_threads() != 1);
            }
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    printf("storm %ld threads=%ld\n", n, bad);
    return bad != 0;
}

static void
short_lived(long n)
{
    long started = 0, running = 0;
    int st;

    while (started < n || running > 0) {
        while (started < n && running < 8) {
            pid_t pid = fork();
            if (pid == 0) {
                for (int i = 0; i < 12; i++)
                    poll(NULL, 0, 5);
                _exit(0);
            }
            if (pid > 0)
                running++;
            started++;
        }
        if (wait(&st) > 0)
            running--;
    }
    printf("short done\n");
    fflush(stdout);
}

/* Children forked back to back over our server thread's first libunwind
   walk (30 ms after load, http/server.c); each makes one allocation big
   enough to be sampled (an unwind) and exits.  A child that copied the
   walk's init lock held would hang in that unwind. */
static int
fork_during_warm(void)
{
    enum { MAX = 4096 };
    static pid_t kids[MAX];
    struct timespec a, b;
    int n = 0, hung = 0, st;

    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        pid_t pid = fork();
        if (pid == 0) {
            char *volatile p = malloc(16 << 20);
            if (p)
                p[0] = 1;
            free(p);
            _exit(0);
        }
        if (pid > 0 && n < MAX)
            kids[n++] = pid;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 80 && n < MAX);
    for (int i = 0; i < n; i++) {
        int ms = 0;
        while (waitpid(kids[i], &st, WNOHANG) == 0 && ms < 10000) {
            poll(NULL, 0, 10);
            ms += 10;
        }
        if (ms >= 10000) {
            hung++;
            kill(kids[i], SIGKILL);
            waitpid(kids[i], &st, 0);
        }
    }
    printf("first %d hung=%d\n", n, hung);
    fflush(stdout);
    for (;;)
        poll(NULL, 0, -1);
}

int
main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "tree";

    if (!strcmp(mode, "first"))
        return fork_during_warm();
    if (!strcmp(mode, "leaf"))
        worker_loop();
    if (!strcmp(mode, "storm"))
        return storm(argc > 2 ? atol(argv[2]) : 1000);
    if (!strcmp(mode, "short")) {
        short_lived(argc > 2 ? atol(argv[2]) : 500);
        worker_loop();
    }
    if (!strcmp(mode, "idle")) {
        long n = argc > 2 ? atol(argv[2]) : 64;
        setpgid(0, 0);
        for (long i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid == 0)
                for (;;)
                    poll(NULL, 0, -1);
            printf("idle %d\n", (int)pid);
        }
        fflush(stdout);
        for (;;)
            poll(NULL, 0, -1);
    }
    /* Children die with us (the test kills the root). */
    setpgid(0, 0);
    fork_worker("fork", 1);
    fork_worker("fork", 0);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "p_tree", "leaf", (char *)NULL);
        _exit(127);
    }
    printf("exec %d\n", (int)pid);
    fflush(stdout);
    worker_loop();
}
