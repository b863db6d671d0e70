/*
 * u_dwarf: symbols/dwarf.c against llvm-symbolizer.  Builds the programs in
 * test/progs/dwarf/ with GCC (DWARF 5, DWARF 4, SHF_COMPRESSED and legacy
 * .zdebug_ sections), Clang (DWARF 5, skipped without clang), and as stripped
 * binaries whose debug file is found by .gnu_debuglink and by a build-id
 * directory; then compares every few bytes of .text with `llvm-symbolizer
 * --inlining --no-demangle`, and libc with libc6-dbg.  Then corrupts debug files many times and
 * replays the fuzz corpus (test/unit/corpus_dwarf/): no fault, no hang.
 *
 * Two of llvm-symbolizer's answers do not come from DWARF and are matched
 * accordingly: the outermost frame's name is the ELF symbol covering the
 * address when there is one (so any name we give is accepted when llvm's is
 * a symbol there), and an address without line information gets the symbol
 * table's name and file at line 0 (we answer 0 frames: nothing in DWARF).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pe_test.h"
#include "symbols/dwarf.h"

#include "fuzz_dwarf.c"

#define MAX_ADDRS 4096

static char tmp[128];
static const char *srcdir = "test/progs/dwarf";

static int
sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- facts about a binary, through binutils -------------------------------------- */

static int
text_range(const char *bin, uint64_t *lo, uint64_t *size)
{
    char cmd[1200], line[512];
    FILE *p;
    int found = 0;

    snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", bin);
    if (!(p = popen(cmd, "r")))
        return -1;
    while (fgets(line, sizeof(line), p)) {
        char *t = strstr(line, " .text ");
        unsigned long long a, off, sz;

        if (t && !found && (t = strstr(t, "PROGBITS")) &&
            sscanf(t + 8, "%llx %llx %llx", &a, &off, &sz) == 3) {
            *lo = a;
            *size = sz;
            found = 1;
        }
    }
    pclose(p);
    return found ? 0 : -1;
}

static int
build_id_of(const char *bin, char *out, size_t n)
{
    char cmd[1200], line[512];
    FILE *p;
    int found = 0;

    snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", bin);
    if (!(p = popen(cmd, "r")))
        return -1;
    while (fgets(line, sizeof(line), p)) {
        char *t = strstr(line, "Build ID: ");

        if (t && !found && sscanf(t + 10, "%127s", out) == 1 && strlen(out) < n)
            found = 1;
    }
    pclose(p);
    return found ? 0 : -1;
}

typedef struct sym_s {
    uint64_t lo, hi;
    char *name;
} sym_t;

static sym_t *syms;
static int nsyms;

