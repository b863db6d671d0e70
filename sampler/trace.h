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
 * (no allocation, no lock): trace/feed.h, which every module may feed.
 *
 * Signal-safe: no (the feed's writers are: trace/feed.h).
 */
#ifndef PE_TRACE_H
#define PE_TRACE_H

#include <stdint.h>

#include "../preload/pe.h"
#include "../render/trace_json.h"

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
