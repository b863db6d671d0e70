/*
 * bench_mutex: the uncontended lock/unlock loop, for scripts/bench_mutex.sh.
 *
 *   bench_mutex ITERATIONS [REPEATS [IDLE_THREAD [mutex_plt]]]
 *
 * One thread locks and unlocks one mutex ITERATIONS times per run, in three
 * ways that alternate run by run, REPEATS times each:
 *
 *   plt   the program's own call, pthread_mutex_lock() through its PLT: what a
 *         program pays (the interposer, when one is preloaded)
 *   libc  glibc's pthread_mutex_lock itself, through a pointer from
 *         dlvsym(libc): never interposed, the baseline inside this process
 *   hook  through a pointer from dlsym(RTLD_DEFAULT): the interposer when one
 *         is preloaded, else glibc's function again (an A/A check: its ratio
 *         to libc must then be 1 within the noise)
 *
 * Runs of hook and libc alternate in one process, so their ratio, taken run by
 * run, is free of what differs between processes (load on a shared machine,
 * the CPU a process lands on, address layout).  The same for a recursive
 * mutex (a kind the library does not take inline) and for a rwlock's
 * wrlock+unlock and rdlock+unlock.  Times are the thread's CPU time
 * (preemption does not count), in ns per lock+unlock pair; each line gives the
 * minimum and the median over the runs, and for hook the median and the
 * minimum of the run-by-run ratio hook/libc.
 *
 * With IDLE_THREAD=1 a second thread, blocked for good, exists during the
 * loops: glibc takes a cheaper, non-atomic path for mutexes while a process
 * has a single thread, and the library's own server threads end that, so the
 * interposer's own cost shows only when the program is multi-threaded itself
 * (as every program with contention is).
 *
 * With a fourth argument "mutex_plt" only the program's own mutex loop runs,
 * once, with no warm-up (for counting instructions under perf stat).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 1000

typedef int (*lock_fn)(void *);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* preemption on a shared machine does not count */
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The program's own calls (through its PLT). */
__attribute__((noinline)) static double
mutex_plt(long n)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&mu);
        __asm__ volatile("" ::: "memory");
        pthread_mutex_unlock(&mu);
    }
    return (now() - t0) / (double)n;
}

__attribute__((noinline)) static double
recursive_plt(long n)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&rec);
        __asm__ volatile("" ::: "memory");
        pthread_mutex_unlock(&rec);
    }
    return (now() - t0) / (double)n;
}

__attribute__((noinline)) static double
wrlock_plt(long n)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        pthread_rwlock_wrlock(&rw);
        __asm__ volatile("" ::: "memory");
        pthread_rwlock_unlock(&rw);
    }
    return (now() - t0) / (double)n;
}

__attribute__((noinline)) static double
rdlock_plt(long n)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        pthread_rwlock_rdlock(&rw);
        __asm__ volatile("" ::: "memory");
        pthread_rwlock_unlock(&rw);
    }
    return (now() - t0) / (double)n;
}

/* Lock through a pointer (libc's own function, or whatever the program's symbol resolves to). */
__attribute__((noinline)) static double
mutex_ptr(long n, lock_fn lock)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        lock(&mu);
        __asm__ volatile("" ::: "memory");
        pthread_mutex_unlock(&mu);
    }
    return (now() - t0) / (double)n;
}

__attribute__((noinline)) static double
recursive_ptr(long n, lock_fn lock)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        lock(&rec);
        __asm__ volatile("" ::: "memory");
        pthread_mutex_unlock(&rec);
    }
    return (now() - t0) / (double)n;
}

__attribute__((noinline)) static double
rwlock_ptr(long n, lock_fn lock)
{
    double t0 = now();

    for (long i = 0; i < n; i++) {
        lock(&rw);
        __asm__ volatile("" ::: "memory");
        pthread_rwlock_unlock(&rw);
    }
    return (now() - t0) / (double)n;
}

static void *
idle(void *fd)
{
    char c;

    return read((int)(intptr_t)fd, &c, 1) < 0 ? NULL : NULL; /* blocks until exit */
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Sorts v in place; *min and *median of its n values. */
static void
stats(double *v, int n, double *min, double *median)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    *min = v[0];
    *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static lock_fn
sym(void *libc, const char *name, const char *version)
{
    void *p = libc ? dlvsym(libc, name, version) : NULL;

    if (!p)
        p = dlsym(RTLD_NEXT, name);
    return (lock_fn)p;
}

/* One family (mutex, wrlock, rdlock): REPEATS alternating runs of plt, libc and hook. */
static void
family(const char *name, long n, int reps, double (*plt)(long), double (*ptr)(long, lock_fn),
       lock_fn libc_fn, lock_fn hook_fn)
{
    static double v_plt[MAX_REPS], v_libc[MAX_REPS], v_hook[MAX_REPS], v_ratio[MAX_REPS];
    double pmin, pmed, lmin, lmed, hmin, hmed, rmin, rmed;

    plt(n / 4); /* warm up */
    ptr(n / 4, libc_fn);
    ptr(n / 4, hook_fn);
    for (int r = 0; r < reps; r++) {
        /* rotate the order, so no way always runs first or last */
        for (int k = 0; k < 3; k++) {
            switch ((r + k) % 3) {
            case 0: v_plt[r] = plt(n); break;
            case 1: v_libc[r] = ptr(n, libc_fn); break;
            case 2: v_hook[r] = ptr(n, hook_fn); break;
            }
        }
        v_ratio[r] = v_hook[r] / v_libc[r];
    }
    stats(v_plt, reps, &pmin, &pmed);
    stats(v_libc, reps, &lmin, &lmed);
    stats(v_hook, reps, &hmin, &hmed);
    stats(v_ratio, reps, &rmin, &rmed);
    printf("%s plt %.3f %.3f libc %.3f %.3f hook %.3f %.3f ratio %.4f %.4f\n", name, pmin, pmed,
           lmin, lmed, hmin, hmed, rmed, rmin);
}

int
main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    int fds[2];
    pthread_t t;

    if (reps < 1)
        reps = 1;
    if (reps > MAX_REPS)
        reps = MAX_REPS;
    if (argc > 3 && atoi(argv[3]) && pipe(fds) == 0)
        pthread_create(&t, NULL, idle, (void *)(intptr_t)fds[0]);
    if (argc > 4 && !strcmp(argv[4], "mutex_plt")) {
        printf("mutex plt %.3f\n", mutex_plt(n));
        return 0;
    }

    family("mutex", n, reps, mutex_plt, mutex_ptr, sym(libc, "pthread_mutex_lock", "GLIBC_2.2.5"),
           (lock_fn)dlsym(RTLD_DEFAULT, "pthread_mutex_lock"));
    family("recursive", n, reps, recursive_plt, recursive_ptr,
           sym(libc, "pthread_mutex_lock", "GLIBC_2.2.5"),
           (lock_fn)dlsym(RTLD_DEFAULT, "pthread_mutex_lock"));
    family("wrlock", n, reps, wrlock_plt, rwlock_ptr,
           sym(libc, "pthread_rwlock_wrlock", "GLIBC_2.34"),
           (lock_fn)dlsym(RTLD_DEFAULT, "pthread_rwlock_wrlock"));
    family("rdlock", n, reps, rdlock_plt, rwlock_ptr,
           sym(libc, "pthread_rwlock_rdlock", "GLIBC_2.34"),
           (lock_fn)dlsym(RTLD_DEFAULT, "pthread_rwlock_rdlock"));
    return 0;
}
