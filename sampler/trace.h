/*
 * trace.h: the thread trace behind /debug/pprof/trace (issue 34; owned by
 * the trace work).  One trace at a time records, for every application
 * thread, its state and stack at each tick (the captures of stacks.h: /proc
 * without a signal for a thread off the CPU, the signal for a running one;
 * a sleeping thread's futex(2) read from /proc/TID/syscall), plus events with
 * their own times: the lock interposers' sampled waits (mutex.h), thread
 * start and exit, and our own HTTP requests.  The recording runs on the
 * requesting HTTP thread; events come from any thread into a fixed buffer
 * (no allocation, no lock).
 *
 * Signal-safe: pe_trace_event only (and the inline check before it).
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

typedef struct pe_trace_opts_s {
    double seconds; /* how long */
    double delay;   /* between ticks */
    int64_t budget; /* bytes of samples, stacks and events kept */
    /* Asked about every ~100 ms: nonzero stops the recording (client gone). */
    int (*stop)(void *arg);
    void *arg;
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
