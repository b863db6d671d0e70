/*
 * elf.c: the one ELF64 reader of symbols/ (elf.h): mapping, section
 * headers, names, notes, the debug link, symbol tables and the search for a
 * separate debug file.  Reads only what it checks lies inside the image.
 *
 * Signal-safe: no (pe_elf_note_build_id alone is).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../preload/fd.h"
#include "bytes.h"
#include "elf.h"

/* Section headers of an ELF64 little-endian image, all in bounds, or NULL. */
static void
find_sections(pe_elf_t *e)
{
    Elf64_Ehdr eh;
    const Elf64_Shdr *sh;
    size_t n, strndx, size = e->size;

    e->sh = NULL;
    e->nsec = 0;
    e->shstr = NULL;
    e->shstr_n = 0;
    if (!e->img || size < sizeof(eh))
        return;
    memcpy(&eh, e->img, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        eh.e_shoff == 0 || eh.e_shoff > size || (size - eh.e_shoff) < sizeof(Elf64_Shdr) ||
        eh.e_shoff % 8 != 0)
        return;
    sh = (const Elf64_Shdr *)(e->img + eh.e_shoff);
    /* Past SHN_LORESERVE sections the real count and string index live in section 0. */
    n = eh.e_shnum ? eh.e_shnum : sh[0].sh_size;
    if (n == 0 || n > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
        return;
    e->sh = sh;
    e->nsec = n;
    strndx = eh.e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh.e_shstrndx;
    if (strndx < n && pe_elf_sec_ok(e, &sh[strndx])) {
        e->shstr = (const char *)e->img + sh[strndx].sh_offset;
        e->shstr_n = sh[strndx].sh_size;
    }
}

int
pe_elf_open(pe_elf_t *e, const char *path)
{
    struct stat st;
    void *img;
    int fd;

    memset(e, 0, sizeof(*e));
    fd = pe_fd_open_high(path, O_RDONLY); /* out of the program's way (preload/fd.h) */
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (img == MAP_FAILED)
        return -1;
    e->img = img;
    e->size = (size_t)st.st_size;
    e->mapped = 1;
    find_sections(e);
    return 0;
}

void
pe_elf_from_mem(pe_elf_t *e, const uint8_t *img, size_t size)
{
    memset(e, 0, sizeof(*e));
    e->img = img;
    e->size = size;
    find_sections(e);
}

void
pe_elf_close(pe_elf_t *e)
{
    if (e->mapped && e->img)
        munmap((void *)e->img, e->size);
    memset(e, 0, sizeof(*e));
}

int
pe_elf_sec_ok(const pe_elf_t *e, const Elf64_Shdr *s)
{
    return s->sh_type != SHT_NOBITS && s->sh_offset <= e->size &&
           s->sh_size <= e->size - s->sh_offset;
}

const char *
pe_elf_sec_name(const pe_elf_t *e, const Elf64_Shdr *s)
{
    if (!e->shstr || s->sh_name >= e->shstr_n ||
        !memchr(e->shstr + s->sh_name, 0, e->shstr_n - s->sh_name))
        return "";
    return e->shstr + s->sh_name;
}

/* The in-bounds section called name, or NULL. */
static const Elf64_Shdr *
find_section(const pe_elf_t *e, const char *name)
{
    size_t i;

    for (i = 0; i < e->nsec; i++)
        if (pe_elf_sec_ok(e, &e->sh[i]) && strcmp(pe_elf_sec_name(e, &e->sh[i]), name) == 0)
            return &e->sh[i];
    return NULL;
}

/* ---- notes ---------------------------------------------------------------------------- */

int
pe_elf_note_build_id(const uint8_t *notes, size_t len, size_t align, char *hex, size_t hexlen)
{
    static const char digits[] = "0123456789abcdef";
    pe_rd_t r = pe_rd_at(notes, len, 0);

    if (align != 8)
        align = 4;
    while (r.ok && r.p < r.end) {
        uint64_t nsz = pe_rd_fixed(&r, 4), dsz = pe_rd_fixed(&r, 4), type = pe_rd_fixed(&r, 4);
        const uint8_t *name = r.p, *desc;
        size_t i;

        pe_rd_skip(&r, (nsz + align - 1) & ~(uint64_t)(align - 1));
        desc = r.p;
        pe_rd_skip(&r, (dsz + align - 1) & ~(uint64_t)(align - 1));
        if (!r.ok)
            return 0;
        if (type == NT_GNU_BUILD_ID && nsz == 4 && memcmp(name, "GNU", 4) == 0 && dsz > 0 &&
            dsz * 2 < hexlen) {
            for (i = 0; i < dsz; i++) {
                hex[2 * i] = digits[desc[i] >> 4];
                hex[2 * i + 1] = digits[desc[i] & 15];
            }
            hex[2 * i] = '\0';
            return 1;
        }
    }
    return 0;
}

int
pe_elf_build_id(const pe_elf_t *e, char *hex, size_t hexlen)
{
    size_t i;

    for (i = 0; i < e->nsec; i++)
        if (e->sh[i].sh_type == SHT_NOTE && pe_elf_sec_ok(e, &e->sh[i]) &&
            pe_elf_note_build_id(e->img + e->sh[i].sh_offset, e->sh[i].sh_size,
                                 e->sh[i].sh_addralign, hex, hexlen))
            return 1;
    return 0;
}

/* The .gnu_debuglink: the file name (no '/') into name[cap] and its CRC32; 1 if found. */
static int
debuglink(const pe_elf_t *e, char *name, size_t cap, uint32_t *crc)
{
    const Elf64_Shdr *dl = find_section(e, ".gnu_debuglink");
    pe_rd_t r;
    const char *nm;
    size_t len;

    if (!dl)
        return 0;
    r = pe_rd_at(e->img + dl->sh_offset, dl->sh_size, 0);
    nm = pe_rd_cstr(&r);
    if (!nm || (len = strlen(nm)) == 0 || len >= cap || memchr(nm, '/', len))
        return 0;
    /* the CRC follows the name, aligned to 4 from the section's start */
    pe_rd_skip(&r, (4 - (len + 1) % 4) % 4);
    *crc = (uint32_t)pe_rd_fixed(&r, 4);
    if (!r.ok)
        return 0;
    memcpy(name, nm, len + 1);
    return 1;
}

/* ---- symbol tables --------------------------------------------------------------------- */

int
pe_elf_syms(const pe_elf_t *e, uint32_t type, pe_elf_sym_fn fn, void *arg)
{
    const Elf64_Shdr *ss = NULL, *st;
    const Elf64_Sym *sym;
    const char *strs, *name;
    size_t i, nsym, len;
    int rc;

    for (i = 0; i < e->nsec && !ss; i++)
        if (e->sh[i].sh_type == type)
            ss = &e->sh[i];
    if (!ss || !pe_elf_sec_ok(e, ss) || ss->sh_link >= e->nsec || ss->sh_offset % 8 != 0)
        return 0;
    st = &e->sh[ss->sh_link];
    if (!pe_elf_sec_ok(e, st) || st->sh_size == 0)
        return 0;
    strs = (const char *)e->img + st->sh_offset;
    sym = (const Elf64_Sym *)(e->img + ss->sh_offset);
    nsym = ss->sh_size / sizeof(*sym);
    for (i = 0; i < nsym; i++) {
        if (sym[i].st_name == 0 || sym[i].st_name >= st->sh_size)
            continue;
        name = strs + sym[i].st_name;
        len = strnlen(name, st->sh_size - sym[i].st_name);
        if (len == 0 || len == st->sh_size - sym[i].st_name)
            continue; /* empty, or runs off the table */
        if ((rc = fn(arg, &sym[i], name, len)) != 0)
            return rc;
    }
    return 0;
}

/* ---- the separate debug file ---------------------------------------------------------- */

/* The CRC32 of the whole image (a debug link's check). */
static uint32_t
image_crc(const pe_elf_t *e)
{
    uLong c = crc32(0L, Z_NULL, 0);
    size_t off = 0;

    while (off < e->size) {
        size_t n = e->size - off > (1u << 30) ? (1u << 30) : e->size - off;

        c = crc32(c, e->img + off, (uInt)n);
        off += n;
    }
    return (uint32_t)c;
}

/* Open path into out if it is the right file (see pe_elf_debug_file) and the caller
   wants it; 1 if so. */
static int
try_candidate(const char *path, const char *build_id, int by_link, uint32_t crc,
              pe_elf_want_fn want, void *arg, pe_elf_t *out)
{
    char id[160];

    if (pe_elf_open(out, path) < 0)
        return 0;
    if (build_id && build_id[0] && pe_elf_build_id(out, id, sizeof(id))) {
        if (strcmp(id, build_id) != 0)
            goto no;
    } else if (by_link && image_crc(out) != crc) {
        goto no;
    }
    if (!want || want(arg, out))
        return 1;
no:
    pe_elf_close(out);
    return 0;
}

/* buf = a b c d; -1 if it does not fit */
static int
join(char *buf, size_t cap, const char *a, const char *b, const char *c, const char *d)
{
    int n = snprintf(buf, cap, "%s%s%s%s", a, b, c, d);

    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int
pe_elf_debug_file(const char *path, const char *build_id, const char *root, pe_elf_want_fn want,
                  void *arg, pe_elf_t *out)
{
    char cand[4096], dir[4096], link[256];
    const char *slash;
    pe_elf_t obj;
    uint32_t crc = 0;
    size_t dlen;
    int found;

    memset(out, 0, sizeof(*out));
    if (build_id && strlen(build_id) > 2 && root) {
        int n = snprintf(cand, sizeof(cand), "%s/.build-id/%.2s/%s.debug", root, build_id,
                         build_id + 2);

        if (n > 0 && (size_t)n < sizeof(cand) &&
            try_candidate(cand, build_id, 0, 0, want, arg, out))
            return 1;
    }
    if (pe_elf_open(&obj, path) < 0)
        return 0;
    found = debuglink(&obj, link, sizeof(link), &crc);
    pe_elf_close(&obj);
    if (!found)
        return 0;
    slash = strrchr(path, '/');
    dlen = slash ? (size_t)(slash - path) : 1;
    if (dlen >= sizeof(dir))
        return 0;
    if (slash)
        memcpy(dir, path, dlen);
    else
        dir[0] = '.';
    dir[dlen] = '\0';
    /* beside the object (unless that is the object), in .debug/ there, under root */
    if (join(cand, sizeof(cand), dir, "/", "", link) == 0 && strcmp(cand, path) != 0 &&
        try_candidate(cand, build_id, 1, crc, want, arg, out))
        return 1;
    if (join(cand, sizeof(cand), dir, "/.debug/", "", link) == 0 &&
        try_candidate(cand, build_id, 1, crc, want, arg, out))
        return 1;
    if (root && join(cand, sizeof(cand), root, dir[0] == '/' ? "" : "/", dir, "/") == 0 &&
        strlen(cand) + strlen(link) < sizeof(cand)) {
        strcat(cand, link);
        if (try_candidate(cand, build_id, 1, crc, want, arg, out))
            return 1;
    }
    return 0;
}
