/*
 * bench_cpu: figures for scripts/bench_cpu.sh.
 *   bench_cpu work WAIT ITERS   sleep WAIT s (time to start a profile), then two
 *                               threads each spin ITERS iterations; prints the
 *                               wall seconds of that phase and the process's CPU
 *                               seconds (user + sys, all threads); on a second
 *                               line "library CPU WAKEUPS CCPU CWAKEUPS": the run
 *                               time (schedstat, s) and voluntary context switches
 *                               of the library's threads (names pe-*, civetweb-*),
 *                               then of the collector alone, during that phase
 *                               (read from /proc/self/task before and after).
 *                               With BENCH_FLOOR_HZ=F in the environment (no
 *                               library), each worker opens for itself a
 *                               task-clock perf event sampling F times a second
 *                               of its CPU that records the thread id only (and
 *                               BENCH_FLOOR_STACK bytes of user stack, 0 by
 *                               default) and drains its ring as it spins: what
 *                               the kernel charges a sampled thread for perf
 *                               samples, with nothing of ours in the process.
 *   bench_cpu sample N          median cost of one sample at stack depth 30: a
 *                               signal shaped as our CPU timer's (SI_TIMER, the
 *                               session cookie; rt_tgsigqueueinfo to this thread)
 *                               through our handler (unwind + ring store), next
 *                               to the same signal through an empty handler.
 *   bench_cpu sample_gperf N    the same round trip through gperftools' handler
 *                               (libprofiler.so preloaded, ProfilerStart with
 *                               CPUPROFILE_FREQUENCY=1 so that its own timer
 *                               adds ~nothing), next to the empty handler:
 *                               the anchor's cost of one sample, measured the
 *                               same way as ours.
 *   bench_cpu parts N           the sample by its parts, at depth 30, each run N
 *                               times in a row inside one SIGPROF handler (warm
 *                               caches, no signal delivery in the figure):
 *                               libunwind's unw_backtrace alone, pe_unwind_signal
 *                               (unw_backtrace + cutting our frames + the
 *                               loaded-object pin), the ring store (claim, fill,
 *                               publish, and the collector's peek/release), and
 *                               our whole handler for a timer's signal; prints ns
 *                               per call of each (the lowest of 5 rounds: the
 *                               machine's load only ever adds) and the frames.
 *                               Under callgrind the same calls give instruction
 *                               counts, which load does not change.
 * Linked with build/libpe_core.a (the sampler's objects, not the preload).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../sampler/sampler_int.h"
#include "../../stack/unwind.h"

static volatile unsigned long sink;
static long iters;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
spin(long n)
{
    unsigned long x = sink;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

/* The workers start, then run once the main thread has read the library's
   threads (a program reading /proc/self/task with no thread of its own makes
   the library step aside: preload/alone_tasks.c). */
static pthread_barrier_t start_line;

#define FLOOR_PAGES 64

/* This thread's own perf sampling event at BENCH_FLOOR_HZ (see the top); its
   ring, or NULL when the variable is unset or the kernel refuses. */
static struct perf_event_mmap_page *
floor_open(void)
{
    const char *hz = getenv("BENCH_FLOOR_HZ"), *stack = getenv("BENCH_FLOOR_STACK");
    struct perf_event_attr a;
    void *m;
    int fd;

    if (!hz || atof(hz) <= 0)
        return NULL;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (uint64_t)(1e9 / atof(hz));
    a.sample_type = PERF_SAMPLE_TID;
    if (stack && atoi(stack) > 0) {
        a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = (1ull << 6) | (1ull << 7) | (1ull << 8); /* bp, sp, ip */
        a.sample_stack_user = (uint32_t)atoi(stack);
    }
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return NULL;
    m = mmap(NULL, (FLOOR_PAGES + 1) * (size_t)getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED,
             fd, 0);
    return m == MAP_FAILED ? NULL : m;
}

static void *
worker(void *unused)
{
    struct perf_event_mmap_page *ring = floor_open();

    pthread_barrier_wait(&start_line); /* started (and in the library's registry) */
    pthread_barrier_wait(&start_line); /* go */
    for (long i = 0; i < iters / 1000; i++) {
        spin(1000);
        if (ring && !(i & 1023)) /* drained: the kernel never finds it full */
            __atomic_store_n(&ring->data_tail, __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE),
                             __ATOMIC_RELEASE);
    }
    pthread_barrier_wait(&start_line); /* done */
    pthread_barrier_wait(&start_line); /* the main thread has read /proc */
    return NULL;
}

/* Run time (s) and voluntary switches of the library's threads, from /proc;
   the collector's alone in cpu[1], wakeups[1]. */
