/*
 * json.h: a reader of one flat JSON object (json.c), for request bodies.
 *
 * Signal-safe: no (strtod).
 */
#ifndef PE_JSON_H
#define PE_JSON_H

#include <stddef.h>

/* Called for each pair in order: key, and its value as text (NULL for null),
   both in the caller's buffer.  0 goes on; -1 stops the parse with *err set. */
typedef int (*pe_json_pair_fn)(void *arg, const char *key, const char *val, const char **err);

/*
 * Reads text (NUL-terminated), one JSON object whose values are strings,
 * numbers, booleans or null, decoding keys and values into out (outlen bytes,
 * each NUL-terminated), and calls fn for each pair.  0, or -1 with *err what
 * was wrong (a phrase for an error message).
 */
int pe_json_flat_object(const char *text, char *out, size_t outlen, pe_json_pair_fn fn, void *arg,
                        const char **err);

#endif
