/*
 * profile.c: the heap's cumulative tables as profiles: the per-stack totals
 * (heap.c) as Go's heap profile (alloc_objects, alloc_space, inuse_objects,
 * inuse_space, unbiased) or its debug=1 text (raw sampled values and the rate,
 * which readers unbias with), the change between two snapshots, and the
 * /allocs_profile recording (allocs.c) scaled by 1/p.  The model and the text
 * layout are profile/'s and render/'s; every heap sample's stack goes in through
 * pe_heap_prof_add, so names and mappings match every other profile's.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "../preload/clock.h"
#include "../render/gotext.h"
#include "../sampler/kind.h"
#include "heap.h"

/* ---- helpers ------------------------------------------------------------------- */

static int64_t
cnt_val(uint64_t fx)
{
    return (int64_t)((fx + PE_HEAP_CNT_ONE / 2) / PE_HEAP_CNT_ONE);
}

static int64_t
bytes_val(uint64_t fx)
{
    return (int64_t)((fx + PE_HEAP_BYTES_ONE / 2) / PE_HEAP_BYTES_ONE);
}

int
pe_heap_prof_add(pe_prof_t *p, uint32_t stack, const int64_t *values, const pe_prof_label_t *labels,
                 int nlabels)
{
    uintptr_t pcs[PE_HEAP_MAX_FRAMES];
    int n = pe_heap_stack(stack, pcs, PE_HEAP_MAX_FRAMES);

    if (n <= 0)
        return pe_prof_add_named(p, "[unknown]", values, labels, nlabels);
    return pe_prof_add(p, pcs, n, 0, values, labels, nlabels);
}

/* ---- per-stack totals ------------------------------------------------------------ */

void
pe_heap_delta(pe_heap_rec_t *s1, int n1, const pe_heap_rec_t *s0, int n0)
{
    /* Both arrays are in ascending stack id order. */
    for (int i = 0, j = 0; i < n1; i++) {
        while (j < n0 && s0[j].stack < s1[i].stack)
            j++;
        if (j < n0 && s0[j].stack == s1[i].stack) {
            s1[i].alloc_cnt_fx -= s0[j].alloc_cnt_fx;
            s1[i].alloc_bytes_fx -= s0[j].alloc_bytes_fx;
            s1[i].raw_alloc_n -= s0[j].raw_alloc_n;
            s1[i].raw_alloc_b -= s0[j].raw_alloc_b;
        }
    }
}

pe_prof_t *
pe_heap_profile(const pe_heap_rec_t *v, int n, const char *deftype, int64_t duration_ns)
{
    /* the types are the kind's (heap_kinds.c) */
    const pe_kind_t *k = &pe_kind_heap;
    pe_prof_t *p = pe_prof_new(k->types, PE_KIND_NTYPES(k), &k->period_type, pe_heap_rate());
    pe_heap_stats_t st;

    if (!p)
        return NULL;
    pe_prof_set_default_type(p, deftype);
    pe_prof_set_time(p, pe_clock_ns(CLOCK_REALTIME) - duration_ns, duration_ns);
    for (int i = 0; i < n; i++) {
        int64_t vals[4] = {cnt_val(v[i].alloc_cnt_fx), bytes_val(v[i].alloc_bytes_fx),
                           cnt_val(v[i].inuse_cnt_fx), bytes_val(v[i].inuse_bytes_fx)};
        pe_prof_label_t lab = {"bytes", NULL, 0, NULL};

        if (!vals[0] && !vals[1] && !vals[2] && !vals[3])
            continue;
        /* Go's label: the average block size of the record. */
        lab.num = v[i].raw_alloc_n ? (int64_t)(v[i].raw_alloc_b / v[i].raw_alloc_n) : 0;
        if (pe_heap_prof_add(p, v[i].stack, vals, &lab, 1) < 0) {
            pe_prof_free(p);
            return NULL;
        }
    }
    pe_heap_get_stats(&st);
    if (*pe_heap_attach_note())
        pe_prof_comment(p, "heap sampling %s", pe_heap_attach_note());
    if (st.dropped_live || st.stacks_full)
        pe_prof_comment(p,
                        "heap sampling: %" PRIu64 " samples, %" PRIu64 " not listed for the heap "
                        "snapshot (table of %" PRIu64 "; still counted here), %" PRIu64
                        " without a stack slot",
                        st.samples, st.dropped_live, st.live_cap, st.stacks_full);
    return p;
}

