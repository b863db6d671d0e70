/*
 * trace_json.c: a recorded thread trace as Chrome trace-event JSON (the
 * format of chrome://tracing, which speedscope and Perfetto UI import).
 * Owned by the trace work (issue 34); trace_json.h describes the layout.
 *
 * Each thread's samples become one flame chart over time: a sample's stack,
 * prefixed by a frame naming the thread's state, lasts until that thread's
 * next sample; between two samples only the frames that changed are closed
 * (E) and opened (B), so a viewer sees a function as one slice for as long as
 * it stayed on the stack.  E events repeat their B's name: speedscope matches
 * them by name and warns otherwise.  Frames are compared by shown name (not
 * by address), as a flame chart merges calls from several lines of one
 * function; a frame's name is that shown name alone (frame_event says why).
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"
#include "trace_json.h"

static const char *const pe_tj_state_names[PE_TJ_NSTATES] = {
    "unknown", "running", "sleeping", "futex wait", "disk sleep", "stopped", "no answer",
};

/* Synthetic tids of the per-thread waits tracks (tids are below 2^22). */
#define TJ_WAITS_TID 1000000000

/* ---- output helpers ---------------------------------------------------------------- */

typedef struct tj_out_s {
    pe_sink_t *s;
    int err;
    int first; /* no event written yet: no comma before the next */
} tj_out_t;

static void
put(tj_out_t *o, const char *str)
{
    if (!o->err)
        o->err = pe_sink_put(o->s, str);
}

