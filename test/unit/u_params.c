/* u_params: query splitting, percent-decoding, typed readers and their 400s, routing. */
#include <stdio.h>
#include <string.h>

#include "http/http.h"
#include "http/http_int.h"
#include "pe_test.h"
#include "preload/config.h"

static int
discard_write(pe_sink_t *sink, const void *buf, size_t len)
{
    (void)sink, (void)buf, (void)len;
    return 0;
}

static pe_req_t *
req(const char *method, const char *path, const char *query)
{
    static pe_req_t r;
    static pe_sink_t discard = {discard_write, 0};

    memset(&r, 0, sizeof(r));
    r.capture = &discard; /* handlers that answer write here */
    r.method = method;
    r.path = path;
    CHECK(pe_params_parse(&r, query) == 0);
    return &r;
}

int
main(void)
{
    static const char *const fmts[] = {"pprof", "text", NULL};
    pe_req_t *r;
    double d;
    int b, e;
    char big[5000];

    pe_cfg.max_seconds = 600; /* PROFEP_MAX_SECONDS's default */

    r = req("GET", "/profile", "duration=5&delay=0.01&n=1e8&x=%41%2b&flag&pprof=false");
    CHECK(r->nparams == 6);
    CHECK(pe_param_number(r, "duration", 10, 0.001, 600, &d) == 0 && d == 5);
    CHECK(pe_param_number(r, "delay", 0.1, 1e-6, 1, &d) == 0 && d == 0.01);
    CHECK(pe_param_number(r, "n", 0, 1, 1e9, &d) == 0 && d == 1e8);
    CHECK(pe_param_number(r, "absent", 7, 0, 10, &d) == 0 && d == 7);
    CHECK(!strcmp(pe_param(r, "x"), "A+"));
    CHECK(!strcmp(pe_param(r, "flag"), ""));
    CHECK(pe_param_bool(r, "pprof", 1, &b) == 0 && b == 0);

    r = req("GET", "/profile", "duration=abc");
    CHECK(pe_param_number(r, "duration", 10, 0.001, 600, &d) == 400);
    CHECK(strstr(r->errmsg, "duration=abc") && strstr(r->errmsg, "600"));
    r = req("GET", "/profile", "duration=1e9");
    CHECK(pe_param_number(r, "duration", 10, 0.001, 600, &d) == 400);
    r = req("GET", "/profile", "duration=inf");
    CHECK(pe_param_number(r, "duration", 10, 0.001, 600, &d) == 400);
    r = req("GET", "/profile", "duration=0x10");
    CHECK(pe_param_number(r, "duration", 10, 0.001, 600, &d) == 400);
    r = req("GET", "/profile", "pprof=maybe&format=xml");
    CHECK(pe_param_bool(r, "pprof", 1, &b) == 400);
    CHECK(pe_param_enum(r, "format", fmts, 0, &e) == 400 && strstr(r->errmsg, "pprof, text"));
    r = req("GET", "/p", "a=%zz&b=%4");
    CHECK(!strcmp(pe_param(r, "a"), "%zz") && !strcmp(pe_param(r, "b"), "%4"));

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    {
        pe_req_t r2;
        memset(&r2, 0, sizeof(r2));
        CHECK(pe_params_parse(&r2, big) < 0);
        CHECK(pe_params_parse(
                  &r2, "a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a&a") < 0);
    }

    /* Typos: within two edits (a swap counts one) of a parameter of that endpoint. */
    CHECK(pe_param_distance("duration", "duration") == 0);
    CHECK(pe_param_distance("duraton", "duration") == 1);
    CHECK(pe_param_distance("duraiton", "duration") == 1);
    CHECK(pe_param_distance("durashun", "duration") == 3);
    CHECK(pe_param_distance("secs", "seconds") == 3);
    CHECK(pe_param_distance("", "mem") == 3);
    CHECK(pe_param_listed("n delay duration", "delay") && !pe_param_listed("n delay", "dela"));
    CHECK(!pe_param_listed(NULL, "x"));
    r = req("GET", "/profile", "duraton=5");
    CHECK(pe_http_route(r) == 400);
    CHECK(!strcmp(r->errmsg, "unknown parameter \"duraton\": did you mean \"duration\"?"));
    r = req("GET", "/debug/pprof/heap", "debg=1");
    CHECK(pe_http_route(r) == 400 && strstr(r->errmsg, "did you mean \"debug\""));
    r = req("GET", "/debug/pprof/trace", "secnods=1");
    CHECK(pe_http_route(r) == 400 && strstr(r->errmsg, "\"seconds\""));
    r = req("GET", "/debug/pprof/cmdline", "tokne=x");
    CHECK(pe_http_route(r) == 400 && strstr(r->errmsg, "\"token\""));
    r = req("GET", "/debug/pprof/profile", "Seconds=1");
    CHECK(pe_http_route(r) == 400 && strstr(r->errmsg, "\"seconds\""));
    /* Not typos: far from every name, too short, or another endpoint's parameter. */
    r = req("GET", "/debug/pprof/cmdline", "scraper_job=x&ts=1&gc=1&_=2");
    CHECK(pe_http_route(r) == 200);
    r = req("GET", "/debug/pprof/cmdline", "seconds=5&duration=1");
    CHECK(pe_http_route(r) == 200);
    /* The symbol protocol's query is an address list. */
    r = req("GET", "/debug/pprof/symbol", "0x1+0x2");
    CHECK(pe_http_route(r) == 200);
    /* Within a route no two names are one edit apart (min_age, max_age are
       two), and every name fits the distance table. */
    for (e = 0; e < pe_nroutes; e++) {
        const char *l = pe_routes[e].params, *m;
        char a[64], c[64];
        int n, k;

        for (; l && sscanf(l, "%63s%n", a, &n) == 1; l += n) {
            CHECKF(strlen(a) < 32, "%s: %s", pe_routes[e].path, a);
            for (m = l + n; sscanf(m, "%63s%n", c, &k) == 1; m += k)
                CHECKF(strlen(a) < 3 || strlen(c) < 3 || pe_param_distance(a, c) > 1,
                       "%s: %s and %s", pe_routes[e].path, a, c);
        }
    }

    /* Every value is checked before the handler: a wrong output parameter is
       answered before a profile is taken (param_table.c), naming it. */
    for (e = 0; e < pe_nroutes; e++) {
        const char *l = pe_routes[e].params;
        char a[64];
        int n;

        for (; l && sscanf(l, "%63s%n", a, &n) == 1; l += n)
            CHECKF(pe_http_param_known(pe_routes[e].path, a), "%s: %s has no row",
                   pe_routes[e].path, a);
    }
    {
        static const char *const bad[][2] = {
            {"/profile", "format=svgx"},
            {"/profile", "granularity=bogus"},
            {"/profile", "names="},
            {"/profile", "sample_index=bogus"},
            {"/profile", "sample_index=inuse_space"},
            {"/profile", "sample_index=2"},
            {"/profile", "mincount="},
            {"/profile", "maxdepth=-1"},
            {"/profile", "pprof=maybe"},
            {"/profile", "groupby=threads"},
            {"/profile_wall", "capture=proc"},
            {"/debug/pprof/heap", "seconds=3&sample_index=bogus"},
            {"/debug/pprof/heap", "seconds=3&format=svgx"},
            {"/debug/fgprof", "sample_index=cpu"},
            {"/debug/pprof/trace", "gzip=maybe"},
            {"/heap_timeline", "format=pprof"},
        };
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            const char *amp = strrchr(bad[i][1], '&');

            r = req("GET", bad[i][0], bad[i][1]);
            CHECKF(pe_http_route(r) == 400, "%s?%s", bad[i][0], bad[i][1]);
            /* the line names parameter and value, and what is allowed */
            CHECKF(strstr(r->errmsg, amp ? amp + 1 : bad[i][1]) && strstr(r->errmsg, "must be"),
                   "%s?%s: %s", bad[i][0], bad[i][1], r->errmsg);
        }
        static const char *const good[][2] = {
            {"/profile", "sample_index=cpu&format=folded&maxdepth=3&names=full"},
            {"/profile", "sample_index=1&granularity=lines&mincount=2"},
            {"/debug/pprof/heap", "sample_index=inuse_objects&debug=1"},
            {"/heap_timeline", "format=json&seconds=60"},
            {"/debug/pprof/goroutine", "capture=proc&sample_index=goroutine"},
        };

        for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
            for (e = 0; e < pe_nroutes && strcmp(pe_routes[e].path, good[i][0]); e++)
                ;
            r = req("GET", good[i][0], good[i][1]);
            CHECKF(e < pe_nroutes && pe_http_check_params(r, &pe_routes[e]) == 0, "%s?%s: %s",
                   good[i][0], good[i][1], r->errmsg);
        }
    }

    r = req("GET", "/nope", NULL);
    CHECK(pe_http_route(r) == 404);
    r = req("DELETE", "/debug/pprof/cmdline", NULL);
    CHECK(pe_http_route(r) == 405);
    r = req("GET", "/debug_engine", NULL);
    CHECK(pe_http_route(r) == 405);
    return pe_test_done();
}
