/*
 * routes.c: the one routing table, and the checks every request passes in
 * order: Host and cross-site (421/403, origin.c), query (400), token (401),
 * path (404), method (405); then the handler.  A profile kind's rows
 * (sampler/kind.h) name the kind, whose family's handler reads it from here
 * and whose `unavailable` they take.  Also the cap on concurrent long
 * requests, so that quick endpoints always find a worker.
 */
#include <civetweb.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../heap/heap.h"
#include "../preload/clock.h"
#include "../preload/config.h"
#include "../sampler/kind.h"
#include "../sampler/sampler.h"
#include "../trace/feed.h"
#include "http_int.h"

#define GH (PE_M_GET | PE_M_HEAD)

/* Why a capability cannot work right now (shown by the index); a kind's
   route takes its kind's instead. */
#define SIG pe_sampler_unavailable
#define HEAP pe_heap_unavailable

/* The parameters pe_http_send_profile reads (respond.c): every profile's formats. */
#define FMT "format pprof sample_index names granularity groupby mincount maxdepth"
/* Go's cumulative tables (baseline.c): a window of seconds, or debug text. */
#define WIN "seconds debug"
/* Heap ages and checkpoints (h_heap_time.c). */
#define AGE "min_age max_age"

/* Path, handler, methods, help, example query, parameters, why it cannot work
   now (NULL: nothing, or its kind's), and the kind its family's handler serves. */
