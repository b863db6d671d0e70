/*
 * u_kinds: the route table and the profile kinds (sampler/kind.h) agree.
 * Every kind is of one family (sampled, recorded, session) and has its
 * routes, served by that family's handlers, which read the kind from the
 * route; a kind's route takes the kind's own `unavailable` (one definition:
 * the index and the 503 say the same); sample_index takes on each route what
 * the kind's row says and nothing else (param_table.c derives it); capture=
 * and the heap's ages are listed where the kind takes them.
 */
#include <stdio.h>
#include <string.h>

#include "heap/heap.h"
#include "http/http.h"
#include "http/http_int.h"
#include "pe_test.h"
#include "preload/config.h"
#include "preload/init.h"
#include "sampler/kind.h"
#include "sampler/sampler.h"

static const pe_kind_t *const kinds[] = {PE_KINDS};

static int
sampled_handler(pe_http_handler_t h)
{
    return h == pe_http_h_sampled || h == pe_http_h_sampled_go || h == pe_http_h_sampled_fgprof ||
           h == pe_http_h_sampled_start || h == pe_http_h_sampled_stop;
}

static int
recorded_handler(pe_http_handler_t h)
{
    return h == pe_http_h_recorded || h == pe_http_h_recorded_delta;
}

static int
session_handler(pe_http_handler_t h)
{
    return h == pe_http_h_session || h == pe_http_h_session_start || h == pe_http_h_session_stop;
}

/* The handler family of k's routes (its row's members say which). */
static int (*family(const pe_kind_t *k))(pe_http_handler_t)
{
    return k->start ? sampled_handler : k->build ? recorded_handler : session_handler;
}

/* Routes of k served by h (NULL: by any handler). */
static int
routes_of(const pe_kind_t *k, pe_http_handler_t h)
{
    int n = 0;

    for (int i = 0; i < pe_nroutes; i++)
        n += pe_routes[i].kind == k && (!h || pe_routes[i].handler == h);
    return n;
}

static int
discard_write(pe_sink_t *sink, const void *buf, size_t len)
{
    (void)sink, (void)buf, (void)len;
    return 0;
}

static pe_sink_t discard = {discard_write, 0};

/* rt's check of query (routes.c, param_table.c): 0 or the status it answered. */
static int
check_query(const pe_route_t *rt, const char *query)
{
    pe_req_t r;
    char q[200];

    memset(&r, 0, sizeof(r));
    r.capture = &discard;
    r.method = "GET";
    r.path = rt->path;
    snprintf(q, sizeof(q), "%s", query);
    if (pe_params_parse(&r, q) < 0)
        return -1;
    return pe_http_check_params(&r, rt);
}

/* 1 when type is one of the n in t. */
static int
has_type(const pe_prof_vt_t *t, int n, const char *type)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].type, type))
            return 1;
    return 0;
}

/* sample_index on a kind's route: each of the kind's types by name and index,
   and nothing else (no other kind's type, no index past its last). */
static void
check_sample_index(const pe_route_t *rt)
{
    const pe_kind_t *k = rt->kind;
    const pe_prof_vt_t *t =
        rt->handler == pe_http_h_sampled_fgprof ? pe_http_fgprof_types : k->types;
    int n = PE_KIND_NTYPES(k);
    char q[100];

    for (int i = 0; i < n; i++) {
        snprintf(q, sizeof(q), "sample_index=%s", t[i].type);
        CHECKF(check_query(rt, q) == 0, "%s?%s refused", rt->path, q);
        snprintf(q, sizeof(q), "sample_index=%d", i);
        CHECKF(check_query(rt, q) == 0, "%s?%s refused", rt->path, q);
    }
    snprintf(q, sizeof(q), "sample_index=%d", n);
    CHECKF(check_query(rt, q) == 400, "%s?%s accepted", rt->path, q);
    CHECKF(check_query(rt, "sample_index=bogus") == 400, "%s?sample_index=bogus accepted",
           rt->path);
    for (size_t j = 0; j < PE_ARRAY_SIZE(kinds); j++) {
        for (int i = 0; i < PE_KIND_NTYPES(kinds[j]); i++) {
            const char *other = kinds[j]->types[i].type;

            if (has_type(t, n, other))
                continue;
            snprintf(q, sizeof(q), "sample_index=%s", other);
            CHECKF(check_query(rt, q) == 400, "%s?%s accepted (the %s kind's)", rt->path, q,
                   kinds[j]->name);
        }
    }
}

