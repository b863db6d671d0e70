/*
 * decode.c: the pprof decoder (decode.h): just enough of profile.proto to
 * read another process's profile (strings, functions with their files,
 * locations with their lines, sample types, samples with their labels) and
 * to add its samples, by their places, to a profile of ours; and the gunzip
 * in front of it.  Where the
 * bytes come from (http/h_tree_merge.c's fetch) is not its business.
 *
 * Signal-safe: no (malloc, zlib).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../profile/model.h"
#include "decode.h"

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
    uint64_t *fn_sys;  /* system (mangled) name, string index */
    uint64_t *fn_file; /* source file, string index */
    uint64_t nfn;
    ints_t *loc_fns;   /* by location id: function ids, innermost first */
    ints_t *loc_lines; /* and their lines, the same order */
    uint64_t *loc_addr;
    uint64_t *loc_map; /* mapping id */
    uint64_t nloc;
    uint64_t *map_file; /* by mapping id: its file's string index */
    uint64_t nmap;
    ints_t types; /* pairs: type, unit string indices */
    uint64_t period_type[2], period;
    int64_t time_nanos, duration_nanos;
} dec_t;

#define PE_DECODE_MAX_ID (1u << 22) /* a larger id is taken for garbage */

static void
dec_free(dec_t *d)
{
    uint64_t i;

    free(d->strs);
    free(d->fn_name);
    free(d->fn_sys);
    free(d->fn_file);
    for (i = 0; d->loc_fns && i < d->nloc; i++)
        free(d->loc_fns[i].v);
    for (i = 0; d->loc_lines && i < d->nloc; i++)
        free(d->loc_lines[i].v);
    free(d->loc_fns);
    free(d->loc_lines);
    free(d->loc_addr);
    free(d->loc_map);
    free(d->map_file);
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

/* Count the strings and find the largest ids, then allocate d's tables by them. */
static int
dec_size(const uint8_t *buf, size_t len, dec_t *d)
{
    pb_t b = {buf, buf + len}, sub, s2, s3;
    uint64_t v, id, maxfn = 0, maxloc = 0, maxmap = 0, nstrs = 0;
    int num, wt, n2, w2;

    while (b.p < b.end) {
        if (field(&b, &num, &wt, &v, &sub) < 0)
            return -1;
        if (num == 6 && wt == 2)
            nstrs++;
        if ((num == 3 || num == 4 || num == 5) && wt == 2) {
            id = 0;
            s2 = sub;
            while (s2.p < s2.end && field(&s2, &n2, &w2, &v, &s3) == 0)
                if (n2 == 1 && w2 == 0)
                    id = v;
            if (id >= PE_DECODE_MAX_ID)
                return -1;
            if (num == 4 && id > maxloc)
                maxloc = id;
            if (num == 5 && id > maxfn)
                maxfn = id;
            if (num == 3 && id > maxmap)
                maxmap = id;
        }
    }
    d->nstrs = nstrs;
    d->nfn = maxfn + 1;
    d->nloc = maxloc + 1;
    d->strs = calloc(nstrs + 1, sizeof(*d->strs));
    d->fn_name = calloc(d->nfn, sizeof(*d->fn_name));
    d->fn_sys = calloc(d->nfn, sizeof(*d->fn_sys));
    d->fn_file = calloc(d->nfn, sizeof(*d->fn_file));
    d->loc_fns = calloc(d->nloc, sizeof(*d->loc_fns));
    d->loc_lines = calloc(d->nloc, sizeof(*d->loc_lines));
    d->loc_addr = calloc(d->nloc, sizeof(*d->loc_addr));
    d->loc_map = calloc(d->nloc, sizeof(*d->loc_map));
    d->nmap = maxmap + 1;
    d->map_file = calloc(d->nmap, sizeof(*d->map_file));
    if (!d->strs || !d->fn_name || !d->fn_sys || !d->fn_file || !d->loc_fns || !d->loc_lines ||
        !d->loc_addr || !d->loc_map || !d->map_file)
        return -1;
    return 0;
}

/* A ValueType (sample_type): its type and unit string indices, appended to d->types. */
static int
dec_sample_type(dec_t *d, pb_t sub)
{
    uint64_t v, t = 0, u = 0;
    int n2, w2;
    pb_t s3;

    while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s3) == 0) {
        if (n2 == 1 && w2 == 0)
            t = v;
        if (n2 == 2 && w2 == 0)
            u = v;
    }
    return ints_add(&d->types, t) < 0 || ints_add(&d->types, u) < 0 ? -1 : 0;
}

