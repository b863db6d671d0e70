/*
 * h_snapshot.c: /heap_snapshot (ProfileEndpoints.jl's name): the live sampled
 * heap as a Chrome DevTools .heapsnapshot document.  The live blocks come from
 * heap/ (one consistent copy of the live table, taken under its lock and read
 * after it is released, so the program allocates and frees meanwhile), names
 * from the one profile model (proto/profile.h), the layout and the streaming
 * from proto/heapsnapshot.c.
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../heap/heap.h"
#include "http_int.h"

/* ---- collecting the live blocks ------------------------------------------------------ */

/* stack id -> sample index, open addressing on id + 1 (0 = empty). */
typedef struct stackmap_s {
    uint32_t *key, *val;
    uint32_t cap, n;
} stackmap_t;

typedef struct collect_s {
    pe_prof_hsnap_obj_t *v; /* .sample holds the heap stack id until mapped */
    size_t n, cap;
    int all_one;
    pe_http_age_t age; /* min_age, max_age */
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
    return x >= 4294967295.0 ? UINT32_MAX : (uint32_t)llround(x);
}

static int
collect_one(const pe_heap_live_t *b, void *arg)
{
    collect_t *c = arg;

    if (!pe_http_age_pass(&c->age, b))
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

/* ---- the endpoint -------------------------------------------------------------------- */

int
pe_http_h_heap_snapshot(pe_req_t *r)
{
    static const pe_prof_vt_t types[1] = {{"inuse_space", "bytes"}};
    collect_t c = {0};
    pe_prof_hsnap_t *h = NULL;
    pe_prof_t *p;
    pe_resp_t resp;
    int rc;

    if (!pe_heap_available())
        return pe_http_error(r, 503, "heap profiling unavailable: %s", pe_heap_reason());
    if (pe_heap_rate() <= 0)
        return pe_http_error(r, 503,
                             "heap sampling is off (PROFEP_HEAP_RATE=0); set "
                             "PROFEP_HEAP_RATE to a mean number of bytes, e.g. 524288");
    if ((rc = pe_param_bool(r, "all_one", 0, &c.all_one)) || (rc = pe_http_age_parse(r, &c.age)))
        return rc;

    rc = pe_heap_live_iterate(collect_one, &c);
    p = pe_prof_new(types, 1, NULL, 0);
    if (rc == 0 && p)
        rc = map_stacks(p, c.v, c.n);
    if (rc == 0 && p)
        rc = pe_prof_hsnap_build(p, c.v, c.n, &h);
    free(c.v); /* the layout holds what it needs */
    if (rc < 0 || !p) {
        pe_prof_free(p);
        return pe_http_error(r, 500, "cannot build the heap snapshot: %s",
                             strerror(rc < 0 ? -rc : ENOMEM));
    }
    pe_http_begin(r, &resp, "application/json", "heap.heapsnapshot");
    rc = pe_prof_hsnap_write(h, &resp.sink); /* a client that left stops only itself */
    pe_http_end(&resp);
    if (rc < 0 && r->capture) {
        r->status = 500;
        snprintf(r->errmsg, sizeof(r->errmsg), "%s: writing the snapshot failed: %s", r->path,
                 strerror(-rc));
    }
    pe_prof_hsnap_free(h);
    pe_prof_free(p);
    return r->status;
}
