/*
 * handler.c: the SIGPROF handler and nothing else.  It accepts only our own
 * timers' signals (si_code SI_TIMER with the running session's cookie), takes
 * a ring slot, unwinds the interrupted context into it and publishes it (and
 * posts the collector's semaphore when that made the ring half full); and
 * the signals our own threads send one thread (SI_QUEUE from our pid with a
 * PE_SIGQ_TAG value): a wall-clock tick goes into the ring the same way, a
 * stack capture into its slot (allstacks.c).  Everything else is handed to the
 * program's stored disposition.  It saves
 * errno, takes no lock, calls no malloc, and uses only PE_SIGSAFE functions.
 * Not reentrant on one thread: SIGPROF is blocked while it runs (no SA_NODEFER)
 * and pe_unwind_signal keeps its own in_unwind flag for other signals.
 */
#include <errno.h>
#include <semaphore.h>
#include <ucontext.h>
#include <unistd.h>

#include "../preload/guard.h"
#include "../stack/pyframes.h"
#include "../stack/unwind.h"
#include "sampler_int.h"

pe_ring_t pe_cpu_ring;
sem_t pe_cpu_wake;
uint64_t pe_cpu_cookie;
int pe_cpu_accept_tkill;
uint32_t pe_wall_gen;

/* Inlined: one frame less for unw_backtrace to walk and for us to cut, about
   90 instructions a sample: bench_cpu parts. */
__attribute__((always_inline)) PE_SIGSAFE static inline void
record(siginfo_t *si, void *uc, uint32_t weight, uint32_t flags)
{
    pe_ring_slot_t *s;
    int n, nall;

    if (si->si_code == SI_TIMER && si->si_overrun > 0)
        weight += (uint32_t)si->si_overrun;
    s = pe_ring_claim(&pe_cpu_ring);
    if (PE_UNLIKELY(!s)) {
        pe_ring_drop(&pe_cpu_ring, weight);
        sem_post(&pe_cpu_wake); /* full: the collector missed its half-full wake-up */
        return;
    }
    if (PE_UNLIKELY(pe_cpu_stack_short())) {
        /* a small stack near its end: the unwinder could run into the guard
           page; the interrupted pc alone */
        s->pcs[0] = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
        n = nall = 1;
    } else {
        n = pe_unwind_signal(uc, s->pcs, PE_RING_FRAMES);
        /* CPython's frames, when the program is CPython (pyframes.h) */
        nall = pe_py_interleave(s->pcs, n, PE_RING_FRAMES);
    }
    s->tid = pe_gettid();
    s->weight = weight;
    s->nframes = nall;
    s->flags = flags;
    if (pe_unwind_cut)
        s->flags |= PE_RING_F_CUT;
    if (n <= 1) {
        s->flags |= PE_RING_F_TRUNCATED; /* counted per window by the drain */
        if (pe_tls.in_unwind || pe_tls.in_loader)
            s->flags |= PE_RING_F_TRUNC_OURS; /* where unwinding is unsafe */
    }
    /* half full: wake the collector; sem_post is async-signal-safe: an atomic
       and, only with a waiter, one futex wake; once per half ring */
    if (pe_ring_publish(&pe_cpu_ring, s))
        sem_post(&pe_cpu_wake);
}

PE_SIGSAFE void
pe_cpu_handler(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    uint64_t v = (uint64_t)(uintptr_t)si->si_value.sival_ptr;

    if (si->si_code == SI_TIMER && (v >> 48) == PE_COOKIE_TAG) {
        /* ours; a stale session's late signal is simply dropped */
        if (v == __atomic_load_n(&pe_cpu_cookie, __ATOMIC_RELAXED) && !pe_tls.internal &&
            pe_cpu_ring.slots)
            record(si, uc, 1, 0);
    } else if (si->si_code == SI_QUEUE && (v >> 48) == PE_SIGQ_TAG && si->si_pid == getpid()) {
        /* sent by one of our threads; a late one (session or batch over) is dropped */
        unsigned kind = PE_SIGQ_KIND(v);
        if (pe_tls.internal) {
            /* never ours to sample */
        } else if (kind == PE_SIGQ_CAPTURE) {
            /* not on a small stack near its end: the capture times out for
               this thread instead */
            if (!pe_cpu_stack_short())
                pe_stacks_sig_capture(v, uc);
        } else if (kind == PE_SIGQ_WALL && pe_cpu_ring.slots &&
                   PE_SIGQ_WALL_GEN(v) == __atomic_load_n(&pe_wall_gen, __ATOMIC_RELAXED) &&
                   PE_SIGQ_WALL_GEN(v)) {
            uint32_t w = PE_SIGQ_WALL_WEIGHT(v);
            record(si, uc, w ? w : 1,
                   PE_RING_F_WALL | (((uint32_t)(v >> 40) & 15u) << PE_RING_STATE_SHIFT));
        }
    } else if (PE_UNLIKELY(pe_cpu_accept_tkill) && si->si_code == SI_TKILL &&
               si->si_pid == getpid()) {
        if (pe_cpu_ring.slots)
            record(si, uc, 1, 0);
    } else {
        pe_cpu_sig_chain(sig, si, uc);
    }
    errno = saved_errno;
}
