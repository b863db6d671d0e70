/*
 * u_nomalloc: the signal path allocates nothing.  This binary defines malloc
 * itself (counting calls made while a flag says "in a handler") and unwinds
 * from a signal handler on fresh threads, primed as pthread_create's
 * trampoline primes them and not primed at all (a thread found through
 * /proc): a handler that allocates can deadlock on the lock of the malloc it
 * interrupted.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe_test.h"
#include "preload/guard.h"
#include "preload/real.h"
#include "stack/unwind.h"

#ifdef __SANITIZE_ADDRESS__
/* ASan owns malloc; this test must own it instead. */
int
main(void)
{
    puts("u_nomalloc: skipped under ASan (it defines malloc itself)");
    return 77;
}
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static volatile int in_handler;
static int handler_allocs;
static int frames;

void *
malloc(size_t n)
{
    if (in_handler)
        handler_allocs++;
    return __libc_malloc(n);
}

void *
calloc(size_t n, size_t m)
{
    if (in_handler)
        handler_allocs++;
    return __libc_calloc(n, m);
}

void *
realloc(void *p, size_t n)
{
    if (in_handler)
        handler_allocs++;
    return __libc_realloc(p, n);
}

void
free(void *p)
{
    __libc_free(p);
}

static void
on_signal(int sig, siginfo_t *si, void *uc)
{
    uintptr_t pcs[PE_MAX_FRAMES];

    in_handler = 1;
    frames = pe_unwind_signal(uc, pcs, PE_MAX_FRAMES);
    in_handler = 0;
}

__attribute__((noinline)) static void
deep(int n)
{
    if (n > 0) {
        deep(n - 1);
        __asm__ volatile("" ::: "memory");
        return;
    }
    pthread_kill(pthread_self(), SIGUSR2);
}

static void *
thread_main(void *primed)
{
    if (primed)
        pe_unwind_prime_thread();
    deep(20); /* the thread's first unwind happens in the handler */
    deep(20);
    return NULL;
}

int
main(void)
{
    struct sigaction sa;
    pthread_t t;

    pe_real_init();
    CHECK(pe_unwind_init() == 0);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);

    handler_allocs = 0;
    pthread_create(&t, NULL, thread_main, (void *)1);
    pthread_join(t, NULL);
    CHECKF(handler_allocs == 0, "primed thread: %d allocations in the handler", handler_allocs);
    CHECKF(frames > 20, "primed thread: %d frames", frames);

    handler_allocs = 0;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    CHECKF(handler_allocs == 0, "unprimed thread: %d allocations in the handler", handler_allocs);
    CHECKF(frames >= 1, "unprimed thread: %d frames", frames);
    return pe_test_done();
}
#endif
