/*
 * sampler.c: CPU and wall-clock profiling sessions.  Owns the windows (one per
 * request, of either kind), the collector thread that arms a CPU timer on
 * every application thread while CPU windows are open, sends the wall-clock
 * ticks (one signal per thread every `delay` s, at most WALL_PER_TICK threads
 * per tick, rotating) while wall windows are open, and drains the handler's
 * ring into every open window of the sample's kind; the table of live
 * timers, and the fork/exec hooks.
 *
 * What a CPU-only session costs when nothing happens (issue 21): a thread
 * made through pthread_create arms its own timer as it starts, so the
 * collector scans /proc/self/task only at the session's start, when the
 * thread count (one stat of /proc/self/task, checked every TICK_NS) differs
 * from what the scan saw plus the starts and exits we heard of (a raw clone,
 * a thread from before the library), and every FULL_SCAN_NS in case one
 * thread we could not see replaced another.  It drains the ring every
 * TICK_NS, or at once when the handler finds the ring half full (it posts
 * pe_cpu_wake), or when a request closes its window (which drains itself).
 * Wall-clock sessions (ticks every `delay`) and CPython programs (names read
 * while the code objects live) keep the 20 ms drain.  An exiting thread
 * leaves its name (gone_names), since its samples may be drained after its
 * /proc entry is gone.  OS calls are in timer.c and
 * the handler in handler.c; profiles are built with the proto/ model.
 *
 * Locks: `life` (pthread mutex, HTTP threads only) serializes open/close;
 * `wlock` (mutex) guards the window list and is the ring's single-consumer
 * lock; `tlock` (spin) guards the timer table.  Order: life > wlock, tlock is
 * a leaf.  None is ever taken in a signal handler.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/aslimit.h"
#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/guard.h"
#include "../preload/log.h"
#include "../preload/proc.h"
#include "../preload/real.h"
#include "../preload/spin.h"
#include "../preload/threads.h"
#include "../proto/profile.h"
#include "../stack/pyframes.h"
#include "../stack/quiet.h"
#include "../trace/feed.h"
#include "account.h"
#include "allstacks.h"
#include "engine_perf.h"
#include "kind.h"
#include "peek.h"
#include "sampler.h"
#include "sampler_int.h"
#include "sigsafe.h"

#define RING_SLOTS 2048
#define DRAIN_NS (20 * 1000000L)         /* wall sessions, CPython programs */
#define SCAN_EVERY 5                     /* wall: drains per /proc rescan, ~100 ms */
#define TICK_NS (1000 * 1000000L)        /* CPU only: drain and thread-count check */
#define FULL_SCAN_NS (10 * 1000000000LL) /* CPU only: rescan whatever the count says */
#define GONE_NAMES 256
#define TIMERS_MAX 8192 /* threads with a CPU timer at once; the rest counted */
#define NAMES_MAX 4096
#define NAME_REFRESH_NS 1000000000LL
#define WALL_PER_TICK 16 /* threads signalled per wall tick (async-profiler's cap) */

/* ---- data ----------------------------------------------------------------------- */

/* Why a wall sample took a signal: the profile's comment counts each. */
enum { WHY_ASKED, WHY_RUNNING, WHY_WOKE, WHY_CANNOT, WHY_N };

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

/*
 * The sampled kinds (kind.h): what differs between CPU time and wall-clock
 * time; the windows, the ring, the collector and the signal are shared.
 * Called under `life`, but thread_start/thread_exit (the thread's own hooks,
 * no lock).  Their rows are at the end of this file; a new sampled kind is a
 * row here and a PE_RING_F_ bit its samples carry.
 */
static const pe_kind_t *const skinds[] = {&pe_kind_cpu, &pe_kind_wall};
#define NKINDS ((int)PE_ARRAY_SIZE(skinds))
_Static_assert(WHY_N == PE_ARRAY_SIZE(((pe_kind_close_t *)0)->why), "close's reasons");

static pthread_mutex_t life = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static pe_sampler_win_t *windows; /* under wlock */
static int nwin;                  /* under life: windows of both kinds */
static int nkind[NKINDS];         /* under life: windows per kind */
static int64_t period_ns;         /* of the running CPU session (writer: open, under life) */
static int64_t wall_period_ns;    /* of the running wall session (idem) */
static uint64_t session_gen;
static uint32_t wall_gen_next;
static int want_scan;       /* writer: open (a CPU session began); reader: collector */
static uint64_t wall_ticks; /* ticks sent (collector), read by close */
/* Wall samples taken from /proc without a signal, and wall signals sent by
   reason (collector). */
static uint64_t wall_quiet, wall_why[WHY_N];
/* Wall samples not signalled: the thread waited in a call a signal would interrupt (collector). */
static uint64_t wall_unsignalled;
/* Wall samples of running threads taken from the perf engine's last samples (collector). */
static uint64_t wall_perf;
static int wall_capture; /* PE_SAMPLER_CAPTURE_* of the wall session (writer: open, under life) */
/* The CPU session's engine (writer: cpu_pick, under life): perf events
   (engine_perf.h) or the timers, why not perf, and the event sampled. */
static int cpu_perf, cpu_event;
static char cpu_why[256];
static char cpu_refusal[256]; /* why the last CPU window did not open (under life) */

static pthread_t collector;
static int collector_stop; /* writer: close; reader: collector */
static int aside;          /* pe_sampler_step_aside ran: nothing opens again (under life) */

/* Application threads started minus exited as the hooks heard them (any
   thread, atomic), and the count and that figure at the last scan (collector). */
static int thread_events;
static int scan_total, scan_events;

/* Names of threads that exited during a CPU session (spin lock; thread exit
   writes, the drain reads when /proc no longer has the thread). */
static pe_spin_t gone_lock;
static struct {
    pid_t tid;
    char name[16];
} gone_names[GONE_NAMES];
static unsigned gone_next;

