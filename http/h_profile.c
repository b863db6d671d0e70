/*
 * h_profile.c: the sampling profile endpoints, CPU (/profile, /profile_start,
 * /profile_stop, /debug/pprof/profile) and wall-clock (/profile_wall,
 * /profile_wall_start, /profile_wall_stop, and fgprof's /debug/fgprof).  Both kinds are served by
 * the same code over a small table: each request opens its own window on the one shared sampler
 * (sampler/sampler.h), so overlapping requests each get their own window's samples; an open-ended
 * session is one window held here. Formats (pprof=false, format=...) are pe_http_send_profile's
 * business.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../preload/clock.h"
#include "../sampler/sampler.h"
#include "http_int.h"

/* ---- the two kinds ----------------------------------------------------------------- */

typedef struct kind_s {
    const char *what;  /* in messages: "CPU", "wall-clock" */
    const char *stem;  /* file name stem */
    const char *start; /* its _start and _stop paths */
    const char *stop;
    double min_delay;
    int (*open)(double delay, int64_t max_frames, pe_sampler_win_t **out, double *running);
    /* The one open-ended session of this kind (guarded by `lock`). */
    pthread_mutex_t lock;
    pe_sampler_win_t *sess;
    double sess_delay;
} kind_t;

static kind_t cpu = {
    "CPU", "profile",       "/profile_start",          "/profile_stop",
    1e-5,  pe_sampler_open, PTHREAD_MUTEX_INITIALIZER, NULL,
    0,
};
/* Wall ticks interrupt sleeping threads: at least 1 ms between them. */
static kind_t wall = {
    "wall-clock",
    "wall",
    "/profile_wall_start",
    "/profile_wall_stop",
    1e-3,
    pe_sampler_open_wall,
    PTHREAD_MUTEX_INITIALIZER,
    NULL,
    0,
};

/* ---- helpers -------------------------------------------------------------------- */

/* n (frame cap) and delay, with ProfileEndpoints.jl's defaults (n=1e8, delay=0.01 s),
   which its clients assume.  0 or 400 (sent). */
static int
sampling_params(pe_req_t *r, const kind_t *k, double *n, double *delay)
{
    int rc;

    if ((rc = pe_param_number(r, "n", 1e8, 1, 1e12, n)))
        return rc;
    return pe_param_number(r, "delay", 0.01, k->min_delay, 10, delay);
}

/* Open a window, answering 409/503/500 itself on failure (returns that status). */
static int
open_window(pe_req_t *r, const kind_t *k, double n, double delay, pe_sampler_win_t **w)
{
    static const char *const capture[] = {"auto", "signal", NULL};
    double running = 0;
    int rc, how = PE_SAMPLER_CAPTURE_AUTO;

    /* wall: capture=signal signals every thread (no /proc reads) */
    if (k->open == pe_sampler_open_wall && (rc = pe_param_enum(r, "capture", capture, 0, &how)))
        return rc;
    rc = how == PE_SAMPLER_CAPTURE_AUTO
             ? k->open(delay, (int64_t)n, w, &running)
             : pe_sampler_open_wall_capture(delay, (int64_t)n, how, w, &running);

    switch (rc) {
    case 0: return 0;
    case -EBUSY:
        return pe_http_error(r, 409,
                             "a %s profile is running at delay=%g s; ask with delay=%g "
                             "(asked delay=%g)",
                             k->what, running, running, delay);
    case -EPERM:
        return pe_http_error(r, 503, "%s profiling unavailable: SIGPROF is handled by the program",
                             k->what);
    case -EACCES:
        return pe_http_error(r, 503, "%s profiling unavailable: %s", k->what,
                             pe_sampler_unavailable() ? pe_sampler_unavailable() : strerror(-rc));
    default:
        return pe_http_error(r, 500, "%s profiling failed to start: %s", k->what, strerror(-rc));
    }
}

/* fgprof's names for its wall-clock profile (every thread, on- and off-CPU). */
static const pe_prof_vt_t fgprof_types[2] = {{"samples", "count"}, {"time", "nanoseconds"}};
static const pe_prof_vt_t fgprof_period = {"wallclock", "nanoseconds"};

/* Profile for the `secname` parameter's seconds (default def), then send it,
   under fgprof's sample type names when `fgprof`. */
