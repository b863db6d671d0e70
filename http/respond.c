/*
 * respond.c: how responses leave: one-line errors (text/plain, X-Go-Pprof: 1
 * so that go tool pprof shows them), small whole bodies, and streamed bodies
 * sent in chunks as encoders produce them.  When a request carries a capture
 * sink (/debug_engine), the body goes there instead of to a client.
 */
#include <arpa/inet.h>
#include <civetweb.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../preload/init.h"
#include "../preload/proc.h"
#include "../proto/pprof.h"
#include "../render/render.h"
#include "http_int.h"

static const char *
status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 421: return "Misdirected Request";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

/* retry_s > 0: a Retry-After header (a bound was reached; http.h's pe_http_busy). */
static int
error_line(pe_req_t *r, int status, int retry_s, const char *fmt, va_list ap)
{
    char line[512], retry[48] = "";
    int n;

    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    /* One line, whatever the parameter values held. */
    for (int i = 0; i < n; i++) {
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    }
    line[n++] = '\n';
    line[n] = '\0';
    r->status = status;
    if (r->capture || !r->conn) {
        snprintf(r->errmsg, sizeof(r->errmsg), "%.*s", n - 1, line);
        return status;
    }
    if (retry_s > 0)
        snprintf(retry, sizeof(retry), "Retry-After: %d\r\n", retry_s);
    mg_printf(r->conn,
              "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Go-Pprof: 1\r\n"
              "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n%s"
              "Content-Length: %d\r\nConnection: close\r\n\r\n",
              status, status_text(status), retry, n);
    if (!r->head)
        mg_write(r->conn, line, (size_t)n);
    return status;
}

int
pe_http_error(pe_req_t *r, int status, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = error_line(r, status, 0, fmt, ap);
    va_end(ap);
    return rc;
}

int
pe_http_busy(pe_req_t *r, int retry_s, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = error_line(r, 503, retry_s, fmt, ap);
    va_end(ap);
    return rc;
}

static int
conn_write(pe_sink_t *sink, const void *buf, size_t len)
{
    pe_resp_t *resp = (pe_resp_t *)sink;

    if (resp->req->capture)
        return resp->req->capture->write(resp->req->capture, buf, len);
    if (resp->req->head || len == 0)
        return 0;
    if (mg_send_chunk(resp->req->conn, buf, (unsigned)len) <= 0)
        return -EPIPE; /* the client went away: stop encoding, nothing else */
    return 0;
}

/* Every answer: not cached, not sniffed; HTML and SVG also get their CSP (csp.c). */
static void
security_headers(pe_req_t *r, const char *content_type)
{
    const char *csp = pe_http_csp(content_type);

    mg_printf(r->conn, "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n");
    if (csp)
        mg_printf(r->conn, "Content-Security-Policy: %s\r\n", csp);
}

int
pe_http_begin(pe_req_t *r, pe_resp_t *resp, const char *content_type, const char *filename)
{
    memset(resp, 0, sizeof(*resp));
    resp->sink.write = conn_write;
    resp->req = r;
    r->status = 200;
    if (r->capture || !r->conn)
        return 0;
    mg_printf(r->conn, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n", content_type);
    security_headers(r, content_type);
    if (filename)
        mg_printf(r->conn, "Content-Disposition: attachment; filename=\"%s\"\r\n", filename);
    if (r->empty_why) /* our own words, one line (profep prints them) */
        mg_printf(r->conn, "X-Profep-Empty: %s\r\n", r->empty_why);
    mg_printf(r->conn, "%sConnection: close\r\n\r\n",
              r->head ? "" : "Transfer-Encoding: chunked\r\n");
    return 0;
}

int
pe_http_end(pe_resp_t *resp)
{
    pe_req_t *r = resp->req;

    if (!r->capture && r->conn && !r->head)
        mg_send_chunk(r->conn, "", 0); /* the terminating zero-length chunk */
    return 200;
}

int
pe_http_reply(pe_req_t *r, int status, const char *content_type, const char *body)
{
    size_t len = strlen(body);

    r->status = status;
    if (r->capture)
        return r->capture->write(r->capture, body, len) < 0 ? 500 : status;
    if (!r->conn)
        return status;
    mg_printf(r->conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n", status, status_text(status),
              content_type);
    security_headers(r, content_type);
    mg_printf(r->conn, "Content-Length: %zu\r\nConnection: close\r\n\r\n", len);
    if (!r->head)
        mg_write(r->conn, body, len);
    return status;
}

/*
 * The client's socket.  civetweb does not expose it, so find the descriptor
 * whose peer is this request's remote address and port, among the open ones
 * (/proc/self/fd: a few dozen entries, not RLIMIT_NOFILE's thousands).
 */
static int
client_fd(pe_req_t *r)
{
    const struct mg_request_info *ri = mg_get_request_info(r->conn);
    struct sockaddr_storage ss;
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    char addr[INET6_ADDRSTRLEN];
    pe_proc_fds_t it;
    socklen_t len;
    int fd, found = -1;

    if (!ri || pe_proc_fds_open(&it, 0) < 0)
        return -1;
    while (found < 0 && (fd = pe_proc_fds_next(&it)) >= 0) {
        len = sizeof(ss);
        if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
            continue;
        if (ss.ss_family == AF_INET && ntohs(sin->sin_port) == ri->remote_port &&
            inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr)) &&
            !strcmp(addr, ri->remote_addr))
            found = fd;
        if (ss.ss_family == AF_INET6 && ntohs(sin6->sin6_port) == ri->remote_port &&
            inet_ntop(AF_INET6, &sin6->sin6_addr, addr, sizeof(addr)) &&
            !strcmp(addr, ri->remote_addr))
            found = fd;
    }
    pe_proc_fds_close(&it);
    return found;
}

