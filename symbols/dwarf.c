/*
 * dwarf.c: address -> inlined chain of (function, file, line) from DWARF 2-5
 * (dwarf.h), our own reader over read-only mappings.  It owns the object
 * cache, the decompressed sections and every table it decodes; the ELF
 * files themselves stay mapped until pe_dw_trim().
 *
 * Work is lazy: opening finds the file that holds the DWARF and nothing
 * else.  The first lookup decompresses the sections it reads, walks the unit
 * headers and the unit DIEs once, and sorts their address ranges (plus
 * .debug_aranges) into a CU index.  The first lookup in a CU walks its DIEs
 * once into a tree of subprogram / inlined_subroutine nodes with their
 * ranges (children's ranges sorted per parent, so a lookup descends by
 * bisection), and decodes its line program into sorted sequences of 16-byte
 * rows.  Names and paths are resolved at lookup and cached in the node.
 * The answers follow llvm-symbolizer's rules (LLVM 14, DWARFContext and
 * DWARFDebugLine) so the two agree.
 *
 * Every read goes through a bounded reader (pe_rd_t) that fails closed; counts
 * from the file are capped by the bytes that could hold them, reference
 * chains are cut after a few hops, and each allocation is charged to a
 * global budget, so hostile input costs at most the budget and one pass.
 *
 * Signal-safe: no.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "bytes.h"
#include "dwarf.h"
#include "elf.h"

/* ---- DWARF constants (DWARF 5, section 7) ------------------------------------ */

enum {
    DW_TAG_lexical_block = 0x0b,
    DW_TAG_compile_unit = 0x11,
    DW_TAG_inlined_subroutine = 0x1d,
    DW_TAG_subprogram = 0x2e,
    DW_TAG_partial_unit = 0x3c,
    DW_TAG_skeleton_unit = 0x4a,
};

enum {
    DW_AT_name = 0x03,
    DW_AT_stmt_list = 0x10,
    DW_AT_low_pc = 0x11,
    DW_AT_high_pc = 0x12,
    DW_AT_comp_dir = 0x1b,
    DW_AT_abstract_origin = 0x31,
    DW_AT_specification = 0x47,
    DW_AT_ranges = 0x55,
    DW_AT_call_column = 0x57,
    DW_AT_call_file = 0x58,
    DW_AT_call_line = 0x59,
    DW_AT_linkage_name = 0x6e,
    DW_AT_str_offsets_base = 0x72,
    DW_AT_addr_base = 0x73,
    DW_AT_rnglists_base = 0x74,
    DW_AT_MIPS_linkage_name = 0x2007,
    DW_AT_GNU_ranges_base = 0x2132,
    DW_AT_GNU_addr_base = 0x2133,
};

enum {
    DW_FORM_addr = 0x01,
    DW_FORM_block2 = 0x03,
    DW_FORM_block4 = 0x04,
    DW_FORM_data2 = 0x05,
    DW_FORM_data4 = 0x06,
    DW_FORM_data8 = 0x07,
    DW_FORM_string = 0x08,
    DW_FORM_block = 0x09,
    DW_FORM_block1 = 0x0a,
    DW_FORM_data1 = 0x0b,
    DW_FORM_flag = 0x0c,
    DW_FORM_sdata = 0x0d,
    DW_FORM_strp = 0x0e,
    DW_FORM_udata = 0x0f,
    DW_FORM_ref_addr = 0x10,
    DW_FORM_ref1 = 0x11,
    DW_FORM_ref2 = 0x12,
    DW_FORM_ref4 = 0x13,
    DW_FORM_ref8 = 0x14,
    DW_FORM_ref_udata = 0x15,
    DW_FORM_indirect = 0x16,
    DW_FORM_sec_offset = 0x17,
    DW_FORM_exprloc = 0x18,
    DW_FORM_flag_present = 0x19,
    DW_FORM_strx = 0x1a,
    DW_FORM_addrx = 0x1b,
    DW_FORM_ref_sup4 = 0x1c,
    DW_FORM_strp_sup = 0x1d,
    DW_FORM_data16 = 0x1e,
    DW_FORM_line_strp = 0x1f,
    DW_FORM_ref_sig8 = 0x20,
    DW_FORM_implicit_const = 0x21,
    DW_FORM_loclistx = 0x22,
    DW_FORM_rnglistx = 0x23,
    DW_FORM_ref_sup8 = 0x24,
    DW_FORM_strx1 = 0x25,
    DW_FORM_strx2 = 0x26,
    DW_FORM_strx3 = 0x27,
    DW_FORM_strx4 = 0x28,
    DW_FORM_addrx1 = 0x29,
    DW_FORM_addrx2 = 0x2a,
    DW_FORM_addrx3 = 0x2b,
    DW_FORM_addrx4 = 0x2c,
    DW_FORM_GNU_addr_index = 0x1f01,
    DW_FORM_GNU_str_index = 0x1f02,
    DW_FORM_GNU_ref_alt = 0x1f20,
    DW_FORM_GNU_strp_alt = 0x1f21,
};

/* The sections we read, in one table so compressed and plain ones load alike. */
enum {
    S_INFO,
    S_ABBREV,
    S_LINE,
    S_STR,
    S_LINE_STR,
    S_STR_OFF,
    S_ADDR,
    S_RANGES,
    S_RNGLISTS,
    S_ARANGES,
    S_N
};
static const char *const sec_names[S_N] = {"info",     "abbrev",      "line", "str",
                                           "line_str", "str_offsets", "addr", "ranges",
                                           "rnglists", "aranges"};

#define NONE UINT32_MAX
#define MAX_DEPTH 512     /* DIE nesting we follow; deeper trees are cut */
#define MAX_REF_HOPS 16   /* abstract_origin / specification hops per name */
#define MAX_RANGES 65536  /* ranges in one list */
#define MAX_UNITS 2000000 /* units in one .debug_info */
#define DEFAULT_BUDGET ((size_t)512 << 20)

/* ---- data ------------------------------------------------------------------------ */

typedef struct sec_s {
    const uint8_t *p;
    size_t n;
} sec_t;

/* Where a section sits in the mapped image and how it is stored. */
typedef struct rawsec_s {
    uint64_t off, size;
    int kind; /* 0 absent, 1 plain, 2 SHF_COMPRESSED, 3 .zdebug_ */
} rawsec_t;

typedef struct aspec_s {
    uint16_t at, form;
    int64_t implicit;
} aspec_t;

typedef struct abbrev_s {
    uint64_t code;
    uint16_t tag;
    uint8_t children;
    int32_t fixed;     /* bytes of all attributes when every form has a fixed size, else -1 */
    uint32_t first, n; /* into abt_t.specs */
} abbrev_t;

typedef struct abt_s {
    uint64_t off;
    uint32_t shape;    /* address size, offset size, DWARF 2: what fixed sizes depend on */
    abbrev_t *abbrevs; /* sorted by code; abbrevs[code-1] when dense */
    size_t nabbrevs;
    aspec_t *specs;
    int dense;
} abt_t;

/*
 * A unit's function tree.  Every subprogram / inlined_subroutine DIE with
 * ranges is a node; `parent` is the nearest enclosing such node (lexical
 * blocks, namespaces and classes are transparent).  All ranges sit in one
 * array sorted by (parent, lo), so each node's children's ranges are one run:
 *
 *   ranges: [ children of node 0 | children of node 1 | ... | top level (NONE) ]
 *   node k: ranges[child0 .. child0 + nchild)
 *
 * A lookup bisects the top-level run for the pc, then the run of the node it
 * found, and so on down; the path is the inlined chain, innermost last, cut
 * at the deepest DW_TAG_subprogram (LLVM's getInlinedChainForAddress).
 */

/* One subprogram or inlined_subroutine with ranges. */
typedef struct fnode_s {
    const char *name; /* resolved at first lookup */
    uint64_t die;     /* its DIE, for the name */
    uint32_t parent;  /* enclosing node, NONE at the top */
    uint32_t call_file, call_line, call_col;
    uint32_t child0, nchild; /* children's ranges in fns_t.ranges */
    uint8_t inlined, resolved;
} fnode_t;

typedef struct frange_s {
    uint64_t lo, hi;
    uint32_t node, parent;
} frange_t;

typedef struct fns_s {
    fnode_t *nodes;
    size_t nnodes, capnodes;
    frange_t *ranges;
    size_t nranges, capranges;
    uint32_t top0, ntop; /* ranges of nodes with no parent */
} fns_t;

/* A decoded line table: sequences (sorted by start) of rows in address order, the
   end_sequence row last in each; directory and file entries as the header gives them. */
typedef struct row_s {
    uint64_t addr;
    uint32_t line;
    uint16_t file, col;
} row_t;

typedef struct seq_s {
    uint64_t lo, hi;
    uint32_t first, n; /* rows, the end_sequence row included */
} seq_t;

typedef struct lfile_s {
    const char *name;
    uint64_t dir;
    char *path; /* joined on first use */
} lfile_t;

typedef struct lines_s {
    row_t *rows;
    size_t nrows, caprows;
    seq_t *seqs;
    size_t nseqs, capseqs;
    const char **dirs;
    size_t ndirs;
    lfile_t *files;
    size_t nfiles;
    int version;
} lines_t;

typedef struct cu_s {
    uint64_t off, end, die_off, abbrev_off;
    uint8_t version, addr_size, off_size, unit_type;
    uint64_t base; /* DW_AT_low_pc of the unit DIE: base of its ranges and line-free lists */
    uint64_t str_off_base, addr_base, rnglists_base;
    uint64_t stmt_list;
    int has_stmt, broken;
    const char *comp_dir;
    abt_t *abt;
    fns_t *fns;
    lines_t *lines;
} cu_t;

typedef struct cur_s {
    uint64_t lo, hi, maxhi; /* maxhi: the largest hi up to here, bounding the scan back */
    uint32_t cu;
} cur_t;

