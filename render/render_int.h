/*
 * render_int.h: what the files of render/ share and nobody else sees (the
 * flame-graph order is flame_int.h's).
 *
 * Signal-safe: no.
 */
#ifndef PE_RENDER_INT_H
#define PE_RENDER_INT_H

#include <stddef.h>

/* ---- svg.c ---------------------------------------------------------------- */

/* name without glibc's symbol versions ("memcpy@@GLIBC_2.14"), in buf, or
   name itself when there is none or it does not fit (svg.c; the trace too). */
const char *pe_prof_no_versions(const char *name, char *buf, size_t len);

#endif /* PE_RENDER_INT_H */
