/*
 * demangle.c: symbol names as people read them.  C++ goes to the host's own
 * __cxa_demangle (we link no C++ runtime); Rust legacy and Rust v0 (RFC 2603)
 * are decoded here, with the output rustc-demangle's alternate form gives.
 * pe_dem_shorten() then cuts a readable name down to what pprof displays.
 * The callers own every buffer; nothing here keeps state but one pointer.
 *
 * Signal-safe: no.
 */
#include "symbols/demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "preload/fd.h"

/* ---- output buffer ---------------------------------------------------------------- */

/* Appends stop at cap-1 bytes; `full` then says the text was cut. */
typedef struct {
    char *buf;
    size_t cap, pos;
    int full;
} dem_out_t;

static void
out_init(dem_out_t *o, char *buf, size_t cap)
{
    o->buf = buf;
    o->cap = cap;
    o->pos = 0;
    o->full = 0;
    buf[0] = '\0';
}

/* Appends n bytes; a cut never splits a UTF-8 sequence (profiles carry UTF-8). */
static void
out_put(dem_out_t *o, const char *s, size_t n)
{
    size_t room;

    if (o->full || n == 0)
        return;
    room = o->cap - 1 - o->pos;
    if (n > room) {
        n = room;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
        o->full = 1;
    }
    memcpy(o->buf + o->pos, s, n);
    o->pos += n;
    o->buf[o->pos] = '\0';
}

static void
out_str(dem_out_t *o, const char *s)
{
    out_put(o, s, strlen(s));
}

static void
out_chr(dem_out_t *o, char c)
{
    out_put(o, &c, 1);
}

static void
out_u64(dem_out_t *o, uint64_t v)
{
    char tmp[24];
    int i = sizeof(tmp);

    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    out_put(o, tmp + i, sizeof(tmp) - i);
}

/* One code point as UTF-8 (the caller has checked it is a scalar value). */
static void
out_utf8(dem_out_t *o, uint32_t c)
{
    char b[4];
    size_t n;

    if (c < 0x80) {
        b[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xC0 | c >> 6);
        b[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xE0 | c >> 12);
        b[1] = (char)(0x80 | (c >> 6 & 0x3F));
        b[2] = (char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | c >> 18);
        b[1] = (char)(0x80 | (c >> 12 & 0x3F));
        b[2] = (char)(0x80 | (c >> 6 & 0x3F));
        b[3] = (char)(0x80 | (c & 0x3F));
        n = 4;
    }
    out_put(o, b, n);
}

static int
is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int
is_lower(int c)
{
    return c >= 'a' && c <= 'z';
}

static int
is_upper(int c)
{
    return c >= 'A' && c <= 'Z';
}

static int
is_word(int c)
{
    return is_digit(c) || is_lower(c) || is_upper(c) || c == '_' || c == '$';
}

