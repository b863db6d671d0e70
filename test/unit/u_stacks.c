/*
 * u_stacks.c: stack captures and wall-clock windows in-process.  A capture
 * finds a sleeping and a busy thread in their own functions and reports a
 * thread that blocks SIGPROF as not answering, within the bound; that
 * thread's late signal, once it unblocks, changes nothing and the next
 * capture gets it right.  Wall and CPU windows run side by side, each with
 * its own samples (wall: every thread, state labels; CPU: the busy one), and
 * a second wall delay is refused.  A program that owns SIGPROF gets -EPERM
 * and never sees our signals.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../profile/profile.h"
#include "../../sampler/allstacks.h"
#include "../../sampler/kind.h"
#include "../../sampler/sampler.h"
#include "../../stack/unwind.h"
#include "../../symbols/symbols.h"
#include "pe_test.h"

static volatile int stop, unblock;
static volatile long spins;
static volatile unsigned long eintr;

__attribute__((noinline)) static void
u_sleeper(void)
{
    while (!stop) {
        struct timespec ts = {0, 200 * 1000000};
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            eintr++;
    }
}

__attribute__((noinline)) static void
u_spinner(void)
{
    while (!stop)
        spins++;
}

__attribute__((noinline)) static void
u_blocker(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    while (!unblock)
        usleep(10000);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL); /* the capture's pending signal lands now */
    u_sleeper();
}

static void *
run(void *fn)
{
    pe_unwind_prime_thread();
    ((void (*)(void))fn)();
    return NULL;
}

/* The stack of `name`'s thread contains function `fn`. */
static int
has_frame(const pe_stacks_t *s, pid_t tid, const char *fn)
{
    char buf[256];
    for (int i = 0; i < s->n; i++) {
        if (s->v[i].tid != tid)
            continue;
        for (int f = 0; f < s->v[i].nframes; f++) {
            uintptr_t a = s->v[i].pcs[f] - (f > 0);
            if (pe_sym_symbolize(a, buf, sizeof(buf)) && !strcmp(buf, fn))
                return 1;
        }
    }
    return 0;
}

static const pe_stack_t *
find(const pe_stacks_t *s, pid_t tid)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].tid == tid)
            return &s->v[i];
    return NULL;
}

static pid_t tids[3];
static void *
run_named(void *arg)
{
    int i = (int)(intptr_t)arg;
    void (*fns[3])(void) = {u_sleeper, u_spinner, u_blocker};
    tids[i] = (pid_t)gettid();
    return run((void *)fns[i]);
}

/* Sum of value `idx` over samples whose label `key` is `val` (string) and whose stack has fn. */
static int64_t
sum_fn(pe_prof_t *p, const char *fn, const char *key, const char *val)
{
    int64_t sum = 0;
    pe_prof_resolve(p, 0);
    for (int i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample_t sm;
        int has = 0, lab = !key;
        pe_prof_sample(p, i, &sm);
        for (int f = 0; f < sm.nframes; f++)
            has |= !strcmp(sm.frames[f]->name, fn);
        for (int l = 0; key && l < sm.nlabels; l++)
            if (!strcmp(sm.labels[l].key, key) && sm.labels[l].str &&
                !strcmp(sm.labels[l].str, val))
                lab = 1;
        if (has && lab)
            sum += sm.values[0];
    }
    return sum;
}

