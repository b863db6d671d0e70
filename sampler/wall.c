/*
 * wall.c: wall-clock sampling.  The collector's tick (wall_tick): every
 * `delay` s the next WALL_PER_TICK threads of the last scan, rotating; a
 * thread off the CPU is read from /proc without a signal (quiet.h), a running
 * one from the perf engine's last sample of it.  The engine runs for a CPU
 * session beside, or else for the wall session itself (capture=auto, where
 * PROFEP_CPU_ENGINE allows and perf events open: engine_perf.h); then no
 * thread is signalled at all.  Without it the rest are signalled (unless a
 * signal would interrupt their system call: sigsafe.h).  The counts the
 * profile's comment gives, and the wall kind's row (kind.h).  Shared state
 * is declared in sampler_int.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/proc.h"
#include "../profile/profile.h"
#include "../stack/pyframes.h"
#include "../stack/quiet.h"
#include "engine_perf.h"
#include "kind.h"
#include "sampler.h"
#include "sampler_int.h"
#include "sigsafe.h"

#define WALL_PER_TICK 16 /* threads signalled per wall tick (async-profiler's cap) */
/* a running thread's last perf sample stands for it at most this old */
#define PERF_FRESH_NS 1000000000LL

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
/* The wall session wants the perf engine for its running threads, and why it
   does not have it (under life; read by the comment) */
static int wall_perf_want;
static char wall_perf_why[256];
/* Running threads the perf engine had no fresh sample of: not sampled, not
   signalled (collector); at the session's start */
static uint64_t pe_sampler_wall_perf_miss;
static uint64_t wall_miss0;
/* Of the misses: the thread's slot in the perf engine's last-stack table held
   another thread's stack (pe_perf_recent -1), and the table's size (collector) */
static uint64_t wall_perf_collided, wall_collided0;
static int wall_recent_slots;
/* The running threads are never signalled: the engine is on for this session,
   or being handed between it and a CPU session (writer: under life; reader:
   the ticks) */
static int wall_nosig;

/* Each thread's last stack from /proc and when (direct-mapped by tid;
   collector only): a perf sample older than that is from before it blocked,
   and a thread that has just woken and barely ran since is still there */
#define LASTQ_SLOTS 128
static struct {
    pid_t tid;
    int n;
    uint64_t t; /* CLOCK_MONOTONIC ns */
    uintptr_t pcs[PE_MAX_FRAMES];
} lastq[LASTQ_SLOTS];

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
    lastq[(unsigned)tid % LASTQ_SLOTS].tid = tid;
    lastq[(unsigned)tid % LASTQ_SLOTS].n = n;
    lastq[(unsigned)tid % LASTQ_SLOTS].t = (uint64_t)pe_clock_ns(CLOCK_MONOTONIC);
    memcpy(lastq[(unsigned)tid % LASTQ_SLOTS].pcs, pcs, (size_t)n * sizeof(pcs[0]));
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
static void
syscall_pc_sample(pid_t tid, uint32_t weight, unsigned state, uintptr_t pc)
{
    pe_ring_slot_t *s;

    __atomic_add_fetch(&pe_sampler_wall_unsignalled, 1, __ATOMIC_RELAXED);
    if (!pc)
        return;
    if (!(s = pe_ring_claim(&pe_cpu_ring))) {
        pe_ring_drop(&pe_cpu_ring, weight);
        return;
    }
    s->pcs[0] = pc;
    s->tid = tid;
    s->weight = weight;
    s->nframes = 1;
    s->flags = PE_RING_F_WALL | PE_RING_F_PROC | PE_RING_F_SYSCALL | (state << PE_RING_STATE_SHIFT);
    pe_ring_publish(&pe_cpu_ring, s);
}

static int
wall_may_signal(pid_t tid, uint32_t weight, unsigned state)
{
    pe_sigsafe_t ss;
    int rc = pe_sigsafe_check(tid, &ss);

    if (rc != 0)
        return rc == 1;
    syscall_pc_sample(tid, weight, state, ss.pc);
    return 0;
}

/*
 * The perf engine runs and had nothing fresh of tid, which /proc could not
 * walk either: never a signal.  A thread blocked where the walk fails gives
 * its system call's PC (/proc); a running one that perf events have not
 * sampled lately (it has just woken, or runs in the kernel) is counted.
 */