static int
hex_val(int c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* ---- suffixes: GCC clones, glibc versions ------------------------------------------ */

/* Length of one clone group at s (libiberty's d_clone_suffix: `.` [a-z0-9_]+ then any
   number of `.` [0-9]+), or 0 when s does not start one. */
static size_t
clone_group(const char *s, size_t n)
{
    size_t i = 0;

    if (n < 2 || s[0] != '.' || !(is_lower(s[1]) || is_digit(s[1]) || s[1] == '_'))
        return 0;
    i = 2;
    while (i < n && (is_lower(s[i]) || is_digit(s[i]) || s[i] == '_'))
        i++;
    while (i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
        i += 2;
        while (i < n && is_digit(s[i]))
            i++;
    }
    return i;
}

/* Whether s[0..n) is nothing but clone groups (at least one). */
static int
clone_chain(const char *s, size_t n)
{
    size_t i = 0, g;

    if (n == 0)
        return 0;
    while (i < n) {
        if (!(g = clone_group(s + i, n - i)))
            return 0;
        i += g;
    }
    return 1;
}

/* c++filt's notes: " [clone .isra.0] [clone .cold]". */
static void
out_clone_notes(dem_out_t *o, const char *s, size_t n)
{
    size_t i = 0, g;

    while (i < n && (g = clone_group(s + i, n - i))) {
        out_str(o, " [clone ");
        out_put(o, s + i, g);
        out_chr(o, ']');
        i += g;
    }
}

/* Rust's LLVM-made `.llvm.<digits>` (ThinLTO renames) says nothing to a reader:
   rustc-demangle and binutils both drop it.  Returns the length without it. */
static size_t
strip_llvm_suffix(const char *s, size_t n)
{
    size_t i, j;

    for (i = 0; i + 6 <= n; i++) {
        if (memcmp(s + i, ".llvm.", 6))
            continue;
        for (j = i + 6; j < n && (is_digit(s[j]) || (s[j] >= 'A' && s[j] <= 'F')); j++)
            ;
        if (j == n)
            return i;
    }
    return n;
}

/* rustc's own `.0`, `.1` renames of statics right after the mangled part: dropped as
   binutils drops them.  Returns the index past them. */
static size_t
skip_numeric_groups(const char *s, size_t i, size_t end)
{
    size_t g, k;

    while ((g = clone_group(s + i, end - i))) {
        for (k = 1; k < g && is_digit(s[i + k]); k++)
            ;
        if (k < g)
            break;
        i += g;
    }
    return i;
}

/* ---- Rust legacy -------------------------------------------------------------------- */

/* `_ZN` {<len><ident>} `17h` <16 hex> `E`: the hash element makes it Rust rather than a
   C++ variable.  Returns the length of the mangled part (through the `E`), or 0. */
static size_t
legacy_scan(const char *s, size_t n, size_t *nelem)
{
    size_t i = 3, len, k, last = 0;

    *nelem = 0;
    if (n < 4 || memcmp(s, "_ZN", 3))
        return 0;
    while (i < n && s[i] != 'E') {
        if (!is_digit(s[i]))
            return 0;
        len = 0;
        while (i < n && is_digit(s[i])) {
            if (len > PE_DEM_MAX_INPUT)
                return 0;
            len = len * 10 + (size_t)(s[i++] - '0');
        }
        if (len == 0 || len > n - i)
            return 0;
        for (k = 0; k < len; k++) {
            if ((unsigned char)s[i + k] & 0x80)
                return 0;
        }
        last = i;
        i += len;
        (*nelem)++;
    }
    if (i >= n || *nelem < 2 || i - last != 17 || s[last] != 'h')
        return 0;
    for (k = 1; k < 17; k++) {
        if (hex_val(s[last + k]) < 0)
            return 0;
    }
    return i + 1;
}

/* One element with its $..$ escapes decoded and `..` shown as `::`. */
static void
legacy_elem(dem_out_t *o, const char *s, size_t n)
{
    static const struct {
        const char *esc, *txt;
    } escs[] = {{"SP", "@"}, {"BP", "*"}, {"RF", "&"}, {"LT", "<"},
                {"GT", ">"}, {"LP", "("}, {"RP", ")"}, {"C", ","}};
    size_t i = 0, j, k;

    if (n >= 2 && s[0] == '_' && s[1] == '$')
        i = 1;
    while (i < n) {
        if (s[i] == '.') {
            if (i + 1 < n && s[i + 1] == '.') {
                out_str(o, "::");
                i += 2;
            } else {
                out_chr(o, '.');
                i++;
            }
            continue;
        }
        if (s[i] != '$') {
            for (j = i; j < n && s[j] != '$' && s[j] != '.'; j++)
                ;
            out_put(o, s + i, j - i);
            i = j;
            continue;
        }
        for (j = i + 1; j < n && s[j] != '$'; j++)
            ;
        if (j >= n)
            break; /* no closing `$`: the rest goes out as it is */
        for (k = 0; k < sizeof(escs) / sizeof(escs[0]); k++) {
            if (strlen(escs[k].esc) == j - i - 1 && !memcmp(s + i + 1, escs[k].esc, j - i - 1))
                break;
        }
        if (k < sizeof(escs) / sizeof(escs[0])) {
            out_str(o, escs[k].txt);
        } else if (s[i + 1] == 'u' && j - i - 2 >= 1 && j - i - 2 <= 6) {
            uint32_t c = 0;
            size_t d;

            for (d = i + 2; d < j && hex_val(s[d]) >= 0; d++)
                c = c * 16 + (uint32_t)hex_val(s[d]);
            if (d < j || c < 0x20 || (c >= 0x7F && c < 0xA0) || (c >= 0xD800 && c < 0xE000) ||
                c > 0x10FFFF)
                break;
            out_utf8(o, c);
        } else {
            break;
        }
        i = j + 1;
    }
    out_put(o, s + i, n - i);
}

static void
legacy_print(dem_out_t *o, const char *s, size_t nelem)
{
    size_t i = 3, e, len;

    for (e = 0; e + 1 < nelem; e++) { /* the last element is the hash */
        len = 0;
        while (is_digit(s[i]))
            len = len * 10 + (size_t)(s[i++] - '0');
        if (e)
            out_str(o, "::");
        legacy_elem(o, s + i, len);
        i += len;
    }
}

/* ---- Rust v0 (RFC 2603) --------------------------------------------------------------- */
/*
 * A recursive-descent reader over the text after `_R`, printing as it goes.  The symbol is
 * first read once with printing off (which does not follow backrefs, so it is linear), then
 * again with printing on.  Backrefs `B<base62>` point back into the text; printing follows
 * them, bounded by the depth limit, the step budget and the output buffer (a full buffer
 * stops the reading: the result is cut, not wrong).
 */

#define V0_MAX_DEPTH 200
#define V0_MAX_STEPS 200000

typedef struct {
    const char *s;
    size_t n, i;
    dem_out_t *out; /* NULL: reading only */
    int depth, err;
    long steps;
    uint64_t bound_lt; /* lifetimes bound by enclosing for<...> */
} v0_t;

typedef struct {
    const char *ascii, *puny;
    size_t nascii, npuny;
} v0_ident_t;

static void v0_path(v0_t *p, int in_value);
static void v0_type(v0_t *p);
static void v0_const(v0_t *p, int in_value);

static int
v0_stop(const v0_t *p)
{
    return p->err || (p->out && p->out->full);
}

static int
v0_peek(const v0_t *p)
{
    return p->i < p->n ? (unsigned char)p->s[p->i] : 0;
}

static int
v0_eat(v0_t *p, int c)
{
    if (p->i < p->n && p->s[p->i] == c) {
        p->i++;
        return 1;
    }
    return 0;
}

static int
v0_next(v0_t *p)
{
    if (p->i >= p->n) {
        p->err = 1;
        return 0;
    }
    return (unsigned char)p->s[p->i++];
}

static void
v0_print(v0_t *p, const char *s)
{
    if (p->out)
        out_str(p->out, s);
}

/* Depth and step limits keep hostile backref chains from taking the stack or the time. */
static int
v0_enter(v0_t *p)
{
    if (++p->depth > V0_MAX_DEPTH || ++p->steps > V0_MAX_STEPS)
        p->err = 1;
    return !p->err;
}

/* <base-62-number> = {0-9a-zA-Z} "_": "_" is 0, "0_" is 1, ... */
static uint64_t
v0_b62(v0_t *p)
{
    uint64_t v = 0;
    int c, d;

    if (v0_eat(p, '_'))
        return 0;
    while ((c = v0_next(p)) != '_') {
        if (p->err)
            return 0;
        if (is_digit(c))
            d = c - '0';
        else if (is_lower(c))
            d = c - 'a' + 10;
        else if (is_upper(c))
            d = c - 'A' + 36;
        else {
            p->err = 1;
            return 0;
        }
        if (v > (UINT64_MAX - (uint64_t)d) / 62) {
            p->err = 1;
            return 0;
        }
        v = v * 62 + (uint64_t)d;
    }
    if (v == UINT64_MAX) {
        p->err = 1;
        return 0;
    }
    return v + 1;
}

/* [tag <base-62-number>]: 0 when absent, else the number plus one. */
static uint64_t
v0_opt_b62(v0_t *p, int tag)
{
    uint64_t v;

    if (!v0_eat(p, tag))
        return 0;
    v = v0_b62(p);
    if (v == UINT64_MAX) {
        p->err = 1;
        return 0;
    }
    return v + 1;
}

/* <undisambiguated-identifier> = ["u"] <decimal-number> ["_"] <bytes> */
static void
v0_ident(v0_t *p, v0_ident_t *id)
{
    int puny = v0_eat(p, 'u');
    size_t len = 0, k;

    memset(id, 0, sizeof(*id));
    if (!is_digit(v0_peek(p))) {
        p->err = 1;
        return;
    }
    if (v0_eat(p, '0')) {
        len = 0;
    } else {
        while (is_digit(v0_peek(p))) {
            if (len > PE_DEM_MAX_INPUT) {
                p->err = 1;
                return;
            }
            len = len * 10 + (size_t)(v0_next(p) - '0');
        }
    }
    v0_eat(p, '_');
    if (len > p->n - p->i) {
        p->err = 1;
        return;
    }
    id->ascii = p->s + p->i;
    id->nascii = len;
    p->i += len;
    if (!puny)
        return;
    /* Punycode with `_` for `-`: the ASCII part ends at the last `_`. */
    id->puny = id->ascii;
    id->npuny = len;
    id->nascii = 0;
    for (k = len; k > 0; k--) {
        if (id->ascii[k - 1] == '_') {
            id->nascii = k - 1;
            id->puny = id->ascii + k;
            id->npuny = len - k;
            break;
        }
    }
    if (id->npuny == 0)
        p->err = 1;
}

/* RFC 3492 decoding into cps[]; returns the count, or -1 when it is not valid. */
static int
punycode_decode(const v0_ident_t *id, uint32_t *cps, int max)
{
    uint64_t i = 0, n = 0x80, bias = 72, delta, w, k, t;
    size_t pos = 0;
    int len = 0, first = 1, d, c, j;

    if (id->nascii > (size_t)max)
        return -1;
    for (j = 0; j < (int)id->nascii; j++)
        cps[len++] = (unsigned char)id->ascii[j];
    while (pos < id->npuny) {
        delta = 0;
        w = 1;
        for (k = 36;; k += 36) {
            if (pos >= id->npuny)
                return -1;
            c = (unsigned char)id->puny[pos++];
            if (is_lower(c))
                d = c - 'a';
            else if (is_digit(c))
                d = c - '0' + 26;
            else
                return -1;
            t = k <= bias ? 1 : k - bias >= 26 ? 26 : k - bias;
            if (w && (uint64_t)d > (UINT32_MAX - delta) / w)
                return -1;
            delta += (uint64_t)d * w;
            if ((uint64_t)d < t)
                break;
            w *= 36 - t;
            if (w > UINT32_MAX)
                return -1;
        }
        if (len >= max)
            return -1;
        len++;
        i += delta;
        n += i / (uint64_t)len;
        i %= (uint64_t)len;
        if (n > 0x10FFFF || (n >= 0xD800 && n < 0xE000))
            return -1;
        memmove(cps + i + 1, cps + i, (size_t)(len - 1 - (int)i) * sizeof(*cps));
        cps[i++] = (uint32_t)n;
        /* bias adaptation */
        delta /= first ? 700 : 2;
        first = 0;
        delta += delta / (uint64_t)len;
        for (k = 0; delta > ((36 - 1) * 26) / 2; k += 36)
            delta /= 36 - 1;
        bias = k + (36 * delta) / (delta + 38);
    }
    return len;
}

static void
v0_print_ident(v0_t *p, const v0_ident_t *id)
{
    uint32_t cps[128];
    int n, j;

    if (!p->out)
        return;
    if (!id->puny) {
        out_put(p->out, id->ascii, id->nascii);
        return;
    }
    if ((n = punycode_decode(id, cps, 128)) >= 0) {
        for (j = 0; j < n; j++)
            out_utf8(p->out, cps[j]);
        return;
    }
    /* Not decodable here: shown raw, marked as rustc-demangle marks it. */
    out_str(p->out, "punycode{");
    if (id->nascii) {
        out_put(p->out, id->ascii, id->nascii);
        out_chr(p->out, '-');
    }
    out_put(p->out, id->puny, id->npuny);
    out_chr(p->out, '}');
}

/* B<base-62-number>: an offset from the start of the text after `_R`, strictly backwards.
   Reading only, it is not followed (that keeps the first pass linear). */
static void
v0_backref(v0_t *p, int what, int in_value)
{
    size_t at = p->i - 1, save; /* the `B` */
    uint64_t to = v0_b62(p);

    if (p->err)
        return;
    if (to >= at) {
        p->err = 1;
        return;
    }
    if (!p->out)
        return;
    save = p->i;
    p->i = (size_t)to;
    if (what == 'p')
        v0_path(p, in_value);
    else if (what == 't')
        v0_type(p);
    else
        v0_const(p, in_value);
    p->i = save;
}

static void
v0_lifetime(v0_t *p, uint64_t lt)
{
    uint64_t depth;

    if (!p->out)
        return;
    out_chr(p->out, '\'');
    if (lt == 0) {
        out_chr(p->out, '_');
        return;
    }
    if (lt > p->bound_lt) {
        p->err = 1;
        return;
    }
    depth = p->bound_lt - lt;
    if (depth < 26) {
        out_chr(p->out, (char)('a' + depth));
    } else {
        out_chr(p->out, '_');
        out_u64(p->out, depth);
    }
}

/* [G <base-62-number>]: "for<'a, 'b> " and the lifetimes it binds; returns how many. */
static uint64_t
v0_binder_open(v0_t *p)
{
    uint64_t n = v0_opt_b62(p, 'G'), k;

    if (p->err || !p->out || n == 0)
        return 0;
    if (n > 1000) {
        p->err = 1;
        return 0;
    }
    v0_print(p, "for<");
    for (k = 0; k < n && !v0_stop(p); k++) {
        if (k)
            v0_print(p, ", ");
        p->bound_lt++;
        v0_lifetime(p, 1);
    }
    v0_print(p, "> ");
    return n;
}

/* <generic-arg> = <lifetime> | <type> | "K" <const> */
static void
v0_generic_arg(v0_t *p)
{
    if (v0_eat(p, 'L')) {
        uint64_t lt = v0_b62(p);

        if (!p->err)
            v0_lifetime(p, lt);
    } else if (v0_eat(p, 'K')) {
        v0_const(p, 0);
    } else {
        v0_type(p);
    }
}

/* { <generic-arg> } "E", comma separated. */
static void
v0_generic_args(v0_t *p)
{
    int k;

    for (k = 0; !v0_stop(p) && !v0_eat(p, 'E'); k++) {
        if (k)
            v0_print(p, ", ");
        v0_generic_arg(p);
    }
}

static void
v0_path(v0_t *p, int in_value)
{
    int tag;

    if (!v0_enter(p))
        return;
    tag = v0_next(p);
    switch (tag) {
    case 'C': { /* crate root; its disambiguator is dropped, as rustfilt drops it */
        v0_ident_t id;

        v0_opt_b62(p, 's');
        v0_ident(p, &id);
        if (!p->err)
            v0_print_ident(p, &id);
        break;
    }
    case 'N': { /* nested: uppercase namespaces are shown ({closure#0}), lowercase ones not */
        int ns = v0_next(p);
        uint64_t dis;
        v0_ident_t id;

        if (!is_lower(ns) && !is_upper(ns)) {
            p->err = 1;
            break;
        }
        v0_path(p, in_value);
        dis = v0_opt_b62(p, 's');
        v0_ident(p, &id);
        if (v0_stop(p) || !p->out)
            break;
        if (is_upper(ns)) {
            v0_print(p, "::{");
            if (ns == 'C')
                v0_print(p, "closure");
            else if (ns == 'S')
                v0_print(p, "shim");
            else
                out_chr(p->out, (char)ns);
            if (id.nascii || id.npuny) {
                v0_print(p, ":");
                v0_print_ident(p, &id);
            }
            v0_print(p, "#");
            out_u64(p->out, dis);
            v0_print(p, "}");
        } else if (id.nascii || id.npuny) {
            v0_print(p, "::");
            v0_print_ident(p, &id);
        }
        break;
    }
    case 'M':
    case 'X':
    case 'Y': { /* <T>, <T as Trait>; the impl's own path is read, not shown */
        if (tag != 'Y') {
            dem_out_t *save = p->out;

            v0_opt_b62(p, 's');
            p->out = NULL;
            v0_path(p, 0);
            p->out = save;
        }
        v0_print(p, "<");
        v0_type(p);
        if (tag != 'M') {
            v0_print(p, " as ");
            v0_path(p, 0);
        }
        v0_print(p, ">");
        break;
    }
    case 'I': /* generic arguments; in a value `::<` */
        v0_path(p, in_value);
        if (in_value)
            v0_print(p, "::");
        v0_print(p, "<");
        v0_generic_args(p);
        v0_print(p, ">");
        break;
    case 'B': v0_backref(p, 'p', in_value); break;
    default: p->err = 1;
    }
    p->depth--;
}

static const char *
v0_basic_type(int c)
{
    switch (c) {
    case 'a': return "i8";
    case 'b': return "bool";
    case 'c': return "char";
    case 'd': return "f64";
    case 'e': return "str";
    case 'f': return "f32";
    case 'h': return "u8";
    case 'i': return "isize";
    case 'j': return "usize";
    case 'l': return "i32";
    case 'm': return "u32";
    case 'n': return "i128";
    case 'o': return "u128";
    case 'p': return "_";
    case 's': return "i16";
    case 't': return "u16";
    case 'u': return "()";
    case 'v': return "...";
    case 'x': return "i64";
    case 'y': return "u64";
    case 'z': return "!";
    default: return NULL;
    }
}

/* <fn-sig> = [<binder>] ["U"] ["K" <abi>] {<type>} "E" <type> */
static void
v0_fn_sig(v0_t *p)
{
    uint64_t bound = v0_binder_open(p);
    int is_unsafe = v0_eat(p, 'U'), k;
    v0_ident_t abi = {0};

    if (v0_eat(p, 'K')) {
        if (v0_eat(p, 'C')) {
            abi.ascii = "C";
            abi.nascii = 1;
        } else {
            v0_ident(p, &abi);
            if (!p->err && (abi.nascii == 0 || abi.puny))
                p->err = 1;
        }
    }
    if (is_unsafe)
        v0_print(p, "unsafe ");
    if (abi.nascii && p->out && !p->err) {
        size_t j;

        v0_print(p, "extern \"");
        for (j = 0; j < abi.nascii; j++)
            out_chr(p->out, abi.ascii[j] == '_' ? '-' : abi.ascii[j]);
        v0_print(p, "\" ");
    }
    v0_print(p, "fn(");
    for (k = 0; !v0_stop(p) && !v0_eat(p, 'E'); k++) {
        if (k)
            v0_print(p, ", ");
        v0_type(p);
    }
    v0_print(p, ")");
    if (!v0_stop(p) && !v0_eat(p, 'u')) {
        v0_print(p, " -> ");
        v0_type(p);
    }
    p->bound_lt -= bound;
}

/* A dyn trait's path, with the `>` of its generic arguments held back so that associated
   type bindings can join them: `dyn Iterator<Item = u8>`.  Returns whether it is open. */
static int
v0_path_open(v0_t *p)
{
    int open = 0;

    if (!v0_enter(p))
        return 0;
    if (v0_eat(p, 'B')) {
        size_t at = p->i - 1, save;
        uint64_t to = v0_b62(p);

        if (!p->err && to >= at)
            p->err = 1;
        if (!p->err && p->out) {
            save = p->i;
            p->i = (size_t)to;
            open = v0_path_open(p);
            p->i = save;
        }
    } else if (v0_eat(p, 'I')) {
        v0_path(p, 0);
        v0_print(p, "<");
        v0_generic_args(p);
        open = 1;
    } else {
        v0_path(p, 0);
    }
    p->depth--;
    return open;
}

/* <dyn-trait> = <path> {"p" <undisambiguated-identifier> <type>} */
static void
v0_dyn_trait(v0_t *p)
{
    int open = v0_path_open(p);

    while (!v0_stop(p) && v0_eat(p, 'p')) {
        v0_ident_t id;

        v0_print(p, open ? ", " : "<");
        open = 1;
        v0_ident(p, &id);
        if (p->err)
            return;
        v0_print_ident(p, &id);
        v0_print(p, " = ");
        v0_type(p);
    }
    if (open)
        v0_print(p, ">");
}

static void
v0_type(v0_t *p)
{
    const char *basic;
    int tag, k;

    if (!v0_enter(p))
        return;
    tag = v0_next(p);
    if (p->err) {
        p->depth--;
        return;
    }
    if ((basic = v0_basic_type(tag))) {
        v0_print(p, basic);
        p->depth--;
        return;
    }
    switch (tag) {
    case 'R':
    case 'Q':
        v0_print(p, "&");
        if (v0_eat(p, 'L')) {
            uint64_t lt = v0_b62(p);

            if (lt && !p->err) {
                v0_lifetime(p, lt);
                v0_print(p, " ");
            }
        }
        if (tag == 'Q')
            v0_print(p, "mut ");
        v0_type(p);
        break;
    case 'P':
        v0_print(p, "*const ");
        v0_type(p);
        break;
    case 'O':
        v0_print(p, "*mut ");
        v0_type(p);
        break;
    case 'A':
        v0_print(p, "[");
        v0_type(p);
        v0_print(p, "; ");
        v0_const(p, 1);
        v0_print(p, "]");
        break;
    case 'S':
        v0_print(p, "[");
        v0_type(p);
        v0_print(p, "]");
        break;
    case 'T':
        v0_print(p, "(");
        for (k = 0; !v0_stop(p) && !v0_eat(p, 'E'); k++) {
            if (k)
                v0_print(p, ", ");
            v0_type(p);
        }
        if (k == 1)
            v0_print(p, ",");
        v0_print(p, ")");
        break;
    case 'F': v0_fn_sig(p); break;
    case 'D': { /* dyn [for<..>] Trait + Trait [+ 'a] */
        uint64_t bound, lt;

        v0_print(p, "dyn ");
        bound = v0_binder_open(p);
        for (k = 0; !v0_stop(p) && !v0_eat(p, 'E'); k++) {
            if (k)
                v0_print(p, " + ");
            v0_dyn_trait(p);
        }
        p->bound_lt -= bound;
        if (v0_stop(p))
            break;
        if (!v0_eat(p, 'L')) {
            p->err = 1;
            break;
        }
        lt = v0_b62(p);
        if (lt && !p->err) {
            v0_print(p, " + ");
            v0_lifetime(p, lt);
        }
        break;
    }
    case 'B': v0_backref(p, 't', 0); break;
    default: /* a path */ p->i--; v0_path(p, 0);
    }
    p->depth--;
}

/* <const-data> = ["n"] {<hex-digit>} "_": returns the digits (leading zeros kept). */
static int
v0_hex(v0_t *p, const char **digits, size_t *nd)
{
    size_t start = p->i;

    while (p->i < p->n && hex_val(p->s[p->i]) >= 0)
        p->i++;
    if (!v0_eat(p, '_')) {
        p->err = 1;
        return -1;
    }
    *digits = p->s + start;
    *nd = p->i - 1 - start;
    return 0;
}

/* The value of hex digits when it fits in 64 bits. */
static int
hex_u64(const char *d, size_t nd, uint64_t *v)
{
    size_t j = 0;

    while (j < nd && d[j] == '0')
        j++;
    if (nd - j > 16)
        return -1;
    for (*v = 0; j < nd; j++)
        *v = *v << 4 | (uint64_t)hex_val(d[j]);
    return 0;
}

static void
v0_const_uint(v0_t *p)
{
    const char *d;
    size_t nd, j;
    uint64_t v;

    if (v0_hex(p, &d, &nd) || !p->out)
        return;
    if (hex_u64(d, nd, &v) == 0) {
        out_u64(p->out, v);
    } else {
        for (j = 0; j < nd - 1 && d[j] == '0'; j++)
            ;
        v0_print(p, "0x");
        out_put(p->out, d + j, nd - j);
    }
}

/* A char as Rust's escape_debug shows it, for '...' or "..." quoting. */
static void
out_escaped_char(dem_out_t *o, uint32_t c, char quote)
{
    static const char hx[] = "0123456789abcdef";
    char b[16];
    int n = 0, s;

    switch (c) {
    case '\t': out_str(o, "\\t"); return;
    case '\r': out_str(o, "\\r"); return;
    case '\n': out_str(o, "\\n"); return;
    case '\\': out_str(o, "\\\\"); return;
    case '\0': out_str(o, "\\0"); return;
    default: break;
    }
    if (c == (uint32_t)quote) {
        out_chr(o, '\\');
        out_chr(o, quote);
        return;
    }
    if (c < 0x20 || c == 0x7F) {
        b[n++] = '\\';
        b[n++] = 'u';
        b[n++] = '{';
        for (s = 20; s >= 0; s -= 4) {
            if ((c >> s) || s == 0)
                b[n++] = hx[(c >> s) & 0xF];
        }
        b[n++] = '}';
        out_put(o, b, (size_t)n);
        return;
    }
    out_utf8(o, c);
}

/* Hex bytes of a `str` const, decoded as UTF-8 and printed "quoted". */
static void
v0_const_str(v0_t *p)
{
    const char *d;
    size_t nd, j;
    uint32_t c;
    int need, b;

    if (v0_hex(p, &d, &nd))
        return;
    if (nd % 2) {
        p->err = 1;
        return;
    }
    if (!p->out)
        return;
    out_chr(p->out, '"');
    for (j = 0; j < nd;) {
        b = hex_val(d[j]) << 4 | hex_val(d[j + 1]);
        j += 2;
        if (b < 0x80) {
            c = (uint32_t)b;
            need = 0;
        } else if ((b & 0xE0) == 0xC0) {
            c = (uint32_t)(b & 0x1F);
            need = 1;
        } else if ((b & 0xF0) == 0xE0) {
            c = (uint32_t)(b & 0x0F);
            need = 2;
        } else if ((b & 0xF8) == 0xF0) {
            c = (uint32_t)(b & 0x07);
            need = 3;
        } else {
            p->err = 1;
            return;
        }
        for (; need > 0; need--) {
            if (j + 2 > nd) {
                p->err = 1;
                return;
            }
            b = hex_val(d[j]) << 4 | hex_val(d[j + 1]);
            j += 2;
            if ((b & 0xC0) != 0x80) {
                p->err = 1;
                return;
            }
            c = c << 6 | (uint32_t)(b & 0x3F);
        }
        if (c > 0x10FFFF || (c >= 0xD800 && c < 0xE000)) {
            p->err = 1;
            return;
        }
        out_escaped_char(p->out, c, '"');
    }
    out_chr(p->out, '"');
}

/* A `b` (bool) or `c` (char) <const>: its hex digits, printed as Rust writes them. */
static void
v0_const_bool_char(v0_t *p, int tag)
{
    const char *d;
    uint64_t v;
    size_t nd;

    if (v0_hex(p, &d, &nd))
        return;
    if (hex_u64(d, nd, &v)) {
        p->err = 1;
        return;
    }
    if (tag == 'b') {
        if (v > 1)
            p->err = 1;
        else
            v0_print(p, v ? "true" : "false");
    } else {
        if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) {
            p->err = 1;
        } else if (p->out) {
            out_chr(p->out, '\'');
            out_escaped_char(p->out, (uint32_t)v, '\'');
            out_chr(p->out, '\'');
        }
    }
}

