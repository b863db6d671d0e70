/*
 * cpu_session.c: CPU sessions.  The engine of a session (cpu_pick: perf
 * events, engine_perf.c, or the per-thread CPU timers, timer.c), the table of
 * live timers (tid -> kernel timer id, under the spin lock `tlock`), the
 * thread scan that reconciles it with /proc/self/task (and lists the threads
 * the wall ticks visit), the names exiting threads leave, and the CPU kind's
 * row (kind.h).  Shared state is declared in sampler_int.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "../preload/config.h"
#include "../preload/proc.h"
#include "../preload/spin.h"
#include "../preload/threads.h"
#include "../profile/profile.h"
#include "../stack/pyframes.h"
#include "engine_perf.h"
#include "kind.h"
#include "sampler.h"
#include "sampler_int.h"

#define GONE_NAMES 256

/* ---- data ----------------------------------------------------------------------- */

int64_t pe_sampler_period_ns; /* of the running CPU session (writer: open, under life) */
static uint64_t session_gen;
int pe_sampler_want_scan; /* writer: open (a CPU session began); reader: collector */
/* The CPU session's engine (writer: cpu_pick, under life): perf events
   (engine_perf.h) or the timers, why not perf, and the event sampled. */
int pe_sampler_cpu_perf, pe_sampler_cpu_event;
static char cpu_why[256];
char pe_sampler_cpu_refusal_text[256]; /* why the last CPU window did not open (under life) */

/* Names of threads that exited during a CPU session (spin lock; thread exit
   writes, the drain reads when /proc no longer has the thread). */
pe_spin_t pe_sampler_gone_lock;
static struct {
    pid_t tid;
    char name[16];
} gone_names[GONE_NAMES];
static unsigned gone_next;

/* Timers we armed (tid -> kernel timer id); tid 0 is a free entry. */
pe_spin_t pe_sampler_tlock;
struct pe_cpu_timer_s pe_sampler_timers[TIMERS_MAX];
int pe_sampler_ntimers_hi; /* entries [0, ntimers_hi) may be in use */
/* The current scan's mark (under tlock).  A thread's start hook arms with it:
   if that scan listed the tasks before the thread began, its sweep must not
   take the new timer for a gone thread's. */
static unsigned scan_mark;

/* ---- timers and the thread scan ------------------------------------------------- */

static int
timer_find(pid_t tid)
{
    for (int i = 0; i < pe_sampler_ntimers_hi; i++)
        if (pe_sampler_timers[i].tid == tid)
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
        pe_sampler_timers[i].mark = mark;
        return i;
    }
    if (!cookie || pe_cpu_timer_create(tid, pe_sampler_period_ns, cookie, &id) < 0)
        return -1;
    for (i = 0; i < TIMERS_MAX; i++) {
        if (pe_sampler_timers[i].tid == 0) {
            pe_sampler_timers[i].tid = tid;
            pe_sampler_timers[i].timerid = id;
            pe_sampler_timers[i].mark = mark;
            if (i >= pe_sampler_ntimers_hi)
                pe_sampler_ntimers_hi = i + 1;
            return i;
        }
    }
    pe_cpu_timer_delete(id); /* table full: that thread goes unsampled */
    return -1;
}

static void
timer_disarm_at(int i)
{
    pe_cpu_timer_delete(pe_sampler_timers[i].timerid);
    pe_sampler_timers[i].tid = 0;
}

void
pe_sampler_timers_disarm_all(void)
{
    pe_spin_lock(&pe_sampler_tlock);
    for (int i = 0; i < pe_sampler_ntimers_hi; i++)
        if (pe_sampler_timers[i].tid)
            timer_disarm_at(i);
    pe_sampler_ntimers_hi = 0;
    pe_spin_unlock(&pe_sampler_tlock);
}

/*
 * Reconcile with /proc/self/task: arm every application thread that has no
 * timer, disarm timers whose thread is gone.  Collector only.
 */
