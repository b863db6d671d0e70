/*
 * flame.c: the model's samples in flame-graph order (see flame_int.h) for the
 * folded and svg encoders.  It reads the model only
 * through profile.h's accessors; the layout itself is svg.c's.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame_int.h"

/* ---- order --------------------------------------------------------------------- */

/*
 * Root-first comparison by name.  Names are interned by the model, so equal
 * names are equal pointers and strcmp runs only where the stacks part.
 */
static int
stack_cmp(const void *a, const void *b, void *arg)
{
    const pe_flame_t *f = arg;
    const pe_prof_t *p = f->p;
    pe_prof_sample_t x, y;
    int i, c;

    pe_prof_sample(p, (int)*(const uint32_t *)a, &x);
    pe_prof_sample(p, (int)*(const uint32_t *)b, &y);
    for (i = 0; i < x.nframes && i < y.nframes; i++) {
        const char *nx = pe_flame_name(f, &x, i), *ny = pe_flame_name(f, &y, i);

        if (nx != ny && (c = strcmp(nx, ny)) != 0) /* interned: mostly nx == ny */
            return c;
    }
    if (x.nframes != y.nframes)
        return x.nframes < y.nframes ? -1 : 1;
    /* Equal stacks: keep model order, so the output does not depend on qsort. */
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

int
pe_flame_init(pe_flame_t *f, pe_prof_t *p, int value_index, int positive_only)
{
    pe_prof_sample_t s;
    int ns, i, err;

    memset(f, 0, sizeof(*f));
    err = pe_prof_resolve(p, 0);
    if (err)
        return err;
    f->p = p;
    f->by_line = pe_prof_by_line(p);
    f->vi = value_index < 0 ? pe_prof_default_index(p) : value_index;
    if (f->vi >= pe_prof_ntypes(p))
        return -EINVAL;
    ns = pe_prof_nsamples(p);
    f->idx = malloc(((size_t)ns + 1) * sizeof(*f->idx));
    if (!f->idx)
        return -ENOMEM;
    for (i = 0; i < ns; i++) {
        pe_prof_sample(p, i, &s);
        if (s.values[f->vi] == 0)
            continue;
        if (positive_only && s.values[f->vi] < 0) {
            f->ndropped++;
            continue;
        }
        f->idx[f->n++] = (uint32_t)i;
        f->total += s.values[f->vi];
        if (s.nframes > f->maxdepth)
            f->maxdepth = s.nframes;
    }
    qsort_r(f->idx, f->n, sizeof(*f->idx), stack_cmp, f);
    return 0;
}

void
pe_flame_free(pe_flame_t *f)
{
    free(f->idx);
    f->idx = NULL;
    f->n = 0;
}

void
pe_flame_sample(const pe_flame_t *f, uint32_t i, pe_prof_sample_t *s)
{
    pe_prof_sample(f->p, (int)f->idx[i], s);
}
