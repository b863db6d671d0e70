/*
 * u_cfi.c: the heap sampler's walk by cached unwind-table rules
 * (stack/cfi.c) gives the same stacks as libunwind's unw_backtrace, or
 * gives up, through every kind of frame a program has: frame-pointer
 * frames, frames without one (this file's "nofp" functions and libc's
 * qsort), alloca, realigned frames, a signal handler's frame, threads; it
 * reads each rule once and again after a flush; and made-up frames
 * never make it fault.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/guard.h"
#include "../../preload/rand.h"
#include "../../stack/cfi.h"
#include "../../stack/unwind.h"
#include "pe_test.h"

#define MAXF 64
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))

typedef struct cap_s {
    uintptr_t fast[MAXF], ref[MAXF];
    int nfast, nref;
} cap_t;

static volatile long sink;

/* Both walks from here: the fast one from this frame's caller, as
   heap/sample.c calls it; libunwind's from this frame (its pcs[0] is in it). */
__attribute__((noinline)) static void
capture(cap_t *c)
{
    uintptr_t *rec = __builtin_frame_address(0);
    pe_unwind_bt_fn bt;

    c->nfast = pe_unwind_heap_fast(rec[1], (uintptr_t)(rec + 2), rec[0], c->fast, MAXF);
    c->nref = 0;
    if ((bt = pe_unwind_heap_begin()) != NULL) {
        c->nref = bt((void **)c->ref, MAXF);
        pe_unwind_heap_end(c->ref, c->nref, MAXF);
    }
    __asm__ volatile("" ::: "memory");
}

/* The fast stack equals libunwind's from libunwind's second frame on. */
static int
same(const cap_t *c)
{
    if (c->nfast <= 0 || c->nref < 2 || c->nfast != c->nref - 1)
        return 0;
    return memcmp(c->fast, c->ref + 1, (size_t)c->nfast * sizeof(uintptr_t)) == 0;
}

static void
show(const char *what, const cap_t *c)
{
    printf("  %s: fast %d frames, libunwind %d\n", what, c->nfast, c->nref);
    for (int i = 0; i < MAXF && (i < c->nfast || i + 1 < c->nref); i++) {
        Dl_info a = {0}, b = {0};
        uintptr_t f = i < c->nfast ? c->fast[i] : 0, r = i + 1 < c->nref ? c->ref[i + 1] : 0;
        dladdr((void *)f, &a);
        dladdr((void *)r, &b);
        printf("    %2d %#14lx %-24s %#14lx %s\n", i, (unsigned long)f,
               a.dli_sname ? a.dli_sname : "?", (unsigned long)r, b.dli_sname ? b.dli_sname : "?");
    }
}

/* ---- frames of every kind ------------------------------------------------------ */

static cap_t *target;

NOFP static void leaf_nofp(int d);

__attribute__((noinline)) static void
fp_frame(int d)
{
    volatile char pad[40];
    pad[(unsigned)d % 40] = 1;
    leaf_nofp(d - 1);
    sink += pad[(unsigned)d % 40];
}

NOFP static void
big_nofp(int d)
{
    volatile char pad[3000]; /* a large rsp offset */
    pad[(unsigned)d % 3000] = 1;
    fp_frame(d - 1);
    sink += pad[(unsigned)d % 3000];
}

NOFP static void
alloca_nofp(int d)
{
    volatile char *p = alloca(16 + (size_t)(sink & 7) * 64 + (unsigned)d % 16 * 8);
    p[0] = 1;
    big_nofp(d - 1);
    sink += p[0];
}

NOFP static void
leaf_nofp(int d)
{
    if (d <= 0) {
        capture(target);
        return;
    }
    alloca_nofp(d - 1);
    sink++;
}

/* 30 frames of four kinds, then the capture */
static void
mixed(cap_t *c)
{
    target = c;
    leaf_nofp(30);
}

/* libc's qsort (no frame pointers) calling back into us */
static int
cmp_capture(const void *a, const void *b)
{
    if (!target->nfast && !target->nref)
        capture(target);
    return *(const int *)a - *(const int *)b;
}

static void
through_qsort(cap_t *c)
{
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 37) % 64;
    target = c;
    c->nfast = c->nref = 0;
    qsort(v, 64, sizeof(v[0]), cmp_capture);
}

