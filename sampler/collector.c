/*
 * collector.c: the collector thread.  While any window is open it drains the
 * handler's ring (and the perf engine's rings) into every open window of the
 * sample's kind, naming threads as it goes; it runs the thread scan
 * (cpu_session.c) and the wall-clock ticks (wall.c) when they are due.
 * Shared state is declared in sampler_int.h.
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
 * leaves its name (gone_names, cpu_session.c), since its samples may be
 * drained after its /proc entry is gone.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "../preload/clock.h"
#include "../preload/proc.h"
#include "../preload/threads.h"
#include "../profile/profile.h"
#include "../stack/pyframes.h"
#include "account.h"
#include "engine_perf.h"
#include "kind.h"
#include "sampler_int.h"

#define DRAIN_NS (20 * 1000000L)         /* wall sessions, CPython programs */
#define SCAN_EVERY 5                     /* wall: drains per /proc rescan, ~100 ms */
#define TICK_NS (1000 * 1000000L)        /* CPU only: drain and thread-count check */
#define FULL_SCAN_NS (10 * 1000000000LL) /* CPU only: rescan whatever the count says */
#define NAMES_MAX 4096
#define NAME_REFRESH_NS 1000000000LL

/* ---- data ----------------------------------------------------------------------- */

pthread_t pe_sampler_collector;
int pe_sampler_collector_stop; /* writer: close; reader: collector */
/* The thread count and thread_events (sampler.c) at the last scan (collector,
   and the scan in cpu_session.c). */
int pe_sampler_scan_total, pe_sampler_scan_events;

/* Thread names, direct-mapped by tid (collector/closer only, under wlock). */
static struct {
    pid_t tid;
    int64_t when;
    char name[32];
} names[NAMES_MAX];

/* ---- the thread count and names ---------------------------------------------------- */

/*
 * Has the set of threads changed in a way the hooks did not tell us?  The
 * kernel gives /proc/self/task a link count of 2 + its threads: one stat,
 * no directory read.  A thread that starts or exits during the scan only
 * makes the next check scan again.  Collector only.
 */
static int
threads_unseen(void)
{
    int n = pe_proc_self_task_count();
    int expect = pe_sampler_scan_total +
                 __atomic_load_n(&pe_sampler_thread_events, __ATOMIC_ACQUIRE) -
                 pe_sampler_scan_events;

    return n < 0 || n != expect;
}

static const char *
thread_name(pid_t tid)
{
    unsigned h = (unsigned)tid % NAMES_MAX;
    int64_t t = pe_clock_ns(CLOCK_MONOTONIC);

    if (names[h].tid != tid || t - names[h].when > NAME_REFRESH_NS) {
        char buf[32];
        if (pe_threads_name(tid, buf, sizeof(buf)) == 0 ||
            pe_sampler_gone_name(tid, buf, sizeof(buf))) {
            snprintf(names[h].name, sizeof(names[h].name), "%s", buf);
        } else if (names[h].tid != tid) {
            snprintf(names[h].name, sizeof(names[h].name), "%d", (int)tid);
        }
        names[h].tid = tid;
        names[h].when = t;
    }
    return names[h].name;
}

/* ---- the drain ---------------------------------------------------------------------- */

