/*
 * u_heapsnapshot.c: unit tests for the .heapsnapshot encoder (render/heapsnapshot.c):
 * counts of an empty heap, the frame trie sharing prefixes, objects grouped
 * under their leaf, JSON escaping of hostile names (quotes, control bytes,
 * invalid UTF-8), a bad sample index, and a sink error stopping the writer.
 * The full format is read back by test/e2e/heapsnapshot.py and memlab in the e2e
 * tests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe_test.h"
#include "profile/profile.h"
#include "render/heapsnapshot.h"

static const pe_prof_vt_t types[1] = {{"inuse_space", "bytes"}};

__attribute__((noinline)) void hs_top(void);
__attribute__((noinline)) void hs_mid(void);
__attribute__((noinline)) void hs_leaf1(void);
__attribute__((noinline)) void hs_leaf2(void);
static volatile int sink_v;
void
hs_top(void)
{
    sink_v++;
}
void
hs_mid(void)
{
    sink_v++;
}
void
hs_leaf1(void)
{
    sink_v++;
}
void
hs_leaf2(void)
{
    sink_v++;
}

/* Encode p with objs into a NUL-terminated malloc'd string (NULL on error, *err set). */
static char *
encode(pe_prof_t *p, const pe_prof_hsnap_obj_t *objs, size_t n, int *err)
{
    pe_prof_hsnap_t *h;
    pe_membuf_t mb;

    *err = pe_prof_hsnap_build(p, objs, n, &h);
    if (*err)
        return NULL;
    pe_membuf_init(&mb);
    *err = pe_prof_hsnap_write(h, &mb.sink);
    pe_prof_hsnap_free(h);
    if (*err || mb.sink.write(&mb.sink, "", 1)) {
        pe_membuf_free(&mb);
        return NULL;
    }
    return mb.data; /* pe_membuf_free would free it; the caller does */
}

static void
counts(const char *doc, unsigned *nodes, unsigned *edges)
{
    const char *a = strstr(doc, "\"node_count\":"), *b = strstr(doc, "\"edge_count\":");

    *nodes = *edges = ~0u;
    if (a)
        sscanf(a, "\"node_count\":%u", nodes);
    if (b)
        sscanf(b, "\"edge_count\":%u", edges);
}

static void
test_empty(void)
{
    pe_prof_t *p = pe_prof_new(types, 1, NULL, 0);
    unsigned nn, ne;
    char *doc;
    int err;

    doc = encode(p, NULL, 0, &err);
    CHECKF(doc && !err, "err %d", err);
    if (doc) {
        counts(doc, &nn, &ne);
        CHECKF(nn == 2 && ne == 1, "empty heap: %u nodes %u edges", nn, ne); /* root, GC roots */
        CHECK(strstr(doc, "\"nodes\":[9,0,1,0,1,0,0\n,9,1,3,0,0,0,0],") != NULL);
        CHECK(strstr(doc, "\"strings\":[\"\",\n\"(GC roots)\"]}\n") != NULL);
    }
    free(doc);
    pe_prof_free(p);
}

