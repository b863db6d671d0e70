/*
 * unwind.c: stack capture for every sampler.  Owns the dlopen'd libunwind
 * (RTLD_LOCAL: its _Unwind_* never reach the global scope), the double-buffered
 * snapshot of loaded objects that dl_iterate_phdr answers from while we unwind,
 * the dlclose handshake that keeps an object mapped while a handler reads it,
 * the bounds-checked frame-pointer walk used when libunwind is unsafe, and the
 * second walk through JIT code (DWARF where there is CFI, the frame pointer
 * where there is none) when unw_backtrace stops outside every object.
 * The interposers that feed it (dlopen/dlclose/dl_iterate_phdr) live in
 * preload/process_hooks.c.  Why this shape: in a handler unw_backtrace is the fast path
 * (about 0.5 us at depth 35, no syscall once warm; an unw_step loop costs 7-10
 * us and a sigprocmask pair per frame); libunwind finds unwind tables through
 * dl_iterate_phdr, whose loader lock a signal may interrupt (hence the
 * snapshot); and frame pointers alone lose the frames of Debian's libraries,
 * which are built without them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "../preload/fd.h"
#include "../preload/guard.h"
#include "../preload/loadgate.h"
#include "../preload/real.h"
#include "../preload/spin.h"
#include "cfi.h"
#include "unwind.h"

/* ---- data ----------------------------------------------------------------------- */

typedef int (*unw_backtrace_fn)(void **, int);
typedef void (*unw_flush_cache_fn)(void *, unsigned long, unsigned long);
/* libunwind's cursor API, for the walk through JIT frames (see jit_walk). */
typedef struct lu_cursor_s {
    uint64_t opaque[127]; /* UNW_TDEP_CURSOR_LEN on x86_64 */
} lu_cursor_t;
typedef int (*unw_init_local2_fn)(lu_cursor_t *, ucontext_t *, int);
typedef int (*unw_step_fn)(lu_cursor_t *);
typedef int (*unw_get_reg_fn)(lu_cursor_t *, int, uint64_t *);
typedef int (*unw_get_proc_info_fn)(lu_cursor_t *, void *);
#define LU_INIT_SIGNAL_FRAME 1
#define LU_RBP 6
#define LU_RSP 7
#define LU_RIP 16

/* Written once by pe_unwind_init (constructor), read everywhere. */
static unw_backtrace_fn unw_bt;
static unw_flush_cache_fn unw_flush;
static void **unw_local_as; /* &unw_local_addr_space */
static unw_init_local2_fn unw_init2;
static unw_step_fn unw_stp;
static unw_get_reg_fn unw_getreg;
static unw_get_proc_info_fn unw_procinfo;
/* libunwind's TLS module (it is dlopen'd, so its __thread variables live in
   dynamic TLS, allocated with malloc on a thread's first access). */
static size_t unw_tls_modid;
/* A pthread key created at load and deleted just before the first walk
   (pe_unwind_warm), so that libunwind's own key gets its low index. */
static pthread_key_t reserved_key;
static int key_reserved;

int pe_unwind_dlclose_busy;

/*
 * Loaded-object snapshot: two mmap'd buffers; `snap_cur` names the one readers
 * use.  A reader pins a buffer by incrementing its stripe's count for it
 * (guard.h: no cache line shared between sampling threads) and re-checking
 * snap_cur; the rebuilder (outside signal context, under snap_lock) writes the
 * other buffer only once its reader count is 0, then flips snap_cur.
 * dlclose waits for both counts to drain before the object is unmapped.
 */
#define SNAP_MAX 1024
typedef struct snap_buf_s {
    int n;
    struct dl_phdr_info info[SNAP_MAX];
    /* taken at collection time: an unloaded object's phdrs and name are gone */
    uintptr_t lo[SNAP_MAX], hi[SNAP_MAX];
    uint32_t name_hash[SNAP_MAX];
} snap_buf_t;

static snap_buf_t *snap[2];
static int snap_cur;
/* readers of buffer b on stripe s: snap_readers[s].n[b] */
static struct {
    int n[2];
} __attribute__((aligned(PE_CACHELINE))) snap_readers[PE_STRIPES];
static pe_spin_t snap_lock; /* spin lock between rebuilders (never taken in a handler) */
static PE_TLS int snap_pin; /* buffer pinned by this thread + 1, 0 = none */

