/* p_host_allocfamily: every allocation entry point glibc 2.36 exports, on
 * sampled blocks (PROFEP_HEAP_RATE=1 from p_host_allocfamily.env: each block
 * is one of ours): malloc_usable_size, realloc of memalign'd and valloc'd
 * blocks (contents kept), reallocarray (and its overflow), pvalloc, memalign,
 * aligned_alloc, posix_memalign, malloc_trim after frees, mallinfo2; glibc's
 * __libc_malloc/__libc_free/... names, and free_sized / free_aligned_sized
 * when the running glibc has them (dlsym).  A block of ours must never reach
 * a glibc function that does not know our tag.  Three threads, ~2.5 s.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include "p_host.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static void (*free_sized_p)(void *, size_t);
static void (*free_aligned_sized_p)(void *, size_t, size_t);
static long pagesz;
static volatile size_t huge = SIZE_MAX / 2;

static void
fill_check(unsigned char *p, size_t n, unsigned char v, const char *what)
{
    if (!p)
        row_fail("%s returned NULL", what);
    if (malloc_usable_size(p) < n)
        row_fail("%s: malloc_usable_size %zu < %zu", what, malloc_usable_size(p), n);
    memset(p, v, n);
}

static void
expect(const unsigned char *p, size_t n, unsigned char v, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            row_fail("%s: byte %zu is %u, not %u", what, i, p[i], v);
}

static void
aligned(void *p, size_t a, const char *what)
{
    if ((uintptr_t)p % a)
        row_fail("%s: %p not aligned to %zu", what, p, a);
}

static void
round_once(int i)
{
    size_t n = 24 + (size_t)(i % 200) * 8;
    unsigned char *p, *q;
    void *v;

    p = malloc(n);
    fill_check(p, n, 1, "malloc");
    q = realloc(p, n * 3);
    fill_check(q, n, 1, "realloc");
    expect(q, n, 1, "realloc kept");
    free(q);

    p = memalign(64, n);
    aligned(p, 64, "memalign");
    fill_check(p, n, 2, "memalign");
    q = realloc(p, n + 4000);
    expect(q, n, 2, "realloc of memalign'd");
    free(q);

    p = aligned_alloc(256, 512);
    aligned(p, 256, "aligned_alloc");
    fill_check(p, 512, 3, "aligned_alloc");
    free(p);

    if (posix_memalign(&v, 4096, n) || !v)
        row_fail("posix_memalign");
    aligned(v, 4096, "posix_memalign");
    fill_check(v, n, 4, "posix_memalign");
    q = realloc(v, 10);
    expect(q, 10, 4, "realloc of posix_memalign'd (shrink)");
    free(q);

    p = valloc(n);
    aligned(p, (size_t)pagesz, "valloc");
    fill_check(p, n, 5, "valloc");
    free(p);

    p = pvalloc(n);
    aligned(p, (size_t)pagesz, "pvalloc");
    fill_check(p, (size_t)pagesz, 6, "pvalloc"); /* rounded up to a page */
    free(p);

    p = reallocarray(NULL, 10, n);
    fill_check(p, 10 * n, 7, "reallocarray");
    errno = 0;
    if (reallocarray(p, huge, 3) != NULL || errno != ENOMEM)
        row_fail("reallocarray overflow: not ENOMEM");
    expect(p, 10 * n, 7, "reallocarray overflow left the block");
    q = reallocarray(p, 20, n);
    expect(q, 10 * n, 7, "reallocarray kept");
    free(q);

    p = calloc(n, 3);
    fill_check(p, 0, 0, "calloc");
    expect(p, 3 * n, 0, "calloc zeroed");
    free(p);

    /* glibc's own names: a block from malloc to __libc_free and back */
    p = malloc(n);
    fill_check(p, n, 8, "malloc for __libc_*");
    q = __libc_realloc(p, n * 2);
    fill_check(q, n, 8, "__libc_realloc");
    expect(q, n, 8, "__libc_realloc kept");
    __libc_free(q);
    p = __libc_malloc(n);
    fill_check(p, n, 9, "__libc_malloc");
    free(p);
    p = __libc_calloc(1, n);
    expect(p, n, 0, "__libc_calloc zeroed");
    __libc_free(p);
    p = __libc_memalign(128, n);
    aligned(p, 128, "__libc_memalign");
    __libc_free(p);
    __libc_free(__libc_valloc(n));
    __libc_free(__libc_pvalloc(n));

    if (free_sized_p) {
        p = malloc(n);
        fill_check(p, n, 10, "malloc for free_sized");
        free_sized_p(p, n);
    }
    if (free_aligned_sized_p) {
        p = aligned_alloc(64, 128);
        fill_check(p, 128, 11, "aligned_alloc for free_aligned_sized");
        free_aligned_sized_p(p, 64, 128);
    }
}

static void *
work(void *arg)
{
    double end = row_now() + 2.5;
    int i = 0;

    while (row_now() < end) {
        round_once(i++);
        if (i % 500 == 0) {
            struct mallinfo2 mi;
            malloc_trim(0);
            mi = mallinfo2();
            if (mi.arena == 0 || mi.uordblks > mi.arena + mi.hblkhd)
                row_fail("mallinfo2: arena %zu, uordblks %zu", mi.arena, mi.uordblks);
        }
    }
    *(int *)arg = i;
    return NULL;
}

int
main(void)
{
    pthread_t t[3];
    int n[3];

    pagesz = sysconf(_SC_PAGESIZE);
    free_sized_p = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    free_aligned_sized_p =
        (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, work, &n[i]);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        if (n[i] < 10)
            row_fail("thread %d: %d rounds", i, n[i]);
    }
    if (malloc_trim(0) < 0)
        row_fail("malloc_trim");
    printf("figure: allocfamily: %d rounds, free_sized %s, free_aligned_sized %s\n",
           n[0] + n[1] + n[2], free_sized_p ? "yes" : "absent",
           free_aligned_sized_p ? "yes" : "absent");
    row_done();
}