/* <const>s up to `E`, separated by ", ": how many. */
static int
v0_const_list(v0_t *p)
{
    int k;

    for (k = 0; !v0_stop(p) && !v0_eat(p, 'E'); k++) {
        if (k)
            v0_print(p, ", ");
        v0_const(p, 1);
    }
    return k;
}

/* `V` <path> then `U`, `T` <const>* `E` or `S` (<identifier> <const>)* `E`: a
   unit, tuple or struct-like value of an enum or struct. */
static void
v0_const_adt(v0_t *p)
{
    v0_path(p, 1);
    switch (v0_next(p)) {
    case 'U': break;
    case 'T':
        v0_print(p, "(");
        (void)v0_const_list(p);
        v0_print(p, ")");
        break;
    case 'S':
        v0_print(p, " { ");
        for (int k = 0; !v0_stop(p) && !v0_eat(p, 'E'); k++) {
            v0_ident_t id;

            if (k)
                v0_print(p, ", ");
            v0_opt_b62(p, 's');
            v0_ident(p, &id);
            if (p->err)
                break;
            v0_print_ident(p, &id);
            v0_print(p, ": ");
            v0_const(p, 1);
        }
        v0_print(p, " }");
        break;
    default: p->err = 1;
    }
}

/* Outside a value, a const that is not a literal is wrapped in {}: opens them, 1 when it did. */
static int
v0_brace(v0_t *p, int in_value)
{
    if (in_value)
        return 0;
    v0_print(p, "{");
    return 1;
}

