/*
 * u_prof.c: unit tests for the profile model and its encoders (profile/, proto/, render/).
 * Samples are made of known PCs inside this binary's own static and global
 * functions, a libc function, a dlopen'd stripped library and the vdso, so
 * names can be checked exactly; the pprof output is gunzipped and decoded back
 * with nanopb, and the text reports are searched for their expected lines.
 *
 *   u_prof                         run the tests
 *   u_prof --write F [--no-names]  write the fixed e2e profile to F (test/e2e/e2e_proto.sh)
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <pb_decode.h>

#include "pe_test.h"
#include "profile.pb.h"
#include "profile/profile.h"
#include "profile/profile_int.h"
#include "proto/pprof.h"
#include "render/render.h"
#include "symbols/symbols.h"

#define MS 1000000LL

/* ---- functions whose addresses we sample ------------------------------------------- */

static volatile int spin_sink;

static __attribute__((noinline)) void
leaf_static(int n)
{
    int i;

    for (i = 0; i < n; i++)
        spin_sink += i * 3;
    spin_sink ^= n;
}

static __attribute__((noinline)) void
mid_static(int n)
{
    int i;

    for (i = 0; i < n; i++)
        leaf_static(i);
    spin_sink ^= n;
}

void u_prof_root(int n);
int main(int argc, char **argv);

__attribute__((noinline)) void
u_prof_root(int n)
{
    int i;

    for (i = 0; i < n; i++)
        mid_static(i);
    spin_sink ^= n;
}

static const pe_prof_vt_t types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
static const pe_prof_vt_t period_type = {"cpu", "nanoseconds"};

/* ---- helpers --------------------------------------------------------------------------- */

/* The sample whose leaf frame is named `leaf` and has label thread=tid (-1: any). */
static int
find_sample(const pe_prof_t *p, const char *leaf, int64_t tid, pe_prof_sample_t *out)
{
    int i, j;

    for (i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample(p, i, out);
        if (out->nframes < 1 || strcmp(out->frames[0]->name, leaf) != 0)
            continue;
        if (tid < 0)
            return 1;
        for (j = 0; j < out->nlabels; j++)
            if (strcmp(out->labels[j].key, "thread") == 0 && out->labels[j].num == tid)
                return 1;
    }
    return 0;
}

/* The fixed profile test/e2e/e2e_proto.sh checks; see the expectations there. */
static pe_prof_t *
build_fixed(void)
{
    const uintptr_t leaf = (uintptr_t)leaf_static, mid = (uintptr_t)mid_static;
    const uintptr_t root = (uintptr_t)u_prof_root, gp = (uintptr_t)getpid;
    const uintptr_t s1[] = {leaf + 4, mid + 8, root + 8};
    const uintptr_t s3[] = {mid + 4, root + 8};
    const uintptr_t s5[] = {gp + 1, root + 8};
    const uintptr_t s6[] = {0x1000, root + 8};
    const int64_t one[] = {1, 10 * MS}, two[] = {2, 20 * MS};
    pe_prof_label_t l101[] = {{.key = "thread", .num = 101},
                              {.key = "thread_name", .str = "worker"}};
    pe_prof_label_t l102[] = {{.key = "thread", .num = 102},
                              {.key = "thread_name", .str = "other"}};
    pe_prof_t *p = pe_prof_new(types, 2, &period_type, 10 * MS);
    int err = 0, i;

    if (!p)
        return NULL;
    for (i = 0; i < 3; i++)
        err |= pe_prof_add(p, s1, 3, 1, one, l101, 2);
    err |= pe_prof_add(p, s1, 3, 1, one, l102, 2);
    err |= pe_prof_add(p, s3, 2, 1, two, l101, 2);
    err |= pe_prof_add_named(p, "[truncated]", one, l102, 2);
    err |= pe_prof_add(p, s5, 2, 1, one, l101, 1);
    err |= pe_prof_add(p, s6, 2, 1, one, NULL, 0);
    pe_prof_set_time(p, 1700000000LL * 1000 * MS, 1000 * MS);
    pe_prof_set_default_type(p, "cpu");
    err |= pe_prof_comment(p, "u_prof fixed profile %d", 1);
    if (err) {
        pe_prof_free(p);
        return NULL;
    }
    return p;
}

/* ---- model and names -------------------------------------------------------------------- */

