/*
 * process_hooks.c: the process-level interposers: pthread_create (thread registry,
 * thread-start event), dlopen/dlmopen/dlclose/dl_iterate_phdr (keep the loader out of
 * our signal handler), the exec family (execveat too), posix_spawn, system
 * and popen (their events: no profiling signal crosses them, a program's
 * SIG_IGN does), and sigaction/signal (our threads never change a
 * disposition; SIGPROF stays ours while a profile runs).  fork needs no
 * interposer: events.c hears of every fork through pthread_atfork; _Fork,
 * which runs no fork handlers, has one.  Each wrapper is thin and forwards to
 * the real function; the logic lives in events.c and the modules.
 */
#include <alloca.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../interpose/interpose.h"
#include "../sampler/peek.h"
#include "../sampler/sampler.h"
#include "../stack/unwind.h"
#include "events.h"
#include "guard.h"
#include "init.h"
#include "loadgate.h"
#include "real.h"
#include "threads.h"

extern char **environ;

/* ---- pthread_create ------------------------------------------------------- */

typedef struct tramp_s {
    void *(*start)(void *);
    void *arg;
    int internal;
    int ncreate;
    uintptr_t create_pcs[PE_THREADS_CREATE_FRAMES];
} tramp_t;

/*
 * Runs first on every thread created through pthread_create.  It ends in a
 * tail call (no local has its address taken), so its frame is gone by the time
 * the program's start routine runs: profiles show start_thread -> start.
 */
static void *
thread_trampoline(void *p)
{
    tramp_t *t = p;
    void *(*start)(void *) = t->start;
    void *arg = t->arg;

    pe_tls.internal = t->internal;
    pe_threads_register(t->create_pcs, t->ncreate);
    free(t); /* through heap/: one of our threads never calls glibc's (own.c) */
    if (!pe_tls.internal && pe_init_active())
        pe_event_thread_start();
    return start(arg);
}

PE_EXPORT int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
    tramp_t *t;
    int err;

    pe_real_init();
    if (!pe_init_active() && !pe_tls.internal)
        return pe_real.pthread_create(thread, attr, start, arg);
    pe_guard_enter();
    t = malloc(sizeof(*t)); /* (guarded: not sampled; a thread of ours: heap/own.c) */
    if (!t) {
        pe_guard_exit();
        return pe_real.pthread_create(thread, attr, start, arg);
    }
    t->start = start;
    t->arg = arg;
    t->internal = pe_tls.internal; /* threads of our threads (civetweb's) are ours */
    t->ncreate = t->internal ? 0 : pe_unwind_here(t->create_pcs, PE_THREADS_CREATE_FRAMES, 0);
    pe_guard_exit();
    err = t->internal ? pe_threads_create_small(thread, attr, thread_trampoline, t)
                      : pe_real.pthread_create(thread, attr, thread_trampoline, t);
    if (err)
        free(t);
    return err;
}

/* ---- the dynamic loader ------------------------------------------------------ */

PE_EXPORT void *
dlopen(const char *file, int mode)
{
    void *h;

    pe_real_init();
    pe_tls.in_loader++;
    h = pe_real.dlopen(file, mode);
    pe_tls.in_loader--;
    if (h && pe_init_active())
        pe_unwind_objects_changed();
    if (h)
        pe_interpose_loaded(); /* after an attach: its slots (and its dependencies') */
    return h;
}

/* dlmopen: the same, for a new namespace (resolved on first use: only this
   uses it).  An object there binds to its own namespace's libc; after an
   attach its slots are walked but, bound to another definition than the
   program's, left alone (interpose/got.c). */
static void *(*real_dlmopen)(Lmid_t, const char *, int);

