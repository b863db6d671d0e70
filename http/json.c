/*
 * json.c: one flat JSON object, {"key": scalar, ...}, read into NUL-terminated
 * strings in a caller's buffer (strings decoded, \u escapes as UTF-8, numbers
 * as written, true/false as words, null as no value).  Nested objects and
 * arrays are refused: /debug_engine's body (h_engine.c) is all it reads.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"

typedef struct json_s {
    const char *s;   /* next input byte */
    char *out;       /* where decoded text goes (the sub-request's qbuf) */
    size_t left;     /* room left there */
    const char *err; /* what was wrong, for the 400 */
} json_t;

static void
json_ws(json_t *j)
{
    while (*j->s == ' ' || *j->s == '\t' || *j->s == '\n' || *j->s == '\r')
        j->s++;
}

static int
json_put(json_t *j, const char *b, size_t n)
{
    if (n >= j->left) {
        j->err = "the parameters are too long";
        return -1;
    }
    memcpy(j->out, b, n);
    j->out += n;
    j->left -= n;
    return 0;
}

static int
hex4(const char *s, unsigned *v)
{
    int i;

    *v = 0;
    for (i = 0; i < 4; i++) {
        char c = s[i];

        *v <<= 4;
        if (c >= '0' && c <= '9')
            *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    return 0;
}

/* Code point cp (not 0, not a surrogate) as UTF-8 into u; its length. */
static size_t
utf8(unsigned cp, char u[4])
{
    if (cp < 0x80) {
        u[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    u[0] = (char)(0xf0 | cp >> 18);
    u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    u[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A \u escape after its "\u" at j->s (a surrogate pair is one) as UTF-8 into u;
   its length, or 0 (j->err). */
static size_t
json_unicode(json_t *j, char u[4])
{
    unsigned cp, lo;

    if (hex4(j->s, &cp)) {
        j->err = "bad \\u escape";
        return 0;
    }
    j->s += 4;
    if (cp >= 0xd800 && cp < 0xdc00 && j->s[0] == '\\' && j->s[1] == 'u' && !hex4(j->s + 2, &lo) &&
        lo >= 0xdc00 && lo < 0xe000) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        j->s += 6;
    }
    if (cp == 0 || (cp >= 0xd800 && cp < 0xe000)) {
        j->err = "bad \\u escape";
        return 0;
    }
    return utf8(cp, u);
}

/* The escape at j->s (its backslash) decoded into u; its length, or 0 (j->err). */
static size_t
json_escape(json_t *j, char u[4])
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    unsigned char c = (unsigned char)j->s[1];
    const char *k;

    if (!c) {
        j->err = "unterminated string";
        return 0;
    }
    j->s += 2;
    if (c == 'u')
        return json_unicode(j, u);
    if (!(k = strchr(from, c))) {
        j->err = "bad escape in a string";
        return 0;
    }
    u[0] = to[k - from];
    return 1;
}

/* A JSON string at j->s into the output, NUL-terminated; returns its start or NULL. */
static const char *
json_string(json_t *j)
{
    const char *start = j->out;
    char u[4];
    size_t n;

    if (*j->s != '"') {
        j->err = "expected a string";
        return NULL;
    }
    j->s++;
    for (;;) {
        unsigned char c = (unsigned char)*j->s;

        if (c == '"')
            break;
        if (c < 0x20) {
            j->err = c ? "control character in a string" : "unterminated string";
            return NULL;
        }
        if (c != '\\') {
            if (json_put(j, j->s++, 1))
                return NULL;
            continue;
        }
        if (!(n = json_escape(j, u)) || json_put(j, u, n))
            return NULL;
    }
    j->s++;
    if (json_put(j, "", 1))
        return NULL;
    return start;
}

/*
 * A scalar value as query-parameter text: strings decoded, numbers as
 * written, booleans as true/false.  *val = NULL for null.  0 or -1 (j->err).
 */
static int
json_value(json_t *j, const char **val)
{
    const char *s = j->s;
    size_t n;
    char *end;

    *val = NULL;
    if (*s == '"')
        return (*val = json_string(j)) ? 0 : -1;
    if (*s == '{' || *s == '[') {
        j->err = "values must be strings, numbers or booleans (no objects or arrays)";
        return -1;
    }
    if (!strncmp(s, "null", 4)) {
        j->s += 4;
        return 0;
    }
    if (!strncmp(s, "true", 4) || !strncmp(s, "false", 5)) {
        n = *s == 't' ? 4 : 5;
    } else {
        n = strspn(s, "+-0123456789.eE");
        if (n == 0 || (strtod(s, &end), end != s + n)) {
            j->err = "bad value";
            return -1;
        }
    }
    *val = j->out;
    if (json_put(j, s, n) || json_put(j, "", 1))
        return -1;
    j->s += n;
    return 0;
}

int
pe_json_flat_object(const char *text, char *out, size_t outlen, pe_json_pair_fn fn, void *arg,
                    const char **err)
{
    json_t jj = {text, out, outlen, NULL}, *j = &jj;
    const char *key, *val;
    int rc = -1;

    json_ws(j);
    if (*j->s++ != '{') {
        j->err = "expected a JSON object";
        goto out;
    }
    json_ws(j);
    if (*j->s == '}') {
        j->s++;
    } else {
        for (;;) {
            json_ws(j);
            if (!(key = json_string(j)))
                goto out;
            json_ws(j);
            if (*j->s++ != ':') {
                j->err = "expected ':'";
                goto out;
            }
            json_ws(j);
            if (json_value(j, &val) || fn(arg, key, val, &j->err))
                goto out;
            json_ws(j);
            if (*j->s == ',') {
                j->s++;
                continue;
            }
            if (*j->s++ != '}') {
                j->err = "expected ',' or '}'";
                goto out;
            }
            break;
        }
    }
    json_ws(j);
    if (*j->s) {
        j->err = "text after the object";
        goto out;
    }
    rc = 0;
out:
    *err = j->err;
    return rc;
}
