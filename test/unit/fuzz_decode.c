/*
 * fuzz_decode: libFuzzer target for proto/decode.c (`make fuzz-decode`), the
 * decoder of profiles other processes send (pid=all).  Input: one mode byte,
 * then the bytes.  Mode bit 0 set: the bytes are given as the gzip stream
 * itself (the inflate's edges: not gzip, cut short, too large); clear: they
 * are a serialized profile, gzipped here first, so the fuzzer works on the
 * protobuf.  Bits 1-2: how many labels the caller adds (0-2).  Each input is
 * added twice to one merge (the second goes through the merging path), the
 * result resolved and read back as an encoder would, then freed.
 * test/unit/u_decode.c replays test/unit/corpus_decode/ through this same
 * function (also under ASan+UBSan), so every crasher kept there is a test.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "proto/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data gzipped into a malloc'd buffer (*out, *outlen); 0 or -1. */
static int
fuzz_gzip(const uint8_t *data, size_t size, uint8_t **out, size_t *outlen)
{
    z_stream z;
    size_t cap = compressBound((uLong)size) + 64;
    int rc;

    memset(&z, 0, sizeof(z));
    if (!(*out = malloc(cap)))
        return -1;
    if (deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(*out);
        return -1;
    }
    z.next_in = (uint8_t *)data;
    z.avail_in = (uInt)size;
    z.next_out = *out;
    z.avail_out = (uInt)cap;
    rc = deflate(&z, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(*out);
        return -1;
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const pe_prof_label_t extra[2] = {{"pid", NULL, 42, NULL},
                                             {"process", "worker", 0, NULL}};
    pe_prof_merge_t m;
    pe_prof_sample_t sm;
    uint8_t *gz = NULL;
    size_t gzlen, total = 0;
    int mode, i, j;

    if (size < 1)
        return 0;
    mode = data[0];
    data++;
    size--;
    if (mode & 1) {
        gz = (uint8_t *)data;
        gzlen = size;
    } else if (fuzz_gzip(data, size, &gz, &gzlen) < 0) {
        return 0;
    }
    memset(&m, 0, sizeof(m));
    for (i = 0; i < 2; i++)
        pe_prof_merge_add_gz(&m, gz, gzlen, 4u << 20, extra,
                             ((mode >> 1) & 3) > 2 ? 2 : (mode >> 1) & 3);
    if (m.prof && pe_prof_resolve(m.prof, 0) == 0) {
        for (i = 0; i < pe_prof_nsamples(m.prof); i++) {
            pe_prof_sample(m.prof, i, &sm);
            for (j = 0; j < sm.nframes; j++)
                total += strlen(sm.frames[j]->name) + strlen(sm.frames[j]->label);
        }
    }
    pe_prof_free(m.prof);
    if (!(mode & 1))
        free(gz);
    return total == (size_t)-1; /* keep the reads */
}
