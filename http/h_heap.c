/*
 * h_heap.c: the allocation endpoints: /debug/pprof/heap and /debug/pprof/allocs
 * (the always-on heap sampling, Go's format and semantics), godeltaprof's
 * /debug/pprof/delta_heap (allocations since the previous call), and
 * /allocs_profile, /allocs_profile_start, /allocs_profile_stop
 * (ProfileEndpoints.jl's Bernoulli recording).  The records, the profiles and
 * the text come from heap/ (heap.h, profile.c); this file picks the window
 * (baseline.c) and sends the answer.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../heap/heap.h"
#include "../preload/clock.h"
#include "http_int.h"

/* ---- helpers ------------------------------------------------------------------- */

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

/* ---- /debug/pprof/heap, /debug/pprof/allocs -------------------------------------- */

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

static const pe_http_recs_t heap_recs = {heap_snap, heap_delta, sizeof(pe_heap_rec_t)};

/* Cumulative since start, or over `seconds`; with `base`, the alloc_* change
   since the previous call of that path (godeltaprof's delta_heap); inuse_*
   are always as now. */
static int
heap_common(pe_req_t *r, const char *deftype, const char *name, pe_http_baseline_t *base)
{
    pe_heap_rec_t *v;
    pe_resp_t resp;
    int n, rc, debug;
    int64_t dur, t0 = pe_clock_ns(CLOCK_MONOTONIC);
    pe_prof_t *p;

    if ((rc = heap_unavailable(r, 1)))
        return rc;
    if (!base && pe_http_heap_time_wanted(r))
        return pe_http_heap_time(r, name); /* ages, since: h_heap_time.c */
    if ((rc = pe_http_recs_window(r, &heap_recs, base, (void **)&v, &n, &debug, &dur)))
        return rc;
    if (debug >= 1) {
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        pe_heap_write_text(&resp.sink, v, n);
        free(v);
        return pe_http_end(&resp);
    }
    p = pe_heap_profile(v, n, deftype, dur);
    free(v);
    if (!p)
        return pe_http_error(r, 503, "out of memory building the heap profile");
    pe_http_exit_note(p, t0); /* seconds=N cut short by the exit: names only */
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
finish(pe_req_t *r, int open_ended, int64_t duration_ns, int64_t t0_ns)
{
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
        return pe_http_error(r, 503, "out of memory reading the allocation recording");
    p = pe_heap_allocs_profile(v, n, prob, over_n, over_b, duration_ns);
    if (!p) {
        free(v);
        return pe_http_error(r, 503, "out of memory building the allocation profile");
    }
    free(v);
    if (t0_ns)
        pe_http_exit_note(p, t0_ns);
    rc = pe_http_send_profile(r, p, "allocs_profile");
    pe_prof_free(p);
    return rc;
}

static int64_t open_started_ns;

int
pe_http_h_allocs_profile(pe_req_t *r)
{
    double p, duration;
    int64_t t0;
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
    t0 = pe_clock_ns(CLOCK_MONOTONIC);
    pe_http_sleep(r, duration); /* at exit: stop early and send what we have */
    rc = finish(r, 0, (int64_t)(duration * 1e9), t0);
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
    return finish(r, 1, t0 && now > t0 ? now - t0 : 0, 0);
}

void
pe_http_heap_atfork_child(void)
{
    pe_http_baseline_atfork_child(&delta_heap_base);
}
