/*
 * u_views.c: unit tests for the views for people: the folded and SVG encoders
 * on hand-built profiles (PCs inside this binary's own functions, so names are
 * known), the format / sample_index / Accept dispatch of pe_http_send_profile,
 * and /debug_engine's parsing, error paths and file handling.
 *
 *   u_views             run the tests
 *   u_views --dump DIR  write DIR/views.pb.gz and DIR/views.<type>.folded of the
 *                       fixed profile, for the round trip through go tool pprof
 *                       in test/e2e/e2e_views.sh
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/http_int.h"
#include "pe_test.h"
#include "preload/config.h"
#include "profile/profile.h"
#include "proto/pprof.h"
#include "render/render.h"

/* ---- functions whose addresses we sample ------------------------------------------- */

static volatile int sink_v;

void views_leaf_a(int n);
void views_leaf_b(int n);
void views_mid(int n);
void views_top(int n);

__attribute__((noinline)) void
views_leaf_a(int n)
{
    sink_v += n * 3;
}

__attribute__((noinline)) void
views_leaf_b(int n)
{
    sink_v ^= n * 5;
}

__attribute__((noinline)) void
views_mid(int n)
{
    views_leaf_a(n);
    views_leaf_b(n);
    sink_v++;
}

__attribute__((noinline)) void
views_top(int n)
{
    views_mid(n);
    views_mid(n + 1);
    sink_v--;
}

/* A PC inside fn (past its first bytes, so it is not at the symbol's start). */
#define PC(fn) ((uintptr_t)(void *)(fn) + 4)

static const pe_prof_vt_t types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
static const pe_prof_vt_t period = {"cpu", "nanoseconds"};

/*
 * The fixed profile.  Folded (samples), outermost first:
 *   [weird <&>"' name_x_] 1
 *   views_top;views_mid 4
 *   views_top;views_mid;views_leaf_a 5     (two threads: 3 + 2, merged)
 *   views_top;views_mid;views_leaf_b 1
 * plus views_top;views_leaf_b with 0 samples but 5 ns.
 */
static pe_prof_t *
fixed_profile(void)
{
    pe_prof_t *p = pe_prof_new(types, 2, &period, 10000000);
    uintptr_t a[] = {PC(views_leaf_a), PC(views_mid), PC(views_top)};
    uintptr_t b[] = {PC(views_leaf_b), PC(views_mid), PC(views_top)};
    uintptr_t m[] = {PC(views_mid), PC(views_top)};
    uintptr_t z[] = {PC(views_leaf_b), PC(views_top)};
    pe_prof_label_t t1[] = {{.key = "thread", .num = 1}};
    pe_prof_label_t t2[] = {{.key = "thread", .num = 2}};
    int64_t v3[] = {3, 30000000}, v2[] = {2, 20000000}, v1[] = {1, 10000000};
    int64_t v4[] = {4, 40000000}, v0[] = {0, 5};

    if (!p)
        return NULL;
    if (pe_prof_add(p, a, 3, 1, v3, t1, 1) || pe_prof_add(p, a, 3, 1, v2, t2, 1) ||
        pe_prof_add(p, b, 3, 1, v1, t1, 1) || pe_prof_add(p, m, 2, 1, v4, t1, 1) ||
        pe_prof_add(p, z, 2, 1, v0, t2, 1) ||
        pe_prof_add_named(p, "[weird <&>\"' name;x\n]", v1, NULL, 0)) {
        pe_prof_free(p);
        return NULL;
    }
    return p;
}

/* ---- sinks -------------------------------------------------------------------------- */

/* Counts writes, the largest one, and fails with -EPIPE after `fail_after` bytes. */
typedef struct count_sink_s {
    pe_sink_t sink;
    size_t bytes, writes, biggest, fail_after;
} count_sink_t;

static int
count_write(pe_sink_t *s, const void *buf, size_t len)
{
    count_sink_t *c = (count_sink_t *)s;

    (void)buf;
    if (c->fail_after && c->bytes + len > c->fail_after)
        return -EPIPE;
    c->bytes += len;
    c->writes++;
    if (len > c->biggest)
        c->biggest = len;
    return 0;
}