/* a realigned frame without a frame pointer: its CFA is an expression */
NOFP static void
realigned_nofp(cap_t *c)
{
    volatile char buf[64] __attribute__((aligned(64)));
    buf[0] = 1;
    capture(c);
    sink += buf[0];
}

static cap_t sig_cap;

static void
on_usr1(int sig)
{
    capture(&sig_cap);
}

static void *
thread_main(void *arg)
{
    pe_unwind_prime_thread(); /* (the pthread_create hook does this in the library) */
    mixed(arg);
    return NULL;
}

/* ---- corrupted tables ----------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull; /* (a fixed seed: the same rounds each run) */

static uint64_t
xnext(void)
{
    return pe_rand_next(&rng);
}

/* libc's tables, copied into a block of their exact size (under ASan a read
   outside it is an error), read for real return addresses: the same rules
   as from the original; then with bytes flipped at random in the table and
   in .eh_frame, 20,000 times: never a read outside. */
static void
corrupted_tables(void)
{
    struct {
        pe_cfi_tables_t t;
        int found;
    } f;
    size_t size;
    uint8_t *copy;
    pe_cfi_tables_t c;
    int32_t count, eh_off;
    uintptr_t eh, pcs[512];
    int npcs = 0, agree = 0, ruled = 0, reg, off, slot, reg2, off2, slot2;

    /* where the walk finds them (qsort is in libc) */
    CHECK(pe_unwind_tables_pin());
    f.found = pe_unwind_eh_frame_hdr((uintptr_t)qsort, &f.t);
    pe_unwind_tables_unpin();
    CHECKF(f.found == 1, "libc's .eh_frame_hdr found");
    if (f.found != 1 || f.t.hdr[1] != 0x1b || f.t.hdr[2] != 0x03 || f.t.hdr[3] != 0x3b)
        return;
    size = f.t.hi - f.t.lo;
    copy = malloc(size);
    memcpy(copy, (const void *)f.t.lo, size);
    c = (pe_cfi_tables_t){copy + (f.t.hdr - (const uint8_t *)f.t.lo), (uintptr_t)copy,
                          (uintptr_t)copy + size};
    memcpy(&eh_off, f.t.hdr + 4, 4);
    memcpy(&count, f.t.hdr + 8, 4);
    eh = (uintptr_t)(f.t.hdr + 4) + (intptr_t)eh_off;
    /* return addresses: a few bytes into functions the table lists */
    for (int i = 0; i < (int)PE_ARRAY_SIZE(pcs); i++) {
        int32_t start;
        memcpy(&start, f.t.hdr + 12 + 8 * (xnext() % (uint64_t)count), 4);
        pcs[npcs++] = (uintptr_t)f.t.hdr + (intptr_t)start + 1 + xnext() % 24;
    }
    for (int i = 0; i < npcs; i++) {
        int a = pe_cfi_rule_from(&f.t, pcs[i], &reg, &off, &slot);
        int b = pe_cfi_rule_from(&c, pcs[i] - f.t.lo + (uintptr_t)copy, &reg2, &off2, &slot2);
        ruled += a;
        agree += a == b && (!a || (reg == reg2 && off == off2 && slot == slot2));
    }
    CHECKF(agree == npcs && ruled > npcs / 2,
           "copied tables give the same rules (%d of %d, %d ruled)", agree, npcs, ruled);
    for (int round = 0; round < 20000; round++) {
        size_t at[4];
        uint8_t was[4];
        int nflip = 1 + (int)(xnext() % 4);
        for (int k = 0; k < nflip; k++) {
            /* the table or the FDEs and CIEs (.eh_frame runs to the segment's end at most) */
            uintptr_t base = (xnext() & 1) ? (uintptr_t)f.t.hdr : eh;
            uint64_t span = base == eh ? f.t.hi - eh : 12 + 8 * (uint64_t)count;
            at[k] = base - f.t.lo + xnext() % (span < 1 << 18 ? span : 1 << 18);
            if (at[k] >= size)
                at[k] = size - 1;
            was[k] = copy[at[k]];
            copy[at[k]] ^= (uint8_t)(1 + xnext() % 255);
        }
        for (int k = 0; k < 8; k++)
            (void)pe_cfi_rule_from(&c, pcs[xnext() % (uint64_t)npcs] - f.t.lo + (uintptr_t)copy,
                                   &reg, &off, &slot);
        for (int k = nflip - 1; k >= 0; k--)
            copy[at[k]] = was[k];
    }
    CHECKF(1, "20000 rounds of corrupted tables read without a fault");
    free(copy);
}