/* Timers we armed (tid -> kernel timer id); tid 0 is a free entry. */
static pe_spin_t tlock;
static struct {
    pid_t tid;
    int timerid;
    unsigned mark;
} timers[TIMERS_MAX];
static int ntimers_hi; /* entries [0, ntimers_hi) may be in use */
/* The current scan's mark (under tlock).  A thread's start hook arms with it:
   if that scan listed the tasks before the thread began, its sweep must not
   take the new timer for a gone thread's. */
static unsigned scan_mark;

/* Application threads seen by the last scan, for the wall ticks (collector
   only): as many as the program has (grown by the scan; kept if it cannot). */
static pid_t *wall_tids;
static int nwall_tids, wall_rot, wall_tids_cap;

/* Thread names, direct-mapped by tid (collector/closer only, under wlock). */
static struct {
    pid_t tid;
    int64_t when;
    char name[32];
} names[NAMES_MAX];

/* ---- helpers -------------------------------------------------------------------- */

/* RING_SLOTS, or under an address-space limit as many as fit in a 1024th of
   it (at least 256): the program's memory is the program's.  A smaller ring
   is drained sooner (the handler posts the collector when it is half full). */
static uint32_t
ring_slots(void)
{
    return pe_aslimit_fit(RING_SLOTS, sizeof(pe_ring_slot_t), 1024, 256);
}

static int
timer_find(pid_t tid)
{
    for (int i = 0; i < ntimers_hi; i++)
        if (timers[i].tid == tid)
            return i;
    return -1;
}

static void timer_disarm_at(int i);

/* Arm a timer on tid unless it has one (tlock held).  `fresh`: tid is a thread
   that has just started, so an entry for it belonged to an earlier thread of
   that tid (a scan armed it as it exited): replace it.  The entry or -1. */
static int
timer_arm(pid_t tid, unsigned mark, int fresh)
{
    int i = timer_find(tid), id;
    uint64_t cookie = __atomic_load_n(&pe_cpu_cookie, __ATOMIC_ACQUIRE);

    if (i >= 0 && fresh) {
        timer_disarm_at(i);
    } else if (i >= 0) {
        timers[i].mark = mark;
        return i;
    }
    if (!cookie || pe_cpu_timer_create(tid, period_ns, cookie, &id) < 0)
        return -1;
    for (i = 0; i < TIMERS_MAX; i++) {
        if (timers[i].tid == 0) {
            timers[i].tid = tid;
            timers[i].timerid = id;
            timers[i].mark = mark;
            if (i >= ntimers_hi)
                ntimers_hi = i + 1;
            return i;
        }
    }
    pe_cpu_timer_delete(id); /* table full: that thread goes unsampled */
    return -1;
}

static void
timer_disarm_at(int i)
{
    pe_cpu_timer_delete(timers[i].timerid);
    timers[i].tid = 0;
}

static void
timers_disarm_all(void)
{
    pe_spin_lock(&tlock);
    for (int i = 0; i < ntimers_hi; i++)
        if (timers[i].tid)
            timer_disarm_at(i);
    ntimers_hi = 0;
    pe_spin_unlock(&tlock);
}

/*
 * Reconcile with /proc/self/task: arm every application thread that has no
 * timer, disarm timers whose thread is gone.  Collector only.
 */
static void
scan_threads(void)
{
    pid_t tids[1024];
    int n = 0, total = 0, events = __atomic_load_n(&thread_events, __ATOMIC_ACQUIRE);
    unsigned mark;
    pe_proc_tasks_t it;
    pid_t tid;

    /* A hook that armed before this is on a thread that exists now: the
       listing below finds it.  One that arms after takes this mark. */
    pe_spin_lock(&tlock);
    mark = ++scan_mark;
    pe_spin_unlock(&tlock);
    if (pe_proc_tasks_open(&it) < 0)
        return;
    nwall_tids = 0;
    for (;;) {
        while (n < (int)PE_ARRAY_SIZE(tids) && (tid = pe_proc_tasks_next(&it)) > 0) {
            total++;
            if (!pe_threads_is_internal(tid)) {
                tids[n++] = tid;
                if (nwall_tids == wall_tids_cap) {
                    int cap = wall_tids_cap ? 2 * wall_tids_cap : 1024;
                    pid_t *v = realloc(wall_tids, (size_t)cap * sizeof(*v));
                    if (v) {
                        wall_tids = v;
                        wall_tids_cap = cap;
                    }
                }
                if (nwall_tids < wall_tids_cap)
                    wall_tids[nwall_tids++] = tid;
            }
        }
        if (!__atomic_load_n(&pe_cpu_cookie, __ATOMIC_ACQUIRE)) {
            if (n < (int)PE_ARRAY_SIZE(tids))
                break;
            n = 0;
            continue; /* wall only: no timers to arm */
        }
        pe_spin_lock(&tlock);
        for (int i = 0; i < n; i++)
            timer_arm(tids[i], mark, 0);
        pe_spin_unlock(&tlock);
        if (n < (int)PE_ARRAY_SIZE(tids))
            break;
        n = 0;
    }
    pe_proc_tasks_close(&it);
    scan_total = total;
    scan_events = events;
    pe_spin_lock(&tlock);
    for (int i = 0; i < ntimers_hi; i++)
        if (timers[i].tid && timers[i].mark != mark)
            timer_disarm_at(i);
    pe_spin_unlock(&tlock);
}

/*
 * Has the set of threads changed in a way the hooks did not tell us?  The
 * kernel gives /proc/self/task a link count of 2 + its threads: one stat,
 * no directory read.  A thread that starts or exits during the scan only
 * makes the next check scan again.  Collector only.
 */
static int
threads_unseen(void)
{
    struct stat st;
    int expect = scan_total + __atomic_load_n(&thread_events, __ATOMIC_ACQUIRE) - scan_events;

    if (stat("/proc/self/task", &st) < 0)
        return 1;
    return (int)st.st_nlink - 2 != expect;
}

/* The name an exited thread left, or NULL. */
static const char *
gone_name(pid_t tid, char *buf, size_t len)
{
    const char *r = NULL;

    pe_spin_lock(&gone_lock);
    for (unsigned i = 0; i < GONE_NAMES; i++) {
        if (gone_names[i].tid == tid) {
            snprintf(buf, len, "%s", gone_names[i].name);
            r = buf;
        }
    }
    pe_spin_unlock(&gone_lock);
    return r;
}

