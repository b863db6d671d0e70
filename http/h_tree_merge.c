/*
 * h_tree_merge.c: `pid=all` on the profile endpoints: the same request, with
 * format=pprof, answered by every live process of the tree.  This process's
 * own part is built in-process on the request's worker (fanout.c: never
 * through its own port, whose workers may all be busy with the same kind of
 * request); the members are asked at once on a thread of ours, at most
 * PE_MERGE_PAR in flight, in one poll loop bounded by the request's deadline
 * (h_tree.c).  Each answer (at most PE_MERGE_MAX_BODY bytes, gunzipped at
 * most PE_MERGE_MAX_PB) is handed, as soon as it is complete, to
 * proto/decode.h, which adds its samples to one profile by function names,
 * each with the labels pid (numeric) and program (string) besides at most
 * two of its own.  Processes that cannot answer are named in the profile's
 * comments.  format= views are rendered from the merge.  Go's text forms
 * (`debug=1`, `debug=2`) are not merged: each process's text follows a line
 * naming it.  When this process exits meanwhile, what was recorded is
 * answered (its own part stops as a plain profile does; members not done by
 * then are named).
 *
 * Signal-safe: no (HTTP worker threads and the fan-out thread).
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
/* Text forms: what is kept of all the members' texts at once. */
#define PE_MERGE_MAX_TEXT (64u << 20)

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

typedef struct {
    const pe_tree_proc_t *p;
    int fd;
    char *req;
    size_t reqlen, sent;
    char *buf;
    size_t len, cap;
    int done;
    const char *body; /* text mode: its answer's body (inside buf), blen bytes */
    size_t blen;
    char why[200]; /* why it is not in the answer, or "" */
} conn_t;

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

/* The body of c's whole answer (c->body, c->blen), or why not (into c->why). */
static int
parse_answer(conn_t *c)
{
    char *hend = NULL, *body, *resp = c->buf ? c->buf : "";
    size_t len = c->buf ? c->len : 0, blen;
    int status = 0;

    if (len >= 4)
        hend = memmem(resp, len, "\r\n\r\n", 4);
    if (!hend || sscanf(resp, "HTTP/%*d.%*d %d", &status) != 1) {
        snprintf(c->why, sizeof(c->why), "no answer");
        return -1;
    }
    *hend = '\0';
    body = hend + 4;
    blen = len - (size_t)(body - resp);
    if (status != 200) {
        /* its one error line says why */
        char *nl = memchr(body, '\n', blen);
        snprintf(c->why, sizeof(c->why), "%d %.*s", status,
                 (int)(nl                 ? nl - body
                       : (long)blen > 100 ? 100
                                          : (int)blen),
                 body);
        return -1;
    }
    if (strcasestr(resp, "Transfer-Encoding: chunked"))
        blen = unchunk(body, blen);
    c->body = body;
    c->blen = blen;
    return 0;
}

static void
proc_labels(const pe_tree_proc_t *p, pe_prof_label_t labs[2])
{
    labs[0].key = "pid";
    labs[0].str = NULL;
    labs[0].num = p->pid;
    labs[0].unit = NULL;
    labs[1].key = "program";
    labs[1].str = p->program;
    labs[1].num = 0;
    labs[1].unit = NULL;
}

/* ---- the members: the fetch loop (on the fan-out thread) --------------------------------- */

typedef struct {
    pe_tree_proc_t *v; /* the processes, and one connection each (self's unused) */
    conn_t *c;
    int n;
    double deadline;
    int text;    /* Go's text forms: answers kept whole, not merged */
    size_t kept; /* their bytes kept so far */
    merge_t m;   /* otherwise the members' profiles, merged as they come */
} all_t;

static int
ms_left_merge(double deadline)
{
    double left = deadline - (double)pe_clock_ns(CLOCK_MONOTONIC) / 1e9;

    return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

static void
finish(all_t *a, conn_t *c, const char *why)
{
    pe_prof_label_t labs[2];

    if (why) {
        snprintf(c->why, sizeof(c->why), "%s", why);
    } else if (parse_answer(c) < 0) {
        /* c->why says why */
    } else if (!a->text) {
        proc_labels(c->p, labs);
        if ((why = pe_prof_merge_add_gz(&a->m.pm, c->body, c->blen, PE_MERGE_MAX_PB, labs, 2)))
            snprintf(c->why, sizeof(c->why), "%s", why);
    } else if (c->blen > PE_MERGE_MAX_TEXT - a->kept) {
        snprintf(c->why, sizeof(c->why), "its answer is too large (%u MiB of text in all)",
                 PE_MERGE_MAX_TEXT >> 20);
        c->body = NULL;
    } else {
        a->kept += c->blen;
    }
    if (c->why[0] && !a->text)
        note_failure(&a->m, c->p, c->why);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->req);
    c->req = NULL;
    if (!a->text || !c->body) { /* merged, or not kept */
        free(c->buf);
        c->buf = NULL;
        c->body = NULL;
    }
    c->done = 1;
}

