/*
 * pprof.h: the pprof encoder (pprof.c), the model (profile.h) as a gzipped
 * perftools.profiles.Profile: what the profile endpoints answer by default and what
 * `go tool pprof` reads.  Its reader is decode.h.
 *
 * Signal-safe: no.
 */
#ifndef PE_PPROF_H
#define PE_PPROF_H

#include "../profile/profile.h"
#include "../sink/sink.h"

/* Resolves p (pe_prof_resolve) and streams it into out.  0 or a negative
   errno (the sink's first error, -ENOMEM). */
int pe_prof_write_pprof(pe_prof_t *p, pe_sink_t *out);

#endif /* PE_PPROF_H */