static char *
render(pe_prof_t *p, int svg, int vi, int *err)
{
    pe_membuf_t mb;
    char *s;

    pe_membuf_init(&mb);
    *err = svg ? pe_prof_write_svg(p, &mb.sink, vi, "t<i>tle & \"q\"")
               : pe_prof_write_folded(p, &mb.sink, vi);
    s = malloc(mb.len + 1);
    if (s) {
        memcpy(s, mb.data ? mb.data : "", mb.len);
        s[mb.len] = '\0';
    }
    pe_membuf_free(&mb);
    return s;
}

static int
count_of(const char *hay, const char *needle)
{
    int n = 0;

    while ((hay = strstr(hay, needle)) != NULL) {
        n++;
        hay += strlen(needle);
    }
    return n;
}

/* ---- folded ------------------------------------------------------------------------- */

static void
test_folded(void)
{
    pe_prof_t *p = fixed_profile();
    char *s;
    int err;

    CHECK(p != NULL);
    if (!p)
        return;
    s = render(p, 0, 0, &err);
    CHECK(err == 0);
    CHECKF(s && !strcmp(s, "[weird <&>\"' name_x_] 1\n"
                           "views_top;views_mid 4\n"
                           "views_top;views_mid;views_leaf_a 5\n"
                           "views_top;views_mid;views_leaf_b 1\n"),
           "folded samples:\n%s", s);
    free(s);
    /* -1 is the default type (the last: cpu); the 0-sample stack has 5 ns. */
    s = render(p, 0, -1, &err);
    CHECK(err == 0);
    CHECKF(s && strstr(s, "views_top;views_mid;views_leaf_a 50000000\n") &&
               strstr(s, "views_top;views_leaf_b 5\n"),
           "folded cpu:\n%s", s);
    free(s);
    s = render(p, 0, 7, &err);
    CHECK(err == -EINVAL);
    free(s);
    pe_prof_free(p);
}

/* ---- svg ---------------------------------------------------------------------------- */

static void
test_svg(void)
{
    pe_prof_t *p = fixed_profile();
    char *s, *e;
    int err, n;

    if (!p)
        return;
    s = render(p, 1, 0, &err);
    CHECK(err == 0);
    if (!s) {
        pe_prof_free(p);
        return;
    }
    CHECK(!strncmp(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"", 36));
    n = (int)strlen(s);
    CHECK(n > 20 && !strcmp(s + n - 7, "</svg>\n"));
    CHECK(strstr(s, "<title>t&lt;i&gt;tle &amp; &quot;q&quot;</title>") != NULL);
    /* One box per frame: all, views_top, views_mid, a, b, the weird one. */
    CHECKF(count_of(s, "<g class=\"f") == 6, "%d boxes", count_of(s, "<g class=\"f"));
    CHECK(strstr(s, "<title>all (11 samples, 100.00%)</title>") != NULL);
    CHECK(strstr(s, "<title>views_top (10 samples, 90.91%)</title>") != NULL);
    CHECK(strstr(s, "<title>views_leaf_a (5 samples, 45.45%)</title>") != NULL);
    CHECK(strstr(s, "<title>[weird &lt;&amp;&gt;&quot;&apos; name;x?] (1 samples, 9.09%)") != NULL);
    CHECK(strstr(s, "<![CDATA[") != NULL && strstr(s, "function zoom(") != NULL &&
          strstr(s, "function search(") != NULL);
    /* No raw markup from names: only the script holds '<' or '&' outside tags. */
    e = strstr(s, "<script");
    CHECK(e && count_of(s, "&lt;&amp;&gt;") == 3); /* data-n, title and label */
    CHECK(strstr(s, "http://") == strstr(s, "http://www.w3.org/2000/svg")); /* no fetches */
    free(s);
    /* cpu: the 0-sample stack has a width in ns, and values read as times. */
    s = render(p, 1, 1, &err);
    CHECK(err == 0 && s && strstr(s, "<title>views_mid (100.00 ms, 90.91%)</title>"));
    free(s);
    pe_prof_free(p);
}

