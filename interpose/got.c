/*
 * got.c: the relocation slots of every loaded object, redirected and put
 * back.  For each object dl_iterate_phdr reports (never ours, the loader's
 * or the vDSO), its dynamic section gives the symbol and string tables and
 * the relocations (DT_JMPREL, DT_RELA); a slot of type R_X86_64_JUMP_SLOT or
 * R_X86_64_GLOB_DAT whose symbol is a target is redirected when it holds the
 * target's definition (bound), or its own PLT stub (lazy binding not done
 * yet, and the version the object asks for is the definition's).  Anything
 * else (a second definition of the name, an old symbol version) is left
 * alone and counted.
 *
 * The store is one compare-and-swap of the aligned 8-byte slot: a thread
 * calling through it at that moment calls the old or the new function, and
 * a lazy binding that lands meanwhile is seen, not overwritten blindly.  A
 * page that is not writable (RELRO) is made writable for the stores and
 * given back its protection as /proc/self/maps said it was; a page that
 * cannot be (mprotect refused) leaves its object alone, named.  Everything
 * happens inside the loader's iterator, which keeps the object mapped
 * meanwhile; nothing here asks the loader anything else (its other lock),
 * and nothing allocates with malloc (our records are mmap'd).
 *
 * Signal-safe: no.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../preload/proc.h"
#include "interpose_int.h"

/* ---- helpers -------------------------------------------------------------------- */

static uint32_t
fnv(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static int
find_target(const pe_ip_got_t *g, const char *name)
{
    uint32_t i = fnv(name) & (PE_IP_HASH - 1);

    for (int n = 0; n < PE_IP_HASH; n++, i = (i + 1) & (PE_IP_HASH - 1)) {
        int k = g->hash[i];
        if (k == 0)
            return -1;
        if (!strcmp(g->t[k - 1].name, name))
            return k - 1;
    }
    return -1;
}

/* Grow an mmap'd array to hold one more; 0 or -ENOMEM. */
static int
grow(void **v, size_t *cap, size_t n, size_t each)
{
    size_t want = *cap ? *cap * 2 : 4096 / each;
    void *p;

    if (n < *cap)
        return 0;
    if (*v)
        p = mremap(*v, *cap * each, want * each, MREMAP_MAYMOVE);
    else
        p = mmap(NULL, want * each, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -ENOMEM;
    *v = p;
    *cap = want;
    return 0;
}

static size_t
page_size(void)
{
    static size_t ps;

    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

/* /proc/self/maps into g->maps (sorted, as the kernel lists them). */
static int
read_maps(pe_ip_got_t *g)
{
    pe_proc_maps_t it;
    uintptr_t lo, hi;
    int prot, err;

    g->nmaps = 0;
    if ((err = pe_proc_maps_open(&it)) < 0)
        return err;
    while (pe_proc_maps_next(&it, &lo, &hi, &prot) > 0) {
        if (grow((void **)&g->maps, &g->capmaps, g->nmaps, sizeof(*g->maps)) < 0) {
            pe_proc_maps_close(&it);
            return -ENOMEM;
        }
        g->maps[g->nmaps++] = (pe_ip_map_t){lo, hi, prot};
    }
    pe_proc_maps_close(&it);
    return g->nmaps ? 0 : -EIO;
}

/* The protection of the page at a, or -1 when no mapping holds it. */
static int
prot_of(const pe_ip_got_t *g, uintptr_t a)
{
    size_t lo = 0, hi = g->nmaps;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a < g->maps[mid].lo)
            hi = mid;
        else if (a >= g->maps[mid].hi)
            lo = mid + 1;
        else
            return g->maps[mid].prot;
    }
    return -1;
}

/* 1 when [a, a + len) lies in readable mappings (as maps said). */
static int
readable(const pe_ip_got_t *g, uintptr_t a, size_t len)
{
    size_t ps = page_size();

    for (uintptr_t p = a & ~(uintptr_t)(ps - 1); p < a + len; p += ps) {
        int prot = prot_of(g, p);
        if (prot < 0 || !(prot & PROT_READ))
            return 0;
    }
    return 1;
}

static void
say_left(pe_ip_got_t *g, const char *name, const char *why)
{
    size_t k = strlen(g->left);

    g->nleft++;
    if (!name || !*name)
        name = "the program";
    if (k + strlen(name) + strlen(why) + 8 >= sizeof(g->left))
        return; /* counted, not named */
    memcpy(g->left + k, k ? ", " : "", k ? 2 : 0);
    k += k ? 2 : 0;
    k += (size_t)stpcpy(g->left + k, name) - (size_t)(g->left + k);
    g->left[k++] = ' ';
    g->left[k++] = '(';
    k += (size_t)stpcpy(g->left + k, why) - (size_t)(g->left + k);
    g->left[k++] = ')';
    g->left[k] = '\0';
}

/* Objects never walked: ours, the loader (AT_BASE), the vDSO. */
static int
skipped(const pe_ip_got_t *g, const struct dl_phdr_info *info)
{
    uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);

    if (g->skip_base && info->dlpi_addr == g->skip_base)
        return 1;
    if (info->dlpi_addr && info->dlpi_addr == (uintptr_t)getauxval(AT_BASE))
        return 1;
    if (vdso && (uintptr_t)info->dlpi_phdr - vdso < 65536)
        return 1;
    if (g->only) {
        size_t n = strlen(info->dlpi_name), m = strlen(g->only);
        if (n < m || strcmp(info->dlpi_name + n - m, g->only) != 0)
            return 1;
    }
    return 0;
}

