/*
 * allstacks.h: every application thread's stack now (/debug/pprof/goroutine,
 * /task_backtraces, the peek signal), and the stacks that created the live
 * threads (/debug/pprof/threadcreate).
 *
 * A capture first reads each thread from /proc (quiet.h): a thread blocked in
 * a system call (or otherwise off the CPU) is walked from its SP and PC
 * without any signal, and one that has not run since the last capture reuses
 * that stack.  Only the rest (running, woke mid-walk, or a frame needs a
 * register /proc does not give) is signalled with PE_SAMPLER_SIG
 * (rt_tgsigqueueinfo from our thread, a PE_SIGQ_CAPTURE value naming a slot
 * written before the signal); the thread's own handler unwinds into that slot
 * and publishes it.  The requester waits a bounded time; threads that do not
 * answer (stopped, blocking the signal, exiting) are reported as such, never
 * waited on.  A signalled thread blocked in a syscall is interrupted once
 * (read/accept restart under SA_RESTART; poll, epoll_wait, nanosleep and
 * sem_timedwait return EINTR in the program).  The library's own threads are
 * never signalled.
 *
 * Signal-safe: no (the handler's half, pe_stacks_sig_capture, is in sampler_int.h).
 */
#ifndef PE_STACKS_H
#define PE_STACKS_H

#include <stdint.h>
#include <sys/types.h>

#include "../preload/pe.h"
#include "../profile/profile.h"
#include "../sink/sink.h"

/* Default bound on the wait for one capture (all threads together). */
#define PE_STACKS_TIMEOUT_MS 200

typedef struct pe_stack_s {
    pid_t tid;
    int answered;          /* 1: pcs hold the stack; 0: no answer within the bound */
    int nframes;           /* pcs[0] is the interrupted PC (exact), then return addresses */
    char name[32];         /* /proc comm */
    const char *state;     /* /proc state before the signal: "running", "sleeping", ... */
    const char *why;       /* when !answered: a short reason */
    const char *method;    /* when answered: "proc" (no signal), "signal", or "syscall" (not
                              signalled: it waits in a call a signal would interrupt, and
                              pcs[0] is the PC /proc gives, the only frame) */
    const char *quiet_why; /* when signalled or unanswered: why /proc did not do */
    int reused;            /* "proc" and unchanged since the last capture */
    char why_buf[128];     /* storage for why (sigsafe.h's reason) */
    uintptr_t pcs[PE_MAX_FRAMES];
} pe_stack_t;

typedef struct pe_stacks_s {
    int n;              /* threads in v */
    int noanswer;       /* of them, without answer */
    int nproc, nreused; /* answered from /proc (no signal), of them reused unchanged */
    int nsignal;        /* answered by signal */
    int nsyscall;       /* not signalled (the call it waits in would fail): /proc's PC only */
    int64_t time_nanos; /* CLOCK_REALTIME at the capture */
    int64_t wait_ns;    /* how long the capture took */
    pe_stack_t *v;
    int cap; /* room in v (pe_stacks_capture_into reuses it) */
} pe_stacks_t;

/*
 * Capture every application thread's stack, waiting at most timeout_ms for
 * answers.  One capture runs at a time (a second caller waits for the first).
 * Returns 0 and *out (free with pe_stacks_free), or
 *   -EPERM   the program handles SIGPROF itself (503);
 *   -ENOMEM.
 * Library threads only (HTTP workers, the peek thread).
 */
int pe_stacks_capture(int timeout_ms, pe_stacks_t **out) PE_NODISCARD;
/* How threads are captured: /proc first then signal, signal only, /proc only. */
enum { PE_STACKS_AUTO = 0, PE_STACKS_SIGNAL, PE_STACKS_PROC };
/*
 * pe_stacks_capture with a method: PE_STACKS_SIGNAL is the signal for every
 * thread (no /proc reads); PE_STACKS_PROC never signals
 * (threads it cannot recover are listed without answer, with the reason) and
 * works when the program handles SIGPROF.
 */
int pe_stacks_capture_mode(int timeout_ms, int mode, pe_stacks_t **out) PE_NODISCARD;
/* Or'd into a mode: name[] is left empty (no /proc/TID/comm read a thread: the caller
   knows its threads, e.g. the trace's recorder, which captures every few ms). */
#define PE_STACKS_NO_NAMES 0x100
/* Or'd into a mode: every stack as of the capture, paired with the state /proc gave
   then (the trace's slices); without it a thread /proc could not read and that may
   not be signalled is read again a millisecond later (quiet_retry). */
#define PE_STACKS_NOW 0x200
/*
 * pe_stacks_capture_mode into *io when it is not NULL (a capture of the same caller's:
 * its array is reused, grown when too small), else into a new one.  On error *io is
 * left as it was (still the caller's to free).
 */
int pe_stacks_capture_into(int timeout_ms, int mode, pe_stacks_t **io) PE_NODISCARD;
void pe_stacks_free(pe_stacks_t *s);

/*
 * The capture as a profile: sample type goroutine/count, labels thread_name,
 * state and capture ("proc" or "signal": how the stack was taken; no tid, so
 * that threads with equal stacks merge, as Go's goroutine profile does);
 * unanswered threads are one "[no answer]" frame.  Comments count threads by
 * method.
 * Free with pe_prof_free; NULL on ENOMEM.
 */
pe_prof_t *pe_stacks_profile(const pe_stacks_t *s);

/*
 * Text forms.  debug=1: Go's grouped form ("N @ 0x... " then one "#\taddr\t
 * name+off\tfile" line per frame, largest groups first; a `# labels:
 * {"capture":"proc"}` line as Go prints goroutine labels).  debug=2: one block
 * per thread: `thread TID "NAME" [STATE]:`, a `# capture: proc` or `# capture:
 * signal (why not /proc)` line, then its frames.  The layout is render/'s
 * (pe_prof_write_go_grouped, pe_prof_write_go_threads).  Returns 0 or the
 * sink's first error / -ENOMEM.
 */
int pe_stacks_write_text(const pe_stacks_t *s, pe_sink_t *out, int debug);

/*
 * /debug/pprof/threadcreate: the creation stacks of the live threads made
 * through pthread_create (threadcreate/count); the main thread and threads
 * made otherwise have a one-frame pseudo-stack.  NULL on ENOMEM.
 */
pe_prof_t *pe_stacks_threadcreate(void);

/* Fork child: no capture is in flight any more. */
void pe_stacks_atfork_child(void);

#endif /* PE_STACKS_H */
