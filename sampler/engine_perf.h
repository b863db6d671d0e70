/*
 * engine_perf.h: the CPU engine that sends no signal (not for other modules).
 *
 * Where the kernel lets a process sample its own user space with perf events
 * (kernel.perf_event_paranoid <= 2), a CPU session opens a software event
 * (task-clock) on every application thread, one per CPU, each asking for the
 * user registers and an 8 KiB copy of the top of the user stack; the kernel
 * writes the samples into one ring per CPU (every event of that CPU points
 * its output there), which our collector thread reads and unwinds
 * (stack/unwind.h: pe_unwind_copy) into the sampler's ring.  Nothing runs in
 * the program's threads: threads that block SIGPROF are sampled like the
 * others, and no system call of theirs is interrupted.
 *
 *   threads  those in /proc/self/task at the start get their events; threads
 *            created later inherit them from their creator (inherit +
 *            inherit_thread: never a fork child), and the kernel says so in
 *            the ring (PERF_RECORD_FORK), so a later scan opens events only
 *            for threads nobody covered (a raw clone from a thread of ours,
 *            one made while the start scanned).
 *   exec     every descriptor is close-on-exec and every event
 *            remove_on_exec: nothing survives exec.
 *   fork     the rings are not mapped in a child (VM_DONTCOPY); the child
 *            forgets them and closes its copies of the descriptors.
 *   bounds   descriptors: (threads at start) x (CPUs), at most a quarter
 *            of RLIMIT_NOFILE (the start refuses beyond, the timer engine
 *            then runs; later threads past it are counted, not sampled);
 *            rings: 512 KiB a CPU, 8 MiB in all at most (halved under
 *            ulimit -v, preload/aslimit.h, and under the locked-memory limit).
 *
 * Locking: one mutex inside (HTTP threads start and stop, the collector
 * scans and drains).  The caller holds the sampler's window lock (wlock)
 * around pe_perf_drain, which fills the sampler's ring.
 *
 * Signal-safe: no.
 */
#ifndef PE_SAMPLER_ENGINE_PERF_H
#define PE_SAMPLER_ENGINE_PERF_H

#include <poll.h>
#include <stdint.h>

#include "ring.h"

/* event= on the CPU endpoints: the software clock, or a hardware counter. */
enum {
    PE_PERF_EV_CLOCK = 0,
    PE_PERF_EV_CYCLES,
    PE_PERF_EV_INSTRUCTIONS,
    PE_PERF_EV_CACHE_MISSES,
    PE_PERF_EV_BRANCH_MISSES,
    PE_PERF_EV_N
};
/* The name of an event (as event= spells it), and its index by name (-1). */
const char *pe_perf_event_name(int ev);
int pe_perf_event_by_name(const char *s);

/*
 * Start sampling every application thread: a software clock event every
 * period_ns of each thread's CPU time (ev PE_PERF_EV_CLOCK), or one sample
 * per period_ns events of a hardware counter.  0, or -errno with *why (a
 * static sentence) saying why the engine cannot run here (then nothing is
 * left open).  -ENOENT: the event does not exist on this machine (no PMU).
 */
int pe_perf_start(int64_t period_ns, int ev, const char **why);
/*
 * The same for a wall-clock session alone (wall.c): the software clock every
 * period_ns of each thread's CPU time, no CPU sample made, only each
 * thread's last stack kept (pe_perf_recent) for the running threads of the
 * wall ticks.  A CPU session that starts meanwhile stops it and starts its own.
 */
int pe_perf_start_wall(int64_t period_ns, const char **why);
/* Whether perf events open here at all (one counting event on the calling
   thread, closed at once): 0, or -1 with *why (a static sentence). */
int pe_perf_probe(const char **why);
/* 1 while started for a CPU session (pe_perf_start), 0 off or wall only. */
int pe_perf_for_cpu(void);
/* Stop: every event closed, every ring unmapped.  Idempotent. */
void pe_perf_stop(void);
/* 1 while started. */
int pe_perf_on(void);
/* Collector: open events for application threads no event covers yet;
   drain() (which must call pe_perf_drain) runs between the listing of
   /proc/self/task and the opening, so inherited threads are known.  The
   number of tasks listed, -1 when the engine is off, /proc unreadable, or
   the opening was put off (samples were lost since the last scan: fork
   records may be among them, so wait for the threads' own samples). */
int pe_perf_scan(void (*drain)(void));
/* Collector (wlock held): unwind every sample in the rings into `out`;
   the number of samples moved. */
int pe_perf_drain(pe_ring_t *out);
/* Collector: the descriptors to poll (POLLIN: a ring half full, or a kick); how many. */
int pe_perf_pollfds(struct pollfd *fds, int max);

/* Wake a collector sleeping in poll on pe_perf_pollfds (an eventfd among
   them, written here); pe_perf_kicked reads it empty.  No-ops when off. */
void pe_perf_kick(void);
void pe_perf_kicked(void);

/*
 * Wall-clock sessions: while kept (pe_perf_keep_recent(1), from a running
 * engine; always by one pe_perf_start_wall made; the engine's stop forgets
 * them), each thread's last stack; then
 * pe_perf_recent gives tid's last stack if it was sampled at or after
 * `since` (CLOCK_MONOTONIC ns), else 0, or -1 when another thread's fresh
 * stack holds its slot (the table, sized to the threads at the start, is
 * direct-mapped): a running thread's wall sample without a signal.
 * Collector (pe_perf_drain first, for fresh ones).
 */
void pe_perf_keep_recent(int yes);
int pe_perf_recent(pid_t tid, uint64_t since, uintptr_t *pcs, int max);

/* Counters since the start (a window subtracts what it saw at its open). */
typedef struct pe_perf_stats_s {
    uint64_t samples;         /* samples unwound */
    uint64_t lost;            /* samples the kernel dropped, full ring (PERF_RECORD_LOST) */
    uint64_t deep;            /* stacks deeper than the copy: cut at its end */
    uint64_t unseen;          /* threads left unsampled (descriptor share reached) */
    uint64_t taken;           /* our descriptors the program's dup2/dup3 took (all held ones) */
    int recent_slots;         /* slots of the last-stack table now (0: none) */
    int fds, rings;           /* descriptors and rings open now */
    int fds_peak, rings_peak; /* the most since the start */
    uint64_t ring_kib;        /* one ring's size */
} pe_perf_stats_t;
void pe_perf_stats(pe_perf_stats_t *st);

/* fork child: the rings are gone from its memory; forget and close. */
void pe_perf_atfork_child(void);

#endif /* PE_SAMPLER_ENGINE_PERF_H */
