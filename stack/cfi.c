/*
 * cfi.c: rules from the call frame information, a table that keeps them,
 * and the walk that uses them (cfi.h).
 *
 * Finding a pc's rule (once per return address): the object's .eh_frame_hdr
 * has a table of (function start, FDE) sorted by start, searched by
 * bisection; the FDE and its CIE hold the call-frame program, which is run
 * up to the pc (DWARF 5, section 6.4).  Only rbp's rule and the CFA matter
 * here; other registers' rules are parsed and skipped.  Encodings other than
 * the ones GCC, clang and the linkers emit give up rather than guess.  Every
 * read stays inside the loaded segment that holds the tables, so even
 * corrupt tables cannot fault.
 *
 * The table: 2^14 words, open addressing, each word a pc (47 bits) and its
 * rule, written once with a compare-and-swap and never changed until a
 * flush, so readers need no lock and see a whole word or nothing.  A pc with
 * no usable rule in an object is kept as "give up", so its tables are not
 * read again; a pc in no object (JIT code) is not kept.
 *
 * Signal-safe: as cfi.h says.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "../symbols/bytes.h"
#include "cfi.h"

/* ---- the rule word ------------------------------------------------------------- */

#define PC_BITS 47
#define PC_MASK ((1ull << PC_BITS) - 1)
#define KIND_SHIFT 47 /* 2 bits */
#define OFF_SHIFT 49  /* 11 bits: the CFA offset / 8 */
#define OFF_MAX 2047
#define SLOT_SHIFT 60 /* 4 bits: rbp saved at CFA - 8 * slot; 0 = unchanged */
#define SLOT_MAX 15

enum { K_SP = 0, K_BP = 1, K_END = 2, K_GIVE_UP = 3 };

#define RULE(pc, kind, off8, slot)                                                                 \
    (((uint64_t)(pc)&PC_MASK) | ((uint64_t)(kind) << KIND_SHIFT) |                                 \
     ((uint64_t)(off8) << OFF_SHIFT) | ((uint64_t)(slot) << SLOT_SHIFT))
#define RULE_KIND(w) ((int)(((w) >> KIND_SHIFT) & 3))
#define RULE_OFF(w) ((uintptr_t)(((w) >> OFF_SHIFT) & OFF_MAX) * 8)
#define RULE_SLOT(w) ((uintptr_t)((w) >> SLOT_SHIFT))

#define TABLE_SLOTS (1u << 14)
#define PROBES 16

static uint64_t *table;
static uint64_t rules_read;

/* ---- reading the tables ---------------------------------------------------------- */

/* DW_EH_PE_* */
#define PE_OMIT 0xff
#define PE_PCREL 0x10

/* A pointer in encoding `enc`: absolute or pc-relative, any size; other
   applications (datarel, textrel, funcrel, aligned) fail.  The indirect bit
   is ignored: callers only skip such pointers (the personality). */
static uintptr_t
rd_encoded(pe_rd_t *r, uint8_t enc)
{
    uintptr_t at = (uintptr_t)r->p;
    uint64_t v;

    if (enc == PE_OMIT)
        return 0;
    switch (enc & 0x0f) {
    case 0x00: v = pe_rd_fixed(r, 8); break;
    case 0x01: v = pe_rd_uleb(r); break;
    case 0x02: v = pe_rd_fixed(r, 2); break;
    case 0x03: v = pe_rd_fixed(r, 4); break;
    case 0x04: v = pe_rd_fixed(r, 8); break;
    case 0x09: v = (uint64_t)pe_rd_sleb(r); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)pe_rd_fixed(r, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)pe_rd_fixed(r, 4); break;
    case 0x0c: v = pe_rd_fixed(r, 8); break;
    default: r->ok = 0; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case PE_PCREL: v += at; break;
    default: r->ok = 0; return 0;
    }
    return (uintptr_t)v;
}

/* ---- running the call-frame program -------------------------------------------- */

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* A register's rule: only the kinds a walk by rsp/rbp can follow are told
   apart; the rest are "other". */
enum { R_SAME = 0, R_UNDEF, R_OFFSET, R_OTHER };