struct pe_dw_obj_s {
    pe_dw_obj_t *next;
    char *key;
    int usable;
    uint64_t used; /* LRU tick */
    pe_elf_t elf;  /* the file the DWARF is read from, mapped */
    rawsec_t raw[S_N];
    sec_t sec[S_N];
    uint8_t *dec[S_N];
    int loaded, broken;
    cu_t *cus;
    size_t ncus;
    cur_t *cur;
    size_t ncur;
    abt_t **abts; /* sorted by (off, shape) */
    size_t nabts, capabts;
    uint64_t abbrev_work; /* bytes of abbreviations parsed */
    size_t bytes;
};

static pe_dw_obj_t *cache;
static uint64_t tick;
static size_t total_bytes, budget = DEFAULT_BUDGET;
static int64_t deadline;

/* ---- budgeted allocation ------------------------------------------------------------- */

/* Each block carries its size in front, so frees give back exactly what was charged. */
typedef struct blk_s {
    size_t size;
    size_t pad;
} blk_t;
/* n bytes charged to o and to the total; NULL with *err = -E2BIG past the budget (or
   when malloc fails: to the caller both mean "no room"). */

static void *
dw_alloc(pe_dw_obj_t *o, size_t n, int *err)
{
    blk_t *b;

    if (n > budget || total_bytes > budget - n || n > SIZE_MAX - sizeof(blk_t)) {
        *err = -E2BIG;
        return NULL;
    }
    b = malloc(sizeof(*b) + n);
    if (!b) {
        *err = -E2BIG;
        return NULL;
    }
    b->size = n;
    total_bytes += n;
    o->bytes += n;
    return b + 1;
}

static void
dw_free(pe_dw_obj_t *o, void *p)
{
    blk_t *b;

    if (!p)
        return;
    b = (blk_t *)p - 1;
    total_bytes -= b->size;
    o->bytes -= b->size;
    free(b);
}

/* Grow *arr (of *cap elements of `elt` bytes) to hold at least `need`. */
static int
dw_grow(pe_dw_obj_t *o, void **arr, size_t *cap, size_t need, size_t elt)
{
    size_t ncap = *cap ? *cap : 16;
    void *n;
    int err = 0;

    if (need <= *cap)
        return 0;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elt)
            return -E2BIG;
        ncap *= 2;
    }
    n = dw_alloc(o, ncap * elt, &err);
    if (!n)
        return err;
    if (*arr)
        memcpy(n, *arr, *cap * elt);
    dw_free(o, *arr);
    *arr = n;
    *cap = ncap;
    return 0;
}
/*
 * The time bound is on our own work: this thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), which a busy machine does not stretch as it
 * stretches the wall clock.  It is checked before each lookup, where stopping
 * loses nothing: every table built so far stays for the next profile.  A single
 * table that alone runs HARD_EXTRA_NS past the deadline (a pathological file) is
 * cut, and its unit (or object) is not tried again, so the cost is paid once.
 * A clock read: callers ask every few thousand steps, not per step.
 */
#define HARD_EXTRA_NS (10 * 1000000000LL)

static int64_t
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Before a lookup: has the deadline passed? */
static int
past_deadline(void)
{
    return deadline && cpu_now() >= deadline;
}

/* Inside a table's build: has it run so far past the deadline that it is cut? */
static int
past_hard_bound(void)
{
    return deadline && cpu_now() >= deadline + HARD_EXTRA_NS;
}

/* ---- ELF (elf.c) ------------------------------------------------------------------ */

/* Record where each DWARF section of e sits (.debug_X or the legacy .zdebug_X); 1 when it
   has the two every lookup needs.  (A pe_elf_want_fn: the debug-file search asks it.) */
static int
find_dwarf_sections(void *arg, const pe_elf_t *e)
{
    pe_dw_obj_t *o = arg;
    size_t i, k;

    memset(o->raw, 0, sizeof(o->raw));
    for (i = 0; i < e->nsec; i++) {
        const char *nm = pe_elf_sec_name(e, &e->sh[i]);
        int z;

        if (strncmp(nm, ".debug_", 7) == 0)
            nm += 7, z = 0;
        else if (strncmp(nm, ".zdebug_", 8) == 0)
            nm += 8, z = 1;
        else
            continue;
        if (!pe_elf_sec_ok(e, &e->sh[i]))
            continue;
        for (k = 0; k < S_N; k++) {
            if (strcmp(nm, sec_names[k]) != 0 || o->raw[k].kind)
                continue;
            o->raw[k].off = e->sh[i].sh_offset;
            o->raw[k].size = e->sh[i].sh_size;
            o->raw[k].kind = z ? 3 : (e->sh[i].sh_flags & SHF_COMPRESSED) ? 2 : 1;
        }
    }
    return o->raw[S_INFO].kind && o->raw[S_INFO].size > 0 && o->raw[S_ABBREV].kind;
}

/* Make section k readable: point into the mapping, or inflate it into a budgeted copy. */
static int
load_section(pe_dw_obj_t *o, int k)
{
    const rawsec_t *rs = &o->raw[k];
    const uint8_t *src = o->elf.img + rs->off;
    uint64_t out_size, in_size;
    uLongf got;
    uint8_t *buf;
    int err = 0;

    if (rs->kind == 0 || rs->kind == 1) {
        o->sec[k].p = rs->kind ? src : NULL;
        o->sec[k].n = rs->kind ? rs->size : 0;
        return 0;
    }
    if (rs->kind == 2) {
        Elf64_Chdr ch;

        if (rs->size < sizeof(ch))
            return -EINVAL;
        memcpy(&ch, src, sizeof(ch));
        if (ch.ch_type != ELFCOMPRESS_ZLIB)
            return -EINVAL;
        out_size = ch.ch_size;
        src += sizeof(ch);
        in_size = rs->size - sizeof(ch);
    } else {
        uint64_t be = 0;
        int i;

        if (rs->size < 12 || memcmp(src, "ZLIB", 4) != 0)
            return -EINVAL;
        for (i = 0; i < 8; i++)
            be = be << 8 | src[4 + i];
        out_size = be;
        src += 12;
        in_size = rs->size - 12;
    }
    /* zlib cannot inflate more than ~1032:1; a bigger claim is a lie. */
    if (out_size == 0 || out_size / 1100 > in_size || out_size > (uint64_t)SIZE_MAX / 2)
        return -EINVAL;
    buf = dw_alloc(o, (size_t)out_size, &err);
    if (!buf)
        return err;
    got = (uLongf)out_size;
    if (uncompress(buf, &got, src, (uLong)in_size) != Z_OK || got != out_size) {
        dw_free(o, buf);
        return -EINVAL;
    }
    o->dec[k] = buf;
    o->sec[k].p = buf;
    o->sec[k].n = (size_t)out_size;
    return 0;
}

/* ---- abbreviations ------------------------------------------------------------------- */
/* The bytes a value of `form` takes in this unit, or -1 when that depends on the value
   (LEB128, strings, blocks, indirect).  An abbreviation whose forms are all fixed lets
   the walk skip a DIE it does not need with one add. */

static int
form_fixed_size(uint16_t form, const cu_t *cu)
{
    switch (form) {
    case DW_FORM_flag_present:
    case DW_FORM_implicit_const: return 0;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1: return 1;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2: return 2;
    case DW_FORM_strx3:
    case DW_FORM_addrx3: return 3;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_ref_sup4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4: return 4;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8: return 8;
    case DW_FORM_data16: return 16;
    case DW_FORM_addr: return cu->addr_size;
    case DW_FORM_ref_addr: return cu->version <= 2 ? cu->addr_size : cu->off_size;
    case DW_FORM_strp:
    case DW_FORM_line_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt: return cu->off_size;
    default: return -1;
    }
}
/* qsort order of abbreviations: by code. */

static int
abbrev_cmp(const void *a, const void *b)
{
    uint64_t x = ((const abbrev_t *)a)->code, y = ((const abbrev_t *)b)->code;

    return x < y ? -1 : x > y;
}

static void
abt_free(pe_dw_obj_t *o, abt_t *t)
{
    if (!t)
        return;
    dw_free(o, t->abbrevs);
    dw_free(o, t->specs);
    dw_free(o, t);
}

/* The abbreviation table at `off` for units shaped like `cu` (sizes of
   addresses and offsets only affect the fixed-size shortcut). */
