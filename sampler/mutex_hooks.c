/*
 * mutex_hooks.c: the exported lock and condition-wait interposers.  Each is
 * thin: step aside when told to, try the lock once (an uncontended acquisition
 * ends there: no clock, no counter), and hand contended or waiting calls to
 * sampler/mutex.c, which times one in N of them.  All logic is in mutex.c.
 *
 * Semantics stay the real function's: the try-lock's answer is returned as is
 * unless it is EBUSY (0; EOWNERDEAD from a robust mutex whose owner died, with
 * the lock taken exactly as the real lock would take it; EAGAIN for a
 * recursive mutex's count or the readers' count overflowing; EINVAL for a bad
 * object or a priority ceiling below the caller's priority: the real lock
 * answers the same in each case).  On EBUSY the real blocking call runs and
 * its answer is returned: EDEADLK for an error-checking mutex the caller
 * already owns, ETIMEDOUT, the normal mutex's self-deadlock, priority
 * inheritance in the kernel, all unchanged.  pthread_cond_wait/timedwait stay
 * cancellation points (the real call is the one cancelled; nothing of ours is
 * held across it).
 *
 * pthread_cond_wait/timedwait: glibc has two versions, GLIBC_2.3.2 (default)
 * and GLIBC_2.2.5 (the pre-2003 ABI).  Our unversioned definitions call the
 * default; a binary linked against the 2.2.5 symbols (built before glibc 2.3.2)
 * would also bind here and is not supported (README).
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

PE_EXPORT int
pthread_mutex_lock(pthread_mutex_t *m)
{
    int rc;

    if (PE_UNLIKELY(pe_mutex_bypass()))
        return PE_MUTEX_REAL(pthread_mutex_lock)(m);
    rc = pthread_mutex_trylock(m);
    if (PE_LIKELY(rc != EBUSY))
        return rc;
    if (PE_LIKELY(pe_mutex_skip()))
        return PE_MUTEX_REAL(pthread_mutex_lock)(m);
    return pe_mutex_sampled(PE_MUTEX_OP_LOCK, m, NULL, NULL, RA(), HERE());
}

PE_EXPORT int
pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    int rc;

    if (PE_UNLIKELY(pe_mutex_bypass()))
        return PE_MUTEX_REAL(pthread_mutex_timedlock)(m, abstime);
    rc = pthread_mutex_trylock(m);
    if (PE_LIKELY(rc != EBUSY))
        return rc;
    if (PE_LIKELY(pe_mutex_skip()))
        return PE_MUTEX_REAL(pthread_mutex_timedlock)(m, abstime);
    return pe_mutex_sampled(PE_MUTEX_OP_TIMEDLOCK, m, NULL, abstime, RA(), HERE());
}

PE_EXPORT int
pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    int rc;

    if (PE_UNLIKELY(pe_mutex_bypass()))
        return PE_MUTEX_REAL(pthread_rwlock_rdlock)(l);
    rc = pthread_rwlock_tryrdlock(l);
    if (PE_LIKELY(rc != EBUSY))
        return rc;
    if (PE_LIKELY(pe_mutex_skip()))
        return PE_MUTEX_REAL(pthread_rwlock_rdlock)(l);
    return pe_mutex_sampled(PE_MUTEX_OP_RDLOCK, l, NULL, NULL, RA(), HERE());
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
