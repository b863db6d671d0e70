/*
 * pyloc.c: CPython frames in the model.  A location whose address is a
 * Python tag (pynames.h) gets its names from the process-wide table instead
 * of the symbol tables: function co_qualname with its own file and start
 * line (a Python function is (qualname, filename, first line): another
 * file's `main`, or the C `main`, is another function), the frame's line,
 * and a synthetic "[python]" mapping over the tag range, which lies above
 * every user-space address and below [vsyscall].
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../symbols/pynames.h"
#include "profile_int.h"

static int
grow_funcs(pe_prof_t *p)
{
    uint32_t ncap;
    pe_prof_func_t *n;

    if (p->nfuncs < p->capfuncs)
        return 0;
    ncap = p->capfuncs ? p->capfuncs * 2 : 16;
    n = realloc(p->funcs, ncap * sizeof(*n));
    if (!n)
        return -1;
    p->funcs = n;
    p->capfuncs = ncap;
    return 0;
}

/*
 * A Python function is its (qualname, filename): another file's `main`, or
 * the C `main`, is another function.  Linear in the functions, which stay
 * few; -1 on ENOMEM.
 */
static int64_t
py_func_get(pe_prof_t *p, const char *name, const char *file, int64_t start_line)
{
    char sys[300];
    const char *sysname;
    int64_t fi;

    for (uint32_t i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].name == name && p->funcs[i].file == file &&
            p->funcs[i].start_line == start_line)
            return i;
    snprintf(sys, sizeof(sys), "python:%s", name);
    if (!(sysname = pe_prof_intern(p, sys)) || grow_funcs(p))
        return -1;
    fi = p->nfuncs++;
    memset(&p->funcs[fi], 0, sizeof(p->funcs[0]));
    p->funcs[fi].name = name;
    p->funcs[fi].file = file;
    p->funcs[fi].start_line = start_line;
    p->funcs[fi].sysname = sysname;
    return fi;
}

/* The synthetic "[python]" mapping's index + 1 (made on first use); 0 on ENOMEM. */
static uint32_t
py_map(pe_prof_t *p)
{
    const char *path, *none;

    for (uint32_t i = 0; i < p->nmaps; i++)
        if (p->maps[i].start == PE_PY_TAG && !p->maps[i].current)
            return i + 1;
    path = pe_prof_intern(p, "[python]");
    none = pe_prof_intern(p, "");
    if (!path || !none)
        return 0;
    if (p->nmaps == p->capmaps) {
        uint32_t ncap = p->capmaps ? p->capmaps * 2 : 32;
        pe_prof_map_t *n = realloc(p->maps, ncap * sizeof(*n));

        if (!n)
            return 0;
        p->maps = n;
        p->capmaps = ncap;
    }
    memset(&p->maps[p->nmaps], 0, sizeof(p->maps[0]));
    p->maps[p->nmaps].start = PE_PY_TAG; /* where the tags are: no real address is there */
    p->maps[p->nmaps].limit = PE_PY_NAMED_TAG(0) + (1ULL << 32); /* below [vsyscall] */
    p->maps[p->nmaps].path = path;
    p->maps[p->nmaps].build_id = none;
    return ++p->nmaps;
}

int
pe_prof_py_resolve(pe_prof_t *p, pe_prof_loc_t *loc)
{
    pe_pyname_t n;
    const char *name, *file;
    uint32_t m;
    int64_t fi;

    pe_pynames_get(loc->frame.addr, &n);
    name = pe_prof_intern(p, n.qualname);
    file = pe_prof_intern(p, n.filename);
    if (!name || !file || (fi = py_func_get(p, name, file, n.firstlineno)) < 0 || !(m = py_map(p)))
        return -ENOMEM;
    loc->frame.name = name;
    loc->frame.file = file;
    loc->frame.offset = 0;
    loc->func = (uint32_t)fi + 1;
    loc->map = m;
    loc->py = 1;
    loc->line = n.line;
    p->maps[m - 1].nlocs++;
    p->maps[m - 1].nnamed++;
    loc->resolved = 1;
    return 0;
}
