/*
 * h_snapshot.c: /heap_snapshot (ProfileEndpoints.jl's name): the live sampled
 * heap as a Chrome DevTools .heapsnapshot document.  The objects and their
 * stacks come from heap/ (pe_heap_hsnap: a copy of the live table, read
 * without holding its lock, so the program allocates and frees meanwhile),
 * the streaming from render/heapsnapshot.c; this file reads the parameters and
 * sends it.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../heap/heap.h"
#include "../render/heapsnapshot.h"
#include "http_int.h"

/* ---- the endpoint -------------------------------------------------------------------- */

int
pe_http_h_heap_snapshot(pe_req_t *r)
{
    pe_heap_age_t age;
    int all_one;
    pe_prof_hsnap_t *h = NULL;
    pe_prof_t *p = NULL;
    pe_resp_t resp;
    const char *why;
    int rc;

    if ((why = pe_heap_unavailable())) /* what the index says (heap/heap_kinds.c) */
        return pe_http_error(r, 503, "%s", why);
    if ((rc = pe_param_bool(r, "all_one", 0, &all_one)) || (rc = pe_http_age_parse(r, &age)))
        return rc;
    if ((rc = pe_heap_hsnap(&age, all_one, &p, &h)) < 0)
        return pe_http_error(r, 500, "cannot build the heap snapshot: %s", strerror(-rc));
    pe_http_begin(r, &resp, "application/json", "heap.heapsnapshot");
    rc = pe_prof_hsnap_write(h, &resp.sink); /* a client that left stops only itself */
    pe_http_end(&resp);
    if (rc < 0 && r->capture) {
        r->status = 500;
        snprintf(r->errmsg, sizeof(r->errmsg), "%s: writing the snapshot failed: %s", r->path,
                 strerror(-rc));
    }
    pe_prof_hsnap_free(h);
    pe_prof_free(p);
    return r->status;
}
