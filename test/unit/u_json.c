/*
 * u_json: http/json.c, the reader of /debug_engine's flat JSON object: pairs
 * in order, escapes decoded (\u as UTF-8, surrogate pairs joined), scalars as
 * text, null as no value; nested values, bad escapes, truncated and trailing
 * text refused with the phrase the 400 says; the output buffer's bound.
 */
#include <stdio.h>
#include <string.h>

#include "http/json.h"
#include "pe_test.h"

/* The pairs seen, as "key=val;" ("key=(null);" for null). */
struct seen_s {
    char text[512];
    int n, stop_at;
};

static int
collect(void *arg, const char *key, const char *val, const char **err)
{
    struct seen_s *s = arg;
    size_t len = strlen(s->text);

    if (++s->n == s->stop_at) {
        *err = "stopped";
        return -1;
    }
    snprintf(s->text + len, sizeof(s->text) - len, "%s=%s;", key, val ? val : "(null)");
    return 0;
}

/* Parses text with a buffer of outlen bytes; the pairs in seen, the error or NULL. */
static const char *
parse(const char *text, size_t outlen, struct seen_s *seen)
{
    char out[1024];
    const char *err = "unset";
    int rc;

    memset(seen, 0, sizeof(*seen));
    rc = pe_json_flat_object(text, out, outlen < sizeof(out) ? outlen : sizeof(out), collect, seen,
                             &err);
    CHECKF((rc == 0) == (err == NULL), "%s: rc %d, err %s", text, rc, err ? err : "(none)");
    return rc ? err : NULL;
}

static void
ok(const char *text, const char *want)
{
    struct seen_s s;
    const char *err = parse(text, 1024, &s);

    CHECKF(!err && !strcmp(s.text, want), "%s: %s, want %s", text, err ? err : s.text, want);
}

static void
bad(const char *text, const char *want_err)
{
    struct seen_s s;
    const char *err = parse(text, 1024, &s);

    CHECKF(err && !strcmp(err, want_err), "%s: %s, want the error %s", text, err ? err : "no error",
           want_err);
}

static void
test_values(void)
{
    ok("{}", "");
    ok(" \t\r\n{ } \n", "");
    ok("{\"profile_type\":\"cpu_profile\",\"duration\":2}", "profile_type=cpu_profile;duration=2;");
    ok("{\"a\": -1.5e3, \"b\": true, \"c\": false, \"d\": null}",
       "a=-1.5e3;b=true;c=false;d=(null);");
    ok("{\"k\":\"\"}", "k=;");
    /* the same key twice: both, in order (the caller decides) */
    ok("{\"a\":\"1\",\"a\":\"2\"}", "a=1;a=2;");
}

static void
test_escapes(void)
{
    ok("{\"e\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"}", "e=q\" b\\ s/ \b\f\n\r\t;");
    ok("{\"u\":\"\\u0041\\u00e9\\u20AC\"}", "u=A\xc3\xa9\xe2\x82\xac;");
    ok("{\"u\":\"\\ud83d\\ude00\"}", "u=\xf0\x9f\x98\x80;"); /* a surrogate pair: one code point */
    ok("{\"\\u006b\":1}", "k=1;");                           /* keys are decoded too */
    bad("{\"u\":\"\\u0000\"}", "bad \\u escape");            /* would cut the string */
    bad("{\"u\":\"\\ud83d\"}", "bad \\u escape");            /* a lone surrogate */
    bad("{\"u\":\"\\ude00\\ud83d\"}", "bad \\u escape");     /* the pair reversed */
    bad("{\"u\":\"\\u12\"}", "bad \\u escape");
    bad("{\"u\":\"\\x41\"}", "bad escape in a string");
    bad("{\"u\":\"a\tb\"}", "control character in a string");
}

static void
test_bad(void)
{
    bad("", "expected a JSON object");
    bad("[1]", "expected a JSON object");
    bad("{\"a\":{\"b\":1}}", "values must be strings, numbers or booleans (no objects or arrays)");
    bad("{\"a\":[1,2]}", "values must be strings, numbers or booleans (no objects or arrays)");
    bad("{\"a\":1", "expected ',' or '}'");
    bad("{\"a\":1,}", "expected a string");
    bad("{\"a\" 1}", "expected ':'");
    bad("{a:1}", "expected a string");
    bad("{\"a\":\"open", "unterminated string");
    bad("{\"a\":\"open\\", "unterminated string");
    bad("{\"a\":1.2.3}", "bad value");
    bad("{\"a\":-}", "bad value");
    bad("{\"a\":tru}", "bad value");
    bad("{\"a\":1} x", "text after the object");
    bad("{\"a\":1}{}", "text after the object");
}

static void
test_bounds(void)
{
    struct seen_s s;
    const char *err;

    /* "k\0" "vv\0": 5 bytes; the buffer must hold them and one more */
    err = parse("{\"k\":\"vv\"}", 6, &s);
    CHECKF(!err && !strcmp(s.text, "k=vv;"), "%s", err ? err : s.text);
    err = parse("{\"k\":\"vv\"}", 5, &s);
    CHECKF(err && !strcmp(err, "the parameters are too long"), "%s", err ? err : s.text);
    err = parse("{\"k\":12345}", 4, &s);
    CHECKF(err && !strcmp(err, "the parameters are too long"), "%s", err ? err : s.text);
    /* the callback stops the parse with its own phrase */
    memset(&s, 0, sizeof(s));
    {
        char out[64];
        const char *e = NULL;

        s.stop_at = 2;
        CHECK(pe_json_flat_object("{\"a\":1,\"b\":2,\"c\":3}", out, sizeof(out), collect, &s, &e) ==
              -1);
        CHECKF(e && !strcmp(e, "stopped") && !strcmp(s.text, "a=1;"), "%s %s", e ? e : "", s.text);
    }
}

int
main(void)
{
    test_values();
    test_escapes();
    test_bad();
    test_bounds();
    return pe_test_done();
}
