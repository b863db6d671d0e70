/*
 * h_profile.c: the sampled kinds' endpoints (sampler/kind.h): CPU (/profile,
 * /profile_start, /profile_stop, /debug/pprof/profile) and wall-clock
 * (/profile_wall, /profile_wall_start, /profile_wall_stop, and fgprof's
 * /debug/fgprof).  Which kind a request asks for, its route row says
 * (routes.c): every kind is served by the same code, so a new sampled kind
 * needs no code here.  Each request opens its own window on the one shared
 * sampler (sampler/sampler.h), so overlapping requests each get their own
 * window's samples; an open-ended session is one window held here. Formats
 * (pprof=false, format=...) are pe_http_send_profile's business.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/proc.h"
#include "../preload/threads.h"
#include "../preload/tree.h"
#include "../sampler/kind.h"
#include "../sampler/sampler.h"
#include "../symbols/symbols.h"
#include "http_int.h"

/* A kind's one open-ended session. */
typedef struct session_s {
    pthread_mutex_t lock;
    pe_sampler_win_t *w; /* under lock */
    double delay;
} session_t;

/* ---- the kinds ---------------------------------------------------------------------- */

/* What a request needs of its kind: the row, what it is called, and its one
   open-ended session. */
typedef struct kind_s {
    const pe_kind_t *kind; /* the sampler's row (sampler/kind.h) */
    const char *what;      /* in messages: "CPU", "wall-clock" */
    const char *stem;      /* file name stem */
    const char *start;     /* its _start and _stop paths (routes.c) */
    const char *stop;
    double min_delay;
    session_t *sess;
} kind_t;

/* The open-ended sessions, one per kind: at the index of the kind's first route. */
static session_t sessions[PE_HTTP_MAX_ROUTES] = {
    [0 ... PE_HTTP_MAX_ROUTES - 1] = {PTHREAD_MUTEX_INITIALIZER, NULL, 0}};

/* The request's kind (its route's) into *e: 0, or the 500 sent when its
   route names no sampled kind. */
static int
kind_of(pe_req_t *r, kind_t *e)
{
    const pe_route_t *rt = pe_http_find_route(r->path);
    const pe_kind_t *k = rt ? rt->kind : NULL;
    int first = 0;

    if (!k || !k->start)
        return pe_http_error(r, 500, "%s: no sampled kind", r->path);
    while (pe_routes[first].kind != k)
        first++;
    e->kind = k;
    e->sess = &sessions[first];
    e->start = pe_http_kind_path(k, pe_http_h_sampled_start);
    e->stop = pe_http_kind_path(k, pe_http_h_sampled_stop);
    e->what = k->title ? k->title : k->name;
    e->stem = k->stem ? k->stem : k->name;
    e->min_delay = k->min_period ? (double)k->min_period / 1e9 : 1e-3;
    return 0;
}

/* ---- helpers -------------------------------------------------------------------- */

/* n (frame cap) and delay, with ProfileEndpoints.jl's defaults (n=1e8, delay=0.01 s),
   which its clients assume.  0 or 400 (sent). */
static int
sampling_params(pe_req_t *r, const kind_t *k, double *n, double *delay)
{
    int rc;

    if ((rc = pe_param_number(r, "n", 1e8, 1, 1e12, n)))
        return rc;
    return pe_param_number(r, "delay", 0.01, k->min_delay, 10, delay);
}

