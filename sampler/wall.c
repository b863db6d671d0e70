/*
 * wall.c: wall-clock sampling.  The collector's tick (wall_tick): every
 * `delay` s the next WALL_PER_TICK threads of the last scan, rotating; a
 * thread off the CPU is read from /proc without a signal (quiet.h), a running
 * one from the perf engine's last sample when a perf CPU session runs beside,
 * the rest are signalled (unless a signal would interrupt their system call:
 * sigsafe.h).  The counts the profile's comment gives, and the wall kind's
 * row (kind.h).  Shared state is declared in sampler_int.h.
 */
#include <errno.h>
#include <string.h>

#include "../preload/clock.h"
#include "../preload/proc.h"
#include "../proto/profile.h"
#include "../stack/pyframes.h"
#include "../stack/quiet.h"
#include "engine_perf.h"
#include "kind.h"
#include "sampler.h"
#include "sampler_int.h"
#include "sigsafe.h"

#define WALL_PER_TICK 16 /* threads signalled per wall tick (async-profiler's cap) */

/* ---- data ----------------------------------------------------------------------- */

int64_t pe_sampler_wall_period_ns; /* of the running wall session (idem) */
static uint32_t wall_gen_next;
uint64_t pe_sampler_wall_ticks; /* ticks sent (collector), read by close */
/* Wall samples taken from /proc without a signal, and wall signals sent by
   reason (collector). */
uint64_t pe_sampler_wall_quiet, pe_sampler_wall_why[WHY_N];
/* Wall samples not signalled: the thread waited in a call a signal would interrupt (collector). */
uint64_t pe_sampler_wall_unsignalled;
/* Wall samples of running threads taken from the perf engine's last samples (collector). */
uint64_t pe_sampler_wall_perf;
static int wall_capture; /* PE_SAMPLER_CAPTURE_* of the wall session (writer: open, under life) */

/* Application threads seen by the last scan, for the wall ticks (collector
   only): as many as the program has (grown by the scan; kept if it cannot). */
pid_t *pe_sampler_wall_tids;
int pe_sampler_nwall_tids, pe_sampler_wall_tids_cap;
static int wall_rot;

/* ---- the tick ---------------------------------------------------------------------- */

/*
 * A wall sample of a thread that is off the CPU, read from /proc without a
 * signal (quiet.h), straight into the ring.  1 when taken (or the thread is
 * gone), 0 when it must be signalled (*reason says why); *state gets its
 * state code.
 */
static int
wall_quiet_sample(pid_t tid, uint32_t weight, unsigned *state, int *reason)
{
    uintptr_t pcs[PE_MAX_FRAMES];
    const char *st, *why;
    pe_ring_slot_t *s;
    int cached, n = pe_quiet_capture(tid, pcs, PE_MAX_FRAMES, &st, &why, &cached);

    *state = pe_proc_state_code_of(st);
    if (n == -ESRCH)
        return 1;
    if (n <= 0) {
        *reason = n != -EAGAIN                                ? WHY_CANNOT
                  : why && !strcmp(why, PE_QUIET_WHY_RUNNING) ? WHY_RUNNING
                                                              : WHY_WOKE;
        return 0;
    }
    n = pe_py_interleave_tid(tid, pcs, n, PE_MAX_FRAMES); /* CPython (pyframes.h) */
    __atomic_add_fetch(&pe_sampler_wall_quiet, 1, __ATOMIC_RELAXED);
    if (!(s = pe_ring_claim(&pe_cpu_ring))) {
        pe_ring_drop(&pe_cpu_ring, weight);
        return 1;
    }
    memcpy(s->pcs, pcs, (size_t)n * sizeof(pcs[0]));
    s->tid = tid;
    s->weight = weight;
    s->nframes = n;
    s->flags = PE_RING_F_WALL | PE_RING_F_PROC | (*state << PE_RING_STATE_SHIFT);
    pe_ring_publish(&pe_cpu_ring, s);
    return 1;
}

