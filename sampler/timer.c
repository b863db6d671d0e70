/*
 * timer.c: the sampler's OS calls.  Per-thread CPU-time timers are made with
 * the raw timer_create syscall on the target thread's CPU clock (derived from
 * its tid, as async-profiler does), delivered to that thread (SIGEV_THREAD_ID),
 * so any thread can arm a timer for any other.  SIGPROF is taken only over
 * SIG_DFL/SIG_IGN; while our handler is installed the program's sigaction
 * requests are stored and reported back (HotSpot's libjsig pattern) and applied
 * when no profile runs.  Our handler stays installed after a profile while the
 * program's disposition is SIG_DFL/SIG_IGN, so a timer signal still in flight
 * can never take the default action (terminate); it is ignored instead.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/fd.h"
#include "../preload/guard.h"
#include "../preload/log.h"
#include "../preload/rand.h"
#include "../preload/real.h"
#include "../preload/sigown.h"
#include "../symbols/symbols.h"
#include "sampler.h"
#include "sampler_int.h"

int pe_cpu_profiling;
int pe_cpu_sent;

/* ---- timers --------------------------------------------------------------------- */

/* MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) from the kernel's posix-timers.h. */
static clockid_t
thread_cpu_clock(pid_t tid)
{
    return (clockid_t)((~(unsigned)tid << 3) | 6);
}

/* The collector's generator for first expiries (preload/rand.h; 0 = not seeded yet). */
static PE_TLS uint64_t rng;

int
pe_cpu_timer_create(pid_t tid, int64_t period, uint64_t cookie, int *timerid)
{
    struct sigevent sev;
    struct itimerspec its;
    int64_t first;
    int id;

    /* never a signal the program handles: its handler would take ours */
    if (!__atomic_load_n(&pe_cpu_sig.owned, __ATOMIC_ACQUIRE))
        return -EPERM;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = PE_SAMPLER_SIG;
    sev.sigev_value.sival_ptr = (void *)(uintptr_t)cookie;
    sev._sigev_un._tid = tid;
    if (syscall(SYS_timer_create, thread_cpu_clock(tid), &sev, &id) < 0)
        return -errno;
    /* first expiry random in (0, period]: short threads are sampled in proportion */
    if (!rng)
        pe_rand_seed(&rng);
    first = 1 + (int64_t)(pe_rand_next(&rng) % (uint64_t)period);
    its.it_value.tv_sec = first / 1000000000;
    its.it_value.tv_nsec = first % 1000000000;
    its.it_interval.tv_sec = period / 1000000000;
    its.it_interval.tv_nsec = period % 1000000000;
    if (syscall(SYS_timer_settime, id, 0, &its, NULL) < 0) {
        int err = -errno;
        syscall(SYS_timer_delete, id);
        return err;
    }
    *timerid = id;
    return 0;
}

/*
 * Exec and our queued signals: the kernel keeps an SI_QUEUE signal pending
 * across execve (it flushes only timer signals), and the new image has no
 * handler for it, so its default action would kill the program.  While any
 * thread is between pe_cpu_exec_begin and its exec (or exec_end), no sender
 * sends (exec_pending); exec_begin waits until no send is in flight
 * (sigq_inflight: raised before the check, lowered after the syscall), after
 * which everything we ever sent is already pending and can be drained.
 * Every send stops, not only those to the leaving thread: exec from any
 * thread kills the others, and a send never waits for it.  At exec the
 * kernel frees the other threads' pending signals with them; the exec'ing
 * thread keeps its own pending set (drained by the sampler) and the shared
 * one (we never send there), even when it is not the main thread.
 */
static int exec_pending;  /* threads about to exec (writer: exec_begin/end; reader: senders) */
static int sigq_inflight; /* sends between the check and the syscall's return */

void
pe_cpu_exec_begin(void)
{
    struct timespec ts = {0, 100000};
    int spins = 0;

    __atomic_add_fetch(&exec_pending, 1, __ATOMIC_SEQ_CST);
    /* A sender that saw exec_pending == 0 is inside its syscall: a few us.
       Bounded all the same (a sender preempted for long: ~1 s, then go on). */
    while (__atomic_load_n(&sigq_inflight, __ATOMIC_SEQ_CST) != 0 && spins++ < 10000) {
        if (spins < 100)
            sched_yield();
        else
            nanosleep(&ts, NULL);
    }
}

void
pe_cpu_exec_end(void)
{
    __atomic_sub_fetch(&exec_pending, 1, __ATOMIC_SEQ_CST);
}