/*
 * Threads whose libunwind trace cache may hold frame data for an object that
 * was unloaded and replaced by a different one at the same address use frame
 * pointers only (libunwind 1.6.2's per-thread cache has no invalidation).
 * `reuse_gen` counts such replacements; a thread primed at an older
 * generation is stale.
 */
static int reuse_gen = 1;
#define GONE_MAX 256
static struct {
    uintptr_t lo, hi;
    uint32_t name_hash;
} gone[GONE_MAX];
static int ngone;
static PE_TLS int primed_gen;

/* Stack bounds of this thread, when known (from pe_unwind_prime_thread). */
static PE_TLS uintptr_t stack_lo, stack_hi;

PE_TLS int pe_unwind_cut;

/* ---- helpers -------------------------------------------------------------------- */

static void prime_now(void);

static uint32_t
hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Pin the current snapshot buffer for this thread (signal-safe). */
PE_SIGSAFE static void
snap_pin_enter(void)
{
    int *n = snap_readers[pe_stripe()].n;

    for (;;) {
        int b = __atomic_load_n(&snap_cur, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&n[b], 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&snap_cur, __ATOMIC_SEQ_CST) == b) {
            snap_pin = b + 1;
            return;
        }
        __atomic_sub_fetch(&n[b], 1, __ATOMIC_SEQ_CST);
    }
}

PE_SIGSAFE static void
snap_pin_exit(void)
{
    __atomic_sub_fetch(&snap_readers[pe_stripe()].n[snap_pin - 1], 1, __ATOMIC_SEQ_CST);
    snap_pin = 0;
}

static void
wait_readers(int b)
{
    for (int s = 0; s < PE_STRIPES; s++)
        while (__atomic_load_n(&snap_readers[s].n[b], __ATOMIC_SEQ_CST) != 0)
            sched_yield();
}

/* Address range of an object, from its PT_LOAD headers. */
static void
object_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t l = UINTPTR_MAX, h = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < l)
            l = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > h)
            h = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    *lo = l;
    *hi = h;
}

static int
collect_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    snap_buf_t *b = data;
    if (b->n >= SNAP_MAX)
        return 1;
    memset(&b->info[b->n], 0, sizeof(b->info[0]));
    memcpy(&b->info[b->n], info, size < sizeof(b->info[0]) ? size : sizeof(b->info[0]));
    object_range(info, &b->lo[b->n], &b->hi[b->n]);
    b->name_hash[b->n] = hash_str(info->dlpi_name);
    b->n++;
    return 0;
}

/* Index of the object of `x` (entry i of buffer xb) in b, by base address and name. */
static int
snap_find(const snap_buf_t *b, const snap_buf_t *xb, int i)
{
    for (int j = 0; j < b->n; j++)
        if (b->info[j].dlpi_addr == xb->info[i].dlpi_addr && b->name_hash[j] == xb->name_hash[i])
            return j;
    return -1;
}

/*
 * Rebuild the inactive buffer from the real dl_iterate_phdr and flip.  Notes
 * objects that vanished (their ranges) and bumps reuse_gen when a new object
 * lands on a range a different object used to occupy.  Returns how many
 * vanished.
 */
static int
snap_rebuild(void)
{
    int (*iter)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
    int cur, nxt, i, vanished = 0;
    snap_buf_t *old, *b;

    if (!snap[0])
        return 0;
    iter = pe_loadgate_iterate; /* never inside it at a fork (loadgate.h) */
    pe_spin_lock(&snap_lock);
    cur = __atomic_load_n(&snap_cur, __ATOMIC_SEQ_CST);
    nxt = !cur;
    wait_readers(nxt);
    b = snap[nxt];
    old = snap[cur];
    b->n = 0;
    pe_tls.guard++;
    iter(collect_cb, b);
    pe_tls.guard--;
    /* vanished objects: remember where they were */
    for (i = 0; i < old->n; i++) {
        if (snap_find(b, old, i) >= 0)
            continue;
        vanished++;
        int g = ngone % GONE_MAX;
        gone[g].lo = old->lo[i];
        gone[g].hi = old->hi[i];
        gone[g].name_hash = old->name_hash[i];
        ngone++;
    }
    /* new objects over a range that held a different one: caches are suspect */
    for (i = 0; i < b->n; i++) {
        uintptr_t lo = b->lo[i], hi = b->hi[i];
        uint32_t h = b->name_hash[i];
        if (snap_find(old, b, i) >= 0)
            continue;
        for (int g = 0; g < (ngone < GONE_MAX ? ngone : GONE_MAX); g++) {
            if (gone[g].lo < hi && lo < gone[g].hi && gone[g].name_hash != h) {
                __atomic_add_fetch(&reuse_gen, 1, __ATOMIC_SEQ_CST);
                break;
            }
        }
    }
    __atomic_store_n(&snap_cur, nxt, __ATOMIC_SEQ_CST);
    pe_spin_unlock(&snap_lock);
    return vanished;
}

