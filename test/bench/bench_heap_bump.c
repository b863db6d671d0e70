/*
 * bench_heap_bump.c: an async-signal-safe malloc family (lock-free bump
 * allocation out of one MAP_NORESERVE region; free does nothing), preloaded
 * *after* libprofendpoints.so by test/e2e/e2e_heap_cases.sh so that its "signal"
 * case tests only our hooks: glibc's malloc may itself deadlock when a
 * handler allocates.  Built as a shared object by that script.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define REGION (8ull << 30)
static char *base;
static uint64_t used;

static void *
bump(size_t size, size_t align)
{
    uint64_t cur, start, end;

    if (!base) {
        void *p = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        char *expect = NULL;
        if (p == MAP_FAILED)
            return NULL;
        if (!__atomic_compare_exchange_n(&base, &expect, (char *)p, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            munmap(p, REGION);
    }
    if (align < 16)
        align = 16;
    cur = __atomic_load_n(&used, __ATOMIC_RELAXED);
    do {
        start = (cur + 16 + align - 1) & ~(uint64_t)(align - 1);
        end = start + size;
        if (end > REGION || end < start) {
            errno = ENOMEM;
            return NULL;
        }
    } while (!__atomic_compare_exchange_n(&used, &cur, end, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
    ((uint64_t *)(base + start))[-1] = size;
    return base + start;
}

void *
malloc(size_t n)
{
    return bump(n, 16);
}
void
free(void *p)
{
    (void)p;
}
void *
calloc(size_t n, size_t m)
{
    size_t s;
    if (__builtin_mul_overflow(n, m, &s)) {
        errno = ENOMEM;
        return NULL;
    }
    return bump(s, 16); /* fresh pages: already zero */
}
void *
realloc(void *p, size_t n)
{
    void *q = bump(n, 16);
    if (q && p) {
        size_t old = ((uint64_t *)p)[-1];
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}
int
posix_memalign(void **out, size_t a, size_t n)
{
    void *p = bump(n, a);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
void *
aligned_alloc(size_t a, size_t n)
{
    return bump(n, a);
}
void *
memalign(size_t a, size_t n)
{
    return bump(n, a);
}
void *
valloc(size_t n)
{
    return bump(n, 4096);
}
void *
pvalloc(size_t n)
{
    return bump((n + 4095) & ~(size_t)4095, 4096);
}
void *
reallocarray(void *p, size_t n, size_t m)
{
    size_t s;
    if (__builtin_mul_overflow(n, m, &s)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, s);
}
size_t
malloc_usable_size(void *p)
{
    return p ? ((uint64_t *)p)[-1] : 0;
}
