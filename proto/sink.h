/*
 * sink.h: where encoders write their bytes.
 *
 * Every encoder (pprof, text, folded, svg, heapsnapshot) streams into a
 * pe_sink_t; the HTTP layer supplies one that sends chunks to the client, and
 * gzip.c supplies one that compresses into another sink.  Nothing is ever
 * assembled whole in memory.
 *
 * Signal-safe: no.
 */
#ifndef PE_SINK_H
#define PE_SINK_H

#include <stdarg.h>
#include <stddef.h>

#include "../preload/pe.h"

typedef struct pe_sink_s pe_sink_t;
struct pe_sink_s {
    /* Write len bytes; returns 0 or a negative errno (client gone, ...). */
    int (*write)(pe_sink_t *sink, const void *buf, size_t len);
    int err; /* first error seen by pe_sink_printf/put; sticky */
};

/* Write a string / formatted text; errors are remembered in sink->err. */
int pe_sink_put(pe_sink_t *sink, const char *s);
int pe_sink_printf(pe_sink_t *sink, const char *fmt, ...) PE_PRINTF(2, 3);

/*
 * A sink that gzips (RFC 1952) into `out`.  pe_gzip_open() returns 0 or
 * -ENOMEM; pe_gzip_close() flushes the trailer and frees the zlib state and
 * returns the first error seen.  The struct is opaque in use but lives on the
 * caller's stack.
 */
typedef struct pe_gzip_s {
    pe_sink_t sink;
    pe_sink_t *out;
    void *zs; /* z_stream * */
    unsigned char *buf;
} pe_gzip_t;

int pe_gzip_open(pe_gzip_t *gz, pe_sink_t *out, int level) PE_NODISCARD;
int pe_gzip_close(pe_gzip_t *gz);

/* A sink that appends into a growable memory buffer (tests, debug_engine). */
typedef struct pe_membuf_s {
    pe_sink_t sink;
    char *data;
    size_t len, cap;
} pe_membuf_t;

void pe_membuf_init(pe_membuf_t *mb);
void pe_membuf_free(pe_membuf_t *mb);

/* A sink that writes to a file descriptor (peek to stderr, debug_engine files). */
typedef struct pe_fdsink_s {
    pe_sink_t sink;
    int fd;
} pe_fdsink_t;

void pe_fdsink_init(pe_fdsink_t *fs, int fd);

#endif /* PE_SINK_H */
