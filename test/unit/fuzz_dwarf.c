/*
 * fuzz_dwarf: libFuzzer target for symbols/dwarf.c (`make fuzz-dwarf`).  The
 * input is a whole ELF file: it is written to a temp file, opened with
 * pe_dw_open and looked up at a fixed spread of addresses plus a few taken
 * from the input itself, under a small budget, then everything is dropped.
 * test/unit/u_dwarf.c replays test/unit/corpus_dwarf/ through this same
 * function (also under ASan+UBSan), so every crasher kept there is a test.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/dwarf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_path[64];

static int
fuzz_write(const uint8_t *data, size_t size)
{
    int fd;

    if (!fuzz_path[0]) {
        strcpy(fuzz_path, "/tmp/fuzz_dwarf.XXXXXX");
        fd = mkstemp(fuzz_path);
    } else {
        fd = open(fuzz_path, O_WRONLY | O_TRUNC);
    }
    if (fd < 0)
        return -1;
    while (size > 0) {
        ssize_t n = write(fd, data, size);

        if (n <= 0) {
            close(fd);
            return -1;
        }
        data += n;
        size -= (size_t)n;
    }
    close(fd);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pe_dw_frame_t fr[16];
    pe_dw_obj_t *o;
    uint64_t a;
    size_t i;

    if (fuzz_write(data, size) < 0)
        return 0;
    pe_dw_set_limits(64u << 20, 0);
    o = pe_dw_open(fuzz_path, "", "/nonexistent/debug");
    for (i = 0; o && i < 48; i++) {
        if (i < 40) {
            a = 0x1000 + i * 0x61;
        } else {
            a = 0;
            if (size >= 8 * (i - 39))
                memcpy(&a, data + size - 8 * (i - 39), 8);
        }
        pe_dw_lookup(o, a, fr, (int)(i % 16) + 1);
    }
    pe_dw_trim();
    return 0;
}
