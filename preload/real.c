/*
 * real.c: finds the real libc/pthread/dl functions behind our interposers.
 * Owns the static bootstrap pool that feeds allocations made while dlsym runs
 * (older glibc's dlsym calls calloc) and the test that tells glibc's malloc
 * from a foreign allocator loaded after us.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "real.h"

pe_real_t pe_real;
int pe_real_ready;
int pe_real_foreign_malloc;

/* ---- bootstrap pool ------------------------------------------------------- */

/* Only dlsym's own bookkeeping lands here; 64 KiB is far more than it needs. */
#define PE_BOOT_POOL 65536
static char boot_pool[PE_BOOT_POOL] __attribute__((aligned(64)));
static size_t boot_used;

void *
pe_real_boot_alloc(size_t size, size_t align)
{
    size_t cur = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;

    if (align < 16)
        align = 16;
    do {
        start = (cur + align - 1) & ~(align - 1);
        end = start + size;
        if (end > PE_BOOT_POOL || end < start)
            return NULL;
    } while (
        !__atomic_compare_exchange_n(&boot_used, &cur, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return boot_pool + start; /* static storage: already zeroed, never reused */
}

PE_SIGSAFE int
pe_real_owns(const void *p)
{
    return (const char *)p >= boot_pool && (const char *)p < boot_pool + PE_BOOT_POOL;
}

/* ---- resolution ----------------------------------------------------------- */

static void *
next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

#define RESOLVE(field) pe_real.field = (__typeof__(pe_real.field))next_symbol(#field)

void
pe_real_init(void)
{
    static int resolving;

    if (__atomic_load_n(&pe_real_ready, __ATOMIC_ACQUIRE))
        return;
    /* A recursive call (dlsym allocating) must not re-enter: its caller sees
       pe_real_ready still 0 and takes memory from the pool. */
    if (__atomic_exchange_n(&resolving, 1, __ATOMIC_ACQ_REL))
        return;
    RESOLVE(malloc);
    RESOLVE(calloc);
    RESOLVE(realloc);
    RESOLVE(free);
    RESOLVE(posix_memalign);
    RESOLVE(aligned_alloc);
    RESOLVE(memalign);
    RESOLVE(valloc);
    RESOLVE(pvalloc);
    RESOLVE(reallocarray);
    RESOLVE(malloc_usable_size);
    RESOLVE(pthread_create);
    RESOLVE(dlopen);
    RESOLVE(dlclose);
    RESOLVE(dl_iterate_phdr);
    RESOLVE(fork);
    RESOLVE(sigaction);
    RESOLVE(signal);
    RESOLVE(execve);
    RESOLVE(execvpe);
    RESOLVE(fexecve);
    RESOLVE(pthread_mutex_lock);
    RESOLVE(pthread_mutex_timedlock);
    RESOLVE(pthread_rwlock_rdlock);
    RESOLVE(pthread_rwlock_wrlock);
    RESOLVE(pthread_cond_wait);
    RESOLVE(pthread_cond_timedwait);

    if (!pe_real.malloc || !pe_real.free || !pe_real.calloc || !pe_real.realloc) {
        /* The one fatal case: without the real allocator nothing can work. */
        pe_log_sigsafe("cannot resolve the real malloc/free; aborting");
        _exit(127);
    }
    /* A foreign allocator (jemalloc, tcmalloc) loaded after us owns the heap:
       we forward to it and never mix in glibc's blocks. */
    /* (by name: heap/malloc_hooks.c defines __libc_malloc too, for programs that call it) */
    pe_real_foreign_malloc = pe_real.malloc != (void *(*)(size_t))next_symbol("__libc_malloc");
    __atomic_store_n(&pe_real_ready, 1, __ATOMIC_RELEASE);
}