static int
sym_cmp(const void *a, const void *b)
{
    const sym_t *x = a, *y = b;

    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The function symbols of the files in `files` (space-separated). */
static void
load_syms(const char *files)
{
    char cmd[4096], line[4096];
    FILE *p;
    int cap = 0, i;

    for (i = 0; i < nsyms; i++)
        free(syms[i].name);
    nsyms = 0;
    snprintf(cmd, sizeof(cmd),
             "for f in %s; do nm -S --defined-only \"$f\"; nm -D -S --defined-only \"$f\"; done "
             "2>/dev/null",
             files);
    if (!(p = popen(cmd, "r")))
        return;
    while (fgets(line, sizeof(line), p)) {
        unsigned long long a, sz;
        char type, name[4000], *at;

        if (sscanf(line, "%llx %llx %c %3999s", &a, &sz, &type, name) != 4)
            continue;
        if ((at = strchr(name, '@')))
            *at = '\0';
        if (nsyms == cap) {
            cap = cap ? cap * 2 : 1024;
            syms = realloc(syms, (size_t)cap * sizeof(*syms));
        }
        syms[nsyms].lo = a;
        syms[nsyms].hi = a + sz;
        syms[nsyms].name = strdup(name);
        nsyms++;
    }
    pclose(p);
    qsort(syms, (size_t)nsyms, sizeof(*syms), sym_cmp);
}

/* 1 if `name` is a symbol covering `a` */
static int
is_symbol_at(const char *name, uint64_t a)
{
    int lo = 0, hi = nsyms, i;

    while (lo < hi) {
        int mid = (lo + hi) / 2;

        if (syms[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (i = lo - 1; i >= 0 && i >= lo - 256; i--)
        if (syms[i].lo <= a && a < syms[i].hi && strcmp(syms[i].name, name) == 0)
            return 1;
    return 0;
}

/* ---- llvm-symbolizer's answers --------------------------------------------------------- */

typedef struct fr_s {
    char *name, *file;
    unsigned line;
} fr_t;

typedef struct res_s {
    fr_t *f;
    int n;
} res_t;

static void
res_free(res_t *r, int n)
{
    int i, k;

    for (i = 0; i < n; i++) {
        for (k = 0; k < r[i].n; k++) {
            free(r[i].f[k].name);
            free(r[i].f[k].file);
        }
        free(r[i].f);
    }
    free(r);
}

static res_t *
llvm_answers(const char *bin, const char *extra, const uint64_t *addrs, int n)
{
    char path[256], cmd[2048], name[8192], loc[8192];
    res_t *r = calloc((size_t)n, sizeof(*r));
    FILE *f, *p;
    int i = 0;

    snprintf(path, sizeof(path), "%s/addrs", tmp);
    if (!(f = fopen(path, "w")))
        return r;
    for (i = 0; i < n; i++)
        fprintf(f, "0x%llx\n", (unsigned long long)addrs[i]);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "llvm-symbolizer --inlining --no-demangle %s --obj='%s' < '%s' 2>/dev/null", extra,
             bin, path);
    if (!(p = popen(cmd, "r")))
        return r;
    i = 0;
    while (i < n && fgets(name, sizeof(name), p)) {
        char *c1, *c2;
        fr_t *fr;

        name[strcspn(name, "\n")] = '\0';
        if (!name[0]) {
            i++;
            continue;
        }
        if (!fgets(loc, sizeof(loc), p))
            break;
        loc[strcspn(loc, "\n")] = '\0';
        r[i].f = realloc(r[i].f, (size_t)(r[i].n + 1) * sizeof(fr_t));
        fr = &r[i].f[r[i].n++];
        fr->name = strdup(name);
        c2 = strrchr(loc, ':');
        if (c2) {
            *c2 = '\0';
            c1 = strrchr(loc, ':');
            if (c1) {
                *c1 = '\0';
                fr->line = (unsigned)strtoul(c1 + 1, NULL, 10);
            }
        }
        fr->file = strdup(loc);
    }
    pclose(p);
    return r;
}

/* ---- comparing -------------------------------------------------------------------------- */

static int
same(const char *a, const char *b)
{
    return strcmp(a ? a : "??", b ? b : "??") == 0;
}

/*
 * Resolve addrs with o and compare with llvm's answers; the figures go to
 * *inner (innermost function, file and line the same) and *chain (every
 * frame the same), in percent.
 */
static void
compare(const char *label, pe_dw_obj_t *o, const char *bin, const char *extra,
        const uint64_t *addrs, int n, double *inner, double *chain)
{
    pe_dw_frame_t fr[64];
    res_t *want = llvm_answers(bin, extra, addrs, n);
    int i, k, ok_inner = 0, ok_chain = 0, shown = 0;
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < n; i++) {
        const res_t *w = &want[i];
        int got = pe_dw_lookup(o, addrs[i], fr, 64), all = 1;

        if (w->n == 0) {
            continue;
        }
        if (got <= 0) {
            /* nothing in DWARF: llvm then answers from the symbol table, line 0 */
            if (got == 0 && w->n == 1 && w->f[0].line == 0) {
                ok_inner++;
                ok_chain++;
                continue;
            }
            all = 0;
        } else if (got != w->n) {
            all = 0;
        }
        for (k = 0; got > 0 && k < got && k < w->n; k++) {
            int outer = k == w->n - 1 && k == got - 1;
            int name_ok =
                same(fr[k].name, w->f[k].name) || (outer && is_symbol_at(w->f[k].name, addrs[i]));
            int eq = name_ok && same(fr[k].file, w->f[k].file) && fr[k].line == w->f[k].line;

            if (k == 0 && eq)
                ok_inner++;
            if (!eq)
                all = 0;
        }
        if (all)
            ok_chain++;
        else if (shown++ < 3) {
            fprintf(stderr, "  %s 0x%llx: got %d frames, llvm %d:", label,
                    (unsigned long long)addrs[i], got, w->n);
            for (k = 0; k < got && k < 4; k++)
                fprintf(stderr, " [%s %s:%u]", fr[k].name ? fr[k].name : "??",
                        fr[k].file ? fr[k].file : "??", fr[k].line);
            fprintf(stderr, " | llvm:");
            for (k = 0; k < w->n && k < 4; k++)
                fprintf(stderr, " [%s %s:%u]", w->f[k].name, w->f[k].file, w->f[k].line);
            fprintf(stderr, "\n");
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *inner = 100.0 * ok_inner / n;
    *chain = 100.0 * ok_chain / n;
    printf(
        "%-14s %5d addresses: innermost %6.2f%%  whole chain %6.2f%%  (%.1f ms, %zu bytes held)\n",
        label, n, *inner, *chain,
        (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
        pe_dw_bytes());
    res_free(want, n);
}

/* Up to max addresses spread over .text, every `step` >= 1 byte. */
static int
text_addrs(const char *bin, uint64_t *addrs, int max)
{
    uint64_t lo, size, step, a;
    int n = 0;

    if (text_range(bin, &lo, &size) < 0)
        return 0;
    step = size / (uint64_t)max + 1;
    for (a = lo; a < lo + size && n < max; a += step)
        addrs[n++] = a;
    return n;
}

/* Compare one binary (opened by the caller's arguments) and check the figures. */
static void
check_variant(const char *label, const char *bin, const char *build_id, const char *debug_dir,
              const char *extra, const char *symfiles)
{
    static uint64_t addrs[MAX_ADDRS];
    double inner = 0, chain = 0;
    pe_dw_obj_t *o = pe_dw_open(bin, build_id, debug_dir);
    int n = text_addrs(bin, addrs, 3000);

    CHECKF(o != NULL, "%s: no DWARF found for %s", label, bin);
    CHECKF(n > 1000, "%s: only %d addresses", label, n);
    if (!o || n == 0)
        return;
    load_syms(symfiles);
    compare(label, o, bin, extra, addrs, n, &inner, &chain);
    CHECKF(inner >= 99.0, "%s: innermost %.2f%% < 99%%", label, inner);
    CHECKF(chain >= 95.0, "%s: chain %.2f%% < 95%%", label, chain);
}

/* ---- the test programs ------------------------------------------------------------------- */

/* Build test/progs/dwarf/ into tmp/<name> with cc/cxx and flags; 0 on success. */
static int
build(const char *name, const char *cc, const char *cxx, const char *flags)
{
    return sh("cd '%s' && %s -O2 -g %s -c '%s/dw_main.c' -o %s_m.o && "
              "%s -O2 -g %s -c '%s/dw_util.c' -o %s_u.o && "
              "%s -O2 -g %s -c '%s/dw_cxx.cc' -o %s_x.o && "
              "%s %s -o %s %s_m.o %s_u.o %s_x.o",
              tmp, cc, flags, srcdir, name, cc, flags, srcdir, name, cxx, flags, srcdir, name, cxx,
              flags, name, name, name, name);
}

static void
variants(void)
{
    char bin[512], dbg[512], id[130], ddir[512], extra[600], files[1200];

    if (build("gcc5", "gcc", "g++", "") == 0) {
        snprintf(bin, sizeof(bin), "%s/gcc5", tmp);
        check_variant("gcc -g", bin, "", NULL, "", bin);
    } else {
        CHECKF(0, "building with gcc failed");
    }
    if (build("gcc4", "gcc", "g++", "-gdwarf-4") == 0) {
        snprintf(bin, sizeof(bin), "%s/gcc4", tmp);
        check_variant("gcc -gdwarf-4", bin, "", NULL, "", bin);
    } else {
        CHECKF(0, "building with gcc -gdwarf-4 failed");
    }
    if (build("gccz", "gcc", "g++", "-gz") == 0) {
        snprintf(bin, sizeof(bin), "%s/gccz", tmp);
        CHECKF(sh("readelf -SW '%s' | grep -q 'debug_info.* C '", bin) == 0,
               "gcc -gz: .debug_info is not compressed");
        check_variant("gcc -gz", bin, "", NULL, "", bin);
    } else {
        CHECKF(0, "building with gcc -gz failed");
    }
    /* the legacy .zdebug_* sections ("ZLIB" and a big-endian size), where binutils still
       writes them */
    if (build("gcczg", "gcc", "g++", "-gz=zlib-gnu") == 0 &&
        sh("readelf -SW '%s/gcczg' | grep -q zdebug_info", tmp) == 0) {
        snprintf(bin, sizeof(bin), "%s/gcczg", tmp);
        check_variant("gcc zlib-gnu", bin, "", NULL, "", bin);
    } else {
        printf("gcc -gz=zlib-gnu: skipped (the toolchain writes no .zdebug_ sections)\n");
    }
    if (sh("command -v clang >/dev/null && command -v clang++ >/dev/null") != 0) {
        printf("clang -g: skipped (no clang)\n");
    } else if (build("clang5", "clang", "clang++", "") == 0) {
        snprintf(bin, sizeof(bin), "%s/clang5", tmp);
        check_variant("clang -g", bin, "", NULL, "", bin);
    } else {
        CHECKF(0, "building with clang failed");
    }

    /* stripped, debug file beside it by .gnu_debuglink (CRC32; no build id passed) */
    if (sh("cd '%s' && cp gcc5 strip_l && objcopy --only-keep-debug strip_l strip_l.debug && "
           "objcopy --strip-debug strip_l && objcopy --add-gnu-debuglink=strip_l.debug strip_l",
           tmp) == 0) {
        snprintf(bin, sizeof(bin), "%s/strip_l", tmp);
        snprintf(files, sizeof(files), "%s %s.debug", bin, bin);
        CHECK(sh("readelf -SW '%s' | grep -q debug_info", bin) != 0);
        check_variant("debuglink", bin, "", "/nonexistent", "", files);
        /* the same file with another CRC is refused */
        pe_dw_trim();
        sh("cd '%s' && mkdir -p crc && cp strip_l crc/ && cp strip_l.debug crc/ && "
           "printf x >> crc/strip_l.debug",
           tmp);
        snprintf(bin, sizeof(bin), "%s/crc/strip_l", tmp);
        CHECK(pe_dw_open(bin, "", "/nonexistent") == NULL);
        /* and in .debug/ beside the object */
        sh("cd '%s' && mkdir -p sub/.debug && cp strip_l sub/ && cp strip_l.debug sub/.debug/",
           tmp);
        snprintf(bin, sizeof(bin), "%s/sub/strip_l", tmp);
        CHECK(pe_dw_open(bin, "", "/nonexistent") != NULL);
        /* and under <debug_dir>/<the object's directory>/ */
        sh("cd '%s' && mkdir -p far 'gd/%s/far' && cp strip_l far/ && cp strip_l.debug "
           "'gd/%s/far/'",
           tmp, tmp, tmp);
        snprintf(bin, sizeof(bin), "%s/far/strip_l", tmp);
        snprintf(ddir, sizeof(ddir), "%s/gd", tmp);
        CHECK(pe_dw_open(bin, "", "/nonexistent") == NULL);
        pe_dw_trim(); /* the answer above is cached */
        CHECK(pe_dw_open(bin, "", ddir) != NULL);
    } else {
        CHECKF(0, "making the debuglink binary failed");
    }

    /* stripped, debug file found by build id in a debug directory */
    snprintf(bin, sizeof(bin), "%s/gcc5", tmp);
    if (build_id_of(bin, id, sizeof(id)) == 0 &&
        sh("cd '%s' && cp gcc5 strip_b && objcopy --only-keep-debug strip_b strip_b.debug && "
           "objcopy --strip-debug strip_b && mkdir -p dbg/.build-id/%.2s && "
           "cp strip_b.debug dbg/.build-id/%.2s/%s.debug",
           tmp, id, id, id + 2) == 0) {
        snprintf(bin, sizeof(bin), "%s/strip_b", tmp);
        snprintf(ddir, sizeof(ddir), "%s/dbg", tmp);
        snprintf(dbg, sizeof(dbg), "%s/strip_b.debug", tmp);
        snprintf(extra, sizeof(extra), "--debug-file-directory='%s'", ddir);
        snprintf(files, sizeof(files), "%s %s", bin, dbg);
        check_variant("build-id dir", bin, id, ddir, extra, files);
        /* a wrong build id finds nothing */
        CHECK(pe_dw_open(bin, "00112233445566778899aabbccddeeff00112233", ddir) == NULL);
    } else {
        CHECKF(0, "making the build-id binary failed");
    }
}

static void
libc_check(void)
{
    const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
    char id[130], dbg[512], files[1200];
    struct stat st;

    if (build_id_of(libc, id, sizeof(id)) < 0) {
        printf("libc: skipped (no build id)\n");
        return;
    }
    snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
    if (stat(dbg, &st) < 0) {
        printf("libc: skipped (libc6-dbg is not installed)\n");
        return;
    }
    snprintf(files, sizeof(files), "%s %s", libc, dbg);
    check_variant("libc", libc, id, "/usr/lib/debug", "", files);
}

/* ---- limits ---------------------------------------------------------------------------------- */

static void
limits(void)
{
    char bin[512];
    pe_dw_frame_t fr[8];
    uint64_t addrs[16];
    pe_dw_obj_t *o;
    int n, i, r = 0;

    snprintf(bin, sizeof(bin), "%s/gcc5", tmp);
    if (text_addrs(bin, addrs, 16) < 16)
        return;
    pe_dw_trim();
    CHECK(pe_dw_bytes() == 0);
    pe_dw_set_limits(4096, 0);
    o = pe_dw_open(bin, "", NULL);
    CHECK(o != NULL);
    CHECK(pe_dw_lookup(o, addrs[8], fr, 8) == -E2BIG);
    CHECK(pe_dw_bytes() <= 4096);
    pe_dw_set_limits(0, 1); /* the default budget; a deadline long past */
    CHECK(pe_dw_lookup(o, addrs[8], fr, 8) == -ETIMEDOUT);
    pe_dw_set_limits(0, 0);
    for (i = 0; i < 16; i++)
        if ((n = pe_dw_lookup(o, addrs[i], fr, 8)) > 0)
            r++;
    CHECK(r > 8);
    CHECK(pe_dw_bytes() > 0);
    {
        /* a deadline reached keeps what was read: the next lookups answer from it */
        size_t held = pe_dw_bytes();

        pe_dw_set_limits(0, 1);
        CHECK(pe_dw_lookup(o, addrs[3], fr, 8) == -ETIMEDOUT);
        CHECK(pe_dw_bytes() == held);
        pe_dw_set_limits(0, 0);
        CHECK(pe_dw_lookup(o, addrs[3], fr, 8) > 0);
        CHECK(pe_dw_bytes() == held);
    }
    /* the same object again: from the cache */
    CHECK(pe_dw_open(bin, "", NULL) == o);
    /* no DWARF anywhere: NULL, and NULL again from the cache */
    CHECK(pe_dw_open("/bin/sh", "", "/nonexistent") == NULL);
    CHECK(pe_dw_open("/bin/sh", "", "/nonexistent") == NULL);
    CHECK(pe_dw_open("/nonexistent/file", "", NULL) == NULL);
    /* a one-frame buffer keeps the innermost frame */
    for (i = 0; i < 16; i++) {
        pe_dw_frame_t big[64], one[1];
        int nb = pe_dw_lookup(o, addrs[i], big, 64), n1 = pe_dw_lookup(o, addrs[i], one, 1);

        CHECK(nb <= 0 ? n1 == nb
                      : (n1 == 1 && same(one[0].name, big[0].name) && one[0].line == big[0].line));
    }
    pe_dw_trim();
    CHECK(pe_dw_bytes() == 0);
}

/* ---- robustness --------------------------------------------------------------------------------
 */

typedef struct span_s {
    uint64_t off, size;
} span_t;

/* The file ranges of the .debug_* sections and of the section headers. */
static int
debug_spans(const char *bin, span_t *sp, int max)
{
    char cmd[1200], line[512];
    FILE *p;
    int n = 0;

    snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", bin);
    if (!(p = popen(cmd, "r")))
        return 0;
    while (fgets(line, sizeof(line), p)) {
        char *t = strstr(line, " .debug_");
        unsigned long long a, off, sz;

        if (t && (t = strstr(t, "PROGBITS")) &&
            sscanf(t + 8, "%llx %llx %llx", &a, &off, &sz) == 3 && n < max && sz > 0) {
            sp[n].off = off;
            sp[n].size = sz;
            n++;
        }
    }
    pclose(p);
    return n;
}

static int
read_all(const char *path, uint8_t **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long n;

    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)n + 1);
    *len = fread(*buf, 1, (size_t)n, f);
    fclose(f);
    return 0;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
    uint64_t x = rnd_state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rnd_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static void
corrupt(const char *name, int rounds)
{
    static const uint32_t bogus[] = {0xffffffffu, 0xfffffff0u, 0x7fffffffu,
                                     0x80000000u, 0x10000u,    0};
    char bin[512], out[512];
    uint8_t *img, *buf;
    size_t len;
    span_t sp[64];
    uint64_t addrs[64];
    pe_dw_frame_t fr[16];
    int nsp, na, i, k, opened = 0, answered = 0;
    struct timespec t0, t1;

    snprintf(bin, sizeof(bin), "%s/%s", tmp, name);
    snprintf(out, sizeof(out), "%s/corrupt", tmp);
    nsp = debug_spans(bin, sp, 64);
    na = text_addrs(bin, addrs, 64);
    if (nsp == 0 || na == 0 || read_all(bin, &img, &len) < 0) {
        CHECKF(0, "corrupt %s: cannot read it", name);
        return;
    }
    buf = malloc(len);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < rounds; i++) {
        size_t n = len;
        const span_t *s = &sp[rnd() % (uint64_t)nsp];
        int mode = (int)(rnd() % 5), hits = 1 + (int)(rnd() % 24);
        FILE *f;
        pe_dw_obj_t *o;

        memcpy(buf, img, len);
        for (k = 0; k < hits; k++) {
            uint64_t at = s->off + rnd() % s->size;

            switch (mode) {
            case 0: buf[at] = (uint8_t)rnd(); break; /* random bytes */
            case 1:                                  /* a bogus size or offset */
                if (at + 4 <= len) {
                    uint32_t v = bogus[rnd() % 6];

                    memcpy(buf + (at & ~3ull), &v, 4);
                }
                break;
            case 2: /* a LEB128 that never ends */
                memset(buf + at, 0xff, at + 16 <= len ? 16 : len - at);
                break;
            case 3: buf[at] ^= (uint8_t)(1u << (rnd() % 8)); break; /* bit flips */
            default: break;
            }
        }
        if (mode == 4) /* truncated */
            n = (size_t)(rnd() % len);
        if (!(f = fopen(out, "wb")))
            break;
        fwrite(buf, 1, n, f);
        fclose(f);
        o = pe_dw_open(out, "", "/nonexistent");
        opened += o != NULL;
        for (k = 0; o && k < na; k++)
            answered += pe_dw_lookup(o, addrs[k], fr, 16) > 0;
        pe_dw_trim();
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("corrupt %-8s %d rounds: %d opened, %d answers, %.0f ms\n", name, rounds, opened,
           answered,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    CHECK(pe_dw_bytes() == 0);
    free(buf);
    free(img);
}

static void
replay_corpus(const char *dir)
{
    char cmd[600], path[1024];
    FILE *p;
    int n = 0;

    snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null", dir);
    if (!(p = popen(cmd, "r")))
        return;
    while (fgets(path + 512, 512, p)) {
        uint8_t *buf;
        size_t len;
        char full[1100];

        path[512 + strcspn(path + 512, "\n")] = '\0';
        snprintf(full, sizeof(full), "%s/%s", dir, path + 512);
        if (read_all(full, &buf, &len) < 0)
            continue;
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        n++;
    }
    pclose(p);
    printf("corpus %s: %d inputs replayed\n", dir, n);
    CHECK(n > 0);
}

int
main(void)
{
    struct stat st;

    if (getenv("PE_DWARF_SRC"))
        srcdir = getenv("PE_DWARF_SRC");
    if (stat(srcdir, &st) < 0) {
        printf("skipped: %s not found (run from the source tree)\n", srcdir);
        return 77;
    }
    if (sh("command -v llvm-symbolizer >/dev/null && command -v gcc >/dev/null && "
           "command -v g++ >/dev/null && command -v objcopy >/dev/null") != 0) {
        printf("skipped: needs llvm-symbolizer, gcc, g++ and binutils\n");
        return 77;
    }
    snprintf(tmp, sizeof(tmp), "/tmp/u_dwarf.XXXXXX");
    if (!mkdtemp(tmp))
        return 1;
    {
        /* the sources by absolute path: the builds run in tmp */
        static char abs[1024];

        if (srcdir[0] != '/' && getcwd(abs, sizeof(abs) - 64)) {
            strcat(abs, "/");
            strncat(abs, srcdir, sizeof(abs) - strlen(abs) - 1);
            srcdir = abs;
        }
    }
    variants();
    libc_check();
    limits();
    corrupt("gcc5", 150);
    corrupt("gcc4", 100);
    corrupt("clang5", 100);
    corrupt("gccz", 50);
    replay_corpus("test/unit/corpus_dwarf");
    pe_dw_trim();
    sh("rm -rf '%s'", tmp);
    return pe_test_done();
}
