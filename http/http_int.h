/*
 * http_int.h: what the files of http/ share and nobody else sees: the route
 * table, the dispatcher, and every endpoint handler's declaration (each is
 * defined in the h_*.c file of its family).
 */
#ifndef PE_HTTP_INT_H
#define PE_HTTP_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

#define PE_HTTP_WORKERS 8
#define PE_HTTP_WORKERS_STR "8"
/* Requests at once other than the quick endpoints (the index, cmdline,
   processes: routes.c); the other workers stay for those. */
#define PE_HTTP_MAX_LONG (PE_HTTP_WORKERS - 2)
/* A process tree's member (preload/tree.h) keeps a small pool: one per process
   of a 64-worker server; one worker stays for quick requests. */
#define PE_HTTP_MEMBER_WORKERS 3
#define PE_HTTP_MEMBER_WORKERS_STR "3"
/* The cap in force in this process (server.c). */
extern int pe_http_max_long;

extern int pe_http_port;

/* routes.c */
int pe_http_dispatch(struct mg_connection *conn, void *cbdata);
/* Route a request that is already parsed (dispatch, /debug_engine, fuzzing). */
PE_TESTONLY int pe_http_route(pe_req_t *r);
/* Take / give back one of the long-request slots; 0 or 503 (sent, with
   Retry-After).  Nested on one thread (a request, then its handler) they
   count once. */
int pe_http_long_begin(pe_req_t *r);
void pe_http_long_end(void);
/* What a 503 for a reached bound tells the client to wait, in seconds. */
#define PE_HTTP_RETRY_AFTER_S 2
/* Long requests in flight (the exit waits for them, server.c). */
int pe_http_long_count(void);
/* After a profile's wait: when it ended because the program is exiting, a
   comment in p saying so and after how long (t0_ns: CLOCK_MONOTONIC at its
   start). */
void pe_http_exit_note(pe_prof_t *p, int64_t t0_ns);
/* Fork child: no request is in flight any more. */
void pe_http_long_atfork_child(void);
/* h_profile.c: fork child: open-ended sessions belonged to gone threads. */
void pe_http_profile_atfork_child(void);

typedef int (*pe_http_handler_t)(pe_req_t *r);

typedef struct pe_route_s {
    const char *path;
    pe_http_handler_t handler;
    unsigned methods;  /* PE_M_* bits */
    const char *help;  /* one line for the index */
    const char *query; /* example query for the index link, or "" */
    /* The parameters it reads, space-separated (token and pid are everyone's,
       PE_HTTP_GLOBAL_PARAMS); NULL when the query is not parameters (symbol).
       The index lists them; a typo of one answers 400 (pe_params_check). */
    const char *params;
    /* Why the capability cannot work right now, or NULL (the index shows it;
       the handlers answer 503 with their own line).  May itself be NULL; a
       kind's route leaves it NULL and takes its kind's (pe_http_route_unavailable). */
    const char *(*unavailable)(void);
    /* The profile kind it serves (sampler/kind.h), or NULL.  Its handler is
       one of the kind's family (pe_http_h_sampled*, pe_http_h_recorded*,
       pe_http_h_session*), which reads the kind from here, as sample_index
       reads its types (param_table.c): a new kind needs rows, no handler. */
    const struct pe_kind_s *kind;
} pe_route_t;

#define PE_M_GET 1u
#define PE_M_HEAD 2u
#define PE_M_POST 4u

extern const pe_route_t pe_routes[];
extern const int pe_nroutes;
/* At most this many routes (per-path state such as godeltaprof's baselines is an array). */
#define PE_HTTP_MAX_ROUTES 64
/* The route serving path ("/" and "/debug/pprof": the index), or NULL. */
const pe_route_t *pe_http_find_route(const char *path);
/* Why rt cannot answer now (its own check, else its kind's), or NULL: the
   index shows it. */
const char *pe_http_route_unavailable(const pe_route_t *rt);
/* The first route of kind k served by h, or NULL; its path, or "" (messages
   name the kind's other routes). */
