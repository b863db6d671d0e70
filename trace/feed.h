/*
 * feed.h: what every module may feed into a thread trace (/debug/pprof/trace,
 * recorded by sampler/trace.h): events with their own times, such as the lock
 * interposers' sampled waits (contention/mutex.h), thread start and exit, the
 * heap sampler's sampled allocations and their frees (heap/sample.c), fork,
 * exec and spawn (preload/events.c), and our own HTTP requests.  Events come
 * from any thread into a fixed buffer (no allocation, no lock); a layer below
 * every module that feeds it.
 *
 * Signal-safe: pe_trace_event, pe_trace_alloc, pe_trace_exec (and the macros'
 * checks before them).
 */
#ifndef PE_TRACE_FEED_H
#define PE_TRACE_FEED_H

#include <stdint.h>

#include "../preload/pe.h"
#include "../render/trace_json.h"

/* Nonzero while a trace records: callers test it before pe_trace_event. */
extern int pe_trace_on;

/* Record one event (enum pe_tj_kind) of thread tid (0: the caller).  `what`: a
   request's path or NULL.  Any thread, signal handlers included. */
PE_SIGSAFE void pe_trace_event(int kind, int32_t tid, int64_t t0_ns, int64_t t1_ns, int value,
                               const char *what);

#define PE_TRACE_EVENT(kind, t0, t1, value, what)                                                  \
    do {                                                                                           \
        if (PE_UNLIKELY(__atomic_load_n(&pe_trace_on, __ATOMIC_RELAXED)))                          \
            pe_trace_event((kind), 0, (t0), (t1), (value), (what));                                \
    } while (0)

/* A sampled allocation (freed = 0) or the free of a sampled block (freed = 1) on the calling
   thread, now: `size` bytes asked, `est` the bytes the sample stands for (the heap's unbiased
   weight times size), `stack` the heap's stack id (heap.h pe_heap_stack; 0: none).  From the
   malloc path (heap/sample.c, under the guard): no lock, no allocation, one clock read. */
PE_SIGSAFE void pe_trace_alloc(int freed, uint64_t size, uint64_t est, uint32_t stack);

#define PE_TRACE_ALLOC(freed, size, est, stack)                                                    \
    do {                                                                                           \
        if (PE_UNLIKELY(__atomic_load_n(&pe_trace_on, __ATOMIC_RELAXED)))                          \
            pe_trace_alloc((freed), (size), (est), (stack));                                       \
    } while (0)

/* An exec about to happen (failed = 0) or that returned (failed = 1, err: its errno) on the
   calling thread; foreign (preload/events.h): in a vfork child, which shares our memory, the
   event goes on the thread that called vfork, with the child's pid. */
PE_SIGSAFE void pe_trace_exec(int failed, int foreign, int err);

#define PE_TRACE_EXEC(failed, foreign, err)                                                        \
    do {                                                                                           \
        if (PE_UNLIKELY(__atomic_load_n(&pe_trace_on, __ATOMIC_RELAXED)))                          \
            pe_trace_exec((failed), (foreign), (err));                                             \
    } while (0)

/* Fork child: no trace records here (the recording thread stayed in the parent). */
void pe_trace_atfork_child(void);

/* ---- for the recorder (sampler/trace.c) ---- */

/* One recording at a time: 0, or -EBUSY while another holds the feed.  Release when done. */
int pe_trace_feed_claim(void);
void pe_trace_feed_release(void);
/* From now on events go into buf[0 .. cap) (pe_trace_on is set). */
void pe_trace_feed_open(pe_tj_event_t *buf, int64_t cap);
/* No new event from here: clears pe_trace_on and waits for the writers in flight.  Returns the
   buffer given to open; *n the slots claimed (may pass cap), *dropped the events lost. */
pe_tj_event_t *pe_trace_feed_close(int64_t *n, uint64_t *dropped);

#endif /* PE_TRACE_FEED_H */
