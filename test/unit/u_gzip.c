/*
 * u_gzip.c: unit tests for sink/sink.c and sink/gzip.c: round trips through
 * zlib's own inflate (gzip mode), writes of every size around the 32 KiB
 * buffer, the empty stream, error propagation from a failing downstream sink,
 * the membuf/fd sinks with long printf lines, the buffering sink (what it
 * gathers, what goes straight through, the first error kept), and the zlib
 * state kept from one stream to the next (not freed, so glibc does not trim
 * and fault it back on every scrape; a concurrent stream gets its own).
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "pe_test.h"
#include "sink/sink.h"

/* Inflate a gzip member into a malloc'd buffer; returns its length or -1. */
/* Bytes in use in glibc's heap.  Under ASan the blocks are ASan's and
   mallinfo2 says 0: the "kept" checks then hold trivially, and the ones that
   need growth are skipped (glibc_heap). */
#ifdef __SANITIZE_ADDRESS__
static const int glibc_heap = 0;
#else
static const int glibc_heap = 1;
#endif

static size_t
in_use(void)
{
    return mallinfo2().uordblks;
}

/* Half text, half xorshift noise, so deflate's output really crosses 32 KiB. */
static unsigned char *
make_input(size_t n)
{
    unsigned char *b = malloc(n);
    uint64_t x = 88172645463325252ULL;
    size_t i;

    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (i / 4096) % 2 ? (unsigned char)x : (unsigned char)("profile "[i % 8]);
    }
    return b;
}

static void
test_roundtrip(size_t n, size_t chunk, int level)
{
    unsigned char *in = make_input(n), *back = NULL;
    pe_membuf_t mb;
    pe_gzip_t gz;
    size_t off, k;
    long got;
    int err = 0;

    pe_membuf_init(&mb);
    CHECK(pe_gzip_open(&gz, &mb.sink, level) == 0);
    for (off = 0; off < n && !err; off += k) {
        k = n - off < chunk ? n - off : chunk;
        err = gz.sink.write(&gz.sink, in + off, k);
    }
    CHECK(err == 0);
    CHECK(pe_gzip_close(&gz) == 0);
    CHECK(mb.len >= 18); /* gzip header + trailer */
    CHECK(mb.len > 2 && (unsigned char)mb.data[0] == 0x1f && (unsigned char)mb.data[1] == 0x8b);
    got = pe_test_gunzip(mb.data, mb.len, &back);
    CHECKF(got == (long)n, "n=%zu chunk=%zu: inflated %ld bytes", n, chunk, got);
    CHECK(got == (long)n && memcmp(in, back, n) == 0);
    free(back);
    free(in);
    pe_membuf_free(&mb);
}

/* A downstream sink that fails on its second write. */
typedef struct failing_s {
    pe_sink_t sink;
    int writes;
} failing_t;

static int
failing_write(pe_sink_t *sink, const void *buf, size_t len)
{
    failing_t *f = (failing_t *)sink;

    return ++f->writes >= 2 ? -EPIPE : 0;
}

static void
test_errors(void)
{
    failing_t f = {.sink.write = failing_write};
    unsigned char *in = make_input(1 << 20);
    pe_membuf_t mb;
    pe_gzip_t gz;
    int err = 0, i;

    pe_membuf_init(&mb);
    CHECK(pe_gzip_open(&gz, &mb.sink, 12) == -EINVAL);
    CHECK(pe_gzip_close(&gz) == -EINVAL);

    CHECK(pe_gzip_open(&gz, &f.sink, 1) == 0);
    for (i = 0; i < 16 && !err; i++)
        err = gz.sink.write(&gz.sink, in + i * 65536, 65536);
    CHECKF(err == -EPIPE, "err %d", err);
    /* Sticky: later writes and close report the first error. */
    CHECK(gz.sink.write(&gz.sink, in, 10) == -EPIPE);
    CHECK(pe_sink_put(&gz.sink, "x") == -EPIPE);
    CHECK(pe_gzip_close(&gz) == -EPIPE);

    /* The error can also surface only in close's final flush. */
    f.writes = 0;
    CHECK(pe_gzip_open(&gz, &f.sink, 6) == 0);
    CHECK(gz.sink.write(&gz.sink, in, 1 << 20) == 0 || f.writes >= 2);
    CHECK(pe_gzip_close(&gz) == -EPIPE);
    free(in);
    pe_membuf_free(&mb);
}

