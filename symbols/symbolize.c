/*
 * symbolize.c: address -> function name, with our own ELF64 reader.  For each
 * loaded object we read FUNC/IFUNC symbols once (a separate debug file's
 * .symtab by build id, else the file's .symtab, else its .dynsym; the vdso
 * from memory), sort them and binary-search.  The tables are cached for the
 * process lifetime, keyed by (path, build id or inode) so a dlclose'd and
 * replaced object is never read through a stale table.  Names stay mangled.
 *
 * Signal-safe: no (malloc, mmap, a mutex).
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../preload/proc.h"
#include "elf.h"
#include "symbols.h"

/* Past this many cached objects, tables of objects no longer loaded are dropped. */
#define SYMCACHE_SOFT_MAX 256
/* Where separate debug files live, by build id (a variable so tests can point
   it at a directory of their own). */
const char *pe_sym_debug_dir = "/usr/lib/debug/.build-id";

typedef struct sym_s {
    uint64_t start, size; /* link-time address (addr - load bias) */
    uint32_t name;        /* offset into names */
    uint32_t rank;        /* alias preference: lower wins */
} sym_t;

typedef struct symtab_s {
    char *path;
    char build_id[2 * PE_SYM_BUILDID_MAX + 1];
    dev_t dev;
    ino_t ino;
    sym_t *syms;
    size_t nsyms, capsyms;
    char *names;
    size_t names_len, names_cap;
    size_t added; /* by the elf_read_syms running */
    int oom;      /* a debug file's table could not be kept */
} symtab_t;

struct pe_sym_batch_s {
    pe_sym_obj_t *objs;
    size_t nobjs;
    symtab_t **tabs; /* per object, filled on first lookup */
    unsigned char *tried;
    pe_dw_obj_t **dw; /* per object: its DWARF, filled on first pe_sym_lines */
    unsigned char *dw_tried;
    int lines_off; /* a budget of 0, or a limit reached: no more lines this batch */
};

static pthread_mutex_t symcache_lock = PTHREAD_MUTEX_INITIALIZER;

void
pe_sym_atfork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    /* A worker of the parent may have held it at the fork; the cache itself
       is only read and trimmed under it, so it is consistent enough to keep. */
    memcpy(&symcache_lock, &fresh, sizeof(symcache_lock));
}
static symtab_t **symcache;
static size_t symcache_n, symcache_cap;

/* ---- reading ELF ----------------------------------------------------------- */

static int
tab_add(symtab_t *tab, uint64_t start, uint64_t size, const char *name, size_t len, uint32_t rank)
{
    if (tab->nsyms == tab->capsyms) {
        size_t ncap = tab->capsyms ? tab->capsyms * 2 : 256;
        sym_t *n = realloc(tab->syms, ncap * sizeof(*n));

        if (!n)
            return -ENOMEM;
        tab->syms = n;
        tab->capsyms = ncap;
    }
    if (tab->names_len + len + 1 > tab->names_cap) {
        size_t ncap = tab->names_cap ? tab->names_cap * 2 : 4096;
        char *n;

        while (ncap < tab->names_len + len + 1)
            ncap *= 2;
        if (ncap > UINT32_MAX)
            return -ENOMEM;
        n = realloc(tab->names, ncap);
        if (!n)
            return -ENOMEM;
        tab->names = n;
        tab->names_cap = ncap;
    }
    memcpy(tab->names + tab->names_len, name, len);
    tab->names[tab->names_len + len] = '\0';
    tab->syms[tab->nsyms].start = start;
    tab->syms[tab->nsyms].size = size;
    tab->syms[tab->nsyms].name = (uint32_t)tab->names_len;
    tab->syms[tab->nsyms].rank = rank;
    tab->nsyms++;
    tab->names_len += len + 1;
    return 0;
}

/*
 * Among aliases at one address prefer the public spelling: fewest leading
 * underscores (libc's `write` over `__libc_write`), then global, weak, local.
 */
static uint32_t
alias_rank(const char *name, int bind)
{
    uint32_t underscores = name[0] == '_' ? (name[1] == '_' ? 2 : 1) : 0;

    return 3 * underscores + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
}