static int
by_inuse_desc(const void *a, const void *b)
{
    const pe_heap_rec_t *x = a, *y = b;

    if (x->raw_inuse_b != y->raw_inuse_b)
        return x->raw_inuse_b > y->raw_inuse_b ? -1 : 1;
    return x->raw_alloc_b > y->raw_alloc_b ? -1 : x->raw_alloc_b < y->raw_alloc_b;
}

int
pe_heap_write_text(pe_sink_t *out, pe_heap_rec_t *v, int n)
{
    pe_prof_go_heap_t *g = malloc((n ? (size_t)n : 1) * sizeof(*g));
    pe_heap_stats_t st;

    if (!g)
        return out->err = -ENOMEM;
    qsort(v, (size_t)n, sizeof(*v), by_inuse_desc);
    for (int i = 0; i < n; i++)
        g[i] = (pe_prof_go_heap_t){v[i].stack, (int64_t)v[i].raw_inuse_n, (int64_t)v[i].raw_inuse_b,
                                   (int64_t)v[i].raw_alloc_n, (int64_t)v[i].raw_alloc_b};
    pe_prof_write_go_heap(out, g, n, 2 * pe_heap_rate(), pe_heap_stack);
    free(g);
    pe_heap_get_stats(&st);
    pe_sink_printf(out,
                   "\n# profendpoints heap sampling\n# rate = %" PRId64 "\n# samples = %" PRIu64
                   "\n# live_listed = %" PRIu64 " (table of %" PRIu64 ")\n# unlisted = %" PRIu64
                   "\n# stacks = %" PRIu64 " (%" PRIu64 " samples found the table full)\n",
                   pe_heap_rate(), st.samples, st.live, st.live_cap, st.dropped_live, st.stacks,
                   st.stacks_full);
    if (*pe_heap_attach_note())
        pe_sink_printf(out, "# %s\n", pe_heap_attach_note());
    return pe_prof_write_go_maps(out);
}

/* ---- the /allocs_profile recording ----------------------------------------------- */

pe_prof_t *
pe_heap_allocs_profile(const pe_heap_arec_t *v, int n, double prob, uint64_t over_n,
                       uint64_t over_b, int64_t duration_ns)
{
    const pe_kind_t *k = &pe_kind_allocs_profile;
    pe_prof_t *p = pe_prof_new(k->types, PE_KIND_NTYPES(k), &k->period_type, 0);

    if (!p)
        return NULL;
    pe_prof_set_default_type(p, k->default_type);
    pe_prof_set_time(p, pe_clock_ns(CLOCK_REALTIME) - duration_ns, duration_ns);
    pe_prof_comment(p,
                    "allocs_profile: every malloc-family call recorded with probability %g; "
                    "values scaled by %g",
                    prob, 1 / prob);
    if (*pe_heap_attach_note())
        pe_prof_comment(p, "allocs_profile %s", pe_heap_attach_note());
    for (int i = 0; i < n; i++) {
        int64_t vals[2] = {pe_round_i64((double)v[i].count / prob),
                           pe_round_i64((double)v[i].count * (double)v[i].size / prob)};
        pe_prof_label_t lab = {"bytes", NULL, (int64_t)v[i].size, NULL}; /* as Go's heap label */

        if (pe_heap_prof_add(p, v[i].stack, vals, &lab, 1) < 0)
            break;
    }
    if (over_n) {
        int64_t vals[2] = {pe_round_i64((double)over_n / prob),
                           pe_round_i64((double)over_b / prob)};
        pe_prof_add_named(p, "[allocs table full]", vals, NULL, 0);
    }
    return p;
}