/* Every route and the kind it serves: the table says what the paths mean. */
static const struct {
    const char *path;
    const pe_kind_t *kind;
} route_kinds[] = {
    {"/debug/pprof/", NULL},
    {"/profile", &pe_kind_cpu},
    {"/profile_start", &pe_kind_cpu},
    {"/profile_stop", &pe_kind_cpu},
    {"/debug/pprof/profile", &pe_kind_cpu},
    {"/profile_wall", &pe_kind_wall},
    {"/profile_wall_start", &pe_kind_wall},
    {"/profile_wall_stop", &pe_kind_wall},
    {"/debug/fgprof", &pe_kind_wall},
    {"/allocs_profile", &pe_kind_allocs_profile},
    {"/allocs_profile_start", &pe_kind_allocs_profile},
    {"/allocs_profile_stop", &pe_kind_allocs_profile},
    {"/debug/pprof/heap", &pe_kind_heap},
    {"/debug/pprof/delta_heap", &pe_kind_heap},
    {"/debug/pprof/allocs", &pe_kind_allocs},
    {"/debug/pprof/mutex", &pe_kind_mutex},
    {"/debug/pprof/delta_mutex", &pe_kind_mutex},
    {"/debug/pprof/block", &pe_kind_block},
    {"/debug/pprof/delta_block", &pe_kind_block},
    /* profiles that are no kind's: their sample_index rows are param_table.c's */
    {"/heap_peak", NULL},
    {"/debug/pprof/goroutine", NULL},
    {"/debug/pprof/threadcreate", NULL},
    /* no profile */
    {"/heap_snapshot", NULL},
    {"/heap_timeline", NULL},
    {"/debug/pprof/trace", NULL},
    {"/debug/pprof/processes", NULL},
    {"/debug/pprof/cmdline", NULL},
    {"/debug/pprof/symbol", NULL},
    {"/task_backtraces", NULL},
    {"/debug_engine", NULL},
};