const pe_route_t *pe_http_kind_route(const struct pe_kind_s *k, pe_http_handler_t h);
const char *pe_http_kind_path(const struct pe_kind_s *k, pe_http_handler_t h);
/* What every endpoint takes besides its own (routes.c, h_tree.c). */
#define PE_HTTP_GLOBAL_PARAMS "token pid"
/* 0, or the 400 sent for a typo of one of route's parameters or a value
   none of them may hold (routes.c). */
int pe_http_check_params(pe_req_t *r, const pe_route_t *route);

/* param_table.c: what each parameter may hold, checked before the handler
   runs.  0, or 400 after sending the line naming parameter, value and what
   is allowed (the pe_param_* readers' lines). */
int pe_http_check_values(pe_req_t *r, const pe_route_t *route);
/* 1 when the table has a row for name on path (tests: every listed one has). */
PE_TESTONLY int pe_http_param_known(const char *path, const char *name);
/* What an absent parameter means on path ("10", "pprof; svg for a browser"),
   for the index; NULL when nothing is worth saying.  buf may hold it. */
const char *pe_http_param_default(const char *path, const char *name, char *buf, size_t len);
/* The choices of format, groupby, names and granularity (NULL-terminated). */
extern const char *const pe_http_formats[];
extern const char *const pe_http_groupings[];
extern const char *const pe_http_namings[];
extern const char *const pe_http_granularities[];
extern const char *const pe_http_cpu_events[];  /* event= of the CPU profiles */
extern const char *const pe_http_cpu_engines[]; /* engine= of the CPU profiles */

/* h_tree.c: a process tree through one address (preload/tree.h). */
struct pe_tree_proc_s;
int pe_http_h_processes(pe_req_t *r);
/* The index page's table of processes (root with members only). */
void pe_http_tree_index(pe_sink_t *s);
/* pid=N or pid=all: 0 to answer here, else the status sent. */
int pe_http_tree_route(pe_req_t *r, const char *raw_query);
/* The live processes (malloc'd into *out, the caller frees); the count, 0 on ENOMEM. */
int pe_http_tree_list(struct pe_tree_proc_s **out);
/* When a proxied request must be over (CLOCK_MONOTONIC seconds). */
double pe_http_tree_deadline(const pe_req_t *r);
/* Non-blocking loopback connection to port, or -1. */
int pe_http_tree_connect(int port, double deadline);
/* The request line and headers for a member (override: query added, format/debug dropped). */
char *pe_http_tree_request(const pe_req_t *r, const char *raw_query, int port, const char *override,
                           size_t *len);
/* The query for a member (or this process's own part): raw_query without pid,
   and with an override its views dropped and the override added.  0, or -1
   when it does not fit in len. */
int pe_http_tree_query(const char *raw_query, const char *override, char *buf, size_t len);
/* h_tree_merge.c: pid=all. */
int pe_http_tree_all(pe_req_t *r, const char *raw_query);

/* fanout.c: requests that ask the tree's other processes (docs/HARDENING.md). */
/* At most this many at once (pid=N and pid=all), and of them pid=all (each
   asks every member, whose slots answer that many at once); more: 503 with
   Retry-After. */
#define PE_FANOUT_MAX 4
#define PE_FANOUT_MAX_ALL (PE_HTTP_MEMBER_WORKERS - 1)
/* How long past its deadline a request waits for its members' thread. */
#define PE_FANOUT_GRACE_S 5.0
/* Take a fan-out slot (all: a pid=all one) and a long-request slot: 0, or
   the 503 it sent. */
int pe_http_fanout_begin(pe_req_t *r, int all);
void pe_http_fanout_end(int all);
void pe_http_fanout_atfork_child(void);
/* This process's own answer to r's path with `query`, built in-process on
   this worker into body (malloc'd, at most max bytes; the caller frees it). */
