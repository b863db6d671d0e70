/*
 * h_tree_merge.c: `pid=all` on the profile endpoints: the same request, with
 * format=pprof, sent to every live process of the tree (the root included,
 * through its own loopback port) at once, at most PE_MERGE_PAR in flight, in
 * one poll loop bounded by the request's deadline (h_tree.c).  Each answer
 * (at most PE_MERGE_MAX_BODY bytes, gunzipped at most PE_MERGE_MAX_PB) is
 * handed, as soon as it is complete, to proto/decode.h, which adds its
 * samples to one profile by function names, each with the labels pid
 * (numeric) and program (string) besides at most two of its own.  Processes that cannot answer are
 * named in the profile's comments.  format= views are rendered from the merge.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/tree.h"
#include "../proto/decode.h"
#include "http_int.h"

#define PE_MERGE_PAR 32
#define PE_MERGE_MAX_BODY (32u << 20)
#define PE_MERGE_MAX_PB (128u << 20)

static const char *const merge_paths[] = {
    "/profile",           "/profile_wall",       "/debug/pprof/profile",
    "/debug/pprof/heap",  "/debug/pprof/allocs", "/debug/pprof/goroutine",
    "/debug/pprof/mutex", "/debug/pprof/block",  "/debug/fgprof",
};

/* ---- one process's profile into the merge ------------------------------------------------ */

typedef struct {
    pe_prof_merge_t pm;
    char errs[1024]; /* "pid N (prog): why; ..." */
    size_t errlen;
} merge_t;

static void
note_failure(merge_t *m, const pe_tree_proc_t *p, const char *why)
{
    int n;

    if (m->errlen >= sizeof(m->errs) - 1)
        return;
    n = snprintf(m->errs + m->errlen, sizeof(m->errs) - m->errlen, "%spid %d (%s): %s",
                 m->errlen ? "; " : "", (int)p->pid, p->program, why);
    if (n > 0)
        m->errlen +=
            (size_t)n < sizeof(m->errs) - m->errlen ? (size_t)n : sizeof(m->errs) - m->errlen - 1;
}

/* ---- one answer: HTTP, chunked, gzip ------------------------------------------------------- */

static size_t
unchunk(char *body, size_t len)
{
    size_t r = 0, w = 0;

    while (r < len) {
        char *end;
        unsigned long n = strtoul(body + r, &end, 16);
        size_t hdr = (size_t)(end - (body + r));
        char *nl = memchr(body + r, '\n', len - r);
        if (!nl || hdr == 0)
            break;
        r = (size_t)(nl - body) + 1;
        if (n == 0 || n > len - r)
            break;
        memmove(body + w, body + r, n);
        w += n;
        r += n + 2; /* CRLF */
    }
    return w;
}

static const char *
take_answer(merge_t *m, char *resp, size_t len, const pe_tree_proc_t *p)
{
    static char why[160];
    char *hend = NULL, *body;
    size_t blen;
    int status = 0, chunked;
    pe_prof_label_t labs[2];

    if (len >= 4)
        hend = memmem(resp, len, "\r\n\r\n", 4);
    if (!hend || sscanf(resp, "HTTP/%*d.%*d %d", &status) != 1)
        return "no answer";
    *hend = '\0';
    body = hend + 4;
    blen = len - (size_t)(body - resp);
    if (status != 200) {
        /* its one error line says why */
        char *nl = memchr(body, '\n', blen);
        snprintf(why, sizeof(why), "%d %.*s", status,
                 (int)(nl                 ? nl - body
                       : (long)blen > 100 ? 100
                                          : (int)blen),
                 body);
        return why;
    }
    chunked = strcasestr(resp, "Transfer-Encoding: chunked") != NULL;
    if (chunked)
        blen = unchunk(body, blen);
    labs[0].key = "pid";
    labs[0].str = NULL;
    labs[0].num = p->pid;
    labs[0].unit = NULL;
    labs[1].key = "program";
    labs[1].str = p->program;
    labs[1].num = 0;
    labs[1].unit = NULL;
    return pe_prof_merge_add_gz(&m->pm, body, blen, PE_MERGE_MAX_PB, labs, 2);
}

/* ---- the fetch loop ----------------------------------------------------------------------- */

static int
ms_left_merge(double deadline)
{
    double left = deadline - (double)pe_clock_ns(CLOCK_MONOTONIC) / 1e9;

    return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

typedef struct {
    const pe_tree_proc_t *p;
    int fd;
    char *req;
    size_t reqlen, sent;
    char *buf;
    size_t len, cap;
    int done;
} conn_t;

static int
self_port(void)
{
    return pe_http_listening_port();
}

static void
finish(merge_t *m, conn_t *c, const char *why)
{
    if (!why)
        why = take_answer(m, c->buf ? c->buf : "", c->len, c->p);
    if (why)
        note_failure(m, c->p, why);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->req);
    free(c->buf);
    c->req = c->buf = NULL;
    c->done = 1;
}

