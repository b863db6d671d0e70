/*
 * p_heap_cases.c: workloads with known allocation behaviour for the heap
 * profile, one per mode (argv[1]); each allocates from named noinline sites,
 * checks that the allocator's semantics are intact (contents kept by realloc,
 * calloc zeroed, alignments, malloc_usable_size, errno), prints "KEY N" ground-truth lines and
 * "ready", then waits until stdin is closed (or 60 s) so a test can fetch.
 *
 *   realloc  chains 16 B -> 64 KiB by realloc (moving), keeps a quarter
 *   calloc   reuses dirtied blocks through calloc; every byte must be 0
 *   aligned  posix_memalign, aligned_alloc, memalign, valloc, pvalloc sites
 *   threads  4 threads, 1:2:3:4 bytes, freeing each other's blocks
 *            (THREADS_PER_SITE=N: 4N at once, in two waves)
 *   fork     2 allocating threads while main forks children that allocate
 *   signal   a timer signal handler that allocates and frees on the main
 *            thread while it allocates (run over an async-signal-safe
 *            allocator: glibc's own malloc is not safe in handlers)
 *   grow     one buffer grown by realloc to 4 GiB, touching one byte per step
 *            (resident memory must stay small: no copy of big blocks)
 *   loop     two sites, 7:3 calls, until stdin closes (for /allocs_profile)
 *   burst    main and a second thread allocate a little, then wait for a line
 *            on stdin; then each makes exactly 1000 calls of 64 B
 *            (site_burst_main, site_burst_thread) and "burst_done" is printed:
 *            a recording started before the line must see every one
 * Exit status 0 when every semantic check held.
 */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int bad;
#define EXPECT(c)                                                                                  \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "p_heap_cases: %s:%d: %s\n", __FILE__, __LINE__, #c);                  \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)

static __thread uint64_t rng = 88172645463325252ull;

static uint64_t
next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t
pick_size(int maxsh)
{
    int sh = 4 + (int)(next() % (unsigned)(maxsh - 3));
    return ((size_t)1 << sh) + next() % ((size_t)1 << sh);
}

static void
out(const char *k, unsigned long long v)
{
    printf("%s %llu\n", k, v);
}

/* ---- realloc ------------------------------------------------------------------ */

__attribute__((noinline)) void *
site_realloc(void *p, size_t n)
{
    return realloc(p, n);
}

static void
mode_realloc(void)
{
    unsigned long long bytes = 0, live = 0, moved = 0;
    static void *volatile keep[1 << 16];
    int nkeep = 0;

    for (int chain = 0; chain < 16384; chain++) {
        unsigned char *p = NULL;
        size_t have = 0;
        for (size_t n = 16; n <= 65536; n *= 2) {
            unsigned char *q = site_realloc(p, n);
            EXPECT(q != NULL && malloc_usable_size(q) >= n);
            for (size_t i = 0; i < have; i += 61)
                if (q[i] != (unsigned char)(i * 7 + chain))
                    bad = 1;
            moved += p && q != p;
            for (size_t i = have; i < n; i++)
                q[i] = (unsigned char)(i * 7 + chain);
            have = n;
            p = q;
            bytes += n;
        }
        if ((chain & 3) == 0) {
            keep[nkeep++] = p;
            live += have;
        } else {
            EXPECT(site_realloc(p, 0) == NULL || 1); /* realloc(p, 0) frees */
        }
    }
    EXPECT(moved > 0 && (nkeep == 0 || keep[0] != NULL));
    out("realloc_bytes", bytes);
    out("live_bytes", live);
    out("moved", moved);
}

/* ---- calloc ------------------------------------------------------------------- */

__attribute__((noinline)) void *
site_calloc(size_t n, size_t m)
{
    return calloc(n, m);
}

static void
mode_calloc(void)
{
    unsigned long long bytes = 0;
    int zero_ok = 1;

    while (bytes < (1ull << 30)) {
        size_t n = pick_size(16), m = 1 + next() % 4;
        unsigned char *d = malloc(n * m), *p;
        memset(d, 0xAA, n * m);
        free(d);
        p = site_calloc(n, m);
        EXPECT(p != NULL);
        for (size_t i = 0; i < n * m; i++)
            if (p[i]) {
                zero_ok = 0;
                break;
            }
        free(p);
        bytes += n * m;
    }
    EXPECT(zero_ok);
    volatile size_t huge = SIZE_MAX / 2;
    errno = 0;
    EXPECT(calloc(huge, 4) == NULL && errno == ENOMEM);
    out("calloc_bytes", bytes);
    out("live_bytes", 0);
}

/* ---- aligned ------------------------------------------------------------------ */

