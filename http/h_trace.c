/*
 * h_trace.c: /debug/pprof/trace?seconds=N (issue 34; owned by the trace
 * work): every thread on a time axis as Chrome trace-event JSON (the
 * recorder is sampler/trace.h, the layout render/trace_json.h).  Go's own
 * execution-trace format describes goroutines and cannot be produced for a
 * native process; the path is Go's so that scrapers and `profep` find it.
 *
 * Parameters: seconds (default 1, at most PROFEP_MAX_SECONDS), delay between
 * samples (default 0.01, at least 0.001 as /profile_wall), mem (MiB the
 * recording may keep, default 64, at most 1024), gzip=1 (or Accept-Encoding:
 * gzip) for a gzip-encoded body.  Sampled allocations come from the heap
 * sampler at its own rate (PROFEP_HEAP_RATE; otherData.heap_sampling says
 * when it is off).  409 while another trace records, 503 when
 * the program handles SIGPROF.  A client that goes away ends the recording.
 *
 * Signal-safe: no.
 */
#include <civetweb.h>
#include <errno.h>
#include <string.h>

#include "../heap/heap.h"
#include "../sampler/sampler.h"
#include "../sampler/trace.h"
#include "http_int.h"

typedef struct stop_arg_s {
    pe_req_t *r;
    int fd; /* the client's socket, -2 before the first look */
} stop_arg_t;

static int
client_left(void *arg)
{
    stop_arg_t *a = arg;

    return pe_http_client_gone(a->r, &a->fd);
}

/* gzip=1, or Accept-Encoding naming gzip (without q=0). */
static int
wants_gzip(pe_req_t *r, int *out)
{
    const char *ae = r->conn ? mg_get_header(r->conn, "Accept-Encoding") : NULL;
    const char *g = ae ? strstr(ae, "gzip") : NULL;

    return pe_param_bool(r, "gzip", g && strncmp(g + 4, ";q=0", 4) != 0 ? 1 : 0, out);
}

int
pe_http_h_trace(pe_req_t *r)
{
    double seconds, delay, mem;
    pe_trace_opts_t o;
    stop_arg_t sa = {r, -2};
    pe_tj_trace_t *t = NULL;
    pe_resp_t resp;
    pe_gzip_t gz;
    int rc, gzip;

    if ((rc = pe_param_number(r, "seconds", 1, 0, pe_http_max_seconds(), &seconds)) ||
        (rc = pe_param_number(r, "delay", 0.01, 1e-3, 10, &delay)) ||
        (rc = pe_param_number(r, "mem", 64, 1, 1024, &mem)) || (rc = wants_gzip(r, &gzip)))
        return rc;
    if (pe_sampler_unavailable())
        return pe_http_error(r, 503, "tracing unavailable: %s", pe_sampler_unavailable());
    if ((rc = pe_http_long_begin(r)))
        return rc;
    memset(&o, 0, sizeof(o));
    o.seconds = seconds;
    o.delay = delay;
    o.budget = (int64_t)(mem * 1048576);
    o.stop = client_left;
    o.arg = &sa;
    /* sampled allocations: the heap sampler's own, at its rate (the trace says when off) */
    o.heap_rate = pe_heap_rate();
    o.heap_off = pe_heap_available() ? NULL
                 : *pe_heap_reason() ? pe_heap_reason()
                                     : "heap profiling is unavailable";
    o.heap_stack = pe_heap_stack;
    switch (pe_trace_record(&o, &t)) {
    case 0: break;
    case -EBUSY:
        rc = pe_http_error(r, 409, "a trace is already recording; one at a time");
        goto out;
    case -EPERM:
        rc = pe_http_error(r, 503, "tracing unavailable: SIGPROF is handled by the program");
        goto out;
    default: rc = pe_http_error(r, 500, "the trace failed: out of memory"); goto out;
    }
    if (t->ended && !strncmp(t->ended, "the client", 10)) {
        rc = 499; /* nobody to answer; the slot and the memory go back now */
        goto out;
    }
    /* the compressor first (it writes nothing before its first write): a failure can still
       be answered */
    if (gzip && pe_gzip_open(&gz, &resp.sink, 6) < 0) {
        rc = pe_http_error(r, 500, "the trace failed: out of memory for gzip");
        goto out;
    }
    /* pe_http_begin writes the type into its header line as given: the encoding rides along */
    pe_http_begin(r, &resp,
                  gzip ? "application/json\r\nContent-Encoding: gzip" : "application/json",
                  "trace.json");
    if (gzip) {
        (void)pe_tj_write(t, &gz.sink);
        (void)pe_gzip_close(&gz);
    } else {
        (void)pe_tj_write(t, &resp.sink);
    }
    rc = pe_http_end(&resp);
out:
    pe_trace_free(t);
    pe_http_long_end();
    return rc;
}
