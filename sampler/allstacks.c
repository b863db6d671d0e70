/*
 * allstacks.c: on-demand capture of every application thread's stack, and the
 * threadcreate profile.  Owns the capture slot table (one mmap, made at the
 * first capture) shared with the SIGPROF handler, the capture lock, and the
 * text forms (Go's debug=1 and debug=2).  The signal is taken through timer.c
 * exactly as a CPU profile takes it; names come from the profile/ model.
 *
 * Slot protocol (one slot per signalled thread; writer of each field named):
 *
 *   requester:  state = FREE; tid, gen = ...; state = PENDING (release); signal
 *   handler:    CAS PENDING -> FILLING; re-check tid/gen (else back to PENDING);
 *               unwind into pcs; state = DONE (release)
 *   requester:  after the bound, CAS PENDING -> ABANDONED (a late signal then
 *               finds no PENDING slot and does nothing); a slot still FILLING
 *               is waited on briefly and otherwise left out of later batches
 *               until its handler finishes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/guard.h"
#include "../preload/proc.h"
#include "../preload/threads.h"
#include "../render/gotext.h"
#include "../stack/pyframes.h"
#include "../stack/quiet.h"
#include "../stack/unwind.h"
#include "account.h"
#include "allstacks.h"
#include "sampler_int.h"
#include "sigsafe.h"

/* Threads signalled at once in one capture (those /proc cannot give); more
   are listed without a stack, and counted ("no capture slot free").  4096,
   or under an address-space limit as many as fit in a 256th of it (at least
   64): the program's memory is the program's. */
#define CAP_SLOTS_MAX 4096
#define CAP_SLOTS cap_slots
static int cap_slots = CAP_SLOTS_MAX; /* set before cap is published */
#define FILLING_GRACE_NS (50 * 1000000LL)

enum { S_FREE = 0, S_PENDING, S_FILLING, S_DONE, S_ABANDONED };

typedef struct cap_slot_s {
    pid_t tid;    /* requester */
    uint32_t gen; /* requester */
    int state;    /* S_*: see the protocol above */
    int nframes;  /* handler */
    uintptr_t pcs[PE_RING_FRAMES];
} cap_slot_t;

static cap_slot_t *cap; /* CAP_SLOTS of them (writer: first capture, under cap_lock) */
static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t cap_gen; /* under cap_lock */
static int cap_cursor;   /* next slot to try (under cap_lock) */

/* ---- the handler's half ---------------------------------------------------------- */

