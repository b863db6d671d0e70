/*
 * flame_int.h: what the flame-graph encoders of render/ (folded.c, svg.c) share and
 * nobody else sees: the profile's stacks in flame-graph order.  They write
 * through a pe_bufsink_t (sink.h), so that a line-at-a-time encoder does not
 * send one HTTP chunk per line.
 *
 * Flame-graph order: samples are compared by their function names from the
 * root outwards (strcmp at the first differing frame; a stack that is a prefix
 * of another sorts first).  In that order every frame of the flame graph is one
 * run of consecutive samples sharing a prefix, so a single sweep lays the graph
 * out, and equal stacks (which the model keeps apart when their labels differ)
 * are adjacent and merge.
 *
 * Signal-safe: no.
 */
#ifndef PE_FLAME_INT_H
#define PE_FLAME_INT_H

#include <stdint.h>

#include "../profile/profile.h"

typedef struct pe_flame_s {
    pe_prof_t *p;
    int vi;            /* the sample type (value index) drawn */
    uint32_t *idx;     /* indexes of the samples kept, in flame-graph order */
    uint32_t n;        /* how many */
    int maxdepth;      /* most frames in any kept sample */
    int64_t total;     /* sum of the kept samples' values */
    uint32_t ndropped; /* samples left out because their value was negative (svg only) */
    int by_line;       /* one frame per place ("File:Line; Function"), not per function */
} pe_flame_t;

/*
 * Resolve the profile and sort its samples.  value_index < 0 picks the
 * profile's default type.  Samples whose value is 0 are left out; with
 * positive_only, negative ones too (a width cannot be negative; delta heap
 * profiles have them).  Returns 0, -EINVAL (bad value_index) or -ENOMEM; on
 * success the caller calls pe_flame_free.
 */
int pe_flame_init(pe_flame_t *f, pe_prof_t *p, int value_index, int positive_only);
void pe_flame_free(pe_flame_t *f);

/* Sample i of the order (0 <= i < f->n) as encoders see it. */
void pe_flame_sample(const pe_flame_t *f, uint32_t i, pe_prof_sample_t *s);

/* The frame `depth` steps from the root of s (0 = outermost). */
static inline const pe_prof_frame_t *
pe_flame_frame(const pe_prof_sample_t *s, int depth)
{
    return s->frames[s->nframes - 1 - depth];
}

/* What makes a frame a box of its own: its function name, or its place with
   granularity=lines (pe_prof_set_by_line); an address without a name is its
   object ("[libfoo.so]"), so that one box per parent holds them all. */
static inline const char *
pe_flame_key(const pe_flame_t *f, const pe_prof_frame_t *fr)
{
    return fr->anon ? fr->anon : f->by_line ? fr->label : fr->name;
}

static inline const char *
pe_flame_name(const pe_flame_t *f, const pe_prof_sample_t *s, int depth)
{
    return pe_flame_key(f, pe_flame_frame(s, depth));
}

/* Names are interned by the model, so equal names are usually equal pointers. */
static inline int
pe_flame_same(const char *a, const char *b)
{
    return a == b || __builtin_strcmp(a, b) == 0;
}

/* Bytes gathered before each write to the caller's sink. */
#define PE_FLAME_BUF 16384

#endif /* PE_FLAME_INT_H */
