/*
 * mappings.c: which file each address came from.  Reads /proc/self/maps
 * (executable entries only, like Go's runtime/pprof) into the profile's
 * mapping table, and snapshots the loaded objects with dl_iterate_phdr to get
 * their load bias and GNU build id from memory (the file on disk may have been
 * replaced since it was loaded).  Anonymous executable memory (JIT code) gets
 * a synthetic "[jit]" mapping.  Names are symbolize.c's business.
 *
 * Signal-safe: no.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "proto_int.h"

#define DELETED_SUFFIX " (deleted)"

/* ---- build ids ------------------------------------------------------------- */

int
pe_prof_note_build_id(const unsigned char *notes, size_t len, size_t align, char *hex,
                      size_t hexlen)
{
    static const char digits[] = "0123456789abcdef";
    const Elf64_Nhdr *nh;
    size_t off = 0, namesz, descsz, i;
    const unsigned char *desc;

    if (align != 8)
        align = 4;
    while (off + sizeof(*nh) <= len) {
        nh = (const Elf64_Nhdr *)(notes + off);
        namesz = (nh->n_namesz + align - 1) & ~(align - 1);
        descsz = (nh->n_descsz + align - 1) & ~(align - 1);
        if (namesz > len - off - sizeof(*nh) || descsz > len - off - sizeof(*nh) - namesz)
            return 0;
        desc = notes + off + sizeof(*nh) + namesz;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
            memcmp(notes + off + sizeof(*nh), "GNU", 4) == 0 && nh->n_descsz > 0 &&
            nh->n_descsz <= PE_PROF_BUILDID_MAX && hexlen > 2 * nh->n_descsz) {
            for (i = 0; i < nh->n_descsz; i++) {
                hex[2 * i] = digits[desc[i] >> 4];
                hex[2 * i + 1] = digits[desc[i] & 15];
            }
            hex[2 * i] = '\0';
            return 1;
        }
        off += sizeof(*nh) + namesz + descsz;
    }
    return 0;
}

/* ---- loaded objects ----------------------------------------------------------- */

struct objs_ctx {
    pe_prof_obj_t *objs;
    size_t n, cap;
    uintptr_t vdso;
    int err;
};

static int
objs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct objs_ctx *c = arg;
    pe_prof_obj_t *o;
    const ElfW(Phdr) * ph;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int i;

    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        pe_prof_obj_t *n = realloc(c->objs, ncap * sizeof(*n));

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
            pe_prof_note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr),
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
    const pe_prof_obj_t *x = a, *y = b;

    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int
pe_prof_objs_snapshot(pe_prof_obj_t **objs, size_t *n)
{
    struct objs_ctx c = {.vdso = getauxval(AT_SYSINFO_EHDR)};

    dl_iterate_phdr(objs_cb, &c);
    if (c.err) {
        pe_prof_objs_free(c.objs, c.n);
        return c.err;
    }
    qsort(c.objs, c.n, sizeof(*c.objs), obj_cmp);
    *objs = c.objs;
    *n = c.n;
    return 0;
}

void
pe_prof_objs_free(pe_prof_obj_t *objs, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(objs[i].name);
    free(objs);
}

const pe_prof_obj_t *
pe_prof_objs_find(const pe_prof_obj_t *objs, size_t n, uintptr_t addr)
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

/* ---- /proc/self/maps ------------------------------------------------------------ */

