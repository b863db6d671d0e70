/*
 * heapsnapshot.c: the live sampled heap as a V8 .heapsnapshot JSON document,
 * the format Chrome DevTools' Memory tab loads and memlab parses.  It owns the
 * graph layout and the streaming writer; the live objects and their stacks come
 * from the caller (http/h_snapshot.c) and names from the model, resolved as for
 * every other encoder.  Design notes: docs/DESIGN.md (Heap snapshot).
 *
 *   ordinal  name            type       edges
 *   0        ""              synthetic  element -> 1, property -> outermost frames
 *   1        "(GC roots)"    synthetic  none (DevTools computes distances only
 *                                       when the root has a child of that name)
 *   2..      frame label     object     property -> callee frames (named after
 *                                       the callee), element -> its objects
 *   then     leaf's name     native     none; self_size = the block's bytes
 *
 * Why these types: DevTools' Summary groups nodes by name but skips those of
 * size 0 unless native, so it lists the allocation sites (native, sized) and
 * not the frames (object, size 0); the frames are not "synthetic", which
 * DevTools would not count as user roots (no distances), nor "hidden", which
 * DevTools files under "(system)" and memlab's analyses skip; memlab's
 * `analyze object-size` ranks object nodes by retained size, which makes it a
 * list of the heaviest call paths.
 *
 * The frame nodes are a trie of call paths keyed by frame label ("File:Line;
 * Function", as the text views print a frame) from the
 * outermost frame (main, _start) down to the allocation site, so shared
 * prefixes are one node.  Every node but the root has exactly one retainer,
 * hence the dominator tree is the trie itself and the retained size of a frame
 * node is the live bytes allocated under that call path.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../profile/model.h"
#include "heapsnapshot.h"

/* Indexes into meta.node_types[0] and meta.edge_types[0] below. */
#define HS_NODE_OBJECT 3
#define HS_NODE_NATIVE 8
#define HS_NODE_SYNTHETIC 9
#define HS_EDGE_ELEMENT 1
#define HS_EDGE_PROPERTY 2
#define HS_NODE_FIELDS 7 /* type, name, id, self_size, edge_count, trace_node_id, detachedness */
#define HS_FIRST_FRAME 2 /* ordinal of the first frame node */

static const char hs_meta[] =
    "{\"meta\":{"
    "\"node_fields\":[\"type\",\"name\",\"id\",\"self_size\",\"edge_count\",\"trace_node_id\","
    "\"detachedness\"],\n"
    "\"node_types\":[[\"hidden\",\"array\",\"string\",\"object\",\"code\",\"closure\",\"regexp\","
    "\"number\",\"native\",\"synthetic\",\"concatenated string\",\"sliced string\",\"symbol\","
    "\"bigint\",\"object shape\"],\"string\",\"number\",\"number\",\"number\",\"number\","
    "\"number\"],\n"
    "\"edge_fields\":[\"type\",\"name_or_index\",\"to_node\"],\n"
    "\"edge_types\":[[\"context\",\"element\",\"property\",\"internal\",\"hidden\",\"shortcut\","
    "\"weak\"],\"string_or_number\",\"node\"],\n"
    "\"trace_function_info_fields\":[\"function_id\",\"name\",\"script_name\",\"script_id\","
    "\"line\",\"column\"],\n"
    "\"trace_node_fields\":[\"id\",\"function_info_index\",\"count\",\"size\",\"children\"],\n"
    "\"sample_fields\":[\"timestamp_us\",\"last_assigned_id\"],\n"
    "\"location_fields\":[\"object_index\",\"script_id\",\"line\",\"column\"]},\n";

/* ---- the laid-out graph ---------------------------------------------------------- */

/* One frame node.  Links are frame index + 1; 0 means none (or, for parent, the root). */
typedef struct hs_frame_s {
    uint32_t name;       /* snapshot string index */
    uint32_t parent;     /* the caller's frame */
    uint32_t child, sib; /* first callee, next callee of the same caller */
    uint32_t nchild;     /* callees */
    uint32_t nobj;       /* objects allocated with this frame as the leaf */
    uint32_t obj0;       /* index of the first of them in size[] */
} hs_frame_t;

