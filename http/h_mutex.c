/*
 * h_mutex.c: the recorded kinds' endpoints (sampler/kind.h): lock contention,
 * /debug/pprof/mutex (mutex and rwlock acquisitions that waited) and
 * /debug/pprof/block (every sampled wait, condition waits included), in Go's
 * formats: pprof (the kind's build), `seconds=N` for the delta over N s,
 * `debug=1` for Go's legacy text (the kind's text); and godeltaprof's
 * delta_mutex and delta_block, the change since the previous call of that
 * path.  This file picks the window (baseline.c) and sends the answer; which
 * kind, its route row says (routes.c), so a new recorded kind needs no code
 * here.
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
    pe_http_recs_t recs;
    const char *why;
    void *v;
    pe_resp_t resp;
    int n, rc, debug;
    int64_t dur;
    pe_prof_t *p;

    if (!k || !k->build)
        return pe_http_error(r, 500, "%s: no recorded kind", r->path);
    if ((why = k->unavailable ? k->unavailable() : NULL))
        return pe_http_error(r, 503, "%s", why);
    recs = (pe_http_recs_t){k->snapshot, k->delta, k->rec_size};
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

static const pe_kind_t *
route_kind(const pe_req_t *r)
{
    const pe_route_t *rt = pe_http_find_route(r->path);

    return rt ? rt->kind : NULL;
}

int
pe_http_h_recorded(pe_req_t *r)
{
    return recorded(r, route_kind(r), NULL);
}

/* godeltaprof's per-path memory: one baseline per route (index into pe_routes). */
static pe_http_baseline_t delta_base[PE_HTTP_MAX_ROUTES] = {[0 ... PE_HTTP_MAX_ROUTES - 1] =
                                                                PE_HTTP_BASELINE_INIT};

int
pe_http_h_recorded_delta(pe_req_t *r)
{
    const pe_route_t *rt = pe_http_find_route(r->path);

    if (!rt)
        return pe_http_error(r, 500, "%s: no route", r->path);
    return recorded(r, rt->kind, &delta_base[rt - pe_routes]);
}

void
pe_http_mutex_atfork_child(void)
{
    for (int i = 0; i < PE_HTTP_MAX_ROUTES; i++)
        pe_http_baseline_atfork_child(&delta_base[i]);
}