/* One symbol of elf_read_syms: added when it is a defined, sized FUNC/IFUNC. */
static int
add_sym(void *arg, const Elf64_Sym *sym, const char *name, size_t len)
{
    symtab_t *tab = arg;
    int t = ELF64_ST_TYPE(sym->st_info);
    const char *at;

    if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym->st_size == 0 || sym->st_shndx == SHN_UNDEF)
        return 0;
    /* A versioned name (clock_nanosleep@@GLIBC_2.17, a .symver alias in a .symtab)
       is the function's name in every view. */
    if ((at = memchr(name, '@', len)) != NULL && at > name)
        len = (size_t)(at - name);
    if (tab_add(tab, sym->st_value, sym->st_size, name, len,
                alias_rank(name, ELF64_ST_BIND(sym->st_info))))
        return -ENOMEM;
    tab->added++;
    return 0;
}

/*
 * Add the defined, sized FUNC/IFUNC symbols of the image's `type` section
 * (SHT_SYMTAB or SHT_DYNSYM).  Returns how many, or -ENOMEM.
 */
static long
elf_read_syms(symtab_t *tab, const pe_elf_t *e, uint32_t type)
{
    tab->added = 0;
    if (pe_elf_syms(e, type, add_sym, tab) < 0)
        return -ENOMEM;
    return (long)tab->added;
}

/* The vdso's image size from its program and section headers. */
static size_t
vdso_size(const unsigned char *img)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    const Elf64_Phdr *ph;
    size_t mapped = 0, need, page;
    int i;

    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_phentsize != sizeof(*ph))
        return 0;
    ph = (const Elf64_Phdr *)(img + eh->e_phoff);
    for (i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > mapped)
            mapped = ph[i].p_offset + ph[i].p_filesz;
    /*
     * The kernel maps the whole image in pages; the section headers sit just
     * past the PT_LOAD bytes, still inside its last page.
     */
    page = (size_t)sysconf(_SC_PAGESIZE);
    mapped = (mapped + page - 1) & ~(page - 1);
    need = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    return need <= mapped ? mapped : 0;
}

/* ---- symbol tables --------------------------------------------------------------- */

static int
sym_cmp(const void *a, const void *b, void *names)
{
    const sym_t *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    /* Same address and binding: any fixed order will do; names keep it stable. */
    return strcmp((const char *)names + x->name, (const char *)names + y->name);
}

/* Sort by address and keep one symbol per address (the best-ranked alias). */
static void
tab_finish(symtab_t *tab)
{
    size_t i, n = 0;

    qsort_r(tab->syms, tab->nsyms, sizeof(*tab->syms), sym_cmp, tab->names);
    for (i = 0; i < tab->nsyms; i++)
        if (n == 0 || tab->syms[n - 1].start != tab->syms[i].start)
            tab->syms[n++] = tab->syms[i];
    tab->nsyms = n;
}

/* The file an object's debug links are looked up beside: the main program's
   real path (its dlpi_name is empty), else the loader's name. */
static const char *
dw_path(const pe_sym_obj_t *obj, char *buf, size_t len)
{
    if (!obj->is_main && obj->name[0])
        return obj->name;
    return pe_proc_self_exe(buf, len) > 0 ? buf : NULL;
}

/* The debug-file search's test for symbolize: a .symtab with functions.  Leaves
   them read into the table, so the file is read once. */
static int
has_symtab(void *arg, const pe_elf_t *e)
{
    symtab_t *tab = arg;
    long n = elf_read_syms(tab, e, SHT_SYMTAB);

    if (n < 0)
        tab->oom = 1;
    return n != 0;
}

/* "/usr/lib/debug" from pe_sym_debug_dir's "/usr/lib/debug/.build-id". */
static const char *
debug_root(char *buf, size_t len)
{
    size_t n = strlen(pe_sym_debug_dir);
    static const char tail[] = "/.build-id";

    if (n >= sizeof(tail) - 1 && strcmp(pe_sym_debug_dir + n - (sizeof(tail) - 1), tail) == 0)
        n -= sizeof(tail) - 1;
    snprintf(buf, len, "%.*s", (int)n, pe_sym_debug_dir);
    return buf;
}

/* Fill tab for one object: the .symtab of its separate debug file (Debian's -dbgsym
   packages, by build id or debug link: the full table of a stripped binary), else its
   own .symtab, else its .dynsym.  Missing or unreadable files just leave it empty. */