__attribute__((noinline)) void *
site_posix_memalign(size_t a, size_t n)
{
    void *p = NULL;
    EXPECT(posix_memalign(&p, a, n) == 0);
    return p;
}
__attribute__((noinline)) void *
site_aligned_alloc(size_t a, size_t n)
{
    return aligned_alloc(a, n);
}
__attribute__((noinline)) void *
site_memalign(size_t a, size_t n)
{
    return memalign(a, n);
}
__attribute__((noinline)) void *
site_valloc(size_t n)
{
    return valloc(n);
}
__attribute__((noinline)) void *
site_pvalloc(size_t n)
{
    return pvalloc(n);
}

static void
mode_aligned(void)
{
    unsigned long long b[5] = {0};
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    const unsigned long long each = 512ull << 20;
    void *p = (void *)1;

    for (int k = 0; k < 5; k++) {
        while (b[k] < each) {
            size_t n = pick_size(16), a = (size_t)16 << (next() % 9); /* 16 .. 4096 */
            void *q;
            switch (k) {
            case 0: q = site_posix_memalign(a, n); break;
            case 1:
                n = (n + a - 1) & ~(a - 1);
                q = site_aligned_alloc(a, n);
                break;
            case 2: q = site_memalign(a, n); break;
            case 3:
                a = ps;
                q = site_valloc(n);
                break;
            default:
                a = ps;
                q = site_pvalloc(n);
                n = (n + ps - 1) & ~(ps - 1);
                break;
            }
            EXPECT(q != NULL && ((uintptr_t)q & (a - 1)) == 0);
            /* Every usable byte is ours to write (sampled blocks have a header). */
            EXPECT(malloc_usable_size(q) >= n);
            memset(q, 1, malloc_usable_size(q));
            free(q);
            b[k] += n;
        }
    }
    /* posix_memalign reports the error and leaves errno alone. */
    errno = 1234;
    EXPECT(posix_memalign(&p, 3, 64) == EINVAL && errno == 1234 && p == (void *)1);
    EXPECT(posix_memalign(&p, 0, 64) == EINVAL && errno == 1234 && p == (void *)1);
    EXPECT(posix_memalign(&p, sizeof(void *) / 2, 64) == EINVAL && p == (void *)1);
    out("posix_memalign_bytes", b[0]);
    out("aligned_alloc_bytes", b[1]);
    out("memalign_bytes", b[2]);
    out("valloc_bytes", b[3]);
    out("pvalloc_bytes", b[4]);
}

/* ---- threads ------------------------------------------------------------------ */

#define SLOTS 16384
static void *slots[SLOTS];
static unsigned long long tbytes[5];
static int thread_share = 1; /* threads per site and wave times waves */

static void
swap_in(void *p)
{
    void *old = __atomic_exchange_n(&slots[next() % SLOTS], p, __ATOMIC_ACQ_REL);
    free(old); /* often another thread's block */
}

#define THREAD_SITE(k)                                                                             \
    __attribute__((noinline)) void *thread_site_##k(size_t n)                                      \
    {                                                                                              \
        return malloc(n);                                                                          \
    }                                                                                              \
    static void *thread_main_##k(void *arg)                                                        \
    {                                                                                              \
        unsigned long long done = 0,                                                               \
                           want = (unsigned long long)(k) * (640ull << 20) / thread_share;         \
        rng ^= (uint64_t)(k)*0x9E3779B97F4A7C15ull ^ (uintptr_t)&done;                             \
        while (done < want) {                                                                      \
            size_t n = pick_size(16);                                                              \
            size_t *p = thread_site_##k(n);                                                        \
            p[0] = n;                                                                              \
            done += n;                                                                             \
            swap_in(p);                                                                            \
        }                                                                                          \
        __atomic_fetch_add(&tbytes[k], done, __ATOMIC_RELAXED);                                    \
        return arg;                                                                                \
    }
THREAD_SITE(1)
THREAD_SITE(2)
THREAD_SITE(3)
THREAD_SITE(4)

/* THREADS_PER_SITE=N: N threads per site at once (4N alive), in two waves
   (threads that exit, then new ones). */
static void
mode_threads(void)
{
    void *(*fn[4])(void *) = {thread_main_1, thread_main_2, thread_main_3, thread_main_4};
    const char *env = getenv("THREADS_PER_SITE");
    int per = env && atoi(env) > 1 ? atoi(env) : 1, waves = per > 1 ? 2 : 1;
    pthread_t t[256];
    unsigned long long live = 0;
    char key[32];

    if (per > 64)
        per = 64;
    thread_share = per * waves;
    for (int w = 0; w < waves; w++) {
        for (int i = 0; i < 4 * per; i++)
            EXPECT(pthread_create(&t[i], NULL, fn[i % 4], NULL) == 0);
        for (int i = 0; i < 4 * per; i++)
            pthread_join(t[i], NULL);
    }
    for (int i = 0; i < SLOTS; i++)
        if (slots[i])
            live += *(size_t *)slots[i];
    for (int k = 1; k <= 4; k++) {
        snprintf(key, sizeof(key), "thread_site_%d_bytes", k);
        out(key, tbytes[k]);
    }
    out("live_bytes", live);
}

