/*
 * p_cpu_dlopen: a thread dlopen/dlclose-s libraries in a loop (and calls into
 * them; most are not otherwise loaded, so each dlclose unmaps) while the main
 * thread burns CPU in dl_main_work; for argv[1] seconds.
 * Prints "cycles=N done".  Profiling it at 1000 Hz must neither crash nor hang.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int stop;
static volatile unsigned long sink;
static long cycles;

/* Libraries the preloaded library does not pull in, so each dlclose really unmaps. */
static const char *const libs[][2] = {
    {"libbz2.so.1.0", "BZ2_bzlibVersion"},     {"liblzma.so.5", "lzma_version_string"},
    {"libexpat.so.1", "XML_ExpatVersion"},     {"libzstd.so.1", "ZSTD_versionString"},
    {"libffi.so.8", "ffi_get_struct_offsets"}, {"libz.so.1", "zlibVersion"},
};

static void *
loader(void *unused)
{
    while (!stop) {
        for (unsigned i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
            void *h = dlopen(libs[i][0], RTLD_NOW | RTLD_LOCAL);
            if (!h)
                continue;
            const char *(*f)(void) = (const char *(*)(void))dlsym(h, libs[i][1]);
            if (f && i != 4)
                for (int k = 0; k < 200; k++)
                    sink += (unsigned long)f()[0];
            dlclose(h);
            cycles++;
        }
    }
    return NULL;
}

__attribute__((noinline)) void
dl_main_work(void)
{
    unsigned long x = sink;
    for (int i = 0; i < 100000; i++)
        x = x * 6364136223846793005ul + 1;
    sink = x;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    struct timespec t0, t;
    pthread_t th;

    pthread_create(&th, NULL, loader, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        dl_main_work();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    stop = 1;
    pthread_join(th, NULL);
    printf("cycles=%s done\n", cycles > 0 ? "many" : "0");
    return 0;
}
