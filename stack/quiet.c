/*
 * quiet.c: capture a blocked thread's stack without signalling it (quiet.h).
 * Owns the dlopen'd generic libunwind (libunwind-x86_64.so.8, RTLD_LOCAL) and
 * its one address space whose accessors read our own memory through
 * process_vm_readv and know two registers only (RIP, RSP); the per-walk page
 * cache; and the bounded per-thread cache of last captures.  Lookups of
 * unwind tables use the generic library's own local find_proc_info (the
 * program's dl_iterate_phdr, from our thread, outside any signal).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../preload/aslimit.h"
#include "../preload/clock.h"
#include "../preload/fd.h"
#include "../preload/guard.h"
#include "../preload/log.h"
#include "../preload/proc.h"
#include "../preload/threads.h"
#include "quiet.h"

#define PAGE 4096u
#define PAGES 64 /* page cache slots (per walk) */
/* cached captures, direct-mapped by tid: 1024 (1.3 MiB reserved), or under an
   address-space limit as many as fit in a 1024th of it (at least 64) */
#define CACHE_MAX 1024
#define CACHE_N cache_n
static unsigned cache_n = CACHE_MAX; /* set before cache is mapped */
#define LINE_MAX_ 192                /* a /proc syscall line */
#define RS_CACHE_SIZE 1024           /* libunwind's register-state cache (entries) */

/* ---- data ----------------------------------------------------------------------- */

typedef struct fns_s {
    __typeof__(unw_create_addr_space) *create_addr_space;
    __typeof__(unw_init_remote) *init_remote;
    __typeof__(unw_step) *step;
    __typeof__(unw_get_reg) *get_reg;
    __typeof__(unw_get_proc_info) *get_proc_info;
    __typeof__(unw_get_accessors) *get_accessors;
    __typeof__(unw_set_caching_policy) *set_caching_policy;
    __typeof__(unw_set_cache_size) *set_cache_size;
    __typeof__(unw_flush_cache) *flush_cache;
    unw_addr_space_t *local_as;
} fns_t;

/* One walk's context (the accessors' `arg`). */
typedef struct walk_s {
    uintptr_t pc, sp;
    pid_t pid;
    int missing_reg; /* a register we do not have was asked for */
    int missing_rbp; /* ... and it was %rbp only */
    int have_rbp;    /* rbp holds the live %rbp, inferred (frame_pointer_rbp) */
    uintptr_t rbp;
    int bad_mem; /* a read failed */
} walk_t;

/* One cached capture (nframes > 0), or a known failure (nframes < 0). */
typedef struct qc_s {
    pid_t tid;
    int nframes;
    uint64_t k1, k2; /* schedstat (run ns, times on a CPU), or status (ctxt switches) */
    char state;
    const char *why;
    char line[LINE_MAX_];
    uintptr_t pcs[PE_MAX_FRAMES];
} qc_t;

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static int loaded;                                        /* 1 ok, -1 unavailable */
static fns_t F;
static unw_addr_space_t as;
static int objs_adds = -1, objs_subs = -1; /* dl_iterate_phdr counters at the last flush */

/* Page cache of one walk: tag = page address, valid when gen matches. */
static struct {
    uintptr_t page;
    uint32_t gen;
    int ok;
} ptag[PAGES];
static char *pdata; /* PAGES * PAGE bytes (mmap) */
static uint32_t pgen;

static qc_t *cache;             /* CACHE_N entries (mmap, NORESERVE) */
static int have_schedstat = -1; /* /proc/self/task/TID/schedstat exists (CONFIG_SCHED_INFO) */

/* ---- helpers -------------------------------------------------------------------- */

/* State letter and context-switch counts from status.  0 or -errno. */
static int
read_status(pid_t tid, char *state, uint64_t *nv, uint64_t *niv)
{
    char buf[4096], *p;
    int rc = pe_proc_task_read(tid, "status", buf, sizeof(buf));

    if (rc < 0)
        return rc;
    *state = '?';
    *nv = *niv = UINT64_MAX;
    if ((p = strstr(buf, "\nState:\t")))
        *state = p[8];
    if ((p = strstr(buf, "\nvoluntary_ctxt_switches:\t")))
        *nv = strtoull(p + 26, NULL, 10);
    if ((p = strstr(buf, "\nnonvoluntary_ctxt_switches:\t")))
        *niv = strtoull(p + 29, NULL, 10);
    return 0;
}

