/*
 * trace_json.h: a recorded thread trace (/debug/pprof/trace) and its Chrome
 * trace-event JSON encoder (trace_json.c).  The recorder (sampler/trace.c)
 * fills a pe_tj_trace_t; this layer only lays it out for viewers (speedscope,
 * Perfetto UI, chrome://tracing).  Owned by the trace work (issue 34).
 *
 * Signal-safe: no.
 */
#ifndef PE_TRACE_JSON_H
#define PE_TRACE_JSON_H

#include <stdint.h>

#include "../profile/profile.h"
#include "../sink/sink.h"

/* A thread's state at a sample (what the flame chart's outermost frame says). */
enum pe_tj_state {
    PE_TJ_UNKNOWN = 0,
    PE_TJ_RUNNING,   /* R: on a CPU or runnable */
    PE_TJ_SLEEPING,  /* S, not in futex(2) */
    PE_TJ_FUTEX,     /* S in futex(2): a lock, condition, semaphore or join */
    PE_TJ_DISK,      /* D */
    PE_TJ_STOPPED,   /* T, t */
    PE_TJ_NO_ANSWER, /* neither /proc nor the signal gave a stack in time */
    PE_TJ_NSTATES
};

/* Events with their own times (lock interposers, thread hooks, the heap sampler, process
   events, our requests). */
enum pe_tj_kind {
    PE_TJ_EV_LOCK = 0, /* a mutex/rwlock acquired after waiting [t0, t1) */
    PE_TJ_EV_COND,     /* a condition wait (or a timed lock that timed out) */
    PE_TJ_EV_THREAD_START,
    PE_TJ_EV_THREAD_EXIT,
    PE_TJ_EV_REQUEST,     /* one of our HTTP requests; `what` is its path */
    PE_TJ_EV_ALLOC,       /* a sampled allocation: bytes, est, stack */
    PE_TJ_EV_FREE,        /* the free of a sampled block: bytes, est */
    PE_TJ_EV_FORK,        /* fork() returned in the parent */
    PE_TJ_EV_EXEC,        /* an exec is about to replace the image (bytes: a vfork child's pid) */
    PE_TJ_EV_EXEC_FAILED, /* ... and returned: value is errno */
    PE_TJ_EV_SPAWN,       /* posix_spawn, system or popen began */
    PE_TJ_NKINDS
};

typedef struct pe_tj_event_s {
    int64_t t0_ns, t1_ns; /* CLOCK_MONOTONIC */
    int32_t tid;
    int32_t kind;  /* enum pe_tj_kind */
    int32_t value; /* requests: the status */
    /* allocations: the heap's stack id while recording, then an index of `stacks` (-1: none) */
    int32_t stack;
    int64_t bytes, est; /* allocations and frees: bytes asked, bytes the sample stands for */
    char what[40];      /* requests: the path (cut) */
} pe_tj_event_t;

typedef struct pe_tj_sample_s {
    int64_t t_ns;     /* CLOCK_MONOTONIC at the capture */
    int32_t thread;   /* index into threads */
    uint16_t state;   /* enum pe_tj_state */
    uint16_t capture; /* 0 /proc, 1 signal, 2 none */
    int32_t stack;    /* sample index of `stacks`, -1: none */
} pe_tj_sample_t;

typedef struct pe_tj_thread_s {
    int32_t tid;
    char name[32];
    int64_t first_ns, last_ns; /* first and last sample */
} pe_tj_thread_t;

typedef struct pe_tj_trace_s {
    int pid;
    int64_t start_ns, end_ns; /* CLOCK_MONOTONIC: what was recorded */
    int64_t start_real_ns;    /* CLOCK_REALTIME at start_ns */
    double seconds_asked, delay;
    const char *ended;    /* NULL: ran its time; else why it ended early */
    int64_t budget, used; /* bytes */
    uint64_t ticks, late_ticks, events_dropped, mutex_rate;
    int64_t heap_rate;                /* the heap sampler's mean bytes between samples, 0: off */
    const char *heap_off;             /* static: why sampled allocations are missing, or NULL */
    uint64_t slowed_ticks;            /* ticks spaced out to keep the recorder's CPU share */
    int64_t tick_ns_sum, tick_ns_max; /* time spent capturing, all ticks and the longest */
    int64_t cpu_ns;                   /* CPU time of the recording thread */
    pe_tj_thread_t *threads;
    int nthreads;
    pe_tj_sample_t *samples; /* in time order */
    int64_t nsamples;
    pe_tj_event_t *events;
    int64_t nevents;
    pe_prof_t *stacks; /* sample i is stack i (resolved before writing); samples' and
                          allocations' stacks alike */
} pe_tj_trace_t;

/*
 * Write t as {"traceEvents": [...], "displayTimeUnit": "ms", "otherData":
 * {...}}: process and thread names (M), per thread one flame chart over time
 * of B/E pairs whose outermost frame is the state ("running", "futex wait",
 * ...) and whose inner frames are the stack (named as the flame graph names
 * them, " [inlined]" for inlined calls; file:line in the category), per thread a second track "NAME
 * waits" with the lock and condition waits as X slices, thread start/exit, fork, exec, exec failed
 * and spawn as instant events on their thread, sampled allocations ("alloc 4096 B", args bytes,
 * est_bytes and the stack leaf first as "name (file:line)", 8 frames at most) and frees of sampled
 * blocks as instants, a counter of the sampled bytes allocated and freed since the start, our
 * requests on their worker's track, and a counter of threads by state.  Timestamps are microseconds
 * from the trace's start. Resolves t->stacks.  Returns 0, -ENOMEM or the sink's first error.
 */
int pe_tj_write(pe_tj_trace_t *t, pe_sink_t *out);

#endif /* PE_TRACE_JSON_H */