static void
test_model(void)
{
    const uintptr_t leaf = (uintptr_t)leaf_static, mid = (uintptr_t)mid_static;
    const uintptr_t root = (uintptr_t)u_prof_root;
    uintptr_t deep[200];
    const int64_t one[] = {1, 10 * MS};
    pe_prof_label_t many[PE_PROF_MAX_LABELS + 1] = {{.key = "a"}, {.key = "b"}, {.key = "c"},
                                                    {.key = "d"}, {.key = "e"}, {.key = "f"}};
    pe_prof_t *p = build_fixed();
    pe_prof_sample_t s;
    int i;

    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(pe_prof_ntypes(p) == 2);
    CHECK(strcmp(pe_prof_type(p, 1)->unit, "nanoseconds") == 0);
    CHECK(pe_prof_type(p, 2) == NULL);
    CHECK(pe_prof_type_index(p, "samples") == 0);
    CHECK(pe_prof_type_index(p, "nope") == -1);
    CHECK(pe_prof_default_index(p) == 1);
    /* 3 merged + 1 other thread + mid leaf + named + getpid + unknown */
    CHECKF(pe_prof_nsamples(p) == 6, "nsamples %d", pe_prof_nsamples(p));
    CHECK(pe_prof_add(p, deep, 0, 1, one, many, PE_PROF_MAX_LABELS + 1) == -EINVAL);
    CHECK(pe_prof_add(p, NULL, 3, 1, one, NULL, 0) == -EINVAL);
    CHECK(pe_prof_resolve(p, 0) == 0);
    CHECK(pe_prof_resolve(p, 0) == 0); /* idempotent */

    CHECK(find_sample(p, "leaf_static", 101, &s));
    CHECK(s.nframes == 3 && s.values[0] == 3 && s.values[1] == 30 * MS);
    if (s.nframes == 3) {
        CHECK(s.frames[0]->addr == leaf + 4); /* exact leaf stays */
        CHECK(s.frames[0]->offset == 4);
        CHECK(s.frames[1]->addr == mid + 7); /* return address - 1 */
        CHECKF(strcmp(s.frames[1]->name, "mid_static") == 0, "got %s", s.frames[1]->name);
        CHECKF(strcmp(s.frames[2]->name, "u_prof_root") == 0, "got %s", s.frames[2]->name);
        CHECK(s.frames[0]->file && strstr(s.frames[0]->file, "u_prof") != NULL);
    }
    CHECK(s.nlabels == 2 && strcmp(s.labels[1].str, "worker") == 0);
    CHECK(find_sample(p, "leaf_static", 102, &s) && s.values[0] == 1);
    CHECK(find_sample(p, "mid_static", -1, &s) && s.nframes == 2 && s.values[1] == 20 * MS &&
          s.frames[0]->addr == mid + 4);
    CHECK(find_sample(p, "[truncated]", -1, &s) && s.nframes == 1 && s.frames[0]->file == NULL);
    /* libc's symbol comes from libc6-dbg's .symtab or libc's .dynsym. */
    CHECK(find_sample(p, "getpid", -1, &s) || find_sample(p, "__getpid", -1, &s));
    CHECK(find_sample(p, "0x1000", -1, &s) && s.frames[0]->file == NULL);

    /* Deep stacks keep their leaf end. */
    for (i = 0; i < 200; i++)
        deep[i] = i == 0 ? leaf + 2 : root + 8;
    CHECK(pe_prof_add(p, deep, 200, 1, one, NULL, 0) == 0);
    CHECK(pe_prof_resolve(p, 0) == 0); /* picks up the new locations */
    CHECK(find_sample(p, "leaf_static", -1, &s));
    for (i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample(p, i, &s);
        if (s.nframes > 3)
            CHECKF(s.nframes == PE_MAX_FRAMES && s.frames[0]->addr == leaf + 2 &&
                       strcmp(s.frames[0]->name, "leaf_static") == 0,
                   "nframes %d", s.nframes);
    }
    pe_prof_free(p);
}