/*
 * The syscall line: "NR a1 .. a6 SP PC", "-1 SP PC" (blocked outside a system
 * call) or "running".  Returns 1 with *sp, *pc; 0 when running; -errno.
 */
static int
read_syscall(pid_t tid, char *line, size_t len, uintptr_t *sp, uintptr_t *pc)
{
    char *tok[12], *save = NULL, tmp[LINE_MAX_];
    int rc = pe_proc_task_read(tid, "syscall", line, len), n = 0;

    if (rc < 0)
        return rc;
    if (!strncmp(line, "running", 7))
        return 0;
    snprintf(tmp, sizeof(tmp), "%s", line);
    for (char *t = strtok_r(tmp, " \n", &save); t && n < 12; t = strtok_r(NULL, " \n", &save))
        tok[n++] = t;
    if (n != 3 && n != 9)
        return -EINVAL;
    *sp = (uintptr_t)strtoull(tok[n - 2], NULL, 16);
    *pc = (uintptr_t)strtoull(tok[n - 1], NULL, 16);
    return *pc ? 1 : -EINVAL;
}

/*
 * What changes whenever the thread gets a CPU: schedstat's run time and its
 * count of arrivals on a CPU (bumped the moment a woken thread runs), or,
 * without schedstat, status's context-switch counts (then the syscall line
 * must match too: a woken thread that has not switched out yet shows
 * "running" there).  0 or -errno.
 */
static int
read_key(pid_t tid, uint64_t *k1, uint64_t *k2)
{
    char st;
    int rc;

    if (have_schedstat != 0) {
        if ((rc = pe_proc_task_schedstat(tid, k1, k2)) == 0) {
            have_schedstat = 1;
            return 0;
        }
        if (rc == -ESRCH)
            return -ESRCH;
        have_schedstat = 0;
    }
    return read_status(tid, &st, k1, k2);
}

/* Without schedstat: the syscall line must be the cached one too (qlock held). */
static int
reuse_by_status(pid_t tid, const qc_t *e)
{
    char line[LINE_MAX_];
    uintptr_t sp, pc;
    return read_syscall(tid, line, sizeof(line), &sp, &pc) > 0 && !strcmp(line, e->line);
}

/* ---- the address space ------------------------------------------------------------ */

/* One page of our memory, cached for this walk; NULL when unreadable. */
static const char *
page_at(walk_t *w, uintptr_t page)
{
    unsigned i = (unsigned)((page / PAGE) % PAGES);
    char *dst = pdata + (size_t)i * PAGE;
    struct iovec local = {dst, PAGE}, remote = {(void *)page, PAGE};

    if (ptag[i].gen == pgen && ptag[i].page == page)
        return ptag[i].ok ? dst : NULL;
    ptag[i].gen = pgen;
    ptag[i].page = page;
    ptag[i].ok = process_vm_readv(w->pid, &local, 1, &remote, 1, 0) == (ssize_t)PAGE;
    return ptag[i].ok ? dst : NULL;
}

static int
acc_mem(unw_addr_space_t a, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    walk_t *w = arg;
    unsigned char out[sizeof(unw_word_t)];
    size_t done = 0;

    if (write)
        return -UNW_EINVAL;
    while (done < sizeof(out)) {
        uintptr_t x = (uintptr_t)addr + done, page = x & ~(uintptr_t)(PAGE - 1);
        size_t off = x - page, k = PAGE - off;
        const char *p = page_at(w, page);
        if (!p) {
            w->bad_mem = 1;
            return -UNW_EINVAL;
        }
        if (k > sizeof(out) - done)
            k = sizeof(out) - done;
        memcpy(out + done, p + off, k);
        done += k;
    }
    memcpy(val, out, sizeof(out));
    return 0;
}

