/*
 * decode.h: pprof profiles read back, for merging several processes' profiles
 * into one (http/h_tree_merge.c's pid=all): the one decoder of the tree, as
 * pprof.c is its one pprof encoder.
 *
 * A merge starts zeroed.  The first profile added sets the sample types (at
 * most four), period and time of the result; a later one with other sample
 * types is refused.  Samples are added by their locations' lines, innermost
 * first (function, source file and line, the inlined calls as frames of
 * their own; an unsymbolized location by its object, "[postgres]", as the
 * views name it, or its address "0x..." when no mapping names one), with at most
 * two of their own labels plus the caller's.  Not thread-safe: one merge per
 * request.
 *
 * Signal-safe: no.
 */
#ifndef PE_DECODE_H
#define PE_DECODE_H

#include <stddef.h>

#include "../profile/profile.h"

typedef struct pe_prof_merge_s {
    pe_prof_t *prof; /* made from the first profile added; the caller frees it */
    int ntypes;
    char types[4][2][64];
    int merged; /* profiles added */
} pe_prof_merge_t;

/*
 * Inflate a gzipped profile of len bytes (into at most `max` bytes), decode
 * it and add its samples to m, each with the labels extra[0..nextra) (at most
 * 2; a label of the profile with one of their keys is dropped).  NULL, or why
 * it was not added: "its profile is not gzip", "... is cut short", "... is too
 * large", "its profile does not decode", "other sample types", "out of memory".
 */
const char *pe_prof_merge_add_gz(pe_prof_merge_t *m, const void *gz, size_t len, size_t max,
                                 const pe_prof_label_t *extra, int nextra);

#endif /* PE_DECODE_H */