/* Long names are cut to fit their box; bad UTF-8 and control bytes become '?'. */
static void
test_svg_labels(void)
{
    pe_prof_t *p = pe_prof_new(types, 2, &period, 1);
    char longname[400], *s;
    int64_t big[] = {1, 100}, small[] = {1, 50};
    int err;

    if (!p)
        return;
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    CHECK(pe_prof_add_named(p, longname, big, NULL, 0) == 0);
    CHECK(pe_prof_add_named(p, "bad\xff\xc3(utf8)\x01\xe2\x82\xac", small, NULL, 0) == 0);
    s = render(p, 1, 1, &err);
    CHECK(err == 0 && s);
    if (s) {
        /* 2/3 of 1180 px, (786.67 - 6) / 7.3 = 106 characters: 104 and "..". */
        CHECKF(strstr(s, ">xxxxxxxxxx") && count_of(s, "x..</text>") == 1, "long label");
        CHECK(strstr(s, "bad?"
                        "?(utf8)?\xe2\x82\xac") != NULL);
    }
    free(s);
    pe_prof_free(p);
}

/* Small boxes: a label is drawn whole, or cut where a useful part of it fits (at least
   4 characters after "std::"-like qualifiers and leading underscores), else not at all:
   never "s..", "st..", "std..", "std::__i..". */
static void
test_svg_small_labels(void)
{
    pe_prof_t *p = pe_prof_new(types, 2, &period, 1);
    static const char *const stems[] = {"sleep_for_a_while", "std::__introsort_loop", "f"};
    int64_t v[] = {1, 0};
    char name[64], *s, *t;
    int err, i, k, cuts = 0, whole = 0;
    int64_t w;

    if (!p)
        return;
    /* widths from a pixel to a fifth of the graph, 1.3 times apart */
    for (i = 0, w = 10; i < 20; i++, w = w * 14 / 10) {
        for (k = 0; k < 3; k++) {
            snprintf(name, sizeof(name), "%s%s%d", stems[k], k == 2 ? "" : "_", i);
            v[1] = w * (k == 2 ? 1 : 3);
            CHECK(pe_prof_add_named(p, name, v, NULL, 0) == 0);
        }
    }
    s = render(p, 1, 1, &err);
    CHECK(err == 0 && s);
    for (t = s; t && (t = strstr(t, "<text class=\"l\"")) != NULL; t++) {
        char *b = strchr(t, '>') + 1, *e = strstr(b, "</text>");
        int n = (int)(e - b), q = 0;

        if (n >= 2 && !strncmp(e - 2, "..", 2)) {
            cuts++;
            n -= 2;
            if (!strncmp(b, "std::", 5))
                q = 5;
            while (q < n && b[q] == '_')
                q++;
            CHECKF(n - q >= 4, "a label with nothing useful: %.*s", n + 2, b);
        } else if (n > 0) {
            whole++;
        }
    }
    CHECKF(cuts >= 4 && whole >= 2, "%d cut labels, %d whole", cuts, whole);
    if (getenv("U_VIEWS_LABELS"))
        fputs(s, stderr);
    CHECK(s && strstr(s, ">slee..</text>") && !strstr(s, ">s..<") && !strstr(s, ">st..<") &&
          !strstr(s, ">std..<") && !strstr(s, ">std::__i..<"));
    free(s);
    pe_prof_free(p);
}

/* Kinds, [object] boxes, symbol versions and hints (render/svg.c). */
static void
test_svg_kinds(void)
{
    pe_prof_t *p = fixed_profile();
    uintptr_t u1[] = {0x1010, PC(views_top)}, u2[] = {0x2020, PC(views_top)};
    int64_t v[] = {1, 1};
    char *s;
    int err;

    if (!p)
        return;
    CHECK(pe_prof_add(p, u1, 2, 1, v, NULL, 0) == 0 && pe_prof_add(p, u2, 2, 1, v, NULL, 0) == 0);
    CHECK(pe_prof_add_named(p, "memcpy@@GLIBC_2.14", v, NULL, 0) == 0);
    CHECK(pe_prof_comment(p, "hint: pid 1 used almost no CPU; <its child> did") == 0);
    CHECK(pe_prof_comment(p, "not a hint") == 0);
    s = render(p, 1, 0, &err);
    CHECK(err == 0 && s);
    if (s) {
        CHECK(strstr(s, "<g class=\"f kmain\" data-n=\"views_top\">") != NULL);
        CHECK(strstr(s, "<g class=\"f kother\" data-n=\"[weird") != NULL);
        /* two addresses without a name under views_top: one box */
        CHECKF(count_of(s, "data-n=\"[unknown]\"") == 1, "%d", count_of(s, "data-n=\"[unknown]\""));
        CHECK(strstr(s, "data-n=\"memcpy\"") && strstr(s, "<title>memcpy@@GLIBC_2.14 (") &&
              strstr(s, ">memcpy</text>"));
        CHECK(strstr(s, "<text class=\"hint\" x=\"10\" y=\"62\">pid 1 used almost no CPU; "
                        "&lt;its child&gt; did</text>") != NULL);
        CHECK(!strstr(s, "not a hint") && strstr(s, "data-top=\"80\""));
        CHECK(strstr(s, "<g id=\"legend\">") && strstr(s, ">the program</text>") &&
              strstr(s, ">kernel or unknown</text>") && !strstr(s, ">Python</text>"));
        CHECK(strstr(s, "id=\"flip\"") && strstr(s, "width=\"100%\" height="));
    }
    free(s);
    pe_prof_free(p);
}

