/*
 * views.c: the live table and the history (live.c, history.c) as profiles:
 * the live heap by age (min_age, max_age; an age_s label), its change since a
 * checkpoint (since=), the per-stack live heap at the peak, as a profile
 * (inuse_objects, inuse_space) or Go's debug=1 text; and the live blocks as a
 * heap snapshot's objects (/heap_snapshot).  The model, the text and the
 * snapshot layout are profile/'s and render/'s.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h> /* INFINITY only: no libm call */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../render/gotext.h"
#include "../render/heapsnapshot.h"
#include "heap.h"

/* What these profiles hold: what is live (or its change), never allocations. */
static const pe_prof_vt_t inuse_types[2] = {
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"},
};
static const pe_prof_vt_t space_bytes = {"space", "bytes"};

/* One record of a view: signed (a change may be negative). */
struct pe_heap_vrec_s {
    uint32_t stack;
    uint32_t age; /* age_s label (rounded), or UINT32_MAX for none */
    int64_t cnt_fx, bytes_fx;
};
typedef struct pe_heap_vrec_s vrec_t;

#define NO_AGE UINT32_MAX

/* Round a fixed-point value to whole units, halves away from zero. */
static int64_t
fx_round(int64_t fx, int64_t one)
{
    return fx >= 0 ? (fx + one / 2) / one : -((-fx + one / 2) / one);
}

/* ---- age filter ---------------------------------------------------------------- */

/* A live block's age in whole seconds. */
static uint32_t
age_of(const pe_heap_age_t *f, const pe_heap_live_t *b)
{
    /* born is at most a tick ahead of `now` read before the copy. */
    return f->now > b->born ? f->now - b->born : 0;
}

/* 1 when a live block's age is in the window. */
static int
age_pass(const pe_heap_age_t *f, const pe_heap_live_t *b)
{
    double age = age_of(f, b);

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
    const vrec_t *x = a, *y = b;

    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return x->age < y->age ? -1 : x->age > y->age;
}

/* Sort and merge records of the same (stack, age). */
static int
merge(vrec_t *v, int n)
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
    const pe_heap_age_t *f;
    vrec_t *v;
    int n, cap;
    int64_t listed; /* live blocks seen, before the filter */
} age_collect_t;

static int
age_one(const pe_heap_live_t *b, void *arg)
{
    age_collect_t *c = arg;
    double cnt = b->weight * PE_HEAP_CNT_ONE;

    c->listed++;
    if (!age_pass(c->f, b))
        return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 4096;
        vrec_t *w = realloc(c->v, (size_t)cap * sizeof(*w));

        if (!w)
            return -ENOMEM;
        c->v = w;
        c->cap = cap;
    }
    c->v[c->n].stack = b->stack;
    c->v[c->n].age = age_bucket(age_of(c->f, b));
    c->v[c->n].cnt_fx = pe_round_i64(cnt);
    c->v[c->n].bytes_fx = pe_round_i64(b->weight * (double)b->size * PE_HEAP_BYTES_ONE);
    c->n++;
    return 0;
}

/* ---- views ---------------------------------------------------------------------- */

int
pe_heap_view_age(pe_heap_view_t *w, const pe_heap_age_t *f)
{
    age_collect_t c = {.f = f};
    pe_heap_stats_t st;
    int rc = pe_heap_live_iterate(age_one, &c);

    memset(w, 0, sizeof(*w));
    if (rc < 0) {
        free(c.v);
        return -ENOMEM;
    }
    c.n = merge(c.v, c.n);
    pe_heap_get_stats(&st);
    snprintf(w->comment, sizeof(w->comment),
             "live sampled blocks aged %g to %g s (label age_s, rounded), from the live table: "
             "%" PRId64 " listed, %" PRIu64 " samples could not be listed (not in this view)",
             f->min_s, f->max_s >= 1e18 ? INFINITY : f->max_s, c.listed, st.dropped_live);
    w->v = c.v;
    w->n = c.n;
    w->time_ns = pe_clock_ns(CLOCK_REALTIME);
    return 0;
}

/* Checkpoint entries (malloc'd; freed here) as the view's records, no age label.
   0 or -ENOMEM. */
static int
ck_view(pe_heap_view_t *w, pe_heap_ck_ent_t *v, int n)
{
    w->v = malloc((size_t)(n ? n : 1) * sizeof(*w->v));
    for (int i = 0; w->v && i < n; i++) {
        w->v[i].stack = v[i].stack;
        w->v[i].age = NO_AGE;
        w->v[i].cnt_fx = v[i].cnt_fx;
        w->v[i].bytes_fx = v[i].bytes_fx;
    }
    free(v);
    if (!w->v)
        return -ENOMEM;
    w->n = n;
    return 0;
}

