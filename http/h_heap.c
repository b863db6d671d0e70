/*
 * h_heap.c: the allocation endpoints: /debug/pprof/heap and /debug/pprof/allocs
 * (the always-on heap sampling, Go's format and semantics), godeltaprof's
 * /debug/pprof/delta_heap (allocations since the previous call), and
 * /allocs_profile, /allocs_profile_start, /allocs_profile_stop
 * (ProfileEndpoints.jl's Bernoulli recording).  Data comes from heap/ (heap.h);
 * profiles are built only through proto/profile.h and sent with
 * pe_http_send_profile, so names and mappings match the CPU profile's.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../preload/clock.h"
#include "http_int.h"

static const pe_prof_vt_t heap_types[4] = {
    {"alloc_objects", "count"},
    {"alloc_space", "bytes"},
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"},
};
static const pe_prof_vt_t space_bytes = {"space", "bytes"};

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

/* 0 when the heap endpoints can answer, else the 503 (sent). */
static int
heap_unavailable(pe_req_t *r, int need_sampling)
{
    if (!pe_heap_available())
        return pe_http_error(r, 503, "heap profiling unavailable: %s", pe_heap_reason());
    if (need_sampling && pe_heap_rate() <= 0)
        return pe_http_error(r, 503,
                             "heap sampling is off (PROFEP_HEAP_RATE=0); set "
                             "PROFEP_HEAP_RATE to a mean number of bytes, e.g. 524288");
    return 0;
}

/* Add one stack's sample: frames from heap/, or a named pseudo-frame. */
int
pe_http_heap_add_stack(pe_prof_t *p, uint32_t stack, const int64_t *values,
                       const pe_prof_label_t *labels, int nlabels)
{
    uintptr_t pcs[PE_HEAP_MAX_FRAMES];
    int n = pe_heap_stack(stack, pcs, PE_HEAP_MAX_FRAMES);

    if (n <= 0)
        return pe_prof_add_named(p, "[unknown]", values, labels, nlabels);
    return pe_prof_add(p, pcs, n, 0, values, labels, nlabels);
}

/* ---- /debug/pprof/heap, /debug/pprof/allocs -------------------------------------- */

/* The delta of alloc_* over a window; inuse_* as at its end. */
static void
delta(pe_heap_rec_t *s1, int n1, const pe_heap_rec_t *s0, int n0)
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

static int
by_inuse_desc(const void *a, const void *b)
{
    const pe_heap_rec_t *x = a, *y = b;

    if (x->raw_inuse_b != y->raw_inuse_b)
        return x->raw_inuse_b > y->raw_inuse_b ? -1 : 1;
    return x->raw_alloc_b > y->raw_alloc_b ? -1 : x->raw_alloc_b < y->raw_alloc_b;
}

/* gperftools' trailer, which pprof's legacy parser reads to map addresses to
   binaries (Go's own text has no maps; readers skip what follows records). */
void
pe_http_heap_append_maps(pe_sink_t *sink)
{
    char buf[4096];
    ssize_t n;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    pe_sink_put(sink, "\nMAPPED_LIBRARIES:\n");
    while ((n = read(fd, buf, sizeof(buf))) > 0 && !sink->err)
        sink->err = sink->write(sink, buf, (size_t)n);
    close(fd);
}

/*
 * Go's legacy text heap profile (runtime/pprof writeHeapInternal, debug=1):
 * raw sampled values (the reader unbiases them with the heap/2*rate header),
 * records by in-use bytes, each followed by its symbolized frames.
 */
