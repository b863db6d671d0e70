/*
 * elf.h: the one ELF64 reader of symbols/ (elf.c): a file mapped read-only,
 * its section headers, a section by name, the GNU build id, the
 * .gnu_debuglink, the symbol tables, and the one search for an object's
 * separate debug file.  dwarf.c reads DWARF through it and symbolize.c
 * symbol tables; objects.c reads build ids from loaded notes with it.
 *
 * Only ELF64 little-endian images are read; everything is bounds-checked
 * against the image, so a corrupt or hostile file reads as "nothing here".
 *
 * Signal-safe: no (open, mmap; pe_elf_note_build_id alone is).
 */
#ifndef PE_SYMBOLS_ELF_H
#define PE_SYMBOLS_ELF_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* An image and its section headers (sh NULL: not an ELF64 LE file we read). */
typedef struct pe_elf_s {
    const uint8_t *img;
    size_t size;
    int mapped; /* pe_elf_close unmaps it */
    const Elf64_Shdr *sh;
    size_t nsec;
    const char *shstr; /* .shstrtab, NULL when unreadable */
    size_t shstr_n;
} pe_elf_t;

/* Map the regular file at path whole, read-only (only the pages touched are read), and
   find its section headers.  0, or -1 (not a file we can map; e is then closed). */
int pe_elf_open(pe_elf_t *e, const char *path);
/* An image already in memory (the vdso); never unmapped. */
void pe_elf_from_mem(pe_elf_t *e, const uint8_t *img, size_t size);
void pe_elf_close(pe_elf_t *e);

/* The section's bytes lie inside the image (and it has bytes: not SHT_NOBITS). */
int pe_elf_sec_ok(const pe_elf_t *e, const Elf64_Shdr *s);
/* Its name, or "" when the name is not a terminated string inside .shstrtab. */
const char *pe_elf_sec_name(const pe_elf_t *e, const Elf64_Shdr *s);

/* NT_GNU_BUILD_ID in a buffer of notes aligned to `align` (4, or 8 for some PT_NOTE
   segments), as lowercase hex into hex[hexlen]; 1 if found.  Signal-safe. */
int pe_elf_note_build_id(const uint8_t *notes, size_t len, size_t align, char *hex, size_t hexlen);
/* The image's GNU build id (its SHT_NOTE sections) as lowercase hex; 1 if found. */
int pe_elf_build_id(const pe_elf_t *e, char *hex, size_t hexlen);

/* Calls fn for each symbol of the first section of `type` (SHT_SYMTAB or SHT_DYNSYM) whose
   name is a non-empty string inside its string table; stops when fn returns non-zero and
   returns that, else 0. */
typedef int (*pe_elf_sym_fn)(void *arg, const Elf64_Sym *sym, const char *name, size_t len);
int pe_elf_syms(const pe_elf_t *e, uint32_t type, pe_elf_sym_fn fn, void *arg);

/*
 * The separate debug file of the object at `path`, in gdb's order:
 * <root>/.build-id/xx/rest.debug by build id; then the .gnu_debuglink name
 * beside the object, in its .debug/, and under <root>/<object's dir>/.  A
 * candidate by build id must carry that build id when it has one; a
 * debuglink candidate must carry the object's build id when both have one,
 * else have the CRC32 the link names.  `want` (may be NULL) then says whether
 * it holds what the caller needs (DWARF, a .symtab); the first file that
 * passes stays open in *out and 1 is returned, else 0.  root may be NULL
 * (only the object's own directory is searched).
 */
typedef int (*pe_elf_want_fn)(void *arg, const pe_elf_t *e);
int pe_elf_debug_file(const char *path, const char *build_id, const char *root, pe_elf_want_fn want,
                      void *arg, pe_elf_t *out);

#endif /* PE_SYMBOLS_ELF_H */