/* Many frames: the document streams in bounded writes; a failing sink stops it. */
static void
test_stream(void)
{
    pe_prof_t *p = pe_prof_new(types, 2, &period, 1);
    count_sink_t c;
    char name[64];
    int64_t v[] = {1, 1};
    int i, err;

    if (!p)
        return;
    for (i = 0; i < 3000; i++) {
        snprintf(name, sizeof(name), "function_number_%d", i);
        if (pe_prof_add_named(p, name, v, NULL, 0))
            break;
    }
    memset(&c, 0, sizeof(c));
    c.sink.write = count_write;
    err = pe_prof_write_svg(p, &c.sink, 0, NULL);
    CHECK(err == 0);
    CHECKF(c.writes > 4 && c.biggest <= 16384, "%zu writes, biggest %zu", c.writes, c.biggest);
    memset(&c, 0, sizeof(c));
    c.sink.write = count_write;
    c.fail_after = 40000;
    err = pe_prof_write_svg(p, &c.sink, 0, NULL);
    CHECK(err == -EPIPE && c.bytes <= 40000);
    memset(&c, 0, sizeof(c));
    c.sink.write = count_write;
    c.fail_after = 100;
    CHECK(pe_prof_write_folded(p, &c.sink, 0) == -EPIPE);
    pe_prof_free(p);
}

/* An empty profile is still a valid document with its root box. */
static void
test_empty(void)
{
    pe_prof_t *p = pe_prof_new(types, 2, &period, 1);
    char *s;
    int err;

    if (!p)
        return;
    s = render(p, 1, -1, &err);
    CHECK(err == 0 && s && strstr(s, "<title>all (0 ns, 0.00%)</title>") && strstr(s, "</svg>"));
    free(s);
    s = render(p, 0, -1, &err);
    CHECK(err == 0 && s && !*s);
    free(s);
    pe_prof_free(p);
}

/* ---- dispatch ----------------------------------------------------------------------- */

typedef struct got_s {
    int status;
    char *body;
    size_t len;
    char errmsg[256];
} got_t;

/* Run pe_http_send_profile on a fresh fixed profile with this query and Accept. */
static got_t
send(const char *query, const char *accept)
{
    pe_prof_t *p = fixed_profile();
    pe_req_t *r = calloc(1, sizeof(*r));
    pe_membuf_t mb;
    got_t g = {0};

    pe_membuf_init(&mb);
    if (!p || !r || pe_params_parse(r, query) < 0) {
        g.status = -1;
        goto out;
    }
    r->method = "GET";
    r->path = "/profile";
    r->accept = accept;
    r->capture = &mb.sink;
    g.status = pe_http_send_profile(r, p, "profile");
    memcpy(g.errmsg, r->errmsg, sizeof(g.errmsg));
    g.body = calloc(1, mb.len + 1);
    if (g.body && mb.len)
        memcpy(g.body, mb.data, mb.len);
    g.len = mb.len;
out:
    pe_membuf_free(&mb);
    free(r);
    pe_prof_free(p);
    return g;
}

static int
is_gzip(const got_t *g)
{
    return g->len > 2 && (unsigned char)g->body[0] == 0x1f && (unsigned char)g->body[1] == 0x8b;
}

static int
is_svg(const got_t *g)
{
    return g->body && !strncmp(g->body, "<?xml", 5) && strstr(g->body, "<svg");
}

