/*
 * dw_main.c: u_dwarf's test program, C part: static functions, always_inline
 * helpers nested three deep, header helpers, calls into two other units.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dw_inl.h"

static inline __attribute__((always_inline)) unsigned
leaf3(unsigned x)
{
    return dw_hdr_mix(x * 3u + 7u);
}

static inline __attribute__((always_inline)) unsigned
mid2(unsigned x, int i)
{
    unsigned s = 0;

    if (i & 1)
        s += leaf3(x + (unsigned)i);
    else
        s ^= leaf3(x - (unsigned)i);
    return s + dw_hdr_step(x, (unsigned)i);
}

static inline __attribute__((always_inline)) unsigned
top1(unsigned x, int n)
{
    unsigned acc = 0;
    int i;

    for (i = 0; i < n; i++)
        acc += mid2(x + acc, i);
    return acc;
}

static __attribute__((noinline)) unsigned
work_a(unsigned seed, int n)
{
    unsigned v[64];
    int i;

    for (i = 0; i < 64; i++)
        v[i] = top1(seed + (unsigned)i, n & 7);
    return dw_util_sum(v, 64);
}

static __attribute__((noinline)) unsigned
work_b(const char *s, int n)
{
    unsigned h = dw_util_hash(s);

    while (n-- > 0)
        h = mid2(h, n) ^ leaf3(h);
    return h;
}

static unsigned
work_c(unsigned x)
{
    switch (x % 5) {
    case 0: return top1(x, 3);
    case 1: return mid2(x, 5) + work_b("abc", 2);
    case 2: return leaf3(x) * 9u;
    case 3: return dw_hdr_step(x, 11);
    default: return work_a(x, 4);
    }
}

int
main(int argc, char **argv)
{
    unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 1u;
    unsigned r = 0;
    int i;

    for (i = 0; i < 100; i++) {
        r += work_a(seed + (unsigned)i, i);
        r ^= work_b(argv[0], i & 15);
        r += work_c(r);
        r += dw_cxx_entry(r, i & 31);
    }
    printf("%u\n", r);
    return 0;
}
