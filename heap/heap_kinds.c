/*
 * heap_kinds.c: the heap's profile kinds (sampler/kind.h).  Go's heap and
 * allocs are recorded kinds over the one per-stack table of the always-on
 * sampling (heap.c), the same records under two default types; allocs_profile
 * is ProfileEndpoints.jl's Bernoulli recording (allocs.c), a session kind.
 * Why each cannot answer now is said here once: the index shows it and the
 * 503 says it.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <stdlib.h>

#include "../sampler/kind.h"
#include "heap.h"

const char *
pe_heap_unavailable(void)
{
    if (!pe_heap_available())
        return pe_heap_reason();
    return pe_heap_rate() > 0 ? NULL
                              : "heap sampling is off (PROFEP_HEAP_RATE=0); set PROFEP_HEAP_RATE "
                                "to a mean number of bytes, e.g. 524288";
}

/* ---- heap, allocs: the sampled per-stack totals ------------------------------------ */

static int
heap_snap(void **recs, int *n)
{
    return pe_heap_snapshot((pe_heap_rec_t **)recs, n);
}

static void
heap_delta(void *now, int n, const void *before, int nbefore)
{
    pe_heap_delta(now, n, before, nbefore);
}

static pe_prof_t *
heap_build(void *recs, int n, int64_t duration_ns)
{
    return pe_heap_profile(recs, n, pe_kind_heap.default_type, duration_ns);
}

static pe_prof_t *
allocs_build(void *recs, int n, int64_t duration_ns)
{
    return pe_heap_profile(recs, n, pe_kind_allocs.default_type, duration_ns);
}

static int
heap_text(pe_sink_t *out, void *recs, int n)
{
    return pe_heap_write_text(out, recs, n);
}

/* What Go's heap and allocs profiles share: one table, four types, its ages.
   The types are every heap profile's (profile.c reads them from here). */
#define HEAP_TABLE_ROW                                                                             \
    .types = {{"alloc_objects", "count"},                                                          \
              {"alloc_space", "bytes"},                                                            \
              {"inuse_objects", "count"},                                                          \
              {"inuse_space", "bytes"}},                                                           \
    .ntypes = 4, .period_type = {"space", "bytes"}, .flags = PE_KIND_F_AGES,                       \
    .unavailable = pe_heap_unavailable, .rec_size = sizeof(pe_heap_rec_t), .snapshot = heap_snap,  \
    .delta = heap_delta, .text = heap_text

/* The live heap (Go's /debug/pprof/heap): inuse_space by default. */
const pe_kind_t pe_kind_heap = {
    .name = "heap",
    .default_type = "inuse_space",
    .build = heap_build,
    HEAP_TABLE_ROW,
};

/* The same table as Go's /debug/pprof/allocs: alloc_space by default. */
const pe_kind_t pe_kind_allocs = {
    .name = "allocs",
    .default_type = "alloc_space",
    .build = allocs_build,
    HEAP_TABLE_ROW,
};

/* ---- allocs_profile: a recording of every malloc-family call with probability p ---- */

static const char *
allocs_profile_unavailable(void)
{
    return pe_heap_available() ? NULL : pe_heap_reason();
}

static int
allocs_profile_stop(int open_ended, int64_t duration_ns, pe_prof_t **p)
{
    uint64_t over_n = 0, over_b = 0;
    pe_heap_arec_t *v;
    double prob = 1;
    int n, rc;

    if ((rc = pe_heap_allocs_stop(open_ended, &v, &n, &prob, &over_n, &over_b)) < 0)
        return rc;
    *p = pe_heap_allocs_profile(v, n, prob, over_n, over_b, duration_ns);
    free(v);
    return *p ? 0 : -ENOMEM;
}

const pe_kind_t pe_kind_allocs_profile = {
    .name = "allocs_profile",
    .types = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}},
    .period_type = {"space", "bytes"},
    .default_type = "alloc_space",
    .unavailable = allocs_profile_unavailable,
    .title = "allocation recording",
    .session_start = pe_heap_allocs_start,
    .session_state = pe_heap_allocs_state,
    .session_stop = allocs_profile_stop,
};
