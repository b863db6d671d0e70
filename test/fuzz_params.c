/*
 * fuzz_params: libFuzzer target for the query parser, the typed readers and
 * the router (`make fuzz`).  Input: "METHOD PATH?QUERY" split at the first
 * space and '?'.  Handlers are not run: routes are resolved on a copy whose
 * path never matches a handler, except the 404/405 answers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/http_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const fmts[] = {"pprof", "text", "folded", "svg", NULL};
    char *s = malloc(size + 1), *q;
    pe_req_t r;
    double d;
    int b;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    memset(&r, 0, sizeof(r));
    q = strchr(s, '?');
    if (q)
        *q++ = '\0';
    r.method = "GET";
    r.path = s;
    if (pe_params_parse(&r, q) == 0) {
        pe_param_number(&r, "duration", 10, 0.001, 600, &d);
        pe_param_number(&r, "n", 1e8, 1, 1e9, &d);
        pe_param_bool(&r, "pprof", 1, &b);
        pe_param_enum(&r, "format", fmts, 0, &b);
        /* Route only paths that reach no handler: the 404 path and the lookup. */
        int i, known = !strcmp(s, "/") || !strcmp(s, "/debug/pprof");
        for (i = 0; i < pe_nroutes; i++)
            known |= !strcmp(s, pe_routes[i].path);
        if (!known)
            pe_http_route(&r);
    }
    free(s);
    return 0;
}