/* Open a window, answering 409/503/500 itself on failure (returns that status). */
static int
open_window(pe_req_t *r, const kind_t *k, double n, double delay, pe_sampler_win_t **w)
{
    static const char *const capture[] = {"auto", "signal", NULL};
    double running = 0;
    int rc, how = PE_SAMPLER_CAPTURE_AUTO;

    /* wall: capture=signal signals every thread (no /proc reads) */
    if ((k->kind->flags & PE_KIND_F_CAPTURE) &&
        (rc = pe_param_enum(r, "capture", capture, 0, &how)))
        return rc;
    /* CPU: event=cycles|... samples a hardware counter (perf events only);
       engine=perf|timer|auto overrides PROFEP_CPU_ENGINE for the session */
    if (k->kind == &pe_kind_cpu) {
        int ev = 0, eng = -1;
        if ((rc = pe_param_enum(r, "event", pe_http_cpu_events, 0, &ev)) ||
            (rc = pe_param_enum(r, "engine", pe_http_cpu_engines, -1, &eng)))
            return rc;
        rc = pe_sampler_open_cpu(pe_http_cpu_events[ev], eng, delay, (int64_t)n, w, &running);
        if (rc == -ENOENT || rc == -ENOTSUP)
            return pe_http_error(r, 503, "CPU profiling of event=%s unavailable: %s",
                                 pe_http_cpu_events[ev], pe_sampler_cpu_refusal());
        if (rc == -EXDEV)
            return pe_http_error(r, 409, "%s; ask with that event and engine (asked event=%s)",
                                 pe_sampler_cpu_refusal(), pe_http_cpu_events[ev]);
    } else {
        rc = pe_sampler_open_kind(k->kind, delay, (int64_t)n, how, w, &running);
    }

    switch (rc) {
    case 0: return 0;
    case -EBUSY:
        return pe_http_error(r, 409,
                             "a %s profile is running at delay=%g s; ask with delay=%g "
                             "(asked delay=%g)",
                             k->what, running, running, delay);
    case -EPERM: /* the sampler's sentence names the program's handler and why not perf */
        return pe_http_error(r, 503, "%s profiling unavailable: %s", k->what,
                             pe_sampler_cpu_refusal());
    case -EACCES:
        return pe_http_error(r, 503, "%s profiling unavailable: %s", k->what,
                             pe_sampler_unavailable() ? pe_sampler_unavailable() : strerror(-rc));
    case -EAGAIN: /* the signal is handed on to the new image (sampler_before_exec) */
        return pe_http_busy(r, 1,
                            "%s profiling unavailable: the program is calling exec "
                            "(this image is being replaced); ask again",
                            k->what);
    default:
        return pe_http_error(r, 500, "%s profiling failed to start: %s", k->what, strerror(-rc));
    }
}

/* ---- wall coverage ---------------------------------------------------------------- */

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * A wall profile of more threads than its ticks could reach (at most a few
 * per tick) says so: how many threads the program had (its registered
 * threads, the most seen at the start or the end) and how many are in the
 * profile, so that a reader knows the rest were never sampled rather than
 * absent.  Nothing when every thread is in.
 */
static void
wall_coverage(pe_prof_t *p, int threads)
{
    int n = pe_prof_nsamples(p), seen = 0;
    int64_t *tids;

    if (n <= 0 || threads <= 0 || !(tids = malloc((size_t)n * sizeof(*tids))))
        return;
    for (int i = 0; i < n; i++) {
        pe_prof_sample_t s;

        tids[i] = -1;
        pe_prof_sample(p, i, &s);
        for (int l = 0; l < s.nlabels; l++)
            if (!strcmp(s.labels[l].key, "thread"))
                tids[i] = s.labels[l].num;
    }
    qsort(tids, (size_t)n, sizeof(*tids), cmp_i64);
    for (int i = 0; i < n; i++)
        seen += tids[i] >= 0 && (i == 0 || tids[i] != tids[i - 1]);
    free(tids);
    if (seen < threads)
        pe_prof_comment(p,
                        "wall: %d of the program's %d threads are in this profile; the other %d "
                        "were never sampled (each tick reaches a few threads: see the wall line)",
                        seen, threads, threads - seen);
}

static int
program_threads(void)
{
    return pe_threads_count(1 << 30);
}

/* ---- the launcher hint -------------------------------------------------------------- */