PE_SIGSAFE int
pe_unwind_eh_frame_hdr(uintptr_t pc, pe_cfi_tables_t *t)
{
    const snap_buf_t *b = snap[snap_pin - 1];

    for (int i = 0; i < b->n; i++) {
        const struct dl_phdr_info *info = &b->info[i];
        uintptr_t at = 0;
        if (pc < b->lo[i] || pc >= b->hi[i])
            continue;
        for (int j = 0; j < info->dlpi_phnum; j++)
            if (info->dlpi_phdr[j].p_type == PT_GNU_EH_FRAME)
                at = info->dlpi_addr + info->dlpi_phdr[j].p_vaddr;
        /* the loaded segment that holds it: every read of the tables stays inside */
        for (int j = 0; at && j < info->dlpi_phnum; j++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[j];
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            if (ph->p_type == PT_LOAD && at >= lo && at < lo + ph->p_memsz) {
                t->hdr = (const uint8_t *)at;
                t->lo = lo;
                t->hi = lo + ph->p_memsz;
                return 1;
            }
        }
        return 0;
    }
    return -1;
}

/* Probe whether 8 bytes at addr are readable: the kernel copies the "set"
   argument before checking `how`, so an unmapped address gives EFAULT. */
PE_SIGSAFE static int
readable(uintptr_t addr)
{
    int saved = errno, ok;
    long rc = syscall(SYS_rt_sigprocmask, ~0, (void *)addr, NULL, 8);
    ok = !(rc < 0 && errno == EFAULT);
    errno = saved;
    return ok;
}

/*
 * Frame-pointer walk from (fp), appending return addresses to pcs[n..max).
 * Frames must be 16-byte aligned, strictly increasing, at most 1 MiB apart,
 * inside [lo, hi) when bounds are known, else each new page is probed.
 */
PE_SIGSAFE static int
fp_walk(uintptr_t fp, uintptr_t sp, uintptr_t *pcs, int n, int max)
{
    uintptr_t lo = stack_lo, hi = stack_hi, good_page = 0;
    int bounded = hi && sp >= lo && sp < hi;

    if (!bounded) {
        lo = sp;
        hi = sp + (64u << 20);
    }
    while (n < max) {
        uintptr_t *frame = (uintptr_t *)fp, next, ret;
        if (fp & 15 || fp < lo || fp + 16 > hi)
            break;
        if (!bounded && (fp & ~(uintptr_t)4095) != good_page) {
            if (!readable(fp))
                break;
            good_page = fp & ~(uintptr_t)4095;
        }
        next = frame[0];
        ret = frame[1];
        if (ret < 4096)
            break;
        pcs[n++] = ret;
        if (next <= fp || next - fp > (1u << 20))
            break;
        fp = next;
    }
    return n;
}

/* ---- through JIT frames -------------------------------------------------------------- */

PE_SIGSAFE static int
jit_ok(void)
{
    return unw_init2 && unw_stp && unw_getreg && unw_procinfo;
}

/* Is pc inside a loaded object of the pinned snapshot?  (JIT code is not.)
   Asked of every sample's last frame, which is nearly always in the same
   object (libc's clone3, the program's _start): that one is tried first. */
static PE_TLS int last_obj;

PE_SIGSAFE static int
in_object(uintptr_t pc)
{
    const snap_buf_t *b = snap[snap_pin - 1];
    int i = last_obj;

    if (i < b->n && pc >= b->lo[i] && pc < b->hi[i])
        return 1;
    for (i = 0; i < b->n; i++) {
        if (pc >= b->lo[i] && pc < b->hi[i]) {
            last_obj = i;
            return 1;
        }
    }
    return 0;
}

/*
 * One frame-pointer step from the frame whose frame pointer is *bp: the
 * caller's pc, stack pointer and frame pointer.  The record must be 16-byte
 * aligned and inside this thread's stack (or, bounds unknown, on a readable
 * page above sp).  0 on success, -1 when the frame pointer cannot be trusted.
 */