const pe_route_t pe_routes[] = {
    {"/debug/pprof/", pe_http_h_index, GH, "this index", "", "", NULL, NULL},
    {"/profile", pe_http_h_sampled, GH, "CPU profile of every thread for duration s", "?duration=5",
     "n delay duration event engine " FMT, NULL, &pe_kind_cpu},
    {"/profile_start", pe_http_h_sampled_start, GH, "start an open-ended CPU profile", "",
     "n delay event engine", NULL, &pe_kind_cpu},
    {"/profile_stop", pe_http_h_sampled_stop, GH, "stop it and return the profile", "", FMT, NULL,
     &pe_kind_cpu},
    {"/profile_wall", pe_http_h_sampled, GH,
     "wall-clock profile of every thread, running or blocked", "?duration=5",
     "n delay duration capture " FMT, NULL, &pe_kind_wall},
    {"/profile_wall_start", pe_http_h_sampled_start, GH, "start an open-ended wall-clock profile",
     "", "n delay capture", NULL, &pe_kind_wall},
    {"/profile_wall_stop", pe_http_h_sampled_stop, GH, "stop it and return the profile", "", FMT,
     NULL, &pe_kind_wall},
    {"/allocs_profile", pe_http_h_session, GH,
     "record malloc-family calls with probability sample_rate for duration s", "?duration=5",
     "sample_rate duration " FMT, NULL, &pe_kind_allocs_profile},
    {"/allocs_profile_start", pe_http_h_session_start, GH, "start recording allocations", "",
     "sample_rate", NULL, &pe_kind_allocs_profile},
    {"/allocs_profile_stop", pe_http_h_session_stop, GH, "stop and return the allocation profile",
     "", FMT, NULL, &pe_kind_allocs_profile},
    {"/heap_snapshot", pe_http_h_heap_snapshot, GH,
     "live sampled heap as a Chrome DevTools .heapsnapshot", "", "all_one " AGE, HEAP, NULL},
    {"/heap_peak", pe_http_h_heap_peak, GH, "live heap per stack at its sampled peak", "",
     "debug " FMT, HEAP, NULL},
    {"/heap_timeline", pe_http_h_heap_timeline, GH,
     "the last hour of RSS, sampled heap, glibc arenas, threads (HTML chart)", "", "format seconds",
     NULL, NULL},
    {"/debug/pprof/profile", pe_http_h_sampled_go, GH, "CPU profile for seconds s (go tool pprof)",
     "?seconds=5", "n delay seconds event engine " FMT, NULL, &pe_kind_cpu},
    {"/debug/pprof/heap", pe_http_h_recorded, GH, "sampled live heap (inuse_space default)", "",
     WIN " since " AGE " " FMT, NULL, &pe_kind_heap},
    {"/debug/pprof/allocs", pe_http_h_recorded, GH,
     "sampled allocations since start (alloc_space default)", "", WIN " since " AGE " " FMT, NULL,
     &pe_kind_allocs},
    {"/debug/pprof/delta_heap", pe_http_h_recorded_delta, GH,
     "godeltaprof: allocations since the previous call of this path, live heap now", "", FMT, NULL,
     &pe_kind_heap},
    {"/debug/pprof/delta_mutex", pe_http_h_recorded_delta, GH,
     "godeltaprof: lock contention since the previous call of this path", "", FMT, NULL,
     &pe_kind_mutex},
    {"/debug/pprof/delta_block", pe_http_h_recorded_delta, GH,
     "godeltaprof: time blocked since the previous call of this path", "", FMT, NULL,
     &pe_kind_block},
    {"/debug/fgprof", pe_http_h_sampled_fgprof, GH,
     "fgprof: wall-clock profile of every thread, on- and off-CPU, for seconds s (default 30)",
     "?seconds=5", "n delay seconds capture " FMT, NULL, &pe_kind_wall},
    {"/debug/pprof/trace", pe_http_h_trace, GH,
     "every thread on a time axis for seconds s (default 1): Chrome trace-event JSON "
     "for speedscope and Perfetto UI",
     "?seconds=1", "seconds delay mem gzip", SIG, NULL},
    {"/debug/pprof/goroutine", pe_http_h_goroutine, GH, "every thread's stack now", "?debug=1",
     "debug capture " FMT, SIG, NULL},
    {"/debug/pprof/threadcreate", pe_http_h_threadcreate, GH,
     "stacks that created the live threads", "", "debug " FMT, NULL, NULL},
    {"/debug/pprof/mutex", pe_http_h_recorded, GH,
     "contended pthread mutexes and rwlocks (contentions, delay)", "", WIN " " FMT, NULL,
     &pe_kind_mutex},
    {"/debug/pprof/block", pe_http_h_recorded, GH, "time blocked on locks and condition variables",
     "", WIN " " FMT, NULL, &pe_kind_block},
    {"/debug/pprof/processes", pe_http_h_processes, GH,
     "the processes of this tree, as JSON (any endpoint takes pid=N, some pid=all)", "", "", NULL,
     NULL},
    {"/debug/pprof/cmdline", pe_http_h_cmdline, GH, "the program's arguments, NUL-separated", "",
     "", NULL, NULL},
    /* Its query is a list of addresses, not parameters. */
    {"/debug/pprof/symbol", pe_http_h_symbol, GH | PE_M_POST,
     "Go's symbol protocol (POST 0xADDR+0xADDR...)", "", NULL, NULL, NULL},
    {"/task_backtraces", pe_http_h_task_backtraces, GH, "every thread's stack now, as text", "",
     "capture", SIG, NULL},
    {"/debug_engine", pe_http_h_debug_engine, PE_M_POST,
     "POST {\"profile_type\": ...}: run it, write the result under PROFEP_STAGE_DIR", "", "", NULL,
     NULL},
};
const int pe_nroutes = PE_ARRAY_SIZE(pe_routes);
_Static_assert(PE_ARRAY_SIZE(pe_routes) <= PE_HTTP_MAX_ROUTES, "PE_HTTP_MAX_ROUTES");

/* A sampled kind's stop only hands back what a window holds: it answers
   whatever the sampler says. */
const char *
pe_http_route_unavailable(const pe_route_t *rt)
{
    const pe_kind_t *k = rt->kind;
    const char *why;

    if (rt->unavailable || !k)
        return rt->unavailable ? rt->unavailable() : NULL;
    if (rt->handler == pe_http_h_sampled_stop)
        return NULL;
    why = k->unavailable ? k->unavailable() : NULL;
    /* a sampled kind takes the sampler's signal, or perf events where the program handles it */
    return why || !k->start ? why : pe_sampler_kinds_unavailable();
}

const pe_route_t *
pe_http_kind_route(const pe_kind_t *k, pe_http_handler_t h)
{
    for (int i = 0; i < pe_nroutes; i++)
        if (pe_routes[i].kind == k && pe_routes[i].handler == h)
            return &pe_routes[i];
    return NULL;
}

