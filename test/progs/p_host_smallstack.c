/* p_host_smallstack: threads with 16 KiB stacks (PTHREAD_STACK_MIN) recurse
 * until HEADROOM bytes are left above the guard page and burn CPU there while
 * sampled at 1000 Hz; one more thread (SIGPROF blocked) allocates at that
 * depth (at PROFEP_HEAP_RATE=1 every call is a sample).  The unused part of
 * each stack is filled with a pattern, first with every signal blocked (the
 * row's own use), then sampled; the difference is what our signal handler
 * (with the kernel's signal frame) and our malloc path took below the row's
 * deepest frame.  Prints them as "figure:" lines; a handler that needed more
 * than the headroom would have hit the guard page (SIGSEGV).
 */
#include <pthread.h>
#include <signal.h>

#include "p_host.h"

#define HEADROOM (getenv("ROW_HEADROOM") ? atoi(getenv("ROW_HEADROOM")) : 6144)
#define PAT 0xA5

static __thread char *lo;
static int spin_use, alloc_use; /* max over the threads; bytes below the row's own */

static void __attribute__((noinline)) fill(char *from, char *to)
{
    for (volatile char *p = from; p < to; p++)
        *p = (char)PAT;
}

static size_t
untouched(void)
{
    size_t n = 0;
    while (lo[n] == (char)PAT)
        n++;
    return n;
}

static void __attribute__((noinline)) bottom(int alloc, double secs)
{
    double end = row_now() + secs;

    while (row_now() < end) {
        if (alloc) {
            for (int i = 0; i < 32; i++) {
                void *p = malloc(16 + (size_t)i * 8);
                if (!p)
                    row_fail("malloc");
                *(volatile char *)p = 1;
                free(p);
            }
        } else {
            for (volatile int i = 0; i < 2000; i++)
                ;
        }
    }
}

static void __attribute__((noinline)) recurse(int alloc, double secs)
{
    volatile char pad[192];

    pad[0] = 1;
    if ((char *)pad - lo > HEADROOM)
        recurse(alloc, secs);
    else
        bottom(alloc, secs);
    pad[1] = pad[0];
}

static void *
small(void *arg)
{
    int alloc = (int)(intptr_t)arg;
    pthread_attr_t a;
    sigset_t all, saved, prof;
    size_t size, own, sampled;
    char here, *top = &here - 1024;
    void *addr;
    int use;

    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &addr, &size))
        row_fail("pthread_getattr_np");
    pthread_attr_destroy(&a);
    lo = addr;
    if (alloc) {
        sigemptyset(&prof);
        sigaddset(&prof, SIGPROF);
        pthread_sigmask(SIG_BLOCK, &prof, NULL);
    }
    /* the row's own use: every signal blocked */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    fill(lo, top);
    recurse(0, 0.2);
    own = untouched();
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    /* sampled */
    fill(lo, top);
    recurse(alloc, 2.5);
    sampled = untouched();
    use = (int)own - (int)sampled;
    if (alloc) {
        if (use > __atomic_load_n(&alloc_use, __ATOMIC_RELAXED))
            __atomic_store_n(&alloc_use, use, __ATOMIC_RELAXED);
    } else if (use > __atomic_load_n(&spin_use, __ATOMIC_RELAXED)) {
        __atomic_store_n(&spin_use, use, __ATOMIC_RELAXED);
    }
    if (sampled == 0)
        row_fail("the stack was used to its last byte");
    return NULL;
}

int
main(void)
{
    pthread_attr_t a;
    pthread_t t[5];

    pthread_attr_init(&a);
    if (pthread_attr_setstacksize(&a, 16384))
        row_fail("setstacksize");
    for (int i = 0; i < 5; i++)
        if (pthread_create(&t[i], &a, small, (void *)(intptr_t)(i == 4)))
            row_fail("pthread_create: %s", strerror(errno));
    for (int i = 0; i < 5; i++)
        pthread_join(t[i], NULL);
    printf("figure: smallstack: %d B left above the guard; below the row's deepest frame "
           "signals took %d B, malloc %d B\n",
           HEADROOM, spin_use, alloc_use);
    row_done();
}
