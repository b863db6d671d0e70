/*
 * param_table.c: what every parameter of every endpoint may hold, in one
 * table, checked before the handler runs (routes.c) so that a typo in an
 * output parameter (format=svgx, sample_index=bogus) is answered 400 at once
 * rather than after the profile it would have formatted.  Handlers still
 * read their values with the pe_param_* readers, which agree with this
 * table (a handler may be stricter, e.g. a kind's own minimum delay, but
 * only where it answers before collecting anything).
 */
#include <stdio.h>
#include <string.h>

#include "../heap/heap.h"
#include "../sampler/kind.h"
#include "http_int.h"

/* ---- the choices some parameters take (shared with respond.c) -------------------- */

const char *const pe_http_formats[] = {"pprof", "text", "folded", "svg", "tree", "flat", NULL};
const char *const pe_http_groupings[] = {"none", "thread", NULL};
const char *const pe_http_namings[] = {"short", "full", NULL};
const char *const pe_http_granularities[] = {"functions", "lines", NULL};
static const char *const timeline_formats[] = {"html", "json", "svg", NULL};
static const char *const capture_wall[] = {"auto", "signal", NULL};
static const char *const capture_stacks[] = {"auto", "signal", "proc", NULL};

/* ---- the table ------------------------------------------------------------------- */

enum { NUM, SECS, BOOL, ENUM, TYPE };

typedef struct spec_s {
    const char *path; /* NULL: every route that lists the parameter */
    const char *name;
    int kind;
    double min, max;            /* NUM */
    const char *const *choices; /* ENUM */
    const char *types;          /* TYPE: the sample types, space-separated, or NULL: kind's */
    const pe_kind_t *kind_row;  /* TYPE: the kind whose two types the profile has */
} spec_t;

#define HEAP_TYPES "alloc_objects alloc_space inuse_objects inuse_space"
#define ALLOC_TYPES "alloc_objects alloc_space"

/* Rows for a path come before the catch-all row of the same name. */
static const spec_t specs[] = {
    {"/heap_timeline", "format", ENUM, 0, 0, timeline_formats, NULL, NULL},
    {"/heap_timeline", "seconds", NUM, 1, PE_HEAP_TIMELINE, NULL, NULL, NULL},
    {"/debug/pprof/goroutine", "capture", ENUM, 0, 0, capture_stacks, NULL, NULL},
    {"/task_backtraces", "capture", ENUM, 0, 0, capture_stacks, NULL, NULL},
    {NULL, "capture", ENUM, 0, 0, capture_wall, NULL, NULL},
    /* sample_index: by route, as the profile it sends holds them */
    {"/profile", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_cpu},
    {"/profile_stop", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_cpu},
    {"/debug/pprof/profile", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_cpu},
    {"/profile_wall", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_wall},
    {"/profile_wall_stop", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_wall},
    {"/debug/fgprof", "sample_index", TYPE, 0, 0, NULL, "samples time", NULL},
    {"/allocs_profile", "sample_index", TYPE, 0, 0, NULL, ALLOC_TYPES, NULL},
    {"/allocs_profile_stop", "sample_index", TYPE, 0, 0, NULL, ALLOC_TYPES, NULL},
    {"/debug/pprof/mutex", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_mutex},
    {"/debug/pprof/delta_mutex", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_mutex},
    {"/debug/pprof/block", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_block},
    {"/debug/pprof/delta_block", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_block},
    {"/debug/pprof/goroutine", "sample_index", TYPE, 0, 0, NULL, "goroutine", NULL},
    {"/debug/pprof/threadcreate", "sample_index", TYPE, 0, 0, NULL, "threadcreate", NULL},
    {NULL, "sample_index", TYPE, 0, 0, NULL, HEAP_TYPES, NULL}, /* heap views */
    {NULL, "format", ENUM, 0, 0, pe_http_formats, NULL, NULL},
    {NULL, "names", ENUM, 0, 0, pe_http_namings, NULL, NULL},
    {NULL, "granularity", ENUM, 0, 0, pe_http_granularities, NULL, NULL},
    {NULL, "groupby", ENUM, 0, 0, pe_http_groupings, NULL, NULL},
    {NULL, "pprof", BOOL, 0, 0, NULL, NULL, NULL},
    {NULL, "mincount", NUM, 0, 1e15, NULL, NULL, NULL},
    {NULL, "maxdepth", NUM, 0, 100000, NULL, NULL, NULL},
    {NULL, "seconds", SECS, 0, 0, NULL, NULL, NULL},
    {NULL, "duration", SECS, 0, 0, NULL, NULL, NULL},
    {NULL, "n", NUM, 1, 1e12, NULL, NULL, NULL},
    /* the CPU kind's minimum; wall and trace check their own 1 ms before starting */
    {NULL, "delay", NUM, 1e-5, 10, NULL, NULL, NULL},
    {NULL, "debug", NUM, 0, 2, NULL, NULL, NULL},
    {NULL, "since", NUM, 0, 1e9, NULL, NULL, NULL},
    {NULL, "min_age", NUM, 0, 1e9, NULL, NULL, NULL},
    {NULL, "max_age", NUM, 0, 1e9, NULL, NULL, NULL},
    {NULL, "sample_rate", NUM, 0, 1, NULL, NULL, NULL},
    {NULL, "all_one", BOOL, 0, 0, NULL, NULL, NULL},
    {NULL, "gzip", BOOL, 0, 0, NULL, NULL, NULL},
    {NULL, "mem", NUM, 1, 1024, NULL, NULL, NULL},
};