/* <const>: literals print bare; anything else is wrapped in {} outside a value. */
static void
v0_const(v0_t *p, int in_value)
{
    int tag, braced = 0, k;

    if (!v0_enter(p))
        return;
    tag = v0_next(p);
    if (p->err) {
        p->depth--;
        return;
    }
    switch (tag) {
    case 'p': v0_print(p, "_"); break;
    case 'h':
    case 't':
    case 'm':
    case 'y':
    case 'o':
    case 'j': v0_const_uint(p); break;
    case 'a':
    case 's':
    case 'l':
    case 'x':
    case 'n':
    case 'i':
        if (v0_eat(p, 'n'))
            v0_print(p, "-");
        v0_const_uint(p);
        break;
    case 'b':
    case 'c': v0_const_bool_char(p, tag); break;
    case 'e':
        braced = v0_brace(p, in_value);
        v0_print(p, "*");
        v0_const_str(p);
        break;
    case 'R':
    case 'Q':
        if (tag == 'R' && v0_eat(p, 'e')) {
            v0_const_str(p);
            break;
        }
        braced = v0_brace(p, in_value);
        v0_print(p, tag == 'R' ? "&" : "&mut ");
        v0_const(p, 1);
        break;
    case 'A':
    case 'T':
        braced = v0_brace(p, in_value);
        v0_print(p, tag == 'A' ? "[" : "(");
        k = v0_const_list(p);
        if (tag == 'T' && k == 1)
            v0_print(p, ",");
        v0_print(p, tag == 'A' ? "]" : ")");
        break;
    case 'V':
        braced = v0_brace(p, in_value);
        v0_const_adt(p);
        break;
    case 'B': v0_backref(p, 'c', in_value); break;
    default: p->err = 1;
    }
    if (braced)
        v0_print(p, "}");
    p->depth--;
}

