/*
 * account.c: the threads a sampled profile cannot see, and the truncated
 * samples' leaves, counted and said (account.h).  Owns the reading of each
 * thread's mask and filter (through preload/proc.h) and the wording; the
 * sampler calls in when a window closes and when its drain meets a
 * truncated sample, the index and goroutine?debug=2 when they are drawn.
 *
 * Why a thread goes unsampled: CPU samples and the wall-clock samples of a
 * running thread come from a signal delivered to that thread, which it never
 * takes while it blocks SIGPROF (Apache's event MPM blocks it in its workers;
 * programs that sigwait in one thread block every signal in the rest).  A
 * wall sample of a thread off the CPU is read from /proc without a signal,
 * unless the process is not dumpable (after a switch of user) and we are not
 * root: then /proc/self/task/TID/syscall is root's and the reading fails.
 *
 * Signal-safe: no.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../preload/proc.h"
#include "../preload/threads.h"
#include "account.h"
#include "sampler_int.h"

#define SIGBIT (1ull << (PE_SAMPLER_SIG - 1))

/* ---- helpers -------------------------------------------------------------------- */

/* /proc gives no thread's stack: not dumpable, and no root to read root's files. */
static int
proc_closed(void)
{
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1 && geteuid() != 0;
}

/* Does the process itself run under a filter?  Then every thread does, and the
   sampler said so already (the profile is refused, or tried under
   PROFEP_SECCOMP=try): no thread is singled out. */
static int
self_seccomp(void)
{
    return pe_seccomp_filtered();
}

