/*
 * h_session.c: the session kinds' endpoints (sampler/kind.h): a recording
 * the kind runs itself, one at a time (/allocs_profile, /allocs_profile_start,
 * /allocs_profile_stop: ProfileEndpoints.jl's Bernoulli recording of every
 * malloc-family call, heap/heap_kinds.c).  A timed request records for
 * `duration` s; _start and _stop hold an open-ended one.  Which kind, its
 * route row says (routes.c), so a new session kind needs no code here.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../preload/clock.h"
#include "../sampler/kind.h"
#include "http_int.h"

/* When each kind's open-ended recording started (CLOCK_REALTIME), at the
   index of its _start route. */
static int64_t started_ns[PE_HTTP_MAX_ROUTES];

/* The request's kind, its paths and its 503 when it cannot answer: 0 or the
   status sent. */
typedef struct skind_s {
    const pe_kind_t *k;
    const char *what;                 /* "allocation recording" */
    const char *timed, *start, *stop; /* its routes' paths */
    int64_t *started_ns;
} skind_t;

static int
kind_of(pe_req_t *r, skind_t *s)
{
    const pe_route_t *rt = pe_http_find_route(r->path), *st;
    const pe_kind_t *k = rt ? rt->kind : NULL;
    const char *why;

    if (!k || !k->session_start)
        return pe_http_error(r, 500, "%s: no session kind", r->path);
    if ((why = k->unavailable ? k->unavailable() : NULL))
        return pe_http_error(r, 503, "%s", why);
    s->k = k;
    s->what = k->title ? k->title : k->name;
    s->timed = pe_http_kind_path(k, pe_http_h_session);
    s->start = pe_http_kind_path(k, pe_http_h_session_start);
    s->stop = pe_http_kind_path(k, pe_http_h_session_stop);
    st = pe_http_kind_route(k, pe_http_h_session_start);
    s->started_ns = &started_ns[st ? st - pe_routes : 0];
    return 0;
}

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
start(pe_req_t *r, const skind_t *s, double p, int open_ended)
{
    int rc = s->k->session_start(p, open_ended);
    char how[160];

    if (rc == 0)
        return 0;
    if (rc == -EBUSY) {
        if (s->k->session_state() == 2)
            snprintf(how, sizeof(how), "stop it with %s", s->stop);
        else
            snprintf(how, sizeof(how), "a timed %s request", s->timed);
        return pe_http_error(r, 409, "the %s is already running (%s); one at a time", s->what, how);
    }
    return pe_http_error(r, 500, "cannot start the %s: %s", s->what, strerror(-rc));
}

/* Stop the recording and send its profile. */
static int
finish(pe_req_t *r, const skind_t *s, int open_ended, int64_t duration_ns, int64_t t0_ns)
{
    pe_prof_t *p = NULL;
    char how[160];
    int rc = s->k->session_stop(open_ended, duration_ns, &p);

    if (rc == -ENOENT) {
        if (s->k->session_state() == 1)
            snprintf(how, sizeof(how), " from %s (a timed %s is)", s->start, s->timed);
        else
            snprintf(how, sizeof(how), "; start one with %s", s->start);
        return pe_http_error(r, 409, "no %s is running%s", s->what, how);
    }
    if (rc < 0)
        return pe_http_error(r, 503, "out of memory reading the %s", s->what);
    if (t0_ns)
        pe_http_exit_note(p, t0_ns);
    rc = pe_http_send_profile(r, p, s->k->stem ? s->k->stem : s->k->name);
    pe_prof_free(p);
    return rc;
}

/* ---- handlers ------------------------------------------------------------------- */

int
pe_http_h_session(pe_req_t *r)
{
    double p, duration;
    skind_t s;
    int64_t t0;
    int rc;

    if ((rc = kind_of(r, &s)) || (rc = rate_param(r, &p)) ||
        (rc = pe_param_number(r, "duration", 10, 0, pe_http_max_seconds(), &duration)))
        return rc;
    if ((rc = pe_http_long_begin(r)))
        return rc;
    if ((rc = start(r, &s, p, 0)))
        goto out;
    t0 = pe_clock_ns(CLOCK_MONOTONIC);
    pe_http_sleep(r, duration); /* at exit: stop early and send what we have */
    rc = finish(r, &s, 0, (int64_t)(duration * 1e9), t0);
out:
    pe_http_long_end();
    return rc;
}

int
pe_http_h_session_start(pe_req_t *r)
{
    char line[200];
    skind_t s;
    double p;
    int rc;

    if ((rc = kind_of(r, &s)) || (rc = rate_param(r, &p)) || (rc = start(r, &s, p, 1)))
        return rc;
    __atomic_store_n(s.started_ns, pe_clock_ns(CLOCK_REALTIME), __ATOMIC_RELAXED);
    snprintf(line, sizeof(line), "%s started (sample_rate=%g); %s returns the profile\n", s.what, p,
             s.stop);
    return pe_http_reply(r, 200, "text/plain", line);
}

int
pe_http_h_session_stop(pe_req_t *r)
{
    int64_t t0, now = pe_clock_ns(CLOCK_REALTIME);
    skind_t s;
    int rc;

    if ((rc = kind_of(r, &s)))
        return rc;
    t0 = __atomic_load_n(s.started_ns, __ATOMIC_RELAXED);
    return finish(r, &s, 1, t0 && now > t0 ? now - t0 : 0, 0);
}

/* server.c's name for it: the session kinds' start times (a fork child's
   recordings are its own). */
void
pe_http_heap_atfork_child(void)
{
    memset(started_ns, 0, sizeof(started_ns));
}
