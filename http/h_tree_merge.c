/*
 * h_tree_merge.c: `pid=all` on the profile endpoints: the same request, with
 * format=pprof, sent to every live process of the tree (the root included,
 * through its own loopback port) at once, at most PE_MERGE_PAR in flight, in
 * one poll loop bounded by the request's deadline (h_tree.c).  Each answer
 * (at most PE_MERGE_MAX_BODY bytes, gunzipped at most PE_MERGE_MAX_PB) is
 * decoded as soon as it is complete and its samples added to one profile by
 * function names, each with the labels pid (numeric) and program (string)
 * besides at most two of its own.  Processes that cannot answer are named in
 * the profile's comments.  format= views are rendered from the merge.
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
#include <zlib.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/tree.h"
#include "http_int.h"

#define PE_MERGE_PAR 32
#define PE_MERGE_MAX_BODY (32u << 20)
#define PE_MERGE_MAX_PB (128u << 20)

static const char *const merge_paths[] = {
    "/profile",           "/profile_wall",       "/debug/pprof/profile",
    "/debug/pprof/heap",  "/debug/pprof/allocs", "/debug/pprof/goroutine",
    "/debug/pprof/mutex", "/debug/pprof/block",  "/debug/fgprof",
};

/* ---- protobuf, just enough of profile.proto --------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
} pb_t;

static int
varint(pb_t *b, uint64_t *v)
{
    int shift = 0;

    *v = 0;
    while (b->p < b->end && shift < 64) {
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 0;
        shift += 7;
    }
    return -1;
}

/* Next field: its number, wire type and, for length-delimited, the sub-buffer. */
static int
field(pb_t *b, int *num, int *wt, uint64_t *v, pb_t *sub)
{
    uint64_t key;

    if (varint(b, &key) < 0)
        return -1;
    *num = (int)(key >> 3);
    *wt = (int)(key & 7);
    switch (*wt) {
    case 0: return varint(b, v);
    case 1:
        if (b->end - b->p < 8)
            return -1;
        b->p += 8;
        return 0;
    case 5:
        if (b->end - b->p < 4)
            return -1;
        b->p += 4;
        return 0;
    case 2:
        if (varint(b, v) < 0 || *v > (uint64_t)(b->end - b->p))
            return -1;
        sub->p = b->p;
        sub->end = b->p + *v;
        b->p += *v;
        return 0;
    default: return -1;
    }
}

/* A repeated integer field, packed (wt 2) or not (wt 0): calls add per value. */
static int
each_int(int wt, uint64_t v, pb_t *sub, int (*add)(void *, uint64_t), void *ctx)
{
    if (wt == 0)
        return add(ctx, v);
    if (wt != 2)
        return -1;
    while (sub->p < sub->end)
        if (varint(sub, &v) < 0 || add(ctx, v) < 0)
            return -1;
    return 0;
}

typedef struct {
    uint64_t *v;
    int n, cap;
} ints_t;

static int
ints_add(void *ctx, uint64_t v)
{
    ints_t *a = ctx;

    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        uint64_t *nv = realloc(a->v, (size_t)cap * sizeof(*nv));
        if (!nv)
            return -1;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = v;
    return 0;
}

/* One decoded profile: tables by id (ids are small and dense in practice). */
typedef struct {
    pb_t *strs;
    uint64_t nstrs;
    uint64_t *fn_name; /* by function id: string index */
    uint64_t nfn;
    ints_t *loc_fns; /* by location id: function ids, leaf first */
    uint64_t *loc_addr;
    uint64_t nloc;
    ints_t types; /* pairs: type, unit string indices */
    uint64_t period_type[2], period;
    int64_t time_nanos, duration_nanos;
} dec_t;

#define PE_MERGE_MAX_ID (1u << 22)