void
pe_sampler_scan_threads(void)
{
    pid_t tids[1024];
    int n = 0, total = 0, events = __atomic_load_n(&pe_sampler_thread_events, __ATOMIC_ACQUIRE);
    unsigned mark;
    pe_proc_tasks_t it;
    pid_t tid;

    /* A hook that armed before this is on a thread that exists now: the
       listing below finds it.  One that arms after takes this mark. */
    pe_spin_lock(&pe_sampler_tlock);
    mark = ++scan_mark;
    pe_spin_unlock(&pe_sampler_tlock);
    if (pe_proc_tasks_open(&it) < 0)
        return;
    pe_sampler_nwall_tids = 0;
    for (;;) {
        while (n < (int)PE_ARRAY_SIZE(tids) && (tid = pe_proc_tasks_next(&it)) > 0) {
            total++;
            if (!pe_threads_is_internal(tid)) {
                tids[n++] = tid;
                if (pe_sampler_nwall_tids == pe_sampler_wall_tids_cap) {
                    int cap = pe_sampler_wall_tids_cap ? 2 * pe_sampler_wall_tids_cap : 1024;
                    pid_t *v = realloc(pe_sampler_wall_tids, (size_t)cap * sizeof(*v));
                    if (v) {
                        pe_sampler_wall_tids = v;
                        pe_sampler_wall_tids_cap = cap;
                    }
                }
                if (pe_sampler_nwall_tids < pe_sampler_wall_tids_cap)
                    pe_sampler_wall_tids[pe_sampler_nwall_tids++] = tid;
            }
        }
        if (!__atomic_load_n(&pe_cpu_cookie, __ATOMIC_ACQUIRE)) {
            if (n < (int)PE_ARRAY_SIZE(tids))
                break;
            n = 0;
            continue; /* wall only: no timers to arm */
        }
        pe_spin_lock(&pe_sampler_tlock);
        for (int i = 0; i < n; i++)
            timer_arm(tids[i], mark, 0);
        pe_spin_unlock(&pe_sampler_tlock);
        if (n < (int)PE_ARRAY_SIZE(tids))
            break;
        n = 0;
    }
    pe_proc_tasks_close(&it);
    pe_sampler_scan_total = total;
    pe_sampler_scan_events = events;
    pe_spin_lock(&pe_sampler_tlock);
    for (int i = 0; i < pe_sampler_ntimers_hi; i++)
        if (pe_sampler_timers[i].tid && pe_sampler_timers[i].mark != mark)
            timer_disarm_at(i);
    pe_spin_unlock(&pe_sampler_tlock);
}

/* The name an exited thread left, or NULL. */
const char *
pe_sampler_gone_name(pid_t tid, char *buf, size_t len)
{
    const char *r = NULL;

    pe_spin_lock(&pe_sampler_gone_lock);
    for (unsigned i = 0; i < GONE_NAMES; i++) {
        if (gone_names[i].tid == tid) {
            snprintf(buf, len, "%s", gone_names[i].name);
            r = buf;
        }
    }
    pe_spin_unlock(&pe_sampler_gone_lock);
    return r;
}

/*
 * The CPU session's engine, before cpu_start (under life): perf events where
 * they work (and are not refused by PROFEP_CPU_ENGINE=timer), else the
 * timers; cpu_why says why not perf.  A hardware event needs perf: -ENOENT
 * (no such counter here) or another -errno, with cpu_why saying why; so does
 * PROFEP_CPU_ENGINE=perf.
 */
int
pe_sampler_cpu_pick(int64_t period, int ev, int eng)
{
    const char *why = NULL;
    int rc = 0;

    pe_sampler_cpu_perf = 0;
    pe_sampler_cpu_event = ev;
    if (pe_perf_on() && !pe_perf_for_cpu())
        pe_perf_stop(); /* a wall session's alone: ours now, at our period (wall.c) */
    if (eng < 0)
        eng = pe_cfg.cpu_engine;
    if (ev == PE_PERF_EV_CLOCK && eng == PE_CPU_ENGINE_TIMER)
        why = pe_cfg.cpu_engine == PE_CPU_ENGINE_TIMER ? "PROFEP_CPU_ENGINE=timer"
                                                       : "engine=timer was asked for";
    else if (ev == PE_PERF_EV_CLOCK && eng == PE_CPU_ENGINE_AUTO && pe_py_active())
        why = "a CPython program: its frames are read in the interrupted thread, which only "
              "the signal can do";
    else if ((rc = pe_perf_start(period, ev, &why)) == 0)
        pe_sampler_cpu_perf = 1;
    snprintf(cpu_why, sizeof(cpu_why), "%s", why ? why : "");
    if (!pe_sampler_cpu_perf)
        pe_sampler_wall_perf_resume(); /* the timers for CPU: the wall session's own again */
    if (rc < 0 && (ev != PE_PERF_EV_CLOCK || eng == PE_CPU_ENGINE_PERF)) {
        snprintf(pe_sampler_cpu_refusal_text, sizeof(pe_sampler_cpu_refusal_text), "%s", cpu_why);
        return rc == -ENOENT ? -ENOENT : -ENOTSUP;
    }
    return 0;
}

const char *
pe_sampler_cpu_why(void)
{
    return cpu_why;
}

const char *
pe_sampler_cpu_refusal(void)
{
    return pe_sampler_cpu_refusal_text;
}

/* The CPU window's engine comment (which, and why not perf) and the perf
   engine's counts since the window opened (life and wlock held). */