int
main(void)
{
    const pe_route_t *rt;
    char buf[64];

    /* Every route serves the kind the table above says, and is in it. */
    for (size_t j = 0; j < PE_ARRAY_SIZE(route_kinds); j++) {
        rt = pe_http_find_route(route_kinds[j].path);
        CHECKF(rt && rt->kind == route_kinds[j].kind, "%s: serves the %s kind, not the %s",
               route_kinds[j].path, rt && rt->kind ? rt->kind->name : "(no)",
               route_kinds[j].kind ? route_kinds[j].kind->name : "(no)");
    }
    CHECKF(pe_nroutes == (int)PE_ARRAY_SIZE(route_kinds), "%d routes, %zu in u_kinds' table",
           pe_nroutes, PE_ARRAY_SIZE(route_kinds));

    /* Every route of a kind: one of its family's handlers, no check of its own. */
    for (int i = 0; i < pe_nroutes; i++) {
        const pe_route_t *r = &pe_routes[i];
        const pe_kind_t *k = r->kind;
        int known = 0;

        CHECKF(!(sampled_handler(r->handler) || recorded_handler(r->handler) ||
                 session_handler(r->handler)) ||
                   k,
               "%s: a kind's handler on a route that names no kind", r->path);
        if (!k)
            continue;
        for (size_t j = 0; j < PE_ARRAY_SIZE(kinds); j++)
            known += kinds[j] == k;
        CHECKF(known == 1, "%s: its kind is not in kind.h's PE_KINDS", r->path);
        CHECKF(family(k)(r->handler), "%s: the %s kind's route has another family's handler",
               r->path, k->name);
        CHECKF(!r->unavailable, "%s: a second unavailable check beside the %s kind's", r->path,
               k->name);
        /* what sample_index takes and defaults to: the kind's types (fgprof renames them) */
        if (r->handler != pe_http_h_sampled_fgprof && r->params &&
            pe_param_listed(r->params, "sample_index")) {
            const char *def = pe_http_param_default(r->path, "sample_index", buf, sizeof(buf));
            const char *want =
                k->default_type ? k->default_type : k->types[PE_KIND_NTYPES(k) - 1].type;
            CHECKF(def && !strcmp(def, want),
                   "%s: sample_index defaults to %s, the %s kind's to %s", r->path,
                   def ? def : "(none)", k->name, want);
        }
        /* every route of a kind that sends a profile takes its types, as its row says */
        CHECKF(!r->params || pe_param_listed(r->params, "format") ==
                                 pe_param_listed(r->params, "sample_index"),
               "%s: sample_index and format go together", r->path);
        if (r->params && pe_param_listed(r->params, "sample_index"))
            check_sample_index(r);
        if (k->build && r->handler == pe_http_h_recorded)
            CHECKF(!!(k->flags & PE_KIND_F_AGES) == pe_param_listed(r->params, "min_age"),
                   "%s: min_age %s, the %s kind %s the heap's ages", r->path,
                   pe_param_listed(r->params, "min_age") ? "listed" : "not listed", k->name,
                   k->flags & PE_KIND_F_AGES ? "takes" : "does not take");
        if (k->start && r->handler != pe_http_h_sampled_stop)
            CHECKF(!!(k->flags & PE_KIND_F_CAPTURE) == pe_param_listed(r->params, "capture"),
                   "%s: capture= %s, the %s kind %s it", r->path,
                   pe_param_listed(r->params, "capture") ? "listed" : "not listed", k->name,
                   k->flags & PE_KIND_F_CAPTURE ? "takes" : "does not take");
    }

    /* Every kind has its routes: a session's start and stop, or cumulative and delta. */
    for (size_t j = 0; j < PE_ARRAY_SIZE(kinds); j++) {
        const pe_kind_t *k = kinds[j];

        CHECKF(routes_of(k, NULL) > 0, "the %s kind has no route", k->name);
        CHECKF((k->start != NULL) + (k->build != NULL) + (k->session_start != NULL) == 1,
               "the %s kind is one of sampled, recorded, session", k->name);
        CHECKF(PE_KIND_NTYPES(k) >= 2 && PE_KIND_NTYPES(k) <= PE_KIND_MAX_TYPES &&
                   (!k->start || PE_KIND_NTYPES(k) == 2),
               "the %s kind: %d types", k->name, PE_KIND_NTYPES(k));
        CHECKF(!k->default_type || has_type(k->types, PE_KIND_NTYPES(k), k->default_type),
               "the %s kind's default type %s is not one of its types", k->name, k->default_type);
        if (k->start) {
            CHECKF(routes_of(k, pe_http_h_sampled_start) == 1 &&
                       routes_of(k, pe_http_h_sampled_stop) == 1,
                   "the %s kind: one _start and one _stop route", k->name);
            CHECKF(routes_of(k, pe_http_h_sampled) + routes_of(k, pe_http_h_sampled_go) > 0,
                   "the %s kind: no timed profile route", k->name);
        } else if (k->build) {
            CHECKF(routes_of(k, pe_http_h_recorded) == 1 &&
                       routes_of(k, pe_http_h_recorded_delta) <= 1,
                   "the %s kind: one cumulative route and at most one delta route", k->name);
        } else {
            CHECKF(routes_of(k, pe_http_h_session) == 1 &&
                       routes_of(k, pe_http_h_session_start) == 1 &&
                       routes_of(k, pe_http_h_session_stop) == 1,
                   "the %s kind: one timed, one _start and one _stop route", k->name);
            CHECKF(k->session_state && k->session_stop, "the %s kind: a half session", k->name);
        }
    }

    /* The kind's reason is the route's: the index shows what the 503 says. */
    pe_cfg.max_seconds = 600;
    pe_cfg.mutex_rate = 0;
    rt = pe_http_find_route("/debug/pprof/mutex");
    CHECK(rt && rt->kind == &pe_kind_mutex);
    if (rt) {
        const char *why = pe_http_route_unavailable(rt);
        pe_req_t r;

        CHECKF(why && strstr(why, "PROFEP_MUTEX_RATE=0"), "%s", why ? why : "(none)");
        memset(&r, 0, sizeof(r));
        r.capture = &discard;
        r.method = "GET";
        r.path = rt->path;
        CHECK(pe_params_parse(&r, "") == 0);
        CHECK(pe_http_route(&r) == 503);
        CHECKF(why && !strcmp(r.errmsg, why), "503 \"%s\", index \"%s\"", r.errmsg,
               why ? why : "(none)");
        pe_cfg.mutex_rate = 100;
        if (!pe_init_no_interposers())
            CHECK(pe_http_route_unavailable(rt) == NULL);
    }
    /* The heap's kinds, and its endpoints beside them: what their 503 says is
       what the index shows (here nothing set the heap up: heap.c's reason). */
    rt = pe_http_find_route("/debug/pprof/heap");
    CHECK(rt && rt->kind == &pe_kind_heap);
    CHECK(!pe_heap_available());
    if (rt) {
        const char *why = pe_http_route_unavailable(rt);
        pe_req_t r;

        CHECKF(why && why == pe_heap_unavailable(), "%s", why ? why : "(none)");
        for (const char *const *p =
                 (const char *const[]){"/debug/pprof/heap", "/debug/pprof/delta_heap",
                                       "/allocs_profile_stop", "/heap_snapshot", "/heap_peak",
                                       NULL};
             *p; p++) {
            memset(&r, 0, sizeof(r));
            r.capture = &discard;
            r.method = "GET";
            r.path = *p;
            CHECK(pe_params_parse(&r, "") == 0);
            CHECKF(pe_http_route(&r) == 503, "%s", *p);
            CHECKF(why && !strcmp(r.errmsg, why), "%s: 503 \"%s\", index \"%s\"", *p, r.errmsg,
                   why ? why : "(none)");
        }
    }
    /* A profile a recorded kind builds, and the allocation recording's, has
       its row's types and units. */
    for (size_t j = 0; j < PE_ARRAY_SIZE(kinds); j++) {
        const pe_kind_t *k = kinds[j];
        pe_prof_t *p;

        if (k->build)
            p = k->build(NULL, 0, 0);
        else if (k == &pe_kind_allocs_profile)
            p = pe_heap_allocs_profile(NULL, 0, 1, 0, 0, 0);
        else
            continue;
        CHECKF(p && pe_prof_ntypes(p) == PE_KIND_NTYPES(k), "the %s kind's profile", k->name);
        for (int i = 0; p && i < pe_prof_ntypes(p) && i < PE_KIND_NTYPES(k); i++)
            CHECKF(!strcmp(pe_prof_type(p, i)->type, k->types[i].type) &&
                       !strcmp(pe_prof_type(p, i)->unit, k->types[i].unit),
                   "the %s kind's profile: type %d %s/%s", k->name, i, pe_prof_type(p, i)->type,
                   pe_prof_type(p, i)->unit);
        pe_prof_free(p);
    }
    /* A sampled kind's routes say what the sampler says; its stop always answers. */
    rt = pe_http_find_route("/profile_wall");
    CHECK(rt && pe_http_route_unavailable(rt) == pe_sampler_kinds_unavailable());
    rt = pe_http_find_route("/profile_stop");
    CHECK(rt && rt->kind == &pe_kind_cpu && pe_http_route_unavailable(rt) == NULL);
    return pe_test_done();
}