PE_EXPORT void *
dlmopen(Lmid_t ns, const char *file, int mode)
{
    void *(*real)(Lmid_t, const char *, int) = __atomic_load_n(&real_dlmopen, __ATOMIC_ACQUIRE);
    void *h;

    if (!real) {
        pe_real_init();
        real = (void *(*)(Lmid_t, const char *, int))dlsym(RTLD_NEXT, "dlmopen");
        __atomic_store_n(&real_dlmopen, real, __ATOMIC_RELEASE);
        if (!real)
            return NULL;
    }
    pe_tls.in_loader++;
    h = real(ns, file, mode);
    pe_tls.in_loader--;
    if (h && pe_init_active())
        pe_unwind_objects_changed();
    if (h)
        pe_interpose_loaded();
    return h;
}

PE_EXPORT int
dlclose(void *handle)
{
    int rc;

    pe_real_init();
    /* Waits until no handler still reads the loaded-object snapshot. */
    pe_unwind_dlclose_begin();
    pe_tls.in_loader++;
    rc = pe_real.dlclose(handle);
    pe_tls.in_loader--;
    if (pe_init_active())
        pe_unwind_objects_changed();
    pe_unwind_dlclose_end();
    pe_interpose_unloaded(); /* after an attach: forget the slots of what left */
    return rc;
}

PE_EXPORT int
dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    if (pe_tls.in_unwind)
        return pe_unwind_iterate_snapshot(cb, data);
    /* Our own walks (symbols, libunwind outside a handler) stay out of forks. */
    if (pe_tls.internal || pe_tls.guard)
        return pe_loadgate_iterate(cb, data);
    pe_real_init();
    return pe_real.dl_iterate_phdr(cb, data);
}

/* ---- exec and spawn --------------------------------------------------------------- */

static int
exec_failed(pe_event_exec_t *x)
{
    int saved = errno;

    pe_event_exec_failed(x);
    errno = saved;
    return -1;
}

PE_EXPORT int
execve(const char *path, char *const argv[], char *const envp[])
{
    pe_event_exec_t x;

    pe_real_init();
    pe_event_exec_before(&x);
    pe_real.execve(path, argv, envp);
    return exec_failed(&x);
}

PE_EXPORT int
execvpe(const char *file, char *const argv[], char *const envp[])
{
    pe_event_exec_t x;

    pe_real_init();
    pe_event_exec_before(&x);
    pe_real.execvpe(file, argv, envp);
    return exec_failed(&x);
}

PE_EXPORT int
fexecve(int fd, char *const argv[], char *const envp[])
{
    pe_event_exec_t x;

    pe_real_init();
    pe_event_exec_before(&x);
    pe_real.fexecve(fd, argv, envp);
    return exec_failed(&x);
}

static int (*real_execveat)(int, const char *, char *const[], char *const[], int);
static pid_t (*real_fork_raw)(void);
static void *next_symbol(void *slot, const char *name);

PE_EXPORT int
execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    int (*real)(int, const char *, char *const[], char *const[], int) =
        next_symbol(&real_execveat, "execveat");
    pe_event_exec_t x;

    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    pe_event_exec_before(&x);
    real(dirfd, path, argv, envp, flags);
    return exec_failed(&x);
}

/* glibc's async-signal-safe fork: it runs no fork handlers, so the child's
   event is sent from here. */
PE_EXPORT pid_t
_Fork(void)
{
    pid_t (*real)(void) = next_symbol(&real_fork_raw, "_Fork");
    pid_t pid;
    int saved;

    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    pid = real();
    if (pid == 0) {
        saved = errno;
        pe_event_fork_child();
        errno = saved;
    }
    return pid;
}

PE_EXPORT int
execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

PE_EXPORT int
execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/*
 * The execl family: gather the variadic list into an argv array on the
 * stack, sized to the arguments as glibc's own execl does (a fixed maximum
 * would take tens of KiB from threads that may have small stacks).
 */
static size_t
count_args(const char *arg0, va_list ap)
{
    va_list c;
    size_t n = 1;

    va_copy(c, ap);
    if (arg0)
        while (va_arg(c, char *))
            n++;
    va_end(c);
    return n;
}