static void
test_symbolize(void)
{
    char buf[128], small[5];
    uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
    void *h, *fn;

    CHECK(pe_sym_symbolize((uintptr_t)mid_static + 3, buf, sizeof(buf)) == buf &&
          strcmp(buf, "mid_static") == 0);
    CHECK(pe_sym_symbolize((uintptr_t)u_prof_root, buf, sizeof(buf)) &&
          strcmp(buf, "u_prof_root") == 0);
    CHECK(pe_sym_symbolize((uintptr_t)main, buf, sizeof(buf)) && strcmp(buf, "main") == 0);
    CHECK(pe_sym_symbolize((uintptr_t)u_prof_root, small, sizeof(small)) &&
          strcmp(small, "u_pr") == 0);
    CHECK(pe_sym_symbolize(0x1000, buf, sizeof(buf)) == NULL);
    CHECK(pe_sym_symbolize((uintptr_t)&spin_sink, buf, sizeof(buf)) == NULL); /* data */

    /* A stripped Debian library: names come from .dynsym; gone after dlclose. */
    h = dlopen("libbz2.so.1.0", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        fn = dlsym(h, "BZ2_bzCompress");
        CHECK(fn && pe_sym_symbolize((uintptr_t)fn + 5, buf, sizeof(buf)) &&
              strcmp(buf, "BZ2_bzCompress") == 0);
        dlclose(h);
        /* The object is unmapped now (nothing else holds libbz2 here). */
        CHECK(pe_sym_symbolize((uintptr_t)fn + 5, buf, sizeof(buf)) == NULL);
    } else {
        fprintf(stderr, "u_prof: no libbz2.so.1.0, dlopen case skipped\n");
    }

    /* The vdso is read from memory: every exported function must resolve. */
    if (vdso) {
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)vdso;
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(vdso + eh->e_shoff);
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(vdso + eh->e_phoff);
        uintptr_t bias = vdso;
        int i, checked = 0;

        for (i = 0; i < eh->e_phnum; i++)
            if (ph[i].p_type == PT_LOAD) {
                bias = vdso - ph[i].p_vaddr;
                break;
            }
        for (i = 0; i < eh->e_shnum; i++) {
            const Elf64_Sym *sym;
            const char *strs;
            size_t k;

            if (sh[i].sh_type != SHT_DYNSYM)
                continue;
            sym = (const Elf64_Sym *)(vdso + sh[i].sh_offset);
            strs = (const char *)(vdso + sh[sh[i].sh_link].sh_offset);
            for (k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
                if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_size)
                    continue;
                CHECKF(pe_sym_symbolize(bias + sym[k].st_value + 1, buf, sizeof(buf)) != NULL,
                       "vdso %s", strs + sym[k].st_name);
                checked++;
            }
        }
        CHECK(checked > 0);
    }
}

/* ---- pprof --------------------------------------------------------------------------------- */

typedef struct decoded_s {
    int nsample, nmapping, nlocation, nfunction, nstring;
    int first_empty, saw_leaf, lines;
    int64_t value_sum[2];
    int64_t main_mapping_has_functions;
} decoded_t;

static bool
dec_sample(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    decoded_t *d = *arg;
    perftools_profiles_Sample s = perftools_profiles_Sample_init_zero;

    if (!pb_decode(stream, perftools_profiles_Sample_fields, &s))
        return false;
    d->nsample++;
    if (s.value_count == 2) {
        d->value_sum[0] += s.value[0];
        d->value_sum[1] += s.value[1];
    }
    return true;
}

static bool
dec_mapping(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    decoded_t *d = *arg;
    perftools_profiles_Mapping m = perftools_profiles_Mapping_init_zero;

    if (!pb_decode(stream, perftools_profiles_Mapping_fields, &m))
        return false;
    if (++d->nmapping == 1)
        d->main_mapping_has_functions = m.has_functions;
    return m.id == (uint64_t)d->nmapping && m.memory_start < m.memory_limit;
}

static bool
dec_location(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    decoded_t *d = *arg;
    perftools_profiles_Location l = perftools_profiles_Location_init_zero;

    if (!pb_decode(stream, perftools_profiles_Location_fields, &l))
        return false;
    d->lines += l.line_count;
    return l.id == (uint64_t)++d->nlocation;
}

static bool
dec_function(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    decoded_t *d = *arg;
    perftools_profiles_Function f = perftools_profiles_Function_init_zero;

    if (!pb_decode(stream, perftools_profiles_Function_fields, &f))
        return false;
    return f.id == (uint64_t)++d->nfunction && f.name != 0 && f.system_name == f.name;
}

static bool
dec_string(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
    decoded_t *d = *arg;
    char buf[256];
    size_t n = stream->bytes_left;

    if (n >= sizeof(buf))
        return pb_read(stream, NULL, n);
    if (!pb_read(stream, (pb_byte_t *)buf, n))
        return false;
    buf[n] = '\0';
    if (d->nstring++ == 0)
        d->first_empty = n == 0;
    if (strcmp(buf, "leaf_static") == 0)
        d->saw_leaf = 1;
    return true;
}

