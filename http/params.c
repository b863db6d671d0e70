/*
 * params.c: the one query parser every endpoint uses.  The query is split on
 * '&', each key=value percent-decoded into the request's fixed buffer (no
 * allocation, bounded), and typed readers check ranges and send a one-line
 * 400 naming the parameter, its value and what is allowed (docs/ENDPOINTS.md's error
 * contract: `go tool pprof` and curl show that line as is).  This file is
 * fuzzed (test/unit/fuzz_params.c).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "../preload/config.h"
#include "http.h"

static int
hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * Decode [s, s+len) into out; returns the decoded length, or -EINVAL for an
 * encoded NUL ("%00"): every reader treats values as C strings, so a NUL
 * would silently cut one short ("token=SECRET%00x" would compare as SECRET).
 */
static ssize_t
decode(const char *s, size_t len, char *out)
{
    size_t i, o = 0;
    int hi, lo;

    for (i = 0; i < len; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < len && (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
                   (lo = hexval((unsigned char)s[i + 2])) >= 0) {
            if (hi == 0 && lo == 0)
                return -EINVAL;
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return (ssize_t)o;
}

int
pe_params_parse(pe_req_t *r, const char *query)
{
    size_t used = 0, cap = sizeof(r->qbuf);
    const char *p = query;

    r->nparams = 0;
    if (!query)
        return 0;
    while (*p) {
        size_t len = strcspn(p, "&"), klen;
        const char *eq = memchr(p, '=', len);
        char *key, *val;
        ssize_t n;

        if (len == 0) {
            p++;
            continue;
        }
        if (r->nparams >= PE_HTTP_MAX_PARAMS)
            return -E2BIG;
        klen = eq ? (size_t)(eq - p) : len;
        /* Decoding never lengthens; both strings plus NULs must fit. */
        if (used + len + 2 > cap)
            return -E2BIG;
        key = r->qbuf + used;
        if ((n = decode(p, klen, key)) < 0)
            return (int)n;
        used += (size_t)n;
        r->qbuf[used++] = '\0';
        val = r->qbuf + used;
        if (eq && (n = decode(eq + 1, len - klen - 1, val)) < 0)
            return (int)n;
        used += eq ? (size_t)n : 0;
        r->qbuf[used++] = '\0';
        r->params[r->nparams].key = key;
        r->params[r->nparams].val = val;
        r->nparams++;
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

const char *
pe_param(const pe_req_t *r, const char *name)
{
    int i;

    /* The last occurrence wins, as with repeated flags on a command line. */
    for (i = r->nparams - 1; i >= 0; i--) {
        if (!strcmp(r->params[i].key, name))
            return r->params[i].val;
    }
    return NULL;
}

/* The number forms clients send: 10, 0.01, 1e8.  No hex, inf or nan: no client
   sends them, and accepting them would let a typo through as a value. */
static int
parse_number(const char *s, double *out)
{
    const char *c;
    char *end;
    double v;

    if (!*s)
        return -EINVAL;
    for (c = s; *c; c++) {
        if (!isdigit((unsigned char)*c) && !strchr("+-.eE", *c))
            return -EINVAL;
    }
    errno = 0;
    v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

int
pe_param_number(pe_req_t *r, const char *name, double def, double min, double max, double *out)
{
    const char *s = pe_param(r, name);
    double v;

    if (!s) {
        *out = def;
        return 0;
    }
    if (parse_number(s, &v) || v < min || v > max)
        return pe_http_error(r, 400, "parameter %s=%.64s: must be a number in [%g, %g]", name, s,
                             min, max);
    *out = v;
    return 0;
}

int
pe_param_bool(pe_req_t *r, const char *name, int def, int *out)
{
    const char *s = pe_param(r, name);

    if (!s) {
        *out = def;
        return 0;
    }
    if (pe_cfg_parse_bool(s, out) == 0) /* the one list of yes and no words */
        return 0;
    return pe_http_error(r, 400, "parameter %s=%.64s: must be true or false", name, s);
}

int
pe_param_enum(pe_req_t *r, const char *name, const char *const *choices, int def, int *out)
{
    const char *s = pe_param(r, name);
    char allowed[256];
    size_t used = 0;
    int i;

    if (!s) {
        *out = def;
        return 0;
    }
    for (i = 0; choices[i]; i++) {
        if (!strcmp(s, choices[i])) {
            *out = i;
            return 0;
        }
    }
    allowed[0] = '\0';
    for (i = 0; choices[i] && used < sizeof(allowed) - 1; i++)
        used += (size_t)snprintf(allowed + used, sizeof(allowed) - used, "%s%s", i ? ", " : "",
                                 choices[i]);
    return pe_http_error(r, 400, "parameter %s=%.64s: must be one of %s", name, s, allowed);
}

/* ---- unknown parameters: did you mean ------------------------------------------ */

/* Names are short; longer ones are never within two edits of ours. */
#define PE_PARAM_NAME_MAX 32

/*
 * Optimal-string-alignment distance (Levenshtein plus the swap of two
 * neighbours, "duraiton"), over a (len+1) x (len+1) table on the stack;
 * anything above 2 is reported as 3 (lengths alone settle most pairs).
 */
int
pe_param_distance(const char *a, const char *b)
{
    int d[PE_PARAM_NAME_MAX + 1][PE_PARAM_NAME_MAX + 1];
    size_t la = strlen(a), lb = strlen(b), i, j;

    if (la > PE_PARAM_NAME_MAX || lb > PE_PARAM_NAME_MAX || (la > lb ? la - lb : lb - la) > 2)
        return 3;
    for (i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;

            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb] > 2 ? 3 : d[la][lb];
}

int
pe_param_listed(const char *list, const char *name)
{
    size_t n = strlen(name);

    while (list && *list) {
        size_t w = strcspn(list, " ");

        if (w == n && !strncmp(list, name, n))
            return 1;
        list += w;
        list += strspn(list, " ");
    }
    return 0;
}

/* The word of list nearest to name within two edits (first on ties), copied into out; 0 or -1. */
static int
nearest(const char *list, const char *name, char *out, size_t len)
{
    char word[PE_PARAM_NAME_MAX + 1];
    int best = 3;

    while (list && *list) {
        size_t w = strcspn(list, " ");
        int dist;

        if (w <= PE_PARAM_NAME_MAX) {
            memcpy(word, list, w);
            word[w] = '\0';
            if ((dist = pe_param_distance(name, word)) < best) {
                best = dist;
                snprintf(out, len, "%s", word);
            }
        }
        list += w;
        list += strspn(list, " ");
    }
    return best <= 2 ? 0 : -1;
}

int
pe_params_check(pe_req_t *r, const char *known, int (*elsewhere)(const char *name))
{
    char near[PE_PARAM_NAME_MAX + 1];
    int i;

    for (i = 0; i < r->nparams; i++) {
        const char *k = r->params[i].key;

        /* Short names are too often a scraper's own (t, ts, gc); another
           endpoint's parameter is left alone as before. */
        if (strlen(k) < 3 || pe_param_listed(known, k) || (elsewhere && elsewhere(k)))
            continue;
        if (nearest(known, k, near, sizeof(near)) == 0)
            return pe_http_error(r, 400, "unknown parameter \"%.64s\": did you mean \"%s\"?", k,
                                 near);
    }
    return 0;
}