static const spec_t *
find_spec(const char *path, const char *name)
{
    size_t i;

    for (i = 0; i < PE_ARRAY_SIZE(specs); i++) {
        if (!strcmp(specs[i].name, name) && (!specs[i].path || !strcmp(specs[i].path, path)))
            return &specs[i];
    }
    return NULL;
}

int
pe_http_param_known(const char *path, const char *name)
{
    return find_spec(path, name) != NULL;
}

/* sample_index: one of the route's type names or its index (as go tool pprof takes it). */
static int
check_type(pe_req_t *r, const spec_t *sp, const char *v)
{
    char names[128], list[192];
    size_t k = 0;
    int n = 1, idx;
    char end;

    if (sp->kind_row)
        snprintf(names, sizeof(names), "%s %s", sp->kind_row->types[0].type,
                 sp->kind_row->types[1].type);
    else
        snprintf(names, sizeof(names), "%s", sp->types);
    if (!*v || pe_param_listed(names, v))
        return 0;
    for (const char *c = names; *c && k < sizeof(list) - 2; c++) { /* "a b" -> "a, b" */
        n += *c == ' ';
        if (*c == ' ')
            list[k++] = ',';
        list[k++] = *c;
    }
    list[k] = '\0';
    if (sscanf(v, "%d%c", &idx, &end) == 1 && idx >= 0 && idx < n)
        return 0;
    return pe_http_error(r, 400, "parameter sample_index=%.64s: must be one of %s, or 0..%d", v,
                         list, n - 1);
}

int
pe_http_check_values(pe_req_t *r, const pe_route_t *route)
{
    const char *list = route->params;
    char name[33];
    double d;
    int i, rc;

    while (list && *list) {
        size_t w = strcspn(list, " ");
        const spec_t *sp;
        const char *v;

        if (w < sizeof(name)) {
            memcpy(name, list, w);
            name[w] = '\0';
            if ((v = pe_param(r, name)) && (sp = find_spec(route->path, name))) {
                switch (sp->kind) {
                case NUM: rc = pe_param_number(r, name, 0, sp->min, sp->max, &d); break;
                case SECS: rc = pe_param_number(r, name, 0, 0, pe_http_max_seconds(), &d); break;
                case BOOL: rc = pe_param_bool(r, name, 0, &i); break;
                case ENUM: rc = pe_param_enum(r, name, sp->choices, 0, &i); break;
                default: rc = check_type(r, sp, v); break;
                }
                if (rc)
                    return rc;
            }
        }
        list += w;
        list += strspn(list, " ");
    }
    return 0;
}