PE_SIGSAFE static int
fp_step(uintptr_t *ip, uintptr_t *sp, uintptr_t *bp)
{
    uintptr_t fp = *bp, lo = stack_lo, hi = stack_hi;
    const uintptr_t *rec = (const uintptr_t *)fp;

    if (!(hi && *sp >= lo && *sp < hi)) {
        lo = *sp;
        hi = *sp + (64u << 20);
        if (fp >= lo && fp + 16 <= hi && (!readable(fp) || !readable(fp + 8)))
            return -1;
    }
    if (fp & 15 || fp < lo || fp < *sp || fp + 16 > hi || rec[1] < 4096)
        return -1;
    *ip = rec[1];
    *sp = fp + 16;
    *bp = rec[0];
    return 0;
}

/*
 * The whole stack again, where unw_backtrace stopped in JIT code: DWARF
 * (libunwind's cursor) inside objects that have CFI, the frame pointer where
 * there is none (anonymous code, or an object's code without an FDE: V8's
 * builtins), and back to DWARF at the first return address inside an object
 * with CFI.  libunwind's own guess for such frames gives up on frames over
 * 16 KiB and leaves a wrong stack pointer for the DWARF frame after it, so the
 * choice is made here before each step.  Sets pe_unwind_cut when neither
 * method could go on (not at the outermost frame, nor at max).
 */
PE_SIGSAFE static int
jit_walk(const ucontext_t *uc, uintptr_t *pcs, int max)
{
    lu_cursor_t cur;
    ucontext_t ctx = *uc;
    uint64_t pinfo[32]; /* unw_proc_info_t, unused but for its return code */
    uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    uintptr_t bp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    int n = 0, leaf = 1;

    pcs[n++] = ip;
    while (n < max) {
        uintptr_t look = ip - !leaf; /* a return address may be one past its call's function */
        int dwarf = 0;

        if (in_object(look)) {
            ctx.uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
            ctx.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
            ctx.uc_mcontext.gregs[REG_RBP] = (greg_t)bp;
            dwarf = unw_init2(&cur, &ctx, leaf ? LU_INIT_SIGNAL_FRAME : 0) == 0 &&
                    unw_procinfo(&cur, pinfo) == 0;
        }
        while (dwarf && n < max) {
            uint64_t v[3];
            int r = unw_stp(&cur);

            if (r == 0)
                return n; /* the outermost frame (RIP undefined in its CFI) */
            if (r < 0 || unw_getreg(&cur, LU_RIP, &v[0]) < 0 ||
                unw_getreg(&cur, LU_RSP, &v[1]) < 0 || unw_getreg(&cur, LU_RBP, &v[2]) < 0 ||
                v[0] < 4096) {
                dwarf = 0; /* its CFI did not work out (a read refused): try the frame pointer */
                break;
            }
            ip = v[0];
            sp = v[1];
            bp = v[2];
            leaf = 0;
            pcs[n++] = ip - 1;
            /* the next frame has no CFI (JIT code, a stub): frame pointer */
            dwarf = in_object(ip - 1) && unw_procinfo(&cur, pinfo) == 0;
        }
        if (n >= max)
            break;
        if (!dwarf) {
            if (bp == 0)
                return n; /* the outermost frame zeroes it (_start, clone) */
            if (fp_step(&ip, &sp, &bp) < 0)
                goto cut;
            leaf = 0;
            pcs[n++] = ip - 1;
        }
    }
    return n;
cut:
    pe_unwind_cut = 1;
    return n;
}

/* jit_walk from its caller's frame (pe_unwind_here): pcs[0] is in the caller. */
__attribute__((noinline)) PE_SIGSAFE static int
jit_walk_here(uintptr_t *pcs, int max)
{
    ucontext_t uc;

    /* the caller's frame as it will be when we return; libunwind reads no other register */
    memset(&uc, 0, sizeof(uc));
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)__builtin_return_address(0);
    uc.uc_mcontext.gregs[REG_RSP] = (greg_t)((uintptr_t)__builtin_frame_address(0) + 16);
    uc.uc_mcontext.gregs[REG_RBP] = (greg_t) * (uintptr_t *)__builtin_frame_address(0);
    return jit_walk(&uc, pcs, max);
}

/* ---- module API ------------------------------------------------------------------ */

