/*
 * p_cpu_fork: two threads burn CPU while the main thread, itself busy between
 * calls, forks children that _exit(7) and fork+execs /bin/sh running a short
 * loop, for argv[1] seconds.  Prints "forks=N bad=M"; bad counts children that
 * did not end with their own status (e.g. killed by a stray SIGPROF).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;

__attribute__((noinline)) static void
fork_busy(long n)
{
    unsigned long x = sink;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1;
    sink = x;
}

static void *
spinner(void *unused)
{
    while (!stop)
        fork_busy(100000);
    return NULL;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    struct timespec t0, t;
    long forks = 0, bad = 0;
    pthread_t a, b;

    pthread_create(&a, NULL, spinner, NULL);
    pthread_create(&b, NULL, spinner, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        int st;
        pid_t pid;
        fork_busy(2000000);
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            fork_busy(1000000);
            _exit(7);
        }
        if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 7))
            bad++;
        pid = fork();
        if (pid == 0) {
            execl("/bin/sh", "sh", "-c", "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; exit 5",
                  (char *)NULL);
            _exit(127);
        }
        if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 5))
            bad++;
        forks += 2;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("forks=%s bad=%ld\n", forks > 0 ? "many" : "0", bad);
    return 0;
}
