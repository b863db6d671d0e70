/*
 * gzip.c: a sink that gzips (RFC 1952) everything written to it into another
 * sink, through one 32 KiB output buffer, so a profile of any size is
 * compressed without being held in memory.  zlib allocates its ~256 KiB state
 * with malloc; we only run on the library's own threads, where that is fine.
 * One state is kept for the next stream instead of freed: freeing ~300 KiB
 * at the top of a thread's arena made glibc trim it (madvise), which flushes
 * the TLB of every CPU the program runs on, an interrupt to each of its
 * threads on every scrape, and the next stream faulted the pages back in
 * (most of a small profile's cost, measured by scripts/bench_fleet.sh).
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../preload/log.h"
#include "sink.h"

#define GZ_BUF 32768
/* windowBits 15 plus 16 asks zlib for a gzip header and trailer. */
#define GZ_WINDOW_BITS (15 + 16)
#define GZ_MEM_LEVEL 8

/* Hand the filled part of the output buffer to the next sink. */
static int
gz_drain(pe_gzip_t *gz)
{
    z_stream *zs = gz->zs;
    size_t have = GZ_BUF - zs->avail_out;
    int err;

    if (have == 0)
        return 0;
    err = gz->out->write(gz->out, gz->buf, have);
    zs->next_out = gz->buf;
    zs->avail_out = GZ_BUF;
    return err;
}

static int
gz_write(pe_sink_t *sink, const void *buf, size_t len)
{
    pe_gzip_t *gz = (pe_gzip_t *)sink;
    z_stream *zs = gz->zs;
    const unsigned char *in = buf;
    uInt chunk;
    int zerr, err;

    if (sink->err)
        return sink->err;
    /* avail_in is a uInt: feed huge writes in slices. */
    while (len > 0) {
        chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
        zs->next_in = (unsigned char *)in;
        zs->avail_in = chunk;
        while (zs->avail_in > 0) {
            zerr = deflate(zs, Z_NO_FLUSH);
            /* With output room left, no progress would loop forever: fail instead. */
            if (zerr != Z_OK && (zerr != Z_BUF_ERROR || zs->avail_out != 0)) {
                pe_log_warn("gzip: deflate failed (%d)", zerr);
                sink->err = -EIO;
                return sink->err;
            }
            if (zs->avail_out == 0) {
                err = gz_drain(gz);
                if (err) {
                    sink->err = err;
                    return err;
                }
            }
        }
        in += chunk;
        len -= chunk;
    }
    return 0;
}

/* The kept state: owned by whoever set spare_busy (a stream, or nobody). */
static int spare_busy;
static z_stream *spare_zs;
static unsigned char *spare_buf;
static int spare_level;

static void
gz_free(z_stream *zs, unsigned char *buf)
{
    if (zs)
        deflateEnd(zs);
    free(zs);
    free(buf);
}

int
pe_gzip_open(pe_gzip_t *gz, pe_sink_t *out, int level)
{
    z_stream *zs;
    int zerr;

    memset(gz, 0, sizeof(*gz));
    gz->sink.write = gz_write;
    gz->out = out;
    gz->level = level;
    if (level < Z_DEFAULT_COMPRESSION || level > Z_BEST_COMPRESSION) {
        gz->sink.err = -EINVAL;
        return -EINVAL;
    }
    if (!__atomic_exchange_n(&spare_busy, 1, __ATOMIC_ACQUIRE)) {
        gz->spare = 1;
        if (spare_zs && spare_level == level && deflateReset(spare_zs) == Z_OK) {
            zs = spare_zs;
            gz->buf = spare_buf;
            goto ready;
        }
        gz_free(spare_zs, spare_buf); /* another level (or a reset that failed) */
        spare_zs = NULL;
        spare_buf = NULL;
    }
    zs = calloc(1, sizeof(*zs));
    gz->buf = malloc(GZ_BUF);
    if (!zs || !gz->buf)
        goto err_free;
    zerr = deflateInit2(zs, level, Z_DEFLATED, GZ_WINDOW_BITS, GZ_MEM_LEVEL, Z_DEFAULT_STRATEGY);
    if (zerr != Z_OK)
        goto err_free; /* Z_MEM_ERROR; bad arguments were ruled out above */
ready:
    zs->next_out = gz->buf;
    zs->avail_out = GZ_BUF;
    gz->zs = zs;
    return 0;

err_free:
    free(gz->buf);
    free(zs); /* deflateInit2 failed: nothing of zlib's to end */
    gz->buf = NULL;
    if (gz->spare)
        __atomic_store_n(&spare_busy, 0, __ATOMIC_RELEASE);
    gz->spare = 0;
    gz->sink.err = -ENOMEM;
    return -ENOMEM;
}

int
pe_gzip_close(pe_gzip_t *gz)
{
    z_stream *zs = gz->zs;
    int err = gz->sink.err;
    int zerr;

    if (!zs)
        return err ? err : -EINVAL;
    /* Finish only if the stream is still good; a broken one just gets freed. */
    while (!err) {
        zs->next_in = NULL;
        zs->avail_in = 0;
        zerr = deflate(zs, Z_FINISH);
        if (zerr == Z_STREAM_END) {
            err = gz_drain(gz);
            break;
        }
        /* Z_OK/Z_BUF_ERROR only mean "more room please"; anything else is a bug. */
        if ((zerr != Z_OK && zerr != Z_BUF_ERROR) || zs->avail_out != 0) {
            pe_log_warn("gzip: deflate(Z_FINISH) failed (%d)", zerr);
            err = -EIO;
            break;
        }
        err = gz_drain(gz);
    }
    if (gz->spare) { /* kept as it is; the next open resets it */
        spare_zs = zs;
        spare_buf = gz->buf;
        spare_level = gz->level;
        gz->spare = 0;
        __atomic_store_n(&spare_busy, 0, __ATOMIC_RELEASE);
    } else {
        gz_free(zs, gz->buf);
    }
    gz->zs = NULL;
    gz->buf = NULL;
    if (err && !gz->sink.err)
        gz->sink.err = err;
    return err;
}