static const char *
thread_name(pid_t tid)
{
    unsigned h = (unsigned)tid % NAMES_MAX;
    int64_t t = pe_clock_ns(CLOCK_MONOTONIC);

    if (names[h].tid != tid || t - names[h].when > NAME_REFRESH_NS) {
        char buf[32];
        if (pe_threads_name(tid, buf, sizeof(buf)) == 0 || gone_name(tid, buf, sizeof(buf))) {
            snprintf(names[h].name, sizeof(names[h].name), "%s", buf);
        } else if (names[h].tid != tid) {
            snprintf(names[h].name, sizeof(names[h].name), "%d", (int)tid);
        }
        names[h].tid = tid;
        names[h].when = t;
    }
    return names[h].name;
}

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
    __atomic_add_fetch(&wall_quiet, 1, __ATOMIC_RELAXED);
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
    __atomic_add_fetch(&wall_unsignalled, 1, __ATOMIC_RELAXED);
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
    __atomic_add_fetch(&wall_perf, 1, __ATOMIC_RELAXED);
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
static void
wall_tick(uint32_t gen, int64_t periods)
{
    int n = nwall_tids, k = n < WALL_PER_TICK ? n : WALL_PER_TICK;
    int64_t weight = (n ? (n + WALL_PER_TICK - 1) / WALL_PER_TICK : 1) * periods;
    int quiet = __atomic_load_n(&wall_capture, __ATOMIC_RELAXED) != PE_SAMPLER_CAPTURE_SIGNAL;
    uint64_t since = 0;

    if (weight > PE_SIGQ_WEIGHT_MAX)
        weight = PE_SIGQ_WEIGHT_MAX;
    if (quiet && pe_perf_on()) {
        /* perf events sample the running threads already: their last
           stacks, fresh from the rings, stand for them (no signal) */
        int64_t p = __atomic_load_n(&wall_period_ns, __ATOMIC_RELAXED);
        if (period_ns > p)
            p = period_ns;
        pe_perf_keep_recent(1);
        pe_perf_drain(&pe_cpu_ring);
        since = (uint64_t)(pe_clock_ns(CLOCK_MONOTONIC) - 2 * p);
    }
    for (int j = 0; j < k; j++) {
        pid_t tid = wall_tids[(wall_rot + j) % n];
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
            __atomic_add_fetch(&wall_why[reason], 1, __ATOMIC_RELAXED);
    }
    if (n)
        wall_rot = (wall_rot + k) % n;
    __atomic_add_fetch(&wall_ticks, 1, __ATOMIC_RELAXED);
}

/* The kind whose ring flag a sample carries (the one without a flag otherwise). */
static const pe_kind_t *
kind_of(uint32_t flags)
{
    const pe_kind_t *none = skinds[0];

    for (int i = 0; i < NKINDS; i++) {
        if (skinds[i]->ring_flag & flags)
            return skinds[i];
        if (!skinds[i]->ring_flag)
            none = skinds[i];
    }
    return none;
}

/* Move everything in the ring into every open window of its kind (wlock held). */
static void
drain(void)
{
    pe_ring_slot_t *s;

    while ((s = pe_ring_peek(&pe_cpu_ring))) {
        pe_prof_label_t labels[4];
        int64_t values[2];
        const pe_kind_t *k = kind_of(s->flags);
        int n = s->nframes, nl = 2, tw = -1;

        if (n > PE_MAX_FRAMES)
            n = PE_MAX_FRAMES; /* keep the leaf end */
        /* CPython frames named while their code objects live (pyframes.h) */
        pe_py_name_pcs(s->pcs, n);
        values[0] = s->weight;
        values[1] = (int64_t)s->weight * *k->period;
        memset(labels, 0, sizeof(labels));
        labels[0].key = "thread";
        labels[0].num = s->tid;
        labels[1].key = "thread_name";
        labels[1].str = windows ? thread_name(s->tid) : "";
        if (k->labels)
            nl += k->labels(s->flags, &labels[2]);
        for (pe_sampler_win_t *w = windows; w; w = w->next) {
            if (w->kind != k)
                continue;
            if (w->nused + n > w->nmax) {
                w->over_cap += s->weight;
                continue;
            }
            if (n < 1 || pe_prof_add(w->prof, s->pcs, n, 1, values, labels, nl) < 0) {
                w->oom += s->weight;
                continue;
            }
            w->nused += n;
            w->samples++;
            w->weight += s->weight;
            if (s->flags & PE_RING_F_TRUNCATED) {
                w->truncated += s->weight;
                if (tw < 0) /* once per sample: what its leaf was (account.c) */
                    tw = s->flags & PE_RING_F_TRUNC_OURS ? PE_TRUNC_OURS
                                                         : pe_sampler_trunc_why(s->pcs[0]);
                w->trunc_why[tw] += s->weight;
            }
            if (s->flags & PE_RING_F_CUT)
                w->cut += s->weight;
        }
        pe_ring_release(&pe_cpu_ring, s);
    }
}

/* The perf engine's rings into the ring, then the ring into the windows (wlock held). */
static void
drain_all(void)
{
    if (pe_perf_on())
        pe_perf_drain(&pe_cpu_ring);
    drain();
}

static void
drain_locked(void)
{
    pthread_mutex_lock(&wlock);
    drain_all();
    pthread_mutex_unlock(&wlock);
}

/* Perf engine: events for threads no event covers (a raw clone, a thread
   made while the session started); the count check's figures as a scan's. */
static void
perf_scan(void)
{
    int events = __atomic_load_n(&thread_events, __ATOMIC_ACQUIRE);
    int total = pe_perf_scan(drain_locked);

    if (total >= 0) {
        scan_total = total;
        scan_events = events;
    }
}

static void
abs_ts(int64_t ns, struct timespec *ts)
{
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
}

