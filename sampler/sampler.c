/*
 * sampler.c: CPU and wall-clock profiling sessions, the shared part.  Owns
 * the windows (one per request, of either kind, pe_sampler_win_t in
 * sampler_int.h), opens and closes them (the first window takes the signal
 * and starts the collector, the last gives them back), the thread hooks and
 * the fork/exec hooks.  The kinds are in files of their own: cpu_session.c
 * (CPU sessions: the engine choice, the timer table, the thread scan),
 * wall.c (wall-clock ticks, the /proc capture without a signal); the
 * collector thread that drains the ring into the windows is collector.c.
 * OS calls are in timer.c and the handler in handler.c; profiles are built
 * with the profile/ model.
 *
 * Locks: `life` (pthread mutex, HTTP threads only) serializes open/close;
 * `wlock` (mutex) guards the window list and is the ring's single-consumer
 * lock; `tlock` (spin, cpu_session.c) guards the timer table.  Order:
 * life > wlock, tlock is a leaf.  None is ever taken in a signal handler.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/aslimit.h"
#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/guard.h"
#include "../preload/real.h"
#include "../preload/spin.h"
#include "../preload/threads.h"
#include "../profile/profile.h"
#include "../stack/pyframes.h"
#include "../trace/feed.h"
#include "account.h"
#include "engine_perf.h"
#include "kind.h"
#include "sampler.h"
#include "sampler_int.h"

#define RING_SLOTS 2048

/* ---- data ----------------------------------------------------------------------- */

/*
 * The sampled kinds (kind.h): what differs between CPU time and wall-clock
 * time; the windows, the ring, the collector and the signal are shared.
 * Called under `life`, but thread_start/thread_exit (the thread's own hooks,
 * no lock).  Their rows are in cpu_session.c and wall.c; a new sampled kind is
 * a row here and a PE_RING_F_ bit its samples carry (NKINDS: sampler_int.h).
 */
const pe_kind_t *const pe_sampler_skinds[] = {&pe_kind_cpu, &pe_kind_wall};
_Static_assert(WHY_N == PE_ARRAY_SIZE(((pe_kind_close_t *)0)->why), "close's reasons");

static pthread_mutex_t life = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t pe_sampler_wlock = PTHREAD_MUTEX_INITIALIZER;
pe_sampler_win_t *pe_sampler_windows; /* under wlock */
static int nwin;                      /* under life: windows of both kinds */
static int nkind[NKINDS];             /* under life: windows per kind */
static int aside; /* pe_sampler_step_aside ran: nothing opens again (under life) */
/* The running session holds the signal (under life).  0 while a program that
   handles SIGPROF itself keeps it: the perf engine serves such a session, and
   the program's handler and its own timers are never touched. */
static int sig_held;

/* Application threads started minus exited as the hooks heard them (any
   thread, atomic); the collector compares it at each scan (collector.c). */
int pe_sampler_thread_events;

/* ---- helpers -------------------------------------------------------------------- */

/* RING_SLOTS, or under an address-space limit as many as fit in a 1024th of
   it (at least 256): the program's memory is the program's.  A smaller ring
   is drained sooner (the handler posts the collector when it is half full). */
static uint32_t
ring_slots(void)
{
    return pe_aslimit_fit(RING_SLOTS, sizeof(pe_ring_slot_t), 1024, 256);
}

/* ---- module API ------------------------------------------------------------------ */

const char *
pe_sampler_unavailable(void)
{
    const char *why = pe_seccomp_reason();

    if (why)
        return why;
    return pe_cpu_sig_program_owns() ? "SIGPROF is handled by the program" : NULL;
}

const char *
pe_sampler_kinds_unavailable(void)
{
    const char *why = pe_seccomp_reason();

    if (why || !pe_cpu_sig_program_owns())
        return why;
    /* the program's SIGPROF: perf events serve CPU and wall profiles without it */
    if (pe_cfg.cpu_engine != PE_CPU_ENGINE_TIMER && !pe_py_active() && pe_perf_probe(&why) == 0)
        return NULL;
    return "SIGPROF is handled by the program, and perf events (no signal) are not used here";
}

int
pe_sampler_init(void)
{
    if (!pe_real_ready)
        pe_real_init();
    pe_seccomp_init();
    return 0;
}

/* The index of a sampled kind in skinds, or -1. */
static int
kind_index(const pe_kind_t *k)
{
    for (int i = 0; i < NKINDS; i++)
        if (pe_sampler_skinds[i] == k)
            return i;
    return -1;
}