struct pe_prof_hsnap_s {
    hs_frame_t *fr;
    uint32_t nfr, capfr;
    uint32_t *fr_hash; /* (parent, name) -> frame index + 1, open addressing */
    uint32_t fr_hcap;
    uint32_t root_child, root_nchild; /* the root's callees (outermost frames) */
    const char **str;                 /* snapshot strings (the model's, not copied) */
    uint32_t nstr, capstr;
    uint32_t *str_of; /* model string index -> snapshot string index + 1 */
    uint32_t nstr_of;
    uint32_t *size; /* object sizes, grouped by leaf frame in frame order */
    uint32_t nobj;
};

/* Grow *arr to hold at least `need` elements of `elsize` bytes; 0 or -ENOMEM. */
static int
grow(void *arr, uint32_t *cap, uint32_t need, size_t elsize)
{
    void **a = arr;
    uint32_t n = *cap ? *cap : 64;
    void *v;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    v = realloc(*a, (size_t)n * elsize);
    if (!v)
        return -ENOMEM;
    *a = v;
    *cap = n;
    return 0;
}

/* Snapshot string index of an interned model string, added on first use. */
static int64_t
str_index(pe_prof_hsnap_t *h, const char *interned)
{
    uint32_t mi = pe_prof_stridx(interned), old = h->nstr_of;

    if (mi >= h->nstr_of) {
        if (grow(&h->str_of, &h->nstr_of, mi + 1, sizeof(uint32_t)))
            return -ENOMEM;
        memset(h->str_of + old, 0, (h->nstr_of - old) * sizeof(uint32_t));
    }
    if (h->str_of[mi])
        return h->str_of[mi] - 1;
    if (grow(&h->str, &h->capstr, h->nstr + 1, sizeof(*h->str)))
        return -ENOMEM;
    h->str[h->nstr++] = interned;
    h->str_of[mi] = h->nstr;
    return h->nstr - 1;
}

static uint32_t
fr_hashfn(uint32_t parent, uint32_t name)
{
    uint64_t k = ((uint64_t)parent << 32 | name) * 0x9E3779B97F4A7C15ull;

    return (uint32_t)(k >> 32);
}

static int
fr_rehash(pe_prof_hsnap_t *h, uint32_t cap)
{
    uint32_t *t = calloc(cap, sizeof(*t)), i, j;

    if (!t)
        return -ENOMEM;
    for (i = 0; i < h->nfr; i++) {
        j = fr_hashfn(h->fr[i].parent, h->fr[i].name) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = i + 1;
    }
    free(h->fr_hash);
    h->fr_hash = t;
    h->fr_hcap = cap;
    return 0;
}

/* The frame named `name` under `parent` (frame index + 1, 0 = root), created on
   first use.  Returns its index + 1, or 0 on ENOMEM. */
static uint32_t
frame_get(pe_prof_hsnap_t *h, uint32_t parent, uint32_t name)
{
    uint32_t j, idx;
    hs_frame_t *f;

    if ((h->nfr + 1) * 2 > h->fr_hcap && fr_rehash(h, h->fr_hcap ? h->fr_hcap * 2 : 1024))
        return 0;
    j = fr_hashfn(parent, name) & (h->fr_hcap - 1);
    while ((idx = h->fr_hash[j]) != 0) {
        f = &h->fr[idx - 1];
        if (f->parent == parent && f->name == name)
            return idx;
        j = (j + 1) & (h->fr_hcap - 1);
    }
    if (grow(&h->fr, &h->capfr, h->nfr + 1, sizeof(*h->fr)))
        return 0;
    f = &h->fr[h->nfr++];
    memset(f, 0, sizeof(*f));
    f->name = name;
    f->parent = parent;
    if (parent) {
        f->sib = h->fr[parent - 1].child;
        h->fr[parent - 1].child = h->nfr;
        h->fr[parent - 1].nchild++;
    } else {
        f->sib = h->root_child;
        h->root_child = h->nfr;
        h->root_nchild++;
    }
    h->fr_hash[j] = h->nfr;
    return h->nfr;
}

/* ---- build ----------------------------------------------------------------------- */

void
pe_prof_hsnap_free(pe_prof_hsnap_t *h)
{
    if (!h)
        return;
    free(h->fr);
    free(h->fr_hash);
    free(h->str);
    free(h->str_of);
    free(h->size);
    free(h);
}