/*
 * Before a wall signal (auto capture): 1 when tid may be signalled; else 0,
 * and a thread waiting in a call a signal would interrupt (sigsafe.h) gets
 * what /proc gives instead, its system call's PC as a one-frame sample.
 */
static int
wall_may_signal(pid_t tid, uint32_t weight, unsigned state)
{
    pe_sigsafe_t ss;
    pe_ring_slot_t *s;
    int rc = pe_sigsafe_check(tid, &ss);

    if (rc != 0)
        return rc == 1;
    __atomic_add_fetch(&pe_sampler_wall_unsignalled, 1, __ATOMIC_RELAXED);
    if (!ss.pc)
        return 0;
    if (!(s = pe_ring_claim(&pe_cpu_ring))) {
        pe_ring_drop(&pe_cpu_ring, weight);
        return 0;
    }
    s->pcs[0] = ss.pc;
    s->tid = tid;
    s->weight = weight;
    s->nframes = 1;
    s->flags = PE_RING_F_WALL | PE_RING_F_PROC | PE_RING_F_SYSCALL | (state << PE_RING_STATE_SHIFT);
    pe_ring_publish(&pe_cpu_ring, s);
    return 0;
}

/*
 * A wall sample of a running thread from the perf engine's last sample of it
 * (a CPU session by perf events runs beside): no signal.  1 when taken.
 * Collector only.
 */
static int
wall_perf_sample(pid_t tid, uint32_t weight, unsigned state, uint64_t since)
{
    uintptr_t pcs[PE_MAX_FRAMES];
    pe_ring_slot_t *s;
    int n = pe_perf_recent(tid, since, pcs, PE_MAX_FRAMES);

    if (n <= 0)
        return 0;
    __atomic_add_fetch(&pe_sampler_wall_perf, 1, __ATOMIC_RELAXED);
    if (!(s = pe_ring_claim(&pe_cpu_ring))) {
        pe_ring_drop(&pe_cpu_ring, weight);
        return 1;
    }
    memcpy(s->pcs, pcs, (size_t)n * sizeof(pcs[0]));
    s->tid = tid;
    s->weight = weight;
    s->nframes = n;
    s->flags = PE_RING_F_WALL | PE_RING_F_PERF | (state << PE_RING_STATE_SHIFT);
    pe_ring_publish(&pe_cpu_ring, s);
    return 1;
}

/*
 * One wall-clock tick: sample the next WALL_PER_TICK threads of the last scan
 * (all of them when there are fewer), each sample weighted by how many ticks
 * pass before that thread's turn comes again, times `periods`, the periods
 * this tick stands for (more than 1 when the collector was late: a starved
 * collector then still accounts for the wall time that passed).  A thread off
 * the CPU is read from /proc (no signal); the others are signalled.
 * Collector only.
 */
void
pe_sampler_wall_tick(uint32_t gen, int64_t periods)
{
    int n = pe_sampler_nwall_tids, k = n < WALL_PER_TICK ? n : WALL_PER_TICK;
    int64_t weight = (n ? (n + WALL_PER_TICK - 1) / WALL_PER_TICK : 1) * periods;
    int quiet = __atomic_load_n(&wall_capture, __ATOMIC_RELAXED) != PE_SAMPLER_CAPTURE_SIGNAL;
    uint64_t since = 0;

    if (weight > PE_SIGQ_WEIGHT_MAX)
        weight = PE_SIGQ_WEIGHT_MAX;
    if (quiet && pe_perf_on()) {
        /* perf events sample the running threads already: their last
           stacks, fresh from the rings, stand for them (no signal) */
        int64_t p = __atomic_load_n(&pe_sampler_wall_period_ns, __ATOMIC_RELAXED);
        if (pe_sampler_period_ns > p)
            p = pe_sampler_period_ns;
        pe_perf_keep_recent(1);
        pe_perf_drain(&pe_cpu_ring);
        since = (uint64_t)(pe_clock_ns(CLOCK_MONOTONIC) - 2 * p);
    }
    for (int j = 0; j < k; j++) {
        pid_t tid = pe_sampler_wall_tids[(wall_rot + j) % n];
        unsigned st;
        int reason = WHY_ASKED;

        if (quiet) {
            if (wall_quiet_sample(tid, (uint32_t)weight, &st, &reason))
                continue;
            if (since && wall_perf_sample(tid, (uint32_t)weight, st, since))
                continue;
            if (!wall_may_signal(tid, (uint32_t)weight, st))
                continue;
        } else {
            st = pe_proc_state_code_of(
                pe_proc_thread_state(tid)); /* the state before our signal wakes it */
        }
        /* a vanished thread answers ESRCH */
        if (pe_cpu_sigq_send(tid, PE_SIGQ_WALLV(st, (unsigned)weight, gen)) == 0)
            __atomic_add_fetch(&pe_sampler_wall_why[reason], 1, __ATOMIC_RELAXED);
    }
    if (n)
        wall_rot = (wall_rot + k) % n;
    __atomic_add_fetch(&pe_sampler_wall_ticks, 1, __ATOMIC_RELAXED);
}