static void
fetch_members(void *arg, const int *stop)
{
    all_t *a = arg;
    conn_t *c = a->c;
    struct pollfd pfd[PE_MERGE_PAR];
    int idx[PE_MERGE_PAR];
    int next = 0, active = 0, n = a->n, i, k, ms;

    for (;;) {
        /* Start more, up to the bound. */
        while (next < n && active < PE_MERGE_PAR) {
            conn_t *x = &c[next++];
            if (x->done)
                continue; /* this process (answered in-process), or no request */
            x->fd = pe_http_tree_connect(x->p->port, a->deadline);
            if (x->fd < 0) {
                finish(a, x, "does not answer");
                continue;
            }
            active++;
        }
        if (!active)
            break;
        if (pe_http_stopping() || __atomic_load_n(stop, __ATOMIC_ACQUIRE))
            break;
        k = 0;
        for (i = 0; i < n && k < PE_MERGE_PAR; i++) {
            if (c[i].done || c[i].fd < 0)
                continue;
            pfd[k].fd = c[i].fd;
            pfd[k].events = c[i].sent < c[i].reqlen ? POLLOUT : POLLIN;
            pfd[k].revents = 0;
            idx[k++] = i;
        }
        /* short steps: the exit, or the client leaving, ends the wait */
        ms = ms_left_merge(a->deadline);
        if (ms == 0) {
            for (i = 0; i < k; i++)
                finish(a, &c[idx[i]], "did not answer in time");
            active = 0;
            continue;
        }
        if (poll(pfd, (nfds_t)k, ms < 50 ? ms : 50) <= 0)
            continue;
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
                    finish(a, x, "went away");
                    active--;
                }
                continue;
            }
            if (x->cap - x->len < 65536) {
                size_t cap = x->cap ? x->cap * 2 : 262144;
                char *nb = cap <= PE_MERGE_MAX_BODY ? realloc(x->buf, cap + 1) : NULL;
                if (!nb) {
                    finish(a, x, "its answer is too large");
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
            finish(a, x, got < 0 ? "went away" : NULL); /* EOF: the whole answer */
            active--;
        }
    }
    for (i = 0; i < n; i++)
        if (!c[i].done)
            finish(a, &c[i],
                   pe_http_stopping() ? "not waited for (the tree's root was exiting)"
                   : next > i         ? "not waited for (the request ended)"
                                      : "not asked (the request ended)");
}

static void
all_free(void *arg)
{
    all_t *a = arg;
    int i;

    for (i = 0; i < a->n; i++) {
        if (a->c[i].fd >= 0)
            close(a->c[i].fd);
        free(a->c[i].req);
        free(a->c[i].buf);
    }
    if (a->m.pm.prof)
        pe_prof_free(a->m.pm.prof);
    free(a->c);
    free(a->v);
    free(a);
}

/* ---- the answer -------------------------------------------------------------------------- */

/* Go's text forms: each process's text after a line naming it, in the list's order. */
static int
send_texts(pe_req_t *r, all_t *a, int self, const pe_fanout_ans_t *own)
{
    pe_resp_t resp;
    pe_sink_t *s = &resp.sink;
    int i;

    pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
    for (i = 0; i < a->n; i++) {
        const pe_tree_proc_t *p = &a->v[i];
        const char *body = i == self ? own->body : a->c[i].body;
        size_t len = i == self ? own->len : a->c[i].blen;
        const char *why = i == self ? own->errmsg : a->c[i].why;

        if (i == self && own->status != 200)
            body = NULL;
        pe_sink_printf(s, "%s== pid %d (%s, %s) ==\n", i ? "\n" : "", (int)p->pid, p->program,
                       pe_tree_origin_name(p->origin));
        if (!body) {
            pe_sink_printf(s, "(no answer: %s)\n", why[0] ? why : "no answer");
            continue;
        }
        if (len && s->write(s, body, len) < 0)
            break; /* the client went away */
        if (len && body[len - 1] != '\n')
            pe_sink_put(s, "\n");
    }
    return pe_http_end(&resp);
}

static int
send_merge(pe_req_t *r, merge_t *m, int n, const pe_tree_proc_t *self, const pe_fanout_ans_t *own)
{
    pe_prof_label_t labs[2];
    const char *why = NULL;
    int rc;

    if (self) {
        if (own->status != 200)
            why = own->errmsg;
        else {
            proc_labels(self, labs);
            why = pe_prof_merge_add_gz(&m->pm, own->body, own->len, PE_MERGE_MAX_PB, labs, 2);
        }
        if (why)
            note_failure(m, self, why);
    }
    if (!m->pm.prof)
        return pe_http_error(r, 502, "pid=all: no process answered (%s)", m->errs);
    pe_prof_comment(m->pm.prof, "pid=all: %d of %d processes merged", m->pm.merged, n);
    if (pe_http_stopping())
        pe_prof_comment(m->pm.prof,
                        "pid=all: pid %d exited during the request: this is what was recorded "
                        "until then",
                        (int)getpid());
    if (m->errlen)
        pe_prof_comment(m->pm.prof, "not merged: %s", m->errs);
    rc = pe_http_send_profile(r, m->pm.prof, strrchr(r->path, '/') + 1);
    pe_prof_free(m->pm.prof);
    m->pm.prof = NULL;
    return rc;
}