/*
 * `timeout 300 ./app` under LD_PRELOAD: the profile asked of the root is
 * timeout's, nearly empty, while ./app is a member of the tree (preload/
 * tree.h).  A CPU profile of a process that used under 1/HINT_IDLE of one CPU
 * while members used more says so in a "hint: " comment (the text views and
 * the SVG title show those), naming the busiest members and the pid= to ask.
 * CPU time comes from /proc/PID/stat (utime + stime).
 */
#define HINT_IDLE 20 /* 5% */
#define HINT_SHOWN 3 /* members named */

typedef struct cpu_mark_s {
    pid_t pid;
    unsigned long long start, ticks; /* start time (pid reuse), utime + stime */
} cpu_mark_t;

typedef struct tree_cpu_s {
    cpu_mark_t *v; /* the members at the start (the root's registry) */
    int n;
    unsigned long long self;
} tree_cpu_t;

static unsigned long long
cpu_ticks(pid_t pid, unsigned long long *start)
{
    pe_proc_stat_t st;

    if (pe_proc_stat(pid, 0, &st) < 0) {
        *start = 0;
        return 0;
    }
    *start = st.starttime;
    return st.utime + st.stime;
}

/* Note the tree's CPU so far; nothing outside a root with members. */
static void
tree_cpu_begin(tree_cpu_t *c)
{
    pe_tree_proc_t *v;
    unsigned long long start;
    int n;

    memset(c, 0, sizeof(*c));
    c->self = cpu_ticks(getpid(), &start);
    if ((n = pe_http_tree_list(&v)) > 1 && (c->v = malloc((size_t)n * sizeof(*c->v)))) {
        for (int i = 0; i < n; i++) {
            c->v[i].pid = v[i].pid;
            c->v[i].ticks = cpu_ticks(v[i].pid, &c->v[i].start);
        }
        c->n = n;
    }
    free(v);
}

/* Add the hint to p when due (`secs` of profiling), and forget c. */
static void
tree_cpu_hint(tree_cpu_t *c, pe_prof_t *p, double secs)
{
    pe_tree_proc_t *v = NULL;
    unsigned long long start, self, used[HINT_SHOWN] = {0};
    const pe_tree_proc_t *top[HINT_SHOWN] = {NULL};
    double hz = (double)sysconf(_SC_CLK_TCK), idle;
    char line[1000];
    int n, len;

    if (!c->v || !p || hz <= 0)
        goto out;
    self = cpu_ticks(getpid(), &start) - c->self;
    idle = secs * hz / HINT_IDLE; /* ticks: 5% of one CPU over the profile */
    if ((double)self >= idle || (n = pe_http_tree_list(&v)) < 2)
        goto out;
    for (int i = 0; i < n; i++) {
        unsigned long long d = cpu_ticks(v[i].pid, &start);

        if (v[i].pid == getpid())
            continue;
        for (int j = 0; j < c->n; j++) /* a member that started meanwhile: all of it */
            if (c->v[j].pid == v[i].pid && c->v[j].start == start)
                d = d >= c->v[j].ticks ? d - c->v[j].ticks : 0;
        for (int k = 0; k < HINT_SHOWN; k++) {
            if (!top[k] || d > used[k]) {
                memmove(&top[k + 1], &top[k], (HINT_SHOWN - 1 - (size_t)k) * sizeof(top[0]));
                memmove(&used[k + 1], &used[k], (HINT_SHOWN - 1 - (size_t)k) * sizeof(used[0]));
                top[k] = &v[i];
                used[k] = d;
                break;
            }
        }
    }
    if (!top[0] || (double)used[0] < idle || used[0] < 2)
        goto out;
    len = snprintf(line, sizeof(line),
                   "hint: pid %d (%s) used almost no CPU (%.2f s in %.1f s); its tree's members "
                   "did:",
                   (int)getpid(), pe_cfg_progname(), (double)self / hz, secs);
    for (int k = 0; k < HINT_SHOWN && top[k] && (double)used[k] >= idle; k++)
        len += snprintf(line + len, sizeof(line) - (size_t)len, "%s %d (%s) %.2f s", k ? "," : "",
                        (int)top[k]->pid, top[k]->program, (double)used[k] / hz);
    snprintf(line + len, sizeof(line) - (size_t)len, "; ask with ?pid=%d", (int)top[0]->pid);
    (void)pe_prof_comment(p, "%s", line);
out:
    free(v);
    free(c->v);
    c->v = NULL;
}