static abt_t *
abt_get(pe_dw_obj_t *o, const cu_t *cu, int *err)
{
    size_t i, capa = 0, caps = 0, nspecs = 0;
    abt_t *t;
    pe_rd_t r;

    uint32_t shape =
        cu->addr_size | (uint32_t)cu->off_size << 8 | (uint32_t)(cu->version <= 2) << 16;
    size_t lo = 0, hi = o->nabts;
    const uint8_t *start;

    /* sorted by (offset, shape): units of one table with other sizes get their own copy */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const abt_t *m = o->abts[mid];

        if (m->off < cu->abbrev_off || (m->off == cu->abbrev_off && m->shape < shape))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < o->nabts && o->abts[lo]->off == cu->abbrev_off && o->abts[lo]->shape == shape)
        return o->abts[lo];
    /* tables overlapping each other cost at most a few passes over the section */
    if (o->abbrev_work > 4 * (uint64_t)o->sec[S_ABBREV].n + (1u << 20)) {
        *err = -EINVAL;
        return NULL;
    }
    if ((*err = dw_grow(o, (void **)&o->abts, &o->capabts, o->nabts + 1, sizeof(*o->abts))))
        return NULL;
    t = dw_alloc(o, sizeof(*t), err);
    if (!t)
        return NULL;
    memset(t, 0, sizeof(*t));
    t->off = cu->abbrev_off;
    t->shape = shape;
    r = pe_rd_at(o->sec[S_ABBREV].p, o->sec[S_ABBREV].n, cu->abbrev_off);
    start = r.p;
    while (r.ok) {
        abbrev_t *a;
        uint64_t code = pe_rd_uleb(&r);

        if (code == 0 || !r.ok)
            break;
        if ((*err = dw_grow(o, (void **)&t->abbrevs, &capa, t->nabbrevs + 1, sizeof(abbrev_t))))
            goto err_free;
        a = &t->abbrevs[t->nabbrevs];
        a->code = code;
        a->tag = (uint16_t)pe_rd_uleb(&r);
        a->children = pe_rd_u8(&r);
        a->first = (uint32_t)nspecs;
        a->n = 0;
        a->fixed = 0;
        for (;;) {
            uint64_t at = pe_rd_uleb(&r), form = pe_rd_uleb(&r);
            int64_t ic = 0;
            int fs;

            if (!r.ok || (at == 0 && form == 0))
                break;
            if (form == DW_FORM_implicit_const)
                ic = pe_rd_sleb(&r);
            if ((*err = dw_grow(o, (void **)&t->specs, &caps, nspecs + 1, sizeof(aspec_t))))
                goto err_free;
            t->specs[nspecs].at = (uint16_t)(at > 0xffff ? 0 : at);
            t->specs[nspecs].form = (uint16_t)(form > 0xffff ? 0 : form);
            t->specs[nspecs].implicit = ic;
            fs = form_fixed_size(t->specs[nspecs].form, cu);
            if (fs < 0 || a->fixed < 0)
                a->fixed = -1;
            else
                a->fixed += fs;
            nspecs++;
            a->n++;
        }
        t->nabbrevs++;
    }
    if (t->nabbrevs > 1)
        qsort(t->abbrevs, t->nabbrevs, sizeof(abbrev_t), abbrev_cmp);
    t->dense = 1;
    for (i = 0; i < t->nabbrevs; i++)
        if (t->abbrevs[i].code != i + 1)
            t->dense = 0;
    o->abbrev_work += (uint64_t)(r.p - start);
    memmove(o->abts + lo + 1, o->abts + lo, (o->nabts - lo) * sizeof(*o->abts));
    o->abts[lo] = t;
    o->nabts++;
    return t;
err_free:
    abt_free(o, t);
    return NULL;
}
/* By code: an index when the codes are 1..n (what compilers write), else bisection. */