int
pe_unwind_init(void)
{
    void *h;

    if (!pe_real_ready)
        pe_real_init();
    if (!snap[0]) {
        void *m = mmap(NULL, 2 * sizeof(snap_buf_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -ENOMEM;
        snap[0] = m;
        snap[1] = (snap_buf_t *)((char *)m + sizeof(snap_buf_t));
    }
    pe_unwind_prime_thread();
    if (unw_bt)
        return 0;
    (void)pe_cfi_init(); /* without it the heap walks use libunwind */
    /* Hold a low pthread key index for libunwind's own key (pe_unwind_warm). */
    if (!key_reserved && pthread_key_create(&reserved_key, NULL) == 0)
        key_reserved = 1;
    pe_tls.in_loader++;
    h = (pe_real.dlopen ? pe_real.dlopen : dlopen)("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    pe_tls.in_loader--;
    /* One snapshot, taken once libunwind is in (nothing unwinds before). */
    snap_rebuild();
    if (!h)
        return -ENOENT;
    if (dlinfo(h, RTLD_DI_TLS_MODID, &unw_tls_modid) < 0)
        unw_tls_modid = 0;
    unw_flush = (unw_flush_cache_fn)dlsym(h, "_ULx86_64_flush_cache");
    unw_local_as = dlsym(h, "_ULx86_64_local_addr_space");
    unw_init2 = (unw_init_local2_fn)dlsym(h, "_ULx86_64_init_local2");
    unw_stp = (unw_step_fn)dlsym(h, "_ULx86_64_step");
    unw_getreg = (unw_get_reg_fn)dlsym(h, "_ULx86_64_get_reg");
    unw_procinfo = (unw_get_proc_info_fn)dlsym(h, "_ULx86_64_get_proc_info");
    __atomic_store_n(&unw_bt, (unw_backtrace_fn)dlsym(h, "unw_backtrace"), __ATOMIC_RELEASE);
    if (!unw_bt)
        return -ENOENT;
    pe_tls.unwind_primed = 0;
    prime_now();
    return 0;
}

/* The dynamic linker's accessor for a module's TLS block (allocates it on first use). */
typedef struct tls_index_s {
    unsigned long module, offset;
} tls_index_t;
extern void *__tls_get_addr(tls_index_t *ti);

/* The top of the initial stack, set by the dynamic linker. */
extern void *__libc_stack_end;

/*
 * The main thread's stack bounds without pthread_getattr_np, which reads all
 * of /proc/self/maps for it (~130k instructions, a third of our constructor).
 * glibc's answer is the page above __libc_stack_end down by the stack rlimit
 * less the environment block; this one goes down by the rlimit capped at
 * 8 MiB (unlimited: glibc would stop at the next mapping, which we do not
 * read).  Either range also holds pages the kernel has not grown yet; a walk
 * whose stack pointer is lower than this bound probes pages instead.
 */
static int
main_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
    struct rlimit rl;
    uintptr_t top = ((uintptr_t)__libc_stack_end & ~(uintptr_t)4095) + 4096;
    uintptr_t size = 8u << 20;

    if (!__libc_stack_end || getrlimit(RLIMIT_STACK, &rl) < 0)
        return -1;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < size)
        size = rl.rlim_cur & ~(uintptr_t)4095;
    if (size > top)
        return -1;
    *lo = top - size;
    *hi = top;
    return 0;
}

void
pe_unwind_prime_thread(void)
{
    pthread_attr_t attr;

    /* Stack bounds, for the frame-pointer walk: cheap on any thread but the
       main one, which has its own way. */
    if (!stack_hi && pe_gettid() == getpid()) {
        uintptr_t lo, hi;
        if (main_stack_bounds(&lo, &hi) == 0) {
            stack_lo = lo;
            stack_hi = hi;
        }
    }
    if (!stack_hi) {
        int gated = pe_fd_main_stack_begin();
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            void *addr;
            size_t size;
            if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
                stack_lo = (uintptr_t)addr;
                stack_hi = (uintptr_t)addr + size;
            }
            pthread_attr_destroy(&attr);
        }
        pe_fd_main_stack_end(gated);
    }
    if (!unw_bt || pe_tls.unwind_primed)
        return;
    /*
     * libunwind's first use on a thread allocates: its dynamic TLS block
     * (malloc inside __tls_get_addr: a deadlock if a handler does it while the
     * thread was inside malloc) and its trace cache.  Allocate the TLS block
     * here, outside any signal (one small malloc); the trace cache is built on
     * first use (mmap and libunwind's mempool lock, taken with every signal
     * blocked, so never held by the thread a handler interrupts).  Unwinding
     * a whole cold stack here instead cost ~100 us per thread, which programs
     * that churn threads paid even when nobody profiles.
     */
    if (unw_tls_modid) {
        tls_index_t ti = {unw_tls_modid, 0};
        pe_tls.guard++;
        (void)__tls_get_addr(&ti);
        pe_tls.guard--;
    }
    pe_tls.unwind_primed = 1;
}