/* Text asked for: `debug` other than 0 on an endpoint that takes it (Go's
   goroutine, heap, mutex... text). */
static int
wants_text(const pe_req_t *r)
{
    const char *d = pe_param(r, "debug");
    const pe_route_t *rt;

    if (!d || !*d || strtol(d, NULL, 10) == 0)
        return 0;
    rt = pe_http_find_route(r->path);
    return rt && pe_param_listed(rt->params, "debug");
}

int
pe_http_tree_all(pe_req_t *r, const char *raw_query)
{
    pe_fanout_ans_t own;
    pe_fanout_job_t *job;
    char *query = NULL;
    size_t i, qcap;
    int rc, known = 0, self = -1, head, done, text, n;
    pe_tree_proc_t me;
    merge_t alone;
    all_t *a;

    for (i = 0; i < PE_ARRAY_SIZE(merge_paths); i++)
        known |= !strcmp(r->path, merge_paths[i]);
    if (!known)
        return pe_http_error(r, 400, "pid=all: %s answers per process only (pid=N)", r->path);
    if (!r->conn)
        return pe_http_error(r, 400, "pid=all cannot be asked from here");
    /* At once, before anything is asked of anyone: 503 with Retry-After. */
    if ((rc = pe_http_fanout_begin(r, 1)))
        return rc;
    memset(&own, 0, sizeof(own));
    own.max = PE_MERGE_MAX_BODY;
    if (!(a = calloc(1, sizeof(*a))) || !(a->n = pe_http_tree_list(&a->v)) ||
        !(a->c = calloc((size_t)a->n, sizeof(*a->c)))) {
        if (a) {
            free(a->v);
            free(a);
        }
        pe_http_fanout_end(1);
        return pe_http_error(r, 503, "out of memory");
    }
    a->deadline = pe_http_tree_deadline(r);
    a->text = wants_text(r);
    head = r->head;
    r->head = 0; /* the members send their bodies even for a HEAD */
    for (i = 0; i < (size_t)a->n; i++) {
        conn_t *x = &a->c[i];
        x->p = &a->v[i];
        x->fd = -1;
        if (a->v[i].pid == getpid()) {
            self = (int)i;
            x->done = 1;
            continue;
        }
        x->req = pe_http_tree_request(r, raw_query, a->v[i].port, a->text ? NULL : "format=pprof",
                                      &x->reqlen);
        if (!x->req) {
            snprintf(x->why, sizeof(x->why), "out of memory");
            if (!a->text)
                note_failure(&a->m, x->p, x->why);
            x->done = 1;
        }
    }
    r->head = head;
    /* The members on a thread of ours (inline when none can be made), this
       process here meanwhile. */
    if (!(job = pe_http_fanout_spawn(fetch_members, a, all_free))) {
        static const int no_stop;
        fetch_members(a, &no_stop);
    }
    if (self >= 0) {
        qcap = strlen(raw_query ? raw_query : "") + 32;
        if ((query = malloc(qcap)) &&
            pe_http_tree_query(raw_query, a->text ? NULL : "format=pprof", query, qcap) == 0)
            pe_http_fanout_self(r, query, &own);
        else
            snprintf(own.errmsg, sizeof(own.errmsg), "out of memory");
        free(query);
    }
    /* What the worker needs should the thread keep a (it then frees it). */
    text = a->text;
    n = a->n;
    if (self >= 0)
        me = a->v[self];
    done = !job || pe_http_fanout_wait(job, r, a->deadline) == 0;
    if (!done) {
        /* The members' thread is past every bound: this process alone. */
        memset(&alone, 0, sizeof(alone));
        snprintf(alone.errs, sizeof(alone.errs), "the other processes did not answer in time");
        alone.errlen = strlen(alone.errs);
        rc = text || self < 0 ? pe_http_error(r, 504, "pid=all: %s", alone.errs)
                              : send_merge(r, &alone, n, &me, &own);
    } else if (a->text) {
        rc = send_texts(r, a, self, &own);
    } else {
        rc = send_merge(r, &a->m, a->n, self >= 0 ? &a->v[self] : NULL, &own);
    }
    free(own.body);
    if (job) {
        pe_http_fanout_put(job);
    } else {
        all_free(a);
    }
    pe_http_fanout_end(1);
    return rc;
}
