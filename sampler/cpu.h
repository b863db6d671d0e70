/*
 * cpu.h: what the CPU sampler's files share (not for other modules).
 *
 *   timer.c    OS calls: per-thread CPU timers (raw syscalls), SIGPROF
 *              disposition ownership (install only over SIG_DFL/SIG_IGN, the
 *              libjsig-style stored program disposition).
 *   handler.c  the SIGPROF handler: unwind into the ring, nothing else.
 *   sampler.c  windows, the collector thread, thread and fork/exec hooks.
 *
 * Shared fields name their writer and reader.
 *
 * Signal-safe: only what is marked PE_SIGSAFE.
 */
#ifndef PE_SAMPLER_CPU_H
#define PE_SAMPLER_CPU_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "../preload/pe.h"
#include "ring.h"

#define PE_SAMPLER_SIG SIGPROF
/* si_value of our timers: tag in the top 16 bits, session generation below. */
#define PE_COOKIE_TAG 0x7065ull
#define PE_COOKIE(gen) ((PE_COOKIE_TAG << 48) | ((uint64_t)(gen)&0xffffffffffffull))

/* ---- handler.c ---------------------------------------------------------------- */

/* The ring the handler fills; mapped by sampler.c at the first profile. */
extern pe_ring_t pe_cpu_ring;
/* Cookie of the running session, 0 when none (writer: sampler.c; reader: handler). */
extern uint64_t pe_cpu_cookie;
/* Samples recorded leaf-only because unwinding was unsafe or failed (writer: handler). */
extern uint64_t pe_cpu_truncated;
/* Test hook: also record SI_TKILL signals from this process (bench, unit tests). */
extern int pe_cpu_accept_tkill;

PE_SIGSAFE void pe_cpu_handler(int sig, siginfo_t *si, void *uc);

/* ---- timer.c ------------------------------------------------------------------ */

/* Create a CPU-time timer on thread `tid` delivering PE_SAMPLER_SIG to it,
   first expiry random in (0, period], then every period.  0 or -errno. */
int pe_cpu_timer_create(pid_t tid, int64_t period_ns, uint64_t cookie, int *timerid);
void pe_cpu_timer_delete(int timerid);

/* Take the signal for a profile: 0, or -EPERM when the program handles it. */
int pe_cpu_sig_acquire(void);
/* The last profile ended: hand the signal back if the program asked for it. */
void pe_cpu_sig_release(void);
/* The program's stored disposition, for chaining from the handler. */
PE_SIGSAFE void pe_cpu_sig_chain(int sig, siginfo_t *si, void *uc);
/* exec: make the kernel's disposition the program's before the image goes. */
void pe_cpu_sig_before_exec(void);
void pe_cpu_sig_after_exec_failed(void);
/* fork child: forget the lock state. */
void pe_cpu_sig_atfork_child(void);
/* 1 while a profile runs (writer: sampler.c). */
extern int pe_cpu_profiling;

#endif /* PE_SAMPLER_CPU_H */