/* 1 once the client hung up (its request is complete, so any EOF is a close). */
static int
client_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};

    return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

int
pe_http_client_gone(pe_req_t *r, int *fd)
{
    if (*fd == -2) /* first look: find the socket once */
        *fd = r->conn && !r->capture ? client_fd(r) : -1;
    return pe_http_stopping() || client_gone(*fd);
}

int
pe_http_sleep(pe_req_t *r, double seconds)
{
    struct timespec end, now, step;
    int fd = r->conn && !r->capture && seconds > 0.2 ? client_fd(r) : -1;

    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)seconds;
    end.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    for (;;) {
        /* A client that left stops its own request (and frees its slot), nothing else. */
        if (pe_http_stopping() || client_gone(fd))
            return -1;
        /* A /debug_engine job past its deadline: its capture refuses even an empty write. */
        if (r->capture && r->capture->write(r->capture, "", 0) < 0)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
            return 0;
        step.tv_sec = 0;
        step.tv_nsec = 20 * 1000000L; /* an exit waits for this step (server.c) */
        nanosleep(&step, NULL);
    }
}

void
pe_http_exit_note(pe_prof_t *p, int64_t t0_ns)
{
    struct timespec now;

    if (!p || !pe_http_stopping())
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    /* The exit waits for this answer (server.c's bound): reading debug info
       for source lines takes 0.3-2 s on a busy machine, function names alone
       a tenth of that. */
    pe_prof_set_debug_budget(p, 0);
    pe_prof_comment(p,
                    "the program exited after %.1f s of the recording: this is what was "
                    "recorded until then (function names only: no time was left for "
                    "source lines)",
                    ((double)now.tv_sec * 1e9 + (double)now.tv_nsec - (double)t0_ns) / 1e9);
}

/* ---- profiles in the format asked for ---------------------------------------------- */

enum { FMT_PPROF, FMT_TEXT, FMT_FOLDED, FMT_SVG, FMT_TREE, FMT_FLAT };

/*
 * `sample_index` as go tool pprof takes it: a sample type's name
 * (inuse_space) or its index.  *vi = -1 when absent.  0 or 400 (sent).
 */
static int
sample_index(pe_req_t *r, pe_prof_t *p, int *vi)
{
    const char *s = pe_param(r, "sample_index");
    char names[256];
    size_t k = 0;
    char *end;
    long n;
    int i;

    *vi = -1;
    if (!s || !*s)
        return 0;
    n = strtol(s, &end, 10);
    if (*end == '\0' && n >= 0 && n < pe_prof_ntypes(p)) {
        *vi = (int)n;
        return 0;
    }
    if (*end != '\0' && (i = pe_prof_type_index(p, s)) >= 0) {
        *vi = i;
        return 0;
    }
    names[0] = '\0';
    for (i = 0; i < pe_prof_ntypes(p) && k < sizeof(names); i++)
        k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", i ? ", " : "",
                              pe_prof_type(p, i)->type);
    return pe_http_error(r, 400, "sample_index=%s: must be one of %s, or 0..%d", s, names,
                         pe_prof_ntypes(p) - 1);
}