/* The constructor's thread: only its TLS block, no unwinding (start-up cost). */
static void
prime_now(void)
{
    pe_unwind_prime_thread();
}

void
pe_unwind_warm(void)
{
    void *buf[8];

    /*
     * The process's first unw_backtrace creates libunwind's pthread key.  Do it
     * here, outside any signal, with a low key index (pthread_setspecific then
     * never allocates in a handler), but off the program's start-up path: the
     * first walk costs ~120 us of cold DWARF parsing and 256 KB of trace cache
     * (64 page faults), which a program that exits at once should not pay, so
     * the server thread calls this only once the program has lived a while.
     * The low index is the one pe_unwind_init reserved at load, given back
     * just before the walk takes the lowest free one.  A heap sample may get
     * there first; that is outside a signal too.
     */
    if (key_reserved) {
        key_reserved = 0;
        pthread_key_delete(reserved_key);
    }
    if (!unw_bt)
        return;
    pe_tls.guard++;
    unw_bt(buf, 1);
    pe_tls.guard--;
}

/*
 * Is libunwind usable on this thread right now (after the in_unwind check)?
 * Only on threads primed outside a signal (pthread_create's trampoline, the
 * constructor's thread); others (raw clone, threads older than us) use frame
 * pointers.  A trace cache created after the last object reuse holds nothing
 * stale, so a thread's generation is taken at its first use.
 */
PE_SIGSAFE static int
unw_usable(void)
{
    int gen = __atomic_load_n(&reuse_gen, __ATOMIC_RELAXED);

    if (!unw_bt || pe_tls.in_loader || !pe_tls.unwind_primed)
        return 0;
    if (!primed_gen)
        primed_gen = gen;
    return primed_gen == gen;
}

PE_SIGSAFE int
pe_unwind_signal(void *ucv, uintptr_t *pcs, int max)
{
    ucontext_t *uc = ucv;
    uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    uintptr_t rbp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    uintptr_t rsp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    int n = 0, i, lu;

    pe_unwind_cut = 0;
    if (max < 1)
        return 0;
    pcs[0] = rip;
    if (pe_tls.in_unwind)
        return 1; /* we interrupted ourselves: leaf only */
    pe_tls.in_unwind = 1;
    snap_pin_enter();
    if (__atomic_load_n(&pe_unwind_dlclose_busy, __ATOMIC_SEQ_CST) != 0) {
        n = 1; /* an object may be unmapped under us: leaf only */
        goto out;
    }
    if ((lu = unw_usable())) {
        n = unw_bt((void **)pcs, max);
        for (i = 0; i < n; i++)
            if (pcs[i] == rip)
                break;
        if (i < n && n - i >= 2) {
            memmove(pcs, pcs + i, (size_t)(n - i) * sizeof(*pcs));
            n -= i;
            /* stopped in JIT code (no CFI, libunwind's guess failed): walk again */
            if (n < max && jit_ok() && !in_object(pcs[n - 1]))
                n = jit_walk(uc, pcs, max);
            goto out;
        }
        pcs[0] = rip;
    }
    if (lu && jit_ok() && !in_object(rip))
        n = jit_walk(uc, pcs, max); /* interrupted in JIT code that libunwind could not leave */
    else
        n = fp_walk(rbp, rsp, pcs, 1, max);
out:
    snap_pin_exit();
    pe_tls.in_unwind = 0;
    return n;
}