static int
acc_reg(unw_addr_space_t a, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
    walk_t *w = arg;

    if (write)
        return -UNW_EINVAL;
    if (reg == UNW_X86_64_RIP) {
        *val = w->pc;
        return 0;
    }
    if (reg == UNW_X86_64_RSP) {
        *val = w->sp;
        return 0;
    }
    if (reg == UNW_X86_64_RBP && w->have_rbp) {
        *val = w->rbp;
        return 0;
    }
    if (!w->missing_reg)
        w->missing_rbp = reg == UNW_X86_64_RBP;
    else if (reg != UNW_X86_64_RBP)
        w->missing_rbp = 0;
    w->missing_reg = 1; /* only the live value would do: we do not have it */
    return -UNW_EBADREG;
}

static int
acc_fpreg(unw_addr_space_t a, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
    ((walk_t *)arg)->missing_reg = 1;
    ((walk_t *)arg)->missing_rbp = 0;
    return -UNW_EBADREG;
}

static int
acc_resume(unw_addr_space_t a, unw_cursor_t *c, void *arg)
{
    return -UNW_EINVAL;
}

static int
acc_dyn_list(unw_addr_space_t a, unw_word_t *dilap, void *arg)
{
    return -UNW_ENOINFO; /* no dynamically registered unwind info is looked at */
}

static int
acc_proc_name(unw_addr_space_t a, unw_word_t addr, char *buf, size_t len, unw_word_t *off,
              void *arg)
{
    return -UNW_ENOINFO;
}

/* Load the generic libunwind and make the address space (qlock held).  0 or -errno. */
static int
load(void)
{
    unw_accessors_t acc, *local;
    void *h;

    if (loaded)
        return loaded > 0 ? 0 : -ENOENT;
    loaded = -1;
    pe_tls.guard++;
    pe_fd_born_begin(); /* the loader's descriptors are ours while it reads (preload/fd.h) */
    h = dlopen("libunwind-x86_64.so.8", RTLD_NOW | RTLD_LOCAL);
    pe_fd_born_end();
    pe_tls.guard--;
    if (!h) {
        pe_log_info("no libunwind-x86_64.so.8: every thread's stack is taken with a signal");
        return -ENOENT;
    }
    F.create_addr_space = dlsym(h, "_Ux86_64_create_addr_space");
    F.init_remote = dlsym(h, "_Ux86_64_init_remote");
    F.step = dlsym(h, "_Ux86_64_step");
    F.get_reg = dlsym(h, "_Ux86_64_get_reg");
    F.get_proc_info = dlsym(h, "_Ux86_64_get_proc_info");
    F.get_accessors = dlsym(h, "_Ux86_64_get_accessors");
    F.set_caching_policy = dlsym(h, "_Ux86_64_set_caching_policy");
    F.set_cache_size = dlsym(h, "_Ux86_64_set_cache_size");
    F.flush_cache = dlsym(h, "_Ux86_64_flush_cache");
    F.local_as = dlsym(h, "_Ux86_64_local_addr_space");
    if (!F.create_addr_space || !F.init_remote || !F.step || !F.get_reg || !F.get_accessors ||
        !F.set_caching_policy || !F.flush_cache || !F.local_as || !*F.local_as)
        return -ENOENT;
    local = F.get_accessors(*F.local_as);
    memset(&acc, 0, sizeof(acc));
    /* tables are found as a local unwinder finds them (dl_iterate_phdr and
       .eh_frame_hdr), then read through our access_mem since `as` is not the
       local address space */
    acc.find_proc_info = local->find_proc_info;
    acc.put_unwind_info = local->put_unwind_info;
    acc.get_dyn_info_list_addr = acc_dyn_list;
    acc.access_mem = acc_mem;
    acc.access_reg = acc_reg;
    acc.access_fpreg = acc_fpreg;
    acc.resume = acc_resume;
    acc.get_proc_name = acc_proc_name;
    if (!acc.find_proc_info || !(as = F.create_addr_space(&acc, 0)))
        return -ENOENT;
    F.set_caching_policy(as, UNW_CACHE_GLOBAL);
    if (F.set_cache_size)
        F.set_cache_size(as, RS_CACHE_SIZE, 0);
    pdata = mmap(NULL, (size_t)PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
    cache_n = pe_aslimit_fit(CACHE_MAX, sizeof(qc_t), 1024, 64);
    cache = mmap(NULL, CACHE_N * sizeof(qc_t), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pdata == MAP_FAILED || cache == MAP_FAILED) {
        pdata = NULL;
        cache = NULL;
        return -ENOMEM;
    }
    loaded = 1;
    return 0;
}

static int
counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    int *v = data;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
        return 1;
    v[0] = (int)info->dlpi_adds;
    v[1] = (int)info->dlpi_subs;
    return 1;
}

