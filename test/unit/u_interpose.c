/*
 * u_interpose: interpose/got.c on libraries of the test's own, built here
 * and dlopen'ed into this process: one bound at load with its GOT on a
 * read-only RELRO page (-z now -z relro), one with lazy binding (slots hold
 * their PLT stubs until the first call), one calling an old symbol version.
 * Redirected slots reach our functions; maps protections are the same
 * before, during and after; restore gives back every byte of the objects'
 * data pages; a thread calling through a slot while it flips 2000 times
 * always lands in one of the two functions (the store is atomic).  Also the
 * heap's side table (heap/side.c) and the table against exports.map.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../heap/heap_int.h"
#include "../../interpose/interpose_int.h"
#include "pe_test.h"

static const char lib_src[] =
    "#include <stdlib.h>\n"
    "#include <pthread.h>\n"
    "void *(*volatile keep_free)(void *);\n"
    "int lib_alloc(int n) { char *p = malloc(n); p[0] = 1; int r = p[0];\n"
    "    void *q = calloc(2, 8); free(q); free(p); return r; }\n"
    "void *lib_free_ptr(void) { return (void *)&free; }\n"
    "#ifdef OLD\n"
    "__asm__(\".symver pthread_cond_signal, pthread_cond_signal@GLIBC_2.2.5\");\n"
    "__asm__(\".symver pthread_cond_destroy, pthread_cond_destroy@GLIBC_2.2.5\");\n"
    "#endif\n"
    "int lib_cond(pthread_cond_t *c) { return pthread_cond_signal(c); }\n"
    "int lib_cond_done(pthread_cond_t *c) { return pthread_cond_destroy(c); }\n";

static char dir[64];

static int
build(const char *name, const char *flags)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "cc -shared -fPIC -O1 -fno-builtin %s -o %s/%s %s/lib.c -lpthread",
             flags, dir, name, dir);
    return system(cmd);
}

/* ---- our side of the slots ------------------------------------------------------ */

static void *(*libc_malloc)(size_t);
static void (*libc_free)(void *);
static void *(*libc_calloc)(size_t, size_t);
static volatile long n_malloc, n_free, n_calloc;

static void *
my_malloc(size_t n)
{
    __atomic_add_fetch(&n_malloc, 1, __ATOMIC_RELAXED);
    return libc_malloc(n);
}

static void
my_free(void *p)
{
    __atomic_add_fetch(&n_free, 1, __ATOMIC_RELAXED);
    libc_free(p);
}

static void *
my_calloc(size_t n, size_t m)
{
    __atomic_add_fetch(&n_calloc, 1, __ATOMIC_RELAXED);
    return libc_calloc(n, m);
}

static int
my_cond_signal(pthread_cond_t *c)
{
    return -1;
}

/* ---- what the object looks like --------------------------------------------------- */

/* Its maps lines (addresses and permissions) and the bytes of its readable,
   not executable mappings. */
typedef struct image_s {
    char maps[8192];
    size_t nbytes;
    unsigned char *bytes;
} image_t;

static void
snap(const char *path, image_t *im)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];

    im->maps[0] = '\0';
    im->nbytes = 0;
    im->bytes = NULL;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perm[8];
        if (!strstr(line, path) || sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3)
            continue;
        strncat(im->maps, line, sizeof(im->maps) - strlen(im->maps) - 1);
        if (perm[0] != 'r' || perm[2] == 'x')
            continue;
        im->bytes = realloc(im->bytes, im->nbytes + (hi - lo));
        memcpy(im->bytes + im->nbytes, (void *)lo, hi - lo);
        im->nbytes += hi - lo;
    }
    if (f)
        fclose(f);
}

static int
same(const image_t *a, const image_t *b)
{
    return !strcmp(a->maps, b->maps) && a->nbytes == b->nbytes &&
           !memcmp(a->bytes, b->bytes, a->nbytes);
}

static pe_ip_target_t targets[4];

static void
set_targets(void)
{
    void *m = dlsym(RTLD_DEFAULT, "malloc"), *f = dlsym(RTLD_DEFAULT, "free");
    void *c = dlsym(RTLD_DEFAULT, "calloc"), *s = dlsym(RTLD_DEFAULT, "pthread_cond_signal");

    libc_malloc = m;
    libc_free = f;
    libc_calloc = c;
    targets[0] =
        (pe_ip_target_t){"malloc", (uintptr_t)m, (uintptr_t)my_malloc, pe_ip_got_version(m)};
    targets[1] = (pe_ip_target_t){"free", (uintptr_t)f, (uintptr_t)my_free, pe_ip_got_version(f)};
    targets[2] =
        (pe_ip_target_t){"calloc", (uintptr_t)c, (uintptr_t)my_calloc, pe_ip_got_version(c)};
    targets[3] = (pe_ip_target_t){"pthread_cond_signal", (uintptr_t)s, (uintptr_t)my_cond_signal,
                                  pe_ip_got_version(s)};
}