/* A Mapping: its file names unsymbolized code ("[postgres]"). */
static void
dec_mapping(dec_t *d, pb_t sub)
{
    uint64_t v, mid = 0, file = 0;
    int n2, w2;
    pb_t s2;

    while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0) {
        if (n2 == 1 && w2 == 0)
            mid = v;
        if (n2 == 5 && w2 == 0)
            file = v;
    }
    if (mid < d->nmap)
        d->map_file[mid] = file;
}

/* A Location: its address, mapping and lines (function id, line), innermost first. */
static int
dec_location(dec_t *d, pb_t sub)
{
    uint64_t v, lid = 0, addr = 0, mid = 0;
    ints_t fns = {0}, lines = {0};
    int n2, w2;
    pb_t s2;

    while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0) {
        if (n2 == 1 && w2 == 0)
            lid = v;
        if (n2 == 2 && w2 == 0)
            mid = v;
        if (n2 == 3 && w2 == 0)
            addr = v;
        if (n2 == 4 && w2 == 2) { /* line: function_id, line */
            uint64_t fid = 0, ln = 0;
            int n3, w3;
            pb_t s4;
            while (s2.p < s2.end && field(&s2, &n3, &w3, &v, &s4) == 0) {
                if (n3 == 1 && w3 == 0)
                    fid = v;
                if (n3 == 2 && w3 == 0)
                    ln = v;
            }
            if (ints_add(&fns, fid) < 0 || ints_add(&lines, ln) < 0) {
                free(fns.v);
                free(lines.v);
                return -1;
            }
        }
    }
    if (lid < d->nloc) {
        free(d->loc_fns[lid].v);
        free(d->loc_lines[lid].v);
        d->loc_fns[lid] = fns;
        d->loc_lines[lid] = lines;
        d->loc_addr[lid] = addr;
        d->loc_map[lid] = mid;
    } else {
        free(fns.v);
        free(lines.v);
    }
    return 0;
}

/* A Function: its name, system name and file, string indices. */
static void
dec_function(dec_t *d, pb_t sub)
{
    uint64_t v, fid = 0, name = 0, sys = 0, file = 0;
    int n2, w2;
    pb_t s2;

    while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0) {
        if (n2 == 1 && w2 == 0)
            fid = v;
        if (n2 == 2 && w2 == 0)
            name = v;
        if (n2 == 3 && w2 == 0)
            sys = v;
        if (n2 == 4 && w2 == 0)
            file = v;
    }
    if (fid < d->nfn) {
        d->fn_name[fid] = name;
        d->fn_sys[fid] = sys;
        d->fn_file[fid] = file;
    }
}