static void
wall_nosig_sample(pid_t tid, uint32_t weight, unsigned state, int reason)
{
    unsigned h = (unsigned)tid % LASTQ_SLOTS;
    pe_sigsafe_t ss;
    pe_ring_slot_t *s;
    int64_t ran;
    char line[128];

    if (reason == WHY_CANNOT && pe_sigsafe_check(tid, &ss) >= 0 && ss.pc) {
        syscall_pc_sample(tid, weight, state, ss.pc);
        return;
    }
    /* woken from the call /proc last saw it in, and has run under a period
       since: still about there (a thread that sleeps in short naps) */
    if (lastq[h].tid == tid && lastq[h].n > 0 &&
        pe_quiet_last_call(tid, line, sizeof(line), &ran) && ran >= 0 &&
        ran < __atomic_load_n(&pe_sampler_wall_period_ns, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&pe_sampler_wall_quiet, 1, __ATOMIC_RELAXED);
        if (!(s = pe_ring_claim(&pe_cpu_ring))) {
            pe_ring_drop(&pe_cpu_ring, weight);
            return;
        }
        memcpy(s->pcs, lastq[h].pcs, (size_t)lastq[h].n * sizeof(s->pcs[0]));
        s->tid = tid;
        s->weight = weight;
        s->nframes = lastq[h].n;
        s->flags = PE_RING_F_WALL | PE_RING_F_PROC | (state << PE_RING_STATE_SHIFT);
        pe_ring_publish(&pe_cpu_ring, s);
        return;
    }
    __atomic_add_fetch(&pe_sampler_wall_perf_miss, 1, __ATOMIC_RELAXED);
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
    unsigned h = (unsigned)tid % LASTQ_SLOTS;
    int n;

    if (lastq[h].tid == tid && lastq[h].t > since)
        since = lastq[h].t; /* seen blocked since: a sample from before is stale */
    if ((n = pe_perf_recent(tid, since, pcs, PE_MAX_FRAMES)) < 0)
        __atomic_add_fetch(&wall_perf_collided, 1, __ATOMIC_RELAXED);
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
    /* (the signal not ours: the program handles it, and its session began
       with perf events, whose restart after a CPU session may have failed) */
    int perf = quiet && (pe_perf_on() || __atomic_load_n(&wall_nosig, __ATOMIC_ACQUIRE) ||
                         !__atomic_load_n(&pe_cpu_sig.owned, __ATOMIC_ACQUIRE));
    uint64_t since = 0;

    if (weight > PE_SIGQ_WEIGHT_MAX)
        weight = PE_SIGQ_WEIGHT_MAX;
    if (perf) {
        /* perf events sample the running threads already: their last
           stacks, fresh from the rings, stand for them (no signal).  Fresh:
           taken after /proc last saw the thread blocked (wall_perf_sample),
           and within a second or a few periods of the slower session (a
           thread that shares a busy CPU is sampled seldom in wall time). */
        int64_t p = __atomic_load_n(&pe_sampler_wall_period_ns, __ATOMIC_RELAXED);
        if (pe_perf_for_cpu() && pe_sampler_period_ns > p)
            p = pe_sampler_period_ns;
        if (4 * p < PERF_FRESH_NS)
            p = PERF_FRESH_NS / 4;
        pe_perf_stats_t st;
        pe_perf_keep_recent(1);
        pe_perf_drain(&pe_cpu_ring);
        pe_perf_stats(&st);
        if (st.recent_slots)
            __atomic_store_n(&wall_recent_slots, st.recent_slots, __ATOMIC_RELAXED);
        since = (uint64_t)(pe_clock_ns(CLOCK_MONOTONIC) - 4 * p);
    }
    for (int j = 0; j < k; j++) {
        pid_t tid = pe_sampler_wall_tids[(wall_rot + j) % n];
        unsigned st;
        int reason = WHY_ASKED;

        if (quiet) {
            if (wall_quiet_sample(tid, (uint32_t)weight, &st, &reason))
                continue;
            if (perf && wall_perf_sample(tid, (uint32_t)weight, st, since))
                continue;
            if (perf) {
                wall_nosig_sample(tid, (uint32_t)weight, st, reason);
                continue;
            }
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

/*
 * The perf engine for the wall session's running threads, when it wants it
 * and no CPU session has it (under life): at the start, and when a CPU
 * session that had it (or took the timers) gives way.
 */
static void
wall_perf_begin(void)
{
    const char *why = NULL;
    int64_t p = __atomic_load_n(&pe_sampler_wall_period_ns, __ATOMIC_RELAXED);

    if (!wall_perf_want || wall_perf_why[0] || pe_perf_on())
        return;
    if (pe_perf_start_wall(p, &why) < 0) {
        snprintf(wall_perf_why, sizeof(wall_perf_why), "%s", why ? why : "perf events failed");
        __atomic_store_n(&wall_nosig, 0, __ATOMIC_RELEASE); /* the signals again */
    }
}

void
pe_sampler_wall_perf_resume(void)
{
    if (__atomic_load_n(&pe_wall_gen, __ATOMIC_ACQUIRE))
        wall_perf_begin();
}

int
pe_sampler_wall_nosig(void)
{
    return __atomic_load_n(&wall_nosig, __ATOMIC_ACQUIRE);
}

const char *
pe_sampler_wall_why_not_perf(void)
{
    return wall_perf_why;
}

/* Wall: a new generation; the collector ticks at once. */
static void
wall_start(int64_t period, int capture)
{
    __atomic_store_n(&pe_sampler_wall_period_ns, period, __ATOMIC_RELEASE);
    __atomic_store_n(&wall_capture, capture, __ATOMIC_RELEASE);
    wall_perf_why[0] = 0;
    wall_perf_want = 0;
    wall_miss0 = __atomic_load_n(&pe_sampler_wall_perf_miss, __ATOMIC_RELAXED);
    wall_collided0 = __atomic_load_n(&wall_perf_collided, __ATOMIC_RELAXED);
    if (capture == PE_SAMPLER_CAPTURE_SIGNAL)
        snprintf(wall_perf_why, sizeof(wall_perf_why), "capture=signal was asked for");
    else if (pe_cfg.cpu_engine == PE_CPU_ENGINE_TIMER)
        snprintf(wall_perf_why, sizeof(wall_perf_why), "PROFEP_CPU_ENGINE=timer");
    else if (pe_py_active())
        snprintf(wall_perf_why, sizeof(wall_perf_why),
                 "a CPython program: its frames are read in the interrupted thread");
    else
        wall_perf_want = 1;
    /* before the generation: the first tick finds the engine on */
    wall_perf_begin();
    __atomic_store_n(&wall_nosig, pe_perf_on(), __ATOMIC_RELEASE);
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
    if (pe_perf_on() && !pe_perf_for_cpu()) /* ours: the CPU session beside uses the timers */
        pe_perf_stop();
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
    if (wall_perf_why[0])
        pe_prof_comment(p, "capture: running threads signalled; perf events not used: %s",
                        wall_perf_why);
    else if (wall_perf_want && wall_nosig)
        pe_prof_comment(
            p,
            "capture: running threads from perf events (no signal); %llu samples of "
            "running threads left out this session (no fresh perf sample: just "
            "woken, or running in the kernel)",
            (unsigned long long)(__atomic_load_n(&pe_sampler_wall_perf_miss, __ATOMIC_RELAXED) -
                                 wall_miss0));
    if (__atomic_load_n(&wall_perf_collided, __ATOMIC_RELAXED) != wall_collided0)
        pe_prof_comment(
            p,
            "capture: %llu running threads' last perf stacks taken by another thread's in the "
            "table of %d (sized to the threads at the start, one slot a thread id)",
            (unsigned long long)(__atomic_load_n(&wall_perf_collided, __ATOMIC_RELAXED) -
                                 wall_collided0),
            __atomic_load_n(&wall_recent_slots, __ATOMIC_RELAXED));
}

const pe_kind_t pe_kind_wall = {
    .name = "wall",
    .title = "wall-clock",
    .stem = "wall",
    .min_period = 1000000, /* wall ticks interrupt sleeping threads: 1 ms at least */
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