/* `_R` [<decimal-number>] <path> [<instantiating-crate>]: 1 printed, 0 not Rust v0. */
static int
v0_demangle(dem_out_t *o, const char *s, size_t n)
{
    v0_t p;
    size_t k;

    if (n < 3 || s[0] != '_' || s[1] != 'R' || !is_upper(s[2]))
        return 0; /* an encoding version (a digit) other than none is unknown to us */
    for (k = 2; k < n; k++) {
        if (!is_word(s[k]) || s[k] == '$')
            return 0;
    }
    memset(&p, 0, sizeof(p));
    p.s = s + 2;
    p.n = n - 2;
    v0_path(&p, 0);
    if (!p.err && is_upper(v0_peek(&p)))
        v0_path(&p, 0); /* the instantiating crate, never shown */
    if (p.err || p.i != p.n)
        return 0;
    memset(&p, 0, sizeof(p));
    p.s = s + 2;
    p.n = n - 2;
    p.out = o;
    v0_path(&p, 1); /* a symbol names a value: generic args print as `::<T>` */
    return !p.err;
}

/* ---- C++ through the host's __cxa_demangle ------------------------------------------ */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn
cxa_demangle(void)
{
    static cxa_demangle_fn fn; /* server thread only; the atomics keep a reader honest */
    cxa_demangle_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);

    if (!f) { /* looked up again each time while absent: a C++ runtime may come later */
        f = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (f)
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* libstdc++'s __cxa_demangle leaves out DMGL_VERBOSE, so it writes the short names of the
   standard substitutions (Ss, Si, So, Sd) where c++filt writes them out: we do as c++filt. */
static void
out_cxx(dem_out_t *o, const char *s)
{
    static const struct {
        const char *abbr, *full;
    } subs[] = {
        {"std::string", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >"},
        {"std::istream", "std::basic_istream<char, std::char_traits<char> >"},
        {"std::ostream", "std::basic_ostream<char, std::char_traits<char> >"},
        {"std::iostream", "std::basic_iostream<char, std::char_traits<char> >"},
    };
    const char *run = s, *q;
    size_t k, al;

    for (q = s; *q; q++) {
        if (*q != 's' || (q > s && (is_word(q[-1]) || q[-1] == ':')))
            continue;
        for (k = 0; k < sizeof(subs) / sizeof(subs[0]); k++) {
            al = strlen(subs[k].abbr);
            if (!strncmp(q, subs[k].abbr, al) && !is_word(q[al]))
                break;
        }
        if (k == sizeof(subs) / sizeof(subs[0]))
            continue;
        out_put(o, run, (size_t)(q - run));
        out_str(o, subs[k].full);
        q += al - 1;
        run = q + 1;
    }
    out_str(o, run);
}

/* Bytes of stack below this frame on the calling thread (read once per thread). */
static size_t
stack_left(void)
{
    static __thread uintptr_t lo; /* the lowest usable address, above the guard */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    pthread_attr_t a;
    size_t size, guard = 0;
    void *addr;

    if (!lo) {
        int gated = pe_fd_main_stack_begin();
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            if (pthread_attr_getstack(&a, &addr, &size) == 0) {
                pthread_attr_getguardsize(&a, &guard);
                lo = (uintptr_t)addr + guard;
            }
            pthread_attr_destroy(&a);
        }
        pe_fd_main_stack_end(gated);
    }
    if (!lo)
        return 256 << 10; /* unknown: as much as a small thread stack has */
    return sp > lo ? sp - lo : 0;
}

/* libstdc++'s demangler puts arrays sized by the input on the stack (about 72 bytes a
   character) and recurses about as deep as the input is long: measured at up to ~360 bytes
   a character.  Names it cannot afford on this thread's stack stay mangled. */
#define CXX_STACK_PER_CHAR 512
#define CXX_STACK_BASE (64 << 10)

/*
 * A thread whose stack cannot afford a name (civetweb's workers have small
 * ones) demangles on a stack of our own: one for the process, reserved at
 * first use (MAP_NORESERVE: only the pages the demangler touches are ever
 * backed), taken under a lock.
 */
#define ALT_STACK_SIZE                                                                             \
    ((size_t)CXX_STACK_BASE + CXX_STACK_PER_CHAR * PE_DEM_MAX_INPUT + (256 << 10))

static pthread_mutex_t alt_lock = PTHREAD_MUTEX_INITIALIZER;
static void *alt_stack; /* under alt_lock */
static ucontext_t alt_back, alt_ctx;
static struct {
    cxa_demangle_fn f;
    const char *in;
    char *res;
    int status;
} alt_call;

static void
alt_entry(void)
{
    alt_call.res = alt_call.f(alt_call.in, NULL, NULL, &alt_call.status);
}

/* f(in) on our own stack; NULL (status -1) when that stack cannot be had. */
static char *
alt_demangle(cxa_demangle_fn f, const char *in, int *status)
{
    char *volatile res = NULL; /* getcontext returns twice */

    *status = -1;
    pthread_mutex_lock(&alt_lock);
    if (!alt_stack) {
        void *m = mmap(NULL, ALT_STACK_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);

        alt_stack = m == MAP_FAILED ? NULL : m;
    }
    if (alt_stack && getcontext(&alt_ctx) == 0) {
        alt_ctx.uc_stack.ss_sp = alt_stack;
        alt_ctx.uc_stack.ss_size = ALT_STACK_SIZE;
        alt_ctx.uc_link = &alt_back;
        alt_call.f = f;
        alt_call.in = in;
        alt_call.res = NULL;
        alt_call.status = -1;
        makecontext(&alt_ctx, alt_entry, 0);
        if (swapcontext(&alt_back, &alt_ctx) == 0) {
            res = alt_call.res;
            *status = alt_call.status;
        }
    }
    pthread_mutex_unlock(&alt_lock);
    return res;
}

/* 1 printed, 0 not demangled. */
static int
cxx_demangle(dem_out_t *o, const char *s, size_t n)
{
    char tmp[PE_DEM_MAX_INPUT + 1];
    cxa_demangle_fn f = cxa_demangle();
    char *res;
    int status = -1;

    if (!f || n > PE_DEM_MAX_INPUT)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (stack_left() >= CXX_STACK_BASE + CXX_STACK_PER_CHAR * n)
        res = f(tmp, NULL, NULL, &status);
    else
        res = alt_demangle(f, tmp, &status);
    if (status != 0 || !res) {
        free(res);
        return 0;
    }
    out_cxx(o, res);
    free(res);
    return 1;
}

/* ---- module API ----------------------------------------------------------------------- */

const char *
pe_dem_demangle(const char *sym, char *buf, size_t len)
{
    size_t n, body, mangled, nelem, k;
    const char *ver;
    dem_out_t o;
    int ok = 0;

    if (!buf || len == 0)
        return NULL;
    buf[0] = '\0';
    if (!sym || sym[0] != '_' || (sym[1] != 'Z' && sym[1] != 'R'))
        return NULL;
    n = strnlen(sym, PE_DEM_MAX_INPUT + 1);
    if (n > PE_DEM_MAX_INPUT)
        return NULL;
    /* name[.clone...][@[@]VERSION] */
    ver = memchr(sym, '@', n);
    body = ver ? (size_t)(ver - sym) : n;
    out_init(&o, buf, len);

    if ((mangled = legacy_scan(sym, body, &nelem))) {
        /* (a legacy identifier may hold dots itself: suffixes are looked for after it) */
        size_t end = mangled + strip_llvm_suffix(sym + mangled, body - mangled);

        if (end > mangled && !clone_chain(sym + mangled, end - mangled))
            return NULL;
        legacy_print(&o, sym, nelem);
        k = skip_numeric_groups(sym, mangled, end);
        out_clone_notes(&o, sym + k, end - k);
        ok = 1;
    } else {
        /* The mangled part ends at the first `.` that starts a chain of clone groups
           (a C++ or v0 encoding has no `.` of its own but in rare identifiers). */
        size_t end = sym[1] == 'R' ? strip_llvm_suffix(sym, body) : body;

        mangled = end;
        for (k = 0; k < end; k++) {
            if (sym[k] == '.' && clone_chain(sym + k, end - k)) {
                mangled = k;
                break;
            }
        }
        if (sym[1] == 'R')
            ok = v0_demangle(&o, sym, mangled);
        else
            ok = cxx_demangle(&o, sym, mangled);
        if (ok && sym[1] == 'R')
            mangled = skip_numeric_groups(sym, mangled, end);
        if (ok)
            out_clone_notes(&o, sym + mangled, end - mangled);
    }
    if (!ok) {
        buf[0] = '\0';
        return NULL;
    }
    if (ver)
        out_put(&o, ver, n - body);
    return buf;
}

/* ---- shortening ------------------------------------------------------------------------- */
/*
 * One pass over the readable name, copying what pprof keeps.  A group is skipped whole with
 * its nested (), <>, [] and {}; `operator` tokens are copied as they are so that their
 * brackets are not taken for groups.  A space at the top level outside an operator name ends
 * a return type: what came before it is dropped.
 */

static int
starts_word(const char *s, size_t n, size_t i, const char *w)
{
    size_t l = strlen(w);

    return i + l <= n && !memcmp(s + i, w, l) && (i + l == n || !is_word(s[i + l]));
}

/* Length of the operator token after "operator" at s[i], e.g. "<<=", "()", " new[]",
   "\"\" _km", or a conversion's type up to its parameter list. */
static size_t
operator_token(const char *s, size_t n, size_t i)
{
    static const char *const ops[] = {
        "<<=", ">>=", "->*", "<=>", "()", "[]", "<<", ">>", "<=", ">=", "->", "==", "!=",
        "&&",  "||",  "++",  "--",  "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<",
        ">",   "+",   "-",   "*",   "/",  "%",  "&",  "|",  "^",  "~",  "!",  "=",  ",",
    };
    size_t k, j;

    for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        size_t l = strlen(ops[k]);

        if (i + l <= n && !memcmp(s + i, ops[k], l))
            return l;
    }
    if (i + 2 <= n && !memcmp(s + i, "\"\"", 2)) { /* user-defined literal: operator"" _km */
        j = i + 2;
        if (j < n && s[j] == ' ')
            j++;
        while (j < n && is_word(s[j]))
            j++;
        return j - i;
    }
    if (i < n && s[i] == ' ') {
        if (starts_word(s, n, i + 1, "new") || starts_word(s, n, i + 1, "delete")) {
            j = i + 1 + (s[i + 1] == 'n' ? 3 : 6);
            if (j + 2 <= n && !memcmp(s + j, "[]", 2))
                j += 2;
            return j - i;
        }
        if (starts_word(s, n, i + 1, "co_await"))
            return 9;
    }
    return 0;
}