static void
test_sinks(void)
{
    char big[3000], *back = NULL;
    unsigned char *gzback = NULL;
    pe_membuf_t mb, gzmb;
    pe_fdsink_t fs;
    pe_gzip_t gz;
    int fds[2];
    ssize_t n;
    long got;

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    pe_membuf_init(&mb);
    CHECK(pe_sink_put(&mb.sink, "hello ") == 0);
    CHECK(pe_sink_printf(&mb.sink, "%d %s|%s", 42, "world", big) == 0);
    CHECK(mb.len == 6 + 9 + sizeof(big) - 1);
    CHECK(strncmp(mb.data, "hello 42 world|aaa", 18) == 0);
    CHECK(mb.data[mb.len] == '\0');
    pe_membuf_free(&mb);
    CHECK(mb.data == NULL && mb.len == 0);

    /* An empty gzip stream is still a valid member. */
    pe_membuf_init(&gzmb);
    CHECK(pe_gzip_open(&gz, &gzmb.sink, -1) == 0);
    CHECK(pe_gzip_close(&gz) == 0);
    got = pe_test_gunzip(gzmb.data, gzmb.len, &gzback);
    CHECK(got == 0);
    free(gzback);
    pe_membuf_free(&gzmb);

    CHECK(pipe(fds) == 0);
    pe_fdsink_init(&fs, fds[1]);
    CHECK(pe_sink_printf(&fs.sink, "fd %s\n", "ok") == 0);
    close(fds[1]);
    back = calloc(1, 64);
    n = read(fds[0], back, 63);
    CHECK(n == 6 && strcmp(back, "fd ok\n") == 0);
    close(fds[0]);
    free(back);

    /* A closed descriptor: the error comes back and sticks. */
    pe_fdsink_init(&fs, fds[1]);
    CHECK(pe_sink_put(&fs.sink, "x") == -EBADF);
    CHECK(fs.sink.err == -EBADF);
}

/* Records each write's size downstream; fails from write number fail_at (0: never). */
typedef struct counting_s {
    pe_sink_t sink;
    pe_membuf_t mb;
    size_t sizes[16];
    int n, fail_at;
} counting_t;

static int
counting_write(pe_sink_t *sink, const void *buf, size_t len)
{
    counting_t *c = (counting_t *)sink;

    if (c->fail_at && c->n + 1 >= c->fail_at)
        return -EPIPE;
    if (c->n < 16)
        c->sizes[c->n] = len;
    c->n++;
    return c->mb.sink.write(&c->mb.sink, buf, len);
}

static void
test_bufsink(void)
{
    counting_t c = {.sink.write = counting_write};
    char big[40];
    pe_bufsink_t b;

    memset(big, 'b', sizeof(big));
    pe_membuf_init(&c.mb);
    CHECK(pe_bufsink_open(&b, &c.sink, 16) == 0);
    CHECK(pe_sink_put(&b.sink, "12345") == 0 && pe_sink_put(&b.sink, "67890") == 0);
    CHECK(pe_sink_printf(&b.sink, "%s", "abcde") == 0);
    CHECK(c.n == 0); /* 15 bytes gathered, nothing sent */
    CHECK(pe_sink_put(&b.sink, "XY") == 0);
    CHECKF(c.n == 1 && c.sizes[0] == 15, "n %d size %zu", c.n, c.sizes[0]);
    CHECK(pe_sink_write(&b.sink, big, sizeof(big)) == 0); /* >= cap: flush, then straight on */
    CHECKF(c.n == 3 && c.sizes[1] == 2 && c.sizes[2] == sizeof(big), "n %d", c.n);
    CHECK(pe_sink_put(&b.sink, "end") == 0);
    CHECK(pe_bufsink_close(&b) == 0);
    CHECK(c.n == 4 && c.sizes[3] == 3);
    CHECK(c.mb.len == 15 + 2 + sizeof(big) + 3);
    CHECK(strncmp(c.mb.data, "1234567890abcdeXYbbb", 20) == 0);
    CHECK(strcmp(c.mb.data + c.mb.len - 3, "end") == 0);
    pe_membuf_free(&c.mb);

    /* A failing downstream: the first error sticks, and close reports it. */
    memset(&c, 0, sizeof(c));
    c.sink.write = counting_write;
    c.fail_at = 1;
    pe_membuf_init(&c.mb);
    CHECK(pe_bufsink_open(&b, &c.sink, 16) == 0);
    CHECK(pe_sink_put(&b.sink, "0123456789") == 0);
    CHECK(pe_sink_put(&b.sink, "0123456789") == -EPIPE);
    CHECK(b.sink.err == -EPIPE && c.sink.err == -EPIPE);
    CHECK(pe_sink_put(&b.sink, "x") == -EPIPE);
    CHECK(pe_bufsink_close(&b) == -EPIPE);
    pe_membuf_free(&c.mb);

    /* Nothing written: close sends nothing. */
    memset(&c, 0, sizeof(c));
    c.sink.write = counting_write;
    CHECK(pe_bufsink_open(&b, &c.sink, 16) == 0);
    CHECK(pe_bufsink_close(&b) == 0 && c.n == 0);
}

