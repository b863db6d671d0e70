/*
 * u_origin: who may ask (http/origin.c): Host names this server (name and
 * port), PROFEP_ALLOWED_HOSTS entries, Origin and Sec-Fetch-Site; the
 * settings behind them (config.c: allowed hosts, token values); and the
 * CSP's SHA-256 and script hashes (http/csp.c) against known values.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_int.h"
#include "http/sha256.h"
#include "pe_test.h"
#include "preload/config.h"

static int
host_ok(const pe_http_self_t *self, const char *h)
{
    return pe_http_authority_ok(self, h, strlen(h), self->tls ? 443 : 80);
}

static void
test_host(void)
{
    pe_http_self_t lo = {"127.0.0.1", 16825, 0, ""};
    pe_http_self_t any = {"0.0.0.0", 16825, 0, ""};
    pe_http_self_t ip = {"10.1.2.3", 16825, 0, ""};
    pe_http_self_t p80 = {"127.0.0.1", 80, 0, ""};
    pe_http_self_t list = {"127.0.0.1", 16825, 0, "prof.example,tunnel.example:9999,[::2]"};
    pe_http_self_t star = {"127.0.0.1", 16825, 0, "*"};
    static const char *const good[] = {"127.0.0.1:16825", "localhost:16825", "LocalHost:16825",
                                       "[::1]:16825"};
    static const char *const bad[] = {
        "evil.example",
        "evil.example:16825",
        "127.0.0.1",
        "localhost",
        "127.0.0.1:16826",
        "127.0.0.1:80",
        "localhost:0",
        "127.0.0.1:016825x",
        "127.0.0.1:",
        ":16825",
        "",
        "[::1]",
        "[::1",
        "[]:16825",
        "127.0.0.1:1682500",
        "127.0.0.1:99999",
        "localhost.:16825",
        "a b:16825",
        "127.0.0.1:16825/x",
        "user@127.0.0.1:16825",
        "[::1]x:16825",
        "127.0.0.1:+16825",
        "10.1.2.3:16825",
        "0.0.0.0:16825",
    };
    size_t i;

    for (i = 0; i < PE_ARRAY_SIZE(good); i++)
        CHECKF(host_ok(&lo, good[i]), "%s", good[i]);
    for (i = 0; i < PE_ARRAY_SIZE(bad); i++)
        CHECKF(!host_ok(&lo, bad[i]), "%s", bad[i]);
    /* Bound to one non-loopback address: its literal too, with our port. */
    CHECK(host_ok(&ip, "10.1.2.3:16825") && host_ok(&ip, "localhost:16825"));
    CHECK(!host_ok(&ip, "10.1.2.3:80") && !host_ok(&ip, "10.1.2.4:16825"));
    /* Bound to every address: any IPv4 literal with our port, never a name. */
    CHECK(host_ok(&any, "192.168.7.9:16825") && host_ok(&any, "127.0.0.1:16825"));
    CHECK(!host_ok(&any, "evil.example:16825") && !host_ok(&any, "192.168.7.9:1"));
    CHECK(!host_ok(&any, "0x7f.1:16825") && !host_ok(&any, "127.1:16825"));
    /* Without a port only when ours is the scheme's default. */
    CHECK(host_ok(&p80, "localhost") && host_ok(&p80, "127.0.0.1:80"));
    CHECK(!host_ok(&p80, "evil.example"));
    /* The list: a bare name with any port, name:port exactly. */
    CHECK(host_ok(&list, "prof.example") && host_ok(&list, "PROF.example:443"));
    CHECK(host_ok(&list, "tunnel.example:9999") && !host_ok(&list, "tunnel.example:9998"));
    CHECK(!host_ok(&list, "tunnel.example") && !host_ok(&list, "prof.example.evil"));
    CHECK(!host_ok(&list, "xprof.example:16825") && host_ok(&list, "[::2]:1"));
    CHECK(host_ok(&star, "anything.example:1") && !host_ok(&star, "bad name"));
}

