/*
 * sampler_int.h: what the CPU sampler's files share (not for other modules).
 *
 *   timer.c    OS calls: per-thread CPU timers (raw syscalls), SIGPROF
 *              disposition ownership (install only over SIG_DFL/SIG_IGN, the
 *              libjsig-style stored program disposition).
 *   handler.c  the SIGPROF handler: unwind into the ring (CPU timers, wall
 *              ticks) or into a stack-capture slot, nothing else.
 *   sampler.c  windows (CPU and wall-clock): open, close, thread and
 *              fork/exec hooks.
 *   cpu_session.c  CPU sessions: the engine choice, the timer table, the
 *              thread scan, the CPU kind.
 *   wall.c     wall-clock sampling: the ticks, the /proc capture without a
 *              signal, the wall kind.
 *   collector.c  the collector thread: drains the ring into the windows.
 *   engine_perf.c  the CPU engine without a signal (engine_perf.h): perf
 *              events, read and unwound by the collector.
 *   allstacks.c  on-demand capture of every thread's stack (capture slots).
 *
 * Shared fields name their writer and reader.
 *
 * Signal-safe: only what is marked PE_SIGSAFE.
 */
#ifndef PE_SAMPLER_INT_H
#define PE_SAMPLER_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../preload/guard.h"
#include "../preload/pe.h"
#include "../preload/sigown.h"
#include "../preload/spin.h"
#include "../profile/profile.h"
#include "account.h"
#include "engine_perf.h"
#include "kind.h"
#include "ring.h"
#include "sampler.h"
#include "seccomp.h"

#define PE_SAMPLER_SIG SIGPROF
/* si_value of our timers: tag in the top 16 bits, session generation below. */
#define PE_COOKIE_TAG 0x7065ull
#define PE_COOKIE(gen) ((PE_COOKIE_TAG << 48) | ((uint64_t)(gen)&0xffffffffffffull))

/*
 * Signals we send ourselves to one thread (wall-clock ticks, stack captures)
 * go with rt_tgsigqueueinfo, si_code SI_QUEUE, si_pid our pid, and this value:
 *   63..48 PE_SIGQ_TAG   47..44 kind
 *   capture: 43..24 batch generation (20 bits), 23..0 slot index
 *   wall:    43..40 /proc state code, 39..20 weight (1..2^20-1: 30,000 threads
 *            at 16 a tick weigh ~1,900 each), 19..0 session gen
 * A program's own SIGPROF (kill, tgkill: SI_USER/SI_TKILL) never matches.
 */
#define PE_SIGQ_TAG 0x7077ull
#define PE_SIGQ_CAPTURE 1u
#define PE_SIGQ_WALL 2u
#define PE_SIGQ_KIND(v) ((unsigned)((v) >> 44) & 15u)
#define PE_SIGQ_CAP(gen, idx)                                                                      \
    ((PE_SIGQ_TAG << 48) | ((uint64_t)PE_SIGQ_CAPTURE << 44) |                                     \
     ((uint64_t)((gen)&0xfffffu) << 24) | ((uint64_t)(idx)&0xffffffu))
#define PE_SIGQ_WEIGHT_MAX 0xfffffu
#define PE_SIGQ_GEN_MAX 0xfffffu
#define PE_SIGQ_WALLV(state, weight, gen)                                                          \
    ((PE_SIGQ_TAG << 48) | ((uint64_t)PE_SIGQ_WALL << 44) | ((uint64_t)((state)&15u) << 40) |      \
     ((uint64_t)((weight)&PE_SIGQ_WEIGHT_MAX) << 20) | (uint64_t)((gen)&PE_SIGQ_GEN_MAX))
#define PE_SIGQ_WALL_WEIGHT(v) ((uint32_t)((v) >> 20) & PE_SIGQ_WEIGHT_MAX)
#define PE_SIGQ_WALL_GEN(v) ((uint32_t)(v)&PE_SIGQ_GEN_MAX)

/* Ring slot flags beyond ring.h's: a wall-clock sample, and its state code. */
#define PE_RING_F_WALL 2u
#define PE_RING_F_PROC 4u  /* a wall sample read from /proc, no signal (wall.c) */
#define PE_RING_F_PERF 16u /* a wall sample from the perf engine's last sample, no signal */
/* With PROC: not signalled (the wait would fail, sigsafe.h); its system call's PC only */
#define PE_RING_F_SYSCALL 32u
#define PE_RING_STATE_SHIFT 8
#define PE_RING_STATE(flags) (((flags) >> PE_RING_STATE_SHIFT) & 15u)

/* Send PE_SAMPLER_SIG to thread tid of this process with value v.  0 or -errno
   (-EAGAIN while a thread is about to exec: see pe_cpu_exec_begin). */
