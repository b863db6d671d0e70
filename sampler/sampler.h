/*
 * sampler.h: CPU profiling (per-thread CPU-time timers, SIGPROF, unwinding in
 * the handler) and the hooks the process-level interposers call into.
 *
 * One sampler serves every CPU request.  A request subscribes a window; the
 * sampler's collector thread drains raw samples from the handler's lock-free
 * ring into every open window; the request turns its window into a profile.
 * Timers exist only while at least one window is open.
 *
 * Signal-safe: no (the handler lives in handler.c, behind PE_SIGSAFE).
 */
#ifndef PE_SAMPLER_H
#define PE_SAMPLER_H

#include <signal.h>

#include <stdint.h>

#include "../preload/pe.h"
#include "../profile/profile.h"

/* Why signal-based profiles (CPU, wall, stacks) cannot run now, or NULL. */
const char *pe_sampler_unavailable(void);
/* The same for CPU and wall profiles, which perf events serve where the
   program handles SIGPROF itself: NULL there when they open. */
const char *pe_sampler_kinds_unavailable(void);

/* Constructor-time setup (no threads, no timers yet).  0 or -errno. */
int pe_sampler_init(void);
/*
 * For good, when the process must be alone (preload/alone.c): the
 * collector is joined, every timer deleted, SIGPROF given back as the
 * program left it; later windows fail (-EACCES).  HTTP handlers have
 * finished first; a window closed later returns what it had.
 */
void pe_sampler_step_aside(void);
/* Undo pe_sampler_step_aside (a later `profep attach`, preload/attach.c). */
void pe_sampler_rejoin(void);

/* ---- CPU profile windows (http/h_profile.c) -------------------------------------- */

typedef struct pe_sampler_win_s pe_sampler_win_t;

/*
 * Open a window: from now until pe_sampler_close, every sample of every
 * application thread goes into it, at one sample per `delay` s of each
 * thread's CPU time, keeping at most `max_frames` frames in all (beyond that,
 * samples are counted as dropped).  The first window starts the sampler
 * (timers, collector); later ones must ask for the same delay.
 * Returns 0 and *out, or
 *   -EBUSY   a sampler with another delay runs (*running_delay set, seconds);
 *   -EPERM   the program handles SIGPROF itself and the session needs the
 *            signal (the timer engine, capture=signal, perf events refused:
 *            perf events serve such a program otherwise); 503 with
 *            pe_sampler_cpu_refusal()'s sentence;
 *   -EINVAL  delay < 1 us or max_frames < 1;  -ENOMEM, -EAGAIN otherwise.
 * Takes a mutex; HTTP threads only.
 */
int pe_sampler_open(double delay, int64_t max_frames, pe_sampler_win_t **out,
                    double *running_delay) PE_NODISCARD;
/*
 * Close a window and return its profile (sample types samples/count and
 * cpu/nanoseconds, labels thread and thread_name, time, duration and comments
 * with the dropped/truncated counts); the caller frees it with pe_prof_free.
 * The last window stops the sampler and deletes every timer.  NULL only when
 * w is NULL.
 */
pe_prof_t *pe_sampler_close(pe_sampler_win_t *w);
/*
 * Wall-clock windows, the same way (http/h_profile.c): every application
 * thread, running or blocked, is sampled every `delay` s of wall time (at
 * most 16 threads per tick, rotating; each sample then weighs the ticks until
 * that thread's next turn).  A thread off the CPU is read from /proc without
 * a signal (quiet.h); a running one (or one /proc cannot give) is signalled
 * and unwound in its own handler.  Sample types samples/count and
 * wall/nanoseconds, period type wall/nanoseconds, labels thread, thread_name,
 * state (/proc state at the sample) and capture ("proc" or "signal").  Wall
 * and CPU sessions run side by side; -EBUSY only against another wall delay.
 * Returns as pe_sampler_open; close with pe_sampler_close.  A signalled
 * thread blocked in a syscall sees it interrupted: poll, epoll_wait,
 * nanosleep and sem_timedwait return EINTR in the program (read, accept
 * restart); /proc captures never interrupt anything.
 */