typedef struct reg_rule_s {
    int kind;
    int64_t off; /* R_OFFSET: saved at CFA + off */
} reg_rule_t;

typedef struct frame_state_s {
    int cfa_reg; /* DWARF number; -1 = a CFA expression */
    int64_t cfa_off;
    reg_rule_t rbp, ra;
} frame_state_t;

typedef struct cie_s {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    int has_aug_data; /* 'z' */
    const uint8_t *insns, *end;
} cie_t;

#define STATE_STACK 8

typedef struct prog_s {
    frame_state_t st, init; /* init: after the CIE (DW_CFA_restore) */
    frame_state_t saved[STATE_STACK];
    int nsaved;
    uintptr_t loc, target;
    const cie_t *cie;
} prog_t;

static reg_rule_t *
rule_for(frame_state_t *st, uint64_t reg)
{
    return reg == REG_RBP ? &st->rbp : reg == REG_RA ? &st->ra : NULL;
}

static void
set_rule(prog_t *pr, uint64_t reg, int kind, int64_t off)
{
    reg_rule_t *r = rule_for(&pr->st, reg);

    if (r) {
        r->kind = kind;
        r->off = off;
    }
}

static void
restore_rule(prog_t *pr, uint64_t reg)
{
    reg_rule_t *r = rule_for(&pr->st, reg), *i = rule_for(&pr->init, reg);

    if (r)
        *r = *i;
}

/* Advance the location by `delta`; 0 when that passes the target (stop). */
static int
advance(prog_t *pr, uint64_t delta)
{
    uint64_t d = delta * pr->cie->code_align;

    if (pr->loc + d > pr->target)
        return 0;
    pr->loc += d;
    return 1;
}

/*
 * run()'s steps, one per kind of instruction: each returns OP_NEXT to go on,
 * OP_NOT_MINE for an instruction of another kind, or what run returns now
 * (1 = done, 0 = something unknown or malformed).
 */
enum { OP_NEXT = -1, OP_NOT_MINE = -2 };

/* The three kinds packed in the high bits with their operand in the low six. */
static int
op_primary(prog_t *pr, pe_rd_t *r, uint8_t op, int64_t da)
{
    switch (op & 0xc0) {
    case 0x40: /* advance_loc */
        if (!advance(pr, op & 0x3f))
            return 1;
        return OP_NEXT;
    case 0x80: /* offset */
        set_rule(pr, op & 0x3f, R_OFFSET, (int64_t)pe_rd_uleb(r) * da);
        return OP_NEXT;
    case 0xc0: /* restore */ restore_rule(pr, op & 0x3f); return OP_NEXT;
    }
    return OP_NOT_MINE;
}

/* The location: set_loc, advance_loc1/2/4. */
static int
op_loc(prog_t *pr, pe_rd_t *r, uint8_t op)
{
    switch (op) {
    case 0x01: { /* set_loc */
        uintptr_t to = rd_encoded(r, pr->cie->fde_enc);
        if (to > pr->target)
            return r->ok;
        pr->loc = to;
        break;
    }
    case 0x02:
        if (!advance(pr, pe_rd_fixed(r, 1)))
            return r->ok;
        break;
    case 0x03:
        if (!advance(pr, pe_rd_fixed(r, 2)))
            return r->ok;
        break;
    case 0x04:
        if (!advance(pr, pe_rd_fixed(r, 4)))
            return r->ok;
        break;
    default: return OP_NOT_MINE;
    }
    return OP_NEXT;
}

/* The CFA's register and offset (an expression: no CFA we can compute). */
static int
op_cfa(prog_t *pr, pe_rd_t *r, uint8_t op, int64_t da)
{
    uint64_t len;

    switch (op) {
    case 0x0c: /* def_cfa */
        pr->st.cfa_reg = (int)pe_rd_uleb(r);
        pr->st.cfa_off = (int64_t)pe_rd_uleb(r);
        break;
    case 0x0d: pr->st.cfa_reg = (int)pe_rd_uleb(r); break;
    case 0x0e: pr->st.cfa_off = (int64_t)pe_rd_uleb(r); break;
    case 0x0f: /* def_cfa_expression */
        len = pe_rd_uleb(r);
        if (pe_rd_room(r, len))
            r->p += len;
        pr->st.cfa_reg = -1;
        break;
    case 0x12: /* def_cfa_sf */
        pr->st.cfa_reg = (int)pe_rd_uleb(r);
        pr->st.cfa_off = pe_rd_sleb(r) * da;
        break;
    case 0x13: pr->st.cfa_off = pe_rd_sleb(r) * da; break; /* def_cfa_offset_sf */
    default: return OP_NOT_MINE;
    }
    return OP_NEXT;
}

