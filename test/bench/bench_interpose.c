/*
 * bench_interpose.c: what an attach's redirection costs (scripts/bench_interpose.sh).
 *
 *   bench_interpose slots DIR N ROUNDS   dlopen DIR/libK.bench.so for K < N, then
 *                                        ROUNDS times: redirect every slot of the
 *                                        table's names in those objects (got.c) and
 *                                        put them back; prints objects, slots, pages
 *                                        opened, and the median ms of each
 *   bench_interpose pair N [GOFILE]      N malloc(64)+free pairs on one thread, after
 *                                        GOFILE exists (the attach); prints ns per pair
 *
 * The slots walk covers the generated objects only (got.c's test filter), whose
 * functions are never called while redirected: the targets' "ours" are not callable.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "interpose/interpose_int.h"

static double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int
slots(const char *dir, int n, int rounds)
{
    static pe_ip_target_t t[256];
    double *tp = calloc((size_t)rounds, sizeof(double)),
           *tr = calloc((size_t)rounds, sizeof(double));
    pe_ip_got_t g;
    int nt = 0, nslots = 0;
    char path[512];

    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof(path), "%s/lib%d.bench.so", dir, k);
        if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
    }
    for (int k = 0; k < pe_interpose_nrows && nt < 256; k++) {
        void *def = dlsym(RTLD_DEFAULT, pe_interpose_rows[k].name);
        if (def)
            t[nt++] = (pe_ip_target_t){pe_interpose_rows[k].name, (uintptr_t)def,
                                       (uintptr_t)def ^ 0x10, pe_ip_got_version(def)};
    }
    for (int r = 0; r < rounds; r++) {
        double a, b, c;
        if (pe_ip_got_init(&g, t, nt) < 0)
            return 1;
        g.only = ".bench.so";
        a = now_ms();
        nslots = pe_ip_got_patch(&g);
        b = now_ms();
        (void)pe_ip_got_restore(&g);
        c = now_ms();
        tp[r] = b - a;
        tr[r] = c - b;
        if (r + 1 < rounds)
            pe_ip_got_free(&g);
    }
    qsort(tp, (size_t)rounds, sizeof(double), cmp);
    qsort(tr, (size_t)rounds, sizeof(double), cmp);
    printf("objects %llu slots %d pages %llu redirect_ms %.2f restore_ms %.2f\n",
           (unsigned long long)g.objects, nslots, (unsigned long long)g.pages, tp[rounds / 2],
           tr[rounds / 2]);
    return 0;
}

static int
pair(long n, const char *go)
{
    double a, b;

    printf("waiting\n");
    fflush(stdout);
    while (go && access(go, F_OK) != 0)
        usleep(2000);
    for (long i = 0; i < n / 10; i++) /* warm up */
        free(malloc(64));
    a = now_ms();
    for (long i = 0; i < n; i++) {
        void *volatile p = malloc(64);
        free(p);
    }
    b = now_ms();
    printf("ns_per_pair %.2f\n", (b - a) * 1e6 / (double)n);
    fflush(stdout);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "slots"))
        return slots(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc >= 3 && !strcmp(argv[1], "pair"))
        return pair(atol(argv[2]), argc > 3 ? argv[3] : NULL);
    fprintf(stderr, "usage: bench_interpose slots DIR N ROUNDS | pair N [GOFILE]\n");
    return 2;
}