static void
test_trie(void)
{
    pe_prof_t *p = pe_prof_new(types, 1, NULL, 0);
    /* Return addresses (the model subtracts one): leaf first. */
    uintptr_t s1[3] = {(uintptr_t)hs_leaf1 + 1, (uintptr_t)hs_mid + 1, (uintptr_t)hs_top + 1};
    uintptr_t s2[3] = {(uintptr_t)hs_leaf2 + 1, (uintptr_t)hs_mid + 1, (uintptr_t)hs_top + 1};
    pe_prof_hsnap_obj_t objs[4] = {{0, 100}, {1, 7}, {0, 30}, {1, 4000000000u}};
    unsigned nn, ne;
    char *doc;
    int err;

    CHECK(pe_prof_add(p, s1, 3, 0, NULL, NULL, 0) == 0);
    CHECK(pe_prof_add(p, s2, 3, 0, NULL, NULL, 0) == 0);
    doc = encode(p, objs, 4, &err);
    CHECKF(doc && !err, "err %d", err);
    if (doc) {
        counts(doc, &nn, &ne);
        /* root, GC roots, hs_top, hs_mid, hs_leaf1, hs_leaf2, 4 objects */
        CHECKF(nn == 10 && ne == 9, "%u nodes %u edges", nn, ne);
        /* frames: hs_top (string 2) 1 callee; hs_mid 2 callees; leaves 2 objects each */
        CHECKF(strstr(doc, "\n,3,2,5,0,1,0,0\n,3,3,7,0,2,0,0\n,3,4,9,0,2,0,0\n,3,5,11,0,2,0,0\n") !=
                   NULL,
               "frame nodes:\n%s", doc);
        /* objects grouped by leaf, in frame order: hs_leaf1's then hs_leaf2's */
        CHECKF(strstr(doc,
                      "\n,8,4,13,30,0,0,0\n,8,4,15,100,0,0,0\n,8,5,17,4000000000,0,0,0\n,8,5,19,"
                      "7,0,0,0],") != NULL,
               "object nodes:\n%s", doc);
        /* frames are named as the text views print them: no debug info read here */
        CHECKF(strstr(doc,
                      "\"[u_heapsnapshot] hs_top\",\n\"[u_heapsnapshot] hs_mid\",\n"
                      "\"[u_heapsnapshot] hs_leaf1\",\n\"[u_heapsnapshot] hs_leaf2\"]") != NULL,
               "%s", doc);
        /* root: element to GC roots, property to hs_top at ordinal 2 (to_node 14) */
        CHECK(strstr(doc, "\"edges\":[1,1,7\n,2,2,14\n") != NULL);
    }
    free(doc);
    objs[2].sample = 2; /* no such sample */
    CHECK(encode(p, objs, 4, &err) == NULL && err == -EINVAL);
    pe_prof_free(p);
}

static void
test_escaping(void)
{
    pe_prof_t *p = pe_prof_new(types, 1, NULL, 0);
    pe_prof_hsnap_obj_t objs[1] = {{0, 1}};
    char *doc;
    int err;

    CHECK(pe_prof_add_named(p, "q\"b\\s\nt\tc\x01 bad\xff ok\xc3\xa9 cut\xe2\x82", NULL, NULL, 0) ==
          0);
    doc = encode(p, objs, 1, &err);
    CHECKF(doc && !err, "err %d", err);
    if (doc)
        CHECKF(
            strstr(doc, "\"q\\\"b\\\\s\\nt\\tc\\u0001 bad\\ufffd ok\xc3\xa9 cut\\ufffd\\ufffd\"") !=
                NULL,
            "%s", strstr(doc, "\"strings\""));
    free(doc);
    pe_prof_free(p);
}

/* A sink that fails after `left` bytes. */
typedef struct failsink_s {
    pe_sink_t sink;
    size_t left, total;
} failsink_t;

static int
fail_write(pe_sink_t *s, const void *buf, size_t len)
{
    failsink_t *f = (failsink_t *)s;

    (void)buf;
    f->total += len;
    if (len > f->left)
        return -EPIPE;
    f->left -= len;
    return 0;
}

static void
test_sink_error(void)
{
    pe_prof_t *p = pe_prof_new(types, 1, NULL, 0);
    pe_prof_hsnap_obj_t *objs = malloc(100000 * sizeof(*objs));
    failsink_t fs = {{fail_write, 0}, 1000, 0};
    pe_prof_hsnap_t *h;

    CHECK(pe_prof_add_named(p, "site", NULL, NULL, 0) == 0);
    for (int i = 0; i < 100000; i++)
        objs[i] = (pe_prof_hsnap_obj_t){0, (uint32_t)i};
    CHECK(pe_prof_hsnap_build(p, objs, 100000, &h) == 0);
    free(objs);
    CHECK(pe_prof_hsnap_write(h, &fs.sink) == -EPIPE);
    /* one failed 64 KiB buffer, then nothing more is attempted */
    CHECKF(fs.total <= 65536, "%zu bytes offered after the error", fs.total);
    pe_prof_hsnap_free(h);
    pe_prof_free(p);
}

int
main(void)
{
    test_empty();
    test_trie();
    test_escaping();
    test_sink_error();
    return pe_test_done();
}
