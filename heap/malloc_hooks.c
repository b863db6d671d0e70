/*
 * malloc_hooks.c: the exported malloc-family interposers.  Each is thin: make sure
 * the real functions are resolved (serving the bootstrap pool meanwhile),
 * count the allocation down and tail-call the real function; the few calls
 * that reach a sample point, run under an /allocs_profile recording or touch
 * a tagged block (heap.h) go to sample.c, which does the whole call.  errno
 * is left as the real call left it.  malloc_usable_size is interposed for
 * the tagged blocks only (their header sits in front of the caller's bytes).
 * After an attach (the same functions, reached through the program's
 * redirected relocation slots: interpose/) free, realloc and
 * malloc_usable_size never read below a block: sample.c's side paths look
 * samples up by address instead (heap.h, side.c).
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

/* glibc's own names (at the end of this file) */
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);
void free_sized(void *, size_t);
void free_aligned_sized(void *, size_t, size_t);

/* ---- start-up path ------------------------------------------------------------- */

/* Test the very pointer we are about to call (one load, no separate flag). */
#define BOOT(field, size, align)                                                                   \
    do {                                                                                           \
        if (PE_UNLIKELY(!pe_real.field)) {                                                         \
            void *b_ = pe_heap_boot_alloc((size), (align));                                        \
            if (b_ || !pe_real.field) {                                                            \
                if (!b_)                                                                           \
                    errno = ENOMEM;                                                                \
                return b_;                                                                         \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* malloc's slow path, also while the real functions are not known yet (the
   hot line's pointer then resolves them: tag.c). */
static __attribute__((noinline)) void *
malloc_slow(size_t size)
{
    if (PE_UNLIKELY(!pe_real.malloc))
        return pe_heap_hot.real_malloc(size);
    return pe_heap_alloc_slow(PE_HEAP_MALLOC, 16, size);
}

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
    if (pe_heap_countdown(size))
        return malloc_slow(size);
    return pe_heap_hot.real_malloc(size);
}

/* free of NULL, of a pointer at a page start, or of one whose word below is
   negative: rare enough for a call. */
static __attribute__((noinline)) void
free_unusual(void *p)
{
    if (p == NULL)
        return;
    if (pe_heap_maybe_tagged(p))
        pe_heap_free_slow(p);
    else
        pe_heap_hot.real_free(p);
}

PE_EXPORT void
free(void *p)
{
    /* After an attach: by address, never reading p's memory (side.c); an
       empty slot where p's probe starts is the common answer, "not ours". */
    const uintptr_t *keys = pe_heap_hot.side_keys;
    if (PE_UNLIKELY(keys != NULL)) {
        if (p && !pe_heap_side_maybe(keys, p))
            pe_heap_hot.real_free(p);
        else
            pe_heap_side_free(p);
        return;
    }
    /* One test for NULL and a page start (where the word below may not be
       readable), one for the sign of that word (heap.h): a tag's is
       negative, glibc's chunk size never is. */
    if (PE_UNLIKELY(((uintptr_t)p & 4088) == 0) || PE_UNLIKELY(pe_heap_tag_sign(p))) {
        free_unusual(p);
        return;
    }
    pe_heap_hot.real_free(p);
}

PE_EXPORT void *
calloc(size_t n, size_t m)
{
    size_t size;

    if (PE_UNLIKELY(__builtin_mul_overflow(n, m, &size))) {
        errno = ENOMEM;
        return NULL;
    }
    BOOT(calloc, size, 16); /* the pool is static: already zero */
    if (pe_heap_countdown(size))
        return pe_heap_alloc_slow(PE_HEAP_CALLOC, 16, size);
    return pe_real.calloc(n, m);
}

static void *
realloc_impl(void *old, size_t size)
{
    if (old == NULL)
        return malloc(size);
    if (PE_UNLIKELY(pe_heap_hot.side_keys != NULL))
        return pe_heap_side_realloc(old, size);
    if (PE_UNLIKELY(!pe_real.realloc))
        pe_real_init();
    if (PE_UNLIKELY(pe_heap_maybe_tagged(old)))
        return pe_heap_realloc_slow(old, size, 0);
    if (pe_heap_countdown(size))
        return pe_heap_realloc_slow(old, size, 1);
    return pe_real.realloc(old, size);
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

PE_EXPORT size_t
malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    /* (after an attach a sample is the real allocator's block as it is) */
    if (pe_heap_hot.side_keys == NULL && PE_UNLIKELY(pe_heap_maybe_tagged(p)))
        return pe_heap_usable_slow(p);
    if (PE_UNLIKELY(!pe_real.malloc_usable_size))
        pe_real_init();
    return pe_real.malloc_usable_size ? pe_real.malloc_usable_size(p) : 0;
}

PE_EXPORT int
posix_memalign(void **out, size_t align, size_t size)
{
    int saved = errno, r;
    void *p;

    if (PE_UNLIKELY(!pe_real.posix_memalign)) {
        void *b;
        if (align < sizeof(void *) || (align & (align - 1)))
            return EINVAL;
        b = pe_heap_boot_alloc(size, align);
        if (b || !pe_real.posix_memalign) {
            if (!b)
                return ENOMEM;
            *out = b;
            return 0;
        }
    }
    if (!pe_heap_countdown(size))
        return pe_real.posix_memalign(out, align, size);
    errno = 0;
    p = pe_heap_alloc_slow(PE_HEAP_POSIX_MEMALIGN, align, size);
    r = p ? 0 : (errno ? errno : ENOMEM);
    if (p)
        *out = p;
    errno = saved; /* POSIX: the error is returned, errno untouched */
    return r;
}

PE_EXPORT void *
aligned_alloc(size_t align, size_t size)
{
    BOOT(aligned_alloc, size, align);
    if (pe_heap_countdown(size))
        return pe_heap_alloc_slow(PE_HEAP_ALIGNED_ALLOC, align, size);
    return pe_real.aligned_alloc(align, size);
}

PE_EXPORT void *
memalign(size_t align, size_t size)
{
    BOOT(memalign, size, align);
    if (pe_heap_countdown(size))
        return pe_heap_alloc_slow(PE_HEAP_MEMALIGN, align, size);
    return pe_real.memalign(align, size);
}

PE_EXPORT void *
valloc(size_t size)
{
    BOOT(valloc, size, page_size());
    if (pe_heap_countdown(size))
        return pe_heap_alloc_slow(PE_HEAP_VALLOC, page_size(), size);
    return pe_real.valloc(size);
}

PE_EXPORT void *
pvalloc(size_t size)
{
    size_t ps = page_size(), rounded;

    /* pvalloc rounds the size up to a whole page (0 -> one page). */
    if (__builtin_add_overflow(size ? size : 1, ps - 1, &rounded)) {
        errno = ENOMEM;
        return NULL;
    }
    rounded &= ~(ps - 1);
    BOOT(pvalloc, rounded, ps);
    if (pe_heap_countdown(rounded))
        return pe_heap_alloc_slow(PE_HEAP_PVALLOC, ps, rounded);
    return pe_real.pvalloc(size);
}

/* ---- glibc's other names ------------------------------------------------------- */

/*
 * glibc exports its allocator under __libc_* names too, and C23's free_sized
 * and free_aligned_sized arrive with newer glibc.  A program calling them
 * would hand one of our tagged blocks to a glibc function that does not know
 * the tag (realloc: "mremap_chunk(): invalid pointer", then abort), so they
 * are ours as well: the same as the plain names.  The sizes are hints only.
 */
PE_EXPORT void *
__libc_malloc(size_t size)
{
    return malloc(size);
}

PE_EXPORT void *
__libc_calloc(size_t n, size_t m)
{
    return calloc(n, m);
}

PE_EXPORT void *
__libc_realloc(void *old, size_t size)
{
    return realloc_impl(old, size);
}

PE_EXPORT void
__libc_free(void *p)
{
    free(p);
}

PE_EXPORT void *
__libc_memalign(size_t align, size_t size)
{
    return memalign(align, size);
}

PE_EXPORT void *
__libc_valloc(size_t size)
{
    return valloc(size);
}

PE_EXPORT void *
__libc_pvalloc(size_t size)
{
    return pvalloc(size);
}

PE_EXPORT void
free_sized(void *p, size_t size)
{
    free(p);
}

PE_EXPORT void
free_aligned_sized(void *p, size_t align, size_t size)
{
    free(p);
}