/* Index just past the group that opens at s[i] (one of ( < [ {), or n when unclosed.
   The brackets of operator names inside it (`&Foo::operator<`) are not groups. */
static size_t
skip_group(const char *s, size_t n, size_t i)
{
    int depth = 0;

    for (; i < n; i++) {
        char c = s[i];

        if (c == 'o' && starts_word(s, n, i, "operator") && (i == 0 || !is_word(s[i - 1]))) {
            i += 7 + operator_token(s, n, i + 8);
        } else if (c == '(' || c == '<' || c == '[' || c == '{') {
            depth++;
        } else if (c == ')' || c == '>' || c == ']' || c == '}') {
            if (c == '>' && i > 0 && s[i - 1] == '-') /* `->` in a decltype */
                continue;
            if (--depth <= 0)
                return i + 1;
        }
    }
    return n;
}

/* Qualifiers after a parameter list: " const", " &&", " noexcept", ... */
static size_t
skip_qualifiers(const char *s, size_t n, size_t i)
{
    static const char *const qs[] = {
        " const", " volatile", " restrict", " noexcept", " transaction_safe", " &&", " &"};
    size_t k, l;

    for (;;) {
        for (k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
            l = strlen(qs[k]);
            if (i + l <= n && !memcmp(s + i, qs[k], l) &&
                (i + l == n || !is_word(s[i + l]) || qs[k][1] == '&'))
                break;
        }
        if (k == sizeof(qs) / sizeof(qs[0]))
            return i;
        i += l;
    }
}

