/*
 * stacktab.h: interning call stacks.  A stack table hands each distinct
 * (tag, stack) a small id, the same id to every thread that brings the same
 * stack, valid for the life of the process; its users keep their own totals
 * in arrays indexed by that id (heap/sitetab.c, contention/mutex.c).
 *
 *   buckets[]  uint32 id + 1 per slot (0 empty), open addressing on the
 *              stack's hash; 2 * cap slots, so at most half full
 *   ents[]     cap fixed records: hash, tag, frame count, where the frames
 *              are; claimed by fetch-add, published by the CAS that puts
 *              their id in a bucket
 *   frames[]   one arena of pcs, claimed by fetch-add
 *
 * Inserting is lock-free and never allocates: two threads adding the same
 * new stack both fill a record, one CAS wins and the loser's record stays
 * unpublished (a wasted id, counted against the bound).  Nothing is removed.
 * When the records or the arena run out, intern answers PE_STACKTAB_FULL and
 * the caller counts the event elsewhere.  The caller provides the arrays
 * (mapped MAP_NORESERVE: untouched pages cost nothing) and the storage of
 * the table itself, so one table can live inside a larger mapping.
 *
 * Signal-safe: pe_stacktab_intern and the readers are (no locks, no
 * allocation); pe_stacktab_setup runs before the table is shared.
 */
#ifndef PE_STACKTAB_H
#define PE_STACKTAB_H

#include <stdint.h>

#include "pe.h"

#define PE_STACKTAB_FULL UINT32_MAX

typedef struct pe_stacktab_ent_s {
    uint64_t hash;
    uint32_t off;      /* first frame in frames[] */
    uint16_t n;        /* frames */
    uint8_t tag;       /* the user's key beside the stack (contention/mutex.c: the kind) */
    uint8_t published; /* 1 once its id is in a bucket (readers skip the others) */
} pe_stacktab_ent_t;

typedef struct pe_stacktab_s {
    uint32_t *buckets;       /* 2 * cap */
    pe_stacktab_ent_t *ents; /* cap */
    uintptr_t *frames;       /* frames_cap */
    uint32_t cap, frames_cap;
    uint32_t next_ent, next_frame; /* atomics: next id, next free frame */
} pe_stacktab_t;

/*
 * Set t up over zero-filled arrays of 2 * cap buckets (cap a power of two),
 * cap records and frames_cap frames.  Ids [0, reserved) are handed out at
 * once, published with no frames (pseudo-stacks such as "[unknown]"; the
 * caller may set their tag).  Before t is shared; not signal-safe.
 */
PE_SIGSAFE void pe_stacktab_setup(pe_stacktab_t *t, uint32_t *buckets, pe_stacktab_ent_t *ents,
                                  uintptr_t *frames, uint32_t cap, uint32_t frames_cap,
                                  uint32_t reserved);

/*
 * The id of (tag, pcs[0..n)), adding it if new; PE_STACKTAB_FULL when it is
 * new and the table is full.  1 <= n <= 65535.  Any thread, any context.
 */
PE_SIGSAFE uint32_t pe_stacktab_intern(pe_stacktab_t *t, unsigned tag, const uintptr_t *pcs, int n);

/* Ids handed out so far (some perhaps unpublished), at most cap. */
PE_SIGSAFE uint32_t pe_stacktab_count(const pe_stacktab_t *t);

/* The published record of `id`, or NULL (out of range, or a race's loser). */
PE_SIGSAFE const pe_stacktab_ent_t *pe_stacktab_ent(const pe_stacktab_t *t, uint32_t id);

/* Copy at most max frames of `id` (leaf first) into pcs; the count, 0 if none. */
PE_SIGSAFE int pe_stacktab_frames(const pe_stacktab_t *t, uint32_t id, uintptr_t *pcs, int max);

#endif /* PE_STACKTAB_H */