const char *
pe_http_kind_path(const pe_kind_t *k, pe_http_handler_t h)
{
    const pe_route_t *rt = pe_http_kind_route(k, h);

    return rt ? rt->path : "";
}

/* ---- long-request slots --------------------------------------------------------- */

static int long_in_flight;
int pe_http_max_long = PE_HTTP_MAX_LONG;
/* Slots held by this thread: a request holds one for its whole time
   (dispatch, or fanout.c for pid=N and pid=all), and what it runs inside
   (its handler, a pid=all request's own part) takes no second one. */
static PE_TLS int slot_depth;

int
pe_http_long_begin(pe_req_t *r)
{
    if (slot_depth > 0) {
        slot_depth++;
        return 0;
    }
    if (__atomic_add_fetch(&long_in_flight, 1, __ATOMIC_ACQ_REL) > pe_http_max_long) {
        __atomic_sub_fetch(&long_in_flight, 1, __ATOMIC_ACQ_REL);
        return pe_http_busy(r, PE_HTTP_RETRY_AFTER_S,
                            "too many requests in flight (%d); try again later", pe_http_max_long);
    }
    slot_depth = 1;
    return 0;
}

void
pe_http_long_atfork_child(void)
{
    long_in_flight = 0;
}

int
pe_http_long_count(void)
{
    return __atomic_load_n(&long_in_flight, __ATOMIC_ACQUIRE);
}

void
pe_http_long_end(void)
{
    if (slot_depth > 0 && --slot_depth > 0)
        return;
    __atomic_sub_fetch(&long_in_flight, 1, __ATOMIC_ACQ_REL);
}

/* The quick endpoints (and a 404) take no slot: the cap leaves them workers. */
static int
quick(const pe_route_t *route)
{
    return !route || route->handler == pe_http_h_index || route->handler == pe_http_h_cmdline ||
           route->handler == pe_http_h_processes;
}

/* ---- checks --------------------------------------------------------------------- */

/* Another endpoint's parameter is never called a typo of this one's. */
static int
known_elsewhere(const char *name)
{
    int i;

    for (i = 0; i < pe_nroutes; i++) {
        if (pe_param_listed(pe_routes[i].params, name))
            return 1;
    }
    return 0;
}

int
pe_http_check_params(pe_req_t *r, const pe_route_t *route)
{
    char known[512];
    int rc;

    if (!route->params)
        return 0;
    snprintf(known, sizeof(known), "%s %s", route->params, PE_HTTP_GLOBAL_PARAMS);
    if ((rc = pe_params_check(r, known, known_elsewhere)))
        return rc;
    /* every value, before any handler starts collecting (param_table.c) */
    return pe_http_check_values(r, route);
}

/* Compare in time that depends only on the lengths, not on where they differ. */
static int
token_equal(const char *given, const char *want)
{
    size_t gl = strlen(given), wl = strlen(want), i;
    unsigned char diff = gl != wl;

    for (i = 0; i < wl; i++)
        diff |= (unsigned char)(want[i] ^ given[i < gl ? i : 0]);
    return diff == 0;
}

static int
authorized(pe_req_t *r, const char *auth_header)
{
    const char *t;

    if (!pe_cfg.token[0])
        return 1;
    if (auth_header && !strncasecmp(auth_header, "Bearer ", 7) &&
        token_equal(auth_header + 7, pe_cfg.token))
        return 1;
    t = pe_param(r, "token");
    return t && token_equal(t, pe_cfg.token);
}

static unsigned
method_bit(const char *m)
{
    if (!strcmp(m, "GET"))
        return PE_M_GET;
    if (!strcmp(m, "HEAD"))
        return PE_M_HEAD;
    if (!strcmp(m, "POST"))
        return PE_M_POST;
    return 0;
}

const pe_route_t *
pe_http_find_route(const char *path)
{
    int i;

    /* Go serves the index for /debug/pprof and any unknown /debug/pprof/name. */
    if (!strcmp(path, "/debug/pprof") || !strcmp(path, "/"))
        return &pe_routes[0];
    for (i = 0; i < pe_nroutes; i++) {
        if (!strcmp(path, pe_routes[i].path))
            return &pe_routes[i];
    }
    return NULL;
}