/* A browser: its Accept header names HTML or SVG (curl accepts any type, Go sends no Accept). */
static int
browser(const pe_req_t *r)
{
    return r->accept &&
           (strcasestr(r->accept, "text/html") || strcasestr(r->accept, "image/svg+xml"));
}

/* End a streamed profile; an encoder error is the request's status only in a capture. */
static int
profile_end(pe_req_t *r, pe_resp_t *resp, int err)
{
    pe_http_end(resp);
    if (err && r->capture) {
        r->status = 500;
        snprintf(r->errmsg, sizeof(r->errmsg), "%s: writing the profile failed: %s", r->path,
                 strerror(-err));
    }
    return r->status;
}

/*
 * `format` names the encoding (pprof, text, folded, svg) and, as in Julia's
 * Profile.print, the text report's shape (tree, flat); `pprof=false` alone
 * means the text tree, as in ProfileEndpoints.jl.  With neither, a browser gets
 * the SVG flame graph and everything else pprof.  `sample_index` picks the
 * sample type drawn or reported (for pprof it becomes the default type).
 */
int
pe_http_send_profile(pe_req_t *r, pe_prof_t *p, const char *name)
{
    char filename[96], title[256], note[64];
    pe_text_opts_t topts;
    pe_resp_t resp;
    double mincount, maxdepth;
    int st, fmt, pprof, group, vi, def, full, by_line;

    /* attached to a running process: nothing before the attach is in it */
    if (p && pe_init_attach_note(note, sizeof(note))[0])
        pe_prof_comment(p, "%s: nothing before it is seen", note);

    if ((st = pe_param_bool(r, "pprof", 1, &pprof)) ||
        (st = pe_param_enum(r, "names", pe_http_namings, 0, &full)) ||
        (st = pe_param_enum(r, "granularity", pe_http_granularities, 0, &by_line)))
        return st;
    /* names=full: parameters and template arguments in every view */
    if (pe_prof_set_full_names(p, full) < 0)
        return pe_http_error(r, 503, "%s: out of memory naming the profile", r->path);
    pe_prof_set_by_line(p, by_line);
    /* an empty profile says why (profep prints it): the handler's reason, else ours */
    if (pe_prof_nsamples(p) > 0)
        r->empty_why = NULL;
    else if (!r->empty_why)
        r->empty_why = "no samples were recorded";
    def = !pprof ? FMT_TREE : !pe_param(r, "pprof") && browser(r) ? FMT_SVG : FMT_PPROF;
    if ((st = pe_param_enum(r, "format", pe_http_formats, def, &fmt)) ||
        (st = sample_index(r, p, &vi)))
        return st;
    if (fmt == FMT_FOLDED) {
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        return profile_end(r, &resp, pe_prof_write_folded(p, &resp.sink, vi));
    }
    if (fmt == FMT_SVG) {
        snprintf(title, sizeof(title), "%s (pid %d): %s", program_invocation_short_name,
                 (int)getpid(), r->path);
        pe_http_begin(r, &resp, "image/svg+xml", NULL);
        return profile_end(r, &resp, pe_prof_write_svg(p, &resp.sink, vi, title));
    }
    if (fmt != FMT_PPROF) {
        if ((st = pe_param_enum(r, "groupby", pe_http_groupings, 0, &group)) ||
            (st = pe_param_number(r, "mincount", 0, 0, 1e15, &mincount)) ||
            (st = pe_param_number(r, "maxdepth", 0, 0, 100000, &maxdepth)))
            return st;
        memset(&topts, 0, sizeof(topts));
        topts.flat = fmt == FMT_FLAT;
        topts.by_thread = group == 1;
        topts.mincount = (int64_t)mincount;
        topts.maxdepth = (int)maxdepth;
        /* Julia's Profile.print counts samples: CPU and wall reports show the
           sample count unless sample_index asks for another type. */
        topts.value_index = vi >= 0 ? vi : pe_prof_type_index(p, "samples");
        pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
        /* a client that left stops only itself */
        return profile_end(r, &resp, pe_prof_write_text(p, &resp.sink, &topts));
    }
    if (vi >= 0)
        pe_prof_set_default_type(p, pe_prof_type(p, vi)->type);
    snprintf(filename, sizeof(filename), "%s.pb.gz", name);
    pe_http_begin(r, &resp, "application/octet-stream", filename);
    return profile_end(r, &resp, pe_prof_write_pprof(p, &resp.sink));
}
