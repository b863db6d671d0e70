/*
 * u_sampler_unwind.c: stack capture.  pe_unwind_here and pe_unwind_signal see
 * every frame of a 30-deep recursion (libunwind path and frame-pointer
 * fallback), start at the interrupted PC, cut the handler's frames, and keep
 * working while another thread dlopen/dlclose-s in a loop.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../preload/guard.h"
#include "../../stack/unwind.h"
#include "pe_test.h"

#define DEPTH 30
static uintptr_t pcs[PE_MAX_FRAMES + 8];
static volatile int npcs;
static volatile uintptr_t sig_rip;
static volatile int spin_go;
static volatile long sink;

__attribute__((noinline)) static int recurse(int d, int mode);

static void
handler(int sig, siginfo_t *si, void *uc)
{
    sig_rip = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    npcs = pe_unwind_signal(uc, pcs, (int)PE_ARRAY_SIZE(pcs));
}

__attribute__((noinline)) static int
recurse(int d, int mode)
{
    int r;
    if (d > 0) {
        r = recurse(d - 1, mode);
        sink += r;
        return r + 1;
    }
    if (mode == 0)
        return npcs = pe_unwind_here(pcs, PE_MAX_FRAMES, 0);
    if (mode == 1)
        return syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGPROF);
    npcs = 0; /* mode 2: spin until a CPU-timer signal lands here */
    while (!npcs)
        sink++;
    return 0;
}

/* pe_unwind_here's contract: pcs[0] is in the caller of its caller */
__attribute__((noinline)) static int
here_helper(uintptr_t *out, int skip)
{
    int n = pe_unwind_here(out, 8, skip);
    sink++;
    return n;
}

__attribute__((noinline)) static int
here_outer(uintptr_t *out, int skip)
{
    int n = here_helper(out, skip);
    sink++;
    return n;
}

__attribute__((noinline)) static int
here_outer2(uintptr_t *out, int skip)
{
    int n = here_outer(out, skip);
    sink++;
    return n;
}

static int
count_in(uintptr_t lo, uintptr_t hi)
{
    int c = 0;
    for (int i = 0; i < npcs; i++)
        c += pcs[i] >= lo && pcs[i] < hi;
    return c;
}

static void
spin_with_timer(void)
{
    timer_t t;
    struct sigevent sev = {0};
    struct itimerspec its = {{0, 1000000}, {0, 1000000}};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t);
    timer_settime(t, 0, &its, NULL);
    recurse(DEPTH, 2);
    timer_delete(t);
}

static volatile int loader_stop;
static void *
loader(void *arg)
{
    while (!loader_stop) {
        void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
        pe_unwind_objects_changed();
        if (h) {
            pe_unwind_dlclose_begin();
            dlclose(h);
            pe_unwind_objects_changed();
            pe_unwind_dlclose_end();
        }
    }
    return NULL;
}

int
main(void)
{
    uintptr_t lo = (uintptr_t)recurse, hi = lo + 256;
    struct sigaction sa;
    int c;

    CHECK(pe_unwind_init() == 0);
    CHECK(pe_tls.unwind_primed == 1);

    /* here: pcs[0] is inside recurse (pe_unwind_here's caller's caller) */
    recurse(DEPTH, 0);
    c = count_in(lo, hi);
    CHECKF(c >= DEPTH, "pe_unwind_here: %d of %d frames in recurse (n=%d)", c, DEPTH, npcs);
    CHECK(npcs > DEPTH && npcs < PE_MAX_FRAMES);

    {
        uintptr_t out[8], o = (uintptr_t)here_outer, o2 = (uintptr_t)here_outer2;
        CHECK(here_outer2(out, 0) >= 2);
        CHECKF(out[0] > o && out[0] < o + 128, "pcs[0]=%#lx here_outer=%#lx", (unsigned long)out[0],
               (unsigned long)o);
        CHECK(out[1] > o2 && out[1] < o2 + 128);
        CHECK(here_outer2(out, 1) >= 1);
        CHECK(out[0] > o2 && out[0] < o2 + 128);
        pe_tls.unwind_primed = 0; /* same through the frame-pointer walk */
        CHECK(here_outer2(out, 0) >= 2);
        CHECKF(out[0] > o && out[0] < o + 128, "fp: pcs[0]=%#lx here_outer=%#lx",
               (unsigned long)out[0], (unsigned long)o);
        pe_tls.unwind_primed = 1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);

    /* signal: interrupted PC first, handler frames cut */
    recurse(DEPTH, 1);
    CHECK(npcs > 0 && pcs[0] == sig_rip);
    c = count_in(lo, hi);
    CHECKF(c >= DEPTH, "signal (syscall leaf): %d frames in recurse (n=%d)", c, npcs);

    /* CPU timer landing in our own code, libunwind path */
    spin_with_timer();
    CHECK(pcs[0] == sig_rip);
    c = count_in(lo, hi);
    CHECKF(c >= DEPTH, "timer, libunwind: %d frames in recurse (n=%d)", c, npcs);

    /* frame-pointer fallback (an unprimed thread) */
    pe_tls.unwind_primed = 0;
    spin_with_timer();
    CHECK(pcs[0] == sig_rip);
    c = count_in(lo, hi);
    CHECKF(c >= DEPTH - 1, "timer, frame pointers: %d frames in recurse (n=%d)", c, npcs);
    pe_tls.unwind_primed = 1;

    /* re-entrancy: inside our unwinder, only the leaf */
    pe_tls.in_unwind = 1;
    recurse(3, 1);
    CHECK(npcs == 1 && pcs[0] == sig_rip);
    CHECK(pe_unwind_here(pcs, 8, 0) == 0);
    pe_tls.in_unwind = 0;

    /* inside dlclose anywhere: leaf only */
    pe_unwind_dlclose_busy = 1;
    recurse(3, 1);
    CHECK(npcs == 1);
    pe_unwind_dlclose_busy = 0;

    /* a loader thread churning while we unwind from signals: no crash, no hang */
    {
        pthread_t th;
        struct timespec t0, t1;
        int ok = 0, runs = 0;
        pthread_create(&th, NULL, loader, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            recurse(DEPTH, 1);
            ok += npcs >= 1 && pcs[0] == sig_rip;
            runs++;
            recurse(DEPTH, 0);
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while (t1.tv_sec - t0.tv_sec < 2);
        loader_stop = 1;
        pthread_join(th, NULL);
        CHECKF(ok == runs, "%d of %d signal unwinds under dlopen churn", ok, runs);
    }
    recurse(DEPTH, 1);
    c = count_in(lo, hi);
    CHECKF(c >= DEPTH, "after churn: %d frames in recurse (n=%d)", c, npcs);
    return pe_test_done();
}
