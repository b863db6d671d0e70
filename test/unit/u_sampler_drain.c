/*
 * u_sampler_drain.c: the collector sleeps up to a second between drains, so
 * the handler must wake it when the ring (2048 slots) is half full.  Sends
 * 6000 SIGPROFs to this thread (the tkill test hook) within ~0.6 s, faster
 * than the ring holds between two of the collector's ticks, then checks that
 * the window counted every one: no sample lost to a full ring.  Without the
 * wake-up about 4000 are dropped.
 */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../preload/config.h"
#include "../../profile/profile.h"
#include "../../sampler/sampler.h"
#include "../../sampler/sampler_int.h"
#include "../../stack/unwind.h"
#include "pe_test.h"

#define SIGNALS 6000
#define SPREAD_NS 600000000L /* well inside the collector's 1 s tick */

int
main(void)
{
    pe_sampler_win_t *w;
    pe_prof_t *p;
    double running;
    int64_t got = 0;
    struct timespec t0, t;
    pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);

    CHECK(pe_unwind_init() == 0);
    CHECK(pe_sampler_init() == 0);
    pe_cfg.cpu_engine = PE_CPU_ENGINE_TIMER; /* the timer engine's mechanics */
    /* a 1000 s period: this thread's own CPU timer never fires meanwhile */
    CHECK(pe_sampler_open(1000, 100000000, &w, &running) == 0);
    pe_cpu_accept_tkill = 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < SIGNALS; i++) {
        /* paced on a deadline: one every 100 us (a late start catches up) */
        long due = (long)i * (SPREAD_NS / SIGNALS);
        t.tv_sec = t0.tv_sec + (t0.tv_nsec + due) / 1000000000L;
        t.tv_nsec = (t0.tv_nsec + due) % 1000000000L;
        if (i % 16 == 0)
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        syscall(SYS_tgkill, pid, tid, SIGPROF);
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    pe_cpu_accept_tkill = 0;
    p = pe_sampler_close(w);
    for (int i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample_t s;
        pe_prof_sample(p, i, &s);
        got += s.values[0];
    }
    printf("sent %d in %.3f s, counted %lld, ring dropped %llu\n", SIGNALS,
           (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9, (long long)got,
           (unsigned long long)pe_cpu_ring.dropped);
    CHECKF(got == SIGNALS, "counted %lld of %d signals", (long long)got, SIGNALS);
    CHECK(pe_cpu_ring.dropped == 0);
    pe_prof_free(p);
    return pe_test_done();
}
