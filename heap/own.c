/*
 * own.c: the allocator of the library's own threads (civetweb's, the
 * collector, the heap history, the server thread), so that they never make
 * glibc create an arena.  glibc gives each new thread that allocates an
 * arena of its own (up to 8 per core), and each arena reserves 64 MiB of
 * address space: under `ulimit -v` a dozen of them took most of what the
 * program could have had (README "Limitations").
 *
 * The hooks send every allocation of a thread marked internal here (its
 * countdown is kept at 0, so each one reaches the slow path: our threads are
 * not hot).  Blocks of up to OWN_SMALL_MAX bytes come from size classes
 * carved out of chunks we map (OWN_CHUNK), freed ones kept on a list per
 * class; bigger or over-aligned ones get a mapping each (munmap on free,
 * mremap on realloc).  Memory held is bounded by the peak of what our threads
 * had in use at once.
 *
 * Every block has a 32-byte header in front, laid out as a tag's last words
 * (heap/tag.c): p - 8 holds key ^ p (negative: free() takes its slow path),
 * p - 16 holds own_key ^ p (a tag holds key2 ^ p there), so the slow path
 * tells our blocks from tags and from glibc's by these two words, with no
 * table.  Any thread may free or resize them.
 *
 * A glibc block freed or resized on one of our threads must not reach glibc's
 * free there either: its first free in a thread sets up a tcache, which
 * takes an arena.  Such blocks are put on a list that a program thread's
 * next slow path hands to the real free (pe_heap_own_drain).
 *
 * Only with glibc behind us (page_start_ok); under another allocator our
 * threads use it as before.
 *
 * Signal-safe: no (a spin lock; our threads do not allocate in handlers).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../preload/rand.h"
#include "../preload/real.h"
#include "../preload/spin.h"
#include "heap_int.h"

#define OWN_HDR 32
#define OWN_SMALL_MAX 16384
#define OWN_CHUNK ((size_t)256 << 10)
#define OWN_BIG UINT32_MAX

/* The header: { base (big: the mapping; small: 0), len (big: the mapping's
   length; small: the class), own_key ^ p, key ^ p }. */
typedef struct own_hdr_s {
    uintptr_t base;
    uint64_t len;
    uintptr_t check;
    uintptr_t magic;
} own_hdr_t;
_Static_assert(sizeof(own_hdr_t) == OWN_HDR, "header size");

static const uint32_t class_size[] = {16,  32,   48,   64,   96,   128,  192,  256,  384,   512,
                                      768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384};
#define NCLASS (sizeof(class_size) / sizeof(class_size[0]))

static pe_spin_t lock;
static void *free_list[NCLASS]; /* under lock; a block's first word links it */
static char *bump, *bump_end;   /* under lock: the chunk being carved */
static uintptr_t own_key;
static int own_on;
static void *deferred; /* glibc blocks our threads gave up (lock-free stack) */
static size_t page;

void
pe_heap_own_init(void)
{
    uint64_t x;

    if (own_on || !pe_heap_hot.page_start_ok || !pe_heap_hot.key)
        return;
    page = (size_t)sysconf(_SC_PAGESIZE);
    x = pe_heap_hot.key ^ ((uint64_t)getpid() << 32) ^ __builtin_ia32_rdtsc();
    pe_rand_seed(&x);
    do
        own_key = pe_rand_next(&x) | (1ull << 63);
    while (own_key == pe_heap_hot.key2);
    __atomic_store_n(&own_on, 1, __ATOMIC_RELEASE);
}

int
pe_heap_own_on(void)
{
    return __atomic_load_n(&own_on, __ATOMIC_ACQUIRE);
}

static own_hdr_t *
hdr_of(void *p)
{
    return (own_hdr_t *)((char *)p - OWN_HDR);
}

static void
seal(void *p, uintptr_t base, uint64_t len)
{
    own_hdr_t *h = hdr_of(p);
    uintptr_t a = (uintptr_t)p;

    h->base = base;
    h->len = len;
    h->check = a ^ own_key;
    __atomic_store_n(&h->magic, a ^ pe_heap_hot.key, __ATOMIC_RELEASE);
}

int
pe_heap_own_is(void *p)
{
    uintptr_t a = (uintptr_t)p;
    own_hdr_t *h;

    if (!p || !__atomic_load_n(&own_on, __ATOMIC_ACQUIRE))
        return 0;
    h = hdr_of(p);
    return h->magic == (a ^ pe_heap_hot.key) && h->check == (a ^ own_key);
}

static unsigned
class_of(size_t size)
{
    unsigned c = 0;

    while (class_size[c] < size)
        c++;
    return c;
}

static size_t
round_page(size_t n)
{
    return (n + page - 1) & ~(page - 1);
}

static void *
big_alloc(size_t size, size_t align)
{
    size_t len, pad = align > 16 ? align : 0;
    char *base;
    uintptr_t p;

    if (size > ((size_t)1 << 46) || __builtin_add_overflow(size, OWN_HDR + pad, &len)) {
        errno = ENOMEM;
        return NULL;
    }
    len = round_page(len);
    base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    p = (uintptr_t)base + OWN_HDR;
    if (pad)
        p = (p + align - 1) & ~(uintptr_t)(align - 1);
    seal((void *)p, (uintptr_t)base, len);
    return (void *)p;
}