__attribute__((noinline)) PE_SIGSAFE int
pe_unwind_here(uintptr_t *pcs, int max, int skip)
{
    uintptr_t tmp[PE_MAX_FRAMES + 8];
    int n = 0, want, first = 2 + skip;

    if (max <= 0 || pe_tls.in_unwind || pe_tls.in_loader)
        return 0;
    if (max > PE_MAX_FRAMES)
        max = PE_MAX_FRAMES;
    want = max + first;
    if (want > (int)PE_ARRAY_SIZE(tmp))
        want = PE_ARRAY_SIZE(tmp);
    pe_tls.in_unwind = 1;
    snap_pin_enter();
    if (__atomic_load_n(&pe_unwind_dlclose_busy, __ATOMIC_SEQ_CST) != 0)
        goto out;
    if (unw_usable()) {
        n = unw_bt((void **)tmp, want);
        /* stopped in JIT code (e.g. a malloc called from a JIT frame): walk again
           from here (getcontext: registers only, plus one sigprocmask call) */
        if (n > 0 && n < want && jit_ok() && !in_object(tmp[n - 1]))
            n = jit_walk_here(tmp, want);
    } else {
        uintptr_t fp = (uintptr_t)__builtin_frame_address(0), sp = (uintptr_t)&fp;
        n = fp_walk(fp, sp, tmp, 0, want);
        first--; /* the walk starts at our caller's return address, one frame later */
    }
out:
    snap_pin_exit();
    pe_tls.in_unwind = 0;
    if (n <= first)
        return 0;
    n -= first;
    if (n > max)
        n = max;
    memmove(pcs, tmp + first, (size_t)n * sizeof(*pcs));
    return n;
}

/* (heap/sample.c's entry; see unwind.h) */
PE_SIGSAFE pe_unwind_bt_fn
pe_unwind_heap_begin(void)
{
    if (pe_tls.in_unwind || pe_tls.in_loader)
        return NULL;
    pe_tls.in_unwind = 1;
    snap_pin_enter();
    if (__atomic_load_n(&pe_unwind_dlclose_busy, __ATOMIC_SEQ_CST) == 0 && unw_usable())
        return unw_bt;
    snap_pin_exit();
    pe_tls.in_unwind = 0;
    return NULL;
}

/* (heap/sample.c's walk; see unwind.h).  No pin: a walk that finds its
   rules in the table reads only the stack; reading a rule pins (below). */
PE_SIGSAFE int
pe_unwind_heap_fast(uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t *pcs, int max)
{
    int n;

    if (pe_tls.in_unwind || pe_tls.in_loader || !stack_hi || sp < stack_lo || sp >= stack_hi)
        return -1; /* (an alternate signal stack, a coroutine's: not ours to bound) */
    pe_tls.in_unwind = 1;
    n = pe_cfi_walk(pc, sp, bp, stack_hi, pcs, max);
    pe_tls.in_unwind = 0;
    return n;
}

/* The word at stack address `at` from a copy of [sp0, sp0 + len): 1, or 0 below
   the copy or misaligned (a wrong frame), or -1 past its end. */
static int
copy_word(uintptr_t sp0, const uint8_t *stack, size_t len, uintptr_t at, uintptr_t *out)
{
    if (at < sp0 || (at & 7))
        return 0;
    if (len < 8 || at - sp0 > len - 8)
        return -1;
    memcpy(out, stack + (at - sp0), sizeof(*out));
    return 1;
}

int
pe_unwind_copy(uintptr_t ip, uintptr_t sp, uintptr_t bp, const uint8_t *stack, size_t len,
               uintptr_t *pcs, int max, int *how)
{
    uintptr_t sp0 = sp, look = ip + 1; /* the leaf's rule is ip's own: look - 1 */
    int n = 0, r = 1;

    *how = PE_UNWIND_COPY_WHOLE;
    if (max < 1)
        return 0;
    pcs[n++] = ip;
    if (!stack)
        return n;
    while (n < max) {
        int reg, off, slot;
        uintptr_t ret = 0, nbp = bp, cfa;

        if (pe_cfi_rule(look, &reg, &off, &slot)) {
            if (reg < 0)
                return n; /* the outermost frame */
            cfa = (reg == 7 ? sp : bp) + (uintptr_t)off;
            if (cfa <= sp)
                goto cut;
            if (slot && (r = copy_word(sp0, stack, len, cfa - 8 * (uintptr_t)slot, &nbp)) <= 0)
                goto cut;
            if ((r = copy_word(sp0, stack, len, cfa - 8, &ret)) <= 0)
                goto cut;
            sp = cfa;
            bp = nbp;
        } else {
            /* no rule (JIT code, no tables): the frame pointer, strictly up */
            uintptr_t nb = 0;
            if (bp < sp || (r = copy_word(sp0, stack, len, bp, &nb)) <= 0 ||
                (r = copy_word(sp0, stack, len, bp + 8, &ret)) <= 0)
                goto cut;
            sp = bp + 16;
            bp = nb;
        }
        if (ret < 4096)
            return n; /* the end of the frame-pointer chain */
        pcs[n++] = ret;
        look = ret;
    }
    return n;
cut:
    /* past the copy's end with the stack going on, or a frame that neither
       rule nor frame pointer explains */
    *how = r < 0 ? PE_UNWIND_COPY_DEEPER : PE_UNWIND_COPY_CUT;
    return n;
}

