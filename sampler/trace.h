/*
 * trace.h: the thread trace behind /debug/pprof/trace (issue 34; owned by
 * the trace work).  One trace at a time records, for every application
 * thread, its state and stack at each tick (the captures of allstacks.h: /proc
 * without a signal for a thread off the CPU, the signal for a running one;
 * a sleeping thread's futex(2) read from /proc/TID/syscall), plus events with
 * their own times: the lock interposers' sampled waits (contention/mutex.h), thread
 * start and exit, the heap sampler's sampled allocations and their frees
 * (heap/sample.c), fork, exec and spawn (preload/events.c), and our own HTTP
 * requests.  The recording runs on the
 * requesting HTTP thread; events come from any thread into a fixed buffer
 * (no allocation, no lock).
 *
 * Signal-safe: pe_trace_event, pe_trace_alloc (and the macros' checks before
 * them).
 */
#ifndef PE_TRACE_H
#define PE_TRACE_H

#include <stdint.h>

#include "../preload/pe.h"
#include "../proto/trace_json.h"

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

typedef struct pe_trace_opts_s {
    double seconds; /* how long */
    double delay;   /* between ticks */
    int64_t budget; /* bytes of samples, stacks and events kept */
    /* Asked about every ~100 ms: nonzero stops the recording (client gone). */
    int (*stop)(void *arg);
    void *arg;
    /* The heap sampler as the caller (http/, above heap/) sees it: its mean bytes between
       samples (0: off), why it is off (NULL: it is not), and the frames of one of its stack
       ids (heap.h pe_heap_stack; NULL: allocation events get no stack). */
    int64_t heap_rate;
    const char *heap_off;
    int (*heap_stack)(uint32_t id, uintptr_t *pcs, int max);
} pe_trace_opts_t;

/*
 * Record a trace (blocks for o->seconds, or less when stop() says so or the
 * budget is spent: t->ended says why).  Returns 0 and *out (free with
 * pe_trace_free), or
 *   -EBUSY   another trace is recording;
 *   -EPERM   the program handles SIGPROF itself (running threads cannot be
 *            sampled);
 *   -ENOMEM.
 * HTTP threads only.
 */
int pe_trace_record(const pe_trace_opts_t *o, pe_tj_trace_t **out) PE_NODISCARD;
void pe_trace_free(pe_tj_trace_t *t);

#endif /* PE_TRACE_H */
