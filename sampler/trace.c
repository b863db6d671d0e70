/*
 * trace.c: the recorder of /debug/pprof/trace (trace.h).  Owned by the trace
 * work (issue 34).
 *
 * Ticks run on the requesting HTTP thread: each takes one capture of every
 * application thread (pe_stacks_capture_into, PE_STACKS_AUTO: /proc first, a
 * signal only for a running thread; into one array reused tick after tick,
 * without names, which are read when a thread is new), appends one sample
 * per thread and interns its stack.  The recording holds the signal, so a
 * capture does not wait for late answers before it lets go.  A sleeping thread's /proc/TID/syscall
 * says whether it waits in futex(2); a thread whose stack was reused unchanged (it has not run
 * since) keeps its previous state without that read.  Everything the recording keeps is counted
 * against the budget; past it the trace ends and says so.  Events (trace/feed.h) land in a fixed
 * buffer allocated before the trace opens: writers claim a slot by fetch-add and are counted in
 * flight so that the end of the trace waits for them before reading.  Allocation events carry the
 * heap's stack id, turned into one of this trace's stacks at the end (pe_trace_opts_t.heap_stack:
 * heap/ is above us).
 *
 * Signal-safe: no (the events' writers are trace/feed.c's).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/guard.h"
#include "../preload/proc.h"
#include "../preload/threads.h"
#include "../trace/feed.h"
#include "allstacks.h"
#include "sampler_int.h"
#include "trace.h"

#define TRACE_EVENTS 32768 /* event slots at most (88 bytes each), a quarter of the budget */
#define TRACE_EVENTS_MIN 1024
#define TRACE_CAPTURE_MS 100 /* bound on one tick's wait for signalled threads */
/* The recorder's CPU, at most this share of one CPU: with many threads the ticks space out
   (each capture costs ~20 us a thread) rather than the recorder taking a core. */
#define TRACE_CPU_SHARE 0.1
#define TRACE_STOP_EVERY_NS 100000000 /* how often stop() is asked */

/* ---- the recording ---------------------------------------------------------------- */

typedef struct rec_s {
    pe_tj_trace_t *t;
    int64_t cap_samples;
    int cap_threads;
    /* threads: tid -> index, open addressing (thcap a power of 2, > 2 * nthreads) */
    int32_t *thash;
    int thcap;
    uint8_t *prev_state; /* per thread: the last state sampled */
    uint8_t *seen;       /* per thread: samples so far, up to 255 */
    pe_stacks_t *cap;    /* the last capture, its array reused by the next */
    int32_t *prev_stack;
    /* stacks: frames of stack i at frames[off[i] .. off[i] + len[i]) */
    uintptr_t *frames;
    int64_t nframes, cap_frames;
    int64_t *off;
    int32_t *len;
    uint64_t *hash;
    uint8_t *exact; /* 1: frames[off] is an interrupted PC (a sample's), 0: a return address */
    int32_t nst, cap_st;
    int32_t *shash; /* stack ids + 1, open addressing over hcap (a power of 2) */
    int32_t hcap;
} rec_t;

/* Grow *p (of *cap elements of `size`) to hold `need`; counts the growth in t->used.
   0, or -ENOMEM (also when the budget would be passed). */
static int
grow(rec_t *r, void **p, int64_t *cap, int64_t need, size_t size)
{
    int64_t ncap = *cap ? *cap : 64;
    void *q;

    if (need <= *cap)
        return 0;
    while (ncap < need)
        ncap *= 2;
    if (r->t->used + (ncap - *cap) * (int64_t)size > r->t->budget)
        return -E2BIG;
    if (!(q = realloc(*p, (size_t)ncap * size)))
        return -ENOMEM;
    r->t->used += (ncap - *cap) * (int64_t)size;
    *p = q;
    *cap = ncap;
    return 0;
}

