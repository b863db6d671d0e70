/*
 * pyframes.h: CPython's own frames in every stack we capture (CPU, wall,
 * thread stacks), interleaved with the native frames as py-spy --native does.
 *
 * When the program is CPython of a supported version (3.11, 3.12; the offsets
 * are stated in pyframes.c and checked against CPython's headers by
 * test/unit/u_pyframes.c), each capture also walks the sampled thread's
 * PyThreadState (found in _PyRuntime's thread list by native_thread_id) from
 * cframe->current_frame through ->previous, and puts those frames, as RAW tags
 * (symbols/pynames.h), in front of the native _PyEval_EvalFrameDefault frame
 * that runs them: each such native frame runs the Python frames up to and
 * including the next one marked is_entry.  Python frames left when the native
 * stack ends (a cut native stack) go at its outer end.
 *
 * Memory is read only with process_vm_readv on our own pid, which fails with
 * EFAULT instead of faulting, so a frame freed or unmapped under us costs a
 * wrong or missing frame, never a crash.  Bounded: PE_PY_MAX_FRAMES Python
 * frames, PE_PY_MAX_THREADS thread states per lookup.
 *
 * Names are resolved by the collector (pe_py_name_pcs), within one drain
 * period (20 ms) of the sample, not by the profile at the end: a code object
 * can be freed by then.  A lookup reads the code object again (at most every
 * 10 ms per (code, instruction)) and checks its type, qualname, filename and
 * first line against the cache, so a freed-and-reused address is not given
 * the old name.
 *
 * Signal-safe: pe_py_interleave only.
 */
#ifndef PE_PYFRAMES_H
#define PE_PYFRAMES_H

#include <stdint.h>
#include <sys/types.h>

#include "../preload/pe.h"

#define PE_PY_MAX_FRAMES 128
#define PE_PY_MAX_THREADS 4096

/*
 * Find the interpreter (once per process; later calls return at once): its
 * exported _PyRuntime, Py_Version, PyCode_Type, PyUnicode_Type and the extent
 * of _PyEval_EvalFrameDefault.  A CPython of another version is left with
 * native frames only, and pe_py_note says so (nothing goes to stderr).  Not signal-safe; call
 * before the first sample that should carry Python frames (window open, stack capture).
 */
void pe_py_init(void);
/* 1 when Python frames are captured (tests, comments). */
int pe_py_active(void);
/* After pe_py_init: one line for the profiles' comments and the index page
   ("python: CPython 3.11.2, Python frames in every stack", or why native
   frames only); "" when the program is not CPython. */
const char *pe_py_note(void);

/*
 * In the signal handler, after the native unwind of the interrupted thread:
 * merge this thread's Python frames into pcs[0..n) (leaf first, capacity max).
 * Returns the new count (n when there are none).
 */
PE_SIGSAFE int pe_py_interleave(uintptr_t *pcs, int n, int max);
/* The same for another thread `tid` that is off the CPU (quiet captures). */
int pe_py_interleave_tid(pid_t tid, uintptr_t *pcs, int n, int max);
/* Collector: turn every RAW tag of pcs[0..n) into a NAMED one. */
void pe_py_name_pcs(uintptr_t *pcs, int n);

/* Decode a 3.11 location table (co_linetable) at instruction `idx`: the line, or -1. */
PE_TESTONLY int pe_py_line311(const unsigned char *tab, size_t len, int firstlineno, uint32_t idx);

#endif /* PE_PYFRAMES_H */

/* ---- the layouts (pyframes.c; test/unit/u_pyframes.c checks them with offsetof) ---- */

/* Byte offsets into CPython's structures for one minor version. */
typedef struct pe_py_layout_s {
    uint32_t hex_min, hex_max; /* PY_VERSION_HEX range */
    /* _PyRuntimeState, PyInterpreterState, PyThreadState, _PyCFrame */
    uint16_t rt_interp_head, is_next, is_threads_head;
    uint16_t ts_next, ts_cframe, ts_native_tid, cf_current;
    /* _PyInterpreterFrame */
    uint16_t fr_code, fr_previous, fr_prev_instr, fr_is_entry, fr_owner;
    /* 3.11 marks the first frame of each _PyEval_EvalFrameDefault call is_entry
       (fr_is_entry); 3.12 puts a shim frame owned by the C stack below it
       instead (owner == owner_cstack; fr_is_entry is then PE_PY_NO_FIELD). */
    uint8_t owner_cstack;
    /* PyCodeObject; PyObject, PyVarObject, PyBytesObject */
    uint16_t co_firstlineno, co_filename, co_qualname, co_linetable, co_code;
    uint16_t ob_type, ob_size, bytes_sval;
    /* PyASCIIObject (length, state), PyCompactUnicodeObject (utf8_length, utf8) */
    uint16_t str_length, str_state, ascii_size, utf8_length, utf8, compact_size;
} pe_py_layout_t;

#define PE_PY_NO_FIELD 0xffffu
#define PE_PY_NO_OWNER 0xffu

PE_TESTONLY extern const pe_py_layout_t pe_py_layout_311, pe_py_layout_312;
