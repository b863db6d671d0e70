/*
 * model.c: the in-memory profile behind every encoder: interned strings,
 * functions deduplicated by name, locations by address, samples by (stack,
 * labels), each with an open-addressing hash table, all in one bump arena.
 * Mappings come from mappings.c, and names, lines and labels from the naming
 * pass (naming.c) at resolve time; the encoders (pprof.c, text.c) only read.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../symbols/pynames.h" /* PE_PY_IS_TAG: CPython frames, resolved by pyloc.c */
#include "profile_int.h"

/* Arena blocks; anything above a quarter block gets a block of its own. */
#define ARENA_BLOCK (64 * 1024)
#define ARENA_ALIGN 8

struct pe_prof_arena_s {
    struct pe_prof_arena_s *next;
    size_t pad; /* keeps the payload 16-byte aligned */
};

/* ---- arena ---------------------------------------------------------------- */

void *
pe_prof_arena_alloc(pe_prof_t *p, size_t size)
{
    pe_prof_arena_t *blk;
    void *mem;

    size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size <= p->arena_left) {
        mem = p->arena_cur;
        p->arena_cur += size;
        p->arena_left -= size;
        return mem;
    }
    if (size > ARENA_BLOCK / 4) {
        /* A big one-off goes behind the head so the current block stays in use. */
        blk = malloc(sizeof(*blk) + size);
        if (!blk)
            return NULL;
        if (p->arena) {
            blk->next = p->arena->next;
            p->arena->next = blk;
        } else {
            blk->next = NULL;
            p->arena = blk;
        }
        return blk + 1;
    }
    blk = malloc(sizeof(*blk) + ARENA_BLOCK);
    if (!blk)
        return NULL;
    blk->next = p->arena;
    p->arena = blk;
    p->arena_cur = (char *)(blk + 1) + size;
    p->arena_left = ARENA_BLOCK - size;
    return blk + 1;
}

/*
 * Grow the malloc'd array whose pointer is at arrp (any T **) to hold at least
 * `need` elements.  The pointer is moved with memcpy, not through a void **,
 * so no strict-aliasing rule is bent.
 */
static int
grow(void *arrp, uint32_t *cap, uint32_t need, size_t elem)
{
    uint32_t ncap = *cap ? *cap : 16;
    void *old, *n;

    if (need <= *cap)
        return 0;
    while (ncap < need) {
        if (ncap > UINT32_MAX / 2)
            return -ENOMEM;
        ncap *= 2;
    }
    memcpy(&old, arrp, sizeof(old));
    n = realloc(old, (size_t)ncap * elem);
    if (!n)
        return -ENOMEM;
    memcpy(arrp, &n, sizeof(n));
    *cap = ncap;
    return 0;
}

/* ---- hashing -------------------------------------------------------------- */

static inline uint64_t
mix64(uint64_t x)
{
    /* splitmix64 finalizer: cheap and good enough for addresses and pointers. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint32_t
hash_str(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/*
 * Rebuild an open-addressing table of `n` entries (values index + 1) with
 * capacity ncap, hashing entry i with hashfn(ctx, i).
 */
static int
rehash(uint32_t **tab, uint32_t *cap, uint32_t ncap, uint32_t n,
       uint32_t (*hashfn)(const pe_prof_t *, uint32_t), const pe_prof_t *p)
{
    uint32_t *t = calloc(ncap, sizeof(*t));
    uint32_t i, h;

    if (!t)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        h = hashfn(p, i) & (ncap - 1);
        while (t[h])
            h = (h + 1) & (ncap - 1);
        t[h] = i + 1;
    }
    free(*tab);
    *tab = t;
    *cap = ncap;
    return 0;
}

/* ---- strings ---------------------------------------------------------------- */

static uint32_t
str_hashfn(const pe_prof_t *p, uint32_t i)
{
    return hash_str(p->strs[i], strlen(p->strs[i]));
}

