/*
 * profile.h: the one in-memory profile model (pe_prof_*).
 *
 * Samplers (CPU, wall, heap, allocs, threads, mutex) add raw samples: program
 * counters plus values plus labels.  The model deduplicates samples, locations,
 * functions, mappings and strings, resolves mappings from /proc/self/maps (with
 * GNU build ids) and function names from ELF symbol tables, and every encoder
 * reads the same resolved model through the accessors below.  The encoders
 * are declared where they are defined: pprof in proto/pprof.h; text, folded
 * and svg in render/render.h, the heap snapshot in render/heapsnapshot.h,
 * Go's legacy text in render/gotext.h.
 *
 * Threads: a profile belongs to one thread at a time (the HTTP worker that
 * builds it).  It allocates with malloc, so it is only used on the library's
 * own threads or under the re-entrancy guard.
 *
 * Signal-safe: no.
 */
#ifndef PE_PROFILE_H
#define PE_PROFILE_H

#include <stdint.h>

#include "../preload/pe.h"

typedef struct pe_prof_s pe_prof_t;

/* A sample type or the period type, e.g. {"cpu", "nanoseconds"}. */
typedef struct pe_prof_vt_s {
    const char *type;
    const char *unit;
} pe_prof_vt_t;

/* At most this many labels per sample (pprof's Sample.label is a fixed array here). */
#define PE_PROF_MAX_LABELS 5

/* A label: string when str != NULL, else numeric `num` with optional `unit`. */
typedef struct pe_prof_label_s {
    const char *key;
    const char *str;
    int64_t num;
    const char *unit;
} pe_prof_label_t;

/* Whose code a frame runs, computed once per location at resolve (model.c);
   the flame graph colours by it. */
enum pe_prof_kind {
    PE_PROF_KIND_OTHER = 0, /* kernel ([vdso]), no mapping, or a pseudo-frame */
    PE_PROF_KIND_MAIN,      /* the main executable */
    PE_PROF_KIND_LIB,       /* another shared object */
    PE_PROF_KIND_LIBC,      /* libc.so, ld-linux, libm, libpthread, libdl, librt */
    PE_PROF_KIND_PYTHON,    /* a CPython frame */
    PE_PROF_KIND_JIT,       /* anonymous executable memory ("[jit]") */
    PE_PROF_KIND_SELF,      /* libprofendpoints itself */
    PE_PROF_NKINDS
};

/*
 * A resolved frame, as encoders see it.  An address whose debug info has
 * inlined calls is several frames: the inlined functions first (innermost
 * first, `inlined` set), then the function the code belongs to.
 */
typedef struct pe_prof_frame_s {
    uintptr_t addr;    /* location address (call site for callers) */
    const char *name;  /* function name as shown, never NULL ("0x7f..." when unknown): without
                          parameters and template arguments unless pe_prof_set_full_names */
    const char *file;  /* mapping path (CPython frames: the source file), or NULL */
    uint64_t offset;   /* addr - function start, 0 when unknown */
    const char *full;  /* the whole readable (demangled) name, never NULL once resolved */
    const char *src;   /* source file from the debug info, NULL when unknown */
    uint32_t line;     /* source line, 0 when unknown */
    uint8_t inlined;   /* inlined into the frame after it */
    uint8_t kind;      /* enum pe_prof_kind */
    const char *anon;  /* no name known: "[object]" (its mapping's base name, "[unknown]"
                          without one), so views can merge such frames; else NULL */
    const char *label; /* as Julia prints a frame: "File:Line; Function" (the source file's
                          base name), or "[object] Function" without a line; never NULL */
} pe_prof_frame_t;

/* A sample, as encoders see it; pointers stay valid until pe_prof_free. */
typedef struct pe_prof_sample_s {
    int nframes; /* frames[0] is the leaf */
    const pe_prof_frame_t *const *frames;
    const int64_t *values; /* ntypes of them */
    int nlabels;
    const pe_prof_label_t *labels;
} pe_prof_sample_t;

/*
 * New empty profile with `ntypes` (1..4) sample types.  The strings passed here
 * and to every other call are copied.  Returns NULL on ENOMEM.
 */
pe_prof_t *pe_prof_new(const pe_prof_vt_t *types, int ntypes, const pe_prof_vt_t *period_type,
                       int64_t period);
void pe_prof_free(pe_prof_t *p);