/* Shortens s[0..n) into o.  `nested`: inside a Rust <T as Trait> or a {lambda...}, where
   spaces belong to the name and parentheses are types; `depth` bounds the recursion. */
#define SHORTEN_MAX_DEPTH 32

static void shorten_into(dem_out_t *o, const char *s, size_t n, int nested, int depth);

/* shorten_into's walk: s[i] is the next character; what o held before it is o[..start). */
typedef struct shorten_s {
    dem_out_t *o;
    const char *s;
    size_t n, i, start;
    int nested, depth;
    int after_operator; /* an operator name was seen: a space is no longer a return type's end */
    int op_end;         /* right after an operator token: ( and < open groups */
} shorten_t;

/* The walk's steps: each one goes on (SH_NEXT), ends the walk (SH_DONE) or leaves
   the character to the next step (SH_NOT_MINE). */
enum { SH_NEXT, SH_DONE, SH_NOT_MINE };

/* Everything written so far was a return type (or a declarator's): dropped. */
static void
sh_restart(shorten_t *w)
{
    w->o->pos = w->start;
    w->o->buf[w->o->pos] = '\0';
    w->o->full = 0;
}

/* The group at s[i] (which opens with `open`), kept with its inside shortened as a
   nested name (a Rust <T as Trait>, a {lambda...}). */
static void
sh_nested_group(shorten_t *w, char open, char close)
{
    const char *s = w->s;
    size_t i = w->i, j = skip_group(s, w->n, i);

    out_chr(w->o, open);
    shorten_into(w->o, s + i + 1, (j > i + 1 && s[j - 1] == close ? j - 1 : j) - i - 1, 1,
                 w->depth + 1);
    if (j > i + 1 && s[j - 1] == close)
        out_chr(w->o, close);
    w->i = j;
}

/* `operator` and its token, kept whole; a conversion operator's type is shortened. */
static int
sh_operator(shorten_t *w)
{
    const char *s = w->s;
    size_t n = w->n, i = w->i, j;

    if (!starts_word(s, n, i, "operator") || (i > 0 && is_word(s[i - 1])))
        return SH_NOT_MINE;
    j = operator_token(s, n, i + 8);
    if (j == 0 && i + 8 < n && s[i + 8] == ' ') {
        /* conversion operator: its type, shortened, up to the parameter list */
        out_str(w->o, "operator ");
        w->i = i + 9;
        w->after_operator = 1;
        return SH_NEXT;
    }
    out_put(w->o, s + i, 8 + j);
    i += 8 + j;
    w->after_operator = 1;
    w->op_end = 1;
    if (i + 1 < n && s[i] == ' ' && s[i + 1] == '<') /* operator<< <char> */
        i++;
    w->i = i;
    return SH_NEXT;
}

