/*
 * text.c: the model as a plain-text report shaped like Julia's Profile.print:
 * a call tree from the outermost frame to the leaf (format=:tree) or one line
 * per place (format=:flat), optionally one section per `thread` label.  A
 * frame prints as Julia prints it, "File:Line; Function", where the debug
 * info gave a line, else "[object] Function"; inlined calls are frames of
 * their own.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../profile/model.h"
#include "render.h"

/* Indentation is one column per level up to here, then "+N " like Julia's. */
#define TEXT_MAX_INDENT 40
#define TEXT_FILE_WIDTH 24

typedef struct text_s {
    pe_prof_t *p;
    pe_sink_t *out;
    const pe_text_opts_t *opts;
    int vi; /* value index */
} text_t;

/* ---- helpers ------------------------------------------------------------------ */

static const char *
base_name(const char *path)
{
    const char *s;

    if (!path)
        return "?";
    s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A flat row's File column: the source file's base name, else "[object]". */
static const char *
flat_file(const pe_prof_frame_t *f)
{
    static __thread char buf[TEXT_FILE_WIDTH + 3];

    if (f->src)
        return base_name(f->src);
    snprintf(buf, sizeof(buf), "[%.*s]", TEXT_FILE_WIDTH, base_name(f->file));
    return buf;
}

static int
digits(int64_t v)
{
    int n = 1;

    if (v < 0) {
        n++;
        v = -v;
    }
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* ---- tree ------------------------------------------------------------------------ */

typedef struct node_s {
    uint32_t parent; /* 0 = the root, which is node 0 itself */
    uint32_t name;   /* string index of the frame's label */
    int64_t total, self;
    uint32_t kids, nkids; /* range in tree_t.order */
} node_t;

typedef struct tree_s {
    node_t *nodes;
    uint32_t n, cap;
    uint32_t *hash; /* (parent, name) -> node index; 0 = empty (root is never a child) */
    uint32_t hcap;
    uint32_t *order; /* non-root nodes grouped by parent, biggest first */
    const pe_prof_t *p;
} tree_t;

static uint32_t
node_hash(uint32_t parent, uint32_t name)
{
    uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ULL;

    return (uint32_t)(h >> 32);
}

static int
tree_rehash(tree_t *t)
{
    uint32_t ncap = t->hcap ? t->hcap * 2 : 1024, i, h;
    uint32_t *nh = calloc(ncap, sizeof(*nh));

    if (!nh)
        return -ENOMEM;
    for (i = 1; i < t->n; i++) {
        h = node_hash(t->nodes[i].parent, t->nodes[i].name) & (ncap - 1);
        while (nh[h])
            h = (h + 1) & (ncap - 1);
        nh[h] = i;
    }
    free(t->hash);
    t->hash = nh;
    t->hcap = ncap;
    return 0;
}

/* The child of `parent` for this frame, created on first use; 0 on ENOMEM. */
static uint32_t
tree_child(tree_t *t, uint32_t parent, const pe_prof_frame_t *f)
{
    uint32_t name = pe_prof_stridx(f->label), h, i;
    node_t *n;

    if ((t->n + 1) * 2 > t->hcap && tree_rehash(t))
        return 0;
    h = node_hash(parent, name) & (t->hcap - 1);
    while ((i = t->hash[h]) != 0) {
        if (t->nodes[i].parent == parent && t->nodes[i].name == name)
            return i;
        h = (h + 1) & (t->hcap - 1);
    }
    if (t->n == t->cap) {
        uint32_t ncap = t->cap * 2;
        node_t *nn = realloc(t->nodes, ncap * sizeof(*nn));

        if (!nn)
            return 0;
        t->nodes = nn;
        t->cap = ncap;
    }
    n = &t->nodes[t->n];
    memset(n, 0, sizeof(*n));
    n->parent = parent;
    n->name = name;
    t->hash[h] = t->n;
    return t->n++;
}

static int
node_cmp(const void *a, const void *b, void *arg)
{
    const tree_t *t = arg;
    const node_t *x = &t->nodes[*(const uint32_t *)a], *y = &t->nodes[*(const uint32_t *)b];

    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(t->p->strs[x->name], t->p->strs[y->name]);
}

/* Build the call tree of the listed samples and order every node's children. */
static int
tree_build(tree_t *t, const text_t *c, const uint32_t *idx, uint32_t nidx)
{
    const pe_prof_frame_t *const *frames;
    const pe_prof_smp_t *s;
    uint32_t i, node;
    int64_t v;
    int j, nframes;

    memset(t, 0, sizeof(*t));
    t->p = c->p;
    t->cap = 1024;
    t->nodes = calloc(t->cap, sizeof(*t->nodes));
    if (!t->nodes)
        return -ENOMEM;
    t->n = 1; /* the root */
    for (i = 0; i < nidx; i++) {
        s = c->p->samples[idx[i]];
        v = s->values[c->vi];
        t->nodes[0].total += v;
        node = 0;
        frames = pe_prof_smp_frames(s, &nframes);
        for (j = nframes - 1; j >= 0; j--) {
            node = tree_child(t, node, frames[j]);
            if (!node)
                return -ENOMEM;
            t->nodes[node].total += v;
        }
        t->nodes[node].self += v;
    }
    t->order = malloc(t->n * sizeof(*t->order));
    if (!t->order)
        return -ENOMEM;
    for (i = 1; i < t->n; i++)
        t->order[i - 1] = i;
    qsort_r(t->order, t->n - 1, sizeof(*t->order), node_cmp, t);
    for (i = 0; i + 1 < t->n; i++) {
        node_t *parent = &t->nodes[t->nodes[t->order[i]].parent];

        if (parent->nkids++ == 0)
            parent->kids = i;
    }
    return 0;
}

static void
tree_free(tree_t *t)
{
    free(t->nodes);
    free(t->hash);
    free(t->order);
}

static void
tree_print(const text_t *c, const tree_t *t, uint32_t ni, int depth, int width)
{
    const node_t *n = &t->nodes[ni];
    char indent[TEXT_MAX_INDENT + 16];
    int ind = depth - 1, k;
    uint32_t i;

    if (c->out->err)
        return;
    if (ni != 0) {
        /* Julia's layout: self count (blank when 0), a bar, indentation, then the node. */
        if (ind > TEXT_MAX_INDENT) {
            memset(indent, ' ', TEXT_MAX_INDENT);
            k = TEXT_MAX_INDENT;
            k += snprintf(indent + k, sizeof(indent) - (size_t)k, "+%d ", ind - TEXT_MAX_INDENT);
        } else {
            memset(indent, ' ', (size_t)ind);
            k = ind;
        }
        indent[k] = '\0';
        if (n->self)
            pe_sink_printf(c->out, "%*" PRId64 "|%s%" PRId64 " %s\n", width, n->self, indent,
                           n->total, c->p->strs[n->name]);
        else
            pe_sink_printf(c->out, "%*s|%s%" PRId64 " %s\n", width, "", indent, n->total,
                           c->p->strs[n->name]);
    }
    if (c->opts->maxdepth > 0 && depth >= c->opts->maxdepth)
        return;
    for (i = 0; i < n->nkids; i++) {
        uint32_t kid = t->order[n->kids + i];

        /* Children are sorted by count, so the first one below mincount ends the list. */
        if (t->nodes[kid].total < c->opts->mincount)
            break;
        tree_print(c, t, kid, depth + 1, width);
    }
}

static int
report_tree(const text_t *c, const uint32_t *idx, uint32_t nidx)
{
    tree_t t;
    int width, err;

    err = tree_build(&t, c, idx, nidx);
    if (err)
        goto out;
    width = digits(t.nodes[0].total);
    if (width < 8)
        width = 8;
    pe_sink_printf(c->out, "%*s| [+additional indent] Count File:Line; Function\n", width,
                   "Overhead");
    pe_sink_printf(c->out, "%.*s\n", width + 44,
                   "================================================================");
    tree_print(c, &t, 0, 0, width);
out:
    tree_free(&t);
    return err;
}

/* ---- flat ------------------------------------------------------------------------ */

typedef struct flat_s {
    uint32_t name;            /* string index of the label: one row per place */
    const pe_prof_frame_t *f; /* the first frame seen there */
    int64_t count, self;
} flat_t;

static int
flat_cmp(const void *a, const void *b, void *arg)
{
    const flat_t *x = a, *y = b;
    const pe_prof_t *p = arg;

    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    return strcmp(p->strs[x->name], p->strs[y->name]);
}

static int
report_flat(const text_t *c, const uint32_t *idx, uint32_t nidx)
{
    const pe_prof_t *p = c->p;
    uint32_t *row_of = calloc(p->nstrs, sizeof(*row_of));   /* name -> row + 1 */
    uint32_t *seen_in = calloc(p->nstrs, sizeof(*seen_in)); /* name -> sample + 1 */
    flat_t *rows = NULL;
    uint32_t nrows = 0, capr = 0, i, name;
    int64_t total = 0, v;
    int j, cw, fw = 4, nframes;
    const pe_prof_frame_t *const *frames;
    const pe_prof_smp_t *s;
    const pe_prof_frame_t *f;
    char line[16];
    int err = 0;

    if (!row_of || !seen_in) {
        err = -ENOMEM;
        goto out;
    }
    for (i = 0; i < nidx; i++) {
        s = p->samples[idx[i]];
        v = s->values[c->vi];
        total += v;
        frames = pe_prof_smp_frames(s, &nframes);
        for (j = 0; j < nframes; j++) {
            f = frames[j];
            name = pe_prof_stridx(f->label);
            if (!row_of[name]) {
                if (nrows == capr) {
                    uint32_t ncap = capr ? capr * 2 : 256;
                    flat_t *nr = realloc(rows, ncap * sizeof(*nr));

                    if (!nr) {
                        err = -ENOMEM;
                        goto out;
                    }
                    rows = nr;
                    capr = ncap;
                }
                rows[nrows] = (flat_t){.name = name, .f = f};
                row_of[name] = ++nrows;
            }
            if (j == 0)
                rows[row_of[name] - 1].self += v;
            /* A recursive function counts once per sample, as in Julia's flat view. */
            if (seen_in[name] != i + 1) {
                seen_in[name] = i + 1;
                rows[row_of[name] - 1].count += v;
            }
        }
    }
    qsort_r(rows, nrows, sizeof(*rows), flat_cmp, (void *)p);
    for (i = 0; i < nrows; i++)
        if ((int)strlen(flat_file(rows[i].f)) > fw)
            fw = (int)strlen(flat_file(rows[i].f));
    if (fw > TEXT_FILE_WIDTH)
        fw = TEXT_FILE_WIDTH;
    cw = digits(total) > 5 ? digits(total) : 5;
    /* Julia's flat columns: Count Overhead File Line Function. */
    pe_sink_printf(c->out, "%*s %*s %-*s %5s %s\n", cw, "Count", cw > 8 ? cw : 8, "Overhead", fw,
                   "File", "Line", "Function");
    pe_sink_printf(c->out, "%*s %*s %-*s %5s %s\n", cw, "=====", cw > 8 ? cw : 8, "========", fw,
                   "====", "====", "========");
    for (i = 0; i < nrows && !c->out->err; i++) {
        if (rows[i].count < c->opts->mincount)
            break;
        f = rows[i].f;
        if (f->line)
            snprintf(line, sizeof(line), "%u", f->line);
        else
            snprintf(line, sizeof(line), "?");
        pe_sink_printf(c->out, "%*" PRId64 " %*" PRId64 " %-*s %5s %s\n", cw, rows[i].count,
                       cw > 8 ? cw : 8, rows[i].self, fw, flat_file(f), line, f->name);
    }
out:
    free(rows);
    free(seen_in);
    free(row_of);
    return err;
}

/* ---- sections ---------------------------------------------------------------------- */

static int
report(const text_t *c, const uint32_t *idx, uint32_t nidx)
{
    int64_t total = 0;
    uint32_t i;
    int err;

    for (i = 0; i < nidx; i++)
        total += c->p->samples[idx[i]]->values[c->vi];
    err = c->opts->flat ? report_flat(c, idx, nidx) : report_tree(c, idx, nidx);
    /* The view's value summed (e.g. 200 signals of CPU samples), over the
       profile's samples: one per distinct stack and labels, so fewer. */
    if (!err)
        pe_sink_printf(c->out, "Total: %" PRId64 " %s of %s, summed over %u distinct stacks\n",
                       total, c->p->types[c->vi].unit, c->p->types[c->vi].type, nidx);
    return err;
}

static const pe_prof_label_t *
label_find(const pe_prof_smp_t *s, const char *key)
{
    int i;

    for (i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].key, key) == 0)
            return &s->labels[i];
    return NULL;
}