static int
decode_pprof(const pe_membuf_t *mb, decoded_t *d, perftools_profiles_Profile *prof)
{
    unsigned char *raw = NULL;
    pb_istream_t in;
    long n;
    int ok;

    memset(d, 0, sizeof(*d));
    memset(prof, 0, sizeof(*prof));
    n = pe_test_gunzip(mb->data, mb->len, &raw);
    if (n < 0)
        return 0;
    prof->sample.funcs.decode = dec_sample;
    prof->sample.arg = d;
    prof->mapping.funcs.decode = dec_mapping;
    prof->mapping.arg = d;
    prof->location.funcs.decode = dec_location;
    prof->location.arg = d;
    prof->function.funcs.decode = dec_function;
    prof->function.arg = d;
    prof->string_table.funcs.decode = dec_string;
    prof->string_table.arg = d;
    in = pb_istream_from_buffer(raw, (size_t)n);
    ok = pb_decode(&in, perftools_profiles_Profile_fields, prof);
    if (!ok)
        fprintf(stderr, "decode: %s\n", PB_GET_ERROR(&in));
    free(raw);
    return ok;
}

static void
test_pprof(void)
{
    perftools_profiles_Profile prof;
    pe_prof_t *p = build_fixed();
    pe_membuf_t mb;
    decoded_t d;

    pe_membuf_init(&mb);
    CHECK(p && pe_prof_write_pprof(p, &mb.sink) == 0);
    CHECK(decode_pprof(&mb, &d, &prof));
    CHECK(d.nsample == 6);
    CHECK(d.value_sum[0] == 9 && d.value_sum[1] == 90 * MS);
    CHECK(d.first_empty && d.saw_leaf);
    /* leaf, mid (as caller and as exact leaf), root, getpid, 0x1000, [truncated] */
    CHECKF(d.nlocation == 7, "locations %d", d.nlocation);
    CHECK(d.nfunction == 5); /* leaf, mid, root, getpid, [truncated] */
    CHECK(d.lines == 6);     /* all but 0x1000 */
    CHECK(d.nmapping >= 2);  /* u_prof, libc */
    CHECK(d.main_mapping_has_functions == 1);
    CHECK(prof.sample_type_count == 2 && prof.has_period_type && prof.period == 10 * MS);
    CHECK(prof.comment_count == 1 && prof.default_sample_type != 0);
    CHECK(prof.duration_nanos == 1000 * MS);
    pe_membuf_free(&mb);

    /* no_names: only the pseudo-frame keeps a function; the rest is left to pprof. */
    CHECK(pe_prof_resolve(p, 1) == 0);
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_pprof(p, &mb.sink) == 0);
    CHECK(decode_pprof(&mb, &d, &prof));
    CHECK(d.nsample == 6 && d.nfunction == 1 && d.lines == 1);
    CHECK(d.main_mapping_has_functions == 0);
    pe_membuf_free(&mb);

    /* Every comment the model keeps is encoded (a pid=all merge fills them:
       with Profile.comment's max_count at 8 the encoder overran its stack). */
    while (pe_prof_comment(p, "comment %d", p->ncomments) == 0 &&
           p->ncomments < PE_PROF_MAX_COMMENTS)
        ;
    CHECKF(p->ncomments == PE_PROF_MAX_COMMENTS, "comments %d", p->ncomments);
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_pprof(p, &mb.sink) == 0);
    CHECK(decode_pprof(&mb, &d, &prof));
    CHECKF(prof.comment_count == PE_PROF_MAX_COMMENTS, "decoded %d", prof.comment_count);
    pe_membuf_free(&mb);
    pe_prof_free(p);
}

/* ---- text ------------------------------------------------------------------------------------ */

/* Is there a flat line "<count> <self> <file> <func>" (any spacing)? want = "file func". */
static int
flat_row(const char *text, const char *want, long count, long self)
{
    char file[64], num[16], func[64], line[256];
    const char *s = text, *e;
    long c, o;

    for (; (e = strchr(s, '\n')) != NULL; s = e + 1) {
        snprintf(line, sizeof(line), "%.*s", (int)(e - s), s);
        /* Julia's columns: Count Overhead File Line Function */
        if (sscanf(line, "%ld %ld %63s %15s %63s", &c, &o, file, num, func) != 5)
            continue;
        snprintf(line, sizeof(line), "%s %s", file, func);
        if (strcmp(line, want) == 0)
            return c == count && o == self;
    }
    return 0;
}

