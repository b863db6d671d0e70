/*
 * naming.c: the naming pass over a profile's model (model.c): each location's
 * function from the symbol tables, its source line and inlined frames from
 * the debug info, the readable and short forms of a function's name, the
 * label and kind every view shows, and the samples' frames with the inlined
 * ones.  pe_prof_resolve runs it; the encoders call that before they read.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../preload/config.h"
#include "../preload/log.h"
#include "../symbols/demangle.h"
#include "../symbols/pynames.h" /* PE_PY_IS_TAG: CPython frames, resolved by pyloc.c */
#include "profile_int.h"

/* Inlined frames kept per address: deeper chains keep their innermost end. */
#define PE_PROF_MAX_INLINE 32
/* Time one resolve may spend reading debug info before it goes on with names only. */
#define DEBUG_CPU_NS                                                                               \
    (2 * 1000000000LL) /* of our thread's CPU time: a busy machine does not stretch it */

static int frame_names(pe_prof_t *p, pe_prof_loc_t *loc);

/* ---- function names ------------------------------------------------------------ */

int
pe_prof_func_names(pe_prof_t *p, pe_prof_func_t *f, const char *raw, int readable)
{
    char full[1024], brief[1024];
    const char *d;

    d = readable ? raw : pe_dem_demangle(raw, full, sizeof(full));
    if (d && d != raw) {
        if (!(f->full = pe_prof_intern(p, d)))
            return -ENOMEM;
        f->sysname = f->name; /* pprof: the mangled name is the system name */
    }
    /* Plain C names and pseudo-names ("[truncated]") stay as they are. */
    if (d && (!readable || (strstr(d, "::") && d[0] != '['))) {
        pe_dem_shorten(d, brief, sizeof(brief));
        if (strcmp(brief, d) != 0 && !(f->shown = pe_prof_intern(p, brief)))
            return -ENOMEM;
    }
    return 0;
}

const char *
pe_prof_func_shown(const pe_prof_t *p, const pe_prof_func_t *f)
{
    if (!p->full_names && f->shown)
        return f->shown;
    return f->full ? f->full : f->name;
}

int
pe_prof_set_full_names(pe_prof_t *p, int full)
{
    uint32_t i;

    if (p->full_names == (full != 0))
        return 0;
    p->full_names = full != 0;
    /* Frames resolved already show the other form: name them again. */
    for (i = 0; i < p->nlocs; i++)
        if (p->locs[i]->resolved && frame_names(p, p->locs[i]))
            return -ENOMEM;
    return 0;
}

/* ---- resolving ------------------------------------------------------------------- */

/* An inlined frame at loc's address: a location of its own that is in no table. */
static pe_prof_loc_t *
inline_loc(pe_prof_t *p, const pe_prof_loc_t *loc, const pe_dw_frame_t *l, int64_t fi)
{
    pe_prof_loc_t *il = pe_prof_arena_alloc(p, sizeof(*il));

    if (!il)
        return NULL;
    memset(il, 0, sizeof(*il));
    il->frame.addr = loc->frame.addr;
    il->frame.file = loc->frame.file;
    il->frame.src = p->funcs[fi].file;
    il->frame.line = l->line;
    il->frame.inlined = 1;
    il->id = loc->id;
    il->func = (uint32_t)fi + 1;
    il->map = loc->map;
    il->resolved = 1;
    return il;
}

/*
 * Source lines and inlined frames of loc (its function fi, or -1 when the
 * symbol tables did not name it).  Leaves loc as it was when there is no
 * debug info; 0 or -ENOMEM.
 */
static int
resolve_lines(pe_prof_t *p, pe_sym_batch_t *syms, pe_prof_loc_t *loc, int64_t *fi)
{
    pe_dw_frame_t l[PE_PROF_MAX_INLINE];
    const char *raw;
    int64_t ifi;
    int n, k;

    n = pe_sym_lines(syms, loc->frame.addr, l, PE_PROF_MAX_INLINE);
    if (n == -E2BIG && !p->lines_cut)
        p->lines_cut = "the debug info budget (PROFEP_DEBUG_MEM) was reached";
    else if (n == -ETIMEDOUT && !p->lines_cut)
        p->lines_cut = "reading debug info took more than its bound (2 s of CPU time)";
    if (n <= 0)
        return 0;
    /* The function the code belongs to: the symbol table's name (it keeps
       clone suffixes such as .isra.0) with the debug info's file. */
    raw = *fi >= 0 ? p->funcs[*fi].name : l[n - 1].name;
    if (raw) {
        if ((ifi = pe_prof_native_func(p, raw, l[n - 1].file)) < 0)
            return -ENOMEM;
        *fi = ifi;
    }
    loc->frame.src = *fi >= 0 ? p->funcs[*fi].file : NULL;
    loc->frame.line = l[n - 1].line;
    if (n > 1) {
        loc->inl = pe_prof_arena_alloc(p, (size_t)(n - 1) * sizeof(*loc->inl));
        if (!loc->inl)
            return -ENOMEM;
        for (k = 0; k < n - 1; k++) {
            ifi = pe_prof_native_func(p, l[k].name ? l[k].name : "??", l[k].file);
            if (ifi < 0 || !(loc->inl[k] = inline_loc(p, loc, &l[k], ifi)))
                return -ENOMEM;
        }
        loc->ninl = (uint16_t)(n - 1);
    }
    return 1;
}

