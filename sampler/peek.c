/*
 * peek.c: the PROFEP_PEEK_SIGNAL report (see peek.h).  Owns the peek signal's
 * disposition while the program leaves it alone, the semaphore the handler
 * posts, and the "pe-peek" thread that prints the stacks (sampler/allstacks.c)
 * and a CPU profile window (sampler.c) through an fd sink on stderr.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/guard.h"
#include "../preload/log.h"
#include "../preload/real.h"
#include "../preload/sigown.h"
#include "../preload/threads.h"
#include "../profile/profile.h"
#include "../render/render.h"
#include "allstacks.h"
#include "peek.h"
#include "sampler.h"

static sem_t peek_sem;        /* posted by the handler, waited on by the thread */
static struct sigaction orig; /* the program's disposition at start-up */
static int peek_stop;         /* pe_peek_step_aside: the thread leaves */
static int peek_live;         /* the thread is started and has not left */

static const struct sigaction *
orig_disposition(void)
{
    return &orig;
}

/* The peek signal (own.sig: 0 = off; set by the constructor), held as
   preload/sigown.h says; own.owned: our handler is the kernel's. */
static pe_sigown_t own = {.prog = orig_disposition};

/* ---- the handler ------------------------------------------------------------------ */

PE_SIGSAFE static void
peek_handler(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    sem_post(&peek_sem);
    errno = saved;
}

/* ---- the report --------------------------------------------------------------------- */

static void
peek_run(void)
{
    pe_fdsink_t fs;
    pe_sink_t *out = &fs.sink;
    pe_stacks_t *s;
    pe_sampler_win_t *w;
    double delay = 0.01, running = 0;
    const char *signame = sigabbrev_np(own.sig);
    int rc;

    pe_fdsink_init(&fs, 2);
    pe_sink_printf(out, "profendpoints: peek (SIG%s, pid %d): every thread's stack\n",
                   signame ? signame : "?", (int)getpid());
    if ((rc = pe_stacks_capture(PE_STACKS_TIMEOUT_MS, &s)) == 0) {
        pe_stacks_write_text(s, out, 2);
        pe_stacks_free(s);
    } else {
        pe_sink_printf(out, "profendpoints: peek: thread stacks unavailable: %s\n",
                       rc == -EPERM ? "SIGPROF is handled by the program" : strerror(-rc));
    }
    pe_sink_printf(out, "profendpoints: peek: CPU profile of %g s\n", pe_cfg.peek_seconds);
    rc = pe_sampler_open(delay, (int64_t)1e8, &w, &running);
    if (rc == -EBUSY) /* a CPU profile runs: join it at its rate */
        rc = pe_sampler_open(running, (int64_t)1e8, &w, &running);
    if (rc == 0) {
        pe_text_opts_t opts = {0, 0, 0, 0, 0}; /* counts, as Julia's peek */
        struct timespec ts = {(time_t)pe_cfg.peek_seconds,
                              (long)((pe_cfg.peek_seconds - (time_t)pe_cfg.peek_seconds) * 1e9)};
        pe_prof_t *p;

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        p = pe_sampler_close(w);
        pe_prof_write_text(p, out, &opts);
        pe_prof_free(p);
    } else {
        pe_sink_printf(out, "profendpoints: peek: CPU profile unavailable: %s\n",
                       rc == -EPERM ? "SIGPROF is handled by the program" : strerror(-rc));
    }
    pe_sink_put(out, "profendpoints: peek done\n");
}

static void *
peek_main(void *unused)
{
    pe_threads_mark_internal();
    prctl(PR_SET_NAME, "pe-peek", 0, 0, 0);
    for (;;) {
        while (sem_wait(&peek_sem) < 0 && errno == EINTR)
            ;
        if (__atomic_load_n(&peek_stop, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&peek_live, 0, __ATOMIC_RELEASE);
            break;
        }
        while (sem_trywait(&peek_sem) == 0) /* signals that came meanwhile: one report */
            ;
        peek_run();
        while (sem_trywait(&peek_sem) == 0) /* nor one more for signals during the report */
            ;
    }
    return NULL;
}