/* The kind whose ring flag a sample carries (the one without a flag otherwise). */
static const pe_kind_t *
kind_of(uint32_t flags)
{
    const pe_kind_t *none = pe_sampler_skinds[0];

    for (int i = 0; i < NKINDS; i++) {
        if (pe_sampler_skinds[i]->ring_flag & flags)
            return pe_sampler_skinds[i];
        if (!pe_sampler_skinds[i]->ring_flag)
            none = pe_sampler_skinds[i];
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
        labels[1].str = pe_sampler_windows ? thread_name(s->tid) : "";
        if (k->labels)
            nl += k->labels(s->flags, &labels[2]);
        for (pe_sampler_win_t *w = pe_sampler_windows; w; w = w->next) {
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
void
pe_sampler_drain_all(void)
{
    if (pe_perf_on())
        pe_perf_drain(&pe_cpu_ring);
    drain();
}

void
pe_sampler_drain_locked(void)
{
    pthread_mutex_lock(&pe_sampler_wlock);
    pe_sampler_drain_all();
    pthread_mutex_unlock(&pe_sampler_wlock);
}

/* Perf engine: events for threads no event covers (a raw clone, a thread
   made while the session started); the count check's figures as a scan's. */
static void
perf_scan(void)
{
    int events = __atomic_load_n(&pe_sampler_thread_events, __ATOMIC_ACQUIRE);
    int total = pe_perf_scan(pe_sampler_drain_locked);

    if (total >= 0) {
        pe_sampler_scan_total = total;
        pe_sampler_scan_events = events;
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
void
pe_sampler_wake_collector(void)
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

void *
pe_sampler_collector_main(void *unused)
{
    sigset_t all;
    int64_t next_drain, next_wall, next_check, next_full, now;
    uint32_t wgen, last_wgen;
    int i = 0;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pe_threads_mark_internal();
    prctl(PR_SET_NAME, "pe-cpu-collect", 0, 0, 0);
    pe_sampler_scan_threads();
    now = pe_clock_ns(CLOCK_MONOTONIC);
    next_wall = now;
    next_check = now + TICK_NS;
    next_full = now + FULL_SCAN_NS;
    last_wgen = __atomic_load_n(&pe_wall_gen, __ATOMIC_ACQUIRE);
    next_drain = now + DRAIN_NS;
    while (!__atomic_load_n(&pe_sampler_collector_stop, __ATOMIC_ACQUIRE)) {
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
        wp = __atomic_load_n(&pe_sampler_wall_period_ns, __ATOMIC_ACQUIRE);
        if (wgen != last_wgen) { /* a new session: its first tick is now, not overdue */
            last_wgen = wgen;
            next_wall = now;
        }
        if (wgen && wp > 0 && now >= next_wall) {
            /* Late (a starved collector): one tick standing for every period
               that passed, never a burst of signals. */
            int64_t periods = 1 + (now - next_wall) / wp;

            pe_sampler_wall_tick(wgen, periods);
            next_wall += periods * wp;
        } else if (!wgen) {
            next_wall = now;
        }
        if (__atomic_exchange_n(&pe_sampler_want_scan, 0, __ATOMIC_ACQ_REL)) {
            pe_sampler_scan_threads();
            next_full = now + FULL_SCAN_NS;
        }
        if (wgen) {
            /* wall: its thread list from a scan every ~100 ms, as ticks need it */
            if (now < next_drain && !posted)
                continue;
            next_drain += DRAIN_NS;
            if (next_drain <= now)
                next_drain = now + DRAIN_NS;
            pthread_mutex_lock(&pe_sampler_wlock);
            pe_sampler_drain_all();
            pthread_mutex_unlock(&pe_sampler_wlock);
            if (++i % SCAN_EVERY == 0) {
                if (pe_perf_on() && threads_unseen())
                    perf_scan();
                pe_sampler_scan_threads();
            }
            continue;
        }
        if (posted || now >= next_check || (fast && now >= next_drain)) {
            next_drain = now + DRAIN_NS;
            pthread_mutex_lock(&pe_sampler_wlock);
            pe_sampler_drain_all();
            pthread_mutex_unlock(&pe_sampler_wlock);
        }
        if (now >= next_check) {
            next_check = now + TICK_NS;
            if (now >= next_full || threads_unseen()) {
                if (pe_perf_on())
                    perf_scan(); /* (no timers to arm: the cookie is 0) */
                else
                    pe_sampler_scan_threads();
                next_full = now + FULL_SCAN_NS;
            }
        }
    }
    /* stop: no new samples from this session, then no timers, no events */
    __atomic_store_n(&pe_cpu_cookie, 0, __ATOMIC_RELEASE);
    pe_sampler_timers_disarm_all();
    if (pe_perf_on()) {
        pe_sampler_drain_locked();
        pe_perf_stop();
    }
    return NULL;
}