static void
fill_args(const char *arg0, va_list ap, char **argv, size_t n, char ***envp)
{
    size_t i;

    argv[0] = (char *)arg0;
    for (i = 1; i < n; i++)
        argv[i] = va_arg(ap, char *);
    argv[n] = NULL;
    if (arg0)
        (void)va_arg(ap, char *); /* the terminating NULL */
    if (envp)
        *envp = va_arg(ap, char **);
}

#define GATHER(arg, argv, envp)                                                                    \
    do {                                                                                           \
        va_list ap_;                                                                               \
        size_t n_;                                                                                 \
        va_start(ap_, arg);                                                                        \
        n_ = count_args(arg, ap_);                                                                 \
        argv = alloca((n_ + 1) * sizeof(char *));                                                  \
        fill_args(arg, ap_, argv, n_, envp);                                                       \
        va_end(ap_);                                                                               \
    } while (0)

PE_EXPORT int
execl(const char *path, const char *arg, ...)
{
    char **argv;

    GATHER(arg, argv, NULL);
    return execve(path, argv, environ);
}

PE_EXPORT int
execlp(const char *file, const char *arg, ...)
{
    char **argv;

    GATHER(arg, argv, NULL);
    return execvpe(file, argv, environ);
}

PE_EXPORT int
execle(const char *path, const char *arg, ...)
{
    char **argv, **envp = NULL;

    GATHER(arg, argv, &envp);
    return execve(path, argv, envp);
}

/*
 * posix_spawn, posix_spawnp, system, popen: glibc's spawn child resets every
 * handled signal to SIG_DFL and execs through its internal execve, past our
 * exec wrappers; the spawn event hands the program's SIG_IGN on meanwhile.
 * system and popen spawn through glibc's internal posix_spawn, hence their
 * own wrappers.  Resolved here, on first use, not in pe_real: only these use them.
 */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
static spawn_fn real_posix_spawn, real_posix_spawnp;
static int (*real_system)(const char *);
static FILE *(*real_popen)(const char *, const char *);

static void *
next_symbol(void *slot, const char *name)
{
    void **sp = slot, *p = __atomic_load_n(sp, __ATOMIC_ACQUIRE);

    if (!p) {
        pe_real_init();
        p = dlsym(RTLD_NEXT, name);
        __atomic_store_n(sp, p, __ATOMIC_RELEASE);
    }
    return p;
}

void
pe_hooks_resolve(void)
{
    /* Now, outside any signal: _Fork may be called from a signal handler,
       where dlsym is not safe. */
    (void)next_symbol(&real_fork_raw, "_Fork");
    (void)next_symbol(&real_execveat, "execveat");
}

PE_EXPORT int
posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    spawn_fn real = next_symbol(&real_posix_spawn, "posix_spawn");
    int rc;

    if (!real)
        return ENOSYS;
    pe_event_spawn_begin();
    rc = real(pid, path, fa, attr, argv, envp);
    pe_event_spawn_end();
    return rc;
}

PE_EXPORT int
posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
             const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    spawn_fn real = next_symbol(&real_posix_spawnp, "posix_spawnp");
    int rc;

    if (!real)
        return ENOSYS;
    pe_event_spawn_begin();
    rc = real(pid, file, fa, attr, argv, envp);
    pe_event_spawn_end();
    return rc;
}

PE_EXPORT int
system(const char *command)
{
    int (*real)(const char *) = next_symbol(&real_system, "system");
    int rc, saved;

    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    /* The whole call: glibc's system() spawns and then waits; the window
       cannot end at the spawn without rewriting it. */
    pe_event_spawn_begin();
    rc = real(command);
    saved = errno;
    pe_event_spawn_end();
    errno = saved;
    return rc;
}

