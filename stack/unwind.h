/*
 * unwind.h: stack capture for every sampler (CPU, wall, heap, threads, mutex).
 *
 * libunwind.so.8 is dlopen'd RTLD_LOCAL (its _Unwind_* never enter the global
 * scope, so the program's C++ exceptions keep their own unwinder).  While our
 * unwinder runs, the interposed dl_iterate_phdr answers from a snapshot of the
 * loaded objects, so a signal that lands inside the dynamic loader can never
 * wait on the loader lock.  Inside dlopen/dlclose (this thread or any thread
 * in dlclose) only the leaf is captured.
 *
 * Signal-safe: pe_unwind_signal and pe_unwind_here, once pe_unwind_init ran.
 */
#ifndef PE_UNWIND_H
#define PE_UNWIND_H

#include <link.h>
#include <stdint.h>

#include "../preload/pe.h"

/* Load libunwind and prime this thread; called from the constructor. 0 or -errno. */
int pe_unwind_init(void);
/* Prime libunwind's per-thread state outside signal context (thread start). */
void pe_unwind_prime_thread(void);
/* Create libunwind's process-wide state (its pthread key, taking the low index
   pe_unwind_init reserved); from our server thread, once the program has lived
   a little (http/server.c). */
void pe_unwind_warm(void);

/*
 * Capture the stack interrupted by a signal: pcs[0] is the interrupted PC
 * (exact), then return addresses.  `uc` is the handler's ucontext.  Returns
 * the number of frames (>= 1), the handler's own frames removed.
 */
PE_SIGSAFE int pe_unwind_signal(void *uc, uintptr_t *pcs, int max);
/*
 * Set by pe_unwind_signal when the stack it returned is cut: it stopped
 * where neither DWARF nor the frame pointer could go on (JIT code without a
 * usable frame pointer), before the outermost frame and before max.
 */
extern PE_TLS int pe_unwind_cut;

/*
 * Capture the caller's stack: pcs[0] is a return address in the function that
 * called pe_unwind_here's caller, after skipping `skip` more frames.
 * Returns the number of frames (0 when unwinding is unsafe right now).
 */
PE_SIGSAFE int pe_unwind_here(uintptr_t *pcs, int max, int skip);

/*
 * The heap sampler's cheaper pe_unwind_here (heap/sample.c: a sample per
 * ~500 allocations, where a frame and a copy count): begin makes the same
 * checks and pins the same snapshot, then returns libunwind's unw_backtrace
 * for the caller to call from its own frame straight into its buffer (so
 * pcs[0] is in the caller; it trims its own frames), and end unpins; end
 * returns 0 when the walk stopped in JIT code (pe_unwind_here walks such
 * stacks again).  begin returns NULL, with nothing pinned, when libunwind is
 * not usable now: use pe_unwind_here.  Nothing between them may unwind.
 */
typedef int (*pe_unwind_bt_fn)(void **, int);
PE_SIGSAFE pe_unwind_bt_fn pe_unwind_heap_begin(void);
PE_SIGSAFE int pe_unwind_heap_end(const uintptr_t *pcs, int n, int max);
/* Tried first, instead of begin and end: the walk by cached unwind-table
   rules (stack/cfi.h) from the frame of pc, whose stack pointer (the CFA
   of its callee) and rbp are sp and bp.  -1 when it gave up or cannot run
   now (this thread's stack bounds unknown, sp outside them, already inside
   an unwinder or the loader): then begin. */
PE_SIGSAFE int pe_unwind_heap_fast(uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t *pcs,
                                   int max);

/*
 * Walk a copy of another moment's stack (sampler/engine_perf.c: a perf
 * event's user registers ip, sp, bp and the `len` bytes of stack from sp
 * the kernel copied) by the heap walk's cached unwind-table rules
 * (stack/cfi.h), with a frame-pointer step where no rule is known (JIT
 * code, objects without tables).  Reads nothing but the copy.  pcs[0] = ip
 * (exact), then return addresses; the number of frames (>= 1).  *how says
 * how it ended: WHOLE (the outermost frame, or max), DEEPER (at the copy's
 * end with the stack going on: the kernel copies up to the first page it
 * cannot read without a fault, so a copy may be short of what was asked),
 * CUT (where neither a rule nor the frame pointer goes on, as
 * pe_unwind_cut).  Not in a signal handler (a rule's first use may read
 * an object's tables, as the heap walk's).
 */
enum { PE_UNWIND_COPY_WHOLE = 0, PE_UNWIND_COPY_DEEPER = 1, PE_UNWIND_COPY_CUT = 2 };
int pe_unwind_copy(uintptr_t ip, uintptr_t sp, uintptr_t bp, const uint8_t *stack, size_t len,
                   uintptr_t *pcs, int max, int *how);

/* Bookkeeping from the dlopen/dlclose/dl_iterate_phdr interposers (preload/process_hooks.c). */
void pe_unwind_objects_changed(void); /* after dlopen/dlclose: rebuild snapshot, flush caches */
PE_TESTONLY extern int pe_unwind_dlclose_busy; /* > 0 while any thread is inside dlclose */
/*
 * Around the real dlclose, instead of touching pe_unwind_dlclose_busy directly:
 * begin raises the count and then waits (yielding) until no handler that
 * started before it is still reading loaded objects, so nothing is unmapped
 * under an unwinder; end lowers it.  Call pe_unwind_objects_changed() between
 * the real dlclose and end.  Not signal-safe.
 */
void pe_unwind_dlclose_begin(void);
void pe_unwind_dlclose_end(void);
/* Fork child (preload/events.c): forget the pins, lock and dlclose count of gone threads. */
void pe_unwind_atfork_child(void);
/* Fork child whose parent forked during libunwind's first walk (its init
   lock may be held by a gone thread): frame pointers only from now on. */
void pe_unwind_forsake(void);
/* Answer dl_iterate_phdr from the snapshot (used while pe_tls.in_unwind). */
PE_SIGSAFE int pe_unwind_iterate_snapshot(int (*cb)(struct dl_phdr_info *, size_t, void *),
                                          void *data);

#endif /* PE_UNWIND_H */