static void
dec_free(dec_t *d)
{
    uint64_t i;

    free(d->strs);
    free(d->fn_name);
    for (i = 0; d->loc_fns && i < d->nloc; i++)
        free(d->loc_fns[i].v);
    free(d->loc_fns);
    free(d->loc_addr);
    free(d->types.v);
}

static char *
str_dup(const dec_t *d, uint64_t i, char *buf, size_t len)
{
    size_t n;

    if (i >= d->nstrs) {
        buf[0] = '\0';
        return buf;
    }
    n = (size_t)(d->strs[i].end - d->strs[i].p);
    if (n >= len)
        n = len - 1;
    memcpy(buf, d->strs[i].p, n);
    buf[n] = '\0';
    return buf;
}

/* First pass: strings, functions, locations and the header fields. */
static int
dec_tables(const uint8_t *buf, size_t len, dec_t *d)
{
    pb_t b = {buf, buf + len}, sub, s2, s3;
    uint64_t v, id, maxfn = 0, maxloc = 0, nstrs = 0;
    int num, wt, n2, w2;

    /* Count and size everything first. */
    while (b.p < b.end) {
        if (field(&b, &num, &wt, &v, &sub) < 0)
            return -1;
        if (num == 6 && wt == 2)
            nstrs++;
        if ((num == 4 || num == 5) && wt == 2) {
            id = 0;
            s2 = sub;
            while (s2.p < s2.end && field(&s2, &n2, &w2, &v, &s3) == 0)
                if (n2 == 1 && w2 == 0)
                    id = v;
            if (id >= PE_MERGE_MAX_ID)
                return -1;
            if (num == 4 && id > maxloc)
                maxloc = id;
            if (num == 5 && id > maxfn)
                maxfn = id;
        }
    }
    d->nstrs = nstrs;
    d->nfn = maxfn + 1;
    d->nloc = maxloc + 1;
    d->strs = calloc(nstrs + 1, sizeof(*d->strs));
    d->fn_name = calloc(d->nfn, sizeof(*d->fn_name));
    d->loc_fns = calloc(d->nloc, sizeof(*d->loc_fns));
    d->loc_addr = calloc(d->nloc, sizeof(*d->loc_addr));
    if (!d->strs || !d->fn_name || !d->loc_fns || !d->loc_addr)
        return -1;
    nstrs = 0;
    for (b.p = buf; b.p < b.end;) {
        if (field(&b, &num, &wt, &v, &sub) < 0)
            return -1;
        switch (num) {
        case 1: /* sample_type */
            if (wt != 2)
                break;
            {
                uint64_t t = 0, u = 0;
                while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s3) == 0) {
                    if (n2 == 1 && w2 == 0)
                        t = v;
                    if (n2 == 2 && w2 == 0)
                        u = v;
                }
                if (ints_add(&d->types, t) < 0 || ints_add(&d->types, u) < 0)
                    return -1;
            }
            break;
        case 4: /* location */
            if (wt != 2)
                break;
            {
                uint64_t lid = 0, addr = 0;
                ints_t fns = {0};
                while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0) {
                    if (n2 == 1 && w2 == 0)
                        lid = v;
                    if (n2 == 3 && w2 == 0)
                        addr = v;
                    if (n2 == 4 && w2 == 2) { /* line: function_id */
                        int n3, w3;
                        pb_t s4;
                        while (s2.p < s2.end && field(&s2, &n3, &w3, &v, &s4) == 0)
                            if (n3 == 1 && w3 == 0 && ints_add(&fns, v) < 0)
                                return -1;
                    }
                }
                if (lid < d->nloc) {
                    free(d->loc_fns[lid].v);
                    d->loc_fns[lid] = fns;
                    d->loc_addr[lid] = addr;
                } else
                    free(fns.v);
            }
            break;
        case 5: /* function */
            if (wt != 2)
                break;
            {
                uint64_t fid = 0, name = 0;
                while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0) {
                    if (n2 == 1 && w2 == 0)
                        fid = v;
                    if (n2 == 2 && w2 == 0)
                        name = v;
                }
                if (fid < d->nfn)
                    d->fn_name[fid] = name;
            }
            break;
        case 6:
            if (wt == 2)
                d->strs[nstrs++] = sub;
            break;
        case 9: d->time_nanos = (int64_t)v; break;
        case 10: d->duration_nanos = (int64_t)v; break;
        case 11:
            while (wt == 2 && sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0)
                if ((n2 == 1 || n2 == 2) && w2 == 0)
                    d->period_type[n2 - 1] = v;
            break;
        case 12: d->period = v; break;
        }
    }
    return d->types.n ? 0 : -1;
}

