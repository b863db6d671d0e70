/*
 * gotext.h: Go's legacy text profiles (gotext.c, runtime/pprof's debug=1 and
 * debug=2 forms): threads as goroutines, heap and contention records with
 * their stacks, and gperftools' MAPPED_LIBRARIES trailer.
 *
 * Signal-safe: no.
 */
#ifndef PE_GOTEXT_H
#define PE_GOTEXT_H

#include <stdint.h>

#include "../profile/profile.h"
#include "../sink/sink.h"

/*
 * debug=1 of a count profile (goroutine, threadcreate): "TITLE profile: total
 * N", then one group per sample, largest first: "N @ addr...", a `# labels:
 * {"capture":"..."}` line when the sample has a capture label, its frames
 * ("#\taddr\tname+off\tfile").  Resolves p.  0, the sink's first error or
 * -ENOMEM.
 */
int pe_prof_write_go_grouped(pe_prof_t *p, pe_sink_t *out, const char *title);

/*
 * debug=2, as Go prints goroutines: one block per sample, in sample order:
 * `goroutine TID [STATE, thread "NAME"]:` from the labels thread, state and
 * thread_name, then either "# no answer within the bound (WHY)" (label
 * no_answer) or a `# capture: NOTE` line (label capture_note, when present)
 * and the frames, each as `NAME(...)` and `\tFILE:LINE +0xOFF` (`\t[object]
 * +0xOFF` without a line; no offset for an inlined call); a blank line
 * between blocks.  The caller writes any header first.  Resolves p.
 */
int pe_prof_write_go_threads(pe_prof_t *p, pe_sink_t *out);

/* Where a record's stack comes from: return addresses, leaf first, into
   pcs[max]; returns how many (<= 0: none).  heap.h and mutex.h have one each. */
typedef int (*pe_prof_stack_fn)(uint32_t stack, uintptr_t *pcs, int max);

/* One record of Go's heap text: sampled objects and bytes in use and allocated. */
typedef struct pe_prof_go_heap_s {
    uint32_t stack;
    int64_t inuse_n, inuse_b, alloc_n, alloc_b;
} pe_prof_go_heap_t;

/*
 * Go's debug=1 heap text (runtime/pprof writeHeapInternal): "heap profile: I:
 * IB [A: AB] @ heap/RATE" with the totals, then "I: IB [A: AB]" and the stack
 * of each record, in the caller's order.  heap_rate is what follows "heap/"
 * (Go writes 2 * MemProfileRate; readers unbias with it, 2 meaning "already
 * unbiased").  The caller appends its comments (and pe_prof_write_go_maps).
 */
int pe_prof_write_go_heap(pe_sink_t *out, const pe_prof_go_heap_t *v, int n, int64_t heap_rate,
                          pe_prof_stack_fn stack);

/* One record of Go's contention text: total delay and count of sampled waits. */
typedef struct pe_prof_go_contention_s {
    uint32_t stack;
    uint64_t delay_ns, count;
} pe_prof_go_contention_t;

/*
 * Go's debug=1 contention text (runtime/pprof writeProfileInternal): "---
 * NAME:", cycles/second=1000000000 (delays are in nanoseconds), "sampling
 * period=PERIOD" (readers multiply by it), then "DELAY COUNT" and the stack of
 * each record, in the caller's order.
 */
int pe_prof_write_go_contention(pe_sink_t *out, const char *name, int64_t period,
                                const pe_prof_go_contention_t *v, int n, pe_prof_stack_fn stack);

/* gperftools' MAPPED_LIBRARIES trailer (this process's /proc/self/maps), which
   pprof's legacy heap parser reads to map addresses to binaries. */
int pe_prof_write_go_maps(pe_sink_t *out);

#endif /* PE_GOTEXT_H */
