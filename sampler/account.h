/*
 * account.h: what a sampled profile could not see, and why (issue 38): the
 * threads no sample can reach (they block SIGPROF; the process is not
 * dumpable, so /proc gives no stack either; a seccomp filter of their own),
 * and what a truncated sample's leaf was (code without unwind information,
 * JIT code, or the loader or our unwinder interrupted).  Nothing is ever
 * silent: each count becomes a profile comment, a line of
 * the index page, or a note on a thread of goroutine?debug=2.
 *
 * The counts are read from /proc/self/task/TID/status (preload/proc.h) when
 * asked; nothing here runs in a signal handler or holds a lock of the sampler.
 *
 * Signal-safe: no.
 */
#ifndef PE_SAMPLER_ACCOUNT_H
#define PE_SAMPLER_ACCOUNT_H

#include <stdint.h>
#include <sys/types.h>

#include "../profile/profile.h"
#include "../sink/sink.h"

#define PE_UNSAMPLED_TIDS 16 /* tids named in a note; the rest only counted */
/* Threads looked at, at most (one /proc read each: 30,000 threads would take 0.5 s) */
#define PE_UNSAMPLED_SCAN 4096

typedef struct pe_unsampled_s {
    int threads;    /* application threads looked at (ours left out; PE_UNSAMPLED_SCAN at most) */
    int blocked;    /* of them, SIGPROF blocked */
    int seccomp;    /* of them, under a seccomp filter (the process itself is not) */
    int undumpable; /* 1: /proc gives no stack of any thread (not dumpable, not root) */
    int ntids;      /* blocking threads named in tids[] */
    pid_t tids[PE_UNSAMPLED_TIDS];
} pe_unsampled_t;

/* Count this process's application threads as above, now. */
void pe_sampler_unsampled(pe_unsampled_t *u);
/*
 * Add one comment per reason to p, a profile of kind `oncpu` (1: CPU time,
 * 0: wall-clock), from a count made now: "unsampled: N threads block SIGPROF
 * ...".  Nothing when every thread can be sampled.
 */
void pe_sampler_unsampled_comment(pe_prof_t *p, int oncpu);
/* The same as one HTML paragraph for the index page (nothing when all is well). */
void pe_sampler_unsampled_html(pe_sink_t *s);
/*
 * Why thread tid of this process cannot be sampled, as a short phrase for
 * goroutine?debug=2 ("blocks SIGPROF: no CPU or wall sample reaches it"), or
 * NULL.  `buf` holds the phrase.
 */
const char *pe_sampler_thread_unsampled(pid_t tid, char *buf, size_t len);

/*
 * Truncated samples (kept with their leaf frame only), by what the leaf was.
 * pe_sampler_trunc_why: the class of a leaf pc (dladdr: collector thread,
 * never a handler); pe_sampler_trunc_comment: one comment per non-zero class.
 */
enum { PE_TRUNC_NOUNWIND, PE_TRUNC_NOOBJECT, PE_TRUNC_OURS, PE_TRUNC_N };
int pe_sampler_trunc_why(uintptr_t leaf);
void pe_sampler_trunc_comment(pe_prof_t *p, const uint64_t why[PE_TRUNC_N]);

#endif /* PE_SAMPLER_ACCOUNT_H */
