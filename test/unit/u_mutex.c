/*
 * u_mutex.c: lock contention sampling without the interposers: the geometric
 * draw's mean, the timed slow path (what it records, what it does not, errno
 * and answers untouched), sampling at 1 in N, dormancy, the stack's shape,
 * recording from a signal handler while the thread records, a full table, and
 * the inline acquisition of a default mutex against glibc's own functions.
 */
#include <errno.h>
#include <gnu/libc-version.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../../contention/mutex.h"
#include "../../preload/init.h"
#include "../../preload/rand.h"
#include "../../stack/unwind.h"
#include "pe_test.h"

/* Totals of one kind over the whole table, and of the entry whose leaf is `leaf`. */
static void
totals(int kind, uintptr_t leaf, uint64_t *all, uint64_t *at_leaf, uint64_t *delay_at_leaf)
{
    pe_mutex_rec_t *v;
    uintptr_t pcs[PE_MUTEX_MAX_FRAMES];
    int n;

    *all = *at_leaf = 0;
    if (delay_at_leaf)
        *delay_at_leaf = 0;
    if (pe_mutex_snapshot(&v, &n) < 0)
        return;
    for (int i = 0; i < n; i++) {
        if (v[i].kind != kind)
            continue;
        *all += v[i].count;
        if (pe_mutex_stack(v[i].id, pcs, PE_MUTEX_MAX_FRAMES) > 0 && pcs[0] == leaf + 1) {
            *at_leaf += v[i].count;
            if (delay_at_leaf)
                *delay_at_leaf += v[i].delay_ns;
        }
    }
    free(v);
}