/* Gzip N bytes of make_input through `gz` (already open) into `mb`, close,
   and check the round trip. */
static void
finish_check(pe_gzip_t *gz, pe_membuf_t *mb, size_t n)
{
    unsigned char *in = make_input(n), *back = NULL;
    long got;

    CHECK(gz->sink.write(&gz->sink, in, n) == 0);
    CHECK(pe_gzip_close(gz) == 0);
    got = pe_test_gunzip(mb->data, mb->len, &back);
    CHECKF(got == (long)n && memcmp(in, back, n) == 0, "inflated %ld of %zu", got, n);
    free(back);
    free(in);
}

/* Run first: before it no zlib state exists. */
static void
test_spare(void)
{
    pe_membuf_t m1, m2, m3;
    pe_gzip_t a, b, c;
    size_t base = in_use(), kept;
    void *zs;

    /* After a stream, its state stays (it is not freed and made again). */
    pe_membuf_init(&m1);
    CHECK(pe_gzip_open(&a, &m1.sink, 2) == 0);
    CHECK(a.spare == 1);
    zs = a.zs;
    finish_check(&a, &m1, 300000);
    pe_membuf_free(&m1);
    kept = in_use();
    CHECKF(!glibc_heap || kept > base + 200000, "in use %zu before the first stream, %zu after it",
           base, kept);

    /* The next one reuses it: nothing new allocated. */
    pe_membuf_init(&m1);
    CHECK(pe_gzip_open(&a, &m1.sink, 2) == 0);
    CHECK(a.zs == zs && in_use() < kept + 4096);
    finish_check(&a, &m1, 100000);
    pe_membuf_free(&m1);

    /* Two at once: the second gets its own state, freed at its close. */
    pe_membuf_init(&m1);
    pe_membuf_init(&m2);
    CHECK(pe_gzip_open(&a, &m1.sink, 2) == 0);
    CHECK(a.zs == zs);
    CHECK(pe_gzip_open(&b, &m2.sink, 2) == 0);
    CHECK(b.zs != a.zs && b.spare == 0);
    CHECK(!glibc_heap || in_use() > kept + 200000);
    finish_check(&b, &m2, 70000);
    finish_check(&a, &m1, 50000);
    pe_membuf_free(&m1);
    pe_membuf_free(&m2);
    CHECKF(in_use() < kept + 4096, "%zu in use, %zu kept", in_use(), kept);
    pe_membuf_init(&m3);
    CHECK(pe_gzip_open(&c, &m3.sink, 2) == 0);
    CHECK(c.zs == zs && c.spare == 1);
    finish_check(&c, &m3, 0);
    pe_membuf_free(&m3);

    /* Another level: the kept state is replaced, not added to. */
    pe_membuf_init(&m1);
    CHECK(pe_gzip_open(&a, &m1.sink, 6) == 0);
    finish_check(&a, &m1, 100000);
    pe_membuf_free(&m1);
    CHECKF(in_use() < kept + 65536, "%zu in use, %zu kept", in_use(), kept);
}

int
main(void)
{
    test_spare();
    test_roundtrip(0, 1, 6);
    test_roundtrip(1, 1, 6);
    test_roundtrip(100000, 1, 1);
    test_roundtrip(32768, 32768, 6);
    test_roundtrip(32769, 7, 9);
    test_roundtrip(3 << 20, 65536, 6);
    test_roundtrip(1 << 20, 1 << 20, 0);
    test_errors();
    test_sinks();
    test_bufsink();
    return pe_test_done();
}