PE_TESTONLY int pe_sampler_open_wall(double delay, int64_t max_frames, pe_sampler_win_t **out,
                                     double *running_delay) PE_NODISCARD;
/* How wall samples are taken: /proc first then signal, or signal only (as before);
   a session keeps its first window's. */
enum { PE_SAMPLER_CAPTURE_AUTO = 0, PE_SAMPLER_CAPTURE_SIGNAL = 1 };
/*
 * A window of a sampled kind (kind.h: pe_kind_cpu, pe_kind_wall), as
 * pe_sampler_open; `capture` (PE_SAMPLER_CAPTURE_*) counts for a kind with
 * PE_KIND_F_CAPTURE.  -EINVAL for a kind that is not sampled; -EACCES when
 * the kind is unavailable (seccomp).
 */
struct pe_kind_s;
int pe_sampler_open_kind(const struct pe_kind_s *k, double delay, int64_t max_frames, int capture,
                         pe_sampler_win_t **out, double *running_delay) PE_NODISCARD;
/*
 * A CPU window sampling `event` (NULL or "" the CPU clock; "cycles",
 * "instructions", "cache-misses", "branch-misses": hardware counters, perf
 * events only) by `engine` (PE_CPU_ENGINE_* of preload/config.h, or -1:
 * PROFEP_CPU_ENGINE's), as pe_sampler_open otherwise.  Also -EINVAL for an unknown
 * event, -ENOENT when the machine has no such counter (no PMU), -ENOTSUP
 * when perf events are needed (a hardware event, PROFEP_CPU_ENGINE=perf) and
 * refused, -EXDEV when a session of another event or engine runs; then
 * pe_sampler_cpu_refusal() says why in a sentence.
 */
int pe_sampler_open_cpu(const char *event, int engine, double delay, int64_t max_frames,
                        pe_sampler_win_t **out, double *running_delay) PE_NODISCARD;
/* Why the last CPU window could not open (or why its session does not use
   perf events), or the last window of either kind refused -EPERM; "" when
   nothing to say.  HTTP threads, after an open. */
const char *pe_sampler_cpu_refusal(void);
/* Number of open CPU windows; *delay gets the running CPU delay when > 0. */
PE_TESTONLY int pe_sampler_running(double *delay);

/* On every new application thread, first thing in the pthread_create trampoline. */
void pe_sampler_thread_started(void);
/* On an application thread that is about to exit (key destructor). */
void pe_sampler_thread_exiting(void);

/*
 * sigaction/signal interposition for the profiling signal: while our handler
 * is installed, the program's request is stored (and reported back as its
 * own), and applied when profiling stops.  Returns 1 when absorbed (fill *old,
 * skip the real call), 0 to let the real sigaction run.
 */
int pe_sampler_sigaction(int signum, const struct sigaction *act, struct sigaction *old);

/*
 * fork (preload/events.c): the profiling signal is blocked from before the
 * fork (a fork restarted by signals again and again never ends) until after;
 * the child forgets every window, timer and lock, then unblocks.
 */
void pe_sampler_before_fork(sigset_t *saved);
void pe_sampler_after_fork(int child, const sigset_t *saved);
/*
 * exec: no signal of ours may reach the new image (its default action kills
 * it): sends stop, this thread's timer goes, what is pending is drained, and
 * a program's SIG_IGN is handed on.  `foreign` (a vfork child, preload/events.h):
 * only the hand-on, nothing shared is written.  Returns a token for
 * pe_sampler_after_exec_failed, which undoes it all when exec returned.
 */
int pe_sampler_before_exec(int foreign);
void pe_sampler_after_exec_failed(int foreign, int token);
/* posix_spawn, system, popen: a program's SIG_IGN handed on meanwhile (preload/events.h). */
void pe_sampler_spawn_begin(void);
void pe_sampler_spawn_end(void);

#endif /* PE_SAMPLER_H */
