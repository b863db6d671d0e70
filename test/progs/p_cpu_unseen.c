/*
 * p_cpu_unseen: threads the CPU sampler must find without a rescan every
 * 100 ms (e2e_cpu_threads).  Sleeps argv[1] s (time for a profile to start),
 * then:
 *   - a thread made with a raw clone(CLONE_THREAD), which no pthread_create
 *     hook sees, spends argv[2] s of its CPU in raw_spin;
 *   - meanwhile argv[3] threads made through pthread_create, one after the
 *     other (by a spawner thread), named "short-life", each spend 10 ms of CPU in short_life and
 *     exit (sampled only when armed from their first milliseconds; named in
 *     the profile though gone before the collector drains).
 * Prints "raw=done short=N", then sleeps until killed.  The raw thread shares the main
 * thread's TLS (no CLONE_SETTLS), so the main thread only waits meanwhile.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STACK (256 * 1024)

static volatile int raw_done;
static volatile unsigned long sink;

static long
cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) static void
burn(long ns)
{
    long end = cpu_ns() + ns;

    while (cpu_ns() < end)
        for (int i = 0; i < 10000; i++)
            sink = sink * 6364136223846793005ul + 1;
}

__attribute__((noinline)) static int
raw_spin(void *arg)
{
    burn((long)(*(double *)arg * 1e9));
    __atomic_store_n(&raw_done, 1, __ATOMIC_RELEASE);
    return 0; /* glibc's clone wrapper ends this thread alone (SYS_exit) */
}

__attribute__((noinline)) static void *
short_life(void *unused)
{
    pthread_setname_np(pthread_self(), "short-life");
    burn(10 * 1000000L);
    return NULL;
}

/* A pthread of its own (the main thread shares its TLS with the raw one). */
static void *
spawner(void *arg)
{
    int *n = arg;

    for (int i = 0, want = *n; i < want; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_life, NULL) != 0)
            continue;
        pthread_join(t, NULL);
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    const char *go = argc > 1 ? argv[1] : "/nonexistent";
    double spin = argc > 2 ? atof(argv[2]) : 2;
    int nshort = argc > 3 ? atoi(argv[3]) : 40, n = 0;
    char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct timespec pause = {0, 20 * 1000000L};
    pthread_t sp;

    if (stack == MAP_FAILED)
        return 1;
    while (access(go, F_OK) != 0)
        nanosleep(&pause, NULL);
    if (clone(raw_spin, stack + STACK,
              CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
              &spin) < 0) {
        perror("clone");
        return 1;
    }
    n = nshort;
    if (pthread_create(&sp, NULL, spawner, &n) != 0)
        return 1;
    pthread_join(sp, NULL);
    while (!__atomic_load_n(&raw_done, __ATOMIC_ACQUIRE))
        nanosleep(&pause, NULL);
    nanosleep(&pause, NULL); /* let the raw thread's exit finish */
    printf("raw=done short=%d\n", n);
    fflush(stdout);
    for (;;)
        pause.tv_sec = 1, nanosleep(&pause, NULL);
}
