/*
 * model.h: the model's insides as model.c lays them out, for the files that
 * read them directly: the model and its naming pass (profile/), and the
 * encoders of proto/ (pprof.c, decode.c) and render/ (text.c, svg.c,
 * heapsnapshot.c).  Everyone else (samplers, handlers) goes through
 * profile.h's functions; check_layers.sh holds the list of who may include it.
 *
 * The model (model.c) owns one bump arena per profile; every string, location,
 * sample stack and label array lives in it, so pointers handed to encoders
 * stay put until pe_prof_free.  Interned strings carry their string-table
 * index in the 4 bytes before the text, so any interned `const char *` can be
 * turned back into its index without a lookup (pe_prof_stridx).
 *
 * Signal-safe: no.
 */
#ifndef PE_PROFILE_MODEL_H
#define PE_PROFILE_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile.h"

#define PE_PROF_MAX_TYPES 4
#define PE_PROF_MAX_COMMENTS 24

/* ---- model data (model.c) ----------------------------------------------- */

typedef struct pe_prof_loc_s {
    pe_prof_frame_t frame; /* first member: a frame pointer is a location pointer */
    uint32_t id;           /* pprof id: creation order, 1..n */
    uint32_t func;         /* function index + 1; 0 = no name (pprof gets no Line) */
    uint32_t map;          /* mapping index + 1; 0 = outside every mapping */
    uint8_t resolved;
    uint8_t pseudo;             /* pe_prof_add_named's: address 0, never looked up by address */
    uint8_t py;                 /* a CPython frame (pynames.h): its names come with it */
    int32_t line;               /* py: the frame's current line */
    uint16_t ninl;              /* inlined frames at this address (frame.inlined set in each) */
    struct pe_prof_loc_s **inl; /* arena; innermost first, each with its own func */
} pe_prof_loc_t;

/* A function.  Native ones are keyed by the raw (mangled) name and source file. */
typedef struct pe_prof_func_s {
    const char *name;    /* interned: native: the raw symbol; CPython: the qualname */
    const char *full;    /* the readable name (demangled), or NULL: name is */
    const char *shown;   /* what views show: the short form, or NULL: full or name */
    uint32_t named_loc;  /* location index + 1 of its pseudo-location, 0 if none */
    uint32_t id;         /* pprof id, assigned by pprof.c; 0 = not emitted */
    const char *file;    /* source file (CPython: co_filename), interned, or NULL */
    int64_t start_line;  /* CPython functions: co_firstlineno */
    const char *sysname; /* pprof's system_name: the mangled name, CPython "python:" + name
                            (pprof.c says why), or NULL */
} pe_prof_func_t;

typedef struct pe_prof_map_s {
    uintptr_t start, limit;
    uint64_t offset;
    const char *path;     /* interned */
    const char *build_id; /* interned, "" when unknown */
    int is_main;          /* the main executable's text */
    int current;          /* present in the latest /proc/self/maps read */
    uint32_t nlocs, nnamed;
    uint32_t nlined; /* locations with a source line */
    uint8_t inlines; /* its debug info was read for inlined calls */
    uint32_t id;     /* pprof id, assigned by pprof.c; 0 = not emitted */
} pe_prof_map_t;

typedef struct pe_prof_smp_s {
    uint32_t hash;
    uint16_t nframes, nlabels;
    const pe_prof_frame_t **frames;  /* arena; one per location (pprof's) */
    const pe_prof_frame_t **xframes; /* arena: frames with inlined ones, after resolve */
    uint16_t nxframes;
    pe_prof_label_t *labels; /* arena; strings interned */
    int64_t values[PE_PROF_MAX_TYPES];
} pe_prof_smp_t;

typedef struct pe_prof_arena_s pe_prof_arena_t;

struct pe_prof_s {
    pe_prof_arena_t *arena;
    char *arena_cur;
    size_t arena_left;

    /* string table: strs[0] is "" */
    const char **strs;
    uint32_t nstrs, capstrs;
    uint32_t *str_hash; /* open addressing, index + 1 */
    uint32_t str_hcap;

    int ntypes;
    pe_prof_vt_t types[PE_PROF_MAX_TYPES]; /* interned */
    pe_prof_vt_t period_type;              /* interned; type NULL when absent */
    int64_t period, time_nanos, duration_nanos;
    const char *default_type; /* interned or NULL */
    const char *comments[PE_PROF_MAX_COMMENTS];
    int ncomments;

    pe_prof_func_t *funcs;
    uint32_t nfuncs, capfuncs;
    uint32_t *func_of_str; /* string index -> function index + 1 */
    uint32_t cap_func_of_str;

    pe_prof_loc_t **locs;
    uint32_t nlocs, caplocs, nresolved;
    uint32_t *loc_hash; /* by address; location index + 1 */
    uint32_t loc_hcap;

    pe_prof_smp_t **samples;
    uint32_t nsamples, capsamples;
    uint32_t *smp_hash; /* sample index + 1 */
    uint32_t smp_hcap;

    pe_prof_map_t *maps;
    uint32_t nmaps, capmaps;
    uint32_t *cur_maps; /* indexes of current maps, sorted by start */
    uint32_t ncur_maps;

    int no_names;
    int full_names;        /* pe_prof_set_full_names */
    int by_line;           /* pe_prof_set_by_line */
    int64_t debug_budget;  /* bytes; -1: pe_cfg's */
    uint32_t nexpanded;    /* samples whose xframes are set */
    const char *lines_cut; /* why some locations got no lines, once (a comment) */
};

/* A sample's frames as views see them: with inlined frames once resolved. */
static inline const pe_prof_frame_t *const *
pe_prof_smp_frames(const pe_prof_smp_t *s, int *n)
{
    *n = s->xframes ? s->nxframes : s->nframes;
    return s->xframes ? s->xframes : s->frames;
}

/* String-table index of an interned string. */
static inline uint32_t
pe_prof_stridx(const char *interned)
{
    uint32_t idx;

    __builtin_memcpy(&idx, interned - sizeof(idx), sizeof(idx));
    return idx;
}

/* The name function f shows: the short form (pprof's: no parameters, no
   template arguments) unless names=full (pe_prof_set_full_names) (naming.c). */
const char *pe_prof_func_shown(const pe_prof_t *p, const pe_prof_func_t *f);

/* Intern s (copied once); returns the stable copy, or NULL on ENOMEM. */
const char *pe_prof_intern(pe_prof_t *p, const char *s);

static inline pe_prof_loc_t *
pe_prof_loc_of(const pe_prof_frame_t *f)
{
    return (pe_prof_loc_t *)f;
}

#endif /* PE_PROFILE_MODEL_H */