static void
test_dispatch(void)
{
    static const char chrome[] = "text/html,application/xhtml+xml,application/xml;q=0.9,"
                                 "image/avif,image/webp,*/*;q=0.8";
    got_t g;

    g = send("", NULL);
    CHECK(g.status == 200 && is_gzip(&g));
    free(g.body);
    g = send("", "*/*");
    CHECK(g.status == 200 && is_gzip(&g));
    free(g.body);
    g = send("", chrome);
    CHECKF(g.status == 200 && is_svg(&g), "browser gets svg");
    free(g.body);
    g = send("", "image/svg+xml");
    CHECK(g.status == 200 && is_svg(&g));
    free(g.body);
    g = send("format=pprof", chrome);
    CHECK(g.status == 200 && is_gzip(&g));
    free(g.body);
    g = send("pprof=true", chrome);
    CHECK(g.status == 200 && is_gzip(&g));
    free(g.body);
    g = send("pprof=false", chrome);
    CHECK(g.status == 200 && g.body && strstr(g.body, "tree view"));
    free(g.body);
    g = send("format=svg", NULL);
    CHECK(g.status == 200 && is_svg(&g) && strstr(g.body, "(pid "));
    free(g.body);
    g = send("format=folded", NULL);
    CHECK(g.status == 200 && g.body &&
          strstr(g.body, "views_top;views_mid;views_leaf_a 50000000\n"));
    free(g.body);
    g = send("format=folded&sample_index=samples", NULL);
    CHECK(g.status == 200 && g.body && strstr(g.body, "views_top;views_mid;views_leaf_a 5\n"));
    free(g.body);
    g = send("format=folded&sample_index=0", NULL);
    CHECK(g.status == 200 && g.body && strstr(g.body, "views_top;views_mid;views_leaf_a 5\n"));
    free(g.body);
    g = send("format=text&sample_index=samples", NULL);
    CHECK(g.status == 200 && g.body && !strncmp(g.body, "samples (count)", 15));
    free(g.body);
    g = send("format=folded&sample_index=inuse_space", NULL);
    CHECKF(g.status == 400 && strstr(g.errmsg, "sample_index=inuse_space") &&
               strstr(g.errmsg, "samples, cpu"),
           "%d %s", g.status, g.errmsg);
    free(g.body);
    g = send("format=svg&sample_index=2", NULL);
    CHECK(g.status == 400);
    free(g.body);
    g = send("format=png", NULL);
    CHECK(g.status == 400 && strstr(g.errmsg, "format=png"));
    free(g.body);
}

/* ---- /debug_engine ------------------------------------------------------------------ */

static char stage[64];

