/*
 * dwarf.h: source locations with inlined frames from an object's DWARF
 * (what `llvm-symbolizer --inlining` prints), read by our own parser over
 * read-only mappings of the object or its separate debug file.  DWARF 2-5 as
 * GCC 12 and Clang 14 emit it; zlib-compressed sections; no split DWARF or
 * dwz alternate files.  The module owns every object it opens and all the
 * tables it decodes; callers own only their output arrays.
 *
 * Threading: callers serialize every call (the symbol cache lock); there are
 * no locks inside.  Calls may malloc and never print.
 *
 * Signal-safe: no.
 */
#ifndef PE_SYMBOLS_DWARF_H
#define PE_SYMBOLS_DWARF_H

#include <stddef.h>
#include <stdint.h>

#include "../preload/pe.h"

typedef struct pe_dw_frame_s {
    const char *name; /* DW_AT_linkage_name (mangled) when present (also via
                         abstract_origin/specification), else DW_AT_name; NULL if unknown */
    const char *file; /* source path as llvm-symbolizer prints it (comp_dir/include_dir/file joined,
                         absolute when DWARF gives enough); NULL if unknown */
    uint32_t line;    /* 0 = unknown */
    uint32_t column;
} pe_dw_frame_t;

typedef struct pe_dw_obj_s pe_dw_obj_t;

/*
 * Find and open the DWARF of an object file on disk: `path` (the mapped
 * file), `build_id` (lowercase hex, "" if none), `debug_dir` (e.g.
 * "/usr/lib/debug", holding .build-id/).  Search order: DWARF in the object
 * itself; <debug_dir>/.build-id/xx/rest.debug; .gnu_debuglink name in the
 * object's dir, its .debug/ subdir, <debug_dir>/<object's dir>/ -- a
 * debuglink candidate is accepted only when its build id matches or (no
 * build id) its CRC32 matches.  Cached by build id (else
 * path+dev+ino+mtime); a negative answer is cached too.  Returns NULL when
 * no usable DWARF.  The object stays valid until pe_dw_trim(); going over
 * the budget only drops its decoded tables, which later lookups rebuild.
 */
pe_dw_obj_t *pe_dw_open(const char *path, const char *build_id, const char *debug_dir);

/*
 * Inline chain at link-time virtual address `vaddr` (runtime address minus
 * load bias, as in the ELF's own p_vaddr space): out[0] is the innermost
 * (inlined) function with the source line of vaddr, each next entry its
 * caller with the call site's line (DW_AT_call_file/DW_AT_call_line),
 * out[n-1] the DW_TAG_subprogram.  Returns n (0: no information for this
 * address), or -E2BIG (memory budget reached), -ETIMEDOUT (deadline
 * passed).  Strings stay valid until the next pe_dw_open/pe_dw_trim/
 * pe_dw_set_limits call.  When the line table has a row but no DIE covers
 * the pc, returns 1 frame with name NULL and the line.  A chain deeper than
 * `max` keeps its innermost `max` frames.
 */
int pe_dw_lookup(pe_dw_obj_t *o, uint64_t vaddr, pe_dw_frame_t *out, int max);

/*
 * Bounds: total bytes of decoded tables + decompressed sections kept
 * (budget; evicts least recently used objects first), and a deadline in ns
 * on the calling thread's CPU clock (CLOCK_THREAD_CPUTIME_ID; 0 = none) for
 * lookups from now on: past it a lookup answers -ETIMEDOUT and every table
 * built so far is kept for later lookups.
 */
void pe_dw_set_limits(size_t budget_bytes, int64_t deadline_ns);

/* Drop every cached object (e.g. after a dlclose) and free everything. */
PE_TESTONLY void pe_dw_trim(void);

/* Bytes currently held (for tests and the profile's comment). */
PE_TESTONLY size_t pe_dw_bytes(void);

#endif /* PE_SYMBOLS_DWARF_H */