/* A '(': (anonymous namespace), a parameter list (dropped), a declarator, a lambda's
   parameters; or none of those (SH_NOT_MINE: kept as it is). */
static int
sh_paren(shorten_t *w, char prev, int at_op_end)
{
    const char *s = w->s;
    size_t n = w->n, i = w->i, j;

    if (!w->nested && n - i >= 21 && !memcmp(s + i, "(anonymous namespace)", 21)) {
        out_put(w->o, s + i, 21);
        w->i = i + 21;
        return SH_NEXT;
    }
    if (!w->nested && (at_op_end || is_word(prev) || prev == '>' || prev == ']' || prev == '}' ||
                       prev == ')' || prev == '\'')) { /* libc++abi: 'lambda'(int) */
        /* a parameter list, and the qualifiers after it */
        w->i = skip_qualifiers(s, n, skip_group(s, n, i));
        return SH_NEXT;
    }
    if (!w->nested && prev == '\0' && i > 0 && s[i - 1] == ' ' && i + 1 < n &&
        (s[i + 1] == '&' || s[i + 1] == '*')) {
        /* a declarator: char const (&std::forward<char const (&) [5]>(...)) [5] */
        j = skip_group(s, n, i);
        sh_restart(w);
        shorten_into(w->o, s + i + 2, (j > i + 2 && s[j - 1] == ')' ? j - 1 : j) - i - 2, 0,
                     w->depth + 1);
        return SH_DONE;
    }
    if (w->nested && w->o->pos >= 6 && !memcmp(w->o->buf + w->o->pos - 6, "lambda", 6)) {
        out_str(w->o, "()"); /* {lambda(int, char)#1} -> {lambda()#1} */
        w->i = skip_group(s, n, i);
        return SH_NEXT;
    }
    return SH_NOT_MINE;
}

/* A '<': template or generic arguments (dropped), or a qualified path <T as Trait>. */
static int
sh_angle(shorten_t *w, char prev, int at_op_end)
{
    dem_out_t *o = w->o;

    if (at_op_end || is_word(prev) || prev == '>' || prev == ']' || prev == '}' ||
        (prev == ':' && o->pos >= w->start + 2 && o->buf[o->pos - 2] == ':')) {
        w->i = skip_group(w->s, w->n, w->i); /* template or generic arguments */
        w->op_end = 1;                       /* a ( after them is a parameter list */
        if (o->pos >= w->start + 2 && o->buf[o->pos - 1] == ':' &&
            o->buf[o->pos - 2] == ':') { /* Rust's turbofish ::<T> */
            o->pos -= 2;
            o->buf[o->pos] = '\0';
        }
        return SH_NEXT;
    }
    /* a qualified path <T as Trait>: kept, its inside shortened */
    sh_nested_group(w, '<', '>');
    return SH_NEXT;
}

/* Any other character: a {group}, an [abi:tag] (dropped), the space after a return
   type, or the character itself. */
static int
sh_other(shorten_t *w, char c)
{
    if (c == '{') {
        sh_nested_group(w, '{', '}');
        return SH_NEXT;
    }
    if (c == '[' && w->n - w->i >= 5 && !memcmp(w->s + w->i, "[abi:", 5)) {
        w->i = skip_group(w->s, w->n, w->i);
        return SH_NEXT;
    }
    if (c == ' ' && !w->nested && !w->after_operator) {
        /* everything so far was a return type */
        sh_restart(w);
        w->i++;
        return SH_NEXT;
    }
    out_chr(w->o, c);
    w->i++;
    return SH_NEXT;
}

static void
shorten_into(dem_out_t *o, const char *s, size_t n, int nested, int depth)
{
    shorten_t w = {o, s, n, 0, o->pos, nested, depth, 0, 0};
    int rc;

    if (depth > SHORTEN_MAX_DEPTH) { /* hostile nesting: the rest as it is, no deeper stack */
        out_put(o, s, n);
        return;
    }
    while (w.i < n && !o->full) {
        char c = s[w.i];
        char prev = o->pos > w.start ? o->buf[o->pos - 1] : '\0';
        int at_op_end = w.op_end; /* right after an operator token: ( and < open groups */

        w.op_end = 0;
        rc = sh_operator(&w);
        if (rc == SH_NOT_MINE && c == '(')
            rc = sh_paren(&w, prev, at_op_end);
        if (rc == SH_NOT_MINE && c == '<')
            rc = sh_angle(&w, prev, at_op_end);
        if (rc == SH_NOT_MINE)
            rc = sh_other(&w, c);
        if (rc == SH_DONE)
            return;
    }
}

/* __cxa_demangle's special names: the prefix is kept, the entity after it shortened. */
static size_t
special_prefix(const char *s)
{
    static const char *const pre[] = {
        "non-virtual thunk to ",
        "virtual thunk to ",
        "covariant return thunk to ",
        "typeinfo name for ",
        "typeinfo for ",
        "vtable for ",
        "VTT for ",
        "guard variable for ",
        "transaction clone for ",
        "TLS init function for ",
        "TLS wrapper function for ",
        "construction vtable for ",
    };
    size_t k, l, total = 0;

    for (k = 0; k < sizeof(pre) / sizeof(pre[0]); k++) {
        l = strlen(pre[k]);
        if (!strncmp(s + total, pre[k], l)) {
            total += l;
            k = (size_t)-1; /* "non-virtual thunk to" may come after another */
        }
    }
    return total;
}

const char *
pe_dem_shorten(const char *readable, char *buf, size_t len)
{
    size_t n, body, notes, k, pre;
    dem_out_t o;

    if (!buf || len == 0)
        return NULL;
    out_init(&o, buf, len);
    if (!readable)
        return buf;
    n = strlen(readable);
    /* Plain names (C, most Go) have nothing to cut. */
    if (!strpbrk(readable, "(<:{ [")) {
        out_put(&o, readable, n);
        return buf;
    }
    /* Trailing " [clone ...]" notes and an "@VERSION" are kept as they are. */
    body = n;
    for (k = 0; k < n; k++) {
        if (readable[k] == '@' && !strpbrk(readable + k, " ()<>[]{}")) {
            body = k;
            break;
        }
    }
    notes = body;
    for (k = 0; k + 8 <= body; k++) {
        if (!memcmp(readable + k, " [clone .", 9)) {
            notes = k;
            break;
        }
    }
    pre = special_prefix(readable);
    if (pre > notes)
        pre = notes;
    out_put(&o, readable, pre);
    shorten_into(&o, readable + pre, notes - pre, 0, 0);
    if (o.pos == pre) { /* nothing recognisable kept: better the whole name than nothing */
        o.pos = 0;
        o.full = 0;
        out_put(&o, readable, notes);
    }
    out_put(&o, readable + notes, n - notes);
    return buf;
}