int
pe_prof_hsnap_build(pe_prof_t *p, const pe_prof_hsnap_obj_t *objs, size_t n, pe_prof_hsnap_t **out)
{
    pe_prof_hsnap_t *h;
    pe_prof_sample_t s;
    uint32_t *leaf = NULL, ns, i, at, parent;
    const char *unknown;
    int64_t si;
    int err, d;

    *out = NULL;
    if (n && !objs)
        return -EINVAL;
    err = pe_prof_resolve(p, 0);
    if (err)
        return err;
    unknown = pe_prof_intern(p, "[unknown]"); /* for a sample without frames */
    h = calloc(1, sizeof(*h));
    if (!unknown || !h) {
        free(h);
        return -ENOMEM;
    }
    err = -ENOMEM;
    /* Strings 0 and 1: the root's name and the GC roots node's. */
    if (str_index(h, p->strs[0]) != 0 || grow(&h->str, &h->capstr, 2, sizeof(*h->str)))
        goto err_free;
    h->str[h->nstr++] = "(GC roots)";
    ns = (uint32_t)pe_prof_nsamples(p);
    leaf = malloc(((size_t)ns + 1) * sizeof(*leaf));
    if (!leaf)
        goto err_free;

    /* The trie: each sample's stack from its outermost frame to its leaf. */
    for (i = 0; i < ns; i++) {
        pe_prof_sample(p, (int)i, &s);
        parent = 0;
        for (d = s.nframes - 1; d >= 0; d--) {
            if ((si = str_index(h, s.frames[d]->label)) < 0 ||
                !(parent = frame_get(h, parent, (uint32_t)si)))
                goto err_free;
        }
        if (!parent &&
            ((si = str_index(h, unknown)) < 0 || !(parent = frame_get(h, 0, (uint32_t)si))))
            goto err_free;
        leaf[i] = parent - 1;
    }

    /* Group the objects by leaf frame, frames in index order (a counting sort):
       obj0 first holds each group's end, and placing from the end leaves it at
       the group's start. */
    err = -E2BIG;
    if (n > UINT32_MAX / HS_NODE_FIELDS ||
        (uint64_t)HS_FIRST_FRAME + h->nfr + n > UINT32_MAX / HS_NODE_FIELDS)
        goto err_free; /* to_node (ordinal * 7) and ids must fit 32 bits */
    err = -EINVAL;
    for (i = 0; i < n; i++) {
        if (objs[i].sample >= ns)
            goto err_free;
        h->fr[leaf[objs[i].sample]].nobj++;
    }
    for (i = 0, at = 0; i < h->nfr; i++) {
        at += h->fr[i].nobj;
        h->fr[i].obj0 = at;
    }
    err = -ENOMEM;
    h->size = malloc((n ? n : 1) * sizeof(*h->size));
    if (!h->size)
        goto err_free;
    for (i = 0; i < n; i++)
        h->size[--h->fr[leaf[objs[i].sample]].obj0] = objs[i].size;
    h->nobj = (uint32_t)n;
    free(leaf);
    *out = h;
    return 0;

err_free:
    free(leaf);
    pe_prof_hsnap_free(h);
    return err;
}

/* ---- output -------------------------------------------------------------------------- */

/* Bytes gathered before each write to the caller's sink. */
#define HS_BUF 65536

/* One record of numbers: "\n," before every record but the first of its array
   (V8's own layout, one node or edge per line). */
static void
out_rec(pe_sink_t *o, const uint32_t *v, int k, int first)
{
    char tmp[2 + 7 * 11], *e = tmp + sizeof(tmp), *q = e;
    int i;

    for (i = k - 1; i >= 0; i--) {
        uint32_t x = v[i];

        do {
            *--q = (char)('0' + x % 10);
            x /= 10;
        } while (x);
        if (i)
            *--q = ',';
    }
    if (!first) {
        *--q = ',';
        *--q = '\n';
    }
    pe_sink_write(o, q, (size_t)(e - q));
}

/* ---- write ------------------------------------------------------------------------ */

/* Node ordinal -> the value of a to_node field, and the node's id (odd, as V8's
   heap object ids; stable only within one snapshot). */