static int
stage_files(void)
{
    DIR *d = opendir(stage);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static got_t
engine(const char *body)
{
    got_t g = {0};

    g.status = pe_test_engine(body, g.errmsg);
    return g;
}

static void
test_engine(void)
{
    static const char *const bad[] = {
        "",
        "[]",
        "{",
        "{\"profile_type\": }",
        "{\"profile_type\": \"cpu_profile\",}",
        "{\"profile_type\": \"cpu_profile\"} x",
        "{\"profile_type\": \"cpu_profile\", \"n\": [1]}",
        "{\"profile_type\": \"cpu_profile\", \"n\": {}}",
        "{\"profile_type\": \"cpu\\q\"}",
        "{\"profile_type\": \"cpu_profile\", \"delay\": 1x}",
        "{'profile_type': 1}",
    };
    got_t g;
    size_t i;

    snprintf(stage, sizeof(stage), "/tmp/u_views.%d", (int)getpid());
    mkdir(stage, 0700);
    snprintf(pe_cfg.stage_dir, sizeof(pe_cfg.stage_dir), "%s", stage);
    for (i = 0; i < PE_ARRAY_SIZE(bad); i++) {
        g = engine(bad[i]);
        CHECKF(g.status == 400 && strstr(g.errmsg, "bad JSON"), "[%s] -> %d %s", bad[i], g.status,
               g.errmsg);
    }
    /* Every prefix of a body with escapes is refused, reading nothing past its end. */
    {
        static const char full[] =
            "{\"profile_type\": \"cpu_profile\", \"n\": 1e8, \"a\": "
            "\"\\u00e9\\ud83d\\ude00\\\"\\n\", \"b\": false, \"duration\": \"x\"}";
        size_t k;
        int all = 1;

        for (k = 0; k < sizeof(full) - 1; k++) {
            char *b = malloc(k + 1);

            if (!b)
                break;
            memcpy(b, full, k);
            b[k] = '\0';
            g = engine(b);
            if (g.status != 400 || !strstr(g.errmsg, "bad JSON")) {
                all = 0;
                fprintf(stderr, "prefix %zu [%s] -> %d %s\n", k, b, g.status, g.errmsg);
            }
            free(b);
        }
        CHECK(all);
        g = engine(full);
        CHECKF(g.status == 400 && strstr(g.errmsg, "duration=x"), "%d %s", g.status, g.errmsg);
    }
    g = engine("{\"profile_type\": \"gpu_profile\"}");
    CHECK(g.status == 400 && strstr(g.errmsg, "profile_type=gpu_profile"));
    g = engine("{\"duration\": 1}");
    CHECK(g.status == 400 && strstr(g.errmsg, "(missing)"));
    /* The endpoint's own 400, with the JSON value (escapes decoded) as the parameter. */
    g = engine(" {\"profile_type\" : \"cpu_profile\", \"duration\": \"\\u0061bc\", \"x\": null,"
               " \"pprof\": true}\n");
    CHECKF(g.status == 400 && strstr(g.errmsg, "duration=abc"), "%d %s", g.status, g.errmsg);
    g = engine("{\"profile_type\": \"cpu_profile\", \"duration\": -1e3}");
    CHECKF(g.status == 400 && strstr(g.errmsg, "duration=-1e3"), "%d %s", g.status, g.errmsg);
    CHECKF(stage_files() == 0, "failed requests leave no file (%d)", stage_files());
    /* A type whose endpoint answers an error (or works, once it is built). */
    g = engine("{\"profile_type\": \"task_backtraces\"}");
    CHECKF(g.status == 200 ? stage_files() == 1 : stage_files() == 0, "%d %s", g.status, g.errmsg);
    /* A directory that cannot be written. */
    snprintf(pe_cfg.stage_dir, sizeof(pe_cfg.stage_dir), "/proc/no/such/dir");
    g = engine("{\"profile_type\": \"cpu_profile\", \"duration\": 1}");
    CHECKF(g.status == 503 && strstr(g.errmsg, "PROFEP_STAGE_DIR=/proc/no/such/dir"), "%d %s",
           g.status, g.errmsg);
    /* GET is refused by the router. */
    {
        pe_req_t *r = calloc(1, sizeof(*r));

        if (r) {
            r->method = "GET";
            r->path = "/debug_engine";
            CHECK(pe_http_route(r) == 405);
            free(r);
        }
    }
    snprintf(pe_cfg.stage_dir, sizeof(pe_cfg.stage_dir), "%s", stage);
    {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", stage);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", stage);
    }
}

/* ---- dump for the e2e round trip ----------------------------------------------------- */

static int
write_file(const char *dir, const char *name, pe_prof_t *p, int what)
{
    char path[512];
    pe_fdsink_t fs;
    int fd, err;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -errno;
    pe_fdsink_init(&fs, fd);
    err = what < 0 ? pe_prof_write_pprof(p, &fs.sink) : pe_prof_write_folded(p, &fs.sink, what);
    close(fd);
    return err;
}

static int
dump(const char *dir)
{
    pe_prof_t *p = fixed_profile();
    int err;

    if (!p)
        return 1;
    err = write_file(dir, "views.pb.gz", p, -1);
    if (!err)
        err = write_file(dir, "views.samples.folded", p, 0);
    if (!err)
        err = write_file(dir, "views.cpu.folded", p, 1);
    pe_prof_free(p);
    if (err)
        fprintf(stderr, "u_views --dump: %s\n", strerror(-err));
    return err ? 1 : 0;
}

int
main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--dump"))
        return dump(argv[2]);
    pe_cfg.max_seconds = 600; /* PROFEP_MAX_SECONDS's default (debug_engine's duration) */
    views_top(1);
    test_folded();
    test_svg();
    test_svg_labels();
    test_svg_small_labels();
    test_svg_kinds();
    test_stream();
    test_empty();
    test_dispatch();
    test_engine();
    return pe_test_done();
}
