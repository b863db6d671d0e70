/*
 * p_heap_diff.c: a differential check of the malloc family's semantics.
 * Runs a fixed pseudo-random sequence of calls (malloc, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * free, malloc_usable_size) with ordinary, zero, odd, invalid and huge sizes
 * and alignments, and prints one line per call: what it answered (NULL or
 * not, the error), whether the alignment held, whether malloc_usable_size
 * covers the request, and whether contents survived realloc.  Addresses are
 * never printed, so the trace of a run under the library must equal the
 * trace of a run without it, byte for byte.
 *   p_heap_diff [N] [foreign] N calls (default 200000); foreign (another
 *                             allocator behind us) skips valloc and pvalloc,
 *                             which jemalloc lacks, and the errno of an
 *                             impossible realloc, which jemalloc leaves unset
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 512

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int foreign;

static uint64_t
next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t
pick_size(void)
{
    switch (next() % 16) {
    case 0: return 0;
    case 1: return SIZE_MAX - (next() % 64); /* must fail */
    case 2: /* glibc refuses 1 TiB; jemalloc grants it (address space only),
               so there 256 MiB: hundreds of TiB-sized blocks would exhaust
               the address space at a point that depends on size classes */
        return foreign ? (size_t)1 << 28 : (size_t)1 << 40;
    case 3: return 65536 + next() % (1 << 20);
    default: return next() % 2048;
    }
}

static size_t
pick_align(void)
{
    switch (next() % 12) {
    case 0: return 0;
    case 1: return 3;
    case 2: return 4;
    case 3: return 24;
    case 4: return (size_t)1 << (12 + next() % 4);
    default: return (size_t)8 << (next() % 6);
    }
}

typedef struct {
    unsigned char *p;
    size_t n;
    unsigned char fill;
} slot_t;

static slot_t slot[SLOTS];

static void
fill(slot_t *s)
{
    size_t k = s->n < 256 ? s->n : 256;

    s->fill = (unsigned char)next();
    memset(s->p, s->fill, k);
    if (s->n > 256)
        memset(s->p + s->n - 64, s->fill, 64);
}

static int
intact(const slot_t *s, size_t upto)
{
    size_t k = upto < 256 ? upto : 256;

    for (size_t i = 0; i < k; i++)
        if (s->p[i] != s->fill)
            return 0;
    return 1;
}

int
main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 200000;
    foreign = argc > 2 && !strcmp(argv[2], "foreign");
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);

    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash shows the call it died in */
    for (long c = 0; c < calls; c++) {
        slot_t *s = &slot[next() % SLOTS];
        size_t n = pick_size(), a = pick_align(), m;
        int op = (int)(next() % 12), r = 0, e;
        void *q = (void *)1;

        if (s->p && op < 7) { /* free or realloc what is there first */
            if (op == 6) {
                unsigned char *np;
                size_t keep = s->n < n ? s->n : n;
                errno = 0;
                np = realloc(s->p, n);
                e = errno;
                if (np || n == 0) {
                    printf("realloc %zu %d %d\n", n, np != NULL,
                           np ? intact(&(slot_t){np, n, s->fill}, keep) : 1);
                    s->p = np;
                    s->n = n;
                    if (np)
                        fill(s);
                } else {
                    printf("realloc %zu fail %d %d\n", n, foreign ? 0 : e, intact(s, s->n));
                }
                continue;
            }
            if (!intact(s, s->n))
                printf("corrupt\n");
            free(s->p);
            s->p = NULL;
        }
        if (s->p)
            continue;
        errno = 0;
        switch (op % 10) {
        case 0: q = malloc(n); break;
        case 1:
            m = 1 + next() % 8;
            if (n > 1024 && n < ((size_t)1 << 32))
                n /= m;
            q = calloc(n, m);
            n = q ? n * m : 0;
            break;
        case 2: q = reallocarray(NULL, n, 1); break;
        case 3: r = posix_memalign(&q, a, n); break;
        case 4: q = aligned_alloc(a, n); break;
        case 5: q = memalign(a, n); break;
        case 6:
            if (foreign)
                continue;
            q = valloc(n);
            a = ps;
            break;
        case 7:
            if (foreign)
                continue;
            q = pvalloc(n);
            a = ps;
            break;
        default: q = malloc(n); break;
        }
        e = errno;
        if (op % 10 == 3) {
            printf("posix_memalign %zu %zu -> %d %d\n", a, n, r, r == 0 && q != NULL);
            if (r != 0)
                continue;
        } else {
            printf("op%d %zu %zu -> %d %d\n", op % 10, a, n, q != NULL, q ? 0 : e);
            if (!q)
                continue;
        }
        if (op % 10 == 1)
            for (size_t i = 0; i < (n < 4096 ? n : 4096); i++)
                if (((unsigned char *)q)[i]) {
                    printf("calloc not zero\n");
                    break;
                }
        /* (a block of 0 bytes has no alignment to keep: jemalloc does not) */
        if (n && a && !(a & (a - 1)) && ((uintptr_t)q & (a - 1)) && op % 10 >= 3 && op % 10 <= 7)
            printf("misaligned %zu\n", a);
        if (malloc_usable_size(q) < n)
            printf("usable short\n");
        s->p = q;
        s->n = n;
        fill(s);
    }
    for (int i = 0; i < SLOTS; i++)
        free(slot[i].p);
    printf("done\n");
    return 0;
}