PE_SIGSAFE int
pe_unwind_tables_pin(void)
{
    snap_pin_enter();
    if (__atomic_load_n(&pe_unwind_dlclose_busy, __ATOMIC_SEQ_CST) == 0)
        return 1;
    snap_pin_exit();
    return 0;
}

PE_SIGSAFE void
pe_unwind_tables_unpin(void)
{
    snap_pin_exit();
}

/* The outermost frame of this thread's last heap walk, found in an object:
   the next walk ending there is not asked again (a malloc-heavy thread
   samples every few microseconds, and the snapshot's lines are cold).  Were
   that object unloaded and JIT code mapped at the same address, stacks
   through it would only end there, as without the JIT walk. */
static PE_TLS uintptr_t heap_last_outer;

PE_SIGSAFE int
pe_unwind_heap_end(const uintptr_t *pcs, int n, int max)
{
    int ok = 1;

    /* stopped in JIT code: pe_unwind_here walks it again */
    if (n > 0 && n < max && pcs[n - 1] != heap_last_outer && jit_ok()) {
        ok = in_object(pcs[n - 1]);
        if (ok)
            heap_last_outer = pcs[n - 1];
    }
    snap_pin_exit();
    pe_tls.in_unwind = 0;
    return ok;
}

void
pe_unwind_objects_changed(void)
{
    /* rules of pcs in an unloaded object could be a new object's wrong ones
       (a dlopen alone changes no rule already kept) */
    if (snap_rebuild() > 0)
        pe_cfi_flush();
    if (unw_flush && unw_local_as)
        unw_flush(*unw_local_as, 0, 0);
}

void
pe_unwind_dlclose_begin(void)
{
    __atomic_add_fetch(&pe_unwind_dlclose_busy, 1, __ATOMIC_SEQ_CST);
    /* Any handler that saw busy == 0 has pinned a buffer: let it finish. */
    if (!pe_tls.in_unwind) {
        wait_readers(0);
        wait_readers(1);
    }
}

void
pe_unwind_dlclose_end(void)
{
    __atomic_sub_fetch(&pe_unwind_dlclose_busy, 1, __ATOMIC_SEQ_CST);
}

void
pe_unwind_atfork_child(void)
{
    /* The threads that held pins, the rebuild lock or a dlclose count are
       gone: their counts would hold the child's every dlclose (and snapshot
       rebuild) forever.  Only this thread's own pin, if any, stays counted. */
    int others = -(snap_pin != 0);

    for (int s = 0; s < PE_STRIPES; s++)
        others += snap_readers[s].n[0] + snap_readers[s].n[1];
    /* A thread pinned was inside libunwind, whose locks (the register-state
       cache's) the child inherits held: it must never call libunwind (frame
       pointers only), as after an interrupted warm walk (http/server.c). */
    if (others > 0)
        pe_unwind_forsake();
    memset(snap_readers, 0, sizeof(snap_readers));
    if (snap_pin)
        snap_readers[pe_stripe()].n[snap_pin - 1] = 1;
    pe_spin_reset(&snap_lock);
    __atomic_store_n(&pe_unwind_dlclose_busy, 0, __ATOMIC_SEQ_CST);
}

void
pe_unwind_forsake(void)
{
    __atomic_store_n(&unw_bt, NULL, __ATOMIC_RELEASE);
}

PE_SIGSAFE int
pe_unwind_iterate_snapshot(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    const snap_buf_t *b;
    struct dl_phdr_info info;
    int rc = 0;

    if (!snap_pin || !snap[0])
        return 0;
    b = snap[snap_pin - 1];
    for (int i = 0; i < b->n && rc == 0; i++) {
        info = b->info[i]; /* callbacks may scribble on it */
        rc = cb(&info, sizeof(info), data);
    }
    return rc;
}
