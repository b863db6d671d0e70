/*
 * mutex.h: lock contention profiling (/debug/pprof/mutex, /debug/pprof/block).
 * This header is the design's one account; mutex_hooks.c (the interposers)
 * and mutex.c (sampling, the table) keep only what their code needs.
 *
 * Interposed: pthread_mutex_lock, pthread_mutex_timedlock,
 * pthread_rwlock_rdlock, pthread_rwlock_wrlock, pthread_cond_wait and
 * pthread_cond_timedwait.  Not covered: pthread_mutex_clocklock,
 * pthread_cond_clockwait, the timed rwlock calls, spinlocks, semaphores,
 * futexes used directly and glibc's internal locks.
 *
 * The interposers (mutex_hooks.c) keep the uncontended path at one try-lock:
 *
 *   default mutex  -> pe_mutex_take(): one compare-and-swap of the lock word,
 *                     as glibc's own lock does; taken -> 0
 *   other kinds    -> the real try-lock: anything but EBUSY is the answer (0,
 *                     EOWNERDEAD from a robust mutex whose owner died, taken
 *                     as the real lock takes it; EAGAIN for a recursive
 *                     mutex's or the readers' count overflowing; EINVAL for a
 *                     bad object or a priority ceiling below the caller's:
 *                     the real lock answers the same in each case)
 *   held (EBUSY)   -> a contention event: bypass (our thread, inside us,
 *                     PROFEP_MUTEX_RATE=0) or --countdown not due -> the real
 *                     blocking call
 *   due            -> pe_mutex_sampled(): clock, real call, clock, record
 *
 * Whenever the lock is held, the real blocking call runs and its answer is
 * returned, so EDEADLK (an error-checking mutex the caller owns), ETIMEDOUT,
 * a normal mutex's self-deadlock and priority inheritance are glibc's, and
 * condition waits stay cancellation points (the real call is the one
 * cancelled; nothing of ours is held across it).
 *
 * rwlocks are never taken inline (their protocol is glibc's alone): wrlock
 * takes the try-lock line; rdlock calls the real rdlock at once when
 * pe_mutex_rd_free() sees no writer, and the try-lock line otherwise.
 *
 * Condition waits cannot be tried: every one is an event (one decrement when
 * not due).  glibc has two versions of pthread_cond_wait/timedwait,
 * GLIBC_2.3.2 (the default) and GLIBC_2.2.5 (the pre-2003 ABI); ours call the
 * default, so a binary linked against the 2.2.5 symbols would also bind here
 * and is not supported.
 *
 * Events are sampled independently with probability 1/N (N =
 * PROFEP_MUTEX_RATE, default 100): each thread counts down a geometric
 * interval of mean N (pe_mutex_draw, the formula beside it in mutex.c), so
 * the unsampled path reads no clock and draws no random number.  Recorded
 * values are scaled by N when reported (unbiased).
 *
 * Two kinds of record share one table, keyed by (kind, stack):
 *   PE_MUTEX_KIND_LOCK  a mutex/rwlock acquired after waiting: mutex and block
 *   PE_MUTEX_KIND_WAIT  any other wait (condition waits, a timed lock that timed
 *                       out): block only
 * Delay is the waiter's time in the real call, attributed to the waiter's
 * stack at the call (Go attributes mutex delay to the unlocker; we do not
 * interpose unlock).  The stack's leaf is the interposer itself
 * (pthread_mutex_lock, pthread_cond_wait, ...), as Go shows sync.(*Mutex).Lock.
 *
 * Recording never allocates and takes no lock: a fixed table of 8190 stacks
 * (preload/stacktab.h, in one mapping made with MAP_NORESERVE on the first
 * sampled event), entries claimed by fetch-add and published by CAS; when it
 * is full the event is counted as dropped (a profile comment).  Entries are
 * never removed.
 *
 * Signal-safe: the hot helpers and pe_mutex_sampled are (lock calls may come
 * from signal handlers); the readers are for HTTP threads.
 */
#ifndef PE_MUTEX_H
#define PE_MUTEX_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "../preload/config.h"
#include "../preload/guard.h"
#include "../preload/pe.h"
#include "../preload/real.h"
#include "../profile/profile.h"

/* Frames kept per recorded stack (leaf included); deeper stacks lose their root end. */
#define PE_MUTEX_MAX_FRAMES 64