#define HS_TO(ord) ((uint32_t)(ord)*HS_NODE_FIELDS)
#define HS_ID(ord) ((uint32_t)(ord)*2 + 1)

int
pe_prof_hsnap_write(const pe_prof_hsnap_t *h, pe_sink_t *sink)
{
    uint32_t obj_ord0 = HS_FIRST_FRAME + h->nfr, i, k, c, v[HS_NODE_FIELDS];
    char line[160];
    pe_bufsink_t b;
    pe_sink_t *o = &b.sink;

    if (sink->err)
        return sink->err;
    if (pe_bufsink_open(&b, sink, HS_BUF))
        return -ENOMEM;
    pe_sink_put(o, "{\"snapshot\":");
    pe_sink_put(o, hs_meta);
    snprintf(line, sizeof(line),
             "\"node_count\":%u,\"edge_count\":%u,\"trace_function_count\":0},\n\"nodes\":[",
             obj_ord0 + h->nobj, 1 + h->nfr + h->nobj);
    pe_sink_put(o, line);

    /* Nodes: type, name, id, self_size, edge_count, trace_node_id, detachedness. */
    memset(v, 0, sizeof(v));
    v[0] = HS_NODE_SYNTHETIC;
    v[1] = 0;
    v[2] = HS_ID(0);
    v[4] = 1 + h->root_nchild;
    out_rec(o, v, HS_NODE_FIELDS, 1);
    v[1] = 1;
    v[2] = HS_ID(1);
    v[4] = 0;
    out_rec(o, v, HS_NODE_FIELDS, 0);
    v[0] = HS_NODE_OBJECT;
    for (i = 0; i < h->nfr; i++) {
        v[1] = h->fr[i].name;
        v[2] = HS_ID(HS_FIRST_FRAME + i);
        v[4] = h->fr[i].nchild + h->fr[i].nobj;
        out_rec(o, v, HS_NODE_FIELDS, 0);
    }
    v[0] = HS_NODE_NATIVE;
    v[4] = 0;
    for (i = 0; i < h->nfr && !o->err; i++) {
        v[1] = h->fr[i].name; /* named after the allocation site */
        for (k = 0; k < h->fr[i].nobj; k++) {
            v[2] = HS_ID(obj_ord0 + h->fr[i].obj0 + k);
            v[3] = h->size[h->fr[i].obj0 + k];
            out_rec(o, v, HS_NODE_FIELDS, 0);
        }
    }

    /* Edges: type, name_or_index, to_node; each node's edges in node order. */
    pe_sink_put(o, "],\n\"edges\":[");
    v[0] = HS_EDGE_ELEMENT;
    v[1] = 1;
    v[2] = HS_TO(1);
    out_rec(o, v, 3, 1);
    v[0] = HS_EDGE_PROPERTY;
    for (c = h->root_child; c; c = h->fr[c - 1].sib) {
        v[1] = h->fr[c - 1].name;
        v[2] = HS_TO(HS_FIRST_FRAME + c - 1);
        out_rec(o, v, 3, 0);
    }
    for (i = 0; i < h->nfr && !o->err; i++) {
        v[0] = HS_EDGE_PROPERTY;
        for (c = h->fr[i].child; c; c = h->fr[c - 1].sib) {
            v[1] = h->fr[c - 1].name;
            v[2] = HS_TO(HS_FIRST_FRAME + c - 1);
            out_rec(o, v, 3, 0);
        }
        v[0] = HS_EDGE_ELEMENT;
        for (k = 0; k < h->fr[i].nobj; k++) {
            v[1] = k;
            v[2] = HS_TO(obj_ord0 + h->fr[i].obj0 + k);
            out_rec(o, v, 3, 0);
        }
    }

    /* The arrays a loader looks for, empty, then the strings. */
    pe_sink_put(o, "],\n\"trace_function_infos\":[],\n\"trace_tree\":[],\n\"samples\":[],\n"
                   "\"locations\":[],\n\"strings\":[");
    for (i = 0; i < h->nstr && !o->err; i++) {
        if (i)
            pe_sink_put(o, ",\n");
        pe_sink_json_str(o, h->str[i]);
    }
    pe_sink_put(o, "]}\n");
    return pe_bufsink_close(&b);
}
