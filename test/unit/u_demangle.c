/*
 * u_demangle: symbols/demangle.c against the tools people trust.  C++: every _Z name nm
 * finds in test/progs/p_names.cc (built here at -O0 and -O2) demangled exactly as c++filt
 * does, through libstdc++'s __cxa_demangle, which this C test dlopens itself (and before
 * that, a C++ name must stay mangled).  Rust: test/progs/p_names.rs built with rustc twice
 * (legacy and v0 mangling), every _ZN..17h..E and _R name compared with rustfilt or with
 * binutils' nm -C (>= 99% alike).  Then hand-written cases for the short form, and a
 * million random and mutated names through both functions with small and big buffers.
 * Without rustc the Rust part is left out and the test ends with 77 (skip).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pe_test.h"
#include "symbols/demangle.h"

#define BIG 8192

/* ---- helpers -------------------------------------------------------------------------- */

typedef struct {
    char **v;
    size_t n, cap;
} list_t;

static void
list_add(list_t *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
        if (!l->v)
            abort();
    }
    l->v[l->n++] = strdup(s);
}

static void
list_free(list_t *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int
list_has(const list_t *l, const char *s)
{
    size_t i;

    for (i = 0; i < l->n; i++) {
        if (!strcmp(l->v[i], s))
            return 1;
    }
    return 0;
}

static int
sh(const char *cmd)
{
    int rc = system(cmd);

    if (rc != 0)
        fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* The lines a command prints, without their newlines. */
static int
read_lines(const char *cmd, list_t *out)
{
    char line[BIG];
    FILE *f = popen(cmd, "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        list_add(out, line);
    }
    return pclose(f) == 0 ? 0 : -1;
}

/* nm's name column (after "ADDRESS T "). */
static const char *
nm_name(const char *line)
{
    return strlen(line) > 19 ? line + 19 : "";
}

static int
have_tool(const char *name)
{
    char cmd[256];

    snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

static const char *
dem(const char *sym)
{
    static char buf[BIG];

    return pe_dem_demangle(sym, buf, sizeof(buf));
}

static const char *
shorten(const char *s)
{
    static char buf[BIG];

    return pe_dem_shorten(s, buf, sizeof(buf));
}

#define EXPECT_DEM(sym, want)                                                                      \
    do {                                                                                           \
        const char *got_ = dem(sym);                                                               \
        CHECKF(got_ && !strcmp(got_, want), "%s -> %s, want %s", sym, got_ ? got_ : "(NULL)",      \
               want);                                                                              \
    } while (0)

#define EXPECT_SHORT(in, want)                                                                     \
    do {                                                                                           \
        const char *got_ = shorten(in);                                                            \
        CHECKF(!strcmp(got_, want), "%s -> %s, want %s", in, got_, want);                          \
    } while (0)

/* Every name of `syms` demangled as the reference lines say (ours, or the raw name when we
   give NULL); returns the number alike and prints the first few differences. */
static size_t
compare(const char *what, const list_t *syms, const list_t *ref)
{
    size_t i, same = 0, shown = 0;

    for (i = 0; i < syms->n && i < ref->n; i++) {
        const char *got = dem(syms->v[i]);

        if (!got)
            got = syms->v[i];
        if (!strcmp(got, ref->v[i])) {
            same++;
        } else if (shown++ < 10) {
            fprintf(stderr, "%s: %s\n    ours: %s\n    ref:  %s\n", what, syms->v[i], got,
                    ref->v[i]);
        }
    }
    return same;
}

/* ---- C++ ------------------------------------------------------------------------------ */

static void
test_cxx_hand(void)
{
    EXPECT_DEM("_Z3foov", "foo()");
    EXPECT_DEM("_ZN4shop9price_allERSt6vectorIjSaIjEE",
               "shop::price_all(std::vector<unsigned int, std::allocator<unsigned int> >&)");
    EXPECT_DEM("_ZN12_GLOBAL__N_111hidden_workEi", "(anonymous namespace)::hidden_work(int)");
    EXPECT_DEM("_ZNK4shop5MoneyltERKS0_", "shop::Money::operator<(shop::Money const&) const");
    EXPECT_DEM("_ZNK4shop5MoneyclEi", "shop::Money::operator()(int) const");
    EXPECT_DEM("_ZN4shop5MoneylSEi", "shop::Money::operator<<=(int)");
    EXPECT_DEM("_ZN4shop5ShelfIlEnaEm", "shop::Shelf<long>::operator new[](unsigned long)");
    EXPECT_DEM("_ZN4shop5ShelfIlEC2Em", "shop::Shelf<long>::Shelf(unsigned long)");
    EXPECT_DEM("_ZN4shop5ShelfIlED1Ev", "shop::Shelf<long>::~Shelf()");
    EXPECT_DEM("_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()(int) const");
    /* clones, alone and combined, and glibc versions, kept as c++filt keeps them */
    EXPECT_DEM("_Z3foov.isra.0", "foo() [clone .isra.0]");
    EXPECT_DEM("_Z3foov.constprop.0.isra.0", "foo() [clone .constprop.0] [clone .isra.0]");
    EXPECT_DEM("_Z3foov.part.0.cold", "foo() [clone .part.0] [clone .cold]");
    EXPECT_DEM("_Z3foov.lto_priv.0", "foo() [clone .lto_priv.0]");
    EXPECT_DEM("_ZN1AC2Ev.cold", "A::A() [clone .cold]");
    EXPECT_DEM("_Z3foov@@GLIBC_2.34", "foo()@@GLIBC_2.34");
    EXPECT_DEM("_Z3foov.isra.0@GLIBC_2.2.5", "foo() [clone .isra.0]@GLIBC_2.2.5");
    /* c++filt spells the standard abbreviations out; __cxa_demangle does not */
    EXPECT_DEM("_ZlsRSoRK3Foo",
               "operator<<(std::basic_ostream<char, std::char_traits<char> >&, Foo const&)");
    EXPECT_DEM("_Z1fSs",
               "f(std::basic_string<char, std::char_traits<char>, std::allocator<char> >)");
    /* not names, or not demangleable: NULL */
    CHECK(dem("main") == NULL);
    CHECK(dem("_Z") == NULL);
    CHECK(dem("_Z3foov.ABC") == NULL);
    CHECK(dem("_Zjunk") == NULL);
    CHECK(dem("") == NULL);
    CHECK(dem(NULL) == NULL);
}

/* A long C++ name on a thread with a small stack: libstdc++'s demangler would need ~360 kB
   for it, so it stays mangled there (no crash) and is demangled on a big stack. */
static char deep_in[1100], deep_out[BIG];
static const char *deep_ret;

static void *
deep_thread(void *arg)
{
    deep_ret = pe_dem_demangle(deep_in, deep_out, sizeof(deep_out));
    return arg;
}

static const char *
demangle_on_stack(size_t stack)
{
    pthread_attr_t a;
    pthread_t t;

    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack);
    deep_ret = "(not run)";
    if (pthread_create(&t, &a, deep_thread, NULL) == 0)
        pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    return deep_ret;
}

static void
test_cxx_stack(void)
{
    const char *r;

    memcpy(deep_in, "_Z1f", 4);
    memset(deep_in + 4, 'P', 1000);
    memcpy(deep_in + 1004, "i", 2);
    /* A thread whose stack cannot afford the name (civetweb's workers) demangles
       it on our own stack, as one with a big stack does on its own. */
    r = demangle_on_stack(256 << 10);
    CHECKF(r && !strncmp(r, "f(int*****", 10), "%.40s", r ? r : "(NULL)");
    r = demangle_on_stack(16 << 20);
    CHECKF(r && !strncmp(r, "f(int*****", 10), "%.40s", r ? r : "(NULL)");
}

/* All _Z names of p_names.cc at -O0 and -O2 against c++filt, line by line. */
static void
test_cxx_cppfilt(const char *dir)
{
    char cmd[2048], path[128];
    list_t syms = {0}, lines = {0}, ref = {0};
    size_t i, same, clones = 0;
    FILE *f;
    int opt;

    if (!have_tool("c++") || !have_tool("c++filt") || !have_tool("nm")) {
        printf("c++/c++filt/nm missing: C++ comparison left out\n");
        return;
    }
    for (opt = 0; opt <= 2; opt += 2) {
        snprintf(cmd, sizeof(cmd), "c++ -O%d -g -o %s/cxx%d test/progs/p_names.cc", opt, dir, opt);
        CHECK(sh(cmd) == 0);
        snprintf(cmd, sizeof(cmd), "nm --no-sort %s/cxx%d", dir, opt);
        CHECK(read_lines(cmd, &lines) == 0);
    }
    for (i = 0; i < lines.n; i++) {
        const char *name = nm_name(lines.v[i]);

        if (!strncmp(name, "_Z", 2) && !list_has(&syms, name))
            list_add(&syms, name);
    }
    snprintf(path, sizeof(path), "%s/cxx.txt", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        goto out;
    for (i = 0; i < syms.n; i++) {
        fprintf(f, "%s\n", syms.v[i]);
        clones += strstr(syms.v[i], ".isra") || strstr(syms.v[i], ".constprop") ||
                  strstr(syms.v[i], ".part") || strstr(syms.v[i], ".cold");
    }
    fclose(f);
    snprintf(cmd, sizeof(cmd), "c++filt < %s", path);
    CHECK(read_lines(cmd, &ref) == 0);
    CHECK(ref.n == syms.n);
    same = compare("c++", &syms, &ref);
    printf("C++: %zu of %zu names from nm as c++filt has them (%zu GCC clones)\n", same, syms.n,
           clones);
    CHECK(syms.n >= 200);
    CHECK(clones >= 1);
    CHECK(same == syms.n);
out:
    list_free(&syms);
    list_free(&lines);
    list_free(&ref);
}

/* ---- Rust ----------------------------------------------------------------------------- */

static int
is_rust_legacy(const char *s)
{
    const char *e = strstr(s, "17h");

    while (e && strchr(e + 1, 'E') && strstr(e + 1, "17h"))
        e = strstr(e + 1, "17h");
    return !strncmp(s, "_ZN", 3) && e && strlen(e) >= 20 && e[19] == 'E';
}

/* One binary's Rust names against rustfilt (when installed) or against nm -C.  Returns
   the number alike, adds to *total. */
static size_t
rust_compare(const char *what, const char *bin, const char *dir, int v0, size_t *total)
{
    char cmd[2048], path[128];
    list_t raw = {0}, dmg = {0}, syms = {0}, ref = {0};
    size_t i, same = 0;
    int rustfilt = have_tool("rustfilt");

    snprintf(cmd, sizeof(cmd), "nm --no-sort %s", bin);
    CHECK(read_lines(cmd, &raw) == 0);
    snprintf(cmd, sizeof(cmd), "nm --no-sort -C %s", bin);
    CHECK(read_lines(cmd, &dmg) == 0);
    CHECK(raw.n == dmg.n);
    for (i = 0; i < raw.n && i < dmg.n; i++) {
        const char *name = nm_name(raw.v[i]);

        if (v0 ? strncmp(name, "_R", 2) : !is_rust_legacy(name))
            continue;
        if (list_has(&syms, name))
            continue;
        list_add(&syms, name);
        if (!rustfilt)
            list_add(&ref, nm_name(dmg.v[i]));
    }
    if (rustfilt) {
        FILE *f;

        snprintf(path, sizeof(path), "%s/rust.txt", dir);
        if ((f = fopen(path, "w"))) {
            for (i = 0; i < syms.n; i++)
                fprintf(f, "%s\n", syms.v[i]);
            fclose(f);
        }
        snprintf(cmd, sizeof(cmd), "rustfilt < %s", path);
        CHECK(read_lines(cmd, &ref) == 0);
    } else {
        /* nm -C must know Rust for this to mean anything (binutils >= 2.36 does) */
        size_t known = 0;

        for (i = 0; i < syms.n && i < ref.n; i++)
            known += strcmp(syms.v[i], ref.v[i]) != 0;
        CHECKF(known * 10 >= syms.n * 9, "nm -C demangled only %zu of %zu Rust names", known,
               syms.n);
    }
    same = compare(what, &syms, &ref);
    printf("Rust %s: %zu of %zu names as %s has them (%.2f%%)\n", what, same, syms.n,
           rustfilt ? "rustfilt" : "nm -C", syms.n ? 100.0 * (double)same / (double)syms.n : 0.0);
    CHECK(syms.n >= 100);
    CHECK(same * 100 >= syms.n * 99);
    *total += syms.n;
    list_free(&raw);
    list_free(&dmg);
    list_free(&syms);
    list_free(&ref);
    return same;
}

static void
test_rust_hand(void)
{
    /* legacy: hash dropped, escapes decoded */
    EXPECT_DEM("_ZN3foo3bar17h0123456789abcdefE", "foo::bar");
    EXPECT_DEM("_ZN104_$LT$core..iter..sources..from_fn..FromFn$LT$F$GT$$u20$as$u20$core..iter.."
               "traits..iterator..Iterator$GT$4next17h5029af7e7bac568fE",
               "<core::iter::sources::from_fn::FromFn<F> as core::iter::traits::iterator::"
               "Iterator>::next");
    EXPECT_DEM("_ZN4core3ptr35drop_in_place$LT$$RF$mut$u20$u8$GT$17h0123456789abcdefE",
               "core::ptr::drop_in_place<&mut u8>");
    EXPECT_DEM("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE",
               "std::rt::lang_start::{{closure}}");
    EXPECT_DEM("_ZN3foo3bar17h0123456789abcdefE.llvm.1234567", "foo::bar");
    EXPECT_DEM("_ZN3foo3bar17h0123456789abcdefE.cold", "foo::bar [clone .cold]");
    EXPECT_DEM("_ZN3foo3barE", "foo::bar"); /* no hash: a C++ variable */
    /* v0 (examples in the style of RFC 2603 and rustc-demangle's tests) */
    EXPECT_DEM("_RNvCs1234_7mycrate3foo", "mycrate::foo");
    EXPECT_DEM("_RNvNtCs1234_7mycrate3bar3foo", "mycrate::bar::foo");
    EXPECT_DEM("_RINvNtC3std3mem8align_ofjE", "std::mem::align_of::<usize>");
    EXPECT_DEM("_RINvNtC3std3mem8align_ofINtC3wow5HelloRjEE",
               "std::mem::align_of::<wow::Hello<&usize>>");
    EXPECT_DEM("_RNvMNtC4core6optionINtB2_6OptionpE6unwrap", "<core::option::Option<_>>::unwrap");
    EXPECT_DEM("_RNCNvC1a1f0", "a::f::{closure#0}");
    EXPECT_DEM("_RNCNvC1a1fs_0", "a::f::{closure#1}");
    EXPECT_DEM("_RINvC1a1fAhj3_E", "a::f::<[u8; 3]>");
    EXPECT_DEM("_RINvC1a1fTlmEE", "a::f::<(i32, u32)>");
    EXPECT_DEM("_RINvC1a1fTlEE", "a::f::<(i32,)>");
    EXPECT_DEM("_RINvC1a1fFEuE", "a::f::<fn()>");
    EXPECT_DEM("_RINvC1a1fFUKCElE", "a::f::<unsafe extern \"C\" fn() -> i32>");
    EXPECT_DEM("_RINvC1a1fPQhE", "a::f::<*const &mut u8>");
    EXPECT_DEM("_RINvC1a1fKb1_Kc78_Kja_E", "a::f::<true, 'x', 10>");
    EXPECT_DEM("_RINvC1a1fKan5_E", "a::f::<-5>");
    EXPECT_DEM("_RINvC1a1fDNtC1a2TrEL_E", "a::f::<dyn a::Tr>");
    EXPECT_DEM("_RINvC1a1fRL_DG_NtC1a2TrEL_E", "a::f::<&dyn for<'a> a::Tr>");
    EXPECT_DEM("_RINvC1a1fDINtC1a2TrhEp4ItemmEL_E", "a::f::<dyn a::Tr<u8, Item = u32>>");
    EXPECT_DEM("_RNvXC1aNtC1a1SNtC1a2Tr1m", "<a::S as a::Tr>::m");
    EXPECT_DEM("_RNvYNtC1a1SNtC1a2Tr1m", "<a::S as a::Tr>::m");
    EXPECT_DEM("_RNvC1au9gre_6ka8i", "a::größe"); /* punycode */
    EXPECT_DEM("_RNvC1a3foo.llvm.123", "a::foo");
    EXPECT_DEM("_RNvC1a3foo@@V1", "a::foo@@V1");
    CHECK(dem("_RNvC1a") == NULL);      /* cut short */
    CHECK(dem("_RNvC1a3foox") == NULL); /* trailing junk */
    CHECK(dem("_RNvB_3foo") == NULL);   /* backref to itself */
    CHECK(dem("_R0NvC1a3foo") == NULL); /* an encoding version we do not know */
}

static const char *
find_rustc(void)
{
    if (access("/usr/bin/rustc", X_OK) == 0)
        return "/usr/bin/rustc";
    if (have_tool("rustc"))
        return "rustc";
    return NULL;
}

/* Returns 0 when it ran, 77 without rustc. */
static int
test_rust_tools(const char *dir)
{
    const char *rustc = find_rustc();
    char cmd[2048], bin[128];
    size_t total = 0, same = 0;

    if (!rustc) {
        printf("no rustc (apt-get install rustc): Rust comparison left out\n");
        return 77;
    }
    /* Legacy: the flag where this rustc takes it, else its default (legacy up to now). */
    snprintf(bin, sizeof(bin), "%s/rs_legacy", dir);
    snprintf(cmd, sizeof(cmd),
             "%s -C symbol-mangling-version=legacy -o %s test/progs/p_names.rs 2>/dev/null || "
             "%s -o %s test/progs/p_names.rs",
             rustc, bin, rustc, bin);
    CHECK(sh(cmd) == 0);
    if (access(bin, X_OK) == 0)
        same += rust_compare("legacy", bin, dir, 0, &total);
    snprintf(bin, sizeof(bin), "%s/rs_v0", dir);
    snprintf(cmd, sizeof(cmd),
             "%s -C symbol-mangling-version=v0 -o %s test/progs/p_names.rs 2>/dev/null || "
             "%s -Z unstable-options -C symbol-mangling-version=v0 -o %s test/progs/p_names.rs",
             rustc, bin, rustc, bin);
    CHECK(sh(cmd) == 0);
    if (access(bin, X_OK) == 0)
        same += rust_compare("v0", bin, dir, 1, &total);
    printf("Rust: %zu of %zu alike\n", same, total);
    return 0;
}

/* ---- short form --------------------------------------------------------------------------- */

static void
test_shorten(void)
{
    EXPECT_SHORT("void std::__introsort_loop<__gnu_cxx::__normal_iterator<unsigned int*, "
                 "std::vector<unsigned int, std::allocator<unsigned int> > >, long, "
                 "__gnu_cxx::__ops::_Iter_less_iter>(__gnu_cxx::__normal_iterator<unsigned int*, "
                 "std::vector<unsigned int, std::allocator<unsigned int> > >, "
                 "__gnu_cxx::__normal_iterator<unsigned int*, std::vector<unsigned int, "
                 "std::allocator<unsigned int> > >, long, __gnu_cxx::__ops::_Iter_less_iter)",
                 "std::__introsort_loop");
    EXPECT_SHORT("shop::price_all(std::vector<unsigned int, std::allocator<unsigned int> >&)",
                 "shop::price_all");
    EXPECT_SHORT("<alloc::vec::Vec<T> as core::ops::Drop>::drop",
                 "<alloc::vec::Vec as core::ops::Drop>::drop");
    EXPECT_SHORT("main", "main");
    EXPECT_SHORT("memcpy@@GLIBC_2.14", "memcpy@@GLIBC_2.14");
    EXPECT_SHORT("foo()@@GLIBC_2.34", "foo@@GLIBC_2.34");
    EXPECT_SHORT("foo(int)", "foo");
    EXPECT_SHORT("shop::Money::operator<(shop::Money const&) const", "shop::Money::operator<");
    EXPECT_SHORT("shop::Money::operator<<(int) const", "shop::Money::operator<<");
    EXPECT_SHORT("shop::Money::operator<<=(int)", "shop::Money::operator<<=");
    EXPECT_SHORT("shop::Money::operator>>=(int)", "shop::Money::operator>>=");
    EXPECT_SHORT("shop::Money::operator()(int) const", "shop::Money::operator()");
    EXPECT_SHORT("shop::Money::operator[](int) const", "shop::Money::operator[]");
    EXPECT_SHORT("shop::Money::operator->() const", "shop::Money::operator->");
    EXPECT_SHORT("shop::Money::operator==(shop::Money const&) const", "shop::Money::operator==");
    EXPECT_SHORT("shop::Money::operator<=>(shop::Money const&) const", "shop::Money::operator<=>");
    EXPECT_SHORT("shop::Money::operator bool() const", "shop::Money::operator bool");
    EXPECT_SHORT("shop::Shelf<long>::operator new[](unsigned long)", "shop::Shelf::operator new[]");
    EXPECT_SHORT("shop::Shelf<long>::operator delete(void*)", "shop::Shelf::operator delete");
    EXPECT_SHORT("operator new(unsigned long)", "operator new");
    EXPECT_SHORT("bool std::operator< <char, std::char_traits<char>, std::allocator<char> >"
                 "(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
                 "> const&, std::__cxx11::basic_string<char, std::char_traits<char>, "
                 "std::allocator<char> > const&)",
                 "std::operator<");
    EXPECT_SHORT("bool __gnu_cxx::operator!=<int*, std::vector<int, std::allocator<int> > >("
                 "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > > "
                 "const&, __gnu_cxx::__normal_iterator<int*, std::vector<int, "
                 "std::allocator<int> > > const&)",
                 "__gnu_cxx::operator!=");
    EXPECT_SHORT("__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > "
                 ">::operator++()",
                 "__gnu_cxx::__normal_iterator::operator++");
    EXPECT_SHORT("main::{lambda(int)#1}::operator()(int) const", "main::{lambda()#1}::operator()");
    EXPECT_SHORT("(anonymous namespace)::hidden_work(int)::{lambda(int, int)#1}::operator()(int, "
                 "int) const",
                 "(anonymous namespace)::hidden_work::{lambda()#1}::operator()");
    EXPECT_SHORT("(anonymous namespace)::clone_me(std::vector<int, std::allocator<int> > const&, "
                 "int, int) [clone .constprop.0] [clone .isra.0]",
                 "(anonymous namespace)::clone_me [clone .constprop.0] [clone .isra.0]");
    EXPECT_SHORT("std::vector<int, std::allocator<int> >::~vector()", "std::vector::~vector");
    EXPECT_SHORT("shop::Shelf<long>::Shelf(unsigned long)", "shop::Shelf::Shelf");
    EXPECT_SHORT("std::_Function_handler<long (int), main::{lambda(int)#3}>::_M_invoke("
                 "std::_Any_data const&, int&&)",
                 "std::_Function_handler::_M_invoke");
    EXPECT_SHORT("char const (&std::forward<char const (&) [5]>(std::remove_reference<char const "
                 "(&) [5]>::type&)) [5]",
                 "std::forward");
    EXPECT_SHORT("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
                 ">::_M_data[abi:cxx11]() const",
                 "std::__cxx11::basic_string::_M_data");
    EXPECT_SHORT("Foo::bar() const &", "Foo::bar");
    EXPECT_SHORT("Foo::bar() && noexcept", "Foo::bar");
    EXPECT_SHORT("non-virtual thunk to Foo::bar(int)", "non-virtual thunk to Foo::bar");
    EXPECT_SHORT("typeinfo for main::{lambda(int)#3}", "typeinfo for main::{lambda()#3}");
    EXPECT_SHORT("core::ptr::drop_in_place::<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place");
    EXPECT_SHORT("<core::option::Option<usize>>::ok_or::<core::alloc::layout::LayoutError>",
                 "<core::option::Option>::ok_or");
    EXPECT_SHORT("<[&dyn t::Tr]>::into_vec::<alloc::alloc::Global>", "<[&dyn t::Tr]>::into_vec");
    EXPECT_SHORT("std::rt::lang_start::{{closure}}", "std::rt::lang_start::{{closure}}");
    EXPECT_SHORT("p_names::main::{closure#0}", "p_names::main::{closure#0}");
    EXPECT_SHORT("<u32 as core::iter::traits::accum::Sum>::sum::<&mut dyn "
                 "core::iter::traits::iterator::Iterator<Item = u32>>",
                 "<u32 as core::iter::traits::accum::Sum>::sum");
    EXPECT_SHORT("main.(*T).method", "main.(*T).method");      /* Go's names stay whole */
    EXPECT_SHORT("main::'lambda'(int)::operator()(int) const", /* libc++abi's spelling */
                 "main::'lambda'::operator()");
    EXPECT_SHORT("<alloc::vec::Vec<(alloc::string::String, usize)> as core::ops::drop::Drop>::drop",
                 "<alloc::vec::Vec as core::ops::drop::Drop>::drop");
    EXPECT_SHORT("", "");
    /* small buffers: cut, terminated */
    {
        char small[8];

        CHECK(!strcmp(pe_dem_shorten("shop::price_all(int)", small, sizeof(small)), "shop::p"));
        CHECK(pe_dem_shorten("x", small, 0) == NULL);
        CHECK(!strcmp(pe_dem_shorten(NULL, small, sizeof(small)), ""));
    }
}

/* ---- robustness ----------------------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t
next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One output checked: NULL or buf, NUL-terminated inside len, nothing past len touched. */
static int
output_ok(const char *ret, const char *buf, size_t len, const char *guard)
{
    size_t k;

    if (ret && ret != buf)
        return 0;
    if (len && memchr(buf, '\0', len) == NULL)
        return 0;
    for (k = 0; k < 16; k++) {
        if (guard[k] != (char)0xA5)
            return 0;
    }
    return 1;
}

static void
make_input(char *s, size_t cap, const list_t *seeds)
{
    static const char alpha[] = "_ZRNIEBKLCMXYSTPOQARFDGUpsuvabcdefhijlmnotxyz0123456789$.@"
                                "St9_Iti_ES_S0_SaIcE17h0123456789abcdef";
    size_t n = 0, k, m;
    uint64_t r = next_rand();

    if (seeds->n && (r & 3) != 0) {
        const char *src = seeds->v[next_rand() % seeds->n];

        n = strlen(src);
        if (n >= cap)
            n = cap - 1;
        memcpy(s, src, n);
        for (m = 1 + next_rand() % 4; m > 0; m--) {
            uint64_t op = next_rand() % 6, at = n ? next_rand() % (n + 1) : 0;

            if (op == 0 && n) { /* replace a byte */
                s[at % n] = alpha[next_rand() % (sizeof(alpha) - 1)];
            } else if (op == 1 && n + 1 < cap) { /* insert */
                memmove(s + at + 1, s + at, n - at);
                s[at] = (next_rand() & 15) ? alpha[next_rand() % (sizeof(alpha) - 1)]
                                           : (char)(next_rand() % 255 + 1);
                n++;
            } else if (op == 2 && n) { /* delete */
                if (at < n) {
                    memmove(s + at, s + at + 1, n - at - 1);
                    n--;
                }
            } else if (op == 3) { /* cut */
                n = at;
            } else if (op == 4 && n) { /* repeat a piece (deep nesting, backrefs) */
                size_t from = next_rand() % n, len = 1 + next_rand() % 12, reps = next_rand() % 40;
                char piece[12];

                if (from + len > n)
                    len = n - from;
                memcpy(piece, s + from, len);
                for (k = 0; k < reps && n + len < cap; k++) {
                    memmove(s + at + len, s + at, n - at);
                    memcpy(s + at, piece, len);
                    n += len;
                }
            } else if (op == 5 && n) { /* a digit changed: lengths and backrefs go wrong */
                s[at % n] = (char)('0' + next_rand() % 10);
            }
        }
    } else {
        static const char *const pre[] = {"_Z", "_ZN", "_R", "_RN", "_RI", ""};

        n = strlen(pre[r % 6]);
        memcpy(s, pre[r % 6], n);
        m = next_rand() % 200;
        for (k = 0; k < m && n + 1 < cap; k++)
            s[n++] = alpha[next_rand() % (sizeof(alpha) - 1)];
    }
    s[n] = '\0';
}

static void
test_robust(const list_t *seeds, long rounds)
{
    static char in[PE_DEM_MAX_INPUT + 64], big[BIG + 16], mid[64 + 16], tiny[5 + 16];
    static char readable[BIG];
    char *bufs[3] = {big, mid, tiny};
    size_t lens[3] = {BIG, 64, 5};
    long i, bad = 0, named = 0, prefix_bad = 0;
    int b;

    for (i = 0; i < rounds; i++) {
        const char *r[3], *s;

        make_input(in, (i % 1000 == 0) ? sizeof(in) : 600, seeds);
        for (b = 0; b < 3; b++) {
            memset(bufs[b], 0xA5, lens[b] + 16);
            r[b] = pe_dem_demangle(in, bufs[b], lens[b]);
            if (!output_ok(r[b], bufs[b], lens[b], bufs[b] + lens[b]))
                bad++;
        }
        named += r[0] != NULL;
        /* a cut result is the start of the whole one */
        if (r[0] && r[1] && strncmp(r[0], r[1], strlen(r[1])))
            prefix_bad++;
        /* the short form of what came out, or of the input itself */
        snprintf(readable, sizeof(readable), "%s", r[0] && (i & 1) ? r[0] : in);
        for (b = 0; b < 3; b++) {
            memset(bufs[b], 0xA5, lens[b] + 16);
            s = pe_dem_shorten(readable, bufs[b], lens[b]);
            if (!s || !output_ok(s, bufs[b], lens[b], bufs[b] + lens[b]))
                bad++;
        }
    }
    printf("robustness: %ld inputs, %ld demangled, %ld bad outputs, %ld cut results not "
           "a prefix\n",
           rounds, named, bad, prefix_bad);
    CHECK(bad == 0);
    CHECK(prefix_bad == 0);
    CHECK(named > rounds / 100);
}

int
main(void)
{
    char dir[] = "/tmp/u_demangle.XXXXXX", cmd[256];
    list_t seeds = {0};
    const char *s;
    int rust_rc, k;

    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    /* No C++ runtime in this C program yet: C++ names stay mangled. */
    if (dlsym(RTLD_DEFAULT, "__cxa_demangle") == NULL) {
        CHECK(dem("_Z3foov") == NULL);
        CHECK(dem("_ZN4shop9price_allERSt6vectorIjSaIjEE") == NULL);
    } else {
        printf("a C++ runtime is already loaded: the no-runtime case is left out\n");
    }
    /* ... but Rust needs none */
    EXPECT_DEM("_ZN3foo3bar17h0123456789abcdefE", "foo::bar");
    if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL)) {
        printf("no libstdc++.so.6: %s\n", dlerror());
        CHECK(0);
    }
    test_cxx_hand();
    test_cxx_stack();
    test_cxx_cppfilt(dir);
    test_rust_hand();
    rust_rc = test_rust_tools(dir);
    test_shorten();

    /* seeds for mutation: the real names nm found, and the hand-written ones */
    snprintf(cmd, sizeof(cmd), "nm --no-sort %s/cxx0 %s/rs_v0 %s/rs_legacy 2>/dev/null", dir, dir,
             dir);
    {
        list_t lines = {0};
        size_t i;

        read_lines(cmd, &lines);
        for (i = 0; i < lines.n; i++) {
            s = nm_name(lines.v[i]);
            if (s[0] == '_' && (s[1] == 'Z' || s[1] == 'R') && (i % 3 == 0))
                list_add(&seeds, s);
        }
        list_free(&lines);
    }
    {
        static const char *const hand[] = {
            "_ZN4shop5ShelfIlEnaEm",
            "_ZZ4mainENKUliE_clEi",
            "_Z3foov.constprop.0.isra.0@GLIBC_2.2.5",
            "_RINvC1a1fRL_DG_NtC1a2TrEL_E",
            "_RINvC1a1fDINtC1a2TrhEp4ItemmEL_E",
            "_RNvC1au9gre_6ka8i",
            "_RINvC1a1fKb1_Kc78_Kja_E",
            "_ZN104_$LT$core..iter..sources..from_fn..FromFn$LT$F$GT$$u20$as$u20$core..iter.."
            "traits..iterator..Iterator$GT$4next17h5029af7e7bac568fE"};

        for (k = 0; k < (int)(sizeof(hand) / sizeof(hand[0])); k++)
            list_add(&seeds, hand[k]);
    }
    test_robust(&seeds, 1000000);
    list_free(&seeds);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    sh(cmd);
    if (pe_test_failed == 0 && rust_rc == 77) {
        pe_test_done();
        printf("skip: no rustc, the Rust comparison did not run\n");
        return 77;
    }
    return pe_test_done();
}
