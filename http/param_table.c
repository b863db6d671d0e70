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
const char *const pe_http_cpu_events[] = {"cpu",          "cycles",        "instructions",
                                          "cache-misses", "branch-misses", NULL};
const char *const pe_http_cpu_engines[] = {"auto", "perf", "timer", NULL}; /* PE_CPU_ENGINE_* */
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
    const char *def;            /* what absent means, as the index shows it, or NULL */
} spec_t;

#define HEAP_TYPES "alloc_objects alloc_space inuse_objects inuse_space"
#define ALLOC_TYPES "alloc_objects alloc_space"

/* Rows for a path come before the catch-all row of the same name. */
static const spec_t specs[] = {
    {"/heap_timeline", "format", ENUM, 0, 0, timeline_formats, NULL, NULL, "html"},
    {"/heap_timeline", "seconds", NUM, 1, PE_HEAP_TIMELINE, NULL, NULL, NULL, "3600"},
    {"/debug/pprof/goroutine", "capture", ENUM, 0, 0, capture_stacks, NULL, NULL, "auto"},
    {"/task_backtraces", "capture", ENUM, 0, 0, capture_stacks, NULL, NULL, "auto"},
    {NULL, "capture", ENUM, 0, 0, capture_wall, NULL, NULL, "auto"},
    {NULL, "event", ENUM, 0, 0, pe_http_cpu_events, NULL, NULL, "cpu"},
    {NULL, "engine", ENUM, 0, 0, pe_http_cpu_engines, NULL, NULL, "PROFEP_CPU_ENGINE"},
    /* sample_index: by route, as the profile it sends holds them */
    {"/profile", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_cpu, NULL},
    {"/profile_stop", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_cpu, NULL},
    {"/debug/pprof/profile", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_cpu, NULL},
    {"/profile_wall", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_wall, NULL},
    {"/profile_wall_stop", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_wall, NULL},
    {"/debug/fgprof", "sample_index", TYPE, 0, 0, NULL, "samples time", NULL, NULL},
    {"/allocs_profile", "sample_index", TYPE, 0, 0, NULL, ALLOC_TYPES, NULL, NULL},
    {"/allocs_profile_stop", "sample_index", TYPE, 0, 0, NULL, ALLOC_TYPES, NULL, NULL},
    {"/debug/pprof/mutex", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_mutex, NULL},
    {"/debug/pprof/delta_mutex", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_mutex, NULL},
    {"/debug/pprof/block", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_block, NULL},
    {"/debug/pprof/delta_block", "sample_index", TYPE, 0, 0, NULL, NULL, &pe_kind_block, NULL},
    {"/debug/pprof/goroutine", "sample_index", TYPE, 0, 0, NULL, "goroutine", NULL, NULL},
    {"/debug/pprof/threadcreate", "sample_index", TYPE, 0, 0, NULL, "threadcreate", NULL, NULL},
    {"/debug/pprof/allocs", "sample_index", TYPE, 0, 0, NULL, HEAP_TYPES, NULL, "alloc_space"},
    {NULL, "sample_index", TYPE, 0, 0, NULL, HEAP_TYPES, NULL, NULL}, /* heap views */
    {NULL, "format", ENUM, 0, 0, pe_http_formats, NULL, NULL, "pprof; svg for a browser"},
    {NULL, "names", ENUM, 0, 0, pe_http_namings, NULL, NULL, "short"},
    {NULL, "granularity", ENUM, 0, 0, pe_http_granularities, NULL, NULL, "functions"},
    {NULL, "groupby", ENUM, 0, 0, pe_http_groupings, NULL, NULL, "none"},
    {NULL, "pprof", BOOL, 0, 0, NULL, NULL, NULL, "true"},
    {NULL, "mincount", NUM, 0, 1e15, NULL, NULL, NULL, "0"},
    {NULL, "maxdepth", NUM, 0, 100000, NULL, NULL, NULL, "0: all"},
    {"/debug/pprof/profile", "seconds", SECS, 0, 0, NULL, NULL, NULL, "30"},
    {"/debug/fgprof", "seconds", SECS, 0, 0, NULL, NULL, NULL, "30"},
    {"/debug/pprof/trace", "seconds", SECS, 0, 0, NULL, NULL, NULL, "1"},
    {NULL, "seconds", SECS, 0, 0, NULL, NULL, NULL, "0: since start"},
    {NULL, "duration", SECS, 0, 0, NULL, NULL, NULL, "10"},
    {NULL, "n", NUM, 1, 1e12, NULL, NULL, NULL, "1e8"},
    /* the CPU kind's minimum; wall and trace check their own 1 ms before starting */
    {NULL, "delay", NUM, 1e-5, 10, NULL, NULL, NULL, "0.01"},
    {NULL, "debug", NUM, 0, 2, NULL, NULL, NULL, "0"},
    {NULL, "since", NUM, 0, 1e9, NULL, NULL, NULL, NULL},
    {NULL, "min_age", NUM, 0, 1e9, NULL, NULL, NULL, NULL},
    {NULL, "max_age", NUM, 0, 1e9, NULL, NULL, NULL, NULL},
    {NULL, "sample_rate", NUM, 0, 1, NULL, NULL, NULL, "0.0001"},
    {NULL, "all_one", BOOL, 0, 0, NULL, NULL, NULL, "false"},
    {NULL, "gzip", BOOL, 0, 0, NULL, NULL, NULL, "as Accept-Encoding"},
    {NULL, "mem", NUM, 1, 1024, NULL, NULL, NULL, "64 (MiB)"},
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

const char *
pe_http_param_default(const char *path, const char *name, char *buf, size_t len)
{
    const spec_t *sp = find_spec(path, name);
    const char *last;

    if (!sp || sp->def || sp->kind != TYPE)
        return sp ? sp->def : NULL;
    /* a profile's default type: its kind's, else its last (pprof's rule) */
    if (sp->kind_row)
        return sp->kind_row->default_type ? sp->kind_row->default_type
                                          : sp->kind_row->types[1].type;
    last = strrchr(sp->types, ' ');
    snprintf(buf, len, "%s", last ? last + 1 : sp->types);
    return buf;
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
