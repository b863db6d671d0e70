/*
 * u_sampler_newthread.c: a thread that starts while the collector scans
 * /proc/self/task keeps the timer its start hook armed.  Each round opens a
 * CPU session (its collector scans at once) and starts threads during those
 * scans; once the scans are over, /proc/self/timers must show a timer for
 * every one of them.  Before the fix a scan that had listed the tasks before
 * such a thread began swept away the timer its hook armed, and no later check
 * noticed (the thread count matched): the thread went unsampled until the
 * next full scan, 10 s on.
 *
 * The kernel's own list of timers is the ground truth here, not samples: on
 * a busy machine a thread's CPU timer can stay silent for 100 ms of CPU (its
 * expiry is handled at ticks only), which would make a missed sample prove
 * nothing.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../preload/config.h"
#include "../../preload/guard.h"
#include "../../profile/profile.h"
#include "../../sampler/sampler.h"
#include "../../stack/unwind.h"
#include "pe_test.h"

#define ROUNDS 40
#define THREADS 6
#define IDLE 100

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int round_over, idle_stop;

static void
spin_us(long us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* Threads that only wait: each scan lists them and arms each a timer, which
   keeps the scan long enough for new threads to start inside it. */
static void *
idler(void *arg)
{
    pthread_mutex_lock(&lock);
    while (!idle_stop)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *
waiter(void *arg)
{
    pid_t *tid = arg;

    pe_sampler_thread_started(); /* as preload/events.c does on a new thread */
    pthread_mutex_lock(&lock);
    *tid = pe_gettid();
    pthread_cond_broadcast(&cond);
    while (!round_over)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    pe_sampler_thread_exiting();
    return NULL;
}

/* Set *flag under the lock, wake the waiters, and join the n threads. */
static void
release(int *flag, pthread_t *th, int n)
{
    pthread_mutex_lock(&lock);
    *flag = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* Has tid a timer that signals it?  /proc/self/timers: "notify: signal/tid.N". */
static int
has_timer(pid_t tid)
{
    char line[256], want[64];
    FILE *f = fopen("/proc/self/timers", "r");
    int found = 0;

    snprintf(want, sizeof(want), "notify: signal/tid.%d\n", (int)tid);
    if (!f)
        return -1;
    while (!found && fgets(line, sizeof(line), f))
        found = !strcmp(line, want);
    fclose(f);
    return found;
}

int
main(void)
{
    pthread_t idle[IDLE];
    int missed = 0, checked = 0;
    FILE *f = fopen("/proc/self/timers", "r");

    if (!f) {
        puts("u_sampler_newthread: skipped (no /proc/self/timers)");
        return 77;
    }
    fclose(f);
    CHECK(pe_unwind_init() == 0);
    CHECK(pe_sampler_init() == 0);
    pe_cfg.cpu_engine = PE_CPU_ENGINE_TIMER; /* the timer engine's mechanics */
    for (int i = 0; i < IDLE; i++)
        CHECK(pthread_create(&idle[i], NULL, idler, NULL) == 0);
    for (int r = 0; r < ROUNDS; r++) {
        pe_sampler_win_t *w;
        pthread_t th[THREADS];
        pid_t tids[THREADS];
        double running;

        memset(tids, 0, sizeof(tids));
        round_over = 0;
        CHECK(pe_sampler_open(0.01, 100000, &w, &running) == 0);
        /* spread over the collector's first scans (without the idle threads
           the second ended ~100 us after open returned and took ~40 us):
           some threads start during one */
        spin_us(10 * (r % 16));
        for (int i = 0; i < THREADS; i++) {
            CHECK(pthread_create(&th[i], NULL, waiter, &tids[i]) == 0);
            spin_us(15);
        }
        pthread_mutex_lock(&lock);
        for (int i = 0; i < THREADS; i++)
            while (!tids[i])
                pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        /* the scans at the session's start are over long before this; the
           next check is 1 s away */
        spin_us(30000);
        for (int i = 0; i < THREADS; i++) {
            int t = has_timer(tids[i]);
            missed += t == 0;
            checked += t >= 0;
        }
        release(&round_over, th, THREADS);
        pe_prof_free(pe_sampler_close(w));
    }
    release(&idle_stop, idle, IDLE);
    CHECKF(checked == ROUNDS * THREADS, "%d of %d threads checked", checked, ROUNDS * THREADS);
    CHECKF(missed == 0, "%d of %d threads that started with their session have no timer", missed,
           ROUNDS * THREADS);
    return pe_test_done();
}