static volatile int churn_stop;

static void *
churn(void *arg)
{
    while (!churn_stop) {
        void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h)
            dlclose(h);
    }
    return NULL;
}

int
main(void)
{
    static cap_t c;
    uint64_t read0 = 0, read1 = 0;
    pthread_t th;

    CHECK(pe_unwind_init() == 0);
    pe_unwind_warm();

    mixed(&c);
    CHECKF(same(&c), "30 frames of four kinds (fp, no fp, 3000-byte frame, alloca)");
    if (!same(&c))
        show("mixed", &c);
    CHECKF(c.nfast > 32, "the walk reached the outermost frame (%d frames)", c.nfast);

    /* a rule is read once: the same stack again reads none */
    /* one call site throughout (one return address in main): the same stack
       again reads no rule; nor after a dlopen's rebuild (nothing vanished);
       after a flush (an object was unloaded) each is read again */
    for (volatile int i = 0; i < 4; i++) {
        if (i == 1)
            read0 = pe_cfi_rules_read();
        if (i == 2) {
            read1 = pe_cfi_rules_read();
            pe_unwind_objects_changed();
        }
        if (i == 3) {
            CHECKF(pe_cfi_rules_read() == read1, "a rebuild with nothing unloaded keeps the rules");
            pe_cfi_flush();
        }
        mixed(&c);
        if (i == 1)
            CHECKF(same(&c) && pe_cfi_rules_read() == read0,
                   "again from the table: %llu rules read",
                   (unsigned long long)(pe_cfi_rules_read() - read0));
    }
    /* (6: the recursion repeats its return addresses) */
    CHECKF(same(&c) && pe_cfi_rules_read() - read1 >= 6,
           "after a flush: %llu rules read again, same stack",
           (unsigned long long)(pe_cfi_rules_read() - read1));

    through_qsort(&c);
    CHECKF(same(&c), "through libc's qsort");
    if (!same(&c))
        show("qsort", &c);

    /* a realigned frame: libunwind's stack or none */
    realigned_nofp(&c);
    CHECKF(c.nfast < 0 || same(&c), "realigned frame: %s", c.nfast < 0 ? "gave up" : "same stack");

    /* a signal handler's frame: the trampoline's CIE says "S": give up */
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        raise(SIGUSR1);
        CHECKF(sig_cap.nfast == -1 && sig_cap.nref > 3, "signal frame: gave up (%d), libunwind %d",
               sig_cap.nfast, sig_cap.nref);
    }

    /* a thread: ends in clone3's frame, whose return address is undefined */
    {
        static cap_t tc;
        CHECK(pthread_create(&th, NULL, thread_main, &tc) == 0);
        pthread_join(th, NULL);
        CHECKF(same(&tc), "in a thread");
        if (!same(&tc))
            show("thread", &tc);
    }

    /* while another thread dlopens and dlcloses (each dlclose flushes) */
    {
        int ok = 0, fast = 0;
        CHECK(pthread_create(&th, NULL, churn, NULL) == 0);
        for (int i = 0; i < 3000; i++) {
            mixed(&c);
            ok += c.nfast < 0 || same(&c);
            fast += c.nfast > 0;
        }
        churn_stop = 1;
        pthread_join(th, NULL);
        CHECKF(ok == 3000 && fast > 0, "under dlopen/dlclose churn: %d of 3000 agree (%d fast)", ok,
               fast);
    }

    corrupted_tables();

    /* made-up frames: any pc, sp anywhere in the stack above us, any rbp */
    {
        uintptr_t here = (uintptr_t)__builtin_frame_address(0), out[MAXF];
        int gave_up = 0;
        mixed(&c);
        for (int i = 0; i < 100000; i++) {
            uintptr_t pc, sp, bp;
            uint64_t x = xnext();
            pc = (x & 1) ? c.fast[(x >> 1) % (uint64_t)c.nfast] : (uintptr_t)(x >> 8);
            sp = here + ((x >> 20) % 16384);
            bp = (x & 2) ? here + ((x >> 34) % 16384) : (uintptr_t)(x * 3);
            gave_up += pe_unwind_heap_fast(pc, sp & ~(uintptr_t)7, bp, out, MAXF) < 0;
        }
        CHECKF(1, "100000 made-up frames walked without a fault (%d gave up)", gave_up);
    }
    return pe_test_done();
}
