/*
 * alone_tasks.c: the interposers in front of the ways a program looks at its
 * own thread list (/proc/self/task by open, openat, opendir, stat, fstatat,
 * statx and their 64-bit and _FORTIFY_SOURCE names): a zygote or sandbox
 * that checks it has one thread finds only its own, as we step aside first
 * (alone.c).  Every other path goes straight through, at the cost of a
 * compare or two.
 *
 * Signal-safe: no.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alone_int.h"
#include "pe.h"
#include "threads.h"

/* ---- the real functions ---------------------------------------------------------------- */

static struct {
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

#define REAL(f) PE_ALONE_REAL(real, f)

/* Before main, so that no first use (our own open(), from a signal handler
   of ours) resolves one: dlsym is not async-signal-safe. */
__attribute__((constructor(102))) static void
alone_tasks_init(void)
{
    (void)REAL(open);
    (void)REAL(openat);
    (void)REAL(opendir);
}

/* ---- the thread list ------------------------------------------------------------------ */

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
    if (__builtin_expect(names_own_tasks(dirfd, path), 0) && pe_alone_program_call() &&
        pe_threads_count(2) <= 1)
        pe_alone_step_aside("looks at its own thread list (/proc/self/task) with no other "
                            "thread of its own");
}

/* ---- the interposers ------------------------------------------------------------------------ */

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