/* ---- module API --------------------------------------------------------------------- */

int
pe_peek_init(void)
{
    const char *name;
    int err;

    if (!pe_cfg.peek_signal)
        return 0;
    name = sigabbrev_np(pe_cfg.peek_signal);
    if (pe_real.sigaction(pe_cfg.peek_signal, NULL, &orig) < 0)
        return -errno;
    if (pe_sig_is_handler(&orig)) {
        pe_log_info("PROFEP_PEEK_SIGNAL=%s: the program handles SIG%s; peek disabled",
                    name ? name : "?", name ? name : "?");
        return -EBUSY;
    }
    if (sem_init(&peek_sem, 0, 0) < 0)
        return -errno;
    __atomic_store_n(&peek_live, 1, __ATOMIC_RELEASE);
    if ((err = -pe_threads_start_internal(peek_main, NULL)) != 0) {
        __atomic_store_n(&peek_live, 0, __ATOMIC_RELEASE);
        pe_log_warn("PROFEP_PEEK_SIGNAL: cannot start the peek thread: %s", strerror(err));
        return -err;
    }
    own.handler = peek_handler;
    own.sig = pe_cfg.peek_signal;
    if (pe_sigown_install(&own) < 0) {
        err = errno;
        own.sig = 0;
        pe_log_warn("PROFEP_PEEK_SIGNAL: cannot install the handler: %s", strerror(err));
        return -err;
    }
    __atomic_store_n(&own.owned, 1, __ATOMIC_RELEASE);
    return 0;
}

int
pe_peek_sigaction(int signum, const struct sigaction *act, struct sigaction *old, int *rc)
{
    struct sigaction prev;
    sigset_t saved;
    int was_installed = 0;

    if (!own.sig || signum != own.sig)
        return 0;
    pe_sigown_lock(&own, &saved);
    *rc = pe_sig_real_action(signum, act, old ? &prev : NULL);
    if (*rc == 0 && act) { /* the program's own now: no hand-on to undo, no peek */
        own.handon_applied = 0;
        was_installed = __atomic_exchange_n(&own.owned, 0, __ATOMIC_ACQ_REL);
    }
    pe_sigown_unlock(&own, &saved);
    if (*rc < 0)
        return 1;
    if (old) {
        /* the program sees what it would have without us */
        *old = (!(prev.sa_flags & SA_SIGINFO) || prev.sa_sigaction != peek_handler) ? prev : orig;
    }
    if (was_installed) {
        const char *name = sigabbrev_np(signum);
        pe_log_info("the program set its own SIG%s disposition: PROFEP_PEEK_SIGNAL peek disabled",
                    name ? name : "?");
    }
    return 1;
}

/* Hand-on of the program's SIG_IGN across exec and spawn: preload/sigown.h. */
int
pe_peek_handon_begin(int foreign)
{
    return pe_sigown_handon_begin(&own, foreign);
}

void
pe_peek_handon_end(int foreign, int token)
{
    pe_sigown_handon_end(&own, foreign, token);
}

void
pe_peek_step_aside(void)
{
    sigset_t saved;

    if (!own.sig)
        return;
    /* The program's disposition back, as at start-up (what it would have without us). */
    pe_sigown_lock(&own, &saved);
    if (__atomic_exchange_n(&own.owned, 0, __ATOMIC_ACQ_REL))
        pe_sig_real_action(own.sig, &orig, NULL);
    pe_sigown_unlock(&own, &saved);
    __atomic_store_n(&peek_stop, 1, __ATOMIC_RELEASE);
    sem_post(&peek_sem);
    pe_clock_wait_cleared(&peek_live, 5000);
}

void
pe_peek_atfork_child(void)
{
    /* the peek thread did not survive: the child is dormant, its signal the program's */
    peek_live = 0;
    pe_sigown_atfork_child(&own);
    if (__atomic_exchange_n(&own.owned, 0, __ATOMIC_ACQ_REL))
        pe_sig_real_action(own.sig, &orig, NULL);
}
