/*
 * alone_hooks.c: a process that must be alone stays alone (README "Design",
 * "A process that must be alone").  Owns the interposers in front of the
 * calls that need a single thread or that filter system calls (unshare,
 * setns, prctl(PR_SET_SECCOMP), syscall(SYS_seccomp, ...)), and of the ways
 * a program looks at its own thread list (/proc/self/task by open, openat,
 * opendir, stat, fstatat, statx: a zygote or sandbox checks it has one
 * thread), and the one step aside they all lead to: every thread of ours
 * stopped and gone from /proc/self/task, timers deleted, signals given back,
 * sampling off, before the program's call goes on, for good, in one line (a
 * root; members print nothing).  Also the check at load for a process that
 * starts under a seccomp filter (PROFEP_SECCOMP).  What each module stops is
 * its own (pe_*_step_aside); this file only orders them.
 *
 * Signal-safe: no.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../http/http.h"
#include "../sampler/peek.h"
#include "../sampler/sampler.h"
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

static void pe_alone_step_aside(const char *why);

static int aside; /* pe_alone_step_aside ran (or found nothing to do) */

/* ---- the real functions ---------------------------------------------------------------- */

static struct {
    int (*unshare)(int);
    int (*setns)(int, int);
    int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
    long (*syscall)(long, long, long, long, long, long, long);
    int (*open)(const char *, int, ...);
    int (*open64)(const char *, int, ...);
    int (*openat)(int, const char *, int, ...);
    int (*openat64)(int, const char *, int, ...);
    DIR *(*opendir)(const char *);
    int (*stat)(const char *, struct stat *);
    int (*lstat)(const char *, struct stat *);
    int (*fstatat)(int, const char *, struct stat *, int);
    int (*statx)(int, const char *, int, unsigned, struct statx *);
    int (*stat64)(const char *, struct stat64 *);
    int (*lstat64)(const char *, struct stat64 *);
    int (*fstatat64)(int, const char *, struct stat64 *, int);
    int (*__open_2)(const char *, int);
    int (*__open64_2)(const char *, int);
    int (*__openat64_2)(int, const char *, int);
} real;

/* Found at first use: another library's constructor may call these before ours. */
#define REAL(f)                                                                                    \
    (__atomic_load_n(&real.f, __ATOMIC_RELAXED)                                                    \
         ? real.f                                                                                  \
         : (__atomic_store_n(&real.f, (__typeof__(real.f))dlsym(RTLD_NEXT, #f), __ATOMIC_RELAXED), \
            real.f))

/* Before main, so that no first use (our own syscall(), from a signal handler
   of ours) resolves one: dlsym is not async-signal-safe. */
__attribute__((constructor(102))) static void
alone_hooks_init(void)
{
    (void)REAL(syscall);
    (void)REAL(prctl);
    (void)REAL(open);
    (void)REAL(openat);
    (void)REAL(opendir);
}

/* ---- when to step aside ------------------------------------------------------------------ */

/* A call of the program's own (not ours, not a vfork child's) in a process we still serve. */
static int
program_call(void)
{
    return !__atomic_load_n(&aside, __ATOMIC_ACQUIRE) && !pe_tls.internal && !pe_tls.guard &&
           !pe_event_foreign();
}

/*
 * path names this process's own thread list: /proc/self/task,
 * /proc/<our pid>/task, or self/task, <our pid>/task relative to a directory
 * (Chromium: fstatat(open("/proc/"), "self/task/")), with or without a
 * trailing '/'.  A thread's own entry (task/<tid>/...) is not the list.
 */
static int
names_own_tasks(int dirfd, const char *path)
{
    const char *p = path;
    long pid = 0;

    if (!p)
        return 0;
    if (p[0] == '/') {
        if (strncmp(p, "/proc/", 6) != 0)
            return 0;
        p += 6;
    } else if (dirfd == AT_FDCWD) {
        return 0;
    }
    if (!strncmp(p, "self/", 5)) {
        p += 5;
    } else {
        if (*p < '1' || *p > '9')
            return 0;
        while (*p >= '0' && *p <= '9')
            pid = pid * 10 + (*p++ - '0');
        if (*p++ != '/' || pid != (long)getpid())
            return 0;
    }
    return !strcmp(p, "task") || !strcmp(p, "task/");
}

/*
 * A program that looks at its thread list while it has no other thread of
 * its own (the registry's program threads: the caller alone) is checking
 * that it is alone, as a zygote or a sandbox does; one with threads of its
 * own that reads the list (to watch its threads' CPU, say) is left as it is.
 */
static void
looks_at_tasks(int dirfd, const char *path)
{
    /* the path first: it costs a compare or two, program_call a getpid */
    if (__builtin_expect(names_own_tasks(dirfd, path), 0) && program_call() &&
        pe_threads_count(2) <= 1)
        pe_alone_step_aside("looks at its own thread list (/proc/self/task) with no other "
                            "thread of its own");
}

/* unshare flags the kernel refuses (EINVAL) in a process with other threads. */
#define PE_ALONE_UNSHARE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

static void
before_unshare(int flags)
{
    if ((flags & PE_ALONE_UNSHARE) && program_call())
        pe_alone_step_aside("calls unshare, which needs a single thread");
}

/* setns into a user or mount namespace needs one thread; nstype 0 may be either. */
static void
before_setns(int nstype)
{
    if ((nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS))) && program_call())
        pe_alone_step_aside("calls setns, which needs a single thread");
}

