/*
 * bench_mutex_shim.c: the floor for scripts/bench_mutex.sh: a bare interposer
 * of the lock calls the library interposes, each forwarding to the next
 * definition (glibc's) through a pointer resolved once, and doing nothing else:
 * what any interposer costs before it does any work.  Built as a shared object
 * by that script.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

static int (*next_mutex_lock)(pthread_mutex_t *);
static int (*next_mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*next_rdlock)(pthread_rwlock_t *);
static int (*next_wrlock)(pthread_rwlock_t *);

__attribute__((constructor)) static void
resolve(void)
{
    next_mutex_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    next_mutex_timedlock = (int (*)(pthread_mutex_t *, const struct timespec *))dlsym(
        RTLD_NEXT, "pthread_mutex_timedlock");
    next_rdlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
    next_wrlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
}

__attribute__((visibility("default"))) int
pthread_mutex_lock(pthread_mutex_t *m)
{
    return next_mutex_lock(m);
}
__attribute__((visibility("default"))) int
pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    return next_mutex_timedlock(m, abstime);
}
__attribute__((visibility("default"))) int
pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return next_rdlock(l);
}
__attribute__((visibility("default"))) int
pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return next_wrlock(l);
}