static int
timed_profile(pe_req_t *r, const kind_t *k, const char *secname, double def, int fgprof)
{
    double n, delay, seconds;
    pe_sampler_win_t *w;
    pe_prof_t *p;
    int64_t t0;
    int rc;

    if ((rc = sampling_params(r, k, &n, &delay)) ||
        (rc = pe_param_number(r, secname, def, 0, pe_http_max_seconds(), &seconds)))
        return rc;
    if ((rc = pe_http_long_begin(r)))
        return rc;
    if ((rc = open_window(r, k, n, delay, &w)))
        goto out;
    t0 = pe_clock_ns(CLOCK_MONOTONIC);
    pe_http_sleep(r, seconds); /* at exit or hang-up: stop early, send what we have */
    p = pe_sampler_close(w);
    pe_http_exit_note(p, t0);
    if (fgprof && pe_prof_retype(p, fgprof_types, 2, &fgprof_period) < 0)
        rc = pe_http_error(r, 503, "out of memory naming the fgprof profile");
    else
        rc = pe_http_send_profile(r, p, fgprof ? "fgprof" : k->stem);
    pe_prof_free(p);
out:
    pe_http_long_end();
    return rc;
}

static int
session_start(pe_req_t *r, kind_t *k)
{
    double n, delay;
    char line[200];
    int rc;

    if ((rc = sampling_params(r, k, &n, &delay)))
        return rc;
    pthread_mutex_lock(&k->lock);
    if (k->sess) {
        rc = pe_http_error(r, 409,
                           "a %s profile session is already running (delay=%g s); "
                           "stop it with %s",
                           k->what, k->sess_delay, k->stop);
        goto out;
    }
    if ((rc = open_window(r, k, n, delay, &k->sess)))
        goto out;
    k->sess_delay = delay;
    snprintf(line, sizeof(line),
             "%s profiling started (delay=%g s, n=%.0f); %s returns the "
             "profile\n",
             k->what, delay, n, k->stop);
    rc = pe_http_reply(r, 200, "text/plain", line);
out:
    pthread_mutex_unlock(&k->lock);
    return rc;
}

static int
session_stop(pe_req_t *r, kind_t *k)
{
    pe_sampler_win_t *w;
    pe_prof_t *p;
    int rc;

    pthread_mutex_lock(&k->lock);
    w = k->sess;
    k->sess = NULL;
    pthread_mutex_unlock(&k->lock);
    if (!w)
        return pe_http_error(r, 409, "no %s profile session is running; start one with %s", k->what,
                             k->start);
    p = pe_sampler_close(w);
    rc = pe_http_send_profile(r, p, k->stem);
    pe_prof_free(p);
    return rc;
}

/* ---- handlers ------------------------------------------------------------------- */

int
pe_http_h_profile(pe_req_t *r)
{
    return timed_profile(r, &cpu, "duration", 10, 0);
}

int
pe_http_h_pprof_profile(pe_req_t *r)
{
    return timed_profile(r, &cpu, "seconds", 30, 0);
}

int
pe_http_h_profile_start(pe_req_t *r)
{
    return session_start(r, &cpu);
}

int
pe_http_h_profile_stop(pe_req_t *r)
{
    return session_stop(r, &cpu);
}

int
pe_http_h_profile_wall(pe_req_t *r)
{
    return timed_profile(r, &wall, "duration", 10, 0);
}

int
pe_http_h_profile_wall_start(pe_req_t *r)
{
    return session_start(r, &wall);
}

int
pe_http_h_profile_wall_stop(pe_req_t *r)
{
    return session_stop(r, &wall);
}

/* fgprof's /debug/fgprof?seconds=N (default 30): a wall-clock profile of every
   thread, as fgprof's users and Grafana Alloy's scraper read it. */
int
pe_http_h_fgprof(pe_req_t *r)
{
    return timed_profile(r, &wall, "seconds", 30, 1);
}

void
pe_http_profile_atfork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    /* The sessions' windows were the parent's (the sampler dropped them). */
    memcpy(&cpu.lock, &fresh, sizeof(fresh));
    memcpy(&wall.lock, &fresh, sizeof(fresh));
    cpu.sess = wall.sess = NULL;
}