/* Wake the collector (it sleeps on the semaphore, or in poll while the perf
   engine runs: then through the engine's kick descriptor). */
static void
wake_collector(void)
{
    sem_post(&pe_cpu_wake);
    pe_perf_kick();
}

/* Sleep until abs time `until` (CLOCK_MONOTONIC) or a post of pe_cpu_wake.
   1 when posted (the ring is half full, or a request or stop wants us). */
static int
collector_sleep(int64_t until)
{
    struct timespec ts;
    int posted;

    while (pe_perf_on()) {
        /* perf rings: poll them (POLLIN when one is half full) and the
           engine's kick descriptor (wake_collector) */
        static struct pollfd fds[1025]; /* (collector only) every ring and the kick */
        int64_t left = until - pe_clock_ns(CLOCK_MONOTONIC);
        int n = pe_perf_pollfds(fds, (int)PE_ARRAY_SIZE(fds)), woke = 0;

        if (sem_trywait(&pe_cpu_wake) == 0) {
            woke = 1;
        } else if (left <= 0) {
            return 0;
        } else if (poll(fds, (nfds_t)n, (int)(left / 1000000) + 1) > 0) {
            struct timespec rest = {0, 10 * 1000000L};
            for (int i = 0; i < n; i++)
                woke |= (fds[i].revents & POLLIN) != 0;
            if (!woke) /* POLLHUP (a ring's owner exited) or a stopped engine: no spin */
                nanosleep(&rest, NULL);
        }
        if (woke) {
            pe_perf_kicked();
            while (sem_trywait(&pe_cpu_wake) == 0)
                ;
            return 1;
        }
    }
    abs_ts(until, &ts);
    posted = sem_clockwait(&pe_cpu_wake, CLOCK_MONOTONIC, &ts) == 0;
    while (sem_trywait(&pe_cpu_wake) == 0) /* several posts: one wake-up */
        posted = 1;
    return posted;
}

static void *
collector_main(void *unused)
{
    sigset_t all;
    int64_t next_drain, next_wall, next_check, next_full, now;
    uint32_t wgen, last_wgen;
    int i = 0;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pe_threads_mark_internal();
    prctl(PR_SET_NAME, "pe-cpu-collect", 0, 0, 0);
    scan_threads();
    now = pe_clock_ns(CLOCK_MONOTONIC);
    next_wall = now;
    next_check = now + TICK_NS;
    next_full = now + FULL_SCAN_NS;
    last_wgen = __atomic_load_n(&pe_wall_gen, __ATOMIC_ACQUIRE);
    next_drain = now + DRAIN_NS;
    while (!__atomic_load_n(&collector_stop, __ATOMIC_ACQUIRE)) {
        int64_t wp, next;
        int posted, fast;

        wgen = __atomic_load_n(&pe_wall_gen, __ATOMIC_ACQUIRE);
        /* wall ticks, and CPython's names, want the short drain period */
        fast = wgen || pe_py_active();
        next = fast ? next_drain : next_check;
        if (wgen && next_wall < next)
            next = next_wall;
        posted = collector_sleep(next);
        now = pe_clock_ns(CLOCK_MONOTONIC);
        wgen = __atomic_load_n(&pe_wall_gen, __ATOMIC_ACQUIRE);
        /* The session's period is published before its generation: read it
           again now (a session may have started during the sleep). */
        wp = __atomic_load_n(&wall_period_ns, __ATOMIC_ACQUIRE);
        if (wgen != last_wgen) { /* a new session: its first tick is now, not overdue */
            last_wgen = wgen;
            next_wall = now;
        }
        if (wgen && wp > 0 && now >= next_wall) {
            /* Late (a starved collector): one tick standing for every period
               that passed, never a burst of signals. */
            int64_t periods = 1 + (now - next_wall) / wp;

            wall_tick(wgen, periods);
            next_wall += periods * wp;
        } else if (!wgen) {
            next_wall = now;
        }
        if (__atomic_exchange_n(&want_scan, 0, __ATOMIC_ACQ_REL)) {
            scan_threads();
            next_full = now + FULL_SCAN_NS;
        }
        if (wgen) {
            /* wall: its thread list from a scan every ~100 ms, as ticks need it */
            if (now < next_drain && !posted)
                continue;
            next_drain += DRAIN_NS;
            if (next_drain <= now)
                next_drain = now + DRAIN_NS;
            pthread_mutex_lock(&wlock);
            drain_all();
            pthread_mutex_unlock(&wlock);
            if (++i % SCAN_EVERY == 0) {
                if (pe_perf_on() && threads_unseen())
                    perf_scan();
                scan_threads();
            }
            continue;
        }
        if (posted || now >= next_check || (fast && now >= next_drain)) {
            next_drain = now + DRAIN_NS;
            pthread_mutex_lock(&wlock);
            drain_all();
            pthread_mutex_unlock(&wlock);
        }
        if (now >= next_check) {
            next_check = now + TICK_NS;
            if (now >= next_full || threads_unseen()) {
                if (pe_perf_on())
                    perf_scan(); /* (no timers to arm: the cookie is 0) */
                else
                    scan_threads();
                next_full = now + FULL_SCAN_NS;
            }
        }
    }
    /* stop: no new samples from this session, then no timers, no events */
    __atomic_store_n(&pe_cpu_cookie, 0, __ATOMIC_RELEASE);
    timers_disarm_all();
    if (pe_perf_on()) {
        drain_locked();
        pe_perf_stop();
    }
    return NULL;
}

/* ---- module API ------------------------------------------------------------------ */

const char *
pe_sampler_unavailable(void)
{
    const char *why = pe_cpu_seccomp_reason();

    if (why)
        return why;
    return pe_cpu_sig_program_owns() ? "SIGPROF is handled by the program" : NULL;
}

int
pe_sampler_init(void)
{
    if (!pe_real_ready)
        pe_real_init();
    pe_cpu_seccomp_init();
    return 0;
}

/*
 * Open a window of `kind`.  The first window of any kind takes the signal and
 * starts the collector; the first of a kind starts that kind (CPU: a new
 * cookie, timers on the next scan; wall: a new generation, ticks at once).
 */
