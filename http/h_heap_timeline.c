/*
 * h_heap_timeline.c: /heap_timeline, the last hour of the process's memory
 * (heap/history.c's one-second ring): RSS, the sampled live-heap estimate,
 * glibc's arena figures and the thread count.  This handler reads the
 * parameters and the ring; the chart, page and JSON are render/timeline.c's.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/proc.h"
#include "../preload/threads.h"
#include "../render/timeline.h"
#include "http_int.h"

/* How many of the process's threads are the library's (server, history,
   timers): the page says so beside the thread count.  -1 without /proc. */
static int
threads_ours(void)
{
    pe_proc_tasks_t it;
    pid_t tid;
    int n = 0;

    if (pe_proc_tasks_open(&it) < 0)
        return -1;
    while ((tid = pe_proc_tasks_next(&it)) > 0)
        n += pe_threads_is_internal(tid) != 0;
    pe_proc_tasks_close(&it);
    return n;
}

int
pe_http_h_heap_timeline(pe_req_t *r)
{
    static const char *const formats[] = {"html", "json", "svg", NULL};
    static const char *const types[] = {"text/html; charset=utf-8", "application/json",
                                        "image/svg+xml"};
    pe_prof_tl_t t;
    pe_resp_t resp;
    pe_heap_tl_t *v;
    pe_heap_ck_ent_t *pk = NULL;
    int64_t peak_ns = 0;
    uint64_t peak_b = 0;
    double last;
    int n, fmt, rc, np;

    if (!pe_heap_hist_running())
        return pe_http_error(r, 503, "the heap history thread is not running (see stderr)");
    if ((rc = pe_param_enum(r, "format", formats, 0, &fmt)) ||
        (rc = pe_param_number(r, "seconds", PE_HEAP_TIMELINE, 1, PE_HEAP_TIMELINE, &last)))
        return rc;
    if (pe_heap_hist_timeline(&v, &n) < 0)
        return pe_http_error(r, 503, "out of memory reading the timeline");
    if (!n) {
        free(v);
        return pe_http_error(r, 503, "no timeline yet (one point a second)");
    }
    if (n > (int)last) {
        memmove(v, v + n - (int)last, (size_t)last * sizeof(*v));
        n = (int)last;
    }
    if (pe_heap_hist_peak(&pk, &np, &peak_ns, &peak_b) == 0)
        free(pk);
    memset(&t, 0, sizeof(t));
    t.v = v;
    t.n = n;
    t.peak_ms = peak_ns / 1000000;
    t.peak_bytes = peak_b;
    t.now_ms = pe_clock_ns(CLOCK_REALTIME) / 1000000;
    t.heap_rate = pe_heap_rate();
    t.checkpoint_s = pe_cfg.ckpt_seconds;
    t.checkpoints = pe_heap_hist_checkpoints();
    t.history_bytes = pe_heap_hist_bytes();
    t.program = pe_cfg_progname();
    t.pid = (int)getpid();
    t.ours = threads_ours();
    pe_http_begin(r, &resp, types[fmt], NULL);
    if (fmt == 1)
        pe_prof_timeline_json(&resp.sink, &t);
    else if (fmt == 2)
        pe_prof_timeline_svg(&resp.sink, &t);
    else
        pe_prof_timeline_html(&resp.sink, &t);
    rc = pe_http_end(&resp);
    free(v);
    return rc;
}
