/*
 * heapsnapshot.h: the live heap as a V8 .heapsnapshot (heapsnapshot.c), for
 * Chrome DevTools and memlab; the objects come from heap/, the names from the
 * model (profile.h).
 *
 * Signal-safe: no.
 */
#ifndef PE_HEAPSNAPSHOT_H
#define PE_HEAPSNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "../profile/profile.h"
#include "../sink/sink.h"

/*
 * The live heap as a V8 .heapsnapshot JSON document (heapsnapshot.c), for
 * Chrome DevTools' Memory tab and memlab: a synthetic root, a trie of frame
 * ("object") nodes by function name (outermost first, shared prefixes shared) built from
 * the samples' stacks, and one "native" node per live object under its leaf
 * frame, named after it, so that the retained size of a frame node is the
 * bytes live under that call path.  Two steps, so that a failure can still be
 * answered with an error before any byte is sent:
 *
 *   pe_prof_hsnap_build   resolves the profile and lays out the graph; copies
 *                         what it needs of objs (the caller may free them).
 *                         0, -EINVAL (a sample index out of range), -E2BIG
 *                         (more nodes than 32-bit fields can address) or -ENOMEM.
 *   pe_prof_hsnap_write   streams the document into `out` with a 64 KiB buffer;
 *                         0 or the sink's first error.  Memory: the layout
 *                         (about 4 bytes per object and 40 per frame node).
 *
 * Object sizes are 32-bit numbers in the format (DevTools and memlab read them
 * into Uint32Arrays); callers clamp.  Node ids are odd and unique within one
 * snapshot only.  The profile p must outlive the hsnap (its strings are used).
 */
typedef struct pe_prof_hsnap_obj_s {
    uint32_t sample; /* index of the sample (pe_prof_sample) whose stack allocated it */
    uint32_t size;   /* self size, bytes */
} pe_prof_hsnap_obj_t;

typedef struct pe_prof_hsnap_s pe_prof_hsnap_t;

int pe_prof_hsnap_build(pe_prof_t *p, const pe_prof_hsnap_obj_t *objs, size_t n,
                        pe_prof_hsnap_t **out);
int pe_prof_hsnap_write(const pe_prof_hsnap_t *h, pe_sink_t *out);
void pe_prof_hsnap_free(pe_prof_hsnap_t *h);

#endif /* PE_HEAPSNAPSHOT_H */
