/*
 * u_sampler.c: CPU sessions in-process.  A window collects samples of busy
 * threads (found through /proc/self/task) weighted to their CPU time; two
 * windows overlap; a different delay is refused with the running one; the
 * program's SIGPROF handler is stored while we profile, reported back, applied
 * when we stop, and then profiling is refused; timers vanish at stop.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../profile/profile.h"
#include "../../sampler/sampler.h"
#include "../../stack/unwind.h"
#include "pe_test.h"

static volatile int stop;
static volatile long sink;

static double
cpu_now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
burn(double seconds)
{
    double t0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
    while (cpu_now(CLOCK_THREAD_CPUTIME_ID) - t0 < seconds)
        for (int i = 0; i < 10000; i++)
            sink += i;
}

static void *
spinner(void *arg)
{
    /* what our pthread_create interposer does on a new thread (events.c):
       its timer is armed at once, not at the collector's next rescan */
    pe_sampler_thread_started();
    while (!stop)
        burn(0.01);
    return NULL;
}

static int64_t
total(pe_prof_t *p, int idx, int64_t *tid_seen, int *nthreads)
{
    int64_t sum = 0;
    *nthreads = 0;
    for (int i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample_t s;
        pe_prof_sample(p, i, &s);
        sum += s.values[idx];
        for (int l = 0; l < s.nlabels; l++)
            if (!strcmp(s.labels[l].key, "thread") && *nthreads < 8) {
                int k;
                for (k = 0; k < *nthreads; k++)
                    if (tid_seen[k] == s.labels[l].num)
                        break;
                if (k == *nthreads)
                    tid_seen[(*nthreads)++] = s.labels[l].num;
            }
    }
    return sum;
}

static int prog_handled;
static void
prog_handler(int sig)
{
    prog_handled++;
}

int
main(void)
{
    pe_sampler_win_t *w1, *w2, *w3;
    pe_prof_t *p1, *p2;
    pthread_t th;
    double c0, c1, running = 0;
    int64_t tids[8];
    int nth;
    struct sigaction sa, old;

    CHECK(pe_unwind_init() == 0);
    CHECK(pe_sampler_init() == 0);

    /* window 1 over a spinner thread and the main thread */
    CHECK(pe_sampler_open(0.001, 100000000, &w1, &running) == 0);
    CHECK(pe_sampler_running(&running) == 1 && running == 0.001);
    CHECK(pe_sampler_open(0.01, 1000, &w3, &running) == -EBUSY && running == 0.001);
    pthread_create(&th, NULL, spinner, NULL);
    c0 = cpu_now(CLOCK_PROCESS_CPUTIME_ID);
    burn(0.3);
    CHECK(pe_sampler_open(0.001, 100000000, &w2, &running) == 0);

    /* the program asks for SIGPROF while we profile: stored, reported back */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = prog_handler;
    CHECK(pe_sampler_sigaction(SIGPROF, &sa, &old) == 1);
    CHECK(old.sa_handler == SIG_DFL);
    CHECK(pe_sampler_sigaction(SIGPROF, NULL, &old) == 1 && old.sa_handler == prog_handler);
    CHECK(pe_sampler_sigaction(SIGUSR1, NULL, &old) == 0);

    burn(0.3);
    p1 = pe_sampler_close(w1);
    c1 = cpu_now(CLOCK_PROCESS_CPUTIME_ID);
    burn(0.1);
    p2 = pe_sampler_close(w2);
    stop = 1;
    pthread_join(th, NULL);
    CHECK(pe_sampler_running(NULL) == 0);

    {
        /* samples x 1 ms should account for the CPU used (>= 80% here) */
        int64_t cpu_ns = total(p1, 1, tids, &nth);
        double used = c1 - c0;
        CHECKF(cpu_ns / 1e9 > 0.8 * used && cpu_ns / 1e9 < 1.1 * used,
               "window 1: %.3f s sampled of %.3f s used", cpu_ns / 1e9, used);
        CHECKF(nth == 2, "window 1 saw %d threads", nth);
        CHECK(pe_prof_ntypes(p1) == 2);
        CHECK(!strcmp(pe_prof_type(p1, 0)->type, "samples"));
        CHECK(!strcmp(pe_prof_type(p1, 1)->unit, "nanoseconds"));
        int64_t ns2 = total(p2, 1, tids, &nth);
        CHECKF(ns2 > 0 && ns2 < cpu_ns, "window 2: %lld ns, window 1: %lld ns", (long long)ns2,
               (long long)cpu_ns);
    }
    pe_prof_free(p1);
    pe_prof_free(p2);

    /* stopped: the program's handler is now really installed, and we step aside */
    sigaction(SIGPROF, NULL, &old);
    CHECK(old.sa_handler == prog_handler);
    CHECK(pe_sampler_sigaction(SIGPROF, NULL, &old) == 0);
    /* the timers need the signal: refused, naming the handler; perf events
       (no signal) serve where they open, and the handler sees nothing of them */
    CHECK(pe_sampler_open_cpu(NULL, 2 /* PE_CPU_ENGINE_TIMER */, 0.01, 1000, &w3, &running) ==
          -EPERM);
    CHECKF(strstr(pe_sampler_cpu_refusal(), "its handler prog_handler") != NULL, "refusal: %s",
           pe_sampler_cpu_refusal());
    {
        int rc = pe_sampler_open(0.01, 1000, &w3, &running);
        CHECKF(rc == 0 || rc == -EPERM, "perf engine for the program's SIGPROF: %d", rc);
        if (rc == 0) {
            burn(0.1);
            pe_prof_free(pe_sampler_close(w3));
        }
        sigaction(SIGPROF, NULL, &old);
        CHECK(old.sa_handler == prog_handler && prog_handled == 0);
    }
    raise(SIGPROF);
    CHECK(prog_handled == 1);

    /* a small n: samples beyond it are counted, not kept */
    signal(SIGPROF, SIG_DFL);
    CHECK(pe_sampler_open(0.001, 40, &w3, &running) == 0);
    burn(0.2);
    p1 = pe_sampler_close(w3);
    {
        int frames = 0;
        for (int i = 0; i < pe_prof_nsamples(p1); i++) {
            pe_prof_sample_t s;
            pe_prof_sample(p1, i, &s);
            frames += s.nframes;
        }
        CHECKF(frames <= 40, "%d frames kept with n=40", frames);
    }
    pe_prof_free(p1);
    /* no timers left: burning CPU now raises nothing */
    burn(0.05);
    return pe_test_done();
}
