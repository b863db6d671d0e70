/*
 * h_threads.c: the every-thread endpoints: /debug/pprof/goroutine (Go's name,
 * kept for scrapers; debug=0 pprof, 1 grouped text, 2 per-thread text),
 * /task_backtraces (the debug=2 text) and /debug/pprof/threadcreate.  The
 * wall-clock profiles share h_profile.c with CPU.  `capture=auto|signal|proc`
 * picks how stacks are taken (default auto: /proc first, a signal only for
 * threads it cannot give; signal: every thread signalled; proc:
 * never a signal).
 * Capturing and the profiles are sampler/allstacks.c's business, the text layout
 * render/gotext.c's, the other formats pe_http_send_profile's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../render/gotext.h"
#include "../sampler/allstacks.h"
#include "../sampler/sampler.h"
#include "http_int.h"

/* ---- stacks now ----------------------------------------------------------------- */

static int
capture(pe_req_t *r, pe_stacks_t **s)
{
    static const char *const modes[] = {"auto", "signal", "proc", NULL};
    int mode, rc;

    if ((rc = pe_param_enum(r, "capture", modes, PE_STACKS_AUTO, &mode)))
        return rc;
    rc = pe_stacks_capture_mode(PE_STACKS_TIMEOUT_MS, mode, s);

    switch (rc) {
    case 0: return 0;
    case -EPERM:
        return pe_http_error(r, 503,
                             "thread stacks unavailable: SIGPROF is handled by the program");
    case -EACCES:
        return pe_http_error(r, 503, "thread stacks unavailable: %s",
                             pe_sampler_unavailable() ? pe_sampler_unavailable() : strerror(-rc));
    case -EAGAIN: /* as h_profile.c */
        return pe_http_busy(r, 1,
                            "thread stacks unavailable: the program is calling exec "
                            "(this image is being replaced); ask again");
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
        rc = pe_http_error(r, 503, "out of memory");
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
        return pe_http_error(r, 503, "out of memory");
    if ((int)debug >= 1) {
        pe_resp_t resp;
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        pe_prof_write_go_grouped(p, &resp.sink, "threadcreate");
        rc = pe_http_end(&resp);
    } else {
        rc = pe_http_send_profile(r, p, "threadcreate");
    }
    pe_prof_free(p);
    return rc;
}
