/*
 * h_heap_time.c: memory over time: the age filters of /debug/pprof/heap and
 * /heap_snapshot (min_age, max_age: from the live table, with an age_s label),
 * the heap's change since a checkpoint (?since=), /heap_peak and
 * /heap_timeline.  The data comes from heap/ (heap.h: live table, history);
 * profiles go out through pe_http_send_profile like every other profile.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../preload/clock.h"
#include "../preload/config.h"
#include "http_int.h"

/* What these profiles hold: what is live (or its change), never allocations. */
static const pe_prof_vt_t inuse_types[2] = {
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"},
};
static const pe_prof_vt_t space_bytes = {"space", "bytes"};

/* One record of a profile built here: signed (a change may be negative). */
typedef struct ht_rec_s {
    uint32_t stack;
    uint32_t age; /* age_s label (rounded), or UINT32_MAX for none */
    int64_t cnt_fx, bytes_fx;
} ht_rec_t;

#define NO_AGE UINT32_MAX

/* Round a fixed-point value to whole units, halves away from zero. */
static int64_t
fx_round(int64_t fx, int64_t one)
{
    return fx >= 0 ? (fx + one / 2) / one : -((-fx + one / 2) / one);
}

/* ---- age filter ---------------------------------------------------------------- */

int
pe_http_age_parse(pe_req_t *r, pe_http_age_t *f)
{
    double lo, hi;
    int rc;

    if ((rc = pe_param_number(r, "min_age", -1, 0, 1e9, &lo)) ||
        (rc = pe_param_number(r, "max_age", -1, 0, 1e9, &hi)))
        return rc;
    f->on = lo >= 0 || hi >= 0;
    f->min_s = lo >= 0 ? lo : 0;
    f->max_s = hi >= 0 ? hi : 1e18;
    f->now = pe_heap_now_s();
    if (f->min_s > f->max_s)
        return pe_http_error(r, 400, "min_age=%g is above max_age=%g: nothing could match",
                             f->min_s, f->max_s);
    return 0;
}

uint32_t
pe_http_age_of(const pe_http_age_t *f, const pe_heap_live_t *b)
{
    /* born is at most a tick ahead of `now` read before the copy. */
    return f->now > b->born ? f->now - b->born : 0;
}

int
pe_http_age_pass(const pe_http_age_t *f, const pe_heap_live_t *b)
{
    double age = pe_http_age_of(f, b);

    return !f->on || (age >= f->min_s && age <= f->max_s);
}

/* The age label: exact below 100 s, then two significant digits (350, 1200),
   so a profile holds few distinct ages per stack. */
static uint32_t
age_bucket(uint32_t a)
{
    uint32_t scale = 1;

    while (a / scale >= 100)
        scale *= 10;
    return (a + scale / 2) / scale * scale;
}

static int
by_stack_age(const void *a, const void *b)
{
    const ht_rec_t *x = a, *y = b;

    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return x->age < y->age ? -1 : x->age > y->age;
}

