/*
 * h_mutex.c: the recorded kinds' endpoints (sampler/kind.h): lock contention,
 * /debug/pprof/mutex (mutex and rwlock acquisitions that waited) and
 * /debug/pprof/block (every sampled wait, condition waits included), in Go's
 * formats: pprof (the kind's build), `seconds=N` for the delta over N s,
 * `debug=1` for Go's legacy text (the kind's text); and godeltaprof's
 * delta_mutex and delta_block, the change since the previous call of that
 * path.  This file picks the window (baseline.c) and sends the answer; a new
 * recorded kind is a one-line handler here over its row.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <stdlib.h>

#include "../sampler/kind.h"
#include "http_int.h"

/* Cumulative since start, or over `seconds`; with `base`, the change since the
   previous call of that path (godeltaprof's delta_mutex and delta_block). */
static int
recorded(pe_req_t *r, const pe_kind_t *k, pe_http_baseline_t *base)
{
    pe_http_recs_t recs = {k->snapshot, k->delta, k->rec_size};
    const char *why = k->unavailable ? k->unavailable() : NULL;
    void *v;
    pe_resp_t resp;
    int n, rc, debug;
    int64_t dur;
    pe_prof_t *p;

    if (why)
        return pe_http_error(r, 503, "%s", why);
    if ((rc = pe_http_recs_window(r, &recs, base, &v, &n, &debug, &dur)))
        return rc;
    if (debug >= 1) {
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        k->text(&resp.sink, v, n);
        free(v);
        return pe_http_end(&resp);
    }
    p = k->build(v, n, dur);
    free(v);
    if (!p)
        return pe_http_error(r, 503, "out of memory building the %s profile", k->name);
    rc = pe_http_send_profile(r, p, k->name);
    pe_prof_free(p);
    return rc;
}

/* ---- handlers ------------------------------------------------------------------- */

int
pe_http_h_pprof_mutex(pe_req_t *r)
{
    return recorded(r, &pe_kind_mutex, NULL);
}

int
pe_http_h_pprof_block(pe_req_t *r)
{
    return recorded(r, &pe_kind_block, NULL);
}

static pe_http_baseline_t delta_mutex_base = PE_HTTP_BASELINE_INIT;
static pe_http_baseline_t delta_block_base = PE_HTTP_BASELINE_INIT;

int
pe_http_h_delta_mutex(pe_req_t *r)
{
    return recorded(r, &pe_kind_mutex, &delta_mutex_base);
}

int
pe_http_h_delta_block(pe_req_t *r)
{
    return recorded(r, &pe_kind_block, &delta_block_base);
}

void
pe_http_mutex_atfork_child(void)
{
    pe_http_baseline_atfork_child(&delta_mutex_base);
    pe_http_baseline_atfork_child(&delta_block_base);
}
