/*
 * h_mutex.c: the lock contention endpoints, /debug/pprof/mutex (mutex and
 * rwlock acquisitions that waited) and /debug/pprof/block (every sampled wait,
 * condition waits included), in Go's formats: pprof with contentions/count and
 * delay/nanoseconds scaled by the sampling period, `seconds=N` for the delta
 * over N s, `debug=1` for Go's legacy text; and godeltaprof's delta_mutex and
 * delta_block, the change since the previous call of that path.  Data comes from sampler/mutex.h;
 * profiles are built only through proto/profile.h and sent with
 * pe_http_send_profile, so names and mappings match every other profile's.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "../preload/clock.h"
#include "../sampler/mutex.h"
#include "http_int.h"

static const pe_prof_vt_t mutex_types[2] = {
    {"contentions", "count"},
    {"delay", "nanoseconds"},
};
static const pe_prof_vt_t contentions_count = {"contentions", "count"};

/* ---- helpers -------------------------------------------------------------------- */

/* s1 -= s0, entry by entry (both in ascending id order); entries never move. */
static void
delta(pe_mutex_rec_t *s1, int n1, const pe_mutex_rec_t *s0, int n0)
{
    for (int i = 0, j = 0; i < n1; i++) {
        while (j < n0 && s0[j].id < s1[i].id)
            j++;
        if (j < n0 && s0[j].id == s1[i].id) {
            s1[i].count -= s0[j].count;
            s1[i].delay_ns -= s0[j].delay_ns;
        }
    }
}

/* Keep the records this profile shows (mutex: acquisitions only), without empty ones. */
static int
select_recs(pe_mutex_rec_t *v, int n, int block)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        if (!v[i].count || (!block && v[i].kind != PE_MUTEX_KIND_LOCK))
            continue;
        v[k++] = v[i];
    }
    return k;
}

static int
by_delay_desc(const void *a, const void *b)
{
    const pe_mutex_rec_t *x = a, *y = b;

    if (x->delay_ns != y->delay_ns)
        return x->delay_ns > y->delay_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Go's legacy text (runtime/pprof writeProfileInternal with debug=1): raw
 * sampled values, "cycles" in nanoseconds, and the sampling period that
 * readers (pprof's parseContention) multiply by.  Records by delay.
 */
static int
send_text(pe_req_t *r, pe_mutex_rec_t *v, int n, int block)
{
    uintptr_t pcs[PE_MUTEX_MAX_FRAMES];
    pe_mutex_stats_t st;
    pe_resp_t resp;

    qsort(v, (size_t)n, sizeof(*v), by_delay_desc);
    pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
    pe_sink_printf(&resp.sink, "--- %s:\ncycles/second=1000000000\nsampling period=%" PRId64 "\n",
                   block ? "contention" : "mutex", pe_mutex_rate());
    for (int i = 0; i < n && !resp.sink.err; i++) {
        int k = pe_mutex_stack(v[i].id, pcs, PE_MUTEX_MAX_FRAMES);

        pe_sink_printf(&resp.sink, "%" PRIu64 " %" PRIu64, v[i].delay_ns, v[i].count);
        pe_prof_write_go_stack(&resp.sink, pcs, k);
    }
    pe_mutex_get_stats(&st);
    pe_sink_printf(&resp.sink,
                   "# profendpoints lock contention sampling: 1 in %" PRId64 " waits recorded\n"
                   "# sampled = %" PRIu64 "\n# dropped = %" PRIu64 " (table full, bound %" PRIu64
                   " stacks)\n# without stack = %" PRIu64 "\n",
                   pe_mutex_rate(), st.sampled, st.dropped, st.capacity, st.no_stack);
    return pe_http_end(&resp);
}

static pe_prof_t *
build(const pe_mutex_rec_t *v, int n, int64_t duration_ns)
{
    int64_t rate = pe_mutex_rate();
    pe_prof_t *p = pe_prof_new(mutex_types, 2, &contentions_count, rate);
    uintptr_t pcs[PE_MUTEX_MAX_FRAMES];
    pe_mutex_stats_t st;

    if (!p)
        return NULL;
    pe_prof_set_default_type(p, "delay");
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
    return p;
}

static int
mutex_snap(void **recs, int *n)
{
    return pe_mutex_snapshot((pe_mutex_rec_t **)recs, n);
}

/* Cumulative since start, or over `seconds`; with `base`, the change since the
   previous call of that path (godeltaprof's delta_mutex and delta_block). */
static int
contention(pe_req_t *r, int block, pe_http_baseline_t *base)
{
    pe_mutex_rec_t *s0 = NULL, *s1 = NULL;
    int n0 = 0, n1 = 0, rc, debug = 0;
    int64_t dur = 0, t0;
    pe_prof_t *p;

    if (pe_mutex_rate() <= 0)
        return pe_http_error(r, 503,
                             "lock contention profiling is off (PROFEP_MUTEX_RATE=0); "
                             "set PROFEP_MUTEX_RATE=N to record 1 in N waits, e.g. 100");
    if (!base && (rc = pe_http_delta_window(r, mutex_snap, (void **)&s0, &n0, &debug, &dur)))
        return rc;
    if (pe_mutex_snapshot(&s1, &n1) < 0) {
        free(s0);
        return pe_http_error(r, 500, "out of memory");
    }
    if (base) {
        if (pe_http_baseline_swap(base, s1, n1, sizeof(*s1), (void **)&s0, &n0, &t0) < 0) {
            free(s1);
            return pe_http_error(r, 500, "out of memory");
        }
        dur = t0 ? pe_clock_ns(CLOCK_REALTIME) - t0 : 0;
    }
    if (s0)
        delta(s1, n1, s0, n0);
    free(s0);
    n1 = select_recs(s1, n1, block);
    if (debug >= 1) {
        rc = send_text(r, s1, n1, block);
        free(s1);
        return rc;
    }
    p = build(s1, n1, dur);
    free(s1);
    if (!p)
        return pe_http_error(r, 500, "out of memory building the contention profile");
    rc = pe_http_send_profile(r, p, block ? "block" : "mutex");
    pe_prof_free(p);
    return rc;
}

/* ---- handlers ------------------------------------------------------------------- */

int
pe_http_h_pprof_mutex(pe_req_t *r)
{
    return contention(r, 0, NULL);
}

int
pe_http_h_pprof_block(pe_req_t *r)
{
    return contention(r, 1, NULL);
}

static pe_http_baseline_t delta_mutex_base = PE_HTTP_BASELINE_INIT;
static pe_http_baseline_t delta_block_base = PE_HTTP_BASELINE_INIT;

int
pe_http_h_delta_mutex(pe_req_t *r)
{
    return contention(r, 0, &delta_mutex_base);
}

int
pe_http_h_delta_block(pe_req_t *r)
{
    return contention(r, 1, &delta_block_base);
}