static const abbrev_t *
abbrev_find(const abt_t *t, uint64_t code)
{
    size_t lo = 0, hi = t->nabbrevs;

    if (t->dense)
        return code - 1 < t->nabbrevs ? &t->abbrevs[code - 1] : NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (t->abbrevs[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->nabbrevs && t->abbrevs[lo].code == code ? &t->abbrevs[lo] : NULL;
}

/* ---- attribute values ------------------------------------------------------------------ */

enum { V_NONE, V_CONST, V_ADDR, V_ADDRX, V_STR, V_STRX, V_REF, V_SECOFF, V_RNGLISTX, V_OTHER };

typedef struct val_s {
    int cls;
    uint64_t u;
    const char *s;
} val_t;

/* Each form_* reads the forms of one kind (their value into v, v->cls V_OTHER
   for what later code does not need) and returns 1, or 0 for another kind. */

/* Constants and flags; 0 when form is not one of them. */
static int
form_const(pe_rd_t *r, unsigned form, int64_t implicit, val_t *v)
{
    switch (form) {
    case DW_FORM_data1:
    case DW_FORM_data2:
    case DW_FORM_data4:
    case DW_FORM_data8:
        v->cls = V_CONST;
        v->u = pe_rd_fixed(r, form == DW_FORM_data1   ? 1
                              : form == DW_FORM_data2 ? 2
                              : form == DW_FORM_data4 ? 4
                                                      : 8);
        break;
    case DW_FORM_data16: pe_rd_skip(r, 16); break;
    case DW_FORM_sdata:
        v->cls = V_CONST;
        v->u = (uint64_t)pe_rd_sleb(r);
        break;
    case DW_FORM_udata:
        v->cls = V_CONST;
        v->u = pe_rd_uleb(r);
        break;
    case DW_FORM_implicit_const:
        v->cls = V_CONST;
        v->u = (uint64_t)implicit;
        break;
    case DW_FORM_flag: pe_rd_skip(r, 1); break;
    case DW_FORM_flag_present: break;
    default: return 0;
    }
    return 1;
}

/* Strings: inline, in .debug_str or .debug_line_str, or by index; 0 when form is not one of them.
 */
static int
form_string(pe_dw_obj_t *o, const cu_t *cu, pe_rd_t *r, unsigned form, val_t *v)
{
    switch (form) {
    case DW_FORM_string:
        v->s = pe_rd_cstr(r);
        v->cls = v->s ? V_STR : V_OTHER;
        break;
    case DW_FORM_strp:
    case DW_FORM_line_strp: {
        uint64_t off = pe_rd_fixed(r, cu->off_size);
        const sec_t *s = &o->sec[form == DW_FORM_strp ? S_STR : S_LINE_STR];

        if (r->ok && s->p && off < s->n && memchr(s->p + off, 0, s->n - off)) {
            v->cls = V_STR;
            v->s = (const char *)s->p + off;
        }
        break;
    }
    case DW_FORM_strx:
    case DW_FORM_GNU_str_index:
        v->cls = V_STRX;
        v->u = pe_rd_uleb(r);
        break;
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
        v->cls = V_STRX;
        v->u = pe_rd_fixed(r, form - DW_FORM_strx1 + 1);
        break;
    default: return 0;
    }
    return 1;
}

/* Addresses, as they are or by index into .debug_addr; 0 when form is not one of them. */
static int
form_addr(const cu_t *cu, pe_rd_t *r, unsigned form, val_t *v)
{
    switch (form) {
    case DW_FORM_addr:
        v->cls = V_ADDR;
        v->u = pe_rd_fixed(r, cu->addr_size);
        break;
    case DW_FORM_addrx:
    case DW_FORM_GNU_addr_index:
        v->cls = V_ADDRX;
        v->u = pe_rd_uleb(r);
        break;
    case DW_FORM_addrx1:
    case DW_FORM_addrx2:
    case DW_FORM_addrx3:
    case DW_FORM_addrx4:
        v->cls = V_ADDRX;
        v->u = pe_rd_fixed(r, form - DW_FORM_addrx1 + 1);
        break;
    default: return 0;
    }
    return 1;
}

/* References to other entries (those of other units or files skipped); 0 when form is not one of
 * them. */
static int
form_ref(const cu_t *cu, pe_rd_t *r, unsigned form, val_t *v)
{
    switch (form) {
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
        v->cls = V_REF;
        v->u = cu->off + pe_rd_fixed(r, form == DW_FORM_ref1   ? 1
                                        : form == DW_FORM_ref2 ? 2
                                        : form == DW_FORM_ref4 ? 4
                                                               : 8);
        break;
    case DW_FORM_ref_udata:
        v->cls = V_REF;
        v->u = cu->off + pe_rd_uleb(r);
        break;
    case DW_FORM_ref_addr:
        v->cls = V_REF;
        v->u = pe_rd_fixed(r, cu->version <= 2 ? cu->addr_size : cu->off_size);
        break;
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8: pe_rd_skip(r, 8); break;
    case DW_FORM_ref_sup4: pe_rd_skip(r, 4); break;
    default: return 0;
    }
    return 1;
}

/* Section offsets, list indexes and blocks (blocks skipped); 0 when form is not one of them. */
static int
form_other(const cu_t *cu, pe_rd_t *r, unsigned form, val_t *v)
{
    switch (form) {
    case DW_FORM_sec_offset:
        v->cls = V_SECOFF;
        v->u = pe_rd_fixed(r, cu->off_size);
        break;
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt: pe_rd_skip(r, cu->off_size); break;
    case DW_FORM_rnglistx:
        v->cls = V_RNGLISTX;
        v->u = pe_rd_uleb(r);
        break;
    case DW_FORM_loclistx: pe_rd_uleb(r); break;
    case DW_FORM_block1: pe_rd_skip(r, pe_rd_u8(r)); break;
    case DW_FORM_block2: pe_rd_skip(r, pe_rd_fixed(r, 2)); break;
    case DW_FORM_block4: pe_rd_skip(r, pe_rd_fixed(r, 4)); break;
    case DW_FORM_block:
    case DW_FORM_exprloc: pe_rd_skip(r, pe_rd_uleb(r)); break;
    default: return 0;
    }
    return 1;
}

/* Read one attribute value of `form`; only what later code needs is kept. */
static void
read_form(pe_dw_obj_t *o, const cu_t *cu, pe_rd_t *r, unsigned form, int64_t implicit, val_t *v)
{
    int hops = 0;

    for (;;) {
        v->cls = V_OTHER;
        v->s = NULL;
        if (form != DW_FORM_indirect)
            break;
        form = (unsigned)pe_rd_uleb(r);
        if (++hops >= 4 || form == DW_FORM_implicit_const) {
            r->ok = 0;
            return;
        }
    }
    if (!form_const(r, form, implicit, v) && !form_string(o, cu, r, form, v) &&
        !form_addr(cu, r, form, v) && !form_ref(cu, r, form, v) && !form_other(cu, r, form, v))
        r->ok = 0; /* unknown form: its size is unknown, so is the rest */
}
/* A string value: inline, strp and line_strp point into their sections already; strx
   goes through .debug_str_offsets from the unit's DW_AT_str_offsets_base.  NULL when
   any step leaves its section or the string is not terminated. */

static const char *
str_of(pe_dw_obj_t *o, const cu_t *cu, const val_t *v)
{
    const sec_t *so = &o->sec[S_STR_OFF], *s = &o->sec[S_STR];
    uint64_t at, off;
    pe_rd_t r;

    if (v->cls == V_STR)
        return v->s;
    if (v->cls != V_STRX || v->u > (UINT64_MAX - cu->str_off_base) / 8)
        return NULL;
    at = cu->str_off_base + v->u * cu->off_size;
    r = pe_rd_at(so->p, so->n, at);
    off = pe_rd_fixed(&r, cu->off_size);
    if (!r.ok || !s->p || off >= s->n || !memchr(s->p + off, 0, s->n - off))
        return NULL;
    return (const char *)s->p + off;
}

/* An address value, through .debug_addr for the addrx forms; 0 if unusable. */
static int
addr_of(pe_dw_obj_t *o, const cu_t *cu, const val_t *v, uint64_t *out)
{
    const sec_t *sa = &o->sec[S_ADDR];
    pe_rd_t r;

    if (v->cls == V_ADDR || v->cls == V_CONST) {
        *out = v->u;
        return 1;
    }
    if (v->cls != V_ADDRX || v->u > (UINT64_MAX - cu->addr_base) / 8)
        return 0;
    r = pe_rd_at(sa->p, sa->n, cu->addr_base + v->u * cu->addr_size);
    *out = pe_rd_fixed(&r, cu->addr_size);
    return r.ok;
}
/* Entry idx of the unit's .debug_addr table. */

static int
addrx(pe_dw_obj_t *o, const cu_t *cu, uint64_t idx, uint64_t *out)
{
    val_t v = {V_ADDRX, idx, NULL};

    return addr_of(o, cu, &v, out);
}

/* ---- DIEs ------------------------------------------------------------------------------ */

/* What we keep of one DIE's attributes. */
typedef struct die_s {
    const abbrev_t *ab; /* NULL: a null entry (end of siblings) */
    val_t name, linkage, low, high, ranges, origin, spec, call_file, call_line, call_col;
    val_t comp_dir, stmt_list, str_off_base, addr_base, rnglists_base, gnu_ranges_base;
} die_t;

/* Read the DIE at r (in cu), all attributes when `full`, else only for
   subroutines (others are skipped whole when their size is fixed).  0 on success. */
static int
read_die(pe_dw_obj_t *o, const cu_t *cu, pe_rd_t *r, die_t *d, int full)
{
    uint64_t code = pe_rd_uleb(r);
    const aspec_t *sp;
    uint32_t i;

    d->ab = NULL;
    if (!r->ok)
        return -EINVAL;
    if (code == 0)
        return 0;
    d->ab = abbrev_find(cu->abt, code);
    if (!d->ab)
        return -EINVAL;
    if (!full && d->ab->tag != DW_TAG_subprogram && d->ab->tag != DW_TAG_inlined_subroutine &&
        d->ab->fixed >= 0) {
        pe_rd_skip(r, (uint64_t)d->ab->fixed);
        return r->ok ? 0 : -EINVAL;
    }
    memset(&d->name, 0, sizeof(*d) - offsetof(die_t, name));
    sp = cu->abt->specs + d->ab->first;
    for (i = 0; i < d->ab->n && r->ok; i++) {
        val_t v, *dst;

        read_form(o, cu, r, sp[i].form, sp[i].implicit, &v);
        switch (sp[i].at) {
        case DW_AT_name: dst = &d->name; break;
        case DW_AT_linkage_name:
        case DW_AT_MIPS_linkage_name: dst = &d->linkage; break;
        case DW_AT_low_pc: dst = &d->low; break;
        case DW_AT_high_pc: dst = &d->high; break;
        case DW_AT_ranges: dst = &d->ranges; break;
        case DW_AT_abstract_origin: dst = &d->origin; break;
        case DW_AT_specification: dst = &d->spec; break;
        case DW_AT_call_file: dst = &d->call_file; break;
        case DW_AT_call_line: dst = &d->call_line; break;
        case DW_AT_call_column: dst = &d->call_col; break;
        case DW_AT_comp_dir: dst = &d->comp_dir; break;
        case DW_AT_stmt_list: dst = &d->stmt_list; break;
        case DW_AT_str_offsets_base: dst = &d->str_off_base; break;
        case DW_AT_addr_base:
        case DW_AT_GNU_addr_base: dst = &d->addr_base; break;
        case DW_AT_rnglists_base: dst = &d->rnglists_base; break;
        case DW_AT_GNU_ranges_base: dst = &d->gnu_ranges_base; break;
        default: dst = NULL; break;
        }
        if (dst)
            *dst = v;
    }
    return r->ok ? 0 : -EINVAL;
}

/* The unit holding .debug_info offset `off`, or NULL. */
static cu_t *
cu_of_offset(pe_dw_obj_t *o, uint64_t off)
{
    size_t lo = 0, hi = o->ncus;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (o->cus[mid].end <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < o->ncus && o->cus[lo].off <= off ? &o->cus[lo] : NULL;
}

/* ---- address ranges ------------------------------------------------------------------ */

typedef int (*range_fn)(void *arg, uint64_t lo, uint64_t hi);

/* A DWARF 2-4 range list in .debug_ranges at off: (begin, end) pairs from the base,
   a base-address entry, a (0, 0) end. */
static int
ranges_v4(pe_dw_obj_t *o, const cu_t *cu, uint64_t off, range_fn fn, void *arg)
{
    const sec_t *s = &o->sec[S_RANGES];
    uint64_t base = cu->base, all = cu->addr_size == 4 ? 0xffffffffull : ~0ull;
    pe_rd_t r = pe_rd_at(s->p, s->n, off);
    int n = 0, err;

    while (r.ok && n++ < MAX_RANGES) {
        uint64_t a = pe_rd_fixed(&r, cu->addr_size), b = pe_rd_fixed(&r, cu->addr_size);

        if (!r.ok || (a == 0 && b == 0))
            break;
        if (a == all) {
            base = b;
            continue;
        }
        if (a < b && (err = fn(arg, base + a, base + b)) < 0)
            return err;
    }
    return 0;
}

/* A DWARF 5 range list in .debug_rnglists at off (DW_RLE_* entries, 2.17.3). */
static int
rnglist_v5(pe_dw_obj_t *o, const cu_t *cu, uint64_t off, range_fn fn, void *arg)
{
    const sec_t *s = &o->sec[S_RNGLISTS];
    uint64_t base = cu->base;
    pe_rd_t r = pe_rd_at(s->p, s->n, off);
    int n = 0, err;

    while (r.ok && n++ < MAX_RANGES) {
        uint8_t kind = pe_rd_u8(&r);
        uint64_t a = 0, b = 0;
        int have = 1;

        switch (kind) {
        case 0: return 0; /* DW_RLE_end_of_list */
        case 1:           /* base_addressx */
            have = 0;
            if (!addrx(o, cu, pe_rd_uleb(&r), &base))
                return 0;
            break;
        case 2: /* startx_endx */
            if (!addrx(o, cu, pe_rd_uleb(&r), &a) || !addrx(o, cu, pe_rd_uleb(&r), &b))
                have = 0;
            break;
        case 3: /* startx_length */
            if (!addrx(o, cu, pe_rd_uleb(&r), &a))
                have = 0;
            b = a + pe_rd_uleb(&r);
            break;
        case 4: /* offset_pair */
            a = base + pe_rd_uleb(&r);
            b = base + pe_rd_uleb(&r);
            break;
        case 5: /* base_address */
            have = 0;
            base = pe_rd_fixed(&r, cu->addr_size);
            break;
        case 6: /* start_end */
            a = pe_rd_fixed(&r, cu->addr_size);
            b = pe_rd_fixed(&r, cu->addr_size);
            break;
        case 7: /* start_length */
            a = pe_rd_fixed(&r, cu->addr_size);
            b = a + pe_rd_uleb(&r);
            break;
        default: return 0;
        }
        if (r.ok && have && a < b && (err = fn(arg, a, b)) < 0)
            return err;
    }
    return 0;
}

/* Call fn for each range of a DIE (low/high pc or DW_AT_ranges); -errno from fn stops. */
static int
die_ranges(pe_dw_obj_t *o, const cu_t *cu, const die_t *d, range_fn fn, void *arg)
{
    uint64_t lo, hi, off;

    if (d->ranges.cls == V_NONE) { /* low_pc and high_pc */
        if (d->low.cls == V_NONE || d->high.cls == V_NONE || !addr_of(o, cu, &d->low, &lo))
            return 0;
        if (d->high.cls == V_CONST)
            hi = lo + d->high.u; /* DWARF 4+: an offset from low_pc */
        else if (!addr_of(o, cu, &d->high, &hi))
            return 0;
        return lo < hi ? fn(arg, lo, hi) : 0;
    }
    if (cu->version < 5)
        return d->ranges.cls == V_SECOFF || d->ranges.cls == V_CONST
                   ? ranges_v4(o, cu, d->ranges.u, fn, arg)
                   : 0;
    if (d->ranges.cls == V_RNGLISTX) { /* an index into the unit's offsets table */
        pe_rd_t t = pe_rd_at(o->sec[S_RNGLISTS].p, o->sec[S_RNGLISTS].n,
                             cu->rnglists_base + d->ranges.u * cu->off_size);

        if (d->ranges.u > UINT32_MAX)
            return 0;
        off = cu->rnglists_base + pe_rd_fixed(&t, cu->off_size);
        if (!t.ok)
            return 0;
    } else if (d->ranges.cls == V_SECOFF || d->ranges.cls == V_CONST) {
        off = d->ranges.u;
    } else {
        return 0;
    }
    return rnglist_v5(o, cu, off, fn, arg);
}

/* ---- units and the CU index ------------------------------------------------------------ */
/* qsort order of the CU index: by start address, then unit. */

static int
cur_cmp(const void *a, const void *b)
{
    const cur_t *x = a, *y = b;

    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->cu < y->cu ? -1 : x->cu > y->cu;
}

typedef struct cur_arg_s {
    pe_dw_obj_t *o;
    size_t cap;
    uint32_t cu;
} cur_arg_t;
/* range_fn: one range of a unit into the CU index. */

static int
add_cur(void *arg, uint64_t lo, uint64_t hi)
{
    cur_arg_t *a = arg;
    int err;

    if (lo == 0) /* code the linker dropped keeps address 0: never a real pc */
        return 0;
    if ((err = dw_grow(a->o, (void **)&a->o->cur, &a->cap, a->o->ncur + 1, sizeof(cur_t))))
        return err;
    a->o->cur[a->o->ncur].lo = lo;
    a->o->cur[a->o->ncur].hi = hi;
    a->o->cur[a->o->ncur].cu = a->cu;
    a->o->ncur++;
    return 0;
}

/* The unit headers of .debug_info into o->cus (the units we read: compile, partial and
   skeleton units of DWARF 2-5 with 4- or 8-byte addresses).  0, -EINVAL when there is
   none, or -E2BIG. */
static int
read_unit_headers(pe_dw_obj_t *o)
{
    const sec_t *si = &o->sec[S_INFO];
    size_t capcus = 0;
    uint64_t off = 0;
    int err;

    while (off + 11 <= si->n && o->ncus < MAX_UNITS) {
        pe_rd_t r = pe_rd_at(si->p, si->n, off);
        uint64_t len = pe_rd_fixed(&r, 4);
        cu_t cu;

        memset(&cu, 0, sizeof(cu));
        cu.off = off;
        cu.off_size = 4;
        if (len == 0xffffffff) {
            len = pe_rd_fixed(&r, 8);
            cu.off_size = 8;
        } else if (len >= 0xfffffff0) {
            break;
        }
        if (!r.ok || len > (uint64_t)(r.end - r.p) || len < 7)
            break;
        cu.end = (uint64_t)(r.p - si->p) + len;
        r.end = r.p + len;
        cu.version = (uint8_t)pe_rd_fixed(&r, 2);
        if (cu.version >= 5) {
            cu.unit_type = pe_rd_u8(&r);
            cu.addr_size = pe_rd_u8(&r);
            cu.abbrev_off = pe_rd_fixed(&r, cu.off_size);
            if (cu.unit_type == 4 || cu.unit_type == 5)
                pe_rd_skip(&r, 8);
            else if (cu.unit_type == 2 || cu.unit_type == 6)
                pe_rd_skip(&r, 8 + cu.off_size);
        } else {
            cu.unit_type = 1;
            cu.abbrev_off = pe_rd_fixed(&r, cu.off_size);
            cu.addr_size = pe_rd_u8(&r);
        }
        off = cu.end;
        if (!r.ok || cu.version < 2 || cu.version > 5 || (cu.addr_size != 4 && cu.addr_size != 8) ||
            (cu.unit_type != 1 && cu.unit_type != 3 && cu.unit_type != 4))
            continue;
        cu.die_off = (uint64_t)(r.p - si->p);
        if ((err = dw_grow(o, (void **)&o->cus, &capcus, o->ncus + 1, sizeof(cu_t))))
            return err;
        o->cus[o->ncus++] = cu;
    }
    return o->ncus ? 0 : -EINVAL;
}

/* .debug_aranges (GCC writes it; clang does not by default): its ranges into the CU index,
   and in_aranges[i] set for each unit it covers.  0 or -E2BIG. */
static int
read_aranges(pe_dw_obj_t *o, uint8_t *in_aranges, cur_arg_t *ca)
{
    const sec_t *sa = &o->sec[S_ARANGES];
    uint64_t aoff = 0;
    int err;

    while (sa->p && aoff + 16 <= sa->n) {
        pe_rd_t r = pe_rd_at(sa->p, sa->n, aoff);
        uint64_t set = aoff, len = pe_rd_fixed(&r, 4), cuoff;
        unsigned osz = 4, asz, ssz;
        cu_t *cu;

        if (len == 0xffffffff) {
            len = pe_rd_fixed(&r, 8);
            osz = 8;
        }
        if (!r.ok || len > (uint64_t)(r.end - r.p) || len < 4)
            break;
        aoff = (uint64_t)(r.p - sa->p) + len;
        r.end = r.p + len;
        pe_rd_fixed(&r, 2);
        cuoff = pe_rd_fixed(&r, osz);
        asz = pe_rd_u8(&r);
        ssz = pe_rd_u8(&r);
        cu = cu_of_offset(o, cuoff);
        if (!r.ok || !cu || cu->off != cuoff || asz != 8 || ssz != 0)
            continue;
        /* tuples start at a multiple of twice the address size */
        pe_rd_skip(&r, (16 - (uint64_t)(r.p - (sa->p + set)) % 16) % 16);
        ca->cu = (uint32_t)(cu - o->cus);
        in_aranges[ca->cu] = 1;
        while (r.ok) {
            uint64_t a = pe_rd_fixed(&r, 8), l = pe_rd_fixed(&r, 8);

            if (!r.ok || (a == 0 && l == 0))
                break;
            if (l && a + l > a && (err = add_cur(ca, a, a + l)))
                return err;
        }
    }
    return 0;
}

/* Unit i's DIE: its bases, line table offset and comp_dir, and (when .debug_aranges did not
   cover it) its ranges into the CU index.  A unit that cannot be read is marked broken;
   0, or -E2BIG. */
static int
read_unit_die(pe_dw_obj_t *o, size_t i, int ranges, cur_arg_t *ca)
{
    cu_t *cu = &o->cus[i];
    pe_rd_t r = pe_rd_at(o->sec[S_INFO].p, cu->end, cu->die_off);
    die_t d;
    int err = 0;

    cu->abt = abt_get(o, cu, &err);
    if (!cu->abt) {
        if (err == -E2BIG)
            return err;
        cu->broken = 1;
        return 0;
    }
    if (read_die(o, cu, &r, &d, 1) < 0 || !d.ab ||
        (d.ab->tag != DW_TAG_compile_unit && d.ab->tag != DW_TAG_partial_unit &&
         d.ab->tag != DW_TAG_skeleton_unit)) {
        cu->broken = 1;
        return 0;
    }
    if (d.str_off_base.cls == V_SECOFF || d.str_off_base.cls == V_CONST)
        cu->str_off_base = d.str_off_base.u;
    else if (cu->version >= 5)
        cu->str_off_base = cu->off_size == 8 ? 16 : 8; /* past the first contribution's header */
    if (d.addr_base.cls == V_SECOFF || d.addr_base.cls == V_CONST)
        cu->addr_base = d.addr_base.u;
    if (d.rnglists_base.cls == V_SECOFF || d.rnglists_base.cls == V_CONST)
        cu->rnglists_base = d.rnglists_base.u;
    else if (d.gnu_ranges_base.cls == V_SECOFF || d.gnu_ranges_base.cls == V_CONST)
        cu->rnglists_base = d.gnu_ranges_base.u;
    if (d.low.cls != V_NONE)
        addr_of(o, cu, &d.low, &cu->base);
    if (d.stmt_list.cls == V_SECOFF || d.stmt_list.cls == V_CONST) {
        cu->stmt_list = d.stmt_list.u;
        cu->has_stmt = 1;
    }
    cu->comp_dir = str_of(o, cu, &d.comp_dir);
    if (!ranges)
        return 0;
    ca->cu = (uint32_t)i;
    err = die_ranges(o, cu, &d, add_cur, ca);
    return err < 0 ? err : 0;
}

/* Read every unit header and unit DIE; collect the units' ranges into the CU index, sorted
   by start, each entry with the largest end up to it (cu_of_pc's bound on looking back). */
static int
read_units(pe_dw_obj_t *o)
{
    uint8_t *in_aranges;
    cur_arg_t ca = {o, 0, 0};
    size_t i;
    int err;

    if ((err = read_unit_headers(o)) < 0)
        return err;
    in_aranges = dw_alloc(o, o->ncus, &err);
    if (!in_aranges)
        return err;
    memset(in_aranges, 0, o->ncus);
    if ((err = read_aranges(o, in_aranges, &ca)) < 0)
        goto out;
    for (i = 0; i < o->ncus; i++) {
        if (i % 1024 == 1023 && past_hard_bound()) {
            err = -ETIMEDOUT;
            goto out;
        }
        if ((err = read_unit_die(o, i, !in_aranges[i], &ca)) < 0)
            goto out;
    }
    if (o->ncur > 1)
        qsort(o->cur, o->ncur, sizeof(cur_t), cur_cmp);
    for (i = 0; i < o->ncur; i++)
        o->cur[i].maxhi =
            i && o->cur[i - 1].maxhi > o->cur[i].hi ? o->cur[i - 1].maxhi : o->cur[i].hi;
out:
    dw_free(o, in_aranges);
    return err;
}

/* The unit whose ranges hold pc; among overlapping ones the first in the file. */
static cu_t *
cu_of_pc(pe_dw_obj_t *o, uint64_t pc)
{
    size_t lo = 0, hi = o->ncur, i, steps;
    uint32_t best = NONE;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (o->cur[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (i = lo, steps = 0; i > 0 && steps < 64; i--, steps++) {
        const cur_t *c = &o->cur[i - 1];

        if (c->maxhi <= pc)
            break;
        if (c->lo <= pc && pc < c->hi && c->cu < best)
            best = c->cu;
    }
    return best == NONE ? NULL : &o->cus[best];
}

/* ---- the function tree of one unit ---------------------------------------------------- */

static void
fns_free(pe_dw_obj_t *o, fns_t *f)
{
    if (!f)
        return;
    dw_free(o, f->nodes);
    dw_free(o, f->ranges);
    dw_free(o, f);
}

typedef struct fr_arg_s {
    pe_dw_obj_t *o;
    fns_t *f;
    uint32_t node, parent;
} fr_arg_t;
/* range_fn: one range of a subroutine into its unit's function tree. */

static int
add_frange(void *arg, uint64_t lo, uint64_t hi)
{
    fr_arg_t *a = arg;
    fns_t *f = a->f;
    int err;

    if ((err = dw_grow(a->o, (void **)&f->ranges, &f->capranges, f->nranges + 1, sizeof(frange_t))))
        return err;
    f->ranges[f->nranges].lo = lo;
    f->ranges[f->nranges].hi = hi;
    f->ranges[f->nranges].node = a->node;
    f->ranges[f->nranges].parent = a->parent;
    f->nranges++;
    return 0;
}

static int
frange_cmp(const void *a, const void *b)
{
    const frange_t *x = a, *y = b;

    /* NONE (the top) sorts last; within a parent by address, then DIE order */
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Walk the unit's DIEs once into its function tree. */
static int
build_fns(pe_dw_obj_t *o, cu_t *cu)
{
    const sec_t *si = &o->sec[S_INFO];
    uint32_t stack[MAX_DEPTH + 1];
    pe_rd_t r = pe_rd_at(si->p, cu->end, cu->die_off);
    int depth = 0, err = 0;
    unsigned count = 0;
    fns_t *f;
    size_t i;

    f = dw_alloc(o, sizeof(*f), &err);
    if (!f)
        return err;
    memset(f, 0, sizeof(*f));
    stack[0] = NONE;
    while (r.ok && r.p < r.end) {
        uint64_t die_off = (uint64_t)(r.p - si->p);
        uint32_t me = NONE;
        die_t d;

        if (++count % 4096 == 0 && past_hard_bound()) {
            err = -ETIMEDOUT;
            goto err_free;
        }
        if (read_die(o, cu, &r, &d, 0) < 0)
            break;
        if (!d.ab) { /* end of a sibling list */
            if (--depth <= 0)
                break;
            continue;
        }
        if ((d.ab->tag == DW_TAG_subprogram || d.ab->tag == DW_TAG_inlined_subroutine) &&
            (d.ranges.cls != V_NONE || d.low.cls != V_NONE)) {
            fr_arg_t fa = {o, f, (uint32_t)f->nnodes, stack[depth]};
            size_t before = f->nranges;
            fnode_t *n;

            if (f->nnodes >= NONE - 1) {
                err = -E2BIG;
                goto err_free;
            }
            if ((err =
                     dw_grow(o, (void **)&f->nodes, &f->capnodes, f->nnodes + 1, sizeof(fnode_t))))
                goto err_free;
            if ((err = die_ranges(o, cu, &d, add_frange, &fa)) < 0)
                goto err_free;
            if (f->nranges > before) {
                n = &f->nodes[f->nnodes];
                memset(n, 0, sizeof(*n));
                n->die = die_off;
                n->parent = stack[depth];
                n->inlined = d.ab->tag == DW_TAG_inlined_subroutine;
                n->call_file = d.call_file.cls == V_CONST ? (uint32_t)d.call_file.u : 0;
                n->call_line = d.call_line.cls == V_CONST ? (uint32_t)d.call_line.u : 0;
                n->call_col = d.call_col.cls == V_CONST ? (uint32_t)d.call_col.u : 0;
                me = (uint32_t)f->nnodes++;
            }
        }
        if (d.ab->children) {
            if (depth >= MAX_DEPTH)
                break;
            stack[depth + 1] = me != NONE ? me : stack[depth];
            depth++;
        } else if (depth == 0) {
            break; /* a unit DIE without children */
        }
    }
    if (f->nranges > 1)
        qsort(f->ranges, f->nranges, sizeof(frange_t), frange_cmp);
    for (i = 0; i < f->nnodes; i++)
        f->nodes[i].child0 = f->nodes[i].nchild = 0;
    f->top0 = (uint32_t)f->nranges;
    for (i = f->nranges; i > 0; i--) {
        const frange_t *g = &f->ranges[i - 1];

        if (g->parent == NONE) {
            f->top0 = (uint32_t)(i - 1);
            f->ntop++;
        } else {
            fnode_t *p = &f->nodes[g->parent];

            p->child0 = (uint32_t)(i - 1);
            p->nchild++;
        }
    }
    cu->fns = f;
    return 0;
err_free:
    fns_free(o, f);
    return err;
}

/* Among ranges[first..first+n) (sorted by lo), the one holding pc, or NONE. */
static uint32_t
find_range(const frange_t *ranges, uint32_t first, uint32_t n, uint64_t pc)
{
    uint32_t lo = first, hi = first + n, i, steps;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (ranges[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* siblings seldom overlap; when they do the last-starting one wins, as in LLVM */
    for (i = lo, steps = 0; i > first && steps < 8; i--, steps++)
        if (ranges[i - 1].lo <= pc && pc < ranges[i - 1].hi)
            return i - 1;
    return NONE;
}

/* ---- line tables ----------------------------------------------------------------------- */
/* Free a line table and the paths joined for it. */

static void
lines_free(pe_dw_obj_t *o, lines_t *l)
{
    size_t i;

    if (!l)
        return;
    for (i = 0; l->files && i < l->nfiles; i++)
        dw_free(o, l->files[i].path);
    dw_free(o, l->rows);
    dw_free(o, l->seqs);
    dw_free(o, (void *)l->dirs);
    dw_free(o, l->files);
    dw_free(o, l);
}

/* DWARF 5 directory / file entries: their format, then the entries. */
static int
read_entries(pe_dw_obj_t *o, const cu_t *cu, pe_rd_t *r, int files, lines_t *l)
{
    uint64_t fmt[32][2], count, i;
    unsigned nfmt = pe_rd_u8(r), k;
    int err = 0;

    if (nfmt > 32)
        return -EINVAL;
    for (k = 0; k < nfmt; k++) {
        fmt[k][0] = pe_rd_uleb(r);
        fmt[k][1] = pe_rd_uleb(r);
    }
    count = pe_rd_uleb(r);
    /* each entry takes at least a byte unless it has no fields */
    if (!r->ok || (count && (nfmt == 0 || count > (uint64_t)(r->end - r->p))))
        return -EINVAL;
    if (files) {
        l->files = dw_alloc(o, (count ? count : 1) * sizeof(lfile_t), &err);
        if (!l->files)
            return err;
        memset(l->files, 0, (count ? count : 1) * sizeof(lfile_t));
        l->nfiles = count;
    } else {
        l->dirs = dw_alloc(o, (count ? count : 1) * sizeof(char *), &err);
        if (!l->dirs)
            return err;
        memset((void *)l->dirs, 0, (count ? count : 1) * sizeof(char *));
        l->ndirs = count;
    }
    for (i = 0; i < count && r->ok; i++) {
        for (k = 0; k < nfmt; k++) {
            val_t v;

            read_form(o, cu, r, (unsigned)fmt[k][1], 0, &v);
            if (fmt[k][0] == 1) { /* DW_LNCT_path */
                const char *s = str_of(o, cu, &v);

                if (files)
                    l->files[i].name = s;
                else
                    l->dirs[i] = s;
            } else if (fmt[k][0] == 2 && files && v.cls == V_CONST) { /* DW_LNCT_directory_index */
                l->files[i].dir = v.u;
            }
        }
    }
    return r->ok ? 0 : -EINVAL;
}
/* qsort order of sequences: by start address, then as they came (LLVM's order). */

static int
seq_cmp(const void *a, const void *b)
{
    const seq_t *x = a, *y = b;

    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}
/* Append a row; file and column are clamped to 16 bits (no table we met has more than
   65535 files, and columns only feed pe_dw_frame_t.column). */

static int
add_row(pe_dw_obj_t *o, lines_t *l, uint64_t addr, uint64_t file, uint64_t line, uint64_t col)
{
    int err;
    row_t *w;

    if ((err = dw_grow(o, (void **)&l->rows, &l->caprows, l->nrows + 1, sizeof(row_t))))
        return err;
    w = &l->rows[l->nrows++];
    w->addr = addr;
    w->line = (uint32_t)line;
    w->file = file > 0xffff ? 0xffff : (uint16_t)file;
    w->col = col > 0xffff ? 0xffff : (uint16_t)col;
    return 0;
}

/* What a line program's header says about running it. */
typedef struct line_hdr_s {
    uint8_t std_len[256]; /* operands of each standard opcode */
    uint8_t min_inst, line_range, opcode_base;
    int8_t line_base;
    unsigned addr_size;
} line_hdr_t;

/* DWARF 2-4 include directories and file names, each list NUL-ended (two passes over
   each: count, then fill).  0 or -E2BIG. */
static int
read_v4_entries(pe_dw_obj_t *o, pe_rd_t *h, lines_t *l)
{
    const uint8_t *save = h->p;
    size_t n = 0, i;
    int err = 0;

    while (h->ok && h->p < h->end && *h->p)
        pe_rd_cstr(h), n++;
    h->p = save;
    l->dirs = dw_alloc(o, (n ? n : 1) * sizeof(char *), &err);
    if (!l->dirs)
        return err;
    for (i = 0; i < n; i++)
        l->dirs[i] = pe_rd_cstr(h);
    l->ndirs = n;
    pe_rd_u8(h);
    save = h->p;
    n = 0;
    while (h->ok && h->p < h->end && *h->p) {
        pe_rd_cstr(h);
        pe_rd_uleb(h), pe_rd_uleb(h), pe_rd_uleb(h);
        n++;
    }
    h->p = save;
    l->files = dw_alloc(o, (n ? n : 1) * sizeof(lfile_t), &err);
    if (!l->files)
        return err;
    memset(l->files, 0, (n ? n : 1) * sizeof(lfile_t));
    for (i = 0; i < n && h->ok; i++) {
        l->files[i].name = pe_rd_cstr(h);
        l->files[i].dir = pe_rd_uleb(h);
        pe_rd_uleb(h), pe_rd_uleb(h);
    }
    l->nfiles = h->ok ? n : 0;
    return 0;
}

/* The unit's line program header at r (left at the program, r->end at its end), its
   directories and files into l.  1 to run the program, 0 when there is none we can read,
   or -E2BIG. */
static int
read_line_header(pe_dw_obj_t *o, const cu_t *cu, pe_rd_t *r, lines_t *l, line_hdr_t *lh)
{
    uint64_t len, hdr_len, i;
    unsigned osz = 4;
    const uint8_t *prog;
    pe_rd_t h;
    int err;

    len = pe_rd_fixed(r, 4);
    if (len == 0xffffffff) {
        len = pe_rd_fixed(r, 8);
        osz = 8;
    }
    if (!r->ok || len > (uint64_t)(r->end - r->p))
        return 0;
    r->end = r->p + len;
    l->version = (int)pe_rd_fixed(r, 2);
    if (l->version < 2 || l->version > 5)
        return 0;
    lh->addr_size = cu->addr_size;
    if (l->version >= 5) {
        lh->addr_size = pe_rd_u8(r);
        pe_rd_u8(r); /* segment selector size */
    }
    hdr_len = pe_rd_fixed(r, osz);
    if (!r->ok || hdr_len > (uint64_t)(r->end - r->p))
        return 0;
    prog = r->p + hdr_len;
    h = *r;
    h.end = prog;
    lh->min_inst = pe_rd_u8(&h);
    if (l->version >= 4)
        pe_rd_u8(&h); /* maximum_operations_per_instruction: 1 on the machines we read */
    pe_rd_u8(&h);     /* default_is_stmt: lookups use every row, as LLVM does */
    lh->line_base = (int8_t)pe_rd_u8(&h);
    lh->line_range = pe_rd_u8(&h);
    lh->opcode_base = pe_rd_u8(&h);
    if (!h.ok || lh->line_range == 0 || lh->opcode_base == 0)
        return 0;
    memset(lh->std_len, 0, sizeof(lh->std_len));
    for (i = 1; i < lh->opcode_base; i++)
        lh->std_len[i] = pe_rd_u8(&h);
    if (l->version >= 5) {
        if ((err = read_entries(o, cu, &h, 0, l)) == -E2BIG ||
            (err = read_entries(o, cu, &h, 1, l)) == -E2BIG)
            return err;
    } else if ((err = read_v4_entries(o, &h, l)) < 0) {
        return err;
    }
    r->p = prog;
    return 1;
}

/* An end_sequence row was just added at addr: keep the rows from seq_first as a sequence
   (LLVM keeps one with rows and a non-empty range), or drop them.  0 or -E2BIG. */
static int
end_sequence(pe_dw_obj_t *o, lines_t *l, size_t seq_first, uint64_t addr)
{
    size_t n = l->nrows - seq_first;
    seq_t *s;
    int err;

    if (n < 2 || l->rows[seq_first].addr >= addr) {
        l->nrows = seq_first;
        return 0;
    }
    if ((err = dw_grow(o, (void **)&l->seqs, &l->capseqs, l->nseqs + 1, sizeof(seq_t))))
        return err;
    s = &l->seqs[l->nseqs++];
    s->lo = l->rows[seq_first].addr;
    s->hi = addr;
    s->first = (uint32_t)seq_first;
    s->n = (uint32_t)n;
    return 0;
}

/* Run the line program in r (DWARF 5, 6.2.5) into l's rows and sequences.  0, -E2BIG or
   -ETIMEDOUT. */
static int
run_line_program(pe_dw_obj_t *o, lines_t *l, pe_rd_t *r, const line_hdr_t *lh)
{
    uint64_t addr = 0, file = 1, line = 1, col = 0, i;
    size_t seq_first = l->nrows;
    unsigned count = 0;
    int err;

    while (r->ok && r->p < r->end) {
        uint8_t op = pe_rd_u8(r);
        int emit = 0, end = 0;

        if (++count % 65536 == 0 && past_hard_bound())
            return -ETIMEDOUT;
        if (op >= lh->opcode_base) { /* a special opcode: advance both, emit a row */
            unsigned adj = op - lh->opcode_base;

            addr += (uint64_t)(adj / lh->line_range) * lh->min_inst;
            line += (uint64_t)(int64_t)(lh->line_base + (int)(adj % lh->line_range));
            emit = 1;
        } else if (op == 0) { /* an extended opcode */
            uint64_t elen = pe_rd_uleb(r);
            const uint8_t *next;
            uint8_t sub;

            if (!pe_rd_room(r, elen) || elen == 0)
                break;
            next = r->p + elen;
            sub = pe_rd_u8(r);
            if (sub == 1) { /* DW_LNE_end_sequence */
                emit = end = 1;
            } else if (sub == 2) { /* DW_LNE_set_address */
                addr = pe_rd_fixed(r, elen - 1 <= 8 ? (unsigned)(elen - 1) : lh->addr_size);
            }
            r->p = next;
        } else {
            switch (op) {
            case 1: emit = 1; break;                             /* copy */
            case 2: addr += pe_rd_uleb(r) * lh->min_inst; break; /* advance_pc */
            case 3: line += (uint64_t)pe_rd_sleb(r); break;      /* advance_line */
            case 4: file = pe_rd_uleb(r); break;                 /* set_file */
            case 5: col = pe_rd_uleb(r); break;                  /* set_column */
            case 8:                                              /* const_add_pc */
                addr += (uint64_t)((255 - lh->opcode_base) / lh->line_range) * lh->min_inst;
                break;
            case 9: addr += pe_rd_fixed(r, 2); break; /* fixed_advance_pc */
            case 6:
            case 7:
            case 10:
            case 11: break;
            default:
                for (i = 0; i < lh->std_len[op]; i++)
                    pe_rd_uleb(r);
                break;
            }
        }
        if (!emit)
            continue;
        if ((err = add_row(o, l, addr, file, line, col)))
            return err;
        if (end) {
            if ((err = end_sequence(o, l, seq_first, addr)))
                return err;
            seq_first = l->nrows;
            addr = 0, file = 1, line = 1, col = 0;
        }
        if (l->nrows >= UINT32_MAX / 2)
            return -E2BIG;
    }
    l->nrows = seq_first; /* a last sequence without its end is dropped */
    return 0;
}

/* Decode the unit's line program (DWARF 5, section 6.2) into sequences of rows. */
static int
build_lines(pe_dw_obj_t *o, cu_t *cu)
{
    const sec_t *sl = &o->sec[S_LINE];
    pe_rd_t r = pe_rd_at(sl->p, sl->n, cu->stmt_list);
    line_hdr_t lh;
    lines_t *l;
    int err = 0;

    l = dw_alloc(o, sizeof(*l), &err);
    if (!l)
        return err;
    memset(l, 0, sizeof(*l));
    cu->lines = l;
    if (!cu->has_stmt || (err = read_line_header(o, cu, &r, l, &lh)) <= 0)
        return err;
    if ((err = run_line_program(o, l, &r, &lh)) < 0)
        return err;
    if (l->nseqs > 1)
        qsort(l->seqs, l->nseqs, sizeof(seq_t), seq_cmp);
    return 0;
}

/* The row for pc (LLVM's rule: the last row at or before pc within the
   first sequence, by end address, that holds it), or NULL. */
static const row_t *
find_row(const lines_t *l, uint64_t pc)
{
    size_t lo = 0, hi = l->nseqs;
    const seq_t *s;
    uint32_t a, b;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (l->seqs[mid].hi <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == l->nseqs || l->seqs[lo].lo > pc)
        return NULL;
    s = &l->seqs[lo];
    /* upper bound over rows (first, last) exclusive of both ends, minus one */
    a = s->first + 1;
    b = s->first + s->n - 1;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;

        if (l->rows[mid].addr <= pc)
            a = mid + 1;
        else
            b = mid;
    }
    return &l->rows[a - 1];
}
/* An absolute POSIX path (what LLVM's is_absolute says on Linux). */

static int
is_abs(const char *p)
{
    return p && p[0] == '/';
}

/* llvm::sys::path::append, one component */
static void
path_append(char *buf, size_t cap, size_t *len, const char *c)
{
    size_t n;

    if (*len && buf[*len - 1] == '/') {
        while (*c == '/')
            c++;
    } else if (*len && c[0] != '/') {
        if (*len + 1 < cap)
            buf[(*len)++] = '/';
    }
    n = strlen(c);
    if (n > cap - 1 - *len)
        n = cap - 1 - *len;
    memcpy(buf + *len, c, n);
    *len += n;
    buf[*len] = '\0';
}

/* The path of file index `idx` as LLVM 14 prints it (AbsoluteFilePath), or NULL. */
static const char *
file_path(pe_dw_obj_t *o, const cu_t *cu, lines_t *l, uint64_t idx, int *err)
{
    char buf[4096];
    const char *dir = NULL, *name;
    lfile_t *f;
    size_t len = 0;

    if (l->version >= 5) {
        if (idx >= l->nfiles)
            return NULL;
        f = &l->files[idx];
    } else {
        if (idx == 0 || idx > l->nfiles)
            return NULL;
        f = &l->files[idx - 1];
    }
    if (f->path)
        return f->path;
    name = f->name;
    if (!name)
        return NULL;
    if (is_abs(name))
        return name;
    if (l->version >= 5) {
        if (f->dir < l->ndirs)
            dir = l->dirs[f->dir];
    } else if (f->dir > 0 && f->dir <= l->ndirs) {
        dir = l->dirs[f->dir - 1];
    }
    if (!dir)
        dir = "";
    buf[0] = '\0';
    /* LLVM 14 puts comp_dir in front of any relative directory, DWARF 5's entry 0 too */
    if (cu->comp_dir && cu->comp_dir[0] && !is_abs(dir))
        path_append(buf, sizeof(buf), &len, cu->comp_dir);
    path_append(buf, sizeof(buf), &len, dir);
    path_append(buf, sizeof(buf), &len, name);
    f->path = dw_alloc(o, len + 1, err);
    if (!f->path)
        return NULL;
    memcpy(f->path, buf, len + 1);
    return f->path;
}

/* ---- names ------------------------------------------------------------------------------ */

/* LLVM's findRecursively: the attribute on the DIE, else on the DIEs its
   abstract_origin / specification lead to (depth first, each DIE once). */
static const char *
find_name(pe_dw_obj_t *o, uint64_t die, int linkage)
{
    uint64_t work[MAX_REF_HOPS], seen[MAX_REF_HOPS];
    int nwork = 0, nseen = 0, k;

    work[nwork++] = die;
    seen[nseen++] = die;
    while (nwork > 0) {
        uint64_t off = work[--nwork];
        cu_t *cu = cu_of_offset(o, off);
        const val_t *refs[2];
        pe_rd_t r;
        die_t d;
        int j;

        if (!cu || !cu->abt || off < cu->die_off)
            continue;
        r = pe_rd_at(o->sec[S_INFO].p, cu->end, off);
        if (read_die(o, cu, &r, &d, 1) < 0 || !d.ab)
            continue;
        if (linkage && d.linkage.cls != V_NONE)
            return str_of(o, cu, &d.linkage);
        if (!linkage && d.name.cls != V_NONE)
            return str_of(o, cu, &d.name);
        refs[0] = &d.origin;
        refs[1] = &d.spec;
        for (j = 0; j < 2; j++) {
            if (refs[j]->cls != V_REF)
                continue;
            for (k = 0; k < nseen && seen[k] != refs[j]->u; k++)
                ;
            if (k < nseen || nseen == MAX_REF_HOPS)
                continue;
            seen[nseen++] = refs[j]->u;
            work[nwork++] = refs[j]->u;
        }
    }
    return NULL;
}

static const char *
node_name(pe_dw_obj_t *o, fnode_t *n)
{
    if (!n->resolved) {
        n->name = find_name(o, n->die, 1);
        if (!n->name)
            n->name = find_name(o, n->die, 0);
        n->resolved = 1;
    }
    return n->name;
}

/* ---- objects and the cache --------------------------------------------------------------- */

/* Drop what the object decoded; it is rebuilt on the next lookup. */
static void
obj_unload(pe_dw_obj_t *o)
{
    size_t i;

    for (i = 0; i < o->ncus; i++) {
        fns_free(o, o->cus[i].fns);
        lines_free(o, o->cus[i].lines);
    }
    for (i = 0; i < o->nabts; i++)
        abt_free(o, o->abts[i]);
    dw_free(o, o->abts);
    dw_free(o, o->cus);
    dw_free(o, o->cur);
    for (i = 0; i < S_N; i++) {
        dw_free(o, o->dec[i]);
        o->dec[i] = NULL;
        o->sec[i].p = NULL;
        o->sec[i].n = 0;
    }
    o->abts = NULL;
    o->nabts = o->capabts = 0;
    o->abbrev_work = 0;
    o->cus = NULL;
    o->ncus = 0;
    o->cur = NULL;
    o->ncur = 0;
    o->loaded = 0;
}
/* Sections, then units and the CU index.  A file whose .debug_info or .debug_abbrev
   cannot be read is broken for good; running out of budget or time is not, and the next
   lookup tries again. */

static int
obj_load(pe_dw_obj_t *o)
{
    int k, err;

    for (k = 0; k < S_N; k++) {
        if ((err = load_section(o, k)) < 0) {
            if (err == -E2BIG)
                goto err_unload;
            if (k == S_INFO || k == S_ABBREV) {
                o->broken = 1;
                goto err_unload;
            }
            o->sec[k].p = NULL; /* a broken optional section reads as absent */
            o->sec[k].n = 0;
        }
    }
    err = read_units(o);
    if (err == -EINVAL || err == -ETIMEDOUT) { /* a file that costs that much: once only */
        o->broken = 1;
        goto err_unload;
    }
    if (err < 0)
        goto err_unload;
    o->loaded = 1;
    return 0;
err_unload:
    obj_unload(o);
    return err < 0 ? err : -EINVAL;
}

/* Evict least recently used objects (never `keep`) until the budget holds. */
static void
enforce_budget(pe_dw_obj_t *keep)
{
    while (total_bytes > budget) {
        pe_dw_obj_t *o, *lru = NULL;

        for (o = cache; o; o = o->next)
            if (o != keep && o->loaded && o->bytes && (!lru || o->used < lru->used))
                lru = o;
        if (!lru)
            lru = keep && keep->bytes ? keep : NULL;
        if (!lru)
            return;
        obj_unload(lru);
    }
}

/* Open into o the first file holding DWARF, in pe_dw_open's search order (dwarf.h): the
   object itself, else its separate debug file (elf.c's one search); o->elf.img stays NULL
   when there is none. */
static void
find_dwarf(pe_dw_obj_t *o, const char *path, const char *build_id, const char *debug_dir)
{
    pe_elf_t e;

    if (pe_elf_open(&e, path) == 0) {
        if (find_dwarf_sections(o, &e)) {
            o->elf = e;
            return;
        }
        pe_elf_close(&e);
    }
    if (pe_elf_debug_file(path, build_id, debug_dir, find_dwarf_sections, o, &e))
        o->elf = e;
}

/* ---- API ----------------------------------------------------------------------------------- */

pe_dw_obj_t *
pe_dw_open(const char *path, const char *build_id, const char *debug_dir)
{
    char key[4200];
    struct stat st;
    pe_dw_obj_t *o;
    size_t klen;

    if (!path)
        return NULL;
    if (build_id && build_id[0]) {
        if (snprintf(key, sizeof(key), "b:%s", build_id) >= (int)sizeof(key))
            return NULL;
    } else {
        if (stat(path, &st) < 0)
            return NULL;
        if (snprintf(key, sizeof(key), "p:%s:%llu:%llu:%lld.%09ld", path,
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec) >= (int)sizeof(key))
            return NULL;
    }
    for (o = cache; o; o = o->next)
        if (strcmp(o->key, key) == 0)
            break;
    if (!o) {
        o = calloc(1, sizeof(*o));
        klen = strlen(key);
        if (!o || !(o->key = malloc(klen + 1))) {
            free(o);
            return NULL;
        }
        memcpy(o->key, key, klen + 1);
        find_dwarf(o, path, build_id, debug_dir);
        o->usable = o->elf.img != NULL;
        o->next = cache;
        cache = o;
    }
    o->used = ++tick;
    enforce_budget(o);
    return o->usable ? o : NULL;
}

int
pe_dw_lookup(pe_dw_obj_t *o, uint64_t vaddr, pe_dw_frame_t *out, int max)
{
    uint32_t chain[64], node, ri;
    const row_t *row;
    int n = 0, i, err = 0;
    fns_t *f;
    cu_t *cu;

    if (!o || !o->usable || o->broken || max <= 0 || !out)
        return 0;
    if (past_deadline())
        return -ETIMEDOUT;
    o->used = ++tick;
    if (!o->loaded && (err = obj_load(o)) < 0)
        return err == -E2BIG || err == -ETIMEDOUT ? err : 0;
    cu = cu_of_pc(o, vaddr);
    if (!cu || cu->broken)
        return 0;
    if (!cu->fns && (err = build_fns(o, cu)) < 0) {
        cu->broken |= err == -ETIMEDOUT; /* cut by the hard bound: not again */
        return err == -E2BIG || err == -ETIMEDOUT ? err : 0;
    }
    if (!cu->lines && (err = build_lines(o, cu)) < 0) {
        lines_free(o, cu->lines);
        cu->lines = NULL;
        cu->broken |= err == -ETIMEDOUT;
        return err == -E2BIG || err == -ETIMEDOUT ? err : 0;
    }
    f = cu->fns;
    /* descend from the top-level subprograms to the deepest inlined range */
    ri = find_range(f->ranges, f->top0, f->ntop, vaddr);
    while (ri != NONE && n < (int)(sizeof(chain) / sizeof(chain[0]))) {
        node = f->ranges[ri].node;
        chain[n++] = node;
        ri = find_range(f->ranges, f->nodes[node].child0, f->nodes[node].nchild, vaddr);
    }
    row = find_row(cu->lines, vaddr);
    if (n == 0) {
        if (!row)
            return 0;
        out[0].name = NULL;
        out[0].file = file_path(o, cu, cu->lines, row->file, &err);
        out[0].line = row->line;
        out[0].column = row->col;
        return err ? err : 1;
    }
    /* chain[n-1] is the innermost; stop going out at the nearest subprogram */
    for (i = n - 1; i > 0 && f->nodes[chain[i]].inlined; i--)
        ;
    {
        int first = i, k, m = 0;
        uint32_t cfile = 0, cline = 0, ccol = 0;

        for (k = n - 1; k >= first && m < max; k--, m++) {
            fnode_t *nd = &f->nodes[chain[k]];

            out[m].name = node_name(o, nd);
            if (k == n - 1) {
                out[m].file = row ? file_path(o, cu, cu->lines, row->file, &err) : NULL;
                out[m].line = row ? row->line : 0;
                out[m].column = row ? row->col : 0;
            } else {
                out[m].file = file_path(o, cu, cu->lines, cfile, &err);
                out[m].line = cline;
                out[m].column = ccol;
            }
            if (err)
                return err;
            cfile = nd->call_file;
            cline = nd->call_line;
            ccol = nd->call_col;
        }
        return m;
    }
}

void
pe_dw_set_limits(size_t budget_bytes, int64_t deadline_ns)
{
    budget = budget_bytes ? budget_bytes : DEFAULT_BUDGET;
    deadline = deadline_ns;
    enforce_budget(NULL);
}

void
pe_dw_trim(void)
{
    while (cache) {
        pe_dw_obj_t *o = cache;

        cache = o->next;
        obj_unload(o);
        pe_elf_close(&o->elf);
        free(o->key);
        free(o);
    }
}

size_t
pe_dw_bytes(void)
{
    return total_bytes;
}
