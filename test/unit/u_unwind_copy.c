/*
 * u_unwind_copy.c: pe_unwind_copy, the perf engine's walk over a copy of a
 * stack (stack/unwind.h).  A 30-deep recursion copies its own stack (8 KiB
 * from its stack pointer, with its ip, sp and bp) and the walk over the copy
 * finds every recursion frame up to main; a copy cut short ends as DEEPER;
 * garbage copies never fault and end as CUT or DEEPER.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../stack/cfi.h"
#include "../../stack/unwind.h"
#include "pe_test.h"

#define DEPTH 30
#define COPY 8192

static uint8_t copy[COPY];
static uintptr_t ip, sp, bp, stack_hi;
static size_t copied;
static volatile long sink;

/* (not instrumented: the copy reads other frames, redzones and all, as the kernel does) */
__attribute__((noinline, no_sanitize_address)) static void
take(void)
{
    /* our own registers now, and the stack above sp (ip: a label here) */
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                     : "=r"(ip), "=r"(sp), "=r"(bp));
    copied = stack_hi - sp < COPY ? stack_hi - sp : COPY; /* as the kernel: up to the top */
    for (size_t i = 0; i < copied; i++)
        copy[i] = ((const volatile uint8_t *)sp)[i];
}

__attribute__((noinline)) static int
recurse(int d)
{
    if (d > 0) {
        int r = recurse(d - 1);
        sink += r;
        return r + 1;
    }
    take();
    return 0;
}

/* the recursion on a thread of ours, whose stack bounds we know */
static void *
thread_main(void *unused)
{
    pthread_attr_t a;
    void *lo;
    size_t size;

    (void)unused;
    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &lo, &size);
    pthread_attr_destroy(&a);
    stack_hi = (uintptr_t)lo + size;
    recurse(DEPTH);
    return NULL;
}

/* a pc within recurse (its size is not known here: 1 KiB holds it, ASan or not) */
static int
in_recurse(uintptr_t pc)
{
    return pc > (uintptr_t)recurse && pc < (uintptr_t)recurse + 1024;
}

int
main(void)
{
    uintptr_t pcs[PE_MAX_FRAMES];
    int n, how, seen = 0, reach_top = 0;
    pthread_t t;

    CHECK(pe_unwind_init() == 0);
    pe_unwind_warm();
    CHECK(pe_cfi_init() == 0);
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    n = pe_unwind_copy(ip, sp, bp, copy, copied, pcs, PE_MAX_FRAMES, &how);
    for (int i = 0; i < n; i++) {
        seen += in_recurse(pcs[i]);
        reach_top |= pcs[i] > (uintptr_t)thread_main && pcs[i] < (uintptr_t)thread_main + 4096;
    }
    CHECKF(n >= DEPTH + 3, "%d frames", n);
    CHECK(pcs[0] == ip);
    CHECKF(seen >= DEPTH + 1, "%d in recurse", seen);
    CHECK(reach_top);
    CHECKF(how == PE_UNWIND_COPY_WHOLE, "how %d", how);

    /* a copy too short for the recursion: cut at its end, said so */
    n = pe_unwind_copy(ip, sp, bp, copy, 256, pcs, PE_MAX_FRAMES, &how);
    CHECK(n >= 1 && n < DEPTH);
    CHECK(how == PE_UNWIND_COPY_DEEPER);

    /* garbage: never a read outside the copy (ASan builds check), some end */
    srand(7);
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < COPY; i++)
            copy[i] = (uint8_t)rand();
        n = pe_unwind_copy(ip + (uintptr_t)(rand() % 64), sp, sp + (uintptr_t)(rand() % COPY), copy,
                           COPY, pcs, PE_MAX_FRAMES, &how);
        CHECK(n >= 1 && n <= PE_MAX_FRAMES);
    }
    return pe_test_done();
}
