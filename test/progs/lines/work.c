/*
 * work.c: CPU work whose frames are known by construction, for e2e_names: static
 * functions, always_inline helpers nested three deep (one from a header), and
 * time in libc (qsort, memmove, strlen), for SECONDS (argv[1]).  Built by the
 * test itself with gcc -O2 -g, clang -O2 -g, gcc -O2 -g -gz.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "work_inl.h"

static volatile unsigned sink;

static inline __attribute__((always_inline)) unsigned
inner_mix(unsigned x)
{
    return hdr_scramble(x) + (x << 3);
}

static inline __attribute__((always_inline)) unsigned
middle_mix(unsigned x)
{
    unsigned s = 0;

    for (int i = 0; i < 8; i++)
        s += inner_mix(x + (unsigned)i);
    return s;
}

static __attribute__((noinline)) unsigned
burn_inlined(unsigned n)
{
    unsigned s = 0;

    for (unsigned i = 0; i < n; i++)
        s += middle_mix(i);
    return s;
}

static int
cmp_u(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

    return x < y ? -1 : x > y;
}

static __attribute__((noinline)) void
burn_libc(unsigned *v, size_t n, char *buf, size_t len)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (unsigned)rand();
    qsort(v, n, sizeof(*v), cmp_u);
    for (int k = 0; k < 50; k++) {
        memmove(buf + 1, buf, len - 1);
        sink += (unsigned)strlen(buf);
    }
}

int
main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 5;
    size_t n = 100000, len = 1 << 16;
    unsigned *v = malloc(n * sizeof(*v));
    char *buf = malloc(len);
    struct timespec t0, t;

    if (!v || !buf)
        return 1;
    memset(buf, 'a', len - 1);
    buf[len - 1] = '\0';
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        /* an argument the compiler cannot know, so the call is not hoisted */
        sink += burn_inlined(200000 + (sink & 1));
        burn_libc(v, n, buf, len);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    printf("done %u\n", sink);
    return 0;
}
