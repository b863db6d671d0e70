/*
 * sink.h: where encoders write their bytes.
 *
 * Every encoder (pprof, text, folded, svg, heapsnapshot, Go's text) streams
 * into a pe_sink_t; the HTTP layer supplies one that sends chunks to the
 * client (or, for /debug_engine, one over pe_fdsink_t that writes the job's
 * file), gzip.c one that compresses into another sink, and pe_bufsink_t one
 * that gathers small writes into large ones.  Nothing is ever assembled whole
 * in memory.
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

/* Write bytes / a string / formatted text; errors are remembered in sink->err
   and, once one is, later writes do nothing and return it. */
int pe_sink_write(pe_sink_t *sink, const void *buf, size_t len);
int pe_sink_put(pe_sink_t *sink, const char *s);
int pe_sink_printf(pe_sink_t *sink, const char *fmt, ...) PE_PRINTF(2, 3);

/*
 * The one JSON escaper: s (NUL-terminated) as a quoted JSON string, with
 * quotes, backslashes and control characters escaped and every byte that is
 * not well-formed UTF-8 replaced by U+FFFD (symbol names and command lines
 * are bytes; JSON text must be UTF-8).
 */
void pe_sink_json_str(pe_sink_t *sink, const char *s);
/*
 * The one XML (and HTML) escaper: at most `max` characters of s as character
 * data that is also safe inside an attribute: & < > " ' as entities, anything
 * that is not well-formed UTF-8 or not allowed in XML 1.0 as '?'.
 */
void pe_sink_xml_str(pe_sink_t *sink, const char *s, size_t max);

/*
 * Length (2..4) of the well-formed UTF-8 sequence at s (s[0] >= 0x80), or 0
 * when it is not one: a stray or truncated sequence, an overlong form, a
 * surrogate or a code point past U+10FFFF.  Reads no byte past the first
 * that does not fit, so a NUL ends it.
 */
static inline int
pe_sink_utf8_len(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    int n, i;

    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f; /* no surrogates */
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
        if (s[i] < lo || s[i] > hi)
            return 0;
    return n;
}

/*
 * Length of the sequence at s (1..4) that XML 1.0 allows as is, or 0 when s
 * starts with a byte that must not go out as is (control characters, stray or
 * truncated multi-byte sequences, surrogates).
 */
static inline int
pe_sink_xml_char_len(const unsigned char *s)
{
    if (*s < 0x80)
        return *s >= 0x20 || *s == '\t' ? 1 : 0;
    return pe_sink_utf8_len(s);
}

/*
 * A sink that gzips (RFC 1952) into `out`.  pe_gzip_open() returns 0 or
 * -ENOMEM; pe_gzip_close() flushes the trailer, releases the zlib state and
 * returns the first error seen.  One state (~300 KiB) is kept from one stream
 * to the next rather than freed (see gzip.c); a stream opened while it is in
 * use gets its own, freed at close.  The struct is opaque in use but lives on
 * the caller's stack.
 */
typedef struct pe_gzip_s {
    pe_sink_t sink;
    pe_sink_t *out;
    void *zs; /* z_stream * */
    unsigned char *buf;
    int level;
    int spare; /* holds the kept state */
} pe_gzip_t;

int pe_gzip_open(pe_gzip_t *gz, pe_sink_t *out, int level) PE_NODISCARD;
int pe_gzip_close(pe_gzip_t *gz);

/* A sink that appends into a growable memory buffer (tests; csp.c hashes the
   flame graph's script from one). */
typedef struct pe_membuf_s {
    pe_sink_t sink;
    char *data;
    size_t len, cap;
} pe_membuf_t;

void pe_membuf_init(pe_membuf_t *mb);
void pe_membuf_free(pe_membuf_t *mb);

/*
 * A sink that gathers writes into a malloc'd buffer of `cap` bytes and passes
 * them on to `out` when it is full (an encoder that writes a number or a line
 * at a time must not send one HTTP chunk or one deflate call each).  Writes of
 * `cap` bytes or more go straight through.  pe_bufsink_open returns 0 or
 * -ENOMEM; pe_bufsink_close sends what is left, frees the buffer and returns
 * the first error seen (the sink's, which includes out's).
 */
typedef struct pe_bufsink_s {
    pe_sink_t sink;
    pe_sink_t *out;
    char *buf;
    size_t len, cap;
} pe_bufsink_t;

int pe_bufsink_open(pe_bufsink_t *b, pe_sink_t *out, size_t cap) PE_NODISCARD;
int pe_bufsink_close(pe_bufsink_t *b);

/* A sink that writes to a file descriptor (peek to stderr; debug_engine's job
   file, under its deadline and size limit in http/h_engine.c). */
typedef struct pe_fdsink_s {
    pe_sink_t sink;
    int fd;
} pe_fdsink_t;

void pe_fdsink_init(pe_fdsink_t *fs, int fd);

#endif /* PE_SINK_H */