static void
fetch_all(pe_req_t *r, const char *raw_query, pe_tree_proc_t *v, int n, merge_t *m)
{
    double deadline = pe_http_tree_deadline(r);
    conn_t *c = calloc((size_t)n, sizeof(*c));
    struct pollfd pfd[PE_MERGE_PAR];
    int idx[PE_MERGE_PAR];
    int next = 0, active = 0, i, k;

    if (!c) {
        snprintf(m->errs, sizeof(m->errs), "out of memory");
        return;
    }
    for (;;) {
        /* Start more, up to the bound. */
        while (next < n && active < PE_MERGE_PAR) {
            conn_t *x = &c[next];
            int port = v[next].pid == getpid() ? self_port() : v[next].port;
            x->p = &v[next++];
            x->fd = pe_http_tree_connect(port, deadline);
            if (x->fd < 0) {
                finish(m, x, "does not answer");
                continue;
            }
            x->req = pe_http_tree_request(r, raw_query, port, "format=pprof", &x->reqlen);
            if (!x->req) {
                finish(m, x, "out of memory");
                continue;
            }
            active++;
        }
        if (!active)
            break;
        k = 0;
        for (i = 0; i < n && k < PE_MERGE_PAR; i++) {
            if (c[i].done || !c[i].p || c[i].fd < 0)
                continue;
            pfd[k].fd = c[i].fd;
            pfd[k].events = c[i].sent < c[i].reqlen ? POLLOUT : POLLIN;
            pfd[k].revents = 0;
            idx[k++] = i;
        }
        if (poll(pfd, (nfds_t)k, ms_left_merge(deadline)) <= 0) {
            for (i = 0; i < k; i++)
                finish(m, &c[idx[i]], "did not answer in time");
            active = 0;
            if (next >= n)
                break;
            continue;
        }
        for (i = 0; i < k; i++) {
            conn_t *x = &c[idx[i]];
            ssize_t got;
            if (!pfd[i].revents)
                continue;
            if (x->sent < x->reqlen) {
                got =
                    send(x->fd, x->req + x->sent, x->reqlen - x->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (got > 0)
                    x->sent += (size_t)got;
                else if (got < 0 && errno != EAGAIN && errno != EINTR) {
                    finish(m, x, "went away");
                    active--;
                }
                continue;
            }
            if (x->cap - x->len < 65536) {
                size_t cap = x->cap ? x->cap * 2 : 262144;
                char *nb = cap <= PE_MERGE_MAX_BODY ? realloc(x->buf, cap + 1) : NULL;
                if (!nb) {
                    finish(m, x, "its answer is too large");
                    active--;
                    continue;
                }
                x->buf = nb;
                x->cap = cap;
            }
            got = recv(x->fd, x->buf + x->len, x->cap - x->len, MSG_DONTWAIT);
            if (got > 0) {
                x->len += (size_t)got;
                continue;
            }
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (x->buf)
                x->buf[x->len] = '\0';
            finish(m, x, got < 0 ? "went away" : NULL); /* EOF: the whole answer */
            active--;
        }
        if (pe_http_stopping())
            break;
    }
    for (i = 0; i < n; i++)
        if (c[i].p && !c[i].done)
            finish(m, &c[i], "not asked (the request ended)");
    free(c);
}

int
pe_http_tree_all(pe_req_t *r, const char *raw_query)
{
    pe_tree_proc_t *v;
    merge_t m;
    size_t i;
    int n, rc, known = 0;
    const char *stem;

    for (i = 0; i < PE_ARRAY_SIZE(merge_paths); i++)
        known |= !strcmp(r->path, merge_paths[i]);
    if (!known)
        return pe_http_error(r, 400, "pid=all: %s answers per process only (pid=N)", r->path);
    if (!r->conn)
        return pe_http_error(r, 400, "pid=all cannot be asked from here");
    if (!(n = pe_http_tree_list(&v)))
        return pe_http_error(r, 503, "out of memory");
    memset(&m, 0, sizeof(m));
    fetch_all(r, raw_query, v, n, &m);
    if (!m.pm.prof) {
        rc = pe_http_error(r, 502, "pid=all: no process answered (%s)", m.errs);
        free(v);
        return rc;
    }
    pe_prof_comment(m.pm.prof, "pid=all: %d of %d processes merged", m.pm.merged, n);
    if (m.errlen)
        pe_prof_comment(m.pm.prof, "not merged: %s", m.errs);
    stem = strrchr(r->path, '/') + 1;
    rc = pe_http_send_profile(r, m.pm.prof, stem);
    pe_prof_free(m.pm.prof);
    free(v);
    return rc;
}