static struct timespec
in_ms(long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

/* ---- the draw -------------------------------------------------------------------- */

static void
test_draw(void)
{
    uint64_t rng = 0x1234567;
    double sum = 0;
    int64_t g, lo = INT64_MAX;
    const int n = 200000;

    CHECK(pe_mutex_draw(&rng, 1) == 1);
    CHECK(pe_mutex_draw(&rng, 0) == 1);
    for (int i = 0; i < n; i++) {
        g = pe_mutex_draw(&rng, 100);
        sum += (double)g;
        if (g < lo)
            lo = g;
    }
    CHECKF(sum / n > 97 && sum / n < 103, "mean interval %.2f for rate 100", sum / n);
    CHECK(lo >= 1);
    CHECK(pe_mutex_draw(&rng, INT64_MAX) >= 1);
}

/*
 * The draw is computed without libm (it may run in a signal handler): it must
 * give libm's G = 1 + floor(ln U / ln(1 - p)) for the same U, but where the two
 * straddle an integer, and so the geometric law: P(G = 1) = p and mean 1/p.
 */
static void
test_draw_distribution(void)
{
    static const int64_t rates[] = {2, 3, 10, 63, 64, 65, 100, 1000, 1000000, 1000000000};
    const int n = 200000;

    for (unsigned r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
        int64_t rate = rates[r];
        uint64_t rng = 0x9e3779b97f4a7c15ull + (uint64_t)r, ref = rng;
        double sum = 0, p = 1.0 / (double)rate;
        int ones = 0, differ = 0, far = 0;

        for (int i = 0; i < n; i++) {
            int64_t g = pe_mutex_draw(&rng, rate);
            double want = 1.0 + floor(log(pe_rand_unit(&ref)) / log1p(-p));
            differ += (double)g != want;
            far += fabs((double)g - want) > 1;
            ones += g == 1;
            sum += (double)g;
        }
        /* the series' ~1e-11 relative error moves a floor by one now and then,
           more often the larger G is */
        CHECKF(far == 0 && differ <= n / 10000 + (int)(n * 1e-11 * (double)rate),
               "rate %lld: %d of %d draws differ from libm's, %d by more than 1", (long long)rate,
               differ, n, far);
        /* mean 1/p, sd sqrt(1-p)/p: 5 standard errors */
        CHECKF(fabs(sum / n * p - 1) < 5 * sqrt(1 - p) / sqrt(n), "rate %lld: mean %.4g",
               (long long)rate, sum / n);
        CHECKF(fabs((double)ones / n - p) < 5 * sqrt(p * (1 - p) / n) + 1e-9,
               "rate %lld: P(G=1) %.5f, want %.5f", (long long)rate, (double)ones / n, p);
    }
}

/* ---- the slow path ----------------------------------------------------------------- */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int stop_holding;

static void *
holder(void *arg)
{
    pthread_mutex_lock(&held);
    while (!__atomic_load_n(&stop_holding, __ATOMIC_ACQUIRE))
        usleep(1000);
    pthread_mutex_unlock(&held);
    return NULL;
}

static uintptr_t locker_ra;

/* Stands in for an interposer: its own address is the leaf, its caller's site the ra. */
__attribute__((noinline)) static int
locker(int op, void *obj, pthread_mutex_t *m, const struct timespec *ts)
{
    locker_ra = (uintptr_t)__builtin_return_address(0);
    return pe_mutex_sampled(op, obj, m, ts, locker_ra, (uintptr_t)locker);
}

static void
test_slow_path(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, ec;
    pthread_mutexattr_t a;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    uintptr_t pcs[PE_MUTEX_MAX_FRAMES];
    uint64_t all, at, d;
    struct timespec ts;
    pe_mutex_rec_t *v;
    pthread_t t;
    int n, rc;

    pe_cfg.mutex_rate = 1;
    pe_mutex_thread_reset();

    errno = 4321;
    CHECK(locker(PE_MUTEX_OP_LOCK, &m, NULL, NULL) == 0);
    CHECK(errno == 4321);
    CHECK(pthread_mutex_trylock(&m) == EBUSY); /* really locked */
    pthread_mutex_unlock(&m);
    totals(PE_MUTEX_KIND_LOCK, (uintptr_t)locker, &all, &at, NULL);
    CHECK(at == 1);

    /* The stack: the interposer's address, then the program from its call site. */
    CHECK(pe_mutex_snapshot(&v, &n) == 0 && n >= 1);
    rc = 0;
    for (int i = 0; i < n; i++) {
        int k = pe_mutex_stack(v[i].id, pcs, PE_MUTEX_MAX_FRAMES);
        if (k >= 2 && pcs[0] == (uintptr_t)locker + 1)
            rc = pcs[1] == locker_ra;
    }
    free(v);
    CHECKF(rc, "the frame after the leaf is the caller's site %#lx", (unsigned long)locker_ra);

    /* An error returned at once is no wait: EDEADLK is answered, not recorded. */
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&ec, &a);
    pthread_mutex_lock(&ec);
    CHECK(locker(PE_MUTEX_OP_LOCK, &ec, NULL, NULL) == EDEADLK);
    totals(PE_MUTEX_KIND_LOCK, (uintptr_t)locker, &all, &at, NULL);
    CHECK(at == 1);
    pthread_mutex_unlock(&ec);

    /* A timed lock that times out is a wait (block profile), not an acquisition. */
    pthread_create(&t, NULL, holder, NULL);
    while (pthread_mutex_trylock(&held) == 0) {
        pthread_mutex_unlock(&held);
        usleep(1000);
    }
    ts = in_ms(30);
    CHECK(locker(PE_MUTEX_OP_TIMEDLOCK, &held, NULL, &ts) == ETIMEDOUT);
    totals(PE_MUTEX_KIND_WAIT, (uintptr_t)locker, &all, &at, &d);
    CHECK(at == 1);
    CHECKF(d >= 25000000 && d < 2000000000, "timed-out wait recorded as %llu ns",
           (unsigned long long)d);
    __atomic_store_n(&stop_holding, 1, __ATOMIC_RELEASE);
    /* ...and a lock that waits for the holder is an acquisition with its delay. */
    CHECK(locker(PE_MUTEX_OP_LOCK, &held, NULL, NULL) == 0);
    pthread_mutex_unlock(&held);
    pthread_join(t, NULL);
    totals(PE_MUTEX_KIND_LOCK, (uintptr_t)locker, &all, &at, &d);
    CHECK(at == 2);

    /* Condition waits: a timeout is a wait with its delay; the mutex is held again. */
    pthread_mutex_lock(&m);
    ts = in_ms(20);
    CHECK(locker(PE_MUTEX_OP_COND_TIMEDWAIT, &cv, &m, &ts) == ETIMEDOUT);
    CHECK(pthread_mutex_trylock(&m) == EBUSY);
    pthread_mutex_unlock(&m);
    totals(PE_MUTEX_KIND_WAIT, (uintptr_t)locker, &all, &at, &d);
    CHECK(at == 2);
    CHECK(d >= 25000000 + 15000000);

    /* Dormant: answered, never recorded. */
    pe_init_go_dormant();
    CHECK(locker(PE_MUTEX_OP_LOCK, &m, NULL, NULL) == 0);
    pthread_mutex_unlock(&m);
    pe_init_set_active();
    totals(PE_MUTEX_KIND_LOCK, (uintptr_t)locker, &all, &at, NULL);
    CHECK(at == 2);
}