/* A register's rule (the extended forms; R_OTHER for what we do not follow). */
static int
op_rule(prog_t *pr, pe_rd_t *r, uint8_t op, int64_t da)
{
    uint64_t reg, len;

    switch (op) {
    case 0x05: /* offset_extended */
        reg = pe_rd_uleb(r);
        set_rule(pr, reg, R_OFFSET, (int64_t)pe_rd_uleb(r) * da);
        break;
    case 0x06: restore_rule(pr, pe_rd_uleb(r)); break;
    case 0x07: set_rule(pr, pe_rd_uleb(r), R_UNDEF, 0); break;
    case 0x08: set_rule(pr, pe_rd_uleb(r), R_SAME, 0); break;
    case 0x09: /* register */
        reg = pe_rd_uleb(r);
        (void)pe_rd_uleb(r);
        set_rule(pr, reg, R_OTHER, 0);
        break;
    case 0x10: /* expression */
    case 0x16: /* val_expression */
        reg = pe_rd_uleb(r);
        len = pe_rd_uleb(r);
        if (pe_rd_room(r, len))
            r->p += len;
        set_rule(pr, reg, R_OTHER, 0);
        break;
    case 0x11: /* offset_extended_sf */
        reg = pe_rd_uleb(r);
        set_rule(pr, reg, R_OFFSET, pe_rd_sleb(r) * da);
        break;
    case 0x14: /* val_offset */
        reg = pe_rd_uleb(r);
        (void)pe_rd_uleb(r);
        set_rule(pr, reg, R_OTHER, 0);
        break;
    case 0x15: /* val_offset_sf */
        reg = pe_rd_uleb(r);
        (void)pe_rd_sleb(r);
        set_rule(pr, reg, R_OTHER, 0);
        break;
    case 0x2f: /* GNU_negative_offset_extended */
        reg = pe_rd_uleb(r);
        set_rule(pr, reg, R_OFFSET, -(int64_t)pe_rd_uleb(r) * da);
        break;
    default: return OP_NOT_MINE;
    }
    return OP_NEXT;
}

/* The rest: nop, the state stack, GNU_args_size; anything else is unknown. */
static int
op_other(prog_t *pr, pe_rd_t *r, uint8_t op)
{
    switch (op) {
    case 0x00: break; /* nop */
    case 0x0a:        /* remember_state */
        if (pr->nsaved == STATE_STACK)
            return 0;
        pr->saved[pr->nsaved++] = pr->st;
        break;
    case 0x0b: /* restore_state */
        if (pr->nsaved == 0)
            return 0;
        pr->st = pr->saved[--pr->nsaved];
        break;
    case 0x2e: (void)pe_rd_uleb(r); break; /* GNU_args_size */
    default: return 0;
    }
    return OP_NEXT;
}

/* Run instructions [r) until the location would pass the target or they
   end.  1 = done, 0 = something unknown or malformed. */
static int
run(prog_t *pr, pe_rd_t *r)
{
    int64_t da = pr->cie->data_align;
    int rc;

    while (r->ok && r->p < r->end) {
        uint8_t op = *r->p++;

        if ((rc = op_primary(pr, r, op, da)) == OP_NOT_MINE &&
            (rc = op_loc(pr, r, op)) == OP_NOT_MINE &&
            (rc = op_cfa(pr, r, op, da)) == OP_NOT_MINE &&
            (rc = op_rule(pr, r, op, da)) == OP_NOT_MINE)
            rc = op_other(pr, r, op);
        if (rc != OP_NEXT)
            return rc;
    }
    return r->ok;
}