const char *
pe_prof_intern(pe_prof_t *p, const char *s)
{
    size_t n = strlen(s);
    uint32_t h, idx;
    char *copy;

    /* Keep the load factor under 1/2 so probes stay short. */
    if ((p->nstrs + 1) * 2 > p->str_hcap &&
        rehash(&p->str_hash, &p->str_hcap, p->str_hcap ? p->str_hcap * 2 : 1024, p->nstrs,
               str_hashfn, p))
        return NULL;
    h = hash_str(s, n) & (p->str_hcap - 1);
    while ((idx = p->str_hash[h]) != 0) {
        const char *t = p->strs[idx - 1];

        if (strncmp(t, s, n) == 0 && t[n] == '\0')
            return t;
        h = (h + 1) & (p->str_hcap - 1);
    }
    if (grow(&p->strs, &p->capstrs, p->nstrs + 1, sizeof(*p->strs)))
        return NULL;
    /* [uint32 index][text][NUL]: pe_prof_stridx reads the index back. */
    copy = pe_prof_arena_alloc(p, sizeof(uint32_t) + n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, &p->nstrs, sizeof(uint32_t));
    copy += sizeof(uint32_t);
    memcpy(copy, s, n);
    copy[n] = '\0';
    p->strs[p->nstrs++] = copy;
    p->str_hash[h] = p->nstrs;
    return copy;
}

/* Intern an optional string: NULL stays NULL, failure sets *err. */
static const char *
intern_opt(pe_prof_t *p, const char *s, int *err)
{
    const char *r;

    if (!s)
        return NULL;
    r = pe_prof_intern(p, s);
    if (!r)
        *err = -ENOMEM;
    return r;
}

/* ---- functions and locations ------------------------------------------------ */

/* Function index for an interned name, created on first use; -1 on ENOMEM. */
static int64_t
func_get(pe_prof_t *p, const char *name)
{
    uint32_t si = pe_prof_stridx(name), old = p->cap_func_of_str;

    if (si >= p->cap_func_of_str) {
        if (grow(&p->func_of_str, &p->cap_func_of_str, si + 1, sizeof(uint32_t)))
            return -1;
        memset(p->func_of_str + old, 0, (p->cap_func_of_str - old) * sizeof(uint32_t));
    }
    if (p->func_of_str[si])
        return p->func_of_str[si] - 1;
    if (grow(&p->funcs, &p->capfuncs, p->nfuncs + 1, sizeof(*p->funcs)))
        return -1;
    memset(&p->funcs[p->nfuncs], 0, sizeof(p->funcs[0]));
    p->funcs[p->nfuncs].name = name;
    p->func_of_str[si] = ++p->nfuncs;
    return p->nfuncs - 1;
}

/*
 * A native function: its raw (mangled) name and source file (NULL when
 * unknown), so two static functions of one name in two files stay two.
 * Created on first use with its readable names; -1 on ENOMEM.
 */
int64_t
pe_prof_native_func(pe_prof_t *p, const char *raw, const char *src)
{
    char key[2048];
    const char *ikey, *iraw, *isrc = NULL;
    int64_t fi;

    if (src)
        snprintf(key, sizeof(key), "%s\x01%s", raw, src);
    ikey = pe_prof_intern(p, src ? key : raw);
    if (!ikey)
        return -1;
    if (p->func_of_str && pe_prof_stridx(ikey) < p->cap_func_of_str &&
        p->func_of_str[pe_prof_stridx(ikey)])
        return p->func_of_str[pe_prof_stridx(ikey)] - 1;
    iraw = pe_prof_intern(p, raw);
    if (!iraw || (src && !(isrc = pe_prof_intern(p, src))) || (fi = func_get(p, ikey)) < 0)
        return -1;
    p->funcs[fi].name = iraw;
    p->funcs[fi].file = isrc;
    if (pe_prof_func_names(p, &p->funcs[fi], iraw, 0))
        return -1;
    return fi;
}

static uint32_t
loc_hashfn(const pe_prof_t *p, uint32_t i)
{
    return (uint32_t)mix64(p->locs[i]->frame.addr);
}

static pe_prof_loc_t *
loc_new(pe_prof_t *p, uintptr_t addr)
{
    pe_prof_loc_t *loc;

    if (grow(&p->locs, &p->caplocs, p->nlocs + 1, sizeof(*p->locs)))
        return NULL;
    loc = pe_prof_arena_alloc(p, sizeof(*loc));
    if (!loc)
        return NULL;
    memset(loc, 0, sizeof(*loc));
    loc->frame.addr = addr;
    p->locs[p->nlocs++] = loc;
    loc->id = p->nlocs;
    return loc;
}

