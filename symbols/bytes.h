/*
 * bytes.h: the one bounded byte reader (fixed-size little-endian values,
 * ULEB128, SLEB128, strings), for DWARF (dwarf.c), ELF notes (elf.c) and the
 * call frame tables (stack/cfi.c).  Header-only: every function is a static
 * inline over a cursor the caller owns.
 *
 * A reader covers [p, end); ok drops to 0 on the first read that would pass
 * end, and from then on every read returns 0 and moves nothing, so callers
 * check ok once after a batch of reads.
 *
 * Signal-safe: yes (no calls but memcpy and memchr, no state but the cursor).
 */
#ifndef PE_SYMBOLS_BYTES_H
#define PE_SYMBOLS_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct pe_rd_s {
    const uint8_t *p, *end;
    int ok;
} pe_rd_t;

/* A reader from off to the end of [base, base + size); failed already when off is past it. */
static inline pe_rd_t
pe_rd_at(const uint8_t *base, size_t size, uint64_t off)
{
    pe_rd_t r = {base + size, base + size, 0};

    if (base && off <= size) {
        r.p = base + off;
        r.ok = 1;
    }
    return r;
}

/* Room for n more bytes?  If not, the reader fails for good. */
static inline int
pe_rd_room(pe_rd_t *r, uint64_t n)
{
    if (!r->ok || (uint64_t)(r->end - r->p) < n) {
        r->ok = 0;
        return 0;
    }
    return 1;
}

/* n bytes as a little-endian value (host and file both are); bytes past 8 are skipped. */
static inline uint64_t
pe_rd_fixed(pe_rd_t *r, unsigned n)
{
    uint64_t v = 0;

    if (!pe_rd_room(r, n))
        return 0;
    memcpy(&v, r->p, n > 8 ? 8 : n);
    r->p += n;
    return v;
}

static inline uint8_t
pe_rd_u8(pe_rd_t *r)
{
    if (!pe_rd_room(r, 1))
        return 0;
    return *r->p++;
}

/* LEB128 (DWARF 5, 7.6).  Bits past 64 are dropped rather than shifted out of range; a
   run of continuation bytes ends at the reader's end (and fails it). */
static inline uint64_t
pe_rd_uleb(pe_rd_t *r)
{
    uint64_t v = 0;
    unsigned shift = 0;

    while (pe_rd_room(r, 1)) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    return 0;
}

static inline int64_t
pe_rd_sleb(pe_rd_t *r)
{
    uint64_t v = 0;
    unsigned shift = 0;

    while (pe_rd_room(r, 1)) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= ~0ull << shift;
            return (int64_t)v;
        }
    }
    return 0;
}

static inline void
pe_rd_skip(pe_rd_t *r, uint64_t n)
{
    if (pe_rd_room(r, n))
        r->p += n;
}

/* A NUL-terminated string at the cursor, or NULL (and !ok) if unterminated. */
static inline const char *
pe_rd_cstr(pe_rd_t *r)
{
    const uint8_t *z;
    const char *s;

    if (!r->ok)
        return NULL;
    z = memchr(r->p, 0, (size_t)(r->end - r->p));
    if (!z) {
        r->ok = 0;
        return NULL;
    }
    s = (const char *)r->p;
    r->p = z + 1;
    return s;
}

#endif /* PE_SYMBOLS_BYTES_H */