enum pe_mutex_kind {
    PE_MUTEX_KIND_LOCK = 0,
    PE_MUTEX_KIND_WAIT = 1,
};

/* Which real call pe_mutex_sampled makes. */
enum pe_mutex_op {
    PE_MUTEX_OP_LOCK,
    PE_MUTEX_OP_TIMEDLOCK,
    PE_MUTEX_OP_RDLOCK,
    PE_MUTEX_OP_WRLOCK,
    PE_MUTEX_OP_COND_WAIT,
    PE_MUTEX_OP_COND_TIMEDWAIT,
};

/* ---- hot path (inlined into the interposers) ------------------------------------- */

/* 1 when this call must go straight to the real function, untimed. */
PE_SIGSAFE static inline int
pe_mutex_bypass(void)
{
    return (pe_tls.guard | pe_tls.internal | pe_tls.in_unwind) != 0 || pe_cfg.mutex_rate <= 0;
}

/*
 * The default mutex, taken inline.  glibc's try-lock reads the lock word
 * before it swaps it, and on the CPU measured that read, of a word the last
 * unlock's atomic exchange wrote, costs about 2 ns: 10-15% of a lock+unlock
 * pair (a bare forwarding interposer costs nothing measurable; see
 * scripts/bench_mutex.sh).  So for the default kind the interposer does what
 * glibc's pthread_mutex_lock does for it: compare-and-swap the lock word
 * 0 -> 1 (acquire), then store the caller's tid in __owner and count one more
 * user in __nusers (pthread_mutex_destroy answers EBUSY while that is not 0;
 * unlock clears both).  A failed swap is a contention event, exactly where
 * glibc's lock would start waiting; the real lock then runs.
 *
 * The default kind is a __kind with none of PE_MUTEX_KIND_NOT_INLINE's bits:
 * the type (recursive, error-checking, adaptive), robust, priority inheritance
 * and protection, lock elision (the mask glibc 2.36's own lock tests first);
 * private and process-shared mutexes both qualify.  This leans on glibc's
 * layout and lock-word protocol (0 free, 1 held, 2 held with waiters: the same
 * since NPTL, and shared between processes by process-shared mutexes), so
 * pe_mutex_inline_decide() checks them once against glibc's own functions
 * before the first inline acquisition; on any mismatch every mutex takes the
 * try-lock path.  __owner comes from our cached tid (pe_gettid(), reset in a
 * fork child); for this kind glibc only stores and clears it.
 */
#define PE_MUTEX_KIND_NOT_INLINE 0x17f

/* 1 once pe_mutex_inline_decide() found glibc as described, -1 if not, 0 before. */
extern int pe_mutex_inline_state;

/* Decide pe_mutex_inline_state (idempotent; any thread, any time). */
PE_SIGSAFE void pe_mutex_inline_decide(void);

/* 1 when m may be taken inline by the thread whose tid is `tid` (0: not known yet). */
PE_SIGSAFE static inline int
pe_mutex_inline_ok(pthread_mutex_t *m, pid_t tid)
{
    int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);

    return __atomic_load_n(&pe_mutex_inline_state, __ATOMIC_RELAXED) > 0 &&
           (kind & PE_MUTEX_KIND_NOT_INLINE) == 0 && tid != 0;
}

