/*
 * dw_util.c: u_dwarf's test program, a second C unit (functions split across
 * units, with header helpers inlined here too).
 */
#include <string.h>

#include "dw_inl.h"

static inline __attribute__((always_inline)) unsigned
fold(unsigned a, unsigned b)
{
    return dw_hdr_step(a, b) + (a << 3);
}

unsigned
dw_util_sum(const unsigned *v, int n)
{
    unsigned s = 0;
    int i;

    for (i = 0; i < n; i++)
        s = fold(s, v[i]);
    return s;
}

static __attribute__((noinline)) unsigned
hash_tail(const char *s, size_t len)
{
    unsigned h = 2166136261u;
    size_t i;

    for (i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return dw_hdr_mix(h);
}

unsigned
dw_util_hash(const char *s)
{
    size_t len = strlen(s);

    if (len > 8)
        return fold(hash_tail(s, len), (unsigned)len);
    return hash_tail(s, len);
}