/* ---- one library, bound or lazy ------------------------------------------------------- */

static void
one_library(const char *name, int lazy)
{
    char path[128];
    image_t before, during, after;
    pe_ip_got_t g;
    void *h;
    int (*alloc)(int);
    void *(*free_ptr)(void);
    int n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECKF(h != NULL, "%s", dlerror());
    if (!h)
        return;
    alloc = (int (*)(int))dlsym(h, "lib_alloc");
    free_ptr = (void *(*)(void))dlsym(h, "lib_free_ptr");
    snap(path, &before);
    CHECK(before.nbytes > 0);

    CHECK(pe_ip_got_init(&g, targets, 4) == 0);
    g.only = name;
    n = pe_ip_got_patch(&g);
    CHECKF(n >= 3, "%s: %d slots", name, n);
    CHECK(g.nleft == 0);
    snap(path, &during);
    /* same protections while redirected (RELRO read-only again) */
    CHECKF(!strcmp(before.maps, during.maps), "%s\n---\n%s", before.maps, during.maps);
    n_malloc = n_free = n_calloc = 0;
    CHECK(alloc(100) == 1);
    CHECKF(n_malloc == 1 && n_free == 2 && n_calloc == 1, "%s: %ld %ld %ld", name, n_malloc, n_free,
           n_calloc);
    CHECK(free_ptr() == (void *)my_free); /* GLOB_DAT: &free */
    /* a second walk changes nothing */
    CHECK(pe_ip_got_patch(&g) == 0);

    n = pe_ip_got_restore(&g);
    CHECKF(n >= 3, "%s: %d restored", name, n);
    snap(path, &after);
    CHECKF(same(&before, &after), "%s: not as before after restore", name);
    n_malloc = n_free = n_calloc = 0;
    CHECK(alloc(100) == 1);
    CHECK(n_malloc == 0 && n_free == 0 && n_calloc == 0);
    CHECK(free_ptr() == (void *)libc_free);
    if (lazy) /* the stubs were put back: the first call bound them to libc now */
        CHECK(alloc(10) == 1);
    pe_ip_got_free(&g);
    free(before.bytes);
    free(during.bytes);
    free(after.bytes);
    dlclose(h);
}

/* An old version of a name is another function: its slot is left alone. */
static void
old_version(void)
{
    char path[128];
    pe_ip_got_t g;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    int (*cond)(pthread_cond_t *);
    void *h;

    snprintf(path, sizeof(path), "%s/libold.so", dir);
    h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    CHECKF(h != NULL, "%s", dlerror());
    if (!h)
        return;
    cond = (int (*)(pthread_cond_t *))dlsym(h, "lib_cond");
    CHECK(pe_ip_got_init(&g, targets, 4) == 0);
    g.only = "libold.so";
    (void)pe_ip_got_patch(&g);
    CHECK(cond(&c) == 0); /* not my_cond_signal (-1) */
    /* (the old ABI's signal allocated a condition of its own: its destroy frees it) */
    ((int (*)(pthread_cond_t *))dlsym(h, "lib_cond_done"))(&c);
    CHECK(g.elsewhere >= 1);
    (void)pe_ip_got_restore(&g);
    pe_ip_got_free(&g);
    dlclose(h);
}

/* An object whose slots cannot be read is left alone, named. */
static void
unreadable(void)
{
    char path[128], line[512], prev[512] = "";
    unsigned long lo = 0, hi = 0;
    pe_ip_got_t g;
    FILE *f;
    void *h;

    snprintf(path, sizeof(path), "%s/libnone.so", dir);
    if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return;
    /* its RELRO mapping (the GOT): the one before its read-write one */
    f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof(line), f)) {
        if (!strstr(line, "libnone.so"))
            continue;
        if (strstr(line, " rw-p ") && prev[0]) {
            sscanf(prev, "%lx-%lx", &lo, &hi);
            break;
        }
        snprintf(prev, sizeof(prev), "%s", line);
    }
    if (f)
        fclose(f);
    CHECK(hi > lo);
    if (hi <= lo || mprotect((void *)lo, hi - lo, PROT_NONE) != 0)
        return;
    CHECK(pe_ip_got_init(&g, targets, 3) == 0);
    g.only = "libnone.so";
    CHECK(pe_ip_got_patch(&g) == 0);
    CHECKF(g.nleft == 1 && strstr(g.left, "libnone.so (unreadable"), "left: %s", g.left);
    CHECK(pe_ip_got_restore(&g) == 0);
    pe_ip_got_free(&g);
    mprotect((void *)lo, hi - lo, PROT_READ);
    dlclose(h);
}

/* ---- the store is atomic: a caller sees old or new ----------------------------------- */

static volatile int stop;
static int (*flip_alloc)(int);

static void *
caller(void *arg)
{
    long n = 0;

    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        if (flip_alloc(32) != 1)
            abort();
        n++;
    }
    return (void *)n;
}

