/*
 * h_mutex.c: the lock contention endpoints, /debug/pprof/mutex (mutex and
 * rwlock acquisitions that waited) and /debug/pprof/block (every sampled wait,
 * condition waits included), in Go's formats: pprof with contentions/count and
 * delay/nanoseconds scaled by the sampling period, `seconds=N` for the delta
 * over N s, `debug=1` for Go's legacy text; and godeltaprof's delta_mutex and
 * delta_block, the change since the previous call of that path.  The records,
 * the profile and the text come from sampler/mutex.h (mutex_profile.c); this
 * file picks the window (baseline.c) and sends the answer.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <stdlib.h>

#include "../sampler/mutex.h"
#include "http_int.h"

static int
mutex_snap(void **recs, int *n)
{
    return pe_mutex_snapshot((pe_mutex_rec_t **)recs, n);
}

static void
mutex_delta(void *now, int n, const void *before, int nbefore)
{
    pe_mutex_delta(now, n, before, nbefore);
}

static const pe_http_recs_t mutex_recs = {mutex_snap, mutex_delta, sizeof(pe_mutex_rec_t)};

/* Cumulative since start, or over `seconds`; with `base`, the change since the
   previous call of that path (godeltaprof's delta_mutex and delta_block). */
static int
contention(pe_req_t *r, int block, pe_http_baseline_t *base)
{
    pe_mutex_rec_t *v;
    pe_resp_t resp;
    int n, rc, debug;
    int64_t dur;
    pe_prof_t *p;

    if (pe_mutex_rate() <= 0)
        return pe_http_error(r, 503,
                             "lock contention profiling is off (PROFEP_MUTEX_RATE=0); "
                             "set PROFEP_MUTEX_RATE=N to record 1 in N waits, e.g. 100");
    if ((rc = pe_http_recs_window(r, &mutex_recs, base, (void **)&v, &n, &debug, &dur)))
        return rc;
    n = pe_mutex_select(v, n, block);
    if (debug >= 1) {
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        pe_mutex_write_text(&resp.sink, v, n, block);
        free(v);
        return pe_http_end(&resp);
    }
    p = pe_mutex_profile(v, n, dur);
    free(v);
    if (!p)
        return pe_http_error(r, 503, "out of memory building the contention profile");
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

void
pe_http_mutex_atfork_child(void)
{
    pe_http_baseline_atfork_child(&delta_mutex_base);
    pe_http_baseline_atfork_child(&delta_block_base);
}
