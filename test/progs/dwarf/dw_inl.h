/*
 * dw_inl.h: helpers defined in a header, so their lines belong to this file
 * while they are inlined into functions of several units (u_dwarf's test
 * programs).
 */
#ifndef DW_INL_H
#define DW_INL_H

static inline __attribute__((always_inline)) unsigned
dw_hdr_mix(unsigned x)
{
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return x;
}

static inline __attribute__((always_inline)) unsigned
dw_hdr_step(unsigned x, unsigned k)
{
    unsigned y = dw_hdr_mix(x + k);

    if (y & 1)
        y = dw_hdr_mix(y ^ k);
    return y;
}

#ifdef __cplusplus
extern "C" {
#endif
unsigned dw_util_sum(const unsigned *v, int n);
unsigned dw_util_hash(const char *s);
unsigned dw_cxx_entry(unsigned seed, int n);
#ifdef __cplusplus
}
#endif

#endif