static int
kind_index(const pe_kind_t *k)
{
    for (int i = 0; i < NKINDS; i++)
        if (skinds[i] == k)
            return i;
    return -1;
}

/*
 * The CPU session's engine, before cpu_start (under life): perf events where
 * they work (and are not refused by PROFEP_CPU_ENGINE=timer), else the
 * timers; cpu_why says why not perf.  A hardware event needs perf: -ENOENT
 * (no such counter here) or another -errno, with cpu_why saying why; so does
 * PROFEP_CPU_ENGINE=perf.
 */
static int
cpu_pick(int64_t period, int ev, int eng)
{
    const char *why = NULL;
    int rc = 0;

    cpu_perf = 0;
    cpu_event = ev;
    if (eng < 0)
        eng = pe_cfg.cpu_engine;
    if (ev == PE_PERF_EV_CLOCK && eng == PE_CPU_ENGINE_TIMER)
        why = pe_cfg.cpu_engine == PE_CPU_ENGINE_TIMER ? "PROFEP_CPU_ENGINE=timer"
                                                       : "engine=timer was asked for";
    else if (ev == PE_PERF_EV_CLOCK && eng == PE_CPU_ENGINE_AUTO && pe_py_active())
        why = "a CPython program: its frames are read in the interrupted thread, which only "
              "the signal can do";
    else if ((rc = pe_perf_start(period, ev, &why)) == 0)
        cpu_perf = 1;
    snprintf(cpu_why, sizeof(cpu_why), "%s", why ? why : "");
    if (rc < 0 && (ev != PE_PERF_EV_CLOCK || eng == PE_CPU_ENGINE_PERF)) {
        snprintf(cpu_refusal, sizeof(cpu_refusal), "%s", cpu_why);
        return rc == -ENOENT ? -ENOENT : -ENOTSUP;
    }
    return 0;
}

const char *
pe_sampler_cpu_refusal(void)
{
    return cpu_refusal;
}

static int open_kind_ev(const pe_kind_t *k, double delay, int64_t max_frames, int capture, int ev,
                        int eng, pe_sampler_win_t **out, double *running_delay);

int
pe_sampler_open_kind(const pe_kind_t *k, double delay, int64_t max_frames, int capture,
                     pe_sampler_win_t **out, double *running_delay)
{
    return open_kind_ev(k, delay, max_frames, capture, PE_PERF_EV_CLOCK, -1, out, running_delay);
}

int
pe_sampler_open_cpu(const char *event, int engine, double delay, int64_t max_frames,
                    pe_sampler_win_t **out, double *running_delay)
{
    int ev = event && *event ? pe_perf_event_by_name(event) : PE_PERF_EV_CLOCK;

    if (ev < 0 || engine > PE_CPU_ENGINE_TIMER)
        return -EINVAL;
    return open_kind_ev(&pe_kind_cpu, delay, max_frames, 0, ev, engine, out, running_delay);
}

static int
open_kind_ev(const pe_kind_t *k, double delay, int64_t max_frames, int capture, int ev, int eng,
             pe_sampler_win_t **out, double *running_delay)
{
    int kind = kind_index(k);
    int64_t want = (int64_t)(delay * 1e9 + 0.5);
    pe_sampler_win_t *w;
    sigset_t all, saved;
    int rc = 0, started = 0;

    *out = NULL;
    if (kind < 0)
        return -EINVAL;
    if (k->unavailable && k->unavailable()) /* also while a session runs: a filter may be new */
        return -EACCES;
    if (want < 1000 || max_frames < 1)
        return -EINVAL;
    pe_py_init(); /* before the first signal: CPython's frames, if any */
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->kind = k;
    w->ki = kind;
    w->nmax = max_frames;
    w->prof = pe_prof_new(k->types, 2, &k->period_type, want);
    if (!w->prof) {
        free(w);
        return -ENOMEM;
    }
    pthread_mutex_lock(&life);
    if (aside) {
        rc = -EACCES;
        goto err_unlock;
    }
    if (nkind[kind] > 0 && want != *k->period) {
        if (running_delay)
            *running_delay = (double)*k->period / 1e9;
        rc = -EBUSY;
        goto err_unlock;
    }
    if (k == &pe_kind_cpu && nkind[kind] > 0 && ev != cpu_event) {
        snprintf(cpu_refusal, sizeof(cpu_refusal), "a CPU profile of event=%s is running",
                 pe_perf_event_name(cpu_event));
        rc = -EXDEV;
        goto err_unlock;
    }
    if (k == &pe_kind_cpu && nkind[kind] > 0 &&
        ((eng == PE_CPU_ENGINE_PERF && !cpu_perf) || (eng == PE_CPU_ENGINE_TIMER && cpu_perf))) {
        snprintf(cpu_refusal, sizeof(cpu_refusal), "a CPU profile by the %s engine is running",
                 cpu_perf ? "perf" : "timer");
        rc = -EXDEV;
        goto err_unlock;
    }
    if (nwin == 0) {
        if ((rc = pe_cpu_sig_acquire()) < 0)
            goto err_unlock;
        if (!pe_cpu_ring.slots) {
            /* before the ring: the handler posts it once slots exist */
            sem_init(&pe_cpu_wake, 0, 0);
            rc = pe_ring_init(&pe_cpu_ring, ring_slots());
        }
        if (rc < 0) {
            pe_cpu_sig_release();
            goto err_unlock;
        }
        pthread_mutex_lock(&wlock);
        while (pe_ring_peek(&pe_cpu_ring)) /* a stale session's leftovers */
            pe_ring_release(&pe_cpu_ring, pe_ring_peek(&pe_cpu_ring));
        pthread_mutex_unlock(&wlock);
        __atomic_add_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
        started = 1;
    }
    if (k == &pe_kind_cpu && nkind[kind] == 0 && (rc = cpu_pick(want, ev, eng)) < 0) {
        if (started) {
            __atomic_sub_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
            pe_cpu_sig_release();
        }
        goto err_unlock;
    }
    if (nkind[kind] == 0) {
        k->start(want, capture);
        if (!started)
            wake_collector(); /* a running collector: scan, or tick, now */
    }
    if (started) {
        __atomic_store_n(&collector_stop, 0, __ATOMIC_RELEASE);
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &saved);
        rc = -pthread_create(&collector, NULL, collector_main, NULL);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (rc < 0) {
            __atomic_store_n(&pe_cpu_cookie, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
            __atomic_sub_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
            pe_cpu_sig_release();
            goto err_unlock;
        }
    }
    w->t0_real = pe_clock_ns(CLOCK_REALTIME);
    w->t0_mono = pe_clock_ns(CLOCK_MONOTONIC);
    w->ticks0 = __atomic_load_n(&wall_ticks, __ATOMIC_RELAXED);
    w->quiet0 = __atomic_load_n(&wall_quiet, __ATOMIC_RELAXED);
    w->unsig0 = __atomic_load_n(&wall_unsignalled, __ATOMIC_RELAXED);
    w->wperf0 = __atomic_load_n(&wall_perf, __ATOMIC_RELAXED);
    for (int i = 0; i < WHY_N; i++)
        w->why0[i] = __atomic_load_n(&wall_why[i], __ATOMIC_RELAXED);
    pthread_mutex_lock(&wlock);
    drain_all(); /* what came before this window belongs to the others */
    w->ring_dropped0 = __atomic_load_n(&pe_cpu_ring.dropped, __ATOMIC_RELAXED);
    pe_perf_stats(&w->perf0);
    w->next = windows;
    windows = w;
    pthread_mutex_unlock(&wlock);
    nwin++;
    nkind[kind]++;
    pthread_mutex_unlock(&life);
    *out = w;
    return 0;

err_unlock:
    pthread_mutex_unlock(&life);
    pe_prof_free(w->prof);
    free(w);
    return rc;
}

