/*
 * bench_heap_shim.c: the floors for scripts/bench_heap.sh, built as shared
 * objects by that script:
 *   (default)       a bare interposer that forwards the malloc family to
 *                   glibc's __libc_* entry points and does nothing else
 *   -DSHIM_CHECKS   the same plus the least a byte-sampling interposer that
 *                   knows its own blocks at free must do on every call: a
 *                   per-thread byte countdown in malloc (one TLS subtraction
 *                   and a branch) and a test in free (NULL or page start,
 *                   then the sign of the word below the block); nothing is
 *                   ever sampled
 *   -DSHIM_UNWIND   SHIM_CHECKS plus what any sampler that records stacks
 *                   with libunwind pays at its sample points: an exponential
 *                   byte interval with the same 512 KiB mean, drawn afresh
 *                   after each sample, and one unw_backtrace of 64 frames
 *                   (libunwind.so.8 dlopen'd RTLD_LOCAL, as ours); nothing is
 *                   tagged, interned or listed.  The floor of sampling itself:
 *                   ours minus this is what our bookkeeping costs.
 */
#ifdef SHIM_UNWIND
#define _GNU_SOURCE
#define SHIM_CHECKS
#include <dlfcn.h>
#include <math.h>
#endif
#include <stddef.h>
#include <stdint.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#ifdef SHIM_UNWIND
static __thread __attribute__((tls_model("initial-exec"))) uint64_t countdown, rng;
static __thread __attribute__((tls_model("initial-exec"))) int busy;
static int (*bt)(void **, int);

__attribute__((constructor)) static void
shim_init(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);

    bt = h ? (int (*)(void **, int))dlsym(h, "unw_backtrace") : NULL;
}

/* An exponential interval, mean 512 KiB (xorshift64*, -ln of a uniform). */
static uint64_t
draw(void)
{
    uint64_t x = rng ? rng : (uint64_t)(uintptr_t)&rng | 1;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng = x;
    return (uint64_t)(-log(((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53 + 0x1.0p-54) *
                      524288.0) +
           1;
}

__attribute__((noinline)) static void *
malloc_slow(size_t n)
{
    void *pcs[64];
    uint64_t first = countdown + n; /* 0: not drawn yet */

    countdown = draw();
    if (first && bt && !busy) { /* a sample point: the stack */
        busy = 1;
        __asm__ volatile("" : : "r"(bt(pcs, 64)) : "memory");
        busy = 0;
    }
    return __libc_malloc(n);
}
#elif defined(SHIM_CHECKS)
static __thread __attribute__((tls_model("initial-exec"))) uint64_t countdown;

__attribute__((noinline)) static void *
malloc_slow(size_t n)
{
    countdown = (uint64_t)1 << 20; /* where a sampler would draw and record */
    return __libc_malloc(n);
}
#endif
#ifdef SHIM_CHECKS

__attribute__((noinline)) static void
free_slow(void *p)
{
    if (p) /* where a sampler would look for its tag */
        __libc_free(p);
}
#endif

__attribute__((visibility("default"))) void *
malloc(size_t n)
{
#ifdef SHIM_CHECKS
    uint64_t c = countdown;

    countdown = c - n;
    if (__builtin_expect(c <= n, 0))
        return malloc_slow(n);
#endif
    return __libc_malloc(n);
}
__attribute__((visibility("default"))) void
free(void *p)
{
#ifdef SHIM_CHECKS
    if (__builtin_expect(((uintptr_t)p & 4088) == 0, 0) ||
        __builtin_expect(*(const intptr_t *)((uintptr_t)p - 8) < 0, 0)) {
        free_slow(p);
        return;
    }
#endif
    __libc_free(p);
}
__attribute__((visibility("default"))) void *
calloc(size_t n, size_t m)
{
    return __libc_calloc(n, m);
}
__attribute__((visibility("default"))) void *
realloc(void *p, size_t n)
{
    return __libc_realloc(p, n);
}
__attribute__((visibility("default"))) void *
memalign(size_t a, size_t n)
{
    return __libc_memalign(a, n);
}