/* ---- the kind ---------------------------------------------------------------------- */

/* Wall: a new generation; the collector ticks at once. */
static void
wall_start(int64_t period, int capture)
{
    __atomic_store_n(&pe_sampler_wall_period_ns, period, __ATOMIC_RELEASE);
    __atomic_store_n(&wall_capture, capture, __ATOMIC_RELEASE);
    if (++wall_gen_next > PE_SIGQ_GEN_MAX)
        wall_gen_next = 1;
    __atomic_store_n(&pe_sampler_wall_ticks, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_wall_gen, wall_gen_next, __ATOMIC_RELEASE);
}

static void
wall_stop(void)
{
    __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
    pe_perf_keep_recent(0);
}

/* A wall sample's state at the sample, and how it was taken. */
static int
wall_labels(uint32_t flags, pe_prof_label_t *l)
{
    l[0].key = "state";
    l[0].str = pe_proc_state_str(PE_RING_STATE(flags));
    l[1].key = "capture";
    l[1].str = (flags & PE_RING_F_SYSCALL) ? "syscall"
               : (flags & PE_RING_F_PROC)  ? "proc"
               : (flags & PE_RING_F_PERF)  ? "perf"
                                           : "signal";
    return 2;
}

static void
wall_comment(pe_prof_t *p, const pe_kind_close_t *c)
{
    pe_prof_comment(p,
                    "wall: %llu samples (weight %llu) from %llu ticks, period %lld ns, "
                    "at most %d threads signalled per tick",
                    (unsigned long long)c->samples, (unsigned long long)c->weight,
                    (unsigned long long)c->ticks, (long long)c->period, WALL_PER_TICK);
    pe_prof_comment(p,
                    "capture: %llu samples from /proc without a signal, %llu signals sent "
                    "(%llu asked for, %llu to running threads, %llu woke during the walk, "
                    "%llu stacks /proc cannot give)",
                    (unsigned long long)c->quiet, (unsigned long long)c->sigs,
                    (unsigned long long)c->why[WHY_ASKED], (unsigned long long)c->why[WHY_RUNNING],
                    (unsigned long long)c->why[WHY_WOKE], (unsigned long long)c->why[WHY_CANNOT]);
    if (c->unsignalled)
        pe_prof_comment(p,
                        "capture: %llu samples not signalled (the thread waited in a system "
                        "call a signal would interrupt): its system call's PC only, from /proc",
                        (unsigned long long)c->unsignalled);
}

const pe_kind_t pe_kind_wall = {
    .name = "wall",
    .types = {{"samples", "count"}, {"wall", "nanoseconds"}},
    .period_type = {"wall", "nanoseconds"},
    .flags = PE_KIND_F_CAPTURE,
    .unavailable = pe_seccomp_reason,
    .period = &pe_sampler_wall_period_ns,
    .ring_flag = PE_RING_F_WALL,
    .start = wall_start,
    .stop = wall_stop,
    .labels = wall_labels,
    .comment = wall_comment,
};
