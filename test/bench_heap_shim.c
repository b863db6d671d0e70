/*
 * bench_heap_shim.c: the floor for scripts/bench_heap.sh: a bare interposer
 * that forwards the malloc family to glibc's __libc_* entry points and does
 * nothing else.  Built as a shared object by that script.
 */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

__attribute__((visibility("default"))) void *
malloc(size_t n)
{
    return __libc_malloc(n);
}
__attribute__((visibility("default"))) void
free(void *p)
{
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
