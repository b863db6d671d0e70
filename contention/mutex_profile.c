/*
 * mutex_profile.c: the lock contention table (mutex.c) as profiles: the
 * change between two snapshots, the records a view shows (mutex: acquisitions
 * only; block: every wait), and Go's two forms, pprof (contentions/count and
 * delay/nanoseconds scaled by the sampling period) and the debug=1 text (raw
 * sampled values and the period, which readers multiply by).  The model and
 * the text layout are profile/'s and render/'s.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "../preload/clock.h"
#include "../preload/init.h"
#include "../render/gotext.h"
#include "../sampler/kind.h"
#include "mutex.h"

/* s1 -= s0, entry by entry (both from pe_mutex_snapshot, ascending id). */
static void
recs_delta(pe_mutex_rec_t *s1, int n1, const pe_mutex_rec_t *s0, int n0)
{
    /* Entries never move, so matching ids are the same (kind, stack). */
    for (int i = 0, j = 0; i < n1; i++) {
        while (j < n0 && s0[j].id < s1[i].id)
            j++;
        if (j < n0 && s0[j].id == s1[i].id) {
            s1[i].count -= s0[j].count;
            s1[i].delay_ns -= s0[j].delay_ns;
        }
    }
}

/* Keep in place the records a view shows: block, every kind; else lock
   acquisitions only; never empty ones.  Returns how many are kept. */
static int
recs_select(pe_mutex_rec_t *v, int n, int block)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        if (!v[i].count || (!block && v[i].kind != PE_MUTEX_KIND_LOCK))
            continue;
        v[k++] = v[i];
    }
    return k;
}

/*
 * The records as Go's contention profile: contentions/count and
 * delay/nanoseconds (default), the sampled values times the period
 * (PROFEP_MUTEX_RATE), period contentions/count; covering duration_ns up to
 * now; comments give the rate and any drops.  NULL on ENOMEM.
 */
static pe_prof_t *
recs_profile(const pe_mutex_rec_t *v, int n, int64_t duration_ns)
{
    int64_t rate = pe_mutex_rate();
    const pe_kind_t *kind = &pe_kind_mutex; /* block's types are the same */
    pe_prof_t *p = pe_prof_new(kind->types, PE_KIND_NTYPES(kind), &kind->period_type, rate);
    uintptr_t pcs[PE_MUTEX_MAX_FRAMES];
    pe_mutex_stats_t st;

    if (!p)
        return NULL;
    pe_prof_set_default_type(p, kind->default_type);
    pe_prof_set_time(p, pe_clock_ns(CLOCK_REALTIME) - duration_ns, duration_ns);
    for (int i = 0; i < n; i++) {
        int64_t vals[2] = {(int64_t)v[i].count * rate, (int64_t)v[i].delay_ns * rate};
        int k = pe_mutex_stack(v[i].id, pcs, PE_MUTEX_MAX_FRAMES);
        int rc = k > 0 ? pe_prof_add(p, pcs, k, 0, vals, NULL, 0)
                       : pe_prof_add_named(p, "[unknown]", vals, NULL, 0);
        if (rc < 0) {
            pe_prof_free(p);
            return NULL;
        }
    }
    pe_mutex_get_stats(&st);
    pe_prof_comment(p,
                    "1 in %" PRId64 " contended waits sampled (PROFEP_MUTEX_RATE); contentions "
                    "and delay are the sampled values times %" PRId64,
                    rate, rate);
    if (st.dropped || st.no_stack)
        pe_prof_comment(p,
                        "%" PRIu64 " sampled waits dropped (table full, bound %" PRIu64
                        " stacks), %" PRIu64 " without a stack",
                        st.dropped, st.capacity, st.no_stack);
    if (*pe_init_interpose_note())
        pe_prof_comment(p, "lock interposers %s", pe_init_interpose_note());
    return p;
}