PE_SIGSAFE void
pe_stacks_sig_capture(uint64_t v, void *uc)
{
    cap_slot_t *c = __atomic_load_n(&cap, __ATOMIC_ACQUIRE), *s;
    uint32_t idx = (uint32_t)(v & 0xffffffu), gen = (uint32_t)(v >> 24) & 0xfffffu;
    pid_t self = pe_gettid();
    int expected = S_PENDING;

    if (!c || idx >= (uint32_t)CAP_SLOTS)
        return;
    s = &c[idx];
    if (__atomic_load_n(&s->tid, __ATOMIC_RELAXED) != self ||
        __atomic_load_n(&s->gen, __ATOMIC_RELAXED) != gen)
        return;
    if (!__atomic_compare_exchange_n(&s->state, &expected, S_FILLING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    if (__atomic_load_n(&s->tid, __ATOMIC_RELAXED) != self ||
        __atomic_load_n(&s->gen, __ATOMIC_RELAXED) != gen) {
        __atomic_store_n(&s->state, S_PENDING, __ATOMIC_RELEASE); /* another batch's slot */
        return;
    }
    s->nframes = pe_unwind_signal(uc, s->pcs, PE_RING_FRAMES);
    s->nframes = pe_py_interleave(s->pcs, s->nframes, PE_RING_FRAMES); /* CPython (pyframes.h) */
    __atomic_store_n(&s->state, S_DONE, __ATOMIC_RELEASE);
}

/* ---- helpers -------------------------------------------------------------------- */

static void
sleep_ns(int64_t ns)
{
    struct timespec ts = {ns / 1000000000, ns % 1000000000};
    nanosleep(&ts, NULL);
}

/* A free slot index (not FILLING, not PENDING), or -1. */
static int
slot_take(void)
{
    for (int i = 0; i < CAP_SLOTS; i++) {
        int j = (cap_cursor + i) % CAP_SLOTS;
        int st = __atomic_load_n(&cap[j].state, __ATOMIC_ACQUIRE);
        if (st != S_FILLING && st != S_PENDING) {
            cap_cursor = (j + 1) % CAP_SLOTS;
            return j;
        }
    }
    return -1;
}

/* Why a live thread did not answer: it blocks the signal, or is stopped, or we cannot tell. */
static const char *
why_silent(pid_t tid)
{
    pe_proc_sigs_t sigs;
    const char *state;

    if (pe_proc_task_sigs(tid, &sigs) == 0 && (sigs.blocked & (1ull << (PE_SAMPLER_SIG - 1))))
        return "it blocks SIGPROF";
    state = pe_proc_thread_state(tid);
    if (!strcmp(state, "stopped") || !strcmp(state, "tracing-stop"))
        return "it is stopped";
    return "no answer";
}

/* SigPnd/SigBlk of tid have the signal: 1 pending and deliverable, 0 not, -1 unknown. */
static int
pending_deliverable(pid_t tid)
{
    pe_proc_sigs_t sigs;
    unsigned long long bit = 1ull << (PE_SAMPLER_SIG - 1);

    if (pe_proc_task_sigs(tid, &sigs) < 0)
        return -1;
    return (sigs.pending & bit) && !(sigs.blocked & bit);
}

void
pe_cpu_sig_quiesce(int timeout_ms)
{
    int64_t until = pe_clock_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
    pe_proc_tasks_t it;
    pid_t tid;
    int busy;

    do {
        busy = 0;
        if (pe_proc_tasks_open(&it) < 0)
            return;
        while (!busy && (tid = pe_proc_tasks_next(&it)) > 0)
            if (!pe_threads_is_internal(tid) && pending_deliverable(tid) == 1)
                busy = 1;
        pe_proc_tasks_close(&it);
        if (busy)
            sleep_ns(1000000);
    } while (busy && pe_clock_ns(CLOCK_MONOTONIC) < until);
}

/* Every thread of the process but ours and the caller, into a malloc'd
   array (*out): as many as there are. */
static int
list_threads(pid_t **out)
{
    pe_proc_tasks_t it;
    pid_t tid, self = pe_gettid(), *v = NULL, *nv;
    int n = 0, room = 0, rc;

    *out = NULL;
    if ((rc = pe_proc_tasks_open(&it)) < 0)
        return rc;
    while ((tid = pe_proc_tasks_next(&it)) > 0) {
        if (tid == self || pe_threads_is_internal(tid))
            continue;
        if (n == room) {
            room = room ? 2 * room : 256;
            if (!(nv = realloc(v, (size_t)room * sizeof(*v)))) {
                pe_proc_tasks_close(&it);
                free(v);
                return -ENOMEM;
            }
            v = nv;
        }
        v[n++] = tid;
    }
    pe_proc_tasks_close(&it);
    *out = v;
    return n;
}

/*
 * In auto mode, before each signal: 1 when thread st may be signalled;
 * else 0 and st holds what /proc gives (the PC of its system call, as a
 * one-frame stack, or no answer) and why it was not signalled (sigsafe.h);
 * -ESRCH when it is gone.
 */
static int
may_signal(pe_stack_t *st, int mode)
{
    pe_sigsafe_t ss;
    int rc;

    if (mode != PE_STACKS_AUTO) /* capture=signal: asked for, interrupting or not */
        return 1;
    if ((rc = pe_sigsafe_check(st->tid, &ss)) != 0)
        return rc;
    snprintf(st->why_buf, sizeof(st->why_buf), "%s", ss.why);
    st->why = st->why_buf;
    st->nframes = 0;
    if (ss.pc) {
        st->pcs[0] = ss.pc;
        st->nframes = 1;
        st->answered = 1;
        st->method = "syscall";
    }
    return 0;
}

/*
 * A thread not to be signalled (may_signal's 0) that /proc could not give
 * either is usually one caught between a wake-up and its next wait (a loop
 * of short naps): back in a call a millisecond later, where /proc can read
 * it.  Try again twice, within a budget of the whole capture's time (*left,
 * in ms), so many such threads cost at most that.  1 when /proc gave it.
 */
static int
quiet_retry(pe_stack_t *st, int *left)
{
    uintptr_t pcs[PE_MAX_FRAMES];

    for (int k = 0; k < 2 && *left > 0; k++) {
        struct timespec ms = {0, 1000000};
        const char *why = NULL, *state = st->state;
        int reused = 0, rc;

        nanosleep(&ms, NULL);
        (*left)--;
        rc = pe_quiet_capture(st->tid, pcs, PE_MAX_FRAMES, &state, &why, &reused);
        if (rc == -ESRCH)
            return 0;
        if (rc > 0) {
            memcpy(st->pcs, pcs, (size_t)rc * sizeof(pcs[0]));
            st->nframes = pe_py_interleave_tid(st->tid, st->pcs, rc, PE_MAX_FRAMES);
            st->state = state;
            st->answered = 1;
            st->method = "proc";
            st->reused = reused;
            st->why = NULL;
            return 1;
        }
    }
    return 0;
}

/* ---- capture -------------------------------------------------------------------- */

int
pe_stacks_capture(int timeout_ms, pe_stacks_t **out)
{
    return pe_stacks_capture_mode(timeout_ms, PE_STACKS_AUTO, out);
}

/*
 * Each thread's place in one capture, slot[i] for r->v[i]: a capture slot's index
 * (>= 0, signalled), or one of these.
 */
enum {
    SLOT_NONE = -1, /* to signal; still so after the sends when no capture slot was free */
    SLOT_GONE = -2, /* exited: left out of the result */
    SLOT_DONE = -3, /* settled without a signal: its stack, or why none, is in place */
};

/*
 * The quiet pass: every thread that /proc can give without a signal.  Marks
 * slot[i] SLOT_GONE, SLOT_DONE, or SLOT_NONE for those to signal.
 * Returns how many need the signal.
 */
static int
quiet_pass(pe_stacks_t *r, pid_t *tids, int *slot, int n, int mode, int names)
{
    int need = 0;

    for (int i = 0; i < n; i++) {
        pe_stack_t *st = &r->v[i];
        const char *why = NULL;
        int rc = -ENOTSUP, reused = 0;

        st->tid = tids[i];
        if (names)
            pe_threads_name(st->tid, st->name, sizeof(st->name));
        slot[i] = SLOT_NONE;
        if (mode == PE_STACKS_SIGNAL) {
            st->state = pe_proc_thread_state(st->tid); /* before the signal wakes it */
            need++;
            continue;
        }
        rc = pe_quiet_capture(st->tid, st->pcs, PE_MAX_FRAMES, &st->state, &why, &reused);
        if (rc == -ESRCH) {
            slot[i] = SLOT_GONE;
            continue;
        }
        if (rc > 0) {
            st->nframes = pe_py_interleave_tid(st->tid, st->pcs, rc, PE_MAX_FRAMES);
            st->answered = 1;
            st->method = "proc";
            st->reused = reused;
            slot[i] = SLOT_DONE;
            continue;
        }
        st->quiet_why = why;
        if (mode == PE_STACKS_PROC) {
            st->why = why ? why : "no stack from /proc";
            slot[i] = SLOT_DONE;
            continue;
        }
        need++;
    }
    return need;
}

int
pe_stacks_capture_mode(int timeout_ms, int mode, pe_stacks_t **out)
{
    *out = NULL;
    return pe_stacks_capture_into(timeout_ms, mode, out);
}

/* The slot table, mapped at the first capture (under cap_lock).  0 or -ENOMEM. */
static int
cap_map(void)
{
    struct rlimit rl;
    void *m;

    if (cap)
        return 0;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        while (cap_slots > 64 && (uint64_t)cap_slots * sizeof(cap_slot_t) > rl.rlim_cur / 256)
            cap_slots /= 2;
    m = mmap(NULL, CAP_SLOTS * sizeof(cap_slot_t), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -ENOMEM;
    __atomic_store_n(&cap, (cap_slot_t *)m, __ATOMIC_RELEASE);
    return 0;
}

/* Room in r->v for n threads, each cleared but for its frames.  0 or -ENOMEM. */
static int
stacks_room(pe_stacks_t *r, int n)
{
    if (n > r->cap || !r->v) {
        pe_stack_t *v = realloc(r->v, (n ? (size_t)n : 1) * sizeof(*r->v));
        if (!v)
            return -ENOMEM;
        r->v = v;
        r->cap = n ? n : 1;
    }
    for (int i = 0; i < n; i++) /* all but the frames, which nframes bounds */
        memset(&r->v[i], 0, offsetof(pe_stack_t, pcs));
    return 0;
}

/*
 * Signal every thread still SLOT_NONE, each through a capture slot of generation
 * gen; in auto mode a thread that may not be signalled is settled from /proc
 * instead (may_signal, quiet_retry within *retry_ms).  Under cap_lock.
 */
static void
send_all(pe_stacks_t *r, int *slot, int n, int mode, uint32_t gen, int *retry_ms)
{
    for (int i = 0; i < n; i++) {
        pe_stack_t *st = &r->v[i];
        cap_slot_t *s;
        int j;

        if (slot[i] != SLOT_NONE)
            continue;
        if ((j = may_signal(st, mode)) <= 0) { /* as late as can be: it may block any time */
            if (j == 0)
                (void)quiet_retry(st, retry_ms);
            slot[i] = j == -ESRCH ? SLOT_GONE : SLOT_DONE;
            continue;
        }
        if ((j = slot_take()) < 0) {
            st->why = "no capture slot free";
            continue;
        }
        slot[i] = j;
        s = &cap[j];
        __atomic_store_n(&s->state, S_FREE, __ATOMIC_RELAXED);
        __atomic_store_n(&s->tid, st->tid, __ATOMIC_RELAXED);
        __atomic_store_n(&s->gen, gen, __ATOMIC_RELAXED);
        s->nframes = 0;
        __atomic_store_n(&s->state, S_PENDING, __ATOMIC_RELEASE);
        if (pe_cpu_sigq_send(st->tid, PE_SIGQ_CAP(gen, j)) == -ESRCH) {
            /* exited meanwhile */
            __atomic_store_n(&s->state, S_ABANDONED, __ATOMIC_RELEASE);
            slot[i] = SLOT_GONE;
        }
    }
}

/*
 * Signal again the threads whose slot is still PENDING; one that may not be
 * signalled any more is left be (its slot ABANDONED).  Under cap_lock.
 */
static void
resend_silent(pe_stacks_t *r, int *slot, int n, int mode, uint32_t gen)
{
    for (int i = 0; i < n; i++) {
        int expected = S_PENDING, ok;
        if (slot[i] < 0 || __atomic_load_n(&cap[slot[i]].state, __ATOMIC_ACQUIRE) != S_PENDING)
            continue;
        if ((ok = may_signal(&r->v[i], mode)) == 1) {
            (void)pe_cpu_sigq_send(r->v[i].tid, PE_SIGQ_CAP(gen, slot[i]));
            continue;
        }
        /* it blocked meanwhile (our first signal was swallowed): leave it be */
        if (__atomic_compare_exchange_n(&cap[slot[i]].state, &expected, S_ABANDONED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            slot[i] = ok == -ESRCH ? SLOT_GONE : SLOT_DONE;
        else if (r->v[i].method && !strcmp(r->v[i].method, "syscall")) {
            r->v[i].method = NULL; /* its handler runs now: the signal's answer */
            r->v[i].answered = 0;
            r->v[i].why = NULL;
        }
    }
}

/*
 * Wait up to timeout_ms for the signalled threads' answers; send again to the
 * silent now and then (a SIGPROF already pending on a thread, e.g. a CPU timer's,
 * swallows ours).  Under cap_lock.
 */
static void
wait_answers(pe_stacks_t *r, int *slot, int n, int mode, uint32_t gen, int timeout_ms)
{
    int64_t ts = pe_clock_ns(CLOCK_MONOTONIC); /* the signals went now, after the /proc pass */
    int64_t deadline = ts + (int64_t)timeout_ms * 1000000;
    int64_t resend = ts + 10 * 1000000;

    for (;;) {
        int64_t now = pe_clock_ns(CLOCK_MONOTONIC);
        int pending = 0;

        for (int i = 0; i < n; i++)
            if (slot[i] >= 0 && __atomic_load_n(&cap[slot[i]].state, __ATOMIC_ACQUIRE) != S_DONE)
                pending++;
        if (!pending || now >= deadline)
            break;
        if (now >= resend) {
            resend_silent(r, slot, n, mode, gen);
            resend = now + 4 * (resend - ts > 10 * 1000000 ? resend - ts : 10 * 1000000);
        }
        /* a running thread answers within microseconds when it has a CPU; past that it
           waits for one, and spinning on sched_yield only costs ours (a trace's recorder
           spent most of its CPU here) */
        if (now - ts < 200 * 1000)
            sched_yield();
        else
            sleep_ns(now - ts < 2 * 1000000 ? 100 * 1000 : 1000000);
    }
}

/*
 * Take the answers out of the capture slots and close the silent ones; a silent
 * thread that exited becomes SLOT_GONE, another gets why it was silent.  Under
 * cap_lock.
 */
static void
collect(pe_stacks_t *r, int *slot, int n)
{
    for (int i = 0; i < n; i++) {
        pe_stack_t *st = &r->v[i];
        cap_slot_t *s;
        int expected = S_PENDING;

        if (slot[i] == SLOT_GONE || slot[i] == SLOT_DONE)
            continue;
        if (slot[i] == SLOT_NONE)
            goto silent;
        s = &cap[slot[i]];
        if (__atomic_compare_exchange_n(&s->state, &expected, S_ABANDONED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            goto silent;
        if (expected == S_FILLING) { /* its handler is unwinding right now */
            int64_t until = pe_clock_ns(CLOCK_MONOTONIC) + FILLING_GRACE_NS;
            while (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == S_FILLING &&
                   pe_clock_ns(CLOCK_MONOTONIC) < until)
                sched_yield();
        }
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != S_DONE)
            goto silent;
        st->nframes = s->nframes > PE_MAX_FRAMES ? PE_MAX_FRAMES : s->nframes;
        memcpy(st->pcs, s->pcs, (size_t)st->nframes * sizeof(st->pcs[0]));
        st->answered = st->nframes > 0;
        if (st->answered) {
            st->method = "signal";
            continue;
        }
    silent:
        if (!pe_proc_task_alive(st->tid)) {
            slot[i] = SLOT_GONE; /* not a thread any more */
            continue;
        }
        if (!st->why)
            st->why = why_silent(st->tid);
    }
}

/* Give back the signal pe_cpu_sig_acquire gave a capture. */
static void
sig_done(void)
{
    /* Another holder (a profile, a trace's recording) keeps the signal ours: it waits for
       signals in flight before it lets go, so we need not (a trace captures every few ms,
       and a late answer made each capture wait here up to 100 ms).  Else we wait. */
    int held = __atomic_load_n(&pe_cpu_profiling, __ATOMIC_ACQUIRE);
    while (held > 1 && !__atomic_compare_exchange_n(&pe_cpu_profiling, &held, held - 1, 0,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    if (held <= 1) {
        pe_cpu_sig_quiesce(100); /* a resent signal still on its way */
        __atomic_sub_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
    }
    pe_cpu_sig_release();
}

/* The threads but the exited ones into r->v[0..r->n), counted by how they answered. */
static void
compact(pe_stacks_t *r, const int *slot, int n)
{
    for (int i = 0; i < n; i++) {
        pe_stack_t *st = &r->v[i];
        if (slot[i] == SLOT_GONE)
            continue;
        if (r->n != i) /* (a whole stack: copied only when an exited thread left a gap) */
            r->v[r->n] = *st;
        if (!st->answered)
            r->noanswer++;
        else if (!strcmp(st->method, "proc"))
            r->nproc++, r->nreused += st->reused;
        else if (!strcmp(st->method, "syscall"))
            r->nsyscall++;
        else
            r->nsignal++;
        r->n++;
    }
}

int
pe_stacks_capture_into(int timeout_ms, int mode, pe_stacks_t **io)
{
    pe_stacks_t *r;
    pid_t *tids = NULL;
    int *slot = NULL, n, i, rc, need, acquired = 0, kept = *io != NULL;
    int retry_ms = (mode & PE_STACKS_NOW) ? 0 : 4; /* quiet_retry's budget for the whole capture */
    int64_t t0;
    uint32_t gen = 0;
    int names = !(mode & PE_STACKS_NO_NAMES);

    mode &= ~(PE_STACKS_NO_NAMES | PE_STACKS_NOW);
    pe_py_init();
    if (kept) { /* the caller's: its array is kept, the rest starts over */
        pe_stack_t *v = (*io)->v;
        int room = (*io)->cap;
        r = *io;
        memset(r, 0, sizeof(*r));
        r->v = v;
        r->cap = room;
    } else if (!(r = calloc(1, sizeof(*r)))) {
        rc = -ENOMEM;
        goto err_free;
    }
    pthread_mutex_lock(&cap_lock);
    if ((rc = cap_map()) < 0)
        goto err_unlock;
    /* The signal is taken only when some thread needs it: a capture all from
       /proc leaves the program's disposition alone. */
    if (mode != PE_STACKS_PROC && pe_cpu_sig_program_owns()) {
        rc = -EPERM;
        goto err_unlock;
    }

    n = list_threads(&tids);
    if (n < 0)
        n = 0;
    if ((rc = stacks_room(r, n)) < 0)
        goto err_unlock;
    slot = malloc((n ? (size_t)n : 1) * sizeof(*slot));
    if (!slot) {
        rc = -ENOMEM;
        goto err_unlock;
    }
    r->time_nanos = pe_clock_ns(CLOCK_REALTIME);
    t0 = pe_clock_ns(CLOCK_MONOTONIC);
    need = quiet_pass(r, tids, slot, n, mode, names);
    if (need) {
        if ((rc = pe_cpu_sig_acquire()) < 0)
            goto err_unlock;
        acquired = 1;
        __atomic_add_fetch(&pe_cpu_profiling, 1, __ATOMIC_ACQ_REL);
        if (++cap_gen > 0xfffffu)
            cap_gen = 1;
        gen = cap_gen;
        send_all(r, slot, n, mode, gen, &retry_ms);
        wait_answers(r, slot, n, mode, gen, timeout_ms);
    }
    collect(r, slot, n);
    r->wait_ns = pe_clock_ns(CLOCK_MONOTONIC) - t0;
    if (acquired)
        sig_done();
    pthread_mutex_unlock(&cap_lock);

    compact(r, slot, n);
    for (i = 0; i < r->n; i++) /* CPython frames named while their code is alive */
        pe_py_name_pcs(r->v[i].pcs, r->v[i].nframes);
    free(tids);
    free(slot);
    *io = r;
    return 0;

err_unlock:
    pthread_mutex_unlock(&cap_lock);
err_free:
    if (r && !kept) {
        free(r->v);
        free(r);
    }
    free(tids);
    free(slot);
    return rc;
}

void
pe_stacks_free(pe_stacks_t *s)
{
    if (!s)
        return;
    free(s->v);
    free(s);
}

void
pe_stacks_atfork_child(void)
{
    pthread_mutex_init(&cap_lock, NULL);
    pe_quiet_atfork_child();
}

/* ---- profiles ------------------------------------------------------------------- */

/*
 * Add one thread to p: labels thread_name, state and capture (how it was
 * taken).  For the debug=2 text (with_tid): thread, thread_name, state, and
 * either no_answer (why) or capture_note (how, and why not /proc).
 */
static int
add_thread(pe_prof_t *p, const pe_stack_t *st, int with_tid)
{
    pe_prof_label_t l[5];
    char note[256], why[160];
    int64_t one = 1;
    int nl = 0;

    memset(l, 0, sizeof(l));
    if (with_tid) {
        l[nl].key = "thread";
        l[nl++].num = st->tid;
    }
    l[nl].key = "thread_name";
    l[nl++].str = st->name;
    l[nl].key = "state";
    l[nl++].str = st->state;
    if (with_tid && !st->answered) {
        l[nl].key = "no_answer";
        l[nl++].str = st->why ? st->why : "?";
    } else if (with_tid && st->method) {
        if (!strcmp(st->method, "proc"))
            snprintf(note, sizeof(note), "proc%s", st->reused ? " (unchanged)" : "");
        else if (!strcmp(st->method, "syscall"))
            snprintf(note, sizeof(note), "syscall only, from /proc (%s; %s)", st->why,
                     st->quiet_why ? st->quiet_why : "no stack from /proc");
        else
            snprintf(note, sizeof(note), "signal (%s)",
                     st->quiet_why ? st->quiet_why : "asked for");
        l[nl].key = "capture_note";
        l[nl++].str = note;
    } else if (st->answered) {
        l[nl].key = "capture";
        l[nl++].str = st->method;
    }
    if (with_tid && pe_sampler_thread_unsampled(st->tid, why, sizeof(why))) {
        l[nl].key = "unsampled"; /* what profiles cannot see of it (account.c) */
        l[nl++].str = why;
    }
    if (!st->answered)
        return pe_prof_add_named(p, "[no answer]", &one, l, nl);
    return pe_prof_add(p, st->pcs, st->nframes, 1, &one, l, nl);
}

static pe_prof_t *
stacks_prof(const pe_stacks_t *s, int with_tid)
{
    pe_prof_vt_t t = {"goroutine", "count"};
    pe_prof_t *p = pe_prof_new(&t, 1, &t, 1);

    if (!p)
        return NULL;
    for (int i = 0; i < s->n; i++) {
        if (add_thread(p, &s->v[i], with_tid) < 0) {
            pe_prof_free(p);
            return NULL;
        }
    }
    pe_prof_set_time(p, s->time_nanos, s->wait_ns);
    pe_prof_comment(p, "threads: %d, %d without answer within the bound (captured in %.1f ms)",
                    s->n, s->noanswer, (double)s->wait_ns / 1e6);
    pe_prof_comment(p,
                    "capture: %d from /proc without a signal (%d of them unchanged since the "
                    "last capture), %d by signal",
                    s->nproc, s->nreused, s->nsignal);
    if (s->nsyscall)
        pe_prof_comment(p,
                        "capture: %d not signalled (each waits in a system call a signal "
                        "would interrupt): their system call's PC only, from /proc",
                        s->nsyscall);
    if (pe_py_note()[0])
        pe_prof_comment(p, "%s", pe_py_note());
    return p;
}

pe_prof_t *
pe_stacks_profile(const pe_stacks_t *s)
{
    return stacks_prof(s, 0);
}

pe_prof_t *
pe_stacks_threadcreate(void)
{
    pe_prof_vt_t t = {"threadcreate", "count"};
    pe_thread_info_t *v = NULL;
    pe_prof_t *p = pe_prof_new(&t, 1, &t, 1);
    int n, i, rc = 0;
    int64_t one = 1;

    if (!p || (n = pe_threads_list(&v)) < 0)
        goto err;
    for (i = 0; i < n && rc == 0; i++) {
        if (v[i].ncreate > 0)
            rc = pe_prof_add(p, v[i].create_pcs, v[i].ncreate, 0, &one, NULL, 0);
        else
            rc = pe_prof_add_named(
                p, v[i].tid == getpid() ? "[main thread]" : "[not created through pthread_create]",
                &one, NULL, 0);
    }
    if (rc < 0)
        goto err;
    free(v);
    pe_prof_comment(p, "threads: %d live, registered by the pthread_create interposer", n);
    return p;
err:
    free(v);
    pe_prof_free(p);
    return NULL;
}

/* ---- text (the encoders are render/'s) ---------------------------------------------- */

/* debug=2's count of the threads profiles cannot see (account.c), when any. */
static void
stacks_unsampled_line(pe_sink_t *out)
{
    pe_unsampled_t u;

    pe_sampler_unsampled(&u);
    if (u.blocked)
        pe_sink_printf(out, "unsampled: %d of %d threads block SIGPROF (marked below)\n\n",
                       u.blocked, u.threads);
}

int
pe_stacks_write_text(const pe_stacks_t *s, pe_sink_t *out, int debug)
{
    pe_prof_t *p;
    int rc;

    if (!(p = stacks_prof(s, debug >= 2)))
        return -ENOMEM;
    if (debug <= 1) {
        rc = pe_prof_write_go_grouped(p, out, "goroutine"); /* Go's header, for scrapers */
    } else if ((rc = pe_prof_resolve(p, 0)) == 0) {
        pe_sink_printf(out,
                       "threads: %d (pid %d), %d without answer; captured in %.1f ms; "
                       "%d from /proc without a signal (%d unchanged), %d by signal\n\n",
                       s->n, (int)getpid(), s->noanswer, (double)s->wait_ns / 1e6, s->nproc,
                       s->nreused, s->nsignal);
        if (s->nsyscall)
            pe_sink_printf(out,
                           "not signalled: %d (each waits in a system call a signal would "
                           "interrupt): their system call's PC only, from /proc\n\n",
                           s->nsyscall);
        stacks_unsampled_line(out);
        /* one sample per thread, in capture order (the tid label keeps them apart) */
        rc = pe_prof_write_go_threads(p, out);
    }
    pe_prof_free(p);
    return rc;
}