PE_EXPORT FILE *
popen(const char *command, const char *type)
{
    FILE *(*real)(const char *, const char *) = next_symbol(&real_popen, "popen");
    FILE *f;
    int saved;

    if (!real) {
        errno = ENOSYS;
        return NULL;
    }
    pe_event_spawn_begin();
    f = real(command, type);
    saved = errno;
    pe_event_spawn_end();
    errno = saved;
    return f;
}

/* ---- signal dispositions ------------------------------------------------------- */

PE_EXPORT int
sigaction(int signum, const struct sigaction *act, struct sigaction *old)
{
    int rc;

    pe_real_init();
    /* civetweb's threads set SIGPIPE to SIG_IGN as they start: a process-wide
       change the program would see (and pass on through exec).  Our threads
       keep every signal blocked and send with MSG_NOSIGNAL, so they need none. */
    if (pe_tls.internal && act)
        return pe_real.sigaction(signum, NULL, old);
    if (pe_sampler_sigaction(signum, act, old))
        return 0;
    if (pe_peek_sigaction(signum, act, old, &rc)) /* PROFEP_PEEK_SIGNAL: ours hidden */
        return rc;
    return pe_real.sigaction(signum, act, old);
}

PE_EXPORT sighandler_t
signal(int signum, sighandler_t handler)
{
    struct sigaction sa, old;

    /* glibc's signal() has BSD semantics: SA_RESTART, handler not reset.
       SIG_ERR is no handler: glibc refuses it (the kernel would take it as one). */
    if (handler == SIG_ERR || signum <= 0 || signum >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, signum);
    if (sigaction(signum, &sa, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}

/*
 * The older interfaces to the same thing.  glibc implements them with its
 * internal sigaction, which would bypass ours: a program calling
 * sigset(SIGPROF, SIG_DFL) while a profile runs would then be killed by our
 * next timer signal.  Each is rebuilt here on the interposed sigaction, with
 * glibc's semantics.
 */
/* Declared by <signal.h> only under old feature macros. */
sighandler_t bsd_signal(int signum, sighandler_t handler);

PE_EXPORT sighandler_t
bsd_signal(int signum, sighandler_t handler)
{
    return signal(signum, handler);
}

PE_EXPORT sighandler_t
ssignal(int signum, sighandler_t handler)
{
    return signal(signum, handler);
}

/* System V semantics: the handler is reset on delivery and not blocked while it runs. */
static sighandler_t
sysv_signal_impl(int signum, sighandler_t handler)
{
    struct sigaction sa, old;

    if (handler == SIG_ERR || signum <= 0 || signum >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    if (sigaction(signum, &sa, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}

PE_EXPORT sighandler_t
sysv_signal(int signum, sighandler_t handler)
{
    return sysv_signal_impl(signum, handler);
}

/* What signal() is under strict X/Open compilation (<signal.h> redirects it). */
PE_EXPORT sighandler_t
__sysv_signal(int signum, sighandler_t handler)
{
    return sysv_signal_impl(signum, handler);
}

PE_EXPORT sighandler_t
sigset(int signum, sighandler_t disp)
{
    struct sigaction sa, old;
    sigset_t set, oset;

    if (disp == SIG_ERR || signum <= 0 || signum >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    sigemptyset(&set);
    sigaddset(&set, signum);
    if (disp == SIG_HOLD) {
        if (sigprocmask(SIG_BLOCK, &set, &oset) < 0)
            return SIG_ERR;
        if (sigismember(&oset, signum))
            return SIG_HOLD;
        if (sigaction(signum, NULL, &old) < 0)
            return SIG_ERR;
        return old.sa_handler;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = disp;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signum, &sa, &old) < 0)
        return SIG_ERR;
    if (sigprocmask(SIG_UNBLOCK, &set, &oset) < 0)
        return SIG_ERR;
    return sigismember(&oset, signum) ? SIG_HOLD : old.sa_handler;
}