typedef struct pe_fanout_ans_s {
    char *body;
    size_t len, cap, max;
    int status;
    char errmsg[256]; /* when status != 200 */
} pe_fanout_ans_t;
int pe_http_fanout_self(pe_req_t *r, const char *query, pe_fanout_ans_t *a);
/* fn(arg, stop) on a thread of ours (stop: a flag it must heed soon); NULL
   when no thread could be made.  pe_http_fanout_wait waits for it until
   deadline + PE_FANOUT_GRACE_S, setting stop when the client of r leaves or
   the program exits: 0 done (arg is the caller's to read), -1 not (arg is
   the thread's).  Then pe_http_fanout_put once: the last of the two calls
   release(arg). */
typedef struct pe_fanout_job_s pe_fanout_job_t;
pe_fanout_job_t *pe_http_fanout_spawn(void (*fn)(void *arg, const int *stop), void *arg,
                                      void (*release)(void *arg));
int pe_http_fanout_wait(pe_fanout_job_t *j, pe_req_t *r, double deadline);
void pe_http_fanout_put(pe_fanout_job_t *j);

/* baseline.c: the window of a cumulative record table a request asks for, and
   godeltaprof's per-path memory (delta_heap, delta_mutex, delta_block). */
typedef struct pe_http_baseline_s {
    pthread_mutex_t lock;
    void *recs;       /* the previous call's cumulative records, or NULL */
    int n;            /* how many */
    int64_t taken_ns; /* when (CLOCK_REALTIME), 0 before the first call */
} pe_http_baseline_t;
#define PE_HTTP_BASELINE_INIT                                                                      \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0                                                      \
    }
/* A fork child: b's lock as new and its stream from the start. */
void pe_http_baseline_atfork_child(pe_http_baseline_t *b);
/* A fork child: the session kinds' start times (h_session.c), the recorded
   kinds' delta baselines (h_recorded.c), /debug_engine's lock (the parent's
   workers may have held them). */
void pe_http_heap_atfork_child(void);
void pe_http_mutex_atfork_child(void);
void pe_http_engine_atfork_child(void);
/* A cumulative record table: how to copy it (malloc'd, in the order delta
   subtracts by) and subtract an earlier copy from a later one. */
typedef struct pe_http_recs_s {
    int (*snap)(void **recs, int *n);
    void (*delta)(void *now, int n, const void *before, int nbefore);
    size_t size; /* one record */
} pe_http_recs_t;
/*
 * The records a request asks for: with `base`, the change since the previous
 * call of that path (the first call: since start); else Go's `seconds=N` (the
 * change over N s, a long request) or cumulative since start, and `debug`.
 * 0 with *recs (malloc'd; the caller frees it), *n, *debug and the window
 * *dur_ns (0 when cumulative); or the status it sent.
 */
int pe_http_recs_window(pe_req_t *r, const pe_http_recs_t *k, pe_http_baseline_t *base, void **recs,
                        int *n, int *debug, int64_t *dur_ns);

/* origin.c: the server as a request must name it */
typedef struct pe_http_self_s {
    const char *listen_host; /* PROFEP_ADDR's host: "127.0.0.1", "0.0.0.0", a name */
    int port;                /* the bound port */
    int tls;                 /* https */
    const char *allowed;     /* PROFEP_ALLOWED_HOSTS, as config.c wrote it */
} pe_http_self_t;
/* 1 when the authority text[0..n) ("name:port", "[::1]:port", "name")
   names this server; a missing port is default_port (80 or 443). */
PE_TESTONLY int pe_http_authority_ok(const pe_http_self_t *self, const char *text, size_t n,
                                     int default_port);
/* 1 when an Origin header value is this server's own origin ("null" is not). */
PE_TESTONLY int pe_http_origin_ok(const pe_http_self_t *self, const char *origin);
/* 1 for Sec-Fetch-Site values a request may carry: none, same-origin. */
PE_TESTONLY int pe_http_fetch_site_ok(const char *value);
/* The checks on a live request's headers (each may be NULL: absent): 0, or
   421 (Host) / 403 (cross-site) after sending the one-line answer. */
