/*
 * mutex_hooks.c: the exported lock and condition-wait interposers.  Each is
 * thin: take the lock once without waiting (an uncontended acquisition ends
 * there: no clock, no counter), and hand contended or waiting calls to
 * mutex.c, which times one in N of them.  What each path answers, and why it
 * answers as glibc would, is in mutex.h.
 *
 * Signal-safe: as the real functions (which are not async-signal-safe);
 * nothing here takes a lock or allocates.
 */
#include <errno.h>
#include <pthread.h>

#include "mutex.h"

/* The try-locks are called through the GOT directly, not a PLT stub (-z now bound them). */
extern int pthread_mutex_trylock(pthread_mutex_t *) __attribute__((noplt));
extern int pthread_rwlock_tryrdlock(pthread_rwlock_t *) __attribute__((noplt));
extern int pthread_rwlock_trywrlock(pthread_rwlock_t *) __attribute__((noplt));

/* The program's call site, and an address inside the interposer (the leaf frame). */
#define RA() ((uintptr_t)__builtin_return_address(0))
#if defined(__x86_64__)
#define HERE()                                                                                     \
    __extension__({                                                                                \
        uintptr_t h_;                                                                              \
        __asm__("lea 0(%%rip), %0" : "=r"(h_));                                                    \
        h_;                                                                                        \
    })
#else
#define HERE() ((uintptr_t)0)
#endif

/*
 * A mutex found held (a failed inline take, or EBUSY from the try-lock): a
 * contention event.  Out of line, so that the interposers' uncontended path
 * saves no register; reached by a tail call, with the program's call site and
 * the interposer's address computed in the interposer.  (The same interposer
 * without its frame-pointer push, built with omit-frame-pointer, measured 11%
 * slower on the uncontended loop on the project's VM, whatever the mutex's
 * address: a timing effect of the CPU that was not pinned down.)
 */
__attribute__((noinline, cold)) static int
mutex_held(int op, pthread_mutex_t *m, const struct timespec *abstime, uintptr_t ra, uintptr_t leaf)
{
    if (PE_UNLIKELY(pe_mutex_bypass()) || PE_LIKELY(pe_mutex_skip())) {
        if (op == PE_MUTEX_OP_LOCK)
            return PE_MUTEX_REAL(pthread_mutex_lock)(m);
        return PE_MUTEX_REAL(pthread_mutex_timedlock)(m, abstime);
    }
    return pe_mutex_sampled(op, m, NULL, abstime, ra, leaf);
}

/*
 * Any mutex the inline path did not try: the thread's first lock (its tid is
 * not cached yet; the first lock after the real functions are known decides
 * whether glibc allows the inline path), a kind other than the default, or
 * the inline path off.
 */
__attribute__((noinline)) static int
mutex_other(int op, pthread_mutex_t *m, const struct timespec *abstime, uintptr_t ra,
            uintptr_t leaf)
{
    pid_t tid = pe_gettid();
    int rc;

    if (PE_UNLIKELY(__atomic_load_n(&pe_mutex_inline_state, __ATOMIC_RELAXED) == 0))
        pe_mutex_inline_decide();
    if (pe_mutex_inline_ok(m, tid)) {
        if (pe_mutex_take(m, tid))
            return 0;
        return mutex_held(op, m, abstime, ra, leaf);
    }
    if (PE_UNLIKELY(pe_mutex_bypass())) {
        if (op == PE_MUTEX_OP_LOCK)
            return PE_MUTEX_REAL(pthread_mutex_lock)(m);
        return PE_MUTEX_REAL(pthread_mutex_timedlock)(m, abstime);
    }
    rc = pthread_mutex_trylock(m);
    if (PE_LIKELY(rc != EBUSY))
        return rc;
    return mutex_held(op, m, abstime, ra, leaf);
}

PE_EXPORT int
pthread_mutex_lock(pthread_mutex_t *m)
{
    pid_t tid = pe_tls.tid;

    if (PE_LIKELY(pe_mutex_inline_ok(m, tid))) {
        if (PE_LIKELY(pe_mutex_take(m, tid)))
            return 0;
        return mutex_held(PE_MUTEX_OP_LOCK, m, NULL, RA(), HERE());
    }
    return mutex_other(PE_MUTEX_OP_LOCK, m, NULL, RA(), HERE());
}

PE_EXPORT int
pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    pid_t tid = pe_tls.tid;

    if (PE_LIKELY(pe_mutex_inline_ok(m, tid))) {
        if (PE_LIKELY(pe_mutex_take(m, tid)))
            return 0;
        return mutex_held(PE_MUTEX_OP_TIMEDLOCK, m, abstime, RA(), HERE());
    }
    return mutex_other(PE_MUTEX_OP_TIMEDLOCK, m, abstime, RA(), HERE());
}

/* The rwlock's try path: step aside, try once, then count a contention event. */
__attribute__((noinline)) static int
rdlock_other(pthread_rwlock_t *l, uintptr_t ra, uintptr_t leaf)
{
    int rc;

    if (PE_UNLIKELY(pe_mutex_bypass()))
        return PE_MUTEX_REAL(pthread_rwlock_rdlock)(l);
    rc = pthread_rwlock_tryrdlock(l);
    if (PE_LIKELY(rc != EBUSY))
        return rc;
    if (PE_LIKELY(pe_mutex_skip()))
        return PE_MUTEX_REAL(pthread_rwlock_rdlock)(l);
    return pe_mutex_sampled(PE_MUTEX_OP_RDLOCK, l, NULL, NULL, ra, leaf);
}

PE_EXPORT int
pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    int (*real)(pthread_rwlock_t *) = pe_real.pthread_rwlock_rdlock;

    if (PE_LIKELY(pe_mutex_rd_free(l)) && PE_LIKELY(real != NULL))
        return real(l);
    return rdlock_other(l, RA(), HERE());
}

PE_EXPORT int
pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    int rc;

    if (PE_UNLIKELY(pe_mutex_bypass()))
        return PE_MUTEX_REAL(pthread_rwlock_wrlock)(l);
    rc = pthread_rwlock_trywrlock(l);
    if (PE_LIKELY(rc != EBUSY))
        return rc;
    if (PE_LIKELY(pe_mutex_skip()))
        return PE_MUTEX_REAL(pthread_rwlock_wrlock)(l);
    return pe_mutex_sampled(PE_MUTEX_OP_WRLOCK, l, NULL, NULL, RA(), HERE());
}

PE_EXPORT int
pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (PE_UNLIKELY(pe_mutex_bypass()) || PE_LIKELY(pe_mutex_skip()))
        return PE_MUTEX_REAL(pthread_cond_wait)(c, m);
    return pe_mutex_sampled(PE_MUTEX_OP_COND_WAIT, c, m, NULL, RA(), HERE());
}

PE_EXPORT int
pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    if (PE_UNLIKELY(pe_mutex_bypass()) || PE_LIKELY(pe_mutex_skip()))
        return PE_MUTEX_REAL(pthread_cond_timedwait)(c, m, abstime);
    return pe_mutex_sampled(PE_MUTEX_OP_COND_TIMEDWAIT, c, m, abstime, RA(), HERE());
}