/* First pass: strings, functions, locations and the header fields. */
static int
dec_tables(const uint8_t *buf, size_t len, dec_t *d)
{
    pb_t b = {buf, buf + len}, sub, s2;
    uint64_t v, nstrs = 0;
    int num, wt, n2, w2;

    if (dec_size(buf, len, d) < 0)
        return -1;
    while (b.p < b.end) {
        if (field(&b, &num, &wt, &v, &sub) < 0)
            return -1;
        switch (num) { /* each table's entry is a message (wt 2) */
        case 1:
            if (wt == 2 && dec_sample_type(d, sub) < 0)
                return -1;
            break;
        case 3:
            if (wt == 2)
                dec_mapping(d, sub);
            break;
        case 4:
            if (wt == 2 && dec_location(d, sub) < 0)
                return -1;
            break;
        case 5:
            if (wt == 2)
                dec_function(d, sub);
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

/* ---- comments ------------------------------------------------------------------------ */

/*
 * A member's own comments (which engine sampled it, the threads it could not
 * sample, what was cut) are kept, each after the caller's labels that say
 * whose it is ("pid 4242, program x: unsampled: ...").  Its sample count
 * ("cpu: 60 samples, ...") is left out: the merge's samples say it.  Bounded:
 * DECODE_MEMBER_COMMENTS of one profile, and DECODE_ROOM_LEFT of the model's
 * comments stay for the caller's own (what was merged, what was not).
 */
#define DECODE_MEMBER_COMMENTS 4
#define DECODE_ROOM_LEFT 4

/* "cpu: 60 samples, weight 60 ..." */
static int
is_count(const char *text)
{
    const char *colon = strchr(text, ':');

    return colon && colon - text < 16 && colon[1] == ' ' && colon[2] >= '0' && colon[2] <= '9' &&
           strstr(colon, " samples");
}

static void
keep_comment(pe_prof_merge_t *m, const dec_t *d, uint64_t idx, const char *who, int *kept)
{
    char text[512];

    str_dup(d, idx, text, sizeof(text));
    if (!text[0] || is_count(text) || *kept >= DECODE_MEMBER_COMMENTS ||
        m->prof->ncomments >= PE_PROF_MAX_COMMENTS - DECODE_ROOM_LEFT)
        return;
    if (pe_prof_comment(m->prof, "%s%s%s", who, who[0] ? ": " : "", text) == 0)
        (*kept)++;
}

static void
merge_comments(pe_prof_merge_t *m, const dec_t *d, const uint8_t *buf, size_t len,
               const pe_prof_label_t *extra, int nextra)
{
    pb_t b = {buf, buf + len}, sub;
    char who[96] = "";
    uint64_t v;
    int num, wt, kept = 0;
    size_t at = 0;

    for (int i = 0; i < nextra && at < sizeof(who); i++) {
        int n = extra[i].str ? snprintf(who + at, sizeof(who) - at, "%s%s %s", at ? ", " : "",
                                        extra[i].key, extra[i].str)
                             : snprintf(who + at, sizeof(who) - at, "%s%s %lld", at ? ", " : "",
                                        extra[i].key, (long long)extra[i].num);
        if (n < 0)
            break;
        at += (size_t)n;
    }
    while (b.p < b.end) {
        if (field(&b, &num, &wt, &v, &sub) < 0)
            break;
        if (num != 13)
            continue;
        if (wt == 0) /* one index */
            keep_comment(m, d, v, who, &kept);
        else if (wt == 2) /* packed indices */
            while (sub.p < sub.end && varint(&sub, &v) == 0)
                keep_comment(m, d, v, who, &kept);
    }
}

/* ---- one profile into the merge ------------------------------------------------------ */

/* A label key the caller adds itself: the profile's own label of that key is dropped. */
static int
is_extra(const char *key, const pe_prof_label_t *extra, int nextra)
{
    for (int i = 0; i < nextra; i++)
        if (!strcmp(key, extra[i].key))
            return 1;
    return 0;
}

/* Lines kept per sample (locations times their inline chains). */
#define DECODE_MAX_PLACES (4 * PE_MAX_FRAMES)

/* Names and files of a sample's places (each DECODE_STR bytes). */
#define DECODE_STR 256
typedef struct places_s {
    pe_prof_place_t pl[DECODE_MAX_PLACES];
    uint8_t nlines[PE_MAX_FRAMES];
    char name[DECODE_MAX_PLACES][DECODE_STR];
    char src[DECODE_MAX_PLACES][DECODE_STR];
} places_t;

/* Function f's name to give the model: the mangled system name when there is
   one (the model demangles it, and names=full works), else the name. */
static const char *
fn_raw(const dec_t *d, uint64_t f, char *buf)
{
    if (f >= d->nfn)
        return "?";
    str_dup(d, d->fn_sys[f], buf, DECODE_STR);
    if (strncmp(buf, "_Z", 2) && strncmp(buf, "_R", 2))
        str_dup(d, d->fn_name[f], buf, DECODE_STR);
    return buf[0] ? buf : "?";
}

/* An unsymbolized location by its mapping's file, as the model's views name
   it (profile/model.c): "[postgres]", "[vdso]"; its address when there is none. */
static void
anon_name(const dec_t *d, uint64_t loc, char *buf)
{
    char file[DECODE_STR];
    const char *base;
    uint64_t mid = d->loc_map[loc];

    if (mid && mid < d->nmap && d->map_file[mid] &&
        str_dup(d, d->map_file[mid], file, DECODE_STR)[0]) {
        if (file[0] == '[') {
            snprintf(buf, DECODE_STR, "%.250s", file);
            return;
        }
        base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        snprintf(buf, DECODE_STR, "[%.250s]", base);
        return;
    }
    snprintf(buf, DECODE_STR, "0x%llx", (unsigned long long)d->loc_addr[loc]);
}

/*
 * The first member's sample types and period make m's profile; a later member's
 * types must be the same.  NULL, or why the member is left out.
 */
static const char *
merge_types(pe_prof_merge_t *m, const dec_t *d)
{
    int i;

    if (!m->prof) {
        pe_prof_vt_t vt[4], pt;
        char ptb[2][64];

        m->ntypes = d->types.n / 2 > 4 ? 4 : d->types.n / 2;
        for (i = 0; i < m->ntypes; i++) {
            vt[i].type = str_dup(d, d->types.v[2 * i], m->types[i][0], 64);
            vt[i].unit = str_dup(d, d->types.v[2 * i + 1], m->types[i][1], 64);
        }
        pt.type = str_dup(d, d->period_type[0], ptb[0], 64);
        pt.unit = str_dup(d, d->period_type[1], ptb[1], 64);
        if (!(m->prof = pe_prof_new(vt, m->ntypes, &pt, (int64_t)d->period)))
            return "out of memory";
        pe_prof_set_time(m->prof, d->time_nanos, d->duration_nanos);
    } else {
        char t[64], u[64];
        int same = d->types.n / 2 == m->ntypes;
        for (i = 0; same && i < m->ntypes; i++)
            same = !strcmp(str_dup(d, d->types.v[2 * i], t, 64), m->types[i][0]) &&
                   !strcmp(str_dup(d, d->types.v[2 * i + 1], u, 64), m->types[i][1]);
        if (!same)
            return "other sample types";
    }
    return NULL;
}

/* A sample's labels: two of its own at most, then the caller's; their strings. */
typedef struct {
    pe_prof_label_t v[PE_PROF_MAX_LABELS];
    int n;
    char key[2][64], str[2][128], unit[2][32];
} labels_t;

/* One of a sample's own labels (a Label message) into lb, unless it has no key or
   the caller adds that key itself. */
static void
label_add(const dec_t *d, pb_t s2, labels_t *lb, const pe_prof_label_t *extra, int nextra)
{
    uint64_t v, k = 0, s = 0, nu = 0, un = 0;
    int n3, w3, nl = lb->n;
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
    str_dup(d, k, lb->key[nl], sizeof(lb->key[nl]));
    if (!lb->key[nl][0] || is_extra(lb->key[nl], extra, nextra))
        return;
    lb->v[nl].key = lb->key[nl];
    lb->v[nl].str = s ? str_dup(d, s, lb->str[nl], sizeof(lb->str[nl])) : NULL;
    lb->v[nl].num = (int64_t)nu;
    lb->v[nl].unit = un ? str_dup(d, un, lb->unit[nl], sizeof(lb->unit[nl])) : NULL;
    lb->n++;
}

/*
 * A sample's places into pp: each location with its lines, innermost first, as
 * the member wrote them.  Returns the frames (pp->nlines[] of them).
 */
static int
sample_places(const dec_t *d, const ints_t *locs, places_t *pp)
{
    int nf = 0, np = 0;

    for (int i = 0; i < locs->n && nf < PE_MAX_FRAMES && np < DECODE_MAX_PLACES; i++) {
        uint64_t id = locs->v[i];
        int k = 0;

        if (id >= d->nloc)
            continue;
        if (!d->loc_fns[id].n) { /* not symbolized there: its object, as its views name it */
            anon_name(d, id, pp->name[np]);
            pp->pl[np] = (pe_prof_place_t){pp->name[np], NULL, 0};
            np++;
            k = 1;
        }
        for (int j = 0; j < d->loc_fns[id].n && np < DECODE_MAX_PLACES && k < 255; j++, k++) {
            uint64_t f = d->loc_fns[id].v[j];
            pp->pl[np].name = fn_raw(d, f, pp->name[np]);
            pp->pl[np].src = f < d->nfn && d->fn_file[f]
                                 ? str_dup(d, d->fn_file[f], pp->src[np], DECODE_STR)
                                 : NULL;
            if (pp->pl[np].src && !pp->pl[np].src[0])
                pp->pl[np].src = NULL;
            pp->pl[np].line = (uint32_t)d->loc_lines[id].v[j];
            np++;
        }
        if (k)
            pp->nlines[nf++] = (uint8_t)k;
    }
    return nf;
}

/* One Sample message of the member into m, with the caller's labels (pp: room). */
static void
merge_sample(pe_prof_merge_t *m, const dec_t *d, pb_t sub, places_t *pp,
             const pe_prof_label_t *extra, int nextra)
{
    ints_t locs = {0}, vals = {0};
    labels_t lb;
    int64_t values[4] = {0};
    uint64_t v;
    int n2, w2, nf, i;
    pb_t s2;

    lb.n = 0;
    while (sub.p < sub.end && field(&sub, &n2, &w2, &v, &s2) == 0) {
        if (n2 == 1)
            each_int(w2, v, &s2, ints_add, &locs);
        else if (n2 == 2)
            each_int(w2, v, &s2, ints_add, &vals);
        else if (n2 == 3 && w2 == 2 && lb.n < 2) /* keep two of its own labels */
            label_add(d, s2, &lb, extra, nextra);
    }
    nf = sample_places(d, &locs, pp);
    for (i = 0; i < vals.n && i < m->ntypes; i++)
        values[i] = (int64_t)vals.v[i];
    for (i = 0; i < nextra; i++)
        lb.v[lb.n++] = extra[i];
    if (nf == 0) {
        const char *none = "[no stack]";
        pe_prof_add_names(m->prof, &none, 1, values, lb.v, lb.n);
    } else {
        pe_prof_add_places(m->prof, pp->pl, pp->nlines, nf, values, lb.v, lb.n);
    }
    free(locs.v);
    free(vals.v);
}

/* One serialized (uncompressed) profile into m (decode.h's pe_prof_merge_add_gz). */
static const char *
merge_add(pe_prof_merge_t *m, const void *data, size_t len, const pe_prof_label_t *extra,
          int nextra)
{
    const uint8_t *buf = data;
    pb_t b = {buf, buf + len}, sub;
    places_t *pp = NULL;
    const char *why = NULL;
    dec_t d;
    uint64_t v;
    int num, wt;

    memset(&d, 0, sizeof(d));
    if (dec_tables(buf, len, &d) < 0) {
        why = "its profile does not decode";
        goto out;
    }
    if ((why = merge_types(m, &d)))
        goto out;
    if (!(pp = malloc(sizeof(*pp)))) {
        why = "out of memory";
        goto out;
    }
    while (b.p < b.end) {
        if (field(&b, &num, &wt, &v, &sub) < 0)
            break;
        if (num == 2 && wt == 2)
            merge_sample(m, &d, sub, pp, extra, nextra);
    }
    merge_comments(m, &d, buf, len, extra, nextra);
    m->merged++;
out:
    free(pp);
    dec_free(&d);
    return why;
}

/* ---- gzip ------------------------------------------------------------------------------ */

const char *
pe_prof_merge_add_gz(pe_prof_merge_t *m, const void *gz, size_t len, size_t max,
                     const pe_prof_label_t *extra, int nextra)
{
    size_t cap = 1 << 20;
    unsigned char *out = NULL;
    z_stream z;
    const char *res;

    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return "out of memory";
    z.next_in = (unsigned char *)gz;
    z.avail_in = (unsigned)len;
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
        if (cap >= max) {
            res = "its profile is too large";
            goto out;
        }
        cap *= 2;
    }
    res = merge_add(m, out, z.total_out, extra, nextra);
out:
    inflateEnd(&z);
    free(out);
    return res;
}
