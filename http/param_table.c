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
    /* TYPE: the sample types, space-separated; NULL: the route's kind's (any
       route with a kind, and no other) */
    const char *types;
    const char *def; /* what absent means, as the index shows it, or NULL */
} spec_t;

/* The heap's views over time (h_heap_time.c). */
#define HEAP_TYPES "alloc_objects alloc_space inuse_objects inuse_space"

/* Rows for a path come before the catch-all row of the same name. */
static const spec_t specs[] = {
    {"/heap_timeline", "format", ENUM, 0, 0, timeline_formats, NULL, "html"},
    {"/heap_timeline", "seconds", NUM, 1, PE_HEAP_TIMELINE, NULL, NULL, "3600"},
    {"/debug/pprof/goroutine", "capture", ENUM, 0, 0, capture_stacks, NULL, "auto"},
    {"/task_backtraces", "capture", ENUM, 0, 0, capture_stacks, NULL, "auto"},
    {NULL, "capture", ENUM, 0, 0, capture_wall, NULL, "auto"},
    {NULL, "event", ENUM, 0, 0, pe_http_cpu_events, NULL, "cpu"},
    {NULL, "engine", ENUM, 0, 0, pe_http_cpu_engines, NULL, "PROFEP_CPU_ENGINE"},
    /* sample_index: as the profile the route sends holds them; a kind's route,
       its kind's types (route_types) */
    {"/debug/pprof/goroutine", "sample_index", TYPE, 0, 0, NULL, "goroutine", NULL},
    {"/debug/pprof/threadcreate", "sample_index", TYPE, 0, 0, NULL, "threadcreate", NULL},
    {"/heap_peak", "sample_index", TYPE, 0, 0, NULL, HEAP_TYPES, NULL},
    {NULL, "sample_index", TYPE, 0, 0, NULL, NULL, NULL},
    {NULL, "format", ENUM, 0, 0, pe_http_formats, NULL, "pprof; svg for a browser"},
    {NULL, "names", ENUM, 0, 0, pe_http_namings, NULL, "short"},
    {NULL, "granularity", ENUM, 0, 0, pe_http_granularities, NULL, "functions"},
    {NULL, "groupby", ENUM, 0, 0, pe_http_groupings, NULL, "none"},
    {NULL, "pprof", BOOL, 0, 0, NULL, NULL, "true"},
    {NULL, "mincount", NUM, 0, 1e15, NULL, NULL, "0"},
    {NULL, "maxdepth", NUM, 0, 100000, NULL, NULL, "0: all"},
    {"/debug/pprof/profile", "seconds", SECS, 0, 0, NULL, NULL, "30"},
    {"/debug/fgprof", "seconds", SECS, 0, 0, NULL, NULL, "30"},
    {"/debug/pprof/trace", "seconds", SECS, 0, 0, NULL, NULL, "1"},
    {NULL, "seconds", SECS, 0, 0, NULL, NULL, "0: since start"},
    {NULL, "duration", SECS, 0, 0, NULL, NULL, "10"},
    {NULL, "n", NUM, 1, 1e12, NULL, NULL, "1e8"},
    /* the CPU kind's minimum; wall and trace check their own 1 ms before starting */
    {NULL, "delay", NUM, 1e-5, 10, NULL, NULL, "0.01"},
    {NULL, "debug", NUM, 0, 2, NULL, NULL, "0"},
    {NULL, "since", NUM, 0, 1e9, NULL, NULL, NULL},
    {NULL, "min_age", NUM, 0, 1e9, NULL, NULL, NULL},
    {NULL, "max_age", NUM, 0, 1e9, NULL, NULL, NULL},
    {NULL, "sample_rate", NUM, 0, 1, NULL, NULL, "0.0001"},
    {NULL, "all_one", BOOL, 0, 0, NULL, NULL, "false"},
    {NULL, "gzip", BOOL, 0, 0, NULL, NULL, "as Accept-Encoding"},
    {NULL, "mem", NUM, 1, 1024, NULL, NULL, "64 (MiB)"},
};

/*
 * The sample types of the profile a kind's route sends, space-separated, into
 * buf, and its default; how many, or 0 for a route without a kind.  fgprof's
 * route sends its kind's types under fgprof's names (h_profile.c).
 */
static int
route_types(const char *path, char *buf, size_t len, const char **def)
{
    const pe_route_t *rt = pe_http_find_route(path);
    const pe_kind_t *k = rt ? rt->kind : NULL;
    const pe_prof_vt_t *t;
    size_t at = 0;
    int n;

    if (!k)
        return 0;
    n = PE_KIND_NTYPES(k);
    t = k->types;
    *def = k->default_type;
    if (rt->handler == pe_http_h_sampled_fgprof) {
        t = pe_http_fgprof_types;
        *def = NULL;
    }
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", t[i].type);
    if (!*def)
        *def = t[n - 1].type; /* pprof's rule: the last */
    return n;
}

static const spec_t *
find_spec(const char *path, const char *name)
{
    char types[128];
    const char *def;
    size_t i;

    for (i = 0; i < PE_ARRAY_SIZE(specs); i++) {
        if (strcmp(specs[i].name, name) || (specs[i].path && strcmp(specs[i].path, path)))
            continue;
        /* the kinds' row: a route of a kind, and no other */
        if (specs[i].kind == TYPE && !specs[i].types &&
            !route_types(path, types, sizeof(types), &def))
            continue;
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
    char types[128];
    const char *last, *def;

    if (!sp || sp->def || sp->kind != TYPE)
        return sp ? sp->def : NULL;
    /* a profile's default type: its kind's, else its last (pprof's rule) */
    if (!sp->types) {
        route_types(path, types, sizeof(types), &def);
        return def; /* a kind's static string */
    }
    last = strrchr(sp->types, ' ');
    snprintf(buf, len, "%s", last ? last + 1 : sp->types);
    return buf;
}

/* sample_index: one of the route's type names or its index (as go tool pprof takes it). */
static int
check_type(pe_req_t *r, const char *path, const spec_t *sp, const char *v)
{
    char names[128], list[192];
    const char *def;
    size_t k = 0;
    int n = 1, idx;
    char end;

    if (sp->types)
        snprintf(names, sizeof(names), "%s", sp->types);
    else
        route_types(path, names, sizeof(names), &def);
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
                default: rc = check_type(r, route->path, sp, v); break;
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