int
pe_cpu_sigq_send(pid_t tid, uint64_t v)
{
    siginfo_t si;
    int saved = errno, rc = 0;

    /* never a signal the program handles (a session it left SIGPROF to, the
       perf engine's, sends none: this is the last guard) */
    if (!__atomic_load_n(&pe_cpu_sig.owned, __ATOMIC_ACQUIRE))
        return -EPERM;
    __atomic_add_fetch(&sigq_inflight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&exec_pending, __ATOMIC_SEQ_CST) != 0) {
        __atomic_sub_fetch(&sigq_inflight, 1, __ATOMIC_SEQ_CST);
        return -EAGAIN; /* a thread is about to exec: try again later */
    }
    memset(&si, 0, sizeof(si));
    si.si_signo = PE_SAMPLER_SIG;
    si.si_code = SI_QUEUE; /* to our own process the kernel keeps it as given */
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_ptr = (void *)(uintptr_t)v;
    __atomic_store_n(&pe_cpu_sent, 1, __ATOMIC_RELAXED);
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, PE_SAMPLER_SIG, &si) < 0)
        rc = -errno;
    __atomic_sub_fetch(&sigq_inflight, 1, __ATOMIC_SEQ_CST);
    errno = saved;
    return rc;
}

void
pe_cpu_timer_delete(int timerid)
{
    int saved = errno;
    syscall(SYS_timer_delete, timerid);
    errno = saved;
}

/* ---- the signal disposition ------------------------------------------------------ */

/*
 * pe_cpu_sig.owned: our handler is what the kernel has (writer: acquire/release/
 * sigaction under pe_cpu_sig.lock; reader: everyone).  prog_act[prog_cur]: the
 * disposition the program believes it has; double-buffered so the handler
 * reads a whole one without a lock.  The lock and the hand-on of SIG_IGN
 * across exec and spawn are preload/sigown.h's.
 */
static struct sigaction prog_act[2];
static int prog_cur;

static const struct sigaction *
prog_disposition(void)
{
    return &prog_act[__atomic_load_n(&prog_cur, __ATOMIC_ACQUIRE)];
}

pe_sigown_t pe_cpu_sig = {
    .sig = PE_SAMPLER_SIG, .handler = pe_cpu_handler, .prog = prog_disposition};

static void
store_prog(const struct sigaction *sa)
{
    int nxt = !prog_cur;
    prog_act[nxt] = *sa;
    __atomic_store_n(&prog_cur, nxt, __ATOMIC_RELEASE);
}

int
pe_cpu_sig_acquire(void)
{
    struct sigaction cur;
    sigset_t saved;
    int rc = 0;

    if (pe_seccomp_reason())
        return -EACCES;
    pe_sigown_lock(&pe_cpu_sig, &saved);
    if (pe_cpu_sig.owned) {
        if (pe_sig_is_handler(&prog_act[prog_cur]))
            rc = -EPERM;
        goto out;
    }
    if (pe_sig_real_action(PE_SAMPLER_SIG, NULL, &cur) < 0) {
        rc = -errno;
        goto out;
    }
    if (pe_sig_is_handler(&cur)) {
        rc = -EPERM;
        goto out;
    }
    store_prog(&cur);
    if (pe_cpu_sig.handon_users > 0 && pe_sig_ignores(prog_disposition())) {
        pe_cpu_sig.handon_applied =
            1; /* a spawn or exec is handing SIG_IGN on: ours when it ends */
    } else if (pe_sigown_install(&pe_cpu_sig) < 0) {
        rc = -errno;
        goto out;
    }
    __atomic_store_n(&pe_cpu_sig.owned, 1, __ATOMIC_RELEASE);
out:
    pe_sigown_unlock(&pe_cpu_sig, &saved);
    return rc;
}

int
pe_cpu_sig_program_owns(void)
{
    struct sigaction cur;
    sigset_t saved;
    int owns;

    pe_sigown_lock(&pe_cpu_sig, &saved);
    if (pe_cpu_sig.owned)
        owns = pe_sig_is_handler(&prog_act[prog_cur]);
    else
        owns = pe_sig_real_action(PE_SAMPLER_SIG, NULL, &cur) == 0 && pe_sig_is_handler(&cur);
    pe_sigown_unlock(&pe_cpu_sig, &saved);
    return owns;
}

const char *
pe_cpu_sig_program_handler(char *buf, size_t len)
{
    struct sigaction cur;
    sigset_t saved;
    uintptr_t fn = 0;

    pe_sigown_lock(&pe_cpu_sig, &saved);
    if (pe_cpu_sig.owned)
        cur = prog_act[prog_cur];
    else if (pe_sig_real_action(PE_SAMPLER_SIG, NULL, &cur) < 0)
        memset(&cur, 0, sizeof(cur));
    pe_sigown_unlock(&pe_cpu_sig, &saved);
    if (pe_sig_is_handler(&cur))
        fn = (cur.sa_flags & SA_SIGINFO) ? (uintptr_t)cur.sa_sigaction : (uintptr_t)cur.sa_handler;
    /* (the symbol cache's lock: never taken with the signal's) */
    if (!fn || !pe_sym_symbolize(fn, buf, len))
        snprintf(buf, len, "at %#lx", (unsigned long)fn);
    return buf;
}

