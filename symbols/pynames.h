/*
 * pynames.h: the names of CPython frames, as profiles see them.
 *
 * A Python frame travels through the samplers as a tagged "pc" (bit 63 set:
 * no user-space address has it on x86-64).  The signal handler writes a RAW
 * tag: the code object's address and the instruction index, nothing it would
 * have to dereference later.  The collector turns it into a NAMED tag (bit 62
 * set too) soon after, while the code object is still alive
 * (stack/pyframes.c); a NAMED tag is an index into this process-wide,
 * append-only table of (co_qualname, co_filename, co_firstlineno, line).
 * Entries are never removed or changed, so a profile may resolve its tags at
 * any later time.  Bounded: PE_PYNAMES_MAX entries and PE_PYNAMES_POOL bytes of
 * strings; beyond that new frames share entry 0, "<python>".
 *
 * Threads: add and get take a mutex (collector, HTTP threads).  Signal-safe:
 * only the PE_PY_* macros.
 */
#ifndef PE_PYNAMES_H
#define PE_PYNAMES_H

#include <stdint.h>

#include "../preload/pe.h"

#define PE_PY_TAG (1ULL << 63)
#define PE_PY_NAMED (1ULL << 62)
#define PE_PY_IS_TAG(pc) (((uint64_t)(pc)&PE_PY_TAG) != 0)
#define PE_PY_IS_NAMED(pc)                                                                         \
    (((uint64_t)(pc) & (PE_PY_TAG | PE_PY_NAMED)) == (PE_PY_TAG | PE_PY_NAMED))
#define PE_PY_IS_RAW(pc) (((uint64_t)(pc) & (PE_PY_TAG | PE_PY_NAMED)) == PE_PY_TAG)
/* RAW: bits 0-43 the code object's address / 8, bits 44-61 the instruction index (code units). */
#define PE_PY_IDX_MAX 0x3ffffu
#define PE_PY_RAW(code, idx)                                                                       \
    (PE_PY_TAG | ((uint64_t)((idx) > PE_PY_IDX_MAX ? PE_PY_IDX_MAX : (idx)) << 44) |               \
     (((uint64_t)(code) >> 3) & ((1ULL << 44) - 1)))
#define PE_PY_RAW_CODE(pc) ((uintptr_t)(((uint64_t)(pc) & ((1ULL << 44) - 1)) << 3))
#define PE_PY_RAW_IDX(pc) ((uint32_t)(((uint64_t)(pc) >> 44) & PE_PY_IDX_MAX))
#define PE_PY_NAMED_TAG(i) (PE_PY_TAG | PE_PY_NAMED | (uint64_t)(uint32_t)(i))

#define PE_PYNAMES_MAX 65536
#define PE_PYNAMES_POOL (4u << 20)

/* One frame's names; the strings live as long as the process. */
typedef struct pe_pyname_s {
    const char *qualname, *filename;
    int32_t firstlineno, line;
} pe_pyname_t;

/*
 * The NAMED tag for these names (copied; the same four values give the same
 * tag).  Strings are cut at 255 bytes.  Never fails: when full, entry 0.
 */
uint64_t pe_pynames_add(const char *qualname, const char *filename, int32_t firstlineno,
                        int32_t line);
/*
 * Names of a tag: a NAMED one from the table; a RAW one (never named: its code
 * object could not be read) or an unknown index as "<python>".
 */
void pe_pynames_get(uint64_t tag, pe_pyname_t *out);
/* Entries in use (tests). */
PE_TESTONLY uint32_t pe_pynames_count(void);

#endif /* PE_PYNAMES_H */