/*
 * Add one sample: pcs[0] is the leaf, pcs[npcs-1] the outermost frame.  When
 * leaf_exact, pcs[0] is an interrupted PC and is stored as is; every other pc is
 * a return address and is stored minus one (pprof's call-site convention).
 * Stacks deeper than PE_MAX_FRAMES keep their leaf end.  `values` holds ntypes
 * values (NULL: zeros); at most PE_PROF_MAX_LABELS labels, each with a key.
 * A sample with the same stack and labels as an earlier one is merged into it
 * (values summed).  Returns 0, -EINVAL or -ENOMEM.
 */
int pe_prof_add(pe_prof_t *p, const uintptr_t *pcs, int npcs, int leaf_exact, const int64_t *values,
                const pe_prof_label_t *labels, int nlabels);

/* Add a sample whose only frame is a named pseudo-function (e.g. "[truncated]"). */
int pe_prof_add_named(pe_prof_t *p, const char *name, const int64_t *values,
                      const pe_prof_label_t *labels, int nlabels);

/* A sample whose frames are all named pseudo-functions, names[0] the leaf
   (a profile decoded from another process: pid=all).  As pe_prof_add. */
int pe_prof_add_names(pe_prof_t *p, const char *const *names, int n, const int64_t *values,
                      const pe_prof_label_t *labels, int nlabels);
/* One line of a decoded location (pprof's Location.line). */
typedef struct pe_prof_place_s {
    const char *name; /* the function's raw (system) name: demangled here as ours are */
    const char *src;  /* its source file, or NULL */
    uint32_t line;    /* 0 when unknown */
} pe_prof_place_t;
/*
 * A sample of decoded locations (pid=all), leaf first: location i is
 * nlines[i] (>= 1) entries of pl, innermost first as pprof has them, so the
 * last is the function the code belongs to and the others are inlined into
 * it.  Views show them with their File:Line, pprof keeps the lines.  As
 * pe_prof_add (at most PE_MAX_FRAMES locations).
 */
int pe_prof_add_places(pe_prof_t *p, const pe_prof_place_t *pl, const uint8_t *nlines, int n,
                       const int64_t *values, const pe_prof_label_t *labels, int nlabels);

void pe_prof_set_time(pe_prof_t *p, int64_t time_nanos, int64_t duration_nanos);
/* Frames show whole names (parameters, template arguments: names=full) instead
   of pprof's short ones.  At any time; 0 or -ENOMEM. */
int pe_prof_set_full_names(pe_prof_t *p, int full);
/* Flame graphs and folded stacks get one frame per place ("File:Line;
   Function") instead of one per function (granularity=lines). */
void pe_prof_set_by_line(pe_prof_t *p, int by_line);
int pe_prof_by_line(const pe_prof_t *p);
/* Bytes of debug info the next resolve may keep (PROFEP_DEBUG_MEM; 0: names
   only); the default is pe_cfg's.  For tests and the tree merge. */
void pe_prof_set_debug_budget(pe_prof_t *p, int64_t bytes);
void pe_prof_set_default_type(pe_prof_t *p, const char *type);
/*
 * Rename the sample types (same count, same order) and the period type, e.g.
 * a wall-clock profile served under fgprof's names.  Values are untouched.
 * 0, -EINVAL (another count) or -ENOMEM (the profile is unchanged).
 */
int pe_prof_retype(pe_prof_t *p, const pe_prof_vt_t *types, int ntypes,
                   const pe_prof_vt_t *period_type);
/* Add a comment line (at most 8, each cut at 1023 bytes); 0, -ENOSPC or -ENOMEM. */
int pe_prof_comment(pe_prof_t *p, const char *fmt, ...) PE_PRINTF(2, 3);

/*
 * Resolve mappings and names.  Idempotent, and incremental: samples added
 * later get resolved by the next call; encoders call it themselves.
 * With no_names, the pprof encoder leaves address frames without functions
 * (mappings without has_functions) so `go tool pprof` symbolizes from local
 * binaries; pseudo-frames keep their names.  no_names is sticky: a later
 * pe_prof_resolve(p, 0) does not undo it.  Text encoders always show names.
 * Takes the process-wide symbol cache lock.  Returns 0 or a negative errno.
 */
int pe_prof_resolve(pe_prof_t *p, int no_names);

/* Read access for encoders (after pe_prof_resolve). */
int pe_prof_ntypes(const pe_prof_t *p);
const pe_prof_vt_t *pe_prof_type(const pe_prof_t *p, int i);
int pe_prof_type_index(const pe_prof_t *p, const char *type); /* -1 if absent */
int pe_prof_default_index(const pe_prof_t *p); /* default type's index, else ntypes-1 */
int pe_prof_nsamples(const pe_prof_t *p);
void pe_prof_sample(const pe_prof_t *p, int i, pe_prof_sample_t *out);

#endif /* PE_PROFILE_H */