int
pe_sampler_open(double delay, int64_t max_frames, pe_sampler_win_t **out, double *running_delay)
{
    return pe_sampler_open_kind(&pe_kind_cpu, delay, max_frames, PE_SAMPLER_CAPTURE_AUTO, out,
                                running_delay);
}

int
pe_sampler_open_wall(double delay, int64_t max_frames, pe_sampler_win_t **out,
                     double *running_delay)
{
    return pe_sampler_open_kind(&pe_kind_wall, delay, max_frames, PE_SAMPLER_CAPTURE_AUTO, out,
                                running_delay);
}

/* The CPU window's engine comment (which, and why not perf) and the perf
   engine's counts since the window opened (life and wlock held). */
static void
engine_note(const pe_sampler_win_t *w, char *engine, size_t elen, char *perf, size_t plen)
{
    pe_perf_stats_t st;

    if (!cpu_perf) {
        snprintf(engine, elen, "engine: timer (per-thread CPU timers and SIGPROF)%s%s",
                 cpu_why[0] ? "; perf events not used: " : "", cpu_why);
        return;
    }
    pe_perf_stats(&st);
    if (st.lost != w->perf0.lost || st.deep != w->perf0.deep || st.unseen != w->perf0.unseen)
        snprintf(perf, plen,
                 "perf: %llu samples lost by the kernel (ring full), %llu stacks deeper than the "
                 "copy cut at its end, %llu threads not sampled (descriptor share used up)",
                 (unsigned long long)(st.lost - w->perf0.lost),
                 (unsigned long long)(st.deep - w->perf0.deep),
                 (unsigned long long)(st.unseen - w->perf0.unseen));
    snprintf(engine, elen,
             "engine: perf (perf events, event=%s, no signal; stacks unwound from an %d KiB copy "
             "on the collector thread; at most %d descriptors and %d rings of %llu KiB)",
             pe_perf_event_name(cpu_event), 8, st.fds_peak, st.rings_peak,
             (unsigned long long)st.ring_kib);
}

