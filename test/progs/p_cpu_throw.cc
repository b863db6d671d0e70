// p_cpu_throw: throws and catches C++ exceptions in a loop for argv[1]
// seconds on two threads, and checks that _Unwind_RaiseException resolves to
// the program's own unwinder (libgcc_s), not libunwind.  Prints
// "caught=ok unwinder=<file>" and exits 0, or says what went wrong and exits 1.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdexcept>
#include <thread>

static volatile unsigned long sink;

__attribute__((noinline)) static void
thrower(int d)
{
    if (d == 0)
        throw std::runtime_error("boom");
    thrower(d - 1);
    sink++;
}

static long
loop(double seconds)
{
    struct timespec t0, t;
    long caught = 0, tries = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 100; i++, tries++) {
            try {
                thrower(i % 20);
            } catch (const std::runtime_error &e) {
                caught += strcmp(e.what(), "boom") == 0;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    return caught == tries ? 0 : 1;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    long bad2 = 0;
    std::thread t([&] { bad2 = loop(seconds); });
    long bad = loop(seconds);
    t.join();
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
    const char *file = f && dladdr(f, &info) ? info.dli_fname : "?";
    if (bad || bad2) {
        printf("caught=WRONG unwinder=%s\n", file);
        return 1;
    }
    if (strstr(file, "libunwind")) {
        printf("caught=ok unwinder=%s (libunwind in the global scope)\n", file);
        return 1;
    }
    printf("caught=ok unwinder=%s\n", strstr(file, "libgcc_s") ? "libgcc_s" : file);
    return 0;
}
