/*
 * bench_thread_shim: a preloadable object whose constructor starts one
 * thread that sleeps forever, and nothing else.  It measures what any
 * in-process server costs a single-threaded program before it serves
 * anything: glibc takes its locks and atomic paths (malloc's arena lock,
 * stdio's locks) only once a second thread exists.  scripts/bench_perl.sh
 * runs perl with it beside our library.
 */
#include <pthread.h>
#include <unistd.h>

static void *
sleeper(void *unused)
{
    (void)unused;
    for (;;)
        pause();
    return NULL;
}

__attribute__((constructor)) static void
start_sleeper(void)
{
    pthread_t t;

    if (pthread_create(&t, NULL, sleeper, NULL) == 0)
        pthread_detach(t);
}