PE_PRINTF(2, 3) static void putf(tj_out_t *o, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    if (o->err)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    o->err = pe_sink_write(o->s, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* A JSON string (sink.c's escaper: also makes names that are not UTF-8 valid JSON). */
static void
put_str(tj_out_t *o, const char *str)
{
    if (!o->err)
        pe_sink_json_str(o->s, str ? str : "");
}

static void
sep(tj_out_t *o)
{
    put(o, o->first ? "\n" : ",\n");
    o->first = 0;
}

/* Microseconds from the trace's start, as the format's ts wants them. */
static double
us(const pe_tj_trace_t *t, int64_t ns)
{
    return (double)(ns - t->start_ns) / 1e3;
}

static void
meta_name(tj_out_t *o, int pid, int tid, const char *what, const char *name)
{
    sep(o);
    putf(o, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", pid, tid,
         what);
    put_str(o, name);
    put(o, "}}");
}

/* ---- flame chart frames ------------------------------------------------------------ */

/* One frame as the chart opens it; state frames have no frame. */
typedef struct tj_frame_s {
    const char *name;
    const pe_prof_frame_t *f;
} tj_frame_t;

/* What a frame is called where no name is known: its object ("[libstdc++.so.6.0.30]"),
   as the flame graph says, never a bare address. */
static const char *
frame_base(const pe_prof_frame_t *f)
{
    return f->anon ? f->anon : f->name;
}

static int
frame_eq(const tj_frame_t *a, const tj_frame_t *b)
{
    if (!a->f || !b->f)
        return a->f == b->f && !strcmp(a->name, b->name);
    return a->f->inlined == b->f->inlined && !strcmp(frame_base(a->f), frame_base(b->f));
}

/*
 * A frame's event: its name is the function as the flame graph shows it (no
 * symbol version, " [inlined]" for an inlined call) and nothing else, since
 * speedscope's trace-event importer names a frame by its name and args
 * together (a frame with args reads `f {"at":"x.c:7"}`, and one function at
 * two lines becomes two frames).  The source position goes in the category,
 * which Perfetto UI and chrome://tracing show in a slice's details and
 * speedscope ignores: "stack,x.c:7".
 */
static void
frame_event(tj_out_t *o, const pe_tj_trace_t *t, int tid, const char *ph, int64_t ns,
            const tj_frame_t *fr)
{
    char buf[512], name[600], cat[300];
    const char *src;

    sep(o);
    if (!fr->f) {
        putf(o, "{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"cat\":\"state\",\"name\":", ph,
             t->pid, tid, us(t, ns));
        put_str(o, fr->name);
        put(o, "}");
        return;
    }
    snprintf(name, sizeof(name), "%s%s", pe_prof_no_versions(frame_base(fr->f), buf, sizeof(buf)),
             fr->f->inlined ? " [inlined]" : "");
    src = fr->f->src ? strrchr(fr->f->src, '/') : NULL;
    src = src ? src + 1 : fr->f->src;
    if (fr->f->line && src)
        snprintf(cat, sizeof(cat), "stack,%s:%u", src, (unsigned)fr->f->line);
    else
        snprintf(cat, sizeof(cat), "stack");
    putf(o, "{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"cat\":", ph, t->pid, tid,
         us(t, ns));
    put_str(o, cat);
    put(o, ",\"name\":");
    put_str(o, name);
    put(o, "}");
}

/* Fill v with sample `stack`'s frames, outermost first, after the state frame. */
static int
stack_frames(pe_tj_trace_t *t, const int32_t *smap, int32_t stack, int state, tj_frame_t *v,
             int max)
{
    pe_prof_sample_t s;
    int n = 0;

    v[n].name = pe_tj_state_names[state < PE_TJ_NSTATES ? state : 0];
    v[n++].f = NULL;
    if (stack < 0 || !smap || smap[stack] < 0)
        return n;
    pe_prof_sample(t->stacks, smap[stack], &s);
    for (int i = s.nframes - 1; i >= 0 && n < max; i--) {
        v[n].name = s.frames[i]->name;
        v[n++].f = s.frames[i];
    }
    return n;
}

/* Sample indices in thread order, then time order (qsort_r: two answers may be written at once). */
static int
by_thread(const void *a, const void *b, void *samples)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    const pe_tj_sample_t *x = (const pe_tj_sample_t *)samples + i,
                         *y = (const pe_tj_sample_t *)samples + j;

    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* One thread's flame chart: samples idx[0..n) of thread th. */
static int
thread_chart(tj_out_t *o, pe_tj_trace_t *t, const int32_t *smap, const pe_tj_thread_t *th,
             const int64_t *idx, int64_t n, tj_frame_t *cur, tj_frame_t *nxt, int max)
{
    int ncur = 0;
    int64_t end;

    for (int64_t k = 0; k < n; k++) {
        const pe_tj_sample_t *s = &t->samples[idx[k]];
        int nn = stack_frames(t, smap, s->stack, s->state, nxt, max), common = 0;

        while (common < ncur && common < nn && frame_eq(&cur[common], &nxt[common]))
            common++;
        /* ends 1 ns before the next begins: at one timestamp speedscope opens a frame first
           when the first end and the first begin have the same name and args, and then
           ends the wrong one (a frame that moved up the stack: "Tried to end") */
        for (int i = ncur - 1; i >= common; i--)
            frame_event(o, t, th->tid, "E", s->t_ns - 1, &cur[i]);
        for (int i = common; i < nn; i++)
            frame_event(o, t, th->tid, "B", s->t_ns, &nxt[i]);
        /* frames kept open keep the place they opened with: their E repeats their B */
        memcpy(cur + common, nxt + common, (size_t)(nn - common) * sizeof(*cur));
        ncur = nn;
    }
    /* the last sample lasts one period, or to the end when the thread lived on */
    end = th->last_ns + (int64_t)(t->delay * 1e9);
    if (end > t->end_ns)
        end = t->end_ns;
    for (int i = ncur - 1; i >= 0; i--)
        frame_event(o, t, th->tid, "E", end, &cur[i]);
    return o->err;
}

static int
find_thread(const pe_tj_trace_t *t, int32_t tid)
{
    for (int i = 0; i < t->nthreads; i++)
        if (t->threads[i].tid == tid)
            return i;
    return -1;
}

/* An allocation's place, leaf first: "name (file:line)" of up to TJ_ALLOC_FRAMES frames. */
#define TJ_ALLOC_FRAMES 8

static void
alloc_args(tj_out_t *o, pe_tj_trace_t *t, const int32_t *smap, const pe_tj_event_t *e)
{
    pe_prof_sample_t s;
    char buf[300];

    putf(o, ",\"args\":{\"bytes\":%lld,\"est_bytes\":%lld", (long long)e->bytes, (long long)e->est);
    if (e->kind == PE_TJ_EV_ALLOC && e->stack >= 0 && smap && smap[e->stack] >= 0) {
        pe_prof_sample(t->stacks, smap[e->stack], &s);
        put(o, ",\"stack\":[");
        for (int i = 0; i < s.nframes && i < TJ_ALLOC_FRAMES; i++) {
            const pe_prof_frame_t *f = s.frames[i];
            const char *src = f->src ? strrchr(f->src, '/') : NULL,
                       *name = pe_prof_no_versions(frame_base(f), buf, sizeof(buf));
            char at[400];

            if (f->line && f->src)
                snprintf(at, sizeof(at), "%s (%s:%u)", name, src ? src + 1 : f->src,
                         (unsigned)f->line);
            else
                snprintf(at, sizeof(at), "%s", name);
            put(o, i ? "," : "");
            put_str(o, at);
        }
        put(o, "]");
    }
    put(o, "}");
}

/* "NAME" for a thread that is not sampled (our HTTP workers, a vfork child): once each. */
typedef struct tj_named_s {
    int32_t tids[64];
    int n;
} tj_named_t;

static void
name_once(tj_out_t *o, const pe_tj_trace_t *t, tj_named_t *seen, int32_t tid, const char *what)
{
    char name[64];

    for (int k = 0; k < seen->n; k++)
        if (seen->tids[k] == tid)
            return;
    if (seen->n >= (int)PE_ARRAY_SIZE(seen->tids))
        return;
    seen->tids[seen->n++] = tid;
    snprintf(name, sizeof(name), "%s %d", what, (int)tid);
    meta_name(o, t->pid, tid, "thread_name", name);
}

static void
write_events(tj_out_t *o, pe_tj_trace_t *t, const int32_t *smap)
{
    static const char *const ev_names[PE_TJ_NKINDS] = {
        "lock wait", "condition wait", "thread start", "thread exit", "request", "alloc",
        "free",      "fork",           "exec",         "exec failed", "spawn"};
    char *named = calloc((size_t)t->nthreads + 1, 1);
    tj_named_t others = {{0}, 0};

    for (int64_t i = 0; i < t->nevents && !o->err; i++) {
        const pe_tj_event_t *e = &t->events[i];
        int th = find_thread(t, e->tid);
        int64_t t0 = e->t0_ns < t->start_ns ? t->start_ns : e->t0_ns;

        switch (e->kind) {
        case PE_TJ_EV_LOCK:
        case PE_TJ_EV_COND:
            if (th >= 0 && named && !named[th]) {
                char name[64];
                named[th] = 1;
                snprintf(name, sizeof(name), "%s waits", t->threads[th].name);
                meta_name(o, t->pid, TJ_WAITS_TID + e->tid, "thread_name", name);
                sep(o);
                putf(o,
                     "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\","
                     "\"args\":{\"sort_index\":%d}}",
                     t->pid, TJ_WAITS_TID + e->tid, 2 * th + 1);
            }
            sep(o);
            putf(o,
                 "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"cat\":\"wait\","
                 "\"name\":\"%s\",\"args\":{\"tid\":%d,\"ms\":%.3f}}",
                 t->pid, TJ_WAITS_TID + e->tid, us(t, t0), (double)(e->t1_ns - t0) / 1e3,
                 ev_names[e->kind], (int)e->tid, (double)(e->t1_ns - e->t0_ns) / 1e6);
            break;
        case PE_TJ_EV_THREAD_START:
        case PE_TJ_EV_THREAD_EXIT:
        case PE_TJ_EV_FORK:
        case PE_TJ_EV_SPAWN:
        case PE_TJ_EV_EXEC:
        case PE_TJ_EV_EXEC_FAILED:
            sep(o);
            putf(o,
                 "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"cat\":\"%s\","
                 "\"name\":\"%s\"",
                 t->pid, (int)e->tid, us(t, t0),
                 e->kind <= PE_TJ_EV_THREAD_EXIT ? "thread" : "process", ev_names[e->kind]);
            if (e->kind == PE_TJ_EV_EXEC_FAILED && e->bytes)
                putf(o, ",\"args\":{\"errno\":%d,\"vfork_child\":%lld}", (int)e->value,
                     (long long)e->bytes);
            else if (e->kind == PE_TJ_EV_EXEC_FAILED)
                putf(o, ",\"args\":{\"errno\":%d}", (int)e->value);
            else if (e->kind == PE_TJ_EV_EXEC && e->bytes)
                putf(o, ",\"args\":{\"vfork_child\":%lld}", (long long)e->bytes);
            put(o, "}");
            break;
        case PE_TJ_EV_ALLOC:
        case PE_TJ_EV_FREE:
            sep(o);
            putf(o,
                 "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"cat\":\"heap\","
                 "\"name\":\"%s %lld B\"",
                 t->pid, (int)e->tid, us(t, t0), ev_names[e->kind], (long long)e->bytes);
            alloc_args(o, t, smap, e);
            put(o, "}");
            break;
        case PE_TJ_EV_REQUEST:
            name_once(o, t, &others, e->tid, "profendpoints http");
            sep(o);
            putf(o,
                 "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"cat\":\"request\","
                 "\"name\":",
                 t->pid, (int)e->tid, us(t, t0), (double)(e->t1_ns - t0) / 1e3);
            put_str(o, e->what);
            putf(o, ",\"args\":{\"status\":%d}}", (int)e->value);
            break;
        default: break;
        }
    }
    free(named);
}

/* Events in time order (qsort_r over indices). */
static int
by_time(const void *a, const void *b, void *events)
{
    const pe_tj_event_t *x = (const pe_tj_event_t *)events + *(const int64_t *)a,
                        *y = (const pe_tj_event_t *)events + *(const int64_t *)b;

    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

/* The sampled allocations as a counter of estimated bytes allocated and freed since the
   trace began (each sample stands for est_bytes: the heap profile's unbiased estimate). */
static void
write_heap_counter(tj_out_t *o, pe_tj_trace_t *t)
{
    int64_t n = 0, *idx = malloc(((size_t)t->nevents + 1) * sizeof(*idx));
    long long alloc = 0, freed = 0;

    if (!idx)
        return;
    for (int64_t i = 0; i < t->nevents; i++)
        if (t->events[i].kind == PE_TJ_EV_ALLOC || t->events[i].kind == PE_TJ_EV_FREE)
            idx[n++] = i;
    qsort_r(idx, (size_t)n, sizeof(*idx), by_time, t->events);
    for (int64_t k = 0; k < n && !o->err; k++) {
        const pe_tj_event_t *e = &t->events[idx[k]];
        int64_t t0 = e->t0_ns < t->start_ns ? t->start_ns : e->t0_ns;

        if (e->kind == PE_TJ_EV_ALLOC)
            alloc += e->est;
        else
            freed += e->est;
        sep(o);
        putf(o,
             "{\"ph\":\"C\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"name\":\"sampled heap "
             "(bytes)\",\"args\":{\"allocated\":%lld,\"freed\":%lld}}",
             t->pid, us(t, t0), alloc, freed);
    }
    free(idx);
}

/* Threads by state at each tick (samples of one tick share their time). */
static void
write_counters(tj_out_t *o, pe_tj_trace_t *t)
{
    for (int64_t i = 0; i < t->nsamples && !o->err;) {
        int64_t n[PE_TJ_NSTATES] = {0}, j = i;

        while (j < t->nsamples && t->samples[j].t_ns == t->samples[i].t_ns)
            n[t->samples[j++].state % PE_TJ_NSTATES]++;
        sep(o);
        putf(o,
             "{\"ph\":\"C\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"name\":\"threads\",\"args\":{"
             "\"running\":%lld,\"sleeping\":%lld,\"futex wait\":%lld,\"disk sleep\":%lld}}",
             t->pid, us(t, t->samples[i].t_ns), (long long)n[PE_TJ_RUNNING],
             (long long)n[PE_TJ_SLEEPING], (long long)n[PE_TJ_FUTEX], (long long)n[PE_TJ_DISK]);
        i = j;
    }
}

static void
write_other(tj_out_t *o, const pe_tj_trace_t *t)
{
    putf(o,
         "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"libprofendpoints "
         "/debug/pprof/"
         "trace\",\"pid\":%d,\"start_realtime_ns\":%lld,\"start_monotonic_ns\":%lld,\"seconds_"
         "asked\":%g,"
         "\"seconds_recorded\":%.3f,\"delay\":%g,\"ticks\":%llu,\"late_ticks\":%llu,"
         "\"slowed_ticks\":%llu,"
         "\"threads\":%d,\"samples\":%lld,\"events\":%lld,\"events_dropped\":%llu,",
         t->pid, (long long)t->start_real_ns, (long long)t->start_ns, t->seconds_asked,
         (double)(t->end_ns - t->start_ns) / 1e9, t->delay, (unsigned long long)t->ticks,
         (unsigned long long)t->late_ticks, (unsigned long long)t->slowed_ticks, t->nthreads,
         (long long)t->nsamples, (long long)t->nevents, (unsigned long long)t->events_dropped);
    /* (putf's buffer is 512 bytes: a second call) */
    putf(o,
         "\"budget_bytes\":%lld,\"used_bytes\":%lld,\"mutex_rate\":%llu,\"heap_rate\":%lld,"
         "\"capture_ms_total\":%.3f,\"capture_ms_max\":%.3f,\"recorder_cpu_ms\":%.3f,"
         "\"ended_early\":",
         (long long)t->budget, (long long)t->used, (unsigned long long)t->mutex_rate,
         (long long)t->heap_rate, (double)t->tick_ns_sum / 1e6, (double)t->tick_ns_max / 1e6,
         (double)t->cpu_ns / 1e6);
    if (t->ended)
        put_str(o, t->ended);
    else
        put(o, "false");
    {
        /* how the samples were taken: a running thread that answered no signal in time has
           its state from /proc but no stack */
        long long by[3] = {0, 0, 0}, run_none = 0;
        for (int64_t i = 0; i < t->nsamples; i++) {
            by[t->samples[i].capture % 3]++;
            run_none += t->samples[i].state == PE_TJ_RUNNING && t->samples[i].stack < 0;
        }
        putf(o,
             ",\"samples_proc\":%lld,\"samples_signal\":%lld,\"samples_no_stack\":%lld,"
             "\"running_no_stack\":%lld",
             by[0], by[1], by[2], run_none);
    }
    /* why no allocation is in the trace, when none can be */
    put(o, ",\"heap_sampling\":");
    if (t->heap_off)
        put_str(o, t->heap_off);
    else
        put(o, "true");
    put(o, ",\"note\":\"states and stacks are samples every delay s (a slice lasts until the "
           "thread's next sample); ticks space out when a capture of every thread would cost the "
           "recorder more than 10% of a CPU (slowed_ticks); lock and condition waits are the "
           "interposers' sampled events "
           "(1 in mutex_rate) with their measured durations; allocations are the heap sampler's "
           "samples (one every heap_rate bytes on average; est_bytes: the bytes each stands "
           "for), frees those of sampled blocks\"}}\n");
}

int
pe_tj_write(pe_tj_trace_t *t, pe_sink_t *out)
{
    tj_out_t o = {out, 0, 1};
    int32_t *smap = NULL;
    int64_t *idx = NULL;
    tj_frame_t *cur = NULL, *nxt = NULL;
    int nst = 0, max = 2 * PE_MAX_FRAMES + 2;

    /* every stack's frames, as the profiles name them */
    if (t->stacks) {
        int rc = pe_prof_resolve(t->stacks, 0);
        if (rc < 0 && rc != -ENOMEM)
            return rc;
        nst = pe_prof_nsamples(t->stacks);
    }
    smap = malloc(((size_t)nst + 1) * sizeof(*smap));
    idx = malloc(((size_t)t->nsamples + 1) * sizeof(*idx));
    cur = malloc((size_t)max * sizeof(*cur));
    nxt = malloc((size_t)max * sizeof(*nxt));
    if (!smap || !idx || !cur || !nxt) {
        o.err = -ENOMEM;
        goto out;
    }
    /* the recorder labels each stack with its number ("stack"); samples may come back in
       any order */
    for (int i = 0; i < nst; i++)
        smap[i] = -1;
    for (int i = 0; i < nst; i++) {
        pe_prof_sample_t s;
        pe_prof_sample(t->stacks, i, &s);
        for (int l = 0; l < s.nlabels; l++)
            if (!strcmp(s.labels[l].key, "stack") && s.labels[l].num >= 0 && s.labels[l].num < nst)
                smap[s.labels[l].num] = i;
    }
    for (int64_t i = 0; i < t->nsamples; i++)
        idx[i] = i;
    qsort_r(idx, (size_t)t->nsamples, sizeof(*idx), by_thread, t->samples);

    put(&o, "{\"traceEvents\":[");
    meta_name(&o, t->pid, 0, "process_name", "profiled process");
    for (int i = 0; i < t->nthreads; i++) {
        meta_name(&o, t->pid, t->threads[i].tid, "thread_name", t->threads[i].name);
        sep(&o);
        putf(&o,
             "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{"
             "\"sort_index\":%d}}",
             t->pid, t->threads[i].tid, 2 * i);
    }
    for (int64_t k = 0; k < t->nsamples && !o.err;) {
        int64_t j = k;
        int th = t->samples[idx[k]].thread;

        while (j < t->nsamples && t->samples[idx[j]].thread == th)
            j++;
        if (th >= 0 && th < t->nthreads)
            thread_chart(&o, t, nst ? smap : NULL, &t->threads[th], idx + k, j - k, cur, nxt, max);
        k = j;
    }
    write_events(&o, t, nst ? smap : NULL);
    write_heap_counter(&o, t);
    write_counters(&o, t);
    write_other(&o, t);
out:
    free(smap);
    free(idx);
    free(cur);
    free(nxt);
    return o.err;
}