static uint64_t
hash_pcs(const uintptr_t *pcs, int n, int exact)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n ^ ((uint64_t)exact << 40);

    for (int i = 0; i < n; i++)
        h = (h ^ pcs[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int
rehash_stacks(rec_t *r, int32_t ncap)
{
    int32_t *h = calloc((size_t)ncap, sizeof(*h));

    if (!h)
        return -ENOMEM;
    if (r->t->used + (int64_t)(ncap - r->hcap) * 4 > r->t->budget) {
        free(h);
        return -E2BIG;
    }
    r->t->used += (int64_t)(ncap - r->hcap) * 4;
    for (int32_t i = 0; i < r->nst; i++) {
        uint32_t k = (uint32_t)r->hash[i] & (uint32_t)(ncap - 1);
        while (h[k])
            k = (k + 1) & (uint32_t)(ncap - 1);
        h[k] = i + 1;
    }
    free(r->shash);
    r->shash = h;
    r->hcap = ncap;
    return 0;
}

/* The id of stack pcs[0..n), interned (exact: pcs[0] is an interrupted PC).  >= 0, or
   -ENOMEM / -E2BIG. */
static int32_t
intern(rec_t *r, const uintptr_t *pcs, int n, int exact)
{
    uint64_t h = hash_pcs(pcs, n, exact);
    uint32_t k;
    int64_t c;
    int rc;

    if (r->hcap && (k = (uint32_t)h & (uint32_t)(r->hcap - 1), 1)) {
        for (; r->shash[k]; k = (k + 1) & (uint32_t)(r->hcap - 1)) {
            int32_t i = r->shash[k] - 1;
            if (r->hash[i] == h && r->len[i] == n && r->exact[i] == exact &&
                !memcmp(&r->frames[r->off[i]], pcs, (size_t)n * sizeof(*pcs)))
                return i;
        }
    }
    if ((r->nst + 1) * 2 > r->hcap && (rc = rehash_stacks(r, r->hcap ? r->hcap * 2 : 1024)))
        return rc;
    c = r->cap_st;
    if ((rc = grow(r, (void **)&r->off, &c, r->nst + 1, sizeof(*r->off))))
        return rc;
    c = r->cap_st;
    if ((rc = grow(r, (void **)&r->len, &c, r->nst + 1, sizeof(*r->len))))
        return rc;
    c = r->cap_st;
    if ((rc = grow(r, (void **)&r->hash, &c, r->nst + 1, sizeof(*r->hash))))
        return rc;
    c = r->cap_st;
    if ((rc = grow(r, (void **)&r->exact, &c, r->nst + 1, sizeof(*r->exact))))
        return rc;
    r->cap_st = (int32_t)c;
    if ((rc = grow(r, (void **)&r->frames, &r->cap_frames, r->nframes + n, sizeof(*r->frames))))
        return rc;
    memcpy(&r->frames[r->nframes], pcs, (size_t)n * sizeof(*pcs));
    r->off[r->nst] = r->nframes;
    r->len[r->nst] = n;
    r->hash[r->nst] = h;
    r->exact[r->nst] = (uint8_t)exact;
    r->nframes += n;
    for (k = (uint32_t)h & (uint32_t)(r->hcap - 1); r->shash[k];
         k = (k + 1) & (uint32_t)(r->hcap - 1))
        ;
    r->shash[k] = r->nst + 1;
    return r->nst++;
}

/* The index of thread tid, added (with its name) when new.  >= 0 or -errno. */
static int
thread_index(rec_t *r, const pe_stack_t *st, int64_t now)
{
    pe_tj_trace_t *t = r->t;
    uint32_t k;
    int64_t c;
    int rc;

    if (r->thcap) {
        for (k = (uint32_t)st->tid & (uint32_t)(r->thcap - 1); r->thash[k];
             k = (k + 1) & (uint32_t)(r->thcap - 1))
            if (t->threads[r->thash[k] - 1].tid == st->tid)
                return r->thash[k] - 1;
    }
    if ((t->nthreads + 1) * 2 > r->thcap) {
        int32_t ncap = r->thcap ? r->thcap * 2 : 256, *h;
        if (t->used + (int64_t)(ncap - r->thcap) * 4 > t->budget)
            return -E2BIG;
        if (!(h = calloc((size_t)ncap, sizeof(*h))))
            return -ENOMEM;
        t->used += (int64_t)(ncap - r->thcap) * 4;
        for (int i = 0; i < t->nthreads; i++) {
            for (k = (uint32_t)t->threads[i].tid & (uint32_t)(ncap - 1); h[k];
                 k = (k + 1) & (uint32_t)(ncap - 1))
                ;
            h[k] = i + 1;
        }
        free(r->thash);
        r->thash = h;
        r->thcap = ncap;
    }
    c = r->cap_threads;
    if ((rc = grow(r, (void **)&t->threads, &c, t->nthreads + 1, sizeof(*t->threads))))
        return rc;
    c = r->cap_threads;
    if ((rc = grow(r, (void **)&r->prev_state, &c, t->nthreads + 1, sizeof(*r->prev_state))))
        return rc;
    c = r->cap_threads;
    if ((rc = grow(r, (void **)&r->prev_stack, &c, t->nthreads + 1, sizeof(*r->prev_stack))))
        return rc;
    c = r->cap_threads;
    if ((rc = grow(r, (void **)&r->seen, &c, t->nthreads + 1, sizeof(*r->seen))))
        return rc;
    r->cap_threads = (int)c;
    memset(&t->threads[t->nthreads], 0, sizeof(t->threads[0]));
    t->threads[t->nthreads].tid = st->tid;
    /* captures leave names out (a /proc read a thread a tick): read here, once more at the
       thread's second sample (a new thread often names itself just after it starts), and
       at the end */
    pe_threads_name(st->tid, t->threads[t->nthreads].name, sizeof(t->threads[0].name));
    r->seen[t->nthreads] = 0;
    t->threads[t->nthreads].first_ns = now;
    r->prev_state[t->nthreads] = PE_TJ_UNKNOWN;
    r->prev_stack[t->nthreads] = -2;
    for (k = (uint32_t)st->tid & (uint32_t)(r->thcap - 1); r->thash[k];
         k = (k + 1) & (uint32_t)(r->thcap - 1))
        ;
    r->thash[k] = t->nthreads + 1;
    return t->nthreads++;
}

/* 1 when thread tid is blocked in futex(2). */
static int
in_futex(pid_t tid)
{
    long nr;

    return pe_proc_task_syscall(tid, &nr) == 1 && nr == SYS_futex;
}

static int
state_of(const pe_stack_t *st, int prev_state, int same_stack)
{
    /* a signalled thread that did not answer in time still has its /proc state */
    switch (pe_proc_state_code_of(st->state ? st->state : "")) {
    case PE_PROC_RUNNING: return PE_TJ_RUNNING;
    case PE_PROC_DISK_SLEEP: return PE_TJ_DISK;
    case PE_PROC_STOPPED:
    case PE_PROC_TRACING_STOP: return PE_TJ_STOPPED;
    case PE_PROC_SLEEPING:
    case PE_PROC_IDLE:
        /* unchanged since the last capture: the same wait as before */
        if (st->reused && same_stack && (prev_state == PE_TJ_SLEEPING || prev_state == PE_TJ_FUTEX))
            return prev_state;
        return in_futex(st->tid) ? PE_TJ_FUTEX : PE_TJ_SLEEPING;
    default: return st->answered ? PE_TJ_UNKNOWN : PE_TJ_NO_ANSWER;
    }
}

/* One tick: capture every thread, append their samples.  0, or -E2BIG / -ENOMEM / -EPERM. */
static int
tick(rec_t *r, int64_t now, int wait_ms)
{
    pe_tj_trace_t *t = r->t;
    pe_stacks_t *s;
    int rc = pe_stacks_capture_into(wait_ms, PE_STACKS_AUTO | PE_STACKS_NO_NAMES | PE_STACKS_NOW,
                                    &r->cap);

    if (rc < 0)
        return rc;
    s = r->cap;
    if ((rc = grow(r, (void **)&t->samples, &r->cap_samples, t->nsamples + s->n,
                   sizeof(*t->samples))))
        goto out;
    for (int i = 0; i < s->n; i++) {
        const pe_stack_t *st = &s->v[i];
        pe_tj_sample_t *smp;
        int th = thread_index(r, st, now), stack = -1;

        if (th < 0) {
            rc = th;
            goto out;
        }
        if (st->answered && st->nframes > 0 && (stack = intern(r, st->pcs, st->nframes, 1)) < 0) {
            rc = stack;
            goto out;
        }
        smp = &t->samples[t->nsamples++];
        smp->t_ns = now;
        smp->thread = th;
        smp->stack = stack;
        smp->state = (uint16_t)state_of(st, r->prev_state[th], stack == r->prev_stack[th]);
        smp->capture = !st->answered ? 2 : st->method && !strcmp(st->method, "signal");
        r->prev_state[th] = (uint8_t)smp->state;
        r->prev_stack[th] = stack;
        t->threads[th].last_ns = now;
        if (r->seen[th] < 255 && ++r->seen[th] == 2)
            pe_threads_name(st->tid, t->threads[th].name, sizeof(t->threads[0].name));
    }
out:
    return rc;
}

/* The allocation events' stacks: the heap's ids into this trace's stacks (resolved with the
   samples'); past the budget an event keeps no stack. */
static void
alloc_stacks(rec_t *r, const pe_trace_opts_t *o)
{
    uintptr_t pcs[PE_MAX_FRAMES];

    for (int64_t i = 0; i < r->t->nevents; i++) {
        pe_tj_event_t *e = &r->t->events[i];
        int n = 0;

        if (e->kind != PE_TJ_EV_ALLOC)
            continue;
        if (o->heap_stack && e->stack > 0)
            n = o->heap_stack((uint32_t)e->stack, pcs, PE_MAX_FRAMES);
        e->stack = n > 0 ? intern(r, pcs, n, 0) : -1;
        if (e->stack < 0)
            e->stack = -1;
    }
}

/* The interned stacks as a profile, sample i labelled stack=i (trace_json.h). */
static int
stacks_profile(rec_t *r)
{
    static const pe_prof_vt_t vt = {"samples", "count"};
    pe_prof_t *p = pe_prof_new(&vt, 1, &vt, 1);

    if (!p)
        return -ENOMEM;
    for (int32_t i = 0; i < r->nst; i++) {
        pe_prof_label_t l = {"stack", NULL, i, NULL};
        int64_t one = 1;
        if (pe_prof_add(p, &r->frames[r->off[i]], r->len[i], r->exact[i], &one, &l, 1) < 0) {
            pe_prof_free(p);
            return -ENOMEM;
        }
    }
    r->t->stacks = p;
    return 0;
}

static void
sleep_until(int64_t when)
{
    struct timespec ts = {(time_t)(when / 1000000000), (long)(when % 1000000000)};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* What the trace says of itself before it starts: the options, the budget (used so far:
   `used`, the event ring), the heap's sampling, the start times. */
static void
trace_header(pe_tj_trace_t *t, const pe_trace_opts_t *o, int64_t used)
{
    t->pid = (int)getpid();
    t->seconds_asked = o->seconds;
    t->delay = o->delay;
    t->budget = o->budget;
    t->used = used;
    t->mutex_rate = pe_cfg.mutex_rate > 0 ? (uint64_t)pe_cfg.mutex_rate : 0;
    t->heap_rate = o->heap_off ? 0 : o->heap_rate;
    t->heap_off = o->heap_off        ? o->heap_off
                  : o->heap_rate > 0 ? NULL
                                     : "heap sampling is off (PROFEP_HEAP_RATE=0)";
    t->start_ns = pe_clock_ns(CLOCK_MONOTONIC);
    t->start_real_ns = pe_clock_ns(CLOCK_REALTIME);
}

/*
 * Tick every o->delay seconds until o->seconds have passed, o->stop says so, or the
 * budget is reached (t->ended says which of the last two).  Spaces the ticks out
 * when they cost more than TRACE_CPU_SHARE of a period, and skips those it is late
 * for.  0, or tick's error.
 */
static int
record_ticks(rec_t *r, const pe_trace_opts_t *o)
{
    pe_tj_trace_t *t = r->t;
    int64_t period = (int64_t)(o->delay * 1e9), next, next_stop;
    int64_t end = t->start_ns + (int64_t)(o->seconds * 1e9);
    /* a running thread answers our signal when it next runs: on a busy machine that can take
       long; past half a period it is sampled as running without a stack */
    int wait_ms = (int)(o->delay * 500) < 1                  ? 1
                  : (int)(o->delay * 500) > TRACE_CAPTURE_MS ? TRACE_CAPTURE_MS
                                                             : (int)(o->delay * 500);
    int rc = 0;

    next = next_stop = t->start_ns;
    for (;;) {
        int64_t now = pe_clock_ns(CLOCK_MONOTONIC);
        if (now >= end)
            break;
        if (now >= next_stop) {
            if (o->stop && o->stop(o->arg)) {
                t->ended = "the client went away or the server is stopping";
                break;
            }
            next_stop = now + TRACE_STOP_EVERY_NS;
        }
        if (now >= next) {
            int64_t took, after, cpu = pe_clock_ns(CLOCK_THREAD_CPUTIME_ID);
            rc = tick(r, now, wait_ms);
            after = pe_clock_ns(CLOCK_MONOTONIC);
            cpu = pe_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
            took = after - now;
            t->tick_ns_sum += took;
            if (took > t->tick_ns_max)
                t->tick_ns_max = took;
            t->ticks++;
            if (rc == -E2BIG) {
                t->ended = "the memory budget (mem=, MiB) was reached";
                rc = 0;
                break;
            }
            if (rc < 0)
                break;
            next += period;
            if ((double)cpu > (double)period * TRACE_CPU_SHARE) { /* too many threads: space out */
                t->slowed_ticks++;
                if (next < now + (int64_t)((double)cpu / TRACE_CPU_SHARE))
                    next = now + (int64_t)((double)cpu / TRACE_CPU_SHARE);
            } else if (next <= after) { /* late (a busy machine): skip, do not burst */
                t->late_ticks += (uint64_t)((after - next) / period + 1);
                next = after + period;
            }
        }
        sleep_until(next < end ? next : end);
    }
    return rc;
}

/* The recorder's own tables (the trace keeps its threads, samples and events). */
static void
rec_free(rec_t *r)
{
    free(r->thash);
    free(r->prev_state);
    free(r->prev_stack);
    free(r->seen);
    pe_stacks_free(r->cap);
    free(r->frames);
    free(r->off);
    free(r->len);
    free(r->hash);
    free(r->exact);
    free(r->shash);
}

int
pe_trace_record(const pe_trace_opts_t *o, pe_tj_trace_t **out)
{
    int rc = 0, sig_held = 0;
    int64_t nev = o->budget / 4 / (int64_t)sizeof(pe_tj_event_t), cpu0;
    pe_tj_event_t *evs;
    pe_tj_trace_t *t;
    rec_t r;

    *out = NULL;
    nev = nev > TRACE_EVENTS ? TRACE_EVENTS : nev < TRACE_EVENTS_MIN ? TRACE_EVENTS_MIN : nev;
    if (pe_trace_feed_claim() < 0)
        return -EBUSY;
    memset(&r, 0, sizeof(r));
    if (!(t = calloc(1, sizeof(*t))) || !(evs = calloc((size_t)nev, sizeof(*evs)))) {
        free(t);
        pe_trace_feed_release();
        return -ENOMEM;
    }
    r.t = t;
    trace_header(t, o, nev * (int64_t)sizeof(*evs));
    /* the signal stays ours for the whole recording (when it can be): a capture then need
       not wait for its late answers before handing the signal back, this does once at the end */
    if (!pe_cpu_sig_program_owns() && pe_cpu_sig_acquire() == 0) {
        __atomic_add_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
        sig_held = 1;
    }
    pe_trace_feed_open(evs, nev);
    cpu0 = pe_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    rc = record_ticks(&r, o);
    /* the names of the threads still there now (a thread may rename itself at any time) */
    for (int i = 0; i < t->nthreads && r.cap; i++)
        for (int k = 0; k < r.cap->n; k++)
            if (r.cap->v[k].tid == t->threads[i].tid)
                pe_threads_name(t->threads[i].tid, t->threads[i].name, sizeof(t->threads[0].name));
    if (sig_held) {
        pe_cpu_sig_quiesce(100); /* a late answer still on its way */
        __atomic_sub_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
        pe_cpu_sig_release();
    }
    t->end_ns = pe_clock_ns(CLOCK_MONOTONIC);
    t->cpu_ns = pe_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    t->events = pe_trace_feed_close(&t->nevents, &t->events_dropped);
    if (t->nevents > nev)
        t->nevents = nev;
    if (t->events_dropped && !t->ended)
        t->ended = NULL; /* events lost are counted (otherData.events_dropped), the trace ran on */
    if (!rc)
        alloc_stacks(&r, o);
    if (!rc)
        rc = stacks_profile(&r);
    rec_free(&r);
    pe_trace_feed_release();
    if (rc < 0) {
        pe_trace_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void
pe_trace_free(pe_tj_trace_t *t)
{
    if (!t)
        return;
    free(t->threads);
    free(t->samples);
    free(t->events);
    pe_prof_free(t->stacks);
    free(t);
}
