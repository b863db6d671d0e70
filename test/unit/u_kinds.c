/*
 * u_kinds: the route table and the profile kinds (sampler/kind.h) agree.
 * Every kind has its routes, served by its family's handlers, which read the
 * kind from the route; a kind's route takes the kind's own `unavailable` (one
 * definition: the index and the 503 say the same); the route's sample_index
 * row (param_table.c) names the kind's types; capture= is listed where the
 * kind takes it.
 */
#include <stdio.h>
#include <string.h>

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

int
main(void)
{
    static pe_sink_t discard = {discard_write, 0};
    const pe_route_t *rt;
    char buf[64];

    /* Every route of a kind: one of its family's handlers, no check of its own. */
    for (int i = 0; i < pe_nroutes; i++) {
        const pe_route_t *r = &pe_routes[i];
        const pe_kind_t *k = r->kind;
        int known = 0;

        CHECKF(!(sampled_handler(r->handler) || recorded_handler(r->handler)) || k,
               "%s: a kind's handler on a route that names no kind", r->path);
        if (!k)
            continue;
        for (size_t j = 0; j < PE_ARRAY_SIZE(kinds); j++)
            known += kinds[j] == k;
        CHECKF(known == 1, "%s: its kind is not in kind.h's PE_KINDS", r->path);
        CHECKF(k->start ? sampled_handler(r->handler) : recorded_handler(r->handler),
               "%s: the %s kind's route has another family's handler", r->path, k->name);
        CHECKF(!r->unavailable, "%s: a second unavailable check beside the %s kind's", r->path,
               k->name);
        /* what sample_index takes and defaults to: the kind's types (fgprof renames them) */
        if (r->handler != pe_http_h_sampled_fgprof && r->params &&
            pe_param_listed(r->params, "sample_index")) {
            const char *def = pe_http_param_default(r->path, "sample_index", buf, sizeof(buf));
            const char *want = k->default_type ? k->default_type : k->types[1].type;
            CHECKF(def && !strcmp(def, want),
                   "%s: sample_index defaults to %s, the %s kind's to %s", r->path,
                   def ? def : "(none)", k->name, want);
        }
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
        CHECKF((k->start != NULL) != (k->build != NULL), "the %s kind is sampled or recorded",
               k->name);
        if (k->start) {
            CHECKF(routes_of(k, pe_http_h_sampled_start) == 1 &&
                       routes_of(k, pe_http_h_sampled_stop) == 1,
                   "the %s kind: one _start and one _stop route", k->name);
            CHECKF(routes_of(k, pe_http_h_sampled) + routes_of(k, pe_http_h_sampled_go) > 0,
                   "the %s kind: no timed profile route", k->name);
        } else {
            CHECKF(routes_of(k, pe_http_h_recorded) == 1 &&
                       routes_of(k, pe_http_h_recorded_delta) == 1,
                   "the %s kind: one cumulative and one delta route", k->name);
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
    /* A sampled kind's routes say what the sampler says; its stop always answers. */
    rt = pe_http_find_route("/profile_wall");
    CHECK(rt && pe_http_route_unavailable(rt) == pe_sampler_kinds_unavailable());
    rt = pe_http_find_route("/profile_stop");
    CHECK(rt && rt->kind == &pe_kind_cpu && pe_http_route_unavailable(rt) == NULL);
    return pe_test_done();
}