static pe_ip_obj_t *
obj_find(pe_ip_got_t *g, const struct dl_phdr_info *info)
{
    for (size_t i = 0; i < g->nobj; i++)
        if (g->obj[i].base == info->dlpi_addr && g->obj[i].phdr == info->dlpi_phdr)
            return &g->obj[i];
    return NULL;
}

/* ---- one object's dynamic section ---------------------------------------------------- */

typedef struct dynobj_s {
    uintptr_t base, lo, hi; /* load bias; the span of its PT_LOADs */
    const ElfW(Sym) * sym;
    const char *str;
    const ElfW(Rela) * rel[2];
    size_t nrel[2];
    const ElfW(Half) * versym;
    const ElfW(Verneed) * verneed;
    size_t nverneed;
    int rel_only; /* DT_REL relocations (not x86-64's): left alone */
} dynobj_t;

static uintptr_t
dptr(uintptr_t base, ElfW(Addr) v)
{
    /* The loader rewrote these to addresses in place, except where it
       could not: an offset is below the load bias. */
    return base && v < base ? base + v : v;
}

/* 1 with d filled, 0 when the object has nothing to look at, -1 when a
   table of it is on a page that cannot be read (a program's mprotect). */
static int
read_dynamic(const pe_ip_got_t *g, const struct dl_phdr_info *info, dynobj_t *d)
{
    const ElfW(Dyn) *dyn = NULL;
    size_t pltrelsz = 0, relasz = 0, relaent = sizeof(ElfW(Rela));
    uintptr_t jmprel = 0, rela = 0;
    int pltrel = DT_RELA;

    memset(d, 0, sizeof(*d));
    d->base = info->dlpi_addr;
    d->lo = UINTPTR_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_LOAD) {
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
            d->lo = lo < d->lo ? lo : d->lo;
            d->hi = hi > d->hi ? hi : d->hi;
        }
    }
    if (!dyn)
        return 0;
    for (;; dyn++) {
        if (!readable(g, (uintptr_t)dyn, sizeof(*dyn)))
            return -1;
        if (dyn->d_tag == DT_NULL)
            break;
        switch (dyn->d_tag) {
        case DT_SYMTAB: d->sym = (const void *)dptr(d->base, dyn->d_un.d_ptr); break;
        case DT_STRTAB: d->str = (const void *)dptr(d->base, dyn->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = dptr(d->base, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL: pltrel = (int)dyn->d_un.d_val; break;
        case DT_RELA: rela = dptr(d->base, dyn->d_un.d_ptr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_RELAENT: relaent = dyn->d_un.d_val; break;
        case DT_REL: d->rel_only = 1; break;
        case DT_VERSYM: d->versym = (const void *)dptr(d->base, dyn->d_un.d_ptr); break;
        case DT_VERNEED: d->verneed = (const void *)dptr(d->base, dyn->d_un.d_ptr); break;
        case DT_VERNEEDNUM: d->nverneed = dyn->d_un.d_val; break;
        default: break;
        }
    }
    if (!d->sym || !d->str || relaent != sizeof(ElfW(Rela)))
        return 0;
    if (jmprel && pltrel == DT_RELA) {
        d->rel[0] = (const void *)jmprel;
        d->nrel[0] = pltrelsz / sizeof(ElfW(Rela));
    } else if (jmprel) {
        d->rel_only = 1;
    }
    if (rela) {
        d->rel[1] = (const void *)rela;
        d->nrel[1] = relasz / sizeof(ElfW(Rela));
    }
    for (int w = 0; w < 2; w++)
        if (d->rel[w] && !readable(g, (uintptr_t)d->rel[w], d->nrel[w] * sizeof(ElfW(Rela))))
            return -1;
    if (d->verneed && !readable(g, (uintptr_t)d->verneed, d->nverneed * 64))
        d->versym = NULL, d->verneed = NULL; /* (then lazy slots asking a version are left) */
    return 1;
}

/* The version name the object asks for symbol idx, or NULL (none asked). */
static const char *
wanted_version(const dynobj_t *d, uint32_t idx)
{
    const ElfW(Verneed) * vn;
    unsigned vi;

    if (!d->versym || !d->verneed)
        return NULL;
    vi = d->versym[idx] & 0x7fff;
    if (vi <= 1)
        return NULL; /* local or global: the default version */
    vn = d->verneed;
    for (size_t i = 0; i < d->nverneed; i++) {
        const ElfW(Vernaux) *va = (const void *)((const char *)vn + vn->vn_aux);
        for (unsigned j = 0; j < vn->vn_cnt; j++) {
            if (va->vna_other == vi)
                return d->str + va->vna_name;
            va = (const void *)((const char *)va + va->vna_next);
        }
        if (!vn->vn_next)
            break;
        vn = (const void *)((const char *)vn + vn->vn_next);
    }
    return "?"; /* asked for a version we cannot name: not the definition's */
}

/* ---- redirecting one object ---------------------------------------------------------- */

typedef struct change_s {
    uintptr_t slot, old;
    int target;
} change_t;

#define BATCH 256

static int
by_slot(const change_t *a, const change_t *b)
{
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

/* Store ch[0..n) (sorted by slot) page by page; returns the number stored,
   or -errno when a page could not be made writable (then *why says so). */
static int
store_batch(pe_ip_got_t *g, const struct dl_phdr_info *info, change_t *ch, int n, int restore,
            const char **why)
{
    size_t ps = page_size();
    int done = 0;

    for (int i = 0; i < n;) {
        uintptr_t page = ch[i].slot & ~(uintptr_t)(ps - 1);
        int prot = prot_of(g, page), opened = 0, j;

        if (prot < 0 || !(prot & PROT_READ)) {
            *why = prot < 0 ? "slots on a page /proc/self/maps did not list" : "unreadable slots";
            return -EFAULT;
        }
        if (!(prot & PROT_WRITE)) {
            if (mprotect((void *)page, ps, prot | PROT_WRITE) != 0) {
                *why = errno == EACCES ? "mprotect refused: EACCES" : "mprotect refused";
                return -errno;
            }
            opened = 1;
            g->pages++;
        }
        for (j = i; j < n && (ch[j].slot & ~(uintptr_t)(ps - 1)) == page; j++) {
            uintptr_t *s = (uintptr_t *)ch[j].slot, want = ch[j].old;
            uintptr_t to = restore ? ch[j].old : g->t[ch[j].target].to;

            if (restore)
                want = g->rec[ch[j].target].to;
            /* One CAS: a caller sees the old or the new pointer; a lazy
               binding that landed since (or a program's own store) wins. */
            if (!__atomic_compare_exchange_n(s, &want, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                continue;
            if (!restore) {
                if (grow((void **)&g->rec, &g->caprec, g->nrec, sizeof(*g->rec)) < 0) {
                    __atomic_store_n(s, ch[j].old, __ATOMIC_RELEASE); /* as it was */
                    g->err = -ENOMEM;
                    continue;
                }
                g->rec[g->nrec++] =
                    (pe_ip_rec_t){ch[j].slot, ch[j].old, to, info->dlpi_addr, info->dlpi_phdr};
            }
            done++;
        }
        /* Exactly the protection it had (as maps said). */
        if (opened)
            (void)mprotect((void *)page, ps, prot);
        i = j;
    }
    return done;
}

static void
sort_changes(change_t *ch, int n)
{
    /* insertion sort: relocations come nearly sorted already */
    for (int i = 1; i < n; i++) {
        change_t c = ch[i];
        int j = i;
        while (j > 0 && by_slot(&ch[j - 1], &c) > 0) {
            ch[j] = ch[j - 1];
            j--;
        }
        ch[j] = c;
    }
}

/* Decide what one relocation becomes: the target index, or -1 (not to
   redirect), -2 (its page is not readable: the object is left alone), -3
   (its page was mapped after the maps were read: the next walk's). */
static int
decide(pe_ip_got_t *g, const dynobj_t *d, const ElfW(Rela) * r, uintptr_t *old)
{
    uint32_t type = (uint32_t)ELF64_R_TYPE(r->r_info), idx = (uint32_t)ELF64_R_SYM(r->r_info);
    uintptr_t slot = d->base + r->r_offset, cur;
    const char *want;
    int k, k2;

    if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || idx == 0)
        return -1;
    if (!readable(g, (uintptr_t)&d->sym[idx], sizeof(d->sym[idx])) ||
        !readable(g, (uintptr_t)(d->str + d->sym[idx].st_name), 32) ||
        (d->versym && !readable(g, (uintptr_t)&d->versym[idx], sizeof(d->versym[idx]))))
        return -2;
    if ((k = find_target(g, d->str + d->sym[idx].st_name)) < 0 || !g->t[k].from)
        return -1;
    if (slot & 7)
        return -1;
    if ((k2 = prot_of(g, slot)) < 0 || !(k2 & PROT_READ))
        return k2 < 0 ? -3 : -2; /* (never read a page a program made unreadable) */
    cur = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
    if (cur == g->t[k].to)
        return -1; /* ours already */
    if (cur != g->t[k].from) {
        /* Lazy: the object's own PLT stub, and it asks for the definition's
           version (an older version of the name is another function). */
        int lazy = type == R_X86_64_JUMP_SLOT && cur >= d->lo && cur < d->hi;
        want = lazy ? wanted_version(d, idx) : NULL;
        if (!lazy || (want && (!g->t[k].ver || strcmp(want, g->t[k].ver) != 0))) {
            g->elsewhere++;
            return -1;
        }
    }
    *old = cur;
    return k;
}

static void
patch_object(pe_ip_got_t *g, const struct dl_phdr_info *info)
{
    change_t ch[BATCH];
    const char *why = NULL;
    dynobj_t d;
    int n = 0, rc = 0, retry = 0;

    if ((rc = read_dynamic(g, info, &d)) < 0) {
        say_left(g, info->dlpi_name, "unreadable dynamic section");
    } else if (rc > 0) {
        rc = 0;
        for (int w = 0; w < 2 && rc >= 0; w++) {
            for (size_t i = 0; i < d.nrel[w] && rc >= 0; i++) {
                uintptr_t old;
                int k = decide(g, &d, &d.rel[w][i], &old);
                if (k == -2 || k == -3) {
                    why = k == -2 ? "unreadable slots"
                                  : "slots on a page /proc/self/maps did not list";
                    rc = -EFAULT;
                    break;
                }
                if (k < 0)
                    continue;
                ch[n++] = (change_t){d.base + d.rel[w][i].r_offset, old, k};
                if (n == BATCH) {
                    sort_changes(ch, n);
                    rc = store_batch(g, info, ch, n, 0, &why);
                    g->slots += rc > 0 ? (uint64_t)rc : 0;
                    n = 0;
                }
            }
        }
        if (n && rc >= 0) {
            sort_changes(ch, n);
            rc = store_batch(g, info, ch, n, 0, &why);
            g->slots += rc > 0 ? (uint64_t)rc : 0;
        }
        if (rc < 0) {
            /* mapped after we read the maps: try again at the next walk */
            retry = rc == -EFAULT && !strncmp(why, "slots on a page", 15);
            if (!retry)
                say_left(g, info->dlpi_name, why);
        } else if (d.rel_only) {
            say_left(g, info->dlpi_name, "REL relocations");
        }
    }
    if (retry)
        return;
    if (grow((void **)&g->obj, &g->capobj, g->nobj, sizeof(*g->obj)) < 0) {
        g->err = -ENOMEM;
        return;
    }
    g->obj[g->nobj++] = (pe_ip_obj_t){info->dlpi_addr, info->dlpi_phdr};
    g->objects++;
}

/* ---- definitions ------------------------------------------------------------------------ */

/* The version name of definition def ("GLIBC_2.2.5"), or NULL. */
const char *
pe_ip_got_version(void *def)
{
    const ElfW(Sym) *sym = NULL, *symtab = NULL;
    const ElfW(Half) *versym = NULL;
    const ElfW(Verdef) *vd = NULL;
    struct link_map *lm = NULL;
    const char *str = NULL;
    size_t nvd = 0;
    Dl_info di;
    unsigned vi;

    if (!dladdr1(def, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        !dladdr1(def, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return NULL;
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        uintptr_t v = d->d_un.d_ptr;
        v = lm->l_addr && v < lm->l_addr ? v + lm->l_addr : v;
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const void *)v; break;
        case DT_STRTAB: str = (const void *)v; break;
        case DT_VERSYM: versym = (const void *)v; break;
        case DT_VERDEF: vd = (const void *)v; break;
        case DT_VERDEFNUM: nvd = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !str || !versym || !vd)
        return NULL;
    vi = versym[sym - symtab] & 0x7fff;
    for (size_t i = 0; i < nvd; i++) {
        if (vd->vd_ndx == vi)
            return str + ((const ElfW(Verdaux) *)((const char *)vd + vd->vd_aux))->vda_name;
        if (!vd->vd_next)
            break;
        vd = (const void *)((const char *)vd + vd->vd_next);
    }
    return NULL;
}

/* ---- walks ------------------------------------------------------------------------------ */

static int
patch_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    pe_ip_got_t *g = arg;

    if (skipped(g, info) || obj_find(g, info))
        return 0;
    patch_object(g, info);
    return 0;
}

int
pe_ip_got_init(pe_ip_got_t *g, const pe_ip_target_t *t, int nt)
{
    memset(g, 0, sizeof(*g));
    if (nt >= PE_IP_HASH / 2)
        return -EINVAL;
    g->t = t;
    g->nt = nt;
    for (int k = 0; k < nt; k++) {
        uint32_t i = fnv(t[k].name) & (PE_IP_HASH - 1);
        while (g->hash[i])
            i = (i + 1) & (PE_IP_HASH - 1);
        g->hash[i] = (int16_t)(k + 1);
    }
    return 0;
}

int
pe_ip_got_patch(pe_ip_got_t *g)
{
    uint64_t before = g->slots;
    int err;

    if ((err = read_maps(g)) < 0)
        return err;
    g->err = 0;
    dl_iterate_phdr(patch_cb, g);
    return g->err ? g->err : (int)(g->slots - before);
}

typedef struct restore_s {
    pe_ip_got_t *g;
    int done;
} restore_t;

static int
restore_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    restore_t *r = arg;
    pe_ip_got_t *g = r->g;
    change_t ch[BATCH];
    const char *why;
    int n = 0, rc;

    for (size_t i = 0; i < g->nrec; i++) {
        if (g->rec[i].base != info->dlpi_addr || g->rec[i].phdr != info->dlpi_phdr)
            continue;
        /* (target holds the record's index here) */
        ch[n++] = (change_t){g->rec[i].slot, g->rec[i].old, (int)i};
        if (n == BATCH || i + 1 == g->nrec) {
            sort_changes(ch, n);
            if ((rc = store_batch(g, info, ch, n, 1, &why)) > 0)
                r->done += rc;
            n = 0;
        }
    }
    if (n) {
        sort_changes(ch, n);
        if ((rc = store_batch(g, info, ch, n, 1, &why)) > 0)
            r->done += rc;
    }
    return 0;
}

int
pe_ip_got_restore(pe_ip_got_t *g)
{
    restore_t r = {g, 0};

    if (!g->nrec && !g->nobj)
        return 0;
    if (read_maps(g) == 0)
        dl_iterate_phdr(restore_cb, &r);
    /* Objects not seen are gone, and their slots with them. */
    g->nrec = 0;
    g->nobj = 0;
    return r.done;
}

typedef struct prune_s {
    pe_ip_got_t *g;
    uint8_t *seen;
} prune_t;

static int
prune_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    prune_t *p = arg;
    pe_ip_obj_t *o = obj_find(p->g, info);

    if (o)
        p->seen[o - p->g->obj] = 1;
    return 0;
}

void
pe_ip_got_prune(pe_ip_got_t *g)
{
    size_t bytes = g->nobj ? g->nobj : 1, k = 0;
    uint8_t *seen = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    prune_t p = {g, seen};

    if (seen == MAP_FAILED || !g->nobj) {
        if (seen != MAP_FAILED)
            munmap(seen, bytes);
        return;
    }
    dl_iterate_phdr(prune_cb, &p);
    for (size_t i = 0; i < g->nrec; i++) {
        pe_ip_obj_t *o = NULL;
        for (size_t j = 0; j < g->nobj && !o; j++)
            if (g->obj[j].base == g->rec[i].base && g->obj[j].phdr == g->rec[i].phdr)
                o = &g->obj[j];
        if (o && seen[o - g->obj])
            g->rec[k++] = g->rec[i];
    }
    g->nrec = k;
    k = 0;
    for (size_t j = 0; j < g->nobj; j++)
        if (seen[j])
            g->obj[k++] = g->obj[j];
    g->nobj = k;
    munmap(seen, bytes);
}

void
pe_ip_got_free(pe_ip_got_t *g)
{
    if (g->rec)
        munmap(g->rec, g->caprec * sizeof(*g->rec));
    if (g->obj)
        munmap(g->obj, g->capobj * sizeof(*g->obj));
    if (g->maps)
        munmap(g->maps, g->capmaps * sizeof(*g->maps));
    g->rec = NULL;
    g->obj = NULL;
    g->maps = NULL;
    g->nrec = g->caprec = g->nobj = g->capobj = g->nmaps = g->capmaps = 0;
}

static int
adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    *(unsigned long long *)arg =
        size >= offsetof(struct dl_phdr_info, dlpi_subs) ? info->dlpi_adds : 0;
    return 1;
}

unsigned long long
pe_ip_got_adds(void)
{
    unsigned long long n = 0;

    dl_iterate_phdr(adds_cb, &n);
    return n;
}
