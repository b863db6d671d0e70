/*
 * objects.c: the loaded objects, as the dynamic loader sees them.  Snapshots
 * them with dl_iterate_phdr to get each one's load bias, PT_LOAD span and GNU
 * build id from memory (the file on disk may have been replaced since it was
 * loaded).  Names are symbolize.c's business, mappings profile/mappings.c's.
 *
 * Signal-safe: no.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "elf.h"
#include "symbols.h"

/* ---- loaded objects ----------------------------------------------------------- */

struct objs_ctx {
    pe_sym_obj_t *objs;
    size_t n, cap;
    uintptr_t vdso;
    int err;
};

static int
objs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct objs_ctx *c = arg;
    pe_sym_obj_t *o;
    const ElfW(Phdr) * ph;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int i;

    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        pe_sym_obj_t *n = realloc(c->objs, ncap * sizeof(*n));

        if (!n) {
            c->err = -ENOMEM;
            return 1;
        }
        c->objs = n;
        c->cap = ncap;
    }
    o = &c->objs[c->n];
    memset(o, 0, sizeof(*o));
    for (i = 0; i < info->dlpi_phnum; i++) {
        ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            if (info->dlpi_addr + ph->p_vaddr < lo)
                lo = info->dlpi_addr + ph->p_vaddr;
            if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
                hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        } else if (ph->p_type == PT_NOTE && !o->build_id[0]) {
            /* Notes sit in the first, read-only PT_LOAD, so they are mapped. */
            pe_elf_note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr),
                                 ph->p_memsz, ph->p_align, o->build_id, sizeof(o->build_id));
        }
    }
    if (hi == 0)
        return 0; /* nothing mapped: nothing to attribute */
    o->name = strdup(info->dlpi_name ? info->dlpi_name : "");
    if (!o->name) {
        c->err = -ENOMEM;
        return 1;
    }
    o->bias = info->dlpi_addr;
    o->lo = lo;
    o->hi = hi;
    /* glibc reports the main program first, and the vdso with its phdrs inside the vdso. */
    o->is_main = c->n == 0;
    o->is_vdso = c->vdso && (uintptr_t)info->dlpi_phdr >= c->vdso &&
                 (uintptr_t)info->dlpi_phdr < c->vdso + 4096;
    c->n++;
    return 0;
}

static int
obj_cmp(const void *a, const void *b)
{
    const pe_sym_obj_t *x = a, *y = b;

    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int
pe_sym_objs_snapshot(pe_sym_obj_t **objs, size_t *n)
{
    struct objs_ctx c = {.vdso = getauxval(AT_SYSINFO_EHDR)};

    dl_iterate_phdr(objs_cb, &c);
    if (c.err) {
        pe_sym_objs_free(c.objs, c.n);
        return c.err;
    }
    qsort(c.objs, c.n, sizeof(*c.objs), obj_cmp);
    *objs = c.objs;
    *n = c.n;
    return 0;
}

void
pe_sym_objs_free(pe_sym_obj_t *objs, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(objs[i].name);
    free(objs);
}

const pe_sym_obj_t *
pe_sym_objs_find(const pe_sym_obj_t *objs, size_t n, uintptr_t addr)
{
    size_t lo = 0, hi = n, mid;

    /* Last object with lo <= addr, then check its span. */
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (objs[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= objs[lo - 1].hi)
        return NULL;
    return &objs[lo - 1];
}
