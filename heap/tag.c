/*
 * tag.c: the layout of the blocks we allocate ourselves, so that free() can
 * tell them from the real allocator's by reading one word (heap.h).
 *
 * A sampled block:
 *
 *     base                          p - 48                   p
 *     | padding (aligned only) ... | pe_heap_tag_t (48 B)    | the caller's bytes
 *
 * base is what the real allocator returned for size + off bytes (off = 48,
 * or 48 rounded up to the alignment asked for), p = base + off is what the
 * caller gets.  The tag's last word (p - 8) is key ^ p, the one before it
 * key2 ^ p; both are cleared before base goes back, so a stale tag never
 * outlives its block.  The header also carries what the profile needs when
 * the block is freed (stack, size, weight), so a free does not have to find
 * it in a table.  A tag of weight 0 marks a block that is ours in layout but
 * not a sample (a sampled block that realloc kept, whose new size was not
 * sampled): it counts for nothing.
 *
 * A bootstrap pool block (before the real allocator is resolved) has a
 * 16-byte prefix { size, key ^ p }; the slow path recognises it by its
 * address first.
 *
 * Signal-safe: as the real allocator; no locks.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../preload/rand.h"
#include "../preload/real.h"
#include "heap_int.h"

void
pe_heap_tag_key_init(void)
{
    uint64_t x;

    if (__atomic_load_n(&pe_heap_hot.key, __ATOMIC_ACQUIRE))
        return;
    /* Not a secret against an attacker, only against coincidence: no
       program's data should equal key ^ p by chance.  The seed adds the
       clock, tid and an address to the pid and cycle counter. */
    x = ((uint64_t)getpid() << 20) ^ __builtin_ia32_rdtsc();
    pe_rand_seed(&x);
    pe_heap_hot.key2 = pe_rand_next(&x) | (1ull << 63);
    __atomic_store_n(&pe_heap_hot.key, pe_rand_next(&x) | (1ull << 63), __ATOMIC_RELEASE);
}

static inline pe_heap_tag_t *
tag_at(void *p)
{
    return (pe_heap_tag_t *)((char *)p - sizeof(pe_heap_tag_t));
}

/* Bytes in front of the caller's pointer for an alignment of `align`. */
static inline size_t
tag_offset(size_t align)
{
    size_t off = sizeof(pe_heap_tag_t);

    return align <= 16 ? off : (off + align - 1) & ~(align - 1);
}

void *
pe_heap_tag_alloc(pe_heap_kind_t kind, size_t align, size_t size)
{
    size_t off, total;
    void *base = NULL;
    char *p;

    if (kind == PE_HEAP_MALLOC || kind == PE_HEAP_CALLOC)
        align = 16;
    /* Alignments the real call would refuse or round are left to it
       (posix_memalign: a power of two, at least a pointer's size). */
    if (align == 0 || (align & (align - 1)) || align > ((size_t)1 << 20) ||
        (kind == PE_HEAP_POSIX_MEMALIGN && align < sizeof(void *)))
        return NULL;
    /* Under another allocator only the plain 48-byte offset: a resized block
       whose pointer lands on a page start must be shifted (sample.c), and
       with 48 bytes that can only happen to small blocks (big ones sit on
       64-byte boundaries at least).  Its aligned allocations go unsampled. */
    if (align > 16 && !pe_heap_hot.page_start_ok)
        return NULL;
    off = tag_offset(align);
    if (__builtin_add_overflow(size, off, &total))
        return NULL;
    if (align <= 16)
        base = kind == PE_HEAP_CALLOC ? pe_real.calloc(1, total) : pe_real.malloc(total);
    else if (pe_real.posix_memalign(&base, align, total) != 0)
        base = NULL;
    if (!base)
        return NULL;
    p = (char *)base + off;
    if (pe_heap_at_page_start((uintptr_t)p) && !pe_heap_hot.page_start_ok) {
        pe_real.free(base); /* free() could not read its tag */
        return NULL;
    }
    tag_at(p)->base = (uintptr_t)base;
    return p;
}