static int
send_text(pe_req_t *r, pe_heap_rec_t *v, int n)
{
    uint64_t t_in = 0, t_inb = 0, t_a = 0, t_ab = 0;
    uintptr_t pcs[PE_HEAP_MAX_FRAMES];
    pe_resp_t resp;
    pe_heap_stats_t st;

    qsort(v, (size_t)n, sizeof(*v), by_inuse_desc);
    for (int i = 0; i < n; i++) {
        t_in += v[i].raw_inuse_n;
        t_inb += v[i].raw_inuse_b;
        t_a += v[i].raw_alloc_n;
        t_ab += v[i].raw_alloc_b;
    }
    pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
    pe_sink_printf(&resp.sink,
                   "heap profile: %" PRIu64 ": %" PRIu64 " [%" PRIu64 ": %" PRIu64
                   "] @ heap/%" PRId64 "\n",
                   t_in, t_inb, t_a, t_ab, 2 * pe_heap_rate());
    for (int i = 0; i < n && !resp.sink.err; i++) {
        int k = pe_heap_stack(v[i].stack, pcs, PE_HEAP_MAX_FRAMES);

        pe_sink_printf(&resp.sink, "%" PRIu64 ": %" PRIu64 " [%" PRIu64 ": %" PRIu64 "]",
                       v[i].raw_inuse_n, v[i].raw_inuse_b, v[i].raw_alloc_n, v[i].raw_alloc_b);
        pe_prof_write_go_stack(&resp.sink, pcs, k);
    }
    pe_heap_get_stats(&st);
    pe_sink_printf(&resp.sink,
                   "\n# profendpoints heap sampling\n# rate = %" PRId64 "\n# samples = %" PRIu64
                   "\n# live_listed = %" PRIu64 " (table of %" PRIu64 ")\n# unlisted = %" PRIu64
                   "\n# stacks = %" PRIu64 " (%" PRIu64 " samples found the table full)\n",
                   pe_heap_rate(), st.samples, st.live, st.live_cap, st.dropped_live, st.stacks,
                   st.stacks_full);
    pe_http_heap_append_maps(&resp.sink);
    return pe_http_end(&resp);
}

static pe_prof_t *
build_heap(pe_heap_rec_t *v, int n, const char *deftype, int64_t duration_ns)
{
    pe_prof_t *p = pe_prof_new(heap_types, 4, &space_bytes, pe_heap_rate());
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
        if (pe_http_heap_add_stack(p, v[i].stack, vals, &lab, 1) < 0) {
            pe_prof_free(p);
            return NULL;
        }
    }
    pe_heap_get_stats(&st);
    if (st.dropped_live || st.stacks_full)
        pe_prof_comment(p,
                        "heap sampling: %" PRIu64 " samples, %" PRIu64 " not listed for the heap "
                        "snapshot (table of %" PRIu64 "; still counted here), %" PRIu64
                        " without a stack slot",
                        st.samples, st.dropped_live, st.live_cap, st.stacks_full);
    return p;
}

static int
heap_snap(void **recs, int *n)
{
    return pe_heap_snapshot((pe_heap_rec_t **)recs, n);
}

/* Cumulative since start, or over `seconds`; with `base`, the alloc_* change
   since the previous call of that path (godeltaprof's delta_heap); inuse_*
   are always as now. */