pe_prof_t *
pe_sampler_close(pe_sampler_win_t *w)
{
    pe_sampler_win_t **pp;
    pe_prof_t *p;
    uint64_t ring_dropped;
    pe_kind_close_t c;
    char engine[512], perf[512];
    int kind, perf_cpu = 0;

    if (!w)
        return NULL;
    engine[0] = perf[0] = 0;
    kind = w->ki;
    memset(&c, 0, sizeof(c));
    pthread_mutex_lock(&life);
    if (aside) { /* stopped already (pe_sampler_step_aside): only its samples so far */
        pthread_mutex_lock(&wlock);
        for (pp = &windows; *pp; pp = &(*pp)->next) {
            if (*pp == w) {
                *pp = w->next;
                break;
            }
        }
        pthread_mutex_unlock(&wlock);
        pthread_mutex_unlock(&life);
        p = w->prof;
        free(w);
        return p;
    }
    c.period = *w->kind->period;
    if (nwin == 1) {
        __atomic_store_n(&collector_stop, 1, __ATOMIC_RELEASE);
        wake_collector();
        pthread_join(collector, NULL);
        __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
    } else if (nkind[kind] == 1) {
        w->kind->stop(); /* windows of the other kind stay: the collector runs on */
    }
    c.ticks = __atomic_load_n(&wall_ticks, __ATOMIC_RELAXED) - w->ticks0;
    c.quiet = __atomic_load_n(&wall_quiet, __ATOMIC_RELAXED) - w->quiet0;
    c.unsignalled = __atomic_load_n(&wall_unsignalled, __ATOMIC_RELAXED) - w->unsig0;
    for (int i = 0; i < WHY_N; i++) {
        c.why[i] = __atomic_load_n(&wall_why[i], __ATOMIC_RELAXED) - w->why0[i];
        c.sigs += c.why[i];
    }
    pthread_mutex_lock(&wlock);
    drain_all();
    ring_dropped = __atomic_load_n(&pe_cpu_ring.dropped, __ATOMIC_RELAXED) - w->ring_dropped0;
    perf_cpu = w->kind == &pe_kind_cpu && cpu_perf;
    if (w->kind == &pe_kind_cpu)
        engine_note(w, engine, sizeof(engine), perf, sizeof(perf));
    else if (__atomic_load_n(&wall_perf, __ATOMIC_RELAXED) != w->wperf0)
        snprintf(perf, sizeof(perf),
                 "capture: %llu samples of running threads from the perf engine's last samples "
                 "of them (a CPU profile by perf events ran beside; no signal)",
                 (unsigned long long)(__atomic_load_n(&wall_perf, __ATOMIC_RELAXED) - w->wperf0));
    for (pp = &windows; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&wlock);
    nkind[kind]--;
    if (--nwin == 0) {
        pe_cpu_sig_quiesce(100); /* a tick or timer signal still on its way */
        __atomic_sub_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
        pe_cpu_sig_release();
    }
    pthread_mutex_unlock(&life);

    p = w->prof;
    pe_prof_set_time(p, w->t0_real, pe_clock_ns(CLOCK_MONOTONIC) - w->t0_mono);
    c.samples = w->samples;
    c.weight = w->weight;
    w->kind->comment(p, &c);
    if (engine[0])
        pe_prof_comment(p, "%s", engine);
    if (perf[0])
        pe_prof_comment(p, "%s", perf);
    if (w->over_cap)
        pe_prof_comment(p, "dropped: %llu samples beyond n=%lld frames",
                        (unsigned long long)w->over_cap, (long long)w->nmax);
    if (ring_dropped)
        pe_prof_comment(p, "dropped: %llu samples (sample ring full)",
                        (unsigned long long)ring_dropped);
    if (w->oom)
        pe_prof_comment(p, "dropped: %llu samples (out of memory)", (unsigned long long)w->oom);
    if (w->truncated)
        pe_sampler_trunc_comment(p, w->trunc_why);
    if (!perf_cpu) /* (perf events sample threads that block SIGPROF, or have a filter) */
        pe_sampler_unsampled_comment(p, (w->kind->flags & PE_KIND_F_ONCPU) != 0); /* account.c */
    if (w->cut)
        pe_prof_comment(p,
                        "cut: %llu samples whose stack stops where neither DWARF nor the "
                        "frame pointer can go on (JIT code that keeps no frame pointer)",
                        (unsigned long long)w->cut);
    if (pe_py_note()[0])
        pe_prof_comment(p, "%s", pe_py_note());
    free(w);
    return p;
}

void
pe_sampler_step_aside(void)
{
    pthread_mutex_lock(&life);
    if (!aside && nwin > 0) {
        /* Windows still open (a /profile_start session, the peek): the
           collector leaves and deletes every timer, then SIGPROF goes back. */
        __atomic_store_n(&collector_stop, 1, __ATOMIC_RELEASE);
        wake_collector();
        pthread_join(collector, NULL);
        __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
        pe_cpu_sig_quiesce(100);
        __atomic_sub_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
        pe_cpu_sig_release();
    }
    pe_cpu_sig_give_back(); /* the program's disposition, also between sessions */
    aside = 1;
    pthread_mutex_unlock(&life);
}

void
pe_sampler_rejoin(void)
{
    pthread_mutex_lock(&life);
    aside = 0;
    pthread_mutex_unlock(&life);
}

int
pe_sampler_running(double *delay)
{
    int n;
    pthread_mutex_lock(&life);
    n = nkind[kind_index(&pe_kind_cpu)];
    if (n && delay)
        *delay = (double)*pe_kind_cpu.period / 1e9;
    pthread_mutex_unlock(&life);
    return n;
}

void
pe_sampler_thread_started(void)
{
    pe_cpu_stack_note();
    if (pe_tls.internal)
        return;
    __atomic_add_fetch(&thread_events, 1, __ATOMIC_RELEASE);
    PE_TRACE_EVENT(PE_TJ_EV_THREAD_START, pe_clock_ns(CLOCK_MONOTONIC), 0, 0, NULL);
    for (int k = 0; k < NKINDS; k++)
        if (skinds[k]->thread_start)
            skinds[k]->thread_start(pe_gettid());
}

void
pe_sampler_thread_exiting(void)
{
    if (pe_tls.internal)
        return;
    __atomic_sub_fetch(&thread_events, 1, __ATOMIC_RELEASE);
    PE_TRACE_EVENT(PE_TJ_EV_THREAD_EXIT, pe_clock_ns(CLOCK_MONOTONIC), 0, 0, NULL);
    for (int k = 0; k < NKINDS; k++)
        if (skinds[k]->thread_exit)
            skinds[k]->thread_exit(pe_gettid());
}

/* ---- the kinds --------------------------------------------------------------------- */

/* CPU: a new cookie; the collector's next scan arms a timer on every thread. */
static void
cpu_start(int64_t period, int capture)
{
    (void)capture;
    period_ns = period;
    session_gen++;
    if (cpu_perf)
        return; /* perf events (cpu_pick): no timers, no signal */
    __atomic_store_n(&pe_cpu_cookie, PE_COOKIE(session_gen), __ATOMIC_RELEASE);
    __atomic_store_n(&want_scan, 1, __ATOMIC_RELEASE);
}

/* CPU's last window while wall windows stay: the timers go. */
static void
cpu_stop(void)
{
    __atomic_store_n(&pe_cpu_cookie, 0, __ATOMIC_RELEASE);
    timers_disarm_all();
    if (pe_perf_on()) {
        drain_locked(); /* its last samples, then no events */
        pe_perf_stop();
    }
}

/* A new thread gets its timer from its first instruction on: no scan needed to find it. */
static void
cpu_thread_start(pid_t tid)
{
    if (!__atomic_load_n(&pe_cpu_cookie, __ATOMIC_ACQUIRE))
        return;
    pe_spin_lock(&tlock);
    timer_arm(tid, scan_mark, 1);
    pe_spin_unlock(&tlock);
}

