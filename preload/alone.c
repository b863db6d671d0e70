/*
 * alone.c: a process that must be alone stays alone (README "Design", "A
 * process that must be alone"): the one step aside that the interposers of
 * alone_hooks.c (calls that need a single thread or install a seccomp
 * filter) and alone_tasks.c (looks at the thread list) lead to, every thread
 * of ours stopped and gone from /proc/self/task, timers deleted, signals
 * given back, sampling off, before the program's call goes on, for good, in
 * one line (a root; members print nothing); the same step aside for `profep
 * detach`; and the check at load for a process that starts under a seccomp
 * filter (PROFEP_SECCOMP).  What each module stops is its own
 * (pe_*_step_aside); this file only orders them.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../http/http.h"
#include "../sampler/peek.h"
#include "../sampler/sampler.h"
#include "alone_int.h"
#include "clock.h"
#include "config.h"
#include "events.h"
#include "guard.h"
#include "init.h"
#include "log.h"
#include "proc.h"
#include "threads.h"
#include "tree.h"

/* Our threads must be gone from /proc/self/task within this (they are
   joined first; a profile handler answering its client is the long part). */
#define PE_ALONE_WAIT_MS 10000

static int aside; /* pe_alone_step_aside ran (or found nothing to do) */

int
pe_alone_program_call(void)
{
    return !__atomic_load_n(&aside, __ATOMIC_ACQUIRE) && !pe_tls.internal && !pe_tls.guard &&
           !pe_event_foreign();
}

/* ---- stepping aside ---------------------------------------------------------------------- */

/* 1 while a thread of ours is still listed in /proc/self/task. */
static int
ours_listed(void)
{
    pe_proc_tasks_t it;
    pid_t tid;
    int found = 0;

    if (pe_proc_tasks_open(&it) < 0)
        return 0;
    while (!found && (tid = pe_proc_tasks_next(&it)) > 0)
        found = pe_threads_is_internal(tid);
    pe_proc_tasks_close(&it);
    return found;
}

/* why == NULL: `profep detach` (preload/attach.c), which prints its own
   line.  1 when something of ours was running, 0 when there was nothing to stop. */
static int
step_aside(const char *why)
{
    int saved = errno, stopped, listed = 1, was_active = pe_init_active();
    int64_t end, t0 = pe_clock_ns(CLOCK_MONOTONIC);

    if (__atomic_exchange_n(&aside, 1, __ATOMIC_ACQ_REL))
        return 0;
    pe_guard_enter(); /* our own calls below pass every interposer straight through */
    /* Dormant first: nothing samples, no heap or lock sample unwinds (libunwind
       makes system calls the program never makes), no server starts later. */
    pe_init_go_dormant();
    /* The server first: once its start has run to the end (or never will),
       no thread of ours is started any more (it starts the heap history and
       the tree's registry). */
    stopped = pe_http_step_aside(); /* handlers finish, civetweb's threads joined */
    pe_tree_step_aside();
    pe_peek_step_aside();
    pe_sampler_step_aside(); /* collector joined, timers deleted, SIGPROF given back */
    pe_heap_step_aside();
    pe_heap_hist_stop();
    /* Detached threads of ours (the deferred start, the heap history, the
       peek, the tree's registry) and joined ones whose task the kernel has not
       yet released: a single-threaded check must find only the program's. */
    end = t0 + PE_ALONE_WAIT_MS * 1000000LL;
    while ((listed = ours_listed()) && pe_clock_ns(CLOCK_MONOTONIC) < end) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    if (why && (was_active || stopped) && !pe_tree_member())
        pe_log_info("pid %d (%s) %s: profiling stops in this process, %s (%lld ms)", (int)getpid(),
                    pe_cfg_progname(), why,
                    listed ? "a thread of ours is still there" : "our threads are gone",
                    (long long)((pe_clock_ns(CLOCK_MONOTONIC) - t0) / 1000000));
    pe_guard_exit();
    errno = saved;
    return was_active || stopped;
}

void
pe_alone_step_aside(const char *why)
{
    (void)step_aside(why);
}

int
pe_alone_detach(void)
{
    return step_aside(NULL);
}

void
pe_alone_rejoin(void)
{
    pe_http_rejoin();
    pe_sampler_rejoin();
    pe_heap_hist_rejoin();
    __atomic_store_n(&aside, 0, __ATOMIC_RELEASE);
}

int
pe_alone_aside(void)
{
    return __atomic_load_n(&aside, __ATOMIC_ACQUIRE);
}

/* ---- started under a filter ----------------------------------------------------------------- */

int
pe_alone_dormant_at_load(void)
{
    int saved = errno, mode = pe_proc_self_seccomp(); /* at load */

    errno = saved;
    if (mode > 0)
        pe_tree_exit_quiet(); /* (served anyway or not: no port-file clean-up at exit) */
    if (mode <= 0 || pe_cfg.seccomp_serve)
        return 0;
    __atomic_store_n(&aside, 1, __ATOMIC_RELEASE);
    pe_log_info("pid %d (%s) started under a seccomp filter: no profiling here (a filter may "
                "kill the process on a system call of ours; PROFEP_SECCOMP=serve serves anyway, "
                "=try profiles too if the filter answers errors, as Docker's default profile does)",
                (int)getpid(), pe_cfg_progname());
    return 1;
}
