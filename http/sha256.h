/*
 * sha256.h: SHA-256 (FIPS 180-4) and its digest in base64, for the
 * Content-Security-Policy's script hashes (csp.c).  Small and slow; not for
 * bulk data.
 *
 * Signal-safe: yes (no allocation, no lock), though no handler needs it.
 */
#ifndef PE_SHA256_H
#define PE_SHA256_H

#include <stddef.h>

#include "../preload/pe.h"

/* The 32-byte digest of data. */
PE_TESTONLY void pe_sha256(const void *data, size_t len, unsigned char out[32]);
/* The digest in base64 (RFC 4648, with its padding): 44 characters and a NUL. */
void pe_sha256_b64(const void *data, size_t len, char out[45]);

#endif