/* Is [p, p + n) inside the tables' segment? */
static inline int
inside(const pe_cfi_tables_t *t, uintptr_t p, uint64_t n)
{
    return p >= t->lo && p <= t->hi && n <= t->hi - p;
}

/* Parse the CIE at `at` (its length word); 0 when unusable here. */
static int
parse_cie(const pe_cfi_tables_t *t, uintptr_t at, cie_t *c)
{
    const uint8_t *cie = (const uint8_t *)at;
    pe_rd_t r = {cie, cie + 4, 1};
    const char *aug;
    uint64_t len;
    uint8_t version;

    if (!inside(t, at, 4))
        return 0;
    len = pe_rd_fixed(&r, 4);
    if (len == 0 || len == 0xffffffffu || !inside(t, at, 4 + len))
        return 0;
    r.end = cie + 4 + len;
    if (pe_rd_fixed(&r, 4) != 0) /* CIE id */
        return 0;
    version = (uint8_t)pe_rd_fixed(&r, 1);
    if (version != 1 && version != 3)
        return 0;
    aug = (const char *)r.p;
    while (pe_rd_room(&r, 1) && *r.p)
        r.p++;
    if (!pe_rd_room(&r, 1))
        return 0;
    r.p++;
    c->code_align = pe_rd_uleb(&r);
    c->data_align = pe_rd_sleb(&r);
    if ((version == 1 ? pe_rd_fixed(&r, 1) : pe_rd_uleb(&r)) != REG_RA)
        return 0;
    c->fde_enc = 0; /* absptr */
    c->has_aug_data = aug[0] == 'z';
    if (c->has_aug_data) {
        uint64_t alen = pe_rd_uleb(&r);
        const uint8_t *data_end;
        if (!pe_rd_room(&r, alen))
            return 0;
        data_end = r.p + alen;
        for (const char *a = aug + 1; *a; a++) {
            switch (*a) {
            case 'R': c->fde_enc = (uint8_t)pe_rd_fixed(&r, 1); break;
            case 'P': (void)rd_encoded(&r, (uint8_t)pe_rd_fixed(&r, 1)); break;
            case 'L': (void)pe_rd_fixed(&r, 1); break;
            default: return 0; /* 'S' (a signal frame) and anything unknown */
            }
        }
        if (!r.ok || r.p > data_end)
            return 0;
        r.p = data_end;
    } else if (aug[0]) {
        return 0;
    }
    c->insns = r.p;
    c->end = r.end;
    return r.ok;
}

/* The FDE that may cover `at`, from the sorted table of .eh_frame_hdr (its
   address, unchecked); 0 if none. */