/* ---- the JIT hint ------------------------------------------------------------------- */

/*
 * node without --perf-basic-prof (or any JIT without a perf map): its code
 * is anonymous executable memory ("[jit]"), shown as bare addresses.  When a
 * fifth or more of the profile's weight has such a frame and no perf map or
 * jitdump was found (symbols/jitmap.c), a "hint: " comment says how to get
 * names.  Resolves p (the send would anyway).
 */
static void
jit_hint(pe_prof_t *p)
{
    int64_t all = 0, bare = 0;
    const char *prog = pe_cfg_progname();

    if (!p || pe_prof_resolve(p, 0) < 0)
        return;
    for (int i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample_t sm;

        pe_prof_sample(p, i, &sm);
        all += sm.values[0];
        for (int f = 0; f < sm.nframes; f++) {
            const pe_prof_frame_t *fr = sm.frames[f];
            if (fr->file && !strcmp(fr->file, "[jit]") && !strncmp(fr->name, "0x", 2)) {
                bare += sm.values[0];
                break;
            }
        }
    }
    if (all <= 0 || bare * 5 < all || pe_sym_jit_found())
        return;
    if (!strncmp(prog, "node", 4)) /* node, nodejs */
        (void)pe_prof_comment(p,
                              "hint: %lld%% of the samples run JIT code without names; start "
                              "node with --perf-basic-prof (it writes /tmp/perf-%d.map, which "
                              "names them)",
                              (long long)(bare * 100 / all), (int)getpid());
    else
        (void)pe_prof_comment(p,
                              "hint: %lld%% of the samples run JIT code without names and "
                              "there is no /tmp/perf-%d.map; ask the runtime for a perf map "
                              "(node --perf-basic-prof, python -X perf, the JVM's "
                              "-XX:+DumpPerfMapAtExit)",
                              (long long)(bare * 100 / all), (int)getpid());
}

/* fgprof's names for its wall-clock profile (every thread, on- and off-CPU). */
const pe_prof_vt_t pe_http_fgprof_types[2] = {{"samples", "count"}, {"time", "nanoseconds"}};
static const pe_prof_vt_t fgprof_period = {"wallclock", "nanoseconds"};

/* Profile for the `secname` parameter's seconds (default def), then send it,
   under fgprof's sample type names when `fgprof`. */