void
pe_heap_tag_set(void *p, uint32_t stack, uint64_t size, uint64_t cnt_fx, uint32_t slot)
{
    pe_heap_tag_t *t = tag_at(p);
    uintptr_t a = (uintptr_t)p;

    t->size = size;
    t->cnt_fx = cnt_fx;
    t->stack = stack;
    t->slot = slot;
    t->check = a ^ pe_heap_hot.key2;
    __atomic_store_n(&t->magic, a ^ pe_heap_hot.key, __ATOMIC_RELEASE);
}

void
pe_heap_tag_moved(void *p, void *base)
{
    tag_at(p)->base = (uintptr_t)base;
}

PE_SIGSAFE pe_heap_tag_t *
pe_heap_tag_of(void *p)
{
    uintptr_t a = (uintptr_t)p;
    pe_heap_tag_t *t;

    if (!p || (pe_heap_at_page_start(a) && !pe_heap_hot.page_start_ok))
        return NULL;
    t = tag_at(p);
    if (t->magic != (a ^ pe_heap_hot.key) || t->check != (a ^ pe_heap_hot.key2))
        return NULL;
    return t;
}

void *
pe_heap_tag_release(pe_heap_tag_t *t)
{
    void *base = (void *)t->base;

    t->check = 0;
    __atomic_store_n(&t->magic, 0, __ATOMIC_RELAXED);
    return base;
}

size_t
pe_heap_tag_usable(pe_heap_tag_t *t, void *p)
{
    size_t u = pe_real.malloc_usable_size ? pe_real.malloc_usable_size((void *)t->base) : 0;
    size_t off = (uintptr_t)p - t->base;

    return u > off + t->size ? u - off : t->size;
}

/* ---- the bootstrap pool ------------------------------------------------------------ */

/* The first allocations of the process, before the real allocator is known:
   tagged blocks from the static pool (NULL once it is resolved, or empty). */
PE_SIGSAFE static void *pool_alloc(size_t size, size_t align);

void *
pe_heap_boot_alloc(size_t size, size_t align)
{
    pe_real_init();
    if (__atomic_load_n(&pe_real_ready, __ATOMIC_ACQUIRE))
        return NULL; /* resolved now: caller retries the real path */
    return pool_alloc(size ? size : 1, align);
}

/* Where the hot line's malloc and free pointers lead until the real functions
   are known: resolve them (the pool meanwhile), then step aside for good. */
static void *
resolve_malloc(size_t size)
{
    void *p = pe_heap_boot_alloc(size, 16);

    if (p || !pe_real.malloc) {
        if (!p)
            errno = ENOMEM;
        return p;
    }
    __atomic_store_n(&pe_heap_hot.real_malloc, pe_real.malloc, __ATOMIC_RELEASE);
    return pe_real.malloc(size);
}

static void
resolve_free(void *p)
{
    pe_real_init();
    if (!pe_real.free)
        return; /* cannot happen in practice: leak rather than crash */
    __atomic_store_n(&pe_heap_hot.real_free, pe_real.free, __ATOMIC_RELEASE);
    pe_real.free(p);
}

pe_heap_hot_t pe_heap_hot = {
    .real_malloc = resolve_malloc, .real_free = resolve_free, .gen = PE_HEAP_GEN_BOOT};
_Static_assert(sizeof(pe_heap_hot_t) == 64, "the hot line is one line");

PE_SIGSAFE static void *
pool_alloc(size_t size, size_t align)
{
    size_t pre = align < 16 ? 16 : align;
    char *b, *p;

    if (align >= 4096)
        return NULL; /* would sit on a page start, where free() does not look */
    pe_heap_tag_key_init();
    /* One spare prefix so that p can move off a page start. */
    b = pe_real_boot_alloc(size + 2 * pre, pre);
    if (!b)
        return NULL;
    p = b + pre;
    if (pe_heap_at_page_start((uintptr_t)p))
        p += pre;
    ((uint64_t *)p)[-2] = size;
    ((uintptr_t *)p)[-1] = (uintptr_t)p ^ pe_heap_hot.key;
    return p;
}

size_t
pe_heap_pool_size(const void *p)
{
    return ((const uint64_t *)p)[-2];
}
