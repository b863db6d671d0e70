/*
 * fuzz_demangle: libFuzzer target for symbols/demangle.c (`make fuzz-demangle`).  The
 * input is a symbol name: it goes through pe_dem_demangle with a big and a small buffer
 * (C++ through libstdc++'s __cxa_demangle, dlopen'd here as the host would have it; Rust
 * legacy and v0 through our decoders), and the input and what came out go through
 * pe_dem_shorten, also with both buffers.  Every output must be NUL-terminated inside its
 * buffer and leave the bytes after it alone; a cut result must start the whole one.
 * Seeds: test/unit/corpus_dem/.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
    return 0;
}

/* buf[len] written by the function, guard bytes after it untouched. */
static void
check(const char *ret, const char *buf, size_t len)
{
    size_t k;

    if (ret && ret != buf)
        __builtin_trap();
    if (!memchr(buf, '\0', len))
        __builtin_trap();
    for (k = 0; k < 8; k++) {
        if (buf[len + k] != (char)0x5A)
            __builtin_trap();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char big[8192 + 8], small[24 + 8], shortb[8192 + 8], shorts[7 + 8];
    char *s = malloc(size + 1);
    const char *r, *rs;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    memset(big, 0x5A, sizeof(big));
    memset(small, 0x5A, sizeof(small));
    r = pe_dem_demangle(s, big, sizeof(big) - 8);
    check(r, big, sizeof(big) - 8);
    rs = pe_dem_demangle(s, small, sizeof(small) - 8);
    check(rs, small, sizeof(small) - 8);
    if (r && rs && strncmp(r, rs, strlen(rs)))
        __builtin_trap();

    memset(shortb, 0x5A, sizeof(shortb));
    memset(shorts, 0x5A, sizeof(shorts));
    check(pe_dem_shorten(s, shortb, sizeof(shortb) - 8), shortb, sizeof(shortb) - 8);
    check(pe_dem_shorten(s, shorts, sizeof(shorts) - 8), shorts, sizeof(shorts) - 8);
    if (r) {
        memset(shortb, 0x5A, sizeof(shortb));
        check(pe_dem_shorten(r, shortb, sizeof(shortb) - 8), shortb, sizeof(shortb) - 8);
        memset(shorts, 0x5A, sizeof(shorts));
        check(pe_dem_shorten(r, shorts, sizeof(shorts) - 8), shorts, sizeof(shorts) - 8);
    }
    free(s);
    return 0;
}
