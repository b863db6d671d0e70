/*
 * real.h: the real libc/pthread/dl functions behind our interposers.
 *
 * pe_real_init() resolves everything with dlsym(RTLD_NEXT) once, from the
 * first interposed call or the constructor, whichever comes first.  While it
 * runs, allocations are served from a static bootstrap pool; pe_real_owns()
 * recognises those pointers so free/realloc never hand them to libc.  When
 * the next malloc is not glibc's own (__libc_malloc), pe_real_foreign_malloc says so.
 *
 * Signal-safe: the pointers, once resolved, are plain loads.
 */
#ifndef PE_REAL_H
#define PE_REAL_H

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>

#include "pe.h"

typedef struct pe_real_s {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    size_t (*malloc_usable_size)(void *);
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    void *(*dlopen)(const char *, int);
    int (*dlclose)(void *);
    int (*dl_iterate_phdr)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
    pid_t (*fork)(void);
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
    sighandler_t (*signal)(int, sighandler_t);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    int (*pthread_mutex_lock)(pthread_mutex_t *);
    int (*pthread_mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*pthread_rwlock_rdlock)(pthread_rwlock_t *);
    int (*pthread_rwlock_wrlock)(pthread_rwlock_t *);
    int (*pthread_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*pthread_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
} pe_real_t;

extern pe_real_t pe_real;
/* 1 once pe_real is complete. */
extern int pe_real_ready;

/* Resolve pe_real; safe to call repeatedly and recursively (bootstrap pool). */
void pe_real_init(void);

/* Bootstrap allocation while resolving; NULL when the pool is exhausted. */
PE_SIGSAFE void *pe_real_boot_alloc(size_t size, size_t align);
/* 1 if p came from the bootstrap pool (never pass it to libc). */
PE_SIGSAFE int pe_real_owns(const void *p);

/* 1 if the program's malloc is someone else's (e.g. jemalloc), not glibc's. */
extern int pe_real_foreign_malloc;

#endif /* PE_REAL_H */
