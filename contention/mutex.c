/*
 * mutex.c: lock contention sampling: the per-thread geometric countdown, the
 * timed real call of a sampled wait, and the fixed (kind, stack) -> totals
 * table the two contention endpoints read.  The interposers themselves are in
 * mutex_hooks.c; the profiles in mutex_profile.c (sampler/kind.h).  The design (paths,
 * sampling, what is recorded) is mutex.h's.
 *
 *   tab        the (kind, stack) entries: preload/stacktab.h, the kind as
 *              the tag; ids 0 and 1 are the "[unknown]" stacks of the two kinds
 *   totals[]   per entry, the sampled events and their total delay
 *
 * Signal-safe: pe_mutex_sampled, pe_mutex_record, pe_mutex_draw; not the readers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../preload/clock.h"
#include "../preload/init.h"
#include "../preload/rand.h"
#include "../preload/stacktab.h"
#include "../stack/unwind.h"
#include "../trace/feed.h"
#include "mutex.h"

#define PE_MUTEX_ENTS 8192u /* distinct (kind, stack) entries kept */
#define PE_MUTEX_BUCKETS (PE_MUTEX_ENTS * 2)
#define PE_MUTEX_FIRST_ID 2u /* 0, 1: "[unknown]" of each kind */
/* How deep below our own frames the program's call site may lie in an unwound stack. */
#define PE_MUTEX_SEARCH 8

/* One entry's totals; relaxed atomics. */
typedef struct mx_totals_s {
    uint64_t count;    /* sampled events */
    uint64_t delay_ns; /* their total delay */
} mx_totals_t;

/* Everything in one mapping; tab points into the arrays beside it. */
typedef struct mx_table_s {
    pe_stacktab_t tab;
    uint32_t buckets[PE_MUTEX_BUCKETS];
    pe_stacktab_ent_t ents[PE_MUTEX_ENTS];
    uintptr_t frames[PE_MUTEX_ENTS * PE_MUTEX_MAX_FRAMES];
    mx_totals_t totals[PE_MUTEX_ENTS];
} mx_table_t;

/* The table, mapped on the first sampled event (NORESERVE: untouched pages cost nothing). */
static mx_table_t *table;
static int table_failed;
/* Statistics for the profile comments; relaxed atomics, written by recorders. */
static uint64_t st_sampled, st_dropped, st_no_stack;

/* ---- helpers ---------------------------------------------------------------------- */