/* Objects were loaded or unloaded since the last walk: drop libunwind's caches. */
static void
flush_if_objects_changed(void)
{
    int v[2] = {-2, -2};

    dl_iterate_phdr(counters_cb, v);
    if (v[0] != objs_adds || v[1] != objs_subs) {
        F.flush_cache(as, 0, 0);
        objs_adds = v[0];
        objs_subs = v[1];
    }
}

/* Read n bytes of our memory at addr through the page cache.  0 or -1. */
static int
read_bytes(walk_t *w, uintptr_t addr, unsigned char *out, size_t n)
{
    for (size_t done = 0; done < n;) {
        uintptr_t x = addr + done, page = x & ~(uintptr_t)(PAGE - 1);
        size_t off = x - page, k = PAGE - off;
        const char *p = page_at(w, page);
        if (!p)
            return -1;
        if (k > n - done)
            k = n - done;
        memcpy(out + done, p + off, k);
        done += k;
    }
    return 0;
}

/* The bytes before `ret` end a call instruction (direct, or one of the usual indirect forms). */
static int
after_call(walk_t *w, uintptr_t ret)
{
    unsigned char b[7];

    if (ret < 16 || read_bytes(w, ret - 7, b, 7) < 0)
        return 0;
    /* b[6] is the byte at ret-1 */
    return b[2] == 0xe8 ||                            /* call rel32 */
           (b[5] == 0xff && (b[6] & 0xf8) == 0xd0) || /* call *%reg */
           (b[5] == 0xff && (b[6] & 0xf8) == 0x10 && b[6] != 0x14 && b[6] != 0x15) || /* *(%reg) */
           (b[4] == 0xff && (b[5] & 0xf8) == 0x50) ||                   /* call *d8(%reg) */
           (b[1] == 0xff && ((b[2] & 0xf8) == 0x90 || b[2] == 0x15)) || /* *d32(%reg), *d32(%rip) */
           (b[3] == 0xff && b[4] == 0x14);                              /* call *(%reg,%reg,s) */
}

/*
 * Length of one prologue instruction that leaves %rsp alone, or 0 when it is
 * not one we know (or it writes %rsp).  Compilers schedule register moves,
 * loads (GOT, %fs:0x28), lea, movsxd, ALU and shifts, stores and SSE moves in
 * among the pushes and before `sub $N,%rsp`; those are the ones decoded:
 * prefixes 66/f2/f3/64, a REX byte, a ModRM-form opcode below or
 * `mov $imm,%reg`.
 */