static void
test_text(void)
{
    pe_text_opts_t o = {.value_index = -1};
    pe_prof_t *p = build_fixed();
    pe_membuf_t mb;

    CHECK(p != NULL);
    if (!p)
        return;
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_text(p, &mb.sink, &o) == 0);
    CHECKF(strstr(mb.data, "cpu (nanoseconds), tree view") != NULL, "%s", mb.data);
    /* root holds everything but [truncated]; children sorted by count. */
    CHECKF(strstr(mb.data, "|80000000 [u_prof] u_prof_root\n") != NULL, "%s", mb.data);
    CHECK(strstr(mb.data, "| 60000000 [u_prof] mid_static\n") != NULL);
    CHECK(strstr(mb.data, "40000000|  40000000 [u_prof] leaf_static\n") != NULL);
    CHECK(strstr(mb.data, "10000000 [truncated]\n") != NULL); /* no object: the name alone */
    CHECK(strstr(mb.data, "mid_static") < strstr(mb.data, "0x1000"));
    CHECK(strstr(mb.data, "Total: 90000000 nanoseconds of cpu, summed over 6 distinct stacks") !=
          NULL);
    if (o.value_index == -1 && pe_test_failed)
        fputs(mb.data, stderr);
    pe_membuf_free(&mb);

    /* mincount and maxdepth prune. */
    o.mincount = 50 * MS;
    o.maxdepth = 2;
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_text(p, &mb.sink, &o) == 0);
    CHECK(strstr(mb.data, "mid_static") != NULL);
    CHECK(strstr(mb.data, "leaf_static") == NULL); /* depth 3 */
    CHECK(strstr(mb.data, "[truncated]") == NULL); /* 10 ms */
    pe_membuf_free(&mb);

    /* Flat, sample counts: inclusive count, then self. */
    o = (pe_text_opts_t){.flat = 1, .value_index = 0};
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_text(p, &mb.sink, &o) == 0);
    CHECKF(strstr(mb.data, "Count Overhead File") != NULL, "%s", mb.data);
    CHECK(flat_row(mb.data, "[u_prof] u_prof_root", 8, 0));
    CHECK(flat_row(mb.data, "[u_prof] mid_static", 6, 2));
    CHECK(flat_row(mb.data, "[u_prof] leaf_static", 4, 4));
    CHECK(flat_row(mb.data, "[libc.so.6] getpid", 1, 1));
    CHECK(strstr(mb.data, "u_prof_root") < strstr(mb.data, "leaf_static"));
    pe_membuf_free(&mb);

    /* By thread: 101 (worker), 102 (other), then unlabelled. */
    o = (pe_text_opts_t){.by_thread = 1, .value_index = 0};
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_text(p, &mb.sink, &o) == 0);
    CHECKF(strstr(mb.data, "Thread 101 worker\n") != NULL, "%s", mb.data);
    CHECK(strstr(mb.data, "Thread 102 other\n") != NULL);
    CHECK(strstr(mb.data, "Thread ? (no thread label)") != NULL);
    CHECK(strstr(mb.data, "Thread 101") < strstr(mb.data, "Thread 102"));
    CHECK(strstr(mb.data, "Total: 6 count of samples, summed over 3 distinct stacks") !=
          NULL); /* thread 101 */
    pe_membuf_free(&mb);

    o.value_index = 7;
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_text(p, &mb.sink, &o) == -EINVAL);
    pe_membuf_free(&mb);
    pe_prof_free(p);
}

/* ---- edges --------------------------------------------------------------------------------------
 */

static void
test_empty(void)
{
    pe_prof_t *p = pe_prof_new(types, 1, NULL, 0);
    perftools_profiles_Profile prof;
    pe_membuf_t mb;
    decoded_t d;

    CHECK(pe_prof_new(types, 0, NULL, 0) == NULL && errno == EINVAL);
    CHECK(pe_prof_new(types, 5, NULL, 0) == NULL);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(pe_prof_default_index(p) == 0);
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_pprof(p, &mb.sink) == 0);
    CHECK(decode_pprof(&mb, &d, &prof) && d.nsample == 0 && d.first_empty && d.nstring >= 3);
    CHECK(!prof.has_period_type && prof.default_sample_type == 0);
    pe_membuf_free(&mb);
    pe_membuf_init(&mb);
    CHECK(pe_prof_write_text(p, &mb.sink, NULL) == 0);
    CHECK(strstr(mb.data, "Total: 0 count of samples, summed over 0 distinct stacks") != NULL);
    pe_membuf_free(&mb);
    pe_prof_free(p);
    pe_prof_free(NULL);
}