/* The table, mapping it on first use; NULL if that failed.  Racing mappers: one CAS wins. */
PE_SIGSAFE static mx_table_t *
table_get(void)
{
    mx_table_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE), *mine = NULL;
    void *p;

    if (PE_LIKELY(t != NULL) || __atomic_load_n(&table_failed, __ATOMIC_RELAXED))
        return t;
    p = mmap(NULL, sizeof(mx_table_t), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        __atomic_store_n(&table_failed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    mine = p;
    pe_stacktab_setup(&mine->tab, mine->buckets, mine->ents, mine->frames, PE_MUTEX_ENTS,
                      PE_MUTEX_ENTS * PE_MUTEX_MAX_FRAMES, PE_MUTEX_FIRST_ID);
    mine->ents[PE_MUTEX_KIND_WAIT].tag = PE_MUTEX_KIND_WAIT;
    if (__atomic_compare_exchange_n(&table, &t, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return mine;
    munmap(mine, sizeof(mx_table_t)); /* another thread mapped it first */
    return t;
}

/*
 * The waiter's stack into pcs[PE_MUTEX_MAX_FRAMES + PE_MUTEX_SEARCH]: the
 * interposer (leaf) and then the program from its call site `ra` outwards.
 * Our own frames (record, sampled, perhaps the hook) are cut at `ra`; if `ra`
 * is not among the first frames (a frame-pointer walk that lost it), the stack
 * is kept whole rather than guessed at.  One buffer: the sampled path runs on
 * the program's stack, perhaps a small one.  Returns at most PE_MUTEX_MAX_FRAMES.
 */
__attribute__((noinline)) PE_SIGSAFE static int
take_stack(uintptr_t *pcs, uintptr_t ra, uintptr_t leaf)
{
    int n = pe_unwind_here(pcs + 1, PE_MUTEX_MAX_FRAMES + PE_MUTEX_SEARCH - 1, 0), start = 0;

    if (n <= 0)
        return 0;
    for (int i = 0; i < n && i < PE_MUTEX_SEARCH; i++) {
        if (pcs[1 + i] == ra) {
            start = i;
            break;
        }
    }
    n -= start;
    if (n > PE_MUTEX_MAX_FRAMES - 1)
        n = PE_MUTEX_MAX_FRAMES - 1;
    memmove(pcs + 1, pcs + 1 + start, (size_t)n * sizeof(*pcs));
    if (!leaf) {
        memmove(pcs, pcs + 1, (size_t)n * sizeof(*pcs));
        return n;
    }
    pcs[0] = leaf + 1; /* stored as a return address: the model subtracts one */
    return n + 1;
}

PE_SIGSAFE static int
call_real(int op, void *obj, pthread_mutex_t *m, const struct timespec *abstime)
{
    switch (op) {
    case PE_MUTEX_OP_LOCK: return PE_MUTEX_REAL(pthread_mutex_lock)(obj);
    case PE_MUTEX_OP_TIMEDLOCK: return PE_MUTEX_REAL(pthread_mutex_timedlock)(obj, abstime);
    case PE_MUTEX_OP_RDLOCK: return PE_MUTEX_REAL(pthread_rwlock_rdlock)(obj);
    case PE_MUTEX_OP_WRLOCK: return PE_MUTEX_REAL(pthread_rwlock_wrlock)(obj);
    case PE_MUTEX_OP_COND_WAIT: return PE_MUTEX_REAL(pthread_cond_wait)(obj, m);
    case PE_MUTEX_OP_COND_TIMEDWAIT: return PE_MUTEX_REAL(pthread_cond_timedwait)(obj, m, abstime);
    }
    return EINVAL;
}

/*
 * What a finished wait counts as: an acquisition (both profiles), another wait
 * (block only), or nothing (-1: an error returned at once, e.g. EDEADLK on an
 * error-checking mutex the caller owns, EINVAL).
 */
PE_SIGSAFE static int
classify(int op, int rc)
{
    switch (op) {
    case PE_MUTEX_OP_LOCK:
    case PE_MUTEX_OP_TIMEDLOCK:
    case PE_MUTEX_OP_RDLOCK:
    case PE_MUTEX_OP_WRLOCK:
        if (rc == 0 || rc == EOWNERDEAD)
            return PE_MUTEX_KIND_LOCK;
        return rc == ETIMEDOUT ? PE_MUTEX_KIND_WAIT : -1;
    default: return rc == 0 || rc == ETIMEDOUT ? PE_MUTEX_KIND_WAIT : -1;
    }
}

/* ---- sampling --------------------------------------------------------------------- */

/*
 * Events until and including the next sampled one, G ~ Geometric(p = 1/rate)
 * on {1, 2, ...}: G = 1 + floor(ln U / ln(1 - p)), U uniform in (0, 1].
 * Counting down G per thread samples every event independently with
 * probability p (the memoryless property), so count * rate and delay * rate
 * are unbiased estimates, with no clock read or random draw on unsampled events.
 * Without libm (this runs in the lock interposers, perhaps in a signal
 * handler): -ln U by preload/rand.h's series, and -ln(1 - p) by its own
 * series p + p^2/2 + ... when p is small (1 - p would lose p's digits),
 * relative error under 1e-15 for p <= 1/64.  floor is the truncation of a
 * value known to be >= 0 and below 2^62.
 */
static double
neg_log1m(double p)
{
    double sum = 0, term = p;

    if (p > 1.0 / 64)
        return pe_rand_neg_log(1.0 - p);
    for (int k = 1; k <= 9; k++, term *= p)
        sum += term / k;
    return sum;
}

PE_SIGSAFE int64_t
pe_mutex_draw(uint64_t *rng, int64_t rate)
{
    double x;

    if (rate <= 1)
        return 1;
    x = pe_rand_neg_log(pe_rand_unit(rng)) / neg_log1m(1.0 / (double)rate);
    if (!(x >= 0.0))
        return 1;
    return x >= (double)(INT64_MAX / 4 - 1) ? INT64_MAX / 4 : 1 + (int64_t)x;
}

PE_SIGSAFE void
pe_mutex_record(int kind, uintptr_t ra, uintptr_t leaf, uint64_t delay_ns)
{
    uintptr_t pcs[PE_MUTEX_MAX_FRAMES + PE_MUTEX_SEARCH];
    mx_table_t *t;
    uint32_t id;
    int n;

    __atomic_fetch_add(&st_sampled, 1, __ATOMIC_RELAXED);
    t = table_get();
    if (!t) {
        __atomic_fetch_add(&st_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    /* Lock calls made while we unwind (libunwind's own mutexes) pass straight through. */
    pe_guard_enter();
    n = take_stack(pcs, ra, leaf);
    if (n > 0) {
        id = pe_stacktab_intern(&t->tab, (unsigned)kind, pcs, n);
    } else {
        id = (uint32_t)kind; /* "[unknown]" of this kind */
        __atomic_fetch_add(&st_no_stack, 1, __ATOMIC_RELAXED);
    }
    if (id == PE_STACKTAB_FULL) {
        __atomic_fetch_add(&st_dropped, 1, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&t->totals[id].count, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&t->totals[id].delay_ns, delay_ns, __ATOMIC_RELAXED);
    }
    pe_guard_exit();
}

PE_SIGSAFE int
pe_mutex_sampled(int op, void *obj, pthread_mutex_t *m, const struct timespec *abstime,
                 uintptr_t ra, uintptr_t leaf)
{
    pe_tls_t *t = &pe_tls;
    int64_t rate = pe_cfg.mutex_rate;
    uint64_t t0, t1;
    int rc, kind, saved_errno;

    if (t->mutex_countdown < 0) {
        /* The thread's first event: draw its interval, then judge this event by it. */
        if (!t->mutex_rng)
            pe_rand_seed(&t->mutex_rng);
        t->mutex_countdown = pe_mutex_draw(&t->mutex_rng, rate) - 1;
        if (t->mutex_countdown > 0)
            return call_real(op, obj, m, abstime);
    }
    if (!t->mutex_rng)
        pe_rand_seed(&t->mutex_rng);
    t->mutex_countdown = pe_mutex_draw(&t->mutex_rng, rate);
    if (!pe_init_active()) /* dormant (fork child, bind failed, PROFEP_MATCH) */
        return call_real(op, obj, m, abstime);
    t0 = (uint64_t)pe_clock_ns(CLOCK_MONOTONIC);
    rc = call_real(op, obj, m, abstime);
    saved_errno = errno;
    t1 = (uint64_t)pe_clock_ns(CLOCK_MONOTONIC);
    kind = classify(op, rc);
    if (kind >= 0) {
        pe_mutex_record(kind, ra, leaf, t1 - t0);
        PE_TRACE_EVENT(kind == PE_MUTEX_KIND_LOCK ? PE_TJ_EV_LOCK : PE_TJ_EV_COND, (int64_t)t0,
                       (int64_t)t1, 0, NULL); /* a trace's lock waits (trace/feed.h) */
    }
    errno = saved_errno;
    return rc;
}

int pe_mutex_inline_state;

/*
 * Lock and unlock a mutex of ours with glibc's functions, and take it inline
 * once, checking each field mutex.h's inline acquisition relies on: a default
 * mutex's kind is 0 and stays 0 when locked (forced lock elision would set a
 * flag there on the first lock), glibc's lock leaves the lock word at 1, our
 * tid as the owner and one user, its unlock clears them, and after our inline
 * take glibc's try-lock sees the mutex held, its unlock frees it and destroy
 * accepts it.  Any difference turns the inline path off for good.  Before
 * pe_real is resolved nothing is decided (the caller takes the try-lock path).
 */
PE_SIGSAFE void
pe_mutex_inline_decide(void)
{
    int ok = 0;
#if defined(__GLIBC__) && defined(__x86_64__)
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    int (*lock)(pthread_mutex_t *) = __atomic_load_n(&pe_real.pthread_mutex_lock, __ATOMIC_RELAXED);
    pid_t tid = pe_gettid();

    if (!lock)
        return; /* before the real functions are known: undecided, ask again later */
    if (tid > 0 && m.__data.__kind == 0 && lock(&m) == 0) {
        ok = m.__data.__lock == 1 && m.__data.__owner == tid && m.__data.__nusers == 1 &&
             m.__data.__kind == 0;
        ok &= pthread_mutex_unlock(&m) == 0;
        ok &= m.__data.__lock == 0 && m.__data.__owner == 0 && m.__data.__nusers == 0;
        if (ok && pe_mutex_take(&m, tid)) {
            ok = pthread_mutex_trylock(&m) == EBUSY && pthread_mutex_destroy(&m) == EBUSY;
            ok &= pthread_mutex_unlock(&m) == 0;
            ok &= m.__data.__lock == 0 && m.__data.__nusers == 0 && m.__data.__owner == 0 &&
                  pthread_mutex_destroy(&m) == 0;
        } else {
            ok = 0;
        }
    }
#endif
    __atomic_store_n(&pe_mutex_inline_state, ok ? 1 : -1, __ATOMIC_RELAXED);
}

void *
pe_mutex_next(const char *name)
{
    pe_real_init();
    /* Another thread may still be resolving pe_real: ask the loader ourselves. */
    return dlsym(RTLD_NEXT, name);
}

/* ---- readers ---------------------------------------------------------------------- */

int64_t
pe_mutex_rate(void)
{
    return pe_cfg.mutex_rate > 0 ? pe_cfg.mutex_rate : 0;
}

int
pe_mutex_snapshot(pe_mutex_rec_t **out, int *n)
{
    mx_table_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    uint32_t end, i;
    pe_mutex_rec_t *v;
    int k = 0;

    *out = NULL;
    *n = 0;
    if (!t)
        return 0;
    end = pe_stacktab_count(&t->tab);
    v = malloc(end * sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (i = 0; i < end; i++) {
        const pe_stacktab_ent_t *e = pe_stacktab_ent(&t->tab, i);
        uint64_t c;

        if (!e)
            continue;
        c = __atomic_load_n(&t->totals[i].count, __ATOMIC_RELAXED);
        if (!c)
            continue;
        v[k].id = i;
        v[k].kind = (int)e->tag;
        v[k].count = c;
        v[k].delay_ns = __atomic_load_n(&t->totals[i].delay_ns, __ATOMIC_RELAXED);
        k++;
    }
    *out = v;
    *n = k;
    return 0;
}

int
pe_mutex_stack(uint32_t id, uintptr_t *pcs, int max)
{
    mx_table_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);

    return t ? pe_stacktab_frames(&t->tab, id, pcs, max) : 0;
}

void
pe_mutex_get_stats(pe_mutex_stats_t *st)
{
    mx_table_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    uint32_t end = t ? pe_stacktab_count(&t->tab) : PE_MUTEX_FIRST_ID;

    st->sampled = __atomic_load_n(&st_sampled, __ATOMIC_RELAXED);
    st->dropped = __atomic_load_n(&st_dropped, __ATOMIC_RELAXED);
    st->no_stack = __atomic_load_n(&st_no_stack, __ATOMIC_RELAXED);
    st->entries = end - PE_MUTEX_FIRST_ID;
    st->capacity = PE_MUTEX_ENTS - PE_MUTEX_FIRST_ID;
}

void
pe_mutex_thread_reset(void)
{
    pe_tls.mutex_countdown = 0;
}