static size_t
prologue_insn_len(const unsigned char *b, size_t avail)
{
    /* ModRM opcodes by what they write: r/m, the register, nothing; 0f xx SSE moves */
    static const unsigned char to_rm[] = {0x01, 0x09, 0x21, 0x29, 0x31, 0x88,
                                          0x89, 0xc7, 0x83, 0x81, 0xc1},
                               to_reg[] = {0x03, 0x0b, 0x23, 0x2b, 0x33, 0x8a, 0x8b, 0x8d, 0x63},
                               none[] = {0x84, 0x85, 0x38, 0x39, 0x3a, 0x3b},
                               sse[] = {0x10, 0x11, 0x28, 0x29, 0x57, 0x6e,
                                        0x6f, 0x7e, 0x7f, 0xd6, 0xef};
    size_t i = 0, imm = 0;
    unsigned op, modrm, mod, reg, rm, rex = 0, writes_rm, writes_reg;

    while (i < 4 && (b[i] == 0x66 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x64))
        i++;
    if ((b[i] & 0xf0) == 0x40)
        rex = b[i++];
    op = b[i++];
    if (op >= 0xb8 && op <= 0xbf) { /* mov $imm32/64,%reg */
        if ((op & 7) == 4 && !(rex & 1))
            return 0;
        i += (rex & 8) ? 8 : 4;
        return i <= avail ? i : 0;
    }
    if (op == 0x0f) {
        op = b[i++];
        if (!memchr(sse, (int)op, sizeof(sse)))
            return 0;
        writes_rm = op == 0x7e; /* movd/movq %xmm,r/m: the rest write an xmm or memory */
        writes_reg = 0;
    } else {
        writes_rm = memchr(to_rm, (int)op, sizeof(to_rm)) != NULL;
        writes_reg = memchr(to_reg, (int)op, sizeof(to_reg)) != NULL;
        if (!writes_rm && !writes_reg && !memchr(none, (int)op, sizeof(none)))
            return 0;
        imm = op == 0xc7 || op == 0x81 ? 4 : op == 0x83 || op == 0xc1 ? 1 : 0;
    }
    modrm = b[i++];
    mod = modrm >> 6;
    reg = ((modrm >> 3) & 7) | ((rex & 4) << 1);
    rm = (modrm & 7) | ((rex & 1) << 3);
    if ((writes_reg && reg == 4) || (writes_rm && mod == 3 && rm == 4))
        return 0;                       /* it moves %rsp: the frame is not what the pushes say */
    if (mod != 3 && (modrm & 7) == 4) { /* SIB */
        unsigned sib = b[i++];
        if (mod == 0 && (sib & 7) == 5)
            i += 4;
    } else if (mod == 0 && (modrm & 7) == 5) {
        i += 4; /* %rip + disp32 */
    }
    i += mod == 1 ? 1 : mod == 2 ? 4 : 0;
    i += imm;
    return i <= avail ? i : 0;
}

/*
 * The live %rbp when frame k (SP sp_k, in the function starting at `start`)
 * is the first frame whose CFA is %rbp-based (a frame-pointer build calling
 * into code that never saved %rbp): from its prologue, `push %rbp; mov
 * %rsp,%rbp; push <callee-saved>*; [sub $N,%rsp]`, with the instructions a
 * compiler schedules in between skipped (prologue_insn_len), within its first
 * 32 bytes (after endbr64 or an early-exit test), %rbp = sp_k + 8 * pushes +
 * N, provided the return address above it follows a call.  1 with *rbp,
 * else 0.
 */
static int
frame_pointer_rbp(walk_t *w, uintptr_t start, uintptr_t sp_k, uintptr_t *rbp)
{
    unsigned char b[96];
    uintptr_t size = 0, x, ret;
    size_t i, len;

    if (read_bytes(w, start, b, sizeof(b)) < 0)
        return 0;
    /* at the start, or a little later when the compiler wrapped the prologue
       around an early exit */
    for (i = 0; i < 32; i++)
        if (b[i] == 0x55 && b[i + 1] == 0x48 &&
            ((b[i + 2] == 0x89 && b[i + 3] == 0xe5) || (b[i + 2] == 0x8b && b[i + 3] == 0xec)))
            break;
    if (i == 32)
        return 0;
    for (i += 4; i + 16 < sizeof(b);) {
        if (b[i] >= 0x50 && b[i] <= 0x57 && b[i] != 0x54 && b[i] != 0x55) {
            size += 8, i += 1;
        } else if (b[i] == 0x41 && b[i + 1] >= 0x50 && b[i + 1] <= 0x57) {
            size += 8, i += 2;
        } else if (b[i] == 0x48 && b[i + 1] == 0x83 && b[i + 2] == 0xec) {
            size += b[i + 3];
            break;
        } else if (b[i] == 0x48 && b[i + 1] == 0x81 && b[i + 2] == 0xec) {
            size += (uint32_t)b[i + 3] | (uint32_t)b[i + 4] << 8 | (uint32_t)b[i + 5] << 16 |
                    (uint32_t)b[i + 6] << 24;
            break;
        } else if ((len = prologue_insn_len(b + i, sizeof(b) - i))) {
            i += len;
        } else {
            break; /* a branch, a call...: no sub, the frame is the pushes alone */
        }
    }
    x = sp_k + size;
    if (x & 15 || size > (1u << 20))
        return 0;
    /* the saved %rbp is not checked: a caller built without frame pointers
       leaves anything there */
    if (read_bytes(w, x + 8, (unsigned char *)&ret, 8) < 0 || !after_call(w, ret))
        return 0;
    *rbp = x;
    return 1;
}