static const char *
base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

/* Whose code loc is (enum pe_prof_kind), by its mapping's path. */
static uint8_t
frame_kind(const pe_prof_t *p, const pe_prof_loc_t *loc)
{
    static const char *const libc[] = {"libc.so", "libc-",      "ld-linux", "ld-",    "libm.so",
                                       "libm-",   "libpthread", "libdl.",   "libdl-", "librt."};
    const pe_prof_map_t *m;
    const char *b;
    size_t i;

    if (loc->py)
        return PE_PROF_KIND_PYTHON;
    if (loc->pseudo || !loc->map || !loc->frame.file)
        return PE_PROF_KIND_OTHER;
    m = &p->maps[loc->map - 1];
    if (!strcmp(m->path, "[jit]"))
        return PE_PROF_KIND_JIT;
    if (m->path[0] == '[') /* [vdso], [vsyscall]: the kernel's */
        return PE_PROF_KIND_OTHER;
    if (m->is_main)
        return PE_PROF_KIND_MAIN;
    b = base_name(m->path);
    if (!strncmp(b, "libprofendpoints", 16))
        return PE_PROF_KIND_SELF;
    for (i = 0; i < sizeof(libc) / sizeof(libc[0]); i++)
        if (!strncmp(b, libc[i], strlen(libc[i])))
            return PE_PROF_KIND_LIBC;
    return PE_PROF_KIND_LIB;
}

/* Names shown in every frame, once the functions are known (names=full or
   short), the frame's label, its kind and, without a name, its "[object]".
   0 or -ENOMEM. */
static int
frame_names(pe_prof_t *p, pe_prof_loc_t *loc)
{
    const pe_prof_func_t *f;
    pe_prof_frame_t *fr = &loc->frame;
    char label[1200];
    uint16_t k;

    if (loc->func) {
        f = &p->funcs[loc->func - 1];
        fr->name = pe_prof_func_shown(p, f);
        fr->full = f->full ? f->full : f->name;
    } else if (!fr->full) {
        fr->full = fr->name;
    }
    if (fr->src && fr->line)
        snprintf(label, sizeof(label), "%s:%u; %s", base_name(fr->src), fr->line, fr->name);
    else if (fr->src)
        snprintf(label, sizeof(label), "%s; %s", base_name(fr->src), fr->name);
    else if (fr->file && !loc->pseudo)
        snprintf(label, sizeof(label), "[%s] %s", base_name(fr->file), fr->name);
    else
        snprintf(label, sizeof(label), "%s", fr->name);
    if (!(fr->label = pe_prof_intern(p, label)))
        return -ENOMEM;
    fr->kind = frame_kind(p, loc);
    fr->anon = NULL;
    if (!loc->func && !loc->pseudo && !loc->py) {
        if (!fr->file)
            snprintf(label, sizeof(label), "[unknown]");
        else if (fr->file[0] == '[')
            snprintf(label, sizeof(label), "%s", fr->file);
        else
            snprintf(label, sizeof(label), "[%s]", base_name(fr->file));
        if (!(fr->anon = pe_prof_intern(p, label)))
            return -ENOMEM;
    }
    for (k = 0; k < loc->ninl; k++) {
        if (frame_names(p, loc->inl[k]))
            return -ENOMEM;
        /* inlined code runs in its caller's object (inline_loc ran before loc->map was set) */
        loc->inl[k]->frame.kind = fr->kind;
    }
    return 0;
}

/* Samples' frames with the inlined ones, for the views (pprof keeps locations). */
static int
expand_samples(pe_prof_t *p)
{
    const pe_prof_loc_t *loc;
    pe_prof_smp_t *s;
    uint32_t i, n;
    int j, k;

    for (i = p->nexpanded; i < p->nsamples; i++) {
        s = p->samples[i];
        for (j = 0, n = 0; j < s->nframes; j++)
            n += 1 + pe_prof_loc_of(s->frames[j])->ninl;
        if (n == s->nframes || n > UINT16_MAX) {
            s->xframes = s->frames;
            s->nxframes = s->nframes;
            continue;
        }
        s->xframes = pe_prof_arena_alloc(p, n * sizeof(*s->xframes));
        if (!s->xframes)
            return -ENOMEM;
        for (j = 0, n = 0; j < s->nframes; j++) {
            loc = pe_prof_loc_of(s->frames[j]);
            for (k = 0; k < loc->ninl; k++)
                s->xframes[n++] = &loc->inl[k]->frame;
            s->xframes[n++] = s->frames[j];
        }
        s->nxframes = (uint16_t)n;
    }
    p->nexpanded = p->nsamples;
    return 0;
}