static void *
small_alloc(size_t size)
{
    unsigned c = class_of(size);
    size_t need = OWN_HDR + class_size[c];
    char *p;

    pe_spin_lock(&lock);
    if ((p = free_list[c])) {
        free_list[c] = *(void **)p;
        pe_spin_unlock(&lock);
        return p;
    }
    /* A pointer on a page start is never looked below by free(): step over. */
    if (bump && pe_heap_at_page_start((uintptr_t)bump + OWN_HDR))
        bump += 16;
    if (!bump || (size_t)(bump_end - bump) < need) {
        char *m = mmap(NULL, OWN_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            pe_spin_unlock(&lock);
            errno = ENOMEM;
            return NULL;
        }
        bump = m + 16; /* the first header must not put p on the page start */
        bump_end = m + OWN_CHUNK;
    }
    p = bump + OWN_HDR;
    bump += need;
    pe_spin_unlock(&lock);
    seal(p, 0, c);
    return p;
}

void *
pe_heap_own_alloc(pe_heap_kind_t kind, size_t align, size_t size)
{
    void *p;

    pe_tls.heap_countdown = 0; /* the next call comes here again */
    if (kind == PE_HEAP_MALLOC || kind == PE_HEAP_CALLOC)
        align = 16;
    else if (kind == PE_HEAP_VALLOC || kind == PE_HEAP_PVALLOC)
        align = page;
    if (align == 0 || (align & (align - 1)) ||
        (kind == PE_HEAP_POSIX_MEMALIGN && align < sizeof(void *))) {
        errno = EINVAL;
        return NULL;
    }
    if (align <= 16 && size <= OWN_SMALL_MAX) {
        if ((p = small_alloc(size ? size : 1)) && kind == PE_HEAP_CALLOC)
            memset(p, 0, size);
        return p;
    }
    return big_alloc(size, align); /* fresh pages are zero */
}

size_t
pe_heap_own_usable(void *p)
{
    own_hdr_t *h = hdr_of(p);

    if (h->base)
        return h->len - ((uintptr_t)p - h->base);
    return class_size[h->len];
}

void
pe_heap_own_free(void *p)
{
    own_hdr_t *h = hdr_of(p);
    unsigned c;

    if (h->base) {
        uintptr_t base = h->base;
        size_t len = h->len;
        h->check = 0;
        __atomic_store_n(&h->magic, 0, __ATOMIC_RELAXED);
        munmap((void *)base, len);
        return;
    }
    c = (unsigned)h->len;
    if (c >= NCLASS)
        return; /* not a header of ours after all: leak rather than corrupt */
    pe_spin_lock(&lock);
    *(void **)p = free_list[c];
    free_list[c] = p;
    pe_spin_unlock(&lock);
}

void *
pe_heap_own_realloc(void *old, size_t size)
{
    own_hdr_t *h = hdr_of(old);
    size_t have = pe_heap_own_usable(old);
    void *p;

    if (size <= have && (h->base || size > have / 2 || have <= 16))
        return old;
    if (h->base && (uintptr_t)old - h->base == OWN_HDR && size > OWN_SMALL_MAX) {
        /* Big and plainly aligned: the kernel moves the pages, we copy nothing. */
        size_t len;
        char *nb;
        if (size > ((size_t)1 << 46)) {
            errno = ENOMEM;
            return NULL;
        }
        len = round_page(size + OWN_HDR);
        nb = mremap((void *)h->base, h->len, len, MREMAP_MAYMOVE);
        if (nb == MAP_FAILED) {
            errno = ENOMEM;
            return NULL;
        }
        seal(nb + OWN_HDR, (uintptr_t)nb, len);
        return nb + OWN_HDR;
    }
    if (!(p = pe_heap_own_alloc(PE_HEAP_MALLOC, 16, size)))
        return NULL;
    memcpy(p, old, size < have ? size : have);
    pe_heap_own_free(old);
    return p;
}

/* glibc's chunk header: the size word's bit 1 marks a chunk glibc mmapped,
   whose free is a munmap that sets up nothing for the thread. */
static int
glibc_mmapped(void *p)
{
    return (((const uint64_t *)p)[-1] & 2) != 0;
}

void
pe_heap_own_give_up(void *p)
{
    void *head;

    if (!p)
        return;
    if (glibc_mmapped(p)) {
        pe_real.free(p);
        return;
    }
    head = __atomic_load_n(&deferred, __ATOMIC_RELAXED);
    do
        *(void **)p = head;
    while (
        !__atomic_compare_exchange_n(&deferred, &head, p, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

void *
pe_heap_own_adopt(void *old, size_t size)
{
    size_t have = pe_real.malloc_usable_size(old);
    void *p = pe_heap_own_alloc(PE_HEAP_MALLOC, 16, size);

    if (!p)
        return NULL; /* old stays as it was, as realloc's failure leaves it */
    memcpy(p, old, size < have ? size : have);
    pe_heap_own_give_up(old);
    return p;
}

void
pe_heap_own_drain_slow(void)
{
    void *p = __atomic_exchange_n(&deferred, NULL, __ATOMIC_ACQUIRE), *next;

    for (; p; p = next) {
        next = *(void **)p;
        pe_real.free(p);
    }
}

int
pe_heap_own_pending(void)
{
    return __atomic_load_n(&deferred, __ATOMIC_RELAXED) != NULL;
}

void
pe_heap_own_atfork_child(void)
{
    pe_spin_reset(&lock);
}
