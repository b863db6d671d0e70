/*
 * baseline.c: the window of a cumulative record table (heap, allocs, mutex,
 * block) that a request asks for: since start, over Go's `seconds=N`, or
 * since the previous call of the same path (godeltaprof's delta_heap,
 * delta_mutex, delta_block).  For the last, per path, a copy of the records
 * the previous call saw; one baseline per path, replaced at every call, so
 * memory is bounded by the record tables it copies (heap/ and
 * contention/mutex.c bound those).
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../preload/clock.h"
#include "http_int.h"

/*
 * Keep a copy of now[0..n) (records of `size` bytes, in the order the caller
 * subtracts by) as the path's baseline, and hand back the previous one in
 * *prev (the caller frees it; NULL and 0 at the first call, which so answers
 * the change since start) and when it was taken in *prev_ns.  0, or -ENOMEM
 * with the baseline unchanged and nothing handed back.
 */
static int
baseline_swap(pe_http_baseline_t *b, const void *now, int n, size_t size, void **prev, int *nprev,
              int64_t *prev_ns)
{
    int64_t taken = pe_clock_ns(CLOCK_REALTIME);
    void *copy = NULL;

    *prev = NULL;
    *nprev = 0;
    *prev_ns = 0;
    if (n > 0) {
        copy = malloc((size_t)n * size);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, now, (size_t)n * size);
    }
    /* Two scrapers of one path split the stream between them: each sees the
       change since whichever call came last, never a change counted twice. */
    pthread_mutex_lock(&b->lock);
    *prev = b->recs;
    *nprev = b->n;
    *prev_ns = b->taken_ns;
    b->recs = copy;
    b->n = n;
    b->taken_ns = taken;
    pthread_mutex_unlock(&b->lock);
    return 0;
}

/* Go's `seconds=N` and `debug=1` (400 when combined); with seconds > 0 take the
   table now, wait (a long request), and leave that first copy in *before. */
static int
seconds_window(pe_req_t *r, const pe_http_recs_t *k, void **before, int *nbefore, int *debug,
               int64_t *dur_ns)
{
    double seconds, dbg;
    int rc;

    if ((rc = pe_param_number(r, "seconds", 0, 0, pe_http_max_seconds(), &seconds)) ||
        (rc = pe_param_number(r, "debug", 0, 0, 2, &dbg)))
        return rc;
    *debug = (int)dbg;
    if (seconds > 0 && *debug >= 1)
        return pe_http_error(r, 400, "seconds and debug params are incompatible");
    if (seconds <= 0)
        return 0;
    if ((rc = pe_http_long_begin(r)))
        return rc;
    if (k->snap(before, nbefore) < 0) {
        pe_http_long_end();
        return pe_http_error(r, 503, "out of memory");
    }
    pe_http_sleep(r, seconds);
    /* The slot stays taken until the answer is sent (pe_http_route gives it
       back): an exit waits only for requests holding one, and this one still
       has its profile to build and send (issue 38). */
    r->long_held = 1;
    *dur_ns = (int64_t)(seconds * 1e9);
    return 0;
}

int
pe_http_recs_window(pe_req_t *r, const pe_http_recs_t *k, pe_http_baseline_t *base, void **recs,
                    int *n, int *debug, int64_t *dur_ns)
{
    void *s0 = NULL, *s1 = NULL;
    int n0 = 0, n1 = 0, rc;
    int64_t t0;

    *recs = NULL;
    *n = 0;
    *debug = 0;
    *dur_ns = 0;
    if (!base && (rc = seconds_window(r, k, &s0, &n0, debug, dur_ns)))
        return rc;
    if (k->snap(&s1, &n1) < 0) {
        free(s0);
        return pe_http_error(r, 503, "out of memory");
    }
    if (base) {
        if (baseline_swap(base, s1, n1, k->size, &s0, &n0, &t0) < 0) {
            free(s1);
            return pe_http_error(r, 503, "out of memory");
        }
        *dur_ns = t0 ? pe_clock_ns(CLOCK_REALTIME) - t0 : 0;
    }
    if (s0)
        k->delta(s1, n1, s0, n0);
    free(s0);
    *recs = s1;
    *n = n1;
    return 0;
}

void
pe_http_baseline_atfork_child(pe_http_baseline_t *b)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    /* A worker of the parent may have held it mid-swap: the child starts its
       stream afresh (the parent's copy is left, once per fork). */
    memcpy(&b->lock, &fresh, sizeof(b->lock));
    b->recs = NULL;
    b->n = 0;
    b->taken_ns = 0;
}