/* ---- fork --------------------------------------------------------------------- */

static volatile int stop_threads;
static void *shared[1024];

static void *
churn(void *arg)
{
    while (!stop_threads) {
        void *p = malloc(pick_size(12));
        void *old = __atomic_exchange_n(&shared[next() % 1024], p, __ATOMIC_ACQ_REL);
        free(old);
    }
    return arg;
}

__attribute__((noinline)) void *
site_fork_child(size_t n)
{
    return malloc(n);
}

static void
child_work(void)
{
    void *mine[256] = {0};

    for (int i = 0; i < 20000; i++) {
        int j = (int)(next() % 256);
        mine[j] = realloc(mine[j], pick_size(14));
        if (!mine[j])
            _exit(3);
        if (i % 100 == 0) {
            void *p = site_fork_child(pick_size(16));
            if (!p)
                _exit(4);
            free(p);
        }
    }
    /* Blocks the parent allocated (some of them sampled) freed in the child. */
    for (int i = 0; i < 1024; i++) {
        free(shared[i]);
        shared[i] = NULL;
    }
    for (int i = 0; i < 256; i++)
        free(mine[i]);
    _exit(0);
}

static void
mode_fork(void)
{
    pthread_t t[2];
    int ok = 0, hung = 0, failed = 0;

    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    for (int n = 0; n < 100; n++) {
        int st = 0, done = 0;
        pid_t pid = fork();
        if (pid == 0)
            child_work();
        EXPECT(pid > 0);
        for (int w = 0; w < 1000 && !done; w++) { /* up to 10 s */
            pid_t r = waitpid(pid, &st, WNOHANG);
            if (r == pid)
                done = 1;
            else
                usleep(10000);
        }
        if (!done) {
            hung++;
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            ok++;
        } else {
            failed++;
        }
        for (int k = 0; k < 1000; k++)
            free(site_fork_child(pick_size(16)));
    }
    stop_threads = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    EXPECT(hung == 0 && failed == 0);
    out("children_ok", (unsigned long long)ok);
    out("children_hung", (unsigned long long)hung);
    out("children_failed", (unsigned long long)failed);
}

/* ---- signal ------------------------------------------------------------------- */

#define RING 256
static void *ring[RING];
static volatile unsigned long long handler_runs;

__attribute__((noinline)) void *
site_signal_handler(size_t n)
{
    return malloc(n);
}

static void
on_timer(int sig)
{
    int saved = errno;
    unsigned i = (unsigned)(handler_runs % RING);
    void *p = site_signal_handler(64 + handler_runs % 4000);

    (void)sig;
    if (p)
        memset(p, 3, 64);
    free(ring[i]); /* frees blocks this handler allocated, some sampled */
    ring[i] = p;
    if (handler_runs % 7 == 0)
        ring[i] = realloc(ring[i], 8192);
    handler_runs++;
    errno = saved;
}

__attribute__((noinline)) void *
site_signal_main(size_t n)
{
    return malloc(n);
}

static void
mode_signal(void)
{
    struct sigaction sa;
    struct sigevent sev;
    struct itimerspec its = {{0, 50000}, {0, 50000}}; /* every 50 us */
    timer_t tm;
    void *live[512] = {0};

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_timer;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGALRM;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    EXPECT(timer_create(CLOCK_MONOTONIC, &sev, &tm) == 0);
    timer_settime(tm, 0, &its, NULL);
    int armed = 1;
    for (int i = 0; i < 1500000; i++) {
        int j = (int)(next() % 512);
        /* A few thousand interruptions on an idle machine; on a loaded one the
           wall-clock timer keeps a signal pending whenever the thread runs and the
           loop crawls (200,000 runs, 90 s), so the storm stops at 20,000. */
        if (armed && handler_runs >= 20000) {
            struct itimerspec off = {{0, 0}, {0, 0}};
            timer_settime(tm, 0, &off, NULL);
            armed = 0;
        }
        free(live[j]);
        live[j] = site_signal_main(16 + next() % 496);
        EXPECT(live[j] != NULL);
    }
    timer_delete(tm);
    signal(SIGALRM, SIG_IGN);
    EXPECT(handler_runs > 100);
    out("handler_runs", handler_runs);
}

/* ---- loop (for /allocs_profile) ------------------------------------------------ */

__attribute__((noinline)) void *
site_loop_a(size_t n)
{
    return malloc(n);
}
__attribute__((noinline)) void *
site_loop_b(size_t n)
{
    return malloc(n);
}

/* ---- grow --------------------------------------------------------------------- */

static long
hwm_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmHWM:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

