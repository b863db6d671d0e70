/*
 * feed.c: the event feed of /debug/pprof/trace (feed.h): the fixed buffer
 * every module writes its events into while a trace records, and the one
 * recording's claim.  The recording itself (ticks, stacks, the trace built
 * at the end) is sampler/trace.c's; it hands this file the buffer to fill and
 * takes it back.  Writers claim a slot by fetch-add and are counted in
 * flight, so that closing the feed waits for them before the buffer is read.
 *
 * Signal-safe: pe_trace_event, pe_trace_alloc, pe_trace_exec.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/guard.h"
#include "feed.h"

int pe_trace_on;
static int trace_busy; /* one recording at a time (CAS) */
/* The event buffer: written by any thread between pe_trace_on's set and clear (its writers
   counted in ev_inflight), read by the recorder once they are gone. */
static pe_tj_event_t *ev_buf;
static int64_t ev_cap, ev_next, ev_inflight;
static uint64_t ev_dropped;

/* A slot for one event, or NULL (no trace, or full: counted).  Ends with ev_put_end. */
static PE_SIGSAFE inline pe_tj_event_t *
ev_put_begin(void)
{
    __atomic_add_fetch(&ev_inflight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&pe_trace_on, __ATOMIC_SEQ_CST)) {
        int64_t i = __atomic_fetch_add(&ev_next, 1, __ATOMIC_RELAXED);
        if (i < ev_cap)
            return &ev_buf[i];
        __atomic_add_fetch(&ev_dropped, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static PE_SIGSAFE inline void
ev_put_end(void)
{
    __atomic_sub_fetch(&ev_inflight, 1, __ATOMIC_RELEASE);
}

PE_SIGSAFE void
pe_trace_event(int kind, int32_t tid, int64_t t0_ns, int64_t t1_ns, int value, const char *what)
{
    pe_tj_event_t *e = ev_put_begin();

    if (e) {
        size_t n = 0;
        e->t0_ns = t0_ns;
        e->t1_ns = t1_ns;
        e->tid = tid ? tid : pe_gettid();
        e->kind = kind;
        e->value = value;
        e->stack = -1;
        while (what && what[n] && n < sizeof(e->what) - 1) {
            e->what[n] = what[n];
            n++;
        }
        e->what[n] = '\0';
    }
    ev_put_end();
}

PE_SIGSAFE void
pe_trace_alloc(int freed, uint64_t size, uint64_t est, uint32_t stack)
{
    pe_tj_event_t *e = ev_put_begin();

    if (e) {
        e->t0_ns = e->t1_ns = pe_clock_ns(CLOCK_MONOTONIC);
        e->tid = pe_gettid();
        e->kind = freed ? PE_TJ_EV_FREE : PE_TJ_EV_ALLOC;
        e->value = 0;
        e->stack = freed ? -1 : (int32_t)stack; /* the heap's id until the recording ends */
        e->bytes = size > INT64_MAX ? INT64_MAX : (int64_t)size;
        e->est = est > INT64_MAX ? INT64_MAX : (int64_t)est;
        e->what[0] = '\0';
    }
    ev_put_end();
}

PE_SIGSAFE void
pe_trace_exec(int failed, int foreign, int err)
{
    pe_tj_event_t *e = ev_put_begin();

    if (e) {
        /* a vfork child runs on its parent thread's TLS: its cached tid is that thread's (read
           only: a child must not fill the parent's cache) */
        pid_t self = (pid_t)syscall(SYS_gettid);
        e->t0_ns = e->t1_ns = pe_clock_ns(CLOCK_MONOTONIC);
        e->tid = !foreign ? pe_gettid() : pe_tls.tid ? pe_tls.tid : self;
        e->kind = failed ? PE_TJ_EV_EXEC_FAILED : PE_TJ_EV_EXEC;
        e->value = failed ? err : 0;
        e->stack = -1;
        e->bytes = foreign ? self : 0; /* the vfork child */
        e->est = 0;
        e->what[0] = '\0';
    }
    ev_put_end();
}

void
pe_trace_atfork_child(void)
{
    /* the recording thread is the parent's: nothing here may think a trace runs (its buffer
       is the parent's copy, left as it is) */
    __atomic_store_n(&pe_trace_on, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ev_inflight, 0, __ATOMIC_RELAXED);
    ev_buf = NULL;
    __atomic_store_n(&trace_busy, 0, __ATOMIC_RELAXED);
}

/* ---- for the recorder (sampler/trace.c) ------------------------------------------------- */

int
pe_trace_feed_claim(void)
{
    int expected = 0;

    if (!__atomic_compare_exchange_n(&trace_busy, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return -EBUSY;
    return 0;
}

void
pe_trace_feed_release(void)
{
    __atomic_store_n(&trace_busy, 0, __ATOMIC_RELEASE);
}

void
pe_trace_feed_open(pe_tj_event_t *buf, int64_t cap)
{
    ev_buf = buf;
    ev_cap = cap;
    __atomic_store_n(&ev_next, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ev_dropped, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_trace_on, 1, __ATOMIC_SEQ_CST);
}

pe_tj_event_t *
pe_trace_feed_close(int64_t *n, uint64_t *dropped)
{
    pe_tj_event_t *buf;

    /* no new event from here; wait for writers in flight (a few instructions each) */
    __atomic_store_n(&pe_trace_on, 0, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&ev_inflight, __ATOMIC_SEQ_CST))
        sched_yield();
    buf = ev_buf;
    ev_buf = NULL;
    *n = __atomic_load_n(&ev_next, __ATOMIC_RELAXED);
    *dropped = __atomic_load_n(&ev_dropped, __ATOMIC_RELAXED);
    return buf;
}
