/*
 * mappings.c: which file each address came from.  Reads /proc/self/maps
 * (executable entries only, like Go's runtime/pprof) into the profile's
 * mapping table, with each object's build id from the loader's snapshot
 * (symbols/objects.c).  Anonymous executable memory (JIT code) gets a
 * synthetic "[jit]" mapping.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../preload/proc.h"
#include "profile_int.h"

#define DELETED_SUFFIX " (deleted)"

/* ---- /proc/self/maps ------------------------------------------------------------ */

/* One mapping; 1 for an executable file-backed or anonymous one, its path then in *path. */
static int
maps_keep(const pe_proc_map_t *e, char **path)
{
    unsigned long inode = e->inode;
    size_t len;

    if (e->perms[2] != 'x')
        return 0;
    *path = e->path;
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
    pe_sym_obj_t *objs = NULL;
    const pe_sym_obj_t *obj;
    size_t nobjs = 0;
    uintptr_t start, limit;
    uint64_t offset;
    char *path;
    pe_prof_map_t *m;
    pe_proc_maps_t it = {.lines.fd = -1};
    pe_proc_map_t e;
    uint32_t i;
    int err;

    err = pe_sym_objs_snapshot(&objs, &nobjs);
    if (err)
        return err;
    if ((err = pe_proc_maps_open(&it)) < 0)
        goto out;
    for (i = 0; i < p->nmaps; i++)
        p->maps[i].current = 0;
    p->ncur_maps = 0;
    while (pe_proc_maps_entry(&it, &e) > 0) {
        if (!maps_keep(&e, &path))
            continue;
        start = e.lo;
        limit = e.hi;
        offset = e.offset;
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
            obj = pe_sym_objs_find(objs, nobjs, start);
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
    pe_proc_maps_close(&it);
    pe_sym_objs_free(objs, nobjs);
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