static uintptr_t
find_fde(const pe_cfi_tables_t *t, uintptr_t at)
{
    const uint8_t *hdr = t->hdr;
    pe_rd_t r = {hdr + 4, (const uint8_t *)t->hi, 1};
    const int32_t *tab;
    int64_t rel = (int64_t)(at - (uintptr_t)hdr);
    uint64_t count, lo = 0, hi;

    /* version 1; the table: sdata4 relative to hdr, count: udata4 */
    if (!inside(t, (uintptr_t)hdr, 4) || hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3b)
        return 0;
    (void)rd_encoded(&r, hdr[1]); /* eh_frame_ptr: not needed */
    count = pe_rd_fixed(&r, 4);
    if (!r.ok || count == 0 || !inside(t, (uintptr_t)r.p, count * 8))
        return 0;
    tab = (const int32_t *)r.p;
    if (rel < tab[0])
        return 0;
    hi = count;
    while (hi - lo > 1) { /* the last entry whose start <= rel */
        uint64_t mid = lo + (hi - lo) / 2;
        if (tab[2 * mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    return (uintptr_t)hdr + (uintptr_t)(intptr_t)tab[2 * lo + 1];
}

/* The rule word for return address `pc` (its call at pc - 1) from tables t;
   every read inside [t->lo, t->hi). */
static uint64_t
rule_from_tables(const pe_cfi_tables_t *t, uintptr_t pc)
{
    uint64_t give_up = RULE(pc, K_GIVE_UP, 0, 0), len, cie_off;
    uintptr_t at = pc - 1, fde_at, start, range;
    const uint8_t *fde;
    prog_t pr;
    cie_t cie;
    pe_rd_t r;

    if (!(fde_at = find_fde(t, at)) || !inside(t, fde_at, 8))
        return give_up;
    fde = (const uint8_t *)fde_at;
    r = (pe_rd_t){fde, fde + 8, 1};
    len = pe_rd_fixed(&r, 4);
    cie_off = pe_rd_fixed(&r, 4);
    if (len < 4 || len == 0xffffffffu || cie_off == 0 || !inside(t, fde_at, 4 + len))
        return give_up;
    if (!parse_cie(t, fde_at + 4 - cie_off, &cie))
        return give_up;
    r.end = fde + 4 + len;
    start = rd_encoded(&r, cie.fde_enc);
    range = rd_encoded(&r, cie.fde_enc & 0x0f);
    if (cie.has_aug_data) {
        uint64_t alen = pe_rd_uleb(&r);
        if (pe_rd_room(&r, alen))
            r.p += alen;
    }
    if (!r.ok || at < start || at - start >= range)
        return give_up;

    memset(&pr, 0, sizeof(pr));
    pr.st.cfa_reg = -1;
    pr.st.ra.kind = R_OTHER; /* until the CIE says where it is */
    pr.loc = start;
    pr.target = at;
    pr.cie = &cie;
    {
        pe_rd_t ci = {cie.insns, cie.end, 1};
        if (!run(&pr, &ci))
            return give_up;
    }
    pr.init = pr.st;
    pr.nsaved = 0;
    if (!run(&pr, &r))
        return give_up;

    if (pr.st.ra.kind == R_UNDEF)
        return RULE(pc, K_END, 0, 0); /* the outermost frame (_start, clone3's child) */
    if (pr.st.ra.kind != R_OFFSET || pr.st.ra.off != -8)
        return give_up;
    if ((pr.st.cfa_reg != REG_RSP && pr.st.cfa_reg != REG_RBP) || pr.st.cfa_off <= 0 ||
        pr.st.cfa_off % 8 || pr.st.cfa_off / 8 > OFF_MAX)
        return give_up;
    {
        uint64_t slot = 0;
        if (pr.st.rbp.kind == R_OFFSET) {
            if (pr.st.rbp.off >= -8 || pr.st.rbp.off % 8 || -pr.st.rbp.off / 8 > SLOT_MAX)
                return give_up;
            slot = (uint64_t)(-pr.st.rbp.off / 8);
        } else if (pr.st.rbp.kind == R_OTHER) {
            return give_up;
        }
        return RULE(pc, pr.st.cfa_reg == REG_RSP ? K_SP : K_BP, pr.st.cfa_off / 8, slot);
    }
}

/* pc's rule word from its object's tables; 0 when pc is in no object. */
static uint64_t
read_rule(uintptr_t pc)
{
    pe_cfi_tables_t t;
    int found = pe_unwind_eh_frame_hdr(pc - 1, &t);

    if (found < 0)
        return 0;
    __atomic_add_fetch(&rules_read, 1, __ATOMIC_RELAXED);
    return found ? rule_from_tables(&t, pc) : RULE(pc, K_GIVE_UP, 0, 0);
}

int
pe_cfi_rule_from(const pe_cfi_tables_t *t, uintptr_t pc, int *cfa_reg, int *cfa_off, int *rbp_slot)
{
    uint64_t w = rule_from_tables(t, pc);

    switch (RULE_KIND(w)) {
    case K_GIVE_UP: return 0;
    case K_END: *cfa_reg = -1; break;
    default: *cfa_reg = RULE_KIND(w) == K_SP ? REG_RSP : REG_RBP; break;
    }
    *cfa_off = (int)RULE_OFF(w);
    *rbp_slot = (int)RULE_SLOT(w);
    return 1;
}

/* ---- the table -------------------------------------------------------------------- */

static inline uint32_t
hash_pc(uintptr_t pc)
{
    return (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 50) & (TABLE_SLOTS - 1);
}

/* A miss: read pc's rule from the tables and keep it (probing from h). */
static __attribute__((noinline)) uint64_t
rule_miss(uintptr_t pc, uint32_t h)
{
    uint64_t w;

    if (pc >> PC_BITS || !pe_unwind_tables_pin()) /* (a pc the word cannot hold) */
        return 0;
    w = read_rule(pc);
    pe_unwind_tables_unpin();
    if (!w)
        return 0;
    for (uint32_t i = 0; i < PROBES; i++) {
        uint64_t *slot = &table[(h + i) & (TABLE_SLOTS - 1)], seen = 0;
        if (__atomic_compare_exchange_n(slot, &seen, w, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) ||
            (seen & PC_MASK) == pc)
            break;
    }
    return RULE_KIND(w) == K_GIVE_UP ? 0 : w;
}

/* pc's rule; 0 = give up.  (A pc above PC_BITS never equals a kept word's.) */
static inline uint64_t
rule_of(const uint64_t *tab, uintptr_t pc)
{
    uint32_t h = hash_pc(pc);

    for (uint32_t i = 0; i < PROBES; i++) {
        uint64_t w = __atomic_load_n(&tab[(h + i) & (TABLE_SLOTS - 1)], __ATOMIC_RELAXED);
        if (PE_LIKELY((w & PC_MASK) == pc))
            return RULE_KIND(w) == K_GIVE_UP ? 0 : w;
        if (!w)
            return rule_miss(pc, h);
    }
    return 0; /* no room near h: libunwind walks this one (reading the rule
                 each time would cost more than its walk) */
}

int
pe_cfi_init(void)
{
    void *m;

    if (table)
        return 0;
    m = mmap(NULL, TABLE_SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -ENOMEM;
    __atomic_store_n(&table, m, __ATOMIC_RELEASE);
    return 0;
}

void
pe_cfi_flush(void)
{
    if (!table)
        return;
    for (uint32_t i = 0; i < TABLE_SLOTS; i++)
        if (__atomic_load_n(&table[i], __ATOMIC_RELAXED))
            __atomic_store_n(&table[i], 0, __ATOMIC_RELAXED);
}

uint64_t
pe_cfi_rules_read(void)
{
    return __atomic_load_n(&rules_read, __ATOMIC_RELAXED);
}

int
pe_cfi_rule(uintptr_t pc, int *cfa_reg, int *cfa_off, int *rbp_slot)
{
    const uint64_t *tab = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    uint64_t w;

    if (!tab || !(w = rule_of(tab, pc)))
        return 0;
    *cfa_reg = RULE_KIND(w) == K_END ? -1 : RULE_KIND(w) == K_SP ? REG_RSP : REG_RBP;
    *cfa_off = (int)RULE_OFF(w);
    *rbp_slot = (int)RULE_SLOT(w);
    return 1;
}

/* ---- the walk ---------------------------------------------------------------------- */

/* (not instrumented: it reads saved registers and return addresses, which
   ASan has no reason to track, and a test feeds it made-up frames) */
__attribute__((no_sanitize_address)) PE_SIGSAFE int
pe_cfi_walk(uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t hi, uintptr_t *pcs, int max)
{
    const uint64_t *tab = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    int n = 0;

    if (PE_UNLIKELY(!tab) || sp >= hi)
        return -1;
    /* Every read is in [sp, hi): the stack from the walk's start to its top,
       all mapped.  A pc that is no return address (0, a stale word) finds no
       object, so no rule. */
    while (n < max) {
        uint64_t w = rule_of(tab, pc);
        uintptr_t cfa, slot;

        if (!w)
            return -1;
        pcs[n++] = pc;
        if (RULE_KIND(w) == K_END)
            return n;
        cfa = (RULE_KIND(w) == K_SP ? sp : bp) + RULE_OFF(w);
        if (cfa <= sp || cfa > hi || (cfa & 7)) /* strictly up the stack, below its top */
            return -1;
        if ((slot = RULE_SLOT(w)) != 0) {
            if (cfa - sp < 8 * slot)
                return -1;
            bp = *(const uintptr_t *)(cfa - 8 * slot);
        }
        pc = *(const uintptr_t *)(cfa - 8);
        sp = cfa;
    }
    return n;
}
