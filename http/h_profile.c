/*
 * h_profile.c: the CPU profile endpoints (/profile, /profile_start,
 * /profile_stop, /debug/pprof/profile).  Each request opens its own window on
 * the one shared sampler (sampler/sampler.h), so overlapping requests each get
 * their own window's samples; the open-ended session is one window held here.
 * Formats (pprof=false, format=...) are pe_http_send_profile's business.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../sampler/sampler.h"
#include "http_int.h"

/* The one /profile_start session (guarded by `sess_lock`). */
static pthread_mutex_t sess_lock = PTHREAD_MUTEX_INITIALIZER;
static pe_sampler_win_t *sess;
static double sess_delay;
static double sess_n;

/* ---- helpers -------------------------------------------------------------------- */

/* n (frame cap) and delay, with the SPEC's defaults.  0 or 400 (sent). */
static int
cpu_params(pe_req_t *r, double *n, double *delay)
{
    int rc;
    if ((rc = pe_param_number(r, "n", 1e8, 1, 1e12, n)))
        return rc;
    return pe_param_number(r, "delay", 0.01, 1e-5, 10, delay);
}

/* Open a window, answering 409/503/500 itself on failure (returns that status). */
static int
open_window(pe_req_t *r, double n, double delay, pe_sampler_win_t **w)
{
    double running = 0;
    int rc = pe_sampler_open(delay, (int64_t)n, w, &running);

    switch (rc) {
    case 0: return 0;
    case -EBUSY:
        return pe_http_error(r, 409,
                             "a CPU profile is running at delay=%g s; ask with delay=%g "
                             "(asked delay=%g)",
                             running, running, delay);
    case -EPERM:
        return pe_http_error(r, 503,
                             "CPU profiling unavailable: SIGPROF is handled by the program");
    default: return pe_http_error(r, 500, "CPU profiling failed to start: %s", strerror(-rc));
    }
}

/* Profile for `seconds`, then send it. */
static int
timed_profile(pe_req_t *r, double seconds, double n, double delay)
{
    pe_sampler_win_t *w;
    pe_prof_t *p;
    int rc;

    if ((rc = pe_http_long_begin(r)))
        return rc;
    if ((rc = open_window(r, n, delay, &w)))
        goto out;
    pe_http_sleep(r, seconds); /* at shutdown: stop early and send what we have */
    p = pe_sampler_close(w);
    rc = pe_http_send_profile(r, p, "profile");
    pe_prof_free(p);
out:
    pe_http_long_end();
    return rc;
}

/* ---- handlers ------------------------------------------------------------------- */

int
pe_http_h_profile(pe_req_t *r)
{
    double n, delay, duration;
    int rc;

    if ((rc = cpu_params(r, &n, &delay)))
        return rc;
    if ((rc = pe_param_number(r, "duration", 10, 0, pe_http_max_seconds(), &duration)))
        return rc;
    return timed_profile(r, duration, n, delay);
}

int
pe_http_h_pprof_profile(pe_req_t *r)
{
    double n, delay, seconds;
    int rc;

    if ((rc = cpu_params(r, &n, &delay)))
        return rc;
    if ((rc = pe_param_number(r, "seconds", 30, 0, pe_http_max_seconds(), &seconds)))
        return rc;
    return timed_profile(r, seconds, n, delay);
}

int
pe_http_h_profile_start(pe_req_t *r)
{
    double n, delay;
    char line[160];
    int rc;

    if ((rc = cpu_params(r, &n, &delay)))
        return rc;
    pthread_mutex_lock(&sess_lock);
    if (sess) {
        rc = pe_http_error(r, 409,
                           "a CPU profile session is already running (delay=%g s); "
                           "stop it with /profile_stop",
                           sess_delay);
        goto out;
    }
    if ((rc = open_window(r, n, delay, &sess)))
        goto out;
    sess_delay = delay;
    sess_n = n;
    snprintf(line, sizeof(line),
             "CPU profiling started (delay=%g s, n=%.0f); /profile_stop returns the profile\n",
             delay, n);
    rc = pe_http_reply(r, 200, "text/plain", line);
out:
    pthread_mutex_unlock(&sess_lock);
    return rc;
}

int
pe_http_h_profile_stop(pe_req_t *r)
{
    pe_sampler_win_t *w;
    pe_prof_t *p;
    int rc;

    pthread_mutex_lock(&sess_lock);
    w = sess;
    sess = NULL;
    pthread_mutex_unlock(&sess_lock);
    if (!w)
        return pe_http_error(r, 409,
                             "no CPU profile session is running; start one with /profile_start");
    p = pe_sampler_close(w);
    rc = pe_http_send_profile(r, p, "profile");
    pe_prof_free(p);
    return rc;
}