/* ---- 1 in N ------------------------------------------------------------------------- */

__attribute__((noinline)) static int
sampled_locker(pthread_mutex_t *m)
{
    /* what an interposer does once its try-lock said EBUSY */
    if (pe_mutex_skip())
        return pthread_mutex_lock(m);
    return pe_mutex_sampled(PE_MUTEX_OP_LOCK, m, NULL, NULL, (uintptr_t)__builtin_return_address(0),
                            (uintptr_t)sampled_locker);
}

static void
test_rate(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    uint64_t all, at;
    const int events = 40000;

    pe_cfg.mutex_rate = 8;
    pe_mutex_thread_reset();
    for (int i = 0; i < events; i++) {
        sampled_locker(&m);
        pthread_mutex_unlock(&m);
    }
    totals(PE_MUTEX_KIND_LOCK, (uintptr_t)sampled_locker, &all, &at, NULL);
    /* 5000 expected, standard deviation ~66 */
    CHECKF(at > 4600 && at < 5400, "%llu of %d events sampled at 1 in 8", (unsigned long long)at,
           events);
    pe_cfg.mutex_rate = 1;
}

/* ---- a signal handler records while the thread records ------------------------------- */

static volatile int in_handler_records;

__attribute__((noinline)) static void
on_alarm(int sig)
{
    pe_mutex_record(PE_MUTEX_KIND_WAIT, 0, (uintptr_t)on_alarm, 1);
    in_handler_records++;
}

__attribute__((noinline)) static void
main_records(void)
{
    pe_mutex_record(PE_MUTEX_KIND_WAIT, 0, (uintptr_t)main_records, 1);
}

static void
test_signal(void)
{
    struct itimerval it = {{0, 500}, {0, 500}}, off = {{0, 0}, {0, 0}};
    uint64_t all0, all, at_main, at_handler;
    struct timespec t0, t1;
    int mine = 0;

    totals(PE_MUTEX_KIND_WAIT, 0, &all0, &at_main, NULL);

    signal(SIGALRM, on_alarm);
    setitimer(ITIMER_REAL, &it, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        main_records();
        mine++;
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 300000000L);
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_DFL);
    totals(PE_MUTEX_KIND_WAIT, (uintptr_t)main_records, &all, &at_main, NULL);
    totals(PE_MUTEX_KIND_WAIT, (uintptr_t)on_alarm, &all, &at_handler, NULL);
    CHECKF(at_main == (uint64_t)mine, "%llu of %d records from the thread",
           (unsigned long long)at_main, mine);
    /* A signal that lands while the thread unwinds records under "[unknown]": count all. */
    CHECKF(all - all0 == (uint64_t)(mine + in_handler_records) && in_handler_records > 0,
           "%llu records in all, %d from the thread, %d from the handler (%llu at its stack)",
           (unsigned long long)(all - all0), mine, in_handler_records,
           (unsigned long long)at_handler);
}

/* ---- a full table ------------------------------------------------------------------- */