/* The location for a program address, created on first use. */
static pe_prof_loc_t *
loc_get(pe_prof_t *p, uintptr_t addr)
{
    pe_prof_loc_t *loc;
    uint32_t h, idx;

    if ((p->nlocs + 1) * 2 > p->loc_hcap) {
        /* The table indexes every location; pseudo-locations just never match. */
        if (rehash(&p->loc_hash, &p->loc_hcap, p->loc_hcap ? p->loc_hcap * 2 : 1024, p->nlocs,
                   loc_hashfn, p))
            return NULL;
    }
    h = (uint32_t)mix64(addr) & (p->loc_hcap - 1);
    while ((idx = p->loc_hash[h]) != 0) {
        loc = p->locs[idx - 1];
        if (loc->frame.addr == addr && !loc->pseudo)
            return loc;
        h = (h + 1) & (p->loc_hcap - 1);
    }
    loc = loc_new(p, addr);
    if (loc)
        p->loc_hash[h] = p->nlocs;
    return loc;
}

/* ---- samples ------------------------------------------------------------------ */

static uint32_t
smp_hash(const pe_prof_frame_t *const *frames, int nframes, const pe_prof_label_t *labels,
         int nlabels)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)nframes;
    int i;

    /* Frames and label strings are interned, so their pointers are their identity. */
    for (i = 0; i < nframes; i++)
        h = mix64(h ^ (uintptr_t)frames[i]);
    for (i = 0; i < nlabels; i++) {
        h = mix64(h ^ (uintptr_t)labels[i].key);
        h = mix64(h ^ (uintptr_t)labels[i].str);
        h = mix64(h ^ (uint64_t)labels[i].num ^ ((uintptr_t)labels[i].unit << 1));
    }
    return (uint32_t)(h ^ (h >> 32));
}

static uint32_t
smp_hashfn(const pe_prof_t *p, uint32_t i)
{
    return p->samples[i]->hash;
}

static int
smp_equal(const pe_prof_smp_t *s, const pe_prof_frame_t *const *frames, int nframes,
          const pe_prof_label_t *labels, int nlabels)
{
    int i;

    if (s->nframes != nframes || s->nlabels != nlabels)
        return 0;
    for (i = 0; i < nframes; i++)
        if (s->frames[i] != frames[i])
            return 0;
    for (i = 0; i < nlabels; i++)
        if (s->labels[i].key != labels[i].key || s->labels[i].str != labels[i].str ||
            s->labels[i].num != labels[i].num || s->labels[i].unit != labels[i].unit)
            return 0;
    return 1;
}

/* Merge into the sample with this stack and labels, or add it (copies both). */
static int
smp_add(pe_prof_t *p, const pe_prof_frame_t *const *frames, int nframes, const int64_t *values,
        const pe_prof_label_t *labels, int nlabels)
{
    uint32_t hash = smp_hash(frames, nframes, labels, nlabels);
    uint32_t h, idx;
    pe_prof_smp_t *s;
    int i;

    if ((p->nsamples + 1) * 2 > p->smp_hcap &&
        rehash(&p->smp_hash, &p->smp_hcap, p->smp_hcap ? p->smp_hcap * 2 : 1024, p->nsamples,
               smp_hashfn, p))
        return -ENOMEM;
    h = hash & (p->smp_hcap - 1);
    while ((idx = p->smp_hash[h]) != 0) {
        s = p->samples[idx - 1];
        if (s->hash == hash && smp_equal(s, frames, nframes, labels, nlabels)) {
            for (i = 0; i < p->ntypes; i++)
                s->values[i] += values ? values[i] : 0;
            return 0;
        }
        h = (h + 1) & (p->smp_hcap - 1);
    }

    if (grow(&p->samples, &p->capsamples, p->nsamples + 1, sizeof(*p->samples)))
        return -ENOMEM;
    s = pe_prof_arena_alloc(p, sizeof(*s));
    if (!s)
        return -ENOMEM;
    memset(s, 0, sizeof(*s));
    s->hash = hash;
    s->nframes = (uint16_t)nframes;
    s->nlabels = (uint16_t)nlabels;
    if (nframes) {
        s->frames = pe_prof_arena_alloc(p, (size_t)nframes * sizeof(*s->frames));
        if (!s->frames)
            return -ENOMEM;
        memcpy(s->frames, frames, (size_t)nframes * sizeof(*s->frames));
    }
    if (nlabels) {
        s->labels = pe_prof_arena_alloc(p, (size_t)nlabels * sizeof(*s->labels));
        if (!s->labels)
            return -ENOMEM;
        memcpy(s->labels, labels, (size_t)nlabels * sizeof(*s->labels));
    }
    for (i = 0; i < p->ntypes; i++)
        s->values[i] = values ? values[i] : 0;
    p->samples[p->nsamples++] = s;
    p->smp_hash[h] = p->nsamples;
    return 0;
}