static void
cpu_thread_exit(pid_t tid)
{
    int i;

    if (__atomic_load_n(&pe_cpu_cookie, __ATOMIC_ACQUIRE) || pe_perf_on()) {
        /* its samples may be drained after /proc forgets it: leave the name */
        char buf[16] = "";
        if (prctl(PR_GET_NAME, buf, 0, 0, 0) == 0) {
            pe_spin_lock(&gone_lock);
            unsigned k = gone_next++ % GONE_NAMES;
            gone_names[k].tid = tid;
            memcpy(gone_names[k].name, buf, sizeof(buf));
            gone_names[k].name[sizeof(buf) - 1] = 0;
            pe_spin_unlock(&gone_lock);
        }
    }
    if (!__atomic_load_n(&ntimers_hi, __ATOMIC_RELAXED))
        return;
    pe_spin_lock(&tlock);
    if ((i = timer_find(tid)) >= 0)
        timer_disarm_at(i);
    pe_spin_unlock(&tlock);
}

static void
cpu_comment(pe_prof_t *p, const pe_kind_close_t *c)
{
    pe_prof_comment(p, "cpu: %llu samples, weight %llu with timer overruns, period %lld ns",
                    (unsigned long long)c->samples, (unsigned long long)c->weight,
                    (long long)c->period);
}

/* Wall: a new generation; the collector ticks at once. */
static void
wall_start(int64_t period, int capture)
{
    __atomic_store_n(&wall_period_ns, period, __ATOMIC_RELEASE);
    __atomic_store_n(&wall_capture, capture, __ATOMIC_RELEASE);
    if (++wall_gen_next > PE_SIGQ_GEN_MAX)
        wall_gen_next = 1;
    __atomic_store_n(&wall_ticks, 0, __ATOMIC_RELAXED);
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

const pe_kind_t pe_kind_cpu = {
    .name = "cpu",
    .types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
    .period_type = {"cpu", "nanoseconds"},
    .flags = PE_KIND_F_ONCPU,
    .unavailable = pe_cpu_seccomp_reason,
    .period = &period_ns,
    .start = cpu_start,
    .stop = cpu_stop,
    .thread_start = cpu_thread_start,
    .thread_exit = cpu_thread_exit,
    .comment = cpu_comment,
};

const pe_kind_t pe_kind_wall = {
    .name = "wall",
    .types = {{"samples", "count"}, {"wall", "nanoseconds"}},
    .period_type = {"wall", "nanoseconds"},
    .flags = PE_KIND_F_CAPTURE,
    .unavailable = pe_cpu_seccomp_reason,
    .period = &wall_period_ns,
    .ring_flag = PE_RING_F_WALL,
    .start = wall_start,
    .stop = wall_stop,
    .labels = wall_labels,
    .comment = wall_comment,
};

void
pe_sampler_before_fork(sigset_t *saved)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, PE_SAMPLER_SIG);
    pthread_sigmask(SIG_BLOCK, &s, saved);
}

void
pe_sampler_after_fork(int child, const sigset_t *saved)
{
    if (child) {
        /* POSIX timers and other threads do not survive fork: the child is dormant.
           Windows and their profiles are left behind (they belong to gone threads). */
        __atomic_store_n(&pe_cpu_cookie, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&pe_cpu_profiling, 0, __ATOMIC_RELEASE);
        pthread_mutex_init(&life, NULL);
        pthread_mutex_init(&wlock, NULL);
        pe_spin_reset(&tlock);
        pe_spin_reset(&gone_lock);
        if (pe_cpu_ring.slots) /* the collector may have been waiting on it */
            sem_init(&pe_cpu_wake, 0, 0);
        pe_perf_atfork_child(); /* its rings are not in the child */
        cpu_perf = 0;
        memset(timers, 0, sizeof(timers));
        ntimers_hi = 0;
        windows = NULL;
        nwin = 0;
        memset(nkind, 0, sizeof(nkind));
        __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
        pe_cpu_sig_atfork_child();
    }
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* Take every signal of ours pending on this thread (the signal is blocked). */
static void
drain_ours(const sigset_t *s)
{
    struct timespec zero = {0, 0};
    siginfo_t si;

    while (sigtimedwait(s, &si, &zero) == PE_SAMPLER_SIG) {
        uint64_t v = (uint64_t)(uintptr_t)si.si_value.sival_ptr;
        if (si.si_code != SI_TIMER && !(si.si_code == SI_QUEUE && (v >> 48) == PE_SIGQ_TAG)) {
            /* not ours: leave it for the program (one standard signal pends at most) */
            syscall(SYS_tgkill, getpid(), pe_gettid(), PE_SAMPLER_SIG);
            break;
        }
    }
}

int
pe_sampler_before_exec(int foreign)
{
    sigset_t s, saved;

    if (foreign) /* a vfork child: its pending set is its own and empty of ours */
        return pe_sigown_handon_begin(&pe_cpu_sig, 1);
    sigemptyset(&s);
    sigaddset(&s, PE_SAMPLER_SIG);
    pthread_sigmask(SIG_BLOCK, &s, &saved);
    pe_cpu_exec_begin(); /* no more sends; those in flight have landed */
    pe_sampler_thread_exiting();
    (void)pe_sigown_handon_begin(&pe_cpu_sig, 0);
    /* A signal of ours already pending on this thread must not reach the new
       image, even when the program blocks the signal (it may unblock it). */
    if (__atomic_load_n(&pe_cpu_ring.slots, __ATOMIC_RELAXED) ||
        __atomic_load_n(&pe_cpu_sent, __ATOMIC_RELAXED))
        drain_ours(&s);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return 0;
}

void
pe_sampler_after_exec_failed(int foreign, int token)
{
    if (foreign) {
        pe_sigown_handon_end(&pe_cpu_sig, 1, token);
        return;
    }
    pe_sigown_handon_end(&pe_cpu_sig, 0, 0);
    pe_cpu_exec_end();
    /* the collector's next scan re-arms this thread */
}

void
pe_sampler_spawn_begin(void)
{
    (void)pe_sigown_handon_begin(&pe_cpu_sig, 0);
}

void
pe_sampler_spawn_end(void)
{
    pe_sigown_handon_end(&pe_cpu_sig, 0, 0);
}
