/*
 * profile_int.h: what the files of profile/ (the model, the naming pass, the
 * mappings, CPython frames) share and nobody else sees.  The model's data is
 * model.h's, which the encoders read too.
 *
 * Signal-safe: no.
 */
#ifndef PE_PROFILE_INT_H
#define PE_PROFILE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../symbols/symbols.h"
#include "model.h"
#include "profile.h"

/* ---- the model (model.c) ------------------------------------------------- */

/* Arena memory for p's lifetime (8-byte aligned), or NULL on ENOMEM. */
void *pe_prof_arena_alloc(pe_prof_t *p, size_t size);
/* A native function by raw (mangled) name and source file (NULL: unknown),
   created on first use with its readable names; its index, or -1 on ENOMEM. */
int64_t pe_prof_native_func(pe_prof_t *p, const char *raw, const char *src);

/* ---- the naming pass (naming.c) ------------------------------------------ */

/* Readable and short forms of a new function's raw name (readable: raw is
   readable already, only shortened).  0 or -ENOMEM. */
int pe_prof_func_names(pe_prof_t *p, pe_prof_func_t *f, const char *raw, int readable);

/* ---- CPython frames (pyloc.c) ------------------------------------------- */

/* Resolve a location whose address is a Python tag (pynames.h).  0 or -ENOMEM. */
int pe_prof_py_resolve(pe_prof_t *p, pe_prof_loc_t *loc);

/* ---- mappings (mappings.c) ----------------------------------------------- */

/* Re-read /proc/self/maps into p->maps (old entries kept).  0 or -errno. */
int pe_prof_maps_load(pe_prof_t *p);
/* Mapping index + 1 for addr among the current mappings, 0 if none. */
uint32_t pe_prof_maps_find(const pe_prof_t *p, uintptr_t addr);

#endif /* PE_PROFILE_INT_H */