__attribute__((noinline)) void *
site_grow(void *p, size_t n)
{
    return realloc(p, n);
}

/* One buffer grown by realloc from 1 MiB to 4 GiB, only its last byte written
   at each size: glibc moves big blocks with mremap, so neither time nor
   resident memory grows with the size.  A profiler that copied sampled
   blocks itself would touch all 4 GiB. */
static void
mode_grow(void)
{
    char *p = NULL;
    unsigned long long bytes = 0;

    for (size_t n = 1 << 20; n <= ((size_t)4 << 30); n *= 2) {
        char *q = site_grow(p, n);
        EXPECT(q != NULL);
        if (!q)
            break;
        EXPECT(!p || q[n / 2 - 1] == 7);
        q[n - 1] = 7;
        p = q;
        bytes += n;
    }
    out("grow_bytes", bytes);
    out("live_bytes", (size_t)4 << 30);
    out("hwm_kb", (unsigned long long)hwm_kb());
    EXPECT(hwm_kb() < 256 * 1024);
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Allocate from two sites, 7 calls : 3 calls of the same size mix, until
   stdin closes (at most 120 s); print the running byte total every 100 ms. */
static int
mode_loop(void)
{
    unsigned long long bytes = 0;
    struct pollfd pfd = {0, POLLIN, 0};
    double last = now_s(), start = last;

    printf("ready\n");
    fflush(stdout);
    for (unsigned long i = 0;; i++) {
        size_t n = pick_size(12);
        void *p = (i % 10) < 7 ? site_loop_a(n) : site_loop_b(n);
        EXPECT(p != NULL);
        free(p);
        bytes += n;
        if ((i & 4095) == 0) {
            double t = now_s();
            if (t - last >= 0.1) {
                printf("loop_bytes %llu %.3f\n", bytes, t);
                fflush(stdout);
                last = t;
                if (poll(&pfd, 1, 0) > 0 || t - start > 120)
                    break;
            }
        }
    }
    return bad;
}

/* ---- burst ------------------------------------------------------------------- */

#define BURST 1000
static volatile int burst_go, burst_thread_done;

__attribute__((noinline)) void *
site_burst_main(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) void *
site_burst_thread(size_t n)
{
    return malloc(n);
}

/* Some allocation first, so that the countdown is part way into a chunk. */
static void
burst_warm(void)
{
    for (int i = 0; i < 3000; i++)
        free(malloc(100));
}

static void
burst(void *(*site)(size_t))
{
    static __thread void *keep[BURST];

    for (int i = 0; i < BURST; i++)
        keep[i] = site(64);
    for (int i = 0; i < BURST; i++)
        free(keep[i]);
}

static void *
burst_thread(void *arg)
{
    struct timespec ms = {0, 1000000};

    (void)arg;
    burst_warm();
    __atomic_store_n(&burst_thread_done, 1, __ATOMIC_SEQ_CST); /* warmed */
    while (!__atomic_load_n(&burst_go, __ATOMIC_SEQ_CST))
        nanosleep(&ms, NULL);
    burst(site_burst_thread);
    return NULL;
}

static void
mode_burst(void)
{
    struct timespec ms = {0, 1000000};
    pthread_t th;
    char line[16];

    burst_warm();
    EXPECT(pthread_create(&th, NULL, burst_thread, NULL) == 0);
    while (!__atomic_load_n(&burst_thread_done, __ATOMIC_SEQ_CST))
        nanosleep(&ms, NULL);
    printf("ready\n");
    fflush(stdout);
    if (read(0, line, sizeof(line)) <= 0) /* read(2): no stdio buffer to allocate */
        return;
    __atomic_store_n(&burst_go, 1, __ATOMIC_SEQ_CST);
    burst(site_burst_main);
    pthread_join(th, NULL);
    printf("burst_done\n");
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    struct pollfd pfd = {0, POLLIN, 0};

    if (!strcmp(m, "realloc"))
        mode_realloc();
    else if (!strcmp(m, "calloc"))
        mode_calloc();
    else if (!strcmp(m, "aligned"))
        mode_aligned();
    else if (!strcmp(m, "threads"))
        mode_threads();
    else if (!strcmp(m, "fork"))
        mode_fork();
    else if (!strcmp(m, "signal"))
        mode_signal();
    else if (!strcmp(m, "grow"))
        mode_grow();
    else if (!strcmp(m, "loop"))
        return mode_loop();
    else if (!strcmp(m, "burst")) {
        mode_burst();
        out("semantics_ok", !bad);
        poll(&pfd, 1, 60000);
        return bad;
    } else {
        fprintf(stderr, "usage: p_heap_cases realloc|calloc|aligned|threads|fork|signal\n");
        return 2;
    }
    out("semantics_ok", !bad);
    printf("ready\n");
    fflush(stdout);
    poll(&pfd, 1, 60000);
    return bad;
}
