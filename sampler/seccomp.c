/*
 * seccomp.c: signal-based profiling under a seccomp filter (seccomp.h).
 *
 * A filter may answer timer_create or rt_tgsigqueueinfo (and perf_event_open)
 * with an error, or kill the process on them, and a filter cannot be read
 * back without privileges; trying is the only test, and it could be fatal.
 * So by default (PROFEP_SECCOMP=dormant, which preload/alone.c keeps
 * dormant, or serve) signal-based profiling is off when the process started
 * under a filter (our threads inherit it), or when the thread asking has one
 * now (a filter synchronised to every thread).  A filter a program installs
 * on its own threads only (prctl) does not reach ours, which make those calls.
 *
 * PROFEP_SECCOMP=try trusts the filter to answer errors, as Docker's default
 * profile does: a refused perf_event_open leaves the timer engine
 * (sampler/engine_perf.c says why), and a refused timer_create or
 * rt_tgsigqueueinfo, tried here before each profile, says why with a 503.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/config.h"
#include "../preload/log.h"
#include "../preload/pe.h"
#include "../preload/proc.h"
#include "seccomp.h"

static int at_load; /* the process started under a filter (written once, by the constructor) */
static PE_TLS char why[192];

/* The calling thread's "Seccomp:" mode (0 none, 1 strict, 2 filter), -1 unknown (no /proc). */
static int
thread_mode(void)
{
    pe_proc_sigs_t s;

    return pe_proc_task_sigs((pid_t)syscall(SYS_gettid), &s) < 0 ? -1 : s.seccomp;
}

void
pe_seccomp_init(void)
{
    int saved = errno;

    if (thread_mode() == 2) {
        at_load = 1;
        if (pe_cfg.seccomp_serve == PE_SECCOMP_TRY)
            pe_log_warn("started under a seccomp filter, PROFEP_SECCOMP=try: CPU, wall-clock and "
                        "thread-stack profiling trust the filter to answer errors (a filter "
                        "that kills on perf_event_open, timer_create or rt_tgsigqueueinfo "
                        "kills the process)");
        else
            pe_log_warn("started under a seccomp filter: CPU, wall-clock and thread-stack "
                        "profiling are off (a filter may kill the process on timer_create or "
                        "rt_tgsigqueueinfo; PROFEP_SECCOMP=try if the filter answers errors, as "
                        "Docker's default profile does)");
    }
    errno = saved;
}

int
pe_seccomp_filtered(void)
{
    int saved = errno, f = at_load || thread_mode() == 2;

    errno = saved;
    return f;
}

/* The calls the timer engine, wall-clock ticks and thread stacks make, made
   harmlessly: a timer that signals nobody on our own CPU clock (deleted at
   once), signal 0 queued to ourselves.  0 or -errno of the first refused. */
static int
try_calls(const char **call)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    struct sigevent sev;
    siginfo_t si;
    int id;

    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_NONE;
    *call = "timer_create";
    /* MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), as sampler/timer.c arms them */
    if (syscall(SYS_timer_create, (clockid_t)((~(unsigned)tid << 3) | 6), &sev, &id) < 0)
        return -errno;
    syscall(SYS_timer_delete, id);
    memset(&si, 0, sizeof(si));
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    *call = "rt_tgsigqueueinfo";
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, 0, &si) < 0)
        return -errno;
    return 0;
}

const char *
pe_seccomp_reason(void)
{
    int saved = errno, filtered = pe_seccomp_filtered(), rc;
    const char *call = NULL;

    if (!filtered) {
        errno = saved;
        return NULL;
    }
    if (pe_cfg.seccomp_serve != PE_SECCOMP_TRY) {
        errno = saved;
        return at_load ? "the process started under a seccomp filter, which may kill it on "
                         "timer_create or rt_tgsigqueueinfo (PROFEP_SECCOMP=try if the filter "
                         "answers errors, as Docker's default profile does)"
                       : "a seccomp filter now covers every thread of the process, and may kill "
                         "it on timer_create or rt_tgsigqueueinfo (PROFEP_SECCOMP=try if the "
                         "filter answers errors)";
    }
    rc = try_calls(&call);
    errno = saved;
    if (rc == 0)
        return NULL;
    snprintf(why, sizeof(why),
             "the seccomp filter refuses %s (%s, PROFEP_SECCOMP=try): the timer engine, "
             "wall-clock ticks and thread stacks need it",
             call, strerror(-rc));
    return why;
}
