/*
 * h_heap_time.c: memory over time: the age filters of /debug/pprof/heap and
 * /heap_snapshot (min_age, max_age), the heap's change since a checkpoint
 * (?since=) and /heap_peak.  The views come from heap/ (heap.h, views.c);
 * this file reads the parameters and sends the answer like every other
 * profile (/heap_timeline is h_heap_timeline.c).
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../heap/heap.h"
#include "../preload/proc.h"
#include "http_int.h"

int
pe_http_age_parse(pe_req_t *r, pe_heap_age_t *f)
{
    double lo, hi;
    int rc;

    if ((rc = pe_param_number(r, "min_age", -1, 0, 1e9, &lo)) ||
        (rc = pe_param_number(r, "max_age", -1, 0, 1e9, &hi)))
        return rc;
    f->on = lo >= 0 || hi >= 0;
    f->min_s = lo >= 0 ? lo : 0;
    f->max_s = hi >= 0 ? hi : 1e18;
    f->now = pe_heap_now_s();
    if (f->min_s > f->max_s)
        return pe_http_error(r, 400, "min_age=%g is above max_age=%g: nothing could match",
                             f->min_s, f->max_s);
    return 0;
}

static int
history_unavailable(pe_req_t *r)
{
    if (!pe_heap_hist_running())
        return pe_http_error(r, 503, "the heap history thread is not running (see stderr)");
    return 0;
}

/* Send a view (any format, or debug=1 text) and free it. */
static int
send_view(pe_req_t *r, pe_heap_view_t *w, const char *name, int debug)
{
    pe_resp_t resp;
    pe_prof_t *p;
    int rc;

    if (debug >= 1) {
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        pe_heap_view_write_text(w, &resp.sink);
        pe_heap_view_free(w);
        return pe_http_end(&resp);
    }
    p = pe_heap_view_profile(w);
    pe_heap_view_free(w);
    if (!p)
        return pe_http_error(r, 503, "out of memory building the profile");
    rc = pe_http_send_profile(r, p, name);
    pe_prof_free(p);
    return rc;
}

static int
heap_by_age(pe_req_t *r, const pe_heap_age_t *f, const char *name, int debug)
{
    pe_heap_view_t w;
    pe_proc_stat_t st;
    long long started;
    char why[160];

    /* min_age beyond the program's age: nothing can match, and an empty profile says so */
    if (pe_proc_stat(0, 0, &st) == 0 && (started = pe_proc_started(st.starttime)) > 0 &&
        f->min_s > (double)(time(NULL) - started)) {
        snprintf(why, sizeof(why),
                 "nothing can be older than min_age=%g s: the program has run for %lld s", f->min_s,
                 (long long)(time(NULL) - started));
        r->empty_why = why;
    }

    if (pe_heap_view_age(&w, f) < 0)
        return pe_http_error(r, 503, "out of memory reading the live table");
    return send_view(r, &w, name, debug);
}

static int
heap_since(pe_req_t *r, double ago, const char *name, int debug)
{
    pe_heap_view_t w;
    int rc;

    if ((rc = history_unavailable(r)))
        return rc;
    rc = pe_heap_view_since(&w, ago);
    if (rc == -ENOENT)
        return pe_http_error(r, 503,
                             "no heap checkpoint yet (one is taken when the server "
                             "starts, then every PROFEP_HEAP_CHECKPOINT s)");
    if (rc < 0)
        return pe_http_error(r, 503, "out of memory reading the heap checkpoints");
    return send_view(r, &w, name, debug);
}

int
pe_http_h_heap_peak(pe_req_t *r)
{
    pe_heap_view_t w;
    const char *why;
    double debug;
    int rc;

    if ((why = pe_heap_unavailable())) /* what the index says (heap/heap_kinds.c) */
        return pe_http_error(r, 503, "%s", why);
    if ((rc = history_unavailable(r)) || (rc = pe_param_number(r, "debug", 0, 0, 2, &debug)))
        return rc;
    rc = pe_heap_view_peak(&w);
    if (rc == -ENOENT)
        return pe_http_error(r, 503, "no peak noted yet (the heap is read once a second)");
    if (rc < 0)
        return pe_http_error(r, 503, "out of memory reading the peak");
    return send_view(r, &w, "heap_peak", (int)debug);
}

int
pe_http_heap_time(pe_req_t *r, const char *name)
{
    pe_heap_age_t f;
    double debug;
    int rc;

    if ((rc = pe_http_age_parse(r, &f)) || (rc = pe_param_number(r, "debug", 0, 0, 2, &debug)))
        return rc;
    if (pe_param(r, "seconds"))
        return pe_http_error(r, 400, "seconds= cannot be combined with min_age, max_age or since");
    if (pe_param(r, "since")) {
        double ago;

        if (f.on)
            return pe_http_error(r, 400, "since= cannot be combined with min_age or max_age");
        if ((rc = pe_param_number(r, "since", 0, 0, 1e9, &ago)))
            return rc;
        return heap_since(r, ago, name, (int)debug);
    }
    if (f.on)
        return heap_by_age(r, &f, name, (int)debug);
    return pe_http_error(r, 400, "nothing asked");
}

int
pe_http_heap_time_wanted(pe_req_t *r)
{
    return pe_param(r, "min_age") || pe_param(r, "max_age") || pe_param(r, "since");
}