static int
timed_profile(pe_req_t *r, const kind_t *k, const char *secname, double def, int fgprof)
{
    double n, delay, seconds;
    pe_sampler_win_t *w;
    pe_prof_t *p;
    tree_cpu_t tc = {0};
    int64_t t0;
    int rc, nthreads = 0;

    if ((rc = sampling_params(r, k, &n, &delay)) ||
        (rc = pe_param_number(r, secname, def, 0, pe_http_max_seconds(), &seconds)))
        return rc;
    if ((rc = pe_http_long_begin(r)))
        return rc;
    if ((rc = open_window(r, k, n, delay, &w)))
        goto out;
    t0 = pe_clock_ns(CLOCK_MONOTONIC);
    if (k->kind->flags & PE_KIND_F_ONCPU)
        tree_cpu_begin(&tc);
    else
        nthreads = program_threads();
    pe_http_sleep(r, seconds); /* at exit or hang-up: stop early, send what we have */
    p = pe_sampler_close(w);
    pe_http_exit_note(p, t0); /* first: at exit jit_hint's resolve reads names only */
    if (!(k->kind->flags & PE_KIND_F_ONCPU)) {
        int now = program_threads();
        wall_coverage(p, now > nthreads ? now : nthreads);
    }
    tree_cpu_hint(&tc, p, (double)(pe_clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
    jit_hint(p);
    if (fgprof && pe_prof_retype(p, pe_http_fgprof_types, 2, &fgprof_period) < 0)
        rc = pe_http_error(r, 503, "out of memory naming the fgprof profile");
    else
        rc = pe_http_send_profile(r, p, fgprof ? "fgprof" : k->stem);
    pe_prof_free(p);
out:
    pe_http_long_end();
    return rc;
}

static int
session_start(pe_req_t *r, const kind_t *k)
{
    session_t *ss = k->sess;
    double n, delay;
    char line[200];
    int rc;

    if ((rc = sampling_params(r, k, &n, &delay)))
        return rc;
    pthread_mutex_lock(&ss->lock);
    if (ss->w) {
        rc = pe_http_error(r, 409,
                           "a %s profile session is already running (delay=%g s); "
                           "stop it with %s",
                           k->what, ss->delay, k->stop);
        goto out;
    }
    if ((rc = open_window(r, k, n, delay, &ss->w)))
        goto out;
    ss->delay = delay;
    snprintf(line, sizeof(line),
             "%s profiling started (delay=%g s, n=%.0f); %s returns the "
             "profile\n",
             k->what, delay, n, k->stop);
    rc = pe_http_reply(r, 200, "text/plain", line);
out:
    pthread_mutex_unlock(&ss->lock);
    return rc;
}

static int
session_stop(pe_req_t *r, const kind_t *k)
{
    pe_sampler_win_t *w;
    pe_prof_t *p;
    int rc;

    pthread_mutex_lock(&k->sess->lock);
    w = k->sess->w;
    k->sess->w = NULL;
    pthread_mutex_unlock(&k->sess->lock);
    if (!w)
        return pe_http_error(r, 409, "no %s profile session is running; start one with %s", k->what,
                             k->start);
    p = pe_sampler_close(w);
    if (!(k->kind->flags & PE_KIND_F_ONCPU))
        wall_coverage(p, program_threads());
    jit_hint(p);
    rc = pe_http_send_profile(r, p, k->stem);
    pe_prof_free(p);
    return rc;
}

/* ---- handlers ------------------------------------------------------------------- */

int
pe_http_h_sampled(pe_req_t *r)
{
    kind_t k;
    int rc = kind_of(r, &k);

    return rc ? rc : timed_profile(r, &k, "duration", 10, 0);
}

int
pe_http_h_sampled_go(pe_req_t *r)
{
    kind_t k;
    int rc = kind_of(r, &k);

    return rc ? rc : timed_profile(r, &k, "seconds", 30, 0);
}

/* fgprof's /debug/fgprof?seconds=N (default 30): a wall-clock profile of every
   thread, as fgprof's users and Grafana Alloy's scraper read it. */
int
pe_http_h_sampled_fgprof(pe_req_t *r)
{
    kind_t k;
    int rc = kind_of(r, &k);

    return rc ? rc : timed_profile(r, &k, "seconds", 30, 1);
}

int
pe_http_h_sampled_start(pe_req_t *r)
{
    kind_t k;
    int rc = kind_of(r, &k);

    return rc ? rc : session_start(r, &k);
}

int
pe_http_h_sampled_stop(pe_req_t *r)
{
    kind_t k;
    int rc = kind_of(r, &k);

    return rc ? rc : session_stop(r, &k);
}

void
pe_http_profile_atfork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    /* The sessions' windows were the parent's (the sampler dropped them). */
    for (int i = 0; i < PE_HTTP_MAX_ROUTES; i++) {
        memcpy(&sessions[i].lock, &fresh, sizeof(fresh));
        sessions[i].w = NULL;
    }
}