static void
test_full(void)
{
    pe_mutex_stats_t st0, st;
    pe_mutex_rec_t *v;
    int n;

    uint64_t all, at[2];
    volatile int rounds = 2; /* not unrolled: one call site below */

    /* Round 0 records one stack; round 1 fills the table, then records it again. */
    for (int round = 0; round < rounds; round++) {
        if (round == 1) {
            pe_mutex_get_stats(&st0);
            /* distinct leaves make distinct stacks */
            for (uint64_t i = 0; i < st0.capacity + 500; i++)
                pe_mutex_record(PE_MUTEX_KIND_LOCK, 0, 0x100000 + i * 16, 10);
            pe_mutex_get_stats(&st);
            CHECK(st.entries == st.capacity);
            CHECKF(st.dropped >= 500, "dropped %llu", (unsigned long long)st.dropped);
            CHECK(st.sampled == st0.sampled + st0.capacity + 500);
            CHECK(pe_mutex_snapshot(&v, &n) == 0 && (uint64_t)n <= st.capacity + 2);
            free(v);
        }
        main_records(); /* one call site: the same stack both rounds */
        totals(PE_MUTEX_KIND_WAIT, (uintptr_t)main_records, &all, &at[round], NULL);
    }
    CHECKF(at[1] == at[0] + 1, "a known stack still counts when the table is full (%llu, %llu)",
           (unsigned long long)at[0], (unsigned long long)at[1]);
}

/* ---- the inline acquisition of a default mutex ------------------------------------ */

static int waiter_rc = -1;

static void *
waiter(void *arg)
{
    waiter_rc = pthread_mutex_lock(arg); /* glibc's: waits on the futex we hold */
    if (waiter_rc == 0)
        pthread_mutex_unlock(arg);
    return NULL;
}

/* A mutex of `type` (-1: none set) with `robust`/`protocol`/`pshared` as given; 1 if made. */
static int
make(pthread_mutex_t *m, int type, int robust, int protocol, int pshared)
{
    pthread_mutexattr_t a;
    int ok;

    pthread_mutexattr_init(&a);
    ok = (type < 0 || pthread_mutexattr_settype(&a, type) == 0) &&
         (!robust || pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0) &&
         pthread_mutexattr_setprotocol(&a, protocol) == 0 &&
         (!pshared || pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0) &&
         pthread_mutex_init(m, &a) == 0;
    pthread_mutexattr_destroy(&a);
    return ok;
}