/* prog: the filter's address (a NULL one is a probe that installs nothing:
   Chromium asks seccomp(SET_MODE_FILTER, TSYNC, NULL) for EFAULT). */
static void
before_seccomp(long mode, const void *prog)
{
    if ((mode == SECCOMP_MODE_STRICT || prog) && program_call())
        pe_alone_step_aside("installs a seccomp filter");
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

static void
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
    if (mode <= 0 || pe_cfg.seccomp_serve)
        return 0;
    __atomic_store_n(&aside, 1, __ATOMIC_RELEASE);
    pe_log_info("pid %d (%s) started under a seccomp filter: no profiling here (a filter may "
                "kill the process on a system call of ours; PROFEP_SECCOMP=serve serves anyway, "
                "=try profiles too if the filter answers errors, as Docker's default profile does)",
                (int)getpid(), pe_cfg_progname());
    return 1;
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

/* open's mode is there only with O_CREAT or O_TMPFILE. */
#define PE_ALONE_MODE(flags, ap, mode)                                                             \
    do {                                                                                           \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                                                     \
            va_start(ap, flags);                                                                   \
            mode = va_arg(ap, int);                                                                \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

PE_EXPORT int
open(const char *path, int flags, ...)
{
    va_list ap;
    int mode = 0;

    PE_ALONE_MODE(flags, ap, mode);
    looks_at_tasks(AT_FDCWD, path);
    return REAL(open)(path, flags, mode);
}

PE_EXPORT int
open64(const char *path, int flags, ...)
{
    va_list ap;
    int mode = 0;

    PE_ALONE_MODE(flags, ap, mode);
    looks_at_tasks(AT_FDCWD, path);
    return REAL(open64)(path, flags, mode);
}

PE_EXPORT int
openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    int mode = 0;

    PE_ALONE_MODE(flags, ap, mode);
    looks_at_tasks(dirfd, path);
    return REAL(openat)(dirfd, path, flags, mode);
}

PE_EXPORT int
openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    int mode = 0;

    PE_ALONE_MODE(flags, ap, mode);
    looks_at_tasks(dirfd, path);
    return REAL(openat64)(dirfd, path, flags, mode);
}

PE_EXPORT DIR *
opendir(const char *path)
{
    looks_at_tasks(AT_FDCWD, path);
    return REAL(opendir)(path);
}

PE_EXPORT int
stat(const char *path, struct stat *st)
{
    looks_at_tasks(AT_FDCWD, path);
    return REAL(stat)(path, st);
}

PE_EXPORT int
lstat(const char *path, struct stat *st)
{
    looks_at_tasks(AT_FDCWD, path);
    return REAL(lstat)(path, st);
}

PE_EXPORT int
fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    looks_at_tasks(dirfd, path);
    return REAL(fstatat)(dirfd, path, st, flags);
}

PE_EXPORT int
statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st)
{
    looks_at_tasks(dirfd, path);
    return REAL(statx)(dirfd, path, flags, mask, st);
}

PE_EXPORT int
stat64(const char *path, struct stat64 *st)
{
    looks_at_tasks(AT_FDCWD, path);
    return REAL(stat64)(path, st);
}

PE_EXPORT int
lstat64(const char *path, struct stat64 *st)
{
    looks_at_tasks(AT_FDCWD, path);
    return REAL(lstat64)(path, st);
}

PE_EXPORT int
fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    looks_at_tasks(dirfd, path);
    return REAL(fstatat64)(dirfd, path, st, flags);
}

/* _FORTIFY_SOURCE's open (flags known not to need a mode). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

PE_EXPORT int
__open_2(const char *path, int flags)
{
    looks_at_tasks(AT_FDCWD, path);
    return REAL(__open_2)(path, flags);
}

PE_EXPORT int
__open64_2(const char *path, int flags)
{
    looks_at_tasks(AT_FDCWD, path);
    return REAL(__open64_2)(path, flags);
}

PE_EXPORT int
__openat64_2(int dirfd, const char *path, int flags)
{
    looks_at_tasks(dirfd, path);
    return REAL(__openat64_2)(dirfd, path, flags);
}