int pe_http_check_origin(pe_req_t *r, const char *host, const char *origin, const char *fetch_site);

/* csp.c */
/* The Content-Security-Policy for a response of this type, or NULL (not HTML/SVG). */
const char *pe_http_csp(const char *content_type);
/* "'sha256-...'" for each <script> element of doc, space-separated; 0 or -1. */
PE_TESTONLY int pe_http_script_hashes(const char *doc, size_t len, char *out, size_t outlen);

/* h_misc.c */
int pe_http_h_index(pe_req_t *r);
int pe_http_h_cmdline(pe_req_t *r);
int pe_http_h_symbol(pe_req_t *r);
/* h_profile.c: the routes of a sampled kind (CPU, wall-clock; kind.h), the
   kind read from the route */
int pe_http_h_sampled(pe_req_t *r);        /* ?duration=N (default 10) s of profile */
int pe_http_h_sampled_go(pe_req_t *r);     /* go tool pprof's ?seconds=N (default 30) */
int pe_http_h_sampled_fgprof(pe_req_t *r); /* the same under fgprof's sample type names */
int pe_http_h_sampled_start(pe_req_t *r);  /* open the kind's one open-ended session */
int pe_http_h_sampled_stop(pe_req_t *r);   /* close it and send its profile */
/* fgprof's names for the wall kind's two types (its route's sample_index takes them). */
extern const pe_prof_vt_t pe_http_fgprof_types[2];
/* h_session.c: the routes of a session kind (the allocation recording; kind.h) */
int pe_http_h_session(pe_req_t *r);       /* record for ?duration=N (default 10) s */
int pe_http_h_session_start(pe_req_t *r); /* start the kind's one open-ended recording */
int pe_http_h_session_stop(pe_req_t *r);  /* stop it and send its profile */
/* h_heap_time.c: memory over time (heap ages, checkpoints, peak) */
struct pe_heap_age_s;
/* Read min_age and max_age into f (heap.h); 0 or the 400 it sent. */
int pe_http_age_parse(pe_req_t *r, struct pe_heap_age_s *f);
/* /debug/pprof/heap (and allocs) with min_age, max_age or since: */
int pe_http_heap_time_wanted(pe_req_t *r);
int pe_http_heap_time(pe_req_t *r, const char *name);
int pe_http_h_heap_peak(pe_req_t *r);
/* h_heap_timeline.c */
int pe_http_h_heap_timeline(pe_req_t *r);
/* h_snapshot.c */
int pe_http_h_heap_snapshot(pe_req_t *r);
/* h_recorded.c: the routes of a recorded kind (lock contention, the heap; kind.h) */
int pe_http_h_recorded(pe_req_t *r);       /* cumulative, Go's seconds=N, debug=1 */
int pe_http_h_recorded_delta(pe_req_t *r); /* godeltaprof: since this path's previous call */
/* h_threads.c (every thread: stacks now, threadcreate) */
int pe_http_h_goroutine(pe_req_t *r);
int pe_http_h_task_backtraces(pe_req_t *r);
int pe_http_h_threadcreate(pe_req_t *r);
/* h_trace.c: /debug/pprof/trace (every thread on a time axis) */
int pe_http_h_trace(pe_req_t *r);
/* h_engine.c */
int pe_http_h_debug_engine(pe_req_t *r);
/* /debug_engine's limits (docs/HARDENING.md). */
#define PE_ENGINE_MAX_JOBS 2
#define PE_ENGINE_MAX_FILES 16
#define PE_ENGINE_MAX_SECONDS 120
/* Bytes kept in all, and the most one file may hold: 256 MiB.  Tests lower it. */
PE_TESTONLY extern int64_t pe_http_engine_max_bytes;
/* A job's deadline in seconds; 0 (the default): min(PROFEP_MAX_SECONDS, 120) + 15. Tests set it. */
PE_TESTONLY extern double pe_http_engine_deadline_s;

#endif /* PE_HTTP_INT_H */
