/*
 * cfi.h: the heap sampler's stack walk by the loaded objects' own unwind
 * tables (.eh_frame_hdr and .eh_frame, the call frame information every
 * x86-64 object carries), with the rule for each return address read once
 * and kept.
 *
 * Why: a heap sample's unw_backtrace cost ~800 instructions and ~30 cache
 * misses, most of them fixed (its context and cursor, 2 KiB of stack that is
 * cold by the next sample), more than the rest of the sample together.  A
 * step here is one lookup in a table of single words and two loads from the
 * stack.
 *
 * What a rule holds: the caller's stack pointer (the CFA) is rsp + N or
 * rbp + N at this pc, the return address is at CFA - 8, and the caller's rbp
 * is unchanged or saved at CFA - 8k.  Anything else (a signal frame, a CFA
 * computed by an expression as realigned frames have, a pc no object's table
 * covers, JIT code) makes the walk give up, and the caller walks with
 * libunwind instead.  The walk reads the stack only between its start and
 * the thread's stack top, so even a wrong rule cannot fault.
 *
 * Signal-safe: pe_cfi_walk (no locks, no allocation); it reads the tables of
 * objects the caller keeps mapped (stack/unwind.c's pinned snapshot).
 */
#ifndef PE_CFI_H
#define PE_CFI_H

#include <stdint.h>

#include "../preload/pe.h"

/* Map the rule table; 0 or -errno.  Before it, every walk gives up. */
int pe_cfi_init(void);
/*
 * Walk from the frame of return address pc (the rule is read for pc - 1, the
 * call), whose stack pointer (its callee's CFA) and rbp are given, reading
 * the stack no higher than `hi` (the thread's stack top).  pcs[0] = pc, then
 * the return addresses above it, up to `max`.  Returns the number of frames
 * when it reached the outermost frame or `max`, -1 when it gave up.
 */
PE_SIGSAFE int pe_cfi_walk(uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t hi, uintptr_t *pcs,
                           int max);
/* The rule pe_cfi_walk keeps for return address pc (read from the tables at
   a miss), for walks over a copy of a stack (sampler/engine_perf.c): 1 and
   the fields as pe_cfi_rule_from gives them, 0 to give up. */
PE_SIGSAFE int pe_cfi_rule(uintptr_t pc, int *cfa_reg, int *cfa_off, int *rbp_slot);
/* Forget every rule (objects were unloaded: their addresses may be reused).
   Not while a walk runs (stack/unwind.c's dlclose handshake). */
void pe_cfi_flush(void);
/* Rules read from the tables since start-up (tests, the check build). */
PE_TESTONLY uint64_t pe_cfi_rules_read(void);

/* Supplied by stack/unwind.c.  pin: keep the loaded objects mapped while
   their tables are read (0: an object is being unloaded, do not read);
   eh_frame_hdr, while pinned: the tables of the object holding pc.  1
   found, 0 pc is in an object without them, -1 pc is in no object. */
PE_SIGSAFE int pe_unwind_tables_pin(void);
PE_SIGSAFE void pe_unwind_tables_unpin(void);
/* An object's unwind tables: its .eh_frame_hdr, in the loaded segment [lo, hi). */
typedef struct pe_cfi_tables_s {
    const uint8_t *hdr;
    uintptr_t lo, hi;
} pe_cfi_tables_t;
PE_SIGSAFE int pe_unwind_eh_frame_hdr(uintptr_t pc, pe_cfi_tables_t *t);

/*
 * The rule for return address pc from tables t, reading nothing outside
 * [t->lo, t->hi) whatever the tables hold (tests feed it corrupted copies):
 * 0 when they give none, else nonzero, with *cfa_reg (6 rbp, 7 rsp, -1 the
 * outermost frame), *cfa_off and *rbp_slot (rbp saved at CFA - 8 * slot, 0
 * unchanged) filled in.  The walk keeps the same in its table.
 */
PE_TESTONLY int pe_cfi_rule_from(const pe_cfi_tables_t *t, uintptr_t pc, int *cfa_reg, int *cfa_off,
                                 int *rbp_slot);

#endif /* PE_CFI_H */