/* ---- one process's profile into the merge ------------------------------------------------ */

typedef struct {
    pe_prof_t *prof; /* made from the first profile decoded */
    int ntypes;
    char types[4][2][64];
    char errs[1024]; /* "pid N (prog): why; ..." */
    size_t errlen;
    int merged;
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

static const char *
add_samples(merge_t *m, const uint8_t *buf, size_t len, const pe_tree_proc_t *proc)
{
    pb_t b = {buf, buf + len}, sub, s2;
    const char **names = NULL;
    char(*namebuf)[256] = NULL;
    const char *why = NULL;
    dec_t d;
    uint64_t v;
    int num, wt, n2, w2, i;

    memset(&d, 0, sizeof(d));
    if (dec_tables(buf, len, &d) < 0) {
        why = "its profile does not decode";
        goto out;
    }
    if (!m->prof) {
        pe_prof_vt_t vt[4], pt;
        char ptb[2][64];

        m->ntypes = d.types.n / 2 > 4 ? 4 : d.types.n / 2;
        for (i = 0; i < m->ntypes; i++) {
            vt[i].type = str_dup(&d, d.types.v[2 * i], m->types[i][0], 64);
            vt[i].unit = str_dup(&d, d.types.v[2 * i + 1], m->types[i][1], 64);
        }
        pt.type = str_dup(&d, d.period_type[0], ptb[0], 64);
        pt.unit = str_dup(&d, d.period_type[1], ptb[1], 64);
        if (!(m->prof = pe_prof_new(vt, m->ntypes, &pt, (int64_t)d.period))) {
            why = "out of memory";
            goto out;
        }
        pe_prof_set_time(m->prof, d.time_nanos, d.duration_nanos);
    } else {
        char t[64], u[64];
        int same = d.types.n / 2 == m->ntypes;
        for (i = 0; same && i < m->ntypes; i++)
            same = !strcmp(str_dup(&d, d.types.v[2 * i], t, 64), m->types[i][0]) &&
                   !strcmp(str_dup(&d, d.types.v[2 * i + 1], u, 64), m->types[i][1]);
        if (!same) {
            why = "other sample types";
            goto out;
        }
    }
    names = malloc(PE_MAX_FRAMES * sizeof(*names));
    namebuf = malloc(PE_MAX_FRAMES * sizeof(*namebuf));
    if (!names || !namebuf) {
        why = "out of memory";
        goto out;
    }
    while (b.p < b.end) {
        ints_t locs = {0}, vals = {0};
        pe_prof_label_t labs[PE_PROF_MAX_LABELS];
        char lkey[2][64], lstr[2][128], lunit[2][32];
        int nl = 0, nf = 0;
        int64_t values[4] = {0};

        if (field(&b, &num, &wt, &v, &sub) < 0)
            break;
        if (num != 2 || wt != 2)
            continue;
        while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0) {
            if (n2 == 1)
                each_int(w2, v, &s2, ints_add, &locs);
            else if (n2 == 2)
                each_int(w2, v, &s2, ints_add, &vals);
            else if (n2 == 3 && w2 == 2 && nl < 2) { /* keep two of its own labels */
                uint64_t k = 0, s = 0, nu = 0, un = 0;
                int n3, w3;
                pb_t s4;
                while (s2.p < s2.end && field(&s2, &n3, &w3, &v, &s4) == 0) {
                    if (w3 != 0)
                        continue;
                    if (n3 == 1)
                        k = v;
                    else if (n3 == 2)
                        s = v;
                    else if (n3 == 3)
                        nu = v;
                    else if (n3 == 4)
                        un = v;
                }
                str_dup(&d, k, lkey[nl], sizeof(lkey[nl]));
                if (!lkey[nl][0] || !strcmp(lkey[nl], "pid") || !strcmp(lkey[nl], "program"))
                    continue;
                labs[nl].key = lkey[nl];
                labs[nl].str = s ? str_dup(&d, s, lstr[nl], sizeof(lstr[nl])) : NULL;
                labs[nl].num = (int64_t)nu;
                labs[nl].unit = un ? str_dup(&d, un, lunit[nl], sizeof(lunit[nl])) : NULL;
                nl++;
            }
        }
        for (i = 0; i < locs.n && nf < PE_MAX_FRAMES; i++) {
            uint64_t id = locs.v[i];
            if (id >= d.nloc)
                continue;
            if (!d.loc_fns[id].n) { /* not symbolized there: its address */
                snprintf(namebuf[nf], sizeof(namebuf[nf]), "0x%llx",
                         (unsigned long long)d.loc_addr[id]);
                names[nf] = namebuf[nf];
                nf++;
            }
            for (int j = 0; j < d.loc_fns[id].n && nf < PE_MAX_FRAMES; j++) {
                uint64_t f = d.loc_fns[id].v[j];
                names[nf] = str_dup(&d, f < d.nfn ? d.fn_name[f] : 0, namebuf[nf], 256);
                if (!names[nf][0])
                    names[nf] = "?";
                nf++;
            }
        }
        for (i = 0; i < vals.n && i < m->ntypes; i++)
            values[i] = (int64_t)vals.v[i];
        labs[nl].key = "pid";
        labs[nl].str = NULL;
        labs[nl].num = proc->pid;
        labs[nl].unit = NULL;
        nl++;
        labs[nl].key = "program";
        labs[nl].str = proc->program;
        labs[nl].unit = NULL;
        nl++;
        if (nf == 0) {
            names[0] = "[no stack]";
            nf = 1;
        }
        pe_prof_add_names(m->prof, names, nf, values, labs, nl);
        free(locs.v);
        free(vals.v);
    }
    m->merged++;
out:
    free(names);
    free(namebuf);
    dec_free(&d);
    return why;
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
    size_t blen, cap = 1 << 20;
    unsigned char *out = NULL;
    int status = 0, chunked;
    z_stream z;
    const char *res;

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
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return "out of memory";
    z.next_in = (unsigned char *)body;
    z.avail_in = (unsigned)blen;
    for (;;) {
        unsigned char *n = realloc(out, cap);
        int rc;
        if (!n) {
            res = "out of memory";
            goto out;
        }
        out = n;
        z.next_out = out + z.total_out;
        z.avail_out = (unsigned)(cap - z.total_out);
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            res = "its profile is not gzip";
            goto out;
        }
        if (z.avail_out) {
            res = "its profile is cut short";
            goto out;
        }
        if (cap >= PE_MERGE_MAX_PB) {
            res = "its profile is too large";
            goto out;
        }
        cap *= 2;
    }
    res = add_samples(m, out, z.total_out, p);
out:
    inflateEnd(&z);
    free(out);
    return res;
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
    if (!m.prof) {
        rc = pe_http_error(r, 502, "pid=all: no process answered (%s)", m.errs);
        free(v);
        return rc;
    }
    pe_prof_comment(m.prof, "pid=all: %d of %d processes merged", m.merged, n);
    if (m.errlen)
        pe_prof_comment(m.prof, "not merged: %s", m.errs);
    stem = strrchr(r->path, '/') + 1;
    rc = pe_http_send_profile(r, m.prof, stem);
    pe_prof_free(m.prof);
    free(v);
    return rc;
}
