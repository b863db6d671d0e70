/*
 * u_decode: proto/decode.c, the decoder of profiles other processes send
 * (pid=all's merge).  A profile written by our own encoder reads back with
 * its types, values, labels, functions (demangled as ours are), files,
 * lines and inlined frames; a second one merges into the same samples; one
 * with other sample types is refused; bytes that are not gzip, a stream cut
 * short, one past the size bound and a gzip of garbage each get their
 * reason.  Then test/unit/corpus_decode/ is replayed through the fuzz target
 * (fuzz_decode.c).  With --seeds DIR it writes the serialized profiles of
 * this test as fuzz seeds instead (`make fuzz-decode` starts from them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_decode.c"
#include "pe_test.h"
#include "profile/profile.h"
#include "proto/pprof.h"
#include "sink/sink.h"

static const pe_prof_vt_t types[2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
static const pe_prof_vt_t period = {"cpu", "nanoseconds"};

/* A profile of two stacks: shop::price_all (a Rust name: demangled here, C++ needs the host's
   libstdc++) with mix inlined, at work.rs:10 and work_inl.h:5, called from main; and one named
   only. */
static pe_prof_t *
build(const pe_prof_vt_t *vt, int ntypes)
{
    pe_prof_t *p = pe_prof_new(vt, ntypes, &period, 10000000);
    pe_prof_place_t pl[3] = {{"mix", "work_inl.h", 5},
                             {"_ZN4shop9price_all17h0123456789abcdefE", "work.rs", 10},
                             {"main", "work.cc", 30}};
    uint8_t nlines[2] = {2, 1};
    int64_t v1[2] = {3, 30000000}, v2[2] = {1, 10000000};
    pe_prof_label_t lab = {"thread", "worker", 0, NULL};
    const char *names[2] = {"[idle]", "[root]"};

    if (!p)
        return NULL;
    if (pe_prof_add_places(p, pl, nlines, 2, v1, &lab, 1) < 0 ||
        pe_prof_add_names(p, names, 2, v2, NULL, 0) < 0) {
        pe_prof_free(p);
        return NULL;
    }
    return p;
}

/* p as pprof writes it (gzipped) into mb. */
static int
written(pe_prof_t *p, pe_membuf_t *mb)
{
    pe_membuf_init(mb);
    return p && pe_prof_write_pprof(p, &mb->sink) == 0 ? 0 : -1;
}

/* The sample whose leaf is named leaf, or -1. */
static int
find_sample(pe_prof_t *p, const char *leaf, pe_prof_sample_t *sm)
{
    for (int i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample(p, i, sm);
        if (sm->nframes > 0 && !strcmp(sm->frames[0]->name, leaf))
            return i;
    }
    return -1;
}

static void
test_roundtrip(void)
{
    pe_prof_label_t extra = {"pid", NULL, 42, NULL};
    pe_prof_merge_t m;
    pe_prof_sample_t sm;
    pe_membuf_t mb;
    pe_prof_t *p = build(types, 2);
    const char *why;
    int i, haspid = 0, hasthread = 0;

    CHECK(written(p, &mb) == 0);
    memset(&m, 0, sizeof(m));
    why = pe_prof_merge_add_gz(&m, mb.data, mb.len, 1 << 24, &extra, 1);
    CHECKF(why == NULL, "added (%s)", why ? why : "");
    CHECK(m.merged == 1 && m.ntypes == 2);
    CHECK(!strcmp(m.types[1][0], "cpu") && !strcmp(m.types[1][1], "nanoseconds"));
    CHECK(m.prof && pe_prof_resolve(m.prof, 0) == 0);
    CHECKF(m.prof && pe_prof_nsamples(m.prof) == 2, "samples %d",
           m.prof ? pe_prof_nsamples(m.prof) : -1);
    if (m.prof && find_sample(m.prof, "mix", &sm) >= 0) {
        CHECK(sm.nframes == 3);
        CHECK(sm.frames[0]->inlined && sm.frames[0]->line == 5 && sm.frames[0]->src &&
              !strcmp(sm.frames[0]->src, "work_inl.h"));
        CHECKF(!strcmp(sm.frames[1]->name, "shop::price_all"), "demangled (%s)",
               sm.frames[1]->name);
        CHECK(!sm.frames[1]->inlined && sm.frames[1]->line == 10);
        CHECK(!strcmp(sm.frames[2]->name, "main") && sm.frames[2]->line == 30);
        CHECK(sm.values[0] == 3 && sm.values[1] == 30000000);
        for (i = 0; i < sm.nlabels; i++) {
            haspid |= !strcmp(sm.labels[i].key, "pid") && sm.labels[i].num == 42;
            hasthread |= !strcmp(sm.labels[i].key, "thread") && sm.labels[i].str &&
                         !strcmp(sm.labels[i].str, "worker");
        }
        CHECK(haspid && hasthread);
    } else {
        CHECK(!"a sample with the leaf mix");
    }
    /* the same profile again (the same extra label): its samples merge into the first's */
    why = pe_prof_merge_add_gz(&m, mb.data, mb.len, 1 << 24, &extra, 1);
    CHECK(why == NULL && m.merged == 2);
    CHECK(m.prof && pe_prof_resolve(m.prof, 0) == 0);
    CHECK(m.prof && pe_prof_nsamples(m.prof) == 2);
    CHECK(m.prof && find_sample(m.prof, "mix", &sm) >= 0 && sm.values[0] == 6);
    CHECK(m.prof && find_sample(m.prof, "[idle]", &sm) >= 0 && sm.nframes == 2 &&
          sm.values[1] == 20000000);
    pe_membuf_free(&mb);
    pe_prof_free(p);

    /* other sample types: refused, the merge unchanged */
    p = build(types, 1);
    CHECK(written(p, &mb) == 0);
    why = pe_prof_merge_add_gz(&m, mb.data, mb.len, 1 << 24, &extra, 1);
    CHECK(why && !strcmp(why, "other sample types") && m.merged == 2);
    pe_membuf_free(&mb);
    pe_prof_free(p);
    pe_prof_free(m.prof);
}