/* Profiles on several threads share the symbol cache under its lock. */
static void *
resolve_loop(void *arg)
{
    long bad = 0;
    int i;

    for (i = 0; i < 50; i++) {
        pe_prof_t *p = build_fixed();
        pe_prof_sample_t s;

        if (!p || pe_prof_resolve(p, 0) != 0 || !find_sample(p, "leaf_static", 101, &s))
            bad++;
        pe_prof_free(p);
    }
    return (void *)bad;
}

static void
test_threads(void)
{
    pthread_t t[4];
    void *bad;
    int i;

    for (i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, resolve_loop, NULL) == 0);
    for (i = 0; i < 4; i++) {
        CHECK(pthread_join(t[i], &bad) == 0);
        CHECK(bad == NULL);
    }
}

/* ---- size and speed ----------------------------------------------------------------------------
 */

static int
discard_write(pe_sink_t *sink, const void *buf, size_t len)
{
    return 0;
}

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
test_big(int n)
{
    const uintptr_t fns[] = {(uintptr_t)leaf_static, (uintptr_t)mid_static, (uintptr_t)u_prof_root,
                             (uintptr_t)printf,      (uintptr_t)memcpy,     (uintptr_t)qsort,
                             (uintptr_t)getpid,      (uintptr_t)deflate};
    const int64_t v[] = {1, 10 * MS};
    pe_sink_t discard = {.write = discard_write};
    pe_text_opts_t o = {.value_index = -1};
    pe_prof_label_t lab = {.key = "thread"};
    uintptr_t pcs[24];
    pe_prof_t *p = pe_prof_new(types, 2, &period_type, 10 * MS);
    double t0 = now(), t1, t2;
    uint64_t x = 12345;
    int i, j, err = 0;

    CHECK(p != NULL);
    if (!p)
        return;
    for (i = 0; i < n && !err; i++) {
        /* xorshift stacks: mostly distinct, ~24 frames, a few thousand addresses. */
        for (j = 0; j < 24; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            pcs[j] = fns[x % 8] + (j < 4 ? (x >> 8) % 2048 : (x >> 8) % 16);
        }
        lab.num = i % 16;
        err = pe_prof_add(p, pcs, 24, 1, v, &lab, 1);
    }
    CHECK(err == 0);
    CHECK(pe_prof_resolve(p, 0) == 0);
    t1 = now();
    CHECK(pe_prof_write_pprof(p, &discard) == 0);
    t2 = now();
    CHECK(pe_prof_write_text(p, &discard, &o) == 0);
    printf("u_prof: %d samples (%d distinct): build+resolve %.3f s, pprof %.3f s, text %.3f s\n", n,
           pe_prof_nsamples(p), t1 - t0, t2 - t1, now() - t2);
    /* Generous: the target is well under a second (make bench times it); this
     * only catches blow-ups (quadratic work takes minutes), and must hold under
     * ASan on a busy 2-core machine (5.4 s seen).  Runs under valgrind (small
     * n) are too slow to time. */
    if (n >= 100000)
        CHECKF(now() - t0 < 30.0, "took %.3f s", now() - t0);
    pe_prof_free(p);
}

/* ---- main
 * ------------------------------------------------------------------------------------------ */

static int
write_fixed(const char *path, int no_names)
{
    pe_prof_t *p = build_fixed();
    pe_fdsink_t fs;
    int fd, err;

    if (!p)
        return 1;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror(path);
        pe_prof_free(p);
        return 1;
    }
    pe_fdsink_init(&fs, fd);
    err = pe_prof_resolve(p, no_names);
    if (!err)
        err = pe_prof_write_pprof(p, &fs.sink);
    close(fd);
    pe_prof_free(p);
    if (err)
        fprintf(stderr, "u_prof: writing %s: %s\n", path, strerror(-err));
    return err ? 1 : 0;
}

int
main(int argc, char **argv)
{
    /* Keep the sampled functions alive and reachable, as in a real program. */
    u_prof_root(3);
    if (argc >= 3 && strcmp(argv[1], "--write") == 0)
        return write_fixed(argv[2], argc >= 4 && strcmp(argv[3], "--no-names") == 0);
    test_model();
    test_symbolize();
    test_pprof();
    test_text();
    test_empty();
    test_threads();
    /* Under valgrind (PE_TEST_SMALL=1) a smaller profile keeps the run short. */
    test_big(getenv("PE_TEST_SMALL") ? 5000 : 100000);
    return pe_test_done();
}
