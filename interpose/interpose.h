/*
 * interpose.h: one table of interposed functions, installed two ways.
 *
 * Under LD_PRELOAD the loader binds every object's calls to our exported
 * definitions (preload/exports.map), which the table lists by name.  After an
 * attach (the library dlopen'ed into a running process) the objects are
 * already bound to libc: pe_interpose_attach() walks every loaded object's
 * relocation slots (DT_JMPREL and DT_RELA: R_X86_64_JUMP_SLOT, GLOB_DAT)
 * and points the slots of the table's names at our definitions, one aligned
 * 8-byte store each, read-only pages made writable for the store and given
 * their protection back; pe_interpose_detach() puts back what was there.
 * Objects loaded later are redirected from our dlopen interposer.  Never
 * redirected: our own object, the loader, the vDSO.  Design notes:
 * docs/DESIGN.md, "After an attach".
 *
 * Signal-safe: no (the loader's iterator, mprotect, /proc reads).
 */
#ifndef PE_INTERPOSE_H
#define PE_INTERPOSE_H

#include <stdint.h>

#include "../preload/pe.h"

/* ---- the table (table.c) ---------------------------------------------------------- */

/*
 * One interposed function: its name (our exported definition of that name
 * is the interposer, found in our own object by the name), the module whose
 * profile or guard it feeds, and where its interposer keeps the real
 * function, when the attach must point it at the program's own definition
 * (heap: the allocator the program's malloc slot was bound to, which need
 * not be libc's); NULL when the interposer resolves it itself (RTLD_NEXT:
 * libc's), and then a program whose definition is another is left alone
 * for that name.
 */
typedef struct pe_interpose_row_s {
    const char *name;
    const char *module; /* "heap", "contention", "events", "signals", "fd", "tree", "alone" */
    void **real;
} pe_interpose_row_t;

extern const pe_interpose_row_t pe_interpose_rows[];
extern const int pe_interpose_nrows;

/* ---- attach and detach (interpose.c) ------------------------------------------------ */

/*
 * Redirect every loaded object's relocation slots of the table's names to
 * our definitions, and start the heap in its after-attach way (heap.h:
 * pe_heap_attach, with PROFEP_HEAP_RATE).  A process already running under
 * LD_PRELOAD (our definitions already win) changes nothing and gets 0.
 * Objects whose slots cannot be written are left alone and named in the
 * heap profiles' comments (the note given to pe_heap_attach).  Any thread but a signal handler; not
 * concurrently with itself or detach.  0, or -errno (nothing redirected then).
 */
PE_NODISCARD int pe_interpose_attach(void);

/*
 * Put back exactly the values the slots had (objects loaded since
 * included, unloaded ones skipped), each page's protection as it was; stop
 * the heap's sampling.  A slot the program changed since (its value is not
 * ours any more) is left as it is.  Our code stays mapped: a thread may
 * still be inside an interposer.  No-op when not attached.
 */
void pe_interpose_detach(void);

/* From our dlopen interposer after the real dlopen returned (any thread):
   redirect the objects loaded since the last walk.  No-op when not attached. */
void pe_interpose_loaded(void);
/* From our dlclose interposer after the real dlclose returned: forget the
   saved slots of objects no longer loaded. */
void pe_interpose_unloaded(void);

#endif /* PE_INTERPOSE_H */
