// p_heap_new.cc: C++ new/delete reach malloc/free through libstdc++, so the
// heap profile shows operator new's frame, then the caller: site_new here,
// with 1 GiB allocated by `new char[]` and 128 MiB of it kept live.
// Prints "new_bytes N", "live_bytes N", "ready"; waits for stdin to close.
#include <poll.h>
#include <cstdio>
#include <cstdint>
#include <vector>

static uint64_t rng = 88172645463325252ull;
static uint64_t next() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

__attribute__((noinline)) char *site_new(size_t n) { return new char[n]; }

int main() {
    unsigned long long bytes = 0, live = 0;
    std::vector<char *> keep;
    keep.reserve(1 << 16);
    while (bytes < (1ull << 30)) {
        size_t n = 16 + next() % 65536;
        char *p = site_new(n);
        p[0] = 1;
        bytes += n;
        if (live < (128ull << 20)) {
            keep.push_back(p);
            live += n;
        } else {
            delete[] p;
        }
    }
    std::printf("new_bytes %llu\nlive_bytes %llu\nsemantics_ok 1\nready\n", bytes, live);
    std::fflush(stdout);
    struct pollfd pfd = {0, POLLIN, 0};
    poll(&pfd, 1, 60000);
    for (char *p : keep) delete[] p;
    return 0;
}