static void
test_inline(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, k;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    pid_t tid = pe_gettid();
    struct timespec ts;
    pthread_t t;

    CHECK(tid == (pid_t)syscall(SYS_gettid));
    pe_mutex_inline_decide();
    CHECKF(pe_mutex_inline_state == 1, "glibc %s x86-64: the inline path is %d",
           gnu_get_libc_version(), pe_mutex_inline_state);
    if (pe_mutex_inline_state != 1)
        return;

    /* Taken inline, the mutex is glibc's held mutex in every field glibc reads. */
    CHECK(pe_mutex_inline_ok(&m, tid));
    CHECK(!pe_mutex_inline_ok(&m, 0)); /* tid not known yet: the try-lock path */
    CHECK(pe_mutex_take(&m, tid) == 1);
    CHECK(m.__data.__lock == 1 && m.__data.__owner == tid && m.__data.__nusers == 1);
    CHECK(pthread_mutex_trylock(&m) == EBUSY);
    CHECK(pe_mutex_take(&m, tid) == 0); /* held: a contention, nothing changed */
    CHECK(m.__data.__lock == 1 && m.__data.__nusers == 1);
    CHECK(pthread_mutex_destroy(&m) == EBUSY); /* glibc counts the user */
    ts = in_ms(0);
    CHECK(pthread_mutex_timedlock(&m, &ts) == ETIMEDOUT);
    CHECK(pthread_mutex_unlock(&m) == 0);
    CHECK(m.__data.__lock == 0 && m.__data.__owner == 0 && m.__data.__nusers == 0);

    /* A waiter in glibc's lock (futex) is woken by glibc's unlock of our take. */
    CHECK(pe_mutex_take(&m, tid) == 1);
    pthread_create(&t, NULL, waiter, &m);
    while (__atomic_load_n(&m.__data.__lock, __ATOMIC_RELAXED) != 2) /* it waits */
        usleep(1000);
    CHECK(pthread_mutex_unlock(&m) == 0);
    pthread_join(t, NULL);
    CHECK(waiter_rc == 0);

    /* A condition wait gives it back and takes it again (glibc's own bookkeeping). */
    CHECK(pe_mutex_take(&m, tid) == 1);
    ts = in_ms(5);
    CHECK(pthread_cond_timedwait(&cv, &m, &ts) == ETIMEDOUT);
    CHECK(pthread_mutex_trylock(&m) == EBUSY && m.__data.__nusers == 1);
    CHECK(pthread_mutex_unlock(&m) == 0);
    for (int i = 0; i < 1000; i++) {
        CHECK(pe_mutex_take(&m, tid) == 1);
        pthread_mutex_unlock(&m);
    }
    CHECK(pthread_mutex_destroy(&m) == 0);

    /* The kinds: default and normal, private or shared, inline; every other kind not. */
    CHECK(make(&k, -1, 0, PTHREAD_PRIO_NONE, 0) && pe_mutex_inline_ok(&k, tid));
    CHECK(make(&k, PTHREAD_MUTEX_NORMAL, 0, PTHREAD_PRIO_NONE, 0) && pe_mutex_inline_ok(&k, tid));
    CHECK(make(&k, PTHREAD_MUTEX_DEFAULT, 0, PTHREAD_PRIO_NONE, 1) && pe_mutex_inline_ok(&k, tid));
    CHECK(pe_mutex_take(&k, tid) == 1 && pthread_mutex_unlock(&k) == 0);
    CHECK(make(&k, PTHREAD_MUTEX_RECURSIVE, 0, PTHREAD_PRIO_NONE, 0) &&
          !pe_mutex_inline_ok(&k, tid));
    CHECK(make(&k, PTHREAD_MUTEX_ERRORCHECK, 0, PTHREAD_PRIO_NONE, 0) &&
          !pe_mutex_inline_ok(&k, tid));
    CHECK(make(&k, PTHREAD_MUTEX_ADAPTIVE_NP, 0, PTHREAD_PRIO_NONE, 0) &&
          !pe_mutex_inline_ok(&k, tid));
    CHECK(make(&k, -1, 1, PTHREAD_PRIO_NONE, 0) && !pe_mutex_inline_ok(&k, tid));
    CHECK(make(&k, -1, 0, PTHREAD_PRIO_INHERIT, 0) && !pe_mutex_inline_ok(&k, tid));
    CHECK(make(&k, -1, 0, PTHREAD_PRIO_PROTECT, 0) && !pe_mutex_inline_ok(&k, tid));

    /* The read-lock guess: free while only readers hold it, not while a writer does. */
    {
        pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
        pthread_rwlockattr_t ra;

        CHECK(pe_mutex_rd_free(&l));
        CHECK(pthread_rwlock_rdlock(&l) == 0 && pe_mutex_rd_free(&l));
        CHECK(pthread_rwlock_unlock(&l) == 0 && pe_mutex_rd_free(&l));
        CHECK(pthread_rwlock_wrlock(&l) == 0 && !pe_mutex_rd_free(&l));
        CHECK(pthread_rwlock_unlock(&l) == 0); /* left in its write phase: the try path */
        CHECK(pthread_rwlock_rdlock(&l) == 0 && pthread_rwlock_unlock(&l) == 0);
        CHECK(pe_mutex_rd_free(&l)); /* read phase again */
        pthread_rwlockattr_init(&ra);
        pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        CHECK(pthread_rwlock_init(&l, &ra) == 0 && !pe_mutex_rd_free(&l)); /* readers queue */
        pthread_rwlockattr_destroy(&ra);
    }

    /* Off: nothing is inline. */
    pe_mutex_inline_state = -1;
    CHECK(!pe_mutex_inline_ok(&m, tid));
    pe_mutex_inline_state = 1;
}

int
main(void)
{
    pe_real_init();
    if (pe_unwind_init() < 0)
        fprintf(stderr, "u_mutex: libunwind unavailable; frame pointers only\n");
    pe_init_set_active();
    CHECK(pe_mutex_rate() == 0); /* pe_cfg not loaded: off */
    test_draw();
    test_draw_distribution();
    test_slow_path();
    test_rate();
    test_signal();
    test_full();
    test_inline();
    return pe_test_done();
}
