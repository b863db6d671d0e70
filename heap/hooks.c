/*
 * hooks.c: the exported malloc-family interposers.  Each is thin: make sure
 * the real functions are resolved (serving the bootstrap pool meanwhile),
 * call the real function, then tell heap/ (a free tells first, so the address
 * cannot be handed out again before we forget it).  errno is left as the real
 * call left it.  malloc_usable_size is not interposed: libc still owns every
 * block and we never change its layout.
 *
 * Signal-safe: as safe as the real allocator (glibc's is not, but programs
 * do it); nothing here adds a lock that could be held by this thread.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../preload/real.h"
#include "heap.h"

/* ---- start-up path ------------------------------------------------------------- */

/* Before pe_real is resolved (first allocation of the process, or dlsym's own
   calloc while resolving), memory comes from the static pool. */
static void *
boot_alloc(size_t size, size_t align)
{
    void *p;

    pe_real_init();
    if (__atomic_load_n(&pe_real_ready, __ATOMIC_ACQUIRE))
        return NULL; /* resolved now: caller retries the real path */
    p = pe_real_boot_alloc(size ? size : 1, align);
    if (p) /* from now on free() must look for pool blocks */
        __atomic_fetch_or(&pe_heap_hot, PE_HEAP_HOT_POOL, __ATOMIC_SEQ_CST);
    return p;
}

/* Test the very pointer we are about to call (one load, no separate flag). */
#define BOOT(field, size, align)                                                                   \
    do {                                                                                           \
        if (PE_UNLIKELY(!pe_real.field)) {                                                         \
            void *b_ = boot_alloc((size), (align));                                                \
            if (b_ || !pe_real.field) {                                                            \
                if (!b_)                                                                           \
                    errno = ENOMEM;                                                                \
                return b_;                                                                         \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static size_t
page_size(void)
{
    static size_t ps;

    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

/* ---- the family ------------------------------------------------------------------ */

PE_EXPORT void *
malloc(size_t size)
{
    void *p;

    BOOT(malloc, size, 16);
    if (!__atomic_load_n(&pe_heap_hot, __ATOMIC_RELAXED))
        return pe_real.malloc(size); /* nothing to record: a tail call */
    p = pe_real.malloc(size);
    if (PE_LIKELY(p != NULL))
        pe_heap_on_alloc(p, size);
    return p;
}

/* 1 if p is a bootstrap pool block: an inline range test, exact after init. */
static inline int
from_pool(const void *p)
{
    return PE_UNLIKELY((uintptr_t)p - pe_heap_pool_lo < pe_heap_pool_span) && pe_real_owns(p);
}

PE_EXPORT void
free(void *p)
{
    void (*real_free)(void *);

    if (PE_UNLIKELY(p == NULL))
        return;
    if (__atomic_load_n(&pe_heap_hot, __ATOMIC_RELAXED)) {
        if (from_pool(p))
            return; /* the bootstrap pool is static, never freed */
        pe_heap_on_free(p);
    }
    real_free = pe_real.free;
    if (PE_UNLIKELY(real_free == NULL)) {
        pe_real_init();
        if (!(real_free = pe_real.free))
            return; /* cannot happen in practice: leak rather than crash */
    }
    real_free(p);
}

PE_EXPORT void *
calloc(size_t n, size_t m)
{
    size_t size;
    void *p;

    if (PE_UNLIKELY(__builtin_mul_overflow(n, m, &size))) {
        errno = ENOMEM;
        return NULL;
    }
    BOOT(calloc, size, 16); /* the pool is static: already zero */
    p = pe_real.calloc(n, m);
    if (PE_LIKELY(p != NULL))
        pe_heap_on_alloc(p, size);
    return p;
}

/* realloc of a pool block: copy what the pool can hold into a real block. */
static void *
realloc_from_pool(void *old, size_t size)
{
    void *p = malloc(size ? size : 1);
    size_t i;

    if (p)
        for (i = 0; i < size && pe_real_owns((char *)old + i); i++)
            ((char *)p)[i] = ((char *)old)[i];
    return p;
}

static void *
realloc_impl(void *old, size_t size)
{
    void *p;

    if (old == NULL)
        return malloc(size);
    if (from_pool(old))
        return realloc_from_pool(old, size);
    if (PE_UNLIKELY(!pe_real.realloc))
        pe_real_init();
    /* realloc = free(old) + malloc(new): forget old first, the real call may
       hand its address to another thread.  A failed realloc keeps old alive
       but untracked (rare; it only drops one sample). */
    pe_heap_on_free(old);
    p = pe_real.realloc(old, size);
    if (p != NULL)
        pe_heap_on_alloc(p, size);
    return p;
}

PE_EXPORT void *
realloc(void *old, size_t size)
{
    return realloc_impl(old, size);
}

PE_EXPORT void *
reallocarray(void *old, size_t n, size_t m)
{
    size_t size;

    /* glibc's reallocarray calls realloc through the PLT, i.e. us again:
       implement it here so the call is counted once. */
    if (__builtin_mul_overflow(n, m, &size)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_impl(old, size);
}

PE_EXPORT int
posix_memalign(void **out, size_t align, size_t size)
{
    int saved = errno, r;

    if (PE_UNLIKELY(!pe_real.posix_memalign)) {
        void *b;
        if (align < sizeof(void *) || (align & (align - 1)))
            return EINVAL;
        b = boot_alloc(size, align);
        if (b || !pe_real.posix_memalign) {
            if (!b)
                return ENOMEM;
            *out = b;
            return 0;
        }
    }
    r = pe_real.posix_memalign(out, align, size);
    if (r == 0 && *out)
        pe_heap_on_alloc(*out, size);
    errno = saved; /* POSIX: the error is returned, errno untouched */
    return r;
}

PE_EXPORT void *
aligned_alloc(size_t align, size_t size)
{
    void *p;

    BOOT(aligned_alloc, size, align);
    p = pe_real.aligned_alloc(align, size);
    if (PE_LIKELY(p != NULL))
        pe_heap_on_alloc(p, size);
    return p;
}

PE_EXPORT void *
memalign(size_t align, size_t size)
{
    void *p;

    BOOT(memalign, size, align);
    p = pe_real.memalign(align, size);
    if (PE_LIKELY(p != NULL))
        pe_heap_on_alloc(p, size);
    return p;
}

PE_EXPORT void *
valloc(size_t size)
{
    void *p;

    BOOT(valloc, size, page_size());
    p = pe_real.valloc(size);
    if (PE_LIKELY(p != NULL))
        pe_heap_on_alloc(p, size);
    return p;
}

PE_EXPORT void *
pvalloc(size_t size)
{
    size_t ps = page_size(), rounded;
    void *p;

    /* pvalloc rounds the size up to a whole page (0 -> one page). */
    if (__builtin_add_overflow(size ? size : 1, ps - 1, &rounded)) {
        errno = ENOMEM;
        return NULL;
    }
    rounded &= ~(ps - 1);
    BOOT(pvalloc, rounded, ps);
    p = pe_real.pvalloc(size);
    if (PE_LIKELY(p != NULL))
        pe_heap_on_alloc(p, rounded);
    return p;
}
