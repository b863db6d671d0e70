/*
 * interpose_int.h: what the files of interpose/ share (and the unit test,
 * which drives got.c on a library of its own).  Not for other modules.
 *
 * Signal-safe: no.
 */
#ifndef PE_INTERPOSE_INT_H
#define PE_INTERPOSE_INT_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "interpose.h"

/* ---- got.c: relocation slots --------------------------------------------------- */

/* A name to redirect: slots bound to `from` (or lazily bound, when the
   object asks for `from`'s version or none) get `to`. */
typedef struct pe_ip_target_s {
    const char *name;
    uintptr_t from;  /* the definition the program binds the name to; 0: leave alone */
    uintptr_t to;    /* ours */
    const char *ver; /* from's version name ("GLIBC_2.2.5"), NULL when unversioned */
} pe_ip_target_t;

/* One slot changed: where, what it held, what we stored. */
typedef struct pe_ip_rec_s {
    uintptr_t slot, old, to;
    uintptr_t base; /* its object: load bias and program headers (identity) */
    const void *phdr;
} pe_ip_rec_t;

/* One object walked (redirected, or left alone: not walked again). */
typedef struct pe_ip_obj_s {
    uintptr_t base;
    const void *phdr;
} pe_ip_obj_t;

typedef struct pe_ip_map_s {
    uintptr_t lo, hi;
    int prot;
} pe_ip_map_t;

#define PE_IP_HASH 1024

typedef struct pe_ip_got_s {
    const pe_ip_target_t *t;
    int nt;
    int16_t hash[PE_IP_HASH]; /* FNV-1a of the name -> target index + 1 */
    uintptr_t skip_base;      /* our own object (never walked) */
    const char *only;         /* tests: walk only objects whose name ends so */
    /* what we changed, and the objects walked (mmap'd, grown by mremap) */
    pe_ip_rec_t *rec;
    size_t nrec, caprec;
    pe_ip_obj_t *obj;
    size_t nobj, capobj;
    /* /proc/self/maps, read before each walk */
    pe_ip_map_t *maps;
    size_t nmaps, capmaps;
    /* figures of the walks so far */
    uint64_t slots, pages, objects, elsewhere;
    char left[768]; /* "name (why), ..." of objects left alone */
    int nleft;
    int err; /* the last walk's error (-ENOMEM) */
} pe_ip_got_t;

/* Set up g for targets t[nt] (kept by the caller).  0 or -EINVAL (a
   target table too big for the hash). */
int pe_ip_got_init(pe_ip_got_t *g, const pe_ip_target_t *t, int nt);
/* Walk every loaded object not walked yet and redirect its slots.
   Returns the slots changed, or -errno (-ENOMEM: maps or records). */
int pe_ip_got_patch(pe_ip_got_t *g);
/* Put every recorded slot back (of objects still loaded, whose slot still
   holds ours), protections as they were; forget every record and object.
   Returns the slots put back. */
int pe_ip_got_restore(pe_ip_got_t *g);
/* Forget the records and objects of objects no longer loaded. */
void pe_ip_got_prune(pe_ip_got_t *g);
/* Release g's mappings. */
void pe_ip_got_free(pe_ip_got_t *g);
/* The version name of definition def ("GLIBC_2.2.5": its object's
   DT_VERSYM and DT_VERDEF), or NULL when it has none.  Outside the loader's
   iterator (dladdr takes the loader's lock). */
const char *pe_ip_got_version(void *def);
/* The loader's count of objects loaded so far (dlpi_adds). */
unsigned long long pe_ip_got_adds(void);

#endif /* PE_INTERPOSE_INT_H */