/* Order: samples with a numeric thread (by tid), then string threads, then none. */
static int
thread_cmp(const void *a, const void *b, void *arg)
{
    const pe_prof_t *p = arg;
    const pe_prof_label_t *x = label_find(p->samples[*(const uint32_t *)a], "thread");
    const pe_prof_label_t *y = label_find(p->samples[*(const uint32_t *)b], "thread");
    int kx = !x ? 2 : x->str ? 1 : 0, ky = !y ? 2 : y->str ? 1 : 0;
    uint32_t ia, ib;

    if (kx != ky)
        return kx < ky ? -1 : 1;
    if (kx == 0 && x->num != y->num)
        return x->num < y->num ? -1 : 1;
    if (kx == 1 && x->str != y->str)
        return strcmp(x->str, y->str);
    /* Same thread: keep sample order so the report is stable. */
    ia = *(const uint32_t *)a;
    ib = *(const uint32_t *)b;
    return (ia > ib) - (ia < ib);
}

static int
same_thread(const pe_prof_label_t *x, const pe_prof_label_t *y)
{
    if (!x || !y)
        return !x && !y;
    if (!x->str != !y->str)
        return 0;
    return x->str ? x->str == y->str : x->num == y->num; /* interned: pointers compare */
}

static int
report_by_thread(const text_t *c, uint32_t *idx, uint32_t nidx)
{
    const pe_prof_label_t *t, *name;
    uint32_t i, j, k;
    int err = 0;

    qsort_r(idx, nidx, sizeof(*idx), thread_cmp, c->p);
    for (i = 0; i < nidx && !err; i = j) {
        t = label_find(c->p->samples[idx[i]], "thread");
        name = NULL;
        for (j = i; j < nidx && same_thread(t, label_find(c->p->samples[idx[j]], "thread")); j++)
            ;
        for (k = i; k < j && !name; k++)
            name = label_find(c->p->samples[idx[k]], "thread_name");
        if (!t)
            pe_sink_printf(c->out, "\nThread ? (no thread label)\n");
        else if (t->str)
            pe_sink_printf(c->out, "\nThread %s %s\n", t->str, name && name->str ? name->str : "");
        else
            pe_sink_printf(c->out, "\nThread %" PRId64 " %s\n", t->num,
                           name && name->str ? name->str : "");
        err = report(c, idx + i, j - i);
    }
    return err;
}