static void
test_refusals(void)
{
    pe_prof_merge_t m;
    pe_membuf_t mb;
    pe_prof_t *p = build(types, 2);
    uint8_t *zeros, *gz;
    size_t gzlen;
    const char *why;

    memset(&m, 0, sizeof(m));
    why = pe_prof_merge_add_gz(&m, "not a gzip stream at all", 24, 1 << 24, NULL, 0);
    CHECKF(why && !strcmp(why, "its profile is not gzip"), "%s", why ? why : "NULL");
    CHECK(written(p, &mb) == 0);
    why = pe_prof_merge_add_gz(&m, mb.data, mb.len / 2, 1 << 24, NULL, 0);
    CHECKF(why && !strcmp(why, "its profile is cut short"), "%s", why ? why : "NULL");
    CHECK(m.prof == NULL && m.merged == 0);
    pe_membuf_free(&mb);
    /* 3 MiB of zeros: past a 1 MiB bound before anything is decoded */
    zeros = calloc(1, 3 << 20);
    CHECK(zeros && fuzz_gzip(zeros, 3 << 20, &gz, &gzlen) == 0);
    if (zeros && gz) {
        why = pe_prof_merge_add_gz(&m, gz, gzlen, 1 << 20, NULL, 0);
        CHECKF(why && !strcmp(why, "its profile is too large"), "%s", why ? why : "NULL");
        /* within the bound: zeros are no profile */
        why = pe_prof_merge_add_gz(&m, gz, gzlen, 1 << 24, NULL, 0);
        CHECKF(why && !strcmp(why, "its profile does not decode"), "%s", why ? why : "NULL");
        free(gz);
    }
    free(zeros);
    CHECK(m.prof == NULL && m.merged == 0);
    pe_prof_free(p);
}

/* The serialized profiles of this test, as fuzz seeds (mode byte 0: gzipped by the target). */
static int
write_seeds(const char *dir)
{
    for (int k = 1; k <= 2; k++) {
        pe_prof_t *p = build(types, k);
        pe_membuf_t mb;
        unsigned char *raw = NULL;
        long len;
        char path[1024];
        FILE *f;

        if (written(p, &mb) < 0 || (len = pe_test_gunzip(mb.data, mb.len, &raw)) < 0)
            return 1;
        snprintf(path, sizeof(path), "%s/seed-%d-types", dir, k);
        if (!(f = fopen(path, "w")) || fputc(0, f) == EOF ||
            fwrite(raw, 1, (size_t)len, f) != (size_t)len || fclose(f) != 0)
            return 1;
        free(raw);
        pe_membuf_free(&mb);
        pe_prof_free(p);
    }
    return 0;
}

static void
replay_corpus(const char *dir)
{
    char cmd[600], name[512], full[1100];
    FILE *p, *f;
    int n = 0;

    snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null", dir);
    if (!(p = popen(cmd, "r")))
        return;
    while (fgets(name, sizeof(name), p)) {
        static uint8_t buf[1 << 20];
        size_t len;

        name[strcspn(name, "\n")] = '\0';
        snprintf(full, sizeof(full), "%s/%s", dir, name);
        if (!(f = fopen(full, "r")))
            continue;
        len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        n++;
    }
    pclose(p);
    printf("corpus %s: %d inputs replayed\n", dir, n);
    CHECK(n > 0);
}

int
main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--seeds"))
        return write_seeds(argv[2]);
    test_roundtrip();
    test_refusals();
    replay_corpus("test/unit/corpus_decode");
    return pe_test_done();
}
