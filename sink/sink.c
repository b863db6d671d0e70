/*
 * sink.c: the byte sinks every encoder writes into: the shared write/put/printf
 * helpers with their sticky first error, a buffering sink, a growable memory
 * buffer, and a file descriptor sink, and the one JSON and one XML string
 * escaper every writer of those uses.  The gzip sink is in gzip.c and the HTTP
 * sink in http/.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink.h"

/* Most printf lines are short; longer ones take one malloc. */
#define SINK_LINE 512

/* ---- shared helpers ------------------------------------------------------ */

void
pe_sink_json_str(pe_sink_t *o, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str, *run = s;
    char esc[8];
    int k;

    pe_sink_write(o, "\"", 1);
    while (*s) {
        if (*s >= 0x20 && *s != '"' && *s != '\\' && *s < 0x80) {
            s++;
            continue;
        }
        if (*s >= 0x80 && (k = pe_sink_utf8_len(s)) > 0) {
            s += k;
            continue;
        }
        pe_sink_write(o, (const char *)run, (size_t)(s - run));
        if (*s == '"' || *s == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*s;
            pe_sink_write(o, esc, 2);
        } else if (*s == '\n') {
            pe_sink_write(o, "\\n", 2);
        } else if (*s == '\t') {
            pe_sink_write(o, "\\t", 2);
        } else if (*s < 0x20) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[*s >> 4];
            esc[5] = hex[*s & 15];
            pe_sink_write(o, esc, 6);
        } else {
            pe_sink_write(o, "\\ufffd", 6);
        }
        run = ++s;
    }
    pe_sink_write(o, (const char *)run, (size_t)(s - run));
    pe_sink_write(o, "\"", 1);
}

void
pe_sink_xml_str(pe_sink_t *o, const char *s, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    int k;

    for (; *u && n < max; n++) {
        switch (*u) {
        case '&': pe_sink_put(o, "&amp;"); break;
        case '<': pe_sink_put(o, "&lt;"); break;
        case '>': pe_sink_put(o, "&gt;"); break;
        case '"': pe_sink_put(o, "&quot;"); break;
        case '\'': pe_sink_put(o, "&apos;"); break;
        default:
            k = pe_sink_xml_char_len(u);
            pe_sink_write(o, k ? (const void *)u : "?", k ? (size_t)k : 1);
            u += k ? k : 1;
            continue;
        }
        u++;
    }
}

int
pe_sink_write(pe_sink_t *sink, const void *buf, size_t len)
{
    int err;

    /* After the first error every later write is pointless (client gone). */
    if (sink->err)
        return sink->err;
    if (len == 0)
        return 0;
    err = sink->write(sink, buf, len);
    if (err)
        sink->err = err;
    return err;
}

int
pe_sink_put(pe_sink_t *sink, const char *s)
{
    return pe_sink_write(sink, s, strlen(s));
}

int
pe_sink_printf(pe_sink_t *sink, const char *fmt, ...)
{
    char line[SINK_LINE];
    char *big = NULL;
    va_list ap;
    int n, err;

    if (sink->err)
        return sink->err;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0) {
        sink->err = -EINVAL;
        return sink->err;
    }
    if ((size_t)n < sizeof(line))
        return pe_sink_write(sink, line, (size_t)n);

    big = malloc((size_t)n + 1);
    if (!big) {
        sink->err = -ENOMEM;
        return sink->err;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    err = pe_sink_write(sink, big, (size_t)n);
    free(big);
    return err;
}

/* ---- buffering --------------------------------------------------------------- */

static int
bufsink_flush(pe_bufsink_t *b)
{
    int err = pe_sink_write(b->out, b->buf, b->len);

    b->len = 0;
    return err;
}

static int
bufsink_write(pe_sink_t *sink, const void *buf, size_t len)
{
    pe_bufsink_t *b = (pe_bufsink_t *)sink;
    int err;

    if (b->len + len > b->cap && (err = bufsink_flush(b)))
        return err;
    if (len >= b->cap)
        return pe_sink_write(b->out, buf, len);
    memcpy(b->buf + b->len, buf, len);
    b->len += len;
    return 0;
}

int
pe_bufsink_open(pe_bufsink_t *b, pe_sink_t *out, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->sink.write = bufsink_write;
    b->out = out;
    b->cap = cap;
    b->buf = malloc(cap); /* tens of KiB: not on a worker's stack */
    return b->buf ? 0 : -ENOMEM;
}

int
pe_bufsink_close(pe_bufsink_t *b)
{
    if (!b->sink.err && b->len)
        b->sink.err = bufsink_flush(b);
    free(b->buf);
    b->buf = NULL;
    b->len = 0;
    return b->sink.err ? b->sink.err : b->out->err;
}

/* ---- memory buffer ------------------------------------------------------- */

static int
membuf_write(pe_sink_t *sink, const void *buf, size_t len)
{
    pe_membuf_t *mb = (pe_membuf_t *)sink;
    size_t cap;
    char *data;

    /* Keep one spare byte so data can always be NUL-terminated for tests. */
    if (mb->len + len + 1 > mb->cap) {
        cap = mb->cap ? mb->cap : 4096;
        while (cap < mb->len + len + 1) {
            if (cap > SIZE_MAX / 2)
                return -ENOMEM;
            cap *= 2;
        }
        data = realloc(mb->data, cap);
        if (!data)
            return -ENOMEM;
        mb->data = data;
        mb->cap = cap;
    }
    memcpy(mb->data + mb->len, buf, len);
    mb->len += len;
    mb->data[mb->len] = '\0';
    return 0;
}

void
pe_membuf_init(pe_membuf_t *mb)
{
    memset(mb, 0, sizeof(*mb));
    mb->sink.write = membuf_write;
}

void
pe_membuf_free(pe_membuf_t *mb)
{
    free(mb->data);
    pe_membuf_init(mb);
}

/* ---- file descriptor ------------------------------------------------------ */

static int
fdsink_write(pe_sink_t *sink, const void *buf, size_t len)
{
    pe_fdsink_t *fs = (pe_fdsink_t *)sink;
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = write(fs->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO; /* no progress: do not spin */
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void
pe_fdsink_init(pe_fdsink_t *fs, int fd)
{
    memset(fs, 0, sizeof(*fs));
    fs->sink.write = fdsink_write;
    fs->fd = fd;
}
