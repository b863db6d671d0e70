/*
 * spin.h: the library's spin lock, for short critical sections in its own
 * code (a table update, a sigaction call).  An exchange takes it (acquire), a
 * store drops it (release); a waiter yields the CPU rather than spinning, as
 * the holder may be preempted on a busy machine.  Zero-initialised means free.
 * Not recursive, not fair.
 *
 * Never take one in a signal handler: the handler could interrupt its own
 * thread's holder and wait forever.  A lock that a thread may hold while a
 * handler of the program's runs must be taken with pe_spin_lock_nosig, which
 * blocks every signal on the thread for the critical section.
 *
 * A fork child, which has only the forking thread, resets the locks other
 * threads held with pe_spin_reset.
 *
 * Signal-safe: no (by design, see above).
 */
#ifndef PE_SPIN_H
#define PE_SPIN_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>

typedef struct pe_spin_s {
    int held;
} pe_spin_t;

static inline void
pe_spin_lock(pe_spin_t *l)
{
    while (__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static inline void
pe_spin_unlock(pe_spin_t *l)
{
    __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

/* Lock with every signal blocked on this thread until pe_spin_unlock_nosig(l, saved). */
static inline void
pe_spin_lock_nosig(pe_spin_t *l, sigset_t *saved)
{
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, saved);
    pe_spin_lock(l);
}

static inline void
pe_spin_unlock_nosig(pe_spin_t *l, const sigset_t *saved)
{
    pe_spin_unlock(l);
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* Fork child: free a lock whatever thread held it (only this one survives). */
static inline void
pe_spin_reset(pe_spin_t *l)
{
    __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
}

#endif /* PE_SPIN_H */