static int
heap_common(pe_req_t *r, const char *deftype, const char *name, pe_http_baseline_t *base)
{
    pe_heap_rec_t *s0 = NULL, *s1 = NULL;
    int n0 = 0, n1 = 0, rc, debug = 0;
    int64_t dur = 0, t0;
    pe_prof_t *p;

    if ((rc = heap_unavailable(r, 1)))
        return rc;
    if (!base && pe_http_heap_time_wanted(r))
        return pe_http_heap_time(r, name); /* ages, since: h_heap_time.c */
    if (!base && (rc = pe_http_delta_window(r, heap_snap, (void **)&s0, &n0, &debug, &dur)))
        return rc;
    if (pe_heap_snapshot(&s1, &n1) < 0) {
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
    if (debug >= 1) {
        rc = send_text(r, s1, n1);
        free(s1);
        return rc;
    }
    p = build_heap(s1, n1, deftype, dur);
    free(s1);
    if (!p)
        return pe_http_error(r, 500, "out of memory building the heap profile");
    rc = pe_http_send_profile(r, p, name);
    pe_prof_free(p);
    return rc;
}

int
pe_http_h_pprof_heap(pe_req_t *r)
{
    return heap_common(r, "inuse_space", "heap", NULL);
}

int
pe_http_h_pprof_allocs(pe_req_t *r)
{
    return heap_common(r, "alloc_space", "allocs", NULL);
}

static pe_http_baseline_t delta_heap_base = PE_HTTP_BASELINE_INIT;

int
pe_http_h_delta_heap(pe_req_t *r)
{
    return heap_common(r, "inuse_space", "delta_heap", &delta_heap_base);
}

/* ---- /allocs_profile* ---------------------------------------------------------------- */

static int
rate_param(pe_req_t *r, double *p)
{
    int rc = pe_param_number(r, "sample_rate", 0.0001, 0, 1, p);

    if (rc)
        return rc;
    if (*p <= 0)
        return pe_http_error(r, 400, "sample_rate=%s: must be a number in (0, 1]",
                             pe_param(r, "sample_rate"));
    return 0;
}

static int
start(pe_req_t *r, double p, int open_ended)
{
    int rc = pe_heap_allocs_start(p, open_ended);

    if (rc == 0)
        return 0;
    if (rc == -EBUSY)
        return pe_http_error(r, 409,
                             "an allocation recording is already running (%s); one at a "
                             "time",
                             pe_heap_allocs_state() == 2 ? "stop it with /allocs_profile_stop"
                                                         : "a timed /allocs_profile request");
    return pe_http_error(r, 500, "cannot start the allocation recording: %s", strerror(-rc));
}

/* Stop the recording and send it, scaled by 1/p. */
static int
finish(pe_req_t *r, int open_ended, int64_t duration_ns)
{
    static const pe_prof_vt_t types[2] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}};
    uint64_t over_n = 0, over_b = 0;
    pe_heap_arec_t *v;
    double prob = 1;
    pe_prof_t *p;
    int n, rc;

    rc = pe_heap_allocs_stop(open_ended, &v, &n, &prob, &over_n, &over_b);
    if (rc == -ENOENT)
        return pe_http_error(r, 409, "no allocation recording is running%s",
                             pe_heap_allocs_state() == 1
                                 ? " from /allocs_profile_start (a timed /allocs_profile is)"
                                 : "; start one with /allocs_profile_start");
    if (rc < 0)
        return pe_http_error(r, 500, "out of memory reading the allocation recording");
    p = pe_prof_new(types, 2, &space_bytes, 0);
    if (!p) {
        free(v);
        return pe_http_error(r, 500, "out of memory building the allocation profile");
    }
    pe_prof_set_default_type(p, "alloc_space");
    pe_prof_set_time(p, pe_clock_ns(CLOCK_REALTIME) - duration_ns, duration_ns);
    pe_prof_comment(p,
                    "allocs_profile: every malloc-family call recorded with probability %g; "
                    "values scaled by %g",
                    prob, 1 / prob);
    for (int i = 0; i < n; i++) {
        int64_t vals[2] = {llround((double)v[i].count / prob),
                           llround((double)v[i].count * (double)v[i].size / prob)};
        pe_prof_label_t lab = {"bytes", NULL, (int64_t)v[i].size, NULL}; /* as Go's heap label */

        if (pe_http_heap_add_stack(p, v[i].stack, vals, &lab, 1) < 0)
            break;
    }
    if (over_n) {
        int64_t vals[2] = {llround((double)over_n / prob), llround((double)over_b / prob)};
        pe_prof_add_named(p, "[allocs table full]", vals, NULL, 0);
    }
    free(v);
    rc = pe_http_send_profile(r, p, "allocs_profile");
    pe_prof_free(p);
    return rc;
}

static int64_t open_started_ns;

int
pe_http_h_allocs_profile(pe_req_t *r)
{
    double p, duration;
    int rc;

    if ((rc = heap_unavailable(r, 0)))
        return rc;
    if ((rc = rate_param(r, &p)) ||
        (rc = pe_param_number(r, "duration", 10, 0, pe_http_max_seconds(), &duration)))
        return rc;
    if ((rc = pe_http_long_begin(r)))
        return rc;
    if ((rc = start(r, p, 0)))
        goto out;
    pe_http_sleep(r, duration); /* at shutdown: stop early and send what we have */
    rc = finish(r, 0, (int64_t)(duration * 1e9));
out:
    pe_http_long_end();
    return rc;
}

int
pe_http_h_allocs_profile_start(pe_req_t *r)
{
    char line[160];
    double p;
    int rc;

    if ((rc = heap_unavailable(r, 0)))
        return rc;
    if ((rc = rate_param(r, &p)))
        return rc;
    if ((rc = start(r, p, 1)))
        return rc;
    __atomic_store_n(&open_started_ns, pe_clock_ns(CLOCK_REALTIME), __ATOMIC_RELAXED);
    snprintf(line, sizeof(line),
             "allocation recording started (sample_rate=%g); /allocs_profile_stop returns the "
             "profile\n",
             p);
    return pe_http_reply(r, 200, "text/plain", line);
}

int
pe_http_h_allocs_profile_stop(pe_req_t *r)
{
    int64_t t0 = __atomic_load_n(&open_started_ns, __ATOMIC_RELAXED),
            now = pe_clock_ns(CLOCK_REALTIME);
    int rc;

    if ((rc = heap_unavailable(r, 0)))
        return rc;
    return finish(r, 1, t0 && now > t0 ? now - t0 : 0);
}