/* "tids 12 13 14" (and "+N more") into buf. */
static void
tid_list(const pe_unsampled_t *u, char *buf, size_t len)
{
    size_t n = 0;

    buf[0] = 0;
    for (int i = 0; i < u->ntids && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%d", i ? " " : "tids ", (int)u->tids[i]);
    if (u->blocked > u->ntids && n < len)
        snprintf(buf + n, len - n, " and %d more", u->blocked - u->ntids);
}

/* What a blocking thread costs a profile of this kind. */
static const char *
blocked_effect(int oncpu, int closed)
{
    if (oncpu)
        return "the CPU timer's signal never reaches them, so no CPU sample does";
    return closed ? "no wall sample reaches them: the signal is blocked and /proc gives no "
                    "stack (the process is not dumpable)"
                  : "wall samples reach them only from /proc while they are off the CPU, "
                    "never while they run";
}

/* ---- module API ------------------------------------------------------------------ */

void
pe_sampler_unsampled(pe_unsampled_t *u)
{
    pe_proc_tasks_t it;
    pe_proc_sigs_t s;
    int filtered = self_seccomp();
    pid_t tid;

    memset(u, 0, sizeof(*u));
    u->undumpable = proc_closed();
    if (pe_proc_tasks_open(&it) < 0)
        return;
    while (u->threads < PE_UNSAMPLED_SCAN && (tid = pe_proc_tasks_next(&it)) > 0) {
        if (pe_threads_is_internal(tid) || pe_proc_task_sigs(tid, &s) < 0)
            continue; /* ours, or gone meanwhile */
        u->threads++;
        if (s.blocked & SIGBIT) {
            if (u->ntids < PE_UNSAMPLED_TIDS)
                u->tids[u->ntids++] = tid;
            u->blocked++;
        }
        if (s.seccomp == 2 && !filtered)
            u->seccomp++;
    }
    pe_proc_tasks_close(&it);
}

void
pe_sampler_unsampled_comment(pe_prof_t *p, int oncpu)
{
    pe_unsampled_t u;
    char tids[160];

    pe_sampler_unsampled(&u);
    if (u.blocked) {
        tid_list(&u, tids, sizeof(tids));
        pe_prof_comment(p, "unsampled: %d thread%s block%s SIGPROF (of %d; %s): %s", u.blocked,
                        u.blocked == 1 ? "" : "s", u.blocked == 1 ? "s" : "", u.threads, tids,
                        blocked_effect(oncpu, u.undumpable));
    }
    if (u.undumpable && !oncpu)
        pe_prof_comment(p, "unsampled: the process is not dumpable, so /proc gives no stack: "
                           "every wall sample needs a signal the thread takes");
    if (u.seccomp)
        pe_prof_comment(p,
                        "seccomp: %d thread%s run under a seccomp filter of their own; they are "
                        "signalled like the others, and a filter that refuses the handler's "
                        "calls loses their samples",
                        u.seccomp, u.seccomp == 1 ? "" : "s");
}

void
pe_sampler_unsampled_html(pe_sink_t *s)
{
    pe_unsampled_t u;
    char tids[160];

    pe_sampler_unsampled(&u);
    if (!u.blocked && !u.undumpable && !u.seccomp)
        return;
    pe_sink_printf(s, "<p>Threads: %d.", u.threads);
    if (u.blocked) {
        tid_list(&u, tids, sizeof(tids));
        pe_sink_printf(s, " %d block SIGPROF (%s): CPU profiles cannot sample them; %s.", u.blocked,
                       tids, blocked_effect(0, u.undumpable));
    }
    if (u.undumpable)
        pe_sink_put(s, " The process is not dumpable: /proc gives no stacks, so wall-clock "
                       "samples and thread stacks need a signal.");
    if (u.seccomp)
        pe_sink_printf(s, " %d run under a seccomp filter of their own.", u.seccomp);
    pe_sink_put(s, "</p>\n");
}

const char *
pe_sampler_thread_unsampled(pid_t tid, char *buf, size_t len)
{
    pe_proc_sigs_t s;

    if (pe_proc_task_sigs(tid, &s) < 0)
        return NULL;
    if (s.blocked & SIGBIT)
        snprintf(buf, len, "blocks SIGPROF: no CPU sample reaches it, %s",
                 proc_closed() ? "nor a wall sample (the process is not dumpable)"
                               : "wall samples only from /proc while it is off the CPU");
    else if (s.seccomp == 2 && !self_seccomp())
        snprintf(buf, len, "runs under a seccomp filter of its own");
    else
        return NULL;
    return buf;
}

/* ---- truncated samples ------------------------------------------------------------ */

/* The object of the last leaf without unwind information (collector, under the
   sampler's wlock: one writer at a time). */
static char noinfo_obj[96];

int
pe_sampler_trunc_why(uintptr_t leaf)
{
    Dl_info info;
    const char *base;

    if (!dladdr((void *)leaf, &info) || !info.dli_fname)
        return PE_TRUNC_NOOBJECT;
    base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    snprintf(noinfo_obj, sizeof(noinfo_obj), "%s", base[0] ? base : "the main program");
    return PE_TRUNC_NOUNWIND;
}

void
pe_sampler_trunc_comment(pe_prof_t *p, const uint64_t why[PE_TRUNC_N])
{
    if (why[PE_TRUNC_NOUNWIND])
        pe_prof_comment(p,
                        "truncated: %llu samples kept with their leaf frame only: no unwind "
                        "information for the leaf's address (hand-written assembly without "
                        "CFI, for example; last seen in %s)",
                        (unsigned long long)why[PE_TRUNC_NOUNWIND],
                        noinfo_obj[0] ? noinfo_obj : "an object");
    if (why[PE_TRUNC_NOOBJECT])
        pe_prof_comment(p,
                        "truncated: %llu samples kept with their leaf frame only: the leaf is in "
                        "no loaded object (JIT or generated code, which has no unwind information)",
                        (unsigned long long)why[PE_TRUNC_NOOBJECT]);
    if (why[PE_TRUNC_OURS])
        pe_prof_comment(p,
                        "truncated: %llu samples kept with their leaf frame only (interrupted in "
                        "the dynamic loader or in our unwinder, where unwinding is unsafe)",
                        (unsigned long long)why[PE_TRUNC_OURS]);
}