/* One walk from w->pc/w->sp (and w->rbp when have_rbp).  Frames; *r the last step's result. */
static int
walk_once(walk_t *w, uintptr_t *pcs, int max, int *r, uintptr_t *sp_k, uintptr_t *start_k)
{
    unw_cursor_t c;
    unw_proc_info_t pi;
    unw_word_t ip, sp;
    int n = 0;

    w->missing_reg = w->missing_rbp = 0;
    *r = F.init_remote(&c, as, w);
    if (*r < 0)
        return 0;
    pcs[n++] = w->pc;
    while (n < max && (*r = F.step(&c)) > 0) {
        if (F.get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
            break;
        pcs[n++] = (uintptr_t)ip;
    }
    *sp_k = *start_k = 0;
    if (*r < 0 && w->missing_rbp && F.get_proc_info && F.get_reg(&c, UNW_X86_64_RSP, &sp) == 0 &&
        F.get_proc_info(&c, &pi) == 0) {
        *sp_k = (uintptr_t)sp;
        *start_k = (uintptr_t)pi.start_ip;
    }
    return n;
}

/* Walk from w->pc/w->sp.  Frames (>= 1) or -ENOTSUP. */
static int
walk(walk_t *w, uintptr_t *pcs, int max, const char **why)
{
    uintptr_t sp_k, start_k, rbp;
    int n, r;

    if (++pgen == 0) { /* a new walk: the stack pages of the last one are stale */
        memset(ptag, 0, sizeof(ptag));
        pgen = 1;
    }
    pe_tls.guard++;
    w->have_rbp = 0;
    n = walk_once(w, pcs, max, &r, &sp_k, &start_k);
    if (r < 0 && w->missing_rbp && start_k && frame_pointer_rbp(w, start_k, sp_k, &rbp)) {
        /* a frame-pointer build: walk again knowing %rbp; only a walk that
           reaches the outermost frame is trusted */
        w->have_rbp = 1;
        w->rbp = rbp;
        n = walk_once(w, pcs, max, &r, &sp_k, &start_k);
        if (r > 0 && n < max)
            r = -UNW_EINVAL;
    }
    pe_tls.guard--;
    if (r < 0) {
        *why = w->missing_reg ? PE_QUIET_WHY_REG : PE_QUIET_WHY_WALK;
        return -ENOTSUP;
    }
    return n;
}

/* ---- module API ------------------------------------------------------------------ */

int
pe_quiet_capture(pid_t tid, uintptr_t *pcs, int max, const char **state, const char **why,
                 int *cached)
{
    char line[LINE_MAX_], line2[LINE_MAX_], st, st2;
    uint64_t k1, k2, k1b, k2b, nv, niv;
    walk_t w;
    qc_t *e;
    int rc, n;

    *state = "unknown";
    *why = NULL;
    *cached = 0;
    if (max > PE_MAX_FRAMES)
        max = PE_MAX_FRAMES;
    /* Has it been on a CPU since its last capture?  One read when not. */
    if ((rc = read_key(tid, &k1, &k2)) < 0)
        return rc == -ESRCH ? -ESRCH : -ENOTSUP;
    pthread_mutex_lock(&qlock);
    if (cache && (e = &cache[(unsigned)tid % CACHE_N])->tid == tid && e->k1 == k1 && e->k2 == k2 &&
        (have_schedstat || reuse_by_status(tid, e))) {
        /* it has not run since: the same stack, or the same failure */
        *cached = 1;
        *state = pe_proc_state_name(e->state);
        if (e->nframes < 0) {
            *why = e->why;
            pthread_mutex_unlock(&qlock);
            return e->nframes;
        }
        n = e->nframes < max ? e->nframes : max;
        memcpy(pcs, e->pcs, (size_t)n * sizeof(*pcs));
        pthread_mutex_unlock(&qlock);
        return n;
    }
    pthread_mutex_unlock(&qlock);
    if ((rc = read_status(tid, &st, &nv, &niv)) < 0)
        return rc == -ESRCH ? -ESRCH : -ENOTSUP;
    *state = pe_proc_state_name(st);
    memset(&w, 0, sizeof(w));
    if ((rc = read_syscall(tid, line, sizeof(line), &w.sp, &w.pc)) <= 0) {
        if (rc == -ESRCH)
            return -ESRCH;
        *why = rc == 0 ? PE_QUIET_WHY_RUNNING : PE_QUIET_WHY_WALK;
        return rc == 0 ? -EAGAIN : -ENOTSUP;
    }
    pthread_mutex_lock(&qlock);
    if ((rc = load()) < 0) {
        pthread_mutex_unlock(&qlock);
        *why = PE_QUIET_WHY_OFF;
        return -ENOTSUP;
    }
    e = &cache[(unsigned)tid % CACHE_N];
    flush_if_objects_changed();
    w.pid = getpid();
    n = walk(&w, pcs, max, why);
    /* still the same blocked thread?  Else the walk may have read a moving stack. */
    if (read_syscall(tid, line2, sizeof(line2), &w.sp, &w.pc) <= 0 || strcmp(line, line2) ||
        read_key(tid, &k1b, &k2b) < 0 || k1b != k1 || k2b != k2 ||
        (!have_schedstat && (read_status(tid, &st2, &nv, &niv) < 0 || nv != k1 || niv != k2))) {
        /* remembered as a failure with the call it woke from (pe_quiet_last_call): its
           key before the walk, which a thread that ran never shows again */
        e->tid = tid;
        e->k1 = k1;
        e->k2 = k2;
        e->state = st;
        e->why = PE_QUIET_WHY_WOKE;
        snprintf(e->line, sizeof(e->line), "%s", line);
        e->nframes = -EAGAIN;
        pthread_mutex_unlock(&qlock);
        *why = PE_QUIET_WHY_WOKE;
        return -EAGAIN;
    }
    e->tid = tid;
    e->k1 = k1;
    e->k2 = k2;
    e->state = st;
    e->why = *why;
    snprintf(e->line, sizeof(e->line), "%s", line);
    e->nframes = n;
    if (n > 0)
        memcpy(e->pcs, pcs, (size_t)n * sizeof(*pcs));
    pthread_mutex_unlock(&qlock);
    return n;
}

int
pe_quiet_last_call(pid_t tid, char *line, size_t len, int64_t *ran_ns)
{
    uint64_t k1 = 0, k1now, k2now;
    int found = 0;
    qc_t *e;

    *ran_ns = -1;
    pthread_mutex_lock(&qlock);
    if (cache && (e = &cache[(unsigned)tid % CACHE_N])->tid == tid) {
        snprintf(line, len, "%s", e->line);
        k1 = e->k1;
        found = 1;
    }
    pthread_mutex_unlock(&qlock);
    if (found && read_key(tid, &k1now, &k2now) == 0 && have_schedstat == 1 && k1now >= k1)
        *ran_ns = (int64_t)(k1now - k1);
    return found;
}

void
pe_quiet_atfork_child(void)
{
    pthread_mutex_init(&qlock, NULL);
    if (cache) /* the parent's tids: zero pages again, without touching them */
        madvise(cache, CACHE_N * sizeof(qc_t), MADV_DONTNEED);
}
