/*
 * aslimit.h: how big our tables may be in a process under an address-space
 * limit (`ulimit -v`, RLIMIT_AS).
 *
 * Every table we map counts against the program's limit whether or not its
 * pages are touched, so a table's size is chosen once, at its creation: the
 * size wanted, halved while it would take more than its share of the limit.
 * The shares are the callers' (each says which fraction it may take); with
 * no limit the size wanted is given.  The limit is read once.
 *
 * Signal-safe: no (getrlimit at the first call; callers are set-up paths).
 */
#ifndef PE_ASLIMIT_H
#define PE_ASLIMIT_H

#include <stddef.h>
#include <stdint.h>

/*
 * `want` entries of `per` bytes each, halved (not below `least`) while they
 * take more than 1/share of the limit.
 */
uint32_t pe_aslimit_fit(uint32_t want, size_t per, unsigned share, uint32_t least);

#endif /* PE_ASLIMIT_H */
