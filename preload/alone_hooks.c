/*
 * alone_hooks.c: the interposers in front of the calls that need a single
 * thread or that filter system calls (unshare, setns, prctl(PR_SET_SECCOMP),
 * syscall(SYS_seccomp, ...) and those through syscall()): a program's own
 * call steps aside first (alone.c).  The looks at the thread list are
 * alone_tasks.c's.
 *
 * Signal-safe: no.
 */
#include <dlfcn.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alone_int.h"
#include "pe.h"

/* ---- the real functions ---------------------------------------------------------------- */

static struct {
    int (*unshare)(int);
    int (*setns)(int, int);
    int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
    long (*syscall)(long, long, long, long, long, long, long);
} real;

#define REAL(f) PE_ALONE_REAL(real, f)

/* Before main, so that no first use (our own syscall(), from a signal handler
   of ours) resolves one: dlsym is not async-signal-safe. */
__attribute__((constructor(102))) static void
alone_hooks_init(void)
{
    (void)REAL(syscall);
    (void)REAL(prctl);
}

/* ---- when to step aside ------------------------------------------------------------------ */

/* unshare flags the kernel refuses (EINVAL) in a process with other threads. */
#define PE_ALONE_UNSHARE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

static void
before_unshare(int flags)
{
    if ((flags & PE_ALONE_UNSHARE) && pe_alone_program_call())
        pe_alone_step_aside("calls unshare, which needs a single thread");
}

/* setns into a user or mount namespace needs one thread; nstype 0 may be either. */
static void
before_setns(int nstype)
{
    if ((nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS))) && pe_alone_program_call())
        pe_alone_step_aside("calls setns, which needs a single thread");
}

/* prog: the filter's address (a NULL one is a probe that installs nothing:
   Chromium asks seccomp(SET_MODE_FILTER, TSYNC, NULL) for EFAULT). */
static void
before_seccomp(long mode, const void *prog)
{
    if ((mode == SECCOMP_MODE_STRICT || prog) && pe_alone_program_call())
        pe_alone_step_aside("installs a seccomp filter");
}

/* ---- the interposers ------------------------------------------------------------------------ */

PE_EXPORT int
unshare(int flags)
{
    int (*f)(int) = REAL(unshare);

    before_unshare(flags);
    return f ? f(flags) : (int)syscall(SYS_unshare, flags);
}

PE_EXPORT int
setns(int fd, int nstype)
{
    int (*f)(int, int) = REAL(setns);

    before_setns(nstype);
    return f ? f(fd, nstype) : (int)syscall(SYS_setns, fd, nstype);
}

PE_EXPORT int
prctl(int option, ...)
{
    int (*f)(int, unsigned long, unsigned long, unsigned long, unsigned long) = REAL(prctl);
    unsigned long a[4];
    va_list ap;

    /* glibc's prctl takes four more words whatever the option. */
    va_start(ap, option);
    for (int i = 0; i < 4; i++)
        a[i] = va_arg(ap, unsigned long);
    va_end(ap);
    if (option == PR_SET_SECCOMP)
        before_seccomp((long)a[0], (const void *)a[1]);
    return f ? f(option, a[0], a[1], a[2], a[3])
             : (int)syscall(SYS_prctl, option, a[0], a[1], a[2], a[3]);
}

PE_EXPORT long
syscall(long nr, ...)
{
    long (*f)(long, long, long, long, long, long, long) = REAL(syscall);
    long a[6];
    va_list ap;

    /* glibc's syscall passes six argument words whatever the call. */
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_seccomp && a[0] == SECCOMP_SET_MODE_STRICT)
        before_seccomp(SECCOMP_MODE_STRICT, NULL);
    else if (nr == SYS_seccomp && a[0] == SECCOMP_SET_MODE_FILTER)
        before_seccomp(SECCOMP_MODE_FILTER, (const void *)a[2]);
    else if (nr == SYS_prctl && a[0] == PR_SET_SECCOMP)
        before_seccomp(a[1], (const void *)a[2]);
    else if (nr == SYS_unshare)
        before_unshare((int)a[0]);
    else if (nr == SYS_setns)
        before_setns((int)a[1]);
    return f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