static void
library_threads(double *cpu, long *wakeups)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;

    cpu[0] = cpu[1] = 0;
    wakeups[0] = wakeups[1] = 0;
    while (d && (e = readdir(d))) {
        char path[300], buf[4096];
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        buf[0] = 0;
        if (!fgets(buf, sizeof(buf), f))
            buf[0] = 0;
        fclose(f);
        if (strncmp(buf, "pe-", 3) && strncmp(buf, "civetweb", 8))
            continue;
        int coll = !strncmp(buf, "pe-cpu-collect", 14);
        /* schedstat: run time in ns (stat's ticks are too coarse for our threads) */
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
        if ((f = fopen(path, "r"))) {
            unsigned long long run = 0;
            if (fscanf(f, "%llu", &run) == 1) {
                cpu[0] += (double)run / 1e9;
                if (coll)
                    cpu[1] += (double)run / 1e9;
            }
            fclose(f);
        }
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        if ((f = fopen(path, "r"))) {
            while (fgets(buf, sizeof(buf), f))
                if (!strncmp(buf, "voluntary_ctxt_switches:", 24)) {
                    wakeups[0] += atol(buf + 24);
                    if (coll)
                        wakeups[1] += atol(buf + 24);
                }
            fclose(f);
        }
    }
    if (d)
        closedir(d);
}

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- sample: one signal's round trip --------------------------------------------- */

static double *times;
static int ntimes;

static void
empty_handler(int sig, siginfo_t *si, void *uc)
{
}

/* The si_code sent: our POSIX timer's, or (sample_gperf) setitimer's SI_KERNEL. */
static int send_code = SI_TIMER;

/* Our CPU timer's signal, as the kernel would deliver it (si_overrun 0). */
static void
send_timer_signal(pid_t pid, pid_t tid)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));
    si.si_signo = SIGPROF;
    si.si_code = send_code; /* to our own process the kernel keeps it as given */
    si.si_value.sival_ptr = (void *)(uintptr_t)PE_COOKIE(1);
    syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGPROF, &si);
}

__attribute__((noinline)) static int
deep(int d, int n)
{
    pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
    if (d > 0)
        return deep(d - 1, n) + (int)(sink & 1);
    for (int i = 0; i < n; i++) {
        double t0 = now();
        send_timer_signal(pid, tid);
        times[i] = now() - t0;
        pe_ring_slot_t *s;
        while ((s = pe_ring_peek(&pe_cpu_ring)))
            pe_ring_release(&pe_cpu_ring, s);
    }
    return 0;
}

static double
median_run(int n)
{
    deep(25, n); /* + main, __libc_start_call_main, __libc_start_main, _start, deep(0) = 30 */
    qsort(times, (size_t)n, sizeof(*times), cmp);
    return times[n / 2];
}

/* The round trip through an empty handler, n times (after a warm-up); the
   handler stays installed with *sa set up for the caller's next one. */
static double
empty_handler_run(int n, struct sigaction *sa)
{
    ntimes = n;
    times = calloc((size_t)ntimes, sizeof(*times));
    memset(sa, 0, sizeof(*sa));
    sa->sa_sigaction = empty_handler;
    sa->sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, sa, NULL);
    median_run(ntimes / 10); /* warm */
    return median_run(ntimes);
}

/* ---- parts: each piece many times inside one handler ------------------------------ */

static int nparts;
static volatile int parts_done;
static double part_ns[4];
static int part_frames[2];

__attribute__((noinline)) static void
store_once(void)
{
    pe_ring_slot_t *s = pe_ring_claim(&pe_cpu_ring);
    if (s) {
        s->tid = 1;
        s->weight = 1;
        s->nframes = 30;
        s->flags = 0;
        pe_ring_publish(&pe_cpu_ring, s);
    }
}

static void
drain_ring(void)
{
    pe_ring_slot_t *s;
    while ((s = pe_ring_peek(&pe_cpu_ring)))
        pe_ring_release(&pe_cpu_ring, s);
}

static void
parts_handler(int sig, siginfo_t *si, void *uc)
{
    static int (*bt)(void **, int);
    uintptr_t pcs[PE_RING_FRAMES];
    double t0;

    if (!bt)
        bt = (int (*)(void **, int))dlsym(dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD),
                                          "unw_backtrace");
    t0 = now();
    for (int i = 0; i < nparts; i++)
        part_frames[0] = bt((void **)pcs, PE_RING_FRAMES);
    part_ns[0] = (now() - t0) * 1e9 / nparts;
    t0 = now();
    for (int i = 0; i < nparts; i++)
        part_frames[1] = pe_unwind_signal(uc, pcs, PE_RING_FRAMES);
    part_ns[1] = (now() - t0) * 1e9 / nparts;
    t0 = now();
    for (int i = 0; i < nparts; i++) {
        store_once();
        if ((i & 511) == 511)
            drain_ring();
    }
    drain_ring();
    part_ns[2] = (now() - t0) * 1e9 / nparts;
    t0 = now();
    for (int i = 0; i < nparts; i++) {
        pe_cpu_handler(sig, si, uc); /* si is our timer's (send_timer_signal) */
        if ((i & 511) == 511)
            drain_ring();
    }
    drain_ring();
    part_ns[3] = (now() - t0) * 1e9 / nparts;
    parts_done = 1;
}

