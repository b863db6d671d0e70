/*
 * p_attach_blocks.c: blocks made before an attach, used after it
 * (e2e_attach_blocks.sh).  Builds N blocks (default 1,000,000) of every
 * kind: small malloc and calloc, big enough for glibc to mmap them, and
 * memalign, posix_memalign, aligned_alloc, valloc, pvalloc blocks (valloc
 * instead under an allocator without its own pvalloc, jemalloc); each
 * filled with a pattern of its index.  Prints "ready", then 8 threads walk
 * their share of the blocks over and over: check the pattern and
 * malloc_usable_size, realloc (grow or shrink; the pattern kept up to the
 * smaller size), or free and make it again of another kind, while the test
 * attaches and detaches.  When stdin closes the threads stop, every block is
 * checked once more and freed; "checksum ok ROUNDS" and status 0, or the
 * first bad block and status 1.
 *
 * usage: p_attach_blocks [N]
 */
#include <dlfcn.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 8

typedef struct blk_s {
    unsigned char *p;
    uint32_t size;
    uint32_t gen; /* bumped when the block is made again */
} blk_t;

static blk_t *blk;
static long nblk;
static volatile int stop;
static volatile int failed;
static int have_pvalloc; /* the allocator's own (jemalloc has none: glibc's would be mixed in) */

static uint64_t
mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static unsigned char
pat(long i, uint32_t gen, uint32_t k)
{
    return (unsigned char)(mix(((uint64_t)i << 20) ^ gen ^ ((uint64_t)k << 44)) >> 7);
}

/* The pattern lives in the first and last 32 bytes and every 4 KiB. */
static void
fill(long i)
{
    blk_t *b = &blk[i];

    for (uint32_t k = 0; k < b->size; k += (k < 32 || k + 32 >= b->size) ? 1 : 4096)
        b->p[k] = pat(i, b->gen, k);
    if (b->size)
        b->p[b->size - 1] = pat(i, b->gen, b->size - 1);
}

static int
check(long i, uint32_t upto)
{
    blk_t *b = &blk[i];

    for (uint32_t k = 0; k < upto; k += (k < 32 || k + 32 >= upto) ? 1 : 4096)
        if (!(k + 32 >= upto && upto < b->size) && b->p[k] != pat(i, b->gen, k))
            return 0; /* (a shrunk block's new tail was not written: not read) */
    return 1;
}

/* Make block i of a kind chosen by r. */
static void
make(long i, uint64_t r)
{
    blk_t *b = &blk[i];
    void *p = NULL;
    uint32_t sz = 16 + (uint32_t)(r >> 8) % 240;
    int kind = (int)(r % 1000);

    if (kind == 0 && (r >> 50) % 4 == 0) { /* mmapped by glibc (over its 128 KiB threshold) */
        sz = 160000 + (uint32_t)(r >> 20) % 100000;
        p = malloc(sz);
    } else if (kind < 6) {
        sz = 4096;
        p = aligned_alloc(4096, sz);
    } else if (kind < 14) {
        p = valloc(sz);
    } else if (kind < 16) {
        p = have_pvalloc ? pvalloc(sz) : valloc(sz);
    } else if (kind < 80) {
        p = memalign(64, sz);
    } else if (kind < 140) {
        if (posix_memalign(&p, 256, sz) != 0)
            p = NULL;
    } else if (kind < 300) {
        p = calloc(1, sz);
    } else {
        p = malloc(sz);
    }
    if (!p) {
        fprintf(stderr, "allocation of %u failed\n", sz);
        exit(2);
    }
    b->p = p;
    b->size = sz;
    b->gen++;
    fill(i);
}

static void
bad(long i, const char *what)
{
    if (!__atomic_exchange_n(&failed, 1, __ATOMIC_SEQ_CST))
        fprintf(stderr, "block %ld (%u bytes, gen %u): %s\n", i, blk[i].size, blk[i].gen, what);
}

static void *
worker(void *arg)
{
    long t = (long)arg, rounds = 0;
    uint64_t r = mix((uint64_t)t + 1);

    while (!stop && !failed) {
        for (long i = t; i < nblk && !stop; i += THREADS) {
            blk_t *b = &blk[i];
            r = mix(r + (uint64_t)i);
            if (!check(i, b->size))
                bad(i, "pattern changed");
            if (malloc_usable_size(b->p) < b->size)
                bad(i, "malloc_usable_size below its size");
            switch (r % 8) {
            case 0: /* free, make again */
                free(b->p);
                make(i, r >> 3);
                break;
            case 1:
            case 2: { /* realloc: the pattern is kept up to the smaller size */
                uint32_t nsz = (r % 4096 == 1) ? 150000 + (uint32_t)(r >> 40) % 50000
                                               : 16 + (uint32_t)(r >> 24) % 400;
                unsigned char *q = realloc(b->p, nsz);
                uint32_t keep = nsz < b->size ? nsz : b->size;
                if (!q) {
                    bad(i, "realloc failed");
                    break;
                }
                b->p = q;
                if (!check(i, keep))
                    bad(i, "pattern lost in realloc");
                b->size = nsz;
                fill(i);
                break;
            }
            default: break;
            }
        }
        rounds++;
    }
    return (void *)rounds;
}

int
main(int argc, char **argv)
{
    pthread_t th[THREADS];
    long rounds = 0;
    char buf[64];

    Dl_info a, b;

    nblk = argc > 1 ? atol(argv[1]) : 1000000;
    have_pvalloc = dladdr(dlsym(RTLD_DEFAULT, "pvalloc"), &a) &&
                   dladdr(dlsym(RTLD_DEFAULT, "malloc"), &b) && a.dli_fbase == b.dli_fbase &&
                   !getenv("P_BLOCKS_NO_PVALLOC"); /* (valgrind's aborts) */
    if (!(blk = calloc((size_t)nblk, sizeof(*blk))))
        return 2;
    for (long i = 0; i < nblk; i++)
        make(i, mix((uint64_t)i * 7919 + 1));
    printf("ready\n");
    fflush(stdout);
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    while (read(0, buf, sizeof(buf)) > 0)
        ;
    stop = 1;
    for (long t = 0; t < THREADS; t++) {
        void *n;
        pthread_join(th[t], &n);
        rounds += (long)n;
    }
    for (long i = 0; i < nblk && !failed; i++) {
        if (!check(i, blk[i].size))
            bad(i, "pattern changed (final check)");
        free(blk[i].p);
    }
    free(blk);
    if (failed)
        return 1;
    printf("checksum ok %ld\n", rounds);
    return 0;
}