int
pe_http_route(pe_req_t *r)
{
    const pe_route_t *route = pe_http_find_route(r->path);
    unsigned bit = method_bit(r->method);
    int status;

    if (!route)
        return pe_http_error(r, 404, "%s: no such endpoint; see /debug/pprof/ for the list",
                             r->path);
    if (!(route->methods & bit)) {
        return pe_http_error(r, 405, "%s does not take %s (allowed: %s)", r->path, r->method,
                             route->methods == PE_M_POST  ? "POST"
                             : route->methods & PE_M_POST ? "GET, HEAD, POST"
                                                          : "GET, HEAD");
    }
    r->head = bit == PE_M_HEAD;
    if ((status = pe_http_check_params(r, route)))
        return status;
    status = route->handler(r);
    if (r->long_held) { /* held through the answer: an exit waits for it (server.c) */
        r->long_held = 0;
        pe_http_long_end();
    }
    return status;
}

/* The body of a POST, bounded: symbol lists and debug_engine requests are small. */
#define PE_HTTP_MAX_BODY 65536

int
pe_http_dispatch(struct mg_connection *conn, void *cbdata)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    const pe_route_t *route;
    pe_req_t *r;
    char *body = NULL;
    int status, n, held = 0;
    size_t len = 0;

    if (!ri)
        return 0;
    r = calloc(1, sizeof(*r));
    if (!r)
        return 0;
    r->conn = conn;
    r->method = ri->request_method ? ri->request_method : "GET";
    r->path = ri->local_uri ? ri->local_uri : "/";
    r->accept = mg_get_header(conn, "Accept");
    r->host = mg_get_header(conn, "Host");
    r->head = !strcmp(r->method, "HEAD");
    /* Before anything else: a web page (rebinding its name to us, or
       cross-site) is refused whatever it asks, token or not (origin.c). */
    if ((status = pe_http_check_origin(r, r->host, mg_get_header(conn, "Origin"),
                                       mg_get_header(conn, "Sec-Fetch-Site"))))
        goto out;
    if (pe_params_parse(r, ri->query_string) < 0) {
        status = pe_http_error(r, 400,
                               "query string too long or malformed (at most %d "
                               "parameters, %zu bytes)",
                               PE_HTTP_MAX_PARAMS, sizeof(r->qbuf) - 1);
        goto out;
    }
    if (!authorized(r, mg_get_header(conn, "Authorization"))) {
        status = pe_http_error(r, 401,
                               "PROFEP_TOKEN is set: send Authorization: Bearer TOKEN "
                               "or token=TOKEN");
        goto out;
    }
    if (!strcmp(r->method, "POST")) {
        body = malloc(PE_HTTP_MAX_BODY + 1);
        if (!body) {
            status = pe_http_error(r, 503, "out of memory");
            goto out;
        }
        while (len < PE_HTTP_MAX_BODY &&
               (n = mg_read(conn, body + len, PE_HTTP_MAX_BODY - len)) > 0)
            len += (size_t)n;
        body[len] = '\0';
        r->body = body;
        r->body_len = len;
    }
    /* Everything but the quick endpoints holds a slot for its whole time:
       past the cap it is refused at once (503, Retry-After) instead of
       queueing ahead of them (docs/HARDENING.md). */
    route = pe_http_find_route(r->path);
    if (!quick(route)) {
        if ((status = pe_http_long_begin(r)))
            goto out;
        held = 1;
    }
    /* A typo is answered here before any member is asked (pid=all merges). */
    if (pe_param(r, "pid") && route && (status = pe_http_check_params(r, route)))
        goto out;
    /* pid=N / pid=all: another process of the tree answers (h_tree.c). */
    if ((status = pe_http_tree_route(r, ri->query_string)))
        goto out;
    {
        int64_t t0 = pe_clock_ns(CLOCK_MONOTONIC); /* a trace shows our requests (trace/feed.h) */
        status = pe_http_route(r);
        PE_TRACE_EVENT(PE_TJ_EV_REQUEST, t0, pe_clock_ns(CLOCK_MONOTONIC), status, r->path);
    }
out:
    if (held)
        pe_http_long_end();
    free(body);
    free(r);
    return status > 0 ? status : 500;
}
