/* u_params: query splitting, percent-decoding, typed readers and their 400s, routing. */
#include <string.h>

#include "http/http.h"
#include "http/http_int.h"
#include "pe_test.h"

static pe_req_t *
req(const char *method, const char *path, const char *query)
{
    static pe_req_t r;

    memset(&r, 0, sizeof(r));
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

    r = req("GET", "/nope", NULL);
    CHECK(pe_http_route(r) == 404);
    r = req("DELETE", "/debug/pprof/cmdline", NULL);
    CHECK(pe_http_route(r) == 405);
    r = req("GET", "/debug_engine", NULL);
    CHECK(pe_http_route(r) == 405);
    return pe_test_done();
}