__attribute__((noinline)) static int
deep_parts(int d)
{
    if (d > 0)
        return deep_parts(d - 1) + (int)(sink & 1);
    parts_done = 0;
    send_timer_signal(getpid(), (pid_t)syscall(SYS_gettid));
    while (!parts_done) /* valgrind delivers it later: one handler run per call all the same */
        sched_yield();
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "work")) {
        pthread_t a, b;
        double t0, ours[2], ours0[2];
        long wakeups[2], wakeups0[2];
        usleep((useconds_t)(atof(argv[2]) * 1e6));
        iters = atol(argv[3]);
        pthread_barrier_init(&start_line, NULL, 3);
        pthread_create(&a, NULL, worker, NULL);
        pthread_create(&b, NULL, worker, NULL);
        pthread_barrier_wait(&start_line);
        library_threads(ours0, wakeups0); /* from here: the steady state, not start-up */
        t0 = now();
        pthread_barrier_wait(&start_line);
        pthread_barrier_wait(&start_line); /* done (they stay until read) */
        {
            struct rusage ru;
            double wall = now() - t0;
            getrusage(RUSAGE_SELF, &ru);
            library_threads(ours, wakeups);
            pthread_barrier_wait(&start_line);
            pthread_join(a, NULL);
            pthread_join(b, NULL);
            /* line 1 as scripts read it (bench_fleet.sh too); line 2 ours */
            printf("%.4f %.4f\nlibrary %.6f %ld %.6f %ld\n", wall,
                   ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                       ru.ru_stime.tv_usec / 1e6,
                   ours[0] - ours0[0], wakeups[0] - wakeups0[0], ours[1] - ours0[1],
                   wakeups[1] - wakeups0[1]);
        }
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "sample")) {
        struct sigaction sa;
        double empty, ours;
        if (pe_unwind_init() < 0 || pe_ring_init(&pe_cpu_ring, 2048) < 0)
            return 1;
        sem_init(&pe_cpu_wake, 0, 0);
        __atomic_store_n(&pe_cpu_cookie, PE_COOKIE(1), __ATOMIC_RELEASE);
        empty = empty_handler_run(atoi(argv[2]), &sa);
        sa.sa_sigaction = pe_cpu_handler;
        sigaction(SIGPROF, &sa, NULL);
        median_run(ntimes / 10);
        ours = median_run(ntimes);
        printf("%.0f %.0f\n", ours * 1e9, empty * 1e9);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "sample_gperf")) {
        struct sigaction sa, gperf_sa;
        double empty, theirs;
        int (*start)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "ProfilerStart");
        void (*stop)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "ProfilerStop");
        char path[] = "/tmp/pe-bench-gperf.XXXXXX";
        int fd = mkstemp(path);
        if (!start || !stop || fd < 0)
            return 1;
        close(fd);
        send_code = SI_KERNEL; /* as ITIMER_PROF's, should its handler look */
        /* libprofiler installs its handler when it loads: set it aside for
           the empty handler's run, put it back before ProfilerStart. */
        sigaction(SIGPROF, NULL, &gperf_sa);
        empty = empty_handler_run(atoi(argv[2]), &sa);
        sigaction(SIGPROF, &gperf_sa, NULL);
        if (!start(path)) /* arms its timer (1 Hz here) */
            return 1;
        median_run(ntimes / 10);
        theirs = median_run(ntimes);
        stop();
        unlink(path);
        printf("%.0f %.0f\n", theirs * 1e9, empty * 1e9);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "parts")) {
        struct sigaction sa;
        double best[4] = {1e18, 1e18, 1e18, 1e18};
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = parts_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigaction(SIGPROF, &sa, NULL);
        if (pe_unwind_init() < 0 || pe_ring_init(&pe_cpu_ring, 2048) < 0)
            return 1;
        sem_init(&pe_cpu_wake, 0, 0);
        __atomic_store_n(&pe_cpu_cookie, PE_COOKIE(1), __ATOMIC_RELEASE);
        nparts = atoi(argv[2]) / 10 + 1; /* warm */
        deep_parts(25);
        nparts = atoi(argv[2]);
        for (int r = 0; r < (argc >= 4 ? atoi(argv[3]) : 5); r++) {
            deep_parts(25); /* the same depth as `sample`: 30 frames below the handler */
            for (int k = 0; k < 4; k++)
                if (part_ns[k] < best[k])
                    best[k] = part_ns[k];
        }
        printf("%.0f %.0f %.0f %.0f %d %d\n", best[0], best[1], best[2], best[3], part_frames[0],
               part_frames[1]);
        return 0;
    }
    fprintf(stderr, "usage: bench_cpu work WAIT ITERS | sample N | parts N [ROUNDS]\n");
    return 2;
}
