/*
 * h_tree.c: a process tree through one address (preload/tree.h):
 * /debug/pprof/processes, and `pid=N` on every endpoint, answered by process
 * N through a loopback request to its own server whose response is streamed
 * back as it comes.  Time is bounded (the request's own seconds plus a
 * margin: a hung child holds one worker of the root no longer) and so is
 * memory (one 64 KiB buffer).  `pid=all` is h_tree_merge.c's.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <arpa/inet.h>
#include <civetweb.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/proc.h"
#include "../preload/tree.h"
#include "http_int.h"

/* ---- /debug/pprof/processes --------------------------------------------------------- */

/* /proc/PID/cmdline with its NULs as spaces (what the program shows there now);
   "" when it cannot be read. */
static void
read_cmdline(pid_t pid, char *buf, size_t len)
{
    int n;

    if ((n = pe_proc_pid_read(pid, "cmdline", buf, len)) < 0)
        n = 0;
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    buf[n] = '\0';
    for (int i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
}

static void
proc_addr(const pe_tree_proc_t *p, char *buf, size_t len)
{
    if (p->origin == PE_TREE_ROOT && p->pid == getpid() && !pe_tree_member())
        snprintf(buf, len, "%s:%d", pe_cfg.host, p->port);
    else
        snprintf(buf, len, "127.0.0.1:%d", p->port);
}

int
pe_http_tree_list(pe_tree_proc_t **out)
{
    /* room for a few that register meanwhile; later ones wait for the next list */
    int max = pe_tree_size() + 8;

    *out = malloc((size_t)max * sizeof(**out));
    return *out ? pe_tree_list(*out, max) : 0;
}

int
pe_http_h_processes(pe_req_t *r)
{
    pe_tree_proc_t *v;
    pe_resp_t resp;
    pe_sink_t *s = &resp.sink;
    char addr[128], cmd[1024];
    int n, i;

    if (!(n = pe_http_tree_list(&v)))
        return pe_http_error(r, 503, "out of memory");
    pe_http_begin(r, &resp, "application/json", NULL);
    pe_sink_put(s, "[");
    for (i = 0; i < n; i++) {
        const pe_tree_proc_t *p = &v[i];

        read_cmdline(p->pid, cmd, sizeof(cmd));
        proc_addr(p, addr, sizeof(addr));
        pe_sink_printf(s, "%s\n{\"pid\": %d, \"ppid\": %d, \"program\": ", i ? "," : "",
                       (int)p->pid, (int)pe_proc_ppid(p->pid));
        pe_sink_json_str(s, p->program);
        pe_sink_put(s, ", \"cmdline\": ");
        pe_sink_json_str(s, cmd);
        pe_sink_printf(s, ", \"addr\": \"%s\", \"origin\": \"%s\", \"started\": %lld}", addr,
                       pe_tree_origin_name(p->origin), pe_proc_started(p->starttime));
    }
    pe_sink_put(s, "\n]\n");
    free(v);
    return pe_http_end(&resp);
}

void
pe_http_tree_index(pe_sink_t *s)
{
    pe_tree_proc_t *v = NULL;
    int n, i;

    if (pe_tree_role() != PE_TREE_ROOT || (n = pe_http_tree_list(&v)) <= 1) {
        free(v);
        return;
    }
    pe_sink_printf(s,
                   "<h2>Processes (<a href=\"/debug/pprof/processes\">%d</a>)</h2>\n<p>Any "
                   "endpoint takes <code>pid=N</code>; the profiles also <code>pid=all</code> "
                   "(<a href=\"/debug/pprof/profile?seconds=5&amp;pid=all\">CPU of all</a>)."
                   "</p>\n<table>\n",
                   n);
    for (i = 0; i < n; i++) {
        /* program names are [A-Za-z0-9._-] mostly; anything else is left out */
        char prog[64];
        size_t k, o = 0;
        for (k = 0; v[i].program[k] && o < sizeof(prog) - 1; k++)
            if (strchr("<>&\"'", v[i].program[k]) == NULL)
                prog[o++] = v[i].program[k];
        prog[o] = '\0';
        pe_sink_printf(s,
                       "<tr><td>%d</td><td>%s</td><td>%s</td><td><a "
                       "href=\"/debug/pprof/?pid=%d\">index</a> <a "
                       "href=\"/debug/pprof/profile?seconds=5&amp;pid=%d\">CPU</a> <a "
                       "href=\"/debug/pprof/heap?pid=%d\">heap</a></td></tr>\n",
                       (int)v[i].pid, prog, pe_tree_origin_name(v[i].origin), (int)v[i].pid,
                       (int)v[i].pid, (int)v[i].pid);
    }
    pe_sink_put(s, "</table>\n");
    free(v);
}

/* ---- pid=N: the proxy ------------------------------------------------------------------ */

/* Added to the request's own duration: the child's set-up and the transfer. */
#define PE_TREE_MARGIN_S 15.0

static double
now_s(void)
{
    return (double)pe_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static int
ms_left(double deadline)
{
    double left = deadline - now_s();

    return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

/* The endpoints that record for a while when no duration is given (30 s:
   the longest default of ours); the others answer at once. */
static const char *const timed_paths[] = {
    "/profile",      "/profile_wall",      "/allocs_profile", "/debug/pprof/profile",
    "/debug/fgprof", "/debug/pprof/trace",
};

double
pe_http_tree_deadline(const pe_req_t *r)
{
    const char *v = pe_param(r, "seconds");
    double secs = 0;
    size_t i;

    for (i = 0; i < PE_ARRAY_SIZE(timed_paths); i++)
        if (!strcmp(r->path, timed_paths[i]))
            secs = 30;
    if (!v)
        v = pe_param(r, "duration");
    if (v && (secs = strtod(v, NULL)) < 0)
        secs = 0;
    if (secs > pe_http_max_seconds())
        secs = pe_http_max_seconds();
    return now_s() + secs + PE_TREE_MARGIN_S;
}

/* A loopback connection to port, or -1 (connect bounded by the deadline). */
int
pe_http_tree_connect(int port, double deadline)
{
    struct sockaddr_in a;
    struct pollfd pfd;
    int fd, err = 0;
    socklen_t el = sizeof(err);

    /* On our worker thread: moved high and close-on-exec (preload/fd.h). */
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (errno != EINPROGRESS)
            goto err;
        pfd.fd = fd;
        pfd.events = POLLOUT;
        if (poll(&pfd, 1, ms_left(deadline)) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err)
            goto err;
    }
    return fd;
err:
    close(fd);
    return -1;
}

/* A parameter not passed on: pid itself; with an override, the views (the
   root renders those from the merge). */
static int
dropped(const char *kv, size_t n, int views)
{
    static const char *const always[] = {"pid"}, *const view[] = {"format", "pprof", "debug"};
    size_t k = strcspn(kv, "="), i;

    if (k > n)
        k = n;
    for (i = 0; i < PE_ARRAY_SIZE(always); i++)
        if (k == strlen(always[i]) && !strncmp(kv, always[i], k))
            return 1;
    for (i = 0; views && i < PE_ARRAY_SIZE(view); i++)
        if (k == strlen(view[i]) && !strncmp(kv, view[i], k))
            return 1;
    return 0;
}

int
pe_http_tree_query(const char *raw_query, const char *override, char *buf, size_t len)
{
    const char *p = raw_query ? raw_query : "";
    size_t o = 0, n;

    if (!len)
        return -1;
    buf[0] = '\0';
    while (*p) {
        n = strcspn(p, "&");
        if (n && !dropped(p, n, override != NULL)) {
            if (o + n + 2 > len)
                return -1;
            if (o)
                buf[o++] = '&';
            memcpy(buf + o, p, n);
            o += n;
        }
        p += n;
        if (*p)
            p++;
    }
    if (override && *override) {
        n = strlen(override);
        if (o + n + 2 > len)
            return -1;
        if (o)
            buf[o++] = '&';
        memcpy(buf + o, override, n);
        o += n;
    }
    buf[o] = '\0';
    return 0;
}

/*
 * The request for process N: method, path and the query without `pid`, the
 * Accept header, and the tree's token (the root checked the caller's).
 * malloc'd; NULL on ENOMEM.
 */
char *
pe_http_tree_request(const pe_req_t *r, const char *raw_query, int port, const char *override,
                     size_t *len)
{
    size_t qcap = strlen(raw_query ? raw_query : "") + strlen(override ? override : "") + 2;
    size_t cap = qcap + strlen(pe_cfg.token) + strlen(r->accept ? r->accept : "") +
                 strlen(r->path) + r->body_len + 512;
    char *b = malloc(cap), *q;
    size_t o;

    if (!b)
        return NULL;
    o = (size_t)snprintf(b, cap, "%s %s", r->head ? "HEAD" : r->method, r->path);
    b[o] = '?';
    if (pe_http_tree_query(raw_query, override, b + o + 1, qcap) == 0 && b[o + 1])
        o += 1 + strlen(b + o + 1);
    o += (size_t)snprintf(b + o, cap - o,
                          " HTTP/1.0\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n", port);
    if (r->accept && !override && !strpbrk(r->accept, "\r\n"))
        o += (size_t)snprintf(b + o, cap - o, "Accept: %s\r\n", r->accept);
    if (pe_cfg.token[0])
        o += (size_t)snprintf(b + o, cap - o, "Authorization: Bearer %s\r\n", pe_cfg.token);
    if (r->body)
        o += (size_t)snprintf(b + o, cap - o, "Content-Length: %zu\r\n", r->body_len);
    o += (size_t)snprintf(b + o, cap - o, "\r\n");
    if (r->body) {
        memcpy(b + o, r->body, r->body_len);
        o += r->body_len;
    }
    q = b;
    *len = o;
    return q;
}

/* Send all of buf before the deadline: 0, or -1. */
static int
tree_send(int fd, const char *buf, size_t len, double deadline)
{
    struct pollfd pfd = {fd, POLLOUT, 0};
    ssize_t n;

    while (len) {
        n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (poll(&pfd, 1, ms_left(deadline)) != 1)
            return -1;
    }
    return 0;
}

static int
proxy(pe_req_t *r, const char *raw_query, const pe_tree_proc_t *p)
{
    double deadline = pe_http_tree_deadline(r);
    char *req, *buf = NULL;
    struct pollfd pfd;
    size_t len;
    ssize_t n;
    int fd, status = 0, sent = 0;

    if ((fd = pe_http_tree_connect(p->port, deadline)) < 0)
        return pe_http_error(r, 502, "pid %d (%s) does not answer on 127.0.0.1:%d", (int)p->pid,
                             p->program, p->port);
    req = pe_http_tree_request(r, raw_query, p->port, NULL, &len);
    if (!req || tree_send(fd, req, len, deadline) < 0 || !(buf = malloc(65536))) {
        free(req);
        close(fd);
        return pe_http_error(r, 502, "pid %d: cannot send it the request", (int)p->pid);
    }
    free(req);
    pfd.fd = fd;
    pfd.events = POLLIN;
    for (;;) {
        if (poll(&pfd, 1, ms_left(deadline)) != 1)
            break; /* the deadline: whatever was sent stays sent */
        n = recv(fd, buf, 65536, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        if (!sent) {
            /* "HTTP/1.1 200 OK": the status, for our own return value */
            buf[n < 65535 ? n : 65535] = '\0';
            if (sscanf(buf, "HTTP/%*d.%*d %d", &status) != 1)
                status = 502;
        }
        if (mg_write(r->conn, buf, (size_t)n) <= 0)
            break; /* the client went away */
        sent = 1;
        if (pe_http_stopping())
            break;
    }
    free(buf);
    close(fd);
    if (!sent)
        return pe_http_error(r, 504, "pid %d (%s) did not answer in time", (int)p->pid, p->program);
    r->status = status;
    return status;
}

/* ---- routing --------------------------------------------------------------------------- */

int
pe_http_tree_route(pe_req_t *r, const char *raw_query)
{
    const char *v = pe_param(r, "pid");
    pe_tree_proc_t p;
    char *end;
    long pid;
    int rc;

    if (!v)
        return 0;
    if (!strcmp(v, "all"))
        return pe_http_tree_all(r, raw_query);
    pid = strtol(v, &end, 10);
    if (end == v || *end || pid <= 0 || pid > 0x7fffffff)
        return pe_http_error(r, 400, "pid=%s: must be a process id or \"all\"", v);
    if (pid == (long)getpid())
        return 0; /* answered here, as at this address */
    if (pe_tree_find((pid_t)pid, &p) < 0)
        return pe_http_error(r, 404,
                             "pid %ld is not a live process of this tree; see "
                             "/debug/pprof/processes",
                             pid);
    if (!r->conn)
        return pe_http_error(r, 400, "pid=%ld cannot be proxied from here", pid);
    /* Bounded with pid=all's (fanout.c): a hung member holds no more. */
    if ((rc = pe_http_fanout_begin(r, 0)))
        return rc;
    rc = proxy(r, raw_query, &p);
    pe_http_fanout_end(0);
    return rc;
}