int pe_cpu_sigq_send(pid_t tid, uint64_t v);
/* 1 once pe_cpu_sigq_send was used (exec then drains our pending signal). */
extern int pe_cpu_sent;

/* ---- handler.c ---------------------------------------------------------------- */

/* The ring the handler fills; mapped by sampler.c at the first profile. */
extern pe_ring_t pe_cpu_ring;
/* The collector sleeps on it; the handler posts it when the ring is half full
   (sem_post is async-signal-safe).  sem_init by sampler.c before the ring. */
extern sem_t pe_cpu_wake;
/* Cookie of the running session, 0 when none (writers: cpu_session.c, collector.c, sampler.c;
   reader: handler). */
extern uint64_t pe_cpu_cookie;
/* Generation of the running wall-clock session, 0 when none (writers: wall.c, sampler.c). */
extern uint32_t pe_wall_gen;
/* Test hook: also record SI_TKILL signals from this process (bench, unit tests). */
PE_TESTONLY extern int pe_cpu_accept_tkill;

PE_SIGSAFE void pe_cpu_handler(int sig, siginfo_t *si, void *uc);

/* ---- allstacks.c ---------------------------------------------------------------- */

/* The handler's half of a stack capture: value v (PE_SIGQ_CAPTURE) names a slot. */
PE_SIGSAFE void pe_stacks_sig_capture(uint64_t v, void *uc);
/*
 * Wait up to timeout_ms until no application thread has the signal pending
 * (and unblocked), so that the program never receives one of ours after we
 * hand the signal back.  Threads that block it are not waited for.
 */
void pe_cpu_sig_quiesce(int timeout_ms);

/* ---- timer.c ------------------------------------------------------------------ */

/* Create a CPU-time timer on thread `tid` delivering PE_SAMPLER_SIG to it,
   first expiry random in (0, period], then every period.  0 or -errno. */
int pe_cpu_timer_create(pid_t tid, int64_t pe_sampler_period_ns, uint64_t cookie, int *timerid);
void pe_cpu_timer_delete(int timerid);

/* Take the signal for a profile: 0, -EPERM when the program handles it, or
   -EACCES under a seccomp filter (pe_seccomp_reason). */
int pe_cpu_sig_acquire(void);
/* 1 when the program handles the signal itself (so pe_cpu_sig_acquire would fail). */
int pe_cpu_sig_program_owns(void);
/* The program's SIGPROF handler by name (or "at 0x..."), into buf. */
const char *pe_cpu_sig_program_handler(char *buf, size_t len);
/* The last profile ended: hand the signal back if the program asked for it. */
void pe_cpu_sig_release(void);
/* Give the signal back to the program for good (a step aside or a detach: no
   timer left, no capture running). */
void pe_cpu_sig_give_back(void);
/* The program's stored disposition, for chaining from the handler. */
PE_SIGSAFE void pe_cpu_sig_chain(int sig, siginfo_t *si, void *uc);
/*
 * The signal as preload/sigown.h holds it, for the hand-on of a program's
 * SIG_IGN across exec and spawn (pe_sigown_handon_begin/end).
 */
extern pe_sigown_t pe_cpu_sig;
/*
 * exec: from begin until end (or the exec), pe_cpu_sigq_send sends nothing
 * (returns -EAGAIN), and begin returns once no send is in flight, so every
 * signal we queued is already pending.  Not for a foreign child.
 */
void pe_cpu_exec_begin(void);
void pe_cpu_exec_end(void);
/* fork child: forget the lock state, hand-on and exec counts. */
void pe_cpu_sig_atfork_child(void);
/* On a new thread: set pe_tls.stack_lo when its stack is small (at most
   PE_CPU_SMALL_STACK), so that the handler and the heap sampler leave the
   unwinding out when too little is left (PE_CPU_STACK_NEED); 0 otherwise. */
#define PE_CPU_SMALL_STACK (1024 * 1024)
void pe_cpu_stack_note(void);
/* Bytes the handler's unwinding (and the malloc path's) may take below the
   interrupted frame, with a margin: test/progs/p_host_smallstack measures it. */
#define PE_CPU_STACK_NEED 8192
PE_SIGSAFE static inline int pe_cpu_stack_short(void);
static inline int
pe_cpu_stack_short(void)
{
    char here;
    uintptr_t lo = pe_tls.stack_lo;

    return lo && (uintptr_t)&here - lo < PE_CPU_STACK_NEED;
}
/* Users of the signal right now (CPU/wall sessions, stack captures): while > 0 a
   program's sigaction is stored, not applied.  Atomic add/sub (sampler.c, allstacks.c). */
extern int pe_cpu_profiling;