/* Sort and merge records of the same (stack, age). */
static int
merge(ht_rec_t *v, int n)
{
    int k = 0;

    qsort(v, (size_t)n, sizeof(*v), by_stack_age);
    for (int i = 0; i < n; i++) {
        if (k && v[k - 1].stack == v[i].stack && v[k - 1].age == v[i].age) {
            v[k - 1].cnt_fx += v[i].cnt_fx;
            v[k - 1].bytes_fx += v[i].bytes_fx;
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

typedef struct age_collect_s {
    const pe_http_age_t *f;
    ht_rec_t *v;
    int n, cap;
    int64_t listed; /* live blocks seen, before the filter */
} age_collect_t;

static int
age_one(const pe_heap_live_t *b, void *arg)
{
    age_collect_t *c = arg;
    double cnt = b->weight * PE_HEAP_CNT_ONE;

    c->listed++;
    if (!pe_http_age_pass(c->f, b))
        return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 4096;
        ht_rec_t *w = realloc(c->v, (size_t)cap * sizeof(*w));

        if (!w)
            return -ENOMEM;
        c->v = w;
        c->cap = cap;
    }
    c->v[c->n].stack = b->stack;
    c->v[c->n].age = age_bucket(pe_http_age_of(c->f, b));
    c->v[c->n].cnt_fx = llround(cnt);
    c->v[c->n].bytes_fx = llround(b->weight * (double)b->size * PE_HEAP_BYTES_ONE);
    c->n++;
    return 0;
}

/* ---- sending ------------------------------------------------------------------- */

static int
by_bytes_desc(const void *a, const void *b)
{
    const ht_rec_t *x = a, *y = b;

    if (x->bytes_fx != y->bytes_fx)
        return x->bytes_fx > y->bytes_fx ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/*
 * Go's legacy text (debug=1), one record per stack, values already unbiased
 * (the header's heap/2 tells a reader the rate is 1: nothing to scale); a
 * change may be negative.  `comment` goes after the records.
 */
static int
send_text(pe_req_t *r, ht_rec_t *v, int n, const char *comment)
{
    uintptr_t pcs[PE_HEAP_MAX_FRAMES];
    int64_t tn = 0, tb = 0;
    pe_resp_t resp;
    int k = 0;

    /* One record per stack: drop the age split. */
    for (int i = 0; i < n; i++)
        v[i].age = 0;
    n = merge(v, n);
    qsort(v, (size_t)n, sizeof(*v), by_bytes_desc);
    for (int i = 0; i < n; i++) {
        tn += fx_round(v[i].cnt_fx, PE_HEAP_CNT_ONE);
        tb += fx_round(v[i].bytes_fx, PE_HEAP_BYTES_ONE);
    }
    pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
    pe_sink_printf(&resp.sink,
                   "heap profile: %" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "] @ heap/2\n",
                   tn, tb, tn, tb);
    for (int i = 0; i < n && !resp.sink.err; i++) {
        int64_t cn = fx_round(v[i].cnt_fx, PE_HEAP_CNT_ONE);
        int64_t b = fx_round(v[i].bytes_fx, PE_HEAP_BYTES_ONE);

        if (!cn && !b)
            continue;
        k = pe_heap_stack(v[i].stack, pcs, PE_HEAP_MAX_FRAMES);
        pe_sink_printf(&resp.sink, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "]", cn, b, cn,
                       b);
        pe_prof_write_go_stack(&resp.sink, pcs, k);
    }
    pe_sink_printf(&resp.sink, "\n# profendpoints: %s\n# rate = %" PRId64 "\n", comment,
                   pe_heap_rate());
    pe_http_heap_append_maps(&resp.sink);
    return pe_http_end(&resp);
}

/* Build and send (any view) a profile of in-use objects and bytes. */
static int
send_recs(pe_req_t *r, ht_rec_t *v, int n, const char *name, int debug, int64_t time_ns,
          int64_t dur_ns, const char *comment)
{
    pe_prof_t *p;
    int rc;

    if (debug >= 1)
        return send_text(r, v, n, comment);
    if (!(p = pe_prof_new(inuse_types, 2, &space_bytes, pe_heap_rate())))
        return pe_http_error(r, 500, "out of memory building the profile");
    pe_prof_set_default_type(p, "inuse_space");
    pe_prof_set_time(p, time_ns, dur_ns);
    pe_prof_comment(p, "%s", comment);
    for (int i = 0; i < n; i++) {
        int64_t vals[2] = {fx_round(v[i].cnt_fx, PE_HEAP_CNT_ONE),
                           fx_round(v[i].bytes_fx, PE_HEAP_BYTES_ONE)};
        /* A plain number, so that -tagfocus=age_s=300: needs no unit. */
        pe_prof_label_t lab = {"age_s", NULL, (int64_t)v[i].age, NULL};

        if (!vals[0] && !vals[1])
            continue;
        if (pe_http_heap_add_stack(p, v[i].stack, vals, &lab, v[i].age != NO_AGE) < 0) {
            pe_prof_free(p);
            return pe_http_error(r, 500, "out of memory building the profile");
        }
    }
    rc = pe_http_send_profile(r, p, name);
    pe_prof_free(p);
    return rc;
}

/* ---- /debug/pprof/heap?min_age=&max_age= ------------------------------------------- */

static int
heap_by_age(pe_req_t *r, const pe_http_age_t *f, const char *name, int debug)
{
    age_collect_t c = {.f = f};
    pe_heap_stats_t st;
    char comment[512];
    int rc = pe_heap_live_iterate(age_one, &c);

    if (rc < 0) {
        free(c.v);
        return pe_http_error(r, 500, "out of memory reading the live table");
    }
    c.n = merge(c.v, c.n);
    pe_heap_get_stats(&st);
    snprintf(comment, sizeof(comment),
             "live sampled blocks aged %g to %g s (label age_s, rounded), from the live table: "
             "%" PRId64 " listed, %" PRIu64 " samples could not be listed (not in this view)",
             f->min_s, f->max_s >= 1e18 ? INFINITY : f->max_s, c.listed, st.dropped_live);
    rc = send_recs(r, c.v, c.n, name, debug, pe_clock_ns(CLOCK_REALTIME), 0, comment);
    free(c.v);
    return rc;
}

/* ---- /debug/pprof/heap?since= ------------------------------------------------------- */

/* Checkpoint entries as profile records (no age label). */
static ht_rec_t *
ck_recs(const pe_heap_ck_ent_t *v, int n)
{
    ht_rec_t *out = malloc((size_t)(n ? n : 1) * sizeof(*out));

    for (int i = 0; out && i < n; i++) {
        out[i].stack = v[i].stack;
        out[i].age = NO_AGE;
        out[i].cnt_fx = v[i].cnt_fx;
        out[i].bytes_fx = v[i].bytes_fx;
    }
    return out;
}

static int
history_unavailable(pe_req_t *r)
{
    if (!pe_heap_hist_running())
        return pe_http_error(r, 503, "the heap history thread is not running (see stderr)");
    return 0;
}

static int
heap_since(pe_req_t *r, double ago, const char *name, int debug)
{
    pe_heap_ck_ent_t *v;
    ht_rec_t *recs;
    int64_t taken = 0, now = pe_clock_ns(CLOCK_REALTIME), total = 0;
    char comment[512];
    int n, rc;

    if ((rc = history_unavailable(r)))
        return rc;
    rc = pe_heap_hist_since(ago, &v, &n, &taken);
    if (rc == -ENOENT)
        return pe_http_error(r, 503,
                             "no heap checkpoint yet (one is taken when the server "
                             "starts, then every PROFEP_HEAP_CHECKPOINT s)");
    if (rc < 0)
        return pe_http_error(r, 500, "out of memory reading the heap checkpoints");
    recs = ck_recs(v, n);
    free(v);
    if (!recs)
        return pe_http_error(r, 500, "out of memory");
    for (int i = 0; i < n; i++)
        total += recs[i].bytes_fx;
    snprintf(comment, sizeof(comment),
             "change of the sampled live heap since the checkpoint of %.1f s ago (asked: "
             "since=%g; checkpoints every %g s, %d kept): %+" PRId64 " bytes",
             (double)(now - taken) / 1e9, ago, pe_cfg.ckpt_seconds, PE_HEAP_CHECKPOINTS,
             fx_round(total, PE_HEAP_BYTES_ONE));
    rc = send_recs(r, recs, n, name, debug, taken, now - taken, comment);
    free(recs);
    return rc;
}

/* ---- /heap_peak ---------------------------------------------------------------------- */

int
pe_http_h_heap_peak(pe_req_t *r)
{
    pe_heap_ck_ent_t *v;
    ht_rec_t *recs;
    int64_t when = 0, now = pe_clock_ns(CLOCK_REALTIME);
    uint64_t bytes = 0;
    char comment[512], stamp[64];
    struct tm tm;
    time_t secs;
    double debug;
    int n, rc;

    if (!pe_heap_available())
        return pe_http_error(r, 503, "heap profiling unavailable: %s", pe_heap_reason());
    if (pe_heap_rate() <= 0)
        return pe_http_error(r, 503, "heap sampling is off (PROFEP_HEAP_RATE=0)");
    if ((rc = history_unavailable(r)) || (rc = pe_param_number(r, "debug", 0, 0, 2, &debug)))
        return rc;
    rc = pe_heap_hist_peak(&v, &n, &when, &bytes);
    if (rc == -ENOENT)
        return pe_http_error(r, 503, "no peak noted yet (the heap is read once a second)");
    if (rc < 0)
        return pe_http_error(r, 500, "out of memory reading the peak");
    recs = ck_recs(v, n);
    free(v);
    if (!recs)
        return pe_http_error(r, 500, "out of memory");
    secs = (time_t)(when / 1000000000);
    gmtime_r(&secs, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(comment, sizeof(comment),
             "peak of the sampled live heap: %" PRIu64 " bytes (%.1f MiB) at %s (%.0f s ago); "
             "live heap per stack then (read once a second)",
             bytes, (double)bytes / 1048576.0, stamp, (double)(now - when) / 1e9);
    rc = send_recs(r, recs, n, "heap_peak", (int)debug, when, 0, comment);
    free(recs);
    return rc;
}

int
pe_http_heap_time(pe_req_t *r, const char *name)
{
    pe_http_age_t f;
    double debug;
    int rc;

    if ((rc = pe_http_age_parse(r, &f)) || (rc = pe_param_number(r, "debug", 0, 0, 2, &debug)))
        return rc;
    if (pe_param(r, "seconds"))
        return pe_http_error(r, 400, "seconds= cannot be combined with min_age, max_age or since");
    if (pe_param(r, "since")) {
        double ago;

        if (f.on)
            return pe_http_error(r, 400, "since= cannot be combined with min_age or max_age");
        if ((rc = pe_param_number(r, "since", 0, 0, 1e9, &ago)))
            return rc;
        return heap_since(r, ago, name, (int)debug);
    }
    if (f.on)
        return heap_by_age(r, &f, name, (int)debug);
    return pe_http_error(r, 400, "nothing asked");
}

int
pe_http_heap_time_wanted(pe_req_t *r)
{
    return pe_param(r, "min_age") || pe_param(r, "max_age") || pe_param(r, "since");
}
