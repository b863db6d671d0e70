/*
 * h_recorded.c: the recorded kinds' endpoints (sampler/kind.h), in Go's
 * formats: lock contention (/debug/pprof/mutex, /debug/pprof/block) and the
 * sampled heap (/debug/pprof/heap, /debug/pprof/allocs): pprof (the kind's
 * build), `seconds=N` for the delta over N s, `debug=1` for Go's legacy text
 * (the kind's text); and godeltaprof's delta_mutex, delta_block and
 * delta_heap, the change since the previous call of that path.  This file
 * picks the window (baseline.c) and sends the answer; a kind that takes the
 * heap's ages (PE_KIND_F_AGES) hands min_age, max_age and since to
 * h_heap_time.c.  Which kind, its route row says (routes.c), so a new
 * recorded kind needs no code here.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <stdlib.h>
#include <time.h>

#include "../preload/clock.h"
#include "../sampler/kind.h"
#include "http_int.h"

/* Cumulative since start, or over `seconds`; with `base`, the change since the
   previous call of that path (godeltaprof; the heap's inuse_* stay as now). */
static int
recorded(pe_req_t *r, const pe_kind_t *k, pe_http_baseline_t *base)
{
    const char *stem = k && k->stem ? k->stem : k ? k->name : NULL;
    int64_t dur, t0 = pe_clock_ns(CLOCK_MONOTONIC);
    pe_http_recs_t recs;
    const char *why;
    void *v;
    pe_resp_t resp;
    int n, rc, debug;
    pe_prof_t *p;

    if (!k || !k->build)
        return pe_http_error(r, 500, "%s: no recorded kind", r->path);
    if ((why = k->unavailable ? k->unavailable() : NULL))
        return pe_http_error(r, 503, "%s", why);
    if (!base && (k->flags & PE_KIND_F_AGES) && pe_http_heap_time_wanted(r))
        return pe_http_heap_time(r, stem); /* ages, since: h_heap_time.c */
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
    pe_http_exit_note(p, t0); /* seconds=N cut short by the exit: names only */
    rc = pe_http_send_profile(r, p, stem);
    pe_prof_free(p);
    return rc;
}

/* ---- handlers ------------------------------------------------------------------- */

int
pe_http_h_recorded(pe_req_t *r)
{
    const pe_route_t *rt = pe_http_find_route(r->path);

    return recorded(r, rt ? rt->kind : NULL, NULL);
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

/* server.c's name for it: the recorded kinds' baselines, mutex and heap alike */
void
pe_http_mutex_atfork_child(void)
{
    for (int i = 0; i < PE_HTTP_MAX_ROUTES; i++)
        pe_http_baseline_atfork_child(&delta_base[i]);
}
