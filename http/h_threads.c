/*
 * h_threads.c: the every-thread endpoints: /debug/pprof/goroutine (Go's name,
 * kept for scrapers; debug=0 pprof, 1 grouped text, 2 per-thread text),
 * /task_backtraces (the debug=2 text), /debug/pprof/threadcreate, and the
 * wall-clock profiles (/profile_wall, /profile_wall_start, /profile_wall_stop),
 * which mirror h_profile.c's CPU handlers on the sampler's wall windows.
 * Capturing is sampler/stacks.c's business; formats are pe_http_send_profile's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../sampler/sampler.h"
#include "../sampler/stacks.h"
#include "http_int.h"

/* The one /profile_wall_start session (guarded by `sess_lock`). */
static pthread_mutex_t sess_lock = PTHREAD_MUTEX_INITIALIZER;
static pe_sampler_win_t *sess;
static double sess_delay;

/* ---- stacks now ----------------------------------------------------------------- */

static int
capture(pe_req_t *r, pe_stacks_t **s)
{
    int rc = pe_stacks_capture(PE_STACKS_TIMEOUT_MS, s);

    switch (rc) {
    case 0: return 0;
    case -EPERM:
        return pe_http_error(r, 503,
                             "thread stacks unavailable: SIGPROF is handled by the program");
    default: return pe_http_error(r, 500, "thread stacks failed: %s", strerror(-rc));
    }
}

static int
send_text(pe_req_t *r, pe_stacks_t *s, int debug)
{
    pe_resp_t resp;

    pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
    pe_stacks_write_text(s, &resp.sink, debug);
    return pe_http_end(&resp);
}

int
pe_http_h_goroutine(pe_req_t *r)
{
    pe_stacks_t *s;
    pe_prof_t *p;
    double debug;
    int rc;

    if ((rc = pe_param_number(r, "debug", 0, 0, 2, &debug)))
        return rc;
    if ((rc = capture(r, &s)))
        return rc;
    if ((int)debug >= 1) {
        rc = send_text(r, s, (int)debug);
    } else if (!(p = pe_stacks_profile(s))) {
        rc = pe_http_error(r, 500, "out of memory");
    } else {
        rc = pe_http_send_profile(r, p, "goroutine");
        pe_prof_free(p);
    }
    pe_stacks_free(s);
    return rc;
}

int
pe_http_h_task_backtraces(pe_req_t *r)
{
    pe_stacks_t *s;
    int rc;

    if ((rc = capture(r, &s)))
        return rc;
    rc = send_text(r, s, 2);
    pe_stacks_free(s);
    return rc;
}

int
pe_http_h_threadcreate(pe_req_t *r)
{
    pe_prof_t *p;
    double debug;
    int rc;

    if ((rc = pe_param_number(r, "debug", 0, 0, 2, &debug)))
        return rc;
    if (!(p = pe_stacks_threadcreate()))
        return pe_http_error(r, 500, "out of memory");
    if ((int)debug >= 1) {
        pe_resp_t resp;
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        pe_stacks_write_grouped(p, &resp.sink, "threadcreate");
        rc = pe_http_end(&resp);
    } else {
        rc = pe_http_send_profile(r, p, "threadcreate");
    }
    pe_prof_free(p);
    return rc;
}

/* ---- wall-clock ------------------------------------------------------------------ */

/* delay with the SPEC's default; n as for CPU.  0 or 400 (sent). */
static int
wall_params(pe_req_t *r, double *n, double *delay)
{
    int rc;
    if ((rc = pe_param_number(r, "n", 1e8, 1, 1e12, n)))
        return rc;
    /* at least 1 ms: every tick interrupts sleeping threads */
    return pe_param_number(r, "delay", 0.01, 0.001, 10, delay);
}

static int
open_wall(pe_req_t *r, double n, double delay, pe_sampler_win_t **w)
{
    double running = 0;
    int rc = pe_sampler_open_wall(delay, (int64_t)n, w, &running);

    switch (rc) {
    case 0: return 0;
    case -EBUSY:
        return pe_http_error(r, 409,
                             "a wall-clock profile is running at delay=%g s; ask with delay=%g "
                             "(asked delay=%g)",
                             running, running, delay);
    case -EPERM:
        return pe_http_error(r, 503,
                             "wall-clock profiling unavailable: SIGPROF is handled by the program");
    default:
        return pe_http_error(r, 500, "wall-clock profiling failed to start: %s", strerror(-rc));
    }
}

int
pe_http_h_profile_wall(pe_req_t *r)
{
    double n, delay, duration;
    pe_sampler_win_t *w;
    pe_prof_t *p;
    int rc;

    if ((rc = wall_params(r, &n, &delay)))
        return rc;
    if ((rc = pe_param_number(r, "duration", 10, 0, pe_http_max_seconds(), &duration)))
        return rc;
    if ((rc = pe_http_long_begin(r)))
        return rc;
    if ((rc = open_wall(r, n, delay, &w)))
        goto out;
    pe_http_sleep(r, duration); /* at shutdown: stop early and send what we have */
    p = pe_sampler_close(w);
    rc = pe_http_send_profile(r, p, "wall");
    pe_prof_free(p);
out:
    pe_http_long_end();
    return rc;
}

int
pe_http_h_profile_wall_start(pe_req_t *r)
{
    double n, delay;
    char line[160];
    int rc;

    if ((rc = wall_params(r, &n, &delay)))
        return rc;
    pthread_mutex_lock(&sess_lock);
    if (sess) {
        rc = pe_http_error(r, 409,
                           "a wall-clock profile session is already running (delay=%g s); "
                           "stop it with /profile_wall_stop",
                           sess_delay);
        goto out;
    }
    if ((rc = open_wall(r, n, delay, &sess)))
        goto out;
    sess_delay = delay;
    snprintf(line, sizeof(line),
             "wall-clock profiling started (delay=%g s, n=%.0f); /profile_wall_stop returns the "
             "profile\n",
             delay, n);
    rc = pe_http_reply(r, 200, "text/plain", line);
out:
    pthread_mutex_unlock(&sess_lock);
    return rc;
}

int
pe_http_h_profile_wall_stop(pe_req_t *r)
{
    pe_sampler_win_t *w;
    pe_prof_t *p;
    int rc;

    pthread_mutex_lock(&sess_lock);
    w = sess;
    sess = NULL;
    pthread_mutex_unlock(&sess_lock);
    if (!w)
        return pe_http_error(
            r, 409, "no wall-clock profile session is running; start one with /profile_wall_start");
    p = pe_sampler_close(w);
    rc = pe_http_send_profile(r, p, "wall");
    pe_prof_free(p);
    return rc;
}