/* A native location: its function, file, lines and names, counted in its mapping
   (only once it is resolved: a retry after -ENOMEM does not count it twice).  0 or
   -errno. */
static int
resolve_native(pe_prof_t *p, pe_sym_batch_t *syms, pe_prof_loc_t *loc)
{
    const char *name, *iname;
    char hex[2 + 2 * sizeof(uintptr_t) + 1];
    uintptr_t start = 0;
    uint32_t m;
    int64_t fi = -1;
    int err, lined;

    m = pe_prof_maps_find(p, loc->frame.addr);
    name = pe_sym_lookup(syms, loc->frame.addr, &start);
    if (name && (fi = pe_prof_native_func(p, name, NULL)) < 0)
        return -ENOMEM;
    iname = NULL;
    if (!name) {
        snprintf(hex, sizeof(hex), "0x%" PRIxPTR, loc->frame.addr);
        if (!(iname = pe_prof_intern(p, hex)))
            return -ENOMEM;
    }
    /* Commit the location only once nothing can fail, so a retry does not count twice. */
    if (m)
        loc->frame.file = p->maps[m - 1].path;
    if ((lined = resolve_lines(p, syms, loc, &fi)) < 0)
        return lined;
    loc->frame.name = iname;
    loc->frame.offset = name ? loc->frame.addr - start : 0;
    loc->func = fi >= 0 ? (uint32_t)fi + 1 : 0;
    loc->map = m;
    if ((err = frame_names(p, loc)) < 0)
        return err;
    if (m) {
        p->maps[m - 1].nlocs++;
        p->maps[m - 1].nnamed += loc->func != 0;
        p->maps[m - 1].nlined += lined;
        p->maps[m - 1].inlines |= lined;
    }
    loc->resolved = 1;
    return 0;
}

/* The bytes of debug info one resolve may read: PROFEP_DEBUG_MEM or the profile's own
   bound, less under an address-space limit. */
static int64_t
debug_budget(const pe_prof_t *p)
{
    int64_t budget = p->debug_budget >= 0 ? p->debug_budget : pe_cfg.debug_mem;
    struct rlimit as;

    /* Under an address-space limit (ulimit -v) the program's memory comes
       first: debug files are mapped whole and libc's decompressed sections
       alone are 20-30 MB, so below 1 GiB profiles have names only, above it
       debug info gets a 64th of the limit at most. */
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
        budget = as.rlim_cur < (1ULL << 30)            ? 0
                 : (uint64_t)budget > as.rlim_cur / 64 ? (int64_t)(as.rlim_cur / 64)
                                                       : budget;
    return budget;
}

int
pe_prof_resolve(pe_prof_t *p, int no_names)
{
    pe_sym_batch_t *syms = NULL;
    pe_prof_loc_t *loc;
    uint32_t i;
    int err = 0;

    /* Sticky, so an encoder's own resolve(p, 0) cannot undo the caller's choice. */
    if (no_names)
        p->no_names = 1;
    if (p->nresolved == p->nlocs)
        return p->nexpanded == p->nsamples ? 0 : expand_samples(p);

    err = pe_prof_maps_load(p);
    if (err) {
        /* Without /proc the profile is still useful: just no mappings. */
        pe_log_debug("profile: cannot read /proc/self/maps (%d)", err);
        err = 0;
    }
    err = pe_sym_begin(&syms);
    if (err)
        return err;
    pe_sym_lines_limits(syms, (size_t)debug_budget(p), DEBUG_CPU_NS);
    for (i = p->nresolved; i < p->nlocs; i++) {
        loc = p->locs[i];
        if (loc->resolved)
            continue;
        if (PE_PY_IS_TAG(loc->frame.addr)) {
            if ((err = pe_prof_py_resolve(p, loc)) < 0)
                break;
            continue;
        }
        if ((err = resolve_native(p, syms, loc)) < 0)
            break;
    }
    pe_sym_end(syms);
    if (err)
        return err;
    p->nresolved = p->nlocs;
    /* Pseudo-frames and CPython frames: names as shown, sources from CPython. */
    for (i = 0; i < p->nlocs; i++) {
        loc = p->locs[i];
        if (loc->py) {
            loc->frame.src = loc->frame.file;
            loc->frame.line = loc->line > 0 ? (uint32_t)loc->line : 0;
        }
        if ((loc->pseudo || loc->py) && frame_names(p, loc))
            return -ENOMEM;
    }
    if (p->lines_cut) {
        char why[160];

        snprintf(why, sizeof(why), "source lines: only some locations have them: %s", p->lines_cut);
        pe_prof_comment(p, "%s", why);
        p->lines_cut = NULL; /* said once */
    }
    return expand_samples(p);
}