static int
tab_load(symtab_t *tab, const pe_sym_obj_t *obj, const char *path)
{
    char fid[2 * PE_SYM_BUILDID_MAX + 1], root[PATH_MAX], real[PATH_MAX];
    const unsigned char *img;
    const char *dpath;
    pe_elf_t e;
    size_t size;
    long n = 0;

    if (obj->is_vdso) {
        img = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
        size = img ? vdso_size(img) : 0;
        if (size) {
            pe_elf_from_mem(&e, img, size);
            n = elf_read_syms(tab, &e, SHT_DYNSYM);
        }
        goto done;
    }
    dpath = dw_path(obj, real, sizeof(real));
    if (pe_elf_debug_file(dpath ? dpath : path, obj->build_id, debug_root(root, sizeof(root)),
                          has_symtab, tab, &e)) {
        n = tab->oom ? -ENOMEM : (long)tab->added;
        pe_elf_close(&e);
        goto done;
    }
    if (pe_elf_open(&e, path) < 0)
        return 0;
    /* A file replaced on disk since it was loaded would give wrong names. */
    if (obj->build_id[0] && pe_elf_build_id(&e, fid, sizeof(fid)) &&
        strcmp(fid, obj->build_id) != 0) {
        pe_elf_close(&e);
        return 0;
    }
    n = elf_read_syms(tab, &e, SHT_SYMTAB);
    if (n == 0)
        n = elf_read_syms(tab, &e, SHT_DYNSYM);
    pe_elf_close(&e);
done:
    if (n < 0)
        return (int)n;
    tab_finish(tab);
    return 0;
}

static void
tab_free(symtab_t *tab)
{
    if (!tab)
        return;
    free(tab->path);
    free(tab->syms);
    free(tab->names);
    free(tab);
}

/* Where to read an object's symbols from. */
static const char *
obj_path(const pe_sym_obj_t *obj)
{
    if (obj->is_vdso)
        return "[vdso]";
    if (obj->is_main || obj->name[0] == '\0')
        return pe_proc_self_exe_file();
    return obj->name;
}

/* The cached table for obj, loading it on first use.  NULL on ENOMEM. */
static symtab_t *
tab_get(const pe_sym_obj_t *obj)
{
    const char *path = obj_path(obj);
    struct stat st = {0};
    symtab_t *tab, **n;
    size_t i;

    /* Without a build id, the inode tells a replaced file from the loaded one. */
    if (!obj->build_id[0] && !obj->is_vdso && stat(path, &st) < 0)
        memset(&st, 0, sizeof(st));
    for (i = 0; i < symcache_n; i++) {
        tab = symcache[i];
        if (strcmp(tab->path, path) == 0 && strcmp(tab->build_id, obj->build_id) == 0 &&
            (obj->build_id[0] || (tab->dev == st.st_dev && tab->ino == st.st_ino)))
            return tab;
    }
    if (symcache_n == symcache_cap) {
        size_t ncap = symcache_cap ? symcache_cap * 2 : 32;

        n = realloc(symcache, ncap * sizeof(*n));
        if (!n)
            return NULL;
        symcache = n;
        symcache_cap = ncap;
    }
    tab = calloc(1, sizeof(*tab));
    if (!tab)
        return NULL;
    tab->path = strdup(path);
    if (!tab->path)
        goto err_free;
    memcpy(tab->build_id, obj->build_id, sizeof(tab->build_id));
    tab->dev = st.st_dev;
    tab->ino = st.st_ino;
    if (tab_load(tab, obj, path))
        goto err_free;
    symcache[symcache_n++] = tab;
    return tab;

err_free:
    tab_free(tab);
    return NULL;
}

/* Drop tables of objects that are gone, once the cache has grown large. */
static void
cache_trim(const pe_sym_obj_t *objs, size_t nobjs)
{
    size_t i, j, n = 0;

    if (symcache_n <= SYMCACHE_SOFT_MAX)
        return;
    for (i = 0; i < symcache_n; i++) {
        for (j = 0; j < nobjs; j++)
            if (strcmp(symcache[i]->path, obj_path(&objs[j])) == 0 &&
                strcmp(symcache[i]->build_id, objs[j].build_id) == 0)
                break;
        if (j < nobjs)
            symcache[n++] = symcache[i];
        else
            tab_free(symcache[i]);
    }
    symcache_n = n;
}

/* ---- lookups --------------------------------------------------------------------- */