static void
atomic_flips(void)
{
    char path[128];
    pe_ip_got_t g;
    pthread_t t;
    void *h, *calls;
    long before;

    snprintf(path, sizeof(path), "%s/libnow.so", dir);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    flip_alloc = (int (*)(int))dlsym(h, "lib_alloc");
    CHECK(pe_ip_got_init(&g, targets, 3) == 0);
    g.only = "libnow.so";
    n_malloc = 0;
    pthread_create(&t, NULL, caller, NULL);
    for (int i = 0; i < 1000; i++) {
        CHECK(pe_ip_got_patch(&g) > 0);
        before = n_malloc;
        (void)before;
        CHECK(pe_ip_got_restore(&g) > 0);
    }
    stop = 1;
    pthread_join(t, &calls);
    CHECKF((long)calls > 0, "the caller never ran");
    pe_ip_got_free(&g);
    dlclose(h);
}

/* ---- heap/side.c ---------------------------------------------------------------------- */

static int drained;

static void
count_drain(uintptr_t p, uint64_t size, uint64_t cnt, uint32_t stack, uint32_t slot)
{
    drained++;
}

static void
side_table(void)
{
    uint64_t size, cnt;
    uint32_t stack, slot;
    int ok = 1;

    CHECK(pe_heap_side_init(1024) == 0);
    CHECK(!pe_heap_side_take(0x1000, &size, &cnt, &stack, &slot));
    for (uintptr_t p = 0x10000; p < 0x10000 + 16 * 300; p += 16)
        ok &= pe_heap_side_insert(p, p, 1, 7, 0);
    CHECK(ok);
    CHECK(pe_heap_side_take(0x10000 + 16 * 5, &size, &cnt, &stack, &slot) && size == 0x10050 &&
          stack == 7);
    CHECK(!pe_heap_side_take(0x10000 + 16 * 5, &size, &cnt, &stack, &slot)); /* once */
    CHECK(!pe_heap_side_take(0x20000, &size, &cnt, &stack, &slot));
    for (int round = 0; round < 50; round++) /* tombstones do not build up into misses */
        for (uintptr_t p = 0x30000; p < 0x30000 + 16 * 200; p += 16) {
            ok &= pe_heap_side_insert(p, 1, 1, 1, 0);
            ok &= pe_heap_side_take(p, &size, &cnt, &stack, &slot);
        }
    CHECK(ok);
    CHECK(pe_heap_side_drain(count_drain) == 299 && drained == 299);
    CHECK(!pe_heap_side_take(0x10000, &size, &cnt, &stack, &slot));
    pe_heap_side_clear();
}

/* ---- the table against exports.map ----------------------------------------------------- */

static void
table_rows(void)
{
    FILE *f = fopen("preload/exports.map", "r");
    char word[128];
    int n = 0, in = 0, found;

    if (!f)
        return; /* (check_interpose_table.sh checks the built library too) */
    while (fscanf(f, " %127[^; \n]", word) == 1) {
        int c = fgetc(f);
        (void)c;
        if (!strcmp(word, "global:")) {
            in = 1;
            continue;
        }
        if (!strcmp(word, "local:"))
            break;
        if (!in || word[0] == '/' || word[0] == '*' || word[0] == '{' ||
            !strncmp(word, "profendpoints_", 14)) /* the attach entry points */
            continue;
        found = 0;
        for (int k = 0; k < pe_interpose_nrows; k++)
            found |= !strcmp(pe_interpose_rows[k].name, word);
        CHECKF(found, "%s is exported but not in interpose/table.c", word);
        n++;
    }
    fclose(f);
    CHECKF(n == pe_interpose_nrows, "%d exported, %d rows", n, pe_interpose_nrows);
}

int
main(void)
{
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/u_interpose.%d", (int)getpid());
    if (mkdir(dir, 0700) != 0)
        return 77;
    {
        char p[128];
        snprintf(p, sizeof(p), "%s/lib.c", dir);
        f = fopen(p, "w");
        fputs(lib_src, f);
        fclose(f);
    }
    if (build("libnow.so", "-Wl,-z,now,-z,relro") || build("liblazy.so", "-Wl,-z,lazy") ||
        build("libnone.so", "-Wl,-z,now,-z,relro") || build("libold.so", "-DOLD -Wl,-z,lazy")) {
        fprintf(stderr, "u_interpose: no C compiler to build the test libraries\n");
        return 77;
    }
    set_targets();
    {
        Dl_info di; /* (under ASan malloc is its runtime's, unversioned) */
        if (dladdr((void *)libc_malloc, &di) && strstr(di.dli_fname, "libc.so"))
            CHECK(targets[0].ver && !strcmp(targets[0].ver, "GLIBC_2.2.5"));
    }
    one_library("libnow.so", 0);
    one_library("liblazy.so", 1);
    old_version();
    unreadable();
    atomic_flips();
    side_table();
    table_rows();
    {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        (void)!system(cmd);
    }
    return pe_test_done();
}
