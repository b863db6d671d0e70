/*
 * pe_test.h: the tiny harness shared by the C unit tests.
 *
 * CHECK(cond) records a failure (with file:line) and goes on; pe_test_done()
 * prints "N passed, N failed" and returns the exit status (0 pass, 1 fail).
 * A test that made no check fails: it cannot pass empty (a loop over inputs
 * that found none, a section skipped by mistake).  A test that cannot run
 * here returns 77 (skip) itself.
 *
 * The helpers several tests need, once: pe_test_gunzip (an encoder's gzip
 * read back), and, in a test that includes http/http_int.h first,
 * pe_test_engine (a /debug_engine request run in process).
 */
#ifndef PE_TEST_H
#define PE_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static int pe_test_passed, pe_test_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            pe_test_passed++;                                                                      \
        } else {                                                                                   \
            pe_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            pe_test_passed++;                                                                      \
        } else {                                                                                   \
            pe_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static inline int
pe_test_done(void)
{
    printf("%d passed, %d failed\n", pe_test_passed, pe_test_failed);
    if (pe_test_passed + pe_test_failed == 0) {
        fprintf(stderr, "no check ran: a test that checks nothing fails (or returns 77 to skip)\n");
        return 1;
    }
    return pe_test_failed ? 1 : 0;
}

/* A whole gzip stream inflated into a malloc'd buffer (*out, the caller frees it);
   its length, or -1 when it is not one whole stream. */
static inline long
pe_test_gunzip(const void *in, size_t inlen, unsigned char **out)
{
    z_stream zs;
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap), *nbuf;
    int zerr;

    memset(&zs, 0, sizeof(zs));
    if (!buf || inflateInit2(&zs, 15 + 16) != Z_OK) {
        free(buf);
        return -1;
    }
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)inlen;
    do {
        if (len == cap) {
            cap *= 2;
            if (!(nbuf = realloc(buf, cap))) {
                zerr = Z_MEM_ERROR;
                break;
            }
            buf = nbuf;
        }
        zs.next_out = buf + len;
        zs.avail_out = (uInt)(cap - len);
        zerr = inflate(&zs, Z_NO_FLUSH);
        len = cap - zs.avail_out;
    } while (zerr == Z_OK);
    inflateEnd(&zs);
    if (zerr != Z_STREAM_END || zs.avail_in != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    return (long)len;
}

#ifdef PE_HTTP_INT_H
/* POST body to /debug_engine, routed in process: the status (-1 when no request could be
   made), the error message into errmsg[256]. */
static inline int
pe_test_engine(const char *body, char errmsg[256])
{
    pe_req_t *r = calloc(1, sizeof(*r));
    int status;

    if (!r)
        return -1;
    r->method = "POST";
    r->path = "/debug_engine";
    r->body = body;
    r->body_len = strlen(body);
    status = pe_http_route(r);
    memcpy(errmsg, r->errmsg, 256);
    free(r);
    return status;
}
#endif

#endif /* PE_TEST_H */
