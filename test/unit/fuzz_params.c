/*
 * fuzz_params: libFuzzer target for everything that parses client input or
 * settings (`make fuzz`): the query parser and typed readers (params.c), the
 * router with its 404/405 answers (routes.c), the quick handlers that read
 * the request (index, cmdline, Go's symbol protocol with GET query or POST
 * body), the PROFEP_* value parsers and the loader with the text as every
 * row's value (config.c), the Host / Origin / Sec-Fetch-Site checks
 * (origin.c, with PROFEP_ALLOWED_HOSTS parsed from the same text), the
 * CSP's script-hash scanner (csp.c, on the body) and /debug_engine's JSON
 * reader (json.c, on the body, with a buffer as small as a request's).
 *
 * The router checks every key for a typo of its route's parameters
 * (pe_params_check, also on /debug_engine's JSON keys).
 *
 * Input: "[METHOD ]PATH[?QUERY][\nBODY]"; a body makes it a POST.  Handlers
 * that profile for a while are not run; their paths stop at the lookup.
 * test/unit/u_fuzz_corpus.c replays test/unit/corpus/ through this same function in
 * `make test` (also under ASan+UBSan), so every crasher kept there is a test.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/http_int.h"
#include "http/json.h"
#include "preload/config.h"
#include "preload/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where handler output goes: counted, then dropped. */
static int
discard_write(pe_sink_t *sink, const void *buf, size_t len)
{
    return 0;
}

static int
quick_handler(pe_http_handler_t h)
{
    return h == pe_http_h_index || h == pe_http_h_cmdline || h == pe_http_h_symbol;
}

static void
fuzz_config(const char *s)
{
    char host[96], path[256];
    int64_t size;
    double secs;
    int port, off, sig, b;

    pe_cfg_parse_addr(s, host, sizeof(host), &port, &off);
    pe_cfg_parse_size(s, &size);
    pe_cfg_parse_seconds(s, &secs);
    pe_cfg_parse_signal(s, &sig);
    pe_cfg_parse_bool(s, &b);
    pe_cfg_expand_pid(s, path, sizeof(path), 4242);
    pe_cfg_token_problem(s);
}

/* The text as the value of every PROFEP_* row, through the loader (quietly:
   PROFEP_LOG=off); pe_cfg is left zeroed, as the other targets expect it. */
static void
fuzz_config_load(const char *s)
{
    int i;

    for (i = 0; i < pe_cfg_nrows; i++)
        setenv(pe_cfg_rows[i].name, strcmp(pe_cfg_rows[i].name, "PROFEP_LOG") ? s : "off", 1);
    pe_cfg_load();
    for (i = 0; i < pe_cfg_nrows; i++)
        unsetenv(pe_cfg_rows[i].name);
    memset(&pe_cfg, 0, sizeof(pe_cfg));
    pe_log_set_level(PE_LOG_INFO);
}

/* Every pair the JSON reader hands out is two strings within its buffer. */
static int
json_pair(void *arg, const char *key, const char *val, const char **err)
{
    size_t *n = arg;

    *n += strlen(key) + (val ? strlen(val) : 0);
    (void)err;
    return 0;
}

/* The text as a Host, an Origin and a Sec-Fetch-Site, and as an allowed-hosts list. */
static void
fuzz_origin(const char *s)
{
    char allowed[256];
    const char *bad;
    pe_http_self_t self = {"127.0.0.1", 16825, 0, allowed};
    pe_http_self_t any = {"0.0.0.0", 80, 1, "*"};

    pe_cfg_parse_hosts(s, allowed, sizeof(allowed), &bad);
    pe_http_authority_ok(&self, s, strlen(s), 80);
    pe_http_authority_ok(&any, s, strlen(s), 443);
    pe_http_origin_ok(&self, s);
    pe_http_origin_ok(&any, s);
    pe_http_fetch_site_ok(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const fmts[] = {"pprof", "text", "folded", "svg", NULL};
    static pe_req_t r; /* 3 kB: keep it off the fuzzer's stack */
    pe_sink_t discard = {discard_write, 0};
    char *s = malloc(size + 1), *path, *q, *body, *sp;
    const pe_route_t *route = NULL;
    double d;
    int b, i;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    memset(&r, 0, sizeof(r));
    r.method = "GET";
    body = strchr(s, '\n');
    if (body) {
        *body++ = '\0';
        r.method = "POST";
        r.body = body;
        r.body_len = strlen(body);
    }
    path = s;
    sp = strchr(s, ' ');
    if (s[0] != '/' && sp) { /* "METHOD /path" */
        *sp = '\0';
        r.method = s;
        path = sp + 1;
    }
    q = strchr(path, '?');
    if (q)
        *q++ = '\0';
    r.path = path;
    r.capture = &discard;
    fuzz_config(path);
    fuzz_config_load(path);
    fuzz_origin(path);
    if (q) {
        fuzz_config(q);
        fuzz_origin(q);
    }
    if (body) {
        static char decoded[sizeof(r.qbuf)]; /* as /debug_engine's sub-request has */
        char hashes[512];
        const char *err;
        size_t n = 0;

        pe_http_script_hashes(body, strlen(body), hashes, sizeof(hashes));
        pe_json_flat_object(body, decoded, sizeof(decoded), json_pair, &n, &err);
    }
    if (pe_params_parse(&r, q) == 0) {
        pe_param_number(&r, "duration", 10, 0.001, 600, &d);
        pe_param_number(&r, "n", 1e8, 1, 1e9, &d);
        pe_param_bool(&r, "pprof", 1, &b);
        pe_param_enum(&r, "format", fmts, 0, &b);
        for (i = 0; i < r.nparams; i++) {
            /* did-you-mean: every key against a name of each length class */
            pe_param_distance(r.params[i].key, "duration");
            pe_param_distance(r.params[i].key, "n");
            fuzz_config(r.params[i].val);
            fuzz_origin(r.params[i].val);
        }
        /* Route everything whose handler answers at once. */
        route = pe_http_find_route(path);
        if (!route || quick_handler(route->handler))
            pe_http_route(&r);
        else /* the long ones: only the router's typo check */
            pe_http_check_params(&r, route);
    }
    free(s);
    return 0;
}