int
pe_prof_write_text(pe_prof_t *p, pe_sink_t *out, const pe_text_opts_t *opts)
{
    static const pe_text_opts_t defaults = {.value_index = -1};
    text_t c = {.p = p, .out = out, .opts = opts ? opts : &defaults};
    uint32_t *idx, i;
    int err;

    err = pe_prof_resolve(p, 0);
    if (err)
        return err;
    c.vi = c.opts->value_index < 0 ? pe_prof_default_index(p) : c.opts->value_index;
    if (c.vi >= p->ntypes)
        return -EINVAL;
    idx = malloc((p->nsamples + 1) * sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    for (i = 0; i < p->nsamples; i++)
        idx[i] = i;
    pe_sink_printf(out, "%s (%s), %s view%s\n", p->types[c.vi].type, p->types[c.vi].unit,
                   c.opts->flat ? "flat" : "tree", c.opts->by_thread ? ", by thread" : "");
    /* What the reader should do first ("hint: " comments, as the SVG title shows them). */
    for (int k = 0; k < p->ncomments; k++)
        if (!strncmp(p->comments[k], "hint: ", 6))
            pe_sink_printf(out, "%s\n", p->comments[k]);
    err = c.opts->by_thread ? report_by_thread(&c, idx, p->nsamples) : report(&c, idx, p->nsamples);
    free(idx);
    return err ? err : out->err;
}