static void
test_origin(void)
{
    pe_http_self_t lo = {"127.0.0.1", 16825, 0, ""};
    pe_http_self_t tls = {"127.0.0.1", 16825, 1, ""};

    CHECK(pe_http_origin_ok(&lo, "http://127.0.0.1:16825"));
    CHECK(pe_http_origin_ok(&lo, "http://localhost:16825"));
    CHECK(!pe_http_origin_ok(&lo, "null"));
    CHECK(!pe_http_origin_ok(&lo, "http://evil.example"));
    CHECK(!pe_http_origin_ok(&lo, "http://evil.example:16825"));
    CHECK(!pe_http_origin_ok(&lo, "https://127.0.0.1:16825")); /* another scheme: another origin */
    CHECK(!pe_http_origin_ok(&lo, "http://127.0.0.1:16825/"));
    CHECK(!pe_http_origin_ok(&lo, "http://127.0.0.1"));
    CHECK(!pe_http_origin_ok(&lo, ""));
    CHECK(pe_http_origin_ok(&tls, "https://127.0.0.1:16825"));
    CHECK(!pe_http_origin_ok(&tls, "http://127.0.0.1:16825"));

    CHECK(pe_http_fetch_site_ok("none") && pe_http_fetch_site_ok("same-origin"));
    CHECK(!pe_http_fetch_site_ok("cross-site") && !pe_http_fetch_site_ok("same-site"));
    CHECK(!pe_http_fetch_site_ok("") && !pe_http_fetch_site_ok("whatever"));
}

static void
test_settings(void)
{
    char out[64], big[9000];
    const char *bad;

    CHECK(pe_cfg_parse_hosts("Prof.Example, a:1 ,b", out, sizeof(out), &bad) == 0);
    CHECK(!strcmp(out, "prof.example,a:1,b") && !bad);
    CHECK(pe_cfg_parse_hosts("good,bad/name,x:99999,*", out, sizeof(out), &bad) == -EINVAL);
    CHECKF(!strcmp(out, "good,*") && bad && !strncmp(bad, "bad/name", 8), "%s", out);
    CHECK(pe_cfg_parse_hosts("[::1]:80", out, sizeof(out), &bad) == 0 && !strcmp(out, "[::1]:80"));
    CHECK(pe_cfg_parse_hosts(
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", out,
              sizeof(out), &bad) == -ENAMETOOLONG &&
          !out[0]);

    CHECK(pe_cfg_token_problem("s3cret") == NULL);
    CHECK(pe_cfg_token_problem("with inner space") == NULL);
    CHECK(pe_cfg_token_problem("") != NULL);
    CHECK(pe_cfg_token_problem(" lead") != NULL && pe_cfg_token_problem("trail ") != NULL);
    CHECK(pe_cfg_token_problem("new\nline") != NULL && pe_cfg_token_problem("\xc3\xa9") != NULL);
    memset(big, 'x', sizeof(big));
    big[PE_CFG_TOKEN_MAX] = '\0';
    CHECK(pe_cfg_token_problem(big) == NULL); /* 8192: usable */
    big[PE_CFG_TOKEN_MAX] = 'x';
    big[PE_CFG_TOKEN_MAX + 1] = '\0';
    CHECK(pe_cfg_token_problem(big) != NULL);
}

static void
test_hashes(void)
{
    char b64[45], out[256];
    static const char doc[] = "<svg><script type=\"text/ecmascript\"><![CDATA[\nabc\n]]></script>"
                              "<script>abc</script></svg>";
    static const char abc_b64[] = "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=";

    /* The digests themselves: u_sha256. */
    /* A CDATA script hashes its content; two scripts give two hashes. */
    CHECK(pe_http_script_hashes(doc, strlen(doc), out, sizeof(out)) == 0);
    pe_sha256_b64("\nabc\n", 5, b64);
    CHECKF(!strncmp(out, "'sha256-", 8) && !strncmp(out + 8, b64, 44) &&
               strstr(out, abc_b64) != NULL,
           "%s", out);
    CHECK(pe_http_script_hashes("<script>x", 9, out, sizeof(out)) < 0);
    CHECK(pe_http_script_hashes("<p>no script</p>", 16, out, sizeof(out)) == 0 && !out[0]);

    /* The policies: SVG allows one script by hash, HTML none; others get none. */
    CHECKF(strstr(pe_http_csp("image/svg+xml"), "script-src 'sha256-") != NULL, "%s",
           pe_http_csp("image/svg+xml"));
    CHECK(strstr(pe_http_csp("image/svg+xml"), "default-src 'none'") != NULL);
    CHECK(strstr(pe_http_csp("text/html; charset=utf-8"), "script-src") == NULL);
    CHECK(strstr(pe_http_csp("text/html; charset=utf-8"), "default-src 'none'") != NULL);
    CHECK(pe_http_csp("text/plain; charset=utf-8") == NULL);
}

int
main(void)
{
    test_host();
    test_origin();
    test_settings();
    test_hashes();
    return pe_test_done();
}