int
pe_sym_begin(pe_sym_batch_t **out)
{
    pe_sym_batch_t *s;
    int err;

    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    err = pe_sym_objs_snapshot(&s->objs, &s->nobjs);
    if (err)
        goto err_free;
    s->tabs = calloc(s->nobjs + 1, sizeof(*s->tabs));
    s->tried = calloc(s->nobjs + 1, 1);
    s->dw = calloc(s->nobjs + 1, sizeof(*s->dw));
    s->dw_tried = calloc(s->nobjs + 1, 1);
    if (!s->tabs || !s->tried || !s->dw || !s->dw_tried) {
        err = -ENOMEM;
        goto err_free;
    }
    pthread_mutex_lock(&symcache_lock);
    cache_trim(s->objs, s->nobjs);
    pe_sym_jit_begin(); /* JIT code: jitmap.c */
    *out = s;
    return 0;

err_free:
    free(s->dw_tried);
    free(s->dw);
    free(s->tried);
    free(s->tabs);
    pe_sym_objs_free(s->objs, s->nobjs);
    free(s);
    return err;
}

const char *
pe_sym_lookup(pe_sym_batch_t *s, uintptr_t addr, uintptr_t *start)
{
    const pe_sym_obj_t *obj = pe_sym_objs_find(s->objs, s->nobjs, addr);
    const symtab_t *tab;
    size_t i, lo, hi, mid;
    uint64_t off;

    if (!obj)
        return pe_sym_jit_lookup(addr, start); /* outside every object: JIT code? */
    i = (size_t)(obj - s->objs);
    if (!s->tried[i]) {
        s->tried[i] = 1;
        s->tabs[i] = tab_get(obj);
    }
    tab = s->tabs[i];
    if (!tab || tab->nsyms == 0)
        return NULL;
    off = addr - obj->bias;
    lo = 0;
    hi = tab->nsyms;
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (tab->syms[mid].start <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || off - tab->syms[lo - 1].start >= tab->syms[lo - 1].size)
        return NULL;
    *start = (uintptr_t)tab->syms[lo - 1].start + obj->bias;
    return tab->names + tab->syms[lo - 1].name;
}

/* ---- source lines (dwarf.c) ------------------------------------------------------- */

void
pe_sym_lines_limits(pe_sym_batch_t *s, size_t budget, int64_t cpu_ns)
{
    struct timespec now;
    int64_t deadline = 0;

    s->lines_off = budget == 0;
    if (cpu_ns > 0 && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0)
        deadline = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + cpu_ns;
    pe_dw_set_limits(budget, deadline);
}

int
pe_sym_lines(pe_sym_batch_t *s, uintptr_t addr, pe_dw_frame_t *out, int max)
{
    const pe_sym_obj_t *obj = pe_sym_objs_find(s->objs, s->nobjs, addr);
    char path[PATH_MAX], root[PATH_MAX];
    const char *file;
    size_t i;
    int n;

    if (!obj || obj->is_vdso || s->lines_off)
        return 0;
    i = (size_t)(obj - s->objs);
    if (!s->dw_tried[i]) {
        /* A handle stays valid until pe_dw_trim (going over the budget drops
           only decoded tables), so the batch keeps it. */
        s->dw_tried[i] = 1;
        file = dw_path(obj, path, sizeof(path));
        s->dw[i] = file ? pe_dw_open(file, obj->build_id, debug_root(root, sizeof(root))) : NULL;
    }
    if (!s->dw[i])
        return 0;
    n = pe_dw_lookup(s->dw[i], (uint64_t)(addr - obj->bias), out, max);
    if (n == -E2BIG || n == -ETIMEDOUT)
        s->lines_off = 1; /* the rest of this batch gets names only */
    return n;
}

void
pe_sym_end(pe_sym_batch_t *s)
{
    if (!s)
        return;
    pe_sym_jit_end();
    pthread_mutex_unlock(&symcache_lock);
    free(s->dw_tried);
    free(s->dw);
    free(s->tried);
    free(s->tabs);
    pe_sym_objs_free(s->objs, s->nobjs);
    free(s);
}

const char *
pe_sym_symbolize(uintptr_t addr, char *buf, size_t len)
{
    pe_sym_batch_t *s;
    const char *name;
    uintptr_t start;

    if (!buf || len == 0 || pe_sym_begin(&s))
        return NULL;
    name = pe_sym_lookup(s, addr, &start);
    if (name)
        snprintf(buf, len, "%s", name);
    pe_sym_end(s);
    return name ? buf : NULL;
}