/* usleep that resumes after EINTR (our own signals reach this thread too) */
static void
nap(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
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
    pthread_t th[3];
    pe_stacks_t *s;
    const pe_stack_t *b;
    pe_sampler_win_t *ww, *wc, *w2;
    pe_prof_t *pw, *pc;
    double running = 0;
    struct sigaction sa, old;

    CHECK(pe_unwind_init() == 0);
    CHECK(pe_sampler_init() == 0);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&th[i], NULL, run_named, (void *)(intptr_t)i) == 0);
    nap(100000);

    /* ---- a capture by signal (from /proc the blocker would be read all the same) ---- */
    CHECK(pe_stacks_capture_mode(PE_STACKS_TIMEOUT_MS, PE_STACKS_SIGNAL, &s) == 0);
    CHECKF(s->n == 3, "n=%d", s->n); /* the caller is left out */
    CHECK(has_frame(s, tids[0], "u_sleeper"));
    CHECK(has_frame(s, tids[1], "u_spinner"));
    CHECK((b = find(s, tids[2])) && !b->answered && b->why && !strcmp(b->why, "it blocks SIGPROF"));
    CHECK(s->noanswer == 1);
    CHECKF(s->wait_ns >= 150000000 && s->wait_ns < 600000000, "wait %lld ns",
           (long long)s->wait_ns);
    CHECK(find(s, tids[0]) && !strcmp(find(s, tids[0])->state, "sleeping"));
    {
        pe_prof_t *p = pe_stacks_profile(s);
        CHECK(p && pe_prof_nsamples(p) == 3);
        CHECK(p && sum_fn(p, "u_spinner", "thread_name", "u_stacks") == 1);
        CHECK(p && sum_fn(p, "[no answer]", NULL, NULL) == 1);
        pe_prof_free(p);
    }
    pe_stacks_free(s);

    /* ---- the late signal of the abandoned slot: harmless; then it answers ---- */
    unblock = 1;
    nap(100000);
    CHECK(pe_stacks_capture_mode(PE_STACKS_TIMEOUT_MS, PE_STACKS_SIGNAL, &s) == 0);
    CHECK(s->noanswer == 0 && s->n == 3);
    CHECK(has_frame(s, tids[2], "u_blocker"));
    CHECKF(s->wait_ns < 100000000, "all answered: %lld ns", (long long)s->wait_ns);
    pe_stacks_free(s);

    /* ---- a wall session starting while the collector sleeps for a CPU one ----
       (its period was once read before the session published it: 0, and a
       division by it killed the program with SIGFPE) */
    CHECK(pe_sampler_open(0.01, 100000000, &wc, &running) == 0);
    for (int k = 0; k < 20; k++) {
        nap(7000 + 1000 * k);
        CHECK(pe_sampler_open_wall(0.01, 100000000, &ww, &running) == 0);
        nap(15000);
        pe_prof_free(pe_sampler_close(ww));
    }
    pe_prof_free(pe_sampler_close(wc));

    /* ---- wall and CPU side by side ---- */
    eintr = 0;
    CHECK(pe_sampler_open_wall(0.005, 100000000, &ww, &running) == 0);
    CHECK(pe_sampler_open(0.01, 100000000, &wc, &running) == 0);
    CHECK(pe_sampler_open_wall(0.01, 1000, &w2, &running) == -EBUSY && running == 0.005);
    CHECK(pe_sampler_running(&running) == 1 && running == 0.01);
    nap(600000);
    pc = pe_sampler_close(wc);
    nap(200000); /* wall goes on alone */
    pw = pe_sampler_close(ww);
    CHECK(pe_sampler_running(NULL) == 0);
    CHECK(pw && pe_prof_type_index(pw, "wall") == 1);
    CHECK(pc && pe_prof_type_index(pc, "cpu") == 1);
    {
        int64_t wsl = sum_fn(pw, "u_sleeper", "state", "sleeping");
        int64_t wsp = sum_fn(pw, "u_spinner", NULL, NULL);
        int64_t csl = sum_fn(pc, "u_sleeper", NULL, NULL);
        int64_t csp = sum_fn(pc, "u_spinner", NULL, NULL);
        /* 0.8 s at 5 ms: ~160 ticks per thread */
        CHECKF(wsl > 80 && wsp > 80, "wall: sleeper %lld spinner %lld", (long long)wsl,
               (long long)wsp);
        /* the sleeper burns a little CPU itself when wall ticks wake it */
        CHECKF(csp > 10 && csl * 10 <= csp, "cpu: spinner %lld sleeper %lld", (long long)csp,
               (long long)csl);
        CHECK(sum_fn(pc, "u_spinner", "state", "running") == 0); /* CPU samples have no state */
        /* the sleeper is read from /proc, never signalled while it sleeps */
        CHECKF(eintr <= 2, "nanosleep saw EINTR %lu times under wall sampling", eintr);
    }
    pe_prof_free(pw);
    pe_prof_free(pc);

    /* ---- the program takes SIGPROF: -EPERM, and its handler never sees ours ---- */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = prog_handler;
    CHECK(pe_sampler_sigaction(SIGPROF, &sa, &old) == 1);
    CHECK(pe_stacks_capture(PE_STACKS_TIMEOUT_MS, &s) == -EPERM);
    /* a wall session that signals needs it (without, perf events serve) */
    CHECK(pe_sampler_open_kind(&pe_kind_wall, 0.01, 1000, PE_SAMPLER_CAPTURE_SIGNAL, &w2,
                               &running) == -EPERM);
    nap(50000);
    CHECK(prog_handled == 0);

    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    return pe_test_done();
}
