/*
 * heap.c: start-up, fork and read-out of heap/: maps the tables, decides
 * whether heap profiling can work in this process, finds our own text so
 * stacks start at the caller of malloc, and copies totals out for the
 * profile handlers (heap_kinds.c, http/h_recorded.c, http/h_session.c).  The
 * hooks live in malloc_hooks.c, the sampling decisions in sample.c, the tables in sitetab.c, live.c
 * and allocs.c.
 *
 * Signal-safe: pe_heap_trim only.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../preload/aslimit.h"
#include "../preload/log.h"
#include "../preload/real.h"
#include "heap_int.h"

uint64_t pe_heap_dropped_live;

static int available;
static const char *reason = "heap profiling was not initialised";
static uintptr_t self_lo, self_hi; /* our executable segment(s) */
static int inited;
static int tables_ok;                /* the tables are mapped (pe_heap_init got that far) */
static const char *attach_note = ""; /* pe_heap_attach's, for the comments */

void *
pe_heap_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

void *
pe_heap_map_hashed(size_t bytes)
{
    /*
     * Hash tables are probed (read) before they are written: on untouched
     * pages that maps the shared zero page and then copies it on the write,
     * with a TLB shootdown across CPUs each time; in a short malloc-heavy run
     * that was most of the sampling cost.  Small tables are populated up front
     * (their pages would all be touched in a long run anyway); big ones, for
     * very low rates, keep paying on first touch instead of costing RSS.
     */
    int populate = bytes <= ((size_t)4 << 20) ? MAP_POPULATE : MAP_NORESERVE;
    void *p =
        mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

uint32_t
pe_heap_fit(uint32_t want, size_t per, unsigned share)
{
    return pe_aslimit_fit(want, per, share, 256);
}

/* ---- our own frames ----------------------------------------------------------- */

static void
find_self(void)
{
    Dl_info info;
    const ElfW(Ehdr) * eh;
    const ElfW(Phdr) * ph;
    uintptr_t base;

    if (!dladdr((void *)&pe_heap_init, &info) || !info.dli_fbase)
        return;
    base = (uintptr_t)info.dli_fbase;
    eh = (const ElfW(Ehdr) *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return;
    ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    /* dli_fbase is the load bias for a shared object (first PT_LOAD at 0). */
    for (int i = 0; i < eh->e_phnum; i++) {
        uintptr_t lo, hi;
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
            continue;
        lo = base + ph[i].p_vaddr;
        hi = lo + ph[i].p_memsz;
        if (!self_lo || lo < self_lo)
            self_lo = lo;
        if (hi > self_hi)
            self_hi = hi;
    }
}

PE_SIGSAFE int
pe_heap_trim(const uintptr_t *pcs, int n)
{
    int i = 0;

    /* Return addresses into our code (the hook, sample.c, the unwinder)
       come first; the first one outside is the caller of malloc, or
       operator new's frame for C++ (libstdc++ calls malloc). */
    while (i < n - 1 && pcs[i] >= self_lo && pcs[i] < self_hi)
        i++;
    return i;
}

/* ---- start-up ------------------------------------------------------------------- */

static void
check_available(void)
{
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info a, b;

    const ElfW(Sym) *sym = NULL;

    if (!m || !dladdr1(m, &a, (void **)&sym, RTLD_DL_SYMENT) ||
        !dladdr((void *)&pe_heap_init, &b)) {
        reason = "cannot tell whose malloc the program uses";
        return;
    }
    /* A non-PIE executable that takes malloc's address gets a canonical PLT
       entry, and dlsym answers with that stub: calls through it still reach
       us.  Only a real definition named malloc elsewhere means we are bypassed. */
    if (a.dli_fbase != b.dli_fbase && !(sym && sym->st_shndx == SHN_UNDEF)) {
        /* The executable defines malloc, or an allocator preloaded before us
           wins symbol resolution: our hooks never see its allocations. */
        reason = "the program's malloc is not interposed by libprofendpoints "
                 "(it defines its own, or another allocator is preloaded first)";
        return;
    }
    available = 1;
    reason = NULL;
}

static size_t
live_slots(int64_t rate)
{
    /* Room for the samples of 8 GiB of live heap at this rate, at most half
       full; between 2^12 and 2^21 slots (128 KiB to 64 MiB of address space,
       MAP_NORESERVE, touched as used). */
    uint64_t want = rate > 0 ? 2 * ((8ull << 30) / (uint64_t)rate) : 0;
    size_t s = 1u << 12;

    while (s < want && s < (1u << 21))
        s <<= 1;
    return pe_heap_fit((uint32_t)s, 32, 1024);
}

int
pe_heap_init(int64_t rate_bytes)
{
    int err;

    if (rate_bytes < 0)
        rate_bytes = 0;
    if (inited)
        return available ? 0 : -ENOTSUP;
    inited = 1;
    find_self();
    pe_heap_tag_key_init();
    /* glibc keeps a header below every block: reading p - 8 is always safe. */
    pe_heap_hot.page_start_ok = !pe_real_foreign_malloc;
    pe_heap_own_init(); /* before our threads start: they never take an arena */
    if ((err = pe_heap_stacks_init()) < 0 ||
        (err = pe_heap_live_init(live_slots(rate_bytes))) < 0 ||
        (err = pe_heap_allocs_init()) < 0) {
        reason = "cannot map the heap profile tables";
        return err;
    }
    tables_ok = 1;
    check_available();
    if (!available) {
        /* Said by the heap endpoints' 503 and the index page, not on stderr:
           a program with its own allocator (Chromium's processes, each of
           them) is nothing wrong with a setting. */
        return -ENOTSUP;
    }
    __atomic_store_n(&pe_heap_rate_bytes, rate_bytes, __ATOMIC_RELAXED);
    /* Every thread draws a fresh countdown on its next slow path; this one
       (the only one, as a rule, this early) on its next allocation. */
    __atomic_store_n(&pe_heap_gen, PE_HEAP_GEN_BOOT + 1, __ATOMIC_RELEASE);
    pe_tls.heap_countdown = 0;
    return 0;
}

/* ---- attach and detach (interpose/) ------------------------------------------------ */

int
pe_heap_attach(int64_t rate_bytes, const char *note)
{
    uint64_t entries;
    int err, gen;

    if (rate_bytes < 0)
        rate_bytes = 0;
    if (!inited)
        (void)pe_heap_init(0); /* maps the tables; "not interposed" is what we fix here */
    if (!tables_ok)
        return -ENOMEM; /* reason says so */
    /* Room for four times what the live table lists: probes stay short. */
    for (entries = 1u << 14; entries < 4 * pe_heap_live_capacity() && entries < (1u << 22);)
        entries <<= 1;
    if ((err = pe_heap_side_init((uint32_t)entries)) < 0) {
        reason = "cannot map the heap's side table";
        return err;
    }
    pe_heap_side_clear();
    /* The real functions as the attach resolved them (the program's own
       malloc: libc's, or an allocator it linked). */
    __atomic_store_n(&pe_heap_hot.real_malloc, pe_real.malloc, __ATOMIC_RELEASE);
    __atomic_store_n(&pe_heap_hot.real_free, pe_real.free, __ATOMIC_RELEASE);
    attach_note = note ? note : "";
    reason = NULL;
    __atomic_store_n(&available, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&pe_heap_rate_bytes, rate_bytes, __ATOMIC_RELAXED);
    gen = __atomic_load_n(&pe_heap_gen, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_heap_gen, (gen < PE_HEAP_GEN_BOOT ? PE_HEAP_GEN_BOOT : gen) + 1,
                     __ATOMIC_RELEASE);
    return 0;
}

void
pe_heap_detach(void)
{
    if (!pe_heap_hot.side_keys)
        return;
    __atomic_store_n(&pe_heap_rate_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_heap_gen, pe_heap_gen + 1, __ATOMIC_RELEASE);
    pe_heap_side_drain_all();
}

const char *
pe_heap_attach_note(void)
{
    return attach_note;
}

int
pe_heap_available(void)
{
    return available;
}

const char *
pe_heap_reason(void)
{
    return reason ? reason : "";
}

int64_t
pe_heap_rate(void)
{
    return available ? pe_heap_rate_bytes : 0;
}

/* ---- fork ------------------------------------------------------------------------- */

void
pe_heap_atfork_child(int lives)
{
    if (!inited)
        return;
    pe_heap_own_atfork_child();
    pe_heap_allocs_atfork_child();
    pe_heap_history_atfork_child();
    /* A child of a process tree keeps sampling: the blocks it inherited stay
       accounted and its own server will read them (preload/tree.h). */
    if (lives)
        return;
    /* A dormant fork child: no server will read its profile, so sampling
       stops; its threads redraw to "never" on their next slow path. */
    __atomic_store_n(&pe_heap_rate_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_heap_gen, pe_heap_gen + 1, __ATOMIC_RELEASE);
    pe_tls.heap_countdown = 0;
}

void
pe_heap_step_aside(void)
{
    if (!inited)
        return;
    /* As a dormant fork child: every thread redraws to "never" on its next
       slow path (no seeding, no gettid), and no call is recorded any more. */
    __atomic_store_n(&pe_heap_allocs_on, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&pe_heap_rate_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_heap_gen, pe_heap_gen + 1, __ATOMIC_RELEASE);
}

void
pe_heap_rejoin(int64_t rate_bytes)
{
    if (!inited || !available)
        return;
    __atomic_store_n(&pe_heap_rate_bytes, rate_bytes > 0 ? rate_bytes : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_heap_gen, pe_heap_gen + 1, __ATOMIC_RELEASE);
}

void
pe_heap_set_unavailable(const char *why)
{
    available = 0;
    reason = why;
}

/* ---- read-out ------------------------------------------------------------------------ */

int
pe_heap_snapshot(pe_heap_rec_t **out, int *n)
{
    uint32_t cnt = pe_heap_stacks_count();
    pe_heap_rec_t *v = malloc((cnt ? cnt : 1) * sizeof(*v));
    int k = 0;

    *out = NULL;
    *n = 0;
    if (!v)
        return -ENOMEM;
    for (uint32_t id = 0; id < cnt; id++) {
        if (pe_heap_stacks_read(id, &v[k]) && v[k].raw_alloc_n)
            k++;
    }
    *out = v;
    *n = k;
    return 0;
}

void
pe_heap_get_stats(pe_heap_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    for (uint32_t id = 0, n = pe_heap_stacks_count(); id < n; id++) {
        pe_heap_rec_t r;
        if (pe_heap_stacks_read(id, &r))
            st->samples += r.raw_alloc_n;
    }
    st->dropped_live = __atomic_load_n(&pe_heap_dropped_live, __ATOMIC_RELAXED);
    st->stacks = pe_heap_stacks_count();
    st->stacks_full = __atomic_load_n(&pe_heap_stacks_full, __ATOMIC_RELAXED);
    st->live = pe_heap_live_count();
    st->live_cap = pe_heap_live_capacity();
}

int
pe_heap_live_iterate(int (*cb)(const pe_heap_live_t *blk, void *arg), void *arg)
{
    pe_heap_live_t *v;
    size_t n;
    int r = pe_heap_live_copy(&v, &n);

    if (r < 0)
        return r;
    for (size_t i = 0; i < n && !r; i++)
        r = cb(&v[i], arg);
    free(v);
    return r;
}
