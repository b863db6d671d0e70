/* work_inl.h: a helper defined in a header, inlined into work.c's callers,
   so its frames carry this file's name and lines. */
static inline __attribute__((always_inline)) unsigned
hdr_scramble(unsigned x)
{
    for (int i = 0; i < 16; i++)
        x = (x ^ (x >> 7)) * 0x9e3779b1u + (unsigned)i;
    return x;
}