static int open_kind_ev(const pe_kind_t *k, double delay, int64_t max_frames, int capture, int ev,
                        int eng, pe_sampler_win_t **out, double *running_delay);

int
pe_sampler_open_kind(const pe_kind_t *k, double delay, int64_t max_frames, int capture,
                     pe_sampler_win_t **out, double *running_delay)
{
    /* capture is the kind's to take (kind.h): another kind starts as the default */
    if (!(k->flags & PE_KIND_F_CAPTURE))
        capture = PE_SAMPLER_CAPTURE_AUTO;
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

/* A window of kind k (index ki) and its empty profile; NULL without memory. */
static pe_sampler_win_t *
win_new(const pe_kind_t *k, int ki, int64_t period, int64_t max_frames)
{
    pe_sampler_win_t *w = calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    w->kind = k;
    w->ki = ki;
    w->nmax = max_frames;
    w->prof = pe_prof_new(k->types, 2, &k->period_type, period);
    if (!w->prof) {
        free(w);
        return NULL;
    }
    return w;
}

/* What a running session rules out for a new window of kind k (under life):
   0, -EACCES (stepped aside), -EBUSY (another period), -EXDEV (another
   event or engine; pe_sampler_cpu_refusal_text says which). */
static int
open_conflict(const pe_kind_t *k, int kind, int64_t want, int ev, int eng, double *running_delay)
{
    if (aside)
        return -EACCES;
    if (nkind[kind] > 0 && want != *k->period) {
        if (running_delay)
            *running_delay = (double)*k->period / 1e9;
        return -EBUSY;
    }
    if (k != &pe_kind_cpu || nkind[kind] == 0)
        return 0;
    if (ev != pe_sampler_cpu_event) {
        snprintf(pe_sampler_cpu_refusal_text, sizeof(pe_sampler_cpu_refusal_text),
                 "a CPU profile of event=%s is running", pe_perf_event_name(pe_sampler_cpu_event));
        return -EXDEV;
    }
    if ((eng == PE_CPU_ENGINE_PERF && !pe_sampler_cpu_perf) ||
        (eng == PE_CPU_ENGINE_TIMER && pe_sampler_cpu_perf)) {
        snprintf(pe_sampler_cpu_refusal_text, sizeof(pe_sampler_cpu_refusal_text),
                 "a CPU profile by the %s engine is running",
                 pe_sampler_cpu_perf ? "perf" : "timer");
        return -EXDEV;
    }
    return 0;
}

/*
 * The signal, for a kind that needs it (the timer engine, wall signals), taken
 * when the session does not hold it yet (under life): 0, or -EPERM with the
 * refusal text naming the program's handler and why perf events do not serve.
 */
static int
need_sig(const char *why_not_perf)
{
    char h[128];
    int rc;

    if (sig_held)
        return 0;
    if ((rc = pe_cpu_sig_acquire()) == 0) {
        sig_held = 1;
        return 0;
    }
    if (rc == -EPERM)
        snprintf(pe_sampler_cpu_refusal_text, sizeof(pe_sampler_cpu_refusal_text),
                 "SIGPROF is handled by the program (its handler %s); perf events, which need no "
                 "signal, not used: %s",
                 pe_cpu_sig_program_handler(h, sizeof(h)),
                 why_not_perf && *why_not_perf ? why_not_perf : "not asked for");
    return rc;
}

/* The last window has gone (or the first failed): the session's hold on the
   signal and the ring ends (under life). */
static void
session_end(int quiesce)
{
    if (quiesce && sig_held)
        pe_cpu_sig_quiesce(100); /* a tick or timer signal still on its way */
    __atomic_sub_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
    if (sig_held)
        pe_cpu_sig_release();
    sig_held = 0;
}

/*
 * The first window of any kind (under life): the signal where the program
 * leaves it to us, and the ring.  A program that handles SIGPROF itself keeps
 * it: the session then runs without (sig_held 0), and the kind's start
 * decides (kind_begin: the perf engine serves, or need_sig refuses).
 */
static int
session_begin(void)
{
    int rc = pe_cpu_sig_acquire();

    if (rc < 0 && rc != -EPERM)
        return rc;
    sig_held = rc == 0;
    rc = 0;
    if (!pe_cpu_ring.slots) {
        /* before the ring: the handler posts it once slots exist */
        sem_init(&pe_cpu_wake, 0, 0);
        rc = pe_ring_init(&pe_cpu_ring, ring_slots());
    }
    if (rc < 0) {
        if (sig_held)
            pe_cpu_sig_release();
        sig_held = 0;
        return rc;
    }
    pthread_mutex_lock(&pe_sampler_wlock);
    while (pe_ring_peek(&pe_cpu_ring)) /* a stale session's leftovers */
        pe_ring_release(&pe_cpu_ring, pe_ring_peek(&pe_cpu_ring));
    pthread_mutex_unlock(&pe_sampler_wlock);
    __atomic_add_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
    return 0;
}

/*
 * The first window of kind k (under life): CPU picks its engine (the timers
 * need the signal: asked for before the pick, which would stop a wall
 * session's perf events for nothing); wall starts, and needs the signal when
 * perf events do not serve its running threads.  0 or -errno.
 */
static int
kind_begin(const pe_kind_t *k, int64_t want, int capture, int ev, int eng)
{
    int rc, e = eng < 0 ? pe_cfg.cpu_engine : eng;

    if (k == &pe_kind_cpu) {
        if (ev == PE_PERF_EV_CLOCK && e == PE_CPU_ENGINE_TIMER &&
            (rc = need_sig(pe_cfg.cpu_engine == PE_CPU_ENGINE_TIMER && eng < 0
                               ? "PROFEP_CPU_ENGINE=timer"
                               : "engine=timer was asked for")) < 0)
            return rc;
        if ((rc = pe_sampler_cpu_pick(want, ev, eng)) < 0)
            return rc;
        if (!pe_sampler_cpu_perf && (rc = need_sig(pe_sampler_cpu_why())) < 0)
            return rc;
    }
    k->start(want, capture);
    if (k == &pe_kind_wall && (capture == PE_SAMPLER_CAPTURE_SIGNAL || !pe_sampler_wall_nosig()) &&
        (rc = need_sig(pe_sampler_wall_why_not_perf())) < 0) {
        k->stop();
        return rc;
    }
    return 0;
}

/* The first window's collector thread, every signal blocked in it.  0 or -errno. */
static int
collector_begin(void)
{
    sigset_t all, saved;
    int rc;

    __atomic_store_n(&pe_sampler_collector_stop, 0, __ATOMIC_RELEASE);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    rc = -pthread_create(&pe_sampler_collector, NULL, pe_sampler_collector_main, NULL);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc < 0) {
        __atomic_store_n(&pe_cpu_cookie, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
    }
    return rc;
}

/* The counters a window subtracts at its close, as they are at its open; and
   into the list (under life). */
static void
win_link(pe_sampler_win_t *w)
{
    w->t0_real = pe_clock_ns(CLOCK_REALTIME);
    w->t0_mono = pe_clock_ns(CLOCK_MONOTONIC);
    w->ticks0 = __atomic_load_n(&pe_sampler_wall_ticks, __ATOMIC_RELAXED);
    w->quiet0 = __atomic_load_n(&pe_sampler_wall_quiet, __ATOMIC_RELAXED);
    w->unsig0 = __atomic_load_n(&pe_sampler_wall_unsignalled, __ATOMIC_RELAXED);
    w->wperf0 = __atomic_load_n(&pe_sampler_wall_perf, __ATOMIC_RELAXED);
    for (int i = 0; i < WHY_N; i++)
        w->why0[i] = __atomic_load_n(&pe_sampler_wall_why[i], __ATOMIC_RELAXED);
    pthread_mutex_lock(&pe_sampler_wlock);
    pe_sampler_drain_all(); /* what came before this window belongs to the others */
    w->ring_dropped0 = __atomic_load_n(&pe_cpu_ring.dropped, __ATOMIC_RELAXED);
    pe_perf_stats(&w->perf0);
    w->next = pe_sampler_windows;
    pe_sampler_windows = w;
    pthread_mutex_unlock(&pe_sampler_wlock);
    nwin++;
    nkind[w->ki]++;
}

/*
 * Open a window of `kind`.  The first window of any kind begins the session
 * (the signal if the program leaves it, the ring, then the collector); the
 * first of a kind starts that kind (CPU: its engine, a new cookie, timers on
 * the next scan; wall: a new generation, ticks at once).
 */
static int
open_kind_ev(const pe_kind_t *k, double delay, int64_t max_frames, int capture, int ev, int eng,
             pe_sampler_win_t **out, double *running_delay)
{
    int kind = kind_index(k);
    int64_t want = (int64_t)(delay * 1e9 + 0.5);
    pe_sampler_win_t *w;
    int rc, started = 0;

    *out = NULL;
    if (kind < 0)
        return -EINVAL;
    if (k->unavailable && k->unavailable()) /* also while a session runs: a filter may be new */
        return -EACCES;
    if (want < 1000 || max_frames < 1)
        return -EINVAL;
    pe_py_init(); /* before the first signal: CPython's frames, if any */
    if (!(w = win_new(k, kind, want, max_frames)))
        return -ENOMEM;
    pthread_mutex_lock(&life);
    if ((rc = open_conflict(k, kind, want, ev, eng, running_delay)) < 0)
        goto err_unlock;
    if (nwin == 0) {
        if ((rc = session_begin()) < 0)
            goto err_unlock;
        started = 1;
    }
    if (nkind[kind] == 0) {
        if ((rc = kind_begin(k, want, capture, ev, eng)) < 0)
            goto err_session;
        if (!started)
            pe_sampler_wake_collector(); /* a running collector: scan, or tick, now */
    }
    if (started && (rc = collector_begin()) < 0)
        goto err_session;
    win_link(w);
    pthread_mutex_unlock(&life);
    *out = w;
    return 0;

err_session:
    if (started)
        session_end(0);
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

/* Take w out of the window list (wlock held). */
static void
win_unlink(pe_sampler_win_t *w)
{
    for (pe_sampler_win_t **pp = &pe_sampler_windows; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            return;
        }
    }
}

/* What a closing window says beyond its samples, gathered under life and
   wlock, written into its profile after. */
typedef struct close_note_s {
    pe_kind_close_t c;
    uint64_t ring_dropped;
    char engine[512], perf[512];
    int perf_cpu; /* its samples came from perf events: no thread left out for the signal */
    int sig_prog; /* the program handles SIGPROF: the session never held it */
} close_note_t;

/* The wall window's perf line (wlock held). */
static void
wall_perf_note(const pe_sampler_win_t *w, char *perf, size_t len)
{
    uint64_t n = __atomic_load_n(&pe_sampler_wall_perf, __ATOMIC_RELAXED) - w->wperf0;

    if (n)
        snprintf(perf, len,
                 "capture: %llu samples of running threads from the perf engine's last samples "
                 "of them (perf events; no signal)",
                 (unsigned long long)n);
}

/* The window's counts since its open (under life). */
static void
close_gather(pe_sampler_win_t *w, close_note_t *cn)
{
    pe_kind_close_t *c = &cn->c;

    c->ticks = __atomic_load_n(&pe_sampler_wall_ticks, __ATOMIC_RELAXED) - w->ticks0;
    c->quiet = __atomic_load_n(&pe_sampler_wall_quiet, __ATOMIC_RELAXED) - w->quiet0;
    c->unsignalled = __atomic_load_n(&pe_sampler_wall_unsignalled, __ATOMIC_RELAXED) - w->unsig0;
    for (int i = 0; i < WHY_N; i++) {
        c->why[i] = __atomic_load_n(&pe_sampler_wall_why[i], __ATOMIC_RELAXED) - w->why0[i];
        c->sigs += c->why[i];
    }
    pthread_mutex_lock(&pe_sampler_wlock);
    pe_sampler_drain_all();
    cn->ring_dropped = __atomic_load_n(&pe_cpu_ring.dropped, __ATOMIC_RELAXED) - w->ring_dropped0;
    cn->sig_prog = !sig_held;
    cn->perf_cpu = (w->kind == &pe_kind_cpu && pe_sampler_cpu_perf) ||
                   (w->kind == &pe_kind_wall && pe_sampler_wall_nosig());
    if (w->kind == &pe_kind_cpu)
        pe_sampler_engine_note(w, cn->engine, sizeof(cn->engine), cn->perf, sizeof(cn->perf));
    else
        wall_perf_note(w, cn->perf, sizeof(cn->perf));
    win_unlink(w);
    pthread_mutex_unlock(&pe_sampler_wlock);
}

/* The profile's time and comments, from the window and what close gathered. */
static void
close_comments(pe_sampler_win_t *w, close_note_t *cn)
{
    pe_prof_t *p = w->prof;

    pe_prof_set_time(p, w->t0_real, pe_clock_ns(CLOCK_MONOTONIC) - w->t0_mono);
    cn->c.samples = w->samples;
    cn->c.weight = w->weight;
    w->kind->comment(p, &cn->c);
    if (cn->engine[0])
        pe_prof_comment(p, "%s", cn->engine);
    if (cn->perf[0])
        pe_prof_comment(p, "%s", cn->perf);
    if (cn->sig_prog) {
        char h[128];
        pe_prof_comment(p,
                        "signal: SIGPROF is handled by the program (its handler %s), so perf "
                        "events served this profile: no signal sent, its handler and timers "
                        "untouched",
                        pe_cpu_sig_program_handler(h, sizeof(h)));
    }
    if (w->over_cap)
        pe_prof_comment(p, "dropped: %llu samples beyond n=%lld frames",
                        (unsigned long long)w->over_cap, (long long)w->nmax);
    if (cn->ring_dropped)
        pe_prof_comment(p, "dropped: %llu samples (sample ring full)",
                        (unsigned long long)cn->ring_dropped);
    if (w->oom)
        pe_prof_comment(p, "dropped: %llu samples (out of memory)", (unsigned long long)w->oom);
    if (w->truncated)
        pe_sampler_trunc_comment(p, w->trunc_why);
    if (!cn->perf_cpu) /* (perf events sample threads that block SIGPROF, or have a filter) */
        pe_sampler_unsampled_comment(p, (w->kind->flags & PE_KIND_F_ONCPU) != 0); /* account.c */
    if (w->cut)
        pe_prof_comment(p,
                        "cut: %llu samples whose stack stops where neither DWARF nor the "
                        "frame pointer can go on (JIT code that keeps no frame pointer)",
                        (unsigned long long)w->cut);
    if (pe_py_note()[0])
        pe_prof_comment(p, "%s", pe_py_note());
}

pe_prof_t *
pe_sampler_close(pe_sampler_win_t *w)
{
    close_note_t cn;
    pe_prof_t *p;

    if (!w)
        return NULL;
    pthread_mutex_lock(&life);
    if (aside) { /* stopped already (pe_sampler_step_aside): only its samples so far */
        pthread_mutex_lock(&pe_sampler_wlock);
        win_unlink(w);
        pthread_mutex_unlock(&pe_sampler_wlock);
        pthread_mutex_unlock(&life);
        p = w->prof;
        free(w);
        return p;
    }
    memset(&cn, 0, sizeof(cn));
    if (nwin == 1) {
        __atomic_store_n(&pe_sampler_collector_stop, 1, __ATOMIC_RELEASE);
        pe_sampler_wake_collector();
        pthread_join(pe_sampler_collector, NULL);
        __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
    } else if (nkind[w->ki] == 1) {
        w->kind->stop(); /* windows of the other kind stay: the collector runs on */
    }
    cn.c.period = *w->kind->period;
    close_gather(w, &cn);
    nkind[w->ki]--;
    if (--nwin == 0)
        session_end(1);
    pthread_mutex_unlock(&life);

    p = w->prof;
    close_comments(w, &cn);
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
        __atomic_store_n(&pe_sampler_collector_stop, 1, __ATOMIC_RELEASE);
        pe_sampler_wake_collector();
        pthread_join(pe_sampler_collector, NULL);
        __atomic_store_n(&pe_wall_gen, 0, __ATOMIC_RELEASE);
        session_end(1);
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
    __atomic_add_fetch(&pe_sampler_thread_events, 1, __ATOMIC_RELEASE);
    PE_TRACE_EVENT(PE_TJ_EV_THREAD_START, pe_clock_ns(CLOCK_MONOTONIC), 0, 0, NULL);
    for (int k = 0; k < NKINDS; k++)
        if (pe_sampler_skinds[k]->thread_start)
            pe_sampler_skinds[k]->thread_start(pe_gettid());
}

void
pe_sampler_thread_exiting(void)
{
    if (pe_tls.internal)
        return;
    __atomic_sub_fetch(&pe_sampler_thread_events, 1, __ATOMIC_RELEASE);
    PE_TRACE_EVENT(PE_TJ_EV_THREAD_EXIT, pe_clock_ns(CLOCK_MONOTONIC), 0, 0, NULL);
    for (int k = 0; k < NKINDS; k++)
        if (pe_sampler_skinds[k]->thread_exit)
            pe_sampler_skinds[k]->thread_exit(pe_gettid());
}

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
        pthread_mutex_init(&pe_sampler_wlock, NULL);
        pe_spin_reset(&pe_sampler_tlock);
        pe_spin_reset(&pe_sampler_gone_lock);
        if (pe_cpu_ring.slots) /* the collector may have been waiting on it */
            sem_init(&pe_cpu_wake, 0, 0);
        pe_perf_atfork_child(); /* its rings are not in the child */
        pe_sampler_cpu_perf = 0;
        memset(pe_sampler_timers, 0, sizeof(pe_sampler_timers));
        pe_sampler_ntimers_hi = 0;
        pe_sampler_windows = NULL;
        nwin = 0;
        sig_held = 0;
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
