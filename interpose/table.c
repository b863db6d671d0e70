/*
 * table.c: the one table of interposed functions.  Each row is one of our
 * exported definitions (preload/exports.map; test/e2e/check_interpose_table.sh
 * checks that the two lists are the same), the module it feeds, and where
 * its interposer keeps the real function when an attach must point that at
 * the program's own definition (interpose.h).  Under LD_PRELOAD the loader
 * binds the names; after an attach interpose.c redirects the program's
 * slots of the same names.  A new interposer is one definition, one line in
 * exports.map and one row here.
 *
 * Signal-safe: yes (constant data).
 */
#include <stddef.h>

#include "../preload/real.h"
#include "interpose.h"

const pe_interpose_row_t pe_interpose_rows[] = {
    /* heap */
    {"malloc", "heap", (void **)&pe_real.malloc},
    {"calloc", "heap", (void **)&pe_real.calloc},
    {"realloc", "heap", (void **)&pe_real.realloc},
    {"free", "heap", (void **)&pe_real.free},
    {"posix_memalign", "heap", (void **)&pe_real.posix_memalign},
    {"aligned_alloc", "heap", (void **)&pe_real.aligned_alloc},
    {"memalign", "heap", (void **)&pe_real.memalign},
    {"valloc", "heap", (void **)&pe_real.valloc},
    {"pvalloc", "heap", (void **)&pe_real.pvalloc},
    {"reallocarray", "heap", (void **)&pe_real.reallocarray},
    {"malloc_usable_size", "heap", (void **)&pe_real.malloc_usable_size},
    {"__libc_malloc", "heap", NULL},
    {"__libc_calloc", "heap", NULL},
    {"__libc_realloc", "heap", NULL},
    {"__libc_free", "heap", NULL},
    {"__libc_memalign", "heap", NULL},
    {"__libc_valloc", "heap", NULL},
    {"__libc_pvalloc", "heap", NULL},
    {"free_sized", "heap", NULL},
    {"free_aligned_sized", "heap", NULL},
    /* contention */
    {"pthread_mutex_lock", "contention", (void **)&pe_real.pthread_mutex_lock},
    {"pthread_mutex_timedlock", "contention", (void **)&pe_real.pthread_mutex_timedlock},
    {"pthread_rwlock_rdlock", "contention", (void **)&pe_real.pthread_rwlock_rdlock},
    {"pthread_rwlock_wrlock", "contention", (void **)&pe_real.pthread_rwlock_wrlock},
    {"pthread_cond_wait", "contention", (void **)&pe_real.pthread_cond_wait},
    {"pthread_cond_timedwait", "contention", (void **)&pe_real.pthread_cond_timedwait},
    /* events */
    {"pthread_create", "events", NULL},
    {"dlopen", "events", NULL},
    {"dlmopen", "events", NULL},
    {"dlclose", "events", NULL},
    {"dl_iterate_phdr", "events", NULL},
    {"execve", "events", NULL},
    {"execv", "events", NULL},
    {"execvp", "events", NULL},
    {"execvpe", "events", NULL},
    {"execl", "events", NULL},
    {"execlp", "events", NULL},
    {"execle", "events", NULL},
    {"fexecve", "events", NULL},
    {"execveat", "events", NULL},
    {"_Fork", "events", NULL},
    {"posix_spawn", "events", NULL},
    {"posix_spawnp", "events", NULL},
    {"system", "events", NULL},
    {"popen", "events", NULL},
    /* signals */
    {"sigaction", "signals", NULL},
    {"signal", "signals", NULL},
    {"bsd_signal", "signals", NULL},
    {"ssignal", "signals", NULL},
    {"sysv_signal", "signals", NULL},
    {"__sysv_signal", "signals", NULL},
    {"sigset", "signals", NULL},
    /* fd */
    {"close", "fd", NULL},
    {"close_range", "fd", NULL},
    {"closefrom", "fd", NULL},
    {"dup2", "fd", NULL},
    {"dup3", "fd", NULL},
    {"socket", "fd", NULL},
    {"accept", "fd", NULL},
    {"accept4", "fd", NULL},
    {"pipe", "fd", NULL},
    {"pipe2", "fd", NULL},
    {"poll", "fd", NULL},
    {"read", "fd", NULL},
    {"write", "fd", NULL},
    {"recv", "fd", NULL},
    {"send", "fd", NULL},
    {"shutdown", "fd", NULL},
    {"setsockopt", "fd", NULL},
    {"getsockopt", "fd", NULL},
    {"getsockname", "fd", NULL},
    {"getpeername", "fd", NULL},
    {"fcntl64", "fd", NULL},
    /* tree */
    {"epoll_wait", "tree", NULL},
    {"epoll_pwait", "tree", NULL},
    {"select", "tree", NULL},
    {"pselect", "tree", NULL},
    {"ppoll", "tree", NULL},
    {"recvfrom", "tree", NULL},
    {"recvmsg", "tree", NULL},
    /* alone */
    {"unshare", "alone", NULL},
    {"setns", "alone", NULL},
    {"prctl", "alone", NULL},
    {"syscall", "alone", NULL},
    {"open", "alone", NULL},
    {"open64", "alone", NULL},
    {"openat", "alone", NULL},
    {"openat64", "alone", NULL},
    {"__open_2", "alone", NULL},
    {"__open64_2", "alone", NULL},
    {"__openat64_2", "alone", NULL},
    {"opendir", "alone", NULL},
    {"stat", "alone", NULL},
    {"stat64", "alone", NULL},
    {"lstat", "alone", NULL},
    {"lstat64", "alone", NULL},
    {"fstatat", "alone", NULL},
    {"fstatat64", "alone", NULL},
    {"statx", "alone", NULL},
};
const int pe_interpose_nrows = (int)PE_ARRAY_SIZE(pe_interpose_rows);