/*
 * The sessions' shared state (sampler.c, cpu_session.c, wall.c, collector.c).
 * Each group names the file that defines it; the comments there say who
 * writes and reads.  Not signal-safe: the handler sees none of it.
 */

/* ---- wall.c (the enum: why a wall sample took a signal) ------------------------- */

enum { WHY_ASKED, WHY_RUNNING, WHY_WOKE, WHY_CANNOT, WHY_N };

/* ---- sampler.c ------------------------------------------------------------------ */

struct pe_sampler_win_s {
    struct pe_sampler_win_s *next;
    const pe_kind_t *kind;
    int ki; /* its index in skinds */
    pe_prof_t *prof;
    int64_t nmax, nused;      /* frame budget (n) and frames kept */
    uint64_t samples, weight; /* signals and signals+overruns kept */
    uint64_t over_cap;        /* weight dropped beyond n */
    uint64_t truncated;       /* weight of leaf-only samples */
    uint64_t cut;             /* weight of stacks cut in JIT code (PE_RING_F_CUT) */
    uint64_t oom;             /* weight lost to allocation failure */
    uint64_t ring_dropped0;   /* pe_cpu_ring.dropped at open */
    pe_perf_stats_t perf0;    /* the perf engine's counters at open */
    uint64_t ticks0;          /* wall_ticks at open */
    uint64_t quiet0;          /* wall_quiet at open */
    uint64_t unsig0;          /* wall_unsignalled at open */
    uint64_t wperf0;          /* wall_perf at open */
    uint64_t why0[WHY_N];     /* wall_why at open */
    int64_t t0_real, t0_mono;

    uint64_t trunc_why[PE_TRUNC_N]; /* truncated, by what the leaf was (account.h) */
};

extern const pe_kind_t *const pe_sampler_skinds[2];
#define NKINDS ((int)PE_ARRAY_SIZE(pe_sampler_skinds))
extern pthread_mutex_t pe_sampler_wlock;
extern pe_sampler_win_t *pe_sampler_windows;
extern int pe_sampler_thread_events;

/* ---- cpu_session.c ------------------------------------------------------------- */

#define TIMERS_MAX 8192 /* threads with a CPU timer at once; the rest counted */
struct pe_cpu_timer_s {
    pid_t tid;
    int timerid;
    unsigned mark;
};
extern int64_t pe_sampler_period_ns;
extern int pe_sampler_want_scan;
extern int pe_sampler_cpu_perf, pe_sampler_cpu_event;
extern char pe_sampler_cpu_refusal_text[256];
extern pe_spin_t pe_sampler_gone_lock;
extern pe_spin_t pe_sampler_tlock;
extern struct pe_cpu_timer_s pe_sampler_timers[TIMERS_MAX];
extern int pe_sampler_ntimers_hi;
void pe_sampler_timers_disarm_all(void);
void pe_sampler_scan_threads(void);
const char *pe_sampler_gone_name(pid_t tid, char *buf, size_t len);
int pe_sampler_cpu_pick(int64_t period, int ev, int eng);
/* Why the CPU session does not use perf events ("" when it does). */
const char *pe_sampler_cpu_why(void);
void pe_sampler_engine_note(const pe_sampler_win_t *w, char *engine, size_t elen, char *perf,
                            size_t plen);

/* ---- wall.c ---------------------------------------------------------------------- */

extern int64_t pe_sampler_wall_period_ns;
extern uint64_t pe_sampler_wall_ticks;
extern uint64_t pe_sampler_wall_quiet, pe_sampler_wall_why[WHY_N];
extern uint64_t pe_sampler_wall_unsignalled;
extern uint64_t pe_sampler_wall_perf;
extern pid_t *pe_sampler_wall_tids;
extern int pe_sampler_nwall_tids, pe_sampler_wall_tids_cap;
void pe_sampler_wall_tick(uint32_t gen, int64_t periods);
/* A wall session that wants perf events gets them again (a CPU session let go; under life). */
void pe_sampler_wall_perf_resume(void);
/* 1 while the wall session's running threads come from perf events (never signalled). */
int pe_sampler_wall_nosig(void);
/* Why the wall session's running threads are not from perf events ("": they are). */
const char *pe_sampler_wall_why_not_perf(void);

/* ---- collector.c ----------------------------------------------------------------- */

extern pthread_t pe_sampler_collector;
extern int pe_sampler_collector_stop;
extern int pe_sampler_scan_total, pe_sampler_scan_events;
void pe_sampler_drain_all(void);
void pe_sampler_drain_locked(void);
void pe_sampler_wake_collector(void);
void *pe_sampler_collector_main(void *unused);

#endif /* PE_SAMPLER_INT_H */
