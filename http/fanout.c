/*
 * fanout.c: what a request that asks the other processes of a tree holds
 * (h_tree.c's pid=N, h_tree_merge.c's pid=all), and what it runs beside its
 * worker.  Such a request never waits on a worker of its own server: its own
 * process's part is built in-process (the handler runs on the same worker
 * with a memory sink, never through our port), and the members are asked
 * over connections of its own, on one thread of ours per request.  At most
 * PE_FANOUT_MAX of them at once, PE_FANOUT_MAX_ALL of them pid=all (what a
 * member's slots can answer at once), each also holding a long-request slot
 * (routes.c), so the quick endpoints keep their workers; one more is refused
 * at once with 503 and Retry-After (docs/HARDENING.md).
 *
 * Signal-safe: no (HTTP worker threads and threads of ours).
 */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../preload/clock.h"
#include "../preload/threads.h"
#include "http_int.h"

/* ---- the bound ---------------------------------------------------------------------- */

static int in_flight, all_in_flight;

/* One more of *count if it stays within max; 0, or the 503 it sent. */
static int
take(pe_req_t *r, int *count, int max, const char *what)
{
    if (__atomic_add_fetch(count, 1, __ATOMIC_ACQ_REL) <= max)
        return 0;
    __atomic_sub_fetch(count, 1, __ATOMIC_ACQ_REL);
    return pe_http_busy(r, PE_HTTP_RETRY_AFTER_S,
                        "%d %s requests are in flight already; try again later", max, what);
}

int
pe_http_fanout_begin(pe_req_t *r, int all)
{
    int rc;

    if ((rc = take(r, &in_flight, PE_FANOUT_MAX, "pid=N and pid=all")))
        return rc;
    if (all && (rc = take(r, &all_in_flight, PE_FANOUT_MAX_ALL, "pid=all")))
        goto out;
    if (!(rc = pe_http_long_begin(r)))
        return 0;
    if (all)
        __atomic_sub_fetch(&all_in_flight, 1, __ATOMIC_ACQ_REL);
out:
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_ACQ_REL);
    return rc;
}

void
pe_http_fanout_end(int all)
{
    pe_http_long_end();
    if (all)
        __atomic_sub_fetch(&all_in_flight, 1, __ATOMIC_ACQ_REL);
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_ACQ_REL);
}

void
pe_http_fanout_atfork_child(void)
{
    in_flight = all_in_flight = 0;
}

/* ---- this process's own part, in-process ------------------------------------------------ */

typedef struct {
    pe_sink_t sink;
    pe_fanout_ans_t *ans;
    pe_req_t *outer; /* the client's request: its leaving stops ours */
    int fd;          /* its socket (pe_http_client_gone's cache) */
} self_sink_t;

static int
self_write(pe_sink_t *sink, const void *buf, size_t len)
{
    self_sink_t *s = (self_sink_t *)sink;
    pe_fanout_ans_t *a = s->ans;

    /* An empty write is pe_http_sleep's question: stop now?  Yes once the
       client left (an exit is answered with what was recorded). */
    if (len == 0)
        return !pe_http_stopping() && pe_http_client_gone(s->outer, &s->fd) ? -EPIPE : 0;
    if (len > a->max - a->len)
        return -EFBIG;
    if (len > a->cap - a->len) {
        size_t cap = a->cap ? a->cap : 65536;
        char *nb;
        while (cap - a->len < len)
            cap *= 2;
        if (cap > a->max)
            cap = a->max;
        if (!(nb = realloc(a->body, cap + 1)))
            return -ENOMEM;
        a->body = nb;
        a->cap = cap;
    }
    memcpy(a->body + a->len, buf, len);
    a->len += len;
    a->body[a->len] = '\0';
    return 0;
}

int
pe_http_fanout_self(pe_req_t *r, const char *query, pe_fanout_ans_t *a)
{
    const pe_route_t *route = pe_http_find_route(r->path);
    self_sink_t s;
    pe_req_t *sub;

    a->status = 0;
    a->errmsg[0] = '\0';
    if (!route || !(sub = calloc(1, sizeof(*sub)))) {
        snprintf(a->errmsg, sizeof(a->errmsg), "%s", route ? "out of memory" : "no such endpoint");
        return a->status = 500;
    }
    sub->method = "GET";
    sub->path = route->path;
    sub->host = r->host;
    memset(&s, 0, sizeof(s));
    s.sink.write = self_write;
    s.ans = a;
    s.outer = r;
    s.fd = -2;
    sub->capture = &s.sink;
    if (pe_params_parse(sub, query) < 0) {
        snprintf(a->errmsg, sizeof(a->errmsg), "query string too long or malformed");
        a->status = 400;
    } else if (!(a->status = pe_http_check_params(sub, route))) {
        /* The slot this request holds covers its own part (routes.c). */
        a->status = route->handler(sub);
    }
    if (a->status != 200 && !a->errmsg[0])
        snprintf(a->errmsg, sizeof(a->errmsg), "%s", sub->errmsg[0] ? sub->errmsg : "failed");
    free(sub);
    return a->status;
}

/* ---- the members, on a thread of ours --------------------------------------------------- */

struct pe_fanout_job_s {
    void (*fn)(void *arg, const int *stop);
    void *arg;
    void (*release)(void *arg);
    int stop;
    int refs; /* the thread's and the worker's: the last one releases arg */
    sem_t done;
};

static void
job_put(pe_fanout_job_t *j)
{
    if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL))
        return;
    if (j->release)
        j->release(j->arg);
    sem_destroy(&j->done);
    free(j);
}

static void *
job_main(void *arg)
{
    pe_fanout_job_t *j = arg;

    pe_threads_mark_internal();
    j->fn(j->arg, &j->stop);
    sem_post(&j->done);
    job_put(j);
    return NULL;
}

pe_fanout_job_t *
pe_http_fanout_spawn(void (*fn)(void *arg, const int *stop), void *arg, void (*release)(void *arg))
{
    pe_fanout_job_t *j = calloc(1, sizeof(*j));

    if (!j)
        return NULL;
    j->fn = fn;
    j->arg = arg;
    j->release = release;
    j->refs = 2;
    sem_init(&j->done, 0, 0);
    if (pe_threads_start_internal(job_main, j) < 0) {
        sem_destroy(&j->done);
        free(j);
        return NULL;
    }
    return j;
}

int
pe_http_fanout_wait(pe_fanout_job_t *j, pe_req_t *r, double deadline)
{
    int fd = -2;

    for (;;) {
        int64_t now = pe_clock_ns(CLOCK_MONOTONIC), step = now + 50 * 1000000LL;
        struct timespec until;

        if ((double)now / 1e9 > deadline + PE_FANOUT_GRACE_S)
            return -1;
        until.tv_sec = step / 1000000000LL;
        until.tv_nsec = step % 1000000000LL;
        if (sem_clockwait(&j->done, CLOCK_MONOTONIC, &until) == 0)
            return 0;
        /* a client that left, or the exit: the members are not waited for */
        if (pe_http_stopping() || (r && pe_http_client_gone(r, &fd)))
            __atomic_store_n(&j->stop, 1, __ATOMIC_RELEASE);
    }
}

void
pe_http_fanout_put(pe_fanout_job_t *j)
{
    if (j)
        job_put(j);
}