void
pe_cpu_sig_release(void)
{
    sigset_t saved;

    pe_sigown_lock(&pe_cpu_sig, &saved);
    /* the program installed a handler while we profiled: now it gets it (once
       no session or stack capture uses the signal any more) */
    if (pe_cpu_sig.owned && pe_sig_is_handler(&prog_act[prog_cur]) &&
        __atomic_load_n(&pe_cpu_profiling, __ATOMIC_ACQUIRE) == 0) {
        pe_sig_real_action(PE_SAMPLER_SIG, &prog_act[prog_cur], NULL);
        __atomic_store_n(&pe_cpu_sig.owned, 0, __ATOMIC_RELEASE);
    }
    pe_sigown_unlock(&pe_cpu_sig, &saved);
}

void
pe_cpu_sig_give_back(void)
{
    sigset_t saved;

    pe_sigown_lock(&pe_cpu_sig, &saved);
    /* kept between sessions otherwise (a late signal must find a handler):
       here every timer is gone and no capture runs (pe_sampler_step_aside) */
    if (pe_cpu_sig.owned && __atomic_load_n(&pe_cpu_profiling, __ATOMIC_ACQUIRE) == 0) {
        pe_sig_real_action(PE_SAMPLER_SIG, &prog_act[prog_cur], NULL);
        __atomic_store_n(&pe_cpu_sig.owned, 0, __ATOMIC_RELEASE);
    }
    pe_sigown_unlock(&pe_cpu_sig, &saved);
}

int
pe_sampler_sigaction(int signum, const struct sigaction *act, struct sigaction *old)
{
    sigset_t saved;

    if (signum != PE_SAMPLER_SIG || !__atomic_load_n(&pe_cpu_sig.owned, __ATOMIC_ACQUIRE))
        return 0;
    pe_sigown_lock(&pe_cpu_sig, &saved);
    if (!pe_cpu_sig.owned) {
        pe_sigown_unlock(&pe_cpu_sig, &saved);
        return 0;
    }
    if (old)
        *old = prog_act[prog_cur];
    if (act) {
        store_prog(act);
        /* no profile: the program's wish takes effect now, and SIGPROF is its own */
        if (!__atomic_load_n(&pe_cpu_profiling, __ATOMIC_ACQUIRE) && pe_sig_is_handler(act)) {
            pe_sig_real_action(PE_SAMPLER_SIG, act, NULL);
            __atomic_store_n(&pe_cpu_sig.owned, 0, __ATOMIC_RELEASE);
        }
    }
    pe_sigown_unlock(&pe_cpu_sig, &saved);
    return 1;
}

PE_SIGSAFE void
pe_cpu_sig_chain(int signo, siginfo_t *si, void *uc)
{
    const struct sigaction *sa = prog_disposition();

    if (sa->sa_flags & SA_SIGINFO) {
        if (sa->sa_sigaction)
            sa->sa_sigaction(signo, si, uc);
    } else if (sa->sa_handler == SIG_DFL) {
        /* a SIGPROF the program did not ask for and we did not send: the default
           action is to terminate, as it would have been without us */
        if (si->si_code != SI_TIMER) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof(dfl));
            dfl.sa_handler = SIG_DFL;
            pe_sig_real_action(signo, &dfl, NULL);
            __atomic_store_n(&pe_cpu_sig.owned, 0, __ATOMIC_RELEASE);
            syscall(SYS_tgkill, getpid(), pe_gettid(), signo);
        }
    } else if (sa->sa_handler != SIG_IGN) {
        sa->sa_handler(signo);
    }
}

void
pe_cpu_stack_note(void)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    int gated;

    pe_tls.stack_lo = 0;
    /* glibc allocates here (a cpuset), hence the guard; once per thread */
    pe_guard_enter();
    gated = pe_fd_main_stack_begin();
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &addr, &size) == 0 && size <= PE_CPU_SMALL_STACK)
            pe_tls.stack_lo = (uintptr_t)addr;
        pthread_attr_destroy(&a);
    }
    pe_fd_main_stack_end(gated);
    pe_guard_exit();
}

void
pe_cpu_sig_atfork_child(void)
{
    pe_sigown_atfork_child(&pe_cpu_sig);
    exec_pending = 0; /* other threads' exec is not this child's */
    sigq_inflight = 0;
}