int
pe_heap_view_since(pe_heap_view_t *w, double ago)
{
    pe_heap_ck_ent_t *v;
    int64_t taken = 0, now = pe_clock_ns(CLOCK_REALTIME), total = 0;
    int n, rc;

    memset(w, 0, sizeof(*w));
    if ((rc = pe_heap_hist_since(ago, &v, &n, &taken)) < 0 || (rc = ck_view(w, v, n)) < 0)
        return rc;
    for (int i = 0; i < n; i++)
        total += w->v[i].bytes_fx;
    snprintf(w->comment, sizeof(w->comment),
             "change of the sampled live heap since the checkpoint of %.1f s ago (asked: "
             "since=%g; checkpoints every %g s, %d kept): %+" PRId64 " bytes",
             (double)(now - taken) / 1e9, ago, pe_cfg.ckpt_seconds, PE_HEAP_CHECKPOINTS,
             fx_round(total, PE_HEAP_BYTES_ONE));
    w->time_ns = taken;
    w->dur_ns = now - taken;
    return 0;
}

int
pe_heap_view_peak(pe_heap_view_t *w)
{
    pe_heap_ck_ent_t *v;
    int64_t when = 0, now = pe_clock_ns(CLOCK_REALTIME);
    uint64_t bytes = 0;
    char stamp[64];
    struct tm tm;
    time_t secs;
    int n, rc;

    memset(w, 0, sizeof(*w));
    if ((rc = pe_heap_hist_peak(&v, &n, &when, &bytes)) < 0 || (rc = ck_view(w, v, n)) < 0)
        return rc;
    secs = (time_t)(when / 1000000000);
    gmtime_r(&secs, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(w->comment, sizeof(w->comment),
             "peak of the sampled live heap: %" PRIu64 " bytes (%.1f MiB) at %s (%.0f s ago); "
             "live heap per stack then (read once a second)",
             bytes, (double)bytes / 1048576.0, stamp, (double)(now - when) / 1e9);
    w->time_ns = when;
    return 0;
}

void
pe_heap_view_free(pe_heap_view_t *w)
{
    free(w->v);
    w->v = NULL;
    w->n = 0;
}

pe_prof_t *
pe_heap_view_profile(const pe_heap_view_t *w)
{
    const vrec_t *v = w->v;
    pe_prof_t *p;

    if (!(p = pe_prof_new(inuse_types, 2, &space_bytes, pe_heap_rate())))
        return NULL;
    pe_prof_set_default_type(p, "inuse_space");
    pe_prof_set_time(p, w->time_ns, w->dur_ns);
    pe_prof_comment(p, "%s", w->comment);
    if (*pe_heap_attach_note())
        pe_prof_comment(p, "heap sampling %s", pe_heap_attach_note());
    for (int i = 0; i < w->n; i++) {
        int64_t vals[2] = {fx_round(v[i].cnt_fx, PE_HEAP_CNT_ONE),
                           fx_round(v[i].bytes_fx, PE_HEAP_BYTES_ONE)};
        /* A plain number, so that -tagfocus=age_s=300: needs no unit. */
        pe_prof_label_t lab = {"age_s", NULL, (int64_t)v[i].age, NULL};

        if (!vals[0] && !vals[1])
            continue;
        if (pe_heap_prof_add(p, v[i].stack, vals, &lab, v[i].age != NO_AGE) < 0) {
            pe_prof_free(p);
            return NULL;
        }
    }
    return p;
}

static int
by_bytes_desc(const void *a, const void *b)
{
    const vrec_t *x = a, *y = b;

    if (x->bytes_fx != y->bytes_fx)
        return x->bytes_fx > y->bytes_fx ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/*
 * Go's legacy text (debug=1), one record per stack, values already unbiased
 * (the header's heap/2 tells a reader the rate is 1: nothing to scale); a
 * change may be negative.  The view's comment goes after the records.
 */
int
pe_heap_view_write_text(pe_heap_view_t *w, pe_sink_t *out)
{
    vrec_t *v = w->v;
    int n = w->n, k = 0;
    pe_prof_go_heap_t *g = malloc((n ? (size_t)n : 1) * sizeof(*g));

    if (!g)
        return out->err = -ENOMEM;
    /* One record per stack: drop the age split. */
    for (int i = 0; i < n; i++)
        v[i].age = 0;
    n = w->n = merge(v, n);
    qsort(v, (size_t)n, sizeof(*v), by_bytes_desc);
    for (int i = 0; i < n; i++) {
        int64_t cn = fx_round(v[i].cnt_fx, PE_HEAP_CNT_ONE);
        int64_t b = fx_round(v[i].bytes_fx, PE_HEAP_BYTES_ONE);

        if (cn || b)
            g[k++] = (pe_prof_go_heap_t){v[i].stack, cn, b, cn, b};
    }
    pe_prof_write_go_heap(out, g, k, 2, pe_heap_stack);
    free(g);
    pe_sink_printf(out, "\n# profendpoints: %s\n# rate = %" PRId64 "\n", w->comment,
                   pe_heap_rate());
    return pe_prof_write_go_maps(out);
}

/* ---- /heap_snapshot's objects -------------------------------------------------------- */

/* stack id -> sample index, open addressing on id + 1 (0 = empty). */
typedef struct stackmap_s {
    uint32_t *key, *val;
    uint32_t cap, n;
} stackmap_t;

typedef struct collect_s {
    pe_prof_hsnap_obj_t *v; /* .sample holds the heap stack id until mapped */
    size_t n, cap;
    int all_one;
    const pe_heap_age_t *age; /* min_age, max_age */
} collect_t;

/* The unbiased bytes of one sample (weight x size), or 1 with all_one;
   clamped to the format's 32 bits. */
static uint32_t
obj_size(const pe_heap_live_t *b, int all_one)
{
    double x = b->weight * (double)b->size;

    if (all_one)
        return 1;
    if (!(x >= 0)) /* NaN: a zero-byte block */
        return 0;
    return x >= 4294967295.0 ? UINT32_MAX : (uint32_t)pe_round_i64(x);
}

static int
collect_one(const pe_heap_live_t *b, void *arg)
{
    collect_t *c = arg;

    if (!age_pass(c->age, b))
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4096;
        pe_prof_hsnap_obj_t *v = realloc(c->v, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n].sample = b->stack;
    c->v[c->n].size = obj_size(b, c->all_one);
    c->n++;
    return 0;
}

static int
map_grow(stackmap_t *m)
{
    uint32_t cap = m->cap ? m->cap * 2 : 1024, *key = calloc(cap, sizeof(*key)),
             *val = malloc(cap * sizeof(*val)), i, j;

    if (!key || !val) {
        free(key);
        free(val);
        return -ENOMEM;
    }
    for (i = 0; i < m->cap; i++) {
        if (!m->key[i])
            continue;
        for (j = (m->key[i] * 0x9E3779B1u) & (cap - 1); key[j]; j = (j + 1) & (cap - 1))
            ;
        key[j] = m->key[i];
        val[j] = m->val[i];
    }
    free(m->key);
    free(m->val);
    m->key = key;
    m->val = val;
    m->cap = cap;
    return 0;
}

/*
 * Give every distinct stack one sample in p (a label with the stack id keeps
 * samples apart even if two stacks had the same frames) and rewrite each
 * object's .sample from stack id to that sample's index.  0 or -ENOMEM.
 */
static int
map_stacks(pe_prof_t *p, pe_prof_hsnap_obj_t *v, size_t n)
{
    uintptr_t pcs[PE_HEAP_MAX_FRAMES];
    stackmap_t m = {0};
    pe_prof_label_t lab = {"stack", NULL, 0, NULL};
    uint32_t j, id;
    int err = 0, k;

    for (size_t i = 0; i < n && !err; i++) {
        if ((m.n + 1) * 2 > m.cap && (err = map_grow(&m)))
            break;
        id = v[i].sample + 1;
        for (j = (id * 0x9E3779B1u) & (m.cap - 1); m.key[j] && m.key[j] != id;
             j = (j + 1) & (m.cap - 1))
            ;
        if (!m.key[j]) {
            lab.num = id - 1;
            k = pe_heap_stack(id - 1, pcs, PE_HEAP_MAX_FRAMES);
            err = k > 0 ? pe_prof_add(p, pcs, k, 0, NULL, &lab, 1)
                        : pe_prof_add_named(p, "[unknown]", NULL, &lab, 1);
            m.key[j] = id;
            m.val[j] = (uint32_t)pe_prof_nsamples(p) - 1;
            m.n++;
        }
        v[i].sample = m.val[j];
    }
    free(m.key);
    free(m.val);
    return err;
}

int
pe_heap_hsnap(const pe_heap_age_t *f, int all_one, pe_prof_t **pp, pe_prof_hsnap_t **hp)
{
    static const pe_prof_vt_t types[1] = {{"inuse_space", "bytes"}};
    collect_t c = {.all_one = all_one, .age = f};
    pe_prof_hsnap_t *h = NULL;
    pe_prof_t *p;
    int rc;

    rc = pe_heap_live_iterate(collect_one, &c);
    p = pe_prof_new(types, 1, NULL, 0);
    if (rc == 0 && p)
        rc = map_stacks(p, c.v, c.n);
    if (rc == 0 && p)
        rc = pe_prof_hsnap_build(p, c.v, c.n, &h);
    free(c.v); /* the layout holds what it needs */
    if (rc < 0 || !p) {
        pe_prof_free(p);
        return rc < 0 ? rc : -ENOMEM;
    }
    *pp = p;
    *hp = h;
    return 0;
}