void
pe_sampler_engine_note(const pe_sampler_win_t *w, char *engine, size_t elen, char *perf,
                       size_t plen)
{
    pe_perf_stats_t st;

    if (!pe_sampler_cpu_perf) {
        snprintf(engine, elen, "engine: timer (per-thread CPU timers and SIGPROF)%s%s",
                 cpu_why[0] ? "; perf events not used: " : "", cpu_why);
        return;
    }
    pe_perf_stats(&st);
    if (st.lost != w->perf0.lost || st.deep != w->perf0.deep || st.unseen != w->perf0.unseen ||
        st.taken != w->perf0.taken)
        snprintf(perf, plen,
                 "perf: %llu samples lost by the kernel (ring full), %llu stacks deeper than the "
                 "copy cut at its end, %llu threads not sampled (descriptor share used up), "
                 "%llu of our descriptors taken by the program's dup2/dup3 (what they sampled "
                 "is not sampled since)",
                 (unsigned long long)(st.lost - w->perf0.lost),
                 (unsigned long long)(st.deep - w->perf0.deep),
                 (unsigned long long)(st.unseen - w->perf0.unseen),
                 (unsigned long long)(st.taken - w->perf0.taken));
    snprintf(engine, elen,
             "engine: perf (perf events, event=%s, no signal; stacks unwound from an %d KiB copy "
             "on the collector thread; at most %d descriptors and %d rings of %llu KiB)",
             pe_perf_event_name(pe_sampler_cpu_event), 8, st.fds_peak, st.rings_peak,
             (unsigned long long)st.ring_kib);
}

/* ---- the kind ---------------------------------------------------------------------- */

/* CPU: a new cookie; the collector's next scan arms a timer on every thread. */
static void
cpu_start(int64_t period, int capture)
{
    (void)capture;
    pe_sampler_period_ns = period;
    session_gen++;
    if (pe_sampler_cpu_perf)
        return; /* perf events (cpu_pick): no timers, no signal */
    __atomic_store_n(&pe_cpu_cookie, PE_COOKIE(session_gen), __ATOMIC_RELEASE);
    __atomic_store_n(&pe_sampler_want_scan, 1, __ATOMIC_RELEASE);
}

/* CPU's last window while wall windows stay: the timers go. */
static void
cpu_stop(void)
{
    __atomic_store_n(&pe_cpu_cookie, 0, __ATOMIC_RELEASE);
    pe_sampler_timers_disarm_all();
    if (pe_perf_for_cpu()) {
        pe_sampler_drain_locked(); /* its last samples, then no events */
        pe_perf_stop();
    }
    pe_sampler_wall_perf_resume(); /* the wall windows that stay: their own engine */
}

/* A new thread gets its timer from its first instruction on: no scan needed to find it. */
static void
cpu_thread_start(pid_t tid)
{
    if (!__atomic_load_n(&pe_cpu_cookie, __ATOMIC_ACQUIRE))
        return;
    pe_spin_lock(&pe_sampler_tlock);
    timer_arm(tid, scan_mark, 1);
    pe_spin_unlock(&pe_sampler_tlock);
}

static void
cpu_thread_exit(pid_t tid)
{
    int i;

    if (__atomic_load_n(&pe_cpu_cookie, __ATOMIC_ACQUIRE) || pe_perf_on()) {
        /* its samples may be drained after /proc forgets it: leave the name */
        char buf[16] = "";
        if (prctl(PR_GET_NAME, buf, 0, 0, 0) == 0) {
            pe_spin_lock(&pe_sampler_gone_lock);
            unsigned k = gone_next++ % GONE_NAMES;
            gone_names[k].tid = tid;
            memcpy(gone_names[k].name, buf, sizeof(buf));
            gone_names[k].name[sizeof(buf) - 1] = 0;
            pe_spin_unlock(&pe_sampler_gone_lock);
        }
    }
    if (!__atomic_load_n(&pe_sampler_ntimers_hi, __ATOMIC_RELAXED))
        return;
    pe_spin_lock(&pe_sampler_tlock);
    if ((i = timer_find(tid)) >= 0)
        timer_disarm_at(i);
    pe_spin_unlock(&pe_sampler_tlock);
}

static void
cpu_comment(pe_prof_t *p, const pe_kind_close_t *c)
{
    pe_prof_comment(p, "cpu: %llu samples, weight %llu with timer overruns, period %lld ns",
                    (unsigned long long)c->samples, (unsigned long long)c->weight,
                    (long long)c->period);
}

const pe_kind_t pe_kind_cpu = {
    .name = "cpu",
    .title = "CPU",
    .stem = "profile",
    .min_period = 10000,
    .types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
    .period_type = {"cpu", "nanoseconds"},
    .flags = PE_KIND_F_ONCPU,
    .unavailable = pe_seccomp_reason,
    .period = &pe_sampler_period_ns,
    .start = cpu_start,
    .stop = cpu_stop,
    .thread_start = cpu_thread_start,
    .thread_exit = cpu_thread_exit,
    .comment = cpu_comment,
};