/* Copy caller labels with interned strings into out[]. */
static int
labels_intern(pe_prof_t *p, const pe_prof_label_t *in, int n, pe_prof_label_t *out)
{
    int i, err = 0;

    if (n < 0 || n > PE_PROF_MAX_LABELS || (n && !in))
        return -EINVAL;
    for (i = 0; i < n; i++) {
        if (!in[i].key)
            return -EINVAL;
        out[i].key = intern_opt(p, in[i].key, &err);
        out[i].str = intern_opt(p, in[i].str, &err);
        /* num and unit only mean something for numeric labels; zero them for dedup. */
        out[i].num = in[i].str ? 0 : in[i].num;
        out[i].unit = in[i].str ? NULL : intern_opt(p, in[i].unit, &err);
    }
    return err;
}

/* ---- public API ----------------------------------------------------------------- */

pe_prof_t *
pe_prof_new(const pe_prof_vt_t *types, int ntypes, const pe_prof_vt_t *period_type, int64_t period)
{
    pe_prof_t *p;
    int i, err = 0;

    if (!types || ntypes < 1 || ntypes > PE_PROF_MAX_TYPES) {
        errno = EINVAL;
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    /* string_table[0] must be "". */
    if (!pe_prof_intern(p, ""))
        goto err_free;
    p->ntypes = ntypes;
    for (i = 0; i < ntypes; i++) {
        p->types[i].type = intern_opt(p, types[i].type ? types[i].type : "", &err);
        p->types[i].unit = intern_opt(p, types[i].unit ? types[i].unit : "", &err);
    }
    if (period_type) {
        p->period_type.type = intern_opt(p, period_type->type ? period_type->type : "", &err);
        p->period_type.unit = intern_opt(p, period_type->unit ? period_type->unit : "", &err);
    }
    p->period = period;
    p->debug_budget = -1;
    if (err)
        goto err_free;
    return p;

err_free:
    pe_prof_free(p);
    errno = ENOMEM;
    return NULL;
}

void
pe_prof_free(pe_prof_t *p)
{
    pe_prof_arena_t *blk, *next;

    if (!p)
        return;
    for (blk = p->arena; blk; blk = next) {
        next = blk->next;
        free(blk);
    }
    free(p->strs);
    free(p->str_hash);
    free(p->funcs);
    free(p->func_of_str);
    free(p->locs);
    free(p->loc_hash);
    free(p->samples);
    free(p->smp_hash);
    free(p->maps);
    free(p->cur_maps);
    free(p);
}

int
pe_prof_add(pe_prof_t *p, const uintptr_t *pcs, int npcs, int leaf_exact, const int64_t *values,
            const pe_prof_label_t *labels, int nlabels)
{
    const pe_prof_frame_t *frames[PE_MAX_FRAMES];
    pe_prof_label_t labs[PE_PROF_MAX_LABELS];
    pe_prof_loc_t *loc;
    uintptr_t addr;
    int i, err;

    if (npcs < 0 || (npcs && !pcs))
        return -EINVAL;
    /* Keep the leaf end: the root end of a deep stack says the least. */
    if (npcs > PE_MAX_FRAMES)
        npcs = PE_MAX_FRAMES;
    err = labels_intern(p, labels, nlabels, labs);
    if (err)
        return err;
    for (i = 0; i < npcs; i++) {
        addr = pcs[i];
        /* Return addresses point after the call; pprof wants the call site. */
        if ((i > 0 || !leaf_exact) && addr != 0 && !PE_PY_IS_TAG(addr))
            addr--;
        loc = loc_get(p, addr);
        if (!loc)
            return -ENOMEM;
        frames[i] = &loc->frame;
    }
    return smp_add(p, frames, npcs, values, labs, nlabels);
}

int
pe_prof_add_named(pe_prof_t *p, const char *name, const int64_t *values,
                  const pe_prof_label_t *labels, int nlabels)
{
    return pe_prof_add_names(p, &name, 1, values, labels, nlabels);
}

int
pe_prof_add_names(pe_prof_t *p, const char *const *names, int n, const int64_t *values,
                  const pe_prof_label_t *labels, int nlabels)
{
    pe_prof_label_t labs[PE_PROF_MAX_LABELS];
    const pe_prof_frame_t *frames[PE_MAX_FRAMES];
    const char *iname;
    pe_prof_loc_t *loc;
    int64_t fi;
    int err, i;

    if (n <= 0 || !names)
        return -EINVAL;
    if (n > PE_MAX_FRAMES)
        n = PE_MAX_FRAMES; /* the leaf end, as pe_prof_add */
    err = labels_intern(p, labels, nlabels, labs);
    if (err)
        return err;
    for (i = 0; i < n; i++) {
        if (!names[i])
            return -EINVAL;
        iname = pe_prof_intern(p, names[i]);
        if (!iname || (fi = func_get(p, iname)) < 0)
            return -ENOMEM;
        if (!p->funcs[fi].named_loc && pe_prof_func_names(p, &p->funcs[fi], iname, 1))
            return -ENOMEM;
        if (!p->funcs[fi].named_loc) {
            /* Address 0, outside every mapping: pprof shows just the name. */
            loc = loc_new(p, 0);
            if (!loc)
                return -ENOMEM;
            loc->frame.name = iname; /* set again by resolve (names=full) */
            loc->frame.full = iname;
            loc->func = (uint32_t)fi + 1;
            loc->resolved = 1;
            loc->pseudo = 1;
            p->funcs[fi].named_loc = p->nlocs;
        }
        frames[i] = &p->locs[p->funcs[fi].named_loc - 1]->frame;
    }
    return smp_add(p, frames, n, values, labs, nlabels);
}

/* A decoded location's line as a location of its own (no address, no table). */
static pe_prof_loc_t *
place_loc(pe_prof_t *p, const pe_prof_place_t *pl, int inlined)
{
    pe_prof_loc_t *loc = inlined ? pe_prof_arena_alloc(p, sizeof(*loc)) : loc_new(p, 0);
    int64_t fi = pe_prof_native_func(p, pl->name && pl->name[0] ? pl->name : "?", pl->src);

    if (!loc || fi < 0)
        return NULL;
    if (inlined)
        memset(loc, 0, sizeof(*loc));
    loc->frame.src = p->funcs[fi].file;
    loc->frame.line = pl->line;
    loc->frame.inlined = (uint8_t)inlined;
    loc->func = (uint32_t)fi + 1;
    loc->resolved = 1;
    loc->pseudo = 1;
    return loc;
}

int
pe_prof_add_places(pe_prof_t *p, const pe_prof_place_t *pl, const uint8_t *nlines, int n,
                   const int64_t *values, const pe_prof_label_t *labels, int nlabels)
{
    pe_prof_label_t labs[PE_PROF_MAX_LABELS];
    const pe_prof_frame_t *frames[PE_MAX_FRAMES];
    pe_prof_loc_t *loc;
    char key[4096];
    const char *ikey;
    int64_t ki;
    int err, i, k, len;

    if (n <= 0 || !pl || !nlines)
        return -EINVAL;
    if (n > PE_MAX_FRAMES)
        n = PE_MAX_FRAMES; /* the leaf end, as pe_prof_add */
    if ((err = labels_intern(p, labels, nlabels, labs)))
        return err;
    for (i = 0; i < n; pl += nlines[i++]) {
        if (!nlines[i])
            return -EINVAL;
        /* One location per distinct chain: found again through a function
           keyed by the chain ("\x03" keeps it apart from real ones); no
           location refers to it, so pprof never emits it. */
        len = snprintf(key, sizeof(key), "\x03");
        for (k = 0; k < nlines[i] && len < (int)sizeof(key); k++)
            len += snprintf(key + len, sizeof(key) - (size_t)len, "%s\x01%s\x01%u\x02",
                            pl[k].name ? pl[k].name : "", pl[k].src ? pl[k].src : "", pl[k].line);
        if (!(ikey = pe_prof_intern(p, key)) || (ki = func_get(p, ikey)) < 0)
            return -ENOMEM;
        if (!p->funcs[ki].named_loc) {
            if (!(loc = place_loc(p, &pl[nlines[i] - 1], 0)))
                return -ENOMEM;
            if (nlines[i] > 1) {
                loc->inl = pe_prof_arena_alloc(p, (size_t)(nlines[i] - 1) * sizeof(*loc->inl));
                if (!loc->inl)
                    return -ENOMEM;
                for (k = 0; k < nlines[i] - 1; k++)
                    if (!(loc->inl[k] = place_loc(p, &pl[k], 1)))
                        return -ENOMEM;
                for (k = 0; k < nlines[i] - 1; k++)
                    loc->inl[k]->id = loc->id;
                loc->ninl = (uint16_t)(nlines[i] - 1);
            }
            p->funcs[ki].named_loc = p->nlocs;
        }
        frames[i] = &p->locs[p->funcs[ki].named_loc - 1]->frame;
    }
    return smp_add(p, frames, n, values, labs, nlabels);
}

void
pe_prof_set_time(pe_prof_t *p, int64_t time_nanos, int64_t duration_nanos)
{
    p->time_nanos = time_nanos;
    p->duration_nanos = duration_nanos;
}

void
pe_prof_set_by_line(pe_prof_t *p, int by_line)
{
    p->by_line = by_line != 0;
}

int
pe_prof_by_line(const pe_prof_t *p)
{
    return p->by_line;
}

void
pe_prof_set_debug_budget(pe_prof_t *p, int64_t bytes)
{
    p->debug_budget = bytes;
}

void
pe_prof_set_default_type(pe_prof_t *p, const char *type)
{
    /* On ENOMEM the default stays unset, which pprof reads as "the last type". */
    p->default_type = type ? pe_prof_intern(p, type) : NULL;
}

int
pe_prof_retype(pe_prof_t *p, const pe_prof_vt_t *types, int ntypes, const pe_prof_vt_t *period_type)
{
    pe_prof_vt_t t[PE_PROF_MAX_TYPES], pt = p->period_type;
    int i, err = 0;

    if (ntypes != p->ntypes)
        return -EINVAL;
    /* Intern everything first, so that a failure leaves the profile as it was. */
    for (i = 0; i < ntypes; i++) {
        t[i].type = intern_opt(p, types[i].type ? types[i].type : "", &err);
        t[i].unit = intern_opt(p, types[i].unit ? types[i].unit : "", &err);
    }
    if (period_type) {
        pt.type = intern_opt(p, period_type->type ? period_type->type : "", &err);
        pt.unit = intern_opt(p, period_type->unit ? period_type->unit : "", &err);
    }
    if (err)
        return -ENOMEM;
    memcpy(p->types, t, sizeof(t[0]) * (size_t)ntypes);
    p->period_type = pt;
    return 0;
}

int
pe_prof_comment(pe_prof_t *p, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (p->ncomments >= PE_PROF_MAX_COMMENTS)
        return -ENOSPC;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    p->comments[p->ncomments] = pe_prof_intern(p, line);
    if (!p->comments[p->ncomments])
        return -ENOMEM;
    p->ncomments++;
    return 0;
}

int
pe_prof_ntypes(const pe_prof_t *p)
{
    return p->ntypes;
}

const pe_prof_vt_t *
pe_prof_type(const pe_prof_t *p, int i)
{
    return i >= 0 && i < p->ntypes ? &p->types[i] : NULL;
}

int
pe_prof_type_index(const pe_prof_t *p, const char *type)
{
    int i;

    for (i = 0; type && i < p->ntypes; i++)
        if (strcmp(p->types[i].type, type) == 0)
            return i;
    return -1;
}

int
pe_prof_default_index(const pe_prof_t *p)
{
    int i = p->default_type ? pe_prof_type_index(p, p->default_type) : -1;

    return i >= 0 ? i : p->ntypes - 1;
}

int
pe_prof_nsamples(const pe_prof_t *p)
{
    return (int)p->nsamples;
}

void
pe_prof_sample(const pe_prof_t *p, int i, pe_prof_sample_t *out)
{
    const pe_prof_smp_t *s = p->samples[i];

    out->frames = pe_prof_smp_frames(s, &out->nframes);
    out->values = s->values;
    out->nlabels = s->nlabels;
    out->labels = s->labels;
}
