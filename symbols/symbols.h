/*
 * symbols.h: addresses to names.  The loaded objects (objects.c), their ELF
 * symbol tables and separate debug files (symbolize.c), JIT code's perf maps
 * (jitmap.c) and CPython frames' names (pynames.h).  The profile model
 * (profile/) asks here; nothing here knows of profiles.
 *
 * Threads: lookups are batched under one process-wide lock (pe_sym_begin ..
 * pe_sym_end), taken on the library's own threads only.
 *
 * Signal-safe: no.
 */
#ifndef PE_SYMBOLS_H
#define PE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "../preload/pe.h"
#include "dwarf.h"

/* Longest GNU build id we keep, in bytes (sha1 ids are 20). */
#define PE_SYM_BUILDID_MAX 64

/* ---- loaded objects (mappings.c) ---------------------------------------- */

/* One object from dl_iterate_phdr, copied out so it outlives the loader lock. */
typedef struct pe_sym_obj_s {
    char *name;                                /* dlpi_name copy; "" for the main program */
    uintptr_t bias;                            /* dlpi_addr */
    uintptr_t lo, hi;                          /* span of its PT_LOAD segments */
    char build_id[2 * PE_SYM_BUILDID_MAX + 1]; /* lowercase hex, "" if none */
    int is_vdso;
    int is_main;
} pe_sym_obj_t;

/* Snapshot the loaded objects, sorted by lo.  Returns 0 or -ENOMEM. */
int pe_sym_objs_snapshot(pe_sym_obj_t **objs, size_t *n);
void pe_sym_objs_free(pe_sym_obj_t *objs, size_t n);
/* The object whose PT_LOAD span holds addr, or NULL. */
const pe_sym_obj_t *pe_sym_objs_find(const pe_sym_obj_t *objs, size_t n, uintptr_t addr);

/* ---- symbols (symbolize.c) ---------------------------------------------- */

typedef struct pe_sym_batch_s pe_sym_batch_t;

/*
 * Start a batch of lookups: takes the process-wide symbol cache lock and
 * snapshots the loaded objects.  Returns 0 or -ENOMEM; on success the caller
 * must call pe_sym_end.
 */
int pe_sym_begin(pe_sym_batch_t **syms);
/*
 * Name of the function holding addr and its start address, or NULL.  The name
 * lives in the cache and is valid until pe_sym_end.
 */
const char *pe_sym_lookup(pe_sym_batch_t *syms, uintptr_t addr, uintptr_t *start);
void pe_sym_end(pe_sym_batch_t *syms);

/*
 * Source places of addr, innermost first: out[0] the innermost inlined
 * function with addr's own file and line, each next one its caller at the call
 * site, out[n-1] the function the code belongs to (pe_dw_frame_t: names raw,
 * as the debug info has them).  Read from the object's DWARF, in the object or
 * its separate debug file (dwarf.c).  Returns n, 0 when nothing is known, or
 * -E2BIG / -ETIMEDOUT when the batch's limits (pe_sym_lines_limits) were
 * reached.  Strings are valid until pe_sym_end.
 */
int pe_sym_lines(pe_sym_batch_t *syms, uintptr_t addr, pe_dw_frame_t *out, int max);
/* The batch's bounds on debug info: bytes kept (0: no lines at all) and the CPU
   time this thread may spend reading it from now (ns, 0: no bound).  CPU, not
   wall time: a busy machine stretches the one and not the other.  Whatever was
   read before a bound is reached is kept for the next batch. */
void pe_sym_lines_limits(pe_sym_batch_t *syms, size_t budget, int64_t cpu_ns);

/* ---- JIT code names (jitmap.c) ------------------------------------------ */

/* Directory of perf-PID.map files ("/tmp"; tests point it elsewhere). */
PE_TESTONLY extern const char *pe_sym_jit_dir;
/* Index what the runtime appended to its perf map / jitdump since the last
   call.  Called by pe_sym_begin, under the symbol cache lock. */
void pe_sym_jit_begin(void);
/* Name of the newest JIT entry covering addr and its start, or NULL.  Valid
   until pe_sym_jit_end. */
const char *pe_sym_jit_lookup(uintptr_t addr, uintptr_t *start);
/* Free the batch's names (pe_sym_end). */
void pe_sym_jit_end(void);
/* 1 when the last batch found a perf map or jitdump of this process (a hint's
   guess: any thread, no lock). */
int pe_sym_jit_found(void);
/* Entries indexed, lines refused as malformed, entries dropped past the cap. */
PE_TESTONLY void pe_sym_jit_stats(size_t *entries, uint64_t *malformed, uint64_t *dropped);

/*
 * Symbolize one address of this process for /debug/pprof/symbol: copies the
 * function's (mangled) name into buf[len] and returns buf, or NULL when the
 * address is in no known function.  Thread-safe (takes the symbol cache lock).
 */
const char *pe_sym_symbolize(uintptr_t addr, char *buf, size_t len);

/* Fork child (a tree member serves again): the symbol cache's lock let go. */
void pe_sym_atfork_child(void);

/* Directory of separate debug files by build id (default /usr/lib/debug/.build-id). */
PE_TESTONLY extern const char *pe_sym_debug_dir;

#endif /* PE_SYMBOLS_H */
