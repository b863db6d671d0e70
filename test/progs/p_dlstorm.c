/*
 * p_dlstorm: a dlopen/dlclose storm.  For argv[1] seconds (default 5), two
 * threads each loop: dlopen one of a few Debian libraries, call a function of
 * it, make it allocate (bzip2 compresses a buffer through malloc), dlclose.
 * Prints "dlstorm ok" (deterministic), the cycle count to stderr, and exits 0;
 * any failure is printed and exits 1.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
    const char *lib, *fn;
} libs[] = {
    {"libbz2.so.1.0", "BZ2_bzlibVersion"},     {"liblzma.so.5", "lzma_version_string"},
    {"libexpat.so.1", "XML_ExpatVersion"},     {"libzstd.so.1", "ZSTD_versionString"},
    {"libsqlite3.so.0", "sqlite3_libversion"},
};
#define NLIBS (sizeof(libs) / sizeof(libs[0]))

static double deadline;
static long cycles[2];
static int failed;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* bzip2 a buffer through the dlopen'd library: its mallocs get sampled. */
static int
bz_roundtrip(void *h)
{
    int (*comp)(char *, unsigned *, char *, unsigned, int, int, int) = (int (*)(
        char *, unsigned *, char *, unsigned, int, int, int))dlsym(h, "BZ2_bzBuffToBuffCompress");
    char in[4096], out[8192];
    unsigned outlen = sizeof(out);

    memset(in, 'x', sizeof(in));
    return comp && comp(out, &outlen, in, sizeof(in), 1, 0, 0) == 0 && outlen > 0 ? 0 : -1;
}

static void *
storm(void *arg)
{
    long id = (long)arg, k = 0;

    while (now() < deadline) {
        size_t i = (size_t)(k++ + id) % NLIBS;
        void *h = dlopen(libs[i].lib, RTLD_NOW | RTLD_LOCAL);
        const char *(*fn)(void);

        if (!h) {
            fprintf(stderr, "p_dlstorm: %s\n", dlerror());
            failed = 1;
            break;
        }
        fn = (const char *(*)(void))dlsym(h, libs[i].fn);
        if (!fn || !fn() || (i == 0 && bz_roundtrip(h))) {
            fprintf(stderr, "p_dlstorm: %s in %s failed\n", libs[i].fn, libs[i].lib);
            failed = 1;
        }
        dlclose(h);
        cycles[id]++;
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    pthread_t t[2];
    long i;

    deadline = now() + (argc > 1 ? atof(argv[1]) : 5);
    for (i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, storm, (void *)i);
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "p_dlstorm: %ld cycles\n", cycles[0] + cycles[1]);
    if (failed || cycles[0] + cycles[1] == 0) {
        printf("dlstorm FAILED\n");
        return 1;
    }
    printf("dlstorm ok\n");
    return 0;
}
