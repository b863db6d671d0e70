/*
 * p_trace_proc: ground truth for the allocation and process events of
 * /debug/pprof/trace (issue 34; owned by the trace work).
 *   p_trace_proc alloc [SECONDS]  thread "allocator" mallocs a 1 MiB block
 *                                 (alloc_mib) every 5 ms and frees it 5 ms
 *                                 later, printing "ALLOC <CLOCK_MONOTONIC ns>"
 *                                 for each: the trace's sampled bytes must
 *                                 estimate what was allocated meanwhile
 *   p_trace_proc fork [SECONDS]   thread "forker", every 100 ms: fork (the
 *                                 child exits), vfork + exec /bin/true, an
 *                                 exec that fails (no such file), and
 *                                 posix_spawn /bin/true
 * Prints "ready" when the thread runs, then exits 0 after SECONDS (default 60).
 *
 * Signal-safe: n/a (a test program).
 */
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The allocation site the trace's events must name. */
static __attribute__((noinline)) char *
alloc_mib(void)
{
    char *p = malloc(1 << 20);

    if (p)
        p[0] = 1; /* (kept: not optimised away) */
    __asm__ volatile("" ::: "memory");
    return p;
}

static void *
allocator(void *arg)
{
    pthread_setname_np(pthread_self(), "allocator");
    for (;;) {
        char *p = alloc_mib();
        printf("ALLOC %lld\n", now_ns());
        nap_ms(5);
        free(p);
        nap_ms(5);
    }
    return arg;
}

static void *
forker(void *arg)
{
    pthread_setname_np(pthread_self(), "forker");
    for (;;) {
        char *argv[] = {"true", NULL};
        pid_t pid;
        int st;

        if ((pid = fork()) == 0)
            _exit(0);
        if (pid > 0)
            waitpid(pid, &st, 0);
        if ((pid = vfork()) == 0) {
            execve("/bin/true", argv, environ);
            _exit(127);
        }
        if (pid > 0)
            waitpid(pid, &st, 0);
        execve("/nonexistent/p_trace_proc", argv, environ); /* fails: ENOENT */
        if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) == 0)
            waitpid(pid, &st, 0);
        nap_ms(100);
    }
    return arg;
}

int
main(int argc, char **argv)
{
    pthread_t t;
    int seconds = 60;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || (strcmp(argv[1], "alloc") && strcmp(argv[1], "fork"))) {
        fprintf(stderr, "usage: p_trace_proc alloc|fork [SECONDS]\n");
        return 2;
    }
    if (argc > 2)
        seconds = atoi(argv[2]);
    if (pthread_create(&t, NULL, argv[1][0] == 'a' ? allocator : forker, NULL) != 0)
        return 1;
    printf("ready\n");
    sleep((unsigned)seconds);
    return 0;
}