static int
by_delay_desc(const void *a, const void *b)
{
    const pe_mutex_rec_t *x = a, *y = b;

    if (x->delay_ns != y->delay_ns)
        return x->delay_ns > y->delay_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Go's debug=1 text of the records (sorted in place by delay), "--- mutex:" or
   "--- contention:" (block), then our sampling comments.  0 or the sink's error. */
static int
recs_text(pe_sink_t *out, pe_mutex_rec_t *v, int n, int block)
{
    pe_prof_go_contention_t *g = malloc((n ? (size_t)n : 1) * sizeof(*g));
    pe_mutex_stats_t st;

    if (!g)
        return out->err = -ENOMEM;
    qsort(v, (size_t)n, sizeof(*v), by_delay_desc);
    for (int i = 0; i < n; i++)
        g[i] = (pe_prof_go_contention_t){v[i].id, v[i].delay_ns, v[i].count};
    pe_prof_write_go_contention(out, block ? "contention" : "mutex", pe_mutex_rate(), g, n,
                                pe_mutex_stack);
    free(g);
    pe_mutex_get_stats(&st);
    return pe_sink_printf(
        out,
        "# profendpoints lock contention sampling: 1 in %" PRId64 " waits recorded\n"
        "# sampled = %" PRIu64 "\n# dropped = %" PRIu64 " (table full, bound %" PRIu64
        " stacks)\n# without stack = %" PRIu64 "\n",
        pe_mutex_rate(), st.sampled, st.dropped, st.capacity, st.no_stack);
}

/* ---- the kinds (sampler/kind.h) -------------------------------------------------- */

static const char *
mutex_unavailable(void)
{
    if (pe_init_no_interposers())
        return pe_init_no_interposers();
    return pe_mutex_rate() > 0 ? NULL
                               : "lock contention profiling is off (PROFEP_MUTEX_RATE=0); "
                                 "set PROFEP_MUTEX_RATE=N to record 1 in N waits, e.g. 100";
}

static int
mutex_snap(void **recs, int *n)
{
    return pe_mutex_snapshot((pe_mutex_rec_t **)recs, n);
}

static void
mutex_recs_delta(void *now, int n, const void *before, int nbefore)
{
    recs_delta(now, n, before, nbefore);
}

static pe_prof_t *
mutex_build(void *recs, int n, int64_t duration_ns)
{
    return recs_profile(recs, recs_select(recs, n, 0), duration_ns);
}

static int
mutex_text(pe_sink_t *out, void *recs, int n)
{
    return recs_text(out, recs, recs_select(recs, n, 0), 0);
}

static pe_prof_t *
block_build(void *recs, int n, int64_t duration_ns)
{
    return recs_profile(recs, recs_select(recs, n, 1), duration_ns);
}

static int
block_text(pe_sink_t *out, void *recs, int n)
{
    return recs_text(out, recs, recs_select(recs, n, 1), 1);
}

/* Always on while PROFEP_MUTEX_RATE > 0 (the interposers record): no start or stop. */
const pe_kind_t pe_kind_mutex = {
    .name = "mutex",
    .types = {{"contentions", "count"}, {"delay", "nanoseconds"}},
    .period_type = {"contentions", "count"},
    .default_type = "delay",
    .unavailable = mutex_unavailable,
    .rec_size = sizeof(pe_mutex_rec_t),
    .snapshot = mutex_snap,
    .delta = mutex_recs_delta,
    .build = mutex_build,
    .text = mutex_text,
};

/* The same table, every wait (condition waits and timed-out locks too). */
const pe_kind_t pe_kind_block = {
    .name = "block",
    .types = {{"contentions", "count"}, {"delay", "nanoseconds"}},
    .period_type = {"contentions", "count"},
    .default_type = "delay",
    .unavailable = mutex_unavailable,
    .rec_size = sizeof(pe_mutex_rec_t),
    .snapshot = mutex_snap,
    .delta = mutex_recs_delta,
    .build = block_build,
    .text = block_text,
};