/* Take a default mutex as glibc's lock would; 1 taken, 0 held by someone (contention). */
PE_SIGSAFE static inline int
pe_mutex_take(pthread_mutex_t *m, pid_t tid)
{
    int expected = 0;

    if (!__atomic_compare_exchange_n(&m->__data.__lock, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return 0;
    m->__data.__owner = tid;
    m->__data.__nusers++;
    return 1;
}

/*
 * A read lock the real rdlock will take without waiting, as far as fields
 * that no uncontended reader writes can tell (the readers' count word is
 * not read: it is the word rdlock's atomic add writes, and reading it first
 * costs what glibc's tryrdlock does).  No writer holds the lock (__cur_writer,
 * __writers_futex), none waits or is being handed it (__writers), the lock is
 * in its read phase (__wrphase_futex), and it prefers readers (__flags 0:
 * readers never queue behind a waiting writer).  A guess, never a change of
 * answer: when it says free the real rdlock runs and answers, and whatever it
 * does is glibc's; the cost is that a reader who starts waiting in the few
 * nanoseconds between this look and the real call is not counted.
 */
PE_SIGSAFE static inline int
pe_mutex_rd_free(pthread_rwlock_t *l)
{
    return (__atomic_load_n(&l->__data.__cur_writer, __ATOMIC_RELAXED) |
            __atomic_load_n(&l->__data.__writers_futex, __ATOMIC_RELAXED) |
            __atomic_load_n(&l->__data.__writers, __ATOMIC_RELAXED) |
            __atomic_load_n(&l->__data.__wrphase_futex, __ATOMIC_RELAXED) |
            __atomic_load_n(&l->__data.__flags, __ATOMIC_RELAXED)) == 0;
}

/* Count one wait event; 1 when it is not sampled (the common case). */
PE_SIGSAFE static inline int
pe_mutex_skip(void)
{
    return --pe_tls.mutex_countdown > 0;
}

/*
 * The real function behind an interposer, resolved on first use if the
 * constructor has not run yet (another library's constructor may lock first).
 */
void *pe_mutex_next(const char *name);
#define PE_MUTEX_REAL(fn)                                                                          \
    (PE_LIKELY(pe_real.fn != NULL) ? pe_real.fn : (__typeof__(pe_real.fn))pe_mutex_next(#fn))

/*
 * The slow path of a wait event whose countdown ran out: decide (the thread's
 * first event draws its interval), and if sampled time the real call `op` on
 * obj (the mutex, rwlock or condition variable), m (the mutex of a condition
 * wait) and abstime, and record it with the caller's stack.  `ra` is the
 * interposer's return address (the program's call site), `leaf` an address
 * inside the interposer.  Returns exactly what the real call returned; errno
 * is as the real call left it.  Not reentrant per thread in a way that matters:
 * a signal handler's lock call may interleave; it records on its own.
 */
PE_SIGSAFE int pe_mutex_sampled(int op, void *obj, pthread_mutex_t *m,
                                const struct timespec *abstime, uintptr_t ra, uintptr_t leaf);

/* ---- readers (HTTP threads) ------------------------------------------------------ */

/* One table entry's totals, unscaled (what was recorded). */
typedef struct pe_mutex_rec_s {
    uint32_t id;
    int kind;          /* enum pe_mutex_kind */
    uint64_t count;    /* sampled events */
    uint64_t delay_ns; /* their total delay */
} pe_mutex_rec_t;

typedef struct pe_mutex_stats_s {
    uint64_t sampled;  /* events recorded (all kinds) */
    uint64_t dropped;  /* sampled events lost: table full */
    uint64_t no_stack; /* recorded under "[unknown]": unwinding unsafe at the time */
    uint64_t entries;  /* distinct (kind, stack) entries in use */
    uint64_t capacity; /* the table's bound */
} pe_mutex_stats_t;

/* The sampling period N (PROFEP_MUTEX_RATE); 0 = off (the endpoints answer 503). */
int64_t pe_mutex_rate(void);

/*
 * Every published entry with at least one event, in ascending id order, in a
 * malloc'd array the caller frees.  Returns 0 (also with *n == 0 and *out
 * NULL when there is nothing) or -ENOMEM.
 */
int pe_mutex_snapshot(pe_mutex_rec_t **out, int *n);

/* The stack of entry `id`, leaf first (return addresses; the leaf is inside an
   interposer).  Returns the number of frames, 0 for "[unknown]". */
int pe_mutex_stack(uint32_t id, uintptr_t *pcs, int max);

void pe_mutex_get_stats(pe_mutex_stats_t *st);

/* The profiles (Go's pprof and debug=1 text, mutex and block) are the kinds
   pe_kind_mutex and pe_kind_block (sampler/kind.h), in mutex_profile.c. */

/* ---- test seams ------------------------------------------------------------------- */

/* Forget this thread's countdown (the next event draws afresh at the current rate). */
PE_TESTONLY void pe_mutex_thread_reset(void);
/* Record one event directly, as pe_mutex_sampled would after the real call. */
PE_TESTONLY PE_SIGSAFE void pe_mutex_record(int kind, uintptr_t ra, uintptr_t leaf,
                                            uint64_t delay_ns);
/* The geometric draw: events until and including the next sampled one (>= 1). */
PE_TESTONLY int64_t pe_mutex_draw(uint64_t *rng, int64_t rate);

#endif /* PE_MUTEX_H */
