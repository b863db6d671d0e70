/*
 * p_heap_stacks.c: many distinct allocation stacks.  walk() recurses DEPTH
 * levels through one of two functions per level, chosen by the bits of i, so
 * each i in [0, 2^DEPTH) allocates (and keeps) a 64-byte block from its own
 * call stack: 2^17 = 131072 stacks by default, four times the stack table.
 *
 * usage: p_heap_stacks [DEPTH]
 * stdout: stacks N, ready (then waits for stdin to close)
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void **kept;
static void walk_a(int d, unsigned i, unsigned k);
static void walk_b(int d, unsigned i, unsigned k);

__attribute__((noinline)) static void
leaf(unsigned k)
{
    kept[k] = malloc(64);
    if (kept[k])
        memset(kept[k], 7, 64);
}

__attribute__((noinline)) static void
walk_a(int d, unsigned i, unsigned k)
{
    if (d == 0)
        leaf(k);
    else if (i & 1)
        walk_b(d - 1, i >> 1, k);
    else
        walk_a(d - 1, i >> 1, k);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

__attribute__((noinline)) static void
walk_b(int d, unsigned i, unsigned k)
{
    if (d == 0)
        leaf(k);
    else if (i & 1)
        walk_b(d - 1, i >> 1, k);
    else
        walk_a(d - 1, i >> 1, k);
    __asm__ volatile("" ::: "memory");
}

int
main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 17;
    unsigned n = 1u << depth;
    struct pollfd pfd = {0, POLLIN, 0};
    char c;

    kept = calloc(n, sizeof(void *));
    for (unsigned i = 0; i < n; i++)
        walk_a(depth, i, i);
    printf("stacks %u\nready\n", n);
    fflush(stdout);
    while (poll(&pfd, 1, -1) < 0)
        ;
    while (read(0, &c, 1) > 0)
        ;
    for (unsigned i = 0; i < n; i++)
        free(kept[i]);
    free(kept);
    return 0;
}
