/*
 * http.h: the embedded server (civetweb) and the contract every endpoint
 * handler follows.
 *
 * A handler is `int pe_http_h_<name>(pe_req_t *r)`.  It sends exactly one
 * response, either pe_http_error() (one text/plain line with X-Go-Pprof: 1) or
 * a streamed body opened with pe_http_begin() and closed with pe_http_end(),
 * and returns the HTTP status it sent.  Parameters are read with the
 * pe_param_* functions, which send the 400 themselves and return 400.
 * Handlers run on civetweb worker threads, which are marked internal (never
 * sampled, allocations not recorded).
 *
 * Signal-safe: no.
 */
#ifndef PE_HTTP_H
#define PE_HTTP_H

#include <stddef.h>

#include "../preload/pe.h"
#include "../profile/profile.h"
#include "../sink/sink.h"

#define PE_HTTP_MAX_PARAMS 32

struct mg_connection;

typedef struct pe_param_s {
    const char *key;
    const char *val;
} pe_param_t;

typedef struct pe_req_s {
    struct mg_connection *conn; /* NULL in unit tests and /debug_engine */
    const char *method;         /* "GET", "HEAD", "POST", ... */
    const char *path;
    int head;           /* HEAD: headers only */
    const char *accept; /* Accept header, or NULL */
    const char *host;   /* Host header (checked by origin.c), or NULL */
    int nparams;
    pe_param_t params[PE_HTTP_MAX_PARAMS];
    char qbuf[2048];  /* decoded query storage */
    const char *body; /* POST body, NUL-terminated, or NULL */
    size_t body_len;
    pe_sink_t *capture; /* when set (debug_engine), the body goes here, not to conn */
    int status;         /* status sent, 0 before */
    char errmsg[256];   /* error line when capture is set */
    /* Why a profile sent for this request would be empty (a handler's note), or
       NULL: pe_http_send_profile says it in X-Profep-Empty when it is. */
    const char *empty_why;
    int long_held; /* a long-request slot kept until the handler returns (baseline.c) */
} pe_req_t;

/*
 * Start the server thread (preload/init.c), which runs `phase`, start-up's
 * second phase (init.c's pe_init_second_phase), only delay_ms after this call
 * (a process that exits sooner never binds); from the constructor.  0, or
 * -errno after one log line.
 */
int pe_http_start_after(int delay_ms, void (*phase)(void));
/* The same at once with the constructor's phase (a fork child's tree member). */
int pe_http_start(void);
/* The delay the constructor uses (server.c's header says why). */
#define PE_HTTP_START_DELAY_MS 30
/*
 * Start-up's second phase, in the order preload/init.c's phase function
 * calls them on the server thread: libunwind's first walk, under the lock a
 * fork waits on (pe_http_fork_prepare); then bind, port file, registration
 * with the tree's root and the "serving" line.  pe_http_listen returns 1
 * serving as the tree's root (or alone), 0 serving as a tree member, or
 * -errno after at most one line (the caller goes dormant).
 */
void pe_http_warm_unwinder(void);
int pe_http_listen(void);
/* Tell long handlers to finish (process exit); never waits. */
void pe_http_shutdown(void);
/*
 * For good, when the process must be alone (preload/alone.c): long
 * handlers finish, civetweb is stopped (its master and workers joined) and
 * a deferred or later start never happens.  From a program thread, not a
 * signal handler.  1 when a server was stopped, else 0.
 */
int pe_http_step_aside(void);
/* Undo pe_http_step_aside once it has returned (a later `profep attach`). */
void pe_http_rejoin(void);
/* 1 once shutdown was requested. */
int pe_http_stopping(void);
/* Before a fork (prepare handler): waits while the server thread warms the
   unwinder, and keeps it from starting until pe_http_fork_parent or the child. */
void pe_http_fork_prepare(void);
void pe_http_fork_parent(void);
/* In a fork child: the server's threads are gone (a tree member starts its own later). */
void pe_http_atfork_child(void);
/* The port this process serves on, 0 before it listens. */
int pe_http_listening_port(void);

/* ---- responses ---------------------------------------------------------------- */

int pe_http_error(pe_req_t *r, int status, const char *fmt, ...) PE_PRINTF(3, 4);
/* A bound was reached: 503 with `Retry-After: retry_s` (docs/HARDENING.md), at once. */
int pe_http_busy(pe_req_t *r, int retry_s, const char *fmt, ...) PE_PRINTF(3, 4);

/* A streamed 200 response.  filename != NULL adds Content-Disposition: attachment. */
typedef struct pe_resp_s {
    pe_sink_t sink;
    pe_req_t *req;
} pe_resp_t;

int pe_http_begin(pe_req_t *r, pe_resp_t *resp, const char *content_type, const char *filename);
/* Finish the body; returns 200 (the status that was sent). */
int pe_http_end(pe_resp_t *resp);

/* A whole small body at once. */
int pe_http_reply(pe_req_t *r, int status, const char *content_type, const char *body);

/*
 * Send a profile in the requested format: `format=pprof|text|folded|svg`, or
 * `pprof=false` (text), or by Accept header (browser -> svg), else pprof.
 * `name` is the file name stem ("profile", "heap", ...).  Frees nothing.
 */
int pe_http_send_profile(pe_req_t *r, pe_prof_t *p, const char *name);

/* Sleep up to `seconds`, in short steps; returns -1 early if the server is stopping. */
int pe_http_sleep(pe_req_t *r, double seconds);
/* 1 when the server is stopping or the client hung up; *fd caches its socket (-2 at first). */
int pe_http_client_gone(pe_req_t *r, int *fd);

/* ---- parameters (http/params.c) --------------------------------------------- */

/* Raw value of a parameter, or NULL. */
const char *pe_param(const pe_req_t *r, const char *name);
/*
 * A number in the forms 10, 0.01, 1e8, within [min, max].  Absent: def.
 * Returns 0, or 400 after sending "name=value: must be a number in [min, max]".
 */
int pe_param_number(pe_req_t *r, const char *name, double def, double min, double max, double *out);
/* true/false/1/0/yes/no.  Returns 0 or 400 (sent). */
int pe_param_bool(pe_req_t *r, const char *name, int def, int *out);
/* One of the NULL-terminated choices (index into *out).  Returns 0 or 400 (sent). */
int pe_param_enum(pe_req_t *r, const char *name, const char *const *choices, int def, int *out);
/* Split and percent-decode a query string into r->params.  0 or -E2BIG/-EINVAL. */
int pe_params_parse(pe_req_t *r, const char *query);
/*
 * Typos: a parameter of r not in `known` (space-separated names), at least 3
 * characters long and within two edits of one of them, answers 400
 * `unknown parameter "duraton": did you mean "duration"?` (sent; returns 400).
 * Names elsewhere() says are known (other endpoints' parameters; NULL: none)
 * and any other unknown name are ignored, as scrapers add their own.  0 when nothing was sent.
 */
int pe_params_check(pe_req_t *r, const char *known, int (*elsewhere)(const char *name));
/* 1 when name is one of the space-separated words of list (NULL: none). */
int pe_param_listed(const char *list, const char *name);
/* Optimal-string-alignment edit distance of a and b, 3 for anything above 2. */
PE_TESTONLY int pe_param_distance(const char *a, const char *b);

/* The largest duration a request may ask for (PROFEP_MAX_SECONDS). */
double pe_http_max_seconds(void);

#endif /* PE_HTTP_H */