/* Parse one maps line; returns 1 for an executable file-backed or anonymous entry. */
static int
maps_parse(char *line, uintptr_t *start, uintptr_t *limit, uint64_t *offset, char **path)
{
    char perms[5];
    unsigned long inode;
    size_t len;
    int pos = 0;

    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %" SCNx64 " %*s %lu %n", start, limit, perms,
               offset, &inode, &pos) < 5 ||
        pos == 0)
        return 0;
    if (perms[2] != 'x')
        return 0;
    *path = line + pos;
    len = strlen(*path);
    while (len > 0 && ((*path)[len - 1] == '\n' || (*path)[len - 1] == ' '))
        (*path)[--len] = '\0';
    if (len > strlen(DELETED_SUFFIX) &&
        strcmp(*path + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX) == 0)
        (*path)[len - strlen(DELETED_SUFFIX)] = '\0';
    /* Keep the vdso (pprof knows it); drop other [specials]. */
    if (strcmp(*path, "[vdso]") == 0)
        return 1;
    /* Anonymous code is a JIT's: one synthetic "[jit]" mapping each (names: jitmap.c). */
    if ((*path)[0] == '\0' && inode == 0) {
        *path = (char *)"[jit]";
        return 1;
    }
    return (*path)[0] != '\0' && (*path)[0] != '[' && inode != 0;
}

int
pe_prof_maps_load(pe_prof_t *p)
{
    pe_prof_obj_t *objs = NULL;
    const pe_prof_obj_t *obj;
    size_t nobjs = 0, cap = 0;
    uintptr_t start, limit;
    uint64_t offset;
    char *line = NULL, *path;
    pe_prof_map_t *m;
    FILE *f = NULL;
    uint32_t i;
    int err;

    err = pe_prof_objs_snapshot(&objs, &nobjs);
    if (err)
        return err;
    f = fopen("/proc/self/maps", "re");
    if (!f) {
        err = -errno;
        goto out;
    }
    for (i = 0; i < p->nmaps; i++)
        p->maps[i].current = 0;
    p->ncur_maps = 0;
    while (getline(&line, &cap, f) > 0) {
        if (!maps_parse(line, &start, &limit, &offset, &path))
            continue;
        /* Entries seen before keep their index: locations point at them. */
        for (i = 0; i < p->nmaps; i++) {
            m = &p->maps[i];
            if (m->start == start && m->limit == limit && m->offset == offset &&
                strcmp(m->path, path) == 0)
                break;
        }
        if (i == p->nmaps) {
            if (p->nmaps == p->capmaps) {
                uint32_t ncap = p->capmaps ? p->capmaps * 2 : 32;
                pe_prof_map_t *n = realloc(p->maps, ncap * sizeof(*n));

                if (!n) {
                    err = -ENOMEM;
                    goto out;
                }
                p->maps = n;
                p->capmaps = ncap;
            }
            m = &p->maps[p->nmaps];
            memset(m, 0, sizeof(*m));
            m->start = start;
            m->limit = limit;
            m->offset = offset;
            obj = pe_prof_objs_find(objs, nobjs, start);
            m->path = pe_prof_intern(p, path);
            m->build_id = pe_prof_intern(p, obj ? obj->build_id : "");
            if (!m->path || !m->build_id) {
                err = -ENOMEM;
                goto out;
            }
            m->is_main = obj && obj->is_main;
            p->nmaps++;
        }
        p->maps[i].current = 1;
        /* /proc/self/maps is sorted by address, so cur_maps comes out sorted too. */
        if (p->ncur_maps == 0 || p->maps[p->cur_maps[p->ncur_maps - 1]].start < start) {
            uint32_t *n = realloc(p->cur_maps, (p->ncur_maps + 1) * sizeof(*n));

            if (!n) {
                err = -ENOMEM;
                goto out;
            }
            p->cur_maps = n;
            p->cur_maps[p->ncur_maps++] = i;
        }
    }
out:
    free(line);
    if (f)
        fclose(f);
    pe_prof_objs_free(objs, nobjs);
    return err;
}

uint32_t
pe_prof_maps_find(const pe_prof_t *p, uintptr_t addr)
{
    uint32_t lo = 0, hi = p->ncur_maps, mid;
    const pe_prof_map_t *m;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (p->maps[p->cur_maps[mid]].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    m = &p->maps[p->cur_maps[lo - 1]];
    return addr < m->limit ? p->cur_maps[lo - 1] + 1 : 0;
}
